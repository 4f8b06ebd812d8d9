/* test_calibrate.c - the calibration fits on synthetic measurements whose
 * true parameters are known, their bad inputs, error bars, and compare. */
#include "calib_points.h"
#include "calibrate.h"
#include "check.h"
#include "compare.h"
#include "cost.h"
#include "json.h"
#include "plan.h"
#include "step.h"

#include <math.h>
#include <stdlib.h>

/* A bench file: gemm sizes timed by the cost model's roofline for one kernel with the
 * given parameters, times multiplied by (1 + noise·(-1)^i). */
static void write_gemm_bench(const char *path, const sc_cluster *truth, const char *device,
                             double noise)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "stagecraft.bench/1");
    cJSON_AddStringToObject(j, "op", "gemm");
    cJSON_AddStringToObject(j, "backend", "cpu");
    cJSON_AddStringToObject(j, "device", device);
    cJSON_AddNumberToObject(j, "ranks", 1);
    cJSON_AddStringToObject(j, "link", "intra");
    cJSON_AddStringToObject(j, "dtype", "fp32");
    cJSON_AddStringToObject(j, "compute_dtype", "fp32");
    cJSON_AddNumberToObject(j, "elem_bytes", 4);
    cJSON *a = cJSON_AddArrayToObject(j, "results");
    int i = 0;
    for (int n = 16; n <= 2048; n *= 2, i++) {
        double F = 2.0 * n * n * n, B = 3.0 * n * n * 4;
        double tc = (F + truth->eff.f_half[SC_FP32]) /
                    (truth->gpu.peak_flops[SC_FP32] * truth->eff.eff_max[SC_FP32]);
        double tm = B / (truth->gpu.hbm_bytes_per_s * truth->eff.memory_bw);
        double t = (tc > tm ? tc : tm) * (1 + noise * (i % 2 ? -1 : 1)); /* one kernel */
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(a, o);
        cJSON_AddNumberToObject(o, "m", n);
        cJSON_AddNumberToObject(o, "n", n);
        cJSON_AddNumberToObject(o, "k", n);
        cJSON_AddNumberToObject(o, "time_s", t);
    }
    sc_error err;
    if (sc_json_save(path, j, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    cJSON_Delete(j);
}

/* A collective bench: time = steps·alpha + volume/beta exactly. */
static void write_comm_bench(const char *path, const char *op, int ranks, const char *link,
                             double alpha, double beta, int npts)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "stagecraft.bench/1");
    cJSON_AddStringToObject(j, "op", op);
    cJSON_AddStringToObject(j, "backend", "cpu");
    cJSON_AddStringToObject(j, "device", "cpu-core (test)");
    cJSON_AddNumberToObject(j, "ranks", ranks);
    cJSON_AddStringToObject(j, "link", link);
    cJSON_AddStringToObject(j, "dtype", "fp32");
    cJSON_AddStringToObject(j, "compute_dtype", "fp32");
    cJSON_AddNumberToObject(j, "elem_bytes", 4);
    cJSON *a = cJSON_AddArrayToObject(j, "results");
    double bytes = 4096;
    for (int i = 0; i < npts; i++, bytes *= 4) {
        double n = !strcmp(op, "p2p") ? 2 : ranks, steps, vol;
        if (!strcmp(op, "allreduce")) {
            steps = 2 * (n - 1);
            vol = 2 * (n - 1) / n * bytes;
        } else if (!strcmp(op, "p2p")) {
            steps = 1;
            vol = bytes;
        } else {
            steps = n - 1;
            vol = (n - 1) / n * bytes;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(a, o);
        cJSON_AddNumberToObject(o, "bytes", bytes);
        cJSON_AddNumberToObject(o, "time_s", steps * alpha + vol / beta);
    }
    sc_error err;
    if (sc_json_save(path, j, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    cJSON_Delete(j);
}

static sc_cluster cpu_cluster(void)
{
    sc_cluster c;
    sc_error err;
    sc_cluster_preset_get("cpu-local", &c, &err);
    c.gpus_per_node = 4;
    return c;
}

TEST(calibrate_recovers_known_parameters)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), truth = base;
    truth.eff.eff_max[SC_FP32] = 0.42;
    truth.eff.f_half[SC_FP32] = 3e6;
    char g[600], ar[600], p2[600], ag[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    snprintf(p2, sizeof p2, "%s/p2p.json", d);
    snprintf(ag, sizeof ag, "%s/ag.json", d);
    write_gemm_bench(g, &truth, "cpu-core (test)", 0.0);
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 7);
    write_comm_bench(p2, "p2p", 2, "intra", 3e-6, 5e9, 7); /* a message: twice the share */
    write_comm_bench(ag, "allgather", 4, "intra", 3e-6, 2.5e9, 7);
    const char *files[] = {g, ar, p2, ag};
    sc_cluster out;
    sc_calib_report rep;
    sc_error err;
    REQUIRE(sc_calibrate(&base, files, 4, "2026-11-29T00:00:00Z", &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.eff_max[SC_FP32], 0.42, 1e-4);
    CHECK_NEAR(out.eff.f_half[SC_FP32], 3e6, 1e-2);
    CHECK_NEAR(out.eff.alpha_s[SC_LINK_INTRA], 3e-6, 1e-6);
    CHECK_NEAR(out.eff.bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 2.5e9, 1e-6);
    /* point-to-point messages get their own share of the link */
    CHECK_NEAR(out.eff.p2p_bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 5e9, 1e-6);
    CHECK_EQ_INT(out.eff.fits.link_p2p[SC_LINK_INTRA].n, 7);
    CHECK(out.eff.p2p_bw_eff[SC_LINK_INTER] == 0); /* nothing measured there */
    CHECK(out.eff.fits.present);
    CHECK_EQ_INT(out.eff.fits.n_inputs, 4);
    CHECK_EQ_INT(out.eff.fits.compute[SC_FP32].n, 8);
    CHECK(out.eff.fits.compute[SC_FP32].r2 > 0.999999);
    CHECK(out.eff.fits.compute[SC_FP32].mape < 1e-4);
    CHECK_EQ_INT(out.eff.fits.link[SC_LINK_INTRA].n, 7); /* the allreduce fit sets the class */
    CHECK_STR_HAS(out.eff.provenance, "calibrated 2026-11-29T00:00:00Z from 4 files");
    /* per-collective fits are reported too */
    int per_op = 0;
    for (int i = 0; i < rep.n_fits; i++)
        per_op += !strcmp(rep.fits[i].what, "intra allreduce") ||
                  !strcmp(rep.fits[i].what, "intra p2p (used)");
    CHECK_EQ_INT(per_op, 2);
    /* the calibrated cluster round-trips through its file, fits and all */
    char path[600];
    snprintf(path, sizeof path, "%s/cal.json", d);
    REQUIRE(sc_cluster_save(&out, path, &err) == SC_OK);
    sc_cluster back;
    REQUIRE(sc_cluster_load(path, &back, &err) == SC_OK);
    CHECK(sc_cluster_equal(&out, &back));
    /* noise gives standard errors and a residual spread */
    write_gemm_bench(g, &truth, "cpu-core (test)", 0.03);
    const char *one[] = {g};
    REQUIRE(sc_calibrate(&base, one, 1, "2026-11-29T00:00:00Z", &out, &rep, &err) == SC_OK);
    CHECK(out.eff.fits.compute[SC_FP32].rel_sd > 0.02);
    CHECK(out.eff.fits.compute[SC_FP32].se[0] > 0);
    CHECK_NEAR(out.eff.eff_max[SC_FP32], 0.42, 0.05);
}

TEST(calibrate_bad_inputs)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), truth = base;
    char g[600], ar[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    sc_cluster out;
    sc_error err;
    /* another device */
    write_gemm_bench(g, &truth, "NVIDIA H200", 0);
    const char *f1[] = {g};
    CHECK(sc_calibrate(&base, f1, 1, NULL, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "device: measured on \"NVIDIA H200\", not on cpu-local's cpu-core");
    /* too few points */
    write_comm_bench(ar, "allreduce", 4, "intra", 1e-6, 1e9, 2);
    const char *f2[] = {ar};
    CHECK(sc_calibrate(&base, f2, 1, NULL, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "too few");
    /* more ranks than the cluster has */
    write_comm_bench(ar, "allreduce", 64, "intra", 1e-6, 1e9, 5);
    CHECK(sc_calibrate(&base, f2, 1, NULL, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "ranks: 64 ranks, but cpu-local has 4 GPUs");
    /* not a measurement */
    const char *f3[] = {"tests/corpus/cluster/good/p4d.24xlarge.json"};
    CHECK(sc_calibrate(&base, f3, 1, NULL, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "is neither a bench");
    /* a simulated timeline is no measurement */
    const char *f4[] = {"tests/golden/sim_1f1b.json"};
    CHECK(sc_calibrate(&base, f4, 1, NULL, &out, NULL, &err) != SC_OK);
}

/* With fits, sim reports an interval that grows with the residual spread. */
TEST(calibrate_error_bars)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 2, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b"};
    sc_step_result *r;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    CHECK(sc_step_interval(r, &c, SC_BF16) == 0); /* no fits: no interval */
    c.eff.fits.present = 1;
    c.eff.fits.compute[SC_BF16] = (sc_fit_stats){10, 0.99, 0.02, 0.03, {0, 0}};
    double h1 = sc_step_interval(r, &c, SC_BF16);
    c.eff.fits.compute[SC_BF16].rel_sd = 0.06;
    double h2 = sc_step_interval(r, &c, SC_BF16);
    CHECK(h1 > 0 && h2 > h1);
    const sc_step_breakdown *k = &r->breakdown;
    double busy = (k->compute + k->recompute + k->optimizer) / r->step_time_s;
    CHECK_NEAR(h1, 1.96 * r->step_time_s * busy * 0.03, 1e-9);
    sc_step_result_free(r);
    sc_model_free(m);
}

/* calibrate and compare end to end on a real two-rank run (skipped without
 * mpirun). */
TEST(calibrate_compare_cli)
{
    char out[1 << 14], bin[4096];
    const char *d = sc_test_tmpdir();
    if (!realpath(sc_test_bin(), bin)) {
        sc_test_fail(__FILE__, __LINE__, "no %s", sc_test_bin());
        return;
    }
    if (sc_test_sh(out, sizeof out, "command -v mpirun") != 0 ||
        sc_test_sh(out, sizeof out, "%s version | grep -q 'MPI:  yes'", bin) != 0) {
        sc_test_skip("no mpirun or a build without MPI");
        return;
    }
    REQUIRE(sc_test_sh(out, sizeof out,
                       /* MPI_Init leaks by itself (see test_exec.c): no leak check
                        * for the MPI-backed commands of this chain */
                       "export ASAN_OPTIONS=detect_leaks=0; "
                       "cd %s && %s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 32 "
                       "--vocab 256 --dtype fp32 -o m.json && %s cluster show cpu-local --json | "
                       "sed 's/\"gpus_per_node\":[^,]*/\"gpus_per_node\": 2/' > c.json && "
                       "%s sim --model m.json --cluster c.json --pp 2 --microbatches 2 -o p.json "
                       "&& mpirun --allow-run-as-root --oversubscribe -np 2 %s exec p.json "
                       "--backend cpu --steps 2 --warmup 1 -o meas.json && %s bench gemm --sizes "
                       "16:256:2 -o g.json",
                       d, bin, bin, bin, bin, bin) == 0);
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s calibrate --cluster c.json g.json meas.json -o cal.json", d,
                       bin) == 0);
    CHECK_STR_HAS(out, "compute fp32");
    CHECK_STR_HAS(out, "wrote cal.json");
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json meas.json --cluster cal.json",
                       d, bin) == 0);
    CHECK_STR_HAS(out, "MAPE over op kinds");
    CHECK_STR_HAS(out, "95% interval");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s compare p.json meas.json --cluster cal.json --json", d,
                       bin) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "step"), "measured_s")->valuedouble > 0);
    cJSON_Delete(j);
    /* a measurement of another plan is refused */
    CHECK(sc_test_sh(out, sizeof out,
                     "cd %s && %s sim --model m.json --cluster c.json --tp 2 --microbatches 2 -o "
                     "q.json >/dev/null && %s compare q.json meas.json",
                     d, bin, bin) != 0);
}

