/* test_calibrate.c - the calibration fits on synthetic measurements whose
 * true parameters are known, their bad inputs, error bars, and compare. */
#include "calib_points.h"
#include "calibrate.h"
#include "check.h"
#include "compare.h"
#include "cost.h"
#include "bench.h"
#include "bench_file.h"
#include "json.h"
#include "plan.h"
#include "search.h"
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
static void write_comm_bench_sizes(const char *path, const char *op, int ranks,
                                   const char *link, double alpha, double beta, int npts,
                                   double factor);

/* npts sizes from 4 KiB, 4x apart, each at alpha-beta of op's ring */
static void write_comm_bench(const char *path, const char *op, int ranks, const char *link,
                             double alpha, double beta, int npts)
{
    write_comm_bench_sizes(path, op, ranks, link, alpha, beta, npts, 4);
}

static void write_comm_bench_sizes(const char *path, const char *op, int ranks,
                                   const char *link, double alpha, double beta, int npts,
                                   double factor)
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
    for (int i = 0; i < npts; i++, bytes *= factor) {
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
    /* a size ramp on both classes of the input: the fitted class drops it (the fit
     * is the plain model), the class nothing measured keeps it */
    for (int l = 0; l < SC_LINK_N; l++) {
        base.eff.s_half_bytes[l] = 1e6;
        base.eff.ramp_exp[l] = 0.5;
    }
    char g[600], ar[600], p2[600], ag[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    snprintf(p2, sizeof p2, "%s/p2p.json", d);
    snprintf(ag, sizeof ag, "%s/ag.json", d);
    write_gemm_bench(g, &truth, "cpu-core (test)", 0.0);
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 7);
    write_comm_bench(p2, "p2p", 2, "intra", 3e-6, 5e9, 7); /* a message: twice the share */
    write_comm_bench(ag, "allgather", 4, "intra", 3e-6, 2e9, 7); /* a ring below the allreduce */
    const char *files[] = {g, ar, p2, ag};
    sc_cluster out;
    sc_calib_report rep;
    sc_error err;
    sc_status st = sc_calibrate(&base, files, 4, "2026-11-29T00:00:00Z", 0, &out, &rep, &err);
    if (st)
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    REQUIRE(st == SC_OK);
    CHECK_NEAR(out.eff.eff_max[SC_FP32], 0.42, 1e-4);
    CHECK_NEAR(out.eff.f_half[SC_FP32], 3e6, 1e-2);
    CHECK_NEAR(out.eff.alpha_s[SC_LINK_INTRA], 3e-6, 1e-6);
    CHECK_NEAR(out.eff.bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 2.5e9, 1e-6);
    /* point-to-point messages get their own share of the link */
    CHECK_NEAR(out.eff.p2p_bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 5e9, 1e-6);
    CHECK_EQ_INT(out.eff.fits.link_p2p[SC_LINK_INTRA].n, 7);
    CHECK(out.eff.p2p_bw_eff[SC_LINK_INTER] == 0); /* nothing measured there */
    /* and so do the reduce-scatters and all-gathers (here the all-gathers) */
    CHECK_NEAR(out.eff.ag_rs_bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 2e9, 1e-6);
    CHECK_EQ_INT(out.eff.fits.link_ag_rs[SC_LINK_INTRA].n, 7);
    CHECK(out.eff.ag_rs_bw_eff[SC_LINK_INTER] == 0);
    CHECK(out.eff.s_half_bytes[SC_LINK_INTRA] == 0 && out.eff.ramp_exp[SC_LINK_INTRA] == 1);
    CHECK(out.eff.s_half_bytes[SC_LINK_INTER] == 1e6 && out.eff.ramp_exp[SC_LINK_INTER] == 0.5);
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
                  !strcmp(rep.fits[i].what, "intra p2p (used)") ||
                  !strcmp(rep.fits[i].what, "intra rs + ag (used)");
    CHECK_EQ_INT(per_op, 3);
    /* the calibrated cluster round-trips through its file, fits and all */
    sc_cluster back;
    CHECK(sc_test_cluster_round_trip(&out, "cal.json", &back));
    /* noise gives standard errors and a residual spread */
    write_gemm_bench(g, &truth, "cpu-core (test)", 0.03);
    const char *one[] = {g};
    REQUIRE(sc_calibrate(&base, one, 1, "2026-11-29T00:00:00Z", 0, &out, &rep, &err) == SC_OK);
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
    CHECK(sc_calibrate(&base, f1, 1, NULL, 0, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "device: measured on \"NVIDIA H200\", not on cpu-local's cpu-core");
    /* too few points */
    write_comm_bench(ar, "allreduce", 4, "intra", 1e-6, 1e9, 2);
    const char *f2[] = {ar};
    CHECK(sc_calibrate(&base, f2, 1, NULL, 0, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "too few");
    /* more ranks than the cluster has */
    write_comm_bench(ar, "allreduce", 64, "intra", 1e-6, 1e9, 5);
    CHECK(sc_calibrate(&base, f2, 1, NULL, 0, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "ranks: 64 ranks, but cpu-local has 4 GPUs");
    /* not a measurement */
    const char *f3[] = {"tests/corpus/cluster/good/p4d.24xlarge.json"};
    CHECK(sc_calibrate(&base, f3, 1, NULL, 0, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "is not a bench (stagecraft.bench/1), a measured timeline");
    /* a simulated timeline is no measurement */
    const char *f4[] = {"tests/golden/sim_1f1b.json"};
    CHECK(sc_calibrate(&base, f4, 1, NULL, 0, &out, NULL, &err) != SC_OK);
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
    char out[1 << 14];
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
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
    /* two steps of a tiny plan on a shared machine rarely pass the quality
     * gates (calibrate_gates_* test them): written with --force here, to
     * test compare on what it writes */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s calibrate --cluster c.json g.json meas.json -o cal.json "
                       "--force 2>&1", d, bin) == 0);
    CHECK_STR_HAS(out, "compute fp32");
    CHECK_STR_HAS(out, "wrote cal.json");
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json meas.json --cluster cal.json",
                       d, bin) == 0);
    CHECK_STR_HAS(out, "MAPE over op kinds");
    CHECK_STR_HAS(out, "95% interval");
    /* the sends' measured times hold their waits: marked, and a MAPE over
     * the compute kinds alone is beside the one over all */
    CHECK_STR_HAS(out, "waits included)");
    CHECK_STR_HAS(out, "; over the compute kinds ");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s compare p.json meas.json --cluster cal.json --json", d,
                       bin) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "step"), "measured_s")->valuedouble > 0);
    /* compute_kind_mape is the mean |error| of the kinds marked compute */
    const cJSON *kinds = cJSON_GetObjectItem(j, "kinds"), *kd;
    double sum = 0;
    int nc = 0, nw = 0;
    cJSON_ArrayForEach(kd, kinds)
    {
        const char *kn = cJSON_GetStringValue(cJSON_GetObjectItem(kd, "kind"));
        int comp = cJSON_IsTrue(cJSON_GetObjectItem(kd, "compute"));
        REQUIRE(kn);
        CHECK(comp == (!strcmp(kn, "F") || !strcmp(kn, "B") || !strcmp(kn, "W") ||
                       !strcmp(kn, "recompute") || !strcmp(kn, "optimizer")));
        if (comp) {
            sum += fabs(cJSON_GetObjectItem(kd, "error")->valuedouble);
            nc++;
        } else {
            nw++;
        }
    }
    REQUIRE(nc > 0 && nw > 0);
    CHECK_NEAR(cJSON_GetObjectItem(j, "compute_kind_mape")->valuedouble, sum / nc, 1e-12);
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
    sc_cluster back;
    CHECK(sc_test_cluster_round_trip(&c, "c.json", &back));
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
    sc_cluster back;
    CHECK(sc_test_cluster_round_trip(&c, "c.json", &back));
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
    char out[1 << 14];
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
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
    if (sc_calibrate(&base, files, 2, "2026-11-29T00:00:00Z", 0, &cal, &rep, &err) != SC_OK) {
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
    CHECK(sc_calibrate(&base, bad, 2, NULL, 0, &cal, &rep, &err) != SC_OK);
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
                                  6 * 3e-6 + 2 * 3.0 / 4 * bytes / 2.5e9, -1, 0, 0, 0};
    for (int i = 0; i < 5; i++)
        host[i] = (sc_calib_host){SC_LINK_INTER, 1e5 * (i + 1), 5e-9 * 1e5 * (i + 1), -1, 0};
    sc_calib_points pts = {.dtype = (sc_dtype)-1, .n_link = 7, .link = link, .n_host = 5,
                           .host = host};
    sc_calib_report rep;
    sc_error err;
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.alpha_s[SC_LINK_INTRA], 3e-6, 1e-6);
    CHECK_NEAR(out.eff.bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 2.5e9, 1e-6);
    CHECK_NEAR(out.eff.p2p_host_s_per_byte[SC_LINK_INTER], 5e-9, 1e-9);
    CHECK_EQ_INT(out.eff.fits.host[SC_LINK_INTER].n, 5);
    CHECK(!out.eff.fits.present && out.eff.fits.n_inputs == 0);
    CHECK_EQ_INT(rep.n_comm, 7);
    CHECK_EQ_INT(rep.n_files, 0);
    /* no points */
    sc_calib_points none = {.dtype = (sc_dtype)-1};
    CHECK(sc_calib_fit_points(&base, &none, 0, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "calibrate: the inputs hold no measurements");
}

/* The overlap fit alone (beside a link fit): points made with k = 0.25 give
 * it back, with no residual; one point is refused (points gate); ops that
 * took three times their lone time beside collectives end at the upper
 * limit (bound gate); ops that did not slow give 0, a floor, not a bound;
 * without points the input's k stays. */
TEST(calibrate_overlap_fit)
{
    sc_cluster base = cpu_cluster(), out;
    sc_calib_link link[5];
    double bytes = 65536;
    for (int i = 0; i < 5; i++, bytes *= 4)
        link[i] = (sc_calib_link){SC_LINK_INTRA, SC_CALIB_ALLREDUCE, 4, bytes,
                                  6 * 3e-6 + 2 * 3.0 / 4 * bytes / 2.5e9, -1, 0, 0, 0};
    sc_calib_overlap ov[4];
    const double t0[4] = {1e-3, 2e-3, 2e-3, 5e-4}, phi[4] = {1, 0.5, 0.2, 0.8};
    for (int i = 0; i < 4; i++)
        ov[i] = (sc_calib_overlap){t0[i] / (1 - phi[i] + phi[i] / 1.25), t0[i], phi[i], -1};
    sc_calib_points pts = {.dtype = (sc_dtype)-1, .n_link = 5, .link = link, .n_overlap = 4,
                           .overlap = ov};
    static sc_calib_report rep;
    sc_error err;
    base.eff.overlap_slowdown = 0.189;
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.overlap_slowdown, 0.25, 1e-8);
    CHECK_NEAR(rep.overlap_slowdown, 0.25, 1e-8);
    CHECK_EQ_INT(rep.n_overlap, 4);
    CHECK_EQ_INT(out.eff.fits.overlap.n, 4);
    CHECK(out.eff.fits.overlap.mape < 1e-8 && out.eff.fits.overlap.se[0] < 1e-6);
    int seen = 0;
    for (int i = 0; i < rep.n_fits; i++)
        if (!strcmp(rep.fits[i].what, "overlap slowdown")) {
            seen = 1;
            CHECK(rep.fits[i].mape_before > 0.01); /* 0.189 missed them */
        }
    CHECK(seen);
    /* one point: refused, and forced it is written with its failed gate */
    pts.n_overlap = 1;
    CHECK(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "overlap slowdown: gate points: 1 distinct ops beside collectives "
                           "for 1 parameter (need 2)");
    /* three times the lone time: k = 1, the limit */
    for (int i = 0; i < 4; i++)
        ov[i].t = 3 * ov[i].t0;
    pts.n_overlap = 4;
    CHECK(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_EGATE);
    seen = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (rep.gates[i].failed && !strcmp(rep.gates[i].gate, "bound")) {
            seen = 1;
            CHECK_STR_HAS(rep.gates[i].what, "overlap slowdown");
            CHECK_STR_HAS(rep.gates[i].figure, "slowdown 1 at its upper limit");
        }
    CHECK(seen);
    /* no slowdown: 0, which passes */
    for (int i = 0; i < 4; i++)
        ov[i].t = ov[i].t0;
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.overlap_slowdown, 0, 1e-12);
    CHECK_EQ_INT(rep.n_failed, 0);
    /* none: kept */
    pts.n_overlap = 0;
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.overlap_slowdown, 0.189, 0);
    CHECK_EQ_INT(out.eff.fits.overlap.n, 0);
}

/* Allreduces measured across 2 nodes of 8 (the bench file's nodes and ranks per
 * node): "auto" runs them as NCCL's tree, so the fit reads them as the tree
 * (2 inter-node alpha steps after the chain's, S through the node's NICs), and the
 * calibrated cluster predicts the measured times back. Read as a ring (the nodes
 * not recorded), the same points give a line that "auto" then runs as a tree:
 * predictions far too fast. */
