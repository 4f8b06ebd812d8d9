/* cmd_calibrate.c - `stagecraft calibrate` and `stagecraft compare`. */
#include "calib_points.h"
#include "calibrate.h"
#include "cli.h"
#include "cli_outputs.h"
#include "compare.h"
#include "json.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void calibrate_help(void)
{
    printf("usage: stagecraft calibrate --cluster C FILE... -o calibrated.json [--date D]\n"
           "                           [--force] [--size-factors] [--kernels] [--json]\n"
           "Fits cluster C's efficiency parameters to measurements: FILEs are bench results\n"
           "(stagecraft bench -o) and measured timelines (stagecraft exec -o, whose plan must\n"
           "still open). Compute: eff_max, f_half, the per-op overhead and (with measured\n"
           "plans) the HBM efficiency, by GSL nonlinear least squares; links: alpha and beta\n"
           "per link class (and per collective, reported) by GSL weighted linear least\n"
           "squares; bench files run with --cold apart, as the link's cold line (what\n"
           "data-parallel collectives run at); from measured timelines whose compute ran\n"
           "beside data-parallel collectives, the overlap slowdown (how much longer it\n"
           "ran there than alone). Writes C with the fitted values, their standard errors,\n"
           "R², MAPE and provenance. --date fixes the recorded date (default: now, UTC).\n"
           "Where a link bench's time steps with size, the line is fitted over the regime\n"
           "the measured plans' messages fall in; --size-factors keeps the other sizes as\n"
           "measured (efficiency.*.size_factors), for transports whose steps hold inside a\n"
           "training step as in the bench (off by default: a CPU's cache step does not).\n"
           "--kernels fits the kernels exec --kernels timed alone (a GPU preset's kernel\n"
           "model): the GEMMs' sustained rate, the time per kernel and the HBM efficiency,\n"
           "the steps then setting the GEMMs' level (off by default: on one H200 it was no\n"
           "better on held-out steps than the steps' own fit, and worse on its own).\n\n"
           "Quality gates: every fit needs %d distinct points per parameter, R² >= %.2f, no\n"
           "parameter at a limit of its fit and a MAPE <= %.0f%% (links %.0f%%, host fits\n"
           "%.0f%%); every\n"
           "measured timeline a step spread <= %.0f%%, settled steps, and ops inside the\n"
           "step, of non-negative length, in the plan's range and in its lowered order;\n"
           "the calibrated cluster must simulate each measured plan's step within %.0f%%.\n"
           "A failed gate writes nothing and exits 4, naming the file, the fit, the gate,\n"
           "the figure and what to measure. --force writes anyway and records every failed\n"
           "gate in the cluster (efficiency.fits.gates_failed); sim, plan and whatif then\n"
           "warn whenever they use it.\n",
           SC_CALIB_POINTS_PER_PARAM, SC_CALIB_R2_FLOOR, 100 * SC_CALIB_MAPE_CEILING,
           100 * SC_CALIB_LINK_MAPE_CEILING, 100 * SC_CALIB_HOST_MAPE_CEILING, 100 * SC_CALIB_SPREAD_CEILING,
           100 * SC_CALIB_REPLAY_CEILING);
}

