/* timeline.h - one training step as per-rank ops with start and end times
 * (stagecraft.timeline/1), written by the simulator and by the executor
 * alike so that they compare op for op; and its Chrome trace export.
 *
 * JSON:
 *   { "format": "stagecraft.timeline/1", "source": "sim"|"exec",
 *     "model": NAME, "cluster": NAME, "step_time_s": T,
 *     "steps": { "n": N, "median_s": .., "min_s": .., "max_s": ..,      (optional)
 *                "runs": R, "spread": .., "drift": .., "tolerance": ..,
 *                "stable": true|false }     (the last five optional)
 *     "device": "what ran it",                 (optional; exec writes it)
 *     "provenance": { ... }    (optional; what ran it, provenance.h)
 *     "plan": { "file": PATH, "digest": HEX }   (optional; the plan exec ran)
 *     "probe": { "m": M, "n": N, "k": K, "dtype": "fp32", "reps": R,
 *                "steps": S }   (optional)
 *     "ranks": [ { "rank": R, "node": N, "device": D, "dp": i, "pp": j, "tp": k,
 *                  "probe_s": s,   (iff "probe")
 *                  "ops": [ { "kind": "F", "stage": S, "chunk": C, "mb": M,
 *                             "bytes": B, "stream": "compute"|"comm",
 *                             "start": s, "end": e }, ... ] }, ... ] }
 * Times are seconds from the step's start. mb and chunk are -1 where they do
 * not apply (an optimizer step, a gradient bucket's allreduce).
 *
 * steps: the measured steps the file's step was picked from (the median of
 * the last n). runs: measured steps run in all (the ones before the last n
 * were still settling); spread: the relative interquartile range of the
 * last n, (q3 - q1) / median; drift: how far the median of the last n moved
 * from the median of the n before them, |m1 - m0| / m1 (absent with fewer
 * than 2n runs); tolerance: the drift asked for; stable: drift <= tolerance.
 * The quartiles are sc_quantile's (common/stats.h).
 *
 * probe: exec's speed check of the devices (exec.h): before every step,
 * all ranks at once, each rank ran one GEMM of m x n x k in dtype reps
 * times; probe_s is each rank's median seconds per GEMM over the `steps`
 * measured steps the figures are over. Calibration holds it against a gemm
 * bench of the same shape (calibrate's probe gate).
 *
 * Ownership: the caller frees a timeline with sc_timeline_free (NULL ok).
 * Adding ops grows arrays by doubling; the first allocation failure is
 * sticky and reported by save/to_json.
 */
#ifndef SC_TIMELINE_H
#define SC_TIMELINE_H

#include <cjson/cJSON.h>
#include "provenance.h"
#include "sc.h"

#define SC_TIMELINE_FORMAT "stagecraft.timeline/1"

typedef enum sc_op_kind {
    SC_OP_F = 0,        /* forward of a microbatch on a (virtual) stage */
    SC_OP_B,            /* backward (input gradient only under zb-h1) */
    SC_OP_W,            /* weight gradient (zb-h1) */
    SC_OP_RECOMPUTE,    /* activation recomputation before a backward */
    SC_OP_SEND_F,       /* activations to the next stage */
    SC_OP_RECV_F,
    SC_OP_SEND_B,       /* gradients to the previous stage */
    SC_OP_RECV_B,
    SC_OP_TP_ALLREDUCE, /* tensor-parallel allreduce inside the layers */
    SC_OP_DP_ALLREDUCE, /* data-parallel gradient allreduce (one bucket) */
    SC_OP_DP_REDUCESCATTER, /* ZeRO gradient reduce-scatter */
    SC_OP_DP_ALLGATHER, /* ZeRO parameter allgather */
    SC_OP_OPTIMIZER,
    SC_OP_TP_REDUCESCATTER, /* sequence parallelism: the tp allreduce's first half */
    SC_OP_TP_ALLGATHER,     /* and its second (Korthikanti et al. 2022 sec. 4.2.2) */
    SC_OP_CP_EXCHANGE,      /* context parallelism: keys and values around the cp group */
    SC_OP_KIND_N
} sc_op_kind;

