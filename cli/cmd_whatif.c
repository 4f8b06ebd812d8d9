/* cmd_whatif.c - `stagecraft whatif`: node counts × clusters, days and dollars
 * on demand and on spot. */
#include "cli.h"
#include "cli_outputs.h"
#include "framework.h"
#include "overhead.h"
#include "cli_opts.h"
#include "cli_limits.h"
#include "cluster.h"
#include "cost.h"
#include "json.h"
#include "model.h"
#include "whatif.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    cli_search_args s; /* first: the shared options (cli_opts.h) land here */
    const char *clusters, *nodes, *dir;
    double tokens, iph, gbps, restart_min;
    int spot;
} whatif_args;

#define W(f) offsetof(whatif_args, f)

static const cli_opt whatif_opts[] = {
    {"cluster", 0, "C[,C2...]", "clusters to compare: presets or cluster files", cli_opt_str,
     W(clusters), 0, 0, 0, NULL, NULL, 0},
    {"nodes", 0, "LIST", "counts separated by commas (1,2,4,8,16); A-B stands for\n"
     "the powers of two from A to B (1-64 = 1,2,4,8,16,32,64);\nboth mix",
     cli_opt_str, W(nodes), 0, 0, 0, NULL, NULL, 0},
    {"tokens", 0, "T", "tokens to train (3e11, 300B, 1.5T)", cli_opt_count, W(tokens), 1, 1e18, 0,
     NULL, NULL, 0},
    {"spot", 0, NULL, "also price spot capacity ('-' where a cluster has none)",
     cli_opt_flag, W(spot), 0, 0, 0, NULL, NULL, 0},
    {"interruptions-per-hour", 0, "X", "spot interruptions per node-hour (default: the\n"
     "cluster's price.spot_interruptions_per_hour); the job\n"
     "stops when any of its nodes is taken back (X x nodes per\nhour)", cli_opt_double,
     W(iph), 0, 3600, 0, NULL, NULL, 0},
    {"storage-gbps", 0, "G", "checkpoint write bandwidth per node in gigabits per\n"
     "second (8 Gb/s = 1 GB/s; default: the cluster's\n"
     "storage_bytes_per_s); the weights and optimizer states\n"
     "are written by all nodes at once", cli_opt_double, W(gbps), 1e-6, 1e6, 0, NULL, NULL, 0},
    {"restart-minutes", 0, "R", "time to get going again after an interruption",
     cli_opt_double, W(restart_min), 0, 1e6, 0, NULL, NULL, 1},
    {"output", 'o', "DIR", "output folder, created if missing: whatif.csv,\n"
     "whatif.json, and time_vs_cost, tokens_vs_nodes,\n"
     "cost_per_mtok_vs_nodes as .png and .svg (gnuplot)", cli_opt_str, W(dir), 0, 0, 0, NULL,
     NULL, 1},
    {NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL, 0},
};

static const cli_cmd whatif_cmd = {
    "whatif", CLI_WHATIF,
    "usage: stagecraft whatif --model M --cluster C[,C2...] --nodes LIST --global-batch B\n"
    "                         --tokens T [--spot] [--interruptions-per-hour X]\n"
    "                         [--storage-gbps G] [--restart-minutes R] [--simulate K]\n"
    "                         [--framework F] [--cuts layers|leaves] [-o DIR] [--json]\n"
    "For each cluster and node count, searches the best plan (the planner, K simulated\n"
    "candidates, the same default as plan's) and reports its configuration, step time,\n"
    "tokens/s, scaling efficiency (tokens/s per GPU against the cluster's smallest\n"
    "count), days to train T tokens and the cost on demand (nodes x price x hours)\n"
    "and, with --spot, on spot capacity with interruptions, checkpoints and restarts\n"
    "charged.\n"
    "A count where nothing fits or no configuration matches is skipped and reported.\n",
    "Spot model (planner/whatif.h): checkpoint every tau seconds of work, tau from\n"
    "Daly (2006), refining Young (1974) tau = sqrt(2 delta M); expected wall time\n"
    "T_w = [T_s + (T_s/tau - 1) delta] / (1 - ((tau + delta)/2 + R) / M), M the job's\n"
    "mean time between interruptions, delta the checkpoint write time. When the\n"
    "denominator is <= 0 spot is reported infeasible.\n",
    whatif_opts};

typedef struct {
    double t0, last;
    int lines;
} progress_state;

/* A line on stderr, terminal or not, once CLI_PROGRESS_AFTER_S have passed
 * and then every CLI_PROGRESS_EVERY_S (and for the last point of a study
 * that printed one): done / total, the rate and the time left. */
