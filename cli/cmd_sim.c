/* cmd_sim.c - `stagecraft sim`: simulate one training step. */
#include "cli.h"
#include "cluster.h"
#include "json.h"
#include "model.h"
#include "partition.h"
#include "plan.h"
#include "step.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void help(void)
{
    printf(
        "usage: stagecraft sim --model M --cluster C [--nodes N] --dp D --tp T --pp P [--v V]\n"
        "                      --microbatches M --mbs B --schedule S [--zero Z]\n"
        "                      [--recompute none|selective|full] [--partition uniform|B1,B2,...]\n"
        "                      [--placement tp,pp,dp] [--bucket-mib X] [--timeline FILE]\n"
        "                      [--jitter SIGMA --seed N --runs K] [-o plan.json] [--json]\n"
        "       stagecraft sim --plan plan.json [--timeline FILE] [--jitter ...] [--json]\n"
        "Simulates one training step of a parallel configuration on the discrete-event engine\n"
        "and reports the step time and its breakdown, the bubble, per-rank busy fractions,\n"
        "per-link traffic, peak memory per stage, throughput, TFLOP/s per GPU, MFU and cost.\n\n"
        "  --model M          a built-in model name or a model file\n"
        "  --cluster C        a preset name or a cluster file; --nodes overrides its node count\n"
        "  --schedule S       gpipe, 1f1b, interleaved (needs --v >= 2), zb-h1\n"
        "  --partition        'uniform' (equal layers per stage) or the leaf positions where\n"
        "                     stages 2..pp·v begin (see 'stagecraft model show')\n"
        "  --placement        rank order from innermost to outermost (default tp,pp,dp)\n"
        "  --timeline FILE    write the step's timeline (stagecraft.timeline/1)\n"
        "  -o plan.json       write the configuration as a plan, with this prediction\n"
        "  --plan plan.json   replay a plan (its model, cluster and configuration)\n"
        "  --jitter SIGMA     multiply compute times by 1 + N(0, SIGMA) noise; with --runs K\n"
        "                     the mean and spread of K seeded runs are reported\n"
        "  --one-replica      simulate data-parallel replica 0 alone, carrying the others'\n"
        "                     network load (dp times faster; same result: see README)\n"
        "  --json             print one JSON object instead of the summary\n");
}

