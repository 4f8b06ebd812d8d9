/* gen_int.h - what the generator files (gen_*.c) share; not for other modules.
 *
 * The pieces of a transformer (norm, attention, MLP, block, token embedding,
 * LM head) are built here once so that every generator charges parameters,
 * FLOPs, activations and tensor-parallel traffic the same way. The formulas
 * and their sources are in gen.c.
 *
 * Ownership: every builder adds to c->m and returns the new module, or NULL
 * after an allocation failure (then c->oom is set, later builders do nothing,
 * and sc_gen_done reports SC_ENOMEM). Builders never fail otherwise: the
 * generator validates its hyperparameters first.
 */
#ifndef SC_GEN_INT_H
#define SC_GEN_INT_H

#include "gen.h"

/* The cross-entropy a framework runs over the logits (the generators'
 * cross_entropy parameter; bytes per logit in gen.c, sc_gen_lm_head):
 * Megatron-LM's vocab-parallel loss, one op at a time (its default), the
 * same fused by Megatron-Core's --cross-entropy-loss-fusion, or one kernel
 * that reads the logits and writes their gradient (apex's xentropy, which
 * flash-attention and LLM Foundry use). */
typedef enum sc_gen_ce { SC_CE_MEGATRON = 0, SC_CE_MEGATRON_FUSED, SC_CE_XENTROPY } sc_gen_ce;
extern const char *const sc_gen_ce_names[]; /* "megatron", "megatron-fused", "xentropy", NULL */
/* The parameter entry every generator with an LM head lists. */
#define SC_GEN_CE_PARAM                                                                  \
    {"cross_entropy", SC_CE_MEGATRON, 0,                                                 \
     "the loss over the logits as the framework runs it: megatron (Megatron-LM's "      \
     "default), megatron-fused (--cross-entropy-loss-fusion) or xentropy (one kernel: " \
     "apex, flash-attention, LLM Foundry)",                                              \
     sc_gen_ce_names}

typedef struct sc_gen_ctx {
    sc_model *m;
    const char *gen; /* generator kind for messages: "gpt" */
    double d;        /* bytes per activation element (the model's dtype) */
    sc_gen_ce ce;    /* the LM head's cross-entropy (SC_CE_MEGATRON unless set) */
    /* 1: the model trains without dropout (p = 0: PyTorch's dropout returns
     * its input, no kernel, no mask): no dropout kernels and no masks in
     * sc_gen_attn, sc_gen_mlp and sc_gen_tok_embed; 0 (default): Megatron-LM's
     * and GPT-2's dropouts, as Korthikanti et al. 2022 count them */
    int no_dropout;
    /* unfused cross-entropy passes over the logits that the training loop
     * runs each microbatch for its metrics, forward only, outside autograd
     * (sc_gen_lm_head's train_metrics kernel); 0 (default): none */
    int train_metrics;
    int oom;
} sc_gen_ctx;

/* Transformer shape shared by the blocks of one stack. */
typedef struct sc_gen_tf {
    double h;      /* hidden (d_model) */
    double heads;  /* attention heads a */
    double kv;     /* per-head dimension (h / a unless T5's d_kv says otherwise) */
    double ffn;    /* MLP inner size */
    int bias;      /* 1: linear layers have biases (GPT, ViT, BERT); 0: T5 */
    double norm_p; /* norm params per hidden unit: 2 LayerNorm, 1 T5's scale-only norm */
    double copies; /* independent sequences per sample (FiD's k passages), else 1 */
    int causal;    /* 1: self-attention is masked causally (decoders): flash runs half */
} sc_gen_tf;

/* Validates that v is an integer in [lo, hi]; the message names the
 * generator and the parameter: "gpt: 'layers' must be ...". */
sc_status sc_gen_int(const char *gen, const char *param, double v, double lo, double hi,
                     sc_error *err);
/* Same for a boolean switch (0 or 1). */
sc_status sc_gen_flag(const char *gen, const char *param, double v, sc_error *err);

/* Starts a model (ctx->m) with a root container named root_name. */
sc_status sc_gen_begin(sc_gen_ctx *c, const char *gen, const char *name, sc_dtype dtype,
                       int seq_len, const char *root_name, sc_module **root, sc_error *err);
/* Finishes (validates) the model and hands it to *out, or frees it. */
sc_status sc_gen_done(sc_gen_ctx *c, sc_model **out, sc_error *err);

/* Adds a module whose name is printf-formatted; NULL parent or an earlier
 * failure gives NULL. */
sc_module *sc_gen_add(sc_gen_ctx *c, sc_module *parent, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets the numbers of a module (no-op on NULL). */
void sc_gen_set(sc_module *mod, double params, double flops_fwd, double act_out,
                double act_saved);
/* Sets dims from NULL-terminated (const char *name, double value) pairs. */
void sc_gen_dims(sc_gen_ctx *c, sc_module *mod, ...);

/* A norm over s tokens (x copies): params norm_p*h, no FLOPs (GEMM-only
 * convention), saves its input. Not tensor-shardable. */
sc_module *sc_gen_norm(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s,
                       const char *name);
/* Attention of sq query tokens over skv key/value tokens (skv == sq and
 * cross == 0 for self-attention). */
sc_module *sc_gen_attn(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double sq,
                       double skv, int cross, const char *name);
sc_module *sc_gen_mlp(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s,
                      const char *name);

/* The memory-bound kernels every generator's leaves share (kernel.h), for
 * n tokens of `width` elements of d bytes: a norm (LayerNorm or RMSNorm:
 * read x, write y; backward reads x and dy, writes dx); dropout + residual add
 * (read the branch and the residual, write the sum and a 1-byte mask;
 * backward reads dy and the mask, writes dx; without dropout: read two,
 * write one, backward passes dy through to two: read one, write one). */
sc_kernel sc_gen_k_norm(double d, double n, double width);
sc_kernel sc_gen_k_residual(double d, double n, double width, int dropout);

/* A transformer block container "name" over s tokens:
 *   pre-LN (post_ln 0): name.ln1 name.attn name.ln2 [name.xattn name.ln3] name.mlp
 *   post-LN (BERT):     name.attn name.ln1 name.mlp name.ln2
 * With xskv > 0 a cross-attention over xskv tokens is added (decoder block)
 * naming the n_xin modules xin[] in its inputs (pre-LN only; post-LN
 * blocks take no cross-attention). Returns the block. */
sc_module *sc_gen_block(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s,
                        int post_ln, double xskv, int n_xin, const char *const *xin,
                        const char *name);

/* Token embedding (vocab V) plus `positions` learned position rows (0 for
 * none) over s tokens; vocab-parallel under tp. shared may be NULL; own = 0
 * gives a module that reuses a shared table (0 own params). */
sc_module *sc_gen_tok_embed(sc_gen_ctx *c, sc_module *parent, const char *name, double h,
                            double V, double positions, double s, int own, const char *shared);
/* LM head over s tokens: own params V*h (or 0 when tied through shared). */
sc_module *sc_gen_lm_head(sc_gen_ctx *c, sc_module *parent, const char *name, double h,
                          double V, double s, int own, const char *shared);

/* The ViT image tower (gen_vit.c), also the vision encoder of gen_mm.c:
 * PREFIXembed (patches as a linear layer + cls token + positions),
 * PREFIXblocks.i, PREFIXln_f over (image/patch)^2 + 1 tokens. Returns the
 * final norm. The caller has validated image % patch == 0. */
sc_module *sc_gen_vit_tower(sc_gen_ctx *c, sc_module *parent, const char *prefix, double layers,
                            const sc_gen_tf *tf, double image, double patch, double channels);

#endif