TEST(calibrate_inter_allreduce_as_auto_runs)
{
    sc_cluster base, out;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &base, &err) == SC_OK);
    REQUIRE(sc_cluster_set_nodes(&base, 2, &err) == SC_OK);
    double ai = base.eff.alpha_s[SC_LINK_INTRA], alpha = 50e-6, beta = 40e9;
    sc_calib_link link[8];
    double bytes = 1 << 20;
    for (int i = 0; i < 8; i++, bytes *= 2.5)
        link[i] = (sc_calib_link){SC_LINK_INTER, SC_CALIB_ALLREDUCE, 16, bytes,
                                  2 * 7 * ai + 2 * alpha + bytes / beta, -1, 0, 2, 8};
    sc_calib_points pts = {.dtype = (sc_dtype)-1, .n_link = 8, .link = link};
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, NULL, &err) == SC_OK);
    CHECK_NEAR(out.eff.alpha_s[SC_LINK_INTER], alpha, 1e-9);
    double nics = out.inter.nics_per_node * out.inter.nic_bytes_per_s;
    CHECK_NEAR(out.eff.bw_eff[SC_LINK_INTER] * nics / beta, 1, 1e-6);
    for (int i = 0; i < 8; i++) {
        double t;
        REQUIRE(sc_cost_coll(&out, NULL, SC_COLL_ALLREDUCE, link[i].bytes, 16, 8, &t, &err) ==
                SC_OK);
        CHECK_NEAR(t / link[i].t, 1, 1e-6);
    }
    /* the same points without their nodes: fitted as a ring, run as a tree */
    for (int i = 0; i < 8; i++)
        link[i].nodes = link[i].per_node = 0;
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, NULL, &err) == SC_OK);
    double t;
    REQUIRE(sc_cost_coll(&out, NULL, SC_COLL_ALLREDUCE, link[7].bytes, 16, 8, &t, &err) ==
            SC_OK);
    CHECK(t / link[7].t < 0.6);
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
    CHECK(sc_calibrate(&base, files, 2, NULL, 0, &out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "ar.json: provenance: ran on other hardware or kernels than gemm.json");
    CHECK_STR_HAS(err.msg, "blas_core \"Haswell\" against \"SkylakeX\"");
    /* the same kernel passes; a file without a record (an older one) too */
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 7);
    add_provenance(ar, "SkylakeX", NULL);
    CHECK(sc_calibrate(&base, files, 2, NULL, 0, &out, NULL, &err) == SC_OK);
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 7);
    CHECK(sc_calibrate(&base, files, 2, NULL, 0, &out, NULL, &err) == SC_OK);
    /* a run whose ranks differed */
    add_provenance(ar, "SkylakeX", "rank 1: blas_core \"Haswell\" against \"SkylakeX\" (rank 0)");
    CHECK(sc_calibrate(&base, files, 2, NULL, 0, &out, NULL, &err) == SC_EINVAL);
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
    REQUIRE(sc_calibrate(&base, files, 1, NULL, 0, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.eff_max[SC_FP32], 1, 0);
    CHECK_NEAR(out.gpu.peak_flops[SC_FP32] / base.gpu.peak_flops[SC_FP32], 1.3, 1e-4);
    CHECK_NEAR(out.eff.f_half[SC_FP32], 2e6, 1);
    CHECK_STR_HAS(rep.notes, "above the nominal peak");
}

/* ---- quality gates ------------------------------------------------------------------ */

/* A gemm bench of explicit sizes (m = n = k) and times. */
static void write_gemm_sizes(const char *path, const int *n, const double *t, int count)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "stagecraft.bench/1");
    cJSON_AddStringToObject(j, "op", "gemm");
    cJSON_AddStringToObject(j, "device", "cpu-core (test)");
    cJSON_AddNumberToObject(j, "ranks", 1);
    cJSON_AddStringToObject(j, "link", "intra");
    cJSON_AddStringToObject(j, "compute_dtype", "fp32");
    cJSON_AddNumberToObject(j, "elem_bytes", 4);
    cJSON *a = cJSON_AddArrayToObject(j, "results");
    for (int i = 0; i < count; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(a, o);
        cJSON_AddNumberToObject(o, "m", n[i]);
        cJSON_AddNumberToObject(o, "n", n[i]);
        cJSON_AddNumberToObject(o, "k", n[i]);
        cJSON_AddNumberToObject(o, "time_s", t[i]);
    }
    sc_error err;
    if (sc_json_save(path, j, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    cJSON_Delete(j);
}

/* Runs `stagecraft calibrate` in d; returns its exit status, output in out. */
static int calibrate_cli(char *out, size_t cap, const char *d, const char *args)
{
    return sc_test_sh(out, cap, "cd %s && rm -f cal.json && %s calibrate --cluster cpu.json %s "
                      "-o cal.json 2>&1", d, sc_test_bin(), args);
}

/* The command refuses (exit 4), names the file and the gate, writes nothing;
 * with --force it writes and records the failed gate, and sim warns. */
static void refused_then_forced(const char *d, const char *args, const char *file,
                                const char *gate_name)
{
    char out[1 << 14], want[128], path[600];
    CHECK_EQ_INT(calibrate_cli(out, sizeof out, d, args), 4);
    snprintf(want, sizeof want, "%s: ", file);
    CHECK_STR_HAS(out, want);
    snprintf(want, sizeof want, "gate %s", gate_name);
    CHECK_STR_HAS(out, want);
    CHECK_STR_HAS(out, "nothing written");
    snprintf(path, sizeof path, "%s/cal.json", d);
    CHECK(!sc_test_exists(path));
    char forced[700];
    snprintf(forced, sizeof forced, "%s --force", args);
    CHECK_EQ_INT(calibrate_cli(out, sizeof out, d, forced), 0);
    REQUIRE(sc_test_exists(path));
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_load(path, &c, &err) == SC_OK);
    int seen = 0;
    snprintf(want, sizeof want, ": %s ", gate_name);
    for (int i = 0; i < c.eff.fits.n_failed; i++)
        seen |= strstr(c.eff.fits.failed[i], want) && strstr(c.eff.fits.failed[i], file);
    CHECK(seen);
    /* sim, plan and whatif warn on stderr whenever they use it */
    const char *bin = sc_test_bin();
    static const char *const uses[] = {
        "sim --model gpt-1.3b --cluster cal.json --dp 1 --tp 1 --pp 1 --microbatches 1 --mbs 1",
        "plan --model gpt-1.3b --cluster cal.json --global-batch 4 --simulate 1",
        "whatif --model gpt-1.3b --cluster cal.json --nodes 1 --global-batch 4 --tokens 1e6 "
        "--simulate 1"};
    for (size_t i = 0; i < SC_ARRAY_LEN(uses); i++) {
        sc_test_sh(out, sizeof out, "cd %s && %s %s 2>&1 >/dev/null", d, bin, uses[i]);
        CHECK_STR_HAS(out, "warning: cal.json");
        CHECK_STR_HAS(out, "calibrated with --force past");
    }
}

