/* calibrate.h - fit a cluster's efficiency parameters to measured points.
 *
 * This half knows no files, schedules or simulator: it fits point arrays
 * handed to it (sc_calib_points). Reading bench files and measured
 * timelines into points, and `stagecraft calibrate`'s entry sc_calibrate,
 * are planner/calib_points.h.
 *
 * What is fitted:
 *   compute (the points' dtype): eff_max, f_half, the HBM efficiency, the
 *     per-op overhead and the backward factor, by GSL nonlinear least
 *     squares (the trust-region solver of gsl_multifit_nlinear,
 *     finite-difference Jacobian) on the relative residuals of (a) every
 *     gemm point, predicted by the roofline of cost.h for one kernel of
 *     `flop` FLOPs moving `bytes` (no per-op overhead), and (b) every
 *     measured op point, predicted by sc_cost_stage (cost.h) for its plan's
 *     model, partition and sc_stage_cfg at its stage: F the forward, B the
 *     backward (half of it when the plan's schedule splits the backward),
 *     W half the backward, RECOMPUTE the recompute; OPTIMIZER (stage = the
 *     pipeline position) sc_cost_optimizer_time of the parameters of the
 *     position's v chunks (/dp under ZeRO >= 1). In two stages, because over
 *     times alone the overhead and f_half only ever appear as o +
 *     f_half/(peak·eff) and cannot be told apart: (1) the gemm points fit
 *     eff_max and f_half; (2) the op points fit the overhead, the HBM
 *     efficiency and the backward factor with that curve (and eff_max too
 *     when there are no gemm points). Where the plans' leaves are timed
 *     kernel by kernel (efficiency.gemm and kernel lists), stage (2) fits
 *     instead the time every kernel carries (efficiency.gemm.kernel_s, over
 *     the GEMM model's fit, which runs first) and the HBM efficiency, the
 *     GEMMs' eff_max without gemm points, and the backward factor only when
 *     the distinct op points give SC_CALIB_POINTS_PER_PARAM per parameter
 *     with it (else kept, said in the notes; report.ops_fit says which). Parameters are fitted through
 *     logarithms that keep them positive and within limits (efficiencies
 *     1e-4..100, the backward factor 0.1..10); an efficiency that ends above
 *     1 means the device beat its nominal figure, which is raised instead
 *     (gpu.peak_flops, gpu.hbm_bytes_per_s; said in the report's notes), so
 *     the written efficiencies stay in (0, 1] with the same predictions;
 *     standard errors come from the covariance at the optimum (delta
 *     method). Each stage needs at least one point more than the
 *     parameters it fits.
 *   the kernel-level GEMM model (only when the base cluster has an
 *     efficiency.gemm block and every gemm point has its shape): eff_max,
 *     k_half and kernel_s of that block (sms and the tile are the device's,
 *     kept), by the same nonlinear least squares on the relative residuals
 *     of every gemm point predicted by sc_cost_kernel_time (cost_kernel.c);
 *     gated like the compute fit ("gemm model fp16": points, R², MAPE,
 *     bounds) and recorded as efficiency.fits.gemm.
 *   kernels timed alone (only with fit_kernels, calibrate --kernels: from
 *     measured timelines of exec --kernels, where the base has an
 *     efficiency.gemm block): after the
 *     GEMM model, t = kernel_s · (kernels in the call) + a · C + b · bytes /
 *     hbm by GSL weighted linear least squares (weights 1/t^2), C being the
 *     call's GEMM time on the fitted GEMM model at sustained 1 without
 *     kernel_s (0 for a pass), bytes a pass's (0 for GEMMs): sustained = 1/a
 *     (the clock the GPU held through the step against the rule's; above 1
 *     it goes into eff_max), kernel_s, and memory_bw = 1/b. These replace
 *     the measured ops' kernel_s and HBM efficiency (stage 2 above then
 *     fits the GEMMs' eff_max instead: the level of the steps' GEMMs, whose
 *     clock the profile's need not share). Gated ("kernels timed alone": points, R², MAPE, and the
 *     three at their limits); at least SC_CALIB_POINTS_PER_PARAM GEMM calls
 *     and as many passes of distinct shapes, else not fitted (a note).
 *     Not the default: on one H200 (docs/accuracy.md, "The seventh run")
 *     it predicted the held-out steps no better than the ops' fit, and the
 *     steps it was fitted on worse (ops MAPE 9.2% against the preset's
 *     2.2%): kernels timed alone are not kernels inside a step.
 *   links (per class, intra and inter): alpha and beta of the ring model
 *     time = steps·alpha + volume/beta (allreduce 2(n-1) steps and
 *     2(n-1)/n·S; reduce-scatter and allgather n-1 and (n-1)/n·S; p2p 1 and
 *     S), by GSL weighted linear least squares (gsl_multifit_wlinear,
 *     weights 1/t^2 so every size counts alike), at least 3 points a class.
 *     The simulator has one beta per link class: the allreduce points set
 *     it when there are any (training traffic is mostly allreduces), else
 *     the fit pooled over every collective of the class; each collective is
 *     also fitted on its own and reported, and p2p's own fit sets
 *     p2p_bw_eff when there is an allreduce fit too. beta becomes bw_eff
 *     against the nominal bandwidth (intra.bytes_per_s; nics_per_node ·
 *     nic_bytes_per_s); a beta above nominal raises the nominal figure (and
 *     bw_eff = 1), said in the report. A fitted class drops the input's size
 *     ramp (s_half_bytes 0: the fit is the plain model); the "before" MAPE
 *     is the input's own, ramp included.
 *   cold links (per class, from bench files with cold_bytes > 0, bench
 *     --cold): the same alpha-beta fit over the cold points alone (allreduces
 *     when there are some, else pooled), against the nominal the warm fit
 *     left, as cold_alpha_s and cold_bw_eff: the line the data-parallel
 *     collectives run at (sc_cluster_cold); the warm fit never sees them.
 *     Cold points need warm ones of the same class (SC_EINVAL otherwise);
 *     a class refitted warm without cold points loses the input's cold line.
 *     Gated like the warm fit ("intra links, cold (allreduce)").
 *   host time (per class, at least 3 host points): the sender's host time
 *     per byte h = sum(gap) / sum(bytes) (least squares through the origin,
 *     weights 1/bytes), capped at 1e-6 s/B; fewer points leave the base's
 *     value.
 *   the overlap slowdown (efficiency.overlap_slowdown, from measured steps
 *     whose compute ops ran beside data-parallel collectives,
 *     sc_calib_overlap): k in [0, 1] minimising the squared relative
 *     residuals of t0 / (1 - phi + phi / (1 + k)) against t (golden-section
 *     search; a one-parameter fit), its standard error from the residuals
 *     and the model's slope in k. Gated like the compute fits ("overlap
 *     slowdown": points, R², MAPE, and k at its upper limit 1; k = 0 is a
 *     floor: nothing measurable). Without such points the input's k is
 *     kept, said in the notes.
 * Each fit records n, R² (of the times), MAPE and the standard deviation of
 * the relative residuals (rel_sd), which sim and plan turn into error bars.
 *
 * Errors (SC_EINVAL, messages starting "calibrate: "): no points at all, a
 * compute dtype without a peak on the base cluster, too few or degenerate
 * points for a fit, a failed solver. Deterministic for the same points.
 *
 * Ownership: sc_calib_fit_points reads the points (and the models and
 * partitions they point to) and keeps nothing; its scratch is its own.
 */
