/* calibrate.c - GSL fits of the cluster's efficiency parameters; see
 * calibrate.h for what is fitted and how. */
#include "calibrate.h"
#include "cost.h"
#include "json.h"
#include "plan.h"
#include "schedule.h"
#include "step.h"
#include "timeline.h"

#include <ctype.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_POINTS 100000

typedef struct cpoint {
    int plan;          /* -1: a gemm size */
    int stage, kind;   /* measured op: stage and SC_OP_F/B/W/RECOMPUTE */
    double flop, bytes;
    double meas;
} cpoint;

typedef struct lpoint {
    int link, op, n; /* op: 0 allreduce, 1 reducescatter, 2 allgather, 3 p2p */
    double bytes, t;
} lpoint;

/* A sender's host time: the gap between two compute ops of a rank with only
 * sends (no receive) between them in its schedule, and the bytes sent. */
typedef struct hpoint {
    int link;
    double bytes, gap;
} hpoint;

typedef struct plan_in {
    sc_plan *plan;
    sc_model *model;
    sc_step_cfg cfg;
    int split;
    sc_stage_info *info;
} plan_in;

typedef struct ctx {
    const sc_cluster *base;
    sc_dtype dt;
    cpoint *cp;
    int ncp, capcp;
    lpoint *lp;
    int nlp, caplp;
    hpoint *hp;
    int nhp, caphp;
    plan_in *plans;
    int nplans;
    sc_cluster cur; /* the estimate so far */
    int active;     /* P_* of the stage being fitted */
    int use_gemm, use_ops; /* which points the stage fits */
    int *idx;       /* the points of the stage */
    int nidx;
    int fails;      /* evaluations that could not compute a prediction */
} ctx;

static const char *const comm_ops[] = {"allreduce", "reducescatter", "allgather", "p2p"};

int sc_calib_device_matches(const sc_cluster *c, const char *device)
{
    char word[64];
    size_t n = strcspn(c->gpu.name, "- ");
    if (n == 0 || n >= sizeof word)
        return 0;
    for (size_t i = 0; i < n; i++)
        word[i] = (char)tolower((unsigned char)c->gpu.name[i]);
    word[n] = '\0';
    char dev[256];
    size_t dl = strlen(device);
    if (dl >= sizeof dev)
        dl = sizeof dev - 1;
    for (size_t i = 0; i < dl; i++)
        dev[i] = (char)tolower((unsigned char)device[i]);
    dev[dl] = '\0';
    return strstr(dev, word) != NULL;
}

/* ---- reading inputs ------------------------------------------------------------ */

static int push_cp(ctx *x, cpoint p)
{
    if (x->ncp == x->capcp) {
        int nc = x->capcp ? 2 * x->capcp : 256;
        cpoint *n = sc_realloc(x->cp, sizeof *n * (size_t)nc);
        if (!n)
            return -1;
        x->cp = n;
        x->capcp = nc;
    }
    x->cp[x->ncp++] = p;
    return 0;
}

static int push_lp(ctx *x, lpoint p)
{
    if (x->nlp == x->caplp) {
        int nc = x->caplp ? 2 * x->caplp : 256;
        lpoint *n = sc_realloc(x->lp, sizeof *n * (size_t)nc);
        if (!n)
            return -1;
        x->lp = n;
        x->caplp = nc;
    }
    x->lp[x->nlp++] = p;
    return 0;
}

static sc_status check_dtype(ctx *x, sc_dtype dt, const char *file, sc_error *err)
{
    if ((int)x->dt < 0)
        x->dt = dt;
    else if (x->dt != dt)
        return sc_err(err, SC_EINVAL,
                      "%s: measured in %s, other inputs in %s: calibrate one dtype at a time",
                      file, sc_dtype_name(dt), sc_dtype_name(x->dt));
    if (x->base->gpu.peak_flops[dt] <= 0)
        return sc_err(err, SC_EINVAL, "%s: %s has no %s peak to calibrate", file,
                      x->base->name, sc_dtype_name(dt));
    return SC_OK;
}

