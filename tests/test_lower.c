/* test_lower.c - the lowered step: its rules (what runs after what) on
 * small configurations, and the proof that it drives the simulator: every
 * schedule, ZeRO stage and recompute mode simulated here yields a timeline
 * whose ops are exactly the lowered list's (test_exec.c makes the same
 * check of the executor's measured timelines). */
#include "check.h"
#include "lower.h"
#include "lower_check.h"
#include "plan.h"
#include "cluster.h"
#include "timeline.h"
#include "cost.h"
#include "search.h"
#include "overhead.h"
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the timeline against the lowered list ------------------------------------ */

typedef struct ident {
    int kind, stage, chunk, mb;
} ident;

static int by_ident(const void *a, const void *b)
{
    const ident *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    if (x->stage != y->stage)
        return x->stage - y->stage;
    if (x->chunk != y->chunk)
        return x->chunk - y->chunk;
    return x->mb - y->mb;
}

/* What position p's list puts on a rank's timeline: its compute ops (an op
 * cut into bucket pieces is one op), in list order, into comp; its
 * communication ops into comm. */
static void expected(const sc_lowered_pos *L, ident *comp, int *nc, ident *comm, int *nm)
{
    *nc = *nm = 0;
    for (int i = 0; i < L->n; i++) {
        const sc_action *a = &L->acts[i];
        ident id = {a->op, a->stage, a->chunk, a->mb};
        if (a->kind == SC_ACT_COMPUTE && a->piece == 0)
            comp[(*nc)++] = id;
        else if (a->kind != SC_ACT_COMPUTE && a->kind != SC_ACT_RECV)
            comm[(*nm)++] = id;
    }
}

static int compare_ids(const char *what, int rank, const char *stream, const ident *want,
                       int nw, const ident *got, int ng)
{
    for (int i = 0; i < nw || i < ng; i++) {
        if (i < nw && i < ng && !by_ident(&want[i], &got[i]))
            continue;
        char a[96] = "-", b[96] = "-";
        if (i < nw)
            snprintf(a, sizeof a, "%s(stage %d, chunk %d, mb %d)", sc_op_kind_name(want[i].kind),
                     want[i].stage, want[i].chunk, want[i].mb);
        if (i < ng)
            snprintf(b, sizeof b, "%s(stage %d, chunk %d, mb %d)", sc_op_kind_name(got[i].kind),
                     got[i].stage, got[i].chunk, got[i].mb);
        sc_test_fail(__FILE__, __LINE__,
                     "%s: rank %d %s: %d lowered ops, %d in the timeline; at %d lowered %s, "
                     "timeline %s",
                     what, rank, stream, nw, ng, i, a, b);
        return -1;
    }
    return 0;
}

long sc_check_timeline_vs_lowered(const char *what, const char *plan_file, const char *tl_file)
{
    sc_plan *plan = NULL;
    sc_model *m = NULL;
    sc_cluster c;
    sc_timeline *tl = NULL;
    sc_lowered *lw = NULL;
    sc_step_cfg cfg;
    sc_error err;
    long total = 0;
    if (sc_plan_load(plan_file, &plan, &err) || sc_plan_open(plan, plan_file, &m, &c, &err) ||
        (sc_plan_step_cfg(plan, &cfg), sc_lower(m, &c, &cfg, &lw, &err)) ||
        sc_timeline_load(tl_file, &tl, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s: %s", what, err.msg);
        goto out;
    }
    for (int r = 0; r < tl->n_ranks; r++) {
        const sc_tl_rank *rk = &tl->ranks[r];
        if (rk->pp < 0 || rk->pp >= cfg.pp) {
            sc_test_fail(__FILE__, __LINE__, "%s: rank %d: position %d", what, r, rk->pp);
            goto out;
        }
        const sc_lowered_pos *L = &lw->pos[rk->pp];
        size_t cap = (size_t)(L->n + rk->n_ops + 1);
        ident *wc = calloc(cap, sizeof *wc), *wm = calloc(cap, sizeof *wm);
        ident *gc = calloc(cap, sizeof *gc), *gm = calloc(cap, sizeof *gm);
        int nwc, nwm, ngc = 0, ngm = 0;
        expected(L, wc, &nwc, wm, &nwm);
        /* compute ops in start order (ties: file order), comm ops as a multiset */
        for (int i = 0; i < rk->n_ops; i++) {
            const sc_tl_op *o = &rk->ops[i];
            ident id = {o->kind, o->stage, o->chunk, o->mb};
            if (o->stream == SC_STREAM_COMPUTE)
                gc[ngc++] = id;
            else
                gm[ngm++] = id;
        }
        qsort(wm, (size_t)nwm, sizeof *wm, by_ident);
        qsort(gm, (size_t)ngm, sizeof *gm, by_ident);
        int bad = compare_ids(what, r, "compute stream (in order)", wc, nwc, gc, ngc) ||
                  compare_ids(what, r, "comm stream", wm, nwm, gm, ngm);
        free(wc), free(wm), free(gc), free(gm);
        if (bad) {
            total = 0;
            goto out;
        }
        total += nwc + nwm;
    }
out:
    sc_lower_free(lw);
    sc_timeline_free(tl);
    sc_model_free(m);
    sc_plan_free(plan);
    return total;
}

/* ---- the rules ------------------------------------------------------------------ */

/* A small gpt in the test's folder, in dtype (fp32: tiny.json, else
 * tiny16.json), loaded. */
static sc_model *tiny_in(int tied, const char *dtype)
{
    static char out[1 << 14];
    const char *d = sc_test_tmpdir();
    const char *name = strcmp(dtype, "fp32") ? "tiny16.json" : "tiny.json";
    if (sc_test_sh(out, sizeof out,
                   "%s model gen gpt --layers 8 --hidden 128 --heads 4 --seq 64 --vocab 512 "
                   "--dtype %s %s -o %s/%s",
                   sc_test_bin(), dtype, tied ? "--tied" : "", d, name) != 0)
        return NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", d, name);
    sc_model *m = NULL;
    sc_error err;
    return sc_model_load(path, &m, &err) ? NULL : m;
}

static sc_model *tiny(int tied) { return tiny_in(tied, "fp32"); }

static int count(const sc_lowered_pos *L, int kind, int op)
{
    int n = 0;
    for (int i = 0; i < L->n; i++)
        n += L->acts[i].kind == kind && (op < 0 || L->acts[i].op == op);
    return n;
}

TEST(lower_rules_1f1b_dp_tp_tied)
{
    sc_model *m = tiny(1);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 2, .tp = 2, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b",
                       .bucket_bytes = 64 * 1024};
    sc_lowered *lw;
    REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
    CHECK_EQ_INT(lw->n_ties, 1); /* the tied embedding and head sit on both positions */
    for (int p = 0; p < 2; p++) {
        const sc_lowered_pos *L = &lw->pos[p];
        const sc_stage_info *in = &lw->info[p];
        CHECK(in->buckets > 1);
        /* one F and one B record per microbatch; the grad-final B in pieces */
        CHECK_EQ_INT(count(L, SC_ACT_COMPUTE, SC_OP_F), 4);
        CHECK_EQ_INT(count(L, SC_ACT_COMPUTE, SC_OP_B), 3 + in->buckets);
        CHECK_EQ_INT(count(L, SC_ACT_REDUCE, -1), in->buckets);
        CHECK_EQ_INT(count(L, SC_ACT_TP, -1), 8); /* after every F and B */
        CHECK_EQ_INT(count(L, SC_ACT_TIED, -1), 1);
        CHECK_EQ_INT(count(L, SC_ACT_COMPUTE, SC_OP_OPTIMIZER), 1);
        CHECK_EQ_INT(count(L, SC_ACT_SEND, -1), 4);
        CHECK_EQ_INT(count(L, SC_ACT_RECV, -1), 4);
        for (int i = 0; i < L->n; i++) {
            const sc_action *a = &L->acts[i];
            /* dependencies point backwards in the list */
            CHECK(a->after < i);
            if (a->kind == SC_ACT_REDUCE) {
                /* bucket k right after piece k of the same op */
                const sc_action *pc = &L->acts[a->after];
                CHECK(a->after == i - 1 && pc->kind == SC_ACT_COMPUTE && pc->piece == a->piece);
                CHECK(a->mb == -1 && a->coll == SC_COLL_ALLREDUCE);
            }
            if (a->kind == SC_ACT_SEND) {
                /* after its producer's tp allreduce (tp = 2), to the peer's matching RECV */
                CHECK(a->after == i - 1 && L->acts[a->after].kind == SC_ACT_TP);
                const sc_action *r = &lw->pos[a->peer].acts[a->match];
                CHECK(r->kind == SC_ACT_RECV && r->mb == a->mb && r->peer == p);
                CHECK(r->bytes == a->bytes && a->bytes > 0);
            }
            if (a->kind == SC_ACT_COMPUTE && a->op == SC_OP_OPTIMIZER) {
                /* waits for every reduction and the tie, and comes after them */
                CHECK_EQ_INT(a->ndeps, in->buckets + 1);
                for (int k = 0; k < a->ndeps; k++)
                    CHECK(L->deps[a->dep0 + k] < i);
            }
            if (a->kind == SC_ACT_TIED) /* after the grad-final op's last stream action */
                CHECK(L->acts[a->after].kind == SC_ACT_TP &&
                      L->acts[L->acts[a->after].after].op == SC_OP_B);
        }
    }
    sc_lower_free(lw);
    sc_model_free(m);
}

