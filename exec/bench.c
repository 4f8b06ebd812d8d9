/* bench.c - microbenchmarks over a backend, see bench.h.
 *
 * Cost: one allocation of the largest size per buffer; per size, warmup +
 * iters calls, one barrier per communication iteration and one gather of the
 * per-iteration times to rank 0. Trade-off taken: a barrier before every
 * collective iteration (instead of nccl-tests' back-to-back loop averaged
 * over the loop) so that each iteration's time is one call's, which gives
 * the median and the minimum the calibration fits; it costs a barrier's
 * latency per iteration in wall time, not in the figures.
 */
#include "bench.h"
#include "backend.h"
#include "cost.h"
#include "json.h"
#include "stats.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct sc_bench {
    const sc_backend *be;
    sc_bk *bk;
};

/* The ops (their table and run functions) are under "measuring"; their
 * names are the bench file's (traces/bench_file.h). */

/* ---- sizes ------------------------------------------------------------------ */

#define MAX_BYTES SC_BENCH_MAX_BYTES
#define MAX_DIM SC_BENCH_MAX_DIM

/* A number with an optional binary suffix K, M, G; *end past it. */
static int parse_num(const char *s, const char **end, double *out)
{
    char *e;
    errno = 0;
    /* decimal only: strtod would read "0x2x2x2" as the hex number 2 */
    if (!(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return -1;
    double v = strtod(s, &e);
    if (e == s || e != s + sc_decimal_len(s) || errno || !isfinite(v) || v < 0)
        return -1;
    switch (*e) {
    case 'k': case 'K': v *= 1024; e++; break;
    case 'm': case 'M': v *= 1024.0 * 1024; e++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; e++; break;
    default: break;
    }
    if (*e == 'i' || *e == 'B') /* tolerate KiB / KB spellings */
        e += (*e == 'i' && e[1] == 'B') ? 2 : 1;
    *end = e;
    *out = v;
    return 0;
}

static sc_status add_size(sc_bench_op op, double v, int m, int n, int k, int batch,
                          sc_bench_point *out, int *cnt, const char *text, sc_error *err)
{
    if (*cnt >= SC_BENCH_MAX_SIZES)
        return sc_err(err, SC_EINVAL, "--sizes '%s': more than %d sizes", text,
                      SC_BENCH_MAX_SIZES);
    sc_bench_point z = {0};
    if (op == SC_BENCH_GEMM) {
        if (m < 1 || n < 1 || k < 1 || m > MAX_DIM || n > MAX_DIM || k > MAX_DIM)
            return sc_err(err, SC_EINVAL,
                          "--sizes '%s': gemm dimensions must be integers in [1, %d]", text,
                          MAX_DIM);
        if (batch < 1 || batch > MAX_DIM)
            return sc_err(err, SC_EINVAL,
                          "--sizes '%s': a gemm batch must be an integer in [1, %d]", text,
                          MAX_DIM);
        z.m = m, z.n = n, z.k = k, z.batch = batch;
    } else {
        if (v < 1 || v > MAX_BYTES || v != floor(v))
            return sc_err(err, SC_EINVAL,
                          "--sizes '%s': %.0f bytes: sizes must be whole bytes in [1, 64G]",
                          text, v);
        z.bytes = v;
    }
    out[(*cnt)++] = z;
    return SC_OK;
}

static int as_dim(double v) { return v == floor(v) && v >= 1 && v <= MAX_DIM ? (int)v : -1; }

sc_status sc_bench_parse_sizes(sc_bench_op op, const char *text, sc_bench_point *out, int *n,
                               sc_error *err)
{
    *n = 0;
    if (!text || !*text)
        return sc_err(err, SC_EINVAL, "--sizes: empty");
    const char *p = text, *e;
    double a, b, f;
    if (strchr(text, ':')) {
        if (parse_num(p, &e, &a) || *e != ':' || parse_num(e + 1, &e, &b) || *e != ':')
            return sc_err(err, SC_EINVAL, "--sizes '%s': expected MIN:MAX:FACTOR", text);
        char *fe;
        errno = 0;
        f = strtod(e + 1, &fe);
        if (fe == e + 1 || *fe || errno || !(f >= 1) || !isfinite(f) ||
            sc_decimal_len(e + 1) != strlen(e + 1))
            return sc_err(err, SC_EINVAL, "--sizes '%s': FACTOR must be a number >= 1", text);
        if (a < 1 || b < a)
            return sc_err(err, SC_EINVAL, "--sizes '%s': need 1 <= MIN <= MAX", text);
        if (f == 1 && b > a) /* it would stay at MIN: one size where a sweep was asked */
            return sc_err(err, SC_EINVAL, "--sizes '%s': FACTOR 1 never reaches MAX (want > 1)",
                          text);
        for (double v = a; v <= b * (1 + 1e-12); v *= f) {
            double r = floor(v + 0.5);
            int d = as_dim(r);
            sc_status st = add_size(op, r, d, d, d, 1, out, n, text, err);
            if (st)
                return st;
            if (f == 1)
                break;
        }
        return SC_OK;
    }
    while (*p) {
        if (parse_num(p, &e, &a))
            return sc_err(err, SC_EINVAL, "--sizes '%s': '%s' is not a size", text, p);
        int m = as_dim(a), nn = m, k = m, batch = 1;
        if (op == SC_BENCH_GEMM && (*e == 'x' || *e == 'X')) {
            /* MxNxK, or BxMxNxK: a fourth number makes the first the batch */
            double d[4] = {a, 0, 0, 0};
            int nd = 1;
            while (nd < 4 && (*e == 'x' || *e == 'X')) {
                if (parse_num(e + 1, &e, &d[nd]))
                    return sc_err(err, SC_EINVAL, "--sizes '%s': expected MxNxK or BxMxNxK",
                                  text);
                nd++;
            }
            if (nd < 3 || *e == 'x' || *e == 'X')
                return sc_err(err, SC_EINVAL, "--sizes '%s': expected MxNxK or BxMxNxK", text);
            int o = nd == 4;
            batch = o ? as_dim(d[0]) : 1;
            m = as_dim(d[o]), nn = as_dim(d[o + 1]), k = as_dim(d[o + 2]);
        }
        if (*e && *e != ',')
            return sc_err(err, SC_EINVAL, "--sizes '%s': unexpected '%c'", text, *e);
        sc_status st = add_size(op, a, m, nn, k, batch, out, n, text, err);
        if (st)
            return st;
        if (*e == ',' && !e[1])
            return sc_err(err, SC_EINVAL, "--sizes '%s': a size must follow ','", text);
        p = *e ? e + 1 : e;
    }
    return SC_OK;
}

/* ---- one rank without MPI ---------------------------------------------------
 * The cpu backend needs MPI (backend_cpu.c is unavailable without it), yet a
 * GEMM on one core needs none: built without MPI, `bench gemm --backend cpu`
 * runs on this minimal table of the backend calls gemm uses (OpenBLAS
 * sgemm on one thread, fp32, host clock), with the same figures and file.
 * The communication ops never reach it (sc_bench_run refuses them first). */
#ifndef SC_HAVE_MPI
#include <cblas.h>

struct sc_dbuf {
    size_t bytes;
    float *p;
};
struct sc_ev {
    double t;
};
struct sc_bk {
    int unused;
};

void openblas_set_num_threads(int);

static double lo_now(const sc_bk *bk)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static sc_status lo_init(const sc_bk_opts *o, sc_bk **out, sc_error *err)
{
    if (!(*out = sc_calloc(1, sizeof **out)))
        return sc_err(err, SC_ENOMEM, "cpu: out of memory");
    openblas_set_num_threads(1);
    return SC_OK;
}
static void lo_finalize(sc_bk *bk) { sc_free(bk); }
static void lo_abort(sc_bk *bk, int code) { exit(code); }
static int lo_rank(const sc_bk *bk) { return 0; }
static int lo_size(const sc_bk *bk) { return 1; }
static sc_dtype lo_dtype(const sc_bk *bk, sc_dtype want) { return SC_FP32; }
static const char *lo_device(const sc_bk *bk)
{
    return "cpu-core (OpenBLAS sgemm fp32, 1 thread, no MPI)";
}
static sc_dbuf *lo_alloc(sc_bk *bk, size_t bytes, sc_error *err)
{
    sc_dbuf *b = sc_calloc(1, sizeof *b);
    if (b && !(b->p = sc_malloc(bytes ? bytes : 1))) {
        sc_free(b);
        b = NULL;
    }
    if (!b)
        sc_err(err, SC_ENOMEM, "cpu: out of memory allocating %zu bytes", bytes);
    else
        b->bytes = bytes;
    return b;
}
static void lo_free(sc_bk *bk, sc_dbuf *b)
{
    if (b)
        sc_free(b->p);
    sc_free(b);
}
static sc_status lo_fill(sc_bk *bk, sc_dbuf *b, size_t bytes, uint64_t seed, sc_error *err)
{
    unsigned char *p = (unsigned char *)b->p;
    for (size_t i = 0; i < bytes && i < b->bytes; i++)
        p[i] = sc_backend_pattern(seed, i);
    return SC_OK;
}
static sc_status lo_fill_uniform(sc_bk *bk, sc_dbuf *b, size_t count, sc_dtype dt,
                                 uint64_t seed, sc_error *err)
{
    if (count > b->bytes / sizeof(float))
        return sc_err(err, SC_EINVAL, "cpu: fill of %zu floats into a %zu-byte buffer", count,
                      b->bytes);
    for (size_t i = 0; i < count; i++)
        b->p[i] = (float)sc_backend_uniform(seed, i);
    return SC_OK;
}
static void lo_provenance(sc_bk *bk, sc_provenance *out) { sc_backend_host_provenance(out); }
static sc_status lo_gemm(sc_bk *bk, sc_dtype dt, int m, int n, int k, int batch,
                         const sc_dbuf *A, const sc_dbuf *B, sc_dbuf *C, sc_error *err)
{
    size_t mk = (size_t)m * k, kn = (size_t)k * n, mn = (size_t)m * n;
    if (A->bytes < 4 * mk * batch || B->bytes < 4 * kn * batch || C->bytes < 4 * mn * batch)
        return sc_err(err, SC_EINVAL, "cpu: gemm %dx%dx%d does not fit its buffers", m, n, k);
    for (int i = 0; i < batch; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A->p + mk * i, k,
                    B->p + kn * i, n, 0.0f, C->p + mn * i, n);
    return SC_OK;
}
static sc_status lo_sync(sc_bk *bk, double deadline, sc_error *err) { return SC_OK; }
static sc_status lo_epoch(sc_bk *bk, sc_error *err) { return SC_OK; }
static sc_ev *lo_ev_new(sc_bk *bk, sc_error *err)
{
    sc_ev *e = sc_calloc(1, sizeof *e);
    if (!e)
        sc_err(err, SC_ENOMEM, "cpu: out of memory");
    return e;
}
static void lo_ev_free(sc_bk *bk, sc_ev *e) { sc_free(e); }
static sc_status lo_ev_record(sc_bk *bk, sc_ev *e, sc_error *err)
{
    e->t = lo_now(bk);
    return SC_OK;
}
static sc_status lo_ev_time(sc_bk *bk, sc_ev *e, double *t, sc_error *err)
{
    *t = e->t;
    return SC_OK;
}
static void lo_comm_free(sc_bk *bk, sc_comm *c) {}

static const sc_backend local_cpu = {
    .name = "cpu", .desc = "OpenBLAS sgemm on one rank (no MPI)", .available = 1,
    .init = lo_init, .finalize = lo_finalize, .abort = lo_abort, .rank = lo_rank,
    .size = lo_size, .compute_dtype = lo_dtype, .device_name = lo_device, .alloc = lo_alloc,
    .free = lo_free, .fill = lo_fill, .fill_uniform = lo_fill_uniform,
    .provenance = lo_provenance, .gemm = lo_gemm, .sync = lo_sync, .epoch = lo_epoch,
    .now = lo_now, .ev_new = lo_ev_new, .ev_free = lo_ev_free, .ev_record = lo_ev_record,
    .ev_time = lo_ev_time, .comm_free = lo_comm_free,
};
#endif

/* ---- open / close ---------------------------------------------------------- */

sc_status sc_bench_open(const char *backend, int *argc, char ***argv, sc_bench **out,
                        sc_error *err)
{
    *out = NULL;
    const sc_backend *be = sc_backend_find(backend);
    if (!be)
        return sc_err(err, SC_ENOTFOUND, "unknown backend '%s' (cpu, cuda)", backend);
#ifndef SC_HAVE_MPI
    if (be == &sc_backend_cpu && !be->available)
        be = &local_cpu;
#endif
    sc_bench *b = sc_calloc(1, sizeof *b);
    if (!b)
        return sc_err(err, SC_ENOMEM, "out of memory");
    b->be = be;
    sc_bk_opts o = {.argc = argc, .argv = argv, .device = -1};
    sc_status st = be->init(&o, &b->bk, err);
    if (st) {
        sc_free(b);
        return st;
    }
    *out = b;
    return SC_OK;
}

int sc_bench_rank(const sc_bench *b) { return b->be->rank(b->bk); }
int sc_bench_nranks(const sc_bench *b) { return b->be->size(b->bk); }

void sc_bench_abort(sc_bench *b, int code)
{
    b->be->abort(b->bk, code);
    abort(); /* not reached: the backend's abort does not return */
}

void sc_bench_close(sc_bench *b)
{
    if (!b)
        return;
    b->be->finalize(b->bk);
    sc_free(b);
}

/* ---- measuring ------------------------------------------------------------- */

typedef struct {
    const sc_backend *be;
    sc_bk *bk;
    int rank, size;
    double timeout;
    sc_dbuf *A, *B, *C; /* gemm; A alone for the comm ops */
    sc_dbuf *evict;     /* cold_bytes > 0: written before every iteration */
    sc_dbuf *hA, *hB, *hC; /* hot_s > 0: the heating GEMM's operands */
    int heat_calls;     /* heating GEMMs queued before every timed call */
    sc_ev *e0, *e1;
    sc_comm *pair; /* p2p: world ranks 0 and 1 */
} ctx;

static double deadline(const ctx *c) { return c->be->now(c->bk) + c->timeout; }

/* One timed iteration of an op at one size. */
typedef struct {
    sc_dtype dtype;
    const sc_bench_point *z; /* gemm: m, n, k */
    size_t bytes;            /* communication ops: bytes moved (p2p: each way) */
    size_t count;            /* collectives: elements per rank */
} iter;

/* The heating GEMM (bench.h "Hot"): HEAT_N^3 on its own operands. */
#define HEAT_N 4096
static const sc_bench_point heat_gemm = {0, HEAT_N, HEAT_N, HEAT_N, 1};

static sc_status gemm_call(ctx *c, sc_dtype dt, const sc_bench_point *z, sc_dbuf *A,
                           sc_dbuf *B, sc_dbuf *C, sc_error *err)
{
    return c->be->gemm(c->bk, dt, z->m, z->n, z->k, z->batch > 1 ? z->batch : 1, A, B, C, err);
}

/* One gemm call timed with events on the compute stream (after an epoch,
 * so device event times are anchored to the host clock), queued behind an
 * untimed call of the same GEMM: in a training step the host runs ahead
 * and a kernel's launch hides behind the one before it, so the kernel
 * alone is timed, not its launch from an idle stream (on an H200, timed
 * from an idle stream, the sweep fitted 10.2 us a kernel, which calibrate
 * then charged to every kernel of a step). On a synchronous backend the
 * leading call only warms the caches, as the warm-up does. heat: the
 * heating GEMMs queued first (c->heat_calls of them). */
static sc_status gemm_timed(ctx *c, sc_dtype dt, const sc_bench_point *z, sc_dbuf *A,
                            sc_dbuf *B, sc_dbuf *C, int heat, double *t, sc_error *err)
{
    const sc_backend *be = c->be;
    double a = 0, b = 0;
    sc_status st = be->epoch(c->bk, err);
    for (int i = 0; heat && !st && i < c->heat_calls; i++)
        st = gemm_call(c, dt, &heat_gemm, c->hA, c->hB, c->hC, err);
    if (!st && be->async)
        st = gemm_call(c, dt, z, A, B, C, err);
    if (!st)
        st = be->ev_record(c->bk, c->e0, err);
    if (!st)
        st = gemm_call(c, dt, z, A, B, C, err);
    if (!st)
        st = be->ev_record(c->bk, c->e1, err);
    if (!st)
        st = be->sync(c->bk, deadline(c), err);
    if (!st)
        st = be->ev_time(c->bk, c->e0, &a, err);
    if (!st)
        st = be->ev_time(c->bk, c->e1, &b, err);
    *t = b - a;
    return st;
}

/* The heating GEMM's operands and how many calls make hot_s, from one
 * call timed as the sweep's are. */
static sc_status heat_open(ctx *c, sc_dtype dt, double hot_s, sc_error *err)
{
    const sc_backend *be = c->be;
    size_t count = (size_t)HEAT_N * HEAT_N;
    size_t eb = sc_backend_elem_bytes(be->compute_dtype(c->bk, dt));
    sc_dbuf **b[3] = {&c->hA, &c->hB, &c->hC};
    sc_status st = SC_OK;
    for (int i = 0; i < 3 && !st; i++) {
        if (!(*b[i] = be->alloc(c->bk, count * eb, err)))
            st = err ? err->status : SC_ENOMEM;
        else if (i < 2)
            st = be->fill_uniform(c->bk, *b[i], count, dt, 0x4ea7 + (uint64_t)i, err);
    }
    double t = 0;
    if (!st)
        st = gemm_timed(c, dt, &heat_gemm, c->hA, c->hB, c->hC, 0, &t, err);
    if (!st)
        c->heat_calls = (int)fmin(100000, ceil(hot_s / fmax(t, 1e-6)));
    return st;
}

/* The sweep's GEMM at one size, hot when heat_calls > 0 ("Hot"). */
static sc_status time_gemm(ctx *c, const iter *it, double *t, sc_error *err)
{
    return gemm_timed(c, it->dtype, it->z, c->A, c->B, c->C, 1, t, err);
}

/* One ping-pong between ranks 0 and 1 of the pair communicator; on rank 0
 * t = half the round trip, from the start of the send to the end of the
 * receive (the requests' own times: host clock on the CPU, events around
 * the NCCL calls on CUDA). 0 elsewhere. */
static sc_status time_p2p(ctx *c, const iter *it, double *t, sc_error *err)
{
    const sc_backend *be = c->be;
    size_t bytes = it->bytes;
    sc_req *req = NULL;
    sc_status st = SC_OK;
    double s0 = 0, s1 = 0, r0 = 0, r1 = 0;
    *t = 0;
    if (c->rank == 0) {
        st = be->isend(c->bk, c->pair, c->A, bytes, 1, &req, err);
        if (!st)
            st = be->req_wait(c->bk, req, deadline(c), &s0, &s1, err);
        if (!st)
            st = be->irecv(c->bk, c->pair, c->A, bytes, 1, &req, err);
        if (!st)
            st = be->req_wait(c->bk, req, deadline(c), &r0, &r1, err);
        *t = (r1 - s0) / 2;
    } else if (c->rank == 1) {
        st = be->irecv(c->bk, c->pair, c->A, bytes, 0, &req, err);
        if (!st)
            st = be->req_wait(c->bk, req, deadline(c), NULL, NULL, err);
        if (!st)
            st = be->isend(c->bk, c->pair, c->A, bytes, 0, &req, err);
        if (!st)
            st = be->req_wait(c->bk, req, deadline(c), NULL, NULL, err);
    }
    return st;
}

/* One collective over the world, in place on A; t = the request's own start
 * to end. */
static sc_status wait_coll(ctx *c, sc_status st, sc_req *req, double *t, sc_error *err)
{
    double t0 = 0, t1 = 0;
    if (!st)
        st = c->be->req_wait(c->bk, req, deadline(c), &t0, &t1, err);
    *t = t1 - t0;
    return st;
}

static sc_status time_allreduce(ctx *c, const iter *it, double *t, sc_error *err)
{
    sc_req *req = NULL;
    sc_status st = c->be->iallreduce(c->bk, c->be->world(c->bk), c->A, it->count, it->dtype,
                                     &req, err);
    return wait_coll(c, st, req, t, err);
}

static sc_status time_allgather(ctx *c, const iter *it, double *t, sc_error *err)
{
    sc_req *req = NULL;
    sc_status st = c->be->iallgather(c->bk, c->be->world(c->bk), c->A, it->count, it->dtype,
                                     &req, err);
    return wait_coll(c, st, req, t, err);
}

static sc_status time_reducescatter(ctx *c, const iter *it, double *t, sc_error *err)
{
    sc_req *req = NULL;
    sc_status st = c->be->ireducescatter(c->bk, c->be->world(c->bk), c->A, it->count,
                                         it->dtype, &req, err);
    return wait_coll(c, st, req, t, err);
}

/* ---- the ops ----------------------------------------------------------------
 * One entry per op, in sc_bench_op order (its name, the CLI's OP and the
 * bench file's "op", is the format's: sc_bench_op_name in
 * traces/bench_file.h): a one-line description, the function that times one
 * iteration, and how its sizes and ranks are read (bench.h). */

typedef enum {
    SIZE_DIMS,      /* a size is m, n, k (gemm) */
    SIZE_BYTES,     /* S bytes sent as given (p2p) */
    SIZE_PER_RANK,  /* S the per-rank buffer: S / elem elements (allreduce) */
    SIZE_ALL_RANKS  /* S the n-rank buffer: S / (elem·n) elements per rank */
} size_kind;

typedef struct {
    const char *desc;
    sc_status (*run)(ctx *c, const iter *it, double *t, sc_error *err);
    size_kind size;
    int comm;  /* moves data between ranks: needs MPI; an epoch and a barrier
                  start each iteration */
    int pair;  /* world ranks 0 and 1 only, over their own communicator */
    int coll;  /* the sc_coll whose nccl-tests bus factor applies; -1: factor 1 */
} bench_op;

static const bench_op ops[SC_BENCH_OP_N] = {
    [SC_BENCH_GEMM] = {"C[m,n] = A[m,k] B[k,n] on every rank at once", time_gemm,
                       SIZE_DIMS, 0, 0, -1},
    [SC_BENCH_P2P] = {"ping-pong between ranks 0 and 1, time = half the round trip",
                      time_p2p, SIZE_BYTES, 1, 1, -1},
    [SC_BENCH_ALLREDUCE] = {"sum over every rank, in place", time_allreduce,
                            SIZE_PER_RANK, 1, 0, SC_COLL_ALLREDUCE},
    [SC_BENCH_ALLGATHER] = {"every rank's share to every rank", time_allgather,
                            SIZE_ALL_RANKS, 1, 0, SC_COLL_ALLGATHER},
    [SC_BENCH_REDUCESCATTER] = {"sum over every rank, each keeping a share",
                                time_reducescatter, SIZE_ALL_RANKS, 1, 0,
                                SC_COLL_REDUCE_SCATTER},
};

/* Node identity: host name and network namespace, so that the namespaces
 * of an emulated cluster count as nodes. */
typedef struct {
    char host[112];
    unsigned long long netns;
} node_id;

static void my_node(node_id *id)
{
    memset(id, 0, sizeof *id);
    if (gethostname(id->host, sizeof id->host - 1) != 0)
        strcpy(id->host, "?");
    struct stat st;
    if (stat("/proc/self/ns/net", &st) == 0)
        id->netns = (unsigned long long)st.st_ino;
}

static int same_node(const node_id *a, const node_id *b)
{
    return a->netns == b->netns && !strcmp(a->host, b->host);
}

/* Fills the topology fields of r on rank 0 (collective). */
static sc_status topology(ctx *c, const bench_op *k, sc_bench_result *r, sc_error *err)
{
    node_id me, *all = NULL;
    my_node(&me);
    int n = c->size;
    if (c->rank == 0) {
        all = sc_calloc((size_t)n, sizeof *all);
        if (!all)
            return sc_err(err, SC_ENOMEM, "out of memory");
    }
    sc_status st = SC_OK;
    if (n > 1)
        st = c->be->gather_host(c->bk, &me, sizeof me, all, 0, deadline(c), err);
    else if (all)
        all[0] = me;
    if (st || c->rank != 0) {
        sc_free(all);
        return st;
    }
    snprintf(r->host, sizeof r->host, "%s", me.host);
    int measured = k->pair ? 2 : n;
    /* nodes among the measured ranks (the first `measured` of the world);
     * ranks per node: the most ranks of the world on one node. O(n^2). */
    int nodes = 0, rpn = 0;
    for (int i = 0; i < n; i++) {
        int count = 0, seen = 0;
        for (int j = 0; j < n; j++) {
            count += same_node(&all[i], &all[j]);
            seen |= j < i && same_node(&all[i], &all[j]);
        }
        rpn = count > rpn ? count : rpn;
        nodes += i < measured && !seen;
    }
    r->nodes = nodes;
    r->ranks_per_node = rpn;
    snprintf(r->link, sizeof r->link, "%s", nodes > 1 ? "inter" : "intra");
    sc_free(all);
    return SC_OK;
}

sc_status sc_bench_run(sc_bench *b, const sc_bench_opts *o, sc_bench_result **out,
                       sc_error *err)
{
    *out = NULL;
    const sc_backend *be = b->be;
    const char *opn = sc_bench_op_name(o->op);
    if ((unsigned)o->op >= SC_BENCH_OP_N || o->n_sizes < 1 || o->n_sizes > SC_BENCH_MAX_SIZES ||
        o->iters < 1 || o->warmup < 0 || !(o->timeout_s > 0) || (unsigned)o->dtype >= SC_DTYPE_N)
        return sc_err(err, SC_EINVAL, "bench %s: bad options", opn);
    const bench_op *k = &ops[o->op];
    ctx c = {.be = be, .bk = b->bk, .rank = be->rank(b->bk), .size = be->size(b->bk),
             .timeout = o->timeout_s};
#ifndef SC_HAVE_MPI
    if (k->comm)
        return sc_err(err, SC_ENOTSUP,
                      "bench %s: needs MPI to start ranks, and this build has none "
                      "(built without MPI; only 'bench gemm' runs)", opn);
#endif
    if (o->hot_s < 0 || o->hot_s > 10 ||
        (o->hot_s > 0 && (o->op != SC_BENCH_GEMM || !be->async)))
        return sc_err(err, SC_EINVAL,
                      "bench %s: --hot %g: heating is for gemm on an asynchronous backend "
                      "(cuda), 0 to 10 s", opn, o->hot_s);
    if (k->pair && c.size < 2)
        return sc_err(err, SC_EINVAL,
                      "bench %s: needs 2 ranks, have %d (run it under mpirun -np 2)", opn,
                      c.size);

    sc_dtype cdt = be->compute_dtype(b->bk, o->dtype);
    size_t eb = sc_backend_elem_bytes(cdt);
    int max_iters = o->max_iters > o->iters ? o->max_iters : o->iters;
    sc_bench_result *r = NULL;
    if (c.rank == 0) {
        r = sc_calloc(1, sizeof *r);
        if (!r)
            return sc_err(err, SC_ENOMEM, "out of memory");
        r->op = o->op;
        snprintf(r->backend, sizeof r->backend, "%s", be->name);
        snprintf(r->device, sizeof r->device, "%s", be->device_name(b->bk));
        r->world = c.size;
        r->ranks = k->pair ? 2 : c.size;
        r->dtype = o->dtype;
        r->compute_dtype = cdt;
        r->elem_bytes = (double)eb;
        r->busbw_factor = k->coll < 0 ? 1 : sc_cost_busbw_factor((sc_coll)k->coll, c.size);
        r->iters = o->iters;
        r->warmup = o->warmup;
        r->tolerance = o->tolerance > 0 ? o->tolerance : -1;
        r->max_iters = o->tolerance > 0 ? max_iters : 0;
        r->cold_bytes = k->comm && o->cold_bytes > 0 ? o->cold_bytes : 0;
        r->hot_s = o->hot_s;
    }
    double *times = NULL, *all = NULL, *hist = NULL, *tmp = NULL;
    sc_status st = topology(&c, k, r, err);
    sc_provenance prov;
    if (!st)
        st = sc_backend_gather_provenance(be, b->bk, deadline(&c), &prov, err);
    if (!st && r)
        r->prov = prov;

    /* the largest buffers any size needs */
    size_t a_max = 0, b_max = 0, c_max = 0;
    for (int i = 0; i < o->n_sizes; i++) {
        const sc_bench_point *z = &o->sizes[i];
        if (k->size == SIZE_DIMS) {
            size_t bt = z->batch > 1 ? (size_t)z->batch : 1;
            size_t a = bt * z->m * z->k * eb, bb = bt * z->k * z->n * eb,
                   cc = bt * z->m * z->n * eb;
            a_max = a > a_max ? a : a_max;
            b_max = bb > b_max ? bb : b_max;
            c_max = cc > c_max ? cc : c_max;
        } else if ((size_t)z->bytes > a_max) {
            a_max = (size_t)z->bytes;
        }
    }
    /* inputs uniform in [-1, 1) (fill_uniform): finite, normal floats, as
     * the executor's GEMMs and any real training see, never raw bytes */
    if (!st && !(c.A = be->alloc(b->bk, a_max, err)))
        st = err ? err->status : SC_ENOMEM;
    if (!st && k->size == SIZE_DIMS) {
        if (!(c.B = be->alloc(b->bk, b_max, err)) || !(c.C = be->alloc(b->bk, c_max, err)))
            st = err ? err->status : SC_ENOMEM;
        if (!st)
            st = be->fill_uniform(b->bk, c.B, b_max / eb, o->dtype, 2, err);
    }
    if (!st)
        st = be->fill_uniform(b->bk, c.A, a_max / eb, o->dtype, 1 + (uint64_t)c.rank, err);
    /* cold: a buffer bigger than the caches, written before every iteration, so that
     * the collective reads its buffer (and the transport its own) from memory, as a
     * step's gradient reduction does after the backward has streamed the layers */
    size_t cold = k->comm && o->cold_bytes > 0 ? (size_t)o->cold_bytes : 0;
    if (!st && cold && !(c.evict = be->alloc(b->bk, cold, err)))
        st = err ? err->status : SC_ENOMEM;
    if (!st && (!(c.e0 = be->ev_new(b->bk, err)) || !(c.e1 = be->ev_new(b->bk, err))))
        st = err ? err->status : SC_ENOMEM;
    if (!st && o->hot_s > 0)
        st = heat_open(&c, o->dtype, o->hot_s, err);
    if (!st) {
        times = sc_calloc((size_t)o->iters, sizeof *times);
        all = c.rank == 0 ? sc_calloc((size_t)o->iters * c.size, sizeof *all) : NULL;
        hist = c.rank == 0 ? sc_calloc((size_t)max_iters + o->iters, sizeof *hist) : NULL;
        tmp = c.rank == 0 ? sc_calloc((size_t)o->iters, sizeof *tmp) : NULL;
        if (!times || (c.rank == 0 && (!all || !hist || !tmp)))
            st = sc_err(err, SC_ENOMEM, "out of memory");
    }
    if (!st && k->pair)
        st = be->comm_split(b->bk, c.rank < 2 ? 0 : -1, c.rank, &c.pair, err);
    if (!st)
        st = be->sync(b->bk, deadline(&c), err);

    for (int i = 0; !st && i < o->n_sizes; i++) {
        const sc_bench_point *z = &o->sizes[i];
        iter one = {o->dtype, z, (size_t)z->bytes, 0};
        size_t elems = 0; /* the elements a reduction sums in place */
        if (k->size == SIZE_PER_RANK) {
            one.count = one.bytes / eb;
            one.bytes = one.count * eb;
            elems = one.count;
        } else if (k->size == SIZE_ALL_RANKS) {
            one.count = one.bytes / (eb * (size_t)c.size); /* per rank: S is the n-rank buffer */
            one.bytes = one.count * eb * (size_t)c.size;
            elems = one.count * (size_t)c.size;
        }
        int reduces = k->coll == SC_COLL_ALLREDUCE || k->coll == SC_COLL_REDUCE_SCATTER;
        size_t bytes = one.bytes;
        if (k->comm && bytes == 0)
            continue; /* smaller than one element per rank: nothing to move */
        /* Blocks of iters timed iterations until the median of the last
         * block is within the tolerance of the block's before it, or
         * max_iters (bench.h). Rank 0 decides and tells the others. */
        int nrun = 0, done = 0;
        double drift = -1;
        for (int it = -o->warmup; !st && !done;) {
            for (int q = 0; !st && q < o->iters; it++) {
                double t = 0;
                /* a sum in place grows each time (n^iterations): refill so
                 * every iteration reduces values in [-1, 1) */
                if (reduces)
                    st = be->fill_uniform(b->bk, c.A, elems, o->dtype, 1 + (uint64_t)c.rank, err);
                if (!st && cold)
                    st = be->fill(b->bk, c.evict, cold, (uint64_t)(it + o->warmup), err);
                if (!st && k->comm) {
                    st = be->epoch(b->bk, err);
                    if (!st)
                        st = be->barrier(b->bk, deadline(&c), err);
                }
                if (!st)
                    st = k->run(&c, &one, &t, err);
                if (it >= 0)
                    times[q++] = t;
            }
            if (st)
                break;
            size_t len = (size_t)o->iters * sizeof *times;
            if (c.size > 1)
                st = be->gather_host(b->bk, times, len, all, 0, deadline(&c), err);
            else
                memcpy(all, times, len);
            if (st)
                break;
            if (c.rank == 0) {
                /* per iteration the slowest rank (p2p: rank 0, the others report 0) */
                for (int q = 0; q < o->iters; q++) {
                    double w = all[q];
                    for (int rr = 1; rr < c.size; rr++)
                        w = fmax(w, all[(size_t)rr * o->iters + q]);
                    hist[nrun + q] = w;
                }
                nrun += o->iters;
                if (nrun >= 2 * o->iters) {
                    memcpy(tmp, hist + nrun - 2 * o->iters, sizeof *tmp * (size_t)o->iters);
                    double m0 = sc_median(tmp, (size_t)o->iters);
                    memcpy(tmp, hist + nrun - o->iters, sizeof *tmp * (size_t)o->iters);
                    double m1 = sc_median(tmp, (size_t)o->iters);
                    drift = m1 > 0 ? fabs(m1 - m0) / m1 : 0;
                }
                done = !(o->tolerance > 0) || nrun + o->iters > max_iters ||
                       (drift >= 0 && drift <= o->tolerance);
            }
            if (c.size > 1)
                st = be->bcast_host(b->bk, &done, sizeof done, 0, deadline(&c), err);
        }
        if (st || c.rank != 0)
            continue;
        /* the figures of the last block */
        memcpy(tmp, hist + nrun - o->iters, sizeof *tmp * (size_t)o->iters);
        double med = sc_median(tmp, (size_t)o->iters); /* sorts tmp: tmp[0] is the minimum */
        sc_bench_row *row = &r->rows[r->n_rows++];
        memset(row, 0, sizeof *row);
        row->time_s = med;
        row->time_min_s = tmp[0];
        row->spread = sc_spread(tmp, (size_t)o->iters);
        row->drift = drift;
        row->runs = nrun;
        if (k->size == SIZE_DIMS) {
            row->m = z->m, row->n = z->n, row->k = z->k;
            row->batch = z->batch > 1 ? z->batch : 1;
            row->flop = 2.0 * row->batch * z->m * z->n * z->k;
            row->flops = med > 0 ? row->flop / med : 0;
        } else {
            row->bytes = (double)bytes;
            row->algbw = med > 0 ? (double)bytes / med : 0;
            row->busbw = row->algbw * r->busbw_factor;
        }
    }
    if (!st && c.rank == 0 && r->n_rows == 0)
        st = sc_err(err, SC_EINVAL,
                    "bench %s: every size is smaller than one %zu-byte element per rank", opn,
                    eb);

    be->comm_free(b->bk, c.pair);
    be->ev_free(b->bk, c.e0);
    be->ev_free(b->bk, c.e1);
    be->free(b->bk, c.A);
    be->free(b->bk, c.B);
    be->free(b->bk, c.C);
    be->free(b->bk, c.evict);
    be->free(b->bk, c.hA);
    be->free(b->bk, c.hB);
    be->free(b->bk, c.hC);
    sc_free(times);
    sc_free(all);
    sc_free(hist);
    sc_free(tmp);
    if (st) {
        if (err && c.size > 1)
            sc_err_prefix(err, "bench %s: rank %d", opn, c.rank);
        sc_free(r);
        return st;
    }
    *out = r;
    return SC_OK;
}

/* ---- output ----------------------------------------------------------------- */

static const char *human_bytes(double v, char *buf, size_t cap)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB"};
    int i = 0;
    while (v >= 1024 && i < 3)
        v /= 1024, i++;
    if (v == floor(v))
        snprintf(buf, cap, "%.0f %s", v, u[i]);
    else
        snprintf(buf, cap, "%.2f %s", v, u[i]);
    return buf;
}

int sc_bench_unstable(const sc_bench_result *r, double *worst)
{
    int n = 0;
    *worst = 0;
    for (int i = 0; i < r->n_rows; i++)
        if (r->tolerance > 0 && r->rows[i].drift > r->tolerance) {
            n++;
            *worst = fmax(*worst, r->rows[i].drift);
        }
    return n;
}

static void spread_cell(const sc_bench_row *w, double tol, char *buf, size_t cap)
{
    if (w->spread < 0)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.1f%%%s", 100 * w->spread, tol > 0 && w->drift > tol ? " *" : "");
}

void sc_bench_print(const sc_bench_result *r, FILE *f)
{
    fprintf(f, "bench %s on %s (%s), %d rank%s", sc_bench_op_name(r->op), r->backend, r->device,
            r->ranks, r->ranks == 1 ? "" : "s");
    if (r->op != SC_BENCH_GEMM)
        fprintf(f, " on %d node%s (%s, %d per node)", r->nodes, r->nodes == 1 ? "" : "s",
                r->link, r->ranks_per_node);
    fprintf(f, ", %s", sc_dtype_name(r->dtype));
    if (r->compute_dtype != r->dtype)
        fprintf(f, " (runs as %s)", sc_dtype_name(r->compute_dtype));
    fprintf(f, ", %d iters after %d warmup", r->iters, r->warmup);
    if (r->tolerance > 0)
        fprintf(f, ", repeated until the median moves < %.3g%% (at most %d)", 100 * r->tolerance,
                r->max_iters);
    if (r->cold_bytes > 0) {
        char cb[32];
        fprintf(f, ", cold (%s written before each)", human_bytes(r->cold_bytes, cb, sizeof cb));
    }
    if (r->hot_s > 0)
        fprintf(f, ", hot (%.3g ms of a 4096^3 GEMM before each)", 1e3 * r->hot_s);
    fprintf(f, "\n");
    if (r->prov.present && (r->prov.blas[0] || r->prov.cuda_device[0]))
        fprintf(f, "on %s; %s%s%s%s%s\n",
                r->prov.cuda_device[0] ? r->prov.cuda_device : r->prov.cpu, r->prov.blas,
                r->prov.blas_core[0] ? ", kernel " : "", r->prov.blas_core,
                r->prov.mixed[0] ? "; ranks differ: " : "", r->prov.mixed);
    char sp[32];
    if (r->op == SC_BENCH_GEMM) {
        int batched = 0; /* a batch column only when a size has one */
        for (int i = 0; i < r->n_rows; i++)
            batched |= r->rows[i].batch > 1;
        if (batched)
            fprintf(f, "%7s ", "batch");
        fprintf(f, "%7s %7s %7s %14s %14s %12s %9s\n", "m", "n", "k", "median us", "min us",
                "GFLOP/s", "spread");
        for (int i = 0; i < r->n_rows; i++) {
            const sc_bench_row *w = &r->rows[i];
            spread_cell(w, r->tolerance, sp, sizeof sp);
            if (batched)
                fprintf(f, "%7d ", w->batch > 1 ? w->batch : 1);
            fprintf(f, "%7d %7d %7d %14.1f %14.1f %12.2f %9s\n", w->m, w->n, w->k,
                    w->time_s * 1e6, w->time_min_s * 1e6, w->flops / 1e9, sp);
        }
    } else {
        fprintf(f, "%12s %14s %14s %14s %14s %9s\n", "size", "median us", "min us",
                "algbw GB/s", "busbw GB/s", "spread");
        for (int i = 0; i < r->n_rows; i++) {
            const sc_bench_row *w = &r->rows[i];
            char b[32];
            spread_cell(w, r->tolerance, sp, sizeof sp);
            fprintf(f, "%12s %14.1f %14.1f %14.3f %14.3f %9s\n",
                    human_bytes(w->bytes, b, sizeof b), w->time_s * 1e6, w->time_min_s * 1e6,
                    w->algbw / 1e9, w->busbw / 1e9, sp);
        }
        if (r->op != SC_BENCH_P2P)
            fprintf(f, "busbw = algbw x %.4g (nccl-tests convention, %d rank%s%s)\n",
                    r->busbw_factor, r->ranks, r->ranks == 1 ? "" : "s",
                    r->ranks == 1 ? ": no link crossed, the time is the copy's alone" : "");
    }
    double worst;
    int bad = sc_bench_unstable(r, &worst);
    if (bad)
        fprintf(f,
                "too noisy (*): %d of %d sizes did not settle in %d iterations: their median "
                "still moved by up to %.1f%% between the last two blocks (tolerance %.3g%%)\n",
                bad, r->n_rows, r->max_iters, 100 * worst, 100 * r->tolerance);
}
