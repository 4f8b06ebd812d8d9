/* test_team.c - the in-process team (exec/team.h) on the CPU: 4 threads run
 * barrier, gather and broadcast many times with the right data; a thread
 * that never arrives makes the others time out naming it; a failed thread
 * makes the others give up at once; bad sizes and ranks are refused; the
 * team is freed cleanly (the sanitizer build checks leaks). Without MPI,
 * `stagecraft exec --backend cuda` starts one thread per GPU on a team: on
 * a machine without a GPU it fails at the backend's init with the CUDA
 * runtime's reason and exit status 1.
 */
#include "check.h"
#include "exec_int.h"
#include "team.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define NT 4
#define ROUNDS 300

typedef struct shared {
    int bad[NT];             /* per rank: wrong results seen */
    sc_status st[NT];
    char msg[NT][SC_ERRMSG_MAX];
    double took[NT];
    int absent;              /* rank that never arrives, -1 none */
    int fail_rank;           /* rank that calls sc_team_fail, -1 none */
} shared;

static void rounds_fn(sc_team *t, int rank, void *arg)
{
    shared *s = arg;
    sc_error err = {0};
    int br = -1;
    if (sc_team_bound(&br) != t || br != rank)
        s->bad[rank]++;
    for (int k = 0; k < ROUNDS; k++) {
        double dl = sc_exec_clock() + 30;
        int root = k % NT;
        /* gather: rank r gives {k, r, k*r} */
        int64_t mine[3] = {k, rank, (int64_t)k * rank}, all[NT * 3];
        memset(all, 0xff, sizeof all);
        sc_status st = sc_team_gather(t, rank, mine, sizeof mine, all, root, dl, &err);
        if (!st && rank == root)
            for (int q = 0; q < NT; q++)
                if (all[3 * q] != k || all[3 * q + 1] != q || all[3 * q + 2] != (int64_t)k * q)
                    s->bad[rank]++;
        /* broadcast: root sends k*7+root, a different size every round */
        size_t len = 1 + (size_t)k % 97;
        unsigned char buf[128];
        memset(buf, rank == root ? (int)((k * 7 + root) & 0xff) : 0, sizeof buf);
        if (!st)
            st = sc_team_bcast(t, rank, buf, len, root, dl, &err);
        for (size_t i = 0; !st && i < len; i++)
            if (buf[i] != (unsigned char)((k * 7 + root) & 0xff))
                s->bad[rank]++;
        if (!st)
            st = sc_team_barrier(t, rank, dl, &err);
        if (st) {
            s->st[rank] = st;
            snprintf(s->msg[rank], sizeof s->msg[rank], "%s", err.msg);
            return;
        }
    }
    double off = 1;
    s->st[rank] = sc_team_clock_offset(t, rank, (rank + 1) % NT, &off, &err);
    if (off != 0)
        s->bad[rank]++;
}

TEST(team_barrier_gather_bcast_rounds)
{
    sc_team *t = NULL;
    sc_error err = {0};
    REQUIRE(sc_team_new(NT, &t, &err) == SC_OK);
    CHECK_EQ_INT(sc_team_size(t), NT);
    shared s;
    memset(&s, 0, sizeof s);
    REQUIRE(sc_team_run(t, rounds_fn, &s, &err) == SC_OK);
    for (int r = 0; r < NT; r++) {
        CHECK_EQ_INT(s.st[r], SC_OK);
        CHECK_EQ_INT(s.bad[r], 0);
        if (s.st[r])
            printf("  rank %d: %s\n", r, s.msg[r]);
    }
    CHECK(!sc_team_broken(t));
    /* the main thread is not bound */
    int br = 5;
    CHECK(sc_team_bound(&br) == NULL && br == -1);
    sc_team_free(t);
    sc_team_free(NULL);
}

/* Rank `absent` never arrives at the barrier; the others time out. */
static void absent_fn(sc_team *t, int rank, void *arg)
{
    shared *s = arg;
    sc_error err = {0};
    double dl = sc_exec_clock() + 30;
    /* one good barrier first */
    s->st[rank] = sc_team_barrier(t, rank, dl, &err);
    if (s->st[rank] || rank == s->absent)
        return;
    double t0 = sc_exec_clock();
    s->st[rank] = sc_team_barrier(t, rank, t0 + 0.2, &err);
    s->took[rank] = sc_exec_clock() - t0;
    snprintf(s->msg[rank], sizeof s->msg[rank], "%s", err.msg);
}

