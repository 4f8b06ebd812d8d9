/* whatif.c - what-if studies over node counts and clusters, on-demand and
 * spot cost, the checkpoint-interval mathematics (see whatif.h). */
#include "whatif.h"
#include "label.h"
#include "cost.h"
#include "json.h"
#include "outdir.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checkpoint/restart mathematics ------------------------------------- */

double sc_whatif_young_interval(double delta_s, double mtbi_s)
{
    if (isinf(mtbi_s))
        return INFINITY;
    return sqrt(2 * delta_s * mtbi_s);
}

double sc_whatif_daly_interval(double delta_s, double mtbi_s)
{
    if (isinf(mtbi_s))
        return INFINITY;
    if (delta_s >= 2 * mtbi_s)
        return mtbi_s;
    double r = delta_s / (2 * mtbi_s);
    return sqrt(2 * delta_s * mtbi_s) * (1 + sqrt(r) / 3 + r / 9) - delta_s;
}

double sc_whatif_wall(double work_s, double delta_s, double restart_s, double interval_s,
                      double mtbi_s)
{
    if (isinf(mtbi_s))
        return work_s; /* no interruptions: no checkpoints either */
    double ckpts = isinf(interval_s) ? 0 : fmax(0, work_s / interval_s - 1);
    double loss = isinf(interval_s) ? INFINITY : (interval_s + delta_s) / 2 + restart_s;
    double denom = 1 - loss / mtbi_s;
    if (!(denom > 0))
        return INFINITY;
    return (work_s + ckpts * delta_s) / denom;
}

void sc_whatif_spot_eval(double work_s, long nodes, double rate_per_node_per_hour,
                         double state_bytes, double storage_bytes_per_s, double restart_s,
                         sc_whatif_spot *out)
{
    memset(out, 0, sizeof *out);
    out->interruptions_per_hour = rate_per_node_per_hour * (double)nodes;
    out->mtbi_s = out->interruptions_per_hour > 0 ? 3600 / out->interruptions_per_hour : INFINITY;
    out->checkpoint_s = state_bytes / (storage_bytes_per_s * (double)nodes);
    out->interval_s = sc_whatif_daly_interval(out->checkpoint_s, out->mtbi_s);
    out->wall_s = sc_whatif_wall(work_s, out->checkpoint_s, restart_s, out->interval_s,
                                 out->mtbi_s);
    out->feasible = isfinite(out->wall_s);
    out->waste_fraction = out->feasible ? 1 - work_s / out->wall_s : 1;
}

int sc_whatif_pareto(const double *x, const double *y, int n, int *on_front)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        on_front[i] = isfinite(x[i]) && isfinite(y[i]);
        for (int j = 0; j < n && on_front[i]; j++) {
            if (j == i || !isfinite(x[j]) || !isfinite(y[j]))
                continue;
            if (x[j] <= x[i] && y[j] <= y[i] && (x[j] < x[i] || y[j] < y[i]))
                on_front[i] = 0;
        }
        count += on_front[i];
    }
    return count;
}

/* ---- node-count lists ------------------------------------------------------ */

