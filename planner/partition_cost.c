/* partition_cost.c - the stage cost model of the partitioners (see
 * partitioner.h): a context of prefix sums built once per call, O(1) stage
 * time and O(G) stage memory, sc_partition_eval, and small helpers.
 * Building the context costs O(M log M + L + E + (L + S)·G + S·tp·min(dp,
 * gpus_per_node)) time and O((L + S)·(G + 1)) memory (M modules, L leaves,
 * E inputs edges, G shared groups). */
#include "partitioner.h"
#include "partitioner_hook.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_names[] = {"replicate", "strict"};

const char *sc_shared_policy_name(sc_shared_policy p)
{
    return (unsigned)p < SC_ARRAY_LEN(policy_names) ? policy_names[p] : "?";
}

int sc_shared_policy_parse(const char *s)
{
    for (size_t i = 0; s && i < SC_ARRAY_LEN(policy_names); i++)
        if (!strcmp(s, policy_names[i]))
            return (int)i;
    return -1;
}

void sc_partitioner_cfg_init(sc_partitioner_cfg *cfg, const sc_model *m, const sc_cluster *c,
                             int n_stages)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->model = m;
    cfg->cluster = c;
    cfg->tp = cfg->mbs = cfg->dp = 1;
    cfg->zero = 0;
    cfg->recompute = SC_RECOMPUTE_NONE;
    cfg->n_stages = n_stages;
    cfg->pp = n_stages;
    cfg->v = 1;
    cfg->inflight = NULL;
    cfg->inflight_max = n_stages;
    cfg->mem_weight = SC_PARTITION_W_SPEED;
    cfg->shared = SC_SHARED_REPLICATE;
}

static sc_status check_cfg(const sc_partitioner_cfg *cfg, sc_error *err)
{
    if (!cfg || !cfg->model || !cfg->cluster)
        return sc_err(err, SC_EINVAL, "partition: no model or cluster");
    const sc_model *m = cfg->model;
    if (cfg->tp < 1 || cfg->mbs < 1 || cfg->dp < 1)
        return sc_err(err, SC_EINVAL, "partition: tp %d, mbs %d, dp %d must be >= 1", cfg->tp,
                      cfg->mbs, cfg->dp);
    if (cfg->zero < 0 || cfg->zero > 3)
        return sc_err(err, SC_EINVAL, "partition: ZeRO stage %d is out of range [0, 3]",
                      cfg->zero);
    if ((unsigned)cfg->recompute > SC_RECOMPUTE_FULL)
        return sc_err(err, SC_EINVAL, "partition: bad recompute policy %d", (int)cfg->recompute);
    if (cfg->pp < 1 || cfg->v < 1 || cfg->n_stages != cfg->pp * cfg->v)
        return sc_err(err, SC_EINVAL, "partition: %d stages is not pp %d x v %d", cfg->n_stages,
                      cfg->pp, cfg->v);
    if (!(cfg->mem_weight >= 0 && cfg->mem_weight <= 1))
        return sc_err(err, SC_EINVAL, "partition: memory weight %g is out of range [0, 1]",
                      cfg->mem_weight);
    if ((unsigned)cfg->shared > SC_SHARED_STRICT)
        return sc_err(err, SC_EINVAL, "partition: bad shared-group policy %d", (int)cfg->shared);
    if (cfg->inflight) {
        for (int r = 0; r < cfg->pp; r++)
            if (cfg->inflight[r] < 0)
                return sc_err(err, SC_EINVAL, "partition: rank %d has %d microbatches in flight",
                              r, cfg->inflight[r]);
    } else if (cfg->inflight_max < 0) {
        return sc_err(err, SC_EINVAL, "partition: %d microbatches in flight", cfg->inflight_max);
    }
    if (!m->leaves || m->n_leaves < 1)
        return sc_err(err, SC_EINVAL, "partition: model %s is not finished or has no leaves",
                      m->name);
    if (m->n_leaves < cfg->n_stages)
        return sc_err(err, SC_EINVAL, "partition: %s has %d leaves, fewer than the %d stages",
                      m->name, m->n_leaves, cfg->n_stages);
    return SC_OK;
}