#ifndef SC_CALIBRATE_H
#define SC_CALIBRATE_H

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "partition.h"
#include "sc.h"

/* ---- points ------------------------------------------------------------------ */

/* A gemm size: one kernel of flop FLOPs moving bytes, measured t seconds;
 * m, n, k its shape (0 when unknown: then only the leaf curve is fitted). */
typedef struct sc_calib_gemm {
    double flop, bytes, t;
    int file;                 /* index into sc_calib_points.files (gates name it) */
    double m, n, k;
    double batch;             /* independent products in the call (0 read as 1) */
} sc_calib_gemm;

/* A kernel timed alone (exec --kernels, timeline "kernels"), per call: a
 * memory pass of `bytes` (n_gemm 0), or n_gemm GEMMs (a forward, an input-
 * or a weight-gradient GEMM, or both of a backward), gemm[i] = {batch, M,
 * N, K, bwd, splits} as run (bwd 1: a backward GEMM, its compute scaled by
 * efficiency.bwd_factor as the model scales it; 0 a forward; splits: run
 * as that many chunks of ceil(M / splits) rows, sc_cost_gemm_chunks_time;
 * 0 or 1 whole). */
typedef struct sc_calib_kernel {
    int n_gemm;
    double bytes;
    double gemm[2][6];
    double t;
    int file;
} sc_calib_kernel;

