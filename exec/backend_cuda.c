/* backend_cuda.c - the CUDA backend: cuBLAS GEMMs on tensor cores in the
 * plan's dtype (cublasGemmEx / cublasGemmStridedBatchedEx with
 * CUBLAS_COMPUTE_32F; tf32 with CUBLAS_COMPUTE_32F_FAST_TF32; fp8 runs as
 * bf16), NCCL point-to-point (grouped ncclSend/ncclRecv) and collectives,
 * one CUDA stream for compute and one per communicator, timings from CUDA
 * events. MPI starts the ranks, broadcasts the ncclUniqueId and carries the
 * host-side helpers (shared with the CPU backend, backend_cpu.c). Where MPI
 * is absent, or when the calling thread is bound to a team (team.h), the
 * ranks are threads of one process, one per GPU (device = rank unless
 * opts->device says otherwise): the team carries the host-side helpers and
 * broadcasts the ncclUniqueId that thread 0 made; every thread then calls
 * ncclCommInitRank with its rank (comm splits stay ncclCommSplit), and the
 * clock offset is 0 (one CLOCK_MONOTONIC). Built without MPI and called by
 * an unbound thread, init makes a team of one (one GPU, e.g. bench gemm).
 * The kernels (fill, memop) are in backend_cuda.cu; cuBLAS, NCCL and the
 * runtime are C APIs, so everything else stays C.
 *
 * Contracts are backend.h's. Specifics: compute is asynchronous (async = 1);
 * a request is a pair of events around the NCCL call on its communicator's
 * stream, polled with cudaEventQuery and ncclCommGetAsyncError; every
 * communication first makes its stream wait for an event recorded on the
 * compute stream. NCCL communicators are blocking (ncclCommInitRank,
 * ncclCommSplit): a peer that dies during setup hangs setup (the run itself
 * is guarded by deadlines). In a team, a thread whose init fails before
 * the id broadcast marks the team failed (sc_team_fail) so the others stop
 * waiting at once; abort ends the process (_Exit), as MPI_Abort ends every
 * rank.
 *
 * Built without CUDA the table is present with available = 0 and init fails
 * with "built without CUDA".
 */
#include "backend.h"
#include "exec_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(SC_HAVE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#ifdef SC_HAVE_MPI
#include <mpi.h>
#endif
#include "team.h"

/* backend_cuda.cu */
int sc_cuda_fill(void *p, size_t bytes, uint64_t seed, void *stream);
int sc_cuda_fill_uniform(void *p, size_t count, int kind, uint64_t seed, void *stream);
int sc_cuda_memop(void *dst, const void *src, size_t bytes, void *stream);

/* Return an error naming the rank, the call and its library's reason when
 * call does not return ok. */
#define LIB_TRY(type, ok, code, lib, reason, call)                                      \
    do {                                                                                \
        type e_ = (call);                                                               \
        if (e_ != (ok))                                                                 \
            return sc_err(err, code, lib ": rank %d: %s (%s:%d): %s", bk_rank_, #call,  \
                          __FILE__, __LINE__, reason(e_));                              \
    } while (0)
#define CUDA_TRY(call) LIB_TRY(cudaError_t, cudaSuccess, SC_ECUDA, "cuda", cudaGetErrorString, call)
#define NCCL_TRY(call) LIB_TRY(ncclResult_t, ncclSuccess, SC_ENCCL, "nccl", ncclGetErrorString, call)
#define CUBLAS_TRY(call)                                                                \
    LIB_TRY(cublasStatus_t, CUBLAS_STATUS_SUCCESS, SC_ECUDA, "cublas", cublasGetStatusString, call)

#define MAX_COMMS 1024

struct sc_dbuf {
    size_t bytes;
    void *p;
};
struct sc_comm {
    ncclComm_t nc;
    cudaStream_t st;
    int rank, size, own;
};
struct sc_req {
    cudaEvent_t e0, e1;
    sc_comm *c;
};
struct sc_ev {
    cudaEvent_t e;
};
struct sc_bk {
    int rank, size, started_mpi, dev;
    sc_team *team;      /* NULL: MPI; else the threads' team (own_team: made by init) */
    int own_team;
    cudaStream_t cs;
    cublasHandle_t cb;
    sc_comm world;
    sc_comm *comms[MAX_COMMS]; /* every live communicator, for sync */
    int ncomms;
    cudaEvent_t anchor, tmp;
    double anchor_host;
    char name[320];
};

#define bk_rank_ (bk ? bk->rank : -1)