/* ---- helpers over the tree ---------------------------------------------- */


static const sc_module *layer_of(const sc_module *mod)
{
    while (mod->parent && mod->parent->parent)
        mod = mod->parent;
    return mod;
}

static int cmp_mod_name(const void *a, const void *b)
{
    return strcmp((*(sc_module *const *)a)->name, (*(sc_module *const *)b)->name);
}

static const sc_module *find_sorted(sc_module **sorted, int n, const char *name)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(sorted[mid]->name, name);
        if (!c)
            return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* State bytes of `params` parameters under the ZeRO stage (sc_cost_states).
 * The reduce dtype is not passed: the planner's partitioner hook plans under
 * ZeRO 3 (partitioner_hook.c), whose sharded gradients keep their width
 * whatever the reduction moves. */
static double state_bytes(const sc_partitioner_cfg *cfg, double params)
{
    double W, G, O;
    sc_cost_states(cfg->model->dtype, 0, cfg->zero, cfg->dp, params, &W, &G, &O);
    return W + G + O;
}

/* ---- context ------------------------------------------------------------- */

void sc_pctx_free(sc_pctx *x)
{
    if (!x)
        return;
    sc_free(x->t);
    sc_free(x->C);
    sc_free(x->bytes);
    sc_free(x->comm[0]);
    sc_free(x->comm[1]);
    sc_free(x->inter);
    sc_free(x->forbid);
    sc_free(x->P);
    sc_free(x->A);
    sc_free(x->Asel);
    sc_free(x->in_bytes);
    sc_free(x->ckpt);
    sc_free(x->AL);
    sc_free(x->K);
    sc_free(x->out);
    sc_free(x->layer);
    sc_free(x->layer_lo);
    sc_free(x->layer_hi);
    sc_free(x->sparse);
    sc_free(x->kc);
    sc_free(x->ZR);
    sc_free(x->ZU);
    sc_free(x->unit_lo);
    sc_free(x->unit_hi);
    sc_free(x->unit_next);
    sc_free(x->unit_prev);
    sc_free(x->usparse);
    for (int g = 0; g < x->n_groups; g++) {
        sc_free(x->groups[g].here);
        sc_free(x->groups[g].next);
    }
    sc_free(x->groups);
    memset(x, 0, sizeof *x);
}

/* GPU index -> node for placement tp,pp,dp. */
static int crosses(const sc_partitioner_cfg *cfg, int r1, int r2)
{
    int gpn = cfg->cluster->gpus_per_node, tp = cfg->tp, pp = cfg->pp;
    int nd = cfg->dp < gpn ? cfg->dp : gpn;
    for (int d = 0; d < nd; d++)
        for (int t = 0; t < tp; t++) {
            long a = ((long)d * pp + r1) * tp + t, b = ((long)d * pp + r2) * tp + t;
            if (a / gpn != b / gpn)
                return 1;
        }
    return 0;
}