static void progress(void *ud, int done, int total, const char *cluster, long nodes,
                     const sc_whatif_point *p, const char *reason)
{
    progress_state *s = ud;
    double t = cli_wall() - s->t0;
    int last = done == total;
    if (t < CLI_PROGRESS_AFTER_S || (last ? !s->lines : s->lines && t - s->last < CLI_PROGRESS_EVERY_S))
        return;
    s->last = t;
    s->lines++;
    char tail[96] = "";
    if (!last && done > 0)
        snprintf(tail, sizeof tail, ", about %.0f s left", t / done * (total - done));
    if (p)
        fprintf(stderr, "whatif: [%d/%d] %s x %ld: %.3g tokens/s, %.2f days (%.2f/s, %.0f s "
                        "elapsed%s)\n",
                done, total, cluster, nodes, p->tokens_per_s, p->days, done / t, t, tail);
    else
        fprintf(stderr, "whatif: [%d/%d] %s x %ld: skipped (%.2f/s, %.0f s elapsed%s)\n", done,
                total, cluster, nodes, done / t, t, tail);
    fflush(stderr);
}

static const char *money(double v, char *b)
{
    if (!isfinite(v))
        return "infeasible";
    /* whole dollars with thousands separators */
    char d[32];
    int len = snprintf(d, sizeof d, "%.0f", v), o = 0;
    for (int i = 0; i < len && o < 30; i++) {
        if (i && (len - i) % 3 == 0)
            b[o++] = ',';
        b[o++] = d[i];
    }
    b[o] = '\0';
    return b;
}

/* Which kind of cluster each prediction used (cli_print_label), with the error
 * bar of the first point's step of each validated preset. */
static void print_labels(const sc_whatif *w, const sc_model *m, int flash, int attn_given)
{
    printf("\n");
    for (int c = 0; c < w->n_clusters; c++) {
        const sc_whatif_point *p = sc_whatif_first_point(w, c);
        long nodes = p ? p->nodes : 0;
        char what[192];
        snprintf(what, sizeof what, "the measured step at %ld node%s", nodes,
                 nodes == 1 ? "" : "s");
        cli_print_label(&w->clusters[c], p ? p->step_s : 0, what, 1, m, p ? p->gpus : 0, flash);
    }
    for (int c = 0; c < w->n_clusters; c++) /* once, under the labels */
        if (cli_print_attn_hint(&w->clusters[c], m, flash, attn_given))
            break;
}

/* A point's layout in one word-list, "dp.tp.pp [v V] mM mbsB schedule zZ
 * [sel|full] [sp] [cp C]"; returns its length. */
static int point_config(const sc_whatif_point *p, char *cfg, size_t n)
{
    int len = snprintf(cfg, n, "%d.%d.%d%s%.0d m%d mbs%d %s z%d%s%s%s%.0d", p->dp, p->tp, p->pp,
                       p->v > 1 ? " v" : "", p->v > 1 ? p->v : 0, p->m, p->mbs, p->schedule,
                       p->zero,
                       p->recompute == SC_RECOMPUTE_SELECTIVE ? " sel"
                       : p->recompute == SC_RECOMPUTE_FULL    ? " full"
                                                              : "",
                       p->sp ? " sp" : "", p->cp > 1 ? " cp" : "", p->cp > 1 ? p->cp : 0);
    return len < 0 ? 0 : len >= (int)n ? (int)n - 1 : len;
}

