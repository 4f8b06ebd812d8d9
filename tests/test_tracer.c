/* test_tracer.c - traces/torch_trace.py: real PyTorch models (torchvision
 * resnet50 and vit_b_16 with random weights, nn.Transformer, a tied-embedding
 * GPT built from torch.nn parts in tests/tracer/tiny_gpt.py, GPT-2 small
 * written nanoGPT-style and with nn.MultiheadAttention in
 * tests/tracer/gpt2.py, a Llama-style model in tests/tracer/fixtures.py)
 * traced into stagecraft.model/1, loaded by `stagecraft model show` and
 * `sim`, planned, and bad specs rejected.
 *
 * The default mode is shape-only (meta tensors, no compute): checked against
 * closed forms (Narayanan et al. 2021's GPT FLOPs, the conv formula) and for
 * the tensor-parallel data; --measure (real CPU passes with times) on a tiny
 * model.
 *
 * Needs Debian's /usr/bin/python3 with python3-torch and python3-torchvision
 * (scripts/deps.sh --notebooks); without them every test prints a note and
 * skips. tracer_gpt2_sdpa needs torch >= 2.0 and skips on older ones. */
#include "check.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static char out[1 << 16];
#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)
/* SC_TRACER_PYTHON runs the tracer's tests on another python (a torch 2
 * install; the commands run through sh) */
#define PY "${SC_TRACER_PYTHON:-/usr/bin/python3}"
#define TRACER PY " traces/torch_trace.py"

static int have_torch(void)
{
    static int cached = -1;
    if (cached < 0) {
        char buf[512];
        cached = sc_test_sh(buf, sizeof buf,
                            PY " -c 'import torch, torchvision' 2>/dev/null") == 0;
    }
    if (!cached)
        sc_test_skip("/usr/bin/python3 cannot import torch and torchvision; "
                     "install python3-torch python3-torchvision");
    return cached;
}

static cJSON *show_json(const char *file)
{
    static char buf[1 << 20];
    if (sc_test_sh(buf, sizeof buf, "%s model show %s --json 2>&1", sc_test_bin(), file) != 0) {
        sc_test_fail(__FILE__, __LINE__, "model show %s: %.300s", file, buf);
        return NULL;
    }
    return cJSON_Parse(buf);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(x) ? x->valuestring : "";
}

/* The kernel named name in a leaf's list, or NULL. */
static const cJSON *kernel_named(const cJSON *leaf, const char *name)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(leaf, "kernels"))
    {
        if (!strcmp(str(k, "name"), name))
            return k;
    }
    return NULL;
}

/* Whether a traced attention leaf offers both implementations: its scores
 * and context products unfused, over the keys of a self-attention (kv), and
 * the fused kernel, causal as given. */
static int offers_flash(const cJSON *leaf, int self, int causal)
{
    const cJSON *sc = kernel_named(leaf, "scores"), *cx = kernel_named(leaf, "context");
    const cJSON *fl = kernel_named(leaf, "flash");
    if (!sc || !cx || !fl || strcmp(str(fl, "op"), "flash") ||
        strcmp(str(sc, "attn"), "unfused") || strcmp(str(cx, "attn"), "unfused"))
        return 0;
    if (strcmp(str(sc, "kv"), self ? "n" : "") || strcmp(str(cx, "kv"), self ? "k" : ""))
        return 0;
    return num(fl, "batch") == num(sc, "batch") && num(fl, "m") == num(sc, "m") &&
           num(fl, "n") == num(sc, "n") && num(fl, "k") == num(sc, "k") &&
           cJSON_IsTrue(cJSON_GetObjectItem(fl, "causal")) == causal;
}

/* The leaves of a traced model file's tree (depth first, last child first),
 * at most cap; -1 (and a failure) when there are more. */
static int leaves_of(const cJSON *j, const cJSON **leaf, int cap)
{
    const cJSON *stack[256];
    int sp = 0, n = 0;
    stack[sp++] = cJSON_GetObjectItem(j, "root");
    while (sp > 0) {
        const cJSON *x = stack[--sp];
        const cJSON *kids = cJSON_GetObjectItem(x, "children");
        if (!kids) {
            if (n == cap)
                break;
            leaf[n++] = x;
            continue;
        }
        for (const cJSON *k = kids->child; k; k = k->next) {
            if (sp == 256) {
                sc_test_fail(__FILE__, __LINE__, "the module tree is wider than 256");
                return -1;
            }
            stack[sp++] = k;
        }
    }
    if (sp > 0) {
        sc_test_fail(__FILE__, __LINE__, "more than %d leaves", cap);
        return -1;
    }
    return n;
}

/* The module entry of `model show --json` named name. */
static const cJSON *module_named(const cJSON *show, const char *name)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(show, "modules"))
    {
        const cJSON *n = cJSON_GetObjectItem(m, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
            return m;
    }
    return NULL;
}

/* The node named name in a model file's tree (root or below). */
static const cJSON *node_in(const cJSON *n, const char *name)
{
    if (!strcmp(str(n, "name"), name))
        return n;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(n, "children"))
    {
        const cJSON *r = node_in(c, name);
        if (r)
            return r;
    }
    return NULL;
}

static const cJSON *node_named(const cJSON *model, const char *name)
{
    const cJSON *r = node_in(cJSON_GetObjectItem(model, "root"), name);
    if (!r)
        sc_test_fail(__FILE__, __LINE__, "no module '%s' in the traced file", name);
    return r;
}

static double dim(const cJSON *n, const char *k) { return num(cJSON_GetObjectItem(n, "dims"), k); }

/* tp.bytes, or -1 when the node has no tp */
static double tp_bytes(const cJSON *n) { return num(cJSON_GetObjectItem(n, "tp"), "bytes"); }

static int tp_shardable(const cJSON *n)
{
    return cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "tp"), "shardable"));
}

static int counts_leaf_keys(const cJSON *n, const char *key, int *leaves)
{
    const cJSON *ch = cJSON_GetObjectItem(n, "children");
    if (!ch) {
        ++*leaves;
        return cJSON_GetObjectItem(n, key) != NULL;
    }
    int k = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, ch)
        k += counts_leaf_keys(c, key, leaves);
    return k;
}

/* How many leaves carry key (of *leaves leaves). */
static int leaves_with(const cJSON *model, const char *key, int *leaves)
{
    *leaves = 0;
    return counts_leaf_keys(cJSON_GetObjectItem(model, "root"), key, leaves);
}

static cJSON *load(const char *path)
{
    cJSON *j = NULL;
    sc_error err;
    if (sc_json_load(path, &j, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s: not JSON", path);
        return NULL;
    }
    return j;
}

/* Traces `args` (a spec and its options) into the test's directory as
 * `file` and loads it: NULL, after a failed check, when the tracer fails or
 * the file is not JSON. */
static cJSON *trace_to(const char *args, const char *file)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", sc_test_tmpdir(), file);
    if (SC(TRACER " %s -o %s", args, path) != 0) {
        sc_test_fail(__FILE__, __LINE__, "tracing %s: %.400s", args, out);
        return NULL;
    }
    return load(path);
}

/* `sim` of the model on one p4d node at tp, pp 1, mbs 1; returns the JSON or NULL. */
static cJSON *sim_tp(const char *model, int tp)
{
    if (SC("%s sim --model %s --cluster p4d.24xlarge --dp 1 --tp %d --pp 1 --microbatches 1 "
           "--mbs 1 --schedule 1f1b --json 2>&1",
           sc_test_bin(), model, tp) != 0) {
        sc_test_fail(__FILE__, __LINE__, "sim --tp %d %s: %.300s", tp, model, out);
        return NULL;
    }
    return cJSON_Parse(out);
}

static double breakdown(const cJSON *sim, const char *k)
{
    return num(cJSON_GetObjectItem(sim, "breakdown"), k);
}

/* Every traced file: mode 0644, `model show` and `sim` at tp 1 and 2 accept it. */
static void check_accepted(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || (st.st_mode & 0777) != 0644)
        sc_test_fail(__FILE__, __LINE__, "%s: mode %o, not 0644", path,
                     (unsigned)(st.st_mode & 0777));
    cJSON *s = show_json(path);
    cJSON_Delete(s);
    for (int tp = 1; tp <= 2; tp++)
        cJSON_Delete(sim_tp(path, tp));
}

/* Traces spec into dir/file in the default (shape-only) mode, loads it,
 * checks the parameter total against torch's own count (x-torch.params),
 * that no times were written, that model show and sim accept it and that a
 * 2-stage plan succeeds. */
static cJSON *trace_and_check(const char *spec, const char *opts, const char *file)
{
    const char *d = sc_test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/%s", d, file);
    if (SC(TRACER " %s %s -o %s", spec, opts, path) != 0) {
        sc_test_fail(__FILE__, __LINE__, "tracing %s: %.400s", spec, out);
        return NULL;
    }
    CHECK_STR_HAS(out, "parameters (torch: ");
    CHECK_STR_HAS(out, "shape-only (meta tensors)");
    cJSON *raw = load(path);
    if (!raw)
        return NULL;
    const cJSON *xt = cJSON_GetObjectItem(raw, "x-torch");
    double torch_params = num(xt, "params");
    CHECK(!strcmp(str(xt, "mode"), "shape"));
    int leaves = 0;
    CHECK_EQ_INT(leaves_with(raw, "measured", &leaves), 0);
    CHECK(leaves > 0);
    cJSON_Delete(raw);
    check_accepted(path);
    cJSON *show = show_json(path);
    if (!show)
        return NULL;
    double traced = num(cJSON_GetObjectItem(show, "totals"), "params");
    if (!(torch_params > 0 && traced == torch_params))
        sc_test_fail(__FILE__, __LINE__, "%s: traced %.0f params, torch counts %.0f", spec, traced,
                     torch_params);
    CHECK(num(cJSON_GetObjectItem(show, "totals"), "flops_fwd") > 0);
    CHECK(num(cJSON_GetObjectItem(show, "totals"), "act_saved_bytes") > 0);
    char plan[640];
    snprintf(plan, sizeof plan, "%s/%s.plan.json", d, file);
    if (SC("%s plan --model %s --cluster p4d.24xlarge --nodes 1 --global-batch 8 --top 2 "
           "--partitioner uniform --fix pp=2 -o %s",
           sc_test_bin(), path, plan) != 0)
        sc_test_fail(__FILE__, __LINE__, "plan %s: %.400s", spec, out);
    CHECK(sc_test_exists(plan));
    return show;
}

