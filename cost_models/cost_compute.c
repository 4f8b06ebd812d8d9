/* cost_compute.c - compute time of modules (roofline with a size-dependent
 * ceiling); formulas in cost.h. */
#include "cost_int.h"

#include <math.h>
#include <string.h>

double sc_cost_eff(const sc_cluster *c, sc_dtype dt, double flops)
{
    if ((unsigned)dt >= SC_DTYPE_N || c->gpu.peak_flops[dt] <= 0 || !(flops > 0))
        return 0;
    return c->eff.eff_max[dt] * flops / (flops + c->eff.f_half[dt]);
}

/* Seconds for F FLOPs: F / (peak * eff(F)) = (F + f_half) / (peak * eff_max). */
static double flops_time(const sc_cluster *c, sc_dtype dt, double f)
{
    if (!(f > 0))
        return 0;
    return (f + c->eff.f_half[dt]) / (c->gpu.peak_flops[dt] * c->eff.eff_max[dt]);
}

double sc_cost_call_time(const sc_cluster *c, sc_dtype dt, double f, double bytes)
{
    if (!(f > 0) && !(bytes > 0))
        return 0;
    double tc = flops_time(c, dt, f);
    double tm = bytes / (c->gpu.hbm_bytes_per_s * c->eff.memory_bw);
    return c->eff.op_overhead_s + (tc > tm ? tc : tm);
}

/* T': what a module's own work is divided by on one rank of a tp group of
 * tp. Sequence parallelism: what tp leaves whole (norms, dropouts) runs on
 * s/t tokens of each rank (Korthikanti et al. 2022 sec. 4.2.2). */
static double work_shard(const sc_module *mod, int tp, int sp)
{
    return mod->tp_shardable || (sp && mod->has_tp) ? tp : 1;
}

void sc_cost_leaf_bytes(const sc_module *mod, sc_dtype dt, int tp, int sp, int mbs, double *fwd,
                        double *bwd)
{
    double shard = work_shard(mod, tp, sp);
    double w = mod->params / shard * sc_dtype_bytes(dt);
    double as = mbs * mod->act_saved_bytes / shard;
    /* an inner module's act_out is its subtree's output, written by its
     * last leaf: not work of its own */
    double ao = mod->n_children ? 0 : mbs * mod->act_out_bytes;
    /* an embedding gathers the rows its tokens select (as many bytes as it
     * writes), not its whole table */
    if (!mod->n_children && !strcmp(mod->kind, "embedding") && w > ao)
        w = ao;
    if (fwd)
        *fwd = w + as + ao;
    if (bwd)
        *bwd = 2 * w + as + 2 * ao;
}

sc_status sc_cost_module_time(const sc_cluster *c, const sc_module *mod, sc_dtype dt, int tp,
                              int mbs, double *fwd_s, double *bwd_s, sc_error *err)
{
    return sc_cost_module_time_sp(c, mod, dt, tp, 0, mbs, fwd_s, bwd_s, err);
}

sc_status sc_cost_module_time_sp(const sc_cluster *c, const sc_module *mod, sc_dtype dt, int tp,
                                 int sp, int mbs, double *fwd_s, double *bwd_s, sc_error *err)
{
    sc_compute_cfg cc = {dt, tp, sp, mbs, SC_ATTN_UNFUSED, 0, 0, 0, 0, 0};
    return sc_cost_module_time_cfg(c, mod, &cc, fwd_s, bwd_s, err);
}

sc_status sc_cost_cfg_check(const sc_cluster *c, const sc_compute_cfg *cc, const char *what,
                            sc_error *err)
{
    sc_dtype dt = cc->dtype;
    if ((unsigned)dt >= SC_DTYPE_N)
        return sc_err(err, SC_EINVAL, "%s: dtype %d is not a dtype", c->name, (int)dt);
    if (c->gpu.peak_flops[dt] <= 0)
        return sc_err_no_peak(err, what, c, dt, NULL, NULL);
    if (cc->tp < 1 || cc->mbs < 1)
        return sc_err(err, SC_EINVAL, "%s: tp (%d) and mbs (%d) must be >= 1", what, cc->tp,
                      cc->mbs);
    if (cc->fp8) {
        if (dt != SC_BF16 && dt != SC_FP16)
            return sc_err(err, SC_EINVAL,
                          "fp8 training runs a bf16 or fp16 model's GEMMs in fp8; the model "
                          "is %s (model gen NAME --dtype bf16 writes a built-in in bf16)",
                          sc_dtype_name(dt));
        if (!(c->gpu.peak_flops[SC_FP8] > 0))
            return sc_err(err, SC_EINVAL,
                          "fp8 training needs fp8 tensor cores; %s's %s has none "
                          "(gpu.peak_flops.fp8 is 0)",
                          c->name, c->gpu.name);
        if (!(c->eff.gemm.sms > 0))
            return sc_err(err, SC_EINVAL,
                          "fp8 training is priced by the kernel-level GEMM model, which %s "
                          "has not (efficiency.gemm)",
                          c->name);
    }
    return SC_OK;
}