static int parse_count(const char *s, size_t len, long *out)
{
    if (len == 0 || len > 12)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static sc_status add_count(long v, long *out, int max, int *n, const char *item, int itemlen,
                           sc_error *err)
{
    for (int i = 0; i < *n; i++)
        if (out[i] == v)
            return SC_OK;
    if (*n >= max)
        return sc_err(err, SC_EINVAL, "--nodes: more than %d node counts", max);
    out[(*n)++] = v;
    return SC_OK;
}

sc_status sc_whatif_parse_nodes(const char *list, long *out, int max, int *n, sc_error *err)
{
    long tmp[SC_WHATIF_MAX_COUNTS];
    int k = 0;
    if (max > SC_WHATIF_MAX_COUNTS)
        max = SC_WHATIF_MAX_COUNTS;
    if (!list || !*list)
        return sc_err(err, SC_EINVAL, "--nodes: empty list (e.g. 1,2,4,8 or 1-64)");
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int il = len > 40 ? 40 : (int)len;
        const char *dash = memchr(p, '-', len);
        long a, b;
        if (!dash) {
            if (parse_count(p, len, &a))
                return sc_err(err, SC_EINVAL,
                              "--nodes: '%.*s' is not a count or a range A-B (e.g. 1,2,4,8 or "
                              "1-64)",
                              il, p);
            b = a;
        } else if (parse_count(p, (size_t)(dash - p), &a) ||
                   parse_count(dash + 1, len - (size_t)(dash - p) - 1, &b)) {
            return sc_err(err, SC_EINVAL,
                          "--nodes: '%.*s' is not a count or a range A-B (e.g. 1,2,4,8 or 1-64)",
                          il, p);
        }
        if (a < 1 || b > SC_CLUSTER_MAX_NODES || a > b)
            return sc_err(err, SC_EINVAL,
                          "--nodes: '%.*s': counts must lie in [1, %d] and a range run upwards",
                          il, p, SC_CLUSTER_MAX_NODES);
        sc_status st;
        if (!dash) {
            if ((st = add_count(a, tmp, max, &k, p, il, err)))
                return st;
        } else {
            int any = 0;
            for (long v = 1; v <= b; v *= 2)
                if (v >= a) {
                    any = 1;
                    if ((st = add_count(v, tmp, max, &k, p, il, err)))
                        return st;
                }
            if (!any)
                return sc_err(err, SC_EINVAL, "--nodes: '%.*s' holds no power of two", il, p);
        }
        if (!end)
            break;
        p = end + 1;
    }
    qsort(tmp, (size_t)k, sizeof tmp[0], cmp_long);
    memcpy(out, tmp, sizeof tmp[0] * (size_t)k);
    *n = k;
    return SC_OK;
}

/* ---- the study --------------------------------------------------------------- */

void sc_whatif_opts_default(sc_whatif_opts *o)
{
    memset(o, 0, sizeof *o);
    o->interruptions_per_hour = -1;
    o->storage_bytes_per_s = 0;
    o->restart_s = 600;
    o->simulate = SC_SEARCH_SIMULATE;
    o->fix_sp = -1;
    o->no_overlap_p2p_comm = -1;
}

const sc_whatif_point *sc_whatif_first_point(const sc_whatif *w, int c)
{
    for (int i = 0; i < w->n_points; i++)
        if (w->points[i].cluster == c)
            return &w->points[i];
    return NULL;
}

void sc_whatif_free(sc_whatif *w)
{
    if (!w)
        return;
    sc_free(w->clusters);
    sc_free(w->points);
    sc_free(w->skipped);
    sc_free(w);
}

/* A search failure that skips the point rather than the study: nothing fits,
 * nothing matches, the cluster cannot run the dtype or take the count. */
static int skippable(sc_status st)
{
    return st == SC_ENOFIT || st == SC_EINVAL || st == SC_ENOTSUP;
}

static void fill_point(sc_whatif_point *p, const sc_candidate *k, const sc_cluster *c,
                       const sc_whatif *w, const sc_whatif_opts *o, double state_bytes)
{
    const sc_step_cfg *g = &k->cfg;
    p->gpus = sc_cluster_total_gpus(c);
    p->dp = g->dp;
    p->tp = g->tp;
    p->pp = g->pp;
    p->v = g->v;
    p->m = g->m;
    p->mbs = g->mbs;
    p->zero = g->zero;
    p->sp = g->sp;
    p->cp = sc_step_cp(g);
    p->tp_comm_overlap = g->tp_comm_overlap;
    p->overlap_param_gather = g->overlap_param_gather;
    p->overlap_p2p_comm = !g->no_overlap_p2p_comm;
    p->grad_reduce_in_fp32 = g->grad_reduce_in_fp32;
    p->fp8 = g->fp8;
    p->recompute = g->recompute;
    snprintf(p->schedule, sizeof p->schedule, "%s", g->schedule ? g->schedule : k->schedule);
    p->step_s = k->sim->step_time_s;
    p->tokens_per_s = k->sim->tokens_per_s;
    p->work_s = w->tokens / p->tokens_per_s;
    p->days = p->work_s / 86400;
    double n = (double)p->nodes;
    p->cost_on_demand = n * c->price.on_demand_per_hour * p->work_s / 3600;
    p->usd_per_mtok_on_demand = n * c->price.on_demand_per_hour / (3600 * p->tokens_per_s) * 1e6;
    p->has_spot = o->spot && c->price.spot_per_hour > 0;
    p->spot_days = p->cost_spot = p->usd_per_mtok_spot = INFINITY;
    if (p->has_spot) {
        double rate = o->interruptions_per_hour >= 0 ? o->interruptions_per_hour
                                                     : c->price.spot_interruptions_per_hour;
        double bw = o->storage_bytes_per_s > 0 ? o->storage_bytes_per_s : c->storage_bytes_per_s;
        sc_whatif_spot_eval(p->work_s, p->nodes, rate, state_bytes, bw, w->restart_s, &p->spot);
        if (p->spot.feasible) {
            p->spot_days = p->spot.wall_s / 86400;
            p->cost_spot = n * c->price.spot_per_hour * p->spot.wall_s / 3600;
            p->usd_per_mtok_spot = p->cost_spot / (w->tokens / 1e6);
        }
    }
}

