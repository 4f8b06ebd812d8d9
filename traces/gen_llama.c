/* gen_llama.c - Llama-style decoder-only transformer (Llama 2/3): pre-norm
 * blocks with RMSNorm, grouped-query attention with rotary position
 * embeddings, a SwiGLU MLP, no biases, untied token embedding and LM head.
 * With --relu2 the MLP is two matrices around a squared ReLU instead
 * (Nemotron-4: Parmar et al. 2024, "Nemotron-4 15B Technical Report",
 * sec. 2, and NVIDIA's Megatron-Core configurations, activation
 * "squared-relu": up h x f, relu(x)^2, down f x h; no gate).
 *
 * Tree: root "llama" -> embed (token only: rotary embeddings have no
 * parameters), blocks.i (kind "block": ln1, attn, ln2, mlp), ln_f, head.
 *
 * Sources:
 *  - Architecture: Touvron et al. 2023, "LLaMA: Open and Efficient
 *    Foundation Language Models", sec. 2.2 (pre-normalization with RMSNorm,
 *    SwiGLU, rotary embeddings; the reference code's linear layers have no
 *    biases and there is no dropout); grouped-query attention,
 *    Ainslie et al. 2023, "GQA", as used by Llama 2 34B/70B and all of Llama 3
 *    (Dubey et al. 2024, "The Llama 3 Herd of Models", sec. 3.2).
 *  - Parameters, with h hidden, a query heads of size hd = h/a, g kv heads
 *    (kvd = g*hd), MLP inner f, vocabulary V, l layers:
 *      attention  q h*h + k h*kvd + v h*kvd + o h*h = 2h^2 + 2h*kvd
 *      MLP        gate h*f + up h*f + down f*h     = 3h*f
 *                 (--relu2: up h*f + down f*h      = 2h*f)
 *      RMSNorm    h (a scale, no bias), two per layer and a final one
 *      embedding  V*h, LM head V*h (0 with --tied: the `shared` group "tok")
 *    P = l*(2h^2 + 2h*kvd + 3h*f + 2h) + h + 2V*h (untied).
 *  - Forward FLOPs per sample, gen.c's convention (Narayanan et al. 2021:
 *    GEMMs only, 2 per multiply-add, backward 2 x forward): every linear
 *    layer over s tokens costs 2*s*in*out, so
 *      attention  Q 2sh^2 + K,V 2*2*s*h*kvd + O 2sh^2 + scores and AV
 *                 4*s^2*h (each query head attends over all s keys, GQA or
 *                 not; counted over the full s x s square without halving
 *                 for the causal mask, as gen_gpt.c does)
 *      MLP        3 * 2*s*h*f = 6shf (--relu2: 4shf)
 *      LM head    2shV
 *    RoPE, RMSNorm, SiLU, the gating product and residuals are 0.
 *  - Activations saved for backward: gen.c's split of Korthikanti et al.
 *    2022 sec. 4.1, adapted where Llama differs (d bytes per element):
 *      no dropout anywhere (Llama trains without it), so the attention-
 *        probability and output dropout masks and the dropout output are
 *        gone: the AV product reads the softmax output itself;
 *      attention  input d*s*h, Q d*s*h, K and V d*s*kvd each (GQA: stored at
 *                 kv width; the sharing of a kv head by a/g query heads is a
 *                 broadcast, not a copy), softmax output d*a*s^2, out-proj
 *                 input d*s*h.  RoPE needs nothing saved: its backward is
 *                 the inverse rotation, and the rotated Q and K are the ones
 *                 the scores GEMM saves anyway.
 *                 (d = 2, g = a: 10*s*h + 2*a*s^2 against GPT's 11sh + 5as^2)
 *      SwiGLU     input d*s*h, gate and up outputs d*s*f each (the SiLU and
 *                 the product need both), down-proj input d*s*f
 *                 (d*s*h + 3*d*s*f; Megatron-LM's fused SwiGLU keeps its
 *                 2f-wide input and recomputes the SiLU, the same bytes)
 *      relu2      input d*s*h, the up output d*s*f (the square's backward
 *                 needs it), down-proj input d*s*f (d*s*h + 2*d*s*f)
 *      RMSNorm    its input d*s*h (the per-token rstd is left out, as
 *                 LayerNorm's mean and rstd are in gen.c)
 *      embedding  0 (no embedding dropout); LM head as gen.c: d*s*h + 4*s*V.
 *  - Tensor parallelism as gen.c (Megatron-LM): attention and MLP each
 *    all-reduce their output, d*s*h bytes; vocab-parallel embedding d*s*h;
 *    the LM head's parallel cross-entropy 12*s. Under tp the kv heads split
 *    across ranks like the query heads, so tp must divide 'kv_heads' too
 *    (the planner's check reads the attention module's dim "kv_heads").
 *  - Dims: attention hidden, heads, kv (= head size hd, as everywhere),
 *    kv_heads, seq; mlp hidden, ffn, seq; embedding and head hidden, vocab,
 *    seq; the executor sizes its fused QKV GEMM h + 2*kvd wide from them.
 *  - --eager: the kernels of eager PyTorch Llama code, which runs a layer op
 *    by op where Megatron-LM and Transformer Engine fuse: read in ibm-fms at
 *    6440fee (2024-03-14, the LLaMA IBM's fms-fsdp trained in its March 2024
 *    table): fms/modules/layernorm.py (LayerNormParameterized with use_mean
 *    false and use_high_precision_pow: x.float(), pow(2).mean(-1), times the
 *    rsqrt, type_as(x), times the weight; Hugging Face's LlamaRMSNorm runs
 *    the same ops), positions.py (RotaryEmbedding.adjusted_qk: Q and K to
 *    fp32 as pairs, a broadcast product with the 2 x 2 rotations, summed over
 *    the pair, back to the dtype; Hugging Face rotates in the training
 *    dtype, fewer bytes, not listed apart), attention.py (query, key and
 *    value separate Linear layers; K and V expanded to the query heads and
 *    flattened, a copy, where kv heads < heads; the output transposed and
 *    made contiguous, a copy after the unfused products only) and
 *    feedforward.py (GatedLinearUnit: a(wg(x)) * w1(x), two Linear layers,
 *    SiLU and the product apart). Each op is a memory kernel with its
 *    forward bytes read plus written per element and, for its backward,
 *    those of autograd's formulas for it (norm_eager and gqa list them);
 *    the casts to fp32 and back are no kernels in an fp32 model. Saved for
 *    the backward: the RMSNorm keeps x in fp32 and the normalized x, (4 +
 *    d) bytes an element; the fused attention keeps K and V as copied to
 *    every head (h wide, not kv_heads · hd); the MLP keeps silu(gate) too,
 *    one more s·f. Parameters and FLOPs are the same either way.
 */