TEST(tracer_resnet50)
{
    if (!have_torch())
        return;
    cJSON *s = trace_and_check("resnet50", "--image 64", "r50.json");
    REQUIRE(s);
    CHECK(num(cJSON_GetObjectItem(s, "totals"), "params") == 25557032);
    /* 16 bottlenecks are blocks; conv FLOPs: 2 Cin k k Cout Hout Wout */
    const cJSON *b = module_named(s, "layer1.0");
    REQUIRE(b);
    CHECK_STR_HAS(cJSON_GetObjectItem(b, "kind")->valuestring, "block");
    const cJSON *c = module_named(s, "conv1"); /* 3->64, 7x7, stride 2: 32x32 out */
    REQUIRE(c);
    CHECK(num(c, "flops_fwd") == 2.0 * 3 * 7 * 7 * 64 * 32 * 32);
    /* the first block's downsample (its conv, the innermost consumer) reads layer1 */
    const cJSON *ds = module_named(s, "layer2.0.downsample.0");
    REQUIRE(ds);
    const cJSON *in = cJSON_GetObjectItem(ds, "inputs");
    CHECK(in && cJSON_GetArraySize(in) == 1 &&
          !strcmp(cJSON_GetArrayItem(in, 0)->valuestring, "layer1"));
    cJSON_Delete(s);
    /* nothing a tracer can shard: no module has tp data, and the summary
     * says so; the conv FLOPs above were counted at the dispatcher */
    char path[600];
    snprintf(path, sizeof path, "%s/r50.json", sc_test_tmpdir());
    cJSON *raw = load(path);
    REQUIRE(raw);
    int leaves = 0;
    CHECK_EQ_INT(leaves_with(raw, "tp", &leaves), 0);
    const cJSON *tp = cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "x-torch"), "tp");
    CHECK(num(tp, "replicated") > 100);
    CHECK(num(cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "x-torch"), "flops_by_op"),
              "convolution") > 0);
    /* each bottleneck's residual add is its own code: a #self leaf with the
     * add's pass (two reads and a write of 256 channels at 16 x 16, bf16),
     * after the downsample, reading bn3's output past it */
    const cJSON *add = node_named(raw, "layer1.0#self");
    REQUIRE(add);
    const cJSON *ak = kernel_named(add, "add_");
    CHECK(ak && num(ak, "bytes") == 3 * 256 * 16 * 16 * 2.0);
    const cJSON *ai = cJSON_GetObjectItem(add, "inputs");
    CHECK(ai && cJSON_GetArraySize(ai) == 1 &&
          !strcmp(cJSON_GetArrayItem(ai, 0)->valuestring, "layer1.0.bn3"));
    const cJSON *blk = node_named(raw, "layer1.0");
    REQUIRE(blk);
    const cJSON *bk = cJSON_GetObjectItem(blk, "children");
    CHECK(!strcmp(str(cJSON_GetArrayItem(bk, cJSON_GetArraySize(bk) - 1), "name"),
                  "layer1.0#self"));
    /* a later block's add reads the block's own input: a residual, no edge */
    const cJSON *add1 = node_named(raw, "layer1.1#self");
    CHECK(add1 && kernel_named(add1, "add_") && !cJSON_GetObjectItem(add1, "inputs"));
    cJSON_Delete(raw);
    /* depth-1 table */
    CHECK(SC("%s model show %s/r50.json --depth 1", sc_test_bin(), sc_test_tmpdir()) == 0);
    CHECK_STR_HAS(out, "total: 25.56M params");
}

/* Without --image a torchvision classifier gets the side its pretrained
 * weights run at (torchvision's metadata, nothing downloaded): inception_v3
 * 299, where 224 made it fail ("padded input size ... Kernel size").
 * torchvision's model table lists 5.71 "GFLOPS" for it, multiply-adds (4.09
 * for resnet50, which traces at 8.18 GFLOP): 11.42 GFLOP here. */
TEST(tracer_torchvision_native_image)
{
    if (!have_torch())
        return;
    cJSON *s = trace_and_check("inception_v3", "--batch 2", "inc.json");
    REQUIRE(s);
    CHECK_NEAR(num(cJSON_GetObjectItem(s, "totals"), "flops_fwd") / 2 / 5.71e9, 1, 0.01);
    cJSON_Delete(s);
}

TEST(tracer_vit_b_16)
{
    if (!have_torch())
        return;
    cJSON *s = trace_and_check("vit_b_16", "--image 64", "vit.json");
    REQUIRE(s);
    CHECK(num(cJSON_GetObjectItem(s, "totals"), "params") == 86567656 - 138240);
    CHECK_EQ_INT(num(s, "seq_len"), 17); /* (64/16)^2 patches + the class token */
    const cJSON *a = module_named(s, "encoder.layers.encoder_layer_0.self_attention");
    REQUIRE(a);
    CHECK_STR_HAS(cJSON_GetObjectItem(a, "kind")->valuestring, "attention");
    /* projections 4 * 2 s h^2 plus scores and values 2 * 2 s^2 h, s 17, h 768 */
    CHECK_NEAR(num(a, "flops_fwd"), 8.0 * 17 * 768 * 768 + 4.0 * 17 * 17 * 768, 1e-12);
    /* the class token and position embedding sit on synthetic #self leaves */
    CHECK(module_named(s, "vit_b_16#self") && module_named(s, "encoder#self"));
    cJSON_Delete(s);

    /* tensor parallelism: torchvision's attention (nn.MultiheadAttention)
     * and MLPBlock are sharded; the patch convolution, the class token and
     * position embedding and the classifier stay replicated (no tp) */
    char path[600];
    snprintf(path, sizeof path, "%s/vit.json", sc_test_tmpdir());
    cJSON *raw = load(path);
    REQUIRE(raw);
    const char *L0 = "encoder.layers.encoder_layer_0";
    char nm[200];
    snprintf(nm, sizeof nm, "%s.self_attention", L0);
    const cJSON *at = node_named(raw, nm);
    REQUIRE(at);
    CHECK(tp_shardable(at));
    CHECK_NEAR(tp_bytes(at), 2.0 * 17 * 768, 1e-12); /* bf16 s h, after the out projection */
    CHECK_NEAR(num(cJSON_GetObjectItem(at, "tp"), "replicated_saved"), 2.0 * 17 * 768, 1e-12);
    /* softmax output, dropout mask and dropout output: 12 heads x 17 x 17 */
    CHECK(num(at, "act_scores_bytes") >= 2.0 * 12 * 17 * 17);
    /* unfused as traced, or fused under --attn flash: no mask, not causal */
    CHECK(offers_flash(at, 1, 0));
    CHECK(num(at, "act_scores_bytes") <= num(at, "act_saved_bytes"));
    snprintf(nm, sizeof nm, "%s.mlp", L0);
    const cJSON *mlp = node_named(raw, nm);
    REQUIRE(mlp);
    CHECK(!strcmp(str(mlp, "kind"), "mlp"));
    CHECK_EQ_INT(dim(mlp, "ffn"), 3072);
    CHECK_EQ_INT(dim(mlp, "hidden"), 768);
    snprintf(nm, sizeof nm, "%s.mlp.0", L0);
    const cJSON *c0 = node_named(raw, nm);
    snprintf(nm, sizeof nm, "%s.mlp.3", L0);
    const cJSON *c3 = node_named(raw, nm);
    snprintf(nm, sizeof nm, "%s.mlp.4", L0);
    const cJSON *d4 = node_named(raw, nm);
    snprintf(nm, sizeof nm, "%s.ln_1", L0);
    const cJSON *ln = node_named(raw, nm);
    REQUIRE(c0 && c3 && d4 && ln);
    CHECK(tp_shardable(c0) && tp_bytes(c0) == 0);              /* column-parallel */
    CHECK(tp_shardable(c3) && tp_bytes(c3) == 2.0 * 17 * 768); /* row-parallel */
    CHECK(!tp_shardable(d4) && tp_bytes(d4) == 0); /* dropout after the allreduce */
    CHECK(!tp_shardable(ln) && tp_bytes(ln) == 0); /* norms stay replicated */
    const char *stay[] = {"conv_proj", "vit_b_16#self", "encoder#self", "heads.head"};
    for (size_t i = 0; i < SC_ARRAY_LEN(stay); i++) {
        const cJSON *x = node_named(raw, stay[i]);
        CHECK(x && !cJSON_GetObjectItem(x, "tp"));
    }
    CHECK_EQ_INT(num(cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "x-torch"), "tp"), "replicated"),
                 4);
    const cJSON *first = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "x-torch"), "tp"), "replicated_first");
    /* in execution order: the class token joins conv_proj's patches after it */
    CHECK(cJSON_GetArraySize(first) == 4 &&
          !strcmp(cJSON_GetArrayItem(first, 0)->valuestring, "conv_proj") &&
          !strcmp(cJSON_GetArrayItem(first, 1)->valuestring, "vit_b_16#self"));
    cJSON_Delete(raw);
    /* sim at tp 2 says which modules stay replicated, in one stderr line;
     * at tp 1 it says nothing */
    static char o2[1 << 14];
    REQUIRE(sc_test_sh(o2, sizeof o2,
                       "%s sim --model %s --cluster p4d.24xlarge --tp 2 --microbatches 2 "
                       "2>&1 >/dev/null",
                       sc_test_bin(), path) == 0);
    CHECK_STR_HAS(o2, "warning: --tp 2: 4 modules of vit_b_16 have no tensor-parallel data");
    CHECK_STR_HAS(o2, "conv_proj, vit_b_16#self, encoder#self, heads.head");
    REQUIRE(sc_test_sh(o2, sizeof o2,
                       "%s sim --model %s --cluster p4d.24xlarge --microbatches 2 2>&1 >/dev/null",
                       sc_test_bin(), path) == 0);
    CHECK(!strstr(o2, "warning"));
}

/* Removes every "shared" member. */
static void strip_shared(cJSON *j)
{
    if (!j)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(j, "shared");
    for (cJSON *c = j->child; c; c = c->next)
        if (cJSON_IsObject(c) || cJSON_IsArray(c))
            strip_shared(c);
}

