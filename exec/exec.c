/* exec.c - the schedule interpreter: one rank's share of a plan's step on a
 * backend (see exec.h for what runs and how it is measured, backend.h for
 * the device interface). Backend-agnostic: every device call goes through
 * the sc_backend table.
 *
 * Cost: setup O(leaves + ops); each step runs the rank's schedule list once
 * (O(m·v) ops plus their work); rank 0's gather is O(ranks · ops).
 */
#include "exec.h"
#include "backend.h"
#include "cost.h"
#include "exec_int.h"
#include "json.h"
#include "lower.h"
#include "stats.h"
#include "model.h"
#include "plan.h"
#include "step.h"
#include "timeline.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BUCKETS SC_MAX_BUCKETS
#define CLOCK_ROUNDS 8

enum { IT_WGEMM = 0, IT_CORE, IT_MEM };

/* One piece of a stage's forward: a GEMM with weights (backward: an
 * input-gradient and a weight-gradient GEMM), an attention-core GEMM
 * (backward: two input-gradient GEMMs) or a memory-bound pass. */
typedef struct item {
    int type, m, n, k, batch;
    int fsplit, dsplit; /* the forward and the data gradient in this many chunks of
                           ceil(m / split) rows (TE's tp overlap, sc_cost_kernel_splits) */
    size_t bytes;     /* IT_MEM: the forward's bytes */
    size_t bwd_bytes; /* IT_MEM: the backward's (the cost model's figures) */
    const char *name; /* the model's kernel name, or the leaf's kind (the model owns it) */
    int in_layer;     /* its leaf lies in a layer (or the model has none): full
                         recompute re-runs it (sc_stage_info recompute_full_s) */
} item;

typedef struct stage_work {
    int s, chunk;
    item *it;
    int n;
    sc_stage_info info;
} stage_work;

/* One op of the measured timeline on this rank. */
typedef struct rec {
    int kind, stage, chunk, mb, stream;
    double bytes, t0, t1;
} rec;

/* An outstanding communication. */
typedef struct pend {
    sc_req *req;
    int rec;      /* index into the step's records, -1 if not recorded (a receive) */
    int buf;      /* buffer id it uses (hazard tracking), -1 none */
    int kind, stage, mb, peer;
    int act;      /* the lowered action that posted it, -1 none */
} pend;

struct sc_exec {
    const sc_backend *be;
    sc_bk *bk;
    int rank, size;
    sc_plan *plan;
    char plan_file[512];
    sc_model *model;
    sc_cluster cluster;
    sc_step_cfg cfg;
    sc_lowered *lw;       /* the step this rank interprets: lw->pos[p] */
    const sc_stage_info *info; /* lw->info, per virtual stage */
    char *optdep;         /* per action of the position: the optimizer waits for it */
    int d, p, t, S, split;
    int cur_rec;          /* the record of the compute op whose pieces are running */
    int cur_act;          /* the action being interpreted */
    sc_dtype dt, cdt;
    size_t ce;            /* bytes per compute element */
    sc_exec_opts o;
    int fault_rank, fault_step, fault_hang, fault_corrupt;
    /* work */
    stage_work *sw;       /* v entries: chunk c */
    /* communicators */
    sc_comm *tpc, *dpc, **shc, **chan; /* chan[dir * S + s] */
    sc_comm *cpc;         /* context parallelism: this rank's cp group (NULL without) */
    unsigned char *cp_issued; /* per action of the list: its cp ring already issued */
    int n_shared;         /* communicators in shc: one per tie of the lowered step */
    /* buffers */
    sc_dbuf *A, *B, *G, *O; /* GEMM inputs (activation, weight, gradient) and outputs */
    sc_dbuf *M0, *M1, *opt, *tpb, *zb, *shb, *agb, *cpb;
    sc_dbuf **sendb;      /* [dir][chunk][mb] */
    sc_dbuf **recvb;      /* [dir][chunk] */
    sc_dbuf **gradb;      /* [chunk][bucket] */
    /* per step */
    rec *recs;
    int nrec, caprec;
    pend *pend;
    int npend, cappend;
    sc_ev **evs;
    int nev, capev;
    int *ev_rec;          /* record index of each event pair */
    long checked;
    int step;             /* global index (warm-up included) */
    int verify_now;
    double *offset;       /* rank 0: clock(r) - clock(0) */
};

/* ---- small helpers --------------------------------------------------------- */

static double deadline(sc_exec *x) { return x->be->now(x->bk) + x->o.timeout_s; }

static int rank_of(sc_exec *x, int d, int p, int t) { return sc_step_rank(&x->cfg, d, p, t); }

static sc_status timed_out(sc_exec *x, sc_error *err, int kind, int stage, int mb, int peer)
{
    char what[64];
    snprintf(what, sizeof what, "%s", kind >= 0 ? sc_op_kind_name(kind) : "barrier");
    return sc_err(err, SC_EIO,
                  "rank %d: timed out after %g s waiting for %s (stage %d, mb %d) from rank %d",
                  x->rank, x->o.timeout_s, what, stage, mb, peer);
}

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = sc_realloc(*p, elem * (size_t)n);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int add_rec(sc_exec *x, int kind, int stage, int chunk, int mb, int stream,
                   double bytes)
{
    if (grow((void **)&x->recs, &x->caprec, x->nrec + 1, sizeof(rec)))
        return -1;
    x->recs[x->nrec] = (rec){kind, stage, chunk, mb, stream, bytes, 0, 0};
    return x->nrec++;
}

/* ---- work of a stage ------------------------------------------------------- */

static int clampi(double v)
{
    if (!(v >= 1))
        return 1;
    return v > 1e9 ? 1000000000 : (int)llround(v);
}

static int push_item(item **it, int *n, int *cap, item v)
{
    if (grow((void **)it, cap, *n + 1, sizeof(item)))
        return -1;
    (*it)[(*n)++] = v;
    return 0;
}

/* A GEMM item of (m, n, k) x batch, each clamped to [1, 1e9]. */
static item gemm_item(int type, double m, double n, double k, double batch)
{
    return (item){type, clampi(m), clampi(n), clampi(k), clampi(batch), 1, 1, 0, 0, NULL, 1};
}

/* A memory pass of fwd bytes forward and bwd backward (mem_pass_bytes: none
 * where a side has too few). */
static item mem_item(double fwd, double bwd)
{
    return (item){IT_MEM, 0, 0, 0, 0, 1, 1, (size_t)fwd, (size_t)bwd, NULL, 1};
}

/* The forward work of a leaf that is timed kernel by kernel (sc_cost_uses_kernels:
 * it lists kernels and the cluster has efficiency.gemm): its kernels as the
 * cost model runs them (sc_cost_kernel_shape), a GEMM with weights as
 * IT_WGEMM, a batched one as IT_CORE, fused attention as its two products
 * (no backend has a fused kernel), a tp GEMM under TE's tp overlap in the
 * chunks the cost model prices (sc_cost_kernel_splits), a memory-bound kernel as a pass of its
 * bytes (a stencil's FLOPs are not run: no backend has a depthwise kernel,
 * and on GPUs its bytes bound it). So measured and predicted compare kernel
 * for kernel. */
static int kernel_items(const sc_exec *x, const sc_module *mod, double qf, double kf, item **it,
                        int *n, int *cap)
{
    sc_compute_cfg cc = {x->model->dtype, x->cfg.tp, x->cfg.sp, x->cfg.mbs, x->cfg.attn, qf, kf,
                         x->cfg.tp_comm_overlap, x->cfg.cp, 0};
    int rc = 0;
    for (int i = 0; i < mod->n_kernels && !rc; i++) {
        const sc_kernel *k = &mod->kernels[i];
        if (!sc_kernel_runs(k, x->cfg.attn))
            continue;
        int first = *n;
        if (k->op == SC_KOP_MEM) {
            double b = sc_cost_kernel_bytes(k, &cc, 0), bb = sc_cost_kernel_bytes(k, &cc, 1);
            if (b >= 4 || bb >= 4) /* a backward-only kernel (a sum of gradients) too */
                rc |= push_item(it, n, cap, mem_item(b, bb));
        } else {
            double B, M, N, K;
            sc_cost_kernel_shape(k, &cc, &B, &M, &N, &K);
            if (k->op == SC_KOP_FLASH) {
                rc |= push_item(it, n, cap, gemm_item(IT_CORE, M, N, K, B));
                rc |= push_item(it, n, cap, gemm_item(IT_CORE, M, K, N, B));
            } else {
                item g = gemm_item(k->grow_batch ? IT_CORE : IT_WGEMM, M, N, K, B);
                sc_cost_kernel_splits(mod, k, &cc, &g.fsplit, &g.dsplit);
                rc |= push_item(it, n, cap, g);
            }
        }
        for (int j = first; !rc && j < *n; j++)
            (*it)[j].name = k->name;
    }
    return rc;
}

/* The forward work of one leaf for mbs samples on one tp rank; qf, kf: a
 * token slice's share of the queries and of the keys (1, 1: whole; a
 * self-attention's keys are the first kf of the sequence). */
