/* partition_tree.c - the tracing-based partitioner (see partitioner.h): walk
 * the module tree from the root, descend into subtrees too large for one
 * stage, then cut the resulting list of units into S parts of balanced
 * cost (time and memory shares mixed by the memory weight), preferring, among
 * near-equal cuts, the boundary that sends the fewest bytes.
 *
 * Cost: O(M + L) for the costs and the descent by passes (each pass is
 * O(U) and there are at most depth passes), O(U·S) for the cuts, plus O(U)
 * per extra single expansion when the units offer fewer than S-1 allowed cut
 * points (at most M of them: O(M·L) in the worst case, when S approaches the
 * leaf count or a strict group removes most cut points). Memory O(M + L). */
#include "partitioner.h"

#include <math.h>
#include <string.h>

static int first_leaf(const sc_module *x)
{
    while (x->n_children)
        x = x->children[0];
    return x->leaf_index;
}

static int last_leaf(const sc_module *x)
{
    while (x->n_children)
        x = x->children[x->n_children - 1];
    return x->leaf_index;
}

typedef struct tree {
    sc_pctx *x;
    double *Q;          /* L+1 prefix of the normalised leaf cost */
    int *AB;            /* L+1: allowed interior boundaries in [1, b] */
    const sc_module **u, **tmp; /* units */
    int n;
} tree;

static double unit_cost(const tree *t, const sc_module *a)
{
    return t->Q[last_leaf(a) + 1] - t->Q[first_leaf(a)];
}

/* allowed cut points strictly inside the unit */
static int unit_inner_allowed(const tree *t, const sc_module *a)
{
    return t->AB[last_leaf(a)] - t->AB[first_leaf(a)];
}

static int allowed_unit_cuts(const tree *t)
{
    int c = 0;
    for (int i = 1; i < t->n; i++)
        c += !t->x->forbid[first_leaf(t->u[i])];
    return c;
}

/* Per-leaf costs: time share and memory share mixed by w. */
static sc_status leaf_costs(tree *t, sc_error *err)
{
    sc_pctx *x = t->x;
    const sc_partitioner_cfg *cfg = x->cfg;
    int L = x->L;
    double *mem = sc_malloc(sizeof *mem * (size_t)L);
    if (!mem)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    double kbar = 0;
    for (int r = 0; r < x->pp; r++)
        kbar += x->kc[r];
    kbar /= x->pp;
    sc_mem_cfg mc = {cfg->model->dtype, cfg->tp, cfg->dp, cfg->zero, cfg->mbs,
                     (int)floor(kbar + 0.5), cfg->recompute, cfg->sp, cfg->attn, cfg->cp,
                     cfg->model->has_layers, 0};
    double Tt = 0, Mt = 0;
    sc_status st = SC_OK;
    for (int l = 0; l < L && !st; l++) {
        sc_mem mm;
        st = sc_cost_memory(cfg->cluster, cfg->model->leaves + l, 1, &mc, &mm, err);
        /* a leaf alone would count its unit's ZeRO-3 gather as a whole stage's */
        mem[l] = mm.total - mm.workspace - (cfg->zero >= 3 && cfg->dp > 1 ? mm.gathered : 0);
        Tt += x->t[l];
        Mt += mem[l];
    }
    if (!st) {
        double w = cfg->mem_weight;
        t->Q[0] = 0;
        for (int l = 0; l < L; l++) {
            double ts = Tt > 0 ? x->t[l] / Tt : 1.0 / L;
            double ms = Mt > 0 ? mem[l] / Mt : 1.0 / L;
            t->Q[l + 1] = t->Q[l] + (1 - w) * ts + w * ms;
        }
    }
    sc_free(mem);
    return st;
}

/* Descends into every unit costing more than (1 + tol) / S, pass by pass. */
static void descend(tree *t, double limit)
{
    for (int changed = 1; changed;) {
        changed = 0;
        int m = 0;
        for (int i = 0; i < t->n; i++) {
            const sc_module *a = t->u[i];
            if (a->n_children && unit_cost(t, a) > limit) {
                for (int c = 0; c < a->n_children; c++)
                    t->tmp[m++] = a->children[c];
                changed = 1;
            } else {
                t->tmp[m++] = a;
            }
        }
        const sc_module **sw = t->u;
        t->u = t->tmp;
        t->tmp = sw;
        t->n = m;
    }
}

/* Expands the costliest unit that holds an allowed cut point inside; 0 if
 * there is none. */