static double sim_stage_mem(const char *model, int stage)
{
    if (SC("%s sim --model %s --cluster p4d.24xlarge --dp 1 --tp 1 --pp 2 --microbatches 2 "
           "--mbs 1 --schedule 1f1b --partition uniform --json",
           sc_test_bin(), model) != 0) {
        sc_test_fail(__FILE__, __LINE__, "sim %s: %.300s", model, out);
        return -1;
    }
    cJSON *j = cJSON_Parse(out);
    double v = j ? cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peak_mem_bytes"), stage)->valuedouble
                 : -1;
    cJSON_Delete(j);
    return v;
}

TEST(tracer_tiny_gpt_tied)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    cJSON *s = trace_and_check("tests/tracer/tiny_gpt.py:make", "--seq 32", "gpt.json");
    REQUIRE(s);
    /* torch counts the tied weight once; both modules name the same group and
     * only the first in execution order (the embedding) owns it */
    const cJSON *e = module_named(s, "embed"), *h = module_named(s, "head");
    REQUIRE(e && h);
    const cJSON *ge = cJSON_GetObjectItem(e, "shared"), *gh = cJSON_GetObjectItem(h, "shared");
    REQUIRE(cJSON_IsString(ge) && cJSON_IsString(gh));
    CHECK(!strcmp(ge->valuestring, "tied:embed.weight"));
    CHECK(!strcmp(ge->valuestring, gh->valuestring));
    CHECK(num(e, "params") == 1000 * 64);
    CHECK(num(h, "params") == 0);
    CHECK_EQ_INT(num(s, "seq_len"), 32);
    CHECK_STR_HAS(cJSON_GetObjectItem(module_named(s, "blocks.0"), "kind")->valuestring, "block");
    cJSON_Delete(s);

    /* the plan: the uniform partitioner puts embed on stage 0 and head on
     * stage 1; then the stage holding head must also hold the tied copy */
    char plan[600], path[600], untied[600];
    snprintf(plan, sizeof plan, "%s/gpt.json.plan.json", d);
    snprintf(path, sizeof path, "%s/gpt.json", d);
    snprintf(untied, sizeof untied, "%s/gpt_untied.json", d);
    cJSON *p = NULL;
    sc_error err;
    REQUIRE(sc_json_load(plan, &p, &err) == SC_OK);
    const cJSON *stages = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "partition"), "stages");
    REQUIRE(cJSON_GetArraySize(stages) == 2);
    const char *last0 = cJSON_GetObjectItem(cJSON_GetArrayItem(stages, 0), "last")->valuestring;
    const char *last1 = cJSON_GetObjectItem(cJSON_GetArrayItem(stages, 1), "last")->valuestring;
    int split = strcmp(last1, "head") == 0 && strcmp(last0, "head") != 0;
    cJSON_Delete(p);
    if (!split)
        return; /* one stage holds both: nothing more to check */
    cJSON *m = NULL;
    REQUIRE(sc_json_load(path, &m, &err) == SC_OK);
    strip_shared(m);
    char *txt = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    FILE *f = fopen(untied, "w");
    REQUIRE(f && txt);
    fputs(txt, f);
    fclose(f);
    free(txt);
    double t0 = sim_stage_mem(path, 0), t1 = sim_stage_mem(path, 1);
    double u0 = sim_stage_mem(untied, 0), u1 = sim_stage_mem(untied, 1);
    CHECK(t0 == u0);
    /* bf16 mixed-precision Adam: 2 + 2 + 12 bytes per parameter of the copy */
    CHECK_NEAR(t1 - u1, 16.0 * 1000 * 64, 1e-9);
}


/* Traces spec (tiny_gpt at sequence 32) into file and checks that its head
 * is charged no loss: it saves its bf16 input alone, lists no
 * cross_entropy, and the model's x-torch.loss is xloss. */
static void head_without_loss(const char *spec, const char *file, const char *xloss)
{
    const double s = 32, h = 64;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", sc_test_tmpdir(), file);
    REQUIRE(SC(TRACER " %s --seq 32 -o %s", spec, path) == 0);
    CHECK(!strstr(out, "loss:"));
    cJSON *raw = load(path);
    REQUIRE(raw);
    const cJSON *head = node_named(raw, "head");
    CHECK(head && num(head, "act_saved_bytes") == 2 * s * h);
    CHECK(head && !kernel_named(head, "cross_entropy"));
    CHECK(!strcmp(str(cJSON_GetObjectItem(raw, "x-torch"), "loss"), xloss));
    cJSON_Delete(raw);
    check_accepted(path);
}

/* A model that returns its LM head's logits leaves the loss to the training
 * loop; its cross-entropy over s x V logits (fp32 log-probabilities saved,
 * 4 s V bytes: at s 512 and V 32000 62.5 MiB a sample, a fifth of a 184M
 * model's activations) was charged nowhere. With --loss auto it is charged
 * to the head as model gen charges it; a forward that computes its own loss
 * keeps it where it ran. */
TEST(tracer_loss_charged_to_head)
{
    if (!have_torch())
        return;
    const double s = 32, V = 1000, h = 64;
    const char *d = sc_test_tmpdir();
    cJSON *show = trace_and_check("tests/tracer/tiny_gpt.py:make", "--seq 32", "ce.json");
    cJSON_Delete(show);
    char path[600];
    snprintf(path, sizeof path, "%s/ce.json", d);
    cJSON *raw = load(path);
    REQUIRE(raw);
    const cJSON *head = node_named(raw, "head");
    REQUIRE(head);
    /* bf16: its input, then the fp32 log-probabilities */
    CHECK_NEAR(num(head, "act_saved_bytes"), 2 * s * h + 4 * s * V, 1e-12);
    const cJSON *ce = kernel_named(head, "cross_entropy");
    REQUIRE(ce);
    CHECK(!strcmp(str(ce, "op"), "mem") && !strcmp(str(ce, "tp"), "shard"));
    CHECK_NEAR(num(ce, "bytes"), (2 + 4 + 16) * s * V, 1e-12);     /* cast, log_softmax */
    CHECK_NEAR(num(ce, "bwd_bytes"), (16 + 2 + 4) * s * V, 1e-12); /* nll, lsm, cast back */
    const cJSON *xl = cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "x-torch"), "loss");
    CHECK(!strcmp(str(xl, "kind"), "cross_entropy") && !strcmp(str(xl, "module"), "head"));
    cJSON_Delete(raw);
    /* as model gen charges the same model's head (Megatron-LM's loss saves
     * the same fp32 softmax) */
    REQUIRE(SC("%s model gen gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 1000 --tied "
               "-o %s/gen.json", sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/gen.json", d);
    show = show_json(path);
    REQUIRE(show);
    const cJSON *gh = module_named(show, "head");
    REQUIRE(gh);
    CHECK_NEAR(num(gh, "act_saved_bytes_total"), 2 * s * h + 4 * s * V, 1e-12);
    cJSON_Delete(show);

    /* fp32: no cast either way */
    REQUIRE(SC(TRACER " tests/tracer/tiny_gpt.py:make --seq 32 --dtype fp32 -o %s/ce32.json",
               d) == 0);
    snprintf(path, sizeof path, "%s/ce32.json", d);
    raw = load(path);
    REQUIRE(raw);
    head = node_named(raw, "head");
    REQUIRE(head && (ce = kernel_named(head, "cross_entropy")));
    CHECK_NEAR(num(head, "act_saved_bytes"), 4 * s * h + 4 * s * V, 1e-12);
    CHECK_NEAR(num(ce, "bytes"), 16 * s * V, 1e-12);
    CHECK_NEAR(num(ce, "bwd_bytes"), 16 * s * V, 1e-12);
    cJSON_Delete(raw);

    /* --loss none: the head as its own code ran it; a forward that computes
     * its own loss: traced where it ran, not twice */
    head_without_loss("tests/tracer/tiny_gpt.py:make --loss none", "none.json", "none");
    head_without_loss("tests/tracer/tiny_gpt.py:make:loss=1", "own.json", "in the forward");

    CHECK(SC(TRACER " tests/tracer/tiny_gpt.py:make --loss mse -o %s/bad.json 2>&1", d) == 2);
    CHECK_STR_HAS(out, "--loss: unknown 'mse' (auto, none)");
}

TEST(tracer_transformer_and_dataflow)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    /* nn.Transformer: every decoder cross-attention reads the encoder */
    REQUIRE(SC(TRACER " transformer:d_model=64,nhead=4,num_encoder_layers=2,"
               "num_decoder_layers=2,dim_feedforward=128 --seq 16 -o %s/t.json",
               d) == 0);
    char p[600];
    snprintf(p, sizeof p, "%s/t.json", d);
    check_accepted(p);
    cJSON *s = show_json(p);
    REQUIRE(s);
    const cJSON *x = module_named(s, "decoder.layers.1.multihead_attn");
    REQUIRE(x);
    CHECK(!strcmp(cJSON_GetObjectItem(x, "kind")->valuestring, "cross_attention"));
    const cJSON *in = cJSON_GetObjectItem(x, "inputs");
    CHECK(in && !strcmp(cJSON_GetArrayItem(in, 0)->valuestring, "encoder"));
    cJSON_Delete(s);
    /* tp: every attention (self and cross) and the linear1 -> dropout ->
     * linear2 pair inside each layer (its activation is inline, on the
     * layer's #self); post-norms and dropouts replicated; every leaf has tp */
    cJSON *raw = load(p);
    REQUIRE(raw);
    const cJSON *xa = node_named(raw, "decoder.layers.1.multihead_attn");
    const cJSON *l1 = node_named(raw, "encoder.layers.0.linear1");
    const cJSON *dr = node_named(raw, "encoder.layers.0.dropout");
    const cJSON *l2 = node_named(raw, "encoder.layers.0.linear2");
    const cJSON *n1 = node_named(raw, "encoder.layers.0.norm1");
    REQUIRE(xa && l1 && dr && l2 && n1);
    CHECK(tp_shardable(xa) && tp_bytes(xa) == 2.0 * 16 * 64);
    /* scores: the softmax output, the dropout mask and output, 4 heads x 16 x
     * 16 each (2 bytes, a bool mask 1), and not Q, K or V although here they
     * have as many elements (head size 16 = sequence 16) */
    const cJSON *sa = node_named(raw, "encoder.layers.0.self_attn");
    REQUIRE(sa);
    CHECK(num(sa, "act_scores_bytes") >= 2 * 2.0 * 4 * 16 * 16 &&
          num(sa, "act_scores_bytes") <= 3 * 2.0 * 4 * 16 * 16);
    /* the query input and the encoder output both stay whole on each rank */
    CHECK_NEAR(num(cJSON_GetObjectItem(xa, "tp"), "replicated_saved"), 2 * 2.0 * 16 * 64, 1e-12);
    /* each attention offers the fused kernel beside its unfused products:
     * causal where the decoder's triu mask (generate_square_subsequent_mask,
     * made in the forward) reached its scores; the cross-attention's keys
     * are the encoder's, whatever their length */
    const cJSON *ds = node_named(raw, "decoder.layers.1.self_attn");
    REQUIRE(ds);
    CHECK(offers_flash(sa, 1, 0));
    CHECK(offers_flash(ds, 1, 1));
    CHECK(offers_flash(xa, 0, 0));
    CHECK(tp_shardable(l1) && tp_bytes(l1) == 0 && dim(l1, "ffn") == 128);
    CHECK(tp_shardable(dr) && tp_bytes(dr) == 0);
    CHECK(tp_shardable(l2) && tp_bytes(l2) == 2.0 * 16 * 64);
    CHECK(!tp_shardable(n1) && tp_bytes(n1) == 0);
    int leaves = 0;
    CHECK_EQ_INT(leaves_with(raw, "tp", &leaves), leaves);
    cJSON_Delete(raw);
    /* a module consuming two earlier siblings records the non-adjacent one */
    REQUIRE(SC(TRACER " tests/tracer/fixtures.py:two_tower -o %s/tt.json", d) == 0);
    snprintf(p, sizeof p, "%s/tt.json", d);
    check_accepted(p);
    s = show_json(p);
    REQUIRE(s);
    x = module_named(s, "fuse");
    REQUIRE(x);
    in = cJSON_GetObjectItem(x, "inputs");
    CHECK(in && cJSON_GetArraySize(in) == 1 &&
          !strcmp(cJSON_GetArrayItem(in, 0)->valuestring, "enc_a"));
    cJSON_Delete(s);
    /* enc_a and enc_b are two Linear(16, 16) side by side, not a
     * column-then-row pair: enc_b reads the input, not enc_a's output */
    raw = load(p);
    REQUIRE(raw);
    CHECK_EQ_INT(leaves_with(raw, "tp", &leaves), 0);
    cJSON_Delete(raw);
    /* own code that only launches kernels (a concatenation, residual adds)
     * is a #self leaf where it ran, with what it read out of order: LLaVA's
     * image tokens joined to the text embedding's in the model's forward
     * (it kept no tensor, so until 2026-12-07 it was left out: no kernel,
     * no edge, and a cut after the embedding sent the text tokens alone) */
    REQUIRE(SC(TRACER " tests/tracer/fixtures.py:concat_towers -o %s/ct.json", d) == 0);
    snprintf(p, sizeof p, "%s/ct.json", d);
    check_accepted(p);
    raw = load(p);
    REQUIRE(raw);
    const cJSON *kids = cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "root"), "children");
    REQUIRE(cJSON_GetArraySize(kids) == 4);
    const cJSON *own = cJSON_GetArrayItem(kids, 2);
    CHECK(!strcmp(str(own, "name"), "fixtures#self"));
    CHECK(!strcmp(str(cJSON_GetArrayItem(kids, 1), "name"), "embed"));
    in = cJSON_GetObjectItem(own, "inputs");
    CHECK(in && cJSON_GetArraySize(in) == 1 &&
          !strcmp(cJSON_GetArrayItem(in, 0)->valuestring, "vision"));
    const cJSON *cat = kernel_named(own, "cat");
    /* reads 6 + 10 tokens of 32 bf16 and writes them: 2 x 16 x 32 x 2 */
    CHECK(cat && num(cat, "bytes") == 2 * 16 * 32 * 2);
    CHECK(num(own, "act_out_bytes") == 16 * 32 * 2);
    cJSON_Delete(raw);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* GPT-2 small (Radford et al. 2019): 12 layers, h 768, 12 heads, V 50257,
 * traced at sequence 1024, batch 2. */
