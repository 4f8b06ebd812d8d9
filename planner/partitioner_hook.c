/* partitioner_hook.c - the planner's partitioners by name: the table, and
 * the search's requests.
 *
 * One partition serves every candidate of a shape (pp, v, tp, mbs, dp), so
 * "tree" and "optimal" partition under the most frugal memory settings the
 * search may pick (ZeRO 3, full recompute, one microbatch in flight): a
 * split that cannot fit even so is no split at all (SC_ENOFIT and the shape
 * is skipped), and each candidate's own settings are checked on the result.
 * ("uniform" looks at nothing but the leaf count.) Shared groups follow the
 * replicate policy (as the simulator models them) unless the request asks
 * for strict. */
#include "partitioner_hook.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static sc_status run_uniform(const sc_partitioner_cfg *cfg, sc_partition *out, sc_error *err)
{
    if (!cfg || !cfg->model)
        return sc_err(err, SC_EINVAL, "partition: no model");
    return sc_partition_uniform(cfg->model, cfg->n_stages, out, err);
}

static const sc_partitioner_impl uniform = {
    "uniform", "equal numbers of layers per stage (sim/partition.h)", run_uniform};
static const sc_partitioner_impl tree = {
    "tree", "greedy cuts over the module tree, balancing time and memory",
    sc_partition_tree};
static const sc_partitioner_impl optimal = {
    "optimal", "exact min-max split of the leaves' time, every stage fitting in memory",
    sc_partition_optimal};

const sc_partitioner_impl *const sc_partitioner_all[] = {&uniform, &tree, &optimal, NULL};

const sc_partitioner_impl *sc_partitioner_find(const char *name)
{
    for (int i = 0; name && sc_partitioner_all[i]; i++)
        if (!strcmp(sc_partitioner_all[i]->name, name))
            return sc_partitioner_all[i];
    return NULL;
}

static char names_list[128];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
    size_t o = 0;
    for (int i = 0; sc_partitioner_all[i] && o < sizeof names_list; i++)
        o += (size_t)snprintf(names_list + o, sizeof names_list - o, "%s%s", i ? ", " : "",
                              sc_partitioner_all[i]->name);
}

const char *sc_planner_partitioners(void)
{
    /* built once from the table (which is constant), thread-safely */
    pthread_once(&names_once, build_names);
    return names_list;
}

sc_status sc_partitioner_lookup(const char *who, const char *name,
                                const sc_partitioner_impl **out, sc_error *err)
{
    *out = sc_partitioner_find(name);
    if (!*out)
        return sc_err(err, SC_ENOTFOUND, "%s: unknown partitioner '%s' (%s)", who,
                      name ? name : "", sc_planner_partitioners());
    return SC_OK;
}

const char *sc_planner_default_partitioner(void) { return optimal.name; }

sc_status sc_planner_partition(const char *name, const sc_part_request *rq, sc_partition *out,
                               sc_error *err)
{
    const sc_partitioner_impl *impl;
    sc_status st = sc_partitioner_lookup("plan", name, &impl, err);
    if (st)
        return st;
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, rq->m, rq->c, rq->pp * rq->v);
    cfg.tp = rq->tp;
    cfg.sp = rq->sp;
    cfg.tp_overlap = rq->tp_overlap;
    cfg.attn = rq->attn;
    cfg.cp = rq->cp;
    cfg.fp8 = rq->fp8;
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
    cfg.layer_cuts = rq->layer_cuts;
    cfg.deadline_s = rq->deadline_s;
    cfg.nofit_quick = rq->nofit_quick;
    cfg.max_bytes = rq->max_bytes;
    return impl->run(&cfg, out, err);
}