sc_status sc_whatif_run(const sc_model *m, const sc_cluster *clusters, int n_clusters,
                        const long *nodes, int n_nodes, const sc_whatif_opts *o,
                        sc_whatif **out, sc_error *err)
{
    if (n_clusters < 1 || n_clusters > SC_WHATIF_MAX_CLUSTERS)
        return sc_err(err, SC_EINVAL, "whatif: between 1 and %d clusters, not %d",
                      SC_WHATIF_MAX_CLUSTERS, n_clusters);
    if (n_nodes < 1 || n_nodes > SC_WHATIF_MAX_COUNTS)
        return sc_err(err, SC_EINVAL, "whatif: between 1 and %d node counts, not %d",
                      SC_WHATIF_MAX_COUNTS, n_nodes);
    for (int i = 0; i < n_nodes; i++)
        if (nodes[i] < 1 || nodes[i] > SC_CLUSTER_MAX_NODES || (i && nodes[i] <= nodes[i - 1]))
            return sc_err(err, SC_EINVAL,
                          "whatif: node counts must be ascending, distinct and in [1, %d]",
                          SC_CLUSTER_MAX_NODES);
    if (o->global_batch < 1)
        return sc_err(err, SC_EINVAL, "whatif: --global-batch must be at least 1");
    if (!(o->tokens > 0) || !isfinite(o->tokens))
        return sc_err(err, SC_EINVAL, "whatif: --tokens must be a positive number");
    if (!(o->interruptions_per_hour < 0 || isfinite(o->interruptions_per_hour)) ||
        !isfinite(o->storage_bytes_per_s) || !isfinite(o->restart_s))
        return sc_err(err, SC_EINVAL, "whatif: spot options must be finite");
    for (int i = 0; i < n_clusters; i++)
        if (o->spot && clusters[i].price.spot_per_hour > 0 && o->storage_bytes_per_s <= 0 &&
            !(clusters[i].storage_bytes_per_s > 0))
            return sc_err(err, SC_EINVAL,
                          "whatif: %s has no storage bandwidth (storage_bytes_per_s); give "
                          "--storage-gbps",
                          clusters[i].name);

    sc_whatif *w = sc_calloc(1, sizeof *w);
    if (!w)
        return sc_err(err, SC_ENOMEM, "whatif: out of memory");
    size_t total = (size_t)n_clusters * (size_t)n_nodes;
    w->clusters = sc_malloc(sizeof(sc_cluster) * (size_t)n_clusters);
    w->points = sc_calloc(total, sizeof(sc_whatif_point));
    w->skipped = sc_calloc(total, sizeof(sc_whatif_skip));
    if (!w->clusters || !w->points || !w->skipped) {
        sc_whatif_free(w);
        return sc_err(err, SC_ENOMEM, "whatif: out of memory");
    }
    memcpy(w->clusters, clusters, sizeof(sc_cluster) * (size_t)n_clusters);
    w->n_clusters = n_clusters;
    snprintf(w->model, sizeof w->model, "%s", m->name ? m->name : "");
    w->seq = m->seq_len;
    w->params = sc_model_totals(m).params;
    w->flash = o->attn == SC_ATTN_FLASH;
    w->global_batch = o->global_batch;
    w->tokens = o->tokens;
    w->restart_s = o->restart_s < 0 ? 600 : o->restart_s;
    w->spot = o->spot;

    double bw, bg, bo;
    sc_cost_state_bytes(m->dtype, &bw, &bg, &bo);
    double state_bytes = (bw + bo) * sc_model_totals(m).params;

    sc_search_opts so;
    sc_search_opts_default(&so);
    so.global_batch = o->global_batch;
    so.simulate = o->simulate > 0 ? o->simulate : SC_SEARCH_SIMULATE;
    so.framework = o->framework;
    so.cut_in_layers = o->cut_in_layers;
    so.max_mem_bytes = o->max_mem_bytes;
    so.attn = o->attn;
    so.fix_sp = o->fix_sp;
    so.fix_cp = o->fix_cp;
    so.no_overlap_grad_reduce = o->no_overlap_grad_reduce;
    so.no_overlap_p2p_comm = o->no_overlap_p2p_comm;
    so.tp_comm_overlap = o->tp_comm_overlap;
    so.overlap_param_gather = o->overlap_param_gather;
    so.grad_reduce_in_fp32 = o->grad_reduce_in_fp32;
    so.fp8 = o->fp8;

    int done = 0;
    for (int ci = 0; ci < n_clusters; ci++) {
        for (int ni = 0; ni < n_nodes; ni++) {
            sc_cluster c = clusters[ci];
            sc_error e = {0};
            sc_search *s = NULL;
            sc_status st = sc_cluster_set_nodes(&c, nodes[ni], &e);
            if (!st)
                st = sc_search_run(m, &c, &so, &s, &e);
            done++;
            if (st && !skippable(st)) {
                sc_whatif_free(w);
                if (err) {
                    *err = e;
                    sc_err_prefix(err, "whatif: %s at %ld nodes", clusters[ci].name, nodes[ni]);
                }
                return st;
            }
            if (st) {
                sc_whatif_skip *k = &w->skipped[w->n_skipped++];
                k->cluster = ci;
                k->nodes = nodes[ni];
                snprintf(k->reason, sizeof k->reason, "%s", e.msg);
                if (o->progress)
                    o->progress(o->progress_ud, done, (int)total, c.name, nodes[ni], NULL,
                                k->reason);
                continue;
            }
            sc_whatif_point *p = &w->points[w->n_points++];
            p->cluster = ci;
            p->nodes = nodes[ni];
            fill_point(p, sc_search_ranked(s, 0), &c, w, o, state_bytes);
            sc_search_free(s);
            if (o->progress)
                o->progress(o->progress_ud, done, (int)total, c.name, nodes[ni], p, NULL);
        }
    }

    /* scaling efficiency against each cluster's smallest count that ran */
    for (int i = 0; i < w->n_points; i++) {
        const sc_whatif_point *base = NULL;
        for (int j = 0; j <= i && !base; j++)
            if (w->points[j].cluster == w->points[i].cluster)
                base = &w->points[j];
        w->points[i].scaling_efficiency = (w->points[i].tokens_per_s / (double)w->points[i].gpus) /
                                          (base->tokens_per_s / (double)base->gpus);
    }

    /* the Pareto front over every option: on demand, then spot */
    int n = w->n_points;
    double *x = sc_malloc(sizeof(double) * (size_t)(4 * n + 1));
    int *front = sc_malloc(sizeof(int) * (size_t)(2 * n + 1));
    if (!x || !front) {
        sc_free(x);
        sc_free(front);
        sc_whatif_free(w);
        return sc_err(err, SC_ENOMEM, "whatif: out of memory");
    }
    double *y = x + 2 * n;
    for (int i = 0; i < n; i++) {
        const sc_whatif_point *p = &w->points[i];
        x[i] = p->days;
        y[i] = p->cost_on_demand;
        x[n + i] = p->has_spot ? p->spot_days : INFINITY;
        y[n + i] = p->has_spot ? p->cost_spot : INFINITY;
    }
    sc_whatif_pareto(x, y, 2 * n, front);
    for (int i = 0; i < n; i++) {
        w->points[i].pareto_on_demand = front[i];
        w->points[i].pareto_spot = front[n + i];
    }
    sc_free(x);
    sc_free(front);
    *out = w;
    return SC_OK;
}