/* overlap_grad_reduce off: the grad-final B runs whole, and every chunk's buckets
 * follow it, all after the position's last grad-final action (interleaved, v = 2:
 * both chunks' buckets wait for the last one); the simulator replays that list. */
TEST(lower_rules_no_overlap_grad_reduce)
{
    sc_model *m = tiny(1);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 2, .tp = 2, .pp = 2, .v = 2, .m = 4, .mbs = 1,
                       .schedule = "interleaved", .bucket_bytes = 64 * 1024,
                       .no_overlap_grad_reduce = 1};
    sc_lowered *lw;
    REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
    for (int p = 0; p < 2; p++) {
        const sc_lowered_pos *L = &lw->pos[p];
        int buckets = lw->info[p].buckets + lw->info[2 + p].buckets, last_b = -1, first_r = -1;
        CHECK(buckets > 2);
        CHECK_EQ_INT(count(L, SC_ACT_COMPUTE, SC_OP_B), 8); /* 4 microbatches x 2 chunks */
        CHECK_EQ_INT(count(L, SC_ACT_REDUCE, -1), buckets);
        for (int i = 0; i < L->n; i++) {
            const sc_action *a = &L->acts[i];
            if (a->kind == SC_ACT_COMPUTE && a->op == SC_OP_B) {
                CHECK(a->pieces <= 1);
                last_b = i;
            }
            if (a->kind == SC_ACT_REDUCE) {
                if (first_r < 0)
                    first_r = i;
                CHECK(a->after == L->acts[first_r].after && a->after >= last_b);
                CHECK(a->mb == -1 && a->coll == SC_COLL_ALLREDUCE);
            }
        }
        CHECK(first_r > last_b);
    }
    sc_lower_free(lw);
    sc_model_free(m);
    /* the simulator's timeline is that list */
    static char out[1 << 14];
    const char *d = sc_test_tmpdir();
    char plan[512], tl[512];
    snprintf(plan, sizeof plan, "%s/noov.plan.json", d);
    snprintf(tl, sizeof tl, "%s/noov.sim.json", d);
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s sim --model %s/tiny.json --cluster p4d.24xlarge --dp 2 --tp 2 --pp 2 "
                       "--v 2 --microbatches 4 --schedule interleaved --bucket-mib 0.0625 "
                       "--overlap-grad-reduce 0 -o %s --timeline %s",
                       sc_test_bin(), d, plan, tl) == 0);
    CHECK(sc_check_timeline_vs_lowered("[no overlap]", plan, tl) > 0);
}

/* `sim --model MODEL --cluster p4d.24xlarge FLAGS -o NAME.plan.json --timeline
 * NAME.sim.json --json` in the test's folder: checks the timeline against the
 * lowered list and that `sim --plan` replays the same step; the plan's path
 * goes to plan. Returns the step time (0 after a failed check). */
static double sim_replays(const char *label, const char *model, const char *flags,
                          const char *name, char *plan, size_t cap)
{
    static char out[1 << 16];
    const char *d = sc_test_tmpdir();
    char tl[512];
    snprintf(plan, cap, "%s/%s.plan.json", d, name);
    snprintf(tl, sizeof tl, "%s/%s.sim.json", d, name);
    if (sc_test_sh(out, sizeof out,
                   "%s sim --model %s/%s --cluster p4d.24xlarge %s -o %s --timeline %s --json",
                   sc_test_bin(), d, model, flags, plan, tl) != 0) {
        sc_test_fail(__FILE__, __LINE__, "%s: sim failed: %s", label, out);
        return 0;
    }
    cJSON *j = cJSON_Parse(out);
    double t = j && cJSON_GetObjectItem(j, "step_time_s")
                   ? cJSON_GetObjectItem(j, "step_time_s")->valuedouble
                   : 0;
    cJSON_Delete(j);
    CHECK(t > 0);
    CHECK(sc_check_timeline_vs_lowered(label, plan, tl) > 0);
    CHECK(sc_test_sh(out, sizeof out, "%s sim --plan %s --json", sc_test_bin(), plan) == 0);
    j = cJSON_Parse(out);
    CHECK(j && cJSON_GetObjectItem(j, "step_time_s") &&
          cJSON_GetObjectItem(j, "step_time_s")->valuedouble == t);
    cJSON_Delete(j);
    return t;
}

/* Megatron-Core's --defer-embedding-wgrad-compute: on the last position the
 * output layer's weight gradients of the first wgrad_deferral_limit
 * microbatches (all with 0) leave their backward and run as one W (mb -1)
 * after the position's last backward, before the chunk's buckets; the step is
 * shorter (the head's stage was the pipeline's slowest); the plan records it,
 * sim --plan replays it, the export passes it, exec refuses it, pp 1 is refused. */
