/* cmd_sim.c - `stagecraft sim`: simulate one training step. */
#include "cli.h"
#include "overhead.h"
#include "framework.h"
#include "cli_opts.h"
#include "cli_limits.h"
#include "cli_outputs.h"
#include "cluster.h"
#include "cost.h"
#include "json.h"
#include "lower.h"
#include "model.h"
#include "partition.h"
#include "plan.h"
#include "slices.h"
#include "step.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    cli_search_args s; /* first: the shared options (cli_opts.h) land here */
    const char *part, *placement, *timeline, *lowered, *plan_in, *plan_out, *ranks, *stages;
    const char *slices;
    double bucket, jitter;
    long seed, runs;
    int one_replica, allow_oom;
} sim_args;

#define S(f) offsetof(sim_args, f)

static const cli_opt sim_opts[] = {
    {"partition", 0, "SPEC", "'uniform' (the layers spread evenly, the default; plan\n"
     "and tune place stages by cost) or the leaf positions\nwhere stages 2..pp·v begin (see "
     "'stagecraft model\nshow')", cli_opt_str,
     S(part), 0, 0, 0, NULL, NULL, 0},
    {"placement", 0, "ORDER", "rank order from innermost to outermost (default\ntp,pp,dp)",
     cli_opt_str, S(placement), 0, 0, 0, NULL, NULL, 0},
    {"bucket-mib", 0, "X", "data-parallel gradient bucket size in MiB (default 25)", cli_opt_double,
     S(bucket), 1e-3, 1e6, 0, NULL, NULL, 0},
    {"timeline", 0, "FILE", "write the step's timeline (stagecraft.timeline/1)", cli_opt_str,
     S(timeline), 0, 0, 0, NULL, NULL, 0},
    {"ranks", 0, "LIST", "--timeline: only these ranks' ops (\"0-7,64\"; every rank\n"
     "stays listed)", cli_opt_str, S(ranks), 0, 0, 0, NULL, NULL, 0},
    {"stages", 0, "LIST", "--timeline: only the ops of these stages (\"0,3-5\")",
     cli_opt_str, S(stages), 0, 0, 0, NULL, NULL, 0},
    {"lowered", 0, "FILE", "write the lowered step, the list of actions per pipeline\n"
     "position that both sim and exec replay (text)", cli_opt_str, S(lowered), 0, 0, 0, NULL,
     NULL, 0},
    {"jitter", 0, "SIGMA", "multiply compute times by 1 + N(0, SIGMA) noise; with\n"
     "--runs K the mean and spread of K seeded runs are\nreported", cli_opt_double, S(jitter),
     0, 0.99, 0, NULL, NULL, 0},
    {"seed", 0, "N", "the first run's seed", cli_opt_long, S(seed), 0, 2147483647.0, 0, NULL,
     NULL, 1},
    {"runs", 0, "K", "runs, seeds N, N+1, ...", cli_opt_long, S(runs), 1, 100000, 0, NULL,
     NULL, 1},
    {"slices", 0, "K|auto", "cut each microbatch's sequence into K equal token slices\n"
     "that pipeline one after another (TeraPipe; gpipe or 1f1b,\n"
     "causal decoders), or let TeraPipe's programme choose\n"
     "their count and lengths (auto)", cli_opt_str, S(slices), 0, 0, 0, NULL, NULL, 0},
    {"plan", 0, "FILE", "replay a plan (its model, cluster and configuration)", cli_opt_str,
     S(plan_in), 0, 0, 0, NULL, NULL, 0},
    {"one-replica", 0, NULL, "simulate data-parallel replica 0 alone, standing for\n"
     "the others and its cp peers, and tp rank 0 for its tp\n"
     "group, their network load carried (many times faster;\n"
     "the same step within 0.5%: docs/commands.md)", cli_opt_flag,
     S(one_replica), 0, 0, 0, NULL, NULL, 0},
    {"allow-oom", 0, NULL, "report a configuration that does not fit in GPU memory\n"
     "and exit 0 (without it: the report, the warning on\nstderr, exit non-zero, nothing "
     "written)", cli_opt_flag, S(allow_oom), 0, 0, 0, NULL, NULL, 0},
    {"output", 'o', "FILE", "write the configuration as a plan, with this prediction",
     cli_opt_str, S(plan_out), 0, 0, 0, NULL, NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL, 0},
};

