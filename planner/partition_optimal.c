/* partition_optimal.c - the exact min-max contiguous split (see
 * partitioner.h for the cost model).
 *
 * Search: parametric. For a bound T, feasible(T) says whether leaves 0..L-1
 * can be covered by S stages, stage k over [i, j) with
 *   time_k(i, j) = (C[j] + send_k(j)) - (C[i] - recv_k(i)) <= T
 *   memx_k(i, j) <= cap, and no boundary the strict policy forbids.
 * reach_k[j] = leaves [0, j) covered by k stages. memx_k grows with j, so
 * each start i has a last end e_k(i), found once per call and memory
 * profile (the ranks sharing an in-flight count): two pointers, O(L), when
 * memory also shrinks as i grows (recompute none, selective); under full
 * recompute the stage-input term act_out(i-1) makes memory non-monotone in
 * i, and each e(i) is a search galloping from e(i-1), O(L log L).
 * For level k and end j the valid starts are the reachable i < j with
 * e_k(i) >= j, and the time test is
 *   max over them of (C[i] - recv_k(i)) >= C[j] + send_k(j) - T,
 * a sliding-window maximum: a monotone deque when e_k is non-decreasing
 * (entries expire in insertion order), else a max-heap with lazy deletion.
 * One test is O(S·L) (O(S·L·log L) with the heap).
 *
 * The bound: the answer T* is one of the time_k(i, j) values. An infeasible
 * test at T also yields T_next, the smallest time_k(i, j) of a best start
 * that failed (> T): every test in [T, T_next) has the same reach sets, so
 * T* >= T_next. A feasible test yields a split whose bottleneck (the same
 * expression) is an upper bound. The loop alternates testing T = lo (the
 * candidate T_next: feasible means T* = lo, done) and T = the midpoint of
 * [lo, hi) over the bit patterns of non-negative doubles (whose order is the
 * order of the values), and stops when lo >= hi: T* = hi, exact to the last
 * bit. Every midpoint test halves the bit range, so there are at most
 * 2·64 + 2 tests (64 = the bits of a double; 10-15 on the GPT built-ins):
 * O(L·S·64) time (times log L with the heap), O(L·S) memory for the parents.
 *
 * Windows: a test at T visits, at level k, only the ends j between the first
 * reachable start and the last end a live start allows, and of those sets
 * only the ones from which the remaining S-1-k stages can still cover the
 * rest: their compute alone needs C[L] - C[j] <= (S-1-k)·T (stage times are
 * at least their compute sums: the boundary terms are >= 0; the bound is
 * loosened by 1e-9 relative so rounding never prunes a feasible end). The
 * reach arrays are cleared over the range they used, not whole. Near T* the
 * windows are narrow, so a test costs about S times the slack of a stage
 * rather than S·L (200,000 leaves in 32 stages: see docs/accuracy.md).
 * Start: the first upper bound is the split that cuts the compute prefix at
 * k·C[L]/S when it fits in memory (a test at T = infinity otherwise, which
 * also tells that nothing fits), and the answer's split is always the one a
 * test at T* reconstructs, so it does not depend on the tests before.
 * Deadline: cfg->deadline_s (CLOCK_MONOTONIC seconds, 0 = none) ends the
 * bisection early with the best split found so far (a valid split, its
 * bottleneck an upper bound of T*). The first split is found whatever the
 * deadline: the test at T = infinity is not cut short.
 *
 * Does not fit: the smallest achievable largest stage memory comes from the
 * same reach recursion with memory alone (running maximum of e_k(i) over the
 * reachable starts, O(S·L)), bisected over the memory bound to 1e-12
 * relative; the split found gives the figure reported. */