static sc_status cu_init_(const sc_bk_opts *o, sc_bk **out, sc_error *err)
{
    sc_bk *bk = NULL;
    int trank = -1, local = 0;
    sc_team *team = sc_team_bound(&trank);
    *out = NULL;
    if (team) {
        /* one thread per GPU: the launcher's team */
        bk = sc_calloc(1, sizeof *bk);
        if (!bk)
            return sc_err(err, SC_ENOMEM, "cuda: out of memory");
        *out = bk;
        bk->team = team;
        bk->rank = local = trank;
        bk->size = sc_team_size(team);
    } else {
#ifdef SC_HAVE_MPI
        int inited = 0, provided, started = 0;
        MPI_TRY(MPI_Initialized(&inited));
        if (!inited) {
            MPI_TRY(MPI_Init_thread(o ? o->argc : NULL, o ? o->argv : NULL, MPI_THREAD_SINGLE,
                                    &provided));
            started = 1;
        }
        bk = sc_calloc(1, sizeof *bk);
        if (!bk)
            return sc_err(err, SC_ENOMEM, "cuda: out of memory");
        *out = bk; /* so finalize runs on error */
        bk->started_mpi = started;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &bk->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &bk->size);
        /* node-local rank picks the device */
        MPI_Comm node;
        MPI_TRY(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, bk->rank,
                                    MPI_INFO_NULL, &node));
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
#else
        /* no MPI and no team: one rank on one GPU, a team of one */
        sc_status st0 = sc_team_new(1, &team, err);
        if (st0)
            return st0;
        bk = sc_calloc(1, sizeof *bk);
        if (!bk) {
            sc_team_free(team);
            return sc_err(err, SC_ENOMEM, "cuda: out of memory");
        }
        *out = bk;
        bk->team = team;
        bk->own_team = 1;
        bk->rank = 0;
        bk->size = 1;
#endif
    }
    int ndev = 0;
    CUDA_TRY(cudaGetDeviceCount(&ndev));
    if (ndev < 1)
        return sc_err(err, SC_ECUDA, "cuda: rank %d: no CUDA device visible", bk->rank);
    if (bk->team && bk->size > ndev && !(o && o->device >= 0))
        return sc_err(err, SC_EINVAL,
                      "cuda: rank %d: %d ranks run as threads, one per GPU, but %d CUDA %s "
                      "visible", bk->rank, bk->size, ndev, ndev == 1 ? "device is" : "devices are");
    bk->dev = o && o->device >= 0 ? o->device : local % ndev;
    CUDA_TRY(cudaSetDevice(bk->dev));
    struct cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, bk->dev));
    snprintf(bk->name, sizeof bk->name, "%s (sm_%d%d), cuBLAS + NCCL %d.%d", prop.name,
             prop.major, prop.minor, NCCL_MAJOR, NCCL_MINOR);
    CUDA_TRY(cudaStreamCreateWithFlags(&bk->cs, cudaStreamNonBlocking));
    CUDA_TRY(cudaEventCreate(&bk->anchor));
    CUDA_TRY(cudaEventCreateWithFlags(&bk->tmp, cudaEventDisableTiming));
    CUBLAS_TRY(cublasCreate(&bk->cb));
    CUBLAS_TRY(cublasSetStream(bk->cb, bk->cs));
    /* the world communicator: rank 0's unique id over MPI or the team */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (bk->rank == 0)
        NCCL_TRY(ncclGetUniqueId(&id));
    sc_status st;
    if (bk->team) {
        st = sc_team_bcast(bk->team, bk->rank, &id, sizeof id, 0, sc_exec_clock() + 300, err);
    } else {
#ifdef SC_HAVE_MPI
        MPI_Request q;
        MPI_TRY(MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD, &q));
        st = sc_mpi_wait(bk->rank, &q, sc_exec_clock() + 300, err);
#else
        st = sc_err(err, SC_ENOTSUP, "cuda: rank %d: no MPI and no team", bk->rank);
#endif
    }
    if (st)
        return st;
    NCCL_TRY(ncclCommInitRank(&bk->world.nc, bk->size, id, bk->rank));
    CUDA_TRY(cudaStreamCreateWithFlags(&bk->world.st, cudaStreamNonBlocking));
    bk->world.rank = bk->rank;
    bk->world.size = bk->size;
    bk->comms[bk->ncomms++] = &bk->world;
    bk->anchor_host = sc_exec_clock();
    CUDA_TRY(cudaEventRecord(bk->anchor, bk->cs));
    return SC_OK;
}

