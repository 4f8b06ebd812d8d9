/* partitioner.h - automatic pipeline partitioners: `tree` (tracing-based,
 * balancing compute and memory over the module tree, in the spirit of
 * SageMaker model parallelism's auto-partition) and `optimal` (the exact
 * min-max contiguous split of the leaves), and sc_partition_eval, the stage
 * cost model both use, applicable to any partition (uniform included).
 *
 * Owner: planner/ (partition_cost.c, partition_tree.c, partition_optimal.c).
 *
 * Result: an sc_partition (sim/partition.h) of S = pp·v contiguous,
 * non-empty ranges of leaves in execution order; virtual stage k = c·pp + r
 * lives on pipeline rank r = k mod pp (chunk c = k / pp).
 *
 * ---- stage cost model (partition_cost.c) -----------------------------------
 * Every number comes from the cost models (cost_models/cost.h) and thus from
 * the cluster; nothing here is a constant of its own.
 *
 * Time of stage k holding leaves i..j (one microbatch, forward + backward):
 *   time = sum_{l=i..j} (fwd_l + bwd_l)          sc_cost_module_time(tp, mbs)
 *        + comm(boundary before i, k-1 -> k)     (k > 0)
 *        + comm(boundary after j,  k -> k+1)     (k < S-1)
 *   comm(b) = 2 · sc_cost_p2p(bytes(b))          once forward, once backward
 *   bytes(b), the boundary between leaves b-1 and b, = (act_out of leaf b-1
 *     + act_out of every `inputs` edge whose producer's last leaf is at or
 *     before b-1 and whose consumer's first leaf is at or after b) · mbs / tp
 *     (Megatron's scatter/gather: each tp rank sends 1/tp; edges relayed stage
 *     by stage, as sim/step.c does).
 *   Inter-node or not: placement tp innermost, then pp, then dp (step.h's
 *   default "tp,pp,dp"): GPU of (d, r, t) = (d·pp + r)·tp + t, node = GPU /
 *   gpus_per_node. The boundary k -> k+1 goes from rank k mod pp to rank
 *   (k+1) mod pp and is inter-node when, for some replica d and tp index t,
 *   the two GPUs lie on different nodes (every replica alignment is checked,
 *   d < min(dp, gpus_per_node)). Inter-node sends share the NICs among the
 *   min(tp, gpus_per_node) tp ranks of the stage that send at once.
 *   Not included (the simulator adds them): tp allreduces, recompute, the
 *   data-parallel reduction, the optimizer, pipeline bubbles.
 *
 * Memory of stage k holding leaves i..j, on rank r = k mod pp:
 *   mem = sc_cost_memory(leaves i..j; dtype, tp, dp, zero, mbs,
 *                        inflight = ceil(inflight[r] / v), recompute)
 *       + under the replicate policy, for every shared group with a member
 *         leaf in i..j: the state bytes (weights, grads, optimizer under the
 *         ZeRO stage, as sc_cost_memory counts them) of the group's member
 *         leaves outside i..j (the copy the stage holds; step.c's rule).
 *   The per-chunk in-flight count is step.c's: a rank's peak in-flight
 *   microbatch count split over its v chunks.
 *   A stage fits when mem - workspace <= (gpu.memory_bytes - workspace) / v:
 *   for v = 1 simply mem <= gpu.memory_bytes; for v > 1 each chunk must fit
 *   in a 1/v share of the rank's memory (workspace counted once per rank), a
 *   sufficient condition for the rank to fit (the rank's true total, the sum
 *   of its chunks, is what sc_part_eval.rank_mem reports).
 *
 * ---- shared groups -----------------------------------------------------------
 *   SC_SHARED_REPLICATE (default; Megatron-LM's tied embeddings): boundaries
 *     may fall between members; every stage holding a member is charged the
 *     group's parameters (above); time is unchanged (the simulator adds the
 *     gradient allreduce between the copies).
 *   SC_SHARED_STRICT: all members on one stage: no boundary falls between
 *     the first leaf of the group's first member and the last leaf of its
 *     last member. When too few boundaries are left for S stages the
 *     partitioners fail with SC_EINVAL "shared group 'G' spans A..B: cannot
 *     split into S stages; use the replicate policy".
 *   Group members are the modules naming the group; the parameters counted
 *   for copies are those of member leaves (as the simulator counts them).
 *
 * Ownership: outputs are filled only on success; partitions are freed with
 * sc_partition_free, evaluations with sc_part_eval_free (both safe on a
 * zeroed struct). Inputs are never modified. All functions are reentrant.
 */
