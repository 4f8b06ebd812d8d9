/* cmd_tune.c - `stagecraft tune`: the microbatch auto-tuner. */
#include "cli.h"
#include "cluster.h"
#include "json.h"
#include "model.h"
#include "tune.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void help(void)
{
    printf("usage: stagecraft tune --model M --cluster C [--nodes N] --global-batch B\n"
           "                       --dp D --tp T --pp P [--v V] [--schedule S] [--zero Z]\n"
           "                       [--recompute R] [--mbs S | --max-mbs S] [--partitioner P]\n"
           "                       [-o tune.json] [--json]\n"
           "Sweeps the microbatch count m (and size mbs = B/(dp·m)) of one layout, simulates\n"
           "every point that fits and prints the curve (step time, bubble fraction,\n"
           "efficiency = compute / step, peak memory) and the best m. It is the planner's\n"
           "search with the layout fixed. 'stagecraft plot tune tune.json -o tune.png' draws\n"
           "the curve.\n");
}

int cmd_tune(int argc, char **argv)
{
    enum { O_MODEL = 256, O_CLUSTER, O_NODES, O_BATCH, O_DP, O_TP, O_PP, O_V, O_SCHED, O_ZERO,
           O_RECOMP, O_MBS, O_MAXMBS, O_PART, O_JSON };
    static const struct option opts[] = {{"model", required_argument, NULL, O_MODEL},
                                         {"cluster", required_argument, NULL, O_CLUSTER},
                                         {"nodes", required_argument, NULL, O_NODES},
                                         {"global-batch", required_argument, NULL, O_BATCH},
                                         {"dp", required_argument, NULL, O_DP},
                                         {"tp", required_argument, NULL, O_TP},
                                         {"pp", required_argument, NULL, O_PP},
                                         {"v", required_argument, NULL, O_V},
                                         {"schedule", required_argument, NULL, O_SCHED},
                                         {"zero", required_argument, NULL, O_ZERO},
                                         {"recompute", required_argument, NULL, O_RECOMP},
                                         {"mbs", required_argument, NULL, O_MBS},
                                         {"max-mbs", required_argument, NULL, O_MAXMBS},
                                         {"partitioner", required_argument, NULL, O_PART},
                                         {"json", no_argument, NULL, O_JSON},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *model = NULL, *cluster = NULL, *out = NULL;
    long nodes = 0, batch = 0, v = 0;
    int json = 0, ch;
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.max_mbs = 64;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case O_MODEL: model = optarg; break;
        case O_CLUSTER: cluster = optarg; break;
        case O_NODES: bad = cli_long("tune", "--nodes", optarg, 1, SC_CLUSTER_MAX_NODES, &nodes); break;
        case O_BATCH: bad = cli_long("tune", "--global-batch", optarg, 1, 1L << 30, &batch); break;
        case O_DP: bad = cli_long("tune", "--dp", optarg, 1, 1 << 20, &v), o.fix_dp = (int)v; break;
        case O_TP: bad = cli_long("tune", "--tp", optarg, 1, 1 << 12, &v), o.fix_tp = (int)v; break;
        case O_PP: bad = cli_long("tune", "--pp", optarg, 1, 1 << 12, &v), o.fix_pp = (int)v; break;
        case O_V: bad = cli_long("tune", "--v", optarg, 1, 8, &v), o.fix_v = (int)v; break;
        case O_SCHED: o.fix_schedule = optarg; break;
        case O_ZERO: bad = cli_long("tune", "--zero", optarg, 0, 3, &v), o.fix_zero = (int)v; break;
        case O_RECOMP:
            if ((o.fix_recompute = sc_recompute_parse(optarg)) < 0)
                return cli_usage("tune", "--recompute: '%s' is not none, selective or full", optarg);
            break;
        case O_MBS: bad = cli_long("tune", "--mbs", optarg, 1, 1 << 16, &v), o.fix_mbs = (int)v; break;
        case O_MAXMBS: bad = cli_long("tune", "--max-mbs", optarg, 1, 1 << 16, &v), o.max_mbs = (int)v; break;
        case O_PART: o.partitioner = optarg; break;
        case O_JSON: json = 1; break;
        case 'o': out = optarg; break;
        case 'h': help(); return 0;
        default: return cli_usage("tune", "unknown option or missing value '%s'", argv[optind - 1]);
        }
        if (bad)
            return 2;
    }
    if (optind < argc)
        return cli_usage("tune", "unexpected argument '%s'", argv[optind]);
    if (!model || !cluster || !batch || !o.fix_dp || !o.fix_tp || !o.fix_pp)
        return cli_usage("tune", "--model, --cluster, --global-batch, --dp, --tp and --pp are "
                         "required");
    o.global_batch = batch;
    sc_error err = {0};
    sc_model *m;
    sc_cluster c;
    int orc = cli_open(model, cluster, nodes, &m, &c);
    if (orc)
        return orc;
    sc_tune *t;
    if (sc_tune_run(m, &c, &o, &t, &err)) {
        sc_model_free(m);
        return cli_fail(&err);
    }
    int rc = 0;
    if (out) {
        cJSON *j = sc_tune_to_json(t);
        if (!j || sc_json_save(out, j, &err))
            rc = j ? cli_fail(&err) : 1;
        cJSON_Delete(j);
    }
    if (!rc && json) {
        rc = cli_print_json(sc_tune_to_json(t));
    } else if (!rc) {
        char b[32];
        printf("tune: %s on %d x %s, dp %d tp %d pp %d v %d, %s, zero %d, recompute %s, global "
               "batch %ld\n\n",
               m->name, c.nodes, c.name, t->dp, t->tp, t->pp, t->v, t->schedule, t->zero,
               sc_recompute_name(t->recompute), t->global_batch);
        printf("%6s %5s %12s %8s %11s %12s %14s\n", "m", "mbs", "step ms", "bubble",
               "efficiency", "peak mem", "tokens/s");
        for (int i = 0; i < t->n; i++) {
            const sc_tune_point *p = &t->pts[i];
            printf("%6d %5d %12.1f %7.1f%% %10.1f%% %12s %14.0f%s\n", p->m, p->mbs, 1e3 * p->step_s,
                   100 * p->bubble_fraction, 100 * p->efficiency, cli_bytes(p->peak_mem, b),
                   p->tokens_per_s, i == t->best ? "  <- best" : "");
        }
        for (int i = 0; i < t->n_skipped; i++)
            printf("%6d %5d   %s\n", t->skipped[i].m, t->skipped[i].mbs, t->skipped[i].reason);
        printf("\nbest: m = %d microbatches of %d samples, %.1f ms per step\n",
               t->pts[t->best].m, t->pts[t->best].mbs, 1e3 * t->pts[t->best].step_s);
        if (out)
            printf("curve written to %s (draw it with 'stagecraft plot tune %s -o tune.png')\n",
                   out, out);
    }
    sc_tune_free(t);
    sc_model_free(m);
    return rc;
}
