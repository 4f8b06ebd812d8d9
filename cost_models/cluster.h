/* cluster.h - the cluster description (stagecraft.cluster/1) and its presets.
 *
 * Owner: cost_models/ (cluster.c, presets.c).
 *
 * Ownership: sc_cluster is a plain value struct (fixed-size strings, no
 * pointers): copy it with `=`, nothing to free. Every loader fills *out only
 * on success; on failure *out is unchanged and err names the file, the JSON
 * path and what is wrong ("my.json: gpu.memory_bytes: -1 is out of range
 * [1, 1e+15]"). sc_cluster_to_json returns a tree the caller frees with
 * cJSON_Delete (NULL on allocation failure). Saving is whole-or-nothing.
 * Round trip: load(save(x)) == x field for field (cJSON prints doubles with
 * up to 17 significant digits, so every double survives exactly).
 *
 * Every number a cost model uses comes from this struct: peak rates, link
 * bandwidths and the efficiency parameters that calibration fits.
 *
 * Units: bytes, bytes/s, FLOP/s, seconds, US dollars per hour per node.
 *
 * JSON keys (all required unless marked optional):
 *   format         "stagecraft.cluster/1"
 *   name           string
 *   description    string, optional
 *   nodes          integer >= 1
 *   gpus_per_node  integer >= 1
 *   gpu            { name, memory_bytes, hbm_bytes_per_s,
 *                    peak_flops: { fp32, tf32, fp16, bf16, fp8 } }  (0 = unsupported)
 *   intra          { kind ("nvswitch"|"nvlink"|"pcie"|"shm"|...),
 *                    bytes_per_s (per GPU, one direction), latency_s }
 *   inter          { nic_bytes_per_s, nics_per_node, latency_s }
 *                    (nics_per_node 0 = no network; then nodes must be 1)
 *   price          { on_demand_per_hour, spot_per_hour (0 = none),
 *                    spot_interruptions_per_hour }
 *   storage_bytes_per_s
 *   efficiency     { provenance ("preset: ..." or "calibrated ..."),
 *                    compute: { fp32|tf32|fp16|bf16|fp8: { eff_max, f_half } }
 *                              (one entry per dtype with a non-zero peak;
 *                               others optional),
 *                    memory_bw (fraction of HBM bandwidth reached),
 *                    intra: { alpha_s, bw_eff, p2p_bw_eff, p2p_host_s_per_byte,
 *                             ag_rs_bw_eff, s_half_bytes, ramp_exp, cold_alpha_s,
 *                             cold_bw_eff },
 *                    inter: { the same keys }
 *                           (the p2p_ keys and ag_rs_bw_eff optional; s_half_bytes,
 *                            ramp_exp optional:
 *                            the collectives' size ramp, see sc_cluster_eff; the
 *                            cold_ keys optional, a pair: collectives on buffers the
 *                            step's compute has evicted from the caches, see
 *                            sc_cluster_cold),
 *                    op_overhead_s (fixed cost per module call),
 *                    bwd_factor (optional, default 1: backward kernels' time per
 *                                FLOP relative to forward ones, calibrated),
 *                    overlap_slowdown (optional, default 0: compute kernels run
 *                                this much longer while a data-parallel collective
 *                                runs on their GPU),
 *                    workspace_bytes (per-rank reserve: context, comm
 *                                     buffers, allocator slack),
 *                    gemm (optional: the kernel-level compute model, see
 *                          sc_cluster_gemm): { sms, eff_max, tile_m, tile_n, k_half,
 *                          kernel_s, flash_fwd, flash_bwd, sustained,
 *                          flash_s0, flash_s0_full, flash_full, flash_hd64,
 *                          flash_s0_bwd, flash_s0_full_bwd,
 *                          flash_head_sizes
 *                          (optional) },
 *                    fits (optional, written by calibrate): { date,
 *                      inputs: [ { file, digest } ],
 *                      compute: { DTYPE: STATS }, op_overhead: STATS,
 *                      intra: STATS, inter: STATS,
 *                      intra_p2p: STATS, inter_p2p: STATS,
 *                      intra_host: STATS, inter_host: STATS (optional),
 *                      intra_cold: STATS, inter_cold: STATS (optional: the cold
 *                        collectives' fit),
 *                      gemm: STATS (optional: the efficiency.gemm fit; se [eff_max,
 *                        kernel_s as written: the measured steps' where they fitted it]),
 *                      gates_failed: [ "FIT: GATE FIGURE (LIMIT)", ... ] (optional:
 *                        the quality gates calibrate --force wrote past;
 *                        sim, plan and whatif warn when they use such a
 *                        cluster) } }
 *                    with STATS = { n, r2, mape, rel_sd, se: [a, b] }
 *
 * Compute efficiency of a call of F FLOPs: eff(F) = eff_max * F / (F + f_half)
 * (a saturating curve: small kernels cannot fill the device; f_half is the
 * FLOP count at which half of eff_max is reached).
 *
 * The link latency_s fields are the hardware figures; the cost models use
 * efficiency.*.alpha_s (per-message start-up cost, calibrated) and
 * bytes_per_s * bw_eff for collectives, bytes_per_s * p2p_bw_eff for
 * point-to-point messages (pipeline activations and gradients) when the file
 * has it: a collective algorithm can reach a different share of a link than
 * one message does (measured on the emulated cluster: allreduce 47%, p2p
 * 94% of a 1 Gbit/s link). Likewise bytes_per_s * ag_rs_bw_eff for
 * reduce-scatters and all-gathers when the file has it: on H100 and H200,
 * NCCL's allreduce runs in the NVSwitch (NVLink SHARP) and passes the
 * link's rate, while the other collectives run as rings at about 82% of it
 * (nccl-tests#212). A send also holds the sender's compute stream
 * for p2p_host_s_per_byte per byte (0 on GPUs; on the emulated cluster the
 * kernel's TCP path runs on the sending core: about 7 ns per byte).
 */
