/* compare.c - see compare.h. */
#include "compare.h"
#include "calib_points.h"
#include "cluster.h"
#include "cost.h"
#include "json.h"
#include "plan.h"
#include "step.h"
#include "timeline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void sc_comparison_free(sc_comparison *c)
{
    if (!c)
        return;
    sc_free(c->rank_pred);
    sc_free(c->rank_meas);
    sc_free(c->rank_err);
    sc_free(c->kernels);
    sc_free(c);
}

/* One timed kernel's prediction per call, as the executor ran it. */
static double kernel_pred(const sc_cluster *c, sc_dtype dt, const sc_tl_kernel *k)
{
    sc_calib_kernel q;
    sc_calib_kernel_of(k, &q);
    return sc_calib_kernel_time(c, dt, &q);
}

static sc_status compare_kernels(const sc_cluster *c, sc_dtype dt, const sc_timeline *t,
                                 sc_comparison *cmp, sc_error *err)
{
    if (t->n_kernels <= 0)
        return SC_OK;
    cmp->kernels = sc_calloc((size_t)t->n_kernels, sizeof *cmp->kernels);
    if (!cmp->kernels)
        return sc_err(err, SC_ENOMEM, "compare: out of memory");
    cmp->n_kernels = t->n_kernels;
    cmp->kernels_rank = t->kernels_rank;
    double sum = 0;
    int n = 0;
    for (int i = 0; i < t->n_kernels; i++) {
        const sc_tl_kernel *k = &t->kernels[i];
        sc_kernel_cmp *o = &cmp->kernels[i];
        o->k = *k;
        o->pred = kernel_pred(c, dt, k);
        o->err = k->time_s > 0 ? o->pred / k->time_s - 1 : 0;
        if (k->time_s > 0) {
            sum += fabs(o->err);
            n++;
        }
        int g = !strcmp(k->op, "mem");
        cmp->kern_pred[g] += o->pred * k->calls;
        cmp->kern_meas[g] += k->time_s * k->calls;
        cmp->kern_pred[2] += o->pred * k->calls;
        cmp->kern_meas[2] += k->time_s * k->calls;
    }
    cmp->kernel_mape = n ? sum / n : 0;
    return SC_OK;
}

static int busy_kind(int k)
{
    return k == SC_OP_F || k == SC_OP_B || k == SC_OP_W || k == SC_OP_RECOMPUTE ||
           k == SC_OP_OPTIMIZER;
}