static sc_status read_bench(ctx *x, const cJSON *j, const char *file, sc_error *err)
{
    static const char *const keys[] = {"format", "op", "backend", "device", "host", "ranks",
                                       "world", "nodes", "ranks_per_node", "link", "dtype",
                                       "compute_dtype", "elem_bytes", "busbw_factor", "iters",
                                       "warmup", "results", NULL};
    const char *op, *device, *link, *cdt;
    long ranks = 0;
    double eb = 0;
    const cJSON *res;
    sc_status st;
    if ((st = sc_json_keys(j, file, "", keys, err)) ||
        (st = sc_json_str(j, file, "", "op", 1, 32, &op, err)) ||
        (st = sc_json_str(j, file, "", "device", 1, 255, &device, err)) ||
        (st = sc_json_str(j, file, "", "link", 1, 8, &link, err)) ||
        (st = sc_json_str(j, file, "", "compute_dtype", 1, 8, &cdt, err)) ||
        (st = sc_json_int(j, file, "", "ranks", 1, 1, 1 << 24, &ranks, err)) ||
        (st = sc_json_num(j, file, "", "elem_bytes", 1, 1, 16, &eb, err)) ||
        (st = sc_json_arr(j, file, "", "results", 1, &res, err)))
        return st;
    if (!sc_calib_device_matches(x->base, device))
        return sc_err(err, SC_EINVAL,
                      "%s: device: measured on \"%s\", not on %s's %s", file, device,
                      x->base->name, x->base->gpu.name);
    if (ranks > sc_cluster_total_gpus(x->base))
        return sc_err(err, SC_EINVAL, "%s: ranks: %ld ranks, but %s has %ld GPUs", file, ranks,
                      x->base->name, sc_cluster_total_gpus(x->base));
    int lk = !strcmp(link, "intra") ? SC_LINK_INTRA : !strcmp(link, "inter") ? SC_LINK_INTER : -1;
    if (lk < 0)
        return sc_err(err, SC_EINVAL, "%s: link: \"%s\" is not intra or inter", file, link);
    int is_gemm = !strcmp(op, "gemm"), cop = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(op, comm_ops[i]))
            cop = i;
    if (!is_gemm && cop < 0)
        return sc_err(err, SC_EINVAL, "%s: op: unknown \"%s\"", file, op);
    int dt = sc_dtype_parse(cdt);
    if (dt < 0)
        return sc_err(err, SC_EINVAL, "%s: compute_dtype: unknown \"%s\"", file, cdt);
    if (is_gemm && (st = check_dtype(x, (sc_dtype)dt, file, err)))
        return st;
    int i = 0;
    for (const cJSON *r = res->child; r; r = r->next, i++) {
        char path[48];
        snprintf(path, sizeof path, "results[%d]", i);
        if (!cJSON_IsObject(r))
            return sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
        double t = 0;
        if ((st = sc_json_num(r, file, path, "time_s", 1, 1e-12, 1e6, &t, err)))
            return st;
        if (is_gemm) {
            long m = 0, n = 0, k = 0;
            if ((st = sc_json_int(r, file, path, "m", 1, 1, 1 << 20, &m, err)) ||
                (st = sc_json_int(r, file, path, "n", 1, 1, 1 << 20, &n, err)) ||
                (st = sc_json_int(r, file, path, "k", 1, 1, 1 << 20, &k, err)))
                return st;
            cpoint p = {-1, 0, 0, 2.0 * m * n * k, ((double)m * k + (double)k * n + (double)m * n) * eb,
                        t};
            if (push_cp(x, p))
                return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
        } else {
            double bytes = 0;
            if ((st = sc_json_num(r, file, path, "bytes", 1, 1, 1e15, &bytes, err)))
                return st;
            lpoint p = {lk, cop, cop == 3 ? 2 : (int)ranks, bytes, t};
            if (push_lp(x, p))
                return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
        }
    }
    if (x->ncp + x->nlp > MAX_POINTS)
        return sc_err(err, SC_EINVAL, "%s: more than %d points in all", file, MAX_POINTS);
    return SC_OK;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The plan a timeline names: as written, else beside the timeline. */
static sc_status open_plan(const char *tl_file, const sc_timeline *t, plan_in *pi,
                           sc_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s", t->plan_file);
    FILE *f = fopen(path, "r");
    if (!f) {
        const char *slash = strrchr(tl_file, '/');
        if (slash)
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - tl_file), tl_file,
                     sc_basename(t->plan_file));
        f = fopen(path, "r");
    }
    if (!f)
        return sc_err(err, SC_EIO, "%s: plan.file: cannot open %s", tl_file, t->plan_file);
    fclose(f);
    char dg[17];
    sc_status st = sc_plan_file_digest(path, dg, err);
    if (!st && strcmp(dg, t->plan_digest))
        st = sc_err(err, SC_EINVAL, "%s: plan.digest: %s has changed since it was run", tl_file,
                    path);
    sc_cluster pc;
    if (!st)
        st = sc_plan_load(path, &pi->plan, err);
    if (!st)
        st = sc_plan_open(pi->plan, path, &pi->model, &pc, err);
    if (st)
        return st;
    sc_plan_step_cfg(pi->plan, &pi->cfg);
    const sc_sched_impl *impl = sc_sched_find(pi->plan->schedule);
    pi->split = impl && impl->split_backward;
    pi->info = sc_calloc((size_t)(pi->cfg.pp * pi->cfg.v), sizeof *pi->info);
    if (!pi->info)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", tl_file);
    return SC_OK;
}

/* When the message a RECV op waits for was complete on its sender: the end
 * of the sender's measured send (stage `from`, microbatch mb); -1 if absent. */
static double sent_at(const sc_timeline *t, int kind, int from, int mb)
{
    for (int r = 0; r < t->n_ranks; r++)
        for (int i = 0; i < t->ranks[r].n_ops; i++) {
            const sc_tl_op *o = &t->ranks[r].ops[i];
            if (o->kind == kind && o->stage == from && o->mb == mb)
                return o->end;
        }
    return -1;
}

/* The host points of one measured plan: plans without tensor or data
 * parallelism and without recompute, whose ranks do nothing but compute,
 * send and receive. A gap between two compute ops of a rank with sends
 * between them in its schedule is the sender's host time (plus the
 * executor's own, a few microseconds) when every receive between them had
 * its message complete on the sender before the gap began (so no waiting
 * is in it). */