#ifndef SC_CLUSTER_H
#define SC_CLUSTER_H

#include <cjson/cJSON.h>
#include "sc.h"
#include "model.h"

#define SC_CLUSTER_FORMAT "stagecraft.cluster/1"
#define SC_CLUSTER_NAME_MAX 127
#define SC_CLUSTER_DESC_MAX 255
#define SC_CLUSTER_PROV_MAX 1023
#define SC_CLUSTER_MAX_NODES 100000
#define SC_CLUSTER_MAX_GPUS_PER_NODE 1024

typedef enum sc_link { SC_LINK_INTRA = 0, SC_LINK_INTER, SC_LINK_N } sc_link;

/* Statistics of one calibration fit (n = 0: not fitted). rel_sd is the
 * standard deviation of the relative residuals (measured/predicted - 1),
 * which `sim` and `plan` turn into error bars; se holds the standard errors
 * of the fitted parameters (compute: eff_max, f_half; links: alpha_s,
 * bw_eff; overhead: op_overhead_s). */
typedef struct sc_fit_stats {
    int n;
    double r2, mape, rel_sd;
    double se[2];
} sc_fit_stats;

#define SC_CLUSTER_MAX_INPUTS 16
#define SC_CLUSTER_MAX_GATES 16     /* failed quality gates a file records */
#define SC_CLUSTER_GATE_LEN 400     /* characters of one, with the NUL */

/* What calibration fitted and from what (stagecraft calibrate). */
typedef struct sc_cluster_fits {
    int present;
    char date[32];                         /* ISO 8601, UTC */
    int n_inputs;
    char input[SC_CLUSTER_MAX_INPUTS][128]; /* file names */
    char digest[SC_CLUSTER_MAX_INPUTS][17]; /* FNV-1a of their JSON */
    sc_fit_stats compute[SC_DTYPE_N];
    sc_fit_stats overhead;
    sc_fit_stats link[SC_LINK_N];
    sc_fit_stats link_p2p[SC_LINK_N];     /* "intra_p2p", "inter_p2p" (optional) */
    sc_fit_stats link_ag_rs[SC_LINK_N];   /* "intra_ag_rs", "inter_ag_rs" (optional) */
    sc_fit_stats host[SC_LINK_N];         /* "intra_host", "inter_host" (optional) */
    sc_fit_stats link_cold[SC_LINK_N];    /* "intra_cold", "inter_cold" (optional) */
    sc_fit_stats gemm;                    /* "gemm" (optional): the efficiency.gemm fit */
    sc_fit_stats overlap;                 /* "overlap" (optional): overlap_slowdown's fit
                                             from measured steps (calibrate.h) */
    int n_failed;                          /* "gates_failed" (optional): what --force */
    char failed[SC_CLUSTER_MAX_GATES][SC_CLUSTER_GATE_LEN]; /* wrote past, one line each */
} sc_cluster_fits;