static void print_summary(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                          const sc_step_result *r, const sc_partition *part)
{
    char b[8][32];
    printf("%s on %d x %s (%d GPUs used of %ld), %s\n", m->name, c->nodes, c->name, r->n_ranks,
           sc_cluster_total_gpus(c), c->gpu.name);
    printf("dp %d  tp %d  pp %d  v %d  microbatches %d  mbs %d  schedule %s  zero %d  "
           "recompute %s  placement %s\n",
           cfg->dp, cfg->tp, cfg->pp, cfg->v, cfg->m, cfg->mbs, cfg->schedule, cfg->zero,
           sc_recompute_name(cfg->recompute), cfg->placement ? cfg->placement : "tp,pp,dp");
    printf("\nstep time      %14s us   (%.0f samples, %s tokens per step)\n",
           cli_us(r->step_time_s, b[0]), r->global_batch,
           cli_si(r->global_batch * m->seq_len, b[1]));
    double half = sc_step_interval(r, c, m->dtype);
    if (half > 0)
        printf("               ± %11s us   (95%% interval from the calibration fits)\n",
               cli_us(half, b[0]));
    const sc_step_breakdown *k = &r->breakdown;
    double s = r->step_time_s > 0 ? r->step_time_s : 1;
    struct {
        const char *n;
        double v;
    } rows[] = {{"compute", k->compute},     {"recompute", k->recompute},
                {"optimizer", k->optimizer}, {"tp comm (exposed)", k->tp},
                {"pp comm (exposed)", k->pp}, {"dp comm (exposed)", k->dp},
                {"bubble", k->bubble}};
    for (size_t i = 0; i < SC_ARRAY_LEN(rows); i++)
        printf("  %-20s %14s us  %5.1f%%\n", rows[i].n, cli_us(rows[i].v, b[0]),
               100 * rows[i].v / s);
    double bmin = 1, bmax = 0;
    for (int i = 0; i < r->n_ranks; i++) {
        bmin = fmin(bmin, r->busy_fraction[i]);
        bmax = fmax(bmax, r->busy_fraction[i]);
    }
    printf("bubble fraction %.3f   busy fraction per rank min %.3f max %.3f\n",
           r->bubble_fraction, bmin, bmax);
    printf("throughput     %s samples/s, %s tokens/s\n", cli_si(r->samples_per_s, b[0]),
           cli_si(r->tokens_per_s, b[1]));
    printf("TFLOP/s/GPU    %.1f (Megatron-LM convention)   MFU %.1f%%\n", r->tflops_per_gpu,
           100 * r->mfu);
    printf("cost           $%.4f per step, $%.3f per million tokens (%d nodes on demand)\n",
           r->cost_per_step_usd, r->cost_per_mtok_usd, r->nodes_used);
    printf("\n%-6s %-28s %-28s %11s %11s %11s %11s %11s\n", "stage", "first module",
           "last module", "weights", "grads", "optimizer", "activations", "total");
    for (int p = 0; p < r->pp; p++) {
        const sc_mem *mm = &r->mem[p];
        printf("%-6d %-28.28s %-28.28s %11s %11s %11s %11s %11s%s\n", p,
               sc_partition_first_name(m, part, p), sc_partition_last_name(m, part, part->n_stages - r->pp + p),
               cli_bytes(mm->weights, b[0]), cli_bytes(mm->grads, b[1]),
               cli_bytes(mm->optimizer, b[2]), cli_bytes(mm->activations, b[3]),
               cli_bytes(mm->total, b[4]), mm->total > c->gpu.memory_bytes ? "  DOES NOT FIT" : "");
    }
    if (!r->fits)
        printf("warning: a stage needs more than the GPU's %s\n",
               cli_bytes(c->gpu.memory_bytes, b[0]));
    /* the busiest links: a partial selection sort of the top five */
    int top[5], nt = 0;
    for (int i = 0; i < r->n_links; i++) {
        int pos = nt;
        if (nt < 5)
            nt++;
        else if (r->links[i].utilisation > r->links[top[4]].utilisation)
            pos = 4;
        else
            continue;
        top[pos] = i;
        for (int j = pos; j > 0 && r->links[top[j]].utilisation > r->links[top[j - 1]].utilisation;
             j--) {
            int x = top[j];
            top[j] = top[j - 1];
            top[j - 1] = x;
        }
    }
    if (nt) {
        printf("\nbusiest links (of %d that carried traffic)\n", r->n_links);
        for (int i = 0; i < nt; i++)
            printf("  %-20s %12s  busy %5.1f%%  utilisation %5.1f%%\n", r->links[top[i]].name,
                   cli_bytes(r->links[top[i]].bytes, b[0]), 100 * r->links[top[i]].busy_fraction,
                   100 * r->links[top[i]].utilisation);
    }
}

