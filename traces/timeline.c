/* timeline.c - see timeline.h. */
#include "timeline.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *kind_names[SC_OP_KIND_N] = {
    "F", "B", "W", "recompute", "send_f", "recv_f", "send_b", "recv_b",
    "tp_allreduce", "dp_allreduce", "dp_reducescatter", "dp_allgather", "optimizer"};

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

sc_status sc_timeline_save(const sc_timeline *t, const char *file, sc_error *err)
{
    cJSON *j = sc_timeline_to_json(t);
    if (!j)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    sc_status st = sc_json_save(file, j, err);
    cJSON_Delete(j);
    return st;
}

#define MAX_RANKS 1000000L
#define MAX_T 1e9

sc_status sc_timeline_from_json(const cJSON *j, const char *file, sc_timeline **out,
                                sc_error *err)
{
    static const char *const top[] = {"format", "source", "model", "cluster", "step_time_s",
                                      "steps", "device", "provenance", "plan", "ranks", NULL};
    static const char *const rk[] = {"rank", "node", "device", "dp", "pp", "tp", "ops", NULL};
    static const char *const ok[] = {"kind", "stage", "chunk", "mb", "bytes", "stream",
                                     "start", "end", NULL};
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
    int n = cJSON_GetArraySize(ranks);
    if (n > MAX_RANKS)
        return sc_err(err, SC_EINVAL, "%s: ranks: more than %ld ranks", file, MAX_RANKS);
    sc_timeline *t = sc_timeline_new(n, source, model, cluster);
    if (!t)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    t->step_time_s = step;
    const char *dev = NULL;
    const cJSON *plan = NULL;
    st = sc_json_str(j, file, "", "device", 0, sizeof t->device - 1, &dev, err);
    if (!st && dev)
        snprintf(t->device, sizeof t->device, "%s", dev);
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
    int i = 0;
    for (const cJSON *r = ranks->child; r && !st; r = r->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "ranks[%d]", i);
        if (!cJSON_IsObject(r)) {
            st = sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
            break;
        }
        sc_tl_rank *k = &t->ranks[i];
        long v[6] = {0};
        const char *names[6] = {"rank", "node", "device", "dp", "pp", "tp"};
        st = sc_json_keys(r, file, path, rk, err);
        for (int f = 0; f < 6 && !st; f++)
            st = sc_json_int(r, file, path, names[f], 1, 0, MAX_RANKS, &v[f], err);
        if (st)
            break;
        if (v[0] != i) {
            st = sc_err(err, SC_EINVAL, "%s: %s.rank: %ld, expected %d (ranks in order)", file,
                        path, v[0], i);
            break;
        }
        k->node = (int)v[1];
        k->device = (int)v[2];
        k->dp = (int)v[3];
        k->pp = (int)v[4];
        k->tp = (int)v[5];
        const cJSON *ops = NULL;
        st = sc_json_arr(r, file, path, "ops", 1, &ops, err);
        int o = 0;
        for (const cJSON *x = ops ? ops->child : NULL; x && !st; x = x->next, o++) {
            char p2[96];
            snprintf(p2, sizeof p2, "%s.ops[%d]", path, o);
            if (!cJSON_IsObject(x)) {
                st = sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, p2);
                break;
            }
            const char *kind = NULL, *stream = NULL;
            long stage = 0, chunk = 0, mb = 0;
            sc_tl_op op = {0};
            st = sc_json_keys(x, file, p2, ok, err);
            if (!st)
                st = sc_json_str(x, file, p2, "kind", 1, 32, &kind, err);
            if (!st && (op.kind = sc_op_kind_parse(kind)) < 0)
                st = sc_err(err, SC_EINVAL, "%s: %s.kind: unknown op kind \"%s\"", file, p2, kind);
            if (!st)
                st = sc_json_int(x, file, p2, "stage", 1, -1, 1000000, &stage, err);
            if (!st)
                st = sc_json_int(x, file, p2, "chunk", 1, -1, 1000000, &chunk, err);
            if (!st)
                st = sc_json_int(x, file, p2, "mb", 1, -1, 100000000, &mb, err);
            if (!st)
                st = sc_json_num(x, file, p2, "bytes", 1, 0, 1e18, &op.bytes, err);
            if (!st)
                st = sc_json_str(x, file, p2, "stream", 1, 16, &stream, err);
            if (!st && strcmp(stream, "compute") && strcmp(stream, "comm"))
                st = sc_err(err, SC_EINVAL, "%s: %s.stream: must be \"compute\" or \"comm\"",
                            file, p2);
            if (!st)
                st = sc_json_num(x, file, p2, "start", 1, 0, MAX_T, &op.start, err);
            if (!st)
                st = sc_json_num(x, file, p2, "end", 1, 0, MAX_T, &op.end, err);
            if (!st && op.end < op.start)
                st = sc_err(err, SC_EINVAL, "%s: %s.end: %g is before start %g", file, p2, op.end,
                            op.start);
            if (st)
                break;
            op.stage = (int)stage;
            op.chunk = (int)chunk;
            op.mb = (int)mb;
            op.stream = strcmp(stream, "comm") == 0 ? SC_STREAM_COMM : SC_STREAM_COMPUTE;
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

sc_status sc_timeline_load(const char *file, sc_timeline **out, sc_error *err)
{
    cJSON *j;
    *out = NULL;
    sc_status st = sc_json_load(file, &j, err);
    if (st)
        return st;
    st = sc_timeline_from_json(j, file, out, err);
    cJSON_Delete(j);
    return st;
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