static int leaf_items(const sc_model *m, const sc_module *x, int mbs, int tp, int sp, double qf,
                      double kf, item **it, int *n, int *cap)
{
    double sh = x->has_tp && x->tp_shardable ? tp : 1;
    double seq0 = sc_module_dim(x, "seq", m->seq_len), P = sc_module_dim(x, "passages", 1);
    double seq = ceil(seq0 * qf);
    double T = mbs * P * seq, h = sc_module_dim(x, "hidden", 0);
    int rc = 0;
    if (sc_module_is_attention(x)) {
        double a = sc_module_dim(x, "heads", 0), dk = sc_module_dim(x, "kv", 0);
        if (a < 1)
            a = 1;
        if (dk < 1)
            dk = h > 0 ? h / a : 64;
        double kv_seq = sc_module_dim(x, "kv_seq", 0);
        double inner = a * dk, skv = kv_seq > 0 ? kv_seq : ceil(seq0 * kf);
        /* grouped-query attention: K and V have kv_heads heads (default all) */
        double kvh = sc_module_dim(x, "kv_heads", a);
        double ah = a / sh >= 1 ? floor(a / sh) : 1;
        int core = !strcmp(x->kind, "attention_core");
        if (!core && h > 0)
            rc |= push_item(it, n, cap, gemm_item(IT_WGEMM, T, (a + 2 * kvh) * dk / sh, h, 1));
        int batch = clampi(mbs * P * ah);
        rc |= push_item(it, n, cap, gemm_item(IT_CORE, seq, skv, dk, batch));
        rc |= push_item(it, n, cap, gemm_item(IT_CORE, seq, dk, skv, batch));
        if (!core && h > 0)
            rc |= push_item(it, n, cap, gemm_item(IT_WGEMM, T, h, inner / sh, 1));
        return rc;
    }
    if (!strcmp(x->kind, "mlp") && h > 0) {
        double ffn = sc_module_dim(x, "ffn", 4 * h);
        int g = clampi(x->flops_fwd / (2 * seq * P * h * ffn));
        if (g > 4)
            g = 4;
        for (int i = 0; i + 1 < g; i++)
            rc |= push_item(it, n, cap, gemm_item(IT_WGEMM, T, ffn / sh, h, 1));
        rc |= push_item(it, n, cap, gemm_item(IT_WGEMM, T, h, ffn / sh, 1));
        return rc;
    }
    double V = sc_module_dim(x, "vocab", 0);
    if (!strcmp(x->kind, "head") && h > 0 && V > 0)
        return push_item(it, n, cap, gemm_item(IT_WGEMM, T, V / sh, h, 1));
    if (x->flops_fwd > 0) {
        double fl = x->flops_fwd * mbs * qf / sh;
        if (h > 0)
            return push_item(it, n, cap, gemm_item(IT_WGEMM, T, h, fl / (2 * T * h), 1));
        double side = cbrt(fl / 2);
        return push_item(it, n, cap, gemm_item(IT_WGEMM, side, side, side, 1));
    }
    /* a leaf of memory passes alone (a norm, an embedding): the bytes the
     * cost model's leaf roofline charges it, forward and backward
     * (sc_cost_leaf_bytes), so measured and predicted move the same traffic */
    double fb, bb;
    sc_cost_leaf_bytes(x, m->dtype, tp, sp, mbs, &fb, &bb);
    fb *= qf;
    bb *= qf;
    if (fb >= 4)
        return push_item(it, n, cap, mem_item(fb, bb));
    return 0;
}

/* The work of chunk c for token slice j (j = 0 and k = 1 unsliced): sw[j·v + c]. */
static const stage_work *work_of(const sc_exec *x, int chunk, int mb)
{
    int k = x->lw->k;
    return &x->sw[(k > 1 && mb >= 0 ? mb % k : 0) * x->cfg.v + chunk];
}

static sc_status build_work(sc_exec *x, sc_error *err)
{
    const sc_model *m = x->model;
    int k = x->lw->k, v = x->cfg.v;
    x->sw = sc_calloc((size_t)v * (size_t)k, sizeof(stage_work));
    if (!x->sw)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    for (int j = 0, before = 0; j < k; j++) {
        /* slice j: its tokens, and the keys of itself and the slices before it
         * (a cp rank's share of them: the cost model's, kernel_items) */
        int len = k > 1 ? x->lw->slice_len[j] : m->seq_len;
        double qf = (double)len / m->seq_len, kf = (double)(before + len) / m->seq_len;
        before += len;
        for (int c = 0; c < v; c++) {
            stage_work *w = &x->sw[j * v + c];
            int s = c * x->cfg.pp + x->p, cap = 0;
            w->s = s;
            w->chunk = c;
            w->info = k > 1 ? x->lw->slice_info[j * x->S + s] : x->info[s];
            for (int l = x->cfg.partition->first[s]; l < x->cfg.partition->first[s + 1]; l++) {
                const sc_module *leaf = m->leaves[l];
                int first = w->n;
                int bad = sc_cost_uses_kernels(&x->cluster, leaf)
                              ? kernel_items(x, leaf, qf, kf, &w->it, &w->n, &cap)
                              : leaf_items(m, leaf, x->cfg.mbs, x->cfg.tp, x->cfg.sp, qf, kf, &w->it,
                                           &w->n, &cap);
                if (bad)
                    return sc_err(err, SC_ENOMEM, "exec: out of memory");
                int in_layer = sc_partition_recomputed(m->has_layers, leaf);
                for (int i = first; i < w->n; i++) { /* a leaf without a list: its kind */
                    if (!w->it[i].name)
                        w->it[i].name = leaf->kind;
                    w->it[i].in_layer = in_layer;
                }
            }
            /* in 16-bit types every GEMM dimension is padded to a multiple of 8,
             * as frameworks pad the vocabulary (Megatron-LM to 128): cuBLAS runs
             * an odd dimension on a slow path (on an H200, 2048 x 50257 x 2048 in
             * bf16 at 134 TFLOP/s where 2048 x 8192 x 2048 ran at 593), which the
             * cost model, pricing aligned kernels, does not charge */
            for (int i = 0; x->ce == 2 && i < w->n; i++) {
                item *q = &w->it[i];
                if (q->type == IT_MEM)
                    continue;
                q->m = (q->m + 7) / 8 * 8;
                q->n = (q->n + 7) / 8 * 8;
                q->k = (q->k + 7) / 8 * 8;
            }
        }
    }
    return SC_OK;
}

/* ---- running work ---------------------------------------------------------- */

enum { RUN_F = 0, RUN_B, RUN_W, RUN_BW, RUN_SEL, RUN_RC };

/* What item q runs in pass what: its memory pass (not in W, nor in a
 * selective recompute), its forward GEMM (F; a core GEMM's in a selective
 * recompute; in a full one, RC, the forward of the items inside layers), and backward its data gradient (B, BW) and its second
 * gradient (a core GEMM's other input in B and BW, a weight GEMM's weights
 * in W and BW). The one rule for running a piece and for timing it alone. */
enum { DO_PASS = 1, DO_FWD = 2, DO_DGRAD = 4, DO_WGRAD = 8 };

/* What memory item q's pass what copies: the kernel's bytes are what it
 * reads and writes, and the out-of-place pass reads src and dst and writes
 * dst, a third of them each. 0 where it runs nothing: in W and a selective
 * recompute, and on a side of under 12 bytes (a forward-only kernel has no
 * backward pass, a backward-only one, a sum of gradients, no forward). */
static size_t mem_pass_bytes(const item *q, int what)
{
    if (what == RUN_W || what == RUN_SEL)
        return 0;
    size_t b = (what == RUN_F || what == RUN_RC ? q->bytes : q->bwd_bytes) / 3;
    return b >= 4 ? b : 0;
}

static int item_work(const item *q, int what)
{
    if (what == RUN_RC) { /* full recompute: the forward of the layers' items */
        if (!q->in_layer)
            return 0;
        what = RUN_F;
    }
    if (q->type == IT_MEM)
        return mem_pass_bytes(q, what) ? DO_PASS : 0;
    if (what == RUN_F || (what == RUN_SEL && q->type == IT_CORE))
        return DO_FWD;
    if (what == RUN_SEL)
        return 0;
    int input = what == RUN_B || what == RUN_BW, weight = what == RUN_W || what == RUN_BW;
    return (input ? DO_DGRAD : 0) |
           ((q->type == IT_CORE && input) || (q->type == IT_WGEMM && weight) ? DO_WGRAD : 0);
}

/* A GEMM of m rows run in `split` chunks: how many and the rows of each,
 * the cost model's rule (sc_cost_gemm_chunks), so the chunks run are the
 * chunks priced. */
static int chunks_of(int m, int split, int *rows)
{
    double r;
    int c = sc_cost_gemm_chunks(m, split, &r);
    *rows = (int)r;
    return c;
}

/* The GEMMs and passes of one piece of an op, items [i0, i1). */
static sc_status poll_all(sc_exec *x, sc_error *err);

static sc_status run_items(sc_exec *x, const stage_work *w, int what, int i0, int i1,
                           sc_error *err)
{
    const sc_backend *be = x->be;
    sc_status st = SC_OK;
    for (int i = i0; i < i1 && !st; i++) {
        const item *q = &w->it[i];
        int m = q->m, n = q->n, k = q->k, b = q->batch;
        /* MPI moves a large message only while its ranks call into it: on a
         * synchronous backend, test the pending requests between kernels so
         * sends and gradient buckets progress during compute, as they do on
         * a GPU's separate streams */
        if (i > i0 && !be->async && x->npend && (st = poll_all(x, err)))
            break;
        int work = item_work(q, what);
        if (work & DO_PASS)
            st = be->memop(x->bk, x->M1, x->M0, mem_pass_bytes(q, what), err);
        /* the inputs stay as filled (SC_EXEC_OPERANDS); every product writes O;
         * a split GEMM runs as chunks of its rows, one after another */
        int fr, dr, fc = chunks_of(m, q->fsplit, &fr), dc = chunks_of(m, q->dsplit, &dr);
        for (int c = 0; !st && (work & DO_FWD) && c < fc; c++)
            st = be->gemm(x->bk, x->dt, fr, n, k, b, x->A, x->B, x->O, err);
        /* backward of C[m,n] = A[m,k] B[k,n]: dA = dC B^T (m,k,n); dB = A^T dC (k,n,m),
         * dC being G */
        for (int c = 0; !st && (work & DO_DGRAD) && c < dc; c++)
            st = be->gemm(x->bk, x->dt, dr, k, n, b, x->G, x->B, x->O, err);
        if (!st && (work & DO_WGRAD))
            st = be->gemm(x->bk, x->dt, k, n, m, b, x->A, x->G, x->O, err);
    }
    return st;
}

static sc_status ev_pair(sc_exec *x, int r, int which, sc_error *err)
{
    /* event 2r+which of the step: which 0 = start, 1 = end */
    int need = 2 * (r + 1);
    if (need > x->nev) {
        if (grow((void **)&x->evs, &x->capev, need, sizeof(sc_ev *)))
            return sc_err(err, SC_ENOMEM, "exec: out of memory");
        for (int i = x->nev; i < need; i++) {
            x->evs[i] = x->be->ev_new(x->bk, err);
            if (!x->evs[i]) {
                x->nev = i;
                return err ? err->status : SC_ENOMEM;
            }
        }
        x->nev = need;
    }
    return x->be->ev_record(x->bk, x->evs[2 * r + which], err);
}

/* ---- communication ---------------------------------------------------------- */

static sc_status wait_pend(sc_exec *x, int i, sc_error *err)
{
    pend *q = &x->pend[i];
    double t0 = 0, t1 = 0;
    sc_status st = x->be->req_wait(x->bk, q->req, deadline(x), &t0, &t1, err);
    if (st == SC_EIO)
        return timed_out(x, err, q->kind, q->stage, q->mb, q->peer);
    if (st)
        return st;
    if (q->rec >= 0) {
        rec *w = &x->recs[q->rec];
        /* a record several requests make up (a TP action's allreduces, one
         * after another) spans the first's start to the last's end */
        int first = !(w->t1 > 0 || w->t0 > 0);
        w->t0 = first || t0 < w->t0 ? t0 : w->t0;
        w->t1 = first || t1 > w->t1 ? t1 : w->t1;
    }
    x->pend[i] = x->pend[--x->npend];
    return SC_OK;
}

