/* timeline.c - see timeline.h. */
#include "timeline.h"
#include "json.h"
#include "model.h" /* sc_dtype_parse */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_names[SC_OP_KIND_N] = {
    "F", "B", "W", "recompute", "send_f", "recv_f", "send_b", "recv_b",
    "tp_allreduce", "dp_allreduce", "dp_reducescatter", "dp_allgather", "optimizer",
    "tp_reducescatter", "tp_allgather", "cp_exchange"};

const char *sc_op_kind_name(sc_op_kind k)
{
    return (unsigned)k < SC_OP_KIND_N ? kind_names[k] : "?";
}

int sc_op_kind_parse(const char *s)
{
    for (int i = 0; i < SC_OP_KIND_N; i++)
        if (s && !strcmp(s, kind_names[i]))
            return i;
    return -1;
}

sc_timeline *sc_timeline_new(int n_ranks, const char *source, const char *model,
                             const char *cluster)
{
    if (n_ranks < 0)
        return NULL;
    sc_timeline *t = sc_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ranks = sc_calloc((size_t)(n_ranks ? n_ranks : 1), sizeof *t->ranks);
    if (!t->ranks) {
        sc_free(t);
        return NULL;
    }
    t->n_ranks = n_ranks;
    t->step_spread = t->step_drift = t->step_tolerance = -1;
    t->step_stable = -1;
    for (int i = 0; i < n_ranks; i++)
        t->ranks[i].rank = i;
    snprintf(t->source, sizeof t->source, "%s", source ? source : "sim");
    snprintf(t->model, sizeof t->model, "%s", model ? model : "");
    snprintf(t->cluster, sizeof t->cluster, "%s", cluster ? cluster : "");
    return t;
}

void sc_timeline_free(sc_timeline *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_ranks; i++)
        sc_free(t->ranks[i].ops);
    sc_free(t->ranks);
    sc_free(t->kernels);
    sc_free(t);
}

void sc_timeline_add(sc_timeline *t, int r, const sc_tl_op *op)
{
    if (!t || r < 0 || r >= t->n_ranks) {
        if (t)
            t->oom = 1;
        return;
    }
    sc_tl_rank *k = &t->ranks[r];
    if (k->n_ops == k->cap) {
        int nc = k->cap ? k->cap * 2 : 64;
        sc_tl_op *n = sc_realloc(k->ops, sizeof *n * (size_t)nc);
        if (!n) {
            t->oom = 1;
            return;
        }
        k->ops = n;
        k->cap = nc;
    }
    k->ops[k->n_ops++] = *op;
}

int sc_timeline_flash_gemms(const sc_timeline *t)
{
    return !strcmp(t->source, "exec") && strcmp(t->flash_attention, "fused") != 0;
}

/* exec --kernels' "kernels_rank" and "kernels" of t into j (nothing when
 * it has none); both writers take them from here. */
static void kernels_to_json(const sc_timeline *t, cJSON *j, int *oom)
{
    if (t->n_kernels <= 0)
        return;
    sc_jadd_num(j, "kernels_rank", t->kernels_rank, oom);
    cJSON *ka = sc_jadd_arr(j, "kernels", oom);
    for (int i = 0; i < t->n_kernels && ka && !*oom; i++) {
        const sc_tl_kernel *k = &t->kernels[i];
        cJSON *o = sc_jpush_obj(ka, oom);
        if (!o)
            break;
        sc_jadd_str(o, "name", k->name, oom);
        sc_jadd_str(o, "pass", k->pass, oom);
        sc_jadd_str(o, "op", k->op, oom);
        sc_jadd_num(o, "batch", k->batch, oom);
        sc_jadd_num(o, "m", k->m, oom);
        sc_jadd_num(o, "n", k->n, oom);
        sc_jadd_num(o, "k", k->k, oom);
        sc_jadd_num(o, "bytes", k->bytes, oom);
        sc_jadd_num(o, "calls", k->calls, oom);
        if (k->splits > 1)
            sc_jadd_num(o, "splits", k->splits, oom);
        sc_jadd_num(o, "time_s", k->time_s, oom);
    }
}

