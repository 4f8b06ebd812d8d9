/* test_planner.c - the analytical estimate against the simulator, the
 * search, the tuner and the plan and tune commands. */
#include "check.h"
#include "pair_check.h"
#include "json.h"
#include "plan.h"
#include "planner_int.h"
#include "overhead.h"
#include "search.h"
#include "tune.h"

#include <math.h>

void sc_test_open_pair(const char *model, const char *cluster, int nodes, sc_model **m,
                       sc_cluster *c)
{
    sc_error err = {0};
    *m = NULL;
    if (sc_model_open(model, m, &err) || sc_cluster_open(cluster, c, &err) ||
        sc_cluster_set_nodes(c, nodes, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        sc_model_free(*m);
        *m = NULL;
    }
}

/* How far the planner's estimate may stand from the simulator on any layout
 * these tests try (planner_estimate_tracks_sim's bound); tighter bounds below
 * say what a family holds. */
#define ESTIMATE_TOL 0.15

/* The estimate is the search's filter: within 15% of the simulator on
 * typical layouts (the rings of a node's positions share its NICs between
 * all at once and the NICs carrying their work back to back from the earliest
 * start; the simulator lies between when pipeline stages finish at different
 * times), and its memory is the simulator's to the byte. */
TEST(planner_estimate_tracks_sim)
{
    struct {
        const char *model;
        int nodes, dp, tp, pp, v, m, mbs, zero, rc;
        const char *sched;
        const char *cluster;
        int sp;
        double nic_scale; /* the cluster's NIC rate times this (0: as it is) */
        int ov;           /* 1: tp_comm_overlap, 2: overlap_param_gather, 4: blocking p2p */
    } cs[] = {{"gpt-1.3b", 16, 8, 8, 2, 1, 8, 1, 0, 0, "1f1b", "p4d.24xlarge", 0, 0, 0},
              {"gpt-1.3b", 16, 16, 4, 2, 2, 8, 1, 1, 1, "interleaved", "p4d.24xlarge", 0, 0, 0},
              {"gpt-1.3b", 16, 32, 2, 2, 1, 8, 2, 2, 0, "zb-h1", "p4d.24xlarge", 0, 0, 0},
              {"gpt-1.3b", 16, 64, 2, 1, 1, 1, 8, 0, 1, "1f1b", "p4d.24xlarge", 0, 0, 0},
              {"gpt-13b", 16, 4, 8, 4, 1, 32, 1, 1, 2, "1f1b", "p4d.24xlarge", 0, 0, 0},
              {"gpt-13b", 16, 8, 4, 4, 1, 16, 1, 0, 2, "gpipe", "p4d.24xlarge", 0, 0, 0},
              {"gpt-13b", 16, 16, 8, 1, 1, 8, 1, 3, 1, "1f1b", "p4d.24xlarge", 0, 0, 0},
              /* a whole replica on one node (planner_estimate_tie_on_one_node) */
              {"gpt-1.3b", 2, 8, 1, 2, 1, 8, 1, 0, 0, "1f1b", "p4d.24xlarge", 0, 0, 0},
              /* 52 gradient buckets a rank, each a ring of 256 at EFA's latency: the
               * estimate once counted that latency once (73 ms against 214 ms) */
              {"gpt-1.3b", 64, 256, 2, 1, 1, 1, 2, 2, 0, "1f1b", "p5.48xlarge", 1, 0, 0},
              /* two positions a node on a slow network (p4d's NICs at 1/8): with
               * their 8 rings taken to run in lockstep alone it came out +8.3% */
              {"gpt-1.3b", 16, 16, 4, 2, 1, 8, 1, 0, 0, "1f1b", "p4d.24xlarge", 0, 0.125, 0},
              /* FSDP-like ZeRO 3 (tp = pp = 1): the simulator once exposed every
               * parameter gather, -11.8%, -2.0% and -21.8% against the estimate,
               * which prefetches them (step_zero3_gathers_prefetch) */
              {"gpt-13b", 1, 8, 1, 1, 1, 3, 2, 3, 0, "1f1b", "dgx-a100-80g", 0, 0, 0},
              {"gpt-13b", 1, 8, 1, 1, 1, 16, 4, 3, 2, "1f1b", "p4d.24xlarge", 0, 0, 0},
              {"gpt-6.7b", 4, 32, 1, 1, 1, 2, 4, 3, 0, "1f1b", "p4d.24xlarge", 0, 0, 0},
              /* ZeRO 3 with a pipeline: each position's gathered units
               * (sc_cost_zero3_gathered) */
              {"gpt-13b", 16, 8, 8, 2, 1, 16, 1, 3, 2, "1f1b", "p4d.24xlarge", 0, 0, 0},
              /* tp communication overlap (lower_tp_comm_overlap) */
              {"gpt-13b", 2, 2, 8, 1, 1, 8, 1, 1, 0, "1f1b", "dgx-h100", 1, 0, 1},
              {"gpt-13b", 16, 8, 8, 2, 1, 16, 1, 1, 2, "1f1b", "p4d.24xlarge", 1, 0, 1},
              {"gpt-1.3b", 16, 16, 4, 2, 2, 8, 1, 1, 1, "interleaved", "p4d.24xlarge", 1, 0, 1},
              /* the parameter gather beside the next forward (lower_overlap_param_gather) */
              {"gpt-1.3b", 2, 16, 1, 1, 1, 1, 2, 1, 0, "1f1b", "p4d.24xlarge", 0, 0, 2},
              {"gpt-13b", 16, 8, 4, 4, 1, 16, 1, 1, 0, "1f1b", "p4d.24xlarge", 1, 0, 3},
              {"gpt-13b", 16, 16, 8, 1, 1, 8, 1, 2, 0, "1f1b", "dgx-a100-80g", 1, 0, 2},
              /* pipeline sends that block their sender (step_blocking_p2p) */
              {"gpt-13b", 16, 4, 8, 4, 1, 32, 1, 1, 2, "1f1b", "p4d.24xlarge", 0, 0, 4},
              {"gpt-1.3b", 16, 16, 4, 2, 2, 8, 1, 1, 1, "interleaved", "p4d.24xlarge", 0, 0, 4},
              {"gpt-13b", 16, 8, 4, 4, 1, 16, 1, 0, 2, "1f1b", "p4d.24xlarge", 0, 0.125, 4}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        sc_model *m;
        sc_cluster c;
        sc_test_open_pair(cs[i].model, cs[i].cluster, cs[i].nodes, &m, &c);
        REQUIRE(m);
        if (cs[i].nic_scale > 0)
            c.inter.nic_bytes_per_s *= cs[i].nic_scale;
        sc_step_cfg cfg = {.dp = cs[i].dp, .tp = cs[i].tp, .pp = cs[i].pp, .v = cs[i].v,
                           .m = cs[i].m, .mbs = cs[i].mbs, .zero = cs[i].zero,
                           .recompute = (sc_recompute)cs[i].rc, .schedule = cs[i].sched,
                           .sp = cs[i].sp, .tp_comm_overlap = cs[i].ov & 1,
                           .overlap_param_gather = (cs[i].ov & 2) != 0,
                           .no_overlap_p2p_comm = (cs[i].ov & 4) != 0, .one_replica = 1};
        sc_estimate e;
        sc_step_result *r;
        sc_error err;
        REQUIRE(sc_estimate_step(m, &c, &cfg, &e, &err) == SC_OK);
        REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
        double rel = fabs(e.step_s / r->step_time_s - 1);
        if (rel > ESTIMATE_TOL)
            sc_test_fail(__FILE__, __LINE__, "case %zu: estimate %.4f s vs simulated %.4f s", i,
                         e.step_s, r->step_time_s);
        double peak = 0;
        for (int p = 0; p < r->pp; p++)
            peak = fmax(peak, r->mem[p].total);
        CHECK_NEAR(e.peak_mem, peak, 1e-9);
        sc_step_result_free(r);
        sc_model_free(m);
    }
}

/* The reduce-scatters and all-gathers run at their own share of NVLink
 * (efficiency.intra.ag_rs_bw_eff: 0.82 on H100, where the allreduce runs at
 * the link's rate in the switch) in the simulator and the estimate alike:
 * sequence parallelism's tp collectives take longer with it than at the
 * allreduce's share, and the same layout's allreduces without sp do not move. */
TEST(planner_ag_rs_share_in_sim_and_estimate)
{
    double t[2][2][2]; /* [sp][ag_rs kept][sim, estimate] */
    for (int sp = 0; sp < 2; sp++)
        for (int keep = 0; keep < 2; keep++) {
            sc_model *m;
            sc_cluster c;
            sc_test_open_pair("gpt-13b", "dgx-h100", 1, &m, &c);
            REQUIRE(m);
            CHECK_NEAR(c.eff.ag_rs_bw_eff[SC_LINK_INTRA], 0.82, 1e-12);
            if (!keep)
                c.eff.ag_rs_bw_eff[SC_LINK_INTRA] = 0;
            sc_step_cfg cfg = {.dp = 1, .tp = 8, .pp = 1, .v = 1, .m = 4, .mbs = 1,
                               .recompute = SC_RECOMPUTE_NONE, .schedule = "1f1b", .sp = sp,
                               .one_replica = 1};
            sc_estimate e;
            sc_step_result *r;
            sc_error err;
            REQUIRE(sc_estimate_step(m, &c, &cfg, &e, &err) == SC_OK);
            REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
            t[sp][keep][0] = r->step_time_s;
            t[sp][keep][1] = e.step_s;
            sc_step_result_free(r);
            sc_model_free(m);
        }
    for (int k = 0; k < 2; k++) {
        if (!(t[1][1][k] > t[1][0][k] * 1.005))
            sc_test_fail(__FILE__, __LINE__, "%d: %.6f vs %.6f", k, t[1][1][k], t[1][0][k]);
        CHECK(t[0][1][k] == t[0][0][k]);        /* allreduces: unchanged */
    }
}

/* The estimate of cfg against the simulator on model over nodes of cluster:
 * fails (naming what) when they differ by more than tol; *dp_share (if
 * non-NULL) gets the simulated step's data-parallel share. */
static double estimate_within(const char *model, const char *cluster, int nodes,
                              const sc_step_cfg *cfg, double tol, const char *what,
                              double *dp_share)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair(model, cluster, nodes, &m, &c);
    if (!m)
        return NAN;
    sc_estimate e;
    sc_step_result *r;
    sc_error err;
    if (sc_estimate_step(m, &c, cfg, &e, &err) || sc_step_simulate(m, &c, cfg, &r, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s: %s", what, err.msg);
        sc_model_free(m);
        return NAN;
    }
    double rel = e.step_s / r->step_time_s - 1;
    if (!(fabs(rel) <= tol))
        sc_test_fail(__FILE__, __LINE__, "%s: estimate %.4f s vs simulated %.4f s", what,
                     e.step_s, r->step_time_s);
    if (dp_share)
        *dp_share = r->breakdown.dp / r->step_time_s;
    sc_step_result_free(r);
    sc_model_free(m);
    return rel;
}

/* ZeRO 3 bound by its gathers (gpt-1.3b, tp 2, over 16 p4d nodes' EFA): the
 * gathers move during the whole of the position's stream, its tp allreduces and
 * recomputes too, and through the pipeline's bubbles; the positions of a node
 * share its NICs, and a tied copy is not gathered. The estimate once set the
 * gathers against the forwards and backwards alone, at the share of every
 * position at once: +7.1% and +9.1% against the simulator without a pipeline,
 * +11% and +24% with 2 and 4 stages; then -1.3%, +1.3%, +4.4%, +3.3%; since
 * every backward reduce-scatters its buckets during it, +0.7%, +1.2%, +4.2%,
 * +2.9%. */
TEST(planner_estimate_zero3_comm_bound)
{
    struct {
        int dp, pp, m;
        double tol;
    } cs[] = {{16, 1, 8, 0.04}, {32, 1, 4, 0.04}, {16, 2, 8, 0.07}, {8, 4, 16, 0.07}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        sc_step_cfg cfg = {.dp = cs[i].dp, .tp = 2, .pp = cs[i].pp, .v = 1, .m = cs[i].m,
                           .mbs = 1, .zero = 3, .recompute = SC_RECOMPUTE_SELECTIVE,
                           .schedule = "1f1b", .one_replica = 1};
        char what[64];
        snprintf(what, sizeof what, "dp %d pp %d", cs[i].dp, cs[i].pp);
        double dp = 0;
        estimate_within("gpt-1.3b", "p4d.24xlarge", 16, &cfg, cs[i].tol, what, &dp);
        CHECK(dp > 0.3); /* bound by the gathers */
    }
}

/* FSDP-like ZeRO 3 (tp = pp = 1) over EFA, one or two microbatches: a gather
 * moves beside the op before the one that waits for it (the backward's beside
 * the forward, a third of the compute), so what exceeds that window is exposed
 * even when all of a step's collectives would fit beside all of its compute;
 * the first op's window also holds the rest of its own gather; and the last
 * microbatch's reduce-scatter is the grad-final reduction the tail counts, not
 * one more in the total. The estimate once took the collectives to stream
 * beside the whole pipeline: -10.9%, -8.8% and +1.3% against the simulator
 * (and, in gpt-13b's search on 16 p4d nodes, put a plan 6.9% slower than the
 * best first); now +0.1%, -0.1% and +0.7%. */
TEST(planner_estimate_zero3_windows)
{
    struct {
        const char *model;
        int nodes, dp, m, mbs;
        sc_recompute rc;
    } cs[] = {{"gpt-13b", 16, 128, 2, 2, SC_RECOMPUTE_SELECTIVE},
              {"gpt-13b", 64, 512, 1, 2, SC_RECOMPUTE_SELECTIVE},
              {"gpt-1.3b", 16, 128, 2, 2, SC_RECOMPUTE_NONE}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        sc_step_cfg cfg = {.dp = cs[i].dp, .tp = 1, .pp = 1, .v = 1, .m = cs[i].m,
                           .mbs = cs[i].mbs, .zero = 3, .recompute = cs[i].rc,
                           .schedule = "1f1b", .one_replica = 1};
        char what[96];
        snprintf(what, sizeof what, "%s dp %d m %d", cs[i].model, cs[i].dp, cs[i].m);
        estimate_within(cs[i].model, "p4d.24xlarge", cs[i].nodes, &cfg, 0.03, what, NULL);
    }
}

/* PyTorch FSDP's ZeRO 2 (framework torch) gathers before every forward, beside
 * the previous microbatch's backward, and not after the optimizer: the
 * estimate follows the simulator (gpt-1.3b, dp 16 over 2 p4d nodes, 1 and 4
 * microbatches: +0.3% and +0.1% when written), and it exposes less than
 * DeepSpeed's ZeRO 2, which gathers the updated parameters after the
 * optimizer (`plan --fix` at each framework's own overhead: 10.8 against
 * 58.6 ms exposed at one microbatch). */
TEST(planner_estimate_fsdp_zero2)
{
    for (int k = 0; k < 2; k++) {
        sc_model *m;
        sc_cluster c;
        sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 2, &m, &c);
        REQUIRE(m);
        sc_error err;
        sc_step_cfg cfg = {.dp = 16, .tp = 1, .pp = 1, .v = 1, .m = k ? 4 : 1, .mbs = 2,
                           .zero = 2, .recompute = SC_RECOMPUTE_SELECTIVE,
                           .schedule = "1f1b", .one_replica = 1};
        double dp_exposed[2];
        for (int f = 0; f < 2; f++) {
            REQUIRE(sc_overhead_set(&c, f ? "deepspeed" : "torch", 0.05, &err) == SC_OK);
            sc_estimate e;
            sc_step_result *r;
            REQUIRE(sc_estimate_step(m, &c, &cfg, &e, &err) == SC_OK);
            REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
            if (!(fabs(e.step_s / r->step_time_s - 1) <= 0.02))
                sc_test_fail(__FILE__, __LINE__, "%s m %d: estimate %.4f s vs simulated %.4f s",
                             f ? "deepspeed" : "torch", cfg.m, e.step_s, r->step_time_s);
            dp_exposed[f] = r->breakdown.dp;
            sc_step_result_free(r);
        }
        /* DeepSpeed's gather after the optimizer is exposed whole; FSDP's
         * before each forward only its first unit */
        CHECK(dp_exposed[0] < 0.5 * dp_exposed[1]);
        sc_model_free(m);
    }
}