/* Before reusing buffer id buf: wait for whatever still uses it. */
static sc_status free_buf(sc_exec *x, int buf, sc_error *err)
{
    for (int i = x->npend - 1; i >= 0; i--)
        if (x->pend[i].buf == buf) {
            sc_status st = wait_pend(x, i, err);
            if (st)
                return st;
        }
    return SC_OK;
}

/* Tests every pending request (drives MPI progress, timestamps completions). */
static sc_status poll_all(sc_exec *x, sc_error *err)
{
    for (int i = 0; i < x->npend; i++)
        if (x->be->req_test(x->bk, x->pend[i].req, err) < 0)
            return err ? err->status : SC_EMPI;
    return SC_OK;
}

static int add_pend(sc_exec *x, sc_req *r, int rec_i, int buf, int kind, int stage, int mb,
                    int peer)
{
    if (grow((void **)&x->pend, &x->cappend, x->npend + 1, sizeof(pend)))
        return -1;
    x->pend[x->npend++] = (pend){r, rec_i, buf, kind, stage, mb, peer, x->cur_act};
    return x->npend - 1;
}

enum { COLL_AR = 0, COLL_RS, COLL_AG };

/* Posts `calls` collectives on c of bytes / calls each (bytes: the whole
 * buffer, allreduce's or the gathered / scattered whole), one after another
 * on buffer buf (each waits for the one before: free_buf), recorded as one
 * op of kind `kind` and `bytes` from the first's start to the last's end.
 * wait_now: compute after it needs its result. A TP action is the
 * stage's tp_count allreduces (two a layer in Megatron-LM), each paying its
 * own latency, as the simulator charges them (sim/step.c tp_after). */
static sc_status collective_n(sc_exec *x, sc_comm *c, int coll, sc_dbuf *b, int buf,
                              double bytes, int calls, int kind, int stage, int chunk, int mb,
                              int peer, int wait_now, sc_error *err)
{
    const sc_backend *be = x->be;
    if (calls < 1)
        calls = 1;
    int n = be->comm_size(c);
    size_t count = (size_t)(bytes / calls / (double)x->ce);
    if (coll != COLL_AR)
        count /= (size_t)n;
    int ri = -1;
    sc_req *r = NULL;
    for (int i = 0; i < calls; i++) {
        sc_status st = free_buf(x, buf, err);
        if (st)
            return st;
        st = coll == COLL_AR   ? be->iallreduce(x->bk, c, b, count, x->dt, &r, err)
             : coll == COLL_RS ? be->ireducescatter(x->bk, c, b, count, x->dt, &r, err)
                               : be->iallgather(x->bk, c, b, count, x->dt, &r, err);
        if (st)
            return st;
        if (ri < 0)
            ri = add_rec(x, kind, stage, chunk, mb, SC_STREAM_COMM, bytes);
        if (ri < 0 || add_pend(x, r, ri, buf, kind, stage, mb, peer) < 0)
            return sc_err(err, SC_ENOMEM, "exec: out of memory");
    }
    sc_status st = SC_OK;
    if (wait_now) {
        st = be->compute_wait_req(x->bk, r, deadline(x), err);
        if (st == SC_EIO)
            return timed_out(x, err, kind, stage, mb, peer);
    }
    return st;
}

/* One collective: collective_n with calls 1. */
static sc_status collective(sc_exec *x, sc_comm *c, int coll, sc_dbuf *b, int buf, double bytes,
                            int kind, int stage, int chunk, int mb, int peer, int wait_now,
                            sc_error *err)
{
    return collective_n(x, c, coll, b, buf, bytes, 1, kind, stage, chunk, mb, peer, wait_now,
                        err);
}

/* Buffer ids for hazard tracking. */
enum { BUF_TP = 1, BUF_Z3 = 2, BUF_SH = 3, BUF_AG = 4, BUF_CP = 5, BUF_GRAD = 1000,
       BUF_SEND = 100000, BUF_RECV = 50000 };

/* The next rank of this rank's data-parallel group (with its cp peers: d runs
 * over dp·cp, sc_step_dpc), and of its cp group. */
static int dp_peer(sc_exec *x)
{
    return rank_of(x, (x->d + 1) % sc_step_dpc(&x->cfg), x->p, x->t);
}
static int cp_peer(sc_exec *x)
{
    int cp = x->cfg.cp;
    return rank_of(x, x->d / cp * cp + (x->d % cp + 1) % cp, x->p, x->t);
}

/* Context parallelism: the cp ring of action j (SC_ACT_CP), an all-gather of its
 * bytes on the cp group, issued beside the compute it follows in the list
 * (run_step issues it before that compute's first piece; its action then waits
 * for it), as the simulator runs it. */
static sc_status cp_issue(sc_exec *x, const sc_action *a, int wait_now, sc_error *err)
{
    return collective(x, x->cpc, COLL_AG, x->cpb, BUF_CP, a->bytes, a->op, a->stage, a->chunk,
                      a->mb, cp_peer(x), wait_now, err);
}

/* ---- the step ------------------------------------------------------------ */

static uint64_t msg_seed(sc_exec *x, int dir, int from_stage, int mb)
{
    return (((uint64_t)x->step * 2 + (uint64_t)dir) * (uint64_t)x->S + (uint64_t)from_stage) *
               (uint64_t)x->lw->sched->m + (uint64_t)mb + 1; /* units: m x slices */
}

static sc_status expect_sum(size_t bytes, uint64_t seed, uint64_t *out)
{
    unsigned char tmp[4096];
    uint64_t h = SC_FNV_INIT;
    for (size_t off = 0; off < bytes; off += sizeof tmp) {
        size_t n = bytes - off < sizeof tmp ? bytes - off : sizeof tmp;
        for (size_t i = 0; i < n; i++)
            tmp[i] = sc_backend_pattern(seed, off + i);
        h = sc_backend_fnv(h, tmp, n);
    }
    *out = h;
    return SC_OK;
}

/* The receive of a RECV action and its check. */
static sc_status do_recv(sc_exec *x, const sc_action *a, sc_error *err)
{
    const sc_backend *be = x->be;
    int dir = a->op == SC_OP_RECV_B;
    int s = a->stage;
    int from = dir ? s + 1 : s - 1;          /* sending stage */
    int link = dir ? s : s - 1;              /* the boundary's lower stage */
    size_t bytes = (size_t)a->bytes;
    sc_comm *c = x->chan[dir * x->S + link];
    int peer_world = rank_of(x, x->d, a->peer, x->t);
    int peer = peer_world > x->rank ? 1 : 0;
    sc_dbuf *b = x->recvb[dir * x->cfg.v + a->chunk];
    int buf = BUF_RECV + dir * x->cfg.v + a->chunk;
    sc_status st = free_buf(x, buf, err);
    sc_req *r = NULL;
    if (!st)
        st = be->irecv(x->bk, c, b, bytes, peer, &r, err);
    if (st)
        return st;
    int pi = add_pend(x, r, -1, buf, a->op, s, a->mb, peer_world);
    if (pi < 0)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    st = be->compute_wait_req(x->bk, r, deadline(x), err);
    if (st == SC_EIO)
        return timed_out(x, err, a->op, s, a->mb, peer_world);
    if (st || !x->verify_now)
        return st;
    /* check: wait for the receive itself, then compare checksums */
    st = wait_pend(x, pi, err);
    if (st)
        return st;
    uint64_t got, want;
    st = be->checksum(x->bk, b, bytes, &got, err);
    if (st)
        return st;
    expect_sum(bytes, msg_seed(x, dir, from, a->mb), &want);
    if (got != want)
        return sc_err(err, SC_EINVAL,
                      "rank %d: checksum mismatch on %s (stage %d, mb %d) from rank %d, step %d: "
                      "got %016llx, want %016llx (%zu bytes)",
                      x->rank, sc_op_kind_name(a->op), s, a->mb, peer_world, x->step,
                      (unsigned long long)got, (unsigned long long)want, bytes);
    x->checked++;
    return SC_OK;
}

static sc_status do_send(sc_exec *x, const sc_action *a, sc_error *err)
{
    const sc_backend *be = x->be;
    int dir = a->op == SC_OP_SEND_B;
    int s = a->stage;
    int link = dir ? s - 1 : s;
    size_t bytes = (size_t)a->bytes;
    sc_comm *c = x->chan[dir * x->S + link];
    int peer_world = rank_of(x, x->d, a->peer, x->t);
    int peer = peer_world > x->rank ? 1 : 0;
    int idx = (dir * x->cfg.v + a->chunk) * x->lw->sched->m + a->mb;
    sc_dbuf *b = x->sendb[idx];
    sc_status st = free_buf(x, BUF_SEND + idx, err);
    /* The pattern is written only on the steps whose receives are checked:
     * in training the activation is already in the buffer, and the fill
     * (0.2 ms per 128 KiB on a CPU core) would add to the sender's time. */
    if (!st && x->verify_now)
        st = be->fill(x->bk, b, bytes,
                      msg_seed(x, dir, s, a->mb) +
                          (x->fault_corrupt && x->fault_rank == x->rank && x->fault_step == x->step),
                      err);
    sc_req *r = NULL;
    if (!st)
        st = be->isend(x->bk, c, b, bytes, peer, &r, err);
    if (st)
        return st;
    int ri = add_rec(x, a->op, s, a->chunk, a->mb, SC_STREAM_COMM, (double)bytes);
    if (ri < 0 || add_pend(x, r, ri, BUF_SEND + idx, a->op, s, a->mb, peer_world) < 0)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    return SC_OK;
}

/* A COMPUTE action: piece `piece` of `pieces` of an op's work; the op's
 * record opens with its first piece and closes with its last. */
