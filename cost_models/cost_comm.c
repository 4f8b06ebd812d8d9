/* cost_comm.c - link parameters of a group, the algorithm registry, point to
 * point, and the nccl-tests bus-bandwidth factors; see cost.h. */
#include <math.h>
#include <string.h>

#include "cost_int.h"

static const char *const coll_names[SC_COLL_N] = {"allreduce", "reduce_scatter", "allgather",
                                                  "broadcast", "alltoall"};

const char *sc_coll_name(sc_coll op)
{
    return (unsigned)op < SC_COLL_N ? coll_names[op] : "?";
}

int sc_coll_parse(const char *s)
{
    for (int i = 0; s && i < SC_COLL_N; i++)
        if (strcmp(s, coll_names[i]) == 0)
            return i;
    if (s && strcmp(s, "reduce-scatter") == 0)
        return SC_COLL_REDUCE_SCATTER;
    return -1;
}

static const sc_coll_algo *const algos[] = {&sc_coll_auto, &sc_coll_ring, &sc_coll_tree,
                                             &sc_coll_hier};

const sc_coll_algo *const *sc_coll_algos(int *n)
{
    *n = (int)SC_ARRAY_LEN(algos);
    return algos;
}

const sc_coll_algo *sc_coll_find(const char *name)
{
    if (!name)
        return &sc_coll_auto;
    for (size_t i = 0; i < SC_ARRAY_LEN(algos); i++)
        if (strcmp(algos[i]->name, name) == 0)
            return algos[i];
    return NULL;
}

static int has_network(const sc_cluster *c)
{
    return c->inter.nics_per_node >= 1 && c->inter.nic_bytes_per_s > 0;
}

sc_status sc_cost_links(const sc_cluster *c, int n, int per_node, sc_comm_links *out,
                        sc_error *err)
{
    if (n < 1)
        return sc_err(err, SC_EINVAL, "%s: a group needs at least 1 rank (got %d)", c->name, n);
    if (per_node > n)
        per_node = n;
    if (per_node < 1 || per_node > c->gpus_per_node)
        return sc_err(err, SC_EINVAL, "%s: %d ranks per node is out of range [1, %d]", c->name,
                      per_node, c->gpus_per_node);
    sc_comm_links l;
    l.n = n;
    l.per_node = per_node;
    l.nodes = (n + per_node - 1) / per_node;
    if (l.nodes > 1 && !has_network(c))
        return sc_err(err, SC_ENOTSUP,
                      "%s: a group of %d ranks with %d per node spans nodes, and the cluster "
                      "has no inter-node network",
                      c->name, n, per_node);
    l.alpha_intra = c->eff.alpha_s[SC_LINK_INTRA];
    l.beta_intra = c->intra.bytes_per_s * c->eff.bw_eff[SC_LINK_INTRA];
    l.alpha_inter = c->eff.alpha_s[SC_LINK_INTER];
    l.beta_nic = c->inter.nics_per_node * c->inter.nic_bytes_per_s * c->eff.bw_eff[SC_LINK_INTER];
    l.beta_inter = l.beta_nic / per_node;
    l.s_half_intra = c->eff.s_half_bytes[SC_LINK_INTRA];
    l.exp_intra = c->eff.ramp_exp[SC_LINK_INTRA];
    l.s_half_inter = c->eff.s_half_bytes[SC_LINK_INTER];
    l.exp_inter = c->eff.ramp_exp[SC_LINK_INTER];
    if (l.nodes <= 1 && per_node > 1 && !(l.beta_intra > 0))
        return sc_err(err, SC_ENOTSUP, "%s: no intra-node bandwidth (intra.bytes_per_s is 0)",
                      c->name);
    *out = l;
    return SC_OK;
}