#define G_L 12.0
#define G_H 768.0
#define G_S 1024.0
#define G_V 50257.0

/* Forward FLOPs per sample, Narayanan et al. 2021 (sec. 5.1): 24 s h^2 l
 * (1 + s/(6h)) for the layers plus 2 s h V for the LM head. */
static double gpt2_flops(void)
{
    return 24 * G_S * G_H * G_H * G_L * (1 + G_S / (6 * G_H)) + 2 * G_S * G_H * G_V;
}

/* Traces gpt2.py:make with attn=variant in the default mode, within 30 s,
 * its FLOPs within 1% of the closed form; returns the file's JSON. */
static cJSON *trace_gpt2(const char *variant, char *path, size_t cap)
{
    snprintf(path, cap, "%s/gpt2_%s.json", sc_test_tmpdir(), variant);
    double t0 = now_s();
    if (SC(TRACER " tests/tracer/gpt2.py:make:attn=%s --batch 2 --seq 1024 -o %s", variant,
           path) != 0) {
        sc_test_fail(__FILE__, __LINE__, "tracing gpt2 attn=%s: %.400s", variant, out);
        return NULL;
    }
    double t = now_s() - t0;
    if (t > 30)
        sc_test_fail(__FILE__, __LINE__, "tracing gpt2 attn=%s took %.1f s (target: 30 s)",
                     variant, t);
    check_accepted(path);
    cJSON *show = show_json(path);
    if (!show)
        return NULL;
    const cJSON *tot = cJSON_GetObjectItem(show, "totals");
    CHECK_EQ_INT(num(tot, "params"), 124439808); /* tied: nanoGPT's 124M */
    double f = num(tot, "flops_fwd"), want = gpt2_flops();
    if (!(fabs(f - want) <= 0.01 * want))
        sc_test_fail(__FILE__, __LINE__, "gpt2 attn=%s: %.6g FLOPs/sample, formula %.6g (%.3f%%)",
                     variant, f, want, 100 * (f - want) / want);
    /* tp traffic as the generator's GPT: 2 allreduces of s h per layer, the
     * vocab-parallel embedding's s h, the head's 12 s (bf16) */
    CHECK_NEAR(num(tot, "tp_bytes"), (2 * G_L + 1) * 2 * G_S * G_H + 12 * G_S, 1e-12);
    cJSON_Delete(show);
    cJSON *raw = load(path);
    if (!raw)
        return NULL;
    /* the vocabulary: embedding and head, tied */
    const cJSON *wte = node_named(raw, "transformer.wte"), *wpe = node_named(raw, "transformer.wpe");
    const cJSON *head = node_named(raw, "lm_head");
    if (wte && wpe && head) {
        CHECK(tp_shardable(wte) && tp_bytes(wte) == 2 * G_S * G_H);
        CHECK(!tp_shardable(wpe) && tp_bytes(wpe) == 0);
        CHECK(!strcmp(str(head, "kind"), "head"));
        CHECK(tp_shardable(head) && tp_bytes(head) == 12 * G_S);
        CHECK(dim(head, "vocab") == G_V && dim(head, "hidden") == G_H && dim(wte, "vocab") == G_V);
        CHECK(!strcmp(str(head, "shared"), str(wte, "shared")));
    }
    /* the MLP: c_fc column-parallel, gelu sharded, c_proj row-parallel */
    const cJSON *mlp = node_named(raw, "transformer.h.0.mlp");
    const cJSON *fc = node_named(raw, "transformer.h.0.mlp.c_fc");
    const cJSON *gelu = node_named(raw, "transformer.h.0.mlp.gelu");
    const cJSON *pr = node_named(raw, "transformer.h.0.mlp.c_proj");
    const cJSON *drop = node_named(raw, "transformer.h.0.mlp.dropout");
    if (mlp && fc && gelu && pr && drop) {
        CHECK(!strcmp(str(mlp, "kind"), "mlp") && dim(mlp, "ffn") == 4 * G_H);
        CHECK(tp_shardable(fc) && tp_bytes(fc) == 0);
        CHECK_NEAR(num(cJSON_GetObjectItem(fc, "tp"), "replicated_saved"), 2 * G_S * G_H, 1e-12);
        CHECK(tp_shardable(gelu) && tp_bytes(gelu) == 0);
        CHECK(tp_shardable(pr) && tp_bytes(pr) == 2 * G_S * G_H);
        CHECK(!tp_shardable(drop));
    }
    /* every leaf has tp data: nothing stays replicated by accident */
    int leaves = 0;
    CHECK_EQ_INT(leaves_with(raw, "tp", &leaves), leaves);
    CHECK_EQ_INT(num(cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "x-torch"), "tp"), "replicated"),
                 0);
    return raw;
}

/* sim at tp 1 and 2: tp 2 all-reduces and splits the work. */
static void check_tp2(const char *path)
{
    cJSON *a = sim_tp(path, 1), *b = sim_tp(path, 2);
    if (a && b) {
        CHECK(breakdown(a, "tp_comm_s") == 0);
        CHECK(breakdown(b, "tp_comm_s") > 0);
        CHECK(breakdown(b, "compute_s") < 0.85 * breakdown(a, "compute_s"));
        CHECK(breakdown(b, "optimizer_s") < 0.55 * breakdown(a, "optimizer_s"));
        CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "peak_mem_bytes"), 0)->valuedouble <
              0.8 * cJSON_GetArrayItem(cJSON_GetObjectItem(a, "peak_mem_bytes"), 0)->valuedouble);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
}

