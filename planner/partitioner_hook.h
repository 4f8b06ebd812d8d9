/* partitioner_hook.h - the planner's partitioners by name. Each request is
 * one partition shape: pp·v stages for a tp degree, microbatch size and dp
 * degree. */
#ifndef SC_PARTITIONER_HOOK_H
#define SC_PARTITIONER_HOOK_H

#include "cluster.h"
#include "model.h"
#include "partition.h"
#include "sc.h"

typedef struct sc_part_request {
    const sc_model *m;
    const sc_cluster *c;
    int pp, v, tp, mbs, dp;
    double memory_weight;   /* tree: blend of time and memory */
    int optimize_memory;
    int shared_strict;
} sc_part_request;

/* "uniform", "tree" or "optimal". */
sc_status sc_planner_partition(const char *name, const sc_part_request *rq, sc_partition *out,
                               sc_error *err);
const char *sc_planner_default_partitioner(void);
int sc_planner_has_partitioner(const char *name);
const char *sc_planner_partitioners(void); /* "uniform, tree, optimal" */

#endif