/* A fused attention kernel's measured rate at one shape
 * (scripts/bench_flash.py, stagecraft.flash_bench/1): bh batch x heads of
 * seq queries and keys of head_dim, causal or not; the forward's and the
 * forward + backward's FLOP/s as the benchmark counts them (forward
 * 4 bh s^2 d, half of it causal; backward 2.5 times the forward). */
typedef struct sc_calib_flash {
    int causal;
    double bh, seq, head_dim;
    double fwd_flops_s, fwd_bwd_flops_s;
    int file;
} sc_calib_flash;

/* Its time per call under cl, as compare prices it: a pass of its bytes,
 * or the sum of its GEMMs (cost.h sc_cost_pass_time, sc_cost_gemm_time). */
double sc_calib_kernel_time(const sc_cluster *cl, sc_dtype dt, const sc_calib_kernel *q);

/* A measured plan, as far as predicting its compute ops needs it. */
typedef struct sc_calib_plan {
    const sc_model *model;
    const sc_partition *part; /* pp·v stages */
    sc_stage_cfg cfg;         /* dtype (the model's), tp, mbs, recompute, bucket_bytes */
    int pp, v, dp, zero;
    int split;                /* the schedule splits the backward into B and W (zb-h1) */
    double step_s;            /* its measured step (timeline step_time_s; 0 = none) */
    int flash_gemms;          /* measured with fused attention run as two batched GEMMs
                                 (the executor's): priced so (sc_cluster_gemm) */
    int file;                 /* index into sc_calib_points.files of its timeline */
} sc_calib_plan;

/* A measured compute op: t, the median duration of op kind `kind` (SC_OP_F,
 * SC_OP_B, SC_OP_W, SC_OP_RECOMPUTE or SC_OP_OPTIMIZER of timeline.h) at
 * virtual stage `stage` (OPTIMIZER: the pipeline position) of plans[plan]. */
typedef struct sc_calib_op {
    int plan, stage, kind;
    double t;
    int file;
} sc_calib_op;

/* The communication a link point measured, in the order the report lists
 * the per-collective fits. */
typedef enum sc_calib_comm {
    SC_CALIB_ALLREDUCE = 0,
    SC_CALIB_REDUCESCATTER,
    SC_CALIB_ALLGATHER,
    SC_CALIB_P2P,
    SC_CALIB_COMM_N
} sc_calib_comm;

/* A message a measured plan sends warm: one tp collective (an allreduce, or
 * sequence parallelism's reduce-scatter or all-gather) or one pipeline
 * message, of `bytes`. Where a link's bench times jump with size (a
 * protocol's or a cache's step), the warm fits keep the sizes of the regime
 * these messages fall in (fit_links). */
typedef struct sc_calib_msg {
    sc_calib_comm op;
    double bytes;
} sc_calib_msg;

/* One size of a communication benchmark over link class `link`
 * (SC_LINK_INTRA, SC_LINK_INTER): `bytes` (nccl-tests sizes) over n ranks
 * (2 for p2p) in t seconds. */
