/* cmd_model.c - `stagecraft model gen|show|list`. */
#include "cli.h"
#include "cli_outputs.h"
#include "gen.h"
#include "json.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_help(const char *s) { return !strcmp(s, "--help") || !strcmp(s, "-h"); }

static void gen_help(const sc_gen *g, FILE *f)
{
    fprintf(f, "usage: stagecraft model gen %s [--PARAM VALUE ...] [--name NAME] "
               "[--dtype fp32|tf32|fp16|bf16|fp8] -o FILE\n%s\n\n"
               "parameters (default; '-' and '_' in their names alike):\n",
            g->kind, g->description);
    for (int i = 0; i < g->n_params; i++) {
        if (g->params[i].is_flag)
            fprintf(f, "  --%-14s %s (switch)\n", g->params[i].name, g->params[i].help);
        else if (g->params[i].choices)
            fprintf(f, "  --%-14s %s (%s)\n", g->params[i].name, g->params[i].help,
                    g->params[i].choices[(int)g->params[i].dflt]);
        else
            fprintf(f, "  --%-14s %s (%g)\n", g->params[i].name, g->params[i].help,
                    g->params[i].dflt);
    }
}

/* model gen BUILTIN --help: a built-in takes --dtype, --name and -o alone. */
static void builtin_help(const char *b)
{
    printf("usage: stagecraft model gen %s [--dtype fp32|tf32|fp16|bf16|fp8] "
           "[--name NAME] -o FILE\n"
           "Writes the built-in %s computed in another dtype (default bf16, as the\n"
           "built-in), named %s-DTYPE unless --name says otherwise. Its shapes are\n"
           "fixed: 'stagecraft model gen KIND --help' for a model of your own.\n",
           b, b, b);
}

static int model_gen(int argc, char **argv)
{
    int n;
    const sc_gen *const *gens = sc_gens(&n);
    if (argc < 2 || is_help(argv[1])) {
        printf("usage: stagecraft model gen KIND [--PARAM VALUE ...] -o FILE\n"
               "       stagecraft model gen BUILTIN --dtype D -o FILE\n"
               "Generates a model description from hyperparameters, or writes a built-in\n"
               "(stagecraft model list) computed in another dtype.\n\nkinds:\n");
        for (int i = 0; i < n; i++)
            printf("  %-5s %s\n", gens[i]->kind, gens[i]->description);
        printf("\n'stagecraft model gen KIND --help' lists a kind's parameters.\n");
        return argc < 2 ? 2 : 0;
    }
    /* a kind's generator, or (g NULL) a built-in in another dtype */
    const sc_gen *g = sc_gen_find(argv[1]);
    if (!g && !sc_model_is_builtin(argv[1])) {
        /* the kind or built-in it most likely meant */
        int nb;
        const sc_builtin *b = sc_builtins(&nb);
        const char *names[128];
        int k = 0;
        for (int i = 0; i < n && k < 128; i++)
            names[k++] = gens[i]->kind;
        for (int i = 0; i < nb && k < 128; i++)
            names[k++] = b[i].name;
        char hint[160];
        sc_did_you_mean(argv[1], names, k, "", hint, sizeof hint);
        return cli_usage("model gen",
                         "unknown kind or built-in '%s'%s (see 'stagecraft model gen --help' "
                         "and 'stagecraft model list')",
                         argv[1], hint);
    }
    const char *out = NULL, *name = NULL;
    int dtype = SC_BF16;
    const char *names[64];
    double vals[64];
    int nover = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            if (g)
                gen_help(g, stdout);
            else
                builtin_help(argv[1]);
            return 0;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i >= argc)
                return cli_usage("model gen", "-o needs a file");
            out = argv[i];
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return cli_usage("model gen", "unexpected argument '%s'", a);
        const char *key = a + 2;
        const char *eq = strchr(key, '=');
        char kbuf[64];
        size_t kl = eq ? (size_t)(eq - key) : strlen(key);
        if (kl >= sizeof kbuf)
            return cli_usage("model gen", "unknown option '%s'", a);
        memcpy(kbuf, key, kl);
        kbuf[kl] = '\0';
        const char *val = eq ? eq + 1 : NULL;
        if (!strcmp(kbuf, "name") || !strcmp(kbuf, "dtype")) {
            if (!val && ++i >= argc)
                return cli_usage("model gen", "--%s needs a value", kbuf);
            if (!val)
                val = argv[i];
            if (!strcmp(kbuf, "name")) {
                name = val;
            } else if ((dtype = sc_dtype_parse(val)) < 0) {
                return cli_usage("model gen", "--dtype: unknown '%s' (fp32, tf32, fp16, bf16, fp8)",
                                 val);
            }
            continue;
        }
        if (!g)
            return cli_usage("model gen", "%s is a built-in: it takes --dtype, --name and -o "
                             "only, not '%s' ('stagecraft model gen KIND --help' for a model "
                             "of your own)", argv[1], a);
        const sc_gen_param *p = sc_gen_param_find(g, kbuf);
        if (!p) {
            const char *known[66];
            int nk = 0;
            for (int k = 0; k < g->n_params && nk < 64; k++)
                known[nk++] = g->params[k].name;
            known[nk++] = "name";
            known[nk++] = "dtype";
            char mean[96];
            return cli_usage("model gen", "%s has no parameter '--%s'%s", g->kind, kbuf,
                             sc_did_you_mean(kbuf, known, nk, "--", mean, sizeof mean));
        }
        if (nover >= (int)SC_ARRAY_LEN(vals))
            return cli_usage("model gen", "too many parameters");
        double v = 1;
        if (!p->is_flag) {
            if (!val && ++i >= argc)
                return cli_usage("model gen", "--%s needs a value", kbuf);
            if (!val)
                val = argv[i];
            if (p->choices) {
                if ((v = sc_gen_choice_index(p, val)) < 0) {
                    char list[256];
                    return cli_usage("model gen", "--%s: unknown '%s' (%s)", kbuf, val,
                                     sc_gen_choice_names(p, list, sizeof list));
                }
            } else if (cli_double("model gen", a, val, -1e300, 1e300, &v))
                return 2;
        } else if (val) {
            return cli_usage("model gen", "--%s is a switch and takes no value", kbuf);
        }
        names[nover] = p->name;
        vals[nover++] = v;
    }
    if (!out)
        return cli_usage("model gen", "missing -o FILE (use -o - for standard output)");
    sc_model *m;
    sc_error err = {0};
    if (g ? sc_gen_run(g, name ? name : g->kind, (sc_dtype)dtype, nover, names, vals, &m, &err)
          : sc_model_builtin_in(argv[1], (sc_dtype)dtype, name, &m, &err))
        return cli_fail(&err);
    sc_status st = sc_model_save(m, out, &err);
    if (!st && !cli_is_stdout(out) && !g) { /* on standard output the model goes alone */
        fprintf(stderr, "wrote %s: %s in %s\n", out, m->name, sc_dtype_name(m->dtype));
    } else if (!st && !cli_is_stdout(out)) {
        sc_totals t = sc_model_totals(m);
        char b1[32], b2[32];
        fprintf(stderr, "wrote %s: %s, %d modules, %s params, %s FLOPs/sample forward\n", out,
                m->name, m->n_modules, cli_si(t.params, b1), cli_si(t.flops_fwd, b2));
    }
    sc_model_free(m);
    return st ? cli_fail(&err) : 0;
}

