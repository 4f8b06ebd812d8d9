/* export.c - the analysis every export target shares, the target table, and
 * the export's JSON and files; see export.h. */
#include "export_int.h"
#include "gen.h"
#include "json.h"
#include "outdir.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const sc_export_target *const targets[] = {&sc_export_megatron, &sc_export_deepspeed,
                                                  &sc_export_torch};

const sc_export_target *const *sc_export_targets(int *n)
{
    *n = (int)SC_ARRAY_LEN(targets);
    return targets;
}

const sc_export_target *sc_export_find(const char *name)
{
    for (size_t i = 0; i < SC_ARRAY_LEN(targets); i++)
        if (!strcmp(targets[i]->name, name))
            return targets[i];
    return NULL;
}

const char *sc_export_target_names(void)
{
    return "megatron, deepspeed, torch";
}

/* ---- helpers for the targets ---------------------------------------------- */

sc_status ex_refuse(const sc_export_ctx *x, sc_error *err, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sc_err(err, SC_ENOTSUP, "%s: %s cannot run this plan: %s", x->plan_file,
                  x->target->framework, what);
}

sc_status ex_unwritten(const sc_export_ctx *x, sc_error *err, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sc_err(err, SC_ENOTSUP, "%s: stagecraft export --to %s does not write %s",
                  x->plan_file, x->target->name, what);
}

/* The rules of the target's row of framework.h's table, judged once for
 * every target: the layout, then (where the row forbids it) a stage that
 * begins inside a layer. */
static sc_status judge(const sc_export_ctx *x, sc_error *err)
{
    const sc_plan *p = x->plan;
    sc_fw_layout l = {.tp = p->tp, .pp = p->pp, .v = p->v, .m = p->m, .zero = p->zero,
                      .sp = p->sp, .cp = p->cp, .fp8 = p->fp8, .schedule = p->schedule,
                      .placement = p->placement};
    char why[768];
    switch (sc_framework_judge(x->fw, x->model, &l, why, sizeof why)) {
    case SC_FW_CANNOT:
        return ex_refuse(x, err, "%s", why);
    case SC_FW_UNWRITTEN:
        return ex_unwritten(x, err, "%s", why);
    case SC_FW_NOMEM:
        return sc_err(err, SC_ENOMEM, "export: out of memory");
    default: /* runs, maybe with another schedule: the target's notes say so */
        break;
    }
    for (int s = 1; s < x->n_stages && !x->fw->cuts_in_layers; s++)
        if (x->stage_unit[s] < 0) {
            sc_framework_cut_why(x->fw, x->model, s, p->partition.first[s], why, sizeof why);
            return ex_refuse(x, err, "%s", why);
        }
    return SC_OK;
}

sc_status ex_note(sc_export *e, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char **n = sc_realloc(e->notes, sizeof *n * (size_t)(e->n_notes + 1));
    if (!n)
        return SC_ENOMEM;
    e->notes = n;
    if (!(n[e->n_notes] = sc_strdup(line)))
        return SC_ENOMEM;
    e->n_notes++;
    return SC_OK;
}

sc_status ex_file(sc_export *e, const char *name, sc_buf *b)
{
    assert(e->n_files < SC_EXPORT_MAX_FILES);
    if (b->oom || !b->s)
        return SC_ENOMEM;
    char *nm = sc_strdup(name);
    if (!nm)
        return SC_ENOMEM;
    e->files[e->n_files].name = nm;
    e->files[e->n_files].text = b->s;
    e->n_files++;
    b->s = NULL;
    b->len = b->cap = 0;
    return SC_OK;
}

void ex_wrap(sc_buf *b, const char *first, const char *rest, const char *text)
{
    const char *s = text, *prefix = first;
    while (*s) {
        /* break at the last space that keeps the line within 78 columns */
        int room = 78 - (int)strlen(prefix), n = (int)strlen(s);
        if (n > room) {
            n = room;
            while (n > 0 && s[n] != ' ')
                n--;
            if (n == 0)
                n = room;
        }
        sc_buf_printf(b, "%s%.*s\n", prefix, n, s);
        s += n;
        while (*s == ' ')
            s++;
        prefix = rest;
    }
}

