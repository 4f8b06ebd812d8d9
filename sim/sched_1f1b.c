/* sched_1f1b.c - 1F1B / PipeDream-Flush (Narayanan et al. 2021, "Memory-
 * Efficient Pipeline-Parallel DNN Training"; Megatron-LM's non-interleaved
 * schedule). Rank r: warm-up of w = min(p - r - 1, m) forwards, then m - w
 * steady pairs F(w + i), B(i), then a cool-down of the last w backwards.
 * m < p is accepted (it degenerates gracefully: every rank warms up with all
 * it can). Step time with free communication (m + p - 1)(tf + tb); rank r
 * holds at most min(p - r, m) microbatches' activations. */
#include "schedule.h"

#include <stdio.h>

static const char *validate(int p, int m, int v, char *buf, size_t cap)
{
    if (v != 1) {
        snprintf(buf, cap, "1f1b has one chunk per rank (v=%d; use interleaved for v > 1)", v);
        return buf;
    }
    return NULL;
}

static sc_status generate(int p, int m, int v, int rank, sc_sched_sink *sink)
{
    int w = p - rank - 1 < m ? p - rank - 1 : m;
    for (int i = 0; i < w; i++)
        if (sc_sched_emit(sink, SC_OP_F, i, 0))
            return SC_ENOMEM;
    for (int i = 0; i < m - w; i++)
        if (sc_sched_emit(sink, SC_OP_F, w + i, 0) || sc_sched_emit(sink, SC_OP_B, i, 0))
            return SC_ENOMEM;
    for (int i = m - w; i < m; i++)
        if (sc_sched_emit(sink, SC_OP_B, i, 0))
            return SC_ENOMEM;
    return SC_OK;
}

const sc_sched_impl sc_sched_1f1b = {
    "1f1b", "1F1B (PipeDream-Flush): warm-up, one forward one backward, cool-down", 0,
    validate, generate};
