/* lower.c - a step lowered to per-position actions; see lower.h for the
 * rules. Every rule about what runs after what in a step is here. */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sc_act_kind_name(int kind)
{
    static const char *const names[SC_ACT_N] = {"compute", "tp",   "gather", "reduce",
                                                "send",    "recv", "tied",   "params", "cp"};
    return kind >= 0 && kind < SC_ACT_N ? names[kind] : "?";
}

typedef struct lctx {
    sc_lowered *lw;
    const sc_model *m;
    const sc_cluster *c;
    sc_error *err;
    sc_status st;
    /* overlap_grad_reduce off: per chunk of the position being lowered, the stage
     * whose grad-final buckets wait for the last backward (-1: none), and that op's
     * schedule index */
    int *deferred, *deferred_si;
    int gathered; /* the position being lowered has had its first ZeRO-3 gather */
    /* PyTorch FSDP's ZeRO 2 (SHARD_GRAD_OP; cluster framework torch, dp > 1):
     * the parameters are gathered before every forward, as ZeRO 3's, and
     * freed after the backward; no gather after the optimizer */
    int fsdp_z2;
    /* overlap_param_gather (ZeRO 1, 2, dp > 1): compute ops of the position
     * lowered so far */
    int opg, nops;
    /* defer_embedding_wgrad: the output layer's weight gradients the position's
     * backwards left for the pipeline flush (seconds), and their chunk */
    double drain_s;
    int drain_chunk;
} lctx;

/* The parameter bytes per rank of position p, all its chunks. */
static double pos_param_bytes(const sc_lowered *lw, int p)
{
    double b = 0;
    for (int c = 0; c < lw->cfg.v; c++)
        b += lw->info[c * lw->cfg.pp + p].param_bytes;
    return b;
}

/* Appends a to position p's list; its index, or -1 (st set) on failure. */
static int push(lctx *x, int p, sc_action a)
{
    sc_lowered_pos *L = &x->lw->pos[p];
    if (x->st)
        return -1;
    if (L->n == L->cap_) {
        int n = L->cap_ ? 2 * L->cap_ : 256;
        sc_action *na = sc_realloc(L->acts, sizeof *na * (size_t)n);
        if (!na) {
            x->st = sc_err(x->err, SC_ENOMEM, "lower: out of memory");
            return -1;
        }
        L->acts = na;
        L->cap_ = n;
    }
    L->acts[L->n] = a;
    return L->n++;
}

static int push_dep(lctx *x, int p, int act)
{
    sc_lowered_pos *L = &x->lw->pos[p];
    if (x->st)
        return -1;
    if (L->ndeps == L->capdeps_) {
        int n = L->capdeps_ ? 2 * L->capdeps_ : 64;
        int *nd = sc_realloc(L->deps, sizeof *nd * (size_t)n);
        if (!nd) {
            x->st = sc_err(x->err, SC_ENOMEM, "lower: out of memory");
            return -1;
        }
        L->deps = nd;
        L->capdeps_ = n;
    }
    L->deps[L->ndeps] = act;
    return L->ndeps++;
}

static sc_action act(int kind, int op, int stage, int chunk, int mb, int sched_op)
{
    return (sc_action){.kind = (uint8_t)kind, .op = (uint8_t)op, .stage = (int16_t)stage,
                       .chunk = (int16_t)chunk, .mb = mb, .piece = 0, .pieces = 1, .peer = -1,
                       .match = -1, .sched_op = sched_op, .after = -1, .dep0 = 0, .ndeps = 0};
}

/* What stage s costs for the unit mb: its slice's figures when sliced. */
static const sc_stage_info *info_of(const sc_lowered *lw, int s, int mb)
{
    if (lw->k <= 1 || mb < 0)
        return &lw->info[s];
    return &lw->slice_info[(mb % lw->k) * lw->S + s];
}

/* The tp collective after action `after` when the stage allreduces: one
 * allreduce, or under sequence parallelism a reduce-scatter then an
 * all-gather of the same bytes (the same ring volume and steps); returns
 * the last action. */
