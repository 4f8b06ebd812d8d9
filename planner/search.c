/* search.c - enumeration, partition cache, estimates, simulation, ranking
 * (see search.h). */
#include "planner_int.h"
#include "partitioner_hook.h"
#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_V 8

typedef struct table_key {
    int pp, v, tp, mbs, sp;
} table_key;

struct sc_search {
    const sc_model *m;
    const sc_cluster *c;
    sc_search_opts o;
    char partitioner[16];
    sc_stage_table *tables;
    table_key *keys;
    int ntables, captables;
    sc_candidate *cands;
    long ncands, capcands, enumerated;
    int *ranked, nranked;
    double t_est, t_sim;
    long nofit_shapes;               /* shapes no partition could serve */
    sc_status nofit_status;
    char nofit_msg[SC_ERRMSG_MAX];   /* the partitioner's message for the last */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

void sc_search_opts_default(sc_search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->top_k = 16;
    o->memory_weight = -1;
    o->max_mbs = 8;
    o->fix_zero = -1;
    o->fix_recompute = -1;
    o->fix_sp = -1;
}

void sc_search_free(sc_search *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->ntables; i++)
        sc_stage_table_free(&s->tables[i]);
    for (long i = 0; i < s->ncands; i++)
        sc_step_result_free(s->cands[i].sim);
    sc_free(s->tables);
    sc_free(s->keys);
    sc_free(s->cands);
    sc_free(s->ranked);
    sc_free(s);
}

void sc_search_counts(const sc_search *s, long *enumerated, long *fitting, int *simulated)
{
    if (enumerated)
        *enumerated = s->enumerated;
    if (fitting)
        *fitting = s->ncands;
    if (simulated)
        *simulated = s->nranked;
}

const sc_candidate *sc_search_ranked(const sc_search *s, int i)
{
    return i >= 0 && i < s->nranked ? &s->cands[s->ranked[i]] : NULL;
}

void sc_search_times(const sc_search *s, double *estimate_s, double *simulate_s)
{
    if (estimate_s)
        *estimate_s = s->t_est;
    if (simulate_s)
        *simulate_s = s->t_sim;
}

const char *sc_search_partitioner(const sc_search *s) { return s->partitioner; }

/* The table for (pp, v, tp, mbs), partitioning on first use. -1 on error. */
static int table_for(sc_search *s, int pp, int v, int tp, int sp, int mbs, sc_error *err)
{
    for (int i = 0; i < s->ntables; i++)
        if (s->keys[i].pp == pp && s->keys[i].v == v && s->keys[i].tp == tp &&
            s->keys[i].mbs == mbs && s->keys[i].sp == sp)
            return i;
    if (s->ntables == s->captables) {
        int nc = s->captables ? 2 * s->captables : 64;
        sc_stage_table *nt = sc_realloc(s->tables, sizeof *nt * (size_t)nc);
        if (!nt)
            return sc_err(err, SC_ENOMEM, "plan: out of memory"), -1;
        s->tables = nt;
        table_key *nk = sc_realloc(s->keys, sizeof *nk * (size_t)nc);
        if (!nk)
            return sc_err(err, SC_ENOMEM, "plan: out of memory"), -1;
        s->keys = nk;
        s->captables = nc;
    }
    sc_partition part = {0};
    sc_part_request rq = {s->m, s->c, pp, v, tp, mbs,
                          (int)(sc_cluster_total_gpus(s->c) / ((long)tp * pp)),
                          s->o.memory_weight, s->o.optimize_memory, s->o.shared_strict, sp};
    sc_status st = sc_planner_partition(s->partitioner, &rq, &part, err);
    if (st)
        return -1;
    st = sc_stage_table_build(s->m, s->c, pp, v, tp, sp, mbs, &part, &s->tables[s->ntables],
                              err);
    sc_partition_free(&part);
    if (st)
        return -1;
    s->keys[s->ntables] = (table_key){pp, v, tp, mbs, sp};
    return s->ntables++;
}