static void print_table(const sc_whatif *w, const sc_model *m, double state_bytes,
                        const sc_whatif_opts *o)
{
    char b[6][32];
    printf("whatif: %s (%s params, checkpoint %s), global batch %ld, %s tokens\n", w->model,
           cli_si(sc_model_totals(m).params, b[0]), cli_bytes(state_bytes, b[1]), w->global_batch,
           cli_si(w->tokens, b[2]));
    if (o->framework || o->cut_in_layers)
        printf("plans for %s, stages cut %s\n", o->framework ? o->framework->title : "any framework",
               o->cut_in_layers ? "at any leaf" : "between layers");
    if (o->fp8)
        printf("every plan trains with fp8 GEMMs in the attention and MLP layers (--fp8)\n");
    cli_print_p2p_rule(o->framework, o->no_overlap_p2p_comm);
    if (w->spot)
        printf("spot: restart %.3g min per interruption; rates, prices and checkpoint "
               "bandwidth per cluster below the table\n",
               w->restart_s / 60);
    /* the config column as wide as its widest entry */
    const char *cfg_head = "config (dp.tp.pp v m mbs ...)";
    int cfg_w = (int)strlen(cfg_head);
    for (int i = 0; i < w->n_points; i++) {
        char cfg[96];
        int n = point_config(&w->points[i], cfg, sizeof cfg);
        cfg_w = n > cfg_w ? n : cfg_w;
    }
    printf("\n%-14s %5s %5s  %-*s %9s %10s %7s %8s %11s %8s", "cluster", "nodes", "GPUs", cfg_w,
           cfg_head, "step ms", "tokens/s", "scaling", "days", "on-demand $", "$/Mtok");
    if (w->spot)
        printf(" %7s %9s %9s %9s %6s", "ckpt s", "every min", "spot days", "spot $", "waste");
    printf("  front\n");
    for (int i = 0; i < w->n_points; i++) {
        const sc_whatif_point *p = &w->points[i];
        char cfg[96];
        point_config(p, cfg, sizeof cfg);
        printf("%-14s %5ld %5ld  %-*s %9.1f %10s %6.1f%% %8.2f %11s %8.3f",
               w->clusters[p->cluster].name, p->nodes, p->gpus, cfg_w, cfg, 1e3 * p->step_s,
               cli_si(p->tokens_per_s, b[0]), 100 * p->scaling_efficiency, p->days,
               money(p->cost_on_demand, b[1]), p->usd_per_mtok_on_demand);
        if (w->spot && p->has_spot) {
            printf(" %7.2f", p->spot.checkpoint_s);
            if (isfinite(p->spot.interval_s))
                printf(" %9.1f", p->spot.interval_s / 60);
            else
                printf(" %9s", "never");
            if (p->spot.feasible)
                printf(" %9.2f %9s %5.1f%%", p->spot_days, money(p->cost_spot, b[2]),
                       100 * p->spot.waste_fraction);
            else
                printf(" %9s %9s %6s", "-", "infeasible", "100%");
        } else if (w->spot) {
            printf(" %7s %9s %9s %9s %6s", "-", "-", "-", "-", "-");
        }
        const char *f = p->pareto_on_demand && p->pareto_spot ? "both"
                        : p->pareto_on_demand                 ? "on-demand"
                        : p->pareto_spot                      ? "spot"
                                                              : "";
        printf("  %s\n", f);
    }
    if (w->spot) {
        printf("\n");
        for (int c = 0; c < w->n_clusters; c++) {
            const sc_cluster *k = &w->clusters[c];
            if (k->price.spot_per_hour > 0) {
                for (int i = 0; i < w->n_points; i++)
                    if (w->points[i].cluster == c) {
                        const sc_whatif_point *p = &w->points[i];
                        printf("%s: $%.4g/h on demand, $%.4g/h spot per node; %.3g "
                               "interruptions per node-hour; checkpoints written at %.3g GB/s per node\n",
                               k->name, k->price.on_demand_per_hour, k->price.spot_per_hour,
                               p->spot.interruptions_per_hour / (double)p->nodes,
                               state_bytes / (p->spot.checkpoint_s * (double)p->nodes) / 1e9);
                        break;
                    }
            } else {
                printf("%s: $%.4g/h on demand per node; no spot price\n", k->name,
                       k->price.on_demand_per_hour);
            }
        }
    }
    if (w->n_skipped) {
        printf("\nskipped:\n");
        for (int i = 0; i < w->n_skipped; i++)
            printf("  %s x %ld: %s\n", w->clusters[w->skipped[i].cluster].name,
                   w->skipped[i].nodes, w->skipped[i].reason);
    }
}

