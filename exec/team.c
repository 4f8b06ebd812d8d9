/* team.c - an in-process team of threads: barrier, gather, broadcast and a
 * zero clock offset with deadlines (see team.h).
 *
 * One mutex guards everything; one CLOCK_MONOTONIC condition variable wakes
 * waiters. A barrier is a generation counter: the last rank to arrive bumps
 * it and wakes everyone. entered[q] counts the barriers rank q has entered,
 * so a waiter that times out can name the ranks that never arrived; it then
 * withdraws (undoes its arrival) so the counts stay right. Gather and
 * broadcast are two barriers around copies through team-owned per-rank
 * buffers, all under the mutex.
 */
#include "team.h"
#include "exec_int.h" /* sc_exec_clock */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TEAM_MAX 4096

struct sc_team {
    int n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned long gen;         /* barriers completed */
    int arrived;               /* ranks inside the current barrier */
    unsigned long *entered;    /* per rank: barriers entered (withdrawals undone) */
    unsigned long *withdrew;   /* per rank: the barrier it withdrew from (entered + 1), 0 none */
    int failed;                /* the rank that failed; n: the team broke; -1: fine */
    char why[SC_ERRMSG_MAX / 2];
    unsigned char **slot;      /* per rank: its data for gather / broadcast */
    size_t *cap, *len;
};

static _Thread_local sc_team *bound_team;
static _Thread_local int bound_rank = -1;

void sc_team_bind(sc_team *t, int rank)
{
    bound_team = t;
    bound_rank = t ? rank : -1;
}

sc_team *sc_team_bound(int *rank)
{
    if (rank)
        *rank = bound_team ? bound_rank : -1;
    return bound_team;
}

sc_status sc_team_new(int n, sc_team **out, sc_error *err)
{
    *out = NULL;
    if (n < 1 || n > TEAM_MAX)
        return sc_err(err, SC_EINVAL, "team: %d threads: want 1 to %d", n, TEAM_MAX);
    sc_team *t = sc_calloc(1, sizeof *t);
    if (!t)
        return sc_err(err, SC_ENOMEM, "team: out of memory");
    t->n = n;
    t->failed = -1;
    t->entered = sc_calloc((size_t)n, sizeof *t->entered);
    t->withdrew = sc_calloc((size_t)n, sizeof *t->withdrew);
    t->slot = sc_calloc((size_t)n, sizeof *t->slot);
    t->cap = sc_calloc((size_t)n, sizeof *t->cap);
    t->len = sc_calloc((size_t)n, sizeof *t->len);
    pthread_condattr_t ca;
    int ok = t->entered && t->withdrew && t->slot && t->cap && t->len;
    if (ok && pthread_condattr_init(&ca) == 0) {
        ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
             pthread_cond_init(&t->cv, &ca) == 0;
        pthread_condattr_destroy(&ca);
        if (ok && pthread_mutex_init(&t->mu, NULL) != 0) {
            pthread_cond_destroy(&t->cv);
            ok = 0;
        }
    } else {
        ok = 0;
    }
    if (!ok) {
        sc_free(t->entered);
        sc_free(t->withdrew);
        sc_free(t->slot);
        sc_free(t->cap);
        sc_free(t->len);
        sc_free(t);
        return sc_err(err, SC_ENOMEM, "team: out of memory (or no monotonic condition variable)");
    }
    *out = t;
    return SC_OK;
}

void sc_team_free(sc_team *t)
{
    if (!t)
        return;
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    for (int i = 0; i < t->n; i++)
        sc_free(t->slot[i]);
    sc_free(t->entered);
    sc_free(t->withdrew);
    sc_free(t->slot);
    sc_free(t->cap);
    sc_free(t->len);
    sc_free(t);
}

int sc_team_size(const sc_team *t) { return t->n; }

static sc_status check_rank(const sc_team *t, int rank, int root, const char *what, sc_error *err)
{
    if (!t || rank < 0 || rank >= t->n || root < 0 || root >= t->n)
        return sc_err(err, SC_EINVAL, "team: %s: rank %d or root %d out of range [0, %d)", what,
                      rank, root, t ? t->n : 0);
    return SC_OK;
}

/* Under the mutex: the error of a wait cut short by a failed peer. */
static sc_status gave_up(sc_team *t, int rank, sc_error *err)
{
    if (t->failed == t->n)
        return sc_err(err, SC_EMPI, "team: rank %d: gave up: the team broke: %s", rank, t->why);
    return sc_err(err, SC_EMPI, "team: rank %d: gave up: rank %d failed: %s", rank, t->failed,
                  t->why);
}

