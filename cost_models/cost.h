/* cost.h - analytic cost models: compute time of modules, collective and
 * point-to-point communication time, memory per rank, and a per-module cost
 * table.
 *
 * Owner: cost_models/ (cost_compute.c, cost_comm.c, coll_ring.c, coll_tree.c,
 * coll_hier.c, cost_memory.c, cost_table.c).
 *
 * Every number comes from the sc_cluster (peak rates, link bandwidths, the
 * efficiency parameters calibration fits) or from the model; the only
 * constants here are definitions (bytes per Adam state, the busbw factors).
 * Functions are pure: same inputs, same result. Errors (an unsupported dtype,
 * a group that needs a network the cluster lacks, a bad degree) return a
 * status and a message naming the cluster and the module.
 *
 * ---- compute (cost_compute.c) ----------------------------------------------
 * One module call on one rank, tp degree T, microbatch of mbs samples:
 *   F = mbs * flops / T'           T' = T if the module is tp_shardable, else 1
 *   t = op_overhead + max(F / (peak[dt] * eff(F)), B / (hbm * memory_bw))
 *   eff(F) = eff_max[dt] * F / (F + f_half[dt]), so F / (peak * eff(F)) =
 *            (F + f_half) / (peak * eff_max): a start-up cost plus a rate
 *   (a roofline, Williams et al. 2009, with a size-dependent ceiling).
 * Bytes moved B (an estimate from the fields a module has; W = params/T' *
 * bytes(dt), A_s = mbs * act_saved/T', A_o = mbs * act_out):
 *   forward  B = W + A_s + A_o            (read weights, write stash and output)
 *   backward B = 2 W + A_s + 2 A_o        (read weights, write weight grads,
 *                                          read stash, read output grad, write
 *                                          input grad ~ A_o)
 * with A_o = 0 for a module with children (its act_out is its subtree's
 * output, written by its last leaf, not work of its own), and W = min(W,
 * A_o) for an embedding leaf (a lookup reads the rows its tokens select,
 * as many bytes as it writes, not its table: measured on the CPU backend,
 * a 2048-word table charged whole was predicted at 296-318 us where the
 * gather ran in 43).
 * Backward FLOPs are scaled by efficiency.bwd_factor (1 unless calibrated:
 * backward kernels, transposed operands, often run slower per FLOP).
 * A module with no flops and no bytes costs 0 (no call, no overhead).
 * Measured times: when the module has `measured` and measured_device equals
 * the cluster's gpu.name, t = measured * mbs / T' (measured times are per
 * sample at tp = 1, on that device, already including overheads).
 *
 * ---- communication (cost_comm.c, coll_*.c) ---------------------------------
 * alpha-beta model (Hockney 1994): a message of S bytes over a link costs
 * alpha + S / beta. Per link class: alpha = efficiency.{intra,inter}.alpha_s,
 *   beta_intra = intra.bytes_per_s * efficiency.intra.bw_eff
 *   beta_inter = nics_per_node * nic_bytes_per_s * efficiency.inter.bw_eff / g
 * where g = the members of the group on one node: they share the node's NICs
 * evenly (each GPU gets a 1/g share), the usual rail-aligned assumption.
 * A group of n ranks with g per node lies in one node when g >= n (intra
 * link only); otherwise the ring is bound by its
 * slowest hop, beta = min(beta_intra, beta_inter), alpha = alpha_inter.
 * Sizes S follow nccl-tests: the per-rank buffer for allreduce, broadcast
 * and alltoall, the whole (n-rank) buffer for reduce-scatter input and
 * allgather output. Algorithms (formulas in each coll_*.c):
 *   ring   allreduce 2(n-1)/n S/beta + 2(n-1) alpha (Patarasuk & Yuan 2009);
 *          reduce-scatter, allgather, alltoall (n-1)/n S/beta + (n-1) alpha;
 *          broadcast (pipelined chain) S/beta + (n-1) alpha.
 *   tree   within a node a double binary tree (Sanders et al. 2009): bandwidth
 *          term as ring, latency 2 ceil(log2 n) alpha for allreduce, ceil(log2
 *          n) alpha for the one-way collectives; alltoall as ring. Across
 *          k nodes NCCL's tree allreduce: 2((p-1) alpha_i + ceil(log2 k) alpha_e)
 *          + max(2(p-1)/p S/beta_i, f(k) S/beta_nic), f(2) = 1, f(k > 2) = 2
 *          (coll_tree.c); the other collectives as ring.
 *   auto   (the default) NCCL's choice: an allreduce across nodes as the
 *          faster of ring and tree, everything else as ring.
 *   hier   intra-node reduce-scatter, inter-node ring allreduce of S/g per
 *          GPU over its NIC share, intra-node allgather (the hierarchical
 *          allreduce of Horovod and BlueConnect, Cho et al. 2019); other
 *          collectives analogous, see coll_hier.c.
 * Size ramp (optional, per link class; efficiency.*.s_half_bytes, ramp_exp): NCCL
 * does not reach its plateau bus bandwidth on mid-sized messages (fewer channels,
 * the LL and LL128 protocols, pipeline fill), and the ramp is slower than the
 * alpha term alone gives. Each collective's bandwidth term is divided by
 *   r(S) = 1 / (1 + (s_half / S)^g),   S = the collective's nccl-tests size,
 * so a collective runs at bw_eff * r(S) of the link: alpha-beta with a Hill-type
 * efficiency (Hill 1910's saturation curve; g < 1 a slow ramp over decades of S,
 * as nccl-tests curves show). Within a node the intra ramp applies, for a group
 * spanning nodes the inter one (hier: intra phases at S, the inter phase at S/g).
 * The group size enters through the alpha steps (2(n-1) for a ring allreduce);
 * the ramp depends on S only (NCCL picks its channels and protocol by size).
 * Point-to-point messages have no ramp. Presets fit (alpha_s, bw_eff, s_half, g) to
 * public nccl-tests allreduce curves (presets.c; docs/accuracy.md).
 * Bandwidth reporting (nccl-tests doc/PERFORMANCE.md): algbw = S / t,
 * busbw = algbw * factor: allreduce 2(n-1)/n; reduce-scatter, allgather,
 * alltoall (n-1)/n; broadcast 1.
 *
 * ---- memory (cost_memory.c) -------------------------------------------------
 * Model states per parameter (ZeRO, Rajbhandari et al. 2020, mixed-precision
 * Adam): fp16, bf16 weights 2, grads 2, optimizer 12 (fp32 master, m, v);
 * fp8 counted the same (fp8 training keeps 16-bit weights and grads and the
 * same fp32 states, Micikevicius et al. 2022); fp32, tf32 weights 4, grads 4,
 * optimizer 8 (m, v): 16 bytes either way.
 * Parameters per rank P = sum params/T'. ZeRO over dp:
 *   stage 0: P(w+g+o)  1: P(w+g+o/dp)  2: P(w+(g+o)/dp)  3: P(w+g+o)/dp
 * Activations, k microbatches in flight of mbs samples, per module
 * act_saved/T' and act_out/T' (a sharded module's activations split):
 *   none:      k * mbs * sum act_saved/T'
 *   selective: k * mbs * sum over modules of act_saved/T', except modules of
 *              kind "attention" or "attention_core" keep only act_out/T'
 *              (their score/softmax stash is recomputed: Korthikanti et al.
 *              2022, selective recompute drops the 5as/h term; 0 for such a
 *              module with children, whose output is its last leaf's)
 *   full:      k * mbs * in_bytes + mbs * max over layers of that layer's
 *              sum act_saved/T', where in_bytes = act_out of the leaf that
 *              runs just before the first module of the list (the stage input
 *              kept per microbatch; 0 for the model's first leaf) and a layer
 *              is a child of the root (the unit re-run in backward).
 * Workspace = efficiency.workspace_bytes. Total = the sum.
 */
