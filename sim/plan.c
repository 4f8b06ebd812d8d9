/* plan.c - the plan format, see plan.h. */
#include "plan.h"
#include "overhead.h"
#include "cost.h"
#include "json.h"
#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

sc_status sc_model_digest(const sc_model *m, char out[17])
{
    cJSON *j = sc_model_to_json(m);
    if (!j)
        return SC_ENOMEM;
    sc_status st = sc_json_digest(j, out);
    cJSON_Delete(j);
    return st;
}

sc_status sc_cluster_digest(const sc_cluster *c, char out[17])
{
    /* the node count is part of the plan, not of the hardware description */
    sc_cluster one = *c;
    one.nodes = 1;
    cJSON *j = sc_cluster_to_json(&one);
    if (!j)
        return SC_ENOMEM;
    sc_status st = sc_json_digest(j, out);
    cJSON_Delete(j);
    return st;
}

sc_status sc_plan_file_digest(const char *file, char out[17], sc_error *err)
{
    cJSON *j;
    sc_status st = sc_json_load(file, &j, err);
    if (st)
        return st;
    st = sc_json_digest(j, out);
    cJSON_Delete(j);
    return st ? sc_err(err, st, "%s: out of memory", file) : SC_OK;
}

void sc_plan_free(sc_plan *p)
{
    if (!p)
        return;
    for (int i = 0; (p->first_names || p->last_names) && i < p->partition.n_stages; i++) {
        if (p->first_names)
            sc_free(p->first_names[i]);
        if (p->last_names)
            sc_free(p->last_names[i]);
    }
    sc_free(p->first_names);
    sc_free(p->last_names);
    sc_partition_free(&p->partition);
    sc_free(p->peak_mem);
    sc_free(p);
}

sc_status sc_plan_make(const sc_model *m, const char *model_source, const sc_cluster *c,
                       const char *cluster_source, const sc_step_cfg *cfg, const char *method,
                       const sc_step_result *r, sc_plan **out, sc_error *err)
{
    *out = NULL;
    if (!cfg->partition || cfg->partition->n_stages != cfg->pp * cfg->v)
        return sc_err(err, SC_EINVAL, "plan: the configuration has no partition of pp·v stages");
    sc_plan *p = sc_calloc(1, sizeof *p);
    if (!p)
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    snprintf(p->model_name, sizeof p->model_name, "%s", m->name);
    snprintf(p->model_source, sizeof p->model_source, "%s", model_source);
    snprintf(p->cluster_name, sizeof p->cluster_name, "%s", c->name);
    snprintf(p->cluster_source, sizeof p->cluster_source, "%s", cluster_source);
    p->nodes = c->nodes;
    p->gpus_per_node = c->gpus_per_node;
    p->dp = cfg->dp;
    p->cp = cfg->cp > 1 ? cfg->cp : 1;
    p->tp = cfg->tp;
    p->pp = cfg->pp;
    p->v = cfg->v;
    p->m = cfg->m;
    p->mbs = cfg->mbs;
    p->zero = cfg->zero;
    p->recompute = cfg->recompute;
    p->bucket_bytes = cfg->bucket_bytes > 0 ? cfg->bucket_bytes : SC_DEFAULT_BUCKET_BYTES;
    p->sp = cfg->sp != 0;
    p->attn = cfg->attn;
    p->slices = cfg->slices > 1 ? cfg->slices : 0;
    for (int j = 0; j < p->slices && j < 64; j++) /* equal slices: as sc_lower cuts them */
        p->slice_len[j] = cfg->slice_len ? cfg->slice_len[j]
                                         : m->seq_len / p->slices + (j < m->seq_len % p->slices);
    p->overlap_grad_reduce = !cfg->no_overlap_grad_reduce;
    p->overlap_p2p_comm = !cfg->no_overlap_p2p_comm;
    p->tp_comm_overlap = cfg->tp_comm_overlap != 0;
    p->overlap_param_gather = cfg->overlap_param_gather != 0;
    p->defer_embedding_wgrad = cfg->defer_embedding_wgrad != 0;
    p->wgrad_deferral_limit = p->defer_embedding_wgrad ? cfg->wgrad_deferral_limit : 0;
    p->grad_reduce_in_fp32 = cfg->grad_reduce_in_fp32 != 0;
    p->fp8 = cfg->fp8 != 0;
    snprintf(p->schedule, sizeof p->schedule, "%s", cfg->schedule);
    snprintf(p->placement, sizeof p->placement, "%s", cfg->placement ? cfg->placement : "tp,pp,dp");
    snprintf(p->method, sizeof p->method, "%s", method ? method : "explicit");
    int S = cfg->partition->n_stages;
    p->partition.first = sc_malloc(sizeof(int) * (size_t)(S + 1));
    if (!p->partition.first || sc_model_digest(m, p->model_digest) ||
        sc_cluster_digest(c, p->cluster_digest)) {
        sc_plan_free(p);
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    }
    p->partition.n_stages = S;
    memcpy(p->partition.first, cfg->partition->first, sizeof(int) * (size_t)(S + 1));
    snprintf(p->framework, sizeof p->framework, "%s", c->framework);
    if (r) {
        p->has_prediction = 1;
        p->step_time_s = r->step_time_s;
        p->bubble_fraction = r->bubble_fraction;
        p->tflops_per_gpu = r->tflops_per_gpu;
        p->mfu = r->mfu;
        p->tokens_per_s = r->tokens_per_s;
        p->cost_per_step_usd = r->cost_per_step_usd;
        p->breakdown = r->breakdown;
        p->peak_mem = sc_malloc(sizeof(double) * (size_t)r->pp);
        if (!p->peak_mem) {
            sc_plan_free(p);
            return sc_err(err, SC_ENOMEM, "plan: out of memory");
        }
        for (int i = 0; i < r->pp; i++)
            p->peak_mem[i] = r->mem[i].total;
    }
    *out = p;
    return SC_OK;
}

