/* cmd_validate.c - `stagecraft validate`: run the validation suites
 * (published end-to-end measurements, the JSON files in validation/) through the
 * simulator and report predicted against measured, per row, per suite, per
 * preset and overall (planner/validate.h). */
#include "cli.h"
#include "json.h"
#include "validate.h"
#include "overhead.h"
#include "validate_by.h"

#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SUITES 256

static void usage(FILE *f)
{
    fprintf(f,
            "usage: stagecraft validate [--suite NAME|FILE[,...]] [--dir DIR]\n"
            "                           [--cluster-override PRESET|FILE] [--no-overhead]\n"
            "                           [--fit-overhead] [--breakdown] [--by KEY[,KEY...]]\n"
            "                           [--json] [--check]\n\n"
            "Runs every row of the validation suites (published end-to-end training runs,\n"
            "each citing its source) through the simulator and prints the predicted and the\n"
            "measured iteration time and the signed error (predicted - measured) / measured,\n"
            "then the MAPE, the mean signed error and the largest |error| per suite, per\n"
            "cluster preset and overall. Rows marked approximate (a layout detail assumed,\n"
            "a cluster that is only close to the preset) carry a '~'. Every published run\n"
            "fitted in its GPUs: a row whose predicted peak memory does not carries '>mem'\n"
            "(the memory model, or the layout the row assumes, is wrong there), and a line\n"
            "after the table says how many, or the largest share of a GPU.\n\n"
            "  --suite NAME|FILE   only these suites: a name (DIR/NAME.json) or a file;\n"
            "                      several, comma-separated (default: every *.json in DIR)\n"
            "  --dir DIR           where the suites are (default: validation/ in the\n"
            "                      working directory, else beside the stagecraft binary)\n"
            "  --cluster-override PRESET|FILE\n"
            "                      simulate every row on this cluster instead of its own\n"
            "                      preset, with as many nodes as its ranks need\n"
            "  --no-overhead       the kernels alone: no row gets its framework's measured\n"
            "                      overhead (layout.framework; docs/accuracy.md)\n"
            "  --fit-overhead      refit the framework overheads on the fit half of the\n"
            "                      rows (each framework's even rows) and print them beside\n"
            "                      the table's (cost_models/overhead.c), then exit\n"
            "  --breakdown         after the table, where each row's predicted step goes\n"
            "                      (shares of compute, recompute, optimizer, exposed\n"
            "                      communication, bubble) and its busiest link's busy share\n"
            "  --by KEY[,KEY...]   after the table, the errors grouped by what the rows\n"
            "                      are, a line per distinct value (or combination): rows,\n"
            "                      MAPE, mean signed, lowest and highest error. Keys:\n"
            "                      suite, cluster, model, seq, gpus, dp, tp, pp, cp, mbs,\n"
            "                      recompute, sp, attention, framework (at most 4)\n"
            "  --json              print the results as JSON (errors as fractions; each row\n"
            "                      with its breakdown and busiest link)\n"
            "  --check             exit 1 when the targets are missed: MAPE <= 5%%, every\n"
            "                      row within 10%%, mean signed error within +-2%%\n"
            "  -h, --help          this text\n\n"
            "A row the simulator cannot run as published (tp not dividing the heads, a\n"
            "batch not divisible by dp x mbs, ...) is refused in one line naming the file\n"
            "and the JSON path, exit 2. The file format is in docs/formats.md.\n\n"
            "Rows of a framework other than Megatron-LM (layout.framework deepspeed or\n"
            "torch) include that framework's overhead, fitted on half of its rows: the\n"
            "report gives the fit half and the held-out rest separately.\n");
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* validation/ in the working directory, else ../validation beside the
 * binary (bin/stagecraft in the repository). */
static const char *default_dir(char *buf, size_t cap)
{
    if (is_dir("validation"))
        return "validation";
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        snprintf(buf, cap, "%s/../validation", dirname(exe));
        if (is_dir(buf))
            return buf;
    }
    return "validation";
}

/* One group's statistics as a JSON object. */
static cJSON *stats_json(cJSON *parent, const char *key, const sc_val_stats *st, double run_s,
                         int *oom)
{
    cJSON *o = sc_jadd_obj(parent, key, oom);
    sc_jadd_num(o, "rows", st->n, oom);
    sc_jadd_num(o, "mape", st->mape, oom);
    sc_jadd_num(o, "mean_signed_error", st->mean_signed, oom);
    sc_jadd_num(o, "max_abs_error", st->max_abs, oom);
    if (run_s >= 0)
        sc_jadd_num(o, "run_time_s", run_s, oom);
    return o;
}