TEST(lower_defer_embedding_wgrad)
{
    sc_model *m = tiny(0);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    for (int lim = 0; lim <= 3; lim += 3) {
        sc_step_cfg cfg = {.dp = 2, .tp = 1, .pp = 2, .v = 1, .m = 8, .mbs = 1,
                           .schedule = "1f1b", .defer_embedding_wgrad = 1,
                           .wgrad_deferral_limit = lim};
        sc_lowered *lw;
        REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
        const sc_stage_info *in = &lw->info[1];
        CHECK(in->head_wgrad_s > 0 && in->head_wgrad_s < in->bwd_w_s);
        CHECK(lw->info[0].head_wgrad_s == 0);
        int ndef = lim ? lim : 8, drain = -1, first_r = -1;
        const sc_lowered_pos *L = &lw->pos[1];
        for (int i = 0; i < L->n; i++) {
            const sc_action *a = &L->acts[i];
            if (a->kind == SC_ACT_COMPUTE && a->op == SC_OP_B && a->pieces <= 1)
                CHECK_NEAR(a->seconds, in->bwd_s - (a->mb < ndef ? in->head_wgrad_s : 0),
                           1e-12 * in->bwd_s);
            if (a->kind == SC_ACT_COMPUTE && a->op == SC_OP_W) {
                CHECK(drain < 0 && a->mb == -1 && a->stage == 1);
                CHECK_NEAR(a->seconds, ndef * in->head_wgrad_s, 1e-12);
                drain = i;
            }
            if (a->kind == SC_ACT_REDUCE && first_r < 0)
                first_r = i;
        }
        CHECK(drain >= 0 && first_r > drain && L->acts[first_r].after == drain);
        CHECK_EQ_INT(count(&lw->pos[0], SC_ACT_COMPUTE, SC_OP_W), 0);
        sc_lower_free(lw);
        /* faster than the same step with the head's wgrads in each backward */
        sc_step_result *a = NULL, *b = NULL;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &a, &err) == SC_OK);
        cfg.defer_embedding_wgrad = 0;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &b, &err) == SC_OK);
        CHECK(a->step_time_s < b->step_time_s);
        sc_step_result_free(a);
        sc_step_result_free(b);
    }
    sc_step_cfg one = {.dp = 2, .tp = 1, .pp = 1, .v = 1, .m = 8, .mbs = 1, .schedule = "1f1b",
                       .defer_embedding_wgrad = 1};
    sc_step_result *r = NULL;
    CHECK(sc_step_simulate(m, &c, &one, &r, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "pp >= 2");
    sc_step_result_free(r);
    sc_model_free(m);
    /* the plan records it; sim --plan replays it; the list drives the simulator */
    static char out[1 << 16];
    const char *d = sc_test_tmpdir();
    char plan[512];
    sim_replays("[defer]", "tiny.json",
                "--dp 2 --pp 2 --microbatches 8 --defer-embedding-wgrad-compute "
                "--wgrad-deferral-limit 3",
                "defer", plan, sizeof plan);
    sc_plan *pl = NULL;
    REQUIRE(sc_plan_load(plan, &pl, &err) == SC_OK);
    CHECK(pl->defer_embedding_wgrad == 1 && pl->wgrad_deferral_limit == 3);
    sc_plan_free(pl);
    REQUIRE(sc_test_sh(out, sizeof out, "%s export %s --to megatron", sc_test_bin(), plan) == 0);
    CHECK_STR_HAS(out, "--defer-embedding-wgrad-compute");
    CHECK_STR_HAS(out, "--wgrad-deferral-limit 3");
    CHECK(sc_test_sh(out, sizeof out, "%s exec %s --backend cpu", sc_test_bin(), plan) != 0);
    CHECK_STR_HAS(out, "defer_embedding_wgrad_compute");
    /* the limit alone, and pp 1, are refused */
    CHECK(sc_test_sh(out, sizeof out,
                     "%s sim --model %s/tiny.json --cluster p4d.24xlarge --pp 2 "
                     "--microbatches 8 --wgrad-deferral-limit 3",
                     sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "--defer-embedding-wgrad-compute");
    CHECK(sc_test_sh(out, sizeof out,
                     "%s sim --model %s/tiny.json --cluster p4d.24xlarge --microbatches 8 "
                     "--defer-embedding-wgrad-compute",
                     sc_test_bin(), d) != 0);
    CHECK_STR_HAS(out, "pp >= 2");
}

/* The data-parallel gradients reduced in fp32 (grad_reduce_in_fp32) in a bf16
 * model: every bucket reduction and the tied group's allreduce move twice the
 * bytes, ZeRO 3's gathers and the pipeline messages do not change, FSDP's
 * copies follow sc_cost_fsdp_copies, the simulator's and the estimate's steps
 * grow; the plan records it (only when set), sim --plan replays it, the
 * exports follow it, and the flag takes 0 or 1 only. */
static double bytes_of(const sc_lowered *lw, int kind)
{
    double b = 0;
    for (int p = 0; p < lw->cfg.pp; p++)
        for (int i = 0; i < lw->pos[p].n; i++)
            if (lw->pos[p].acts[i].kind == kind)
                b += lw->pos[p].acts[i].bytes;
    return b;
}

TEST(lower_grad_reduce_in_fp32)
{
    static char out[1 << 16];
    const char *d = sc_test_tmpdir();
    sc_model *m = tiny_in(1, "bf16");
    REQUIRE(m);
    sc_error err;
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    for (int zero = 0; zero <= 3; zero += 3) {
        sc_step_cfg cfg = {.dp = 2, .tp = 1, .pp = 2, .v = 1, .m = 4, .mbs = 1,
                           .schedule = "1f1b", .zero = zero};
        sc_lowered *a, *b;
        REQUIRE(sc_lower(m, &c, &cfg, &a, &err) == SC_OK);
        cfg.grad_reduce_in_fp32 = 1;
        REQUIRE(sc_lower(m, &c, &cfg, &b, &err) == SC_OK);
        for (int s = 0; s < 2; s++) {
            CHECK_NEAR(b->info[s].grad_bytes, 2 * a->info[s].grad_bytes, 1e-9);
            CHECK(b->info[s].param_bytes == a->info[s].param_bytes);
            CHECK(b->info[s].send_bytes == a->info[s].send_bytes);
        }
        double ra = bytes_of(a, SC_ACT_REDUCE), rb = bytes_of(b, SC_ACT_REDUCE);
        CHECK(ra > 0);
        CHECK_NEAR(rb, 2 * ra, 1e-9 * rb);
        CHECK(bytes_of(b, SC_ACT_GATHER) == bytes_of(a, SC_ACT_GATHER));
        CHECK(bytes_of(b, SC_ACT_SEND) == bytes_of(a, SC_ACT_SEND));
        REQUIRE(a->n_ties == 1 && b->n_ties == 1); /* the tied embedding spans both */
        CHECK_NEAR(b->ties[0].bytes, 2 * a->ties[0].bytes, 1e-9);
        sc_lower_free(a);
        sc_lower_free(b);
        /* more bytes: neither the simulated nor the estimated step is shorter */
        sc_step_result *x = NULL, *y = NULL;
        sc_estimate ex, ey;
        cfg.grad_reduce_in_fp32 = 0;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &x, &err) == SC_OK);
        REQUIRE(sc_estimate_step(m, &c, &cfg, &ex, &err) == SC_OK);
        cfg.grad_reduce_in_fp32 = 1;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &y, &err) == SC_OK);
        REQUIRE(sc_estimate_step(m, &c, &cfg, &ey, &err) == SC_OK);
        CHECK(y->step_time_s >= x->step_time_s && y->breakdown.dp >= x->breakdown.dp);
        CHECK(ey.dp_s > ex.dp_s && ey.step_s >= ex.step_s);
        /* memory: unsharded gradients held at 4 bytes (ZeRO 0), sharded ones as
         * they were (ZeRO 3); the estimate's peak follows the simulator's */
        for (int p = 0; p < 2; p++) {
            if (zero == 0)
                CHECK_NEAR(y->mem[p].grads, 2 * x->mem[p].grads, 1e-6);
            else
                CHECK(y->mem[p].grads == x->mem[p].grads);
        }
        if (zero == 0)
            CHECK(ey.peak_mem > ex.peak_mem);
        else
            CHECK(ey.peak_mem == ex.peak_mem);
        sc_step_result_free(x);
        sc_step_result_free(y);
    }
    /* FSDP's copies under the torch framework: the stage's all_s and shard_s
     * are sc_cost_fsdp_copies' with the flag */
    {
        sc_cluster t = c;
        REQUIRE(sc_overhead_apply(&t, "torch", "--framework", &err) == SC_OK);
        sc_partition part = {0};
        REQUIRE(sc_partition_uniform(m, 1, &part, &err) == SC_OK);
        sc_stage_cfg sc = {.dtype = m->dtype, .tp = 1, .mbs = 1, .zero = 3, .dp = 2,
                           .grad_reduce_fp32 = 1};
        sc_stage_info in;
        REQUIRE(sc_cost_stage(&t, m, &part, &sc, &in, &err) == SC_OK);
        sc_fsdp_cost want = sc_cost_fsdp_copies(&t, m->dtype, in.param_bytes / 2, 8 + 1, 1);
        CHECK_NEAR(in.fsdp.all_s, want.all_s, 1e-12 * want.all_s);
        CHECK_NEAR(in.fsdp.shard_s, want.shard_s, 1e-12 * want.shard_s);
        sc_partition_free(&part);
    }
    sc_model_free(m);
    /* the plan records it; sim --plan replays it; the exports follow it */
    char plan[512];
    double t1 = sim_replays("[fp32 reduce]", "tiny16.json",
                            "--dp 2 --pp 2 --microbatches 4 --grad-reduce-in-fp32 1", "r32", plan,
                            sizeof plan);
    sc_plan *pl = NULL;
    REQUIRE(sc_plan_load(plan, &pl, &err) == SC_OK);
    CHECK(pl->grad_reduce_in_fp32 == 1);
    sc_plan_free(pl);
    REQUIRE(sc_test_sh(out, sizeof out, "%s sim --plan %s", sc_test_bin(), plan) == 0);
    CHECK_STR_HAS(out, "gradients reduced in fp32");
    REQUIRE(sc_test_sh(out, sizeof out, "%s export %s --to megatron", sc_test_bin(), plan) == 0);
    CHECK(!strstr(out, "--grad-reduce-in-bf16"));
    REQUIRE(sc_test_sh(out, sizeof out, "%s export %s --to deepspeed", sc_test_bin(), plan) == 0);
    CHECK_STR_HAS(out, "\"communication_data_type\":\t\"fp32\"");
    /* without the flag: no key in the plan, bf16 reductions in the export */
    CHECK(sim_replays("[bf16 reduce]", "tiny16.json", "--dp 2 --pp 2 --microbatches 4", "r16",
                      plan, sizeof plan) < t1);
    REQUIRE(sc_test_sh(out, sizeof out, "cat %s", plan) == 0);
    /* (the test's folder is named after it: the key is looked for quoted) */
    CHECK(strstr(out, "\"format\"") && !strstr(out, "\"grad_reduce_in_fp32\""));
    REQUIRE(sc_test_sh(out, sizeof out, "%s export %s --to megatron", sc_test_bin(), plan) == 0);
    CHECK_STR_HAS(out, "--grad-reduce-in-bf16");
    CHECK(sc_test_sh(out, sizeof out,
                     "%s sim --model %s/tiny16.json --cluster p4d.24xlarge --dp 2 "
                     "--grad-reduce-in-fp32 2",
                     sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "--grad-reduce-in-fp32");
}