static sc_status groups_init(sc_pctx *x, sc_error *err)
{
    const sc_model *m = x->m;
    int L = x->L, tp = x->tp;
    /* the model's groups, in pre-order of first appearance */
    int ng = m->n_groups;
    x->groups = sc_calloc((size_t)(ng ? ng : 1), sizeof *x->groups);
    if (!x->groups)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    x->n_groups = ng;
    for (int g = 0; g < ng; g++)
        x->groups[g].name = m->groups[g].name;
    for (int g = 0; g < ng; g++) {
        const sc_model_group *MG = &m->groups[g];
        sc_pgroup *G = &x->groups[g];
        G->here = sc_calloc((size_t)L + 1, sizeof *G->here);
        G->next = sc_malloc(sizeof *G->next * ((size_t)L + 1));
        if (!G->here || !G->next)
            return sc_err(err, SC_ENOMEM, "partition: out of memory");
        G->span_lo = L;
        G->span_hi = -1;
        for (int k = 0; k < MG->n_mods; k++) {
            const sc_module *a = m->modules[MG->mods[k]];
            int lo = sc_module_first_leaf(a), hi = sc_module_last_leaf(a);
            if (lo < G->span_lo) {
                G->span_lo = lo;
                G->first_name = a->name;
            }
            if (hi > G->span_hi) {
                G->span_hi = hi;
                G->last_name = a->name;
            }
        }
        for (int l = 0; l < L; l++) {
            const sc_module *a = m->leaves[l];
            int member = a->group == g;
            /* sc_cost_memory's sharding rule (step.c also tests has_tp, which
             * tp_shardable implies for every loaded or generated model);
             * one rule keeps memory monotone in the range */
            double p = member ? a->params / (a->tp_shardable ? tp : 1) : 0;
            G->here[l + 1] = G->here[l] + p;
        }
        G->all = G->here[L];
        G->next[L] = L;
        for (int l = L - 1; l >= 0; l--) {
            const sc_module *a = m->leaves[l];
            G->next[l] = a->group == g ? l : G->next[l + 1];
        }
    }
    return SC_OK;
}

/* A sparse table over vals[0..n): level q holds the max of 2^q consecutive
 * values; *levels its depth. NULL when out of memory. */
static double *sparse_build(const double *vals, int n, int *levels)
{
    int lv = 1;
    while ((1 << lv) <= n)
        lv++;
    *levels = lv;
    double *sp = sc_malloc(sizeof *sp * (size_t)(n > 0 ? n : 1) * (size_t)lv);
    if (!sp)
        return NULL;
    for (int a = 0; a < n; a++)
        sp[a] = vals[a];
    for (int q = 1; q < lv; q++)
        for (int a = 0; a + (1 << q) <= n; a++) {
            double u = sp[(q - 1) * n + a], w = sp[(q - 1) * n + a + (1 << (q - 1))];
            sp[q * n + a] = u > w ? u : w;
        }
    return sp;
}

/* The max of entries lo..hi (inclusive, lo <= hi) of a sparse table over n. */
static double sparse_max(const double *sp, int n, int lo, int hi)
{
    int q = 0;
    while ((2 << q) <= hi - lo + 1)
        q++;
    double u = sp[q * n + lo], w = sp[q * n + hi - (1 << q) + 1];
    return u > w ? u : w;
}

/* ZeRO 3's units (sc_cost_zero3_gathered): runs of leaves that share a
 * layer (sc_partition_layer_of), the rest the root unit. */
static sc_status units_init(sc_pctx *x, sc_error *err)
{
    const sc_model *m = x->m;
    int L = x->L, tp = x->tp;
    x->ZR = sc_calloc((size_t)L + 1, sizeof *x->ZR);
    x->ZU = sc_calloc((size_t)L + 1, sizeof *x->ZU);
    x->unit_lo = sc_malloc(sizeof *x->unit_lo * (size_t)(L + 1));
    x->unit_hi = sc_malloc(sizeof *x->unit_hi * (size_t)(L + 1));
    x->unit_next = sc_malloc(sizeof *x->unit_next * (size_t)(L + 1));
    x->unit_prev = sc_malloc(sizeof *x->unit_prev * (size_t)(L + 1));
    double *sums = sc_calloc((size_t)L + 1, sizeof *sums);
    if (!x->ZR || !x->ZU || !x->unit_lo || !x->unit_hi || !x->unit_next || !x->unit_prev ||
        !sums) {
        sc_free(sums);
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    }
    const sc_module *cur = NULL;
    int nu = 0;
    for (int l = 0; l < L; l++) {
        const sc_module *a = m->leaves[l];
        double p = a->params / (a->tp_shardable ? tp : 1); /* sc_cost_memory's rule */
        const sc_module *u = sc_partition_layer_of(a);
        x->ZR[l + 1] = x->ZR[l] + (u ? 0 : p);
        x->ZU[l + 1] = x->ZU[l] + (u ? p : 0);
        if (u && u != cur) {
            x->unit_lo[nu] = l;
            nu++;
        }
        if (u) {
            x->unit_hi[nu - 1] = l + 1;
            sums[nu - 1] += p;
        }
        cur = u;
    }
    x->n_units = nu;
    for (int l = L, k = nu; l >= 0; l--) {
        while (k > 0 && x->unit_hi[k - 1] > l)
            k--;
        x->unit_next[l] = k;
    }
    for (int l = 0, k = -1; l <= L; l++) {
        while (k + 1 < nu && x->unit_lo[k + 1] < l)
            k++;
        x->unit_prev[l] = k;
    }
    x->usparse = sparse_build(sums, nu, &x->unit_levels);
    sc_free(sums);
    if (!x->usparse)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    x->z3 = 1;
    return SC_OK;
}

