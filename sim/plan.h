/* plan.h - a plan (stagecraft.plan/1): a parallel configuration of one model
 * on one cluster, with its partition, placement and prediction. The planner
 * writes it, `sim --plan` replays it, the executor runs it.
 *
 * JSON:
 *   { "format": "stagecraft.plan/1",
 *     "model":   { "name", "source", "digest" },   source: a built-in name or a file
 *     "cluster": { "name", "source", "digest", "nodes", "gpus_per_node" },
 *     "dp", "tp", "pp", "v", "microbatches", "mbs", "global_batch",
 *     "schedule", "zero", "recompute", "placement",
 *     "bucket_bytes",   data-parallel gradient bucket size (optional; 25 MiB)
 *     "overlap_grad_reduce", true: dp bucket reductions start during the backward
 *                       (Megatron-LM --overlap-grad-reduce, PyTorch DDP); false: after
 *                       it (optional; absent = true, written only when false)
 *     "overlap_p2p_comm", true: pipeline sends beside the compute (Megatron-Core
 *                       --overlap-p2p-communication); false: each blocks its
 *                       sender until it arrives (optional; absent = true,
 *                       written only when false)
 *     "sp",             sequence parallelism (optional; false)
 *     "tp_comm_overlap", true: the sp collectives move beside the GEMMs
 *                       (Megatron-LM --tp-comm-overlap; needs sp); optional,
 *                       absent = false, written only when true
 *     "overlap_param_gather", true: ZeRO 1/2's parameter all-gather moves to
 *                       the next step's first forward (Megatron-LM
 *                       --overlap-param-gather; needs ZeRO 1 or 2 and
 *                       overlap_grad_reduce); optional, absent = false,
 *                       written only when true
 *     "defer_embedding_wgrad_compute", true: the output layer's weight
 *                       gradients of the first "wgrad_deferral_limit"
 *                       microbatches (0: all; integer >= 0, absent = 0) run
 *                       in the pipeline flush (Megatron-Core
 *                       --defer-embedding-wgrad-compute; needs pp >= 2);
 *                       optional, absent = false, both written only when true
 *     "grad_reduce_in_fp32", true: the data-parallel gradients are reduced in
 *                       fp32 where the model trains in 16 bits (Megatron-Core's
 *                       grad_reduce_in_fp32, FSDP reduce_dtype fp32); optional,
 *                       absent = false (the training dtype), written only when true
 *     "fp8",            true: the attention and MLP weight GEMMs run in fp8 as
 *                       Transformer Engine runs them (Megatron-Core
 *                       --fp8-format hybrid; sc_step_cfg fp8); optional,
 *                       absent = false, written only when true
 *     "attention",      "unfused" or "flash" (optional; "unfused"): which
 *                       kernels an attention leaf runs (kernel.h)
 *     "slices",         token slices of each microbatch (TeraPipe): their
 *                       lengths in tokens (optional; absent: none)
 *     "partition": { "method": "uniform"|"tree"|"optimal"|"explicit",
 *                    "stages": [ { "first_leaf", "last_leaf", "first", "last" } ] },
 *     "ranks": [ { "rank", "node", "device", "dp", "pp", "tp" } ],
 *     "prediction": { "step_time_s", "bubble_fraction", "breakdown": {...},
 *                     "peak_mem_bytes": [per stage], "tflops_per_gpu", "mfu",
 *                     "tokens_per_s", "cost_per_step_usd" } }          (optional)
 * Digests are FNV-1a of the model's and cluster's JSON (sc_json_digest): a
 * plan replayed against a changed model or cluster is refused, naming which.
 * Stage i holds leaves first_leaf..last_leaf (inclusive) in execution order;
 * first/last are those leaves' names, checked against the model on open.
 *
 * Checks (a tampered plan is refused naming the file and the JSON path):
 * on load, every field's type and range, the schedule and its (pp,
 * microbatches, v), the placement, partition.method, global_batch =
 * dp·microbatches·mbs, and ranks: dp·tp·pp entries in rank order, rank r on
 * node r / gpus_per_node and device r mod gpus_per_node with the (dp, pp,
 * tp) that sc_step_coords gives under the placement (a permutation of the
 * layout: nothing swapped, repeated or missing); on open, the digests, the
 * cluster's GPUs per node, the stages against the model's leaves (bounds,
 * first/last names) and tp dividing every attention module's heads
 * (sc_cost_tp_check).
 *
 * Ownership: sc_plan_load / sc_plan_make return a plan the caller frees with
 * sc_plan_free (NULL ok).
 */
