/* test_slices.c - token-level microbatches (TeraPipe): the sliced
 * schedules, the closed form of their bubble, the per-slice costs, the
 * dynamic programme, plans that carry slices, and every refusal. (The
 * executor's run of sliced plans is tests/test_exec.c, exec_token_slices.) */
#include <math.h>

#include "check.h"
#include "cost.h"
#include "gen.h"
#include "json.h"
#include "plan.h"
#include "schedule.h"
#include "slices.h"
#include "step.h"

#define SH(...) sc_test_sh(out, sizeof out, __VA_ARGS__)
static char out[1 << 16];

/* Every sliced gpipe and 1f1b is well formed and deadlock-free, each
 * sequence's forwards run in slice order and its backwards in reverse. */
TEST(slices_schedules_check)
{
    const char *names[] = {"gpipe", "1f1b"};
    for (int ni = 0; ni < 2; ni++)
        for (int p = 1; p <= 6; p++)
            for (int m = 1; m <= 4; m++)
                for (int k = 2; k <= 5; k++) {
                    sc_sched *s = NULL;
                    sc_error err = {0};
                    REQUIRE(sc_sched_generate_sliced(names[ni], p, m, k, 1, &s, &err) == SC_OK);
                    CHECK(s->m == m * k && s->slices == k);
                    if (sc_sched_check(s, &err) != SC_OK)
                        sc_test_fail(__FILE__, __LINE__, "%s p%d m%d k%d: %s", names[ni], p, m,
                                     k, err.msg);
                    for (int r = 0; r < p; r++) {
                        int n, lastf = -1, lastb[64];
                        for (int i = 0; i < m; i++)
                            lastb[i] = k;
                        const sc_sched_op *o = sc_sched_rank_ops(s, r, &n);
                        for (int i = 0; i < n; i++) {
                            if (o[i].kind == SC_OP_F) {
                                CHECK(o[i].mb == lastf + 1);
                                lastf = o[i].mb;
                            } else if (o[i].kind == SC_OP_B) {
                                int mb = o[i].mb / k, j = o[i].mb % k;
                                CHECK(j == lastb[mb] - 1);
                                lastb[mb] = j;
                            }
                        }
                    }
                    sc_sched_free(s);
                }
    /* other schedules are refused, naming the flag */
    sc_sched *s = NULL;
    sc_error err = {0};
    CHECK(sc_sched_generate_sliced("interleaved", 4, 8, 2, 2, &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--slices");
}

/* With equal per-slice cost, sliced gpipe's and 1f1b's bubble is
 * (p-1)/(m·k + p - 1):
 * exactly on constant costs, and within 1% in the step simulator on a
 * cluster whose costs scale with the tokens (no per-kernel or per-call
 * fixed cost, no attention growth: leaves timed whole). */
TEST(slices_closed_form_bubble)
{
    for (int k = 1; k <= 8; k *= 2) {
        sc_sched *s = NULL;
        REQUIRE(sc_sched_generate_sliced("gpipe", 8, 2, k, 1, &s, NULL) == SC_OK);
        double t = 0, tf = 1.0 / k, tb = 2.0 / k;
        sc_sched_costs c = {tf, tb, 0, 0};
        REQUIRE(sc_sched_simulate(s, &c, &t, NULL) == SC_OK);
        CHECK_NEAR(t, (2.0 * k + 7) * (tf + tb), 1e-12);
        sc_sched_free(s);
    }
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("dgx-a100-80g", &c, NULL) == SC_OK);
    c.eff.gemm.sms = 0; /* leaves timed whole, scaled by their tokens */
    c.eff.op_overhead_s = 0;
    for (int d = 0; d < SC_DTYPE_N; d++)
        c.eff.f_half[d] = 0;
    c.eff.alpha_s[SC_LINK_INTRA] = 0;
    const char *names[] = {"layers", "hidden", "heads", "seq", "vocab"};
    double vals[] = {16, 8192, 64, 256, 8};
    sc_model *m;
    REQUIRE(sc_gen_run(sc_gen_find("gpt"), "g", SC_BF16, 5, names, vals, &m, NULL) == SC_OK);
    const char *scheds[] = {"gpipe", "1f1b"};
    for (int si = 0; si < 2; si++)
        for (int mb = 2; mb <= 4; mb += 2)
            for (int k = 1; k <= 8; k *= 2) {
                sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 8, .v = 1, .m = mb, .mbs = 1,
                                   .schedule = scheds[si], .slices = k};
                sc_step_result *r = NULL;
                sc_error err = {0};
                REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
                double busy = r->breakdown.compute + r->breakdown.pp;
                double bubble = r->breakdown.bubble / (r->breakdown.bubble + busy);
                CHECK_NEAR(bubble, 7.0 / ((double)mb * k + 7), 0.01);
                sc_step_result_free(r);
            }
    sc_model_free(m);
}

