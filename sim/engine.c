/* engine.c - the discrete-event engine (see engine.h for the contract).
 *
 * Layout: struct-of-arrays indexed by task, resource, link and flow id;
 * dependencies are appended as (from, to) pairs and turned into a CSR
 * successor list at run time (counting sort, O(T + E)). Resource order is an
 * implicit dependency on the previous task submitted to the same resource
 * (res_next). Flows keep their rate, remaining bytes and predicted end; a
 * rate change pushes a new FLOW_END event and the superseded one is dropped
 * when popped (its time no longer equals the flow's predicted end).
 */
#include "engine.h"
#include "engine_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_END = 0, EV_FLOW_START = 1, EV_FLOW_END = 2 };

struct sc_sim {
    sc_error err; /* sticky error of the adds */

    /* tasks */
    int nt, ct;
    uint8_t *t_type;
    int32_t *t_res;
    int32_t *t_aux; /* flow index for flows */
    double *t_val;  /* duration (compute) or bytes (flow) */
    sc_sim_tag *t_tag; /* NULL until a task has a tag (the step builder gives none:
                        * 32 bytes a task of nothing); then ct of them */

    /* dependencies as added */
    int ne, ce;
    int32_t *e_from, *e_to;

    /* resources */
    int nr, cr;
    char **r_name;
    double *r_busy;
    int32_t *r_last; /* run time: last task submitted so far */
    double *r_slow;  /* sc_sim_set_slowdown's factor (0: none) */
    /* run time, for a resource with a slowdown: its open spans, the compute
     * task running on it (-1: none), that task's remaining work (s at full
     * rate), when it was last updated and its predicted end */
    int32_t *r_open, *r_cur;
    double *r_rem, *r_tl, *r_pe;

    /* slowdown spans (sc_sim_add_span) */
    int nsp, csp;
    int32_t *sp_open, *sp_close, *sp_res;
    int32_t *sp_by_open, *sp_by_close; /* run time: span ids sorted by task */
    uint8_t *sp_state;                 /* run time: 0 not yet open, 1 open, 2 closed */
    uint64_t *sp_key;                  /* run time: sort scratch */
    uint8_t *t_span;                   /* run time: bit 0 a task opens spans, bit 1 closes */
    int span_cap_t;

    /* links */
    int nl, cl;
    char **l_name;
    double *l_bw, *l_lat, *l_bytes, *l_busy, *l_since, *l_cap;
    int32_t **l_flows; /* the slots of the active flows crossing the link */
    int32_t *l_nflows, *l_capflows, *l_cnt;
    uint32_t *l_mark;
    uint8_t *l_dirty;

    /* flows: what is added (task, path); f_slot at run time */
    int nf, cf;
    int32_t *f_task, *f_path;
    uint8_t *f_npath;
    int32_t *f_slot; /* run time: the flow's slot while it moves, else -1 */
    double *f_lscale; /* the flow's path latency is multiplied by this (default 1) */
    /* path pool */
    int np, cp;
    int32_t *path;

    /* run time: a slot per moving flow (a few thousand at once where millions
     * are added), reused as flows finish: its flow, remaining bytes, rate,
     * last update, predicted end, marks, and pos[k], its index in
     * l_flows[its path[k]] */
    int ns, cs, nfree;
    int32_t *s_flow, *s_free;
    double *s_rem, *s_rate, *s_tlast, *s_end;
    uint8_t *s_frozen;
    uint32_t *s_mark;
    int32_t *s_pos; /* SC_SIM_MAX_PATH a slot */

    /* run state */
    int run_cap_t, run_cap_e;
    double *t_start, *t_end;
    int32_t *pend, *res_next, *succ_off, *succ;
    sc_sim_queue queue;
    sc_sim_heap link_heap; /* scratch of the rate recompute */
    int32_t *dirty, *stack, *comp_flows; /* comp_flows: slots, cs of them */
    int ndirty;
    uint32_t epoch;
    double makespan;
    long long events;
    int done;
    int ran; /* results valid */
};

static int fail(sc_sim *s, sc_status st, const char *what)
{
    if (s->err.status == SC_OK)
        sc_err(&s->err, st, "%s", what);
    return -1;
}

