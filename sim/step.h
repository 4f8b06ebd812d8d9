/* step.h - one training step of a parallel configuration, built as tasks on
 * the discrete-event engine and simulated.
 *
 * What runs after what is not decided here: sc_step_simulate lowers the
 * step (lower.h, the one list of actions the executor runs too) and
 * translates each action into engine tasks on modelled resources, in four
 * phases (the schedule's ops with their collectives, pipeline messages,
 * tied-group allreduces, the optimizer). What follows says how each action
 * is modelled.
 *
 * What is modelled (each piece's cost from cost_models/, never a constant):
 *   - ranks: dp·tp·pp, placed by cfg->placement (default "tp,pp,dp": tp
 *     innermost within a node, then pp, then dp); rank -> node = rank / gpus
 *     per node. The tp ranks of one (dp, pp) position run identical work, so
 *     they share one compute-stream resource in the engine; their traffic is
 *     simulated per rank.
 *   - links: per GPU an intra-node port out and in (intra.bytes_per_s ·
 *     bw_eff, latency alpha_intra on the out port), per node a NIC out and in
 *     (nics_per_node · nic_bytes_per_s · bw_eff, latency alpha_inter on the
 *     out side). A transfer inside a node crosses [port_out(src),
 *     port_in(dst)], across nodes [nic_out(src node), nic_in(dst node)]:
 *     every GPU of a node shares its NICs, with max-min fair sharing. A
 *     collective of S bytes below its plateau (the cluster's size ramp r(S),
 *     cost.h) loads each hop with its bytes / r(S) at the hop's link class.
 *   - compute: per virtual stage and microbatch, forward and backward time
 *     of the stage's leaves (sc_cost_modules_time); zb-h1 splits the
 *     backward into W, its weight-gradient GEMMs (sc_stage_info.bwd_w_s), and
 *     B, the rest: input gradients, attention's score products and every
 *     memory pass, as the executor runs them (an input- and a weight-gradient
 *     GEMM have the same FLOPs, but B also carries what has no weights, so
 *     T_B > T_W, where Qi et al. 2023 assume them equal). Recompute: full re-runs the
 *     forward (and its tp allreduces) before each backward; selective re-runs
 *     the attention scores and values, 4·s²·h FLOPs per sample per attention
 *     module (Korthikanti et al. 2022), from the module's dims.
 *   - tensor parallelism: after each forward and each backward (B) op, one
 *     ring allreduce over the tp group of the op's summed tp bytes (Megatron
 *     allreduces s·h per sample after attention and after the MLP), with the
 *     latency of every allreduce in it: 2(t-1)·alpha each.
 *   - pipeline: each SEND of the schedule moves mbs·act_out of the stage's
 *     last leaf, split over the tp ranks (Megatron's scatter/gather
 *     optimisation, Narayanan et al. 2021 §4.1), rank t to rank t of the next
 *     stage; the matching RECV waits for it. Sends do not block the sender,
 *     unless cfg->no_overlap_p2p_comm: then its stream waits for each.
 *   - data parallelism: each chunk's gradients are reduced in buckets of
 *     cfg->bucket_bytes (default 25 MiB, PyTorch DDP's; at most 32 buckets a
 *     chunk, larger buckets beyond) that overlap the last backward of that
 *     chunk: the backward op is split into as many pieces and bucket k starts
 *     when piece k ends; with cfg->no_overlap_grad_reduce every bucket waits
 *     for the position's last backward (lower.h). ZeRO 0: ring allreduce; ZeRO 1, 2: reduce-scatter,
 *     the optimizer on 1/dp of the states, then an allgather of the updated
 *     parameters; ZeRO 2 and 3 (sharded gradients): every backward, not the
 *     last alone, cut into its buckets, each reduce-scattered; ZeRO 3: an
 *     allgather of the stage's parameters before every forward and backward
 *     (prefetched: it may start once the previous op has started).
 *     Collectives on one communicator run one after another.
 *   - a shared group (tied embedding and LM head) whose members sit on
 *     different stages: each of those stages holds the parameters and their
 *     gradients are allreduced between them before the optimizer (as
 *     Megatron-LM does for tied embeddings).
 *   - the optimizer: reads and writes every state of the rank's parameters
 *     once (sc_cost_optimizer_time).
 *   Collectives are rings simulated as flows: each member sends the ring's
 *   volume (allreduce 2(n-1)/n·S, reduce-scatter and allgather (n-1)/n·S)
 *   to the next member, all at once, after a latency of steps·alpha; ranks
 *   are ordered by rank so a ring crosses each node boundary once.
 *
 * Breakdown: every compute stream's time is busy (compute, recompute,
 * optimizer) or idle; an idle gap ends at a task that waited on something,
 * and the part of the gap during which that communication was in flight is
 * exposed communication of its kind (tp, pp, dp); the rest, and the tail
 * after the stream's last task, is bubble. So for every rank
 *   step = compute + recompute + optimizer + tp + cp + pp + dp + bubble
 * and the reported breakdown is the average over ranks.
 *
 * Throughput: model FLOPs per step = 3 · fwd FLOPs · global batch (2 for
 * backward); tflops_per_gpu follows Megatron-LM (Narayanan et al. 2021):
 * it counts the recomputed forward too (4· under full recompute);
 * MFU (Chowdhery et al. 2022) counts model FLOPs only, against the dtype's
 * peak.
 *
 * Ownership: sc_step_simulate returns a result freed with
 * sc_step_result_free (NULL ok). Deterministic: the same inputs and seed
 * give the same bytes.
 */
