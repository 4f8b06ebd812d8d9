/* calib_points.c - calibration's points from bench files and measured
 * timelines, and sc_calibrate; see calib_points.h. */
#include "calib_points.h"
#include "stats.h"
#include "bench_file.h"
#include "json.h"
#include "lower.h"
#include "plan.h"
#include "schedule.h"
#include "step.h"
#include "timeline.h"

#include <math.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_POINTS 100000
#define MIN_TIME 1e-12 /* a shorter time is no measurement the fits can divide by */

/* A measured timeline's speed probe (timeline.h "probe"): its shape, and
 * its slowest and fastest rank's time. */
typedef struct probe_rec {
    char file[512];
    int m, n, k;
    double slow, fast;
    int slow_rank, fast_rank;
} probe_rec;

/* A measured plan the op points reference (pts.plans[i] points into it). */
typedef struct opened {
    sc_plan *plan;
    sc_model *model;
} opened;

typedef struct reader {
    const sc_cluster *base;
    sc_calib_points pts;
    int cap_kern, cap_gemm, cap_ops, cap_plans, cap_link, cap_host, cap_open, cap_overlap, cap_msg;
    int cap_flash;
    opened *open; /* pts.n_plans of them */
    sc_provenance prov;    /* the first input's that records one */
    char prov_file[512];   /* and its name */
    int file;              /* index of the input being read (the points' file) */
    sc_calib_gate *gates;  /* input gates judged so far */
    int n_gates, cap_gates;
    probe_rec *probes;     /* the measured timelines' speed probes, judged once every
                              bench is read */
    int n_probes, cap_probes;
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
    sc_free(x->pts.kern);
    sc_free(x->pts.flash);
    sc_free(x->pts.ops);
    sc_free(x->pts.plans);
    sc_free(x->pts.link);
    sc_free(x->pts.host);
    sc_free(x->pts.overlap);
    sc_free(x->pts.msg);
    sc_free(x->gates);
    sc_free(x->probes);
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
    /* a GPU's GEMMs timed in bursts, at a clock a step does not hold (exec/bench.h "Hot") */
    if (gemm && !strcmp(b->backend, "cuda")) {
        pts->gemm_gpu_files++;
        pts->gemm_burst_files += !(b->hot_s > 0);
    }
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
            double m = w->m, n = w->n, k = w->k, bt = w->batch > 1 ? w->batch : 1;
            g[pts->n_gemm++] = (sc_calib_gemm){2.0 * bt * m * n * k,
                                               bt * (m * k + k * n + m * n) * b->elem_bytes,
                                               w->time_s, x->file, m, n, k, bt};
        } else {
            sc_calib_link *l = room(pts->link, pts->n_link, &x->cap_link, sizeof *l);
            if (!l)
                return nomem(file, err);
            pts->link = l;
            l[pts->n_link++] = (sc_calib_link){link, op, op == SC_CALIB_P2P ? 2 : b->ranks,
                                               w->bytes, w->time_s, x->file,
                                               b->cold_bytes > 0, b->nodes,
                                               b->ranks_per_node};
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

/* ---- fused attention by shape (scripts/bench_flash.py) ----------------------- */

#define SC_FLASH_BENCH_FORMAT "stagecraft.flash_bench/1"

/* Whether name is one of the ", "-separated names of list */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

/* The backend a file's points are fitted from: the one the inputs already
 * fitted, else "flash" (PyTorch's FlashAttention-2) where the file has
 * several, else its only one; the others are named in pts.flash_unused. */
static sc_status flash_backend(reader *x, const cJSON *res, const char *file, sc_error *err)
{
    char seen[8][32];
    int ns = 0, has_flash = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, res)
    {
        const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "backend"));
        if (!b)
            continue; /* the point's own check names it */
        int k = 0;
        while (k < ns && strcmp(seen[k], b))
            k++;
        if (k == ns && ns < 8)
            snprintf(seen[ns++], sizeof seen[0], "%.31s", b);
        has_flash |= !strcmp(b, "flash");
    }
    char *pick = x->pts.flash_backend;
    if (!pick[0] && ns > 0)
        snprintf(pick, sizeof x->pts.flash_backend, "%s", has_flash ? "flash" : seen[0]);
    int found = 0;
    for (int k = 0; k < ns; k++) {
        if (!strcmp(seen[k], pick)) {
            found = 1;
            continue;
        }
        size_t len = strlen(x->pts.flash_unused);
        if (!in_list(x->pts.flash_unused, seen[k]))
            snprintf(x->pts.flash_unused + len, sizeof x->pts.flash_unused - len, "%s%s",
                     len ? ", " : "", seen[k]);
    }
    if (!found)
        return sc_err(err, SC_EINVAL,
                      "%s: results: no point of backend \"%s\", which the other inputs fit "
                      "(calibrate one fused attention kernel at a time)",
                      file, pick[0] ? pick : "?");
    return SC_OK;
}

