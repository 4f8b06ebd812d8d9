/* gen_fid.c - Fusion-in-Decoder retrieval-augmented reader (Izacard & Grave
 * 2021, "Leveraging Passage Retrieval with Generative Models for Open
 * Domain Question Answering").
 *
 * Tree: root "fid" ->
 *   retriever  a BERT-like query encoder (Devlin et al. 2019; DPR, Karpukhin
 *              et al. 2020): retriever.embed, retriever.blocks.i {attn ln1
 *              mlp ln2} (post-LN), retriever.pool (the [CLS] vector that
 *              queries the passage index).
 *   passages   the reader's T5 encoder: passages.embed (names
 *              retriever.pool in `inputs`: the passages it reads are the
 *              ones retrieved), passages.blocks.i, then passages.0 ...
 *              passages.{k-1}, the final encoder norm over passage j: the
 *              encoded passage j.
 *   decoder    decoder.embed, decoder.blocks.i {ln1 attn ln2 xattn ln3
 *              mlp}, decoder.ln_f; every xattn names all k passages.j in
 *              `inputs` and attends over their k*passage_len tokens: the
 *              cross-passage fusion that gives FiD its name (sec. 3).
 *   head       LM head.
 *
 * Representation of the k passage encoders. FiD encodes each
 * (question, passage j) independently with ONE set of encoder weights
 * (sec. 3), in practice as a batch of k sequences. We model exactly that:
 * each passages.blocks.i is applied to k sequences of passage_len tokens, so
 * its FLOPs, activations and tp traffic are k x one passage's (dim
 * "passages" = k) and its parameters count once. This keeps the encoder
 * layers separately placeable: a pipeline may cut the encoder between
 * layers, each stage running its layers for all k passages. (The
 * alternative, k encoder copies whose layers share parameters, would force
 * layer i of every copy onto one stage and, with the copies laid out one
 * after another, the whole encoder onto one stage.) The per-passage split
 * reappears at the encoder output: passages.j is the final norm of passage
 * j (passages.0 owns its h parameters, all k carry the `shared` group
 * "passages.ln_f"), so the decoder's dependency on each passage is explicit.
 *
 * Other sources and choices:
 *  - reader = T5 (FiD uses T5-base/large): no biases, scale-only norms,
 *    relative position bias 32 x heads in each stack's first layer; token
 *    embedding shared by passages.embed (owner), decoder.embed and head
 *    (`shared` "embed"); see gen_t5.c.
 *  - retriever: BERT-base shape by default (110M: token, 512 position and 2
 *    segment embeddings plus a LayerNorm; post-LN blocks with biases).
 *    FiD keeps the retriever fixed: its modules have flops_bwd = 0 and save
 *    no activations; its parameters still count (weights in memory). The
 *    model format has no "frozen" flag, so optimizer memory for them is
 *    overestimated by a planner that assumes every parameter trains.
 *  - FLOPs, activations (Korthikanti et al. 2022) and tp traffic per module
 *    as in gen.c; per sample = one question with its k passages and one
 *    answer of answer_len tokens. The nearest-neighbour search itself is
 *    outside the model.
 *  - fid-3b (builtins.c): T5-3B-sized reader (2.85B) with k = 100 passages
 *    of 250 tokens (the paper's setting) + BERT-base retriever (0.11B).
 */
#include "gen_int.h"

#include <math.h>
#include <stdio.h>

enum {
    P_K, P_ENC, P_DEC, P_HIDDEN, P_HEADS, P_FFN, P_KV, P_PLEN, P_ALEN, P_VOCAB,
    P_RLAYERS, P_RHIDDEN, P_RHEADS, P_RFFN, P_QLEN, P_RVOCAB, P_CE, P_N
};