TEST(lower_rules_zero3_recompute_zbh1)
{
    sc_model *m = tiny(0);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 2, .tp = 1, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "zb-h1",
                       .zero = 3, .recompute = SC_RECOMPUTE_FULL, .bucket_bytes = 1 << 20};
    sc_lowered *lw;
    REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
    for (int p = 0; p < 2; p++) {
        const sc_lowered_pos *L = &lw->pos[p];
        /* a gather before every F and B (none before W), then the recompute; the
         * position's first in two: its first unit, waited for, then the rest */
        CHECK_EQ_INT(count(L, SC_ACT_GATHER, -1), 9);
        CHECK_EQ_INT(count(L, SC_ACT_COMPUTE, SC_OP_RECOMPUTE), 4);
        CHECK_EQ_INT(count(L, SC_ACT_PARAMS, -1), 0);
        int gathers = 0;
        for (int i = 0; i < L->n; i++) {
            const sc_action *a = &L->acts[i];
            const sc_stage_info *in = &lw->info[a->stage];
            if (a->kind == SC_ACT_COMPUTE && a->op == SC_OP_RECOMPUTE)
                CHECK(i > 0 && L->acts[i - 1].kind == SC_ACT_GATHER);
            if (a->kind == SC_ACT_GATHER && gathers == 0) /* the first unit */
                CHECK(a->waits && a->bytes == in->unit_bytes &&
                      in->unit_bytes < in->param_bytes && a->op == SC_OP_DP_ALLGATHER);
            else if (a->kind == SC_ACT_GATHER && gathers == 1) /* the rest */
                CHECK(!a->waits && a->bytes == in->param_bytes - in->unit_bytes &&
                      L->acts[i - 1].kind == SC_ACT_GATHER && L->acts[i + 1].op == SC_OP_F);
            else if (a->kind == SC_ACT_GATHER)
                CHECK(a->waits && a->bytes == in->param_bytes);
            gathers += a->kind == SC_ACT_GATHER;
            /* reduce-scatters follow W (the weight gradients), never B: every
             * microbatch's W cut into the buckets, each piece reduce-scattered */
            if (a->kind == SC_ACT_REDUCE)
                CHECK(a->coll == SC_COLL_REDUCE_SCATTER && L->acts[a->after].op == SC_OP_W &&
                      L->acts[a->after].piece == a->piece &&
                      L->acts[a->after].pieces == lw->info[p].buckets);
        }
        CHECK(lw->info[p].buckets > 1); /* 1 MiB buckets of a stage's fp32 gradients */
        CHECK_EQ_INT(count(L, SC_ACT_REDUCE, -1), 4 * lw->info[p].buckets);
        /* the first unit: what lies outside the layers and one layer (the stage's
         * four are alike) */
        const sc_module *blk = sc_model_find(m, p ? "blocks.4" : "blocks.0");
        REQUIRE(blk);
        double wb, gb, ob;
        sc_cost_state_bytes(m->dtype, &wb, &gb, &ob);
        CHECK_NEAR(lw->info[p].unit_bytes, lw->info[p].param_bytes - 3 * blk->params * wb,
                   1e-6 * lw->info[p].param_bytes);
    }
    sc_lower_free(lw);
    cfg.zero = 1;
    cfg.recompute = SC_RECOMPUTE_NONE;
    REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
    CHECK_EQ_INT(count(&lw->pos[0], SC_ACT_PARAMS, -1), 1);
    CHECK(lw->pos[0].acts[lw->pos[0].n - 1].kind == SC_ACT_PARAMS);
    sc_lower_free(lw);
    sc_model_free(m);
}

