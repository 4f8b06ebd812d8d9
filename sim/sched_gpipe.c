/* sched_gpipe.c - GPipe (Huang et al. 2019): every forward, then every
 * backward, microbatches in ascending order on every rank.
 * With per-stage times tf, tb and free communication the step takes
 * (m + p - 1)(tf + tb); rank r holds all m microbatches' activations. */
#include "schedule.h"

#include <stdio.h>

static const char *validate(int p, int m, int v, char *buf, size_t cap)
{
    if (v != 1) {
        snprintf(buf, cap, "gpipe has one chunk per rank (v=%d; use interleaved for v > 1)", v);
        return buf;
    }
    return NULL;
}

static sc_status generate(int p, int m, int v, int rank, sc_sched_sink *sink)
{
    for (int i = 0; i < m; i++)
        if (sc_sched_emit(sink, SC_OP_F, i, 0))
            return SC_ENOMEM;
    for (int i = 0; i < m; i++)
        if (sc_sched_emit(sink, SC_OP_B, i, 0))
            return SC_ENOMEM;
    return SC_OK;
}

const sc_sched_impl sc_sched_gpipe = {
    "gpipe", "GPipe: all forwards, then all backwards (peak activations: m microbatches)", 0,
    validate, generate};
