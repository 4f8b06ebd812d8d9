/* backend_cpu.c - the CPU backend: OpenBLAS sgemm on one thread per rank,
 * fp32 whatever the plan's dtype, MPI nonblocking point-to-point and
 * collectives. Each rank is one process (one "device" = one core).
 *
 * Compute is synchronous on the calling thread; a request is an MPI request
 * whose completion time is the first time a test saw it complete (the
 * executor tests every pending request between ops, which is also what
 * drives MPI's progress). Built without MPI the table is present with
 * available = 0 and init fails with "built without MPI".
 */
#include "backend.h"
#include "exec_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SC_HAVE_MPI
#include <cblas.h>
#include <mpi.h>

struct sc_dbuf {
    size_t bytes;
    float *p;
};
struct sc_comm {
    MPI_Comm c;
    int rank, size, own;
};
struct sc_req {
    MPI_Request r;
    double t0, t1;
    int done;
};
struct sc_ev {
    double t;
};
struct sc_bk {
    int rank, size, started_mpi;
    sc_comm world;
};

#define bk_rank_ (bk ? bk->rank : -1)

static sc_status cpu_init(const sc_bk_opts *o, sc_bk **out, sc_error *err)
{
    sc_bk *bk = NULL;
    int inited = 0, provided;
    MPI_TRY(MPI_Initialized(&inited));
    int started = 0;
    if (!inited) {
        MPI_TRY(MPI_Init_thread(o ? o->argc : NULL, o ? o->argv : NULL, MPI_THREAD_SINGLE,
                                &provided));
        started = 1;
    }
    bk = sc_calloc(1, sizeof *bk);
    if (!bk)
        return sc_err(err, SC_ENOMEM, "cpu: out of memory");
    bk->started_mpi = started;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &bk->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &bk->size);
    bk->world = (sc_comm){MPI_COMM_WORLD, bk->rank, bk->size, 0};
    openblas_set_num_threads(1); /* one core per rank */
    *out = bk;
    return SC_OK;
}

static void cpu_finalize(sc_bk *bk)
{
    if (!bk)
        return;
    int fin = 0;
    if (bk->started_mpi && MPI_Finalized(&fin) == MPI_SUCCESS && !fin)
        MPI_Finalize();
    sc_free(bk);
}

static void cpu_abort(sc_bk *bk, int code)
{
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    _Exit(code); /* not reached */
}

static int cpu_rank(const sc_bk *bk) { return bk->rank; }
static int cpu_size(const sc_bk *bk) { return bk->size; }
static sc_dtype cpu_dtype(const sc_bk *bk, sc_dtype want) { return SC_FP32; }
/* Starts with cpu-local's gpu.name, which calibration matches against. */
static const char *cpu_device(const sc_bk *bk) { return "cpu-core (OpenBLAS sgemm fp32, 1 thread per rank)"; }

static sc_dbuf *cpu_alloc(sc_bk *bk, size_t bytes, sc_error *err)
{
    sc_dbuf *b = sc_calloc(1, sizeof *b);
    size_t n = (bytes + 63) / 64 * 64;
    void *p = NULL;
    if (!b || posix_memalign(&p, 64, n ? n : 64)) {
        sc_free(b);
        sc_err(err, SC_ENOMEM, "cpu: rank %d: out of memory allocating %zu bytes", bk->rank,
               bytes);
        return NULL;
    }
    memset(p, 0, n ? n : 64); /* touch the pages now, not inside a timed op */
    b->p = p;
    b->bytes = bytes;
    return b;
}

static void cpu_free(sc_bk *bk, sc_dbuf *b)
{
    if (!b)
        return;
    free(b->p);
    sc_free(b);
}

static size_t cpu_size_of(const sc_dbuf *b) { return b ? b->bytes : 0; }

static sc_status cpu_fill(sc_bk *bk, sc_dbuf *b, size_t bytes, uint64_t seed, sc_error *err)
{
    if (bytes > b->bytes)
        return sc_err(err, SC_EINVAL, "cpu: fill of %zu bytes into a %zu-byte buffer", bytes,
                      b->bytes);
    uint8_t *p = (uint8_t *)b->p;
    size_t i = 0;
    /* whole 8-byte words at a time: one mix per word, as the pattern is */
    for (; i + 8 <= bytes; i += 8) {
        uint64_t z = sc_backend_pattern_word(seed, i >> 3);
        for (int k = 0; k < 8; k++)
            p[i + (size_t)k] = (uint8_t)(z >> (8 * k));
    }
    for (; i < bytes; i++)
        p[i] = sc_backend_pattern(seed, i);
    return SC_OK;
}