static const sc_gen_param params[P_N] = {
    [P_K] = {"passages", 100, 0, "retrieved passages k per question"},
    [P_ENC] = {"enc_layers", 12, 0, "reader encoder layers"},
    [P_DEC] = {"dec_layers", 12, 0, "reader decoder layers"},
    [P_HIDDEN] = {"hidden", 768, 0, "reader d_model"},
    [P_HEADS] = {"heads", 12, 0, "reader attention heads"},
    [P_FFN] = {"ffn", 3072, 0, "reader MLP inner size"},
    [P_KV] = {"kv", 0, 0, "reader d_kv (0: hidden/heads)"},
    [P_PLEN] = {"passage_len", 250, 0, "tokens per (question + passage)"},
    [P_ALEN] = {"answer_len", 32, 0, "answer (decoder) tokens"},
    [P_VOCAB] = {"vocab", 32128, 0, "reader vocabulary"},
    [P_RLAYERS] = {"ret_layers", 12, 0, "retriever (query encoder) layers"},
    [P_RHIDDEN] = {"ret_hidden", 768, 0, "retriever hidden size"},
    [P_RHEADS] = {"ret_heads", 12, 0, "retriever attention heads"},
    [P_RFFN] = {"ret_ffn", 0, 0, "retriever MLP inner size (0: 4*ret_hidden)"},
    [P_QLEN] = {"query_len", 32, 0, "question tokens seen by the retriever"},
    [P_RVOCAB] = {"ret_vocab", 30522, 0, "retriever vocabulary (BERT's)"},
    [P_CE] = SC_GEN_CE_PARAM,
};

#define REL_BUCKETS 32     /* T5's relative position buckets */
#define BERT_POSITIONS 512 /* Devlin et al. 2019 */

/* Frozen: no backward and nothing stashed for it. */
static void freeze(sc_module *x)
{
    if (!x)
        return;
    x->flops_bwd = 0;
    x->act_saved_bytes = x->act_saved_rep = 0;
    x->act_saved_scores = x->act_saved_scores < 0 ? -1 : 0;
    for (int i = 0; i < x->n_children; i++)
        freeze(x->children[i]);
}

