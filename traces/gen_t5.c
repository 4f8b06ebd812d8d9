/* gen_t5.c - T5 encoder-decoder (Raffel et al. 2020, "Exploring the Limits of
 * Transfer Learning with a Unified Text-to-Text Transformer").
 *
 * Tree: root "t5" -> encoder (encoder.embed, encoder.blocks.i {ln1 attn ln2
 * mlp}, encoder.ln_f), decoder (decoder.embed, decoder.blocks.i {ln1 attn
 * ln2 xattn ln3 mlp}, decoder.ln_f), head. Every decoder cross-attention
 * names "encoder.ln_f" in `inputs`.
 *
 * Sources (Raffel et al. 2020 sec. 2.1 and 3.1, and the released T5 code):
 *  - no biases in linear layers; attention projections h x (a*d_kv) each,
 *    4*h*a*d_kv per attention; ReLU MLP 2*h*ffn; the norm is a scale only
 *    (h params); one relative position bias table of 32 buckets x a heads
 *    per stack, held by the first layer's self-attention.
 *  - one token embedding shared by encoder input, decoder input and LM head
 *    (T5 ties them): encoder.embed owns V*h, and it, decoder.embed and head
 *    carry the `shared` group "embed".
 *  - Sizes: T5-3B is 24+24 layers, d_model 1024, ffn 16384, 32 heads of
 *    d_kv 128, V = 32128 (paper sec. 3.7): 2.85B parameters here.
 *  - FLOPs, activations and tp traffic per module as in gen.c (Narayanan et
 *    al. 2021; Korthikanti et al. 2022; Shoeybi et al. 2019), per sample =
 *    one (input of `seq`, target of `dec_seq` tokens) pair. The decoder's
 *    cross-attention projects K and V from the seq encoder tokens.
 */
#include "gen_int.h"

#include <math.h>
#include <stdio.h>

enum { P_ENC, P_DEC, P_HIDDEN, P_HEADS, P_FFN, P_SEQ, P_DEC_SEQ, P_VOCAB, P_KV, P_CE, P_N };

static const sc_gen_param params[P_N] = {
    [P_ENC] = {"enc_layers", 12, 0, "encoder layers"},
    [P_DEC] = {"dec_layers", 12, 0, "decoder layers"},
    [P_HIDDEN] = {"hidden", 768, 0, "d_model"},
    [P_HEADS] = {"heads", 12, 0, "attention heads"},
    [P_FFN] = {"ffn", 3072, 0, "d_ff, the MLP inner size"},
    [P_SEQ] = {"seq", 512, 0, "encoder (input) length"},
    [P_DEC_SEQ] = {"dec_seq", 128, 0, "decoder (target) length"},
    [P_VOCAB] = {"vocab", 32128, 0, "vocabulary size"},
    [P_KV] = {"kv", 0, 0, "d_kv, per-head size (0: hidden/heads)"},
    [P_CE] = SC_GEN_CE_PARAM,
};

#define REL_BUCKETS 32 /* Raffel et al. 2020 sec. 2.1 */

static sc_status make(const double *v, const char *name, sc_dtype dtype, sc_model **out,
                      sc_error *err)
{
    const char *g = "t5";
    sc_status st = SC_OK;
    if (!st) st = sc_gen_int(g, "enc_layers", v[P_ENC], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "dec_layers", v[P_DEC], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "hidden", v[P_HIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "heads", v[P_HEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "ffn", v[P_FFN], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "seq", v[P_SEQ], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "dec_seq", v[P_DEC_SEQ], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "vocab", v[P_VOCAB], 1, 1e8, err);
    if (!st) st = sc_gen_int(g, "kv", v[P_KV], 0, 1e5, err);
    if (st)
        return st;
    double h = v[P_HIDDEN], a = v[P_HEADS], s = v[P_SEQ], t = v[P_DEC_SEQ], V = v[P_VOCAB];
    if (v[P_KV] == 0 && fmod(h, a) != 0)
        return sc_err(err, SC_EINVAL,
                      "t5: 'heads' (%g) must divide 'hidden' (%g) unless 'kv' is given", a, h);
    sc_gen_tf tf = {.h = h, .heads = a, .kv = v[P_KV] ? v[P_KV] : h / a, .ffn = v[P_FFN],
                    .bias = 0, .norm_p = 1, .copies = 1};

    sc_gen_tf dtf = tf; /* the decoder's self-attention is causal */
    dtf.causal = 1;

    sc_gen_ctx c;
    sc_module *root;
    if ((st = sc_gen_begin(&c, g, name, dtype, (int)s, "t5", &root, err)))
        return st;
    c.ce = (sc_gen_ce)v[P_CE];
    char nm[64];
    sc_module *enc = sc_gen_add(&c, root, "encoder", "encoder");
    if (enc)
        enc->act_out_bytes = c.d * s * h;
    sc_gen_tok_embed(&c, enc, "encoder.embed", h, V, 0, s, 1, "embed");
    for (int i = 0; i < (int)v[P_ENC]; i++) {
        snprintf(nm, sizeof nm, "encoder.blocks.%d", i);
        sc_module *b = sc_gen_block(&c, enc, &tf, s, 0, 0, 0, NULL, nm);
        if (b && i == 0)
            b->children[1]->params += REL_BUCKETS * a; /* children: ln1, attn, ... */
    }
    sc_gen_norm(&c, enc, &tf, s, "encoder.ln_f");

    const char *xin[] = {"encoder.ln_f"};
    sc_module *dec = sc_gen_add(&c, root, "decoder", "decoder");
    if (dec)
        dec->act_out_bytes = c.d * t * h;
    sc_gen_tok_embed(&c, dec, "decoder.embed", h, V, 0, t, 0, "embed");
    for (int i = 0; i < (int)v[P_DEC]; i++) {
        snprintf(nm, sizeof nm, "decoder.blocks.%d", i);
        sc_module *b = sc_gen_block(&c, dec, &dtf, t, 0, s, 1, xin, nm);
        if (b && i == 0)
            b->children[1]->params += REL_BUCKETS * a;
    }
    sc_gen_norm(&c, dec, &tf, t, "decoder.ln_f");
    sc_gen_lm_head(&c, root, "head", h, V, t, 0, "embed");
    return sc_gen_done(&c, out, err);
}

const sc_gen sc_gen_t5 = {
    .kind = "t5",
    .description = "T5 encoder-decoder (Raffel et al. 2020), tied embeddings",
    .params = params,
    .n_params = P_N,
    .make = make,
};
