/* builtins.c - built-in models by name, each one generator call (in bf16, or
 * the dtype asked for: sc_model_builtin_in).
 *
 * Sources of the shapes:
 *  - gpt-*: GPT-3, Brown et al. 2020, "Language Models are Few-Shot
 *    Learners", Table 2.1 (n_layers, d_model, n_heads; n_ctx 2048; GPT-2's
 *    BPE vocabulary of 50257). GPT-3 reuses GPT-2's model, whose LM head is
 *    tied to the token embedding, so all are built --tied (the head carries
 *    the `shared` group "wte" with the embedding). Table 2.1 lists d_model
 *    5140 for 13B, which 40 heads do not divide; we use 5120 (128 per head,
 *    as the 6.7B and 175B models have).
 *  - llama3-*: Llama 3, Dubey et al. 2024, "The Llama 3 Herd of Models",
 *    Table 3 (layers, model dimension, FFN dimension, attention heads,
 *    key/value heads: 8B 32/4096/14336/32/8, 70B 80/8192/28672/64/8, 405B
 *    126/16384/53248/128/8; vocabulary 128,000 tokens, 128,256 in the
 *    released tokenizer with its special tokens), untied embeddings (see
 *    gen_llama.c). Sequence length 8192: the paper's main pre-training
 *    stage (sec. 3.4.1: the 405B starts at 4,096 tokens and doubles to
 *    8,192 early on; the 128K context comes from a later, short
 *    long-context stage, sec. 3.4.2). Computed parameters 8.030B, 70.554B
 *    and 405.853B against the published 8B, 70B and 405B (Hugging Face
 *    lists 8.03B and 70.6B).
 *  - t5-3b: Raffel et al. 2020 sec. 3.7 (24+24 layers, d_model 1024, d_ff
 *    16384, 32 heads of d_kv 128, vocabulary 32128), 512 input and 128
 *    target tokens.
 *  - vit-huge: ViT-H/14, Dosovitskiy et al. 2021 Table 1 (32 layers, 1280,
 *    16 heads, MLP 5120), 224 px images, 1000 classes.
 *  - fid-3b: see gen_fid.c: T5-3B-sized reader, k = 100 passages of 250
 *    tokens (Izacard & Grave 2021 sec. 4), 32 answer tokens, BERT-base
 *    query encoder: 2.96B parameters.
 *  - mm-1.3b: see gen_mm.c: ViT-L/14 + projector + gpt-1.3b decoder: 1.62B
 *    parameters ("1.3b" names the language model).
 */
#include "gen.h"

#include <stdio.h>
#include <string.h>

#define RUN(gen, model_name, ...)                                                       \
    do {                                                                                \
        static const char *const n_[] = {__VA_ARGS__};                                  \
        return sc_gen_run(&(gen), model_name, dt, (int)SC_ARRAY_LEN(n_), n_, v_,   \
                          out, err);                                                    \
    } while (0)

static sc_status gpt(const char *name, double l, double h, double a, sc_dtype dt,
                     sc_model **out, sc_error *err)
{
    const double v_[] = {l, h, a, 2048, 50257, 1};
    RUN(sc_gen_gpt, name, "layers", "hidden", "heads", "seq", "vocab", "tied");
}

static sc_status gpt_1_3b(sc_dtype dt, sc_model **out, sc_error *err) { return gpt("gpt-1.3b", 24, 2048, 16, dt, out, err); }
static sc_status gpt_2_7b(sc_dtype dt, sc_model **out, sc_error *err) { return gpt("gpt-2.7b", 32, 2560, 32, dt, out, err); }
static sc_status gpt_6_7b(sc_dtype dt, sc_model **out, sc_error *err) { return gpt("gpt-6.7b", 32, 4096, 32, dt, out, err); }
static sc_status gpt_13b(sc_dtype dt, sc_model **out, sc_error *err) { return gpt("gpt-13b", 40, 5120, 40, dt, out, err); }
static sc_status gpt_175b(sc_dtype dt, sc_model **out, sc_error *err) { return gpt("gpt-175b", 96, 12288, 96, dt, out, err); }

static sc_status llama3(const char *name, double l, double h, double f, double a, sc_dtype dt,
                        sc_model **out, sc_error *err)
{
    const double v_[] = {l, h, f, a, 8, 8192, 128256};
    RUN(sc_gen_llama, name, "layers", "hidden", "ffn", "heads", "kv_heads", "seq", "vocab");
}

static sc_status llama3_8b(sc_dtype dt, sc_model **out, sc_error *err) { return llama3("llama3-8b", 32, 4096, 14336, 32, dt, out, err); }
static sc_status llama3_70b(sc_dtype dt, sc_model **out, sc_error *err) { return llama3("llama3-70b", 80, 8192, 28672, 64, dt, out, err); }
static sc_status llama3_405b(sc_dtype dt, sc_model **out, sc_error *err) { return llama3("llama3-405b", 126, 16384, 53248, 128, dt, out, err); }

static sc_status t5_3b(sc_dtype dt, sc_model **out, sc_error *err)
{
    const double v_[] = {24, 24, 1024, 32, 16384, 128, 512, 128, 32128};
    RUN(sc_gen_t5, "t5-3b", "enc_layers", "dec_layers", "hidden", "heads", "ffn", "kv", "seq",
        "dec_seq", "vocab");
}