static const cli_cmd sim_cmd = {
    "sim", CLI_SIM,
    "usage: stagecraft sim --model M --cluster C [--nodes N] --dp D --tp T --pp P [--v V]\n"
    "                      [--cp C] --microbatches M|--global-batch B --mbs B --schedule S\n"
    "                      [--zero Z]\n"
    "                      [--recompute none|selective|full] [--partition uniform|B1,B2,...]\n"
    "                      [--placement tp,pp,dp] [--bucket-mib X] [--slices K|auto]\n"
    "                      [--timeline FILE\n"
    "                      [--ranks LIST] [--stages LIST]]\n"
    "                      [--lowered FILE]\n"
    "                      [--jitter SIGMA --seed N --runs K] [--one-replica]\n"
    "                      [--allow-oom] [--max-mem SIZE] [-o plan.json] [--json]\n"
    "       stagecraft sim --plan plan.json [--timeline FILE] [--lowered FILE] [--jitter ...]\n"
    "                      [--json]\n"
    "Simulates one training step of a parallel configuration on the discrete-event engine\n"
    "and reports the step time and its breakdown, the bubble, per-rank busy fractions,\n"
    "per-link traffic, peak memory per stage, throughput, TFLOP/s per GPU, MFU and cost.\n"
    "Unless given: dp, tp, pp, v and mbs 1, schedule 1f1b, ZeRO 0, no recompute.\n"
    "tp must divide every attention module's heads (as the planner requires). A step\n"
    "that does not fit in GPU memory is reported and exits non-zero, writing nothing,\n"
    "unless --allow-oom.\n",
    NULL, sim_opts};

/* The last module of pipeline position p: its last chunk's (interleaved
 * stages of one rank end at the partition's last pp). */
static const char *stage_last_name(const sc_model *m, const sc_partition *part,
                                   const sc_step_result *r, int p)
{
    return sc_partition_last_name(m, part, part->n_stages - r->pp + p);
}

/* uniform: the stages are the default's, the layers spread evenly, which
 * the table follows with a note */
