/* coll_tree.c - tree allreduces, and "auto", NCCL's choice between its ring
 * and its tree.
 *
 * Within one node (a binary tree over the ranks; Sanders, Speck & Traeff 2009):
 *   allreduce   2(n-1)/n * S/beta + 2 ceil(log2 n) alpha  (reduce up, broadcast down)
 *   reduce-scatter, allgather  (n-1)/n * S/beta + ceil(log2 n) alpha
 *   broadcast   S/beta + ceil(log2 n) alpha
 *   alltoall    no tree form: the ring (pairwise) formula.
 *
 * Across k >= 2 nodes, p ranks a node, NCCL's tree allreduce (NCCL 2.4 and
 * later): a chain through each node's ranks, and two complementary binary
 * trees between the nodes, each carrying half of S, pipelined:
 *   allreduce  2((p-1) alpha_intra + ceil(log2 k) alpha_inter)
 *              + max(2(p-1)/p S / beta_intra(S), f(k) S / beta_nic(S))
 * beta_nic: the node's NICs whole (the tree leaves a node through all of them,
 * one channel a NIC), each class at its size ramp (cost.h). f(k), the bytes a
 * node's NICs move each way per byte of S (sc_tree_nic_factor):
 *   k = 2: 1. The two trees are the two directions of the one edge: each node
 *          sends S/2 up one tree and S/2 down the other. A ring of the same 2p
 *          ranks moves 2(2p-1)/(2p) S, nearly twice as much: nccl-tests on two
 *          8-GPU nodes report a busbw above the NICs' rate ([N7], [N8] in
 *          presets.c), which a ring cannot reach.
 *   k > 2: 2. A node interior to one tree (a parent and two children: three
 *          edges of S/2 each way) is a leaf of the other (one edge): 2S. At
 *          k = 3 the busiest node moves 1.5 S; NCCL's tuner counts 2 S beyond
 *          two nodes (its tree model takes the inter-node bandwidth and halves
 *          it), and the three-node sweep [N4] plateaus as a ring does, so
 *          the model follows the tuner. A 1 GiB allreduce on 2, 3 and 4 EFA
 *          nodes (NVIDIA/nccl#527) took 1.84 and 2.00 times as long on 3 and 4
 *          as on 2; the model gives 2.00 and 2.00 (cost_efa_node_count_trend).
 * The other collectives have no tree in NCCL across nodes: the ring's.
 *
 * auto (the default algorithm): an allreduce spanning nodes runs as the
 * tree or the ring, whichever this model times faster for the group alone
 * on the network (NCCL's tuner chooses per call between the same two by
 * size and node count); every other collective, and every collective within
 * one node, runs as the ring. The simulator and the planner's estimate make
 * the same choice (sc_coll_tree_wins).
 */
#include <math.h>

#include "cost_int.h"

double sc_tree_nic_factor(int nodes)
{
    return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
}

double sc_tree_latency(int per_node, int nodes, double alpha_intra, double alpha_inter)
{
    if (nodes <= 1)
        return 0;
    return 2 * ((per_node - 1) * alpha_intra + ceil(log2((double)nodes)) * alpha_inter);
}

double sc_tree_allreduce_time(double bytes, int per_node, int nodes, double alpha_intra,
                              double beta_intra, double alpha_inter, double beta_nic)
{
    if (nodes <= 1)
        return 0;
    double ti = per_node > 1 ? 2.0 * (per_node - 1) / per_node * bytes / beta_intra : 0;
    double te = sc_tree_nic_factor(nodes) * bytes / beta_nic;
    return sc_tree_latency(per_node, nodes, alpha_intra, alpha_inter) + fmax(ti, te);
}

/* The tree of links l at S bytes, across nodes (l->nodes >= 2). */
static double tree_across(const sc_comm_links *l, double bytes)
{
    double bi = l->beta_intra * sc_cost_ramp(bytes, l->s_half_intra, l->exp_intra);
    double be = l->beta_nic * sc_cost_ramp(bytes, l->s_half_inter, l->exp_inter);
    return sc_tree_allreduce_time(bytes, l->per_node, l->nodes, l->alpha_intra, bi,
                                  l->alpha_inter, be);
}

static double tree_time(const sc_comm_links *l, sc_coll op, double bytes)
{
    double a, b;
    int n = l->n;
    if (n <= 1)
        return 0;
    if (l->nodes > 1)
        return op == SC_COLL_ALLREDUCE ? tree_across(l, bytes)
                                       : sc_coll_ring.time(l, op, bytes);
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
    "tree", "within a node a binary tree (log2 n latency); across nodes NCCL's allreduce tree "
    "(a chain per node, two binary trees between nodes)", tree_time};

/* An allreduce of S bytes over n ranks, p a node, across nodes: the ring's time (bound
 * by its slowest hop, as sc_flat_link; NCCL's latency, sc_ring_latency) and the tree's,
 * from the links' alphas and their bandwidths at S (bi per GPU, be the node's NICs). */
static void ring_and_tree(double bytes, int n, int p, double ai, double bi, double ae, double be,
                          double *ring, double *tree)
{
    int k = (n + p - 1) / p;
    *ring = sc_ring_time(SC_COLL_ALLREDUCE, bytes, n, 0, p > 1 && bi < be ? bi : be) +
            sc_ring_latency(SC_COLL_ALLREDUCE, n, k, ai, ae);
    *tree = sc_tree_allreduce_time(bytes, p, k, ai, bi, ae, be);
}

int sc_coll_tree_wins(const sc_cluster *c, double bytes, int n, int per_node, const double r[2])
{
    if (per_node < 1 || per_node >= n || !(bytes > 0))
        return 0;
    double be = c->inter.nics_per_node * c->inter.nic_bytes_per_s *
                c->eff.bw_eff[SC_LINK_INTER] * r[1];
    if (!(be > 0))
        return 0;
    double ring, tree;
    ring_and_tree(bytes, n, per_node, c->eff.alpha_s[SC_LINK_INTRA],
                  c->intra.bytes_per_s * c->eff.bw_eff[SC_LINK_INTRA] * r[0],
                  c->eff.alpha_s[SC_LINK_INTER], be, &ring, &tree);
    return tree < ring;
}

static double auto_time(const sc_comm_links *l, sc_coll op, double bytes)
{
    if (op != SC_COLL_ALLREDUCE || l->nodes <= 1)
        return sc_coll_ring.time(l, op, bytes);
    double ring, tree;
    ring_and_tree(bytes, l->n, l->per_node, l->alpha_intra,
                  l->beta_intra * sc_cost_ramp(bytes, l->s_half_intra, l->exp_intra),
                  l->alpha_inter, l->beta_nic * sc_cost_ramp(bytes, l->s_half_inter, l->exp_inter),
                  &ring, &tree);
    return tree < ring ? tree : ring;
}

const sc_coll_algo sc_coll_auto = {
    "auto", "NCCL's choice: an allreduce across nodes as the faster of ring and tree, the rest "
    "as a ring", auto_time};