static void write_cpu_json(const char *d)
{
    char path[600];
    sc_error err;
    sc_cluster base = cpu_cluster();
    snprintf(path, sizeof path, "%s/cpu.json", d);
    if (sc_cluster_save(&base, path, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
}

/* One distinct GEMM size, five times: the curve fits anything ("R² 1.0000"),
 * so the points gate refuses it. */
TEST(calibrate_gate_points_one_gemm_size)
{
    const char *d = sc_test_tmpdir();
    write_cpu_json(d);
    int n[5] = {256, 256, 256, 256, 256};
    double t[5] = {2.0e-4, 2.01e-4, 1.99e-4, 2.02e-4, 2.0e-4};
    char g[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    write_gemm_sizes(g, n, t, 5);
    refused_then_forced(d, "gemm.json", "gemm.json", "points");
    char out[1 << 14];
    calibrate_cli(out, sizeof out, d, "gemm.json");
    CHECK_STR_HAS(out, "1 distinct sizes for 2 parameters (need 4)");
}

/* Bigger GEMMs measured faster than small ones: no efficiency curve comes
 * near (R² below 0), so the R² gate refuses it. */
TEST(calibrate_gate_r2_negative)
{
    const char *d = sc_test_tmpdir();
    write_cpu_json(d);
    int n[6] = {32, 64, 128, 256, 512, 1024};
    double t[6] = {2e-2, 1e-2, 5e-3, 2.5e-3, 1.2e-3, 6e-4};
    char g[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    write_gemm_sizes(g, n, t, 6);
    sc_cluster base = cpu_cluster(), out;
    const char *files[] = {g};
    sc_calib_report rep;
    sc_error err;
    CHECK(sc_calibrate(&base, files, 1, NULL, 0, &out, &rep, &err) == SC_EGATE);
    int r2_failed = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (!strcmp(rep.gates[i].gate, "r2") && rep.gates[i].failed) {
            r2_failed = 1;
            CHECK(rep.gates[i].value < 0);
            CHECK_STR_HAS(rep.gates[i].files, "gemm.json");
        }
    CHECK(r2_failed);
    refused_then_forced(d, "gemm.json", "gemm.json", "r2");
}

/* A good curve measured with ±30% alternating noise: the MAPE gate. */
TEST(calibrate_gate_mape)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), out;
    char g[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    write_gemm_bench(g, &base, "cpu-core (test)", 0.3);
    const char *files[] = {g};
    sc_calib_report rep;
    sc_error err;
    CHECK(sc_calibrate(&base, files, 1, NULL, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "gemm.json: fit refused: compute fp32 (gemm sizes): gate mape");
    /* forced: written, every failed gate recorded */
    REQUIRE(sc_calibrate(&base, files, 1, NULL, 1, &out, &rep, &err) == SC_OK);
    CHECK(out.eff.fits.n_failed == rep.n_failed && rep.n_failed >= 1);
    CHECK_STR_HAS(out.eff.fits.failed[0], "gemm.json: compute fp32 (gemm sizes)");
    /* the same curve measured well passes every gate */
    write_gemm_bench(g, &base, "cpu-core (test)", 0.02);
    REQUIRE(sc_calibrate(&base, files, 1, NULL, 0, &out, &rep, &err) == SC_OK);
    CHECK_EQ_INT(rep.n_failed, 0);
    CHECK(rep.n_gates >= 4);
    CHECK_EQ_INT(out.eff.fits.n_failed, 0);
}

/* Three sizes of a link bench: enough to fit alpha and beta (the fit needs
 * 3), not enough to judge them (the points gate wants 4). */
TEST(calibrate_gate_link_points)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), out;
    char ar[600];
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 3);
    const char *files[] = {ar};
    sc_error err;
    CHECK(sc_calibrate(&base, files, 1, NULL, 0, &out, NULL, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "ar.json: fit refused: intra links (allreduce): gate points: 3 "
                           "distinct sizes for 2 parameters (need 4)");
    write_comm_bench(ar, "allreduce", 4, "intra", 3e-6, 2.5e9, 4);
    CHECK(sc_calibrate(&base, files, 1, NULL, 0, &out, NULL, &err) == SC_OK);
}

/* Scales each time of bench file path by f of its size. */
static void retime_bench(const char *path, double (*f)(double))
{
    cJSON *j;
    sc_error err;
    if (sc_json_load(path, &j, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    cJSON *r = cJSON_GetObjectItem(j, "results");
    for (int i = 0; i < cJSON_GetArraySize(r); i++) {
        cJSON *o = cJSON_GetArrayItem(r, i);
        double b = cJSON_GetObjectItem(o, "bytes")->valuedouble;
        double t = cJSON_GetObjectItem(o, "time_s")->valuedouble;
        cJSON_ReplaceItemInObject(o, "time_s", cJSON_CreateNumber(t * f(b)));
    }
    if (sc_json_save(path, j, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    cJSON_Delete(j);
}

static double jump_above_64k(double bytes)
{
    return bytes > 65536 ? 5 : 1;
}

/* write_comm_bench's line (2 ranks, alpha 3 us, beta 2.5 GB/s) turned into
 * 100 us * sqrt(bytes / 4 KiB): smooth, never faster than the bytes, and
 * no line through it */
static double sqrt_growth(double bytes)
{
    return 1e-4 * sqrt(bytes / 4096) / (2 * 3e-6 + bytes / 2.5e9);
}

/* A link whose times jump fivefold above 64 KiB (a transport's protocol
 * switch, a cache's capacity): the line's gates refuse it and name the step
 * where the times outgrew the bytes; a smooth curve no line follows keeps
 * the plain advice. */
TEST(calibrate_gate_link_jump)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), out;
    char ar[600];
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    write_comm_bench(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 6);
    retime_bench(ar, jump_above_64k);
    const char *files[] = {ar};
    sc_error err;
    sc_calib_report rep;
    CHECK(sc_calibrate(&base, files, 1, NULL, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "ar.json: fit refused: intra links (allreduce): gate ");
    CHECK_STR_HAS(err.msg, "from 64 KiB to 256 KiB the time grows ");
    CHECK_STR_HAS(err.msg, "x for 4x the bytes: a change of protocol or cache");
    int named = 0;
    for (int i = 0; i < rep.n_gates; i++)
        named += rep.gates[i].failed && strstr(rep.gates[i].fix, "from 64 KiB to 256 KiB");
    CHECK(named >= 1);
    /* forced, the cluster records each failed gate whole, long names and all */
    char longer[700];
    snprintf(longer, sizeof longer,
             "%s/allreduce_over_the_intra_links_of_both_ranks_measured_this_morning_"
             "on_the_quiet_machine_after_the_nightly_build_had_finished.json", d);
    REQUIRE(rename(ar, longer) == 0);
    files[0] = longer;
    REQUIRE(sc_calibrate(&base, files, 1, NULL, 1, &out, &rep, &err) == SC_OK);
    REQUIRE(out.eff.fits.n_failed >= 1);
    for (int i = 0; i < out.eff.fits.n_failed; i++) {
        CHECK(strlen(out.eff.fits.failed[i]) > 160);
        CHECK_STR_HAS(out.eff.fits.failed[i], " (limit ");
    }
    files[0] = ar;
    write_comm_bench(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 6);
    retime_bench(ar, sqrt_growth);
    CHECK(sc_calibrate(&base, files, 1, NULL, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "ar.json: fit refused: intra links (allreduce): gate ");
    CHECK_STR_HAS(err.msg, "the times do not follow alpha + size/beta");
    CHECK(!strstr(err.msg, "time grows"));
}

/* The step `sim SIM_ARGS` simulates of a 2-layer model on cpu.json (cores of
 * cpu-local, gpus_per_node of them a node, compute beside data-parallel
 * collectives slowed by kappa) relabelled as a measurement of its plan, in d:
 * cpu.json, p.json, meas.json (source "exec"), gemm.json (the cluster's own
 * GEMM curve). */
static int make_measurement_of(const char *d, int gpus_per_node, double kappa,
                               const char *sim_args)
{
    char out[1 << 14], p[600], pp[600], dg[17];
    const char *bin = sc_test_bin();
    sc_error err;
    sc_cluster base = cpu_cluster();
    base.gpus_per_node = gpus_per_node;
    base.eff.overlap_slowdown = kappa;
    snprintf(p, sizeof p, "%s/cpu.json", d);
    if (sc_cluster_save(&base, p, &err))
        return -1;
    if (sc_test_sh(out, sizeof out,
                   "cd %s && %s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 32 "
                   "--vocab 256 --dtype fp32 -o m.json && %s sim --model m.json --cluster "
                   "cpu.json %s -o p.json --timeline t.json",
                   d, bin, bin, sim_args) != 0)
        return -1;
    cJSON *t = NULL;
    snprintf(p, sizeof p, "%s/t.json", d);
    if (sc_json_load(p, &t, &err))
        return -1;
    cJSON_ReplaceItemInObject(t, "source", cJSON_CreateString("exec"));
    cJSON_AddStringToObject(t, "device", "cpu-core (test)");
    snprintf(pp, sizeof pp, "%s/p.json", d);
    if (sc_plan_file_digest(pp, dg, &err))
        return -1;
    cJSON *pl = cJSON_AddObjectToObject(t, "plan");
    cJSON_AddStringToObject(pl, "file", "p.json");
    cJSON_AddStringToObject(pl, "digest", dg);
    snprintf(p, sizeof p, "%s/meas.json", d);
    sc_status st = sc_json_save(p, t, &err);
    cJSON_Delete(t);
    snprintf(p, sizeof p, "%s/gemm.json", d);
    write_gemm_bench(p, &base, "cpu-core (test)", 0.0);
    return st ? -1 : 0;
}

/* A pp 2 GPipe step on two cores: inputs that pass every gate. */
static int make_measurement(const char *d)
{
    return make_measurement_of(d, 2, cpu_cluster().eff.overlap_slowdown,
                               "--pp 2 --microbatches 4 --schedule gpipe");
}

typedef void (*tl_edit)(cJSON *t);

/* d/meas.json edited into d/NAME. */
static void edited(const char *d, const char *name, tl_edit edit)
{
    char p[600];
    sc_error err;
    cJSON *t = NULL;
    snprintf(p, sizeof p, "%s/meas.json", d);
    if (sc_json_load(p, &t, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return;
    }
    edit(t);
    snprintf(p, sizeof p, "%s/%s", d, name);
    if (sc_json_save(p, t, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    cJSON_Delete(t);
}

static cJSON *op_of(cJSON *t, int rank, const char *kind, int nth)
{
    cJSON *ops = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "ranks"), rank),
                                     "ops");
    for (cJSON *o = ops ? ops->child : NULL; o; o = o->next)
        if (!strcmp(cJSON_GetObjectItem(o, "kind")->valuestring, kind) && nth-- == 0)
            return o;
    return NULL;
}

static void set_num(cJSON *o, const char *k, double v)
{
    cJSON_ReplaceItemInObject(o, k, cJSON_CreateNumber(v));
}

static double get_num(cJSON *o, const char *k) { return cJSON_GetObjectItem(o, k)->valuedouble; }

static void edit_reversed(cJSON *t)
{
    cJSON *o = op_of(t, 0, "F", 1);
    double a = get_num(o, "start"), b = get_num(o, "end");
    set_num(o, "start", b);
    set_num(o, "end", a);
}

static void edit_order(cJSON *t)
{
    /* rank 1's first two forwards (mb 0 and 1) trade places */
    cJSON *x = op_of(t, 1, "F", 0), *y = op_of(t, 1, "F", 1);
    double xs = get_num(x, "start"), xe = get_num(x, "end");
    set_num(x, "start", get_num(y, "start"));
    set_num(x, "end", get_num(y, "end"));
    set_num(y, "start", xs);
    set_num(y, "end", xe);
}

static void edit_outside(cJSON *t)
{
    set_num(op_of(t, 0, "B", 0), "end", 3 * get_num(t, "step_time_s"));
}

static void edit_range(cJSON *t) { set_num(op_of(t, 1, "B", 0), "mb", 99); }

static void edit_zero_step(cJSON *t) { set_num(t, "step_time_s", 0); }

static void add_steps(cJSON *t, double spread, int stable)
{
    double s = get_num(t, "step_time_s");
    cJSON *st = cJSON_AddObjectToObject(t, "steps");
    cJSON_AddNumberToObject(st, "n", 10);
    cJSON_AddNumberToObject(st, "median_s", s);
    cJSON_AddNumberToObject(st, "min_s", s * (1 - spread));
    cJSON_AddNumberToObject(st, "max_s", s * (1 + spread));
    cJSON_AddNumberToObject(st, "runs", 20);
    cJSON_AddNumberToObject(st, "spread", spread);
    cJSON_AddNumberToObject(st, "drift", stable ? 0.001 : 0.08);
    cJSON_AddNumberToObject(st, "tolerance", 0.02);
    cJSON_AddBoolToObject(st, "stable", stable);
}

static void edit_noisy(cJSON *t) { add_steps(t, 0.2, 1); }
static void edit_unsettled(cJSON *t) { add_steps(t, 0.01, 0); }
static void edit_quiet(cJSON *t) { add_steps(t, 0.01, 1); }

static void edit_fast_backward(cJSON *t)
{
    /* every backward 100x shorter than its forward predicts */
    cJSON *ranks = cJSON_GetObjectItem(t, "ranks");
    for (cJSON *r = ranks->child; r; r = r->next)
        for (cJSON *o = cJSON_GetObjectItem(r, "ops")->child; o; o = o->next)
            if (!strcmp(cJSON_GetObjectItem(o, "kind")->valuestring, "B"))
                set_num(o, "end", get_num(o, "start") +
                                      0.01 * (get_num(o, "end") - get_num(o, "start")));
}

/* Library-level: SC_EGATE naming the file and the gate, the gate failed in
 * the report. */
static void refused(const char *d, const char *name, const char *gate_name, const char *figure)
{
    char g[600], m[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(m, sizeof m, "%s/%s", d, name);
    sc_cluster base, out;
    sc_error err;
    char cpu[600];
    snprintf(cpu, sizeof cpu, "%s/cpu.json", d);
    REQUIRE(sc_cluster_load(cpu, &base, &err) == SC_OK);
    const char *files[] = {g, m};
    static sc_calib_report rep;
    sc_status st = sc_calibrate(&base, files, 2, NULL, 0, &out, &rep, &err);
    CHECK_EQ_INT(st, SC_EGATE);
    CHECK_STR_HAS(err.msg, name);
    int seen = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (rep.gates[i].failed && !strcmp(rep.gates[i].gate, gate_name)) {
            seen = 1;
            CHECK_STR_HAS(rep.gates[i].figure, figure);
        }
    if (!seen)
        sc_test_fail(__FILE__, __LINE__, "%s: gate %s did not fail (%s)", name, gate_name,
                     err.msg);
}

/* A dp 2 pp 2 1F1B step simulated with compute beside the gradient
 * allreduces slowed by 0.3, relabelled as a measurement: calibrate reads the
 * backward ops the buckets overlapped against those they did not and finds
 * 0.3; the cluster file records the fit and reads back; the report says it.
 * The same step without the slowdown gives 0. */
TEST(calibrate_overlap_from_measured_step)
{
    const double kappas[2] = {0.3, 0};
    for (int c = 0; c < 2; c++) {
        const char *d = sc_test_tmpdir();
        REQUIRE(make_measurement_of(d, 4, kappas[c],
                                    "--dp 2 --pp 2 --microbatches 4 --schedule 1f1b "
                                    "--bucket-mib 0.01") == 0);
        char g[600], m[600];
        snprintf(g, sizeof g, "%s/gemm.json", d);
        snprintf(m, sizeof m, "%s/meas.json", d);
        sc_cluster base = cpu_cluster(), out;
        base.eff.overlap_slowdown = 0.1;
        const char *files[] = {g, m};
        static sc_calib_report rep;
        sc_error err;
        REQUIRE(sc_calibrate(&base, files, 2, "2026-12-02T00:00:00Z", 0, &out, &rep, &err) ==
                SC_OK);
        CHECK(rep.n_overlap >= 2);
        CHECK_NEAR(out.eff.overlap_slowdown, kappas[c], 1e-6);
        CHECK_EQ_INT(out.eff.fits.overlap.n, rep.n_overlap);
        char path[600];
        sc_cluster back;
        snprintf(path, sizeof path, "%s/calibrated.json", d);
        REQUIRE(sc_cluster_save(&out, path, &err) == SC_OK);
        REQUIRE(sc_cluster_load(path, &back, &err) == SC_OK);
        CHECK_EQ_INT(back.eff.fits.overlap.n, rep.n_overlap);
        CHECK_NEAR(back.eff.overlap_slowdown, kappas[c], 1e-6);
        if (c == 0) {
            char o[1 << 14];
            CHECK(calibrate_cli(o, sizeof o, d, "gemm.json meas.json") == 0);
            CHECK_STR_HAS(o, "overlap slowdown 0.300");
        }
    }
}

/* A measured step whose plan overlaps its tp collectives with the compute is
 * refused, naming the file and the key: every forward and backward ran beside
 * a collective, so neither their time alone nor the slowdown can be read. */
TEST(calibrate_refuses_tp_comm_overlap)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_measurement_of(d, 4, 0.2,
                                "--tp 2 --pp 2 --sp --tp-comm-overlap 1 --microbatches 4") == 0);
    char g[600], m[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(m, sizeof m, "%s/meas.json", d);
    sc_cluster base = cpu_cluster(), out;
    const char *files[] = {g, m};
    static sc_calib_report rep;
    sc_error err;
    CHECK(sc_calibrate(&base, files, 2, "2026-12-04T00:00:00Z", 0, &out, &rep, &err) ==
          SC_ENOTSUP);
    CHECK_STR_HAS(err.msg, "meas.json");
    CHECK_STR_HAS(err.msg, "tp_comm_overlap");
    /* the same step without it calibrates */
    d = sc_test_tmpdir();
    REQUIRE(make_measurement_of(d, 4, 0.2, "--tp 2 --pp 2 --sp --microbatches 4") == 0);
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(m, sizeof m, "%s/meas.json", d);
    sc_status st = sc_calibrate(&base, files, 2, "2026-12-04T00:00:00Z", 0, &out, &rep, &err);
    if (st)
        fprintf(stderr, "control: %s\n", err.msg);
    CHECK(st == SC_OK);
}

/* The input gates on a measured timeline, each on a damaged copy of one
 * that passes them all; ops in reversed order through the command: nothing
 * written without --force. */
TEST(calibrate_gate_timelines)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_measurement(d) == 0);
    char g[600], m[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(m, sizeof m, "%s/meas.json", d);
    sc_cluster base, out;
    sc_error err;
    char cpu[600];
    snprintf(cpu, sizeof cpu, "%s/cpu.json", d);
    REQUIRE(sc_cluster_load(cpu, &base, &err) == SC_OK);
    const char *files[] = {g, m};
    static sc_calib_report rep;
    if (sc_calibrate(&base, files, 2, NULL, 0, &out, &rep, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "the clean measurement: %s", err.msg);
    CHECK_EQ_INT(rep.n_failed, 0);
    edited(d, "quiet.json", edit_quiet);
    files[1] = "quiet.json";
    char q[600];
    snprintf(q, sizeof q, "%s/quiet.json", d);
    files[1] = q;
    if (sc_calibrate(&base, files, 2, NULL, 0, &out, &rep, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "settled quiet steps: %s", err.msg);

    /* an op that ends before it starts: the reader refuses the file (bad
     * input, exit 2), --force or not */
    edited(d, "reversed.json", edit_reversed);
    char out2[1 << 14];
    CHECK_EQ_INT(calibrate_cli(out2, sizeof out2, d, "gemm.json reversed.json --force"), 2);
    CHECK_STR_HAS(out2, "reversed.json: ranks[0].ops[1].end");
    char cal[600];
    snprintf(cal, sizeof cal, "%s/cal.json", d);
    CHECK(!sc_test_exists(cal));
    /* forwards in reversed order: the order gate */
    edited(d, "order.json", edit_order);
    refused(d, "order.json", "order", "ranks[1]: F stage 1 mb 0");
    refused_then_forced(d, "gemm.json order.json", "order.json", "order");
    edited(d, "outside.json", edit_outside);
    refused(d, "outside.json", "inside", "1 ops outside the step");
    edited(d, "range.json", edit_range);
    refused(d, "range.json", "range", "B stage 1 chunk 0 mb 99");
    edited(d, "zero.json", edit_zero_step);
    refused(d, "zero.json", "inside", "step_time_s is 0");
    edited(d, "noisy.json", edit_noisy);
    refused(d, "noisy.json", "spread", "the 10 steps spread 20.0%");
    edited(d, "unsettled.json", edit_unsettled);
    refused(d, "unsettled.json", "drift", "moved 8.0%");
    edited(d, "fastb.json", edit_fast_backward);
    refused(d, "fastb.json", "bound", "at its");
}

/* The step 25% longer than its ops: waits the fits never see (exec's
 * communication slower than the benches said, a late rank). */
static void edit_long_step(cJSON *t) { set_num(t, "step_time_s", 1.25 * get_num(t, "step_time_s")); }

/* The replay gate: the calibrated cluster simulates each measured plan's
 * whole step. A clean measurement replays within 1% (and the report says
 * so); one whose step is 25% longer than its ops account for passes every
 * fit (the ops are untouched) and is refused here, -20%; --force writes it
 * with the gate recorded. */
TEST(calibrate_gate_replay)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_measurement(d) == 0);
    char g[600], m[600], cpu[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(m, sizeof m, "%s/meas.json", d);
    snprintf(cpu, sizeof cpu, "%s/cpu.json", d);
    sc_cluster base, out;
    sc_error err;
    REQUIRE(sc_cluster_load(cpu, &base, &err) == SC_OK);
    const char *files[] = {g, m};
    static sc_calib_report rep;
    REQUIRE(sc_calibrate(&base, files, 2, NULL, 0, &out, &rep, &err) == SC_OK);
    int n = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (!strcmp(rep.gates[i].gate, "replay")) {
            n++;
            CHECK(!rep.gates[i].failed);
            CHECK_STR_HAS(rep.gates[i].files, "meas.json");
            if (!(fabs(rep.gates[i].value) < 0.01))
                sc_test_fail(__FILE__, __LINE__, "clean replay %s", rep.gates[i].figure);
        }
    CHECK_EQ_INT(n, 1);
    char txt[1 << 14];
    CHECK_EQ_INT(calibrate_cli(txt, sizeof txt, d, "gemm.json meas.json"), 0);
    CHECK_STR_HAS(txt, "replay meas.json: step ");
    edited(d, "long.json", edit_long_step);
    refused(d, "long.json", "replay", "-20.0% (ceiling 10%)");
    refused_then_forced(d, "gemm.json long.json", "long.json", "replay");
}

/* The probe gate's edits: every rank's probe at `probe_scale` times the
 * bench's 512^3 GEMM, one rank's at `odd` times it. */
static double probe_ref, probe_scale, probe_odd;
static int probe_odd_rank, probe_k_of = 512;
static void edit_probe(cJSON *t)
{
    cJSON *p = cJSON_AddObjectToObject(t, "probe");
    cJSON_AddNumberToObject(p, "m", 512);
    cJSON_AddNumberToObject(p, "n", 512);
    cJSON_AddNumberToObject(p, "k", probe_k_of);
    cJSON_AddStringToObject(p, "dtype", "fp32");
    cJSON_AddNumberToObject(p, "reps", 3);
    cJSON_AddNumberToObject(p, "steps", 10);
    int r = 0;
    for (cJSON *k = cJSON_GetObjectItem(t, "ranks")->child; k; k = k->next, r++)
        cJSON_AddNumberToObject(k, "probe_s",
                                (r == probe_odd_rank ? probe_odd : probe_scale) * probe_ref);
}

/* The probe gate: exec's speed probe (every rank at once before every
 * step, each rank's median) against the gemm bench's point of its shape. Within 20% it
 * passes and is listed; a rank 1.8x slow (the ranks shared cores) or 0.7x
 * (the bench ran slow) is refused naming the rank, when and by how much; a
 * probe of a shape the bench never ran is not judged. */
TEST(calibrate_gate_probe)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_measurement(d) == 0);
    char g[600], m[600], cpu[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(cpu, sizeof cpu, "%s/cpu.json", d);
    sc_cluster base, out;
    sc_error err;
    REQUIRE(sc_cluster_load(cpu, &base, &err) == SC_OK);
    cJSON *gj = NULL;
    REQUIRE(sc_json_load(g, &gj, &err) == SC_OK);
    probe_ref = 0;
    for (cJSON *r = cJSON_GetObjectItem(gj, "results")->child; r; r = r->next)
        if (get_num(r, "m") == 512)
            probe_ref = get_num(r, "time_s");
    cJSON_Delete(gj);
    REQUIRE(probe_ref > 0);

    /* within the ceiling: judged, passed, its figure the largest deviation */
    probe_scale = 1.05, probe_odd = 1.15, probe_odd_rank = 1;
    edited(d, "probe_ok.json", edit_probe);
    snprintf(m, sizeof m, "%s/probe_ok.json", d);
    const char *files[] = {g, m};
    static sc_calib_report rep;
    if (sc_calibrate(&base, files, 2, NULL, 0, &out, &rep, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "a probe within 15%%: %s", err.msg);
    int n = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (!strcmp(rep.gates[i].gate, "probe")) {
            n++;
            CHECK(!rep.gates[i].failed);
            CHECK(fabs(rep.gates[i].value - 0.15) < 1e-9);
            CHECK_STR_HAS(rep.gates[i].figure, "rank 1 ran the 512x512x512 probe GEMM in");
            CHECK_STR_HAS(rep.gates[i].figure, "15.0% slower");
        }
    CHECK_EQ_INT(n, 1);

    /* a rank whose core was shared */
    probe_scale = 1.0, probe_odd = 1.8, probe_odd_rank = 1;
    edited(d, "probe_slow.json", edit_probe);
    refused(d, "probe_slow.json", "probe", "rank 1 ran the 512x512x512 probe GEMM in");
    refused(d, "probe_slow.json", "probe", "80.0% slower than the gemm bench's");
    refused_then_forced(d, "gemm.json probe_slow.json", "probe_slow.json", "probe");
    /* the bench slower than the ranks: also two devices in one fit */
    probe_scale = 1.0, probe_odd = 0.7, probe_odd_rank = 0;
    edited(d, "probe_fast.json", edit_probe);
    refused(d, "probe_fast.json", "probe", "rank 0 ran the 512x512x512 probe GEMM in");
    refused(d, "probe_fast.json", "probe", "30.0% faster");

    /* a shape no bench ran (512 x 512 x 500): not judged (however slow) */
    probe_k_of = 500, probe_scale = 3.0, probe_odd = 3.0;
    edited(d, "probe_other.json", edit_probe);
    probe_k_of = 512;
    snprintf(m, sizeof m, "%s/probe_other.json", d);
    if (sc_calibrate(&base, files, 2, NULL, 0, &out, &rep, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "a probe of a shape without a bench: %s", err.msg);
    for (int i = 0; i < rep.n_gates; i++)
        CHECK(strcmp(rep.gates[i].gate, "probe"));
}

static void edit_no_step(cJSON *t) { cJSON_DeleteItemFromObject(t, "step_time_s"); }
static void edit_zero_median(cJSON *t)
{
    add_steps(t, 0.01, 1);
    set_num(cJSON_GetObjectItem(t, "steps"), "median_s", 0);
}

/* compare refuses a measurement with a step of zero or none: one line
 * naming the file, exit 2 (it once reported "+0.0%"). */
TEST(compare_refuses_zero_step)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_measurement(d) == 0);
    edited(d, "zero.json", edit_zero_step);
    edited(d, "none.json", edit_no_step);
    edited(d, "zmed.json", edit_zero_median);
    char out[1 << 14];
    const char *bin = sc_test_bin();
    static const char *const files[] = {"zero.json", "none.json", "zmed.json"};
    static const char *const says[] = {"zero.json: step_time_s: 0: a measured step of zero",
                                       "none.json: step_time_s", "zmed.json: steps.median_s: 0"};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json %s 2>&1", d, bin,
                                files[i]), 2);
        CHECK_STR_HAS(out, says[i]);
        CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* one line */
    }
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json meas.json", d, bin), 0);
    /* the two the other way round: the order named */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s compare meas.json p.json", d, bin), 2);
    CHECK_STR_HAS(out, "meas.json: format: \"stagecraft.timeline/1\" is not "
                       "\"stagecraft.plan/1\" (the plan comes first: stagecraft compare PLAN "
                       "MEASURED)");
}

/* A plan whose own cluster changed after it ran: compare refuses it (the
 * digest), and replays it on a cluster named with --cluster, which must have
 * the plan's GPUs per node; the plan's own cluster is then not opened. */
TEST(compare_on_another_cluster)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_measurement(d) == 0);
    char out[1 << 14], p[600];
    const char *bin = sc_test_bin();
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && cp cpu.json cpu_as_run.json && "
                            "%s compare p.json meas.json --json > before.json", d, bin), 0);
    /* the plan's cluster file changes (a slower GEMM) */
    sc_cluster c = cpu_cluster();
    c.gpus_per_node = 2;
    c.eff.eff_max[SC_FP32] *= 0.8;
    sc_error err;
    snprintf(p, sizeof p, "%s/cpu.json", d);
    REQUIRE(sc_cluster_save(&c, p, &err) == SC_OK);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json meas.json 2>&1", d, bin),
                 2);
    CHECK_STR_HAS(out, "p.json: cluster.digest: cpu.json has changed since the plan was made");
    /* on the cluster as it ran: the same prediction as before */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json meas.json --cluster "
                            "cpu_as_run.json --json > after.json", d, bin), 0);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && cmp before.json after.json && echo same",
                            d), 0);
    CHECK_STR_HAS(out, "same");
    /* on the changed one: no refusal */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json meas.json --cluster "
                            "cpu.json 2>&1", d, bin), 0);
    /* the plan's own cluster gone: still runs on the named one */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && mv cpu.json gone.json && %s compare "
                            "p.json meas.json --cluster cpu_as_run.json >/dev/null 2>&1", d, bin),
                 0);
    /* another node size: refused, naming both */
    c.gpus_per_node = 4;
    snprintf(p, sizeof p, "%s/cpu4.json", d);
    REQUIRE(sc_cluster_save(&c, p, &err) == SC_OK);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s compare p.json meas.json --cluster "
                            "cpu4.json 2>&1", d, bin), 2);
    CHECK_STR_HAS(out, "p.json: cluster.gpus_per_node: 2, but cpu4.json has 4");
}