#include "partitioner.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct opt {
    sc_pctx *x;
    int L, S, pp;
    int nprof;
    int *prof_of_rank;   /* pp */
    int *prof_k;         /* representative stage of each profile */
    int *E;              /* nprof x L: e(i) */
    unsigned char *mono; /* nprof */
    unsigned char *ra, *rb; /* reach */
    int *par;            /* the visited ends' parents, level after level */
    size_t npar, cappar;
    size_t *poff;        /* S: where level k's window starts in par */
    int *plo;            /* S: the window's first end */
    int oom;             /* growing par failed */
    size_t max_par;      /* entries allowed (cfg->max_bytes); 0 = no limit */
    int too_big;         /* par would pass max_par */
    int *dq;             /* deque / heap, L+1 */
    double *val;         /* L+1: C[i] - recv(i) for the current level */
    double *zero;        /* L+1 zeros */
    double deadline;     /* CLOCK_MONOTONIC seconds; 0 = none */
    int late;            /* the deadline passed during a test */
    /* What the search splits (runs): the runs of leaves between the allowed
     * boundaries (between layers only, say, or outside a strict group's
     * span; a leaf each where every boundary is allowed), run a covering
     * leaves [pos[a], pos[a + 1]); L counts the runs, and C and comm are
     * over their boundaries. No boundary between runs is forbidden. */
    int *pos;
    double *C, *comm[2]; /* C: one allocation holding all three */
} opt;

/* The leaf index of boundary i of what the search splits. */
static inline int leaf_at(const opt *o, int i) { return o->pos[i]; }

/* The pctx's memory and time of stage k over [i, j) of what is split. */
static inline double memx(const opt *o, int k, int i, int j)
{
    return sc_pctx_memx(o->x, k, leaf_at(o, i), leaf_at(o, j));
}

static inline double stime(const opt *o, int k, int i, int j)
{
    return sc_pctx_time(o->x, k, leaf_at(o, i), leaf_at(o, j));
}

/* Starts level k's window of parents at end lo. */
static void par_begin(opt *o, int k, int lo)
{
    o->poff[k] = o->npar;
    o->plo[k] = lo;
}

/* Grows par to hold index i (doubling); 1 and o->oom on failure. */
static __attribute__((noinline)) int par_grow(opt *o, size_t i)
{
    if (o->max_par && i >= o->max_par) {
        o->too_big = o->oom = 1;
        return 1;
    }
    size_t n = o->cappar ? o->cappar : 4096;
    while (n <= i)
        n *= 2;
    if (o->max_par && n > o->max_par)
        n = o->max_par;
    int *np = sc_realloc(o->par, n * sizeof *np);
    if (!np) {
        o->oom = 1;
        return 1;
    }
    o->par = np;
    o->cappar = n;
    return 0;
}

/* par of end j at level k (j at or after the window's start). */
static inline void par_set(opt *o, int k, int j, int v)
{
    size_t i = o->poff[k] + (size_t)(j - o->plo[k]);
    if (i >= o->cappar && par_grow(o, i))
        return;
    o->par[i] = v;
    if (i + 1 > o->npar)
        o->npar = i + 1;
}

static int par_get(const opt *o, int k, int j)
{
    return o->par[o->poff[k] + (size_t)(j - o->plo[k])];
}

static int past(opt *o)
{
    if (o->deadline <= 0)
        return 0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec + t.tv_nsec * 1e-9 > o->deadline)
        o->late = 1;
    return o->late;
}

/* The first end j at level k (stage k covers [i, j)) from which the
 * remaining S-1-k stages can still hold the rest under T: their compute
 * alone needs C[L] - C[j] <= (S-1-k)·T, loosened by 1e-9 relative. */
