/* cluster.c - load, validate, save the cluster description; see cluster.h. */
#include "cluster.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Ranges: wide enough for any real machine, tight enough to reject typos
 * and keep every product finite. */
#define MAX_BYTES 1e15     /* memory, bytes/s */
#define MAX_FLOPS 1e18     /* FLOP/s, FLOPs */
#define MAX_SECONDS 1.0    /* latencies, alphas, overheads */
#define MAX_PRICE 1e6      /* $/hour per node */
#define MAX_RATE 1e3       /* interruptions per hour */
#define MIN_FRACTION 1e-6  /* efficiencies */
#define MAX_HOST_S_PER_BYTE 1e-6 /* a sender busy 1 us per byte: a 1 MB/s host */
/* Floors: a rate above 0 but below these is a typo or a unit slip, not a
 * machine, and would turn into infinite or meaningless times (1e-300
 * bytes/s: a step of "inf us"); 0 keeps meaning "none" where it did. */
#define MIN_BYTES_PER_S 1e3 /* links, HBM, storage */
#define MIN_FLOPS 1e6       /* a dtype's peak */

static const char *const dtype_keys[SC_DTYPE_N] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
static const char *const link_keys[SC_LINK_N] = {"intra", "inter"};

/* The per-link fit statistics, k = 0 collectives ("intra", "inter"), 1
 * point-to-point ("intra_p2p", ...), 2 the sender's host time ("..._host"),
 * 3 the cold collectives ("..._cold"), 4 the reduce-scatters and all-gathers
 * ("..._ag_rs"). */
#define LINK_FITS 5
static const char *const link_fit_sfx[LINK_FITS] = {"", "_p2p", "_host", "_cold", "_ag_rs"};
static sc_fit_stats *link_fit(sc_cluster_fits *f, int k, int l)
{
    return k == 0 ? &f->link[l] : k == 1 ? &f->link_p2p[l] : k == 2 ? &f->host[l]
                                  : k == 3 ? &f->link_cold[l]
                                           : &f->link_ag_rs[l];
}
static const sc_fit_stats *link_fit_c(const sc_cluster_fits *f, int k, int l)
{
    return link_fit((sc_cluster_fits *)f, k, l);
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* ---- from JSON ------------------------------------------------------------ */

static sc_status read_gpu(const cJSON *g, const char *file, sc_cluster *c, sc_error *err)
{
    static const char *const keys[] = {"name", "memory_bytes", "hbm_bytes_per_s", "peak_flops",
                                       NULL};
    static const char *const pkeys[] = {"fp32", "tf32", "fp16", "bf16", "fp8", NULL};
    sc_status st;
    const char *s = NULL;
    const cJSON *pf;
    if ((st = sc_json_keys(g, file, "gpu", keys, err)) ||
        (st = sc_json_str(g, file, "gpu", "name", 1, SC_CLUSTER_NAME_MAX, &s, err)) ||
        (st = sc_json_num(g, file, "gpu", "memory_bytes", 1, 1, MAX_BYTES, &c->gpu.memory_bytes,
                          err)) ||
        (st = sc_json_num(g, file, "gpu", "hbm_bytes_per_s", 1, 1, MAX_BYTES,
                          &c->gpu.hbm_bytes_per_s, err)) ||
        (st = sc_json_obj(g, file, "gpu", "peak_flops", 1, &pf, err)) ||
        (st = sc_json_keys(pf, file, "gpu.peak_flops", pkeys, err)))
        return st;
    copy_str(c->gpu.name, sizeof c->gpu.name, s);
    for (int d = 0; d < SC_DTYPE_N; d++)
        if ((st = sc_json_num(pf, file, "gpu.peak_flops", dtype_keys[d], 1, 0, MAX_FLOPS,
                              &c->gpu.peak_flops[d], err)))
            return st;
    return SC_OK;
}

static sc_status read_links(const cJSON *root, const char *file, sc_cluster *c, sc_error *err)
{
    static const char *const ikeys[] = {"kind", "bytes_per_s", "latency_s", NULL};
    static const char *const nkeys[] = {"nic_bytes_per_s", "nics_per_node", "latency_s", NULL};
    const cJSON *in, *nw;
    const char *s = NULL;
    long nics = 0;
    sc_status st;
    if ((st = sc_json_obj(root, file, "", "intra", 1, &in, err)) ||
        (st = sc_json_keys(in, file, "intra", ikeys, err)) ||
        (st = sc_json_str(in, file, "intra", "kind", 1, sizeof c->intra.kind - 1, &s, err)) ||
        (st = sc_json_num(in, file, "intra", "bytes_per_s", 1, 0, MAX_BYTES,
                          &c->intra.bytes_per_s, err)) ||
        (st = sc_json_num(in, file, "intra", "latency_s", 1, 0, MAX_SECONDS,
                          &c->intra.latency_s, err)))
        return st;
    copy_str(c->intra.kind, sizeof c->intra.kind, s);
    if ((st = sc_json_obj(root, file, "", "inter", 1, &nw, err)) ||
        (st = sc_json_keys(nw, file, "inter", nkeys, err)) ||
        (st = sc_json_num(nw, file, "inter", "nic_bytes_per_s", 1, 0, MAX_BYTES,
                          &c->inter.nic_bytes_per_s, err)) ||
        (st = sc_json_int(nw, file, "inter", "nics_per_node", 1, 0, 1024, &nics, err)) ||
        (st = sc_json_num(nw, file, "inter", "latency_s", 1, 0, MAX_SECONDS,
                          &c->inter.latency_s, err)))
        return st;
    c->inter.nics_per_node = (int)nics;
    return SC_OK;
}

static sc_status read_price(const cJSON *root, const char *file, sc_cluster *c, sc_error *err)
{
    static const char *const keys[] = {"on_demand_per_hour", "spot_per_hour",
                                       "spot_interruptions_per_hour", NULL};
    const cJSON *p;
    sc_status st;
    if ((st = sc_json_obj(root, file, "", "price", 1, &p, err)) ||
        (st = sc_json_keys(p, file, "price", keys, err)) ||
        (st = sc_json_num(p, file, "price", "on_demand_per_hour", 1, 0, MAX_PRICE,
                          &c->price.on_demand_per_hour, err)) ||
        (st = sc_json_num(p, file, "price", "spot_per_hour", 1, 0, MAX_PRICE,
                          &c->price.spot_per_hour, err)) ||
        (st = sc_json_num(p, file, "price", "spot_interruptions_per_hour", 1, 0, MAX_RATE,
                          &c->price.spot_interruptions_per_hour, err)))
        return st;
    return SC_OK;
}

static sc_status read_stats(const cJSON *o, const char *file, const char *path, sc_fit_stats *s,
                            sc_error *err)
{
    static const char *const keys[] = {"n", "r2", "mape", "rel_sd", "se", NULL};
    long n = 0;
    const cJSON *se;
    sc_status st;
    if ((st = sc_json_keys(o, file, path, keys, err)) ||
        (st = sc_json_int(o, file, path, "n", 1, 0, 100000000L, &n, err)) ||
        (st = sc_json_num(o, file, path, "r2", 1, -1e9, 1, &s->r2, err)) ||
        (st = sc_json_num(o, file, path, "mape", 1, 0, 1e9, &s->mape, err)) ||
        (st = sc_json_num(o, file, path, "rel_sd", 1, 0, 1e9, &s->rel_sd, err)) ||
        (st = sc_json_arr(o, file, path, "se", 1, &se, err)))
        return st;
    if (cJSON_GetArraySize(se) != 2)
        return sc_err(err, SC_EINVAL, "%s: %s.se: must hold 2 numbers", file, path);
    int i = 0;
    for (const cJSON *x = se->child; x; x = x->next, i++) {
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0)
            return sc_err(err, SC_EINVAL, "%s: %s.se[%d]: must be a finite number >= 0", file,
                          path, i);
        s->se[i] = x->valuedouble;
    }
    s->n = (int)n;
    return SC_OK;
}