#ifndef SC_COST_H
#define SC_COST_H

#include "cluster.h"
#include "model.h"
#include "partition.h"
#include "sc.h"

/* ---- compute ---------------------------------------------------------------- */

/* What one module call's compute depends on. attn: the attention
 * implementation (kernel.h), read where a leaf lists kernels. */
typedef struct sc_compute_cfg {
    sc_dtype dtype;
    int tp, sp, mbs;
    sc_attn attn;
    /* a token slice (TeraPipe): its share of the sequence's tokens and the
     * share of the keys its queries see (its own and every earlier slice's);
     * 0 = the whole sequence (both 1). Kernel level only: token dimensions
     * scale by q_frac, a self-attention's key dimension (kernel kv) by
     * kv_frac, score-sized bytes by both, and a causal flash kernel runs
     * 4·batch·K·(M·N - M²/2) FLOPs. */
    double q_frac, kv_frac;
    /* Transformer Engine's userbuffer tp communication overlap (a plan's
     * tp_comm_overlap, under sp and tp >= 2): the tensor-parallel GEMMs of
     * a transformer layer (attention and MLP leaves) run in chunks beside
     * their collectives, as TE's default configuration splits them
     * (sc_cost_kernels_time); 0 = whole GEMMs. */
    int tp_overlap;
    /* context parallelism (Megatron-Core's --context-parallel-size with
     * Transformer Engine's fused attention): the sequence is cut into 2·cp
     * chunks and rank r of the cp group holds chunks r and 2·cp - 1 - r, so
     * under a causal mask every rank has the same work. Each rank runs 1/cp
     * of the tokens (sc_cost_q_share: q_frac / cp) against every key (its
     * queries see them all, passed around the group). A fused attention
     * kernel then runs 1/cp of the whole sequence's query-key pairs (half of
     * its M x N rectangle when causal, not a slice's M·N - M²/2), as cp
     * kernels a pass, one per key chunk received, each over N/cp keys (the
     * efficiency's fall with short key ranges is taken there). 0 or 1: none. */
    int cp;
    /* fp8 training as Transformer Engine runs it (Megatron-Core's
     * --fp8-format hybrid, delayed scaling; a plan's fp8): the weight GEMMs
     * of a transformer layer (attention and MLP leaves, not the batched
     * attention products or the LM head) run in fp8, forward, data and
     * weight gradients, at the fp8 peak and the GEMM model's eff_max_fp8,
     * reading 1-byte operands; each casts its input to fp8 with the
     * transpose its weight gradient reads (a cast-transpose kernel: 4 bytes
     * an element of a 16-bit input; 2, a transpose, where the input comes
     * from a norm, which TE's LayerNormLinear writes in fp8 itself), and
     * each backward casts the output gradient the same way (4 bytes an
     * element). Kernel level only, on a 16-bit model (sc_cost_cfg_check);
     * 0 = none. */
    int fp8;
} sc_compute_cfg;

/* One rank's share of a microbatch's tokens: a slice's q_frac (0: whole),
 * divided among the cp ranks of context parallelism (cp 0 or 1: none). The
 * one rule every token-sized figure scales by (kernel shapes and bytes, a
 * leaf timed whole, the tp and pipeline messages). */
static inline double sc_cost_q_share(double q_frac, int cp)
{
    return (q_frac > 0 ? q_frac : 1) / (cp > 1 ? cp : 1);
}

/* Kernel level (cost_kernel.c): whether mod is timed kernel by kernel (it
 * lists kernels and the cluster has efficiency.gemm); the time of one
 * kernel, forward or backward (bwd 1); the sums over a leaf's kernels that
 * run under cc->attn, and (recompute_s) the forward of the kernels selective
 * recompute re-runs (unfused attention's scores, softmax, dropout, context;
 * fused attention's kernel: Megatron-Core checkpoints the core attention
 * whatever its backend).
 * No op_overhead_s: each kernel carries efficiency.gemm.kernel_s. */
