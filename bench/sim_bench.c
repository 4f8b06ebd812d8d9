/* sim_bench.c - wall time and events/s of whole-step simulations.
 *   make bench && build/bench/sim_bench [REPEATS]
 * Cases from issue 3: gpt-13b on 128 GPUs (tp 8, pp 4, dp 4, m 32) and
 * gpt-175b on 1024 GPUs (tp 8, pp 16, dp 8, m 64), 1F1B on p4d.24xlarge; and
 * issue 13's gpt-175b on 16,384 GPUs (tp 8, pp 16, dp 128, m 64), every rank.
 * Reports the best of REPEATS (default 3) runs of build + simulate. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cluster.h"
#include "model.h"
#include "step.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    struct {
        const char *model;
        int nodes, dp, tp, pp, m;
    } cases[] = {{"gpt-13b", 16, 4, 8, 4, 32},
                   {"gpt-175b", 128, 8, 8, 16, 64},
                   {"gpt-175b", 2048, 128, 8, 16, 64}};
    printf("%-10s %6s %10s %12s %10s %14s %12s\n", "model", "GPUs", "tasks", "events",
           "wall s", "events/s", "step s");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sc_error err;
        sc_model *m;
        sc_cluster c;
        if (sc_model_open(cases[i].model, &m, &err) ||
            sc_cluster_preset_get("p4d.24xlarge", &c, &err) ||
            sc_cluster_set_nodes(&c, cases[i].nodes, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        sc_step_cfg cfg = {.dp = cases[i].dp, .tp = cases[i].tp, .pp = cases[i].pp, .v = 1,
                           .m = cases[i].m, .mbs = 1, .schedule = "1f1b"};
        double best = 1e30;
        sc_step_result *keep = NULL;
        for (int r = 0; r < reps; r++) {
            sc_step_result *res;
            double t0 = now();
            if (sc_step_simulate(m, &c, &cfg, &res, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            double dt = now() - t0;
            if (dt < best)
                best = dt;
            sc_step_result_free(keep);
            keep = res;
        }
        printf("%-10s %6d %10d %12lld %10.3f %14.0f %12.4f\n", cases[i].model,
               cfg.dp * cfg.tp * cfg.pp, keep->n_tasks, keep->events, best,
               keep->events / best, keep->step_time_s);
        sc_step_result_free(keep);
        sc_model_free(m);
    }
    return 0;
}
