/* label.h - which kind of cluster a prediction used, and the error bar that
 * goes with it: the one classification that sim, plan, tune and whatif print.
 *
 * Owner: cost_models/ (label.c).
 *
 * A cluster is
 *   calibrated        its efficiency has calibrate's fits (efficiency.fits):
 *                     fitted from measurements on that hardware; sim and
 *                     compare give its 95% interval from the fits' residuals;
 *   validated preset  equal to a preset (any node count) whose error on the
 *                     public validation suite (stagecraft validate,
 *                     validation/ suites) is in the table below;
 *   uncalibrated      anything else: a preset without validation rows, an
 *                     edited preset, a hand-written file.
 *
 * The table (label.c) holds, per preset, the suite's rows on it, their MAPE,
 * mean signed error and the standard deviation of the signed errors, as
 * `stagecraft validate` computes them (error = (predicted - measured) /
 * measured). tests/test_validate.c reruns those rows and fails when a stored
 * figure is stale by more than half a point: a change to a cost model that
 * moves the suite must update the table with it.
 *
 * Error bar of a validated preset: measured = predicted / (1 + error), so with
 * the rows' mean signed error mu and spread sigma the measured step is likely
 * (about 95% if the errors were normal) within
 *   [predicted / (1 + mu + 2 sigma), predicted / (1 + mu - 2 sigma)]
 * where sigma is the standard deviation over 3 rows or more, else the MAPE
 * (a row or two say little about the spread). No bar otherwise: a calibrated
 * cluster has its own interval, an uncalibrated one has no evidence.
 *
 * Ownership: plain values; the table is static.
 */
#ifndef SC_LABEL_H
#define SC_LABEL_H

#include <cjson/cJSON.h>
#include "cluster.h"

typedef enum sc_label_kind {
    SC_LABEL_CALIBRATED = 0,
    SC_LABEL_VALIDATED,
    SC_LABEL_UNCALIBRATED
} sc_label_kind;

#define SC_LABEL_ATTN_MAX 6 /* "unfused" and the five fused kernels */

/* One preset's figures on the validation suite (fractions), and what its rows
 * span: their sequence lengths, GPU counts and model parameters, smallest and
 * largest. A run beyond those is one the figures say nothing about (the MPT
 * tables' long sequences, docs/accuracy.md, run 12-44% off where the suite's
 * sequences run about 5% off). */
typedef struct sc_preset_validation {
    const char *preset;
    int rows;
    double mape, mean_signed, sd_signed;
    int seq_lo, seq_hi;
    long gpus_lo, gpus_hi;
    double params_lo, params_hi;
    /* the attention its rows ran, in name order: "unfused" and the fused kernels'
     * names (sc_cluster_flash_kernel); NULL after the last */
    const char *attention[SC_LABEL_ATTN_MAX];
} sc_preset_validation;

/* What a prediction ran, to compare with its preset's rows: the model's
 * sequence length, the GPUs of the step and the model's parameters (0:
 * unknown, not compared). */
typedef struct sc_label_run {
    int seq;
    long gpus;
    double params;
    const char *attention;   /* "unfused" or the fused kernel's name; NULL: unknown */
} sc_label_run;

/* sc_label_run.attention of a run on c: "unfused", or with fused attention
 * (flash set) the kernel whose published rates c carries
 * (sc_cluster_flash_kernel_of; NULL for rates of no listed kernel). */
const char *sc_label_attention(const sc_cluster *c, int flash);

typedef struct sc_cluster_label {
    sc_label_kind kind;
    const char *name;                 /* "calibrated", "validated preset", "uncalibrated" */
    const sc_preset_validation *val;  /* the preset's figures when validated, else NULL */
} sc_cluster_label;

/* The stored table, in a fixed order; *n gets its length. */
const sc_preset_validation *sc_preset_validations(int *n);
/* Classifies c (O(1): one preset lookup and comparison). */
void sc_cluster_label_of(const sc_cluster *c, sc_cluster_label *out);
/* The error bar of a prediction of predicted seconds on a validated preset:
 * 1 and [*lo, *hi] when there is one, 0 (and *lo = *hi = predicted) when not. */
int sc_label_interval(const sc_cluster_label *l, double predicted, double *lo, double *hi);
/* "validated preset dgx-h100 (validation suite: 6 rows, MAPE 26.1%, mean signed
 * error -26.1%)", "calibrated NAME (fitted from measurements, 2026-12-01T10:00:00Z)",
 * "uncalibrated (preset p5.48xlarge: no validation rows; stagecraft calibrate
 * fits it to measurements)", into buf. Returns buf. */
const char *sc_label_describe(const sc_cluster_label *l, const sc_cluster *c, char *buf,
                              size_t size);
/* Where run lies beyond the rows of a validated preset l: "sequence 32768
 * (rows 2048 to 8192)", "16384 GPUs (rows 8 to 2304)", "20.0M parameters (rows
 * 1.3B to 530B)", "attention fa3 (rows ran fa2, triton, cudnn)", joined with
 * "; ", into buf ("" when none, or l is not a validated preset, or run is
 * NULL). Returns how many dimensions. */
int sc_label_outside(const sc_cluster_label *l, const sc_label_run *run, char *buf,
                     size_t size);
/* {kind, description, validation?: {rows, mape, mean_signed_error, sd_signed_error,
 * seq: [lo, hi], gpus: [lo, hi], params: [lo, hi], attention: [names]},
 * step_time_range_s?: [lo, hi], outside_validation?: [KEY...]} for a prediction of
 * step_s seconds on c (no range when step_s <= 0 or there is no bar;
 * outside_validation, for a validated preset and a run, lists the keys among seq,
 * gpus, params, attention where it lies beyond the rows, [] when none). run may be
 * NULL (then no outside_validation). The caller owns it (cJSON_Delete); NULL when out of
 * memory. */
cJSON *sc_cluster_label_json(const sc_cluster *c, double step_s, const sc_label_run *run);

#endif
