/* test_engine.c - the discrete-event engine and its event queue. */
#include "check.h"
#include "engine.h"
#include "engine_int.h"

#include <stdint.h>
#include <stdlib.h>

static sc_sim *mk(void)
{
    sc_sim *s = NULL;
    sc_error err;
    if (sc_sim_new(&s, &err) != SC_OK)
        return NULL;
    return s;
}

static int run_ok(sc_sim *s)
{
    sc_error err;
    sc_err_clear(&err);
    sc_status st = sc_sim_run(s, &err);
    if (st != SC_OK)
        fprintf(stderr, "    run: %s\n", err.msg);
    return st == SC_OK;
}

TEST(engine_heap_order)
{
    sc_sim_heap h = {0};
    /* 2000 events on 17 distinct times: pops must come sorted by time, and by
     * insertion order among equal times. */
    uint32_t x = 12345;
    for (int i = 0; i < 2000; i++) {
        x = x * 1103515245u + 12345u;
        REQUIRE(sc_sim_heap_push(&h, (double)((x >> 16) % 17), i, 0) == SC_OK);
    }
    CHECK_EQ_INT(sc_sim_heap_size(&h), 2000);
    sc_sim_event prev = {-1, 0, -1, 0}, e;
    int n = 0;
    while (sc_sim_heap_size(&h)) {
        const sc_sim_event *pk = sc_sim_heap_peek(&h);
        REQUIRE(pk);
        double pt = pk->time;
        int pid = pk->id;
        REQUIRE(sc_sim_heap_pop(&h, &e));
        CHECK(e.time == pt && e.id == pid);
        CHECK(e.time >= prev.time);
        if (e.time == prev.time)
            CHECK(e.id > prev.id && e.seq > prev.seq);
        prev = e;
        n++;
    }
    CHECK_EQ_INT(n, 2000);
    CHECK(!sc_sim_heap_pop(&h, &e));
    CHECK(sc_sim_heap_peek(&h) == NULL);
    sc_sim_heap_free(&h);
}

TEST(engine_heap_ties)
{
    sc_sim_heap h = {0};
    for (int i = 0; i < 10; i++)
        REQUIRE(sc_sim_heap_push(&h, 1.0, i, 0) == SC_OK);
    REQUIRE(sc_sim_heap_push(&h, 0.5, 99, 0) == SC_OK);
    sc_sim_event e;
    REQUIRE(sc_sim_heap_pop(&h, &e));
    CHECK_EQ_INT(e.id, 99);
    for (int i = 0; i < 10; i++) {
        REQUIRE(sc_sim_heap_pop(&h, &e));
        CHECK_EQ_INT(e.id, i);
    }
    sc_sim_heap_free(&h);
}

/* Pops q and h to empty; returns the pops that differ (time, id or type). */
static long drain(sc_sim_queue *q, sc_sim_heap *h, long *pops)
{
    long bad = 0;
    double t;
    int32_t id, type;
    sc_sim_event e;
    while (sc_sim_queue_pop(q, &t, &id, &type)) {
        if (!sc_sim_heap_pop(h, &e) || t != e.time || id != e.id || type != e.type)
            bad++;
        ++*pops;
    }
    return bad + (long)sc_sim_heap_size(h);
}

/* The engine's bucketed event queue pops in exactly the heap's (time, seq)
 * order: random pushes at times >= the last popped one (many equal, some
 * equal to it, -0.0 beside +0.0), interleaved with pops, on both at once;
 * enough distinct times at once to grow the queue's table several times;
 * then thousands of times open at once, each pushed again and again. */