#ifndef SC_STEP_H
#define SC_STEP_H

#include <cjson/cJSON.h>
#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "partition.h"
#include "sc.h"
#include "timeline.h"

typedef struct sc_step_cfg {
    int dp, tp, pp, v, m, mbs;
    /* context parallelism (Megatron-Core's --context-parallel-size, with
     * Transformer Engine's fused attention): each sample's sequence is split
     * over cp ranks, 2·cp chunks placed for balance (sc_compute_cfg cp), and
     * the keys and values of every attention layer are passed around the cp
     * group beside its fused kernel, cp - 1 chunks a forward (the stream
     * waits for the last: SC_ACT_CP, lower.h). 0 or 1: none. Ranks are
     * dp·cp·tp·pp; a rank's cp index sits next to its tp index (each
     * tp·cp block is contiguous in the placement's tp place, as Megatron-
     * Core's order tp-cp-dp-pp), and the gradients are reduced and
     * ZeRO-sharded over the dp·cp ranks of a (position, tp rank): the
     * "replicas" below are those dp·cp (sc_step_dpc). Needs flash
     * attention, self-attention only and a sequence divisible by 2·cp. */
    int cp;
    const char *schedule;            /* "gpipe", "1f1b", "interleaved", "zb-h1" */
    int zero;                        /* 0..3 */
    sc_recompute recompute;
    int sp;                          /* sequence parallelism (Korthikanti et al. 2022); needs tp > 1 */
    sc_attn attn;                    /* attention implementation: unfused (0) or flash */
    /* token slices (TeraPipe, Li et al. 2021): each microbatch's sequence
     * runs through the pipeline as `slices` units (0 or 1: none), of
     * slice_len[0..slices) tokens (NULL: equal lengths; they must sum to the
     * model's seq_len). gpipe and 1f1b; causal decoder models only. */
    int slices;
    const int *slice_len;
    /* (sc_step_check_slices refuses a count out of range, equal slices that
     * do not divide the sequence, lengths < 1 or not summing to it, another
     * schedule, and models that are not causal decoders) */
    const sc_partition *partition;   /* NULL = uniform over pp·v stages */
    const char *placement;           /* NULL = "tp,pp,dp" (innermost first) */
    double bucket_bytes;             /* 0 = 25 MiB */
    /* Megatron-LM's --overlap-grad-reduce off: the dp bucket reductions of the
     * grad-final ops start after the position's last backward instead of during
     * it (lower.h). 0 = overlap (the default, and the behaviour before the
     * setting existed). */
    int no_overlap_grad_reduce;
    /* Pipeline messages that block their sender (Megatron-LM's non-interleaved
     * schedules, its interleaved one with --no-overlap-p2p-communication or
     * before October 2023, and in 2022 with a device synchronisation after
     * each; DeepSpeed's pipeline engine): the sender's compute stream waits for
     * each SEND to arrive before its next op. 0 = sends beside the compute
     * (Megatron-LM's interleaved schedule today; the default, and the
     * behaviour before the setting existed). */
    int no_overlap_p2p_comm;
    /* Megatron-LM's --tp-comm-overlap (Transformer Engine's userbuffers; needs
     * sp): each op's tensor-parallel collectives are split into tp chunks
     * that move beside the op's GEMMs, all but one: the compute stream waits
     * for the larger of the op and those chunks, then for the last chunk
     * (lower.h). 0 = off (the default, Megatron-LM's too). */
    int tp_comm_overlap;
    /* Megatron-LM's --overlap-param-gather (ZeRO 1 and 2, with overlap of the
     * gradient reduction): the updated parameters' all-gather moves from after
     * the optimizer to the next step's first forward: the first unit (the
     * stage's parameters outside its layers and its largest layer) before the
     * position's first compute op, the rest beside that op and before the
     * second (lower.h). 0 = after the optimizer (the default, Megatron-LM's). */
    int overlap_param_gather;
    /* Megatron-Core's --defer-embedding-wgrad-compute, with
     * --wgrad-deferral-limit L (wgrad_deferral_limit; 0: every microbatch):
     * on the last pipeline position the output layer's weight-gradient GEMMs
     * (sc_stage_info head_wgrad_s) of the first L microbatches leave their
     * backward and run together after the position's last backward, in the
     * pipeline flush, before that chunk's gradients are reduced (lower.h).
     * Needs pp >= 2 and no token slices. 0 = off (the default, Megatron-LM's). */
    int defer_embedding_wgrad;
    int wgrad_deferral_limit;
    /* the data-parallel gradient reduction in fp32 where the model trains in
     * a 16-bit dtype: every bucket allreduce or reduce-scatter and each tied
     * group's allreduce moves 4 bytes a parameter, PyTorch FSDP casts the
     * gradients up before and not back after (sc_cost_fsdp_copies), and
     * unsharded gradients are held at 4 bytes (sc_cost_states). Megatron-
     * Core's grad_reduce_in_fp32 (Megatron-LM's default in bf16, which
     * --grad-reduce-in-bf16 turns off), PyTorch FSDP's MixedPrecision with
     * reduce_dtype fp32 (Composer's DEFAULT), DDP under autocast (fp32
     * parameters). 0 = in the training dtype's gradient width (the default,
     * and the behaviour before the setting existed). */
    int grad_reduce_in_fp32;
    /* fp8 training as Transformer Engine runs it (Megatron-Core
     * --fp8-format hybrid): the attention and MLP leaves' weight GEMMs in
     * fp8 with their casts (sc_compute_cfg fp8); needs a 16-bit model, fp8
     * tensor cores and the kernel-level GEMM model. 0 = none (default). */
    int fp8;
    double jitter;                   /* relative sigma of compute-time noise; 0 = none */
    unsigned long seed;
    int want_timeline;
    /* Simulate data-parallel replica 0 alone, standing for all, its cp
     * peers included (every replica runs the same ops; its dp collectives'
     * flows carry the NIC load the others would, its cp ring is its own hop
     * out and its neighbour's in, and its sends and ties that leave the
     * node carry the share of the replicas on its node): dp·cp times fewer
     * tasks. Used only when dp is the outermost placement; the timeline then
     * holds replica 0's ranks. tests/test_step.c and tests/test_cp.c check
     * it against the full simulation. */
    int one_replica;
    /* Refuse to simulate when sc_step_size_estimate's bytes exceed this
     * (SC_EINVAL naming the estimate and the limit); 0 = no limit. The
     * commands pass --max-mem (default half the physical memory). */
    double max_mem_bytes;
} sc_step_cfg;