/* ZeRO 2 and 3 reduce-scatter every microbatch's gradients during its
 * backward, bucket by bucket, as FSDP and DeepSpeed do (each rank keeps only
 * its shard of the gradients): every B is cut into the stage's buckets, each
 * followed by its reduce-scatter (the microbatch's, or the grad-final one's,
 * mb -1, for the last). The lowering once cut the last B alone; under ZeRO 3 it
 * reduce-scattered the others whole after them, in the next forward's window
 * beside its gathers, and under ZeRO 2 not at all. Under ZeRO 1 (the gradients
 * whole on every rank, Megatron-LM's distributed optimizer) the other
 * backwards stay whole and unreduced. */
TEST(lower_sharded_gradients_reduce_during_every_backward)
{
    sc_model *m = tiny(0);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    for (int zero = 1; zero <= 3; zero++) {
        sc_step_cfg cfg = {.dp = 4, .tp = 1, .pp = 1, .v = 1, .m = 3, .mbs = 1,
                           .schedule = "1f1b", .zero = zero, .bucket_bytes = 1 << 20};
        sc_lowered *lw;
        REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
        const sc_lowered_pos *L = &lw->pos[0];
        const sc_stage_info *in = &lw->info[0];
        int K = in->buckets;
        CHECK(K >= 4); /* 1 MiB buckets of the tiny model's fp32 gradients */
        int pieces[3] = {0}, reduces[3] = {0};
        for (int i = 0; i < L->n; i++) {
            const sc_action *a = &L->acts[i];
            if (a->kind == SC_ACT_COMPUTE && a->op == SC_OP_B) {
                REQUIRE(a->mb >= 0 && a->mb < 3);
                pieces[a->mb]++;
                int cut = zero >= 2 || a->mb == 2;
                CHECK_EQ_INT(a->pieces, cut ? K : 1);
                /* the piece's reduce-scatter right after it */
                if (cut) {
                    REQUIRE(i + 1 < L->n);
                    const sc_action *r = &L->acts[i + 1];
                    CHECK(r->kind == SC_ACT_REDUCE && r->coll == SC_COLL_REDUCE_SCATTER &&
                          r->after == i && r->piece == a->piece && r->pieces == K);
                    CHECK_EQ_INT(r->mb, a->mb == 2 ? -1 : a->mb);
                    CHECK_NEAR(r->bytes, in->grad_bytes / K, 1e-9 * in->grad_bytes);
                    reduces[a->mb]++;
                }
            }
        }
        for (int k = 0; k < 3; k++) {
            int cut = zero >= 2 || k == 2;
            CHECK_EQ_INT(pieces[k], cut ? K : 1);
            CHECK_EQ_INT(reduces[k], cut ? K : 0);
        }
        CHECK_EQ_INT(count(L, SC_ACT_REDUCE, -1), zero >= 2 ? 3 * K : K);
        sc_lower_free(lw);
    }
    sc_model_free(m);
}

/* PyTorch FSDP's ZeRO 2 (SHARD_GRAD_OP, the cluster's framework torch) gathers
 * the parameters before every forward (the step's first in two: its first
 * unit, then the rest) and frees them after the backward: no gather before a
 * backward and none after the optimizer. DeepSpeed's ZeRO 2 (and no framework)
 * keeps them whole and gathers the updated ones after the optimizer. The
 * lowering once ran DeepSpeed's order for torch too, whose FSDP work on the
 * gradients it charged one gather a microbatch (sc_cost_fsdp_time). */
TEST(lower_fsdp_zero2_gathers_before_every_forward)
{
    sc_model *m = tiny(0);
    REQUIRE(m);
    sc_error err;
    const char *fws[] = {"torch", "deepspeed", NULL};
    for (int f = 0; f < 3; f++) {
        sc_cluster c;
        REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
        if (fws[f])
            REQUIRE(sc_overhead_set(&c, fws[f], 0, &err) == SC_OK);
        sc_step_cfg cfg = {.dp = 4, .tp = 1, .pp = 1, .v = 1, .m = 3, .mbs = 1,
                           .schedule = "1f1b", .zero = 2};
        int torch = f == 0;
        CHECK_EQ_INT(sc_lower_fsdp_zero2(&cfg, &c), torch);
        sc_lowered *lw;
        REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
        const sc_lowered_pos *L = &lw->pos[0];
        const sc_stage_info *in = &lw->info[0];
        /* three forwards, the first's gather in two */
        CHECK_EQ_INT(count(L, SC_ACT_GATHER, -1), torch ? 4 : 0);
        CHECK_EQ_INT(count(L, SC_ACT_PARAMS, -1), torch ? 0 : 1);
        int gathers = 0;
        for (int i = 0; i < L->n; i++) {
            const sc_action *a = &L->acts[i];
            if (a->kind != SC_ACT_GATHER)
                continue;
            /* the op a gather serves is the next compute: a forward */
            int j = i + 1;
            while (j < L->n && L->acts[j].kind != SC_ACT_COMPUTE)
                j++;
            REQUIRE(j < L->n);
            CHECK(L->acts[j].op == SC_OP_F);
            CHECK_NEAR(a->bytes,
                       gathers == 0   ? in->unit_bytes
                       : gathers == 1 ? in->param_bytes - in->unit_bytes
                                      : in->param_bytes,
                       1e-9 * in->param_bytes);
            gathers++;
        }
        sc_lower_free(lw);
        /* dp 1: nothing to gather */
        cfg.dp = 1;
        CHECK_EQ_INT(sc_lower_fsdp_zero2(&cfg, &c), 0);
    }
    sc_model_free(m);
}

/* The simulator's timeline is the lowered list, for every schedule, ZeRO
 * stage and recompute mode, with tp, dp and a tied group. */