static cJSON *report_json(const sc_calib_report *rep, const char *out, int written)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "cluster", out);
    cJSON_AddBoolToObject(j, "written", written);
    cJSON_AddNumberToObject(j, "files", rep->n_files);
    cJSON_AddNumberToObject(j, "gemm_points", rep->n_gemm);
    cJSON_AddNumberToObject(j, "op_points", rep->n_ops);
    cJSON_AddNumberToObject(j, "comm_points", rep->n_comm);
    cJSON_AddNumberToObject(j, "op_overhead_s", rep->overhead_s);
    cJSON_AddNumberToObject(j, "memory_bw", rep->memory_bw);
    cJSON_AddNumberToObject(j, "bwd_factor", rep->bwd_factor);
    cJSON_AddBoolToObject(j, "bwd_factor_fitted", !!(rep->ops_fit & SC_CALIB_FIT_BWD));
    if (rep->ops_fit & SC_CALIB_FIT_KERNEL) { /* efficiency.gemm.kernel_s from the steps */
        cJSON_AddNumberToObject(j, "kernel_s", rep->kernel_s);
        cJSON_AddNumberToObject(j, "kernel_se", rep->kernel_se);
        cJSON_AddNumberToObject(j, "kernel_before_s", rep->kernel_before_s);
    }
    if (rep->n_kern > 0) { /* kernels timed alone (exec --kernels) */
        cJSON *k = cJSON_AddObjectToObject(j, "kernels_fit");
        cJSON_AddNumberToObject(k, "n", rep->n_kern);
        cJSON_AddNumberToObject(k, "sustained", rep->kern_sustained);
        cJSON_AddNumberToObject(k, "sustained_se", rep->kern_sustained_se);
        cJSON_AddNumberToObject(k, "kernel_s", rep->kern_kernel_s);
        cJSON_AddNumberToObject(k, "kernel_se", rep->kern_kernel_se);
        cJSON_AddNumberToObject(k, "memory_bw", rep->kern_memory_bw);
        cJSON_AddNumberToObject(k, "memory_bw_se", rep->kern_memory_bw_se);
        cJSON_AddNumberToObject(k, "r2", rep->kern_r2);
        cJSON_AddNumberToObject(k, "mape", rep->kern_mape);
        cJSON_AddNumberToObject(k, "mape_before", rep->kern_mape_before);
    }
    if (rep->n_flash > 0) { /* fused attention by shape (scripts/bench_flash.py) */
        cJSON *k = cJSON_AddObjectToObject(j, "flash_fit");
        cJSON_AddNumberToObject(k, "n", rep->n_flash);
        cJSON_AddStringToObject(k, "backend", rep->flash_backend);
        cJSON_AddNumberToObject(k, "flash_fwd", rep->flash_fwd);
        cJSON_AddNumberToObject(k, "flash_bwd", rep->flash_bwd);
        cJSON_AddNumberToObject(k, "flash_s0", rep->flash_s0);
        cJSON_AddNumberToObject(k, "flash_s0_full", rep->flash_s0_full);
        cJSON_AddNumberToObject(k, "flash_s0_bwd", rep->flash_s0_bwd);
        cJSON_AddNumberToObject(k, "flash_s0_full_bwd", rep->flash_s0_full_bwd);
        cJSON_AddNumberToObject(k, "flash_full", rep->flash_full);
        cJSON_AddNumberToObject(k, "flash_hd64", rep->flash_hd64);
        cJSON_AddNumberToObject(k, "mape", rep->flash_mape);
        cJSON_AddNumberToObject(k, "mape_before", rep->flash_mape_before);
    }
    cJSON_AddNumberToObject(j, "overlap_points", rep->n_overlap);
    if (rep->n_overlap > 0)
        cJSON_AddNumberToObject(j, "overlap_slowdown", rep->overlap_slowdown);
    cJSON *a = cJSON_AddArrayToObject(j, "fits");
    for (int i = 0; i < rep->n_fits; i++) {
        const sc_calib_fit *f = &rep->fits[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(a, o);
        cJSON_AddStringToObject(o, "fit", f->what);
        cJSON_AddNumberToObject(o, "n", f->n);
        cJSON_AddNumberToObject(o, "a", f->a);
        cJSON_AddNumberToObject(o, "a_se", f->se_a);
        cJSON_AddNumberToObject(o, "b", f->b);
        cJSON_AddNumberToObject(o, "b_se", f->se_b);
        cJSON_AddNumberToObject(o, "r2", f->r2);
        cJSON_AddNumberToObject(o, "mape", f->mape);
        cJSON_AddNumberToObject(o, "rel_sd", f->rel_sd);
        if (f->mape_before >= 0)
            cJSON_AddNumberToObject(o, "mape_before", f->mape_before);
    }
    cJSON *g = cJSON_AddArrayToObject(j, "gates");
    for (int i = 0; i < rep->n_gates; i++) {
        const sc_calib_gate *q = &rep->gates[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(g, o);
        cJSON_AddStringToObject(o, "what", q->what);
        cJSON_AddStringToObject(o, "files", q->files);
        cJSON_AddStringToObject(o, "gate", q->gate);
        cJSON_AddNumberToObject(o, "value", q->value);
        cJSON_AddNumberToObject(o, "limit", q->limit);
        cJSON_AddStringToObject(o, "figure", q->figure);
        cJSON_AddBoolToObject(o, "failed", q->failed);
        if (q->failed)
            cJSON_AddStringToObject(o, "fix", q->fix);
    }
    cJSON_AddNumberToObject(j, "gates_failed", rep->n_failed);
    if (rep->notes[0])
        cJSON_AddStringToObject(j, "notes", rep->notes);
    return j;
}

static void report_text(const sc_calib_report *rep, const sc_cluster *base)
{
    printf("calibrated %s from %d file%s: %d gemm sizes, %d measured op groups, %d "
           "communication sizes\n\n",
           base->name, rep->n_files, rep->n_files == 1 ? "" : "s", rep->n_gemm, rep->n_ops,
           rep->n_comm);
    printf("%-22s %5s %24s %24s %7s %7s %8s\n", "fit", "n", "a ± se", "b ± se", "R²", "MAPE",
           "before");
    for (int i = 0; i < rep->n_fits; i++) {
        const sc_calib_fit *f = &rep->fits[i];
        char a[40], b[40], bf[16] = "";
        if (strstr(f->what, " host")) { /* seconds of the sender per byte sent */
            snprintf(a, sizeof a, "-");
            snprintf(b, sizeof b, "h %.3g ± %.2g s/B", f->b, f->se_b);
        } else if (!strncmp(f->what, "gemm model", 10)) { /* efficiency.gemm */
            snprintf(a, sizeof a, "eff_max %.3f ± %.3f", f->a, f->se_a);
            snprintf(b, sizeof b, "kernel %.3g ± %.2g s", f->b, f->se_b);
        } else if (!strcmp(f->what, "overlap slowdown")) { /* efficiency.overlap_slowdown */
            snprintf(a, sizeof a, "k %.3f ± %.3f", f->a, f->se_a);
            snprintf(b, sizeof b, "-");
        } else if (!strncmp(f->what, "compute", 7)) {
            snprintf(a, sizeof a, "eff_max %.3f ± %.3f", f->a, f->se_a);
            snprintf(b, sizeof b, "f_half %.3g ± %.2g", f->b, f->se_b);
        } else {
            snprintf(a, sizeof a, "α %.3g ± %.2g s", f->a, f->se_a);
            snprintf(b, sizeof b, "β %.3g ± %.2g B/s", f->b, f->se_b);
        }
        if (f->mape_before >= 0)
            snprintf(bf, sizeof bf, "%.1f%%", 100 * f->mape_before);
        char r2[16];
        if (isnan(f->r2))
            snprintf(r2, sizeof r2, "-");
        else
            snprintf(r2, sizeof r2, "%.4f", f->r2);
        printf("%-22s %5d %24s %24s %7s %6.1f%% %8s\n", f->what, f->n, a, b, r2, 100 * f->mape,
               bf);
    }
    if (rep->ops_fit & SC_CALIB_FIT_KERNEL) /* kernel-level plans */
        printf("\ntime per kernel %.3g ± %.2g s (efficiency.gemm.kernel_s, from the measured "
               "steps; was %.3g s); HBM efficiency %.3f\n",
               rep->kernel_s, rep->kernel_se, rep->kernel_before_s, rep->memory_bw);
    if (rep->n_kern > 0)
        printf("\nkernels timed alone (%d, exec --kernels): sustained %.3f ± %.2g (the GEMMs' "
               "rate against the model's rule), time per kernel %.3g ± %.2g s, HBM efficiency "
               "%.3f ± %.2g; R² %.4f, MAPE %.1f%% (before %.1f%%)\n",
               rep->n_kern, rep->kern_sustained, rep->kern_sustained_se, rep->kern_kernel_s,
               rep->kern_kernel_se, rep->kern_memory_bw, rep->kern_memory_bw_se, rep->kern_r2,
               100 * rep->kern_mape, 100 * rep->kern_mape_before);
    if (rep->n_flash > 0)
        printf("\nfused attention (%d shapes, backend %s): forward %.3f and backward %.3f of "
               "peak on long sequences, over s keys at s / (s + %.0f) and s / (s + %.0f) of "
               "those (causal), %.3f x s / (s + %.0f) and s / (s + %.0f) without the mask, x "
               "%.3f at head size 64; MAPE %.1f%% over every point (before %.1f%%)\n",
               rep->n_flash, rep->flash_backend, rep->flash_fwd, rep->flash_bwd, rep->flash_s0,
               rep->flash_s0_bwd, rep->flash_full, rep->flash_s0_full, rep->flash_s0_full_bwd,
               rep->flash_hd64, 100 * rep->flash_mape, 100 * rep->flash_mape_before);
    if (rep->ops_fit & SC_CALIB_FIT_OVERHEAD ||
        (rep->n_gemm + rep->n_ops > 0 && !rep->ops_fit && !rep->n_kern))
        printf("\nper-op overhead %.3g ± %.2g s; HBM efficiency %.3f%s\n", rep->overhead_s,
               rep->overhead_se, rep->memory_bw,
               rep->n_ops == 0 ? " (not fitted: no measured plans)" : "");
    if (rep->ops_fit & SC_CALIB_FIT_BWD)
        printf("backward factor %.3f ± %.2g (backward FLOPs' time relative to forward)\n",
               rep->bwd_factor, rep->bwd_factor_se);
    if (rep->n_overlap > 0)
        printf("overlap slowdown %.3f ± %.2g (compute beside data-parallel collectives runs "
               "this much longer; %d op groups)\n",
               rep->overlap_slowdown, rep->overlap_se, rep->n_overlap);
    if (rep->notes[0])
        printf("note: %s\n", rep->notes);
    for (int i = 0; i < rep->n_gates; i++) /* the measured plans' own steps, replayed */
        if (!strcmp(rep->gates[i].gate, "replay"))
            printf("replay %s: %s\n", rep->gates[i].files, rep->gates[i].figure);
    printf("quality gates: %d judged, %d failed\n", rep->n_gates, rep->n_failed);
}

/* Every failed gate, one line each on stderr. */
static void failed_gates(const sc_calib_report *rep, const char *verdict)
{
    for (int i = 0; i < rep->n_gates; i++) {
        const sc_calib_gate *g = &rep->gates[i];
        if (g->failed)
            fprintf(stderr, "stagecraft calibrate: %s: %s%s%s: gate %s: %s: %s\n", verdict,
                    g->files, g->files[0] ? ": " : "", g->what, g->gate, g->figure, g->fix);
    }
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option opts[] = {{"cluster", required_argument, NULL, 'c'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"date", required_argument, NULL, 'd'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"size-factors", no_argument, NULL, 's'},
                                         {"kernels", no_argument, NULL, 'k'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *cluster = NULL, *out = NULL, *date = NULL;
    int json = 0, force = 0, factors = 0, kernels = 0, ch;
    if (cli_exact_longopts("calibrate", argc, argv, "ho:", opts))
        return 2;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': cluster = optarg; break;
        case 'o': out = optarg; break;
        case 'd': date = optarg; break;
        case 'j': json = 1; break;
        case 'f': force = 1; break;
        case 's': factors = 1; break;
        case 'k': kernels = 1; break;
        case 'h': calibrate_help(); return 0;
        default:
            return cli_usage("calibrate", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (!cluster || !out)
        return cli_usage("calibrate", "--cluster and -o are required");
    if (optind >= argc)
        return cli_usage("calibrate", "no input files (bench.json, measured.json)");
    sc_error err = {0};
    /* the output must be creatable before any fitting */
    if (cli_output_take("calibrate", &out, json, &err))
        return cli_fail(&err);
    sc_cluster base, res;
    if (sc_cluster_open(cluster, &base, &err))
        return cli_fail(&err);
    static sc_calib_report rep;
    sc_status st = sc_calibrate(&base, (const char *const *)argv + optind, argc - optind, date,
                                (force ? SC_CALIB_FORCE : 0) |
                                    (factors ? SC_CALIB_SIZE_FACTORS : 0) |
                                    (kernels ? SC_CALIB_KERNELS : 0),
                                &res, &rep, &err);
    if (st == SC_EGATE) {
        /* refused: the figures, every failed gate, then the refusal */
        if (json)
            cli_print_json(report_json(&rep, out, 0));
        else if (rep.n_fits > 0)
            report_text(&rep, &base);
        fflush(stdout);
        failed_gates(&rep, "refused");
        return cli_fail(&err);
    }
    if (st || sc_cluster_save(&res, out, &err))
        return cli_fail(&err);
    if (rep.n_failed > 0)
        failed_gates(&rep, "written anyway (--force)");
    if (json)
        return cli_print_json(report_json(&rep, out, 1));
    report_text(&rep, &base);
    if (rep.n_failed > 0)
        printf("written past %d failed gate%s (--force): efficiency.fits.gates_failed records "
               "them, and sim, plan and whatif will warn\n",
               rep.n_failed, rep.n_failed == 1 ? "" : "s");
    printf("wrote %s\n", cli_out_name(out));
    return 0;
}

/* The kernels timed alone (exec --kernels): the totals per op, then every
 * kernel, the ones taking the most of the measured time first. */
static int by_measured_total(const void *a, const void *b)
{
    const sc_kernel_cmp *x = a, *y = b;
    double u = x->k.time_s * x->k.calls, v = y->k.time_s * y->k.calls;
    return u < v ? 1 : u > v ? -1 : 0;
}

static void kernel_table(const sc_comparison *cmp)
{
    char b[2][32];
    printf("\nkernels of rank %d, each timed alone (one microbatch of each chunk; us summed over "
           "their calls)\n", cmp->kernels_rank);
    static const char *const tot[3] = {"GEMMs", "memory passes", "all kernels"};
    for (int g = 0; g < 3; g++)
        if (cmp->kern_meas[g] > 0)
            printf("%-14s %14s %14s %+8.1f%%\n", tot[g], cli_us(cmp->kern_pred[g], b[0]),
                   cli_us(cmp->kern_meas[g], b[1]),
                   100 * (cmp->kern_pred[g] / cmp->kern_meas[g] - 1));
    sc_kernel_cmp *k = sc_malloc(sizeof *k * (size_t)cmp->n_kernels);
    if (!k)
        return;
    memcpy(k, cmp->kernels, sizeof *k * (size_t)cmp->n_kernels);
    qsort(k, (size_t)cmp->n_kernels, sizeof *k, by_measured_total);
    printf("\n%-16s %-4s %-26s %6s %14s %14s %9s\n", "kernel", "pass", "shape (as run)", "calls",
           "predicted us", "measured us", "error");
    for (int i = 0; i < cmp->n_kernels; i++) {
        char shape[96];
        const sc_tl_kernel *t = &k[i].k;
        if (!strcmp(t->op, "mem"))
            snprintf(shape, sizeof shape, "pass of %.4g MB", t->bytes / 1e6);
        else
            snprintf(shape, sizeof shape, t->splits > 1 ? "%s %gx%gx%gx%g/%d" : "%s %gx%gx%gx%g",
                     t->op, t->batch, t->m, t->n, t->k, t->splits); /* /N: in N chunks of rows */
        printf("%-16.16s %-4s %-26.26s %6d %14s %14s %+8.1f%%\n", t->name, t->pass, shape,
               t->calls, cli_us(k[i].pred * t->calls, b[0]), cli_us(t->time_s * t->calls, b[1]),
               100 * k[i].err);
    }
    printf("MAPE over kernels %.1f%%\n", 100 * cmp->kernel_mape);
    sc_free(k);
}

static void compare_help(void)
{
    printf("usage: stagecraft compare plan.json measured.json [--cluster C] [--json]\n"
           "       (--plan plan.json, as sim and bench take it, then measured.json: the same)\n"
           "Simulates the plan (on C, e.g. a calibrated cluster, with the plan's node count;\n"
           "default: the plan's own cluster) and sets the prediction beside the measurement:\n"
           "the step time, each op kind's mean duration, each rank's busy time, the errors in\n"
           "percent and their MAPE. With --cluster the plan's own cluster is neither opened\n"
           "nor checked against its digest, so a run whose preset has changed since replays\n"
           "on a cluster named on purpose; C needs the plan's GPUs per node.\n");
}

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {{"cluster", required_argument, NULL, 'c'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"plan", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *cluster = NULL, *plan = NULL;
    int json = 0, ch;
    if (cli_exact_longopts("compare", argc, argv, "h", opts))
        return 2;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': cluster = optarg; break;
        case 'j': json = 1; break;
        case 'p': plan = optarg; break;
        case 'h': compare_help(); return 0;
        default:
            return cli_usage("compare", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != (plan ? 1 : 2))
        return cli_usage("compare", plan ? "give the measured timeline after --plan's plan"
                                         : "give a plan and a measured timeline");
    if (!plan)
        plan = argv[optind++];
    const char *measured = argv[optind];
    sc_error err = {0};
    sc_comparison *cmp;
    if (sc_compare(plan, measured, cluster, &cmp, &err)) {
        /* the two files the other way round: say which comes first */
        if (strstr(err.msg, "format: \"stagecraft.timeline/1\" is not \"stagecraft.plan/1\""))
            snprintf(err.msg + strlen(err.msg), sizeof err.msg - strlen(err.msg), "%s",
                     " (the plan comes first: stagecraft compare PLAN MEASURED)");
        return cli_fail(&err);
    }
    int rc = 0;
    if (json) {
        rc = cli_print_json(sc_comparison_json(cmp));
    } else {
        char b[4][32];
        printf("%s: predicted on %s beside %s measured on %s\n\n", plan, cmp->cluster,
               measured, cmp->device);
        /* a GPU on zeros may hold a clock training would not (exec.h) */
        if (strcmp(cmp->operands, "random") && strstr(cmp->device, "NVIDIA"))
            printf("note: the measured GEMMs multiplied %s: the GPU may have held a clock "
                   "it would not in training (exec --zero-operands)\n\n",
                   cmp->operands[0] ? cmp->operands : "zeros (an exec before operands were "
                                                      "recorded)");
        printf("%-14s %14s %14s %9s\n", "", "predicted us", "measured us", "error");
        printf("%-14s %14s %14s %+8.1f%%", "step", cli_us(cmp->pred_step, b[0]),
               cli_us(cmp->meas_step, b[1]), 100 * cmp->step_err);
        if (cmp->interval > 0 || cmp->meas_spread >= 0) {
            printf("   (95%% interval");
            if (cmp->interval > 0)
                printf(" ± %s us predicted", cli_us(cmp->interval, b[2]));
            if (cmp->meas_spread >= 0)
                printf("%s ± %s us measured: %d steps spread %.1f%%",
                       cmp->interval > 0 ? "," : "", cli_us(cmp->meas_interval, b[3]),
                       cmp->meas_steps, 100 * cmp->meas_spread);
            printf(")");
        }
        printf("\n");
        int waits = 0;
        for (int i = 0; i < cmp->n_kinds; i++) {
            printf("%-14s %14s %14s %+8.1f%%   (%d ops%s)\n", cmp->kinds[i].name,
                   cli_us(cmp->kinds[i].pred, b[0]), cli_us(cmp->kinds[i].meas, b[1]),
                   100 * cmp->kinds[i].err, cmp->kinds[i].n,
                   cmp->kinds[i].compute ? "" : ", waits included");
            waits += !cmp->kinds[i].compute;
        }
        printf("MAPE over op kinds %.1f%%", 100 * cmp->kind_mape);
        if (waits && cmp->compute_mape >= 0)
            printf("; over the compute kinds %.1f%% (sends and collectives are measured with "
                   "their waits)", 100 * cmp->compute_mape);
        printf("\n\n%-14s %14s %14s %9s\n", "rank busy", "predicted us", "measured us",
               "error");
        for (int r = 0; r < cmp->n_ranks; r++)
            printf("rank %-9d %14s %14s %+8.1f%%\n", r, cli_us(cmp->rank_pred[r], b[0]),
                   cli_us(cmp->rank_meas[r], b[1]), 100 * cmp->rank_err[r]);
        printf("MAPE over ranks %.1f%%\n", 100 * cmp->rank_mape);
        if (cmp->n_kernels > 0)
            kernel_table(cmp);
    }
    sc_comparison_free(cmp);
    return rc;
}
