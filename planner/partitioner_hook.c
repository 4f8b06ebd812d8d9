/* partitioner_hook.c - the planner's partitioners by name.
 *
 * One partition serves every candidate of a shape (pp, v, tp, mbs, dp), so
 * "tree" and "optimal" partition under the most frugal memory settings the
 * search may pick (ZeRO 3, full recompute, one microbatch in flight): a
 * split that cannot fit even so is no split at all (SC_ENOFIT and the shape
 * is skipped), and each candidate's own settings are checked on the result.
 * Shared groups follow the replicate policy (as the simulator models them)
 * unless the request asks for strict. */
#include "partitioner_hook.h"
#include "partitioner.h"

#include <string.h>

sc_status sc_planner_partition(const char *name, const sc_part_request *rq, sc_partition *out,
                               sc_error *err)
{
    int S = rq->pp * rq->v;
    if (!strcmp(name, "uniform"))
        return sc_partition_uniform(rq->m, S, out, err);
    if (strcmp(name, "tree") && strcmp(name, "optimal"))
        return sc_err(err, SC_ENOTFOUND, "plan: unknown partitioner '%s' (%s)", name,
                      sc_planner_partitioners());
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, rq->m, rq->c, S);
    cfg.tp = rq->tp;
    cfg.mbs = rq->mbs;
    cfg.dp = rq->dp;
    cfg.zero = 3;
    cfg.recompute = SC_RECOMPUTE_FULL;
    cfg.pp = rq->pp;
    cfg.v = rq->v;
    cfg.inflight = NULL;
    cfg.inflight_max = 1;
    cfg.mem_weight = rq->memory_weight >= 0 ? rq->memory_weight
                     : rq->optimize_memory  ? SC_PARTITION_W_MEMORY
                                            : SC_PARTITION_W_SPEED;
    cfg.shared = rq->shared_strict ? SC_SHARED_STRICT : SC_SHARED_REPLICATE;
    return sc_partition_by_method(name, &cfg, out, err);
}

const char *sc_planner_default_partitioner(void) { return "optimal"; }

int sc_planner_has_partitioner(const char *name)
{
    return !strcmp(name, "uniform") || !strcmp(name, "tree") || !strcmp(name, "optimal");
}

const char *sc_planner_partitioners(void) { return "uniform, tree, optimal"; }
