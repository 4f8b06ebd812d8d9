/* test_step.c - the step builder against closed forms, the cost models,
 * golden timelines and its errors. */
#include "check.h"
#include "cost.h"
#include "json.h"
#include "schedule.h"
#include "step.h"
#include "pair_check.h"
#include "timeline.h"

#include <math.h>
#include <stdlib.h>

/* L identical leaf blocks (each a layer), no parameters unless params > 0,
 * shardable by tp with tp_bytes of allreduce when tp_bytes > 0. */
static sc_model *blocks(int L, double params, double tp_bytes)
{
    sc_model *m = sc_model_new("blocks", SC_BF16, 16);
    sc_module *r = sc_model_add(m, NULL, "blocks", "model");
    for (int i = 0; i < L; i++) {
        char n[32];
        snprintf(n, sizeof n, "b%d", i);
        sc_module *b = sc_model_add(m, r, n, "block");
        b->flops_fwd = 1e12;
        b->params = params;
        b->act_out_bytes = 1e6;
        b->act_saved_bytes = 4e6;
        if (tp_bytes > 0)
            sc_module_set_tp(b, tp_bytes, 1);
    }
    sc_error err;
    if (sc_model_finish(m, "<t>", &err)) {
        sc_model_free(m);
        return NULL;
    }
    return m;
}

/* A cluster whose communication is free: alpha 0 and links so fast that
 * the megabytes moved take ~1e-24 s. */
static sc_cluster free_comm(int nodes, int gpn)
{
    sc_cluster c;
    sc_error err;
    sc_cluster_preset_get("dgx-a100-80g", &c, &err);
    c.nodes = nodes;
    c.gpus_per_node = gpn;
    c.intra.bytes_per_s = 1e30;
    c.inter.nic_bytes_per_s = 1e30;
    c.eff.alpha_s[0] = c.eff.alpha_s[1] = 0;
    return c;
}

/* p4d.24xlarge cut to `nodes` nodes of one GPU: every data-parallel ring
 * crosses the NICs. */
static sc_status one_gpu_nodes(int nodes, sc_cluster *c)
{
    sc_error err;
    sc_status st = sc_cluster_preset_get("p4d.24xlarge", c, &err);
    c->nodes = nodes;
    c->gpus_per_node = 1;
    return st;
}

static double stage_time(const sc_cluster *c, const sc_model *m, int first, int n, int fwd)
{
    double f, b;
    sc_error err;
    sc_cost_modules_time(c, m->leaves + first, n, m->dtype, 1, 1, &f, &b, &err);
    return fwd ? f : b;
}

static double sim_step(const sc_model *m, const sc_cluster *c, sc_step_cfg *cfg)
{
    sc_step_result *r = NULL;
    sc_error err = {0};
    if (sc_step_simulate(m, c, cfg, &r, &err)) {
        sc_test_fail(__FILE__, __LINE__, "simulate: %s", err.msg);
        return -1;
    }
    double t = r->step_time_s;
    /* the breakdown adds up to the step on average */
    const sc_step_breakdown *k = &r->breakdown;
    CHECK_NEAR(k->compute + k->recompute + k->optimizer + k->tp + k->pp + k->dp + k->bubble, t,
               1e-9);
    sc_step_result_free(r);
    return t;
}

TEST(step_closed_form_gpipe_1f1b)
{
    int P[] = {1, 2, 4, 4, 8}, M[] = {1, 4, 4, 9, 16};
    for (size_t i = 0; i < SC_ARRAY_LEN(P); i++) {
        int p = P[i], mm = M[i];
        sc_model *m = blocks(2 * p, 0, 0);
        sc_cluster c = free_comm(1, 8);
        double tf = stage_time(&c, m, 0, 2, 1), tb = stage_time(&c, m, 0, 2, 0);
        const char *scheds[] = {"gpipe", "1f1b"};
        for (int s = 0; s < 2; s++) {
            sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = p, .v = 1, .m = mm, .mbs = 1,
                               .schedule = scheds[s]};
            CHECK_NEAR(sim_step(m, &c, &cfg), (mm + p - 1) * (tf + tb), 1e-9);
        }
        sc_model_free(m);
    }
}

/* Pipeline sends that block their sender (no_overlap_p2p_comm), on GPipe
 * over two stages with messages of tau each way: beside the compute the step
 * is (m + 1)(tf + tb) + 2 tau (one forward and one backward hop); blocking,
 * stage 0's every forward and stage 1's every backward also wait for their
 * message, (m + 1)(tf + tb) + 2m tau. tau is read off the first. */