const char *sc_op_kind_name(sc_op_kind k);
int sc_op_kind_parse(const char *s); /* -1 if unknown */

enum { SC_STREAM_COMPUTE = 0, SC_STREAM_COMM = 1 };

typedef struct sc_tl_op {
    int kind, stage, chunk, mb, stream;
    double bytes, start, end;
} sc_tl_op;

/* One kernel of a measured step as the executor ran it, timed alone
 * (`exec --kernels`, top-level "kernels"): its name (the model's kernel
 * name, or the leaf's kind for a leaf without a list), the pass (F, B, W,
 * BW: the backward whole), what it is ("wgemm": a GEMM with weights, whose
 * backward is an input- and a weight-gradient GEMM; "core": a batched GEMM
 * of activations, both backward GEMMs input gradients; "mem": a
 * memory-bound pass), its shape as run (batch, m, n, k of the forward
 * GEMM, padded as run; bytes of a pass, that pass's), how many times one
 * microbatch of each chunk runs it, and the median seconds of one call.
 * splits: the pass's first GEMM (F: the forward; B, BW: the data
 * gradient) ran as this many chunks of ceil(m / splits) rows (TE's tp
 * overlap, sc_cost_kernel_splits; key "splits", absent = 1). */
typedef struct sc_tl_kernel {
    char name[48];
    char pass[4];
    char op[8];
    double batch, m, n, k, bytes;
    int calls;
    double time_s;
    int splits; /* 0 or 1: whole */
} sc_tl_kernel;

typedef struct sc_tl_rank {
    int rank, node, device, dp, pp, tp;
    double probe_s;         /* 0 = no probe */
    int n_ops, cap;
    sc_tl_op *ops;
} sc_tl_rank;

typedef struct sc_timeline {
    char source[8];
    char model[128], cluster[128];
    double step_time_s;
    char device[128];       /* "" = unknown */
    /* how a measurement ran fused attention (key "flash_attention", exec
     * timelines): "gemms", as its two batched products (QK^T, then x V,
     * whole: no causal skip, the scores written; what the executor runs, no
     * backend having a fused kernel), or "fused"; "" = not recorded, which
     * for an exec timeline means "gemms" (sc_timeline_flash_gemms) */
    char flash_attention[8];
    /* the GEMMs' operands of an exec measurement (key "operands"):
     * "random" (exec.h SC_EXEC_OPERANDS) or "zeros" (exec --zero-operands,
     * on which a GPU may hold a clock training would not); "" = not
     * recorded (exec before 2026-12-04: zeros) */
    char operands[8];
    char plan_file[512];    /* "" = none */
    char plan_digest[17];
    int n_steps;            /* 0 = no step statistics */
    double step_median_s, step_min_s, step_max_s;
    int step_runs;          /* 0 = not recorded */
    double step_spread;     /* -1 = not recorded (also drift, tolerance) */
    double step_drift, step_tolerance;
    int step_stable;        /* -1 = not recorded, else 0 or 1 */
    sc_provenance prov;
    int probe_m, probe_n, probe_k, probe_reps, probe_steps; /* 0 = no probe */
    char probe_dtype[8];
    int n_ranks;
    sc_tl_rank *ranks;
    int kernels_rank;       /* the rank whose kernels these are */
    int n_kernels;          /* 0 = not profiled */
    sc_tl_kernel *kernels;
    int oom;
} sc_timeline;

/* A timeline with n_ranks empty ranks (rank i has .rank = i). */
sc_timeline *sc_timeline_new(int n_ranks, const char *source, const char *model,
                             const char *cluster);
void sc_timeline_free(sc_timeline *t);
/* Appends an op to rank r (ops need not be sorted). */
void sc_timeline_add(sc_timeline *t, int r, const sc_tl_op *op);

/* Whether t measured fused attention as two batched GEMMs (an exec
 * timeline that says "gemms" or nothing): compare and calibrate then price
 * the plan's flash kernels as such (sc_cluster_gemm.flash_gemms). */
int sc_timeline_flash_gemms(const sc_timeline *t);

