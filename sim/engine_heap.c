/* engine_heap.c - the event queue: a 4-ary min-heap on (time, seq).
 *
 * Trade-off: a 4-ary heap halves the depth of a binary one and keeps the
 * children of a node in one or two cache lines; with Floyd's bottom-up
 * deletion a pop costs ~log4(n) levels of 3 comparisons and the final
 * sift-up is usually empty. (time, seq) is compared as one 128-bit unsigned
 * key: times are >= 0, and the IEEE-754 bits of non-negative doubles order
 * like the numbers, so the comparison is branch-free.
 */
#include "engine_int.h"

#include <string.h>

typedef unsigned __int128 key_t128;

static inline key_t128 key(const sc_sim_event *e)
{
    uint64_t bits;
    memcpy(&bits, &e->time, sizeof bits);
    return ((key_t128)bits << 64) | e->seq;
}

void sc_sim_heap_free(sc_sim_heap *h)
{
    if (!h)
        return;
    sc_free(h->ev);
    h->ev = NULL;
    h->n = h->cap = 0;
    h->next_seq = 0;
}

void sc_sim_heap_clear(sc_sim_heap *h)
{
    h->n = 0;
    h->next_seq = 0;
}

sc_status sc_sim_heap_push(sc_sim_heap *h, double time, int32_t id, int32_t type)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        sc_sim_event *ev = sc_realloc(h->ev, cap * sizeof *ev);
        if (!ev)
            return SC_ENOMEM;
        h->ev = ev;
        h->cap = cap;
    }
    if (time == 0)
        time = 0; /* -0.0 -> +0.0 so the bit order holds */
    sc_sim_event e = {time, h->next_seq++, id, type};
    key_t128 k = key(&e);
    sc_sim_event *a = h->ev;
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (k >= key(&a[parent]))
            break;
        a[i] = a[parent];
        i = parent;
    }
    a[i] = e;
    return SC_OK;
}

int sc_sim_heap_pop(sc_sim_heap *h, sc_sim_event *out)
{
    if (h->n == 0)
        return 0;
    sc_sim_event *a = h->ev;
    *out = a[0];
    size_t n = --h->n;
    if (n == 0)
        return 1;
    sc_sim_event last = a[n];
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n)
            break;
        size_t best = c;
        key_t128 kb = key(&a[c]);
        size_t end = c + 4 < n ? c + 4 : n;
        for (size_t j = c + 1; j < end; j++) {
            key_t128 kj = key(&a[j]);
            if (kj < kb) {
                kb = kj;
                best = j;
            }
        }
        a[i] = a[best];
        i = best;
    }
    key_t128 kl = key(&last);
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (kl >= key(&a[parent]))
            break;
        a[i] = a[parent];
        i = parent;
    }
    a[i] = last;
    return 1;
}

const sc_sim_event *sc_sim_heap_peek(const sc_sim_heap *h)
{
    return h->n ? &h->ev[0] : NULL;
}

size_t sc_sim_heap_size(const sc_sim_heap *h)
{
    return h->n;
}
