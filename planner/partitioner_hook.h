/* partitioner_hook.h - the planner's partitioners by name, in one table (as
 * schedules are in sim/schedule.h and collective algorithms in
 * cost_models/): a name, a one-line description and the function. Every
 * place that chooses a partitioner by name (the search's --partitioner,
 * sc_partition_by_method, sc_planner_partition) looks it up here, and an
 * unknown name gets one message listing the known ones.
 *
 * Each request of sc_planner_partition is one partition shape: pp·v stages
 * for a tp degree, microbatch size and dp degree. */
#ifndef SC_PARTITIONER_HOOK_H
#define SC_PARTITIONER_HOOK_H

#include "cluster.h"
#include "model.h"
#include "partition.h"
#include "partitioner.h"
#include "sc.h"

typedef struct sc_partitioner_impl {
    const char *name;  /* "uniform", "tree", "optimal" */
    const char *desc;  /* one line */
    /* Splits cfg->model into cfg->n_stages stages (partitioner.h's contract:
     * outputs filled only on success). */
    sc_status (*run)(const sc_partitioner_cfg *cfg, sc_partition *out, sc_error *err);
} sc_partitioner_impl;

/* Every partitioner, NULL-terminated, in the order listings show them. */
extern const sc_partitioner_impl *const sc_partitioner_all[];
/* The partitioner called name; NULL for an unknown name or NULL. */
const sc_partitioner_impl *sc_partitioner_find(const char *name);
/* The same, or SC_ENOTFOUND "WHO: unknown partitioner 'NAME' (uniform, tree,
 * optimal)" (who: the caller's prefix, e.g. "plan"); *out NULL then. */
sc_status sc_partitioner_lookup(const char *who, const char *name,
                                const sc_partitioner_impl **out, sc_error *err);
/* The known names, comma-separated in table order: "uniform, tree, optimal". */
const char *sc_planner_partitioners(void);
/* The search's default: "optimal". */
const char *sc_planner_default_partitioner(void);

typedef struct sc_part_request {
    const sc_model *m;
    const sc_cluster *c;
    int pp, v, tp, mbs, dp;
    double memory_weight;   /* tree: blend of time and memory */
    int optimize_memory;
    int shared_strict;
    int sp;                 /* sequence parallelism */
    double deadline_s;      /* optimal: CLOCK_MONOTONIC time to stop at (0 = none) */
    int nofit_quick;        /* optimal: "does not fit" without the figure */
    double max_bytes;       /* optimal: its working memory's limit (0 = none) */
    sc_attn attn;           /* attention implementation */
    int layer_cuts;         /* stages begin only between layers (partitioner.h) */
    int tp_overlap;         /* TE's tp overlap: the tp GEMMs timed in chunks (partitioner.h) */
    int cp;                 /* context parallelism (partitioner.h; 0 or 1: none) */
    int fp8;                /* fp8 GEMMs (partitioner.h) */
} sc_part_request;

/* Partitions one shape with the partitioner called name (see
 * partitioner_hook.c for the memory settings used); SC_ENOTFOUND for an
 * unknown name. */
sc_status sc_planner_partition(const char *name, const sc_part_request *rq, sc_partition *out,
                               sc_error *err);

#endif
