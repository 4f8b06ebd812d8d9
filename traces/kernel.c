/* kernel.c - a leaf's kernel list: names, builders, JSON, checks (kernel.h). */
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

#define MAX_DIM 1e9
#define MAX_KBYTES 1e15
#define MAX_KFLOPS 1e18 /* a mem kernel's counted FLOPs per sample */

static const char *const op_names[SC_KOP_N] = {"gemm", "mem", "flash"};
static const char *const tp_names[SC_KTP_COUNT] = {"none", "n", "k", "batch", "shard", "seq"};
static const char *const attn_names[SC_ATTN_N + 1] = {"unfused", "flash", "any"};

const char *sc_kop_name(sc_kop op) { return (unsigned)op < SC_KOP_N ? op_names[op] : "?"; }
const char *sc_ktp_name(sc_ktp tp) { return (unsigned)tp < SC_KTP_COUNT ? tp_names[tp] : "?"; }
const char *sc_attn_name(sc_attn a) { return (unsigned)a <= SC_ATTN_N ? attn_names[a] : "?"; }

int sc_attn_parse(const char *s)
{
    if (s && strcmp(s, "unfused") == 0)
        return SC_ATTN_UNFUSED;
    if (s && strcmp(s, "flash") == 0)
        return SC_ATTN_FLASH;
    return -1;
}