static void print_summary(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                          const sc_step_result *r, const sc_partition *part, int uniform)
{
    char b[8][32];
    printf("%s on %d x %s (%d GPU%s used of %ld), %s\n", m->name, c->nodes, c->name, r->n_ranks,
           r->n_ranks == 1 ? "" : "s", sc_cluster_total_gpus(c), c->gpu.name);
    char cps[24] = "";
    if (cfg->cp > 1)
        snprintf(cps, sizeof cps, "  cp %d", cfg->cp);
    printf("dp %d%s  tp %d  pp %d  v %d  microbatches %d  mbs %d  schedule %s  zero %d  "
           "recompute %s%s%s  placement %s%s\n",
           cfg->dp, cps, cfg->tp, cfg->pp, cfg->v, cfg->m, cfg->mbs, cfg->schedule, cfg->zero,
           sc_recompute_name(cfg->recompute), cfg->sp ? "  sp" : "",
           cfg->attn == SC_ATTN_FLASH ? "  flash" : "",
           cfg->placement ? cfg->placement : "tp,pp,dp",
           cfg->no_overlap_p2p_comm && cfg->pp > 1 ? "  blocking sends" : "");
    if (cfg->defer_embedding_wgrad) {
        if (cfg->wgrad_deferral_limit > 0 && cfg->wgrad_deferral_limit < cfg->m)
            printf("the output layer's weight gradients of the first %d microbatches run in the "
                   "pipeline flush (--defer-embedding-wgrad-compute)\n",
                   cfg->wgrad_deferral_limit);
        else
            printf("the output layer's weight gradients run in the pipeline flush "
                   "(--defer-embedding-wgrad-compute)\n");
    }
    if (sc_cost_grad_reduce_widens(m->dtype, cfg->grad_reduce_in_fp32))
        printf("gradients reduced in fp32 (--grad-reduce-in-fp32)\n");
    if (cfg->fp8)
        printf("fp8 GEMMs in the attention and MLP layers, with their casts (--fp8)\n");
    if (cfg->slices > 1) {
        printf("token slices   %d per microbatch (TeraPipe):", cfg->slices);
        for (int j = 0; j < cfg->slices; j++)
            printf(" %d", cfg->slice_len ? cfg->slice_len[j] : m->seq_len / cfg->slices);
        printf(" tokens\n");
    }
    printf("\nstep time      %14s us   (%.0f samples, %s tokens per step)\n",
           cli_us(r->step_time_s, b[0]), r->global_batch,
           cli_si(r->global_batch * m->seq_len, b[1]));
    double half = sc_step_interval(r, c, m->dtype);
    if (half > 0)
        printf("               ± %11s us   (95%% interval from the calibration fits)\n",
               cli_us(half, b[0]));
    cli_print_label(c, r->step_time_s, "the measured step", 0, m, r->n_ranks,
                    cfg->attn == SC_ATTN_FLASH);
    const sc_step_breakdown *k = &r->breakdown;
    double s = r->step_time_s > 0 ? r->step_time_s : 1;
    struct {
        const char *n;
        double v;
    } rows[] = {{"compute", k->compute},     {"recompute", k->recompute},
                {"optimizer", k->optimizer}, {"tp comm (exposed)", k->tp},
                {"cp comm (exposed)", k->cp}, {"pp comm (exposed)", k->pp},
                {"dp comm (exposed)", k->dp}, {"bubble", k->bubble}};
    for (size_t i = 0; i < SC_ARRAY_LEN(rows); i++)
        if (strncmp(rows[i].n, "cp ", 3) || cfg->cp > 1) /* with context parallelism only */
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
    printf("cost           $%.4f per step, $%.3f per million tokens (%d node%s on demand)\n",
           r->cost_per_step_usd, r->cost_per_mtok_usd, r->nodes_used, r->nodes_used == 1 ? "" : "s");
    printf("\n%-6s %-28s %-28s %11s %11s %11s %11s %11s %11s\n", "stage", "first module",
           "last module", "weights", "grads", "optimizer", "activations", "workspace", "total");
    for (int p = 0; p < r->pp; p++) {
        const sc_mem *mm = &r->mem[p];
        printf("%-6d %-28.28s %-28.28s %11s %11s %11s %11s %11s %11s%s\n", p,
               sc_partition_first_name(m, part, p), stage_last_name(m, part, r, p),
               cli_bytes(mm->weights, b[0]), cli_bytes(mm->grads, b[1]),
               cli_bytes(mm->optimizer, b[2]), cli_bytes(mm->activations, b[3]),
               cli_bytes(mm->workspace, b[5]), cli_bytes(mm->total, b[4]),
               mm->total > c->gpu.memory_bytes ? "  DOES NOT FIT" : "");
    }
    if (uniform && part->n_stages > 1)
        printf("stages: uniform, the layers spread evenly (--partition); plan and tune place "
               "them by cost (plan --fix ... -o p.json; sim --plan p.json replays theirs)\n");
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
    sim_args a;
    memset(&a, 0, sizeof a);
    cli_search_args_init(&a.s);
    a.seed = 1;
    a.runs = 1;
    int prc = cli_parse(&sim_cmd, argc, argv, &a);
    if (prc)
        return prc == CLI_HELP_SHOWN ? 0 : prc;
    const sc_search_opts *f = &a.s.o; /* the layout options, 0 (or -1, NULL) when not given */
    const char *model = a.s.model, *cluster = a.s.cluster, *part_spec = a.part;
    const char *tl_file = a.timeline, *plan_in = a.plan_in, *plan_out = a.plan_out;
    long nodes = a.s.nodes, seed = a.seed, runs = a.runs;
    long dp = f->fix_dp ? f->fix_dp : 1, tp = f->fix_tp ? f->fix_tp : 1,
         pp = f->fix_pp ? f->fix_pp : 1, v = f->fix_v ? f->fix_v : 1, m = f->fix_m,
         mbs = f->fix_mbs ? f->fix_mbs : 1, zero = f->fix_zero >= 0 ? f->fix_zero : 0;
    double bucket = a.bucket, jitter = a.jitter;
    int json = a.s.json;
    if (runs > 1 && !(jitter > 0))
        return cli_usage("sim", "--runs %ld repeats the step with --jitter's noise: without "
                                "--jitter every run is the same step",
                         runs);
    int recomp = f->fix_recompute >= 0 ? f->fix_recompute : SC_RECOMPUTE_NONE;
    /* anything that describes the configuration, which --plan brings itself */
    int config_given = model || cluster || f->fix_dp || f->fix_tp || f->fix_pp || f->fix_v ||
                       f->fix_m || f->fix_mbs || f->fix_schedule || f->fix_zero >= 0 ||
                       f->fix_recompute >= 0 || f->fix_sp >= 0 || f->attn || a.slices || part_spec || a.placement ||
                       bucket > 0 || f->fix_cp || a.s.batch;
    sc_step_cfg cfg = {0};
    cfg.schedule = f->fix_schedule ? f->fix_schedule : "1f1b";
    cfg.placement = a.placement;
    cfg.one_replica = a.one_replica;
    cfg.max_mem_bytes = cli_mem_cap(a.s.max_mem);
    if (plan_in && (config_given || nodes))
        return cli_usage("sim", "--plan replays a plan: give no --model, --cluster or degrees");
    if (!plan_in && (!model || !cluster))
        return cli_usage("sim", "--model and --cluster are required (or --plan)");
    if (!plan_in && a.s.batch) {
        /* the global batch names the microbatches, as Megatron-LM's does */
        long per = dp * mbs;
        if (a.s.batch % per)
            return cli_usage("sim", "--global-batch %ld is not a multiple of dp x mbs = %ld x %ld "
                                    "= %ld",
                             a.s.batch, dp, mbs, per);
        if (m && m * per != a.s.batch)
            return cli_usage("sim", "--global-batch %ld disagrees with dp x microbatches x mbs "
                                    "= %ld x %ld x %ld = %ld: give one of them",
                             a.s.batch, dp, m, mbs, m * per);
        if (a.s.batch / per > CLI_MAX_M)
            return cli_usage("sim", "--global-batch %ld makes %ld microbatches of dp x mbs = %ld, "
                                    "more than %d: raise --mbs or --dp",
                             a.s.batch, a.s.batch / per, per, CLI_MAX_M);
        m = a.s.batch / per;
    }
    if (!plan_in && !m)
        return cli_usage("sim", "--microbatches is required (or --global-batch, which gives "
                                "them as B / (dp x mbs))");
    cfg.dp = (int)dp;
    cfg.cp = f->fix_cp > 1 ? f->fix_cp : 0;
    cfg.tp = (int)tp;
    cfg.pp = (int)pp;
    cfg.v = (int)v;
    cfg.m = (int)m;
    cfg.mbs = (int)mbs;
    cfg.zero = (int)zero;
    cfg.recompute = (sc_recompute)recomp;
    cfg.sp = f->fix_sp == 1;
    cfg.attn = f->attn;
    cfg.no_overlap_grad_reduce = f->no_overlap_grad_reduce;
    cfg.no_overlap_p2p_comm = sc_search_p2p_blocks(f, cfg.pp, cfg.v); /* as given, or the framework's */
    cfg.tp_comm_overlap = f->tp_comm_overlap;
    cfg.overlap_param_gather = f->overlap_param_gather;
    cfg.grad_reduce_in_fp32 = f->grad_reduce_in_fp32;
    cfg.fp8 = f->fp8;
    if (f->wgrad_deferral_limit > 0 && !f->defer_embedding_wgrad)
        return cli_usage("sim", "--wgrad-deferral-limit limits --defer-embedding-wgrad-compute, "
                                "which is not given");
    cfg.defer_embedding_wgrad = f->defer_embedding_wgrad;
    cfg.wgrad_deferral_limit = f->wgrad_deferral_limit;
    cfg.bucket_bytes = bucket * 1024 * 1024;
    cfg.jitter = jitter;
    cfg.seed = (unsigned long)seed;
    cfg.want_timeline = tl_file != NULL;

    sc_error err = {0};
    sc_tl_filter flt;
    memset(&flt, 0, sizeof flt);
    if ((a.ranks || a.stages) && !tl_file)
        return cli_usage("sim", "--ranks and --stages select what --timeline writes");
    if ((a.ranks && sc_tl_set_parse(a.ranks, "--ranks", &flt.ranks, &err)) ||
        (a.stages && sc_tl_set_parse(a.stages, "--stages", &flt.stages, &err)))
        return cli_usage("sim", "%s", err.msg);
    /* every output is checked now, before any work, and written under a
     * temporary name beside its target; all are renamed at the end or none */
    cli_outputs outs = {0};
    const char *tl_tmp = NULL, *lowered_tmp = NULL, *plan_tmp = NULL;
    const char **const on_stdout[] = {&tl_file, &a.lowered, &plan_out};
    if (cli_stdout_claim("sim", on_stdout, 3, json, &err))
        return cli_fail(&err);
    if (cli_outputs_add(&outs, tl_file, &tl_tmp, &err) ||
        cli_outputs_add(&outs, a.lowered, &lowered_tmp, &err) ||
        cli_outputs_add(&outs, plan_out, &plan_tmp, &err))
        return cli_fail(&err);
    sc_model *mod = NULL;
    sc_cluster cl;
    sc_partition part = {0};
    sc_plan *plan = NULL;
    if (plan_in) {
        if (sc_plan_load(plan_in, &plan, &err) || sc_plan_open(plan, plan_in, &mod, &cl, &err) ||
            (f->framework && sc_overhead_apply(&cl, f->framework->name, "--framework", &err))) {
            sc_plan_free(plan);
            return cli_fail(&err);
        }
        sc_step_cfg pc;
        sc_plan_step_cfg(plan, &pc);
        pc.jitter = cfg.jitter;
        pc.seed = cfg.seed;
        pc.want_timeline = cfg.want_timeline;
        pc.one_replica = cfg.one_replica;
        pc.max_mem_bytes = cfg.max_mem_bytes;
        pc.no_overlap_grad_reduce |= cfg.no_overlap_grad_reduce;
        pc.no_overlap_p2p_comm |= f->no_overlap_p2p_comm == 1; /* only as given */
        pc.tp_comm_overlap |= cfg.tp_comm_overlap;
        pc.overlap_param_gather |= cfg.overlap_param_gather;
        pc.grad_reduce_in_fp32 |= cfg.grad_reduce_in_fp32;
        pc.fp8 |= cfg.fp8;
        if (cfg.defer_embedding_wgrad) {
            pc.defer_embedding_wgrad = 1;
            pc.wgrad_deferral_limit = cfg.wgrad_deferral_limit;
        }
        cfg = pc;
        model = plan->model_source;
        cluster = plan->cluster_source;
        cli_warn_cluster(&cl, cluster);
    } else {
        int orc = cli_open(model, cluster, nodes, f->framework ? f->framework->name : NULL, &mod, &cl);
        if (orc)
            return orc;
        if (sc_partition_parse(part_spec, mod, cfg.pp * cfg.v, &part, &err)) {
            sc_model_free(mod);
            return cli_fail(&err);
        }
        cfg.partition = &part;
    }
    /* what the step needs of the model: some work, and tp dividing the heads
     * (the planner's rule, sc_cost_tp_check) */
    if (sc_cost_model_check(mod, model, &err) || sc_cost_tp_check(mod, cfg.tp, &err)) {
        if (err.msg[0] && strncmp(err.msg, model, strlen(model)))
            sc_err_prefix(&err, "sim: %s", model);
        sc_partition_free(&part);
        sc_plan_free(plan);
        sc_model_free(mod);
        return cli_fail(&err);
    }
    cli_warn_tp_replicated(mod, cfg.tp);
    /* token slices: a count, or TeraPipe's programme */
    sc_slicing sl;
    memset(&sl, 0, sizeof sl);
    if (a.slices && !strcmp(a.slices, "auto")) {
        if (sc_slices_auto(mod, &cl, &cfg, &sl, &err)) {
            sc_partition_free(&part);
            sc_model_free(mod);
            return cli_fail(&err);
        }
        cfg.slices = sl.k;
        cfg.slice_len = sl.k > 1 ? sl.len : NULL;
        if (!json)
            fprintf(stderr, "sim: --slices auto: %d slice%s%s (TeraPipe's programme%s); the best "
                    "equal slicing (%d) simulates %.1f us\n", sl.k, sl.k == 1 ? "" : "s",
                    sl.k > 1 ? "" : ", no slicing", sl.equal ? " lost to equal slices" : "",
                    sl.equal_k, sl.equal_step_s * 1e6);
    } else if (a.slices) {
        long k;
        if (cli_long("sim", "--slices", a.slices, 1, SC_SLICES_MAX, &k)) {
            sc_partition_free(&part);
            sc_model_free(mod);
            return 2;
        }
        cfg.slices = (int)k;
    }
    const sc_partition *shown = cfg.partition;
    /* how the stages were cut: the plan's way, or the --partition given */
    const char *method = plan ? plan->method
                         : (!part_spec || !strcmp(part_spec, "uniform")) ? "uniform" : "explicit";
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
    /* a result that is not a number is refused, whatever made it */
    if (!rc && !(isfinite(r->step_time_s) && r->step_time_s > 0)) {
        sc_err(&err, SC_EINVAL,
               "sim: the step time came out as %g s: check the cluster's rates and the model's "
               "figures (%s, %s)",
               r->step_time_s, cluster, model);
        rc = cli_fail(&err);
    }
    /* does not fit: reported, but a failure unless --allow-oom (nothing written) */
    int oom = !rc && !r->fits;
    if (oom && !a.allow_oom)
        rc = -1; /* decided after the report */
    sc_status wst = SC_OK;
    if (!rc && tl_file) {
        if (a.ranks || a.stages)
            wst = sc_timeline_filter(r->timeline, &flt, "sim", &err);
        if (!wst)
            wst = sc_timeline_save(r->timeline, tl_tmp, &err);
    }
    if (!rc && !wst && a.lowered) {
        sc_lowered *lw = NULL;
        wst = sc_lower(mod, &cl, &cfg, &lw, &err);
        if (!wst)
            wst = sc_lower_save(lw, lowered_tmp, &err);
        sc_lower_free(lw);
    }
    if (!rc && !wst && plan_out) {
        sc_plan *out = NULL;
        wst = sc_plan_make(mod, model, &cl, cluster, &cfg, method, r, &out, &err);
        if (!wst)
            wst = sc_plan_save(out, mod, plan_tmp, &err);
        sc_plan_free(out);
    }
    /* all written or none: commit renames them, or removes the temporaries */
    wst = cli_outputs_commit(&outs, rc ? SC_EINVAL : wst, &err);
    if (!rc && wst)
        rc = cli_fail(&err);
    if (!rc || rc == -1) {
        double mean = sum / runs, sd = runs > 1 ? sqrt(fmax(0, (sum2 - runs * mean * mean) / (runs - 1))) : 0;
        if (json) {
            cJSON *j = sc_step_result_json(r, &cfg);
            if (j) {
                /* what the table shows of the stages: how they were cut,
                 * and each one's first and last module */
                cJSON_AddStringToObject(cJSON_GetObjectItem(j, "config"), "partition", method);
                cJSON *st;
                int p = 0;
                cJSON_ArrayForEach(st, cJSON_GetObjectItem(j, "memory"))
                {
                    cJSON_AddStringToObject(st, "first_module",
                                            sc_partition_first_name(mod, shown, p));
                    cJSON_AddStringToObject(st, "last_module",
                                            stage_last_name(mod, shown, r, p++));
                }
                cJSON_AddStringToObject(j, "model", mod->name);
                cJSON_AddStringToObject(j, "cluster", cl.name);
                cJSON_AddNumberToObject(j, "nodes", cl.nodes);
                double half = sc_step_interval(r, &cl, mod->dtype);
                if (half > 0)
                    cJSON_AddNumberToObject(j, "step_time_interval_s", half);
                cli_label_json(j, &cl, r->step_time_s, mod, r->n_ranks,
                               cfg.attn == SC_ATTN_FLASH);
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
            int jrc = cli_print_json(j);
            if (rc != -1)
                rc = jrc;
        } else {
            print_summary(mod, &cl, &cfg, r, shown, !plan && !strcmp(method, "uniform"));
            if (runs > 1 || jitter > 0) {
                char b1[32], b2[32], b3[32], b4[32];
                printf("\njitter %.3g over %ld runs (seeds %ld..%ld): step mean %s us, sd %s us, "
                       "min %s us, max %s us\n",
                       jitter, runs, seed, seed + runs - 1, cli_us(mean, b1), cli_us(sd, b2),
                       cli_us(lo, b3), cli_us(hi, b4));
            }
            if (tl_file && !rc)
                printf("\ntimeline written to %s\n", cli_out_name(tl_file));
            if (a.lowered && !rc)
                printf("lowered step written to %s\n", cli_out_name(a.lowered));
            if (plan_out && !rc)
                printf("plan written to %s\n", cli_out_name(plan_out));
        }
        if (oom) {
            fflush(stdout);
            char b1[32], b2[32];
            double need = sc_step_peak_mem(r);
            if (rc == -1) {
                sc_err(&err, SC_ENOFIT,
                       "sim: a stage needs %s, more than the GPU's %s: it does not fit "
                       "(--allow-oom reports it anyway; nothing written)",
                       cli_bytes(need, b1), cli_bytes(cl.gpu.memory_bytes, b2));
                rc = cli_fail(&err);
            } else {
                fprintf(stderr, "stagecraft: sim: warning: a stage needs %s, more than the "
                                "GPU's %s\n",
                        cli_bytes(need, b1), cli_bytes(cl.gpu.memory_bytes, b2));
            }
        }
    }
    sc_step_result_free(r);
    sc_partition_free(&part);
    sc_plan_free(plan);
    sc_model_free(mod);
    return rc;
}