/* Marks a bench file as measured cold (bench --cold). */
static void mark_cold(const char *path, double cold_bytes)
{
    cJSON *j = NULL;
    sc_error err;
    REQUIRE(sc_json_load(path, &j, &err) == SC_OK);
    cJSON_AddNumberToObject(j, "cold_bytes", cold_bytes);
    REQUIRE(sc_json_save(path, j, &err) == SC_OK);
    cJSON_Delete(j);
}

/* Collectives measured cold (bench --cold) are fitted apart as the link's
 * cold_alpha_s, cold_bw_eff; the warm line is fitted on the warm files
 * alone; the simulator and the planner's estimate run the data-parallel
 * gradient reduction at the cold line and the tp collectives at the warm. */
TEST(calibrate_cold_collectives)
{
    const char *d = sc_test_tmpdir();
    sc_cluster base = cpu_cluster(), truth = base;
    truth.eff.eff_max[SC_FP32] = 0.42;
    truth.eff.f_half[SC_FP32] = 3e6;
    char g[600], ar[600], cold[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    snprintf(cold, sizeof cold, "%s/ar_cold.json", d);
    write_gemm_bench(g, &truth, "cpu-core (test)", 0.0);
    write_comm_bench(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 6);
    write_comm_bench(cold, "allreduce", 2, "intra", 20e-6, 1.25e9, 6);
    mark_cold(cold, 256.0 * 1048576);
    /* the bench file keeps cold_bytes */
    sc_bench_result *br = NULL;
    sc_error err;
    REQUIRE(sc_bench_load(cold, &br, &err) == SC_OK);
    CHECK_NEAR(br->cold_bytes, 256.0 * 1048576, 0);
    sc_bench_result_free(br);

    const char *files[] = {g, ar, cold};
    sc_cluster out;
    sc_calib_report rep;
    REQUIRE(sc_calibrate(&base, files, 3, "2026-12-01T00:00:00Z", 0, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.alpha_s[SC_LINK_INTRA], 3e-6, 1e-6);
    CHECK_NEAR(out.eff.bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 2.5e9, 1e-6);
    CHECK_NEAR(out.eff.cold_alpha_s[SC_LINK_INTRA], 20e-6, 1e-6);
    CHECK_NEAR(out.eff.cold_bw_eff[SC_LINK_INTRA] * out.intra.bytes_per_s, 1.25e9, 1e-6);
    CHECK_EQ_INT(out.eff.fits.link[SC_LINK_INTRA].n, 6); /* the warm points only */
    CHECK_EQ_INT(out.eff.fits.link_cold[SC_LINK_INTRA].n, 6);
    CHECK(out.eff.fits.link_cold[SC_LINK_INTRA].r2 > 0.999999);
    CHECK(out.eff.cold_bw_eff[SC_LINK_INTER] == 0); /* nothing measured there */
    int shown = 0;
    for (int i = 0; i < rep.n_fits; i++)
        shown += !strcmp(rep.fits[i].what, "intra cold (dp)");
    CHECK_EQ_INT(shown, 1);
    CHECK_EQ_INT(rep.n_failed, 0);

    /* the file round trip, the ranges, the pair rule */
    sc_cluster back;
    CHECK(sc_test_cluster_round_trip(&out, "cold_cluster.json", &back));
    CHECK_EQ_INT(back.eff.fits.link_cold[SC_LINK_INTRA].n, 6);
    sc_cluster bad = out;
    bad.eff.cold_bw_eff[SC_LINK_INTRA] = 1.5;
    CHECK(sc_cluster_validate(&bad, "<t>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "efficiency.intra.cold_bw_eff");
    bad = out;
    bad.eff.cold_alpha_s[SC_LINK_INTER] = 1e-5; /* without its share */
    CHECK(sc_cluster_validate(&bad, "<t>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "efficiency.inter.cold_alpha_s");

    /* cold points alone cannot stand for the link */
    const char *only_cold[] = {g, cold};
    CHECK(sc_calibrate(&base, only_cold, 2, "2026-12-01T00:00:00Z", 0, &out, &rep, &err) ==
          SC_EINVAL);
    CHECK_STR_HAS(err.msg, "ar_cold.json");
    CHECK_STR_HAS(err.msg, "no warm ones");
    /* recalibrating the warm line drops a cold line that belonged to the old one */
    const char *warm[] = {g, ar};
    sc_cluster again;
    REQUIRE(sc_calibrate(&back, warm, 2, "2026-12-01T00:00:00Z", 0, &again, &rep, &err) ==
            SC_OK);
    CHECK(again.eff.cold_bw_eff[SC_LINK_INTRA] == 0 && again.eff.cold_alpha_s[SC_LINK_INTRA] == 0);
    CHECK_EQ_INT(again.eff.fits.link_cold[SC_LINK_INTRA].n, 0);

    /* dp 2 on one node, the gradients in one bucket reduced after the backward
     * (overlap off): the step grows by exactly the cold line's extra time; a tp 2
     * plan's tp collectives stay warm */
    sc_model *m = sc_test_small_gpt("cold_m.json");
    REQUIRE(m);
    sc_cluster w = back, c2 = back;
    w.eff.cold_alpha_s[SC_LINK_INTRA] = w.eff.cold_bw_eff[SC_LINK_INTRA] = 0;
    REQUIRE(sc_cluster_set_nodes(&w, 1, &err) == SC_OK);
    REQUIRE(sc_cluster_set_nodes(&c2, 1, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 2, .tp = 1, .pp = 1, .v = 1, .m = 2, .mbs = 1, .schedule = "1f1b",
                       .bucket_bytes = 1e12, .no_overlap_grad_reduce = 1};
    sc_step_result *r0, *r1;
    REQUIRE(sc_step_simulate(m, &w, &cfg, &r0, &err) == SC_OK);
    REQUIRE(sc_step_simulate(m, &c2, &cfg, &r1, &err) == SC_OK);
    double G = sc_model_totals(m).params * 4; /* fp32 gradients */
    double extra = 2 * (20e-6 - 3e-6) + G * (1 / 1.25e9 - 1 / 2.5e9); /* n = 2: vol = G */
    CHECK_NEAR(r1->step_time_s - r0->step_time_s, extra, 1e-3 * extra);
    CHECK_NEAR(r1->breakdown.dp - r0->breakdown.dp, extra, 1e-3 * extra);
    sc_estimate e0, e1;
    REQUIRE(sc_estimate_step(m, &w, &cfg, &e0, &err) == SC_OK);
    REQUIRE(sc_estimate_step(m, &c2, &cfg, &e1, &err) == SC_OK);
    CHECK_NEAR(e1.step_s - e0.step_s, extra, 1e-3 * extra);
    sc_step_result_free(r0);
    sc_step_result_free(r1);
    sc_step_cfg tp = {.dp = 1, .tp = 2, .pp = 1, .v = 1, .m = 2, .mbs = 1, .schedule = "1f1b"};
    REQUIRE(sc_step_simulate(m, &w, &tp, &r0, &err) == SC_OK);
    REQUIRE(sc_step_simulate(m, &c2, &tp, &r1, &err) == SC_OK);
    CHECK_NEAR(r1->step_time_s, r0->step_time_s, 1e-12);
    sc_step_result_free(r0);
    sc_step_result_free(r1);
    sc_model_free(m);
}

static double jump_above_1m(double bytes)
{
    return bytes > (1 << 20) ? 5 : 1;
}

static double jump_above_8k(double bytes)
{
    return bytes > 8192 ? 5 : 1;
}

static double jump_above_12k(double bytes)
{
    return bytes > 12288 ? 5 : 1;
}

static double jump_above_12k_and_40k(double bytes)
{
    return (bytes > 12288 ? 5 : 1) * (bytes > 40960 ? 5 : 1);
}

static double jump_above_12k_and_80k(double bytes)
{
    return (bytes > 12288 ? 5 : 1) * (bytes > 81920 ? 5 : 1);
}

static double jump_above_16k(double bytes)
{
    return bytes > 16384 ? 5 : 1;
}

/* Cluster c's cost model (cost's allreduce over 2 ranks on one node, or p2p
 * inside a node) gives every time of the bench at path within 1e-6. */
static void bench_times_reproduced(const char *path, const sc_cluster *c, int p2p)
{
    cJSON *j;
    sc_error err;
    REQUIRE(sc_json_load(path, &j, &err) == SC_OK);
    cJSON *res = cJSON_GetObjectItem(j, "results");
    for (int i = 0; i < cJSON_GetArraySize(res); i++) {
        cJSON *o = cJSON_GetArrayItem(res, i);
        double b = cJSON_GetObjectItem(o, "bytes")->valuedouble, t;
        sc_status st = p2p ? sc_cost_p2p(c, b, 0, 1, &t, &err)
                           : sc_cost_coll(c, NULL, SC_COLL_ALLREDUCE, b, 2, 2, &t, &err);
        REQUIRE(st == SC_OK);
        CHECK_NEAR(t, cJSON_GetObjectItem(o, "time_s")->valuedouble, 1e-6);
    }
    cJSON_Delete(j);
}

/* An allreduce bench over 4 KiB-8 MiB (sizes 2x apart) whose times jump
 * fivefold past a size, calibrated with a measured tp 2 pp 2 plan whose tp
 * allreduces are 32 KiB (4 samples of 32 tokens of h 64 in fp32) and, on
 * the last stage, 21.8 KiB on average (its vocabulary's small collective
 * among them): the warm line is fitted over the regime the plan's messages
 * fall in, below the jump (the line write_comm_bench measures: alpha 3 us,
 * beta 2.5 GB/s) or above it (five times that), the other sizes are left
 * out and a note says so, also when the messages lie inside the step (each
 * on the side of the nearer size); with them on both sides of the step
 * (21.8 KiB nearer 16 KiB, 32 KiB past it), or without the plan, the gates
 * judge every size. */
TEST(calibrate_fits_the_plans_regime)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_measurement_of(d, 4, cpu_cluster().eff.overlap_slowdown,
                                "--tp 2 --pp 2 --microbatches 2 --mbs 4 --schedule 1f1b") == 0);
    char g[600], m[600], ar[600];
    snprintf(g, sizeof g, "%s/gemm.json", d);
    snprintf(m, sizeof m, "%s/meas.json", d);
    snprintf(ar, sizeof ar, "%s/ar.json", d);
    sc_cluster base = cpu_cluster(), out;
    base.gpus_per_node = 4;
    const char *files[] = {g, ar, m};
    static sc_calib_report rep;
    sc_error err;
    double (*const jumps[2])(double) = {jump_above_1m, jump_above_8k};
    const double scale[2] = {1, 5};
    const char *const kept[2] = {"intra allreduce: fitted over 4 KiB-1 MiB (9 sizes), the "
                                 "regime of the measured plans' 21.8 KiB-32 KiB messages; 3 "
                                 "bench sizes past a step in time left out",
                                 "intra allreduce: fitted over 16 KiB-8 MiB (10 sizes), the "
                                 "regime of the measured plans' 21.8 KiB-32 KiB messages; 2 "
                                 "bench sizes past a step in time left out"};
    for (int c = 0; c < 2; c++) {
        write_comm_bench_sizes(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 12, 2);
        retime_bench(ar, jumps[c]);
        /* case 1's bench runs the plan's messages 5 times slower than the measured
         * step ran them: every fit passes, and the replay gate alone refuses it */
        const int sf = SC_CALIB_SIZE_FACTORS;
        sc_status st = sc_calibrate(&base, files, 3, "2026-12-02T00:00:00Z", sf, &out, &rep, &err);
        if (c) {
            CHECK_EQ_INT(st, SC_EGATE);
            CHECK_EQ_INT(rep.n_failed, 1);
            CHECK_STR_HAS(err.msg, "meas.json: fit refused: replay (its step): gate replay");
            st = sc_calibrate(&base, files, 3, "2026-12-02T00:00:00Z", sf | SC_CALIB_FORCE, &out,
                              &rep, &err);
        }
        if (st)
            sc_test_fail(__FILE__, __LINE__, "case %d: %s", c, err.msg);
        REQUIRE(st == SC_OK);
        double beta = out.intra.bytes_per_s * out.eff.bw_eff[SC_LINK_INTRA];
        CHECK_NEAR(beta, 2.5e9 / scale[c], 2.5e9 / scale[c] * 1e-3);
        CHECK_NEAR(out.eff.alpha_s[SC_LINK_INTRA], 3e-6 * scale[c], 3e-6 * scale[c] * 1e-3);
        CHECK_EQ_INT(rep.n_failed, c);
        CHECK_STR_HAS(rep.notes, kept[c]);
        /* the sizes past the step kept as measured (sc_size_curve): the calibrated
         * cluster gives every bench time, on both sides, and the step sits at the
         * geometric mean of the sizes either side of it */
        CHECK_STR_HAS(rep.notes, "intra allreduce: the bench sizes outside it kept as measured");
        const sc_size_curve *cv = &out.eff.coll_curve[SC_LINK_INTRA];
        REQUIRE(cv->n > 0);
        double lo = c ? 8192 : 1 << 20, mid = floor(sqrt(lo * 2 * lo));
        CHECK_NEAR(sc_size_curve_at(cv, mid) / sc_size_curve_at(cv, mid + 1), 5, 1e-6);
        bench_times_reproduced(ar, &out, 0);
        CHECK(out.eff.p2p_curve[SC_LINK_INTRA].n == 0); /* no p2p bench */
        /* without --size-factors the same line, no factors, and the note says what
         * they would have been */
        sc_cluster plain;
        st = sc_calibrate(&base, files, 3, "2026-12-02T00:00:00Z", c ? SC_CALIB_FORCE : 0,
                          &plain, &rep, &err);
        REQUIRE(st == SC_OK);
        CHECK(plain.eff.coll_curve[SC_LINK_INTRA].n == 0);
        CHECK_NEAR(plain.eff.alpha_s[SC_LINK_INTRA], out.eff.alpha_s[SC_LINK_INTRA], 1e-12);
        CHECK_STR_HAS(rep.notes, "intra allreduce: the bench sizes outside it not kept "
                                 "(--size-factors keeps them");
    }
    /* sizes 3x apart and the step from 12 to 36 KiB: both messages lie inside it,
     * each nearer (by ratio) to 36 KiB, so the regime above it is the plan's */
    write_comm_bench_sizes(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 9, 3);
    retime_bench(ar, jump_above_12k);
    /* (the line above the step, 5 times the one the step ran on: forced past the
     * replay gate, as case 1 above) */
    REQUIRE(sc_calibrate(&base, files, 3, NULL, SC_CALIB_FORCE | SC_CALIB_SIZE_FACTORS, &out,
                         &rep, &err) == SC_OK);
    CHECK_EQ_INT(rep.n_failed, 1);
    CHECK_NEAR(out.intra.bytes_per_s * out.eff.bw_eff[SC_LINK_INTRA], 5e8, 5e5);
    CHECK_STR_HAS(rep.notes, "intra allreduce: fitted over 36 KiB-25.6 MiB (7 sizes)");
    CHECK(out.eff.coll_curve[SC_LINK_INTRA].n > 0);
    /* a second step past 36 KiB leaves the plan's regime one size: no line fits
     * it, so every size is judged (a refusal, not an error) */
    write_comm_bench_sizes(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 9, 3);
    retime_bench(ar, jump_above_12k_and_40k);
    CHECK(sc_calibrate(&base, files, 3, NULL, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "the time grows");
    CHECK(!strstr(rep.notes, "fitted over"));
    CHECK(!strstr(rep.notes, "kept as measured"));
    /* steps past 12 KiB and past 80 KiB leave the plan's regime three sizes (16,
     * 32, 64 KiB): its line is fitted over them, and the points gate, which wants
     * four, names a sweep across that regime (which a sweep by 2 cannot fill:
     * on one 2-core guest Open MPI stepped below 256 KiB and above 1 MiB),
     * one that bench reads as five sizes inside it */
    write_comm_bench_sizes(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 12, 2);
    retime_bench(ar, jump_above_12k_and_80k);
    CHECK(sc_calibrate(&base, files, 3, NULL, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(rep.notes, "intra allreduce: fitted over 16 KiB-64 KiB (3 sizes)");
    int points_gate = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (rep.gates[i].failed && !strcmp(rep.gates[i].gate, "points")) {
            points_gate++;
            CHECK_STR_HAS(rep.gates[i].figure, "3 distinct sizes for 2 parameters");
            CHECK_STR_HAS(rep.gates[i].fix, "regime, which spans 16K-64K here "
                                            "(--sizes 16K:64K:1.41)");
        }
    CHECK_EQ_INT(points_gate, 1);
    /* a cold bench of three sizes beside it: its own points gate names the cold
     * sweep, not the warm regime (the regime is the warm line's alone) */
    char cold[600];
    snprintf(cold, sizeof cold, "%s/ar_cold.json", d);
    write_comm_bench(cold, "allreduce", 2, "intra", 20e-6, 1.25e9, 3);
    mark_cold(cold, 256.0 * 1048576);
    const char *files_cold[] = {g, ar, m, cold};
    CHECK(sc_calibrate(&base, files_cold, 4, NULL, 0, &out, &rep, &err) == SC_EGATE);
    int warm_gate = 0, cold_gate = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (rep.gates[i].failed && !strcmp(rep.gates[i].gate, "points")) {
            int is_cold = strstr(rep.gates[i].what, "cold") != NULL;
            cold_gate += is_cold;
            warm_gate += !is_cold;
            CHECK_STR_HAS(rep.gates[i].fix, is_cold ? "bench --cold over at least 4 sizes"
                                                    : "which spans 16K-64K here");
        }
    CHECK(warm_gate == 1 && cold_gate == 1);
    sc_bench_point sweep[SC_BENCH_MAX_SIZES];
    int nsweep = 0;
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_ALLREDUCE, "16K:64K:1.41", sweep, &nsweep, &err) ==
            SC_OK);
    CHECK_EQ_INT(nsweep, 5);
    CHECK(sweep[0].bytes == 16384 && sweep[nsweep - 1].bytes <= 65536);
    /* the messages on both sides of the step from 16 to 32 KiB: no side to pick */
    write_comm_bench_sizes(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 12, 2);
    retime_bench(ar, jump_above_16k);
    CHECK(sc_calibrate(&base, files, 3, NULL, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "from 16 KiB to 32 KiB the time grows");
    CHECK(!strstr(rep.notes, "fitted over"));
    /* a p2p bench with its own step past the plan's sends (32 KiB): its sizes past it
     * are kept as p2p size factors, and cost's p2p gives every bench time */
    char pp[600];
    snprintf(pp, sizeof pp, "%s/p2p.json", d);
    write_comm_bench_sizes(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 12, 2);
    write_comm_bench_sizes(pp, "p2p", 2, "intra", 3e-6, 4e9, 12, 2); /* one alpha a class */
    retime_bench(pp, jump_above_1m);
    const char *files4[] = {g, ar, pp, m};
    REQUIRE(sc_calibrate(&base, files4, 4, NULL, SC_CALIB_SIZE_FACTORS, &out, &rep, &err) ==
            SC_OK);
    CHECK_STR_HAS(rep.notes, "intra p2p: the bench sizes outside it kept as measured");
    CHECK(out.eff.coll_curve[SC_LINK_INTRA].n == 0 && out.eff.p2p_curve[SC_LINK_INTRA].n > 0);
    bench_times_reproduced(pp, &out, 1);
    /* the bench alone: no plan says which side */
    write_comm_bench_sizes(ar, "allreduce", 2, "intra", 3e-6, 2.5e9, 12, 2);
    retime_bench(ar, jump_above_1m);
    CHECK(sc_calibrate(&base, files, 2, NULL, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "from 1 MiB to 2 MiB the time grows");
    CHECK(!strstr(rep.notes, "fitted over"));
}

/* Plans timed kernel by kernel (gpt-1.3b on the H200 preset): the measured
 * ops fit the time every kernel carries (efficiency.gemm.kernel_s) over
 * the GEMM sweep's, the HBM efficiency and, with enough distinct points,
 * the backward factor. The sweep's GEMMs are made with 6 us a kernel (what
 * the H200's sweep fitted, 2026-12-04), the steps with 1 us, as a host
 * that runs ahead queues them: the steps' value is written. A plan with
 * flash attention is predicted with flash attention (its F differs by more
 * than the fit's tolerance when costed unfused). */
static void kernel_ops(const sc_cluster *truth, const sc_model *m, const sc_partition *part,
                       int plan, sc_attn attn, int mbs, sc_calib_plan *pl, sc_calib_op *op)
{
    pl[plan] = (sc_calib_plan){.model = m, .part = part, .pp = 1, .v = 1, .dp = 1};
    pl[plan].cfg = (sc_stage_cfg){.dtype = m->dtype, .tp = 1, .mbs = mbs, .attn = attn};
    sc_stage_info info;
    sc_error err;
    if (sc_cost_stage(truth, m, part, &pl[plan].cfg, &info, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    double w, g, o;
    sc_cost_state_bytes(m->dtype, &w, &g, &o);
    op[3 * plan] = (sc_calib_op){plan, 0, SC_OP_F, info.fwd_s, 0};
    op[3 * plan + 1] = (sc_calib_op){plan, 0, SC_OP_B, info.bwd_s, 0};
    op[3 * plan + 2] = (sc_calib_op){plan, 0, SC_OP_OPTIMIZER,
                                     sc_cost_optimizer_time(truth, m->dtype, info.param_bytes / w),
                                     0};
}

TEST(calibrate_kernel_time_from_steps)
{
    sc_cluster base, truth, sweep;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("h200-sxm-1", &base, &err) == SC_OK);
    REQUIRE(base.eff.gemm.sms > 0);
    truth = base;
    truth.eff.gemm.kernel_s = 1e-6;
    truth.eff.memory_bw = 0.7;
    truth.eff.bwd_factor = 0.9;
    sweep = truth;
    sweep.eff.gemm.kernel_s = 6e-6;
    sc_model *m = NULL;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_partition part;
    REQUIRE(sc_partition_uniform(m, 1, &part, &err) == SC_OK);
    static const double sz[][3] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
                                   {8192, 8192, 8192}, {2048, 6144, 2048}, {2048, 2048, 8192},
                                   {8192, 2048, 2048}, {2048, 50264, 2048}};
    enum { NG = sizeof sz / sizeof sz[0] };
    sc_calib_gemm gm[NG];
    for (int i = 0; i < NG; i++) {
        double a = sz[i][0], b = sz[i][1], k = sz[i][2];
        sc_kernel kk = sc_kernel_gemm("g", 1, a, b, k, SC_KTP_NONE, 0, SC_ATTN_ANY);
        sc_compute_cfg cc = {SC_BF16, 1, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0};
        gm[i] = (sc_calib_gemm){2 * a * b * k, 2 * (a * k + k * b + a * b),
                                sc_cost_kernel_time(&sweep, &kk, &cc, 0), 0, a, b, k, 1};
    }
    sc_calib_plan pl[3];
    sc_calib_op op[9];
    kernel_ops(&truth, m, &part, 0, SC_ATTN_UNFUSED, 1, pl, op);
    kernel_ops(&truth, m, &part, 1, SC_ATTN_FLASH, 4, pl, op);
    kernel_ops(&truth, m, &part, 2, SC_ATTN_UNFUSED, 2, pl, op);
    /* flash changes the forward by more than the fit's tolerance */
    sc_stage_info un;
    sc_stage_cfg ucfg = pl[1].cfg;
    ucfg.attn = SC_ATTN_UNFUSED;
    REQUIRE(sc_cost_stage(&truth, m, &part, &ucfg, &un, &err) == SC_OK);
    CHECK(fabs(un.fwd_s / op[3].t - 1) > 0.01);

    sc_calib_points pts = {.dtype = SC_BF16, .n_gemm = NG, .gemm = gm, .n_ops = 9, .ops = op,
                           .n_plans = 3, .plans = pl};
    sc_cluster out;
    sc_calib_report rep;
    sc_status st = sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err);
    if (st)
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    REQUIRE(st == SC_OK);
    CHECK_NEAR(out.eff.gemm.kernel_s, 1e-6, 0.02); /* the steps', not the sweep's 6 us */
    CHECK_NEAR(out.eff.memory_bw * out.gpu.hbm_bytes_per_s,
               0.7 * base.gpu.hbm_bytes_per_s, 0.005);
    CHECK_NEAR(out.eff.bwd_factor, 0.9, 0.01);
    CHECK_NEAR(out.eff.gemm.eff_max * out.gpu.peak_flops[SC_BF16],
               truth.eff.gemm.eff_max * truth.gpu.peak_flops[SC_BF16], 0.01);
    CHECK(rep.ops_fit == (SC_CALIB_FIT_KERNEL | SC_CALIB_FIT_BWD));
    CHECK_NEAR(rep.kernel_before_s, 6e-6, 0.02);
    double ops_mape = -1;
    for (int i = 0; i < rep.n_gates; i++)
        if (!strcmp(rep.gates[i].what, "compute bf16 (measured ops)") &&
            !strcmp(rep.gates[i].gate, "mape"))
            ops_mape = rep.gates[i].value;
    CHECK(ops_mape >= 0 && ops_mape < 1e-3);
    CHECK(out.eff.op_overhead_s == base.eff.op_overhead_s); /* not what these plans use */
    CHECK_EQ_INT(rep.n_failed, 0);

    /* two plans: 5 distinct op points hold 2 parameters, not 3: the backward
     * factor is kept (said in the notes) and the rest still fitted */
    pts.n_ops = 6;
    pts.n_plans = 2;
    truth.eff.bwd_factor = base.eff.bwd_factor;
    kernel_ops(&truth, m, &part, 0, SC_ATTN_UNFUSED, 1, pl, op);
    kernel_ops(&truth, m, &part, 1, SC_ATTN_FLASH, 4, pl, op);
    st = sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err);
    if (st)
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    REQUIRE(st == SC_OK);
    CHECK(rep.ops_fit == SC_CALIB_FIT_KERNEL);
    CHECK(out.eff.bwd_factor == base.eff.bwd_factor);
    CHECK_STR_HAS(rep.notes, "backward factor kept");
    CHECK_NEAR(out.eff.gemm.kernel_s, 1e-6, 0.02);
    sc_partition_free(&part);
    sc_model_free(m);
}

/* The measured plans' attention kind reaches the fit: three flash plans of a
 * small GPT on the H200 preset, their timelines simulated there and read
 * back as measured, fit the preset's own time per kernel and HBM efficiency
 * with no residual. Costed unfused (the reader once left the attention out
 * of the plans it built), the same ops are off by several percent. */
TEST(calibrate_reads_the_plans_attention)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    char out[1 << 15], p[600], pp[600], dg[17], name[32];
    sc_error err;
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s model gen gpt --layers 2 --hidden 1024 --heads 8 --seq 1024 "
                       "--vocab 8192 -o m.json",
                       d, bin) == 0);
    const int mbs[3] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        REQUIRE(sc_test_sh(out, sizeof out,
                           "cd %s && %s sim --model m.json --cluster h200-sxm-1 --attn flash "
                           "--mbs %d --microbatches 2 -o p%d.json --timeline t%d.json",
                           d, bin, mbs[i], i, i) == 0);
        cJSON *t = NULL;
        snprintf(p, sizeof p, "%s/t%d.json", d, i);
        REQUIRE(sc_json_load(p, &t, &err) == SC_OK);
        cJSON_ReplaceItemInObject(t, "source", cJSON_CreateString("exec"));
        cJSON_AddStringToObject(t, "device", "NVIDIA H200 (test)");
        /* simulated with the fused kernel's rates: say so (an exec
         * timeline that does not ran it as two GEMMs) */
        cJSON_AddStringToObject(t, "flash_attention", "fused");
        snprintf(pp, sizeof pp, "%s/p%d.json", d, i);
        REQUIRE(sc_plan_file_digest(pp, dg, &err) == SC_OK);
        cJSON *pl = cJSON_AddObjectToObject(t, "plan");
        snprintf(name, sizeof name, "p%d.json", i);
        cJSON_AddStringToObject(pl, "file", name);
        cJSON_AddStringToObject(pl, "digest", dg);
        snprintf(p, sizeof p, "%s/m%d.json", d, i);
        REQUIRE(sc_json_save(p, t, &err) == SC_OK);
        cJSON_Delete(t);
    }
    int rc = sc_test_sh(out, sizeof out,
                        "cd %s && %s calibrate --cluster h200-sxm-1 m0.json m1.json m2.json "
                        "-o cal.json --json 2>&1",
                        d, bin);
    if (rc != 0)
        sc_test_fail(__FILE__, __LINE__, "calibrate: %s", out);
    REQUIRE(rc == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    sc_cluster h200;
    REQUIRE(sc_cluster_preset_get("h200-sxm-1", &h200, &err) == SC_OK);
    const cJSON *ks = cJSON_GetObjectItem(j, "kernel_s");
    REQUIRE(cJSON_IsNumber(ks));
    CHECK_NEAR(ks->valuedouble, h200.eff.gemm.kernel_s, 0.01);
    CHECK_NEAR(cJSON_GetObjectItem(j, "memory_bw")->valuedouble, h200.eff.memory_bw, 0.01);
    double mape = -1;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(j, "gates"))
    {
        const cJSON *w = cJSON_GetObjectItem(g, "what"), *n = cJSON_GetObjectItem(g, "gate");
        if (cJSON_IsString(w) && cJSON_IsString(n) &&
            !strcmp(w->valuestring, "compute bf16 (measured ops)") &&
            !strcmp(n->valuestring, "mape"))
            mape = cJSON_GetObjectItem(g, "value")->valuedouble;
    }
    CHECK(mape >= 0 && mape < 1e-3);
    cJSON_Delete(j);
    /* compare prices the plan's attention as the measurement ran it: fused
     * here (no error), two GEMMs when the timeline says so or, from exec,
     * says nothing */
    double err0 = 1, err1 = 0;
    sc_comparison *cmp = NULL;
    char pf[600], mf[600];
    snprintf(pf, sizeof pf, "%s/p1.json", d);
    snprintf(mf, sizeof mf, "%s/m1.json", d);
    REQUIRE(sc_compare(pf, mf, NULL, &cmp, &err) == SC_OK);
    err0 = cmp->step_err;
    sc_comparison_free(cmp);
    cJSON *t = NULL;
    REQUIRE(sc_json_load(mf, &t, &err) == SC_OK);
    cJSON_DeleteItemFromObject(t, "flash_attention");
    REQUIRE(sc_json_save(mf, t, &err) == SC_OK);
    cJSON_Delete(t);
    REQUIRE(sc_compare(pf, mf, NULL, &cmp, &err) == SC_OK);
    err1 = cmp->step_err;
    sc_comparison_free(cmp);
    CHECK(fabs(err0) < 1e-6);
    CHECK(fabs(err1) > 0.01);
}

/* compare prices each kernel exec timed alone as the executor ran it: a
 * weight GEMM's F its product, B its input gradient, W its weight gradient,
 * BW both; a batched core GEMM's backward both input gradients; a pass its
 * bytes at the HBM rate plus the time per kernel. Totals per op and the
 * MAPE follow. */
TEST(compare_kernels_priced_as_run)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    char out[1 << 14], pf[600], mf[600], dg[17];
    sc_error err;
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s model gen gpt --layers 2 --hidden 512 --heads 4 --seq 256 "
                       "--vocab 1024 -o m.json && %s sim --model m.json --cluster h200-sxm-1 --microbatches 2 "
                       "-o p.json --timeline t.json",
                       d, bin, bin) == 0);
    snprintf(pf, sizeof pf, "%s/p.json", d);
    snprintf(mf, sizeof mf, "%s/t.json", d);
    sc_timeline *t = NULL;
    REQUIRE(sc_timeline_load(mf, &t, &err) == SC_OK);
    snprintf(t->source, sizeof t->source, "exec");
    REQUIRE(sc_plan_file_digest(pf, dg, &err) == SC_OK);
    snprintf(t->plan_file, sizeof t->plan_file, "p.json");
    snprintf(t->plan_digest, sizeof t->plan_digest, "%s", dg);
    static const sc_tl_kernel ks[] = {
        {"fc1", "F", "wgemm", 1, 256, 2048, 512, 0, 2, 1e-5, 1},
        {"fc1", "B", "wgemm", 1, 256, 2048, 512, 0, 2, 1e-5, 1},
        {"fc1", "W", "wgemm", 1, 256, 2048, 512, 0, 2, 1e-5, 1},
        {"fc1", "BW", "wgemm", 1, 256, 2048, 512, 0, 2, 2e-5, 1},
        {"scores", "BW", "core", 4, 256, 256, 128, 0, 2, 1e-5, 1},
        {"ln1", "F", "mem", 0, 0, 0, 0, 1e6, 2, 1e-5, 1}};
    enum { NK = sizeof ks / sizeof ks[0] };
    t->kernels = sc_calloc(NK, sizeof *t->kernels);
    REQUIRE(t->kernels);
    memcpy(t->kernels, ks, sizeof ks);
    t->n_kernels = NK;
    REQUIRE(sc_timeline_save(t, mf, &err) == SC_OK);
    sc_timeline_free(t);
    sc_comparison *cmp = NULL;
    REQUIRE(sc_compare(pf, mf, NULL, &cmp, &err) == SC_OK);
    REQUIRE(cmp->n_kernels == NK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("h200-sxm-1", &c, &err) == SC_OK);
    double bf = c.eff.bwd_factor > 0 ? c.eff.bwd_factor : 1;
    double f = sc_cost_gemm_time(&c, SC_BF16, 1, 256, 2048, 512, 1);
    double in = sc_cost_gemm_time(&c, SC_BF16, 1, 256, 512, 2048, bf);
    double wt = sc_cost_gemm_time(&c, SC_BF16, 1, 512, 2048, 256, bf);
    double cin = sc_cost_gemm_time(&c, SC_BF16, 4, 256, 128, 256, bf) +
                 sc_cost_gemm_time(&c, SC_BF16, 4, 128, 256, 256, bf);
    double pass = c.eff.gemm.kernel_s + 1e6 / (c.gpu.hbm_bytes_per_s * c.eff.memory_bw);
    const double want[NK] = {f, in, wt, in + wt, cin, pass};
    double tot = 0, meas = 0;
    for (int i = 0; i < NK; i++) {
        CHECK_NEAR(cmp->kernels[i].pred, want[i], 1e-12);
        CHECK_NEAR(cmp->kernels[i].err, want[i] / ks[i].time_s - 1, 1e-9);
        tot += want[i] * ks[i].calls;
        meas += ks[i].time_s * ks[i].calls;
    }
    CHECK_NEAR(cmp->kern_pred[2], tot, 1e-12);
    CHECK_NEAR(cmp->kern_meas[2], meas, 1e-12);
    CHECK_NEAR(cmp->kern_pred[1], pass * 2, 1e-12);
    sc_comparison_free(cmp);
}

