/* engine_bench.c - throughput of the discrete-event engine.
 *
 *   make bench && build/bench/engine_bench [tasks] [resources] [flows]
 *
 * Builds a synthetic DAG: `tasks` compute tasks spread round-robin over
 * `resources` streams (each stream runs its tasks in submission order), each
 * task also depending on the previous-step task of the neighbouring stream
 * (a pipeline-like wavefront), plus `flows` transfers over 2-link paths drawn
 * from 256 links, each between two compute tasks. Prints build and run wall
 * time and events per second of the run. Defaults: 1,000,000 tasks, 1024
 * resources, 20,000 flows.
 */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    long ntasks = argc > 1 ? atol(argv[1]) : 1000000;
    int nres = argc > 2 ? atoi(argv[2]) : 1024;
    long nflows = argc > 3 ? atol(argv[3]) : 20000;
    if (ntasks < nres || nres < 2 || nflows < 0) {
        fprintf(stderr, "usage: engine_bench [tasks >= resources] [resources >= 2] [flows]\n");
        return 2;
    }
    sc_error err;
    sc_sim *s;
    double t0 = now_s();
    if (sc_sim_new(&s, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return 1;
    }
    sc_sim_reserve(s, (int)(ntasks + nflows), (int)(ntasks + 2 * nflows));
    for (int r = 0; r < nres; r++)
        sc_sim_add_resource(s, NULL);
    int nlinks = 256;
    for (int l = 0; l < nlinks; l++)
        sc_sim_add_link(s, NULL, 25e9, 5e-6);
    uint32_t x = 1;
    for (long i = 0; i < ntasks; i++) {
        int r = (int)(i % nres);
        x = x * 1664525u + 1013904223u;
        int t = sc_sim_add_compute(s, r, 1e-3 * (1 + (x >> 24) / 255.0), NULL);
        if (i >= nres) /* previous step on the neighbouring stream */
            sc_sim_add_dep(s, (int)(i - nres + (r + 1) % nres - r), t);
    }
    long stride = nflows ? ntasks / (nflows + 1) : 0;
    for (long k = 0; k < nflows; k++) {
        x = x * 1664525u + 1013904223u;
        int path[2] = {(int)((x >> 8) % nlinks), (int)((x >> 20) % nlinks)};
        if (path[1] == path[0])
            path[1] = (path[0] + 1) % nlinks;
        int f = sc_sim_add_flow(s, 1e6 * (1 + (x >> 28)), path, 2, -1, NULL);
        long from = k * stride, to = from + 3L * nres;
        if (to >= ntasks)
            to = ntasks - 1;
        sc_sim_add_dep(s, (int)from, f);
        sc_sim_add_dep(s, f, (int)to);
    }
    if (sc_sim_status(s, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        sc_sim_free(s);
        return 1;
    }
    double t1 = now_s();
    if (sc_sim_run(s, &err)) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        sc_sim_free(s);
        return 1;
    }
    double t2 = now_s();
    long long ev = sc_sim_event_count(s);
    printf("engine_bench: %ld tasks on %d resources, %ld flows on %d links\n", ntasks, nres,
           nflows, nlinks);
    printf("build %.3f s, run %.3f s, %lld events, %.2f M events/s (run), makespan %.6f s\n",
           t1 - t0, t2 - t1, ev, ev / (t2 - t1) / 1e6, sc_sim_makespan(s));
    sc_sim_free(s);
    return 0;
}
