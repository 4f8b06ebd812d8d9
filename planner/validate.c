/* validate.c - the validation suite's loader and runner (validate.h). */
#include "validate.h"
#include "overhead.h"

#include "gen.h"
#include "json.h"
#include "label.h"
#include "partition.h"
#include "search.h"
#include "step.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SOURCES 1000
#define MAX_ROWS 10000
#define MAX_TEXT 4000     /* free text: citations, notes, assumptions */
#define MAX_GEN_PARAMS 32

/* ---- small helpers ----------------------------------------------------------- */

static sc_status text(const cJSON *o, const char *file, const char *path, const char *key,
                      int required, size_t maxlen, const char **out, sc_error *err)
{
    const char *s = NULL;
    sc_status st = sc_json_str(o, file, path, key, required, maxlen, &s, err);
    if (st)
        return st;
    if (s && !*s)
        return sc_err(err, SC_EINVAL, "%s: %s%s%s: must not be empty", file, path,
                      *path ? "." : "", key);
    if (s)
        *out = s;
    return SC_OK;
}

/* The first module's value of a dim, or 0. */
static double first_dim(const sc_model *m, const char *name)
{
    for (int i = 0; i < m->n_modules; i++) {
        double v = sc_module_dim(m->modules[i], name, 0);
        if (v > 0)
            return v;
    }
    return 0;
}