static int tp_after(lctx *x, int p, int after, int s, int chunk, int mb, int si)
{
    const sc_lowered *lw = x->lw;
    if (lw->cfg.tp == 1 || lw->info[s].tp_count == 0)
        return after;
    double tp_bytes = info_of(lw, s, mb)->tp_bytes;
    if (lw->cfg.tp_comm_overlap)
        tp_bytes /= lw->cfg.tp; /* the last chunk; the rest moved beside the op (tp_beside) */
    static const int colls[2][2] = {{SC_COLL_ALLREDUCE, -1},
                                    {SC_COLL_REDUCE_SCATTER, SC_COLL_ALLGATHER}};
    static const int ops[2][2] = {{SC_OP_TP_ALLREDUCE, -1},
                                  {SC_OP_TP_REDUCESCATTER, SC_OP_TP_ALLGATHER}};
    int sp = lw->cfg.sp != 0;
    for (int k = 0; k < 1 + sp; k++) {
        sc_action a = act(SC_ACT_TP, ops[sp][k], s, chunk, mb, si);
        a.coll = (uint8_t)colls[sp][k];
        a.waits = 1;
        a.after = after;
        a.bytes = tp_bytes;
        after = push(x, p, a);
    }
    return after;
}

static int stream_before(const lctx *x, int p, int end);

/* tp communication overlap (cfg.tp_comm_overlap, under sp): before a compute
 * op that tp_after follows, its reduce-scatter and all-gather less their last
 * chunk, (tp - 1) / tp of the bytes, start with the op (after the stream
 * action before it) and move beside it; the stream does not wait for them,
 * but tp_after's last chunks follow them on the communicator. */
static void tp_beside(lctx *x, int p, int s, int chunk, int mb, int si)
{
    const sc_lowered *lw = x->lw;
    int tp = lw->cfg.tp;
    if (!lw->cfg.tp_comm_overlap || tp == 1 || lw->info[s].tp_count == 0)
        return;
    static const int colls[2] = {SC_COLL_REDUCE_SCATTER, SC_COLL_ALLGATHER};
    static const int ops[2] = {SC_OP_TP_REDUCESCATTER, SC_OP_TP_ALLGATHER};
    int after = stream_before(x, p, lw->pos[p].n);
    for (int k = 0; k < 2; k++) {
        sc_action a = act(SC_ACT_TP, ops[k], s, chunk, mb, si);
        a.coll = (uint8_t)colls[k];
        a.waits = 0;
        a.after = after;
        a.bytes = info_of(lw, s, mb)->tp_bytes * (tp - 1.0) / tp;
        push(x, p, a);
    }
}

/* Context parallelism: the cp group's key/value ring beside the compute
 * that began after stream action `before` (lower.h), mult times the
 * stage's cp_bytes per cp rank (1 forward and recompute, 2 backward).
 * Returns what follows the compute waits for: the ring, or `last` (the
 * compute's last action) when there is none. */
static int cp_beside(lctx *x, int p, int before, int last, int s, int chunk, int mb, int si,
                     double mult)
{
    const sc_lowered *lw = x->lw;
    int cp = lw->cfg.cp;
    double kv = info_of(lw, s, mb)->cp_bytes;
    if (cp <= 1 || !(kv > 0))
        return last;
    sc_action a = act(SC_ACT_CP, SC_OP_CP_EXCHANGE, s, chunk, mb, si);
    a.coll = SC_COLL_ALLGATHER;
    a.waits = 1;
    a.after = before;
    a.bytes = mult * cp * kv;
    return push(x, p, a);
}

/* last[c] = the index in ops of the op after which chunk c's gradients are
 * final (-1: none), for chunks 0..v-1. One pass, O(n). */
static void last_grad_ops(const sc_sched_op *ops, int n, int v, int split, int *last)
{
    int want = split ? SC_OP_W : SC_OP_B;
    for (int c = 0; c < v; c++)
        last[c] = -1;
    for (int i = 0; i < n; i++)
        if (ops[i].kind == want && ops[i].chunk >= 0 && ops[i].chunk < v)
            last[ops[i].chunk] = i;
}

/* The last action before index `end` of position p that the compute stream
 * runs (a compute, a tp collective or cp ring it waits for, or a receive), or -1: it
 * ends when an op pushed at `end` starts. */
