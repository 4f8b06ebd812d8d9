/* model.c - the module tree: building, validation, JSON load and save.
 *
 * Validation is whole-model and runs in sc_model_finish, which both the JSON
 * loader and the generators call, so every model the library hands out has
 * passed the same checks. Cost: O(n log n) for n modules (the name check
 * sorts), plus O(sum of inputs · log n) for the inputs lookups.
 */
#include "model.h"
#include "json.h"
#include "partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ranges that any real model sits well inside; beyond them a number is a
 * typo or hostile input. */
#define MAX_PARAMS 1e15
#define MAX_FLOPS 1e21
#define MAX_BYTES 1e15
#define MAX_SECONDS 1e6
#define MAX_SEQ 10000000L
#define MAX_INPUTS 4096

static const char *dtype_names[SC_DTYPE_N] = {"fp32", "tf32", "fp16", "bf16", "fp8"};

int sc_dtype_parse(const char *s)
{
    for (int i = 0; i < SC_DTYPE_N; i++)
        if (s && strcmp(s, dtype_names[i]) == 0)
            return i;
    return -1;
}

const char *sc_dtype_name(sc_dtype d) { return (unsigned)d < SC_DTYPE_N ? dtype_names[d] : "?"; }

double sc_dtype_bytes(sc_dtype d)
{
    switch (d) {
    case SC_FP32:
    case SC_TF32: return 4;
    case SC_FP16:
    case SC_BF16: return 2;
    case SC_FP8: return 1;
    default: return 4;
    }
}

/* ---- building ------------------------------------------------------------ */

sc_model *sc_model_new(const char *name, sc_dtype dtype, int seq_len)
{
    sc_model *m = sc_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->name = sc_strdup(name ? name : "model");
    if (!m->name) {
        sc_free(m);
        return NULL;
    }
    m->dtype = dtype;
    m->seq_len = seq_len;
    return m;
}

sc_module *sc_model_add(sc_model *m, sc_module *parent, const char *name, const char *kind)
{
    sc_module *mod = sc_calloc(1, sizeof *mod);
    if (!mod) {
        m->build_oom = 1;
        return NULL;
    }
    mod->name = sc_strdup(name);
    mod->kind = sc_strdup(kind);
    mod->flops_bwd = -1;
    mod->leaf_index = -1;
    mod->group = -1;
    mod->act_saved_scores = -1;
    if (!mod->name || !mod->kind)
        goto oom;
    if (!parent) {
        if (m->root) /* a second root: keep the first, report at finish */
            goto oom;
        m->root = mod;
        return mod;
    }
    sc_module **nc = sc_realloc(parent->children, sizeof *nc * (size_t)(parent->n_children + 1));
    if (!nc)
        goto oom;
    parent->children = nc;
    nc[parent->n_children++] = mod;
    mod->parent = parent;
    return mod;
oom:
    sc_free(mod->name);
    sc_free(mod->kind);
    sc_free(mod);
    m->build_oom = 1;
    return NULL;
}

void sc_module_set_tp(sc_module *mod, double bytes, int shardable)
{
    if (!mod)
        return;
    mod->has_tp = 1;
    mod->tp_bytes = bytes;
    mod->tp_shardable = shardable;
}

void sc_module_set_saved_parts(sc_module *mod, double replicated, double scores)
{
    if (!mod)
        return;
    mod->act_saved_rep = replicated;
    mod->act_saved_scores = scores;
}

void sc_module_set_shared(sc_model *m, sc_module *mod, const char *group)
{
    if (!mod)
        return;
    char *g = sc_strdup(group);
    if (!g) {
        m->build_oom = 1;
        return;
    }
    sc_free(mod->shared);
    mod->shared = g;
}

void sc_module_add_input(sc_model *m, sc_module *mod, const char *name)
{
    if (!mod)
        return;
    char *s = sc_strdup(name);
    char **ni = s ? sc_realloc(mod->inputs, sizeof *ni * (size_t)(mod->n_inputs + 1)) : NULL;
    if (!ni) {
        sc_free(s);
        m->build_oom = 1;
        return;
    }
    mod->inputs = ni;
    ni[mod->n_inputs++] = s;
}

void sc_module_set_dim(sc_model *m, sc_module *mod, const char *name, double v)
{
    if (!mod)
        return;
    for (int i = 0; i < mod->n_dims; i++)
        if (strcmp(mod->dim_name[i], name) == 0) {
            mod->dim_val[i] = v;
            return;
        }
    if (mod->n_dims >= SC_MODEL_MAX_DIMS) {
        m->build_oom = 1; /* reported as an error at finish */
        return;
    }
    char *s = sc_strdup(name);
    if (!s) {
        m->build_oom = 1;
        return;
    }
    mod->dim_name[mod->n_dims] = s;
    mod->dim_val[mod->n_dims++] = v;
}