static sc_status vit_huge(sc_dtype dt, sc_model **out, sc_error *err)
{
    const double v_[] = {32, 1280, 16, 5120, 224, 14, 3, 1000};
    RUN(sc_gen_vit, "vit-huge", "layers", "hidden", "heads", "ffn", "image", "patch",
        "channels", "classes");
}

static sc_status fid_3b(sc_dtype dt, sc_model **out, sc_error *err)
{
    const double v_[] = {100, 24, 24, 1024, 32, 16384, 128, 250, 32, 32128,
                         12,  768, 12, 3072, 32, 30522};
    RUN(sc_gen_fid, "fid-3b", "passages", "enc_layers", "dec_layers", "hidden", "heads", "ffn",
        "kv", "passage_len", "answer_len", "vocab", "ret_layers", "ret_hidden", "ret_heads",
        "ret_ffn", "query_len", "ret_vocab");
}

static sc_status mm_1_3b(sc_dtype dt, sc_model **out, sc_error *err)
{
    const double v_[] = {24, 1024, 16, 4096, 224, 14, 24, 2048, 16, 8192, 1792, 50257, 256, 1};
    RUN(sc_gen_mm, "mm-1.3b", "vis_layers", "vis_hidden", "vis_heads", "vis_ffn", "image",
        "patch", "layers", "hidden", "heads", "ffn", "seq", "vocab", "img_tokens", "tied");
}

static const sc_builtin builtins[] = {
    {"gpt-1.3b", "GPT-3 XL: 24 layers, h 2048, 16 heads, s 2048, tied (1.32B)", gpt_1_3b},
    {"gpt-2.7b", "GPT-3 2.7B: 32 layers, h 2560, 32 heads, s 2048, tied (2.65B)", gpt_2_7b},
    {"gpt-6.7b", "GPT-3 6.7B: 32 layers, h 4096, 32 heads, s 2048, tied (6.66B)", gpt_6_7b},
    {"gpt-13b", "GPT-3 13B: 40 layers, h 5120, 40 heads, s 2048, tied (12.85B)", gpt_13b},
    {"gpt-175b", "GPT-3 175B: 96 layers, h 12288, 96 heads, s 2048, tied (174.6B)", gpt_175b},
    {"llama3-8b", "Llama 3 8B: 32 layers, h 4096, ffn 14336, 32 heads, 8 kv, s 8192 (8.03B)", llama3_8b},
    {"llama3-70b", "Llama 3 70B: 80 layers, h 8192, ffn 28672, 64 heads, 8 kv, s 8192 (70.6B)", llama3_70b},
    {"llama3-405b", "Llama 3 405B: 126 layers, h 16384, ffn 53248, 128 heads, 8 kv, s 8192 (405.9B)", llama3_405b},
    {"t5-3b", "T5-3B: 24+24 layers, d_model 1024, d_ff 16384, 32x128 heads (2.85B)", t5_3b},
    {"vit-huge", "ViT-H/14: 32 layers, h 1280, 16 heads, 224 px, 1000 classes (632M)", vit_huge},
    {"fid-3b", "Fusion-in-Decoder, T5-3B-sized reader, 100 x 250-token passages (2.96B)", fid_3b},
    {"mm-1.3b", "ViT-L/14 + projector + gpt-1.3b decoder, 256 image tokens (1.62B)", mm_1_3b},
};

const sc_builtin *sc_builtins(int *n)
{
    if (n)
        *n = (int)SC_ARRAY_LEN(builtins);
    return builtins;
}

static const sc_builtin *builtin_of(const char *name)
{
    for (size_t i = 0; name && i < SC_ARRAY_LEN(builtins); i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

int sc_model_is_builtin(const char *name) { return builtin_of(name) != NULL; }

sc_status sc_model_builtin_in(const char *name, sc_dtype dt, const char *new_name,
                              sc_model **out, sc_error *err)
{
    *out = NULL;
    const sc_builtin *b = builtin_of(name);
    if (!b)
        return sc_err(err, SC_ENOTFOUND, "%s: no built-in model of that name", name);
    if ((unsigned)dt >= SC_DTYPE_N)
        return sc_err(err, SC_EINVAL, "%s: dtype %d is not a dtype", name, (int)dt);
    sc_status st = b->make(dt, out, err);
    if (st)
        return st;
    char def[128];
    snprintf(def, sizeof def, "%s-%s", name, sc_dtype_name(dt));
    const char *nn = new_name ? new_name : dt == SC_BF16 ? NULL : def;
    if (nn) {
        char *copy = sc_strdup(nn);
        if (!copy) {
            sc_model_free(*out);
            *out = NULL;
            return sc_err(err, SC_ENOMEM, "%s: out of memory", name);
        }
        sc_free((*out)->name);
        (*out)->name = copy;
    }
    return SC_OK;
}

sc_status sc_model_open(const char *name_or_file, sc_model **out, sc_error *err)
{
    if (!name_or_file || !out)
        return sc_err(err, SC_EINVAL, "model: no name or file given");
    const sc_builtin *b = builtin_of(name_or_file);
    if (b)
        return b->make(SC_BF16, out, err);
    sc_status st = sc_model_load(name_or_file, out, err);
    if (st == SC_ENOTFOUND && sc_reads_as_name(name_or_file)) {
        const char *names[SC_ARRAY_LEN(builtins)];
        for (size_t i = 0; i < SC_ARRAY_LEN(builtins); i++)
            names[i] = builtins[i].name;
        return sc_err_unknown_name(err, name_or_file, "built-in model", names,
                                   (int)SC_ARRAY_LEN(builtins), "stagecraft model list");
    }
    return st;
}
