/* gen.c - the generator registry (sc_gens, sc_gen_find, sc_gen_run) and the
 * transformer pieces every generator shares (gen_int.h).
 *
 * Sources of the per-module formulas, with s tokens, hidden h, a heads of
 * size kv (inner = a*kv, = h for GPT), MLP inner f, d bytes per element:
 *
 *  - FLOPs count GEMMs only (2 per multiply-add), the convention of Narayanan
 *    et al. 2021, "Efficient Large-Scale Language Model Training on GPU
 *    Clusters Using Megatron-LM", sec. 5.1 / appendix: per layer and sample
 *    24*s*h^2*(1 + s/(6h)) forward, split as
 *      attention  QKV 6*s*h*inner + scores 2*s^2*inner + AV 2*s^2*inner
 *                 + out proj 2*s*inner*h   (= 8sh^2 + 4s^2h when inner = h)
 *      MLP        4*s*h*f                  (= 16sh^2 when f = 4h)
 *    Norms, softmax, residuals and lookups are 0. Backward = 2 x forward.
 *  - Activations saved for backward follow Korthikanti et al. 2022,
 *    "Reducing Activation Recomputation in Large Transformer Models", sec.
 *    4.1: per layer s*b*h*(34 + 5*a*s/h) bytes for 16-bit types and b = 1.
 *    Their terms, written for d-byte elements with 1-byte dropout masks:
 *      attention  input d*s*h, Q d*s*inner, K d*skv*inner, softmax output
 *                 d*a*s*skv, its dropout mask a*s*skv, dropout output
 *                 d*a*s*skv, V d*skv*inner, out-proj input d*s*inner,
 *                 output dropout mask s*h
 *                 (d = 2, self: 11*s*h + 5*a*s^2)
 *      MLP        input d*s*h, GeLU input d*s*f, fc2 input d*s*f, dropout
 *                 mask s*h                (d = 2, f = 4h: 19*s*h)
 *      each norm  its input d*s*h          (two per layer: 4*s*h)
 *    Cross-attention does not charge the encoder output it reads as its K/V
 *    input: that tensor is the act_out of the module named in `inputs`, and a
 *    stage holding cross-attention keeps it once however many layers use it.
 *    Embedding: its dropout mask s*h; LM head: its input d*s*h plus the
 *    fp32 logits of the cross-entropy, 4*s*V (Korthikanti sec. 4.1).
 *  - Tensor parallelism (Shoeybi et al. 2019, "Megatron-LM"): attention and
 *    MLP each all-reduce their output, d*s*h bytes per sample per forward;
 *    the vocab-parallel embedding all-reduces its output d*s*h; the
 *    vocab-parallel LM head with the parallel cross-entropy all-reduces three
 *    fp32 numbers per token (max, sum of exps, target logit): 12*s bytes.
 *    Norms are replicated (not shardable, nothing all-reduced).
 *  - Kernels (kernel.h), what Megatron-LM launches per leaf, per sample:
 *      norm       one mem kernel, 2dsh forward, 3dsh backward (tp "seq")
 *      attention  QKV GEMM (s, 3*inner, h) [cross: Q (sq, inner, h) and
 *                 KV (skv, 2*inner, h)], column-parallel; unfused: scores
 *                 GEMM (a, sq, skv, kv), scale-mask-softmax 2d*a*sq*skv
 *                 (backward 3d), dropout (2d+1)*a*sq*skv, context GEMM
 *                 (a, sq, kv, skv); flash: one flash kernel (a, sq, skv,
 *                 kv), causal in decoders; out-projection GEMM (sq, h,
 *                 inner), row-parallel; bias + dropout + residual add
 *                 (3d+1)*s*h forward, (2d+1)*s*h backward (tp "seq")
 *      MLP        fc1 GEMM (s, f, h), bias + GeLU 2dsf (backward 3dsf),
 *                 fc2 GEMM (s, h, f), bias + dropout + residual add
 *      embedding  gather 2dsh (backward scatter-add 3dsh), + 2dsh when it
 *                 adds learned positions, embedding dropout (2d+1)sh
 *      LM head    GEMM (s, V, h), column-parallel; the cross-entropy in fp32
 *                 over the vocabulary: read the logits (d), write and
 *                 re-read fp32 exps (4 + 4) per token and word; backward
 *                 reads the fp32 softmax, writes the logits' gradient
 *    Memory-bound byte counts are the tensors each kernel must read and
 *    write once (fused kernels as Megatron-LM fuses them); their GEMM FLOPs
 *    are the leaf's flops_fwd exactly.
 *  - Parameters: attention 4*h*inner (+ 3*inner + h biases), MLP 2*h*f
 *    (+ f + h biases), LayerNorm 2h (scale and bias), T5's norm h (scale).
 */
