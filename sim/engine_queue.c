/* engine_queue.c - the event queue: events bucketed by their exact time.
 *
 * A step's events come in large groups at equal times: the data-parallel
 * replicas (and the tensor-parallel ranks of a stage) run the same ops on
 * links of the same speed, so they finish at bit-identical times. The
 * 16,384-GPU gpt-175b step pops 11,062,272 events at 14,117 distinct times.
 * Keeping one FIFO per bucket of equal times (its first event in the bucket,
 * the others in an array, read from the front) and a heap of the buckets
 * turns most pushes into one probe and an append and most pops into reading
 * the next element; the heap moves once per bucket. A freed bucket keeps its
 * array for the next one.
 *
 * The heap is the engine's own (engine_heap.c), its entries the buckets:
 * (the time, the sequence in which the bucket was opened), payload the
 * bucket's index. A push finds its time's bucket through a direct-mapped
 * table of the time's bits (one probe, no chains, nothing to delete but its
 * own slot). The table may forget: a slot taken by another time, or a table
 * just grown, makes a push open a new bucket for a time that already has
 * one. The order stays exact because the heap pops buckets of one time in
 * the order they were opened and a slot only ever names its time's newest
 * bucket, so the events of one time pop bucket by bucket in push order: the
 * (time, insertion sequence) order of sc_sim_heap itself. -0.0 is stored
 * as +0.0.
 *
 * The free list of buckets holds index + 1 (0: empty), so a zeroed queue is a
 * valid empty one.
 */
#include "engine_int.h"

#include <string.h>

static inline uint64_t bits_of(double t)
{
    uint64_t b;
    memcpy(&b, &t, sizeof b);
    return b;
}

static inline uint32_t slot_of(uint64_t b, uint32_t mask)
{
    return (uint32_t)((b * 0x9E3779B97F4A7C15ull) >> 40) & mask;
}

void sc_sim_queue_free(sc_sim_queue *q)
{
    if (!q)
        return;
    for (int32_t b = 0; b < q->nbk; b++)
        sc_free(q->bk[b].ev);
    sc_free(q->bk);
    sc_sim_heap_free(&q->heap);
    sc_free(q->slot);
    memset(q, 0, sizeof *q);
}

void sc_sim_queue_clear(sc_sim_queue *q)
{
    /* every bucket back on the free list, in order, arrays kept */
    for (int32_t b = 0; b < q->nbk; b++)
        q->bk[b].next_free = b + 2 <= q->nbk ? b + 2 : 0;
    q->free_bk = q->nbk ? 1 : 0;
    sc_sim_heap_clear(&q->heap);
    q->n = 0;
    for (size_t i = 0; q->slot && i <= q->smask; i++)
        q->slot[i] = -1;
}

/* A larger (or the first) table, empty: the queue forgets which buckets
 * are open, which only costs new buckets for times already queued. */
static int grow_slots(sc_sim_queue *q)
{
    size_t size = q->slot ? 2 * ((size_t)q->smask + 1) : 1024;
    if (size > ((size_t)1 << 30))
        return 0; /* large enough: keep it */
    int32_t *t = sc_malloc(size * sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < size; i++)
        t[i] = -1;
    sc_free(q->slot);
    q->slot = t;
    q->smask = (uint32_t)(size - 1);
    return 0;
}

static int grow(void **p, int32_t *cap, size_t elem)
{
    if (*cap >= INT32_MAX / 2)
        return -1;
    int32_t c = *cap ? *cap * 2 : 16;
    void *np = sc_realloc(*p, (size_t)c * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = c;
    return 0;
}

/* Opens a bucket at time t (bits tb), in the heap and in slot s. */
static int32_t open_bucket(sc_sim_queue *q, double t, uint64_t tb, uint32_t s)
{
    int32_t b = q->free_bk - 1;
    if (b < 0) {
        if (q->nbk == q->cap_bk && grow((void **)&q->bk, &q->cap_bk, sizeof *q->bk))
            return -1;
        b = q->nbk;
        q->bk[b].ev = NULL;
        q->bk[b].cap = 0;
    }
    if (sc_sim_heap_push(&q->heap, t, b, 0))
        return -1; /* the bucket stays free (or unmade) */
    if (b == q->nbk)
        q->nbk++;
    else
        q->free_bk = q->bk[b].next_free;
    sc_sim_bucket *bk = &q->bk[b];
    bk->bits = tb;
    bk->n = bk->read = 0;
    bk->slot = (int32_t)s;
    q->slot[s] = b;
    return b;
}

sc_status sc_sim_queue_push(sc_sim_queue *q, double time, int32_t id, int32_t type)
{
    if (time == 0)
        time = 0; /* -0.0 -> +0.0: one bucket */
    uint64_t tb = bits_of(time);
    if ((sc_sim_heap_size(&q->heap) + 1) * 4 > (size_t)q->smask + 1 && grow_slots(q))
        return SC_ENOMEM;
    uint32_t s = slot_of(tb, q->smask);
    int32_t b = q->slot[s];
    sc_sim_bucket *bk = b >= 0 ? &q->bk[b] : NULL;
    sc_sim_qev e = {id, type};
    if (!bk || bk->bits != tb) {
        if ((b = open_bucket(q, time, tb, s)) < 0)
            return SC_ENOMEM;
        bk = &q->bk[b];
        bk->first = e; /* most buckets hold one event: no array */
    } else {
        if (bk->n - 1 == bk->cap && grow((void **)&bk->ev, &bk->cap, sizeof *bk->ev))
            return SC_ENOMEM; /* queue unchanged */
        bk->ev[bk->n - 1] = e;
    }
    bk->n++;
    q->n++;
    return SC_OK;
}

int sc_sim_queue_pop(sc_sim_queue *q, double *time, int32_t *id, int32_t *type)
{
    if (q->n == 0)
        return 0;
    const sc_sim_event *top = sc_sim_heap_peek(&q->heap);
    int32_t b = top->id;
    sc_sim_bucket *bk = &q->bk[b];
    const sc_sim_qev *e = bk->read ? &bk->ev[bk->read - 1] : &bk->first;
    *time = top->time;
    *id = e->id;
    *type = e->type;
    q->n--;
    if (++bk->read == bk->n) { /* emptied: out of its slot and the heap, freed */
        if (q->slot[bk->slot] == b)
            q->slot[bk->slot] = -1;
        bk->next_free = q->free_bk;
        q->free_bk = b + 1;
        sc_sim_event gone;
        sc_sim_heap_pop(&q->heap, &gone);
    }
    return 1;
}

int sc_sim_queue_next_time(const sc_sim_queue *q, double *time)
{
    if (q->n == 0)
        return 0;
    *time = sc_sim_heap_peek(&q->heap)->time;
    return 1;
}