TEST(lower_drives_sim)
{
    static char out[1 << 14];
    const char *d = sc_test_tmpdir();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s model gen gpt --layers 8 --hidden 128 --heads 4 --seq 64 --vocab 512 "
                       "--dtype fp32 --tied -o %s/tiny.json",
                       sc_test_bin(), d) == 0);
    const char *scheds[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
    const char *rcs[] = {"none", "selective", "full"};
    long ops = 0;
    int runs = 0;
    for (int s = 0; s < 4; s++)
        for (int z = 0; z < 4; z++) {
            const char *rc = rcs[(s + z) % 3];
            char cfg[256], what[300], plan[512], tl[512];
            snprintf(cfg, sizeof cfg,
                     "--dp 2 --tp 2 --pp 2 --v %d --microbatches 4 --mbs 1 --schedule %s "
                     "--zero %d --recompute %s --bucket-mib 0.5",
                     s == 2 ? 2 : 1, scheds[s], z, rc);
            snprintf(what, sizeof what, "[%s]", cfg);
            snprintf(plan, sizeof plan, "%s/plan.json", d);
            snprintf(tl, sizeof tl, "%s/sim.json", d);
            if (sc_test_sh(out, sizeof out,
                           "%s sim --model %s/tiny.json --cluster p4d.24xlarge %s -o %s "
                           "--timeline %s",
                           sc_test_bin(), d, cfg, plan, tl) != 0) {
                sc_test_fail(__FILE__, __LINE__, "%s: sim failed: %.300s", what, out);
                continue;
            }
            long n = sc_check_timeline_vs_lowered(what, plan, tl);
            CHECK(n > 0);
            ops += n;
            runs++;
        }
    CHECK_EQ_INT(runs, 16);
    printf("  (%d configurations, %ld ops matched)\n", runs, ops);
}

TEST(lower_errors)
{
    sc_model *m = tiny(0);
    REQUIRE(m);
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_lowered *lw = (sc_lowered *)1;
    sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 2, .v = 1, .m = 1, .mbs = 1,
                       .schedule = "interleaved"};
    CHECK(sc_lower(m, &c, &cfg, &lw, &err) != SC_OK);
    CHECK(lw == NULL);
    cfg.schedule = "nope";
    CHECK(sc_lower(m, &c, &cfg, &lw, &err) == SC_ENOTFOUND);
    CHECK_STR_HAS(err.msg, "unknown schedule");
    sc_lower_free(NULL);
    sc_model_free(m);
}

/* `sim --lowered FILE` writes the list, one action a line, whole. */
TEST(lower_sim_writes_the_list)
{
    static char out[1 << 14];
    const char *d = sc_test_tmpdir();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --tp 2 --pp 2 "
                       "--microbatches 4 --zero 1 --lowered %s/low.txt",
                       sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "lowered step written to");
    REQUIRE(sc_test_sh(out, sizeof out, "cat %s/low.txt", d) == 0);
    CHECK_STR_HAS(out, "position 0: ");
    CHECK_STR_HAS(out, "position 1: ");
    CHECK_STR_HAS(out, "tied    dp_allreduce");
    CHECK_STR_HAS(out, "params  dp_allgather");
    CHECK_STR_HAS(out, "reduce  dp_reducescatter");
    /* a bad configuration writes nothing */
    CHECK(sc_test_sh(out, sizeof out,
                     "%s sim --model gpt-1.3b --cluster p4d.24xlarge --pp 2 --v 2 "
                     "--schedule interleaved --microbatches 3 --lowered %s/bad.txt",
                     sc_test_bin(), d) != 0);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/bad.txt", d);
    CHECK(!sc_test_exists(bad));
}

/* Sequence parallelism: each tp allreduce becomes a reduce-scatter then an
 * all-gather of the same bytes; the simulator charges the same ring time,
 * the norms run on s/t tokens (less compute) and activations shrink. */
TEST(lower_sequence_parallel)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 4, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b"};
    sc_lowered *a, *b;
    REQUIRE(sc_lower(m, &c, &cfg, &a, &err) == SC_OK);
    cfg.sp = 1;
    REQUIRE(sc_lower(m, &c, &cfg, &b, &err) == SC_OK);
    for (int p = 0; p < 2; p++) {
        int ar = count(&a->pos[p], SC_ACT_TP, SC_OP_TP_ALLREDUCE);
        CHECK(ar > 0);
        CHECK_EQ_INT(count(&b->pos[p], SC_ACT_TP, SC_OP_TP_ALLREDUCE), 0);
        CHECK_EQ_INT(count(&b->pos[p], SC_ACT_TP, SC_OP_TP_REDUCESCATTER), ar);
        CHECK_EQ_INT(count(&b->pos[p], SC_ACT_TP, SC_OP_TP_ALLGATHER), ar);
        CHECK(b->info[p].fwd_s < a->info[p].fwd_s); /* the norms, on s/t tokens */
        for (int i = 0; i < b->pos[p].n; i++) {
            const sc_action *x = &b->pos[p].acts[i];
            if (x->op == SC_OP_TP_ALLGATHER) /* right after its reduce-scatter, same bytes */
                CHECK(x->after == i - 1 && b->pos[p].acts[i - 1].op == SC_OP_TP_REDUCESCATTER &&
                      b->pos[p].acts[i - 1].bytes == x->bytes);
        }
    }
    sc_lower_free(a);
    sc_lower_free(b);
    sc_step_result *r0, *r1;
    cfg.sp = 0;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_OK);
    cfg.sp = 1;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r1, &err) == SC_OK);
    /* same ring volume and steps; what is exposed can differ by the part of a
     * wait the next stage's pipeline receive also covers (counted there) */
    CHECK_NEAR(r1->breakdown.tp, r0->breakdown.tp, 1e-3);
    CHECK(r1->breakdown.compute < r0->breakdown.compute);
    CHECK(r1->mem[0].activations < r0->mem[0].activations);
    sc_step_result_free(r0);
    sc_step_result_free(r1);
    cfg.tp = 1;
    CHECK(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "tp >= 2");
    sc_model_free(m);
}

/* tp communication overlap (--tp-comm-overlap): before each F, B and full
 * recompute, the op's reduce-scatter and all-gather less their last chunk,
 * (tp - 1) / tp of the bytes, which the stream does not wait for and which
 * start after the stream action before the op; after the op the last chunk,
 * which it waits for: the bytes per op are those without overlap. The
 * simulator exposes less tp time and slows the compute beside the chunks;
 * without sp it refuses. */
