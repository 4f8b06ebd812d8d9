/* partitioner_hook.c - dispatch to the partitioners by name. */
#include "partitioner_hook.h"

#include <string.h>

sc_status sc_planner_partition(const char *name, const sc_part_request *rq, sc_partition *out,
                               sc_error *err)
{
    int S = rq->pp * rq->v;
    if (!strcmp(name, "uniform"))
        return sc_partition_uniform(rq->m, S, out, err);
    return sc_err(err, SC_ENOTFOUND, "plan: unknown partitioner '%s' (%s)", name,
                  sc_planner_partitioners());
}

const char *sc_planner_default_partitioner(void) { return "uniform"; }

int sc_planner_has_partitioner(const char *name) { return !strcmp(name, "uniform"); }

const char *sc_planner_partitioners(void) { return "uniform"; }
