/* model.h - the model description: a tree of modules (stagecraft.model/1).
 *
 * Ownership: sc_model_load/sc_model_new return a model the caller frees with
 * sc_model_free (free(NULL) is a no-op). Modules belong to their model and
 * are freed with it. A failed call leaves its inputs unchanged and returns
 * nothing half-built.
 *
 * Units: params are counts; flops are per sample (one sequence) per pass;
 * bytes are per sample; times are seconds.
 */
#ifndef SC_MODEL_H
#define SC_MODEL_H

#include <cjson/cJSON.h>
#include "sc.h"
#include "kernel.h"

#define SC_MODEL_FORMAT "stagecraft.model/1"
#define SC_MODEL_MAX_DEPTH 64
#define SC_MODEL_MAX_MODULES 200000
#define SC_MODEL_MAX_DIMS 8
#define SC_NAME_MAX 128

typedef enum sc_dtype { SC_FP32 = 0, SC_TF32, SC_FP16, SC_BF16, SC_FP8, SC_DTYPE_N } sc_dtype;
/* "fp32" ... ; returns -1 for an unknown name. */
int sc_dtype_parse(const char *s);
const char *sc_dtype_name(sc_dtype d);
/* Bytes per element of activations and weights in that dtype (tf32 stores 4). */
double sc_dtype_bytes(sc_dtype d);

typedef struct sc_module sc_module;
struct sc_module {
    char *name;          /* unique in the model */
    char *kind;          /* free-form: embedding, block, attention, mlp, norm, head, ... */
    double params;       /* its own parameters, not its children's */
    double flops_fwd;    /* per sample */
    double flops_bwd;    /* per sample; < 0 when absent (then 2 x flops_fwd) */
    double act_out_bytes;   /* output per sample: what crosses a stage boundary after it */
    double act_saved_bytes; /* stashed for backward per sample */
    int has_tp;
    double tp_bytes;     /* bytes all-reduced per sample per forward pass under tp */
    int tp_shardable;    /* whether its weights split across a tp group */
    /* Of act_saved_bytes, per sample (Korthikanti et al. 2022 sec. 4):
     * the part tensor parallelism leaves whole on every rank of the group
     * (the input of its first GEMM, the dropout mask after its allreduce),
     * which sequence parallelism shards too; "tp.replicated_saved", 0 when
     * absent (everything of a shardable module shards) */
    double act_saved_rep;
    /* the attention scores' part (softmax output, its dropout mask and
     * output) that selective recompute drops; "act_scores_bytes", < 0 when
     * absent (then an attention leaf keeps only its act_out under selective
     * recompute) */
    double act_saved_scores;
    char *shared;        /* parameter-sharing group or NULL */
    char **inputs;       /* names of modules whose output it also consumes */
    int n_inputs;
    int has_measured;
    double measured_fwd_s, measured_bwd_s;
    char *measured_device;
    /* named integer dimensions (hidden, ffn, heads, seq, vocab, ...) that let
     * the executor build real GEMM shapes; optional */
    int n_dims;
    char *dim_name[SC_MODEL_MAX_DIMS];
    double dim_val[SC_MODEL_MAX_DIMS];
    /* the kernels this leaf runs (kernel.h); NULL and 0 when the file has
     * none: then the cost model uses the leaf's totals */
    sc_kernel *kernels;
    int n_kernels;
    sc_module **children;
    int n_children;
    /* derived on load/finish, read-only for callers */
    sc_module *parent;
    int index;           /* pre-order index, root = 0 */
    int leaf_index;      /* position among the leaves in execution order, -1 if not a leaf */
    int depth;
    int group;           /* index into sc_model.groups when it has `shared`, else -1 */
    /* also derived, for the searches' inner loops (sc_partition_layer_of and
     * sc_module_is_attention read them once derived is set, and walk the
     * tree and compare the kind before): the outermost "block" holding it
     * (itself included; NULL outside layers), and whether its kind is an
     * attention's */
    const sc_module *layer;
    unsigned char is_attn, derived;
};

/* A parameter-sharing group (a tied embedding and LM head): the modules
 * that name it in `shared`, built once by sc_model_finish. Members must
 * share a stage (or, when split, reduce their gradients together). */
typedef struct sc_model_group {
    const char *name;    /* points into the first member's `shared` */
    int n;
    int *leaves;         /* the members that are leaves: leaf indices, ascending */
    int n_mods;
    int *mods;           /* every member: pre-order module indices, ascending */
} sc_model_group;

typedef struct sc_model {
    char *name;
    sc_dtype dtype;
    int seq_len;
    sc_module *root;
    /* derived by sc_model_finish */
    int n_modules;
    sc_module **modules;   /* pre-order */
    int n_leaves;
    sc_module **leaves;    /* execution order (depth-first order of the leaves) */
    int n_groups;
    sc_model_group *groups; /* in the order of their first leaf */
    int has_layers;        /* some leaf lies in a layer (sc_partition_layer_of: a "block");
                              full recompute re-runs only such leaves when there are any */
    int build_oom;         /* private: an allocation failed while building */
} sc_model;

/* Totals over a subtree (module and all descendants). */
typedef struct sc_totals {
    double params, flops_fwd, flops_bwd, act_saved_bytes, tp_bytes;
} sc_totals;