cJSON *sc_timeline_to_json(const sc_timeline *t)
{
    sc_json_init();
    if (t->oom)
        return NULL;
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", SC_TIMELINE_FORMAT, &oom);
    sc_jadd_str(j, "source", t->source, &oom);
    sc_jadd_str(j, "model", t->model, &oom);
    sc_jadd_str(j, "cluster", t->cluster, &oom);
    sc_jadd_num(j, "step_time_s", t->step_time_s, &oom);
    if (t->device[0])
        sc_jadd_str(j, "device", t->device, &oom);
    if (t->flash_attention[0])
        sc_jadd_str(j, "flash_attention", t->flash_attention, &oom);
    if (t->operands[0])
        sc_jadd_str(j, "operands", t->operands, &oom);
    if (t->plan_file[0]) {
        cJSON *p = sc_jadd_obj(j, "plan", &oom);
        sc_jadd_str(p, "file", t->plan_file, &oom);
        sc_jadd_str(p, "digest", t->plan_digest, &oom);
    }
    if (t->n_steps > 0) {
        cJSON *s = sc_jadd_obj(j, "steps", &oom);
        sc_jadd_num(s, "n", t->n_steps, &oom);
        sc_jadd_num(s, "median_s", t->step_median_s, &oom);
        sc_jadd_num(s, "min_s", t->step_min_s, &oom);
        sc_jadd_num(s, "max_s", t->step_max_s, &oom);
        if (t->step_runs > 0)
            sc_jadd_num(s, "runs", t->step_runs, &oom);
        if (t->step_spread >= 0)
            sc_jadd_num(s, "spread", t->step_spread, &oom);
        if (t->step_drift >= 0)
            sc_jadd_num(s, "drift", t->step_drift, &oom);
        if (t->step_tolerance >= 0)
            sc_jadd_num(s, "tolerance", t->step_tolerance, &oom);
        if (t->step_stable >= 0)
            sc_jadd_bool(s, "stable", t->step_stable, &oom);
    }
    sc_provenance_to_json(&t->prov, j, &oom);
    if (t->probe_m > 0) {
        cJSON *p = sc_jadd_obj(j, "probe", &oom);
        sc_jadd_num(p, "m", t->probe_m, &oom);
        sc_jadd_num(p, "n", t->probe_n, &oom);
        sc_jadd_num(p, "k", t->probe_k, &oom);
        sc_jadd_str(p, "dtype", t->probe_dtype, &oom);
        sc_jadd_num(p, "reps", t->probe_reps, &oom);
        sc_jadd_num(p, "steps", t->probe_steps, &oom);
    }
    kernels_to_json(t, j, &oom);
    cJSON *ranks = sc_jadd_arr(j, "ranks", &oom);
    for (int i = 0; i < t->n_ranks && !oom; i++) {
        const sc_tl_rank *k = &t->ranks[i];
        cJSON *r = sc_jpush_obj(ranks, &oom);
        if (!r)
            break;
        sc_jadd_num(r, "rank", k->rank, &oom);
        sc_jadd_num(r, "node", k->node, &oom);
        sc_jadd_num(r, "device", k->device, &oom);
        sc_jadd_num(r, "dp", k->dp, &oom);
        sc_jadd_num(r, "pp", k->pp, &oom);
        sc_jadd_num(r, "tp", k->tp, &oom);
        if (t->probe_m > 0)
            sc_jadd_num(r, "probe_s", k->probe_s, &oom);
        cJSON *ops = sc_jadd_arr(r, "ops", &oom);
        for (int o = 0; o < k->n_ops && !oom; o++) {
            const sc_tl_op *op = &k->ops[o];
            cJSON *x = sc_jpush_obj(ops, &oom);
            if (!x)
                break;
            sc_jadd_str(x, "kind", sc_op_kind_name((sc_op_kind)op->kind), &oom);
            sc_jadd_num(x, "stage", op->stage, &oom);
            sc_jadd_num(x, "chunk", op->chunk, &oom);
            sc_jadd_num(x, "mb", op->mb, &oom);
            sc_jadd_num(x, "bytes", op->bytes, &oom);
            sc_jadd_str(x, "stream", op->stream == SC_STREAM_COMM ? "comm" : "compute", &oom);
            sc_jadd_num(x, "start", op->start, &oom);
            sc_jadd_num(x, "end", op->end, &oom);
        }
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

#define MAX_RANKS 1000000L
#define MAX_T 1e9

/* ---- validation, shared by the cJSON path and the streaming reader -------- */

#define MAX_KERNELS 100000

/* The optional "kernels" array (exec --kernels) into t, with its
 * "kernels_rank" (n_kernels stays 0 without one). */
static sc_status kernels_from_json(const cJSON *j, const char *file, sc_timeline *t,
                                   sc_error *err)
{
    static const char *const kk[] = {"name", "pass", "op", "batch", "m", "n", "k", "bytes",
                                     "calls", "time_s", "splits", NULL};
    const cJSON *a = NULL;
    sc_status st = sc_json_arr(j, file, "", "kernels", 0, &a, err);
    if (st || !a)
        return st;
    long kr = 0;
    st = sc_json_int(j, file, "", "kernels_rank", 1, 0, t->n_ranks > 0 ? t->n_ranks - 1 : 0,
                     &kr, err);
    int n = cJSON_GetArraySize(a);
    if (!st && n > MAX_KERNELS)
        st = sc_err(err, SC_EINVAL, "%s: kernels: more than %d kernels", file, MAX_KERNELS);
    if (!st && n > 0 && !(t->kernels = sc_calloc((size_t)n, sizeof *t->kernels)))
        st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    const cJSON *o;
    int i = 0;
    cJSON_ArrayForEach(o, a)
    {
        if (st)
            break;
        char path[32];
        snprintf(path, sizeof path, "kernels[%d]", i);
        sc_tl_kernel *k = &t->kernels[i];
        const char *name = NULL, *pass = NULL, *op = NULL;
        long calls = 0;
        if (!cJSON_IsObject(o))
            st = sc_err(err, SC_EINVAL, "%s: %s: must be an object", file, path);
        if (!st)
            st = sc_json_keys(o, file, path, kk, err);
        if (!st)
            st = sc_json_str(o, file, path, "name", 1, sizeof k->name - 1, &name, err);
        if (!st)
            st = sc_json_str(o, file, path, "pass", 1, sizeof k->pass - 1, &pass, err);
        if (!st && strcmp(pass, "F") && strcmp(pass, "B") && strcmp(pass, "W") &&
            strcmp(pass, "BW"))
            st = sc_err(err, SC_EINVAL, "%s: %s.pass: \"%s\" is not F, B, W or BW", file, path,
                        pass);
        if (!st)
            st = sc_json_str(o, file, path, "op", 1, sizeof k->op - 1, &op, err);
        if (!st && strcmp(op, "wgemm") && strcmp(op, "core") && strcmp(op, "mem"))
            st = sc_err(err, SC_EINVAL, "%s: %s.op: \"%s\" is not wgemm, core or mem", file,
                        path, op);
        double *dims[5] = {&k->batch, &k->m, &k->n, &k->k, &k->bytes};
        const char *dn[5] = {"batch", "m", "n", "k", "bytes"};
        for (int d = 0; d < 5 && !st; d++)
            st = sc_json_num(o, file, path, dn[d], 1, 0, 1e15, dims[d], err);
        if (!st)
            st = sc_json_int(o, file, path, "calls", 1, 1, 100000000L, &calls, err);
        if (!st)
            st = sc_json_num(o, file, path, "time_s", 1, 0, MAX_T, &k->time_s, err);
        long splits = 1;
        if (!st)
            st = sc_json_int(o, file, path, "splits", 0, 1, 1000000L, &splits, err);
        if (!st && splits > 1 && (!strcmp(op, "mem") || !strcmp(pass, "W")))
            st = sc_err(err, SC_EINVAL,
                        "%s: %s.splits: only a GEMM's forward or data gradient runs in chunks "
                        "(op \"%s\", pass \"%s\")",
                        file, path, op, pass);
        if (!st) {
            k->splits = (int)splits;
            snprintf(k->name, sizeof k->name, "%s", name);
            snprintf(k->pass, sizeof k->pass, "%s", pass);
            snprintf(k->op, sizeof k->op, "%s", op);
            k->calls = (int)calls;
        }
        i++;
    }
    if (!st) {
        t->n_kernels = n;
        t->kernels_rank = (int)kr;
    }
    return st;
}

/* The optional "probe" object into t (probe_m stays 0 without one). */
static sc_status probe_from_json(const cJSON *j, const char *file, sc_timeline *t,
                                 sc_error *err)
{
    static const char *const pk[] = {"m", "n", "k", "dtype", "reps", "steps", NULL};
    const cJSON *p = NULL;
    sc_status st = sc_json_obj(j, file, "", "probe", 0, &p, err);
    if (st || !p)
        return st;
    long v[5] = {0};
    const char *names[5] = {"m", "n", "k", "reps", "steps"};
    const char *dt = NULL;
    st = sc_json_keys(p, file, "probe", pk, err);
    for (int f = 0; f < 5 && !st; f++)
        st = sc_json_int(p, file, "probe", names[f], 1, 1, f < 3 ? 1000000L : 100000000L,
                         &v[f], err);
    if (!st)
        st = sc_json_str(p, file, "probe", "dtype", 1, sizeof t->probe_dtype - 1, &dt, err);
    if (!st && sc_dtype_parse(dt) < 0)
        st = sc_err(err, SC_EINVAL, "%s: probe.dtype: \"%s\" is not a dtype (fp32, tf32, "
                    "fp16, bf16, fp8)", file, dt);
    if (st)
        return st;
    t->probe_m = (int)v[0];
    t->probe_n = (int)v[1];
    t->probe_k = (int)v[2];
    t->probe_reps = (int)v[3];
    t->probe_steps = (int)v[4];
    snprintf(t->probe_dtype, sizeof t->probe_dtype, "%s", dt);
    return SC_OK;
}

/* The optional string key of j that is a or b, copied into dst (left as
 * it is when absent); another value is refused naming the file and key. */
static sc_status one_of(const cJSON *j, const char *file, const char *key, const char *a,
                        const char *b, char *dst, size_t cap, sc_error *err)
{
    const char *v = NULL;
    sc_status st = sc_json_str(j, file, "", key, 0, cap - 1, &v, err);
    if (!st && v && strcmp(v, a) && strcmp(v, b))
        st = sc_err(err, SC_EINVAL, "%s: %s: \"%s\" is neither \"%s\" nor \"%s\"", file, key,
                    v, a, b);
    if (!st && v)
        snprintf(dst, cap, "%s", v);
    return st;
}

/* The top-level fields of j. n_ranks < 0: the size of its "ranks" array
 * (which must be one); else the count the streaming reader found (j's
 * "ranks" is then an empty stand-in). *out: a timeline of that many ranks;
 * *ranks: the array (may be NULL). */
static sc_status top_from_json(const cJSON *j, const char *file, long n_ranks,
                               const cJSON **ranks_out, sc_timeline **out, sc_error *err)
{
    static const char *const top[] = {"format", "source", "model", "cluster", "step_time_s",
                                      "steps", "device", "flash_attention", "operands", "provenance",
                                      "plan", "probe", "kernels_rank", "kernels", "ranks",
                                      NULL};
    *out = NULL;
    sc_status st = sc_json_format(j, file, SC_TIMELINE_FORMAT, err);
    if (!st)
        st = sc_json_keys(j, file, "", top, err);
    const char *source = NULL, *model = "", *cluster = "";
    double step = 0;
    const cJSON *ranks = NULL, *steps = NULL;
    if (!st)
        st = sc_json_str(j, file, "", "source", 1, 7, &source, err);
    if (!st && strcmp(source, "sim") && strcmp(source, "exec"))
        st = sc_err(err, SC_EINVAL, "%s: source: must be \"sim\" or \"exec\"", file);
    if (!st)
        st = sc_json_str(j, file, "", "model", 0, 127, &model, err);
    if (!st)
        st = sc_json_str(j, file, "", "cluster", 0, 127, &cluster, err);
    if (!st)
        st = sc_json_num(j, file, "", "step_time_s", 1, 0, MAX_T, &step, err);
    if (!st)
        st = sc_json_obj(j, file, "", "steps", 0, &steps, err);
    if (!st)
        st = sc_json_arr(j, file, "", "ranks", 1, &ranks, err);
    if (st)
        return st;
    long n = n_ranks < 0 ? cJSON_GetArraySize(ranks) : n_ranks;
    if (n > MAX_RANKS)
        return sc_err(err, SC_EINVAL, "%s: ranks: more than %ld ranks", file, MAX_RANKS);
    sc_timeline *t = sc_timeline_new((int)n, source, model, cluster);
    if (!t)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    t->step_time_s = step;
    const char *dev = NULL;
    const cJSON *plan = NULL;
    st = sc_json_str(j, file, "", "device", 0, sizeof t->device - 1, &dev, err);
    if (!st && dev)
        snprintf(t->device, sizeof t->device, "%s", dev);
    if (!st)
        st = one_of(j, file, "flash_attention", "gemms", "fused", t->flash_attention,
                    sizeof t->flash_attention, err);
    if (!st)
        st = one_of(j, file, "operands", "random", "zeros", t->operands, sizeof t->operands,
                    err);
    if (!st)
        st = sc_json_obj(j, file, "", "plan", 0, &plan, err);
    if (!st && plan) {
        static const char *const pk[] = {"file", "digest", NULL};
        const char *pf = NULL, *pd = NULL;
        st = sc_json_keys(plan, file, "plan", pk, err);
        if (!st)
            st = sc_json_str(plan, file, "plan", "file", 1, sizeof t->plan_file - 1, &pf, err);
        if (!st)
            st = sc_json_str(plan, file, "plan", "digest", 1, 16, &pd, err);
        if (!st) {
            snprintf(t->plan_file, sizeof t->plan_file, "%s", pf);
            snprintf(t->plan_digest, sizeof t->plan_digest, "%s", pd);
        }
    }
    if (!st && steps) {
        static const char *const sk[] = {"n", "median_s", "min_s", "max_s", "runs", "spread",
                                         "drift", "tolerance", "stable", NULL};
        long ns = 0;
        st = sc_json_keys(steps, file, "steps", sk, err);
        if (!st)
            st = sc_json_int(steps, file, "steps", "n", 1, 1, 100000000L, &ns, err);
        if (!st)
            st = sc_json_num(steps, file, "steps", "median_s", 1, 0, MAX_T, &t->step_median_s, err);
        if (!st)
            st = sc_json_num(steps, file, "steps", "min_s", 1, 0, MAX_T, &t->step_min_s, err);
        if (!st)
            st = sc_json_num(steps, file, "steps", "max_s", 1, 0, MAX_T, &t->step_max_s, err);
        long runs = 0;
        if (!st)
            st = sc_json_int(steps, file, "steps", "runs", 0, ns, 100000000L, &runs, err);
        if (!st)
            st = sc_json_num(steps, file, "steps", "spread", 0, 0, 1e6, &t->step_spread, err);
        if (!st)
            st = sc_json_num(steps, file, "steps", "drift", 0, 0, 1e6, &t->step_drift, err);
        if (!st)
            st = sc_json_num(steps, file, "steps", "tolerance", 0, 1e-6, 1, &t->step_tolerance,
                             err);
        if (!st)
            st = sc_json_bool(steps, file, "steps", "stable", 0, &t->step_stable, err);
        t->n_steps = (int)ns;
        t->step_runs = (int)runs;
    }
    if (!st)
        st = sc_provenance_from_json(j, file, &t->prov, err);
    if (!st)
        st = probe_from_json(j, file, t, err);
    if (!st)
        st = kernels_from_json(j, file, t, err);
    if (st) {
        sc_timeline_free(t);
        return st;
    }
    if (ranks_out)
        *ranks_out = ranks;
    *out = t;
    return SC_OK;
}

/* Rank i's own fields (r must be ranks[i]) into t->ranks[i]; *ops: its ops
 * array (required). */
static sc_status rank_from_json(const cJSON *r, const char *file, int i, sc_timeline *t,
                                const cJSON **ops, sc_error *err)
{
    static const char *const rk[] = {"rank", "node",    "device", "dp",
                                     "pp",   "tp",      "probe_s", "ops", NULL};
    char path[64];
    snprintf(path, sizeof path, "ranks[%d]", i);
    if (!cJSON_IsObject(r))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
    sc_tl_rank *k = &t->ranks[i];
    long v[6] = {0};
    const char *names[6] = {"rank", "node", "device", "dp", "pp", "tp"};
    sc_status st = sc_json_keys(r, file, path, rk, err);
    for (int f = 0; f < 6 && !st; f++)
        st = sc_json_int(r, file, path, names[f], 1, 0, MAX_RANKS, &v[f], err);
    if (st)
        return st;
    if (v[0] != i)
        return sc_err(err, SC_EINVAL, "%s: %s.rank: %ld, expected %d (ranks in order)", file,
                      path, v[0], i);
    k->node = (int)v[1];
    k->device = (int)v[2];
    k->dp = (int)v[3];
    k->pp = (int)v[4];
    k->tp = (int)v[5];
    /* a probe's times on every rank of a timeline with one, on none without */
    int probed = t->probe_m > 0;
    st = sc_json_num(r, file, path, "probe_s", probed, 1e-12, MAX_T, &k->probe_s, err);
    if (!st && !probed && k->probe_s > 0)
        st = sc_err(err, SC_EINVAL, "%s: %s.probe_s: a probe time without the file's "
                    "\"probe\" object (which GEMM?)", file, path);
    if (st)
        return st;
    return sc_json_arr(r, file, path, "ops", 1, ops, err);
}

/* One op of ranks[i].ops[o]. */
static sc_status op_from_json(const cJSON *x, const char *file, int i, int o, sc_tl_op *op,
                              sc_error *err)
{
    static const char *const ok[] = {"kind", "stage", "chunk", "mb", "bytes", "stream",
                                     "start", "end", NULL};
    char p2[96];
    snprintf(p2, sizeof p2, "ranks[%d].ops[%d]", i, o);
    if (!cJSON_IsObject(x))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, p2);
    const char *kind = NULL, *stream = NULL;
    long stage = 0, chunk = 0, mb = 0;
    memset(op, 0, sizeof *op);
    sc_status st = sc_json_keys(x, file, p2, ok, err);
    if (!st)
        st = sc_json_str(x, file, p2, "kind", 1, 32, &kind, err);
    if (!st && (op->kind = sc_op_kind_parse(kind)) < 0)
        st = sc_err(err, SC_EINVAL, "%s: %s.kind: unknown op kind \"%s\"", file, p2, kind);
    if (!st)
        st = sc_json_int(x, file, p2, "stage", 1, -1, 1000000, &stage, err);
    if (!st)
        st = sc_json_int(x, file, p2, "chunk", 1, -1, 1000000, &chunk, err);
    if (!st)
        st = sc_json_int(x, file, p2, "mb", 1, -1, 100000000, &mb, err);
    if (!st)
        st = sc_json_num(x, file, p2, "bytes", 1, 0, 1e18, &op->bytes, err);
    if (!st)
        st = sc_json_str(x, file, p2, "stream", 1, 16, &stream, err);
    if (!st && strcmp(stream, "compute") && strcmp(stream, "comm"))
        st = sc_err(err, SC_EINVAL, "%s: %s.stream: must be \"compute\" or \"comm\"", file, p2);
    if (!st)
        st = sc_json_num(x, file, p2, "start", 1, 0, MAX_T, &op->start, err);
    if (!st)
        st = sc_json_num(x, file, p2, "end", 1, 0, MAX_T, &op->end, err);
    if (!st && op->end < op->start)
        st = sc_err(err, SC_EINVAL, "%s: %s.end: %g is before start %g", file, p2, op->end,
                    op->start);
    if (st)
        return st;
    op->stage = (int)stage;
    op->chunk = (int)chunk;
    op->mb = (int)mb;
    op->stream = strcmp(stream, "comm") == 0 ? SC_STREAM_COMM : SC_STREAM_COMPUTE;
    return SC_OK;
}

/* ---- filters ----------------------------------------------------------------- */

sc_status sc_tl_set_parse(const char *spec, const char *what, sc_tl_set *out, sc_error *err)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec)
        return sc_err(err, SC_EINVAL, "%s: empty list", what);
    const char *p = spec;
    while (*p) {
        char *e;
        long a = strtol(p, &e, 10), b = a;
        if (e == p || a < 0)
            return sc_err(err, SC_EINVAL, "%s: '%s': expected N or A-B (N >= 0), comma-separated",
                          what, spec);
        if (a > 100000000L)
            return sc_err(err, SC_EINVAL, "%s: '%s': %ld is above 100000000", what, spec, a);
        if (*e == '-') {
            const char *q = e + 1;
            b = strtol(q, &e, 10);
            if (e == q || b < 0)
                return sc_err(err, SC_EINVAL,
                              "%s: '%s': expected N or A-B (N >= 0), comma-separated", what, spec);
            if (b > 100000000L)
                return sc_err(err, SC_EINVAL, "%s: '%s': %ld is above 100000000", what, spec, b);
            if (b < a)
                return sc_err(err, SC_EINVAL, "%s: '%s': a range A-B needs A <= B", what, spec);
        }
        if (*e && *e != ',')
            return sc_err(err, SC_EINVAL, "%s: '%s': unexpected '%c'", what, spec, *e);
        if (out->n == SC_TL_SET_MAX)
            return sc_err(err, SC_EINVAL, "%s: '%s': more than %d items", what, spec,
                          SC_TL_SET_MAX);
        out->lo[out->n] = (int)a;
        out->hi[out->n++] = (int)b;
        if (*e == ',' && !e[1])
            return sc_err(err, SC_EINVAL, "%s: '%s': an item must follow ','", what, spec);
        p = *e ? e + 1 : e;
    }
    return SC_OK;
}