void sc_module_add_kernel(sc_model *m, sc_module *mod, sc_kernel k)
{
    if (!mod)
        return;
    sc_kernel *nk = mod->n_kernels < SC_KERNELS_MAX
                        ? sc_realloc(mod->kernels, sizeof *nk * (size_t)(mod->n_kernels + 1))
                        : NULL;
    if (!nk) {
        m->build_oom = 1;
        return;
    }
    mod->kernels = nk;
    nk[mod->n_kernels++] = k;
}

const sc_kernel *sc_module_kernel(const sc_module *mod, const char *name)
{
    for (int i = 0; mod && i < mod->n_kernels; i++)
        if (!strcmp(mod->kernels[i].name, name))
            return &mod->kernels[i];
    return NULL;
}

double sc_module_dim(const sc_module *mod, const char *name, double dflt)
{
    for (int i = 0; i < mod->n_dims; i++)
        if (strcmp(mod->dim_name[i], name) == 0)
            return mod->dim_val[i];
    return dflt;
}

const sc_module *sc_model_not_causal(const sc_model *m, const char **why)
{
    for (int i = 0; i < m->n_leaves; i++) {
        const sc_module *x = m->leaves[i];
        if (!sc_module_is_attention(x))
            continue;
        const char *r = !strcmp(x->kind, "cross_attention") ? "cross-attention reads a whole "
                                                              "other sequence"
                        : x->n_kernels == 0 ? "it lists no kernels, so its causality is unknown"
                                            : "its attention is not causal (an encoder's)";
        for (int k = 0; k < x->n_kernels && r && strcmp(x->kind, "cross_attention"); k++)
            if (x->kernels[k].op == SC_KOP_FLASH && x->kernels[k].causal)
                r = NULL;
        if (r) {
            if (why)
                *why = r;
            return x;
        }
    }
    return NULL;
}

int sc_model_prices_attention(const sc_model *m)
{
    for (int i = 0; i < m->n_leaves; i++)
        for (int k = 0; k < m->leaves[i]->n_kernels; k++)
            if (m->leaves[i]->kernels[k].attn != SC_ATTN_ANY)
                return 1;
    return 0;
}

double sc_module_flops_bwd(const sc_module *mod)
{
    return mod->flops_bwd >= 0 ? mod->flops_bwd : 2 * mod->flops_fwd;
}

double sc_module_weight_flops(const sc_module *mod, double seq_len)
{
    if (!(mod->flops_fwd > 0))
        return 0;
    if (!sc_module_is_attention(mod))
        return mod->flops_fwd;
    if (!strcmp(mod->kind, "attention_core"))
        return 0;
    double h = sc_module_dim(mod, "hidden", 0);
    if (!(h > 0))
        return mod->flops_fwd / 2; /* no shape: the projections' usual share */
    double a = sc_module_dim(mod, "heads", 0), dk = sc_module_dim(mod, "kv", 0);
    if (a < 1)
        a = 1;
    if (dk < 1)
        dk = h / a;
    double kvh = sc_module_dim(mod, "kv_heads", a);
    double seq = sc_module_dim(mod, "seq", seq_len), P = sc_module_dim(mod, "passages", 1);
    double w = 2 * seq * P * h * ((a + 2 * kvh) * dk + a * dk);
    return w < mod->flops_fwd ? w : mod->flops_fwd;
}

/* ---- freeing --------------------------------------------------------------- */

static void module_free(sc_module *mod)
{
    /* iterative over children via recursion bounded by depth checks on load;
     * generators build shallow trees */
    if (!mod)
        return;
    for (int i = 0; i < mod->n_children; i++)
        module_free(mod->children[i]);
    sc_free(mod->children);
    for (int i = 0; i < mod->n_inputs; i++)
        sc_free(mod->inputs[i]);
    sc_free(mod->inputs);
    sc_free(mod->kernels);
    for (int i = 0; i < mod->n_dims; i++)
        sc_free(mod->dim_name[i]);
    sc_free(mod->name);
    sc_free(mod->kind);
    sc_free(mod->shared);
    sc_free(mod->measured_device);
    sc_free(mod);
}

static void groups_free(sc_model *m)
{
    for (int g = 0; g < m->n_groups; g++) {
        sc_free(m->groups[g].leaves);
        sc_free(m->groups[g].mods);
    }
    sc_free(m->groups);
    m->groups = NULL;
    m->n_groups = 0;
}

