/* calibrate.c - GSL fits of the cluster's efficiency parameters to point
 * arrays; see calibrate.h for what is fitted and how. */
#include "calibrate.h"
#include "cost.h"
#include "cost_int.h"
#include "timeline.h"

#include <assert.h>
#include <ctype.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The compute points are numbered gemm first: point i < n_gemm is gemm[i],
 * point n_gemm + j is ops[j]. */
typedef struct ctx {
    const sc_cluster *base;
    const sc_calib_points *pts;
    sc_dtype dt;
    int ncp;               /* n_gemm + n_ops */
    double *meas;          /* per compute point */
    sc_stage_info **info;  /* per plan, pp·v: scratch of predict */
    sc_cluster cur;        /* the estimate so far */
    int active;            /* P_* of the stage being fitted */
    int ops_active;        /* P_* the measured ops' stage fitted (0: none) */
    int kern_fitted;       /* fit_kernels set kernel_s, sustained and memory_bw */
    int *idx;              /* the points of the stage */
    int nidx;
    int fails;             /* evaluations that could not compute a prediction */
    /* per link class and op, the sizes [lo, hi] of the plans' regime the warm
     * links were fitted over (keep_plan_regimes; hi 0: all sizes); NULL: none */
    double (*regime)[SC_CALIB_COMM_N][2];
} ctx;

static const char *const comm_ops[SC_CALIB_COMM_N] = {"allreduce", "reducescatter", "allgather",
                                                      "p2p"};

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

/* Appends "; TEXT" (or TEXT) to the report's notes. */
static void add_note(sc_calib_report *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_note(sc_calib_report *rep, const char *fmt, ...)
{
    if (!rep)
        return;
    size_t len = strlen(rep->notes);
    if (len + 3 >= sizeof rep->notes)
        return;
    if (len) {
        memcpy(rep->notes + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->notes + len, sizeof rep->notes - len, fmt, ap);
    va_end(ap);
}

/* ---- gates --------------------------------------------------------------------------- */

/* The distinct names of files[idx[0..n)] (an index out of range is skipped),
 * comma-separated, in first-seen order. */
static void file_list(const sc_calib_points *pts, const int *idx, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n && pts->files; i++) {
        int f = idx[i], seen = 0;
        if (f < 0 || f >= pts->n_files)
            continue;
        for (int k = 0; k < i && !seen; k++)
            seen = idx[k] == f;
        if (seen)
            continue;
        int w = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", pts->files[f]);
        if (w < 0 || (size_t)w >= cap - len) {
            out[len] = '\0';
            break;
        }
        len += (size_t)w;
    }
}

/* Records one verdict in rep (when there is room). */
static void gate(sc_calib_report *rep, const char *what, const char *files, const char *name,
                 double value, double limit, int failed, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));
static void gate(sc_calib_report *rep, const char *what, const char *files, const char *name,
                 double value, double limit, int failed, const char *fix, const char *fmt, ...)
{
    if (rep->n_gates >= SC_CALIB_MAX_GATES) {
        rep->n_failed += failed;
        return;
    }
    sc_calib_gate *g = &rep->gates[rep->n_gates++];
    memset(g, 0, sizeof *g);
    snprintf(g->what, sizeof g->what, "%s", what);
    snprintf(g->files, sizeof g->files, "%s", files ? files : "");
    snprintf(g->gate, sizeof g->gate, "%s", name);
    g->value = value;
    g->limit = limit;
    g->failed = failed;
    snprintf(g->fix, sizeof g->fix, "%s", fix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->figure, sizeof g->figure, fmt, ap);
    va_end(ap);
    rep->n_failed += failed;
}

void sc_calib_gate_line(const sc_calib_gate *g, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s: %s %s (limit %.4g)", g->files, g->files[0] ? ": " : "",
             g->what, g->gate, g->figure, g->limit);
}

/* The gates every fit gets: points, R² (unless r2 is NaN), MAPE. */
static void fit_gates(sc_calib_report *rep, const char *what, const char *files, int distinct,
                      int params, const char *unit, double r2, const char *mape_of, double mape,
                      double mape_max, const char *fix_points, const char *fix_fit)
{
    int need = SC_CALIB_POINTS_PER_PARAM * params;
    gate(rep, what, files, "points", distinct, need, distinct < need, fix_points,
         "%d distinct %s for %d parameter%s (need %d)", distinct, unit, params,
         params == 1 ? "" : "s", need);
    if (!isnan(r2))
        gate(rep, what, files, "r2", r2, SC_CALIB_R2_FLOOR, !(r2 >= SC_CALIB_R2_FLOOR), fix_fit,
             "R² %.4f (floor %.2f)", r2, SC_CALIB_R2_FLOOR);
    gate(rep, what, files, "mape", mape, mape_max, !(mape <= mape_max), fix_fit,
         "MAPE %.1f%%%s (ceiling %.0f%%)", 100 * mape, mape_of, 100 * mape_max);
}

/* A parameter at a limit of its fit (relative tolerance 1e-3). */
static void bound_gate(sc_calib_report *rep, const char *what, const char *files,
                       const char *param, double v, double lo, double hi, const char *fix)
{
    int at_lo = v <= lo * (1 + 1e-3), at_hi = v >= hi * (1 - 1e-3);
    /* the limit it is at, else the nearer finite one */
    double lim = at_lo ? lo : at_hi ? hi : isfinite(hi) && (!isfinite(lo) || hi - v < v - lo) ? hi : lo;
    gate(rep, what, files, "bound", v, lim, at_lo || at_hi, fix,
         "%s %.4g%s", param, v,
         at_lo ? " at its lower limit" : at_hi ? " at its upper limit" : " inside its limits");
}

/* Distinct pairs (u[i], v[i]) of n (each compared with a relative
 * tolerance of 1e-9; v may be NULL). O(n^2). */
static int same(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)); }
static int distinct(const double *u, const double *v, int n)
{
    int d = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = same(u[i], u[k]) && (!v || same(v[i], v[k]));
        d += !seen;
    }
    return d;
}

/* ---- the compute fit ---------------------------------------------------------------- */

/* The range each fitted parameter is held in (through its transform,
 * below). The efficiencies may pass 1 during the fit: a device that beats
 * its nominal figure (a CPU core's turbo clock above /proc/cpuinfo's MHz)
 * raises that figure afterwards (fit_compute), as a link faster than
 * nominal does (fit_links). A fit that ends at one of these limits found
 * no value the data supports: the "bound" gate refuses it. */
#define EFF_LO 1e-4
#define EFF_HI 100.0
#define BWD_LO 0.1
#define BWD_HI 10.0
/* The kernel-level GEMM model's parameters (efficiency.gemm), fitted through
 * logarithms: eff_max, k_half + 1, kernel_s, each held in these limits (a
 * fit ending at one is refused by the bound gate). */
#define GEMM_EFF_LO 1e-3
#define GEMM_EFF_HI 1.5
#define GEMM_KH_HI 1e5
#define GEMM_KS_LO 1e-9
#define GEMM_KS_HI 1e-2

/* Which parameters a stage of the fit varies, in x order. P_KS and P_GEFF
 * are the kernel-level model's (efficiency.gemm): the time every kernel
 * carries, and the GEMMs' eff_max; they stand in for P_OVH and P_EFF where
 * the measured plans' leaves are timed kernel by kernel (fit_compute). */
enum { P_EFF = 1, P_FHALF = 2, P_OVH = 4, P_MEM = 8, P_BWD = 16, P_KS = 32, P_GEFF = 64 };
#define P_LAST P_GEFF
#define P_MAX 7

/* How many parameters the set `active` holds. */
static int n_params(int active)
{
    int n = 0;
    for (int bit = 1; bit <= P_LAST; bit <<= 1)
        n += !!(active & bit);
    return n;
}

/* The cluster for parameters x (the active ones, in the order above) on
 * top of the current estimate c->cur. */
static void trial_cluster(const ctx *c, const double *x, sc_cluster *out)
{
    *out = c->cur;
    int i = 0;
    if (c->active & P_EFF)
        out->eff.eff_max[c->dt] = fmin(EFF_HI, fmax(EFF_LO, exp(x[i++])));
    if (c->active & P_FHALF)
        out->eff.f_half[c->dt] = exp(x[i++]);
    if (c->active & P_OVH)
        out->eff.op_overhead_s = exp(x[i++]);
    if (c->active & P_MEM)
        out->eff.memory_bw = fmin(EFF_HI, fmax(EFF_LO, exp(x[i++])));
    if (c->active & P_BWD)
        out->eff.bwd_factor = fmin(BWD_HI, fmax(BWD_LO, exp(x[i++])));
    if (c->active & P_KS)
        out->eff.gemm.kernel_s = fmin(GEMM_KS_HI, fmax(GEMM_KS_LO, exp(x[i++])));
    if (c->active & P_GEFF)
        out->eff.gemm.eff_max = fmin(GEMM_EFF_HI, fmax(GEMM_EFF_LO, exp(x[i++])));
}

/* Predictions of every compute point under cluster cl; 0 or -1 (a stage
 * that cannot be costed). A gemm point is one kernel: no executor
 * overhead. */
static int predict(ctx *c, const sc_cluster *cl, double *pred)
{
    const sc_calib_points *pts = c->pts;
    sc_cluster as_run = *cl; /* each plan's fused attention as its step ran it */
    for (int p = 0; p < pts->n_plans; p++) {
        const sc_calib_plan *pl = &pts->plans[p];
        sc_error e;
        as_run.eff.gemm.flash_gemms = pl->flash_gemms;
        if (sc_cost_stage(&as_run, pl->model, pl->part, &pl->cfg, c->info[p], &e))
            return -1;
    }
    double peak = cl->gpu.peak_flops[c->dt], hbm = cl->gpu.hbm_bytes_per_s;
    for (int i = 0; i < pts->n_gemm; i++) {
        const sc_calib_gemm *q = &pts->gemm[i];
        double eff = cl->eff.eff_max[c->dt];
        double tc = (q->flop + cl->eff.f_half[c->dt]) / (peak * eff);
        double tm = q->bytes / (hbm * cl->eff.memory_bw);
        pred[i] = tc > tm ? tc : tm;
    }
    for (int j = 0; j < pts->n_ops; j++) {
        const sc_calib_op *q = &pts->ops[j];
        const sc_calib_plan *pl = &pts->plans[q->plan];
        const sc_stage_info *info = c->info[q->plan], *in = &info[q->stage];
        double *out = &pred[pts->n_gemm + j];
        if (q->kind == SC_OP_OPTIMIZER) { /* stage holds the pipeline position */
            double params = 0, w, g, o;
            sc_cost_state_bytes(c->dt, &w, &g, &o);
            for (int ch = 0; ch < pl->v; ch++)
                params += info[ch * pl->pp + q->stage].param_bytes / w;
            if (pl->zero >= 1)
                params /= pl->dp;
            *out = sc_cost_optimizer_time(cl, c->dt, params);
            continue;
        }
        switch (q->kind) {
        case SC_OP_F: *out = in->fwd_s; break;
        case SC_OP_B: *out = pl->split ? in->bwd_s - in->bwd_w_s : in->bwd_s; break;
        case SC_OP_W: *out = in->bwd_w_s; break;
        default: *out = in->recompute_s; break;
        }
    }
    return 0;
}

static int resid_f(const gsl_vector *xv, void *data, gsl_vector *f)
{
    ctx *c = data;
    double x[P_MAX];
    for (size_t i = 0; i < xv->size && i < P_MAX; i++)
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
        gsl_vector_set(f, (size_t)k, pred[c->idx[k]] / c->meas[c->idx[k]] - 1);
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
        if ((i < c->pts->n_gemm && gemm) || (i >= c->pts->n_gemm && ops))
            c->idx[c->nidx++] = i;
    int p = 0;
    double x0[P_MAX];
    const sc_cluster_eff *e0 = &c->cur.eff;
    if (active & P_EFF)
        x0[p++] = log(fmin(1, fmax(1e-3, e0->eff_max[c->dt])));
    if (active & P_FHALF)
        x0[p++] = log(fmax(1.0, e0->f_half[c->dt]));
    if (active & P_OVH)
        x0[p++] = log(fmax(1e-9, e0->op_overhead_s));
    if (active & P_MEM)
        x0[p++] = log(fmin(1, fmax(1e-3, e0->memory_bw)));
    if (active & P_BWD)
        x0[p++] = log(e0->bwd_factor > 0 ? e0->bwd_factor : 1);
    if (active & P_KS)
        x0[p++] = log(fmax(1e-7, e0->gemm.kernel_s));
    if (active & P_GEFF)
        x0[p++] = log(fmin(1, fmax(0.05, e0->gemm.eff_max)));
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
        double x[P_MAX];
        for (int i = 0; i < p; i++)
            x[i] = gsl_vector_get(w->x, (size_t)i);
        gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
        double chi2;
        gsl_blas_ddot(w->f, w->f, &chi2);
        double s2 = c->nidx > p ? chi2 / (c->nidx - p) : 0;
        sc_cluster cl;
        trial_cluster(c, x, &cl);
        int i = 0;
        for (int bit = 1; bit <= P_LAST; bit <<= 1) {
            if (!(active & bit))
                continue;
            double sx = sqrt(fmax(0, s2 * gsl_matrix_get(cov, (size_t)i, (size_t)i)));
            double v = bit == P_EFF     ? cl.eff.eff_max[c->dt]
                       : bit == P_FHALF ? cl.eff.f_half[c->dt]
                       : bit == P_OVH   ? cl.eff.op_overhead_s
                       : bit == P_MEM   ? cl.eff.memory_bw
                       : bit == P_BWD   ? cl.eff.bwd_factor
                       : bit == P_KS    ? cl.eff.gemm.kernel_s
                                        : cl.eff.gemm.eff_max;
            /* delta method through the transform (every one is exp) */
            se[i] = v * sx;
            i++;
        }
        c->cur = cl;
    }
    gsl_set_error_handler(old);
    gsl_multifit_nlinear_free(w);
    gsl_matrix_free(cov);
    return st;
}

