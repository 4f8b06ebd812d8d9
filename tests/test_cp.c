/* test_cp.c - context parallelism (sim --cp): the balanced attention work, the
 * per-rank memory, the placement, the key/value ring in the lowering and the
 * simulator, one cp group standing for all, the plan file and the refusals. */
#include "check.h"
#include "cluster.h"
#include "cost.h"
#include "gen.h"
#include "lower.h"
#include "pair_check.h"
#include "framework.h"
#include "plan.h"
#include "search.h"
#include "step.h"
#include "timeline.h"
#include "tune.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const sc_kernel *flash_of(const sc_module *x)
{
    for (int i = 0; x && i < x->n_kernels; i++)
        if (x->kernels[i].op == SC_KOP_FLASH)
            return &x->kernels[i];
    return NULL;
}

/* A cp rank's causal flash kernel runs 1/cp of the whole sequence's pairs
 * (balanced chunks: half its M x N rectangle, not a slice's M·N - M²/2); at the
 * preset's rates its shorter key ranges run slower than that share. */
TEST(cp_flash_runs_its_share_of_the_pairs)
{
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("dgx-h100", &c, NULL) == SC_OK);
    sc_model *m;
    REQUIRE(sc_model_open("llama3-8b", &m, NULL) == SC_OK);
    const sc_kernel *fk = flash_of(sc_model_find(m, "blocks.0.attn"));
    REQUIRE(fk && fk->causal);
    CHECK_NEAR(sc_kernel_kv_heads(fk), 8, 0); /* GQA: the generator's kv heads */
    sc_compute_cfg whole = {SC_BF16, 1, 0, 1, SC_ATTN_FLASH, 0, 0, 0, 0};
    double last = 1;
    for (int cp = 2; cp <= 8; cp *= 2) {
        sc_compute_cfg part = {SC_BF16, 1, 0, 1, SC_ATTN_FLASH, 0, 0, 0, cp}; /* 1/cp: its own */
        sc_cluster flat = c; /* compute-bound, no fixed cost, no fall with key range */
        flat.gpu.hbm_bytes_per_s = 1e30;
        flat.eff.gemm.kernel_s = 0;
        flat.eff.gemm.flash_s0 = flat.eff.gemm.flash_s0_bwd = 0;
        for (int bwd = 0; bwd < 2; bwd++)
            CHECK_NEAR(sc_cost_kernel_time(&flat, fk, &part, bwd),
                       sc_cost_kernel_time(&flat, fk, &whole, bwd) / cp, 1e-12);
        /* at the preset's rates: N / cp keys a kernel (the rate's fall with the
         * key range, N / (N + s0)), cp - 1 more launches: above the share, the
         * more so the more ranks */
        double t = sc_cost_kernel_time(&c, fk, &part, 0), w = sc_cost_kernel_time(&c, fk, &whole, 0);
        double s0 = c.eff.gemm.flash_s0, N = 8192;
        CHECK(t * cp / w > last);
        CHECK(t * cp / w >= (N + cp * s0) / (N + s0) * (1 - 1e-9)); /* (N/cp+s0)/(N/cp)·N/(N+s0) */
        last = t * cp / w;
    }
    sc_model_free(m);
}

/* The breakdown adds up to the step (step.h). */
static void check_sum(const sc_step_result *r)
{
    const sc_step_breakdown *k = &r->breakdown;
    CHECK_NEAR(k->compute + k->recompute + k->optimizer + k->tp + k->cp + k->pp + k->dp +
                   k->bubble,
               r->step_time_s, 1e-9);
}

static sc_status run(const char *model, int nodes, sc_step_cfg *cfg, sc_step_result **r,
                     sc_error *err)
{
    sc_model *m;
    sc_cluster c;
    sc_status st = sc_model_open(model, &m, err);
    if (st)
        return st;
    st = sc_cluster_preset_get("dgx-h100", &c, err);
    if (!st)
        st = sc_cluster_set_nodes(&c, nodes, err);
    if (!st)
        st = sc_step_simulate(m, &c, cfg, r, err);
    sc_model_free(m);
    return st;
}

/* Against the same tokens on dp·cp ranks without cp: the same samples, a
 * cp-th of the activations per rank, the same ZeRO shards (over dp·cp), the
 * same weights; and the step is a sum of its breakdown. */