#include "gen_int.h"

#include <math.h>
#include <stdio.h>

enum {
    P_LAYERS, P_HIDDEN, P_HEADS, P_KV_HEADS, P_FFN, P_SEQ, P_VOCAB, P_TIED, P_RELU2, P_CE,
    P_EAGER, P_N
};

/* Defaults: Llama 3 8B (Dubey et al. 2024, Table 3). */
static const sc_gen_param params[P_N] = {
    [P_LAYERS] = {"layers", 32, 0, "transformer layers l"},
    [P_HIDDEN] = {"hidden", 4096, 0, "hidden size h"},
    [P_HEADS] = {"heads", 32, 0, "query heads a (must divide hidden; head size even for RoPE)"},
    [P_KV_HEADS] = {"kv_heads", 8, 0, "key/value heads of grouped-query attention (must divide heads)"},
    [P_FFN] = {"ffn", 14336, 0, "MLP inner size f (SwiGLU: gate, up h x f, down f x h)"},
    [P_SEQ] = {"seq", 8192, 0, "sequence length s"},
    [P_VOCAB] = {"vocab", 128256, 0, "vocabulary size V"},
    [P_TIED] = {"tied", 0, 1, "tie the LM head to the token embedding"},
    [P_RELU2] = {"relu2", 0, 1, "a squared-ReLU MLP (up h x f, down f x h; Nemotron-4) instead of SwiGLU"},
    [P_CE] = SC_GEN_CE_PARAM,
    [P_EAGER] = {"eager", 0, 1,
                 "the layers op by op, as eager PyTorch Llama code runs them (ibm-fms's LLaMA "
                 "of 2024; Hugging Face's alike): q, k, v and gate, up as separate GEMMs, "
                 "RMSNorm and the rotary embedding in fp32 a kernel an op, K and V copied to "
                 "every query head, the attention output made contiguous after unfused "
                 "attention"},
};