static int stream_before(const lctx *x, int p, int end)
{
    const sc_lowered_pos *L = &x->lw->pos[p];
    for (int i = end - 1; i >= 0; i--) {
        int k = L->acts[i].kind;
        if (k == SC_ACT_COMPUTE || ((k == SC_ACT_TP || k == SC_ACT_CP) && L->acts[i].waits) ||
            k == SC_ACT_RECV)
            return i;
    }
    return -1;
}

/* A parameter all-gather (GATHER) of bytes in op o's actions: it may start
 * after action `after` (-1: the step's start; it follows the gathers before
 * it on the communicator) and, when waits, the stream waits for it before
 * the op's compute. */
static void push_gather(lctx *x, int p, int s, const sc_sched_op *o, int si, double bytes,
                        int after, int waits)
{
    sc_action a = act(SC_ACT_GATHER, SC_OP_DP_ALLGATHER, s, o->chunk, o->mb, si);
    a.coll = SC_COLL_ALLGATHER;
    a.waits = (uint8_t)waits;
    a.after = after;
    a.bytes = bytes;
    push(x, p, a);
}

/* One compute op of the schedule (F, B or W) with what goes with it;
 * returns its last action on the compute stream (what a SEND after it
 * waits for). *prev_start: the stream action whose end starts the previous
 * compute op (-1: none), after which this op's ZeRO-3 gather may begin;
 * receives this op's. */