#include "gen_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- registry ------------------------------------------------------------ */

static const sc_gen *const gens[] = {&sc_gen_gpt, &sc_gen_llama, &sc_gen_t5, &sc_gen_vit,
                                     &sc_gen_fid, &sc_gen_mm};

const sc_gen *const *sc_gens(int *n)
{
    if (n)
        *n = (int)SC_ARRAY_LEN(gens);
    return gens;
}

const sc_gen *sc_gen_find(const char *kind)
{
    if (!kind)
        return NULL;
    for (size_t i = 0; i < SC_ARRAY_LEN(gens); i++)
        if (strcmp(gens[i]->kind, kind) == 0)
            return gens[i];
    return NULL;
}

/* ---- choice parameters ---------------------------------------------------- */

const char *const sc_gen_ce_names[] = {"megatron", "megatron-fused", "xentropy", NULL};

static int n_choices(const sc_gen_param *p)
{
    int k = 0;
    while (p->choices[k])
        k++;
    return k;
}

int sc_gen_choice_index(const sc_gen_param *p, const char *name)
{
    for (int i = 0; p && p->choices && name && p->choices[i]; i++)
        if (!strcmp(p->choices[i], name))
            return i;
    return -1;
}

const char *sc_gen_choice_names(const sc_gen_param *p, char *buf, size_t n)
{
    int k = n_choices(p);
    buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        size_t at = strlen(buf);
        snprintf(buf + at, n - at, "%s%s", i ? (i == k - 1 ? " or " : ", ") : "",
                 p->choices[i]);
    }
    return buf;
}

/* v is an index of p's names (sc_gen_run, for every choice parameter). */
static sc_status choice_check(const char *gen, const sc_gen_param *p, double v, sc_error *err)
{
    int k = n_choices(p);
    if (isfinite(v) && v == floor(v) && v >= 0 && v < k)
        return SC_OK;
    char names[256];
    return sc_err(err, SC_EINVAL, "%s: '%s' must be %s (got %g)", gen, p->name,
                  sc_gen_choice_names(p, names, sizeof names), v);
}

#define MAX_GEN_PARAMS 64

sc_status sc_gen_run(const sc_gen *g, const char *name, sc_dtype dtype, int n_over,
                     const char *const *names, const double *vals, sc_model **out,
                     sc_error *err)
{
    if (!g || !out || n_over < 0 || (n_over > 0 && (!names || !vals)))
        return sc_err(err, SC_EINVAL, "generator: bad arguments");
    if (g->n_params > MAX_GEN_PARAMS)
        return sc_err(err, SC_EINVAL, "%s: more than %d parameters", g->kind, MAX_GEN_PARAMS);
    if ((unsigned)dtype >= SC_DTYPE_N)
        return sc_err(err, SC_EINVAL, "%s: unknown dtype %d", g->kind, (int)dtype);
    double v[MAX_GEN_PARAMS];
    for (int i = 0; i < g->n_params; i++)
        v[i] = g->params[i].dflt;
    for (int k = 0; k < n_over; k++) {
        const sc_gen_param *p = sc_gen_param_find(g, names[k]);
        if (!p)
            return sc_err(err, SC_EINVAL, "%s: unknown parameter '%.64s'", g->kind,
                          names[k] ? names[k] : "(null)");
        v[p - g->params] = vals[k]; /* a later override of the same name wins */
    }
    /* a choice's range is in the table: checked here for every generator */
    sc_status st;
    for (int i = 0; i < g->n_params; i++)
        if (g->params[i].choices && (st = choice_check(g->kind, &g->params[i], v[i], err)))
            return st;
    return g->make(v, name ? name : g->kind, dtype, out, err);
}

/* a and b equal, '-' and '_' alike */
static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
            return 0;
    return *a == *b;
}

const sc_gen_param *sc_gen_param_find(const sc_gen *g, const char *name)
{
    for (int i = 0; g && name && i < g->n_params; i++)
        if (same_name(name, g->params[i].name))
            return &g->params[i];
    return NULL;
}

/* ---- validation helpers --------------------------------------------------- */

