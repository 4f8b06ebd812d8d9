/* bench.h - microbenchmarks of one device and its links: GEMM, point-to-point
 * and the collectives the executor uses, measured over a sweep of sizes on a
 * backend (exec/backend.h: "cpu" = OpenBLAS + MPI, "cuda" = cuBLAS + NCCL).
 * The files they write (stagecraft.bench/1, traces/bench_file.h) are what
 * calibration fits the cluster's efficiency parameters from.
 *
 * What is measured, per size, over `iters` timed iterations after `warmup`
 * untimed ones:
 *   gemm     C[m,n] = A[m,k] B[k,n] on every rank at once (each rank its own
 *            device); one call timed by events around it on the compute
 *            stream (device time on CUDA); per iteration the slowest rank.
 *            flop = 2mnk, flops = flop / time (FLOP/s).
 *   p2p      ping-pong between world ranks 0 and 1 over a two-rank
 *            communicator (others wait): rank 0 sends S bytes, rank 1 sends
 *            them back; time = half of rank 0's send start to receive end.
 *   allreduce, allgather, reducescatter
 *            over every rank of the world, in place, summing in the dtype.
 *            An epoch and a barrier start each iteration; each rank's time
 *            is its request's start to end as the backend reports it (CPU:
 *            posted to completion seen; CUDA: events around the NCCL call);
 *            per iteration the slowest rank.
 * Sizes follow nccl-tests (doc/PERFORMANCE.md in NVIDIA/nccl-tests): S is
 * the per-rank buffer for allreduce and p2p, the whole n-rank buffer for the
 * reduce-scatter input and the allgather output (so S is rounded down to a
 * multiple of n elements). algbw = S / time; busbw = algbw * f with
 * f = sc_cost_busbw_factor (allreduce 2(n-1)/n, reduce-scatter and allgather
 * (n-1)/n), 1 for p2p. Every figure uses the median time (time_s); the
 * minimum (time_min_s) is recorded beside it.
 *
 * Inputs: GEMM operands and communication buffers hold values uniform in
 * [-1, 1) (backend fill_uniform), never raw bytes: a random bit pattern
 * holds NaN, Inf and denormal floats, which OpenBLAS's kernels run 10-15x
 * slower, and the executor's GEMMs never see them. A reduction in place
 * (allreduce, reducescatter) is refilled before every iteration, untimed,
 * so that its sums never grow out of that range.
 *
 * Cold (cold_bytes > 0, communication ops): before every iteration,
 * untimed, a separate buffer of cold_bytes is written, so that the
 * collective starts with its buffers (and the transport's) out of the
 * caches. Inside a training step the gradient reduction starts after the
 * backward has streamed every layer through the caches, and on a CPU it
 * runs slower than a benchmark repeating on warm buffers (measured here:
 * 16 MiB allreduce 6.6-7.5 ms warm, 11.8 ms after writing 256 MiB, 9.8-12.2
 * ms inside the step). Calibration fits such files apart (calibrate.h:
 * the cold link fit); pick a size well above the last-level cache.
 *
 * Hot (hot_s > 0, gemm on an asynchronous backend): before every timed
 * call, hot_s of a 4096^3 GEMM on uniform random operands is queued ahead
 * of it (untimed, no wait between them), so the GPU sits at its power
 * limit when the timed call runs, as a training step holds it. A burst
 * (hot_s 0) times short calls on an otherwise idle GPU at its boost clock:
 * one H200 ran 4096^3 in 173 us that way, where the same GPU training
 * held ~1500 of its 1980 MHz and ran 4096^3 in 211 us
 * (docs/accuracy.md, "The sixth run"). The cpu backend has no such
 * limit and refuses hot_s > 0 (sc_bench_run: SC_EINVAL).
 *
 * Until stable: timed iterations run in blocks of `iters`; after each block
 * from the second on, the median of the last block is compared with the
 * median of the block before it, and the sweep moves on when they differ
 * by at most `tolerance` (relative to the last) or when another block
 * would pass `max_iters`. The figures of a size (time_s, time_min_s) are
 * the last block's; beside them the file records that block's spread
 * (relative interquartile range, sc_spread), the drift of its median
 * against the block before (|m1 - m0| / m1; -1 with one block) and the
 * iterations run. A size whose drift stayed above the tolerance was not
 * stable: sc_bench_print says so and by how much. Every rank runs the same
 * blocks (rank 0 decides and broadcasts).
 *
 * Provenance: every rank's record (backend provenance, traces/provenance.h)
 * is gathered; the file holds rank 0's, with "mixed" naming a rank whose
 * hardware or kernel differs.
 *
 * Topology: ranks are grouped into nodes by host name and network namespace
 * (so ranks of an emulated cluster, scripts/netcluster.sh, land on their
 * own nodes); link = "intra" when every measured rank shares one node, else
 * "inter".
 *
 * Built without MPI, gemm still runs on one rank (a minimal OpenBLAS path
 * inside bench.c, since the cpu backend needs MPI); the other ops fail with
 * SC_ENOTSUP "built without MPI".
 *
 * The file it writes, stagecraft.bench/1, and its reader are in
 * traces/bench_file.h, below this module and calibration, its two users.
 *
 * Ownership: sc_bench_open returns a handle closed by sc_bench_close (NULL
 * ok), which finalizes the backend (and MPI). sc_bench_run returns, on rank
 * 0, a result freed by sc_bench_result_free (bench_file.h); other ranks get NULL. Errors
 * name the backend, the rank and what failed. A failure on one rank of a
 * multi-rank run leaves the others waiting until their deadline: the caller
 * (main) prints the error and calls sc_bench_abort, which ends every rank.
 */
