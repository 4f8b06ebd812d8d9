/* tune.c - the microbatch sweep, see tune.h. */
#include "tune.h"
#include "json.h"
#include "schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc_tune_free(sc_tune *t)
{
    if (!t)
        return;
    sc_free(t->pts);
    sc_free(t);
}

static int by_m(const void *a, const void *b)
{
    const sc_tune_point *x = a, *y = b;
    return x->m - y->m;
}

sc_status sc_tune_run(const sc_model *m, const sc_cluster *c, const sc_search_opts *opts,
                      sc_tune **out, sc_error *err)
{
    *out = NULL;
    if (!opts->fix_dp || !opts->fix_tp || !opts->fix_pp)
        return sc_err(err, SC_EINVAL, "tune: --dp, --tp and --pp fix the layout to tune");
    sc_search_opts o = *opts;
    if (!o.fix_schedule)
        o.fix_schedule = "1f1b";
    if (!o.fix_v)
        o.fix_v = strcmp(o.fix_schedule, "interleaved") ? 1 : 2;
    if (o.fix_zero < 0)
        o.fix_zero = 0;
    if (o.fix_recompute < 0)
        o.fix_recompute = SC_RECOMPUTE_NONE;
    if (o.fix_sp < 0)
        o.fix_sp = 0;
    if (o.fix_cp < 1)
        o.fix_cp = 1;
    o.simulate = 1 << 20; /* simulate every fitting point */
    o.optimize_memory = 0;
    sc_search *s;
    sc_status st = sc_search_run(m, c, &o, &s, err);
    if (st) {
        /* the search's own "plan: " is this command's name here */
        if (err && !strncmp(err->msg, "plan: ", 6))
            memmove(err->msg, err->msg + 6, strlen(err->msg + 6) + 1);
        sc_err_prefix(err, "tune");
        return st;
    }
    int n;
    sc_search_counts(s, NULL, NULL, &n);
    sc_tune *t = sc_calloc(1, sizeof *t);
    if (t)
        t->pts = sc_calloc((size_t)(n ? n : 1), sizeof *t->pts);
    if (!t || !t->pts) {
        sc_tune_free(t);
        sc_search_free(s);
        return sc_err(err, SC_ENOMEM, "tune: out of memory");
    }
    snprintf(t->model, sizeof t->model, "%s", m->name);
    snprintf(t->cluster, sizeof t->cluster, "%s", c->name);
    snprintf(t->schedule, sizeof t->schedule, "%s", o.fix_schedule);
    t->nodes = c->nodes;
    t->dp = o.fix_dp;
    t->tp = o.fix_tp;
    t->pp = o.fix_pp;
    t->v = o.fix_v;
    t->zero = o.fix_zero;
    t->recompute = (sc_recompute)o.fix_recompute;
    t->sp = o.fix_sp;
    t->cp = o.fix_cp;
    /* the search's rule for which layouts take the overlaps */
    sc_step_cfg lay = {.sp = t->sp, .zero = t->zero,
                       .no_overlap_grad_reduce = o.no_overlap_grad_reduce};
    sc_step_overlaps_where_apply(&lay, o.tp_comm_overlap, o.overlap_param_gather);
    t->tp_comm_overlap = lay.tp_comm_overlap;
    t->overlap_param_gather = lay.overlap_param_gather;
    t->overlap_p2p_comm = !sc_search_p2p_blocks(&o, t->pp, t->v);
    t->grad_reduce_in_fp32 = o.grad_reduce_in_fp32 != 0;
    t->fp8 = o.fp8 != 0;
    t->global_batch = o.global_batch;
    int best_m = n ? sc_search_ranked(s, 0)->cfg.m : 0;
    for (int i = 0; i < n; i++) {
        const sc_candidate *k = sc_search_ranked(s, i);
        const sc_step_result *r = k->sim;
        double peak = sc_step_peak_mem(r);
        t->pts[t->n++] = (sc_tune_point){k->cfg.m, k->cfg.mbs, r->step_time_s, r->bubble_fraction,
                                         r->step_time_s > 0 ? r->breakdown.compute / r->step_time_s
                                                            : 0,
                                         peak, r->tokens_per_s,
                                         k->cfg.slices > 1 ? k->cfg.slices : 0};
    }
    sc_search_free(s);
    qsort(t->pts, (size_t)t->n, sizeof *t->pts, by_m);
    /* the swept points that did not come back, and why */
    long b = o.global_batch % o.fix_dp ? 0 : o.global_batch / o.fix_dp;
    for (long mbs = 1, hi = sc_search_max_mbs(&o); b && mbs <= b && mbs <= hi; mbs++) {
        if (b % mbs || (o.fix_mbs && mbs != o.fix_mbs) || t->n_skipped >= 64)
            continue;
        int mm = (int)(b / mbs), found = 0;
        for (int i = 0; i < t->n && !found; i++)
            found = t->pts[i].m == mm;
        if (found)
            continue;
        char buf[160];
        const sc_sched_impl *impl = sc_sched_find(o.fix_schedule);
        const char *why = impl ? impl->validate(o.fix_pp, mm, o.fix_v, buf, sizeof buf) : NULL;
        t->skipped[t->n_skipped].m = mm;
        t->skipped[t->n_skipped].mbs = (int)mbs;
        snprintf(t->skipped[t->n_skipped].reason, sizeof t->skipped[0].reason, "%s",
                 why ? why : "does not fit in memory");
        t->n_skipped++;
    }
    /* the search's winner: the fastest, or within SC_SEARCH_TIE of it the one
     * needing less memory, as plan ranks them */
    t->best = 0;
    for (int i = 0; i < t->n; i++)
        if (t->pts[i].m == best_m)
            t->best = i;
    *out = t;
    return SC_OK;
}