void sc_plan_step_cfg(const sc_plan *p, sc_step_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->dp = p->dp;
    cfg->cp = p->cp > 1 ? p->cp : 0;
    cfg->tp = p->tp;
    cfg->pp = p->pp;
    cfg->v = p->v;
    cfg->m = p->m;
    cfg->mbs = p->mbs;
    cfg->zero = p->zero;
    cfg->recompute = p->recompute;
    cfg->bucket_bytes = p->bucket_bytes;
    cfg->sp = p->sp;
    cfg->attn = p->attn;
    cfg->slices = p->slices;
    cfg->slice_len = p->slices > 1 ? p->slice_len : NULL;
    cfg->no_overlap_grad_reduce = !p->overlap_grad_reduce;
    cfg->no_overlap_p2p_comm = !p->overlap_p2p_comm;
    cfg->tp_comm_overlap = p->tp_comm_overlap;
    cfg->overlap_param_gather = p->overlap_param_gather;
    cfg->defer_embedding_wgrad = p->defer_embedding_wgrad;
    cfg->wgrad_deferral_limit = p->wgrad_deferral_limit;
    cfg->grad_reduce_in_fp32 = p->grad_reduce_in_fp32;
    cfg->fp8 = p->fp8;
    cfg->schedule = p->schedule;
    cfg->placement = p->placement;
    cfg->partition = &p->partition;
}