static int first_end(const opt *o, int k, double T)
{
    const double *C = o->C;
    int L = o->L, rest = o->S - 1 - k;
    if (!(T < INFINITY))
        return 0;
    double need = C[L] - (double)rest * T * (1 + 1e-9) - 1e-9 * C[L];
    int lo = 0, hi = L; /* smallest j with C[j] >= need (C is non-decreasing) */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (C[mid] >= need)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* e(i) for every start i of the profile under the bound B on memx. */
static void compute_e(opt *o, int p, double B)
{
    sc_pctx *x = o->x;
    int L = o->L, k = o->prof_k[p];
    int *e = o->E + (size_t)p * L;
    if (x->cfg->recompute != SC_RECOMPUTE_FULL) {
        int j = 0;
        for (int i = 0; i < L; i++) {
            if (j < i)
                j = i;
            while (j < L && memx(o, k, i, j + 1) <= B)
                j++;
            e[i] = j;
        }
        o->mono[p] = 1;
        return;
    }
    /* largest j in [i, L] with memx(i, j) <= B (j = i: the empty stage),
     * by galloping from e(i-1) then bisecting: O(log of the distance) */
    int mono = 1;
    for (int i = 0; i < L; i++) {
        int lo, hi, j0 = i > 0 && e[i - 1] > i ? e[i - 1] : i;
        if (j0 == i || memx(o, k, i, j0) <= B) {
            lo = j0; /* ok; gallop up */
            int step = 1;
            hi = L;
            while (lo < L) {
                int nj = lo + step < L ? lo + step : L;
                if (memx(o, k, i, nj) <= B) {
                    lo = nj;
                    step *= 2;
                } else {
                    hi = nj - 1;
                    break;
                }
            }
        } else {
            hi = j0 - 1; /* fails at j0; gallop down */
            int step = 1;
            lo = i;
            while (hi > i) {
                int nj = hi - step + 1 > i ? hi - step + 1 : i + 1;
                if (memx(o, k, i, nj) <= B) {
                    lo = nj;
                    break;
                }
                hi = nj - 1;
                step *= 2;
            }
        }
        while (lo < hi) { /* memx(i, lo) ok (or lo == i), memx(i, hi + 1) fails */
            int mid = lo + (hi - lo + 1) / 2;
            if (memx(o, k, i, mid) <= B)
                lo = mid;
            else
                hi = mid - 1;
        }
        e[i] = lo;
        if (i > 0 && e[i] < e[i - 1])
            mono = 0;
    }
    o->mono[p] = (unsigned char)mono;
}

static void compute_all_e(opt *o, double B)
{
    for (int p = 0; p < o->nprof; p++)
        compute_e(o, p, B);
}

/* max-heap of indices keyed by o->val */
static void heap_push(opt *o, int *n, int i)
{
    int *h = o->dq, c = (*n)++;
    h[c] = i;
    while (c > 0) {
        int p = (c - 1) / 2;
        if (o->val[h[p]] >= o->val[h[c]])
            break;
        int t = h[p];
        h[p] = h[c];
        h[c] = t;
        c = p;
    }
}

static void heap_pop(opt *o, int *n)
{
    int *h = o->dq;
    h[0] = h[--(*n)];
    int c = 0;
    for (;;) {
        int l = 2 * c + 1, r = l + 1, b = c;
        if (l < *n && o->val[h[l]] > o->val[h[b]])
            b = l;
        if (r < *n && o->val[h[r]] > o->val[h[b]])
            b = r;
        if (b == c)
            break;
        int t = h[b];
        h[b] = h[c];
        h[c] = t;
        c = b;
    }
}

/* feasible(T): 1 if some split has every stage time <= T (and fits); parents
 * recorded. When infeasible, *tnext gets the smallest failing best time
 * (among the ends the windows visit: an end pruned by the rest bound cannot
 * be on a split at any T' < the failing T either, so T_next stays a valid
 * next candidate). A passed deadline makes it return 0 with *tnext
 * infinite and o->late set. */
static int feasible(opt *o, double T, double *tnext)
{
    sc_pctx *x = o->x;
    int L = o->L, S = o->S;
    unsigned char *cur = o->ra, *nxt = o->rb;
    double tn = INFINITY;
    memset(cur, 0, (size_t)L + 1);
    memset(nxt, 0, (size_t)L + 1);
    cur[0] = 1;
    o->npar = 0;
    int rlo = 0, rhi = 0; /* reachable starts at this level lie in [rlo, rhi] */
    for (int k = 0; k < S; k++) {
        if ((k & 63) == 0 && past(o)) {
            *tnext = INFINITY;
            memset(cur, 0, (size_t)L + 1);
            o->ra = cur;
            o->rb = nxt;
            return 0;
        }
        int p = o->prof_of_rank[k % o->pp];
        const int *e = o->E + (size_t)p * L;
        const double *recv = k > 0 ? o->comm[x->inter[k - 1]] : o->zero;
        const double *send = k < S - 1 ? o->comm[x->inter[k]] : o->zero;
        const double *C = o->C;
        int jmin = k + 1, jmax = L - (S - 1 - k), jset = first_end(o, k, T);
        if (jmin < rlo + 1)
            jmin = rlo + 1;
        par_begin(o, k, jmin);
        int any = 0, last = k == S - 1, nlo = -1, nhi = -1, pruned = 0;
        if (o->mono[p]) {
            int *dq = o->dq, h = 0, t = 0;
            for (int j = jmin; j <= jmax; j++) {
                int i = j - 1;
                if (i <= rhi && cur[i] && e[i] > i) {
                    double v = C[i] - recv[i];
                    o->val[i] = v;
                    while (t > h && o->val[dq[t - 1]] <= v)
                        t--;
                    dq[t++] = i;
                }
                while (t > h && e[dq[h]] < j)
                    h++;
                if (t == h) {
                    if (i >= rhi)
                        break; /* no live start and none to come */
                    continue;
                }
                if (last && j < L)
                    continue;
                if (j < jset) {
                    pruned = 1;
                    continue;
                }
                int b = dq[h];
                double tau = (C[j] + send[j]) - o->val[b];
                if (tau <= T) {
                    nxt[j] = 1;
                    par_set(o, k, j, b);
                    any = 1;
                    if (nlo < 0)
                        nlo = j;
                    nhi = j;
                } else if (tau < tn) {
                    tn = tau;
                }
            }
        } else {
            int n = 0;
            for (int j = jmin; j <= jmax; j++) {
                int i = j - 1;
                if (i <= rhi && cur[i] && e[i] > i) {
                    o->val[i] = C[i] - recv[i];
                    heap_push(o, &n, i);
                }
                while (n > 0 && e[o->dq[0]] < j)
                    heap_pop(o, &n);
                if (n == 0) {
                    if (i >= rhi)
                        break;
                    continue;
                }
                if (last && j < L)
                    continue;
                if (j < jset) {
                    pruned = 1;
                    continue;
                }
                int b = o->dq[0];
                double tau = (C[j] + send[j]) - o->val[b];
                if (tau <= T) {
                    nxt[j] = 1;
                    par_set(o, k, j, b);
                    any = 1;
                    if (nlo < 0)
                        nlo = j;
                    nhi = j;
                } else if (tau < tn) {
                    tn = tau;
                }
            }
        }
        if (pruned) {
            /* an end the rest bound pruned matters from T_u on at the
             * earliest; the largest pruned end has the smallest T_u */
            int rest = S - 1 - k;
            double tu = (C[L] - C[jset - 1] - 1e-9 * C[L]) / (rest * (1 + 1e-9));
            tu *= 1 - 1e-12;
            double above = nextafter(T, INFINITY);
            if (!(tu > above))
                tu = above;
            if (tu < tn)
                tn = tu;
        }
        /* cur becomes the next level's scratch: clear what this level used */
        memset(cur + rlo, 0, (size_t)(rhi - rlo + 1));
        unsigned char *sw = cur;
        cur = nxt;
        nxt = sw;
        rlo = nlo;
        rhi = nhi;
        if (!any || o->oom)
            break;
    }
    o->ra = cur;
    o->rb = nxt;
    *tnext = o->oom ? INFINITY : tn;
    return !o->oom && cur[L];
}

/* Memory alone under the bound implied by o->E: 1 if a split exists. The
 * same windows as feasible: from the first reachable start to the last end a
 * reachable start allows. */
static int feasible_mem(opt *o)
{
    int L = o->L, S = o->S;
    unsigned char *cur = o->ra, *nxt = o->rb;
    memset(cur, 0, (size_t)L + 1);
    memset(nxt, 0, (size_t)L + 1);
    cur[0] = 1;
    o->npar = 0;
    int rlo = 0, rhi = 0;
    for (int k = 0; k < S; k++) {
        const int *e = o->E + (size_t)o->prof_of_rank[k % o->pp] * L;
        int jmin = k + 1, jmax = L - (S - 1 - k), best = -1, nlo = -1, nhi = -1;
        if (jmin < rlo + 1)
            jmin = rlo + 1;
        par_begin(o, k, jmin);
        int any = 0;
        for (int j = jmin; j <= jmax; j++) {
            int i = j - 1;
            if (i <= rhi && cur[i] && (best < 0 || e[i] > e[best]))
                best = i;
            if (best >= 0 && e[best] < j && i >= rhi)
                break; /* the furthest end is behind and no start is to come */
            if (best < 0 || e[best] < j)
                continue;
            nxt[j] = 1;
            par_set(o, k, j, best);
            any = 1;
            if (nlo < 0)
                nlo = j;
            nhi = j;
        }
        memset(cur + rlo, 0, (size_t)(rhi - rlo + 1));
        unsigned char *sw = cur;
        cur = nxt;
        nxt = sw;
        rlo = nlo;
        rhi = nhi;
        if (!any || o->oom)
            break;
    }
    o->ra = cur;
    o->rb = nxt;
    return !o->oom && cur[L];
}

/* A first split: cut the compute prefix at k·C[L]/S (each stage at least
 * one run). 1 when it
 * exists and every stage fits. O(S log L + S·G). */
static int start_split(const opt *o, int *first)
{
    const sc_pctx *x = o->x;
    int L = o->L, S = o->S;
    first[0] = 0;
    first[S] = L;
    for (int k = 1; k < S; k++) {
        double target = o->C[L] * k / S;
        int lo = first[k - 1] + 1, hi = L - (S - k);
        if (lo > hi)
            return 0;
        int a = lo, b = hi; /* the first j in [lo, hi] with C[j] >= target */
        while (a < b) {
            int mid = a + (b - a) / 2;
            if (o->C[mid] >= target)
                b = mid;
            else
                a = mid + 1;
        }
        first[k] = a;
    }
    for (int k = 0; k < S; k++)
        if (!(memx(o, k, first[k], first[k + 1]) <= x->cap))
            return 0;
    return 1;
}

static void reconstruct(const opt *o, int *first)
{
    int j = o->L;
    first[o->S] = j;
    for (int k = o->S - 1; k >= 0; k--) {
        j = par_get(o, k, j);
        first[k] = j;
    }
}

static double split_time(const opt *o, const int *first)
{
    double b = -INFINITY;
    for (int k = 0; k < o->S; k++) {
        double t = stime(o, k, first[k], first[k + 1]);
        if (t > b)
            b = t;
    }
    return b;
}

static double split_memx(const opt *o, const int *first)
{
    double b = -INFINITY;
    for (int k = 0; k < o->S; k++) {
        double t = memx(o, k, first[k], first[k + 1]);
        if (t > b)
            b = t;
    }
    return b;
}

static void opt_free(opt *o)
{
    sc_free(o->prof_of_rank);
    sc_free(o->prof_k);
    sc_free(o->E);
    sc_free(o->mono);
    sc_free(o->ra);
    sc_free(o->rb);
    sc_free(o->par);
    sc_free(o->poff);
    sc_free(o->plo);
    sc_free(o->dq);
    sc_free(o->val);
    sc_free(o->zero);
    sc_free(o->pos);
    sc_free(o->C);
}

/* The runs between allowed boundaries (opt.pos): a 96-layer GPT cut between
 * layers only has 387 leaves and 97 runs. The same splits as over the leaves,
 * as no stage can end inside a run. 0, or -1 out of memory. */
static int runs(opt *o)
{
    const sc_pctx *x = o->x;
    int n = x->n_allowed + 1;
    o->pos = sc_malloc(sizeof *o->pos * ((size_t)n + 1));
    o->C = sc_malloc(sizeof *o->C * 3 * ((size_t)n + 1));
    if (!o->pos || !o->C)
        return -1;
    int a = 0;
    o->pos[a++] = 0;
    for (int b = 1; b < x->L; b++)
        if (!x->forbid[b])
            o->pos[a++] = b;
    o->pos[a] = x->L;
    o->comm[0] = o->C + n + 1;
    o->comm[1] = o->comm[0] + n + 1;
    for (int i = 0; i <= n; i++) {
        o->C[i] = x->C[o->pos[i]];
        o->comm[0][i] = x->comm[0][o->pos[i]];
        o->comm[1][i] = x->comm[1][o->pos[i]];
    }
    o->L = n;
    return 0;
}

/* Out of memory, or past cfg->max_bytes. */
static sc_status oom_err(const opt *o, sc_error *err)
{
    if (o->too_big)
        return sc_err(err, SC_EINVAL,
                      "partition: %d stages over %d leaves need more than %.1f MiB of working "
                      "memory (the memory limit)",
                      o->S, o->x->L, o->max_par * sizeof(int) / 1048576.0);
    return sc_err(err, SC_ENOMEM, "partition: out of memory");
}

static sc_status not_fit(opt *o, int *first, sc_error *err)
{
    sc_pctx *x = o->x;
    int L = o->L;
    /* an upper bound every stage meets: memx(i, L) is the largest from i */
    double hi = 0;
    for (int p = 0; p < o->nprof; p++)
        for (int i = 0; i < L; i++) {
            double m = memx(o, o->prof_k[p], i, L);
            if (m > hi)
                hi = m;
        }
    double lo = 0;
    compute_all_e(o, hi);
    if (!feasible_mem(o)) /* a guard: S runs or more always split within hi */
        return o->oom ? oom_err(o, err) : sc_pctx_strict_error(x, err);
    reconstruct(o, first);
    hi = split_memx(o, first);
    for (int it = 0; it < 200 && hi - lo > 1e-12 * hi && !past(o); it++) {
        double mid = lo + (hi - lo) / 2;
        compute_all_e(o, mid);
        if (feasible_mem(o)) {
            reconstruct(o, first);
            double h = split_memx(o, first);
            hi = h < mid ? h : mid;
        } else if (o->oom) {
            return oom_err(o, err);
        } else {
            lo = mid;
        }
    }
    double need = x->ws + x->v * hi, gib = 1024.0 * 1024 * 1024;
    return sc_err(err, SC_ENOFIT, "does not fit: needs %.1f GiB per GPU, has %.1f GiB",
                  need / gib, x->cfg->cluster->gpu.memory_bytes / gib);
}

sc_status sc_partition_optimal(const sc_partitioner_cfg *cfg, sc_partition *out,
                               sc_error *err)
{
    sc_pctx x;
    sc_status st = sc_pctx_init(&x, cfg, err);
    if (st)
        return st;
    int L = x.L, S = x.S, pp = x.pp;
    if (x.n_allowed < S - 1) {
        st = sc_pctx_strict_error(&x, err);
        sc_pctx_free(&x);
        return st;
    }
    opt o = {0};
    o.x = &x;
    o.S = S;
    o.pp = pp;
    if (runs(&o)) {
        st = sc_err(err, SC_ENOMEM, "partition: out of memory");
        opt_free(&o);
        sc_pctx_free(&x);
        return st;
    }
    L = o.L;
    o.prof_of_rank = sc_malloc(sizeof *o.prof_of_rank * (size_t)pp);
    o.prof_k = sc_malloc(sizeof *o.prof_k * (size_t)pp);
    o.mono = sc_calloc((size_t)pp, 1);
    o.ra = sc_malloc((size_t)L + 1);
    o.rb = sc_malloc((size_t)L + 1);
    o.poff = sc_malloc(sizeof *o.poff * (size_t)S);
    o.plo = sc_malloc(sizeof *o.plo * (size_t)S);
    o.dq = sc_malloc(sizeof *o.dq * ((size_t)L + 1));
    o.val = sc_malloc(sizeof *o.val * ((size_t)L + 1));
    o.zero = sc_calloc((size_t)L + 1, sizeof *o.zero);
    int *first = sc_malloc(sizeof *first * ((size_t)S + 1));
    int *best = sc_malloc(sizeof *best * ((size_t)S + 1));
    if (!o.prof_of_rank || !o.prof_k || !o.mono || !o.ra || !o.rb || !o.poff || !o.plo || !o.dq ||
        !o.val || !o.zero || !first || !best) {
        st = sc_err(err, SC_ENOMEM, "partition: out of memory");
        goto done;
    }
    /* memory profiles: ranks with the same per-chunk in-flight count */
    for (int r = 0; r < pp; r++) {
        int p = 0;
        while (p < o.nprof && x.kc[o.prof_k[p]] != x.kc[r])
            p++;
        if (p == o.nprof)
            o.prof_k[o.nprof++] = r;
        o.prof_of_rank[r] = p;
    }
    o.E = sc_malloc(sizeof *o.E * (size_t)o.nprof * (size_t)L);
    if (!o.E) {
        st = sc_err(err, SC_ENOMEM, "partition: out of memory");
        goto done;
    }
    o.deadline = cfg->deadline_s;
    o.max_par = cfg->max_bytes > 0 ? (size_t)(cfg->max_bytes / sizeof(int)) : 0;
    compute_all_e(&o, x.cap);
    double tn;
    if (!start_split(&o, best)) {
        /* the first valid split is owed whatever the time: the test at
         * T = infinity runs to its end (a search past its time limit with
         * nothing fitting yet asks for exactly that split) */
        o.deadline = 0;
        int ok = feasible(&o, INFINITY, &tn);
        o.deadline = cfg->deadline_s;
        if (!ok) {
            st = o.oom ? oom_err(&o, err)
                 : cfg->nofit_quick && x.n_allowed >= S - 1
                       ? sc_err(err, SC_ENOFIT, "does not fit")
                       : not_fit(&o, first, err);
            goto done;
        }
        reconstruct(&o, best);
    }
    double hi = split_time(&o, best);
    /* a lower bound to start from: the mean and the largest leaf (or run) */
    double guess = o.C[L] / S;
    for (int l = 0; l < L; l++)
        if (o.C[l + 1] - o.C[l] > guess)
            guess = o.C[l + 1] - o.C[l];
    double lo = 0; /* every T < lo is infeasible (times are >= 0) */
    int step = 0;
    while (lo < hi) {
        double T;
        if (step == 0) {
            T = guess < hi ? guess : lo;
        } else if (step % 2 == 1) {
            T = lo;
        } else {
            uint64_t bl = dbits(lo > 0 ? lo : 0.0), bh = dbits(hi);
            T = bitsd(bl + (bh - bl) / 2);
        }
        if (T < lo)
            T = lo;
        step++;
        if (feasible(&o, T, &tn)) {
            reconstruct(&o, first);
            double h = split_time(&o, first);
            if (h < hi) {
                hi = h;
                memcpy(best, first, sizeof *best * ((size_t)S + 1));
            } else {
                hi = T < hi ? T : hi; /* cannot happen: h <= T */
            }
        } else {
            if (o.oom) {
                st = oom_err(&o, err);
                goto done;
            }
            if (o.late)
                break; /* the deadline: the best split so far */
            if (!(tn > lo) || tn == INFINITY)
                break; /* cannot happen: a failing test names a larger candidate */
            lo = tn;
        }
    }
    /* the answer's split: the one the test at T* = hi reconstructs, whatever
     * tests came before (skipped past the deadline) */
    if (!o.late && feasible(&o, hi, &tn)) { /* (out of memory: keep best) */
        reconstruct(&o, first);
        if (split_time(&o, first) <= hi)
            memcpy(best, first, sizeof *best * ((size_t)S + 1));
    }
    sc_partition p = {0};
    p.first = sc_malloc(sizeof *p.first * ((size_t)S + 1));
    if (!p.first) {
        st = sc_err(err, SC_ENOMEM, "partition: out of memory");
        goto done;
    }
    for (int k = 0; k <= S; k++)
        p.first[k] = leaf_at(&o, best[k]);
    p.n_stages = S;
    *out = p;
done:
    sc_free(first);
    sc_free(best);
    opt_free(&o);
    sc_pctx_free(&x);
    return st;
}