TEST(cp_halves_the_activations_on_the_same_ranks)
{
    sc_step_cfg a = {.dp = 8, .tp = 1, .pp = 1, .v = 1, .m = 16, .mbs = 1, .zero = 1,
                     .schedule = "1f1b", .attn = SC_ATTN_FLASH};
    sc_step_cfg b = a;
    b.dp = 4;
    b.cp = 2;
    b.m = 32;
    sc_step_result *ra, *rb;
    sc_error err;
    REQUIRE(run("llama3-8b", 1, &a, &ra, &err) == SC_OK);
    REQUIRE(run("llama3-8b", 1, &b, &rb, &err) == SC_OK);
    CHECK_EQ_INT(rb->n_ranks, 8);
    CHECK_NEAR(rb->global_batch, ra->global_batch, 0);
    CHECK_NEAR(rb->model_flops, ra->model_flops, 1e-12);
    CHECK_NEAR(rb->mem[0].activations, ra->mem[0].activations / 2, 1e-12);
    CHECK_NEAR(rb->mem[0].optimizer, ra->mem[0].optimizer, 1e-12);
    CHECK_NEAR(rb->mem[0].weights, ra->mem[0].weights, 1e-12);
    CHECK(!ra->fits && rb->fits); /* 8192 tokens a microbatch: 81 GiB without cp */
    /* the same attention work in all; the kernels' shorter key ranges and the ring
     * cost a little: within 5% */
    CHECK(rb->step_time_s > ra->step_time_s);
    CHECK(rb->step_time_s < ra->step_time_s * 1.05);
    check_sum(rb);
    sc_step_result_free(ra);
    sc_step_result_free(rb);
}

/* A rank's cp index sits next to its tp index whatever the placement (the
 * round trip of every rank with cp: step_placement_roundtrip). */
TEST(cp_rank_placement)
{
    const char *pls[] = {"tp,pp,dp", "tp,dp,pp", "dp,tp,pp", "pp,dp,tp"};
    /* the cp peer: tp ranks on within the tp·cp block, times the places inside it
     * (dp 3 in dp,tp,pp; pp 2 and dp 3 in pp,dp,tp) */
    const int apart[] = {2, 2, 2 * 3, 2 * 2 * 3};
    for (size_t k = 0; k < SC_ARRAY_LEN(pls); k++) {
        sc_step_cfg cfg = {.dp = 3, .cp = 2, .tp = 2, .pp = 2, .placement = pls[k]};
        CHECK_EQ_INT(sc_step_dpc(&cfg), 6);
        for (int d = 0; d < 6; d += 2)
            for (int p = 0; p < 2; p++)
                for (int t = 0; t < 2; t++)
                    CHECK_EQ_INT(sc_step_rank(&cfg, d + 1, p, t) - sc_step_rank(&cfg, d, p, t),
                                 apart[k]);
    }
    sc_step_cfg tpo = {.dp = 2, .cp = 2, .tp = 4, .pp = 2}; /* tp,pp,dp */
    CHECK_EQ_INT(sc_step_rank(&tpo, 1, 0, 0), 4);  /* cp next to tp */
    CHECK_EQ_INT(sc_step_rank(&tpo, 0, 1, 0), 8);  /* then pp */
    CHECK_EQ_INT(sc_step_rank(&tpo, 2, 0, 0), 16); /* then dp */
}

/* The lowering's ring: after each F, B and recompute of a stage with
 * attention, cp·(the stage's keys and values) forward and in recompute, twice
 * that backward; the stream waits for it, and what follows the compute
 * (the tp collectives, the send) follows it. */