/* The kernel-level compute model (cost_kernel.c; "efficiency.gemm"). A GEMM
 * of (batch, M, N, K) runs as batch * ceil(M/tm) * ceil(N/tn) output tiles
 * in waves of `sms` tiles; a wave of tiles of K takes
 * 2 tm tn (K + k_half) / (peak/sms * eff_max) (eff_max: the GEMM ceiling at
 * full waves as a fraction of the dtype's peak, distinct from the whole-leaf
 * efficiency.compute curves; k_half: the tile's prologue and epilogue in
 * K-steps), tm x tn the largest tile or one of its halvings, whichever is
 * fastest (a smaller tile reuses operands less: its rate is scaled by
 * sqrt(reuse / largest reuse), reuse = tm tn / (tm + tn)). Every kernel
 * costs kernel_s more (launch and tail). Fused attention runs at flash_fwd
 * and flash_bwd of peak on long sequences, less on short ones (flash_s0). Every compute-bound rate (GEMM tiles, fused
 * attention) is multiplied by `sustained`: the rate a GPU holds once a long
 * run has pinned it at its power limit, relative to the short bursts that
 * GEMM benchmarks time (1 = none; optional). With sms 0 (absent) leaves are
 * costed whole. */
#define SC_FLASH_HEADS_MAX 16
#define SC_FLASH_HEAD_MAX 1024 /* the largest head size a list may name */

typedef struct sc_cluster_gemm {
    int sms;                 /* streaming multiprocessors; 0 = no kernel model */
    double eff_max;          /* (0, 1] */
    /* The ceiling of fp8 GEMMs (Transformer Engine's fp8 training, a plan's
     * fp8), (0, 1], at the fp8 peak; 0: eff_max's. Optional in files. */
    double eff_max_fp8;
    double tile_m, tile_n;   /* the largest output tile */
    double k_half;           /* >= 0 */
    double kernel_s;         /* seconds per kernel */
    double flash_fwd, flash_bwd; /* fractions of peak, (0, 1] */
    /* Fused attention on short sequences: over s keys a causal kernel runs
     * at s / (s + flash_s0) of flash_fwd|flash_bwd, one without the mask at
     * flash_full times those, by s / (s + flash_s0_full) (0: no fall;
     * flash_full 0 read as 1). flash_s0_bwd, flash_s0_full_bwd: the
     * backward's own falls, where it falls later than the forward (0: the
     * forward's). flash_hd64: the rate at head size 64 over that at 128
     * (where the rates were measured), linear in between, 1 from 128 up (0
     * read as 1). Optional in files. */
    double flash_s0, flash_s0_full, flash_full, flash_hd64;
    double flash_s0_bwd, flash_s0_full_bwd;
    /* The head sizes the fused attention kernel is built for, increasing
     * (n_flash_heads of them; 0: it runs every head size as it is). A head
     * size runs as the smallest of them at least as large, the extra columns
     * zeros: its executed FLOPs and its rate are that size's (FlashAttention
     * v1 builds 32, 64 and 128; LLM Foundry's Triton kernel pads to a power
     * of two). Above the largest it runs as it is. Optional in files
     * (flash_head_sizes). */
    int flash_heads[SC_FLASH_HEADS_MAX];
    int n_flash_heads;
    double sustained;        /* (0, 1]; 0 read as 1 */
    /* Not in any file: set by compare and calibrate for a step the executor
     * measured (sc_timeline_flash_gemms), which ran each fused attention
     * kernel as its two batched products; a flash kernel is then priced as
     * those two GEMMs (cost_kernel.c), forward and backward, at the GEMM
     * model's rates, as measured and predicted compare kernel for kernel. */
    int flash_gemms;
} sc_cluster_gemm;