TEST(tracer_gpt2_inline_attention)
{
    if (!have_torch())
        return;
    char path[600];
    cJSON *raw = trace_gpt2("inline", path, sizeof path);
    REQUIRE(raw);
    /* nanoGPT's CausalSelfAttention: q @ k^T and att @ v run inline in its
     * forward; the dispatcher counts them on its #self leaf, the core */
    const cJSON *at = node_named(raw, "transformer.h.0.attn");
    const cJSON *core = node_named(raw, "transformer.h.0.attn#self");
    const cJSON *qkv = node_named(raw, "transformer.h.0.attn.c_attn");
    const cJSON *pr = node_named(raw, "transformer.h.0.attn.c_proj");
    const cJSON *rd = node_named(raw, "transformer.h.0.attn.resid_dropout");
    REQUIRE(at && core && qkv && pr && rd);
    CHECK(!strcmp(str(at, "kind"), "attention"));
    CHECK(dim(at, "heads") == 12 && dim(at, "hidden") == G_H && dim(at, "kv") == 64 &&
          dim(at, "seq") == G_S);
    CHECK(!strcmp(str(core, "kind"), "attention_core"));
    CHECK(num(core, "flops_fwd") == 4 * G_S * G_S * G_H); /* scores and values */
    CHECK(num(qkv, "flops_fwd") == 6 * G_S * G_H * G_H);
    /* softmax output and the dropout output att @ v reads: 12 x s x s each */
    CHECK(num(core, "act_scores_bytes") == 2 * 2 * 12 * G_S * G_S);
    CHECK(tp_shardable(core) && tp_bytes(core) == 0);
    CHECK(tp_shardable(qkv) && tp_bytes(qkv) == 0);
    CHECK(tp_shardable(pr) && tp_bytes(pr) == 2 * G_S * G_H);
    CHECK(!tp_shardable(rd) && tp_bytes(rd) == 0);
    /* the root's own code, the token + position add, ran between
     * transformer.wpe and transformer.drop, inside the module dict's span:
     * it stands there (on the first pipeline stage, not before lm_head), and
     * it reads the token embedding past the position one */
    const cJSON *kids = cJSON_GetObjectItem(node_named(raw, "transformer"), "children");
    const char *want[] = {"transformer.wte", "transformer.wpe", "gpt2#self", "transformer.drop"};
    for (int i = 0; i < 4; i++)
        CHECK(!strcmp(str(cJSON_GetArrayItem(kids, i), "name"), want[i]));
    const cJSON *sum = node_named(raw, "gpt2#self");
    REQUIRE(sum);
    CHECK(kernel_named(sum, "add") && num(sum, "act_out_bytes") == 2 * G_S * G_H);
    const cJSON *in = cJSON_GetObjectItem(sum, "inputs");
    CHECK(cJSON_GetArraySize(in) == 1 &&
          !strcmp(cJSON_GetArrayItem(in, 0)->valuestring, "transformer.wte"));
    const cJSON *rk = cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "root"), "children");
    CHECK(cJSON_GetArraySize(rk) == 2); /* transformer, lm_head: nothing of the root's between */
    cJSON_Delete(raw);
    check_tp2(path);
    /* its learned positions are a table of their own (transformer.wpe): the
     * Megatron-LM export keeps learned_absolute, Megatron's default (until
     * 2026-12-06 it wrote --position-embedding-type none) */
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s sim --model %s --cluster p4d.24xlarge --nodes 1 --dp 8 --microbatches 1 -o %s/g2.plan.json "
               ">/dev/null && %s export %s/g2.plan.json --to megatron",
               sc_test_bin(), path, d, sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "--max-position-embeddings 1024");
    CHECK(!strstr(out, "--position-embedding-type"));
}

TEST(tracer_gpt2_mha_attention)
{
    if (!have_torch())
        return;
    char path[600];
    cJSON *raw = trace_gpt2("mha", path, sizeof path);
    REQUIRE(raw);
    const cJSON *at = node_named(raw, "transformer.h.0.attn.mha");
    REQUIRE(at);
    CHECK(!strcmp(str(at, "kind"), "attention"));
    CHECK(num(at, "flops_fwd") == 8 * G_S * G_H * G_H + 4 * G_S * G_S * G_H);
    CHECK(tp_shardable(at) && tp_bytes(at) == 2 * G_S * G_H);
    CHECK(num(at, "act_scores_bytes") >= 2 * 2 * 12 * G_S * G_S);
    /* its triu mask, made in __init__, is added to the scores by baddbmm */
    CHECK(offers_flash(at, 1, 1));
    cJSON_Delete(raw);
    check_tp2(path);
}

/* torch >= 2.0: F.scaled_dot_product_attention is counted at the dispatcher. */
TEST(tracer_gpt2_sdpa)
{
    if (!have_torch())
        return;
    char buf[256];
    if (sc_test_sh(buf, sizeof buf,
                   PY " -c 'import torch.nn.functional as F, sys; "
                   "sys.exit(0 if hasattr(F, \"scaled_dot_product_attention\") else 1)'") != 0) {
        sc_test_unavailable("torch < 2.0 (Debian packages 1.13): no F.scaled_dot_product_attention");
        return;
    }
    char path[600];
    cJSON *raw = trace_gpt2("sdpa", path, sizeof path);
    REQUIRE(raw);
    const cJSON *core = node_named(raw, "transformer.h.0.attn#self");
    REQUIRE(core);
    CHECK(!strcmp(str(core, "kind"), "attention_core"));
    CHECK(num(core, "flops_fwd") == 4 * G_S * G_S * G_H);
    /* on meta tensors SDPA takes its math path, whose own tril mask makes
     * the fused alternative causal */
    CHECK(offers_flash(core, 1, 1));
    cJSON_Delete(raw);
    /* on the CPU it is one fused op (flash_attention_for_cpu): its products,
     * and is_causal=True makes the fused alternative causal */
    raw = trace_to("tests/tracer/gpt2.py:make:attn=sdpa --batch 2 --seq 64 --measure --repeat 1 "
                   "--threads 1",
                   "sdpa_m.json");
    REQUIRE(raw);
    core = node_named(raw, "transformer.h.0.attn#self");
    CHECK(core && offers_flash(core, 1, 1));
    cJSON_Delete(raw);
}

/* Separate q, k, v, o projections with grouped K/V heads, RMSNorm, a SwiGLU
 * MLP (two column-parallel linears), an untied head: spec traced to file. */
static void check_llama_like(const char *spec, const char *file, int causal)
{
    cJSON *s = trace_and_check(spec, "", file);
    REQUIRE(s);
    /* s 16, h 64, kv 2 x 16, f 176, 2 layers, V 500 */
    double s_ = 16, h = 64, kvd = 32, f = 176, V = 500;
    double layer = 2 * s_ * h * h * 2 + 2 * 2 * s_ * h * kvd + 4 * s_ * s_ * h + 3 * 2 * s_ * h * f;
    CHECK(num(cJSON_GetObjectItem(s, "totals"), "flops_fwd") == 2 * layer + 2 * s_ * h * V);
    cJSON_Delete(s);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", sc_test_tmpdir(), file);
    cJSON *raw = load(path);
    REQUIRE(raw);
    const cJSON *at = node_named(raw, "layers.0.self_attn");
    const cJSON *core = node_named(raw, "layers.0.self_attn#self");
    const cJSON *k = node_named(raw, "layers.0.self_attn.k_proj");
    const cJSON *o = node_named(raw, "layers.0.self_attn.o_proj");
    const cJSON *mlp = node_named(raw, "layers.0.mlp");
    const cJSON *up = node_named(raw, "layers.0.mlp.up_proj");
    const cJSON *down = node_named(raw, "layers.0.mlp.down_proj");
    const cJSON *norm = node_named(raw, "layers.0.input_layernorm");
    const cJSON *emb = node_named(raw, "embed_tokens"), *head = node_named(raw, "lm_head");
    REQUIRE(at && core && k && o && mlp && up && down && norm && emb && head);
    CHECK(!strcmp(str(at, "kind"), "attention") && dim(at, "heads") == 4 &&
          dim(at, "kv_heads") == 2 && dim(at, "kv") == 16);
    CHECK(!strcmp(str(core, "kind"), "attention_core"));
    CHECK(offers_flash(core, 1, causal));
    CHECK(tp_shardable(k) && tp_bytes(k) == 0);
    CHECK(tp_shardable(o) && tp_bytes(o) == 2 * s_ * h);
    CHECK(!strcmp(str(mlp, "kind"), "mlp") && dim(mlp, "ffn") == f);
    CHECK(tp_shardable(up) && tp_bytes(up) == 0);
    CHECK(tp_shardable(down) && tp_bytes(down) == 2 * s_ * h);
    CHECK(!tp_shardable(norm) && tp_bytes(norm) == 0);
    CHECK(!strcmp(str(head, "kind"), "head") && tp_bytes(head) == 12 * s_);
    CHECK(tp_shardable(emb) && tp_bytes(emb) == 2 * s_ * h);
    int leaves = 0;
    CHECK_EQ_INT(leaves_with(raw, "tp", &leaves), leaves);
    cJSON_Delete(raw);
}

TEST(tracer_llama_like_gqa_swiglu)
{
    if (!have_torch())
        return;
    check_llama_like("tests/tracer/fixtures.py:llama_like", "llama.json", 0);
    /* Hugging Face's attention in recent transformers keeps its head counts
     * only in its config (head_dim and num_key_value_groups on the module):
     * read there, it is the same attention, sharded the same way (its q, k,
     * v, o projections and core stayed replicated: transformers 5.25's
     * LlamaForCausalLM traced with "10 modules with work stay replicated") */
    check_llama_like("tests/tracer/fixtures.py:llama_like:hf_config=true,rotary=true",
                     "llama_hf.json", 0);
    /* its eager causal mask compares two position aranges (kv_idx <= q_idx)
     * and turns that into 0 or -inf: a triangle, so the fused kernel that
     * stands for the core is causal (half the products); it was priced as
     * a full one, for every Hugging Face model traced with eager attention */
    check_llama_like("tests/tracer/fixtures.py:llama_like:hf_config=true,causal=true",
                     "llama_causal.json", 1);
    /* a relative position bias table in the first layer's attention (T5's
     * relative_attention_bias, looked up from a difference of positions, no
     * comparison: not causal) is kept whole, and that attention is still one
     * (HF T5's first encoder and decoder layers stayed replicated) */
    check_llama_like("tests/tracer/fixtures.py:llama_like:rel_bias=true", "llama_rel.json", 0);
    char rel[600];
    snprintf(rel, sizeof rel, "%s/llama_rel.json", sc_test_tmpdir());
    cJSON *rj = load(rel);
    REQUIRE(rj);
    const cJSON *tb = node_named(rj, "layers.0.self_attn.relative_attention_bias");
    CHECK(tb && !tp_shardable(tb) && tp_bytes(tb) == 0);
    cJSON_Delete(rj);
    /* and it is Megatron-LM's GPT in its Llama form: the rotary tables the
     * model computes once and every attention reads, the first norm reading
     * the embedding past them, k_proj and v_proj reading the norm past
     * q_proj are what Megatron builds itself (the export refused the model
     * for "non-sequential dataflow"); the rotary module says rope, the
     * traced RMSNorm class RMSNorm (it wrote LayerNorm's defaults) */
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s sim --model %s/llama_hf.json --cluster p4d.24xlarge --nodes 1 --dp 8 "
               "--microbatches 1 -o %s/llama_hf.plan >/dev/null && %s export %s/llama_hf.plan "
               "--to megatron",
               sc_test_bin(), d, d, sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "    --position-embedding-type rope\n");
    CHECK_STR_HAS(out, "    --normalization RMSNorm\n");
    CHECK_STR_HAS(out, "    --swiglu\n");
    CHECK_STR_HAS(out, "    --num-query-groups 2\n");
    CHECK_STR_HAS(out, "    --disable-bias-linear\n");
}