static int lower_compute(lctx *x, int p, const sc_sched_op *o, int si, int grad_final,
                          int *prev_start, int *grad_done)
{
    const sc_lowered *lw = x->lw;
    const sc_step_cfg *cfg = &lw->cfg;
    int split = lw->sched->impl->split_backward;
    int s = o->chunk * cfg->pp + p, dp = sc_step_dpc(cfg);
    const sc_stage_info *in = info_of(lw, s, o->mb);
    if ((cfg->zero == 3 && dp > 1 && (o->kind == SC_OP_F || o->kind == SC_OP_B)) ||
        (x->fsdp_z2 && o->kind == SC_OP_F)) {
        /* the step's first: its first unit, then the rest while the op runs */
        double P = in->param_bytes, U = in->unit_bytes;
        int two = !x->gathered && U > 0 && U < P;
        /* prefetched once the previous op has started; the gathered (whole)
         * buffer */
        push_gather(x, p, s, o, si, two ? U : P, *prev_start, 1);
        if (two)
            push_gather(x, p, s, o, si, P - U, *prev_start, 0);
        x->gathered = 1;
    }
    if (x->opg && (o->kind == SC_OP_F || o->kind == SC_OP_B)) {
        /* the step's parameter all-gather (ZeRO 1, 2), one communicator in
         * order from the step's start: chunk 0's first unit before the
         * position's first op, the rest of chunk 0 beside it and before the
         * second; under the interleaved schedule each later chunk's before
         * that chunk's first forward (Megatron-Core's param_sync_func, which
         * NeMo's distributed Adam sets too: a chunk's gather is launched ahead
         * and waited for by its first forward) */
        double P = lw->info[p].param_bytes, U = lw->info[p].unit_bytes;
        int two = U > 0 && U < P;
        double bytes = -1;
        if (x->nops == 0)
            bytes = two ? U : P;
        else if (x->nops == 1 && two)
            bytes = P - U;
        if (bytes >= 0)
            push_gather(x, p, s, o, si, bytes, -1, 1);
        /* a chunk's first forward is its microbatch 0's (unit 0's when sliced) */
        if (o->kind == SC_OP_F && o->chunk > 0 && o->mb == 0)
            push_gather(x, p, s, o, si, lw->info[s].param_bytes, -1, 1);
        x->nops++;
    }
    int first = -1, last = -1;
    if (o->kind == SC_OP_B && in->recompute_s > 0) {
        if (cfg->recompute == SC_RECOMPUTE_FULL)
            tp_beside(x, p, s, o->chunk, o->mb, si);
        sc_action a = act(SC_ACT_COMPUTE, SC_OP_RECOMPUTE, s, o->chunk, o->mb, si);
        a.seconds = in->recompute_s;
        int before = stream_before(x, p, lw->pos[p].n);
        first = last = push(x, p, a);
        last = cp_beside(x, p, before, last, s, o->chunk, o->mb, si, 1);
        if (cfg->recompute == SC_RECOMPUTE_FULL)
            last = tp_after(x, p, last, s, o->chunk, o->mb, si);
    }
    /* under ZeRO 2 and 3 every backward reduces: each rank keeps only its shard of
     * the gradients, so they cannot wait for the last microbatch */
    int reduce = o->kind == (split ? SC_OP_W : SC_OP_B) && (grad_final || cfg->zero >= 2) &&
                 dp > 1;
    /* Megatron-Core's --defer-embedding-wgrad-compute: on the last position the
     * output layer's weight gradients of the first wgrad_deferral_limit
     * microbatches (all with 0) wait for the pipeline flush; the chunk's
     * gradients are reduced after them */
    int defer = cfg->defer_embedding_wgrad && p == cfg->pp - 1 && in->head_wgrad_s > 0 &&
                o->kind == (split ? SC_OP_W : SC_OP_B);
    double deferred_s = defer && (cfg->wgrad_deferral_limit == 0 ||
                                  o->mb < cfg->wgrad_deferral_limit)
                            ? in->head_wgrad_s
                            : 0;
    if (defer) {
        x->drain_s += deferred_s;
        x->drain_chunk = o->chunk;
    }
    if (reduce && grad_final && (cfg->no_overlap_grad_reduce || defer)) {
        /* overlap_grad_reduce off: the op runs whole; its buckets are pushed after the
         * position's last backward (lower_deferred_reduces) */
        x->deferred[o->chunk] = s;
        x->deferred_si[o->chunk] = si;
        reduce = 0;
    }
    /* the op that reduces is cut into its buckets, each reduced after its piece:
     * the grad-final op (DDP's and Megatron-LM's overlap) and, under ZeRO 2 and 3,
     * every backward (FSDP and DeepSpeed reduce-scatter each microbatch's
     * gradients during its backward, bucket by bucket or unit by unit) */
    int K = reduce ? in->buckets : 1;
    /* a split backward: B the input gradients, W the weight gradients (bwd_w_s) */
    if (o->kind != SC_OP_W)
        tp_beside(x, p, s, o->chunk, o->mb, si);
    int before = stream_before(x, p, lw->pos[p].n);
    double dur = o->kind == SC_OP_F   ? in->fwd_s
                 : o->kind == SC_OP_W ? in->bwd_w_s
                 : split              ? in->bwd_s - in->bwd_w_s
                                      : in->bwd_s;
    dur -= deferred_s;
    for (int k = 0; k < K && !x->st; k++) {
        sc_action a = act(SC_ACT_COMPUTE, o->kind, s, o->chunk, o->mb, si);
        a.seconds = dur / K;
        a.piece = (int16_t)k;
        a.pieces = (int16_t)K;
        last = push(x, p, a);
        if (first < 0)
            first = last;
        if (reduce) {
            int zero0 = cfg->zero == 0;
            sc_action r = act(SC_ACT_REDUCE, zero0 ? SC_OP_DP_ALLREDUCE : SC_OP_DP_REDUCESCATTER,
                              s, o->chunk, grad_final ? -1 : o->mb, si);
            r.coll = zero0 ? SC_COLL_ALLREDUCE : SC_COLL_REDUCE_SCATTER;
            r.after = last;
            r.piece = (int16_t)k;
            r.pieces = (int16_t)K;
            r.bytes = in->grad_bytes / K;
            push(x, p, r);
        }
    }
    if (o->kind != SC_OP_W) {
        last = cp_beside(x, p, before, last, s, o->chunk, o->mb, si, o->kind == SC_OP_F ? 1 : 2);
        last = tp_after(x, p, last, s, o->chunk, o->mb, si);
    }
    *prev_start = stream_before(x, p, first);
    if (grad_final)
        grad_done[o->chunk] = last;
    return last;
}

/* overlap_grad_reduce off (Megatron-LM without --overlap-grad-reduce reduces the
 * gradients once the whole backward is done): every deferred chunk's buckets, after
 * the position's last grad-final action, in chunk order. */