int sc_tl_set_has(const sc_tl_set *s, int v)
{
    if (!s || s->n == 0)
        return 1;
    for (int i = 0; i < s->n; i++)
        if (v >= s->lo[i] && v <= s->hi[i])
            return 1;
    return 0;
}

static int keep_rank(const sc_tl_filter *f, int r) { return !f || sc_tl_set_has(&f->ranks, r); }
static int keep_op(const sc_tl_filter *f, const sc_tl_op *op)
{
    return !f || sc_tl_set_has(&f->stages, op->stage);
}

/* SC_EINVAL naming file when f selects ranks or stages and t (filtered, its
 * ranks not yet compacted away) keeps no op: an empty trace, picture or
 * timeline is never what was asked for. max_stage: the largest stage of the
 * whole timeline, -1 when it has no op. */
static sc_status kept_some(const sc_timeline *t, const sc_tl_filter *f, int max_stage,
                           const char *file, sc_error *err)
{
    if (!f || (!f->ranks.n && !f->stages.n))
        return SC_OK;
    int any_rank = 0;
    for (int i = 0; i < t->n_ranks; i++) {
        if (!keep_rank(f, t->ranks[i].rank))
            continue;
        if (t->ranks[i].n_ops > 0)
            return SC_OK;
        any_rank = 1;
    }
    if (!any_rank)
        return sc_err(err, SC_EINVAL, "%s: no rank selected (--ranks): it has ranks 0-%d", file,
                      t->n_ranks - 1);
    if (max_stage < 0)
        return sc_err(err, SC_EINVAL, "%s: the ranks selected hold no op", file);
    return sc_err(err, SC_EINVAL,
                  "%s: no op of the ranks selected lies in the stages selected (--stages): "
                  "its stages are 0-%d",
                  file, max_stage);
}

