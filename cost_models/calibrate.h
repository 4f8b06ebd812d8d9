/* calibrate.h - fit a cluster's efficiency parameters to measurements:
 * `stagecraft calibrate --cluster C FILE... -o calibrated.json`.
 *
 * Inputs are microbenchmark files (stagecraft.bench/1, from `stagecraft
 * bench`) and measured timelines (stagecraft.timeline/1 from `stagecraft
 * exec`, which name the plan they ran; the plan must still open).
 *
 * What is fitted:
 *   compute (per dtype measured): eff_max, f_half, the HBM efficiency and
 *     the per-op overhead, by GSL nonlinear least squares (the trust-region
 *     solver of gsl_multifit_nlinear, finite-difference Jacobian) on the
 *     relative residuals of (a) every bench gemm size, predicted by the
 *     roofline of cost.h for one call of 2mnk FLOPs moving (mk+kn+mn)
 *     elements, and (b) every measured compute op (F, B, W, recompute; the
 *     median over steps and ranks of each (plan, stage, kind)), predicted by
 *     the simulator's own per-stage figures (sc_step_stage_infos). Parameters
 *     are fitted through transforms that keep them in range (a logistic for
 *     the efficiencies, a logarithm for f_half and the overhead); standard
 *     errors come from the covariance at the optimum (delta method).
 *     Needs at least one point more than the parameters it fits: gemm sizes
 *     alone fit eff_max, f_half and the overhead; measured ops add the HBM
 *     efficiency.
 *   links (per class, intra and inter, from the bench's link field): alpha
 *     and beta of the ring model time = steps·alpha + volume/beta (allreduce
 *     2(n-1) steps and 2(n-1)/n·S; reduce-scatter and allgather n-1 and
 *     (n-1)/n·S; p2p 1 and S), by GSL weighted linear least squares
 *     (gsl_multifit_wlinear, weights 1/t^2 so every size counts alike). The
 *     simulator has one beta per link class: the allreduce points set it
 *     when there are any (training traffic is mostly allreduces), else the
 *     fit pooled over every collective of the class; each collective is also
 *     fitted on its own and reported. beta becomes bw_eff against the nominal bandwidth
 *     (intra.bytes_per_s; nics_per_node · nic_bytes_per_s); a beta above
 *     nominal raises the nominal figure (and bw_eff = 1), said in the report.
 * Each fit records n, R² (of the times), MAPE and the standard deviation of
 * the relative residuals (rel_sd), which sim and plan turn into error bars.
 *
 * Bad input: files that are neither, a bench or timeline measured on
 * another device than the cluster's GPU (the first word of gpu.name, e.g.
 * "A100" of "A100-SXM4-40GB" or "cpu" of "cpu-core", must appear in the
 * recorded device name, case-insensitively), a timeline whose rank count is
 * not its plan's dp·tp·pp, a bench with more ranks than the cluster has
 * GPUs, and too few points for a fit each get a clear error naming the file.
 *
 * The result is the input cluster with the fitted values, its provenance
 * ("calibrated DATE from N files") and efficiency.fits (date, the inputs'
 * names and digests, every fit's statistics). Deterministic for the same
 * inputs and date.
 */
#ifndef SC_CALIBRATE_H
#define SC_CALIBRATE_H

#include "cluster.h"
#include "sc.h"

typedef struct sc_calib_fit {
    char what[32];        /* "compute fp32", "intra allreduce", ... */
    int n;
    double a, b;          /* compute: eff_max, f_half; links: alpha_s, beta (bytes/s) */
    double se_a, se_b;
    double r2, mape, rel_sd;
    double mape_before;   /* the same points under the input cluster */
} sc_calib_fit;

typedef struct sc_calib_report {
    int n_files, n_gemm, n_ops, n_comm;
    double overhead_s, overhead_se, memory_bw, memory_bw_se, bwd_factor, bwd_factor_se;
    int n_fits;
    sc_calib_fit fits[24];
    char notes[512];
} sc_calib_report;

/* Fits base's parameters to the files; date NULL = now (UTC). On success
 * *out is the calibrated cluster and *rep (if non-NULL) the report. */
sc_status sc_calibrate(const sc_cluster *base, const char *const *files, int nfiles,
                       const char *date, sc_cluster *out, sc_calib_report *rep, sc_error *err);

/* Does the device string match the cluster's GPU (see above)? */
int sc_calib_device_matches(const sc_cluster *c, const char *device);

#endif
