/* test_tracer.c - traces/torch_trace.py: real PyTorch models (torchvision
 * resnet50 and vit_b_16 with random weights, a tied-embedding GPT built from
 * torch.nn parts in tests/tracer/tiny_gpt.py) traced into stagecraft.model/1,
 * loaded by `stagecraft model show`, planned, and bad specs rejected.
 *
 * Needs Debian's /usr/bin/python3 with python3-torch and python3-torchvision
 * (scripts/deps.sh --notebooks); without them every test prints a note and
 * skips. */
#include "check.h"
#include "json.h"

#include <stdlib.h>

static char out[1 << 16];
#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)
#define TRACER "/usr/bin/python3 traces/torch_trace.py"

static int have_torch(void)
{
    static int cached = -1;
    if (cached < 0) {
        char buf[512];
        cached = sc_test_sh(buf, sizeof buf,
                            "/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null") == 0;
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

/* Traces spec into dir/file, loads it, checks the parameter total against
 * torch's own count (x-torch.params) and that a 2-stage plan succeeds. */
static cJSON *trace_and_check(const char *spec, const char *opts, const char *file)
{
    const char *d = sc_test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/%s", d, file);
    if (SC(TRACER " %s %s --repeat 1 -o %s", spec, opts, path) != 0) {
        sc_test_fail(__FILE__, __LINE__, "tracing %s: %.400s", spec, out);
        return NULL;
    }
    CHECK_STR_HAS(out, "parameters (torch: ");
    cJSON *raw = NULL;
    sc_error err;
    if (sc_json_load(path, &raw, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s: not JSON", path);
        return NULL;
    }
    double torch_params = num(cJSON_GetObjectItem(raw, "x-torch"), "params");
    cJSON_Delete(raw);
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
    /* depth-1 table */
    CHECK(SC("%s model show %s/r50.json --depth 1", sc_test_bin(), sc_test_tmpdir()) == 0);
    CHECK_STR_HAS(out, "total: 25.56M params");
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

TEST(tracer_transformer_and_dataflow)
{
    if (!have_torch())
        return;
    const char *d = sc_test_tmpdir();
    /* nn.Transformer: every decoder cross-attention reads the encoder */
    REQUIRE(SC(TRACER " transformer:d_model=64,nhead=4,num_encoder_layers=2,"
               "num_decoder_layers=2,dim_feedforward=128 --seq 16 --repeat 1 -o %s/t.json",
               d) == 0);
    char p[600];
    snprintf(p, sizeof p, "%s/t.json", d);
    cJSON *s = show_json(p);
    REQUIRE(s);
    const cJSON *x = module_named(s, "decoder.layers.1.multihead_attn");
    REQUIRE(x);
    CHECK(!strcmp(cJSON_GetObjectItem(x, "kind")->valuestring, "cross_attention"));
    const cJSON *in = cJSON_GetObjectItem(x, "inputs");
    CHECK(in && !strcmp(cJSON_GetArrayItem(in, 0)->valuestring, "encoder"));
    cJSON_Delete(s);
    /* a module consuming two earlier siblings records the non-adjacent one */
    REQUIRE(SC(TRACER " tests/tracer/fixtures.py:two_tower --repeat 1 -o %s/tt.json", d) == 0);
    snprintf(p, sizeof p, "%s/tt.json", d);
    s = show_json(p);
    REQUIRE(s);
    x = module_named(s, "fuse");
    REQUIRE(x);
    in = cJSON_GetObjectItem(x, "inputs");
    CHECK(in && cJSON_GetArraySize(in) == 1 &&
          !strcmp(cJSON_GetArrayItem(in, 0)->valuestring, "enc_a"));
    cJSON_Delete(s);
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
        {"tests/tracer/fixtures.py:raises", "forward failed: ValueError: this forward always fails"},
        {"tests/tracer/fixtures.py:not_a_module", "not an nn.Module"},
        {"tests/tracer/fixtures.py:nope", "no function 'nope'"},
        {"tests/tracer/missing.py:make", "no such file"},
        {"resnet50:bogus_arg=3", "cannot build 'resnet50:bogus_arg=3'"},
        {"fasterrcnn_resnet50_fpn", "not an image classifier"},
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
        int rc = SC(TRACER " %s --repeat 1 -o %s 2>&1 >/dev/null", bad[i].spec, p);
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