int sc_cost_uses_kernels(const sc_cluster *c, const sc_module *mod);
/* The shape one rank runs for kernel k under cc (tp first: ceil(dim / t)
 * along the kernel's tp field, then the microbatch along its samples
 * field); for a mem kernel *B = 1 and M = N = K = 0. */
void sc_cost_kernel_shape(const sc_kernel *k, const sc_compute_cfg *cc, double *B, double *M,
                          double *N, double *K);
/* One GEMM (batch, M, N, K) as run, seconds: on the kernel-level model
 * (efficiency.gemm; its compute scaled by scale, 1 forward, the backward
 * factor for a backward GEMM) or, on a cluster without one, the leaf
 * roofline with the per-op overhead. And one memory-bound pass of bytes:
 * kernel_s (or the per-op overhead) + bytes / (hbm · memory_bw). For
 * comparing kernels timed alone (exec --kernels, compare). */
double sc_cost_gemm_time(const sc_cluster *c, sc_dtype dt, double B, double M, double N,
                         double K, double scale);
double sc_cost_pass_time(const sc_cluster *c, double bytes);
/* A GEMM of M rows asked to run in `splits` chunks: how many it runs in
 * (at most M; 1 for splits <= 1 or M < 2) and, in *rows, the rows of each,
 * ceil(M / chunks). The one rule the cost model prices, the executor runs
 * and the kernel fit counts launches by. */
int sc_cost_gemm_chunks(double M, int splits, double *rows);
/* The same GEMM run in those chunks (sc_cost_gemm_chunks), as TE's tp
 * overlap runs it. */
double sc_cost_gemm_chunks_time(const sc_cluster *c, sc_dtype dt, double B, double M, double N,
                                double K, double scale, int splits);
/* How many chunks of its token rows (M) kernel k of module mod runs in
 * under cc: *fwd the forward GEMM, *dgrad the data gradient (the weight
 * gradient always whole). Transformer Engine's userbuffer tp overlap
 * (cc->tp_overlap with sp and tp >= 2) splits the tp GEMMs of a layer's
 * attention and MLP (cost_kernel.c has TE's rule); every other kernel 1, 1.
 * The one rule the cost model prices and the executor runs. */
void sc_cost_kernel_splits(const sc_module *mod, const sc_kernel *k, const sc_compute_cfg *cc,
                           int *fwd, int *dgrad);

double sc_cost_kernel_time(const sc_cluster *c, const sc_kernel *k, const sc_compute_cfg *cc,
                           int bwd);
/* The bytes a memory-bound kernel reads and writes on one rank under cc
 * (forward, or backward with bwd 1): its bytes times the microbatch and the
 * slice's share, divided by tp where it shards. 0 for other kinds. */
double sc_cost_kernel_bytes(const sc_kernel *k, const sc_compute_cfg *cc, int bwd);
/* Whether kernel k of leaf mod runs in fp8 under cc (sc_compute_cfg fp8: a
 * weight GEMM of an attention or MLP leaf). */
int sc_cost_fp8_gemm(const sc_module *mod, const sc_kernel *k, const sc_compute_cfg *cc);
/* Kernel i of leaf mod for a pass, whole (no tp overlap chunks), an fp8
 * GEMM's casts included (what `cost --kernels` prints). */
double sc_cost_kernel_time_in(const sc_cluster *c, const sc_module *mod, int i,
                              const sc_compute_cfg *cc, int bwd);
void sc_cost_kernels_time(const sc_cluster *c, const sc_module *mod, const sc_compute_cfg *cc,
                          double *fwd_s, double *bwd_s, double *recompute_s);
/* Of the kernels' backward, the weight-gradient GEMMs (dB = A^T dC of every
 * GEMM kernel with weights, i.e. not grow_batch). */
double sc_cost_kernels_wgrad_time(const sc_cluster *c, const sc_module *mod,
                                  const sc_compute_cfg *cc);
/* Kernel-level leaves repeat layer after layer with the same kernel list:
 * a memo keeps the times of the last SC_KMEMO lists seen under one cc
 * (compared by content, and by kind: the tp overlap splits by kind), so a
 * 96-layer model times each distinct list once. It is tied to the cluster
 * and cc of its first use; an empty memo is {0}. */
#define SC_KMEMO 32
typedef struct sc_kmemo {
    struct {
        const sc_module *x;
        double f, b, r, w;
    } e[SC_KMEMO];
    int n, next;
} sc_kmemo;
/* x's forward, backward and selective-recompute times (sc_cost_kernels_time)
 * and its weight-gradient GEMMs' (sc_cost_kernels_wgrad_time) under cc, from
 * the memo or timed into it. x is timed by its kernels (sc_cost_uses_kernels,
 * no measured times of this GPU). Any output may be NULL. */
void sc_kmemo_times(sc_kmemo *mm, const sc_cluster *c, const sc_compute_cfg *cc,
                    const sc_module *x, double *f, double *b, double *r, double *w);
/* sc_cost_module_time_cfg through the memo where mod is timed by its kernels
 * (the same figures). */
sc_status sc_cost_module_time_memo(const sc_cluster *c, const sc_module *mod,
                                   const sc_compute_cfg *cc, sc_kmemo *mm, double *fwd_s,
                                   double *bwd_s, sc_error *err);
/* The errors sc_cost_module_time_cfg can return, judged once for a
 * configuration: a dtype that is not one or that the GPU has no peak for,
 * tp or mbs below 1 (the message names `what`). */