static sc_status do_compute(sc_exec *x, const sc_action *a, sc_error *err)
{
    const stage_work *w = work_of(x, a->chunk, a->mb);
    int what = a->op == SC_OP_F   ? RUN_F
               : a->op == SC_OP_B ? (x->split ? RUN_B : RUN_BW)
               : a->op == SC_OP_W ? RUN_W
               : x->cfg.recompute == SC_RECOMPUTE_FULL ? RUN_RC
                                                        : RUN_SEL;
    sc_status st = SC_OK;
    if (a->piece == 0) {
        x->cur_rec = add_rec(x, a->op, a->stage, a->chunk, a->mb, SC_STREAM_COMPUTE, 0);
        if (x->cur_rec < 0)
            return sc_err(err, SC_ENOMEM, "exec: out of memory");
        st = ev_pair(x, x->cur_rec, 0, err);
    }
    int i0 = (int)((long)w->n * a->piece / a->pieces);
    int i1 = (int)((long)w->n * (a->piece + 1) / a->pieces);
    if (!st)
        st = run_items(x, w, what, i0, i1, err);
    if (!st && a->piece + 1 == a->pieces)
        st = ev_pair(x, x->cur_rec, 1, err);
    return st;
}

/* The optimizer: waits for the reductions it depends on, then its
 * memory-bound kernels over the rank's states. */
static sc_status do_optimizer(sc_exec *x, const sc_action *a, sc_error *err)
{
    const sc_backend *be = x->be;
    for (int i = 0; i < x->npend; i++) {
        const pend *q = &x->pend[i];
        if (q->act < 0 || !x->optdep[q->act])
            continue;
        sc_status st = be->compute_wait_req(x->bk, q->req, deadline(x), err);
        if (st == SC_EIO)
            return timed_out(x, err, q->kind, q->stage, q->mb, q->peer);
        if (st)
            return st;
    }
    int ri = add_rec(x, SC_OP_OPTIMIZER, a->stage, -1, -1, SC_STREAM_COMPUTE, 0);
    if (ri < 0)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    sc_status st = ev_pair(x, ri, 0, err);
    /* the kernels the cost model prices (sc_cost_optimizer_kernels), each
     * an in-place pass over half its traffic: read and written, the same
     * bytes cross HBM as the kernel's reads and writes (a.bytes, the
     * rank's states, sizes the buffer; no kernel moves twice that) */
    double w, g, o, kb[SC_OPT_KERNELS];
    sc_cost_state_bytes(x->model->dtype, &w, &g, &o);
    int n = sc_cost_optimizer_kernels(&x->cluster, x->model->dtype, a->bytes / (w + g + o), kb);
    for (int i = 0; i < n && !st; i++) {
        double half = kb[i] / 2 < a->bytes ? kb[i] / 2 : a->bytes;
        if (half >= 4)
            st = be->memop(x->bk, x->opt, x->opt, (size_t)half, err);
    }
    if (!st)
        st = ev_pair(x, ri, 1, err);
    return st;
}

/* One lowered action as backend calls. */
static sc_status run_action(sc_exec *x, const sc_action *a, sc_error *err)
{
    int tpeer = rank_of(x, x->d, x->p, (x->t + 1) % x->cfg.tp);
    switch (a->kind) {
    case SC_ACT_RECV:
        return do_recv(x, a, err);
    case SC_ACT_SEND:
        return do_send(x, a, err);
    case SC_ACT_COMPUTE:
        return a->op == SC_OP_OPTIMIZER ? do_optimizer(x, a, err) : do_compute(x, a, err);
    case SC_ACT_TP:
        return collective_n(x, x->tpc,
                            a->coll == SC_COLL_ALLREDUCE        ? COLL_AR
                            : a->coll == SC_COLL_REDUCE_SCATTER ? COLL_RS
                                                                : COLL_AG,
                            x->tpb, BUF_TP, a->bytes, x->info[a->stage].tp_count, a->op,
                            a->stage, a->chunk, a->mb, tpeer, a->waits, err);
    case SC_ACT_GATHER:
        return collective(x, x->dpc, COLL_AG, x->zb, BUF_Z3, a->bytes, a->op, a->stage, a->chunk,
                          a->mb, dp_peer(x), a->waits, err);
    case SC_ACT_REDUCE: {
        int b = a->chunk * MAX_BUCKETS + a->piece;
        return collective(x, x->dpc, a->coll == SC_COLL_ALLREDUCE ? COLL_AR : COLL_RS,
                          x->gradb[b], BUF_GRAD + b, a->bytes, a->op, a->stage, a->chunk, a->mb,
                          dp_peer(x), a->waits, err);
    }
    case SC_ACT_TIED:
        return collective(x, x->shc[a->peer], COLL_AR, x->shb, BUF_SH, a->bytes, a->op, -1, -1,
                          -1, -1, a->waits, err);
    case SC_ACT_PARAMS:
        return collective(x, x->dpc, COLL_AG, x->agb, BUF_AG, a->bytes, a->op, a->stage, -1, -1,
                          dp_peer(x), a->waits, err);
    case SC_ACT_CP: /* issued beside its compute (run_step): wait for it now */
        return x->cp_issued && x->cp_issued[x->cur_act] ? free_buf(x, BUF_CP, err)
                                                         : cp_issue(x, a, 1, err);
    default:
        return sc_err(err, SC_EINVAL, "exec: rank %d: unknown action kind %d", x->rank,
                      a->kind);
    }
}

static void maybe_fault(sc_exec *x)
{
    if (x->fault_rank != x->rank || x->fault_step != x->step || x->fault_corrupt)
        return;
    fprintf(stderr, "stagecraft exec: rank %d: SC_EXEC_FAULT: %s at step %d\n", x->rank,
            x->fault_hang ? "hanging" : "killing myself", x->step);
    fflush(stderr);
    if (!x->fault_hang)
        raise(SIGKILL);
    for (;;)
        pause();
}

/* The start of a step: a barrier, then the backend's epoch. */
static sc_status step_begin(sc_exec *x, double *t_start, sc_error *err)
{
    const sc_backend *be = x->be;
    sc_status st = be->barrier(x->bk, deadline(x), err);
    if (st == SC_EIO)
        return sc_err(err, SC_EIO,
                      "rank %d: timed out after %g s waiting for the start of step %d (barrier) "
                      "from rank %d", x->rank, x->o.timeout_s, x->step, x->rank ? 0 : 1);
    if (!st)
        st = be->epoch(x->bk, err);
    *t_start = be->now(x->bk);
    x->nrec = 0;
    return st;
}

/* The end of a step: every request, the device, then the compute ops'
 * times from their events. */
static sc_status step_end(sc_exec *x, sc_error *err)
{
    const sc_backend *be = x->be;
    sc_status st = SC_OK;
    while (!st && x->npend)
        st = wait_pend(x, x->npend - 1, err);
    if (!st) {
        st = be->sync(x->bk, deadline(x), err);
        if (st == SC_EIO)
            return sc_err(err, SC_EIO,
                          "rank %d: timed out after %g s waiting for the device to finish step %d "
                          "(a peer of a collective) from rank %d",
                          x->rank, x->o.timeout_s, x->step, x->rank ? 0 : 1);
    }
    for (int r = 0; r < x->nrec && !st; r++)
        if (x->recs[r].stream == SC_STREAM_COMPUTE) {
            st = be->ev_time(x->bk, x->evs[2 * r], &x->recs[r].t0, err);
            if (!st)
                st = be->ev_time(x->bk, x->evs[2 * r + 1], &x->recs[r].t1, err);
        }
    return st;
}

/* One step: this rank's lowered list, in order, polling the pending
 * requests after every action so they progress during compute. */
static sc_status run_step(sc_exec *x, double *t_start, sc_error *err)
{
    const sc_lowered_pos *L = &x->lw->pos[x->p];
    sc_status st = step_begin(x, t_start, err);
    int faulted = 0;
    if (x->cp_issued)
        memset(x->cp_issued, 0, (size_t)L->n);
    for (int i = 0; i < L->n && !st; i++) {
        const sc_action *a = &L->acts[i];
        if (!faulted && a->sched_op >= 0 &&
            (a->kind == SC_ACT_COMPUTE || a->kind == SC_ACT_GATHER)) {
            faulted = 1;
            maybe_fault(x);
        }
        /* a cp ring of this op that starts with this compute (its `after` is
         * the stream action before it): issued now, waited for at its action */
        for (int j = i + 1; x->cp_issued && a->kind == SC_ACT_COMPUTE && j < L->n &&
                            L->acts[j].sched_op == a->sched_op && !st;
             j++)
            if (L->acts[j].kind == SC_ACT_CP && !x->cp_issued[j] && L->acts[j].after < i) {
                x->cur_act = j;
                st = cp_issue(x, &L->acts[j], 0, err);
                x->cp_issued[j] = 1;
            }
        if (st)
            break;
        x->cur_act = i;
        st = run_action(x, a, err);
        x->cur_act = -1;
        if (!st)
            st = poll_all(x, err);
    }
    return st ? st : step_end(x, err);
}

/* ---- setup ------------------------------------------------------------------ */

static sc_status parse_fault(sc_exec *x, sc_error *err)
{
    x->fault_rank = x->fault_step = -1;
    const char *f = getenv("SC_EXEC_FAULT");
    if (!f || !*f)
        return SC_OK;
    char mode[16] = "kill";
    if (sscanf(f, "%d:%d:%15s", &x->fault_rank, &x->fault_step, mode) < 2 ||
        (strcmp(mode, "kill") && strcmp(mode, "hang") && strcmp(mode, "corrupt")))
        return sc_err(err, SC_EINVAL,
                      "exec: SC_EXEC_FAULT='%s': want RANK:STEP[:kill|hang|corrupt]", f);
    x->fault_hang = !strcmp(mode, "hang");
    x->fault_corrupt = !strcmp(mode, "corrupt");
    return SC_OK;
}

static sc_dbuf *balloc(sc_exec *x, double bytes, sc_status *st, sc_error *err)
{
    if (*st)
        return NULL;
    if (!(bytes >= 0) || bytes > 1e13) {
        *st = sc_err(err, SC_EINVAL, "exec: rank %d: buffer of %g bytes", x->rank, bytes);
        return NULL;
    }
    sc_dbuf *b = x->be->alloc(x->bk, (size_t)ceil(bytes), err);
    if (!b)
        *st = err ? err->status : SC_ENOMEM;
    return b;
}

static double maxd(double a, double b) { return a > b ? a : b; }