static sc_status read_flash_bench(reader *x, const cJSON *j, const char *file, sc_error *err)
{
    static const char *const top[] = {"format", "device", "sms",   "torch", "cuda",
                                      "cudnn",  "dtype",  "tokens", "dim",  "iters",
                                      "flops",  "results", "skipped", "dropout", NULL};
    static const char *const keys[] = {"backend", "mask",   "head_dim",  "seq",
                                       "batch",   "heads",  "fwd_s",     "fwd_min_s",
                                       "fwd_bwd_s", "fwd_bwd_min_s", "fwd_tflops",
                                       "fwd_bwd_tflops", NULL};
    const cJSON *res;
    const char *dts, *dev = NULL;
    sc_status st = sc_json_keys(j, file, "", top, err);
    if (!st)
        st = sc_json_str(j, file, "", "dtype", 1, 16, &dts, err);
    if (!st)
        st = sc_json_str(j, file, "", "device", 0, 256, &dev, err);
    if (!st)
        st = sc_json_arr(j, file, "", "results", 1, &res, err);
    double dropout = 0;
    if (!st)
        st = sc_json_num(j, file, "", "dropout", 0, 0, 1, &dropout, err);
    if (st)
        return st;
    /* a cluster's fused attention rates are the kernel's without dropout, as
     * the presets' (Dao 2023, Fig. 4); rates measured with it (bench_flash.py
     * --dropout) are for comparing, not for fitting */
    if (dropout > 0)
        return sc_err(err, SC_EINVAL, "%s: dropout: %g: the fused attention rates calibrate "
                      "fits are without dropout, as the presets'; measure them with "
                      "bench_flash.py --dropout 0", file, dropout);
    sc_dtype dt = strcmp(dts, "bf16") == 0 ? SC_BF16 : strcmp(dts, "fp16") == 0 ? SC_FP16
                                                                                : (sc_dtype)-1;
    if ((int)dt < 0)
        return sc_err(err, SC_EINVAL, "%s: dtype: \"%s\" (a fused attention bench runs bf16 "
                      "or fp16)", file, dts);
    if (x->pts.n_flash > 0 && x->pts.flash_dtype != dt)
        return sc_err(err, SC_EINVAL, "%s: dtype: %s, other fused attention inputs %s", file,
                      dts, sc_dtype_name(x->pts.flash_dtype));
    if (!(x->base->gpu.peak_flops[dt] > 0))
        return sc_err(err, SC_EINVAL, "%s: dtype: %s has no %s peak to calibrate against", file,
                      x->base->name, dts);
    if (dev && !sc_calib_device_matches(x->base, dev))
        return sc_err(err, SC_EINVAL, "%s: device: \"%s\" is not %s's GPU (%s)", file, dev,
                      x->base->name, x->base->gpu.name);
    x->pts.flash_dtype = dt;
    if (cJSON_GetArraySize(res) == 0)
        return sc_err(err, SC_EINVAL, "%s: results: empty", file);
    if ((st = flash_backend(x, res, file, err)))
        return st;
    int i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, res)
    {
        char path[48];
        snprintf(path, sizeof path, "results[%d]", i++);
        const char *b, *mask;
        long hd, seq, batch, heads;
        double f, fb;
        if (!cJSON_IsObject(r))
            return sc_err(err, SC_EINVAL, "%s: %s: not an object", file, path);
        if ((st = sc_json_keys(r, file, path, keys, err)) ||
            (st = sc_json_str(r, file, path, "backend", 1, 31, &b, err)) ||
            (st = sc_json_str(r, file, path, "mask", 1, 16, &mask, err)) ||
            (st = sc_json_int(r, file, path, "head_dim", 1, 1, 1024, &hd, err)) ||
            (st = sc_json_int(r, file, path, "seq", 1, 1, 1L << 24, &seq, err)) ||
            (st = sc_json_int(r, file, path, "batch", 1, 1, 1L << 24, &batch, err)) ||
            (st = sc_json_int(r, file, path, "heads", 1, 1, 1L << 16, &heads, err)) ||
            (st = sc_json_num(r, file, path, "fwd_tflops", 1, 1e-6, 1e5, &f, err)) ||
            (st = sc_json_num(r, file, path, "fwd_bwd_tflops", 1, 1e-6, 1e5, &fb, err)))
            return st;
        int causal = !strcmp(mask, "causal");
        if (!causal && strcmp(mask, "full"))
            return sc_err(err, SC_EINVAL, "%s: %s.mask: \"%s\" (causal or full)", file, path,
                          mask);
        /* forward + backward runs 3.5 forwards' FLOPs: faster than 3.5 times
         * the forward's rate would leave the backward no time */
        if (!(fb < 3.5 * f))
            return sc_err(err, SC_EINVAL, "%s: %s.fwd_bwd_tflops: %g is not below 3.5 x "
                          "fwd_tflops (%g): the backward would take no time", file, path, fb, f);
        if (strcmp(b, x->pts.flash_backend))
            continue;
        sc_calib_flash *q = room(x->pts.flash, x->pts.n_flash, &x->cap_flash, sizeof *q);
        if (!q)
            return nomem(file, err);
        x->pts.flash = q;
        q[x->pts.n_flash++] = (sc_calib_flash){causal, (double)batch * heads, (double)seq,
                                               (double)hd, 1e12 * f, 1e12 * fb, x->file};
    }
    return SC_OK;
}