void ex_notes_comment(const sc_export *e, sc_buf *b, const char *prefix)
{
    char first[32], rest[32];
    snprintf(first, sizeof first, "%s  - ", prefix);
    snprintf(rest, sizeof rest, "%s    ", prefix);
    for (int i = 0; i < e->n_notes; i++)
        ex_wrap(b, first, rest, e->notes[i]);
}

int ex_stage_blocks(const sc_export_ctx *x, int s)
{
    int n = 0;
    int u0 = x->stage_unit[s], u1 = x->stage_unit[s + 1];
    assert(u0 >= 0 && u1 >= 0);
    for (int u = u0; u < u1; u++)
        n += x->units[u].block >= 0;
    return n;
}

const char *ex_axis(int a)
{
    static const char *const names[] = {"tp", "pp", "dp"};
    assert(a >= 0 && a < 3);
    return names[a];
}

double ex_elem_bytes(const sc_export_ctx *x)
{
    return sc_dtype_bytes(x->model->dtype);
}

void ex_plan_line(const sc_export_ctx *x, sc_buf *b, const char *prefix)
{
    const sc_plan *p = x->plan;
    char text[1536], cps[24] = "";
    if (p->cp > 1)
        snprintf(cps, sizeof cps, " cp %d", p->cp);
    snprintf(text, sizeof text,
             "plan %s: %s on %d x %s (%d GPUs), dp %d%s tp %d pp %d v %d, %d microbatches of %d, "
             "global batch %d, %s, ZeRO %d, recompute %s, placement %s, %s%s%s",
             x->plan_file, p->model_name, x->nodes, p->cluster_name, x->world, p->dp, cps, p->tp,
             p->pp, p->v, p->m, p->mbs, p->dp * p->m * p->mbs, p->schedule, p->zero,
             sc_recompute_name(p->recompute), p->placement, sc_dtype_name(x->model->dtype),
             x->attention ? ", attention " : "", x->attention ? x->attention : "");
    ex_wrap(b, prefix, prefix, text);
}

/* ---- the model's units and its GPT shape ----------------------------------- */

static sc_status units_of(const sc_model *m, sc_export_ctx *x, int *unit_of_leaf)
{
    x->units = sc_calloc((size_t)m->n_leaves, sizeof *x->units);
    if (!x->units)
        return SC_ENOMEM;
    int n = 0, blocks = 0;
    for (int i = 0; i < m->n_leaves; i++) {
        const sc_module *b = sc_partition_layer_of(m->leaves[i]);
        if (b && n > 0 && x->units[n - 1].mod == b) {
            x->units[n - 1].last = i;
        } else {
            x->units[n] = (ex_unit){.first = i, .last = i, .mod = b ? b : m->leaves[i],
                                    .block = b ? blocks++ : -1};
            n++;
        }
        unit_of_leaf[i] = n - 1;
    }
    x->n_units = n;
    x->n_blocks = blocks;
    return SC_OK;
}

/* The first module of kind kind in mod's subtree (pre-order), or NULL. */
static const sc_module *find_kind(const sc_module *mod, const char *kind)
{
    if (!strcmp(mod->kind, kind))
        return mod;
    for (int i = 0; i < mod->n_children; i++) {
        const sc_module *r = find_kind(mod->children[i], kind);
        if (r)
            return r;
    }
    return NULL;
}

/* The first norm in mod: kind "norm" (the generators) or a traced class
 * whose name ends in "norm" (nn.LayerNorm's "layernorm", Hugging Face's
 * "llamarmsnorm"). */
static const sc_module *find_norm(const sc_module *mod)
{
    size_t n = strlen(mod->kind);
    if (n >= 4 && !strcmp(mod->kind + n - 4, "norm"))
        return mod;
    for (int i = 0; i < mod->n_children; i++) {
        const sc_module *r = find_norm(mod->children[i]);
        if (r)
            return r;
    }
    return NULL;
}

