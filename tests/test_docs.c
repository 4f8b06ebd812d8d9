/* test_docs.c - the documentation against the code, so the two cannot drift.
 *
 * docs/formats.md has one section per file kind, headed
 * "## KIND (`stagecraft.KIND/1`)", with a key table whose first column names
 * keys in backticks (`gpu.peak_flops.bf16`: every dotted part is a key name;
 * an all-capitals part such as DTYPE is a placeholder and is skipped). For
 * each kind these tests write real files with the library's writers or the
 * command, walk every object key in them, and fail
 *   - on a key a writer emitted that the kind's table does not list, and
 *   - on a key the table lists that no file written here contains (each
 *     writer emits every key its loader accepts, given a rich enough input,
 *     and the inputs here are chosen to be).
 * Keys of a name map (a module's `dims`) need only appear in backticks
 * somewhere in the section. Every ```json example on the page must hold only
 * keys of its section's table, and a complete one (with "format") must load
 * with that kind's loader. The timeline's op kinds are checked against
 * sc_op_kind_name/sc_op_kind_parse.
 *
 * Beside the formats: every command of `stagecraft --help` has a heading and
 * an example in docs/commands.md, and every relative link in README.md and
 * the docs/ pages (files and #anchors) resolves.
 *
 * Tests run from the repository root (tests/run.c), so docs/ is at hand.
 */
#include "bench.h"
#include "check.h"
#include "cluster.h"
#include "json.h"
#include "model.h"
#include "plan.h"
#include "timeline.h"
#include "tune.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>

#define FORMATS_MD "docs/formats.md"
#define COMMANDS_MD "docs/commands.md"

/* ---- a small set of strings, each with where it was first seen ------------ */

typedef struct strset {
    char **s, **where;
    int n, cap;
} strset;

static int set_has(const strset *t, const char *s)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->s[i], s))
            return 1;
    return 0;
}

static void set_add(strset *t, const char *s, const char *where)
{
    if (set_has(t, s))
        return;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->s = realloc(t->s, sizeof *t->s * (size_t)t->cap);
        t->where = realloc(t->where, sizeof *t->where * (size_t)t->cap);
        if (!t->s || !t->where)
            abort();
    }
    t->s[t->n] = strdup(s);
    t->where[t->n] = strdup(where ? where : "");
    t->n++;
}

static void set_free(strset *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->s[i]);
        free(t->where[i]);
    }
    free(t->s);
    free(t->where);
    memset(t, 0, sizeof *t);
}

/* ---- reading the markdown ---------------------------------------------- */

static char *slurp(const char *path)
{
    char *s = NULL;
    size_t len = 0;
    sc_error err = {0};
    if (sc_read_file(path, 4 << 20, &s, &len, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "cannot read %s: %s", path, err.msg);
        return NULL;
    }
    return s;
}

static int starts_line(const char *doc, const char *p)
{
    return p == doc || p[-1] == '\n';
}

/* The section of docs/formats.md for kind: from the end of its "## " heading
 * line to the next "## " heading (or the end). 0 if there is none. */
static int find_section(const char *doc, const char *kind, const char **b, const char **e)
{
    char tag[64];
    snprintf(tag, sizeof tag, "`stagecraft.%s/1`", kind);
    for (const char *p = doc; (p = strstr(p, "## ")); p += 3) {
        if (!starts_line(doc, p))
            continue;
        const char *eol = strchr(p, '\n');
        if (!eol)
            return 0;
        const char *t = strstr(p, tag);
        if (!t || t > eol)
            continue;
        *b = eol + 1;
        const char *q = strstr(eol, "\n## ");
        *e = q ? q + 1 : *b + strlen(*b);
        return 1;
    }
    return 0;
}

static int is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Adds the identifiers in text[0..n) to out; all-capitals placeholders
 * (DTYPE) are skipped unless caps is set. */
static void add_idents(const char *text, size_t n, strset *out, int caps)
{
    for (size_t i = 0; i < n;) {
        if (!is_ident(text[i])) {
            i++;
            continue;
        }
        size_t j = i;
        int lower = 0;
        while (j < n && is_ident(text[j])) {
            lower |= islower((unsigned char)text[j]) != 0;
            j++;
        }
        if (lower || caps) {
            char tok[128];
            size_t len = j - i < sizeof tok - 1 ? j - i : sizeof tok - 1;
            memcpy(tok, text + i, len);
            tok[len] = '\0';
            set_add(out, tok, "");
        }
        i = j;
    }
}

/* The identifiers inside backtick spans of text[b..e) (see add_idents). */
static void backtick_idents(const char *b, const char *e, strset *out, int caps)
{
    for (const char *p = b; p < e; p++) {
        if (*p != '`')
            continue;
        const char *q = memchr(p + 1, '`', (size_t)(e - p - 1));
        if (!q)
            break;
        add_idents(p + 1, (size_t)(q - p - 1), out, caps);
        p = q;
    }
}

/* The keys of the section's tables: backtick spans in the first cell of
 * every "|" row (header and separator rows have none). */