static cJSON *show_json(const sc_model *m)
{
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    sc_totals t = sc_model_totals(m);
    sc_jadd_str(j, "name", m->name, &oom);
    sc_jadd_str(j, "dtype", sc_dtype_name(m->dtype), &oom);
    sc_jadd_num(j, "seq_len", m->seq_len, &oom);
    sc_jadd_num(j, "n_modules", m->n_modules, &oom);
    sc_jadd_num(j, "n_leaves", m->n_leaves, &oom);
    cJSON *tj = sc_jadd_obj(j, "totals", &oom);
    sc_jadd_num(tj, "params", t.params, &oom);
    sc_jadd_num(tj, "flops_fwd", t.flops_fwd, &oom);
    sc_jadd_num(tj, "flops_bwd", t.flops_bwd, &oom);
    sc_jadd_num(tj, "act_saved_bytes", t.act_saved_bytes, &oom);
    sc_jadd_num(tj, "tp_bytes", t.tp_bytes, &oom);
    cJSON *arr = sc_jadd_arr(j, "modules", &oom);
    for (int i = 0; i < m->n_modules && !oom; i++) {
        const sc_module *x = m->modules[i];
        sc_totals s = sc_module_totals(x);
        cJSON *o = sc_jpush_obj(arr, &oom);
        if (!o)
            break;
        sc_jadd_str(o, "name", x->name, &oom);
        sc_jadd_str(o, "kind", x->kind, &oom);
        sc_jadd_num(o, "depth", x->depth, &oom);
        sc_jadd_num(o, "params", x->params, &oom);
        sc_jadd_num(o, "params_total", s.params, &oom);
        sc_jadd_num(o, "flops_fwd", x->flops_fwd, &oom);
        sc_jadd_num(o, "flops_fwd_total", s.flops_fwd, &oom);
        sc_jadd_num(o, "flops_bwd_total", s.flops_bwd, &oom);
        sc_jadd_num(o, "act_out_bytes", x->act_out_bytes, &oom);
        sc_jadd_num(o, "act_saved_bytes_total", s.act_saved_bytes, &oom);
        if (x->shared)
            sc_jadd_str(o, "shared", x->shared, &oom);
        if (x->n_inputs) {
            cJSON *a = sc_jadd_arr(o, "inputs", &oom);
            for (int k = 0; k < x->n_inputs && a; k++)
                sc_jpush_str(a, x->inputs[k], &oom);
        }
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int model_show(int argc, char **argv)
{
    const char *what = NULL;
    int json = 0;
    long maxdepth = 1000;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: stagecraft model show NAME|FILE [--depth N] [--json]\n"
                   "Prints the module tree: each module's parameters, forward FLOPs per sample\n"
                   "and activation bytes per sample (subtree totals), and the model's totals.\n"
                   "--depth N stops the tree at depth N (the totals still cover everything).\n");
            return 0;
        }
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--depth")) {
            if (i + 1 >= argc || cli_long("model show", "--depth", argv[i + 1], 0, 1000, &maxdepth))
                return i + 1 >= argc ? cli_usage("model show", "--depth needs a value") : 2;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            static const char *const opts[] = {"json", "depth", "help"};
            char mean[96] = "";
            if (argv[i][1] == '-')
                sc_did_you_mean(argv[i] + 2, opts, 3, "--", mean, sizeof mean);
            return cli_usage("model show", "unknown option '%s'%s", argv[i], mean);
        }
        else if (what)
            return cli_usage("model show", "one model at a time");
        else
            what = argv[i];
    }
    if (!what)
        return cli_usage("model show", "which model? (a built-in name or a file)");
    sc_model *m;
    sc_error err = {0};
    if (sc_model_open(what, &m, &err))
        return cli_fail(&err);
    if (json) {
        int rc = cli_print_json(show_json(m));
        sc_model_free(m);
        return rc;
    }
    sc_totals t = sc_model_totals(m);
    char b[6][32];
    printf("model %s  dtype %s  seq %d  %d modules (%d leaves)\n", m->name,
           sc_dtype_name(m->dtype), m->seq_len, m->n_modules, m->n_leaves);
    printf("%-36s %-10s %10s %12s %11s %11s  %s\n", "module", "kind", "params", "fwd FLOPs",
           "act out", "act saved", "notes");
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *x = m->modules[i];
        if (x->depth > maxdepth)
            continue;
        sc_totals s = sc_module_totals(x);
        char label[40];
        snprintf(label, sizeof label, "%*s%s", 2 * x->depth, "", x->name);
        char notes[160] = "";
        size_t nl = 0;
        if (x->shared)
            nl += (size_t)snprintf(notes + nl, sizeof notes - nl, "shared=%s ", x->shared);
        if (x->n_inputs)
            nl += (size_t)snprintf(notes + nl, sizeof notes - nl, "inputs=%s%s", x->inputs[0],
                                   x->n_inputs > 1 ? ",..." : "");
        if (x->n_inputs > 1 && nl < sizeof notes)
            snprintf(notes + nl, sizeof notes - nl, " (%d)", x->n_inputs);
        printf("%-36.36s %-10.10s %10s %12s %11s %11s  %s\n", label, x->kind,
               cli_si(s.params, b[0]), cli_si(s.flops_fwd, b[1]), cli_bytes(x->act_out_bytes, b[2]),
               cli_bytes(s.act_saved_bytes, b[3]), notes);
    }
    printf("\ntotal: %s params (%s), %s FLOPs/sample forward, %s FLOPs/sample backward, "
           "%s saved activations/sample\n",
           cli_si(t.params, b[0]), cli_bytes(t.params * sc_dtype_bytes(m->dtype), b[1]),
           cli_si(t.flops_fwd, b[2]), cli_si(t.flops_bwd, b[3]), cli_bytes(t.act_saved_bytes, b[4]));
    sc_model_free(m);
    return 0;
}

