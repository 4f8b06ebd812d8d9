/* partition.c - uniform and explicit partitions, see partition.h. */
#include "partition.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sc_status alloc(sc_partition *p, int n_stages, sc_error *err)
{
    p->first = sc_calloc((size_t)n_stages + 1, sizeof *p->first);
    if (!p->first)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    p->n_stages = n_stages;
    return SC_OK;
}

static int is_block(const sc_module *x)
{
    return x->kind && !strcmp(x->kind, "block");
}

static int outermost_block(const sc_module *x)
{
    if (!is_block(x))
        return 0;
    for (const sc_module *p = x->parent; p; p = p->parent)
        if (is_block(p))
            return 0;
    return 1;
}

const sc_module *sc_partition_layer_of(const sc_module *leaf)
{
    if (leaf->derived)
        return leaf->layer;
    const sc_module *b = NULL;
    for (const sc_module *p = leaf; p; p = p->parent)
        if (is_block(p))
            b = p;
    return b;
}

int sc_partition_recomputed(int has_layers, const sc_module *leaf)
{
    return !has_layers || sc_partition_layer_of(leaf) != NULL;
}

int sc_partition_between_layers(const sc_model *m, int b)
{
    if (b <= 0 || b >= m->n_leaves)
        return 1;
    const sc_module *l = sc_partition_layer_of(m->leaves[b]);
    return !l || l != sc_partition_layer_of(m->leaves[b - 1]);
}

int sc_partition_layers(const sc_model *m)
{
    int n = 0;
    for (int i = 0; i < m->n_modules; i++)
        n += outermost_block(m->modules[i]);
    return n ? n : m->n_leaves;
}

sc_status sc_partition_uniform(const sc_model *m, int n_stages, sc_partition *out,
                               sc_error *err)
{
    if (n_stages < 1)
        return sc_err(err, SC_EINVAL, "partition: %d stages", n_stages);
    /* layer starts: first leaf of each outermost block, in execution order */
    int *starts = sc_malloc(sizeof *starts * (size_t)(m->n_leaves + 1));
    if (!starts)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    int nl = 0;
    for (int i = 0; i < m->n_modules; i++)
        if (outermost_block(m->modules[i]))
            starts[nl++] = sc_module_first_leaf(m->modules[i]);
    if (nl == 0) /* no blocks: every leaf is a layer */
        for (int i = 0; i < m->n_leaves; i++)
            starts[nl++] = i;
    if (nl < n_stages) {
        sc_free(starts);
        return sc_err(err, SC_EINVAL,
                      "partition: %s has %d layers, fewer than the %d pipeline stages", m->name,
                      nl, n_stages);
    }
    sc_partition p = {0};
    sc_status st = alloc(&p, n_stages, err);
    if (st) {
        sc_free(starts);
        return st;
    }
    int per = nl / n_stages, extra = nl % n_stages, layer = 0;
    p.first[0] = 0;
    for (int s = 1; s < n_stages; s++) {
        layer += per + (s - 1 < extra ? 1 : 0);
        p.first[s] = starts[layer];
    }
    p.first[n_stages] = m->n_leaves;
    sc_free(starts);
    *out = p;
    return SC_OK;
}

sc_status sc_partition_explicit(const sc_model *m, int n_stages, const int *starts, int n,
                                sc_partition *out, sc_error *err)
{
    if (n != n_stages - 1)
        return sc_err(err, SC_EINVAL,
                      "partition: %d stages need %d boundaries, got %d", n_stages, n_stages - 1, n);
    for (int i = 0; i < n; i++) {
        if (starts[i] <= (i ? starts[i - 1] : 0) || starts[i] >= m->n_leaves)
            return sc_err(err, SC_EINVAL,
                          "partition: boundary %d (%d) must be increasing and inside (0, %d) "
                          "leaves",
                          i + 1, starts[i], m->n_leaves);
    }
    sc_partition p = {0};
    sc_status st = alloc(&p, n_stages, err);
    if (st)
        return st;
    for (int i = 0; i < n; i++)
        p.first[i + 1] = starts[i];
    p.first[n_stages] = m->n_leaves;
    *out = p;
    return SC_OK;
}

sc_status sc_partition_parse(const char *spec, const sc_model *m, int n_stages,
                             sc_partition *out, sc_error *err)
{
    if (!spec || !strcmp(spec, "uniform"))
        return sc_partition_uniform(m, n_stages, out, err);
    int *b = sc_malloc(sizeof *b * (size_t)(strlen(spec) / 2 + 2));
    if (!b)
        return sc_err(err, SC_ENOMEM, "partition: out of memory");
    int n = 0;
    const char *s = spec;
    while (*s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > 100000000 || (*end && *end != ',')) {
            sc_free(b);
            return sc_err(err, SC_EINVAL,
                          "partition: '%s' is neither 'uniform' nor a list of leaf positions "
                          "like 4,8,12",
                          spec);
        }
        b[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    sc_status st = sc_partition_explicit(m, n_stages, b, n, out, err);
    sc_free(b);
    return st;
}

const char *sc_partition_first_name(const sc_model *m, const sc_partition *p, int s)
{
    return m->leaves[p->first[s]]->name;
}

const char *sc_partition_last_name(const sc_model *m, const sc_partition *p, int s)
{
    return m->leaves[p->first[s + 1] - 1]->name;
}

int sc_partition_stage_of(const sc_partition *p, int leaf)
{
    int lo = 0, hi = p->n_stages - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (p->first[mid] <= leaf)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void sc_partition_free(sc_partition *p)
{
    if (!p)
        return;
    sc_free(p->first);
    p->first = NULL;
    p->n_stages = 0;
}