/* ZeRO 3 with interleaved chunks (each position gathers its v chunks' parameters
 * in turn): the estimate against the simulator on gpt-1.3b over 16 p4d nodes,
 * gpt-13b over 32 DGX A100 and gpt-175b over 128. Measured when written: +4.8%,
 * +3.5%, +3.9%, +0.9%, -5.7%; the same layouts under ZeRO 1 are +7.0% (gpt-1.3b,
 * v 2) and -3.7% (gpt-175b): ZeRO 3 adds no error of its own beyond the
 * estimate's. Since every backward reduce-scatters its buckets during it: +3.8%,
 * +2.6%, +2.7%, +0.6%, -7.7%. The last is bound by its collectives 2.6 times
 * over (10.3 s of gathers and reduce-scatters a position against a 4.0 s
 * pipeline): each gather waits for the op before its own to start, which waits
 * on the pipeline, and the gaps that leaves on the links are in the simulator
 * only (the estimate takes the links as busy throughout); no plan search keeps
 * such a layout. So that case is held to the planner-wide bound and to the
 * side those gaps put it on (below the simulator), not to a bound set at its
 * own figure. */
TEST(planner_estimate_zero3_interleaved)
{
    struct {
        const char *model, *cluster;
        int nodes, dp, tp, pp, v, m;
        int comm_bound; /* the collectives outlast the pipeline */
    } cs[] = {{"gpt-1.3b", "p4d.24xlarge", 16, 16, 2, 2, 2, 8, 0},
              {"gpt-1.3b", "p4d.24xlarge", 16, 8, 2, 4, 2, 16, 0},
              {"gpt-1.3b", "p4d.24xlarge", 16, 8, 2, 4, 3, 16, 0},
              {"gpt-13b", "dgx-a100-80g", 32, 32, 4, 2, 4, 16, 0},
              {"gpt-175b", "dgx-a100-80g", 128, 16, 8, 8, 2, 16, 1}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        sc_step_cfg cfg = {.dp = cs[i].dp, .tp = cs[i].tp, .pp = cs[i].pp, .v = cs[i].v,
                           .m = cs[i].m, .mbs = 1, .zero = 3,
                           .recompute = SC_RECOMPUTE_SELECTIVE, .schedule = "interleaved",
                           .one_replica = 1};
        char what[96];
        snprintf(what, sizeof what, "%s dp %d pp %d v %d", cs[i].model, cs[i].dp, cs[i].pp,
                 cs[i].v);
        double rel = estimate_within(cs[i].model, cs[i].cluster, cs[i].nodes, &cfg,
                                     cs[i].comm_bound ? ESTIMATE_TOL : 0.07, what, NULL);
        if (cs[i].comm_bound)
            CHECK(rel < 0);
    }
}

