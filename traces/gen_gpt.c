/* gen_gpt.c - GPT-style decoder-only transformer (GPT-2/GPT-3, pre-LN).
 *
 * Tree: root "gpt" -> embed (token + learned positions), blocks.i (kind
 * "block": ln1, attn, ln2, mlp), ln_f, head.
 *
 * Sources:
 *  - Parameters, Narayanan et al. 2021, "Efficient Large-Scale Language
 *    Model Training on GPU Clusters Using Megatron-LM", sec. 5.1:
 *      P = 12*l*h^2 * (1 + 13/(12h) + (V+s)/(12*l*h))   (tied embeddings)
 *    i.e. per layer attention 4h^2+4h, MLP 8h^2+5h (ffn = 4h), two
 *    LayerNorms 2h each; embeddings (V+s)*h. The formula leaves out the
 *    final LayerNorm; we model it, so totals are P + 2h exactly. Untied, the
 *    head owns another V*h.
 *  - Forward FLOPs per sample, same paper: 72*B*s*l*h^2*(1 + s/(6h) +
 *    V/(16*l*h)) is forward + backward = 3 x forward, so a layer costs
 *    24*s*h^2*(1 + s/(6h)) forward = attention 8sh^2 + 4s^2h + MLP 16sh^2
 *    (4*s*h*ffn in general), and the LM head 2*s*h*V.
 *  - Activations: Korthikanti et al. 2022, s*h*(34 + 5*a*s/h) bytes per
 *    layer for 16-bit types; the split is documented in gen.c.
 *  - Tied embeddings (GPT-2, Radford et al. 2019; GPT-3, Brown et al. 2020,
 *    which reuses GPT-2's model): with --tied the head owns no parameters and
 *    both embed and head carry the `shared` group "wte".
 */
#include "gen_int.h"

#include <math.h>
#include <stdio.h>

enum { P_LAYERS, P_HIDDEN, P_HEADS, P_SEQ, P_VOCAB, P_FFN, P_TIED, P_CE, P_NODROP, P_METRICS, P_N };

static const sc_gen_param params[P_N] = {
    [P_LAYERS] = {"layers", 24, 0, "transformer layers l"},
    [P_HIDDEN] = {"hidden", 2048, 0, "hidden size h"},
    [P_HEADS] = {"heads", 16, 0, "attention heads a (must divide hidden)"},
    [P_SEQ] = {"seq", 2048, 0, "sequence length s"},
    [P_VOCAB] = {"vocab", 50257, 0, "vocabulary size V"},
    [P_FFN] = {"ffn", 0, 0, "MLP inner size (0: 4*hidden)"},
    [P_TIED] = {"tied", 0, 1, "tie the LM head to the token embedding"},
    [P_CE] = SC_GEN_CE_PARAM,
    [P_NODROP] = {"no_dropout", 0, 1,
                  "train without dropout (p = 0, as MPT does: no dropout kernels or masks)"},
    [P_METRICS] = {"train_metrics", 0, 0,
                   "cross-entropy passes over the logits for training metrics each microbatch, "
                   "forward only (Composer's two: LanguageCrossEntropy, LanguagePerplexity)"},
};

static sc_status make(const double *v, const char *name, sc_dtype dtype, sc_model **out,
                      sc_error *err)
{
    const char *g = "gpt";
    sc_status st = SC_OK;
    if (!st) st = sc_gen_int(g, "layers", v[P_LAYERS], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "hidden", v[P_HIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "heads", v[P_HEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "seq", v[P_SEQ], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "vocab", v[P_VOCAB], 1, 1e8, err);
    if (!st) st = sc_gen_int(g, "ffn", v[P_FFN], 0, 1e7, err);
    if (!st) st = sc_gen_flag(g, "tied", v[P_TIED], err);
    if (!st) st = sc_gen_flag(g, "no_dropout", v[P_NODROP], err);
    if (!st) st = sc_gen_int(g, "train_metrics", v[P_METRICS], 0, 16, err);
    if (st)
        return st;
    double l = v[P_LAYERS], h = v[P_HIDDEN], a = v[P_HEADS], s = v[P_SEQ], V = v[P_VOCAB];
    int tied = v[P_TIED] != 0;
    if (fmod(h, a) != 0)
        return sc_err(err, SC_EINVAL, "gpt: 'heads' (%g) must divide 'hidden' (%g)", a, h);
    sc_gen_tf tf = {.h = h, .heads = a, .kv = h / a, .ffn = v[P_FFN] ? v[P_FFN] : 4 * h,
                    .bias = 1, .norm_p = 2, .copies = 1, .causal = 1};

    sc_gen_ctx c;
    sc_module *root;
    if ((st = sc_gen_begin(&c, g, name, dtype, (int)s, "gpt", &root, err)))
        return st;
    c.ce = (sc_gen_ce)v[P_CE];
    c.no_dropout = v[P_NODROP] != 0;
    c.train_metrics = (int)v[P_METRICS];
    sc_gen_tok_embed(&c, root, "embed", h, V, s, s, 1, tied ? "wte" : NULL);
    for (int i = 0; i < (int)l; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blocks.%d", i);
        sc_gen_block(&c, root, &tf, s, 0, 0, 0, NULL, nm);
    }
    sc_gen_norm(&c, root, &tf, s, "ln_f");
    sc_gen_lm_head(&c, root, "head", h, V, s, !tied, tied ? "wte" : NULL);
    return sc_gen_done(&c, out, err);
}

const sc_gen sc_gen_gpt = {
    .kind = "gpt",
    .description = "GPT-style decoder-only transformer (GPT-2/3, Megatron-LM shapes)",
    .params = params,
    .n_params = P_N,
    .make = make,
};
