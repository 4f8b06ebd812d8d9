/* gen_vit.c - Vision Transformer (Dosovitskiy et al. 2021, "An Image is
 * Worth 16x16 Words: Transformers for Image Recognition at Scale").
 *
 * Tree: root "vit" -> embed, blocks.i {ln1 attn ln2 mlp}, ln_f, head.
 *
 * Sources:
 *  - n = (image/patch)^2 patches; seq = n + 1 with the class token (sec. 3.1).
 *  - Patch embedding is a conv with stride = kernel = patch, i.e. a linear
 *    layer on flattened patches: (p^2*c)*h + h params, 2*n*p^2*c*h FLOPs.
 *    The embed module also owns the class token (h) and the learned position
 *    embedding ((n+1)*h). It saves its input patches (d*n*p^2*c bytes, for
 *    the weight gradient) and the embedding dropout mask ((n+1)*h).
 *  - Blocks are pre-LN with biases and GELU MLP: attention 4h^2+4h, MLP
 *    2*h*ffn + ffn + h, two LayerNorms 2h each, as in gen.c; final
 *    LayerNorm 2h; classification head on the class token h*classes +
 *    classes params, 2*h*classes FLOPs, saving its input and fp32 logits.
 *    ViT-H/14 (32 layers, 1280, 16 heads, ffn 5120) comes to 632M params,
 *    the paper's Table 1 figure.
 *  - FLOPs, activations (Korthikanti et al. 2022) and tp traffic per block
 *    as in gen.c. The patch embedding and the head are small and replicated
 *    under tp (not shardable).
 */
#include "gen_int.h"

#include <math.h>
#include <stdio.h>

enum { P_LAYERS, P_HIDDEN, P_HEADS, P_FFN, P_IMAGE, P_PATCH, P_CHANNELS, P_CLASSES, P_N };

static const sc_gen_param params[P_N] = {
    [P_LAYERS] = {"layers", 12, 0, "transformer layers"},
    [P_HIDDEN] = {"hidden", 768, 0, "hidden size"},
    [P_HEADS] = {"heads", 12, 0, "attention heads (must divide hidden)"},
    [P_FFN] = {"ffn", 3072, 0, "MLP inner size (0: 4*hidden)"},
    [P_IMAGE] = {"image", 224, 0, "image side in pixels"},
    [P_PATCH] = {"patch", 16, 0, "patch side in pixels (must divide image)"},
    [P_CHANNELS] = {"channels", 3, 0, "input channels"},
    [P_CLASSES] = {"classes", 1000, 0, "output classes"},
};

sc_module *sc_gen_vit_tower(sc_gen_ctx *c, sc_module *parent, const char *prefix, double layers,
                            const sc_gen_tf *tf, double image, double patch, double channels)
{
    double h = tf->h, d = c->d, n = (image / patch) * (image / patch), s = n + 1;
    double pin = patch * patch * channels; /* flattened patch */
    sc_module *e = sc_gen_add(c, parent, "embedding", "%sembed", prefix);
    sc_gen_set(e, pin * h + h + h + s * h, 2 * n * pin * h, d * s * h, d * n * pin + s * h);
    sc_module_set_tp(e, 0, 0);
    sc_gen_dims(c, e, "hidden", h, "seq", s, "patch", patch, "channels", channels, "image",
                image, NULL);
    for (int i = 0; i < (int)layers; i++) {
        char nm[SC_NAME_MAX];
        snprintf(nm, sizeof nm, "%sblocks.%d", prefix, i);
        sc_gen_block(c, parent, tf, s, 0, 0, 0, NULL, nm);
    }
    char nm[SC_NAME_MAX];
    snprintf(nm, sizeof nm, "%sln_f", prefix);
    return sc_gen_norm(c, parent, tf, s, nm);
}

static sc_status make(const double *v, const char *name, sc_dtype dtype, sc_model **out,
                      sc_error *err)
{
    const char *g = "vit";
    sc_status st = SC_OK;
    if (!st) st = sc_gen_int(g, "layers", v[P_LAYERS], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "hidden", v[P_HIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "heads", v[P_HEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "ffn", v[P_FFN], 0, 1e7, err);
    if (!st) st = sc_gen_int(g, "image", v[P_IMAGE], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "patch", v[P_PATCH], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "channels", v[P_CHANNELS], 1, 1e4, err);
    if (!st) st = sc_gen_int(g, "classes", v[P_CLASSES], 1, 1e8, err);
    if (st)
        return st;
    double h = v[P_HIDDEN], a = v[P_HEADS], img = v[P_IMAGE], p = v[P_PATCH];
    if (fmod(h, a) != 0)
        return sc_err(err, SC_EINVAL, "vit: 'heads' (%g) must divide 'hidden' (%g)", a, h);
    if (fmod(img, p) != 0)
        return sc_err(err, SC_EINVAL, "vit: 'patch' (%g) must divide 'image' (%g)", p, img);
    double s = (img / p) * (img / p) + 1;
    if (s > 1e7)
        return sc_err(err, SC_EINVAL, "vit: %g patches is too many (image/patch too large)",
                      s - 1);
    sc_gen_tf tf = {.h = h, .heads = a, .kv = h / a, .ffn = v[P_FFN] ? v[P_FFN] : 4 * h,
                    .bias = 1, .norm_p = 2, .copies = 1};

    sc_gen_ctx c;
    sc_module *root;
    if ((st = sc_gen_begin(&c, g, name, dtype, (int)s, "vit", &root, err)))
        return st;
    sc_gen_vit_tower(&c, root, "", v[P_LAYERS], &tf, img, p, v[P_CHANNELS]);
    double K = v[P_CLASSES], d = c.d;
    sc_module *hd = sc_gen_add(&c, root, "head", "head");
    sc_gen_set(hd, h * K + K, 2 * h * K, d * K, d * h + 4 * K);
    sc_module_set_tp(hd, 0, 0);
    sc_gen_dims(&c, hd, "hidden", h, "classes", K, "seq", 1.0, NULL);
    return sc_gen_done(&c, out, err);
}

const sc_gen sc_gen_vit = {
    .kind = "vit",
    .description = "Vision Transformer classifier (Dosovitskiy et al. 2021)",
    .params = params,
    .n_params = P_N,
    .make = make,
};
