/* backend.h - what the executor (exec.c) and the microbenchmarks (bench)
 * need from a device: buffers, GEMMs, memory-bound passes, timers, and
 * communication. One backend is one table of function pointers filled by one
 * file: backend_cpu.c (OpenBLAS + MPI), backend_cuda.c + backend_cuda.cu
 * (cuBLAS + NCCL, MPI to start the ranks and exchange NCCL ids).
 *
 * Lifecycle (one process = one rank = one device; every call below is made
 * by the thread that made the context):
 *
 *     const sc_backend *be = sc_backend_find("cpu");      // or "cuda"
 *     sc_bk *bk;
 *     if (be->init(&opts, &bk, &err)) ...;                 // starts MPI if needed
 *     int rank = be->rank(bk), n = be->size(bk);
 *     sc_buf_h *a = be->alloc(bk, bytes, &err); ...
 *     be->gemm(bk, SC_FP32, m, n, k, 1, A, B, C, &err);    // C[m,n] = A[m,k]·B[k,n]
 *     be->finalize(bk);                                     // frees everything
 *
 * Errors: every fallible call returns an sc_status and fills err with one
 * line naming the backend, the rank and what failed, e.g.
 *   "cuda: rank 3: cublasGemmEx (exec/backend_cuda.cu:120): CUBLAS_STATUS_..."
 * (recorded by the CUDA_TRY / NCCL_TRY / MPI_TRY macros of exec_int.h).
 * A backend never exits and never aborts except in abort() below.
 *
 * Ownership: init returns a context freed by finalize (NULL ok); buffers,
 * events and communicators belong to the context and are freed by their
 * _free call or by finalize. Pointers returned are opaque handles: device
 * memory is never dereferenced by the caller (use fill and checksum).
 *
 * Streams: each context has one compute stream; every communicator has
 * its own comm stream (CUDA: a stream per communicator; CPU: both are the
 * calling thread, compute is synchronous and communication is MPI
 * nonblocking requests). Ordering across streams:
 *   - every communication call starts after the compute queued before it
 *     (the comm stream waits on an event of the compute stream);
 *   - compute_wait_req(req) makes compute queued after it wait for req.
 *     On the CPU it blocks the thread (polling with the deadline); on CUDA
 *     it only enqueues a stream wait and returns.
 *   - point-to-point messages go over a two-rank communicator per channel
 *     (the executor makes one per (sender, receiver, direction, chunk) with
 *     comm_split), and messages on one communicator match in posting order.
 *
 * Waiting: nothing blocks without a deadline (seconds on now()'s clock).
 * req_wait / compute_wait_req / sync / barrier poll (MPI_Test,
 * cudaEventQuery + ncclCommGetAsyncError, yielding the CPU between polls)
 * until done or the deadline passes: then they return SC_EIO with a message
 * that starts with "timed out" and the request stays pending; the caller
 * prints its one-line diagnosis and calls abort().
 *
 * Timing: now() is CLOCK_MONOTONIC seconds (the same on every rank of a
 * node; clock_offset aligns ranks across nodes). Compute is timed with
 * events recorded on the compute stream; a request carries its own start and
 * end (CPU: when it was posted and when its completion was first seen by
 * req_test/req_wait/compute_wait_req; CUDA: events around the NCCL call on
 * the comm stream). Device event times are host-clock seconds anchored at
 * the latest epoch(): valid for events recorded after it.
 *
 * Typical step (what exec.c does):
 *     be->epoch(bk, &err);                        // all idle; timing anchor
 *     be->ev_record(bk, e0, &err); be->gemm(...); be->ev_record(bk, e1, &err);
 *     be->iallreduce(bk, tp, buf, n, dt, &r, &err);  // after the gemm
 *     be->compute_wait_req(bk, r, deadline, &err);   // next compute needs it
 *     ...
 *     be->req_wait(bk, r, deadline, &t0, &t1, &err); // frees r, gives times
 *     be->sync(bk, deadline, &err);
 *     be->ev_time(bk, e0, &s, &err);
 */
#ifndef SC_BACKEND_H
#define SC_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "model.h" /* sc_dtype */
#include "provenance.h"
#include "sc.h"