static sc_status cpu_fill_uniform(sc_bk *bk, sc_dbuf *b, size_t count, sc_dtype dt,
                                  uint64_t seed, sc_error *err)
{
    if (count > b->bytes / sizeof(float))
        return sc_err(err, SC_EINVAL, "cpu: fill of %zu floats into a %zu-byte buffer", count,
                      b->bytes);
    for (size_t i = 0; i < count; i++)
        b->p[i] = (float)sc_backend_uniform(seed, i);
    return SC_OK;
}

/* The host's record, and the MPI library's name and version (its first
 * comma-separated part: "Open MPI v4.1.4"). */
static void cpu_provenance(sc_bk *bk, sc_provenance *out)
{
    sc_backend_host_provenance(out);
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(v, &len) == MPI_SUCCESS) {
        v[strcspn(v, ",\n")] = '\0';
        snprintf(out->mpi, sizeof out->mpi, "%.127s", v);
    }
}

static sc_status cpu_checksum(sc_bk *bk, const sc_dbuf *b, size_t bytes, uint64_t *out,
                              sc_error *err)
{
    if (bytes > b->bytes)
        return sc_err(err, SC_EINVAL, "cpu: checksum of %zu bytes of a %zu-byte buffer", bytes,
                      b->bytes);
    *out = sc_backend_fnv(SC_FNV_INIT, b->p, bytes);
    return SC_OK;
}

static sc_status cpu_gemm(sc_bk *bk, sc_dtype dt, int m, int n, int k, int batch,
                          const sc_dbuf *A, const sc_dbuf *B, sc_dbuf *C, sc_error *err)
{
    size_t mk = (size_t)m * k, kn = (size_t)k * n, mn = (size_t)m * n;
    if (m < 1 || n < 1 || k < 1 || batch < 1 || A->bytes < 4 * mk * batch ||
        B->bytes < 4 * kn * batch || C->bytes < 4 * mn * batch)
        return sc_err(err, SC_EINVAL, "cpu: rank %d: gemm %dx%dx%d (batch %d) does not fit its buffers",
                      bk->rank, m, n, k, batch);
    for (int i = 0; i < batch; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A->p + mk * i, k,
                    B->p + kn * i, n, 0.0f, C->p + mn * i, n);
    return SC_OK;
}

static sc_status cpu_memop(sc_bk *bk, sc_dbuf *dst, const sc_dbuf *src, size_t bytes,
                           sc_error *err)
{
    size_t n = bytes / 4;
    if (bytes > dst->bytes || bytes > src->bytes)
        return sc_err(err, SC_EINVAL, "cpu: memop of %zu bytes exceeds its buffers", bytes);
    float *d = dst->p;
    const float *s = src->p;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i] * 0.5f + d[i] * 0.5f;
    return SC_OK;
}

static sc_status cpu_sync(sc_bk *bk, double deadline, sc_error *err) { return SC_OK; }
static sc_status cpu_epoch(sc_bk *bk, sc_error *err) { return SC_OK; }
static double cpu_now(const sc_bk *bk) { return sc_exec_clock(); }

static sc_ev *cpu_ev_new(sc_bk *bk, sc_error *err)
{
    sc_ev *e = sc_calloc(1, sizeof *e);
    if (!e)
        sc_err(err, SC_ENOMEM, "cpu: out of memory");
    return e;
}
static void cpu_ev_free(sc_bk *bk, sc_ev *e) { sc_free(e); }
static sc_status cpu_ev_record(sc_bk *bk, sc_ev *e, sc_error *err)
{
    e->t = sc_exec_clock();
    return SC_OK;
}
static sc_status cpu_ev_time(sc_bk *bk, sc_ev *e, double *t, sc_error *err)
{
    *t = e->t;
    return SC_OK;
}

static sc_comm *cpu_world(sc_bk *bk) { return &bk->world; }