#ifndef SC_PLAN_H
#define SC_PLAN_H

#include <cjson/cJSON.h>
#include "cluster.h"
#include "model.h"
#include "partition.h"
#include "sc.h"
#include "step.h"

#define SC_PLAN_FORMAT "stagecraft.plan/1"

typedef struct sc_plan {
    char model_name[SC_NAME_MAX + 1], model_source[1024], model_digest[17];
    char cluster_name[128], cluster_source[1024], cluster_digest[17];
    int nodes, gpus_per_node;
    int dp, tp, pp, v, m, mbs, zero;
    int cp;               /* context parallelism, >= 1 (1: none; the key "cp", written when > 1) */
    sc_recompute recompute;
    double bucket_bytes;  /* > 0 */
    int sp;               /* sequence parallelism */
    sc_attn attn;         /* attention implementation */
    int slices;           /* token slices (0: none) */
    int slice_len[64];    /* their lengths (SC_SLICES_MAX) */
    int overlap_grad_reduce; /* dp reductions overlap the backward (default 1) */
    int overlap_p2p_comm;    /* pipeline sends beside the compute (default 1) */
    int tp_comm_overlap;  /* sp collectives beside the GEMMs (default 0) */
    int overlap_param_gather; /* ZeRO 1/2 gather beside the next forward (default 0) */
    int defer_embedding_wgrad; /* the output layer's wgrads in the pipeline flush (0) */
    int wgrad_deferral_limit;  /* of the first N microbatches (0: all) */
    int grad_reduce_in_fp32;   /* the dp gradient reduction in fp32 (default 0) */
    int fp8;                   /* fp8 GEMMs in the transformer layers (default 0) */
    char framework[16];   /* whose overhead the prediction includes (overhead.h); "" = none */
    char schedule[32], placement[16], method[16];
    sc_partition partition;
    int has_prediction;
    double step_time_s, bubble_fraction, tflops_per_gpu, mfu, tokens_per_s, cost_per_step_usd;
    sc_step_breakdown breakdown;
    double *peak_mem; /* pp entries when has_prediction */
    char **first_names, **last_names; /* per stage, as the file names them (NULL if absent) */
} sc_plan;

/* The partition methods a plan may name (NULL-terminated): the planner's
 * partitioners (planner/partitioner_hook.h; a test checks they are all
 * here) and "explicit" (sim --partition B1,B2,...). */
extern const char *const sc_plan_methods[];

/* A plan from a configuration (cfg->partition must be set, with pp·v
 * stages) and, optionally, its simulated result r (NULL: no prediction).
 * model_source / cluster_source are what the executor will open (a
 * built-in name or a path). */
sc_status sc_plan_make(const sc_model *m, const char *model_source, const sc_cluster *c,
                       const char *cluster_source, const sc_step_cfg *cfg, const char *method,
                       const sc_step_result *r, sc_plan **out, sc_error *err);
cJSON *sc_plan_to_json(const sc_plan *p, const sc_model *m);
sc_status sc_plan_save(const sc_plan *p, const sc_model *m, const char *file, sc_error *err);
/* Parses and validates the file alone (not against the model). */
sc_status sc_plan_load(const char *file, sc_plan **out, sc_error *err);
/* Opens the plan's model and cluster from their sources, applies the node
 * count, checks both digests and the partition's leaf names. */
sc_status sc_plan_open(const sc_plan *p, const char *file, sc_model **model,
                       sc_cluster *cluster, sc_error *err);
/* The same on another cluster (a preset or file, e.g. a calibrated one;
 * NULL: the plan's own, as sc_plan_open): the plan's own cluster is not
 * opened or checked, so a plan whose preset has changed since it ran can
 * still be replayed on a cluster named on purpose; `on` must have the
 * plan's GPUs per node, and gets the plan's node count and framework
 * overhead. */
sc_status sc_plan_open_on(const sc_plan *p, const char *file, const char *on,
                          sc_model **model, sc_cluster *cluster, sc_error *err);
/* The step configuration of the plan (partition points into p). */
void sc_plan_step_cfg(const sc_plan *p, sc_step_cfg *cfg);
void sc_plan_free(sc_plan *p);

/* FNV-1a digest of a plan file's JSON (as loaded), for timelines that name
 * the plan they measured. */
sc_status sc_plan_file_digest(const char *file, char out[17], sc_error *err);

/* Digests used in plans. */
sc_status sc_model_digest(const sc_model *m, char out[17]);
sc_status sc_cluster_digest(const sc_cluster *c, char out[17]);

#endif