/* A replica on one node: the tied embedding's allreduce between its first and last
 * pipeline position runs over NVLink in the simulator, and the estimate charges it
 * there too (both 1.13 ms). It once sent it through the NICs: 48.9 ms, and +14.3% on
 * the whole step of the case above. */
TEST(planner_estimate_tie_on_one_node)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 1, &m, &c);
    REQUIRE(m);
    sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 2, .v = 1, .m = 8, .mbs = 1, .schedule = "1f1b",
                       .one_replica = 1};
    sc_estimate e;
    sc_step_result *r;
    sc_error err;
    REQUIRE(sc_estimate_step(m, &c, &cfg, &e, &err) == SC_OK);
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    /* dp 1: the tie's allreduce is the only data-parallel communication */
    CHECK(r->breakdown.dp > 0 && e.dp_s > 0);
    CHECK(fabs(e.dp_s / r->breakdown.dp - 1) <= 0.05);
    sc_step_result_free(r);
    sc_model_free(m);
}

TEST(planner_search_ranks_and_fixes)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 4, &m, &c);
    REQUIRE(m);
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 64;
    o.simulate = 6;
    sc_search *s;
    sc_error err;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    long en, fit;
    int n;
    sc_search_counts(s, &en, &fit, &n);
    CHECK(en > 100 && fit > 0 && fit <= en);
    CHECK(n >= 2 && n <= 6);
    /* by step time, except inside a tie (steps within SC_SEARCH_TIE) */
    for (int i = 0; i + 1 < n; i++)
        CHECK(sc_search_ranked(s, i)->sim->step_time_s <=
                  sc_search_ranked(s, i + 1)->sim->step_time_s ||
              sc_search_tie(s, i) != SC_TIE_NONE);
    for (int i = 0; i < n; i++) {
        const sc_step_cfg *g = &sc_search_ranked(s, i)->cfg;
        CHECK_EQ_INT(g->dp * g->tp * g->pp, 32);
        CHECK_EQ_INT((long)g->dp * g->m * g->mbs, 64);
        CHECK(8 % g->tp == 0 && 16 % g->tp == 0);
    }
    double best = sc_search_ranked(s, 0)->sim->step_time_s;
    for (int i = 1; i < n; i++) /* the fastest, a tie's winner aside */
        best = fmin(best, sc_search_ranked(s, i)->sim->step_time_s);
    sc_search_free(s);
    /* fixing the winner's layout cannot beat it */
    o.fix_pp = 2;
    o.fix_schedule = "1f1b";
    o.fix_zero = 1;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    sc_search_counts(s, NULL, NULL, &n);
    for (int i = 0; i < n; i++) {
        const sc_candidate *k = sc_search_ranked(s, i);
        CHECK_EQ_INT(k->cfg.pp, 2);
        CHECK(!strcmp(k->cfg.schedule, "1f1b"));
        CHECK_EQ_INT(k->cfg.zero, 1);
        CHECK(k->sim->step_time_s >= best * (1 - 1e-12));
    }
    sc_search_free(s);
    /* memory mode: the winner is within 5% of the fastest simulated plan and
     * needs no more memory than any other plan within that band */
    sc_search_opts_default(&o);
    o.global_batch = 64;
    o.optimize_memory = 1;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    sc_search_counts(s, NULL, NULL, &n);
    double fastest = INFINITY;
    for (int i = 0; i < n; i++)
        fastest = fmin(fastest, sc_search_ranked(s, i)->sim->step_time_s);
    const sc_step_result *w = sc_search_ranked(s, 0)->sim;
    CHECK(w->step_time_s <= 1.05 * fastest);
    double wpeak = 0;
    for (int p = 0; p < w->pp; p++)
        wpeak = fmax(wpeak, w->mem[p].total);
    for (int i = 1; i < n; i++) {
        const sc_step_result *r = sc_search_ranked(s, i)->sim;
        double pk = 0;
        for (int p = 0; p < r->pp; p++)
            pk = fmax(pk, r->mem[p].total);
        if (r->step_time_s <= 1.05 * fastest)
            CHECK(wpeak <= pk);
    }
    sc_search_free(s);
    /* nothing matches / nothing fits */
    sc_search_opts_default(&o);
    o.global_batch = 3;
    o.fix_dp = 32;
    CHECK(sc_search_run(m, &c, &o, &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "no configuration");
    sc_model_free(m);
    sc_test_open_pair("gpt-175b", "h200-sxm-1", 1, &m, &c);
    sc_search_opts_default(&o);
    o.global_batch = 8;
    CHECK(sc_search_run(m, &c, &o, &s, &err) == SC_ENOFIT);
    CHECK_STR_HAS(err.msg, "does not fit: needs ");
    CHECK_STR_HAS(err.msg, " GiB per GPU, has 131.");
    sc_model_free(m);
}

