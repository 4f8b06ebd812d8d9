/* seed38.h - `stagecraft repro seed38`: the founding document's 38% claim
 * checked three ways (its closed form, the planner's analytical model, the
 * discrete-event simulator), with sweeps over the inter-node bandwidth and
 * the node count.
 *
 * The claim (shared/seed/000_*.txt): a team trained a >1B-parameter
 * transformer on 16 p4d.24xlarge (8 A100 each, 4 x 100 Gb/s EFA) and found
 * pipeline parallelism across nodes 38% more efficient than their previous
 * "depth-wise" (tensor-level) model parallelism, which needs an allreduce for
 * every computation. Their argument: an allreduce over n machines takes
 * O(log2 n) parallel steps, a pipeline send O(1); "with 16 machines of 8 GPUs
 * ... O(log2 8) = O(3)", so the network cost drops to a third; and the
 * training cost drops to 1/2 + 1/2 · 1/log2(16) = 0.625 of the original.
 *
 * 1. Closed form. Assumptions: half the step is communication (s = 1/2);
 *    the rest (compute) is the same under both layouts; communication costs
 *    log2 n units under the allreduce and 1 under the pipeline, so
 *        ratio(s, n) = (1 - s) + s / log2 n        (pipeline / baseline).
 *    The text uses two n: log2 8 = 3 ("a third": ratio 1/2 + 1/6 = 0.6667,
 *    gain 50%) and log2 16 = 4 (0.625, gain 60%). Neither gives 38%
 *    The 38% is the saving 1 - 0.625; with log2 8 it would be 33%. Both are reported.
 *
 * 2., 3. Our models, on the same two layouts (sc_seed38_layouts):
 *    baseline  tp = k·G, pp = 1, dp = N/k, placement tp,pp,dp: one tensor-
 *              parallel group spans k whole nodes, so every layer's forward
 *              and backward allreduce crosses the network; k >= 2 is the
 *              largest divisor of N with k·G dividing every attention
 *              module's heads (gpt-1.3b and mm-1.3b have 16 heads: k = 2,
 *              tp 16 over 2 p4d nodes; tp over all 16 nodes would need 128
 *              heads). G = GPUs per node, N = nodes.
 *    pipeline  tp = G, pp = k, dp = N/k: tp inside a node, the k pipeline
 *              stages on k nodes; only stage outputs cross the network.
 *    Same GPUs, the same k-node model split, global batch, microbatch count m
 *    and size mbs = B/(dp·m), schedule 1f1b, ZeRO 0, no recompute, uniform
 *    partition. The analytical model is sc_estimate_step; the simulator is
 *    sc_step_simulate with one_replica.
 *    For each: step times, ratio = pipeline/baseline, gain = baseline/
 *    pipeline - 1 (the claim: 0.38), the baseline's communication share
 *    s = exposed comm (tp + pp + dp) / step, the comm ratio c = pipeline
 *    exposed comm / baseline exposed comm, and the closed form evaluated at
 *    the measured share: (1 - s) + s/4, (1 - s) + s/3 and (1 - s) + s·c (the
 *    last differs from the ratio only by the change in non-communication
 *    time: compute, bubble, optimizer).
 *
 * Sweeps (per model): the inter-node bandwidth (inter.nic_bytes_per_s times
 * 1/8 .. 8, powers of two) at N nodes, recording the baseline's share and the
 * ratio; and the node count (2, 4, 8, 16, 32; those that k divides) with the
 * same per-node layout and per-replica batch (m, mbs fixed: weak scaling, the
 * global batch grows with dp), against 1/2 + 1/2 · 1/log2 n.
 *
 * A measured ratio (the executed miniature: scripts/netcluster.sh, two
 * emulated nodes with a shaped link, the CPU backend) can be handed in
 * later with sc_seed38_set_measured; it is then printed and written beside
 * the model numbers (field measured_*, JSON key "measured").
 *
 * Files written by sc_seed38_write into DIR (created if missing):
 *   seed38.json                     the whole result (below)
 *   seed38_vs_share.png / .svg      ratio against the baseline's comm share
 *   seed38_vs_nodes.png / .svg      ratio against the node count
 *
 * JSON (stagecraft.seed38/1), every time in seconds:
 *   format, cluster, nodes, gpus_per_node, global_batch, microbatches,
 *   closed_form: { assumed_share (0.5), log2_16: {n, comm_ratio, ratio,
 *                  gain}, log2_8: {...}, note },
 *   models: [ { model, params, span_nodes (k),
 *     baseline: {dp, tp, pp, m, mbs, schedule, placement, tp_nodes (nodes
 *                one tp group spans), pp_nodes (nodes one pipeline spans)},
 *     pipeline: {same keys},
 *     analytical, simulated: { baseline: SIDE, pipeline: SIDE, ratio, gain,
 *                  share, comm_ratio, predicted_log2_16, predicted_log2_8,
 *                  predicted_measured_comm, holds_0625 },
 *        SIDE = { step_time_s, compute_s, tp_s, pp_s, dp_s, comm_s,
 *                 bubble_s, optimizer_s, share }
 *     measured: null | { ratio, gain, source },
 *     bw_factor_0625, bw_factor_38 (ratio 0.62, a 38% saving; null when not reached),
 *     sweep_bandwidth: [ { factor, nic_bytes_per_s, share_sim, ratio_sim,
 *                 share_est, ratio_est, closed_log2_16, closed_log2_8 } ],
 *     sweep_nodes: [ { nodes, dp, global_batch, share_sim, ratio_sim,
 *                 share_est, ratio_est, closed_form } ] } ]
 *   holds_0625 is true when |ratio - 0.625| <= 0.05.
 *
 * Ownership: sc_seed38_run returns a result freed with sc_seed38_free (NULL
 * ok); sc_seed38_to_json returns a tree freed with cJSON_Delete. Nothing is
 * written on failure. Deterministic.
 */