static int add_candidate(sc_search *s, const sc_candidate *c)
{
    if (s->ncands == s->capcands) {
        long nc = s->capcands ? 2 * s->capcands : 1024;
        sc_candidate *n = sc_realloc(s->cands, sizeof *n * (size_t)nc);
        if (!n)
            return -1;
        s->cands = n;
        s->capcands = nc;
    }
    s->cands[s->ncands++] = *c;
    return 0;
}

static int heads_divisible(const sc_model *m, int tp)
{
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *x = m->modules[i];
        double h = sc_module_dim(x, "heads", 0), kvh = sc_module_dim(x, "kv_heads", 0);
        if ((h > 0 && fmod(h, tp) != 0) || (kvh > 0 && fmod(kvh, tp) != 0))
            return 0; /* grouped-query attention splits its kv heads too */
    }
    return 1;
}

static const sc_search *sort_ctx;

static int by_estimate(const void *a, const void *b)
{
    const sc_candidate *x = &sort_ctx->cands[*(const int *)a];
    const sc_candidate *y = &sort_ctx->cands[*(const int *)b];
    if (x->est.step_s != y->est.step_s)
        return x->est.step_s < y->est.step_s ? -1 : 1;
    if (x->est.peak_mem != y->est.peak_mem)
        return x->est.peak_mem < y->est.peak_mem ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static int by_memory(const void *a, const void *b)
{
    const sc_candidate *x = &sort_ctx->cands[*(const int *)a];
    const sc_candidate *y = &sort_ctx->cands[*(const int *)b];
    if (x->est.peak_mem != y->est.peak_mem)
        return x->est.peak_mem < y->est.peak_mem ? -1 : 1;
    return by_estimate(a, b);
}

static double peak_of(const sc_step_result *r)
{
    double p = 0;
    for (int i = 0; i < r->pp; i++)
        p = fmax(p, r->mem[i].total);
    return p;
}

static int by_sim_step(const void *a, const void *b)
{
    const sc_candidate *x = &sort_ctx->cands[*(const int *)a];
    const sc_candidate *y = &sort_ctx->cands[*(const int *)b];
    if (x->sim->step_time_s != y->sim->step_time_s)
        return x->sim->step_time_s < y->sim->step_time_s ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static double fastest_sim;

static int by_sim_memory(const void *a, const void *b)
{
    const sc_candidate *x = &sort_ctx->cands[*(const int *)a];
    const sc_candidate *y = &sort_ctx->cands[*(const int *)b];
    int xin = x->sim->step_time_s <= 1.05 * fastest_sim;
    int yin = y->sim->step_time_s <= 1.05 * fastest_sim;
    if (xin != yin)
        return xin ? -1 : 1;
    if (xin) {
        double px = peak_of(x->sim), py = peak_of(y->sim);
        if (px != py)
            return px < py ? -1 : 1;
    }
    return by_sim_step(a, b);
}

static const char *const schedules[] = {"gpipe", "1f1b", "zb-h1", "interleaved"};

sc_status sc_search_run(const sc_model *m, const sc_cluster *c, const sc_search_opts *o,
                        sc_search **out, sc_error *err)
{
    *out = NULL;
    if (o->global_batch < 1)
        return sc_err(err, SC_EINVAL, "plan: --global-batch must be at least 1");
    if (c->gpu.peak_flops[m->dtype] <= 0)
        return sc_err(err, SC_ENOTSUP, "plan: %s has no %s peak", c->gpu.name,
                      sc_dtype_name(m->dtype));
    const sc_partitioner_impl *part;
    sc_status pst = sc_partitioner_lookup(
        "plan", o->partitioner ? o->partitioner : sc_planner_default_partitioner(), &part, err);
    if (pst)
        return pst;
    sc_search *s = sc_calloc(1, sizeof *s);
    if (!s)
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    s->m = m;
    s->c = c;
    s->o = *o;
    if (s->o.top_k <= 0)
        s->o.top_k = 16;
    if (s->o.max_mbs <= 0)
        s->o.max_mbs = 8;
    if (s->o.memory_weight < 0)
        s->o.memory_weight = o->optimize_memory ? 0.8 : 0.2;
    snprintf(s->partitioner, sizeof s->partitioner, "%s", part->name);

    double t0 = now();
    long G = sc_cluster_total_gpus(c), B = o->global_batch;
    int gpn = c->gpus_per_node, layers = sc_partition_layers(m);
    sc_status st = SC_OK;
    int tps = 0;
    for (int tp = 1; tp <= gpn; tp++)
        tps += gpn % tp == 0;
    int tpi = 0;
    for (int tp = 1; tp <= gpn && !st; tp++) {
        if (gpn % tp || (o->fix_tp && tp != o->fix_tp) || !heads_divisible(m, tp))
            continue;
        tpi++;
        for (int pp = 1; pp <= layers && !st; pp++) {
            if (G % ((long)tp * pp) || (o->fix_pp && pp != o->fix_pp))
                continue;
            long dp = G / ((long)tp * pp);
            if ((o->fix_dp && dp != o->fix_dp) || B % dp)
                continue;
            long b = B / dp;
            for (int mbs = 1; mbs <= s->o.max_mbs && mbs <= b && !st; mbs++) {
                if (b % mbs || (o->fix_mbs && mbs != o->fix_mbs))
                    continue;
                long mm = b / mbs;
                if ((o->fix_m && mm != o->fix_m) || mm > 65536)
                    continue;
                for (int si = 0; si < 4 && !st; si++) {
                    const char *sched = schedules[si];
                    if (pp == 1 && strcmp(sched, "1f1b"))
                        continue;
                    if (o->fix_schedule && strcmp(o->fix_schedule, sched))
                        continue;
                    int vmin = 1, vmax = 1;
                    if (!strcmp(sched, "interleaved")) {
                        vmin = 2;
                        /* searched: 2..MAX_V; a fixed v (1..64, as the simulator
                         * takes) is tried as asked */
                        vmax = o->fix_v > MAX_V ? o->fix_v : MAX_V;
                    }
                    for (int v = vmin; v <= vmax && !st; v++) {
                        if (o->fix_v && v != o->fix_v)
                            continue;
                        if (pp * v > layers)
                            break;
                        const sc_sched_impl *impl = sc_sched_find(sched);
                        char buf[256];
                        if (impl->validate((int)pp, (int)mm, v, buf, sizeof buf))
                            continue;
                        for (int sp = 0; sp <= (tp > 1) && !st; sp++) {
                        if (o->fix_sp >= 0 && sp != o->fix_sp)
                            continue;
                        sc_error terr = {0};
                        int ti = table_for(s, pp, v, tp, sp, mbs, &terr);
                        if (ti < 0) {
                            if (terr.status == SC_ENOMEM)
                                st = sc_err(err, SC_ENOMEM, "%s", terr.msg);
                            if (terr.status == SC_ENOFIT || terr.status == SC_EINVAL) {
                                s->nofit_shapes++;
                                s->nofit_status = terr.status;
                                memcpy(s->nofit_msg, terr.msg, sizeof s->nofit_msg);
                            }
                            continue; /* no partition for this shape */
                        }
                        for (int z = 0; z <= 3 && !st; z++) {
                            if (o->fix_zero >= 0 ? z != o->fix_zero : (dp == 1 && z > 0))
                                continue;
                            for (int rc = 0; rc < 3 && !st; rc++) {
                                if (o->fix_recompute >= 0 && rc != o->fix_recompute)
                                    continue;
                                sc_candidate cd = {0};
                                cd.cfg = (sc_step_cfg){.dp = (int)dp, .tp = tp, .pp = pp, .v = v,
                                                       .m = (int)mm, .mbs = mbs, .zero = z,
                                                       .recompute = (sc_recompute)rc, .sp = sp};
                                snprintf(cd.schedule, sizeof cd.schedule, "%s", sched);
                                cd.cfg.schedule = sched;
                                cd.part_key = ti;
                                sc_estimate_fast(&s->tables[ti], c, &cd.cfg, m->dtype, &cd.est);
                                s->enumerated++;
                                if (cd.est.fits && add_candidate(s, &cd))
                                    st = sc_err(err, SC_ENOMEM, "plan: out of memory");
                            }
                        }
                        }
                    }
                }
            }
        }
        if (o->progress)
            o->progress(o->progress_ud, 0.5 * tpi / (tps ? tps : 1));
    }
    s->t_est = now() - t0;
    if (st) {
        sc_search_free(s);
        return st;
    }
    if (s->ncands == 0) {
        long enumerated = s->enumerated, nofit = s->nofit_shapes;
        sc_status nst = s->nofit_status;
        char msg[SC_ERRMSG_MAX];
        memcpy(msg, s->nofit_msg, sizeof msg);
        sc_search_free(s);
        if (enumerated == 0 && nofit > 0 && nst == SC_ENOFIT)
            return sc_err(err, SC_ENOFIT, "plan: %s (even with ZeRO 3 and full recompute)", msg);
        if (enumerated == 0 && nofit > 0)
            return sc_err(err, nst, "plan: %s", msg);
        if (enumerated == 0)
            return sc_err(err, SC_EINVAL,
                          "plan: no configuration of %s on %ld GPUs with global batch %ld "
                          "matches (dp must divide the batch; tp must divide %d GPUs a node and "
                          "the attention heads)",
                          m->name, G, B, gpn);
        return sc_err(err, SC_ENOFIT,
                      "plan: none of the configurations fits in %.1f GiB per GPU",
                      c->gpu.memory_bytes / (1024.0 * 1024 * 1024));
    }
    /* choose the K to simulate */
    int *order = sc_malloc(sizeof(int) * (size_t)s->ncands);
    s->ranked = sc_malloc(sizeof(int) * (size_t)s->o.top_k);
    if (!order || !s->ranked) {
        sc_free(order);
        sc_search_free(s);
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    }
    for (long i = 0; i < s->ncands; i++)
        order[i] = (int)i;
    sort_ctx = s;
    qsort(order, (size_t)s->ncands, sizeof *order, by_estimate);
    long pool = s->ncands;
    if (o->optimize_memory) {
        /* within 15% of the best estimate, the most frugal first */
        double best = s->cands[order[0]].est.step_s;
        pool = 0;
        while (pool < s->ncands && s->cands[order[pool]].est.step_s <= 1.15 * best)
            pool++;
        qsort(order, (size_t)pool, sizeof *order, by_memory);
    }
    int K = pool < s->o.top_k ? (int)pool : s->o.top_k;
    double t1 = now();
    for (int k = 0; k < K && !st; k++) {
        sc_candidate *cd = &s->cands[order[k]];
        cd->cfg.schedule = cd->schedule;
        cd->cfg.partition = &s->tables[cd->part_key].part;
        cd->cfg.one_replica = 1; /* same result as every replica (tests/test_step.c) */
        st = sc_step_simulate(m, c, &cd->cfg, &cd->sim, err);
        if (!st && cd->sim->fits)
            s->ranked[s->nranked++] = order[k];
        if (o->progress)
            o->progress(o->progress_ud, 0.5 + 0.5 * (k + 1) / K);
    }
    sc_free(order);
    s->t_sim = now() - t1;
    if (st) {
        sc_search_free(s);
        return st;
    }
    if (s->nranked == 0) {
        sc_search_free(s);
        return sc_err(err, SC_ENOFIT, "plan: no simulated configuration fits in memory");
    }
    sort_ctx = s;
    qsort(s->ranked, (size_t)s->nranked, sizeof *s->ranked, by_sim_step);
    if (o->optimize_memory) {
        fastest_sim = s->cands[s->ranked[0]].sim->step_time_s;
        qsort(s->ranked, (size_t)s->nranked, sizeof *s->ranked, by_sim_memory);
    }
    /* point every kept candidate's cfg at its owned strings and partition */
    for (int i = 0; i < s->nranked; i++) {
        sc_candidate *cd = &s->cands[s->ranked[i]];
        cd->cfg.schedule = cd->schedule;
        cd->cfg.partition = &s->tables[cd->part_key].part;
    }
    *out = s;
    return SC_OK;
}