static sc_status host_points(ctx *x, const plan_in *pi, const sc_timeline *t, const char *file,
                             sc_error *err)
{
    const sc_step_cfg *cfg = &pi->cfg;
    if (cfg->tp != 1 || cfg->dp != 1 || cfg->recompute != SC_RECOMPUTE_NONE || cfg->pp < 2)
        return SC_OK;
    sc_sched *sched = NULL;
    sc_error e2;
    if (sc_sched_generate(pi->plan->schedule, cfg->pp, cfg->m, cfg->v, &sched, &e2))
        return SC_OK; /* the plan's own check reports a bad schedule */
    sc_status st = SC_OK;
    for (int r = 0; r < t->n_ranks && !st; r++) {
        const sc_tl_rank *rk = &t->ranks[r];
        int p = rk->pp, n, peer_node = -1;
        if (p < 0 || p >= cfg->pp) {
            st = sc_err(err, SC_EINVAL, "%s: ranks[%d].pp: %d is not a pipeline position of the "
                        "plan (pp %d)", file, r, p, cfg->pp);
            break;
        }
        const sc_sched_op *ops = sc_sched_rank_ops(sched, p, &n);
        const sc_tl_op *prev = NULL; /* the measured compute op matched last */
        int sends = 0, waited = 0;
        double ready = 0; /* when the messages received since prev were complete */
        int mi = 0;       /* cursor into the rank's measured ops */
        for (int i = 0; i < n && !st; i++) {
            int kind = ops[i].kind, s = sc_sched_stage(sched, p, ops[i].chunk);
            if (kind == SC_OP_RECV_F || kind == SC_OP_RECV_B) {
                int fwd = kind == SC_OP_RECV_F;
                double at = sent_at(t, fwd ? SC_OP_SEND_F : SC_OP_SEND_B, fwd ? s - 1 : s + 1,
                                    ops[i].mb);
                if (at < 0)
                    waited = 1;
                else if (at > ready)
                    ready = at;
                continue;
            }
            if (kind == SC_OP_SEND_F || kind == SC_OP_SEND_B) {
                sends++;
                for (int q = 0; q < t->n_ranks; q++)
                    if (t->ranks[q].pp == ops[i].peer)
                        peer_node = t->ranks[q].node;
                continue;
            }
            if (kind != SC_OP_F && kind != SC_OP_B && kind != SC_OP_W)
                continue;
            /* the next measured compute op, and the bytes posted between
             * the two (sends start when their producer ends) */
            const sc_tl_op *cur = NULL;
            for (; mi < rk->n_ops && !cur; mi++)
                if (rk->ops[mi].stream == SC_STREAM_COMPUTE && rk->ops[mi].kind == kind)
                    cur = &rk->ops[mi];
            if (!cur)
                break; /* the measurement ends early: use what matched */
            double sent = 0;
            for (int q = 0; prev && q < rk->n_ops; q++) {
                const sc_tl_op *o = &rk->ops[q];
                if ((o->kind == SC_OP_SEND_F || o->kind == SC_OP_SEND_B) &&
                    o->start >= prev->end - 1e-9 && o->start <= cur->start)
                    sent += o->bytes;
            }
            if (prev && sends > 0 && !waited && ready <= prev->end && sent > 0 &&
                peer_node >= 0) {
                hpoint h = {peer_node != rk->node ? SC_LINK_INTER : SC_LINK_INTRA, sent,
                            fmax(0, cur->start - prev->end)};
                if (x->nhp == x->caphp) {
                    int nc = x->caphp ? 2 * x->caphp : 64;
                    hpoint *nh = sc_realloc(x->hp, sizeof *nh * (size_t)nc);
                    if (!nh) {
                        st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
                        break;
                    }
                    x->hp = nh;
                    x->caphp = nc;
                }
                x->hp[x->nhp++] = h;
            }
            prev = cur;
            sends = waited = 0;
            ready = 0;
        }
    }
    sc_sched_free(sched);
    return st;
}