TEST(lower_tp_comm_overlap)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("dgx-a100-80g", &c, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 1, .tp = 4, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b",
                       .sp = 1, .recompute = SC_RECOMPUTE_FULL};
    sc_lowered *a, *b;
    REQUIRE(sc_lower(m, &c, &cfg, &a, &err) == SC_OK);
    cfg.tp_comm_overlap = 1;
    REQUIRE(sc_lower(m, &c, &cfg, &b, &err) == SC_OK);
    for (int p = 0; p < 2; p++) {
        const sc_lowered_pos *L = &b->pos[p];
        double bytes_a = 0, bytes_b = 0;
        int tp_a = 0, beside = 0, last = 0, ops = 0;
        for (int i = 0; i < a->pos[p].n; i++)
            if (a->pos[p].acts[i].kind == SC_ACT_TP)
                bytes_a += a->pos[p].acts[i].bytes, tp_a++;
        for (int i = 0; i < L->n; i++) {
            const sc_action *x = &L->acts[i];
            if (x->kind == SC_ACT_COMPUTE && x->op != SC_OP_OPTIMIZER && x->piece == 0)
                ops++;
            if (x->kind != SC_ACT_TP)
                continue;
            bytes_b += x->bytes;
            double whole = b->info[x->stage].tp_bytes;
            if (!x->waits) {
                beside++;
                CHECK_NEAR(x->bytes, whole * 3 / 4, 1e-6 * whole);
                /* it starts with the compute op after it: after the stream
                 * action before that op (or at once) */
                int j = i + 1;
                while (j < L->n && L->acts[j].kind == SC_ACT_TP && !L->acts[j].waits)
                    j++;
                REQUIRE(j < L->n);
                CHECK(L->acts[j].kind == SC_ACT_COMPUTE);
                int k = j - 1;
                while (k >= 0 && !(L->acts[k].kind == SC_ACT_COMPUTE ||
                                   L->acts[k].kind == SC_ACT_RECV ||
                                   (L->acts[k].kind == SC_ACT_TP && L->acts[k].waits)))
                    k--;
                CHECK_EQ_INT(x->after, k);
            } else {
                last++;
                CHECK_NEAR(x->bytes, whole / 4, 1e-6 * whole);
            }
        }
        /* two chunks beside and two last chunks per F, B and recompute */
        CHECK_EQ_INT(beside, tp_a);
        CHECK_EQ_INT(last, tp_a);
        CHECK_EQ_INT(beside, 2 * ops);
        CHECK_NEAR(bytes_b, bytes_a, 1e-6 * bytes_a);
    }
    sc_lower_free(a);
    sc_lower_free(b);
    sc_step_result *r0, *r1;
    cfg.tp_comm_overlap = 0;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_OK);
    cfg.tp_comm_overlap = 1;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r1, &err) == SC_OK);
    /* the exposed tp time shrinks; the compute grows (slowed beside the
     * chunks, and its tp GEMMs run in chunks, cost_kernel.c): whether the
     * step gains depends on the GEMMs' size (here, h 2048 at tp 4, the
     * chunks lose more than the exposed collectives cost) */
    CHECK(r1->breakdown.tp < 0.5 * r0->breakdown.tp);
    CHECK(r1->breakdown.compute > r0->breakdown.compute);
    /* the estimate follows */
    sc_estimate e1;
    REQUIRE(sc_estimate_step(m, &c, &cfg, &e1, &err) == SC_OK);
    CHECK(fabs(e1.step_s - r1->step_time_s) < 0.05 * r1->step_time_s);
    sc_step_result_free(r0);
    sc_step_result_free(r1);
    cfg.sp = 0;
    CHECK(sc_step_simulate(m, &c, &cfg, &r0, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "needs sp");
    sc_model_free(m);
}

/* overlap_param_gather (--overlap-param-gather): ZeRO 1/2's parameter
 * all-gather leaves the end of the step (no PARAMS after the optimizer) for
 * its start: on every position a gather of the first unit in its first
 * compute op's actions, which that op waits for, and one of the rest in its
 * second's, both from the step's start (after -1); together the position's
 * parameters. On one position the step gets shorter; ZeRO 0 or 3, or the
 * gradient reduction not overlapped, are refused. */