typedef struct sc_calib_link {
    int link;
    sc_calib_comm op;
    int n;
    double bytes, t;
    int file;
    int cold;                 /* measured with caches evicted (bench --cold): fitted
                                 apart, as the link's cold_alpha_s, cold_bw_eff */
    int nodes, per_node;      /* the nodes the ranks spanned and the most on one node
                                 (the bench file's; 0: not recorded). An allreduce
                                 across nodes is fitted as the algorithm "auto" runs
                                 it (NCCL's tree or the ring, coll_tree.c) */
} sc_calib_link;

/* A sender's host time: a gap of `gap` seconds between two compute ops of a
 * rank during which it posted `bytes` of sends over link class `link`. */
typedef struct sc_calib_host {
    int link;
    double bytes, gap;
    int file;
    int rank;                 /* the measured rank the gap is of (-1: unknown) */
} sc_calib_host;

/* A compute op (F, B, W or RECOMPUTE) of a measured step that ran beside its
 * rank's data-parallel collectives (a gradient allreduce or reduce-scatter,
 * a parameter allgather): t its duration, phi the share of t they
 * overlapped (SC_CALIB_OVERLAP_MIN_PHI .. 1), t0 the median duration of the
 * ops of its plan, stage and kind that ran with none beside them. The
 * simulator's model (engine.h, sc_sim_add_span) runs compute at 1/(1 + k)
 * while a collective is open, so such an op lasts
 * t0 / (1 - phi + phi / (1 + k)); the overlap fit finds k. */
typedef struct sc_calib_overlap {
    double t, t0, phi;
    int file;
} sc_calib_overlap;

/* An op with less of it overlapped says too little about k: neither alone
 * nor a point. */
#define SC_CALIB_OVERLAP_MIN_PHI 0.05