static sc_status read_timeline(ctx *x, const cJSON *j, const char *file, sc_error *err)
{
    sc_timeline *t;
    sc_status st = sc_timeline_from_json(j, file, &t, err);
    if (st)
        return st;
    if (strcmp(t->source, "exec")) {
        sc_timeline_free(t);
        return sc_err(err, SC_EINVAL, "%s: source: a simulated timeline is no measurement", file);
    }
    if (!t->plan_file[0]) {
        sc_timeline_free(t);
        return sc_err(err, SC_EINVAL, "%s: plan: missing (which plan was measured?)", file);
    }
    if (!sc_calib_device_matches(x->base, t->device)) {
        st = sc_err(err, SC_EINVAL, "%s: device: measured on \"%s\", not on %s's %s", file,
                    t->device, x->base->name, x->base->gpu.name);
        sc_timeline_free(t);
        return st;
    }
    plan_in *np = sc_realloc(x->plans, sizeof *np * (size_t)(x->nplans + 1));
    if (!np) {
        sc_timeline_free(t);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    x->plans = np;
    plan_in *pi = &x->plans[x->nplans];
    memset(pi, 0, sizeof *pi);
    x->nplans++;
    st = open_plan(file, t, pi, err);
    if (!st && t->n_ranks != pi->cfg.dp * pi->cfg.tp * pi->cfg.pp)
        st = sc_err(err, SC_EINVAL, "%s: ranks: %d ranks measured, the plan has dp·tp·pp = %d",
                    file, t->n_ranks, pi->cfg.dp * pi->cfg.tp * pi->cfg.pp);
    if (!st)
        st = check_dtype(x, pi->model->dtype, file, err);
    /* the median duration of each (stage, kind) over ranks and microbatches */
    int S = st ? 0 : pi->cfg.pp * pi->cfg.v;
    const int kinds[] = {SC_OP_F, SC_OP_B, SC_OP_W, SC_OP_RECOMPUTE, SC_OP_OPTIMIZER};
    for (int s = 0; s < S && !st; s++) {
        for (int k = 0; k < 5 && !st; k++) {
            if (kinds[k] == SC_OP_OPTIMIZER && s >= pi->cfg.pp)
                continue; /* the optimizer op carries the pipeline position */
            int n = 0, cap = 0;
            double *v = NULL;
            for (int r = 0; r < t->n_ranks && !st; r++)
                for (int i = 0; i < t->ranks[r].n_ops; i++) {
                    const sc_tl_op *o = &t->ranks[r].ops[i];
                    if (o->stage != s || o->kind != kinds[k] || o->stream != SC_STREAM_COMPUTE)
                        continue;
                    if (n == cap) {
                        cap = cap ? 2 * cap : 64;
                        double *nv = sc_realloc(v, sizeof *nv * (size_t)cap);
                        if (!nv) {
                            st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
                            break;
                        }
                        v = nv;
                    }
                    v[n++] = o->end - o->start;
                }
            if (!st && n > 0) {
                qsort(v, (size_t)n, sizeof *v, cmp_d);
                double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
                cpoint p = {x->nplans - 1, s, kinds[k], 0, 0, med};
                if (med > 0 && push_cp(x, p))
                    st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
            }
            sc_free(v);
        }
    }
    if (!st)
        st = host_points(x, pi, t, file, err);
    sc_timeline_free(t);
    return st;
}

/* ---- the compute fit ---------------------------------------------------------------- */

static double logistic(double v) { return 1 / (1 + exp(-v)); }
static double logit(double p) { return log(p / (1 - p)); }

/* Which parameters a stage of the fit varies, in x order. */
enum { P_EFF = 1, P_FHALF = 2, P_OVH = 4, P_MEM = 8, P_BWD = 16 };

/* The cluster for parameters x (the active ones, in the order above) on
 * top of the current estimate c->cur. */
static void trial_cluster(const ctx *c, const double *x, sc_cluster *out)
{
    *out = c->cur;
    out->nodes = SC_CLUSTER_MAX_NODES; /* room for any plan's ranks */
    int i = 0;
    if (c->active & P_EFF)
        out->eff.eff_max[c->dt] = fmin(1, fmax(1e-4, logistic(x[i++])));
    if (c->active & P_FHALF)
        out->eff.f_half[c->dt] = exp(x[i++]);
    if (c->active & P_OVH)
        out->eff.op_overhead_s = exp(x[i++]);
    if (c->active & P_MEM)
        out->eff.memory_bw = fmin(1, fmax(1e-4, logistic(x[i++])));
    if (c->active & P_BWD)
        out->eff.bwd_factor = fmin(10, fmax(0.1, exp(x[i++])));
}

/* Predictions of every compute point under cluster cl; 0 or -1. A gemm
 * size is one kernel: no executor overhead. */
static int predict(ctx *c, const sc_cluster *cl, double *pred)
{
    for (int p = 0; p < c->nplans; p++) {
        sc_error e;
        if (sc_step_stage_infos(c->plans[p].model, cl, &c->plans[p].cfg, c->plans[p].info, &e))
            return -1;
    }
    double peak = cl->gpu.peak_flops[c->dt], hbm = cl->gpu.hbm_bytes_per_s;
    for (int i = 0; i < c->ncp; i++) {
        const cpoint *q = &c->cp[i];
        if (q->plan < 0) {
            double eff = cl->eff.eff_max[c->dt];
            double tc = (q->flop + cl->eff.f_half[c->dt]) / (peak * eff);
            double tm = q->bytes / (hbm * cl->eff.memory_bw);
            pred[i] = tc > tm ? tc : tm;
            continue;
        }
        const plan_in *pi = &c->plans[q->plan];
        const sc_stage_info *in = &pi->info[q->stage];
        if (q->kind == SC_OP_OPTIMIZER) { /* stage holds the pipeline position */
            double params = 0, w, g, o;
            sc_cost_state_bytes(c->dt, &w, &g, &o);
            for (int ch = 0; ch < pi->cfg.v; ch++)
                params += pi->info[ch * pi->cfg.pp + q->stage].param_bytes / w;
            if (pi->cfg.zero >= 1)
                params /= pi->cfg.dp;
            pred[i] = sc_cost_optimizer_time(cl, c->dt, params);
            continue;
        }
        switch (q->kind) {
        case SC_OP_F: pred[i] = in->fwd_s; break;
        case SC_OP_B: pred[i] = pi->split ? in->bwd_s / 2 : in->bwd_s; break;
        case SC_OP_W: pred[i] = in->bwd_s / 2; break;
        default: pred[i] = in->recompute_s; break;
        }
    }
    return 0;
}

static int resid_f(const gsl_vector *xv, void *data, gsl_vector *f)
{
    ctx *c = data;
    double x[4];
    for (size_t i = 0; i < xv->size; i++)
        x[i] = gsl_vector_get(xv, i);
    sc_cluster cl;
    trial_cluster(c, x, &cl);
    double *pred = sc_malloc(sizeof *pred * (size_t)c->ncp);
    if (!pred || predict(c, &cl, pred)) {
        sc_free(pred);
        c->fails++;
        return GSL_EDOM;
    }
    for (int k = 0; k < c->nidx; k++)
        gsl_vector_set(f, (size_t)k, pred[c->idx[k]] / c->cp[c->idx[k]].meas - 1);
    sc_free(pred);
    return GSL_SUCCESS;
}

typedef struct stats {
    double r2, mape, rel_sd;
} stats;

static stats point_stats(const double *pred, const double *meas, int n)
{
    double mean = 0, ssr = 0, sst = 0, mape = 0, rm = 0, rv = 0;
    for (int i = 0; i < n; i++)
        mean += meas[i] / n;
    for (int i = 0; i < n; i++) {
        double r = pred[i] / meas[i] - 1;
        ssr += (pred[i] - meas[i]) * (pred[i] - meas[i]);
        sst += (meas[i] - mean) * (meas[i] - mean);
        mape += fabs(r) / n;
        rm += r / n;
    }
    for (int i = 0; i < n; i++) {
        double r = pred[i] / meas[i] - 1;
        rv += (r - rm) * (r - rm);
    }
    stats s = {sst > 0 ? 1 - ssr / sst : 1, mape, n > 1 ? sqrt(rv / (n - 1)) : 0};
    return s;
}

/* One stage of the compute fit: the parameters in `active` over the points
 * of the kinds chosen (gemm sizes and/or measured ops), starting from
 * c->cur, which it updates. se[] receives the standard errors of the
 * active parameters in their own units. */
static sc_status fit_stage(ctx *c, int active, int gemm, int ops, double *se, sc_error *err)
{
    c->active = active;
    c->nidx = 0;
    for (int i = 0; i < c->ncp; i++)
        if ((c->cp[i].plan < 0 && gemm) || (c->cp[i].plan >= 0 && ops))
            c->idx[c->nidx++] = i;
    int p = 0;
    double x0[5];
    const sc_cluster_eff *e0 = &c->cur.eff;
    if (active & P_EFF)
        x0[p++] = logit(fmin(0.999, fmax(1e-3, e0->eff_max[c->dt])));
    if (active & P_FHALF)
        x0[p++] = log(fmax(1.0, e0->f_half[c->dt]));
    if (active & P_OVH)
        x0[p++] = log(fmax(1e-9, e0->op_overhead_s));
    if (active & P_MEM)
        x0[p++] = logit(fmin(0.999, fmax(1e-3, e0->memory_bw)));
    if (active & P_BWD)
        x0[p++] = log(e0->bwd_factor > 0 ? e0->bwd_factor : 1);
    if (c->nidx < p + 1)
        return sc_err(err, SC_EINVAL,
                      "calibrate: too few %s points to fit %s: %d (need at least %d; %s)",
                      gemm ? "gemm" : "measured op", sc_dtype_name(c->dt), c->nidx, p + 1,
                      gemm ? "bench gemm over more sizes"
                           : "a point is one op kind of one stage of one plan: add a plan "
                             "with another microbatch size or more stages");
    gsl_multifit_nlinear_fdf fdf = {resid_f, NULL, NULL, (size_t)c->nidx, (size_t)p, c, 0, 0, 0};
    gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, (size_t)c->nidx, (size_t)p);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)p, (size_t)p);
    if (!w || !cov) {
        if (w)
            gsl_multifit_nlinear_free(w);
        if (cov)
            gsl_matrix_free(cov);
        return sc_err(err, SC_ENOMEM, "calibrate: out of memory");
    }
    gsl_vector_view xv = gsl_vector_view_array(x0, (size_t)p);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int info = 0, gs = gsl_multifit_nlinear_init(&xv.vector, &fdf, w);
    if (!gs)
        gs = gsl_multifit_nlinear_driver(300, 1e-12, 1e-12, 0, NULL, NULL, &info, w);
    sc_status st = SC_OK;
    if (gs && gs != GSL_EMAXITER) {
        st = sc_err(err, SC_EINVAL, "calibrate: the compute fit failed: %s", gsl_strerror(gs));
    } else {
        double x[5];
        for (int i = 0; i < p; i++)
            x[i] = gsl_vector_get(w->x, (size_t)i);
        gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
        double chi2;
        gsl_blas_ddot(w->f, w->f, &chi2);
        double s2 = c->nidx > p ? chi2 / (c->nidx - p) : 0;
        sc_cluster cl;
        trial_cluster(c, x, &cl);
        int i = 0;
        for (int bit = 1; bit <= P_BWD; bit <<= 1) {
            if (!(active & bit))
                continue;
            double sx = sqrt(fmax(0, s2 * gsl_matrix_get(cov, (size_t)i, (size_t)i)));
            double v = bit == P_EFF     ? cl.eff.eff_max[c->dt]
                       : bit == P_FHALF ? cl.eff.f_half[c->dt]
                       : bit == P_OVH   ? cl.eff.op_overhead_s
                       : bit == P_MEM   ? cl.eff.memory_bw
                                        : cl.eff.bwd_factor;
            /* delta method through the transform */
            se[i] = bit == P_EFF || bit == P_MEM ? v * (1 - v) * sx : v * sx;
            i++;
        }
        cl.nodes = c->cur.nodes;
        c->cur = cl;
    }
    gsl_set_error_handler(old);
    gsl_multifit_nlinear_free(w);
    gsl_matrix_free(cov);
    return st;
}