static void desc_add(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void desc_add(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* ---- parts of a row ---------------------------------------------------------- */

static sc_status load_sources(sc_val_suite *s, const cJSON *arr, sc_error *err)
{
    static const char *const keys[] = {"id", "citation", "year", "url", "commit", NULL};
    const char *f = s->file;
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > MAX_SOURCES)
        return sc_err(err, SC_EINVAL, "%s: sources: %d entries (1 to %d)", f, n, MAX_SOURCES);
    if (!(s->sources = sc_calloc((size_t)n, sizeof *s->sources)))
        return sc_err(err, SC_ENOMEM, "%s: out of memory", f);
    s->n_sources = n;
    int i = 0;
    for (const cJSON *x = arr->child; x; x = x->next, i++) {
        char path[32];
        snprintf(path, sizeof path, "sources[%d]", i);
        sc_val_source *src = &s->sources[i];
        long year = 0;
        if (!cJSON_IsObject(x))
            return sc_err(err, SC_EPARSE, "%s: %s: must be an object", f, path);
        sc_status st = sc_json_keys(x, f, path, keys, err);
        if (!st)
            st = text(x, f, path, "id", 1, 64, &src->id, err);
        if (!st)
            st = text(x, f, path, "citation", 1, MAX_TEXT, &src->citation, err);
        if (!st)
            st = sc_json_int(x, f, path, "year", 1, 1950, 2100, &year, err);
        if (!st)
            st = text(x, f, path, "url", 0, 1000, &src->url, err);
        if (!st)
            st = text(x, f, path, "commit", 0, 64, &src->commit, err);
        if (st)
            return st;
        src->year = (int)year;
        for (int j = 0; j < i; j++)
            if (!strcmp(s->sources[j].id, src->id))
                return sc_err(err, SC_EINVAL, "%s: %s.id: \"%s\" is also sources[%d].id", f,
                              path, src->id, j);
    }
    return SC_OK;
}

/* Builds the row's model: a built-in by name, or a generator run with the
 * object's other numbers (booleans as 0/1) as its parameters. */
static sc_status load_model(const sc_val_suite *s, sc_val_row *r, const cJSON *o, sc_error *err)
{
    const char *f = s->file;
    char path[48];
    snprintf(path, sizeof path, "%s.model", r->path);
    if (!cJSON_IsObject(o))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", f, path);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "builtin");
    if (b) {
        static const char *const keys[] = {"builtin", NULL};
        sc_status st = sc_json_keys(o, f, path, keys, err);
        if (!st)
            st = text(o, f, path, "builtin", 1, SC_NAME_MAX, &r->builtin, err);
        if (st)
            return st;
        if (!sc_model_is_builtin(r->builtin))
            return sc_err(err, SC_ENOTFOUND,
                          "%s: %s.builtin: \"%s\" is not a built-in model (stagecraft model "
                          "list)", f, path, r->builtin);
        snprintf(r->model_desc, sizeof r->model_desc, "%s", r->builtin);
        sc_status ms = sc_model_open(r->builtin, &r->model, err);
        if (ms)
            sc_err_prefix(err, "%s: %s", f, path);
        return ms;
    }
    const char *dt = "bf16";
    sc_status st = text(o, f, path, "generator", 1, 32, &r->generator, err);
    if (!st)
        st = text(o, f, path, "dtype", 0, 16, &dt, err);
    if (st)
        return st;
    const sc_gen *g = sc_gen_find(r->generator);
    if (!g)
        return sc_err(err, SC_ENOTFOUND,
                      "%s: %s.generator: \"%s\" is not a generator (stagecraft model gen --help)",
                      f, path, r->generator);
    int dtype = sc_dtype_parse(dt);
    if (dtype < 0)
        return sc_err(err, SC_EINVAL, "%s: %s.dtype: \"%s\" is not fp32, tf32, fp16, bf16 or fp8",
                      f, path, dt);
    const char *names[MAX_GEN_PARAMS];
    double vals[MAX_GEN_PARAMS];
    int n = 0;
    snprintf(r->model_desc, sizeof r->model_desc, "%s", r->generator);
    static const struct {
        const char *key, *abbr;
    } abbr[] = {{"layers", "l"}, {"hidden", "h"}, {"heads", "a"}, {"kv_heads", "g"},
                {"ffn", "f"},    {"seq", "s"},    {"vocab", "V"}};
    for (const cJSON *x = o->child; x; x = x->next) {
        if (!x->string || !strcmp(x->string, "generator") || !strcmp(x->string, "dtype") ||
            !strcmp(x->string, "comment") || !strncmp(x->string, "x-", 2))
            continue;
        for (int j = 0; j < n; j++)
            if (!strcmp(names[j], x->string))
                return sc_err(err, SC_EPARSE, "%s: %s.%.64s: duplicate field", f, path,
                              x->string);
        if (n == MAX_GEN_PARAMS)
            return sc_err(err, SC_EINVAL, "%s: %s: more than %d parameters", f, path,
                          MAX_GEN_PARAMS);
        const sc_gen_param *gp = sc_gen_param_find(g, x->string);
        double v;
        if (gp && gp->choices) {
            char list[256];
            if (!cJSON_IsString(x) || (v = sc_gen_choice_index(gp, x->valuestring)) < 0)
                return sc_err(err, SC_EINVAL, "%s: %s.%.64s: must be %s", f, path, x->string,
                              sc_gen_choice_names(gp, list, sizeof list));
        } else if (cJSON_IsBool(x))
            v = cJSON_IsTrue(x) ? 1 : 0;
        else if (cJSON_IsNumber(x) && isfinite(x->valuedouble))
            v = x->valuedouble;
        else
            return sc_err(err, SC_EPARSE, "%s: %s.%.64s: must be a number or a boolean", f,
                          path, x->string);
        names[n] = x->string;
        vals[n++] = v;
        const char *a = NULL;
        for (size_t k = 0; k < SC_ARRAY_LEN(abbr); k++)
            if (!strcmp(abbr[k].key, x->string))
                a = abbr[k].abbr;
        if (gp && gp->choices) {
            desc_add(r->model_desc, sizeof r->model_desc, " %s", x->valuestring);
        } else if (cJSON_IsBool(x)) {
            if (v)
                desc_add(r->model_desc, sizeof r->model_desc, " %s", x->string);
        } else if (a)
            desc_add(r->model_desc, sizeof r->model_desc, " %s%.10g", a, v);
        else
            desc_add(r->model_desc, sizeof r->model_desc, " %s=%.10g", x->string, v);
    }
    st = sc_gen_run(g, r->id, (sc_dtype)dtype, n, names, vals, &r->model, err);
    if (st)
        sc_err_prefix(err, "%s: %s", f, path);
    return st;
}

static sc_status load_layout(const sc_val_suite *s, sc_val_row *r, const cJSON *o, sc_error *err)
{
    static const char *const keys[] = {"dp", "cp", "tp", "pp", "v", "schedule", "zero", "recompute",
                                       "sp", "attention", "attention_kernel", "framework",
                                       "mbs", "global_batch", "tp_comm_overlap",
                                       "overlap_param_gather", "overlap_p2p_comm",
                                       "defer_embedding_wgrad_compute", "wgrad_deferral_limit",
                                       "overlap_grad_reduce", "grad_reduce_in_fp32", "fp8", NULL};
    const char *f = s->file;
    char path[48];
    snprintf(path, sizeof path, "%s.layout", r->path);
    if (!cJSON_IsObject(o))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", f, path);
    long dp = 0, cp = 1, tp = 0, pp = 0, v = 1, zero = 0, mbs = 0, gb = 0;
    const char *rc = NULL;
    sc_status st = sc_json_keys(o, f, path, keys, err);
    if (!st)
        st = sc_json_int(o, f, path, "dp", 1, 1, 1L << 20, &dp, err);
    if (!st)
        st = sc_json_int(o, f, path, "cp", 0, 1, 4096, &cp, err);
    if (!st)
        st = sc_json_int(o, f, path, "tp", 1, 1, 4096, &tp, err);
    if (!st)
        st = sc_json_int(o, f, path, "pp", 1, 1, 4096, &pp, err);
    if (!st)
        st = sc_json_int(o, f, path, "v", 0, 1, 64, &v, err);
    if (!st)
        st = sc_json_int(o, f, path, "zero", 0, 0, 3, &zero, err);
    if (!st)
        st = sc_json_int(o, f, path, "mbs", 1, 1, 1L << 16, &mbs, err);
    if (!st)
        st = sc_json_int(o, f, path, "global_batch", 1, 1, 1L << 30, &gb, err);
    if (!st)
        st = text(o, f, path, "recompute", 1, 16, &rc, err);
    if (!st)
        st = sc_json_bool(o, f, path, "sp", 0, &r->sp, err);
    r->tp_comm_overlap = r->overlap_param_gather = 0;
    if (!st)
        st = sc_json_bool(o, f, path, "tp_comm_overlap", 0, &r->tp_comm_overlap, err);
    if (!st)
        st = sc_json_bool(o, f, path, "overlap_param_gather", 0, &r->overlap_param_gather, err);
    r->overlap_p2p_comm = 1;
    if (!st)
        st = sc_json_bool(o, f, path, "overlap_p2p_comm", 0, &r->overlap_p2p_comm, err);
    r->overlap_grad_reduce = 1;
    if (!st)
        st = sc_json_bool(o, f, path, "overlap_grad_reduce", 0, &r->overlap_grad_reduce, err);
    r->grad_reduce_in_fp32 = 0;
    if (!st)
        st = sc_json_bool(o, f, path, "grad_reduce_in_fp32", 0, &r->grad_reduce_in_fp32, err);
    r->fp8 = 0;
    if (!st)
        st = sc_json_bool(o, f, path, "fp8", 0, &r->fp8, err);
    r->defer_embedding_wgrad = 0;
    if (!st)
        st = sc_json_bool(o, f, path, "defer_embedding_wgrad_compute", 0,
                          &r->defer_embedding_wgrad, err);
    long lim = 0;
    if (!st)
        st = sc_json_int(o, f, path, "wgrad_deferral_limit", 0, 0, 1000000, &lim, err);
    r->wgrad_deferral_limit = (int)lim;
    const char *at = NULL;
    if (!st)
        st = text(o, f, path, "attention", 0, 16, &at, err);
    r->attn = SC_ATTN_UNFUSED;
    if (!st && at) {
        int a = sc_attn_parse(at);
        if (a < 0)
            return sc_err(err, SC_EINVAL, "%s: %s.attention: \"%s\" is not unfused or flash", f,
                          path, at);
        r->attn = (sc_attn)a;
    }
    r->attn_kernel = NULL;
    if (!st)
        st = text(o, f, path, "attention_kernel", 0, 16, &r->attn_kernel, err);
    if (!st && r->attn_kernel) {
        if (!sc_cluster_flash_kernel_known(r->attn_kernel))
            return sc_err(err, SC_EINVAL, "%s: %s.attention_kernel: \"%s\" is not %s", f, path,
                          r->attn_kernel, sc_cluster_flash_kernels());
        if (r->attn != SC_ATTN_FLASH)
            return sc_err(err, SC_EINVAL,
                          "%s: %s.attention_kernel: needs \"attention\": \"flash\" (unfused "
                          "attention runs no fused kernel)", f, path);
    }
    r->framework = NULL;
    if (!st)
        st = text(o, f, path, "framework", 0, 16, &r->framework, err);
    if (!st && r->framework && !sc_overhead_find(r->framework))
        return sc_err(err, SC_EINVAL,
                      "%s: %s.framework: \"%s\" is not megatron, deepspeed or torch", f, path,
                      r->framework);
    r->schedule = v > 1 ? "interleaved" : "1f1b";
    if (!st)
        st = text(o, f, path, "schedule", 0, 16, &r->schedule, err);
    if (st)
        return st;
    int rcv = sc_recompute_parse(rc);
    if (rcv < 0)
        return sc_err(err, SC_EINVAL, "%s: %s.recompute: \"%s\" is not none, selective or full",
                      f, path, rc);
    r->recompute = (sc_recompute)rcv;
    r->dp = (int)dp;
    r->cp = (int)cp;
    r->tp = (int)tp;
    r->pp = (int)pp;
    r->v = (int)v;
    r->zero = (int)zero;
    r->mbs = (int)mbs;
    r->global_batch = gb;
    if (gb % (dp * mbs))
        return sc_err(err, SC_EINVAL,
                      "%s: %s.global_batch: %ld is not divisible by dp·mbs = %ld·%ld", f, path, gb,
                      dp, mbs);
    long m = gb / (dp * mbs);
    if (m > 1L << 16)
        return sc_err(err, SC_EINVAL, "%s: %s.global_batch: %ld microbatches per replica (at "
                      "most 65536)", f, path, m);
    r->m = (int)m;
    int il = !strcmp(r->schedule, "interleaved");
    if (il && v < 2)
        return sc_err(err, SC_EINVAL, "%s: %s.v: the interleaved schedule needs v >= 2 chunks "
                      "per rank", f, path);
    if (!il && v != 1)
        return sc_err(err, SC_EINVAL, "%s: %s.v: %ld chunks per rank need the interleaved "
                      "schedule, not %s", f, path, v, r->schedule);
    if (il && m % pp)
        return sc_err(err, SC_EINVAL,
                      "%s: %s.global_batch: the interleaved schedule needs the microbatches per "
                      "replica (%ld = %ld / (dp·mbs)) to be a multiple of pp = %ld", f, path, m,
                      gb, pp);
    if (r->sp && tp < 2)
        return sc_err(err, SC_EINVAL, "%s: %s.sp: sequence parallelism needs tp >= 2", f, path);
    const char *dwhy = sc_step_defer_why(r->defer_embedding_wgrad, (int)pp);
    if (dwhy)
        return sc_err(err, SC_EINVAL, "%s: %s.defer_embedding_wgrad_compute: %s", f, path, dwhy);
    const char *okey, *owhy = sc_step_overlap_why(r->sp, (int)zero, r->overlap_grad_reduce,
                                                  r->tp_comm_overlap,
                                                  r->overlap_param_gather, &okey);
    if (owhy)
        return sc_err(err, SC_EINVAL, "%s: %s.%s: %s", f, path, okey, owhy);
    sc_error te;
    if (sc_cost_tp_check(r->model, r->tp, &te))
        return sc_err(err, SC_EINVAL, "%s: %s.tp: %s", f, path, te.msg);
    int layers = sc_partition_layers(r->model);
    if (pp * v > layers)
        return sc_err(err, SC_EINVAL, "%s: %s.pp: pp·v = %ld stages, but the model has %d layers",
                      f, path, pp * v, layers);
    return SC_OK;
}

/* The row's network (cluster.network) in place of its preset's: the NICs a
 * node and each one's rate; the preset's fitted collective efficiencies are
 * kept. The cluster is renamed PRESET@NxGG so that the reports keep such rows
 * apart from the preset's own. */
static void row_network(const sc_val_row *r, sc_cluster *cl)
{
    if (!r->net_nics)
        return;
    cl->inter.nics_per_node = r->net_nics;
    cl->inter.nic_bytes_per_s = r->net_nic_gbps * 1e9 / 8;
    snprintf(cl->name, sizeof cl->name, "%s@%dx%gG", r->preset, r->net_nics, r->net_nic_gbps);
}

static sc_status load_cluster(const sc_val_suite *s, sc_val_row *r, const cJSON *o,
                              sc_cluster *cl, sc_error *err)
{
    static const char *const keys[] = {"preset", "nodes", "network", NULL};
    static const char *const net_keys[] = {"nics_per_node", "nic_gbps", NULL};
    const char *f = s->file;
    char path[48], npath[64];
    snprintf(path, sizeof path, "%s.cluster", r->path);
    snprintf(npath, sizeof npath, "%s.network", path);
    if (!cJSON_IsObject(o))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", f, path);
    long nodes = 0, nics = 0;
    const cJSON *net = NULL;
    sc_status st = sc_json_keys(o, f, path, keys, err);
    if (!st)
        st = text(o, f, path, "preset", 1, 64, &r->preset, err);
    if (!st)
        st = sc_json_int(o, f, path, "nodes", 1, 1, SC_CLUSTER_MAX_NODES, &nodes, err);
    if (!st)
        st = sc_json_obj(o, f, path, "network", 0, &net, err);
    if (!st && net && !(st = sc_json_keys(net, f, npath, net_keys, err)) &&
        !(st = sc_json_int(net, f, npath, "nics_per_node", 1, 1, 64, &nics, err)))
        st = sc_json_num(net, f, npath, "nic_gbps", 1, 1, 1e5, &r->net_nic_gbps, err);
    if (st)
        return st;
    r->net_nics = (int)nics;
    if (net && !r->approximate)
        return sc_err(err, SC_EINVAL, "%s: %s: a row on another network than its preset's must "
                      "be marked approximate (the preset's fitted collective efficiencies are "
                      "kept)", f, npath);
    if (sc_cluster_preset_get(r->preset, cl, NULL) != SC_OK)
        return sc_err(err, SC_ENOTFOUND, "%s: %s.preset: \"%s\" is not a preset (stagecraft "
                      "cluster list)", f, path, r->preset);
    row_network(r, cl);
    if (sc_cluster_set_nodes(cl, nodes, err)) {
        sc_err_prefix(err, "%s: %s.nodes", f, path);
        return err ? err->status : SC_EINVAL;
    }
    r->nodes = (int)nodes;
    long ranks = (long)r->dp * r->cp * r->tp * r->pp;
    if (ranks > sc_cluster_total_gpus(cl))
        return sc_err(err, SC_EINVAL, "%s: %s.nodes: dp·cp·tp·pp = %ld ranks, but %ld nodes of "
                      "%s have %ld GPUs", f, path, ranks, nodes, r->preset,
                      sc_cluster_total_gpus(cl));
    sc_error ke;
    if (r->attn_kernel && sc_cluster_flash_kernel(cl, r->attn_kernel, &ke))
        return sc_err(err, SC_EINVAL, "%s: %s.layout.attention_kernel: %s", f, r->path, ke.msg);
    return SC_OK;
}

static sc_status load_measured(const sc_val_suite *s, sc_val_row *r, const cJSON *o,
                               sc_error *err)
{
    static const char *const keys[] = {"iteration_s", "tokens_per_s", "tflops_per_gpu",
                                       "formula", "flops", "params", NULL};
    static const char *const kinds[] = {"iteration_s", "tokens_per_s", "tflops_per_gpu"};
    static const double hi[] = {1e7, 1e15, 1e5};
    const char *f = s->file;
    char path[48];
    snprintf(path, sizeof path, "%s.measured", r->path);
    if (!cJSON_IsObject(o))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", f, path);
    sc_status st = sc_json_keys(o, f, path, keys, err);
    if (st)
        return st;
    int found = -1;
    for (int k = 0; k < 3; k++) {
        if (!cJSON_GetObjectItemCaseSensitive(o, kinds[k]))
            continue;
        if (found >= 0)
            return sc_err(err, SC_EINVAL, "%s: %s: give one of iteration_s, tokens_per_s and "
                          "tflops_per_gpu, not both %s and %s", f, path, kinds[found], kinds[k]);
        found = k;
    }
    if (found < 0)
        return sc_err(err, SC_EPARSE, "%s: %s: missing iteration_s, tokens_per_s or "
                      "tflops_per_gpu", f, path);
    st = sc_json_num(o, f, path, kinds[found], 1, 1e-9, hi[found], &r->value, err);
    if (!st)
        st = text(o, f, path, "formula", found != SC_VAL_ITERATION_S, MAX_TEXT, &r->formula, err);
    if (!st)
        st = text(o, f, path, "flops", found == SC_VAL_TFLOPS, 32, &r->flops, err);
    if (!st)
        st = sc_json_num(o, f, path, "params", 0, 1, 1e15, &r->params, err);
    if (st)
        return st;
    r->kind = (sc_val_kind)found;
    if (found != SC_VAL_TFLOPS && (r->flops || r->params > 0))
        return sc_err(err, SC_EINVAL, "%s: %s: flops and params belong with tflops_per_gpu", f,
                      path);
    double B = (double)r->global_batch, seq = r->model->seq_len;
    if (found == SC_VAL_ITERATION_S) {
        r->measured_s = r->value;
    } else if (found == SC_VAL_TOKENS_PER_S) {
        r->measured_s = B * seq / r->value;
    } else {
        double l = sc_partition_layers(r->model), h = first_dim(r->model, "hidden");
        double V = first_dim(r->model, "vocab"), F;
        int full = !strcmp(r->flops, "megatron-full-recompute");
        int nd = !strcmp(r->flops, "6nd"), nd_attn = !strcmp(r->flops, "6nd-attn");
        if (nd || nd_attn) {
            if (!(r->params > 0))
                return sc_err(err, SC_EPARSE, "%s: %s.params: missing (%s counts 6·params "
                              "FLOPs per token)", f, path, r->flops);
            if (nd_attn && !(l > 0 && h > 0))
                return sc_err(err, SC_EINVAL, "%s: %s.flops: the model has no layers or "
                              "hidden size for 6nd-attn's attention term", f, path);
            /* Dao 2023, section 4.2: 6·s·N + 12·l·h·s² a sequence, the
             * attention term not halved for the causal mask */
            F = 6 * r->params * B * seq + (nd_attn ? 12 * l * h * B * seq * seq : 0);
        } else if (full || !strcmp(r->flops, "megatron")) {
            if (!(h > 0 && V > 0))
                return sc_err(err, SC_EINVAL, "%s: %s.flops: the model has no hidden size or "
                              "vocabulary for Megatron-LM's formula", f, path);
            F = (full ? 96 : 72) * B * seq * l * h * h *
                (1 + seq / (6 * h) + V / (16 * l * h));
        } else {
            return sc_err(err, SC_EINVAL, "%s: %s.flops: \"%s\" is not megatron, "
                          "megatron-full-recompute, 6nd or 6nd-attn", f, path, r->flops);
        }
        if (r->params > 0 && !nd && !nd_attn)
            return sc_err(err, SC_EINVAL, "%s: %s.params: only 6nd and 6nd-attn take params",
                          f, path);
        r->measured_s = F / (r->value * 1e12 * (double)r->dp * r->cp * r->tp * r->pp);
    }
    return SC_OK;
}

static void row_cfg(const sc_val_row *r, sc_step_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->dp = r->dp;
    cfg->cp = r->cp > 1 ? r->cp : 0;
    cfg->tp = r->tp;
    cfg->pp = r->pp;
    cfg->v = r->v;
    cfg->m = r->m;
    cfg->mbs = r->mbs;
    cfg->schedule = r->schedule;
    cfg->zero = r->zero;
    cfg->recompute = r->recompute;
    cfg->sp = r->sp;
    cfg->tp_comm_overlap = r->tp_comm_overlap;
    cfg->overlap_param_gather = r->overlap_param_gather;
    cfg->no_overlap_p2p_comm = !r->overlap_p2p_comm;
    cfg->defer_embedding_wgrad = r->defer_embedding_wgrad;
    cfg->no_overlap_grad_reduce = !r->overlap_grad_reduce;
    cfg->grad_reduce_in_fp32 = r->grad_reduce_in_fp32;
    cfg->fp8 = r->fp8;
    cfg->wgrad_deferral_limit = r->wgrad_deferral_limit;
    cfg->attn = r->attn;
    cfg->one_replica = 1;
}

static sc_status load_row(sc_val_suite *s, int i, const cJSON *x, sc_error *err)
{
    static const char *const keys[] = {"id", "source", "where", "hardware", "software",
                                       "approximate", "assumptions", "note", "model", "layout",
                                       "cluster", "measured", NULL};
    const char *f = s->file;
    sc_val_row *r = &s->rows[i];
    snprintf(r->path, sizeof r->path, "rows[%d]", i);
    const char *p = r->path, *src = NULL;
    if (!cJSON_IsObject(x))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", f, p);
    const cJSON *mo = NULL, *lo = NULL, *co = NULL, *me = NULL;
    sc_status st = sc_json_keys(x, f, p, keys, err);
    if (!st)
        st = text(x, f, p, "id", 1, 64, &r->id, err);
    if (!st)
        st = text(x, f, p, "source", 1, 64, &src, err);
    if (!st)
        st = text(x, f, p, "where", 1, 1000, &r->where, err);
    if (!st)
        st = text(x, f, p, "hardware", 1, 500, &r->hardware, err);
    if (!st)
        st = text(x, f, p, "software", 1, 500, &r->software, err);
    if (!st)
        st = sc_json_bool(x, f, p, "approximate", 0, &r->approximate, err);
    if (!st)
        st = text(x, f, p, "assumptions", 0, MAX_TEXT, &r->assumptions, err);
    if (!st)
        st = text(x, f, p, "note", 0, MAX_TEXT, &r->note, err);
    if (!st)
        st = sc_json_obj(x, f, p, "model", 1, &mo, err);
    if (!st)
        st = sc_json_obj(x, f, p, "layout", 1, &lo, err);
    if (!st)
        st = sc_json_obj(x, f, p, "cluster", 1, &co, err);
    if (!st)
        st = sc_json_obj(x, f, p, "measured", 1, &me, err);
    if (st)
        return st;
    for (int j = 0; j < i; j++)
        if (!strcmp(s->rows[j].id, r->id))
            return sc_err(err, SC_EINVAL, "%s: %s.id: \"%s\" is also rows[%d].id", f, p, r->id,
                          j);
    for (int j = 0; j < s->n_sources && !r->source; j++)
        if (!strcmp(s->sources[j].id, src))
            r->source = &s->sources[j];
    if (!r->source)
        return sc_err(err, SC_EINVAL, "%s: %s.source: \"%s\" is not one of sources[].id", f, p,
                      src);
    if (r->assumptions && !r->approximate)
        return sc_err(err, SC_EINVAL, "%s: %s.approximate: a row with assumptions must be "
                      "marked approximate", f, p);
    sc_cluster cl;
    if ((st = load_model(s, r, mo, err)) || (st = load_layout(s, r, lo, err)) ||
        (st = load_cluster(s, r, co, &cl, err)) || (st = load_measured(s, r, me, err)))
        return st;
    sc_step_cfg cfg;
    row_cfg(r, &cfg);
    if ((st = sc_step_check(r->model, &cl, &cfg, err))) {
        sc_err_prefix(err, "%s: %s.layout", f, p);
        return st;
    }
    return SC_OK;
}

/* ---- suites --------------------------------------------------------------------- */

void sc_val_free(sc_val_suite *s)
{
    if (!s)
        return;
    for (int i = 0; s->rows && i < s->n; i++)
        sc_model_free(s->rows[i].model);
    sc_free(s->rows);
    sc_free(s->sources);
    sc_free(s->file);
    cJSON_Delete(s->json);
    sc_free(s);
}

sc_status sc_val_load(const char *file, sc_val_suite **out, sc_error *err)
{
    static const char *const keys[] = {"format", "name", "description", "sources", "rows", NULL};
    *out = NULL;
    cJSON *j = NULL;
    sc_status st = sc_json_load(file, &j, err);
    if (st)
        return st;
    sc_val_suite *s = sc_calloc(1, sizeof *s);
    if (!s || !(s->file = sc_strdup(file))) {
        sc_free(s);
        cJSON_Delete(j);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    s->json = j;
    const cJSON *src = NULL, *rows = NULL;
    st = sc_json_format(j, file, SC_VAL_FORMAT, err);
    if (!st)
        st = sc_json_keys(j, file, "", keys, err);
    if (!st)
        st = text(j, file, "", "name", 1, 64, &s->name, err);
    if (!st)
        st = text(j, file, "", "description", 0, MAX_TEXT, &s->description, err);
    if (!st)
        st = sc_json_arr(j, file, "", "sources", 1, &src, err);
    if (!st)
        st = sc_json_arr(j, file, "", "rows", 1, &rows, err);
    if (!st)
        st = load_sources(s, src, err);
    if (!st) {
        int n = cJSON_GetArraySize(rows);
        if (n < 1 || n > MAX_ROWS)
            st = sc_err(err, SC_EINVAL, "%s: rows: %d rows (1 to %d)", file, n, MAX_ROWS);
        else if (!(s->rows = sc_calloc((size_t)n, sizeof *s->rows)))
            st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
        else
            s->n = n;
    }
    int i = 0;
    for (const cJSON *x = rows ? rows->child : NULL; x && !st; x = x->next, i++)
        st = load_row(s, i, x, err);
    if (st) {
        sc_val_free(s);
        return st;
    }
    *out = s;
    return SC_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void sc_val_paths_free(char **paths, int n)
{
    for (int i = 0; paths && i < n; i++)
        sc_free(paths[i]);
    sc_free(paths);
}

sc_status sc_val_list(const char *dir, char ***paths, int *n, sc_error *err)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return sc_err(err, SC_EIO, "%s: cannot read the folder", dir);
    char **v = NULL;
    int k = 0, cap = 0;
    sc_status st = SC_OK;
    struct dirent *e;
    while ((e = readdir(d)) && !st) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        if (k == cap) {
            int nc = cap ? 2 * cap : 16;
            char **nv = sc_realloc(v, sizeof *nv * (size_t)nc);
            if (!nv) {
                st = sc_err(err, SC_ENOMEM, "%s: out of memory", dir);
                break;
            }
            v = nv;
            cap = nc;
        }
        size_t need = strlen(dir) + l + 2;
        if (!(v[k] = sc_malloc(need))) {
            st = sc_err(err, SC_ENOMEM, "%s: out of memory", dir);
            break;
        }
        snprintf(v[k++], need, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (!st && !k)
        st = sc_err(err, SC_ENOTFOUND, "%s: no suite files (*.json)", dir);
    if (st) {
        sc_val_paths_free(v, k);
        return st;
    }
    qsort(v, (size_t)k, sizeof *v, by_name);
    *paths = v;
    *n = k;
    return SC_OK;
}

/* ---- running ---------------------------------------------------------------------- */

sc_status sc_val_run_row(const sc_val_suite *s, int i, const sc_val_opts *o,
                         sc_val_result *out, sc_error *err)
{
    const char *cluster_override = o ? o->cluster_override : NULL;
    const sc_val_row *r = &s->rows[i];
    memset(out, 0, sizeof *out);
    sc_cluster cl;
    long ranks = (long)r->dp * r->cp * r->tp * r->pp;
    sc_status st;
    if (cluster_override) {
        if ((st = sc_cluster_open(cluster_override, &cl, err)))
            return st;
        long nodes = (ranks + cl.gpus_per_node - 1) / cl.gpus_per_node;
        st = sc_cluster_set_nodes(&cl, nodes, err);
    } else {
        st = sc_cluster_preset_get(r->preset, &cl, err);
        if (!st) {
            row_network(r, &cl);
            st = sc_cluster_set_nodes(&cl, r->nodes, err);
        }
    }
    if (st) {
        sc_err_prefix(err, "%s: %s.cluster", s->file, r->path);
        return st;
    }
    /* the attention kernel the run used, at its published rates on this GPU */
    if (r->attn_kernel && (st = sc_cluster_flash_kernel(&cl, r->attn_kernel, err))) {
        sc_err_prefix(err, "%s: %s.layout.attention_kernel", s->file, r->path);
        return st;
    }
    /* the framework's overhead (overhead.h): the table's, or the fit's trial */
    double oh = 0;
    const sc_overhead *ov = sc_overhead_find(r->framework);
    if (ov && !(o && o->no_overhead))
        oh = o && o->trial_framework && !strcmp(o->trial_framework, ov->framework)
                 ? o->trial_overhead
                 : ov->compute;
    if ((st = sc_overhead_set(&cl, ov ? ov->framework : NULL, oh, err))) {
        sc_err_prefix(err, "%s: %s.layout.framework", s->file, r->path);
        return st;
    }
    sc_step_cfg cfg;
    row_cfg(r, &cfg);
    sc_step_result *res = NULL;
    if ((st = sc_step_simulate(r->model, &cl, &cfg, &res, err))) {
        sc_err_prefix(err, "%s: %s", s->file, r->path);
        return st;
    }
    out->predicted_s = res->step_time_s;
    /* the planner's analytical estimate of the same layout on the same cluster
     * (estimate.c), beside the simulator it stands in for during a search */
    sc_estimate est;
    sc_error eerr;
    out->estimate_s = sc_estimate_step(r->model, &cl, &cfg, &est, &eerr) == SC_OK ? est.step_s : 0;
    out->measured_s = r->measured_s;
    out->error = (res->step_time_s - r->measured_s) / r->measured_s;
    out->gpus = (int)ranks;
    out->nodes = cl.nodes;
    out->fits = res->fits;
    out->gpu_mem_bytes = cl.gpu.memory_bytes;
    out->peak_mem_bytes = sc_step_peak_mem(res);
    out->overhead = oh;
    out->breakdown = res->breakdown;
    for (int k = 0; k < res->n_links; k++)
        if (res->links[k].busy_fraction > out->busiest_busy) {
            out->busiest_busy = res->links[k].busy_fraction;
            snprintf(out->busiest_link, sizeof out->busiest_link, "%s", res->links[k].name);
        }
    snprintf(out->cluster, sizeof out->cluster, "%s", cl.name);
    sc_step_result_free(res);
    return SC_OK;
}

const char *sc_val_row_attention(const sc_val_row *w, const char *preset)
{
    sc_cluster c;
    const char *k = NULL;
    if (w->attn != SC_ATTN_FLASH)
        return "unfused";
    if (w->attn_kernel)
        return w->attn_kernel;
    if (preset && sc_cluster_preset_get(preset, &c, NULL) == SC_OK)
        k = sc_label_attention(&c, 1);
    return k ? k : "flash";
}

void sc_val_stats_of(const double *errors, int n, sc_val_stats *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    for (int i = 0; i < n; i++) {
        double a = fabs(errors[i]);
        out->mape += a;
        out->mean_signed += errors[i];
        if (a > out->max_abs)
            out->max_abs = a;
    }
    if (n) {
        out->mape /= n;
        out->mean_signed /= n;
    }
}

/* Mean ranks (1-based) of x[0..n) into r. O(n^2): a group is a few rows. */
static void ranks(const double *x, int n, double *r)
{
    for (int i = 0; i < n; i++) {
        int below = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            below += x[j] < x[i];
            equal += x[j] == x[i];
        }
        r[i] = below + (equal + 1) / 2.0;
    }
}

double sc_val_spearman(const double *a, const double *b, int n)
{
    if (n < 2 || n > 4096)
        return NAN;
    double ra[4096], rb[4096];
    ranks(a, n, ra);
    ranks(b, n, rb);
    double ma = 0, mb = 0;
    for (int i = 0; i < n; i++) {
        ma += ra[i] / n;
        mb += rb[i] / n;
    }
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

int sc_val_targets_met(const sc_val_stats *st)
{
    return st->n > 0 && st->mape <= SC_VAL_TARGET_MAPE && st->max_abs <= SC_VAL_TARGET_MAX_ABS &&
           fabs(st->mean_signed) <= SC_VAL_TARGET_BIAS;
}

void sc_val_mark_halves(sc_val_suite *const *s, int n)
{
    int no;
    const sc_overhead *ovs = sc_overheads(&no);
    for (int k = 0; k < no; k++) {
        int idx = 0;
        for (int i = 0; i < n; i++)
            for (int r = 0; r < s[i]->n; r++) {
                sc_val_row *row = &s[i]->rows[r];
                if (row->framework && !strcmp(row->framework, ovs[k].framework))
                    row->fit_half = idx++ % 2 == 0;
            }
    }
}

void sc_val_copy_halves(sc_val_suite *const *s, int n, sc_val_suite *const *ref, int nref)
{
    for (int i = 0; i < n; i++) {
        const sc_val_suite *same = NULL;
        for (int j = 0; j < nref && !same; j++)
            if (ref[j] && !strcmp(ref[j]->name, s[i]->name))
                same = ref[j];
        for (int r = 0; r < s[i]->n; r++) {
            sc_val_row *row = &s[i]->rows[r];
            row->fit_half = 0;
            for (int k = 0; same && k < same->n; k++)
                if (!strcmp(same->rows[k].id, row->id)) {
                    row->fit_half = same->rows[k].fit_half;
                    break;
                }
        }
    }
}

/* Mean signed error of fw's fit-half rows with overhead x. */
static sc_status fit_half_bias(sc_val_suite *const *s, int n, const char *fw, double x,
                               double *bias, int *rows, sc_error *err)
{
    sc_val_opts o = {.trial_framework = fw, .trial_overhead = x};
    double sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < s[i]->n; r++) {
            const sc_val_row *row = &s[i]->rows[r];
            if (!row->fit_half || !row->framework || strcmp(row->framework, fw))
                continue;
            sc_val_result res;
            sc_status st = sc_val_run_row(s[i], r, &o, &res, err);
            if (st)
                return st;
            sum += res.error;
            k++;
        }
    *rows = k;
    *bias = k ? sum / k : 0;
    return SC_OK;
}

sc_status sc_val_fit_overhead(sc_val_suite *const *s, int n, const char *fw, double *frac,
                              int *rows, sc_error *err)
{
    *frac = 0;
    double lo = 0, hi = 3, b;
    sc_status st = fit_half_bias(s, n, fw, lo, &b, rows, err);
    if (st || !*rows || b >= 0)
        return st; /* no rows, or already slower than measured without any */
    double bh;
    int k;
    if ((st = fit_half_bias(s, n, fw, hi, &bh, &k, err)))
        return st;
    if (bh < 0) {
        *frac = hi;
        return SC_OK;
    }
    /* the step grows monotonically with the overhead: bisect the sign change */
    while (hi - lo > 1e-5) {
        double mid = (lo + hi) / 2;
        if ((st = fit_half_bias(s, n, fw, mid, &b, &k, err)))
            return st;
        if (b < 0)
            lo = mid;
        else
            hi = mid;
    }
    *frac = (lo + hi) / 2;
    return SC_OK;
}
