/* test_fp8.c - fp8 training as Transformer Engine runs it (a plan's fp8):
 * which kernels run in fp8, their prices with their casts, the presets' fp8
 * GEMM ceilings against the public table they come from, the plan key, and
 * what refuses it (a GPU without fp8, a 32-bit model, the executor, the
 * DeepSpeed and torch exports). */
#include <math.h>

#include "check.h"
#include "cost.h"
#include "model.h"
#include "plan.h"

static char out[1 << 16];
#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

static sc_cluster preset(const char *name)
{
    sc_cluster c;
    memset(&c, 0, sizeof c);
    sc_cluster_preset_get(name, &c, NULL);
    return c;
}

static const sc_module *leaf(const sc_model *m, const char *name)
{
    for (int i = 0; i < m->n_leaves; i++)
        if (!strcmp(m->leaves[i]->name, name))
            return m->leaves[i];
    return NULL;
}

/* Each weight GEMM of an attention or MLP leaf runs in fp8 at the fp8 peak
 * and eff_max_fp8, plus one cast kernel a pass: forward the input's cast and
 * transpose (4 bytes an element; 2, a transpose alone, for the GEMM reading
 * the leaf's input, on the rank's 1/t of the tokens under sp when column-
 * parallel), backward the output gradient's (4 bytes an element). The fused
 * attention, the norms and the LM head keep their 16-bit prices. */
TEST(fp8_gemms_priced_with_their_casts)
{
    sc_cluster c = preset("dgx-h100");
    REQUIRE(c.eff.gemm.eff_max_fp8 > 0);
    sc_model *m = NULL;
    sc_error err = {0};
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    const int tp = 2;
    sc_compute_cfg c16 = {SC_BF16, tp, 1, 2, SC_ATTN_FLASH, 0, 0, 0, 0, 0};
    sc_compute_cfg c8 = c16;
    c8.fp8 = 1;
    double bf = c.eff.bwd_factor > 0 ? c.eff.bwd_factor : 1;
    const char *const names[] = {"blocks.0.attn", "blocks.0.mlp"};
    int gemms = 0;
    for (size_t l = 0; l < SC_ARRAY_LEN(names); l++) {
        const sc_module *x = leaf(m, names[l]);
        REQUIRE(x && x->n_kernels > 0);
        double f8 = 0, b8 = 0, f16 = 0, b16 = 0;
        for (int i = 0; i < x->n_kernels; i++) {
            const sc_kernel *k = &x->kernels[i];
            if (!sc_kernel_runs(k, c8.attn))
                continue;
            double f = sc_cost_kernel_time_in(&c, x, i, &c8, 0);
            double b = sc_cost_kernel_time_in(&c, x, i, &c8, 1);
            f8 += f;
            b8 += b;
            f16 += sc_cost_kernel_time_in(&c, x, i, &c16, 0);
            b16 += sc_cost_kernel_time_in(&c, x, i, &c16, 1);
            CHECK(!sc_cost_fp8_gemm(x, k, &c16));
            if (k->op != SC_KOP_GEMM) {
                CHECK(!sc_cost_fp8_gemm(x, k, &c8));
                CHECK_NEAR(f, sc_cost_kernel_time_in(&c, x, i, &c16, 0), 1e-15);
                CHECK_NEAR(b, sc_cost_kernel_time_in(&c, x, i, &c16, 1), 1e-15);
                continue;
            }
            CHECK(sc_cost_fp8_gemm(x, k, &c8));
            gemms++;
            double B, M, N, K;
            sc_cost_kernel_shape(k, &c8, &B, &M, &N, &K);
            /* these shapes are compute-bound: the fp8 GEMM's time is the
             * model's fp8 GEMM whatever its output's width */
            int lead = i == 0;
            double rows = k->tp == SC_KTP_N ? ceil(M / tp) : M; /* sp: cast before the gather */
            double want_f = sc_cost_gemm_time(&c, SC_FP8, B, M, N, K, 1) +
                            sc_cost_pass_time(&c, (lead ? 2 : 4) * B * rows * K);
            double want_b = sc_cost_gemm_time(&c, SC_FP8, B, M, K, N, bf) +
                            sc_cost_gemm_time(&c, SC_FP8, B, K, N, M, bf) +
                            sc_cost_pass_time(&c, 4 * B * M * N);
            if (!(fabs(f - want_f) <= 1e-12 * want_f) || !(fabs(b - want_b) <= 1e-12 * want_b))
                sc_test_fail(__FILE__, __LINE__, "%s[%s]: %g, %g s; want %g, %g", x->name,
                             k->name, f, b, want_f, want_b);
        }
        /* the leaf's sums are its kernels' (no tp overlap here) */
        double lf, lb;
        sc_cost_kernels_time(&c, x, &c8, &lf, &lb, NULL);
        CHECK_NEAR(lf, f8, 1e-12 * f8);
        CHECK_NEAR(lb, b8, 1e-12 * b8);
        /* faster than 16 bits, but not the peaks' 2x: casts, flash, norms */
        if (!(f8 < 0.9 * f16 && f8 > 0.5 * f16 && b8 < 0.9 * b16 && b8 > 0.5 * b16))
            sc_test_fail(__FILE__, __LINE__, "%s: fp8 %g + %g s against 16 bits %g + %g s",
                         x->name, f8, b8, f16, b16);
    }
    CHECK_EQ_INT(gemms, 4); /* qkv, out_proj, fc1, fc2 */
    /* the LM head is Megatron's own ColumnParallelLinear: 16 bits */
    const sc_module *head = NULL;
    for (int i = 0; i < m->n_leaves && !head; i++)
        for (int k = 0; k < m->leaves[i]->n_kernels; k++)
            if (!strcmp(m->leaves[i]->kernels[k].name, "logits"))
                head = m->leaves[i];
    REQUIRE(head);
    for (int k = 0; k < head->n_kernels; k++)
        CHECK(!sc_cost_fp8_gemm(head, &head->kernels[k], &c8));
    sc_model_free(m);
}