/* One H200's files (docs/gpu_check/h200-2026-12-04g/): the same plan run on
 * random and on zero operands. compare notes the zeros, and the preset
 * prices the random run, the one a training step resembles, within 10%
 * (measured +5.8%), where the zeros' full clock makes it 21% slow. */
TEST(compare_h200_operands)
{
    char out[1 << 15];
    const char *D = "docs/gpu_check/h200-2026-12-04g";
    const char *bin = sc_test_bin();
    double e[2];
    const char *ops[2] = {"random", "zeros"};
    for (int i = 0; i < 2; i++) {
        REQUIRE(sc_test_sh(out, sizeof out, "%s compare %s/plan_g27_flash.json "
                           "%s/measured_g27_flash_%s.json --json", bin, D, D, ops[i]) == 0);
        cJSON *j = cJSON_Parse(out);
        REQUIRE(j);
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "operands")), ops[i]));
        e[i] = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "step"), "error")->valuedouble;
        cJSON_Delete(j);
        REQUIRE(sc_test_sh(out, sizeof out, "%s compare %s/plan_g27_flash.json "
                           "%s/measured_g27_flash_%s.json", bin, D, D, ops[i]) == 0);
        CHECK_EQ_INT(strstr(out, "note: the measured GEMMs multiplied zeros") != NULL, i);
    }
    CHECK(fabs(e[0]) < 0.10);
    CHECK(e[1] > 0.10);
}