sc_status sc_timeline_filter(sc_timeline *t, const sc_tl_filter *f, const char *what,
                             sc_error *err)
{
    if (!t || !f)
        return SC_OK;
    int max_stage = -1;
    for (int i = 0; i < t->n_ranks; i++)
        for (int o = 0; o < t->ranks[i].n_ops; o++)
            if (t->ranks[i].ops[o].stage > max_stage)
                max_stage = t->ranks[i].ops[o].stage;
    for (int i = 0; i < t->n_ranks; i++) {
        sc_tl_rank *k = &t->ranks[i];
        if (!keep_rank(f, k->rank)) {
            k->n_ops = 0;
            continue;
        }
        int n = 0;
        for (int o = 0; o < k->n_ops; o++)
            if (keep_op(f, &k->ops[o]))
                k->ops[n++] = k->ops[o];
        k->n_ops = n;
    }
    return kept_some(t, f, max_stage, what, err);
}

/* Keeps only the ranks f selects, in order (their .rank unchanged). */
static void compact(sc_timeline *t, const sc_tl_filter *f)
{
    int n = 0;
    for (int i = 0; i < t->n_ranks; i++) {
        if (keep_rank(f, t->ranks[i].rank))
            t->ranks[n++] = t->ranks[i];
        else
            sc_free(t->ranks[i].ops);
    }
    t->n_ranks = n;
}

