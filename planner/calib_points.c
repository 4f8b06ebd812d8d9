/* calib_points.c - calibration's points from bench files and measured
 * timelines, and sc_calibrate; see calib_points.h. */
#include "calib_points.h"
#include "stats.h"
#include "bench_file.h"
#include "json.h"
#include "lower.h"
#include "plan.h"
#include "schedule.h"
#include "timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_POINTS 100000
#define MIN_TIME 1e-12 /* a shorter time is no measurement the fits can divide by */

/* A measured plan the op points reference (pts.plans[i] points into it). */
typedef struct opened {
    sc_plan *plan;
    sc_model *model;
} opened;

typedef struct reader {
    const sc_cluster *base;
    sc_calib_points pts;
    int cap_gemm, cap_ops, cap_plans, cap_link, cap_host, cap_open;
    opened *open; /* pts.n_plans of them */
    sc_provenance prov;    /* the first input's that records one */
    char prov_file[512];   /* and its name */
} reader;

/* Room for element n of an array of *cap elements of size bytes: the array
 * (grown by doubling), or NULL when that fails (the array stays). */
static void *room(void *arr, int n, int *cap, size_t size)
{
    if (n < *cap)
        return arr;
    int nc = *cap ? 2 * *cap : 64;
    void *p = sc_realloc(arr, size * (size_t)nc);
    if (p)
        *cap = nc;
    return p;
}

static sc_status nomem(const char *file, sc_error *err)
{
    return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
}

static void reader_free(reader *x)
{
    for (int p = 0; p < x->pts.n_plans; p++) {
        sc_plan_free(x->open[p].plan);
        sc_model_free(x->open[p].model);
    }
    sc_free(x->open);
    sc_free(x->pts.gemm);
    sc_free(x->pts.ops);
    sc_free(x->pts.plans);
    sc_free(x->pts.link);
    sc_free(x->pts.host);
}

/* Compute points of one dtype, one the cluster has a peak for. */
static sc_status check_dtype(reader *x, sc_dtype dt, const char *file, sc_error *err)
{
    if ((int)x->pts.dtype < 0)
        x->pts.dtype = dt;
    else if (x->pts.dtype != dt)
        return sc_err(err, SC_EINVAL,
                      "%s: measured in %s, other inputs in %s: calibrate one dtype at a time",
                      file, sc_dtype_name(dt), sc_dtype_name(x->pts.dtype));
    if (x->base->gpu.peak_flops[dt] <= 0)
        return sc_err(err, SC_EINVAL, "%s: %s has no %s peak to calibrate", file,
                      x->base->name, sc_dtype_name(dt));
    return SC_OK;
}

/* Measurements of one kind of hardware and kernel: a file whose ranks
 * differed is refused, and so is one whose provenance conflicts with the
 * first input's that recorded one (provenance.h). Files without a record
 * (older ones) pass. */
static sc_status check_provenance(reader *x, const sc_provenance *p, const char *file,
                                  sc_error *err)
{
    if (!p->present)
        return SC_OK;
    if (p->mixed[0])
        return sc_err(err, SC_EINVAL,
                      "%s: provenance.mixed: its ranks ran on different hardware or kernels "
                      "(%s): measure on ranks of one kind",
                      file, p->mixed);
    char why[400];
    if (!x->prov.present) {
        x->prov = *p;
        snprintf(x->prov_file, sizeof x->prov_file, "%s", file);
    } else if (sc_provenance_conflict(p, &x->prov, why, sizeof why)) {
        return sc_err(err, SC_EINVAL,
                      "%s: provenance: ran on other hardware or kernels than %s (%s): "
                      "calibrate from measurements of one machine and one BLAS kernel",
                      file, sc_basename(x->prov_file), why);
    }
    return SC_OK;
}

/* ---- bench files ---------------------------------------------------------------- */