TEST(engine_queue_matches_heap)
{
    sc_sim_queue q = {0};
    sc_sim_heap h = {0};
    uint32_t x = 777;
#define RND() (x = x * 1664525u + 1013904223u, x >> 8)
    double now = 0;
    long pushes = 0, pops = 0, mismatches = 0;
    size_t most = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 60000; i++) {
            unsigned r = RND() % 10;
            if (r < 6 || q.n == 0) {
                double t;
                unsigned k = RND() % 8;
                if (k == 0)
                    t = now; /* at the time being processed */
                else if (k == 1)
                    t = now == 0 ? -0.0 : now;
                else if (k < 5)
                    t = now + (double)(RND() % 4); /* few times, many ties */
                else
                    t = now + (double)(RND() % 100000) / 1000; /* many times */
                int32_t id = i, type = (int32_t)(RND() % 3);
                REQUIRE(sc_sim_queue_push(&q, t, id, type) == SC_OK);
                REQUIRE(sc_sim_heap_push(&h, t, id, type) == SC_OK);
                pushes++;
            } else {
                double nt;
                REQUIRE(sc_sim_queue_next_time(&q, &nt));
                REQUIRE(sc_sim_heap_peek(&h));
                double t;
                int32_t id, type;
                sc_sim_event e;
                REQUIRE(sc_sim_queue_pop(&q, &t, &id, &type));
                REQUIRE(sc_sim_heap_pop(&h, &e));
                if (t != e.time || nt != e.time || id != e.id || type != e.type ||
                    signbit(t))
                    mismatches++;
                now = t;
                pops++;
            }
            CHECK_EQ_INT(q.n, sc_sim_heap_size(&h));
            if (sc_sim_heap_size(&q.heap) > most)
                most = sc_sim_heap_size(&q.heap);
        }
        /* drain, then start again on the emptied queue (memory kept) */
        mismatches += drain(&q, &h, &pops);
        CHECK(!sc_sim_heap_pop(&h, &(sc_sim_event){0}));
        double t;
        int32_t id, type;
        CHECK(!sc_sim_queue_pop(&q, &t, &id, &type));
        CHECK(!sc_sim_queue_next_time(&q, &t));
        now = 0;
        if (round == 1) { /* the third round on a cleared queue and heap */
            sc_sim_queue_clear(&q);
            sc_sim_heap_clear(&h);
        }
    }
    /* Many times open at once, each pushed again and again in random order:
     * times whose slot another time took get a second bucket while their
     * first is still queued, which must pop after it. */
    for (int i = 0; i < 150000; i++) {
        double t = (double)(RND() % 3000) * 0.001;
        REQUIRE(sc_sim_queue_push(&q, t, i, 1) == SC_OK);
        REQUIRE(sc_sim_heap_push(&h, t, i, 1) == SC_OK);
        pushes++;
    }
    CHECK(sc_sim_heap_size(&q.heap) > 3000); /* some times hold two buckets or more */
    mismatches += drain(&q, &h, &pops);
#undef RND
    CHECK_EQ_INT(mismatches, 0);
    CHECK(pops == pushes && pushes > 100000);
    CHECK(most > 1000); /* the hash table grew past its first 256 slots */
    sc_sim_queue_free(&q);
    sc_sim_heap_free(&h);
}

/* A failed allocation leaves the queue as it was. */
TEST(engine_queue_oom)
{
    int failed = 0;
    for (long n = 1; n < 40; n++) {
        sc_sim_queue q = {0};
        sc_alloc_fail_at(n);
        int pushed = 0;
        for (int i = 0; i < 600; i++) {
            if (sc_sim_queue_push(&q, (double)(i % 300), i, 0) != SC_OK) {
                failed++;
                break;
            }
            pushed++;
        }
        sc_alloc_fail_at(0);
        CHECK_EQ_INT(q.n, pushed);
        double prev = -1;
        int popped = 0, ordered = 1;
        double t;
        int32_t id, type;
        while (sc_sim_queue_pop(&q, &t, &id, &type)) {
            if (t < prev || (int)t != id % 300)
                ordered = 0;
            prev = t;
            popped++;
        }
        CHECK(ordered);
        CHECK_EQ_INT(popped, pushed);
        sc_sim_queue_free(&q);
    }
    CHECK(failed > 0);
}