sc_status sc_timeline_from_json(const cJSON *j, const char *file, sc_timeline **out,
                                sc_error *err)
{
    *out = NULL;
    sc_timeline *t = NULL;
    const cJSON *ranks = NULL;
    sc_status st = top_from_json(j, file, -1, &ranks, &t, err);
    if (st)
        return st;
    int i = 0;
    for (const cJSON *r = ranks->child; r && !st; r = r->next, i++) {
        const cJSON *ops = NULL;
        st = rank_from_json(r, file, i, t, &ops, err);
        int o = 0;
        for (const cJSON *x = ops ? ops->child : NULL; x && !st; x = x->next, o++) {
            sc_tl_op op;
            st = op_from_json(x, file, i, o, &op, err);
            if (st)
                break;
            sc_timeline_add(t, i, &op);
            if (t->oom)
                st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
        }
    }
    if (st) {
        sc_timeline_free(t);
        return st;
    }
    *out = t;
    return SC_OK;
}

/* ---- the streaming reader ------------------------------------------------------
 * The file's text is scanned for the extent of the "ranks" array, of each
 * rank object and of each op; cJSON parses the top level (its ranks array
 * stood in for by []), each rank (its ops by []) and each op alone, and
 * the same validation as sc_timeline_from_json runs on them. Memory: the
 * text, the ops kept (sizeof(sc_tl_op) each) and one op's tree at a time,
 * rather than a tree of the whole file (about 30 times its size). Scanning
 * counts brackets outside strings, which finds exact extents in valid JSON;
 * anything malformed fails in cJSON or in the scan and is reported as a
 * syntax error (for files within sc_json_parse's limit, by reparsing them
 * whole, for its exact message). */

typedef struct scan {
    const char *s;
    size_t n;
} scan;

static size_t skip_ws(const scan *c, size_t i)
{
    while (i < c->n && (c->s[i] == ' ' || c->s[i] == '\t' || c->s[i] == '\n' || c->s[i] == '\r'))
        i++;
    return i;
}

/* Past the string starting at i (a '"'); 0 on failure. */
static size_t skip_string(const scan *c, size_t i)
{
    for (i++; i < c->n; i++) {
        if (c->s[i] == '\\')
            i++;
        else if (c->s[i] == '"')
            return i + 1;
    }
    return 0;
}

/* Past the value starting at i (after whitespace); 0 on failure. */
static size_t skip_value(const scan *c, size_t i)
{
    if (i >= c->n)
        return 0;
    char ch = c->s[i];
    if (ch == '"')
        return skip_string(c, i);
    if (ch == '{' || ch == '[') {
        long depth = 0;
        for (; i < c->n; i++) {
            char x = c->s[i];
            if (x == '"') {
                size_t e = skip_string(c, i);
                if (!e)
                    return 0;
                i = e - 1;
            } else if (x == '{' || x == '[') {
                depth++;
            } else if (x == '}' || x == ']') {
                if (--depth == 0)
                    return i + 1;
            }
        }
        return 0;
    }
    size_t j = i;
    while (j < c->n && !strchr(",}] \t\r\n", c->s[j]))
        j++;
    return j > i ? j : 0;
}

/* The members of the object at i: calls on_member(key, klen, value start,
 * value end) for each; returns past the '}' or 0 on a malformed object. */
typedef int (*member_fn)(void *ud, const char *key, size_t klen, size_t vs, size_t ve);
static size_t each_member(const scan *c, size_t i, member_fn fn, void *ud)
{
    if (i >= c->n || c->s[i] != '{')
        return 0;
    i = skip_ws(c, i + 1);
    if (i < c->n && c->s[i] == '}')
        return i + 1;
    for (;;) {
        if (i >= c->n || c->s[i] != '"')
            return 0;
        size_t ke = skip_string(c, i);
        if (!ke)
            return 0;
        size_t k = skip_ws(c, ke);
        if (k >= c->n || c->s[k] != ':')
            return 0;
        size_t vs = skip_ws(c, k + 1), ve = skip_value(c, vs);
        if (!ve)
            return 0;
        if (fn && fn(ud, c->s + i + 1, ke - i - 2, vs, ve))
            return 0;
        i = skip_ws(c, ve);
        if (i < c->n && c->s[i] == ',') {
            i = skip_ws(c, i + 1);
            continue;
        }
        if (i < c->n && c->s[i] == '}')
            return i + 1;
        return 0;
    }
}

typedef struct find_arr {
    const char *key;
    size_t vs, ve;     /* the first such member holding an array */
    int found;
} find_arr;

static int find_member(void *ud, const char *key, size_t klen, size_t vs, size_t ve)
{
    find_arr *f = ud;
    if (!f->found && klen == strlen(f->key) && !memcmp(key, f->key, klen)) {
        f->found = 1;
        f->vs = vs;
        f->ve = ve;
    }
    return 0;
}

typedef struct reader {
    const char *file;
    scan c;
    sc_error *err;
    int syntax;          /* a syntax error: report it the canonical way */
    size_t syntax_at;
} reader;

/* Parses text[a, b) with [hole_a, hole_b) replaced by "[]" (hole_a == hole_b:
 * none); sets r->syntax on a syntax error. */
static sc_status parse_piece(reader *r, size_t a, size_t b, size_t hole_a, size_t hole_b,
                             cJSON **out)
{
    *out = NULL;
    size_t len = (b - a) - (hole_b - hole_a) + (hole_b > hole_a ? 2 : 0);
    char *buf = sc_malloc(len + 1);
    if (!buf)
        return sc_err(r->err, SC_ENOMEM, "%s: out of memory", r->file);
    size_t o = 0;
    if (hole_b > hole_a) {
        memcpy(buf, r->c.s + a, hole_a - a);
        o = hole_a - a;
        buf[o++] = '[';
        buf[o++] = ']';
        memcpy(buf + o, r->c.s + hole_b, b - hole_b);
        o += b - hole_b;
    } else {
        memcpy(buf, r->c.s + a, b - a);
        o = b - a;
    }
    buf[o] = '\0';
    if (memchr(buf, '\0', o)) {
        sc_free(buf);
        r->syntax = 1;
        r->syntax_at = a;
        return SC_EPARSE;
    }
    sc_json_init();
    const char *end = NULL;
    long fails = sc_alloc_failures();
    *out = cJSON_ParseWithLengthOpts(buf, o + 1, &end, 1);
    size_t at = end ? (size_t)(end - buf) : 0;
    sc_free(buf);
    if (*out)
        return SC_OK;
    if (!end || sc_alloc_failures() != fails)
        return sc_err(r->err, SC_ENOMEM, "%s: out of memory while parsing", r->file);
    r->syntax = 1;
    if (hole_b == hole_a || at < hole_a - a)
        r->syntax_at = a + at;
    else if (at < hole_a - a + 2)
        r->syntax_at = hole_a;
    else
        r->syntax_at = a + at - 2 + (hole_b - hole_a);
    return SC_EPARSE;
}

/* The elements of the array at i: calls fn(element start, end, index) for
 * each; returns the count, or -1 on a malformed array (r->syntax set) or an
 * error of fn (its status in *st). */