/* bwd_factor scales the backward FLOPs' time, round-trips through the
 * cluster file and is range-checked. */
TEST(calibrate_bwd_factor)
{
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    CHECK_NEAR(c.eff.bwd_factor, 1, 0);
    sc_model *m = sc_model_new("g", SC_BF16, 8);
    sc_module *x = sc_model_add(m, NULL, "g", "mlp");
    x->flops_fwd = 1e13; /* compute-bound */
    REQUIRE(sc_model_finish(m, "<t>", &err) == SC_OK);
    double f1, b1, f2, b2;
    REQUIRE(sc_cost_module_time(&c, x, SC_BF16, 1, 1, &f1, &b1, &err) == SC_OK);
    c.eff.bwd_factor = 1.5;
    REQUIRE(sc_cost_module_time(&c, x, SC_BF16, 1, 1, &f2, &b2, &err) == SC_OK);
    CHECK_NEAR(f2, f1, 1e-12);
    double o = c.eff.op_overhead_s, fh = c.eff.f_half[SC_BF16];
    double per = 1 / (c.gpu.peak_flops[SC_BF16] * c.eff.eff_max[SC_BF16]);
    CHECK_NEAR(b2, o + (1.5 * 2e13 + fh) * per, 1e-12);
    CHECK_NEAR(b1, o + (2e13 + fh) * per, 1e-12);
    char path[600];
    snprintf(path, sizeof path, "%s/c.json", sc_test_tmpdir());
    REQUIRE(sc_cluster_save(&c, path, &err) == SC_OK);
    sc_cluster back;
    REQUIRE(sc_cluster_load(path, &back, &err) == SC_OK);
    CHECK(sc_cluster_equal(&c, &back));
    c.eff.bwd_factor = 20;
    CHECK(sc_cluster_validate(&c, "<t>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "efficiency.bwd_factor");
    sc_model_free(m);
}

/* The point-to-point fields of the cluster format: ranges, the file round
 * trip, the cost model and the simulator's use of them. */
TEST(calibrate_p2p_fields)
{
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    CHECK(c.eff.p2p_bw_eff[SC_LINK_INTER] == 0); /* presets: bw_eff for both */
    double t1, t2;
    REQUIRE(sc_cost_p2p(&c, 1e9, 1, 1, &t1, &err) == SC_OK);
    c.eff.p2p_bw_eff[SC_LINK_INTER] = c.eff.bw_eff[SC_LINK_INTER] / 2;
    REQUIRE(sc_cost_p2p(&c, 1e9, 1, 1, &t2, &err) == SC_OK);
    double a = c.eff.alpha_s[SC_LINK_INTER];
    CHECK_NEAR((t2 - a) / (t1 - a), 2, 1e-9);
    c.eff.p2p_host_s_per_byte[SC_LINK_INTER] = 2e-9;
    char path[600];
    snprintf(path, sizeof path, "%s/c.json", sc_test_tmpdir());
    REQUIRE(sc_cluster_save(&c, path, &err) == SC_OK);
    sc_cluster back;
    REQUIRE(sc_cluster_load(path, &back, &err) == SC_OK);
    CHECK(sc_cluster_equal(&c, &back));
    CHECK_NEAR(back.eff.p2p_host_s_per_byte[SC_LINK_INTER], 2e-9, 0);
    sc_cluster bad = c;
    bad.eff.p2p_bw_eff[SC_LINK_INTRA] = 1.5;
    CHECK(sc_cluster_validate(&bad, "<t>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "efficiency.intra.p2p_bw_eff");
    bad = c;
    bad.eff.p2p_host_s_per_byte[SC_LINK_INTER] = 1e-3;
    CHECK(sc_cluster_validate(&bad, "<t>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "efficiency.inter.p2p_host_s_per_byte");

    /* the simulator: a pipeline across nodes, one GPU per node; the sender's
     * host time holds its compute stream (stage 0 sends m messages in a row)
     * and shows as exposed pp communication */
    sc_model *m;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster one;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &one, &err) == SC_OK);
    one.gpus_per_node = 1;
    REQUIRE(sc_cluster_set_nodes(&one, 2, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "gpipe"};
    sc_step_result *r0, *r1;
    REQUIRE(sc_step_simulate(m, &one, &cfg, &r0, &err) == SC_OK);
    double h = 1e-6; /* 1 us a byte: far above the compute */
    one.eff.p2p_host_s_per_byte[SC_LINK_INTER] = h;
    REQUIRE(sc_step_simulate(m, &one, &cfg, &r1, &err) == SC_OK);
    double bytes = 2048.0 * 2048 * 2; /* one microbatch's activations, bf16 */
    CHECK(r1->step_time_s >= 4 * h * bytes);
    CHECK(r1->breakdown.pp > r0->breakdown.pp + 4 * h * bytes / 2 - 1e-9);
    const sc_step_breakdown *k = &r1->breakdown;
    CHECK_NEAR(k->compute + k->recompute + k->optimizer + k->tp + k->pp + k->dp + k->bubble,
               r1->step_time_s, 1e-9);
    CHECK_NEAR(r1->breakdown.compute, r0->breakdown.compute, 1e-12);
    sc_step_result_free(r0);
    sc_step_result_free(r1);
    sc_model_free(m);
}

/* calibrate recovers the sender's host time per byte from a measurement
 * whose truth is known: a simulated pipeline step relabelled as measured. */
TEST(calibrate_recovers_host_time)
{
    char out[1 << 14], bin[4096];
    const char *d = sc_test_tmpdir();
    REQUIRE(realpath(sc_test_bin(), bin));
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 32 "
                       "--vocab 256 --dtype fp32 -o m.json && %s cluster show cpu-local --json "
                       "> c0.json",
                       d, bin, bin) == 0);
    char p[600];
    sc_error err;
    cJSON *c = NULL;
    snprintf(p, sizeof p, "%s/c0.json", d);
    REQUIRE(sc_json_load(p, &c, &err) == SC_OK);
    cJSON_ReplaceItemInObject(c, "nodes", cJSON_CreateNumber(2));
    cJSON_ReplaceItemInObject(c, "gpus_per_node", cJSON_CreateNumber(1));
    cJSON *in = cJSON_GetObjectItem(c, "inter");
    cJSON_ReplaceItemInObject(in, "nics_per_node", cJSON_CreateNumber(1));
    cJSON_ReplaceItemInObject(in, "nic_bytes_per_s", cJSON_CreateNumber(1.25e8));
    cJSON *ie = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "efficiency"), "inter");
    cJSON_AddNumberToObject(ie, "p2p_host_s_per_byte", 5e-9);
    snprintf(p, sizeof p, "%s/truth.json", d);
    REQUIRE(sc_json_save(p, c, &err) == SC_OK);
    cJSON_DeleteItemFromObject(ie, "p2p_host_s_per_byte");
    snprintf(p, sizeof p, "%s/base.json", d);
    REQUIRE(sc_json_save(p, c, &err) == SC_OK);
    cJSON_Delete(c);
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s sim --model m.json --cluster truth.json --nodes 2 --pp 2 "
                       "--microbatches 4 --schedule gpipe -o p.json --timeline t.json",
                       d, bin) == 0);
    /* the simulated timeline, relabelled as a measurement of p.json */
    cJSON *t = NULL;
    snprintf(p, sizeof p, "%s/t.json", d);
    REQUIRE(sc_json_load(p, &t, &err) == SC_OK);
    cJSON_ReplaceItemInObject(t, "source", cJSON_CreateString("exec"));
    cJSON_AddStringToObject(t, "device", "cpu-core (test)");
    char pp[600], dg[17];
    snprintf(pp, sizeof pp, "%s/p.json", d);
    REQUIRE(sc_plan_file_digest(pp, dg, &err) == SC_OK);
    cJSON *pl = cJSON_AddObjectToObject(t, "plan");
    cJSON_AddStringToObject(pl, "file", "p.json");
    cJSON_AddStringToObject(pl, "digest", dg);
    snprintf(p, sizeof p, "%s/meas.json", d);
    REQUIRE(sc_json_save(p, t, &err) == SC_OK);
    cJSON_Delete(t);
    sc_cluster base, cal;
    snprintf(p, sizeof p, "%s/base.json", d);
    REQUIRE(sc_cluster_load(p, &base, &err) == SC_OK);
    char g[600], mp[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    write_gemm_bench(g, &base, "cpu-core (test)", 0.0);
    snprintf(mp, sizeof mp, "%s/meas.json", d);
    const char *files[] = {g, mp};
    sc_calib_report rep;
    if (sc_calibrate(&base, files, 2, "2026-11-29T00:00:00Z", &cal, &rep, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return;
    }
    CHECK_NEAR(cal.eff.p2p_host_s_per_byte[SC_LINK_INTER], 5e-9, 5e-11);
    CHECK(cal.eff.fits.host[SC_LINK_INTER].n >= 3);
    CHECK(cal.eff.p2p_host_s_per_byte[SC_LINK_INTRA] == 0);
    /* a rank claiming a pipeline position the plan does not have is refused */
    REQUIRE(sc_json_load(mp, &t, &err) == SC_OK);
    cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "ranks"), 1);
    cJSON_ReplaceItemInObject(r1, "pp", cJSON_CreateNumber(5));
    snprintf(p, sizeof p, "%s/bad.json", d);
    REQUIRE(sc_json_save(p, t, &err) == SC_OK);
    cJSON_Delete(t);
    const char *bad[] = {g, p};
    CHECK(sc_calibrate(&base, bad, 2, NULL, &cal, &rep, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "bad.json");
    CHECK_STR_HAS(err.msg, "is not a pipeline position of the plan");
}

