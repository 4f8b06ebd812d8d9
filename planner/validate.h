/* validate.h - the validation suite: published end-to-end training
 * measurements (stagecraft.validation/1, one file per suite under
 * validation/), each row run through the simulator and set beside what was
 * measured.
 *
 * File (docs/formats.md has the key table):
 *   { format, name, description?,
 *     sources: [ { id, citation, year, url?, commit? } ],
 *     rows: [ { id, source (a sources[].id), where (table, figure or
 *               section), hardware, software, approximate?, assumptions?,
 *               note?,
 *               model:   { builtin } | { generator, <its parameters>, dtype? },
 *               layout:  { dp, tp, pp, v?, schedule?, zero?, recompute, sp?,
 *                          attention? ("unfused" default, or "flash": the
 *                          attention kernels the run used), mbs, global_batch },
 *               cluster: { preset, nodes, network? { nics_per_node, nic_gbps } },
 *               measured: { iteration_s } | { tokens_per_s, formula }
 *                       | { tflops_per_gpu, flops, params?, formula } } ] }
 *
 * Loading validates everything and refuses, with one message naming the file
 * and the JSON path, any row the simulator cannot run as published: tp not
 * dividing the attention (or key/value) heads, a global batch not divisible
 * by dp·mbs, an interleaved schedule whose microbatch count is not a multiple
 * of pp, more pipeline stages than layers, sequence parallelism without
 * tensor parallelism, more ranks than the cluster has GPUs, an unknown preset,
 * built-in or generator. Every row's model is built on load (models are
 * generated from hyperparameters, so no large file is read).
 *
 * Measured figures become an iteration time on load:
 *   iteration_s     as published;
 *   tokens_per_s    global_batch · seq / tokens_per_s (the whole job's rate);
 *   tflops_per_gpu  F / (tflops_per_gpu · 1e12 · GPUs), F the FLOPs of one
 *                   iteration by the source's own convention, named in
 *                   `flops`:
 *       megatron                 72·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))
 *       megatron-full-recompute  96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))
 *                                (Narayanan et al. 2021, eq. 3; the
 *                                recomputed forward counted)
 *       6nd                      6·N·B·s with N = `params`
 *       6nd-attn                 6·N·B·s + 12·l·h·B·s² (Dao 2023, section
 *                                4.2: the attention's FLOPs, not halved for
 *                                the causal mask)
 *   with B the global batch, s the sequence length, l the layers, h the
 *   hidden size and V the vocabulary of the row's model.
 *
 * Running a row simulates one step (sc_step_simulate) with
 * sc_step_cfg.one_replica = 1 (dp is the outermost placement), a uniform
 * partition and the row's layout; its error is (predicted - measured) /
 * measured. Statistics over a set of rows: MAPE (mean |error|), mean signed
 * error and max |error|, all fractions.
 *
 * Ownership: sc_val_load returns a suite freed with sc_val_free (NULL ok);
 * rows, their models and their strings belong to it.
 */
#ifndef SC_VALIDATE_H
#define SC_VALIDATE_H

#include <cjson/cJSON.h>
#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "sc.h"
#include "step.h"

#define SC_VAL_FORMAT "stagecraft.validation/1"

/* The targets of issue 13 ("Predictions that hold on real GPU clusters"),
 * over the whole suite. */
#define SC_VAL_TARGET_MAPE 0.05     /* MAPE at most 5% */
#define SC_VAL_TARGET_MAX_ABS 0.10  /* every row within 10% */
#define SC_VAL_TARGET_BIAS 0.02     /* mean signed error within ±2% */
/* inside each model size measured in several layouts (rows of one model
 * on one cluster), predicted and measured orders agree: Spearman >= 0.9 */
#define SC_VAL_TARGET_SPEARMAN 0.9

typedef enum sc_val_kind { SC_VAL_ITERATION_S = 0, SC_VAL_TOKENS_PER_S, SC_VAL_TFLOPS } sc_val_kind;

typedef struct sc_val_source {
    const char *id, *citation, *url, *commit; /* url, commit: NULL when absent */
    int year;
} sc_val_source;

typedef struct sc_val_row {
    char path[24];                 /* "rows[3]", for messages */
    const char *id;
    const sc_val_source *source;
    const char *where, *hardware, *software;
    const char *assumptions, *note; /* NULL when absent */
    int approximate;
    const char *builtin;            /* built-in model name, or NULL */
    const char *generator;          /* generator kind, or NULL */
    char model_desc[96];            /* "gpt l48 h6144 a64 s2048 V51200" or the built-in */
    sc_model *model;                /* built on load */
    int dp, tp, pp, v, mbs, m, zero, sp;
    int cp;                 /* context parallelism (layout.cp; 1 when absent) */
    int tp_comm_overlap, overlap_param_gather; /* the run's overlaps (optional keys) */
    int overlap_p2p_comm; /* its pipeline sends beside the compute (optional; default 1) */
    int defer_embedding_wgrad, wgrad_deferral_limit; /* Megatron-Core's (optional; 0, 0) */
    int overlap_grad_reduce; /* its dp reduction beside the backward (optional; default 1) */
    int grad_reduce_in_fp32; /* its gradients reduced in fp32 (optional; default 0) */
    int fp8;                 /* fp8 GEMMs as Transformer Engine runs them (optional; 0) */
    sc_attn attn;
    const char *attn_kernel;        /* layout.attention_kernel ("fa1", "fa2", "fa3", "triton"), or NULL: the
                                       preset's own rates (sc_cluster_flash_kernel) */
    const char *framework;          /* layout.framework (overhead.h), or NULL: none */
    int fit_half;                   /* in the half the overheads are fitted on (sc_val_mark_halves) */
    long global_batch;
    const char *schedule;
    sc_recompute recompute;
    const char *preset;
    int nodes;
    int net_nics;                   /* cluster.network: NICs a node and each one's rate, */
    double net_nic_gbps;            /* replacing the preset's (0: the preset's network) */
    sc_val_kind kind;
    double value;                   /* the published figure in its own unit */
    const char *formula, *flops;    /* NULL when absent */
    double params;                  /* for flops "6nd" and "6nd-attn" */
    double measured_s;              /* the iteration time it stands for */
} sc_val_row;