/* A slice's attention grows with its position; its GEMMs with its length. */
TEST(slices_costs_grow_with_position)
{
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("dgx-a100-80g", &c, NULL) == SC_OK);
    sc_model *m;
    REQUIRE(sc_model_open("gpt-1.3b", &m, NULL) == SC_OK);
    const sc_module *attn = sc_model_find(m, "blocks.0.attn"), *mlp = sc_model_find(m,
                                                                                  "blocks.0.mlp");
    REQUIRE(attn && mlp);
    sc_compute_cfg first = {SC_BF16, 1, 0, 1, SC_ATTN_FLASH, 0.25, 0.25, 0, 0};
    sc_compute_cfg last = {SC_BF16, 1, 0, 1, SC_ATTN_FLASH, 0.25, 1.0, 0, 0};
    double f1, b1, f4, b4;
    sc_cost_kernels_time(&c, attn, &first, &f1, &b1, NULL);
    sc_cost_kernels_time(&c, attn, &last, &f4, &b4, NULL);
    CHECK(f4 > f1 && b4 > b1);
    sc_cost_kernels_time(&c, mlp, &first, &f1, &b1, NULL);
    sc_cost_kernels_time(&c, mlp, &last, &f4, &b4, NULL);
    CHECK_NEAR(f4, f1, 1e-12); /* no keys in an MLP */
    /* the flash kernel of the last quarter runs q·kv - q²/2 query-key pairs */
    const sc_kernel *fk = NULL;
    for (int i = 0; i < attn->n_kernels; i++)
        if (attn->kernels[i].op == SC_KOP_FLASH)
            fk = &attn->kernels[i];
    REQUIRE(fk);
    sc_cluster big = c; /* compute-bound for sure */
    big.gpu.hbm_bytes_per_s = 1e30;
    big.eff.gemm.kernel_s = 0;
    double tw = sc_cost_kernel_time(&big, fk, &(sc_compute_cfg){SC_BF16, 1, 0, 1, SC_ATTN_FLASH,
                                                                 0, 0, 0, 0}, 0);
    double tl = sc_cost_kernel_time(&big, fk, &last, 0);
    double s = 2048, q = 512;
    CHECK_NEAR(tl / tw, (q * s - q * q / 2) / (s * s / 2), 1e-9);
    sc_model_free(m);
}

/* auto: never worse than the best equal slicing, and better when attention
 * dominates (sequence >= 4 x hidden). */
TEST(slices_auto_beats_equal)
{
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("dgx-a100-80g", &c, NULL) == SC_OK);
    const char *names[] = {"layers", "hidden", "heads", "seq", "vocab"};
    double vals[] = {8, 1024, 16, 8192, 1024};
    sc_model *m;
    REQUIRE(sc_gen_run(sc_gen_find("gpt"), "g", SC_BF16, 5, names, vals, &m, NULL) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 4, .v = 1, .m = 1, .mbs = 1, .schedule = "gpipe",
                       .attn = SC_ATTN_FLASH};
    sc_slicing sl;
    sc_error err = {0};
    REQUIRE(sc_slices_auto(m, &c, &cfg, &sl, &err) == SC_OK);
    CHECK(sl.k > 1 && !sl.equal);
    CHECK(sl.step_s < sl.equal_step_s * 0.99);
    int sum = 0, grows = 0;
    for (int j = 0; j < sl.k; j++) {
        sum += sl.len[j];
        grows += j > 0 && sl.len[j] > sl.len[j - 1];
    }
    CHECK(sum == 8192);
    CHECK(grows == 0); /* later slices see more keys: never longer */
    /* every equal slicing that divides the sequence simulates no faster */
    for (int k = 1; k <= 64; k *= 2) {
        sc_step_cfg e = cfg;
        e.slices = k;
        sc_step_result *r = NULL;
        REQUIRE(sc_step_simulate(m, &c, &e, &r, &err) == SC_OK);
        CHECK(r->step_time_s >= sl.step_s);
        sc_step_result_free(r);
    }
    sc_model_free(m);
}