static sc_status make_buffers(sc_exec *x, sc_error *err)
{
    const sc_step_cfg *cfg = &x->cfg;
    const sc_lowered_pos *L = &x->lw->pos[x->p];
    int v = cfg->v, m = x->lw->sched->m; /* units: m x slices */
    double X = 0, mem = 4;
    for (int c = 0; c < v * x->lw->k; c++) {
        const stage_work *w = &x->sw[c];
        for (int i = 0; i < w->n; i++) {
            const item *q = &w->it[i];
            double mk = (double)q->m * q->k, kn = (double)q->k * q->n, mn = (double)q->m * q->n;
            X = maxd(X, maxd(mk, maxd(kn, mn)) * q->batch);
            if (q->type == IT_MEM)
                mem = maxd(mem, maxd((double)q->bytes, (double)q->bwd_bytes));
        }
    }
    /* each communication buffer holds the largest whole buffer of the
     * actions that use it */
    double tpb = 4, zb = 4, shb = 4, agb = 4, opt = 4, cpb = 4;
    double *grad = sc_calloc((size_t)(v * MAX_BUCKETS), sizeof(double));
    x->gradb = sc_calloc((size_t)(v * MAX_BUCKETS), sizeof(sc_dbuf *));
    x->sendb = sc_calloc((size_t)(2 * v * m), sizeof(sc_dbuf *));
    x->recvb = sc_calloc((size_t)(2 * v), sizeof(sc_dbuf *));
    if (!grad || !x->gradb || !x->sendb || !x->recvb) {
        sc_free(grad);
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    }
    for (int i = 0; i < L->n; i++) {
        const sc_action *a = &L->acts[i];
        switch (a->kind) {
        case SC_ACT_TP: tpb = maxd(tpb, a->bytes); break;
        case SC_ACT_GATHER: zb = maxd(zb, a->bytes); break;
        case SC_ACT_TIED: shb = maxd(shb, a->bytes); break;
        case SC_ACT_PARAMS: agb = maxd(agb, a->bytes); break;
        case SC_ACT_CP: cpb = maxd(cpb, a->bytes); break;
        case SC_ACT_REDUCE: {
            double *g = &grad[a->chunk * MAX_BUCKETS + a->piece];
            *g = maxd(*g, a->bytes);
            break;
        }
        case SC_ACT_COMPUTE:
            if (a->op == SC_OP_OPTIMIZER)
                opt = maxd(opt, a->bytes);
            break;
        default: break;
        }
    }
    sc_status st = SC_OK;
    double eb = (double)x->ce;
    x->A = balloc(x, maxd(X, 1) * eb, &st, err);
    x->B = balloc(x, maxd(X, 1) * eb, &st, err);
    x->G = balloc(x, maxd(X, 1) * eb, &st, err);
    x->O = balloc(x, maxd(X, 1) * eb, &st, err);
    /* SC_EXEC_OPERANDS: random inputs (buffers start zeroed) */
    sc_dbuf *in[3] = {x->A, x->B, x->G};
    for (int i = 0; i < 3 && !st && !x->o.zero_operands; i++)
        st = x->be->fill_uniform(x->bk, in[i], (size_t)maxd(X, 1), x->dt,
                                 0x5eed0 + 97 * (uint64_t)x->rank + (uint64_t)i, err);
    x->M0 = balloc(x, mem, &st, err);
    x->M1 = balloc(x, mem, &st, err);
    x->tpb = balloc(x, tpb, &st, err);
    x->zb = balloc(x, zb, &st, err);
    x->opt = balloc(x, opt, &st, err);
    x->agb = balloc(x, agb, &st, err);
    x->shb = balloc(x, shb, &st, err);
    if (cfg->cp > 1) {
        x->cpb = balloc(x, cpb, &st, err);
        x->cp_issued = sc_calloc((size_t)(L->n ? L->n : 1), 1);
        if (!st && !x->cp_issued)
            st = sc_err(err, SC_ENOMEM, "exec: out of memory");
    }
    /* a reduce-scatter's count rounds down per member: room for the rest */
    for (int b = 0; b < v * MAX_BUCKETS && !st; b++)
        if (grad[b] > 0)
            x->gradb[b] = balloc(x, grad[b] + 64 * sc_step_dpc(cfg), &st, err);
    sc_free(grad);
    for (int dir = 0; dir < 2; dir++)
        for (int c = 0; c < v; c++) {
            int s = c * cfg->pp + x->p;
            int link = dir ? s - 1 : s; /* the boundary this rank sends over */
            double sb = link >= 0 && link + 1 < x->S ? x->info[link].send_bytes : 0;
            int rlink = dir ? s : s - 1; /* and receives over */
            double rb = rlink >= 0 && rlink + 1 < x->S ? x->info[rlink].send_bytes : 0;
            x->recvb[dir * v + c] = balloc(x, maxd(rb, 4), &st, err);
            for (int k = 0; k < m; k++)
                x->sendb[(dir * v + c) * m + k] = balloc(x, maxd(sb, 4), &st, err);
        }
    return st;
}

/* Communicators: tp, dp, tied groups, and one two-rank channel per pipeline
 * boundary and direction. Every rank makes every split, in one order. */
static sc_status make_comms(sc_exec *x, sc_error *err)
{
    const sc_backend *be = x->be;
    const sc_step_cfg *cfg = &x->cfg;
    int pp = cfg->pp, tp = cfg->tp;
    sc_status st = be->comm_split(x->bk, x->d * pp + x->p, x->t, &x->tpc, err);
    if (!st) /* the data-parallel group with its cp peers (d over dp·cp) */
        st = be->comm_split(x->bk, x->p * tp + x->t, x->d, &x->dpc, err);
    if (!st && cfg->cp > 1) /* the cp group: the same data-parallel index, position, tp rank */
        st = be->comm_split(x->bk, (x->d / cfg->cp * pp + x->p) * tp + x->t, x->d % cfg->cp,
                            &x->cpc, err);
    if (st)
        return st;
    x->chan = sc_calloc((size_t)(2 * x->S), sizeof(sc_comm *));
    if (!x->chan)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    for (int dir = 0; dir < 2 && !st; dir++)
        for (int s = 0; s + 1 < x->S && !st; s++) {
            int pa = s % pp, pb = (s + 1) % pp;
            int member = x->p == pa || x->p == pb;
            st = be->comm_split(x->bk, member ? x->d * tp + x->t : -1, x->rank,
                                &x->chan[dir * x->S + s], err);
        }
    if (st)
        return st;
    /* tied groups split over positions: one communicator each */
    const sc_lowered *lw = x->lw;
    x->shc = sc_calloc((size_t)(lw->n_ties ? lw->n_ties : 1), sizeof(sc_comm *));
    if (!x->shc)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    for (int k = 0; k < lw->n_ties && !st; k++) {
        int me = 0;
        for (int q = 0; q < lw->ties[k].npos; q++)
            me |= lw->ties[k].pos[q] == x->p;
        x->n_shared++;
        st = be->comm_split(x->bk, me ? x->d * tp + x->t : -1, x->rank, &x->shc[k], err);
    }
    return st;
}

int sc_exec_rank(const sc_exec *x) { return x && x->bk ? x->rank : -1; }

/* The only process-wide state: serializes plan loading (see sc_exec_open). */
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

/* Loads plan_file into x: the plan, its model and cluster, and the step
 * configuration. Ranks that are threads (team.h) load one at a time:
 * cJSON's parser writes a global (its last error position). */
static sc_status load_plan(sc_exec *x, const char *plan_file, sc_error *err)
{
    pthread_mutex_lock(&load_mu);
    sc_status st = sc_plan_load(plan_file, &x->plan, err);
    if (!st)
        st = sc_plan_open(x->plan, plan_file, &x->model, &x->cluster, err);
    pthread_mutex_unlock(&load_mu);
    if (!st) {
        sc_plan_step_cfg(x->plan, &x->cfg);
        x->S = x->cfg.pp * x->cfg.v;
    }
    /* A blocking send completes only once its peer has posted the receive:
     * two neighbours each blocked in a send to the other (1F1B's steady
     * state) would wait forever; Megatron-LM pairs each send with the next
     * receive in one call, which the lowered step does not. */
    if (!st && x->cfg.no_overlap_p2p_comm && x->cfg.pp > 1)
        st = sc_err(err, SC_ENOTSUP,
                    "%s: overlap_p2p_comm: false: the executor sends pipeline messages beside "
                    "the compute only; plan it with --overlap-p2p-comm 1 (plan --framework "
                    "megatron or deepspeed blocks by default; sim --plan replays it either way)",
                    plan_file);
    /* the deferred output-layer wgrads run as one op for no microbatch, which
     * the executor's per-microbatch work items do not split off */
    if (!st && x->cfg.defer_embedding_wgrad)
        st = sc_err(err, SC_ENOTSUP,
                    "%s: defer_embedding_wgrad_compute: the executor runs each microbatch's "
                    "output-layer weight gradients in its backward; simulate the plan without "
                    "--defer-embedding-wgrad-compute to run it (sim --plan replays it with)",
                    plan_file);
    /* neither backend has fp8 GEMMs (OpenBLAS none; the CUDA backend runs
     * cuBLAS in the model's dtype): running the plan in 16 bits and calling
     * it measured would compare against a prediction it does not run */
    if (!st && x->cfg.fp8)
        st = sc_err(err, SC_EINVAL,
                    "%s: fp8: the executor runs no fp8 GEMMs (the cpu and cuda backends run "
                    "the model's dtype); plan without --fp8 to run it, or export it "
                    "(stagecraft export --to megatron) to train in fp8",
                    sc_basename(plan_file));
    return st;
}

/* Lowers x's step (sc_lower); an error names the plan file. */
static sc_status lower_plan(sc_exec *x, const char *plan_file, sc_error *err)
{
    sc_status st = sc_lower(x->model, &x->cluster, &x->cfg, &x->lw, err);
    if (st) {
        sc_err_prefix(err, "%s", sc_basename(plan_file));
        return st;
    }
    x->info = x->lw->info;
    return SC_OK;
}

