/* plan_bench.c - the planner's speed.
 *   make bench && build/bench/plan_bench
 * 1. A full search for gpt-175b on dgx-a100-80g with a global batch of 1536
 *    on 128 nodes (1024 GPUs), 256 nodes (2048 GPUs) and 8192 nodes (65,536
 *    GPUs, issue 13's largest case), and on 128 nodes with --attn flash (the
 *    fused kernels Megatron-Core runs by default, context parallelism
 *    searched too): wall time of the whole search (enumerate, partition,
 *    estimate, simulate the best 64, the default).
 * 2. Analytical estimates per second: sc_estimate_fast over every candidate
 *    shape of the 1024-GPU search, repeated. */
#include <stdio.h>
#include <time.h>

#include "planner_int.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
    sc_error err;
    sc_model *m;
    if (sc_model_open("gpt-175b", &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int nodes[] = {128, 256, 8192, 128};
    sc_attn attn[] = {SC_ATTN_UNFUSED, SC_ATTN_UNFUSED, SC_ATTN_UNFUSED, SC_ATTN_FLASH};
    printf("%-8s %6s %-8s %12s %8s %12s %12s %10s\n", "nodes", "GPUs", "attn", "configs", "fit",
           "estimate s", "simulate s", "total s");
    for (int i = 0; i < 4; i++) {
        sc_cluster c;
        if (sc_cluster_preset_get("dgx-a100-80g", &c, &err) ||
            sc_cluster_set_nodes(&c, nodes[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        sc_search_opts o;
        sc_search_opts_default(&o);
        o.global_batch = 1536;
        o.attn = attn[i];
        double t0 = now();
        sc_search *s;
        if (sc_search_run(m, &c, &o, &s, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        double total = now() - t0, te, ts;
        long en, fit;
        sc_search_counts(s, &en, &fit, NULL);
        sc_search_times(s, &te, &ts);
        printf("%-8d %6ld %-8s %12ld %8ld %12.3f %12.3f %10.3f\n", nodes[i],
               sc_cluster_total_gpus(&c), attn[i] == SC_ATTN_FLASH ? "flash" : "unfused", en,
               fit, te, ts, total);
        const sc_candidate *w = sc_search_ranked(s, 0);
        printf("         winner: dp %d cp %d tp %d pp %d v %d m %d mbs %d %s zero %d recompute "
               "%s: %.2f s per step, %.0f TFLOP/s per GPU\n",
               w->cfg.dp, w->cfg.cp > 1 ? w->cfg.cp : 1, w->cfg.tp, w->cfg.pp, w->cfg.v, w->cfg.m, w->cfg.mbs, w->cfg.schedule,
               w->cfg.zero, sc_recompute_name(w->cfg.recompute), w->sim->step_time_s,
               w->sim->tflops_per_gpu);
        sc_search_free(s);
    }
    /* estimates per second on fixed tables */
    sc_cluster c;
    sc_cluster_preset_get("dgx-a100-80g", &c, &err);
    sc_cluster_set_nodes(&c, 128, &err);
    sc_partition part;
    sc_partition_uniform(m, 16, &part, &err);
    sc_stage_table t;
    if (sc_stage_table_build(m, &c, 16, 1, 8, 0, 0, SC_ATTN_UNFUSED, 1, 0, 0, 0, &part, &t, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const char *sch[] = {"gpipe", "1f1b", "zb-h1"};
    long n = 0;
    double sink = 0, t0 = now();
    while (now() - t0 < 1.0) {
        for (int k = 0; k < 1000; k++) {
            sc_step_cfg cfg = {.dp = 8, .tp = 8, .pp = 16, .v = 1, .m = 16 + k % 176, .mbs = 1,
                               .zero = k % 4, .recompute = (sc_recompute)(k % 3),
                               .schedule = sch[k % 3]};
            sc_estimate e;
            sc_estimate_fast(&t, &c, &cfg, m->dtype, &e);
            sink += e.step_s;
            n++;
        }
    }
    double dt = now() - t0;
    printf("\nestimates: %ld in %.2f s = %.0f per second (gpt-175b, pp 16; checksum %.3g)\n", n,
           dt, n / dt, sink);
    sc_stage_table_free(&t);
    sc_partition_free(&part);
    sc_model_free(m);
    return 0;
}