static void lower_deferred_reduces(lctx *x, int p, const int *grad_done)
{
    const sc_lowered *lw = x->lw;
    int v = lw->cfg.v, after = -1, zero0 = lw->cfg.zero == 0;
    for (int c = 0; c < v; c++)
        if (x->deferred[c] >= 0 && grad_done[c] > after)
            after = grad_done[c];
    for (int c = 0; c < v && !x->st; c++) {
        int s = x->deferred[c];
        if (s < 0)
            continue;
        const sc_stage_info *in = &lw->info[s];
        int K = in->buckets > 0 ? in->buckets : 1;
        for (int k = 0; k < K && !x->st; k++) {
            sc_action r = act(SC_ACT_REDUCE, zero0 ? SC_OP_DP_ALLREDUCE : SC_OP_DP_REDUCESCATTER,
                              s, c, -1, x->deferred_si[c]);
            r.coll = zero0 ? SC_COLL_ALLREDUCE : SC_COLL_REDUCE_SCATTER;
            r.after = after;
            r.piece = (int16_t)k;
            r.pieces = (int16_t)K;
            r.bytes = in->grad_bytes / K;
            push(x, p, r);
        }
    }
}

/* Position p's list from its schedule ops; grad_done[c] receives the last
 * action of chunk c's grad-final op. */
static void lower_position(lctx *x, int p, int *grad_done)
{
    const sc_lowered *lw = x->lw;
    int pp = lw->cfg.pp, n;
    int split = lw->sched->impl->split_backward;
    const sc_sched_op *ops = sc_sched_rank_ops(lw->sched, p, &n);
    int prev_start = -1, produced = -1, v = lw->cfg.v;
    int *last = sc_malloc(sizeof(int) * (size_t)v);
    x->deferred = sc_malloc(sizeof(int) * 2 * (size_t)v);
    if (!last || !x->deferred) {
        sc_free(last);
        sc_free(x->deferred);
        x->deferred = NULL;
        x->st = sc_err(x->err, SC_ENOMEM, "lower: out of memory");
        return;
    }
    x->deferred_si = x->deferred + v;
    x->gathered = 0;
    x->opg = lw->cfg.overlap_param_gather && (lw->cfg.zero == 1 || lw->cfg.zero == 2) &&
             sc_step_dpc(&lw->cfg) > 1 && !x->fsdp_z2;
    x->nops = 0;
    x->drain_s = 0;
    x->drain_chunk = -1;
    for (int c = 0; c < v; c++)
        x->deferred[c] = -1;
    last_grad_ops(ops, n, v, split, last);
    for (int i = 0; i < n && !x->st; i++) {
        const sc_sched_op *o = &ops[i];
        int s = o->chunk * pp + p;
        switch (o->kind) {
        case SC_OP_SEND_F:
        case SC_OP_SEND_B: {
            int back = o->kind == SC_OP_SEND_B;
            sc_action a = act(SC_ACT_SEND, o->kind, s, o->chunk, o->mb, i);
            a.peer = o->peer;
            a.after = produced; /* the op right before it (sched.h's rule) */
            a.bytes = info_of(lw, back ? s - 1 : s, o->mb)->send_bytes;
            push(x, p, a);
            break;
        }
        case SC_OP_RECV_F:
        case SC_OP_RECV_B: {
            int back = o->kind == SC_OP_RECV_B;
            sc_action a = act(SC_ACT_RECV, o->kind, s, o->chunk, o->mb, i);
            a.peer = o->peer;
            a.waits = 1;
            a.bytes = info_of(lw, back ? s : s - 1, o->mb)->send_bytes;
            push(x, p, a);
            break;
        }
        case SC_OP_F:
        case SC_OP_B:
        case SC_OP_W: {
            int final = o->chunk >= 0 && o->chunk < v && i == last[o->chunk];
            produced = lower_compute(x, p, o, i, final, &prev_start, grad_done);
            break;
        }
        default:
            break;
        }
    }
    if (!x->st && x->drain_s > 0) {
        /* the deferred output-layer weight gradients, after the position's last
         * op (a W of the head's chunk for no one microbatch, mb -1; an op of its
         * own after the schedule's n, sched_op n) */
        sc_action a = act(SC_ACT_COMPUTE, SC_OP_W, x->drain_chunk * pp + p, x->drain_chunk, -1, n);
        a.seconds = x->drain_s;
        int d = push(x, p, a);
        if (d >= 0 && grad_done[x->drain_chunk] >= 0)
            grad_done[x->drain_chunk] = d;
    }
    if (!x->st)
        lower_deferred_reduces(x, p, grad_done);
    sc_free(last);
    sc_free(x->deferred);
    x->deferred = x->deferred_si = NULL;
}