static void cu_finalize(sc_bk *bk);

static sc_status cu_init(const sc_bk_opts *o, sc_bk **out, sc_error *err)
{
    int trank = -1;
    sc_team *team = sc_team_bound(&trank);
    sc_status st = cu_init_(o, out, err);
    /* in a team, peers waiting for this thread (the id broadcast) stop now */
    if (st && team)
        sc_team_fail(team, trank, err ? err->msg : "cuda backend init failed");
    /* without MPI nothing outlives a failed init (the MPI path keeps its
     * context for the caller, as before) */
    if (st && *out && (*out)->team) {
        cu_finalize(*out);
        *out = NULL;
    }
    return st;
}

static void cu_finalize(sc_bk *bk)
{
    if (!bk)
        return;
    cudaDeviceSynchronize();
    for (int i = 0; i < bk->ncomms; i++) {
        if (bk->comms[i]->nc)
            ncclCommDestroy(bk->comms[i]->nc);
        if (bk->comms[i]->st)
            cudaStreamDestroy(bk->comms[i]->st);
        if (bk->comms[i]->own)
            sc_free(bk->comms[i]);
    }
    if (bk->cb)
        cublasDestroy(bk->cb);
    if (bk->cs)
        cudaStreamDestroy(bk->cs);
    if (bk->own_team)
        sc_team_free(bk->team);
#ifdef SC_HAVE_MPI
    int fin = 0;
    if (bk->started_mpi && MPI_Finalized(&fin) == MPI_SUCCESS && !fin)
        MPI_Finalize();
#endif
    sc_free(bk);
}

static void cu_abort(sc_bk *bk, int code)
{
    fflush(stdout);
    fflush(stderr);
#ifdef SC_HAVE_MPI
    if (!bk || !bk->team)
        MPI_Abort(MPI_COMM_WORLD, code);
#endif
    _Exit(code); /* threads of a team: the process is every rank */
}

static int cu_rank(const sc_bk *bk) { return bk->rank; }
static int cu_size(const sc_bk *bk) { return bk->size; }
static sc_dtype cu_dtype(const sc_bk *bk, sc_dtype want) { return want == SC_FP8 ? SC_BF16 : want; }
static const char *cu_device(const sc_bk *bk) { return bk->name; }

static sc_dbuf *cu_alloc(sc_bk *bk, size_t bytes, sc_error *err)
{
    sc_dbuf *b = sc_calloc(1, sizeof *b);
    if (!b) {
        sc_err(err, SC_ENOMEM, "cuda: out of memory");
        return NULL;
    }
    cudaError_t e = cudaMalloc(&b->p, bytes ? bytes : 64);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(b->p, 0, bytes ? bytes : 64, bk->cs);
    if (e != cudaSuccess) {
        sc_err(err, SC_ENOFIT, "cuda: rank %d: cudaMalloc of %zu bytes: %s", bk->rank, bytes,
               cudaGetErrorString(e));
        sc_free(b);
        return NULL;
    }
    b->bytes = bytes;
    return b;
}

static void cu_free(sc_bk *bk, sc_dbuf *b)
{
    if (!b)
        return;
    cudaFree(b->p);
    sc_free(b);
}

static size_t cu_size_of(const sc_dbuf *b) { return b ? b->bytes : 0; }

static sc_status cu_fill(sc_bk *bk, sc_dbuf *b, size_t bytes, uint64_t seed, sc_error *err)
{
    if (bytes > b->bytes)
        return sc_err(err, SC_EINVAL, "cuda: fill of %zu bytes into a %zu-byte buffer", bytes,
                      b->bytes);
    CUDA_TRY((cudaError_t)sc_cuda_fill(b->p, bytes, seed, bk->cs));
    return SC_OK;
}

static sc_status cu_fill_uniform(sc_bk *bk, sc_dbuf *b, size_t count, sc_dtype dt,
                                 uint64_t seed, sc_error *err)
{
    sc_dtype cdt = cu_dtype(bk, dt);
    size_t eb = sc_backend_elem_bytes(cdt);
    if (count > b->bytes / eb)
        return sc_err(err, SC_EINVAL, "cuda: fill of %zu %s elements into a %zu-byte buffer",
                      count, sc_dtype_name(cdt), b->bytes);
    int kind = cdt == SC_FP16 ? 1 : cdt == SC_BF16 ? 2 : 0;
    CUDA_TRY((cudaError_t)sc_cuda_fill_uniform(b->p, count, kind, seed, bk->cs));
    return SC_OK;
}

