/* label.c - calibrated, validated preset or uncalibrated; see label.h. */
#include "label.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

/* Per preset: stagecraft validate's rows on it (all suites of validation/; not
 * the rows on another network, cluster.network, whose cluster is_preset would
 * not call the preset), with
 * the cost models of this commit, and what they span. Recomputed by
 * tests/test_validate.c (validate_label_table_is_current, which prints the
 * figures it finds when one is stale); regenerate from `stagecraft validate
 * --json` (rows[].cluster, rows[].error) when a cost model moves the suite,
 * and the spans when a row joins. */
static const sc_preset_validation table[] = {
    /* preset, rows, MAPE, mean signed, sd; sequences, GPUs, parameters spanned */
    {"dgx-a100-80g", 29, 0.0396, -0.0143, 0.0432, 2048, 8192, 8, 3360, 1.252e8, 1.008e12,
     {"fa1", "fa2", "triton", "unfused"}},
    {"dgx-h100", 27, 0.0517, -0.0325, 0.0542, 2048, 8192, 8, 11616, 1.316e9, 4.076e11,
     {"cudnn", "fa2", "triton"}},
    {"p4d.24xlarge", 4, 0.0404, -0.0216, 0.0683, 2048, 2048, 8, 8, 1.316e9, 1.285e10,
     {"triton"}},
    {"p4de.24xlarge", 1, 0.0518, 0.0518, 0.0, 2048, 2048, 384, 384, 1.763e11, 1.763e11,
     {"unfused"}},
};

const sc_preset_validation *sc_preset_validations(int *n)
{
    *n = (int)SC_ARRAY_LEN(table);
    return table;
}

static const sc_preset_validation *find(const char *name)
{
    for (size_t i = 0; i < SC_ARRAY_LEN(table); i++)
        if (!strcmp(table[i].preset, name))
            return &table[i];
    return NULL;
}

/* c is its preset: the same figures whatever the node count, with the
 * preset's own attention rates or another kernel's (sc_cluster_flash_kernel:
 * the rows of a suite may name the kernel their run used). */
static int is_preset(const sc_cluster *c)
{
    sc_cluster p;
    if (sc_cluster_preset_get(c->name, &p, NULL) != SC_OK)
        return 0;
    p.nodes = c->nodes;
    if (sc_cluster_equal(c, &p))
        return 1;
    const char *kernel;
    for (int i = 0; (kernel = sc_cluster_flash_kernel_name(i)); i++) {
        sc_cluster k = p;
        if (sc_cluster_flash_kernel(&k, kernel, NULL) == SC_OK && sc_cluster_equal(c, &k))
            return 1;
    }
    return 0;
}

void sc_cluster_label_of(const sc_cluster *c, sc_cluster_label *out)
{
    out->val = NULL;
    if (c->eff.fits.present) {
        out->kind = SC_LABEL_CALIBRATED;
        out->name = "calibrated";
        return;
    }
    const sc_preset_validation *v = find(c->name);
    if (v && v->rows > 0 && is_preset(c)) {
        out->kind = SC_LABEL_VALIDATED;
        out->name = "validated preset";
        out->val = v;
        return;
    }
    out->kind = SC_LABEL_UNCALIBRATED;
    out->name = "uncalibrated";
}

int sc_label_interval(const sc_cluster_label *l, double predicted, double *lo, double *hi)
{
    *lo = *hi = predicted;
    if (l->kind != SC_LABEL_VALIDATED || !l->val || !(predicted > 0))
        return 0;
    const sc_preset_validation *v = l->val;
    double sigma = v->rows >= 3 ? v->sd_signed : v->mape;
    double a = 1 + v->mean_signed + 2 * sigma, b = 1 + v->mean_signed - 2 * sigma;
    *lo = predicted / a;
    *hi = b > 0.05 ? predicted / b : predicted / 0.05; /* an error below -95% is not a bar */
    return 1;
}