TEST(step_closed_form_blocking_p2p)
{
    int M[] = {1, 4, 9};
    for (size_t i = 0; i < SC_ARRAY_LEN(M); i++) {
        int mm = M[i];
        sc_model *m = blocks(2, 0, 0);
        sc_cluster c;
        REQUIRE(one_gpu_nodes(2, &c) == SC_OK);
        double tf = stage_time(&c, m, 0, 1, 1), tb = stage_time(&c, m, 0, 1, 0);
        sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 2, .v = 1, .m = mm, .mbs = 1,
                           .schedule = "gpipe"};
        double ov = sim_step(m, &c, &cfg), tau = (ov - (mm + 1) * (tf + tb)) / 2;
        CHECK(tau > 0);
        cfg.no_overlap_p2p_comm = 1;
        CHECK_NEAR(sim_step(m, &c, &cfg), (mm + 1) * (tf + tb) + 2 * mm * tau, 1e-9);
        sc_model_free(m);
    }
}

TEST(step_closed_form_interleaved)
{
    int P[] = {2, 4, 4}, M[] = {4, 4, 8}, V[] = {2, 2, 3};
    for (size_t i = 0; i < SC_ARRAY_LEN(P); i++) {
        int p = P[i], mm = M[i], v = V[i];
        sc_model *m = blocks(p * v, 0, 0);
        sc_cluster c = free_comm(1, 8);
        double tf = stage_time(&c, m, 0, 1, 1), tb = stage_time(&c, m, 0, 1, 0);
        sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = p, .v = v, .m = mm, .mbs = 1,
                           .schedule = "interleaved"};
        double ideal = mm * v * (tf + tb);
        double step = sim_step(m, &c, &cfg);
        CHECK_NEAR(step, ideal + (p - 1) * (tf + tb), 1e-9);
        /* the bubble is (p - 1) / (v m) of the ideal time */
        CHECK_NEAR((step - ideal) / ideal, (p - 1.0) / (v * mm), 1e-9);
        sc_model_free(m);
    }
}

TEST(step_closed_form_zbh1)
{
    int P[] = {2, 4, 4}, M[] = {4, 4, 8};
    for (size_t i = 0; i < SC_ARRAY_LEN(P); i++) {
        int p = P[i], mm = M[i];
        sc_model *m = blocks(p, 0, 0);
        sc_cluster c = free_comm(1, 8);
        double tf = stage_time(&c, m, 0, 1, 1), tbw = stage_time(&c, m, 0, 1, 0);
        double tb = tbw / 2, tw = tbw / 2; /* B and W halves */
        sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = p, .v = 1, .m = mm, .mbs = 1,
                           .schedule = "zb-h1"};
        double step = sim_step(m, &c, &cfg);
        CHECK_NEAR(step, mm * (tf + tb + tw) + (p - 1) * (tf + tb - tw), 1e-9);
        sc_model_free(m);
    }
}

/* One dp allreduce, exposed whole after a one-bucket backward, equals the
 * cost model's ring time; two rings on one NIC take twice as long. */
TEST(step_dp_allreduce_matches_ring)
{
    sc_model *m = blocks(1, 50e6, 0);
    sc_cluster c;
    sc_error err;
    REQUIRE(one_gpu_nodes(4, &c) == SC_OK);
    sc_step_cfg cfg = {.dp = 4, .tp = 1, .pp = 1, .v = 1, .m = 1, .mbs = 1, .schedule = "1f1b",
                       .bucket_bytes = 1e12};
    sc_step_result *r;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    double w, g, o, ring;
    sc_cost_state_bytes(SC_BF16, &w, &g, &o);
    REQUIRE(sc_cost_coll(&c, "ring", SC_COLL_ALLREDUCE, 50e6 * g, 4, 1, &ring, &err) == SC_OK);
    CHECK_NEAR(r->breakdown.dp, ring, 1e-9);
    sc_step_result_free(r);
    /* two GPUs a node, tp 2 (a non-shardable module: same bytes per rank):
     * the two dp rings share each NIC. Without latency the time doubles. */
    c.eff.alpha_s[0] = c.eff.alpha_s[1] = 0;
    c.intra.bytes_per_s = 1e30;
    c.gpus_per_node = 1;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    double one = r->breakdown.dp;
    sc_step_result_free(r);
    c.gpus_per_node = 2;
    cfg.tp = 2;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    CHECK_NEAR(r->breakdown.dp, 2 * one, 1e-9);
    sc_step_result_free(r);
    sc_model_free(m);
}