static sc_status bench_points(reader *x, const sc_bench_result *b, const char *file,
                              sc_error *err)
{
    const sc_cluster *base = x->base;
    sc_calib_points *pts = &x->pts;
    sc_status st;
    if (!sc_calib_device_matches(base, b->device))
        return sc_err(err, SC_EINVAL, "%s: device: measured on \"%s\", not on %s's %s", file,
                      b->device, base->name, base->gpu.name);
    if (b->ranks > sc_cluster_total_gpus(base))
        return sc_err(err, SC_EINVAL, "%s: ranks: %d ranks, but %s has %ld GPUs", file,
                      b->ranks, base->name, sc_cluster_total_gpus(base));
    /* the reader admits "intra" and "inter" only */
    int link = !strcmp(b->link, "intra") ? SC_LINK_INTRA : SC_LINK_INTER;
    int gemm = b->op == SC_BENCH_GEMM;
    sc_calib_comm op = b->op == SC_BENCH_P2P           ? SC_CALIB_P2P
                       : b->op == SC_BENCH_ALLGATHER     ? SC_CALIB_ALLGATHER
                       : b->op == SC_BENCH_REDUCESCATTER ? SC_CALIB_REDUCESCATTER
                                                         : SC_CALIB_ALLREDUCE;
    if (gemm && (st = check_dtype(x, b->compute_dtype, file, err)))
        return st;
    for (int i = 0; i < b->n_rows; i++) {
        const sc_bench_row *w = &b->rows[i];
        if (!(w->time_s >= MIN_TIME))
            return sc_err(err, SC_EINVAL, "%s: results[%d].time_s: %g is out of range [%g, %g]",
                          file, i, w->time_s, MIN_TIME, SC_BENCH_MAX_TIME);
        if (gemm) {
            sc_calib_gemm *g = room(pts->gemm, pts->n_gemm, &x->cap_gemm, sizeof *g);
            if (!g)
                return nomem(file, err);
            pts->gemm = g;
            double m = w->m, n = w->n, k = w->k;
            g[pts->n_gemm++] = (sc_calib_gemm){2.0 * m * n * k,
                                               (m * k + k * n + m * n) * b->elem_bytes,
                                               w->time_s};
        } else {
            sc_calib_link *l = room(pts->link, pts->n_link, &x->cap_link, sizeof *l);
            if (!l)
                return nomem(file, err);
            pts->link = l;
            l[pts->n_link++] = (sc_calib_link){link, op, op == SC_CALIB_P2P ? 2 : b->ranks,
                                               w->bytes, w->time_s};
        }
    }
    if (pts->n_gemm + pts->n_ops + pts->n_link > MAX_POINTS)
        return sc_err(err, SC_EINVAL, "%s: more than %d points in all", file, MAX_POINTS);
    return SC_OK;
}

static sc_status read_bench(reader *x, const cJSON *j, const char *file, sc_error *err)
{
    sc_bench_result *b = NULL;
    sc_status st = sc_bench_from_json(j, file, &b, err);
    if (!st)
        st = check_provenance(x, &b->prov, file, err);
    if (!st)
        st = bench_points(x, b, file, err);
    sc_bench_result_free(b);
    return st;
}

/* ---- measured timelines --------------------------------------------------------- */

/* The plan a timeline names: as written, else beside the timeline; with its
 * model and cluster. On failure whatever was opened is freed. */
static sc_status open_plan(const char *tl_file, const sc_timeline *t, opened *o,
                           sc_cluster *pc, sc_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s", t->plan_file);
    FILE *f = fopen(path, "r");
    if (!f) {
        const char *slash = strrchr(tl_file, '/');
        if (slash)
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - tl_file), tl_file,
                     sc_basename(t->plan_file));
        f = fopen(path, "r");
    }
    if (!f)
        return sc_err(err, SC_EIO, "%s: plan.file: cannot open %s", tl_file, t->plan_file);
    fclose(f);
    char dg[17];
    sc_status st = sc_plan_file_digest(path, dg, err);
    if (!st && strcmp(dg, t->plan_digest))
        st = sc_err(err, SC_EINVAL, "%s: plan.digest: %s has changed since it was run", tl_file,
                    path);
    if (!st)
        st = sc_plan_load(path, &o->plan, err);
    if (!st)
        st = sc_plan_open(o->plan, path, &o->model, pc, err);
    if (st) {
        sc_plan_free(o->plan);
        sc_model_free(o->model);
        *o = (opened){0};
    }
    return st;
}