/* The host's record; cuBLAS instead of OpenBLAS (the GEMMs run there), NCCL,
 * the device, the driver and the runtime; MPI when it starts the ranks. */
static void cu_provenance(sc_bk *bk, sc_provenance *out)
{
    sc_backend_host_provenance(out);
    out->blas_core[0] = '\0';
    out->blas_threads = 0;
    int v = 0;
    if (bk->cb && cublasGetVersion(bk->cb, &v) == CUBLAS_STATUS_SUCCESS)
        snprintf(out->blas, sizeof out->blas, "cuBLAS %d.%d.%d", v / 10000, v / 100 % 100,
                 v % 100);
    else
        out->blas[0] = '\0';
    if (ncclGetVersion(&v) == ncclSuccess)
        snprintf(out->nccl, sizeof out->nccl, "NCCL %d.%d.%d", v / 10000, v / 100 % 100,
                 v % 100);
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, bk->dev) == cudaSuccess)
        snprintf(out->cuda_device, sizeof out->cuda_device, "%.80s (sm_%d%d, %d SMs, %.0f GiB)",
                 prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                 (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    if (cudaDriverGetVersion(&v) == cudaSuccess)
        snprintf(out->cuda_driver, sizeof out->cuda_driver, "%d.%d", v / 1000, v % 1000 / 10);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess)
        snprintf(out->cuda_runtime, sizeof out->cuda_runtime, "%d.%d", v / 1000, v % 1000 / 10);
#ifdef SC_HAVE_MPI
    if (!bk->team) {
        char mv[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        if (MPI_Get_library_version(mv, &len) == MPI_SUCCESS) {
            mv[strcspn(mv, ",\n")] = '\0';
            snprintf(out->mpi, sizeof out->mpi, "%.127s", mv);
        }
    }
#endif
}

static sc_status cu_checksum(sc_bk *bk, const sc_dbuf *b, size_t bytes, uint64_t *out,
                             sc_error *err)
{
    if (bytes > b->bytes)
        return sc_err(err, SC_EINVAL, "cuda: checksum of %zu bytes of a %zu-byte buffer", bytes,
                      b->bytes);
    void *h = malloc(bytes ? bytes : 1);
    if (!h)
        return sc_err(err, SC_ENOMEM, "cuda: out of memory");
    cudaError_t e = cudaMemcpyAsync(h, b->p, bytes, cudaMemcpyDeviceToHost, bk->cs);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(bk->cs);
    if (e != cudaSuccess) {
        free(h);
        return sc_err(err, SC_ECUDA, "cuda: rank %d: checksum copy: %s", bk->rank,
                      cudaGetErrorString(e));
    }
    *out = sc_backend_fnv(SC_FNV_INIT, h, bytes);
    free(h);
    return SC_OK;
}

static cudaDataType_t cuda_type(sc_dtype dt)
{
    switch (dt) {
    case SC_FP16:
        return CUDA_R_16F;
    case SC_BF16:
    case SC_FP8:
        return CUDA_R_16BF;
    default:
        return CUDA_R_32F;
    }
}

static sc_status cu_gemm(sc_bk *bk, sc_dtype dt, int m, int n, int k, int batch,
                         const sc_dbuf *A, const sc_dbuf *B, sc_dbuf *C, sc_error *err)
{
    sc_dtype c = cu_dtype(bk, dt);
    size_t eb = sc_backend_elem_bytes(c);
    long long mk = (long long)m * k, kn = (long long)k * n, mn = (long long)m * n;
    if (m < 1 || n < 1 || k < 1 || batch < 1 || A->bytes < eb * mk * batch ||
        B->bytes < eb * kn * batch || C->bytes < eb * mn * batch)
        return sc_err(err, SC_EINVAL, "cuda: rank %d: gemm %dx%dx%d (batch %d) does not fit its buffers",
                      bk->rank, m, n, k, batch);
    cudaDataType_t t = cuda_type(c);
    cublasComputeType_t ct = c == SC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const float one = 1.0f, zero = 0.0f;
    /* row-major C = A·B is column-major C^T = B^T·A^T */
    if (batch == 1)
        CUBLAS_TRY(cublasGemmEx(bk->cb, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B->p, t, n,
                                A->p, t, k, &zero, C->p, t, n, ct, CUBLAS_GEMM_DEFAULT));
    else
        CUBLAS_TRY(cublasGemmStridedBatchedEx(bk->cb, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                              B->p, t, n, kn, A->p, t, k, mk, &zero, C->p, t, n,
                                              mn, batch, ct, CUBLAS_GEMM_DEFAULT));
    return SC_OK;
}

static sc_status cu_memop(sc_bk *bk, sc_dbuf *dst, const sc_dbuf *src, size_t bytes,
                          sc_error *err)
{
    if (bytes > dst->bytes || bytes > src->bytes)
        return sc_err(err, SC_EINVAL, "cuda: memop of %zu bytes exceeds its buffers", bytes);
    CUDA_TRY((cudaError_t)sc_cuda_memop(dst->p, src->p, bytes, bk->cs));
    return SC_OK;
}

static sc_status cu_sync(sc_bk *bk, double deadline, sc_error *err)
{
    long polls = 0;
    for (;;) {
        int busy = 0;
        cudaError_t e = cudaStreamQuery(bk->cs);
        for (int i = 0; i < bk->ncomms && e == cudaSuccess; i++) {
            e = cudaStreamQuery(bk->comms[i]->st);
            ncclResult_t ar = ncclSuccess;
            if (bk->comms[i]->nc && ncclCommGetAsyncError(bk->comms[i]->nc, &ar) == ncclSuccess &&
                ar != ncclSuccess && ar != ncclInProgress)
                return sc_err(err, SC_ENCCL, "nccl: rank %d: %s", bk->rank, ncclGetErrorString(ar));
        }
        if (e == cudaErrorNotReady)
            busy = 1;
        else if (e != cudaSuccess)
            return sc_err(err, SC_ECUDA, "cuda: rank %d: cudaStreamQuery: %s", bk->rank,
                          cudaGetErrorString(e));
        if (!busy)
            return SC_OK;
        if (sc_exec_clock() > deadline)
            return sc_err(err, SC_EIO, "timed out");
        sc_exec_relax(&polls);
    }
}

static sc_status cu_epoch(sc_bk *bk, sc_error *err)
{
    CUDA_TRY(cudaDeviceSynchronize());
    CUDA_TRY(cudaEventRecord(bk->anchor, bk->cs));
    CUDA_TRY(cudaEventSynchronize(bk->anchor));
    bk->anchor_host = sc_exec_clock();
    return SC_OK;
}

static double cu_now(const sc_bk *bk) { return sc_exec_clock(); }

static sc_ev *cu_ev_new(sc_bk *bk, sc_error *err)
{
    sc_ev *e = sc_calloc(1, sizeof *e);
    if (!e) {
        sc_err(err, SC_ENOMEM, "cuda: out of memory");
        return NULL;
    }
    cudaError_t r = cudaEventCreate(&e->e);
    if (r != cudaSuccess) {
        sc_err(err, SC_ECUDA, "cuda: rank %d: cudaEventCreate: %s", bk->rank, cudaGetErrorString(r));
        sc_free(e);
        return NULL;
    }
    return e;
}

static void cu_ev_free(sc_bk *bk, sc_ev *e)
{
    if (!e)
        return;
    cudaEventDestroy(e->e);
    sc_free(e);
}

static sc_status cu_ev_record(sc_bk *bk, sc_ev *e, sc_error *err)
{
    CUDA_TRY(cudaEventRecord(e->e, bk->cs));
    return SC_OK;
}

static sc_status event_time(sc_bk *bk, cudaEvent_t e, double *t, sc_error *err)
{
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, bk->anchor, e));
    *t = bk->anchor_host + ms * 1e-3;
    return SC_OK;
}