/* ---- building (generators) ---------------------------------------------- */
sc_model *sc_model_new(const char *name, sc_dtype dtype, int seq_len);
/* Adds a child to parent (NULL parent sets the root). Returns the module or
 * NULL on allocation failure (the model stays valid; sc_model_finish will then
 * report SC_ENOMEM). Numbers start at 0, flops_bwd at -1 (absent). */
sc_module *sc_model_add(sc_model *m, sc_module *parent, const char *name, const char *kind);
/* Setters that return the module for chaining; allocation failures are
 * remembered and reported by sc_model_finish. */
void sc_module_set_tp(sc_module *mod, double bytes, int shardable);
/* The parts of act_saved_bytes above: replicated under tp, and attention
 * scores (< 0: none given). */
void sc_module_set_saved_parts(sc_module *mod, double replicated, double scores);
void sc_module_set_shared(sc_model *m, sc_module *mod, const char *group);
void sc_module_add_input(sc_model *m, sc_module *mod, const char *name);
void sc_module_set_dim(sc_model *m, sc_module *mod, const char *name, double v);
/* Appends a kernel to a leaf's list (at most SC_KERNELS_MAX; more is an
 * allocation failure reported by sc_model_finish). */
void sc_module_add_kernel(sc_model *m, sc_module *mod, sc_kernel k);
/* Returns the dimension's value, or dflt when the module lacks it. */
double sc_module_dim(const sc_module *mod, const char *name, double dflt);
/* mod's kernel called name (the first), or NULL; mod NULL gives NULL. O(kernels). */
const sc_kernel *sc_module_kernel(const sc_module *mod, const char *name);
/* Derives indices and tables and validates the whole model (unique names,
 * known and acyclic inputs, ranges, depth). file names the origin in
 * messages ("<gpt>" for a generator). */
sc_status sc_model_finish(sc_model *m, const char *file, sc_error *err);

/* ---- load / save ---------------------------------------------------------- */
sc_status sc_model_from_json(const cJSON *root, const char *file, sc_model **out,
                             sc_error *err);
sc_status sc_model_load(const char *file, sc_model **out, sc_error *err);
cJSON *sc_model_to_json(const sc_model *m);    /* NULL on allocation failure */
sc_status sc_model_save(const sc_model *m, const char *file, sc_error *err);
void sc_model_free(sc_model *m);

/* ---- queries -------------------------------------------------------------- */
/* O(n) tree walk; works before sc_model_finish too. */
sc_module *sc_model_find(const sc_model *m, const char *name);
sc_totals sc_module_totals(const sc_module *mod);
sc_totals sc_model_totals(const sc_model *m);
/* The execution-order index of mod's first and last leaf (mod's own when
 * it is one); after sc_model_finish. */
int sc_module_first_leaf(const sc_module *mod);
int sc_module_last_leaf(const sc_module *mod);
/* flops_bwd, or 2 x flops_fwd when absent */
double sc_module_flops_bwd(const sc_module *mod);
/* The forward FLOPs per sample of a leaf's GEMMs with weights, whose
 * weight gradients a split backward (zb-h1's W) computes apart: a leaf's
 * whole forward, except attention's score products (QK^T and x V, no
 * weights: an attention leaf keeps its projections, 2 s h ((a + 2 kv) dk +
 * a dk) per sample, as the executor runs them; attention_core none) and a
 * leaf without FLOPs (none). seq_len: the model's, for a leaf without its
 * own "seq" dim. At most flops_fwd. */
double sc_module_weight_flops(const sc_module *mod, double seq_len);
/* The one definition of an attention module: kind "attention",
 * "cross_attention" or "attention_core" (whose scores selective recompute
 * re-runs and whose saved activations it drops). */
int sc_module_is_attention(const sc_module *mod);
/* The leaves tensor parallelism cannot touch: no tp data, yet parameters or
 * FLOPs (a traced module the tracer did not recognise). Fills names with
 * the first max of them in execution order; returns how many there are.
 * Leaves marked tp.shardable false (norms) are tp-aware and not counted. */
int sc_model_tp_replicated(const sc_model *m, const char **names, int max);
/* Token slices (TeraPipe) need a causal decoder: the first module that
 * stops them (an attention leaf without a causal fused-attention kernel: an
 * encoder's, a cross-attention, or one without kernels), or NULL; *why (may
 * be NULL) gets a short reason. O(modules). */
const sc_module *sc_model_not_causal(const sc_model *m, const char **why);
/* Whether some leaf lists kernels that run under one attention
 * implementation only (attn unfused or flash; a leaf lists both or neither):
 * then a plan's attention changes the model's time and memory. O(kernels). */
int sc_model_prices_attention(const sc_model *m);

/* ---- built-in models by name (gpt-1.3b, ...) ------------------------------ */
typedef struct sc_builtin {
    const char *name;
    const char *description;
    sc_status (*make)(sc_dtype dt, sc_model **out, sc_error *err); /* built-ins: SC_BF16 */
} sc_builtin;
const sc_builtin *sc_builtins(int *n);
/* Whether name is a built-in model's name (not a file). */
int sc_model_is_builtin(const char *name);
/* The built-in called name computed in dt (its activations and weights in
 * dt's width), named new_name (NULL: "NAME" in bf16, else "NAME-DT");
 * SC_ENOTFOUND when name is no built-in. `model gen NAME --dtype DT`. */
sc_status sc_model_builtin_in(const char *name, sc_dtype dt, const char *new_name,
                              sc_model **out, sc_error *err);
/* A built-in name, else a file path. */
sc_status sc_model_open(const char *name_or_file, sc_model **out, sc_error *err);

#endif