/* Each SEND's match: the RECV of the same direction, microbatch and
 * receiving stage in the peer's list. O(actions) with one table per
 * direction of (mb, stage) -> RECV index. */
static void match_sends(lctx *x)
{
    sc_lowered *lw = x->lw;
    int S = lw->S, m = lw->sched->m; /* units: microbatches x slices */
    int *recv = sc_malloc(sizeof(int) * 2 * (size_t)m * (size_t)S);
    if (!recv) {
        x->st = sc_err(x->err, SC_ENOMEM, "lower: out of memory");
        return;
    }
    for (size_t i = 0; i < 2 * (size_t)m * (size_t)S; i++)
        recv[i] = -1;
    for (int p = 0; p < lw->cfg.pp; p++)
        for (int i = 0; i < lw->pos[p].n; i++) {
            const sc_action *a = &lw->pos[p].acts[i];
            if (a->kind == SC_ACT_RECV)
                recv[((a->op == SC_OP_RECV_B) * m + a->mb) * S + a->stage] = i;
        }
    for (int p = 0; p < lw->cfg.pp; p++)
        for (int i = 0; i < lw->pos[p].n; i++) {
            sc_action *a = &lw->pos[p].acts[i];
            if (a->kind != SC_ACT_SEND)
                continue;
            int back = a->op == SC_OP_SEND_B, to = back ? a->stage - 1 : a->stage + 1;
            a->match = recv[(back * m + a->mb) * S + to];
        }
    sc_free(recv);
}

/* Tied groups whose members sit on two or more positions. A position counts
 * once, with the chunk of its first member leaf. */
static void lower_ties(lctx *x, const int *grad_done)
{
    sc_lowered *lw = x->lw;
    const sc_model *m = x->m;
    int pp = lw->cfg.pp, v = lw->cfg.v, tp = lw->cfg.tp;
    double gb = sc_cost_grad_reduce_bytes(m->dtype, lw->cfg.grad_reduce_in_fp32);
    lw->ties = sc_calloc((size_t)(m->n_groups ? m->n_groups : 1), sizeof *lw->ties);
    int *chunk = sc_malloc(sizeof(int) * (size_t)pp);
    if (!lw->ties || !chunk) {
        sc_free(chunk);
        x->st = sc_err(x->err, SC_ENOMEM, "lower: out of memory");
        return;
    }
    for (int g = 0; g < m->n_groups && !x->st; g++) {
        const sc_model_group *G = &m->groups[g];
        double params = 0;
        int npos = 0;
        for (int p = 0; p < pp; p++)
            chunk[p] = -1;
        for (int k = 0; k < G->n; k++) {
            const sc_module *y = m->leaves[G->leaves[k]];
            params += y->params / (y->has_tp && y->tp_shardable ? tp : 1);
            int s = sc_partition_stage_of(&lw->part, G->leaves[k]);
            if (chunk[s % pp] < 0) {
                chunk[s % pp] = s / pp;
                npos++;
            }
        }
        if (npos < 2)
            continue;
        sc_tie *T = &lw->ties[lw->n_ties++];
        T->group = g;
        T->bytes = params * gb;
        T->pos = sc_malloc(sizeof(int) * (size_t)npos);
        T->act = sc_malloc(sizeof(int) * (size_t)npos);
        if (!T->pos || !T->act) {
            x->st = sc_err(x->err, SC_ENOMEM, "lower: out of memory");
            break;
        }
        for (int p = 0; p < pp; p++) {
            if (chunk[p] < 0)
                continue;
            sc_action a = act(SC_ACT_TIED, SC_OP_DP_ALLREDUCE, -1, -1, -1, -1);
            a.coll = SC_COLL_ALLREDUCE;
            a.peer = lw->n_ties - 1;
            a.after = grad_done[p * v + chunk[p]];
            a.bytes = T->bytes;
            T->pos[T->npos] = p;
            T->act[T->npos++] = push(x, p, a);
        }
    }
    sc_free(chunk);
}

/* The optimizer after every reduction of the position, then ZeRO 1/2's
 * parameter allgather. */
