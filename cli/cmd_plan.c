/* cmd_plan.c - `stagecraft plan`: search for the best plan. */
#include "cli.h"
#include "cli_outputs.h"
#include "cli_opts.h"
#include "cli_limits.h"
#include "cluster.h"
#include "cost.h"
#include "json.h"
#include "model.h"
#include "plan.h"
#include "framework.h"
#include "search.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    cli_search_args s; /* first: the shared options (cli_opts.h) land here */
    const char *out;
    double time_limit;
} plan_args;

static const cli_opt plan_opts[] = {
    {"fix", 0, "K=V,...", "fix choices of the search, KEY=VALUE as --KEY VALUE\n"
     "(m: --microbatches); KEY one of", cli_opt_fix, 0, 0, 0, 0, NULL, cli_fix_keys, 0},
    {"time-limit", 0, "S", "stop searching after S seconds and rank the plans found\n"
     "so far (the output says so); default 60, 0: no limit", cli_opt_double,
     offsetof(plan_args, time_limit), 0, 1e7, 0, NULL, NULL, 0},
    {"output", 'o', "FILE", "write the winner as a plan (stagecraft.plan/1)", cli_opt_str,
     offsetof(plan_args, out), 0, 0, 0, NULL, NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL, 0},
};

static const cli_cmd plan_cmd = {
    "plan", CLI_PLAN,
    "usage: stagecraft plan --model M --cluster C [--nodes N] --global-batch B\n"
    "                       [--optimize speed|memory] [--top N] [--simulate K]\n"
    "                       [--framework megatron|deepspeed|torch|any]\n"
    "                       [--cuts layers|leaves] [--partitioner P]\n"
    "                       [--fix dp=D,tp=T,pp=P,v=V,m=M,mbs=S,schedule=X,zero=Z,"
    "recompute=R]\n"
    "                       [--dp D] [--tp T] [--pp P] [--v V] [--microbatches M] [--mbs S]\n"
    "                       [--schedule S] [--zero Z] [--recompute R]\n"
    "                       [--max-mbs S] [--memory-weight W] [--shared replicate|strict]\n"
    "                       [-o plan.json] [--json]\n"
    "Searches data-, tensor- and pipeline-parallel degrees, interleaving, microbatch\n"
    "count and size, schedule, ZeRO stage and recompute for model M on cluster C:\n"
    "partitions each shape, drops what does not fit, estimates every survivor\n"
    "analytically, simulates the best K (--simulate, default 64) and ranks them by\n"
    "step time (speed) or by peak memory among the plans within 5% of the fastest\n"
    "(memory). Speed ties, steps within 1% of each other, go to the lower peak\n"
    "memory, then to the simpler layout (fewer of dp, tp, pp, v above 1, then the\n"
    "lower ZeRO stage). Each configuration is listed once. Prints the first N ranked\n"
    "(--top, default 16) and why the winner wins; -o writes the winner as a plan.\n"
    "--framework keeps to what Megatron-LM, DeepSpeed or torch.distributed.pipelining\n"
    "runs as planned (what `stagecraft export --to` writes); stages begin between\n"
    "layers unless --cuts leaves (any and torch only).\n"
    "--dp, --tp, ..., --recompute fix that choice of the search, as --fix does.\n",
    NULL, plan_opts};

static void progress(void *ud, const sc_search_progress *p)
{
    cli_search_progress_line(ud, p);
}

static double exposed(const sc_step_result *r)
{
    return r->breakdown.tp + r->breakdown.cp + r->breakdown.pp + r->breakdown.dp;
}

