/* coll_tree.c - double binary tree (Sanders, Speck & Traeff 2009; NCCL 2.4
 * "trees"): two complementary binary trees each carry half the data, so the
 * bandwidth term matches the ring while the latency is logarithmic:
 *   allreduce   2(n-1)/n * S/beta + 2 ceil(log2 n) alpha  (reduce up, broadcast down)
 *   reduce-scatter, allgather  (n-1)/n * S/beta + ceil(log2 n) alpha
 *   broadcast   S/beta + ceil(log2 n) alpha
 *   alltoall    no tree form: the ring (pairwise) formula.
 */
#include <math.h>

#include "cost_int.h"

static double tree_time(const sc_comm_links *l, sc_coll op, double bytes)
{
    double a, b;
    int n = l->n;
    if (n <= 1)
        return 0;
    sc_flat_link(l, &a, &b);
    b = sc_flat_beta(l, bytes); /* with the size ramps (cost.h) */
    double steps = ceil(log2((double)n)), f = (double)(n - 1) / n;
    switch (op) {
    case SC_COLL_ALLREDUCE:
        return 2 * f * bytes / b + 2 * steps * a;
    case SC_COLL_REDUCE_SCATTER:
    case SC_COLL_ALLGATHER:
        return f * bytes / b + steps * a;
    case SC_COLL_BROADCAST:
        return bytes / b + steps * a;
    case SC_COLL_ALLTOALL:
    default:
        return sc_ring_time(op, bytes, n, a, b);
    }
}

const sc_coll_algo sc_coll_tree = {
    "tree", "double binary tree; ring bandwidth, 2 log2(n) latency steps", tree_time};
