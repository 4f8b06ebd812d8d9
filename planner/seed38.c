/* seed38.c - the 38% claim three ways (see seed38.h). Cost: per model two
 * estimates and two one-replica simulations for the comparison, and as many
 * again per sweep point (7 bandwidths, up to 5 node counts). */
#include "seed38.h"
#include "json.h"
#include "outdir.h"
#include "partition.h"
#include "plot.h"
#include "search.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double bw_factors[SC_SEED38_N_BW] = {0.125, 0.25, 0.5, 1, 2, 4, 8};
static const int node_counts[SC_SEED38_N_NODES] = {2, 4, 8, 16, 32};

double sc_seed38_closed(double share, double n)
{
    return (1 - share) + share / log2(n);
}

int sc_seed38_group_nodes(const sc_step_cfg *cfg, int gpus_per_node, int pp_group)
{
    int n = pp_group ? cfg->pp : cfg->tp, count = 0;
    int seen[64]; /* distinct nodes, at most 64 tracked (enough for any group here) */
    for (int i = 0; i < n; i++) {
        int r = pp_group ? sc_step_rank(cfg, 0, i, 0) : sc_step_rank(cfg, 0, 0, i);
        int node = r / gpus_per_node, dup = 0;
        for (int j = 0; j < count && !dup; j++)
            dup = seen[j] == node;
        if (!dup && count < (int)SC_ARRAY_LEN(seen))
            seen[count++] = node;
    }
    return count;
}

sc_status sc_seed38_layouts(const sc_model *m, const sc_cluster *c, long global_batch, int mb,
                            sc_step_cfg *base, sc_step_cfg *pipe, int *span, sc_error *err)
{
    int gpn = c->gpus_per_node, N = c->nodes, layers = sc_partition_layers(m), k = 0;
    if (N < 2)
        return sc_err(err, SC_EINVAL, "seed38: needs at least 2 nodes (got %d): the claim is "
                      "about traffic between nodes", N);
    for (int kk = N; kk >= 2 && !k; kk--)
        if (N % kk == 0 && kk <= layers && sc_cost_tp_divides_heads(m, kk * gpn))
            k = kk;
    if (!k)
        return sc_err(err, SC_EINVAL, "seed38: %s: no tensor-parallel group of 2 or more whole "
                      "nodes (tp = k x %d) divides every attention module's heads", m->name, gpn);
    int dp = N / k;
    if (mb < 1 || global_batch % ((long)dp * mb))
        return sc_err(err, SC_EINVAL, "seed38: global batch %ld is not a multiple of dp %d x "
                      "microbatches %d", global_batch, dp, mb);
    int mbs = (int)(global_batch / ((long)dp * mb));
    sc_step_cfg b = {.dp = dp, .tp = k * gpn, .pp = 1, .v = 1, .m = mb, .mbs = mbs,
                     .schedule = "1f1b", .placement = "tp,pp,dp", .one_replica = 1};
    sc_step_cfg p = b;
    p.tp = gpn;
    p.pp = k;
    *base = b;
    *pipe = p;
    *span = k;
    return SC_OK;
}

static void side_of_est(const sc_estimate *e, sc_seed38_side *s)
{
    s->step_s = e->step_s;
    s->compute_s = e->compute_s;
    s->tp_s = e->tp_s;
    s->pp_s = e->pp_s;
    s->dp_s = e->dp_s;
    s->bubble_s = e->bubble_s;
    s->optimizer_s = e->optimizer_s;
    s->comm_s = s->tp_s + s->pp_s + s->dp_s;
    s->share = s->step_s > 0 ? s->comm_s / s->step_s : 0;
}

static void side_of_sim(const sc_step_result *r, sc_seed38_side *s)
{
    const sc_step_breakdown *k = &r->breakdown;
    s->step_s = r->step_time_s;
    s->compute_s = k->compute + k->recompute;
    s->tp_s = k->tp;
    s->pp_s = k->pp;
    s->dp_s = k->dp;
    s->bubble_s = k->bubble;
    s->optimizer_s = k->optimizer;
    s->comm_s = s->tp_s + s->pp_s + s->dp_s;
    s->share = s->step_s > 0 ? s->comm_s / s->step_s : 0;
}