/* ---- quality gates ------------------------------------------------------------
 * Before a calibrated cluster is written, every fit that sets a parameter
 * the simulator uses is judged, and so is every measured timeline it read.
 * A failed gate refuses the whole calibration (SC_EGATE, nothing written)
 * unless forced; forced, every failed gate is recorded in the cluster
 * (efficiency.fits.gates_failed) and the commands that use it warn.
 *
 * Fit gates (compute fp32 (gemm sizes); compute fp32 (measured ops); each
 * link class's used collective fit and its p2p fit; each host fit):
 *   points  distinct points (gemm: sizes; ops: (plan stage, kind) whose
 *           predictions differ; links: message sizes) >= SC_CALIB_POINTS_PER_PARAM
 *           per fitted parameter. With as many distinct points as
 *           parameters every curve fits exactly and R² and MAPE say nothing
 *           (five copies of one GEMM size fitted as R² 1.0000); two per
 *           parameter leave as many residual degrees of freedom as
 *           parameters. (Host fits have one parameter and need 3 points to
 *           run at all.)
 *   r2      R² of the times >= SC_CALIB_R2_FLOOR (0.90). The fits this
 *           project trusts reach 0.998-0.9999; below 0.9 the model's shape
 *           does not describe the times (the fit that predicted +4700% had
 *           -7.64). Not judged where R² has no meaning (a host fit over one
 *           message size).
 *   bound   no parameter at a limit of its fit (efficiencies 1e-4 or 100x
 *           nominal, the backward factor 0.1 or 10, a link share at 1e-4,
 *           the host time at its 1e-6 s/B cap): there the data pushed past
 *           any plausible value (the failed fit ended at a backward factor
 *           of 0.100). Physical floors are not bounds: alpha = 0, f_half = 0
 *           and the overhead near 0 mean "too small to measure at these
 *           sizes".
 *   mape    the fit's MAPE over its own points <= SC_CALIB_MAPE_CEILING
 *           (10%) for the compute fits: the accuracy target is 10% per
 *           held-out plan, which a fit that misses its own points by more on
 *           average cannot meet. Link fits <= SC_CALIB_LINK_MAPE_CEILING
 *           (15%): alpha + size/beta idealizes transports that change
 *           protocol with the size (Open MPI's shared memory between 64 and
 *           128 KiB); on this project's machine the fits kept reached
 *           4.7-13%, the ones that deserved refusal (sweeps across the
 *           protocol switch, benches in another job's burst) 18-42%; a link
 *           fit moves a step by its error times the step's exposed
 *           communication share. Host fits <= SC_CALIB_HOST_MAPE_CEILING
 *           (20%) over each rank's sum of gaps in its measured step (its
 *           host time per step, what the simulator adds up), not over single
 *           gaps: on the emulated cluster one 128 KiB send holds its core
 *           for 1.3-5.9 ns/B from gap to gap (the kernel's TCP work is partly
 *           asynchronous), a spread no per-byte constant follows, while each
 *           rank's sum came within about 10% of the fit.
 * Input gates (each measured timeline):
 *   spread  steps.spread (relative interquartile range of the measured
 *           steps) <= SC_CALIB_SPREAD_CEILING (5%, the MAPE target: a
 *           noisier measurement moves the fitted overhead and backward
 *           factor by as much as the whole error budget); a file without
 *           steps.spread (an older one): (max - min) / median <= twice that
 *           (a range is about 2.3 interquartile ranges over 10 samples);
 *   (an op that ends before it starts never gets here: the timeline reader
 *   refuses the file, traces/timeline.h, exit 2 like any bad input);
 *   drift   steps.stable is not false: exec's median settled;
 *   inside  the step time is > 0 and every op lies inside the step;
 *   range   every op's stage, chunk and microbatch exist in the plan;
 *   order   each rank's compute ops, by start time, follow its list of the
 *           lowered step (sim/lower.h) in order;
 *   probe   exec's speed probe (timeline.h "probe": every rank at once
 *           timing one GEMM before every step; each rank's median over the
 *           measured steps) within SC_CALIB_PROBE_CEILING (20%) of the
 *           fastest gemm bench point of its shape, its slowest and its
 *           fastest rank alike (no such point: not judged). The benches and the plans must run at the
 *           same speed for one compute fit to hold them: on a 2-vCPU cloud
 *           guest the host put both vCPUs on one core's two hardware
 *           threads for minutes at a time, the ranks' GEMMs ran 1.7-2x as
 *           long as a lone bench's, and a calibration that passed every
 *           other gate predicted the held-out plans +30% to +80%. With
 *           the probe once before and once after the steps, the runs whose
 *           forwards were 1.4-2x slow had probes 1.6-2.4x the bench's, the
 *           quiet runs within 5% (one 29%); per step, a quiet run's were
 *           within 5% of the bench (docs/accuracy.md, "The speed probe").
 * Replay gate (each measured plan, when the reader gives a replay):
 *   replay  the calibrated cluster simulates the plan's whole step within
 *           SC_CALIB_REPLAY_CEILING (10%) of its measured step_time_s. The
 *           fits see ops and bench sizes one by one; the step is where they
 *           meet the plan's waits and its communication as the executor ran
 *           it. A calibration that misses its own plans by more cannot meet
 *           the 10% target on others: on the "AMD EPYC" guest (2026-12-03)
 *           every fit passed while the tp 2 calibration plan replayed -12.4%,
 *           its 256 KiB allreduces taking 333 us inside exec against the
 *           bench's 60 us at that size, and the held-out plans came out -6% to
 *           -28%.
 */
#define SC_CALIB_POINTS_PER_PARAM 2
#define SC_CALIB_R2_FLOOR 0.90
#define SC_CALIB_MAPE_CEILING 0.10
#define SC_CALIB_LINK_MAPE_CEILING 0.15
#define SC_CALIB_HOST_MAPE_CEILING 0.20
#define SC_CALIB_SPREAD_CEILING 0.05
#define SC_CALIB_REPLAY_CEILING 0.10
#define SC_CALIB_PROBE_CEILING 0.20