static int count_attention(const sc_module *mod, const sc_module **first)
{
    int n = 0;
    if (sc_module_is_attention(mod) && strcmp(mod->kind, "attention_core") != 0) {
        if (!*first)
            *first = mod;
        n++;
    }
    for (int i = 0; i < mod->n_children; i++)
        n += count_attention(mod->children[i], first);
    return n;
}

/* What kind of transformer layer b is, from its modules' parameters and
 * kernels (traces/gen_llama.c and gen.c write them): kv_heads below heads
 * is grouped-query attention; an MLP of 3·h·f parameters is gated (SwiGLU),
 * one listing a "relu2" kernel is squared-ReLU, else GeLU; a norm of h
 * parameters is RMSNorm (LayerNorm has 2h); attention of exactly
 * 2h² + 2h·groups·kv parameters has no biases; a "rotary" kernel (or, op
 * by op, `model gen llama --eager`'s "rotary_*") means rotary positions. */
static int has_rotary(const sc_module *att)
{
    for (int i = 0; att && i < att->n_kernels; i++)
        if (!strncmp(att->kernels[i].name, "rotary", 6))
            return 1;
    return 0;
}

static void ex_gpt_variant(const sc_module *b, ex_gpt *g)
{
    const sc_module *att = NULL, *mlp = find_kind(b, "mlp"), *norm = find_norm(b);
    count_attention(b, &att);
    double h = g->hidden, f = g->ffn;
    g->kv_groups = (int)sc_module_dim(att, "kv_heads", g->heads);
    if (g->kv_groups < 1 || g->kv_groups > g->heads)
        g->kv_groups = g->heads;
    double mp = mlp ? sc_module_totals(mlp).params : 0;
    g->mlp = fabs(mp - 3 * h * f) < 0.5          ? EX_MLP_SWIGLU
             : sc_module_kernel(mlp, "relu2") ? EX_MLP_RELU2
                                              : EX_MLP_GELU;
    g->rmsnorm = norm && sc_module_totals(norm).params == h;
    double qkvo = 2 * h * h + 2 * h * (double)g->kv_groups * g->kv;
    g->no_bias = att && sc_module_totals(att).params == qkvo;
    g->rope = has_rotary(att);
}

#define WHY(...) (snprintf(g->why, sizeof g->why, __VA_ARGS__), g->ok = 0)