static void table_keys(const char *b, const char *e, strset *out)
{
    for (const char *p = b; p < e;) {
        const char *eol = memchr(p, '\n', (size_t)(e - p));
        if (!eol)
            eol = e;
        if (*p == '|') {
            const char *c = p + 1;
            int tick = 0;
            while (c < eol && (tick || *c != '|')) {
                if (*c == '`')
                    tick = !tick;
                c++;
            }
            backtick_idents(p + 1, c, out, 0);
        }
        p = eol + 1;
    }
}

/* The map-valued key of a kind (its keys are names, not fields). */
static const char *map_key_of(const char *kind)
{
    return !strcmp(kind, "model") ? "dims" : NULL;
}

/* ---- walking JSON ---------------------------------------------------------- */

/* Adds every object key under j to keys (with the path where it was first
 * seen); the keys of an object named map_key go to map_names instead. Keys
 * the loaders ignore ("x-...", "comment") are skipped. */
static void walk(const cJSON *j, char *path, size_t cap, const char *map_key, strset *keys,
                 strset *map_names)
{
    size_t len = strlen(path);
    int i = 0;
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next, i++) {
        if (cJSON_IsObject(j)) {
            if (!c->string || !strncmp(c->string, "x-", 2) || !strcmp(c->string, "comment"))
                continue;
            snprintf(path + len, cap - len, "%s%s", len ? "." : "", c->string);
            int in_map = map_key && j->string && !strcmp(j->string, map_key);
            set_add(in_map ? map_names : keys, c->string, path);
        } else {
            snprintf(path + len, cap - len, "[%d]", i);
        }
        walk(c, path, cap, map_key, keys, map_names);
        path[len] = '\0';
    }
}