/* When the message a RECV waits for was complete on its sender: the end of
 * the sender's measured send (stage `from`, microbatch mb); -1 if absent. */
static double sent_at(const sc_timeline *t, int kind, int from, int mb)
{
    for (int r = 0; r < t->n_ranks; r++)
        for (int i = 0; i < t->ranks[r].n_ops; i++) {
            const sc_tl_op *o = &t->ranks[r].ops[i];
            if (o->kind == kind && o->stage == from && o->mb == mb)
                return o->end;
        }
    return -1;
}

static sc_status push_host(reader *x, sc_calib_host h, const char *file, sc_error *err)
{
    sc_calib_host *n = room(x->pts.host, x->pts.n_host, &x->cap_host, sizeof *n);
    if (!n)
        return nomem(file, err);
    x->pts.host = n;
    n[x->pts.n_host++] = h;
    return SC_OK;
}

/* The host points of one measured plan (see calib_points.h), walking each
 * rank's lowered actions beside its measured ops. O(actions · ops). */
static sc_status host_points(reader *x, const sc_model *m, const sc_cluster *pc,
                             const sc_step_cfg *cfg, const sc_timeline *t, const char *file,
                             sc_error *err)
{
    if (cfg->tp != 1 || cfg->dp != 1 || cfg->recompute != SC_RECOMPUTE_NONE || cfg->pp < 2)
        return SC_OK;
    sc_lowered *lw = NULL;
    sc_status st = sc_lower(m, pc, cfg, &lw, err);
    if (st) {
        if (err)
            sc_err_prefix(err, "%s", file);
        return st;
    }
    for (int r = 0; r < t->n_ranks && !st; r++) {
        const sc_tl_rank *rk = &t->ranks[r];
        int p = rk->pp, peer_node = -1;
        if (p < 0 || p >= cfg->pp) {
            st = sc_err(err, SC_EINVAL, "%s: ranks[%d].pp: %d is not a pipeline position of the "
                        "plan (pp %d)", file, r, p, cfg->pp);
            break;
        }
        const sc_lowered_pos *pos = &lw->pos[p];
        const sc_tl_op *prev = NULL; /* the measured compute op matched last */
        int sends = 0, waited = 0;
        double ready = 0; /* when the messages received since prev were complete */
        int mi = 0;       /* cursor into the rank's measured ops */
        for (int i = 0; i < pos->n && !st; i++) {
            const sc_action *a = &pos->acts[i];
            int kind = a->op;
            if (a->kind == SC_ACT_RECV) {
                int fwd = kind == SC_OP_RECV_F;
                double at = sent_at(t, fwd ? SC_OP_SEND_F : SC_OP_SEND_B,
                                    fwd ? a->stage - 1 : a->stage + 1, a->mb);
                if (at < 0)
                    waited = 1;
                else if (at > ready)
                    ready = at;
                continue;
            }
            if (a->kind == SC_ACT_SEND) {
                sends++;
                for (int q = 0; q < t->n_ranks; q++)
                    if (t->ranks[q].pp == a->peer)
                        peer_node = t->ranks[q].node;
                continue;
            }
            /* one measured op per compute op: its first piece */
            if (a->kind != SC_ACT_COMPUTE || a->piece != 0 ||
                (kind != SC_OP_F && kind != SC_OP_B && kind != SC_OP_W))
                continue;
            /* the next measured compute op, and the bytes posted between
             * the two (sends start when their producer ends) */
            const sc_tl_op *cur = NULL;
            for (; mi < rk->n_ops && !cur; mi++)
                if (rk->ops[mi].stream == SC_STREAM_COMPUTE && rk->ops[mi].kind == kind)
                    cur = &rk->ops[mi];
            if (!cur)
                break; /* the measurement ends early: use what matched */
            double sent = 0;
            for (int q = 0; prev && q < rk->n_ops; q++) {
                const sc_tl_op *o = &rk->ops[q];
                if ((o->kind == SC_OP_SEND_F || o->kind == SC_OP_SEND_B) &&
                    o->start >= prev->end - 1e-9 && o->start <= cur->start)
                    sent += o->bytes;
            }
            if (prev && sends > 0 && !waited && ready <= prev->end && sent > 0 &&
                peer_node >= 0) {
                sc_calib_host h = {peer_node != rk->node ? SC_LINK_INTER : SC_LINK_INTRA, sent,
                                   fmax(0, cur->start - prev->end)};
                st = push_host(x, h, file, err);
            }
            prev = cur;
            sends = waited = 0;
            ready = 0;
        }
    }
    sc_lower_free(lw);
    return st;
}