#ifndef SC_PARTITIONER_H
#define SC_PARTITIONER_H

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "partition.h"
#include "sc.h"

typedef enum sc_shared_policy {
    SC_SHARED_REPLICATE = 0,
    SC_SHARED_STRICT
} sc_shared_policy;
const char *sc_shared_policy_name(sc_shared_policy p); /* "replicate", "strict" */
int sc_shared_policy_parse(const char *s);             /* -1 if unknown */

/* Memory weights of the tree partitioner for `--optimize speed|memory`. */
#define SC_PARTITION_W_SPEED 0.2
#define SC_PARTITION_W_MEMORY 0.8

typedef struct sc_partitioner_cfg {
    const sc_model *model;
    const sc_cluster *cluster;
    int tp, mbs, dp;          /* >= 1 */
    int zero;                 /* 0..3 */
    sc_recompute recompute;
    int n_stages;             /* S = pp · v */
    int pp, v;
    /* microbatches in flight per pipeline rank (sc_sched_peak_inflight):
     * pp entries, or NULL to use inflight_max on every rank */
    const int *inflight;
    int inflight_max;         /* >= 0; used when inflight is NULL */
    double mem_weight;        /* tree only, in [0, 1] */
    sc_shared_policy shared;
    /* 1: stages begin only between layers (sc_partition_between_layers),
     * never inside one; 0 (the default): at any leaf. The search sets it
     * unless asked to cut inside layers (search.h, framework.h). */
    int layer_cuts;
    int sp;                   /* sequence parallelism (memory: sc_cost_saved_bytes) */
    /* the plan's tp_comm_overlap: a layer's tp GEMMs are timed in TE's
     * chunks (sc_compute_cfg.tp_overlap), as the step's simulation times
     * them, so stages balance on what they run */
    int tp_overlap;
    sc_attn attn;             /* attention implementation (time and memory) */
    /* context parallelism (sc_step_cfg cp; 0 or 1: none): each leaf timed on its
     * 1/cp of the tokens against every key (sc_compute_cfg cp), activations /cp;
     * dp is then the data-parallel group with cp, dp·cp */
    int cp;
    /* fp8 GEMMs in the transformer layers (sc_compute_cfg fp8), as the
     * step's simulation times them; 0 = none */
    int fp8;
    /* optimal only: CLOCK_MONOTONIC seconds after which it returns the best
     * split found so far (0 = none; partition_optimal.c) */
    double deadline_s;
    /* optimal only: when no split fits, SC_ENOFIT "does not fit" without the
     * smallest need (which costs up to 200 more tests); the search asks for
     * the figure only for the shape it reports */
    int nofit_quick;
    /* optimal only: the most bytes its parents table may take (about the
     * stages times the leaves each test can still reach); more is SC_EINVAL
     * naming the limit. 0 = no limit. */
    double max_bytes;
} sc_partitioner_cfg;

/* Defaults: tp = mbs = dp = 1, zero 0, recompute none, pp = n_stages, v = 1,
 * inflight NULL with inflight_max = n_stages (1F1B's first rank, the worst
 * case), mem_weight SC_PARTITION_W_SPEED, replicate. */
void sc_partitioner_cfg_init(sc_partitioner_cfg *cfg, const sc_model *m, const sc_cluster *c,
                             int n_stages);

