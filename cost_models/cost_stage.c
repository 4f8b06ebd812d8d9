/* cost_stage.c - what each virtual stage costs and moves (see cost.h,
 * sc_cost_stage): the one per-stage computation every layer reads. */
#include "cost_int.h"

#include <math.h>
#include <string.h>

int sc_cost_bucket_count(double grad_bytes, double bucket_bytes)
{
    double bucket = bucket_bytes > 0 ? bucket_bytes : SC_DEFAULT_BUCKET_BYTES;
    double k = ceil(grad_bytes / bucket);
    return k < 1 ? 1 : k > SC_MAX_BUCKETS ? SC_MAX_BUCKETS : (int)k;
}

/* Selective recompute of one attention module for mbs samples on one tp
 * rank: the scores and values, 4·s·s_kv·inner FLOPs per sample. */
static double selective_s(const sc_cluster *c, const sc_model *m, const sc_module *x,
                          sc_dtype dt, int mbs, double sh)
{
    double sq = sc_module_dim(x, "seq", m->seq_len);
    double skv = sc_module_dim(x, "kv_seq", sq);
    double heads = sc_module_dim(x, "heads", 0), kv = sc_module_dim(x, "kv", 0);
    double inner = heads > 0 && kv > 0 ? heads * kv : sc_module_dim(x, "hidden", 0);
    double k = sc_module_dim(x, "passages", 1);
    double fl = 4 * sq * skv * inner * k * mbs / sh;
    double eff = sc_cost_eff(c, dt, fl);
    return fl > 0 && eff > 0 ? fl / (c->gpu.peak_flops[dt] * eff) : 0;
}

/* The outermost leaf of x on side `last` (its first or last leaf). */
static const sc_module *edge_leaf(const sc_module *x, int last)
{
    while (x->n_children)
        x = x->children[last ? x->n_children - 1 : 0];
    return x;
}

double sc_cost_cut_bytes(const sc_model *m, int b)
{
    double bytes = m->leaves[b - 1]->act_out_bytes;
    if (!sc_partition_between_layers(m, b))
        bytes += sc_partition_layer_of(m->leaves[b])->act_out_bytes;
    return bytes;
}

/* The keys and values of x's fused attention kernels one rank holds per
 * microbatch under cc (its tokens, its share of the kv heads). */
static double kv_bytes(const sc_module *x, const sc_compute_cfg *cc)
{
    double bytes = 0;
    for (int i = 0; i < x->n_kernels; i++) {
        const sc_kernel *k = &x->kernels[i];
        if (k->op != SC_KOP_FLASH || !sc_kernel_runs(k, cc->attn))
            continue;
        /* the kernel's shape with its kv heads for heads: the rank's share of
         * them (tp) times the microbatch, its tokens, the head size */
        sc_kernel kv = *k;
        kv.batch = sc_kernel_kv_heads(k);
        double B, M, N, K;
        sc_cost_kernel_shape(&kv, cc, &B, &M, &N, &K);
        bytes += 2 * B * M * K * sc_dtype_bytes(cc->dtype);
    }
    return bytes;
}

void sc_kmemo_times(sc_kmemo *mm, const sc_cluster *c, const sc_compute_cfg *cc,
                    const sc_module *x, double *f, double *b, double *r, double *w)
{
    int hit = -1;
    for (int k = 0; k < mm->n && hit < 0; k++) {
        const sc_module *y = mm->e[k].x;
        if (y->n_kernels == x->n_kernels &&
            !memcmp(y->kernels, x->kernels, sizeof *x->kernels * (size_t)x->n_kernels) &&
            (y->kind == x->kind || (y->kind && x->kind && !strcmp(y->kind, x->kind))))
            hit = k;
    }
    if (hit < 0) {
        hit = mm->next;
        mm->next = (mm->next + 1) % SC_KMEMO;
        mm->n += mm->n < SC_KMEMO;
        mm->e[hit].x = x;
        sc_cost_kernels_time(c, x, cc, &mm->e[hit].f, &mm->e[hit].b, &mm->e[hit].r);
        mm->e[hit].w = sc_cost_kernels_wgrad_time(c, x, cc);
    }
    if (f)
        *f = mm->e[hit].f;
    if (b)
        *b = mm->e[hit].b;
    if (r)
        *r = mm->e[hit].r;
    if (w)
        *w = mm->e[hit].w;
}

sc_status sc_cost_module_time_memo(const sc_cluster *c, const sc_module *mod,
                                   const sc_compute_cfg *cc, sc_kmemo *mm, double *fwd_s,
                                   double *bwd_s, sc_error *err)
{
    if (!sc_cost_uses_kernels(c, mod) || sc_measured_here(c, mod))
        return sc_cost_module_time_cfg(c, mod, cc, fwd_s, bwd_s, err);
    sc_status st = sc_cost_cfg_check(c, cc, mod->name, err);
    if (!st)
        sc_kmemo_times(mm, c, cc, mod, fwd_s, bwd_s, NULL, NULL);
    return st;
}