typedef struct sc_step_breakdown {
    double compute, recompute, optimizer, tp, pp, dp, bubble;
    double cp; /* context parallelism's key/value passing, exposed (0 without cp) */
} sc_step_breakdown;

typedef struct sc_step_link {
    char name[48];
    double bytes, busy_fraction, utilisation; /* utilisation = bytes / (bandwidth · step) */
} sc_step_link;

typedef struct sc_step_result {
    double step_time_s;
    int seq_len;          /* the model's tokens per sample (slices' lengths) */
    sc_step_breakdown breakdown;   /* average per rank, seconds */
    double bubble_fraction;        /* breakdown.bubble / step */
    int n_ranks, nodes_used;
    double *busy_fraction;         /* per rank */
    int pp;
    sc_mem *mem;                   /* per pipeline stage (rank position) */
    int fits;                      /* every stage fits in GPU memory */
    int n_links;
    sc_step_link *links;           /* links that carried bytes */
    double global_batch, samples_per_s, tokens_per_s;
    double model_flops, tflops_per_gpu, mfu;
    double cost_per_step_usd, cost_per_mtok_usd;
    long long events;
    int n_tasks;
    sc_timeline *timeline;         /* when cfg->want_timeline */
} sc_step_result;

/* What simulating cfg allocates, estimated from the configuration alone
 * before anything is allocated, O(1). The counts follow lower.h's rules and
 * step.c's translation, rounded up where they depend on the stages (a tp
 * allreduce after every compute when tp > 1, every stage sending and
 * receiving, SC_MAX_BUCKETS-capped buckets from the model's gradients):
 *   actions  ~ pp·v·(m·(ops per microbatch) + 2·buckets) + 3·pp
 *   tasks    ~ per replica simulated (dp·cp, or 1 with one_replica) each
 *              compute and receive one task, each tp allreduce 4 + tp, each
 *              send tp + 2; each data-parallel collective tp·(3 + dp, or 2
 *              flows with one_replica)
 *   timeline ~ actions/pp ops per simulated rank (when asked), and its JSON
 *   bytes    = the larger of simulating (actions·96 + tasks·200 + flows·64
 *              + timeline ops·72) and writing the timeline (ops·(72 + 400)),
 *              plus 16 MiB: the per-item sizes of lower.c, engine.c, step.c's
 *              task info, timeline.c and the text written, with the slack of
 *              arrays that grow by doubling (measured: 1.2 to 3 times the
 *              peak resident size). tests/test_harden_limits.c checks the
 *              counts against sc_step_simulate's own. */