sc_status sc_cost_cfg_check(const sc_cluster *c, const sc_compute_cfg *cc, const char *what,
                            sc_error *err);
/* Forward and backward time of one call of mod's own work under cc: the
 * kernel level when sc_cost_uses_kernels, else the leaf roofline below. */
sc_status sc_cost_module_time_cfg(const sc_cluster *c, const sc_module *mod,
                                  const sc_compute_cfg *cc, double *fwd_s, double *bwd_s,
                                  sc_error *err);
sc_status sc_cost_modules_time_cfg(const sc_cluster *c, sc_module *const *mods, int n,
                                   const sc_compute_cfg *cc, double *fwd_s, double *bwd_s,
                                   sc_error *err);
/* The weight-gradient part of a call's backward, bwd_s (what
 * sc_cost_module_time_cfg gave), as a split backward runs it apart (zb-h1's
 * W; the executor's weight-gradient GEMMs): kernel by kernel, the
 * weight-gradient GEMM of every GEMM kernel with weights (not grow_batch);
 * timed whole, bwd_s times the leaf's weight GEMMs' share of its backward
 * FLOPs (sc_module_weight_flops / sc_module_flops_bwd). The rest (input
 * gradients, attention's score products, memory passes) is B. seq_len: the
 * model's. */
double sc_cost_module_wgrad_time(const sc_cluster *c, const sc_module *mod,
                                 const sc_compute_cfg *cc, double seq_len, double bwd_s);

/* The bytes B of the leaf roofline above for one call of mod's own work
 * on one rank of a tp group of tp (sp: sequence parallelism), forward and
 * backward (either pointer may be NULL). The executor runs a leaf without
 * FLOPs as memory passes of these bytes, so the two replay the same
 * traffic. */
void sc_cost_leaf_bytes(const sc_module *mod, sc_dtype dt, int tp, int sp, int mbs, double *fwd,
                        double *bwd);
/* eff(F) for dtype dt (0 when the dtype is unsupported or F <= 0). */
double sc_cost_eff(const sc_cluster *c, sc_dtype dt, double flops);
/* Forward and backward time of one call of mod's own work. Either out
 * pointer may be NULL. SC_ENOTSUP when the GPU has no peak for dt;
 * SC_EINVAL for tp < 1 or mbs < 1. */
sc_status sc_cost_module_time(const sc_cluster *c, const sc_module *mod, sc_dtype dt, int tp,
                              int mbs, double *fwd_s, double *bwd_s, sc_error *err);
/* Sums of sc_cost_module_time over mods[0..n) (e.g. a stage's leaves, or
 * every module of the model: each holds only its own work). */
sc_status sc_cost_modules_time(const sc_cluster *c, sc_module *const *mods, int n, sc_dtype dt,
                               int tp, int mbs, double *fwd_s, double *bwd_s, sc_error *err);
/* The same under sequence parallelism (sp): a module with tp data that tp
 * does not shard (a norm) runs on s/t tokens per rank. The two above are
 * these with sp = 0. */
sc_status sc_cost_module_time_sp(const sc_cluster *c, const sc_module *mod, sc_dtype dt, int tp,
                                 int sp, int mbs, double *fwd_s, double *bwd_s, sc_error *err);
sc_status sc_cost_modules_time_sp(const sc_cluster *c, sc_module *const *mods, int n,
                                  sc_dtype dt, int tp, int sp, int mbs, double *fwd_s,
                                  double *bwd_s, sc_error *err);

/* ---- communication ---------------------------------------------------------- */

typedef enum sc_coll {
    SC_COLL_ALLREDUCE = 0,
    SC_COLL_REDUCE_SCATTER,
    SC_COLL_ALLGATHER,
    SC_COLL_BROADCAST,
    SC_COLL_ALLTOALL,
    SC_COLL_N
} sc_coll;
const char *sc_coll_name(sc_coll op);  /* "allreduce", ... */
int sc_coll_parse(const char *s);      /* -1 if unknown */

/* Collective op's share of link class l relative to the class's bw_eff (what
 * the links run at): reduce-scatters and all-gathers reach ag_rs_bw_eff where
 * the cluster has it (sc_cluster_ag_rs_eff: on H100 and H200 the allreduce
 * runs in the switch, the others as rings); 1 for the rest. cost, the
 * estimate and the simulator divide a collective's bandwidth or multiply its
 * link time by it alike. */
static inline double sc_cost_coll_share(const sc_cluster *c, sc_link l, sc_coll op)
{
    if (op != SC_COLL_REDUCE_SCATTER && op != SC_COLL_ALLGATHER)
        return 1;
    return sc_cluster_ag_rs_eff(c, l) / c->eff.bw_eff[l];
}

/* The share of link class l that point-to-point messages reach, relative to
 * the class's bw_eff (p2p_bw_eff where the cluster has it, else 1): pipeline
 * messages and context parallelism's key/value ring. */
static inline double sc_cost_p2p_share(const sc_cluster *c, sc_link l)
{
    return sc_cluster_p2p_eff(c, l) / c->eff.bw_eff[l];
}

/* The link parameters a collective sees; filled by sc_cost_links. */
typedef struct sc_comm_links {
    int n, per_node, nodes;  /* ranks, ranks per node, nodes spanned = ceil(n/per_node) */
    double alpha_intra, beta_intra; /* s, bytes/s */
    double alpha_inter, beta_inter; /* beta_inter: this GPU's share of the NICs */
    double beta_nic;                /* the node's NICs whole (bytes/s) */
    /* the size ramp per link class (efficiency.*.s_half_bytes, ramp_exp; s_half 0 = none) */
    double s_half_intra, exp_intra, s_half_inter, exp_inter;
} sc_comm_links;
/* Checks 1 <= per_node <= min(n, gpus_per_node) (per_node is clamped to n)
 * and that a group spanning nodes has a network. */