cJSON *sc_tune_to_json(const sc_tune *t)
{
    sc_json_init();
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    sc_jadd_str(j, "format", SC_TUNE_FORMAT, &oom);
    sc_jadd_str(j, "model", t->model, &oom);
    sc_jadd_str(j, "cluster", t->cluster, &oom);
    sc_jadd_num(j, "nodes", t->nodes, &oom);
    sc_jadd_num(j, "global_batch", (double)t->global_batch, &oom);
    sc_jadd_num(j, "dp", t->dp, &oom);
    sc_jadd_num(j, "tp", t->tp, &oom);
    sc_jadd_num(j, "pp", t->pp, &oom);
    sc_jadd_num(j, "v", t->v, &oom);
    sc_jadd_str(j, "schedule", t->schedule, &oom);
    sc_jadd_num(j, "zero", t->zero, &oom);
    sc_jadd_str(j, "recompute", sc_recompute_name(t->recompute), &oom);
    sc_jadd_bool(j, "sp", t->sp, &oom);
    if (t->cp > 1)
        sc_jadd_num(j, "cp", t->cp, &oom);
    if (t->tp_comm_overlap)
        sc_jadd_bool(j, "tp_comm_overlap", 1, &oom);
    if (t->overlap_param_gather)
        sc_jadd_bool(j, "overlap_param_gather", 1, &oom);
    if (!t->overlap_p2p_comm)
        sc_jadd_bool(j, "overlap_p2p_comm", 0, &oom);
    if (t->grad_reduce_in_fp32)
        sc_jadd_bool(j, "grad_reduce_in_fp32", 1, &oom);
    if (t->fp8)
        sc_jadd_bool(j, "fp8", 1, &oom);
    cJSON *a = sc_jadd_arr(j, "points", &oom);
    for (int i = 0; i < t->n && !oom; i++) {
        const sc_tune_point *p = &t->pts[i];
        cJSON *o = sc_jpush_obj(a, &oom);
        if (!o)
            break;
        sc_jadd_num(o, "m", p->m, &oom);
        sc_jadd_num(o, "mbs", p->mbs, &oom);
        sc_jadd_num(o, "step_time_s", p->step_s, &oom);
        sc_jadd_num(o, "bubble_fraction", p->bubble_fraction, &oom);
        sc_jadd_num(o, "efficiency", p->efficiency, &oom);
        sc_jadd_num(o, "peak_mem_bytes", p->peak_mem, &oom);
        sc_jadd_num(o, "tokens_per_s", p->tokens_per_s, &oom);
        if (p->slices > 1)
            sc_jadd_num(o, "slices", p->slices, &oom);
    }
    sc_jadd_num(j, "best", t->best, &oom);
    if (t->n_skipped) {
        cJSON *sk = sc_jadd_arr(j, "skipped", &oom);
        for (int i = 0; i < t->n_skipped && sk; i++) {
            cJSON *o = sc_jpush_obj(sk, &oom);
            if (!o)
                break;
            sc_jadd_num(o, "m", t->skipped[i].m, &oom);
            sc_jadd_num(o, "mbs", t->skipped[i].mbs, &oom);
            sc_jadd_str(o, "reason", t->skipped[i].reason, &oom);
        }
    }
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

sc_status sc_tune_load(const char *file, sc_tune **out, sc_error *err)
{
    static const char *const top[] = {"format", "model", "cluster", "nodes", "global_batch",
                                      "dp", "tp", "pp", "v", "schedule", "zero", "recompute",
                                      "sp", "cp", "tp_comm_overlap", "overlap_param_gather", "overlap_p2p_comm",
                                      "grad_reduce_in_fp32", "fp8", "points", "best", "skipped", NULL};
    static const char *const pk[] = {"m", "mbs", "step_time_s", "bubble_fraction", "efficiency",
                                     "peak_mem_bytes", "tokens_per_s", "slices", NULL};
    *out = NULL;
    cJSON *j;
    sc_status st = sc_json_load(file, &j, err);
    if (st)
        return st;
    sc_tune *t = sc_calloc(1, sizeof *t);
    if (!t) {
        cJSON_Delete(j);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    const char *s = NULL;
    const cJSON *pts = NULL;
    long v[7] = {0}, best = 0;
    const char *ints[] = {"nodes", "global_batch", "dp", "tp", "pp", "v", "zero"};
    st = sc_json_format(j, file, SC_TUNE_FORMAT, err);
    if (!st)
        st = sc_json_keys(j, file, "", top, err);
    if (!st)
        st = sc_json_str(j, file, "", "model", 1, SC_NAME_MAX, &s, err);
    if (!st)
        snprintf(t->model, sizeof t->model, "%s", s);
    if (!st)
        st = sc_json_str(j, file, "", "cluster", 1, 127, &s, err);
    if (!st)
        snprintf(t->cluster, sizeof t->cluster, "%s", s);
    if (!st)
        st = sc_json_str(j, file, "", "schedule", 1, 31, &s, err);
    if (!st)
        snprintf(t->schedule, sizeof t->schedule, "%s", s);
    for (int i = 0; i < 7 && !st; i++)
        st = sc_json_int(j, file, "", ints[i], 1, i == 6 ? 0 : 1, 1L << 30, &v[i], err);
    if (!st) {
        t->nodes = (int)v[0];
        t->global_batch = v[1];
        t->dp = (int)v[2];
        t->tp = (int)v[3];
        t->pp = (int)v[4];
        t->v = (int)v[5];
        t->zero = (int)v[6];
        st = sc_json_str(j, file, "", "recompute", 1, 16, &s, err);
    }
    if (!st) {
        int r = sc_recompute_parse(s);
        if (r < 0)
            st = sc_err(err, SC_EINVAL, "%s: recompute: \"%s\" is not none, selective or full",
                        file, s);
        t->recompute = (sc_recompute)(r < 0 ? 0 : r);
    }
    if (!st) /* optional: files from before it have none */
        st = sc_json_bool(j, file, "", "sp", 0, &t->sp, err);
    long cpv = 1; /* optional: 1 when absent */
    if (!st)
        st = sc_json_int(j, file, "", "cp", 0, 1, 4096, &cpv, err);
    t->cp = (int)cpv;
    if (!st)
        st = sc_json_bool(j, file, "", "tp_comm_overlap", 0, &t->tp_comm_overlap, err);
    if (!st)
        st = sc_json_bool(j, file, "", "overlap_param_gather", 0, &t->overlap_param_gather,
                          err);
    t->overlap_p2p_comm = 1; /* optional: absent = true */
    if (!st)
        st = sc_json_bool(j, file, "", "overlap_p2p_comm", 0, &t->overlap_p2p_comm, err);
    if (!st)
        st = sc_json_bool(j, file, "", "grad_reduce_in_fp32", 0, &t->grad_reduce_in_fp32, err);
    t->fp8 = 0;
    if (!st)
        st = sc_json_bool(j, file, "", "fp8", 0, &t->fp8, err);
    if (!st)
        st = sc_json_arr(j, file, "", "points", 1, &pts, err);
    if (!st) {
        int n = cJSON_GetArraySize(pts);
        if (n < 1 || n > 1000000)
            st = sc_err(err, SC_EINVAL, "%s: points: %d points (1 to 1000000)", file, n);
        else if (!(t->pts = sc_calloc((size_t)n, sizeof *t->pts)))
            st = sc_err(err, SC_ENOMEM, "%s: out of memory", file);
        int i = 0;
        for (const cJSON *x = pts ? pts->child : NULL; x && !st; x = x->next, i++) {
            char path[48];
            snprintf(path, sizeof path, "points[%d]", i);
            sc_tune_point *p = &t->pts[i];
            long mm = 0, mbs = 0;
            if (!cJSON_IsObject(x)) {
                st = sc_err(err, SC_EPARSE, "%s: %s: must be an object", file, path);
                break;
            }
            st = sc_json_keys(x, file, path, pk, err);
            if (!st)
                st = sc_json_int(x, file, path, "m", 1, 1, 1 << 20, &mm, err);
            if (!st)
                st = sc_json_int(x, file, path, "mbs", 1, 1, 1 << 20, &mbs, err);
            if (!st)
                st = sc_json_num(x, file, path, "step_time_s", 1, 0, 1e9, &p->step_s, err);
            if (!st)
                st = sc_json_num(x, file, path, "bubble_fraction", 1, 0, 1, &p->bubble_fraction,
                                 err);
            if (!st)
                st = sc_json_num(x, file, path, "efficiency", 1, 0, 1, &p->efficiency, err);
            if (!st)
                st = sc_json_num(x, file, path, "peak_mem_bytes", 1, 0, 1e18, &p->peak_mem, err);
            if (!st)
                st = sc_json_num(x, file, path, "tokens_per_s", 1, 0, 1e18, &p->tokens_per_s, err);
            long sl = 0;
            if (!st)
                st = sc_json_int(x, file, path, "slices", 0, 2, 64, &sl, err);
            p->slices = (int)sl;
            p->m = (int)mm;
            p->mbs = (int)mbs;
            t->n = i + 1;
        }
    }
    if (!st)
        st = sc_json_int(j, file, "", "best", 1, 0, t->n - 1, &best, err);
    t->best = (int)best;
    cJSON_Delete(j);
    if (st) {
        sc_tune_free(t);
        return st;
    }
    *out = t;
    return SC_OK;
}