static int push_index(int **arr, int n, int v)
{
    int *na = sc_realloc(*arr, sizeof *na * (size_t)(n + 1));
    if (!na)
        return -1;
    na[n] = v;
    *arr = na;
    return 0;
}

/* The parameter-sharing groups, in pre-order of their first member;
 * O(modules · groups). */
static sc_status build_groups(sc_model *m, const char *file, sc_error *err)
{
    groups_free(m);
    int cap = 0;
    for (int i = 0; i < m->n_modules; i++) {
        sc_module *x = m->modules[i];
        x->group = -1;
        if (!x->shared)
            continue;
        int g = 0;
        while (g < m->n_groups && strcmp(m->groups[g].name, x->shared))
            g++;
        if (g == m->n_groups) {
            if (g == cap) {
                cap = cap ? 2 * cap : 4;
                sc_model_group *ng = sc_realloc(m->groups, sizeof *ng * (size_t)cap);
                if (!ng)
                    goto oom;
                m->groups = ng;
            }
            m->groups[g] = (sc_model_group){x->shared, 0, NULL, 0, NULL};
            m->n_groups++;
        }
        sc_model_group *G = &m->groups[g];
        x->group = g;
        if (push_index(&G->mods, G->n_mods, i))
            goto oom;
        G->n_mods++;
        if (x->leaf_index >= 0) {
            if (push_index(&G->leaves, G->n, x->leaf_index))
                goto oom;
            G->n++;
        }
    }
    return SC_OK;
oom:
    groups_free(m);
    return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
}

int sc_model_tp_replicated(const sc_model *m, const char **names, int max)
{
    int n = 0;
    for (int i = 0; i < m->n_leaves; i++) {
        const sc_module *x = m->leaves[i];
        if (x->has_tp || !(x->params > 0 || x->flops_fwd > 0))
            continue;
        if (n < max && names)
            names[n] = x->name;
        n++;
    }
    return n;
}

static int kind_is_attention(const char *kind)
{
    return kind && (!strcmp(kind, "attention") || !strcmp(kind, "cross_attention") ||
                    !strcmp(kind, "attention_core"));
}

int sc_module_is_attention(const sc_module *x)
{
    return x->derived ? x->is_attn : kind_is_attention(x->kind);
}

void sc_model_free(sc_model *m)
{
    if (!m)
        return;
    groups_free(m);
    module_free(m->root);
    sc_free(m->modules);
    sc_free(m->leaves);
    sc_free(m->name);
    sc_free(m);
}

/* ---- validation -------------------------------------------------------------- */

/* "root.children[2].children[0]" for mod, into buf. */
static void module_path(const sc_module *mod, char *buf, size_t cap)
{
    const sc_module *chain[SC_MODEL_MAX_DEPTH + 2];
    int n = 0;
    for (const sc_module *x = mod; x && n < (int)SC_ARRAY_LEN(chain); x = x->parent)
        chain[n++] = x;
    size_t len = (size_t)snprintf(buf, cap, "root");
    for (int i = n - 2; i >= 0 && len < cap; i--) {
        const sc_module *p = chain[i + 1];
        int pos = 0;
        while (pos < p->n_children && p->children[pos] != chain[i])
            pos++;
        len += (size_t)snprintf(buf + len, cap - len, ".children[%d]", pos);
    }
}

static sc_status bad(sc_error *err, const char *file, const sc_module *mod, const char *field,
                     const char *fmt, double v)
{
    char path[512], what[256];
    module_path(mod, path, sizeof path);
    snprintf(what, sizeof what, fmt, v);
    return sc_err(err, SC_EINVAL, "%s: %s.%s: %s", file, path, field, what);
}

static sc_status check_num(sc_error *err, const char *file, const sc_module *mod,
                           const char *field, double v, double hi)
{
    if (!isfinite(v))
        return bad(err, file, mod, field, "must be finite (got %g)", v);
    if (v < 0)
        return bad(err, file, mod, field, "must not be negative (got %g)", v);
    if (v > hi)
        return bad(err, file, mod, field, "%g is implausibly large", v);
    return SC_OK;
}

typedef struct {
    sc_module **mods;
    int n, cap, leaves;
    int too_deep;
    sc_module *deep;
} walk_state;

/* Pre-order walk filling indices; iterative over siblings, recursive over
 * depth (bounded by SC_MODEL_MAX_DEPTH). */