/* Two stages, because over times alone the overhead and f_half only ever
 * appear as o + f_half/(peak·eff) and cannot be told apart: (1) the gemm
 * sizes (single kernels, no executor overhead) fit eff_max and f_half;
 * (2) the measured ops fit the executor's per-op overhead and the HBM
 * efficiency with that curve (and eff_max too when there are no gemm
 * sizes). */
static sc_status fit_compute(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    int ngemm = 0, nops = 0;
    for (int i = 0; i < c->ncp; i++)
        c->cp[i].plan < 0 ? ngemm++ : nops++;
    c->idx = sc_malloc(sizeof(int) * (size_t)c->ncp);
    double *meas = sc_malloc(sizeof(double) * (size_t)c->ncp);
    double *pred = sc_malloc(sizeof(double) * (size_t)c->ncp);
    if (!c->idx || !meas || !pred) {
        sc_free(c->idx);
        sc_free(meas);
        sc_free(pred);
        c->idx = NULL;
        return sc_err(err, SC_ENOMEM, "calibrate: out of memory");
    }
    for (int i = 0; i < c->ncp; i++)
        meas[i] = c->cp[i].meas;
    c->cur = *out;
    sc_cluster b0 = *c->base;
    b0.nodes = SC_CLUSTER_MAX_NODES;
    double before = predict(c, &b0, pred) ? -1 : point_stats(pred, meas, c->ncp).mape;
    double se_curve[2] = {0, 0}, se_ops[4] = {0, 0, 0, 0};
    sc_status st = SC_OK;
    int fitted_mem = 0;
    if (ngemm > 0)
        st = fit_stage(c, P_EFF | P_FHALF, 1, 0, se_curve, err);
    if (!st && nops > 0) {
        int act = P_OVH | P_MEM | P_BWD | (ngemm > 0 ? 0 : P_EFF);
        st = fit_stage(c, act, 0, 1, se_ops, err);
        fitted_mem = 1;
        if (!st && !ngemm)
            se_curve[0] = se_ops[0];
    }
    if (!st) {
        sc_cluster cl = c->cur;
        cl.nodes = SC_CLUSTER_MAX_NODES;
        predict(c, &cl, pred);
        stats all = point_stats(pred, meas, c->ncp);
        double e = c->cur.eff.eff_max[c->dt], fh = c->cur.eff.f_half[c->dt];
        out->eff.eff_max[c->dt] = e;
        out->eff.f_half[c->dt] = fh;
        out->eff.op_overhead_s = c->cur.eff.op_overhead_s;
        out->eff.memory_bw = c->cur.eff.memory_bw;
        out->eff.bwd_factor = c->cur.eff.bwd_factor;
        out->eff.fits.compute[c->dt] =
            (sc_fit_stats){c->ncp, all.r2, all.mape, all.rel_sd, {se_curve[0], se_curve[1]}};
        double ovh_se = nops > 0 ? se_ops[ngemm > 0 ? 0 : 1] : 0;
        double mem_se = nops > 0 ? se_ops[ngemm > 0 ? 1 : 2] : 0;
        if (nops > 0)
            out->eff.fits.overhead = (sc_fit_stats){nops, all.r2, all.mape, all.rel_sd,
                                                    {ovh_se, mem_se}};
        if (rep) {
            sc_calib_fit *f = &rep->fits[rep->n_fits++];
            *f = (sc_calib_fit){"", c->ncp, e, fh, se_curve[0], se_curve[1], all.r2, all.mape,
                                all.rel_sd, before};
            snprintf(f->what, sizeof f->what, "compute %s", sc_dtype_name(c->dt));
            rep->overhead_s = out->eff.op_overhead_s;
            rep->overhead_se = ovh_se;
            rep->memory_bw = out->eff.memory_bw;
            rep->memory_bw_se = fitted_mem ? mem_se : 0;
            rep->bwd_factor = out->eff.bwd_factor;
            rep->bwd_factor_se = nops > 0 ? se_ops[ngemm > 0 ? 2 : 3] : 0;
        }
    }
    sc_free(c->idx);
    c->idx = NULL;
    sc_free(meas);
    sc_free(pred);
    return st;
}

