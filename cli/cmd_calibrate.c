/* cmd_calibrate.c - `stagecraft calibrate` and `stagecraft compare`. */
#include "calib_points.h"
#include "calibrate.h"
#include "cli.h"
#include "compare.h"
#include "json.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void calibrate_help(void)
{
    printf("usage: stagecraft calibrate --cluster C FILE... -o calibrated.json [--date D] "
           "[--json]\n"
           "Fits cluster C's efficiency parameters to measurements: FILEs are bench results\n"
           "(stagecraft bench -o) and measured timelines (stagecraft exec -o, whose plan must\n"
           "still open). Compute: eff_max, f_half, the per-op overhead and (with measured\n"
           "plans) the HBM efficiency, by GSL nonlinear least squares; links: alpha and beta\n"
           "per link class (and per collective, reported) by GSL weighted linear least\n"
           "squares. Writes C with the fitted values, their standard errors, R², MAPE and\n"
           "provenance. --date fixes the recorded date (default: now, UTC).\n");
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option opts[] = {{"cluster", required_argument, NULL, 'c'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"date", required_argument, NULL, 'd'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *cluster = NULL, *out = NULL, *date = NULL;
    int json = 0, ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': cluster = optarg; break;
        case 'o': out = optarg; break;
        case 'd': date = optarg; break;
        case 'j': json = 1; break;
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
    sc_cluster base, res;
    if (sc_cluster_open(cluster, &base, &err))
        return cli_fail(&err);
    sc_calib_report rep;
    if (sc_calibrate(&base, (const char *const *)argv + optind, argc - optind, date, &res, &rep,
                     &err) ||
        sc_cluster_save(&res, out, &err))
        return cli_fail(&err);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "cluster", out);
        cJSON_AddNumberToObject(j, "files", rep.n_files);
        cJSON_AddNumberToObject(j, "gemm_points", rep.n_gemm);
        cJSON_AddNumberToObject(j, "op_points", rep.n_ops);
        cJSON_AddNumberToObject(j, "comm_points", rep.n_comm);
        cJSON_AddNumberToObject(j, "op_overhead_s", rep.overhead_s);
        cJSON_AddNumberToObject(j, "memory_bw", rep.memory_bw);
        cJSON_AddNumberToObject(j, "bwd_factor", rep.bwd_factor);
        cJSON *a = cJSON_AddArrayToObject(j, "fits");
        for (int i = 0; i < rep.n_fits; i++) {
            const sc_calib_fit *f = &rep.fits[i];
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
        if (rep.notes[0])
            cJSON_AddStringToObject(j, "notes", rep.notes);
        return cli_print_json(j);
    }
    printf("calibrated %s from %d file%s: %d gemm sizes, %d measured op groups, %d "
           "communication sizes\n\n",
           base.name, rep.n_files, rep.n_files == 1 ? "" : "s", rep.n_gemm, rep.n_ops, rep.n_comm);
    printf("%-22s %5s %24s %24s %7s %7s %8s\n", "fit", "n", "a ± se", "b ± se", "R²", "MAPE",
           "before");
    for (int i = 0; i < rep.n_fits; i++) {
        const sc_calib_fit *f = &rep.fits[i];
        char a[40], b[40], bf[16] = "";
        if (strstr(f->what, " host")) { /* seconds of the sender per byte sent */
            snprintf(a, sizeof a, "-");
            snprintf(b, sizeof b, "h %.3g ± %.2g s/B", f->b, f->se_b);
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
    if (rep.n_gemm + rep.n_ops > 0)
        printf("\nper-op overhead %.3g ± %.2g s; HBM efficiency %.3f%s\n", rep.overhead_s,
               rep.overhead_se, rep.memory_bw,
               rep.n_ops == 0 ? " (not fitted: no measured plans)"
               : rep.memory_bw >= 0.999 ? " (at its bound)" : "");
    if (rep.n_ops > 0)
        printf("backward factor %.3f ± %.2g (backward FLOPs' time relative to forward)\n",
               rep.bwd_factor, rep.bwd_factor_se);
    if (rep.notes[0])
        printf("note: %s\n", rep.notes);
    printf("wrote %s\n", out);
    return 0;
}

static void compare_help(void)
{
    printf("usage: stagecraft compare plan.json measured.json [--cluster C] [--json]\n"
           "Simulates the plan (on C, e.g. a calibrated cluster, with the plan's node count;\n"
           "default: the plan's own cluster) and sets the prediction beside the measurement:\n"
           "the step time, each op kind's mean duration, each rank's busy time, the errors in\n"
           "percent and their MAPE.\n");
}

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {{"cluster", required_argument, NULL, 'c'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *cluster = NULL;
    int json = 0, ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': cluster = optarg; break;
        case 'j': json = 1; break;
        case 'h': compare_help(); return 0;
        default:
            return cli_usage("compare", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return cli_usage("compare", "give a plan and a measured timeline");
    sc_error err = {0};
    sc_comparison *cmp;
    if (sc_compare(argv[optind], argv[optind + 1], cluster, &cmp, &err))
        return cli_fail(&err);
    int rc = 0;
    if (json) {
        rc = cli_print_json(sc_comparison_json(cmp));
    } else {
        char b[4][32];
        printf("%s: predicted on %s beside %s measured on %s\n\n", argv[optind], cmp->cluster,
               argv[optind + 1], cmp->device);
        printf("%-14s %14s %14s %9s\n", "", "predicted us", "measured us", "error");
        printf("%-14s %14s %14s %+8.1f%%", "step", cli_us(cmp->pred_step, b[0]),
               cli_us(cmp->meas_step, b[1]), 100 * cmp->step_err);
        if (cmp->interval > 0)
            printf("   (95%% interval ± %s us)", cli_us(cmp->interval, b[2]));
        printf("\n");
        for (int i = 0; i < cmp->n_kinds; i++)
            printf("%-14s %14s %14s %+8.1f%%   (%d ops)\n", cmp->kinds[i].name,
                   cli_us(cmp->kinds[i].pred, b[0]), cli_us(cmp->kinds[i].meas, b[1]),
                   100 * cmp->kinds[i].err, cmp->kinds[i].n);
        printf("MAPE over op kinds %.1f%%\n\n%-14s %14s %14s %9s\n", 100 * cmp->kind_mape,
               "rank busy", "predicted us", "measured us", "error");
        for (int r = 0; r < cmp->n_ranks; r++)
            printf("rank %-9d %14s %14s %+8.1f%%\n", r, cli_us(cmp->rank_pred[r], b[0]),
                   cli_us(cmp->rank_meas[r], b[1]), 100 * cmp->rank_err[r]);
        printf("MAPE over ranks %.1f%%\n", 100 * cmp->rank_mape);
    }
    sc_comparison_free(cmp);
    return rc;
}