TEST(cp_lowered_ring_sizes)
{
    sc_model *m;
    sc_cluster c;
    sc_error err;
    sc_test_open_pair("llama3-8b", "dgx-h100", 2, &m, &c);
    REQUIRE(m);
    sc_step_cfg cfg = {.dp = 1, .cp = 4, .tp = 2, .pp = 2, .v = 1, .m = 4, .mbs = 2, .zero = 1,
                       .schedule = "1f1b", .attn = SC_ATTN_FLASH, .sp = 1,
                       .recompute = SC_RECOMPUTE_SELECTIVE};
    sc_lowered *lw;
    REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
    /* 16 layers a stage; each rank's keys and values: 2 · (8 kv heads / tp 2) ·
     * (8192 / 4 tokens) · 2 samples · 128 · 2 bytes */
    double kv = 16 * 2 * 4.0 * 2048 * 2 * 128 * 2;
    CHECK_NEAR(lw->info[0].cp_bytes, kv, 1e-12);
    CHECK_NEAR(lw->info[1].cp_bytes, kv, 1e-12);
    int n[3] = {0};
    for (int p = 0; p < 2; p++) {
        const sc_lowered_pos *L = &lw->pos[p];
        for (int i = 0; i < L->n; i++) {
            const sc_action *a = &L->acts[i];
            if (a->kind != SC_ACT_CP)
                continue;
            /* the compute it is beside: the last before it (after the bucket
             * reductions of a grad-final backward's pieces) */
            int j = i - 1;
            while (j >= 0 && L->acts[j].kind != SC_ACT_COMPUTE)
                j--;
            REQUIRE(j >= 0);
            const sc_action *prev = &L->acts[j];
            CHECK(a->waits && a->op == SC_OP_CP_EXCHANGE && a->after < j);
            CHECK(a->mb == prev->mb && a->stage == prev->stage);
            int k = prev->op == SC_OP_F ? 0 : prev->op == SC_OP_B ? 1 : 2;
            n[k]++;
            CHECK_NEAR(a->bytes, (k == 1 ? 2 : 1) * 4 * kv, 1e-12);
            /* the tp collectives after the op come after the ring */
            if (i + 1 < L->n && L->acts[i + 1].kind == SC_ACT_TP && L->acts[i + 1].waits)
                CHECK_EQ_INT(L->acts[i + 1].after, i);
        }
    }
    CHECK_EQ_INT(n[0], 8); /* 4 microbatches x 2 positions */
    CHECK_EQ_INT(n[1], 8);
    CHECK_EQ_INT(n[2], 8); /* selective recompute re-runs the core attention */
    sc_lower_free(lw);
    sc_model_free(m);
}

/* The ring is simulated: its flows on the comm stream (cp_exchange), on slow
 * links exposed (cp_comm_s), hidden on NVLink, at the sends' share of a link
 * (p2p_bw_eff); one cp group stands for every data-parallel index
 * (one_replica) within 1%. */
TEST(cp_ring_simulated_and_one_replica)
{
    sc_model *m;
    sc_cluster c;
    sc_error err;
    sc_test_open_pair("llama3-8b", "dgx-h100", 2, &m, &c);
    REQUIRE(m);
    sc_step_cfg cfg = {.dp = 4, .cp = 2, .tp = 2, .pp = 1, .v = 1, .m = 4, .mbs = 1, .zero = 1,
                       .schedule = "1f1b", .attn = SC_ATTN_FLASH, .sp = 1, .want_timeline = 1};
    sc_step_result *full, *one;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &full, &err) == SC_OK);
    CHECK(full->breakdown.cp < 1e-3 * full->step_time_s); /* NVLink: hidden */
    int ops = 0;
    double bytes = 0;
    for (int i = 0; i < full->timeline->ranks[0].n_ops; i++) {
        const sc_tl_op *o = &full->timeline->ranks[0].ops[i];
        if (o->kind == SC_OP_CP_EXCHANGE && o->stream == SC_STREAM_COMM) {
            ops++;
            bytes += o->bytes;
        }
    }
    CHECK_EQ_INT(ops, 8); /* a ring per F and B of 4 microbatches */
    CHECK(bytes > 0);
    cfg.want_timeline = 0;
    cfg.one_replica = 1;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &one, &err) == SC_OK);
    CHECK_NEAR(one->step_time_s, full->step_time_s, 0.01);
    CHECK(one->n_tasks < full->n_tasks);
    sc_step_result_free(one);
    /* a slow intra-node link and no tp: the ring outlasts the compute beside it,
     * and the wait is the cp group's (the gradients' allreduce over the cp pair,
     * dp·cp = 2, is slow too: the dp share) */
    sc_step_cfg solo = {.dp = 1, .cp = 2, .tp = 1, .pp = 1, .v = 1, .m = 2, .mbs = 1,
                        .schedule = "1f1b", .attn = SC_ATTN_FLASH};
    sc_cluster slow = c;
    slow.intra.bytes_per_s = 2e8;
    sc_step_result *fr, *sr;
    REQUIRE(sc_step_simulate(m, &c, &solo, &fr, &err) == SC_OK);
    REQUIRE(sc_step_simulate(m, &slow, &solo, &sr, &err) == SC_OK);
    CHECK(fr->breakdown.cp < 1e-3 * fr->step_time_s);
    CHECK(sr->breakdown.cp > 0.15 * sr->step_time_s);
    CHECK(sr->breakdown.dp > 0.15 * sr->step_time_s);
    check_sum(sr);
    /* the ring is sends and receives: at half the sends' share of the link
     * (p2p_bw_eff) its transfers take twice as long, whatever the collectives'
     * share; on a slow link the transfer is nearly all of a ring op */
    sc_cluster p2p_half = slow;
    p2p_half.eff.p2p_bw_eff[SC_LINK_INTRA] = 0.5 * sc_cluster_p2p_eff(&slow, SC_LINK_INTRA);
    solo.want_timeline = 1;
    sc_step_result *a, *h;
    REQUIRE(sc_step_simulate(m, &slow, &solo, &a, &err) == SC_OK);
    REQUIRE(sc_step_simulate(m, &p2p_half, &solo, &h, &err) == SC_OK);
    double ta = 0, th = 0;
    for (int i = 0; i < a->timeline->ranks[0].n_ops; i++) {
        const sc_tl_op *o = &a->timeline->ranks[0].ops[i];
        if (o->kind == SC_OP_CP_EXCHANGE && o->stream == SC_STREAM_COMM)
            ta += o->end - o->start;
    }
    for (int i = 0; i < h->timeline->ranks[0].n_ops; i++) {
        const sc_tl_op *o = &h->timeline->ranks[0].ops[i];
        if (o->kind == SC_OP_CP_EXCHANGE && o->stream == SC_STREAM_COMM)
            th += o->end - o->start;
    }
    CHECK(ta > 0);
    CHECK_NEAR(th / ta, 2, 0.02);
    CHECK(h->breakdown.cp > a->breakdown.cp);
    sc_step_result_free(a);
    sc_step_result_free(h);
    sc_step_result_free(fr);
    sc_step_result_free(sr);
    sc_step_result_free(full);
    sc_model_free(m);
}