sc_status sc_cost_links(const sc_cluster *c, int n, int per_node, sc_comm_links *out,
                        sc_error *err);

/* One collective algorithm: one small file fills one of these. time()
 * returns seconds for S bytes (nccl-tests sizes, see above); n >= 1. */
typedef struct sc_coll_algo {
    const char *name;
    const char *description;
    double (*time)(const sc_comm_links *l, sc_coll op, double bytes);
} sc_coll_algo;
extern const sc_coll_algo sc_coll_ring, sc_coll_tree, sc_coll_hier, sc_coll_auto;
const sc_coll_algo *const *sc_coll_algos(int *n);
/* NULL (the default) is "auto"; NULL if unknown */
const sc_coll_algo *sc_coll_find(const char *name);

/* The latency of a ring collective of n ranks over `nodes` nodes (coll_ring.c), as
 * NCCL's tuner counts it (ncclTuningLatRing): of its steps, 2(n-1) for an allreduce and
 * n-1 for the others, 2(nodes-1) (nodes-1) cross the network at alpha_inter and the
 * rest stay inside a node at alpha_intra. One rank a node: every step at alpha_inter. */
double sc_ring_latency(sc_coll op, int n, int nodes, double alpha_intra, double alpha_inter);

/* NCCL's tree allreduce across nodes (coll_tree.c): the bytes a node's NICs move each
 * way per byte of S over `nodes` nodes (0 for one node, 1 for two, 2 beyond); its
 * latency; its time from the links' alphas and their bandwidths at S (size ramps
 * applied; beta_nic the node's NICs whole). */
double sc_tree_nic_factor(int nodes);
double sc_tree_latency(int per_node, int nodes, double alpha_intra, double alpha_inter);
double sc_tree_allreduce_time(double bytes, int per_node, int nodes, double alpha_intra,
                              double beta_intra, double alpha_inter, double beta_nic);
/* Whether "auto" runs an allreduce of S bytes over n ranks, per_node a node, as
 * NCCL's tree rather than the ring: the faster of the two for the group alone on
 * the network, with the cluster's warm links; r: the intra and inter size ramps at S
 * (sc_cost_coll_ramp). 0 within one node. The simulator and the estimate choose
 * with it, so cost, sim and plan agree. */
int sc_coll_tree_wins(const sc_cluster *c, double bytes, int n, int per_node, const double r[2]);

/* Time of collective op over n ranks, per_node of them on each node, with
 * the algorithm called algo (NULL = "auto"). */
sc_status sc_cost_coll(const sc_cluster *c, const char *algo, sc_coll op, double bytes, int n,
                       int per_node, double *time_s, sc_error *err);
/* Point to point: alpha + S/beta on the intra link, or, when inter, on the
 * inter link with `sharing` GPUs of the node sending at once (>= 1). */
sc_status sc_cost_p2p(const sc_cluster *c, double bytes, int inter, int sharing,
                      double *time_s, sc_error *err);
/* The share of its plateau (bw_eff) a collective of `bytes` (nccl-tests' S) reaches on
 * link class l: 1 / (1 + (s_half_bytes / S)^ramp_exp), in (0, 1]; 1 when the cluster
 * has no ramp for l (s_half_bytes 0) and for S <= 0 (nothing to send). See "size ramp"
 * above. */
double sc_cost_coll_ramp(const sc_cluster *c, sc_link l, double bytes);
/* The same from the raw parameters (the algorithms' files use it on sc_comm_links). */
double sc_cost_ramp(double bytes, double s_half, double exponent);
/* nccl-tests bus-bandwidth factor (0 for n < 1). */
double sc_cost_busbw_factor(sc_coll op, int n);

/* ---- memory ----------------------------------------------------------------- */

typedef enum sc_recompute {
    SC_RECOMPUTE_NONE = 0,
    SC_RECOMPUTE_SELECTIVE,
    SC_RECOMPUTE_FULL
} sc_recompute;
const char *sc_recompute_name(sc_recompute r);
int sc_recompute_parse(const char *s); /* -1 if unknown */

typedef struct sc_mem_cfg {
    sc_dtype dtype;
    int tp, dp;
    int zero;            /* 0..3 */
    int mbs;             /* samples per microbatch */
    int inflight;        /* microbatches whose activations are held at once */
    sc_recompute recompute;
    int sp;              /* sequence parallelism (with tp > 1) */
    sc_attn attn;        /* flash keeps no attention scores, as selective recompute */
    int cp;              /* context parallelism: activations / cp (0 or 1: none) */
    int has_layers;      /* the model's (sc_model has_layers): full recompute then keeps
                            the activations of the leaves outside layers, which it does
                            not re-run (sc_stage_info recompute_full_s) */
    int grad_fp32;       /* the gradients reduced in fp32: held at 4 bytes where
                            unsharded (sc_cost_states); 0 = at the dtype's width */
} sc_mem_cfg;

/* Activation bytes per sample that module m stashes for its backward on one
 * rank of a tp group of size tp (Korthikanti et al. 2022, sec. 4): a
 * shardable module keeps act_saved_rep whole and the rest / tp; a module
 * with tp data that does not shard (a norm) keeps all of it whole; sequence
 * parallelism (sp) splits whatever stays whole by tp too; a module without
 * tp data keeps everything. With `selective`, an attention leaf drops its
 * scores (act_saved_scores; a model without them keeps act_out only), and
 * so does another leaf that gives them (a traced dropout on the scores,
 * which keeps nothing else). For
 * gpt-175b at tp 8 per layer: s·h·(10 + 24/t + 5·a·s/(h·t)) bytes without
 * sp and s·h/t·(34 + 5·a·s/h) with it, the paper's formulas. */
double sc_cost_saved_bytes(const sc_module *m, int tp, int sp, int selective);