TEST(planner_tune_curve)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 2, &m, &c);
    REQUIRE(m);
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 64;
    o.fix_dp = 2;
    o.fix_tp = 2;
    o.fix_pp = 4;
    o.max_mbs = 32;
    sc_tune *t;
    sc_error err;
    REQUIRE(sc_tune_run(m, &c, &o, &t, &err) == SC_OK);
    CHECK(t->n >= 3);
    for (int i = 0; i < t->n; i++) {
        CHECK_EQ_INT((long)t->pts[i].m * t->pts[i].mbs * 2, 64);
        if (i)
            CHECK(t->pts[i].m > t->pts[i - 1].m);
        CHECK(t->pts[t->best].step_s <= t->pts[i].step_s);
    }
    /* every swept (m, mbs) is either a point or skipped with a reason */
    CHECK_EQ_INT(t->n + t->n_skipped, 6);
    for (int i = 0; i < t->n_skipped; i++)
        CHECK(t->skipped[i].reason[0] != '\0');
    /* the 1F1B bubble shrinks as m grows */
    CHECK(t->pts[t->n - 1].bubble_fraction < t->pts[0].bubble_fraction);
    char path[600];
    snprintf(path, sizeof path, "%s/tune.json", sc_test_tmpdir());
    cJSON *j = sc_tune_to_json(t);
    REQUIRE(j && sc_json_save(path, j, &err) == SC_OK);
    cJSON_Delete(j);
    sc_tune *u;
    REQUIRE(sc_tune_load(path, &u, &err) == SC_OK);
    CHECK_EQ_INT(u->n, t->n);
    CHECK_EQ_INT(u->best, t->best);
    CHECK(u->pts[1].step_s == t->pts[1].step_s);
    sc_tune_free(u);
    sc_tune_free(t);
    o.fix_pp = 0;
    CHECK(sc_tune_run(m, &c, &o, &t, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--dp, --tp and --pp");
    sc_model_free(m);
}

static char out[1 << 16];

/* plan -o writes the winner; sim --plan replays it to the same step time;
 * tune -o and plot tune draw the curve. */
TEST(planner_cli)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 4 --global-batch "
                       "64 --top 4 -o %s/plan.json",
                       bin, d) == 0);
    CHECK_STR_HAS(out, "why #1 wins");
    CHECK_STR_HAS(out, "winner written to");
    char path[600];
    snprintf(path, sizeof path, "%s/plan.json", d);
    sc_plan *p;
    sc_error err;
    REQUIRE(sc_plan_load(path, &p, &err) == SC_OK);
    REQUIRE(p->has_prediction);
    REQUIRE(sc_test_sh(out, sizeof out, "%s sim --plan %s --json", bin, path) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK_NEAR(cJSON_GetObjectItem(j, "step_time_s")->valuedouble, p->step_time_s, 1e-12);
    cJSON_Delete(j);
    sc_plan_free(p);
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch "
                       "32 --dp 2 --tp 2 --pp 4 -o %s/tune.json",
                       bin, d) == 0);
    CHECK_STR_HAS(out, "<- best");
    REQUIRE(sc_test_sh(out, sizeof out, "%s plot tune %s/tune.json -o %s/tune.png", bin, d, d) ==
            0);
    snprintf(path, sizeof path, "%s/tune.png", d);
    CHECK(sc_test_exists(path));
    /* bad input: exit 2 and a message */
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-1.3b --cluster p4d.24xlarge "
                     "--global-batch 8 --fix tp=3", bin) == 2);
    CHECK_STR_HAS(out, "tp 3 does not divide the 16 heads of blocks.0.attn");
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-1.3b --cluster p4d.24xlarge "
                     "--global-batch 8 --fix bogus=1", bin) == 2);
    CHECK_STR_HAS(out, "unknown key 'bogus'");
    /* strict shared groups: a tied GPT cannot be split across stages */
    REQUIRE(sc_test_sh(out, sizeof out, "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                       "--global-batch 64 --top 3 --shared strict --json", bin) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *ranked = cJSON_GetObjectItem(j, "ranked");
    for (const cJSON *x = ranked ? ranked->child : NULL; x; x = x->next)
        CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(x, "config"), "pp")->valueint, 1);
    cJSON_Delete(j);
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                     "--global-batch 64 --shared strict --fix pp=2", bin) == 2);
    CHECK_STR_HAS(out, "shared group 'wte' spans embed..head");
    CHECK(sc_test_sh(out, sizeof out, "%s sim --plan tests/corpus/model/dup_key.json", bin) == 2);
    CHECK_STR_HAS(out, "format");
}

