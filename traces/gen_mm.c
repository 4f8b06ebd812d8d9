/* gen_mm.c - multimodal decoder: a ViT vision encoder, a projector and a
 * GPT-style language decoder that reads the projected image tokens as a
 * prefix (LLaVA: Liu et al. 2023, "Visual Instruction Tuning"; the same
 * encoder -> connector -> LM dataflow as Flamingo, Alayrac et al. 2022,
 * which uses cross-attention instead of a prefix).
 *
 * Tree: root "mm" ->
 *   vision     vision.embed, vision.blocks.i, vision.ln_f: the ViT tower of
 *              gen_vit.c over (image/patch)^2 + 1 tokens, without a
 *              classification head (LLaVA uses CLIP ViT-L/14's patch
 *              features).
 *   projector  a linear layer vis_hidden -> hidden with bias on img_tokens
 *              tokens (LLaVA's W): vis_hidden*hidden + hidden params,
 *              2*img_tokens*vis_hidden*hidden FLOPs; saves its input.
 *              img_tokens defaults to the patch count (the class token is
 *              dropped, as in LLaVA); fewer tokens model a pooling
 *              connector whose pooling costs no FLOPs.
 *   decoder    decoder.embed (token + learned positions over S = img_tokens
 *              + seq; it names "projector" in `inputs`: the image tokens
 *              are concatenated before the text tokens), decoder.blocks.i,
 *              decoder.ln_f, decoder.head (logits over all S positions, as
 *              the reference implementations compute them).
 *
 * Per-module formulas are gen.c's (Narayanan et al. 2021 FLOPs, Korthikanti
 * et al. 2022 activations, Megatron-LM tp traffic); gen_gpt.c and gen_vit.c
 * give the block shapes. Everything is modelled as trained (LLaVA's
 * fine-tuning stage trains projector and LM; its vision tower stays frozen,
 * which the model format cannot express yet).
 *
 * mm-1.3b (builtins.c): ViT-L/14 at 224 px (24 layers, 1024, 16 heads, 303M)
 * + projector (2.1M) + the gpt-1.3b decoder (tied, 1.32B) with 256 image +
 * 1792 text tokens = the 2048 positions of gpt-1.3b: 1.62B in total; the
 * name follows the language model, as LLaVA's names do.
 */
#include "gen_int.h"

#include <math.h>
#include <stdio.h>

enum {
    P_VLAYERS, P_VHIDDEN, P_VHEADS, P_VFFN, P_IMAGE, P_PATCH, P_LAYERS, P_HIDDEN, P_HEADS,
    P_FFN, P_SEQ, P_VOCAB, P_IMG_TOKENS, P_TIED, P_CE, P_N
};

static const sc_gen_param params[P_N] = {
    [P_VLAYERS] = {"vis_layers", 24, 0, "vision encoder layers"},
    [P_VHIDDEN] = {"vis_hidden", 1024, 0, "vision encoder hidden size"},
    [P_VHEADS] = {"vis_heads", 16, 0, "vision encoder heads (must divide vis_hidden)"},
    [P_VFFN] = {"vis_ffn", 0, 0, "vision MLP inner size (0: 4*vis_hidden)"},
    [P_IMAGE] = {"image", 224, 0, "image side in pixels"},
    [P_PATCH] = {"patch", 14, 0, "patch side in pixels (must divide image)"},
    [P_LAYERS] = {"layers", 24, 0, "language decoder layers"},
    [P_HIDDEN] = {"hidden", 2048, 0, "language decoder hidden size"},
    [P_HEADS] = {"heads", 16, 0, "language decoder heads (must divide hidden)"},
    [P_FFN] = {"ffn", 0, 0, "decoder MLP inner size (0: 4*hidden)"},
    [P_SEQ] = {"seq", 1792, 0, "text tokens"},
    [P_VOCAB] = {"vocab", 50257, 0, "vocabulary size"},
    [P_IMG_TOKENS] = {"img_tokens", 0, 0, "image tokens fed to the decoder (0: one per patch)"},
    [P_TIED] = {"tied", 0, 1, "tie the LM head to the token embedding"},
    [P_CE] = SC_GEN_CE_PARAM,
};

#define CHANNELS 3