/* The gates of the compute fit (calibrate.h), on the fitted estimate c->cur
 * before any nominal figure is raised: the gemm sizes (eff_max, f_half) and
 * the measured ops (overhead, HBM efficiency, backward factor, and eff_max
 * without gemm sizes) each on their own points. pred: every compute point
 * under c->cur; pred0: the op points under the input cluster. */
static void compute_gates(ctx *c, sc_calib_report *rep, const double *pred, const double *meas,
                          const double *pred0)
{
    const sc_calib_points *pts = c->pts;
    int ngemm = pts->n_gemm, nops = pts->n_ops;
    char what[48], files[160];
    int *fi = sc_malloc(sizeof(int) * (size_t)(ngemm > nops ? ngemm : nops) + 1);
    size_t most = (size_t)(ngemm > nops ? ngemm : nops) + 1;
    double *key = sc_malloc(sizeof(double) * 2 * most), *key2 = key ? key + most : NULL;
    if (!fi || !key) {
        sc_free(fi);
        sc_free(key);
        gate(rep, "compute", "", "points", 0, 0, 1, "", "out of memory judging the fit");
        return;
    }
    const sc_cluster_eff *e = &c->cur.eff;
    if (ngemm > 0) {
        snprintf(what, sizeof what, "compute %s (gemm sizes)", sc_dtype_name(c->dt));
        for (int i = 0; i < ngemm; i++) {
            fi[i] = pts->gemm[i].file;
            key[i] = pts->gemm[i].flop; /* a size: its FLOPs and bytes */
            key2[i] = pts->gemm[i].bytes;
        }
        file_list(pts, fi, ngemm, files, sizeof files);
        stats g = point_stats(pred, meas, ngemm);
        const char *fix = "the GEMM times do not follow one efficiency curve: rerun bench gemm "
                          "on a quiet machine (its spread column) over the shapes the plans run";
        fit_gates(rep, what, files, distinct(key, key2, ngemm), 2, "sizes", g.r2, "", g.mape,
                  SC_CALIB_MAPE_CEILING,
                  "bench gemm over more distinct sizes, small to large (--sizes 128:1024:2)", fix);
        bound_gate(rep, what, files, "eff_max (of the nominal peak)", e->eff_max[c->dt], EFF_LO,
                   EFF_HI, "eff_max ended at a limit: check gpu.peak_flops and the bench's "
                   "provenance (kernel, threads)");
    }
    if (nops > 0) {
        snprintf(what, sizeof what, "compute %s (measured ops)", sc_dtype_name(c->dt));
        for (int j = 0; j < nops; j++)
            fi[j] = pts->ops[j].file;
        file_list(pts, fi, nops, files, sizeof files);
        stats o = point_stats(pred + ngemm, meas + ngemm, nops);
        const char *fix = "the measured ops do not follow the model: check that bench and exec "
                          "ran one BLAS kernel (provenance), rerun exec on a quiet machine, or "
                          "exec another plan";
        int act = c->ops_active;
        fit_gates(rep, what, files, distinct(pred0, NULL, nops), n_params(act), "op points",
                  o.r2, "", o.mape, SC_CALIB_MAPE_CEILING,
                  "exec another plan (another m or mbs, more pipeline stages): a point is one "
                  "op kind of one stage of one plan", fix);
        if (act & P_BWD)
            bound_gate(rep, what, files, "backward factor", e->bwd_factor, BWD_LO, BWD_HI, fix);
        bound_gate(rep, what, files, "HBM efficiency", e->memory_bw, EFF_LO, EFF_HI, fix);
        if (act & P_EFF)
            bound_gate(rep, what, files, "eff_max (of the nominal peak)", e->eff_max[c->dt],
                       EFF_LO, EFF_HI, fix);
        if (act & P_KS)
            bound_gate(rep, what, files, "time per kernel (efficiency.gemm.kernel_s)",
                       e->gemm.kernel_s, GEMM_KS_LO, GEMM_KS_HI, fix);
        if (act & P_GEFF)
            bound_gate(rep, what, files, "GEMM eff_max (efficiency.gemm)", e->gemm.eff_max,
                       GEMM_EFF_LO, GEMM_EFF_HI, fix);
    }
    sc_free(fi);
    sc_free(key);
}

/* How the measured plans' leaves are timed on cluster cl: bit 1, some
 * kernel by kernel (efficiency.gemm and a kernel list, cost_kernel.c); bit
 * 2, some from their totals (the leaf roofline and the per-op overhead). */
static int plan_costing(const sc_calib_points *pts, const sc_cluster *cl)
{
    int how = 0;
    for (int p = 0; p < pts->n_plans; p++) {
        const sc_model *m = pts->plans[p].model;
        for (int i = 0; i < m->n_leaves; i++) {
            const sc_module *x = m->leaves[i];
            if (sc_measured_here(cl, x))
                continue;
            if (sc_cost_uses_kernels(cl, x))
                how |= 1;
            else if (x->flops_fwd > 0 || x->act_out_bytes > 0)
                how |= 2;
        }
    }
    return how;
}

/* The parameters the measured ops fit (P_*). Always the HBM efficiency.
 * Leaves timed from their totals: the per-op overhead and the backward
 * factor (and eff_max without gemm sizes). Leaves timed kernel by kernel:
 * the time every kernel carries (efficiency.gemm.kernel_s: in a step,
 * kernels queue back to back, and a GEMM sweep's small shapes put there
 * what the tile-and-wave rule misses; on the H200, 2026-12-04, the sweep
 * fitted 6.7 us and the step replayed +12.8%), the GEMMs' eff_max without
 * gemm sizes, and the backward factor (a correction there: the backward's
 * GEMMs have their own shapes) only where the points give two per
 * parameter, else kept, said in the notes. */
static int ops_params(ctx *c, int ngemm, const double *pred0, sc_calib_report *rep)
{
    int how = plan_costing(c->pts, &c->cur);
    /* the kernels timed alone set the time per kernel and, where every leaf
     * is timed kernel by kernel, the HBM efficiency (fit_kernels) */
    int act = c->kern_fitted && how == 1 ? 0 : P_MEM;
    if (how & 2)
        act |= P_OVH | P_BWD | (ngemm > 0 ? 0 : P_EFF);
    if (how & 1)
        act |= c->kern_fitted ? P_GEFF : P_KS | (ngemm > 0 ? 0 : P_GEFF);
    /* the backward factor of kernel-timed leaves: not where the kernels were
     * timed apart (nothing of theirs is left for it to correct) */
    if ((how & 1) && !(act & P_BWD) && !c->kern_fitted) {
        int np = n_params(act), nd = distinct(pred0, NULL, c->pts->n_ops);
        if (nd >= SC_CALIB_POINTS_PER_PARAM * (np + 1))
            act |= P_BWD;
        else
            add_note(rep, "backward factor kept at %.3g: %d distinct op points fit %d kernel-level "
                     "parameters, %d each (a plan of another shape fits it too)",
                     c->cur.eff.bwd_factor > 0 ? c->cur.eff.bwd_factor : 1, nd, np,
                     SC_CALIB_POINTS_PER_PARAM);
    }
    return act;
}

/* The standard error of parameter bit among the active ones (x order). */
static double se_of(int active, int bit, const double *se)
{
    if (!(active & bit))
        return 0;
    int i = 0;
    for (int b = 1; b < bit; b <<= 1)
        i += !!(active & b);
    return se[i];
}

/* Two stages, because over times alone the overhead and f_half only ever
 * appear as o + f_half/(peak·eff) and cannot be told apart: (1) the gemm
 * sizes (single kernels, no executor overhead) fit eff_max and f_half;
 * (2) the measured ops fit the executor's per-op overhead and the HBM
 * efficiency with that curve (and eff_max too when there are no gemm
 * sizes). */
static sc_status fit_compute(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    const sc_calib_points *pts = c->pts;
    int ngemm = pts->n_gemm, nops = pts->n_ops;
    c->idx = sc_malloc(sizeof(int) * (size_t)c->ncp);
    double *meas = c->meas = sc_malloc(sizeof(double) * (size_t)c->ncp);
    double *pred = sc_malloc(sizeof(double) * (size_t)c->ncp);
    c->info = pts->n_plans ? sc_calloc((size_t)pts->n_plans, sizeof *c->info) : NULL;
    int ok = c->idx && meas && pred && (c->info || !pts->n_plans);
    for (int p = 0; ok && p < pts->n_plans; p++)
        ok = !!(c->info[p] = sc_calloc((size_t)pts->plans[p].part->n_stages, sizeof **c->info));
    sc_status st = ok ? SC_OK : sc_err(err, SC_ENOMEM, "calibrate: out of memory");
    for (int i = 0; ok && i < ngemm; i++)
        meas[i] = pts->gemm[i].t;
    for (int j = 0; ok && j < nops; j++)
        meas[ngemm + j] = pts->ops[j].t;
    c->cur = *out;
    double before =
        !ok || predict(c, c->base, pred) ? -1 : point_stats(pred, meas, c->ncp).mape;
    /* the ops' predictions under the input cluster tell distinct op points apart */
    double *pred0 = ok && nops > 0 ? sc_malloc(sizeof(double) * (size_t)nops) : NULL;
    if (pred0)
        memcpy(pred0, pred + ngemm, sizeof(double) * (size_t)nops);
    else if (ok && nops > 0)
        st = sc_err(err, SC_ENOMEM, "calibrate: out of memory");
    double se_curve[2] = {0, 0}, se_ops[P_MAX] = {0};
    int fitted_mem = 0, act = 0;
    if (!st && ngemm > 0)
        st = fit_stage(c, P_EFF | P_FHALF, 1, 0, se_curve, err);
    double ks_before = c->cur.eff.gemm.kernel_s;
    if (!st && nops > 0) {
        act = ops_params(c, ngemm, pred0, rep); /* never empty: P_MEM, or P_GEFF */
        st = fit_stage(c, act, 0, 1, se_ops, err);
        fitted_mem = !!(act & P_MEM);
        if (!st && (act & P_EFF))
            se_curve[0] = se_ops[0];
    }
    c->ops_active = act;
    if (!st) {
        predict(c, &c->cur, pred);
        stats all = point_stats(pred, meas, c->ncp);
        double e = c->cur.eff.eff_max[c->dt], fh = c->cur.eff.f_half[c->dt];
        double mem = c->cur.eff.memory_bw;
        compute_gates(c, rep, pred, meas, pred0);
        /* the kernel-level model's values from the measured ops, and every
         * standard error by its parameter's place in x order */
        double ks = c->cur.eff.gemm.kernel_s, ge = c->cur.eff.gemm.eff_max;
        double ovh_se = se_of(act, P_OVH, se_ops), mem_se = se_of(act, P_MEM, se_ops);
        double bwd_se = se_of(act, P_BWD, se_ops), ks_se = se_of(act, P_KS, se_ops);
        double ge_se = se_of(act, P_GEFF, se_ops);
        /* beyond the nominal figure: raise the figure (the predictions,
         * which use only peak·eff_max and hbm·memory_bw, stay the same) */
        if (e > 1) {
            add_note(rep, "%s: GEMMs reached %.3g FLOP/s, above the nominal peak %.3g FLOP/s; "
                     "nominal raised", sc_dtype_name(c->dt), out->gpu.peak_flops[c->dt] * e,
                     out->gpu.peak_flops[c->dt]);
            out->gpu.peak_flops[c->dt] *= e;
            se_curve[0] /= e;
            /* the kernel-level GEMMs keep their rate against the raised peak */
            ge /= e;
            ge_se /= e;
            e = 1;
        }
        if (ge > 1) {
            add_note(rep, "%s: the steps' GEMMs ran at %.3g of the nominal peak; nominal raised",
                     sc_dtype_name(c->dt), ge);
            out->gpu.peak_flops[c->dt] *= ge;
            ge_se /= ge;
            ge = 1;
        }
        if (fitted_mem && mem > 1) {
            add_note(rep, "memory passes reached %.3g B/s, above the nominal %.3g B/s; nominal "
                     "raised", out->gpu.hbm_bytes_per_s * mem, out->gpu.hbm_bytes_per_s);
            out->gpu.hbm_bytes_per_s *= mem;
            mem_se /= mem;
            mem = 1;
        }
        out->eff.eff_max[c->dt] = e;
        out->eff.f_half[c->dt] = fh;
        out->eff.op_overhead_s = c->cur.eff.op_overhead_s;
        out->eff.memory_bw = fmin(1, mem);
        out->eff.bwd_factor = c->cur.eff.bwd_factor;
        out->eff.gemm.kernel_s = ks;
        out->eff.gemm.eff_max = ge;
        /* the gemm model's standard errors now its steps', for what they fitted */
        if (act & P_KS)
            out->eff.fits.gemm.se[1] = ks_se;
        if (act & P_GEFF)
            out->eff.fits.gemm.se[0] = ge_se;
        out->eff.fits.compute[c->dt] =
            (sc_fit_stats){c->ncp, all.r2, all.mape, all.rel_sd, {se_curve[0], se_curve[1]}};
        if (nops > 0)
            out->eff.fits.overhead = (sc_fit_stats){nops, all.r2, all.mape, all.rel_sd,
                                                    {act & P_KS ? ks_se : ovh_se, mem_se}};
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
            rep->bwd_factor_se = bwd_se;
            rep->ops_fit = (act & P_OVH ? SC_CALIB_FIT_OVERHEAD : 0) |
                           (act & P_BWD ? SC_CALIB_FIT_BWD : 0) |
                           (act & P_KS ? SC_CALIB_FIT_KERNEL : 0) |
                           (act & P_GEFF ? SC_CALIB_FIT_GEMM_EFF : 0);
            rep->kernel_s = ks;
            rep->kernel_se = ks_se;
            rep->kernel_before_s = ks_before;
        }
    }
    for (int p = 0; c->info && p < pts->n_plans; p++)
        sc_free(c->info[p]);
    sc_free(c->info);
    sc_free(c->idx);
    sc_free(meas);
    sc_free(pred);
    sc_free(pred0);
    c->info = NULL;
    c->idx = NULL;
    c->meas = NULL;
    return st;
}

/* ---- the kernel-level GEMM model (efficiency.gemm) ------------------------------------ */