static int model_list(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: stagecraft model list [--json]\nLists the built-in models.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else
            return cli_usage("model list", "unexpected argument '%s'", argv[i]);
    }
    int n;
    const sc_builtin *b = sc_builtins(&n);
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    if (!json)
        printf("%-10s %10s %12s  %s\n", "name", "params", "fwd FLOPs", "description");
    for (int i = 0; i < n; i++) {
        sc_model *m;
        sc_error err = {0};
        if (b[i].make(SC_BF16, &m, &err)) {
            cJSON_Delete(arr);
            return cli_fail(&err);
        }
        sc_totals t = sc_model_totals(m);
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(arr, o);
            cJSON_AddStringToObject(o, "name", b[i].name);
            cJSON_AddStringToObject(o, "description", b[i].description);
            cJSON_AddNumberToObject(o, "params", t.params);
            cJSON_AddNumberToObject(o, "flops_fwd", t.flops_fwd);
        } else {
            char p[32], f[32];
            printf("%-10s %10s %12s  %s\n", b[i].name, cli_si(t.params, p), cli_si(t.flops_fwd, f),
                   b[i].description);
        }
        sc_model_free(m);
    }
    return json ? cli_print_json(arr) : 0;
}

int cmd_model(int argc, char **argv)
{
    if (argc < 2 || is_help(argv[1])) {
        printf("usage: stagecraft model gen KIND [flags] -o FILE   generate from hyperparameters\n"
               "       stagecraft model show NAME|FILE [--json]    the module tree and totals\n"
               "       stagecraft model list [--json]              the built-in models\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "gen"))
        return model_gen(argc - 1, argv + 1);
    if (!strcmp(argv[1], "show"))
        return model_show(argc - 1, argv + 1);
    if (!strcmp(argv[1], "list"))
        return model_list(argc - 1, argv + 1);
    return cli_usage("model", "unknown subcommand '%s' (gen, show, list)", argv[1]);
}
