/* search.c - enumeration, partition cache, estimates, simulation, ranking
 * (see search.h). */
#include "planner_int.h"
#include "framework.h"
#include "partitioner_hook.h"
#include "schedule.h"
#include "slices.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_V 8

typedef struct table_key {
    int pp, v, tp, mbs, sp, cp;
} table_key;

struct sc_search {
    const sc_model *m;
    const sc_cluster *c;
    sc_search_opts o;
    char partitioner[16];
    int cps[SC_SEARCH_MAX_CPS], ncps; /* the cp degrees tried */
    sc_stage_table *tables;
    table_key *keys;
    int ntables, captables;
    sc_candidate *cands;
    long ncands, capcands, enumerated;
    int *ranked, nranked;
    int *group;                      /* per ranked position: its tie group */
    double t_est, t_sim;
    int time_limited, over_mem;
    long shapes_done, shapes_total;
    char over_msg[SC_ERRMSG_MAX];    /* the last candidate skipped for max_mem_bytes */
    long nofit_shapes;               /* shapes no partition could serve */
    table_key nofit_key;             /* the last of them */
    sc_status nofit_status;
    char nofit_msg[SC_ERRMSG_MAX];   /* the partitioner's message for the last */
    table_key *failed;               /* shapes no partition could serve, tried once */
    int nfailed, capfailed;
    /* per failed shape partitioned ahead (prefill): its error, until the
     * search first asks for it (then, as a shape tried once, -2) */
    sc_error *failed_err;
    unsigned char *failed_new;
    unsigned char *asked;            /* per table: the search has asked for it */
    int part_threads;                /* shapes partitioned ahead on (1: one by one, as asked) */
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
    o->simulate = SC_SEARCH_SIMULATE;
    o->slices = 1;
    o->memory_weight = -1;
    o->max_mbs = 8;
    o->fix_zero = -1;
    o->fix_recompute = -1;
    o->fix_sp = -1;
    o->no_overlap_p2p_comm = -1;
}

int sc_search_p2p_blocks(const sc_search_opts *o, int pp, int v)
{
    if (o->no_overlap_p2p_comm >= 0)
        return o->no_overlap_p2p_comm;
    return sc_framework_p2p_blocks(o->framework, pp, v);
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
    sc_free(s->failed);
    sc_free(s->failed_err);
    sc_free(s->failed_new);
    sc_free(s->asked);
    sc_free(s->cands);
    sc_free(s->ranked);
    sc_free(s->group);
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

int sc_search_cps(const sc_search *s, int out[SC_SEARCH_MAX_CPS])
{
    memcpy(out, s->cps, sizeof(int) * (size_t)s->ncps);
    return s->ncps;
}

int sc_search_part_threads(const sc_search *s) { return s->part_threads; }

void sc_search_limits(const sc_search *s, int *time_limited, long *shapes_done,
                      long *shapes_total, int *over_mem)
{
    if (time_limited)
        *time_limited = s->time_limited;
    if (shapes_done)
        *shapes_done = s->shapes_done;
    if (shapes_total)
        *shapes_total = s->shapes_total;
    if (over_mem)
        *over_mem = s->over_mem;
}

/* A shape's weight in the search's progress: its stage count and 8 (bigger
 * shapes take longer to partition). */
static double shape_weight(const table_key *k) { return (double)k->pp * k->v + 8; }

static int same_key(const table_key *k, int pp, int v, int tp, int sp, int mbs, int cp)
{
    return k->pp == pp && k->v == v && k->tp == tp && k->mbs == mbs && k->sp == sp &&
           k->cp == cp;
}

/* Partitions shape k and builds its table into *out (the request every
 * shape gets; deadline as table_for's). Touches nothing of s but reads. */
static sc_status build_table(const sc_search *s, const table_key *k, double deadline,
                             sc_stage_table *out, sc_error *err)
{
    sc_partition part = {0};
    /* dp: the data-parallel group with its cp peers, G / (tp·pp) */
    sc_part_request rq = {s->m, s->c, k->pp, k->v, k->tp, k->mbs,
                          (int)(sc_cluster_total_gpus(s->c) / ((long)k->tp * k->pp)),
                          s->o.memory_weight, s->o.optimize_memory, s->o.shared_strict, k->sp,
                          deadline, 1, s->o.max_mem_bytes / 2, s->o.attn,
                          !s->o.cut_in_layers, s->o.tp_comm_overlap, k->cp, s->o.fp8};
    sc_status st = sc_planner_partition(s->partitioner, &rq, &part, err);
    if (st)
        return st;
    st = sc_stage_table_build(s->m, s->c, k->pp, k->v, k->tp, k->sp, s->o.tp_comm_overlap,
                              s->o.attn, k->mbs, k->cp, s->o.grad_reduce_in_fp32, s->o.fp8, &part, out,
                              err);
    sc_partition_free(&part);
    return st;
}

/* Room for one more table (tables, keys, asked). 0, or -1 out of memory. */
static int table_room(sc_search *s)
{
    static const size_t sz[] = {sizeof *s->tables, sizeof *s->keys, sizeof *s->asked};
    return sc_grow_arrays((void **[]){(void **)&s->tables, (void **)&s->keys,
                                      (void **)&s->asked},
                          sz, 3, s->ntables + 1, &s->captables);
}

/* Remembers shape k as failed (with its error when partitioned ahead). 0,
 * or -1 out of memory (then not remembered: tried again next time). */
static int remember_failed(sc_search *s, const table_key *k, const sc_error *ahead)
{
    static const size_t sz[] = {sizeof *s->failed, sizeof *s->failed_err,
                                sizeof *s->failed_new};
    if (sc_grow_arrays((void **[]){(void **)&s->failed, (void **)&s->failed_err,
                                   (void **)&s->failed_new},
                       sz, 3, s->nfailed + 1, &s->capfailed))
        return -1;
    s->failed_new[s->nfailed] = ahead != NULL;
    if (ahead)
        s->failed_err[s->nfailed] = *ahead;
    s->failed[s->nfailed++] = *k;
    return 0;
}

/* The table for (pp, v, tp, mbs, sp, cp), partitioning on first use (the
 * optimal partitioner stops at deadline, 0 = none). -1 on error; -2 for a
 * shape that failed before (does not fit, or invalid: each schedule of a
 * shape shares its partition, so a failure is remembered rather than
 * partitioned again, which took most of a search of a huge model where
 * little fits; a failure for memory is not kept, and the deadline fails
 * none: the optimal partitioner finds its first split whatever the time).
 * A shape that failed when partitioned ahead (prefill) gives its error (-1)
 * the first time it is asked for, as if partitioned then. *fresh: 0 when
 * asked before; 1 the first time the search asks for a shape partitioned
 * ahead; 2 when partitioned here, now. */
static int table_for(sc_search *s, int pp, int v, int tp, int sp, int mbs, int cp,
                     double deadline, int *fresh, sc_error *err)
{
    *fresh = 0;
    for (int i = 0; i < s->ntables; i++)
        if (same_key(&s->keys[i], pp, v, tp, sp, mbs, cp)) {
            *fresh = !s->asked[i];
            s->asked[i] = 1;
            return i;
        }
    for (int i = 0; i < s->nfailed; i++)
        if (same_key(&s->failed[i], pp, v, tp, sp, mbs, cp)) {
            if (!s->failed_new[i])
                return -2;
            s->failed_new[i] = 0;
            *fresh = 1;
            if (err)
                *err = s->failed_err[i];
            return -1;
        }
    *fresh = 2;
    if (table_room(s))
        return sc_err(err, SC_ENOMEM, "plan: out of memory"), -1;
    table_key k = {pp, v, tp, mbs, sp, cp};
    sc_status st = build_table(s, &k, deadline, &s->tables[s->ntables], err);
    if (st) {
        if (st == SC_ENOFIT || st == SC_EINVAL)
            remember_failed(s, &k, NULL);
        return -1;
    }
    s->keys[s->ntables] = k;
    s->asked[s->ntables] = 1;
    return s->ntables++;
}

/* The threads the search's pools run on: one per online core, at most 4
 * (SC_THREADS sets the count for tests and benchmarks). */
static int pool_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("SC_THREADS");
    if (env && atoi(env) >= 1)
        cores = atoi(env);
    return cores < 1 ? 1 : cores > 4 ? 4 : (int)cores;
}

