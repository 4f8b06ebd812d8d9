/* partition_bench.c - time per call of the optimal and tree partitioners
 * (and of sc_partition_eval) on gpt-1.3b and gpt-175b.
 *
 *   make bench && build/bench/partition_bench [reps]
 *
 * Configuration: p4de.24xlarge (80 GB), tp 8, mbs 1, dp 8, ZeRO 1, pp = S,
 * v = 1; in-flight counts per rank as 1F1B holds them (pp - r), so every
 * rank has its own memory profile (the costliest case for the memory
 * windows); recompute none, selective and full (full takes the heap path).
 * A configuration that does not fit is timed too (its answer is the
 * "does not fit" error, found by the min-max-memory search). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "partitioner.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef sc_status (*part_fn)(const sc_partitioner_cfg *, sc_partition *, sc_error *);

static double time_calls(part_fn fn, const sc_partitioner_cfg *cfg, int reps, sc_status *st,
                         sc_error *err)
{
    double t0 = now();
    for (int i = 0; i < reps; i++) {
        sc_partition p = {0};
        *st = fn(cfg, &p, err);
        sc_partition_free(&p);
    }
    return (now() - t0) / reps;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    if (reps < 1)
        reps = 1;
    static const struct {
        const char *model;
        int S;
    } cases[] = {{"gpt-1.3b", 4}, {"gpt-175b", 16}, {"gpt-175b", 96}};
    printf("%-9s %3s %4s %-9s %8s %11s %11s %11s  %s\n", "model", "S", "L", "recompute",
           "fits", "optimal ms", "tree ms", "eval ms", "bottleneck (optimal / tree)");
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        sc_model *m = NULL;
        sc_error err;
        if (sc_model_open(cases[ci].model, &m, &err)) {
            fprintf(stderr, "partition_bench: %s\n", err.msg);
            return 1;
        }
        sc_cluster c;
        if (sc_cluster_preset_get("p4de.24xlarge", &c, &err) ||
            sc_cluster_set_nodes(&c, cases[ci].S * 8, &err)) {
            fprintf(stderr, "partition_bench: %s\n", err.msg);
            return 1;
        }
        int S = cases[ci].S;
        int *inflight = malloc(sizeof *inflight * (size_t)S);
        for (int r = 0; r < S; r++)
            inflight[r] = S - r;
        for (int rc = 0; rc <= 2; rc++) {
            sc_partitioner_cfg cfg;
            sc_partitioner_cfg_init(&cfg, m, &c, S);
            cfg.tp = 8;
            cfg.dp = 8;
            cfg.zero = 1;
            cfg.recompute = (sc_recompute)rc;
            cfg.inflight = inflight;
            sc_status so, stt;
            double to = time_calls(sc_partition_optimal, &cfg, reps, &so, &err);
            char emsg[SC_ERRMSG_MAX];
            snprintf(emsg, sizeof emsg, "%s", so ? err.msg : "");
            double tt = time_calls(sc_partition_tree, &cfg, reps, &stt, &err);
            sc_partition po = {0}, pt = {0};
            double bo = 0, bt = 0, te = 0;
            int fits = 0;
            if (!so && !sc_partition_optimal(&cfg, &po, &err) &&
                !sc_partition_tree(&cfg, &pt, &err)) {
                sc_part_eval e;
                double t0 = now();
                for (int i = 0; i < reps; i++) {
                    sc_partition_eval(&cfg, &po, &e, &err);
                    if (i + 1 < reps)
                        sc_part_eval_free(&e);
                }
                te = (now() - t0) / reps;
                bo = e.bottleneck_s;
                fits = e.fits;
                sc_part_eval_free(&e);
                sc_partition_eval(&cfg, &pt, &e, &err);
                bt = e.bottleneck_s;
                sc_part_eval_free(&e);
            }
            printf("%-9s %3d %4d %-9s %8s %11.3f %11.3f %11.3f  ", cases[ci].model, S,
                   m->n_leaves, sc_recompute_name((sc_recompute)rc), so ? "no" : fits ? "yes" : "?",
                   to * 1e3, tt * 1e3, te * 1e3);
            if (so)
                printf("%s\n", emsg);
            else
                printf("%.3f ms / %.3f ms\n", bo * 1e3, bt * 1e3);
            sc_partition_free(&po);
            sc_partition_free(&pt);
        }
        /* a configuration that does not fit: p4d (40 GB), ZeRO 0, dp 1 */
        {
            sc_cluster c40;
            sc_cluster_preset_get("p4d.24xlarge", &c40, &err);
            sc_cluster_set_nodes(&c40, S, &err);
            sc_partitioner_cfg cfg;
            sc_partitioner_cfg_init(&cfg, m, &c40, S);
            cfg.tp = 8;
            cfg.recompute = SC_RECOMPUTE_NONE;
            cfg.inflight = inflight;
            sc_status so;
            double to = time_calls(sc_partition_optimal, &cfg, reps, &so, &err);
            printf("%-9s %3d %4d %-9s %8s %11.3f %11s %11s  %s (p4d, ZeRO 0, dp 1)\n",
                   cases[ci].model, S, m->n_leaves, "none", so ? "no" : "yes", to * 1e3, "-",
                   "-", so ? err.msg : "fits");
        }
        free(inflight);
        sc_model_free(m);
    }
    return 0;
}