/* --measure: real CPU passes with times, the same structure, FLOPs and
 * activations as the shape-only trace. */
TEST(tracer_measure_tiny)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(SC(TRACER " tests/tracer/tiny_gpt.py:make --seq 32 --dtype fp32 --measure --repeat 1 "
               "--threads 1 --device-name cpu-core -o %s/m.json",
               d) == 0);
    CHECK_STR_HAS(out, "measured on the CPU");
    REQUIRE(SC(TRACER " tests/tracer/tiny_gpt.py:make --seq 32 --dtype fp32 -o %s/s.json", d) == 0);
    char pm[600], ps[600];
    snprintf(pm, sizeof pm, "%s/m.json", d);
    snprintf(ps, sizeof ps, "%s/s.json", d);
    check_accepted(pm);
    cJSON *m = load(pm), *s = load(ps);
    REQUIRE(m && s);
    const cJSON *xt = cJSON_GetObjectItem(m, "x-torch");
    CHECK(!strcmp(str(xt, "mode"), "measure"));
    CHECK(!strcmp(str(xt, "device"), "cpu-core"));
    int leaves = 0, n = leaves_with(m, "measured", &leaves);
    CHECK(leaves > 0 && n == leaves);
    const cJSON *a = node_named(m, "blocks.0.attn");
    REQUIRE(a);
    const cJSON *me = cJSON_GetObjectItem(a, "measured");
    CHECK(num(me, "fwd_s") > 0 && !strcmp(str(me, "device"), "cpu-core"));
    /* the loss the training loop runs on the head's logits, timed too and
     * in the head's measured times */
    const cJSON *xl = cJSON_GetObjectItem(xt, "loss"), *head = node_named(m, "head");
    REQUIRE(head);
    const cJSON *mh = cJSON_GetObjectItem(head, "measured");
    CHECK(num(xl, "measured_fwd_s") > 0 && num(xl, "measured_bwd_s") > 0);
    CHECK(num(mh, "fwd_s") >= num(xl, "measured_fwd_s"));
    CHECK(num(mh, "bwd_s") >= num(xl, "measured_bwd_s"));
    /* the same tree and numbers but the times; on torch >= 2 the CPU runs
     * nn.MultiheadAttention as its fused SDPA kernel, which keeps no
     * scores, where meta tensors take the math path that keeps them */
    int torch2 = str(xt, "torch")[0] >= '2';
    cJSON_DeleteItemFromObject(m, "x-torch");
    cJSON_DeleteItemFromObject(s, "x-torch");
    cJSON *show_m = show_json(pm), *show_s = show_json(ps);
    REQUIRE(show_m && show_s);
    const cJSON *tm = cJSON_GetObjectItem(show_m, "totals"), *ts = cJSON_GetObjectItem(show_s, "totals");
    CHECK(num(tm, "params") == num(ts, "params"));
    CHECK(num(tm, "flops_fwd") == num(ts, "flops_fwd"));
    if (torch2)
        CHECK(num(tm, "act_saved_bytes") < num(ts, "act_saved_bytes"));
    else
        CHECK(num(tm, "act_saved_bytes") == num(ts, "act_saved_bytes"));
    CHECK(num(tm, "tp_bytes") == num(ts, "tp_bytes") && num(ts, "tp_bytes") > 0);
    CHECK_EQ_INT(num(show_m, "n_modules"), num(show_s, "n_modules"));
    cJSON_Delete(show_m);
    cJSON_Delete(show_s);
    cJSON_Delete(m);
    cJSON_Delete(s);
    /* the cpu-local cluster uses the measured times (its gpu.name) */
    CHECK(SC("%s sim --model %s --cluster cpu-local --dp 1 --tp 1 --pp 1 --microbatches 1 "
             "--mbs 1 --schedule 1f1b",
             sc_test_bin(), pm) == 0);
}

/* What meta tensors cannot do: a value read in __init__ (built on the CPU,
 * moved to meta, tied weights kept tied), a data-dependent forward (traced
 * with one real CPU pass, with a warning). */
TEST(tracer_meta_fallbacks)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/vi.json", d);
    REQUIRE(SC(TRACER " tests/tracer/fixtures.py:value_in_init -o %s 2>&1", p) == 0);
    CHECK(!strstr(out, "warning"));
    check_accepted(p);
    cJSON *j = load(p);
    REQUIRE(j);
    const cJSON *xt = cJSON_GetObjectItem(j, "x-torch");
    CHECK(!strcmp(str(xt, "mode"), "shape"));
    CHECK(!strcmp(str(xt, "built"), "cpu then meta"));
    CHECK(num(xt, "params") == 1600);
    const cJSON *e = node_named(j, "emb"), *h = node_named(j, "head");
    REQUIRE(e && h);
    CHECK(num(e, "params") == 1600 && num(h, "params") == 0);
    CHECK(!strcmp(str(h, "shared"), "tied:emb.weight") && !strcmp(str(e, "shared"), str(h, "shared")));
    cJSON_Delete(j);

    snprintf(p, sizeof p, "%s/dd.json", d);
    REQUIRE(SC(TRACER " tests/tracer/fixtures.py:data_dependent -o %s 2>&1", p) == 0);
    CHECK_STR_HAS(out, "torch_trace.py: warning: shape-only tracing failed on meta tensors");
    CHECK_STR_HAS(out, "traced with one real forward pass on the CPU instead");
    CHECK_STR_HAS(out, "one real CPU pass");
    check_accepted(p);
    j = load(p);
    REQUIRE(j);
    xt = cJSON_GetObjectItem(j, "x-torch");
    CHECK(!strcmp(str(xt, "mode"), "cpu"));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(xt, "warnings")) == 1);
    const cJSON *lin = node_named(j, "lin");
    REQUIRE(lin);
    CHECK(num(lin, "flops_fwd") == 2.0 * 8 * 8);
    CHECK(!cJSON_GetObjectItem(lin, "measured"));
    cJSON_Delete(j);
}

/* Written whole, renamed into place, mode 0644 whatever the umask and
 * whatever mode a file it replaces had. */
/* The summary line counts in words that agree with the count: a one-leaf
 * model is "1 module (1 leaf)", not "1 modules (1 leaves)". */
TEST(tracer_summary_counts)
{
    if (!have_torch())
        return;
    REQUIRE(SC(TRACER " tests/tracer/fixtures.py:one_linear --seq 4 -o %s/one.json",
               sc_test_tmpdir()) == 0);
    CHECK_STR_HAS(out, "parameters (torch: 72), 1 module (1 leaf), ");
    CHECK_STR_HAS(out, "1 module with work stays replicated");
    REQUIRE(SC(TRACER " tests/tracer/fixtures.py:guessed --seq 4 -o %s/three.json",
               sc_test_tmpdir()) == 0);
    CHECK_STR_HAS(out, "4 modules (3 leaves), ");
}

TEST(tracer_file_mode_0644)
{
    if (!have_torch())
        return;
    char p[600];
    snprintf(p, sizeof p, "%s/mode.json", sc_test_tmpdir());
    REQUIRE(SC("touch %s && chmod 600 %s && umask 077 && " TRACER
               " tests/tracer/fixtures.py:guessed --seq 4 -o %s",
               p, p, p) == 0);
    struct stat st;
    REQUIRE(stat(p, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0644);
    CHECK(st.st_size > 100);
    /* no temporary file left beside it */
    CHECK(SC("ls -A %s | grep -c torch_trace", sc_test_tmpdir()) != 0);
}

TEST(tracer_bad_specs_exit2_nothing_written)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/bad.json", d);
    struct {
        const char *spec, *msg;
    } bad[] = {
        {"no_such_model_xyz", "unknown model 'no_such_model_xyz'"},
        {"resnet5", "unknown model 'resnet5' (did you mean resnet50?)"},
        {"tests/tracer/fixtures.py:raises", "forward failed: ValueError: this forward always fails"},
        {"tests/tracer/fixtures.py:not_a_module", "not an nn.Module"},
        {"tests/tracer/fixtures.py:nope", "no function 'nope' (it defines bert_like, concat_towers, conv_zoo, "},
        {"tests/tracer/fixtures.py:raise", "no function 'raise' (did you mean raises?)"},
        {"tests/tracer/missing.py:make", "no such file"},
        {"resnet50:bogus_arg=3", "cannot build 'resnet50:bogus_arg=3'"},
        {"fasterrcnn_resnet50_fpn", "not an image classifier"},
        /* one sample in train mode: the auxiliary head's BatchNorm sees 1x1 */
        {"inception_v3 --image 128",
         "a BatchNorm in train mode needs 2 or more samples: try --batch 2"},
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
        int rc = SC(TRACER " %s -o %s 2>&1 >/dev/null", bad[i].spec, p);
        if (rc != 2)
            sc_test_fail(__FILE__, __LINE__, "%s: exit %d: %.300s", bad[i].spec, rc, out);
        CHECK_STR_HAS(out, "torch_trace.py: ");
        CHECK_STR_HAS(out, bad[i].msg);
        CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* one line */
        CHECK(!sc_test_exists(p));
    }
    CHECK(SC(TRACER " resnet50 --dtype fp64 -o %s", p) == 2);
    CHECK_STR_HAS(out, "--dtype: unknown 'fp64'");
    CHECK(SC(TRACER " resnet50") == 2);
    CHECK_STR_HAS(out, "-o FILE is required");
    CHECK(!sc_test_exists(p));
    CHECK(SC(TRACER " --help") == 0);
    CHECK_STR_HAS(out, "FILE.py:FACTORY");
}