typedef struct sc_step_size {
    double actions, tasks, flows, timeline_ops, bytes;
} sc_step_size;
void sc_step_size_estimate(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                           sc_step_size *out);

/* cfg's context-parallel degree, 1 for none (cp 0 and 1 both mean none). */
static inline int sc_step_cp(const sc_step_cfg *cfg) { return cfg->cp > 1 ? cfg->cp : 1; }

/* The data-parallel group with context parallelism: dp·cp ranks hold the
 * same parameters and reduce their gradients together (dp when cp <= 1). A
 * rank's d coordinate (sc_step_rank, sc_step_coords) runs over it: d =
 * (data-parallel index)·cp + (cp index). */
static inline int sc_step_dpc(const sc_step_cfg *cfg)
{
    return cfg->dp * sc_step_cp(cfg);
}

/* Checks cfg against the model and cluster (degrees, schedule, zero,
 * placement, ranks that fit the cluster, tp dividing heads is NOT required
 * here: the planner enforces it). */
sc_status sc_step_check(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                        sc_error *err);
/* The token-slice part of sc_step_check (also for the planner and the plan
 * loader): messages name --slices or slice_len. */
sc_status sc_step_check_slices(const sc_model *m, const sc_step_cfg *cfg, sc_error *err);

/* The context-parallel part of sc_step_check (also for the plan and
 * validation loaders): cp needs flash attention, no token slices, a
 * sequence divisible by 2·cp and attention leaves with self-attention
 * fused kernels. Messages name --cp. */