sc_status sc_exec_open(const char *plan_file, const sc_exec_opts *o, sc_exec **out,
                       sc_error *err)
{
    *out = NULL;
    const sc_backend *be = sc_backend_find(o->backend);
    if (!be)
        return sc_err(err, SC_EINVAL, "exec: unknown backend '%s' (cpu, cuda)",
                      o->backend ? o->backend : "(null)");
    if (o->steps < 1 || o->warmup < 0 || !(o->timeout_s > 0) || !(o->tolerance >= 0) ||
        o->max_steps < 0 || o->max_steps > 10000000)
        return sc_err(err, SC_EINVAL, "exec: need steps >= 1, warmup >= 0, timeout > 0, "
                      "tolerance >= 0 and max_steps in [0, 1e7]");
    if (!be->available) {
        sc_bk *dummy;
        return be->init(NULL, &dummy, err);
    }
    sc_exec *x = sc_calloc(1, sizeof *x);
    if (!x)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    x->be = be;
    x->o = *o;
    sc_bk_opts bo = {o->argc, o->argv, -1};
    sc_status st = be->init(&bo, &x->bk, err);
    if (st && !x->bk) {
        sc_free(x);
        return st;
    }
    /* a failed init that kept its context (MPI started) is the caller's to
     * close, as any later failure is: sc_exec_close finalizes it */
    *out = x;
    x->rank = be->rank(x->bk);
    if (st)
        return st;
    x->size = be->size(x->bk);
    st = parse_fault(x, err);
    snprintf(x->plan_file, sizeof x->plan_file, "%s", plan_file);
    if (!st)
        st = load_plan(x, plan_file, err);
    if (st)
        return st;
    const sc_step_cfg *cfg = &x->cfg;
    int need = sc_step_dpc(cfg) * cfg->tp * cfg->pp;
    if (need != x->size)
        return sc_err(err, SC_EINVAL,
                      "%s: the plan needs dp·cp·tp·pp = %d·%d·%d·%d = %d ranks, but %d were "
                      "started (run: mpirun -np %d stagecraft exec %s ...)",
                      sc_basename(plan_file), cfg->dp, cfg->cp > 1 ? cfg->cp : 1, cfg->tp,
                      cfg->pp, need, x->size, need, plan_file);
    st = lower_plan(x, plan_file, err);
    if (st)
        return st;
    x->split = x->lw->sched->impl->split_backward;
    sc_step_coords(cfg, x->rank, &x->d, &x->p, &x->t);
    x->dt = x->model->dtype;
    x->cdt = be->compute_dtype(x->bk, x->dt);
    x->ce = sc_backend_elem_bytes(x->cdt);
    /* the actions the optimizer waits for */
    const sc_lowered_pos *L = &x->lw->pos[x->p];
    x->optdep = sc_calloc((size_t)(L->n ? L->n : 1), 1);
    if (!x->optdep)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    for (int i = 0; i < L->n; i++)
        for (int k = 0; k < L->acts[i].ndeps; k++)
            x->optdep[L->deps[L->acts[i].dep0 + k]] = 1;
    x->cur_act = -1;
    st = build_work(x, err);
    if (!st)
        st = make_comms(x, err);
    if (!st)
        st = make_buffers(x, err);
    return st;
}

/* ---- the GEMM shapes a plan runs ---------------------------------------------- */

/* Adds the GEMM (m, n, k) to out[0..*n) unless there already; 1 when full. */
static int add_shape(sc_bench_point *out, int cap, int *n, int m, int nn, int k)
{
    for (int i = 0; i < *n; i++)
        if (out[i].m == m && out[i].n == nn && out[i].k == k)
            return 0;
    if (*n >= cap)
        return 1;
    out[(*n)++] = (sc_bench_point){0, m, nn, k, 1};
    return 0;
}

sc_status sc_exec_plan_gemms(const char *plan_file, sc_bench_point *out, int cap, int *n,
                             sc_error *err)
{
    sc_exec *x = sc_calloc(1, sizeof *x);
    if (!x)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    sc_status st = load_plan(x, plan_file, err);
    if (!st)
        st = lower_plan(x, plan_file, err);
    int full = 0;
    /* every pipeline position's work, each GEMM as run_items calls it:
     * forward C = A B (m, n, k); backward dA (m, k, n) and dB (k, n, m) */
    for (int p = 0; !st && p < x->cfg.pp; p++) {
        x->p = p;
        st = build_work(x, err);
        for (int c = 0; !st && c < x->cfg.v * x->lw->k; c++) {
            const stage_work *w = &x->sw[c];
            for (int i = 0; i < w->n; i++) {
                const item *q = &w->it[i];
                if (q->type == IT_MEM)
                    continue;
                int fr, dr;
                chunks_of(q->m, q->fsplit, &fr);
                chunks_of(q->m, q->dsplit, &dr);
                full |= add_shape(out, cap, n, fr, q->n, q->k);
                full |= add_shape(out, cap, n, dr, q->k, q->n);
                full |= add_shape(out, cap, n, q->k, q->n, q->m);
            }
        }
        for (int c = 0; x->sw && c < x->cfg.v * x->lw->k; c++)
            sc_free(x->sw[c].it);
        sc_free(x->sw);
        x->sw = NULL;
    }
    if (!st && full)
        st = sc_err(err, SC_EINVAL, "%s: more than %d distinct GEMM shapes in all",
                    sc_basename(plan_file), cap);
    sc_lower_free(x->lw);
    sc_model_free(x->model);
    sc_plan_free(x->plan);
    sc_free(x);
    return st;
}

/* ---- measurement ------------------------------------------------------------ */

typedef struct wire_op {
    double kind, stage, chunk, mb, stream, bytes, t0, t1;
} wire_op;

/* What a measurement holds between its phases; freed by meas_free. */
typedef struct meas {
    int R, W;
    int N;             /* measured steps run (the last n are the result) */
    int n, cap;        /* the window (steps asked for) and the most steps allowed */
    rec *all;          /* cap steps × per records of this rank */
    int per;           /* records per step */
    double *span;      /* this step: start, end on this rank's clock */
    double *spans;     /* rank 0: every rank's span of one step */
    double *times;     /* rank 0: step times */
    double *begins;    /* rank 0: step begins on rank 0's clock */
    int *counts;       /* rank 0: records per rank */
    int median, maxn;
    double drift;      /* rank 0: the last window's median against the one before (-1: none) */
    wire_op *mine, *gathered;
    sc_provenance prov; /* rank 0: its own, and whether the ranks differed */
    int probe_n;        /* the probe's size (0: none, or this rank could not run it) */
    sc_dbuf *pbuf[3];   /* its operands */
    sc_ev *pev[2 * (SC_EXEC_PROBE_REPS + 1)];
    double *probe_t;    /* this rank's probe of each measured step */
    double probe_med;   /* over the window (0: none) */
    double *probes;     /* rank 0: every rank's */
    sc_tl_kernel *kern; /* rank 0 with --kernels: its kernels, each timed alone */
    int nkern;
} meas;

static void meas_free(meas *g)
{
    void *arrs[] = {g->all,  g->span,     g->spans,  g->times,   g->begins, g->counts,
                    g->mine, g->gathered, g->probes, g->probe_t, g->kern};
    for (size_t i = 0; i < SC_ARRAY_LEN(arrs); i++)
        sc_free(arrs[i]);
}

/* ---- the speed probe (exec.h) ------------------------------------------------ */

static int probe_size(const sc_exec *x)
{
    if (x->o.probe >= 0)
        return x->o.probe;
    return strcmp(x->be->name, "cuda") ? SC_EXEC_PROBE_CPU : SC_EXEC_PROBE_CUDA;
}

/* The probe's operands and events; a rank that cannot have them (no
 * memory for three n x n buffers) says so on stderr and runs no probe (the
 * others go on; rank 0 then writes none). */
static void probe_open(sc_exec *x, meas *g)
{
    const sc_backend *be = x->be;
    size_t count = (size_t)g->probe_n * (size_t)g->probe_n;
    sc_error e = {0};
    int ok = (g->probe_t = sc_calloc((size_t)g->cap, sizeof(double))) != NULL;
    if (!ok)
        snprintf(e.msg, sizeof e.msg, "out of memory");
    for (int i = 0; i < 3 && ok; i++) {
        g->pbuf[i] = be->alloc(x->bk, count * x->ce, &e);
        ok = g->pbuf[i] && !be->fill_uniform(x->bk, g->pbuf[i], count, x->dt,
                                             0x9e3779b9u + (unsigned)i, &e);
    }
    for (size_t i = 0; i < SC_ARRAY_LEN(g->pev) && ok; i++)
        ok = (g->pev[i] = be->ev_new(x->bk, &e)) != NULL;
    if (!ok) {
        fprintf(stderr, "stagecraft exec: rank %d: no speed probe: %s\n", x->rank, e.msg);
        g->probe_n = 0;
    }
}

static void probe_close(sc_exec *x, meas *g)
{
    for (size_t i = 0; i < SC_ARRAY_LEN(g->pev); i++)
        x->be->ev_free(x->bk, g->pev[i]);
    for (int i = 0; i < 3; i++)
        x->be->free(x->bk, g->pbuf[i]);
}

/* One step's probe: one untimed GEMM of n x n x n, then
 * SC_EXEC_PROBE_REPS timed; *out their median seconds (0: no probe). */
static sc_status probe_step(sc_exec *x, meas *g, double *out, sc_error *err)
{
    enum { REPS = SC_EXEC_PROBE_REPS };
    const sc_backend *be = x->be;
    int n = g->probe_n;
    *out = 0;
    if (n <= 0)
        return SC_OK;
    sc_status st = SC_OK;
    for (int r = 0; r <= REPS && !st; r++) {
        st = be->ev_record(x->bk, g->pev[2 * r], err);
        if (!st)
            st = be->gemm(x->bk, x->dt, n, n, n, 1, g->pbuf[0], g->pbuf[1], g->pbuf[2], err);
        if (!st)
            st = be->ev_record(x->bk, g->pev[2 * r + 1], err);
    }
    if (!st)
        st = be->sync(x->bk, deadline(x), err);
    double t[REPS];
    for (int r = 1; r <= REPS && !st; r++) {
        double t0 = 0, t1 = 0;
        st = be->ev_time(x->bk, g->pev[2 * r], &t0, err);
        if (!st)
            st = be->ev_time(x->bk, g->pev[2 * r + 1], &t1, err);
        t[r - 1] = t1 - t0;
    }
    if (!st)
        *out = fmax(sc_median(t, REPS), 0);
    return st;
}

/* ---- the kernel profile (exec.h, SC_EXEC_KERNEL_REPS) --------------------------- */

/* Adds one call of q in pass what taking t seconds to the pooled list. */
static int pool_kernel(sc_tl_kernel **ks, int *n, int *cap, const item *q, int what, double t)
{
    static const char *const pass[] = {"F", "B", "W", "BW"};
    sc_tl_kernel k = {0};
    snprintf(k.name, sizeof k.name, "%s", q->name ? q->name : "?");
    snprintf(k.pass, sizeof k.pass, "%s", pass[what]);
    snprintf(k.op, sizeof k.op, "%s",
             q->type == IT_MEM ? "mem" : q->type == IT_CORE ? "core" : "wgemm");
    k.splits = 1;
    if (q->type == IT_MEM) {
        k.bytes = (double)(what == RUN_F ? q->bytes : q->bwd_bytes);
    } else {
        k.batch = q->batch;
        k.m = q->m;
        k.n = q->n;
        k.k = q->k;
        int rows, sp = what == RUN_F ? q->fsplit : what == RUN_W ? 1 : q->dsplit;
        k.splits = chunks_of(q->m, sp, &rows);
    }
    for (int i = 0; i < *n; i++) {
        sc_tl_kernel *o = &(*ks)[i];
        if (!strcmp(o->name, k.name) && !strcmp(o->pass, k.pass) && !strcmp(o->op, k.op) &&
            o->batch == k.batch && o->m == k.m && o->n == k.n && o->k == k.k &&
            o->bytes == k.bytes && o->splits == k.splits) {
            o->time_s += t; /* a sum until kernel_profile divides it */
            o->calls++;
            return 0;
        }
    }
    if (grow((void **)ks, cap, *n + 1, sizeof **ks))
        return -1;
    k.calls = 1;
    k.time_s = t;
    (*ks)[(*n)++] = k;
    return 0;
}