static sc_status cpu_split(sc_bk *bk, int color, int key, sc_comm **out, sc_error *err)
{
    MPI_Comm c;
    *out = NULL;
    MPI_TRY(MPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color, key, &c));
    if (c == MPI_COMM_NULL)
        return SC_OK;
    sc_comm *x = sc_calloc(1, sizeof *x);
    if (!x) {
        MPI_Comm_free(&c);
        return sc_err(err, SC_ENOMEM, "cpu: out of memory");
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    x->c = c;
    x->own = 1;
    MPI_Comm_rank(c, &x->rank);
    MPI_Comm_size(c, &x->size);
    *out = x;
    return SC_OK;
}

static void cpu_comm_free(sc_bk *bk, sc_comm *c)
{
    if (!c || !c->own)
        return;
    MPI_Comm_free(&c->c);
    sc_free(c);
}
static int cpu_comm_rank(const sc_comm *c) { return c->rank; }
static int cpu_comm_size(const sc_comm *c) { return c->size; }

static sc_req *new_req(sc_bk *bk, sc_error *err)
{
    sc_req *r = sc_calloc(1, sizeof *r);
    if (!r) {
        sc_err(err, SC_ENOMEM, "cpu: rank %d: out of memory", bk->rank);
        return NULL;
    }
    r->r = MPI_REQUEST_NULL;
    r->t0 = sc_exec_clock();
    return r;
}

/* Posts call (which fills r->r); frees r on failure. */
#define POST(call)                                                                    \
    do {                                                                              \
        sc_req *r = new_req(bk, err);                                                 \
        if (!r)                                                                       \
            return SC_ENOMEM;                                                         \
        int rc_ = (call);                                                             \
        if (rc_ != MPI_SUCCESS) {                                                     \
            char b_[MPI_MAX_ERROR_STRING + 1];                                        \
            sc_free(r);                                                               \
            return sc_err(err, SC_EMPI, "mpi: rank %d: %s (%s:%d): %s", bk->rank, #call, \
                          __FILE__, __LINE__, sc_mpi_reason(rc_, b_));                \
        }                                                                             \
        *req = r;                                                                     \
        return SC_OK;                                                                 \
    } while (0)

static int too_big(size_t n) { return n > (size_t)2147483647; }

static sc_status cpu_isend(sc_bk *bk, sc_comm *c, const sc_dbuf *b, size_t bytes, int peer,
                           sc_req **req, sc_error *err)
{
    if (bytes > b->bytes || too_big(bytes))
        return sc_err(err, SC_EINVAL, "cpu: send of %zu bytes from a %zu-byte buffer", bytes,
                      b->bytes);
    POST(MPI_Isend(b->p, (int)bytes, MPI_BYTE, peer, 7, c->c, &r->r));
}

static sc_status cpu_irecv(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t bytes, int peer,
                           sc_req **req, sc_error *err)
{
    if (bytes > b->bytes || too_big(bytes))
        return sc_err(err, SC_EINVAL, "cpu: receive of %zu bytes into a %zu-byte buffer", bytes,
                      b->bytes);
    POST(MPI_Irecv(b->p, (int)bytes, MPI_BYTE, peer, 7, c->c, &r->r));
}

static sc_status cpu_iallreduce(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count, sc_dtype dt,
                                sc_req **req, sc_error *err)
{
    if (count * 4 > b->bytes || too_big(count))
        return sc_err(err, SC_EINVAL, "cpu: allreduce of %zu floats in a %zu-byte buffer", count,
                      b->bytes);
    POST(MPI_Iallreduce(MPI_IN_PLACE, b->p, (int)count, MPI_FLOAT, MPI_SUM, c->c, &r->r));
}

static sc_status cpu_ireducescatter(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count,
                                    sc_dtype dt, sc_req **req, sc_error *err)
{
    if (count * 4 * (size_t)c->size > b->bytes || too_big(count))
        return sc_err(err, SC_EINVAL, "cpu: reduce-scatter of %zu floats per rank in a %zu-byte buffer",
                      count, b->bytes);
    POST(MPI_Ireduce_scatter_block(MPI_IN_PLACE, b->p, (int)count, MPI_FLOAT, MPI_SUM, c->c,
                                   &r->r));
}