static sc_status cu_ev_time(sc_bk *bk, sc_ev *e, double *t, sc_error *err)
{
    return event_time(bk, e->e, t, err);
}

static sc_comm *cu_world(sc_bk *bk) { return &bk->world; }

static sc_status cu_split(sc_bk *bk, int color, int key, sc_comm **out, sc_error *err)
{
    ncclComm_t nc = NULL;
    *out = NULL;
    if (bk->ncomms >= MAX_COMMS)
        return sc_err(err, SC_EINVAL, "cuda: rank %d: more than %d communicators", bk->rank,
                      MAX_COMMS);
    NCCL_TRY(ncclCommSplit(bk->world.nc, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &nc, NULL));
    if (color < 0 || !nc)
        return SC_OK;
    sc_comm *c = sc_calloc(1, sizeof *c);
    if (!c) {
        ncclCommDestroy(nc);
        return sc_err(err, SC_ENOMEM, "cuda: out of memory");
    }
    c->nc = nc;
    c->own = 1;
    ncclCommUserRank(nc, &c->rank);
    ncclCommCount(nc, &c->size);
    CUDA_TRY(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking));
    bk->comms[bk->ncomms++] = c;
    *out = c;
    return SC_OK;
}

static void cu_comm_free(sc_bk *bk, sc_comm *c)
{
    if (!c || !c->own)
        return;
    for (int i = 0; i < bk->ncomms; i++)
        if (bk->comms[i] == c) {
            bk->comms[i] = bk->comms[--bk->ncomms];
            break;
        }
    ncclCommDestroy(c->nc);
    cudaStreamDestroy(c->st);
    sc_free(c);
}