static int walk(walk_state *w, sc_module *mod, sc_module *parent, int depth)
{
    if (depth > SC_MODEL_MAX_DEPTH) {
        w->too_deep = 1;
        w->deep = mod;
        return 0;
    }
    if (w->n >= SC_MODEL_MAX_MODULES)
        return 0;
    if (w->n == w->cap) {
        int nc = w->cap ? w->cap * 2 : 64;
        sc_module **nm = sc_realloc(w->mods, sizeof *nm * (size_t)nc);
        if (!nm)
            return -1;
        w->mods = nm;
        w->cap = nc;
    }
    mod->parent = parent;
    mod->depth = depth;
    mod->index = w->n;
    w->mods[w->n++] = mod;
    if (mod->n_children == 0) {
        mod->leaf_index = w->leaves++;
        return 1;
    }
    mod->leaf_index = -1;
    for (int i = 0; i < mod->n_children; i++) {
        int r = walk(w, mod->children[i], mod, depth + 1);
        if (r <= 0)
            return r;
    }
    return 1;
}

static int cmp_name(const void *a, const void *b)
{
    const sc_module *x = *(sc_module *const *)a, *y = *(sc_module *const *)b;
    return strcmp(x->name, y->name);
}

static sc_module *find_sorted(sc_module **sorted, int n, const char *name)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(sorted[mid]->name, name);
        if (c == 0)
            return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* First and last leaf positions of a subtree. */
static void leaf_span(const sc_module *mod, int *first, int *last)
{
    const sc_module *a = mod, *b = mod;
    while (a->n_children)
        a = a->children[0];
    while (b->n_children)
        b = b->children[b->n_children - 1];
    *first = a->leaf_index;
    *last = b->leaf_index;
}

