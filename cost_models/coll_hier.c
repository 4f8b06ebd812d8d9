/* coll_hier.c - hierarchical (2D) collectives: p = ranks per node on the
 * intra link (alpha_i, beta_i), k = nodes on the inter link (alpha_e, beta_e
 * = this GPU's NIC share), each phase a ring (sc_ring_time):
 *   allreduce       RS_intra(S) + AR_inter(S/p) + AG_intra(S)
 *                   i.e. 2(p-1)/p S/beta_i + 2(p-1) alpha_i
 *                      + 2(k-1)/k (S/p)/beta_e + 2(k-1) alpha_e
 *   reduce-scatter  RS_intra(S) + RS_inter(S/p)
 *   allgather       AG_inter(S/p) + AG_intra(S)
 *   broadcast       scatter intra ((p-1)/p S/beta_i + (p-1) alpha_i), chain
 *                   broadcast of each S/p slice across nodes, AG_intra(S)
 *   alltoall        (p-1)/n S/beta_i + (p-1) alpha_i + (n-p)/n S/beta_e
 *                   + (k-1) alpha_e (intra and inter parts in sequence)
 * On one node (k = 1) it is the intra ring; with one rank per node (p = 1)
 * the inter ring.
 */
#include "cost_int.h"

static double hier_time(const sc_comm_links *l, sc_coll op, double bytes)
{
    int n = l->n, p = l->per_node, k = l->nodes;
    double ai = l->alpha_intra, ae = l->alpha_inter;
    if (n <= 1)
        return 0;
    double slice = bytes / p;
    /* the size ramps (cost.h): intra phases move S, the inter phase S/p */
    double bi = l->beta_intra * sc_cost_ramp(bytes, l->s_half_intra, l->exp_intra);
    double be = l->beta_inter * sc_cost_ramp(p <= 1 ? bytes : slice, l->s_half_inter, l->exp_inter);
    if (k <= 1)
        return sc_ring_time(op, bytes, n, ai, bi);
    if (p <= 1)
        return sc_ring_time(op, bytes, n, ae, be);
    switch (op) {
    case SC_COLL_ALLREDUCE:
        return sc_ring_time(SC_COLL_REDUCE_SCATTER, bytes, p, ai, bi) +
               sc_ring_time(SC_COLL_ALLREDUCE, slice, k, ae, be) +
               sc_ring_time(SC_COLL_ALLGATHER, bytes, p, ai, bi);
    case SC_COLL_REDUCE_SCATTER:
        return sc_ring_time(SC_COLL_REDUCE_SCATTER, bytes, p, ai, bi) +
               sc_ring_time(SC_COLL_REDUCE_SCATTER, slice, k, ae, be);
    case SC_COLL_ALLGATHER:
        return sc_ring_time(SC_COLL_ALLGATHER, slice, k, ae, be) +
               sc_ring_time(SC_COLL_ALLGATHER, bytes, p, ai, bi);
    case SC_COLL_BROADCAST:
        return sc_ring_time(SC_COLL_REDUCE_SCATTER, bytes, p, ai, bi) + /* scatter costs as RS */
               sc_ring_time(SC_COLL_BROADCAST, slice, k, ae, be) +
               sc_ring_time(SC_COLL_ALLGATHER, bytes, p, ai, bi);
    case SC_COLL_ALLTOALL:
    default:
        return (double)(p - 1) / n * bytes / bi + (p - 1) * ai +
               (double)(n - p) / n * bytes / be + (k - 1) * ae;
    }
}

const sc_coll_algo sc_coll_hier = {
    "hier", "intra-node reduce-scatter, inter-node allreduce on the NICs, intra-node allgather",
    hier_time};