/* A GPU gemm bench timed in bursts (no hot_s: the H200 sweep of
 * 2026-12-04d) gets a note from calibrate; the same file marked hot does not. */
TEST(calibrate_notes_burst_gemm_benches)
{
    char out[1 << 15];
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *B = "docs/gpu_check/h200-2026-12-04d/bench_gemm.json";
    REQUIRE(sc_test_sh(out, sizeof out, "%s calibrate --force --cluster h200-sxm-1 %s -o %s/c.json "
                       "--json 2>/dev/null", bin, B, d) == 0);
    CHECK_STR_HAS(out, "timed in bursts");
    CHECK_STR_HAS(out, "no measured steps, so the GEMMs' level is the sweep's");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "sed 's/\"iters\":/\"hot_s\": 0.005, \"iters\":/' %s > %s/hot.json", B,
                       d) == 0);
    REQUIRE(sc_test_sh(out, sizeof out, "%s calibrate --force --cluster h200-sxm-1 %s/hot.json "
                       "-o %s/c2.json --json 2>/dev/null", bin, d, d) == 0);
    CHECK(!strstr(out, "timed in bursts"));
    CHECK_STR_HAS(out, "kernel_s"); /* it did calibrate */
}

/* The fit of the kernels timed alone (calibrate --kernels) recovers the
 * sustained rate, the time per kernel and the HBM efficiency that made the
 * times: GEMM calls of several shapes (forward, and a backward's two
 * GEMMs) and passes of several sizes on the h200-sxm-1 preset. Off by
 * default: the same points are then only counted, in a note. */