TEST(team_absent_thread_times_out)
{
    sc_team *t = NULL;
    sc_error err = {0};
    REQUIRE(sc_team_new(NT, &t, &err) == SC_OK);
    shared s;
    memset(&s, 0, sizeof s);
    s.absent = 3;
    REQUIRE(sc_team_run(t, absent_fn, &s, &err) == SC_OK);
    CHECK_EQ_INT(s.st[3], SC_OK);
    for (int r = 0; r < 3; r++) {
        CHECK_EQ_INT(s.st[r], SC_EIO);
        CHECK(strncmp(s.msg[r], "timed out", 9) == 0);
        CHECK_STR_HAS(s.msg[r], "team barrier");
        CHECK_STR_HAS(s.msg[r], "waited for rank 3 (3 of 4 arrived)");
        CHECK(s.took[r] >= 0.19 && s.took[r] < 5);
    }
    printf("  %s\n", s.msg[0]);
    /* a timed-out rank withdrew: the team is not broken and works again */
    CHECK(!sc_team_broken(t));
    memset(&s, 0, sizeof s);
    s.absent = -1;
    REQUIRE(sc_team_run(t, rounds_fn, &s, &err) == SC_OK);
    for (int r = 0; r < NT; r++)
        CHECK(s.st[r] == SC_OK && s.bad[r] == 0);
    sc_team_free(t);
}

/* Rank fail_rank fails after a while; the others, blocked in a gather with
 * a long deadline, give up at once. */
static void fail_fn(sc_team *t, int rank, void *arg)
{
    shared *s = arg;
    sc_error err = {0};
    if (rank == s->fail_rank) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        sc_team_fail(t, rank, "cudaSetDevice: no device");
        return;
    }
    double t0 = sc_exec_clock();
    int v = rank, all[NT];
    s->st[rank] = sc_team_gather(t, rank, &v, sizeof v, all, 0, t0 + 60, &err);
    s->took[rank] = sc_exec_clock() - t0;
    snprintf(s->msg[rank], sizeof s->msg[rank], "%s", err.msg);
}

TEST(team_failed_thread_stops_the_others)
{
    sc_team *t = NULL;
    sc_error err = {0};
    REQUIRE(sc_team_new(NT, &t, &err) == SC_OK);
    shared s;
    memset(&s, 0, sizeof s);
    s.fail_rank = 2;
    REQUIRE(sc_team_run(t, fail_fn, &s, &err) == SC_OK);
    for (int r = 0; r < NT; r++) {
        if (r == 2)
            continue;
        CHECK_EQ_INT(s.st[r], SC_EMPI);
        CHECK_STR_HAS(s.msg[r], "gave up: rank 2 failed: cudaSetDevice: no device");
        CHECK(s.took[r] < 10);
    }
    CHECK(sc_team_broken(t));
    /* later calls fail at once */
    CHECK_EQ_INT(sc_team_barrier(t, 0, sc_exec_clock() + 60, &err), SC_EMPI);
    sc_team_free(t);
}

/* Sizes that differ break the team with a message naming both. */
static void mismatch_fn(sc_team *t, int rank, void *arg)
{
    shared *s = arg;
    sc_error err = {0};
    char buf[16] = {0}, all[NT * 16];
    size_t len = rank == 1 ? 8 : 16;
    s->st[rank] = sc_team_gather(t, rank, buf, len, all, 0, sc_exec_clock() + 30, &err);
    snprintf(s->msg[rank], sizeof s->msg[rank], "%s", err.msg);
}