/* The fit half alone (cost_models/calibrate.h): points handed to it, no
 * files. Link points on the ring model and host points with a known time
 * per byte come back as their parameters; the inputs' record is the
 * caller's. */
TEST(calibrate_fit_points_alone)
{
    sc_cluster base = cpu_cluster(), out;
    sc_calib_link link[7];
    sc_calib_host host[5];
    double bytes = 4096;
    for (int i = 0; i < 7; i++, bytes *= 4) /* allreduce over 4 ranks */
        link[i] = (sc_calib_link){SC_LINK_INTRA, SC_CALIB_ALLREDUCE, 4, bytes,
                                  6 * 3e-6 + 2 * 3.0 / 4 * bytes / 2.5e9};
    for (int i = 0; i < 5; i++)
        host[i] = (sc_calib_host){SC_LINK_INTER, 1e5 * (i + 1), 5e-9 * 1e5 * (i + 1)};
    sc_calib_points pts = {.dtype = (sc_dtype)-1, .n_link = 7, .link = link, .n_host = 5,
                           .host = host};
    sc_calib_report rep;
    sc_error err;
    REQUIRE(sc_calib_fit_points(&base, &pts, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.alpha_s[SC_LINK_INTRA], 3e-6, 1e-6);
    CHECK_NEAR(out.eff.bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 2.5e9, 1e-6);
    CHECK_NEAR(out.eff.p2p_host_s_per_byte[SC_LINK_INTER], 5e-9, 1e-9);
    CHECK_EQ_INT(out.eff.fits.host[SC_LINK_INTER].n, 5);
    CHECK(!out.eff.fits.present && out.eff.fits.n_inputs == 0);
    CHECK_EQ_INT(rep.n_comm, 7);
    CHECK_EQ_INT(rep.n_files, 0);
    /* no points */
    sc_calib_points none = {.dtype = (sc_dtype)-1};
    CHECK(sc_calib_fit_points(&base, &none, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "calibrate: the inputs hold no measurements");
}

/* Adds a "provenance" record to a bench file (core: blas_core; mixed: the
 * ranks differed). */
static void add_provenance(const char *path, const char *core, const char *mixed)
{
    cJSON *j = NULL;
    sc_error err;
    if (sc_json_load(path, &j, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return;
    }
    cJSON *p = cJSON_AddObjectToObject(j, "provenance");
    cJSON_AddStringToObject(p, "cpu", "Intel(R) Xeon(R) Processor");
    cJSON_AddStringToObject(p, "blas", "OpenBLAS 0.3.21");
    cJSON_AddStringToObject(p, "blas_core", core);
    cJSON_AddNumberToObject(p, "blas_threads", 1);
    if (mixed)
        cJSON_AddStringToObject(p, "mixed", mixed);
    if (sc_json_save(path, j, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    cJSON_Delete(j);
}

/* Measurements of one machine and one kernel: benches whose provenance
 * names another BLAS kernel, or whose ranks differed, are refused. */
TEST(calibrate_refuses_mixed_provenance)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), out;
    char g[600], ar[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    write_gemm_bench(g, &base, "cpu-core (test)", 0);
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 7);
    add_provenance(g, "SkylakeX", NULL);
    add_provenance(ar, "Haswell", NULL);
    const char *files[] = {g, ar};
    sc_error err;
    CHECK(sc_calibrate(&base, files, 2, NULL, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "ar.json: provenance: ran on other hardware or kernels than gemm.json");
    CHECK_STR_HAS(err.msg, "blas_core \"Haswell\" against \"SkylakeX\"");
    /* the same kernel passes; a file without a record (an older one) too */
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 7);
    add_provenance(ar, "SkylakeX", NULL);
    CHECK(sc_calibrate(&base, files, 2, NULL, &out, NULL, &err) == SC_OK);
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 7);
    CHECK(sc_calibrate(&base, files, 2, NULL, &out, NULL, &err) == SC_OK);
    /* a run whose ranks differed */
    add_provenance(ar, "SkylakeX", "rank 1: blas_core \"Haswell\" against \"SkylakeX\" (rank 0)");
    CHECK(sc_calibrate(&base, files, 2, NULL, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "ar.json: provenance.mixed: its ranks ran on different hardware");
}

/* GEMMs faster than the nominal peak (a CPU core's turbo clock above the
 * MHz /proc/cpuinfo gives) raise the peak, as a link faster than nominal
 * raises its bandwidth: eff_max ends at 1, not pinned at a bound. */
TEST(calibrate_raises_nominal_peak)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), truth = base, out;
    truth.eff.eff_max[SC_FP32] = 1.3; /* only to time the points */
    truth.eff.f_half[SC_FP32] = 2e6;
    char g[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    write_gemm_bench(g, &truth, "cpu-core (test)", 0);
    const char *files[] = {g};
    sc_calib_report rep;
    sc_error err;
    REQUIRE(sc_calibrate(&base, files, 1, NULL, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.eff_max[SC_FP32], 1, 0);
    CHECK_NEAR(out.gpu.peak_flops[SC_FP32] / base.gpu.peak_flops[SC_FP32], 1.3, 1e-4);
    CHECK_NEAR(out.eff.f_half[SC_FP32], 2e6, 1);
    CHECK_STR_HAS(rep.notes, "above the nominal peak");
}