static void lower_optimizer(lctx *x, int p)
{
    sc_lowered *lw = x->lw;
    const sc_step_cfg *cfg = &lw->cfg;
    double wb, gb, ob;
    sc_cost_state_bytes(x->m->dtype, &wb, &gb, &ob);
    double params = pos_param_bytes(lw, p) / wb;
    double local = cfg->zero >= 1 ? params / sc_step_dpc(cfg) : params;
    sc_lowered_pos *L = &lw->pos[p];
    int dep0 = L->ndeps;
    for (int i = 0; i < L->n; i++)
        if (L->acts[i].kind == SC_ACT_REDUCE || L->acts[i].kind == SC_ACT_TIED)
            push_dep(x, p, i);
    sc_action a = act(SC_ACT_COMPUTE, SC_OP_OPTIMIZER, p, -1, -1, -1);
    a.seconds = sc_cost_optimizer_time(x->c, x->m->dtype, local);
    a.bytes = local * (wb + gb + ob);
    a.dep0 = dep0;
    a.ndeps = L->ndeps - dep0;
    int opt = push(x, p, a);
    if ((cfg->zero == 1 || cfg->zero == 2) && sc_step_dpc(cfg) > 1 && !x->opg &&
        !x->fsdp_z2) {
        sc_action g = act(SC_ACT_PARAMS, SC_OP_DP_ALLGATHER, p, -1, -1, -1);
        g.coll = SC_COLL_ALLGATHER;
        g.waits = 1;
        g.after = opt;
        g.bytes = params * wb; /* the whole gathered buffer per rank */
        push(x, p, g);
    }
}

int sc_lower_fsdp_zero2(const sc_step_cfg *cfg, const sc_cluster *c)
{
    return cfg->zero == 2 && sc_step_dpc(cfg) > 1 && c && !strcmp(c->framework, "torch");
}

void sc_lower_free(sc_lowered *lw)
{
    if (!lw)
        return;
    for (int p = 0; lw->pos && p < lw->cfg.pp; p++) {
        sc_free(lw->pos[p].acts);
        sc_free(lw->pos[p].deps);
    }
    for (int t = 0; t < lw->n_ties; t++) {
        sc_free(lw->ties[t].pos);
        sc_free(lw->ties[t].act);
    }
    sc_free(lw->ties);
    sc_free(lw->pos);
    sc_free(lw->info);
    sc_free(lw->slice_info);
    sc_free(lw->slice_len);
    sc_sched_free(lw->sched);
    if (lw->own_part)
        sc_partition_free(&lw->part);
    sc_free(lw);
}

