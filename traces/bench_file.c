/* bench_file.c - the stagecraft.bench/1 reader and writer, see bench_file.h.
 * The record fields of a run (backend, world, nodes, ...) are optional on
 * read and written only when recorded; a file from `stagecraft bench`
 * records them all, so load then save gives its bytes back. */
#include "bench_file.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

static const char *const op_names[SC_BENCH_OP_N] = {"gemm", "p2p", "allreduce", "allgather",
                                                    "reducescatter"};

const char *sc_bench_op_name(sc_bench_op op)
{
    return (unsigned)op < SC_BENCH_OP_N ? op_names[op] : "?";
}

int sc_bench_op_parse(const char *s)
{
    for (int i = 0; i < SC_BENCH_OP_N; i++)
        if (s && !strcmp(s, op_names[i]))
            return i;
    return -1;
}

void sc_bench_result_free(sc_bench_result *r) { sc_free(r); }

/* ---- writing ---------------------------------------------------------------- */

cJSON *sc_bench_to_json(const sc_bench_result *r)
{
    sc_json_init();
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", SC_BENCH_FORMAT, &oom);
    sc_jadd_str(j, "op", sc_bench_op_name(r->op), &oom);
    if (r->backend[0])
        sc_jadd_str(j, "backend", r->backend, &oom);
    sc_jadd_str(j, "device", r->device, &oom);
    if (r->host[0])
        sc_jadd_str(j, "host", r->host, &oom);
    sc_jadd_num(j, "ranks", r->ranks, &oom);
    if (r->world > 0)
        sc_jadd_num(j, "world", r->world, &oom);
    if (r->nodes > 0)
        sc_jadd_num(j, "nodes", r->nodes, &oom);
    if (r->ranks_per_node > 0)
        sc_jadd_num(j, "ranks_per_node", r->ranks_per_node, &oom);
    sc_jadd_str(j, "link", r->link, &oom);
    if ((int)r->dtype >= 0)
        sc_jadd_str(j, "dtype", sc_dtype_name(r->dtype), &oom);
    sc_jadd_str(j, "compute_dtype", sc_dtype_name(r->compute_dtype), &oom);
    sc_jadd_num(j, "elem_bytes", r->elem_bytes, &oom);
    if (r->op != SC_BENCH_GEMM && r->busbw_factor >= 0)
        sc_jadd_num(j, "busbw_factor", r->busbw_factor, &oom);
    if (r->iters > 0)
        sc_jadd_num(j, "iters", r->iters, &oom);
    if (r->warmup >= 0)
        sc_jadd_num(j, "warmup", r->warmup, &oom);
    if (r->tolerance > 0)
        sc_jadd_num(j, "tolerance", r->tolerance, &oom);
    if (r->max_iters > 0)
        sc_jadd_num(j, "max_iters", r->max_iters, &oom);
    if (r->cold_bytes > 0)
        sc_jadd_num(j, "cold_bytes", r->cold_bytes, &oom);
    if (r->hot_s > 0)
        sc_jadd_num(j, "hot_s", r->hot_s, &oom);
    sc_provenance_to_json(&r->prov, j, &oom);
    cJSON *a = sc_jadd_arr(j, "results", &oom);
    for (int i = 0; a && i < r->n_rows; i++) {
        const sc_bench_row *w = &r->rows[i];
        cJSON *o = sc_jpush_obj(a, &oom);
        if (!o)
            break;
        if (r->op == SC_BENCH_GEMM) {
            if (w->batch > 1)
                sc_jadd_num(o, "batch", w->batch, &oom);
            sc_jadd_num(o, "m", w->m, &oom);
            sc_jadd_num(o, "n", w->n, &oom);
            sc_jadd_num(o, "k", w->k, &oom);
        } else {
            sc_jadd_num(o, "bytes", w->bytes, &oom);
        }
        sc_jadd_num(o, "time_s", w->time_s, &oom);
        if (w->time_min_s >= 0)
            sc_jadd_num(o, "time_min_s", w->time_min_s, &oom);
        if (r->op == SC_BENCH_GEMM) {
            if (w->flop >= 0)
                sc_jadd_num(o, "flop", w->flop, &oom);
            if (w->flops >= 0)
                sc_jadd_num(o, "flops", w->flops, &oom);
        } else {
            if (w->algbw >= 0)
                sc_jadd_num(o, "algbw", w->algbw, &oom);
            if (w->busbw >= 0)
                sc_jadd_num(o, "busbw", w->busbw, &oom);
        }
        if (w->spread >= 0)
            sc_jadd_num(o, "spread", w->spread, &oom);
        if (w->drift >= 0)
            sc_jadd_num(o, "drift", w->drift, &oom);
        if (w->runs > 0)
            sc_jadd_num(o, "runs", w->runs, &oom);
    }
    if (oom || !a) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

sc_status sc_bench_save(const sc_bench_result *r, const char *path, sc_error *err)
{
    cJSON *j = sc_bench_to_json(r);
    if (!j)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
    sc_status st = sc_json_save(path, j, err);
    cJSON_Delete(j);
    return st;
}

/* ---- reading ---------------------------------------------------------------- */

#define MAX_RATE 1e18

sc_status sc_bench_from_json(const cJSON *j, const char *path, sc_bench_result **out,
                             sc_error *err)
{
    static const char *const top[] = {"format", "op", "backend", "device", "host", "ranks",
                                      "world", "nodes", "ranks_per_node", "link", "dtype",
                                      "compute_dtype", "elem_bytes", "busbw_factor", "iters",
                                      "warmup", "tolerance", "max_iters", "cold_bytes", "hot_s",
                                      "provenance",
                                      "results", NULL};
    static const char *const gemm_keys[] = {"batch", "m", "n", "k", "time_s", "time_min_s",
                                            "flop", "flops", "spread", "drift", "runs", NULL};
    static const char *const comm_keys[] = {"bytes", "time_s", "time_min_s", "algbw", "busbw",
                                            "spread", "drift", "runs", NULL};
    *out = NULL;
    sc_bench_result *r = sc_calloc(1, sizeof *r);
    if (!r)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
    /* what the file does not record (bench_file.h) */
    const char *op = NULL, *backend = "", *device = NULL, *host = "", *link = NULL,
               *dt = NULL, *cdt = NULL;
    long ranks = 0, world = 0, nodes = 0, rpn = 0, iters = 0, warmup = -1;
    const cJSON *res = NULL;
    sc_status st = sc_json_format(j, path, SC_BENCH_FORMAT, err);
    if (!st)
        st = sc_json_keys(j, path, "", top, err);
    if (!st)
        st = sc_json_str(j, path, "", "op", 1, 32, &op, err);
    if (!st && (int)(r->op = (sc_bench_op)sc_bench_op_parse(op)) < 0)
        st = sc_err(err, SC_EINVAL,
                    "%s: op: unknown \"%s\" (gemm, p2p, allreduce, allgather, reducescatter)",
                    path, op);
    if (!st)
        st = sc_json_str(j, path, "", "backend", 0, sizeof r->backend - 1, &backend, err);
    if (!st)
        st = sc_json_str(j, path, "", "device", 1, sizeof r->device - 1, &device, err);
    if (!st)
        st = sc_json_str(j, path, "", "host", 0, sizeof r->host - 1, &host, err);
    if (!st)
        st = sc_json_int(j, path, "", "ranks", 1, 1, 1L << 24, &ranks, err);
    if (!st)
        st = sc_json_int(j, path, "", "world", 0, ranks, 1L << 24, &world, err);
    if (!st)
        st = sc_json_int(j, path, "", "nodes", 0, 1, ranks, &nodes, err);
    if (!st)
        st = sc_json_int(j, path, "", "ranks_per_node", 0, 1, world ? world : 1L << 24, &rpn,
                         err);
    if (!st)
        st = sc_json_str(j, path, "", "link", 1, 5, &link, err);
    if (!st && strcmp(link, "intra") && strcmp(link, "inter"))
        st = sc_err(err, SC_EINVAL, "%s: link: \"%s\" is not \"intra\" or \"inter\"", path,
                    link);
    if (!st)
        st = sc_json_str(j, path, "", "dtype", 0, 8, &dt, err);
    if (!st && dt && sc_dtype_parse(dt) < 0)
        st = sc_err(err, SC_EINVAL, "%s: dtype: unknown \"%s\"", path, dt);
    if (!st)
        st = sc_json_str(j, path, "", "compute_dtype", 1, 8, &cdt, err);
    if (!st && sc_dtype_parse(cdt) < 0)
        st = sc_err(err, SC_EINVAL, "%s: compute_dtype: unknown \"%s\"", path, cdt);
    if (!st)
        st = sc_json_num(j, path, "", "elem_bytes", 1, 1, 8, &r->elem_bytes, err);
    r->busbw_factor = r->op == SC_BENCH_GEMM ? 1 : -1;
    if (!st)
        st = sc_json_num(j, path, "", "busbw_factor", 0, 0, 2, &r->busbw_factor, err);
    if (!st)
        st = sc_json_int(j, path, "", "iters", 0, 1, 100000, &iters, err);
    if (!st)
        st = sc_json_int(j, path, "", "warmup", 0, 0, 100000, &warmup, err);
    r->tolerance = -1;
    if (!st)
        st = sc_json_num(j, path, "", "tolerance", 0, 1e-6, 1, &r->tolerance, err);
    long max_iters = 0;
    if (!st)
        st = sc_json_int(j, path, "", "max_iters", 0, 1, 100000000L, &max_iters, err);
    r->max_iters = (int)max_iters;
    if (!st)
        st = sc_json_num(j, path, "", "cold_bytes", 0, 0, 68719476736.0, &r->cold_bytes, err);
    if (!st)
        st = sc_json_num(j, path, "", "hot_s", 0, 0, 10, &r->hot_s, err);
    if (!st)
        st = sc_provenance_from_json(j, path, &r->prov, err);
    if (!st)
        st = sc_json_arr(j, path, "", "results", 1, &res, err);
    int n = st ? 0 : cJSON_GetArraySize(res);
    if (!st && (n < 1 || n > SC_BENCH_MAX_SIZES))
        st = sc_err(err, SC_EINVAL, "%s: results: %d entries, expected 1 to %d", path, n,
                    SC_BENCH_MAX_SIZES);
    const cJSON *x = res ? res->child : NULL;
    for (int i = 0; !st && x; i++, x = x->next) {
        char p[32];
        snprintf(p, sizeof p, "results[%d]", i);
        sc_bench_row *w = &r->rows[i];
        if (!cJSON_IsObject(x)) {
            st = sc_err(err, SC_EPARSE, "%s: %s: must be an object", path, p);
            break;
        }
        int gemm = r->op == SC_BENCH_GEMM;
        st = sc_json_keys(x, path, p, gemm ? gemm_keys : comm_keys, err);
        long m = 0, nn = 0, k = 0;
        if (!st && gemm) {
            w->flop = w->flops = -1;
            st = sc_json_int(x, path, p, "m", 1, 1, SC_BENCH_MAX_DIM, &m, err);
            if (!st)
                st = sc_json_int(x, path, p, "n", 1, 1, SC_BENCH_MAX_DIM, &nn, err);
            if (!st)
                st = sc_json_int(x, path, p, "k", 1, 1, SC_BENCH_MAX_DIM, &k, err);
            long bt = 1;
            if (!st)
                st = sc_json_int(x, path, p, "batch", 0, 1, SC_BENCH_MAX_DIM, &bt, err);
            w->batch = (int)bt;
            if (!st)
                st = sc_json_num(x, path, p, "flop", 0, 0, 1e15, &w->flop, err);
            if (!st)
                st = sc_json_num(x, path, p, "flops", 0, 0, MAX_RATE, &w->flops, err);
            w->m = (int)m, w->n = (int)nn, w->k = (int)k;
        } else if (!st) {
            w->algbw = w->busbw = -1;
            st = sc_json_num(x, path, p, "bytes", 1, 1, SC_BENCH_MAX_BYTES, &w->bytes, err);
            if (!st)
                st = sc_json_num(x, path, p, "algbw", 0, 0, MAX_RATE, &w->algbw, err);
            if (!st)
                st = sc_json_num(x, path, p, "busbw", 0, 0, MAX_RATE, &w->busbw, err);
        }
        if (!st)
            st = sc_json_num(x, path, p, "time_s", 1, 0, SC_BENCH_MAX_TIME, &w->time_s, err);
        w->time_min_s = -1;
        if (!st)
            st = sc_json_num(x, path, p, "time_min_s", 0, 0, w->time_s, &w->time_min_s, err);
        w->spread = w->drift = -1;
        long runs = 0;
        if (!st)
            st = sc_json_num(x, path, p, "spread", 0, 0, 1e6, &w->spread, err);
        if (!st)
            st = sc_json_num(x, path, p, "drift", 0, 0, 1e6, &w->drift, err);
        if (!st)
            st = sc_json_int(x, path, p, "runs", 0, 1, 100000000L, &runs, err);
        w->runs = (int)runs;
        r->n_rows = i + 1;
    }
    if (!st) {
        snprintf(r->backend, sizeof r->backend, "%s", backend);
        snprintf(r->device, sizeof r->device, "%s", device);
        snprintf(r->host, sizeof r->host, "%s", host);
        snprintf(r->link, sizeof r->link, "%s", link);
        r->ranks = (int)ranks, r->world = (int)world, r->nodes = (int)nodes;
        r->ranks_per_node = (int)rpn, r->iters = (int)iters, r->warmup = (int)warmup;
        r->dtype = dt ? (sc_dtype)sc_dtype_parse(dt) : (sc_dtype)-1;
        r->compute_dtype = (sc_dtype)sc_dtype_parse(cdt);
    }
    if (st) {
        sc_free(r);
        return st;
    }
    *out = r;
    return SC_OK;
}

sc_status sc_bench_load(const char *path, sc_bench_result **out, sc_error *err)
{
    *out = NULL;
    cJSON *j = NULL;
    sc_status st = sc_json_load(path, &j, err);
    if (st)
        return st;
    st = sc_bench_from_json(j, path, out, err);
    cJSON_Delete(j);
    return st;
}