/* ---- output ------------------------------------------------------------------ */

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void add_num_or_null(cJSON *o, const char *key, double v, int *oom)
{
    cJSON *x = num_or_null(v);
    if (!x || !cJSON_AddItemToObject(o, key, x)) {
        cJSON_Delete(x);
        *oom = 1;
    }
}

cJSON *sc_whatif_to_json(const sc_whatif *w)
{
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", SC_WHATIF_FORMAT, &oom);
    sc_jadd_str(j, "model", w->model, &oom);
    cJSON *cl = sc_jadd_arr(j, "clusters", &oom);
    for (int i = 0; cl && i < w->n_clusters; i++)
        sc_jpush_str(cl, w->clusters[i].name, &oom);
    sc_jadd_num(j, "global_batch", (double)w->global_batch, &oom);
    sc_jadd_num(j, "tokens", w->tokens, &oom);
    sc_jadd_bool(j, "spot", w->spot, &oom);
    sc_jadd_num(j, "restart_s", w->restart_s, &oom);
    /* which kind of cluster each prediction used (label.h), with the error bar of
     * the step at the cluster's first (smallest) node count */
    cJSON *labels = sc_jadd_arr(j, "cluster_labels", &oom);
    for (int c = 0; labels && c < w->n_clusters; c++) {
        cJSON *o = sc_jpush_obj(labels, &oom);
        if (!o)
            break;
        const sc_whatif_point *p = sc_whatif_first_point(w, c);
        sc_jadd_str(o, "cluster", w->clusters[c].name, &oom);
        sc_jadd_num(o, "nodes", p ? (double)p->nodes : 0, &oom);
        sc_label_run run = {w->seq, p ? p->gpus : 0, w->params,
                            sc_label_attention(&w->clusters[c], w->flash)};
        cJSON *x = sc_cluster_label_json(&w->clusters[c], p ? p->step_s : 0, &run);
        if (!x)
            oom = 1;
        else
            cJSON_AddItemToObject(o, "cluster_label", x);
    }
    cJSON *pts = sc_jadd_arr(j, "points", &oom);
    for (int i = 0; pts && i < w->n_points; i++) {
        const sc_whatif_point *p = &w->points[i];
        cJSON *o = sc_jpush_obj(pts, &oom);
        if (!o)
            break;
        sc_jadd_str(o, "cluster", w->clusters[p->cluster].name, &oom);
        sc_jadd_num(o, "nodes", (double)p->nodes, &oom);
        sc_jadd_num(o, "gpus", (double)p->gpus, &oom);
        cJSON *g = sc_jadd_obj(o, "config", &oom);
        if (g) {
            sc_jadd_num(g, "dp", p->dp, &oom);
            sc_jadd_num(g, "tp", p->tp, &oom);
            sc_jadd_num(g, "pp", p->pp, &oom);
            sc_jadd_num(g, "v", p->v, &oom);
            sc_jadd_num(g, "m", p->m, &oom);
            sc_jadd_num(g, "mbs", p->mbs, &oom);
            sc_jadd_str(g, "schedule", p->schedule, &oom);
            sc_jadd_num(g, "zero", p->zero, &oom);
            sc_jadd_str(g, "recompute", sc_recompute_name(p->recompute), &oom);
            sc_jadd_bool(g, "sp", p->sp, &oom);
            sc_jadd_num(g, "cp", p->cp, &oom);
            if (p->tp_comm_overlap)
                sc_jadd_bool(g, "tp_comm_overlap", 1, &oom);
            if (p->overlap_param_gather)
                sc_jadd_bool(g, "overlap_param_gather", 1, &oom);
            if (!p->overlap_p2p_comm)
                sc_jadd_bool(g, "overlap_p2p_comm", 0, &oom);
            if (p->grad_reduce_in_fp32)
                sc_jadd_bool(g, "grad_reduce_in_fp32", 1, &oom);
            if (p->fp8)
                sc_jadd_bool(g, "fp8", 1, &oom);
        }
        sc_jadd_num(o, "step_time_s", p->step_s, &oom);
        sc_jadd_num(o, "tokens_per_s", p->tokens_per_s, &oom);
        sc_jadd_num(o, "scaling_efficiency", p->scaling_efficiency, &oom);
        sc_jadd_num(o, "days", p->days, &oom);
        sc_jadd_num(o, "cost_on_demand_usd", p->cost_on_demand, &oom);
        sc_jadd_num(o, "usd_per_mtok_on_demand", p->usd_per_mtok_on_demand, &oom);
        add_num_or_null(o, "cost_spot_usd", p->has_spot ? p->cost_spot : NAN, &oom);
        add_num_or_null(o, "usd_per_mtok_spot", p->has_spot ? p->usd_per_mtok_spot : NAN, &oom);
        if (p->has_spot) {
            cJSON *s = sc_jadd_obj(o, "spot", &oom);
            if (s) {
                sc_jadd_num(s, "interruptions_per_hour", p->spot.interruptions_per_hour, &oom);
                sc_jadd_num(s, "checkpoint_s", p->spot.checkpoint_s, &oom);
                add_num_or_null(s, "interval_s", p->spot.interval_s, &oom);
                sc_jadd_num(s, "waste_fraction", p->spot.waste_fraction, &oom);
                sc_jadd_bool(s, "feasible", p->spot.feasible, &oom);
                add_num_or_null(s, "days", p->spot_days, &oom);
            }
        } else if (!cJSON_AddNullToObject(o, "spot")) {
            oom = 1;
        }
        sc_jadd_bool(o, "pareto_on_demand", p->pareto_on_demand, &oom);
        sc_jadd_bool(o, "pareto_spot", p->pareto_spot, &oom);
    }
    cJSON *sk = sc_jadd_arr(j, "skipped", &oom);
    for (int i = 0; sk && i < w->n_skipped; i++) {
        cJSON *o = sc_jpush_obj(sk, &oom);
        if (!o)
            break;
        sc_jadd_str(o, "cluster", w->clusters[w->skipped[i].cluster].name, &oom);
        sc_jadd_num(o, "nodes", (double)w->skipped[i].nodes, &oom);
        sc_jadd_str(o, "reason", w->skipped[i].reason, &oom);
    }
    cJSON *pa = sc_jadd_arr(j, "pareto", &oom);
    for (int i = 0; pa && i < w->n_points; i++)
        if (w->points[i].pareto_on_demand || w->points[i].pareto_spot)
            sc_jpush_num(pa, i, &oom);
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* A CSV field: quoted when it holds a comma, quote or newline. */
static void csv_str(sc_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        sc_buf_printf(b, "%s", s);
        return;
    }
    sc_buf_printf(b, "\"");
    for (; *s; s++)
        sc_buf_printf(b, "%s%c", *s == '"' ? "\"" : "", *s);
    sc_buf_printf(b, "\"");
}