static int cu_comm_rank(const sc_comm *c) { return c->rank; }
static int cu_comm_size(const sc_comm *c) { return c->size; }

/* A request on c's stream, after the compute queued so far; e0 recorded. */
static sc_status begin(sc_bk *bk, sc_comm *c, sc_req **out, sc_error *err)
{
    sc_req *r = sc_calloc(1, sizeof *r);
    if (!r)
        return sc_err(err, SC_ENOMEM, "cuda: out of memory");
    r->c = c;
    cudaError_t e = cudaEventCreate(&r->e0);
    if (e == cudaSuccess)
        e = cudaEventCreate(&r->e1);
    if (e == cudaSuccess)
        e = cudaEventRecord(bk->tmp, bk->cs);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(c->st, bk->tmp, 0);
    if (e == cudaSuccess)
        e = cudaEventRecord(r->e0, c->st);
    if (e != cudaSuccess) {
        sc_free(r);
        return sc_err(err, SC_ECUDA, "cuda: rank %d: events: %s", bk->rank, cudaGetErrorString(e));
    }
    *out = r;
    return SC_OK;
}

static sc_status finish(sc_bk *bk, sc_req *r, ncclResult_t nr, const char *what, sc_req **req,
                        sc_error *err)
{
    if (nr != ncclSuccess) {
        cudaEventDestroy(r->e0);
        cudaEventDestroy(r->e1);
        sc_free(r);
        return sc_err(err, SC_ENCCL, "nccl: rank %d: %s: %s", bk->rank, what, ncclGetErrorString(nr));
    }
    CUDA_TRY(cudaEventRecord(r->e1, r->c->st));
    *req = r;
    return SC_OK;
}

static ncclDataType_t nccl_type(sc_dtype dt)
{
    switch (dt) {
    case SC_FP16:
        return ncclFloat16;
    case SC_BF16:
    case SC_FP8:
        return ncclBfloat16;
    default:
        return ncclFloat32;
    }
}

/* One grouped ncclSend or ncclRecv of bytes with peer on c's stream. */
static sc_status cu_p2p(sc_bk *bk, sc_comm *c, void *p, size_t cap, size_t bytes, int peer,
                        int send, sc_req **req, sc_error *err)
{
    sc_req *r;
    if (bytes > cap)
        return sc_err(err, SC_EINVAL, "cuda: %s of %zu bytes %s a %zu-byte buffer",
                      send ? "send" : "receive", bytes, send ? "from" : "into", cap);
    sc_status st = begin(bk, c, &r, err);
    if (st)
        return st;
    ncclResult_t nr = ncclGroupStart();
    if (nr == ncclSuccess)
        nr = send ? ncclSend(p, bytes, ncclInt8, peer, c->nc, c->st)
                  : ncclRecv(p, bytes, ncclInt8, peer, c->nc, c->st);
    ncclResult_t ne = ncclGroupEnd();
    return finish(bk, r, nr != ncclSuccess ? nr : ne, send ? "ncclSend" : "ncclRecv", req, err);
}

static sc_status cu_isend(sc_bk *bk, sc_comm *c, const sc_dbuf *b, size_t bytes, int peer,
                          sc_req **req, sc_error *err)
{
    return cu_p2p(bk, c, b->p, b->bytes, bytes, peer, 1, req, err);
}

static sc_status cu_irecv(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t bytes, int peer,
                          sc_req **req, sc_error *err)
{
    return cu_p2p(bk, c, b->p, b->bytes, bytes, peer, 0, req, err);
}

static sc_status cu_iallreduce(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count, sc_dtype dt,
                               sc_req **req, sc_error *err)
{
    sc_dtype cd = cu_dtype(bk, dt);
    if (count * sc_backend_elem_bytes(cd) > b->bytes)
        return sc_err(err, SC_EINVAL, "cuda: allreduce of %zu elements exceeds its buffer", count);
    sc_req *r;
    sc_status st = begin(bk, c, &r, err);
    if (st)
        return st;
    return finish(bk, r, ncclAllReduce(b->p, b->p, count, nccl_type(cd), ncclSum, c->nc, c->st),
                  "ncclAllReduce", req, err);
}

