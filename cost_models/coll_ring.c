/* coll_ring.c - ring collectives on one link (alpha-beta).
 *   allreduce       2(n-1)/n * S/beta + 2(n-1) alpha  (reduce-scatter then
 *                   allgather around the ring; Patarasuk & Yuan 2009)
 *   reduce-scatter  (n-1)/n * S/beta + (n-1) alpha     (S = whole input)
 *   allgather       (n-1)/n * S/beta + (n-1) alpha     (S = whole output)
 *   broadcast       S/beta + (n-1) alpha               (pipelined chain: the
 *                   message streams through n-1 hops in small chunks)
 *   alltoall        (n-1)/n * S/beta + (n-1) alpha     (pairwise exchange)
 * beta is the flat link's with the size ramps (sc_flat_beta, cost.h). Across
 * nodes the latency is NCCL's (sc_ring_latency): the steps that cross the network
 * at the inter alpha, the rest at the intra one.
 */
#include "cost_int.h"

double sc_ring_time(sc_coll op, double bytes, int n, double alpha, double beta)
{
    if (n <= 1)
        return 0;
    double f = (double)(n - 1) / n, steps = n - 1;
    switch (op) {
    case SC_COLL_ALLREDUCE:
        return 2 * f * bytes / beta + 2 * steps * alpha;
    case SC_COLL_BROADCAST:
        return bytes / beta + steps * alpha;
    case SC_COLL_REDUCE_SCATTER:
    case SC_COLL_ALLGATHER:
    case SC_COLL_ALLTOALL:
    default:
        return f * bytes / beta + steps * alpha;
    }
}

double sc_ring_latency(sc_coll op, int n, int nodes, double alpha_intra, double alpha_inter)
{
    if (n <= 1)
        return 0;
    double c = op == SC_COLL_ALLREDUCE ? 2 : 1, steps = c * (n - 1);
    double inter = nodes > 1 ? c * (nodes - 1) : 0;
    if (inter > steps)
        inter = steps;
    return (steps - inter) * alpha_intra + inter * alpha_inter;
}

static double ring_time(const sc_comm_links *l, sc_coll op, double bytes)
{
    return sc_ring_time(op, bytes, l->n, 0, sc_flat_beta(l, bytes)) +
           sc_ring_latency(op, l->n, l->nodes, l->alpha_intra, l->alpha_inter);
}

const sc_coll_algo sc_coll_ring = {
    "ring", "ring over all ranks; bandwidth-optimal, latency grows with n", ring_time};