TEST(lower_overlap_param_gather)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    REQUIRE(sc_cluster_set_nodes(&c, 4, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 8, .tp = 2, .pp = 2, .v = 1, .m = 4, .mbs = 1, .schedule = "1f1b",
                       .zero = 1, .overlap_param_gather = 1};
    sc_lowered *b;
    REQUIRE(sc_lower(m, &c, &cfg, &b, &err) == SC_OK);
    for (int p = 0; p < 2; p++) {
        const sc_lowered_pos *L = &b->pos[p];
        CHECK_EQ_INT(count(L, SC_ACT_PARAMS, -1), 0);
        CHECK_EQ_INT(count(L, SC_ACT_GATHER, -1), 2);
        double bytes = 0;
        int ops = 0, gathers = 0;
        for (int i = 0; i < L->n; i++) {
            const sc_action *x = &L->acts[i];
            if (x->kind == SC_ACT_COMPUTE && x->op != SC_OP_OPTIMIZER && x->piece == 0)
                ops++;
            if (x->kind != SC_ACT_GATHER)
                continue;
            gathers++;
            bytes += x->bytes;
            CHECK(x->after == -1 && x->waits);
            /* in the actions of the position's first (then second) compute op */
            int j = i + 1;
            while (j < L->n && L->acts[j].kind != SC_ACT_COMPUTE)
                j++;
            REQUIRE(j < L->n);
            CHECK_EQ_INT(L->acts[j].sched_op, x->sched_op);
            CHECK_EQ_INT(ops, gathers - 1);
            if (gathers == 1)
                CHECK_NEAR(x->bytes, b->info[p].unit_bytes, 1e-6 * x->bytes);
        }
        CHECK_NEAR(bytes, b->info[p].param_bytes, 1e-6 * bytes);
    }
    sc_lower_free(b);
    sc_step_result *r0, *r1;
    sc_step_cfg one = {.dp = 16, .tp = 1, .pp = 1, .v = 1, .m = 1, .mbs = 2, .schedule = "1f1b",
                       .zero = 1};
    REQUIRE(sc_cluster_set_nodes(&c, 2, &err) == SC_OK);
    REQUIRE(sc_step_simulate(m, &c, &one, &r0, &err) == SC_OK);
    one.overlap_param_gather = 1;
    REQUIRE(sc_step_simulate(m, &c, &one, &r1, &err) == SC_OK);
    CHECK(r1->step_time_s < r0->step_time_s);
    CHECK(r1->breakdown.dp < r0->breakdown.dp);
    sc_estimate e1;
    REQUIRE(sc_estimate_step(m, &c, &one, &e1, &err) == SC_OK);
    CHECK(fabs(e1.step_s - r1->step_time_s) < 0.05 * r1->step_time_s);
    sc_step_result_free(r0);
    sc_step_result_free(r1);
    one.zero = 3;
    CHECK(sc_step_simulate(m, &c, &one, &r0, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "ZeRO 1 or 2");
    one.zero = 2;
    one.no_overlap_grad_reduce = 1;
    CHECK(sc_step_simulate(m, &c, &one, &r0, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--overlap-grad-reduce");
    sc_model_free(m);
}

/* overlap_param_gather under the interleaved schedule: chunk 0's gather as
 * above (its first unit before the first op, its rest before the second),
 * then each later chunk's own parameters before that chunk's first forward
 * (Megatron-Core's param_sync_func, set by NeMo's distributed Adam too), not
 * every chunk's before the position's second op. In the step, chunk 0's
 * forwards do not wait for chunk 1's gather; chunk 1's first does. */
TEST(lower_overlap_param_gather_interleaved)
{
    sc_model *m;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    REQUIRE(sc_cluster_set_nodes(&c, 8, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 16, .tp = 2, .pp = 2, .v = 2, .m = 4, .mbs = 1,
                       .schedule = "interleaved", .zero = 1, .overlap_param_gather = 1};
    sc_lowered *b;
    REQUIRE(sc_lower(m, &c, &cfg, &b, &err) == SC_OK);
    for (int p = 0; p < 2; p++) {
        const sc_lowered_pos *L = &b->pos[p];
        CHECK_EQ_INT(count(L, SC_ACT_GATHER, -1), 3);
        double bytes = 0, want[3] = {b->info[p].unit_bytes,
                                     b->info[p].param_bytes - b->info[p].unit_bytes,
                                     b->info[2 + p].param_bytes};
        int k = 0, chunk[3] = {0, 0, 1}, mb[3] = {0, 1, 0};
        for (int i = 0; i < L->n; i++) {
            const sc_action *x = &L->acts[i];
            if (x->kind != SC_ACT_GATHER)
                continue;
            REQUIRE(k < 3);
            CHECK(x->after == -1 && x->waits);
            CHECK_NEAR(x->bytes, want[k], 1e-6 * want[k]);
            bytes += x->bytes;
            /* in the actions of the forward that waits for it */
            int j = i + 1;
            while (j < L->n && L->acts[j].kind != SC_ACT_COMPUTE)
                j++;
            REQUIRE(j < L->n);
            CHECK_EQ_INT(L->acts[j].op, SC_OP_F);
            CHECK_EQ_INT(L->acts[j].chunk, chunk[k]);
            CHECK_EQ_INT(L->acts[j].mb, mb[k]);
            k++;
        }
        CHECK_EQ_INT(k, 3);
        CHECK_NEAR(bytes, b->info[p].param_bytes + b->info[2 + p].param_bytes, 1e-6 * bytes);
    }
    sc_lower_free(b);
    /* the simulated step, position 0's ranks: chunk 0's second forward starts
     * before chunk 1's gather ends; chunk 1's first starts after it */
    sc_step_result *r;
    cfg.want_timeline = 1;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    double g1_end = -1, f01 = -1, f10 = -1;
    const sc_timeline *tl = r->timeline;
    REQUIRE(tl && tl->n_ranks > 0);
    const sc_tl_rank *rk = &tl->ranks[0];
    for (int i = 0; i < rk->n_ops; i++) {
        const sc_tl_op *o = &rk->ops[i];
        if (o->kind == SC_OP_DP_ALLGATHER && o->chunk == 1)
            g1_end = o->end;
        if (o->kind == SC_OP_F && o->chunk == 0 && o->mb == 1)
            f01 = o->start;
        if (o->kind == SC_OP_F && o->chunk == 1 && o->mb == 0)
            f10 = o->start;
    }
    REQUIRE(g1_end > 0 && f01 >= 0 && f10 >= 0);
    CHECK(f01 < g1_end);
    CHECK(f10 >= g1_end - 1e-12);
    sc_estimate e;
    REQUIRE(sc_estimate_step(m, &c, &cfg, &e, &err) == SC_OK);
    CHECK(fabs(e.step_s - r->step_time_s) < 0.05 * r->step_time_s);
    sc_step_result_free(r);
    sc_model_free(m);
}

/* plan searches sequence parallelism where tp > 1; --fix sp=0 keeps it off */
TEST(lower_plan_searches_sp)
{
    static char out[1 << 16];
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s plan --model gpt-13b --cluster dgx-a100-80g --nodes 2 "
                       "--global-batch 64 --tp 8 --json",
                       sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "\"sp\":\ttrue");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s plan --model gpt-13b --cluster dgx-a100-80g --nodes 2 "
                       "--global-batch 64 --tp 8 --fix sp=0 --json",
                       sc_test_bin()) == 0);
    CHECK(!strstr(out, "\"sp\":\ttrue"));
    CHECK_STR_HAS(out, "\"sp\":\tfalse");
}

/* zb-h1's B and W split the backward as the executor runs it: W the
 * weight-gradient GEMMs (bwd_w_s), B the rest (input gradients, attention's
 * score products, every memory pass). Timed whole (cpu-local: no kernel
 * model), an MLP's W is half its backward, an attention leaf's its
 * projections' share 8 s h^2 of its 2 x forward FLOPs, a norm's none;
 * kernel by kernel (dgx-a100-80g), W is each weight GEMM's dB product. */
TEST(lower_zbh1_splits_backward_as_the_executor)
{
    sc_model *m = sc_test_small_gpt("zb_m.json");
    REQUIRE(m);
    sc_error err;
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("cpu-local", &c, &err) == SC_OK);
    REQUIRE(c.eff.gemm.sms == 0);
    sc_compute_cfg cc = {SC_FP32, 1, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0, 0};
    int seen[3] = {0};
    for (int i = 0; i < m->n_leaves; i++) {
        const sc_module *x = m->leaves[i];
        double f, b;
        REQUIRE(sc_cost_module_time_cfg(&c, x, &cc, &f, &b, &err) == SC_OK);
        double w = sc_cost_module_wgrad_time(&c, x, &cc, m->seq_len, b);
        if (!strcmp(x->kind, "mlp")) {
            CHECK_NEAR(w, b / 2, 1e-12 * b);
            seen[0]++;
        } else if (!strcmp(x->kind, "attention")) {
            double s = 32, h = 64;
            CHECK_NEAR(w, b * 8 * s * h * h / sc_module_flops_bwd(x), 1e-9 * b);
            CHECK(w < b / 2 && w > 0);
            seen[1]++;
        } else if (x->flops_fwd <= 0) {
            CHECK(w == 0);
            seen[2]++;
        }
    }
    CHECK(seen[0] == 2 && seen[1] == 2 && seen[2] >= 4); /* norms, embedding */
    /* the lowering runs B and W at those durations */
    sc_cluster g;
    REQUIRE(sc_cluster_preset_get("dgx-a100-80g", &g, &err) == SC_OK);
    const sc_cluster *cs[] = {&c, &g};
    for (int k = 0; k < 2; k++) {
        sc_step_cfg cfg = {.dp = 1, .tp = 1, .pp = 2, .v = 1, .m = 4, .mbs = 1,
                           .schedule = "zb-h1"};
        sc_lowered *lw;
        REQUIRE(sc_lower(m, cs[k], &cfg, &lw, &err) == SC_OK);
        for (int p = 0; p < 2; p++) {
            const sc_stage_info *in = &lw->info[p];
            CHECK(in->bwd_w_s > 0 && in->bwd_w_s < in->bwd_s / 2);
            int nb = 0, nw = 0;
            for (int i = 0; i < lw->pos[p].n; i++) {
                const sc_action *a = &lw->pos[p].acts[i];
                if (a->kind != SC_ACT_COMPUTE)
                    continue;
                if (a->op == SC_OP_W) {
                    CHECK_NEAR(a->seconds * a->pieces, in->bwd_w_s, 1e-12);
                    nw++;
                } else if (a->op == SC_OP_B) {
                    CHECK_NEAR(a->seconds, in->bwd_s - in->bwd_w_s, 1e-12);
                    nb++;
                }
            }
            CHECK_EQ_INT(nb, 4);
            CHECK(nw >= 4);
        }
        sc_lower_free(lw);
    }
    sc_model_free(m);
}