/* The op points of plan index `plan`: the median duration of each (stage,
 * kind) over ranks and microbatches. */
static sc_status op_points(reader *x, int plan, const sc_step_cfg *cfg, const sc_timeline *t,
                           const char *file, sc_error *err)
{
    static const int kinds[] = {SC_OP_F, SC_OP_B, SC_OP_W, SC_OP_RECOMPUTE, SC_OP_OPTIMIZER};
    sc_calib_points *pts = &x->pts;
    sc_status st = SC_OK;
    int S = cfg->pp * cfg->v;
    for (int s = 0; s < S && !st; s++) {
        for (size_t k = 0; k < SC_ARRAY_LEN(kinds) && !st; k++) {
            if (kinds[k] == SC_OP_OPTIMIZER && s >= cfg->pp)
                continue; /* the optimizer op carries the pipeline position */
            int n = 0, cap = 0;
            double *v = NULL;
            for (int r = 0; r < t->n_ranks && !st; r++)
                for (int i = 0; i < t->ranks[r].n_ops; i++) {
                    const sc_tl_op *o = &t->ranks[r].ops[i];
                    if (o->stage != s || o->kind != kinds[k] || o->stream != SC_STREAM_COMPUTE)
                        continue;
                    double *nv = room(v, n, &cap, sizeof *nv);
                    if (!nv) {
                        st = nomem(file, err);
                        break;
                    }
                    v = nv;
                    v[n++] = o->end - o->start;
                }
            if (!st && n > 0) {
                double med = sc_median(v, (size_t)n);
                sc_calib_op *q = med > 0 ? room(pts->ops, pts->n_ops, &x->cap_ops, sizeof *q)
                                         : NULL;
                if (q) {
                    pts->ops = q;
                    q[pts->n_ops++] = (sc_calib_op){plan, s, kinds[k], med};
                } else if (med > 0) {
                    st = nomem(file, err);
                }
            }
            sc_free(v);
        }
    }
    return st;
}

static sc_status read_timeline(reader *x, const cJSON *j, const char *file, sc_error *err)
{
    const sc_cluster *base = x->base;
    sc_timeline *t;
    sc_status st = sc_timeline_from_json(j, file, &t, err);
    if (st)
        return st;
    if (strcmp(t->source, "exec"))
        st = sc_err(err, SC_EINVAL, "%s: source: a simulated timeline is no measurement", file);
    else if (!t->plan_file[0])
        st = sc_err(err, SC_EINVAL, "%s: plan: missing (which plan was measured?)", file);
    else if (!sc_calib_device_matches(base, t->device))
        st = sc_err(err, SC_EINVAL, "%s: device: measured on \"%s\", not on %s's %s", file,
                    t->device, base->name, base->gpu.name);
    if (!st)
        st = check_provenance(x, &t->prov, file, err);
    opened o = {0};
    sc_cluster pc;
    if (!st)
        st = open_plan(file, t, &o, &pc, err);
    sc_step_cfg cfg;
    if (!st) {
        sc_plan_step_cfg(o.plan, &cfg);
        int n = x->pts.n_plans;
        sc_calib_plan *pl = room(x->pts.plans, n, &x->cap_plans, sizeof *pl);
        if (pl)
            x->pts.plans = pl;
        opened *op = pl ? room(x->open, n, &x->cap_open, sizeof *op) : NULL;
        if (op)
            x->open = op;
        if (!op) {
            sc_plan_free(o.plan);
            sc_model_free(o.model);
            st = nomem(file, err);
        } else {
            /* from here the reader owns the plan and its model */
            op[n] = o;
            const sc_sched_impl *impl = sc_sched_find(o.plan->schedule);
            pl[n] = (sc_calib_plan){
                .model = o.model,
                .part = cfg.partition,
                .cfg = {o.model->dtype, cfg.tp, cfg.mbs, cfg.recompute, cfg.bucket_bytes},
                .pp = cfg.pp,
                .v = cfg.v,
                .dp = cfg.dp,
                .zero = cfg.zero,
                .split = impl && impl->split_backward};
            x->pts.n_plans = n + 1;
        }
    }
    if (!st && t->n_ranks != cfg.dp * cfg.tp * cfg.pp)
        st = sc_err(err, SC_EINVAL, "%s: ranks: %d ranks measured, the plan has dp·tp·pp = %d",
                    file, t->n_ranks, cfg.dp * cfg.tp * cfg.pp);
    if (!st)
        st = check_dtype(x, o.model->dtype, file, err);
    if (!st)
        st = op_points(x, x->pts.n_plans - 1, &cfg, t, file, err);
    if (!st)
        st = host_points(x, o.model, &pc, &cfg, t, file, err);
    sc_timeline_free(t);
    return st;
}