/* overlap_grad_reduce as a plan setting: plan --overlap-grad-reduce 0 writes
 * "overlap_grad_reduce": false, its step is longer than the default's (the
 * estimate and the simulator expose the whole reduction), sim --plan replays it,
 * tune and whatif take the flag, and the Megatron-LM export passes
 * --overlap-grad-reduce only for a plan that overlaps. */
TEST(planner_overlap_grad_reduce_setting)
{
    const char *bin = sc_test_bin();
    if (!sc_test_exists(bin))
        return;
    const char *d = sc_test_tmpdir();
    const char *common = "--model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
                         "--dp 16 --tp 1 --pp 1 --mbs 2 --zero 1 --top 1";
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s -o %s/on.json", bin, common, d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --overlap-grad-reduce 0 -o %s/off.json", bin,
                     common, d) == 0);
    char p_on[600], p_off[600];
    snprintf(p_on, sizeof p_on, "%s/on.json", d);
    snprintf(p_off, sizeof p_off, "%s/off.json", d);
    sc_plan *on = NULL, *off = NULL;
    sc_error err = {0};
    REQUIRE(sc_plan_load(p_on, &on, &err) == SC_OK);
    REQUIRE(sc_plan_load(p_off, &off, &err) == SC_OK);
    CHECK(on->overlap_grad_reduce == 1 && off->overlap_grad_reduce == 0);
    CHECK(off->step_time_s > on->step_time_s);
    CHECK(off->breakdown.dp > on->breakdown.dp);
    /* the step is longer by the extra exposed reduction, less the compute the
     * overlapped one slowed (the cluster's overlap_slowdown) */
    CHECK(on->breakdown.compute >= off->breakdown.compute);
    CHECK_NEAR(off->step_time_s - on->step_time_s,
               (off->breakdown.dp + off->breakdown.compute) -
                   (on->breakdown.dp + on->breakdown.compute),
               1e-6);
    sc_plan_free(on);
    sc_plan_free(off);
    CHECK(sc_test_sh(out, sizeof out, "grep -c overlap_grad_reduce %s", p_on) == 1);
    CHECK(sc_test_sh(out, sizeof out, "grep -c '\"overlap_grad_reduce\":.false' %s", p_off) == 0);
    /* export: the flag only when the plan overlaps */
    CHECK(sc_test_sh(out, sizeof out, "%s export %s --to megatron -o %s/mon", bin, p_on, d) == 0);
    CHECK(sc_test_sh(out, sizeof out,
                     "grep -c -- --overlap-grad-reduce %s/mon/megatron_torchrun.sh", d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s export %s --to megatron -o %s/moff", bin, p_off, d) ==
          0);
    CHECK(sc_test_sh(out, sizeof out,
                     "grep -c -- --overlap-grad-reduce %s/moff/megatron_torchrun.sh", d) == 1);
    /* tune takes it; a value other than 0 or 1 is a usage error */
    CHECK(sc_test_sh(out, sizeof out, "%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                     "--global-batch 64 --dp 16 --tp 1 --pp 1 --zero 1 --overlap-grad-reduce 0",
                     bin) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 8 "
                     "--microbatches 1 --overlap-grad-reduce 2", bin) == 2);
    /* whatif --sp: every point uses sequence parallelism (so tp >= 2) */
    CHECK(sc_test_sh(out, sizeof out, "%s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes "
                     "1,2 --global-batch 64 --tokens 1e9 --sp -o %s/wsp --json", bin, d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *pts = cJSON_GetObjectItem(j, "points"), *p;
    int n = 0;
    cJSON_ArrayForEach(p, pts) {
        const cJSON *g = cJSON_GetObjectItem(p, "config");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(g, "sp")));
        CHECK(cJSON_GetObjectItem(g, "tp")->valueint >= 2);
        n++;
    }
    CHECK(n == 2);
    cJSON_Delete(j);
}

/* A plan setting's two plans: `common` planned without and with `flag 1` into
 * d/off.json and d/on.json (their paths in p_off and p_on, cap bytes each),
 * loaded into *off and *on (NULL when a step failed, which it reports). The
 * key is written in the second plan alone, and sim --plan replays the second
 * to its own step with the key in its config. */
static void setting_plans(const char *d, const char *common, const char *flag, const char *key,
                          char *p_off, char *p_on, size_t cap, sc_plan **off, sc_plan **on)
{
    const char *bin = sc_test_bin();
    sc_error err = {0};
    *off = *on = NULL;
    snprintf(p_off, cap, "%s/off.json", d);
    snprintf(p_on, cap, "%s/on.json", d);
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s -o %s", bin, common, p_off) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s %s 1 -o %s", bin, common, flag, p_on) == 0);
    CHECK(sc_plan_load(p_off, off, &err) == SC_OK);
    CHECK(sc_plan_load(p_on, on, &err) == SC_OK);
    CHECK(sc_test_sh(out, sizeof out, "grep -c '\"%s\":.true' %s", key, p_off) == 1);
    CHECK(sc_test_sh(out, sizeof out, "grep -c '\"%s\":.true' %s", key, p_on) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s sim --plan %s --json", bin, p_on) == 0);
    cJSON *j = cJSON_Parse(out);
    CHECK(j != NULL);
    if (j && *on) {
        double s = (*on)->step_time_s;
        CHECK_NEAR(cJSON_GetObjectItem(j, "step_time_s")->valuedouble, s, 1e-9 * s);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), key)));
    }
    cJSON_Delete(j);
}

/* Whether plan's Megatron-LM export (into d/sub) passes flag: 1, 0, or -1
 * when the export failed. */