/* Tags are kept only once a task has one: untagged tasks before it read as
 * zero, a sim without tags reads zero for all, and a failed allocation of the
 * tag array is the sticky SC_ENOMEM, never a crash. */
TEST(engine_tags_lazy)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r = sc_sim_add_resource(s, "r");
    int a = sc_sim_add_compute(s, r, 1, NULL);
    REQUIRE(a >= 0);
    CHECK(sc_sim_task_tag(s, a)->kind == 0 && sc_sim_task_tag(s, a)->user == NULL);
    for (int i = 0; i < 100; i++) /* past the first capacity */
        sc_sim_add_compute(s, r, 1, NULL);
    sc_sim_tag tg = {7, 1, 2, 3, 4, &tg};
    int b = sc_sim_add_marker(s, &tg);
    int c = sc_sim_add_compute(s, r, 1, NULL);
    int d = -1;
    for (int i = 0; i < 200; i++) /* grow with tags */
        d = sc_sim_add_compute(s, r, 1, &tg);
    REQUIRE(b > 100 && c == b + 1 && d > c);
    REQUIRE(run_ok(s));
    const sc_sim_tag *g = sc_sim_task_tag(s, b);
    CHECK(g->kind == 7 && g->a == 1 && g->b == 2 && g->c == 3 && g->d == 4 && g->user == &tg);
    g = sc_sim_task_tag(s, a);
    CHECK(g->kind == 0 && g->a == 0 && g->d == 0 && g->user == NULL);
    CHECK(sc_sim_task_tag(s, c)->kind == 0);
    CHECK(sc_sim_task_tag(s, d)->kind == 7);
    CHECK_NEAR(sc_sim_makespan(s), 302, 1e-12); /* 302 tasks of 1 s on r */
    sc_sim_free(s);
    int nomem = 0;
    for (long n = 1; n < 40; n++) {
        s = mk();
        REQUIRE(s);
        sc_alloc_fail_at(n);
        for (int i = 0; i < 40; i++)
            sc_sim_add_marker(s, i < 20 ? NULL : &tg);
        sc_alloc_fail_at(0);
        sc_error err;
        sc_status st = sc_sim_run(s, &err);
        if (st == SC_ENOMEM) {
            nomem++;
        } else {
            CHECK(st == SC_OK);
            CHECK(sc_sim_task_tag(s, 39)->kind == 7 && sc_sim_task_tag(s, 0)->kind == 0);
        }
        sc_sim_free(s);
    }
    CHECK(nomem > 0);
}

TEST(engine_resource_serial)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r = sc_sim_add_resource(s, "gpu0");
    int a = sc_sim_add_compute(s, r, 1, NULL);
    int b = sc_sim_add_compute(s, r, 2, NULL);
    int c = sc_sim_add_compute(s, r, 3, NULL);
    REQUIRE(run_ok(s));
    CHECK_NEAR(sc_sim_task_end(s, a), 1, 1e-12);
    CHECK_NEAR(sc_sim_task_start(s, b), 1, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, c), 6, 1e-12);
    CHECK_NEAR(sc_sim_resource_busy(s, r), 6, 1e-12);
    CHECK_NEAR(sc_sim_makespan(s), 6, 1e-12);
    CHECK_EQ_INT(sc_sim_event_count(s), 3);
    CHECK(!strcmp(sc_sim_resource_name(s, r), "gpu0"));
    sc_sim_free(s);
}

/* Tasks on a resource run in submission order even when a later one is ready
 * first. */
TEST(engine_resource_submission_order)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r0 = sc_sim_add_resource(s, "a"), r1 = sc_sim_add_resource(s, "b");
    int slow = sc_sim_add_compute(s, r0, 5, NULL);
    int first = sc_sim_add_compute(s, r1, 1, NULL);  /* waits on slow */
    int second = sc_sim_add_compute(s, r1, 1, NULL); /* ready at 0 */
    REQUIRE(sc_sim_add_dep(s, slow, first) == 0);
    REQUIRE(run_ok(s));
    CHECK_NEAR(sc_sim_task_start(s, first), 5, 1e-12);
    CHECK_NEAR(sc_sim_task_start(s, second), 6, 1e-12);
    CHECK_NEAR(sc_sim_resource_busy(s, r1), 2, 1e-12);
    sc_sim_free(s);
}