static sc_status read_fits(const cJSON *o, const char *file, sc_cluster_fits *f, sc_error *err)
{
    static const char *const keys[] = {"date",      "inputs",    "compute",    "op_overhead",
                                       "intra",     "inter",     "intra_p2p",  "inter_p2p",
                                       "intra_host", "inter_host", "intra_cold", "inter_cold",
                                       "intra_ag_rs", "inter_ag_rs", "gates_failed", "gemm",
                                       "overlap", NULL};
    static const char *const ikeys[] = {"file", "digest", NULL};
    const char *date;
    const cJSON *inputs, *comp, *x;
    char path[64];
    sc_status st;
    memset(f, 0, sizeof *f);
    if ((st = sc_json_keys(o, file, "efficiency.fits", keys, err)) ||
        (st = sc_json_str(o, file, "efficiency.fits", "date", 1, sizeof f->date - 1, &date, err)) ||
        (st = sc_json_arr(o, file, "efficiency.fits", "inputs", 1, &inputs, err)) ||
        (st = sc_json_obj(o, file, "efficiency.fits", "compute", 1, &comp, err)))
        return st;
    copy_str(f->date, sizeof f->date, date);
    if (cJSON_GetArraySize(inputs) > SC_CLUSTER_MAX_INPUTS)
        return sc_err(err, SC_EINVAL, "%s: efficiency.fits.inputs: more than %d", file,
                      SC_CLUSTER_MAX_INPUTS);
    for (const cJSON *i = inputs->child; i; i = i->next) {
        const char *fn, *dg;
        snprintf(path, sizeof path, "efficiency.fits.inputs[%d]", f->n_inputs);
        if (!cJSON_IsObject(i))
            return sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
        if ((st = sc_json_keys(i, file, path, ikeys, err)) ||
            (st = sc_json_str(i, file, path, "file", 1, 127, &fn, err)) ||
            (st = sc_json_str(i, file, path, "digest", 1, 16, &dg, err)))
            return st;
        copy_str(f->input[f->n_inputs], sizeof f->input[0], fn);
        copy_str(f->digest[f->n_inputs], sizeof f->digest[0], dg);
        f->n_inputs++;
    }
    static const char *const ckeys[] = {"fp32", "tf32", "fp16", "bf16", "fp8", NULL};
    if ((st = sc_json_keys(comp, file, "efficiency.fits.compute", ckeys, err)))
        return st;
    for (int d = 0; d < SC_DTYPE_N; d++) {
        if ((st = sc_json_obj(comp, file, "efficiency.fits.compute", dtype_keys[d], 0, &x, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.fits.compute.%s", dtype_keys[d]);
        if (x && (st = read_stats(x, file, path, &f->compute[d], err)))
            return st;
    }
    if ((st = sc_json_obj(o, file, "efficiency.fits", "op_overhead", 0, &x, err)) ||
        (x && (st = read_stats(x, file, "efficiency.fits.op_overhead", &f->overhead, err))))
        return st;
    if ((st = sc_json_obj(o, file, "efficiency.fits", "gemm", 0, &x, err)) ||
        (x && (st = read_stats(x, file, "efficiency.fits.gemm", &f->gemm, err))))
        return st;
    if ((st = sc_json_obj(o, file, "efficiency.fits", "overlap", 0, &x, err)) ||
        (x && (st = read_stats(x, file, "efficiency.fits.overlap", &f->overlap, err))))
        return st;
    for (int k = 0; k < LINK_FITS; k++)
        for (int l = 0; l < SC_LINK_N; l++) {
            snprintf(path, sizeof path, "efficiency.fits.%s%s", link_keys[l], link_fit_sfx[k]);
            if ((st = sc_json_obj(o, file, "efficiency.fits", path + strlen("efficiency.fits."),
                                  0, &x, err)) ||
                (x && (st = read_stats(x, file, path, link_fit(f, k, l), err))))
                return st;
        }
    const cJSON *gates;
    if ((st = sc_json_arr(o, file, "efficiency.fits", "gates_failed", 0, &gates, err)))
        return st;
    if (gates && cJSON_GetArraySize(gates) > SC_CLUSTER_MAX_GATES)
        return sc_err(err, SC_EINVAL, "%s: efficiency.fits.gates_failed: more than %d", file,
                      SC_CLUSTER_MAX_GATES);
    for (const cJSON *g = gates ? gates->child : NULL; g; g = g->next) {
        const char *v = cJSON_IsString(g) ? g->valuestring : NULL;
        size_t n = v ? strlen(v) : 0;
        int ctl = 0;
        for (size_t i = 0; i < n; i++)
            ctl |= (unsigned char)v[i] < 0x20;
        if (!v || n == 0 || n >= SC_CLUSTER_GATE_LEN || ctl)
            return sc_err(err, SC_EINVAL,
                          "%s: efficiency.fits.gates_failed[%d]: want a one-line string of 1 to "
                          "%d characters",
                          file, f->n_failed, SC_CLUSTER_GATE_LEN - 1);
        copy_str(f->failed[f->n_failed++], sizeof f->failed[0], v);
    }
    f->present = 1;
    return SC_OK;
}

static void add_stats(cJSON *parent, const char *key, const sc_fit_stats *s, int *oom)
{
    if (s->n <= 0)
        return;
    cJSON *o = sc_jadd_obj(parent, key, oom);
    sc_jadd_num(o, "n", s->n, oom);
    sc_jadd_num(o, "r2", s->r2, oom);
    sc_jadd_num(o, "mape", s->mape, oom);
    sc_jadd_num(o, "rel_sd", s->rel_sd, oom);
    cJSON *se = sc_jadd_arr(o, "se", oom);
    for (int i = 0; i < 2 && se; i++)
        sc_jpush_num(se, s->se[i], oom);
}

static void add_fits(cJSON *e, const sc_cluster_fits *f, int *oom)
{
    cJSON *o = sc_jadd_obj(e, "fits", oom);
    sc_jadd_str(o, "date", f->date, oom);
    cJSON *in = sc_jadd_arr(o, "inputs", oom);
    for (int i = 0; i < f->n_inputs && in; i++) {
        cJSON *x = sc_jpush_obj(in, oom);
        if (!x)
            break;
        sc_jadd_str(x, "file", f->input[i], oom);
        sc_jadd_str(x, "digest", f->digest[i], oom);
    }
    cJSON *comp = sc_jadd_obj(o, "compute", oom);
    for (int d = 0; d < SC_DTYPE_N; d++)
        add_stats(comp, dtype_keys[d], &f->compute[d], oom);
    add_stats(o, "op_overhead", &f->overhead, oom);
    add_stats(o, "gemm", &f->gemm, oom);
    add_stats(o, "overlap", &f->overlap, oom);
    for (int k = 0; k < LINK_FITS; k++)
        for (int l = 0; l < SC_LINK_N; l++) {
            char key[16];
            snprintf(key, sizeof key, "%s%s", link_keys[l], link_fit_sfx[k]);
            add_stats(o, key, link_fit_c(f, k, l), oom);
        }
    if (f->n_failed > 0) {
        cJSON *g = sc_jadd_arr(o, "gates_failed", oom);
        for (int i = 0; g && i < f->n_failed; i++)
            sc_jpush_str(g, f->failed[i], oom);
    }
}

/* ---- efficiency.gemm: the kernel-level compute model ---------------------- */

static sc_status range(const char *file, const char *path, double v, double lo, double hi,
                       sc_error *err);

/* flash_s0 in tokens; flash_full, flash_hd64: a kernel without the mask or
 * at head size 64 at most this many times as fast (the benchmarks: 0.87-1.19) */
#define MAX_FLASH_S0 1e6
#define MAX_FLASH_FULL 4

/* efficiency.gemm.flash_head_sizes: 1 to SC_FLASH_HEADS_MAX integers in
 * [1, SC_FLASH_HEAD_MAX], strictly increasing */
static sc_status check_flash_heads(const sc_cluster_gemm *g, const char *file, sc_error *err)
{
    const char *p = "efficiency.gemm.flash_head_sizes";
    if (g->n_flash_heads < 0 || g->n_flash_heads > SC_FLASH_HEADS_MAX)
        return sc_err(err, SC_EINVAL, "%s: %s: %d head sizes is out of range [1, %d]", file, p,
                      g->n_flash_heads, SC_FLASH_HEADS_MAX);
    for (int i = 0; i < g->n_flash_heads; i++) {
        int h = g->flash_heads[i];
        if (h < 1 || h > SC_FLASH_HEAD_MAX)
            return sc_err(err, SC_EINVAL, "%s: %s[%d]: %d is out of range [1, %d]", file, p, i,
                          h, SC_FLASH_HEAD_MAX);
        if (i > 0 && h <= g->flash_heads[i - 1])
            return sc_err(err, SC_EINVAL,
                          "%s: %s[%d]: %d does not exceed the size before it (%d): the list "
                          "must increase", file, p, i, h, g->flash_heads[i - 1]);
    }
    return SC_OK;
}

static sc_status read_flash_heads(const cJSON *o, const char *file, sc_cluster_gemm *x,
                                  sc_error *err)
{
    const char *p = "efficiency.gemm";
    const cJSON *a;
    x->n_flash_heads = 0;
    sc_status st = sc_json_arr(o, file, p, "flash_head_sizes", 0, &a, err);
    if (st || !a)
        return st;
    int n = cJSON_GetArraySize(a);
    if (n < 1 || n > SC_FLASH_HEADS_MAX)
        return sc_err(err, SC_EINVAL, "%s: %s.flash_head_sizes: %d head sizes is out of range "
                      "[1, %d]", file, p, n, SC_FLASH_HEADS_MAX);
    int i = 0;
    for (const cJSON *q = a->child; q; q = q->next, i++) {
        double v = cJSON_IsNumber(q) ? q->valuedouble : -1;
        if (!cJSON_IsNumber(q) || v != floor(v) || v < 1 || v > SC_FLASH_HEAD_MAX)
            return sc_err(err, SC_EINVAL, "%s: %s.flash_head_sizes[%d]: must be an integer in "
                          "[1, %d]", file, p, i, SC_FLASH_HEAD_MAX);
        x->flash_heads[i] = (int)v;
    }
    x->n_flash_heads = n;
    if ((st = check_flash_heads(x, file, err)))
        x->n_flash_heads = 0;
    return st;
}

static sc_status read_gemm(const cJSON *e, const char *file, sc_cluster_gemm *g, sc_error *err)
{
    static const char *const keys[] = {"sms",      "eff_max",   "eff_max_fp8", "tile_m", "tile_n",
                                       "k_half",
                                       "kernel_s", "flash_fwd", "flash_bwd", "sustained",
                                       "flash_s0", "flash_s0_full", "flash_full", "flash_hd64",
                                       "flash_s0_bwd", "flash_s0_full_bwd",
                                       "flash_head_sizes", NULL};
    const cJSON *o;
    const char *p = "efficiency.gemm";
    long sms = 0;
    sc_cluster_gemm x = {0};
    sc_status st = sc_json_obj(e, file, "efficiency", "gemm", 0, &o, err);
    if (st || !o) {
        *g = x;
        return st;
    }
    if ((st = sc_json_keys(o, file, p, keys, err)) ||
        (st = sc_json_int(o, file, p, "sms", 1, 1, 100000, &sms, err)) ||
        (st = sc_json_num(o, file, p, "eff_max", 1, MIN_FRACTION, 1, &x.eff_max, err)) ||
        (st = sc_json_num(o, file, p, "tile_m", 1, 1, 4096, &x.tile_m, err)) ||
        (st = sc_json_num(o, file, p, "tile_n", 1, 1, 4096, &x.tile_n, err)) ||
        (st = sc_json_num(o, file, p, "k_half", 1, 0, 1e6, &x.k_half, err)) ||
        (st = sc_json_num(o, file, p, "kernel_s", 1, 0, 1, &x.kernel_s, err)) ||
        (st = sc_json_num(o, file, p, "flash_fwd", 1, MIN_FRACTION, 1, &x.flash_fwd, err)) ||
        (st = sc_json_num(o, file, p, "flash_bwd", 1, MIN_FRACTION, 1, &x.flash_bwd, err)))
        return st;
    x.sustained = 1;
    x.flash_full = 1;
    x.flash_hd64 = 1;
    if ((st = sc_json_num(o, file, p, "eff_max_fp8", 0, MIN_FRACTION, 1, &x.eff_max_fp8, err)) ||
        (st = sc_json_num(o, file, p, "sustained", 0, MIN_FRACTION, 1, &x.sustained, err)) ||
        (st = sc_json_num(o, file, p, "flash_s0", 0, 0, MAX_FLASH_S0, &x.flash_s0, err)) ||
        (st = sc_json_num(o, file, p, "flash_s0_full", 0, 0, MAX_FLASH_S0, &x.flash_s0_full,
                          err)) ||
        (st = sc_json_num(o, file, p, "flash_s0_bwd", 0, 0, MAX_FLASH_S0, &x.flash_s0_bwd,
                          err)) ||
        (st = sc_json_num(o, file, p, "flash_s0_full_bwd", 0, 0, MAX_FLASH_S0,
                          &x.flash_s0_full_bwd, err)) ||
        (st = sc_json_num(o, file, p, "flash_full", 0, MIN_FRACTION, MAX_FLASH_FULL,
                          &x.flash_full, err)) ||
        (st = sc_json_num(o, file, p, "flash_hd64", 0, MIN_FRACTION, MAX_FLASH_FULL,
                          &x.flash_hd64, err)) ||
        (st = read_flash_heads(o, file, &x, err)))
        return st;
    x.sms = (int)sms;
    *g = x;
    return SC_OK;
}

static sc_status check_gemm(const sc_cluster_gemm *g, const char *file, sc_error *err)
{
    sc_status st;
    if (g->sms == 0)
        return SC_OK;
    if (g->sms < 0 || g->sms > 100000)
        return sc_err(err, SC_EINVAL, "%s: efficiency.gemm.sms: %d is out of range [1, 100000]",
                      file, g->sms);
    if ((st = range(file, "efficiency.gemm.eff_max", g->eff_max, MIN_FRACTION, 1, err)) ||
        (g->eff_max_fp8 != 0 &&
         (st = range(file, "efficiency.gemm.eff_max_fp8", g->eff_max_fp8, MIN_FRACTION, 1, err))) ||
        (st = range(file, "efficiency.gemm.tile_m", g->tile_m, 1, 4096, err)) ||
        (st = range(file, "efficiency.gemm.tile_n", g->tile_n, 1, 4096, err)) ||
        (st = range(file, "efficiency.gemm.k_half", g->k_half, 0, 1e6, err)) ||
        (st = range(file, "efficiency.gemm.kernel_s", g->kernel_s, 0, 1, err)) ||
        (st = range(file, "efficiency.gemm.flash_fwd", g->flash_fwd, MIN_FRACTION, 1, err)) ||
        (st = range(file, "efficiency.gemm.flash_bwd", g->flash_bwd, MIN_FRACTION, 1, err)) ||
        (g->sustained != 0 &&
         (st = range(file, "efficiency.gemm.sustained", g->sustained, MIN_FRACTION, 1, err))) ||
        (st = range(file, "efficiency.gemm.flash_s0", g->flash_s0, 0, MAX_FLASH_S0, err)) ||
        (st = range(file, "efficiency.gemm.flash_s0_full", g->flash_s0_full, 0, MAX_FLASH_S0,
                    err)) ||
        (st = range(file, "efficiency.gemm.flash_s0_bwd", g->flash_s0_bwd, 0, MAX_FLASH_S0,
                    err)) ||
        (st = range(file, "efficiency.gemm.flash_s0_full_bwd", g->flash_s0_full_bwd, 0,
                    MAX_FLASH_S0, err)) ||
        (g->flash_full != 0 && (st = range(file, "efficiency.gemm.flash_full", g->flash_full,
                                           MIN_FRACTION, MAX_FLASH_FULL, err))) ||
        (g->flash_hd64 != 0 && (st = range(file, "efficiency.gemm.flash_hd64", g->flash_hd64,
                                           MIN_FRACTION, MAX_FLASH_FULL, err))) ||
        (st = check_flash_heads(g, file, err)))
        return st;
    return SC_OK;
}

static void add_gemm(cJSON *e, const sc_cluster_gemm *g, int *oom)
{
    if (g->sms <= 0)
        return;
    cJSON *o = sc_jadd_obj(e, "gemm", oom);
    sc_jadd_num(o, "sms", g->sms, oom);
    sc_jadd_num(o, "eff_max", g->eff_max, oom);
    if (g->eff_max_fp8 > 0)
        sc_jadd_num(o, "eff_max_fp8", g->eff_max_fp8, oom);
    sc_jadd_num(o, "tile_m", g->tile_m, oom);
    sc_jadd_num(o, "tile_n", g->tile_n, oom);
    sc_jadd_num(o, "k_half", g->k_half, oom);
    sc_jadd_num(o, "kernel_s", g->kernel_s, oom);
    sc_jadd_num(o, "flash_fwd", g->flash_fwd, oom);
    sc_jadd_num(o, "flash_bwd", g->flash_bwd, oom);
    if (g->sustained > 0 && g->sustained != 1)
        sc_jadd_num(o, "sustained", g->sustained, oom);
    if (g->flash_s0 > 0)
        sc_jadd_num(o, "flash_s0", g->flash_s0, oom);
    if (g->flash_s0_full > 0)
        sc_jadd_num(o, "flash_s0_full", g->flash_s0_full, oom);
    if (g->flash_s0_bwd > 0)
        sc_jadd_num(o, "flash_s0_bwd", g->flash_s0_bwd, oom);
    if (g->flash_s0_full_bwd > 0)
        sc_jadd_num(o, "flash_s0_full_bwd", g->flash_s0_full_bwd, oom);
    if (g->flash_full > 0 && g->flash_full != 1)
        sc_jadd_num(o, "flash_full", g->flash_full, oom);
    if (g->flash_hd64 > 0 && g->flash_hd64 != 1)
        sc_jadd_num(o, "flash_hd64", g->flash_hd64, oom);
    if (g->n_flash_heads > 0) {
        cJSON *a = sc_jadd_arr(o, "flash_head_sizes", oom);
        for (int i = 0; i < g->n_flash_heads && a; i++)
            sc_jpush_num(a, g->flash_heads[i], oom);
    }
}

static int heads_equal(const sc_cluster_gemm *a, const sc_cluster_gemm *b)
{
    if (a->n_flash_heads != b->n_flash_heads)
        return 0;
    for (int i = 0; i < a->n_flash_heads && i < SC_FLASH_HEADS_MAX; i++)
        if (a->flash_heads[i] != b->flash_heads[i])
            return 0;
    return 1;
}

static int gemm_equal(const sc_cluster_gemm *a, const sc_cluster_gemm *b)
{
    return a->sms == b->sms && a->eff_max == b->eff_max && a->eff_max_fp8 == b->eff_max_fp8 &&
           a->tile_m == b->tile_m && a->tile_n == b->tile_n &&
           a->k_half == b->k_half && a->kernel_s == b->kernel_s &&
           a->flash_fwd == b->flash_fwd && a->flash_bwd == b->flash_bwd &&
           (a->sustained > 0 ? a->sustained : 1) == (b->sustained > 0 ? b->sustained : 1) &&
           a->flash_s0 == b->flash_s0 && a->flash_s0_full == b->flash_s0_full &&
           a->flash_s0_bwd == b->flash_s0_bwd && a->flash_s0_full_bwd == b->flash_s0_full_bwd &&
           (a->flash_full > 0 ? a->flash_full : 1) == (b->flash_full > 0 ? b->flash_full : 1) &&
           (a->flash_hd64 > 0 ? a->flash_hd64 : 1) == (b->flash_hd64 > 0 ? b->flash_hd64 : 1) &&
           heads_equal(a, b);
}

/* ---- the collectives' size ramp (optional keys of efficiency.intra / .inter) ---- */

#define MAX_S_HALF 1e13
#define MIN_RAMP_EXP 0.25
#define MAX_RAMP_EXP 4.0

static sc_status read_curve(const cJSON *x, const char *file, const char *path, const char *key,
                            sc_size_curve *cv, sc_error *err);

static sc_status read_ramp(const cJSON *x, const char *file, const char *path, sc_cluster_eff *f,
                           int l, sc_error *err)
{
    sc_status st;
    f->s_half_bytes[l] = 0;
    f->ramp_exp[l] = 1;
    if ((st = sc_json_num(x, file, path, "s_half_bytes", 0, 0, MAX_S_HALF, &f->s_half_bytes[l],
                          err)) ||
        (st = sc_json_num(x, file, path, "ramp_exp", 0, MIN_RAMP_EXP, MAX_RAMP_EXP,
                          &f->ramp_exp[l], err)) ||
        (st = read_curve(x, file, path, "size_factors", &f->coll_curve[l], err)) ||
        (st = read_curve(x, file, path, "p2p_size_factors", &f->p2p_curve[l], err)))
        return st;
    return SC_OK;
}

static sc_status validate_ramp(const sc_cluster *c, const char *file, sc_error *err);

/* ---- the size factors (optional keys efficiency.*.size_factors, .p2p_size_factors) ---- */

#define MAX_CURVE_BYTES 1e13

double sc_size_curve_at(const sc_size_curve *c, double bytes)
{
    if (!c || c->n < 1)
        return 1;
    if (!(bytes > c->bytes[0]))
        return c->factor[0];
    if (bytes >= c->bytes[c->n - 1])
        return c->factor[c->n - 1];
    int i = 1;
    while (c->bytes[i] < bytes)
        i++;
    double t = log(bytes / c->bytes[i - 1]) / log(c->bytes[i] / c->bytes[i - 1]);
    return c->factor[i - 1] * pow(c->factor[i] / c->factor[i - 1], t);
}

double sc_cluster_coll_factor(const sc_cluster *c, int nodes, double msg)
{
    return sc_size_curve_at(&c->eff.coll_curve[nodes > 1 ? SC_LINK_INTER : SC_LINK_INTRA], msg);
}

/* Ranges and order of one curve; path is its JSON path. */
static sc_status check_curve(const sc_size_curve *cv, const char *file, const char *path,
                             sc_error *err)
{
    char p[96];
    sc_status st;
    if (cv->n < 0 || cv->n > SC_SIZE_CURVE_MAX)
        return sc_err(err, SC_EINVAL, "%s: %s: %d points is out of range [1, %d]", file, path,
                      cv->n, SC_SIZE_CURVE_MAX);
    for (int i = 0; i < cv->n; i++) {
        snprintf(p, sizeof p, "%s[%d][0]", path, i);
        if ((st = range(file, p, cv->bytes[i], 1, MAX_CURVE_BYTES, err)))
            return st;
        if (i > 0 && !(cv->bytes[i] > cv->bytes[i - 1]))
            return sc_err(err, SC_EINVAL, "%s: %s: %g bytes is not above the previous point's %g",
                          file, p, cv->bytes[i], cv->bytes[i - 1]);
        snprintf(p, sizeof p, "%s[%d][1]", path, i);
        if ((st = range(file, p, cv->factor[i], SC_SIZE_FACTOR_MIN, SC_SIZE_FACTOR_MAX, err)))
            return st;
    }
    return SC_OK;
}

static sc_status read_curve(const cJSON *x, const char *file, const char *path, const char *key,
                            sc_size_curve *cv, sc_error *err)
{
    const cJSON *a;
    char p[96];
    cv->n = 0;
    sc_status st = sc_json_arr(x, file, path, key, 0, &a, err);
    if (st || !a)
        return st;
    snprintf(p, sizeof p, "%s.%s", path, key);
    int n = cJSON_GetArraySize(a);
    if (n < 1 || n > SC_SIZE_CURVE_MAX)
        return sc_err(err, SC_EINVAL, "%s: %s: %d points is out of range [1, %d]", file, p, n,
                      SC_SIZE_CURVE_MAX);
    int i = 0;
    for (const cJSON *q = a->child; q; q = q->next, i++) {
        if (!cJSON_IsArray(q) || cJSON_GetArraySize(q) != 2 || !cJSON_IsNumber(q->child) ||
            !cJSON_IsNumber(q->child->next))
            return sc_err(err, SC_EPARSE, "%s: %s[%d]: must be a pair of numbers [bytes, factor]",
                          file, p, i);
        cv->bytes[i] = q->child->valuedouble;
        cv->factor[i] = q->child->next->valuedouble;
    }
    cv->n = n;
    if ((st = check_curve(cv, file, p, err)))
        cv->n = 0;
    return st;
}

static void add_curve(cJSON *x, const char *key, const sc_size_curve *cv, int *oom)
{
    if (cv->n < 1)
        return;
    cJSON *a = sc_jadd_arr(x, key, oom);
    for (int i = 0; i < cv->n && a; i++) {
        cJSON *pt = sc_jpush_arr(a, oom);
        sc_jpush_num(pt, cv->bytes[i], oom);
        sc_jpush_num(pt, cv->factor[i], oom);
    }
}

static int curve_equal(const sc_size_curve *a, const sc_size_curve *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (a->bytes[i] != b->bytes[i] || a->factor[i] != b->factor[i])
            return 0;
    return 1;
}

static void add_ramp(cJSON *x, const sc_cluster_eff *f, int l, int *oom)
{
    if (f->s_half_bytes[l] > 0) {
        sc_jadd_num(x, "s_half_bytes", f->s_half_bytes[l], oom);
        sc_jadd_num(x, "ramp_exp", f->ramp_exp[l], oom);
    }
    add_curve(x, "size_factors", &f->coll_curve[l], oom);
    add_curve(x, "p2p_size_factors", &f->p2p_curve[l], oom);
}

static int ramp_equal(const sc_cluster_eff *a, const sc_cluster_eff *b)
{
    for (int l = 0; l < SC_LINK_N; l++)
        if (a->s_half_bytes[l] != b->s_half_bytes[l] ||
            (a->s_half_bytes[l] > 0 && a->ramp_exp[l] != b->ramp_exp[l]) ||
            !curve_equal(&a->coll_curve[l], &b->coll_curve[l]) ||
            !curve_equal(&a->p2p_curve[l], &b->p2p_curve[l]))
            return 0;
    return 1;
}

static sc_status read_eff(const cJSON *root, const char *file, sc_cluster *c, sc_error *err)
{
    static const char *const keys[] = {"provenance", "compute",       "memory_bw",
                                       "intra",      "inter",         "op_overhead_s",
                                       "workspace_bytes", "fits", "bwd_factor", "gemm",
                                       "overlap_slowdown", NULL};
    static const char *const ckeys[] = {"fp32", "tf32", "fp16", "bf16", "fp8", NULL};
    static const char *const dkeys[] = {"eff_max", "f_half", NULL};
    static const char *const lkeys[] = {"alpha_s", "bw_eff", "p2p_bw_eff", "ag_rs_bw_eff",
                                        "p2p_host_s_per_byte", "s_half_bytes", "ramp_exp",
                                        "cold_alpha_s", "cold_bw_eff", "size_factors",
                                        "p2p_size_factors", NULL};
    const cJSON *e, *comp;
    const char *s = NULL;
    char path[64];
    sc_status st;
    sc_cluster_eff *f = &c->eff;
    if ((st = sc_json_obj(root, file, "", "efficiency", 1, &e, err)) ||
        (st = sc_json_keys(e, file, "efficiency", keys, err)) ||
        (st = sc_json_str(e, file, "efficiency", "provenance", 1, SC_CLUSTER_PROV_MAX, &s,
                          err)) ||
        (st = sc_json_obj(e, file, "efficiency", "compute", 1, &comp, err)) ||
        (st = sc_json_keys(comp, file, "efficiency.compute", ckeys, err)) ||
        (st = sc_json_num(e, file, "efficiency", "memory_bw", 1, MIN_FRACTION, 1, &f->memory_bw,
                          err)) ||
        (st = sc_json_num(e, file, "efficiency", "op_overhead_s", 1, 0, MAX_SECONDS,
                          &f->op_overhead_s, err)) ||
        (st = sc_json_num(e, file, "efficiency", "workspace_bytes", 1, 0, MAX_BYTES,
                          &f->workspace_bytes, err)))
        return st;
    f->bwd_factor = 1;
    if ((st = sc_json_num(e, file, "efficiency", "bwd_factor", 0, 0.1, 10, &f->bwd_factor, err)))
        return st;
    f->overlap_slowdown = 0;
    if ((st = sc_json_num(e, file, "efficiency", "overlap_slowdown", 0, 0, 1,
                          &f->overlap_slowdown, err)))
        return st;
    if ((st = read_gemm(e, file, &f->gemm, err)))
        return st;
    copy_str(f->provenance, sizeof f->provenance, s);
    for (int d = 0; d < SC_DTYPE_N; d++) {
        const cJSON *x;
        f->eff_max[d] = 0;
        f->f_half[d] = 0;
        if ((st = sc_json_obj(comp, file, "efficiency.compute", dtype_keys[d], 0, &x, err)))
            return st;
        if (!x) {
            if (c->gpu.peak_flops[d] > 0)
                return sc_err(err, SC_EPARSE,
                              "%s: efficiency.compute.%s: missing (gpu.peak_flops.%s is not 0)",
                              file, dtype_keys[d], dtype_keys[d]);
            continue;
        }
        snprintf(path, sizeof path, "efficiency.compute.%s", dtype_keys[d]);
        if ((st = sc_json_keys(x, file, path, dkeys, err)) ||
            (st = sc_json_num(x, file, path, "eff_max", 1, MIN_FRACTION, 1, &f->eff_max[d],
                              err)) ||
            (st = sc_json_num(x, file, path, "f_half", 1, 0, MAX_FLOPS, &f->f_half[d], err)))
            return st;
    }
    for (int l = 0; l < SC_LINK_N; l++) {
        const cJSON *x;
        snprintf(path, sizeof path, "efficiency.%s", link_keys[l]);
        if ((st = sc_json_obj(e, file, "efficiency", link_keys[l], 1, &x, err)) ||
            (st = sc_json_keys(x, file, path, lkeys, err)) ||
            (st = sc_json_num(x, file, path, "alpha_s", 1, 0, MAX_SECONDS, &f->alpha_s[l],
                              err)) ||
            (st = sc_json_num(x, file, path, "bw_eff", 1, MIN_FRACTION, 1, &f->bw_eff[l], err)))
            return st;
        f->p2p_bw_eff[l] = 0;
        f->ag_rs_bw_eff[l] = 0;
        f->p2p_host_s_per_byte[l] = 0;
        f->cold_alpha_s[l] = 0;
        f->cold_bw_eff[l] = 0;
        if ((st = sc_json_num(x, file, path, "p2p_bw_eff", 0, MIN_FRACTION, 1, &f->p2p_bw_eff[l],
                              err)) ||
            (st = sc_json_num(x, file, path, "ag_rs_bw_eff", 0, MIN_FRACTION, 1,
                              &f->ag_rs_bw_eff[l], err)) ||
            (st = sc_json_num(x, file, path, "cold_alpha_s", 0, 0, MAX_SECONDS,
                              &f->cold_alpha_s[l], err)) ||
            (st = sc_json_num(x, file, path, "cold_bw_eff", 0, MIN_FRACTION, 1, &f->cold_bw_eff[l],
                              err)) ||
            (st = sc_json_num(x, file, path, "p2p_host_s_per_byte", 0, 0, MAX_HOST_S_PER_BYTE,
                              &f->p2p_host_s_per_byte[l], err)) ||
            (st = read_ramp(x, file, path, f, l, err)))
            return st;
    }
    const cJSON *fits;
    if ((st = sc_json_obj(e, file, "efficiency", "fits", 0, &fits, err)))
        return st;
    return fits ? read_fits(fits, file, &f->fits, err) : SC_OK;
}

sc_status sc_cluster_from_json(const cJSON *root, const char *file, sc_cluster *out,
                               sc_error *err)
{
    static const char *const keys[] = {"format", "name",  "description", "nodes",
                                       "gpus_per_node", "gpu", "intra", "inter",
                                       "price", "storage_bytes_per_s", "efficiency", NULL};
    sc_cluster c;
    memset(&c, 0, sizeof c);
    const char *s = NULL, *desc = NULL;
    const cJSON *g;
    long nodes = 0, gpn = 0;
    sc_status st;
    if (!file)
        file = "<cluster>";
    if ((st = sc_json_format(root, file, SC_CLUSTER_FORMAT, err)) ||
        (st = sc_json_keys(root, file, "", keys, err)) ||
        (st = sc_json_str(root, file, "", "name", 1, SC_CLUSTER_NAME_MAX, &s, err)) ||
        (st = sc_json_str(root, file, "", "description", 0, SC_CLUSTER_DESC_MAX, &desc, err)) ||
        (st = sc_json_int(root, file, "", "nodes", 1, 1, SC_CLUSTER_MAX_NODES, &nodes, err)) ||
        (st = sc_json_int(root, file, "", "gpus_per_node", 1, 1, SC_CLUSTER_MAX_GPUS_PER_NODE,
                          &gpn, err)) ||
        (st = sc_json_obj(root, file, "", "gpu", 1, &g, err)) ||
        (st = read_gpu(g, file, &c, err)) || (st = read_links(root, file, &c, err)) ||
        (st = read_price(root, file, &c, err)) ||
        (st = sc_json_num(root, file, "", "storage_bytes_per_s", 1, 0, MAX_BYTES,
                          &c.storage_bytes_per_s, err)) ||
        (st = read_eff(root, file, &c, err)))
        return st;
    copy_str(c.name, sizeof c.name, s);
    copy_str(c.description, sizeof c.description, desc);
    c.nodes = (int)nodes;
    c.gpus_per_node = (int)gpn;
    if ((st = sc_cluster_validate(&c, file, err)))
        return st;
    *out = c;
    return SC_OK;
}

sc_status sc_cluster_load(const char *file, sc_cluster *out, sc_error *err)
{
    cJSON *root = NULL;
    sc_status st = sc_json_load(file, &root, err);
    if (st)
        return st;
    st = sc_cluster_from_json(root, file, out, err);
    cJSON_Delete(root);
    return st;
}

/* ---- validation ----------------------------------------------------------- */

static sc_status range(const char *file, const char *path, double v, double lo, double hi,
                       sc_error *err)
{
    if (!isfinite(v))
        return sc_err(err, SC_EINVAL, "%s: %s: must be finite", file, path);
    if (v < lo || v > hi)
        return sc_err(err, SC_EINVAL, "%s: %s: %g is out of range [%g, %g]", file, path, v, lo,
                      hi);
    return SC_OK;
}

static int bad_str(const char *s, int required)
{
    if (required && !*s)
        return 1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20)
            return 1;
    return 0;
}

static sc_status validate_ramp(const sc_cluster *c, const char *file, sc_error *err)
{
    char path[64];
    sc_status st;
    for (int l = 0; l < SC_LINK_N; l++) {
        snprintf(path, sizeof path, "efficiency.%s.s_half_bytes", link_keys[l]);
        if ((st = range(file, path, c->eff.s_half_bytes[l], 0, MAX_S_HALF, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.ramp_exp", link_keys[l]);
        if (c->eff.s_half_bytes[l] > 0 &&
            (st = range(file, path, c->eff.ramp_exp[l], MIN_RAMP_EXP, MAX_RAMP_EXP, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.size_factors", link_keys[l]);
        if ((st = check_curve(&c->eff.coll_curve[l], file, path, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.p2p_size_factors", link_keys[l]);
        if ((st = check_curve(&c->eff.p2p_curve[l], file, path, err)))
            return st;
    }
    return SC_OK;
}

sc_status sc_cluster_validate(const sc_cluster *c, const char *file, sc_error *err)
{
    char path[64];
    sc_status st;
    if (!file)
        file = "<cluster>";
    if (bad_str(c->name, 1) || !memchr(c->name, 0, sizeof c->name))
        return sc_err(err, SC_EINVAL, "%s: name: must be a non-empty printable string", file);
    if (bad_str(c->description, 0) || !memchr(c->description, 0, sizeof c->description))
        return sc_err(err, SC_EINVAL, "%s: description: must be printable", file);
    if (bad_str(c->gpu.name, 1) || !memchr(c->gpu.name, 0, sizeof c->gpu.name))
        return sc_err(err, SC_EINVAL, "%s: gpu.name: must be a non-empty printable string", file);
    if (bad_str(c->intra.kind, 1) || !memchr(c->intra.kind, 0, sizeof c->intra.kind))
        return sc_err(err, SC_EINVAL, "%s: intra.kind: must be a non-empty printable string",
                      file);
    if (bad_str(c->eff.provenance, 1) || !memchr(c->eff.provenance, 0, sizeof c->eff.provenance))
        return sc_err(err, SC_EINVAL,
                      "%s: efficiency.provenance: must be a non-empty printable string", file);
    if (c->nodes < 1 || c->nodes > SC_CLUSTER_MAX_NODES)
        return sc_err(err, SC_EINVAL, "%s: nodes: %d is out of range [1, %d]", file, c->nodes,
                      SC_CLUSTER_MAX_NODES);
    if (c->gpus_per_node < 1 || c->gpus_per_node > SC_CLUSTER_MAX_GPUS_PER_NODE)
        return sc_err(err, SC_EINVAL, "%s: gpus_per_node: %d is out of range [1, %d]", file,
                      c->gpus_per_node, SC_CLUSTER_MAX_GPUS_PER_NODE);
    if ((st = range(file, "gpu.memory_bytes", c->gpu.memory_bytes, 1, MAX_BYTES, err)) ||
        (st = range(file, "gpu.hbm_bytes_per_s", c->gpu.hbm_bytes_per_s, 1, MAX_BYTES, err)) ||
        (st = range(file, "intra.bytes_per_s", c->intra.bytes_per_s, 0, MAX_BYTES, err)) ||
        (st = range(file, "intra.latency_s", c->intra.latency_s, 0, MAX_SECONDS, err)) ||
        (st = range(file, "inter.nic_bytes_per_s", c->inter.nic_bytes_per_s, 0, MAX_BYTES,
                    err)) ||
        (st = range(file, "inter.latency_s", c->inter.latency_s, 0, MAX_SECONDS, err)) ||
        (st = range(file, "price.on_demand_per_hour", c->price.on_demand_per_hour, 0, MAX_PRICE,
                    err)) ||
        (st = range(file, "price.spot_per_hour", c->price.spot_per_hour, 0, MAX_PRICE, err)) ||
        (st = range(file, "price.spot_interruptions_per_hour",
                    c->price.spot_interruptions_per_hour, 0, MAX_RATE, err)) ||
        (st = range(file, "storage_bytes_per_s", c->storage_bytes_per_s, 0, MAX_BYTES, err)) ||
        (st = range(file, "efficiency.memory_bw", c->eff.memory_bw, MIN_FRACTION, 1, err)) ||
        (st = range(file, "efficiency.op_overhead_s", c->eff.op_overhead_s, 0, MAX_SECONDS,
                    err)) ||
        (c->eff.bwd_factor != 0 &&
         (st = range(file, "efficiency.bwd_factor", c->eff.bwd_factor, 0.1, 10, err))) ||
        (st = range(file, "efficiency.overlap_slowdown", c->eff.overlap_slowdown, 0, 1, err)) ||
        (st = range(file, "efficiency.workspace_bytes", c->eff.workspace_bytes, 0, MAX_BYTES,
                    err)) ||
        (st = check_gemm(&c->eff.gemm, file, err)))
        return st;
    if (c->inter.nics_per_node < 0 || c->inter.nics_per_node > 1024)
        return sc_err(err, SC_EINVAL, "%s: inter.nics_per_node: %d is out of range [0, 1024]",
                      file, c->inter.nics_per_node);
    int any = 0;
    for (int d = 0; d < SC_DTYPE_N; d++) {
        snprintf(path, sizeof path, "gpu.peak_flops.%s", dtype_keys[d]);
        if ((st = range(file, path, c->gpu.peak_flops[d], 0, MAX_FLOPS, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.compute.%s.eff_max", dtype_keys[d]);
        if ((st = range(file, path, c->eff.eff_max[d], c->gpu.peak_flops[d] > 0 ? MIN_FRACTION : 0,
                        1, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.compute.%s.f_half", dtype_keys[d]);
        if ((st = range(file, path, c->eff.f_half[d], 0, MAX_FLOPS, err)))
            return st;
        if (c->eff.eff_max[d] == 0 && c->eff.f_half[d] != 0)
            return sc_err(err, SC_EINVAL, "%s: efficiency.compute.%s: f_half without eff_max",
                          file, dtype_keys[d]);
        any |= c->gpu.peak_flops[d] > 0;
    }
    if (!any)
        return sc_err(err, SC_EINVAL, "%s: gpu.peak_flops: every dtype is 0 (unsupported)", file);
    for (int l = 0; l < SC_LINK_N; l++) {
        snprintf(path, sizeof path, "efficiency.%s.alpha_s", link_keys[l]);
        if ((st = range(file, path, c->eff.alpha_s[l], 0, MAX_SECONDS, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.bw_eff", link_keys[l]);
        if ((st = range(file, path, c->eff.bw_eff[l], MIN_FRACTION, 1, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.p2p_bw_eff", link_keys[l]);
        if (c->eff.p2p_bw_eff[l] != 0 &&
            (st = range(file, path, c->eff.p2p_bw_eff[l], MIN_FRACTION, 1, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.ag_rs_bw_eff", link_keys[l]);
        if (c->eff.ag_rs_bw_eff[l] != 0 &&
            (st = range(file, path, c->eff.ag_rs_bw_eff[l], MIN_FRACTION, 1, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.p2p_host_s_per_byte", link_keys[l]);
        if ((st = range(file, path, c->eff.p2p_host_s_per_byte[l], 0, MAX_HOST_S_PER_BYTE, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.cold_bw_eff", link_keys[l]);
        if (c->eff.cold_bw_eff[l] != 0 &&
            (st = range(file, path, c->eff.cold_bw_eff[l], MIN_FRACTION, 1, err)))
            return st;
        snprintf(path, sizeof path, "efficiency.%s.cold_alpha_s", link_keys[l]);
        if ((st = range(file, path, c->eff.cold_alpha_s[l], 0, MAX_SECONDS, err)))
            return st;
        if (c->eff.cold_alpha_s[l] > 0 && c->eff.cold_bw_eff[l] == 0)
            return sc_err(err, SC_EINVAL, "%s: %s: set without efficiency.%s.cold_bw_eff",
                          file, path, link_keys[l]);
    }
    if ((st = validate_ramp(c, file, err)))
        return st;
    struct {
        const char *path;
        double v, floor;
    } floors[] = {{"gpu.hbm_bytes_per_s", c->gpu.hbm_bytes_per_s, MIN_BYTES_PER_S},
                  {"intra.bytes_per_s", c->intra.bytes_per_s, MIN_BYTES_PER_S},
                  {"inter.nic_bytes_per_s", c->inter.nic_bytes_per_s, MIN_BYTES_PER_S},
                  {"storage_bytes_per_s", c->storage_bytes_per_s, MIN_BYTES_PER_S},
                  {"gpu.peak_flops.fp32", c->gpu.peak_flops[SC_FP32], MIN_FLOPS},
                  {"gpu.peak_flops.tf32", c->gpu.peak_flops[SC_TF32], MIN_FLOPS},
                  {"gpu.peak_flops.fp16", c->gpu.peak_flops[SC_FP16], MIN_FLOPS},
                  {"gpu.peak_flops.bf16", c->gpu.peak_flops[SC_BF16], MIN_FLOPS},
                  {"gpu.peak_flops.fp8", c->gpu.peak_flops[SC_FP8], MIN_FLOPS}};
    for (size_t i = 0; i < SC_ARRAY_LEN(floors); i++)
        if (floors[i].v > 0 && floors[i].v < floors[i].floor)
            return sc_err(err, SC_EINVAL,
                          "%s: %s: %g is implausibly small (above 0, below %g; 0 means none)",
                          file, floors[i].path, floors[i].v, floors[i].floor);
    if (c->gpus_per_node > 1 && c->intra.bytes_per_s <= 0)
        return sc_err(err, SC_EINVAL,
                      "%s: intra.bytes_per_s: must be > 0 with %d GPUs per node", file,
                      c->gpus_per_node);
    if (c->nodes > 1 && (c->inter.nics_per_node < 1 || c->inter.nic_bytes_per_s <= 0))
        return sc_err(err, SC_EINVAL,
                      "%s: inter: %d nodes need a network (nics_per_node >= 1 and "
                      "nic_bytes_per_s > 0)",
                      file, c->nodes);
    const sc_cluster_fits *f = &c->eff.fits;
    if (f->n_failed < 0 || f->n_failed > SC_CLUSTER_MAX_GATES || (f->n_failed && !f->present))
        return sc_err(err, SC_EINVAL, "%s: efficiency.fits.gates_failed: %d entries (0 to %d, "
                      "with fits)", file, f->n_failed, SC_CLUSTER_MAX_GATES);
    for (int i = 0; i < f->n_failed; i++)
        if (!f->failed[i][0])
            return sc_err(err, SC_EINVAL, "%s: efficiency.fits.gates_failed[%d]: empty", file, i);
    return SC_OK;
}

/* ---- to JSON -------------------------------------------------------------- */

cJSON *sc_cluster_to_json(const sc_cluster *c)
{
    sc_json_init();
    int oom = 0;
    cJSON *r = cJSON_CreateObject();
    if (!r)
        return NULL;
    sc_jadd_str(r, "format", SC_CLUSTER_FORMAT, &oom);
    sc_jadd_str(r, "name", c->name, &oom);
    if (c->description[0])
        sc_jadd_str(r, "description", c->description, &oom);
    sc_jadd_num(r, "nodes", c->nodes, &oom);
    sc_jadd_num(r, "gpus_per_node", c->gpus_per_node, &oom);
    cJSON *g = sc_jadd_obj(r, "gpu", &oom);
    sc_jadd_str(g, "name", c->gpu.name, &oom);
    sc_jadd_num(g, "memory_bytes", c->gpu.memory_bytes, &oom);
    sc_jadd_num(g, "hbm_bytes_per_s", c->gpu.hbm_bytes_per_s, &oom);
    cJSON *pf = sc_jadd_obj(g, "peak_flops", &oom);
    for (int d = 0; d < SC_DTYPE_N; d++)
        sc_jadd_num(pf, dtype_keys[d], c->gpu.peak_flops[d], &oom);
    cJSON *in = sc_jadd_obj(r, "intra", &oom);
    sc_jadd_str(in, "kind", c->intra.kind, &oom);
    sc_jadd_num(in, "bytes_per_s", c->intra.bytes_per_s, &oom);
    sc_jadd_num(in, "latency_s", c->intra.latency_s, &oom);
    cJSON *nw = sc_jadd_obj(r, "inter", &oom);
    sc_jadd_num(nw, "nic_bytes_per_s", c->inter.nic_bytes_per_s, &oom);
    sc_jadd_num(nw, "nics_per_node", c->inter.nics_per_node, &oom);
    sc_jadd_num(nw, "latency_s", c->inter.latency_s, &oom);
    cJSON *p = sc_jadd_obj(r, "price", &oom);
    sc_jadd_num(p, "on_demand_per_hour", c->price.on_demand_per_hour, &oom);
    sc_jadd_num(p, "spot_per_hour", c->price.spot_per_hour, &oom);
    sc_jadd_num(p, "spot_interruptions_per_hour", c->price.spot_interruptions_per_hour, &oom);
    sc_jadd_num(r, "storage_bytes_per_s", c->storage_bytes_per_s, &oom);
    cJSON *e = sc_jadd_obj(r, "efficiency", &oom);
    sc_jadd_str(e, "provenance", c->eff.provenance, &oom);
    cJSON *comp = sc_jadd_obj(e, "compute", &oom);
    for (int d = 0; d < SC_DTYPE_N; d++) {
        if (c->gpu.peak_flops[d] <= 0 && c->eff.eff_max[d] == 0 && c->eff.f_half[d] == 0)
            continue;
        cJSON *x = sc_jadd_obj(comp, dtype_keys[d], &oom);
        sc_jadd_num(x, "eff_max", c->eff.eff_max[d], &oom);
        sc_jadd_num(x, "f_half", c->eff.f_half[d], &oom);
    }
    sc_jadd_num(e, "memory_bw", c->eff.memory_bw, &oom);
    for (int l = 0; l < SC_LINK_N; l++) {
        cJSON *x = sc_jadd_obj(e, link_keys[l], &oom);
        sc_jadd_num(x, "alpha_s", c->eff.alpha_s[l], &oom);
        sc_jadd_num(x, "bw_eff", c->eff.bw_eff[l], &oom);
        if (c->eff.p2p_bw_eff[l] > 0)
            sc_jadd_num(x, "p2p_bw_eff", c->eff.p2p_bw_eff[l], &oom);
        if (c->eff.ag_rs_bw_eff[l] > 0)
            sc_jadd_num(x, "ag_rs_bw_eff", c->eff.ag_rs_bw_eff[l], &oom);
        if (c->eff.p2p_host_s_per_byte[l] > 0)
            sc_jadd_num(x, "p2p_host_s_per_byte", c->eff.p2p_host_s_per_byte[l], &oom);
        if (c->eff.cold_bw_eff[l] > 0) {
            sc_jadd_num(x, "cold_alpha_s", c->eff.cold_alpha_s[l], &oom);
            sc_jadd_num(x, "cold_bw_eff", c->eff.cold_bw_eff[l], &oom);
        }
        add_ramp(x, &c->eff, l, &oom);
    }
    sc_jadd_num(e, "op_overhead_s", c->eff.op_overhead_s, &oom);
    sc_jadd_num(e, "workspace_bytes", c->eff.workspace_bytes, &oom);
    if (c->eff.bwd_factor != 1 && c->eff.bwd_factor != 0)
        sc_jadd_num(e, "bwd_factor", c->eff.bwd_factor, &oom);
    if (c->eff.overlap_slowdown > 0)
        sc_jadd_num(e, "overlap_slowdown", c->eff.overlap_slowdown, &oom);
    add_gemm(e, &c->eff.gemm, &oom);
    if (c->eff.fits.present)
        add_fits(e, &c->eff.fits, &oom);
    if (oom) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

sc_status sc_cluster_save(const sc_cluster *c, const char *file, sc_error *err)
{
    sc_status st = sc_cluster_validate(c, file, err);
    if (st)
        return st;
    cJSON *r = sc_cluster_to_json(c);
    if (!r) {
        cJSON_Delete(r);
        return sc_err(err, SC_ENOMEM, "%s: out of memory while building the cluster JSON", file);
    }
    st = sc_json_save(file, r, err);
    cJSON_Delete(r);
    return st;
}

/* ---- misc ----------------------------------------------------------------- */

sc_status sc_err_no_peak(sc_error *err, const char *what, const sc_cluster *c, sc_dtype dt,
                         const sc_model *m, const char *hint)
{
    char has[64] = "", gen[256] = "";
    int pick = -1, same = -1; /* the first the GPU has; the first of dt's width */
    for (int d = 0; d < SC_DTYPE_N; d++) {
        if (c->gpu.peak_flops[d] <= 0)
            continue;
        snprintf(has + strlen(has), sizeof has - strlen(has), "%s%s", has[0] ? ", " : "",
                 sc_dtype_name((sc_dtype)d));
        if (pick < 0)
            pick = d;
        if (same < 0 && (unsigned)dt < SC_DTYPE_N &&
            sc_dtype_bytes((sc_dtype)d) == sc_dtype_bytes(dt))
            same = d;
    }
    if (same >= 0)
        pick = same;
    if (!hint && m && pick >= 0 && sc_model_is_builtin(m->name)) {
        const char *p = sc_dtype_name((sc_dtype)pick);
        snprintf(gen, sizeof gen,
                 "write the model in one of those (stagecraft model gen %s --dtype %s -o "
                 "%s-%s.json)",
                 m->name, p, m->name, p);
        hint = gen;
    } else if (!hint && m) {
        hint = "write the model in one of those (stagecraft model gen KIND ... --dtype D)";
    }
    return sc_err(err, SC_ENOTSUP, "%s: the %s of %s has no %s peak (it has %s)%s%s", what,
                  c->gpu.name, c->name, (unsigned)dt < SC_DTYPE_N ? sc_dtype_name(dt) : "?",
                  has[0] ? has : "none", hint && hint[0] ? ": " : "", hint ? hint : "");
}

int sc_cluster_is_preset(const char *name)
{
    int n;
    const sc_cluster_preset *p = sc_cluster_presets(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].name, name) == 0)
            return 1;
    return 0;
}

sc_status sc_cluster_open(const char *name_or_file, sc_cluster *out, sc_error *err)
{
    if (sc_cluster_is_preset(name_or_file))
        return sc_cluster_preset_get(name_or_file, out, err);
    sc_status st = sc_cluster_load(name_or_file, out, err);
    if (st == SC_ENOTFOUND && sc_reads_as_name(name_or_file)) {
        int n;
        const sc_cluster_preset *p = sc_cluster_presets(&n);
        const char *names[64];
        n = n < 64 ? n : 64;
        for (int i = 0; i < n; i++)
            names[i] = p[i].name;
        return sc_err_unknown_name(err, name_or_file, "cluster preset", names, n,
                                   "stagecraft cluster list");
    }
    return st;
}

sc_status sc_cluster_set_nodes(sc_cluster *c, long nodes, sc_error *err)
{
    if (nodes < 1 || nodes > SC_CLUSTER_MAX_NODES)
        return sc_err(err, SC_EINVAL, "%s: nodes: %ld is out of range [1, %d]", c->name, nodes,
                      SC_CLUSTER_MAX_NODES);
    if (nodes > 1 && (c->inter.nics_per_node < 1 || c->inter.nic_bytes_per_s <= 0))
        return sc_err(err, SC_EINVAL, "%s: nodes: %ld nodes need an inter-node network, and "
                      "this cluster has none", c->name, nodes);
    c->nodes = (int)nodes;
    return SC_OK;
}

long sc_cluster_total_gpus(const sc_cluster *c)
{
    return (long)c->nodes * c->gpus_per_node;
}

static int deq(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

int sc_cluster_equal(const sc_cluster *a, const sc_cluster *b)
{
    int eq = !strcmp(a->name, b->name) && !strcmp(a->description, b->description) &&
             a->nodes == b->nodes && a->gpus_per_node == b->gpus_per_node &&
             !strcmp(a->gpu.name, b->gpu.name) && deq(a->gpu.memory_bytes, b->gpu.memory_bytes) &&
             deq(a->gpu.hbm_bytes_per_s, b->gpu.hbm_bytes_per_s) &&
             !strcmp(a->intra.kind, b->intra.kind) &&
             deq(a->intra.bytes_per_s, b->intra.bytes_per_s) &&
             deq(a->intra.latency_s, b->intra.latency_s) &&
             deq(a->inter.nic_bytes_per_s, b->inter.nic_bytes_per_s) &&
             a->inter.nics_per_node == b->inter.nics_per_node &&
             deq(a->inter.latency_s, b->inter.latency_s) &&
             deq(a->price.on_demand_per_hour, b->price.on_demand_per_hour) &&
             deq(a->price.spot_per_hour, b->price.spot_per_hour) &&
             deq(a->price.spot_interruptions_per_hour, b->price.spot_interruptions_per_hour) &&
             deq(a->storage_bytes_per_s, b->storage_bytes_per_s) &&
             deq(a->eff.memory_bw, b->eff.memory_bw) &&
             deq(a->eff.op_overhead_s, b->eff.op_overhead_s) &&
             deq(a->eff.workspace_bytes, b->eff.workspace_bytes) &&
             deq(a->eff.bwd_factor, b->eff.bwd_factor) &&
             deq(a->eff.overlap_slowdown, b->eff.overlap_slowdown) &&
             gemm_equal(&a->eff.gemm, &b->eff.gemm) &&
             !strcmp(a->eff.provenance, b->eff.provenance);
    for (int d = 0; eq && d < SC_DTYPE_N; d++)
        eq = deq(a->gpu.peak_flops[d], b->gpu.peak_flops[d]) &&
             deq(a->eff.eff_max[d], b->eff.eff_max[d]) && deq(a->eff.f_half[d], b->eff.f_half[d]);
    for (int l = 0; eq && l < SC_LINK_N; l++)
        eq = deq(a->eff.alpha_s[l], b->eff.alpha_s[l]) && deq(a->eff.bw_eff[l], b->eff.bw_eff[l]) &&
             deq(a->eff.p2p_bw_eff[l], b->eff.p2p_bw_eff[l]) &&
             deq(a->eff.ag_rs_bw_eff[l], b->eff.ag_rs_bw_eff[l]) &&
             deq(a->eff.p2p_host_s_per_byte[l], b->eff.p2p_host_s_per_byte[l]) &&
             deq(a->eff.cold_alpha_s[l], b->eff.cold_alpha_s[l]) &&
             deq(a->eff.cold_bw_eff[l], b->eff.cold_bw_eff[l]);
    eq = eq && ramp_equal(&a->eff, &b->eff);
    const sc_cluster_fits *fa = &a->eff.fits, *fb = &b->eff.fits;
    eq = eq && fa->present == fb->present;
    if (eq && fa->present) {
        eq = !strcmp(fa->date, fb->date) && fa->n_inputs == fb->n_inputs;
        for (int i = 0; eq && i < fa->n_inputs; i++)
            eq = !strcmp(fa->input[i], fb->input[i]) && !strcmp(fa->digest[i], fb->digest[i]);
        eq = eq && fa->n_failed == fb->n_failed;
        for (int i = 0; eq && i < fa->n_failed; i++)
            eq = !strcmp(fa->failed[i], fb->failed[i]);
        enum { NS = SC_DTYPE_N + 3 + LINK_FITS * SC_LINK_N };
        const sc_fit_stats *sa[NS], *sb[NS];
        for (int d = 0; d < SC_DTYPE_N; d++) {
            sa[d] = &fa->compute[d];
            sb[d] = &fb->compute[d];
        }
        sa[SC_DTYPE_N] = &fa->overhead;
        sb[SC_DTYPE_N] = &fb->overhead;
        sa[NS - 2] = &fa->gemm;
        sb[NS - 2] = &fb->gemm;
        sa[NS - 1] = &fa->overlap;
        sb[NS - 1] = &fb->overlap;
        for (int k = 0; k < LINK_FITS; k++)
            for (int l = 0; l < SC_LINK_N; l++) {
                sa[SC_DTYPE_N + 1 + k * SC_LINK_N + l] = link_fit_c(fa, k, l);
                sb[SC_DTYPE_N + 1 + k * SC_LINK_N + l] = link_fit_c(fb, k, l);
            }
        for (int k = 0; eq && k < NS; k++)
            eq = sa[k]->n == sb[k]->n && (sa[k]->n == 0 ||
                 (deq(sa[k]->r2, sb[k]->r2) && deq(sa[k]->mape, sb[k]->mape) &&
                  deq(sa[k]->rel_sd, sb[k]->rel_sd) && deq(sa[k]->se[0], sb[k]->se[0]) &&
                  deq(sa[k]->se[1], sb[k]->se[1])));
    }
    return eq;
}