/* ---- sc_calibrate --------------------------------------------------------------- */

sc_status sc_calibrate(const sc_cluster *base, const char *const *files, int nfiles,
                       const char *date, sc_cluster *out, sc_calib_report *rep, sc_error *err)
{
    if (nfiles < 1)
        return sc_err(err, SC_EINVAL, "calibrate: no input files");
    if (nfiles > SC_CLUSTER_MAX_INPUTS)
        return sc_err(err, SC_EINVAL, "calibrate: at most %d input files",
                      SC_CLUSTER_MAX_INPUTS);
    if (rep)
        memset(rep, 0, sizeof *rep);
    reader x = {.base = base, .pts = {.dtype = (sc_dtype)-1}};
    sc_cluster_fits in = {0}; /* the inputs' names and digests */
    sc_status st = SC_OK;
    for (int i = 0; i < nfiles && !st; i++) {
        cJSON *j;
        st = sc_json_load(files[i], &j, err);
        if (st)
            break;
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
        const char *fs = cJSON_IsString(fmt) ? fmt->valuestring : "";
        if (!strcmp(fs, SC_BENCH_FORMAT))
            st = read_bench(&x, j, files[i], err);
        else if (!strcmp(fs, SC_TIMELINE_FORMAT))
            st = read_timeline(&x, j, files[i], err);
        else
            st = sc_err(err, SC_EINVAL,
                        "%s: format: \"%.64s\" is neither a bench (stagecraft.bench/1) nor a "
                        "measured timeline (stagecraft.timeline/1)",
                        files[i], fs);
        if (!st) {
            snprintf(in.input[i], sizeof in.input[i], "%s", sc_basename(files[i]));
            st = sc_json_digest(j, in.digest[i]);
            if (st)
                st = nomem(files[i], err);
        }
        cJSON_Delete(j);
    }
    sc_cluster res;
    if (!st)
        st = sc_calib_fit_points(base, &x.pts, &res, rep, err);
    if (!st) {
        memcpy(res.eff.fits.input, in.input, sizeof in.input);
        memcpy(res.eff.fits.digest, in.digest, sizeof in.digest);
        res.eff.fits.n_inputs = nfiles;
        char now[32];
        if (!date) {
            time_t tt = time(NULL);
            struct tm tmv;
            gmtime_r(&tt, &tmv);
            strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tmv);
            date = now;
        }
        snprintf(res.eff.fits.date, sizeof res.eff.fits.date, "%s", date);
        res.eff.fits.present = 1;
        snprintf(res.eff.provenance, sizeof res.eff.provenance,
                 "calibrated %s from %d file%s by stagecraft calibrate (was: %.400s)", date, nfiles,
                 nfiles == 1 ? "" : "s", base->eff.provenance);
        st = sc_cluster_validate(&res, "calibrate", err);
    }
    if (rep)
        rep->n_files = nfiles;
    reader_free(&x);
    if (st)
        return st;
    *out = res;
    return SC_OK;
}