/* The tracer records the kernels each leaf's own code launched (the
 * dispatcher's GEMMs with their shapes, every other op a memory-bound
 * kernel of its bytes), with the tp splits of Megatron-LM's pattern; the
 * model loads (the loader checks the GEMMs' FLOPs against the leaf's) and
 * cost times them kernel by kernel; with inline attention the GEMMs of
 * q @ k^T and p @ v are counted too, and tp 2 about halves the compute. */
TEST(tracer_records_kernels)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    cJSON *j = trace_to("tests/tracer/gpt2.py:make:attn=inline --batch 2 --seq 1024", "g.json");
    REQUIRE(j);
    /* every leaf with work lists kernels; an attention leaf has its two
     * projections (column then row) and two batched products */
    int with = 0, attn_ok = 0, proj_ok = 0;
    static const cJSON *leaf[4096];
    int leaves = leaves_of(j, leaf, 4096);
    for (int i = 0; i < leaves; i++) {
        const cJSON *x = leaf[i];
        const cJSON *ks = cJSON_GetObjectItem(x, "kernels");
        if (num(x, "flops_fwd") > 0 || num(x, "params") > 0)
            with += cJSON_IsArray(ks);
        else
            with += 1;
        /* the attention's own products (q @ k^T, p @ v) on its #self leaf,
         * split by heads, run unfused over the keys of a self-attention,
         * beside the fused kernel that replaces them under --attn flash:
         * causal, for nanoGPT masks its scores with a tril buffer; its
         * projections column- then row-parallel */
        if (!strcmp(str(x, "kind"), "attention_core") && cJSON_IsArray(ks)) {
            int scores = 0, context = 0, flash = 0, passes = 0, other = 0;
            for (const cJSON *k = ks->child; k; k = k->next) {
                const char *tp = str(k, "tp"), *op = str(k, "op"), *at = str(k, "attn");
                const char *kv = str(k, "kv"), *per = str(k, "per");
                int heads = tp && !strcmp(tp, "batch") && num(k, "batch") == 12;
                int unf = !strcmp(at, "unfused");
                if (!strcmp(op, "gemm") && heads && unf && !strcmp(kv, "n") &&
                    num(k, "m") == 1024 && num(k, "n") == 1024 && num(k, "k") == 64)
                    scores++;
                else if (!strcmp(op, "gemm") && heads && unf && !strcmp(kv, "k") &&
                         num(k, "n") == 64 && num(k, "k") == 1024)
                    context++;
                else if (!strcmp(op, "flash") && heads && num(k, "m") == 1024 &&
                         num(k, "n") == 1024 && num(k, "k") == 64 &&
                         cJSON_IsTrue(cJSON_GetObjectItem(k, "causal")))
                    flash++;
                else if (!strcmp(op, "mem") && unf && !strcmp(per, "scores") &&
                         num(k, "bytes") == 2 * 2 * 12 * 1024.0 * 1024)
                    passes++; /* scale, mask, softmax: bf16 in and out */
                else
                    other += !strcmp(op, "mem") && !*at; /* the mask's own comparison */
            }
            attn_ok += scores == 1 && context == 1 && flash == 1 && passes == 3 && other == 1;
        }
        const char *nm = str(x, "name");
        size_t ln = nm ? strlen(nm) : 0;
        const size_t sl = strlen(".attn.c_attn"); /* as long as ".attn.c_proj" */
        const char *want = ln > sl && !strcmp(nm + ln - sl, ".attn.c_attn")   ? "n"
                           : ln > sl && !strcmp(nm + ln - sl, ".attn.c_proj") ? "k"
                                                                               : NULL;
        if (want && cJSON_IsArray(ks)) {
            const char *tp = str(ks->child, "tp");
            proj_ok += tp && !strcmp(tp, want);
        }
    }
    CHECK(leaves > 100);
    CHECK_EQ_INT(with, leaves);
    CHECK_EQ_INT(attn_ok, 12);
    CHECK_EQ_INT(proj_ok, 24);
    /* dropout as CUDA runs it: one native_dropout kernel that reads the
     * input and writes the output and a bool mask, 2·2 + 1 bytes an element
     * each way, and the bool mask kept, where aten's dropout off CUDA runs
     * bernoulli_, div_ and mul and keeps a float mask (these were 12 and 2
     * bytes an element); so a traced layer keeps what Korthikanti et al.
     * give a Megatron layer, s·h·(34 + 5·a·s/h) bytes, within 1% (16% over) */
    const cJSON *ad = node_named(j, "transformer.h.0.attn.attn_dropout");
    REQUIRE(ad);
    const cJSON *nd = kernel_named(ad, "native_dropout");
    REQUIRE(nd && cJSON_GetArraySize(cJSON_GetObjectItem(ad, "kernels")) == 2);
    CHECK(num(nd, "bytes") == 5 * 12 * G_S * G_S && num(nd, "bwd_bytes") == num(nd, "bytes"));
    CHECK(num(ad, "act_saved_bytes") == 12 * G_S * G_S);
    /* that dropout is a module of its own beside the core, over its scores:
     * part of the unfused core (re-run by selective recompute, its mask
     * dropped), and nothing under --attn flash, which runs it inside the
     * fused kernel (it was priced and kept under either) */
    CHECK(!strcmp(str(nd, "attn"), "unfused") && !strcmp(str(nd, "per"), "scores"));
    const cJSON *inf = kernel_named(ad, "in_flash");
    CHECK(inf && !strcmp(str(inf, "attn"), "flash") && num(inf, "bytes") == 0);
    CHECK(num(ad, "act_scores_bytes") == num(ad, "act_saved_bytes"));
    /* the dropouts after the projections are no part of it */
    const cJSON *rd = node_named(j, "transformer.h.0.attn.resid_dropout");
    CHECK(rd && !kernel_named(rd, "in_flash") && !cJSON_GetObjectItem(rd, "act_scores_bytes"));
    double layer = 0;
    for (int i = 0; i < leaves; i++)
        if (!strncmp(str(leaf[i], "name"), "transformer.h.0.", 16))
            layer += num(leaf[i], "act_saved_bytes");
    CHECK_NEAR(layer / (G_S * G_H * (34 + 5 * 12 * G_S / G_H)), 1, 0.01);
    cJSON_Delete(j);
    /* it loads and is timed kernel by kernel; tp 2 about halves the compute */
    REQUIRE(SC("%s cost --model %s/g.json --cluster dgx-a100-80g --kernels --json", sc_test_bin(),
               d) == 0);
    CHECK_STR_HAS(out, "\"kernels\":");
    double f1 = 0, f2 = 0;
    REQUIRE(SC("%s cost --model %s/g.json --cluster dgx-a100-80g --json", sc_test_bin(), d) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    f1 = num(cJSON_GetObjectItem(j, "totals"), "fwd_s");
    cJSON_Delete(j);
    REQUIRE(SC("%s cost --model %s/g.json --cluster dgx-a100-80g --tp 2 --json", sc_test_bin(),
               d) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    f2 = num(cJSON_GetObjectItem(j, "totals"), "fwd_s");
    cJSON_Delete(j);
    CHECK(f1 > 0 && f2 < 0.7 * f1 && f2 > 0.45 * f1);
    /* selective recompute re-runs the core attention it stops keeping: the
     * scores' memory saved, their kernels' forward paid; the fused kernel
     * keeps no scores, is faster, and its forward is what selective re-runs
     * (the recompute cost 0 and the fused kernel was not offered before) */
    double comp[2][2], rec[2][2], mem[2][2];
    static const char *const attn[2] = {"unfused", "flash"}, *const rc[2] = {"none", "selective"};
    for (int a = 0; a < 2; a++)
        for (int r = 0; r < 2; r++) {
            REQUIRE(SC("%s sim --model %s/g.json --cluster dgx-a100-80g --nodes 1 --microbatches 1 "
                       "--attn %s --recompute %s --json",
                       sc_test_bin(), d, attn[a], rc[r]) == 0);
            j = cJSON_Parse(out);
            REQUIRE(j);
            comp[a][r] = breakdown(j, "compute_s");
            rec[a][r] = breakdown(j, "recompute_s");
            const cJSON *pk = cJSON_GetObjectItem(j, "peak_mem_bytes");
            mem[a][r] = cJSON_GetArrayItem(pk, 0)->valuedouble;
            cJSON_Delete(j);
        }
    CHECK(rec[0][0] == 0 && rec[1][0] == 0);
    CHECK(rec[0][1] > 0.05 * comp[0][0] && rec[0][1] < 0.2 * comp[0][0]);
    CHECK(rec[1][1] > 0 && rec[1][1] < 0.5 * rec[0][1]);
    CHECK(comp[1][0] < 0.9 * comp[0][0]);
    CHECK(mem[0][1] < mem[0][0] && mem[1][0] == mem[0][1] && mem[1][1] == mem[1][0]);
}

/* A convolution is recorded as the implicit GEMM it runs (output pixels x
 * output channels x input channels * kernel size): every leaf of a ResNet
 * with work lists kernels, each conv leaf one "conv" GEMM whose FLOPs are
 * the leaf's, and the model is timed kernel by kernel. */
TEST(tracer_conv_kernels)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    cJSON *j = trace_to("resnet18 --batch 2 --image 64", "r18.json");
    REQUIRE(j);
    int with = 0, convs = 0, conv_ok = 0;
    static const cJSON *leaf[4096];
    int leaves = leaves_of(j, leaf, 4096);
    for (int i = 0; i < leaves; i++) {
        const cJSON *x = leaf[i];
        const cJSON *ks = cJSON_GetObjectItem(x, "kernels");
        with += cJSON_IsArray(ks) || !(num(x, "flops_fwd") > 0);
        const char *nm = str(x, "name");
        if (nm && strstr(nm, "conv") && !strstr(nm, "downsample")) {
            convs++;
            const cJSON *k = cJSON_IsArray(ks) ? ks->child : NULL;
            double fl = k ? 2 * num(k, "m") * num(k, "n") * num(k, "k") : 0;
            conv_ok += k && !strcmp(str(k, "name"), "conv") && !strcmp(str(k, "op"), "gemm") &&
                       !k->next && fabs(fl - num(x, "flops_fwd")) <= 1e-6 * fl;
        }
    }
    cJSON_Delete(j);
    CHECK(leaves > 40);
    CHECK_EQ_INT(with, leaves);
    CHECK_EQ_INT(convs, 17); /* conv1 and two per basic block */
    CHECK_EQ_INT(conv_ok, convs);
    REQUIRE(SC("%s cost --model %s/r18.json --cluster dgx-a100-80g --kernels", sc_test_bin(),
               d) == 0);
    CHECK_STR_HAS(out, "[gemm conv]");
}