/* ---- measured timelines --------------------------------------------------------- */

/* The plan a timeline names: as written, else beside the timeline (also
 * where a file of that name is there but is another plan: a results folder
 * copied from the machine that made it, /tmp/x/plan.json, next to one left
 * on this machine); with its model and cluster. On failure whatever was
 * opened is freed. */
static sc_status open_plan(const char *tl_file, const sc_timeline *t, opened *o,
                           sc_cluster *pc, sc_error *err)
{
    char cand[2][4096];
    const char *path = NULL;
    int nc = 0;
    snprintf(cand[nc++], sizeof cand[0], "%s", t->plan_file);
    const char *slash = strrchr(tl_file, '/');
    if (slash)
        snprintf(cand[nc++], sizeof cand[0], "%.*s/%s", (int)(slash - tl_file), tl_file,
                 sc_basename(t->plan_file));
    else
        snprintf(cand[nc++], sizeof cand[0], "%s", sc_basename(t->plan_file));
    sc_status st = SC_OK;
    int found = 0;
    for (int i = 0; i < nc && !found; i++) {
        struct stat sb;
        /* a FIFO would block the open; "-" would read standard input */
        if (!strcmp(cand[i], "-") || (stat(cand[i], &sb) == 0 && !S_ISREG(sb.st_mode)))
            return sc_err(err, SC_EINVAL, "%s: plan.file: %s is not a regular file", tl_file,
                          cand[i]);
        FILE *f = fopen(cand[i], "r");
        if (!f)
            continue;
        fclose(f);
        char dg[17];
        sc_error e2 = {0};
        sc_status s2 = sc_plan_file_digest(cand[i], dg, &e2);
        if (!s2 && strcmp(dg, t->plan_digest))
            s2 = sc_err(&e2, SC_EINVAL, "%s: plan.digest: %s has changed since it was run",
                        tl_file, cand[i]);
        if (!s2) {
            path = cand[i];
            found = 1;
        } else if (!st) { /* the first candidate's refusal is the one reported */
            st = s2;
            if (err)
                *err = e2;
        }
    }
    if (!found && !st)
        return sc_err(err, SC_EIO, "%s: plan.file: cannot open %s", tl_file, t->plan_file);
    if (!found)
        return st;
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
 * rank's lowered actions (lw, the plan's step) beside its measured ops.
 * O(actions · ops). */
static sc_status host_points(reader *x, const sc_lowered *lw, const sc_step_cfg *cfg,
                             const sc_timeline *t, const char *file, sc_error *err)
{
    if (cfg->tp != 1 || cfg->dp != 1 || cfg->recompute != SC_RECOMPUTE_NONE || cfg->pp < 2)
        return SC_OK;
    sc_status st = SC_OK;
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
                                   fmax(0, cur->start - prev->end), x->file, r};
                st = push_host(x, h, file, err);
            }
            prev = cur;
            sends = waited = 0;
            ready = 0;
        }
    }
    return st;
}

/* Records one input gate's verdict for file. */
static sc_status in_gate(reader *x, const char *file, const char *what, const char *name,
                         double value, double limit, int failed, const char *fix,
                         const char *fmt, ...) __attribute__((format(printf, 9, 10)));
static sc_status in_gate(reader *x, const char *file, const char *what, const char *name,
                         double value, double limit, int failed, const char *fix,
                         const char *fmt, ...)
{
    sc_calib_gate *g = room(x->gates, x->n_gates, &x->cap_gates, sizeof *g);
    if (!g)
        return nomem(file, NULL);
    x->gates = g;
    g = &g[x->n_gates++];
    memset(g, 0, sizeof *g);
    snprintf(g->files, sizeof g->files, "%s", sc_basename(file));
    snprintf(g->what, sizeof g->what, "%s", what);
    snprintf(g->gate, sizeof g->gate, "%s", name);
    g->value = value;
    g->limit = limit;
    g->failed = failed;
    snprintf(g->fix, sizeof g->fix, "%s", fix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->figure, sizeof g->figure, fmt, ap);
    va_end(ap);
    return SC_OK;
}

static const char *const rerun_exec =
    "the timeline is damaged or not the executor's: rerun stagecraft exec on the plan";