/* Rank 0's kernels, each timed alone (exec.h): *out and *nout (the caller
 * frees *out). */
static sc_status kernel_profile(sc_exec *x, sc_tl_kernel **out, int *nout, sc_error *err)
{
    enum { REPS = SC_EXEC_KERNEL_REPS };
    const sc_backend *be = x->be;
    *out = NULL;
    *nout = 0;
    int most = 0;
    for (int c = 0; c < x->cfg.v; c++)
        most = x->sw[c].n > most ? x->sw[c].n : most;
    sc_ev **ev = sc_calloc((size_t)most + 1, sizeof *ev);
    double *t = sc_calloc((size_t)most * REPS + 1, sizeof *t);
    sc_tl_kernel *ks = NULL;
    int nk = 0, cap = 0;
    sc_status st = ev && t ? SC_OK : sc_err(err, SC_ENOMEM, "exec: out of memory");
    for (int i = 0; !st && i <= most; i++)
        if (!(ev[i] = be->ev_new(x->bk, err)))
            st = err ? err->status : SC_ENOMEM;
    int passes[3] = {RUN_F, x->split ? RUN_B : RUN_BW, RUN_W}, npass = x->split ? 3 : 2;
    for (int c = 0; c < x->cfg.v && !st; c++) {
        const stage_work *w = &x->sw[c];
        for (int p = 0; p < npass && !st; p++) {
            int what = passes[p];
            for (int r = 0; r <= REPS && !st; r++) { /* round 0 untimed */
                /* a fresh time base each round: event times are offsets from
                 * it (CUDA: a float of ms, coarse after minutes) */
                st = be->epoch(x->bk, err);
                /* the first kernel that runs in this pass queued behind an
                 * untimed call of itself, so its time is not its launch from
                 * an idle stream (as bench gemm's, time_gemm); a synchronous
                 * backend needs none */
                int lead = be->async ? 0 : w->n;
                while (lead < w->n && !item_work(&w->it[lead], what))
                    lead++;
                if (!st && lead < w->n)
                    st = run_items(x, w, what, lead, lead + 1, err);
                if (!st)
                    st = be->ev_record(x->bk, ev[0], err);
                for (int i = 0; i < w->n && !st; i++) {
                    st = run_items(x, w, what, i, i + 1, err);
                    if (!st)
                        st = be->ev_record(x->bk, ev[i + 1], err);
                }
                if (!st)
                    st = be->sync(x->bk, deadline(x), err);
                double prev = 0;
                for (int i = 0; i <= w->n && !st && r > 0; i++) {
                    double e = 0;
                    st = be->ev_time(x->bk, ev[i], &e, err);
                    if (!st && i > 0)
                        t[(size_t)(i - 1) * REPS + (r - 1)] = fmax(e - prev, 0);
                    prev = e;
                }
            }
            for (int i = 0; i < w->n && !st; i++)
                if (item_work(&w->it[i], what) &&
                    pool_kernel(&ks, &nk, &cap, &w->it[i], what,
                                sc_median(t + (size_t)i * REPS, REPS)))
                    st = sc_err(err, SC_ENOMEM, "exec: out of memory");
        }
    }
    for (int i = 0; ev && i <= most; i++)
        be->ev_free(x->bk, ev[i]);
    sc_free(ev);
    sc_free(t);
    if (st) {
        sc_free(ks);
        return st;
    }
    for (int i = 0; i < nk; i++)
        ks[i].time_s /= ks[i].calls;
    *out = ks;
    *nout = nk;
    return SC_OK;
}

/* Phase 1: rank 0 measures each rank's clock offset (Cristian's algorithm). */
static sc_status sync_clocks(sc_exec *x, sc_error *err)
{
    const sc_backend *be = x->be;
    x->offset = sc_calloc((size_t)x->size, sizeof(double));
    if (!x->offset)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    sc_status st = SC_OK;
    for (int q = 1; q < x->size && !st; q++) {
        double dl = be->now(x->bk) + x->o.timeout_s;
        if (x->rank == 0)
            st = be->clock_offset(x->bk, q, CLOCK_ROUNDS, dl, &x->offset[q], err);
        else if (x->rank == q)
            st = be->clock_offset(x->bk, 0, CLOCK_ROUNDS, dl + x->o.timeout_s, &x->offset[q],
                                  err);
        if (st == SC_EIO)
            return sc_err(err, SC_EIO,
                          "rank %d: timed out after %g s waiting for the clock exchange from rank %d",
                          x->rank, x->o.timeout_s, x->rank ? 0 : q);
    }
    return st;
}

/* The median of times[from .. from + n) (a copy is sorted). */
static double window_median(const double *times, int from, int n, double *tmp)
{
    memcpy(tmp, times + from, sizeof(double) * (size_t)n);
    return sc_median(tmp, (size_t)n);
}

/* Phase 2: warm-up steps, then measured steps until the median of the last
 * n moved at most the tolerance from the median of the n before them (each
 * step from 2n on is judged), or cap steps. After each measured step rank 0
 * gathers its span from every rank (the step's time: latest end minus
 * earliest start over ranks, on rank 0's clock), decides and tells the
 * others: two small collectives between steps, outside any step's time.
 * Keeps every measured step's records. */
static sc_status run_steps(sc_exec *x, meas *g, sc_error *err)
{
    const sc_backend *be = x->be;
    int R = g->R;
    g->per = -1;
    g->drift = -1;
    g->span = sc_calloc(2, sizeof(double));
    double *tmp = NULL;
    if (x->rank == 0) {
        g->spans = sc_calloc((size_t)R * 2, sizeof(double));
        g->times = sc_calloc((size_t)g->cap, sizeof(double));
        g->begins = sc_calloc((size_t)g->cap, sizeof(double));
        tmp = sc_calloc((size_t)g->n, sizeof(double));
    }
    if (!g->span || (x->rank == 0 && (!g->spans || !g->times || !g->begins || !tmp))) {
        sc_free(tmp);
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    }
    sc_status st = SC_OK;
    int done = 0;
    for (int k = 0; !st && !done; k++) {
        double t_start = 0, pt = 0;
        x->step = k;
        x->verify_now = x->o.verify && k <= g->W;
        st = probe_step(x, g, &pt, err);
        if (!st)
            st = run_step(x, &t_start, err);
        if (st || k < g->W)
            continue;
        if (g->per < 0) {
            g->per = x->nrec;
            g->all = sc_calloc((size_t)g->cap * (size_t)(g->per ? g->per : 1), sizeof(rec));
            if (!g->all) {
                st = sc_err(err, SC_ENOMEM, "exec: out of memory");
                break;
            }
        }
        if (x->nrec != g->per) {
            st = sc_err(err, SC_EINVAL, "exec: rank %d: step %d ran %d ops, the first %d",
                        x->rank, k, x->nrec, g->per);
            break;
        }
        int j = g->N++;
        if (g->probe_t)
            g->probe_t[j] = pt;
        double end = t_start;
        for (int r = 0; r < g->per; r++)
            end = maxd(end, x->recs[r].t1);
        memcpy(g->all + (size_t)j * g->per, x->recs, sizeof(rec) * (size_t)g->per);
        g->span[0] = t_start;
        g->span[1] = end;
        st = be->gather_host(x->bk, g->span, sizeof(double) * 2, g->spans, 0, deadline(x), err);
        if (st)
            break;
        if (x->rank == 0) {
            double bgn = 1e300, e = -1e300;
            for (int r = 0; r < R; r++) {
                bgn = fmin(bgn, g->spans[2 * r] - x->offset[r]);
                e = fmax(e, g->spans[2 * r + 1] - x->offset[r]);
            }
            g->times[j] = e - bgn;
            g->begins[j] = bgn;
            int n = g->n, have = g->N;
            if (x->o.tolerance > 0 && have >= 2 * n) {
                double m1 = window_median(g->times, have - n, n, tmp);
                double m0 = window_median(g->times, have - 2 * n, n, tmp);
                g->drift = m1 > 0 ? fabs(m1 - m0) / m1 : 0;
            }
            done = have >= g->cap || (!(x->o.tolerance > 0) && have >= n) ||
                   (g->drift >= 0 && g->drift <= x->o.tolerance);
        }
        st = be->bcast_host(x->bk, &done, sizeof done, 0, deadline(x), err);
    }
    sc_free(tmp);
    return st;
}

/* Phase 3 (rank 0): the figures of the last n steps (median, min, max,
 * spread; the drift of phase 2) and the step kept as the timeline: their
 * median one (the lower middle), which every rank then learns. */
static sc_status pick_median(sc_exec *x, meas *g, sc_exec_summary *sum, sc_error *err)
{
    const sc_backend *be = x->be;
    if (x->rank == 0) {
        int n = g->N < g->n ? g->N : g->n, from = g->N - n;
        double *sorted = sc_calloc((size_t)n, sizeof(double));
        g->counts = sc_calloc((size_t)g->R, sizeof(int));
        if (!sorted || !g->counts) { /* the others time out in the broadcast */
            sc_free(sorted);
            return sc_err(err, SC_ENOMEM, "exec: out of memory");
        }
        memcpy(sorted, g->times + from, sizeof(double) * (size_t)n);
        sum->median_s = sc_median(sorted, (size_t)n); /* sorts */
        sum->min_s = sorted[0];
        sum->max_s = sorted[n - 1];
        sum->spread = sc_spread(sorted, (size_t)n);
        double med = sorted[(n - 1) / 2];
        for (int k = from; k < g->N; k++)
            if (g->times[k] == med) {
                g->median = k;
                break;
            }
        sum->steps = n;
        sum->runs = g->N;
        sum->drift = g->drift;
        sum->tolerance = x->o.tolerance;
        sum->stable = g->drift < 0 ? -1 : g->drift <= x->o.tolerance;
        sc_free(sorted);
    }
    return be->bcast_host(x->bk, &g->median, sizeof g->median, 0, deadline(x), err);
}