/* ---- the link fits ------------------------------------------------------------------ */

static void ring_terms(const lpoint *q, double *steps, double *vol)
{
    double n = q->n;
    switch (q->op) {
    case 0: *steps = 2 * (n - 1); *vol = 2 * (n - 1) / n * q->bytes; break;
    case 3: *steps = 1; *vol = q->bytes; break;
    default: *steps = n - 1; *vol = (n - 1) / n * q->bytes; break;
    }
}

/* Weighted least squares of t = steps·alpha + vol/beta over the points
 * that pass filter (link, op or -1 for all). 0 on success. */
static int fit_alpha_beta(const ctx *c, int link, int op, sc_calib_fit *f)
{
    int n = 0;
    for (int i = 0; i < c->nlp; i++)
        n += c->lp[i].link == link && (op < 0 || c->lp[i].op == op);
    if (n < 3)
        return -1;
    gsl_matrix *X = gsl_matrix_alloc((size_t)n, 2), *cov = gsl_matrix_alloc(2, 2);
    gsl_vector *y = gsl_vector_alloc((size_t)n), *wt = gsl_vector_alloc((size_t)n),
               *cc = gsl_vector_alloc(2);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc((size_t)n, 2);
    double *pred = sc_malloc(sizeof(double) * (size_t)n), *meas = sc_malloc(sizeof(double) * (size_t)n);
    int rc = -1;
    if (X && cov && y && wt && cc && ws && pred && meas) {
        int k = 0;
        for (int i = 0; i < c->nlp; i++) {
            const lpoint *q = &c->lp[i];
            if (q->link != link || (op >= 0 && q->op != op))
                continue;
            double s, v;
            ring_terms(q, &s, &v);
            gsl_matrix_set(X, (size_t)k, 0, s);
            gsl_matrix_set(X, (size_t)k, 1, v);
            gsl_vector_set(y, (size_t)k, q->t);
            gsl_vector_set(wt, (size_t)k, 1 / (q->t * q->t));
            meas[k++] = q->t;
        }
        double chi2;
        gsl_error_handler_t *old = gsl_set_error_handler_off();
        if (!gsl_multifit_wlinear(X, wt, y, cc, cov, &chi2, ws)) {
            double a = gsl_vector_get(cc, 0), ib = gsl_vector_get(cc, 1);
            if (a < 0)
                a = 0;
            if (ib > 0) {
                for (int i = 0; i < n; i++)
                    pred[i] = a * gsl_matrix_get(X, (size_t)i, 0) + ib * gsl_matrix_get(X, (size_t)i, 1);
                stats s = point_stats(pred, meas, n);
                double s2 = n > 2 ? chi2 / (n - 2) : 0;
                f->n = n;
                f->a = a;
                f->b = 1 / ib;
                f->se_a = sqrt(fmax(0, s2 * gsl_matrix_get(cov, 0, 0)));
                f->se_b = sqrt(fmax(0, s2 * gsl_matrix_get(cov, 1, 1))) / (ib * ib);
                f->r2 = s.r2;
                f->mape = s.mape;
                f->rel_sd = s.rel_sd;
                rc = 0;
            }
        }
        gsl_set_error_handler(old);
    }
    if (X)
        gsl_matrix_free(X);
    if (cov)
        gsl_matrix_free(cov);
    if (y)
        gsl_vector_free(y);
    if (wt)
        gsl_vector_free(wt);
    if (cc)
        gsl_vector_free(cc);
    if (ws)
        gsl_multifit_linear_free(ws);
    sc_free(pred);
    sc_free(meas);
    return rc;
}