static sc_status cu_ireducescatter(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count,
                                   sc_dtype dt, sc_req **req, sc_error *err)
{
    sc_dtype cd = cu_dtype(bk, dt);
    size_t eb = sc_backend_elem_bytes(cd);
    if (count * eb * (size_t)c->size > b->bytes)
        return sc_err(err, SC_EINVAL, "cuda: reduce-scatter of %zu elements per rank exceeds its buffer", count);
    sc_req *r;
    sc_status st = begin(bk, c, &r, err);
    if (st)
        return st;
    char *p = b->p;
    return finish(bk, r,
                  ncclReduceScatter(p, p + (size_t)c->rank * count * eb, count, nccl_type(cd),
                                    ncclSum, c->nc, c->st),
                  "ncclReduceScatter", req, err);
}

static sc_status cu_iallgather(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count, sc_dtype dt,
                               sc_req **req, sc_error *err)
{
    sc_dtype cd = cu_dtype(bk, dt);
    size_t eb = sc_backend_elem_bytes(cd);
    if (count * eb * (size_t)c->size > b->bytes)
        return sc_err(err, SC_EINVAL, "cuda: allgather of %zu elements per rank exceeds its buffer", count);
    sc_req *r;
    sc_status st = begin(bk, c, &r, err);
    if (st)
        return st;
    char *p = b->p;
    return finish(bk, r,
                  ncclAllGather(p + (size_t)c->rank * count * eb, p, count, nccl_type(cd), c->nc,
                                c->st),
                  "ncclAllGather", req, err);
}

static int cu_req_test(sc_bk *bk, sc_req *r, sc_error *err)
{
    cudaError_t e = cudaEventQuery(r->e1);
    if (e == cudaSuccess)
        return 1;
    if (e != cudaErrorNotReady) {
        sc_err(err, SC_ECUDA, "cuda: rank %d: cudaEventQuery: %s", bk->rank, cudaGetErrorString(e));
        return -1;
    }
    ncclResult_t ar = ncclSuccess;
    if (ncclCommGetAsyncError(r->c->nc, &ar) == ncclSuccess && ar != ncclSuccess &&
        ar != ncclInProgress) {
        sc_err(err, SC_ENCCL, "nccl: rank %d: %s", bk->rank, ncclGetErrorString(ar));
        return -1;
    }
    return 0;
}

static sc_status cu_compute_wait_req(sc_bk *bk, sc_req *r, double deadline, sc_error *err)
{
    if (!r)
        return SC_OK;
    CUDA_TRY(cudaStreamWaitEvent(bk->cs, r->e1, 0));
    return SC_OK;
}

static sc_status cu_req_wait(sc_bk *bk, sc_req *r, double deadline, double *t0, double *t1,
                             sc_error *err)
{
    if (!r)
        return SC_OK;
    long polls = 0;
    for (;;) {
        int k = cu_req_test(bk, r, err);
        if (k < 0)
            return err ? err->status : SC_ECUDA;
        if (k)
            break;
        if (sc_exec_clock() > deadline)
            return sc_err(err, SC_EIO, "timed out");
        sc_exec_relax(&polls);
    }
    sc_status st = SC_OK;
    if (t0)
        st = event_time(bk, r->e0, t0, err);
    if (!st && t1)
        st = event_time(bk, r->e1, t1, err);
    cudaEventDestroy(r->e0);
    cudaEventDestroy(r->e1);
    sc_free(r);
    return st;
}

#undef bk_rank_

static sc_status cu_barrier(sc_bk *bk, double deadline, sc_error *err)
{
    if (bk->team)
        return sc_team_barrier(bk->team, bk->rank, deadline, err);
#ifdef SC_HAVE_MPI
    int bk_rank_ = bk->rank;
    MPI_Request q;
    MPI_TRY(MPI_Ibarrier(MPI_COMM_WORLD, &q));
    return sc_mpi_wait(bk->rank, &q, deadline, err);
#else
    return sc_err(err, SC_ENOTSUP, "cuda: rank %d: no MPI and no team", bk->rank);
#endif
}