sc_status sc_gen_int(const char *gen, const char *param, double v, double lo, double hi,
                     sc_error *err)
{
    if (!isfinite(v) || v != floor(v) || v < lo || v > hi) {
        if (lo == 1)
            return sc_err(err, SC_EINVAL, "%s: '%s' must be a positive integer at most %.0f (got %g)",
                          gen, param, hi, v);
        return sc_err(err, SC_EINVAL, "%s: '%s' must be an integer from %.0f to %.0f (got %g)",
                      gen, param, lo, hi, v);
    }
    return SC_OK;
}

sc_status sc_gen_flag(const char *gen, const char *param, double v, sc_error *err)
{
    if (v != 0 && v != 1)
        return sc_err(err, SC_EINVAL, "%s: '%s' is a switch: 0 or 1 (got %g)", gen, param, v);
    return SC_OK;
}

/* ---- building ------------------------------------------------------------- */

sc_status sc_gen_begin(sc_gen_ctx *c, const char *gen, const char *name, sc_dtype dtype,
                       int seq_len, const char *root_name, sc_module **root, sc_error *err)
{
    memset(c, 0, sizeof *c);
    c->gen = gen;
    c->d = sc_dtype_bytes(dtype);
    c->m = sc_model_new(name, dtype, seq_len);
    if (!c->m)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", gen);
    *root = sc_model_add(c->m, NULL, root_name, "model");
    if (!*root)
        c->oom = 1;
    return SC_OK;
}

sc_status sc_gen_done(sc_gen_ctx *c, sc_model **out, sc_error *err)
{
    char file[64];
    snprintf(file, sizeof file, "<%s>", c->gen);
    sc_status st = c->oom ? sc_err(err, SC_ENOMEM, "%s: out of memory", file)
                          : sc_model_finish(c->m, file, err);
    if (st) {
        sc_model_free(c->m);
        c->m = NULL;
        return st;
    }
    *out = c->m;
    c->m = NULL;
    return SC_OK;
}