/* The largest unit's params within leaves [i, j) (0 when none). */
static double unit_max(const sc_pctx *x, int i, int j)
{
    int a = x->unit_next[i], b = x->unit_prev[j];
    if (a >= x->n_units || b < 0 || a > b)
        return 0;
    double lo_part = x->ZU[x->unit_hi[a] < j ? x->unit_hi[a] : j] -
                     x->ZU[x->unit_lo[a] > i ? x->unit_lo[a] : i];
    if (a == b)
        return lo_part;
    double hi_part = x->ZU[x->unit_hi[b] < j ? x->unit_hi[b] : j] - x->ZU[x->unit_lo[b]];
    double r = lo_part > hi_part ? lo_part : hi_part;
    if (a + 1 <= b - 1) {
        double u = sparse_max(x->usparse, x->n_units, a + 1, b - 1);
        if (u > r)
            r = u;
    }
    return r;
}

static sc_status memory_init(sc_pctx *x, sc_error *err)
{
    const sc_model *m = x->m;
    const sc_partitioner_cfg *cfg = x->cfg;
    int L = x->L, tp = x->tp;
    x->P = sc_calloc((size_t)L + 1, sizeof *x->P);
    x->A = sc_calloc((size_t)L + 1, sizeof *x->A);
    x->Asel = sc_calloc((size_t)L + 1, sizeof *x->Asel);
    x->in_bytes = sc_calloc((size_t)L, sizeof *x->in_bytes);
    x->ckpt = sc_calloc((size_t)L + 1, sizeof *x->ckpt);
    x->AL = sc_calloc((size_t)L + 1, sizeof *x->AL);
    x->K = sc_calloc((size_t)L + 1, sizeof *x->K);
    x->out = sc_calloc((size_t)L + 1, 1);
    x->layer = sc_malloc(sizeof *x->layer * (size_t)L);
    x->layer_lo = sc_malloc(sizeof *x->layer_lo * (size_t)L);
    x->layer_hi = sc_malloc(sizeof *x->layer_hi * (size_t)L);
    x->kc = sc_malloc(sizeof *x->kc * (size_t)x->pp);
    if (!x->P || !x->A || !x->Asel || !x->in_bytes || !x->ckpt || !x->AL || !x->K || !x->out ||
        !x->layer || !x->layer_lo ||
        !x->layer_hi || !x->kc)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    const sc_module *cur = NULL, *ccur = NULL;
    int nl = -1;
    double cpd = cfg->cp > 1 ? cfg->cp : 1; /* a cp rank holds 1/cp of the tokens */
    for (int l = 0; l < L; l++) {
        const sc_module *a = m->leaves[l];
        double sh = a->tp_shardable ? tp : 1;
        x->P[l + 1] = x->P[l] + a->params / sh;
        double one = sc_cost_saved_bytes(a, tp, cfg->sp, cfg->attn == SC_ATTN_FLASH) / cpd;
        x->A[l + 1] = x->A[l] + one;
        /* sc_cost_memory's full recompute: a leaf outside layers keeps what it
         * saves and neither checkpoints an input nor counts in a layer */
        x->out[l] = !sc_partition_recomputed(m->has_layers, a);
        x->AL[l + 1] = x->AL[l] + (x->out[l] ? 0 : one);
        x->K[l + 1] = x->K[l] + (x->out[l] ? one : 0);
        x->Asel[l + 1] = x->Asel[l] + sc_cost_saved_bytes(a, tp, cfg->sp, 1) / cpd;
        x->in_bytes[l] =
            l > 0 ? m->leaves[l - 1]->act_out_bytes / (cfg->sp ? tp : 1) / cpd : 0;
        const sc_module *ly = layer_of(a);
        x->ckpt[l + 1] = x->ckpt[l] + (!x->out[l] && ly != ccur ? x->in_bytes[l] : 0);
        if (!x->out[l])
            ccur = ly;
        if (ly != cur) {
            cur = ly;
            nl++;
            x->layer_lo[nl] = l;
        }
        x->layer[l] = nl;
        x->layer_hi[nl] = l + 1;
    }
    x->n_layers = nl + 1;
    /* sparse table of the layers' activation sums (max_layer) */
    int n = x->n_layers;
    double *sums = sc_malloc(sizeof *sums * (size_t)(n > 0 ? n : 1));
    if (!sums)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    for (int a = 0; a < n; a++)
        sums[a] = x->AL[x->layer_hi[a]] - x->AL[x->layer_lo[a]];
    x->sparse = sparse_build(sums, n, &x->levels);
    sc_free(sums);
    if (!x->sparse)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    for (int r = 0; r < x->pp; r++) {
        int k = cfg->inflight ? cfg->inflight[r] : cfg->inflight_max;
        x->kc[r] = (k + x->v - 1) / x->v;
    }
    x->ws = cfg->cluster->eff.workspace_bytes;
    x->cap = (cfg->cluster->gpu.memory_bytes - x->ws) / x->v;
    x->state_bpp = state_bytes(cfg, 1.0);
    return SC_OK;
}