static sc_status cpu_iallgather(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count, sc_dtype dt,
                                sc_req **req, sc_error *err)
{
    if (count * 4 * (size_t)c->size > b->bytes || too_big(count))
        return sc_err(err, SC_EINVAL, "cpu: allgather of %zu floats per rank in a %zu-byte buffer",
                      count, b->bytes);
    POST(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->p, (int)count, MPI_FLOAT, c->c,
                        &r->r));
}

static int cpu_req_test(sc_bk *bk, sc_req *r, sc_error *err)
{
    if (r->done)
        return 1;
    int flag = 0;
    int rc = MPI_Test(&r->r, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        char b[MPI_MAX_ERROR_STRING + 1];
        sc_err(err, SC_EMPI, "mpi: rank %d: MPI_Test: %s", bk->rank, sc_mpi_reason(rc, b));
        return -1;
    }
    if (flag) {
        r->done = 1;
        r->t1 = sc_exec_clock();
    }
    return flag;
}

static sc_status poll_until(sc_bk *bk, sc_req *r, double deadline, sc_error *err)
{
    long polls = 0;
    for (;;) {
        int k = cpu_req_test(bk, r, err);
        if (k < 0)
            return err ? err->status : SC_EMPI;
        if (k)
            return SC_OK;
        if (sc_exec_clock() > deadline)
            return sc_err(err, SC_EIO, "timed out");
        sc_exec_relax(&polls);
    }
}

static sc_status cpu_compute_wait_req(sc_bk *bk, sc_req *r, double deadline, sc_error *err)
{
    return r ? poll_until(bk, r, deadline, err) : SC_OK;
}

static sc_status cpu_req_wait(sc_bk *bk, sc_req *r, double deadline, double *t0, double *t1,
                              sc_error *err)
{
    if (!r)
        return SC_OK;
    sc_status st = poll_until(bk, r, deadline, err);
    if (st)
        return st;
    if (t0)
        *t0 = r->t0;
    if (t1)
        *t1 = r->t1;
    sc_free(r);
    return SC_OK;
}

/* Waits for an MPI request with the deadline (host helpers). */
static sc_status wait_mpi(sc_bk *bk, MPI_Request *q, double deadline, sc_error *err)
{
    sc_req r = {.r = *q};
    sc_status st = poll_until(bk, &r, deadline, err);
    *q = r.r;
    return st;
}

static sc_status cpu_barrier(sc_bk *bk, double deadline, sc_error *err)
{
    MPI_Request q;
    MPI_TRY(MPI_Ibarrier(MPI_COMM_WORLD, &q));
    return wait_mpi(bk, &q, deadline, err);
}

static sc_status cpu_gather_host(sc_bk *bk, const void *send, size_t len, void *recv, int root,
                                 double deadline, sc_error *err)
{
    MPI_Request q;
    if (too_big(len))
        return sc_err(err, SC_EINVAL, "cpu: gather of %zu bytes is too large", len);
    MPI_TRY(MPI_Igather(send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE, root,
                        MPI_COMM_WORLD, &q));
    return wait_mpi(bk, &q, deadline, err);
}

static sc_status cpu_bcast_host(sc_bk *bk, void *buf, size_t len, int root, double deadline,
                                sc_error *err)
{
    MPI_Request q;
    if (too_big(len))
        return sc_err(err, SC_EINVAL, "cpu: broadcast of %zu bytes is too large", len);
    MPI_TRY(MPI_Ibcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD, &q));
    return wait_mpi(bk, &q, deadline, err);
}
#undef bk_rank_


static sc_status cpu_clock_offset(sc_bk *bk, int peer, int rounds, double deadline,
                                  double *offset, sc_error *err)
{
    return sc_mpi_clock_offset(bk->rank, peer, rounds, deadline, offset, err);
}

/* Cristian's algorithm over MPI_COMM_WORLD with tag 99 (shared with the
 * CUDA shim). */