static sc_status make(const double *v, const char *name, sc_dtype dtype, sc_model **out,
                      sc_error *err)
{
    const char *g = "fid";
    sc_status st = SC_OK;
    if (!st) st = sc_gen_int(g, "passages", v[P_K], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "enc_layers", v[P_ENC], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "dec_layers", v[P_DEC], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "hidden", v[P_HIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "heads", v[P_HEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "ffn", v[P_FFN], 1, 1e7, err);
    if (!st) st = sc_gen_int(g, "kv", v[P_KV], 0, 1e5, err);
    if (!st) st = sc_gen_int(g, "passage_len", v[P_PLEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "answer_len", v[P_ALEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "vocab", v[P_VOCAB], 1, 1e8, err);
    if (!st) st = sc_gen_int(g, "ret_layers", v[P_RLAYERS], 1, 4096, err);
    if (!st) st = sc_gen_int(g, "ret_hidden", v[P_RHIDDEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "ret_heads", v[P_RHEADS], 1, 1e5, err);
    if (!st) st = sc_gen_int(g, "ret_ffn", v[P_RFFN], 0, 1e7, err);
    if (!st) st = sc_gen_int(g, "query_len", v[P_QLEN], 1, 1e6, err);
    if (!st) st = sc_gen_int(g, "ret_vocab", v[P_RVOCAB], 1, 1e8, err);
    if (st)
        return st;
    double k = v[P_K], h = v[P_HIDDEN], a = v[P_HEADS], L = v[P_PLEN], t = v[P_ALEN];
    double V = v[P_VOCAB], rh = v[P_RHIDDEN], ra = v[P_RHEADS], q = v[P_QLEN];
    if (v[P_KV] == 0 && fmod(h, a) != 0)
        return sc_err(err, SC_EINVAL,
                      "fid: 'heads' (%g) must divide 'hidden' (%g) unless 'kv' is given", a, h);
    if (fmod(rh, ra) != 0)
        return sc_err(err, SC_EINVAL, "fid: 'ret_heads' (%g) must divide 'ret_hidden' (%g)",
                      ra, rh);
    if (k * L > 1e7)
        return sc_err(err, SC_EINVAL,
                      "fid: 'passages' x 'passage_len' = %g tokens is more than 10^7", k * L);
    if (k * v[P_DEC] > 1e6)
        return sc_err(err, SC_EINVAL,
                      "fid: 'passages' x 'dec_layers' = %g cross-attention inputs is more "
                      "than 10^6",
                      k * v[P_DEC]);
    sc_gen_tf rtf = {.h = rh, .heads = ra, .kv = rh / ra, .ffn = v[P_RFFN] ? v[P_RFFN] : 4 * rh,
                     .bias = 1, .norm_p = 2, .copies = 1};
    sc_gen_tf etf = {.h = h, .heads = a, .kv = v[P_KV] ? v[P_KV] : h / a, .ffn = v[P_FFN],
                     .bias = 0, .norm_p = 1, .copies = k};
    sc_gen_tf dtf = etf;
    dtf.copies = 1;
    dtf.causal = 1; /* the decoder's self-attention */

    sc_gen_ctx c;
    sc_module *root;
    if ((st = sc_gen_begin(&c, g, name, dtype, (int)L, "fid", &root, err)))
        return st;
    c.ce = (sc_gen_ce)v[P_CE];
    double d = c.d;
    char nm[64];

    /* retriever: BERT embeddings = tokens + positions + 2 segments, + LayerNorm */
    sc_module *ret = sc_gen_add(&c, root, "encoder", "retriever");
    double pos = q > BERT_POSITIONS ? q : BERT_POSITIONS;
    sc_module *re = sc_gen_tok_embed(&c, ret, "retriever.embed", rh, v[P_RVOCAB], pos + 2, q, 1,
                                     NULL);
    if (re)
        re->params += 2 * rh;
    for (int i = 0; i < (int)v[P_RLAYERS]; i++) {
        snprintf(nm, sizeof nm, "retriever.blocks.%d", i);
        sc_gen_block(&c, ret, &rtf, q, 1, 0, 0, NULL, nm);
    }
    sc_module *pool = sc_gen_add(&c, ret, "pool", "retriever.pool");
    sc_gen_set(pool, 0, 0, d * rh, 0);
    sc_gen_dims(&c, pool, "hidden", rh, NULL);
    if (ret)
        ret->act_out_bytes = d * rh;
    freeze(ret);

    /* reader encoder over k passages */
    sc_module *enc = sc_gen_add(&c, root, "encoder", "passages");
    if (enc)
        enc->act_out_bytes = d * k * L * h;
    sc_module *pe = sc_gen_tok_embed(&c, enc, "passages.embed", h, V, 0, k * L, 1, "embed");
    sc_gen_dims(&c, pe, "seq", L, "passages", k, NULL);
    sc_module_add_input(c.m, pe, "retriever.pool");
    for (int i = 0; i < (int)v[P_ENC]; i++) {
        snprintf(nm, sizeof nm, "passages.blocks.%d", i);
        sc_module *b = sc_gen_block(&c, enc, &etf, L, 0, 0, 0, NULL, nm);
        if (b && i == 0)
            b->children[1]->params += REL_BUCKETS * a; /* children: ln1, attn, ... */
    }
    int K = (int)k;
    char **xin = sc_calloc((size_t)K, sizeof *xin);
    if (!xin) {
        sc_model_free(c.m);
        return sc_err(err, SC_ENOMEM, "fid: out of memory");
    }
    for (int j = 0; j < K; j++) {
        snprintf(nm, sizeof nm, "passages.%d", j);
        xin[j] = sc_strdup(nm);
        if (!xin[j])
            c.oom = 1;
        sc_module *x = sc_gen_norm(&c, enc, &dtf, L, nm);
        if (x && j > 0)
            x->params = 0;
        sc_module_set_shared(c.m, x, "passages.ln_f");
    }

    /* decoder fusing all passages */
    sc_module *dec = sc_gen_add(&c, root, "decoder", "decoder");
    if (dec)
        dec->act_out_bytes = d * t * h;
    sc_gen_tok_embed(&c, dec, "decoder.embed", h, V, 0, t, 0, "embed");
    for (int i = 0; i < (int)v[P_DEC] && !c.oom; i++) {
        snprintf(nm, sizeof nm, "decoder.blocks.%d", i);
        sc_module *b = sc_gen_block(&c, dec, &dtf, t, 0, k * L, K, (const char *const *)xin, nm);
        if (b && i == 0)
            b->children[1]->params += REL_BUCKETS * a;
    }
    for (int j = 0; j < K; j++)
        sc_free(xin[j]);
    sc_free(xin);
    sc_gen_norm(&c, dec, &dtf, t, "decoder.ln_f");
    sc_gen_lm_head(&c, root, "head", h, V, t, 0, "embed");
    return sc_gen_done(&c, out, err);
}

const sc_gen sc_gen_fid = {
    .kind = "fid",
    .description = "Fusion-in-Decoder reader over k retrieved passages (Izacard & Grave 2021)",
    .params = params,
    .n_params = P_N,
    .make = make,
};
