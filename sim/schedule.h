/* schedule.h - pipeline schedules: the single source of per-rank op order.
 *
 * A schedule variant is one small file (sched_gpipe.c, sched_1f1b.c,
 * sched_interleaved.c, sched_zbh1.c) filling one sc_sched_impl: a name, a
 * one-line description, validate(p, m, v) and generate(p, m, v, rank), which
 * emits that rank's compute ops F/B/W in order. sc_sched_generate then
 * inserts the point-to-point communication every variant implies, so all
 * variants place sends and receives by the same rule:
 *
 *   virtual stage of (rank r, chunk c) = c*p + r   (Megatron-LM's interleaved
 *   assignment; v = 1 gives stage = rank). S = p*v stages in all.
 *   - F of stage s > 0      is immediately preceded by RECV_F from stage s-1;
 *   - F of stage s < S-1    is immediately followed by SEND_F to stage s+1;
 *   - B of stage s < S-1    is immediately preceded by RECV_B from stage s+1;
 *   - B of stage s > 0      is immediately followed by SEND_B to stage s-1;
 *   - W never communicates.
 *   Sends are non-blocking (posted, never waited on by the sender); a RECV
 *   blocks until its matching SEND has been posted. Under that rule an
 *   executor running every list in order cannot deadlock:
 *   sc_sched_check proves it for a given schedule by running all lists
 *   symbolically (and the tests run it for every variant over many p, m, v).
 *
 * Ops: F(mb, chunk) forward; B(mb, chunk) backward (in zb-h1 only the input
 * gradient, in the others the full backward); W(mb, chunk) weight gradient
 * (zb-h1 only). peer is the rank at the other end of a SEND/RECV (-1 for
 * compute ops); chunk of a SEND/RECV is the chunk of the op it serves on
 * this rank.
 *
 * Ownership: sc_sched_generate returns a schedule the caller frees with
 * sc_sched_free (NULL is fine); its arrays are read-only to callers. Cost:
 * O(p*m*v) time and memory for generate, check and peak_inflight.
 */
#ifndef SC_SCHED_H
#define SC_SCHED_H

#include "sc.h"
#include "engine.h"
#include "timeline.h"

#include <stddef.h>
#include <stdint.h>

/* Op kinds are the timeline's shared vocabulary (traces/timeline.h):
 * schedules use SC_OP_F, SC_OP_B, SC_OP_W, SC_OP_SEND_F, SC_OP_RECV_F,
 * SC_OP_SEND_B and SC_OP_RECV_B; sc_op_kind_name lives there too. */

typedef struct sc_sched_op {
    int32_t mb;
    int32_t peer;  /* other rank of a SEND/RECV, -1 otherwise */
    int16_t chunk; /* 0..v-1 */
    uint8_t kind;  /* sc_op_kind */
    uint8_t pad_;
} sc_sched_op;

/* Collects one rank's compute ops while a variant generates them. */
typedef struct sc_sched_sink sc_sched_sink;
/* Appends F/B/W(mb, chunk); SC_OK or SC_ENOMEM. */
sc_status sc_sched_emit(sc_sched_sink *sink, sc_op_kind kind, int mb, int chunk);

typedef struct sc_sched_impl {
    const char *name;
    const char *desc;  /* one line */
    int split_backward; /* 1: emits W ops (B = input gradient only) */
    /* NULL if (p, m, v) is valid, else a message written into buf. */
    const char *(*validate)(int p, int m, int v, char *buf, size_t cap);
    /* Emits rank's compute ops in execution order (only called after a
     * successful validate). */
    sc_status (*generate)(int p, int m, int v, int rank, sc_sched_sink *sink);
} sc_sched_impl;

extern const sc_sched_impl sc_sched_gpipe;
extern const sc_sched_impl sc_sched_1f1b;
extern const sc_sched_impl sc_sched_interleaved;
extern const sc_sched_impl sc_sched_zbh1;

/* All variants, NULL-terminated, in a fixed order. */
extern const sc_sched_impl *const sc_sched_all[];
/* By name ("gpipe", "1f1b", "interleaved", "zb-h1"); NULL if unknown. */
const sc_sched_impl *sc_sched_find(const char *name);