sc_status sc_cost_module_time_cfg(const sc_cluster *c, const sc_module *mod,
                                  const sc_compute_cfg *cc, double *fwd_s, double *bwd_s,
                                  sc_error *err)
{
    sc_dtype dt = cc->dtype;
    int tp = cc->tp, sp = cc->sp, mbs = cc->mbs;
    sc_status cst = sc_cost_cfg_check(c, cc, mod->name, err);
    if (cst)
        return cst;
    double shard = work_shard(mod, tp, sp);
    double f, b;
    if (sc_measured_here(c, mod)) {
        f = mod->measured_fwd_s * mbs / shard;
        b = mod->measured_bwd_s * mbs / shard;
    } else if (sc_cost_uses_kernels(c, mod)) {
        sc_cost_kernels_time(c, mod, cc, &f, &b, NULL);
    } else if (sc_cost_q_share(cc->q_frac, cc->cp) != 1) {
        /* a token slice (or a cp rank's share) of a leaf timed whole: its
         * share of the tokens */
        sc_compute_cfg whole = *cc;
        whole.q_frac = whole.kv_frac = 0;
        whole.cp = 0;
        sc_status st = sc_cost_module_time_cfg(c, mod, &whole, &f, &b, err);
        if (st)
            return st;
        f *= sc_cost_q_share(cc->q_frac, cc->cp);
        b *= sc_cost_q_share(cc->q_frac, cc->cp);
    } else {
        double bf_bytes, bb_bytes;
        sc_cost_leaf_bytes(mod, dt, tp, sp, mbs, &bf_bytes, &bb_bytes);
        f = sc_cost_call_time(c, dt, mbs * mod->flops_fwd / shard, bf_bytes);
        double bf = c->eff.bwd_factor > 0 ? c->eff.bwd_factor : 1;
        b = sc_cost_call_time(c, dt, bf * mbs * sc_module_flops_bwd(mod) / shard, bb_bytes);
    }
    if (fwd_s)
        *fwd_s = f;
    if (bwd_s)
        *bwd_s = b;
    return SC_OK;
}

double sc_cost_module_wgrad_time(const sc_cluster *c, const sc_module *mod,
                                 const sc_compute_cfg *cc, double seq_len, double bwd_s)
{
    if (!sc_measured_here(c, mod) && sc_cost_uses_kernels(c, mod))
        return sc_cost_kernels_wgrad_time(c, mod, cc);
    double fb = sc_module_flops_bwd(mod);
    if (!(fb > 0) || !(bwd_s > 0))
        return 0;
    double share = sc_module_weight_flops(mod, seq_len) / fb;
    return bwd_s * (share < 1 ? share : 1);
}

sc_status sc_cost_modules_time(const sc_cluster *c, sc_module *const *mods, int n, sc_dtype dt,
                               int tp, int mbs, double *fwd_s, double *bwd_s, sc_error *err)
{
    return sc_cost_modules_time_sp(c, mods, n, dt, tp, 0, mbs, fwd_s, bwd_s, err);
}

sc_status sc_cost_modules_time_sp(const sc_cluster *c, sc_module *const *mods, int n,
                                  sc_dtype dt, int tp, int sp, int mbs, double *fwd_s,
                                  double *bwd_s, sc_error *err)
{
    sc_compute_cfg cc = {dt, tp, sp, mbs, SC_ATTN_UNFUSED, 0, 0, 0, 0, 0};
    return sc_cost_modules_time_cfg(c, mods, n, &cc, fwd_s, bwd_s, err);
}

sc_status sc_cost_modules_time_cfg(const sc_cluster *c, sc_module *const *mods, int n,
                                   const sc_compute_cfg *cc, double *fwd_s, double *bwd_s,
                                   sc_error *err)
{
    double tf = 0, tb = 0;
    for (int i = 0; i < n; i++) {
        double f, b;
        sc_status st = sc_cost_module_time_cfg(c, mods[i], cc, &f, &b, err);
        if (st)
            return st;
        tf += f;
        tb += b;
    }
    if (fwd_s)
        *fwd_s = tf;
    if (bwd_s)
        *bwd_s = tb;
    return SC_OK;
}

/* The first module with heads, or grouped-query key/value heads, that tp
 * does not divide (*count: that count), or NULL. */
static const sc_module *tp_blocker(const sc_model *m, int tp, double *count)
{
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *x = m->modules[i];
        double h = sc_module_dim(x, "heads", 0), g = sc_module_dim(x, "kv_heads", 0);
        double bad = h > 0 && (tp < 1 || fmod(h, tp) != 0)   ? h
                     : g > 0 && (tp < 1 || fmod(g, tp) != 0) ? g
                                                             : 0;
        if (bad > 0) {
            if (count)
                *count = bad;
            return x;
        }
    }
    return NULL;
}

int sc_cost_tp_divides_heads(const sc_model *m, int tp)
{
    return tp_blocker(m, tp, NULL) == NULL;
}

sc_status sc_cost_tp_check(const sc_model *m, int tp, sc_error *err)
{
    double n = 0;
    const sc_module *x = tp_blocker(m, tp, &n);
    if (!x)
        return SC_OK;
    int kv = n != sc_module_dim(x, "heads", 0);
    return sc_err(err, SC_EINVAL,
                  "tp %d does not divide the %g %sheads of %s (tensor parallelism splits "
                  "attention by heads)",
                  tp, n, kv ? "key/value " : "", x->name);
}

sc_status sc_cost_model_check(const sc_model *m, const char *source, sc_error *err)
{
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *x = m->modules[i];
        if (x->flops_fwd > 0 || (x->has_measured && x->measured_fwd_s > 0))
            return SC_OK;
    }
    return sc_err(err, SC_EINVAL,
                  "%s: root: the model has no work (no FLOPs and no measured time%s): nothing "
                  "to simulate or plan",
                  source ? source : m->name,
                  m->root && m->root->n_children == 0 ? "; the root has no children" : "");
}