/* --eager (see the top of this file): a kernel an op, each one's bytes read
 * plus written per element, forward and backward (fp32 4 bytes, d the
 * training dtype's). A cast to fp32 and back is no kernel where the
 * training dtype is fp32 (4 bytes): Tensor.float() and type_as return the
 * tensor itself. */
typedef struct eager_op {
    const char *name;
    double fwd, bwd; /* bytes an element */
    int cast;        /* a cast between the training dtype and fp32 */
} eager_op;

static void eager_kernels(sc_model *m, sc_module *x, const eager_op *ops, size_t n, double d,
                          double elems, sc_ktp tp)
{
    for (size_t i = 0; i < n; i++)
        if (!ops[i].cast || d != 4)
            sc_module_add_kernel(m, x, sc_kernel_mem(ops[i].name, ops[i].fwd * elems,
                                                     ops[i].bwd * elems, tp, SC_ATTN_ANY));
}

/* RMSNorm as ibm-fms's LayerNormParameterized (use_mean false,
 * use_high_precision_pow) and Hugging Face's LlamaRMSNorm run it: x.float(),
 * pow(2), mean(-1), x * rsqrt(mean + eps), back to the training dtype, times
 * the weight (the per-token rsqrt and add left out: s elements, not s*h).
 * Backward, by autograd's formulas: the casts each way; pow's 2*x*g as
 * pow(x, 1), times 2, times g; mean's gradient spread to every element;
 * the scaling's two gradients (g*r, and sum(g*x) per token) and the sum of
 * x's two gradient paths; the weight's g*w and sum(g*x) over tokens. It
 * keeps x in fp32 and the normalized x for the backward. */
static void norm_eager(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s,
                       const char *name)
{
    double d = c->d, n = s * tf->h;
    sc_module *x = sc_gen_add(c, parent, "norm", "%s", name);
    sc_gen_set(x, tf->norm_p * tf->h, 0, d * n, (4 + d) * n);
    sc_module_set_tp(x, 0, 0);
    sc_gen_dims(c, x, "hidden", tf->h, "seq", s, NULL);
    const eager_op ops[] = {{"norm_to_fp32", d + 4, 4 + d, 1},
                            {"norm_square", 8, 8 + 8 + 12, 0},
                            {"norm_mean", 4, 4, 0},
                            {"norm_scale", 8, 8 + 16 + 12, 0},
                            {"norm_to_dtype", 4 + d, d + 4, 1},
                            {"norm_weight", 2 * d, 2 * d + 3 * d + d, 0}};
    eager_kernels(c->m, x, ops, SC_ARRAY_LEN(ops), d, n, SC_KTP_SEQ);
}

/* An RMSNorm: gen.c's one fused kernel, or with --eager norm_eager's. */
static void norm(sc_gen_ctx *c, sc_module *parent, const sc_gen_tf *tf, double s, int eager,
                 const char *name)
{
    if (eager)
        norm_eager(c, parent, tf, s, name);
    else
        sc_gen_norm(c, parent, tf, s, name);
}