sc_status sc_compare(const char *plan_file, const char *measured_file, const char *cluster,
                     sc_comparison **out, sc_error *err)
{
    *out = NULL;
    sc_plan *p = NULL;
    sc_model *m = NULL;
    sc_cluster c;
    sc_timeline *meas = NULL;
    sc_step_result *r = NULL;
    sc_comparison *cmp = NULL;
    sc_status st = sc_plan_load(plan_file, &p, err);
    if (!st)
        st = sc_plan_open_on(p, plan_file, cluster, &m, &c, err);
    if (!st)
        st = sc_timeline_load(measured_file, &meas, err);
    if (!st && strcmp(meas->source, "exec"))
        st = sc_err(err, SC_EINVAL, "%s: source: \"%s\" is not a measurement", measured_file,
                    meas->source);
    /* an error relative to a step of zero is no error ("+0.0%"): refuse */
    if (!st && !(meas->step_time_s > 0))
        st = sc_err(err, SC_EINVAL,
                    "%s: step_time_s: %g: a measured step of zero cannot be compared (rerun "
                    "stagecraft exec)",
                    measured_file, meas->step_time_s);
    if (!st && meas->n_steps > 0 && !(meas->step_median_s > 0))
        st = sc_err(err, SC_EINVAL,
                    "%s: steps.median_s: %g: a measured step of zero cannot be compared (rerun "
                    "stagecraft exec)",
                    measured_file, meas->step_median_s);
    char dg[17];
    if (!st && meas->plan_digest[0] && !sc_plan_file_digest(plan_file, dg, err) &&
        strcmp(dg, meas->plan_digest))
        st = sc_err(err, SC_EINVAL, "%s: plan.digest: it measured %s, not %s (or that plan has "
                    "changed since)", measured_file, meas->plan_file, plan_file);
    int nr = st ? 0 : p->dp * p->cp * p->tp * p->pp; /* p: loaded */
    if (!st && meas->n_ranks != nr)
        st = sc_err(err, SC_EINVAL, "%s: ranks: %d ranks, the plan has dp·cp·tp·pp = %d",
                    measured_file, meas->n_ranks, nr);
    /* the plan's fused attention priced as the measurement ran it (the
     * executor: two batched GEMMs each) */
    if (!st && sc_timeline_flash_gemms(meas))
        c.eff.gemm.flash_gemms = 1;
    sc_step_cfg cfg;
    if (!st) {
        sc_plan_step_cfg(p, &cfg);
        cfg.want_timeline = 1;
        st = sc_step_simulate(m, &c, &cfg, &r, err);
    }
    if (!st) {
        cmp = sc_calloc(1, sizeof *cmp);
        if (cmp) {
            cmp->n_ranks = meas->n_ranks;
            cmp->rank_pred = sc_calloc((size_t)cmp->n_ranks, sizeof(double));
            cmp->rank_meas = sc_calloc((size_t)cmp->n_ranks, sizeof(double));
            cmp->rank_err = sc_calloc((size_t)cmp->n_ranks, sizeof(double));
        }
        if (!cmp || !cmp->rank_pred || !cmp->rank_meas || !cmp->rank_err)
            st = sc_err(err, SC_ENOMEM, "compare: out of memory");
    }
    if (!st) {
        snprintf(cmp->cluster, sizeof cmp->cluster, "%s", c.name);
        snprintf(cmp->device, sizeof cmp->device, "%s", meas->device[0] ? meas->device : "?");
        snprintf(cmp->operands, sizeof cmp->operands, "%s", meas->operands);
        cmp->pred_step = r->step_time_s;
        cmp->meas_step = meas->step_time_s;
        cmp->step_err = cmp->meas_step > 0 ? cmp->pred_step / cmp->meas_step - 1 : 0;
        cmp->interval = sc_step_interval(r, &c, m->dtype);
        cmp->meas_spread = meas->n_steps > 0 && meas->step_spread >= 0 ? meas->step_spread : -1;
        cmp->meas_steps = meas->n_steps;
        cmp->meas_interval = cmp->meas_spread > 0
                                 ? 1.96 * 1.2533 * cmp->meas_spread * cmp->meas_step /
                                       (1.349 * sqrt((double)meas->n_steps))
                                 : 0;
        double ps[SC_OP_KIND_N] = {0}, ms[SC_OP_KIND_N] = {0};
        int pn[SC_OP_KIND_N] = {0}, mn[SC_OP_KIND_N] = {0};
        const sc_timeline *tl[2] = {r->timeline, meas};
        for (int w = 0; w < 2; w++)
            for (int k = 0; k < tl[w]->n_ranks && k < cmp->n_ranks; k++)
                for (int i = 0; i < tl[w]->ranks[k].n_ops; i++) {
                    const sc_tl_op *o = &tl[w]->ranks[k].ops[i];
                    if (o->kind < 0 || o->kind >= SC_OP_KIND_N)
                        continue;
                    double d = o->end - o->start;
                    (w ? ms : ps)[o->kind] += d;
                    (w ? mn : pn)[o->kind]++;
                    if (busy_kind(o->kind) && o->stream == SC_STREAM_COMPUTE)
                        (w ? cmp->rank_meas : cmp->rank_pred)[k] += d;
                }
        double sum = 0, csum = 0;
        int nc = 0;
        for (int k = 0; k < SC_OP_KIND_N; k++) {
            if (!pn[k] || !mn[k] || cmp->n_kinds >= (int)SC_ARRAY_LEN(cmp->kinds))
                continue;
            sc_kind_cmp *kc = &cmp->kinds[cmp->n_kinds++];
            snprintf(kc->name, sizeof kc->name, "%s", sc_op_kind_name((sc_op_kind)k));
            kc->n = mn[k];
            kc->pred = ps[k] / pn[k];
            kc->meas = ms[k] / mn[k];
            kc->err = kc->meas > 0 ? kc->pred / kc->meas - 1 : 0;
            kc->compute = busy_kind(k);
            sum += fabs(kc->err);
            csum += kc->compute ? fabs(kc->err) : 0;
            nc += kc->compute;
        }
        cmp->kind_mape = cmp->n_kinds ? sum / cmp->n_kinds : 0;
        cmp->compute_mape = nc ? csum / nc : -1;
        sum = 0;
        for (int k = 0; k < cmp->n_ranks; k++) {
            cmp->rank_err[k] = cmp->rank_meas[k] > 0 ? cmp->rank_pred[k] / cmp->rank_meas[k] - 1 : 0;
            sum += fabs(cmp->rank_err[k]);
        }
        cmp->rank_mape = cmp->n_ranks ? sum / cmp->n_ranks : 0;
        st = compare_kernels(&c, m->dtype, meas, cmp, err);
    }
    sc_step_result_free(r);
    sc_timeline_free(meas);
    sc_model_free(m);
    sc_plan_free(p);
    if (st) {
        sc_comparison_free(cmp);
        return st;
    }
    *out = cmp;
    return SC_OK;
}