static void compare(sc_seed38_cmp *x)
{
    x->ratio = x->pipe.step_s / x->base.step_s;
    x->gain = x->base.step_s / x->pipe.step_s - 1;
    x->share = x->base.share;
    x->comm_ratio = x->base.comm_s > 0 ? x->pipe.comm_s / x->base.comm_s : NAN;
    x->pred16 = sc_seed38_closed(x->share, 16);
    x->pred8 = sc_seed38_closed(x->share, 8);
    x->pred_comm = (1 - x->share) + x->share * x->comm_ratio;
}

/* Both layouts on one cluster, both models. */
static sc_status run_pair(const sc_model *m, const sc_cluster *c, const sc_step_cfg *base,
                          const sc_step_cfg *pipe, sc_seed38_cmp *est, sc_seed38_cmp *sim,
                          sc_error *err)
{
    sc_estimate e;
    sc_step_result *r = NULL;
    sc_status st = sc_estimate_step(m, c, base, &e, err);
    if (!st) {
        side_of_est(&e, &est->base);
        st = sc_estimate_step(m, c, pipe, &e, err);
    }
    if (!st) {
        side_of_est(&e, &est->pipe);
        compare(est);
        st = sc_step_simulate(m, c, base, &r, err);
    }
    if (!st) {
        side_of_sim(r, &sim->base);
        sc_step_result_free(r);
        r = NULL;
        st = sc_step_simulate(m, c, pipe, &r, err);
    }
    if (!st) {
        side_of_sim(r, &sim->pipe);
        compare(sim);
    }
    sc_step_result_free(r);
    return st;
}

/* The bandwidth factor at which the simulated ratio first reaches target
 * (log-linear between points), NaN if it does not within the sweep. */
static double crossing(const sc_seed38_point *p, int n, double target)
{
    if (n > 0 && p[0].ratio_sim >= target)
        return p[0].x;
    for (int k = 1; k < n; k++) {
        double r0 = p[k - 1].ratio_sim, r1 = p[k].ratio_sim;
        if (r0 < target && r1 >= target) {
            double l0 = log2(p[k - 1].x), l1 = log2(p[k].x);
            return exp2(l0 + (target - r0) / (r1 - r0) * (l1 - l0));
        }
    }
    return NAN;
}