sc_status sc_model_finish(sc_model *m, const char *file, sc_error *err)
{
    if (m->build_oom)
        return sc_err(err, SC_ENOMEM, "%s: out of memory while building the model (or too many dims on a module)", file);
    if (!m->root)
        return sc_err(err, SC_EINVAL, "%s: root: missing", file);
    if (m->seq_len < 1 || m->seq_len > MAX_SEQ)
        return sc_err(err, SC_EINVAL, "%s: seq_len: %d is out of range [1, %ld]", file,
                      m->seq_len, MAX_SEQ);
    walk_state w = {0};
    int r = walk(&w, m->root, NULL, 0);
    if (r < 0) {
        sc_free(w.mods);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    if (w.too_deep) {
        sc_free(w.mods);
        return sc_err(err, SC_EINVAL, "%s: root: module tree deeper than %d levels", file,
                      SC_MODEL_MAX_DEPTH);
    }
    if (r == 0) {
        sc_free(w.mods);
        return sc_err(err, SC_EINVAL, "%s: root: more than %d modules", file,
                      SC_MODEL_MAX_MODULES);
    }
    for (int i = 0; i < w.n; i++) {
        sc_module *x = w.mods[i];
        x->derived = 0; /* sc_partition_layer_of walks the tree once, then keeps it */
        x->layer = sc_partition_layer_of(x);
        x->is_attn = (unsigned char)kind_is_attention(x->kind);
        x->derived = 1;
    }
    sc_status st = SC_OK;
    sc_module **sorted = NULL, **leaves = NULL;
    for (int i = 0; i < w.n && !st; i++) {
        sc_module *x = w.mods[i];
        if (!x->name || !*x->name)
            st = bad(err, file, x, "name", "must not be empty%.0f", 0);
        else if (strlen(x->name) > SC_NAME_MAX)
            st = bad(err, file, x, "name", "longer than %.0f characters", SC_NAME_MAX);
        else if (!x->kind || !*x->kind)
            st = bad(err, file, x, "kind", "must not be empty%.0f", 0);
        if (!st)
            st = check_num(err, file, x, "params", x->params, MAX_PARAMS);
        if (!st)
            st = check_num(err, file, x, "flops_fwd", x->flops_fwd, MAX_FLOPS);
        if (!st && x->flops_bwd != -1)
            st = check_num(err, file, x, "flops_bwd", x->flops_bwd, MAX_FLOPS);
        if (!st)
            st = check_num(err, file, x, "act_out_bytes", x->act_out_bytes, MAX_BYTES);
        if (!st)
            st = check_num(err, file, x, "act_saved_bytes", x->act_saved_bytes, MAX_BYTES);
        if (!st && x->has_tp)
            st = check_num(err, file, x, "tp.bytes", x->tp_bytes, MAX_BYTES);
        if (!st && x->has_measured)
            st = check_num(err, file, x, "measured.fwd_s", x->measured_fwd_s, MAX_SECONDS);
        if (!st && x->has_measured)
            st = check_num(err, file, x, "measured.bwd_s", x->measured_bwd_s, MAX_SECONDS);
        for (int d = 0; d < x->n_dims && !st; d++) {
            char f[160];
            snprintf(f, sizeof f, "dims.%.64s", x->dim_name[d]);
            st = check_num(err, file, x, f, x->dim_val[d], 1e12);
        }
        if (!st && x->shared && !*x->shared)
            st = bad(err, file, x, "shared", "must not be empty%.0f", 0);
        if (!st && x->n_inputs > MAX_INPUTS)
            st = bad(err, file, x, "inputs", "more than %.0f entries", MAX_INPUTS);
        if (!st && x->n_kernels && x->n_children)
            st = bad(err, file, x, "kernels", "only a leaf lists kernels (this module has "
                     "%.0f children)", x->n_children);
        if (!st && x->n_kernels) {
            char where[512];
            module_path(x, where, sizeof where);
            st = sc_kernels_check(x->kernels, x->n_kernels, x->flops_fwd, file, where, err);
        }
    }
    if (!st) {
        sorted = sc_malloc(sizeof *sorted * (size_t)w.n);
        leaves = sc_malloc(sizeof *leaves * (size_t)(w.leaves ? w.leaves : 1));
        if (!sorted || !leaves)
            st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    if (!st) {
        memcpy(sorted, w.mods, sizeof *sorted * (size_t)w.n);
        qsort(sorted, (size_t)w.n, sizeof *sorted, cmp_name);
        for (int i = 1; i < w.n && !st; i++)
            if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
                const sc_module *later = sorted[i]->index > sorted[i - 1]->index ? sorted[i]
                                                                                  : sorted[i - 1];
                char path[512];
                module_path(later, path, sizeof path);
                st = sc_err(err, SC_EINVAL, "%s: %s.name: duplicate module name \"%s\"", file,
                            path, later->name);
            }
    }
    /* inputs: each named module must exist and finish before this one starts
     * in execution order; anything else (itself, an ancestor, a descendant,
     * a later module) would make the dataflow cyclic. */
    for (int i = 0; i < w.n && !st; i++) {
        sc_module *x = w.mods[i];
        int xf, xl;
        if (x->n_inputs)
            leaf_span(x, &xf, &xl);
        for (int k = 0; k < x->n_inputs && !st; k++) {
            char path[512], field[64];
            snprintf(field, sizeof field, "inputs[%d]", k);
            const sc_module *y = find_sorted(sorted, w.n, x->inputs[k]);
            if (!y) {
                module_path(x, path, sizeof path);
                st = sc_err(err, SC_EINVAL, "%s: %s.%s: unknown module \"%.128s\"", file, path,
                            field, x->inputs[k]);
                break;
            }
            int yf, yl;
            leaf_span(y, &yf, &yl);
            if (yl >= xf) {
                module_path(x, path, sizeof path);
                st = sc_err(err, SC_EINVAL,
                            "%s: %s.%s: \"%.128s\" makes a cycle: it does not finish before "
                            "\"%.128s\" starts in execution order",
                            file, path, field, y->name, x->name);
            }
        }
    }
    if (st) {
        sc_free(sorted);
        sc_free(leaves);
        sc_free(w.mods);
        return st;
    }
    for (int i = 0; i < w.n; i++)
        if (w.mods[i]->leaf_index >= 0)
            leaves[w.mods[i]->leaf_index] = w.mods[i];
    sc_free(sorted);
    sc_free(m->modules);
    sc_free(m->leaves);
    m->modules = w.mods;
    m->n_modules = w.n;
    m->leaves = leaves;
    m->n_leaves = w.leaves;
    m->has_layers = 0;
    for (int i = 0; i < m->n_leaves && !m->has_layers; i++)
        m->has_layers = sc_partition_layer_of(m->leaves[i]) != NULL;
    return build_groups(m, file, err);
}

/* ---- queries --------------------------------------------------------------- */

static sc_module *find_in(sc_module *mod, const char *name)
{
    if (!mod)
        return NULL;
    if (strcmp(mod->name, name) == 0)
        return mod;
    for (int i = 0; i < mod->n_children; i++) {
        sc_module *r = find_in(mod->children[i], name);
        if (r)
            return r;
    }
    return NULL;
}

sc_module *sc_model_find(const sc_model *m, const char *name) { return find_in(m->root, name); }

int sc_module_first_leaf(const sc_module *mod)
{
    while (mod->n_children)
        mod = mod->children[0];
    return mod->leaf_index;
}

int sc_module_last_leaf(const sc_module *mod)
{
    while (mod->n_children)
        mod = mod->children[mod->n_children - 1];
    return mod->leaf_index;
}

sc_totals sc_module_totals(const sc_module *mod)
{
    sc_totals t = {mod->params, mod->flops_fwd, sc_module_flops_bwd(mod), mod->act_saved_bytes,
                   mod->has_tp ? mod->tp_bytes : 0};
    for (int i = 0; i < mod->n_children; i++) {
        sc_totals c = sc_module_totals(mod->children[i]);
        t.params += c.params;
        t.flops_fwd += c.flops_fwd;
        t.flops_bwd += c.flops_bwd;
        t.act_saved_bytes += c.act_saved_bytes;
        t.tp_bytes += c.tp_bytes;
    }
    return t;
}

sc_totals sc_model_totals(const sc_model *m)
{
    sc_totals z = {0};
    return m->root ? sc_module_totals(m->root) : z;
}

/* ---- JSON ------------------------------------------------------------------ */

static const char *const node_keys[] = {"name", "kind", "params", "flops_fwd", "flops_bwd",
                                        "act_out_bytes", "act_saved_bytes", "act_scores_bytes",
                                        "tp", "shared",
                                        "inputs", "measured", "dims", "kernels", "children",
                                        NULL};

static sc_status node_from_json(const cJSON *j, const char *file, char *path, size_t pathcap,
                                int depth, sc_model *m, sc_module *parent, sc_error *err)
{
    if (depth > SC_MODEL_MAX_DEPTH)
        return sc_err(err, SC_EINVAL, "%s: %s: module tree deeper than %d levels", file, path,
                      SC_MODEL_MAX_DEPTH);
    if (!cJSON_IsObject(j))
        return sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
    sc_status st = sc_json_keys(j, file, path, node_keys, err);
    const char *name = NULL, *kind = NULL, *shared = NULL;
    if (!st)
        st = sc_json_str(j, file, path, "name", 1, SC_NAME_MAX, &name, err);
    if (!st)
        st = sc_json_str(j, file, path, "kind", 1, 64, &kind, err);
    if (st)
        return st;
    sc_module *mod = sc_model_add(m, parent, name, kind);
    if (!mod)
        return sc_err(err, SC_ENOMEM, "%s: %s: out of memory", file, path);
    double bw = -1;
    st = sc_json_num(j, file, path, "params", 1, 0, MAX_PARAMS, &mod->params, err);
    if (!st)
        st = sc_json_num(j, file, path, "flops_fwd", 1, 0, MAX_FLOPS, &mod->flops_fwd, err);
    if (!st)
        st = sc_json_num(j, file, path, "flops_bwd", 0, 0, MAX_FLOPS, &bw, err);
    mod->flops_bwd = bw;
    if (!st)
        st = sc_json_num(j, file, path, "act_out_bytes", 1, 0, MAX_BYTES, &mod->act_out_bytes,
                         err);
    if (!st)
        st = sc_json_num(j, file, path, "act_saved_bytes", 1, 0, MAX_BYTES,
                         &mod->act_saved_bytes, err);
    if (!st)
        st = sc_json_num(j, file, path, "act_scores_bytes", 0, 0, MAX_BYTES,
                         &mod->act_saved_scores, err);
    if (!st && mod->act_saved_scores > mod->act_saved_bytes)
        st = sc_err(err, SC_EINVAL, "%s: %s.act_scores_bytes: %g exceeds act_saved_bytes %g",
                    file, path, mod->act_saved_scores, mod->act_saved_bytes);
    if (!st)
        st = sc_json_str(j, file, path, "shared", 0, SC_NAME_MAX, &shared, err);
    if (!st && shared) {
        sc_module_set_shared(m, mod, shared);
        if (m->build_oom)
            return sc_err(err, SC_ENOMEM, "%s: %s: out of memory", file, path);
    }
    const cJSON *o = NULL;
    size_t plen = strlen(path);
    if (!st)
        st = sc_json_obj(j, file, path, "tp", 0, &o, err);
    if (!st && o) {
        static const char *const k[] = {"bytes", "shardable", "replicated_saved", NULL};
        snprintf(path + plen, pathcap - plen, ".tp");
        st = sc_json_keys(o, file, path, k, err);
        if (!st)
            st = sc_json_num(o, file, path, "bytes", 1, 0, MAX_BYTES, &mod->tp_bytes, err);
        if (!st)
            st = sc_json_bool(o, file, path, "shardable", 1, &mod->tp_shardable, err);
        if (!st)
            st = sc_json_num(o, file, path, "replicated_saved", 0, 0, MAX_BYTES,
                             &mod->act_saved_rep, err);
        if (!st && mod->act_saved_rep > mod->act_saved_bytes)
            st = sc_err(err, SC_EINVAL,
                        "%s: %s.replicated_saved: %g exceeds the module's act_saved_bytes %g",
                        file, path, mod->act_saved_rep, mod->act_saved_bytes);
        mod->has_tp = 1;
        path[plen] = '\0';
    }
    if (!st)
        st = sc_json_obj(j, file, path, "measured", 0, &o, err);
    if (!st && o) {
        static const char *const k[] = {"fwd_s", "bwd_s", "device", NULL};
        const char *dev = NULL;
        snprintf(path + plen, pathcap - plen, ".measured");
        st = sc_json_keys(o, file, path, k, err);
        if (!st)
            st = sc_json_num(o, file, path, "fwd_s", 1, 0, MAX_SECONDS, &mod->measured_fwd_s, err);
        if (!st)
            st = sc_json_num(o, file, path, "bwd_s", 1, 0, MAX_SECONDS, &mod->measured_bwd_s, err);
        if (!st)
            st = sc_json_str(o, file, path, "device", 1, 128, &dev, err);
        if (!st) {
            mod->measured_device = sc_strdup(dev);
            mod->has_measured = 1;
            if (!mod->measured_device)
                st = sc_err(err, SC_ENOMEM, "%s: %s: out of memory", file, path);
        }
        path[plen] = '\0';
    }
    if (!st)
        st = sc_json_obj(j, file, path, "dims", 0, &o, err);
    if (!st && o) {
        snprintf(path + plen, pathcap - plen, ".dims");
        int n = 0;
        for (const cJSON *d = o->child; d && !st; d = d->next, n++) {
            double v = 0;
            if (n >= SC_MODEL_MAX_DIMS)
                st = sc_err(err, SC_EINVAL, "%s: %s: more than %d dims", file, path,
                            SC_MODEL_MAX_DIMS);
            else if (!d->string || !*d->string || strlen(d->string) > 64)
                st = sc_err(err, SC_EINVAL, "%s: %s: bad dimension name", file, path);
            else if (sc_module_dim(mod, d->string, -1) != -1)
                st = sc_err(err, SC_EPARSE, "%s: %s.%.64s: duplicate field", file, path,
                            d->string);
            else
                st = sc_json_num(o, file, path, d->string, 1, 0, 1e12, &v, err);
            if (!st) {
                sc_module_set_dim(m, mod, d->string, v);
                if (m->build_oom)
                    st = sc_err(err, SC_ENOMEM, "%s: %s: out of memory", file, path);
            }
        }
        path[plen] = '\0';
    }
    if (!st)
        st = sc_json_arr(j, file, path, "inputs", 0, &o, err);
    if (!st && o) {
        int k = 0;
        for (const cJSON *e = o->child; e && !st; e = e->next, k++) {
            if (k >= MAX_INPUTS)
                st = sc_err(err, SC_EINVAL, "%s: %s.inputs: more than %d entries", file, path,
                            MAX_INPUTS);
            else if (!cJSON_IsString(e) || !*e->valuestring)
                st = sc_err(err, SC_EPARSE, "%s: %s.inputs[%d]: must be a module name", file,
                            path, k);
            else {
                sc_module_add_input(m, mod, e->valuestring);
                if (m->build_oom)
                    st = sc_err(err, SC_ENOMEM, "%s: %s: out of memory", file, path);
            }
        }
    }
    if (!st)
        st = sc_json_arr(j, file, path, "kernels", 0, &o, err);
    if (!st && o)
        st = sc_kernels_from_json(o, file, path, &mod->kernels, &mod->n_kernels, err);
    if (!st)
        st = sc_json_arr(j, file, path, "children", 0, &o, err);
    if (!st && o) {
        int k = 0;
        for (const cJSON *c = o->child; c && !st; c = c->next, k++) {
            if (m->n_modules++ >= SC_MODEL_MAX_MODULES) /* counts during load */
                return sc_err(err, SC_EINVAL, "%s: %s: more than %d modules", file, path,
                              SC_MODEL_MAX_MODULES);
            snprintf(path + plen, pathcap - plen, ".children[%d]", k);
            st = node_from_json(c, file, path, pathcap, depth + 1, m, mod, err);
            path[plen] = '\0';
        }
    }
    return st;
}

sc_status sc_model_from_json(const cJSON *root, const char *file, sc_model **out,
                             sc_error *err)
{
    static const char *const top_keys[] = {"format", "name", "dtype", "seq_len", "root", NULL};
    *out = NULL;
    sc_status st = sc_json_format(root, file, SC_MODEL_FORMAT, err);
    if (!st)
        st = sc_json_keys(root, file, "", top_keys, err);
    const char *name = NULL, *dtype = NULL;
    long seq = 0;
    if (!st)
        st = sc_json_str(root, file, "", "name", 1, SC_NAME_MAX, &name, err);
    if (!st)
        st = sc_json_str(root, file, "", "dtype", 1, 16, &dtype, err);
    if (!st && sc_dtype_parse(dtype) < 0)
        st = sc_err(err, SC_EINVAL, "%s: dtype: unknown \"%s\" (fp32, tf32, fp16, bf16, fp8)",
                    file, dtype);
    if (!st)
        st = sc_json_int(root, file, "", "seq_len", 1, 1, MAX_SEQ, &seq, err);
    const cJSON *r = NULL;
    if (!st)
        st = sc_json_obj(root, file, "", "root", 1, &r, err);
    if (st)
        return st;
    sc_model *m = sc_model_new(name, (sc_dtype)sc_dtype_parse(dtype), (int)seq);
    if (!m)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    char path[4096] = "root";
    st = node_from_json(r, file, path, sizeof path, 0, m, NULL, err);
    m->n_modules = 0;
    if (!st)
        st = sc_model_finish(m, file, err);
    if (st) {
        sc_model_free(m);
        return st;
    }
    *out = m;
    return SC_OK;
}

sc_status sc_model_load(const char *file, sc_model **out, sc_error *err)
{
    cJSON *j;
    *out = NULL;
    sc_status st = sc_json_load(file, &j, err);
    if (st)
        return st;
    st = sc_model_from_json(j, file, out, err);
    cJSON_Delete(j);
    return st;
}

static cJSON *node_to_json(const sc_module *x, int *oom)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) {
        *oom = 1;
        return NULL;
    }
    sc_jadd_str(j, "name", x->name, oom);
    sc_jadd_str(j, "kind", x->kind, oom);
    sc_jadd_num(j, "params", x->params, oom);
    sc_jadd_num(j, "flops_fwd", x->flops_fwd, oom);
    if (x->flops_bwd >= 0)
        sc_jadd_num(j, "flops_bwd", x->flops_bwd, oom);
    sc_jadd_num(j, "act_out_bytes", x->act_out_bytes, oom);
    sc_jadd_num(j, "act_saved_bytes", x->act_saved_bytes, oom);
    if (x->act_saved_scores >= 0)
        sc_jadd_num(j, "act_scores_bytes", x->act_saved_scores, oom);
    if (x->has_tp) {
        cJSON *t = sc_jadd_obj(j, "tp", oom);
        sc_jadd_num(t, "bytes", x->tp_bytes, oom);
        sc_jadd_bool(t, "shardable", x->tp_shardable, oom);
        if (x->act_saved_rep > 0)
            sc_jadd_num(t, "replicated_saved", x->act_saved_rep, oom);
    }
    if (x->shared)
        sc_jadd_str(j, "shared", x->shared, oom);
    if (x->n_inputs) {
        cJSON *a = sc_jadd_arr(j, "inputs", oom);
        for (int i = 0; i < x->n_inputs && a; i++) {
            sc_jpush_str(a, x->inputs[i], oom);
        }
    }
    if (x->has_measured) {
        cJSON *t = sc_jadd_obj(j, "measured", oom);
        sc_jadd_num(t, "fwd_s", x->measured_fwd_s, oom);
        sc_jadd_num(t, "bwd_s", x->measured_bwd_s, oom);
        sc_jadd_str(t, "device", x->measured_device, oom);
    }
    if (x->n_dims) {
        cJSON *d = sc_jadd_obj(j, "dims", oom);
        for (int i = 0; i < x->n_dims; i++)
            sc_jadd_num(d, x->dim_name[i], x->dim_val[i], oom);
    }
    if (x->n_kernels)
        sc_kernels_to_json(j, x->kernels, x->n_kernels, oom);
    if (x->n_children) {
        cJSON *a = sc_jadd_arr(j, "children", oom);
        for (int i = 0; i < x->n_children && a && !*oom; i++) {
            cJSON *c = node_to_json(x->children[i], oom);
            if (c && !cJSON_AddItemToArray(a, c)) {
                cJSON_Delete(c);
                *oom = 1;
            }
        }
    }
    return j;
}

cJSON *sc_model_to_json(const sc_model *m)
{
    sc_json_init();
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", SC_MODEL_FORMAT, &oom);
    sc_jadd_str(j, "name", m->name, &oom);
    sc_jadd_str(j, "dtype", sc_dtype_name(m->dtype), &oom);
    sc_jadd_num(j, "seq_len", m->seq_len, &oom);
    cJSON *r = m->root ? node_to_json(m->root, &oom) : NULL;
    if (r && !cJSON_AddItemToObject(j, "root", r)) {
        cJSON_Delete(r);
        oom = 1;
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

sc_status sc_model_save(const sc_model *m, const char *file, sc_error *err)
{
    cJSON *j = sc_model_to_json(m);
    if (!j)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    sc_status st = sc_json_save(file, j, err);
    cJSON_Delete(j);
    return st;
}