typedef struct sc_mem {
    double params;       /* parameters held per rank before ZeRO (sum params/T') */
    double weights, grads, optimizer, activations, workspace;
    /* ZeRO 3's working set beyond its shards, in bytes, whatever cfg->zero
     * (sc_cost_zero3_gathered); weights and grads include it only under
     * ZeRO 3 with dp > 1 */
    double gathered;
    double total;
} sc_mem;

/* The optimizer step over params parameters held by one rank (0 for no
 * parameters), memory-bound at the calibrated HBM rate:
 *   whole-leaf clusters: every state byte read and written once, plus one
 *     op overhead;
 *   kernel-level clusters (efficiency.gemm), as Megatron-LM's mixed-precision
 *     optimizer runs on a GPU, per parameter of 16-bit training:
 *     gradient clipping's L2 norm over the fp32 main gradients (read 4 B;
 *     clip_grads.py, multi_tensor_l2norm), fused Adam over the fp32 master
 *     weights (read gradient, weight, m, v: 16 B; write weight, m, v: 12 B;
 *     apex FusedAdam / multi_tensor_adam), the copy of the master weights to
 *     the 16-bit model weights (read 4, write 2) and zeroing the gradient
 *     buffer (write 4): 42 B, in four multi-tensor kernels of kernel_s each;
 *     fp32 training drops the copy (36 B). */
double sc_cost_optimizer_time(const sc_cluster *c, sc_dtype dt, double params);

/* The kernels that optimizer step runs, as sc_cost_optimizer_time prices
 * them: their number (at most SC_OPT_KERNELS) and each one's bytes read plus
 * written, in bytes[] (kernel-level clusters: clipping's norm, fused Adam,
 * the master copy where the weights are 16-bit, zeroing the gradients; a
 * whole-leaf cluster: one pass reading and writing every state byte). The
 * executor runs them, so its measured optimizer is this list's. */
#define SC_OPT_KERNELS 4
int sc_cost_optimizer_kernels(const sc_cluster *c, sc_dtype dt, double params,
                              double bytes[SC_OPT_KERNELS]);

/* PyTorch FSDP's work on one stage's gradients per backward of a microbatch
 * (FULL_SHARD or SHARD_GRAD_OP, ZeRO 3 or 2; PyTorch 2.0's
 * torch/distributed/fsdp/_runtime_utils.py and flat_param.py), memory-bound
 * at the calibrated HBM rate, for `params` parameters per rank in `units`
 * FSDP units (wrapped modules: a layer each, plus the root), the gradients
 * reduced in r bytes (g, the training dtype's; 4 with reduce_fp32 in 16-bit
 * training: MixedPrecision reduce_dtype fp32, Composer's DEFAULT):
 *   all_s, over every parameter of the stage: the flat parameter's views
 *     are autograd views of it, so the backward of their split concatenates
 *     the weight gradients into one flat gradient (read and write, 2·g B);
 *     where r > g, the cast of that gradient to the reduce dtype before the
 *     reduce-scatter (read g, write r); and the default reduce-scatter hook
 *     divides it in place by the gradient pre-divide factor before reducing
 *     (read and write, 2·r B); two kernels per unit;
 *   shard_s, over the rank's shard at dp 1 (divide by dp): in 16-bit
 *     training where r < 4 the cast of the reduced shard back to fp32 (read
 *     r, write 4), and the accumulation into the saved fp32 gradient shard
 *     (read 8, write 4);
 *   gather_s, the same per gather of the shard (ZeRO 3 gathers twice a
 *     microbatch, ZeRO 2 once): in 16-bit training the cast of the fp32
 *     shard to 16 bits before it (read 4, write w); 0 in fp32.
 * Every part is charged to the backward in full, although the pre-divide,
 * the casts and the accumulation run on FSDP's side streams beside the
 * next unit's compute: both fill the GPU, so little of it hides. The
 * reduce-scatter's own reads are the collective's (cost_comm.c). */
typedef struct sc_fsdp_cost {
    double all_s, shard_s, gather_s;
} sc_fsdp_cost;
sc_fsdp_cost sc_cost_fsdp_copies(const sc_cluster *c, sc_dtype dt, double params, int units,
                                 int reduce_fp32);
/* The part of x one backward pays at ZeRO stage zero and dp ranks:
 * all_s + (shard_s + gathers · gather_s) / dp, with two gathers under ZeRO 3
 * and one under 2; 0 below ZeRO 2 or at dp 1. */
static inline double sc_cost_fsdp_time(const sc_fsdp_cost *x, int zero, int dp)
{
    if (zero < 2 || dp < 2)
        return 0;
    return x->all_s + (x->shard_s + (zero >= 3 ? 2 : 1) * x->gather_s) / dp;
}

/* Bytes per parameter for weights, grads, optimizer states in dtype dt. */
void sc_cost_state_bytes(sc_dtype dt, double *w, double *g, double *o);
/* The state one rank holds for `params` parameters in dtype dt under ZeRO
 * stage zero over dp ranks, in bytes (sc_cost_state_bytes' w, g, o a
 * parameter): the optimizer states sharded from ZeRO 1, the gradients from
 * 2, the weights from 3. With grad_fp32 (sc_mem_cfg grad_fp32: the
 * gradients reduced in fp32) unsharded 16-bit gradients are held at 4 bytes,
 * as Megatron-LM keeps its main_grad buffer in the reduce dtype
 * (grad_reduce_in_fp32); sharded ones keep g, as PyTorch FSDP keeps an fp32
 * gradient shard whatever it reduces in, which w + g + o already counts
 * (2 + 2 + 12 = its 4 + 4 + 8). step.c, the planner's estimate and its
 * partitioner all take their states from here. */