/* sim --slices: a plan carries the lengths and replays them; bad counts,
 * lengths and models are refused with one line naming the flag or field. */
TEST(slices_cli_and_plan)
{
    const char *bin = sc_test_bin(), *d = sc_test_tmpdir();
    CHECK(SH("%s sim --model gpt-1.3b --cluster dgx-a100-80g --pp 8 --microbatches 1 "
             "--schedule gpipe --slices auto -o %s/p.json --json",
             bin, d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *sl = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "slices");
    CHECK(cJSON_IsArray(sl) && cJSON_GetArraySize(sl) > 1);
    double t1 = cJSON_GetObjectItem(j, "step_time_s")->valuedouble;
    cJSON_Delete(j);
    CHECK(SH("%s sim --plan %s/p.json --json", bin, d) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK_NEAR(cJSON_GetObjectItem(j, "step_time_s")->valuedouble, t1, 1e-12);
    cJSON_Delete(j);
    /* refusals */
    CHECK(SH("%s sim --model gpt-1.3b --cluster dgx-a100-80g --pp 8 --microbatches 1 "
             "--schedule gpipe --slices 3", bin) == 2);
    CHECK_STR_HAS(out, "--slices: 3 equal slices do not divide the sequence of 2048 tokens");
    CHECK(SH("%s sim --model gpt-1.3b --cluster dgx-a100-80g --pp 8 --v 2 --microbatches 8 "
             "--schedule interleaved --slices 2", bin) == 2);
    CHECK_STR_HAS(out, "--slices: token slices run with gpipe or 1f1b");
    CHECK(SH("%s sim --model vit-huge --cluster dgx-a100-80g --pp 4 --microbatches 1 "
             "--schedule gpipe --slices 2", bin) == 2);
    CHECK_STR_HAS(out, "token slices need a causal decoder");
    CHECK(SH("%s sim --model t5-3b --cluster dgx-a100-80g --pp 4 --microbatches 1 "
             "--schedule gpipe --slices 2", bin) == 2);
    CHECK_STR_HAS(out, "token slices need a causal decoder");
    CHECK(SH("%s sim --model gpt-1.3b --cluster dgx-a100-80g --pp 8 --microbatches 1 "
             "--schedule gpipe --slices 0", bin) == 2);
    CHECK_STR_HAS(out, "--slices");
    /* a tampered plan: a zero-token slice, lengths not summing to the sequence */
    char *text = NULL;
    size_t len = 0;
    char path[512];
    snprintf(path, sizeof path, "%s/p.json", d);
    REQUIRE(sc_read_file(path, 1 << 24, &text, &len, NULL) == SC_OK);
    cJSON *p = cJSON_Parse(text);
    sc_free(text);
    REQUIRE(p);
    cJSON *arr = cJSON_GetObjectItem(p, "slices");
    REQUIRE(arr);
    cJSON_ReplaceItemInArray(arr, 0, cJSON_CreateNumber(0));
    char bad[512];
    snprintf(bad, sizeof bad, "%s/bad.json", d);
    REQUIRE(sc_json_save(bad, p, NULL) == SC_OK);
    CHECK(SH("%s sim --plan %s", bin, bad) == 2);
    CHECK_STR_HAS(out, "bad.json: slices[0]: must be a token count >= 1");
    cJSON_ReplaceItemInArray(arr, 0, cJSON_CreateNumber(1));
    REQUIRE(sc_json_save(bad, p, NULL) == SC_OK);
    CHECK(SH("%s sim --plan %s", bin, bad) == 2);
    CHECK_STR_HAS(out, "slices: slice_len: the slices sum to");
    cJSON_Delete(p);
}