#ifndef SC_BENCH_H
#define SC_BENCH_H

#include <stdio.h>
#include "bench_file.h"
#include "model.h"
#include "sc.h"

/* One size of a sweep: bytes for the communication ops; m, n, k for gemm. */
typedef struct sc_bench_point {
    double bytes;
    int m, n, k;
    int batch; /* gemm: independent products of m x n x k (0 read as 1) */
} sc_bench_point;

/* Parses a size sweep for op:
 *   MIN:MAX:FACTOR   MIN, MIN*FACTOR, ... while <= MAX (FACTOR > 1; a
 *                    FACTOR of 1 gives just MIN)
 *   A,B,C            a list
 * Numbers take binary suffixes K, M, G (1K = 1024). For gemm each number is
 * a square m = n = k, and a list item may be MxNxK or BxMxNxK (B independent
 * products of that shape, one batched call, as attention's are). Bytes must be >= 1 and
 * <= 64G; gemm dimensions in [1, 65536]. At most SC_BENCH_MAX_SIZES sizes.
 * Fills out[0..*n). SC_EINVAL with a message naming the text. */
sc_status sc_bench_parse_sizes(sc_bench_op op, const char *text, sc_bench_point *out, int *n,
                               sc_error *err);

typedef struct sc_bench_opts {
    sc_bench_op op;
    sc_dtype dtype;
    const sc_bench_point *sizes;
    int n_sizes;
    int iters;        /* timed iterations per block, >= 1 (see "Until stable") */
    int warmup;       /* untimed iterations first, >= 0 */
    double tolerance; /* > 0: repeat blocks until the median moves less than this
                         (relative); 0: one block, as before */
    int max_iters;    /* at most this many timed iterations per size (>= iters) */
    double timeout_s; /* deadline for each wait on a peer (> 0) */
    double hot_s;      /* gemm: seconds of a heating GEMM before every timed call ("Hot") */
    double cold_bytes; /* comm ops: > 0 writes a buffer of this many bytes before every
                          iteration (untimed), evicting the caches ("cold"); 0: warm */
} sc_bench_opts;

typedef struct sc_bench sc_bench;

/* Starts the backend called backend ("cpu", "cuda"): initializes MPI when
 * the build has it (argc/argv may be NULL). SC_ENOTFOUND for an unknown
 * name, SC_ENOTSUP when the build lacks it. */
sc_status sc_bench_open(const char *backend, int *argc, char ***argv, sc_bench **out,
                        sc_error *err);
int sc_bench_rank(const sc_bench *b);
int sc_bench_nranks(const sc_bench *b);
/* Runs the sweep; every rank must call it with the same options. On rank 0
 * *out is the result (caller frees); elsewhere NULL. Comm ops in a build
 * without MPI fail with SC_ENOTSUP; p2p needs >= 2 ranks (SC_EINVAL). */
sc_status sc_bench_run(sc_bench *b, const sc_bench_opts *o, sc_bench_result **out,
                       sc_error *err);
/* Ends every rank of the run with code (MPI_Abort); never returns. */
void sc_bench_abort(sc_bench *b, int code) __attribute__((noreturn));
void sc_bench_close(sc_bench *b);
/* How many sizes did not settle (drift above the tolerance); *worst gets
 * the largest drift among them (0 when none). */
int sc_bench_unstable(const sc_bench_result *r, double *worst);
/* A readable table (sizes, times in us, GB/s, GFLOP/s, spread), with a
 * line saying which sizes were too noisy and by how much. */
void sc_bench_print(const sc_bench_result *r, FILE *f);

#endif