static cJSON *cand_json(const sc_candidate *c)
{
    cJSON *o = sc_step_result_json(c->sim, &c->cfg);
    if (!o)
        return NULL;
    cJSON *e = cJSON_AddObjectToObject(o, "estimate");
    cJSON_AddNumberToObject(e, "step_time_s", c->est.step_s);
    cJSON_AddNumberToObject(e, "pipeline_s", c->est.pipe_s);
    cJSON_AddNumberToObject(e, "bubble_s", c->est.bubble_s);
    cJSON_AddNumberToObject(e, "compute_s", c->est.compute_s);
    cJSON_AddNumberToObject(e, "tp_comm_s", c->est.tp_s);
    cJSON_AddNumberToObject(e, "pp_comm_s", c->est.pp_s);
    cJSON_AddNumberToObject(e, "dp_comm_s", c->est.dp_s);
    cJSON_AddNumberToObject(e, "optimizer_s", c->est.optimizer_s);
    cJSON_AddNumberToObject(e, "peak_mem_bytes", c->est.peak_mem);
    cJSON_AddNumberToObject(o, "exposed_comm_s", exposed(c->sim));
    cJSON_AddNumberToObject(o, "peak_mem_max_bytes", sc_step_peak_mem(c->sim));
    if (c->unsliced_s > 0)
        cJSON_AddNumberToObject(o, "unsliced_step_time_s", c->unsliced_s);
    return o;
}

