/* cmd_tune.c - `stagecraft tune`: the microbatch auto-tuner. */
#include "cli.h"
#include "cli_outputs.h"
#include "framework.h"
#include "cli_opts.h"
#include "cli_limits.h"
#include "cluster.h"
#include "json.h"
#include "model.h"
#include "tune.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    cli_search_args s; /* first: the shared options (cli_opts.h) land here */
    const char *out;
} tune_args;

static const cli_opt tune_opts[] = {
    {"output", 'o', "FILE", "write the curve (stagecraft.tune/1)", cli_opt_str,
     offsetof(tune_args, out), 0, 0, 0, NULL, NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL, 0},
};

static const cli_cmd tune_cmd = {
    "tune", CLI_TUNE,
    "usage: stagecraft tune --model M --cluster C [--nodes N] --global-batch B\n"
    "                       --dp D --tp T --pp P [--v V] [--schedule S] [--zero Z]\n"
    "                       [--recompute R] [--mbs S | --max-mbs S] [--partitioner P]\n"
    "                       [--framework F] [--cuts layers|leaves] [-o tune.json] [--json]\n"
    "Sweeps the microbatch count m (and size mbs = B/(dp·m)) of one layout, simulates\n"
    "every point that fits and prints the curve (step time, bubble fraction,\n"
    "efficiency = compute / step, peak memory) and the best m: the fastest, or among\n"
    "the points within 1% of it the one needing less memory, as plan ranks ties. It\n"
    "is the planner's search with the layout fixed (--framework refuses a layout the\n"
    "framework does not run). 'stagecraft plot tune tune.json -o tune.png' draws\n"
    "the curve.\n",
    NULL, tune_opts};

/* The GPUs of the tuned layout. */
static long tune_gpus(const sc_tune *t)
{
    return (long)t->dp * (t->cp > 1 ? t->cp : 1) * t->tp * t->pp;
}

int cmd_tune(int argc, char **argv)
{
    tune_args a;
    memset(&a, 0, sizeof a);
    cli_search_args_init(&a.s);
    a.s.o.max_mbs = 64;
    int prc = cli_parse(&tune_cmd, argc, argv, &a);
    if (prc)
        return prc == CLI_HELP_SHOWN ? 0 : prc;
    const char *model = a.s.model, *cluster = a.s.cluster, *out = a.out;
    long nodes = a.s.nodes, batch = a.s.batch;
    int json = a.s.json;
    sc_search_opts o = a.s.o;
    if (!model || !cluster || !batch || !o.fix_dp || !o.fix_tp || !o.fix_pp)
        return cli_usage("tune", "--model, --cluster, --global-batch, --dp, --tp and --pp are "
                         "required");
    o.global_batch = batch;
    o.max_mem_bytes = cli_mem_cap(a.s.max_mem);
    sc_error err = {0};
    if (cli_output_take("tune", &out, json, &err)) /* known before the sweep, as sim does */
        return cli_fail(&err);
    sc_model *m;
    sc_cluster c;
    int orc = cli_open(model, cluster, nodes, o.framework ? o.framework->name : NULL, &m, &c);
    if (orc)
        return orc;
    cli_warn_tp_replicated(m, o.fix_tp);
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
    double best_s = t->n > 0 ? t->pts[t->best].step_s : 0;
    if (!rc && json) {
        cJSON *j = sc_tune_to_json(t);
        /* printed, not part of the tune file */
        cli_label_json(j, &c, best_s, m, tune_gpus(t), o.attn == SC_ATTN_FLASH);
        rc = cli_print_json(j);
    } else if (!rc) {
        char b[32];
        char cps[16] = "";
        if (t->cp > 1)
            snprintf(cps, sizeof cps, " cp %d", t->cp);
        printf("tune: %s on %d x %s, dp %d%s tp %d pp %d v %d, %s, zero %d, recompute %s, "
               "global batch %ld%s%s\n\n",
               m->name, c.nodes, c.name, t->dp, cps, t->tp, t->pp, t->v, t->schedule, t->zero,
               sc_recompute_name(t->recompute), t->global_batch,
               !t->overlap_p2p_comm && t->pp > 1 ? ", blocking sends" : "",
               t->fp8 ? ", fp8 GEMMs" : "");
        printf("%6s %5s %12s %8s %11s %12s %14s\n", "m", "mbs", "step ms", "bubble",
               "efficiency", "peak mem", "tokens/s");
        for (int i = 0; i < t->n; i++) {
            const sc_tune_point *p = &t->pts[i];
            char sl[32] = "";
            if (p->slices > 1)
                snprintf(sl, sizeof sl, "  (%d token slices)", p->slices);
            printf("%6d %5d %12.1f %7.1f%% %10.1f%% %12s %14.0f%s%s\n", p->m, p->mbs,
                   1e3 * p->step_s, 100 * p->bubble_fraction, 100 * p->efficiency,
                   cli_bytes(p->peak_mem, b), p->tokens_per_s, i == t->best ? "  <- best" : "",
                   sl);
        }
        for (int i = 0; i < t->n_skipped; i++)
            printf("%6d %5d   %s\n", t->skipped[i].m, t->skipped[i].mbs, t->skipped[i].reason);
        const sc_tune_point *bp = &t->pts[t->best];
        printf("\nbest: m = %d microbatch%s of %d sample%s, %.1f ms per step\n", bp->m,
               bp->m == 1 ? "" : "es", bp->mbs, bp->mbs == 1 ? "" : "s", 1e3 * bp->step_s);
        cli_print_label(&c, best_s, "the best's measured step", 1, m, tune_gpus(t),
                        o.attn == SC_ATTN_FLASH);
        cli_print_attn_hint(&c, m, o.attn == SC_ATTN_FLASH, a.s.attn_given);
        if (out && cli_out_name(out) != out) /* standard output: nothing to draw from */
            printf("curve written to standard output\n");
        else if (out)
            printf("curve written to %s (draw it with 'stagecraft plot tune %s -o tune.png')\n",
                   out, out);
    }
    sc_tune_free(t);
    sc_model_free(m);
    return rc;
}