TEST(team_size_mismatch_and_bad_args)
{
    sc_team *t = NULL;
    sc_error err = {0};
    CHECK_EQ_INT(sc_team_new(0, &t, &err), SC_EINVAL);
    CHECK(t == NULL);
    REQUIRE(sc_team_new(NT, &t, &err) == SC_OK);
    CHECK_EQ_INT(sc_team_barrier(t, NT, sc_exec_clock() + 1, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "out of range");
    int x = 0;
    CHECK_EQ_INT(sc_team_bcast(t, 0, &x, sizeof x, -1, sc_exec_clock() + 1, &err), SC_EINVAL);
    shared s;
    memset(&s, 0, sizeof s);
    REQUIRE(sc_team_run(t, mismatch_fn, &s, &err) == SC_OK);
    CHECK_EQ_INT(s.st[0], SC_EINVAL);
    CHECK_STR_HAS(s.msg[0], "rank 1 gave 8 bytes, root 0 wants 16");
    for (int r = 1; r < NT; r++)
        CHECK_EQ_INT(s.st[r], SC_EMPI);
    sc_team_free(t);
}

/* A team of one: every call returns at once. */
TEST(team_single)
{
    sc_team *t = NULL;
    sc_error err = {0};
    REQUIRE(sc_team_new(1, &t, &err) == SC_OK);
    double dl = sc_exec_clock() + 1;
    int v = 42, got = 0;
    CHECK_EQ_INT(sc_team_barrier(t, 0, dl, &err), SC_OK);
    CHECK_EQ_INT(sc_team_gather(t, 0, &v, sizeof v, &got, 0, dl, &err), SC_OK);
    CHECK_EQ_INT(got, 42);
    CHECK_EQ_INT(sc_team_bcast(t, 0, &v, sizeof v, 0, dl, &err), SC_OK);
    CHECK_EQ_INT(sc_team_gather(t, 0, NULL, 0, NULL, 0, dl, &err), SC_OK);
    sc_team_free(t);
}

/* Without MPI, exec --backend cuda starts one thread per GPU; with no GPU
 * here it fails at the backend's init (or says why it cannot run). */
TEST(team_exec_cuda_threads_cli)
{
    static char out[1 << 14];
    const char *bin = sc_test_bin(), *d = sc_test_tmpdir();
    REQUIRE(sc_test_sh(out, sizeof out, "%s version", bin) == 0);
    int mpi = !strstr(out, "MPI:  no"), cuda = !strstr(out, "CUDA: no");
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s model gen gpt --layers 4 --hidden 128 --heads 4 --seq 64 --vocab 512 "
                       "--dtype fp32 -o %s/tiny.json && "
                       "%s sim --model %s/tiny.json --cluster h200-sxm-1 --nodes 2 --dp 1 "
                       "--tp 1 --pp 2 --microbatches 2 --mbs 1 --schedule 1f1b -o %s/plan.json",
                       bin, d, bin, d, d) == 0);
    /* it starts MPI where the build has it, and Open MPI leaks in
     * MPI_Init/MPI_Finalize: under SAN=1 without leak detection, as in
     * test_bench.c (the executor's own context is freed: sc_exec_open) */
    const char *san = getenv("SC_SAN");
    const char *env = san && !strcmp(san, "1") ? "ASAN_OPTIONS=detect_leaks=0 " : "";
    int rc = sc_test_sh(out, sizeof out, "%s%s exec %s/plan.json --backend cuda --timeout 5 -o %s/m.json",
                        env, bin, d, d);
    printf("  (MPI %s, CUDA %s) exit %d: %s", mpi ? "yes" : "no", cuda ? "yes" : "no", rc, out);
    CHECK(rc != 0);
    char m[1024];
    snprintf(m, sizeof m, "%s/m.json", d);
    CHECK(!sc_test_exists(m));
    if (!cuda)
        CHECK_STR_HAS(out, "built without CUDA");
    else if (!mpi)
        CHECK_STR_HAS(out, "cuda: rank 0:");
    /* --threads: the same launcher in an MPI build (2 threads here) */
    rc = sc_test_sh(out, sizeof out, "%s exec %s/plan.json --backend cuda --threads --timeout 5 -o %s/m.json",
                    bin, d, d);
    printf("  --threads: exit %d: %s", rc, out);
    CHECK(rc != 0 && !sc_test_exists(m));
    CHECK(strstr(out, "stagecraft exec: ") == out); /* one line, one cause */
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);
    if (cuda)
        CHECK_STR_HAS(out, "cuda: rank 0:");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s exec %s/plan.json --backend cpu --threads", bin, d), 2);
    CHECK_STR_HAS(out, "--threads is for --backend cuda");
}