#ifndef SC_SEED38_H
#define SC_SEED38_H

#include <cjson/cJSON.h>
#include "cluster.h"
#include "model.h"
#include "sc.h"
#include "step.h"

#define SC_SEED38_FORMAT "stagecraft.seed38/1"
#define SC_SEED38_MAX_MODELS 8
#define SC_SEED38_N_BW 7      /* factors 1/8 .. 8 */
#define SC_SEED38_N_NODES 5   /* 2, 4, 8, 16, 32 */

typedef struct sc_seed38_opts {
    const char *models;   /* comma-separated names or files; NULL = "gpt-1.3b,mm-1.3b" */
    const char *cluster;  /* preset or file; NULL = "p4d.24xlarge" */
    int nodes;            /* 0 = 16 */
    long global_batch;    /* 0 = 512 */
    int microbatches;     /* m; 0 = 8 */
} sc_seed38_opts;

/* One layout's step, from either model. comm = tp + pp + dp (exposed). */
typedef struct sc_seed38_side {
    double step_s, compute_s, tp_s, pp_s, dp_s, comm_s, bubble_s, optimizer_s;
    double share; /* comm_s / step_s */
} sc_seed38_side;

typedef struct sc_seed38_cmp {
    sc_seed38_side base, pipe;
    double ratio;        /* pipe.step / base.step */
    double gain;         /* base.step / pipe.step - 1 */
    double share;        /* base.share */
    double comm_ratio;   /* pipe.comm / base.comm */
    double pred16, pred8;/* (1 - share) + share / log2 16, / log2 8 */
    double pred_comm;    /* (1 - share) + share · comm_ratio */
} sc_seed38_cmp;

typedef struct sc_seed38_point {
    double x;            /* bandwidth factor, or node count */
    double nic_bytes_per_s;
    int dp;
    long global_batch;
    double share_sim, ratio_sim, share_est, ratio_est;
    double closed16, closed8; /* bandwidth sweep: at share_sim; nodes sweep: closed16 =
                                 1/2 + 1/2/log2(nodes), closed8 unused (NaN) */
} sc_seed38_point;

typedef struct sc_seed38_model {
    char name[SC_NAME_MAX + 1];
    double params;
    int span;                  /* k: nodes one model copy spans */
    sc_step_cfg base, pipe;    /* partition NULL (uniform); placement "tp,pp,dp" */
    int base_tp_nodes, base_pp_nodes, pipe_tp_nodes, pipe_pp_nodes;
    sc_seed38_cmp est, sim;
    sc_seed38_point bw[SC_SEED38_N_BW];
    sc_seed38_point nodes[SC_SEED38_N_NODES];
    int n_nodes;               /* node counts k divides */
    /* bandwidth factors at which the simulated ratio reaches 0.625 and
     * 0.62 (a 38% saving), interpolated linearly in log2 factor between
     * sweep points; NaN when the sweep does not reach them */
    double bw_factor_0625, bw_factor_38;
    double measured_ratio;     /* NaN = none handed in */
    char measured_source[256];
} sc_seed38_model;

typedef struct sc_seed38 {
    char cluster[SC_CLUSTER_NAME_MAX + 1];
    int nodes, gpus_per_node, microbatches;
    long global_batch;
    int n_models;
    sc_seed38_model models[SC_SEED38_MAX_MODELS];
} sc_seed38;

/* The closed form: (1 - share) + share / log2 n (n >= 2). */
double sc_seed38_closed(double share, double n);

/* Nodes that the tensor-parallel group (pp_group 0) or the pipeline
 * (pp_group 1) of replica 0, position 0 spans under cfg's placement, with
 * rank -> node = rank / gpus_per_node (as the simulator places ranks). */
int sc_seed38_group_nodes(const sc_step_cfg *cfg, int gpus_per_node, int pp_group);

/* The two layouts for m on c (c->nodes nodes), global batch B, m
 * microbatches (see the top of this file). SC_EINVAL with a message when no
 * k >= 2 fits (heads, node count, layers) or B does not split into dp·m·mbs. */
sc_status sc_seed38_layouts(const sc_model *m, const sc_cluster *c, long global_batch, int mb,
                            sc_step_cfg *base, sc_step_cfg *pipe, int *span, sc_error *err);

/* Runs everything. opts NULL = defaults. SC_EINVAL for bad options, or as
 * the loaders, layouts, estimate and simulator fail. */
sc_status sc_seed38_run(const sc_seed38_opts *opts, sc_seed38 **out, sc_error *err);
void sc_seed38_free(sc_seed38 *r);

/* Hands in a measured pipeline/baseline ratio for a model (its name as in
 * the result) and where it came from (e.g. "netcluster 2 x cpu-local, 1 Gb/s
 * shaped link"). SC_ENOTFOUND for an unknown model, SC_EINVAL for a ratio
 * that is not finite and > 0. */
sc_status sc_seed38_set_measured(sc_seed38 *r, const char *model, double ratio,
                                 const char *source, sc_error *err);

cJSON *sc_seed38_to_json(const sc_seed38 *r); /* NULL on allocation failure */
/* Writes the four plots and seed38.json into dir (created with its parents
 * if missing), each whole or not at all; on failure the ones already
 * written are removed. SC_ENOTSUP without gnuplot, SC_EIO, SC_ENOMEM. */
sc_status sc_seed38_write(const sc_seed38 *r, const char *dir, sc_error *err);

#endif