/* Under the mutex: marks the team broken (the first failure is kept). */
static void break_team(sc_team *t, int rank, const char *why)
{
    if (t->failed < 0) {
        t->failed = rank;
        snprintf(t->why, sizeof t->why, "%.*s", (int)sizeof t->why - 1,
                 why ? why : "(no reason given)");
    }
    pthread_cond_broadcast(&t->cv);
}

static struct timespec to_timespec(double deadline)
{
    double now = sc_exec_clock();
    if (!(deadline < now + 1e8)) /* also NaN: far enough */
        deadline = now + 1e8;
    struct timespec ts;
    double s = floor(deadline);
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((deadline - s) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (ts.tv_nsec < 0)
        ts.tv_nsec = 0;
    return ts;
}

/* Under the mutex: one barrier; what names the call in messages. */
static sc_status barrier_locked(sc_team *t, int rank, double deadline, const char *what,
                                double t0, sc_error *err)
{
    if (t->failed >= 0)
        return gave_up(t, rank, err);
    unsigned long g = t->gen, e = ++t->entered[rank];
    if (++t->arrived == t->n) {
        t->arrived = 0;
        t->gen++;
        pthread_cond_broadcast(&t->cv);
        return SC_OK;
    }
    struct timespec ts = to_timespec(deadline);
    int timed_out = 0;
    while (t->gen == g && t->failed < 0 && !timed_out) {
        int rc = pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (rc == ETIMEDOUT || (rc == 0 && sc_exec_clock() > deadline))
            timed_out = 1;
        else if (rc != 0 && rc != ETIMEDOUT)
            timed_out = sc_exec_clock() > deadline; /* EINTR-like: retry */
    }
    if (t->gen != g)
        return SC_OK; /* completed, whatever happened since */
    /* withdraw */
    t->arrived--;
    t->entered[rank]--;
    t->withdrew[rank] = e;
    if (!timed_out)
        return gave_up(t, rank, err);
    char who[256];
    int k = 0, missing = 0;
    who[0] = 0;
    for (int q = 0; q < t->n; q++)
        if (q != rank && t->entered[q] < e && t->withdrew[q] != e) {
            missing++;
            if (k < (int)sizeof who - 16)
                k += snprintf(who + k, sizeof who - (size_t)k, "%s%d", missing > 1 ? ", " : "", q);
            else if (k < (int)sizeof who - 4)
                k += snprintf(who + k, sizeof who - (size_t)k, "...");
        }
    return sc_err(err, SC_EIO,
                  "timed out after %.3g s in team %s: rank %d waited for %s %s (%d of %d arrived)",
                  sc_exec_clock() - t0, what, rank, missing == 1 ? "rank" : "ranks",
                  missing ? who : "(none missing: they gave up first)", t->n - missing, t->n);
}

sc_status sc_team_barrier(sc_team *t, int rank, double deadline, sc_error *err)
{
    sc_status st = check_rank(t, rank, 0, "barrier", err);
    if (st)
        return st;
    double t0 = sc_exec_clock();
    pthread_mutex_lock(&t->mu);
    st = barrier_locked(t, rank, deadline, "barrier", t0, err);
    pthread_mutex_unlock(&t->mu);
    return st;
}

/* Under the mutex: copies p[0..len) into rank's slot. */
static sc_status put_locked(sc_team *t, int rank, const void *p, size_t len, sc_error *err)
{
    if (len > t->cap[rank]) {
        unsigned char *q = sc_realloc(t->slot[rank], len);
        if (!q)
            return sc_err(err, SC_ENOMEM, "team: rank %d: out of memory (%zu bytes)", rank, len);
        t->slot[rank] = q;
        t->cap[rank] = len;
    }
    if (len)
        memcpy(t->slot[rank], p, len);
    t->len[rank] = len;
    return SC_OK;
}

/* Under the mutex, after the data moved: the second barrier; a timeout
 * here breaks the team (the peers' view of the exchange is unknown). */
static sc_status second_barrier(sc_team *t, int rank, double deadline, const char *what,
                                double t0, sc_error *err)
{
    sc_status st = barrier_locked(t, rank, deadline, what, t0, err);
    if (st == SC_EIO)
        break_team(t, t->n, err ? err->msg : "a rank timed out in the second half of a collective");
    return st;
}

sc_status sc_team_gather(sc_team *t, int rank, const void *send, size_t len, void *recv,
                         int root, double deadline, sc_error *err)
{
    sc_status st = check_rank(t, rank, root, "gather", err);
    if (st)
        return st;
    if (len && t->n > 1 && len > (size_t)-1 / (size_t)t->n)
        return sc_err(err, SC_EINVAL, "team: gather of %zu bytes per rank is too large", len);
    double t0 = sc_exec_clock();
    pthread_mutex_lock(&t->mu);
    if (t->failed >= 0)
        st = gave_up(t, rank, err);
    if (!st)
        st = put_locked(t, rank, send, len, err);
    if (st == SC_ENOMEM)
        break_team(t, rank, err ? err->msg : "out of memory");
    if (!st)
        st = barrier_locked(t, rank, deadline, "gather", t0, err);
    if (!st && rank == root) {
        for (int q = 0; q < t->n && !st; q++)
            if (t->len[q] != len) {
                st = sc_err(err, SC_EINVAL,
                            "team: gather: rank %d gave %zu bytes, root %d wants %zu", q,
                            t->len[q], root, len);
                break_team(t, rank, err ? err->msg : "gather: sizes differ");
            }
        for (int q = 0; q < t->n && !st; q++)
            if (len)
                memcpy((unsigned char *)recv + (size_t)q * len, t->slot[q], len);
    }
    if (!st)
        st = second_barrier(t, rank, deadline, "gather", t0, err);
    pthread_mutex_unlock(&t->mu);
    return st;
}

sc_status sc_team_bcast(sc_team *t, int rank, void *buf, size_t len, int root, double deadline,
                        sc_error *err)
{
    sc_status st = check_rank(t, rank, root, "broadcast", err);
    if (st)
        return st;
    double t0 = sc_exec_clock();
    pthread_mutex_lock(&t->mu);
    if (t->failed >= 0)
        st = gave_up(t, rank, err);
    if (!st && rank == root) {
        st = put_locked(t, rank, buf, len, err);
        if (st)
            break_team(t, rank, err ? err->msg : "out of memory");
    }
    if (!st)
        st = barrier_locked(t, rank, deadline, "broadcast", t0, err);
    if (!st && rank != root) {
        if (t->len[root] != len) {
            st = sc_err(err, SC_EINVAL, "team: broadcast: root %d gave %zu bytes, rank %d wants %zu",
                        root, t->len[root], rank, len);
            break_team(t, rank, err ? err->msg : "broadcast: sizes differ");
        } else if (len) {
            memcpy(buf, t->slot[root], len);
        }
    }
    if (!st)
        st = second_barrier(t, rank, deadline, "broadcast", t0, err);
    pthread_mutex_unlock(&t->mu);
    return st;
}

sc_status sc_team_clock_offset(sc_team *t, int rank, int peer, double *offset, sc_error *err)
{
    sc_status st = check_rank(t, rank, peer, "clock offset", err);
    *offset = 0; /* one CLOCK_MONOTONIC for every thread of the process */
    return st;
}

void sc_team_fail(sc_team *t, int rank, const char *why)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    break_team(t, rank, why);
    pthread_mutex_unlock(&t->mu);
}