const char *sc_label_describe(const sc_cluster_label *l, const sc_cluster *c, char *buf,
                              size_t size)
{
    switch (l->kind) {
    case SC_LABEL_CALIBRATED:
        snprintf(buf, size, "calibrated %s (fitted from measurements, %s)", c->name,
                 c->eff.fits.date);
        break;
    case SC_LABEL_VALIDATED:
        snprintf(buf, size,
                 "validated preset %s (validation suite: %d row%s, MAPE %.1f%%, mean signed "
                 "error %+.1f%%)",
                 l->val->preset, l->val->rows, l->val->rows == 1 ? "" : "s",
                 100 * l->val->mape, 100 * l->val->mean_signed);
        break;
    default: {
        sc_cluster p;
        int preset = sc_cluster_preset_get(c->name, &p, NULL) == SC_OK;
        if (preset && find(c->name) && !is_preset(c))
            snprintf(buf, size, "uncalibrated (%s differs from the preset it is named after; "
                     "stagecraft calibrate fits it to measurements)", c->name);
        else if (preset)
            snprintf(buf, size, "uncalibrated (preset %s: no validation rows; stagecraft "
                     "calibrate fits it to measurements)", c->name);
        else
            snprintf(buf, size, "uncalibrated %s (no measurements, no validation rows; "
                     "stagecraft calibrate fits it to measurements)", c->name);
        break;
    }
    }
    size_t n = strlen(buf);
    if (c->framework[0] && n < size)
        snprintf(buf + n, size - n, "; with %s's measured overhead, +%.1f%% on compute",
                 c->framework, 100 * c->framework_overhead);
    return buf;
}

/* "1.3B", "125M", "20.5k" */
static const char *params_str(double p, char *buf, size_t size)
{
    if (p >= 1e12)
        snprintf(buf, size, "%.3gT", p / 1e12);
    else if (p >= 1e9)
        snprintf(buf, size, "%.3gB", p / 1e9);
    else if (p >= 1e6)
        snprintf(buf, size, "%.3gM", p / 1e6);
    else
        snprintf(buf, size, "%.3gk", p / 1e3);
    return buf;
}

const char *sc_label_attention(const sc_cluster *c, int flash)
{
    return flash ? sc_cluster_flash_kernel_of(c) : "unfused";
}

/* name is one of v's attentions. */
static int listed(const sc_preset_validation *v, const char *name)
{
    for (int i = 0; i < SC_LABEL_ATTN_MAX && v->attention[i]; i++)
        if (!strcmp(v->attention[i], name))
            return 1;
    return 0;
}

/* Which of seq, gpus, params, attention run lies beyond (bit 0, 1, 2, 3). */
static int outside_bits(const sc_preset_validation *v, const sc_label_run *run)
{
    int b = 0;
    if (run->seq > 0 && v->seq_hi > 0 && (run->seq < v->seq_lo || run->seq > v->seq_hi))
        b |= 1;
    if (run->gpus > 0 && v->gpus_hi > 0 && (run->gpus < v->gpus_lo || run->gpus > v->gpus_hi))
        b |= 2;
    /* parameters within 1% of an end count as inside (the suite's models are
     * counted by the same generators, a user's may round) */
    if (run->params > 0 && v->params_hi > 0 &&
        (run->params < 0.99 * v->params_lo || run->params > 1.01 * v->params_hi))
        b |= 4;
    if (run->attention && v->attention[0] && !listed(v, run->attention))
        b |= 8;
    return b;
}

