/* cmd_repro.c - `stagecraft repro seed38`: the founding document's 38% claim
 * (planner/seed38.h computes everything; this parses and prints). */
#include "cli.h"
#include "cli_outputs.h"
#include "seed38.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
            "usage: stagecraft repro seed38 [--model M1,M2,...] [--cluster C] [--nodes N]\n"
            "                               [--global-batch B] [--microbatches M] [-o DIR]\n"
            "                               [--json]\n"
            "Checks the founding document's claim: pipeline parallelism across nodes is 38%%\n"
            "more efficient than tensor ('depth-wise') parallelism across nodes, argued as\n"
            "training cost 1/2 + 1/2 * 1/log2(16) = 0.625. Prints the closed form with its\n"
            "assumptions, then for each model the analytical model and the simulator on the\n"
            "same two layouts (a tp group spanning k nodes against k pipeline stages on k\n"
            "nodes with tp inside a node; same GPUs, batch and microbatches): step times,\n"
            "their ratio, the gain, the baseline's communication share and the closed form\n"
            "at that share; then sweeps over the inter-node bandwidth and the node count.\n\n"
            "  --model        models (default gpt-1.3b,mm-1.3b)\n"
            "  --cluster      preset or cluster file (default p4d.24xlarge)\n"
            "  --nodes        nodes (default 16)\n"
            "  --global-batch samples per step (default 512)\n"
            "  --microbatches microbatches per step per pipeline (default 8)\n"
            "  -o DIR         where seed38.json and the plots go (default out/seed38)\n"
            "  --json         print the JSON (stagecraft.seed38/1) instead of the tables\n");
}

static void print_layout(const char *what, const sc_step_cfg *c, int tp_nodes, int pp_nodes)
{
    printf("  %-9s dp %d  tp %-2d pp %d  m %d  mbs %d  %s  (tp group on %d node%s, pipeline on "
           "%d node%s)\n",
           what, c->dp, c->tp, c->pp, c->m, c->mbs, c->schedule, tp_nodes, tp_nodes > 1 ? "s" : "",
           pp_nodes, pp_nodes > 1 ? "s" : "");
}

static void print_cmp(const char *what, const sc_seed38_cmp *x)
{
    printf("  %-14s %9.1f %9.1f %6.3f %6.0f%% %6.1f%% %6.1f%% %6.3f %7.3f %7.3f %7.3f\n", what,
           1e3 * x->base.step_s, 1e3 * x->pipe.step_s, x->ratio, 100 * x->gain,
           100 * x->share, 100 * x->pipe.share, x->comm_ratio, x->pred16, x->pred8,
           x->pred_comm);
}

static const char *crossing(double f, double best, char *b)
{
    if (isnan(f))
        snprintf(b, 64, "not reached (at most %.3f, at x8)", best);
    else
        snprintf(b, 64, "reached at about x%.2g", f);
    return b;
}

/* What the numbers say about the claim, from the numbers. */
static void verdict(const sc_seed38_model *m)
{
    const sc_seed38_cmp *x = &m->sim;
    int holds = fabs(x->ratio - 0.625) <= 0.05;
    char b1[64], b2[64];
    double best = m->bw[SC_SEED38_N_BW - 1].ratio_sim;
    printf("\n  0.625 %s: simulated %.3f, a %.0f%% saving (the claim: 0.625, a 38%% saving).\n",
           holds ? "holds" : "does not hold", x->ratio, 100 * (1 - x->ratio));
    printf("  The baseline is %.0f%% communication (the closed form assumes 50%%), and the\n"
           "  pipeline's exposed communication is %.3f of the baseline's (it assumes 1/4).\n",
           100 * x->share, x->comm_ratio);
    printf("  Inter-node bandwidth x1/8..x8, simulated: ratio 0.625 %s;\n"
           "  a 38%% saving (ratio 0.62) %s.\n",
           crossing(m->bw_factor_0625, best, b1), crossing(m->bw_factor_38, best, b2));
}

static const char *frac(double f, char *b)
{
    if (f < 1)
        snprintf(b, 16, "1/%.0f", 1 / f);
    else
        snprintf(b, 16, "%.0f", f);
    return b;
}

