/* bench.h - microbenchmarks of one device and its links: GEMM, point-to-point
 * and the collectives the executor uses, measured over a sweep of sizes on a
 * backend (exec/backend.h: "cpu" = OpenBLAS + MPI, "cuda" = cuBLAS + NCCL).
 * The files they write (stagecraft.bench/1) are what calibration fits the
 * cluster's efficiency parameters from.
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
 * Topology: ranks are grouped into nodes by host name and network namespace
 * (so ranks of an emulated cluster, scripts/netcluster.sh, land on their
 * own nodes); link = "intra" when every measured rank shares one node, else
 * "inter".
 *
 * Built without MPI, gemm still runs on one rank (a minimal OpenBLAS path
 * inside bench.c, since the cpu backend needs MPI); the other ops fail with
 * SC_ENOTSUP "built without MPI".
 *
 * The file (stagecraft.bench/1), one per op and run:
 *   {"format": "stagecraft.bench/1", "op", "backend", "device" (rank 0's
 *    device_name), "host" (rank 0's), "ranks" (that took part: 2 for p2p,
 *    else the world), "world", "nodes" (among the ranks that took part),
 *    "ranks_per_node" (most ranks of the world on one node), "link" ("intra"
 *    | "inter"), "dtype" (asked), "compute_dtype" (run), "elem_bytes",
 *    "busbw_factor" (not for gemm), "iters", "warmup",
 *    "results": [{"bytes", "time_s", "time_min_s", "algbw", "busbw"}] or,
 *    for gemm, [{"m", "n", "k", "time_s", "time_min_s", "flop", "flops"}]}
 * Times in seconds, bandwidths in bytes/s, flops in FLOP/s (flop: per call).
 *
 * Ownership: sc_bench_open returns a handle closed by sc_bench_close (NULL
 * ok), which finalizes the backend (and MPI). sc_bench_run returns, on rank
 * 0, a result freed by sc_bench_result_free; other ranks get NULL. Errors
 * name the backend, the rank and what failed. A failure on one rank of a
 * multi-rank run leaves the others waiting until their deadline: the caller
 * (main) prints the error and calls sc_bench_abort, which ends every rank.
 */
#ifndef SC_BENCH_H
#define SC_BENCH_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include "model.h"
#include "sc.h"

typedef enum sc_bench_op {
    SC_BENCH_GEMM = 0,
    SC_BENCH_P2P,
    SC_BENCH_ALLREDUCE,
    SC_BENCH_ALLGATHER,
    SC_BENCH_REDUCESCATTER,
    SC_BENCH_OP_N
} sc_bench_op;
const char *sc_bench_op_name(sc_bench_op op); /* "gemm", "p2p", ... */
int sc_bench_op_parse(const char *s);         /* -1 if unknown */

#define SC_BENCH_MAX_SIZES 256

/* One size of a sweep: bytes for the communication ops; m, n, k for gemm. */
typedef struct sc_bench_point {
    double bytes;
    int m, n, k;
} sc_bench_point;

/* Parses a size sweep for op:
 *   MIN:MAX:FACTOR   MIN, MIN*FACTOR, ... while <= MAX (FACTOR > 1; a
 *                    FACTOR of 1 gives just MIN)
 *   A,B,C            a list
 * Numbers take binary suffixes K, M, G (1K = 1024). For gemm each number is
 * a square m = n = k, and a list item may be MxNxK. Bytes must be >= 1 and
 * <= 64G; gemm dimensions in [1, 65536]. At most SC_BENCH_MAX_SIZES sizes.
 * Fills out[0..*n). SC_EINVAL with a message naming the text. */
sc_status sc_bench_parse_sizes(sc_bench_op op, const char *text, sc_bench_point *out, int *n,
                               sc_error *err);

typedef struct sc_bench_opts {
    sc_bench_op op;
    sc_dtype dtype;
    const sc_bench_point *sizes;
    int n_sizes;
    int iters;        /* timed iterations per size, >= 1 */
    int warmup;       /* untimed iterations first, >= 0 */
    double timeout_s; /* deadline for each wait on a peer (> 0) */
} sc_bench_opts;

/* One measured size. For gemm bytes = 0; for the others m = n = k = 0,
 * flop = flops = 0. */
typedef struct sc_bench_row {
    double bytes;
    int m, n, k;
    double time_s;      /* median over iters of the per-iteration time */
    double time_min_s;  /* minimum */
    double algbw;       /* bytes/s */
    double busbw;       /* bytes/s */
    double flop;        /* work of one call (gemm) */
    double flops;       /* FLOP/s at the median time (gemm) */
} sc_bench_row;

typedef struct sc_bench_result {
    sc_bench_op op;
    char backend[16];
    char device[128];      /* rank 0's device_name */
    char host[128];        /* rank 0's host name */
    int ranks;             /* ranks that took part: world size (2 for p2p) */
    int world;             /* world size */
    int nodes;             /* distinct nodes among the ranks that took part */
    int ranks_per_node;    /* max ranks of the world on one node */
    char link[8];          /* "intra" or "inter" */
    sc_dtype dtype;        /* requested */
    sc_dtype compute_dtype;/* what the backend ran (gemm; comm ops: as stored) */
    double elem_bytes;
    double busbw_factor;   /* the nccl-tests factor applied (1 for p2p) */
    int iters, warmup;
    int n_rows;
    sc_bench_row rows[SC_BENCH_MAX_SIZES];
} sc_bench_result;

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
void sc_bench_result_free(sc_bench_result *r);

/* The result as a stagecraft.bench/1 document (see the README): NULL on
 * allocation failure. Caller frees with cJSON_Delete. */
cJSON *sc_bench_to_json(const sc_bench_result *r);
/* Writes it whole or not at all. */
sc_status sc_bench_save(const sc_bench_result *r, const char *path, sc_error *err);
/* Reads and validates a stagecraft.bench/1 file (what sc_bench_save
 * writes); the caller frees *out with sc_bench_result_free. Errors name the
 * file and the JSON path ("b.json: results[2].time_s: ..."); *out is NULL
 * on failure. */
sc_status sc_bench_load(const char *path, sc_bench_result **out, sc_error *err);
/* A readable table (sizes, times in us, GB/s, GFLOP/s). */
void sc_bench_print(const sc_bench_result *r, FILE *f);

#endif