static void gpt_shape(const sc_export_ctx *x, ex_gpt *g)
{
    const sc_model *m = x->model;
    memset(g, 0, sizeof *g);
    g->ok = 1;
    if (x->n_blocks == 0) {
        WHY("%s has no layers (no module of kind \"block\")", m->name);
        return;
    }
    int fb = -1, lb = -1;
    for (int u = 0; u < x->n_units; u++)
        if (x->units[u].block >= 0) {
            if (fb < 0)
                fb = u;
            lb = u;
        }
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *mod = m->modules[i];
        if (!strcmp(mod->kind, "cross_attention")) {
            WHY("%s is an encoder-decoder (%s is a cross-attention): Megatron-LM's GPT model "
                "is decoder-only",
                m->name, mod->name);
            return;
        }
        /* What Megatron's GPT model does itself is no obstacle: before the
         * first layer, a sum of what the embeddings looked up (a traced
         * nanoGPT's token + position add reads the token embedding past the
         * position one); the first layer reading the embedding past what
         * the model computes beside it (a traced Hugging Face Llama's mask
         * and rotary tables); and every layer reading position tables the
         * model computed once, without weights (their rotary cos and sin,
         * as Megatron's rotary_pos_emb reaches every layer); and, inside
         * one layer, what its modules read of each other (k_proj and v_proj
         * reading the norm past q_proj), which Megatron's layer builds */
        int first = x->units[fb].first, f = mod->n_inputs ? sc_module_first_leaf(mod) : -1;
        if (f < first)
            continue;
        const sc_module *layer = sc_partition_layer_of(m->leaves[f]);
        int layer_first = layer ? sc_module_first_leaf(layer) : -1;
        for (int k = 0; k < mod->n_inputs; k++) {
            const sc_module *src = sc_model_find(m, mod->inputs[k]);
            int sl = src ? sc_module_last_leaf(src) : -1;
            if (src && layer && sl >= layer_first)
                continue; /* inside the consumer's own layer */
            if (!src || sl >= first || (f != first && sc_module_totals(src).params > 0)) {
                WHY("%s has non-sequential dataflow (%s consumes %s's output)", m->name,
                    mod->name, mod->inputs[k]);
                return;
            }
        }
    }
    const sc_module *b0 = x->units[fb].mod;
    for (int u = fb; u <= lb; u++) {
        const ex_unit *un = &x->units[u];
        if (un->block < 0) {
            WHY("%s sits between the layers %s and %s", un->mod->name,
                x->units[u - 1].mod->name, x->units[u + 1].mod->name);
            return;
        }
        if (un->mod->parent != b0->parent) {
            WHY("%s has more than one stack of layers (%s and %s)", m->name, b0->name,
                un->mod->name);
            return;
        }
    }
    for (int u = fb; u <= lb; u++) {
        const sc_module *b = x->units[u].mod, *att = NULL;
        const sc_module *mlp = find_kind(b, "mlp");
        int natt = count_attention(b, &att);
        if (natt != 1 || !mlp || sc_module_dim(att, "hidden", 0) <= 0 ||
            sc_module_dim(att, "heads", 0) <= 0 || sc_module_dim(mlp, "ffn", 0) <= 0) {
            WHY("%s is not a transformer layer (it needs one attention with dims hidden and "
                "heads, and one mlp with dims ffn)",
                b->name);
            return;
        }
        int hidden = (int)sc_module_dim(att, "hidden", 0), heads = (int)sc_module_dim(att, "heads", 0);
        int kv = (int)sc_module_dim(att, "kv", hidden / heads), ffn = (int)sc_module_dim(mlp, "ffn", 0);
        if (u == fb) {
            g->hidden = hidden;
            g->heads = heads;
            g->kv = kv;
            g->ffn = ffn;
        } else if (hidden != g->hidden || heads != g->heads || kv != g->kv || ffn != g->ffn ||
                   sc_module_totals(b).params != sc_module_totals(b0).params) {
            WHY("its layers differ (%s and %s): Megatron-LM builds identical layers", b0->name,
                b->name);
            return;
        }
    }
    g->layers = x->n_blocks;
    ex_gpt_variant(b0, g);
    /* a traced model's rotary tables come from a module of their own before
     * the layers (Hugging Face's LlamaRotaryEmbedding, kind
     * "llamarotaryembedding"), not from a kernel of its attention */
    for (int i = 0; !g->rope && i < x->units[fb].first; i++)
        g->rope = strstr(m->leaves[i]->kind, "rotary") != NULL;
    const sc_module *emb = NULL, *head = NULL;
    for (int u = 0; u < fb; u++)
        if (!strcmp(x->units[u].mod->kind, "embedding") && !emb)
            emb = x->units[u].mod;
    for (int u = lb + 1; u < x->n_units; u++)
        if (!strcmp(x->units[u].mod->kind, "head"))
            head = x->units[u].mod;
    if (!emb || sc_module_dim(emb, "vocab", 0) <= 0) {
        WHY("%s has no token embedding with a vocabulary (dims.vocab) before its layers: not a "
            "language model",
            m->name);
        return;
    }
    if (!head) {
        WHY("%s has no LM head (a module of kind \"head\") after its layers", m->name);
        return;
    }
    g->vocab = (int)sc_module_dim(emb, "vocab", 0);
    g->seq = m->seq_len;
    g->ce = sc_gen_head_cross_entropy(head, m->dtype);
    g->tied = emb->group >= 0 && emb->group == head->group;
    double rows = sc_module_totals(emb).params / g->hidden - g->vocab;
    g->pos_embed = rows >= g->seq;
    /* or a table of its own (a traced GPT-2's transformer.wpe, whose rows the
     * tracer calls its vocabulary): another embedding before the layers, with
     * a row per position and fewer rows than the tokens' */
    for (int u = 0; u < fb && !g->pos_embed; u++) {
        const sc_module *pe = x->units[u].mod;
        rows = sc_module_totals(pe).params / g->hidden;
        g->pos_embed = pe != emb && !strcmp(pe->kind, "embedding") && rows >= g->seq &&
                       rows < g->vocab;
    }
    g->pos_rows = g->pos_embed ? (int)floor(rows) : 0;
}