/* Data-parallel groups of 8 ranks a node over 2 and 4 nodes, and of one over 8: the
 * gradient allreduce runs as "auto" chooses it (NCCL's tree or the ring,
 * sc_coll_tree_wins), and the simulator, every replica or one standing for all, takes
 * as long as cost says. */
TEST(step_dp_allreduce_auto_matches_cost)
{
    struct {
        int nodes, gpn;
        double params;
    } cs[] = {{2, 8, 50e6}, {4, 8, 50e6}, {4, 8, 2e5}, {8, 1, 5e8}, {8, 1, 2e5}};
    int trees = 0, rings = 0;
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        sc_model *m = blocks(1, cs[i].params, 0);
        sc_cluster c;
        sc_error err;
        REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
        c.gpus_per_node = cs[i].gpn;
        REQUIRE(sc_cluster_set_nodes(&c, cs[i].nodes, &err) == SC_OK);
        int dp = cs[i].gpn * cs[i].nodes;
        double w, g, o, t, tr;
        sc_cost_state_bytes(SC_BF16, &w, &g, &o);
        double S = cs[i].params * g;
        REQUIRE(sc_cost_coll(&c, NULL, SC_COLL_ALLREDUCE, S, dp, cs[i].gpn, &t, &err) == SC_OK);
        REQUIRE(sc_cost_coll(&c, "ring", SC_COLL_ALLREDUCE, S, dp, cs[i].gpn, &tr, &err) ==
                SC_OK);
        trees += t < tr;
        rings += t == tr;
        for (int one = 0; one < 2; one++) {
            sc_step_cfg cfg = {.dp = dp, .tp = 1, .pp = 1, .v = 1, .m = 1, .mbs = 1,
                               .schedule = "1f1b", .bucket_bytes = 1e12, .one_replica = one};
            sc_step_result *r;
            REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
            CHECK_NEAR(r->breakdown.dp, t, 1e-9);
            sc_step_result_free(r);
        }
        sc_model_free(m);
    }
    CHECK(trees > 0 && rings > 0);
}

/* overlap_grad_reduce off: the gradient buckets wait for the whole backward, so
 * the dp reduction is exposed whole (its buckets' rings one after another), and
 * the step is longer than with overlap by exactly the extra exposed reduction. */
TEST(step_overlap_grad_reduce_off_exposes_reduction)
{
    sc_model *m = blocks(4, 50e6, 0);
    sc_cluster c;
    sc_error err;
    REQUIRE(one_gpu_nodes(4, &c) == SC_OK);
    sc_step_cfg cfg = {.dp = 4, .tp = 1, .pp = 1, .v = 1, .m = 2, .mbs = 1, .schedule = "1f1b",
                       .bucket_bytes = 100e6};
    c.eff.overlap_slowdown = 0; /* exposure alone (step_overlap_slows_compute) */
    sc_step_result *on, *off;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &on, &err) == SC_OK);
    cfg.no_overlap_grad_reduce = 1;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &off, &err) == SC_OK);
    double w, g, o;
    sc_cost_state_bytes(SC_BF16, &w, &g, &o);
    double G = 4 * 50e6 * g;
    int K = sc_cost_bucket_count(G, cfg.bucket_bytes);
    REQUIRE(K > 1);
    double ring;
    REQUIRE(sc_cost_coll(&c, "ring", SC_COLL_ALLREDUCE, G / K, 4, 1, &ring, &err) == SC_OK);
    CHECK_NEAR(off->breakdown.dp, K * ring, 1e-6);
    CHECK(on->breakdown.dp < 0.9 * off->breakdown.dp); /* overlap hid some of it */
    CHECK_NEAR(off->step_time_s - on->step_time_s, off->breakdown.dp - on->breakdown.dp, 1e-6);
    CHECK_NEAR(off->breakdown.compute, on->breakdown.compute, 1e-9);
    sc_step_result_free(on);
    sc_step_result_free(off);
    sc_model_free(m);
}

/* Contention (the cluster's overlap_slowdown): compute that runs beside a
 * data-parallel collective progresses at 1 / (1 + kappa), so the reductions
 * the backward hides slow it; with the reduction after the backward (nothing
 * beside it) nothing slows. */
