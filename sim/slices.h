/* slices.h - choosing token slices (TeraPipe, Li et al. 2021, "TeraPipe:
 * Token-Level Pipeline Parallelism for Training Large-Scale Language
 * Models", sec. 3.3).
 *
 * With K slices of costs t_1..t_K (the slowest stage's forward plus backward
 * of one slice; a slice's attention grows with its position, so later
 * slices cost more for the same length), m microbatches and p stages, a
 * pipeline runs in about
 *     T = m * sum_k t_k + (p - 1) * max_k t_k.
 * TeraPipe's dynamic programme minimises it: for each candidate bound t*
 * on the largest slice, f(x) = min over slices [y, x) with t(y, x) <= t* of
 * f(y) + t(y, x) covers the first x tokens most cheaply; T(t*) = m f(s) +
 * (p - 1) t*. Positions are multiples of a grain g (s / g <= 32 of them;
 * g divides s), costs come from sc_cost_stage of the step's partition, and
 * the best T over every t* wins.
 *
 * sc_slices_auto returns the programme's slicing unless the best equal
 * slicing simulates faster (it is then returned instead: `auto` is never
 * worse than equal slices, measured by the simulator, not by T).
 */
#ifndef SC_SLICES_H
#define SC_SLICES_H

#include "cluster.h"
#include "model.h"
#include "sc.h"
#include "step.h"

#define SC_SLICES_MAX 64 /* slices per microbatch */

typedef struct sc_slicing {
    int k;                     /* slices (1: none) */
    int len[SC_SLICES_MAX];    /* tokens per slice, summing to the sequence */
    double model_s;            /* T of the programme's formula for it */
    double step_s;             /* its simulated step (0 when not simulated) */
    int equal;                 /* 1: equal slices (the programme's choice lost) */
    double equal_step_s;       /* the best equal slicing's simulated step */
    int equal_k;
} sc_slicing;

/* The programme's slicing for cfg (cfg->slices ignored); SC_EINVAL when
 * the model or schedule cannot be sliced (sc_step_check_slices' message). */
sc_status sc_slices_auto(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                         sc_slicing *out, sc_error *err);

#endif
