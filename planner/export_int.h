/* export_int.h - what export.c shares with the target files
 * (export_megatron.c, export_deepspeed.c, export_torch.c); nothing else
 * includes it.
 *
 * export.c analyses the plan once into an sc_export_ctx: the model's units
 * (outermost blocks, and every leaf outside a block), which unit each stage
 * begins with, the GPT shape when the model has one, the node layout. A
 * target reads the context, adds notes and files to the export, and refuses
 * through ex_refuse.
 */
#ifndef SC_EXPORT_INT_H
#define SC_EXPORT_INT_H

#include "export.h"
#include "framework.h"

/* A unit: an outermost block, or one leaf outside every block. */
typedef struct ex_unit {
    int first, last;          /* its leaves (inclusive, execution order) */
    const sc_module *mod;     /* the block, or the leaf */
    int block;                /* its index among the blocks, or -1 */
} ex_unit;

/* A decoder-only transformer as Megatron-LM's GPT model builds it: an
 * embedding with a vocabulary, identical blocks (one attention, one MLP),
 * then a final norm and an LM head. ok = 0 with why set when the model is
 * not one. */
typedef struct ex_gpt {
    int ok;
    char why[512];
    int layers, hidden, heads, kv, ffn, vocab, seq;
    int tied;                 /* the head shares the embedding's weights */
    int pos_embed;            /* the embedding holds learned positions */
    int pos_rows;             /* and that many of them (>= seq), when it does */
    /* the Llama-style variants the layers show (ex_gpt_variant, export.c):
     * grouped-query attention with kv_groups < heads key/value heads, the
     * MLP's activation, RMSNorm, no biases on the linear layers, rotary
     * positions */
    int kv_groups;
    enum { EX_MLP_GELU, EX_MLP_SWIGLU, EX_MLP_RELU2 } mlp;
    int rmsnorm, no_bias, rope;
    /* the loss the head's kernels price (sc_gen_head_cross_entropy:
     * "megatron", "megatron-fused", "xentropy"), or NULL when not known */
    const char *ce;
} ex_gpt;

struct sc_export_ctx {
    const sc_plan *plan;
    const sc_model *model;
    const char *plan_file;
    const sc_export_target *target;
    const sc_framework *fw;   /* the target's row of framework.h's table */
    int n_units;
    ex_unit *units;
    int n_blocks;
    int n_stages;             /* pp·v */
    /* stage_unit[s]: the unit stage s begins with; n_stages + 1 entries
     * (the last is n_units); -1 where stage s begins inside a block */
    int *stage_unit;
    int world, nodes, per_node; /* ranks, nodes used, ranks per node */
    int order[3];             /* placement, innermost first: 0 tp, 1 pp, 2 dp */
    ex_gpt gpt;
    /* the plan's attention ("unfused", "flash") where the model's kernels
     * price the two differently (a kernel list with attention kernels);
     * NULL where the prediction does not depend on it */
    const char *attention;
    /* 1: some leaf runs dropout (a kernel named so, or a dropout module's
     * kernels); 0: the kernels run none (Llama, gpt --no_dropout); -1: the
     * model lists no kernels, so nothing is known */
    int dropout;
};

/* The refusal: "PLAN: FRAMEWORK cannot run this plan: WHAT". SC_ENOTSUP. */
sc_status ex_refuse(const sc_export_ctx *x, sc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* What this export does not write although the framework could run it:
 * "PLAN: stagecraft export --to TARGET does not write WHAT". SC_ENOTSUP. */
sc_status ex_unwritten(const sc_export_ctx *x, sc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds one note (printf-formatted). SC_ENOMEM. */
sc_status ex_note(sc_export *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds a file (takes the buffer's text: b is emptied). SC_ENOMEM. */
sc_status ex_file(sc_export *e, const char *name, sc_buf *b);
/* text wrapped at 78 columns: the first line after first, the others after
 * rest (comment prefixes such as "# "). */
void ex_wrap(sc_buf *b, const char *first, const char *rest, const char *text);
/* The notes as comment lines "PREFIX  - NOTE", wrapped at 78 columns. */
void ex_notes_comment(const sc_export *e, sc_buf *b, const char *prefix);
/* Blocks held by stage s (its units that are blocks). */
int ex_stage_blocks(const sc_export_ctx *x, int s);
/* "tp,pp,dp"-style name of an axis (0 tp, 1 pp, 2 dp). */
const char *ex_axis(int a);
/* The bytes per element of the model's dtype (2 for bf16). */
double ex_elem_bytes(const sc_export_ctx *x);
/* The plan's source line for headers: "PLAN (MODEL on NODES x CLUSTER, ...)". */
void ex_plan_line(const sc_export_ctx *x, sc_buf *b, const char *prefix);

extern const sc_export_target sc_export_megatron;
extern const sc_export_target sc_export_deepspeed;
extern const sc_export_target sc_export_torch;

#endif