cJSON *sc_plan_to_json(const sc_plan *p, const sc_model *m)
{
    sc_json_init();
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", SC_PLAN_FORMAT, &oom);
    cJSON *o = sc_jadd_obj(j, "model", &oom);
    sc_jadd_str(o, "name", p->model_name, &oom);
    sc_jadd_str(o, "source", p->model_source, &oom);
    sc_jadd_str(o, "digest", p->model_digest, &oom);
    o = sc_jadd_obj(j, "cluster", &oom);
    sc_jadd_str(o, "name", p->cluster_name, &oom);
    sc_jadd_str(o, "source", p->cluster_source, &oom);
    sc_jadd_str(o, "digest", p->cluster_digest, &oom);
    sc_jadd_num(o, "nodes", p->nodes, &oom);
    sc_jadd_num(o, "gpus_per_node", p->gpus_per_node, &oom);
    sc_jadd_num(j, "dp", p->dp, &oom);
    if (p->cp > 1)
        sc_jadd_num(j, "cp", p->cp, &oom);
    sc_jadd_num(j, "tp", p->tp, &oom);
    sc_jadd_num(j, "pp", p->pp, &oom);
    sc_jadd_num(j, "v", p->v, &oom);
    sc_jadd_num(j, "microbatches", p->m, &oom);
    sc_jadd_num(j, "mbs", p->mbs, &oom);
    sc_jadd_num(j, "global_batch", (double)p->dp * p->m * p->mbs, &oom);
    sc_jadd_str(j, "schedule", p->schedule, &oom);
    sc_jadd_num(j, "zero", p->zero, &oom);
    sc_jadd_str(j, "recompute", sc_recompute_name(p->recompute), &oom);
    sc_jadd_str(j, "placement", p->placement, &oom);
    sc_jadd_num(j, "bucket_bytes", p->bucket_bytes, &oom);
    sc_jadd_bool(j, "sp", p->sp, &oom);
    sc_jadd_str(j, "attention", sc_attn_name(p->attn), &oom);
    if (p->slices > 1) {
        cJSON *a = sc_jadd_arr(j, "slices", &oom);
        for (int k = 0; a && k < p->slices; k++)
            sc_jpush_num(a, p->slice_len[k], &oom);
    }
    if (!p->overlap_grad_reduce)
        sc_jadd_bool(j, "overlap_grad_reduce", 0, &oom);
    if (!p->overlap_p2p_comm)
        sc_jadd_bool(j, "overlap_p2p_comm", 0, &oom);
    if (p->tp_comm_overlap)
        sc_jadd_bool(j, "tp_comm_overlap", 1, &oom);
    if (p->overlap_param_gather)
        sc_jadd_bool(j, "overlap_param_gather", 1, &oom);
    if (p->defer_embedding_wgrad) {
        sc_jadd_bool(j, "defer_embedding_wgrad_compute", 1, &oom);
        sc_jadd_num(j, "wgrad_deferral_limit", p->wgrad_deferral_limit, &oom);
    }
    if (p->grad_reduce_in_fp32)
        sc_jadd_bool(j, "grad_reduce_in_fp32", 1, &oom);
    if (p->fp8)
        sc_jadd_bool(j, "fp8", 1, &oom);
    if (p->framework[0])
        sc_jadd_str(j, "framework", p->framework, &oom);
    cJSON *part = sc_jadd_obj(j, "partition", &oom);
    sc_jadd_str(part, "method", p->method, &oom);
    cJSON *st = sc_jadd_arr(part, "stages", &oom);
    for (int s = 0; s < p->partition.n_stages && !oom; s++) {
        cJSON *x = sc_jpush_obj(st, &oom);
        if (!x)
            break;
        int a = p->partition.first[s], b = p->partition.first[s + 1] - 1;
        sc_jadd_num(x, "first_leaf", a, &oom);
        sc_jadd_num(x, "last_leaf", b, &oom);
        if (m && b < m->n_leaves) {
            sc_jadd_str(x, "first", m->leaves[a]->name, &oom);
            sc_jadd_str(x, "last", m->leaves[b]->name, &oom);
        }
    }
    cJSON *ranks = sc_jadd_arr(j, "ranks", &oom);
    sc_step_cfg cfg;
    sc_plan_step_cfg(p, &cfg);
    int cp = p->cp; /* >= 1 in a plan (plan.h) */
    int n = p->dp * cp * p->tp * p->pp;
    int gpn = p->gpus_per_node;
    for (int r = 0; r < n && !oom; r++) {
        int d, pp_, t;
        sc_step_coords(&cfg, r, &d, &pp_, &t);
        cJSON *x = sc_jpush_obj(ranks, &oom);
        if (!x)
            break;
        sc_jadd_num(x, "rank", r, &oom);
        sc_jadd_num(x, "node", r / gpn, &oom);
        sc_jadd_num(x, "device", r % gpn, &oom);
        sc_jadd_num(x, "dp", d / cp, &oom);
        if (cp > 1)
            sc_jadd_num(x, "cp", d % cp, &oom);
        sc_jadd_num(x, "pp", pp_, &oom);
        sc_jadd_num(x, "tp", t, &oom);
    }
    if (p->has_prediction) {
        cJSON *pr = sc_jadd_obj(j, "prediction", &oom);
        sc_jadd_num(pr, "step_time_s", p->step_time_s, &oom);
        sc_jadd_num(pr, "bubble_fraction", p->bubble_fraction, &oom);
        sc_step_breakdown_json(pr, &p->breakdown, p->cp, &oom);
        cJSON *pm = sc_jadd_arr(pr, "peak_mem_bytes", &oom);
        for (int i = 0; i < p->pp && pm; i++)
            sc_jpush_num(pm, p->peak_mem[i], &oom);
        sc_jadd_num(pr, "tflops_per_gpu", p->tflops_per_gpu, &oom);
        sc_jadd_num(pr, "mfu", p->mfu, &oom);
        sc_jadd_num(pr, "tokens_per_s", p->tokens_per_s, &oom);
        sc_jadd_num(pr, "cost_per_step_usd", p->cost_per_step_usd, &oom);
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

sc_status sc_plan_save(const sc_plan *p, const sc_model *m, const char *file, sc_error *err)
{
    cJSON *j = sc_plan_to_json(p, m);
    if (!j)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    sc_status st = sc_json_save(file, j, err);
    cJSON_Delete(j);
    return st;
}

static sc_status copy_str(const cJSON *o, const char *file, const char *path, const char *key,
                          char *dst, size_t cap, sc_error *err)
{
    const char *s = NULL;
    sc_status st = sc_json_str(o, file, path, key, 1, cap - 1, &s, err);
    if (!st)
        snprintf(dst, cap, "%s", s);
    return st;
}

static sc_status get_int(const cJSON *o, const char *file, const char *key, long lo, long hi,
                         int *dst, sc_error *err)
{
    long v = 0;
    sc_status st = sc_json_int(o, file, "", key, 1, lo, hi, &v, err);
    if (!st)
        *dst = (int)v;
    return st;
}

const char *const sc_plan_methods[] = {"uniform", "tree", "optimal", "explicit", NULL};

/* The ranks array against the layout: dp·tp·pp entries in rank order, each
 * on node rank / gpus_per_node, device rank mod gpus_per_node, with the
 * coordinates sc_step_coords gives under the plan's placement (so the array
 * is the layout's permutation, every position once). */
static sc_status check_ranks(const cJSON *j, const char *file, const sc_plan *p, sc_error *err)
{
    const cJSON *ranks = NULL;
    sc_status st = sc_json_arr(j, file, "", "ranks", 1, &ranks, err);
    if (st)
        return st;
    int cp = p->cp; /* >= 1 in a plan (plan.h) */
    long n = (long)p->dp * cp * p->tp * p->pp;
    if (cJSON_GetArraySize(ranks) != n)
        return sc_err(err, SC_EINVAL, "%s: ranks: %d entries, dp·%stp·pp = %ld", file,
                      cJSON_GetArraySize(ranks), cp > 1 ? "cp·" : "", n);
    sc_step_cfg cfg;
    sc_plan_step_cfg(p, &cfg);
    /* "cp" (the rank's cp index) only in plans with cp > 1 */
    static const char *const rk[] = {"rank", "node", "device", "dp", "pp", "tp", "cp", NULL};
    static const char *const rk1[] = {"rank", "node", "device", "dp", "pp", "tp", NULL};
    int i = 0, gpn = p->gpus_per_node;
    for (const cJSON *x = ranks->child; x; x = x->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "ranks[%d]", i);
        if (!cJSON_IsObject(x))
            return sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
        if ((st = sc_json_keys(x, file, path, cp > 1 ? rk : rk1, err)))
            return st;
        int nf = cp > 1 ? 7 : 6;
        long v[7];
        long hi[7] = {n - 1, p->nodes - 1, gpn - 1, p->dp - 1, p->pp - 1, p->tp - 1, cp - 1};
        for (int f = 0; f < nf; f++)
            if ((st = sc_json_int(x, file, path, rk[f], 1, 0, hi[f], &v[f], err)))
                return st;
        int d, q, t;
        sc_step_coords(&cfg, i, &d, &q, &t);
        long want[7] = {i, i / gpn, i % gpn, d / cp, q, t, d % cp};
        for (int f = 0; f < nf; f++)
            if (v[f] != want[f])
                return sc_err(err, SC_EINVAL,
                              "%s: %s.%s: %ld, expected %ld (rank %d is dp %d%s%.0d pp %d tp %d "
                              "on node %d, device %d under placement %s)",
                              file, path, rk[f], v[f], want[f], i, d / cp,
                              cp > 1 ? " cp " : "", cp > 1 ? d % cp : 0, q, t, i / gpn,
                              i % gpn, p->placement);
    }
    return SC_OK;
}

/* Fields that must agree with each other: the schedule and its (pp, m, v),
 * the placement, the partition method, the global batch. */
static sc_status check_config(const cJSON *j, const char *file, const sc_plan *p, sc_error *err)
{
    const sc_sched_impl *impl = sc_sched_find(p->schedule);
    if (!impl)
        return sc_err(err, SC_EINVAL, "%s: schedule: \"%s\" is not a schedule (gpipe, 1f1b, "
                      "interleaved, zb-h1)", file, p->schedule);
    char buf[256];
    const char *why = impl->validate(p->pp, p->m, p->v, buf, sizeof buf);
    if (why)
        return sc_err(err, SC_EINVAL, "%s: schedule: %s", file, why);
    sc_step_cfg cfg;
    sc_plan_step_cfg(p, &cfg);
    if (sc_step_rank(&cfg, 0, 0, 0) < 0)
        return sc_err(err, SC_EINVAL, "%s: placement: \"%s\" is not an order of tp, pp, dp "
                      "like tp,pp,dp", file, p->placement);
    int known = 0;
    for (int i = 0; sc_plan_methods[i]; i++)
        known |= !strcmp(p->method, sc_plan_methods[i]);
    if (!known)
        return sc_err(err, SC_EINVAL, "%s: partition.method: \"%s\" is not one of uniform, tree, "
                      "optimal, explicit", file, p->method);
    long gb = 0;
    sc_status st = sc_json_int(j, file, "", "global_batch", 1, 1, 1L << 50, &gb, err);
    if (st)
        return st;
    if (gb != (long)p->dp * p->m * p->mbs)
        return sc_err(err, SC_EINVAL, "%s: global_batch: %ld, but dp·microbatches·mbs = %d·%d·%d "
                      "= %ld", file, gb, p->dp, p->m, p->mbs, (long)p->dp * p->m * p->mbs);
    return SC_OK;
}

sc_status sc_plan_load(const char *file, sc_plan **out, sc_error *err)
{
    static const char *const top[] = {"format", "model", "cluster", "dp", "cp", "tp", "pp", "v",
                                      "microbatches", "mbs", "global_batch", "schedule", "zero",
                                      "recompute", "placement", "bucket_bytes", "sp", "attention",
                                      "slices", "overlap_grad_reduce", "overlap_p2p_comm", "tp_comm_overlap", "overlap_param_gather", "defer_embedding_wgrad_compute", "wgrad_deferral_limit", "grad_reduce_in_fp32", "fp8", "framework", "partition", "ranks",
                                      "prediction", NULL};
    static const char *const mk[] = {"name", "source", "digest", NULL};
    static const char *const ck[] = {"name", "source", "digest", "nodes", "gpus_per_node", NULL};
    *out = NULL;
    cJSON *j;
    sc_status st = sc_json_load(file, &j, err);
    if (st)
        return st;
    sc_plan *p = sc_calloc(1, sizeof *p);
    if (!p) {
        cJSON_Delete(j);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    const cJSON *mo = NULL, *co = NULL, *part = NULL, *stages = NULL, *pred = NULL;
    const char *s = NULL;
    st = sc_json_format(j, file, SC_PLAN_FORMAT, err);
    if (!st)
        st = sc_json_keys(j, file, "", top, err);
    if (!st)
        st = sc_json_obj(j, file, "", "model", 1, &mo, err);
    if (!st)
        st = sc_json_keys(mo, file, "model", mk, err);
    if (!st)
        st = copy_str(mo, file, "model", "name", p->model_name, sizeof p->model_name, err);
    if (!st)
        st = copy_str(mo, file, "model", "source", p->model_source, sizeof p->model_source, err);
    if (!st)
        st = copy_str(mo, file, "model", "digest", p->model_digest, sizeof p->model_digest, err);
    if (!st)
        st = sc_json_obj(j, file, "", "cluster", 1, &co, err);
    if (!st)
        st = sc_json_keys(co, file, "cluster", ck, err);
    if (!st)
        st = copy_str(co, file, "cluster", "name", p->cluster_name, sizeof p->cluster_name, err);
    if (!st)
        st = copy_str(co, file, "cluster", "source", p->cluster_source, sizeof p->cluster_source,
                      err);
    if (!st)
        st = copy_str(co, file, "cluster", "digest", p->cluster_digest, sizeof p->cluster_digest,
                      err);
    /* "-" would make sc_plan_open read standard input (sc_read_file): a
     * tampered plan would wait on a terminal or swallow a pipe */
    if (!st && strcmp(p->model_source, "-") == 0)
        st = sc_err(err, SC_EINVAL, "%s: model.source: \"-\" (standard input) cannot be a "
                    "plan's model: name a file or a built-in", file);
    if (!st && strcmp(p->cluster_source, "-") == 0)
        st = sc_err(err, SC_EINVAL, "%s: cluster.source: \"-\" (standard input) cannot be a "
                    "plan's cluster: name a file or a preset", file);
    if (!st) {
        long n = 0;
        st = sc_json_int(co, file, "cluster", "nodes", 1, 1, SC_CLUSTER_MAX_NODES, &n, err);
        p->nodes = (int)n;
        if (!st)
            st = sc_json_int(co, file, "cluster", "gpus_per_node", 1, 1,
                             SC_CLUSTER_MAX_GPUS_PER_NODE, &n, err);
        p->gpus_per_node = (int)n;
    }
    if (!st)
        st = get_int(j, file, "dp", 1, 1 << 20, &p->dp, err);
    p->cp = 1; /* optional: plans without context parallelism have no key */
    if (!st)
        st = cJSON_GetObjectItemCaseSensitive(j, "cp") ? get_int(j, file, "cp", 1, 4096, &p->cp, err)
                                                       : SC_OK;
    if (!st)
        st = get_int(j, file, "tp", 1, 1 << 12, &p->tp, err);
    if (!st)
        st = get_int(j, file, "pp", 1, 1 << 12, &p->pp, err);
    if (!st)
        st = get_int(j, file, "v", 1, 64, &p->v, err);
    if (!st)
        st = get_int(j, file, "microbatches", 1, 1 << 16, &p->m, err);
    if (!st)
        st = get_int(j, file, "mbs", 1, 1 << 16, &p->mbs, err);
    if (!st)
        st = get_int(j, file, "zero", 0, 3, &p->zero, err);
    long nranks = (long)p->dp * p->cp * p->tp * p->pp;
    if (!st && nranks > 1L << 22)
        st = sc_err(err, SC_EINVAL, "%s: dp·cp·tp·pp: more than %ld ranks", file, 1L << 22);
    if (!st && nranks > (long)p->nodes * p->gpus_per_node)
        st = sc_err(err, SC_EINVAL, "%s: dp·cp·tp·pp = %ld ranks, but the cluster has %ld GPUs",
                    file, nranks, (long)p->nodes * p->gpus_per_node);
    if (!st)
        st = copy_str(j, file, "", "schedule", p->schedule, sizeof p->schedule, err);
    if (!st)
        st = copy_str(j, file, "", "placement", p->placement, sizeof p->placement, err);
    /* optional: plans written before it used the default */
    p->bucket_bytes = SC_DEFAULT_BUCKET_BYTES;
    if (!st)
        st = sc_json_num(j, file, "", "bucket_bytes", 0, 1, 1e12, &p->bucket_bytes, err);
    if (!st)
        st = sc_json_bool(j, file, "", "sp", 0, &p->sp, err);
    p->overlap_grad_reduce = 1; /* optional: absent in plans before the setting */
    if (!st)
        st = sc_json_bool(j, file, "", "overlap_grad_reduce", 0, &p->overlap_grad_reduce, err);
    p->overlap_p2p_comm = 1; /* optional: absent in plans before the setting */
    if (!st)
        st = sc_json_bool(j, file, "", "overlap_p2p_comm", 0, &p->overlap_p2p_comm, err);
    if (!st && p->sp && p->tp < 2)
        st = sc_err(err, SC_EINVAL, "%s: sp: sequence parallelism needs tp >= 2 (tp is %d)", file,
                    p->tp);
    p->tp_comm_overlap = 0; /* optional: absent in plans before the setting */
    if (!st)
        st = sc_json_bool(j, file, "", "tp_comm_overlap", 0, &p->tp_comm_overlap, err);
    p->overlap_param_gather = 0; /* optional: absent in plans before the setting */
    if (!st)
        st = sc_json_bool(j, file, "", "overlap_param_gather", 0, &p->overlap_param_gather, err);
    p->defer_embedding_wgrad = 0; /* optional: absent in plans before the setting */
    if (!st)
        st = sc_json_bool(j, file, "", "defer_embedding_wgrad_compute", 0,
                          &p->defer_embedding_wgrad, err);
    long lim = 0;
    if (!st)
        st = sc_json_int(j, file, "", "wgrad_deferral_limit", 0, 0, 1000000, &lim, err);
    p->wgrad_deferral_limit = (int)lim;
    p->grad_reduce_in_fp32 = 0; /* optional: absent in plans before the setting */
    if (!st)
        st = sc_json_bool(j, file, "", "grad_reduce_in_fp32", 0, &p->grad_reduce_in_fp32, err);
    p->fp8 = 0; /* optional: absent in plans before fp8 training */
    if (!st)
        st = sc_json_bool(j, file, "", "fp8", 0, &p->fp8, err);
    const char *dwhy = st ? NULL : sc_step_defer_why(p->defer_embedding_wgrad, p->pp);
    if (dwhy)
        st = sc_err(err, SC_EINVAL, "%s: defer_embedding_wgrad_compute: %s (pp is %d)", file,
                    dwhy, p->pp);
    const char *okey, *owhy = st ? NULL
                                 : sc_step_overlap_why(p->sp, p->zero, p->overlap_grad_reduce,
                                                       p->tp_comm_overlap,
                                                       p->overlap_param_gather, &okey);
    if (owhy)
        st = sc_err(err, SC_EINVAL, "%s: %s: %s", file, okey, owhy);
    p->slices = 0;
    const cJSON *sl = NULL;
    if (!st)
        st = sc_json_arr(j, file, "", "slices", 0, &sl, err);
    if (!st && sl) {
        int n = cJSON_GetArraySize(sl);
        if (n < 2 || n > 64)
            st = sc_err(err, SC_EINVAL, "%s: slices: %d slices (2 to 64, or omit the key)", file,
                        n);
        int k = 0;
        for (const cJSON *e = sl->child; e && !st; e = e->next, k++) {
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) ||
                e->valuedouble < 1 || e->valuedouble > 1e7)
                st = sc_err(err, SC_EINVAL, "%s: slices[%d]: must be a token count >= 1", file,
                            k);
            else
                p->slice_len[k] = (int)e->valuedouble;
        }
        if (!st)
            p->slices = n;
        if (!st && strcmp(p->schedule, "gpipe") && strcmp(p->schedule, "1f1b"))
            st = sc_err(err, SC_EINVAL, "%s: slices: token slices run with gpipe or 1f1b, not %s",
                        file, p->schedule);
    }
    if (!st)
        st = sc_json_str(j, file, "", "framework", 0, 16, &s, err);
    if (!st && s) {
        char what[1100];
        snprintf(what, sizeof what, "%s: framework", file);
        if (!sc_overhead_find(s))
            st = sc_err(err, SC_EINVAL, "%s: \"%.32s\" is not a framework with an overhead "
                                        "(megatron, deepspeed or torch)", what, s);
        else
            snprintf(p->framework, sizeof p->framework, "%s", s);
        s = NULL;
    }
    p->attn = SC_ATTN_UNFUSED;
    if (!st)
        st = sc_json_str(j, file, "", "attention", 0, 16, &s, err);
    if (!st && s) {
        int a = sc_attn_parse(s);
        if (a < 0)
            st = sc_err(err, SC_EINVAL, "%s: attention: \"%s\" is not unfused or flash", file, s);
        else
            p->attn = (sc_attn)a;
        s = NULL;
    }
    if (!st)
        st = sc_json_str(j, file, "", "recompute", 1, 16, &s, err);
    if (!st) {
        int r = sc_recompute_parse(s);
        if (r < 0)
            st = sc_err(err, SC_EINVAL, "%s: recompute: \"%s\" is not none, selective or full",
                        file, s);
        p->recompute = (sc_recompute)(r < 0 ? 0 : r);
    }
    if (!st)
        st = sc_json_obj(j, file, "", "partition", 1, &part, err);
    if (!st) {
        static const char *const pk[] = {"method", "stages", NULL};
        st = sc_json_keys(part, file, "partition", pk, err);
    }
    if (!st)
        st = copy_str(part, file, "partition", "method", p->method, sizeof p->method, err);
    if (!st)
        st = sc_json_arr(part, file, "partition", "stages", 1, &stages, err);
    if (!st) {
        int S = cJSON_GetArraySize(stages);
        if (S != p->pp * p->v)
            st = sc_err(err, SC_EINVAL, "%s: partition.stages: %d stages, pp·v = %d", file, S,
                        p->pp * p->v);
        else if (!(p->partition.first = sc_malloc(sizeof(int) * (size_t)(S + 1))) ||
                 !(p->first_names = sc_calloc((size_t)S, sizeof *p->first_names)) ||
                 !(p->last_names = sc_calloc((size_t)S, sizeof *p->last_names)))
            st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
        else
            p->partition.n_stages = S;
        int i = 0;
        for (const cJSON *x = stages->child; x && !st; x = x->next, i++) {
            static const char *const sk[] = {"first_leaf", "last_leaf", "first", "last", NULL};
            char path[64];
            long a = 0, b = 0;
            snprintf(path, sizeof path, "partition.stages[%d]", i);
            if (!cJSON_IsObject(x)) {
                st = sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
                break;
            }
            st = sc_json_keys(x, file, path, sk, err);
            const char *fn = NULL, *ln = NULL;
            if (!st)
                st = sc_json_str(x, file, path, "first", 0, SC_NAME_MAX, &fn, err);
            if (!st)
                st = sc_json_str(x, file, path, "last", 0, SC_NAME_MAX, &ln, err);
            if (!st && ((fn && !(p->first_names[i] = sc_strdup(fn))) ||
                        (ln && !(p->last_names[i] = sc_strdup(ln)))))
                st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
            if (!st)
                st = sc_json_int(x, file, path, "first_leaf", 1, 0, SC_MODEL_MAX_MODULES, &a, err);
            if (!st)
                st = sc_json_int(x, file, path, "last_leaf", 1, 0, SC_MODEL_MAX_MODULES, &b, err);
            if (!st && (b < a || (i == 0 && a != 0) || (i > 0 && a != p->partition.first[i])))
                st = sc_err(err, SC_EINVAL,
                            "%s: %s: leaves %ld..%ld do not continue the previous stage", file,
                            path, a, b);
            if (!st) {
                p->partition.first[i] = (int)a;
                p->partition.first[i + 1] = (int)b + 1;
            }
        }
    }
    if (!st)
        st = check_config(j, file, p, err);
    if (!st)
        st = check_ranks(j, file, p, err);
    if (!st)
        st = sc_json_obj(j, file, "", "prediction", 0, &pred, err);
    if (!st && pred) {
        static const char *const prk[] = {"step_time_s", "bubble_fraction", "breakdown",
                                          "peak_mem_bytes", "tflops_per_gpu", "mfu",
                                          "tokens_per_s", "cost_per_step_usd", NULL};
        st = sc_json_keys(pred, file, "prediction", prk, err);
        if (!st)
            st = sc_json_num(pred, file, "prediction", "step_time_s", 1, 0, 1e9, &p->step_time_s,
                             err);
        if (!st)
            st = sc_json_num(pred, file, "prediction", "bubble_fraction", 0, 0, 1,
                             &p->bubble_fraction, err);
        if (!st)
            st = sc_json_num(pred, file, "prediction", "tflops_per_gpu", 0, 0, 1e9,
                             &p->tflops_per_gpu, err);
        if (!st)
            st = sc_json_num(pred, file, "prediction", "mfu", 0, 0, 10, &p->mfu, err);
        if (!st)
            st = sc_json_num(pred, file, "prediction", "tokens_per_s", 0, 0, 1e15,
                             &p->tokens_per_s, err);
        if (!st)
            st = sc_json_num(pred, file, "prediction", "cost_per_step_usd", 0, 0, 1e12,
                             &p->cost_per_step_usd, err);
        const cJSON *bd = NULL, *pm = NULL;
        if (!st)
            st = sc_json_obj(pred, file, "prediction", "breakdown", 0, &bd, err);
        if (!st && bd) {
            static const char *const bk[] = {"compute_s", "recompute_s", "optimizer_s",
                                             "tp_comm_s", "pp_comm_s", "dp_comm_s", "bubble_s",
                                             "cp_comm_s", NULL};
            double *dst[] = {&p->breakdown.compute, &p->breakdown.recompute,
                             &p->breakdown.optimizer, &p->breakdown.tp, &p->breakdown.pp,
                             &p->breakdown.dp, &p->breakdown.bubble, &p->breakdown.cp};
            st = sc_json_keys(bd, file, "prediction.breakdown", bk, err);
            /* cp_comm_s: with cp > 1 only */
            for (int k = 0; k < 8 && !st; k++)
                st = sc_json_num(bd, file, "prediction.breakdown", bk[k], k < 7 || p->cp > 1, 0,
                                 1e9, dst[k], err);
            if (!st && p->cp <= 1 && cJSON_GetObjectItemCaseSensitive(bd, "cp_comm_s"))
                st = sc_err(err, SC_EINVAL, "%s: prediction.breakdown.cp_comm_s: the plan has no "
                            "context parallelism (cp)", file);
        }
        if (!st)
            st = sc_json_arr(pred, file, "prediction", "peak_mem_bytes", 0, &pm, err);
        if (!st && pm) {
            if (cJSON_GetArraySize(pm) != p->pp)
                st = sc_err(err, SC_EINVAL, "%s: prediction.peak_mem_bytes: %d entries, pp = %d",
                            file, cJSON_GetArraySize(pm), p->pp);
            else if (!(p->peak_mem = sc_calloc((size_t)p->pp, sizeof(double))))
                st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
            int i = 0;
            for (const cJSON *x = pm->child; x && !st; x = x->next, i++) {
                if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0 && x->valuedouble < 1e18))
                    st = sc_err(err, SC_EINVAL, "%s: prediction.peak_mem_bytes[%d]: must be a "
                                "byte count", file, i);
                else
                    p->peak_mem[i] = x->valuedouble;
            }
        }
        p->has_prediction = !st && pm != NULL;
    }
    cJSON_Delete(j);
    if (st) {
        sc_plan_free(p);
        return st;
    }
    *out = p;
    return SC_OK;
}