/* One replica stands for its cp peers too (one_replica simulates replica 0
 * alone): its ring is its own hop out and the image of its neighbour's hop
 * in, and its sends and ties that leave the node carry its peers' share of
 * the NIC. Against every replica simulated, to 0.5%, on layouts where the cp
 * group shares a node with its whole stage (the sends cross nodes), where
 * the ring spans nodes, and where two stages share a node; with 1f1b and
 * interleaved schedules, ZeRO 1 and 3. */
TEST(cp_one_replica_stands_for_its_peers)
{
    struct {
        const char *model;
        int dp, cp, tp, pp, v, zero;
        const char *sched;
    } cs[] = {{"llama3-8b", 2, 2, 4, 2, 1, 1, "1f1b"}, /* a stage a node: sends on the NIC */
              {"llama3-8b", 2, 2, 8, 1, 1, 1, "1f1b"}, /* the ring across two nodes */
              {"llama3-8b", 1, 2, 8, 2, 2, 1, "interleaved"}, /* the ring and sends across */
              {"llama3-8b", 2, 2, 2, 4, 1, 3, "1f1b"}, /* two stages a node, ZeRO 3 */
              {"llama3-8b", 4, 4, 1, 2, 1, 1, "1f1b"},
              {"gpt-1.3b", 2, 2, 4, 2, 1, 1, "1f1b"}}; /* tied: the ties cross nodes */
    for (size_t k = 0; k < 2 * SC_ARRAY_LEN(cs); k++) {
        size_t i = k % SC_ARRAY_LEN(cs);
        sc_model *m;
        sc_cluster c;
        sc_error err;
        sc_test_open_pair(cs[i].model, "dgx-h100", 4, &m, &c);
        REQUIRE(m);
        /* and on a network 50 times slower, where the sends' and ties' share
         * of the NIC shows */
        if (k >= SC_ARRAY_LEN(cs))
            c.inter.nic_bytes_per_s /= 50;
        sc_step_cfg cfg = {.dp = cs[i].dp, .cp = cs[i].cp, .tp = cs[i].tp, .pp = cs[i].pp,
                           .v = cs[i].v, .m = 4, .mbs = 1, .zero = cs[i].zero,
                           .schedule = cs[i].sched, .attn = SC_ATTN_FLASH, .sp = cs[i].tp > 1};
        sc_step_result *full, *one;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &full, &err) == SC_OK);
        cfg.one_replica = 1;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &one, &err) == SC_OK);
        CHECK_NEAR(one->step_time_s / full->step_time_s, 1, 0.005);
        /* the NIC's share: the exposed pipeline and cp time as simulated whole */
        CHECK(fabs(one->breakdown.pp - full->breakdown.pp) < 0.005 * full->step_time_s);
        CHECK(fabs(one->breakdown.cp - full->breakdown.cp) < 0.005 * full->step_time_s);
        /* one replica of dp·cp simulated (the dp collectives' flows stay) */
        CHECK(one->n_tasks < 0.7 * full->n_tasks);
        sc_step_result_free(full);
        sc_step_result_free(one);
        sc_model_free(m);
    }
}