/* Tree partitioner. Walks the module tree from the root with a list of
 * units (subtrees): a unit whose cost exceeds one stage's share 1/S by more
 * than SC_TREE_TOL is replaced by its children (descending into it), until
 * none is too large (and there are enough cut points: for strict groups,
 * at least S-1 allowed ones). cost(unit) = (1-w)·time/total_time +
 * w·mem/total_mem, time and mem the sums over its leaves of fwd+bwd time and
 * of sc_cost_memory of the leaf alone less the workspace (with the ranks'
 * mean in-flight count). Then S-1 cuts are placed greedily, left to right:
 * cut c aims at ideal = P(prev) + (1 - P(prev)) / (S - c + 1) (an equal share
 * of what is left); among the allowed cut points that leave enough cut
 * points for the remaining stages, let d* be the smallest |P - ideal|; the
 * candidates with |P - ideal| <= d* + SC_TREE_TOL / S are near-equal and the
 * one with the fewest boundary bytes wins (then the smaller |P - ideal|, then
 * the earlier point). Memory is not checked: evaluate the result with
 * sc_partition_eval. Errors: SC_EINVAL for a bad cfg, fewer leaves than
 * stages, or a strict group that forbids the split.
 * Cost: O(M + L + U·S) time, O(M + L) memory (M modules, L leaves, U <= L
 * units after descending); O(M·L) in the worst case, when the units offer
 * fewer than S-1 cut points and are expanded one by one (partition_tree.c). */
#define SC_TREE_TOL 0.05
sc_status sc_partition_tree(const sc_partitioner_cfg *cfg, sc_partition *out, sc_error *err);

/* Optimal partitioner: the contiguous split of the leaves into S stages that
 * minimises the slowest stage's time (the cost model above), every stage
 * fitting in memory and respecting the shared policy. Exact: the returned
 * bottleneck is the smallest one achievable, to the last bit of the double
 * arithmetic used by the feasibility test (see partition_optimal.c for the
 * search and its complexity: O(L·S·64) time, 64 the bits of a double (at
 * most 2·64 + 2 feasibility tests of O(L·S) each; 10-15 on GPT models),
 * times log L when full recompute makes the memory window non-monotone; plus
 * O(M log M + E + L·G) to build the cost tables. gpt-175b (387 leaves),
 * S = 96: about 1 ms (2.6 ms with full recompute), bench/partition_bench.c).
 * Errors: SC_EINVAL (bad cfg, fewer leaves than stages, strict group);
 * SC_ENOFIT when no split fits, with the message "does not fit: needs X GiB
 * per GPU, has Y GiB" (%.1f each; X = the smallest achievable per-GPU need,
 * workspace + v · (min over splits of the largest stage memory less
 * workspace), from an exact min-max-memory split up to 1e-12 relative). */
sc_status sc_partition_optimal(const sc_partitioner_cfg *cfg, sc_partition *out,
                               sc_error *err);

/* "uniform" (sc_partition_uniform), "tree" or "optimal". */
sc_status sc_partition_by_method(const char *method, const sc_partitioner_cfg *cfg,
                                 sc_partition *out, sc_error *err);

/* The cost model applied to a partition of cfg->n_stages stages. */
typedef struct sc_part_eval {
    int n_stages, pp;
    double *time_s;        /* per stage: compute + boundary p2p, one microbatch */
    double *mem_bytes;     /* per stage: sc_cost_memory + shared copies (workspace included) */
    double *rank_mem;      /* per rank (pp): workspace + sum over its chunks of (mem - workspace) */
    double bottleneck_s;   /* max time_s */
    int bottleneck_stage;  /* its first index */
    double max_mem_bytes;  /* max mem_bytes */
    int fits;              /* every stage fits (the rule above) */
    int splits_shared;     /* some shared group has members on two stages */
} sc_part_eval;
/* O(L + M + E + S·G) (E inputs edges, G shared groups). */
sc_status sc_partition_eval(const sc_partitioner_cfg *cfg, const sc_partition *p,
                            sc_part_eval *out, sc_error *err);
void sc_part_eval_free(sc_part_eval *e);