TEST(step_overlap_slows_compute)
{
    sc_model *m = blocks(4, 50e6, 0);
    sc_cluster c;
    sc_error err;
    REQUIRE(one_gpu_nodes(4, &c) == SC_OK);
    sc_step_cfg cfg = {.dp = 4, .tp = 1, .pp = 1, .v = 1, .m = 2, .mbs = 1, .schedule = "1f1b",
                       .bucket_bytes = 100e6};
    sc_step_result *r0, *r1, *q0, *q1;
    c.eff.overlap_slowdown = 0;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_OK);
    c.eff.overlap_slowdown = 0.25;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r1, &err) == SC_OK);
    double w, g, o;
    sc_cost_state_bytes(SC_BF16, &w, &g, &o);
    double G = 4 * 50e6 * g, ring;
    int K = sc_cost_bucket_count(G, cfg.bucket_bytes);
    REQUIRE(sc_cost_coll(&c, "ring", SC_COLL_ALLREDUCE, G / K, 4, 1, &ring, &err) == SC_OK);
    double stretch = r1->breakdown.compute - r0->breakdown.compute;
    /* compute beside a collective for wall time C progresses C / (1 + kappa):
     * it loses C kappa / (1 + kappa). The reduction hidden at kappa 0 runs
     * beside compute: at least that much is lost, and never more than all of
     * the reduction's time */
    double hidden = K * ring - r0->breakdown.dp, loss = 0.25 / 1.25;
    CHECK(hidden > 0);
    CHECK(stretch >= loss * hidden - 1e-9);
    CHECK(stretch <= loss * K * ring + 1e-9);
    CHECK(r1->step_time_s > r0->step_time_s);
    CHECK(r1->step_time_s <= r0->step_time_s + stretch + 1e-9);
    /* nothing beside the reduction when it waits for the backward */
    cfg.no_overlap_grad_reduce = 1;
    c.eff.overlap_slowdown = 0;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &q0, &err) == SC_OK);
    c.eff.overlap_slowdown = 0.25;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &q1, &err) == SC_OK);
    CHECK_NEAR(q1->step_time_s, q0->step_time_s, 1e-12);
    CHECK_NEAR(q1->breakdown.compute, q0->breakdown.compute, 1e-12);
    sc_step_result_free(r0);
    sc_step_result_free(r1);
    sc_step_result_free(q0);
    sc_step_result_free(q1);
    sc_model_free(m);
}

/* ZeRO 3 prefetches: an op's parameter gather starts once the op before it
 * has started (FSDP's prefetch, lower.h), so when the gathers are shorter
 * than the ops only the step's first unit holds the stream (the rest of the
 * first gather runs beside the first op); every later compute op starts as
 * the one before it ends. */
TEST(step_zero3_gathers_prefetch)
{
    sc_model *m = blocks(4, 10e6, 0);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(one_gpu_nodes(4, &c) == SC_OK);
    sc_step_cfg cfg = {.dp = 4, .tp = 1, .pp = 1, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b",
                       .zero = 3, .bucket_bytes = 100e6, .want_timeline = 1};
    sc_step_result *r;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    const sc_tl_rank *rk = &r->timeline->ranks[0];
    double prev_end = -1, first_gather = -1, rest_end = -1, gather_max = 0, f_min = 1e30;
    int gathers = 0, ops = 0;
    for (int i = 0; i < rk->n_ops; i++) {
        const sc_tl_op *o = &rk->ops[i];
        if (o->kind == SC_OP_DP_ALLGATHER) {
            gathers++;
            if (gathers == 1)
                first_gather = o->end;
            if (gathers == 2)
                rest_end = o->end;
            if (o->end - o->start > gather_max)
                gather_max = o->end - o->start;
        }
        if (o->stream != SC_STREAM_COMPUTE || (o->kind != SC_OP_F && o->kind != SC_OP_B))
            continue;
        if (o->end - o->start < f_min)
            f_min = o->end - o->start;
        if (prev_end < 0) {
            CHECK_NEAR(o->start, first_gather, 1e-12); /* the first op waits for one unit */
            CHECK(rest_end > o->start);                /* not for the rest */
        } else
            CHECK_NEAR(o->start, prev_end, 1e-12); /* the rest never wait */
        prev_end = o->end;
        ops++;
    }
    CHECK_EQ_INT(gathers, 2 * cfg.m + 1);
    CHECK_EQ_INT(ops, 2 * cfg.m);
    REQUIRE(gather_max > 0 && gather_max < 0.5 * f_min); /* the case the rule is about */
    CHECK(r->breakdown.dp >= first_gather - 1e-12);
    sc_step_result_free(r);
    sc_model_free(m);
}