sc_status sc_mpi_clock_offset(int me, int peer, int rounds, double deadline, double *offset,
                              sc_error *err)
{
    int bk_rank_ = me;
    double best_rtt = 1e30, best = 0;
    *offset = 0;
    for (int i = 0; i < rounds; i++) {
        MPI_Request q;
        double t;
        if (me == 0) {
            double t0 = sc_exec_clock();
            MPI_TRY(MPI_Isend(&t0, 1, MPI_DOUBLE, peer, 99, MPI_COMM_WORLD, &q));
            sc_status st = sc_mpi_wait(me, &q, deadline, err);
            if (st)
                return st;
            MPI_TRY(MPI_Irecv(&t, 1, MPI_DOUBLE, peer, 99, MPI_COMM_WORLD, &q));
            st = sc_mpi_wait(me, &q, deadline, err);
            if (st)
                return st;
            double t1 = sc_exec_clock();
            if (t1 - t0 < best_rtt) {
                best_rtt = t1 - t0;
                best = t - (t0 + t1) / 2;
            }
        } else {
            MPI_TRY(MPI_Irecv(&t, 1, MPI_DOUBLE, 0, 99, MPI_COMM_WORLD, &q));
            sc_status st = sc_mpi_wait(me, &q, deadline, err);
            if (st)
                return st;
            t = sc_exec_clock();
            MPI_TRY(MPI_Isend(&t, 1, MPI_DOUBLE, 0, 99, MPI_COMM_WORLD, &q));
            st = sc_mpi_wait(me, &q, deadline, err);
            if (st)
                return st;
        }
    }
    if (me == 0)
        *offset = best;
    return SC_OK;
}

/* Waits for one MPI request, polling with a deadline (shared with the CUDA shim). */
sc_status sc_mpi_wait(int me, MPI_Request *q, double deadline, sc_error *err)
{
    long polls = 0;
    for (;;) {
        int flag = 0, rc = MPI_Test(q, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            char b[MPI_MAX_ERROR_STRING + 1];
            return sc_err(err, SC_EMPI, "mpi: rank %d: MPI_Test: %s", me, sc_mpi_reason(rc, b));
        }
        if (flag)
            return SC_OK;
        if (sc_exec_clock() > deadline)
            return sc_err(err, SC_EIO, "timed out");
        sc_exec_relax(&polls);
    }
}

const sc_backend sc_backend_cpu = {
    .name = "cpu",
    .desc = "OpenBLAS sgemm (fp32, one thread per rank) and MPI",
    .available = 1,
    .async = 0,
    .init = cpu_init,
    .finalize = cpu_finalize,
    .abort = cpu_abort,
    .rank = cpu_rank,
    .size = cpu_size,
    .compute_dtype = cpu_dtype,
    .device_name = cpu_device,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .size_of = cpu_size_of,
    .fill = cpu_fill,
    .fill_uniform = cpu_fill_uniform,
    .provenance = cpu_provenance,
    .checksum = cpu_checksum,
    .gemm = cpu_gemm,
    .memop = cpu_memop,
    .sync = cpu_sync,
    .epoch = cpu_epoch,
    .now = cpu_now,
    .ev_new = cpu_ev_new,
    .ev_free = cpu_ev_free,
    .ev_record = cpu_ev_record,
    .ev_time = cpu_ev_time,
    .world = cpu_world,
    .comm_split = cpu_split,
    .comm_free = cpu_comm_free,
    .comm_rank = cpu_comm_rank,
    .comm_size = cpu_comm_size,
    .isend = cpu_isend,
    .irecv = cpu_irecv,
    .iallreduce = cpu_iallreduce,
    .ireducescatter = cpu_ireducescatter,
    .iallgather = cpu_iallgather,
    .req_test = cpu_req_test,
    .compute_wait_req = cpu_compute_wait_req,
    .req_wait = cpu_req_wait,
    .barrier = cpu_barrier,
    .gather_host = cpu_gather_host,
    .bcast_host = cpu_bcast_host,
    .clock_offset = cpu_clock_offset,
};

#else /* !SC_HAVE_MPI */

static sc_status cpu_init_none(const sc_bk_opts *o, sc_bk **out, sc_error *err)
{
    *out = NULL;
    return sc_err(err, SC_ENOTSUP,
                  "cpu backend: built without MPI (install OpenMPI and rebuild with USE_MPI=yes)");
}

const sc_backend sc_backend_cpu = {
    .name = "cpu",
    .desc = "OpenBLAS sgemm and MPI (built without MPI: unavailable)",
    .available = 0,
    .init = cpu_init_none,
};
#endif
