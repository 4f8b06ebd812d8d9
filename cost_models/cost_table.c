/* cost_table.c - one cost row per module for `stagecraft cost`. O(modules).
 * tp communication: a module with a tp entry all-reduces tp_bytes * mbs over
 * the tp group in forward and the same in backward (Megatron-LM's f/g
 * operators, Shoeybi et al. 2019), with tp/gpus_per_node nodes spanned when
 * tp exceeds a node. */
#include <string.h>

#include "cost.h"

sc_status sc_cost_table(const sc_cluster *c, const sc_model *m, const sc_cost_cfg *cfg,
                        sc_cost_row **rows, int *n_rows, sc_cost_row *totals, sc_error *err)
{
    *rows = NULL;
    *n_rows = 0;
    if (cfg->tp < 1 || cfg->mbs < 1)
        return sc_err(err, SC_EINVAL, "cost: tp (%d) and mbs (%d) must be >= 1", cfg->tp,
                      cfg->mbs);
    if (!sc_coll_find(cfg->tp_algo))
        return sc_err(err, SC_ENOTFOUND, "no collective algorithm named \"%.64s\"", cfg->tp_algo);
    if ((unsigned)cfg->dtype >= SC_DTYPE_N)
        return sc_err(err, SC_EINVAL, "cost: dtype %d is not a dtype", (int)cfg->dtype);
    if (c->gpu.peak_flops[cfg->dtype] <= 0)
        return sc_err_no_peak(err, "cost", c, cfg->dtype, NULL,
                              "compute in one of those (--dtype D)");
    sc_cost_row *r = sc_calloc((size_t)(m->n_modules > 0 ? m->n_modules : 1), sizeof *r);
    if (!r)
        return sc_err(err, SC_ENOMEM, "cost: out of memory for %d rows", m->n_modules);
    double w, g, o;
    sc_cost_state_bytes(cfg->dtype, &w, &g, &o);
    int per_node = cfg->tp < c->gpus_per_node ? cfg->tp : c->gpus_per_node;
    sc_cost_row tot;
    memset(&tot, 0, sizeof tot);
    tot.mod = m->root;
    tot.depth = -1;
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *mod = m->modules[i];
        sc_cost_row *x = &r[i];
        double sh = mod->tp_shardable ? cfg->tp : 1;
        x->mod = mod;
        x->depth = mod->depth;
        x->params = mod->params / sh;
        sc_compute_cfg cc = {cfg->dtype, cfg->tp, cfg->sp, cfg->mbs, cfg->attn, 0, 0, 0, 0, cfg->fp8};
        sc_status st = sc_cost_module_time_cfg(c, mod, &cc, &x->fwd_s, &x->bwd_s, err);
        if (!st && mod->has_tp && cfg->tp > 1 && mod->tp_bytes > 0) {
            double t;
            x->tp_bytes = mod->tp_bytes * cfg->mbs;
            if (cfg->sp) {
                /* sequence parallelism: a reduce-scatter and an all-gather of the same
                 * bytes in place of each allreduce (Korthikanti et al. 2022, 4.2.2) */
                double ag = 0;
                st = sc_cost_coll(c, cfg->tp_algo, SC_COLL_REDUCE_SCATTER, x->tp_bytes, cfg->tp,
                                  per_node, &t, err);
                if (!st)
                    st = sc_cost_coll(c, cfg->tp_algo, SC_COLL_ALLGATHER, x->tp_bytes, cfg->tp,
                                      per_node, &ag, err);
                t += ag;
            } else {
                st = sc_cost_coll(c, cfg->tp_algo, SC_COLL_ALLREDUCE, x->tp_bytes, cfg->tp,
                                  per_node, &t, err);
            }
            x->tp_s = 2 * t;
        }
        if (st) {
            sc_free(r);
            sc_err_prefix(err, "%s", mod->name);
            return st;
        }
        x->state_bytes = x->params * (w + g + o);
        x->act_bytes =
            cfg->mbs * sc_cost_saved_bytes(mod, cfg->tp, cfg->sp, cfg->attn == SC_ATTN_FLASH);
        tot.params += x->params;
        tot.fwd_s += x->fwd_s;
        tot.bwd_s += x->bwd_s;
        tot.tp_bytes += x->tp_bytes;
        tot.tp_s += x->tp_s;
        tot.state_bytes += x->state_bytes;
        tot.act_bytes += x->act_bytes;
    }
    *rows = r;
    *n_rows = m->n_modules;
    if (totals)
        *totals = tot;
    return SC_OK;
}
