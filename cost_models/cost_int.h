/* cost_int.h - shared only by the cost_models/ files (not a public API). */
#ifndef SC_COST_INT_H
#define SC_COST_INT_H

#include "cost.h"

/* The single link a flat algorithm (ring, tree) sees: inside one node the
 * intra link; across nodes its slowest hop (min of the intra link and this
 * GPU's NIC share; only the NIC when one GPU per node) with the inter alpha. */
static inline void sc_flat_link(const sc_comm_links *l, double *alpha, double *beta)
{
    if (l->nodes <= 1) {
        *alpha = l->alpha_intra;
        *beta = l->beta_intra;
        return;
    }
    *alpha = l->alpha_inter;
    *beta = l->per_node > 1 && l->beta_intra < l->beta_inter ? l->beta_intra : l->beta_inter;
}

/* Ring formulas on one link (n ranks, S bytes per nccl-tests convention),
 * shared by the ring, tree and hierarchical files. 0 for n <= 1. */
double sc_ring_time(sc_coll op, double bytes, int n, double alpha, double beta);

#endif