/* A link class's size factors: how much faster than the class's line
 * (alpha, bw_eff or p2p_bw_eff, and the size ramp) a message of S bytes runs,
 * as points (bytes[i], factor[i]) with bytes strictly increasing. A warm
 * collective (tensor-parallel; the group's class: inter when it spans nodes)
 * or a point-to-point message takes the line's time, latency and transfer
 * both, divided by the factor; the data-parallel collectives, on cold
 * buffers, run at the cold line or the line alone. Between two points the
 * factor is interpolated linearly in log(bytes) and log(factor); below the
 * first and above the last it is the end point's. `calibrate --size-factors`
 * (calibrate.h, sc_calib_points.size_factors: off by default) writes it where
 * the measured bench steps (a shared-memory transport's protocol or cache
 * change) and the line is fitted over the plans' regime alone: factor 1 over
 * that regime, the bench's measured line time / median time elsewhere, and a
 * step between two sizes as two points one byte apart at their geometric
 * mean. */
#define SC_SIZE_CURVE_MAX 32
typedef struct sc_size_curve {
    int n; /* 0: none, the factor is 1 */
    double bytes[SC_SIZE_CURVE_MAX];  /* [1, 1e13], strictly increasing */
    double factor[SC_SIZE_CURVE_MAX]; /* [1e-3, 1e3] */
} sc_size_curve;
#define SC_SIZE_FACTOR_MIN 1e-3
#define SC_SIZE_FACTOR_MAX 1e3
/* The factor of curve c at S bytes (1 without points). */
double sc_size_curve_at(const sc_size_curve *c, double bytes);

typedef struct sc_cluster_eff {
    double eff_max[SC_DTYPE_N];  /* (0, 1] */
    double f_half[SC_DTYPE_N];   /* FLOPs, >= 0 */
    double memory_bw;            /* (0, 1] */
    double alpha_s[SC_LINK_N];   /* seconds per message/step */
    double bw_eff[SC_LINK_N];    /* (0, 1]: collectives' share of the link */
    double p2p_bw_eff[SC_LINK_N]; /* (0, 1]: point-to-point messages' share; 0 = absent
                                     from the file, bw_eff applies (sc_cluster_p2p_eff) */
    double ag_rs_bw_eff[SC_LINK_N]; /* (0, 1]: reduce-scatters' and all-gathers' share; 0 =
                                       absent, bw_eff applies (sc_cluster_ag_rs_eff) */
    double p2p_host_s_per_byte[SC_LINK_N]; /* sender's compute-stream time per byte of a
                                              point-to-point message (0: none, as on GPUs;
                                              CPU devices spend it in the TCP stack) */
    double cold_alpha_s[SC_LINK_N]; /* collectives on cold buffers (the data-parallel
                                       gradient reductions and parameter gathers), */
    double cold_bw_eff[SC_LINK_N];  /* their alpha and share of the link; bw_eff 0 =
                                       absent: the warm ones apply (sc_cluster_cold) */
    double op_overhead_s;
    double workspace_bytes;
    double bwd_factor;           /* backward FLOPs run this much slower than forward
                                    ones (optional in files, 1 = same) */
    double overlap_slowdown;     /* [0, 1]: compute kernels run this much longer while a
                                    data-parallel collective runs on their GPU (NCCL's
                                    kernels hold SMs and memory bandwidth; optional in
                                    files, 0 = none) */
    char provenance[SC_CLUSTER_PROV_MAX + 1];
    sc_cluster_fits fits;        /* optional: "efficiency.fits" */
    sc_cluster_gemm gemm;        /* optional: "efficiency.gemm" (sms 0 = absent) */
    /* ---- collective size ramp (optional keys efficiency.{intra,inter}.s_half_bytes and
     * .ramp_exp; absent = 0 and 1: no ramp, the plain alpha-beta model). A collective of
     * S bytes (nccl-tests' size) on link class l reaches bw_eff * sc_cost_coll_ramp() of
     * the link: 1 / (1 + (s_half / S)^ramp_exp). See cost.h. */
    double s_half_bytes[SC_LINK_N]; /* [0, 1e13]: S at which half the plateau is reached */
    double ramp_exp[SC_LINK_N];     /* [0.25, 4]: steepness of the ramp */
    /* measured departures from the line by size (optional keys
     * efficiency.{intra,inter}.size_factors for collectives, .p2p_size_factors for
     * point-to-point messages; n 0 = none): see sc_size_curve */
    sc_size_curve coll_curve[SC_LINK_N];
    sc_size_curve p2p_curve[SC_LINK_N];
} sc_cluster_eff;