cJSON *sc_timeline_to_json(const sc_timeline *t);
sc_status sc_timeline_save(const sc_timeline *t, const char *file, sc_error *err);
sc_status sc_timeline_from_json(const cJSON *j, const char *file, sc_timeline **out,
                                sc_error *err);

/* ---- reading what the writers write -------------------------------------------
 * sc_timeline_load reads a file of any size up to SC_TIMELINE_MAX_BYTES (no
 * 64 MiB cap of the JSON reader: a 1024-GPU sim timeline is 80 MB) with the
 * validation of sc_timeline_from_json and the same messages, streaming: the
 * text is scanned for each op's extent and each op is parsed alone, so it
 * holds the text and the ops kept, about sc_timeline_load_bytes(file size),
 * instead of a tree of the whole file (some 30 times its size). Callers
 * that cap memory (trace, plot: --max-mem) check that figure first. */
#define SC_TIMELINE_MAX_BYTES ((size_t)1 << 40)
/* sc_json_parse's limit (json.h: 64 MiB): within it a syntax error is
 * reported by reparsing the file whole, with that reader's exact message. */
#define SC_JSON_MAX_TEXT ((size_t)64 << 20)
sc_status sc_timeline_load(const char *file, sc_timeline **out, sc_error *err);
/* About what loading a file of file_bytes holds at its peak. */
size_t sc_timeline_load_bytes(size_t file_bytes);

/* Sets of ranks or stages: "0-7,64" (ranges A-B and single numbers >= 0,
 * comma-separated; at most SC_TL_SET_MAX items). An empty set (n = 0)
 * holds everything. */
#define SC_TL_SET_MAX 256
typedef struct sc_tl_set {
    int n;
    int lo[SC_TL_SET_MAX], hi[SC_TL_SET_MAX];
} sc_tl_set;
/* SC_EINVAL "WHAT: 'SPEC': ..." for a malformed list. */
sc_status sc_tl_set_parse(const char *spec, const char *what, sc_tl_set *out, sc_error *err);
int sc_tl_set_has(const sc_tl_set *s, int v);

/* What to keep of a timeline: ops of the ranks in `ranks` whose stage is in
 * `stages` (empty sets keep everything; ops without a stage, -1, only when
 * stages is empty). */
typedef struct sc_tl_filter {
    sc_tl_set ranks, stages;
} sc_tl_filter;
/* Drops the ops f does not keep; every rank stays (its ops emptied when not
 * kept), so the result is still a valid timeline to save. SC_EINVAL, naming
 * what, when f selects ranks or stages and keeps no op (an empty timeline is
 * never what was asked for): "WHAT: no rank selected (--ranks): it has ranks
 * 0-N", or "... lies in the stages selected (--stages): its stages are
 * 0-S". sc_timeline_load_filtered refuses the same, naming its file. */
sc_status sc_timeline_filter(sc_timeline *t, const sc_tl_filter *f, const char *what,
                             sc_error *err);
/* sc_timeline_load keeping only what f keeps (f NULL: everything; the ops
 * dropped are validated, not held). compact: the ranks f does not keep are
 * removed too (each kept rank's .rank unchanged): a timeline to draw or
 * trace, not to save. */
sc_status sc_timeline_load_filtered(const char *file, const sc_tl_filter *f, int compact,
                                    sc_timeline **out, sc_error *err);

/* The text of sc_timeline_to_json and of sc_timeline_chrome as cJSON_Print
 * gives it (after sc_json_exact), written into b without building the tree
 * (b->oom on allocation failure). sc_timeline_save uses the first. */
void sc_timeline_write(const sc_timeline *t, sc_buf *b);
void sc_timeline_chrome_write(const sc_timeline *t, sc_buf *b);

/* Chrome trace events (the JSON Object Format of the Trace Event Format):
 * one process per node, one thread per rank and stream (tid = 2·rank +
 * stream), complete events ("ph": "X") in microseconds. Perfetto and
 * chrome://tracing open it. */
cJSON *sc_timeline_chrome(const sc_timeline *t);

#endif