static int expand_one(tree *t)
{
    int best = -1;
    for (int i = 0; i < t->n; i++)
        if (t->u[i]->n_children && unit_inner_allowed(t, t->u[i]) > 0 &&
            (best < 0 || unit_cost(t, t->u[i]) > unit_cost(t, t->u[best])))
            best = i;
    if (best < 0)
        return 0;
    const sc_module *a = t->u[best];
    int m = 0;
    for (int i = 0; i < t->n; i++) {
        if (i == best)
            for (int c = 0; c < a->n_children; c++)
                t->tmp[m++] = a->children[c];
        else
            t->tmp[m++] = t->u[i];
    }
    const sc_module **sw = t->u;
    t->u = t->tmp;
    t->tmp = sw;
    t->n = m;
    return 1;
}

sc_status sc_partition_tree(const sc_partitioner_cfg *cfg, sc_partition *out, sc_error *err)
{
    sc_pctx x;
    sc_status st = sc_pctx_init(&x, cfg, err);
    if (st)
        return st;
    int L = x.L, S = x.S;
    if (x.n_allowed < S - 1) {
        st = sc_pctx_strict_error(&x, err);
        sc_pctx_free(&x);
        return st;
    }
    tree t = {0};
    t.x = &x;
    t.Q = sc_malloc(sizeof *t.Q * ((size_t)L + 1));
    t.AB = sc_calloc((size_t)L + 1, sizeof *t.AB);
    t.u = sc_malloc(sizeof *t.u * (size_t)L);
    t.tmp = sc_malloc(sizeof *t.tmp * (size_t)L);
    int *cnt_after = sc_malloc(sizeof *cnt_after * ((size_t)L + 1));
    int *first = sc_malloc(sizeof *first * ((size_t)S + 1));
    if (!t.Q || !t.AB || !t.u || !t.tmp || !cnt_after || !first) {
        st = sc_err(err, SC_ENOMEM, "partition: out of memory");
        goto done;
    }
    st = leaf_costs(&t, err);
    if (st)
        goto done;
    for (int b = 1; b <= L; b++)
        t.AB[b] = t.AB[b - 1] + (b < L && !x.forbid[b]);
    t.u[0] = cfg->model->root;
    t.n = 1;
    descend(&t, t.Q[L] * (1 + SC_TREE_TOL) / S);
    while (allowed_unit_cuts(&t) < S - 1)
        if (!expand_one(&t))
            break; /* cannot happen: n_allowed >= S - 1 at the leaves */

    /* greedy cuts, left to right */
    int n = t.n;
    cnt_after[n - 1] = 0;
    for (int i = n - 2; i >= 0; i--)
        cnt_after[i] = cnt_after[i + 1] + !x.forbid[first_leaf(t.u[i + 1])];
    double total = t.Q[L], near = SC_TREE_TOL * total / S;
    int prev = 0;
    double pprev = 0;
    first[0] = 0;
    for (int c = 1; c < S; c++) {
        double ideal = pprev + (total - pprev) / (S - c + 1), dstar = INFINITY;
        for (int i = prev + 1; i < n; i++) {
            int b = first_leaf(t.u[i]);
            if (x.forbid[b] || cnt_after[i] < S - 1 - c)
                continue;
            double d = fabs(t.Q[b] - ideal);
            if (d < dstar)
                dstar = d;
        }
        int pick = -1;
        double pb = 0, pd = 0;
        for (int i = prev + 1; i < n; i++) {
            int b = first_leaf(t.u[i]);
            if (x.forbid[b] || cnt_after[i] < S - 1 - c)
                continue;
            double d = fabs(t.Q[b] - ideal);
            if (d > dstar + near)
                continue;
            if (pick < 0 || x.bytes[b] < pb || (x.bytes[b] == pb && d < pd)) {
                pick = i;
                pb = x.bytes[b];
                pd = d;
            }
        }
        if (pick < 0) { /* cannot happen: cnt_after guarantees a candidate */
            st = sc_err(err, SC_EINVAL, "partition: tree: no cut point for stage %d", c);
            goto done;
        }
        prev = pick;
        first[c] = first_leaf(t.u[pick]);
        pprev = t.Q[first[c]];
    }
    first[S] = L;
    sc_partition p = {0};
    p.first = first;
    p.n_stages = S;
    first = NULL;
    *out = p;
done:
    sc_free(first);
    sc_free(cnt_after);
    sc_free(t.Q);
    sc_free(t.AB);
    sc_free(t.u);
    sc_free(t.tmp);
    sc_pctx_free(&x);
    return st;
}