typedef sc_status (*elem_fn)(reader *r, void *ud, size_t es, size_t ee, long idx);
static long each_element(reader *r, size_t i, elem_fn fn, void *ud, sc_status *st)
{
    const scan *c = &r->c;
    long n = 0;
    *st = SC_OK;
    i = skip_ws(c, i + 1); /* past '[' */
    if (i < c->n && c->s[i] == ']')
        return 0;
    for (;;) {
        size_t e = skip_value(c, i);
        if (!e) {
            r->syntax = 1;
            r->syntax_at = i;
            return -1;
        }
        if (fn && (*st = fn(r, ud, i, e, n)))
            return -1;
        n++;
        i = skip_ws(c, e);
        if (i < c->n && c->s[i] == ',') {
            i = skip_ws(c, i + 1);
            continue;
        }
        if (i < c->n && c->s[i] == ']')
            return n;
        r->syntax = 1;
        r->syntax_at = i;
        return -1;
    }
}

typedef struct load_ctx {
    sc_timeline *t;
    const sc_tl_filter *f;
    long rank;           /* the rank whose ops are being read */
    int max_stage;       /* the largest stage of any op read, kept or not */
} load_ctx;

static sc_status load_op(reader *r, void *ud, size_t es, size_t ee, long o)
{
    load_ctx *x = ud;
    cJSON *j = NULL;
    sc_status st = parse_piece(r, es, ee, 0, 0, &j);
    if (st)
        return st;
    sc_tl_op op;
    st = op_from_json(j, r->file, (int)x->rank, (int)o, &op, r->err);
    cJSON_Delete(j);
    if (st)
        return st;
    if (op.stage > x->max_stage)
        x->max_stage = op.stage;
    if (keep_rank(x->f, x->t->ranks[x->rank].rank) && keep_op(x->f, &op)) {
        sc_timeline_add(x->t, (int)x->rank, &op);
        if (x->t->oom)
            return sc_err(r->err, SC_ENOMEM, "%s: out of memory", r->file);
    }
    return SC_OK;
}

static sc_status load_rank(reader *r, void *ud, size_t es, size_t ee, long i)
{
    load_ctx *x = ud;
    find_arr fo = {"ops", 0, 0, 0};
    if (r->c.s[es] == '{' && !each_member(&r->c, es, find_member, &fo)) {
        r->syntax = 1;
        r->syntax_at = es;
        return SC_EPARSE;
    }
    int hole = fo.found && r->c.s[fo.vs] == '[';
    cJSON *j = NULL;
    sc_status st = parse_piece(r, es, ee, hole ? fo.vs : 0, hole ? fo.ve : 0, &j);
    if (st)
        return st;
    const cJSON *ops = NULL;
    st = rank_from_json(j, r->file, (int)i, x->t, &ops, r->err);
    cJSON_Delete(j);
    if (st || !hole)
        return st;
    x->rank = i;
    long n = each_element(r, fo.vs, load_op, x, &st);
    return n < 0 && !st ? SC_EPARSE : st;
}

sc_status sc_timeline_load_filtered(const char *file, const sc_tl_filter *f, int compact_ranks,
                                    sc_timeline **out, sc_error *err)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    sc_status st = sc_read_file(file, SC_TIMELINE_MAX_BYTES, &text, &len, err);
    if (st)
        return st;
    reader r = {file, {text, len}, err, 0, 0};
    sc_timeline *t = NULL;
    size_t i = skip_ws(&r.c, 0);
    find_arr fr = {"ranks", 0, 0, 0};
    size_t top_end = 0;
    if (i < len && text[i] == '{')
        top_end = each_member(&r.c, i, find_member, &fr);
    if (!top_end || skip_ws(&r.c, top_end) != len) {
        r.syntax = 1;
        r.syntax_at = top_end ? skip_ws(&r.c, top_end) : i;
        st = SC_EPARSE;
    }
    if (!st) /* the string rule of every loader (sc_json_parse) */
        st = sc_json_check_strings(file, text, len, err);
    int hole = fr.found && text[fr.vs] == '[';
    long n_ranks = -1;
    if (!st && hole) {
        n_ranks = each_element(&r, fr.vs, NULL, NULL, &st);
        if (n_ranks < 0 && !st)
            st = SC_EPARSE;
    }
    cJSON *top = NULL;
    if (!st)
        st = parse_piece(&r, i, top_end, hole ? fr.vs : 0, hole ? fr.ve : 0, &top);
    if (!st)
        st = top_from_json(top, file, hole ? n_ranks : -1, NULL, &t, err);
    cJSON_Delete(top);
    load_ctx x = {t, f, 0, -1};
    if (!st && hole) {
        long n = each_element(&r, fr.vs, load_rank, &x, &st);
        if (n < 0 && !st)
            st = SC_EPARSE;
    }
    if (!st && f)
        st = kept_some(t, f, x.max_stage, file, err);
    if (st && r.syntax) {
        /* the message the whole-file reader gives, where it can read the
         * file: its syntax error, or (the scan wanting an object where the
         * JSON is fine) its validation error */
        cJSON *j = NULL;
        sc_timeline *u = NULL;
        sc_status pst = len <= SC_JSON_MAX_TEXT ? sc_json_parse(file, text, len, &j, err) : SC_EINVAL;
        if (len <= SC_JSON_MAX_TEXT && pst != SC_OK) {
            st = pst;
        } else if (j && (pst = sc_timeline_from_json(j, file, &u, err)) != SC_OK) {
            cJSON_Delete(j);
            st = pst;
        } else {
            cJSON_Delete(j);
            sc_timeline_free(u);
            size_t line = 1, col = 1;
            for (size_t k = 0; k < r.syntax_at && k < len; k++) {
                if (text[k] == '\n') {
                    line++;
                    col = 1;
                } else {
                    col++;
                }
            }
            st = r.syntax_at >= len
                     ? sc_err(err, SC_EPARSE, "%s: invalid JSON: unexpected end of input (line %zu)",
                              file, line)
                     : sc_err(err, SC_EPARSE, "%s: invalid JSON at line %zu, column %zu", file, line,
                              col);
        }
    }
    sc_free(text);
    if (st) {
        sc_timeline_free(t);
        return st;
    }
    if (compact_ranks && f)
        compact(t, f);
    *out = t;
    return SC_OK;
}

sc_status sc_timeline_load(const char *file, sc_timeline **out, sc_error *err)
{
    return sc_timeline_load_filtered(file, NULL, 0, out, err);
}

size_t sc_timeline_load_bytes(size_t file_bytes)
{
    /* the text, and about a third of it again in ops (a written op takes
     * some 190 bytes, sizeof(sc_tl_op) 48, arrays grown by doubling) */
    return file_bytes + file_bytes / 2 + (1u << 20);
}

/* ---- the streaming writers ------------------------------------------------------
 * The text cJSON_Print gives for sc_timeline_to_json / sc_timeline_chrome
 * after sc_json_exact (tests/test_harden_timeline.c compares them byte for
 * byte), written straight into a buffer: no tree of the whole file. */

/* Appends n bytes (b->oom, sticky, on allocation failure): the writers'
 * one primitive, without printf's cost per piece. */