/* A delay of d on no resource, then a marker: the marker ends at d. */
static int at(sc_sim *s, double d)
{
    int w = sc_sim_add_compute(s, -1, d, NULL), m = sc_sim_add_marker(s, NULL);
    sc_sim_add_dep(s, w, m);
    return m;
}

/* Contention: a compute task slows by 1 + factor while a span is open on its
 * resource, by hand. */
TEST(engine_slowdown_spans)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r = sc_sim_add_resource(s, "gpu0"), q = sc_sim_add_resource(s, "gpu1");
    REQUIRE(sc_sim_set_slowdown(s, r, 0.5) == 0);
    int a = sc_sim_add_compute(s, r, 10, NULL); /* 0 .. ? */
    int b = sc_sim_add_compute(s, r, 2, NULL);  /* after a, wholly inside a span */
    int c = sc_sim_add_compute(s, q, 10, NULL); /* no slowdown set: unaffected */
    int o1 = at(s, 2), c1 = at(s, 6);
    REQUIRE(sc_sim_add_span(s, o1, c1, r) >= 0);
    REQUIRE(sc_sim_add_span(s, o1, c1, q) >= 0);
    /* two overlapping spans [3, 5] and [4, 12]: one slowdown, not two */
    int o2 = at(s, 11.3), c2 = at(s, 20);
    REQUIRE(sc_sim_add_span(s, o2, c2, r) >= 0);
    REQUIRE(sc_sim_add_span(s, at(s, 12), at(s, 30), r) >= 0);
    /* one that closes before it opens never opens */
    REQUIRE(sc_sim_add_span(s, at(s, 50), at(s, 40), r) >= 0);
    int d = sc_sim_add_compute(s, r, 4, NULL);
    REQUIRE(sc_sim_add_dep(s, at(s, 45), d) == 0);
    REQUIRE(run_ok(s));
    /* a: 2 s at full rate, 4 s at 2/3 (2.667 of work), 5.3 s at full rate
     * from 6, and the last 0.033 at 2/3 from 11.3 */
    double ea = 11.3 + (10 - 2 - 4 / 1.5 - 5.3) * 1.5;
    CHECK_NEAR(sc_sim_task_end(s, a), ea, 1e-9);
    /* b: all of it inside the spans, at 2/3 */
    CHECK_NEAR(sc_sim_task_end(s, b), ea + 2 * 1.5, 1e-9);
    CHECK_NEAR(sc_sim_task_end(s, c), 10, 1e-12);
    CHECK_NEAR(sc_sim_task_start(s, d), 45, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, d), 49, 1e-12);
    CHECK_NEAR(sc_sim_resource_busy(s, r), (ea - 0) + 3 + 4, 1e-9);
    /* a run again gives the same */
    REQUIRE(run_ok(s));
    CHECK_NEAR(sc_sim_task_end(s, b), ea + 3, 1e-9);
    sc_sim_free(s);
}

TEST(engine_slowdown_bad_args)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r = sc_sim_add_resource(s, "gpu0");
    int t = sc_sim_add_compute(s, r, 1, NULL);
    CHECK(sc_sim_set_slowdown(s, r, -0.1) < 0);
    sc_error err;
    CHECK(sc_sim_status(s, &err) == SC_EINVAL);
    sc_sim_free(s);
    s = mk();
    REQUIRE(s);
    r = sc_sim_add_resource(s, "gpu0");
    t = sc_sim_add_compute(s, r, 1, NULL);
    CHECK(sc_sim_add_span(s, t, t + 5, r) < 0);
    CHECK(sc_sim_status(s, &err) == SC_EINVAL);
    sc_sim_free(s);
    s = mk();
    REQUIRE(s);
    t = sc_sim_add_compute(s, -1, 1, NULL);
    CHECK(sc_sim_set_slowdown(s, 0, 0.2) < 0);
    sc_sim_free(s);
}