/* One gate's verdict. */
typedef struct sc_calib_gate {
    char what[48];     /* the fit ("compute fp32 (gemm sizes)") or the input judged */
    char files[160];   /* the inputs behind it, comma-separated ("" if unknown) */
    char gate[12];     /* "points", "r2", "bound", "mape", "spread", "drift", "inside",
                          "range", "order", "replay" */
    double value, limit;
    char figure[160];  /* the figure in words ("1 distinct size for 2 parameters") */
    char fix[256];     /* what to measure to fix it */
    int failed;
} sc_calib_gate;

#define SC_CALIB_MAX_GATES 48

/* Simulates measured plan `plan` (an index into sc_calib_points.plans) on
 * cluster c, the calibrated one, at the plan's node count: *step_s its
 * predicted step. 0 on success; else the reason, in at most cap bytes of
 * why. */
typedef int (*sc_calib_replay_fn)(void *ctx, int plan, const sc_cluster *c, double *step_s,
                                  char *why, size_t cap);

/* Everything the fits consume. Compute points (gemm and ops) share one
 * dtype; t > 0 for every gemm, op and link point, bytes > 0 for link and
 * host points. files names the inputs the points' file fields index (may
 * be NULL: gates then name no file); in_gates are the input gates the
 * reader judged (copied into the report). */
typedef struct sc_calib_points {
    sc_dtype dtype;           /* of the compute points; (sc_dtype)-1 when there are none */
    int n_gemm, n_ops, n_plans, n_link, n_host, n_overlap;
    sc_calib_gemm *gemm;
    sc_calib_op *ops;
    sc_calib_plan *plans;     /* what ops[].plan indexes */
    sc_calib_link *link;
    sc_calib_host *host;
    sc_calib_overlap *overlap;
    int n_msg;                /* the measured plans' warm messages, each (op, bytes) once */
    sc_calib_msg *msg;
    int n_kern;               /* kernels timed alone (the fit of "kernels timed alone") */
    int fit_kernels;          /* fit them (calibrate --kernels); else they are only counted */
    sc_calib_kernel *kern;
    int n_flash;              /* fused attention timed by shape (fitted: efficiency.gemm.flash_*) */
    sc_calib_flash *flash;
    sc_dtype flash_dtype;
    char flash_backend[32];   /* the backend fitted (a file's "flash" where it has several) */
    char flash_unused[128];   /* the files' other backends, not fitted ("" none) */
    int gemm_gpu_files;       /* gemm benches run on a GPU (backend cuda) */
    int gemm_burst_files;     /* GPU gemm benches timed in bursts (bench gemm --hot 0, or
                                 before it existed): calibrate notes it */
    int n_files;
    const char *const *files;
    int n_in_gates;
    const sc_calib_gate *in_gates;
    sc_calib_replay_fn replay; /* NULL: no replay gate (the fits alone) */
    void *replay_ctx;
    /* write the bench sizes outside a warm line's regime as size factors
     * (sc_size_curve; calibrate --size-factors). Off by default: on the "AMD
     * EPYC" guest (2026-12-03) the bench's fast regime below a shared-memory
     * step (128 KiB allreduce 19-33 us, caches hot from the last iteration)
     * was not what exec's tp collectives ran at between GEMMs (73-108 us):
     * with the factors tp 2 m 4 came out -14.2% and -10.5% in two fresh
     * runs, without them +4.8% and +6.5%. Where the bench's steps hold inside
     * a step (a protocol switch, NCCL's LL to Simple), they are the measured
     * curve; without them the note lists what they would be. */
    int size_factors;
} sc_calib_points;

/* ---- fits -------------------------------------------------------------------- */