/* A source as the plan names it, or, when that is a relative path with no
 * such file from here, the same path next to the plan file (plans travel
 * with their model and cluster files). The digests check what was found. */
static const char *beside(const char *source, const char *file, char *buf, size_t n)
{
    const char *slash = strrchr(file, '/');
    if (source[0] == '/' || !slash || access(source, F_OK) == 0 || !strchr(source, '.'))
        return source;
    int len = snprintf(buf, n, "%.*s/%s", (int)(slash - file), file, source);
    if (len < 0 || (size_t)len >= n || access(buf, F_OK) != 0)
        return source;
    return buf;
}

/* Where a copy of built-in NAME, saved when the plan `file` was made, may
 * lie: candidate i (0 .. SNAPSHOT_PLACES - 1) of NAME.json beside the plan,
 * in SUB/ beside it, or in SUB/ one folder up, each also as
 * NAME.DIGEST.json (DIGEST the plan's), so that one folder holds several
 * versions. 0 when candidate i is a regular file (its path in path[n]),
 * else -1. */
#define SNAPSHOT_PLACES 6
static int snapshot_path(const char *file, const char *name, const char *digest,
                         const char *sub, int i, char *path, size_t n)
{
    const char *slash = strrchr(file, '/');
    int dl = slash ? (int)(slash - file) : 1;
    const char *dir = slash ? file : ".";
    const char *dot = i % 2 ? "." : "", *dg = i % 2 ? digest : "";
    int len = i / 2 == 0   ? snprintf(path, n, "%.*s/%s%s%s.json", dl, dir, name, dot, dg)
              : i / 2 == 1 ? snprintf(path, n, "%.*s/%s/%s%s%s.json", dl, dir, sub, name, dot, dg)
                           : snprintf(path, n, "%.*s/../%s/%s%s%s.json", dl, dir, sub, name, dot,
                                      dg);
    struct stat sb;
    if (len < 0 || (size_t)len >= n || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return -1;
    return 0;
}

/* A built-in model changes when its generator learns something (a kernel's
 * bytes): a plan made with it, and the runs measured against that plan, then
 * replay against a copy of the model as it was, saved as NAME.json beside
 * the plan, or in models/ beside the plan or one folder up. Only a copy
 * whose digest is the plan's is taken; NULL when there is none. */
static sc_model *snapshot(const sc_plan *p, const char *file)
{
    const char *src = p->model_source;
    if (!sc_model_is_builtin(src))
        return NULL; /* a file: the plan names it, nothing else stands in */
    for (int i = 0; i < SNAPSHOT_PLACES; i++) {
        char path[2048], dg[17];
        if (snapshot_path(file, src, p->model_digest, "models", i, path, sizeof path))
            continue;
        sc_model *m = NULL;
        sc_error e2 = {0};
        if (sc_model_open(path, &m, &e2) == SC_OK && sc_model_digest(m, dg) == SC_OK &&
            !strcmp(dg, p->model_digest))
            return m;
        sc_model_free(m);
    }
    return NULL;
}

/* A cluster preset changes when its fits learn something (a kernel's rate, a
 * collective's share of a link): a plan made on it then replays against a
 * copy of the preset as it was (`cluster show NAME -o NAME.json` when the
 * plan was made), found as snapshot() finds a model's, in clusters/. 0 and
 * the copy in *out when one's digest is the plan's, else -1. */
static int cluster_snapshot(const sc_plan *p, const char *file, sc_cluster *out)
{
    if (!sc_cluster_is_preset(p->cluster_source))
        return -1; /* a file: the plan names it, nothing else stands in */
    for (int i = 0; i < SNAPSHOT_PLACES; i++) {
        char path[2048], dg[17];
        sc_error e2 = {0};
        if (snapshot_path(file, p->cluster_source, p->cluster_digest, "clusters", i, path,
                              sizeof path) == 0 &&
            sc_cluster_load(path, out, &e2) == SC_OK && sc_cluster_digest(out, dg) == SC_OK &&
            !strcmp(dg, p->cluster_digest))
            return 0;
    }
    return -1;
}

/* The partition against the model's leaves (bounds, and the names each
 * stage gives for its first and last leaf) and tp against its heads. */
static sc_status check_against_model(const sc_plan *p, const char *file, const sc_model *m,
                                     sc_error *err)
{
    int S = p->partition.n_stages, L = m->n_leaves;
    sc_status st = sc_cost_model_check(m, p->model_source, err);
    if (st) {
        sc_err_prefix(err, "%s: model.source", file);
        return st;
    }
    for (int i = 0; i < S; i++) {
        int a = p->partition.first[i], b = p->partition.first[i + 1] - 1;
        if (b >= L)
            return sc_err(err, SC_EINVAL, "%s: partition.stages[%d].last_leaf: %d is beyond %s's "
                          "last leaf %d", file, i, b, m->name, L - 1);
        const char *names[2] = {p->first_names ? p->first_names[i] : NULL,
                                p->last_names ? p->last_names[i] : NULL};
        int at[2] = {a, b};
        for (int k = 0; k < 2; k++)
            if (names[k] && strcmp(names[k], m->leaves[at[k]]->name))
                return sc_err(err, SC_EINVAL, "%s: partition.stages[%d].%s: \"%s\" is not leaf "
                              "%d of %s (%s)", file, i, k ? "last" : "first", names[k], at[k],
                              m->name, m->leaves[at[k]]->name);
    }
    if (p->partition.first[S] != L)
        return sc_err(err, SC_EINVAL, "%s: partition.stages[%d].last_leaf: the stages cover %d "
                      "leaves, %s has %d", file, S - 1, p->partition.first[S], m->name, L);
    st = sc_cost_tp_check(m, p->tp, err);
    if (st)
        sc_err_prefix(err, "%s: tp", file);
    return st;
}

sc_status sc_plan_open(const sc_plan *p, const char *file, sc_model **model, sc_cluster *cluster,
                       sc_error *err)
{
    return sc_plan_open_on(p, file, NULL, model, cluster, err);
}

sc_status sc_plan_open_on(const sc_plan *p, const char *file, const char *on, sc_model **model,
                          sc_cluster *cluster, sc_error *err)
{
    char mbuf[2048], cbuf[2048];
    const char *msrc = beside(p->model_source, file, mbuf, sizeof mbuf);
    const char *csrc = beside(p->cluster_source, file, cbuf, sizeof cbuf);
    *model = NULL;
    /* a source that exists must be a regular file: opening a FIFO waits for
     * a writer, /dev/stdin reads the terminal, /dev/zero reads to the size
     * limit (built-in names are not files) */
    const char *srcs[2] = {msrc, csrc}, *keys[2] = {"model", "cluster"};
    for (int k = 0; k < (on ? 1 : 2); k++) {
        struct stat sb;
        if (stat(srcs[k], &sb) == 0 && !S_ISREG(sb.st_mode))
            return sc_err(err, SC_EINVAL, "%s: %s.source: %s is not a regular file", file,
                          keys[k], srcs[k]);
    }
    sc_model *m = NULL;
    sc_cluster c;
    char dg[17];
    sc_status st = sc_model_open(msrc, &m, err);
    if (st) {
        sc_err_prefix(err, "%s: model.source", file);
        return st;
    }
    if (sc_model_digest(m, dg)) {
        sc_model_free(m);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    if (strcmp(dg, p->model_digest)) {
        sc_model *snap = snapshot(p, file);
        sc_model_free(m);
        if (!snap)
            return sc_err(err, SC_EINVAL,
                          "%s: model.digest: %s has changed since the plan was made (digest %s, "
                          "plan says %s; a copy of the model as it was, %s.json or %s.%s.json "
                          "beside the plan or in a models/ folder beside it or above it, "
                          "replays it)",
                          file, p->model_source, dg, p->model_digest, p->model_source,
                          p->model_source, p->model_digest);
        m = snap;
    }
    st = sc_cluster_open(on ? on : csrc, &c, err);
    if (st) {
        sc_model_free(m);
        if (!on)
            sc_err_prefix(err, "%s: cluster.source", file);
        return st;
    }
    /* cpu-local is read off the machine it runs on: its digest travels with
     * the machine, so it is not compared; nor is the plan's own cluster
     * when another is named */
    if (!on && strcmp(p->cluster_source, "cpu-local") != 0 && sc_cluster_digest(&c, dg) == SC_OK &&
        strcmp(dg, p->cluster_digest) && cluster_snapshot(p, file, &c) != 0) {
        sc_model_free(m);
        return sc_err(err, SC_EINVAL,
                      "%s: cluster.digest: %s has changed since the plan was made (digest %s, "
                      "plan says %s; a copy of the cluster as it was, %s.json or %s.%s.json "
                      "beside the plan or in a clusters/ folder beside it or above it, "
                      "replays it)",
                      file, p->cluster_source, dg, p->cluster_digest, p->cluster_source,
                      p->cluster_source, p->cluster_digest);
    }
    st = sc_cluster_set_nodes(&c, p->nodes, err);
    if (st)
        sc_err_prefix(err, "%s: cluster.nodes", file);
    if (!st && p->framework[0]) {
        st = sc_overhead_apply(&c, p->framework, "framework", err);
        if (st)
            sc_err_prefix(err, "%s", file);
    }
    if (!st && (on || strcmp(p->cluster_source, "cpu-local") != 0) &&
        c.gpus_per_node != p->gpus_per_node)
        st = sc_err(err, SC_EINVAL, "%s: cluster.gpus_per_node: %d, but %s has %d", file,
                    p->gpus_per_node, on ? on : p->cluster_source, c.gpus_per_node);
    if (!st)
        st = check_against_model(p, file, m, err);
    if (!st && p->slices > 1) {
        sc_step_cfg sc;
        sc_plan_step_cfg(p, &sc);
        if ((st = sc_step_check_slices(m, &sc, err)))
            sc_err_prefix(err, "%s: slices", file);
    }
    if (!st && p->cp > 1) {
        sc_step_cfg sc;
        sc_plan_step_cfg(p, &sc);
        if ((st = sc_step_check_cp(m, &sc, err)))
            sc_err_prefix(err, "%s: cp", file);
    }
    if (st) {
        sc_model_free(m);
        return st;
    }
    *model = m;
    *cluster = c;
    return SC_OK;
}