TEST(engine_deps_diamond)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r[3];
    for (int i = 0; i < 3; i++)
        r[i] = sc_sim_add_resource(s, NULL);
    sc_sim_tag tg = {7, 1, 2, 3, 4, NULL};
    int a = sc_sim_add_compute(s, r[0], 1, &tg);
    int b = sc_sim_add_compute(s, r[1], 2, NULL);
    int c = sc_sim_add_compute(s, r[2], 4, NULL);
    int d = sc_sim_add_marker(s, NULL);
    int e = sc_sim_add_compute(s, -1, 0.5, NULL); /* pure delay */
    sc_sim_add_dep(s, a, b);
    sc_sim_add_dep(s, a, c);
    sc_sim_add_dep(s, b, d);
    sc_sim_add_dep(s, c, d);
    sc_sim_add_dep(s, d, e);
    REQUIRE(sc_sim_status(s, NULL) == SC_OK);
    REQUIRE(run_ok(s));
    CHECK_NEAR(sc_sim_task_start(s, b), 1, 1e-12);
    CHECK_NEAR(sc_sim_task_start(s, c), 1, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, d), 5, 1e-12);
    CHECK_NEAR(sc_sim_task_start(s, d), 5, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, e), 5.5, 1e-12);
    CHECK_NEAR(sc_sim_makespan(s), 5.5, 1e-12);
    CHECK_EQ_INT(sc_sim_task_tag(s, a)->kind, 7);
    CHECK_EQ_INT(sc_sim_task_tag(s, a)->d, 4);
    CHECK_EQ_INT(sc_sim_task_tag(s, b)->kind, 0);
    CHECK_EQ_INT(sc_sim_task_type_of(s, d), SC_SIM_MARKER);
    CHECK_EQ_INT(sc_sim_task_resource(s, e), -1);
    sc_sim_free(s);
}

TEST(engine_deadlock_cycle)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r = sc_sim_add_resource(s, "gpu3");
    int a = sc_sim_add_compute(s, -1, 1, NULL);
    sc_sim_tag tg = {2, 3, 0, 0, 5, NULL};
    int b = sc_sim_add_compute(s, r, 1, &tg);
    int c = sc_sim_add_compute(s, r, 1, NULL);
    int free_task = sc_sim_add_compute(s, -1, 1, NULL);
    sc_sim_add_dep(s, a, b);
    sc_sim_add_dep(s, b, c);
    sc_sim_add_dep(s, c, a);
    sc_error err;
    sc_err_clear(&err);
    CHECK_EQ_INT(sc_sim_run(s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "deadlock");
    CHECK_STR_HAS(err.msg, "3 of 4 tasks never ran");
    CHECK_STR_HAS(err.msg, "task 0 (compute");
    CHECK_STR_HAS(err.msg, "'gpu3'");
    CHECK_STR_HAS(err.msg, "cycle");
    (void)free_task;
    sc_sim_free(s);
}

/* A dependency that contradicts the submission order on a resource. */
TEST(engine_deadlock_resource_order)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int r = sc_sim_add_resource(s, "stream");
    int first = sc_sim_add_compute(s, r, 1, NULL);
    int second = sc_sim_add_compute(s, r, 1, NULL);
    sc_sim_add_dep(s, second, first);
    sc_error err;
    sc_err_clear(&err);
    CHECK_EQ_INT(sc_sim_run(s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "deadlock: 2 of 2");
    CHECK_STR_HAS(err.msg, "'stream'");
    sc_sim_free(s);
}