/* Phase 4: every rank's records of the median step to rank 0. */
static sc_status gather_ops(sc_exec *x, meas *g, sc_error *err)
{
    const sc_backend *be = x->be;
    sc_status st = be->gather_host(x->bk, &g->per, sizeof g->per, g->counts, 0, deadline(x), err);
    if (st)
        return st;
    if (x->rank == 0)
        for (int r = 0; r < g->R; r++)
            g->maxn = g->counts[r] > g->maxn ? g->counts[r] : g->maxn;
    st = be->bcast_host(x->bk, &g->maxn, sizeof g->maxn, 0, deadline(x), err);
    if (st)
        return st;
    size_t cap = (size_t)(g->maxn ? g->maxn : 1);
    g->mine = sc_calloc(cap, sizeof(wire_op));
    if (x->rank == 0)
        g->gathered = sc_calloc((size_t)g->R * cap, sizeof(wire_op));
    if (!g->mine || (x->rank == 0 && !g->gathered))
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    for (int r = 0; r < g->per; r++) {
        const rec *q = &g->all[(size_t)g->median * g->per + r];
        g->mine[r] = (wire_op){q->kind, q->stage, q->chunk, q->mb, q->stream, q->bytes, q->t0, q->t1};
    }
    return be->gather_host(x->bk, g->mine, sizeof(wire_op) * cap, g->gathered, 0, deadline(x),
                           err);
}

/* Phase 5 (rank 0): the median step as a timeline, on rank 0's clock from
 * the step's start; written whole to out_file (NULL: none). */
static sc_status write_timeline(sc_exec *x, meas *g, const char *out_file, sc_exec_summary *sum,
                                sc_error *err)
{
    int R = g->R;
    sc_timeline *tl = sc_timeline_new(R, "exec", x->model->name, x->cluster.name);
    if (!tl)
        return sc_err(err, SC_ENOMEM, "exec: out of memory");
    tl->step_time_s = g->times[g->median];
    snprintf(tl->device, sizeof tl->device, "%s", x->be->device_name(x->bk));
    /* no backend has a fused attention kernel: kernel_items runs each as
     * its two batched products, and says so for compare and calibrate */
    snprintf(tl->flash_attention, sizeof tl->flash_attention, "gemms");
    snprintf(tl->operands, sizeof tl->operands, "%s", x->o.zero_operands ? "zeros" : "random");
    tl->prov = g->prov;
    snprintf(tl->plan_file, sizeof tl->plan_file, "%s", x->plan_file);
    sc_status st = sc_plan_file_digest(x->plan_file, tl->plan_digest, err);
    tl->n_steps = sum->steps;
    tl->step_median_s = sum->median_s;
    tl->step_min_s = sum->min_s;
    tl->step_max_s = sum->max_s;
    tl->step_runs = sum->runs;
    tl->step_spread = sum->spread;
    if (sum->tolerance > 0) {
        tl->step_tolerance = sum->tolerance;
        tl->step_drift = sum->drift;
        tl->step_stable = sum->stable;
    }
    /* the probe, when every rank ran it (the slowest and fastest rank's in
     * the summary) */
    int probed = probe_size(x) > 0 && g->probes;
    for (int r = 0; r < R && probed; r++)
        probed = g->probes[r] > 0;
    if (probed) {
        tl->probe_m = tl->probe_n = tl->probe_k = probe_size(x);
        tl->probe_reps = SC_EXEC_PROBE_REPS;
        tl->probe_steps = sum->steps;
        snprintf(tl->probe_dtype, sizeof tl->probe_dtype, "%s", sc_dtype_name(x->cdt));
        sum->probe = probe_size(x);
        sum->probe_fast_s = g->probes[0];
        for (int r = 0; r < R; r++) {
            if (g->probes[r] > sum->probe_s) {
                sum->probe_s = g->probes[r];
                sum->probe_rank = r;
            }
            sum->probe_fast_s = fmin(sum->probe_fast_s, g->probes[r]);
        }
    }
    if (g->nkern > 0) { /* the timeline owns them from here */
        tl->kernels = g->kern;
        tl->n_kernels = g->nkern;
        tl->kernels_rank = 0;
        g->kern = NULL;
        g->nkern = 0;
    }
    double b = g->begins[g->median];
    int gpn = x->cluster.gpus_per_node > 0 ? x->cluster.gpus_per_node : 1;
    for (int r = 0; r < R && !st; r++) {
        sc_tl_rank *rk = &tl->ranks[r];
        sc_step_coords(&x->cfg, r, &rk->dp, &rk->pp, &rk->tp);
        rk->node = r / gpn;
        rk->device = r % gpn;
        if (probed)
            rk->probe_s = g->probes[r];
        for (int i = 0; i < g->counts[r]; i++) {
            const wire_op *w = &g->gathered[(size_t)r * g->maxn + i];
            sc_tl_op op = {(int)w->kind, (int)w->stage, (int)w->chunk, (int)w->mb,
                           (int)w->stream, w->bytes, w->t0 - x->offset[r] - b,
                           w->t1 - x->offset[r] - b};
            sc_timeline_add(tl, r, &op);
        }
        sum->ops_per_step += g->counts[r];
    }
    if (!st && out_file)
        st = sc_timeline_save(tl, out_file, err);
    else if (!st && tl->oom)
        st = sc_err(err, SC_ENOMEM, "exec: out of memory");
    sc_timeline_free(tl);
    return st;
}

sc_status sc_exec_run(sc_exec *x, const char *out_file, sc_exec_summary *sum,
                      int *must_abort, sc_error *err)
{
    *must_abort = 1;
    memset(sum, 0, sizeof *sum);
    meas g = {.R = x->size, .W = x->o.warmup, .n = x->o.steps,
              .cap = x->o.max_steps > x->o.steps ? x->o.max_steps : x->o.steps,
              .probe_n = probe_size(x)};
    sc_status st = sync_clocks(x, err);
    if (!st && g.probe_n > 0)
        probe_open(x, &g);
    if (!st)
        st = run_steps(x, &g, err);
    if (!st && probe_size(x) > 0) {
        /* this rank's median over the window the figures are over (every
         * rank knows N and n) */
        int n = g.N < g.n ? g.N : g.n;
        if (g.probe_n > 0 && n > 0)
            g.probe_med = sc_median(g.probe_t + (g.N - n), (size_t)n);
        if (x->rank == 0 && !(g.probes = sc_calloc((size_t)g.R, sizeof(double))))
            st = sc_err(err, SC_ENOMEM, "exec: out of memory"); /* the others time out */
        if (!st)
            st = x->be->gather_host(x->bk, &g.probe_med, sizeof g.probe_med, g.probes, 0,
                                    deadline(x), err);
    }
    probe_close(x, &g);
    if (st) {
        meas_free(&g);
        return st;
    }
    /* every rank finished its steps: from here a failure is a gather's */
    st = pick_median(x, &g, sum, err);
    if (!st)
        st = gather_ops(x, &g, err);
    if (!st)
        st = sc_backend_gather_provenance(x->be, x->bk, deadline(x), &g.prov, err);
    if (st == SC_EIO)
        st = sc_err(err, SC_EIO,
                    "rank %d: timed out after %g s waiting for the measurement gather from rank %d",
                    x->rank, x->o.timeout_s, x->rank ? 0 : 1);
    if (!st) {
        sum->ranks = g.R;
        sum->checked = x->checked;
        snprintf(sum->device, sizeof sum->device, "%s", x->be->device_name(x->bk));
        snprintf(sum->dtype, sizeof sum->dtype, "%s", sc_dtype_name(x->cdt));
        /* every rank is done with the step: rank 0 times its kernels alone */
        if (x->rank == 0 && x->o.kernels)
            st = kernel_profile(x, &g.kern, &g.nkern, err);
        sum->kernels = g.nkern;
        if (!st && x->rank == 0) {
            st = write_timeline(x, &g, out_file, sum, err);
            *must_abort = 0; /* every rank finished: nobody is stuck */
        }
    }
    if (!st)
        *must_abort = 0;
    meas_free(&g);
    return st;
}

void sc_exec_abort(sc_exec *x, int code)
{
    if (x && x->be && x->bk)
        x->be->abort(x->bk, code);
    _Exit(code);
}

void sc_exec_close(sc_exec *x)
{
    if (!x)
        return;
    const sc_backend *be = x->be;
    if (x->bk) {
        for (int i = 0; i < x->npend; i++)
            be->req_wait(x->bk, x->pend[i].req, be->now(x->bk) + x->o.timeout_s, NULL, NULL, NULL);
        sc_dbuf *bufs[] = {x->A,   x->B,   x->G,  x->O,   x->M0, x->M1,
                           x->opt, x->tpb, x->zb, x->shb, x->agb, x->cpb};
        for (size_t i = 0; i < SC_ARRAY_LEN(bufs); i++)
            be->free(x->bk, bufs[i]);
        int v = x->cfg.v, m = x->lw ? x->lw->sched->m : x->cfg.m;
        for (int i = 0; x->sendb && i < 2 * v * m; i++)
            be->free(x->bk, x->sendb[i]);
        for (int i = 0; x->recvb && i < 2 * v; i++)
            be->free(x->bk, x->recvb[i]);
        for (int i = 0; x->gradb && i < v * MAX_BUCKETS; i++)
            be->free(x->bk, x->gradb[i]);
        for (int i = 0; i < x->nev; i++)
            be->ev_free(x->bk, x->evs[i]);
        for (int i = 0; x->chan && i < 2 * x->S; i++)
            be->comm_free(x->bk, x->chan[i]);
        for (int i = 0; x->shc && i < x->n_shared; i++)
            be->comm_free(x->bk, x->shc[i]);
        be->comm_free(x->bk, x->tpc);
        be->comm_free(x->bk, x->dpc);
        if (x->cpc)
            be->comm_free(x->bk, x->cpc);
        be->finalize(x->bk);
    }
    sc_free(x->sendb);
    sc_free(x->recvb);
    sc_free(x->gradb);
    sc_free(x->evs);
    sc_free(x->chan);
    sc_free(x->shc);
    sc_free(x->recs);
    sc_free(x->pend);
    sc_free(x->offset);
    for (int c = 0; x->sw && c < x->cfg.v * (x->lw ? x->lw->k : 1); c++)
        sc_free(x->sw[c].it);
    sc_free(x->sw);
    sc_free(x->optdep);
    sc_free(x->cp_issued);
    sc_lower_free(x->lw);
    sc_model_free(x->model);
    sc_plan_free(x->plan);
    sc_free(x);
}