static sc_status run_model(const char *name, const sc_cluster *c, long batch, int mb,
                           sc_seed38_model *out, sc_error *err)
{
    sc_model *m = NULL;
    sc_status st = sc_model_open(name, &m, err);
    if (st)
        return st;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", m->name);
    out->params = sc_model_totals(m).params;
    out->measured_ratio = NAN;
    st = sc_seed38_layouts(m, c, batch, mb, &out->base, &out->pipe, &out->span, err);
    int gpn = c->gpus_per_node;
    if (!st) {
        out->base_tp_nodes = sc_seed38_group_nodes(&out->base, gpn, 0);
        out->base_pp_nodes = sc_seed38_group_nodes(&out->base, gpn, 1);
        out->pipe_tp_nodes = sc_seed38_group_nodes(&out->pipe, gpn, 0);
        out->pipe_pp_nodes = sc_seed38_group_nodes(&out->pipe, gpn, 1);
        st = run_pair(m, c, &out->base, &out->pipe, &out->est, &out->sim, err);
    }
    /* the inter-node bandwidth */
    for (int i = 0; i < SC_SEED38_N_BW && !st; i++) {
        sc_cluster cc = *c;
        cc.inter.nic_bytes_per_s *= bw_factors[i];
        sc_seed38_cmp e, s;
        sc_seed38_point *p = &out->bw[i];
        st = run_pair(m, &cc, &out->base, &out->pipe, &e, &s, err);
        p->x = bw_factors[i];
        p->nic_bytes_per_s = cc.inter.nic_bytes_per_s;
        p->dp = out->base.dp;
        p->global_batch = batch;
        p->share_sim = s.share;
        p->ratio_sim = s.ratio;
        p->share_est = e.share;
        p->ratio_est = e.ratio;
        p->closed16 = sc_seed38_closed(s.share, 16);
        p->closed8 = sc_seed38_closed(s.share, 8);
    }
    out->bw_factor_0625 = st ? NAN : crossing(out->bw, SC_SEED38_N_BW, 0.625);
    out->bw_factor_38 = st ? NAN : crossing(out->bw, SC_SEED38_N_BW, 0.62);
    /* the node count: the same per-node layout and per-replica batch */
    for (int i = 0; i < SC_SEED38_N_NODES && !st; i++) {
        int n = node_counts[i];
        if (n % out->span)
            continue;
        sc_cluster cc = *c;
        st = sc_cluster_set_nodes(&cc, n, err);
        if (st)
            break;
        sc_step_cfg b = out->base, q = out->pipe;
        b.dp = q.dp = n / out->span;
        sc_seed38_cmp e, s;
        st = run_pair(m, &cc, &b, &q, &e, &s, err);
        sc_seed38_point *p = &out->nodes[out->n_nodes++];
        p->x = n;
        p->nic_bytes_per_s = cc.inter.nic_bytes_per_s;
        p->dp = b.dp;
        p->global_batch = (long)b.dp * b.m * b.mbs;
        p->share_sim = s.share;
        p->ratio_sim = s.ratio;
        p->share_est = e.share;
        p->ratio_est = e.ratio;
        p->closed16 = sc_seed38_closed(0.5, n);
        p->closed8 = NAN;
    }
    if (st)
        sc_err_prefix(err, "seed38: %s", m->name);
    sc_model_free(m);
    return st;
}

sc_status sc_seed38_run(const sc_seed38_opts *opts, sc_seed38 **out, sc_error *err)
{
    sc_seed38_opts o = opts ? *opts : (sc_seed38_opts){0};
    const char *models = o.models ? o.models : "gpt-1.3b,mm-1.3b";
    const char *cluster = o.cluster ? o.cluster : "p4d.24xlarge";
    int nodes = o.nodes ? o.nodes : 16;
    long batch = o.global_batch ? o.global_batch : 512;
    int mb = o.microbatches ? o.microbatches : 8;
    if (nodes < 2 || nodes > SC_CLUSTER_MAX_NODES)
        return sc_err(err, SC_EINVAL, "seed38: nodes %d: needs at least 2", nodes);
    if (batch < 1 || mb < 1)
        return sc_err(err, SC_EINVAL, "seed38: global batch and microbatches must be positive");
    /* the model list */
    char names[SC_SEED38_MAX_MODELS][SC_NAME_MAX + 1024];
    int n = 0;
    for (const char *p = models;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= sizeof names[0])
            return sc_err(err, SC_EINVAL, "seed38: models '%s': an empty or overlong name",
                          models);
        if (n == SC_SEED38_MAX_MODELS)
            return sc_err(err, SC_EINVAL, "seed38: at most %d models", SC_SEED38_MAX_MODELS);
        memcpy(names[n], p, len);
        names[n++][len] = 0;
        if (!e)
            break;
        p = e + 1;
    }
    sc_cluster c;
    sc_status st = sc_cluster_open(cluster, &c, err);
    if (!st)
        st = sc_cluster_set_nodes(&c, nodes, err);
    if (st)
        return st;
    sc_seed38 *r = sc_calloc(1, sizeof *r);
    if (!r)
        return sc_err(err, SC_ENOMEM, "seed38: out of memory");
    snprintf(r->cluster, sizeof r->cluster, "%s", c.name);
    r->nodes = c.nodes;
    r->gpus_per_node = c.gpus_per_node;
    r->global_batch = batch;
    r->microbatches = mb;
    for (int i = 0; i < n && !st; i++)
        st = run_model(names[i], &c, batch, mb, &r->models[i], err);
    if (st) {
        sc_free(r);
        return st;
    }
    r->n_models = n;
    *out = r;
    return SC_OK;
}