static void put(sc_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 4096;
        while (c < b->len + n + 1)
            c *= 2;
        char *ns = sc_realloc(b->s, c);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = c;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void put_c(sc_buf *b, const char *s) { put(b, s, strlen(s)); }

static void put_tabs(sc_buf *b, int n)
{
    static const char tabs[] = "\t\t\t\t\t\t\t\t";
    put(b, tabs, (size_t)(n < 8 ? n : 8));
}

static void put_int(sc_buf *b, long v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    put(b, p, (size_t)(tmp + sizeof tmp - p));
}

/* A number as cJSON prints it after sc_json_exact. */
static void put_num(sc_buf *b, double d)
{
    if (!isfinite(d)) {
        put_c(b, "null");
        return;
    }
    if (d == 0 && signbit(d)) { /* cJSON 1.7.15 (Debian) prints negative zero so */
        put_c(b, "-0");
        return;
    }
    if (d == floor(d) && fabs(d) < 2147483647.0) { /* exact in %.15g: cJSON's %d */
        put_int(b, (long)d);
        return;
    }
    char buf[40];
    int prec = 15;
    for (; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    if (prec > 15) {
        put_c(b, buf); /* a raw node holding the exact text */
        return;
    }
    int vi = d >= 2147483647.0 ? 2147483647 : d <= -2147483648.0 ? (-2147483647 - 1) : (int)d;
    if (d == (double)vi)
        put_int(b, vi);
    else {
        snprintf(buf, sizeof buf, "%1.15g", d);
        put_c(b, buf);
    }
}

/* A string as cJSON prints it. */
static void put_str(sc_buf *b, const char *s)
{
    put(b, "\"", 1);
    const char *run = s;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *esc = NULL;
        char u[8];
        switch (*p) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (*p < 32) {
                snprintf(u, sizeof u, "\\u%04x", *p);
                esc = u;
            }
        }
        if (esc) {
            put(b, run, (size_t)((const char *)p - run));
            put_c(b, esc);
            run = (const char *)p + 1;
        }
    }
    put_c(b, run);
    put(b, "\"", 1);
}

/* Member KEY of an object at depth d; first: no comma before it. */
static void key(sc_buf *b, int d, int *first, const char *k)
{
    if (!*first)
        put(b, ",\n", 2);
    *first = 0;
    put_tabs(b, d);
    put_str(b, k);
    put(b, ":\t", 2);
}

static void knum(sc_buf *b, int d, int *first, const char *k, double v)
{
    key(b, d, first, k);
    put_num(b, v);
}

static void kstr(sc_buf *b, int d, int *first, const char *k, const char *v)
{
    key(b, d, first, k);
    put_str(b, v);
}

/* Closes an object whose members sit at depth d. */
static void close_obj(sc_buf *b, int d, int first)
{
    if (!first)
        put(b, "\n", 1);
    put_tabs(b, d - 1);
    put(b, "}", 1);
}

/* The members of tmp, top-level keys of the timeline, each as cJSON prints
 * it one level in; tmp is freed (NULL or oom: out of memory). For the small
 * optional parts whose cJSON form sc_timeline_to_json builds (provenance,
 * kernels): one writer for them, and the text cJSON's. */
static void put_members(sc_buf *b, int *f0, cJSON *tmp, int oom)
{
    if (!tmp || oom || sc_json_exact(tmp) != SC_OK) /* numbers as put_num writes them */
        b->oom = 1;
    for (const cJSON *v = b->oom ? NULL : tmp->child; v && !b->oom; v = v->next) {
        char *txt = cJSON_Print(v);
        if (!txt) {
            b->oom = 1;
            break;
        }
        key(b, 1, f0, v->string);
        for (const char *q = txt; *q; q++) {
            put(b, q, 1);
            if (*q == '\n')
                put(b, "\t", 1);
        }
        cJSON_free(txt);
    }
    cJSON_Delete(tmp);
}

void sc_timeline_write(const sc_timeline *t, sc_buf *b)
{
    int f0 = 1;
    put(b, "{\n", 2);
    kstr(b, 1, &f0, "format", SC_TIMELINE_FORMAT);
    kstr(b, 1, &f0, "source", t->source);
    kstr(b, 1, &f0, "model", t->model);
    kstr(b, 1, &f0, "cluster", t->cluster);
    knum(b, 1, &f0, "step_time_s", t->step_time_s);
    if (t->device[0])
        kstr(b, 1, &f0, "device", t->device);
    if (t->flash_attention[0])
        kstr(b, 1, &f0, "flash_attention", t->flash_attention);
    if (t->operands[0])
        kstr(b, 1, &f0, "operands", t->operands);
    if (t->plan_file[0]) {
        key(b, 1, &f0, "plan");
        int f1 = 1;
        put(b, "{\n", 2);
        kstr(b, 2, &f1, "file", t->plan_file);
        kstr(b, 2, &f1, "digest", t->plan_digest);
        close_obj(b, 2, f1);
    }
    if (t->n_steps > 0) {
        key(b, 1, &f0, "steps");
        int f1 = 1;
        put(b, "{\n", 2);
        knum(b, 2, &f1, "n", t->n_steps);
        knum(b, 2, &f1, "median_s", t->step_median_s);
        knum(b, 2, &f1, "min_s", t->step_min_s);
        knum(b, 2, &f1, "max_s", t->step_max_s);
        if (t->step_runs > 0)
            knum(b, 2, &f1, "runs", t->step_runs);
        if (t->step_spread >= 0)
            knum(b, 2, &f1, "spread", t->step_spread);
        if (t->step_drift >= 0)
            knum(b, 2, &f1, "drift", t->step_drift);
        if (t->step_tolerance >= 0)
            knum(b, 2, &f1, "tolerance", t->step_tolerance);
        if (t->step_stable >= 0) {
            key(b, 2, &f1, "stable");
            put_c(b, t->step_stable ? "true" : "false");
        }
        close_obj(b, 2, f1);
    }
    if (t->prov.present) {
        int oom = 0;
        cJSON *tmp = cJSON_CreateObject();
        if (tmp)
            sc_provenance_to_json(&t->prov, tmp, &oom);
        put_members(b, &f0, tmp, oom);
    }
    if (t->probe_m > 0) {
        key(b, 1, &f0, "probe");
        int f1 = 1;
        put(b, "{\n", 2);
        knum(b, 2, &f1, "m", t->probe_m);
        knum(b, 2, &f1, "n", t->probe_n);
        knum(b, 2, &f1, "k", t->probe_k);
        kstr(b, 2, &f1, "dtype", t->probe_dtype);
        knum(b, 2, &f1, "reps", t->probe_reps);
        knum(b, 2, &f1, "steps", t->probe_steps);
        close_obj(b, 2, f1);
    }
    if (t->n_kernels > 0) {
        int oom = 0;
        cJSON *tmp = cJSON_CreateObject();
        if (tmp)
            kernels_to_json(t, tmp, &oom);
        put_members(b, &f0, tmp, oom);
    }
    key(b, 1, &f0, "ranks");
    put(b, "[", 1);
    for (int i = 0; i < t->n_ranks && !b->oom; i++) {
        const sc_tl_rank *k = &t->ranks[i];
        int f1 = 1;
        put_c(b, i ? ", {\n" : "{\n");
        knum(b, 3, &f1, "rank", k->rank);
        knum(b, 3, &f1, "node", k->node);
        knum(b, 3, &f1, "device", k->device);
        knum(b, 3, &f1, "dp", k->dp);
        knum(b, 3, &f1, "pp", k->pp);
        knum(b, 3, &f1, "tp", k->tp);
        if (t->probe_m > 0)
            knum(b, 3, &f1, "probe_s", k->probe_s);
        key(b, 3, &f1, "ops");
        put(b, "[", 1);
        for (int o = 0; o < k->n_ops; o++) {
            const sc_tl_op *op = &k->ops[o];
            int f2 = 1;
            put_c(b, o ? ", {\n" : "{\n");
            kstr(b, 5, &f2, "kind", sc_op_kind_name((sc_op_kind)op->kind));
            knum(b, 5, &f2, "stage", op->stage);
            knum(b, 5, &f2, "chunk", op->chunk);
            knum(b, 5, &f2, "mb", op->mb);
            knum(b, 5, &f2, "bytes", op->bytes);
            kstr(b, 5, &f2, "stream", op->stream == SC_STREAM_COMM ? "comm" : "compute");
            knum(b, 5, &f2, "start", op->start);
            knum(b, 5, &f2, "end", op->end);
            close_obj(b, 5, f2);
        }
        put(b, "]", 1);
        close_obj(b, 3, f1);
    }
    put(b, "]", 1);
    close_obj(b, 1, f0);
}