sc_module *sc_gen_add(sc_gen_ctx *c, sc_module *parent, const char *kind, const char *fmt, ...)
{
    if (c->oom || !parent) {
        c->oom = 1;
        return NULL;
    }
    char name[SC_NAME_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    sc_module *mod = sc_model_add(c->m, parent, name, kind);
    if (!mod)
        c->oom = 1;
    return mod;
}

void sc_gen_set(sc_module *mod, double params, double flops_fwd, double act_out,
                double act_saved)
{
    if (!mod)
        return;
    mod->params = params;
    mod->flops_fwd = flops_fwd;
    mod->act_out_bytes = act_out;
    mod->act_saved_bytes = act_saved;
}

void sc_gen_dims(sc_gen_ctx *c, sc_module *mod, ...)
{
    va_list ap;
    va_start(ap, mod);
    for (;;) {
        const char *n = va_arg(ap, const char *);
        if (!n)
            break;
        double v = va_arg(ap, double);
        sc_module_set_dim(c->m, mod, n, v);
    }
    va_end(ap);
}

static double inner(const sc_gen_tf *tf) { return tf->heads * tf->kv; }

sc_module *sc_gen_norm(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s,
                       const char *name)
{
    double n = tf->copies * s, d = c->d;
    sc_module *x = sc_gen_add(c, parent, "norm", "%s", name);
    sc_gen_set(x, tf->norm_p * tf->h, 0, d * n * tf->h, d * n * tf->h);
    sc_module_set_tp(x, 0, 0);
    sc_gen_dims(c, x, "hidden", tf->h, "seq", s, NULL);
    if (tf->copies != 1)
        sc_gen_dims(c, x, "passages", tf->copies, NULL);
    sc_module_add_kernel(c->m, x, sc_gen_k_norm(d, n, tf->h));
    return x;
}

sc_kernel sc_gen_k_norm(double d, double n, double width)
{
    return sc_kernel_mem("norm", 2 * d * n * width, 3 * d * n * width, SC_KTP_SEQ,
                         SC_ATTN_ANY);
}

sc_kernel sc_gen_k_residual(double d, double n, double width, int dropout)
{
    if (dropout)
        return sc_kernel_mem("bias_dropout_add", (3 * d + 1) * n * width,
                             (2 * d + 1) * n * width, SC_KTP_SEQ, SC_ATTN_ANY);
    return sc_kernel_mem("residual_add", 3 * d * n * width, 2 * d * n * width, SC_KTP_SEQ,
                         SC_ATTN_ANY);
}

sc_module *sc_gen_attn(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double sq,
                       double skv, int cross, const char *name)
{
    double h = tf->h, a = tf->heads, in = inner(tf), d = c->d, k = tf->copies;
    double params = 4 * h * in + (tf->bias ? 3 * in + h : 0);
    /* Q and out-projection over sq tokens, K and V over skv; scores and AV. */
    double flops = 2 * sq * h * in + 2 * 2 * skv * h * in + 2 * sq * in * h
                   + 2 * 2 * sq * skv * in;
    /* Korthikanti et al. 2022 sec. 4.1, see the top of this file; without
     * dropout the probabilities' mask and dropout output and the output's
     * mask are gone (the AV product reads the softmax output itself) */
    int drop = !c->no_dropout;
    double per_score = drop ? 2 * d + 1 : d, out_mask = drop ? sq * h : 0;
    double saved = d * sq * h + d * sq * in + 2 * d * skv * in + per_score * a * sq * skv
                   + d * sq * in + out_mask;
    sc_module *x = sc_gen_add(c, parent, cross ? "cross_attention" : "attention", "%s", name);
    sc_gen_set(x, params, k * flops, k * d * sq * h, k * saved);
    sc_module_set_tp(x, k * d * sq * h, 1); /* Megatron-LM: all-reduce after out proj */
    /* whole on every tp rank: the input and the output dropout mask;
     * selective recompute drops the scores' softmax, mask and dropout */
    sc_module_set_saved_parts(x, k * (d * sq * h + out_mask), k * per_score * a * sq * skv);
    sc_gen_dims(c, x, "hidden", h, "heads", a, "kv", tf->kv, "seq", sq, NULL);
    if (cross)
        sc_gen_dims(c, x, "kv_seq", skv, NULL);
    if (k != 1)
        sc_gen_dims(c, x, "passages", k, NULL);
    sc_model *m = c->m;
    if (cross) {
        sc_module_add_kernel(m, x, sc_kernel_gemm("q", 1, k * sq, in, h, SC_KTP_N, 0, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_gemm("kv", 1, k * skv, 2 * in, h, SC_KTP_N, 0,
                                                  SC_ATTN_ANY));
    } else {
        sc_module_add_kernel(m, x, sc_kernel_gemm("qkv", 1, k * sq, 3 * in, h, SC_KTP_N, 0,
                                                  SC_ATTN_ANY));
    }
    double sc2 = a * sq * skv; /* score elements per copy */
    /* self-attention's key dimension runs over the same tokens as its
     * queries: token slices scale it (kernel.h, kv and per) */
    sc_kernel ks = sc_kernel_gemm("scores", k * a, sq, skv, tf->kv, SC_KTP_BATCH, 1,
                                  SC_ATTN_UNFUSED);
    sc_kernel kc = sc_kernel_gemm("context", k * a, sq, tf->kv, skv, SC_KTP_BATCH, 1,
                                  SC_ATTN_UNFUSED);
    sc_kernel sm = sc_kernel_mem("softmax", k * 2 * d * sc2, k * 3 * d * sc2, SC_KTP_SHARD,
                                 SC_ATTN_UNFUSED);
    sc_kernel dr = sc_kernel_mem("attn_dropout", k * (2 * d + 1) * sc2, k * (2 * d + 1) * sc2,
                                 SC_KTP_SHARD, SC_ATTN_UNFUSED);
    ks.kv = cross ? 0 : 'n';
    kc.kv = cross ? 0 : 'k';
    sm.scores = dr.scores = !cross;
    sc_module_add_kernel(m, x, ks);
    sc_module_add_kernel(m, x, sm);
    if (drop)
        sc_module_add_kernel(m, x, dr);
    sc_module_add_kernel(m, x, kc);
    sc_module_add_kernel(m, x, sc_kernel_flash("flash", k * a, sq, skv, tf->kv,
                                               !cross && tf->causal, SC_KTP_BATCH));
    sc_module_add_kernel(m, x, sc_kernel_gemm("out_proj", 1, k * sq, h, in, SC_KTP_K, 0,
                                              SC_ATTN_ANY));
    sc_module_add_kernel(m, x, sc_gen_k_residual(d, k * sq, h, drop));
    return x;
}

sc_module *sc_gen_mlp(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s,
                      const char *name)
{
    double h = tf->h, f = tf->ffn, d = c->d, k = tf->copies;
    int drop = !c->no_dropout;
    double mask = drop ? s * h : 0; /* the output's dropout mask */
    sc_module *x = sc_gen_add(c, parent, "mlp", "%s", name);
    sc_gen_set(x, 2 * h * f + (tf->bias ? f + h : 0), k * 4 * s * h * f, k * d * s * h,
               k * (d * s * h + 2 * d * s * f + mask));
    sc_module_set_tp(x, k * d * s * h, 1); /* Megatron-LM: all-reduce after fc2 */
    sc_module_set_saved_parts(x, k * (d * s * h + mask), -1); /* input, dropout mask */
    sc_gen_dims(c, x, "hidden", h, "ffn", f, "seq", s, NULL);
    if (k != 1)
        sc_gen_dims(c, x, "passages", k, NULL);
    sc_model *m = c->m;
    sc_module_add_kernel(m, x, sc_kernel_gemm("fc1", 1, k * s, f, h, SC_KTP_N, 0, SC_ATTN_ANY));
    sc_module_add_kernel(m, x, sc_kernel_mem("bias_gelu", k * 2 * d * s * f, k * 3 * d * s * f,
                                             SC_KTP_SHARD, SC_ATTN_ANY));
    sc_module_add_kernel(m, x, sc_kernel_gemm("fc2", 1, k * s, h, f, SC_KTP_K, 0, SC_ATTN_ANY));
    sc_module_add_kernel(m, x, sc_gen_k_residual(d, k * s, h, drop));
    return x;
}

sc_module *sc_gen_block(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s,
                        int post_ln, double xskv, int n_xin, const char *const *xin,
                        const char *name)
{
    char nm[SC_NAME_MAX + 1];
    sc_module *b = sc_gen_add(c, parent, "block", "%s", name);
    if (!b)
        return NULL;
    b->act_out_bytes = tf->copies * c->d * s * tf->h;
#define PART(suffix) (snprintf(nm, sizeof nm, "%s." suffix, name), nm)
    if (post_ln) {
        sc_gen_attn(c, b, tf, s, s, 0, PART("attn"));
        sc_gen_norm(c, b, tf, s, PART("ln1"));
        sc_gen_mlp(c, b, tf, s, PART("mlp"));
        sc_gen_norm(c, b, tf, s, PART("ln2"));
    } else {
        sc_gen_norm(c, b, tf, s, PART("ln1"));
        sc_gen_attn(c, b, tf, s, s, 0, PART("attn"));
        sc_gen_norm(c, b, tf, s, PART("ln2"));
        if (xskv > 0) {
            sc_module *x = sc_gen_attn(c, b, tf, s, xskv, 1, PART("xattn"));
            for (int i = 0; i < n_xin; i++)
                sc_module_add_input(c->m, x, xin[i]);
            sc_gen_norm(c, b, tf, s, PART("ln3"));
        }
        sc_gen_mlp(c, b, tf, s, PART("mlp"));
    }
#undef PART
    return c->oom ? NULL : b;
}

sc_module *sc_gen_tok_embed(sc_gen_ctx *c, sc_module *parent, const char *name, double h,
                            double V, double positions, double s, int own, const char *shared)
{
    double d = c->d;
    int drop = !c->no_dropout;
    sc_module *x = sc_gen_add(c, parent, "embedding", "%s", name);
    /* Lookups are not GEMMs: 0 FLOPs. Saved: the embedding dropout mask. */
    sc_gen_set(x, own ? (V + positions) * h : positions * h, 0, d * s * h, drop ? s * h : 0);
    sc_module_set_tp(x, d * s * h, 1); /* vocab-parallel: all-reduce the output */
    if (drop)
        sc_module_set_saved_parts(x, s * h, -1); /* its dropout mask, after the allreduce */
    if (shared)
        sc_module_set_shared(c->m, x, shared);
    sc_gen_dims(c, x, "hidden", h, "vocab", V, "seq", s, NULL);
    double pos = positions > 0 ? 2 * d * s * h : 0;
    sc_module_add_kernel(c->m, x, sc_kernel_mem("gather", 2 * d * s * h + pos,
                                                3 * d * s * h + pos, SC_KTP_NONE, SC_ATTN_ANY));
    if (drop)
        sc_module_add_kernel(c->m, x, sc_kernel_mem("embed_dropout", (2 * d + 1) * s * h,
                                                    (2 * d + 1) * s * h, SC_KTP_SEQ,
                                                    SC_ATTN_ANY));
    return x;
}

/* The loss's passes over the logits, in bytes per logit (d the logits'
 * bytes; an fp32 model's .float() is no copy), forward, backward and saved:
 *  - megatron: Megatron-LM's vocab_parallel_cross_entropy on
 *    logits.float() (megatron/core/tensor_parallel/cross_entropy.py), one
 *    op at a time: the cast (d + 4), the max (4), the in-place subtraction
 *    and exp (8 + 8), the sum (4), the in-place division into the softmax
 *    it saves (8): d + 36 forward; backward the in-place multiply by the
 *    loss's gradient (8) and the cast back to the logits' type (4 + d).
 *  - megatron-fused: the same steps under jit fusion
 *    (megatron/core/fusions/fused_cross_entropy.py, NeMo's
 *    cross_entropy_loss_fusion): cast with max (d + 4), subtract-exp-sum
 *    (8), divide (8): d + 20; backward one pass, read fp32, write d.
 *  - xentropy: apex's softmax cross-entropy kernel (flash-attention's
 *    losses, LLM Foundry's fused_crossentropy): two reads of the logits
 *    forward (the max, then the sum of exponentials), backward one read
 *    and the gradient's write; it saves the logits, not a softmax. */
static void ce_bytes(sc_gen_ce ce, double d, double *fwd_b, double *bwd_b, double *saved_b)
{
    double cast = d == 4 ? 0 : d + 4;
    if (ce == SC_CE_XENTROPY) {
        *fwd_b = 2 * d, *bwd_b = 2 * d, *saved_b = d;
    } else if (ce == SC_CE_MEGATRON_FUSED) {
        *fwd_b = (cast ? cast : 4) + 16, *bwd_b = 4 + d, *saved_b = 4; /* max read in the cast */
    } else {
        *fwd_b = cast + 32, *bwd_b = 8 + cast, *saved_b = 4;
    }
}

const char *sc_gen_head_cross_entropy(const sc_module *head, sc_dtype dt)
{
    const sc_kernel *k = sc_module_kernel(head, "cross_entropy");
    double s = sc_module_dim(head, "seq", 0), V = sc_module_dim(head, "vocab", 0);
    if (!k || !(s > 0 && V > 0))
        return NULL;
    for (int ce = SC_CE_MEGATRON; ce <= SC_CE_XENTROPY; ce++) {
        double f, b, saved;
        ce_bytes((sc_gen_ce)ce, sc_dtype_bytes(dt), &f, &b, &saved);
        if (fabs(k->bytes - f * s * V) <= 1e-9 * k->bytes &&
            fabs(k->bwd_bytes - b * s * V) <= 1e-9 * k->bwd_bytes)
            return sc_gen_ce_names[ce];
    }
    return NULL;
}

sc_module *sc_gen_lm_head(sc_gen_ctx *c, sc_module *parent, const char *name, double h,
                          double V, double s, int own, const char *shared)
{
    double d = c->d, cast = d == 4 ? 0 : d + 4, fwd_b, bwd_b, saved_b;
    ce_bytes(c->ce, d, &fwd_b, &bwd_b, &saved_b);
    sc_module *x = sc_gen_add(c, parent, "head", "%s", name);
    sc_gen_set(x, own ? V * h : 0, 2 * s * h * V, d * s * V, d * s * h + saved_b * s * V);
    sc_module_set_tp(x, 12 * s, 1); /* parallel cross-entropy: 3 fp32 per token */
    sc_module_set_saved_parts(x, d * s * h, -1); /* its input; the logits are vocab-sharded */
    if (shared)
        sc_module_set_shared(c->m, x, shared);
    sc_gen_dims(c, x, "hidden", h, "vocab", V, "seq", s, NULL);
    sc_module_add_kernel(c->m, x, sc_kernel_gemm("logits", 1, s, V, h, SC_KTP_N, 0, SC_ATTN_ANY));
    sc_module_add_kernel(c->m, x, sc_kernel_mem("cross_entropy", fwd_b * s * V, bwd_b * s * V,
                                                SC_KTP_SHARD, SC_ATTN_ANY));
    /* The training loop's metrics over the same logits, each PyTorch's
     * unfused cross-entropy under autocast (Composer's LanguageCrossEntropy
     * and LanguagePerplexity, updated every microbatch): the cast to fp32
     * (d + 4; none in fp32), then log_softmax's passes (the max and the sum
     * of exponentials read the row, the output reads and writes it: 16);
     * forward only, under no_grad, so nothing is saved and no backward runs */
    if (c->train_metrics > 0)
        sc_module_add_kernel(c->m, x, sc_kernel_mem("train_metrics",
                                                    c->train_metrics * (cast + 16) * s * V, 0,
                                                    SC_KTP_SHARD, SC_ATTN_ANY));
    return x;
}