static int find(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

double sc_kernel_flops(const sc_kernel *k)
{
    switch (k->op) {
    case SC_KOP_GEMM: return 2 * k->batch * k->m * k->n * k->k;
    case SC_KOP_FLASH: return 4 * k->batch * k->m * k->n * k->k;
    case SC_KOP_MEM: return k->flops;
    default: return 0;
    }
}

static void set_name(sc_kernel *k, const char *name)
{
    snprintf(k->name, sizeof k->name, "%s", name ? name : "");
}

sc_kernel sc_kernel_gemm(const char *name, double batch, double m, double n, double k,
                         sc_ktp tp, int grow_batch, sc_attn attn)
{
    sc_kernel x = {.op = SC_KOP_GEMM, .tp = (unsigned char)tp, .attn = (unsigned char)attn,
                   .grow_batch = grow_batch != 0, .batch = batch, .m = m, .n = n, .k = k};
    set_name(&x, name);
    return x;
}

sc_kernel sc_kernel_mem(const char *name, double bytes, double bwd_bytes, sc_ktp tp,
                        sc_attn attn)
{
    sc_kernel x = {.op = SC_KOP_MEM, .tp = (unsigned char)tp, .attn = (unsigned char)attn,
                   .batch = 1, .bytes = bytes, .bwd_bytes = bwd_bytes};
    set_name(&x, name);
    return x;
}

sc_kernel sc_kernel_flash(const char *name, double heads, double sq, double skv, double dh,
                          int causal, sc_ktp tp)
{
    sc_kernel x = {.op = SC_KOP_FLASH, .tp = (unsigned char)tp, .attn = SC_ATTN_FLASH,
                   .grow_batch = 1, .causal = causal != 0, .batch = heads, .m = sq, .n = skv,
                   .k = dh};
    set_name(&x, name);
    return x;
}

/* ---- JSON ------------------------------------------------------------------ */

static sc_status dim(const cJSON *o, const char *file, const char *path, const char *key,
                     int required, double dflt, double *out, sc_error *err)
{
    double v = dflt;
    sc_status st = sc_json_num(o, file, path, key, required, 1, MAX_DIM, &v, err);
    if (!st && v != floor(v))
        st = sc_err(err, SC_EINVAL, "%s: %s.%s: %g is not an integer", file, path, key, v);
    if (!st)
        *out = v;
    return st;
}

/* The enum value of o[key] among names[0..n), dflt when absent. */
static sc_status pick(const cJSON *o, const char *file, const char *path, const char *key,
                      const char *const *names, int n, int dflt, int *out, sc_error *err)
{
    const char *s = NULL;
    sc_status st = sc_json_str(o, file, path, key, 0, 32, &s, err);
    if (st)
        return st;
    if (!s) {
        *out = dflt;
        return SC_OK;
    }
    int i = find(names, n, s);
    if (i < 0) {
        char list[160] = "";
        for (int j = 0; j < n; j++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                     names[j]);
        return sc_err(err, SC_EINVAL, "%s: %s.%s: unknown \"%.32s\" (%s)", file, path, key, s,
                      list);
    }
    *out = i;
    return SC_OK;
}

static sc_status one_from_json(const cJSON *o, const char *file, const char *path,
                               sc_kernel *k, sc_error *err)
{
    static const char *const keys[] = {"name", "op",      "batch",  "m",   "n",
                                       "k",    "bytes",   "bwd_bytes", "samples", "tp",
                                       "attn", "causal",  "kv",     "per", "flops", "kv_heads", NULL};
    if (!cJSON_IsObject(o))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
    memset(k, 0, sizeof *k);
    const char *name = NULL;
    int op = 0, tp = 0, attn = SC_ATTN_ANY, grow = 0, causal = 0;
    sc_status st = sc_json_keys(o, file, path, keys, err);
    if (!st)
        st = sc_json_str(o, file, path, "name", 1, SC_KERNEL_NAME_MAX, &name, err);
    if (!st)
        st = pick(o, file, path, "op", op_names, SC_KOP_N, -1, &op, err);
    if (!st && op < 0)
        st = sc_err(err, SC_EPARSE, "%s: %s.op: missing (gemm, mem, flash)", file, path);
    if (st)
        return st;
    set_name(k, name);
    k->op = (unsigned char)op;
    const char *wrong = NULL; /* a key the op does not take */
    if (op == SC_KOP_MEM) {
        k->batch = 1;
        st = sc_json_num(o, file, path, "bytes", 1, 0, MAX_KBYTES, &k->bytes, err);
        k->bwd_bytes = 2 * k->bytes;
        if (!st)
            st = sc_json_num(o, file, path, "bwd_bytes", 0, 0, MAX_KBYTES, &k->bwd_bytes, err);
        if (!st)
            st = sc_json_num(o, file, path, "flops", 0, 0, MAX_KFLOPS, &k->flops, err);
        const char *const not_mem[] = {"batch", "m", "n", "k", "samples", "causal", "kv",
                                       "kv_heads"};
        static const char *const per_names[] = {"tokens", "scores"};
        int per = 0;
        if (!st)
            st = pick(o, file, path, "per", per_names, 2, 0, &per, err);
        k->scores = (unsigned char)per;
        for (size_t i = 0; i < SC_ARRAY_LEN(not_mem) && !wrong; i++)
            if (cJSON_GetObjectItemCaseSensitive(o, not_mem[i]))
                wrong = not_mem[i];
    } else {
        st = dim(o, file, path, "batch", 0, 1, &k->batch, err);
        if (!st)
            st = dim(o, file, path, "m", 1, 1, &k->m, err);
        if (!st)
            st = dim(o, file, path, "n", 1, 1, &k->n, err);
        if (!st)
            st = dim(o, file, path, "k", 1, 1, &k->k, err);
        static const char *const grow_names[] = {"m", "batch"};
        if (!st)
            st = pick(o, file, path, "samples", grow_names, 2, op == SC_KOP_FLASH, &grow, err);
        if (!st && op == SC_KOP_FLASH && !grow)
            st = sc_err(err, SC_EINVAL,
                        "%s: %s.samples: a flash kernel's samples multiply its batch", file,
                        path);
        if (!st && op == SC_KOP_FLASH)
            st = sc_json_bool(o, file, path, "causal", 0, &causal, err);
        if (!st && op == SC_KOP_FLASH)
            st = dim(o, file, path, "kv_heads", 0, k->batch, &k->kv_heads, err);
        if (!st && op == SC_KOP_FLASH && fmod(k->batch, k->kv_heads) != 0)
            st = sc_err(err, SC_EINVAL, "%s: %s.kv_heads: %g does not divide batch %g", file,
                        path, k->kv_heads, k->batch);
        if (!st && op == SC_KOP_GEMM && cJSON_GetObjectItemCaseSensitive(o, "causal"))
            wrong = "causal";
        if (!st && op == SC_KOP_GEMM && cJSON_GetObjectItemCaseSensitive(o, "kv_heads"))
            wrong = "kv_heads";
        static const char *const kv_names[] = {"none", "n", "k"};
        int kv = 0;
        if (!st && op == SC_KOP_GEMM)
            st = pick(o, file, path, "kv", kv_names, 3, 0, &kv, err);
        else if (!st && cJSON_GetObjectItemCaseSensitive(o, "kv"))
            wrong = "kv";
        k->kv = kv == 1 ? 'n' : kv == 2 ? 'k' : 0;
        const char *const not_mm[] = {"bytes", "bwd_bytes", "per", "flops"};
        for (size_t i = 0; i < SC_ARRAY_LEN(not_mm) && !wrong; i++)
            if (cJSON_GetObjectItemCaseSensitive(o, not_mm[i]))
                wrong = not_mm[i];
    }
    if (!st && wrong)
        st = sc_err(err, SC_EINVAL, "%s: %s.%s: a %s kernel has no %s", file, path, wrong,
                    op_names[op], wrong);
    if (!st)
        st = pick(o, file, path, "tp", tp_names, SC_KTP_COUNT, SC_KTP_NONE, &tp, err);
    if (!st) {
        /* what each kind can shard */
        int ok = op == SC_KOP_GEMM   ? tp != SC_KTP_SHARD
                 : op == SC_KOP_MEM  ? tp == SC_KTP_NONE || tp == SC_KTP_SHARD || tp == SC_KTP_SEQ
                                     : tp == SC_KTP_NONE || tp == SC_KTP_BATCH;
        if (!ok)
            st = sc_err(err, SC_EINVAL, "%s: %s.tp: a %s kernel cannot be sharded by \"%s\"",
                        file, path, op_names[op], tp_names[tp]);
    }
    if (!st)
        st = pick(o, file, path, "attn", attn_names, SC_ATTN_N + 1,
                  op == SC_KOP_FLASH ? SC_ATTN_FLASH : SC_ATTN_ANY, &attn, err);
    if (!st && op == SC_KOP_FLASH && attn != SC_ATTN_FLASH)
        st = sc_err(err, SC_EINVAL, "%s: %s.attn: a flash kernel runs only with \"flash\"", file,
                    path);
    if (st)
        return st;
    if (op == SC_KOP_FLASH)
        attn = SC_ATTN_FLASH;
    k->tp = (unsigned char)tp;
    k->attn = (unsigned char)attn;
    k->grow_batch = (unsigned char)grow;
    k->causal = (unsigned char)causal;
    return SC_OK;
}

sc_status sc_kernels_from_json(const cJSON *arr, const char *file, const char *path,
                               sc_kernel **out, int *n, sc_error *err)
{
    *out = NULL;
    *n = 0;
    int len = cJSON_GetArraySize(arr);
    if (len < 1)
        return sc_err(err, SC_EINVAL, "%s: %s.kernels: empty (omit the key instead)", file,
                      path);
    if (len > SC_KERNELS_MAX)
        return sc_err(err, SC_EINVAL, "%s: %s.kernels: %d kernels, more than %d", file, path,
                      len, SC_KERNELS_MAX);
    sc_kernel *k = sc_calloc((size_t)len, sizeof *k);
    if (!k)
        return sc_err(err, SC_ENOMEM, "%s: %s: out of memory", file, path);
    char p[4200];
    int i = 0;
    sc_status st = SC_OK;
    for (const cJSON *e = arr->child; e && !st; e = e->next, i++) {
        snprintf(p, sizeof p, "%s.kernels[%d]", path, i);
        st = one_from_json(e, file, p, &k[i], err);
    }
    if (st) {
        sc_free(k);
        return st;
    }
    *out = k;
    *n = len;
    return SC_OK;
}

void sc_kernels_to_json(cJSON *obj, const sc_kernel *k, int n, int *oom)
{
    cJSON *a = sc_jadd_arr(obj, "kernels", oom);
    for (int i = 0; i < n && a; i++) {
        cJSON *o = sc_jpush_obj(a, oom);
        if (!o)
            return;
        const sc_kernel *x = &k[i];
        sc_jadd_str(o, "name", x->name, oom);
        sc_jadd_str(o, "op", op_names[x->op], oom);
        if (x->op == SC_KOP_MEM) {
            sc_jadd_num(o, "bytes", x->bytes, oom);
            sc_jadd_num(o, "bwd_bytes", x->bwd_bytes, oom);
            if (x->scores)
                sc_jadd_str(o, "per", "scores", oom);
            if (x->flops > 0)
                sc_jadd_num(o, "flops", x->flops, oom);
        } else {
            if (x->batch != 1)
                sc_jadd_num(o, "batch", x->batch, oom);
            sc_jadd_num(o, "m", x->m, oom);
            sc_jadd_num(o, "n", x->n, oom);
            sc_jadd_num(o, "k", x->k, oom);
            if (x->op == SC_KOP_GEMM && x->grow_batch)
                sc_jadd_str(o, "samples", "batch", oom);
            if (x->op == SC_KOP_FLASH && x->causal)
                sc_jadd_bool(o, "causal", 1, oom);
            if (x->op == SC_KOP_FLASH && x->kv_heads > 0 && x->kv_heads != x->batch)
                sc_jadd_num(o, "kv_heads", x->kv_heads, oom);
            if (x->op == SC_KOP_GEMM && x->kv)
                sc_jadd_str(o, "kv", x->kv == 'n' ? "n" : "k", oom);
        }
        if (x->tp != SC_KTP_NONE)
            sc_jadd_str(o, "tp", tp_names[x->tp], oom);
        if (x->attn != SC_ATTN_ANY && x->op != SC_KOP_FLASH)
            sc_jadd_str(o, "attn", attn_names[x->attn], oom);
    }
}

sc_status sc_kernels_check(const sc_kernel *k, int n, double flops_fwd, const char *file,
                           const char *where, sc_error *err)
{
    int has[SC_ATTN_N] = {0};
    for (int i = 0; i < n; i++)
        if (k[i].attn != SC_ATTN_ANY)
            has[k[i].attn] = 1;
    if (has[SC_ATTN_UNFUSED] != has[SC_ATTN_FLASH])
        return sc_err(err, SC_EINVAL,
                      "%s: %s.kernels: has \"%s\" kernels but none for \"%s\" (a leaf "
                      "lists both attention implementations or neither)",
                      file, where, has[SC_ATTN_FLASH] ? "flash" : "unfused",
                      has[SC_ATTN_FLASH] ? "unfused" : "flash");
    has[SC_ATTN_UNFUSED] = 1; /* untagged lists are checked once */
    for (int a = 0; a < SC_ATTN_N; a++) {
        if (!has[a])
            continue;
        double f = 0;
        for (int i = 0; i < n; i++)
            if (sc_kernel_runs(&k[i], (sc_attn)a))
                f += sc_kernel_flops(&k[i]);
        double tol = 0.005 * (flops_fwd > f ? flops_fwd : f);
        if (fabs(f - flops_fwd) > tol)
            return sc_err(err, SC_EINVAL,
                          "%s: %s.kernels: the %s kernels count %.6g FLOPs, the module's "
                          "flops_fwd is %.6g (they must agree within 0.5%%)",
                          file, where, attn_names[a], f, flops_fwd);
    }
    return SC_OK;
}