typedef struct gemm_ctx {
    const sc_calib_points *pts;
    sc_cluster cl;
    sc_dtype dt;
} gemm_ctx;

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static void gemm_params(sc_cluster *cl, const double *x)
{
    cl->eff.gemm.eff_max = clampd(exp(x[0]), GEMM_EFF_LO, GEMM_EFF_HI);
    cl->eff.gemm.k_half = clampd(exp(x[1]) - 1, 0, GEMM_KH_HI);
    cl->eff.gemm.kernel_s = clampd(exp(x[2]), GEMM_KS_LO, GEMM_KS_HI);
}

static double gemm_point(const sc_cluster *cl, sc_dtype dt, const sc_calib_gemm *g)
{
    sc_kernel k = sc_kernel_gemm("g", g->batch > 1 ? g->batch : 1, g->m, g->n, g->k,
                                 SC_KTP_NONE, 0, SC_ATTN_ANY);
    sc_compute_cfg cc = {dt, 1, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0, 0};
    return sc_cost_kernel_time(cl, &k, &cc, 0);
}

static int gemm_resid(const gsl_vector *xv, void *data, gsl_vector *f)
{
    gemm_ctx *g = data;
    double x[3] = {gsl_vector_get(xv, 0), gsl_vector_get(xv, 1), gsl_vector_get(xv, 2)};
    sc_cluster cl = g->cl;
    gemm_params(&cl, x);
    for (int i = 0; i < g->pts->n_gemm; i++)
        gsl_vector_set(f, (size_t)i, gemm_point(&cl, g->dt, &g->pts->gemm[i]) /
                                         g->pts->gemm[i].t - 1);
    return GSL_SUCCESS;
}

/* Fits eff_max, k_half and kernel_s of out's efficiency.gemm to the gemm
 * points (calibrate.h). Nothing to do without the block or without shapes. */
static sc_status fit_gemm_model(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    const sc_calib_points *pts = c->pts;
    int n = pts->n_gemm;
    if (out->eff.gemm.sms <= 0 || n == 0)
        return SC_OK;
    for (int i = 0; i < n; i++)
        if (!(pts->gemm[i].m > 0 && pts->gemm[i].n > 0 && pts->gemm[i].k > 0))
            return SC_OK;
    char what[48], files[128];
    snprintf(what, sizeof what, "gemm model %s", sc_dtype_name(c->dt));
    int *all = sc_malloc(sizeof(int) * (size_t)n);
    double *pred = sc_malloc(sizeof(double) * (size_t)n),
           *meas = sc_malloc(sizeof(double) * (size_t)n),
           *u = sc_malloc(sizeof(double) * (size_t)n), *v = sc_malloc(sizeof(double) * (size_t)n);
    sc_status st = all && pred && meas && u && v ? SC_OK
                                                 : sc_err(err, SC_ENOMEM, "calibrate: out of memory");
    gemm_ctx g = {pts, *out, c->dt};
    const sc_cluster_gemm *g0 = &out->eff.gemm;
    double x0[3] = {log(clampd(g0->eff_max, 0.05, 1)), log(g0->k_half + 1),
                    log(fmax(g0->kernel_s, 1e-7))};
    double before = 0, x[3] = {x0[0], x0[1], x0[2]}, se[3] = {0, 0, 0};
    for (int i = 0; !st && i < n; i++) {
        all[i] = i;
        meas[i] = pts->gemm[i].t;
        before += fabs(gemm_point(out, c->dt, &pts->gemm[i]) / meas[i] - 1) / n;
        /* a shape's identity */
        u[i] = pts->gemm[i].m * 1e6 + pts->gemm[i].n;
        v[i] = pts->gemm[i].k * 1e6 + (pts->gemm[i].batch > 1 ? pts->gemm[i].batch : 1);
    }
    if (!st && n < 4)
        st = sc_err(err, SC_EINVAL,
                    "calibrate: too few gemm points to fit the gemm model (%s): %d (need at "
                    "least 4; bench gemm over more sizes)",
                    sc_dtype_name(c->dt), n);
    gsl_multifit_nlinear_workspace *w = NULL;
    gsl_matrix *cov = NULL;
    if (!st) {
        gsl_multifit_nlinear_fdf fdf = {gemm_resid, NULL, NULL, (size_t)n, 3, &g, 0, 0, 0};
        gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
        w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, (size_t)n, 3);
        cov = gsl_matrix_alloc(3, 3);
        if (!w || !cov)
            st = sc_err(err, SC_ENOMEM, "calibrate: out of memory");
        gsl_error_handler_t *old = gsl_set_error_handler_off();
        gsl_vector_view xv = gsl_vector_view_array(x0, 3);
        int info = 0, gs = st ? 0 : gsl_multifit_nlinear_init(&xv.vector, &fdf, w);
        if (!st && !gs)
            gs = gsl_multifit_nlinear_driver(300, 1e-12, 1e-12, 0, NULL, NULL, &info, w);
        if (!st && gs && gs != GSL_EMAXITER)
            st = sc_err(err, SC_EINVAL, "calibrate: the gemm model fit failed: %s",
                        gsl_strerror(gs));
        if (!st) {
            for (int i = 0; i < 3; i++)
                x[i] = gsl_vector_get(w->x, (size_t)i);
            gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
            double chi2;
            gsl_blas_ddot(w->f, w->f, &chi2);
            double s2 = n > 3 ? chi2 / (n - 3) : 0;
            for (int i = 0; i < 3; i++)
                se[i] = sqrt(fmax(0, s2 * gsl_matrix_get(cov, (size_t)i, (size_t)i)));
        }
        gsl_set_error_handler(old);
    }
    if (!st) {
        sc_cluster fit = *out;
        gemm_params(&fit, x);
        for (int i = 0; i < n; i++)
            pred[i] = gemm_point(&fit, c->dt, &pts->gemm[i]);
        stats s = point_stats(pred, meas, n);
        file_list(pts, all, n, files, sizeof files);
        const char *fixp = "bench gemm over more shapes (several M, N, K, thin and wide)";
        const char *fixf = "measure again on a quiet device, or check the sms and tile of "
                           "efficiency.gemm against the device";
        fit_gates(rep, what, files, distinct(u, v, n), 3, "shapes", s.r2, "", s.mape,
                  SC_CALIB_MAPE_CEILING, fixp, fixf);
        bound_gate(rep, what, files, "eff_max", fit.eff.gemm.eff_max, GEMM_EFF_LO, GEMM_EFF_HI,
                   fixf);
        bound_gate(rep, what, files, "kernel_s", fit.eff.gemm.kernel_s, GEMM_KS_LO, GEMM_KS_HI,
                   fixf);
        if (pts->gemm_gpu_files > 0 && pts->n_plans == 0)
            add_note(rep, "%s: no measured steps, so the GEMMs' level is the sweep's, and a GPU "
                     "holds another clock through a step than through a sweep (one H200: four "
                     "steps at -12%% to +6%% from a burst sweep, +1%% to +9%% from a hot one); "
                     "add exec measurements, which set it", what);
        if (pts->gemm_burst_files > 0)
            add_note(rep, "%s: %d GPU GEMM bench file%s timed in bursts (bench gemm --hot 0, or "
                     "a bench from before 2026-12-04): a GPU at its power limit through a step "
                     "runs below those rates (one H200: 4096^3 in 211 us in training against "
                     "173 us in a burst); rerun bench gemm with its default --hot",
                     what, pts->gemm_burst_files, pts->gemm_burst_files == 1 ? "" : "s");
        /* faster than nominal: raise the peak, keep eff_max in (0, 1] */
        double e = fit.eff.gemm.eff_max;
        if (e > 1) {
            add_note(rep, "%s: GEMMs reached %.3g FLOP/s, above the nominal peak; nominal raised",
                     what, out->gpu.peak_flops[c->dt] * e);
            out->gpu.peak_flops[c->dt] *= e;
            e = 1;
        }
        out->eff.gemm.eff_max = e;
        out->eff.gemm.k_half = fit.eff.gemm.k_half;
        out->eff.gemm.kernel_s = fit.eff.gemm.kernel_s;
        out->eff.fits.gemm = (sc_fit_stats){n, s.r2, s.mape, s.rel_sd,
                                            {e * se[0], fit.eff.gemm.kernel_s * se[2]}};
        if (rep && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
            sc_calib_fit *f = &rep->fits[rep->n_fits++];
            *f = (sc_calib_fit){"", n, e, fit.eff.gemm.kernel_s, e * se[0],
                                fit.eff.gemm.kernel_s * se[2], s.r2, s.mape, s.rel_sd, before};
            snprintf(f->what, sizeof f->what, "%.31s", what);
        }
    }
    if (w)
        gsl_multifit_nlinear_free(w);
    if (cov)
        gsl_matrix_free(cov);
    sc_free(all);
    sc_free(pred);
    sc_free(meas);
    sc_free(u);
    sc_free(v);
    return st;
}

/* ---- the link fits ------------------------------------------------------------------ */


/* A weighted linear least-squares problem of n points and p parameters
 * (gsl_multifit_wlinear): its GSL objects, made and freed together. */
typedef struct wls {
    gsl_matrix *X, *cov;
    gsl_vector *y, *w, *c;
    gsl_multifit_linear_workspace *ws;
} wls;

/* GSL's frees take NULL */
static void wls_free(wls *q)
{
    gsl_matrix_free(q->X);
    gsl_matrix_free(q->cov);
    gsl_vector_free(q->y);
    gsl_vector_free(q->w);
    gsl_vector_free(q->c);
    gsl_multifit_linear_free(q->ws);
    memset(q, 0, sizeof *q);
}

/* Solves it (GSL's error handler off): 0 or GSL's status; *chi2 the
 * weighted sum of squared residuals. */
static int wls_solve(wls *q, double *chi2)
{
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int gs = gsl_multifit_wlinear(q->X, q->w, q->y, q->c, q->cov, chi2, q->ws);
    gsl_set_error_handler(old);
    return gs;
}

/* 0, or -1 (out of memory, or n <= p: then nothing is left allocated). */
static int wls_alloc(wls *q, int n, int p)
{
    memset(q, 0, sizeof *q);
    if (n <= p)
        return -1;
    q->X = gsl_matrix_alloc((size_t)n, (size_t)p);
    q->cov = gsl_matrix_alloc((size_t)p, (size_t)p);
    q->y = gsl_vector_alloc((size_t)n);
    q->w = gsl_vector_alloc((size_t)n);
    q->c = gsl_vector_alloc((size_t)p);
    q->ws = gsl_multifit_linear_alloc((size_t)n, (size_t)p);
    if (q->X && q->cov && q->y && q->w && q->c && q->ws)
        return 0;
    wls_free(q);
    return -1;
}

/* What a point's time is in the alpha-beta line of its link class: t = off +
 * steps·alpha + vol/beta. A collective's ring (cost.h); an allreduce whose ranks
 * spanned nodes (several on a node) as the algorithm "auto" runs it, judged with
 * the input cluster's alphas and link shares and no size ramp (the fitted line
 * has none): NCCL's tree (coll_tree.c) bound by the NICs, 2 ceil(log2 k) alpha
 * steps and f(k)·S, after the chain's 2(p - 1) steps at the input's intra alpha
 * (off). The ring otherwise: across k nodes (the file recorded them) only its
 * 2(k - 1) steps (k - 1 for the others) that cross the network are the fitted
 * alpha's, the rest at the input's intra alpha (off), as NCCL counts them
 * (sc_ring_latency); every step when the file did not record its nodes. */
static void coll_terms(const ctx *c, const sc_calib_link *q, double *steps, double *vol,
                       double *off)
{
    double n = q->n, ai = c->base->eff.alpha_s[SC_LINK_INTRA];
    int across = q->link == SC_LINK_INTER && q->nodes >= 2 && q->per_node >= 1 &&
                 q->per_node < q->n;
    int k = across ? (q->n + q->per_node - 1) / q->per_node : q->n;
    *off = 0;
    if (q->op == SC_CALIB_P2P) {
        *steps = 1;
        *vol = q->bytes;
        return;
    }
    if (across && q->op == SC_CALIB_ALLREDUCE) {
        const double flat[2] = {1, 1};
        if (sc_coll_tree_wins(c->base, q->bytes, q->n, q->per_node, flat)) {
            *off = sc_tree_latency(q->per_node, k, ai, 0);
            *steps = sc_tree_latency(1, k, 0, 1); /* its inter-node alpha's multiple */
            *vol = sc_tree_nic_factor(k) * q->bytes;
            return;
        }
    }
    sc_coll op = q->op == SC_CALIB_ALLREDUCE ? SC_COLL_ALLREDUCE : SC_COLL_ALLGATHER;
    *vol = (op == SC_COLL_ALLREDUCE ? 2 : 1) * (n - 1) / n * q->bytes;
    /* every step at the fitted alpha, but across recorded nodes only those that
     * cross the network, the rest at the input's intra alpha */
    *steps = sc_ring_latency(op, q->n, k, 0, 1);
    *off = sc_ring_latency(op, q->n, k, ai, 0);
}

/* Whether a point of collective op passes a fit's filter `want`: an op, -1
 * (FIT_ALL) for every one, FIT_AG_RS for the reduce-scatters and all-gathers. */
#define FIT_ALL (-1)
#define FIT_AG_RS (-2)
static int op_passes(int want, int op)
{
    return want == FIT_ALL || want == op ||
           (want == FIT_AG_RS && (op == SC_CALIB_REDUCESCATTER || op == SC_CALIB_ALLGATHER));
}

/* Point q's time on the warm line of class l that out holds (its alpha_s, and
 * bw_eff or, for p2p, the p2p share of the link, for reduce-scatters and
 * all-gathers theirs): off + steps·alpha + vol/beta. */
static double warm_line_time(const ctx *c, const sc_calib_link *q, const sc_cluster *out, int l)
{
    double nominal = l == SC_LINK_INTRA ? out->intra.bytes_per_s
                                        : out->inter.nics_per_node * out->inter.nic_bytes_per_s;
    double beta = nominal * (q->op == SC_CALIB_P2P ? sc_cluster_p2p_eff(out, (sc_link)l)
                             : op_passes(FIT_AG_RS, q->op) ? sc_cluster_ag_rs_eff(out, (sc_link)l)
                                                           : out->eff.bw_eff[l]);
    double s, v, o;
    coll_terms(c, q, &s, &v, &o);
    return o + s * out->eff.alpha_s[l] + v / beta;
}

