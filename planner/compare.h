/* compare.h - prediction beside measurement: a plan simulated (on a given
 * cluster, e.g. a calibrated one) against the timeline `stagecraft exec`
 * measured for it.
 *
 * Compared: the step time (simulated makespan vs the measured median step);
 * each op kind's mean duration over every rank (F, B, W, recompute,
 * optimizer, send_f, send_b, tp_allreduce, dp_* as present in both); each
 * rank's busy time (its compute-stream ops). Errors are predicted/measured
 * - 1; MAPEs are the means of their absolute values over kinds and ranks.
 * Error bars: interval is the prediction's 95% half-width (sc_step_interval,
 * from a calibrated cluster's residuals); meas_interval the measured
 * median's, from the noise the executor recorded (steps.spread, the
 * relative interquartile range of its last n steps): for n samples of
 * standard deviation sigma ~ IQR / 1.349 (a normal's), the median's
 * standard error is ~ 1.2533 sigma / sqrt(n), so meas_interval = 1.96 ·
 * 1.2533 · spread · median / (1.349 · sqrt(n)).
 * A measurement whose step time is zero (step_time_s, or steps.median_s
 * when recorded) is refused (SC_EINVAL naming the file): an error against
 * it means nothing. One without step_time_s never loads (timeline.h).
 * Ownership: sc_comparison_free.
 */
#ifndef SC_COMPARE_H
#define SC_COMPARE_H

#include <cjson/cJSON.h>
#include "sc.h"
#include "timeline.h"

typedef struct sc_kind_cmp {
    char name[24];
    int n;             /* measured ops of that kind */
    int compute;       /* F, B, W, recompute or the optimizer: its measured time is
                          its own; a send or collective's includes the wait for
                          its peers */
    double pred, meas; /* mean durations (s) */
    double err;
} sc_kind_cmp;

/* One kernel the executor timed alone (exec --kernels), as the timeline
 * holds it (its measured time per call is k.time_s), beside its prediction
 * for the same shape, per call. */
typedef struct sc_kernel_cmp {
    sc_tl_kernel k;
    double pred, err;
} sc_kernel_cmp;

typedef struct sc_comparison {
    char cluster[128], device[128];
    char operands[8];     /* the measurement's GEMM operands (timeline.h; "" = not recorded) */
    double pred_step, meas_step, step_err, interval;
    double meas_spread;    /* the measurement's steps.spread (-1: not recorded) */
    double meas_interval;  /* 95% half-width of the measured median from it (0: none) */
    int meas_steps;        /* steps it is over */
    int n_kinds;
    sc_kind_cmp kinds[16];
    double kind_mape;
    double compute_mape;   /* over the compute kinds alone (-1: none) */
    int n_ranks;
    double *rank_pred, *rank_meas, *rank_err;
    double rank_mape;
    /* the measurement's kernels, each timed alone (0: it has none): per
     * call, predicted by sc_cost_gemm_time / sc_cost_pass_time as the
     * executor ran them (a wgemm's B its input gradient, W its weight
     * gradient, BW both; a core GEMM's backward both input gradients); the
     * MAPE over them, and predicted and measured time summed over every
     * call, per op (gemm: wgemm and core; mem) and in all */
    int kernels_rank, n_kernels;
    sc_kernel_cmp *kernels;
    double kernel_mape;
    double kern_pred[3], kern_meas[3]; /* gemm, mem, all */
} sc_comparison;

/* cluster NULL: the plan's own. */
sc_status sc_compare(const char *plan_file, const char *measured_file, const char *cluster,
                     sc_comparison **out, sc_error *err);
cJSON *sc_comparison_json(const sc_comparison *c);
void sc_comparison_free(sc_comparison *c);

#endif