static sc_status fit_links(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    static const char *const lname[] = {"intra", "inter"};
    for (int l = 0; l < SC_LINK_N; l++) {
        int n = 0;
        for (int i = 0; i < c->nlp; i++)
            n += c->lp[i].link == l;
        if (n == 0)
            continue;
        sc_calib_fit f = {0}, pooled = {0};
        if (fit_alpha_beta(c, l, -1, &pooled))
            return sc_err(err, SC_EINVAL,
                          "calibrate: too few or degenerate %s communication points to fit "
                          "alpha and beta: %d (need at least 3 sizes)",
                          lname[l], n);
        /* each collective's own fit (ok[op]), once */
        sc_calib_fit g[4];
        memset(g, 0, sizeof g);
        int ok[4], nops = 0;
        for (int op = 0; op < 4; op++)
            nops += ok[op] = !fit_alpha_beta(c, l, op, &g[op]);
        /* The simulator moves collectives at one beta per link class;
         * training traffic is dominated by allreduces (gradients, tensor
         * parallelism), so their own fit sets the class when there is one,
         * and the pooled fit only otherwise. */
        int from_allreduce = ok[0];
        f = from_allreduce ? g[0] : pooled;
        /* the error of the input cluster's alpha, beta on the same points */
        double nominal = l == SC_LINK_INTRA
                             ? c->base->intra.bytes_per_s
                             : c->base->inter.nics_per_node * c->base->inter.nic_bytes_per_s;
        /* the input cluster's error on the points of the fit that is used */
        double a0 = c->base->eff.alpha_s[l], b0 = nominal * c->base->eff.bw_eff[l], m0 = 0;
        int k = 0;
        for (int i = 0; i < c->nlp; i++) {
            const lpoint *q = &c->lp[i];
            if (q->link != l || (from_allreduce && q->op != 0))
                continue;
            double sv, v;
            ring_terms(q, &sv, &v);
            m0 += fabs((sv * a0 + v / b0) / q->t - 1);
            k++;
        }
        m0 = k ? m0 / k : 0;
        f.mape_before = m0;
        /* Point-to-point messages get their own share of the link when
         * both an allreduce fit and a p2p fit exist (a collective algorithm
         * may reach a different share than one message does) */
        int p2p = from_allreduce && ok[3];
        const sc_calib_fit fp = g[3];
        out->eff.alpha_s[l] = f.a;
        double top = fmax(f.b, p2p ? fp.b : 0);
        if (top > nominal) {
            if (l == SC_LINK_INTRA)
                out->intra.bytes_per_s = top;
            else
                out->inter.nic_bytes_per_s = top / (c->base->inter.nics_per_node > 0
                                                         ? c->base->inter.nics_per_node
                                                         : 1);
            if (rep) {
                size_t len = strlen(rep->notes);
                snprintf(rep->notes + len, sizeof rep->notes - len,
                         "%s%s: measured %.3g B/s above the nominal %.3g B/s; nominal raised",
                         len ? "; " : "", lname[l], top, nominal);
            }
            nominal = top;
        }
        out->eff.bw_eff[l] = fmin(1, fmax(1e-4, f.b / nominal));
        out->eff.fits.link[l] = (sc_fit_stats){f.n, f.r2, f.mape, f.rel_sd,
                                               {f.se_a, f.se_b / nominal}};
        out->eff.p2p_bw_eff[l] = 0;
        out->eff.fits.link_p2p[l] = (sc_fit_stats){0};
        if (p2p) {
            out->eff.p2p_bw_eff[l] = fmin(1, fmax(1e-4, fp.b / nominal));
            out->eff.fits.link_p2p[l] = (sc_fit_stats){fp.n, fp.r2, fp.mape, fp.rel_sd,
                                                       {fp.se_a, fp.se_b / nominal}};
        }
        if (rep && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
            sc_calib_fit shown = f;
            snprintf(shown.what, sizeof shown.what, "%s (used%s)", lname[l],
                     p2p ? ", coll." : "");
            rep->fits[rep->n_fits++] = shown;
            if (nops > 1 && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
                pooled.mape_before = -1;
                snprintf(pooled.what, sizeof pooled.what, "%s (all pooled)", lname[l]);
                rep->fits[rep->n_fits++] = pooled;
            }
        }
        for (int op = 0; op < 4 && rep && nops > 1; op++) {
            if (rep->n_fits < (int)SC_ARRAY_LEN(rep->fits) && ok[op]) {
                sc_calib_fit shown = g[op];
                snprintf(shown.what, sizeof shown.what, "%s %s%s", lname[l], comm_ops[op],
                         p2p && op == 3 ? " (used)" : "");
                shown.mape_before = -1;
                rep->fits[rep->n_fits++] = shown;
            }
        }
    }
    return SC_OK;
}

/* The sender's host time per byte of each link class, h = sum(gap) /
 * sum(bytes) over the host points (least squares through the origin with
 * weights 1/bytes), when there are at least 3; otherwise the base's value
 * stays. */