static sc_status comm_init(sc_pctx *x, sc_error *err)
{
    const sc_model *m = x->m;
    const sc_partitioner_cfg *cfg = x->cfg;
    int L = x->L, S = x->S;
    sc_status st = SC_OK;
    x->bytes = sc_calloc((size_t)L + 1, sizeof *x->bytes);
    x->comm[0] = sc_calloc((size_t)L + 1, sizeof *x->comm[0]);
    x->comm[1] = sc_calloc((size_t)L + 1, sizeof *x->comm[1]);
    x->inter = sc_calloc((size_t)S, 1);
    double *acc = sc_calloc((size_t)L + 2, sizeof *acc);
    sc_module **sorted = sc_malloc(sizeof *sorted * (size_t)m->n_modules);
    if (!x->bytes || !x->comm[0] || !x->comm[1] || !x->inter || !acc || !sorted) {
        st = sc_err(err, SC_ENOMEM, "partition: out of memory");
        goto out;
    }
    /* inputs edges: producer y's output crosses boundaries (ylast, xfirst] */
    memcpy(sorted, m->modules, sizeof *sorted * (size_t)m->n_modules);
    qsort(sorted, (size_t)m->n_modules, sizeof *sorted, cmp_mod_name);
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *a = m->modules[i];
        for (int k = 0; k < a->n_inputs; k++) {
            const sc_module *y = find_sorted(sorted, m->n_modules, a->inputs[k]);
            if (!y)
                continue;
            int yl = sc_module_last_leaf(y), xf = sc_module_first_leaf(a);
            if (yl < xf) {
                acc[yl + 1] += y->act_out_bytes;
                acc[xf + 1] -= y->act_out_bytes;
            }
        }
    }
    double run = 0;
    for (int b = 1; b < L; b++) {
        run += acc[b];
        x->bytes[b] = (sc_cost_cut_bytes(m, b) + run) * x->mbs / x->tp;
    }
    int any_inter = 0;
    for (int k = 0; k + 1 < S; k++) {
        x->inter[k] = (unsigned char)crosses(cfg, k % x->pp, (k + 1) % x->pp);
        any_inter |= x->inter[k];
    }
    int gpn = cfg->cluster->gpus_per_node, sharing = x->tp < gpn ? x->tp : gpn;
    for (int b = 1; b < L && !st; b++) {
        double t0 = 0, t1 = 0;
        st = sc_cost_p2p(cfg->cluster, x->bytes[b], 0, 1, &t0, err);
        if (!st && any_inter)
            st = sc_cost_p2p(cfg->cluster, x->bytes[b], 1, sharing, &t1, err);
        x->comm[0][b] = 2 * t0;
        x->comm[1][b] = 2 * t1;
    }
    if (st)
        sc_err_prefix(err, "partition");
