/* validate_by.c - `validate --by` (validate_by.h). */
#include "validate_by.h"

#include "cluster.h"
#include "cost.h"
#include "sc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_SUITE, K_CLUSTER, K_MODEL, K_SEQ, K_GPUS, K_DP, K_TP, K_PP, K_CP, K_MBS, K_RECOMPUTE,
       K_SP, K_ATTENTION, K_FRAMEWORK, K_N };

static const struct {
    const char *name;
    int numeric;
} key_table[K_N] = {
    [K_SUITE] = {"suite", 0},     [K_CLUSTER] = {"cluster", 0},
    [K_MODEL] = {"model", 0},     [K_SEQ] = {"seq", 1},
    [K_GPUS] = {"gpus", 1},       [K_DP] = {"dp", 1},
    [K_TP] = {"tp", 1},           [K_PP] = {"pp", 1},
    [K_CP] = {"cp", 1},           [K_MBS] = {"mbs", 1},
    [K_RECOMPUTE] = {"recompute", 0}, [K_SP] = {"sp", 1},
    [K_ATTENTION] = {"attention", 0}, [K_FRAMEWORK] = {"framework", 0},
};

const char *vby_key_names(void)
{
    static char names[160];
    if (!names[0])
        for (int i = 0; i < K_N; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     key_table[i].name);
    return names;
}

int vby_parse(const char *arg, vby *by, char *msg, size_t cap)
{
    by->n = 0;
    const char *p = arg;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        int k = -1;
        for (int i = 0; i < K_N && k < 0; i++)
            if (strlen(key_table[i].name) == l && !strncmp(key_table[i].name, p, l))
                k = i;
        if (k < 0) {
            snprintf(msg, cap, "--by: no key '%.*s' (%s)", (int)(l < 40 ? l : 40), p,
                     vby_key_names());
            return -1;
        }
        for (int i = 0; i < by->n; i++)
            if (by->keys[i] == k) {
                snprintf(msg, cap, "--by: '%s' given twice", key_table[k].name);
                return -1;
            }
        if (by->n == VBY_MAX_KEYS) {
            snprintf(msg, cap, "--by: at most %d keys", VBY_MAX_KEYS);
            return -1;
        }
        by->keys[by->n++] = k;
        if (!e)
            return 0;
        p = e + 1;
    }
}

/* One row's value of a key: a number (numeric keys) or a string. */
typedef struct kval {
    double num;
    const char *str;
} kval;

static kval value_of(int key, const sc_val_suite *s, const sc_val_row *w, const sc_val_result *r)
{
    kval v = {0, ""};
    switch (key) {
    case K_SUITE:
        v.str = s->name;
        break;
    case K_CLUSTER:
        v.str = r->cluster;
        break;
    case K_MODEL:
        v.str = w->model_desc;
        break;
    case K_SEQ:
        v.num = w->model ? w->model->seq_len : 0;
        break;
    case K_GPUS:
        v.num = r->gpus;
        break;
    case K_DP:
        v.num = w->dp;
        break;
    case K_TP:
        v.num = w->tp;
        break;
    case K_PP:
        v.num = w->pp;
        break;
    case K_CP:
        v.num = w->cp > 1 ? w->cp : 1;
        break;
    case K_MBS:
        v.num = w->mbs;
        break;
    case K_RECOMPUTE:
        v.str = sc_recompute_name(w->recompute);
        break;
    case K_SP:
        v.num = w->sp != 0;
        break;
    case K_ATTENTION: /* as a suite and `--flash` name it, on the cluster it ran */
        v.str = sc_val_row_attention(w, r->cluster);
        break;
    case K_FRAMEWORK:
        v.str = w->framework ? w->framework : "megatron";
        break;
    }
    return v;
}

/* Every row's key values, its error, and the order the groups run in. */
typedef struct vrow {
    kval v[VBY_MAX_KEYS];
    double err;
} vrow;

static const vby *sort_by; /* qsort has no context argument in C11 */

static int cmp_vals(const vrow *a, const vrow *b, const vby *by)
{
    for (int i = 0; i < by->n; i++) {
        int c = key_table[by->keys[i]].numeric ? (a->v[i].num > b->v[i].num) -
                                                      (a->v[i].num < b->v[i].num)
                                                : strverscmp(a->v[i].str, b->v[i].str);
        if (c)
            return c;
    }
    return 0;
}

static int cmp_rows(const void *x, const void *y)
{
    return cmp_vals(x, y, sort_by);
}

/* The rows sorted by their values; NULL out of memory (or no rows). */
static vrow *collect(const vby *by, sc_val_suite *const *suites, int n,
                     const sc_val_result *res, const double *errs, int *total)
{
    int t = 0;
    for (int i = 0; i < n; i++)
        t += suites[i]->n;
    *total = t;
    vrow *rows = t ? sc_calloc((size_t)t, sizeof *rows) : NULL;
    if (!rows)
        return NULL;
    for (int i = 0, k = 0; i < n; i++)
        for (int r = 0; r < suites[i]->n; r++, k++) {
            for (int q = 0; q < by->n; q++)
                rows[k].v[q] = value_of(by->keys[q], suites[i], &suites[i]->rows[r], &res[k]);
            rows[k].err = errs[k];
        }
    sort_by = by;
    qsort(rows, (size_t)t, sizeof *rows, cmp_rows);
    return rows;
}