sc_status sc_step_check_cp(const sc_model *m, const sc_step_cfg *cfg, sc_error *err);

/* The one rule for the two Megatron-LM overlaps, which sc_step_check, the
 * plan loader and the validation loader each report in their own terms:
 * why tp_comm_overlap (tpo) or overlap_param_gather (opg) cannot apply to a
 * layout with sequence parallelism sp, ZeRO stage zero and the gradient
 * reduction overlapped or not (ogr), with the key at fault in *key; NULL
 * when they can. */
const char *sc_step_overlap_why(int sp, int zero, int ogr, int tpo, int opg, const char **key);
/* Why defer_embedding_wgrad_compute (defer) cannot apply to a layout of pp
 * positions, or NULL: the one rule of sc_step_check, the plan loader and the
 * validation suite's, each naming the key its own way. */
const char *sc_step_defer_why(int defer, int pp);
/* Gives cfg the overlaps a search asked for (tpo, opg) where they apply to
 * its layout (sp; ZeRO 1 or 2 with the reduction overlapped), none elsewhere. */
void sc_step_overlaps_where_apply(sc_step_cfg *cfg, int tpo, int opg);
sc_status sc_step_simulate(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                           sc_step_result **out, sc_error *err);
void sc_step_result_free(sc_step_result *r);
/* The largest predicted peak memory of a pipeline position (r->mem[].total),
 * bytes: what a rank of the step needs. */
double sc_step_peak_mem(const sc_step_result *r);
/* The result as JSON (keys: step_time_s, bubble_fraction, tflops_per_gpu,
 * mfu, peak_mem_bytes (per stage), cost_per_step_usd, breakdown, ...). */
cJSON *sc_step_result_json(const sc_step_result *r, const sc_step_cfg *cfg);
/* Adds b to parent as "breakdown" (seconds: compute_s, recompute_s,
 * optimizer_s, tp_comm_s, pp_comm_s, dp_comm_s, bubble_s, and cp_comm_s when
 * cp > 1); *oom set on failure. The one writer of that object (sim --json,
 * plans' prediction, validate --json). */
void sc_step_breakdown_json(cJSON *parent, const sc_step_breakdown *b, int cp, int *oom);

/* The stage configuration sc_cost_stage costs cfg's stages with: the
 * model's dtype and cfg's tp, mbs, recompute, bucket, sp, attention and
 * ZeRO over dp (whole tokens: no slice). Every path that costs a plan's
 * stages (the step, the lowering, token slices, calibrate's op points) takes
 * it from here. */
sc_stage_cfg sc_step_stage_cfg(const sc_model *m, const sc_step_cfg *cfg);

/* sc_cost_stage (cost.h) for cfg's partition (NULL = uniform): info[0 ..
 * pp·v), after sc_step_check. */
sc_status sc_step_stage_infos(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                              sc_stage_info *info, sc_error *err);

/* Half-width of an approximate 95% interval of r's step time on a
 * calibrated cluster: 1.96 · step · sqrt((b·sd_compute)² + (k·sd_link)²),
 * where b and k are the busy (compute, recompute, optimizer) and exposed
 * communication shares of the step and sd the relative residual standard
 * deviations of the fits (efficiency.fits: compute of dt, the worse link
 * class). 0 when the cluster carries no fits. */
double sc_step_interval(const sc_step_result *r, const sc_cluster *c, sc_dtype dt);

/* Placement: rank of coordinates (d, p, t) and back; d in [0, dp·cp)
 * (sc_step_dpc: the cp index is d % cp and sits next to t). */
int sc_step_rank(const sc_step_cfg *cfg, int d, int p, int t);
void sc_step_coords(const sc_step_cfg *cfg, int rank, int *d, int *p, int *t);

#endif
