/* test_sched.c - pipeline schedules: op lists, deadlock freedom, the closed
 * forms of their step time (on the engine, free communication) and their
 * peak in-flight activations. */
#include "check.h"
#include "engine.h"
#include "schedule.h"

static sc_sched *gen(const char *name, int p, int m, int v)
{
    sc_sched *s = NULL;
    sc_error err;
    sc_err_clear(&err);
    if (sc_sched_generate(name, p, m, v, &s, &err) != SC_OK) {
        fprintf(stderr, "    generate %s p=%d m=%d v=%d: %s\n", name, p, m, v, err.msg);
        return NULL;
    }
    return s;
}

static double makespan(const sc_sched *s, double tf, double tb, double tw, double tc)
{
    sc_sched_costs c = {tf, tb, tw, tc};
    sc_error err;
    double ms = -1;
    if (sc_sched_simulate(s, &c, &ms, &err) != SC_OK) {
        fprintf(stderr, "    simulate: %s\n", err.msg);
        return -1;
    }
    return ms;
}

TEST(sched_registry)
{
    const char *names[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
    int n = 0;
    for (; sc_sched_all[n]; n++) {
        CHECK(!strcmp(sc_sched_all[n]->name, names[n]));
        CHECK(strlen(sc_sched_all[n]->desc) > 10);
        CHECK(sc_sched_find(names[n]) == sc_sched_all[n]);
    }
    CHECK_EQ_INT(n, 4);
    CHECK(sc_sched_find("pipedream") == NULL);
    sc_sched *s = NULL;
    sc_error err;
    CHECK_EQ_INT(sc_sched_generate("pipedream", 2, 2, 1, &s, &err), SC_ENOTFOUND);
    CHECK_STR_HAS(err.msg, "known: gpipe, 1f1b, interleaved, zb-h1");
    CHECK(s == NULL);
        sc_sched_free(NULL);
}

TEST(sched_invalid_combos)
{
    sc_sched *s = NULL;
    sc_error err;
    CHECK_EQ_INT(sc_sched_generate("interleaved", 4, 6, 2, &s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "interleaved needs microbatches to be a multiple of pipeline stages "
                           "(m=6, pp=4)");
    CHECK_EQ_INT(sc_sched_generate("interleaved", 4, 2, 2, &s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "(m=2, pp=4)");
    CHECK_EQ_INT(sc_sched_generate("interleaved", 4, 8, 1, &s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "chunks >= 2");
    CHECK_EQ_INT(sc_sched_generate("interleaved", 1, 8, 2, &s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "pipeline stages >= 2");
    CHECK_EQ_INT(sc_sched_generate("1f1b", 4, 8, 2, &s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "1f1b has one chunk per rank (v=2");
    CHECK_EQ_INT(sc_sched_generate("gpipe", 4, 8, 3, &s, &err), SC_EINVAL);
    CHECK_EQ_INT(sc_sched_generate("zb-h1", 4, 8, 2, &s, &err), SC_EINVAL);
    CHECK_EQ_INT(sc_sched_generate("gpipe", 0, 8, 1, &s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "pp=0");
    CHECK_EQ_INT(sc_sched_generate("1f1b", 4, 0, 1, &s, &err), SC_EINVAL);
    CHECK(s == NULL);
    /* 1F1B accepts m < p */
    s = gen("1f1b", 4, 2, 1);
    CHECK(s != NULL);
    sc_sched_free(s);
}

/* Every variant over many (p, m, v): well formed, sends placed by the rule,
 * and the symbolic run with blocking receives finishes. */
TEST(sched_wellformed_all)
{
    int ps[] = {1, 2, 3, 4, 5, 8};
    int count = 0;
    for (int k = 0; sc_sched_all[k]; k++) {
        const sc_sched_impl *im = sc_sched_all[k];
        int inter = !strcmp(im->name, "interleaved");
        for (size_t a = 0; a < SC_ARRAY_LEN(ps); a++)
            for (int m = 1; m <= 17; m++)
                for (int v = inter ? 2 : 1; v <= (inter ? 4 : 1); v++) {
                    int p = ps[a];
                    if (inter && (p < 2 || m % p))
                        continue;
                    sc_sched *s = gen(im->name, p, m, v);
                    REQUIRE(s);
                    sc_error err;
                    sc_err_clear(&err);
                    if (sc_sched_check(s, &err) != SC_OK) {
                        CHECK_STR_HAS(err.msg, "(no error expected)");
                        sc_sched_free(s);
                        return;
                    }
                    /* op count: F + B (+ W) per (mb, chunk) plus 2 per stage boundary crossing */
                    long want = (long)m * p * v * (im->split_backward ? 3 : 2) +
                                4L * m * (p * v - 1);
                    CHECK_EQ_INT(s->off[p], want);
                    count++;
                    sc_sched_free(s);
                }
    }
    CHECK(count > 300);
}

/* The exact op order of small cases, from the papers' figures. */
static void expect_compute(const sc_sched *s, int r, const char *want)
{
    char got[1024] = "";
    int n;
    const sc_sched_op *o = sc_sched_rank_ops(s, r, &n);
    for (int i = 0; i < n; i++) {
        if (o[i].kind > SC_OP_W)
            continue;
        char b[32];
        if (s->v > 1)
            snprintf(b, sizeof b, "%s%d.%d ", sc_op_kind_name(o[i].kind), o[i].mb, o[i].chunk);
        else
            snprintf(b, sizeof b, "%s%d ", sc_op_kind_name(o[i].kind), o[i].mb);
        strncat(got, b, sizeof got - strlen(got) - 1);
    }
    if (strcmp(got, want))
        CHECK_STR_HAS(got, want);
}

TEST(sched_op_order)
{
    sc_sched *s = gen("1f1b", 4, 6, 1);
    REQUIRE(s);
    expect_compute(s, 0, "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
    expect_compute(s, 2, "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 ");
    expect_compute(s, 3, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
    sc_sched_free(s);
    s = gen("gpipe", 2, 3, 1);
    REQUIRE(s);
    expect_compute(s, 1, "F0 F1 F2 B0 B1 B2 ");
    sc_sched_free(s);
    /* Megatron-LM interleaved, p=2, v=2, m=4: rank 0 warms up 2*1 + 1*2 = 4 */
    s = gen("interleaved", 2, 4, 2);
    REQUIRE(s);
    expect_compute(s, 0, "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 "
                         "B2.0 B3.0 ");
    expect_compute(s, 1, "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 "
                         "B2.0 B3.0 ");
    sc_sched_free(s);
    /* ZB-H1, p=3, m=4: rank r keeps r W's in reserve */
    s = gen("zb-h1", 3, 4, 1);
    REQUIRE(s);
    expect_compute(s, 0, "F0 F1 F2 B0 W0 F3 B1 W1 B2 W2 B3 W3 ");
    expect_compute(s, 1, "F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3 ");
    expect_compute(s, 2, "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3 ");
    sc_sched_free(s);
    /* communication sits right before the consumer / right after the producer */
    s = gen("1f1b", 2, 1, 1);
    REQUIRE(s);
    int n;
    const sc_sched_op *o = sc_sched_rank_ops(s, 0, &n);
    REQUIRE(n == 4);
    CHECK(o[0].kind == SC_OP_F && o[1].kind == SC_OP_SEND_F && o[1].peer == 1);
    CHECK(o[2].kind == SC_OP_RECV_B && o[2].peer == 1 && o[3].kind == SC_OP_B);
    o = sc_sched_rank_ops(s, 1, &n);
    REQUIRE(n == 4);
    CHECK(o[0].kind == SC_OP_RECV_F && o[0].peer == 0 && o[1].kind == SC_OP_F);
    CHECK(o[2].kind == SC_OP_B && o[3].kind == SC_OP_SEND_B && o[3].peer == 0);
    sc_sched_free(s);
    /* interleaved wraps from the last rank to rank 0's next chunk */
    s = gen("interleaved", 2, 2, 2);
    REQUIRE(s);
    o = sc_sched_rank_ops(s, 1, &n);
    CHECK(o[0].kind == SC_OP_RECV_F && o[0].peer == 0 && o[1].kind == SC_OP_F &&
          o[1].chunk == 0 && o[2].kind == SC_OP_SEND_F && o[2].peer == 0);
    sc_sched_free(s);
}

/* Builds a p=2, m=2 schedule by hand whose ranks are each well formed but
 * whose receives wait on each other: rank 0 runs F0 B0 F1 B1 while rank 1
 * runs F0 F1 B0 B1. */
static sc_sched *hand_deadlock(void)
{
    static const int order[2][4][2] = {{{SC_OP_F, 0}, {SC_OP_B, 0}, {SC_OP_F, 1}, {SC_OP_B, 1}},
                                       {{SC_OP_F, 0}, {SC_OP_F, 1}, {SC_OP_B, 0}, {SC_OP_B, 1}}};
    sc_sched *s = sc_calloc(1, sizeof *s);
    s->impl = &sc_sched_1f1b;
    s->p = 2, s->m = 2, s->v = 1;
    s->off = sc_malloc(3 * sizeof *s->off);
    s->ops = sc_malloc(16 * sizeof *s->ops);
    int n = 0;
    for (int r = 0; r < 2; r++) {
        s->off[r] = n;
        for (int i = 0; i < 4; i++) {
            int k = order[r][i][0], mb = order[r][i][1];
            if (k == SC_OP_F && r == 1)
                s->ops[n++] = (sc_sched_op){mb, 0, 0, SC_OP_RECV_F, 0};
            if (k == SC_OP_B && r == 0)
                s->ops[n++] = (sc_sched_op){mb, 1, 0, SC_OP_RECV_B, 0};
            s->ops[n++] = (sc_sched_op){mb, -1, 0, (uint8_t)k, 0};
            if (k == SC_OP_F && r == 0)
                s->ops[n++] = (sc_sched_op){mb, 1, 0, SC_OP_SEND_F, 0};
            if (k == SC_OP_B && r == 1)
                s->ops[n++] = (sc_sched_op){mb, 0, 0, SC_OP_SEND_B, 0};
        }
    }
    s->off[2] = n;
    return s;
}

TEST(sched_check_catches_deadlock)
{
    sc_sched *s = hand_deadlock();
    sc_error err;
    sc_err_clear(&err);
    CHECK_EQ_INT(sc_sched_check(s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "deadlock: rank 0 waits forever at op 2 recv_b(mb=0, chunk=0) from "
                           "rank 1");
    /* the engine finds the same cycle instead of hanging */
    sc_sched_costs c = {1, 1, 0, 0};
    double ms;
    sc_err_clear(&err);
    CHECK_EQ_INT(sc_sched_simulate(s, &c, &ms, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "deadlock");
    /* a misplaced send is reported too */
    s->ops[1].peer = 0;
    CHECK_EQ_INT(sc_sched_check(s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "peer 0");
    sc_sched_free(s);
}

/* GPipe and 1F1B: (m + p - 1)(tf + tb) (Huang et al. 2019; Narayanan et al.
 * 2021), for m >= p and m < p alike. */
TEST(sched_makespan_gpipe_1f1b)
{
    const double tf = 1.3, tb = 2.1;
    const char *names[] = {"gpipe", "1f1b"};
    for (int k = 0; k < 2; k++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 20; m += (m < 10 ? 1 : 5)) {
                sc_sched *s = gen(names[k], p, m, 1);
                REQUIRE(s);
                CHECK_NEAR(makespan(s, tf, tb, 0, 0), (m + p - 1) * (tf + tb), 1e-9);
                sc_sched_free(s);
            }
}

/* Interleaved with per-chunk times tf, tb: m*v*(tf + tb) + (p - 1)(tf + tb),
 * i.e. a bubble of (p - 1)/(v*m) of the ideal time (Narayanan et al. 2021,
 * sec. 2.2.2). */
TEST(sched_makespan_interleaved)
{
    const double tf = 0.7, tb = 1.9;
    for (int p = 2; p <= 8; p++)
        for (int v = 2; v <= 4; v++)
            for (int m = p; m <= 4 * p; m += p) {
                sc_sched *s = gen("interleaved", p, m, v);
                REQUIRE(s);
                double want = m * v * (tf + tb) + (p - 1) * (tf + tb);
                CHECK_NEAR(makespan(s, tf, tb, 0, 0), want, 1e-9);
                CHECK_NEAR((want - m * v * (tf + tb)) / (m * v * (tf + tb)),
                           (double)(p - 1) / (v * m), 1e-9);
                sc_sched_free(s);
            }
}

/* ZB-H1 (Qi et al. 2023, sec. 3.1), tb = input gradient, tw = weight
 * gradient. For m >= p our schedule achieves, for every ratio tested,
 *     m (tf + tb + tw) + (p - 1) max(tf, tb, tf + tb - tw),
 * i.e. the paper's bubble (p - 1)(tf + tb - tw) whenever tw <= min(tf, tb)
 * (a third of 1F1B's when tf = tb = tw). The other two terms are lower
 * bounds for any schedule holding at most p microbatches per rank: the last
 * rank starts at (p - 1) tf and then has m (tf + tb + tw) of work; rank 0
 * can run at most p forwards before B(0) comes back after p tf + (p - 1) tb.
 * For m < p and tw <= min(tf, tb) it takes (m + p - 1)(tf + tb) + tw (the
 * pipeline never fills; only rank 0's last W is exposed); for m < p with a
 * larger tw no closed form is claimed. */
TEST(sched_makespan_zbh1)
{
    const double t[][3] = {{1, 1, 1}, {1, 1.5, 0.5}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2},
                           {0.5, 1, 1}, {3, 1, 0.5}, {1.1, 0.9, 0.7}};
    for (size_t k = 0; k < SC_ARRAY_LEN(t); k++) {
        double tf = t[k][0], tb = t[k][1], tw = t[k][2];
        double b = tf + tb - tw > tf ? tf + tb - tw : tf;
        if (tb > b)
            b = tb;
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 20; m++) {
                sc_sched *s = gen("zb-h1", p, m, 1);
                REQUIRE(s);
                if (m < p && (tw > tb || tw > tf)) {
                    sc_sched_free(s);
                    continue; /* no closed form claimed */
                }
                double want = m >= p ? m * (tf + tb + tw) + (p - 1) * b
                                     : (m + p - 1) * (tf + tb) + tw;
                double got = makespan(s, tf, tb, tw, 0);
                if (fabs(got - want) > 1e-9 * want) {
                    CHECK_NEAR(got, want, 1e-9);
                    fprintf(stderr, "    p=%d m=%d tf=%g tb=%g tw=%g\n", p, m, tf, tb, tw);
                    sc_sched_free(s);
                    return;
                }
                sc_sched_free(s);
            }
    }
    /* equal times: a third of 1F1B's bubble */
    sc_sched *z = gen("zb-h1", 4, 8, 1), *o = gen("1f1b", 4, 8, 1);
    REQUIRE(z && o);
    double bz = makespan(z, 1, 1, 1, 0) - 8 * 3, bo = makespan(o, 1, 2, 0, 0) - 8 * 3;
    CHECK_NEAR(bz * 3, bo, 1e-12);
    sc_sched_free(z);
    sc_sched_free(o);
}

/* Peak in-flight activations, by walking the lists, against the closed
 * forms: GPipe m; 1F1B min(p - r, m) (Narayanan et al. 2021); interleaved
 * (Megatron-LM's warm-up + 1, in chunks) m*v if m == p, else
 * min(2(p - r - 1) + (v - 1)p + 1, m*v); ZB-H1 min(p, m) on every rank (1F1B's
 * rank-0 peak, as Qi et al. 2023 state for H1). */
TEST(sched_inflight)
{
    int peak[16];
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 20; m++) {
            sc_sched *g = gen("gpipe", p, m, 1), *o = gen("1f1b", p, m, 1),
                     *z = gen("zb-h1", p, m, 1);
            REQUIRE(g && o && z);
            sc_sched_peak_inflight(g, peak);
            for (int r = 0; r < p; r++)
                CHECK_EQ_INT(peak[r], m);
            sc_sched_peak_inflight(o, peak);
            for (int r = 0; r < p; r++)
                CHECK_EQ_INT(peak[r], p - r < m ? p - r : m);
            sc_sched_peak_inflight(z, peak);
            for (int r = 0; r < p; r++)
                CHECK_EQ_INT(peak[r], p < m ? p : m);
            sc_sched_free(g), sc_sched_free(o), sc_sched_free(z);
        }
    for (int p = 2; p <= 8; p++)
        for (int v = 2; v <= 4; v++)
            for (int m = p; m <= 4 * p; m += p) {
                sc_sched *s = gen("interleaved", p, m, v);
                REQUIRE(s);
                sc_sched_peak_inflight(s, peak);
                for (int r = 0; r < p; r++) {
                    int want = 2 * (p - r - 1) + (v - 1) * p + 1;
                    if (m == p || want > m * v)
                        want = m * v;
                    CHECK_EQ_INT(peak[r], want);
                }
                sc_sched_free(s);
            }
}

/* The engine mapping: tags, one task per op, and message costs on the
 * critical path. p = 2, m = 1: F, message, F, B, message, B. */
TEST(sched_to_sim_mapping)
{
    sc_sched *s = gen("1f1b", 2, 1, 1);
    REQUIRE(s);
    CHECK_NEAR(makespan(s, 1, 2, 0, 0.5), 2 * 1 + 2 * 2 + 2 * 0.5, 1e-12);
    sc_sim *sim;
    sc_error err;
    REQUIRE(sc_sim_new(&sim, &err) == SC_OK);
    int32_t task[8];
    sc_sched_costs c = {1, 2, 0, 0.5};
    REQUIRE(sc_sched_to_sim(s, &c, sim, NULL, task, &err) == SC_OK);
    REQUIRE(sc_sim_run(sim, &err) == SC_OK);
    CHECK_EQ_INT(sc_sim_resource_count(sim), 2);
    CHECK(!strcmp(sc_sim_resource_name(sim, 1), "rank1"));
    /* rank 1's F (op 1 of rank 1) starts after rank 0's F and the message */
    int t = task[s->off[1] + 1];
    const sc_sim_tag *tg = sc_sim_task_tag(sim, t);
    CHECK_EQ_INT(tg->kind, SC_OP_F);
    CHECK_EQ_INT(tg->a, 1); /* rank */
    CHECK_EQ_INT(tg->b, 1); /* stage */
    CHECK_EQ_INT(tg->d, 0); /* microbatch */
    CHECK_NEAR(sc_sim_task_start(sim, t), 1.5, 1e-12);
    CHECK_NEAR(sc_sim_resource_busy(sim, 0), 3, 1e-12);
    sc_sim_free(sim);
    sc_sched_free(s);
}

TEST(sched_oom)
{
    int saw = 0;
    for (long n = 1; n < 60; n++) {
        sc_alloc_fail_at(n);
        sc_sched *s = NULL;
        sc_error err;
        sc_status st = sc_sched_generate("interleaved", 4, 8, 2, &s, &err);
        if (st == SC_OK)
            st = sc_sched_check(s, &err);
        sc_alloc_fail_at(0);
        if (st == SC_ENOMEM)
            saw++;
        else
            CHECK_EQ_INT(st, SC_OK);
        sc_sched_free(s);
    }
    CHECK(saw > 3);
}