TEST(calibrate_kernels_timed_alone_recovers)
{
    sc_cluster base, u, out;
    sc_error err = {0};
    REQUIRE(sc_cluster_preset_get("h200-sxm-1", &base, &err) == SC_OK);
    u = base;
    u.eff.gemm.sustained = 1;
    u.eff.gemm.kernel_s = 0;
    const double S = 0.8, KS = 3e-6, E = 0.7;
    static const double shapes[][4] = {{1, 2048, 8192, 2048}, {1, 2048, 2048, 8192},
                                       {1, 4096, 7680, 2560}, {16, 2048, 2048, 128},
                                       {1, 2048, 50264, 2048}};
    static const double passes[] = {1e6, 16e6, 64e6, 256e6, 1e9};
    sc_calib_kernel k[2 * 5 + 5];
    int n = 0;
    for (int i = 0; i < 5; i++) {
        const double *g = shapes[i];
        for (int bwd = 0; bwd < 2; bwd++) {
            sc_calib_kernel *q = &k[n++];
            memset(q, 0, sizeof *q);
            double C = 0;
            if (!bwd) {
                q->n_gemm = 1;
                memcpy(q->gemm[0], (double[6]){g[0], g[1], g[2], g[3], 0, 1}, sizeof q->gemm[0]);
            } else {
                q->n_gemm = 2;
                memcpy(q->gemm[0], (double[6]){g[0], g[1], g[3], g[2], 1, 1}, sizeof q->gemm[0]);
                memcpy(q->gemm[1], (double[6]){g[0], g[3], g[2], g[1], 1, 1}, sizeof q->gemm[0]);
            }
            for (int j = 0; j < q->n_gemm; j++)
                C += sc_cost_gemm_time(&u, SC_BF16, q->gemm[j][0], q->gemm[j][1], q->gemm[j][2],
                                       q->gemm[j][3], 1);
            q->t = KS * q->n_gemm + C / S;
        }
    }
    for (int i = 0; i < 5; i++) {
        sc_calib_kernel *q = &k[n++];
        memset(q, 0, sizeof *q);
        q->bytes = passes[i];
        q->t = KS + passes[i] / (base.gpu.hbm_bytes_per_s * E);
    }
    sc_calib_points pts = {.dtype = SC_BF16, .n_kern = n, .kern = k, .fit_kernels = 1};
    static sc_calib_report rep;
    REQUIRE(sc_calib_fit_points(&base, &pts, 1, &out, &rep, &err) == SC_OK);
    CHECK_EQ_INT(rep.n_kern, n);
    CHECK_NEAR(out.eff.gemm.sustained, S, 1e-6);
    CHECK_NEAR(out.eff.gemm.kernel_s, KS, 1e-11);
    CHECK_NEAR(out.eff.memory_bw, E, 1e-6);
    CHECK(rep.kern_mape < 1e-9 && rep.kern_r2 > 0.999999);
    CHECK(rep.kern_mape_before > 0.01); /* the preset's 0.844, 2 us, 0.80 */
    /* off: counted in a note, nothing fitted (and nothing else to fit) */
    pts.fit_kernels = 0;
    CHECK(sc_calib_fit_points(&base, &pts, 1, &out, &rep, &err) == SC_EINVAL);
    /* too few passes: not fitted, said */
    pts.fit_kernels = 1;
    pts.n_kern = n - 4;
    REQUIRE(sc_calib_fit_points(&base, &pts, 1, &out, &rep, &err) == SC_OK);
    CHECK_EQ_INT(rep.n_kern, 0);
    CHECK_STR_HAS(rep.notes, "1 passes (need 2 of each)");
    CHECK_NEAR(out.eff.gemm.sustained, base.eff.gemm.sustained, 0);
}

/* calibrate --kernels on one H200's recorded files (docs/gpu_check/h200-2026-12-04g):
 * the fit is reported (JSON kernels_fit) within the physical ranges, and
 * without the flag the kernels are only counted (--force: on that run's
 * sweep the GEMM-size gate fails, MAPE 11.9%, which is not what this checks). */
TEST(calibrate_kernels_flag_on_h200_files)
{
    char out[1 << 15];
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *D = "docs/gpu_check/h200-2026-12-04g";
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s calibrate --force --kernels --cluster h200-sxm-1 %s/bench_gemm.json "
                       "%s/measured.json %s/measured_flash.json -o %s/k.json --json 2>/dev/null",
                       bin, D, D, D, d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *k = cJSON_GetObjectItem(j, "kernels_fit");
    REQUIRE(k);
    double sus = cJSON_GetObjectItem(k, "sustained")->valuedouble;
    double ks = cJSON_GetObjectItem(k, "kernel_s")->valuedouble;
    double mem = cJSON_GetObjectItem(k, "memory_bw")->valuedouble;
    CHECK(cJSON_GetObjectItem(k, "n")->valueint == 60);
    CHECK(sus > 0.7 && sus < 1.1);
    CHECK(ks > 0 && ks < 1e-5);
    CHECK(mem > 0.5 && mem <= 1);
    /* the cluster's GEMM statistics carry the standard errors of what was
     * written: the time per kernel the kernels timed alone fitted (it once
     * wrote 0 there), the eff_max the steps fitted (it once kept the sweep's) */
    double kse = cJSON_GetObjectItem(k, "kernel_se")->valuedouble;
    double sweep_se = -1;
    for (const cJSON *f = cJSON_GetObjectItem(j, "fits")->child; f; f = f->next)
        if (!strcmp(cJSON_GetObjectItem(f, "fit")->valuestring, "gemm model bf16"))
            sweep_se = cJSON_GetObjectItem(f, "a_se")->valuedouble;
    cJSON_Delete(j);
    char kf[600];
    snprintf(kf, sizeof kf, "%s/k.json", d);
    sc_error err = {0};
    sc_cluster c;
    REQUIRE(sc_cluster_load(kf, &c, &err) == SC_OK);
    CHECK(kse > 0 && c.eff.fits.gemm.se[1] == kse);
    CHECK(sweep_se > 0 && c.eff.fits.gemm.se[0] > 0 && c.eff.fits.gemm.se[0] != sweep_se);
    REQUIRE(sc_test_sh(out, sizeof out, "%s calibrate --force --cluster h200-sxm-1 "
                       "%s/bench_gemm.json %s/measured.json %s/measured_flash.json -o %s/k2.json "
                       "2>&1", bin, D, D, D, d) == 0);
    CHECK_STR_HAS(out, "60 kernels timed alone not fitted (calibrate --kernels fits them)");
    CHECK(!strstr(out, "no measured steps")); /* the steps set the level */
}

/* A timeline names its plan as written on the machine that ran it
 * (/tmp/gc/plan.json); copied here beside it, that plan is found even where a
 * file of the written name exists and is another plan: calibrate reads the
 * one whose digest the timeline recorded, and refuses, naming the file
 * and plan.digest, when neither is. */
TEST(calibrate_finds_the_plan_beside_its_timeline)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    char out[1 << 14], pf[600], tf[600], other[600], dg[17];
    sc_error err = {0};
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && mkdir -p ran here && %s model gen gpt --layers 2 --hidden 512 "
                       "--heads 4 --seq 256 --vocab 1024 -o here/m.json && cp here/m.json ran/ && "
                       "(cd ran && %s sim --model m.json --cluster h200-sxm-1 --microbatches 4 "
                       "-o p.json) && (cd here && %s sim --model m.json --cluster h200-sxm-1 "
                       "--microbatches 2 -o p.json --timeline t.json)",
                       d, bin, bin, bin) == 0);
    snprintf(pf, sizeof pf, "%s/here/p.json", d);
    snprintf(tf, sizeof tf, "%s/here/t.json", d);
    snprintf(other, sizeof other, "%s/ran/p.json", d);
    REQUIRE(sc_plan_file_digest(pf, dg, &err) == SC_OK);
    cJSON *t = NULL;
    REQUIRE(sc_json_load(tf, &t, &err) == SC_OK);
    cJSON_ReplaceItemInObject(t, "source", cJSON_CreateString("exec"));
    cJSON_AddStringToObject(t, "device", "NVIDIA H200 (test)");
    cJSON *pl = cJSON_AddObjectToObject(t, "plan");
    cJSON_AddStringToObject(pl, "file", other); /* the name it was run under */
    cJSON_AddStringToObject(pl, "digest", dg);
    REQUIRE(sc_json_save(tf, t, &err) == SC_OK);
    cJSON_Delete(t);
    /* read: its three op points (F, B, optimizer of one stage) reach the
     * fit, which wants four */
    int rc = sc_test_sh(out, sizeof out,
                        "%s calibrate --force --cluster h200-sxm-1 %s -o %s/here/c.json 2>&1",
                        bin, tf, d);
    CHECK(!strstr(out, "has changed since it was run"));
    CHECK_STR_HAS(out, "too few measured op points to fit bf16: 3");
    CHECK_EQ_INT(rc, 2);
    /* neither matches: refused, naming the written name and plan.digest */
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && cp ran/p.json here/p.json", d) == 0);
    rc = sc_test_sh(out, sizeof out,
                    "%s calibrate --force --cluster h200-sxm-1 %s -o %s/here/c2.json 2>&1", bin,
                    tf, d);
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_HAS(out, "plan.digest");
    CHECK_STR_HAS(out, "ran/p.json has changed since it was run");
}