static void csv_num(sc_buf *b, double v)
{
    if (isfinite(v))
        sc_buf_printf(b, ",%.17g", v);
    else
        sc_buf_printf(b, ",%s", isnan(v) ? "" : "inf");
}

sc_status sc_whatif_csv(const sc_whatif *w, sc_buf *b, sc_error *err)
{
    sc_buf_printf(b, "cluster,nodes,gpus,dp,tp,pp,v,m,mbs,schedule,zero,recompute,step_time_s,"
                     "tokens_per_s,scaling_efficiency,days,cost_on_demand_usd,"
                     "usd_per_mtok_on_demand,spot_interruptions_per_hour,checkpoint_s,"
                     "interval_s,waste_fraction,spot_days,cost_spot_usd,usd_per_mtok_spot,"
                     "pareto,cp\n");
    for (int i = 0; i < w->n_points; i++) {
        const sc_whatif_point *p = &w->points[i];
        csv_str(b, w->clusters[p->cluster].name);
        sc_buf_printf(b, ",%ld,%ld,%d,%d,%d,%d,%d,%d,%s,%d,%s", p->nodes, p->gpus, p->dp, p->tp,
                      p->pp, p->v, p->m, p->mbs, p->schedule, p->zero,
                      sc_recompute_name(p->recompute));
        csv_num(b, p->step_s);
        csv_num(b, p->tokens_per_s);
        csv_num(b, p->scaling_efficiency);
        csv_num(b, p->days);
        csv_num(b, p->cost_on_demand);
        csv_num(b, p->usd_per_mtok_on_demand);
        if (p->has_spot) {
            csv_num(b, p->spot.interruptions_per_hour);
            csv_num(b, p->spot.checkpoint_s);
            csv_num(b, p->spot.interval_s);
            csv_num(b, p->spot.waste_fraction);
            csv_num(b, p->spot_days);
            csv_num(b, p->cost_spot);
            csv_num(b, p->usd_per_mtok_spot);
        } else {
            sc_buf_printf(b, ",,,,,,,");
        }
        const char *pf = p->pareto_on_demand && p->pareto_spot ? "both"
                         : p->pareto_on_demand                 ? "on_demand"
                         : p->pareto_spot                      ? "spot"
                                                               : "";
        sc_buf_printf(b, ",%s,%d\n", pf, p->cp);
    }
    return b->oom ? sc_err(err, SC_ENOMEM, "whatif: out of memory") : SC_OK;
}