out:
    sc_free(acc);
    sc_free(sorted);
    return st;
}

sc_status sc_pctx_init(sc_pctx *x, const sc_partitioner_cfg *cfg, sc_error *err)
{
    memset(x, 0, sizeof *x);
    sc_status st = check_cfg(cfg, err);
    if (st)
        return st;
    const sc_model *m = cfg->model;
    x->cfg = cfg;
    x->m = m;
    x->L = m->n_leaves;
    x->S = cfg->n_stages;
    x->pp = cfg->pp;
    x->v = cfg->v;
    x->tp = cfg->tp;
    x->mbs = cfg->mbs;
    int L = x->L;
    x->t = sc_malloc(sizeof *x->t * (size_t)L);
    x->C = sc_calloc((size_t)L + 1, sizeof *x->C);
    x->forbid = sc_calloc((size_t)L + 1, 1);
    if (!x->t || !x->C || !x->forbid) {
        sc_pctx_free(x);
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    }
    sc_compute_cfg cc = {m->dtype, x->tp, cfg->sp, x->mbs, cfg->attn, 0, 0, cfg->tp_overlap,
                         cfg->cp, cfg->fp8};
    sc_kmemo memo = {0}; /* each distinct layer timed once */
    for (int l = 0; l < L && !st; l++) {
        double f = 0, b = 0;
        st = sc_cost_module_time_memo(cfg->cluster, m->leaves[l], &cc, &memo, &f, &b, err);
        x->t[l] = f + b;
        x->C[l + 1] = x->C[l] + x->t[l];
    }
    if (!st)
        st = comm_init(x, err);
    if (!st)
        st = memory_init(x, err);
    if (!st && cfg->zero >= 3 && cfg->dp > 1)
        st = units_init(x, err);
    if (!st)
        st = groups_init(x, err);
    if (st) {
        sc_pctx_free(x);
        return st;
    }
    /* only between layers: no boundary inside one */
    if (cfg->layer_cuts)
        for (int b = 1; b < L; b++)
            x->forbid[b] = !sc_partition_between_layers(m, b);
    /* strict: no boundary inside a group's span */
    if (cfg->shared == SC_SHARED_STRICT) {
        int *d = sc_calloc((size_t)L + 2, sizeof *d);
        if (!d) {
            sc_pctx_free(x);
            return sc_err(err, SC_ENOMEM, "partition: out of memory");
        }
        for (int g = 0; g < x->n_groups; g++)
            if (x->groups[g].span_hi > x->groups[g].span_lo) {
                d[x->groups[g].span_lo + 1]++;
                d[x->groups[g].span_hi + 1]--;
            }
        int run = 0;
        for (int b = 1; b < L; b++) {
            run += d[b];
            x->forbid[b] |= run > 0;
        }
        sc_free(d);
    }
    x->n_allowed = 0;
    for (int b = 1; b < L; b++)
        x->n_allowed += !x->forbid[b];
    return SC_OK;
}