static void stats_line(const char *label, const sc_val_stats *st, double run_s)
{
    printf("%-32s %5d %7.1f%% %12.1f%% %12.1f%%", label, st->n, 100 * st->mape,
           100 * st->mean_signed, 100 * st->max_abs);
    if (run_s >= 0)
        printf(" %9.2f s", run_s);
    printf("\n");
}

/* Marks the rows the overhead table was fitted on (cost_models/overhead.c:
 * `validate --fit-overhead` over every suite of the shipped folder, each
 * framework's even rows), numbered over those suites, not over the ones
 * loaded, which may be a subset (--suite) or others (--dir): numbering them
 * would mark rows the table never saw. A row is matched by its suite's name
 * and its id; where the shipped suites cannot all be read, none is marked. */
static void mark_table_rows(sc_val_suite *const *s, int n, int all_shipped)
{
    if (all_shipped) {
        sc_val_mark_halves(s, n);
        return;
    }
    char buf[PATH_MAX + 32];
    char **paths = NULL;
    int np = 0, nref = 0, ok = 0;
    sc_error err = {0};
    sc_val_suite *ref[MAX_SUITES] = {0};
    if (!sc_val_list(default_dir(buf, sizeof buf), &paths, &np, &err) && np <= MAX_SUITES) {
        ok = 1;
        for (int i = 0; i < np && ok; i++, nref++)
            ok = !sc_val_load(paths[i], &ref[i], &err);
    }
    if (ok)
        sc_val_mark_halves(ref, nref);
    sc_val_copy_halves(s, n, ref, ok ? nref : 0);
    for (int i = 0; i < nref; i++)
        sc_val_free(ref[i]);
    sc_val_paths_free(paths, np);
}

/* Whether row w is one its framework's overhead was fitted on (the entry
 * has fit rows and w is in the fit half); none with --no-overhead. */
/* The planner's estimate against the simulated step, (estimate - predicted) /
 * predicted; -1 (off by all of it) where the estimate failed. */
static double est_rel(const sc_val_result *r)
{
    return r->estimate_s > 0 && r->predicted_s > 0 ? r->estimate_s / r->predicted_s - 1 : -1;
}

static int is_fit_row(const sc_val_row *w, int no_overhead)
{
    const sc_overhead *o = no_overhead ? NULL : sc_overhead_find(w->framework);
    return o && o->fit_rows > 0 && w->fit_half;
}

/* --fit-overhead: each framework's fit, beside the table's value. */
static int fit_overheads(sc_val_suite *const *suites, int n, int json)
{
    int no;
    const sc_overhead *ovs = sc_overheads(&no);
    cJSON *j = json ? cJSON_CreateObject() : NULL;
    cJSON *arr = j ? cJSON_AddArrayToObject(j, "overheads") : NULL;
    if (json && !arr) {
        cJSON_Delete(j);
        fprintf(stderr, "stagecraft: out of memory\n");
        return 1;
    }
    if (!json)
        printf("%-10s %9s %12s %12s\n", "framework", "fit rows", "fitted", "table");
    for (int k = 0; k < no; k++) {
        double frac = 0;
        int rows = 0;
        sc_error err = {0};
        /* megatron's rows check the kernel model itself: never fitted */
        if (ovs[k].fit_rows > 0 &&
            sc_val_fit_overhead(suites, n, ovs[k].framework, &frac, &rows, &err)) {
            cJSON_Delete(j);
            return cli_fail(&err);
        }
        if (json) {
            int oom = 0;
            cJSON *o = sc_jpush_obj(arr, &oom);
            sc_jadd_str(o, "framework", ovs[k].framework, &oom);
            sc_jadd_num(o, "fit_rows", rows, &oom);
            sc_jadd_num(o, "fitted", frac, &oom);
            sc_jadd_num(o, "table", ovs[k].compute, &oom);
        } else {
            printf("%-10s %9d %12.4f %12.4f\n", ovs[k].framework, rows, frac, ovs[k].compute);
        }
    }
    if (!json) {
        printf("\n(fitted: the overhead at which the fit rows' mean signed error is 0; a\n"
               "framework without rows, or whose kernels alone are slower, gets 0; megatron\n"
               "is never fitted: its rows check the kernel model itself)\n");
        return 0;
    }
    return cli_print_json(j);
}

/* --breakdown: per row, the shares of its predicted step (sim's breakdown, an
 * average rank) and its busiest link's busy share, beside its error. */