sc_status sc_cost_stage(const sc_cluster *c, const sc_model *m, const sc_partition *part,
                        const sc_stage_cfg *cfg, sc_stage_info *info, sc_error *err)
{
    int S = part->n_stages, tp = cfg->tp, mbs = cfg->mbs;
    sc_dtype dt = cfg->dtype;
    double wb, gb, ob;
    sc_cost_state_bytes(dt, &wb, &gb, &ob);
    /* kernel-level leaves timed once per distinct kernel list (sc_kmemo);
     * the sums run in leaf order, so the results are those of timing each */
    sc_kmemo memo = {0};
    sc_compute_cfg cc = {dt, tp, cfg->sp, mbs, cfg->attn, cfg->q_frac, cfg->kv_frac,
                         cfg->tp_overlap, cfg->cp, cfg->fp8};
    /* what sc_cost_module_time_cfg would refuse, which the memo skips */
    if (m->n_leaves > 0) {
        sc_status st = sc_cost_cfg_check(c, &cc, m->leaves[0]->name, err);
        if (st)
            return st;
    }
    for (int s = 0; s < S; s++) {
        sc_stage_info *in = &info[s];
        *in = (sc_stage_info){0};
        int f0 = part->first[s], n = part->first[s + 1] - f0;
        sc_module *const *mods = m->leaves + f0;
        double params = 0, rc = 0, full = 0;
        sc_units units = {0};
        for (int i = 0; i < n; i++) {
            const sc_module *x = mods[i];
            double f, b, r = 0, w;
            int kern = sc_cost_uses_kernels(c, x) && !sc_measured_here(c, x);
            if (kern) {
                sc_kmemo_times(&memo, c, &cc, x, &f, &b, &r, &w);
            } else {
                sc_status st = sc_cost_module_time_cfg(c, x, &cc, &f, &b, err);
                if (st)
                    return st;
                w = sc_cost_module_wgrad_time(c, x, &cc, m->seq_len, b);
            }
            if (x->kind && !strcmp(x->kind, "head"))
                in->head_wgrad_s += w;
            in->fwd_s += f;
            if (sc_partition_recomputed(m->has_layers, x)) /* full recompute's */
                full += f;
            in->bwd_s += b;
            in->bwd_w_s += w;
            double sh = x->has_tp && x->tp_shardable ? tp : 1;
            params += x->params / sh;
            sc_units_add(&units, x, x->params / sh);
            if (x->has_tp && x->tp_bytes > 0) {
                in->tp_bytes += x->tp_bytes * mbs;
                in->tp_count++;
            }
            if (cfg->cp > 1)
                in->cp_bytes += kv_bytes(x, &cc);
            /* selective recompute re-runs the core attention: unfused, its
             * scores, softmax and context; fused, the kernel's forward
             * (Megatron-Core checkpoints the core attention whatever its
             * backend: attention.py, checkpoint_core_attention) */
            if (sc_cost_uses_kernels(c, x)) {
                if (!kern)
                    sc_cost_kernels_time(c, x, &cc, NULL, NULL, &r);
                rc += r;
            } else if (sc_module_is_attention(x)) {
                rc += selective_s(c, m, x, dt, mbs, sh);
            }
        }
        in->grad_bytes = params * sc_cost_grad_reduce_bytes(dt, cfg->grad_reduce_fp32);
        in->param_bytes = params * wb;
        in->unit_bytes =
            units.cur ? fmin(params, units.root + units.layer_max) * wb : in->param_bytes;
        in->recompute_full_s = full;
        in->recompute_s = cfg->recompute == SC_RECOMPUTE_FULL        ? full
                          : cfg->recompute == SC_RECOMPUTE_SELECTIVE ? rc
                                                                     : 0;
        in->buckets = sc_cost_bucket_count(in->grad_bytes, cfg->bucket_bytes);
        /* the framework's overhead on its kernels (overhead.h) */
        if (c->framework_overhead > 0) {
            double f = 1 + c->framework_overhead;
            in->fwd_s *= f;
            in->bwd_s *= f;
            in->bwd_w_s *= f;
            in->recompute_s *= f;
            in->recompute_full_s *= f;
            in->head_wgrad_s *= f;
        }
        /* PyTorch FSDP's own work on the gradients (sc_cost_fsdp_copies) */
        if (!strcmp(c->framework, "torch")) {
            /* its units: the stage's layers, and the root's leaves as one */
            in->fsdp = sc_cost_fsdp_copies(c, dt, params, units.layers + units.has_root,
                                           cfg->grad_reduce_fp32);
            double x = sc_cost_fsdp_time(&in->fsdp, cfg->zero, cfg->dp);
            in->bwd_s += x;
            in->bwd_w_s += x;
        }
    }
    /* boundary s -> s+1: the last leaf's output plus every inputs edge that
     * crosses it (relayed stage by stage) */
    for (int s = 0; s + 1 < S; s++)
        info[s].send_bytes = sc_cost_cut_bytes(m, part->first[s + 1]);
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *x = m->modules[i];
        for (int k = 0; k < x->n_inputs; k++) {
            const sc_module *y = sc_model_find(m, x->inputs[k]);
            if (!y)
                continue;
            int sy = sc_partition_stage_of(part, edge_leaf(y, 1)->leaf_index);
            int sx = sc_partition_stage_of(part, edge_leaf(x, 0)->leaf_index);
            for (int s = sy; s < sx; s++)
                info[s].send_bytes += y->act_out_bytes;
        }
    }
    double qf = sc_cost_q_share(cfg->q_frac, cfg->cp);
    for (int s = 0; s + 1 < S; s++)
        info[s].send_bytes = info[s].send_bytes * mbs * qf / tp;
    for (int s = 0; s < S && qf != 1; s++)
        info[s].tp_bytes *= qf;
    return SC_OK;
}