double sc_pctx_time(const sc_pctx *x, int k, int i, int j)
{
    double recv = k > 0 ? x->comm[x->inter[k - 1]][i] : 0;
    double send = k < x->S - 1 ? x->comm[x->inter[k]][j] : 0;
    return (x->C[j] + send) - (x->C[i] - recv);
}

static double max_layer(const sc_pctx *x, int i, int j)
{
    int li = x->layer[i], lj = x->layer[j - 1];
    if (li == lj)
        return x->AL[j] - x->AL[i];
    double a = x->AL[x->layer_hi[li]] - x->AL[i], b = x->AL[j] - x->AL[x->layer_lo[lj]];
    double r = a > b ? a : b;
    int lo = li + 1, hi = lj - 1; /* full layers between, inclusive */
    if (lo <= hi) {
        double u = sparse_max(x->sparse, x->n_layers, lo, hi);
        if (u > r)
            r = u;
    }
    return r;
}

double sc_pctx_memx(const sc_pctx *x, int k, int i, int j)
{
    double params = x->P[j] - x->P[i];
    for (int g = 0; g < x->n_groups; g++) {
        const sc_pgroup *G = &x->groups[g];
        if (G->next[i] < j)
            params += G->all - (G->here[j] - G->here[i]);
    }
    double kc = x->kc[k % x->pp], mbs = x->mbs, act = 0;
    switch (x->cfg->recompute) {
    case SC_RECOMPUTE_NONE:
        act = kc * mbs * (x->A[j] - x->A[i]);
        break;
    case SC_RECOMPUTE_SELECTIVE:
        act = kc * mbs * (x->Asel[j] - x->Asel[i]);
        break;
    case SC_RECOMPUTE_FULL:
        /* every layer's input stays (the stage's own input too, when it
         * starts inside a layer), one layer at a time is recomputed */
        act = kc * mbs *
                  ((x->out[i] ? 0 : x->in_bytes[i]) + x->ckpt[j] - x->ckpt[i + 1] +
                   x->K[j] - x->K[i]) +
              (kc > 0 ? mbs * max_layer(x, i, j) : 0);
        break;
    }
    double gathered = 0;
    if (x->z3) {
        double P = x->P[j] - x->P[i], R = x->ZR[j] - x->ZR[i];
        gathered = sc_cost_zero3_gathered(x->m->dtype, P, R, unit_max(x, i, j), NULL, NULL);
    }
    return params * x->state_bpp + gathered + act;
}

sc_status sc_pctx_strict_error(const sc_pctx *x, sc_error *err)
{
    if (x->cfg->layer_cuts) {
        int between = 0;
        for (int b = 1; b < x->L; b++)
            between += sc_partition_between_layers(x->m, b);
        if (between < x->S - 1)
            return sc_err(err, SC_EINVAL,
                          "partition: %s has %d cut points between layers, too few for %d "
                          "stages",
                          x->m->name, between, x->S);
    }
    const sc_pgroup *best = NULL;
    for (int g = 0; g < x->n_groups; g++) {
        const sc_pgroup *G = &x->groups[g];
        if (!best || G->span_hi - G->span_lo > best->span_hi - best->span_lo)
            best = G;
    }
    if (!best)
        return sc_err(err, SC_EINVAL, "partition: cannot split into %d stages", x->S);
    return sc_err(err, SC_EINVAL,
                  "shared group '%s' spans %s..%s: cannot split into %d stages; use the "
                  "replicate policy",
                  best->name, best->first_name, best->last_name, x->S);
}

/* ---- evaluation ------------------------------------------------------------ */

void sc_part_eval_free(sc_part_eval *e)
{
    if (!e)
        return;
    sc_free(e->time_s);
    sc_free(e->mem_bytes);
    sc_free(e->rank_mem);
    memset(e, 0, sizeof *e);
}