int cmd_plan(int argc, char **argv)
{
    plan_args a;
    memset(&a, 0, sizeof a);
    a.time_limit = -1; /* not given: CLI_PLAN_TIME_LIMIT_S */
    cli_search_args_init(&a.s);
    int prc = cli_parse(&plan_cmd, argc, argv, &a);
    if (prc)
        return prc == CLI_HELP_SHOWN ? 0 : prc;
    const char *model = a.s.model, *cluster = a.s.cluster, *out = a.out;
    long nodes = a.s.nodes, batch = a.s.batch;
    int json = a.s.json;
    if (!model || !cluster || !batch)
        return cli_usage("plan", "--model, --cluster and --global-batch are required");
    sc_search_opts o = a.s.o;
    o.global_batch = batch;
    sc_error err = {0};
    /* a winner that could not be written is known before the search, as sim does */
    if (cli_output_take("plan", &out, json, &err))
        return cli_fail(&err);
    sc_model *m;
    sc_cluster c;
    int orc = cli_open(model, cluster, nodes, o.framework ? o.framework->name : NULL, &m, &c);
    if (orc)
        return orc;
    if (sc_cost_model_check(m, model, &err)) {
        sc_model_free(m);
        return cli_fail(&err);
    }
    cli_warn_tp_replicated(m, o.fix_tp);
    cli_progress ps = {"plan", cli_wall(), 0, 0, 0, 0, 0, {0, 0, 0, 0, 0}};
    o.progress = progress;
    o.progress_ud = &ps;
    double limit = a.time_limit < 0 ? CLI_PLAN_TIME_LIMIT_S : a.time_limit;
    o.time_limit_s = limit;
    o.max_mem_bytes = cli_mem_cap(a.s.max_mem);
    sc_search *s;
    cli_progress_start(&ps);
    sc_status st = sc_search_run(m, &c, &o, &s, &err);
    cli_progress_stop(&ps);
    if (st) {
        sc_model_free(m);
        return cli_fail(&err);
    }
    long en, fit;
    int nsim;
    double te, tsim;
    sc_search_counts(s, &en, &fit, &nsim);
    int shown = nsim < a.s.top ? nsim : (int)a.s.top;
    sc_search_times(s, &te, &tsim);
    int limited, over;
    long sdone, stotal;
    sc_search_limits(s, &limited, &sdone, &stotal, &over);
    if (limited)
        fprintf(stderr,
                "plan: the time limit of %g s ran out after %ld of %ld shapes: the plans below "
                "are the best found so far%s\n",
                limit, sdone, stotal,
                a.time_limit < 0 ? " (the default limit; --time-limit 0 searches them all)" : "");
    if (over)
        fprintf(stderr, "plan: %d candidate%s not simulated: above the --max-mem limit of %.3g "
                        "GiB\n",
                over, over == 1 ? "" : "s", o.max_mem_bytes / 1073741824.0);
    const sc_candidate *w = sc_search_ranked(s, 0), *r2 = sc_search_ranked(s, 1);
    int rc = 0;
    if (out) {
        sc_plan *p = NULL;
        if (sc_plan_make(m, model, &c, cluster, &w->cfg, sc_search_partitioner(s), w->sim, &p,
                         &err) ||
            sc_plan_save(p, m, out, &err))
            rc = cli_fail(&err);
        sc_plan_free(p);
    }
    if (!rc && json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", m->name);
        cJSON_AddStringToObject(j, "cluster", c.name);
        cJSON_AddNumberToObject(j, "nodes", c.nodes);
        cJSON_AddNumberToObject(j, "gpus", (double)sc_cluster_total_gpus(&c));
        cJSON_AddNumberToObject(j, "global_batch", (double)batch);
        cJSON_AddStringToObject(j, "optimize", o.optimize_memory ? "memory" : "speed");
        cJSON_AddStringToObject(j, "partitioner", sc_search_partitioner(s));
        cJSON_AddStringToObject(j, "framework", o.framework ? o.framework->name : "any");
        cJSON_AddStringToObject(j, "cuts", o.cut_in_layers ? "leaves" : "layers");
        if (o.fix_cp > 1)
            cJSON_AddNumberToObject(j, "cp", o.fix_cp);
        int cps[SC_SEARCH_MAX_CPS], ncps = sc_search_cps(s, cps);
        cJSON *cpa = cJSON_AddArrayToObject(j, "cp_searched");
        for (int i = 0; cpa && i < ncps; i++)
            cJSON_AddItemToArray(cpa, cJSON_CreateNumber(cps[i]));
        cJSON_AddNumberToObject(j, "enumerated", (double)en);
        cJSON_AddNumberToObject(j, "fitting", (double)fit);
        cJSON_AddNumberToObject(j, "simulated", nsim);
        cJSON_AddNumberToObject(j, "estimate_wall_s", te);
        cJSON_AddNumberToObject(j, "simulate_wall_s", tsim);
        cJSON_AddBoolToObject(j, "time_limited", limited);
        cJSON_AddNumberToObject(j, "shapes_done", (double)sdone);
        cJSON_AddNumberToObject(j, "shapes_total", (double)stotal);
        cJSON_AddNumberToObject(j, "over_max_mem", over);
        cli_label_json(j, &c, nsim > 0 ? sc_search_ranked(s, 0)->sim->step_time_s : 0, m,
                       nsim > 0 ? sc_search_ranked(s, 0)->sim->n_ranks : 0,
                       o.attn == SC_ATTN_FLASH);
        cJSON *arr = cJSON_AddArrayToObject(j, "ranked");
        static const char *const tie_names[] = {NULL, "memory", "layout", "step"};
        for (int i = 0; i < shown; i++) {
            cJSON *row = cand_json(sc_search_ranked(s, i));
            /* why it ranks above the next when their steps tie */
            const char *tn = tie_names[sc_search_tie(s, i)];
            if (row && tn)
                cJSON_AddStringToObject(row, "tie_with_next", tn);
            else if (row)
                cJSON_AddNullToObject(row, "tie_with_next");
            cJSON_AddItemToArray(arr, row);
        }
        rc = cli_print_json(j);
    } else if (!rc) {
        char b[4][32];
        printf("plan: %s on %d x %s (%ld GPUs), global batch %ld, optimize %s, partitioner %s\n",
               m->name, c.nodes, c.name, sc_cluster_total_gpus(&c), batch,
               o.optimize_memory ? "memory" : "speed", sc_search_partitioner(s));
        printf("framework %s, stages cut %s", o.framework ? o.framework->name : "any",
               o.cut_in_layers ? "at any leaf" : "between layers");
        int cps[SC_SEARCH_MAX_CPS], ncps = sc_search_cps(s, cps);
        if (o.fix_cp > 1) { /* not a column: every plan has it */
            printf(", context parallelism %d (every plan: dp·cp·tp·pp ranks)", o.fix_cp);
        } else if (ncps > 1) {
            printf(", context parallelism searched:");
            for (int i = 0; i < ncps; i++)
                printf("%s %d", i ? "," : "", cps[i]);
            printf(" (--cp 1: none)");
        }
        if (o.no_overlap_p2p_comm == 1)
            printf(", pipeline sends block their sender (--overlap-p2p-comm 0)");
        if (o.fp8)
            printf(", fp8 GEMMs in the attention and MLP layers (--fp8)");
        printf("\n");
        cli_print_p2p_rule(o.framework, o.no_overlap_p2p_comm);
        printf("searched %ld configurations (%ld fit) in %.2f s; simulated %d in %.2f s\n", en,
               fit, te, nsim, tsim);
        if (shown < nsim)
            printf("the best %d of the %d simulated (--top)\n", shown, nsim);
        if (limited)
            printf("time limit of %g s reached after %ld of %ld shapes: the best plans found so "
                   "far\n",
                   limit, sdone, stotal);
        printf("\n");
        /* a cp column where a plan shown has context parallelism (searched
         * with flash attention, or fixed) */
        int cpcol = 0;
        for (int i = 0; i < shown; i++)
            cpcol |= sc_search_ranked(s, i)->cfg.cp > 1;
        printf("%3s %4s ", "#", "dp");
        if (cpcol)
            printf("%2s ", "cp");
        printf("%3s %3s %2s %4s %4s %-11s %4s %-9s %2s %10s %7s %10s %10s %8s %9s\n", "tp",
               "pp", "v", "m", "mbs", "schedule", "zero", "recompute", "sp", "step ms",
               "bubble", "comm ms", "peak mem", "TFLOP/s", "$/step");
        for (int i = 0; i < shown; i++) {
            const sc_candidate *k = sc_search_ranked(s, i);
            const sc_step_cfg *g = &k->cfg;
            char sch[32];
            if (g->slices > 1) /* token slices (TeraPipe) */
                snprintf(sch, sizeof sch, "%s/%dsl", g->schedule, g->slices);
            else
                snprintf(sch, sizeof sch, "%s", g->schedule);
            printf("%3d %4d ", i + 1, g->dp);
            if (cpcol)
                printf("%2d ", sc_step_cp(g));
            printf("%3d %3d %2d %4d %4d %-11s %4d %-9s %2s %10.1f %6.1f%% %10.1f %10s "
                   "%8.1f %9.4f\n",
                   g->tp, g->pp, g->v, g->m, g->mbs, sch, g->zero,
                   sc_recompute_name(g->recompute), g->sp ? "sp" : "-",
                   1e3 * k->sim->step_time_s,
                   100 * k->sim->bubble_fraction, 1e3 * exposed(k->sim),
                   cli_bytes(sc_step_peak_mem(k->sim), b[0]), k->sim->tflops_per_gpu,
                   k->sim->cost_per_step_usd);
        }
        if (r2) {
            const sc_step_breakdown *x = &w->sim->breakdown, *y = &r2->sim->breakdown;
            printf("\nwhy #1 wins: its step beside the runner-up's (ms per step, average rank)\n");
            printf("  %-22s %10s %10s %10s\n", "", "#1", "#2", "#2 - #1");
            struct {
                const char *n;
                double a, b;
            } rows[] = {{"compute", x->compute, y->compute},
                        {"recompute", x->recompute, y->recompute},
                        {"optimizer", x->optimizer, y->optimizer},
                        {"tp comm (exposed)", x->tp, y->tp},
                        {"pp comm (exposed)", x->pp, y->pp},
                        {"dp comm (exposed)", x->dp, y->dp},
                        {"bubble", x->bubble, y->bubble},
                        {"cp comm (exposed)", x->cp, y->cp},
                        {"step", w->sim->step_time_s, r2->sim->step_time_s},
                        {"peak memory (GiB)", sc_step_peak_mem(w->sim) / 1e3 / 1073741824.0,
                         sc_step_peak_mem(r2->sim) / 1e3 / 1073741824.0}};
            for (size_t i = 0; i < SC_ARRAY_LEN(rows); i++)
                if (strncmp(rows[i].n, "cp ", 3) || w->cfg.cp > 1 || r2->cfg.cp > 1) /* with cp only */
                    printf("  %-22s %10.1f %10.1f %+10.1f\n", rows[i].n, 1e3 * rows[i].a,
                           1e3 * rows[i].b, 1e3 * (rows[i].b - rows[i].a));
            /* the components that make the difference, largest first */
            int idx[8];
            for (int i = 0; i < 8; i++)
                idx[i] = i;
            for (int i = 1; i < 8; i++)
                for (int k = i; k > 0 && rows[idx[k]].b - rows[idx[k]].a >
                                            rows[idx[k - 1]].b - rows[idx[k - 1]].a; k--) {
                    int tmp = idx[k];
                    idx[k] = idx[k - 1];
                    idx[k - 1] = tmp;
                }
            sc_search_tie_kind tie = sc_search_tie(s, 0);
            if (o.optimize_memory) {
                printf("  #1 needs %s per GPU against %s, within 5%% of the fastest step\n",
                       cli_bytes(sc_step_peak_mem(w->sim), b[0]),
                       cli_bytes(sc_step_peak_mem(r2->sim), b[1]));
            } else if (tie != SC_TIE_NONE) {
                printf("  a tie: the steps are within %.0f%% of each other (%.1f and %.1f ms), ",
                       100 * SC_SEARCH_TIE, 1e3 * w->sim->step_time_s,
                       1e3 * r2->sim->step_time_s);
                if (tie == SC_TIE_MEMORY)
                    printf("and #1 needs less peak memory (%s per GPU against %s)\n",
                           cli_bytes(sc_step_peak_mem(w->sim), b[0]),
                           cli_bytes(sc_step_peak_mem(r2->sim), b[1]));
                else if (sc_search_dims(&w->cfg) != sc_search_dims(&r2->cfg))
                    printf("the same peak memory, and #1 is the simpler layout (%d of dp, tp, "
                           "pp, v, cp above 1 against %d)\n",
                           sc_search_dims(&w->cfg), sc_search_dims(&r2->cfg));
                else if (tie == SC_TIE_LAYOUT)
                    printf("the same peak memory, and #1 is the simpler layout (ZeRO %d against "
                           "%d)\n",
                           w->cfg.zero, r2->cfg.zero);
                else
                    printf("the same peak memory and layout complexity, and #1 is %.1f ms "
                           "faster\n",
                           1e3 * (r2->sim->step_time_s - w->sim->step_time_s));
            } else {
                printf("  #1 is %.1f ms faster:", 1e3 * (r2->sim->step_time_s - w->sim->step_time_s));
                int said = 0;
                for (int i = 0; i < 8 && said < 2; i++) {
                    double d = rows[idx[i]].b - rows[idx[i]].a;
                    if (d <= 1e-6)
                        break;
                    printf("%s the runner-up spends %.1f ms more on %s", said ? ";" : "", 1e3 * d,
                           rows[idx[i]].n);
                    said++;
                }
                double d = rows[idx[7]].a - rows[idx[7]].b;
                if (d > 1e-6)
                    printf("; #1 spends %.1f ms more on %s", 1e3 * d, rows[idx[7]].n);
                printf("\n");
            }
        }
        if (w->cfg.slices > 1 && w->unsliced_s > 0) {
            printf("\ntoken slices won: #1 cuts each sequence into %d slices (TeraPipe;", w->cfg.slices);
            for (int j = 0; j < w->cfg.slices; j++)
                printf(" %d", w->cfg.slice_len[j]);
            printf(" tokens), %.1f ms against %.1f ms unsliced (%.1f%% faster)\n",
                   1e3 * w->sim->step_time_s, 1e3 * w->unsliced_s,
                   100 * (1 - w->sim->step_time_s / w->unsliced_s));
        }
        if (nsim > 0) {
            printf("\n");
            cli_print_label(&c, sc_search_ranked(s, 0)->sim->step_time_s, "#1's measured step", 1,
                            m, sc_search_ranked(s, 0)->sim->n_ranks, o.attn == SC_ATTN_FLASH);
            cli_print_attn_hint(&c, m, o.attn == SC_ATTN_FLASH, a.s.attn_given);
        }
        if (out)
            printf("\nwinner written to %s\n", cli_out_name(out));
    }
    sc_search_free(s);
    sc_model_free(m);
    return rc;
}