typedef struct sc_sched {
    const sc_sched_impl *impl;
    int p, m, v;      /* m: units (microbatches x slices when sliced) */
    int slices;       /* token slices per microbatch (0 or 1: none); unit u is slice
                         u % slices of microbatch u / slices */
    int32_t *off;     /* p+1 offsets: rank r's ops are ops[off[r] .. off[r+1]) */
    sc_sched_op *ops;
} sc_sched;

/* Validates and generates. SC_ENOTFOUND for an unknown name (the message
 * lists the known ones), SC_EINVAL for an invalid (p, m, v) with the
 * variant's message, SC_ENOMEM. */
sc_status sc_sched_generate(const char *name, int p, int m, int v, sc_sched **out,
                            sc_error *err);
void sc_sched_free(sc_sched *s);
/* The same with each microbatch cut into k token slices (TeraPipe): gpipe
 * or 1f1b over m·k units, unit u = slice u % k of microbatch u / k (sched.c
 * states the order); k <= 1 is sc_sched_generate. Ops' mb fields are units. */
sc_status sc_sched_generate_sliced(const char *name, int p, int m, int k, int v, sc_sched **out,
                                   sc_error *err);

const sc_sched_op *sc_sched_rank_ops(const sc_sched *s, int rank, int *n);
static inline int sc_sched_stage(const sc_sched *s, int rank, int chunk)
{
    return chunk * s->p + rank;
}

/* Checks the schedule is well formed and deadlock-free: every rank has
 * exactly one F and one B (and one W iff split_backward) per (mb, chunk), B
 * after F, W after B; every SEND/RECV sits where the rule above says with
 * the right peer; running all lists with blocking receives and non-blocking
 * sends finishes, each send matched by exactly one receive. SC_EINVAL with
 * a message naming the rank and op otherwise. O(p*m*v). */
sc_status sc_sched_check(const sc_sched *s, sc_error *err);

/* peak[r] = the largest number of (mb, chunk) activation sets rank r holds
 * at once, walking its list: held from F until the last backward op of that
 * (mb, chunk) (W when split_backward, else B). For interleaved each set is
 * one chunk's (1/v of the rank's layers). SC_ENOMEM or SC_OK. */
sc_status sc_sched_peak_inflight(const sc_sched *s, int *peak);

/* ---- sched_sim.c: a schedule on the engine with constant costs ---------
 * The reference for the step builder: rank r gets one resource; every op of
 * its list becomes one task on it, in list order: F/B/W take tf/tb/tw, SEND
 * and RECV take 0 on the rank's stream. A SEND additionally starts a
 * message task of duration t_comm on no resource (async, modelling the
 * transfer); the matching RECV depends on it, so a RECV blocks the rank's
 * stream until the message has arrived. No other dependency is needed: the
 * data flow F(mb, s-1) -> F(mb, s) and B(mb, s+1) -> B(mb, s) goes through
 * SEND -> message -> RECV, and F -> B -> W of one (mb, chunk) through the
 * rank's list order. */
typedef struct sc_sched_costs {
    double tf, tb, tw; /* per op of one chunk; tw ignored without W ops */
    double t_comm;     /* per point-to-point message, >= 0 */
} sc_sched_costs;

/* Adds the schedule's tasks to sim: one resource per rank (named
 * "rank<r>") unless rank_resource is non-NULL (p resource ids to use). If
 * task_of_op is non-NULL it receives off[p] task ids, one per op. Errors
 * are those of the engine's adds (SC_EINVAL, SC_ENOMEM). */
sc_status sc_sched_to_sim(const sc_sched *s, const sc_sched_costs *c, sc_sim *sim,
                          const int *rank_resource, int32_t *task_of_op, sc_error *err);
/* Builds a fresh engine, runs it and returns its makespan. */
sc_status sc_sched_simulate(const sc_sched *s, const sc_sched_costs *c, double *makespan,
                            sc_error *err);

#endif