/* Weighted least squares of t = steps·alpha + vol/beta over the points
 * that pass filter (link, and op_passes(op): an op, FIT_ALL or FIT_AG_RS).
 * 0 on success. */
static int fit_alpha_beta(const ctx *c, int link, int op, sc_calib_fit *f)
{
    int n = 0;
    const sc_calib_points *pts = c->pts;
    for (int i = 0; i < pts->n_link; i++)
        n += pts->link[i].link == link && op_passes(op, (int)pts->link[i].op);
    if (n < 3)
        return -1;
    wls L;
    int got = !wls_alloc(&L, n, 2);
    double *pred = sc_malloc(sizeof(double) * (size_t)n), *meas = sc_malloc(sizeof(double) * (size_t)n);
    double *off = sc_malloc(sizeof(double) * (size_t)n);
    int rc = -1;
    if (got && pred && meas && off) {
        int k = 0;
        for (int i = 0; i < pts->n_link; i++) {
            const sc_calib_link *q = &pts->link[i];
            if (q->link != link || !op_passes(op, (int)q->op))
                continue;
            double s, v, o;
            coll_terms(c, q, &s, &v, &o);
            gsl_matrix_set(L.X, (size_t)k, 0, s);
            gsl_matrix_set(L.X, (size_t)k, 1, v);
            gsl_vector_set(L.y, (size_t)k, q->t - o);
            gsl_vector_set(L.w, (size_t)k, 1 / (q->t * q->t));
            off[k] = o;
            meas[k++] = q->t;
        }
        double chi2;
        if (!wls_solve(&L, &chi2)) {
            double a = gsl_vector_get(L.c, 0), ib = gsl_vector_get(L.c, 1);
            if (a < 0)
                a = 0;
            if (ib > 0) {
                for (int i = 0; i < n; i++)
                    pred[i] = off[i] + a * gsl_matrix_get(L.X, (size_t)i, 0) +
                              ib * gsl_matrix_get(L.X, (size_t)i, 1);
                stats s = point_stats(pred, meas, n);
                double s2 = n > 2 ? chi2 / (n - 2) : 0;
                f->n = n;
                f->a = a;
                f->b = 1 / ib;
                f->se_a = sqrt(fmax(0, s2 * gsl_matrix_get(L.cov, 0, 0)));
                f->se_b = sqrt(fmax(0, s2 * gsl_matrix_get(L.cov, 1, 1))) / (ib * ib);
                f->r2 = s.r2;
                f->mape = s.mape;
                f->rel_sd = s.rel_sd;
                rc = 0;
            }
        }
    }
    wls_free(&L);
    sc_free(pred);
    sc_free(meas);
    sc_free(off);
    return rc;
}

#define WARM_SIZES "bench over at least 4 sizes of the plans' messages' regime (--sizes 32K:4M:2)"
#define COLD_SIZES "bench --cold over at least 4 sizes around the gradient buckets " \
                   "(--sizes 2M:16M:2)"

#define LINK_FIX "the times do not follow alpha + size/beta: bench over the sizes the plans " \
                 "send, on a quiet machine (the spread column)"

/* A jump is a size step over which a collective's median time grows by
 * more than this times its bytes: alpha + size/beta with alpha >= 0 grows
 * at most as fast as the bytes, so no line follows one. In the shared-memory
 * sweeps of docs/commands.md the medians of neighbouring sizes inside one
 * regime grew at most 1.19 times as fast as their bytes, the steps between
 * regimes 1.37-4.4 times (1.5, the first value, missed the 1.37 knee from 2
 * to 4 MiB of one accuracy.sh run). */
#define LINK_JUMP_RATIO 1.3

static void size_words(double b, char *buf, size_t cap)
{
    if (b >= 1 << 20)
        snprintf(buf, cap, "%.3g MiB", b / (1 << 20));
    else if (b >= 1 << 10)
        snprintf(buf, cap, "%.3g KiB", b / (1 << 10));
    else
        snprintf(buf, cap, "%.0f B", b);
}