/* ---- private to planner/partition_*.c (and their tests) ------------------
 * The cost model precomputed once per call: prefix sums that make a stage's
 * time and memory O(1) (O(G) with G shared groups).  The natural home is a
 * partitioner_int.h; kept here while the module is one header. */
typedef struct sc_pgroup {
    const char *name;
    const char *first_name, *last_name; /* first and last member modules */
    int span_lo, span_hi;   /* leaves from the first member's first leaf to the last's last */
    double all;             /* params of member leaves (per rank, /tp when tp_shardable) */
    double *here;           /* L+1 prefix of member-leaf params */
    int *next;              /* L+1: next member leaf at or after i (L if none) */
} sc_pgroup;

typedef struct sc_pctx {
    const sc_partitioner_cfg *cfg;
    const sc_model *m;
    int L, S, pp, v, tp, mbs;
    double cap;             /* (memory_bytes - workspace) / v: a stage's budget less workspace */
    double ws;              /* workspace bytes */
    double state_bpp;       /* state bytes per parameter under the ZeRO stage */
    double *t;              /* L: fwd + bwd per leaf */
    double *C;              /* L+1 prefix of t */
    double *bytes;          /* L+1: boundary bytes per tp rank (0 at 0 and L) */
    double *comm[2];        /* L+1: 2 · p2p(bytes), intra [0] and inter-node [1] */
    unsigned char *inter;   /* S-1: boundary k -> k+1 crosses nodes */
    unsigned char *forbid;  /* L+1: strict policy forbids a boundary there */
    int n_allowed;          /* allowed interior boundaries */
    /* memory prefix sums (the formulas of sc_cost_memory) */
    double *P;              /* L+1 params / T' */
    double *A;              /* L+1 sc_cost_saved_bytes (recompute none) */
    double *Asel;           /* L+1 selective */
    double *in_bytes;       /* L: act_out of the leaf before (full; / T' under sp) */
    double *ckpt;           /* L+1: in_bytes of the leaves that start a layer (full) */
    double *AL;             /* L+1: A of the leaves inside layers (full: what one layer
                               recomputes; all leaves when the model has no layers) */
    double *K;              /* L+1: A of the leaves outside layers, which full recompute
                               keeps (sc_mem_cfg has_layers) */
    unsigned char *out;     /* L: the leaf lies outside layers in a model with layers */
    int *layer;             /* L: layer id (root's child holding the leaf) */
    int *layer_lo, *layer_hi; /* per layer: leaf range [lo, hi) */
    int n_layers;
    double *sparse;         /* sparse table of layer sums, n_layers · levels */
    int levels;
    int *kc;                /* pp: per-chunk in-flight count of rank r */
    /* ZeRO 3 with dp > 1 (z3): the units of sc_cost_zero3_gathered, runs of
     * leaves in one sc_partition_layer_of; NULL otherwise */
    int z3;
    double *ZR;             /* L+1 prefix: params / T' outside any layer (the root unit) */
    double *ZU;             /* L+1 prefix: params / T' inside layers */
    int *unit_lo, *unit_hi; /* per unit: leaf range [lo, hi) */
    int *unit_next;         /* L+1: first unit with hi > l (n_units if none) */
    int *unit_prev;         /* L+1: last unit with lo < l (-1 if none) */
    int n_units, unit_levels;
    double *usparse;        /* sparse table of unit params, n_units · unit_levels */
    int n_groups;
    sc_pgroup *groups;
} sc_pctx;

sc_status sc_pctx_init(sc_pctx *x, const sc_partitioner_cfg *cfg, sc_error *err);
void sc_pctx_free(sc_pctx *x);
/* Time of stage k over leaves [i, j): (C[j] + send) - (C[i] - recv), the
 * exact expression the optimal search compares. */
double sc_pctx_time(const sc_pctx *x, int k, int i, int j);
/* Memory of stage k over leaves [i, j) less workspace, O(G + 1). */
double sc_pctx_memx(const sc_pctx *x, int k, int i, int j);
/* The group (index) that blocks a strict split, for the error message. */
sc_status sc_pctx_strict_error(const sc_pctx *x, sc_error *err);

#endif