typedef struct sc_cluster {
    char name[SC_CLUSTER_NAME_MAX + 1];
    char description[SC_CLUSTER_DESC_MAX + 1]; /* "" = none */
    int nodes;
    int gpus_per_node;
    struct {
        char name[SC_CLUSTER_NAME_MAX + 1];
        double peak_flops[SC_DTYPE_N]; /* FLOP/s dense; 0 = unsupported */
        double memory_bytes;
        double hbm_bytes_per_s;
    } gpu;
    struct {
        char kind[32];
        double bytes_per_s;  /* per GPU, one direction */
        double latency_s;
    } intra;
    struct {
        double nic_bytes_per_s; /* one NIC, one direction */
        int nics_per_node;
        double latency_s;
    } inter;
    struct {
        double on_demand_per_hour; /* per node */
        double spot_per_hour;      /* per node, 0 = no spot offer */
        double spot_interruptions_per_hour;
    } price;
    double storage_bytes_per_s;
    sc_cluster_eff eff;
    /* Runtime only, never read from or written to a cluster file: the
     * training framework whose overhead the costs include (overhead.h,
     * sc_overhead_apply; "" = none, the kernels alone) and that overhead,
     * the fraction it adds to every forward, backward and recompute
     * (sc_cost_stage). Commands set it from --framework or a plan's
     * framework. */
    char framework[16];
    double framework_overhead;
} sc_cluster;

typedef struct sc_cluster_preset {
    const char *name;
    const char *description; /* one line */
} sc_cluster_preset;

/* The presets, in a fixed order; *n gets their count. */
const sc_cluster_preset *sc_cluster_presets(int *n);
/* Fills *out with the preset called name (nodes = its default);
 * SC_ENOTFOUND if there is none. cpu-local reads this machine's core count
 * and memory (sysconf) at each call. */
sc_status sc_cluster_preset_get(const char *name, sc_cluster *out, sc_error *err);
/* 1 if name is a preset's name. */
int sc_cluster_is_preset(const char *name);
/* SC_ENOTSUP for computing in dtype dt on c, whose GPU has no peak for it:
 * "WHAT: the GPU of CLUSTER has no DT peak (it has fp32, fp16): HINT". HINT
 * as given, else (hint NULL) how to write model m in a dtype the GPU has:
 * `model gen NAME --dtype D` for a built-in (D the one of dt's width where
 * there is one), model gen's --dtype for a model of one's own. */
sc_status sc_err_no_peak(sc_error *err, const char *what, const sc_cluster *c, sc_dtype dt,
                         const sc_model *m, const char *hint);
/* A preset name, else a file path. */
sc_status sc_cluster_open(const char *name_or_file, sc_cluster *out, sc_error *err);

/* Validates and converts a parsed tree; file names the origin in messages. */
sc_status sc_cluster_from_json(const cJSON *root, const char *file, sc_cluster *out,
                               sc_error *err);
sc_status sc_cluster_load(const char *file, sc_cluster *out, sc_error *err);
cJSON *sc_cluster_to_json(const sc_cluster *c);

sc_status sc_cluster_save(const sc_cluster *c, const char *file, sc_error *err);
/* Checks every field's range and the cross-field rules (a multi-node
 * cluster needs a network; every dtype with a peak has an efficiency curve).
 * file names the origin in messages. */
sc_status sc_cluster_validate(const sc_cluster *c, const char *file, sc_error *err);