void sc_cost_states(sc_dtype dt, int grad_fp32, int zero, int dp, double params, double *W,
                    double *G, double *O);
/* Bytes per parameter that the data-parallel reduction of dt's gradients
 * moves: their width, or 4 when reduced in fp32 (sc_stage_cfg
 * grad_reduce_fp32, sc_step_cfg grad_reduce_in_fp32). */
double sc_cost_grad_reduce_bytes(sc_dtype dt, int fp32);
/* Whether fp32 moves more than dt's own gradients (a 16-bit dtype reducing in
 * fp32): what the summaries and exports say, and where they change a flag. */
static inline int sc_cost_grad_reduce_widens(sc_dtype dt, int fp32)
{
    return sc_cost_grad_reduce_bytes(dt, fp32) > sc_cost_grad_reduce_bytes(dt, 0);
}
/* What ZeRO 3 holds gathered beside its shards, per rank of a stage whose
 * parameters (per tp rank, as sc_mem.params) are `params`, of which `root`
 * lie outside any layer (sc_partition_layer_of) and the largest layer holds
 * `layer` (0: no layers), in dtype dt. FSDP gathers unit by unit (a unit a
 * layer, the rest one root unit that stays gathered from the forward to the
 * backward) and prefetches one unit ahead, and a unit's gradient is whole
 * until its reduce-scatter: at the peak, in the backward, the weights of the
 * root and of two layers (the one computing, the one prefetched; never more
 * than the stage's params) and the gradient of the largest unit (root or
 * layer; the whole stage's without layers). Monotone in a stage's leaves,
 * as the partitioner needs. Returns their sum; *weights and *grads (each may be
 * NULL) get the two parts. Zhao et al. 2023 (PyTorch FSDP: units,
 * prefetching, the rate limiter that keeps two units gathered). */
double sc_cost_zero3_gathered(sc_dtype dt, double params, double root, double layer,
                              double *weights, double *grads);
/* Memory per rank for the modules mods[0..n) (a stage). Under ZeRO 3 with
 * dp > 1, weights and grads add sc_cost_zero3_gathered's two parts. */
sc_status sc_cost_memory(const sc_cluster *c, sc_module *const *mods, int n,
                         const sc_mem_cfg *cfg, sc_mem *out, sc_error *err);

/* ---- tensor parallelism ------------------------------------------------------ */

/* Whether tensor parallelism of degree tp can shard m: tp divides the heads
 * of every module that has them (the "heads" dim: Megatron-LM splits
 * attention by heads). The one rule the planner's search, sim, cost and a
 * plan's check share. O(modules). */
int sc_cost_tp_divides_heads(const sc_model *m, int tp);
/* The same as an error: SC_EINVAL "tp T does not divide the H heads of
 * MODULE (tensor parallelism splits attention by heads)". */
sc_status sc_cost_tp_check(const sc_model *m, int tp, sc_error *err);

/* Whether m gives a step anything to do: some forward FLOPs or a measured
 * time. SC_EINVAL "SOURCE: root: the model has no work (no FLOPs and no
 * measured time[; the root has no children]): nothing to simulate or plan"
 * otherwise (an empty model would simulate to a step of 0 us). O(modules). */
sc_status sc_cost_model_check(const sc_model *m, const char *source, sc_error *err);

/* ---- per stage --------------------------------------------------------------- */

/* What one virtual stage costs and moves, per rank of its tp group: the one
 * computation that the lowering (and through it the simulator, the executor
 * and calibration) and the planner's estimate read.
 *   fwd_s, bwd_s: one microbatch (sc_cost_modules_time of its leaves); bwd is
 *     the full backward;
 *   bwd_w_s: its weight-gradient part (sc_cost_module_wgrad_time of its
 *     leaves): zb-h1's W runs it, B the rest (input gradients, attention's
 *     score products and every memory pass), as the executor splits them;
 *   recompute_s: re-run before each backward: full re-runs the forward of
 *     the stage's leaves inside a layer (recompute_full_s; every leaf when the
 *     model has no layers, sc_partition_layer_of): the embedding, final norm,
 *     LM head and loss are not checkpointed (Megatron-LM's
 *     --recompute-granularity full wraps the transformer layers, FSDP's
 *     activation checkpointing the blocks, DeepSpeed's the layers);
 *     selective re-runs the attention scores and values, 4·s·s_kv·inner FLOPs
 *     per sample per attention module (Korthikanti et al. 2022), under
 *     flash attention the fused kernel's forward (Megatron-Core's
 *     checkpoint_core_attention);
 *   tp_bytes, tp_count: Megatron allreduces s·h per sample after attention
 *     and after the MLP: the stage's summed tp bytes, and how many
 *     allreduces make them up;
 *   send_bytes: to the next stage per microbatch per tp rank: what crosses
 *     the cut (sc_cost_cut_bytes: the last leaf's output, and the residual
 *     stream when the cut lies inside a layer) plus every `inputs` edge
 *     crossing the boundary (relayed stage by stage), split over the tp
 *     ranks (Narayanan et al. 2021 §4.1); 0 on the last stage;
 *   grad_bytes, param_bytes: per rank (tp-sharded modules /tp); grad_bytes
 *     as reduced (4 bytes a parameter under cfg grad_reduce_fp32);
 *   unit_bytes: the part of param_bytes that ZeRO 3 gathers before the
 *     stage's first compute of a step can begin: its parameters outside any
 *     layer (sc_partition_layer_of; FSDP's root unit) plus its largest
 *     layer's (one FSDP unit a layer); param_bytes when it has no layers;
 *   buckets: sc_cost_bucket_count(grad_bytes, bucket_bytes). */