void sc_seed38_free(sc_seed38 *r) { sc_free(r); }

sc_status sc_seed38_set_measured(sc_seed38 *r, const char *model, double ratio,
                                 const char *source, sc_error *err)
{
    if (!(isfinite(ratio) && ratio > 0))
        return sc_err(err, SC_EINVAL, "seed38: measured ratio %g must be finite and > 0", ratio);
    for (int i = 0; i < r->n_models; i++)
        if (!strcmp(r->models[i].name, model)) {
            r->models[i].measured_ratio = ratio;
            snprintf(r->models[i].measured_source, sizeof r->models[i].measured_source, "%s",
                     source ? source : "");
            return SC_OK;
        }
    return sc_err(err, SC_ENOTFOUND, "seed38: no model '%s' in the result", model);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_layout(cJSON *o, const sc_step_cfg *c, int tp_nodes, int pp_nodes, int *oom)
{
    sc_jadd_num(o, "dp", c->dp, oom);
    sc_jadd_num(o, "tp", c->tp, oom);
    sc_jadd_num(o, "pp", c->pp, oom);
    sc_jadd_num(o, "m", c->m, oom);
    sc_jadd_num(o, "mbs", c->mbs, oom);
    sc_jadd_str(o, "schedule", c->schedule, oom);
    sc_jadd_str(o, "placement", c->placement ? c->placement : "tp,pp,dp", oom);
    sc_jadd_num(o, "tp_nodes", tp_nodes, oom);
    sc_jadd_num(o, "pp_nodes", pp_nodes, oom);
}

static void json_side(cJSON *o, const sc_seed38_side *s, int *oom)
{
    sc_jadd_num(o, "step_time_s", s->step_s, oom);
    sc_jadd_num(o, "compute_s", s->compute_s, oom);
    sc_jadd_num(o, "tp_s", s->tp_s, oom);
    sc_jadd_num(o, "pp_s", s->pp_s, oom);
    sc_jadd_num(o, "dp_s", s->dp_s, oom);
    sc_jadd_num(o, "comm_s", s->comm_s, oom);
    sc_jadd_num(o, "bubble_s", s->bubble_s, oom);
    sc_jadd_num(o, "optimizer_s", s->optimizer_s, oom);
    sc_jadd_num(o, "share", s->share, oom);
}

/* cJSON prints NaN as null, which is what we want for "not defined". */
static void json_cmp(cJSON *o, const sc_seed38_cmp *x, int *oom)
{
    json_side(sc_jadd_obj(o, "baseline", oom), &x->base, oom);
    json_side(sc_jadd_obj(o, "pipeline", oom), &x->pipe, oom);
    sc_jadd_num(o, "ratio", x->ratio, oom);
    sc_jadd_num(o, "gain", x->gain, oom);
    sc_jadd_num(o, "share", x->share, oom);
    sc_jadd_num(o, "comm_ratio", x->comm_ratio, oom);
    sc_jadd_num(o, "predicted_log2_16", x->pred16, oom);
    sc_jadd_num(o, "predicted_log2_8", x->pred8, oom);
    sc_jadd_num(o, "predicted_measured_comm", x->pred_comm, oom);
    sc_jadd_bool(o, "holds_0625", fabs(x->ratio - 0.625) <= 0.05, oom);
}

static void json_closed(cJSON *o, int n, int *oom)
{
    sc_jadd_num(o, "n", n, oom);
    sc_jadd_num(o, "comm_ratio", 1 / log2(n), oom);
    sc_jadd_num(o, "ratio", sc_seed38_closed(0.5, n), oom);
    sc_jadd_num(o, "gain", 1 / sc_seed38_closed(0.5, n) - 1, oom);
}

cJSON *sc_seed38_to_json(const sc_seed38 *r)
{
    sc_json_init();
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", SC_SEED38_FORMAT, &oom);
    sc_jadd_str(j, "cluster", r->cluster, &oom);
    sc_jadd_num(j, "nodes", r->nodes, &oom);
    sc_jadd_num(j, "gpus_per_node", r->gpus_per_node, &oom);
    sc_jadd_num(j, "global_batch", (double)r->global_batch, &oom);
    sc_jadd_num(j, "microbatches", r->microbatches, &oom);
    cJSON *cf = sc_jadd_obj(j, "closed_form", &oom);
    sc_jadd_num(cf, "assumed_share", 0.5, &oom);
    json_closed(sc_jadd_obj(cf, "log2_16", &oom), 16, &oom);
    json_closed(sc_jadd_obj(cf, "log2_8", &oom), 8, &oom);
    sc_jadd_str(cf, "note",
                "the text takes log2 8 = 3 for the network cost ('a third') and log2 16 = 4 "
                "for the training cost (0.625, the 38% saving: 1 - 0.625 = 37.5%)",
                &oom);
    cJSON *arr = sc_jadd_arr(j, "models", &oom);
    for (int i = 0; i < r->n_models && !oom; i++) {
        const sc_seed38_model *m = &r->models[i];
        cJSON *o = sc_jpush_obj(arr, &oom);
        if (!o)
            break;
        sc_jadd_str(o, "model", m->name, &oom);
        sc_jadd_num(o, "params", m->params, &oom);
        sc_jadd_num(o, "span_nodes", m->span, &oom);
        json_layout(sc_jadd_obj(o, "baseline", &oom), &m->base, m->base_tp_nodes,
                    m->base_pp_nodes, &oom);
        json_layout(sc_jadd_obj(o, "pipeline", &oom), &m->pipe, m->pipe_tp_nodes,
                    m->pipe_pp_nodes, &oom);
        json_cmp(sc_jadd_obj(o, "analytical", &oom), &m->est, &oom);
        json_cmp(sc_jadd_obj(o, "simulated", &oom), &m->sim, &oom);
        if (isnan(m->measured_ratio)) {
            if (!cJSON_AddNullToObject(o, "measured"))
                oom = 1;
        } else {
            cJSON *x = sc_jadd_obj(o, "measured", &oom);
            sc_jadd_num(x, "ratio", m->measured_ratio, &oom);
            sc_jadd_num(x, "gain", 1 / m->measured_ratio - 1, &oom);
            sc_jadd_str(x, "source", m->measured_source, &oom);
        }
        sc_jadd_num(o, "bw_factor_0625", m->bw_factor_0625, &oom);
        sc_jadd_num(o, "bw_factor_38", m->bw_factor_38, &oom);
        cJSON *bw = sc_jadd_arr(o, "sweep_bandwidth", &oom);
        for (int k = 0; k < SC_SEED38_N_BW && !oom; k++) {
            const sc_seed38_point *p = &m->bw[k];
            cJSON *x = sc_jpush_obj(bw, &oom);
            if (!x)
                break;
            sc_jadd_num(x, "factor", p->x, &oom);
            sc_jadd_num(x, "nic_bytes_per_s", p->nic_bytes_per_s, &oom);
            sc_jadd_num(x, "share_sim", p->share_sim, &oom);
            sc_jadd_num(x, "ratio_sim", p->ratio_sim, &oom);
            sc_jadd_num(x, "share_est", p->share_est, &oom);
            sc_jadd_num(x, "ratio_est", p->ratio_est, &oom);
            sc_jadd_num(x, "closed_log2_16", p->closed16, &oom);
            sc_jadd_num(x, "closed_log2_8", p->closed8, &oom);
        }
        cJSON *nd = sc_jadd_arr(o, "sweep_nodes", &oom);
        for (int k = 0; k < m->n_nodes && !oom; k++) {
            const sc_seed38_point *p = &m->nodes[k];
            cJSON *x = sc_jpush_obj(nd, &oom);
            if (!x)
                break;
            sc_jadd_num(x, "nodes", p->x, &oom);
            sc_jadd_num(x, "dp", p->dp, &oom);
            sc_jadd_num(x, "global_batch", (double)p->global_batch, &oom);
            sc_jadd_num(x, "share_sim", p->share_sim, &oom);
            sc_jadd_num(x, "ratio_sim", p->ratio_sim, &oom);
            sc_jadd_num(x, "share_est", p->share_est, &oom);
            sc_jadd_num(x, "ratio_est", p->ratio_est, &oom);
            sc_jadd_num(x, "closed_form", p->closed16, &oom);
        }
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* ---- files ----------------------------------------------------------------- */

#define CURVE_N 11
#define MAX_SERIES (2 * SC_SEED38_MAX_MODELS + 4)

/* A series with every field not named zero (the struct grows optional
 * fields). */
static sc_plot_series series(const char *title, const double *x, const double *y, int n,
                             int points_only, const double *mark, const char *mark_title)
{
    sc_plot_series a = {.title = title, .x = x, .y = y, .n = n, .points_only = points_only};
    if (mark) {
        a.mark = mark;
        a.n_mark = 1;
        a.mark_title = mark_title;
    }
    return a;
}

static sc_status plot_share(const sc_seed38 *r, const char *path, sc_error *err)
{
    static const char *const bw_labels[SC_SEED38_N_BW] = {"x1/8", "x1/4", "x1/2", "x1",
                                                          "x2",   "x4",   "x8"};
    /* per model: simulated ratio against the simulated share (a line over the
     * bandwidth sweep, the preset's bandwidth marked) and the analytical
     * model's points; the closed form for n = 16 and n = 8; the 38% line */
    double xs[CURVE_N], y16[CURVE_N], y8[CURVE_N];
    double sx[SC_SEED38_MAX_MODELS][SC_SEED38_N_BW], sy[SC_SEED38_MAX_MODELS][SC_SEED38_N_BW];
    double ex[SC_SEED38_MAX_MODELS][SC_SEED38_N_BW], ey[SC_SEED38_MAX_MODELS][SC_SEED38_N_BW];
    double mark[SC_SEED38_MAX_MODELS][2];
    char titles[MAX_SERIES][96], mtitles[SC_SEED38_MAX_MODELS][96];
    for (int i = 0; i < CURVE_N; i++) {
        xs[i] = (double)i / (CURVE_N - 1);
        y16[i] = sc_seed38_closed(xs[i], 16);
        y8[i] = sc_seed38_closed(xs[i], 8);
    }
    double lx[2] = {0, 1}, ly[2] = {0.62, 0.62}, claim[2] = {0.5, 0.625};
    sc_plot_series ser[MAX_SERIES];
    int ns = 0;
    for (int i = 0; i < r->n_models; i++) {
        const sc_seed38_model *m = &r->models[i];
        for (int k = 0; k < SC_SEED38_N_BW; k++) {
            sx[i][k] = m->bw[k].share_sim;
            sy[i][k] = m->bw[k].ratio_sim;
            ex[i][k] = m->bw[k].share_est;
            ey[i][k] = m->bw[k].ratio_est;
        }
        mark[i][0] = m->sim.share;
        mark[i][1] = m->sim.ratio;
        snprintf(titles[ns], sizeof titles[ns], "%s simulated (NIC bandwidth x1/8..x8)", m->name);
        snprintf(mtitles[i], sizeof mtitles[i], "%s at the preset bandwidth", m->name);
        ser[ns] = series(titles[ns], sx[i], sy[i], SC_SEED38_N_BW, 0, mark[i], mtitles[i]);
        ser[ns].labels = bw_labels;
        ns++;
        snprintf(titles[ns], sizeof titles[ns], "%s analytical", m->name);
        ser[ns] = series(titles[ns], ex[i], ey[i], SC_SEED38_N_BW, 1, NULL, NULL);
        ns++;
    }
    ser[ns++] = series("closed form (1-s) + s/log2 16", xs, y16, CURVE_N, 0, claim,
                       "the claim: s = 1/2, ratio 0.625");
    ser[ns++] = series("closed form (1-s) + s/log2 8", xs, y8, CURVE_N, 0, NULL, NULL);
    ser[ns++] = series("38% saving (ratio 0.62)", lx, ly, 2, 0, NULL, NULL);
    char title[256];
    snprintf(title, sizeof title,
             "seed38: pipeline / tensor-parallel step time vs communication share, %d x %s",
             r->nodes, r->cluster);
    sc_plot_xy xy = {.title = title,
                     .xlabel = "baseline's communication share s (exposed comm / step)",
                     .ylabel = "step time ratio, pipeline / baseline", .series = ser,
                     .n_series = ns};
    sc_plot_opts po = {.width = 1100, .height = 750};
    return sc_plot_lines(&xy, path, &po, err);
}

static sc_status plot_nodes(const sc_seed38 *r, const char *path, sc_error *err)
{
    double cx[31], cy[31];
    int nc = 0;
    for (int n = 2; n <= 32; n++, nc++) {
        cx[nc] = n;
        cy[nc] = sc_seed38_closed(0.5, n);
    }
    double sx[SC_SEED38_MAX_MODELS][SC_SEED38_N_NODES], sy[SC_SEED38_MAX_MODELS][SC_SEED38_N_NODES];
    double ey[SC_SEED38_MAX_MODELS][SC_SEED38_N_NODES];
    char titles[MAX_SERIES][96];
    sc_plot_series ser[MAX_SERIES];
    int ns = 0;
    for (int i = 0; i < r->n_models; i++) {
        const sc_seed38_model *m = &r->models[i];
        for (int k = 0; k < m->n_nodes; k++) {
            sx[i][k] = m->nodes[k].x;
            sy[i][k] = m->nodes[k].ratio_sim;
            ey[i][k] = m->nodes[k].ratio_est;
        }
        snprintf(titles[ns], sizeof titles[ns], "%s simulated", m->name);
        ser[ns] = series(titles[ns], sx[i], sy[i], m->n_nodes, 0, NULL, NULL);
        ns++;
        snprintf(titles[ns], sizeof titles[ns], "%s analytical", m->name);
        ser[ns] = series(titles[ns], sx[i], ey[i], m->n_nodes, 1, NULL, NULL);
        ns++;
    }
    ser[ns++] = series("closed form 1/2 + 1/2 / log2 n", cx, cy, nc, 0, NULL, NULL);
    char title[256];
    snprintf(title, sizeof title,
             "seed38: pipeline / tensor-parallel step time vs nodes (%s, same per-node layout)",
             r->cluster);
    sc_plot_xy xy = {.title = title, .xlabel = "nodes n",
                     .ylabel = "step time ratio, pipeline / baseline", .logx = 1, .series = ser,
                     .n_series = ns};
    sc_plot_opts po = {.width = 1100, .height = 750};
    return sc_plot_lines(&xy, path, &po, err);
}

sc_status sc_seed38_write(const sc_seed38 *r, const char *dir, sc_error *err)
{
    /* every file into a staging folder, renamed into dir when all exist: a
     * failure leaves dir's files as they were */
    sc_outdir *od = NULL;
    sc_status st = sc_outdir_open(dir, "seed38", &od, err);
    if (st)
        return st;
    static const char *const names[] = {"seed38_vs_share.png", "seed38_vs_nodes.png",
                                        "seed38_vs_share.svg", "seed38_vs_nodes.svg"};
    const char *path;
    for (size_t i = 0; i < SC_ARRAY_LEN(names) && !st; i++) {
        st = sc_outdir_file(od, names[i], &path, err);
        if (!st)
            st = i % 2 ? plot_nodes(r, path, err) : plot_share(r, path, err);
    }
    cJSON *j = NULL;
    if (!st && !(j = sc_seed38_to_json(r)))
        st = sc_err(err, SC_ENOMEM, "seed38: out of memory");
    if (!st)
        st = sc_outdir_file(od, "seed38.json", &path, err);
    if (!st)
        st = sc_json_save(path, j, err);
    cJSON_Delete(j);
    return sc_outdir_close(od, st, err);
}