typedef struct sc_bk sc_bk;         /* a backend context: one rank's device */
typedef struct sc_dbuf sc_dbuf;     /* a device buffer */
typedef struct sc_req sc_req;       /* an outstanding transfer or collective */
typedef struct sc_comm sc_comm;     /* a communicator (subset of ranks) */
typedef struct sc_ev sc_ev;         /* a timing event */

typedef struct sc_bk_opts {
    int *argc;          /* for MPI_Init (may be NULL) */
    char ***argv;
    int device;         /* -1 = node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, else
                         * rank % devices) */
} sc_bk_opts;

/* Reduction collectives sum; buffers are counted in elements of dtype. */
typedef struct sc_backend {
    const char *name;   /* "cpu", "cuda" */
    const char *desc;   /* one line */
    /* 1 if this build has the backend; else init fails with SC_ENOTSUP and
     * a message "built without CUDA" / "built without MPI". */
    int available;
    /* 1 if compute is queued asynchronously (CUDA): the host runs ahead and
     * must call req_wait/sync to learn about completion. 0 on the CPU. */
    int async;

    /* ---- lifecycle ----------------------------------------------------------- */
    /* Starts MPI if needed (MPI_Init_thread; a second context in the same
     * process reuses it), picks the device (opts->device, or the node-local
     * rank) and creates streams and handles. */
    sc_status (*init)(const sc_bk_opts *o, sc_bk **out, sc_error *err);
    /* Frees everything the context owns and finalizes MPI if init started it.
     * NULL ok. */
    void (*finalize)(sc_bk *bk);
    /* Kills every rank (MPI_Abort) with exit status code; never returns. */
    void (*abort)(sc_bk *bk, int code);
    int (*rank)(const sc_bk *bk);
    int (*size)(const sc_bk *bk);
    /* The dtype GEMMs and collectives really run in for a requested one: the
     * CPU backend runs everything in fp32; CUDA runs fp32, tf32, fp16 and
     * bf16 as asked and fp8 as bf16. */
    sc_dtype (*compute_dtype)(const sc_bk *bk, sc_dtype want);
    /* One line: "OpenBLAS sgemm fp32, 1 thread" or "NVIDIA H200 (sm_90)". */
    const char *(*device_name)(const sc_bk *bk);
    /* What this rank runs on (traces/provenance.h): the host's CPU and
     * environment (sc_backend_host_provenance), and the backend's own
     * libraries: OpenBLAS's config, kernel and threads and the MPI library
     * on the CPU; cuBLAS, NCCL, the device, driver and runtime on CUDA.
     * Local: no communication. */
    void (*provenance)(sc_bk *bk, sc_provenance *out);

    /* ---- memory (compute stream) -------------------------------------------- */
    /* bytes may be 0 (a valid empty buffer). Contents undefined until filled.
     * SC_ENOMEM / SC_ECUDA with the size in the message. */
    sc_dbuf *(*alloc)(sc_bk *bk, size_t bytes, sc_error *err);
    void (*free)(sc_bk *bk, sc_dbuf *b);  /* NULL ok */
    size_t (*size_of)(const sc_dbuf *b);
    /* Fills b[0..bytes) with the pattern sc_backend_pattern(seed, i): the same
     * bytes on every backend, so checksums compare across ranks and backends. */
    sc_status (*fill)(sc_bk *bk, sc_dbuf *b, size_t bytes, uint64_t seed, sc_error *err);
    /* Fills the first count elements of b, in compute_dtype(dt), with
     * sc_backend_uniform(seed, i) rounded to that dtype: values uniform in
     * [-1, 1), finite and normal, the well-scaled inputs GEMM and collective
     * benchmarks use (the bytes of fill() hold NaN, Inf and denormal
     * floats, which some BLAS kernels run 10-15x slower). SC_EINVAL when
     * count elements do not fit in b. */
    sc_status (*fill_uniform)(sc_bk *bk, sc_dbuf *b, size_t count, sc_dtype dt, uint64_t seed,
                              sc_error *err);
    /* FNV-1a 64 of b[0..bytes) after the compute queued so far (synchronous:
     * waits for the compute stream; O(bytes) on the host). */
    sc_status (*checksum)(sc_bk *bk, const sc_dbuf *b, size_t bytes, uint64_t *out,
                          sc_error *err);

    /* ---- compute (compute stream) -------------------------------------------- */
    /* batch independent products C_i[m x n] = A_i[m x k] . B_i[k x n],
     * row-major, operands consecutive (strides m·k, k·n, m·n elements),
     * elements of compute_dtype(dt), fp32 accumulation (OpenBLAS cblas_sgemm;
     * cuBLAS cublasGemmEx / cublasGemmStridedBatchedEx with
     * CUBLAS_COMPUTE_32F, or _FAST_TF32 for tf32). m, n, k, batch >= 1; the
     * buffers must hold batch·m·k, batch·k·n and batch·m·n elements. FLOPs:
     * 2·m·n·k·batch. */
    sc_status (*gemm)(sc_bk *bk, sc_dtype dt, int m, int n, int k, int batch,
                      const sc_dbuf *A, const sc_dbuf *B, sc_dbuf *C, sc_error *err);
    /* A memory-bound pass over bytes (rounded down to 4): dst[i] = src[i] *
     * 0.5f + dst[i] * 0.5f over floats, reading src and dst and writing dst
     * once: the stand-in for norms, activations, embedding lookups and the
     * optimizer (dst == src allowed). Bytes moved: 3·bytes (2 if in place). */
    sc_status (*memop)(sc_bk *bk, sc_dbuf *dst, const sc_dbuf *src, size_t bytes,
                       sc_error *err);
    /* Waits until all work queued on every stream is done, or the deadline. */
    sc_status (*sync)(sc_bk *bk, double deadline, sc_error *err);
    /* sync() without a deadline (local work only: call it when no request is
     * pending), then anchors device event times to now(). */
    sc_status (*epoch)(sc_bk *bk, sc_error *err);

    /* ---- timing ------------------------------------------------------------- */
    double (*now)(const sc_bk *bk);  /* host CLOCK_MONOTONIC seconds */
    sc_ev *(*ev_new)(sc_bk *bk, sc_error *err);
    void (*ev_free)(sc_bk *bk, sc_ev *e);   /* NULL ok */
    /* Records e at the current end of the compute stream. */
    sc_status (*ev_record)(sc_bk *bk, sc_ev *e, sc_error *err);
    /* Host-clock seconds at which e completed; call after sync(). */
    sc_status (*ev_time)(sc_bk *bk, sc_ev *e, double *t, sc_error *err);

    /* ---- communicators ------------------------------------------------------- */
    /* The world (every rank); owned by the context: never free it. */
    sc_comm *(*world)(sc_bk *bk);
    /* Collective over the world (every rank calls it, in the same order):
     * ranks with the same color >= 0 form one communicator, ordered by key;
     * color < 0 gives *out = NULL. CPU: MPI_Comm_split; CUDA: MPI_Comm_split
     * plus ncclCommSplit, each with its own stream. */
    sc_status (*comm_split)(sc_bk *bk, int color, int key, sc_comm **out, sc_error *err);
    void (*comm_free)(sc_bk *bk, sc_comm *c);  /* NULL ok */
    int (*comm_rank)(const sc_comm *c);
    int (*comm_size)(const sc_comm *c);

    /* ---- communication (asynchronous, after the compute queued so far) -------- */
    /* Point-to-point of bytes with peer (a rank of c). Messages on one
     * communicator match in posting order (NCCL grouped ncclSend/ncclRecv;
     * MPI_Isend/MPI_Irecv with one tag). */
    sc_status (*isend)(sc_bk *bk, sc_comm *c, const sc_dbuf *b, size_t bytes, int peer,
                       sc_req **req, sc_error *err);
    sc_status (*irecv)(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t bytes, int peer,
                       sc_req **req, sc_error *err);
    /* In-place sum of count elements of compute_dtype(dt) over c. */
    sc_status (*iallreduce)(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count, sc_dtype dt,
                            sc_req **req, sc_error *err);
    /* Reduce-scatter of count·size(c) elements, count to each rank, in place
     * in b (which holds count·size elements). Where this rank's reduced part
     * lands (b[0..) on the CPU, b[rank·count..) on CUDA) is backend-specific:
     * the executor uses the collective's time, not its values. */
    sc_status (*ireducescatter)(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count,
                                sc_dtype dt, sc_req **req, sc_error *err);
    /* Allgather of count elements from each rank into b (count·size), in place
     * (this rank's part at b[rank·count..)). */
    sc_status (*iallgather)(sc_bk *bk, sc_comm *c, sc_dbuf *b, size_t count, sc_dtype dt,
                            sc_req **req, sc_error *err);
    /* 1 done (records the completion time; does not free), 0 pending, -1 error. */
    int (*req_test)(sc_bk *bk, sc_req *req, sc_error *err);
    /* Compute queued after this call waits for req (see Streams). */
    sc_status (*compute_wait_req)(sc_bk *bk, sc_req *req, double deadline, sc_error *err);
    /* Completes req, stores its start and end (host clock; either pointer may
     * be NULL) and frees it. req NULL: SC_OK. On timeout req stays pending. */
    sc_status (*req_wait)(sc_bk *bk, sc_req *req, double deadline, double *t_start,
                          double *t_end, sc_error *err);
    /* World barrier (nonblocking barrier + polling). */
    sc_status (*barrier)(sc_bk *bk, double deadline, sc_error *err);

    /* ---- host-side helpers over the world ------------------------------------ */
    /* Every rank gives len bytes; root receives size·len bytes in rank order
     * (recv ignored elsewhere). */
    sc_status (*gather_host)(sc_bk *bk, const void *send, size_t len, void *recv, int root,
                             double deadline, sc_error *err);
    /* len bytes of buf from root to every rank. */
    sc_status (*bcast_host)(sc_bk *bk, void *buf, size_t len, int root, double deadline,
                            sc_error *err);
    /* Clock alignment, Cristian's algorithm (Cristian 1989): rank 0 calls it
     * with peer = q, rank q calls it with peer = 0; rounds ping-pongs; on
     * rank 0 *offset = clock(q) - clock(0) estimated from the round of least
     * round-trip time (t_q - (t_send + t_recv) / 2); 0 elsewhere. */
    sc_status (*clock_offset)(sc_bk *bk, int peer, int rounds, double deadline,
                              double *offset, sc_error *err);
} sc_backend;