static void fit_host(ctx *c, sc_cluster *out, sc_calib_report *rep)
{
    static const char *const lname[] = {"intra", "inter"};
    for (int l = 0; l < SC_LINK_N; l++) {
        int n = 0;
        double sg = 0, sb = 0;
        for (int i = 0; i < c->nhp; i++)
            if (c->hp[i].link == l) {
                n++;
                sg += c->hp[i].gap;
                sb += c->hp[i].bytes;
            }
        if (n < 3 || !(sb > 0))
            continue;
        double h = sg / sb, ss = 0, mape = 0, rm = 0, rv = 0, mean = sg / n, sst = 0, ssr = 0;
        double bmin = INFINITY, bmax = 0;
        for (int i = 0; i < c->nhp; i++) {
            const hpoint *q = &c->hp[i];
            if (q->link != l)
                continue;
            bmin = fmin(bmin, q->bytes);
            bmax = fmax(bmax, q->bytes);
            double pred = h * q->bytes, res = q->gap - pred;
            ss += res * res / q->bytes;
            ssr += res * res;
            sst += (q->gap - mean) * (q->gap - mean);
            if (q->gap > 0) {
                double r = pred / q->gap - 1;
                mape += fabs(r) / n;
                rm += r / n;
            }
        }
        for (int i = 0; i < c->nhp; i++) {
            const hpoint *q = &c->hp[i];
            if (q->link == l && q->gap > 0) {
                double r = h * q->bytes / q->gap - 1;
                rv += (r - rm) * (r - rm);
            }
        }
        h = fmin(h, 1e-6);
        out->eff.p2p_host_s_per_byte[l] = h;
        double se = n > 1 ? sqrt(ss / (n - 1) / sb) : 0;
        /* R² means something only when the message sizes vary (with one
         * size no line beats the mean): 0 in the file, NaN in the report */
        int sized = bmax > bmin * (1 + 1e-9);
        double r2 = sized && sst > 0 ? 1 - ssr / sst : 0;
        out->eff.fits.host[l] = (sc_fit_stats){n, r2, mape, n > 1 ? sqrt(rv / (n - 1)) : 0,
                                               {0, se}};
        if (rep && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
            sc_calib_fit f = {0};
            f.n = n;
            f.b = h;
            f.se_b = se;
            f.r2 = sized ? r2 : NAN;
            f.mape = mape;
            f.rel_sd = out->eff.fits.host[l].rel_sd;
            f.mape_before = -1;
            snprintf(f.what, sizeof f.what, "%s host", lname[l]);
            rep->fits[rep->n_fits++] = f;
        }
    }
}

/* ---- driver ------------------------------------------------------------------------- */

sc_status sc_calibrate(const sc_cluster *base, const char *const *files, int nfiles,
                       const char *date, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    if (nfiles < 1)
        return sc_err(err, SC_EINVAL, "calibrate: no input files");
    if (nfiles > SC_CLUSTER_MAX_INPUTS)
        return sc_err(err, SC_EINVAL, "calibrate: at most %d input files",
                      SC_CLUSTER_MAX_INPUTS);
    ctx c = {.base = base, .dt = (sc_dtype)-1};
    sc_cluster res = *base;
    memset(&res.eff.fits, 0, sizeof res.eff.fits);
    if (rep)
        memset(rep, 0, sizeof *rep);
    sc_status st = SC_OK;
    for (int i = 0; i < nfiles && !st; i++) {
        cJSON *j;
        st = sc_json_load(files[i], &j, err);
        if (st)
            break;
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
        const char *fs = cJSON_IsString(fmt) ? fmt->valuestring : "";
        if (!strcmp(fs, "stagecraft.bench/1"))
            st = read_bench(&c, j, files[i], err);
        else if (!strcmp(fs, "stagecraft.timeline/1"))
            st = read_timeline(&c, j, files[i], err);
        else
            st = sc_err(err, SC_EINVAL,
                        "%s: format: \"%.64s\" is neither a bench (stagecraft.bench/1) nor a "
                        "measured timeline (stagecraft.timeline/1)",
                        files[i], fs);
        if (!st) {
            snprintf(res.eff.fits.input[i], sizeof res.eff.fits.input[i], "%s",
                     sc_basename(files[i]));
            st = sc_json_digest(j, res.eff.fits.digest[i]);
            if (st)
                st = sc_err(err, SC_ENOMEM, "%s: out of memory", files[i]);
        }
        cJSON_Delete(j);
    }
    res.eff.fits.n_inputs = nfiles;
    if (!st && c.ncp == 0 && c.nlp == 0)
        st = sc_err(err, SC_EINVAL, "calibrate: the inputs hold no measurements");
    if (!st && c.ncp > 0)
        st = fit_compute(&c, &res, rep, err);
    if (!st)
        st = fit_links(&c, &res, rep, err);
    if (!st)
        fit_host(&c, &res, rep);
    if (!st) {
        char now[32];
        if (!date) {
            time_t tt = time(NULL);
            struct tm tmv;
            gmtime_r(&tt, &tmv);
            strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tmv);
            date = now;
        }
        snprintf(res.eff.fits.date, sizeof res.eff.fits.date, "%s", date);
        res.eff.fits.present = 1;
        snprintf(res.eff.provenance, sizeof res.eff.provenance,
                 "calibrated %s from %d file%s by stagecraft calibrate (was: %.400s)", date, nfiles,
                 nfiles == 1 ? "" : "s", base->eff.provenance);
        st = sc_cluster_validate(&res, "calibrate", err);
    }
    if (rep) {
        rep->n_files = nfiles;
        rep->n_comm = c.nlp;
        for (int i = 0; i < c.ncp; i++)
            c.cp[i].plan < 0 ? rep->n_gemm++ : rep->n_ops++;
    }
    for (int p = 0; p < c.nplans; p++) {
        sc_plan_free(c.plans[p].plan);
        sc_model_free(c.plans[p].model);
        sc_free(c.plans[p].info);
    }
    sc_free(c.plans);
    sc_free(c.cp);
    sc_free(c.lp);
    sc_free(c.hp);
    if (st)
        return st;
    *out = res;
    return SC_OK;
}
