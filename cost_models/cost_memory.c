/* cost_memory.c - memory per rank: model states under ZeRO, activations
 * under recompute policies, workspace; formulas in cost.h. O(n) in the
 * modules given. */
#include <math.h>
#include <string.h>

#include "cost_int.h"

static const char *const rc_names[] = {"none", "selective", "full"};

const char *sc_recompute_name(sc_recompute r)
{
    return (unsigned)r < SC_ARRAY_LEN(rc_names) ? rc_names[r] : "?";
}

int sc_recompute_parse(const char *s)
{
    for (size_t i = 0; s && i < SC_ARRAY_LEN(rc_names); i++)
        if (strcmp(s, rc_names[i]) == 0)
            return (int)i;
    return -1;
}

/* ZeRO paper, section 3: mixed-precision Adam keeps 2 + 2 + 12 bytes per
 * parameter (K = 12); full fp32 keeps 4 + 4 + 8. */
void sc_cost_state_bytes(sc_dtype dt, double *w, double *g, double *o)
{
    int wide = dt == SC_FP32 || dt == SC_TF32;
    *w = wide ? 4 : 2;
    *g = wide ? 4 : 2;
    *o = wide ? 8 : 12;
}

void sc_cost_states(sc_dtype dt, int grad_fp32, int zero, int dp, double params, double *W,
                    double *G, double *O)
{
    double w, g, o;
    sc_cost_state_bytes(dt, &w, &g, &o);
    if (dp < 1)
        dp = 1;
    *W = params * w / (zero >= 3 ? dp : 1);
    *G = zero >= 2 ? params * g / dp : params * sc_cost_grad_reduce_bytes(dt, grad_fp32);
    *O = params * o / (zero >= 1 ? dp : 1);
}

double sc_cost_grad_reduce_bytes(sc_dtype dt, int fp32)
{
    double w, g, o;
    sc_cost_state_bytes(dt, &w, &g, &o);
    return fp32 ? 4 : g;
}

/* x's position among its parent's children: a binary search on the
 * pre-order index (siblings' indices ascend), O(log children); a linear scan
 * when the indices are not set (a model not finished). A flat model of
 * 200,000 leaves made the scan quadratic per stage (issue 15). */
static int child_pos(const sc_module *p, const sc_module *x)
{
    int lo = 0, hi = p->n_children - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (p->children[mid]->index < x->index)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (p->n_children > 0 && p->children[lo] == x)
        return lo;
    int i = 0;
    while (i < p->n_children && p->children[i] != x)
        i++;
    return i;
}

/* The leaf that runs just before mod's first leaf (NULL for the first). */
static const sc_module *prev_leaf(const sc_module *mod)
{
    const sc_module *x = mod;
    while (x->n_children)
        x = x->children[0];
    while (x->parent) {
        const sc_module *p = x->parent;
        int i = child_pos(p, x);
        if (i > 0 && i < p->n_children) {
            const sc_module *y = p->children[i - 1];
            while (y->n_children)
                y = y->children[y->n_children - 1];
            return y;
        }
        x = p;
    }
    return NULL;
}

/* The root's child that holds mod (mod itself at depth <= 1). */
static const sc_module *layer_of(const sc_module *mod)
{
    while (mod->parent && mod->parent->parent)
        mod = mod->parent;
    return mod;
}

double sc_cost_saved_bytes(const sc_module *m, int tp, int sp, int selective)
{
    double t = tp > 1 ? tp : 1;
    double saved = m->act_saved_bytes;
    /* an attention, or a leaf of its own that keeps only a pass over its
     * scores (a traced nn.Dropout on them) */
    if (selective && (sc_module_is_attention(m) || m->act_saved_scores > 0)) {
        if (m->n_children)
            return 0; /* its leaves are counted */
        if (m->act_saved_scores < 0) /* no scores given: it keeps its output */
            return m->act_out_bytes / (m->tp_shardable ? t : 1);
        saved -= m->act_saved_scores;
    }
    if (!m->has_tp)
        return saved;
    double whole = m->tp_shardable ? (m->act_saved_rep < saved ? m->act_saved_rep : saved) : saved;
    return (saved - whole) / t + whole / (sp ? t : 1);
}

double sc_cost_zero3_gathered(sc_dtype dt, double params, double root, double layer,
                              double *weights, double *grads)
{
    double w, g, o;
    sc_cost_state_bytes(dt, &w, &g, &o);
    double W = fmin(params, root + 2 * layer) * w, G = fmax(root, layer) * g;
    if (weights)
        *weights = W;
    if (grads)
        *grads = G;
    return W + G;
}