sc_status sc_lower(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                   sc_lowered **out, sc_error *err)
{
    *out = NULL;
    sc_status st = sc_step_check(m, c, cfg, err);
    if (st)
        return st;
    sc_lowered *lw = sc_calloc(1, sizeof *lw);
    if (!lw)
        return sc_err(err, SC_ENOMEM, "lower: out of memory");
    lw->cfg = *cfg;
    lw->S = cfg->pp * cfg->v;
    lw->k = cfg->slices > 1 ? cfg->slices : 1;
    st = sc_sched_generate_sliced(cfg->schedule, cfg->pp, cfg->m, lw->k, cfg->v, &lw->sched, err);
    if (!st && lw->k > 1) {
        lw->slice_len = sc_malloc(sizeof(int) * (size_t)lw->k);
        lw->slice_info = sc_calloc((size_t)lw->k * (size_t)lw->S, sizeof *lw->slice_info);
        if (!lw->slice_len || !lw->slice_info)
            st = sc_err(err, SC_ENOMEM, "lower: out of memory");
        for (int j = 0; !st && j < lw->k; j++)
            lw->slice_len[j] = cfg->slice_len ? cfg->slice_len[j]
                                              : m->seq_len / lw->k + (j < m->seq_len % lw->k);
        lw->cfg.slice_len = lw->slice_len;
    }
    if (!st && cfg->partition) {
        lw->part = *cfg->partition;
    } else if (!st) {
        st = sc_partition_uniform(m, lw->S, &lw->part, err);
        lw->own_part = !st;
    }
    lw->cfg.partition = &lw->part;
    if (!st) {
        lw->info = sc_calloc((size_t)lw->S, sizeof *lw->info);
        lw->pos = sc_calloc((size_t)cfg->pp, sizeof *lw->pos);
        if (!lw->info || !lw->pos)
            st = sc_err(err, SC_ENOMEM, "lower: out of memory");
    }
    if (!st) {
        sc_stage_cfg sc = sc_step_stage_cfg(m, cfg);
        st = sc_cost_stage(c, m, &lw->part, &sc, lw->info, err);
        /* a framework's gradient work (fsdp) goes with each backward that
         * reduce-scatters: a slice's B does so whole under ZeRO 3 (lower.h),
         * so each slice's figures carry all of it, not a token share */
        /* each slice: its tokens, and the keys of itself and the slices before */
        for (int j = 0, before = 0; !st && j < lw->k && lw->k > 1; j++) {
            sc.q_frac = (double)lw->slice_len[j] / m->seq_len;
            sc.kv_frac = (double)(before + lw->slice_len[j]) / m->seq_len;
            before += lw->slice_len[j];
            st = sc_cost_stage(c, m, &lw->part, &sc, lw->slice_info + (size_t)j * lw->S, err);
        }
    }
    int *grad_done = st ? NULL : sc_malloc(sizeof(int) * (size_t)lw->S);
    if (!st && !grad_done)
        st = sc_err(err, SC_ENOMEM, "lower: out of memory");
    if (st) {
        sc_lower_free(lw);
        return st;
    }
    lctx x = {.lw = lw, .m = m, .c = c, .err = err, .st = SC_OK,
              .fsdp_z2 = sc_lower_fsdp_zero2(&lw->cfg, c), .drain_chunk = -1};
    for (int s = 0; s < lw->S; s++)
        grad_done[s] = -1;
    for (int p = 0; p < cfg->pp && !x.st; p++)
        lower_position(&x, p, grad_done + p * cfg->v);
    if (!x.st)
        match_sends(&x);
    if (!x.st)
        lower_ties(&x, grad_done);
    for (int p = 0; p < cfg->pp && !x.st; p++)
        lower_optimizer(&x, p);
    sc_free(grad_done);
    if (x.st) {
        sc_lower_free(lw);
        return x.st;
    }
    *out = lw;
    return SC_OK;
}

void sc_lower_dump(const sc_lowered *lw, FILE *f)
{
    for (int p = 0; p < lw->cfg.pp; p++) {
        fprintf(f, "position %d: %d actions\n", p, lw->pos[p].n);
        for (int i = 0; i < lw->pos[p].n; i++) {
            const sc_action *a = &lw->pos[p].acts[i];
            fprintf(f, "  %4d %-7s %-14s stage %2d chunk %2d mb %3d", i,
                    sc_act_kind_name(a->kind), sc_op_kind_name(a->op), a->stage, a->chunk, a->mb);
            if (a->pieces > 1)
                fprintf(f, " piece %d/%d", a->piece, a->pieces);
            if (a->after >= 0)
                fprintf(f, " after %d", a->after);
            if (a->peer >= 0)
                fprintf(f, a->kind == SC_ACT_TIED ? " tie %d" : " peer %d", a->peer);
            if (a->match >= 0)
                fprintf(f, " match %d", a->match);
            if (a->waits)
                fprintf(f, " waits");
            if (a->kind == SC_ACT_COMPUTE)
                fprintf(f, " %.3f us", a->seconds * 1e6);
            if (a->bytes > 0)
                fprintf(f, " %.0f B", a->bytes);
            for (int k = 0; k < a->ndeps; k++)
                fprintf(f, "%s%d", k ? "," : " deps ", lw->pos[p].deps[a->dep0 + k]);
            fputc('\n', f);
        }
    }
}

sc_status sc_lower_save(const sc_lowered *lw, const char *file, sc_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    sc_lower_dump(lw, f);
    int bad = ferror(f);
    if (fclose(f) || bad) {
        free(buf);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", file);
    }
    sc_status st = sc_write_file_atomic(file, buf, len, err);
    free(buf);
    return st;
}

double sc_lowered_tp_msg(const sc_lowered *lw, const sc_action *a)
{
    int count = lw->info[a->stage].tp_count;
    return count > 0 ? a->bytes / count : a->bytes;
}