TEST(engine_bad_args)
{
    sc_sim *s = mk();
    REQUIRE(s);
    CHECK_EQ_INT(sc_sim_add_link(s, "nic", -1, 0), -1);
    CHECK_EQ_INT(sc_sim_add_resource(s, "r"), -1); /* sticky */
    sc_error err;
    sc_err_clear(&err);
    CHECK_EQ_INT(sc_sim_status(s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "bandwidth");
    sc_err_clear(&err);
    CHECK_EQ_INT(sc_sim_run(s, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "nic");
    sc_sim_free(s);

    s = mk();
    REQUIRE(s);
    int l = sc_sim_add_link(s, "l", 1, 0);
    int path[2] = {l, l};
    CHECK_EQ_INT(sc_sim_add_flow(s, 1, path, 2, -1, NULL), -1);
    sc_err_clear(&err);
    sc_sim_status(s, &err);
    CHECK_STR_HAS(err.msg, "twice");
    sc_sim_free(s);

    s = mk();
    REQUIRE(s);
    CHECK_EQ_INT(sc_sim_add_compute(s, 3, 1, NULL), -1);
    sc_sim_free(s);
    s = mk();
    sc_sim_add_compute(s, -1, 1, NULL);
    CHECK_EQ_INT(sc_sim_add_dep(s, 0, 0), -1);
    sc_sim_free(s);
    sc_sim_free(NULL);
}

TEST(engine_flow_single_latency)
{
    sc_sim *s = mk();
    REQUIRE(s);
    int l0 = sc_sim_add_link(s, "out", 1e9, 0.25);
    int l1 = sc_sim_add_link(s, "in", 2e9, 0.25);
    int path[2] = {l0, l1};
    int f = sc_sim_add_flow(s, 1e9, path, 2, -1, NULL);
    REQUIRE(run_ok(s));
    /* latency once per flow (sum over its path), then bytes at the bottleneck */
    CHECK_NEAR(sc_sim_task_start(s, f), 0, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, f), 1.5, 1e-12);
    CHECK_NEAR(sc_sim_link_bytes(s, l0), 1e9, 1e-12);
    CHECK_NEAR(sc_sim_link_bytes(s, l1), 1e9, 1e-12);
    CHECK_NEAR(sc_sim_link_busy(s, l0), 1.0, 1e-12);
    sc_sim_free(s);
}

TEST(engine_flow_two_share)
{
    double one, two;
    {
        sc_sim *s = mk();
        int l = sc_sim_add_link(s, "l", 1e9, 0);
        int f = sc_sim_add_flow(s, 3e9, &l, 1, -1, NULL);
        REQUIRE(run_ok(s));
        one = sc_sim_task_end(s, f);
        sc_sim_free(s);
    }
    sc_sim *s = mk();
    int l = sc_sim_add_link(s, "l", 1e9, 0);
    int f = sc_sim_add_flow(s, 3e9, &l, 1, -1, NULL);
    int g = sc_sim_add_flow(s, 3e9, &l, 1, -1, NULL);
    REQUIRE(run_ok(s));
    two = sc_sim_task_end(s, f);
    CHECK_NEAR(one, 3, 1e-12);
    CHECK_NEAR(two, 2 * one, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, g), 2 * one, 1e-12);
    CHECK_NEAR(sc_sim_link_bytes(s, l), 6e9, 1e-12);
    CHECK_NEAR(sc_sim_link_busy(s, l), 6, 1e-12);
    sc_sim_free(s);
}

/* A later flow joins: the first runs alone for 1 s (1 GB), then both share. */
TEST(engine_flow_join)
{
    sc_sim *s = mk();
    int l = sc_sim_add_link(s, "l", 1e9, 0);
    int f = sc_sim_add_flow(s, 2e9, &l, 1, -1, NULL);
    int d = sc_sim_add_compute(s, -1, 1, NULL);
    int g = sc_sim_add_flow(s, 2e9, &l, 1, -1, NULL);
    sc_sim_add_dep(s, d, g);
    REQUIRE(run_ok(s));
    /* f: 1 GB alone, 1 GB at 0.5 GB/s -> ends at 3; g: 1 GB shared (1..3),
     * 1 GB alone -> 4 */
    CHECK_NEAR(sc_sim_task_end(s, f), 3, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, g), 4, 1e-12);
    CHECK_NEAR(sc_sim_link_busy(s, l), 4, 1e-12);
    sc_sim_free(s);
}