int sc_export_is_gpt(const sc_model *m, char *why, size_t n)
{
    sc_export_ctx x = {.model = m};
    int *unit_of_leaf = sc_malloc(sizeof *unit_of_leaf * (size_t)m->n_leaves);
    if (!unit_of_leaf || units_of(m, &x, unit_of_leaf)) {
        sc_free(unit_of_leaf);
        sc_free(x.units);
        snprintf(why, n, "out of memory");
        return -1;
    }
    ex_gpt g;
    gpt_shape(&x, &g);
    sc_free(unit_of_leaf);
    sc_free(x.units);
    if (!g.ok)
        snprintf(why, n, "%s", g.why);
    return g.ok;
}

/* ---- the export -------------------------------------------------------------- */

static int parse_placement(const char *pl, int order[3])
{
    static const char *const names[] = {"tp", "pp", "dp"};
    int seen = 0, k = 0;
    const char *s = pl;
    while (k < 3) {
        int a = -1;
        for (int i = 0; i < 3; i++)
            if (!strncmp(s, names[i], 2))
                a = i;
        if (a < 0 || (seen & (1 << a)))
            return -1;
        seen |= 1 << a;
        order[k++] = a;
        s += 2;
        if (k < 3 && *s++ != ',')
            return -1;
    }
    return *s ? -1 : 0;
}

void sc_export_free(sc_export *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n_files; i++) {
        sc_free(e->files[i].name);
        sc_free(e->files[i].text);
    }
    for (int i = 0; i < e->n_notes; i++)
        sc_free(e->notes[i]);
    sc_free(e->notes);
    cJSON_Delete(e->settings);
    sc_free(e);
}

/* ex_ctx.dropout: whether the model's kernels run dropout. */
static int dropout_of(const sc_model *m)
{
    int listed = 0;
    for (int i = 0; i < m->n_leaves; i++) {
        const sc_module *l = m->leaves[i];
        listed |= l->n_kernels > 0;
        if (l->n_kernels && !strcmp(l->kind, "dropout"))
            return 1;
        for (int k = 0; k < l->n_kernels; k++)
            if (strstr(l->kernels[k].name, "dropout"))
                return 1;
    }
    return listed ? 0 : -1;
}