int cmd_whatif(int argc, char **argv)
{
    sc_whatif_opts o;
    sc_whatif_opts_default(&o);
    whatif_args a;
    memset(&a, 0, sizeof a);
    cli_search_args_init(&a.s);
    a.dir = "out/whatif";
    a.iph = o.interruptions_per_hour;
    a.restart_min = 10;
    int prc = cli_parse(&whatif_cmd, argc, argv, &a);
    if (prc)
        return prc == CLI_HELP_SHOWN ? 0 : prc;
    const char *model = a.s.model, *clusters = a.clusters, *list = a.nodes, *dir = a.dir;
    long batch = a.s.batch;
    double tokens = a.tokens, gbps = a.gbps, restart_min = a.restart_min;
    int json = a.s.json;
    o.spot = a.spot;
    o.interruptions_per_hour = a.iph;
    o.attn = a.s.o.attn;
    if (!model || !clusters || !list || !batch || !tokens)
        return cli_usage("whatif",
                         "--model, --cluster, --nodes, --global-batch and --tokens are required");
    int bad = cli_outdir_bad("whatif", dir, "(--json prints the results on standard output)");
    if (bad)
        return bad;
    sc_error err = {0};
    long nodes[SC_WHATIF_MAX_COUNTS];
    int n_nodes = 0;
    if (sc_whatif_parse_nodes(list, nodes, SC_WHATIF_MAX_COUNTS, &n_nodes, &err))
        return cli_usage("whatif", "%s", err.msg);

    /* the clusters, each a preset name or a file */
    sc_cluster cs[SC_WHATIF_MAX_CLUSTERS];
    int nc = 0;
    char names[4096];
    if (snprintf(names, sizeof names, "%s", clusters) >= (int)sizeof names)
        return cli_usage("whatif", "--cluster: list too long");
    for (char *save = NULL, *tok = strtok_r(names, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (nc == SC_WHATIF_MAX_CLUSTERS)
            return cli_usage("whatif", "--cluster: more than %d clusters", SC_WHATIF_MAX_CLUSTERS);
        if (sc_cluster_open(tok, &cs[nc], &err) ||
            sc_overhead_apply(&cs[nc], a.s.o.framework ? a.s.o.framework->name : NULL,
                              "--framework", &err))
            return cli_fail(&err);
        cli_warn_cluster(&cs[nc], tok);
        for (int i = 0; i < nc; i++)
            if (!strcmp(cs[i].name, cs[nc].name))
                return cli_usage("whatif", "--cluster: %s is listed twice", cs[nc].name);
        nc++;
    }
    if (!nc)
        return cli_usage("whatif", "--cluster: empty list");

    sc_model *m;
    if (sc_model_open(model, &m, &err))
        return cli_fail(&err);
    if (sc_cost_model_check(m, model, &err)) {
        sc_model_free(m);
        return cli_fail(&err);
    }
    o.global_batch = batch;
    o.tokens = tokens;
    o.simulate = a.s.o.simulate;
    o.framework = a.s.o.framework;
    o.cut_in_layers = a.s.o.cut_in_layers;
    o.max_mem_bytes = cli_mem_cap(a.s.max_mem);
    o.fix_sp = a.s.o.fix_sp;
    o.fix_cp = a.s.o.fix_cp;
    o.no_overlap_grad_reduce = a.s.o.no_overlap_grad_reduce;
    o.no_overlap_p2p_comm = a.s.o.no_overlap_p2p_comm;
    o.tp_comm_overlap = a.s.o.tp_comm_overlap;
    o.overlap_param_gather = a.s.o.overlap_param_gather;
    o.grad_reduce_in_fp32 = a.s.o.grad_reduce_in_fp32;
    o.fp8 = a.s.o.fp8;
    o.restart_s = 60 * restart_min;
    if (gbps > 0)
        o.storage_bytes_per_s = gbps * 1e9 / 8;
    progress_state ps = {cli_wall(), 0, 0};
    o.progress = progress;
    o.progress_ud = &ps;
    struct stat dsb;
    int dir_existed = stat(dir, &dsb) == 0;
    sc_whatif *w = NULL;
    if (sc_whatif_run(m, cs, nc, nodes, n_nodes, &o, &w, &err)) {
        sc_model_free(m);
        return cli_fail(&err);
    }
    int rc = 0;
    if (w->n_points == 0) {
        fprintf(stderr, "stagecraft: whatif: no cluster and node count could run %s; nothing "
                        "written\n", m->name);
        for (int i = 0; i < w->n_skipped; i++)
            fprintf(stderr, "  %s x %ld: %s\n", w->clusters[w->skipped[i].cluster].name,
                    w->skipped[i].nodes, w->skipped[i].reason);
        rc = CLI_EXIT_INFEASIBLE;
    } else if (sc_whatif_write(w, dir, NULL, &err)) {
        rc = cli_fail(&err);
        if (!dir_existed)
            rmdir(dir); /* the folder this run made, if it is empty */
    } else if (json) {
        rc = cli_print_json(sc_whatif_to_json(w));
    } else {
        double bw, bg, bo;
        sc_cost_state_bytes(m->dtype, &bw, &bg, &bo);
        print_table(w, m, (bw + bo) * sc_model_totals(m).params, &o);
        print_labels(w, m, o.attn == SC_ATTN_FLASH, a.s.attn_given);
        printf("\nfront: the (days, $) options no other beats on both, over every cluster and "
               "count%s\n",
               w->spot ? ", on demand and spot" : "");
        if (sc_whatif_has_cost(w))
            printf("wrote %s/whatif.csv, whatif.json and time_vs_cost, tokens_vs_nodes, "
                   "cost_per_mtok_vs_nodes (.png, .svg)\n",
                   dir);
        else
            printf("wrote %s/whatif.csv, whatif.json and tokens_vs_nodes (.png, .svg); no "
                   "cost charts: no cluster has a price\n",
                   dir);
    }
    sc_whatif_free(w);
    sc_model_free(m);
    return rc;
}