static sc_status make(const double *v, const char *name, sc_dtype dtype, sc_model **out,
                      sc_error *err)
{
    const char *g = "mm";
    sc_status st = SC_OK;
    if (!st) st = sc_gen_int(g, "vis_layers", v[P_VLAYERS], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "vis_hidden", v[P_VHIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "vis_heads", v[P_VHEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "vis_ffn", v[P_VFFN], 0, 1e7, err);
    if (!st) st = sc_gen_int(g, "image", v[P_IMAGE], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "patch", v[P_PATCH], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "layers", v[P_LAYERS], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "hidden", v[P_HIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "heads", v[P_HEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "ffn", v[P_FFN], 0, 1e7, err);
    if (!st) st = sc_gen_int(g, "seq", v[P_SEQ], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "vocab", v[P_VOCAB], 1, 1e8, err);
    if (!st) st = sc_gen_int(g, "img_tokens", v[P_IMG_TOKENS], 0, 1e7, err);
    if (!st) st = sc_gen_flag(g, "tied", v[P_TIED], err);
    if (st)
        return st;
    double vh = v[P_VHIDDEN], va = v[P_VHEADS], img = v[P_IMAGE], p = v[P_PATCH];
    double h = v[P_HIDDEN], a = v[P_HEADS], V = v[P_VOCAB];
    int tied = v[P_TIED] != 0;
    if (fmod(vh, va) != 0)
        return sc_err(err, SC_EINVAL, "mm: 'vis_heads' (%g) must divide 'vis_hidden' (%g)", va,
                      vh);
    if (fmod(h, a) != 0)
        return sc_err(err, SC_EINVAL, "mm: 'heads' (%g) must divide 'hidden' (%g)", a, h);
    if (fmod(img, p) != 0)
        return sc_err(err, SC_EINVAL, "mm: 'patch' (%g) must divide 'image' (%g)", p, img);
    double n = (img / p) * (img / p);
    if (n + 1 > 1e7)
        return sc_err(err, SC_EINVAL, "mm: %g patches is too many (image/patch too large)", n);
    double T = v[P_IMG_TOKENS] ? v[P_IMG_TOKENS] : n;
    if (T > n + 1)
        return sc_err(err, SC_EINVAL,
                      "mm: 'img_tokens' (%g) exceeds the vision encoder's %g output tokens", T,
                      n + 1);
    double S = T + v[P_SEQ];
    if (S > 1e7)
        return sc_err(err, SC_EINVAL, "mm: 'img_tokens' + 'seq' = %g is more than 10^7", S);
    sc_gen_tf vtf = {.h = vh, .heads = va, .kv = vh / va, .ffn = v[P_VFFN] ? v[P_VFFN] : 4 * vh,
                     .bias = 1, .norm_p = 2, .copies = 1};
    sc_gen_tf tf = {.h = h, .heads = a, .kv = h / a, .ffn = v[P_FFN] ? v[P_FFN] : 4 * h,
                    .bias = 1, .norm_p = 2, .copies = 1, .causal = 1};

    sc_gen_ctx c;
    sc_module *root;
    if ((st = sc_gen_begin(&c, g, name, dtype, (int)S, "mm", &root, err)))
        return st;
    c.ce = (sc_gen_ce)v[P_CE];
    double d = c.d;
    sc_module *vis = sc_gen_add(&c, root, "encoder", "vision");
    if (vis)
        vis->act_out_bytes = d * (n + 1) * vh;
    sc_gen_vit_tower(&c, vis, "vision.", v[P_VLAYERS], &vtf, img, p, CHANNELS);

    sc_module *pr = sc_gen_add(&c, root, "projector", "projector");
    sc_gen_set(pr, vh * h + h, 2 * T * vh * h, d * T * h, d * T * vh);
    sc_module_set_tp(pr, 0, 0);
    sc_gen_dims(&c, pr, "in", vh, "hidden", h, "seq", T, NULL);

    sc_module *dec = sc_gen_add(&c, root, "decoder", "decoder");
    if (dec)
        dec->act_out_bytes = d * S * h;
    sc_module *e = sc_gen_tok_embed(&c, dec, "decoder.embed", h, V, S, S, 1, tied ? "wte" : NULL);
    sc_module_add_input(c.m, e, "projector");
    for (int i = 0; i < (int)v[P_LAYERS]; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "decoder.blocks.%d", i);
        sc_gen_block(&c, dec, &tf, S, 0, 0, 0, NULL, nm);
    }
    sc_gen_norm(&c, dec, &tf, S, "decoder.ln_f");
    sc_gen_lm_head(&c, dec, "decoder.head", h, V, S, !tied, tied ? "wte" : NULL);
    return sc_gen_done(&c, out, err);
}

const sc_gen sc_gen_mm = {
    .kind = "mm",
    .description = "multimodal: ViT encoder + projector + GPT decoder (LLaVA-style)",
    .params = params,
    .n_params = P_N,
    .make = make,
};
