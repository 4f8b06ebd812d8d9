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

/* The engine's event queue (engine_queue.c): the same (time, seq) order as
 * the heap above, with the events of one time kept together in a bucket (a
 * FIFO) and the heap above ordering the buckets (a step's replicas finish in
 * lockstep, so its events come in large groups of equal times). push is O(1)
 * when its time's bucket is open, O(log b) for b buckets otherwise; pop O(1),
 * plus O(log b) when it empties a bucket. An empty queue needs no
 * allocation: sc_sim_queue q = {0}. */
typedef struct sc_sim_qev { /* an event of a bucket: its payload */
    int32_t id, type;
} sc_sim_qev;

typedef struct sc_sim_bucket {
    uint64_t bits;    /* its time's bits */
    sc_sim_qev first; /* the FIFO: first, then ev[0 .. n-2]; from the read-th on queued */
    sc_sim_qev *ev;
    int32_t n, read, cap;
    int32_t slot;      /* its slot in the table */
    int32_t next_free; /* the free list's next (index + 1, 0 none) while free */
} sc_sim_bucket;

typedef struct sc_sim_queue {
    sc_sim_bucket *bk;
    int32_t nbk, cap_bk, free_bk; /* free_bk: index + 1, 0 none */
    sc_sim_heap heap; /* the open buckets: (time, opening sequence), id = bucket */
    int32_t *slot; /* direct-mapped: a time's newest open bucket, or -1; smask + 1 slots */
    uint32_t smask;
    size_t n; /* events queued */
} sc_sim_queue;

void sc_sim_queue_free(sc_sim_queue *q);
/* Empties the queue (keeps the memory). */
void sc_sim_queue_clear(sc_sim_queue *q);
/* SC_OK or SC_ENOMEM (queue unchanged). time >= 0. */
sc_status sc_sim_queue_push(sc_sim_queue *q, double time, int32_t id, int32_t type);
/* Removes the earliest event; returns 0 if the queue was empty. */
int sc_sim_queue_pop(sc_sim_queue *q, double *time, int32_t *id, int32_t *type);
/* The earliest event's time without removing it; 0 if empty. */
int sc_sim_queue_next_time(const sc_sim_queue *q, double *time);

#endif