static void walk_file(const char *file, const char *map_key, strset *keys, strset *map_names)
{
    cJSON *j = NULL;
    sc_error err = {0};
    if (sc_json_load(file, &j, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return;
    }
    char path[1024] = "";
    walk(j, path, sizeof path, map_key, keys, map_names);
    cJSON_Delete(j);
}


/* Compares the keys written for kind with its section of docs/formats.md,
 * both ways. */
static void check_kind(const char *kind, const strset *emitted, const strset *map_names)
{
    char *doc = slurp(FORMATS_MD);
    if (!doc)
        return;
    const char *b, *e;
    if (!find_section(doc, kind, &b, &e)) {
        sc_test_fail(__FILE__, __LINE__, "%s: no section headed \"## %s (`stagecraft.%s/1`)\"",
                     FORMATS_MD, kind, kind);
        free(doc);
        return;
    }
    strset table = {0}, ticks = {0};
    table_keys(b, e, &table);
    backtick_idents(b, e, &ticks, 0);
    if (table.n == 0)
        sc_test_fail(__FILE__, __LINE__, "%s: the %s section has no key table", FORMATS_MD,
                     kind);
    if (emitted->n == 0)
        sc_test_fail(__FILE__, __LINE__, "no %s file was written", kind);
    for (int i = 0; i < emitted->n; i++)
        if (!set_has(&table, emitted->s[i]))
            sc_test_fail(__FILE__, __LINE__,
                         "%s, %s: key `%s` (written at %s) is not in the key table", FORMATS_MD,
                         kind, emitted->s[i], emitted->where[i]);
    for (int i = 0; i < table.n; i++)
        if (!set_has(emitted, table.s[i]))
            sc_test_fail(__FILE__, __LINE__,
                         "%s, %s: the key table lists `%s`, but no %s file written here has it",
                         FORMATS_MD, kind, table.s[i], kind);
    for (int i = 0; map_names && i < map_names->n; i++)
        if (!set_has(&ticks, map_names->s[i]))
            sc_test_fail(__FILE__, __LINE__, "%s, %s: name `%s` (written at %s) is not mentioned",
                         FORMATS_MD, kind, map_names->s[i], map_names->where[i]);
    set_free(&table);
    set_free(&ticks);
    free(doc);
}

static char out[1 << 16];
#define SH(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

/* A provenance record with every field set (the GPU fields too), so the
 * writers emit every key the tables list. */
static sc_provenance full_provenance(void)
{
    sc_provenance p;
    memset(&p, 0, sizeof p);
    p.present = 1;
    snprintf(p.cpu, sizeof p.cpu, "Intel(R) Xeon(R) Processor");
    snprintf(p.blas, sizeof p.blas, "OpenBLAS 0.3.21 SkylakeX");
    snprintf(p.blas_core, sizeof p.blas_core, "SkylakeX");
    p.blas_threads = 1;
    snprintf(p.mpi, sizeof p.mpi, "Open MPI v4.1.4");
    snprintf(p.nccl, sizeof p.nccl, "NCCL 2.28.9");
    snprintf(p.cuda_device, sizeof p.cuda_device, "NVIDIA H200 (sm_90, 132 SMs, 140 GiB)");
    snprintf(p.cuda_driver, sizeof p.cuda_driver, "12.8");
    snprintf(p.cuda_runtime, sizeof p.cuda_runtime, "12.8");
    p.n_env = 1;
    snprintf(p.env[0], sizeof p.env[0], "OPENBLAS_CORETYPE=Haswell");
    snprintf(p.mixed, sizeof p.mixed, "rank 1: blas_core \"Haswell\" against \"SkylakeX\"");
    return p;
}

/* ---- the formats, one test each ---------------------------------------------- */

TEST(docs_formats_model)
{
    strset keys = {0}, dims = {0};
    sc_error err = {0};
    char path[600];
    /* every built-in, so every generator */
    int n = 0;
    const sc_builtin *bi = sc_builtins(&n);
    for (int i = 0; i < n; i++) {
        sc_model *m = NULL;
        if (bi[i].make(SC_BF16, &m, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s: %s", bi[i].name, err.msg);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s.json", sc_test_tmpdir(), bi[i].name);
        if (sc_model_save(m, path, &err) != SC_OK)
            sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        else
            walk_file(path, map_key_of("model"), &keys, &dims);
        sc_model_free(m);
    }
    /* the optional fields no generator writes: flops_bwd, measured (the PyTorch
     * tracer's), a stencil's flops (the tracer's depthwise convolutions) */
    sc_model *m = sc_model_new("every-field", SC_BF16, 8);
    REQUIRE(m);
    sc_module *root = sc_model_add(m, NULL, "every-field", "model");
    sc_module *a = sc_model_add(m, root, "emb", "embedding");
    sc_module *dw = sc_model_add(m, root, "dw", "conv2d");
    sc_module *h = sc_model_add(m, root, "head", "head");
    REQUIRE(root && a && dw && h);
    dw->flops_fwd = 4096;
    dw->act_out_bytes = 64;
    sc_kernel st = sc_kernel_mem("conv_depthwise", 256, 512, SC_KTP_NONE, SC_ATTN_ANY);
    st.flops = 4096;
    sc_module_add_kernel(m, dw, st);
    a->params = 800;
    a->act_out_bytes = 128;
    sc_module_set_shared(m, a, "wte");
    sc_module_set_dim(m, a, "hidden", 8);
    sc_module_set_tp(a, 64, 1);
    h->flops_fwd = 12800;
    h->flops_bwd = 25600;
    h->act_out_bytes = 1600;
    h->act_saved_bytes = 128;
    sc_module_set_shared(m, h, "wte");
    sc_module_add_input(m, h, "emb");
    h->has_measured = 1;
    h->measured_fwd_s = 1e-3;
    h->measured_bwd_s = 2e-3;
    h->measured_device = sc_strdup("cpu");
    REQUIRE(sc_model_finish(m, "<every-field>", &err) == SC_OK);
    snprintf(path, sizeof path, "%s/every-field.json", sc_test_tmpdir());
    REQUIRE(sc_model_save(m, path, &err) == SC_OK);
    sc_model_free(m);
    sc_model *back = NULL;
    REQUIRE(sc_model_load(path, &back, &err) == SC_OK);
    CHECK(back->modules[3]->has_measured);
    sc_model_free(back);
    walk_file(path, map_key_of("model"), &keys, &dims);
    check_kind("model", &keys, &dims);
    set_free(&keys);
    set_free(&dims);
}

static sc_fit_stats stats3(void)
{
    return (sc_fit_stats){.n = 3, .r2 = 0.99, .mape = 0.02, .rel_sd = 0.03, .se = {1e-3, 2e-3}};
}

TEST(docs_formats_cluster)
{
    strset keys = {0};
    sc_error err = {0};
    char path[600];
    int n = 0;
    const sc_cluster_preset *ps = sc_cluster_presets(&n);
    for (int i = 0; i < n; i++) {
        sc_cluster c;
        if (sc_cluster_preset_get(ps[i].name, &c, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s: %s", ps[i].name, err.msg);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s.json", sc_test_tmpdir(), ps[i].name);
        if (sc_cluster_save(&c, path, &err) != SC_OK)
            sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        else
            walk_file(path, NULL, &keys, NULL);
    }
    /* what calibrate fits from a fused attention bench: the backward's falls */
    {
        sc_cluster h;
        REQUIRE(sc_cluster_preset_get("h200-sxm-1", &h, &err) == SC_OK);
        h.eff.gemm.flash_s0_bwd = 1150;
        h.eff.gemm.flash_s0_full_bwd = 530;
        snprintf(path, sizeof path, "%s/h200-flash.json", sc_test_tmpdir());
        REQUIRE(sc_cluster_save(&h, path, &err) == SC_OK);
        walk_file(path, NULL, &keys, NULL);
    }
    /* what `cluster show --flash fa1|triton -o` writes: the head sizes the
     * kernel is built for */
    {
        sc_cluster a;
        REQUIRE(sc_cluster_preset_get("dgx-a100-80g", &a, &err) == SC_OK);
        REQUIRE(sc_cluster_flash_kernel(&a, "fa1", &err) == SC_OK);
        snprintf(path, sizeof path, "%s/a100-fa1.json", sc_test_tmpdir());
        REQUIRE(sc_cluster_save(&a, path, &err) == SC_OK);
        walk_file(path, NULL, &keys, NULL);
    }
    /* what calibration adds: the message share, host time and size factors of
     * each link class, a backward factor, and every fit's statistics (the kernel-level
     * GEMM model's and the overlap slowdown's among them) */
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("cpu-local", &c, &err) == SC_OK);
    for (int l = 0; l < SC_LINK_N; l++) {
        c.eff.p2p_bw_eff[l] = 0.5;
        c.eff.p2p_host_s_per_byte[l] = 5e-9;
        c.eff.cold_alpha_s[l] = 2e-5;
        c.eff.cold_bw_eff[l] = 0.3;
        c.eff.coll_curve[l] = (sc_size_curve){2, {32768, 65536}, {12.8, 1}};
        c.eff.p2p_curve[l] = (sc_size_curve){1, {1 << 20}, {0.6}};
    }
    c.eff.bwd_factor = 1.03;
    sc_cluster_fits *f = &c.eff.fits;
    f->present = 1;
    snprintf(f->date, sizeof f->date, "2026-01-01T00:00:00Z");
    f->n_inputs = 1;
    snprintf(f->input[0], sizeof f->input[0], "bench_gemm.json");
    snprintf(f->digest[0], sizeof f->digest[0], "0123456789abcdef");
    for (int d = 0; d < SC_DTYPE_N; d++)
        f->compute[d] = stats3();
    f->overhead = stats3();
    for (int l = 0; l < SC_LINK_N; l++)
        f->link[l] = f->link_p2p[l] = f->host[l] = f->link_cold[l] = f->link_ag_rs[l] =
            stats3();
    f->gemm = f->overlap = stats3();
    f->n_failed = 1; /* written past a failed gate with --force */
    snprintf(f->failed[0], sizeof f->failed[0],
             "gemm.json: compute fp32 (gemm sizes): points 1 distinct sizes for 2 parameters "
             "(need 4) (limit 4)");
    snprintf(path, sizeof path, "%s/calibrated.json", sc_test_tmpdir());
    REQUIRE(sc_cluster_save(&c, path, &err) == SC_OK);
    sc_cluster back;
    if (sc_cluster_load(path, &back, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    walk_file(path, NULL, &keys, NULL);
    check_kind("cluster", &keys, NULL);
    set_free(&keys);
}

TEST(docs_formats_plan_and_timeline)
{
    const char *d = sc_test_tmpdir();
    /* a plan and a simulated timeline from the command (overlap_grad_reduce and
     * overlap_p2p_comm off and tp_comm_overlap on, so that the plan writes the keys) */
    REQUIRE(SH("%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 4 --pp 2 "
               "--microbatches 4 --mbs 1 --schedule 1f1b --zero 1 --overlap-grad-reduce 0 "
               "--overlap-p2p-comm 0 --sp --tp-comm-overlap 1 -o %s/plan.json "
               "--timeline %s/sim.json",
               sc_test_bin(), d, d) == 0);
    char path[600];
    strset keys = {0};
    snprintf(path, sizeof path, "%s/plan.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* the optional keys: the parameter gather beside the forward, the gradients
     * reduced in fp32 */
    REQUIRE(SH("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --microbatches 1 "
               "--zero 1 --overlap-param-gather 1 --grad-reduce-in-fp32 1 "
               "-o %s/plan_opg.json",
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/plan_opg.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* fp8 training (a GPU with fp8 tensor cores) */
    REQUIRE(SH("%s sim --model gpt-1.3b --cluster dgx-h100 --dp 2 --microbatches 1 --fp8 "
               "-o %s/plan_fp8.json",
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/plan_fp8.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* the output layer's weight gradients deferred to the flush */
    REQUIRE(SH("%s sim --model gpt-1.3b --cluster p4d.24xlarge --pp 2 --microbatches 4 "
               "--defer-embedding-wgrad-compute --wgrad-deferral-limit 2 -o %s/plan_defer.json",
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/plan_defer.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* token slices, a framework's overhead */
    REQUIRE(SH("%s sim --model gpt-1.3b --cluster p4d.24xlarge --pp 2 --microbatches 1 "
               "--schedule gpipe --slices 2 --framework deepspeed -o %s/plan_sliced.json",
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/plan_sliced.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* context parallelism: cp, each rank's cp index, the cp breakdown */
    REQUIRE(SH("%s sim --model llama3-8b --cluster dgx-h100 --dp 4 --cp 2 --zero 1 --microbatches 2 "
               "--attn flash -o %s/plan_cp.json",
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/plan_cp.json", d);
    walk_file(path, NULL, &keys, NULL);
    check_kind("plan", &keys, NULL);
    set_free(&keys);

    snprintf(path, sizeof path, "%s/sim.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* what the executor adds: its device, the plan it ran, the step statistics
     * and the speed probe */
    sc_timeline *t = sc_timeline_new(1, "exec", "gpt", "cpu-local");
    REQUIRE(t);
    snprintf(t->device, sizeof t->device, "cpu-core");
    snprintf(t->plan_file, sizeof t->plan_file, "plan.json");
    snprintf(t->plan_digest, sizeof t->plan_digest, "0123456789abcdef");
    t->n_steps = 3;
    t->step_median_s = t->step_time_s = 2e-3;
    t->step_min_s = 1e-3;
    t->step_max_s = 3e-3;
    t->step_runs = 6;
    t->step_spread = 0.1;
    t->step_drift = 0.01;
    t->step_tolerance = 0.02;
    t->step_stable = 1;
    t->prov = full_provenance();
    t->probe_m = t->probe_n = t->probe_k = 256;
    t->probe_reps = 3;
    t->probe_steps = 3;
    snprintf(t->probe_dtype, sizeof t->probe_dtype, "fp32");
    t->ranks[0].probe_s = 8e-3;
    snprintf(t->flash_attention, sizeof t->flash_attention, "gemms");
    snprintf(t->operands, sizeof t->operands, "zeros");
    t->kernels = sc_calloc(1, sizeof *t->kernels); /* exec --kernels */
    REQUIRE(t->kernels);
    t->n_kernels = 1;
    t->kernels[0] = (sc_tl_kernel){"qkv", "F", "wgemm", 1, 64, 384, 128, 0, 8, 2e-4, 2}; /* in 2 chunks */
    sc_tl_op op = {SC_OP_F, 0, 0, 0, SC_STREAM_COMPUTE, 0, 0, 1e-3};
    sc_timeline_add(t, 0, &op);
    sc_error err = {0};
    snprintf(path, sizeof path, "%s/exec.json", d);
    REQUIRE(sc_timeline_save(t, path, &err) == SC_OK);
    sc_timeline_free(t);
    t = NULL;
    if (sc_timeline_load(path, &t, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    sc_timeline_free(t);
    walk_file(path, NULL, &keys, NULL);
    check_kind("timeline", &keys, NULL);
    set_free(&keys);
}

/* The timeline section's "Op kinds:" paragraph names every kind the code
 * has, and nothing else. */
TEST(docs_formats_timeline_op_kinds)
{
    char *doc = slurp(FORMATS_MD);
    REQUIRE(doc);
    const char *b, *e;
    REQUIRE(find_section(doc, "timeline", &b, &e));
    const char *p = strstr(b, "Op kinds:");
    if (!p || p > e) {
        sc_test_fail(__FILE__, __LINE__, "%s, timeline: no \"Op kinds:\" paragraph", FORMATS_MD);
        free(doc);
        return;
    }
    const char *end = strstr(p, "\n\n");
    if (!end || end > e)
        end = e;
    strset kinds = {0};
    backtick_idents(p, end, &kinds, 1);
    for (int k = 0; k < SC_OP_KIND_N; k++)
        if (!set_has(&kinds, sc_op_kind_name((sc_op_kind)k)))
            sc_test_fail(__FILE__, __LINE__, "%s, timeline: op kind `%s` is not listed",
                         FORMATS_MD, sc_op_kind_name((sc_op_kind)k));
    for (int i = 0; i < kinds.n; i++)
        if (sc_op_kind_parse(kinds.s[i]) < 0)
            sc_test_fail(__FILE__, __LINE__, "%s, timeline: `%s` is not an op kind",
                         FORMATS_MD, kinds.s[i]);
    set_free(&kinds);
    free(doc);
}

TEST(docs_formats_bench)
{
    const char *d = sc_test_tmpdir();
    strset keys = {0};
    char path[600];
    /* a real gemm sweep (one rank). It starts MPI where the build has it, and
     * Open MPI leaks in MPI_Init/MPI_Finalize: under SAN=1 it runs without
     * leak detection, as in test_bench.c. */
    const char *san = getenv("SC_SAN");
    const char *env = san && !strcmp(san, "1") ? "ASAN_OPTIONS=detect_leaks=0 " : "";
    REQUIRE(SH("%s%s bench gemm --sizes 16,32,2x16x16x16 --iters 2 --warmup 0 -o %s/gemm.json", env,
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/gemm.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* a collective's result through the same writer (without starting MPI) */
    sc_bench_result *r = calloc(1, sizeof *r);
    REQUIRE(r);
    r->op = SC_BENCH_ALLREDUCE;
    snprintf(r->backend, sizeof r->backend, "cpu");
    snprintf(r->device, sizeof r->device, "cpu-core");
    snprintf(r->host, sizeof r->host, "host");
    r->ranks = r->world = r->ranks_per_node = 2;
    r->nodes = 1;
    snprintf(r->link, sizeof r->link, "intra");
    r->dtype = r->compute_dtype = SC_FP32;
    r->elem_bytes = 4;
    r->busbw_factor = 1;
    r->iters = 2;
    r->tolerance = 0.02;
    r->max_iters = 10;
    r->cold_bytes = 268435456;
    r->hot_s = 0.005; /* a GPU gemm sweep's; the writer takes it from any result */
    r->prov = full_provenance();
    r->n_rows = 1;
    r->rows[0] = (sc_bench_row){.bytes = 4096, .time_s = 2e-6, .time_min_s = 1e-6,
                                .algbw = 2048e6, .busbw = 2048e6, .spread = 0.05,
                                .drift = 0.01, .runs = 4};
    sc_error err = {0};
    snprintf(path, sizeof path, "%s/allreduce.json", d);
    if (sc_bench_save(r, path, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    free(r);
    sc_bench_result *back = NULL;
    if (sc_bench_load(path, &back, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    sc_bench_result_free(back);
    walk_file(path, NULL, &keys, NULL);
    check_kind("bench", &keys, NULL);
    set_free(&keys);
}

TEST(docs_formats_tune)
{
    const char *d = sc_test_tmpdir();
    /* at global batch 512 the two largest microbatches do not fit: "skipped" */
    REQUIRE(SH("%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --global-batch 512 "
               "--dp 8 --tp 8 --pp 2 --sp --tp-comm-overlap 1 --zero 1 --overlap-param-gather 1 "
               "--overlap-p2p-comm 0 -o %s/tune.json",
               sc_test_bin(), d) == 0);
    char path[600];
    snprintf(path, sizeof path, "%s/tune.json", d);
    strset keys = {0};
    walk_file(path, NULL, &keys, NULL);
    /* points with fewer microbatches than stages get token slices */
    REQUIRE(SH("%s tune --model gpt-1.3b --cluster dgx-a100-80g --nodes 1 --global-batch 8 "
               "--dp 1 --tp 1 --pp 8 --schedule gpipe -o %s/tune_sliced.json",
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/tune_sliced.json", d);
    walk_file(path, NULL, &keys, NULL);
    /* a layout with context parallelism: "cp" */
    REQUIRE(SH("%s tune --model llama3-8b --cluster dgx-h100 --global-batch 16 --attn flash "
               "--dp 4 --cp 2 --tp 1 --pp 1 --zero 1 -o %s/tune_cp.json",
               sc_test_bin(), d) == 0);
    snprintf(path, sizeof path, "%s/tune_cp.json", d);
    walk_file(path, NULL, &keys, NULL);
    check_kind("tune", &keys, NULL);
    set_free(&keys);
}

/* Loads file with kind's loader; SC_OK or the loader's error in err. */
static sc_status load_as(const char *kind, const char *file, sc_error *err)
{
    sc_status st = SC_EINVAL;
    if (!strcmp(kind, "model")) {
        sc_model *m = NULL;
        st = sc_model_load(file, &m, err);
        sc_model_free(m);
    } else if (!strcmp(kind, "cluster")) {
        sc_cluster c;
        st = sc_cluster_load(file, &c, err);
    } else if (!strcmp(kind, "plan")) {
        sc_plan *p = NULL;
        st = sc_plan_load(file, &p, err);
        sc_plan_free(p);
    } else if (!strcmp(kind, "timeline")) {
        sc_timeline *t = NULL;
        st = sc_timeline_load(file, &t, err);
        sc_timeline_free(t);
    } else if (!strcmp(kind, "bench")) {
        sc_bench_result *r = NULL;
        st = sc_bench_load(file, &r, err);
        sc_bench_result_free(r);
    } else if (!strcmp(kind, "tune")) {
        sc_tune *t = NULL;
        st = sc_tune_load(file, &t, err);
        sc_tune_free(t);
    } else {
        sc_err(err, SC_EINVAL, "no loader for %s", kind);
    }
    return st;
}

/* Every ```json example holds only keys of its section's table; a complete
 * one loads. */
TEST(docs_formats_examples)
{
    static const char *const kinds[] = {"model", "cluster", "plan", "timeline", "bench", "tune"};
    char *doc = slurp(FORMATS_MD);
    REQUIRE(doc);
    int examples = 0, loaded = 0;
    for (size_t k = 0; k < SC_ARRAY_LEN(kinds); k++) {
        const char *b, *e;
        if (!find_section(doc, kinds[k], &b, &e)) {
            sc_test_fail(__FILE__, __LINE__, "%s: no %s section", FORMATS_MD, kinds[k]);
            continue;
        }
        strset table = {0}, ticks = {0};
        table_keys(b, e, &table);
        backtick_idents(b, e, &ticks, 0);
        for (const char *p = b; (p = strstr(p, "```json\n")) && p < e;) {
            p += 8;
            const char *q = strstr(p, "\n```");
            if (!q || q > e)
                break;
            int line = 1;
            for (const char *x = doc; x < p; x++)
                line += *x == '\n';
            char name[64];
            snprintf(name, sizeof name, "%s:%d", FORMATS_MD, line);
            examples++;
            cJSON *j = NULL;
            sc_error err = {0};
            if (sc_json_parse(name, p, (size_t)(q - p), &j, &err) != SC_OK) {
                sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
                p = q;
                continue;
            }
            strset keys = {0}, names = {0};
            char path[1024] = "";
            walk(j, path, sizeof path, map_key_of(kinds[k]), &keys, &names);
            for (int i = 0; i < keys.n; i++)
                if (!set_has(&table, keys.s[i]))
                    sc_test_fail(__FILE__, __LINE__,
                                 "%s: the %s example has `%s` (at %s), not in the key table", name,
                                 kinds[k], keys.s[i], keys.where[i]);
            for (int i = 0; i < names.n; i++)
                if (!set_has(&ticks, names.s[i]))
                    sc_test_fail(__FILE__, __LINE__, "%s: `%s` (at %s) is not mentioned", name,
                                 names.s[i], names.where[i]);
            if (cJSON_GetObjectItemCaseSensitive(j, "format")) {
                char file[600];
                snprintf(file, sizeof file, "%s/example-%d.json", sc_test_tmpdir(), line);
                if (sc_json_save(file, j, &err) != SC_OK || load_as(kinds[k], file, &err) != SC_OK)
                    sc_test_fail(__FILE__, __LINE__, "%s: the %s example does not load: %s",
                                 name, kinds[k], err.msg);
                else
                    loaded++;
            }
            cJSON_Delete(j);
            set_free(&keys);
            set_free(&names);
            p = q;
        }
        set_free(&table);
        set_free(&ticks);
    }
    CHECK(examples >= (int)SC_ARRAY_LEN(kinds));
    CHECK(loaded >= (int)SC_ARRAY_LEN(kinds));
    free(doc);
}

/* ---- commands ----------------------------------------------------------- */

/* 1 if text has word w (delimited by non-identifier characters, '-' counts
 * as part of a word) at p. */
static int word_at(const char *text, const char *p, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(p, w, n))
        return 0;
    if (p > text && (is_ident(p[-1]) || p[-1] == '-'))
        return 0;
    return !(is_ident(p[n]) || p[n] == '-');
}

/* Every command `stagecraft --help` lists has a heading in docs/commands.md
 * and at least one example line running it ("stagecraft NAME"). */
TEST(docs_commands_cover_every_command)
{
    REQUIRE(SH("%s --help", sc_test_bin()) == 0);
    char help[sizeof out];
    memcpy(help, out, sizeof help);
    char *doc = slurp(COMMANDS_MD);
    REQUIRE(doc);
    const char *p = strstr(help, "commands:\n");
    REQUIRE(p);
    int n = 0;
    for (p = strchr(p, '\n') + 1; *p == ' ';) {
        char name[32];
        if (sscanf(p, " %31s", name) != 1)
            break;
        n++;
        int heading = 0, example = 0;
        char run[64];
        snprintf(run, sizeof run, "stagecraft %s", name);
        for (const char *l = doc; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
            const char *eol = strchr(l, '\n');
            size_t len = eol ? (size_t)(eol - l) : strlen(l);
            for (const char *x = l; x < l + len; x++) {
                if (*l == '#' && word_at(doc, x, name))
                    heading = 1;
                if (word_at(doc, x, run))
                    example = 1;
            }
        }
        if (!heading)
            sc_test_fail(__FILE__, __LINE__, "%s: no heading names the command '%s'",
                         COMMANDS_MD, name);
        if (!example)
            sc_test_fail(__FILE__, __LINE__, "%s: no example runs '%s'", COMMANDS_MD, run);
        if (!strchr(p, '\n'))
            break;
        p = strchr(p, '\n') + 1;
    }
    CHECK(n >= 10);
    free(doc);
}

/* ---- links ----------------------------------------------------------------- */

/* GitHub's anchor for a heading: lower case, spaces to '-', ASCII
 * punctuation other than '-' and '_' dropped (other bytes kept). */
static void slug(const char *h, size_t n, char *outs, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)h[i];
        if (isalnum(c) || c == '-' || c == '_' || c >= 0x80)
            outs[k++] = (char)tolower(c);
        else if (c == ' ')
            outs[k++] = '-';
    }
    outs[k] = '\0';
}

/* 1 if the markdown in file has a heading whose anchor is anchor. */
static int has_anchor(const char *file, const char *anchor)
{
    char *doc = slurp(file);
    if (!doc)
        return 0;
    int found = 0, in_code = 0;
    for (const char *l = doc; *l && !found;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        if (!strncmp(l, "```", 3))
            in_code = !in_code;
        if (!in_code && *l == '#') {
            const char *t = l;
            while (*t == '#')
                t++;
            while (*t == ' ')
                t++;
            char s[512];
            slug(t, len - (size_t)(t - l), s, sizeof s);
            found = !strcmp(s, anchor);
        }
        l = eol ? eol + 1 : l + len;
    }
    free(doc);
    return found;
}

static void check_links(const char *file)
{
    char *doc = slurp(file);
    if (!doc)
        return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    int in_code = 0;
    for (const char *l = doc; *l;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        if (!strncmp(l, "```", 3))
            in_code = !in_code;
        for (const char *p = l; !in_code && p < l + len; p++) {
            if (strncmp(p, "](", 2))
                continue;
            const char *q = memchr(p + 2, ')', (size_t)(l + len - p - 2));
            if (!q)
                break;
            char target[512];
            snprintf(target, sizeof target, "%.*s", (int)(q - p - 2), p + 2);
            p = q;
            if (strstr(target, "://") || !strncmp(target, "mailto:", 7))
                continue;
            char *hash = strchr(target, '#');
            if (hash)
                *hash++ = '\0';
            char path[1100];
            if (target[0])
                snprintf(path, sizeof path, "%s%s", dir, target);
            else
                snprintf(path, sizeof path, "%s", file);
            if (!sc_test_exists(path)) {
                sc_test_fail(__FILE__, __LINE__, "%s: link to %s: no such file", file, path);
                continue;
            }
            if (hash && *hash && !has_anchor(path, hash))
                sc_test_fail(__FILE__, __LINE__, "%s: link to %s#%s: no such heading", file, path,
                             hash);
        }
        l = eol ? eol + 1 : l + len;
    }
    free(doc);
}

TEST(docs_links_resolve)
{
    check_links("README.md");
    DIR *d = opendir("docs");
    REQUIRE(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".md")) {
            char path[600];
            snprintf(path, sizeof path, "docs/%s", e->d_name);
            check_links(path);
            n++;
        }
    }
    closedir(d);
    CHECK(n >= 5);
}

/* ---- the README's calibration walk-through and its script --------------- */

/* The shell commands of text [b, e): continuation lines joined, runs of
 * blanks collapsed, comments and blank lines dropped, and the spellings of
 * the binary and of mpirun's options made one ("bin/stagecraft", "$sc",
 * "$root/bin/stagecraft" -> "stagecraft"; the script's " $force" dropped).
 * Returns how many, at most cap, each malloc'd, in cmds. */
static int shell_commands(const char *b, const char *e, char **cmds, int cap)
{
    int n = 0;
    char line[2048];
    size_t len = 0;
    for (const char *p = b; p < e; p++) {
        int eol = *p == '\n' || p + 1 == e;
        if (*p == '\\' && p + 1 < e && p[1] == '\n') {
            p++; /* a continuation */
            continue;
        }
        if (!eol) {
            if (len + 1 < sizeof line && !(isspace((unsigned char)*p) && len &&
                                           line[len - 1] == ' '))
                line[len++] = isspace((unsigned char)*p) ? ' ' : *p;
            continue;
        }
        if (*p != '\n' && len + 1 < sizeof line)
            line[len++] = *p;
        while (len && line[len - 1] == ' ')
            len--;
        line[len] = 0;
        char *s = line;
        while (*s == ' ')
            s++;
        len = 0;
        if (!*s || *s == '#' || n == cap)
            continue;
        static const char *const from[] = {"bin/stagecraft ", "$sc ", " $force"};
        static const char *const to[] = {"stagecraft ", "stagecraft ", ""};
        char buf[2048];
        for (size_t k = 0; k < SC_ARRAY_LEN(from); k++) {
            char *q;
            while ((q = strstr(s, from[k]))) {
                snprintf(buf, sizeof buf, "%.*s%s%s", (int)(q - s), s, to[k], q + strlen(from[k]));
                snprintf(line, sizeof line, "%s", buf);
                s = line;
            }
        }
        cmds[n++] = sc_strdup(s);
    }
    return n;
}

/* README.md says scripts/walkthrough.sh "runs exactly these commands": its
 * "Calibrate on this machine" block, up to the held-out example, is the
 * script's list from the model to calibrate, in order, and the example's
 * plan is one of the script's held-out plans with the same options. */
TEST(docs_readme_walkthrough_is_the_script)
{
    char *readme = slurp("README.md"), *script = slurp("scripts/walkthrough.sh");
    REQUIRE(readme && script);
    const char *sec = strstr(readme, "\n## Calibrate on this machine\n");
    REQUIRE(sec);
    const char *rb = strstr(sec, "\n```sh\n");
    REQUIRE(rb);
    rb += 7;
    const char *held = strstr(rb, "\n# a held-out plan");
    const char *re = strstr(rb, "\n```\n");
    REQUIRE(held && re && held < re);
    const char *sb = strstr(script, "# ---- the README's commands");
    const char *se = sb ? strstr(sb, "\ncal_rc=$?") : NULL;
    REQUIRE(sb && se);
    char *r[64], *s[64];
    int nr = shell_commands(rb, held, r, 64), ns = shell_commands(sb, se, s, 64);
    CHECK(nr >= 10);
    CHECK_EQ_INT(nr, ns);
    for (int i = 0; i < nr && i < ns; i++)
        if (strcmp(r[i], s[i]))
            sc_test_fail(__FILE__, __LINE__, "README command %d differs from the script's:\n"
                         "  README: %s\n  script: %s", i + 1, r[i], s[i]);
    /* the held-out example: "stagecraft sim ... OPTIONS -o NAME.plan.json" in the
     * README, "NAME:OPTIONS" in the script */
    char *h[8];
    int nh = shell_commands(held, re, h, 8);
    REQUIRE(nh >= 1);
    const char *opts = strstr(h[0], " --cluster cpu.json ");
    const char *name = strstr(h[0], " -o ");
    REQUIRE(opts && name && opts < name);
    opts += strlen(" --cluster cpu.json ");
    char want[512];
    snprintf(want, sizeof want, "%.*s:%.*s\n", (int)(strlen(name + 4) - strlen(".plan.json")),
             name + 4, (int)(name - opts), opts);
    const char *at = script;
    while ((at = strstr(at, want)) && at > script && at[-1] != '\n' && at[-1] != '"')
        at++; /* a line of the script's list, the first after its opening quote */
    if (!at)
        sc_test_fail(__FILE__, __LINE__, "the README's held-out plan is not one of the "
                     "script's: %s", want);
    for (int i = 0; i < nr; i++)
        sc_free(r[i]);
    for (int i = 0; i < ns; i++)
        sc_free(s[i]);
    for (int i = 0; i < nh; i++)
        sc_free(h[i]);
    sc_free(readme);
    sc_free(script);
}