/* Classic max-min example, computed by hand. Links L1 = 10 B/s, L2 = 4 B/s;
 * flow A crosses L1 and L2, B only L1, C only L2.
 *   t=0: L2 is the bottleneck (4/2 = 2 < 10/2): A = C = 2; B gets 10-2 = 8.
 *   B (16 B) ends at 2. A has 12 left, C 4: still A = C = 2.
 *   C ends at 4. A alone: min(10, 4) = 4, 8 B left -> ends at 6. */
TEST(engine_flow_maxmin)
{
    sc_sim *s = mk();
    int l1 = sc_sim_add_link(s, "L1", 10, 0);
    int l2 = sc_sim_add_link(s, "L2", 4, 0);
    int pa[2] = {l1, l2};
    int a = sc_sim_add_flow(s, 16, pa, 2, -1, NULL);
    int b = sc_sim_add_flow(s, 16, &l1, 1, -1, NULL);
    int c = sc_sim_add_flow(s, 8, &l2, 1, -1, NULL);
    REQUIRE(run_ok(s));
    CHECK_NEAR(sc_sim_task_end(s, b), 2, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, c), 4, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, a), 6, 1e-12);
    CHECK_NEAR(sc_sim_link_bytes(s, l1), 32, 1e-12);
    CHECK_NEAR(sc_sim_link_bytes(s, l2), 24, 1e-12);
    CHECK_NEAR(sc_sim_link_busy(s, l1), 6, 1e-12);
    sc_sim_free(s);
}

/* Independent links do not slow each other down. */
TEST(engine_flow_independent)
{
    sc_sim *s = mk();
    int f[8], l[8];
    for (int i = 0; i < 8; i++) {
        l[i] = sc_sim_add_link(s, NULL, 1e9 * (i + 1), 1e-6);
        f[i] = sc_sim_add_flow(s, 1e9, &l[i], 1, -1, NULL);
    }
    REQUIRE(run_ok(s));
    for (int i = 0; i < 8; i++)
        CHECK_NEAR(sc_sim_task_end(s, f[i]), 1e-6 + 1.0 / (i + 1), 1e-12);
    sc_sim_free(s);
}

/* A flow holding a comm stream: the second flow on the stream waits even
 * though it uses another link; a zero-byte flow costs only its latency. */
TEST(engine_flow_resource)
{
    sc_sim *s = mk();
    int st = sc_sim_add_resource(s, "comm");
    int la = sc_sim_add_link(s, "a", 1e9, 0.5), lb = sc_sim_add_link(s, "b", 1e9, 0);
    int f = sc_sim_add_flow(s, 1e9, &la, 1, st, NULL);
    int g = sc_sim_add_flow(s, 1e9, &lb, 1, st, NULL);
    int z = sc_sim_add_flow(s, 0, &la, 1, -1, NULL);
    REQUIRE(run_ok(s));
    CHECK_NEAR(sc_sim_task_end(s, f), 1.5, 1e-12);
    CHECK_NEAR(sc_sim_task_start(s, g), 1.5, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, g), 2.5, 1e-12);
    CHECK_NEAR(sc_sim_resource_busy(s, st), 2.5, 1e-12);
    CHECK_NEAR(sc_sim_task_end(s, z), 0.5, 1e-12);
    CHECK_NEAR(sc_sim_link_bytes(s, la), 1e9, 1e-12);
    sc_sim_free(s);
}

/* A random DAG with computes and contending flows, built and run twice (and
 * re-run once): identical bits. */