/* Grouped-query self-attention over s tokens; see the top of this file. */
static sc_module *gqa(sc_gen_ctx *c, sc_module *parent, double h, double a, double g, double s,
                      int eager, const char *name)
{
    double hd = h / a, kvd = g * hd, d = c->d;
    double own = 2 * h * h + 2 * h * kvd;
    double flops = 2 * s * h * h + 2 * 2 * s * h * kvd + 2 * s * h * h + 4 * s * s * h;
    double saved = d * s * h + d * s * h + 2 * d * s * kvd + d * a * s * s + d * s * h;
    if (eager && g < a) /* the fused kernel saves K and V as it got them: copied to every head */
        saved += 2 * d * s * (h - kvd);
    sc_module *x = sc_gen_add(c, parent, "attention", "%s", name);
    sc_gen_set(x, own, flops, d * s * h, saved);
    sc_module_set_tp(x, d * s * h, 1); /* Megatron-LM: all-reduce after out proj */
    sc_module_set_saved_parts(x, d * s * h, d * a * s * s); /* input; softmax output */
    sc_gen_dims(c, x, "hidden", h, "heads", a, "kv", hd, "kv_heads", g, "seq", s, NULL);
    /* kernels as gen.c's attention, with K and V at the kv heads' width, a
     * rotary kernel over Q and K (read and write both), no dropout */
    sc_model *m = c->m;
    if (!eager) {
        sc_module_add_kernel(m, x, sc_kernel_gemm("qkv", 1, s, h + 2 * kvd, h, SC_KTP_N, 0,
                                                  SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_mem("rotary", 2 * d * s * (h + kvd),
                                                 2 * d * s * (h + kvd), SC_KTP_SHARD,
                                                 SC_ATTN_ANY));
    } else {
        /* --eager: q, k and v each a GEMM, their input's three data
         * gradients summed (two adds, backward); the rotation as ibm-fms's
         * RotaryEmbedding.adjusted_qk runs it over Q and K: float(), a
         * broadcast product with the 2 x 2 rotations into a tensor twice
         * as large in fp32, its sum over the pair, back to the training
         * dtype (backward: the cast, the product's gradient, its sum over
         * the broadcast, the cast); then K and V expanded to every query
         * head and made contiguous for the fused kernel (a copy, summed
         * back in the backward) where the heads are grouped */
        sc_module_add_kernel(m, x, sc_kernel_gemm("q", 1, s, h, h, SC_KTP_N, 0, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_gemm("k", 1, s, kvd, h, SC_KTP_N, 0, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_gemm("v", 1, s, kvd, h, SC_KTP_N, 0, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_mem("qkv_grad_sum", 0, 2 * 3 * d * s * h,
                                                 SC_KTP_SEQ, SC_ATTN_ANY));
        const eager_op ops[] = {{"rotary_to_fp32", d + 4, 4 + d, 1},
                                {"rotary_product", 4 + 8, 8 + 8, 0},
                                {"rotary_sum", 8 + 4, 8 + 4, 0},
                                {"rotary_to_dtype", 4 + d, d + 4, 1}};
        eager_kernels(m, x, ops, SC_ARRAY_LEN(ops), d, s * (h + kvd), SC_KTP_SHARD);
        if (g < a)
            sc_module_add_kernel(m, x, sc_kernel_mem("kv_expand", 2 * d * s * (kvd + h),
                                                     2 * d * s * (h + kvd), SC_KTP_SHARD,
                                                     SC_ATTN_ANY));
    }
    sc_kernel ks = sc_kernel_gemm("scores", a, s, s, hd, SC_KTP_BATCH, 1, SC_ATTN_UNFUSED);
    sc_kernel kc = sc_kernel_gemm("context", a, s, hd, s, SC_KTP_BATCH, 1, SC_ATTN_UNFUSED);
    sc_kernel sm = sc_kernel_mem("softmax", 2 * d * a * s * s, 3 * d * a * s * s, SC_KTP_SHARD,
                                 SC_ATTN_UNFUSED);
    ks.kv = 'n';
    kc.kv = 'k';
    sm.scores = 1;
    sc_module_add_kernel(m, x, ks);
    sc_module_add_kernel(m, x, sm);
    sc_module_add_kernel(m, x, kc);
    sc_kernel fa = sc_kernel_flash("flash", a, s, s, hd, 1, SC_KTP_BATCH);
    fa.kv_heads = g;
    sc_module_add_kernel(m, x, fa);
    /* the output (b, heads, s, hd) transposed back and made contiguous: a
     * copy after the unfused products only; PyTorch's fused kernels
     * (scaled_dot_product_attention's flash and memory-efficient paths) write
     * it token-major already and return a transposed view of it, which
     * .contiguous() leaves as it is */
    if (eager)
        sc_module_add_kernel(m, x, sc_kernel_mem("attn_contiguous", 2 * d * s * h,
                                                 2 * d * s * h, SC_KTP_SHARD, SC_ATTN_UNFUSED));
    sc_module_add_kernel(m, x, sc_kernel_gemm("out_proj", 1, s, h, h, SC_KTP_K, 0, SC_ATTN_ANY));
    sc_module_add_kernel(m, x, sc_gen_k_residual(d, s, h, 0));
    return x;
}

/* The MLP over s tokens: SwiGLU (gated: gate and up h x f, down f x h) or,
 * with --relu2, a squared ReLU between up h x f and down f x h. */
static sc_module *mlp(sc_gen_ctx *c, sc_module *parent, double h, double f, double s, int gated,
                      int eager, const char *name)
{
    double d = c->d, mats = gated ? 3 : 2; /* h x f matrices */
    sc_module *x = sc_gen_add(c, parent, "mlp", "%s", name);
    /* saved: the input and the h x f outputs (fused: gate and up, and the
     * product); eager (always gated: make refuses --eager with --relu2) also
     * keeps silu(gate), the product's other factor */
    double saved = d * s * h + (mats + eager) * d * s * f;
    sc_gen_set(x, mats * h * f, 2 * mats * s * h * f, d * s * h, saved);
    sc_module_set_tp(x, d * s * h, 1); /* Megatron-LM: all-reduce after down proj */
    sc_module_set_saved_parts(x, d * s * h, -1); /* its input */
    sc_gen_dims(c, x, "hidden", h, "ffn", f, "seq", s, NULL);
    /* SwiGLU: gate and up as one column-parallel GEMM; the activation reads
     * both and writes one (backward: reads both and the gradient, writes
     * two). relu2: the square reads the up output and writes one as wide
     * (backward: reads it and the gradient, writes the gradient). */
    sc_model *m = c->m;
    if (eager) {
        /* --eager: gate and up each a GEMM (their input's data gradients
         * summed in the backward), silu(gate) and the product each a kernel
         * (ibm-fms's GatedLinearUnit: a(wg(x)) * w1(x)); backward: SiLU's
         * gradient reads its input and the gradient, the product's two
         * gradients read the gradient and the other factor each */
        sc_module_add_kernel(m, x, sc_kernel_gemm("gate", 1, s, f, h, SC_KTP_N, 0, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_gemm("up", 1, s, f, h, SC_KTP_N, 0, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_mem("gate_up_grad_sum", 0, 3 * d * s * h,
                                                 SC_KTP_SEQ, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_mem("silu", 2 * d * s * f, 3 * d * s * f,
                                                 SC_KTP_SHARD, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_mem("gate_product", 3 * d * s * f, 6 * d * s * f,
                                                 SC_KTP_SHARD, SC_ATTN_ANY));
    } else {
        sc_module_add_kernel(m, x, sc_kernel_gemm(gated ? "gate_up" : "up", 1, s,
                                                  (mats - 1) * f, h, SC_KTP_N, 0, SC_ATTN_ANY));
        sc_module_add_kernel(m, x, sc_kernel_mem(gated ? "swiglu" : "relu2", mats * d * s * f,
                                                 (2 * mats - 1) * d * s * f, SC_KTP_SHARD,
                                                 SC_ATTN_ANY));
    }
    sc_module_add_kernel(m, x, sc_kernel_gemm("down", 1, s, h, f, SC_KTP_K, 0, SC_ATTN_ANY));
    sc_module_add_kernel(m, x, sc_gen_k_residual(d, s, h, 0));
    return x;
}

static sc_status make(const double *v, const char *name, sc_dtype dtype, sc_model **out,
                      sc_error *err)
{
    const char *g = "llama";
    sc_status st = SC_OK;
    if (!st) st = sc_gen_int(g, "layers", v[P_LAYERS], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "hidden", v[P_HIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "heads", v[P_HEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "kv_heads", v[P_KV_HEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "ffn", v[P_FFN], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "seq", v[P_SEQ], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "vocab", v[P_VOCAB], 1, 1e8, err);
    if (!st) st = sc_gen_flag(g, "tied", v[P_TIED], err);
    if (!st) st = sc_gen_flag(g, "relu2", v[P_RELU2], err);
    if (!st) st = sc_gen_flag(g, "eager", v[P_EAGER], err);
    if (st)
        return st;
    int eager = v[P_EAGER] != 0;
    if (eager && v[P_RELU2] != 0)
        return sc_err(err, SC_EINVAL, "llama: --eager lists the kernels of eager PyTorch's "
                      "SwiGLU Llama; it has no squared-ReLU MLP (--relu2)");
    double l = v[P_LAYERS], h = v[P_HIDDEN], a = v[P_HEADS], kvh = v[P_KV_HEADS];
    double f = v[P_FFN], s = v[P_SEQ], V = v[P_VOCAB];
    int tied = v[P_TIED] != 0;
    if (fmod(h, a) != 0)
        return sc_err(err, SC_EINVAL, "llama: 'heads' (%g) must divide 'hidden' (%g)", a, h);
    if (fmod(h / a, 2) != 0)
        return sc_err(err, SC_EINVAL,
                      "llama: the head size 'hidden'/'heads' (%g/%g = %g) must be even: rotary "
                      "embeddings turn pairs of channels", h, a, h / a);
    if (fmod(a, kvh) != 0)
        return sc_err(err, SC_EINVAL, "llama: 'kv_heads' (%g) must divide 'heads' (%g)", kvh, a);
    /* RMSNorm: a scale of h per norm, no bias */
    sc_gen_tf tf = {.h = h, .heads = a, .kv = h / a, .ffn = f, .bias = 0, .norm_p = 1,
                    .copies = 1, .causal = 1};

    sc_gen_ctx c;
    sc_module *root;
    if ((st = sc_gen_begin(&c, g, name, dtype, (int)s, "llama", &root, err)))
        return st;
    c.ce = (sc_gen_ce)v[P_CE];
    sc_module *e = sc_gen_tok_embed(&c, root, "embed", h, V, 0, s, 1, tied ? "tok" : NULL);
    if (e) {
        e->act_saved_bytes = e->act_saved_rep = 0; /* no embedding dropout, no mask to keep */
        e->n_kernels = 1;                          /* the gather only (dropout comes last) */
    }
    for (int i = 0; i < (int)l; i++) {
        char nm[64], part[80];
        snprintf(nm, sizeof nm, "blocks.%d", i);
        sc_module *b = sc_gen_add(&c, root, "block", "%s", nm);
        if (b)
            b->act_out_bytes = c.d * s * h;
        snprintf(part, sizeof part, "%s.ln1", nm);
        norm(&c, b, &tf, s, eager, part);
        snprintf(part, sizeof part, "%s.attn", nm);
        gqa(&c, b, h, a, kvh, s, eager, part);
        snprintf(part, sizeof part, "%s.ln2", nm);
        norm(&c, b, &tf, s, eager, part);
        snprintf(part, sizeof part, "%s.mlp", nm);
        mlp(&c, b, h, f, s, v[P_RELU2] == 0, eager, part);
    }
    norm(&c, root, &tf, s, eager, "ln_f");
    sc_gen_lm_head(&c, root, "head", h, V, s, !tied, tied ? "tok" : NULL);
    return sc_gen_done(&c, out, err);
}

const sc_gen sc_gen_llama = {
    .kind = "llama",
    .description = "Llama-style decoder: RMSNorm, grouped-query attention, RoPE, SwiGLU (Llama 2/3; "
                   "--relu2: a squared-ReLU MLP, Nemotron-4)",
    .params = params,
    .n_params = P_N,
    .make = make,
};