/* The statistics of rows[a, b): n, MAPE, mean signed, max |error|, min and
 * max error. */
typedef struct gstats {
    int n;
    double mape, mean, max_abs, lo, hi;
} gstats;

static gstats stats(const vrow *rows, int a, int b)
{
    gstats g = {b - a, 0, 0, 0, INFINITY, -INFINITY};
    for (int k = a; k < b; k++) {
        double e = rows[k].err;
        g.mape += fabs(e);
        g.mean += e;
        g.max_abs = fmax(g.max_abs, fabs(e));
        g.lo = fmin(g.lo, e);
        g.hi = fmax(g.hi, e);
    }
    if (g.n) {
        g.mape /= g.n;
        g.mean /= g.n;
    }
    return g;
}

static void fmt_val(char *buf, size_t cap, int key, kval v)
{
    if (key_table[key].numeric)
        snprintf(buf, cap, "%.0f", v.num);
    else
        snprintf(buf, cap, "%s", v.str);
}

int vby_print(const vby *by, sc_val_suite *const *suites, int n, const sc_val_result *res,
              const double *errs)
{
    int total;
    vrow *rows = collect(by, suites, n, res, errs, &total);
    if (!rows)
        return total ? -1 : 0;
    /* column widths: the key's name or its longest value (at most 48) */
    int w[VBY_MAX_KEYS];
    for (int q = 0; q < by->n; q++) {
        w[q] = (int)strlen(key_table[by->keys[q]].name);
        for (int k = 0; k < total; k++) {
            char b[160];
            fmt_val(b, sizeof b, by->keys[q], rows[k].v[q]);
            int l = (int)strlen(b);
            w[q] = l > w[q] ? (l < 48 ? l : 48) : w[q];
        }
    }
    printf("\nerrors by ");
    for (int q = 0; q < by->n; q++)
        printf("%s%s", q ? ", " : "", key_table[by->keys[q]].name);
    printf(" (--by):\n");
    for (int q = 0; q < by->n; q++)
        printf("%s%-*s", q ? "  " : "", w[q], key_table[by->keys[q]].name);
    printf(" %5s %8s %12s %10s %10s\n", "rows", "MAPE", "mean signed", "min", "max");
    for (int a = 0, b; a < total; a = b) {
        for (b = a + 1; b < total && !cmp_vals(&rows[a], &rows[b], by); b++)
            ;
        gstats g = stats(rows, a, b);
        for (int q = 0; q < by->n; q++) {
            char v[160];
            fmt_val(v, sizeof v, by->keys[q], rows[a].v[q]);
            printf("%s%-*.*s", q ? "  " : "", w[q], w[q], v);
        }
        printf(" %5d %7.1f%% %+11.1f%% %+9.1f%% %+9.1f%%\n", g.n, 100 * g.mape, 100 * g.mean,
               100 * g.lo, 100 * g.hi);
    }
    sc_free(rows);
    return 0;
}

void vby_json(cJSON *j, const vby *by, sc_val_suite *const *suites, int n,
              const sc_val_result *res, const double *errs, int *oom)
{
    int total;
    vrow *rows = collect(by, suites, n, res, errs, &total);
    if (!rows && total) {
        *oom = 1;
        return;
    }
    cJSON *o = sc_jadd_obj(j, "by", oom);
    cJSON *keys = sc_jadd_arr(o, "keys", oom);
    for (int q = 0; q < by->n; q++)
        sc_jpush_str(keys, key_table[by->keys[q]].name, oom);
    cJSON *groups = sc_jadd_arr(o, "groups", oom);
    for (int a = 0, b; a < total && !*oom; a = b) {
        for (b = a + 1; b < total && !cmp_vals(&rows[a], &rows[b], by); b++)
            ;
        gstats g = stats(rows, a, b);
        cJSON *e = sc_jpush_obj(groups, oom);
        for (int q = 0; q < by->n; q++) {
            int k = by->keys[q];
            if (key_table[k].numeric)
                sc_jadd_num(e, key_table[k].name, rows[a].v[q].num, oom);
            else
                sc_jadd_str(e, key_table[k].name, rows[a].v[q].str, oom);
        }
        sc_jadd_num(e, "rows", g.n, oom);
        sc_jadd_num(e, "mape", g.mape, oom);
        sc_jadd_num(e, "mean_signed_error", g.mean, oom);
        sc_jadd_num(e, "max_abs_error", g.max_abs, oom);
        sc_jadd_num(e, "min_error", g.lo, oom);
        sc_jadd_num(e, "max_error", g.hi, oom);
    }
    sc_free(rows);
}
