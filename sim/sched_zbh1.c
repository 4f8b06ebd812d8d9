/* sched_zbh1.c - ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline
 * Parallelism", sec. 3.1). The backward is split into B (input gradient, on
 * the critical path between stages) and W (weight gradient, free to move).
 * Rank r runs 1F1B's order of F and B -- warm-up of w = min(p - r - 1, m)
 * forwards, steady F(w + j), B(j), cool-down B -- and delays W: after each B
 * it runs the oldest pending W only while more than r W's are pending, and
 * runs the last W's after its final B. Rank r thus keeps r W's in reserve
 * to fill the cool-down bubble, and holds at most min(p, m) microbatches'
 * activations (F to W) -- the paper's "same peak memory as 1F1B", i.e. 1F1B's
 * peak on rank 0, now on every rank.
 * Step time with free communication and m >= p (tested for many ratios in
 * tests/test_sched.c, sched_makespan_zbh1):
 *     m (tf + tb + tw) + (p - 1) max(tf, tb, tf + tb - tw)
 * -- the paper's bubble (p - 1)(tf + tb - tw) when tw <= min(tf, tb); the
 * other terms are lower bounds under the p-microbatch memory limit. For
 * m < p and tw <= min(tf, tb): (m + p - 1)(tf + tb) + tw. */
#include "schedule.h"

#include <stdio.h>

static const char *validate(int p, int m, int v, char *buf, size_t cap)
{
    if (v != 1) {
        snprintf(buf, cap, "zb-h1 has one chunk per rank (v=%d)", v);
        return buf;
    }
    return NULL;
}

static sc_status generate(int p, int m, int v, int rank, sc_sched_sink *sink)
{
    int w = p - rank - 1 < m ? p - rank - 1 : m;
    int next_w = 0, nb = 0; /* W's run so far, B's run so far */
    for (int i = 0; i < w; i++)
        if (sc_sched_emit(sink, SC_OP_F, i, 0))
            return SC_ENOMEM;
    for (int j = 0; j < m; j++) {
        if (j < m - w && sc_sched_emit(sink, SC_OP_F, w + j, 0))
            return SC_ENOMEM;
        if (sc_sched_emit(sink, SC_OP_B, j, 0))
            return SC_ENOMEM;
        nb++;
        while (nb - next_w > rank)
            if (sc_sched_emit(sink, SC_OP_W, next_w++, 0))
                return SC_ENOMEM;
    }
    while (next_w < m)
        if (sc_sched_emit(sink, SC_OP_W, next_w++, 0))
            return SC_ENOMEM;
    return SC_OK;
}

const sc_sched_impl sc_sched_zbh1 = {
    "zb-h1", "Zero Bubble H1: 1F1B with the backward split, weight gradients delayed", 1,
    validate, generate};
