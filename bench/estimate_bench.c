/* estimate_bench.c - how far the planner's analytical estimate is from the
 * simulator on the candidates a search ranks with it.
 *   make bench && build/bench/estimate_bench
 * For each of ten searches (built-in models on A100 and H100 presets, 2 to 128
 * nodes), the search's 64 simulated candidates (its best 64 estimates, the
 * default) carry both figures: per search the mean and the largest
 * |estimate / simulated - 1|, and the regret of simulating fewer, the best
 * simulated step among the K best estimates against the best of all 64 (K = 1,
 * 4, 16); then the errors by schedule and ZeRO stage over every search. No
 * timing: the figures depend on the cost models alone, not on the machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner_int.h"

#define NSIM 64

static const struct {
    const char *model, *cluster;
    int nodes;
    long batch;
} cases[] = {
    {"gpt-1.3b", "p4d.24xlarge", 2, 256},     {"gpt-1.3b", "p4d.24xlarge", 16, 512},
    {"gpt-13b", "p4d.24xlarge", 16, 512},     {"gpt-13b", "dgx-h100", 8, 512},
    {"gpt-13b", "p4d.24xlarge", 64, 1024},    {"gpt-175b", "dgx-a100-80g", 64, 1536},
    {"gpt-175b", "p4d.24xlarge", 128, 1536},  {"llama3-8b", "dgx-h100", 4, 256},
    {"llama3-70b", "dgx-h100", 32, 1024},     {"gpt-6.7b", "p4d.24xlarge", 8, 256},
};

/* errors by schedule (4) and ZeRO stage (4) */
static struct {
    int n;
    double sum, abs, lo, hi;
} by[4][4];

/* A simulated candidate: its estimate, its simulated step, its rank. */
typedef struct {
    double est, sim;
    int rank;
} pair;

static int by_estimate(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->est != y->est)
        return x->est < y->est ? -1 : 1;
    return x->rank - y->rank;
}

static int sched_index(const char *s)
{
    static const char *const names[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i]))
            return i;
    return 1;
}

int main(void)
{
    static const char *const snames[] = {"gpipe", "1f1b", "interleaved", "zb-h1"};
    printf("%-10s %-13s %5s %6s  %4s %8s %9s  %-36s %9s %8s %8s\n", "model", "cluster", "nodes",
           "batch", "sims", "mean|e|", "max e", "(its layout)", "regret@1", "@4", "@16");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sc_error err;
        sc_model *m;
        sc_cluster c;
        if (sc_model_open(cases[i].model, &m, &err) ||
            sc_cluster_preset_get(cases[i].cluster, &c, &err) ||
            sc_cluster_set_nodes(&c, cases[i].nodes, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        sc_search_opts o;
        sc_search_opts_default(&o);
        o.global_batch = cases[i].batch;
        o.simulate = NSIM;
        sc_search *s;
        if (sc_search_run(m, &c, &o, &s, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        int n = 0;
        double best = INFINITY, mean = 0, worst = 0;
        const sc_candidate *wc = NULL, *k;
        while ((k = sc_search_ranked(s, n)) && k->sim)
            n++;
        /* the simulated candidates in the order of their estimates (ties by rank):
         * regret of simulating only the first K */
        pair *by_est = malloc(sizeof(pair) * (size_t)(n ? n : 1));
        if (!by_est)
            return 1;
        for (int j = 0; j < n; j++) {
            k = sc_search_ranked(s, j);
            by_est[j] = (pair){k->est.step_s, k->sim->step_time_s, j};
            double e = by_est[j].est / by_est[j].sim - 1;
            mean += fabs(e) / n;
            if (fabs(e) > fabs(worst) || !wc) {
                worst = e;
                wc = k;
            }
            best = fmin(best, by_est[j].sim);
            int a = sched_index(k->cfg.schedule), z = k->cfg.zero & 3;
            if (!by[a][z].n)
                by[a][z].lo = by[a][z].hi = e;
            by[a][z].n++;
            by[a][z].sum += e;
            by[a][z].abs += fabs(e);
            by[a][z].lo = fmin(by[a][z].lo, e);
            by[a][z].hi = fmax(by[a][z].hi, e);
        }
        qsort(by_est, (size_t)n, sizeof(pair), by_estimate);
        double reg[3], b = INFINITY;
        static const int K[3] = {1, 4, 16};
        for (int j = 0, q = 0; q < 3; j++) {
            if (j < n)
                b = fmin(b, by_est[j].sim); /* the best simulated of the j+1 first */
            if (j + 1 == K[q] || j >= n)
                reg[q++] = b / best - 1;
        }
        char lay[64] = "";
        if (wc)
            snprintf(lay, sizeof lay, "%d.%d.%d v%d m%d %s z%d", wc->cfg.dp, wc->cfg.tp,
                     wc->cfg.pp, wc->cfg.v, wc->cfg.m, wc->cfg.schedule, wc->cfg.zero);
        printf("%-10s %-13s %5d %6ld  %4d %7.2f%% %+8.2f%%  %-36s %8.2f%% %7.2f%% %7.2f%%\n",
               cases[i].model, cases[i].cluster, cases[i].nodes, cases[i].batch, n, 100 * mean,
               100 * worst, lay, 100 * reg[0], 100 * reg[1], 100 * reg[2]);
        fflush(stdout);
        free(by_est);
        sc_search_free(s);
        sc_model_free(m);
    }
    printf("\n%-12s %4s %5s %9s %9s %9s %9s\n", "schedule", "zero", "n", "mean", "mean|e|",
           "lowest", "highest");
    for (int a = 0; a < 4; a++)
        for (int z = 0; z < 4; z++)
            if (by[a][z].n)
                printf("%-12s %4d %5d %+8.2f%% %8.2f%% %+8.2f%% %+8.2f%%\n", snames[a], z,
                       by[a][z].n, 100 * by[a][z].sum / by[a][z].n,
                       100 * by[a][z].abs / by[a][z].n, 100 * by[a][z].lo, 100 * by[a][z].hi);
    return 0;
}