#define GROW(s, need, cap, ...)                                                    \
    sc_grow_arrays((void **[]){__VA_ARGS__}, sizes_##cap, (int)SC_ARRAY_LEN(sizes_##cap), need, &(s)->cap)

sc_status sc_sim_new(sc_sim **out, sc_error *err)
{
    *out = sc_calloc(1, sizeof **out);
    if (!*out)
        return sc_err(err, SC_ENOMEM, "sim: out of memory creating the engine");
    return SC_OK;
}

void sc_sim_free(sc_sim *s)
{
    if (!s)
        return;
    sc_free(s->t_type);
    sc_free(s->t_res);
    sc_free(s->t_aux);
    sc_free(s->t_val);
    sc_free(s->t_tag);
    sc_free(s->e_from);
    sc_free(s->e_to);
    for (int i = 0; i < s->nr; i++)
        sc_free(s->r_name[i]);
    sc_free(s->r_name);
    sc_free(s->r_busy);
    sc_free(s->r_last);
    sc_free(s->r_slow);
    sc_free(s->r_open);
    sc_free(s->r_cur);
    sc_free(s->r_rem);
    sc_free(s->r_tl);
    sc_free(s->r_pe);
    sc_free(s->sp_open);
    sc_free(s->sp_close);
    sc_free(s->sp_res);
    sc_free(s->sp_by_open);
    sc_free(s->sp_by_close);
    sc_free(s->sp_state);
    sc_free(s->sp_key);
    sc_free(s->t_span);
    for (int i = 0; i < s->nl; i++) {
        sc_free(s->l_name[i]);
        sc_free(s->l_flows[i]);
    }
    sc_free(s->l_name);
    sc_free(s->l_bw);
    sc_free(s->l_lat);
    sc_free(s->l_bytes);
    sc_free(s->l_busy);
    sc_free(s->l_since);
    sc_free(s->l_cap);
    sc_free(s->l_flows);
    sc_free(s->l_nflows);
    sc_free(s->l_capflows);
    sc_free(s->l_cnt);
    sc_free(s->l_mark);
    sc_free(s->l_dirty);
    sc_free(s->f_task);
    sc_free(s->f_path);
    sc_free(s->f_npath);
    sc_free(s->f_slot);
    sc_free(s->f_lscale);
    sc_free(s->path);
    sc_free(s->s_flow);
    sc_free(s->s_free);
    sc_free(s->s_rem);
    sc_free(s->s_rate);
    sc_free(s->s_tlast);
    sc_free(s->s_end);
    sc_free(s->s_frozen);
    sc_free(s->s_mark);
    sc_free(s->s_pos);
    sc_free(s->t_start);
    sc_free(s->t_end);
    sc_free(s->pend);
    sc_free(s->res_next);
    sc_free(s->succ_off);
    sc_free(s->succ);
    sc_free(s->dirty);
    sc_free(s->stack);
    sc_free(s->comp_flows);
    sc_sim_queue_free(&s->queue);
    sc_sim_heap_free(&s->link_heap);
    sc_free(s);
}

static const size_t sizes_ct[] = {sizeof(uint8_t), sizeof(int32_t), sizeof(int32_t),
                                  sizeof(double)};
static const size_t sizes_ce[] = {sizeof(int32_t), sizeof(int32_t)};

static int grow_tasks(sc_sim *s, int need)
{
    int cap = s->ct;
    if (GROW(s, need, ct, (void **)&s->t_type, (void **)&s->t_res, (void **)&s->t_aux,
             (void **)&s->t_val))
        return -1;
    if (s->t_tag && s->ct > cap) {
        sc_sim_tag *g = sc_realloc(s->t_tag, (size_t)s->ct * sizeof *g);
        if (!g) {
            s->ct = cap; /* the larger arrays stay, unused until the next grow */
            return -1;
        }
        s->t_tag = g;
    }
    return 0;
}

/* The tag array, made at the first tagged task (earlier tasks: all zero). */
static int make_tags(sc_sim *s)
{
    s->t_tag = sc_calloc((size_t)(s->ct > 0 ? s->ct : 1), sizeof *s->t_tag);
    return s->t_tag ? 0 : -1;
}

static const sc_sim_tag no_tag;

static int grow_deps(sc_sim *s, int need)
{
    return GROW(s, need, ce, (void **)&s->e_from, (void **)&s->e_to);
}

void sc_sim_reserve(sc_sim *s, int ntasks, int ndeps)
{
    if (s->err.status != SC_OK)
        return;
    if (ntasks > s->ct)
        grow_tasks(s, ntasks); /* a failure here only means no reservation */
    if (ndeps > s->ce)
        grow_deps(s, ndeps);
}

static char *dup_name(const char *name, int *ok)
{
    *ok = 1;
    if (!name)
        return NULL;
    char *d = sc_strdup(name);
    if (!d)
        *ok = 0;
    return d;
}

static const size_t sizes_cr[] = {sizeof(char *), sizeof(double), sizeof(int32_t),
                                  sizeof(double), sizeof(int32_t), sizeof(int32_t),
                                  sizeof(double), sizeof(double), sizeof(double)};

int sc_sim_add_resource(sc_sim *s, const char *name)
{
    if (s->err.status != SC_OK)
        return -1;
    if (s->nr >= INT32_MAX - 1)
        return fail(s, SC_EINVAL, "sim: too many resources");
    if (GROW(s, s->nr + 1, cr, (void **)&s->r_name, (void **)&s->r_busy, (void **)&s->r_last,
             (void **)&s->r_slow, (void **)&s->r_open, (void **)&s->r_cur, (void **)&s->r_rem,
             (void **)&s->r_tl, (void **)&s->r_pe))
        return fail(s, SC_ENOMEM, "sim: out of memory adding a resource");
    int ok;
    char *d = dup_name(name, &ok);
    if (!ok)
        return fail(s, SC_ENOMEM, "sim: out of memory adding a resource");
    s->r_name[s->nr] = d;
    s->r_busy[s->nr] = 0;
    s->r_slow[s->nr] = 0;
    s->ran = 0;
    return s->nr++;
}

int sc_sim_set_slowdown(sc_sim *s, int resource, double factor)
{
    if (s->err.status != SC_OK)
        return -1;
    if (resource < 0 || resource >= s->nr)
        return fail(s, SC_EINVAL, "sim: slowdown of a resource that does not exist");
    if (!(factor >= 0) || !isfinite(factor))
        return fail(s, SC_EINVAL, "sim: a slowdown factor must be finite and >= 0");
    s->r_slow[resource] = factor;
    s->ran = 0;
    return 0;
}

static const size_t sizes_csp[] = {sizeof(int32_t), sizeof(int32_t),  sizeof(int32_t),
                                   sizeof(int32_t), sizeof(int32_t),  sizeof(uint8_t),
                                   sizeof(uint64_t)};

int sc_sim_add_span(sc_sim *s, int open, int close, int resource)
{
    if (s->err.status != SC_OK)
        return -1;
    if (open < 0 || open >= s->nt || close < 0 || close >= s->nt || resource < 0 ||
        resource >= s->nr)
        return fail(s, SC_EINVAL, "sim: a span needs existing tasks and resource");
    if (s->nsp >= INT32_MAX - 1)
        return fail(s, SC_EINVAL, "sim: too many spans");
    if (GROW(s, s->nsp + 1, csp, (void **)&s->sp_open, (void **)&s->sp_close,
             (void **)&s->sp_res, (void **)&s->sp_by_open, (void **)&s->sp_by_close,
             (void **)&s->sp_state, (void **)&s->sp_key))
        return fail(s, SC_ENOMEM, "sim: out of memory adding a span");
    s->sp_open[s->nsp] = open;
    s->sp_close[s->nsp] = close;
    s->sp_res[s->nsp] = resource;
    s->ran = 0;
    return s->nsp++;
}

static const size_t sizes_cl[] = {sizeof(char *), sizeof(double), sizeof(double),
                                  sizeof(double), sizeof(double), sizeof(double),
                                  sizeof(double), sizeof(int32_t *), sizeof(int32_t),
                                  sizeof(int32_t), sizeof(int32_t), sizeof(uint32_t),
                                  sizeof(uint8_t), sizeof(int32_t), sizeof(int32_t)};

int sc_sim_add_link(sc_sim *s, const char *name, double bandwidth, double latency)
{
    if (s->err.status != SC_OK)
        return -1;
    if (!(bandwidth > 0) || !isfinite(bandwidth)) {
        sc_err(&s->err, SC_EINVAL, "sim: link %s: bandwidth must be a positive number (got %g)",
               name ? name : "(unnamed)", bandwidth);
        return -1;
    }
    if (!(latency >= 0) || !isfinite(latency)) {
        sc_err(&s->err, SC_EINVAL, "sim: link %s: latency must be >= 0 (got %g)",
               name ? name : "(unnamed)", latency);
        return -1;
    }
    /* dirty and stack are per-link scratch arrays used by the recompute. */
    if (GROW(s, s->nl + 1, cl, (void **)&s->l_name, (void **)&s->l_bw, (void **)&s->l_lat,
             (void **)&s->l_bytes, (void **)&s->l_busy, (void **)&s->l_since, (void **)&s->l_cap,
             (void **)&s->l_flows, (void **)&s->l_nflows, (void **)&s->l_capflows,
             (void **)&s->l_cnt, (void **)&s->l_mark, (void **)&s->l_dirty, (void **)&s->dirty,
             (void **)&s->stack))
        return fail(s, SC_ENOMEM, "sim: out of memory adding a link");
    int ok;
    char *d = dup_name(name, &ok);
    if (!ok)
        return fail(s, SC_ENOMEM, "sim: out of memory adding a link");
    int l = s->nl;
    s->l_name[l] = d;
    s->l_bw[l] = bandwidth;
    s->l_lat[l] = latency;
    s->l_bytes[l] = s->l_busy[l] = s->l_since[l] = s->l_cap[l] = 0;
    s->l_flows[l] = NULL;
    s->l_nflows[l] = s->l_capflows[l] = s->l_cnt[l] = 0;
    s->l_mark[l] = 0;
    s->l_dirty[l] = 0;
    s->ran = 0;
    return s->nl++;
}

static int new_task(sc_sim *s, int type, int res, double val, const sc_sim_tag *tag)
{
    if (s->nt >= INT32_MAX - 1)
        return fail(s, SC_EINVAL, "sim: too many tasks");
    if (s->nt == s->ct && grow_tasks(s, s->nt + 1))
        return fail(s, SC_ENOMEM, "sim: out of memory adding a task");
    int t = s->nt++;
    s->t_type[t] = (uint8_t)type;
    s->t_res[t] = res;
    s->t_aux[t] = -1;
    s->t_val[t] = val;
    if (tag && !s->t_tag && make_tags(s)) {
        s->nt--;
        return fail(s, SC_ENOMEM, "sim: out of memory adding a task");
    }
    if (s->t_tag)
        s->t_tag[t] = tag ? *tag : no_tag;
    s->ran = 0;
    return t;
}

int sc_sim_add_compute(sc_sim *s, int resource, double duration, const sc_sim_tag *tag)
{
    if (s->err.status != SC_OK)
        return -1;
    if (resource < -1 || resource >= s->nr) {
        sc_err(&s->err, SC_EINVAL, "sim: task %d: no resource %d (%d defined)", s->nt, resource,
               s->nr);
        return -1;
    }
    if (!(duration >= 0) || !isfinite(duration)) {
        sc_err(&s->err, SC_EINVAL, "sim: task %d: duration must be >= 0 (got %g)", s->nt,
               duration);
        return -1;
    }
    return new_task(s, SC_SIM_COMPUTE, resource, duration, tag);
}

int sc_sim_add_marker(sc_sim *s, const sc_sim_tag *tag)
{
    if (s->err.status != SC_OK)
        return -1;
    return new_task(s, SC_SIM_MARKER, -1, 0, tag);
}

static const size_t sizes_cf[] = {sizeof(int32_t), sizeof(int32_t), sizeof(uint8_t),
                                  sizeof(int32_t), sizeof(double)};
static const size_t sizes_cp[] = {sizeof(int32_t)};
static const size_t sizes_cs[] = {sizeof(int32_t), sizeof(int32_t), sizeof(double),
                                  sizeof(double), sizeof(double), sizeof(double),
                                  sizeof(uint8_t), sizeof(uint32_t),
                                  SC_SIM_MAX_PATH * sizeof(int32_t), sizeof(int32_t)};

int sc_sim_add_flow(sc_sim *s, double bytes, const int *links, int nlinks, int resource,
                    const sc_sim_tag *tag)
{
    if (s->err.status != SC_OK)
        return -1;
    if (!(bytes >= 0) || !isfinite(bytes)) {
        sc_err(&s->err, SC_EINVAL, "sim: flow task %d: bytes must be >= 0 (got %g)", s->nt,
               bytes);
        return -1;
    }
    if (nlinks < 1 || nlinks > SC_SIM_MAX_PATH || !links) {
        sc_err(&s->err, SC_EINVAL, "sim: flow task %d: path needs 1 to %d links (got %d)", s->nt,
               SC_SIM_MAX_PATH, nlinks);
        return -1;
    }
    for (int i = 0; i < nlinks; i++) {
        if (links[i] < 0 || links[i] >= s->nl) {
            sc_err(&s->err, SC_EINVAL, "sim: flow task %d: no link %d (%d defined)", s->nt,
                   links[i], s->nl);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (links[j] == links[i]) {
                sc_err(&s->err, SC_EINVAL, "sim: flow task %d: link %d appears twice in its path",
                       s->nt, links[i]);
                return -1;
            }
    }
    if (resource < -1 || resource >= s->nr) {
        sc_err(&s->err, SC_EINVAL, "sim: flow task %d: no resource %d (%d defined)", s->nt,
               resource, s->nr);
        return -1;
    }
    if (GROW(s, s->nf + 1, cf, (void **)&s->f_task, (void **)&s->f_path, (void **)&s->f_npath,
             (void **)&s->f_slot, (void **)&s->f_lscale) ||
        GROW(s, s->np + nlinks, cp, (void **)&s->path))
        return fail(s, SC_ENOMEM, "sim: out of memory adding a flow");
    int t = new_task(s, SC_SIM_FLOW, resource, bytes, tag);
    if (t < 0)
        return -1;
    int f = s->nf++;
    s->t_aux[t] = f;
    s->f_task[f] = t;
    s->f_path[f] = s->np;
    s->f_npath[f] = (uint8_t)nlinks;
    s->f_lscale[f] = 1;
    memcpy(s->path + s->np, links, (size_t)nlinks * sizeof *links);
    s->np += nlinks;
    return t;
}

int sc_sim_scale_flow_latency(sc_sim *s, int task, double scale)
{
    if (s->err.status != SC_OK)
        return -1;
    if (task < 0 || task >= s->nt || s->t_type[task] != SC_SIM_FLOW) {
        sc_err(&s->err, SC_EINVAL, "sim: task %d is not a flow", task);
        return -1;
    }
    if (!(scale >= 0) || !isfinite(scale)) {
        sc_err(&s->err, SC_EINVAL, "sim: flow task %d: latency scale must be >= 0 (got %g)",
               task, scale);
        return -1;
    }
    s->f_lscale[s->t_aux[task]] = scale;
    return 0;
}

int sc_sim_add_dep(sc_sim *s, int before, int after)
{
    if (s->err.status != SC_OK)
        return -1;
    if (before < 0 || before >= s->nt || after < 0 || after >= s->nt) {
        sc_err(&s->err, SC_EINVAL, "sim: dependency %d -> %d names a task that does not exist "
               "(%d tasks)", before, after, s->nt);
        return -1;
    }
    if (before == after) {
        sc_err(&s->err, SC_EINVAL, "sim: task %d cannot depend on itself", before);
        return -1;
    }
    if (s->ne == s->ce && grow_deps(s, s->ne + 1))
        return fail(s, SC_ENOMEM, "sim: out of memory adding a dependency");
    s->e_from[s->ne] = before;
    s->e_to[s->ne] = after;
    s->ne++;
    s->ran = 0;
    return 0;
}

sc_status sc_sim_status(const sc_sim *s, sc_error *err)
{
    if (s->err.status != SC_OK && err)
        *err = s->err;
    return s->err.status;
}

/* ---- the run ----------------------------------------------------------- */

static inline sc_status push(sc_sim *s, double t, int id, int type)
{
    return sc_sim_queue_push(&s->queue, t, id, type);
}

/* The rate at which a compute task on resource r progresses now. */
static inline double slow_rate(const sc_sim *s, int r)
{
    return s->r_open[r] > 0 ? 1 / (1 + s->r_slow[r]) : 1;
}

static inline sc_status start_task(sc_sim *s, int t, double now)
{
    s->t_start[t] = now;
    int r = s->t_res[t];
    if (s->t_type[t] == SC_SIM_COMPUTE && r >= 0 && s->r_slow[r] > 0) {
        s->r_cur[r] = t;
        s->r_rem[r] = s->t_val[t];
        s->r_tl[r] = now;
        s->r_pe[r] = now + s->t_val[t] / slow_rate(s, r);
        return push(s, s->r_pe[r], t, EV_END);
    }
    if (s->t_type[t] != SC_SIM_FLOW)
        return push(s, now + s->t_val[t], t, EV_END);
    int f = s->t_aux[t];
    double lat = 0;
    const int32_t *p = s->path + s->f_path[f];
    for (int k = 0; k < s->f_npath[f]; k++)
        lat += s->l_lat[p[k]];
    return push(s, now + lat * s->f_lscale[f], t, EV_FLOW_START);
}

/* The first index of sorted ids[0..n) whose key[ids[i]] is >= t. */
static int lower_bound(const int32_t *ids, const int32_t *key, int n, int t)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (key[ids[mid]] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Resource r's open-span count moves by d (+1, -1): when it crosses 0, the
 * compute task running there changes rate and gets a new predicted end (the
 * old END event is dropped when popped). */
static sc_status span_step(sc_sim *s, int r, int d, double now)
{
    double old = slow_rate(s, r);
    int was = s->r_open[r] > 0;
    s->r_open[r] += d;
    int t = s->r_cur[r]; /* set only on a resource with a slowdown */
    if (was == (s->r_open[r] > 0) || t < 0)
        return SC_OK;
    s->r_rem[r] = fmax(0, s->r_rem[r] - (now - s->r_tl[r]) * old);
    s->r_tl[r] = now;
    s->r_pe[r] = now + s->r_rem[r] / slow_rate(s, r);
    return push(s, s->r_pe[r], t, EV_END);
}

/* The spans task t opens and closes as it ends. */
static sc_status spans_at(sc_sim *s, int t, double now)
{
    if (s->t_span[t] & 1)
        for (int i = lower_bound(s->sp_by_open, s->sp_open, s->nsp, t);
             i < s->nsp && s->sp_open[s->sp_by_open[i]] == t; i++) {
            int k = s->sp_by_open[i];
            if (s->sp_state[k] != 0)
                continue;
            s->sp_state[k] = 1;
            if (span_step(s, s->sp_res[k], +1, now))
                return SC_ENOMEM;
        }
    if (s->t_span[t] & 2)
        for (int i = lower_bound(s->sp_by_close, s->sp_close, s->nsp, t);
             i < s->nsp && s->sp_close[s->sp_by_close[i]] == t; i++) {
            int k = s->sp_by_close[i];
            int was_open = s->sp_state[k] == 1;
            s->sp_state[k] = 2; /* closed before it opened: it never will */
            if (was_open && span_step(s, s->sp_res[k], -1, now))
                return SC_ENOMEM;
        }
    return SC_OK;
}

static sc_status finish_task(sc_sim *s, int t, double now)
{
    if (s->nsp && s->t_span[t] && spans_at(s, t, now))
        return SC_ENOMEM;
    s->t_end[t] = now;
    s->done++;
    if (now > s->makespan)
        s->makespan = now;
    int r = s->t_res[t];
    if (r >= 0) {
        s->r_busy[r] += now - s->t_start[t];
        int nx = s->res_next[t];
        if (nx >= 0 && --s->pend[nx] == 0 && start_task(s, nx, now))
            return SC_ENOMEM;
    }
    const int32_t *sc = s->succ + s->succ_off[t], *se = s->succ + s->succ_off[t + 1];
    for (; sc < se; sc++)
        if (--s->pend[*sc] == 0 && start_task(s, *sc, now))
            return SC_ENOMEM;
    return SC_OK;
}

static void mark_dirty(sc_sim *s, int l)
{
    if (!s->l_dirty[l]) {
        s->l_dirty[l] = 1;
        s->dirty[s->ndirty++] = l;
    }
}

/* A free slot (the last freed first, else a new one; comp_flows grows with
 * the slots), or -1 when out of memory. */
static int slot_new(sc_sim *s)
{
    if (s->nfree > 0)
        return s->s_free[--s->nfree];
    if (GROW(s, s->ns + 1, cs, (void **)&s->s_flow, (void **)&s->s_free, (void **)&s->s_rem,
             (void **)&s->s_rate, (void **)&s->s_tlast, (void **)&s->s_end,
             (void **)&s->s_frozen, (void **)&s->s_mark, (void **)&s->s_pos,
             (void **)&s->comp_flows))
        return -1;
    s->s_mark[s->ns] = 0;
    return s->ns++;
}

static sc_status flow_start(sc_sim *s, int t, double now)
{
    int f = s->t_aux[t];
    if (s->t_val[t] <= 0) /* nothing to move: done once the latency is paid */
        return finish_task(s, t, now);
    int q = slot_new(s);
    if (q < 0)
        return SC_ENOMEM;
    s->f_slot[f] = q;
    s->s_flow[q] = f;
    s->s_rem[q] = s->t_val[t];
    s->s_rate[q] = 0;
    s->s_tlast[q] = now;
    s->s_end[q] = INFINITY;
    s->s_frozen[q] = 0;
    const int32_t *p = s->path + s->f_path[f];
    int32_t *pos = s->s_pos + (size_t)q * SC_SIM_MAX_PATH;
    for (int k = 0; k < s->f_npath[f]; k++) {
        int l = p[k];
        if (s->l_nflows[l] == s->l_capflows[l]) {
            int nc = s->l_capflows[l] ? s->l_capflows[l] * 2 : 4;
            int32_t *a = sc_realloc(s->l_flows[l], (size_t)nc * sizeof *a);
            if (!a)
                return SC_ENOMEM;
            s->l_flows[l] = a;
            s->l_capflows[l] = nc;
        }
        if (s->l_nflows[l] == 0)
            s->l_since[l] = now;
        pos[k] = s->l_nflows[l];
        s->l_flows[l][s->l_nflows[l]++] = q;
        mark_dirty(s, l);
    }
    return SC_OK;
}

static void flow_detach(sc_sim *s, int f, double now)
{
    int q = s->f_slot[f];
    const int32_t *p = s->path + s->f_path[f];
    const int32_t *pos = s->s_pos + (size_t)q * SC_SIM_MAX_PATH;
    double bytes = s->t_val[s->f_task[f]];
    for (int k = 0; k < s->f_npath[f]; k++) {
        int l = p[k], i = pos[k];
        int last = --s->l_nflows[l];
        if (i != last) { /* move the last flow into place i */
            int g = s->l_flows[l][last], fg = s->s_flow[g];
            s->l_flows[l][i] = g;
            const int32_t *pg = s->path + s->f_path[fg];
            for (int j = 0; j < s->f_npath[fg]; j++)
                if (pg[j] == l) {
                    s->s_pos[(size_t)g * SC_SIM_MAX_PATH + j] = i;
                    break;
                }
        }
        if (last == 0)
            s->l_busy[l] += now - s->l_since[l];
        s->l_bytes[l] += bytes;
        mark_dirty(s, l);
    }
    s->f_slot[f] = -1;
    s->s_free[s->nfree++] = q; /* s_free has a place for every slot */
}

/* Max-min fair rates for the component(s) of the dirty links, by progressive
 * filling: repeatedly take the link whose remaining capacity per unfrozen
 * flow is smallest and freeze its flows at that share. (Shares only grow as
 * flows freeze, so the popped minimum is the true next bottleneck.) */
static sc_status recompute(sc_sim *s, double now)
{
    uint32_t ep = ++s->epoch;
    int nl = 0, nfl = 0;
    for (int i = 0; i < s->ndirty; i++) {
        int l = s->dirty[i];
        s->l_dirty[l] = 0;
        if (s->l_mark[l] != ep) {
            s->l_mark[l] = ep;
            s->stack[nl++] = l;
        }
    }
    s->ndirty = 0;
    /* stack[0..nl) grows into the component's link list (BFS order). */
    for (int i = 0; i < nl; i++) {
        int l = s->stack[i];
        for (int j = 0; j < s->l_nflows[l]; j++) {
            int q = s->l_flows[l][j], f = s->s_flow[q];
            if (s->s_mark[q] == ep)
                continue;
            s->s_mark[q] = ep;
            s->comp_flows[nfl++] = q;
            const int32_t *p = s->path + s->f_path[f];
            for (int k = 0; k < s->f_npath[f]; k++)
                if (s->l_mark[p[k]] != ep) {
                    s->l_mark[p[k]] = ep;
                    s->stack[nl++] = p[k];
                }
        }
    }
    for (int i = 0; i < nfl; i++) {
        int q = s->comp_flows[i];
        s->s_rem[q] -= s->s_rate[q] * (now - s->s_tlast[q]);
        if (s->s_rem[q] < 0)
            s->s_rem[q] = 0;
        s->s_tlast[q] = now;
        s->s_frozen[q] = 0;
    }
    for (int i = 0; i < nl; i++) {
        int l = s->stack[i];
        s->l_cap[l] = s->l_bw[l];
        s->l_cnt[l] = s->l_nflows[l];
    }
    /* Links keyed by their fair share cap/cnt in a second heap; every change
     * of a link's share pushes a fresh entry and an entry whose key no
     * longer matches is skipped, so a recompute costs
     * O((L_c + F_c*P) log L_c). Ties pop in push order: deterministic. */
    sc_sim_heap *lh = &s->link_heap;
    sc_sim_heap_clear(lh);
    for (int i = 0; i < nl; i++) {
        int l = s->stack[i];
        if (s->l_cnt[l] > 0 && sc_sim_heap_push(lh, s->l_cap[l] / s->l_cnt[l], l, 0))
            return SC_ENOMEM;
    }
    int left = nfl;
    sc_sim_event e;
    while (left > 0 && sc_sim_heap_pop(lh, &e)) {
        int best = e.id;
        if (s->l_cnt[best] == 0 || s->l_cap[best] / s->l_cnt[best] != e.time)
            continue; /* stale */
        double share = e.time;
        for (int j = 0; j < s->l_nflows[best]; j++) {
            int q = s->l_flows[best][j], f = s->s_flow[q];
            if (s->s_frozen[q])
                continue;
            s->s_frozen[q] = 1;
            s->s_rate[q] = share;
            left--;
            const int32_t *p = s->path + s->f_path[f];
            for (int k = 0; k < s->f_npath[f]; k++) {
                int l = p[k];
                s->l_cap[l] -= share;
                if (s->l_cap[l] < 0)
                    s->l_cap[l] = 0;
                s->l_cnt[l]--;
                if (l != best && s->l_cnt[l] > 0 &&
                    sc_sim_heap_push(lh, s->l_cap[l] / s->l_cnt[l], l, 0))
                    return SC_ENOMEM;
            }
        }
    }
    for (int i = 0; i < nfl; i++) {
        int q = s->comp_flows[i];
        double end = s->s_rate[q] > 0 ? now + s->s_rem[q] / s->s_rate[q] : INFINITY;
        if (s->s_rem[q] == 0)
            end = now;
        if (end != s->s_end[q]) {
            s->s_end[q] = end;
            if (isfinite(end) && push(s, end, s->f_task[s->s_flow[q]], EV_FLOW_END))
                return SC_ENOMEM;
        }
    }
    return SC_OK;
}

static int describe(const sc_sim *s, int t, char *buf, size_t cap)
{
    static const char *tn[] = {"compute", "flow", "marker"};
    const sc_sim_tag *g = sc_sim_task_tag(s, t);
    int n = snprintf(buf, cap, "task %d (%s, kind %d a=%d b=%d c=%d d=%d", t, tn[s->t_type[t]],
                     g->kind, g->a, g->b, g->c, g->d);
    int r = s->t_res[t];
    if (r >= 0 && n >= 0 && (size_t)n < cap) {
        if (s->r_name[r])
            n += snprintf(buf + n, cap - (size_t)n, ", on resource '%s'", s->r_name[r]);
        else
            n += snprintf(buf + n, cap - (size_t)n, ", on resource %d", r);
    }
    if (n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, ")");
    return n;
}

/* Called when the queue ran dry with tasks left: every unfinished task has an
 * unfinished predecessor (explicit, or the previous task on its resource), so
 * walking predecessors from the first stuck task must close a cycle. Builds
 * the predecessor lists only now: O(T + E). */
static sc_status report_deadlock(sc_sim *s, sc_error *err)
{
    int nt = s->nt, stuck = -1;
    for (int t = 0; t < nt && stuck < 0; t++)
        if (s->t_end[t] < 0)
            stuck = t;
    int32_t *poff = sc_calloc((size_t)nt + 1, sizeof *poff);
    int32_t *pred = sc_malloc(((size_t)s->ne + 1) * sizeof *pred);
    int32_t *rprev = sc_malloc((size_t)nt * sizeof *rprev);
    int32_t *seen = sc_malloc((size_t)nt * sizeof *seen);
    int32_t *walk = sc_malloc((size_t)nt * sizeof *walk);
    if (!poff || !pred || !rprev || !seen || !walk) {
        sc_free(poff), sc_free(pred), sc_free(rprev), sc_free(seen), sc_free(walk);
        return sc_err(err, SC_EINVAL, "deadlock: %d of %d tasks never ran (task %d among them)",
                      nt - s->done, nt, stuck);
    }
    for (int e = 0; e < s->ne; e++)
        poff[s->e_to[e] + 1]++;
    for (int t = 0; t < nt; t++)
        poff[t + 1] += poff[t];
    int32_t *fill = seen; /* reuse as a cursor array first */
    for (int t = 0; t < nt; t++) {
        fill[t] = poff[t];
        rprev[t] = -1;
    }
    for (int e = 0; e < s->ne; e++)
        pred[fill[s->e_to[e]]++] = s->e_from[e];
    for (int t = 0; t < nt; t++)
        if (s->t_res[t] >= 0 && s->res_next[t] >= 0)
            rprev[s->res_next[t]] = t;
    for (int t = 0; t < nt; t++)
        seen[t] = -1;
    int n = 0, t = stuck;
    while (t >= 0 && seen[t] < 0) {
        seen[t] = n;
        walk[n++] = t;
        int nx = -1;
        if (rprev[t] >= 0 && s->t_end[rprev[t]] < 0)
            nx = rprev[t];
        for (int k = poff[t]; k < poff[t + 1] && nx < 0; k++)
            if (s->t_end[pred[k]] < 0)
                nx = pred[k];
        t = nx;
    }
    char a[256], buf[SC_ERRMSG_MAX];
    describe(s, stuck, a, sizeof a);
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "deadlock: %d of %d tasks never ran; %s waits forever",
                                  nt - s->done, nt, a);
    if (t >= 0 && len < sizeof buf) {
        int from = seen[t];
        len += (size_t)snprintf(buf + len, sizeof buf - len, "; cycle (dependencies and "
                                "resource order): ");
        for (int i = from; i < n && len < sizeof buf; i++) {
            if (i - from >= 8) {
                len += (size_t)snprintf(buf + len, sizeof buf - len, "... ");
                break;
            }
            describe(s, walk[i], a, sizeof a);
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s waits for ", a);
        }
        if (len < sizeof buf)
            snprintf(buf + len, sizeof buf - len, "task %d", t);
    }
    sc_free(poff), sc_free(pred), sc_free(rprev), sc_free(seen), sc_free(walk);
    return sc_err(err, SC_EINVAL, "%s", buf);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ids[0..n) = the span ids sorted by key[id], then id (keys and ids are
 * non-negative int32), through tmp[0..n). */
static void sort_spans(int32_t *ids, const int32_t *key, int n, uint64_t *tmp)
{
    for (int k = 0; k < n; k++)
        tmp[k] = (uint64_t)(uint32_t)key[k] << 32 | (uint32_t)k;
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_u64);
    for (int k = 0; k < n; k++)
        ids[k] = (int32_t)(tmp[k] & 0xffffffffu);
}

static sc_status prepare(sc_sim *s)
{
    int nt = s->nt, ne = s->ne;
    if (nt + 1 > s->run_cap_t) {
        int c = nt + 1;
        double *a = sc_realloc(s->t_start, (size_t)c * sizeof *a);
        if (!a)
            return SC_ENOMEM;
        s->t_start = a;
        a = sc_realloc(s->t_end, (size_t)c * sizeof *a);
        if (!a)
            return SC_ENOMEM;
        s->t_end = a;
        int32_t *b = sc_realloc(s->pend, (size_t)c * sizeof *b);
        if (!b)
            return SC_ENOMEM;
        s->pend = b;
        b = sc_realloc(s->res_next, (size_t)c * sizeof *b);
        if (!b)
            return SC_ENOMEM;
        s->res_next = b;
        b = sc_realloc(s->succ_off, (size_t)(c + 1) * sizeof *b);
        if (!b)
            return SC_ENOMEM;
        s->succ_off = b;
        s->run_cap_t = c;
    }
    if (ne + 1 > s->run_cap_e) {
        int32_t *b = sc_realloc(s->succ, (size_t)(ne + 1) * sizeof *b);
        if (!b)
            return SC_ENOMEM;
        s->succ = b;
        s->run_cap_e = ne + 1;
    }
    /* CSR of successors, in the order the dependencies were added. */
    memset(s->succ_off, 0, (size_t)(nt + 2) * sizeof *s->succ_off);
    memset(s->pend, 0, (size_t)nt * sizeof *s->pend);
    for (int e = 0; e < ne; e++) {
        s->succ_off[s->e_from[e] + 2]++;
        s->pend[s->e_to[e]]++;
    }
    for (int t = 0; t < nt; t++)
        s->succ_off[t + 2] += s->succ_off[t + 1];
    for (int e = 0; e < ne; e++)
        s->succ[s->succ_off[s->e_from[e] + 1]++] = s->e_to[e];
    /* now succ_off[t] .. succ_off[t+1] is task t's range */
    for (int r = 0; r < s->nr; r++) {
        s->r_last[r] = -1;
        s->r_busy[r] = 0;
        s->r_open[r] = 0;
        s->r_cur[r] = -1;
    }
    if (s->nsp) {
        if (nt + 1 > s->span_cap_t) {
            uint8_t *f = sc_realloc(s->t_span, (size_t)(nt + 1));
            if (!f)
                return SC_ENOMEM;
            s->t_span = f;
            s->span_cap_t = nt + 1;
        }
        memset(s->t_span, 0, (size_t)nt);
        memset(s->sp_state, 0, (size_t)s->nsp);
        for (int k = 0; k < s->nsp; k++) {
            s->t_span[s->sp_open[k]] |= 1;
            s->t_span[s->sp_close[k]] |= 2;
        }
        sort_spans(s->sp_by_open, s->sp_open, s->nsp, s->sp_key);
        sort_spans(s->sp_by_close, s->sp_close, s->nsp, s->sp_key);
    }
    for (int t = 0; t < nt; t++) {
        s->t_start[t] = -1;
        s->t_end[t] = -1;
        s->res_next[t] = -1;
        int r = s->t_res[t];
        if (r >= 0) {
            int prev = s->r_last[r];
            if (prev >= 0) {
                s->res_next[prev] = t;
                s->pend[t]++;
            }
            s->r_last[r] = t;
        }
    }
    for (int l = 0; l < s->nl; l++) {
        s->l_bytes[l] = s->l_busy[l] = s->l_since[l] = 0;
        s->l_nflows[l] = 0;
        s->l_dirty[l] = 0;
        s->l_mark[l] = 0;
    }
    for (int f = 0; f < s->nf; f++)
        s->f_slot[f] = -1;
    s->ns = s->nfree = 0;
    s->epoch = 0;
    s->ndirty = 0;
    s->makespan = 0;
    s->events = 0;
    s->done = 0;
    sc_sim_queue_clear(&s->queue);
    return SC_OK;
}

sc_status sc_sim_run(sc_sim *s, sc_error *err)
{
    s->ran = 0;
    if (s->err.status != SC_OK) {
        if (err)
            *err = s->err;
        return s->err.status;
    }
    if (prepare(s))
        return sc_err(err, SC_ENOMEM, "sim: out of memory preparing the run (%d tasks)", s->nt);
    for (int t = 0; t < s->nt; t++)
        if (s->pend[t] == 0 && start_task(s, t, 0.0))
            return sc_err(err, SC_ENOMEM, "sim: out of memory in the event queue");
    double now = 0;
    sc_sim_queue *q = &s->queue;
    for (;;) {
        double next;
        if (s->ndirty && (!sc_sim_queue_next_time(q, &next) || next > now)) {
            if (recompute(s, now))
                return sc_err(err, SC_ENOMEM, "sim: out of memory in the event queue");
            continue;
        }
        double t;
        int32_t id, type;
        if (!sc_sim_queue_pop(q, &t, &id, &type))
            break;
        now = t;
        sc_status st = SC_OK;
        switch (type) {
        case EV_END: {
            int r = s->t_res[id];
            if (r >= 0 && s->r_slow[r] > 0 && s->t_type[id] == SC_SIM_COMPUTE) {
                if (s->r_cur[r] != id || s->r_pe[r] != t)
                    continue; /* superseded by a change of rate */
                s->r_cur[r] = -1;
            }
            st = finish_task(s, id, now);
            break;
        }
        case EV_FLOW_START:
            st = flow_start(s, id, now);
            break;
        default: { /* EV_FLOW_END */
            int f = s->t_aux[id], slot = s->f_slot[f];
            if (slot < 0 || s->s_end[slot] != t)
                continue; /* superseded by a rate change */
            flow_detach(s, f, now);
            st = finish_task(s, id, now);
            break;
        }
        }
        s->events++;
        if (st)
            return sc_err(err, SC_ENOMEM, "sim: out of memory during the run");
    }
    if (s->done < s->nt)
        return report_deadlock(s, err);
    s->ran = 1;
    return SC_OK;
}

/* ---- results ----------------------------------------------------------- */

int sc_sim_task_count(const sc_sim *s) { return s->nt; }
int sc_sim_resource_count(const sc_sim *s) { return s->nr; }
int sc_sim_link_count(const sc_sim *s) { return s->nl; }

sc_sim_task_type sc_sim_task_type_of(const sc_sim *s, int t)
{
    return (sc_sim_task_type)s->t_type[t];
}

const sc_sim_tag *sc_sim_task_tag(const sc_sim *s, int t)
{
    return s->t_tag ? &s->t_tag[t] : &no_tag;
}
int sc_sim_task_resource(const sc_sim *s, int t) { return s->t_res[t]; }
double sc_sim_task_start(const sc_sim *s, int t) { return s->ran ? s->t_start[t] : NAN; }
double sc_sim_task_end(const sc_sim *s, int t) { return s->ran ? s->t_end[t] : NAN; }
double sc_sim_resource_busy(const sc_sim *s, int r) { return s->r_busy[r]; }
const char *sc_sim_resource_name(const sc_sim *s, int r) { return s->r_name[r]; }
double sc_sim_link_bytes(const sc_sim *s, int l) { return s->l_bytes[l]; }
double sc_sim_link_busy(const sc_sim *s, int l) { return s->l_busy[l]; }
const char *sc_sim_link_name(const sc_sim *s, int l) { return s->l_name[l]; }
double sc_sim_makespan(const sc_sim *s) { return s->ran ? s->makespan : NAN; }
long long sc_sim_event_count(const sc_sim *s) { return s->events; }