typedef struct sc_stage_info {
    double fwd_s, bwd_s, bwd_w_s;
    double recompute_s;
    double recompute_full_s; /* what full recompute re-runs, whatever cfg's recompute */
    double head_wgrad_s;     /* the weight-gradient GEMMs of the output layer (a leaf of
                                kind "head") in bwd_s and bwd_w_s: what Megatron-Core's
                                --defer-embedding-wgrad-compute moves (sc_step_cfg) */
    double tp_bytes;
    int tp_count;
    double send_bytes;
    double grad_bytes;
    double param_bytes;
    double unit_bytes;
    int buckets;
    /* context parallelism (sc_stage_cfg cp > 1): the keys and values of the
     * stage's fused attention kernels that one rank holds per microbatch
     * (2 · its tokens · its kv heads · head size · dtype bytes), what it
     * passes around its cp group cp - 1 times a forward; 0 without cp */
    double cp_bytes;
    /* PyTorch FSDP's own work on the gradients, per backward of a microbatch
     * (framework torch only, sc_cost_fsdp_copies; zero otherwise): added to
     * bwd_s and bwd_w_s, as sc_cost_fsdp_time, when the cfg's zero is 2 or 3
     * and its dp 2 or more; kept apart for the planner's estimate, which
     * shares a table across dp and ZeRO stages. */
    sc_fsdp_cost fsdp;
} sc_stage_info;

typedef struct sc_stage_cfg {
    sc_dtype dtype;
    int tp, mbs;
    sc_recompute recompute;
    double bucket_bytes;   /* 0 = 25 MiB */
    int sp;                /* sequence parallelism */
    sc_attn attn;          /* attention implementation (unfused = 0) */
    /* one token slice (TeraPipe; sc_compute_cfg): its share of the tokens
     * (tp and send bytes scale with it too) and of the keys; 0 = whole */
    double q_frac, kv_frac;
    /* the ZeRO stage and data-parallel degree, for what a framework does per
     * microbatch with sharded gradients (sc_stage_info fsdp); 0 = not applied */
    int zero, dp;
    /* tp communication overlap asked for (sc_compute_cfg tp_overlap, which
     * applies it only under sp with tp >= 2); 0 = none */
    int tp_overlap;
    /* context parallelism (sc_compute_cfg cp: each rank's 1/cp of the tokens,
     * sc_cost_q_share; the caller sets dp to the data-parallel group with cp,
     * dp·cp, over which the gradients are reduced); 0 or 1 = none. Each stage's cp_bytes
     * are the keys and values one rank passes on per microbatch. */
    int cp;
    /* the data-parallel gradient reduction in fp32 (sc_step_cfg
     * grad_reduce_in_fp32): grad_bytes at 4 bytes a parameter, and FSDP's
     * casts (sc_cost_fsdp_copies); 0 = in the training dtype's gradient width */
    int grad_reduce_fp32;
    int fp8; /* fp8 GEMMs in the transformer layers (sc_compute_cfg fp8); 0 = none */
} sc_stage_cfg;

/* Fills info[0 .. part->n_stages). Errors of sc_cost_modules_time. O(leaves
 * + inputs edges · stages). */
sc_status sc_cost_stage(const sc_cluster *c, const sc_model *m, const sc_partition *part,
                        const sc_stage_cfg *cfg, sc_stage_info *info, sc_error *err);
/* Bytes per sample crossing a stage boundary before leaf b (0 < b < leaves),
 * `inputs` edges aside: leaf b-1's output, plus, when b lies inside a layer
 * (sc_partition_between_layers is false), the residual stream that the
 * layer carries around its sublayers, counted as the layer's own output
 * (act_out_bytes of the block: in a residual block its input and output
 * have that size). The model format has no other dataflow inside a layer,
 * so a cut inside one is charged these two tensors. O(depth). */
double sc_cost_cut_bytes(const sc_model *m, int b);
/* Data-parallel gradient buckets for grad_bytes: ceil(grad / bucket), at
 * least 1, at most SC_MAX_BUCKETS (bucket_bytes 0 = 25 MiB, PyTorch DDP's
 * default): larger buckets beyond. */
#define SC_MAX_BUCKETS 32
#define SC_DEFAULT_BUCKET_BYTES (25.0 * 1024 * 1024)
int sc_cost_bucket_count(double grad_bytes, double bucket_bytes);

/* ---- per-module table ----------------------------------------------------- */

typedef struct sc_cost_cfg {
    sc_dtype dtype;
    int tp;              /* >= 1; the tp group lies in one node when tp <= gpus_per_node */
    int mbs;
    const char *tp_algo; /* collective algorithm for tp allreduces; NULL = "auto" */
    int sp;              /* sequence parallelism: act_bytes as sc_cost_saved_bytes */
    sc_attn attn;        /* attention implementation (unfused = 0) */
    int fp8;             /* fp8 GEMMs in the transformer layers (sc_compute_cfg fp8) */
} sc_cost_cfg;

typedef struct sc_cost_row {
    const sc_module *mod;
    int depth;
    double params;       /* own params per rank (/T' under tp) */
    double fwd_s, bwd_s; /* own work, one microbatch */
    double tp_bytes;     /* bytes all-reduced per microbatch in forward (same again in backward) */
    double tp_s;         /* forward + backward tp allreduce time, one microbatch */
    double state_bytes;  /* weights + grads + optimizer (ZeRO 0) per rank */
    double act_bytes;    /* saved for backward per microbatch on one rank (sc_cost_saved_bytes) */
} sc_cost_row;

/* One row per module in pre-order (tree order). *rows is allocated with
 * sc_malloc and freed by the caller with sc_free; totals (may be NULL) sums
 * every row (mod = root, depth = -1). */
sc_status sc_cost_table(const sc_cluster *c, const sc_model *m, const sc_cost_cfg *cfg,
                        sc_cost_row **rows, int *n_rows, sc_cost_row *totals, sc_error *err);

#endif
