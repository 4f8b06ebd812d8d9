/* sched_interleaved.c - Megatron-LM's interleaved 1F1B (Narayanan et al.
 * 2021, "Efficient Large-Scale Language Model Training on GPU Clusters",
 * sec. 2.2; forward_backward_pipelining_with_interleaving). Rank r holds v
 * chunks, chunk c being virtual stage c*p + r. Its k-th forward (of m*v) is
 * microbatch (k / (p*v))*p + k % p of chunk (k % (p*v)) / p; its k-th
 * backward the same microbatch of chunk v - 1 - (k % (p*v)) / p. Warm-up:
 * all m*v forwards if m == p, else min(2(p - r - 1) + (v - 1)p, m*v); then
 * steady F(k + warm-up), B(k) pairs; then the remaining backwards.
 * Requires m % p == 0 (as Megatron-LM does), v >= 2 and p >= 2.
 * With per-chunk times tf, tb and free communication the step takes
 * m*v*(tf + tb) + (p - 1)(tf + tb): the bubble fraction (p - 1)/(v*m). */
#include "schedule.h"

#include <stdio.h>

static const char *validate(int p, int m, int v, char *buf, size_t cap)
{
    if (v < 2)
        snprintf(buf, cap, "interleaved needs chunks >= 2 (v=%d; v=1 is 1f1b)", v);
    else if (p < 2)
        snprintf(buf, cap, "interleaved needs pipeline stages >= 2 (pp=%d)", p);
    else if (m % p != 0)
        snprintf(buf, cap, "interleaved needs microbatches to be a multiple of pipeline stages "
                 "(m=%d, pp=%d)", m, p);
    else
        return NULL;
    return buf;
}

static void op_of(int p, int v, int k, int fwd, int *mb, int *chunk)
{
    int g = p * v, in = k % g;
    *mb = (k / g) * p + k % p;
    *chunk = fwd ? in / p : v - 1 - in / p;
}

static sc_status generate(int p, int m, int v, int rank, sc_sched_sink *sink)
{
    int total = m * v, w, mb, c;
    if (m == p) {
        w = total;
    } else {
        w = 2 * (p - rank - 1) + (v - 1) * p;
        if (w > total)
            w = total;
    }
    for (int k = 0; k < w; k++) {
        op_of(p, v, k, 1, &mb, &c);
        if (sc_sched_emit(sink, SC_OP_F, mb, c))
            return SC_ENOMEM;
    }
    for (int k = 0; k < total - w; k++) {
        op_of(p, v, k + w, 1, &mb, &c);
        if (sc_sched_emit(sink, SC_OP_F, mb, c))
            return SC_ENOMEM;
        op_of(p, v, k, 0, &mb, &c);
        if (sc_sched_emit(sink, SC_OP_B, mb, c))
            return SC_ENOMEM;
    }
    for (int k = total - w; k < total; k++) {
        op_of(p, v, k, 0, &mb, &c);
        if (sc_sched_emit(sink, SC_OP_B, mb, c))
            return SC_ENOMEM;
    }
    return SC_OK;
}

const sc_sched_impl sc_sched_interleaved = {
    "interleaved", "Megatron-LM interleaved 1F1B with v model chunks per rank", 0, validate,
    generate};