sc_status sc_cost_memory(const sc_cluster *c, sc_module *const *mods, int n,
                         const sc_mem_cfg *cfg, sc_mem *out, sc_error *err)
{
    if ((unsigned)cfg->dtype >= SC_DTYPE_N || cfg->tp < 1 || cfg->dp < 1 || cfg->zero < 0 ||
        cfg->zero > 3 || cfg->mbs < 1 || cfg->inflight < 0 || cfg->cp < 0 ||
        (unsigned)cfg->recompute > SC_RECOMPUTE_FULL)
        return sc_err(err, SC_EINVAL,
                      "memory: bad configuration (dtype %d, tp %d, dp %d, zero %d, mbs %d, "
                      "inflight %d, recompute %d)",
                      (int)cfg->dtype, cfg->tp, cfg->dp, cfg->zero, cfg->mbs, cfg->inflight,
                      (int)cfg->recompute);
    double tp = cfg->tp, dp = cfg->dp, k = cfg->inflight, mbs = cfg->mbs;
    double params = 0, saved = 0, selective = 0, max_layer = 0, layer_sum = 0, ckpt = 0;
    double kept = 0; /* full recompute: what the leaves outside layers save, not re-run */
    sc_units units = {0};
    const sc_module *cur_layer = NULL;
    for (int i = 0; i < n; i++) {
        const sc_module *m = mods[i];
        double sh = m->tp_shardable ? tp : 1;
        /* flash attention keeps no scores whatever the recompute */
        double one = sc_cost_saved_bytes(m, cfg->tp, cfg->sp, cfg->attn == SC_ATTN_FLASH);
        params += m->params / sh;
        sc_units_add(&units, m, m->params / sh);
        saved += one;
        selective += sc_cost_saved_bytes(m, cfg->tp, cfg->sp, 1);
        if (!sc_partition_recomputed(cfg->has_layers, m)) {
            kept += one; /* the embedding, final norm, LM head, loss: never recomputed */
            continue;
        }
        const sc_module *ly = layer_of(m);
        if (ly != cur_layer) {
            /* full recompute keeps each layer's input (the activation
             * before its first leaf; sequence-sharded under sp) */
            const sc_module *pl = prev_leaf(m);
            ckpt += pl ? pl->act_out_bytes / (cfg->sp && tp > 1 ? tp : 1) : 0;
            cur_layer = ly;
            layer_sum = 0;
        }
        layer_sum += one;
        if (layer_sum > max_layer)
            max_layer = layer_sum;
    }
    sc_mem r;
    memset(&r, 0, sizeof r);
    r.params = params;
    sc_cost_states(cfg->dtype, cfg->grad_fp32, cfg->zero, dp, params, &r.weights, &r.grads,
                   &r.optimizer);
    double gw, gg;
    r.gathered = sc_cost_zero3_gathered(cfg->dtype, params, units.root, units.layer_max, &gw,
                                        &gg);
    if (cfg->zero >= 3 && cfg->dp > 1) {
        r.weights += gw;
        r.grads += gg;
    }
    switch (cfg->recompute) {
    case SC_RECOMPUTE_NONE:
        r.activations = k * mbs * saved;
        break;
    case SC_RECOMPUTE_SELECTIVE:
        r.activations = k * mbs * selective;
        break;
    case SC_RECOMPUTE_FULL:
        r.activations = k * mbs * (ckpt + kept) + (k > 0 ? mbs * max_layer : 0);
        break;
    }
    if (cfg->cp > 1) /* each rank of a cp group holds 1/cp of every token-sized tensor */
        r.activations /= cfg->cp;
    r.workspace = c->eff.workspace_bytes;
    r.total = r.weights + r.grads + r.optimizer + r.activations + r.workspace;
    *out = r;
    return SC_OK;
}

/* Seconds to move bytes through HBM at the calibrated sustained rate. */
static double hbm_s(const sc_cluster *c, double bytes)
{
    return bytes / (c->gpu.hbm_bytes_per_s * c->eff.memory_bw);
}

sc_fsdp_cost sc_cost_fsdp_copies(const sc_cluster *c, sc_dtype dt, double params, int units,
                                 int reduce_fp32)
{
    sc_fsdp_cost x = {0};
    double w, g, o;
    sc_cost_state_bytes(dt, &w, &g, &o);
    if (params <= 0 || !(c->gpu.hbm_bytes_per_s * c->eff.memory_bw > 0))
        return x;
    double kern = c->eff.gemm.sms > 0 ? c->eff.gemm.kernel_s : c->eff.op_overhead_s;
    int mixed = w < 4;
    double r = sc_cost_grad_reduce_bytes(dt, reduce_fp32);
    x.all_s = 2 * (units > 0 ? units : 1) * kern +
              hbm_s(c, params * (2 * g + (r > g ? g + r : 0) + 2 * r));
    x.shard_s = hbm_s(c, params * ((mixed && r < 4 ? r + 4 : 0) + 12));
    x.gather_s = mixed ? hbm_s(c, params * (4 + w)) : 0;
    return x;
}

/* Bytes per parameter of each kernel; their count */
static int optimizer_per_param(const sc_cluster *c, sc_dtype dt, double per[SC_OPT_KERNELS])
{
    double w, g, o;
    sc_cost_state_bytes(dt, &w, &g, &o);
    if (c->eff.gemm.sms <= 0) {
        per[0] = 2 * (w + g + o);
        return 1;
    }
    int n = 0;
    per[n++] = 4;  /* the L2 norm of the fp32 main gradients */
    per[n++] = 28; /* fused Adam: read g, w, m, v; write w, m, v */
    if (w < 4)
        per[n++] = 6; /* master weights to the 16-bit copy */
    per[n++] = 4;     /* zero the gradient buffer */
    return n;
}

int sc_cost_optimizer_kernels(const sc_cluster *c, sc_dtype dt, double params,
                              double bytes[SC_OPT_KERNELS])
{
    if (params <= 0)
        return 0;
    int n = optimizer_per_param(c, dt, bytes);
    for (int i = 0; i < n; i++)
        bytes[i] *= params;
    return n;
}

double sc_cost_optimizer_time(const sc_cluster *c, sc_dtype dt, double params)
{
    double per[SC_OPT_KERNELS], sum = 0;
    if (params <= 0)
        return 0;
    int n = optimizer_per_param(c, dt, per);
    for (int i = 0; i < n; i++)
        sum += per[i];
    return (c->eff.gemm.sms > 0 ? n * c->eff.gemm.kernel_s : c->eff.op_overhead_s) +
           hbm_s(c, params * sum);
}