cJSON *sc_comparison_json(const sc_comparison *c)
{
    sc_json_init();
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", "stagecraft.compare/1", &oom);
    sc_jadd_str(j, "cluster", c->cluster, &oom);
    sc_jadd_str(j, "device", c->device, &oom);
    if (c->operands[0])
        sc_jadd_str(j, "operands", c->operands, &oom);
    cJSON *s = sc_jadd_obj(j, "step", &oom);
    sc_jadd_num(s, "predicted_s", c->pred_step, &oom);
    sc_jadd_num(s, "measured_s", c->meas_step, &oom);
    sc_jadd_num(s, "error", c->step_err, &oom);
    if (c->interval > 0)
        sc_jadd_num(s, "interval_s", c->interval, &oom);
    if (c->meas_spread >= 0) {
        sc_jadd_num(s, "measured_spread", c->meas_spread, &oom);
        sc_jadd_num(s, "measured_interval_s", c->meas_interval, &oom);
    }
    cJSON *k = sc_jadd_arr(j, "kinds", &oom);
    for (int i = 0; i < c->n_kinds && !oom; i++) {
        cJSON *o = sc_jpush_obj(k, &oom);
        if (!o)
            break;
        sc_jadd_str(o, "kind", c->kinds[i].name, &oom);
        sc_jadd_num(o, "ops", c->kinds[i].n, &oom);
        sc_jadd_num(o, "predicted_s", c->kinds[i].pred, &oom);
        sc_jadd_num(o, "measured_s", c->kinds[i].meas, &oom);
        sc_jadd_num(o, "error", c->kinds[i].err, &oom);
        sc_jadd_bool(o, "compute", c->kinds[i].compute, &oom);
    }
    sc_jadd_num(j, "kind_mape", c->kind_mape, &oom);
    if (c->compute_mape >= 0)
        sc_jadd_num(j, "compute_kind_mape", c->compute_mape, &oom);
    cJSON *rk = sc_jadd_arr(j, "ranks", &oom);
    for (int i = 0; i < c->n_ranks && !oom; i++) {
        cJSON *o = sc_jpush_obj(rk, &oom);
        if (!o)
            break;
        sc_jadd_num(o, "rank", i, &oom);
        sc_jadd_num(o, "predicted_busy_s", c->rank_pred[i], &oom);
        sc_jadd_num(o, "measured_busy_s", c->rank_meas[i], &oom);
        sc_jadd_num(o, "error", c->rank_err[i], &oom);
    }
    sc_jadd_num(j, "rank_mape", c->rank_mape, &oom);
    if (c->n_kernels > 0) {
        cJSON *ko = sc_jadd_obj(j, "kernels", &oom);
        sc_jadd_num(ko, "rank", c->kernels_rank, &oom);
        sc_jadd_num(ko, "mape", c->kernel_mape, &oom);
        static const char *const tot[3] = {"gemm", "mem", "all"};
        for (int g = 0; g < 3; g++) {
            cJSON *o = sc_jadd_obj(ko, tot[g], &oom);
            sc_jadd_num(o, "predicted_s", c->kern_pred[g], &oom);
            sc_jadd_num(o, "measured_s", c->kern_meas[g], &oom);
            sc_jadd_num(o, "error", c->kern_meas[g] > 0 ? c->kern_pred[g] / c->kern_meas[g] - 1
                                                        : 0, &oom);
        }
        cJSON *a = sc_jadd_arr(ko, "each", &oom);
        for (int i = 0; i < c->n_kernels && a && !oom; i++) {
            const sc_kernel_cmp *q = &c->kernels[i];
            const sc_tl_kernel *t = &q->k;
            cJSON *o = sc_jpush_obj(a, &oom);
            if (!o)
                break;
            sc_jadd_str(o, "name", t->name, &oom);
            sc_jadd_str(o, "pass", t->pass, &oom);
            sc_jadd_str(o, "op", t->op, &oom);
            if (!strcmp(t->op, "mem")) {
                sc_jadd_num(o, "bytes", t->bytes, &oom);
            } else {
                sc_jadd_num(o, "batch", t->batch, &oom);
                sc_jadd_num(o, "m", t->m, &oom);
                sc_jadd_num(o, "n", t->n, &oom);
                sc_jadd_num(o, "k", t->k, &oom);
                if (t->splits > 1)
                    sc_jadd_num(o, "splits", t->splits, &oom);
            }
            sc_jadd_num(o, "calls", t->calls, &oom);
            sc_jadd_num(o, "predicted_s", q->pred, &oom);
            sc_jadd_num(o, "measured_s", t->time_s, &oom);
            sc_jadd_num(o, "error", q->err, &oom);
        }
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}