sc_status sc_timeline_save(const sc_timeline *t, const char *file, sc_error *err)
{
    if (t->oom)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    sc_buf b = {0};
    sc_timeline_write(t, &b);
    sc_buf_printf(&b, "\n"); /* as sc_json_save ends a file */
    if (b.oom) {
        sc_buf_free(&b);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    sc_status st = sc_write_file_atomic(file, b.s, b.len, err);
    sc_buf_free(&b);
    return st;
}

static void meta_w(sc_buf *b, int *first_ev, const char *what, int pid, int tid,
                   const char *name)
{
    int f = 1;
    put_c(b, *first_ev ? "{\n" : ", {\n");
    *first_ev = 0;
    kstr(b, 3, &f, "name", what);
    kstr(b, 3, &f, "ph", "M");
    knum(b, 3, &f, "pid", pid);
    if (tid >= 0)
        knum(b, 3, &f, "tid", tid);
    key(b, 3, &f, "args");
    int g = 1;
    put(b, "{\n", 2);
    kstr(b, 4, &g, "name", name);
    close_obj(b, 4, g);
    close_obj(b, 3, f);
}

void sc_timeline_chrome_write(const sc_timeline *t, sc_buf *b)
{
    int f0 = 1, first_ev = 1;
    put(b, "{\n", 2);
    key(b, 1, &f0, "traceEvents");
    put(b, "[", 1);
    int last_node = -1;
    for (int i = 0; i < t->n_ranks && !b->oom; i++) {
        const sc_tl_rank *k = &t->ranks[i];
        char name[96];
        if (k->node != last_node) {
            snprintf(name, sizeof name, "node %d", k->node);
            meta_w(b, &first_ev, "process_name", k->node, -1, name);
            last_node = k->node;
        }
        for (int s = 0; s < 2; s++) {
            snprintf(name, sizeof name, "rank %d (dp %d pp %d tp %d) %s", k->rank, k->dp, k->pp,
                     k->tp, s ? "comm" : "compute");
            meta_w(b, &first_ev, "thread_name", k->node, 2 * k->rank + s, name);
        }
        for (int o = 0; o < k->n_ops; o++) {
            const sc_tl_op *op = &k->ops[o];
            if (op->mb >= 0)
                snprintf(name, sizeof name, "%s%d", sc_op_kind_name((sc_op_kind)op->kind), op->mb);
            else
                snprintf(name, sizeof name, "%s", sc_op_kind_name((sc_op_kind)op->kind));
            int f = 1;
            put_c(b, first_ev ? "{\n" : ", {\n");
            first_ev = 0;
            kstr(b, 3, &f, "name", name);
            kstr(b, 3, &f, "cat", sc_op_kind_name((sc_op_kind)op->kind));
            kstr(b, 3, &f, "ph", "X");
            knum(b, 3, &f, "ts", op->start * 1e6);
            knum(b, 3, &f, "dur", (op->end - op->start) * 1e6);
            knum(b, 3, &f, "pid", k->node);
            knum(b, 3, &f, "tid", 2 * k->rank + op->stream);
            key(b, 3, &f, "args");
            int g = 1;
            put(b, "{\n", 2);
            knum(b, 4, &g, "stage", op->stage);
            knum(b, 4, &g, "chunk", op->chunk);
            knum(b, 4, &g, "mb", op->mb);
            knum(b, 4, &g, "bytes", op->bytes);
            close_obj(b, 4, g);
            close_obj(b, 3, f);
        }
    }
    put(b, "]", 1);
    kstr(b, 1, &f0, "displayTimeUnit", "ms");
    close_obj(b, 1, f0);
}

static void meta(cJSON *arr, const char *what, int pid, int tid, const char *name, int *oom)
{
    cJSON *e = sc_jpush_obj(arr, oom);
    if (!e)
        return;
    sc_jadd_str(e, "name", what, oom);
    sc_jadd_str(e, "ph", "M", oom);
    sc_jadd_num(e, "pid", pid, oom);
    if (tid >= 0)
        sc_jadd_num(e, "tid", tid, oom);
    cJSON *a = sc_jadd_obj(e, "args", oom);
    sc_jadd_str(a, "name", name, oom);
}

cJSON *sc_timeline_chrome(const sc_timeline *t)
{
    sc_json_init();
    int oom = 0;
    cJSON *root = cJSON_CreateObject();
    cJSON *ev = sc_jadd_arr(root, "traceEvents", &oom);
    sc_jadd_str(root, "displayTimeUnit", "ms", &oom);
    int last_node = -1;
    for (int i = 0; i < t->n_ranks && !oom; i++) {
        const sc_tl_rank *k = &t->ranks[i];
        char name[96];
        if (k->node != last_node) {
            snprintf(name, sizeof name, "node %d", k->node);
            meta(ev, "process_name", k->node, -1, name, &oom);
            last_node = k->node;
        }
        for (int s = 0; s < 2; s++) {
            snprintf(name, sizeof name, "rank %d (dp %d pp %d tp %d) %s", k->rank, k->dp, k->pp,
                     k->tp, s ? "comm" : "compute");
            meta(ev, "thread_name", k->node, 2 * k->rank + s, name, &oom);
        }
        for (int o = 0; o < k->n_ops && !oom; o++) {
            const sc_tl_op *op = &k->ops[o];
            cJSON *e = sc_jpush_obj(ev, &oom);
            if (!e)
                break;
            if (op->mb >= 0)
                snprintf(name, sizeof name, "%s%d", sc_op_kind_name((sc_op_kind)op->kind), op->mb);
            else
                snprintf(name, sizeof name, "%s", sc_op_kind_name((sc_op_kind)op->kind));
            sc_jadd_str(e, "name", name, &oom);
            sc_jadd_str(e, "cat", sc_op_kind_name((sc_op_kind)op->kind), &oom);
            sc_jadd_str(e, "ph", "X", &oom);
            sc_jadd_num(e, "ts", op->start * 1e6, &oom);
            sc_jadd_num(e, "dur", (op->end - op->start) * 1e6, &oom);
            sc_jadd_num(e, "pid", k->node, &oom);
            sc_jadd_num(e, "tid", 2 * k->rank + op->stream, &oom);
            cJSON *a = sc_jadd_obj(e, "args", &oom);
            sc_jadd_num(a, "stage", op->stage, &oom);
            sc_jadd_num(a, "chunk", op->chunk, &oom);
            sc_jadd_num(a, "mb", op->mb, &oom);
            sc_jadd_num(a, "bytes", op->bytes, &oom);
        }
    }
    if (oom || !root) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
