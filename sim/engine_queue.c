/* engine_queue.c - the event queue: events bucketed by their exact time.
 *
 * A step's events come in large groups at equal times: the data-parallel
 * replicas (and the tensor-parallel ranks of a stage) run the same ops on
 * links of the same speed, so they finish at bit-identical times. The
 * 16,384-GPU gpt-175b step pops 11,062,272 events at 14,117 distinct times.
 * Keeping one FIFO per bucket of equal times (its first event in the bucket,
 * the others in an array, read from the front)
 * and a heap of the buckets turns most pushes into one probe and an append
 * and most pops into reading the next element; the heap moves once per
 * bucket. A freed bucket keeps its array for the next one.
 *
 * A push finds its time's bucket through a direct-mapped table of the time's
 * bits (one probe, no chains, nothing to delete but its own slot). The table
 * may forget: a slot taken by another time, or a table just grown, makes a
 * push open a new bucket for a time that already has one. The order stays
 * exact because the heap orders buckets by (time, the sequence in which they
 * were opened) and a slot only ever names its time's newest bucket, so the
 * events of one time pop bucket by bucket in push order: the (time,
 * insertion sequence) order of sc_sim_heap. -0.0 is stored as +0.0.
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

/* Heap order: (time, opening sequence); times are >= 0, whose bits order
 * like the numbers. */
static inline unsigned __int128 key(const sc_sim_qtime *a)
{
    return ((unsigned __int128)a->bits << 64) | a->seq;
}

static inline int before(const sc_sim_qtime *a, const sc_sim_qtime *b)
{
    return key(a) < key(b); /* branch-free, as engine_heap.c */
}

/* Puts e at heap position i (a hole), moving it up past later parents. */
static void sift_up(sc_sim_queue *q, size_t i, sc_sim_qtime e)
{
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (!before(&e, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
}

void sc_sim_queue_free(sc_sim_queue *q)
{
    if (!q)
        return;
    for (int32_t b = 0; b < q->nbk; b++)
        sc_free(q->bk[b].ev);
    sc_free(q->bk);
    sc_free(q->heap);
    sc_free(q->slot);
    memset(q, 0, sizeof *q);
}

void sc_sim_queue_clear(sc_sim_queue *q)
{
    /* every bucket back on the free list, in order, arrays kept */
    for (int32_t b = 0; b < q->nbk; b++)
        q->bk[b].next_free = b + 2 <= q->nbk ? b + 2 : 0;
    q->free_bk = q->nbk ? 1 : 0;
    q->nheap = 0;
    q->n = 0;
    q->next_seq = 0;
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

/* Opens a bucket at time bits tb, in the heap and in slot s. */
static int32_t open_bucket(sc_sim_queue *q, uint64_t tb, uint32_t s)
{
    if (q->nheap == (size_t)q->cap_heap && grow((void **)&q->heap, &q->cap_heap, sizeof *q->heap))
        return -1;
    int32_t b = q->free_bk - 1;
    if (b >= 0) {
        q->free_bk = q->bk[b].next_free;
    } else {
        if (q->nbk == q->cap_bk && grow((void **)&q->bk, &q->cap_bk, sizeof *q->bk))
            return -1;
        b = q->nbk++;
        q->bk[b].ev = NULL;
        q->bk[b].cap = 0;
    }
    sc_sim_bucket *bk = &q->bk[b];
    bk->n = bk->read = 0;
    bk->slot = (int32_t)s;
    q->slot[s] = b;
    sift_up(q, q->nheap++, (sc_sim_qtime){tb, q->next_seq++, b});
    return b;
}

sc_status sc_sim_queue_push(sc_sim_queue *q, double time, int32_t id, int32_t type)
{
    if (time == 0)
        time = 0; /* -0.0 -> +0.0: one bucket */
    uint64_t tb = bits_of(time);
    if ((q->nheap + 1) * 4 > (size_t)q->smask + 1 && grow_slots(q))
        return SC_ENOMEM;
    uint32_t s = slot_of(tb, q->smask);
    int32_t b = q->slot[s];
    sc_sim_bucket *bk = b >= 0 ? &q->bk[b] : NULL;
    sc_sim_qev e = {id, type};
    if (!bk || bk->bits != tb) {
        if ((b = open_bucket(q, tb, s)) < 0)
            return SC_ENOMEM;
        bk = &q->bk[b];
        bk->bits = tb;
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

/* Removes the heap's top bucket (emptied) from its slot and the heap. */
static void drop_top(sc_sim_queue *q)
{
    int32_t b = q->heap[0].b;
    if (q->slot[q->bk[b].slot] == b)
        q->slot[q->bk[b].slot] = -1;
    q->bk[b].next_free = q->free_bk;
    q->free_bk = b + 1;
    /* Floyd's deletion of the top, as in engine_heap.c */
    size_t n = --q->nheap;
    if (n == 0)
        return;
    sc_sim_qtime last = q->heap[n];
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n)
            break;
        size_t best = c;
        unsigned __int128 kb = key(&q->heap[c]);
        size_t end = c + 4 < n ? c + 4 : n;
        for (size_t j = c + 1; j < end; j++) {
            unsigned __int128 kj = key(&q->heap[j]);
            if (kj < kb) {
                kb = kj;
                best = j;
            }
        }
        q->heap[i] = q->heap[best];
        i = best;
    }
    sift_up(q, i, last);
}

int sc_sim_queue_pop(sc_sim_queue *q, double *time, int32_t *id, int32_t *type)
{
    if (q->n == 0)
        return 0;
    sc_sim_bucket *bk = &q->bk[q->heap[0].b];
    memcpy(time, &q->heap[0].bits, sizeof *time);
    const sc_sim_qev *e = bk->read ? &bk->ev[bk->read - 1] : &bk->first;
    *id = e->id;
    *type = e->type;
    q->n--;
    if (++bk->read == bk->n)
        drop_top(q);
    return 1;
}

int sc_sim_queue_next_time(const sc_sim_queue *q, double *time)
{
    if (q->n == 0)
        return 0;
    memcpy(time, &q->heap[0].bits, sizeof *time);
    return 1;
}