static void print_result(const sc_seed38 *r, const char *dir)
{
    printf("seed38: pipeline parallelism across nodes against tensor parallelism across nodes\n"
           "%d x %s (%d GPUs each), global batch %ld, %d microbatches\n\n",
           r->nodes, r->cluster, r->gpus_per_node, r->global_batch, r->microbatches);
    printf("1. the closed form, ratio = (1 - s) + s / log2 n (pipeline / baseline), assuming\n"
           "   half the step is communication (s = 1/2), the rest unchanged, and the network\n"
           "   cost log2 n allreduce steps against 1 pipeline send:\n");
    printf("   log2 16 = 4   comm x 1/4   ratio %.4f   saving %.1f%%   (the text's 0.625 and 38%%)\n",
           sc_seed38_closed(0.5, 16), 100 * (1 - sc_seed38_closed(0.5, 16)));
    printf("   log2 8  = 3   comm x 1/3   ratio %.4f   saving %.1f%%   (the text's \"a third\")\n",
           sc_seed38_closed(0.5, 8), 100 * (1 - sc_seed38_closed(0.5, 8)));
    printf("   the text takes n = 8 for the network cost and n = 16 for the training cost;\n"
           "   the 38%% is the saving 1 - 0.625 = 37.5%% (a 1.6x speed-up); with \"a third\" it\n"
           "   would be 33%%\n");
    for (int i = 0; i < r->n_models; i++) {
        const sc_seed38_model *m = &r->models[i];
        char b[32];
        printf("\n%s (%s params): one model copy spans %d nodes either way, dp %d\n", m->name,
               cli_si(m->params, b), m->span, m->base.dp);
        print_layout("baseline", &m->base, m->base_tp_nodes, m->base_pp_nodes);
        print_layout("pipeline", &m->pipe, m->pipe_tp_nodes, m->pipe_pp_nodes);
        printf("\n  %-14s %9s %9s %6s %7s %7s %7s %6s %7s %7s %7s\n", "", "base ms", "pipe ms",
               "ratio", "gain", "s base", "s pipe", "c", "(1-s)", "(1-s)", "(1-s)");
        printf("  %-14s %9s %9s %6s %7s %7s %7s %6s %7s %7s %7s\n", "", "", "", "", "", "", "",
               "", "+s/4", "+s/3", "+s*c");
        print_cmp("2. analytical", &m->est);
        print_cmp("3. simulated", &m->sim);
        if (isnan(m->measured_ratio))
            printf("  %-14s not run (the executed miniature: scripts/netcluster.sh)\n", "measured");
        else
            printf("  %-14s ratio %.3f  gain %.1f%%  (%s)\n", "measured", m->measured_ratio,
                   100 * (1 / m->measured_ratio - 1), m->measured_source);
        verdict(m);
        printf("\n  inter-node bandwidth        s base   ratio sim  (est)   (1-s)+s/4   (1-s)+s/3\n");
        for (int k = 0; k < SC_SEED38_N_BW; k++) {
            const sc_seed38_point *p = &m->bw[k];
            printf("  x %-4s %7.0f Gb/s/NIC  %6.1f%%   %7.3f  (%.3f)   %9.3f   %9.3f\n",
                   frac(p->x, b), p->nic_bytes_per_s * 8 / 1e9, 100 * p->share_sim, p->ratio_sim,
                   p->ratio_est, p->closed16, p->closed8);
        }
        printf("\n  nodes   dp   batch    s base   ratio sim  (est)   1/2 + 1/2/log2 n\n");
        for (int k = 0; k < m->n_nodes; k++) {
            const sc_seed38_point *p = &m->nodes[k];
            printf("  %5.0f %4d %7ld   %6.1f%%   %7.3f  (%.3f)   %9.3f\n", p->x, p->dp,
                   p->global_batch, 100 * p->share_sim, p->ratio_sim, p->ratio_est, p->closed16);
        }
    }
    printf("\ncolumns: ratio = pipeline / baseline step time; gain = baseline / pipeline - 1\n"
           "(the claim: 0.625, a 60%% gain or a 38%% saving); s = exposed communication\n"
           "(tp + pp + dp) / step; c = pipeline comm / baseline comm; (1-s)+s/4 and\n"
           "(1-s)+s/3 are the closed form at the measured share; (1-s)+s*c differs from the\n"
           "ratio only by the change in compute and bubble.\n");
    if (dir)
        printf("\nwritten: %s/seed38.json, seed38_vs_share.{png,svg}, seed38_vs_nodes.{png,svg}\n",
               dir);
}

int cmd_repro(int argc, char **argv)
{
    if (argc < 2) {
        help(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        help(stdout);
        return 0;
    }
    if (strcmp(argv[1], "seed38"))
        return cli_usage("repro", "unknown study '%s' (there is: seed38)", argv[1]);
    enum { O_MODEL = 256, O_CLUSTER, O_NODES, O_BATCH, O_MB, O_JSON };
    static const struct option opts[] = {{"model", required_argument, NULL, O_MODEL},
                                         {"cluster", required_argument, NULL, O_CLUSTER},
                                         {"nodes", required_argument, NULL, O_NODES},
                                         {"global-batch", required_argument, NULL, O_BATCH},
                                         {"microbatches", required_argument, NULL, O_MB},
                                         {"json", no_argument, NULL, O_JSON},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    sc_seed38_opts o = {0};
    const char *dir = "out/seed38";
    long v;
    int json = 0, ch;
    if (cli_exact_longopts("repro", argc, argv, "ho:", opts))
        return 2;
    optind = 0;
    opterr = 0;
    argc--;
    argv++;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case O_MODEL: o.models = optarg; break;
        case O_CLUSTER: o.cluster = optarg; break;
        case O_NODES: bad = cli_long("repro", "--nodes", optarg, 2, 4096, &v), o.nodes = (int)v; break;
        case O_BATCH:
            bad = cli_long("repro", "--global-batch", optarg, 1, 1L << 30, &v);
            o.global_batch = v;
            break;
        case O_MB: bad = cli_long("repro", "--microbatches", optarg, 1, 1 << 16, &v), o.microbatches = (int)v; break;
        case O_JSON: json = 1; break;
        case 'o': dir = optarg; break;
        case 'h': help(stdout); return 0;
        default: return cli_usage("repro", "unknown option or missing value '%s'", argv[optind - 1]);
        }
        if (bad)
            return 2;
    }
    if (optind < argc)
        return cli_usage("repro", "unexpected argument '%s'", argv[optind]);
    int bad = cli_outdir_bad("repro", dir, NULL);
    if (bad)
        return bad;
    sc_error err = {0};
    sc_seed38 *r = NULL;
    if (sc_seed38_run(&o, &r, &err))
        return cli_fail(&err);
    int rc = 0;
    if (sc_seed38_write(r, dir, &err))
        rc = cli_fail(&err);
    else if (json)
        rc = cli_print_json(sc_seed38_to_json(r));
    else
        print_result(r, dir);
    sc_seed38_free(r);
    return rc;
}