static int megatron_passes(const char *plan, const char *d, const char *sub, const char *flag)
{
    const char *bin = sc_test_bin();
    if (sc_test_sh(out, sizeof out, "%s export %s --to megatron -o %s/%s", bin, plan, d, sub))
        return -1;
    return sc_test_sh(out, sizeof out, "grep -q -- '%s$' %s/%s/megatron_torchrun.sh", flag, d,
                      sub) == 0;
}

/* tp_comm_overlap as a plan setting: plan --tp-comm-overlap 1 gives it to the
 * candidates with sp (written "tp_comm_overlap": true; absent otherwise), whose
 * steps expose less tp time and compute more; sim --plan replays it; a plan file with it but no sp is
 * refused naming the file and the key, as is sim --tp-comm-overlap 1 without
 * --sp; the Megatron-LM export passes --tp-comm-overlap; whatif and tune take
 * the flag. */
TEST(planner_tp_comm_overlap_setting)
{
    const char *bin = sc_test_bin();
    if (!sc_test_exists(bin))
        return;
    const char *d = sc_test_tmpdir();
    const char *common = "--model gpt-13b --cluster dgx-h100 --nodes 2 --global-batch 64 "
                         "--dp 2 --tp 8 --pp 1 --mbs 1 --zero 1 --sp --top 1";
    char p_on[600], p_off[600];
    sc_plan *on, *off;
    setting_plans(d, common, "--tp-comm-overlap", "tp_comm_overlap", p_off, p_on, sizeof p_on,
                  &off, &on);
    REQUIRE(on && off);
    CHECK(on->tp_comm_overlap == 1 && off->tp_comm_overlap == 0);
    /* less tp time exposed, more compute (chunked tp GEMMs, slowed beside
     * the collectives); the step itself may go either way */
    CHECK(on->breakdown.tp < off->breakdown.tp);
    CHECK(on->breakdown.compute > off->breakdown.compute);
    CHECK(on->step_time_s != off->step_time_s);
    sc_plan_free(on);
    sc_plan_free(off);
    /* the key without sp is refused, naming the file and the key */
    CHECK(sc_test_sh(out, sizeof out,
                     "sed 's/\"sp\":.true/\"sp\": false/' %s > %s/nosp.json && "
                     "%s sim --plan %s/nosp.json", p_on, d, bin, d) == 2);
    CHECK_STR_HAS(out, "nosp.json: tp_comm_overlap");
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-13b --cluster dgx-h100 --tp 8 "
                     "--microbatches 1 --tp-comm-overlap 1", bin) == 2);
    CHECK_STR_HAS(out, "needs sp");
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-13b --cluster dgx-h100 --tp 8 --sp "
                     "--microbatches 1 --tp-comm-overlap 2", bin) == 2);
    /* a search where no candidate could have it is a usage error */
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-13b --cluster dgx-h100 --nodes 2 "
                     "--global-batch 64 --tp 1 --tp-comm-overlap 1", bin) == 2);
    CHECK_STR_HAS(out, "tp is 1");
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-13b --cluster dgx-h100 --nodes 2 "
                     "--global-batch 64 --fix sp=0 --tp-comm-overlap 1", bin) == 2);
    CHECK_STR_HAS(out, "sp is off");
    /* export */
    CHECK(megatron_passes(p_on, d, "mon", "--tp-comm-overlap") == 1);
    CHECK(megatron_passes(p_off, d, "moff", "--tp-comm-overlap") == 0);
    /* whatif and tune take it: every whatif point with sp has it */
    CHECK(sc_test_sh(out, sizeof out, "%s whatif --model gpt-13b --cluster dgx-h100 --nodes "
                     "1,2 --global-batch 64 --tokens 1e9 --sp --tp-comm-overlap 1 -o %s/wov "
                     "--json", bin, d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *pts = cJSON_GetObjectItem(j, "points"), *p;
    int n = 0;
    cJSON_ArrayForEach(p, pts) {
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "config"),
                                               "tp_comm_overlap")));
        n++;
    }
    CHECK(n == 2);
    cJSON_Delete(j);
    CHECK(sc_test_sh(out, sizeof out, "%s tune --model gpt-13b --cluster dgx-h100 --nodes 2 "
                     "--global-batch 64 --dp 2 --tp 8 --pp 1 --zero 1 --sp "
                     "--tp-comm-overlap 1 -o %s/tune.json", bin, d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "grep -c '\"tp_comm_overlap\":.true' %s/tune.json", d) ==
          0);
}

/* overlap_param_gather as a plan setting: plan --overlap-param-gather 1 gives
 * it to the candidates with ZeRO 1 or 2 (written "overlap_param_gather": true),
 * whose step is shorter on one position; sim --plan replays it; a plan file
 * with it under ZeRO 0, or without overlap_grad_reduce, is refused naming the
 * file and the key; sim refuses it with ZeRO 3; the Megatron-LM export passes
 * --overlap-param-gather; whatif and tune take it. */
TEST(planner_overlap_param_gather_setting)
{
    const char *bin = sc_test_bin();
    if (!sc_test_exists(bin))
        return;
    const char *d = sc_test_tmpdir();
    const char *common = "--model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
                         "--dp 16 --tp 1 --pp 1 --mbs 2 --zero 1 --top 1";
    char p_on[600], p_off[600];
    sc_plan *on, *off;
    setting_plans(d, common, "--overlap-param-gather", "overlap_param_gather", p_off, p_on,
                  sizeof p_on, &off, &on);
    REQUIRE(on && off);
    CHECK(on->overlap_param_gather == 1 && off->overlap_param_gather == 0);
    CHECK(on->step_time_s < off->step_time_s);
    CHECK(on->breakdown.dp < off->breakdown.dp);
    sc_plan_free(on);
    sc_plan_free(off);
    /* the key where it cannot apply is refused, naming the file and the key */
    CHECK(sc_test_sh(out, sizeof out,
                     "sed 's/\"zero\":.1,/\"zero\": 0,/' %s > %s/z0.json && "
                     "%s sim --plan %s/z0.json", p_on, d, bin, d) == 2);
    CHECK_STR_HAS(out, "z0.json: overlap_param_gather");
    CHECK(sc_test_sh(out, sizeof out,
                     "sed 's/\"overlap_param_gather\"/\"overlap_grad_reduce\": false, "
                     "\"overlap_param_gather\"/' %s > %s/nogr.json && %s sim --plan %s/nogr.json",
                     p_on, d, bin, d) == 2);
    CHECK_STR_HAS(out, "nogr.json: overlap_param_gather");
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 8 "
                     "--zero 3 --microbatches 1 --overlap-param-gather 1", bin) == 2);
    CHECK_STR_HAS(out, "ZeRO 1 or 2");
    /* a search where no candidate could have it is a usage error */
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                     "--global-batch 64 --zero 3 --overlap-param-gather 1", bin) == 2);
    CHECK_STR_HAS(out, "needs ZeRO 1 or 2 (--zero 3)");
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                     "--global-batch 64 --overlap-grad-reduce 0 --overlap-param-gather 1",
                     bin) == 2);
    CHECK_STR_HAS(out, "--overlap-grad-reduce 1");
    /* export */
    CHECK(megatron_passes(p_on, d, "mon", "--overlap-param-gather") == 1);
    CHECK(megatron_passes(p_off, d, "moff", "--overlap-param-gather") == 0);
    /* tune records it; whatif's points with ZeRO 1 or 2 have it */
    CHECK(sc_test_sh(out, sizeof out, "%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                     "--global-batch 64 --dp 16 --tp 1 --pp 1 --zero 1 --overlap-param-gather 1 "
                     "-o %s/tune.json", bin, d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "grep -c '\"overlap_param_gather\":.true' %s/tune.json",
                     d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes "
                     "2,4 --global-batch 64 --tokens 1e9 --overlap-param-gather 1 "
                     "-o %s/wov --json", bin, d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *pts = cJSON_GetObjectItem(j, "points"), *p;
    int n = 0;
    cJSON_ArrayForEach(p, pts) {
        const cJSON *g = cJSON_GetObjectItem(p, "config");
        int z = cJSON_GetObjectItem(g, "zero")->valueint;
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(g, "overlap_param_gather")) ==
              (z == 1 || z == 2));
        n++;
    }
    CHECK(n == 2);
    cJSON_Delete(j);
}

