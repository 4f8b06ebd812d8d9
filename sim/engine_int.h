/* engine_int.h - what only the engine's own files (and its tests) share: the
 * event queue.
 *
 * The queue is a 4-ary min-heap of events ordered by (time, seq), where seq
 * is the insertion sequence assigned by sc_sim_heap_push: events at equal
 * times pop in the order they were pushed, so runs are deterministic. The
 * heap is owned by whoever embeds it (the engine handle), never global.
 * push is amortised O(log n) (the array grows by doubling, no per-event
 * allocation once grown), pop O(log n), peek and size O(1).
 */
#ifndef SC_ENGINE_INT_H
#define SC_ENGINE_INT_H

#include "sc.h"

#include <stdint.h>

typedef struct sc_sim_event {
    double time;
    uint64_t seq;  /* insertion sequence, assigned by push */
    int32_t id;    /* payload: a task id */
    int32_t type;  /* payload: what happens */
} sc_sim_event;

typedef struct sc_sim_heap {
    sc_sim_event *ev;
    size_t n, cap;
    uint64_t next_seq;
} sc_sim_heap;

/* An empty heap needs no allocation: sc_sim_heap h = {0}. */
void sc_sim_heap_free(sc_sim_heap *h);
/* Resets to empty (keeps the memory) and restarts the sequence at 0. */
void sc_sim_heap_clear(sc_sim_heap *h);
/* SC_OK or SC_ENOMEM (heap unchanged). */
sc_status sc_sim_heap_push(sc_sim_heap *h, double time, int32_t id, int32_t type);
/* Remove the earliest event into *out; returns 0 if the heap was empty. */
int sc_sim_heap_pop(sc_sim_heap *h, sc_sim_event *out);
/* The earliest event without removing it, or NULL if empty. */
const sc_sim_event *sc_sim_heap_peek(const sc_sim_heap *h);
size_t sc_sim_heap_size(const sc_sim_heap *h);

#endif