typedef struct sc_val_suite {
    char *file;
    const char *name, *description;
    int n_sources, n;
    sc_val_source *sources;
    sc_val_row *rows;
    cJSON *json;                    /* owns every string above */
} sc_val_suite;

typedef struct sc_val_result {
    double predicted_s, measured_s, error; /* error = (predicted - measured) / measured */
    int gpus, nodes, fits;          /* fits: every stage within GPU memory (predicted) */
    char cluster[128];              /* the cluster simulated (the preset, or the override) */
    double overhead;                /* the framework overhead applied (0: none) */
    sc_step_breakdown breakdown;    /* the simulated step's, seconds a rank (step.h) */
    char busiest_link[48];          /* the link busy longest in the step ("" if none) */
    double busiest_busy;            /* its busy fraction of the step */
    double peak_mem_bytes;          /* the largest predicted peak memory of a rank */
    double gpu_mem_bytes;           /* the simulated cluster's GPU memory */
    double estimate_s;              /* the planner's analytical estimate of the layout
                                       (sc_estimate_step; 0 if it failed) */
} sc_val_result;

/* How to run a row; NULL = the defaults (all 0). */
typedef struct sc_val_opts {
    const char *cluster_override;   /* a preset or a cluster file replacing the row's */
    int no_overhead;                /* the kernels alone: no framework overhead */
    /* the fit's trial: this framework's rows get trial_overhead instead of
     * the table's (NULL: none) */
    const char *trial_framework;
    double trial_overhead;
} sc_val_opts;

typedef struct sc_val_stats {
    int n;
    double mape, mean_signed, max_abs;
} sc_val_stats;

/* Loads and checks a suite; on error *out is NULL and err names the file
 * and the JSON path. */
sc_status sc_val_load(const char *file, sc_val_suite **out, sc_error *err);
void sc_val_free(sc_val_suite *s);

/* The suite files of a folder (*.json, sorted by name), as paths the caller
 * frees with sc_val_paths_free. SC_EIO when the folder cannot be read,
 * SC_ENOTFOUND when it holds none. */
sc_status sc_val_list(const char *dir, char ***paths, int *n, sc_error *err);
void sc_val_paths_free(char **paths, int n);

/* Simulates row i of s. o->cluster_override (a preset or a cluster file;
 * NULL: the row's preset) replaces the row's cluster, with as many nodes as
 * the row's ranks need. The row's framework overhead (layout.framework,
 * cost_models/overhead.h) applies unless o->no_overhead. Errors name the
 * suite's file and the row's path. */
sc_status sc_val_run_row(const sc_val_suite *s, int i, const sc_val_opts *o,
                         sc_val_result *out, sc_error *err);

/* Marks each row's fit_half over suites s[0..n) (in that order, rows in
 * file order): the rows of each framework are numbered from 0 and the even
 * ones are the fit half (overhead.h). Rows without a framework are in
 * neither half's fit (fit_half 0). */
void sc_val_mark_halves(sc_val_suite *const *s, int n);

/* Gives each row of s[0..n) the fit_half of the row with the same suite name
 * and row id in ref[0..nref) (marked by sc_val_mark_halves), 0 where ref has
 * none: which rows a table fitted on ref was fitted on, whatever subset of
 * suites s is (numbering s itself would mark other rows). */
void sc_val_copy_halves(sc_val_suite *const *s, int n, sc_val_suite *const *ref, int nref);

/* Fits framework fw's overhead on its fit-half rows of s[0..n) (marked by
 * sc_val_mark_halves): the fraction in [0, 3] at which their mean signed
 * error is 0 (bisection to 1e-5; 0 when the kernels alone are already
 * slower). *rows gets how many rows it used (0: none, *frac 0). */
sc_status sc_val_fit_overhead(sc_val_suite *const *s, int n, const char *fw, double *frac,
                              int *rows, sc_error *err);

/* The attention row w ran, by the names a suite's attention_kernel and the
 * label's spans use: "unfused", the kernel the row names, or, where it names
 * none, the one whose rates preset carries (the row's own, or an override);
 * "flash" when the preset is not one or carries no listed kernel's rates. */
const char *sc_val_row_attention(const sc_val_row *w, const char *preset);

/* Statistics of n errors (fractions); all 0 when n is 0. */
void sc_val_stats_of(const double *errors, int n, sc_val_stats *out);
/* Spearman's rank correlation of a[0..n) and b[0..n) (ties share their
 * mean rank; the Pearson correlation of the ranks); NAN for n < 2 or when
 * either side has one value only. */
double sc_val_spearman(const double *a, const double *b, int n);

/* 1 when st meets the error targets above (the Spearman target is judged
 * per model by the caller). */
int sc_val_targets_met(const sc_val_stats *st);

#endif