/* The size factors (cluster.h, sc_size_curve) reach the estimate as they reach
 * the simulator: tp collectives 4 times slower and sends 4 times faster, the
 * estimate stays within the filter's 15% of the simulator and moves the same way. */
TEST(planner_estimate_follows_size_factors)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 16, &m, &c);
    REQUIRE(m);
    sc_step_cfg cfg = {.dp = 8, .tp = 8, .pp = 2, .v = 1, .m = 8, .mbs = 1, .schedule = "1f1b",
                       .one_replica = 1};
    sc_estimate e[2];
    sc_step_result *r[2];
    sc_error err;
    for (int k = 0; k < 2; k++) {
        if (k) {
            c.eff.coll_curve[SC_LINK_INTRA] = (sc_size_curve){2, {1e3, 1e12}, {0.25, 0.25}};
            c.eff.p2p_curve[SC_LINK_INTER] = (sc_size_curve){1, {1}, {4}};
        }
        REQUIRE(sc_estimate_step(m, &c, &cfg, &e[k], &err) == SC_OK);
        REQUIRE(sc_step_simulate(m, &c, &cfg, &r[k], &err) == SC_OK);
        double rel = fabs(e[k].step_s / r[k]->step_time_s - 1);
        if (rel > ESTIMATE_TOL)
            sc_test_fail(__FILE__, __LINE__, "case %d: estimate %.4f s vs simulated %.4f s", k,
                         e[k].step_s, r[k]->step_time_s);
    }
    double de = e[1].step_s - e[0].step_s, ds = r[1]->step_time_s - r[0]->step_time_s;
    printf("#   estimate %+.4f s, simulator %+.4f s\n", de, ds);
    CHECK(de > 0 && ds > 0);
    CHECK_NEAR(de, ds, 0.25);
    for (int k = 0; k < 2; k++)
        sc_step_result_free(r[k]);
    sc_model_free(m);
}

/* One table serves every candidate of its shape: its data-parallel terms are kept for
 * the last (cluster, dp, bucket size, dtype) asked (estimate.c, dp_terms). Estimates on a
 * table reused across a walk of those keys, each step changing one of them and some
 * returning to an earlier key, with every ZeRO stage and schedule at each, equal those of
 * a table built for each call, to the bit. */
static int same_estimate(const sc_estimate *a, const sc_estimate *b)
{
    return a->step_s == b->step_s && a->pipe_s == b->pipe_s && a->bubble_s == b->bubble_s &&
           a->compute_s == b->compute_s && a->tp_s == b->tp_s && a->pp_s == b->pp_s &&
           a->dp_s == b->dp_s && a->optimizer_s == b->optimizer_s &&
           a->peak_mem == b->peak_mem && a->fits == b->fits;
}

TEST(planner_estimate_table_reused)
{
    sc_model *m;
    sc_cluster c[2];
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 16, &m, &c[0]);
    REQUIRE(m);
    c[1] = c[0];
    c[1].inter.nic_bytes_per_s /= 4; /* a slower network: other dp terms */
    sc_error err;
    sc_partition part;
    REQUIRE(sc_partition_uniform(m, 4, &part, &err) == SC_OK);
    sc_stage_table shared;
    REQUIRE(sc_stage_table_build(m, &c[0], 2, 2, 2, 0, 0, SC_ATTN_UNFUSED, 1, 0, 0, 0, &part, &shared,
                                 &err) == SC_OK);
    /* {dp, bucket bytes, cluster, dtype}: one of them changes at each step */
    const struct {
        int dp;
        double bucket;
        int c;
        sc_dtype dt;
    } keys[] = {{8, 0, 0, SC_BF16},     {32, 0, 0, SC_BF16},    {32, 50e6, 0, SC_BF16},
                {32, 50e6, 1, SC_BF16}, {8, 50e6, 1, SC_BF16},  {8, 0, 1, SC_BF16},
                {8, 0, 0, SC_BF16},     {8, 0, 0, SC_FP32},     {8, 0, 0, SC_BF16},
                {1, 0, 0, SC_BF16},     {32, 0, 0, SC_BF16}};
    const char *scheds[] = {"1f1b", "interleaved", "gpipe", "zb-h1"};
    int n = 0, n_keys = (int)SC_ARRAY_LEN(keys);
    double dp_s[SC_ARRAY_LEN(keys)];
    for (int i = 0; i < n_keys; i++)
        for (int z = 0; z < 4; z++) {
            sc_step_cfg cfg = {.dp = keys[i].dp, .tp = 2, .pp = 2, .v = 2, .m = 4 + z, .mbs = 1,
                               .zero = z, .recompute = (sc_recompute)(z % 3),
                               .schedule = scheds[(i + z) % 4], .bucket_bytes = keys[i].bucket};
            const sc_cluster *ck = &c[keys[i].c];
            sc_stage_table fresh;
            REQUIRE(sc_stage_table_build(m, &c[0], 2, 2, 2, 0, 0, SC_ATTN_UNFUSED, 1, 0, 0, 0, &part,
                                         &fresh, &err) == SC_OK);
            sc_estimate a, e;
            sc_estimate_fast(&shared, ck, &cfg, keys[i].dt, &a);
            sc_estimate_fast(&fresh, ck, &cfg, keys[i].dt, &e);
            sc_stage_table_free(&fresh);
            n++;
            if (!same_estimate(&a, &e))
                sc_test_fail(__FILE__, __LINE__,
                             "key %d (dp %d, bucket %.0f, cluster %d, dtype %d) zero %d: "
                             "reused %.9g s, fresh %.9g s (dp %.9g, %.9g)",
                             i, cfg.dp, cfg.bucket_bytes, keys[i].c, (int)keys[i].dt, z,
                             a.step_s, e.step_s, a.dp_s, e.dp_s);
            if (z == 1)
                dp_s[i] = e.dp_s;
        }
    CHECK(n == 4 * n_keys);
    /* each step of the walk moved the data-parallel time (ZeRO 1), so a memo that
     * missed any key's change would have failed above */
    for (int i = 1; i < n_keys; i++)
        if (dp_s[i] == dp_s[i - 1])
            sc_test_fail(__FILE__, __LINE__, "key %d: dp time %.9g s as key %d's", i, dp_s[i],
                         i - 1);
    sc_stage_table_free(&shared);
    sc_partition_free(&part);
    sc_model_free(m);
}