sc_status sc_export_make(const sc_plan *p, const sc_model *m, const char *plan_file,
                         const char *target, sc_export **out, sc_error *err)
{
    *out = NULL;
    sc_json_init(); /* cJSON_Print's buffers are freed with sc_free */
    const sc_export_target *t = sc_export_find(target);
    if (!t)
        return sc_err(err, SC_EINVAL, "export: unknown target '%s' (%s)", target,
                      sc_export_target_names());
    assert(p->partition.n_stages == p->pp * p->v);
    sc_export_ctx x = {.plan = p, .model = m, .plan_file = plan_file, .target = t,
                       .fw = sc_framework_find(t->name), .n_stages = p->pp * p->v};
    assert(x.fw); /* every target has its row */
    if (parse_placement(p->placement, x.order))
        return sc_err(err, SC_EINVAL, "%s: placement '%s' is not an order of tp, pp, dp",
                      plan_file, p->placement);
    x.world = p->dp * p->cp * p->tp * p->pp;
    x.per_node = x.world < p->gpus_per_node ? x.world : p->gpus_per_node;
    x.nodes = (x.world + p->gpus_per_node - 1) / p->gpus_per_node;

    sc_status st = SC_OK;
    sc_export *e = NULL;
    int *unit_of_leaf = sc_malloc(sizeof *unit_of_leaf * (size_t)m->n_leaves);
    x.stage_unit = sc_malloc(sizeof *x.stage_unit * (size_t)(x.n_stages + 1));
    if (!unit_of_leaf || !x.stage_unit || units_of(m, &x, unit_of_leaf)) {
        st = sc_err(err, SC_ENOMEM, "export: out of memory");
        goto done;
    }
    for (int s = 0; s < x.n_stages; s++) {
        int leaf = p->partition.first[s], u = unit_of_leaf[leaf];
        x.stage_unit[s] = x.units[u].first == leaf ? u : -1;
    }
    x.stage_unit[x.n_stages] = x.n_units;
    gpt_shape(&x, &x.gpt);
    if (sc_model_prices_attention(m))
        x.attention = sc_attn_name(p->attn);
    x.dropout = dropout_of(m);

    if (!(e = sc_calloc(1, sizeof *e)) || !(e->settings = cJSON_CreateObject())) {
        st = sc_err(err, SC_ENOMEM, "export: out of memory");
        goto done;
    }
    e->target = t->name;
    e->framework = t->framework;
    e->checked = t->checked;
    st = judge(&x, err);
    if (!st)
        st = t->build(&x, e, err);
    if (st == SC_ENOMEM && !err->msg[0])
        sc_err(err, SC_ENOMEM, "export: out of memory");
    assert(st || e->n_files > 0);
done:
    sc_free(unit_of_leaf);
    sc_free(x.stage_unit);
    sc_free(x.units);
    if (st) {
        sc_export_free(e);
        return st;
    }
    *out = e;
    return SC_OK;
}

cJSON *sc_export_to_json(const sc_export *e, const char *plan_file)
{
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", "stagecraft.export/1", &oom);
    sc_jadd_str(j, "target", e->target, &oom);
    sc_jadd_str(j, "framework", e->framework, &oom);
    sc_jadd_str(j, "checked", e->checked, &oom);
    sc_jadd_str(j, "plan", plan_file, &oom);
    sc_jadd_str(j, "main", e->files[0].name, &oom);
    cJSON *f = sc_jadd_arr(j, "files", &oom);
    for (int i = 0; f && i < e->n_files; i++)
        sc_jpush_str(f, e->files[i].name, &oom);
    cJSON *d = sc_jadd_arr(j, "differences", &oom);
    for (int i = 0; d && i < e->n_notes; i++)
        sc_jpush_str(d, e->notes[i], &oom);
    cJSON *s = cJSON_Duplicate(e->settings, 1);
    if (!s || !cJSON_AddItemToObject(j, "settings", s)) {
        cJSON_Delete(s);
        oom = 1;
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int is_script(const char *name)
{
    size_t n = strlen(name);
    return (n > 3 && !strcmp(name + n - 3, ".sh")) || (n > 3 && !strcmp(name + n - 3, ".py"));
}

sc_status sc_export_write(const sc_export *e, const char *dir, sc_error *err)
{
    sc_outdir *od = NULL;
    sc_status st = sc_outdir_open(dir, "export", &od, err);
    if (st)
        return st;
    for (int i = 0; i < e->n_files && !st; i++) {
        const char *path;
        st = sc_outdir_file(od, e->files[i].name, &path, err);
        if (!st)
            st = sc_write_file_atomic(path, e->files[i].text, strlen(e->files[i].text), err);
        if (!st && is_script(e->files[i].name) && chmod(path, 0755) != 0)
            st = sc_err(err, SC_EIO, "%s/%s: cannot make it executable", dir, e->files[i].name);
    }
    return sc_outdir_close(od, st, err);
}