typedef struct sc_calib_fit {
    char what[32];        /* "compute fp32", "intra allreduce", ... */
    int n;
    double a, b;          /* compute: eff_max, f_half; links: alpha_s, beta (bytes/s) */
    double se_a, se_b;
    double r2, mape, rel_sd;
    double mape_before;   /* the same points under the input cluster */
} sc_calib_fit;

/* What the measured ops fitted besides the HBM efficiency (report.ops_fit). */
enum {
    SC_CALIB_FIT_OVERHEAD = 1, /* efficiency.op_overhead_s (leaves timed from totals) */
    SC_CALIB_FIT_BWD = 2,      /* efficiency.bwd_factor */
    SC_CALIB_FIT_KERNEL = 4,   /* efficiency.gemm.kernel_s (leaves timed kernel by kernel) */
    SC_CALIB_FIT_GEMM_EFF = 8  /* efficiency.gemm.eff_max (kernels, no gemm sizes) */
};

typedef struct sc_calib_report {
    int n_files, n_gemm, n_ops, n_comm;
    double overhead_s, overhead_se, memory_bw, memory_bw_se, bwd_factor, bwd_factor_se;
    int ops_fit;                      /* what the measured ops fitted (SC_CALIB_FIT_*) */
    double kernel_s, kernel_se;       /* efficiency.gemm.kernel_s as written */
    double kernel_before_s;           /* its value before the measured ops' fit (the
                                         gemm sweep's, else the input's) */
    int n_kern;                       /* kernels timed alone that were fitted (0: none) */
    double kern_sustained, kern_sustained_se; /* efficiency.gemm.sustained from them */
    double kern_kernel_s, kern_kernel_se;     /* efficiency.gemm.kernel_s from them */
    double kern_memory_bw, kern_memory_bw_se; /* efficiency.memory_bw from them */
    double kern_r2, kern_mape, kern_mape_before;
    int n_flash;                      /* fused attention points fitted (0: none) */
    char flash_backend[32];
    double flash_fwd, flash_bwd, flash_s0, flash_s0_full, flash_full, flash_hd64;
    double flash_s0_bwd, flash_s0_full_bwd;
    double flash_mape, flash_mape_before; /* the model over every point, fitted and before */
    int n_overlap;                    /* overlap points; 0: overlap_slowdown kept */
    double overlap_slowdown, overlap_se;
    int n_fits;
    sc_calib_fit fits[24];
    char notes[1024];
    int n_gates, n_failed;            /* every gate judged (input gates first) */
    sc_calib_gate gates[SC_CALIB_MAX_GATES];
} sc_calib_report;

/* Fits base's parameters to pts and judges the fits (quality gates above).
 * On success *out is base with the fitted values and their statistics in
 * efficiency.fits (compute, overhead, link, link_p2p, host; with force,
 * gates_failed lists every failed gate; every other fits field zeroed: the
 * caller records the inputs, date and provenance and validates), and *rep
 * (if non-NULL) the report with every gate, n_files left 0. A failed gate
 * without force: SC_EGATE naming the files, the fit, the gate, the figure
 * and what to measure (the first failure; the report lists them all), and
 * *out untouched; so it is when the fit itself fails on inputs that failed
 * an input gate (the cause is the input). Other failures leave *out
 * untouched too. Cost: each compute evaluation runs sc_cost_stage once per
 * plan; the solver takes up to 300 iterations per stage. */
sc_status sc_calib_fit_points(const sc_cluster *base, const sc_calib_points *pts, int force,
                              sc_cluster *out, sc_calib_report *rep, sc_error *err);

/* The gate as one line, "FILES: WHAT: GATE FIGURE (limit LIMIT)", as the
 * cluster file records it (at most cap - 1 characters). */
void sc_calib_gate_line(const sc_calib_gate *g, char *buf, size_t cap);

/* Does the device string match the cluster's GPU? The first word of
 * gpu.name (e.g. "A100" of "A100-SXM4-40GB", "cpu" of "cpu-core") must
 * appear in it, case-insensitively. */
int sc_calib_device_matches(const sc_cluster *c, const char *device);

#endif