/* Pipeline sends that block their sender (sc_step_cfg no_overlap_p2p_comm:
 * Megatron-LM's non-interleaved schedules, its interleaved one before 2023,
 * DeepSpeed's pipeline engine): the same compute, more exposed pipeline
 * time and a longer step, by about what the estimate adds (each op that
 * sends waits for its message); nothing changes without a pipeline. */
TEST(step_blocking_p2p)
{
    static const struct {
        const char *model, *cluster, *sched;
        int nodes, dp, tp, pp, v, m;
    } cs[] = {{"gpt-13b", "p4d.24xlarge", "1f1b", 16, 4, 8, 4, 1, 16},
              {"gpt-1.3b", "p4d.24xlarge", "interleaved", 4, 4, 4, 2, 2, 8},
              {"gpt-1.3b", "dgx-a100-80g", "gpipe", 1, 1, 2, 4, 1, 8},
              {"gpt-1.3b", "dgx-a100-80g", "1f1b", 1, 8, 1, 1, 1, 4}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        sc_model *m;
        sc_cluster c;
        sc_test_open_pair(cs[i].model, cs[i].cluster, cs[i].nodes, &m, &c);
        REQUIRE(m);
        sc_step_cfg cfg = {.dp = cs[i].dp, .tp = cs[i].tp, .pp = cs[i].pp, .v = cs[i].v,
                           .m = cs[i].m, .mbs = 1, .schedule = cs[i].sched, .one_replica = 1};
        sc_step_result *ov, *bl;
        sc_estimate e0, e1;
        sc_error err = {0};
        REQUIRE(sc_step_simulate(m, &c, &cfg, &ov, &err) == SC_OK);
        REQUIRE(sc_estimate_step(m, &c, &cfg, &e0, &err) == SC_OK);
        cfg.no_overlap_p2p_comm = 1;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &bl, &err) == SC_OK);
        REQUIRE(sc_estimate_step(m, &c, &cfg, &e1, &err) == SC_OK);
        CHECK_NEAR(bl->breakdown.compute, ov->breakdown.compute, 1e-9);
        double ds = bl->step_time_s - ov->step_time_s, de = e1.step_s - e0.step_s;
        if (cs[i].pp == 1) {
            CHECK(ds == 0 && de == 0);
        } else {
            CHECK(ds > 0 && de > 0);
            CHECK(bl->breakdown.pp > ov->breakdown.pp);
            /* the estimate adds every op's send, an upper bound; the simulator
             * less where a receive already waited for the message (the closed
             * form: step_closed_form_blocking_p2p) */
            if (!(ds <= de * (1 + 1e-9)))
                sc_test_fail(__FILE__, __LINE__, "case %zu: the simulator adds %.4f s, the "
                             "estimate %.4f s, to a step of %.4f s", i, ds, de,
                             ov->step_time_s);
        }
        sc_step_result_free(ov);
        sc_step_result_free(bl);
        sc_model_free(m);
    }
}

/* --overlap-p2p-comm 0 through the commands: sim's JSON and plan say so
 * (overlap_p2p_comm false, absent when true), sim --plan replays it, and a
 * default plan replays with blocking sends when asked; a validation row
 * takes the key (a boolean); the Megatron-LM export passes it on for the
 * interleaved schedule and notes what its other schedules do. */
TEST(plan_overlap_p2p_comm_through_commands)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *lay = "--model gpt-1.3b --cluster p4d.24xlarge --nodes 4 --dp 4 --tp 4 --pp 2 "
                      "--microbatches 8";
    double t[4];
    const char *runs[4][2] = {{"--overlap-p2p-comm 0 -o %s/bl.json", ""},
                              {"-o %s/ov.json", ""},
                              {NULL, "%s/bl.json"},
                              {NULL, "%s/ov.json --overlap-p2p-comm 0"}};
    for (int i = 0; i < 4; i++) {
        char cmd[1024], extra[700];
        if (runs[i][0]) {
            snprintf(extra, sizeof extra, runs[i][0], d);
            snprintf(cmd, sizeof cmd, "%s sim %s %s --json", bin, lay, extra);
        } else {
            snprintf(extra, sizeof extra, runs[i][1], d);
            snprintf(cmd, sizeof cmd, "%s sim --plan %s --json", bin, extra);
        }
        REQUIRE(sc_test_sh(out, sizeof out, "%s", cmd) == 0);
        cJSON *j = cJSON_Parse(out);
        REQUIRE(j);
        t[i] = cJSON_GetObjectItem(j, "step_time_s")->valuedouble;
        const cJSON *k = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "overlap_p2p_comm");
        CHECK_EQ_INT(k != NULL && cJSON_IsFalse(k), i != 1);
        cJSON_Delete(j);
    }
    CHECK(t[0] > t[1]);
    CHECK(t[2] == t[0] && t[3] == t[0]);
    REQUIRE(sc_test_sh(out, sizeof out, "grep -c overlap_p2p_comm %s/bl.json; "
                       "grep -c overlap_p2p_comm %s/ov.json", d, d) != 0);
    CHECK_STR_HAS(out, "1\n0\n");
    /* the export */
    REQUIRE(sc_test_sh(out, sizeof out, "%s sim %s --v 2 --schedule interleaved "
                       "--overlap-p2p-comm 0 -o %s/il.json >/dev/null && %s export %s/il.json "
                       "--to megatron", bin, "--model gpt-1.3b --cluster p4d.24xlarge --nodes 4 "
                       "--dp 4 --tp 4 --pp 2 --microbatches 8", d, bin, d) == 0);
    CHECK_STR_HAS(out, "--no-overlap-p2p-communication");
    REQUIRE(sc_test_sh(out, sizeof out, "%s export %s/ov.json --to megatron", bin, d) == 0);
    CHECK_STR_HAS(out, "non-interleaved schedule waits for each pipeline message");
    CHECK(!strstr(out, "--no-overlap-p2p-communication"));
    REQUIRE(sc_test_sh(out, sizeof out, "%s export %s/bl.json --to megatron", bin, d) == 0);
    CHECK(!strstr(out, "non-interleaved schedule waits"));
}