/* ---- simulating the chosen candidates on every core ----------------------- */

typedef struct sim_pool {
    sc_search *s;
    const sc_model *m;
    const sc_cluster *c;
    const sc_search_opts *o;
    const int *jobs;
    int njobs;
    sc_status *status;      /* per job */
    int next, ran;          /* jobs handed out; jobs [0, ran) all ran */
    int any_fit, stop;
    double deadline;
    int sliceable;
    sc_search_progress *pg;
    double t0;
    int time_limited, done;
    sc_error *errs;
    pthread_mutex_t mu;
} sim_pool;

static sc_status try_slices(const sc_model *m, const sc_cluster *c, sc_candidate *cd,
                            sc_error *err);

static void *sim_worker(void *arg)
{
    sim_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int j = p->next;
        if (j >= p->njobs || p->stop) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        /* --time-limit: once something fits, start nothing new */
        if (p->deadline > 0 && p->any_fit && now() > p->deadline) {
            p->time_limited = 1;
            p->stop = 1;
            pthread_mutex_unlock(&p->mu);
            break;
        }
        p->next++;
        pthread_mutex_unlock(&p->mu);
        sc_candidate *cd = &p->s->cands[p->jobs[j]];
        sc_status st = sc_step_simulate(p->m, p->c, &cd->cfg, &cd->sim, &p->errs[j]);
        if (!st && p->o->slices && p->sliceable && cd->cfg.cp <= 1 && cd->cfg.m < cd->cfg.pp &&
            cd->cfg.v == 1 &&
            (!strcmp(cd->schedule, "gpipe") || !strcmp(cd->schedule, "1f1b")))
            st = try_slices(p->m, p->c, cd, &p->errs[j]);
        pthread_mutex_lock(&p->mu);
        p->status[j] = st;
        if (!st && cd->sim->fits)
            p->any_fit = 1;
        if (st)
            p->stop = 1;
        p->done++;
        if (p->o->progress) {
            p->pg->done = p->done;
            p->pg->fraction = (double)p->done / p->njobs;
            p->pg->elapsed_s = now() - p->t0;
            p->o->progress(p->o->progress_ud, p->pg);
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* Runs the pool's jobs on up to 4 threads (one per online core); p->ran
 * gets the length of the prefix of jobs that all ran. */
static sc_status run_pool(sim_pool *p, sc_error *err)
{
    p->status = sc_calloc((size_t)(p->njobs > 0 ? p->njobs : 1), sizeof *p->status);
    p->errs = sc_calloc((size_t)(p->njobs > 0 ? p->njobs : 1), sizeof *p->errs);
    if (!p->status || !p->errs)
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    for (int i = 0; i < p->njobs; i++)
        p->status[i] = SC_OK;
    int n = pool_threads();
    if (n > p->njobs)
        n = p->njobs;
    p->pg->workers = n;
    pthread_mutex_init(&p->mu, NULL);
    pthread_t th[4];
    int started = 0;
    for (int i = 1; i < n; i++)
        if (pthread_create(&th[started], NULL, sim_worker, p) == 0)
            started++;
    sim_worker(p);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    /* the prefix that ran: a stop (error or time limit) may leave later jobs */
    p->ran = p->next;
    return SC_OK;
}

/* TeraPipe's slicing of a simulated candidate: kept (cfg, sim, lengths)
 * when its simulated step is faster, else the candidate is left alone. A
 * slicing the model or sequence cannot take is no error here. */
static sc_status try_slices(const sc_model *m, const sc_cluster *c, sc_candidate *cd,
                            sc_error *err)
{
    sc_slicing sl;
    sc_error e2 = {0};
    if (sc_slices_auto(m, c, &cd->cfg, &sl, &e2) != SC_OK || sl.k < 2 ||
        !(sl.step_s < cd->sim->step_time_s))
        return SC_OK;
    sc_step_cfg x = cd->cfg;
    x.slices = sl.k;
    memcpy(cd->slice_len, sl.len, sizeof(int) * (size_t)sl.k);
    x.slice_len = cd->slice_len;
    sc_step_result *r = NULL;
    sc_status st = sc_step_simulate(m, c, &x, &r, err);
    if (st)
        return st;
    if (!r->fits) { /* more units in flight: keep the unsliced step */
        sc_step_result_free(r);
        return SC_OK;
    }
    cd->unsliced_s = cd->sim->step_time_s;
    sc_step_result_free(cd->sim);
    cd->sim = r;
    cd->cfg = x;
    return SC_OK;
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
        double px = sc_step_peak_mem(x->sim), py = sc_step_peak_mem(y->sim);
        if (px != py)
            return px < py ? -1 : 1;
    }
    return by_sim_step(a, b);
}

int sc_search_dims(const sc_step_cfg *g)
{
    return (g->dp > 1) + (g->tp > 1) + (g->pp > 1) + (g->v > 1) + (g->cp > 1);
}

static int same_cfg(const sc_candidate *x, const sc_candidate *y)
{
    const sc_step_cfg *a = &x->cfg, *b = &y->cfg;
    return a->dp == b->dp && a->tp == b->tp && a->pp == b->pp && a->v == b->v && a->m == b->m &&
           a->mbs == b->mbs && a->zero == b->zero && a->recompute == b->recompute &&
           a->sp == b->sp && a->cp == b->cp && !strcmp(x->schedule, y->schedule) &&
           x->part_key == y->part_key;
}

/* Within a tie: lower peak memory, then fewer dimensions above 1, then the
 * lower ZeRO stage, then the faster step, then enumeration order. */
static int by_tie(const void *a, const void *b)
{
    const sc_candidate *x = &sort_ctx->cands[*(const int *)a];
    const sc_candidate *y = &sort_ctx->cands[*(const int *)b];
    double px = sc_step_peak_mem(x->sim), py = sc_step_peak_mem(y->sim);
    if (px != py)
        return px < py ? -1 : 1;
    int dx = sc_search_dims(&x->cfg), dy = sc_search_dims(&y->cfg);
    if (dx != dy)
        return dx - dy;
    if (x->cfg.zero != y->cfg.zero)
        return x->cfg.zero - y->cfg.zero;
    return by_sim_step(a, b);
}

/* Ranks the simulated candidates by speed with ties (search.h): sorted by
 * step time, then each run of plans within SC_SEARCH_TIE of the fastest
 * one not yet placed is ordered by by_tie. O(n log n). */
static void rank_speed(sc_search *s)
{
    qsort(s->ranked, (size_t)s->nranked, sizeof *s->ranked, by_sim_step);
    for (int i = 0, g = 0; i < s->nranked; g++) {
        double lead = s->cands[s->ranked[i]].sim->step_time_s;
        int j = i;
        while (j < s->nranked &&
               s->cands[s->ranked[j]].sim->step_time_s <= lead * (1 + SC_SEARCH_TIE))
            s->group[j++] = g;
        qsort(s->ranked + i, (size_t)(j - i), sizeof *s->ranked, by_tie);
        i = j;
    }
}

sc_search_tie_kind sc_search_tie(const sc_search *s, int i)
{
    if (i < 0 || i + 1 >= s->nranked || s->group[i] != s->group[i + 1] || s->group[i] < 0)
        return SC_TIE_NONE;
    const sc_candidate *x = &s->cands[s->ranked[i]], *y = &s->cands[s->ranked[i + 1]];
    if (sc_step_peak_mem(x->sim) != sc_step_peak_mem(y->sim))
        return SC_TIE_MEMORY;
    if (sc_search_dims(&x->cfg) != sc_search_dims(&y->cfg) || x->cfg.zero != y->cfg.zero)
        return SC_TIE_LAYOUT;
    return SC_TIE_STEP;
}

static const char *const schedules[] = {"gpipe", "1f1b", "zb-h1", "interleaved"};

/* One shape of the enumeration with its degrees: everything but the
 * ZeRO stage and recompute, which share its table. */
typedef struct shape_item {
    int tp, pp, mbs, v, si, cp;
    long dp, mm;
} shape_item;

typedef struct item_list {
    shape_item *a;
    long n, cap;
} item_list;

static int push_item(item_list *l, shape_item it)
{
    if (l->n == l->cap) {
        long nc = l->cap ? 2 * l->cap : 256;
        shape_item *na = sc_realloc(l->a, sizeof *na * (size_t)nc);
        if (!na)
            return -1;
        l->a = na;
        l->cap = nc;
    }
    l->a[l->n++] = it;
    return 0;
}

/* Why nothing matched: how far the filters let something through. */
typedef struct why_none {
    int tp_ok;       /* some tp divides the node's GPUs and the heads */
    int dp_ok;       /* some (tp, pp) gave a dp that divides the batch */
    long dp_max;     /* the largest such dp */
    int mbs_ok;      /* some mbs gave m <= 65536 */
    int sched_ok;    /* some schedule and v accepted m and pp */
    char sched_msg[256];
    long fw_out;     /* layouts the framework does not run */
    char fw_msg[512]; /* the first of them, why */
} why_none;

/* Whether the framework runs the layout as planned; counts and keeps the
 * first reason when not. */
static int fw_runs(const sc_framework *fw, const sc_fw_layout *l, why_none *why)
{
    char buf[512];
    if (sc_framework_judge(fw, NULL, l, buf, sizeof buf) == SC_FW_RUNS)
        return 1;
    if (!why->fw_out++)
        snprintf(why->fw_msg, sizeof why->fw_msg, "%s", buf);
    return 0;
}

/* The context-parallel degrees the search tries (search.h): the fixed one;
 * else 1 and, with flash attention and a framework that runs it
 * (framework.h's cp: any or megatron), each power of two up to the GPUs of a
 * node that the model takes (sc_step_check_cp: 2·cp divides the sequence,
 * every attention leaf a fused self-attention kernel). Returns the count. */
static int cp_degrees(const sc_model *m, const sc_cluster *c, const sc_search_opts *o,
                      int out[SC_SEARCH_MAX_CPS])
{
    if (o->fix_cp >= 1) {
        out[0] = o->fix_cp;
        return 1;
    }
    int n = 0;
    out[n++] = 1;
    const sc_framework *fw = o->framework ? o->framework : sc_framework_any();
    if (o->attn != SC_ATTN_FLASH || !fw->cp)
        return n;
    for (int cp = 2; cp <= c->gpus_per_node && n < SC_SEARCH_MAX_CPS; cp *= 2) {
        sc_step_cfg cc = {.dp = 1, .cp = cp, .tp = 1, .pp = 1, .attn = o->attn};
        sc_error e = {0};
        if (sc_step_check_cp(m, &cc, &e) == SC_OK)
            out[n++] = cp;
    }
    return n;
}

/* Every shape the search will partition, in the search's order, for each of
 * the ncp cp degrees in cps (cp_degrees); O(items). */
static sc_status enumerate(const sc_model *m, const sc_cluster *c, const sc_search_opts *o,
                           const int *cps, int ncp, int max_mbs, item_list *out, why_none *why,
                           sc_error *err)
{
    long G = sc_cluster_total_gpus(c), B = o->global_batch;
    int gpn = c->gpus_per_node, layers = sc_partition_layers(m);
    const sc_framework *fw = o->framework ? o->framework : sc_framework_any();
    for (int tp = 1; tp <= gpn; tp++) {
        if (gpn % tp || (o->fix_tp && tp != o->fix_tp) || !sc_cost_tp_divides_heads(m, tp))
            continue;
        if (tp > 1 && o->framework) {
            /* tp and its data: judged with the model once per degree */
            char buf[512];
            sc_fw_layout l = {.tp = tp, .pp = 1, .v = 1};
            sc_fw_verdict vd = sc_framework_judge(fw, m, &l, buf, sizeof buf);
            if (vd == SC_FW_NOMEM)
                return sc_err(err, SC_ENOMEM, "plan: out of memory");
            if (vd != SC_FW_RUNS) {
                if (!why->fw_out++)
                    snprintf(why->fw_msg, sizeof why->fw_msg, "%s", buf);
                continue;
            }
        }
        why->tp_ok = 1;
        for (int ci = 0; ci < ncp; ci++) {
            int cp = cps[ci];
            for (int pp = 1; pp <= layers; pp++) {
                if (G % ((long)tp * pp * cp) || (o->fix_pp && pp != o->fix_pp))
                    continue;
                long dp = G / ((long)tp * pp * cp);
                if ((o->fix_dp && dp != o->fix_dp) || B % dp)
                    continue;
                why->dp_ok = 1;
                if (dp > why->dp_max)
                    why->dp_max = dp;
                long b = B / dp;
                for (int mbs = 1; mbs <= max_mbs && mbs <= b; mbs++) {
                    if (b % mbs || (o->fix_mbs && mbs != o->fix_mbs))
                        continue;
                    long mm = b / mbs;
                    if ((o->fix_m && mm != o->fix_m) || mm > 65536)
                        continue;
                    why->mbs_ok = 1;
                    for (int si = 0; si < 4; si++) {
                        const char *sched = schedules[si];
                        if (o->fix_schedule && strcmp(o->fix_schedule, sched))
                            continue;
                        if (pp == 1 && strcmp(sched, "1f1b")) {
                            if (!why->sched_ok)
                                snprintf(why->sched_msg, sizeof why->sched_msg,
                                         "pp 1 runs 1f1b only (every schedule is the same with one "
                                         "stage)");
                            continue;
                        }
                        int vmin = 1, vmax = 1;
                        if (!strcmp(sched, "interleaved")) {
                            vmin = 2;
                            /* searched: 2..MAX_V; a fixed v (1..64, as the simulator
                             * takes) is tried as asked */
                            vmax = o->fix_v > MAX_V ? o->fix_v : MAX_V;
                        }
                        if (o->fix_v && (o->fix_v < vmin || o->fix_v > vmax) && !why->sched_ok)
                            snprintf(why->sched_msg, sizeof why->sched_msg,
                                     vmin > 1 ? "%s needs v >= 2 chunks per rank (v %d is 1f1b)"
                                              : "%s runs one chunk per rank (v %d needs the "
                                                "interleaved schedule)",
                                     sched, o->fix_v);
                        for (int v = vmin; v <= vmax; v++) {
                            if (o->fix_v && v != o->fix_v)
                                continue;
                            if (pp * v > layers) {
                                if (!why->sched_ok)
                                    snprintf(why->sched_msg, sizeof why->sched_msg,
                                             "pp·v = %d·%d is more than the %d layers", pp, v,
                                             layers);
                                break;
                            }
                            const sc_sched_impl *impl = sc_sched_find(sched);
                            char buf[256];
                            if (impl->validate((int)pp, (int)mm, v, buf, sizeof buf)) {
                                if (!why->sched_ok)
                                    snprintf(why->sched_msg, sizeof why->sched_msg, "%s", buf);
                                continue;
                            }
                            why->sched_ok = 1;
                            sc_fw_layout l = {.tp = tp, .pp = pp, .v = v, .m = (int)mm,
                                              .schedule = sched};
                            if (!fw_runs(fw, &l, why))
                                continue;
                            if (push_item(out, (shape_item){tp, pp, mbs, v, si, cp, dp, mm}))
                                return sc_err(err, SC_ENOMEM, "plan: out of memory");
                        }
                    }
                }
            }
        }
    }
    return SC_OK;
}

static int by_key(const void *a, const void *b)
{
    const table_key *x = a, *y = b;
    if (x->cp != y->cp)
        return x->cp - y->cp;
    if (x->pp != y->pp)
        return x->pp - y->pp;
    if (x->v != y->v)
        return x->v - y->v;
    if (x->tp != y->tp)
        return x->tp - y->tp;
    return x->mbs - y->mbs;
}

/* The distinct shapes of items and their total weight (stages). */
static sc_status count_shapes(const item_list *l, int fix_sp, long *n, double *weight,
                              sc_error *err)
{
    *n = 0;
    *weight = 0;
    if (!l->n)
        return SC_OK;
    table_key *k = sc_malloc(sizeof *k * (size_t)l->n);
    if (!k)
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    long nk = 0; /* sequence parallelism fixed on leaves tp 1 unsearched */
    for (long i = 0; i < l->n; i++)
        if (fix_sp != 1 || l->a[i].tp > 1)
            k[nk++] = (table_key){l->a[i].pp, l->a[i].v, l->a[i].tp, l->a[i].mbs, 0, l->a[i].cp};
    qsort(k, (size_t)nk, sizeof *k, by_key);
    for (long i = 0; i < nk; i++)
        if (i == 0 || by_key(&k[i], &k[i - 1])) {
            (*n)++;
            *weight += shape_weight(&k[i]);
        }
    sc_free(k);
    return SC_OK;
}

/* A shape with the index of the item that first asks for it (prefill). */
typedef struct key_at {
    table_key k;
    long at;
} key_at;

/* By shape (by_key, then sp), then by index. */
static int by_key_at(const void *a, const void *b)
{
    const key_at *x = a, *y = b;
    int c = by_key(&x->k, &y->k);
    if (!c)
        c = x->k.sp - y->k.sp;
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static int by_at(const void *a, const void *b)
{
    const key_at *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* ---- partitioning the shapes ahead, on every core --------------------------- */

typedef struct prefill_pool {
    const sc_search *s;
    const key_at *keys;      /* in the order the search first asks for them */
    int n, next, sp0;        /* sp0: the first sp tried, which counts a shape */
    double deadline;
    int any_ok;              /* a shape was partitioned: the deadline applies */
    sc_stage_table *tab;
    sc_status *st;
    sc_error *errs;
    unsigned char *ran;      /* 1 done (0: never started) */
    /* progress: shapes, and the fraction by weight */
    const sc_search_opts *o;
    sc_search_progress *pg;
    double t0, wdone, wtotal;
    pthread_mutex_t mu;
} prefill_pool;

static void *prefill_worker(void *arg)
{
    prefill_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int j = p->next;
        double t = now();
        /* past the deadline with something partitioned: the search stops
         * there, and asks for the rest itself if it goes on */
        if (j >= p->n || (p->deadline > 0 && p->any_ok && t > p->deadline)) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        p->next++;
        /* as table_for's caller: the deadline once something fits or it passed */
        double dl = p->any_ok || (p->deadline > 0 && t > p->deadline) ? p->deadline : 0;
        pthread_mutex_unlock(&p->mu);
        const table_key *k = &p->keys[j].k;
        sc_status st = build_table(p->s, k, dl, &p->tab[j], &p->errs[j]);
        pthread_mutex_lock(&p->mu);
        p->st[j] = st;
        p->ran[j] = 1;
        p->any_ok |= !st;
        p->wdone += shape_weight(k);
        if (k->sp == p->sp0 && st != SC_ENOMEM) { /* counted as the search does */
            p->pg->done++;
            p->pg->fraction = p->wdone / (p->wtotal > 0 ? p->wtotal : 1);
            p->pg->elapsed_s = now() - p->t0;
            if (p->o->progress)
                p->o->progress(p->o->progress_ud, p->pg);
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* How many partitions prefill runs at once: the pool's threads, at most one a
 * shape, and only as many as half of max_mem_bytes holds together. Each
 * partition's working memory is held to that half (build_table's request);
 * at its largest a shape's is its parents, S·(L + 1) ints, and the context's
 * arrays, about 64 doubles a leaf; so partitioning side by side needs no
 * more than one by one did. */
static int prefill_threads(const sc_search *s, const key_at *keys, int n)
{
    int threads = pool_threads();
    if (threads > n)
        threads = n;
    if (s->o.max_mem_bytes > 0 && n > 0) {
        double L1 = s->m->n_leaves + 1.0, need = 0, half = s->o.max_mem_bytes / 2;
        for (int j = 0; j < n; j++)
            need = fmax(need, (double)keys[j].k.pp * keys[j].k.v * L1 * sizeof(int) +
                                  64 * L1 * sizeof(double));
        double fit = floor(half / fmin(need, half));
        if (fit < threads)
            threads = (int)fit;
    }
    return threads;
}

/* Partitions every shape items will ask for (each sp searched) on the
 * pool's threads, in the order the search asks for them, and files the
 * tables (and the failures, with their errors) in that order: table_for
 * then finds them as if it had partitioned them one by one. Not where
 * fewer than two would run at once (prefill_threads): the search then
 * partitions each as it asks for it, as before. */
static sc_status prefill(sc_search *s, const item_list *items, double deadline, double t0,
                         sc_search_progress *pg, sc_error *err)
{
    s->part_threads = 1;
    if (pool_threads() < 2 || items->n < 2)
        return SC_OK;
    /* the keys in order of first use: (key, index) sorted, firsts kept */
    long nk = 0;
    key_at *keys = sc_malloc(sizeof *keys * (size_t)items->n * 2);
    if (!keys)
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    for (long i = 0; i < items->n; i++) {
        const shape_item *x = &items->a[i];
        for (int sp = 0; sp <= (x->tp > 1); sp++)
            if (s->o.fix_sp < 0 || sp == s->o.fix_sp) {
                keys[nk] = (key_at){{x->pp, x->v, x->tp, x->mbs, sp, x->cp}, nk};
                nk++;
            }
    }
    qsort(keys, (size_t)nk, sizeof *keys, by_key_at);
    long n = 0;
    for (long i = 0; i < nk; i++)
        if (i == 0 || memcmp(&keys[i].k, &keys[n - 1].k, sizeof keys[i].k))
            keys[n++] = keys[i];
    qsort(keys, (size_t)n, sizeof *keys, by_at); /* back to the order of first use */
    int threads = prefill_threads(s, keys, (int)n);
    if (threads < 2) {
        sc_free(keys);
        return SC_OK;
    }
    /* the search counts a shape at its first sp (sp 1 when fixed on) */
    prefill_pool p = {.s = s, .keys = keys, .n = (int)n, .sp0 = s->o.fix_sp > 0,
                      .deadline = deadline, .o = &s->o, .pg = pg, .t0 = t0};
    for (int j = 0; j < p.n; j++)
        p.wtotal += shape_weight(&keys[j].k);
    p.tab = sc_calloc((size_t)n, sizeof *p.tab);
    p.st = sc_calloc((size_t)n, sizeof *p.st);
    p.errs = sc_calloc((size_t)n, sizeof *p.errs);
    p.ran = sc_calloc((size_t)n, 1);
    sc_status st = SC_OK;
    if (!p.tab || !p.st || !p.errs || !p.ran) {
        st = sc_err(err, SC_ENOMEM, "plan: out of memory");
        goto out;
    }
    s->part_threads = threads;
    pg->workers = threads;
    pthread_mutex_init(&p.mu, NULL);
    pthread_t th[4];
    int started = 0;
    for (int i = 1; i < threads; i++)
        if (pthread_create(&th[started], NULL, prefill_worker, &p) == 0)
            started++;
    prefill_worker(&p);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&p.mu);
    pg->workers = 1; /* what is left, the search partitions itself */
    /* file them in order; a shape never started is left for the search to
     * ask for */
    for (int j = 0; j < p.n && !st; j++) {
        if (p.ran[j] != 1)
            continue;
        if (!p.st[j]) {
            if (table_room(s)) {
                st = sc_err(err, SC_ENOMEM, "plan: out of memory");
                break;
            }
            s->tables[s->ntables] = p.tab[j];
            s->keys[s->ntables] = keys[j].k;
            s->asked[s->ntables++] = 0;
            p.ran[j] = 0; /* owned by the search now */
        } else if (p.st[j] == SC_ENOMEM) {
            st = p.st[j];
            if (err)
                *err = p.errs[j];
        } else if (p.st[j] == SC_ENOFIT || p.st[j] == SC_EINVAL) {
            remember_failed(s, &keys[j].k, &p.errs[j]);
        }
    }
    for (int j = 0; j < p.n; j++) /* the tables not filed */
        if (p.ran[j] == 1 && !p.st[j])
            sc_stage_table_free(&p.tab[j]);
out:
    sc_free(keys);
    sc_free(p.tab);
    sc_free(p.st);
    sc_free(p.errs);
    sc_free(p.ran);
    return st;
}

int sc_search_max_mbs(const sc_search_opts *o)
{
    int b = o->max_mbs > 0 ? o->max_mbs : 8;
    return o->fix_mbs > b ? o->fix_mbs : b;
}

/* The message for a search where nothing matched, naming the filter that
 * let nothing through. */
static sc_status none_matched(const sc_model *m, const sc_cluster *c, const sc_search_opts *o,
                              int max_mbs, const why_none *why, sc_error *err)
{
    long G = sc_cluster_total_gpus(c), B = o->global_batch;
    int gpn = c->gpus_per_node;
    if (!why->tp_ok) {
        if (o->fix_tp && gpn % o->fix_tp)
            return sc_err(err, SC_EINVAL, "plan: tp %d does not divide the %d GPUs of a node",
                          o->fix_tp, gpn);
        sc_error e2 = {0};
        sc_cost_tp_check(m, o->fix_tp ? o->fix_tp : 1, &e2);
        return sc_err(err, SC_EINVAL, "plan: no tp degree fits %s on %d GPUs a node%s%s",
                      m->name, gpn, e2.msg[0] ? ": " : "", e2.msg);
    }
    long fixed = (long)o->fix_dp * o->fix_tp * o->fix_pp * (o->fix_cp > 1 ? o->fix_cp : 1);
    if (!why->dp_ok && fixed && fixed != G)
        return sc_err(err, SC_EINVAL,
                      "plan: dp·tp·pp%s = %ld, but a layout uses every GPU: %ld here (%d "
                      "node%s of %d; --nodes sets the count)",
                      o->fix_cp > 1 ? "·cp" : "", fixed, G, c->nodes, c->nodes == 1 ? "" : "s",
                      gpn);
    if (!why->dp_ok)
        return sc_err(err, SC_EINVAL,
                      "plan: no configuration of %s on %ld GPUs with global batch %ld matches "
                      "(dp = GPUs / (tp·pp%s) must divide the batch%s)",
                      m->name, G, B, o->fix_cp > 1 ? "·cp" : "",
                      o->fix_dp || o->fix_pp || o->fix_tp ? ", with the degrees fixed" : "");
    if (!why->mbs_ok) {
        if (o->fix_m)
            return sc_err(err, SC_EINVAL,
                          "plan: no layout gives %d microbatches with global batch %ld (m = "
                          "batch / (dp·mbs), mbs at most %d)",
                          o->fix_m, B, max_mbs);
        if (o->fix_mbs)
            return sc_err(err, SC_EINVAL,
                          "plan: no layout takes microbatches of %d samples with global batch "
                          "%ld (mbs must divide the global batch / dp, dp at most %ld%s)",
                          o->fix_mbs, B, why->dp_max,
                          o->fix_dp || o->fix_pp || o->fix_tp ? ", with the degrees fixed" : "");
        return sc_err(err, SC_EINVAL,
                      "plan: global batch %ld needs more than 65536 microbatches per pipeline "
                      "with every layout (dp at most %ld, mbs at most %d): use a smaller "
                      "--global-batch or a larger --max-mbs",
                      B, why->dp_max, max_mbs);
    }
    if (!why->sched_ok)
        return sc_err(err, SC_EINVAL, "plan: no schedule accepts the layouts: %s",
                      why->sched_msg[0] ? why->sched_msg : "none matches the fixed choices");
    if (o->fix_sp == 1 && (o->fix_tp == 1 || gpn == 1))
        return sc_err(err, SC_EINVAL,
                      "plan: sequence parallelism (--sp, --fix sp=1) needs tp >= 2, and tp "
                      "is 1 here");
    return sc_err(err, SC_EINVAL, "plan: no configuration of %s matches", m->name);
}

sc_status sc_search_run(const sc_model *m, const sc_cluster *c, const sc_search_opts *o,
                        sc_search **out, sc_error *err)
{
    *out = NULL;
    if (o->global_batch < 1)
        return sc_err(err, SC_EINVAL, "plan: --global-batch must be at least 1");
    if (c->gpu.peak_flops[m->dtype] <= 0)
        return sc_err_no_peak(err, "plan", c, m->dtype, m, NULL);
    if (o->fix_tp && !sc_cost_tp_divides_heads(m, o->fix_tp)) {
        sc_status st = sc_cost_tp_check(m, o->fix_tp, err);
        sc_err_prefix(err, "plan");
        return st;
    }
    /* the overlap settings apply to some candidates; none is a mistake */
    if (o->overlap_param_gather && o->no_overlap_grad_reduce)
        return sc_err(err, SC_EINVAL, "plan: --overlap-param-gather 1 needs the gradient "
                                      "reduction overlapped (--overlap-grad-reduce 1), as "
                                      "Megatron-LM asserts");
    if (o->overlap_param_gather && (o->fix_zero == 0 || o->fix_zero == 3))
        return sc_err(err, SC_EINVAL, "plan: --overlap-param-gather 1 gathers the distributed "
                                      "optimizer's parameters: it needs ZeRO 1 or 2 (--zero %d)",
                      o->fix_zero);
    if (o->tp_comm_overlap && (o->fix_sp == 0 || o->fix_tp == 1))
        return sc_err(err, SC_EINVAL, "plan: --tp-comm-overlap 1 overlaps sequence "
                                      "parallelism's collectives: it needs tp >= 2 with sp "
                                      "(%s)", o->fix_tp == 1 ? "tp is 1" : "sp is off");
    if (o->fix_cp > 1) {
        /* context parallelism: what sim --cp needs of the model and attention */
        sc_step_cfg cc = {.dp = 1, .cp = o->fix_cp, .tp = 1, .pp = 1, .attn = o->attn};
        sc_status cst = sc_step_check_cp(m, &cc, err);
        if (cst) {
            sc_err_prefix(err, "plan");
            return cst;
        }
        if (o->framework && !o->framework->cp)
            return sc_err(err, SC_EINVAL, "plan: --cp: context parallelism runs with Megatron-LM "
                          "(--framework megatron or any), not %s", o->framework->name);
    }
    const sc_framework *fw = o->framework ? o->framework : sc_framework_any();
    if (o->cut_in_layers && !fw->cuts_in_layers)
        return sc_err(err, SC_EINVAL,
                      "plan: --cuts leaves: %s cuts only between layers (--framework any or "
                      "torch cut inside them)",
                      fw->title);
    if (o->framework) {
        /* the fixed choices alone, the free ones at their most permissive */
        sc_fw_layout l = {.tp = o->fix_tp ? o->fix_tp : 1, .pp = o->fix_pp ? o->fix_pp : 1,
                          .v = o->fix_v ? o->fix_v : 1, .m = o->fix_m,
                          .zero = o->fix_zero > 0 ? o->fix_zero : 0, .sp = o->fix_sp > 0,
                          .fp8 = o->fp8, .schedule = o->fix_schedule};
        char buf[512];
        sc_fw_verdict vd = sc_framework_judge(fw, m, &l, buf, sizeof buf);
        if (vd == SC_FW_NOMEM)
            return sc_err(err, SC_ENOMEM, "plan: out of memory");
        if (vd != SC_FW_RUNS)
            return sc_err(err, SC_EINVAL, "plan: --framework %s: %s", fw->name, buf);
    }
    int attention = 0;
    for (int i = 0; i < m->n_leaves && !attention; i++)
        attention = sc_module_is_attention(m->leaves[i]);
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
    if (s->o.simulate <= 0)
        s->o.simulate = SC_SEARCH_SIMULATE;
    s->o.max_mbs = sc_search_max_mbs(o);
    if (s->o.memory_weight < 0)
        s->o.memory_weight = o->optimize_memory ? 0.8 : 0.2;
    snprintf(s->partitioner, sizeof s->partitioner, "%s", part->name);
    s->ncps = cp_degrees(m, c, o, s->cps);

    double t0 = now(), deadline = o->time_limit_s > 0 ? t0 + o->time_limit_s : 0;
    item_list items = {0};
    why_none why = {0};
    double wtotal = 0, wdone = 0;
    sc_status st = enumerate(m, c, o, s->cps, s->ncps, s->o.max_mbs, &items, &why, err);
    if (!st)
        st = count_shapes(&items, o->fix_sp, &s->shapes_total, &wtotal, err);
    sc_search_progress pg = {0, 0, s->shapes_total, 0, 0, 0};
    if (!st)
        st = prefill(s, &items, deadline, t0, &pg, err);
    for (long it = 0; it < items.n && !st; it++) {
        const shape_item *x = &items.a[it];
        int tp = x->tp, pp = x->pp, mbs = x->mbs, v = x->v, cp = x->cp;
        long dp = x->dp, mm = x->mm;
        const char *sched = schedules[x->si];
        /* the limit ends the search once something fits; until then there
         * is no plan to return, so past it each further shape gets the
         * partitioner's first valid split instead of its optimum (one
         * feasibility test or a few instead of up to 130) until one fits */
        int late = deadline > 0 && now() > deadline;
        if (late && s->ncands > 0) {
            s->time_limited = 1;
            break;
        }
        if (late)
            s->time_limited = 1;
        double dl = s->ncands > 0 || late ? deadline : 0;
        /* sequence parallelism: searched where tp > 1 unless fixed */
        int stop = 0, sp0 = o->fix_sp > 0 ? 1 : 0; /* the first sp tried counts the shape */
        for (int sp = 0; sp <= (tp > 1) && !st && !stop; sp++) {
            if (o->fix_sp >= 0 && sp != o->fix_sp)
                continue;
            sc_error terr = {0};
            int fresh;
            int ti = table_for(s, pp, v, tp, sp, mbs, cp, dl, &fresh, &terr);
            if (sp == sp0 && fresh) /* a new shape, partitioned or not */
                wdone += shape_weight(&(table_key){.pp = pp, .v = v});
            /* progress counts each shape once, where it was partitioned:
             * ahead (prefill reported it) or here; prefill may have been cut
             * short by the limit, and the search partition the rest itself */
            if (sp == sp0 && fresh == 2 && terr.status != SC_ENOMEM) {
                pg.done++;
                double f = wdone / (wtotal > 0 ? wtotal : 1);
                pg.fraction = f > pg.fraction ? f : pg.fraction;
                pg.elapsed_s = now() - t0;
                if (o->progress)
                    o->progress(o->progress_ud, &pg);
            }
            if (ti == -2)
                continue; /* failed before: counted and recorded then */
            if (ti < 0) {
                if (terr.status == SC_ENOMEM)
                    st = sc_err(err, SC_ENOMEM, "%s", terr.msg);
                if (terr.status == SC_ENOFIT || terr.status == SC_EINVAL) {
                    s->nofit_shapes++;
                    s->nofit_status = terr.status;
                    memcpy(s->nofit_msg, terr.msg, sizeof s->nofit_msg);
                    s->nofit_key = (table_key){pp, v, tp, mbs, sp, cp};
                }
                if (s->ncands > 0 && dl > 0 && now() > dl) {
                    s->time_limited = 1;
                    stop = 1;
                    break;
                }
                continue; /* no partition for this shape */
            }
            for (int z = 0; z <= 3 && !st; z++) {
                if (o->fix_zero >= 0 ? z != o->fix_zero : (dp == 1 && z > 0))
                    continue;
                sc_fw_layout fl = {.tp = tp, .pp = pp, .v = v, .m = (int)mm, .zero = z, .sp = sp,
                                   .schedule = sched};
                if (!fw_runs(fw, &fl, &why))
                    continue;
                for (int rc = 0; rc < 3 && !st; rc++) {
                    if (o->fix_recompute >= 0 && rc != o->fix_recompute)
                        continue;
                    /* selective recompute of a model without attention
                     * recomputes nothing and saves nothing more: it is
                     * recompute none; with flash attention (which keeps no
                     * scores) it saves nothing more and re-runs the fused
                     * kernel: never better than none */
                    if (rc == SC_RECOMPUTE_SELECTIVE && o->fix_recompute < 0 &&
                        (!attention || o->attn == SC_ATTN_FLASH))
                        continue;
                    sc_candidate cd = {0};
                    cd.cfg = (sc_step_cfg){.dp = (int)dp, .cp = cp > 1 ? cp : 0,
                                           .tp = tp, .pp = pp, .v = v, .m = (int)mm,
                                           .mbs = mbs, .zero = z, .recompute = (sc_recompute)rc,
                                           .sp = sp, .attn = s->o.attn,
                                           .no_overlap_grad_reduce = o->no_overlap_grad_reduce,
                                           .grad_reduce_in_fp32 = o->grad_reduce_in_fp32,
                                           .fp8 = o->fp8,
                                           .no_overlap_p2p_comm = sc_search_p2p_blocks(o, pp, v)};
                    sc_step_overlaps_where_apply(&cd.cfg, o->tp_comm_overlap,
                                                 o->overlap_param_gather);
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
        if (stop)
            break;
    }
    sc_free(items.a);
    s->shapes_done = pg.done; /* partitioned, ahead or here */
    s->t_est = now() - t0;
    if (st) {
        sc_search_free(s);
        return st;
    }
    if (s->ncands == 0 && s->nofit_status == SC_ENOFIT) {
        /* the figure of the shape reported, which the search skipped */
        table_key k = s->nofit_key;
        sc_partition np_ = {0};
        sc_part_request rq = {m, c, k.pp, k.v, k.tp, k.mbs,
                              (int)(sc_cluster_total_gpus(c) / ((long)k.tp * k.pp)),
                              s->o.memory_weight, s->o.optimize_memory, s->o.shared_strict, k.sp,
                              0, 0, s->o.max_mem_bytes / 2, s->o.attn,
                              !s->o.cut_in_layers, s->o.tp_comm_overlap, k.cp, s->o.fp8};
        sc_error e2 = {0};
        if (sc_planner_partition(s->partitioner, &rq, &np_, &e2) == SC_ENOFIT)
            memcpy(s->nofit_msg, e2.msg, sizeof s->nofit_msg);
        sc_partition_free(&np_);
    }
    if (s->ncands == 0) {
        long enumerated = s->enumerated, nofit = s->nofit_shapes;
        int max_mbs = s->o.max_mbs;
        sc_status nst = s->nofit_status;
        char msg[SC_ERRMSG_MAX];
        memcpy(msg, s->nofit_msg, sizeof msg);
        sc_search_free(s);
        if (enumerated == 0 && nofit > 0 && nst == SC_ENOFIT)
            return sc_err(err, SC_ENOFIT, "plan: %s (even with ZeRO 3 and full recompute)", msg);
        if (enumerated == 0 && nofit > 0)
            return sc_err(err, nst, "plan: %s", msg);
        if (enumerated == 0 && why.fw_out > 0)
            return sc_err(err, SC_EINVAL,
                          "plan: --framework %s runs none of the layouts left: %s", fw->name,
                          why.fw_msg);
        if (enumerated == 0)
            return none_matched(m, c, o, max_mbs, &why, err);
        return sc_err(err, SC_ENOFIT,
                      "plan: none of the configurations fits in %.1f GiB per GPU",
                      c->gpu.memory_bytes / (1024.0 * 1024 * 1024));
    }
    /* choose the K to simulate */
    int *order = sc_malloc(sizeof(int) * (size_t)s->ncands);
    s->ranked = sc_malloc(sizeof(int) * (size_t)s->o.simulate);
    s->group = sc_malloc(sizeof(int) * (size_t)s->o.simulate);
    if (!order || !s->ranked || !s->group) {
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
    int K = pool < s->o.simulate ? (int)pool : s->o.simulate;
    double t1 = now();
    int sliceable = o->slices && !sc_model_not_causal(m, NULL); /* not with cp: sim_worker */
    pg.phase = 1;
    pg.total = K;
    /* which to simulate: the first K by estimate, less those above the
     * memory limit and repeats of a configuration already chosen */
    int *jobs = sc_malloc(sizeof(int) * (size_t)(K > 0 ? K : 1));
    int njobs = 0;
    if (!jobs)
        st = sc_err(err, SC_ENOMEM, "plan: out of memory");
    for (int k = 0; k < K && !st; k++) {
        sc_candidate *cd = &s->cands[order[k]];
        cd->cfg.schedule = cd->schedule;
        cd->cfg.partition = &s->tables[cd->part_key].part;
        cd->cfg.one_replica = 1; /* same result as every replica (tests/test_step.c) */
        if (o->max_mem_bytes > 0) {
            sc_step_size z;
            sc_step_size_estimate(m, c, &cd->cfg, &z);
            if (z.bytes > o->max_mem_bytes) {
                char b1[32], b2[32];
                if (!s->over_mem)
                    snprintf(s->over_msg, sizeof s->over_msg,
                             "plan: simulating the best candidate (dp %d tp %d pp %d v %d m %d "
                             "mbs %d %s) needs about %s, above the limit of %s (--max-mem); "
                             "its analytical estimate: step %.4g s, peak %.2f GiB per GPU",
                             cd->cfg.dp, cd->cfg.tp, cd->cfg.pp, cd->cfg.v, cd->cfg.m,
                             cd->cfg.mbs, cd->schedule, sc_fmt_bytes(z.bytes, 1, b1),
                             sc_fmt_bytes(o->max_mem_bytes, 1, b2), cd->est.step_s,
                             cd->est.peak_mem / 1073741824.0);
                s->over_mem++;
                continue;
            }
        }
        int dup = 0;
        for (int i = 0; i < njobs && !dup; i++)
            dup = same_cfg(&s->cands[jobs[i]], cd);
        if (dup) /* merged: the ranked list holds each configuration once */
            continue;
        jobs[njobs++] = order[k];
    }
    /* simulate them on every core (each simulation is independent and
     * deterministic), then rank in estimate order */
    if (!st) {
        sim_pool sp = {.s = s,
                       .m = m,
                       .c = c,
                       .o = o,
                       .jobs = jobs,
                       .njobs = njobs,
                       .deadline = deadline,
                       .sliceable = sliceable,
                       .pg = &pg,
                       .t0 = t0};
        st = run_pool(&sp, err);
        for (int i = 0; i < sp.ran && !st; i++) {
            sc_candidate *cd = &s->cands[jobs[i]];
            if (sp.status[i]) {
                st = sp.status[i];
                if (err)
                    *err = sp.errs[i];
            } else if (cd->sim->fits) {
                s->ranked[s->nranked++] = jobs[i];
            }
        }
        s->time_limited |= sp.time_limited;
        sc_free(sp.status);
        sc_free(sp.errs);
    }
    sc_free(jobs);
    sc_free(order);
    s->t_sim = now() - t1;
    if (st) {
        sc_search_free(s);
        return st;
    }
    if (s->nranked == 0) {
        sc_status rst = s->over_mem ? sc_err(err, SC_EINVAL, "%s", s->over_msg)
                                    : sc_err(err, SC_ENOFIT,
                                             "plan: no simulated configuration fits in memory");
        sc_search_free(s);
        return rst;
    }
    sort_ctx = s;
    if (o->optimize_memory) {
        qsort(s->ranked, (size_t)s->nranked, sizeof *s->ranked, by_sim_step);
        fastest_sim = s->cands[s->ranked[0]].sim->step_time_s;
        qsort(s->ranked, (size_t)s->nranked, sizeof *s->ranked, by_sim_memory);
        for (int i = 0; i < s->nranked; i++)
            s->group[i] = -1; /* the memory ranking has no speed ties */
    } else {
        rank_speed(s);
    }
    /* point every kept candidate's cfg at its owned strings and partition */
    for (int i = 0; i < s->nranked; i++) {
        sc_candidate *cd = &s->cands[s->ranked[i]];
        cd->cfg.schedule = cd->schedule;
        cd->cfg.partition = &s->tables[cd->part_key].part;
        cd->cfg.slice_len = cd->cfg.slices > 1 ? cd->slice_len : NULL;
    }
    *out = s;
    return SC_OK;
}