static int by_op_n_bytes(const void *pa, const void *pb)
{
    const sc_calib_link *a = *(const sc_calib_link *const *)pa;
    const sc_calib_link *b = *(const sc_calib_link *const *)pb;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

/* One distinct size of a bench and its median time. */
typedef struct size_med {
    double bytes, t;
} size_med;

/* The distinct sizes of q[0..n), points of one op and group size sorted by
 * size (by_op_n_bytes), with their median times, into s; returns how many. */
static int size_medians(const sc_calib_link *const *q, int n, size_med *s)
{
    int k = 0;
    for (int i = 0, j; i < n; i = j) {
        for (j = i; j < n && same(q[j]->bytes, q[i]->bytes);)
            j++;
        int m = i + (j - i) / 2; /* q[i..j) repeat one size */
        s[k++] = (size_med){q[i]->bytes, (j - i) % 2 ? q[m]->t : (q[m - 1]->t + q[m]->t) / 2};
    }
    return k;
}

/* How much faster than its bytes the time grows from size a to size b. */
static double jump_ratio(size_med a, size_med b) { return (b.t / a.t) / (b.bytes / a.bytes); }

/* The largest jump (LINK_JUMP_RATIO) between two consecutive sizes of one
 * op over one group size among the n points q (q is sorted in place),
 * written into fix as what to do about it; 0 when there is none. */
static int link_jump(const sc_calib_link **q, int n, char *fix, size_t cap)
{
    size_med *s = sc_malloc(sizeof *s * ((size_t)n + 1));
    if (!s)
        return 0;
    qsort(q, (size_t)n, sizeof *q, by_op_n_bytes);
    double best = LINK_JUMP_RATIO;
    size_med b1 = {0}, b2 = {0};
    for (int i = 0, j; i < n; i = j) {
        for (j = i; j < n && q[j]->op == q[i]->op && q[j]->n == q[i]->n;)
            j++;
        int k = size_medians(q + i, j - i, s);
        for (int m = 1; m < k; m++)
            if (jump_ratio(s[m - 1], s[m]) > best) {
                best = jump_ratio(s[m - 1], s[m]);
                b1 = s[m - 1];
                b2 = s[m];
            }
    }
    sc_free(s);
    if (b2.bytes == 0)
        return 0;
    char w1[24], w2[24];
    size_words(b1.bytes, w1, sizeof w1);
    size_words(b2.bytes, w2, sizeof w2);
    snprintf(fix, cap,
             "from %s to %s the time grows %.1fx for %.3gx the bytes: a change of protocol or "
             "cache that one alpha + size/beta cannot follow; bench on one side of it, over the "
             "sizes the plans send",
             w1, w2, b2.t / b1.t, b2.bytes / b1.bytes);
    return 1;
}

/* The regime of the warm points of class l and op among w[0..n) that holds
 * every message of op the measured plans send: where their bench's sizes
 * (over one group size) split into regimes at jumps (LINK_JUMP_RATIO) and the
 * messages all fall in one of them (one between the two sizes of a step
 * falls on the side of the nearer, by ratio: a stage's tp collectives are
 * known by their mean size, which a small one pulls below the rest), *lo
 * and *hi are its smallest and largest size and *k_all, *k_kept the sizes
 * in all and in it; 0 when there is no such choice (one regime, no
 * messages, messages in several, or midway across a step) or the regime has
 * fewer than 3 sizes, which fit no line. */
static int plan_regime(const sc_calib_points *pts, const sc_calib_link *w, int n, int l, int op,
                       const sc_calib_link **q, size_med *s, int *seg, double *lo, double *hi,
                       int *k_all, int *k_kept)
{
    int m = 0, mixed = 0;
    for (int i = 0; i < n; i++)
        if (w[i].link == l && (int)w[i].op == op) {
            mixed |= m > 0 && w[i].n != q[0]->n;
            q[m++] = &w[i];
        }
    if (m < 2 || mixed)
        return 0;
    qsort(q, (size_t)m, sizeof *q, by_op_n_bytes);
    int k = size_medians(q, m, s);
    seg[0] = 0;
    for (int j = 1; j < k; j++)
        seg[j] = seg[j - 1] + (jump_ratio(s[j - 1], s[j]) > LINK_JUMP_RATIO);
    if (seg[k - 1] == 0)
        return 0;
    int pick = -1;
    for (int i = 0; i < pts->n_msg; i++) {
        if ((int)pts->msg[i].op != op)
            continue;
        double b = pts->msg[i].bytes;
        int j = 0, sg;
        while (j + 1 < k && s[j + 1].bytes <= b * (1 + 1e-9))
            j++;
        if (b <= s[0].bytes || same(b, s[j].bytes) || j == k - 1 || seg[j] == seg[j + 1]) {
            sg = b <= s[0].bytes ? seg[0] : seg[j];
        } else { /* inside a step: the side of the nearer size (in ratio); a tie has none */
            double below = s[j + 1].bytes * s[j].bytes; /* b^2 below it: nearer s[j] */
            sg = b * b < below * (1 - 1e-9)   ? seg[j]
                 : b * b > below * (1 + 1e-9) ? seg[j + 1]
                                              : -1;
        }
        if (sg < 0 || (pick >= 0 && sg != pick))
            return 0;
        pick = sg;
    }
    if (pick < 0)
        return 0;
    *lo = INFINITY;
    *hi = 0;
    *k_all = k;
    *k_kept = 0;
    for (int j = 0; j < k; j++)
        if (seg[j] == pick) {
            *lo = fmin(*lo, s[j].bytes);
            *hi = fmax(*hi, s[j].bytes);
            ++*k_kept;
        }
    return *k_kept >= 3; /* fewer cannot fit a line: judge every size */
}

/* The simulator moves each link class at one line, which is for the plans'
 * traffic: per class and op of the warm view w, where plan_regime finds the
 * regime of the measured plans' messages, the points of the other regimes
 * leave w, and a note says which. Returns the points left. */
static int keep_plan_regimes(const ctx *c, sc_calib_link *w, int n, sc_calib_report *rep,
                             double regime[SC_LINK_N][SC_CALIB_COMM_N][2])
{
    static const char *const lname[] = {"intra", "inter"};
    const sc_calib_points *pts = c->pts;
    if (!pts->n_msg || n < 2)
        return n;
    const sc_calib_link **q = sc_malloc(sizeof *q * (size_t)n);
    size_med *s = sc_malloc(sizeof *s * (size_t)n);
    int *seg = sc_malloc(sizeof *seg * (size_t)n);
    for (int l = 0; l < SC_LINK_N && q && s && seg; l++)
        for (int op = 0; op < SC_CALIB_COMM_N; op++) {
            double lo, hi;
            int k_all, k_kept;
            if (!plan_regime(pts, w, n, l, op, q, s, seg, &lo, &hi, &k_all, &k_kept))
                continue;
            regime[l][op][0] = lo;
            regime[l][op][1] = hi;
            int j = 0;
            for (int i = 0; i < n; i++)
                if (w[i].link != l || (int)w[i].op != op ||
                    (w[i].bytes >= lo * (1 - 1e-9) && w[i].bytes <= hi * (1 + 1e-9)))
                    w[j++] = w[i];
            n = j;
            double mlo = INFINITY, mhi = 0;
            for (int i = 0; i < pts->n_msg; i++)
                if ((int)pts->msg[i].op == op) {
                    mlo = fmin(mlo, pts->msg[i].bytes);
                    mhi = fmax(mhi, pts->msg[i].bytes);
                }
            char a[24], b[24], ma[24], mb[24];
            size_words(lo, a, sizeof a);
            size_words(hi, b, sizeof b);
            size_words(mlo, ma, sizeof ma);
            size_words(mhi, mb, sizeof mb);
            add_note(rep, "%s %s: fitted over %s-%s (%d sizes), the regime of the measured "
                     "plans' %s%s%s messages; %d bench size%s past a step in time left out",
                     lname[l], comm_ops[op], a, b, k_kept, ma, mlo < mhi ? "-" : "",
                     mlo < mhi ? mb : "", k_all - k_kept, k_all - k_kept == 1 ? "" : "s");
        }
    sc_free(q);
    sc_free(s);
    sc_free(seg);
    return n;
}

/* A size as bench --sizes reads it: "256K", "1.5M", or bytes. */
static void size_arg(double b, char *buf, size_t cap)
{
    if (b >= 1 << 20 && fmod(b, 1 << 10) == 0)
        snprintf(buf, cap, "%.6gM", b / (1 << 20));
    else if (b >= 1 << 10 && fmod(b, 1 << 10) == 0)
        snprintf(buf, cap, "%.6gK", b / (1 << 10));
    else
        snprintf(buf, cap, "%.0f", b);
}

/* What to bench when too few sizes fit class l's line for op: for a cold
 * line, COLD_SIZES; for a warm one fitted over the plans' regime alone, a
 * sweep of at least five sizes across that regime (the sizes a sweep by 2
 * put there may be too few: on one 2-core guest Open MPI's shared memory
 * stepped in time both below 256 KiB and above 1 MiB), else WARM_SIZES. */
static void regime_sizes(const ctx *c, int l, int op, int cold, char *buf, size_t cap)
{
    double lo = 0, hi = 0;
    if (!cold && c->regime && op >= 0 && op < SC_CALIB_COMM_N) {
        lo = c->regime[l][op][0];
        hi = c->regime[l][op][1];
    }
    if (!(hi > lo && lo > 0)) {
        snprintf(buf, cap, "%s", cold ? COLD_SIZES : WARM_SIZES);
        return;
    }
    /* four steps of a factor rounded down, so that the fifth size stays in */
    double f = floor(pow(hi / lo, 0.25) * 100) / 100;
    char a[32], b[32];
    size_arg(lo, a, sizeof a);
    size_arg(hi, b, sizeof b);
    snprintf(buf, cap,
             "bench over at least 4 sizes of the plans' messages' regime, which spans %s-%s "
             "here (--sizes %s:%s:%.2f)",
             a, b, a, b, f > 1 ? f : 1.01);
}

/* The gates of a link fit over class l's points of op (-1: every op), warm
 * or cold (the points gate's fix, regime_sizes):
 * distinct sizes (of each op) for alpha and beta, R², MAPE (its fix names
 * the largest jump in time with size, link_jump), and the link share
 * f->b / nominal at its floor. */
static void link_gates(ctx *c, sc_calib_report *rep, int l, int op, const sc_calib_fit *f,
                       double nominal, const char *what, int cold)
{
    const sc_calib_points *pts = c->pts;
    int n = 0;
    size_t cap = (size_t)pts->n_link + 1;
    int *fi = sc_malloc(sizeof(int) * cap);
    double *key = sc_malloc(sizeof(double) * 2 * cap);
    double *key2 = key ? key + cap : NULL;
    const sc_calib_link **q = sc_malloc(sizeof *q * cap);
    if (!fi || !key || !q) {
        sc_free(fi);
        sc_free(key);
        sc_free(q);
        gate(rep, what, "", "points", 0, 0, 1, "", "out of memory judging the fit");
        return;
    }
    for (int i = 0; i < pts->n_link; i++) {
        const sc_calib_link *p = &pts->link[i];
        if (p->link != l || !op_passes(op, (int)p->op))
            continue;
        fi[n] = p->file;
        key[n] = p->op;
        q[n] = p;
        key2[n++] = p->bytes;
    }
    char files[160], fix[256], sizes[320];
    file_list(pts, fi, n, files, sizeof files);
    if (!link_jump(q, n, fix, sizeof fix))
        snprintf(fix, sizeof fix, "%s", LINK_FIX);
    regime_sizes(c, l, op, cold, sizes, sizeof sizes);
    fit_gates(rep, what, files, distinct(key, key2, n), 2, "sizes", f->r2, "", f->mape,
              SC_CALIB_LINK_MAPE_CEILING, sizes, fix);
    bound_gate(rep, what, files, "link share (beta / nominal)", f->b / nominal, 1e-4, INFINITY,
               "the link share ended at its floor: check the bench's sizes and link class");
    sc_free(fi);
    sc_free(key);
    sc_free(q);
}

/* A share of the link fitted beside the class's (point-to-point; reduce-scatters
 * and all-gathers): fit g's beta against nominal and its statistics where `on`,
 * else absent (0: the class's bw_eff applies). */
static void side_share(int on, const sc_calib_fit *g, double nominal, double *share,
                       sc_fit_stats *st)
{
    *share = on ? fmin(1, fmax(1e-4, g->b / nominal)) : 0;
    *st = on ? (sc_fit_stats){g->n, g->r2, g->mape, g->rel_sd, {g->se_a, g->se_b / nominal}}
             : (sc_fit_stats){0};
}

static sc_status fit_warm_links(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    static const char *const lname[] = {"intra", "inter"};
    for (int l = 0; l < SC_LINK_N; l++) {
        int n = 0;
        for (int i = 0; i < c->pts->n_link; i++)
            n += c->pts->link[i].link == l;
        if (n == 0)
            continue;
        sc_calib_fit f = {0}, pooled = {0};
        if (fit_alpha_beta(c, l, -1, &pooled))
            return sc_err(err, SC_EINVAL,
                          "calibrate: too few or degenerate %s communication points to fit "
                          "alpha and beta: %d (need at least 3 sizes)",
                          lname[l], n);
        /* each collective's own fit (ok[op]), once */
        sc_calib_fit g[SC_CALIB_COMM_N];
        memset(g, 0, sizeof g);
        int ok[SC_CALIB_COMM_N], nops = 0;
        for (int op = 0; op < SC_CALIB_COMM_N; op++)
            nops += ok[op] = !fit_alpha_beta(c, l, op, &g[op]);
        /* The simulator moves collectives at one beta per link class;
         * training traffic is dominated by allreduces (gradients, tensor
         * parallelism), so their own fit sets the class when there is one,
         * and the pooled fit only otherwise. */
        int from_allreduce = ok[SC_CALIB_ALLREDUCE];
        f = from_allreduce ? g[SC_CALIB_ALLREDUCE] : pooled;
        /* the error of the input cluster's alpha, beta on the same points */
        double nominal = l == SC_LINK_INTRA
                             ? c->base->intra.bytes_per_s
                             : c->base->inter.nics_per_node * c->base->inter.nic_bytes_per_s;
        /* the input cluster's error on the points of the fit that is used */
        double a0 = c->base->eff.alpha_s[l], b0 = nominal * c->base->eff.bw_eff[l], m0 = 0;
        int k = 0;
        for (int i = 0; i < c->pts->n_link; i++) {
            const sc_calib_link *q = &c->pts->link[i];
            if (q->link != l || (from_allreduce && q->op != SC_CALIB_ALLREDUCE))
                continue;
            double sv, v, o;
            coll_terms(c, q, &sv, &v, &o);
            /* the input's size ramp too, on collectives (cost.h; none on p2p) */
            double r0 =
                q->op == SC_CALIB_P2P ? 1 : sc_cost_coll_ramp(c->base, (sc_link)l, q->bytes);
            m0 += fabs((o + sv * a0 + v / (b0 * r0)) / q->t - 1);
            k++;
        }
        m0 = k ? m0 / k : 0;
        f.mape_before = m0;
        /* Point-to-point messages get their own share of the link when
         * both an allreduce fit and a p2p fit exist (a collective algorithm
         * may reach a different share than one message does), and so do the
         * reduce-scatters and all-gathers, fitted together (on H100 and H200
         * the allreduce runs in the switch and they do not) */
        int p2p = from_allreduce && ok[SC_CALIB_P2P];
        const sc_calib_fit fp = g[SC_CALIB_P2P];
        sc_calib_fit fg = {0};
        int agrs = from_allreduce && (ok[SC_CALIB_REDUCESCATTER] || ok[SC_CALIB_ALLGATHER]) &&
                   !fit_alpha_beta(c, l, FIT_AG_RS, &fg);
        out->eff.alpha_s[l] = f.a;
        /* the fit is the plain alpha-beta model: a size ramp the input had for this
         * class (a preset's, fitted to public nccl-tests curves) gives way to it */
        out->eff.s_half_bytes[l] = 0;
        out->eff.ramp_exp[l] = 1;
        /* and so do size factors it had (fit_links writes the new ones) */
        out->eff.coll_curve[l].n = 0;
        out->eff.p2p_curve[l].n = 0;
        double top = fmax(fmax(f.b, p2p ? fp.b : 0), agrs ? fg.b : 0);
        if (top > nominal) {
            if (l == SC_LINK_INTRA)
                out->intra.bytes_per_s = top;
            else
                out->inter.nic_bytes_per_s = top / (c->base->inter.nics_per_node > 0
                                                         ? c->base->inter.nics_per_node
                                                         : 1);
            add_note(rep, "%s: measured %.3g B/s above the nominal %.3g B/s; nominal raised",
                     lname[l], top, nominal);
            nominal = top;
        }
        char gw[48];
        int only = -1; /* the one op measured over this class, if one */
        for (int i = 0; i < c->pts->n_link; i++)
            if (c->pts->link[i].link == l)
                only = only < 0 || only == (int)c->pts->link[i].op ? (int)c->pts->link[i].op
                                                                   : SC_CALIB_COMM_N;
        snprintf(gw, sizeof gw, "%s links (%s)", lname[l],
                 from_allreduce ? "allreduce"
                 : only >= 0 && only < SC_CALIB_COMM_N ? comm_ops[only] : "all pooled");
        if (rep)
            link_gates(c, rep, l, from_allreduce ? SC_CALIB_ALLREDUCE : -1, &f, nominal, gw, 0);
        if (rep && p2p) {
            snprintf(gw, sizeof gw, "%s links (p2p)", lname[l]);
            link_gates(c, rep, l, SC_CALIB_P2P, &fp, nominal, gw, 0);
        }
        if (rep && agrs) {
            snprintf(gw, sizeof gw, "%s links (reduce-scatter, all-gather)", lname[l]);
            link_gates(c, rep, l, FIT_AG_RS, &fg, nominal, gw, 0);
        }
        out->eff.bw_eff[l] = fmin(1, fmax(1e-4, f.b / nominal));
        out->eff.fits.link[l] = (sc_fit_stats){f.n, f.r2, f.mape, f.rel_sd,
                                               {f.se_a, f.se_b / nominal}};
        side_share(p2p, &fp, nominal, &out->eff.p2p_bw_eff[l], &out->eff.fits.link_p2p[l]);
        side_share(agrs, &fg, nominal, &out->eff.ag_rs_bw_eff[l], &out->eff.fits.link_ag_rs[l]);
        if (rep && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
            sc_calib_fit shown = f;
            snprintf(shown.what, sizeof shown.what, "%s (used%s)", lname[l],
                     agrs ? ", allreduce" : p2p ? ", coll." : "");
            rep->fits[rep->n_fits++] = shown;
            if (nops > 1 && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
                pooled.mape_before = -1;
                snprintf(pooled.what, sizeof pooled.what, "%s (all pooled)", lname[l]);
                rep->fits[rep->n_fits++] = pooled;
            }
        }
        for (int op = 0; op < SC_CALIB_COMM_N && rep && nops > 1; op++) {
            if (rep->n_fits < (int)SC_ARRAY_LEN(rep->fits) && ok[op]) {
                sc_calib_fit shown = g[op];
                snprintf(shown.what, sizeof shown.what, "%s %s%s", lname[l], comm_ops[op],
                         p2p && op == SC_CALIB_P2P ? " (used)" : "");
                shown.mape_before = -1;
                rep->fits[rep->n_fits++] = shown;
            }
        }
        if (rep && agrs && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
            sc_calib_fit shown = fg;
            snprintf(shown.what, sizeof shown.what, "%s rs + ag (used)", lname[l]);
            shown.mape_before = -1;
            rep->fits[rep->n_fits++] = shown;
        }
    }
    return SC_OK;
}

/* The cold collectives of each link class (files of `bench --cold`): their own
 * alpha-beta line (allreduces' when there are some, else every op's), after
 * the warm fit, whose nominal it shares. */
static void fit_cold_links(ctx *c, const int *refit, sc_cluster *out, sc_calib_report *rep)
{
    static const char *const lname[] = {"intra", "inter"};
    for (int l = 0; l < SC_LINK_N; l++) {
        if (refit[l]) { /* a cold line of the input's would belong to its old warm one */
            out->eff.cold_alpha_s[l] = 0;
            out->eff.cold_bw_eff[l] = 0;
            out->eff.fits.link_cold[l] = (sc_fit_stats){0};
        }
        int n = 0, nar = 0;
        for (int i = 0; i < c->pts->n_link; i++) {
            n += c->pts->link[i].link == l;
            nar += c->pts->link[i].link == l && c->pts->link[i].op == SC_CALIB_ALLREDUCE;
        }
        if (n == 0)
            continue;
        int op = nar ? SC_CALIB_ALLREDUCE : -1;
        double nominal = l == SC_LINK_INTRA
                             ? out->intra.bytes_per_s
                             : out->inter.nics_per_node * out->inter.nic_bytes_per_s;
        sc_calib_fit f = {0};
        char gw[48];
        snprintf(gw, sizeof gw, "%s links, cold (%s)", lname[l], nar ? "allreduce" : "pooled");
        if (fit_alpha_beta(c, l, op, &f)) {
            if (rep)
                gate(rep, gw, "", "sizes", n, 3, 1, COLD_SIZES,
                     "%d cold points cannot fit alpha and beta", n);
            continue;
        }
        /* the warm line's error on the cold points: what the fit changes */
        double m0 = 0;
        int k = 0;
        for (int i = 0; i < c->pts->n_link; i++) {
            const sc_calib_link *q = &c->pts->link[i];
            if (q->link != l || (op >= 0 && (int)q->op != op))
                continue;
            m0 += fabs(warm_line_time(c, q, out, l) / q->t - 1);
            k++;
        }
        f.mape_before = k ? m0 / k : 0;
        if (rep)
            link_gates(c, rep, l, op, &f, nominal, gw, 1);
        out->eff.cold_alpha_s[l] = f.a;
        out->eff.cold_bw_eff[l] = fmin(1, fmax(1e-4, f.b / nominal));
        out->eff.fits.link_cold[l] = (sc_fit_stats){f.n, f.r2, f.mape, f.rel_sd,
                                                    {f.se_a, f.se_b / nominal}};
        if (rep && rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
            snprintf(f.what, sizeof f.what, "%s cold (dp)", lname[l]);
            rep->fits[rep->n_fits++] = f;
        }
    }
}

/* The size factors of class l's op (allreduce: every warm collective's; p2p)
 * from the warm points w[0..n), all sizes, when out's line for them was fitted
 * over [lo, hi] alone (keep_plan_regimes): factor 1 there; at each bench size
 * outside, the line's time over the size's median time, which the cost models
 * divide the line's time by (sc_size_curve); at each step between two sizes (LINK_JUMP_RATIO), a point
 * either side of their geometric mean, one byte apart, so the factor changes
 * where plan_regime moves a message from one side to the other. Points whose
 * neighbours carry the same factor are dropped. 0 on success (cv->n 0 when
 * every factor is 1); -1 when the curve needs more than SC_SIZE_CURVE_MAX
 * points. words gets the factors outside [lo, hi] in words. */
static int size_curve(const ctx *c, const sc_calib_link *w, int n, int l, int op, double lo,
                      double hi, const sc_cluster *out, sc_size_curve *cv, char *words,
                      size_t cap)
{
    enum { MAXP = 4 * SC_SIZE_CURVE_MAX };
    const sc_calib_link **q = sc_malloc(sizeof *q * ((size_t)n + 1));
    size_med *s = sc_malloc(sizeof *s * ((size_t)n + 1));
    double *pb = sc_malloc(sizeof *pb * 2 * MAXP), *pf = pb ? pb + MAXP : NULL;
    int m = 0, k = 0, np = 0, rc = 0;
    cv->n = 0;
    words[0] = 0;
    if (!q || !s || !pb) {
        rc = -1;
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (w[i].link == l && (int)w[i].op == op && !w[i].cold)
            q[m++] = &w[i];
    if (m < 2)
        goto done;
    qsort(q, (size_t)m, sizeof *q, by_op_n_bytes);
    k = size_medians(q, m, s);
    size_t used = 0;
    for (int j = 0; j < k && np + 3 <= MAXP; j++) {
        double f = 1;
        if (s[j].bytes < lo * (1 - 1e-9) || s[j].bytes > hi * (1 + 1e-9)) {
            sc_calib_link p = *q[0];
            p.bytes = s[j].bytes;
            f = warm_line_time(c, &p, out, l) / s[j].t;
            f = fmin(SC_SIZE_FACTOR_MAX, fmax(SC_SIZE_FACTOR_MIN, f));
            char sw[24];
            size_words(s[j].bytes, sw, sizeof sw);
            if (used < cap)
                used += (size_t)snprintf(words + used, cap - used, "%s%s x%.3g",
                                         used ? ", " : "", sw, f);
        }
        if (j > 0 && jump_ratio(s[j - 1], s[j]) > LINK_JUMP_RATIO) {
            double mid = floor(sqrt(s[j - 1].bytes * s[j].bytes));
            if (mid > s[j - 1].bytes && mid + 1 < s[j].bytes) {
                pb[np] = mid;
                pf[np] = pf[np - 1];
                np++;
                pb[np] = mid + 1;
                pf[np++] = f;
            }
        }
        pb[np] = s[j].bytes;
        pf[np++] = f;
    }
    /* drop the points between two of the same factor, and the ends' repeats */
    int kept = 0;
    for (int i = 0; i < np; i++) {
        int same_prev = i > 0 && pf[i - 1] == pf[i], same_next = i + 1 < np && pf[i + 1] == pf[i];
        if ((same_prev && same_next) || (i == 0 && same_next) || (i == np - 1 && same_prev))
            continue;
        pb[kept] = pb[i];
        pf[kept++] = pf[i];
    }
    int ones = 1;
    for (int i = 0; i < kept; i++)
        ones &= pf[i] == 1;
    if (ones)
        goto done;
    if (kept > SC_SIZE_CURVE_MAX) {
        rc = -1;
        goto done;
    }
    for (int i = 0; i < kept; i++) {
        cv->bytes[i] = pb[i];
        cv->factor[i] = pf[i];
    }
    cv->n = kept;
done:
    sc_free(q);
    sc_free(s);
    sc_free(pb);
    return rc;
}

/* The size factors of every class whose allreduce or p2p line keep_plan_regimes
 * fitted over one regime (size_curve), from the warm points of all sizes. */
static void fit_size_curves(const ctx *c, double regime[SC_LINK_N][SC_CALIB_COMM_N][2],
                            sc_cluster *out, sc_calib_report *rep)
{
    static const char *const lname[] = {"intra", "inter"};
    const sc_calib_points *all = c->pts;
    for (int l = 0; l < SC_LINK_N; l++)
        for (int pass = 0; pass < 2; pass++) {
            int op = pass ? SC_CALIB_P2P : SC_CALIB_ALLREDUCE;
            if (!(regime[l][op][1] > 0))
                continue;
            sc_size_curve *cv = pass ? &out->eff.p2p_curve[l] : &out->eff.coll_curve[l];
            char words[256];
            const char *key = pass ? "p2p_size_factors" : "size_factors";
            if (size_curve(c, all->link, all->n_link, l, op, regime[l][op][0], regime[l][op][1],
                           out, cv, words, sizeof words)) {
                cv->n = 0;
                add_note(rep, "%s %s: no size factors: more than %d points", lname[l],
                         comm_ops[op], SC_SIZE_CURVE_MAX);
            } else if (cv->n > 0 && !all->size_factors) {
                cv->n = 0; /* measured, not written: calibrate.h says why */
                add_note(rep, "%s %s: the bench sizes outside it not kept (--size-factors "
                         "keeps them as factors dividing the line's time: %s)",
                         lname[l], comm_ops[op], words);
            } else if (cv->n > 0) {
                add_note(rep, "%s %s: the bench sizes outside it kept as measured, as factors "
                         "dividing the line's time (efficiency.%s.%s): %s",
                         lname[l], comm_ops[op], lname[l], key, words);
            }
        }
}

/* The warm collectives (and p2p) set alpha_s, bw_eff, p2p_bw_eff of each
 * link class; the cold ones, when measured, cold_alpha_s and cold_bw_eff.
 * Each fit sees only its own points (a view of the point arrays). */
static sc_status fit_links(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    static const char *const lname[] = {"intra", "inter"};
    const sc_calib_points *all = c->pts;
    int refit[SC_LINK_N] = {0}; /* the classes with warm points */
    for (int i = 0; i < all->n_link; i++)
        refit[all->link[i].link] |= !all->link[i].cold;
    for (int i = 0; i < all->n_link; i++) {
        const sc_calib_link *q = &all->link[i];
        if (q->cold && !refit[q->link])
            return sc_err(err, SC_EINVAL,
                          "calibrate: %s: cold collectives over %s links but no warm ones: "
                          "bench the same op without --cold too",
                          all->files && q->file >= 0 && q->file < all->n_files
                              ? all->files[q->file] : "input",
                          lname[q->link]);
    }
    sc_calib_link *w = sc_malloc(sizeof *w * ((size_t)all->n_link + 1));
    if (!w)
        return sc_err(err, SC_ENOMEM, "out of memory");
    sc_calib_points view = *all;
    ctx cc = *c;
    cc.pts = &view;
    view.link = w;
    sc_status st = SC_OK;
    double regime[SC_LINK_N][SC_CALIB_COMM_N][2];
    memset(regime, 0, sizeof regime);
    cc.regime = regime;
    for (int cold = 0; cold < 2 && !st; cold++) {
        view.n_link = 0;
        for (int i = 0; i < all->n_link; i++)
            if (!all->link[i].cold == !cold)
                w[view.n_link++] = all->link[i];
        if (!cold)
            view.n_link = keep_plan_regimes(&cc, w, view.n_link, rep, regime);
        if (cold) {
            fit_cold_links(&cc, refit, out, rep);
        } else {
            st = fit_warm_links(&cc, out, rep, err);
            if (!st)
                fit_size_curves(c, regime, out, rep);
        }
    }
    sc_free(w);
    return st;
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
        for (int i = 0; i < c->pts->n_host; i++)
            if (c->pts->host[i].link == l) {
                n++;
                sg += c->pts->host[i].gap;
                sb += c->pts->host[i].bytes;
            }
        if (n < 3 || !(sb > 0))
            continue;
        double h = sg / sb, ss = 0, mape = 0, rm = 0, rv = 0, mean = sg / n, sst = 0, ssr = 0;
        double bmin = INFINITY, bmax = 0;
        for (int i = 0; i < c->pts->n_host; i++) {
            const sc_calib_host *q = &c->pts->host[i];
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
        for (int i = 0; i < c->pts->n_host; i++) {
            const sc_calib_host *q = &c->pts->host[i];
            if (q->link == l && q->gap > 0) {
                double r = h * q->bytes / q->gap - 1;
                rv += (r - rm) * (r - rm);
            }
        }
        if (rep) {
            char gw[48], files[160];
            int *fi = sc_malloc(sizeof(int) * (size_t)c->pts->n_host + 1), k = 0;
            for (int i = 0; fi && i < c->pts->n_host; i++)
                if (c->pts->host[i].link == l)
                    fi[k++] = c->pts->host[i].file;
            if (fi)
                file_list(c->pts, fi, k, files, sizeof files);
            else
                files[0] = '\0';
            sc_free(fi);
            snprintf(gw, sizeof gw, "%s host time", lname[l]);
            int sized0 = bmax > bmin * (1 + 1e-9);
            /* judged on each rank's host time per step: its gaps summed */
            double gm = 0;
            int ng = 0;
            for (int i = 0; i < c->pts->n_host; i++) {
                const sc_calib_host *q = &c->pts->host[i];
                int first = q->link == l;
                for (int j = 0; first && j < i; j++)
                    first = !(c->pts->host[j].link == l && c->pts->host[j].file == q->file &&
                              c->pts->host[j].rank == q->rank);
                if (!first)
                    continue;
                double g = 0, b = 0;
                for (int j = i; j < c->pts->n_host; j++)
                    if (c->pts->host[j].link == l && c->pts->host[j].file == q->file &&
                        c->pts->host[j].rank == q->rank) {
                        g += c->pts->host[j].gap;
                        b += c->pts->host[j].bytes;
                    }
                if (g > 0) {
                    gm += fabs(h * b / g - 1);
                    ng++;
                }
            }
            gm = ng ? gm / ng : 0;
            fit_gates(rep, gw, files, n, 1, "gaps", sized0 && sst > 0 ? 1 - ssr / sst : NAN,
                      " of each rank's host time per step", gm, SC_CALIB_HOST_MAPE_CEILING,
                      "exec a pipeline plan with more microbatches",
                      "the gaps after sends do not grow with the bytes sent: rerun exec on a "
                      "quiet machine");
            bound_gate(rep, gw, files, "host time per byte", h, -INFINITY, 1e-6,
                       "the host time reached its cap: the gaps are not the sender's TCP work");
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

/* ---- the overlap slowdown ----------------------------------------------------------- */

/* An overlap point's duration with slowdown k: its lone work t0, a share phi
 * of its span at rate 1 / (1 + k) (calibrate.h). */
static double overlap_pred(const sc_calib_overlap *q, double k)
{
    return q->t0 / (1 - q->phi + q->phi / (1 + k));
}

static double overlap_ss(const sc_calib_points *pts, double k)
{
    double ss = 0;
    for (int i = 0; i < pts->n_overlap; i++) {
        double r = overlap_pred(&pts->overlap[i], k) / pts->overlap[i].t - 1;
        ss += r * r;
    }
    return ss;
}

#define OVERLAP_HI 1.0 /* the cluster file's limit (cluster.h) */

static void fit_overlap(ctx *c, sc_cluster *out, sc_calib_report *rep)
{
    const sc_calib_points *pts = c->pts;
    int n = pts->n_overlap;
    if (n == 0) {
        if (pts->n_plans > 0)
            add_note(rep, "overlap slowdown kept at %.3g: no measured compute op ran beside a "
                     "data-parallel collective", out->eff.overlap_slowdown);
        return;
    }
    /* golden-section search of [0, 1], then the ends: a point's duration
     * rises with k and flattens, so the squared residuals have one minimum
     * for all practical points */
    const double g = (sqrt(5.0) - 1) / 2;
    double lo = 0, hi = OVERLAP_HI;
    double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
    double fa = overlap_ss(pts, a), fb = overlap_ss(pts, b);
    for (int it = 0; it < 200 && hi - lo > 1e-12; it++) {
        if (fa <= fb) {
            hi = b, b = a, fb = fa;
            a = hi - g * (hi - lo);
            fa = overlap_ss(pts, a);
        } else {
            lo = a, a = b, fa = fb;
            b = lo + g * (hi - lo);
            fb = overlap_ss(pts, b);
        }
    }
    double k = (lo + hi) / 2;
    if (overlap_ss(pts, 0) <= overlap_ss(pts, k))
        k = 0;
    if (overlap_ss(pts, OVERLAP_HI) < overlap_ss(pts, k))
        k = OVERLAP_HI;
    /* statistics: relative residuals measured/predicted - 1, R² of the times,
     * the standard error from the residuals and the slope in k */
    double mape = 0, rm = 0, rv = 0, mean = 0, ssr = 0, sst = 0, jj = 0;
    for (int i = 0; i < n; i++)
        mean += pts->overlap[i].t / n;
    for (int i = 0; i < n; i++) {
        const sc_calib_overlap *q = &pts->overlap[i];
        double p = overlap_pred(q, k), r = q->t / p - 1, d = q->t0 * q->phi /
                   ((1 + k) * (1 + k) * pow(1 - q->phi + q->phi / (1 + k), 2));
        mape += fabs(p / q->t - 1) / n;
        rm += r / n;
        ssr += (q->t - p) * (q->t - p);
        sst += (q->t - mean) * (q->t - mean);
        jj += d / q->t * (d / q->t);
    }
    for (int i = 0; i < n; i++) {
        double r = pts->overlap[i].t / overlap_pred(&pts->overlap[i], k) - 1;
        rv += (r - rm) * (r - rm);
    }
    double se = n > 1 && jj > 0 ? sqrt(overlap_ss(pts, k) / (n - 1) / jj) : 0;
    double r2 = sst > 0 ? 1 - ssr / sst : 0;
    int distinct_pts = 0;
    {
        double *u = sc_malloc(sizeof *u * (size_t)n), *v = sc_malloc(sizeof *v * (size_t)n);
        int *fi = sc_malloc(sizeof *fi * (size_t)n);
        char files[160] = "";
        if (u && v && fi) {
            for (int i = 0; i < n; i++) {
                u[i] = pts->overlap[i].t0;
                v[i] = pts->overlap[i].phi;
                fi[i] = pts->overlap[i].file;
            }
            distinct_pts = distinct(u, v, n);
            file_list(pts, fi, n, files, sizeof files);
        } else {
            distinct_pts = n;
        }
        sc_free(u), sc_free(v), sc_free(fi);
        /* R² is not judged: the lone durations t0 explain nearly all of the
         * times' spread, so it says nothing about k */
        fit_gates(rep, "overlap slowdown", files, distinct_pts, 1, "ops beside collectives",
                  NAN, " of the ops beside collectives", mape, SC_CALIB_MAPE_CEILING,
                  "exec a plan with data parallelism and more microbatches, so that more "
                  "kinds of op run beside the gradient reduction",
                  "the ops beside collectives do not slow as one factor says: rerun exec on a "
                  "quiet machine");
        bound_gate(rep, "overlap slowdown", files, "slowdown", k, -INFINITY, OVERLAP_HI,
                   "the ops beside collectives took more than twice their time alone: they "
                   "waited for something besides the device (check the timeline)");
    }
    out->eff.overlap_slowdown = k;
    out->eff.fits.overlap = (sc_fit_stats){n, r2, mape, n > 1 ? sqrt(rv / (n - 1)) : 0,
                                           {se, 0}};
    rep->n_overlap = n;
    rep->overlap_slowdown = k;
    rep->overlap_se = se;
    if (rep->n_fits < (int)SC_ARRAY_LEN(rep->fits)) {
        sc_calib_fit f = {0};
        f.n = n;
        f.a = k;
        f.se_a = se;
        f.r2 = NAN; /* not judged (above) */
        f.mape = mape;
        f.rel_sd = out->eff.fits.overlap.rel_sd;
        f.mape_before = 0;
        for (int i = 0; i < n; i++)
            f.mape_before += fabs(overlap_pred(&pts->overlap[i], c->base->eff.overlap_slowdown) /
                                  pts->overlap[i].t - 1) / n;
        snprintf(f.what, sizeof f.what, "overlap slowdown");
        rep->fits[rep->n_fits++] = f;
    }
}

/* ---- driver ------------------------------------------------------------------------- */

/* What only a caller's bug can break: op points that name a plan, stage
 * and kind that exist, plans with a partition of pp·v stages. */
static void check_points(const sc_calib_points *pts)
{
    for (int p = 0; p < pts->n_plans; p++) {
        const sc_calib_plan *pl = &pts->plans[p];
        assert(pl->model && pl->part && pl->pp >= 1 && pl->v >= 1 && pl->dp >= 1);
        assert(pl->part->n_stages == pl->pp * pl->v);
        (void)pl;
    }
    for (int j = 0; j < pts->n_ops; j++) {
        const sc_calib_op *q = &pts->ops[j];
        assert(q->plan >= 0 && q->plan < pts->n_plans);
        assert(q->kind == SC_OP_F || q->kind == SC_OP_B || q->kind == SC_OP_W ||
               q->kind == SC_OP_RECOMPUTE || q->kind == SC_OP_OPTIMIZER);
        assert(q->stage >= 0 && q->stage < (q->kind == SC_OP_OPTIMIZER
                                                ? pts->plans[q->plan].pp
                                                : pts->plans[q->plan].part->n_stages));
        (void)q;
    }
    for (int i = 0; i < pts->n_link; i++) {
        assert(pts->link[i].link >= 0 && pts->link[i].link < SC_LINK_N);
        assert((unsigned)pts->link[i].op < SC_CALIB_COMM_N && pts->link[i].n >= 1);
    }
    for (int i = 0; i < pts->n_host; i++)
        assert(pts->host[i].link >= 0 && pts->host[i].link < SC_LINK_N);
    for (int i = 0; i < pts->n_overlap; i++)
        assert(pts->overlap[i].t > 0 && pts->overlap[i].t0 > 0 &&
               pts->overlap[i].phi >= SC_CALIB_OVERLAP_MIN_PHI && pts->overlap[i].phi <= 1);
}

/* The replay gate (calibrate.h): each measured plan's whole step simulated
 * on the calibrated cluster res beside its measured step. */
static void replay_gates(const sc_calib_points *pts, const sc_cluster *res, sc_calib_report *rep)
{
    if (!pts->replay)
        return;
    for (int p = 0; p < pts->n_plans; p++) {
        const sc_calib_plan *pl = &pts->plans[p];
        if (!(pl->step_s > 0))
            continue;
        const char *file = pts->files && pl->file >= 0 && pl->file < pts->n_files
                               ? pts->files[pl->file]
                               : "";
        double pred = 0;
        char why[128] = "";
        if (pts->replay(pts->replay_ctx, p, res, &pred, why, sizeof why) || !(pred > 0)) {
            gate(rep, "replay (its step)", file, "replay", NAN, SC_CALIB_REPLAY_CEILING, 1,
                 "check the plan opens on the calibrated cluster (stagecraft compare)",
                 "the calibrated cluster cannot simulate it: %s", why[0] ? why : "no step");
            continue;
        }
        double e = pred / pl->step_s - 1;
        gate(rep, "replay (its step)", file, "replay", e, SC_CALIB_REPLAY_CEILING,
             !(fabs(e) <= SC_CALIB_REPLAY_CEILING),
             "its step holds what the fits do not see (waits, communication as exec ran it, "
             "against the benches): stagecraft compare it with the output (--force) to see "
             "which op kind, bench over the sizes it sends, rerun exec on a quiet machine",
             "step %.4g ms simulated against %.4g ms measured: %+.1f%% (ceiling %.0f%%)",
             1e3 * pred, 1e3 * pl->step_s, 100 * e, 100 * SC_CALIB_REPLAY_CEILING);
    }
}

/* The refusal: the first failed gate in full, and how many more. */
static sc_status refuse(const sc_calib_report *rep, sc_error *err)
{
    const sc_calib_gate *g = NULL;
    for (int i = 0; i < rep->n_gates && !g; i++)
        if (rep->gates[i].failed)
            g = &rep->gates[i];
    if (!g)
        return sc_err(err, SC_EGATE, "calibrate: %d quality gates failed", rep->n_failed);
    int more = rep->n_failed - 1;
    char tail[96] = "";
    if (more > 0)
        snprintf(tail, sizeof tail, " (and %d more failed gate%s)", more, more == 1 ? "" : "s");
    return sc_err(err, SC_EGATE,
                  "%s%sfit refused: %s: gate %s: %s: %s%s; nothing written (--force writes "
                  "anyway and records the failed gates)",
                  g->files, g->files[0] ? ": " : "", g->what, g->gate, g->figure, g->fix, tail);
}

/* ---- kernels timed alone (calibrate.h) ------------------------------------------ */

#define KERN_S_LO 0.05 /* sustained: the clock's fraction held, or past 1 a faster rule */
#define KERN_S_HI 5.0

double sc_calib_kernel_time(const sc_cluster *cl, sc_dtype dt, const sc_calib_kernel *q)
{
    if (q->n_gemm == 0)
        return sc_cost_pass_time(cl, q->bytes);
    double t = 0, bf = cl->eff.bwd_factor > 0 ? cl->eff.bwd_factor : 1;
    for (int j = 0; j < q->n_gemm && j < 2; j++) {
        const double *g = q->gemm[j];
        t += sc_cost_gemm_chunks_time(cl, dt, g[0], g[1], g[2], g[3], g[4] > 0 ? bf : 1,
                                      (int)g[5]);
    }
    return t;
}

/* A kernel point's three regressors under cluster u (sustained 1, no
 * kernel_s): kernels in the call, their GEMM time, a pass's bytes / hbm. */
static void kern_terms(const sc_cluster *u, sc_dtype dt, const sc_calib_kernel *q, double x[3])
{
    int gemm = q->n_gemm > 0;
    double launches = 0, rows; /* a GEMM in chunks launches each */
    for (int j = 0; j < q->n_gemm && j < 2; j++)
        launches += sc_cost_gemm_chunks(q->gemm[j][1], (int)q->gemm[j][5], &rows);
    x[0] = gemm ? launches : 1;
    x[1] = gemm ? sc_calib_kernel_time(u, dt, q) : 0;
    x[2] = gemm ? 0 : q->bytes / u->gpu.hbm_bytes_per_s;
}

/* The fit of "kernels timed alone" (calibrate.h), on the GEMM model fitted
 * so far (out); sets out's kernel_s, sustained and memory_bw. */
static sc_status fit_kernels(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    const sc_calib_points *pts = c->pts;
    int n = pts->n_kern;
    if (n == 0)
        return SC_OK;
    if (!pts->fit_kernels) {
        add_note(rep, "%d kernels timed alone not fitted (calibrate --kernels fits them)", n);
        return SC_OK;
    }
    if (!(out->eff.gemm.sms > 0)) {
        add_note(rep, "%d kernels timed alone not fitted: %s has no kernel-level GEMM model "
                 "(efficiency.gemm)", n, out->name);
        return SC_OK;
    }
    sc_cluster u = *out;
    u.eff.gemm.sustained = 1;
    u.eff.gemm.kernel_s = 0;
    double (*x)[3] = sc_malloc(sizeof *x * (size_t)n);
    double *t = sc_malloc(sizeof *t * (size_t)n), *pred = sc_malloc(sizeof *pred * (size_t)n);
    int *files = sc_malloc(sizeof *files * (size_t)n);
    wls L;
    int got = !wls_alloc(&L, n, 3); /* n <= 3: too few, said below */
    sc_status st = x && t && pred && files && (got || n <= 3)
                       ? SC_OK
                       : sc_err(err, SC_ENOMEM, "calibrate: out of memory");
    int ng = 0, nm = 0;
    for (int i = 0; !st && i < n; i++) {
        const sc_calib_kernel *q = &pts->kern[i];
        kern_terms(&u, c->dt, q, x[i]);
        t[i] = q->t;
        files[i] = q->file;
        pred[i] = sc_calib_kernel_time(c->base, c->dt, q);
    }
    double before = st ? 0 : point_stats(pred, t, n).mape;
    /* distinct shapes of each kind: GEMM calls by their count and time,
     * passes by their bytes */
    for (int i = 0; !st && i < n; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = same(x[i][0], x[k][0]) && same(x[i][1], x[k][1]) && same(x[i][2], x[k][2]);
        if (!seen)
            *(pts->kern[i].n_gemm > 0 ? &ng : &nm) += 1;
    }
    int need = SC_CALIB_POINTS_PER_PARAM;
    if (!st && (ng < need || nm < need || !got)) {
        add_note(rep, "%d kernels timed alone not fitted: %d distinct GEMM calls and %d passes "
                 "(need %d of each)", n, ng, nm, need);
        goto done;
    }
    char fl[512];
    file_list(pts, files, n, fl, sizeof fl);
    double chi2 = 0, coef[3] = {0}, se[3] = {0};
    if (!st) {
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++)
                gsl_matrix_set(L.X, (size_t)i, (size_t)k, x[i][k]);
            gsl_vector_set(L.y, (size_t)i, t[i]);
            gsl_vector_set(L.w, (size_t)i, 1 / (t[i] * t[i]));
        }
        int gs = wls_solve(&L, &chi2);
        if (gs)
            st = sc_err(err, SC_EINVAL, "calibrate: the fit of the kernels timed alone failed: %s",
                        gsl_strerror(gs));
    }
    if (st)
        goto done;
    /* wlinear's covariance takes the weights as exact variances; the relative
     * residuals' own scatter scales it */
    for (int k = 0; k < 3; k++) {
        coef[k] = gsl_vector_get(L.c, (size_t)k);
        se[k] = sqrt(fmax(0, gsl_matrix_get(L.cov, (size_t)k, (size_t)k) * chi2 / (n - 3)));
    }
    /* sustained = 1/a and memory_bw = 1/b, held in their limits (a bound gate
     * refuses a fit that ends at one); kernel_s >= 0 likewise */
    double a = coef[1], bb = coef[2];
    double sus = a > 0 ? fmin(KERN_S_HI, fmax(KERN_S_LO, 1 / a)) : KERN_S_HI;
    double mem = bb > 0 ? fmin(EFF_HI, fmax(EFF_LO, 1 / bb)) : EFF_HI;
    double ks = fmin(GEMM_KS_HI, fmax(0, coef[0]));
    for (int i = 0; i < n; i++)
        pred[i] = ks * x[i][0] + x[i][1] / sus + x[i][2] / mem;
    stats sx = point_stats(pred, t, n);
    const char *what = "kernels timed alone";
    const char *fixp = "exec --kernels on plans of more shapes (microbatch sizes, hidden sizes)";
    const char *fixf = "exec --kernels again on a quiet device; check the GEMM sweep against "
                       "the device (bench gemm)";
    fit_gates(rep, what, fl, ng + nm, 3, "kernel shapes", sx.r2, "", sx.mape,
              SC_CALIB_MAPE_CEILING, fixp, fixf);
    bound_gate(rep, what, fl, "sustained", sus, KERN_S_LO, KERN_S_HI, fixf);
    bound_gate(rep, what, fl, "memory_bw", mem, EFF_LO, EFF_HI, fixf);
    gate(rep, what, fl, "bound", coef[0], 0, !(coef[0] > 0), fixf,
         "kernel_s %.4g%s", coef[0], coef[0] > 0 ? " inside its limits" : " at its lower limit");
    /* into the cluster: a rate past the rule's goes into eff_max, past the
     * nominal peak into the peak; a pass past nominal HBM into the HBM */
    double ge = out->eff.gemm.eff_max;
    if (sus > 1) {
        ge *= sus;
        out->eff.gemm.sustained = 1;
    } else {
        out->eff.gemm.sustained = sus;
    }
    if (ge > 1) {
        add_note(rep, "%s: the kernels timed alone ran at %.3g of the nominal peak; nominal "
                 "raised", sc_dtype_name(c->dt), ge);
        out->gpu.peak_flops[c->dt] *= ge;
        ge = 1;
    }
    out->eff.gemm.eff_max = ge;
    if (mem > 1) {
        add_note(rep, "memory passes timed alone reached %.3g B/s, above the nominal %.3g B/s; "
                 "nominal raised", out->gpu.hbm_bytes_per_s * mem, out->gpu.hbm_bytes_per_s);
        out->gpu.hbm_bytes_per_s *= mem;
        mem = 1;
    }
    out->eff.memory_bw = mem;
    out->eff.gemm.kernel_s = ks;
    out->eff.fits.gemm.se[1] = se[0];
    c->kern_fitted = 1;
    if (rep) {
        rep->n_kern = n;
        rep->kern_sustained = sus;
        rep->kern_sustained_se = a > 0 ? se[1] / (a * a) : 0;
        rep->kern_kernel_s = ks;
        rep->kern_kernel_se = se[0];
        rep->kern_memory_bw = mem;
        rep->kern_memory_bw_se = bb > 0 ? se[2] / (bb * bb) : 0;
        rep->kern_r2 = sx.r2;
        rep->kern_mape = sx.mape;
        rep->kern_mape_before = before;
    }
done:
    sc_free(x);
    sc_free(t);
    sc_free(pred);
    sc_free(files);
    wls_free(&L);
    return st;
}

/* ---- fused attention by shape ----------------------------------------------- */

#define FLASH_S0_HI 65536.0 /* tokens: the grid of the fall's fit */
#define FLASH_REF_HD 128    /* the model's reference head size (cost_kernel.c) */

/* A point's measured forward and backward seconds and its benchmark FLOPs */
static void flash_times(const sc_calib_flash *q, double *tf, double *tb, double *fl)
{
    *fl = 4 * q->bh * q->seq * q->seq * q->head_dim * (q->causal ? 0.5 : 1);
    *tf = *fl / q->fwd_flops_s;
    *tb = 3.5 * *fl / q->fwd_bwd_flops_s - *tf;
}

/* The model's forward and backward seconds of q's kernel under cl */
static void flash_pred(const sc_cluster *cl, sc_dtype dt, const sc_calib_flash *q, double *tf,
                       double *tb)
{
    sc_cluster u = *cl;
    u.eff.gemm.flash_gemms = 0; /* as a fused kernel runs, not the executor's stand-in */
    sc_compute_cfg cc = {dt, 1, 0, 1, SC_ATTN_FLASH, 0, 0, 0, 0, 0};
    sc_kernel k = sc_kernel_flash("flash", q->bh, q->seq, q->seq, q->head_dim, q->causal,
                                  SC_KTP_BATCH);
    *tf = sc_cost_kernel_time(&u, &k, &cc, 0);
    *tb = sc_cost_kernel_time(&u, &k, &cc, 1);
}

/* The sum of squared relative errors of R s / (s + s0) against the rates
 * y[] at sequences s[], R (*r) in closed form for this s0. */
static double fall_sse(const double *s, const double *y, int n, double s0, double *r)
{
    double num = 0, den = 0, sse = 0;
    for (int i = 0; i < n; i++) {
        double f = s[i] / (s[i] + s0) / y[i];
        num += f, den += f * f;
    }
    *r = num / den;
    for (int i = 0; i < n; i++) {
        double e = *r * s[i] / (s[i] + s0) / y[i] - 1;
        sse += e * e;
    }
    return sse;
}

/* R s / (s + s0) through y[] at s[]: the s0 minimising the squared relative
 * error on a grid of 2 tokens (every 32, then every 2 around the best: the
 * error is smooth in s0, and a file of many points costs 1,100 passes, not
 * 32,768), R in closed form. */
static void fit_fall(const double *s, const double *y, int n, double *r, double *s0_out)
{
    double best = INFINITY, c0 = 0, rr;
    for (double s0 = 0; s0 <= FLASH_S0_HI; s0 += 32) {
        double e = fall_sse(s, y, n, s0, &rr);
        if (e < best)
            best = e, c0 = s0;
    }
    best = INFINITY;
    for (double s0 = fmax(0, c0 - 32); s0 <= c0 + 32; s0 += 2) {
        double e = fall_sse(s, y, n, s0, &rr);
        if (e < best)
            best = e, *r = rr, *s0_out = s0;
    }
}

/* Fused attention (scripts/bench_flash.py): from the causal points at head
 * size 128 (and above, where the model's rate is the same) flash_fwd and
 * its fall flash_s0, flash_bwd and its fall flash_s0_bwd (the backward
 * falls later: on one H200 its s0 was 2.5-3 times the forward's, in
 * PyTorch's FlashAttention-2 and in cuDNN's); from the unmasked ones
 * flash_full (one multiplier of both), flash_s0_full and flash_s0_full_bwd
 * (kept without them); from those at head size 64 and below
 * flash_hd64 (kept without them). The rates are relative to the dtype's
 * peak at the cluster's sustained clock, as the model runs them, each time
 * less the time per kernel; the backward's is the forward + backward's
 * time less the forward's, over the backward factor. Gated like the other
 * fits: points, the model's MAPE over every point (forward and backward),
 * and flash_fwd, flash_bwd inside (0, 1]. */
static sc_status fit_flash(ctx *c, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    const sc_calib_points *pts = c->pts;
    int n = pts->n_flash;
    if (n == 0)
        return SC_OK;
    if (!(out->eff.gemm.sms > 0)) {
        add_note(rep, "%d fused attention points not fitted: %s has no kernel-level GEMM model "
                 "(efficiency.gemm)", n, out->name);
        return SC_OK;
    }
    sc_dtype dt = pts->flash_dtype;
    double sus = out->eff.gemm.sustained > 0 ? out->eff.gemm.sustained : 1;
    double peak = c->base->gpu.peak_flops[dt] * sus, ks = out->eff.gemm.kernel_s;
    double bf = out->eff.bwd_factor > 0 ? out->eff.bwd_factor : 1;
    /* per point: its sequence, the series' rates (s, yf, yb: reused per
     * series), its forward and backward rate as a fraction of the peak (pf,
     * pb), and measured and predicted seconds forward and backward, fitted
     * and before (t, p1, p0: 2 each) */
    double *buf = sc_malloc(sizeof *buf * 11 * (size_t)n);
    int *files = sc_malloc(sizeof *files * (size_t)n);
    if (!buf || !files) {
        sc_free(buf);
        sc_free(files);
        return sc_err(err, SC_ENOMEM, "calibrate: out of memory");
    }
    double *s = buf, *yf = s + n, *yb = yf + n, *pf = yb + n, *pb = pf + n;
    double *t = pb + n, *p1 = t + 2 * n, *p0 = p1 + 2 * n;
    for (int i = 0; i < n; i++) {
        double tf, tb, fl;
        flash_times(&pts->flash[i], &tf, &tb, &fl);
        pf[i] = fl / (peak * (tf > 2 * ks ? tf - ks : tf));
        pb[i] = 2.5 * bf * fl / (peak * (tb > 2 * ks ? tb - ks : tb));
        files[i] = pts->flash[i].file;
    }
    char fl[512];
    file_list(pts, files, n, fl, sizeof fl);
    const char *what = "fused attention";
    const char *fixp = "scripts/bench_flash.py over at least 3 sequence lengths, causal, head "
                       "size 128";
    const char *fixf = "scripts/bench_flash.py again on a quiet GPU (the kernel's rate does not "
                       "follow R s / (s + s0))";
    sc_cluster res = *out;
    sc_cluster_gemm *g = &res.eff.gemm;
    /* the causal series at the reference head size */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (pts->flash[i].causal && pts->flash[i].head_dim >= FLASH_REF_HD)
            s[m] = pts->flash[i].seq, yf[m] = pf[i], yb[m] = pb[i], m++;
    int seqs = distinct(s, NULL, m), nparam = 4;
    if (seqs < 3) {
        fit_gates(rep, what, fl, 2 * seqs, 4, "rates (forward and backward) of causal "
                  "sequences at head size 128", NAN, "", 0, SC_CALIB_MAPE_CEILING, fixp, fixf);
        goto done;
    }
    /* the forward and the backward each their rate and fall */
    double rf, rb;
    fit_fall(s, yf, m, &rf, &g->flash_s0);
    fit_fall(s, yb, m, &rb, &g->flash_s0_bwd);
    g->flash_fwd = fmin(1, rf);
    g->flash_bwd = fmin(1, rb);
    bound_gate(rep, what, fl, "flash_fwd", rf, 0, 1, fixf);
    bound_gate(rep, what, fl, "flash_bwd", rb, 0, 1, fixf);
    /* unmasked: each its fall, one multiplier of both */
    m = 0;
    for (int i = 0; i < n; i++)
        if (!pts->flash[i].causal && pts->flash[i].head_dim >= FLASH_REF_HD) {
            s[m] = pts->flash[i].seq;
            yf[m] = pf[i] / g->flash_fwd;
            yb[m] = pb[i] / g->flash_bwd;
            m++;
        }
    if (distinct(s, NULL, m) >= 3) {
        double a, b, ff, fb, num = 0, den = 0;
        fit_fall(s, yf, m, &a, &ff);
        fit_fall(s, yb, m, &b, &fb);
        for (int i = 0; i < m; i++) {
            double u = s[i] / (s[i] + ff) / yf[i], v = s[i] / (s[i] + fb) / yb[i];
            num += u + v, den += u * u + v * v;
        }
        g->flash_full = fmin(4, num / den);
        g->flash_s0_full = ff;
        g->flash_s0_full_bwd = fb;
        nparam += 3;
    } else {
        add_note(rep, "fused attention: fewer than 3 unmasked sequences at head size 128: "
                 "flash_full and flash_s0_full kept");
    }
    /* head size 64 and below: the rate over the fitted one at 128 */
    double num = 0, den = 0;
    int k64 = 0;
    for (int i = 0; i < n; i++) {
        const sc_calib_flash *q = &pts->flash[i];
        if (!q->causal || q->head_dim > 64)
            continue;
        double r[2] = {pf[i] / (g->flash_fwd * q->seq / (q->seq + g->flash_s0)),
                       pb[i] / (g->flash_bwd * q->seq / (q->seq + g->flash_s0_bwd))};
        for (int h = 0; h < 2; h++)
            num += 1 / r[h], den += 1 / (r[h] * r[h]);
        k64++;
    }
    if (k64 > 0) {
        g->flash_hd64 = fmin(4, num / den);
        nparam++;
    } else {
        add_note(rep, "fused attention: no causal points at head size 64: flash_hd64 kept");
    }
    /* the model over every point, fitted and before; distinct shapes by
     * (sequence, head size and mask) */
    for (int i = 0; i < n; i++) {
        const sc_calib_flash *q = &pts->flash[i];
        double unused;
        flash_times(q, &t[2 * i], &t[2 * i + 1], &unused);
        flash_pred(&res, dt, q, &p1[2 * i], &p1[2 * i + 1]);
        flash_pred(c->base, dt, q, &p0[2 * i], &p0[2 * i + 1]);
        s[i] = q->seq;
        yb[i] = 2 * q->head_dim + q->causal;
    }
    stats after = point_stats(p1, t, 2 * n), before = point_stats(p0, t, 2 * n);
    fit_gates(rep, what, fl, 2 * distinct(s, yb, n), nparam, "rates (forward and backward) of "
              "distinct shapes", NAN, " (the model over every point)", after.mape,
              SC_CALIB_MAPE_CEILING, fixp, fixf);
    rep->n_flash = n;
    snprintf(rep->flash_backend, sizeof rep->flash_backend, "%s", pts->flash_backend);
    rep->flash_fwd = g->flash_fwd;
    rep->flash_bwd = g->flash_bwd;
    rep->flash_s0 = g->flash_s0;
    rep->flash_s0_full = g->flash_s0_full;
    rep->flash_s0_bwd = g->flash_s0_bwd;
    rep->flash_s0_full_bwd = g->flash_s0_full_bwd;
    rep->flash_full = g->flash_full > 0 ? g->flash_full : 1;
    rep->flash_hd64 = g->flash_hd64 > 0 ? g->flash_hd64 : 1;
    rep->flash_mape = after.mape;
    rep->flash_mape_before = before.mape;
    *out = res;
    if (pts->flash_unused[0])
        add_note(rep, "fused attention: fitted backend \"%s\"; not fitted: %s (bench one "
                 "alone, bench_flash.py --backends NAME, to fit it)",
                 pts->flash_backend, pts->flash_unused);
done:
    sc_free(buf);
    sc_free(files);
    return SC_OK;
}

sc_status sc_calib_fit_points(const sc_cluster *base, const sc_calib_points *pts, int force,
                              sc_cluster *out, sc_calib_report *rep_out, sc_error *err)
{
    sc_calib_report local, *rep = rep_out ? rep_out : &local;
    memset(rep, 0, sizeof *rep);
    check_points(pts);
    for (int i = 0; i < pts->n_in_gates; i++) {
        const sc_calib_gate *g = &pts->in_gates[i];
        if (rep->n_gates < SC_CALIB_MAX_GATES)
            rep->gates[rep->n_gates++] = *g;
        rep->n_failed += g->failed;
    }
    int input_failed = rep->n_failed > 0;
    int ncp = pts->n_gemm + pts->n_ops;
    if (ncp == 0 && pts->n_link == 0 && !(pts->n_kern > 0 && pts->fit_kernels) &&
        pts->n_flash == 0)
        return input_failed && !force ? refuse(rep, err)
                                      : sc_err(err, SC_EINVAL,
                                               "calibrate: the inputs hold no measurements");
    if ((ncp > 0 || pts->n_kern > 0) && !((int)pts->dtype >= 0 && (int)pts->dtype < SC_DTYPE_N))
        return sc_err(err, SC_EINVAL, "calibrate: compute points without a dtype");
    if (ncp > 0 && base->gpu.peak_flops[pts->dtype] <= 0)
        return sc_err(err, SC_EINVAL, "calibrate: %s has no %s peak to calibrate", base->name,
                      sc_dtype_name(pts->dtype));
    ctx c = {.base = base, .pts = pts, .dt = pts->dtype, .ncp = ncp};
    sc_cluster res = *base;
    memset(&res.eff.fits, 0, sizeof res.eff.fits);
    sc_status st = SC_OK;
    /* the kernel-level GEMM model first: the measured ops are predicted on it */
    st = fit_gemm_model(&c, &res, rep, err);
    if (!st)
        st = fit_kernels(&c, &res, rep, err);
    if (!st && ncp > 0)
        st = fit_compute(&c, &res, rep, err);
    if (!st)
        st = fit_flash(&c, &res, rep, err);
    if (!st)
        st = fit_links(&c, &res, rep, err);
    if (!st) {
        fit_host(&c, &res, rep);
        fit_overlap(&c, &res, rep);
        replay_gates(pts, &res, rep);
    }
    rep->n_gemm = pts->n_gemm;
    rep->n_ops = pts->n_ops;
    rep->n_comm = pts->n_link;
    /* a fit that cannot run on inputs that failed a gate: the input is why */
    if (st && st != SC_ENOMEM && input_failed && !force)
        return refuse(rep, err);
    if (st)
        return st;
    if (rep->n_failed > 0 && !force)
        return refuse(rep, err);
    for (int i = 0; i < rep->n_gates && res.eff.fits.n_failed < SC_CLUSTER_MAX_GATES; i++)
        if (rep->gates[i].failed)
            sc_calib_gate_line(&rep->gates[i], res.eff.fits.failed[res.eff.fits.n_failed++],
                               SC_CLUSTER_GATE_LEN);
    *out = res;
    return SC_OK;
}