static sc_status cu_gather_host(sc_bk *bk, const void *send, size_t len, void *recv, int root,
                                double deadline, sc_error *err)
{
    if (bk->team)
        return sc_team_gather(bk->team, bk->rank, send, len, recv, root, deadline, err);
#ifdef SC_HAVE_MPI
    int bk_rank_ = bk->rank;
    MPI_Request q;
    if (len > 2147483647u)
        return sc_err(err, SC_EINVAL, "cuda: gather of %zu bytes is too large", len);
    MPI_TRY(MPI_Igather(send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE, root,
                        MPI_COMM_WORLD, &q));
    return sc_mpi_wait(bk->rank, &q, deadline, err);
#else
    return sc_err(err, SC_ENOTSUP, "cuda: rank %d: no MPI and no team", bk->rank);
#endif
}

static sc_status cu_bcast_host(sc_bk *bk, void *buf, size_t len, int root, double deadline,
                               sc_error *err)
{
    if (bk->team)
        return sc_team_bcast(bk->team, bk->rank, buf, len, root, deadline, err);
#ifdef SC_HAVE_MPI
    int bk_rank_ = bk->rank;
    MPI_Request q;
    if (len > 2147483647u)
        return sc_err(err, SC_EINVAL, "cuda: broadcast of %zu bytes is too large", len);
    MPI_TRY(MPI_Ibcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD, &q));
    return sc_mpi_wait(bk->rank, &q, deadline, err);
#else
    return sc_err(err, SC_ENOTSUP, "cuda: rank %d: no MPI and no team", bk->rank);
#endif
}

static sc_status cu_clock_offset(sc_bk *bk, int peer, int rounds, double deadline,
                                 double *offset, sc_error *err)
{
    if (bk->team) /* threads of one process share CLOCK_MONOTONIC: 0 */
        return sc_team_clock_offset(bk->team, bk->rank, peer, offset, err);
#ifdef SC_HAVE_MPI
    return sc_mpi_clock_offset(bk->rank, peer, rounds, deadline, offset, err);
#else
    return sc_err(err, SC_ENOTSUP, "cuda: rank %d: no MPI and no team", bk->rank);
#endif
}

const sc_backend sc_backend_cuda = {
    .name = "cuda",
#ifdef SC_HAVE_MPI
    .desc = "cuBLAS on tensor cores in the plan's dtype, NCCL, MPI",
#else
    .desc = "cuBLAS on tensor cores in the plan's dtype, NCCL, one thread per GPU (no MPI)",
#endif
    .available = 1,
    .async = 1,
    .init = cu_init,
    .finalize = cu_finalize,
    .abort = cu_abort,
    .rank = cu_rank,
    .size = cu_size,
    .compute_dtype = cu_dtype,
    .device_name = cu_device,
    .alloc = cu_alloc,
    .free = cu_free,
    .size_of = cu_size_of,
    .fill = cu_fill,
    .fill_uniform = cu_fill_uniform,
    .provenance = cu_provenance,
    .checksum = cu_checksum,
    .gemm = cu_gemm,
    .memop = cu_memop,
    .sync = cu_sync,
    .epoch = cu_epoch,
    .now = cu_now,
    .ev_new = cu_ev_new,
    .ev_free = cu_ev_free,
    .ev_record = cu_ev_record,
    .ev_time = cu_ev_time,
    .world = cu_world,
    .comm_split = cu_split,
    .comm_free = cu_comm_free,
    .comm_rank = cu_comm_rank,
    .comm_size = cu_comm_size,
    .isend = cu_isend,
    .irecv = cu_irecv,
    .iallreduce = cu_iallreduce,
    .ireducescatter = cu_ireducescatter,
    .iallgather = cu_iallgather,
    .req_test = cu_req_test,
    .compute_wait_req = cu_compute_wait_req,
    .req_wait = cu_req_wait,
    .barrier = cu_barrier,
    .gather_host = cu_gather_host,
    .bcast_host = cu_bcast_host,
    .clock_offset = cu_clock_offset,
};

#else /* no CUDA */

static sc_status cuda_init_none(const sc_bk_opts *o, sc_bk **out, sc_error *err)
{
    *out = NULL;
    return sc_err(err, SC_ENOTSUP,
                  "cuda backend: built without CUDA (no nvcc at build time; rebuild with "
                  "USE_CUDA=yes where CUDA, cuBLAS and NCCL are installed)");
}

const sc_backend sc_backend_cuda = {
    .name = "cuda",
    .desc = "cuBLAS and NCCL (unavailable in this build)",
    .available = 0,
    .init = cuda_init_none,
};
#endif
