/* cost_int.h - shared only by the cost_models/ files (not a public API). */
#ifndef SC_COST_INT_H
#define SC_COST_INT_H

#include "cost.h"

#include <string.h>

/* One call of f FLOPs moving bytes on the leaf roofline (no efficiency.gemm):
 * the per-op overhead + max(f at eff(f), bytes at the HBM efficiency); 0
 * when it does nothing (cost_compute.c). */
double sc_cost_call_time(const sc_cluster *c, sc_dtype dt, double f, double bytes);

/* ZeRO 3's units over a stage's leaves, in order (sc_cost_zero3_gathered,
 * sc_stage_info unit_bytes): the parameters outside any layer
 * (sc_partition_layer_of; FSDP's root unit) and the largest layer's. */
typedef struct sc_units {
    const sc_module *cur; /* the layer of the last leaf added that had one */
    double root, layer, layer_max;
    int layers, has_root; /* layers seen (a unit each), and whether a leaf lay outside */
} sc_units;

/* Adds leaf's p parameters (per tp rank) to u (zeroed to start). */
static inline void sc_units_add(sc_units *u, const sc_module *leaf, double p)
{
    const sc_module *ly = sc_partition_layer_of(leaf);
    if (!ly) {
        u->root += p;
        u->has_root = 1;
        return;
    }
    if (ly != u->cur) {
        u->layer = 0;
        u->cur = ly;
        u->layers++;
    }
    u->layer += p;
    if (u->layer > u->layer_max)
        u->layer_max = u->layer;
}

/* Whether mod carries measured times of this cluster's GPU (measured_device
 * names it): then they, not a cost model, time it. */
static inline int sc_measured_here(const sc_cluster *c, const sc_module *mod)
{
    return mod->has_measured && mod->measured_device &&
           strcmp(mod->measured_device, c->gpu.name) == 0;
}

/* The single link a flat algorithm (ring, tree) sees: inside one node the
 * intra link; across nodes its slowest hop, with the inter alpha. A ring (or
 * a tree's edge) leaves a node once however many of the group's ranks sit
 * there, so the hop across has the node's NICs whole: the group alone on
 * the network. Concurrent groups sharing the NICs are the caller's to model
 * (the planner's estimate and the simulator do). */
static inline void sc_flat_link(const sc_comm_links *l, double *alpha, double *beta)
{
    if (l->nodes <= 1) {
        *alpha = l->alpha_intra;
        *beta = l->beta_intra;
        return;
    }
    *alpha = l->alpha_inter;
    *beta = l->per_node > 1 && l->beta_intra < l->beta_nic ? l->beta_intra : l->beta_nic;
}

/* The flat link's bandwidth for a collective of S bytes with the size ramps (cost.h
 * "size ramp"): each hop class at its plateau times its ramp at S, the ring bound
 * by its slowest hop (inside a node the intra link; across nodes the slower of the
 * ramped intra hops, when a node holds several members, and the ramped NICs). */
static inline double sc_flat_beta(const sc_comm_links *l, double bytes)
{
    double bi = l->beta_intra * sc_cost_ramp(bytes, l->s_half_intra, l->exp_intra);
    if (l->nodes <= 1)
        return bi;
    double be = l->beta_nic * sc_cost_ramp(bytes, l->s_half_inter, l->exp_inter);
    return l->per_node > 1 && bi < be ? bi : be;
}

/* Ring formulas on one link (n ranks, S bytes per nccl-tests convention),
 * shared by the ring, tree and hierarchical files. 0 for n <= 1. */
double sc_ring_time(sc_coll op, double bytes, int n, double alpha, double beta);

#endif