/* Grouped and transposed convolutions are GEMMs too (tests/tracer/fixtures.py
 * conv_zoo, 8x8 images): a grouped one is one GEMM per group (batch = groups,
 * output pixels x Cout/g x Cin/g * kernel), a transposed one the data-gradient
 * GEMM of the convolution it inverts (input pixels x Cout/g * kernel x
 * Cin/g); a depthwise one is a stencil: one memory-bound kernel that counts
 * the leaf's FLOPs (2 x output pixels x channels x kernel size) beside its
 * bytes. Every leaf of ResNeXt-50 (grouped 3x3 convolutions) gets a kernel
 * list. */
TEST(tracer_grouped_transposed_conv_kernels)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    cJSON *j = trace_to("tests/tracer/fixtures.py:conv_zoo --batch 2 --image 8", "zoo.json");
    REQUIRE(j);
    /* name, kernel name, batch, m, n, k */
    static const struct { const char *leaf, *kernel; double batch, m, n, k; } want[] = {
        {"grouped", "conv_grouped", 4, 64, 4, 18},      /* 8 -> 16 channels, 3x3, 4 groups */
        {"up", "conv_transpose", 1, 64, 32, 16},        /* 16 -> 8, 2x2 stride 2 */
        {"up_grouped", "conv_transpose", 2, 256, 36, 4} /* 8 -> 8, 3x3, 2 groups */
    };
    int seen = 0, depthwise = 0;
    const cJSON *kids = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "root"), "children");
    for (const cJSON *x = kids ? kids->child : NULL; x; x = x->next) {
        const cJSON *ks = cJSON_GetObjectItem(x, "kernels");
        if (!strcmp(str(x, "name"), "depthwise")) {
            /* 8 channels of 16x16 (after the 2x upsampling), 3x3: 2·8·256·9 */
            const cJSON *k = cJSON_IsArray(ks) ? ks->child : NULL;
            REQUIRE(k && !k->next);
            depthwise = !strcmp(str(k, "name"), "conv_depthwise") &&
                        !strcmp(str(k, "op"), "mem") && num(k, "flops") == 2.0 * 8 * 256 * 9 &&
                        num(x, "flops_fwd") == num(k, "flops") &&
                        /* its input, output and weights (bf16, the trace's default) */
                        num(k, "bytes") == 2.0 * (2 * 8 * 256 + 8 * 9 / 2.0);
            continue;
        }
        for (size_t i = 0; i < SC_ARRAY_LEN(want); i++) {
            if (strcmp(str(x, "name"), want[i].leaf))
                continue;
            const cJSON *k = cJSON_IsArray(ks) ? ks->child : NULL;
            REQUIRE(k && !k->next);
            double b = cJSON_GetObjectItem(k, "batch") ? num(k, "batch") : 1;
            CHECK(!strcmp(str(k, "name"), want[i].kernel) && !strcmp(str(k, "op"), "gemm"));
            CHECK(b == want[i].batch && num(k, "m") == want[i].m && num(k, "n") == want[i].n &&
                  num(k, "k") == want[i].k);
            CHECK(fabs(2 * b * num(k, "m") * num(k, "n") * num(k, "k") - num(x, "flops_fwd")) <=
                  1e-9 * num(x, "flops_fwd"));
            seen++;
        }
    }
    cJSON_Delete(j);
    CHECK_EQ_INT(seen, 3);
    CHECK(depthwise);
    REQUIRE(SC("%s cost --model %s/zoo.json --cluster dgx-a100-80g --kernels", sc_test_bin(),
               d) == 0);
    CHECK_STR_HAS(out, "[gemm conv_grouped]");
    CHECK_STR_HAS(out, "[gemm conv_transpose]");
    CHECK_STR_HAS(out, "[mem conv_depthwise]");

    j = trace_to("resnext50_32x4d --batch 2 --image 64", "rx.json");
    REQUIRE(j);
    static const cJSON *leaf[4096];
    int leaves = leaves_of(j, leaf, 4096), with = 0, grouped = 0;
    for (int i = 0; i < leaves; i++) {
        const cJSON *ks = cJSON_GetObjectItem(leaf[i], "kernels");
        with += cJSON_IsArray(ks) || !(num(leaf[i], "flops_fwd") > 0);
        grouped += cJSON_IsArray(ks) && ks->child && !strcmp(str(ks->child, "name"), "conv_grouped");
    }
    cJSON_Delete(j);
    CHECK(leaves > 100);
    CHECK_EQ_INT(with, leaves);
    CHECK_EQ_INT(grouped, 16); /* the 3x3 convolution of each of the 16 bottlenecks */
}

/* An einsum reaches the dispatcher as the products it decomposes into (bmm
 * on Debian's torch 1.13), so a leaf written with einsums gets GEMM kernels
 * like one written with matmuls: a projection by a parameter ("bsh,hk->bsk",
 * a linear GEMM over the tokens) and attention-like scores between two
 * activations ("bqd,bkd->bqk", batched over the samples). */
TEST(tracer_einsum_kernels)
{
    if (!have_torch())
        return;
    cJSON *j = trace_to("tests/tracer/fixtures.py:einsum_net --batch 2 --seq 16", "ein.json");
    REQUIRE(j);
    const cJSON *kids = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "root"), "children");
    int seen = 0;
    for (const cJSON *x = kids ? kids->child : NULL; x; x = x->next) {
        const cJSON *ks = cJSON_GetObjectItem(x, "kernels");
        const cJSON *k = cJSON_IsArray(ks) ? ks->child : NULL;
        REQUIRE(k && !k->next && !strcmp(str(k, "op"), "gemm"));
        double fl = 2 * (cJSON_GetObjectItem(k, "batch") ? num(k, "batch") : 1) * num(k, "m") *
                    num(k, "n") * num(k, "k");
        CHECK(fabs(fl - num(x, "flops_fwd")) <= 1e-9 * fl);
        if (!strcmp(str(x, "name"), "proj")) { /* 16 tokens x 64 outputs x 32 inputs */
            CHECK(!strcmp(str(k, "name"), "linear"));
            CHECK(num(k, "m") == 16 && num(k, "n") == 64 && num(k, "k") == 32);
            seen++;
        } else if (!strcmp(str(x, "name"), "scores")) { /* per sample: 16 x 16 over 32 */
            CHECK(!strcmp(str(k, "name"), "matmul"));
            CHECK(num(k, "batch") == 1 && num(k, "m") == 16 && num(k, "n") == 16 &&
                  num(k, "k") == 32);
            seen++;
        }
    }
    cJSON_Delete(j);
    CHECK_EQ_INT(seen, 2);
}

/* A model file's trace is the same in every run but for the time it took:
 * its classes are shown as the file's (tiny_gpt.TinyGPT); they carried the
 * tracer's process id (torch_trace_user_26972.TinyGPT), so two traces of one
 * model never compared equal. */
TEST(tracer_same_trace_twice)
{
    if (!have_torch())
        return;
    cJSON *a = trace_to("tests/tracer/tiny_gpt.py:make --seq 32", "a.json");
    cJSON *b = trace_to("tests/tracer/tiny_gpt.py:make --seq 32", "b.json");
    REQUIRE(a && b);
    CHECK(!strcmp(str(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "root"), "x-torch"), "class"),
                  "tiny_gpt.TinyGPT"));
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(a, "x-torch"), "trace_s");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(b, "x-torch"), "trace_s");
    CHECK(cJSON_Compare(a, b, 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* Hugging Face's BERT and ViT split a layer across modules: q, k, v and the
 * core in one (with the head count), the out projection in the next
 * (BertSelfOutput), the MLP's two linears in two (BertIntermediate,
 * BertOutput). Each is recognised as Megatron shards it; the whole layer
 * stayed replicated under tp (transformers 5.25's BertForMaskedLM: "16
 * modules with work stay replicated"). s 16, h 64, 4 heads, f 256. */
TEST(tracer_split_layer_bert_like)
{
    if (!have_torch())
        return;
    cJSON *raw = trace_to("tests/tracer/fixtures.py:bert_like --seq 16", "bert.json");
    REQUIRE(raw);
    CHECK_STR_HAS(out, "2 attention, 2 mlp, 1 embedding, 1 head sharded; every module with work "
                       "has tp data");
    double s = 16, h = 64, f = 256;
    const cJSON *at = node_named(raw, "layer.0.attention.self");
    const cJSON *core = node_named(raw, "layer.0.attention.self#self");
    const cJSON *q = node_named(raw, "layer.0.attention.self.query");
    const cJSON *o = node_named(raw, "layer.0.attention.output.dense");
    const cJSON *ln = node_named(raw, "layer.0.attention.output.LayerNorm");
    const cJSON *up = node_named(raw, "layer.0.intermediate.dense");
    const cJSON *act = node_named(raw, "layer.0.intermediate.intermediate_act_fn");
    const cJSON *down = node_named(raw, "layer.0.output.dense");
    REQUIRE(at && core && q && o && ln && up && act && down);
    CHECK(!strcmp(str(at, "kind"), "attention") && dim(at, "heads") == 4 && dim(at, "kv") == 16 &&
          dim(at, "seq") == s);
    CHECK(!strcmp(str(core, "kind"), "attention_core") && offers_flash(core, 1, 0));
    CHECK(tp_shardable(q) && tp_bytes(q) == 0);
    CHECK(tp_shardable(core) && tp_bytes(core) == 0);
    CHECK(tp_shardable(o) && tp_bytes(o) == 2 * s * h);
    CHECK(!tp_shardable(ln) && tp_bytes(ln) == 0);
    CHECK(tp_shardable(up) && tp_bytes(up) == 0 && dim(up, "ffn") == f);
    CHECK(tp_shardable(act) && tp_bytes(act) == 0);
    CHECK(tp_shardable(down) && tp_bytes(down) == 2 * s * h);
    int leaves = 0;
    CHECK_EQ_INT(leaves_with(raw, "tp", &leaves), leaves);
    cJSON_Delete(raw);
}
