/* cmd_cost.c - `stagecraft cost`: the per-module cost table of a model on a
 * cluster (sc_cost_table). */
#include "cli.h"
#include "cluster.h"
#include "cost.h"
#include "json.h"
#include "model.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: stagecraft cost --model M --cluster C [--nodes N] [--tp T] [--sp] [--mbs B]\n"
            "                       [--dtype D] [--fp8] [--algo A] [--depth N]\n"
            "                       [--attn unfused|flash] [--kernels] [--json]\n\n"
            "Per-module costs of model M (a built-in name or a file) on cluster C (a preset\n"
            "or a file), for one microbatch of B samples on one rank of a tp group of T:\n"
            "parameters, forward and backward time, tensor-parallel allreduce time (forward\n"
            "+ backward), model-state memory (weights, grads, Adam states, no ZeRO) and\n"
            "activations saved per microbatch. Times are in microseconds. A row with children\n"
            "shows its subtree's sums.\n\n"
            "  --tp T      tensor-parallel degree (default 1)\n"
            "  --sp        sequence parallelism (needs --tp 2 or more): norms and dropouts on\n"
            "              s/t tokens, their activations sharded by tp, the tp allreduce as a\n"
            "              reduce-scatter plus an all-gather (Korthikanti et al. 2022)\n"
            "  --mbs B     samples per microbatch (default 1)\n"
            "  --dtype D   fp32|tf32|fp16|bf16|fp8 (default: the model's)\n"
            "  --fp8       fp8 training as Transformer Engine runs it: the attention and MLP\n"
            "              weight GEMMs in fp8 with their casts, the rest in the 16-bit dtype\n"
            "              (a GPU with fp8 tensor cores; kernel-level leaves)\n"
            "  --algo A    collective algorithm for tp allreduces: auto (default; NCCL's\n"
            "              choice: across nodes the faster of ring and tree), ring, tree, hier\n"
            "  --depth N   show the tree down to depth N only (the totals cover everything)\n"
            "  --attn A    attention kernels: unfused (default) or flash\n"
            "  --kernels   list each leaf's kernels with their shapes and times (where the\n"
            "              model lists kernels and the cluster has efficiency.gemm)\n"
            "  --json      one JSON object (own costs per module) instead of the table\n");
}

/* The kernels of a leaf that run under cfg, each with its time (kernel level). */
static void kernels_json(cJSON *o, const sc_cluster *c, const sc_cost_cfg *cfg,
                         const sc_module *mod, int *oom)
{
    sc_compute_cfg cc = {cfg->dtype, cfg->tp, cfg->sp, cfg->mbs, cfg->attn, 0, 0, 0, 0, cfg->fp8};
    cJSON *a = sc_jadd_arr(o, "kernels", oom);
    for (int k = 0; k < mod->n_kernels && a; k++) {
        const sc_kernel *x = &mod->kernels[k];
        if (!sc_kernel_runs(x, cfg->attn))
            continue;
        cJSON *e = sc_jpush_obj(a, oom);
        sc_jadd_str(e, "name", x->name, oom);
        sc_jadd_str(e, "op", sc_kop_name((sc_kop)x->op), oom);
        if (x->op == SC_KOP_MEM) {
            double t = cfg->tp > 1 ? cfg->tp : 1;
            double sh = x->tp == SC_KTP_SHARD || (x->tp == SC_KTP_SEQ && cfg->sp) ? t : 1;
            sc_jadd_num(e, "bytes", x->bytes * cfg->mbs / sh, oom);
            sc_jadd_num(e, "bwd_bytes", x->bwd_bytes * cfg->mbs / sh, oom);
        } else {
            double B, M, N, K;
            sc_cost_kernel_shape(x, &cc, &B, &M, &N, &K);
            sc_jadd_num(e, "batch", B, oom);
            sc_jadd_num(e, "m", M, oom);
            sc_jadd_num(e, "n", N, oom);
            sc_jadd_num(e, "k", K, oom);
        }
        if (sc_cost_fp8_gemm(mod, x, &cc))
            sc_jadd_bool(e, "fp8", 1, oom);
        sc_jadd_num(e, "fwd_s", sc_cost_kernel_time_in(c, mod, k, &cc, 0), oom);
        sc_jadd_num(e, "bwd_s", sc_cost_kernel_time_in(c, mod, k, &cc, 1), oom);
    }
}