static sc_sim *random_sim(unsigned seed)
{
    sc_sim *s = mk();
    uint32_t x = seed;
#define RND() (x = x * 1664525u + 1013904223u, x >> 8)
    int nr = 6, nl = 5;
    for (int i = 0; i < nr; i++)
        sc_sim_add_resource(s, NULL);
    for (int i = 0; i < nl; i++) {
        double bw = 1e3 + (double)(RND() % 1000);
        sc_sim_add_link(s, NULL, bw, 1e-3 * (RND() % 3));
    }
    for (int t = 0; t < 400; t++) {
        if (RND() % 3 == 0) {
            int path[3], k = 0;
            int n = 1 + (int)(RND() % 3);
            int start = (int)(RND() % (unsigned)nl);
            for (k = 0; k < n; k++)
                path[k] = (start + k) % nl;
            double bytes = (double)(RND() % 5000);
            int res = -1;
            if (RND() % 2)
                res = (int)(RND() % (unsigned)nr);
            sc_sim_add_flow(s, bytes, path, n, res, NULL);
        } else {
            int res = (int)(RND() % (unsigned)nr);
            sc_sim_add_compute(s, res, (double)(RND() % 100) / 10, NULL);
        }
        for (int d = 0; d < 2 && t > 0; d++)
            if (RND() % 2)
                sc_sim_add_dep(s, (int)(RND() % (unsigned)t), t);
    }
#undef RND
    return s;
}

TEST(engine_determinism)
{
    sc_sim *a = random_sim(42), *b = random_sim(42);
    REQUIRE(run_ok(a));
    REQUIRE(run_ok(b));
    int n = sc_sim_task_count(a);
    REQUIRE(n == sc_sim_task_count(b));
    int same = 1;
    double sa[400], ea[400];
    for (int t = 0; t < n; t++) {
        sa[t] = sc_sim_task_start(a, t);
        ea[t] = sc_sim_task_end(a, t);
        if (memcmp(&sa[t], &(double){sc_sim_task_start(b, t)}, sizeof(double)) ||
            memcmp(&ea[t], &(double){sc_sim_task_end(b, t)}, sizeof(double)))
            same = 0;
        CHECK(ea[t] >= sa[t]);
    }
    CHECK(same);
    CHECK_EQ_INT(sc_sim_event_count(a), sc_sim_event_count(b));
    REQUIRE(run_ok(a)); /* re-run on the same handle */
    for (int t = 0; t < n; t++)
        if (sc_sim_task_end(a, t) != ea[t] || sc_sim_task_start(a, t) != sa[t])
            same = 0;
    CHECK(same);
    /* bytes conservation: every link carries what its flows moved */
    for (int l = 0; l < sc_sim_link_count(a); l++)
        CHECK(sc_sim_link_busy(a, l) <= sc_sim_makespan(a) + 1e-9);
    sc_sim_free(a);
    sc_sim_free(b);
}

/* Every allocation failure is reported as SC_ENOMEM, never a crash. */
TEST(engine_oom)
{
    int saw_nomem = 0;
    for (long n = 1; n < 400; n++) {
        sc_alloc_fail_at(n);
        sc_sim *s = NULL;
        sc_error err;
        sc_status st = sc_sim_new(&s, &err);
        if (st == SC_OK) {
            int r = sc_sim_add_resource(s, "r");
            int l = sc_sim_add_link(s, "l", 1, 0);
            for (int i = 0; i < 40; i++) {
                int t = sc_sim_add_compute(s, r, 1, NULL);
                int f = sc_sim_add_flow(s, 1, &l, 1, -1, NULL);
                sc_sim_add_dep(s, t, f);
            }
            st = sc_sim_run(s, &err);
            /* 40 computes in series, then the last 1-byte flow at 1 B/s */
            if (st == SC_OK && fabs(sc_sim_makespan(s) - 41) > 1e-12) {
                CHECK_NEAR(sc_sim_makespan(s), 41, 1e-12);
                break;
            }
        }
        sc_alloc_fail_at(0);
        if (st == SC_ENOMEM)
            saw_nomem++;
        sc_sim_free(s);
        if (st != SC_ENOMEM && st != SC_OK) {
            CHECK_EQ_INT(st, SC_OK);
            break;
        }
    }
    CHECK(saw_nomem > 10);
}