/* Orders indices of a rank's ops by start time, then index (qsort_r). */
static int by_start(const void *a, const void *b, void *rank)
{
    const sc_tl_rank *rk = rank;
    const sc_tl_op *x = &rk->ops[*(const int *)a], *y = &rk->ops[*(const int *)b];
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* The input gates of a measured timeline (calibrate.h): its steps' spread
 * and drift, and its ops inside the step, of non-negative length, in the
 * plan's range and in its lowered order. */
static sc_status timeline_gates(reader *x, const sc_lowered *lw, const sc_step_cfg *cfg,
                                const sc_timeline *t, const char *file, sc_error *err)
{
    sc_status st = SC_OK;
    const char *steps = "measured steps", *ops = "measured ops";
    if (t->n_steps > 0 && t->step_spread >= 0) {
        st = in_gate(x, file, steps, "spread", t->step_spread, SC_CALIB_SPREAD_CEILING,
                     t->step_spread > SC_CALIB_SPREAD_CEILING,
                     "rerun exec on a quieter machine (more --steps give a steadier median)",
                     "the %d steps spread %.1f%% (interquartile range / median; ceiling %.0f%%)",
                     t->n_steps, 100 * t->step_spread, 100 * SC_CALIB_SPREAD_CEILING);
    } else if (t->n_steps > 1 && t->step_median_s > 0) {
        double range = (t->step_max_s - t->step_min_s) / t->step_median_s;
        st = in_gate(x, file, steps, "spread", range, 2 * SC_CALIB_SPREAD_CEILING,
                     range > 2 * SC_CALIB_SPREAD_CEILING,
                     "rerun exec on a quieter machine (this file has no steps.spread: it "
                     "predates the record)",
                     "the %d steps range %.1f%% of their median ((max - min) / median; "
                     "ceiling %.0f%%)",
                     t->n_steps, 100 * range, 200 * SC_CALIB_SPREAD_CEILING);
    }
    if (!st && t->step_stable >= 0)
        st = in_gate(x, file, steps, "drift", t->step_drift, t->step_tolerance,
                     !t->step_stable,
                     "the steps never settled: rerun exec when the machine is quiet, or with a "
                     "higher --max-steps",
                     "the median of the last %d steps moved %.1f%% from the %d before "
                     "(tolerance %.1f%%)",
                     t->n_steps, 100 * fmax(0, t->step_drift), t->n_steps,
                     100 * t->step_tolerance);
    /* every op inside the step and in range (the reader has refused any op
     * that ends before it starts) */
    int outside = 0, wrong = 0, S = cfg->pp * cfg->v;
    const char *first_out = NULL;
    char where_out[64] = "", where_bad[96] = "";
    double tol = 1e-9 + 1e-6 * t->step_time_s;
    for (int r = 0; r < t->n_ranks; r++)
        for (int i = 0; i < t->ranks[r].n_ops; i++) {
            const sc_tl_op *o = &t->ranks[r].ops[i];
            const char *kn = sc_op_kind_name((sc_op_kind)o->kind);
            if ((o->start < -tol || o->end > t->step_time_s + tol) && !outside++) {
                first_out = kn;
                snprintf(where_out, sizeof where_out, "ranks[%d].ops[%d]", r, i);
            }
            int stage_max = o->kind == SC_OP_OPTIMIZER ? cfg->pp : S;
            if ((o->stage < 0 || o->stage >= stage_max || o->chunk < -1 || o->chunk >= cfg->v ||
                 o->mb < -1 || o->mb >= cfg->m) && !wrong++)
                snprintf(where_bad, sizeof where_bad,
                         ": ranks[%d].ops[%d] %s stage %d chunk %d mb %d", r, i, kn, o->stage,
                         o->chunk, o->mb);
        }
    if (!st && !(t->step_time_s > 0))
        st = in_gate(x, file, ops, "inside", t->step_time_s, 0, 1, rerun_exec,
                     "step_time_s is %g: no step to put the ops in", t->step_time_s);
    else if (!st)
        st = in_gate(x, file, ops, "inside", outside, 0, outside > 0, rerun_exec,
                     outside ? "%d ops outside the step [0, %.6g s], the first %s (%s)"
                             : "%d ops outside the step [0, %.6g s]%s%s",
                     outside, t->step_time_s, outside ? first_out : "", where_out);
    if (!st)
        st = in_gate(x, file, ops, "range", wrong, 0, wrong > 0, rerun_exec,
                     "%d ops outside the plan's stages, chunks or microbatches (pp·v %d, v %d, "
                     "m %d)%s",
                     wrong, S, cfg->v, cfg->m, where_bad);
    /* order: each rank's compute ops by start time, a subsequence of its
     * position's lowered compute actions (first pieces; the optimizer) */
    int disorder = 0;
    char first_dis[112] = "";
    for (int r = 0; r < t->n_ranks && !st && !disorder; r++) {
        const sc_tl_rank *rk = &t->ranks[r];
        if (rk->pp < 0 || rk->pp >= cfg->pp)
            continue; /* host_points names it */
        const sc_lowered_pos *pos = &lw->pos[rk->pp];
        int *idx = sc_malloc(sizeof(int) * (size_t)(rk->n_ops + 1)), n = 0;
        if (!idx)
            return nomem(file, err);
        for (int i = 0; i < rk->n_ops; i++)
            if (rk->ops[i].stream == SC_STREAM_COMPUTE)
                idx[n++] = i;
        qsort_r(idx, (size_t)n, sizeof *idx, by_start, (void *)rk);
        int a = 0;
        for (int k = 0; k < n && !disorder; k++) {
            const sc_tl_op *o = &rk->ops[idx[k]];
            for (; a < pos->n; a++) {
                const sc_action *q = &pos->acts[a];
                if (q->kind != SC_ACT_COMPUTE || q->piece != 0)
                    continue;
                if (q->op == o->kind && q->stage == o->stage &&
                    (o->kind == SC_OP_OPTIMIZER || q->mb == o->mb))
                    break;
            }
            if (a == pos->n) {
                disorder = 1;
                snprintf(first_dis, sizeof first_dis,
                         "ranks[%d]: %s stage %d mb %d at %.6g s is out of the lowered order",
                         r, sc_op_kind_name((sc_op_kind)o->kind), o->stage, o->mb, o->start);
            } else {
                a++;
            }
        }
        sc_free(idx);
    }
    if (!st)
        st = in_gate(x, file, ops, "order", disorder, 0, disorder, rerun_exec,
                     disorder ? "%s" : "every rank's compute ops follow its lowered list%s",
                     first_dis);
    if (st == SC_ENOMEM)
        return nomem(file, err);
    return st;
}

/* The op points of plan index `plan`: the median duration of each (stage,
 * kind) over ranks and microbatches. */
static int by_begin(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The share of [s, e) that the merged intervals iv[0..n) ([start, end)
 * pairs, sorted and disjoint) cover. */
static double covered(const double *iv, int n, double s, double e)
{
    double c = 0;
    for (int i = 0; i < n && iv[2 * i] < e; i++)
        c += fmax(0, fmin(e, iv[2 * i + 1]) - fmax(s, iv[2 * i]));
    return e > s ? c / (e - s) : 0;
}

/* phi[off[r] + i]: the share of rank r's op i that the rank's data-parallel
 * collectives (their intervals merged) overlapped; iv is scratch for
 * 2 (most ops of a rank) doubles. */
static void dp_shares(const sc_timeline *t, double *iv, int *off, double *phi)
{
    for (int r = 0, k = 0; r < t->n_ranks; r++) {
        const sc_tl_rank *rk = &t->ranks[r];
        int n = 0;
        for (int i = 0; i < rk->n_ops; i++) {
            int kd = rk->ops[i].kind;
            if (kd == SC_OP_DP_ALLREDUCE || kd == SC_OP_DP_REDUCESCATTER ||
                kd == SC_OP_DP_ALLGATHER) {
                iv[2 * n] = rk->ops[i].start;
                iv[2 * n + 1] = rk->ops[i].end;
                n++;
            }
        }
        qsort(iv, (size_t)n, 2 * sizeof *iv, by_begin);
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (m > 0 && iv[2 * i] <= iv[2 * m - 1]) {
                iv[2 * m - 1] = fmax(iv[2 * m - 1], iv[2 * i + 1]);
            } else {
                iv[2 * m] = iv[2 * i];
                iv[2 * m + 1] = iv[2 * i + 1];
                m++;
            }
        }
        off[r] = k;
        for (int i = 0; i < rk->n_ops; i++, k++)
            phi[k] = covered(iv, m, rk->ops[i].start, rk->ops[i].end);
    }
}

/* Per (virtual stage, kind) of its compute ops: an op point, the median
 * duration over ranks and microbatches; and (F, B, W, RECOMPUTE) an overlap
 * point (calibrate.h), the median duration and overlapped share of the ops
 * that ran beside their rank's data-parallel collectives (at least
 * SC_CALIB_OVERLAP_MIN_PHI of them) against the median of those that ran
 * beside none. */
static sc_status op_points(reader *x, int plan, const sc_step_cfg *cfg, const sc_timeline *t,
                           const char *file, sc_error *err)
{
    static const int kinds[] = {SC_OP_F, SC_OP_B, SC_OP_W, SC_OP_RECOMPUTE, SC_OP_OPTIMIZER};
    sc_calib_points *pts = &x->pts;
    int S = cfg->pp * cfg->v, most = 0, total = 0;
    for (int r = 0; r < t->n_ranks; r++) {
        most = t->ranks[r].n_ops > most ? t->ranks[r].n_ops : most;
        total += t->ranks[r].n_ops;
    }
    size_t nt = (size_t)total + 1;
    double *iv = sc_malloc(sizeof *iv * (2 * (size_t)most + 2));
    int *off = sc_malloc(sizeof *off * ((size_t)t->n_ranks + 1));
    double *phi = sc_malloc(sizeof *phi * nt), *all = sc_malloc(sizeof *all * nt);
    double *lone = sc_malloc(sizeof *lone * nt), *bt = sc_malloc(sizeof *bt * nt);
    double *bp = sc_malloc(sizeof *bp * nt);
    sc_status st = iv && off && phi && all && lone && bt && bp ? SC_OK : nomem(file, err);
    if (!st)
        dp_shares(t, iv, off, phi);
    for (int s = 0; s < S && !st; s++) {
        for (size_t k = 0; k < SC_ARRAY_LEN(kinds) && !st; k++) {
            if (kinds[k] == SC_OP_OPTIMIZER && s >= cfg->pp)
                continue; /* the optimizer op carries the pipeline position */
            int n = 0, nl = 0, nb = 0;
            for (int r = 0; r < t->n_ranks; r++)
                for (int i = 0; i < t->ranks[r].n_ops; i++) {
                    const sc_tl_op *o = &t->ranks[r].ops[i];
                    if (o->stage != s || o->kind != kinds[k] || o->stream != SC_STREAM_COMPUTE)
                        continue;
                    double d = o->end - o->start, f = phi[off[r] + i];
                    all[n++] = d;
                    if (f == 0) {
                        lone[nl++] = d;
                    } else if (f >= SC_CALIB_OVERLAP_MIN_PHI) {
                        bt[nb] = d;
                        bp[nb++] = f;
                    }
                }
            double med = n > 0 ? sc_median(all, (size_t)n) : 0;
            if (med > 0) {
                sc_calib_op *q = room(pts->ops, pts->n_ops, &x->cap_ops, sizeof *q);
                if (!q) {
                    st = nomem(file, err);
                    break;
                }
                pts->ops = q;
                q[pts->n_ops++] = (sc_calib_op){plan, s, kinds[k], med, x->file};
            }
            if (kinds[k] == SC_OP_OPTIMIZER || !nl || !nb)
                continue;
            double t0 = sc_median(lone, (size_t)nl), tb = sc_median(bt, (size_t)nb);
            if (!(t0 >= MIN_TIME && tb >= MIN_TIME))
                continue;
            sc_calib_overlap *q = room(pts->overlap, pts->n_overlap, &x->cap_overlap,
                                       sizeof *q);
            if (!q) {
                st = nomem(file, err);
                break;
            }
            pts->overlap = q;
            q[pts->n_overlap++] =
                (sc_calib_overlap){tb, t0, sc_median(bp, (size_t)nb), x->file};
        }
    }
    sc_free(iv), sc_free(off), sc_free(phi), sc_free(all), sc_free(lone), sc_free(bt);
    sc_free(bp);
    return st;
}

/* The messages lw sends warm (sc_calib_msg), each distinct (op, bytes) once:
 * its pipeline messages and its tp collectives (a TP action's bytes over the
 * stage's tp_count, as the simulator and the executor split it). */
static sc_status msg_points(reader *x, const sc_lowered *lw, const char *file, sc_error *err)
{
    sc_calib_points *pts = &x->pts;
    for (int p = 0; p < lw->cfg.pp; p++)
        for (int i = 0; i < lw->pos[p].n; i++) {
            const sc_action *a = &lw->pos[p].acts[i];
            sc_calib_msg m;
            if (a->kind == SC_ACT_SEND) {
                m = (sc_calib_msg){SC_CALIB_P2P, a->bytes};
            } else if (a->kind == SC_ACT_TP) {
                m.op = a->coll == SC_COLL_ALLREDUCE        ? SC_CALIB_ALLREDUCE
                       : a->coll == SC_COLL_REDUCE_SCATTER ? SC_CALIB_REDUCESCATTER
                                                           : SC_CALIB_ALLGATHER;
                m.bytes = sc_lowered_tp_msg(lw, a);
            } else {
                continue;
            }
            int seen = !(m.bytes > 0);
            for (int k = 0; k < pts->n_msg && !seen; k++)
                seen = pts->msg[k].op == m.op && pts->msg[k].bytes == m.bytes;
            if (seen)
                continue;
            if (pts->n_msg >= MAX_POINTS)
                return sc_err(err, SC_EINVAL, "%s: more than %d distinct message sizes", file,
                              MAX_POINTS);
            sc_calib_msg *q = room(pts->msg, pts->n_msg, &x->cap_msg, sizeof *q);
            if (!q)
                return nomem(file, err);
            pts->msg = q;
            q[pts->n_msg++] = m;
        }
    return SC_OK;
}

/* Keeps t's probe for probe_gates. */
static sc_status keep_probe(reader *x, const sc_timeline *t, const char *file, sc_error *err)
{
    probe_rec *p = room(x->probes, x->n_probes, &x->cap_probes, sizeof *p);
    if (!p)
        return nomem(file, err);
    x->probes = p;
    p = &p[x->n_probes++];
    memset(p, 0, sizeof *p);
    snprintf(p->file, sizeof p->file, "%s", file);
    p->m = t->probe_m;
    p->n = t->probe_n;
    p->k = t->probe_k;
    p->fast = INFINITY;
    for (int r = 0; r < t->n_ranks; r++) {
        double v = t->ranks[r].probe_s;
        if (v > p->slow) {
            p->slow = v;
            p->slow_rank = r;
        }
        if (v < p->fast) {
            p->fast = v;
            p->fast_rank = r;
        }
    }
    return SC_OK;
}

/* The probe gate (calibrate.h): each kept probe against the fastest gemm
 * bench point of its shape; a probe without one is not judged. */
static sc_status probe_gates(reader *x, sc_error *err)
{
    for (int i = 0; i < x->n_probes; i++) {
        const probe_rec *p = &x->probes[i];
        double ref = INFINITY;
        for (int g = 0; g < x->pts.n_gemm; g++) {
            const sc_calib_gemm *q = &x->pts.gemm[g];
            if (q->m == p->m && q->n == p->n && q->k == p->k && !(q->batch > 1))
                ref = fmin(ref, q->t);
        }
        if (!isfinite(ref))
            continue;
        double hi = p->slow / ref - 1, lo = 1 - p->fast / ref;
        int slow = hi >= lo;
        double dev = slow ? hi : lo;
        char fig[256];
        snprintf(fig, sizeof fig,
                 "rank %d ran the %dx%dx%d probe GEMM in %.3g ms (its median over the steps), "
                 "%.1f%% %s than the gemm bench's %.3g ms (ceiling %.0f%%)",
                 slow ? p->slow_rank : p->fast_rank, p->m, p->n, p->k,
                 1e3 * (slow ? p->slow : p->fast), 100 * fabs(dev), slow ? "slower" : "faster",
                 1e3 * ref, 100 * SC_CALIB_PROBE_CEILING);
        sc_status st = in_gate(
            x, p->file, "measured steps", "probe", dev, SC_CALIB_PROBE_CEILING,
            dev > SC_CALIB_PROBE_CEILING,
            slow ? "the ranks got less of their devices than the lone bench did (cores shared "
                   "with another job, or a cloud host's hardware threads): measure again when "
                   "the machine is quiet"
                 : "the gemm bench ran slower than the plan's ranks: bench gemm again when the "
                   "machine is quiet",
            "%s", fig);
        if (st)
            return nomem(p->file, err);
    }
    return SC_OK;
}

void sc_calib_kernel_of(const sc_tl_kernel *k, sc_calib_kernel *q)
{
    memset(q, 0, sizeof *q);
    q->t = k->time_s;
    if (!strcmp(k->op, "mem")) {
        q->bytes = k->bytes;
        return;
    }
    double B = k->batch, M = k->m, N = k->n, K = k->k;
    int fwd = !strcmp(k->pass, "F"), core = !strcmp(k->op, "core");
    int in = !fwd && (core || strcmp(k->pass, "W"));
    int wt = !fwd && (core || strcmp(k->pass, "B"));
    double sp = k->splits > 1 ? k->splits : 1; /* the pass's first GEMM's chunks */
    if (fwd)
        memcpy(q->gemm[q->n_gemm++], (double[6]){B, M, N, K, 0, sp}, sizeof q->gemm[0]);
    if (in)
        memcpy(q->gemm[q->n_gemm++], (double[6]){B, M, K, N, 1, sp}, sizeof q->gemm[0]);
    if (wt)
        memcpy(q->gemm[q->n_gemm++], (double[6]){B, K, N, M, 1, in ? 1 : sp},
               sizeof q->gemm[0]);
}

/* The kernels exec --kernels timed alone, as points (sc_calib_kernel_of). */
static sc_status kernel_points(reader *x, const sc_timeline *t, const char *file, sc_error *err)
{
    for (int i = 0; i < t->n_kernels; i++) {
        if (!(t->kernels[i].time_s > 0))
            continue;
        sc_calib_kernel *q = room(x->pts.kern, x->pts.n_kern, &x->cap_kern, sizeof *q);
        if (!q)
            return nomem(file, err);
        x->pts.kern = q;
        q += x->pts.n_kern++;
        sc_calib_kernel_of(&t->kernels[i], q);
        q->file = x->file;
    }
    return SC_OK;
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
    /* its fused attention as the executor ran it (sc_timeline_flash_gemms) */
    int flash_gemms = !st && sc_timeline_flash_gemms(t);
    if (!st)
        pc.eff.gemm.flash_gemms = flash_gemms;
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
                .cfg = sc_step_stage_cfg(o.model, &cfg),
                .pp = cfg.pp,
                .v = cfg.v,
                .dp = cfg.dp,
                .zero = cfg.zero,
                .split = impl && impl->split_backward,
                .step_s = t->step_time_s,
                .flash_gemms = flash_gemms,
                .file = x->file};
            x->pts.n_plans = n + 1;
        }
    }
    if (!st && t->n_ranks != cfg.dp * cfg.tp * cfg.pp)
        st = sc_err(err, SC_EINVAL, "%s: ranks: %d ranks measured, the plan has dp·tp·pp = %d",
                    file, t->n_ranks, cfg.dp * cfg.tp * cfg.pp);
    if (!st)
        st = check_dtype(x, o.model->dtype, file, err);
    /* the plan's step as the executor ran it, for the order gate and the
     * host points */
    sc_lowered *lw = NULL;
    if (!st && cfg.slices > 1)
        st = sc_err(err, SC_ENOTSUP, "%s: its plan has token slices, which the executor does "
                    "not run: nothing to calibrate from", file);
    if (!st && cfg.cp > 1)
        st = sc_err(err, SC_ENOTSUP, "%s: its plan has context parallelism (cp %d): every "
                    "forward and backward ran beside a key/value ring, so neither their time "
                    "alone nor the slowdown beside a collective can be read from it; calibrate "
                    "from plans without it (`compare` still checks this one)", file, cfg.cp);
    if (!st && cfg.tp_comm_overlap)
        st = sc_err(err, SC_ENOTSUP, "%s: its plan has tp_comm_overlap: every forward and "
                    "backward ran beside a tp collective, so neither their time alone nor the "
                    "slowdown beside a collective can be read from it; calibrate from plans "
                    "without it (`compare` still checks this one)", file);
    if (!st && (st = sc_lower(o.model, &pc, &cfg, &lw, err)) && err)
        sc_err_prefix(err, "%s", file);
    if (!st && t->probe_m > 0)
        st = keep_probe(x, t, file, err);
    if (!st)
        st = timeline_gates(x, lw, &cfg, t, file, err);
    if (!st)
        st = op_points(x, x->pts.n_plans - 1, &cfg, t, file, err);
    if (!st)
        st = kernel_points(x, t, file, err);
    if (!st)
        st = host_points(x, lw, &cfg, t, file, err);
    if (!st)
        st = msg_points(x, lw, file, err);
    sc_lower_free(lw);
    sc_timeline_free(t);
    return st;
}

