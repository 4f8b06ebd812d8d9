/* bench_file.h - the microbenchmark file (stagecraft.bench/1): what
 * `stagecraft bench` (exec/bench.h) writes and calibration
 * (planner/calib_points.h) reads. Its one reader and its one writer live
 * here, below both users.
 *
 * The file, one per op and run:
 *   {"format": "stagecraft.bench/1", "op", "backend", "device" (rank 0's
 *    device_name), "host" (rank 0's), "ranks" (that took part: 2 for p2p,
 *    else the world), "world", "nodes" (among the ranks that took part),
 *    "ranks_per_node" (most ranks of the world on one node), "link" ("intra"
 *    | "inter"), "dtype" (asked), "compute_dtype" (run), "elem_bytes",
 *    "busbw_factor" (not for gemm), "iters", "warmup", "tolerance" and
 *    "max_iters" (the stability rule, exec/bench.h), "cold_bytes" (optional,
 *    collectives only: bytes written between iterations to evict the caches,
 *    exec/bench.h; absent or 0 = warm), "hot_s" (optional, gemm on a GPU:
 *    seconds of a heating GEMM before every timed call, exec/bench.h "Hot";
 *    absent or 0 = a burst), "provenance" (what ran
 *    it: CPU, BLAS library and kernel, threads, environment, MPI, CUDA
 *    device and driver; provenance.h),
 *    "results": [{"bytes", "time_s", "time_min_s", "algbw", "busbw", "spread",
 *    "drift", "runs"}] or, for gemm, [{"m", "n", "k", "time_s", "time_min_s",
 *    "flop", "flops", "spread", "drift", "runs"}]}
 * Times in seconds, bandwidths in bytes/s, flops in FLOP/s (flop: per call,
 * 2mnk). Sizes follow nccl-tests: bytes is the per-rank buffer for allreduce
 * and p2p, the whole n-rank buffer for the reduce-scatter input and the
 * allgather output; algbw = bytes / time_s, busbw = algbw · busbw_factor.
 *
 * Required on read: format, op, device, ranks, link, compute_dtype,
 * elem_bytes and results, each result with its size (m, n, k for gemm, else
 * bytes) and time_s: what a measurement cannot be read without. The rest is
 * the record of the run, which `stagecraft bench` always writes: checked
 * when present, and when absent held as "not recorded" (below) and left
 * out again by the writer, so a file round-trips either way.
 *
 * Errors name the file and the JSON path ("b.json: results[2].time_s: ...").
 *
 * Ownership: sc_bench_load and sc_bench_from_json return a result the caller
 * frees with sc_bench_result_free (NULL ok); *out is NULL on failure.
 */
#ifndef SC_BENCH_FILE_H
#define SC_BENCH_FILE_H

#include <cjson/cJSON.h>
#include "model.h"
#include "provenance.h"
#include "sc.h"

#define SC_BENCH_FORMAT "stagecraft.bench/1"

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

/* Limits of the format, which the size sweep of `stagecraft bench` obeys:
 * sizes per file, gemm dimensions, bytes per message, seconds per time. */
#define SC_BENCH_MAX_SIZES 256
#define SC_BENCH_MAX_DIM 65536
#define SC_BENCH_MAX_BYTES (64.0 * 1024 * 1024 * 1024)
#define SC_BENCH_MAX_TIME 1e6

/* One measured size. For gemm bytes = 0; for the others m = n = k = 0,
 * flop = flops = 0. Read from a file, a figure it does not record is -1
 * (time_min_s, algbw, busbw, flop, flops, spread, drift), runs 0. */
typedef struct sc_bench_row {
    double bytes;
    int m, n, k;
    double time_s;      /* median over iters of the per-iteration time */
    double time_min_s;  /* minimum */
    double algbw;       /* bytes/s */
    double busbw;       /* bytes/s */
    double flop;        /* work of one call (gemm) */
    double flops;       /* FLOP/s at the median time (gemm) */
    double spread;      /* relative interquartile range of the timed block (-1: not recorded) */
    double drift;       /* its median against the block's before it (-1: not recorded) */
    int runs;           /* timed iterations run in all (0: not recorded) */
    int batch;          /* gemm: independent products in the call ("batch", 1 when absent;
                           0 read as 1) */
} sc_bench_row;

/* Read from a file, what it does not record: backend "", world, nodes,
 * ranks_per_node and iters 0, warmup -1, dtype (sc_dtype)-1, busbw_factor
 * -1 (gemm files carry none: 1). */
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
    double tolerance;      /* the drift asked for (-1: not recorded, or one block) */
    int max_iters;         /* 0: not recorded */
    double hot_s;          /* gemm: > 0: seconds of a heating GEMM queued before every
                              timed call (exec/bench.h "Hot"); 0: a burst */
    double cold_bytes;     /* > 0: caches evicted before every iteration by writing
                              this many bytes ("cold" collectives); 0: warm */
    sc_provenance prov;    /* rank 0's, and whether the ranks differed (provenance.h) */
    int n_rows;
    sc_bench_row rows[SC_BENCH_MAX_SIZES];
} sc_bench_result;

void sc_bench_result_free(sc_bench_result *r);

/* The result as a stagecraft.bench/1 document: NULL on allocation failure.
 * Caller frees with cJSON_Delete. */
cJSON *sc_bench_to_json(const sc_bench_result *r);
/* Writes it whole or not at all. */
sc_status sc_bench_save(const sc_bench_result *r, const char *path, sc_error *err);
/* Validates a parsed stagecraft.bench/1 document; file names it in errors.
 * O(results). */
sc_status sc_bench_from_json(const cJSON *j, const char *file, sc_bench_result **out,
                             sc_error *err);
/* Reads and validates a stagecraft.bench/1 file (sc_json_load, then
 * sc_bench_from_json). */
sc_status sc_bench_load(const char *path, sc_bench_result **out, sc_error *err);

#endif