/* What cp cannot run is refused, naming --cp and the cause. */
TEST(cp_refusals)
{
    sc_model *m, *t5, *odd;
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_model_open("llama3-8b", &m, &err) == SC_OK);
    REQUIRE(sc_cluster_preset_get("dgx-h100", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .cp = 2, .tp = 1, .pp = 1, .v = 1, .m = 1, .mbs = 1,
                       .schedule = "1f1b", .attn = SC_ATTN_UNFUSED};
    CHECK(sc_step_check(m, &c, &cfg, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--cp");
    CHECK_STR_HAS(err.msg, "--attn flash");
    cfg.attn = SC_ATTN_FLASH;
    CHECK(sc_step_check(m, &c, &cfg, &err) == SC_OK);
    cfg.slices = 2;
    CHECK(sc_step_check(m, &c, &cfg, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--slices");
    cfg.slices = 0;
    cfg.cp = 16; /* 16 ranks: more than one node has */
    CHECK(sc_step_check(m, &c, &cfg, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "dp·cp·tp·pp");
    cfg.cp = 3; /* 2·3 does not divide 8192 */
    REQUIRE(sc_cluster_set_nodes(&c, 2, &err) == SC_OK);
    CHECK(sc_step_check(m, &c, &cfg, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "2·cp = 6");
    cfg.cp = 2;
    REQUIRE(sc_model_open("t5-3b", &t5, &err) == SC_OK);
    CHECK(sc_step_check(t5, &c, &cfg, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "cross-attention");
    sc_model_free(t5);
    const char *names[] = {"seq"};
    const double vals[] = {1030}; /* 1030 % 4 != 0 */
    REQUIRE(sc_gen_run(sc_gen_find("llama"), "odd", SC_BF16, 1, names, vals, &odd, &err) ==
            SC_OK);
    CHECK(sc_step_check(odd, &c, &cfg, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "1030 tokens");
    sc_model_free(odd);
    sc_model_free(m);
}

/* A plan with cp: written with the key and each rank's cp index, replayed to the
 * same step; a tampered one is refused naming the file and the key. */
TEST(cp_plan_roundtrip_and_errors)
{
    sc_model *m;
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_model_open("llama3-8b", &m, &err) == SC_OK);
    REQUIRE(sc_cluster_preset_get("dgx-h100", &c, &err) == SC_OK);
    sc_partition part = {0};
    REQUIRE(sc_partition_uniform(m, 1, &part, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 2, .cp = 2, .tp = 2, .pp = 1, .v = 1, .m = 2, .mbs = 1, .zero = 1,
                       .schedule = "1f1b", .attn = SC_ATTN_FLASH, .partition = &part};
    sc_step_result *r;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    sc_plan *p;
    REQUIRE(sc_plan_make(m, "llama3-8b", &c, "dgx-h100", &cfg, "explicit", r, &p, &err) == SC_OK);
    char file[512];
    snprintf(file, sizeof file, "%s/cp_plan.json", sc_test_tmpdir());
    REQUIRE(sc_plan_save(p, m, file, &err) == SC_OK);
    sc_plan *q;
    REQUIRE(sc_plan_load(file, &q, &err) == SC_OK);
    CHECK_EQ_INT(q->cp, 2);
    CHECK_NEAR(q->breakdown.cp, r->breakdown.cp, 1e-12);
    sc_step_cfg qc;
    sc_plan_step_cfg(q, &qc);
    CHECK_EQ_INT(qc.cp, 2);
    sc_model *qm;
    sc_cluster qcl;
    REQUIRE(sc_plan_open(q, file, &qm, &qcl, &err) == SC_OK);
    sc_step_result *r2;
    REQUIRE(sc_step_simulate(qm, &qcl, &qc, &r2, &err) == SC_OK);
    CHECK_NEAR(r2->step_time_s, r->step_time_s, 1e-12);
    sc_step_result_free(r2);
    sc_model_free(qm);
    sc_plan_free(q);
    /* the text: "cp": 2 at the top, ranks[1] is cp 1 (next to tp: rank 2) */
    cJSON *j = sc_plan_to_json(p, m);
    REQUIRE(j);
    const cJSON *rk = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ranks"), 2);
    CHECK_EQ_INT(cJSON_GetObjectItem(j, "cp")->valueint, 2);
    CHECK_EQ_INT(cJSON_GetObjectItem(rk, "cp")->valueint, 1);
    CHECK_EQ_INT(cJSON_GetObjectItem(rk, "dp")->valueint, 0);
    /* tampered: rank 2's cp index; the attention unfused */
    cJSON_SetIntValue(cJSON_GetObjectItem(rk, "cp"), 0);
    char *txt = cJSON_Print(j);
    REQUIRE(txt);
    FILE *f = fopen(file, "w");
    REQUIRE(f);
    fputs(txt, f);
    fclose(f);
    cJSON_free(txt);
    CHECK(sc_plan_load(file, &q, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "ranks[2].cp");
    cJSON_SetIntValue(cJSON_GetObjectItem(rk, "cp"), 1);
    cJSON_ReplaceItemInObject(j, "attention", cJSON_CreateString("unfused"));
    txt = cJSON_Print(j);
    f = fopen(file, "w");
    REQUIRE(f && txt);
    fputs(txt, f);
    fclose(f);
    cJSON_free(txt);
    REQUIRE(sc_plan_load(file, &q, &err) == SC_OK);
    CHECK(sc_plan_open(q, file, &qm, &qcl, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "cp_plan.json: cp: --cp");
    sc_plan_free(q);
    cJSON_Delete(j);
    sc_plan_free(p);
    sc_step_result_free(r);
    sc_partition_free(&part);
    sc_model_free(m);
}

/* Where a cp plan goes: Megatron-LM's script gets --context-parallel-size and
 * the world size with cp; DeepSpeed's export refuses it; exec wants its ranks. */
TEST(cp_plan_export_and_exec)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    static char out[1 << 16];
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && %s sim --model llama3-8b --cluster dgx-h100 --nodes 2 --dp 4 "
                       "--cp 2 --tp 2 --microbatches 2 --zero 1 --attn flash --sp -o cp.json",
                       d, bin) == 0);
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && %s export cp.json --to megatron -o meg", d,
                       bin) == 0);
    REQUIRE(sc_test_sh(out, sizeof out, "cat %s/meg/megatron_torchrun.sh", d) == 0);
    CHECK_STR_HAS(out, "--context-parallel-size 2");
    CHECK_STR_HAS(out, "--tensor-model-parallel-size 2");
    CHECK_STR_HAS(out, "(16 GPUs), dp 4 cp 2 tp 2");
    CHECK_STR_HAS(out, "--overlap-grad-reduce");
    CHECK(sc_test_sh(out, sizeof out, "cd %s && %s export cp.json --to deepspeed -o ds", d,
                     bin) == 2);
    CHECK_STR_HAS(out, "context parallelism (the plan's cp 2)");
    /* exec counts the cp ranks: 16 of them (tests/test_exec.c runs such plans) */
    CHECK(sc_test_sh(out, sizeof out, "cd %s && %s exec cp.json --backend cpu", d, bin) != 0);
    CHECK_STR_HAS(out, "needs dp·cp·tp·pp = 4·2·2·1 = 16 ranks");
}

/* Search options with flash attention: batch samples, simulate candidates
 * simulated. */
static void flash_opts(sc_search_opts *o, long batch, int simulate)
{
    sc_search_opts_default(o);
    o->global_batch = batch;
    o->attn = SC_ATTN_FLASH;
    o->simulate = simulate;
}

/* Tallies s's ranked plans by cp into seen[1..8] (each plan's dp·cp·tp·pp
 * the cluster's gpus, none token-sliced); returns how many there are. */
static int tally_cp(const sc_search *s, long gpus, int seen[9])
{
    memset(seen, 0, sizeof(int) * 9);
    int n = 0;
    for (const sc_candidate *cd; (cd = sc_search_ranked(s, n)); n++) {
        int cp = sc_step_cp(&cd->cfg);
        CHECK(cp <= 8);
        if (cp > 8)
            continue;
        seen[cp]++;
        CHECK_EQ_INT(cd->cfg.dp * cp * cd->cfg.tp * cd->cfg.pp, gpus);
        CHECK_EQ_INT(cd->cfg.slices > 1, 0);
    }
    return n;
}

/* plan --cp C: every candidate has cp C (dp = GPUs / (tp·pp·C)); the estimate
 * agrees with the simulation of what it ranks (time within 3%, memory exactly:
 * both hold a C-th of the activations); a layout that fits only with cp is found;
 * what cp cannot run is refused before the search. */
TEST(cp_plan_search)
{
    sc_model *m;
    sc_cluster c;
    sc_error err;
    sc_test_open_pair("llama3-8b", "dgx-h100", 1, &m, &c);
    REQUIRE(m);
    sc_search_opts o;
    flash_opts(&o, 128, 16);
    o.fix_cp = 2;
    sc_search *s;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    int n = 0;
    for (const sc_candidate *cd; (cd = sc_search_ranked(s, n)); n++) {
        CHECK_EQ_INT(cd->cfg.cp, 2);
        CHECK_EQ_INT(cd->cfg.dp * 2 * cd->cfg.tp * cd->cfg.pp, 8);
        CHECK_NEAR(cd->sim->global_batch, 128, 0);
        CHECK_NEAR(cd->est.step_s, cd->sim->step_time_s, 0.03);
        double peak = 0;
        for (int p = 0; p < cd->sim->pp; p++)
            peak = fmax(peak, cd->sim->mem[p].total);
        CHECK_NEAR(cd->est.peak_mem, peak, 1e-9);
    }
    CHECK(n >= 8);
    sc_search_free(s);
    /* one layout, no recompute, one sample a microbatch: 81 GiB without cp */
    o.fix_tp = o.fix_pp = o.fix_mbs = 1;
    o.fix_recompute = SC_RECOMPUTE_NONE;
    o.fix_zero = 1;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    REQUIRE(sc_search_ranked(s, 0));
    CHECK_EQ_INT(sc_search_ranked(s, 0)->cfg.dp, 4);
    sc_search_free(s);
    o.fix_cp = 1; /* cp fixed at none: nothing fits */
    CHECK(sc_search_run(m, &c, &o, &s, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "fits");
    /* free (searched with flash attention): the search finds cp 2 itself,
     * the same plan as fixed */
    o.fix_cp = 0;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    REQUIRE(sc_search_ranked(s, 0));
    CHECK_EQ_INT(sc_search_ranked(s, 0)->cfg.cp, 2);
    CHECK_EQ_INT(sc_search_ranked(s, 0)->cfg.dp, 4);
    sc_search_free(s);
    /* refused: unfused attention, a framework without cp */
    o.fix_cp = 2;
    o.attn = SC_ATTN_UNFUSED;
    CHECK(sc_search_run(m, &c, &o, &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "plan: --cp:");
    o.attn = SC_ATTN_FLASH;
    o.framework = sc_framework_find("deepspeed");
    REQUIRE(o.framework);
    CHECK(sc_search_run(m, &c, &o, &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "runs with Megatron-LM");
    sc_model_free(m);
}

/* Without --cp the search tries it where it can run: with flash attention
 * and a framework that runs it, cp 1, 2, 4, 8 (GPUs a node); not with
 * unfused attention or under DeepSpeed. Every plan's dp·cp·tp·pp is the
 * cluster's GPUs. */
TEST(cp_searched_where_it_runs)
{
    sc_model *m;
    sc_cluster c;
    sc_error err;
    sc_test_open_pair("llama3-8b", "dgx-h100", 1, &m, &c);
    REQUIRE(m);
    sc_search_opts o;
    flash_opts(&o, 64, 1000);
    o.fix_tp = o.fix_pp = 1;
    o.fix_zero = 1;
    o.fix_recompute = SC_RECOMPUTE_NONE;
    sc_search *s;
    int seen[9], cps[SC_SEARCH_MAX_CPS];
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    tally_cp(s, 8, seen);
    CHECK_EQ_INT(sc_search_cps(s, cps), 4);
    CHECK(cps[0] == 1 && cps[1] == 2 && cps[2] == 4 && cps[3] == 8);
    /* one sample of 8,192 tokens without cp needs 81 GiB: none at cp 1 */
    CHECK(seen[2] > 0 && seen[4] > 0 && seen[8] > 0);
    CHECK_EQ_INT(seen[1] + seen[3] + seen[5] + seen[6] + seen[7], 0);
    sc_search_free(s);
    /* the layouts free: plans with and without cp, ranked together */
    flash_opts(&o, 64, 1000);
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    int n = tally_cp(s, 8, seen);
    CHECK(seen[1] > 0 && seen[1] < n);
    sc_search_free(s);
    /* unfused attention, or DeepSpeed: cp not tried */
    o.attn = SC_ATTN_UNFUSED;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    n = tally_cp(s, 8, seen);
    CHECK(n > 0 && seen[1] == n);
    CHECK_EQ_INT(sc_search_cps(s, cps), 1);
    sc_search_free(s);
    o.attn = SC_ATTN_FLASH;
    o.framework = sc_framework_find("deepspeed");
    REQUIRE(o.framework);
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    n = tally_cp(s, 8, seen);
    CHECK(n > 0 && seen[1] == n);
    CHECK_EQ_INT(sc_search_cps(s, cps), 1);
    sc_search_free(s);
    sc_model_free(m);
}

/* The commands: plan's table gets a cp column where a plan shown has cp;
 * tune takes --cp (1 unless given) and keeps it in its file; whatif's
 * points carry it (JSON config.cp, the CSV's last column). */
TEST(cp_in_plan_tune_whatif_commands)
{
    static char out[1 << 17];
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    if (!sc_test_exists(bin))
        return;
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s plan --model llama3-8b --cluster dgx-h100 --global-batch 64 "
                       "--attn flash --tp 1 --pp 1 --zero 1 --recompute none",
                       bin) == 0);
    CHECK_STR_HAS(out, "  #   dp cp  tp  pp  v");
    CHECK_STR_HAS(out, "context parallelism searched: 1, 2, 4, 8 (--cp 1: none)");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s plan --model llama3-8b --cluster dgx-h100 --global-batch 64 "
                       "--attn flash --top 1 --json",
                       bin) == 0);
    CHECK_STR_HAS(out, "\"cp_searched\":\t[1, 2, 4, 8]");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s plan --model llama3-8b --cluster dgx-h100 --global-batch 64 "
                       "--attn flash --tp 1 --pp 1 --zero 1 --recompute none --cp 1",
                       bin) != 0);
    CHECK_STR_HAS(out, "fits");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s plan --model gpt-1.3b --cluster dgx-h100 --global-batch 64", bin) == 0);
    CHECK_STR_HAS(out, "  #   dp  tp  pp  v");
    /* tune: a fixed layout, cp in it */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s tune --model llama3-8b --cluster dgx-h100 --global-batch 64 --attn flash "
                       "--dp 4 --cp 2 --tp 1 --pp 1 --zero 1 -o %s/tune_cp.json",
                       bin, d) == 0);
    CHECK_STR_HAS(out, "dp 4 cp 2 tp 1 pp 1");
    sc_tune *t = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/tune_cp.json", d);
    REQUIRE(sc_tune_load(path, &t, NULL) == SC_OK);
    CHECK_EQ_INT(t->cp, 2);
    CHECK(t->n >= 1);
    sc_tune_free(t);
    /* whatif: the winner's cp */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s whatif --model llama3-8b --cluster dgx-h100 --nodes 1 "
                       "--global-batch 64 --tokens 1e9 --attn flash --cp 4 -o %s/wi",
                       bin, d) == 0);
    CHECK_STR_HAS(out, " cp4 ");
    REQUIRE(sc_test_sh(out, sizeof out, "cat %s/wi/whatif.csv", d) == 0);
    CHECK_STR_HAS(out, ",pareto,cp\n");
    CHECK_STR_HAS(out, ",4\n");
    REQUIRE(sc_test_sh(out, sizeof out, "cat %s/wi/whatif.json", d) == 0);
    CHECK_STR_HAS(out, "\"cp\":");
}
