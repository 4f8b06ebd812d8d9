/* calib_points.h - calibration's measured points, read from files, and the
 * entry of `stagecraft calibrate --cluster C FILE... -o calibrated.json`.
 *
 * This half reads; cost_models/calibrate.h fits (sc_calib_fit_points, on
 * the sc_calib_points made here). It sits in planner/ because a measured
 * timeline is read against its plan (sim/plan.h) and its lowered step
 * (sim/lower.h), which the fits must not know.
 *
 * Inputs, told apart by their "format":
 *   bench files (stagecraft.bench/1 from `stagecraft bench`, read by
 *   traces/bench_file.h): a gemm file gives one gemm point per size (one
 *   kernel of 2mnk FLOPs moving (mk+kn+mn)·elem_bytes); a collective or p2p
 *   file one link point per size over its link class, with its ranks (2 for
 *   p2p).
 *   measured timelines (stagecraft.timeline/1 with source "exec", from
 *   `stagecraft exec`): the plan they name is opened (its path as written,
 *   else beside the timeline; its digest must match) with its model and
 *   cluster. Each (virtual stage, kind) of F, B, W, RECOMPUTE, and each
 *   pipeline position's OPTIMIZER, gives one op point: the median duration
 *   over ranks and microbatches of its compute-stream ops. Each (virtual
 *   stage, kind) of F, B, W and RECOMPUTE whose ops ran both beside their
 *   rank's data-parallel collectives (their intervals merged; at least
 *   SC_CALIB_OVERLAP_MIN_PHI of the op overlapped) and beside none gives one
 *   overlap point (calibrate.h): the median duration and overlapped share of
 *   the first against the median duration of the second. Plans without
 *   tensor or data parallelism and without recompute, with pp >= 2, also
 *   give host points: the plan's step is lowered (sc_lower on its own
 *   cluster) and each rank's actions walked in order beside its measured
 *   compute ops (the first piece of each F, B or W compute action is one
 *   measured op); a gap between two compute ops with sends between them is
 *   the sender's host time (plus the executor's own, a few microseconds)
 *   for the bytes its measured sends posted in the gap, when every receive
 *   between them had its message complete on the sender before the gap
 *   began (so no waiting is in it). The link class is the sending rank's
 *   node against its peer's.
 *
 * Input gates (calibrate.h), judged per measured timeline: its steps'
 * spread and drift, every op inside the step, no op ending before it
 * starts, every stage, chunk and microbatch in the plan's range, and each
 * rank's compute ops in the order of its lowered list (the plan is lowered
 * on its own cluster, sc_lower).
 *
 * Bad input, each a clear error naming the file: files that are neither, a
 * bench file the reader refuses, a bench or timeline measured on another
 * device than the cluster's GPU (sc_calib_device_matches), a bench with
 * more ranks than the cluster has GPUs or a time under 1e-12 s, a simulated
 * timeline, one naming no plan, a plan that no longer opens or has
 * changed, a timeline whose rank count is not its plan's dp·tp·pp or whose
 * rank claims a pipeline position the plan does not have, compute points
 * in more than one dtype or in a dtype the cluster has no peak for, more
 * than 100000 points. The fits' own errors follow (calibrate.h).
 *
 * Ownership: nothing is kept; the plans and models opened are freed before
 * sc_calibrate returns.
 */
#ifndef SC_CALIB_POINTS_H
#define SC_CALIB_POINTS_H

#include "calibrate.h"
#include "cluster.h"
#include "sc.h"

/* Reads files[0..nfiles) (1 to SC_CLUSTER_MAX_INPUTS) into points, judges
 * every measured timeline (the input gates of calibrate.h), fits base's
 * parameters to them and judges the fits, and on success sets *out to the
 * calibrated cluster: the fitted values, their provenance ("calibrated DATE
 * from N files") and efficiency.fits (date, the inputs' names and digests,
 * every fit's statistics, and with force every failed gate), validated;
 * *rep (if non-NULL) is the report with every gate's verdict. A failed gate
 * without force: SC_EGATE (nothing for the caller to write), the message
 * naming the file, the fit or input, the gate, the figure and what to
 * measure. flags: SC_CALIB_FORCE, SC_CALIB_SIZE_FACTORS, SC_CALIB_KERNELS (1 is force, as
 * before the flags). date NULL = now (UTC). On failure *out is untouched.
 * Deterministic for the same inputs and date. */
/* A kernel exec --kernels timed alone (timeline.h sc_tl_kernel) as the
 * calls it ran: a pass of its bytes, or its GEMMs as the executor runs them
 * (a forward; an input gradient dA = dC B^T, (M, K, N); a weight gradient
 * dB = A^T dC, (K, N, M); a backward both, and so always for an attention
 * product, whose operands are both activations). q's time is k's, its file
 * 0. compare prices it (sc_calib_kernel_time), calibrate fits it. */
struct sc_tl_kernel;
void sc_calib_kernel_of(const struct sc_tl_kernel *k, sc_calib_kernel *q);

#define SC_CALIB_FORCE 1        /* write past failed gates (records them) */
#define SC_CALIB_SIZE_FACTORS 2 /* keep bench sizes outside the fitted regime as size
                                   factors (sc_calib_points.size_factors) */
#define SC_CALIB_KERNELS 4      /* fit the kernels timed alone (sc_calib_points.fit_kernels) */
sc_status sc_calibrate(const sc_cluster *base, const char *const *files, int nfiles,
                       const char *date, int flags, sc_cluster *out, sc_calib_report *rep,
                       sc_error *err);

#endif