static cJSON *table_json(const sc_model *m, const sc_cluster *c, const sc_cost_cfg *cfg,
                         const sc_cost_row *rows, int n, const sc_cost_row *tot, int kernels)
{
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "model", m->name, &oom);
    sc_jadd_str(j, "cluster", c->name, &oom);
    sc_jadd_num(j, "nodes", c->nodes, &oom);
    sc_jadd_num(j, "tp", cfg->tp, &oom);
    sc_jadd_num(j, "mbs", cfg->mbs, &oom);
    sc_jadd_str(j, "dtype", sc_dtype_name(cfg->dtype), &oom);
    sc_jadd_str(j, "tp_algo", cfg->tp_algo ? cfg->tp_algo : "auto", &oom);
    sc_jadd_str(j, "attention", sc_attn_name(cfg->attn), &oom);
    sc_jadd_bool(j, "sp", cfg->sp, &oom);
    sc_jadd_bool(j, "fp8", cfg->fp8, &oom);
    cJSON *arr = sc_jadd_arr(j, "modules", &oom);
    for (int i = 0; i <= n && !oom; i++) {
        const sc_cost_row *r = i < n ? &rows[i] : tot;
        cJSON *o = i < n ? cJSON_CreateObject() : sc_jadd_obj(j, "totals", &oom);
        if (!o)
            break;
        if (i < n && !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            oom = 1;
            break;
        }
        if (i < n) {
            sc_jadd_str(o, "name", r->mod->name, &oom);
            sc_jadd_str(o, "kind", r->mod->kind, &oom);
            sc_jadd_num(o, "depth", r->depth, &oom);
        }
        sc_jadd_num(o, "params", r->params, &oom);
        sc_jadd_num(o, "fwd_s", r->fwd_s, &oom);
        sc_jadd_num(o, "bwd_s", r->bwd_s, &oom);
        sc_jadd_num(o, "tp_bytes", r->tp_bytes, &oom);
        sc_jadd_num(o, "tp_s", r->tp_s, &oom);
        sc_jadd_num(o, "state_bytes", r->state_bytes, &oom);
        sc_jadd_num(o, "act_bytes", r->act_bytes, &oom);
        if (kernels && i < n && sc_cost_uses_kernels(c, r->mod))
            kernels_json(o, c, cfg, r->mod, &oom);
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* Row i with its whole subtree summed in (rows are in pre-order). */
static sc_cost_row subtree(const sc_cost_row *rows, int n, int i)
{
    sc_cost_row s = rows[i];
    for (int k = i + 1; k < n && rows[k].depth > rows[i].depth; k++) {
        s.params += rows[k].params;
        s.fwd_s += rows[k].fwd_s;
        s.bwd_s += rows[k].bwd_s;
        s.tp_bytes += rows[k].tp_bytes;
        s.tp_s += rows[k].tp_s;
        s.state_bytes += rows[k].state_bytes;
        s.act_bytes += rows[k].act_bytes;
    }
    return s;
}

/* One line per kernel of a leaf, under its row. */
static void kernels_text(const sc_cluster *c, const sc_cost_cfg *cfg, const sc_module *mod,
                         int indent, int w)
{
    sc_compute_cfg cc = {cfg->dtype, cfg->tp, cfg->sp, cfg->mbs, cfg->attn, 0, 0, 0, 0, cfg->fp8};
    char b[2][48], name[80];
    for (int k = 0; k < mod->n_kernels; k++) {
        const sc_kernel *x = &mod->kernels[k];
        if (!sc_kernel_runs(x, cfg->attn))
            continue;
        snprintf(name, sizeof name, "%*s[%s %s]", indent, "",
                 sc_cost_fp8_gemm(mod, x, &cc) ? "gemm fp8" : sc_kop_name((sc_kop)x->op),
                 x->name);
        printf("%-*.*s %10s %12s %12s\n", w, w, name, "",
               cli_us(sc_cost_kernel_time_in(c, mod, k, &cc, 0), b[0]),
               cli_us(sc_cost_kernel_time_in(c, mod, k, &cc, 1), b[1]));
    }
}

static void table_text(const sc_model *m, const sc_cluster *c, const sc_cost_cfg *cfg,
                       const sc_cost_row *rows, int n, const sc_cost_row *tot, long maxdepth,
                       int kernels)
{
    int w = 6;
    for (int i = 0; i < n; i++) {
        int l = 2 * rows[i].depth + (int)strlen(rows[i].mod->name);
        if (l > w)
            w = l;
        /* a kernel line: "[op name]" two deeper than its leaf */
        for (int k = 0; kernels && k < rows[i].mod->n_kernels; k++) {
            const sc_kernel *x = &rows[i].mod->kernels[k];
            l = 2 * rows[i].depth + 5 + (int)strlen(sc_kop_name((sc_kop)x->op)) +
                (int)strlen(x->name);
            if (l > w)
                w = l;
        }
    }
    if (w > 48)
        w = 48;
    printf("%s on %s (%d x %d %s), tp %d%s, mbs %d, %s%s, tp %s %s, %s attention\n", m->name,
           c->name, c->nodes, c->gpus_per_node, c->gpu.name, cfg->tp, cfg->sp ? " sp" : "",
           cfg->mbs, sc_dtype_name(cfg->dtype), cfg->fp8 ? " with fp8 GEMMs" : "",
           cfg->sp ? "reduce-scatter + all-gather" : "allreduce",
           cfg->tp_algo ? cfg->tp_algo : "auto", sc_attn_name(cfg->attn));
    printf("%-*s %10s %12s %12s %12s %11s %11s\n", w, "module", "params", "fwd us", "bwd us",
           "tp comm us", "states", "act/mb");
    char b[6][48];
    for (int i = 0; i <= n; i++) {
        if (i < n && rows[i].depth > maxdepth)
            continue;
        sc_cost_row sub;
        if (i < n)
            sub = subtree(rows, n, i);
        const sc_cost_row *r = i < n ? &sub : tot;
        if (i < n) {
            int d = 2 * r->depth;
            if (d > w - 1)
                d = w - 1;
            printf("%*s%-*.*s", d, "", w - d, w - d, r->mod->name);
        } else {
            printf("%-*s", w, "total");
        }
        printf(" %10s %12s %12s %12s %11s %11s\n", cli_si(r->params, b[0]), cli_us(r->fwd_s, b[1]),
               cli_us(r->bwd_s, b[2]), cli_us(r->tp_s, b[3]), cli_bytes(r->state_bytes, b[4]),
               cli_bytes(r->act_bytes, b[5]));
        if (kernels && i < n && sc_cost_uses_kernels(c, r->mod))
            kernels_text(c, cfg, r->mod, 2 * r->depth + 2, w);
    }
}

int cmd_cost(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, {"cluster", required_argument, NULL, 'c'},
        {"nodes", required_argument, NULL, 'n'}, {"tp", required_argument, NULL, 't'},
        {"mbs", required_argument, NULL, 'b'},   {"dtype", required_argument, NULL, 'd'},
        {"algo", required_argument, NULL, 'a'},  {"json", no_argument, NULL, 'j'},
        {"depth", required_argument, NULL, 'D'}, {"attn", required_argument, NULL, 'A'},
        {"kernels", no_argument, NULL, 'K'},    {"sp", no_argument, NULL, 'S'},
        {"fp8", no_argument, NULL, '8'},         {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *model = NULL, *cluster = NULL, *algo = NULL;
    long nodes = 0, tp = 1, mbs = 1, depth = 1000;
    int dtype = -1, json = 0, sp = 0, ch, attn = SC_ATTN_UNFUSED, kernels = 0, fp8 = 0;
    if (cli_exact_longopts("cost", argc, argv, "h", opts))
        return 2;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            model = optarg;
            break;
        case 'c':
            cluster = optarg;
            break;
        case 'n':
            if (cli_long("cost", "--nodes", optarg, 1, SC_CLUSTER_MAX_NODES, &nodes))
                return 2;
            break;
        case 't':
            if (cli_long("cost", "--tp", optarg, 1, 1 << 20, &tp))
                return 2;
            break;
        case 'b':
            if (cli_long("cost", "--mbs", optarg, 1, 1 << 20, &mbs))
                return 2;
            break;
        case 'd':
            if ((dtype = sc_dtype_parse(optarg)) < 0)
                return cli_usage("cost", "--dtype: unknown '%s' (fp32, tf32, fp16, bf16, fp8)",
                                 optarg);
            break;
        case 'a':
            if (!sc_coll_find(optarg))
                return cli_usage("cost", "--algo: unknown '%s' (auto, ring, tree, hier)", optarg);
            algo = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'A':
            if ((attn = sc_attn_parse(optarg)) < 0)
                return cli_usage("cost", "--attn: '%s' is not one of unfused, flash", optarg);
            break;
        case 'K':
            kernels = 1;
            break;
        case 'S':
            sp = 1;
            break;
        case '8':
            fp8 = 1;
            break;
        case 'D':
            if (cli_long("cost", "--depth", optarg, 0, 1000, &depth))
                return 2;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage("cost", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_stray_arg("cost", argc, argv, optind, 1, 0);
    if (!model || !cluster)
        return cli_usage("cost", "--model and --cluster are required");
    if (sp && tp < 2)
        return cli_usage("cost", "--sp: sequence parallelism needs --tp 2 or more (tp is %ld)", tp);
    sc_error err = {0};
    sc_cluster c;
    if (sc_cluster_open(cluster, &c, &err) || (nodes && sc_cluster_set_nodes(&c, nodes, &err)))
        return cli_fail(&err);
    if (tp > sc_cluster_total_gpus(&c))
        return cli_usage("cost", "--tp %ld exceeds the cluster's %ld GPUs (try --nodes)", tp,
                         sc_cluster_total_gpus(&c));
    sc_model *m;
    if (sc_model_open(model, &m, &err))
        return cli_fail(&err);
    /* tp must divide the heads: the planner's rule (sc_cost_tp_check) */
    if (sc_cost_tp_check(m, (int)tp, &err)) {
        sc_err_prefix(&err, "cost: %s", model);
        sc_model_free(m);
        return cli_fail(&err);
    }
    sc_cost_cfg cfg = {dtype >= 0 ? (sc_dtype)dtype : m->dtype, (int)tp, (int)mbs, algo, sp,
                       (sc_attn)attn, fp8};
    sc_cost_row *rows, tot;
    int n, rc = 0;
    if (sc_cost_table(&c, m, &cfg, &rows, &n, &tot, &err)) {
        sc_model_free(m);
        return cli_fail(&err);
    }
    if (json)
        rc = cli_print_json(table_json(m, &c, &cfg, rows, n, &tot, kernels));
    else
        table_text(m, &c, &cfg, rows, n, &tot, depth, kernels);
    sc_free(rows);
    sc_model_free(m);
    return rc;
}