/* Peak memory per stage equals the cost model's with the schedule's
 * in-flight microbatches: GPipe m, 1F1B min(p - r, m). */
TEST(step_memory_per_schedule)
{
    int p = 4, mm = 8;
    sc_model *m = blocks(8, 10e6, 1);
    sc_cluster c = free_comm(1, 8);
    const char *scheds[] = {"gpipe", "1f1b"};
    for (int s = 0; s < 2; s++) {
        sc_step_cfg cfg = {.dp = 2, .tp = 1, .pp = p, .v = 1, .m = mm, .mbs = 2,
                           .schedule = scheds[s], .zero = 1};
        sc_step_result *r;
        sc_error err;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
        for (int st = 0; st < p; st++) {
            int inflight = s == 0 ? mm : (p - st < mm ? p - st : mm);
            sc_mem_cfg mc = {SC_BF16, 1, 2, 1, 2, inflight, SC_RECOMPUTE_NONE, 0, SC_ATTN_UNFUSED, 0,
                             m->has_layers, 0};
            sc_mem want;
            REQUIRE(sc_cost_memory(&c, m->leaves + 2 * st, 2, &mc, &want, &err) == SC_OK);
            CHECK_NEAR(r->mem[st].total, want.total, 1e-12);
            CHECK_NEAR(r->mem[st].activations, want.activations, 1e-12);
        }
        sc_step_result_free(r);
    }
    sc_model_free(m);
}

/* A tied embedding and head on different stages: both hold the weights and
 * their gradients are allreduced between the stages (dp exposure > 0 with
 * dp = 1). */
TEST(step_shared_group_across_stages)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 4, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b"};
    sc_step_result *r;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    CHECK(r->breakdown.dp > 0);
    /* the last stage carries a copy of the V·h embedding: more weights than
     * its own blocks alone */
    const sc_module *emb = m->leaves[0];
    CHECK(r->mem[3].params > emb->params);
    sc_step_result_free(r);
    sc_model_free(m);
}

static char *result_text(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg)
{
    sc_step_result *r;
    sc_error err;
    if (sc_step_simulate(m, c, cfg, &r, &err))
        return NULL;
    cJSON *j = sc_step_result_json(r, cfg);
    cJSON *t = sc_timeline_to_json(r->timeline);
    cJSON_AddItemToObject(j, "timeline", t);
    sc_json_exact(j);
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    sc_step_result_free(r);
    return s;
}

TEST(step_deterministic_and_jitter)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    c.nodes = 2;
    sc_step_cfg cfg = {.dp = 2, .tp = 4, .pp = 2, .v = 1, .m = 4, .mbs = 1,
                       .schedule = "1f1b", .want_timeline = 1};
    char *a = result_text(m, &c, &cfg), *b = result_text(m, &c, &cfg);
    REQUIRE(a && b);
    CHECK(strcmp(a, b) == 0);
    sc_free(b);
    cfg.jitter = 0.05;
    cfg.seed = 7;
    char *j1 = result_text(m, &c, &cfg), *j2 = result_text(m, &c, &cfg);
    cfg.seed = 8;
    char *j3 = result_text(m, &c, &cfg);
    REQUIRE(j1 && j2 && j3);
    CHECK(strcmp(j1, j2) == 0);
    CHECK(strcmp(j1, j3) != 0);
    CHECK(strcmp(j1, a) != 0);
    sc_free(a);
    sc_free(j1);
    sc_free(j2);
    sc_free(j3);
    sc_model_free(m);
}

/* Golden timelines, one small case per schedule: byte-exact (the
 * simulator is deterministic). `make golden-update` rewrites them. */
TEST(step_golden_timelines)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    const char *scheds[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
    for (int s = 0; s < 4; s++) {
        sc_step_cfg cfg = {.dp = 2, .tp = 2, .pp = 2, .v = s == 2 ? 2 : 1, .m = 4, .mbs = 1,
                           .schedule = scheds[s], .want_timeline = 1};
        char *text = result_text(m, &c, &cfg);
        REQUIRE(text);
        char path[256];
        snprintf(path, sizeof path, "tests/golden/sim_%s.json", scheds[s]);
        if (getenv("SC_GOLDEN_UPDATE")) {
            if (sc_write_file_atomic(path, text, strlen(text), &err) != SC_OK)
                sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        } else {
            char *want = NULL;
            if (sc_read_file(path, 1 << 26, &want, NULL, &err) != SC_OK)
                sc_test_fail(__FILE__, __LINE__, "%s missing: run make golden-update", path);
            else if (strcmp(want, text) != 0)
                sc_test_fail(__FILE__, __LINE__, "%s differs (make golden-update to review)",
                             path);
            sc_free(want);
        }
        sc_free(text);
    }
    sc_model_free(m);
}

