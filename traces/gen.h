/* gen.h - model generators from hyperparameters, one small file each
 * (gen_gpt.c, gen_llama.c, gen_t5.c, gen_vit.c, gen_fid.c, gen_mm.c), each
 * filling one sc_gen table entry. The CLI parses `--NAME VALUE` flags
 * generically from the table, so a new generator needs no CLI change.
 *
 * Ownership: make() returns a finished (validated) model the caller frees
 * with sc_model_free.
 */
#ifndef SC_GEN_H
#define SC_GEN_H

#include "model.h"

typedef struct sc_gen_param {
    const char *name;   /* flag name without "--": "layers" */
    double dflt;        /* default value */
    int is_flag;        /* boolean switch: present = 1, no value follows */
    const char *help;
    /* A choice among names (NULL-terminated), given by name on the command
     * line and in files; its value is the index of the name. NULL: a number. */
    const char *const *choices;
} sc_gen_param;

typedef struct sc_gen {
    const char *kind;          /* "gpt" */
    const char *description;   /* one line */
    const sc_gen_param *params;
    int n_params;
    /* vals[i] is the value of params[i]; name is the model name. */
    sc_status (*make)(const double *vals, const char *name, sc_dtype dtype, sc_model **out,
                      sc_error *err);
} sc_gen;

extern const sc_gen sc_gen_gpt, sc_gen_llama, sc_gen_t5, sc_gen_vit, sc_gen_fid, sc_gen_mm;

/* g's parameter of that name ('-' and '_' alike: --kv-heads is kv_heads),
 * or NULL. */
const sc_gen_param *sc_gen_param_find(const sc_gen *g, const char *name);
/* The index of name among a choice parameter's names, or -1. */
int sc_gen_choice_index(const sc_gen_param *p, const char *name);
/* A choice parameter's names for a message: "a, b or c". */
const char *sc_gen_choice_names(const sc_gen_param *p, char *buf, size_t n);

/* All generators, in a fixed order. */
const sc_gen *const *sc_gens(int *n);
const sc_gen *sc_gen_find(const char *kind);
/* Runs a generator with named overrides (names[i] = vals[i]); unknown names,
 * and a choice parameter's value that is not an index of its names, are an
 * error naming the generator and the parameter. */
sc_status sc_gen_run(const sc_gen *g, const char *name, sc_dtype dtype, int n_over,
                     const char *const *names, const double *vals, sc_model **out,
                     sc_error *err);

/* The loss a generated LM head's "cross_entropy" kernel prices (model gen
 * --cross_entropy): "megatron", "megatron-fused" or "xentropy", read back
 * from its bytes per logit in a model of dtype dt; NULL for any other head
 * (traced, hand-written, or none). */
const char *sc_gen_head_cross_entropy(const sc_module *head, sc_dtype dt);

#endif