int sc_label_outside(const sc_cluster_label *l, const sc_label_run *run, char *buf,
                     size_t size)
{
    if (size)
        buf[0] = '\0';
    if (!run || l->kind != SC_LABEL_VALIDATED || !l->val)
        return 0;
    const sc_preset_validation *v = l->val;
    int bits = outside_bits(v, run), n = 0;
    size_t k = 0;
    char a[3][24];
    if (bits & 1 && k < size)
        k += (size_t)snprintf(buf + k, size - k, "sequence %d (rows %d to %d)", run->seq,
                              v->seq_lo, v->seq_hi), n++;
    if (bits & 2 && k < size)
        k += (size_t)snprintf(buf + k, size - k, "%s%ld GPUs (rows %ld to %ld)", n ? "; " : "",
                              run->gpus, v->gpus_lo, v->gpus_hi), n++;
    if (bits & 4 && k < size)
        k += (size_t)snprintf(buf + k, size - k, "%s%s parameters (rows %s to %s)",
                              n ? "; " : "", params_str(run->params, a[0], sizeof a[0]),
                              params_str(v->params_lo, a[1], sizeof a[1]),
                              params_str(v->params_hi, a[2], sizeof a[2])), n++;
    if (bits & 8 && k < size) {
        k += (size_t)snprintf(buf + k, size - k, "%sattention %s (rows ran ", n ? "; " : "",
                              run->attention);
        for (int i = 0; i < SC_LABEL_ATTN_MAX && v->attention[i] && k < size; i++)
            k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", v->attention[i]);
        if (k < size)
            k += (size_t)snprintf(buf + k, size - k, ")");
        n++;
    }
    return n;
}

cJSON *sc_cluster_label_json(const sc_cluster *c, double step_s, const sc_label_run *run)
{
    sc_cluster_label l;
    char d[320];
    double lo, hi;
    int oom = 0;
    cJSON *x = cJSON_CreateObject();
    if (!x)
        return NULL;
    sc_cluster_label_of(c, &l);
    sc_jadd_str(x, "kind", l.name, &oom);
    sc_jadd_str(x, "description", sc_label_describe(&l, c, d, sizeof d), &oom);
    if (l.val) {
        cJSON *v = sc_jadd_obj(x, "validation", &oom);
        if (v) {
            sc_jadd_num(v, "rows", l.val->rows, &oom);
            sc_jadd_num(v, "mape", l.val->mape, &oom);
            sc_jadd_num(v, "mean_signed_error", l.val->mean_signed, &oom);
            sc_jadd_num(v, "sd_signed_error", l.val->sd_signed, &oom);
            const double span[3][2] = {{l.val->seq_lo, l.val->seq_hi},
                                       {(double)l.val->gpus_lo, (double)l.val->gpus_hi},
                                       {l.val->params_lo, l.val->params_hi}};
            static const char *const keys[4] = {"seq", "gpus", "params", "attention"};
            for (int i = 0; i < 3; i++) {
                cJSON *r = sc_jadd_arr(v, keys[i], &oom);
                sc_jpush_num(r, span[i][0], &oom);
                sc_jpush_num(r, span[i][1], &oom);
            }
            cJSON *att = sc_jadd_arr(v, "attention", &oom);
            for (int i = 0; i < SC_LABEL_ATTN_MAX && l.val->attention[i]; i++)
                sc_jpush_str(att, l.val->attention[i], &oom);
            if (run) {
                int bits = outside_bits(l.val, run);
                cJSON *o = sc_jadd_arr(x, "outside_validation", &oom);
                for (int i = 0; i < 4; i++)
                    if (bits >> i & 1)
                        sc_jpush_str(o, keys[i], &oom);
            }
        }
    }
    if (c->framework[0]) {
        sc_jadd_str(x, "framework", c->framework, &oom);
        sc_jadd_num(x, "framework_overhead", c->framework_overhead, &oom);
    } else {
        cJSON_AddNullToObject(x, "framework");
    }
    if (sc_label_interval(&l, step_s, &lo, &hi)) {
        cJSON *r = sc_jadd_arr(x, "step_time_range_s", &oom);
        sc_jpush_num(r, lo, &oom);
        sc_jpush_num(r, hi, &oom);
    }
    if (oom) {
        cJSON_Delete(x);
        return NULL;
    }
    return x;
}