/* Fused attention fitted from rates by shape (scripts/bench_flash.py): rates
 * the model itself gives under known flash_* values (causal and unmasked,
 * head sizes 64 and 128, sequences 512-16k, the backward falling later than
 * the forward) come back as those values; the model's MAPE over the points
 * is then ~0. */
TEST(calibrate_flash_recovers)
{
    sc_cluster base, truth, out;
    sc_error err = {0};
    REQUIRE(sc_cluster_preset_get("h200-sxm-1", &base, &err) == SC_OK);
    truth = base;
    sc_cluster_gemm *g = &truth.eff.gemm;
    g->flash_fwd = 0.55, g->flash_bwd = 0.40, g->flash_s0 = 400, g->flash_s0_full = 80;
    g->flash_s0_bwd = 1100, g->flash_s0_full_bwd = 500;
    g->flash_full = 1.08, g->flash_hd64 = 0.85;
    sc_calib_flash q[48];
    int n = 0;
    const double seqs[] = {512, 1024, 2048, 4096, 8192, 16384}, hds[] = {64, 128};
    sc_compute_cfg cc = {SC_BF16, 1, 0, 1, SC_ATTN_FLASH, 0, 0, 0, 0};
    for (int causal = 0; causal < 2; causal++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 6; i++) {
                double s = seqs[i], d = hds[h], bh = 16384 / s * (2048 / d);
                sc_kernel k = sc_kernel_flash("a", bh, s, s, d, causal, SC_KTP_BATCH);
                double tf = sc_cost_kernel_time(&truth, &k, &cc, 0);
                double tb = sc_cost_kernel_time(&truth, &k, &cc, 1);
                double fl = 4 * bh * s * s * d * (causal ? 0.5 : 1);
                q[n++] = (sc_calib_flash){causal, bh, s, d, fl / tf, 3.5 * fl / (tf + tb), 0};
            }
    const char *names[] = {"flash_bench.json"};
    sc_calib_points pts = {.dtype = (sc_dtype)-1, .n_flash = n, .flash = q,
                           .flash_dtype = SC_BF16, .n_files = 1, .files = names};
    snprintf(pts.flash_backend, sizeof pts.flash_backend, "flash");
    static sc_calib_report rep;
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_OK);
    const sc_cluster_gemm *o = &out.eff.gemm;
    CHECK_NEAR(o->flash_fwd, 0.55, 1e-3);
    CHECK_NEAR(o->flash_bwd, 0.40, 1e-3);
    CHECK_NEAR(o->flash_s0, 400, 2);
    CHECK_NEAR(o->flash_s0_bwd, 1100, 2);
    CHECK_NEAR(o->flash_s0_full, 80, 2);
    CHECK_NEAR(o->flash_s0_full_bwd, 500, 2);
    CHECK_NEAR(o->flash_full, 1.08, 2e-3);
    CHECK_NEAR(o->flash_hd64, 0.85, 2e-3);
    CHECK_EQ_INT(rep.n_flash, n);
    CHECK(rep.flash_mape < 2e-3);
    CHECK(rep.flash_mape_before > 0.05); /* the preset's FA3 rates */
    CHECK_EQ_INT(rep.n_failed, 0);
    CHECK(o->eff_max == base.eff.gemm.eff_max); /* GEMMs untouched */
    /* causal points at head size 128 alone: the fall is fitted, the rest kept */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (q[i].causal && q[i].head_dim == 128)
            q[m++] = q[i];
    pts.n_flash = m;
    REQUIRE(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_OK);
    CHECK_NEAR(out.eff.gemm.flash_s0, 400, 2);
    CHECK_NEAR(out.eff.gemm.flash_s0_bwd, 1100, 2);
    CHECK(out.eff.gemm.flash_full == base.eff.gemm.flash_full);
    CHECK(out.eff.gemm.flash_hd64 == base.eff.gemm.flash_hd64);
    CHECK_STR_HAS(rep.notes, "flash_full and flash_s0_full kept");
    CHECK_STR_HAS(rep.notes, "flash_hd64 kept");
    /* two sequences cannot fix a fall: refused at the points gate */
    pts.n_flash = 2;
    CHECK(sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err) == SC_EGATE);
    CHECK_STR_HAS(err.msg, "fused attention");
}

/* One H200's fused attention rates (docs/gpu_check/h200-2026-12-04g/
 * flash_bench.json: PyTorch 2.11's FlashAttention-2 and cuDNN): calibrate
 * fits the flash backend, says the cuDNN points were not, passes its gates,
 * and the cluster it writes prices the measured kernels as measured (the
 * forward + backward at 2k, causal, head 128: 214 TFLOP/s). */
TEST(calibrate_flash_on_h200_bench)
{
    char out[1 << 15], cf[600];
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *F = "docs/gpu_check/h200-2026-12-04g/flash_bench.json";
    snprintf(cf, sizeof cf, "%s/flash.json", d);
    REQUIRE(sc_test_sh(out, sizeof out, "%s calibrate --cluster h200-sxm-1 %s -o %s --json",
                       bin, F, cf) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *k = cJSON_GetObjectItem(j, "flash_fit");
    REQUIRE(k);
    CHECK_EQ_INT(cJSON_GetObjectItem(k, "n")->valueint, 24);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(k, "backend")), "flash"));
    double mape = cJSON_GetObjectItem(k, "mape")->valuedouble;
    CHECK(mape > 0 && mape < 0.05); /* 2.0% */
    CHECK(cJSON_GetObjectItem(k, "mape_before")->valuedouble > mape);
    cJSON_Delete(j);
    sc_cluster c;
    sc_error err = {0};
    REQUIRE(sc_cluster_load(cf, &c, &err) == SC_OK);
    double bh = 16384 / 2048 * 16, fl = 4 * bh * 2048.0 * 2048 * 128 * 0.5;
    sc_kernel kn = sc_kernel_flash("a", bh, 2048, 2048, 128, 1, SC_KTP_BATCH);
    sc_compute_cfg cc = {SC_BF16, 1, 0, 1, SC_ATTN_FLASH, 0, 0, 0, 0};
    double t = sc_cost_kernel_time(&c, &kn, &cc, 0) + sc_cost_kernel_time(&c, &kn, &cc, 1);
    CHECK_NEAR(3.5 * fl / t / 1e12 / 214.0, 1, 0.10);
    CHECK(c.eff.gemm.flash_s0 > 0 && c.eff.gemm.flash_fwd > c.eff.gemm.flash_bwd);
    /* the backward falls later, in both runs' data (s0 ~1150 against ~390) */
    CHECK(c.eff.gemm.flash_s0_bwd > 2 * c.eff.gemm.flash_s0);
    REQUIRE(sc_test_sh(out, sizeof out, "%s calibrate --cluster h200-sxm-1 %s -o %s/f2.json",
                       bin, F, d) == 0);
    CHECK_STR_HAS(out, "fused attention (24 shapes, backend flash)");
    CHECK_STR_HAS(out, "not fitted: cudnn");
    /* every other backend is named, one whose name holds another's too */
    cJSON *b = NULL;
    REQUIRE(sc_json_load(F, &b, &err) == SC_OK);
    cJSON *res = cJSON_GetObjectItem(b, "results");
    const char *extra[] = {"cudnn_v2", "cudnn"};
    for (int i = 0; i < 2; i++) {
        cJSON *q = cJSON_Duplicate(cJSON_GetArrayItem(res, 0), 1);
        cJSON_ReplaceItemInObject(q, "backend", cJSON_CreateString(extra[i]));
        cJSON_AddItemToArray(res, q);
    }
    while (cJSON_GetArraySize(res) > 26) /* the file's own cudnn points (24-47) go */
        cJSON_DeleteItemFromArray(res, 24);
    cJSON_AddNumberToObject(b, "dropout", 0); /* bench_flash.py's default, accepted */
    snprintf(cf, sizeof cf, "%s/multi.json", d);
    REQUIRE(sc_json_save(cf, b, &err) == SC_OK);
    cJSON_Delete(b);
    REQUIRE(sc_test_sh(out, sizeof out, "%s calibrate --cluster h200-sxm-1 %s -o %s/f3.json",
                       bin, cf, d) == 0);
    CHECK_STR_HAS(out, "not fitted: cudnn_v2, cudnn (");
}

/* Bad fused attention benches: one line naming the file and the field, exit 2,
 * nothing written. Each case replaces (or adds) one key of a good point, or
 * of the file. */
TEST(calibrate_flash_bad_inputs)
{
    char out[1 << 14], f[600], o[600];
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    static const char *const keys[] = {"backend", "mask", "head_dim", "seq", "batch", "heads",
                                       "fwd_tflops", "fwd_bwd_tflops", "dtype"};
    static const char *const vals[] = {"\"flash\"", "\"causal\"", "128", "2048", "8", "16",
                                       "280", "214", "\"bf16\""};
    enum { NK = sizeof keys / sizeof keys[0] };
    static const struct {
        const char *key, *val, *cluster, *want;
    } cases[] = {
        {"mask", "\"sliding\"", "h200-sxm-1", "results[0].mask: \"sliding\""},
        {"fwd_bwd_tflops", "1000", "h200-sxm-1", "results[0].fwd_bwd_tflops"},
        {"seq", "-4", "h200-sxm-1", "results[0].seq"},
        {"bogus", "1", "h200-sxm-1", "bogus"},
        {"dtype", "\"fp8\"", "h200-sxm-1", "dtype: \"fp8\""},
        {"", "", "dgx-a100-80g", "device: \"NVIDIA H200\""},
        /* rates measured with attention dropout (bench_flash.py --dropout)
         * are for comparing, not for fitting */
        {"dropout", "0.1", "h200-sxm-1",
         "dropout: 0.1: the fused attention rates calibrate fits are without dropout"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char point[1024] = "", top[128] = "";
        size_t len = 0;
        int added = 0;
        for (int k = 0; k < NK; k++) {
            const char *v = strcmp(keys[k], cases[i].key) ? vals[k] : (added = 1, cases[i].val);
            if (!strcmp(keys[k], "dtype"))
                snprintf(top, sizeof top, "\"dtype\": %s, ", v);
            else
                len += (size_t)snprintf(point + len, sizeof point - len, "%s\"%s\": %s",
                                        len ? ", " : "", keys[k], v);
        }
        if (!added && !strcmp(cases[i].key, "dropout")) /* a key of the file's */
            snprintf(top + strlen(top), sizeof top - strlen(top), "\"%s\": %s, ",
                     cases[i].key, cases[i].val);
        else if (!added && cases[i].key[0])
            snprintf(point + len, sizeof point - len, ", \"%s\": %s", cases[i].key,
                     cases[i].val);
        snprintf(f, sizeof f, "%s/bad%zu.json", d, i);
        snprintf(o, sizeof o, "%s/bad%zu.out.json", d, i);
        FILE *fp = fopen(f, "w");
        REQUIRE(fp);
        fprintf(fp,
                "{\"format\": \"stagecraft.flash_bench/1\", \"device\": \"NVIDIA H200\", "
                "%s\"results\": [{%s}]}\n", top, point);
        fclose(fp);
        int rc = sc_test_sh(out, sizeof out, "%s calibrate --cluster %s %s -o %s 2>&1", bin,
                            cases[i].cluster, f, o);
        CHECK_EQ_INT(rc, 2);
        CHECK_STR_HAS(out, f);
        CHECK_STR_HAS(out, cases[i].want);
        CHECK(!sc_test_exists(o));
    }
}

/* The scripts behind the fused attention rates (Debian's python3, no
 * packages needed): fit_flash.py reproduces the presets' fits and fits a
 * measured file as calibrate does (the backward's own fall); the GPU
 * benches refuse a bad argument (exit 2) and, without a CUDA GPU, say so and
 * exit 3. */
TEST(calibrate_flash_scripts)
{
    static char out[1 << 16];
    if (!sc_test_exists("/usr/bin/python3")) {
        sc_test_skip("no /usr/bin/python3");
        return;
    }
    REQUIRE(sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/fit_flash.py") == 0);
    CHECK_STR_HAS(out, "A100  fa2     R 193.5  s0 484  s0_full 184  full 1.059  hd64 0.900");
    CHECK_STR_HAS(out, "H100  fa3     R 654.8  s0 604  s0_full 210  full 1.022  hd64 0.709 (forward)");
    /* cuDNN's: the constants of presets.c (CUDNN_HOPPER) */
    CHECK_STR_HAS(out, "H100  cudnn   R 561.0  s0 388  s0_full 110  full 1.104  hd64 0.708 (forward)");
    CHECK_STR_HAS(out, "H100  cudnn   backward = FA3's x 0.9160 (R 541.5 / 591.2, Fig. 6)");
    REQUIRE(sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/fit_flash.py --measured "
                       "docs/gpu_check/h200-2026-12-04g/flash_bench.json") == 0);
    CHECK_STR_HAS(out, "measured on NVIDIA H200");
    CHECK_STR_HAS(out, "flash     fwd     R 336.9  s0 400");
    CHECK_STR_HAS(out, "flash     bwd     R 313.9  s0 1158");
    CHECK(sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/fit_flash.py --measured "
                     "docs/formats.md 2>&1") != 0);
    CHECK(sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/bench_flash.py --seqs 3000 "
                     "2>&1") == 2);
    CHECK_STR_HAS(out, "--seqs: 3000 does not divide --tokens 16384");
    CHECK(sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/bench_flash.py --dropout 1 "
                     "2>&1") == 2);
    CHECK_STR_HAS(out, "--dropout: 1 is not in [0, 1)");
    CHECK(sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/bench_optimizer.py --iters 1 "
                     "2>&1") == 2);
    int rc = sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/bench_flash.py 2>&1");
    CHECK(rc == 3 || rc == 0);
    if (rc == 3)
        CHECK_STR_HAS(out, "skipped");
    rc = sc_test_sh(out, sizeof out, "/usr/bin/python3 scripts/bench_optimizer.py 2>&1");
    CHECK(rc == 3 || rc == 0);
    if (rc == 3)
        CHECK_STR_HAS(out, "skipped");
}