extern const sc_backend sc_backend_cpu;
extern const sc_backend sc_backend_cuda;

/* By name ("cpu", "cuda"); NULL if unknown. Backends that this build lacks
 * are still found (available = 0) so that callers report "built without". */
const sc_backend *sc_backend_find(const char *name);

/* Bytes per element of a compute dtype (fp32/tf32 4, fp16/bf16 2, fp8 1). */
size_t sc_backend_elem_bytes(sc_dtype dt);

/* Byte i of the fill pattern of seed (splitmix64-style mix of seed and
 * i / 8, byte i % 8 of it). */
static inline uint64_t sc_backend_pattern_word(uint64_t seed, uint64_t word)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + word + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint8_t sc_backend_pattern(uint64_t seed, uint64_t i)
{
    return (uint8_t)(sc_backend_pattern_word(seed, i >> 3) >> (8 * (i & 7)));
}
/* Element i of fill_uniform's values for seed: the top 53 bits of the
 * pattern word of (seed, i) scaled to [-1, 1). */
static inline double sc_backend_uniform(uint64_t seed, uint64_t i)
{
    return (double)(sc_backend_pattern_word(seed, i) >> 11) * 0x1p-52 - 1.0;
}

/* The host's part of a rank's provenance (provenance.h): the CPU model
 * (/proc/cpuinfo), OpenBLAS's config, kernel (openblas_get_corename) and
 * thread count, and the environment variables of SC_PROVENANCE_ENV that are
 * set. Never changes the environment. */
void sc_backend_host_provenance(sc_provenance *out);

/* Collective over the world: every rank's provenance (be->provenance) to
 * rank 0, which gets its own in *out with `mixed` naming the first rank
 * whose record conflicts with it (sc_provenance_conflict). Other ranks get
 * their own. */
sc_status sc_backend_gather_provenance(const sc_backend *be, sc_bk *bk, double deadline,
                                       sc_provenance *out, sc_error *err);

/* FNV-1a 64 step over n bytes (start from SC_FNV_INIT). */
#define SC_FNV_INIT 0xcbf29ce484222325ull
uint64_t sc_backend_fnv(uint64_t h, const void *p, size_t n);

#endif