int sc_team_broken(const sc_team *t)
{
    sc_team *m = (sc_team *)t;
    pthread_mutex_lock(&m->mu);
    int b = m->failed >= 0;
    pthread_mutex_unlock(&m->mu);
    return b;
}

typedef struct member {
    sc_team *t;
    int rank;
    sc_team_fn fn;
    void *arg;
} member;

static void *member_main(void *p)
{
    member *m = p;
    sc_team_bind(m->t, m->rank);
    m->fn(m->t, m->rank, m->arg);
    sc_team_bind(NULL, -1);
    return NULL;
}

sc_status sc_team_run(sc_team *t, sc_team_fn fn, void *arg, sc_error *err)
{
    member *ms = sc_calloc((size_t)t->n, sizeof *ms);
    pthread_t *th = sc_calloc((size_t)t->n, sizeof *th);
    if (!ms || !th) {
        sc_free(ms);
        sc_free(th);
        return sc_err(err, SC_ENOMEM, "team: out of memory");
    }
    sc_status st = SC_OK;
    int started = 0;
    for (; started < t->n; started++) {
        ms[started] = (member){t, started, fn, arg};
        int rc = pthread_create(&th[started], NULL, member_main, &ms[started]);
        if (rc) {
            st = sc_err(err, SC_ENOMEM, "team: cannot start thread %d of %d: %s", started, t->n,
                        strerror(rc));
            sc_team_fail(t, started, err ? err->msg : "cannot start a thread");
            break;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    sc_free(ms);
    sc_free(th);
    return st;
}