/* ---- sc_calibrate --------------------------------------------------------------- */

/* sc_calib_replay_fn over the reader's opened plans: the plan's step on c at
 * the plan's node count, as `compare --cluster` simulates it. */
static int replay(void *ctx, int plan, const sc_cluster *c, double *step_s, char *why,
                  size_t cap)
{
    const reader *x = ctx;
    const opened *o = &x->open[plan];
    sc_cluster cc = *c;
    cc.eff.gemm.flash_gemms = x->pts.plans[plan].flash_gemms; /* as its step ran */
    sc_error e = {0};
    sc_step_cfg cfg;
    sc_step_result *r = NULL;
    sc_status st = sc_cluster_set_nodes(&cc, o->plan->nodes, &e);
    if (!st) {
        sc_plan_step_cfg(o->plan, &cfg);
        st = sc_step_simulate(o->model, &cc, &cfg, &r, &e);
    }
    if (st) {
        snprintf(why, cap, "%s", e.msg);
        return 1;
    }
    *step_s = r->step_time_s;
    sc_step_result_free(r);
    return 0;
}

sc_status sc_calibrate(const sc_cluster *base, const char *const *files, int nfiles,
                       const char *date, int flags, sc_cluster *out, sc_calib_report *rep,
                       sc_error *err)
{
    int force = !!(flags & SC_CALIB_FORCE);
    if (nfiles < 1)
        return sc_err(err, SC_EINVAL, "calibrate: no input files");
    if (nfiles > SC_CLUSTER_MAX_INPUTS)
        return sc_err(err, SC_EINVAL, "calibrate: at most %d input files",
                      SC_CLUSTER_MAX_INPUTS);
    if (rep)
        memset(rep, 0, sizeof *rep);
    reader x = {.base = base, .pts = {.dtype = (sc_dtype)-1}};
    sc_cluster_fits in = {0}; /* the inputs' names and digests */
    const char *names[SC_CLUSTER_MAX_INPUTS];
    sc_status st = SC_OK;
    for (int i = 0; i < nfiles && !st; i++) {
        cJSON *j;
        x.file = i;
        names[i] = sc_basename(files[i]);
        st = sc_json_load(files[i], &j, err);
        if (st)
            break;
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
        const char *fs = cJSON_IsString(fmt) ? fmt->valuestring : "";
        if (!strcmp(fs, SC_BENCH_FORMAT))
            st = read_bench(&x, j, files[i], err);
        else if (!strcmp(fs, SC_TIMELINE_FORMAT))
            st = read_timeline(&x, j, files[i], err);
        else if (!strcmp(fs, SC_FLASH_BENCH_FORMAT))
            st = read_flash_bench(&x, j, files[i], err);
        else
            st = sc_err(err, SC_EINVAL,
                        "%s: format: \"%.64s\" is not a bench (stagecraft.bench/1), a "
                        "measured timeline (stagecraft.timeline/1) or a fused attention bench "
                        "(stagecraft.flash_bench/1)",
                        files[i], fs);
        if (!st) {
            snprintf(in.input[i], sizeof in.input[i], "%s", sc_basename(files[i]));
            st = sc_json_digest(j, in.digest[i]);
            if (st)
                st = nomem(files[i], err);
        }
        cJSON_Delete(j);
    }
    if (!st)
        st = probe_gates(&x, err);
    sc_cluster res;
    x.pts.n_files = nfiles;
    x.pts.files = names;
    x.pts.n_in_gates = x.n_gates;
    x.pts.in_gates = x.gates;
    x.pts.replay = replay;
    x.pts.replay_ctx = &x;
    x.pts.size_factors = !!(flags & SC_CALIB_SIZE_FACTORS);
    x.pts.fit_kernels = !!(flags & SC_CALIB_KERNELS);
    if (!st)
        st = sc_calib_fit_points(base, &x.pts, force, &res, rep, err);
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