TEST(step_errors)
{
    sc_model *m = blocks(4, 0, 0);
    sc_cluster c = free_comm(1, 8);
    sc_step_result *r = NULL;
    sc_error err;
    sc_step_cfg cfg = {.dp = 4, .tp = 2, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b"};
    CHECK(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "16 ranks, but dgx-a100-80g with 1 node has 8 GPUs");
    cfg.dp = 1;
    cfg.placement = "tp,dp";
    CHECK(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "placement 'tp,dp'");
    cfg.placement = "dp,tp,pp";
    cfg.schedule = "interleaved";
    cfg.v = 2;
    cfg.m = 3;
    CHECK(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "multiple");
    cfg.schedule = "pipedream";
    CHECK(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_ENOTFOUND);
    cfg.schedule = "1f1b";
    cfg.v = 1;
    cfg.pp = 8;
    cfg.tp = 1;
    CHECK(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "fewer than the 8 pipeline stages");
    CHECK(r == NULL);
    sc_model_free(m);
}

/* Placement: rank <-> coordinates round trip for every order. */
TEST(step_placement_roundtrip)
{
    const char *orders[] = {"tp,pp,dp", "tp,dp,pp", "pp,tp,dp", "pp,dp,tp", "dp,tp,pp",
                            "dp,pp,tp"};
    for (int o = 0; o < 12; o++) {
        /* with context parallelism (cp 2) too: d runs over dp·cp */
        int cp = o < 6 ? 0 : 2;
        sc_step_cfg cfg = {.dp = 3, .cp = cp, .tp = 2, .pp = cp ? 2 : 4,
                           .placement = orders[o % 6]};
        int seen[24] = {0};
        for (int d = 0; d < 3 * (cp ? 2 : 1); d++)
            for (int p = 0; p < cfg.pp; p++)
                for (int t = 0; t < 2; t++) {
                    int r = sc_step_rank(&cfg, d, p, t), d2, p2, t2;
                    REQUIRE(r >= 0 && r < 24);
                    seen[r]++;
                    sc_step_coords(&cfg, r, &d2, &p2, &t2);
                    CHECK(d2 == d && p2 == p && t2 == t);
                }
        for (int r = 0; r < 24; r++)
            CHECK_EQ_INT(seen[r], 1);
    }
    sc_step_cfg cfg = {.dp = 2, .tp = 8, .pp = 2};
    CHECK_EQ_INT(sc_step_rank(&cfg, 0, 0, 7), 7);  /* tp innermost */
    CHECK_EQ_INT(sc_step_rank(&cfg, 0, 1, 0), 8);  /* then pp */
    CHECK_EQ_INT(sc_step_rank(&cfg, 1, 0, 0), 16); /* then dp */
}

/* The stage figures the executor sizes its work from are the simulator's. */
TEST(step_stage_infos)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 4, .pp = 2, .v = 1, .m = 2, .mbs = 2, .schedule = "1f1b"};
    sc_stage_info info[2];
    REQUIRE(sc_step_stage_infos(m, &c, &cfg, info, &err) == SC_OK);
    sc_partition p;
    REQUIRE(sc_partition_uniform(m, 2, &p, &err) == SC_OK);
    double f, b;
    REQUIRE(sc_cost_modules_time(&c, m->leaves, p.first[1], SC_BF16, 4, 2, &f, &b, &err) == SC_OK);
    CHECK_NEAR(info[0].fwd_s, f, 1e-12);
    CHECK_NEAR(info[0].bwd_s, b, 1e-12);
    /* the boundary after blocks.11: s·h bf16 per sample, 2 samples, over 4 tp ranks */
    CHECK_NEAR(info[0].send_bytes, 2048.0 * 2048 * 2 * 2 / 4, 1e-12);
    CHECK_NEAR(info[1].send_bytes, 0, 0);
    /* 25 attention/MLP/embedding allreduces of s·h·2 bytes per sample on stage 0 */
    CHECK_EQ_INT(info[0].tp_count, 25);
    CHECK_NEAR(info[0].tp_bytes, 25 * 2048.0 * 2048 * 2 * 2, 1e-12);
    CHECK_EQ_INT(info[0].buckets, sc_cost_bucket_count(info[0].grad_bytes, 0));
    CHECK_EQ_INT(sc_cost_bucket_count(1, 0), 1);
    CHECK_EQ_INT(sc_cost_bucket_count(1e12, 0), 32);
    CHECK_EQ_INT(sc_cost_bucket_count(60e6, 25.0 * 1024 * 1024), 3);
    sc_partition_free(&p);
    sc_model_free(m);
}