sc_status sc_partition_eval(const sc_partitioner_cfg *cfg, const sc_partition *p,
                            sc_part_eval *out, sc_error *err)
{
    if (!p || !p->first || p->n_stages != (cfg ? cfg->n_stages : -1))
        return sc_err(err, SC_EINVAL, "partition: the partition has %d stages, not %d",
                      p ? p->n_stages : 0, cfg ? cfg->n_stages : 0);
    sc_pctx x;
    sc_status st = sc_pctx_init(&x, cfg, err);
    if (st)
        return st;
    int S = x.S, L = x.L;
    if (p->first[0] != 0 || p->first[S] != L) {
        sc_pctx_free(&x);
        return sc_err(err, SC_EINVAL, "partition: stages must cover leaves 0..%d", L - 1);
    }
    for (int s = 0; s < S; s++)
        if (p->first[s + 1] <= p->first[s]) {
            sc_pctx_free(&x);
            return sc_err(err, SC_EINVAL, "partition: stage %d is empty or out of order", s);
        }
    sc_part_eval e = {0};
    e.n_stages = S;
    e.pp = x.pp;
    e.time_s = sc_calloc((size_t)S, sizeof *e.time_s);
    e.mem_bytes = sc_calloc((size_t)S, sizeof *e.mem_bytes);
    e.rank_mem = sc_calloc((size_t)x.pp, sizeof *e.rank_mem);
    if (!e.time_s || !e.mem_bytes || !e.rank_mem) {
        sc_part_eval_free(&e);
        sc_pctx_free(&x);
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    }
    e.fits = 1;
    e.bottleneck_stage = 0;
    for (int r = 0; r < x.pp; r++)
        e.rank_mem[r] = x.ws;
    for (int s = 0; s < S && !st; s++) {
        int i = p->first[s], j = p->first[s + 1];
        e.time_s[s] = sc_pctx_time(&x, s, i, j);
        sc_mem_cfg mc = {cfg->model->dtype, cfg->tp, cfg->dp, cfg->zero, cfg->mbs,
                         x.kc[s % x.pp], cfg->recompute, cfg->sp, cfg->attn, cfg->cp,
                         cfg->model->has_layers, 0};
        sc_mem mem;
        st = sc_cost_memory(cfg->cluster, cfg->model->leaves + i, j - i, &mc, &mem, err);
        if (st)
            break;
        double copies = 0;
        for (int g = 0; g < x.n_groups; g++) {
            const sc_pgroup *G = &x.groups[g];
            if (G->next[i] < j) {
                double here = G->here[j] - G->here[i];
                if (G->all > here)
                    copies += G->all - here;
            }
        }
        e.mem_bytes[s] = mem.total + (copies > 0 ? state_bytes(cfg, copies) : 0);
        e.rank_mem[s % x.pp] += e.mem_bytes[s] - x.ws;
        if (e.mem_bytes[s] - x.ws > x.cap)
            e.fits = 0;
        if (e.time_s[s] > e.bottleneck_s || s == 0) {
            e.bottleneck_s = e.time_s[s];
            e.bottleneck_stage = s;
        }
        if (e.mem_bytes[s] > e.max_mem_bytes)
            e.max_mem_bytes = e.mem_bytes[s];
    }
    for (int g = 0; g < x.n_groups && !st; g++) {
        const sc_pgroup *G = &x.groups[g];
        if (G->span_hi > G->span_lo &&
            sc_partition_stage_of(p, G->span_lo) != sc_partition_stage_of(p, G->span_hi))
            e.splits_shared = 1;
    }
    sc_pctx_free(&x);
    if (st) {
        sc_part_eval_free(&e);
        return st;
    }
    *out = e;
    return SC_OK;
}

sc_status sc_partition_by_method(const char *method, const sc_partitioner_cfg *cfg,
                                 sc_partition *out, sc_error *err)
{
    /* the one table of partitioners, partitioner_hook.c */
    const sc_partitioner_impl *impl =
        sc_partitioner_find(method ? method : sc_planner_default_partitioner());
    if (!impl)
        return sc_err(err, SC_EINVAL, "partition: unknown method '%s' (%s)", method,
                      sc_planner_partitioners());
    return impl->run(cfg, out, err);
}