static void print_breakdown(sc_val_suite *const *suites, int n, const sc_val_result *res)
{
    printf("\nwhere each predicted step goes (shares of it, an average rank; comm is the "
           "exposed tp + pp + dp + cp)\n");
    printf("%-46s %8s %8s %9s %9s %7s %7s %8s  %s\n", "suite/row", "error", "compute",
           "recompute", "optimizer", "comm", "bubble", "busiest", "link");
    for (int i = 0, k = 0; i < n; i++)
        for (int r = 0; r < suites[i]->n; r++, k++) {
            const sc_step_breakdown *b = &res[k].breakdown;
            double t = res[k].predicted_s > 0 ? res[k].predicted_s : 1;
            char name[160];
            snprintf(name, sizeof name, "%s/%s", suites[i]->name, suites[i]->rows[r].id);
            printf("%-46.46s %+7.1f%% %7.1f%% %8.1f%% %8.1f%% %6.1f%% %6.1f%% %7.1f%%  %s\n",
                   name, 100 * res[k].error, 100 * b->compute / t, 100 * b->recompute / t,
                   100 * b->optimizer / t, 100 * (b->tp + b->pp + b->dp + b->cp) / t,
                   100 * b->bubble / t, 100 * res[k].busiest_busy,
                   res[k].busiest_link[0] ? res[k].busiest_link : "-");
        }
}

/* An unknown --suite: its path, and the suite in dir it most likely meant. */
static int no_suite(const char *dir, const char *t, const char *path, int is_file)
{
    char **all = NULL, hint[160] = "";
    int n = 0;
    sc_error e = {0};
    const char *names[64];
    char stems[64][128];
    if (!is_file && !sc_val_list(dir, &all, &n, &e)) {
        int k = 0;
        for (int i = 0; i < n && k < 64; i++) {
            const char *b = strrchr(all[i], '/') ? strrchr(all[i], '/') + 1 : all[i];
            size_t l = strlen(b);
            snprintf(stems[k], sizeof stems[k], "%.*s", (int)(l > 5 ? l - 5 : l), b);
            names[k] = stems[k];
            k++;
        }
        sc_did_you_mean(t, names, k, "", hint, sizeof hint);
        sc_val_paths_free(all, n);
    }
    return cli_usage("validate", "--suite: no suite '%s' (%s)%s", t, path, hint);
}

int cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {{"suite", required_argument, NULL, 's'},
                                         {"dir", required_argument, NULL, 'd'},
                                         {"cluster-override", required_argument, NULL, 'c'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"check", no_argument, NULL, 'k'},
                                         {"no-overhead", no_argument, NULL, 'n'},
                                         {"fit-overhead", no_argument, NULL, 'f'},
                                         {"breakdown", no_argument, NULL, 'b'},
                                         {"by", required_argument, NULL, 'y'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *suite_arg = NULL, *dir = NULL, *override = NULL;
    int json = 0, check = 0, no_overhead = 0, fit = 0, breakdown = 0, ch;
    vby by = {0};
    if (cli_exact_longopts("validate", argc, argv, "h", opts))
        return 2;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            suite_arg = optarg;
            break;
        case 'd':
            dir = optarg;
            break;
        case 'c':
            override = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'k':
            check = 1;
            break;
        case 'n':
            no_overhead = 1;
            break;
        case 'f':
            fit = 1;
            break;
        case 'b':
            breakdown = 1;
            break;
        case 'y': {
            char msg[256];
            if (vby_parse(optarg, &by, msg, sizeof msg))
                return cli_usage("validate", "%s", msg);
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage("validate", "unknown option or missing value '%s'",
                             argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage("validate", "unexpected argument '%s'", argv[optind]);
    char dirbuf[PATH_MAX + 32];
    const char *shipped = NULL; /* the default folder, when no --dir chose another */
    if (!dir)
        dir = shipped = default_dir(dirbuf, sizeof dirbuf);

    /* the suite files */
    sc_error err = {0};
    char **paths = NULL;
    int npaths = 0;
    if (suite_arg) {
        char *list = sc_strdup(suite_arg);
        if (!list || !(paths = sc_calloc(MAX_SUITES, sizeof *paths))) {
            sc_free(list);
            fprintf(stderr, "stagecraft: out of memory\n");
            return 1;
        }
        int rc = 0;
        for (char *save = NULL, *t = strtok_r(list, ",", &save); t && !rc;
             t = strtok_r(NULL, ",", &save)) {
            size_t l = strlen(t);
            int is_file = strchr(t, '/') || (l > 5 && !strcmp(t + l - 5, ".json"));
            size_t need = strlen(dir) + l + 8;
            if (npaths == MAX_SUITES)
                rc = cli_usage("validate", "--suite: more than %d suites", MAX_SUITES);
            else if (!(paths[npaths] = sc_malloc(need))) {
                fprintf(stderr, "stagecraft: out of memory\n");
                rc = 1;
            } else {
                if (is_file)
                    snprintf(paths[npaths], need, "%s", t);
                else
                    snprintf(paths[npaths], need, "%s/%s.json", dir, t);
                if (access(paths[npaths], R_OK))
                    rc = no_suite(dir, t, paths[npaths], is_file);
                npaths++;
            }
        }
        sc_free(list);
        if (!rc && !npaths)
            rc = cli_usage("validate", "--suite: no suite named");
        if (rc) {
            sc_val_paths_free(paths, npaths);
            return rc;
        }
    } else if (sc_val_list(dir, &paths, &npaths, &err)) {
        return cli_fail(&err);
    }
    if (npaths > MAX_SUITES) {
        sc_val_paths_free(paths, npaths);
        return cli_usage("validate", "more than %d suites in %s", MAX_SUITES, dir);
    }

    /* load every suite first: a bad row stops everything before anything runs */
    sc_val_suite *suites[MAX_SUITES] = {0};
    int rc = 0, total = 0;
    for (int i = 0; i < npaths && !rc; i++) {
        if (sc_val_load(paths[i], &suites[i], &err)) {
            rc = cli_fail(&err);
            break;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(suites[j]->name, suites[i]->name)) {
                fprintf(stderr, "stagecraft: %s: name: \"%s\" is also the name of %s\n",
                        paths[i], suites[i]->name, paths[j]);
                rc = 2;
            }
        total += suites[i]->n;
    }
    if (!rc && fit)
        sc_val_mark_halves(suites, npaths); /* the fit is over what was loaded */
    else if (!rc)
        mark_table_rows(suites, npaths, !suite_arg && dir == shipped);
    if (!rc && fit) {
        rc = fit_overheads(suites, npaths, json);
        for (int i = 0; i < npaths; i++)
            sc_val_free(suites[i]);
        sc_val_paths_free(paths, npaths);
        return rc;
    }
    sc_val_result *res = rc ? NULL : sc_calloc((size_t)total ? (size_t)total : 1, sizeof *res);
    double *errs = rc ? NULL : sc_calloc((size_t)total ? (size_t)total : 1, sizeof *errs);
    double *suite_s = rc ? NULL : sc_calloc((size_t)npaths, sizeof *suite_s);
    if (!rc && (!res || !errs || !suite_s)) {
        fprintf(stderr, "stagecraft: out of memory\n");
        rc = 1;
    }

    /* run */
    int progress = !rc && isatty(2);
    double t0 = now_s();
    for (int i = 0, k = 0; i < npaths && !rc; i++) {
        double ts = now_s();
        for (int r = 0; r < suites[i]->n && !rc; r++, k++) {
            if (progress)
                fprintf(stderr, "\rvalidate: %d/%d %s/%-40.40s", k + 1, total, suites[i]->name,
                        suites[i]->rows[r].id);
            sc_val_opts vo = {.cluster_override = override, .no_overhead = no_overhead};
            if (sc_val_run_row(suites[i], r, &vo, &res[k], &err))
                rc = cli_fail(&err);
            errs[k] = res[k].error;
        }
        suite_s[i] = now_s() - ts;
    }
    double run_s = now_s() - t0;
    if (progress)
        fprintf(stderr, "\r%*s\r", 80, "");

    sc_val_stats all = {0};
    int beyond = 0, met = 0;
    if (!rc) {
        sc_val_stats_of(errs, total, &all);
        for (int k = 0; k < total; k++)
            beyond += fabs(errs[k]) > SC_VAL_TARGET_MAX_ABS;
        met = sc_val_targets_met(&all);
    }

    /* the rows not marked approximate, and the rows per cluster simulated */
    double *sub = rc ? NULL : sc_calloc((size_t)total ? (size_t)total : 1, sizeof *sub);
    if (!rc && !sub) {
        fprintf(stderr, "stagecraft: out of memory\n");
        rc = 1;
    }
    sc_val_stats exact = {0}, fitst = {0}, held = {0};
    if (!rc) {
        int n = 0;
        for (int i = 0, k = 0; i < npaths; i++)
            for (int r = 0; r < suites[i]->n; r++, k++)
                if (!suites[i]->rows[r].approximate)
                    sub[n++] = errs[k];
        sc_val_stats_of(sub, n, &exact);
        /* the rows an overhead was fitted on, and the rest */
        for (int want = 1; want >= 0; want--) {
            n = 0;
            for (int i = 0, k = 0; i < npaths; i++)
                for (int r = 0; r < suites[i]->n; r++, k++)
                    if (is_fit_row(&suites[i]->rows[r], no_overhead) == want)
                        sub[n++] = errs[k];
            sc_val_stats_of(sub, n, want ? &fitst : &held);
        }
    }
    /* distinct clusters, in order of first appearance */
    const char *clusters[MAX_SUITES * 4];
    int ncl = 0;
    for (int k = 0; !rc && k < total; k++) {
        int seen = 0;
        for (int c = 0; c < ncl && !seen; c++)
            seen = !strcmp(clusters[c], res[k].cluster);
        if (!seen && ncl < (int)SC_ARRAY_LEN(clusters))
            clusters[ncl++] = res[k].cluster;
    }

    /* rank agreement: rows of one model on one cluster (several layouts) */
    const sc_val_row **rowp = rc ? NULL : sc_calloc((size_t)total ? (size_t)total : 1,
                                                   sizeof *rowp);
    int *grp = rc ? NULL : sc_calloc((size_t)total ? (size_t)total : 1, sizeof *grp);
    double *gp = rc ? NULL : sc_calloc((size_t)total ? (size_t)total : 1, sizeof *gp);
    double *gm = rc ? NULL : sc_calloc((size_t)total ? (size_t)total : 1, sizeof *gm);
    if (!rc && (!rowp || !grp || !gp || !gm)) {
        fprintf(stderr, "stagecraft: out of memory\n");
        rc = 1;
    }
    int ngrp = 0;
    double rho_min = NAN;
    for (int i = 0, k = 0; !rc && i < npaths; i++)
        for (int r = 0; r < suites[i]->n; r++, k++) {
            rowp[k] = &suites[i]->rows[r];
            grp[k] = -1;
            for (int q = 0; q < k && grp[k] < 0; q++)
                if (!strcmp(rowp[q]->model_desc, rowp[k]->model_desc) &&
                    !strcmp(res[q].cluster, res[k].cluster))
                    grp[k] = grp[q];
            if (grp[k] < 0)
                grp[k] = ngrp++;
        }
    /* rho of group g over its n rows (NAN below 2) */
#define GROUP_RHO(g, n, rho)                                                                  \
    do {                                                                                    \
        n = 0;                                                                              \
        for (int k_ = 0; k_ < total; k_++)                                                  \
            if (grp[k_] == (g)) {                                                           \
                gp[n] = res[k_].predicted_s;                                                \
                gm[n++] = res[k_].measured_s;                                               \
            }                                                                               \
        rho = sc_val_spearman(gp, gm, n);                                                   \
    } while (0)
    for (int g = 0; !rc && g < ngrp; g++) {
        int n;
        double rho;
        GROUP_RHO(g, n, rho);
        if (n >= 2 && !isnan(rho) && !(rho >= rho_min))
            rho_min = rho;
    }
    if (!rc && !isnan(rho_min) && rho_min < SC_VAL_TARGET_SPEARMAN)
        met = 0;

    /* memory: every published run ran, so a row the memory model says does not
     * fit points at the model or at the layout the row assumes */
    int no_fit = 0;
    double mem_max = -1;
    char mem_row[160] = "";
    for (int i = 0, k = 0; !rc && i < npaths; i++)
        for (int r = 0; r < suites[i]->n; r++, k++) {
            double f = res[k].gpu_mem_bytes > 0 ? res[k].peak_mem_bytes / res[k].gpu_mem_bytes
                                                : 0;
            no_fit += !res[k].fits;
            if (f > mem_max) {
                mem_max = f;
                snprintf(mem_row, sizeof mem_row, "%s/%s", suites[i]->name,
                         suites[i]->rows[r].id);
            }
        }
    if (mem_max < 0)
        mem_max = 0;

    /* the planner's analytical estimate against the simulator, row by row: how far
     * the search's ranking of these layouts is from what it then simulates */
    double est_mean = 0, est_max = 0;
    char est_row[160] = "";
    for (int i = 0, k = 0; !rc && i < npaths; i++)
        for (int r = 0; r < suites[i]->n; r++, k++) {
            double d = fabs(est_rel(&res[k]));
            est_mean += d / total;
            if (d > est_max || !est_row[0]) {
                est_max = d;
                snprintf(est_row, sizeof est_row, "%s/%s", suites[i]->name,
                         suites[i]->rows[r].id);
            }
        }

    if (!rc && json) {
        int oom = 0;
        cJSON *j = cJSON_CreateObject();
        oom = !j;
        cJSON *rows = sc_jadd_arr(j, "rows", &oom);
        for (int i = 0, k = 0; i < npaths && !oom; i++)
            for (int r = 0; r < suites[i]->n; r++, k++) {
                const sc_val_row *w = &suites[i]->rows[r];
                cJSON *o = sc_jpush_obj(rows, &oom);
                sc_jadd_str(o, "suite", suites[i]->name, &oom);
                sc_jadd_str(o, "id", w->id, &oom);
                sc_jadd_str(o, "source", w->source->citation, &oom);
                sc_jadd_str(o, "where", w->where, &oom);
                sc_jadd_bool(o, "approximate", w->approximate, &oom);
                sc_jadd_str(o, "model", w->model_desc, &oom);
                sc_jadd_str(o, "cluster", res[k].cluster, &oom);
                sc_jadd_num(o, "nodes", res[k].nodes, &oom);
                sc_jadd_num(o, "gpus", res[k].gpus, &oom);
                sc_jadd_num(o, "dp", w->dp, &oom);
                if (w->cp > 1)
                    sc_jadd_num(o, "cp", w->cp, &oom);
                sc_jadd_num(o, "tp", w->tp, &oom);
                sc_jadd_num(o, "pp", w->pp, &oom);
                sc_jadd_num(o, "v", w->v, &oom);
                sc_jadd_str(o, "schedule", w->schedule, &oom);
                sc_jadd_num(o, "zero", w->zero, &oom);
                sc_jadd_str(o, "recompute", sc_recompute_name(w->recompute), &oom);
                sc_jadd_bool(o, "sp", w->sp, &oom);
                if (w->fp8)
                    sc_jadd_bool(o, "fp8", 1, &oom);
                sc_jadd_str(o, "attention", sc_attn_name(w->attn), &oom);
                if (w->attn_kernel)
                    sc_jadd_str(o, "attention_kernel", w->attn_kernel, &oom);
                sc_jadd_num(o, "mbs", w->mbs, &oom);
                sc_jadd_num(o, "global_batch", (double)w->global_batch, &oom);
                sc_jadd_num(o, "predicted_s", res[k].predicted_s, &oom);
                sc_jadd_num(o, "measured_s", res[k].measured_s, &oom);
                sc_jadd_num(o, "error", res[k].error, &oom);
                sc_jadd_num(o, "estimate_s", res[k].estimate_s, &oom);
                sc_jadd_num(o, "estimate_vs_predicted", est_rel(&res[k]), &oom);
                sc_jadd_bool(o, "fits", res[k].fits, &oom);
                sc_jadd_num(o, "peak_mem_bytes", res[k].peak_mem_bytes, &oom);
                sc_jadd_num(o, "gpu_mem_bytes", res[k].gpu_mem_bytes, &oom);
                sc_step_breakdown_json(o, &res[k].breakdown, w->cp, &oom);
                if (res[k].busiest_link[0]) {
                    cJSON *bl = sc_jadd_obj(o, "busiest_link", &oom);
                    sc_jadd_str(bl, "name", res[k].busiest_link, &oom);
                    sc_jadd_num(bl, "busy_fraction", res[k].busiest_busy, &oom);
                }
                if (w->framework)
                    sc_jadd_str(o, "framework", w->framework, &oom);
                else
                    cJSON_AddNullToObject(o, "framework");
                sc_jadd_num(o, "overhead", res[k].overhead, &oom);
                sc_jadd_bool(o, "overhead_fit_row", is_fit_row(w, no_overhead),
                             &oom);
            }
        cJSON *so = sc_jadd_obj(j, "suites", &oom);
        for (int i = 0, k = 0; i < npaths && !oom; k += suites[i]->n, i++) {
            sc_val_stats st;
            sc_val_stats_of(errs + k, suites[i]->n, &st);
            cJSON *x = stats_json(so, suites[i]->name, &st, suite_s[i], &oom);
            sc_jadd_str(x, "file", suites[i]->file, &oom);
        }
        cJSON *po = sc_jadd_obj(j, "clusters", &oom);
        for (int c = 0; c < ncl && !oom; c++) {
            int n = 0;
            for (int k = 0; k < total; k++)
                if (!strcmp(res[k].cluster, clusters[c]))
                    sub[n++] = errs[k];
            sc_val_stats st;
            sc_val_stats_of(sub, n, &st);
            stats_json(po, clusters[c], &st, -1, &oom);
        }
        if (by.n && !oom)
            vby_json(j, &by, suites, npaths, res, errs, &oom);
        stats_json(j, "exact_rows", &exact, -1, &oom);
        stats_json(j, "overhead_fit_rows", &fitst, -1, &oom);
        stats_json(j, "held_out_rows", &held, -1, &oom);
        sc_jadd_bool(j, "overheads", !no_overhead, &oom);
        cJSON *rg = sc_jadd_arr(j, "rank_groups", &oom);
        for (int g = 0; g < ngrp && !oom; g++) {
            int n, first = 0;
            double rho;
            GROUP_RHO(g, n, rho);
            if (n < 2)
                continue;
            while (grp[first] != g)
                first++;
            cJSON *o = sc_jpush_obj(rg, &oom);
            sc_jadd_str(o, "model", rowp[first]->model_desc, &oom);
            sc_jadd_str(o, "cluster", res[first].cluster, &oom);
            sc_jadd_num(o, "rows", n, &oom);
            if (isnan(rho))
                cJSON_AddNullToObject(o, "spearman");
            else
                sc_jadd_num(o, "spearman", rho, &oom);
        }
        if (isnan(rho_min))
            cJSON_AddNullToObject(j, "spearman_min");
        else
            sc_jadd_num(j, "spearman_min", rho_min, &oom);
        cJSON *eo = sc_jadd_obj(j, "estimate", &oom);
        sc_jadd_num(eo, "mean_abs", est_mean, &oom);
        sc_jadd_num(eo, "max_abs", est_max, &oom);
        sc_jadd_str(eo, "max_row", est_row, &oom);
        cJSON *mo = sc_jadd_obj(j, "memory", &oom);
        sc_jadd_num(mo, "rows_not_fitting", no_fit, &oom);
        sc_jadd_num(mo, "largest_fraction", mem_max, &oom);
        sc_jadd_str(mo, "largest_row", mem_row, &oom);
        sc_jadd_num(j, "rows_total", total, &oom);
        sc_jadd_num(j, "mape", all.mape, &oom);
        sc_jadd_num(j, "mean_signed_error", all.mean_signed, &oom);
        sc_jadd_num(j, "max_abs_error", all.max_abs, &oom);
        sc_jadd_num(j, "rows_beyond_max_abs", beyond, &oom);
        cJSON *t = sc_jadd_obj(j, "targets", &oom);
        sc_jadd_num(t, "mape", SC_VAL_TARGET_MAPE, &oom);
        sc_jadd_num(t, "max_abs_error", SC_VAL_TARGET_MAX_ABS, &oom);
        sc_jadd_num(t, "mean_signed_error", SC_VAL_TARGET_BIAS, &oom);
        sc_jadd_num(t, "spearman", SC_VAL_TARGET_SPEARMAN, &oom);
        sc_jadd_bool(t, "met", met, &oom);
        sc_jadd_str(j, "cluster_override", override ? override : "", &oom);
        sc_jadd_num(j, "run_time_s", run_s, &oom);
        if (oom) {
            cJSON_Delete(j);
            fprintf(stderr, "stagecraft: out of memory\n");
            rc = 1;
        } else {
            rc = cli_print_json(j);
        }
    } else if (!rc) {
        printf("validate: %d rows in %d suite%s from %s%s%s%s; one data-parallel replica "
               "simulated per row\n",
               total, npaths, npaths == 1 ? "" : "s", suite_arg ? "--suite" : dir,
               suite_arg ? "" : "/",
               override ? ", every row on " : "", override ? override : "");
        if (no_overhead)
            printf("the kernels alone: no framework overhead (--no-overhead)\n\n");
        else
            printf("rows of DeepSpeed and PyTorch runs include their framework's overhead "
                   "(cost_models/overhead.c),\nfitted on the rows marked 'fit' "
                   "(--fit-overhead refits it)\n\n");
        printf("%-46s %6s %-28s %-19s %11s %11s %8s\n", "suite/row", "GPUs",
               "dp.tp.pp v mbs recompute", "cluster", "predicted s", "measured s", "error");
        for (int i = 0, k = 0; i < npaths; i++)
            for (int r = 0; r < suites[i]->n; r++, k++) {
                const sc_val_row *w = &suites[i]->rows[r];
                char name[160], lay[64];
                snprintf(name, sizeof name, "%s/%s", suites[i]->name, w->id);
                /* flash attention as its kernel, where the row names one (loaded: known) */
                const char *kl = sc_cluster_flash_kernel_label(w->attn_kernel);
                const char *fl = w->attn != SC_ATTN_FLASH ? "" : kl ? kl : "flash";
                char cps[16] = "";
                if (w->cp > 1)
                    snprintf(cps, sizeof cps, " cp%d", w->cp);
                snprintf(lay, sizeof lay, "%d.%d.%d v%d mbs%d %s%s%s%s%s%s", w->dp, w->tp, w->pp,
                         w->v, w->mbs, sc_recompute_name(w->recompute), w->sp ? " sp" : "",
                         w->fp8 ? " fp8" : "", cps, *fl ? " " : "", fl);
                printf("%-46.46s %6d %-28.28s %-19.19s %11.3f %11.3f %+7.1f%%%s%s%s\n", name,
                       res[k].gpus, lay, res[k].cluster, res[k].predicted_s, res[k].measured_s,
                       100 * res[k].error, w->approximate ? " ~" : "  ",
                       is_fit_row(w, no_overhead) ? " fit" : "", res[k].fits ? "" : " >mem");
            }
        if (breakdown)
            print_breakdown(suites, npaths, res);
        if (by.n && vby_print(&by, suites, npaths, res, errs)) {
            fprintf(stderr, "stagecraft: out of memory\n");
            rc = 1;
        }
        printf("\n%-32s %5s %8s %13s %13s %11s\n", "", "rows", "MAPE", "mean signed",
               "max |error|", "run time");
        for (int i = 0, k = 0; i < npaths; k += suites[i]->n, i++) {
            sc_val_stats st;
            sc_val_stats_of(errs + k, suites[i]->n, &st);
            char label[96];
            snprintf(label, sizeof label, "suite %s", suites[i]->name);
            stats_line(label, &st, suite_s[i]);
        }
        for (int c = 0; c < ncl; c++) {
            int n = 0;
            for (int k = 0; k < total; k++)
                if (!strcmp(res[k].cluster, clusters[c]))
                    sub[n++] = errs[k];
            sc_val_stats st;
            sc_val_stats_of(sub, n, &st);
            char label[160];
            snprintf(label, sizeof label, "cluster %s", clusters[c]);
            stats_line(label, &st, -1);
        }
        stats_line("rows not marked approximate", &exact, -1);
        if (fitst.n) {
            stats_line("rows the overheads were fit on", &fitst, -1);
            stats_line("rows held out from that fit", &held, -1);
        }
        stats_line("all rows", &all, run_s);
        printf("\nrank agreement (Spearman of predicted against measured, per model and cluster "
               "measured in several layouts):\n");
        for (int g = 0; g < ngrp; g++) {
            int n, first = 0;
            double rho;
            GROUP_RHO(g, n, rho);
            if (n < 2)
                continue;
            while (grp[first] != g)
                first++;
            char label[256];
            snprintf(label, sizeof label, "%s on %s", rowp[first]->model_desc, res[first].cluster);
            if (isnan(rho))
                printf("  %-60.60s %2d rows  (one measured value)\n", label, n);
            else
                printf("  %-60.60s %2d rows  %+.2f\n", label, n, rho);
        }
        if (no_fit && override)
            printf("\nmemory: %d of %d rows would not fit %s's GPUs as modelled (marked "
                   "'>mem'; largest: %s, %.0f%% of a GPU)\n",
                   no_fit, total, override, mem_row, 100 * mem_max);
        else if (no_fit)
            printf("\nmemory: %d of %d rows do not fit their GPUs as modelled, though each ran "
                   "(marked '>mem'): the memory model, or the layout the row assumes, is "
                   "wrong there (largest: %s, %.0f%% of a GPU)\n",
                   no_fit, total, mem_row, 100 * mem_max);
        else if (total > 0)
            printf("\nmemory: every row fits %s as modelled%s (largest: %s, %.1f%% of a "
                   "GPU)\n",
                   override ? "the override's GPUs" : "its GPUs",
                   override ? "" : ", as each run did", mem_row, 100 * mem_max);
        if (total > 0)
            printf("\nplanner: its analytical estimate is within %.1f%% of the simulator on "
                   "every row (mean %.1f%%; largest: %s)\n",
                   100 * est_max, 100 * est_mean, est_row);
        printf("\ntargets: MAPE <= %.0f%%, every row within %.0f%%, mean signed error within "
               "+-%.0f%%, Spearman >= %.1f per model: %s\n",
               100 * SC_VAL_TARGET_MAPE, 100 * SC_VAL_TARGET_MAX_ABS, 100 * SC_VAL_TARGET_BIAS,
               SC_VAL_TARGET_SPEARMAN, met ? "met" : "NOT met");
        if (!isnan(rho_min) && rho_min < SC_VAL_TARGET_SPEARMAN)
            printf("  lowest Spearman %+.2f (target >= %.1f)\n", rho_min, SC_VAL_TARGET_SPEARMAN);
        if (!met)
            printf("  MAPE %.1f%% (target %.0f%%), %d of %d rows beyond %.0f%% (largest "
                   "%.1f%%), mean signed error %+.1f%% (target within +-%.0f%%)\n",
                   100 * all.mape, 100 * SC_VAL_TARGET_MAPE, beyond, total,
                   100 * SC_VAL_TARGET_MAX_ABS, 100 * all.max_abs, 100 * all.mean_signed,
                   100 * SC_VAL_TARGET_BIAS);
    }
    if (!rc && check && !met) {
        fprintf(stderr, "stagecraft validate: the targets are missed (MAPE %.1f%%, max |error| "
                "%.1f%%, mean signed error %+.1f%%)\n",
                100 * all.mape, 100 * all.max_abs, 100 * all.mean_signed);
        rc = 1;
    }
    for (int i = 0; i < npaths; i++)
        sc_val_free(suites[i]);
    sc_val_paths_free(paths, npaths);
    sc_free(res);
    sc_free(errs);
    sc_free(sub);
    sc_free(suite_s);
    sc_free(rowp);
    sc_free(grp);
    sc_free(gp);
    sc_free(gm);
    return rc;
#undef GROUP_RHO
}