/* Simulating one data-parallel replica with the others' network load agrees
 * with simulating every replica: the 128-GPU case (gpt-13b, tp 8,
 * pp 4, dp 4, m 32) and other shapes, ZeRO stages and schedules, to 1%. */
TEST(step_one_replica_matches_full)
{
    struct {
        const char *model;
        int dp, tp, pp, v, m, mbs, zero;
        const char *sched;
    } cs[] = {{"gpt-13b", 4, 8, 4, 1, 32, 1, 0, "1f1b"},
              {"gpt-13b", 4, 8, 4, 1, 32, 1, 3, "1f1b"},
              {"gpt-1.3b", 16, 4, 2, 2, 8, 1, 0, "interleaved"},
              {"gpt-1.3b", 64, 2, 1, 1, 1, 8, 0, "1f1b"},
              {"gpt-1.3b", 32, 2, 2, 1, 8, 2, 2, "zb-h1"},
              {"gpt-1.3b", 128, 1, 1, 1, 4, 1, 0, "1f1b"}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        sc_model *m;
        sc_cluster c;
        sc_error err;
        REQUIRE(sc_model_open(cs[i].model, &m, &err) == SC_OK);
        REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
        REQUIRE(sc_cluster_set_nodes(&c, 16, &err) == SC_OK);
        sc_step_cfg cfg = {.dp = cs[i].dp, .tp = cs[i].tp, .pp = cs[i].pp, .v = cs[i].v,
                           .m = cs[i].m, .mbs = cs[i].mbs, .zero = cs[i].zero,
                           .schedule = cs[i].sched};
        sc_step_result *full, *one;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &full, &err) == SC_OK);
        cfg.one_replica = 1;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &one, &err) == SC_OK);
        CHECK_NEAR(one->step_time_s, full->step_time_s, 0.01);
        CHECK_NEAR(one->breakdown.dp, full->breakdown.dp, 0.01);
        CHECK(one->n_tasks < full->n_tasks);
        sc_step_result_free(full);
        sc_step_result_free(one);
        sc_model_free(m);
    }
}

/* With one replica standing for all, tp rank 0 stands for its tp group too
 * (its ring one flow through its own ports, its sends, dp collectives and
 * ties that leave the node at the group's share of the NIC): against every
 * replica and tp rank simulated, to 0.5% on the step and on each exposed
 * communication, on the preset's network and on one 50 times slower, with
 * sequence parallelism, ZeRO 1 to 3 and interleaving; and each rank of
 * replica 0 shows the same tensor-parallel and pipeline ops in the timeline
 * (the group's ops copied to every member). */
TEST(step_one_replica_tp_rank_stands_for_its_group)
{
    struct {
        int dp, tp, pp, v, zero, sp;
        const char *sched;
    } cs[] = {{4, 4, 2, 1, 1, 0, "1f1b"},         /* a stage half a node */
              {2, 8, 2, 1, 3, 1, "1f1b"},         /* a stage a node, ZeRO 3's gathers */
              {4, 2, 4, 2, 2, 1, "interleaved"},  /* sends inside and across nodes */
              {2, 4, 4, 1, 0, 0, "zb-h1"}};
    for (size_t k = 0; k < 2 * SC_ARRAY_LEN(cs); k++) {
        size_t i = k % SC_ARRAY_LEN(cs);
        sc_model *m;
        sc_cluster c;
        sc_error err;
        sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 4, &m, &c);
        REQUIRE(m);
        if (k >= SC_ARRAY_LEN(cs))
            c.inter.nic_bytes_per_s /= 50;
        sc_step_cfg cfg = {.dp = cs[i].dp, .tp = cs[i].tp, .pp = cs[i].pp, .v = cs[i].v,
                           .m = 8, .mbs = 1, .zero = cs[i].zero, .sp = cs[i].sp,
                           .schedule = cs[i].sched, .want_timeline = 1};
        sc_step_result *full, *one;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &full, &err) == SC_OK);
        cfg.one_replica = 1;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &one, &err) == SC_OK);
        double T = full->step_time_s;
        CHECK_NEAR(one->step_time_s / T, 1, 0.005);
        CHECK(fabs(one->breakdown.tp - full->breakdown.tp) < 0.005 * T);
        CHECK(fabs(one->breakdown.pp - full->breakdown.pp) < 0.005 * T);
        CHECK(fabs(one->breakdown.dp - full->breakdown.dp) < 0.005 * T);
        CHECK(one->n_tasks * cs[i].dp < full->n_tasks);
        /* replica 0's ranks: its first tp·pp ranks (dp outermost) */
        for (int r = 0; r < cs[i].tp * cs[i].pp; r++) {
            int n[2] = {0, 0};
            for (int w = 0; w < 2; w++) {
                const sc_tl_rank *rk = &(w ? one : full)->timeline->ranks[r];
                for (int q = 0; q < rk->n_ops; q++) {
                    sc_op_kind o = rk->ops[q].kind;
                    n[w] += o == SC_OP_TP_ALLREDUCE || o == SC_OP_TP_REDUCESCATTER ||
                            o == SC_OP_TP_ALLGATHER || o == SC_OP_SEND_F || o == SC_OP_SEND_B;
                }
            }
            CHECK(n[0] > 0);
            CHECK_EQ_INT(n[1], n[0]);
        }
        sc_step_result_free(full);
        sc_step_result_free(one);
        sc_model_free(m);
    }
}