/* The three charts, as NAME.png and NAME.svg of the output set od. */
static sc_status draw_charts(const sc_whatif *w, sc_outdir *od, const sc_plot_opts *po,
                             sc_error *err)
{
    int n = w->n_points, nc = w->n_clusters;
    /* per series (cluster × {on demand, spot}): x and y arrays of up to n */
    size_t cells = (size_t)(2 * nc) * (size_t)(n + 1);
    double *buf = sc_malloc(sizeof(double) * (cells * 2 + 2 * (size_t)(2 * n + 1)));
    sc_plot_series *ser = sc_calloc((size_t)(2 * nc), sizeof(sc_plot_series));
    char(*titles)[192] = sc_calloc((size_t)(2 * nc), sizeof *titles);
    /* node-count labels for the time-cost chart, one array per series */
    char(*labtxt)[24] = sc_calloc((size_t)n + 1, sizeof *labtxt);
    const char **labs = sc_calloc(cells, sizeof *labs);
    sc_status st = SC_OK;
    if (!buf || !ser || !titles || !labtxt || !labs) {
        st = sc_err(err, SC_ENOMEM, "whatif: out of memory");
        goto done;
    }
    double *xs = buf, *ys = buf + cells, *mark = buf + 2 * cells;
    int n_mark = 0;
    for (int i = 0; i < n; i++) {
        const sc_whatif_point *p = &w->points[i];
        snprintf(labtxt[i], sizeof labtxt[i], "%ld", p->nodes);
        if (p->pareto_on_demand) {
            mark[2 * n_mark] = p->days;
            mark[2 * n_mark++ + 1] = p->cost_on_demand;
        }
        if (p->pareto_spot) {
            mark[2 * n_mark] = p->spot_days;
            mark[2 * n_mark++ + 1] = p->cost_spot;
        }
    }
    char title[512], tok[32];
    double t = w->tokens;
    if (t >= 1e12)
        snprintf(tok, sizeof tok, "%.4gT", t / 1e12);
    else if (t >= 1e9)
        snprintf(tok, sizeof tok, "%.4gB", t / 1e9);
    else if (t >= 1e6)
        snprintf(tok, sizeof tok, "%.4gM", t / 1e6);
    else
        snprintf(tok, sizeof tok, "%.4g", t);

    int has_cost = sc_whatif_has_cost(w);
    for (int chart = 0; chart < 3; chart++) {
        int ns = 0;
        if (chart != 1 && !has_cost)
            continue; /* a cluster without prices: time only */
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1 && (!w->spot || chart == 1))
                break;
            for (int ci = 0; ci < nc; ci++) {
                sc_plot_series *s = &ser[ns];
                double *x = xs + (size_t)ns * (size_t)(n + 1), *y = ys + (size_t)ns * (size_t)(n + 1);
                int k = 0;
                for (int i = 0; i < n; i++) {
                    const sc_whatif_point *p = &w->points[i];
                    if (p->cluster != ci || (pass == 1 && (!p->has_spot || !p->spot.feasible)))
                        continue;
                    /* a log axis has no place for $0 (a cluster without a price) */
                    if (chart == 0 && !((pass ? p->cost_spot : p->cost_on_demand) > 0))
                        continue;
                    labs[(size_t)ns * (size_t)(n + 1) + (size_t)k] = labtxt[i];
                    if (chart == 0) {
                        x[k] = pass ? p->spot_days : p->days;
                        y[k] = pass ? p->cost_spot : p->cost_on_demand;
                    } else if (chart == 1) {
                        x[k] = (double)p->nodes;
                        y[k] = p->tokens_per_s;
                    } else {
                        x[k] = (double)p->nodes;
                        y[k] = pass ? p->usd_per_mtok_spot : p->usd_per_mtok_on_demand;
                    }
                    k++;
                }
                if (!k)
                    continue;
                snprintf(titles[ns], sizeof titles[ns], "%s%s", w->clusters[ci].name,
                         chart == 1 ? "" : pass ? " spot" : " on demand");
                *s = (sc_plot_series){titles[ns], x, y, k, 0, 0, NULL, 0, NULL, NULL};
                if (chart == 0)
                    s->labels = labs + (size_t)ns * (size_t)(n + 1);
                ns++;
            }
        }
        if (!ns)
            continue; /* sc_whatif_write refuses a study without points */
        sc_plot_xy xy = {0};
        xy.series = ser;
        xy.n_series = ns;
        xy.logx = 1;
        if (chart == 0) {
            snprintf(title, sizeof title,
                     "%s: days to train %s tokens against cost (global batch %ld); points "
                     "labelled with their node count%s",
                     w->model, tok, w->global_batch, n_mark ? ", the Pareto front circled" : "");
            xy.xlabel = "days to train (log scale)";
            xy.ylabel = "cost (US dollars, log scale)";
            xy.logy = 1;
            ser[0].mark = mark;
            ser[0].n_mark = n_mark;
            ser[0].mark_title = "Pareto front";
        } else if (chart == 1) {
            snprintf(title, sizeof title, "%s: throughput of the best plan at each node count "
                                          "(global batch %ld)",
                     w->model, w->global_batch);
            xy.xlabel = "nodes (log scale)";
            xy.ylabel = "tokens per second (log scale)";
            xy.logy = 1;
        } else {
            snprintf(title, sizeof title, "%s: cost per million tokens (global batch %ld)",
                     w->model, w->global_batch);
            xy.xlabel = "nodes (log scale)";
            xy.ylabel = "US dollars per million tokens";
        }
        xy.title = title;
        static const char *const base[] = {"time_vs_cost", "tokens_vs_nodes",
                                           "cost_per_mtok_vs_nodes"};
        for (int f = 0; f < 2; f++) {
            char name[64];
            const char *path;
            snprintf(name, sizeof name, "%s.%s", base[chart], f ? "svg" : "png");
            if ((st = sc_outdir_file(od, name, &path, err)))
                goto done;
            sc_plot_opts o = po ? *po : (sc_plot_opts){0};
            o.title = NULL;
            if ((st = sc_plot_lines(&xy, path, &o, err)))
                goto done;
        }
        ser[0].mark = NULL;
        ser[0].n_mark = 0;
    }