int cmd_sim(int argc, char **argv)
{
    enum { O_MODEL = 256, O_CLUSTER, O_NODES, O_DP, O_TP, O_PP, O_V, O_M, O_MBS, O_SCHED, O_ZERO,
           O_RECOMP, O_PART, O_PLACE, O_BUCKET, O_TL, O_JIT, O_SEED, O_RUNS, O_JSON, O_PLAN, O_ONE };
    static const struct option opts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"cluster", required_argument, NULL, O_CLUSTER},
        {"nodes", required_argument, NULL, O_NODES},
        {"dp", required_argument, NULL, O_DP},
        {"tp", required_argument, NULL, O_TP},
        {"pp", required_argument, NULL, O_PP},
        {"v", required_argument, NULL, O_V},
        {"microbatches", required_argument, NULL, O_M},
        {"mbs", required_argument, NULL, O_MBS},
        {"schedule", required_argument, NULL, O_SCHED},
        {"zero", required_argument, NULL, O_ZERO},
        {"recompute", required_argument, NULL, O_RECOMP},
        {"partition", required_argument, NULL, O_PART},
        {"placement", required_argument, NULL, O_PLACE},
        {"bucket-mib", required_argument, NULL, O_BUCKET},
        {"timeline", required_argument, NULL, O_TL},
        {"jitter", required_argument, NULL, O_JIT},
        {"seed", required_argument, NULL, O_SEED},
        {"runs", required_argument, NULL, O_RUNS},
        {"json", no_argument, NULL, O_JSON},
        {"plan", required_argument, NULL, O_PLAN},
        {"one-replica", no_argument, NULL, O_ONE},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *model = NULL, *cluster = NULL, *part_spec = NULL, *tl_file = NULL;
    const char *plan_in = NULL, *plan_out = NULL;
    int config_given = 0;
    long nodes = 0, dp = 1, tp = 1, pp = 1, v = 1, m = 0, mbs = 1, zero = 0, seed = 1, runs = 1;
    double bucket = 0, jitter = 0;
    int json = 0, recomp = SC_RECOMPUTE_NONE, ch;
    sc_step_cfg cfg = {0};
    cfg.schedule = "1f1b";
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        int bad = 0;
        if (ch >= O_MODEL && ch <= O_BUCKET && ch != O_NODES)
            config_given = 1;
        switch (ch) {
        case O_MODEL: model = optarg; break;
        case O_CLUSTER: cluster = optarg; break;
        case O_NODES: bad = cli_long("sim", "--nodes", optarg, 1, SC_CLUSTER_MAX_NODES, &nodes); break;
        case O_DP: bad = cli_long("sim", "--dp", optarg, 1, 1 << 20, &dp); break;
        case O_TP: bad = cli_long("sim", "--tp", optarg, 1, 1 << 12, &tp); break;
        case O_PP: bad = cli_long("sim", "--pp", optarg, 1, 1 << 12, &pp); break;
        case O_V: bad = cli_long("sim", "--v", optarg, 1, 64, &v); break;
        case O_M: bad = cli_long("sim", "--microbatches", optarg, 1, 1 << 16, &m); break;
        case O_MBS: bad = cli_long("sim", "--mbs", optarg, 1, 1 << 16, &mbs); break;
        case O_SCHED: cfg.schedule = optarg; break;
        case O_ZERO: bad = cli_long("sim", "--zero", optarg, 0, 3, &zero); break;
        case O_RECOMP:
            if ((recomp = sc_recompute_parse(optarg)) < 0)
                return cli_usage("sim", "--recompute: '%s' is not none, selective or full", optarg);
            break;
        case O_PART: part_spec = optarg; break;
        case O_PLACE: cfg.placement = optarg; break;
        case O_BUCKET: bad = cli_double("sim", "--bucket-mib", optarg, 1e-3, 1e6, &bucket); break;
        case O_TL: tl_file = optarg; break;
        case O_JIT: bad = cli_double("sim", "--jitter", optarg, 0, 0.99, &jitter); break;
        case O_SEED: bad = cli_long("sim", "--seed", optarg, 0, 2147483647L, &seed); break;
        case O_RUNS: bad = cli_long("sim", "--runs", optarg, 1, 100000, &runs); break;
        case O_JSON: json = 1; break;
        case O_PLAN: plan_in = optarg; break;
        case O_ONE: cfg.one_replica = 1; break;
        case 'o': plan_out = optarg; break;
        case 'h': help(); return 0;
        default: return cli_usage("sim", "unknown option '%s'", argv[optind - 1]);
        }
        if (bad)
            return 2;
    }
    if (optind < argc)
        return cli_usage("sim", "unexpected argument '%s'", argv[optind]);
    if (plan_in && (config_given || nodes))
        return cli_usage("sim", "--plan replays a plan: give no --model, --cluster or degrees");
    if (!plan_in && (!model || !cluster))
        return cli_usage("sim", "--model and --cluster are required (or --plan)");
    if (!plan_in && !m)
        return cli_usage("sim", "--microbatches is required");
    cfg.dp = (int)dp;
    cfg.tp = (int)tp;
    cfg.pp = (int)pp;
    cfg.v = (int)v;
    cfg.m = (int)m;
    cfg.mbs = (int)mbs;
    cfg.zero = (int)zero;
    cfg.recompute = (sc_recompute)recomp;
    cfg.bucket_bytes = bucket * 1024 * 1024;
    cfg.jitter = jitter;
    cfg.seed = (unsigned long)seed;
    cfg.want_timeline = tl_file != NULL;

    sc_error err = {0};
    sc_model *mod = NULL;
    sc_cluster cl;
    sc_partition part = {0};
    sc_plan *plan = NULL;
    if (plan_in) {
        if (sc_plan_load(plan_in, &plan, &err) || sc_plan_open(plan, plan_in, &mod, &cl, &err)) {
            sc_plan_free(plan);
            return cli_fail(&err);
        }
        sc_step_cfg pc;
        sc_plan_step_cfg(plan, &pc);
        pc.jitter = cfg.jitter;
        pc.seed = cfg.seed;
        pc.want_timeline = cfg.want_timeline;
        pc.one_replica = cfg.one_replica;
        cfg = pc;
        model = plan->model_source;
        cluster = plan->cluster_source;
    } else {
        int orc = cli_open(model, cluster, nodes, &mod, &cl);
        if (orc)
            return orc;
        if (sc_partition_parse(part_spec, mod, cfg.pp * cfg.v, &part, &err)) {
            sc_model_free(mod);
            return cli_fail(&err);
        }
        cfg.partition = &part;
    }
    const sc_partition *shown = cfg.partition;
    sc_step_result *r = NULL;
    double sum = 0, sum2 = 0, lo = INFINITY, hi = 0;
    int rc = 0;
    for (long k = 0; k < runs; k++) {
        sc_step_cfg c2 = cfg;
        c2.seed = cfg.seed + (unsigned long)k;
        c2.want_timeline = k == 0 && cfg.want_timeline;
        sc_step_result *x = NULL;
        if (sc_step_simulate(mod, &cl, &c2, &x, &err)) {
            rc = cli_fail(&err);
            break;
        }
        double t = x->step_time_s;
        sum += t;
        sum2 += t * t;
        lo = t < lo ? t : lo;
        hi = t > hi ? t : hi;
        if (k == 0)
            r = x;
        else
            sc_step_result_free(x);
        if (runs > 1 && !json && k % 16 == 15)
            fprintf(stderr, "\r%ld/%ld runs", k + 1, runs);
    }
    if (runs > 1 && !json && runs >= 16)
        fprintf(stderr, "\r%*s\r", 30, "");
    if (!rc && tl_file) {
        if (sc_timeline_save(r->timeline, tl_file, &err))
            rc = cli_fail(&err);
    }
    if (!rc && plan_out) {
        sc_plan *out = NULL;
        const char *method = plan ? plan->method : (!part_spec || !strcmp(part_spec, "uniform")) ? "uniform" : "explicit";
        if (sc_plan_make(mod, model, &cl, cluster, &cfg, method, r, &out, &err) ||
            sc_plan_save(out, mod, plan_out, &err))
            rc = cli_fail(&err);
        sc_plan_free(out);
    }
    if (!rc) {
        double mean = sum / runs, sd = runs > 1 ? sqrt(fmax(0, (sum2 - runs * mean * mean) / (runs - 1))) : 0;
        if (json) {
            cJSON *j = sc_step_result_json(r, &cfg);
            if (j) {
                cJSON_AddStringToObject(j, "model", mod->name);
                cJSON_AddStringToObject(j, "cluster", cl.name);
                cJSON_AddNumberToObject(j, "nodes", cl.nodes);
                double half = sc_step_interval(r, &cl, mod->dtype);
                if (half > 0)
                    cJSON_AddNumberToObject(j, "step_time_interval_s", half);
                if (runs > 1 || jitter > 0) {
                    cJSON *o = cJSON_AddObjectToObject(j, "runs");
                    cJSON_AddNumberToObject(o, "n", (double)runs);
                    cJSON_AddNumberToObject(o, "jitter", jitter);
                    cJSON_AddNumberToObject(o, "seed", (double)seed);
                    cJSON_AddNumberToObject(o, "mean_step_time_s", mean);
                    cJSON_AddNumberToObject(o, "stddev_step_time_s", sd);
                    cJSON_AddNumberToObject(o, "min_step_time_s", lo);
                    cJSON_AddNumberToObject(o, "max_step_time_s", hi);
                }
            }
            rc = cli_print_json(j);
        } else {
            print_summary(mod, &cl, &cfg, r, shown);
            if (runs > 1 || jitter > 0) {
                char b1[32], b2[32], b3[32], b4[32];
                printf("\njitter %.3g over %ld runs (seeds %ld..%ld): step mean %s us, sd %s us, "
                       "min %s us, max %s us\n",
                       jitter, runs, seed, seed + runs - 1, cli_us(mean, b1), cli_us(sd, b2),
                       cli_us(lo, b3), cli_us(hi, b4));
            }
            if (tl_file)
                printf("\ntimeline written to %s\n", tl_file);
            if (plan_out)
                printf("plan written to %s\n", plan_out);
        }
    }
    sc_step_result_free(r);
    sc_partition_free(&part);
    sc_plan_free(plan);
    sc_model_free(mod);
    return rc;
}