/* A constant size factor g (cluster.h, sc_size_curve) divides a warm collective's
 * whole time, latency and transfer, and a pipeline send's: the tensor-parallel
 * share of a step by g exactly; the data-parallel reduction (cold) stays. Each
 * alone, as they share the GPUs' ports. */
TEST(step_size_factors_divide_warm_comm)
{
    sc_model *m = blocks(4, 20e6, 1e6);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 2, .pp = 1, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b",
                       .bucket_bytes = 1e12};
    sc_step_result *r0, *r1;
    /* tp 2 */
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_OK);
    REQUIRE(r0->breakdown.tp > 0);
    c.eff.coll_curve[SC_LINK_INTRA] = (sc_size_curve){1, {1}, {4}};
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r1, &err) == SC_OK);
    CHECK_NEAR(r1->breakdown.tp, r0->breakdown.tp / 4, 1e-9);
    sc_step_result_free(r1);
    /* the inter class's factor leaves a group inside a node alone */
    c.eff.coll_curve[SC_LINK_INTRA].n = 0;
    c.eff.coll_curve[SC_LINK_INTER] = (sc_size_curve){1, {1}, {4}};
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r1, &err) == SC_OK);
    CHECK_NEAR(r1->breakdown.tp, r0->breakdown.tp, 1e-9);
    sc_step_result_free(r1);
    sc_step_result_free(r0);
    /* dp 2: the gradients' allreduce runs on cold buffers, at its own line */
    c.eff.coll_curve[SC_LINK_INTER].n = 0;
    cfg.tp = 1;
    cfg.dp = 2;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_OK);
    REQUIRE(r0->breakdown.dp > 0);
    c.eff.coll_curve[SC_LINK_INTRA] = (sc_size_curve){1, {1}, {4}};
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r1, &err) == SC_OK);
    CHECK_NEAR(r1->breakdown.dp, r0->breakdown.dp, 1e-12);
    CHECK_NEAR(r1->step_time_s, r0->step_time_s, 1e-12);
    sc_step_result_free(r1);
    sc_step_result_free(r0);
    /* pp 2: a send 1000 times slower (cost's p2p by the same factor) makes the
     * step longer by at least the 2 (pp - 1) sends on its critical path */
    c.eff.coll_curve[SC_LINK_INTRA].n = 0;
    cfg.dp = 1;
    cfg.pp = 2;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_OK);
    double one, slow;
    REQUIRE(sc_cost_p2p(&c, 1e6, 0, 1, &one, &err) == SC_OK);
    c.eff.p2p_curve[SC_LINK_INTRA] = (sc_size_curve){1, {1}, {1e-3}};
    REQUIRE(sc_cost_p2p(&c, 1e6, 0, 1, &slow, &err) == SC_OK);
    CHECK_NEAR(slow, one * 1e3, 1e-9);
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r1, &err) == SC_OK);
    CHECK(r1->step_time_s >= r0->step_time_s + 2 * (slow - one) * (1 - 1e-9));
    sc_step_result_free(r1);
    sc_step_result_free(r0);
    sc_model_free(m);
}