done:
    sc_free(buf);
    sc_free(ser);
    sc_free(titles);
    sc_free(labtxt);
    sc_free(labs);
    return st;
}

int sc_whatif_has_cost(const sc_whatif *w)
{
    for (int i = 0; i < w->n_points; i++)
        if (w->points[i].cost_on_demand > 0)
            return 1;
    return 0;
}

sc_status sc_whatif_write(const sc_whatif *w, const char *dir, const sc_plot_opts *po,
                          sc_error *err)
{
    if (w->n_points == 0)
        return sc_err(err, SC_EINVAL, "whatif: no point of the study ran: nothing to write");
    /* every file into a staging folder, renamed into dir when all exist */
    sc_outdir *od = NULL;
    sc_status st = sc_outdir_open(dir, "whatif", &od, err);
    if (st)
        return st;
    const char *path;
    sc_buf b = {0};
    cJSON *j = NULL;
    st = sc_whatif_csv(w, &b, err);
    if (!st)
        st = sc_outdir_file(od, "whatif.csv", &path, err);
    if (!st)
        st = sc_write_file_atomic(path, b.s, b.len, err);
    if (!st && !(j = sc_whatif_to_json(w)))
        st = sc_err(err, SC_ENOMEM, "whatif: out of memory");
    if (!st)
        st = sc_outdir_file(od, "whatif.json", &path, err);
    if (!st)
        st = sc_json_save(path, j, err);
    cJSON_Delete(j);
    if (!st)
        st = draw_charts(w, od, po, err);
    sc_buf_free(&b);
    return sc_outdir_close(od, st, err);
}