/* Fused attention kernels whose rates are published per GPU: "fa1"
 * (FlashAttention, 2022), "fa2" (FlashAttention-2, Ampere's instructions
 * also on Hopper), "fa3" (FlashAttention-3, Hopper only), "triton"
 * (FlashAttention in Triton as of 2022-23, the Triton before its MLIR
 * rewrite) and "cudnn" (cuDNN's fused attention, Transformer Engine's
 * NVTE_FUSED_ATTN=1; Hopper only), each with its fall at short sequences where measured
 * (presets.c, flash_rates; scripts/fit_flash.py). A preset's own flash
 * rates are its GPU's newest kernel (FA2 on A100, FA3 on H100 and H200).
 * sc_cluster_flash_kernel sets c's to those of kernel on c's GPU and
 * appends the source to the provenance; refused (c unchanged) for a name
 * not in the list, a cluster without efficiency.gemm, or a GPU with no
 * published rate for that kernel (FA3 or cuDNN on an A100). */
sc_status sc_cluster_flash_kernel(sc_cluster *c, const char *kernel, sc_error *err);
const char *sc_cluster_flash_kernels(void);   /* "fa1, fa2, fa3, triton, cudnn" */
const char *sc_cluster_flash_kernel_name(int i); /* the i-th name, NULL past the last */
/* How a table of runs shows kernel ("flash1", "flash2", "flash3", "triton", "cudnn"); NULL for
 * a name not in the list. */
const char *sc_cluster_flash_kernel_label(const char *kernel);
int sc_cluster_flash_kernel_known(const char *kernel);
/* The kernel whose published rates c's fused attention carries (a preset's
 * own, or one set by sc_cluster_flash_kernel), compared field by field; NULL
 * for rates of no listed kernel (calibrated, edited, hand-written). */
const char *sc_cluster_flash_kernel_of(const sc_cluster *c);

/* Sets the node count (1..SC_CLUSTER_MAX_NODES); more than one node needs
 * an inter-node network. c is unchanged on error. */
sc_status sc_cluster_set_nodes(sc_cluster *c, long nodes, sc_error *err);
/* nodes * gpus_per_node */
long sc_cluster_total_gpus(const sc_cluster *c);
/* 1 if every field is equal (strings compared as strings). */
int sc_cluster_equal(const sc_cluster *a, const sc_cluster *b);

/* The measured size factor (sc_size_curve) of a warm collective of msg bytes
 * over a group spanning `nodes` nodes: its class's (inter when nodes > 1). */
double sc_cluster_coll_factor(const sc_cluster *c, int nodes, double msg);

/* Point-to-point messages' share of link class l: p2p_bw_eff when set,
 * else bw_eff. */
static inline double sc_cluster_p2p_eff(const sc_cluster *c, sc_link l)
{
    return c->eff.p2p_bw_eff[l] > 0 ? c->eff.p2p_bw_eff[l] : c->eff.bw_eff[l];
}

/* Reduce-scatters' and all-gathers' share of link class l: ag_rs_bw_eff when
 * set, else bw_eff. */
static inline double sc_cluster_ag_rs_eff(const sc_cluster *c, sc_link l)
{
    return c->eff.ag_rs_bw_eff[l] > 0 ? c->eff.ag_rs_bw_eff[l] : c->eff.bw_eff[l];
}

/* The alpha and link share of a collective on cold buffers over link class l:
 * the data-parallel ones (gradient reductions, ZeRO's parameter gathers),
 * which start after the step's compute has streamed other memory through
 * the caches. The cold_ pair when the file has it (calibrate fits it from
 * `bench --cold` files), else the warm alpha_s, bw_eff. On GPUs the two are
 * the same (no cold_ keys in any preset); on CPUs the collective then reads
 * its buffers and the transport's from memory (exec/bench.h, "Cold"). */
static inline void sc_cluster_cold(const sc_cluster *c, sc_link l, double *alpha, double *bw_eff)
{
    int cold = c->eff.cold_bw_eff[l] > 0;
    *alpha = cold ? c->eff.cold_alpha_s[l] : c->eff.alpha_s[l];
    *bw_eff = cold ? c->eff.cold_bw_eff[l] : c->eff.bw_eff[l];
}

#endif