/* The presets' fp8 ceilings: their 16-bit eff_max times one GPU's FP8 over
 * BF16 MAMF efficiency in one table (S. Bekman, ml-engineering,
 * compute/accelerator/README.md: H100 SXM 1402.6 / 1978.9 against 794.5 /
 * 989.4; GH200 1535.0 against 828.6 for the H200 preset); no fp8 on A100. */
TEST(fp8_preset_ceilings_from_the_public_ratio)
{
    struct {
        const char *preset;
        double fp8, bf16;
    } pts[] = {{"dgx-h100", 1402.6, 794.5}, {"p5.48xlarge", 1402.6, 794.5},
               {"h200-sxm-1", 1535.0, 828.6}};
    for (size_t i = 0; i < SC_ARRAY_LEN(pts); i++) {
        sc_cluster c = preset(pts[i].preset);
        double want = (pts[i].fp8 / 1978.9) / (pts[i].bf16 / 989.4);
        CHECK_NEAR(c.eff.gemm.eff_max_fp8 / c.eff.gemm.eff_max, want, 2e-4);
        CHECK(c.gpu.peak_flops[SC_FP8] > 1.9e15);
    }
    sc_cluster a = preset("dgx-a100-80g");
    CHECK(a.eff.gemm.eff_max_fp8 == 0 && a.gpu.peak_flops[SC_FP8] == 0);
    /* a cluster file keeps it, and refuses it out of range naming the key */
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s cluster show dgx-h100 -o %s/h.json", sc_test_bin(), d) == 0);
    REQUIRE(SC("grep -c '\"eff_max_fp8\":[[:space:]]*0.7548' %s/h.json", d) == 0);
    REQUIRE(SC("sed 's/\"eff_max_fp8\":[[:space:]]*0.7548/\"eff_max_fp8\": 1.5/' %s/h.json "
               "> %s/bad.json",
               d, d) == 0);
    CHECK(SC("%s cluster show %s/bad.json", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "bad.json");
    CHECK_STR_HAS(out, "efficiency.gemm.eff_max_fp8");
}

/* sim --fp8 writes the plan key, sim --plan replays it (the same step), and
 * the step is faster than the same plan in 16 bits. */
TEST(fp8_plan_key_roundtrip)
{
    const char *d = sc_test_tmpdir();
    const char *lay = "--model gpt-1.3b --cluster dgx-h100 --nodes 1 --tp 2 --sp --pp 2 --dp 2 "
                      "--microbatches 4 --attn flash";
    REQUIRE(SC("%s sim %s --fp8 -o %s/p8.json --json", sc_test_bin(), lay, d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    double t8 = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "step_time_s"));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "fp8")));
    cJSON_Delete(j);
    REQUIRE(SC("%s sim %s -o %s/p16.json --json", sc_test_bin(), lay, d) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    double t16 = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "step_time_s"));
    CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "fp8"));
    cJSON_Delete(j);
    CHECK(t8 < t16);
    char path[600];
    snprintf(path, sizeof path, "%s/p8.json", d);
    sc_plan *p = NULL;
    sc_error err = {0};
    REQUIRE(sc_plan_load(path, &p, &err) == SC_OK);
    CHECK(p->fp8 == 1);
    sc_plan_free(p);
    snprintf(path, sizeof path, "%s/p16.json", d);
    REQUIRE(sc_plan_load(path, &p, &err) == SC_OK);
    CHECK(p->fp8 == 0);
    sc_plan_free(p);
    CHECK(SC("grep -c '\"fp8\"' %s/p16.json", d) == 1); /* absent: written only when true */
    /* replayed: the same step; the 16-bit plan with --fp8: the fp8 step */
    REQUIRE(SC("%s sim --plan %s/p8.json --json", sc_test_bin(), d) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "step_time_s")), t8, 1e-9 * t8);
    cJSON_Delete(j);
    REQUIRE(SC("%s sim --plan %s/p16.json --fp8 --json", sc_test_bin(), d) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "step_time_s")), t8, 1e-9 * t8);
    cJSON_Delete(j);
    /* a tampered key is refused naming the file and the key */
    REQUIRE(SC("sed 's/\"fp8\":[[:space:]]*true/\"fp8\": 3/' %s/p8.json > %s/bad.json", d, d) ==
            0);
    CHECK(SC("%s sim --plan %s/bad.json", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "bad.json");
    CHECK_STR_HAS(out, "fp8");
    /* plan and tune take it and say so */
    REQUIRE(SC("%s plan --model gpt-1.3b --cluster dgx-h100 --nodes 1 --global-batch 16 "
               "--attn flash --fp8 --top 3",
               sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "fp8 GEMMs in the attention and MLP layers (--fp8)");
    REQUIRE(SC("%s tune --model gpt-1.3b --cluster dgx-h100 --nodes 1 --dp 8 --tp 1 --pp 1 "
               "--global-batch 64 --fp8 --json",
               sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "\"fp8\":\ttrue");
}

/* What cannot run fp8 says so in one line and exits 2, writing nothing. */
TEST(fp8_refused_where_it_cannot_run)
{
    const char *d = sc_test_tmpdir();
    CHECK(SC("%s sim --model gpt-1.3b --cluster dgx-a100-80g --microbatches 1 --fp8",
             sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "fp8 training needs fp8 tensor cores; dgx-a100-80g's A100-SXM4-80GB");
    CHECK(SC("%s cost --model gpt-1.3b --cluster p4d.24xlarge --fp8", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "fp8 tensor cores");
    REQUIRE(SC("%s model gen gpt-1.3b --dtype fp32 -o %s/g32.json", sc_test_bin(), d) == 0);
    CHECK(SC("%s sim --model %s/g32.json --cluster dgx-h100 --microbatches 1 --fp8 -o %s/no.json",
             sc_test_bin(), d, d) == 2);
    CHECK_STR_HAS(out, "fp8 training runs a bf16 or fp16 model's GEMMs in fp8; the model is fp32");
    CHECK(SC("test -e %s/no.json", d) != 0);
    /* the executor and the exports without Transformer Engine */
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster dgx-h100 --microbatches 1 --fp8 -o %s/p8.json",
               sc_test_bin(), d) == 0);
    /* refused with the executor's other plan settings, after MPI starts:
     * Open MPI's init leaks, so the sanitizer build's leak check is off (as
     * test_harden_plan.c's exec_refuses) */
    CHECK(SC("env ASAN_OPTIONS=detect_leaks=0 %s exec %s/p8.json --backend cpu", sc_test_bin(),
             d) == 2);
    CHECK_STR_HAS(out, "p8.json: fp8: the executor runs no fp8 GEMMs");
    const char *const to[] = {"deepspeed", "torch"};
    for (size_t i = 0; i < SC_ARRAY_LEN(to); i++) {
        CHECK(SC("%s export %s/p8.json --to %s -o %s/x_%s", sc_test_bin(), d, to[i], d, to[i]) ==
              2);
        CHECK_STR_HAS(out, "does not write fp8 training (the plan's fp8): only --to megatron");
        CHECK(SC("test -e %s/x_%s", d, to[i]) != 0);
    }
    /* Megatron-LM gets Transformer Engine's recipe */
    REQUIRE(SC("%s export %s/p8.json --to megatron -o %s/meg", sc_test_bin(), d, d) == 0);
    REQUIRE(SC("cat %s/meg/megatron_torchrun.sh", d) == 0);
    CHECK_STR_HAS(out, "--fp8-format hybrid");
    CHECK_STR_HAS(out, "--fp8-amax-history-len 1024");
    CHECK_STR_HAS(out, "--fp8-amax-compute-algo max");
    CHECK_STR_HAS(out, "--bf16");
    /* --framework deepspeed cannot plan it */
    CHECK(SC("%s plan --model gpt-1.3b --cluster dgx-h100 --nodes 1 --global-batch 16 --fp8 "
             "--framework deepspeed",
             sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "fp8 training");
}

/* A validation row's layout.fp8 is a boolean: anything else is refused
 * naming the file and the row's path; the shipped suite's FP8 rows load
 * with it set, and only those. */
TEST(fp8_validation_rows)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s validate --suite nvidia_dgxc2024 --json", sc_test_bin()) <= 1);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    int n8 = 0, n = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "rows"))
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(r, "id"));
        REQUIRE(id);
        int f = cJSON_IsTrue(cJSON_GetObjectItem(r, "fp8"));
        CHECK(f == (strstr(id, "-fp8-") != NULL));
        n8 += f;
        n++;
    }
    cJSON_Delete(j);
    CHECK_EQ_INT(n8, 6);
    CHECK_EQ_INT(n, 12);
    REQUIRE(SC("sed '0,/\"fp8\": true/s//\"fp8\": \"yes\"/' validation/nvidia_dgxc2024.json > "
               "%s/bad.json",
               d) == 0);
    CHECK(SC("%s validate --suite %s/bad.json", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "bad.json");
    CHECK_STR_HAS(out, ".layout");
    CHECK_STR_HAS(out, "fp8");
}