sc_status sc_cost_coll(const sc_cluster *c, const char *algo, sc_coll op, double bytes, int n,
                       int per_node, double *time_s, sc_error *err)
{
    const sc_coll_algo *a = sc_coll_find(algo);
    if (!a)
        return sc_err(err, SC_ENOTFOUND, "no collective algorithm named \"%.64s\" (auto, ring, "
                      "tree, hier)", algo);
    if ((unsigned)op >= SC_COLL_N)
        return sc_err(err, SC_EINVAL, "collective %d is not a collective", (int)op);
    if (!(bytes >= 0) || bytes > 1e18)
        return sc_err(err, SC_EINVAL, "%s: %s of %g bytes is out of range", c->name,
                      sc_coll_name(op), bytes);
    sc_comm_links l;
    sc_status st = sc_cost_links(c, n, per_node, &l, err);
    if (st)
        return st;
    /* each op at its own share of each link (sc_cost_coll_share) */
    l.beta_intra *= sc_cost_coll_share(c, SC_LINK_INTRA, op);
    l.beta_nic *= sc_cost_coll_share(c, SC_LINK_INTER, op);
    l.beta_inter *= sc_cost_coll_share(c, SC_LINK_INTER, op);
    /* a measured size factor of the group's class divides the whole time (sc_size_curve) */
    *time_s = a->time(&l, op, bytes) / sc_cluster_coll_factor(c, l.nodes, bytes);
    return SC_OK;
}

sc_status sc_cost_p2p(const sc_cluster *c, double bytes, int inter, int sharing, double *time_s,
                      sc_error *err)
{
    if (!(bytes >= 0) || bytes > 1e18)
        return sc_err(err, SC_EINVAL, "%s: a message of %g bytes is out of range", c->name, bytes);
    if (!inter) {
        double beta = c->intra.bytes_per_s * sc_cluster_p2p_eff(c, SC_LINK_INTRA);
        if (!(beta > 0))
            return sc_err(err, SC_ENOTSUP, "%s: no intra-node bandwidth (intra.bytes_per_s is 0)",
                          c->name);
        *time_s = (c->eff.alpha_s[SC_LINK_INTRA] + bytes / beta) /
                  sc_size_curve_at(&c->eff.p2p_curve[SC_LINK_INTRA], bytes);
        return SC_OK;
    }
    if (sharing < 1 || sharing > c->gpus_per_node)
        return sc_err(err, SC_EINVAL, "%s: %d GPUs sharing the NICs is out of range [1, %d]",
                      c->name, sharing, c->gpus_per_node);
    if (!has_network(c))
        return sc_err(err, SC_ENOTSUP, "%s: no inter-node network", c->name);
    double beta = c->inter.nics_per_node * c->inter.nic_bytes_per_s *
                  sc_cluster_p2p_eff(c, SC_LINK_INTER) / sharing;
    *time_s = (c->eff.alpha_s[SC_LINK_INTER] + bytes / beta) /
              sc_size_curve_at(&c->eff.p2p_curve[SC_LINK_INTER], bytes);
    return SC_OK;
}

double sc_cost_ramp(double bytes, double s_half, double exponent)
{
    if (!(s_half > 0) || !(bytes > 0))
        return 1;
    return 1.0 / (1.0 + pow(s_half / bytes, exponent > 0 ? exponent : 1));
}

double sc_cost_coll_ramp(const sc_cluster *c, sc_link l, double bytes)
{
    if ((unsigned)l >= SC_LINK_N)
        return 1;
    return sc_cost_ramp(bytes, c->eff.s_half_bytes[l], c->eff.ramp_exp[l]);
}

/* nccl-tests doc/PERFORMANCE.md: busbw = algbw * factor, the factor making
 * busbw comparable to the link bandwidth whatever n. */
double sc_cost_busbw_factor(sc_coll op, int n)
{
    if (n < 1)
        return 0;
    switch (op) {
    case SC_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case SC_COLL_BROADCAST:
        return 1;
    case SC_COLL_REDUCE_SCATTER:
    case SC_COLL_ALLGATHER:
    case SC_COLL_ALLTOALL:
        return (double)(n - 1) / n;
    default:
        return 0;
    }
}
