/* step.c - one training step on the engine; see step.h for the model.
 *
 * Build order (so every dependency names a task that already exists):
 *   1. per pipeline position p, per op of p's schedule list, per dp replica
 *      d: the compute-stream tasks of the op, its tp allreduce, the ZeRO-3
 *      allgather before it and the gradient buckets after it (collectives
 *      across d are made once every replica's task exists);
 *   2. pipeline messages: tp flows from each SEND's producer to the matching
 *      RECV marker;
 *   3. allreduces of shared groups split over stages;
 *   4. optimizer, ZeRO 1/2 parameter allgather, end-of-step markers.
 * Cost: O(T) tasks with T = dp·pp·m·v·(ops per microbatch)·(1 + tp), then
 * the engine's run.
 */
#include "step.h"
#include "engine.h"
#include "json.h"
#include "schedule.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_BUCKETS 32
#define DEFAULT_BUCKET (25.0 * 1024 * 1024)

/* BUSY_HOST: the sender's time in a send (p2p_host_s_per_byte), on its compute
 * stream; counted as exposed pp communication, not as busy time */
enum { BUSY_NONE = 0, BUSY_COMPUTE, BUSY_RECOMPUTE, BUSY_OPT, BUSY_HOST };
enum { WAIT_NONE = 0, WAIT_TP, WAIT_PP, WAIT_DP };

/* What the builder remembers of a task (indexed by engine task id). */
typedef struct tinfo {
    int32_t group;   /* (d, p) stream group for stream tasks, -1 otherwise */
    int32_t rank;    /* sending rank of a flow, -1 otherwise */
    int32_t wait_s, wait_e; /* comm interval a stream task waited on: start of wait_s .. end of wait_e */
    int32_t mb;
    int16_t chunk, stage;
    uint8_t busy, wait, op, is_piece;
    float pad_;
    double bytes;
} tinfo;

typedef struct builder {
    const sc_model *m;
    const sc_cluster *c;
    const sc_step_cfg *cfg;
    sc_error *err;
    sc_sim *sim;
    sc_sched *sched;
    sc_partition part;
    int own_part;
    int dp, tp, pp, v, S, nm, ranks, gpn, nodes;
    int nrep;          /* data-parallel replicas simulated: dp, or 1 (see one_replica) */
    sc_dtype dt;
    /* per virtual stage */
    double *tf, *tb, *trc, *tpb, *bnd, *grad, *pbytes;
    int *tpn;
    /* links and resources */
    int *port_out, *port_in, *nic_out, *nic_in, *stream;
    double *link_bw;
    /* chains: last end marker per communicator */
    int *tp_chain;     /* per group (d, p) */
    int *dp_chain;     /* per (p, t): gradient reductions and ZeRO 1/2 gathers */
    int *z3_chain;     /* per (p, t): ZeRO-3 parameter gathers (their own stream) */
    int *dp_first;     /* start marker of the first collective of the pending reduction, per (p, t) */
    int *grad_done;    /* per (d, p, chunk): the task after which the chunk's grads are final */
    int *recv_task;    /* per (d, dir, mb, stage) */
    int *opt_task;     /* per group */
    int *extra_deps;   /* shared-group allreduce ends per group (at most 8 each) */
    int *extra_start;  /* and their start markers */
    int *n_extra;
    tinfo *info;
    int ninfo;
    gsl_rng *rng;
    sc_status st;
} builder;

static sc_status fail_nomem(builder *b)
{
    if (!b->st)
        b->st = sc_err(b->err, SC_ENOMEM, "sim: out of memory building the step");
    return b->st;
}

/* ---- placement -------------------------------------------------------------- */

static int placement_order(const char *pl, int order[3])
{
    /* order[i] = 0 (tp), 1 (pp), 2 (dp) from innermost to outermost */
    const char *names[3] = {"tp", "pp", "dp"};
    if (!pl)
        pl = "tp,pp,dp";
    int seen = 0;
    const char *s = pl;
    for (int i = 0; i < 3; i++) {
        int k = -1;
        for (int j = 0; j < 3; j++)
            if (!strncmp(s, names[j], 2))
                k = j;
        if (k < 0 || (seen & (1 << k)))
            return -1;
        seen |= 1 << k;
        order[i] = k;
        s += 2;
        if (i < 2) {
            if (*s != ',')
                return -1;
            s++;
        }
    }
    return *s ? -1 : 0;
}

static int placement_dp_outermost(const char *pl)
{
    int order[3];
    return placement_order(pl, order) == 0 && order[2] == 2;
}

int sc_step_rank(const sc_step_cfg *cfg, int d, int p, int t)
{
    int order[3], coord[3] = {t, p, d}, dim[3] = {cfg->tp, cfg->pp, cfg->dp};
    if (placement_order(cfg->placement, order))
        return -1;
    int r = 0;
    for (int i = 2; i >= 0; i--)
        r = r * dim[order[i]] + coord[order[i]];
    return r;
}

void sc_step_coords(const sc_step_cfg *cfg, int rank, int *d, int *p, int *t)
{
    int order[3], dim[3] = {cfg->tp, cfg->pp, cfg->dp}, coord[3] = {0, 0, 0};
    if (placement_order(cfg->placement, order) == 0)
        for (int i = 0; i < 3; i++) {
            coord[order[i]] = rank % dim[order[i]];
            rank /= dim[order[i]];
        }
    *t = coord[0];
    *p = coord[1];
    *d = coord[2];
}

sc_status sc_step_check(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                        sc_error *err)
{
    int order[3];
    if (cfg->dp < 1 || cfg->tp < 1 || cfg->pp < 1 || cfg->v < 1 || cfg->m < 1 || cfg->mbs < 1)
        return sc_err(err, SC_EINVAL,
                      "sim: dp, tp, pp, v, microbatches and mbs must be >= 1 (dp=%d tp=%d pp=%d "
                      "v=%d m=%d mbs=%d)",
                      cfg->dp, cfg->tp, cfg->pp, cfg->v, cfg->m, cfg->mbs);
    if (cfg->zero < 0 || cfg->zero > 3)
        return sc_err(err, SC_EINVAL, "sim: zero stage %d (0, 1, 2 or 3)", cfg->zero);
    if (placement_order(cfg->placement, order))
        return sc_err(err, SC_EINVAL,
                      "sim: placement '%s' is not an order of tp, pp, dp like tp,pp,dp",
                      cfg->placement);
    if (!sc_sched_find(cfg->schedule ? cfg->schedule : ""))
        return sc_err(err, SC_ENOTFOUND,
                      "sim: unknown schedule '%s' (gpipe, 1f1b, interleaved, zb-h1)",
                      cfg->schedule ? cfg->schedule : "");
    long ranks = (long)cfg->dp * cfg->tp * cfg->pp;
    long gpus = sc_cluster_total_gpus(c);
    if (ranks > gpus)
        return sc_err(err, SC_EINVAL,
                      "sim: dp·tp·pp = %ld ranks, but %s with %d node%s has %ld GPUs", ranks,
                      c->name, c->nodes, c->nodes == 1 ? "" : "s", gpus);
    if (cfg->partition && cfg->partition->n_stages != cfg->pp * cfg->v)
        return sc_err(err, SC_EINVAL, "sim: the partition has %d stages, pp·v = %d",
                      cfg->partition->n_stages, cfg->pp * cfg->v);
    if (c->gpu.peak_flops[m->dtype] <= 0)
        return sc_err(err, SC_ENOTSUP, "sim: %s has no %s peak on %s", c->name,
                      sc_dtype_name(m->dtype), c->gpu.name);
    if (!(cfg->jitter >= 0 && cfg->jitter < 1))
        return sc_err(err, SC_EINVAL, "sim: jitter %g must be in [0, 1)", cfg->jitter);
    return SC_OK;
}

/* ---- tasks ------------------------------------------------------------------- */

static tinfo *info_at(builder *b, int task)
{
    if (task < 0) {
        fail_nomem(b);
        return NULL;
    }
    if (task >= b->ninfo) {
        int n = b->ninfo ? b->ninfo : 1024;
        while (n <= task)
            n *= 2;
        tinfo *ni = sc_realloc(b->info, sizeof *ni * (size_t)n);
        if (!ni) {
            fail_nomem(b);
            return NULL;
        }
        for (int i = b->ninfo; i < n; i++)
            ni[i] = (tinfo){.group = -1, .rank = -1, .wait_s = -1, .wait_e = -1, .mb = -1,
                            .chunk = -1, .stage = -1};
        b->info = ni;
        b->ninfo = n;
    }
    return &b->info[task];
}

static double noisy(builder *b, double d)
{
    if (!b->rng || d <= 0)
        return d;
    double f = 1 + gsl_ran_gaussian(b->rng, b->cfg->jitter);
    return d * (f < 0.1 ? 0.1 : f);
}

/* The op identity a task reports in the timeline. */
static void set_op(tinfo *i, int op, int stage, int chunk, int mb)
{
    i->op = (uint8_t)op;
    i->stage = (int16_t)stage;
    i->chunk = (int16_t)chunk;
    i->mb = mb;
}

/* A task on group g's compute stream. */
static int stream_task(builder *b, int g, double dur, int busy, int op, int stage, int chunk,
                       int mb)
{
    int t = sc_sim_add_compute(b->sim, b->stream[g], busy ? noisy(b, dur) : 0, NULL);
    tinfo *i = info_at(b, t);
    if (!i)
        return -1;
    i->group = g;
    i->busy = (uint8_t)busy;
    set_op(i, op, stage, chunk, mb);
    return t;
}

static int node_of(builder *b, int rank) { return rank / b->gpn; }

static sc_link link_class(builder *b, int from, int to)
{
    return node_of(b, from) != node_of(b, to) ? SC_LINK_INTER : SC_LINK_INTRA;
}

static int path(builder *b, int from, int to, int links[2], double *alpha)
{
    int na = node_of(b, from), nb = node_of(b, to);
    if (na == nb) {
        links[0] = b->port_out[from];
        links[1] = b->port_in[to];
        *alpha = b->c->eff.alpha_s[SC_LINK_INTRA];
    } else {
        links[0] = b->nic_out[na];
        links[1] = b->nic_in[nb];
        *alpha = b->c->eff.alpha_s[SC_LINK_INTER];
    }
    return 2;
}

/* One flow of vol bytes over links[0..1] between task `from` and task `to`
 * (either may be -1), recorded for the timeline as an op of rank (-1: not
 * shown) with the given identity. Returns the flow's task or -1. */
static int flow_task(builder *b, const int links[2], double vol, int from, int to, int rank,
                     int op, int stage, int chunk, int mb, double report)
{
    int f = sc_sim_add_flow(b->sim, vol, links, 2, -1, NULL);
    tinfo *ti = info_at(b, f);
    if (!ti)
        return -1;
    ti->rank = rank;
    set_op(ti, op, stage, chunk, mb);
    ti->bytes = report;
    if (from >= 0)
        sc_sim_add_dep(b->sim, from, f);
    if (to >= 0)
        sc_sim_add_dep(b->sim, f, to);
    return f;
}

/* A ring collective among ranks members[0..n) (ascending). Each member sends
 * vol bytes to the next; lat_steps alpha of latency in all. Starts after
 * deps and after the communicator's previous collective (*chain). Returns
 * the end marker (and the start marker in *start_out); -1 on failure. */
static int add_ring(builder *b, const int *members, int n, double vol, double lat_steps,
                    const int *deps, int ndeps, int *chain, int op, int stage, int chunk, int mb,
                    double report_bytes, int *start_out)
{
    int start = sc_sim_add_marker(b->sim, NULL);
    if (start < 0)
        return fail_nomem(b), -1;
    for (int i = 0; i < ndeps; i++)
        if (deps[i] >= 0)
            sc_sim_add_dep(b->sim, deps[i], start);
    if (chain && *chain >= 0)
        sc_sim_add_dep(b->sim, *chain, start);
    int end = sc_sim_add_marker(b->sim, NULL);
    if (end < 0)
        return fail_nomem(b), -1;
    if (n > 1 && (vol > 0 || lat_steps > 0)) {
        double amax = 0;
        for (int i = 0; i < n; i++) {
            int l[2];
            double a;
            path(b, members[i], members[(i + 1) % n], l, &a);
            if (a > amax)
                amax = a;
        }
        int from = start;
        if (lat_steps > 1 && amax > 0) {
            from = sc_sim_add_compute(b->sim, -1, (lat_steps - 1) * amax, NULL);
            sc_sim_add_dep(b->sim, start, from);
        }
        for (int i = 0; i < n; i++) {
            int l[2];
            double a;
            path(b, members[i], members[(i + 1) % n], l, &a);
            if (flow_task(b, l, vol, from, end, members[i], op, stage, chunk, mb,
                          report_bytes) < 0)
                return -1;
        }
    } else {
        sc_sim_add_dep(b->sim, start, end);
    }
    if (chain)
        *chain = end;
    if (start_out)
        *start_out = start;
    return end;
}

static int rank_of(builder *b, int d, int p, int t) { return sc_step_rank(b->cfg, d, p, t); }

/* Sorted member list of the dp communicator (p, t). */
static void dp_members(builder *b, int p, int t, int *out)
{
    for (int d = 0; d < b->dp; d++)
        out[d] = rank_of(b, d, p, t);
    for (int i = 1; i < b->dp; i++) /* insertion sort: placement may reorder */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int x = out[j];
            out[j] = out[j - 1];
            out[j - 1] = x;
        }
}

static void tp_members(builder *b, int d, int p, int *out)
{
    for (int t = 0; t < b->tp; t++)
        out[t] = rank_of(b, d, p, t);
    for (int i = 1; i < b->tp; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int x = out[j];
            out[j] = out[j - 1];
            out[j - 1] = x;
        }
}

/* A data-parallel ring collective of communicator (p, t) after deps[0..nrep)
 * (one task per simulated replica). Simulating every replica, it is
 * add_ring over the dp members. Simulating replica 0 alone (one_replica),
 * its member stands for all: by the symmetry of the default placement every
 * replica runs the same ops at the same times, and a ring through a node
 * leaves it once and enters it once, so the ring's inter-node edge becomes
 * one flow through its node's NIC out and in, and (when several members
 * share the node) its intra-node edges one flow through its GPU's ports. */
static int dp_ring(builder *b, int p, int t, double vol, double lat_steps, const int *deps,
                   int *chain, int op, int stage, int chunk, int mb, double report, int *start_out)
{
    int dp = b->dp;
    if (b->nrep == dp) {
        int *members = sc_malloc(sizeof(int) * (size_t)dp);
        if (!members)
            return fail_nomem(b), -1;
        dp_members(b, p, t, members);
        int e = add_ring(b, members, dp, vol, lat_steps, deps, dp, chain, op, stage, chunk, mb,
                         report, start_out);
        sc_free(members);
        return e;
    }
    int start = sc_sim_add_marker(b->sim, NULL), end = sc_sim_add_marker(b->sim, NULL);
    if (start < 0 || end < 0)
        return fail_nomem(b), -1;
    if (deps[0] >= 0)
        sc_sim_add_dep(b->sim, deps[0], start);
    if (chain && *chain >= 0)
        sc_sim_add_dep(b->sim, *chain, start);
    int r = rank_of(b, 0, p, t), X = node_of(b, r), rpn = 0;
    for (int d = 0; d < dp; d++)
        rpn += node_of(b, rank_of(b, d, p, t)) == X;
    if (dp > 1 && (vol > 0 || lat_steps > 0)) {
        double a = b->c->eff.alpha_s[rpn < dp ? SC_LINK_INTER : SC_LINK_INTRA];
        int from = start;
        if (lat_steps > 1 && a > 0) {
            from = sc_sim_add_compute(b->sim, -1, (lat_steps - 1) * a, NULL);
            sc_sim_add_dep(b->sim, start, from);
        }
        int paths[2][2] = {{b->nic_out[X], b->nic_in[X]}, {b->port_out[r], b->port_in[r]}};
        int first = 1;
        for (int k = 0; k < 2; k++) {
            if ((k == 0 && rpn == dp) || (k == 1 && rpn == 1))
                continue;
            /* one comm op per collective in the timeline */
            if (flow_task(b, paths[k], vol, from, end, first ? r : -1, op, stage, chunk, mb,
                          report) < 0)
                return -1;
            first = 0;
        }
    } else {
        sc_sim_add_dep(b->sim, start, end);
    }
    if (chain)
        *chain = end;
    if (start_out)
        *start_out = start;
    return end;
}

/* The tp allreduce after a compute task of group g: returns the tp_done
 * marker on the stream (or the compute task itself when tp = 1). */
static int tp_after(builder *b, int g, int after, int stage, int chunk, int mb, int *members)
{
    if (b->tp == 1 || b->tpn[stage] == 0)
        return after;
    int d = g / b->pp, p = g % b->pp, s0;
    tp_members(b, d, p, members);
    double S = b->tpb[stage];
    int end = add_ring(b, members, b->tp, 2.0 * (b->tp - 1) / b->tp * S,
                       2.0 * (b->tp - 1) * b->tpn[stage], &after, 1, &b->tp_chain[g],
                       SC_OP_TP_ALLREDUCE, stage, chunk, mb, S, &s0);
    int done = stream_task(b, g, 0, BUSY_NONE, SC_OP_TP_ALLREDUCE, stage, chunk, mb);
    tinfo *i = info_at(b, done);
    if (!i || end < 0)
        return -1;
    i->wait = WAIT_TP;
    i->wait_s = s0;
    i->wait_e = end;
    sc_sim_add_dep(b->sim, end, done);
    return done;
}

/* ---- per-stage costs ----------------------------------------------------------- */

static int is_attention(const sc_module *x)
{
    return !strcmp(x->kind, "attention") || !strcmp(x->kind, "cross_attention") ||
           !strcmp(x->kind, "attention_core");
}

static sc_status stage_costs(builder *b)
{
    const sc_model *m = b->m;
    const sc_cluster *c = b->c;
    int mbs = b->cfg->mbs, tp = b->tp;
    double wb, gb, ob;
    sc_cost_state_bytes(b->dt, &wb, &gb, &ob);
    for (int s = 0; s < b->S; s++) {
        int f0 = b->part.first[s], n = b->part.first[s + 1] - f0;
        sc_module *const *mods = m->leaves + f0;
        sc_status st = sc_cost_modules_time(c, mods, n, b->dt, tp, mbs, &b->tf[s], &b->tb[s],
                                            b->err);
        if (st)
            return st;
        double params = 0, rc = 0, tpb = 0;
        int tpn = 0;
        for (int i = 0; i < n; i++) {
            const sc_module *x = mods[i];
            double sh = x->has_tp && x->tp_shardable ? tp : 1;
            params += x->params / sh;
            if (x->has_tp && x->tp_bytes > 0) {
                tpb += x->tp_bytes * mbs;
                tpn++;
            }
            if (is_attention(x)) {
                double sq = sc_module_dim(x, "seq", m->seq_len);
                double skv = sc_module_dim(x, "kv_seq", sq);
                double heads = sc_module_dim(x, "heads", 0), kv = sc_module_dim(x, "kv", 0);
                double inner = heads > 0 && kv > 0 ? heads * kv : sc_module_dim(x, "hidden", 0);
                double k = sc_module_dim(x, "passages", 1);
                double fl = 4 * sq * skv * inner * k * mbs / sh;
                double eff = sc_cost_eff(c, b->dt, fl);
                if (fl > 0 && eff > 0)
                    rc += fl / (c->gpu.peak_flops[b->dt] * eff);
            }
        }
        b->tpb[s] = tpb;
        b->tpn[s] = tpn;
        b->grad[s] = params * gb;
        b->pbytes[s] = params * wb;
        b->trc[s] = b->cfg->recompute == SC_RECOMPUTE_FULL        ? b->tf[s]
                    : b->cfg->recompute == SC_RECOMPUTE_SELECTIVE ? rc
                                                                  : 0;
    }
    /* boundary s -> s+1: the last leaf's output plus every inputs edge that
     * crosses it (relayed stage by stage). */
    for (int s = 0; s + 1 < b->S; s++)
        b->bnd[s] = m->leaves[b->part.first[s + 1] - 1]->act_out_bytes;
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *x = m->modules[i];
        for (int k = 0; k < x->n_inputs; k++) {
            const sc_module *y = sc_model_find(m, x->inputs[k]);
            if (!y)
                continue;
            const sc_module *yl = y, *xl = x;
            while (yl->n_children)
                yl = yl->children[yl->n_children - 1];
            while (xl->n_children)
                xl = xl->children[0];
            int sy = sc_partition_stage_of(&b->part, yl->leaf_index);
            int sx = sc_partition_stage_of(&b->part, xl->leaf_index);
            for (int s = sy; s < sx; s++)
                b->bnd[s] += y->act_out_bytes;
        }
    }
    for (int s = 0; s + 1 < b->S; s++)
        b->bnd[s] = b->bnd[s] * mbs / tp;
    return SC_OK;
}

int sc_step_bucket_count(double grad_bytes, double bucket_bytes)
{
    double bucket = bucket_bytes > 0 ? bucket_bytes : DEFAULT_BUCKET;
    double k = ceil(grad_bytes / bucket);
    return k < 1 ? 1 : k > MAX_BUCKETS ? MAX_BUCKETS : (int)k;
}

/* ---- build -------------------------------------------------------------------- */

static int last_grad_op(const sc_sched_op *ops, int n, int chunk, int split)
{
    int want = split ? SC_OP_W : SC_OP_B, last = -1;
    for (int i = 0; i < n; i++)
        if (ops[i].kind == want && ops[i].chunk == chunk)
            last = i;
    return last;
}

static int recv_index(builder *b, int d, int dir, int mb, int stage)
{
    return ((d * 2 + dir) * b->nm + mb) * b->S + stage;
}

static sc_status build(builder *b)
{
    const sc_step_cfg *cfg = b->cfg;
    int dp = b->dp, tp = b->tp, pp = b->pp, v = b->v;
    int split = b->sched->impl->split_backward;
    int maxn = dp > tp ? dp : tp;
    if (maxn < pp)
        maxn = pp;
    int *members = sc_malloc(sizeof(int) * (size_t)(maxn + 1) * 2);
    int *deps = sc_malloc(sizeof(int) * (size_t)(dp * MAX_BUCKETS + tp + 8));
    int *cur = sc_malloc(sizeof(int) * (size_t)dp * (MAX_BUCKETS + 1));
    int *prev_first = sc_malloc(sizeof(int) * (size_t)dp);
    int *producer = NULL;
    if (!members || !deps || !cur || !prev_first) {
        sc_free(members), sc_free(deps), sc_free(cur), sc_free(prev_first);
        return fail_nomem(b);
    }
    double bucket = cfg->bucket_bytes > 0 ? cfg->bucket_bytes : DEFAULT_BUCKET;
    double wb, gb, ob;
    sc_cost_state_bytes(b->dt, &wb, &gb, &ob);

    /* 1. stream tasks, position by position, op by op, replica by replica */
    int total_ops = b->sched->off[pp];
    producer = sc_malloc(sizeof(int) * (size_t)dp * (size_t)(total_ops ? total_ops : 1));
    if (!producer) {
        sc_free(members), sc_free(deps), sc_free(cur), sc_free(prev_first);
        return fail_nomem(b);
    }
    for (int p = 0; p < pp && !b->st; p++) {
        int n;
        const sc_sched_op *ops = sc_sched_rank_ops(b->sched, p, &n);
        int lastg[64];
        for (int c = 0; c < v && c < 64; c++)
            lastg[c] = last_grad_op(ops, n, c, split);
        for (int d = 0; d < b->nrep; d++)
            prev_first[d] = -1;
        for (int i = 0; i < n && !b->st; i++) {
            sc_sched_op o = ops[i];
            int s = o.chunk * pp + p, oi = b->sched->off[p] + i;
            if (o.kind == SC_OP_SEND_F || o.kind == SC_OP_SEND_B) {
                /* its producer was recorded with the op before it; the
                 * sender's host time, if any, holds its compute stream */
                int dir = o.kind == SC_OP_SEND_B;
                double bytes = b->bnd[dir ? s - 1 : s];
                for (int d = 0; d < b->nrep && !b->st; d++) {
                    sc_link lk = link_class(b, rank_of(b, d, p, 0), rank_of(b, d, o.peer, 0));
                    double h = b->c->eff.p2p_host_s_per_byte[lk] * bytes;
                    if (h > 0)
                        stream_task(b, d * pp + p, h, BUSY_HOST, o.kind, s, o.chunk, o.mb);
                }
                continue;
            }
            if (o.kind == SC_OP_RECV_F || o.kind == SC_OP_RECV_B) {
                for (int d = 0; d < b->nrep; d++) {
                    int t = stream_task(b, d * pp + p, 0, BUSY_NONE, o.kind, s, o.chunk, o.mb);
                    tinfo *ti = info_at(b, t);
                    if (!ti)
                        break;
                    ti->wait = WAIT_PP;
                    b->recv_task[recv_index(b, d, o.kind == SC_OP_RECV_B, o.mb, s)] = t;
                }
                continue;
            }
            /* ZeRO-3: gather the stage's parameters before F and B */
            int gather_end[64];
            int gather_start = -1;
            int ng = 0;
            if (cfg->zero == 3 && dp > 1 && (o.kind == SC_OP_F || o.kind == SC_OP_B)) {
                for (int t = 0; t < tp && t < 64; t++) {
                    double P = b->pbytes[s]; /* the gathered (whole) buffer */
                    int s0;
                    gather_end[ng++] = dp_ring(b, p, t, (dp - 1.0) / dp * P, dp - 1.0, prev_first,
                                               &b->z3_chain[p * tp + t], SC_OP_DP_ALLGATHER, s,
                                               o.chunk, o.mb, P, &s0);
                    if (gather_start < 0)
                        gather_start = s0;
                }
            }
            int grad_final = i == lastg[o.chunk];
            int reduce_now = (o.kind == (split ? SC_OP_W : SC_OP_B)) && (grad_final || cfg->zero == 3) && dp > 1;
            int K = 1;
            if (reduce_now && grad_final)
                K = sc_step_bucket_count(b->grad[s], bucket);
            for (int d = 0; d < b->nrep && !b->st; d++) {
                int g = d * pp + p, first = -1, last = -1;
                if (o.kind == SC_OP_B && b->trc[s] > 0) {
                    first = stream_task(b, g, b->trc[s], BUSY_RECOMPUTE, SC_OP_RECOMPUTE, s,
                                        o.chunk, o.mb);
                    last = first;
                    if (cfg->recompute == SC_RECOMPUTE_FULL)
                        last = tp_after(b, g, last, s, o.chunk, o.mb, members);
                }
                double dur = o.kind == SC_OP_F ? b->tf[s] : split ? b->tb[s] / 2 : b->tb[s];
                for (int k = 0; k < K; k++) {
                    int t = stream_task(b, g, dur / K, BUSY_COMPUTE, o.kind, s, o.chunk, o.mb);
                    tinfo *ti = info_at(b, t);
                    if (!ti)
                        break;
                    ti->is_piece = k > 0;
                    if (first < 0)
                        first = t;
                    if (k == 0 && ng) {
                        for (int q = 0; q < ng; q++)
                            sc_sim_add_dep(b->sim, gather_end[q], t);
                        ti->wait = WAIT_DP;
                        ti->wait_s = gather_start;
                        ti->wait_e = gather_end[ng - 1];
                    }
                    cur[d * (MAX_BUCKETS + 1) + k] = t;
                    last = t;
                }
                if (o.kind != SC_OP_W)
                    last = tp_after(b, g, last, s, o.chunk, o.mb, members);
                cur[d * (MAX_BUCKETS + 1) + K] = last;
                prev_first[d] = first;
                if (grad_final)
                    b->grad_done[(d * pp + p) * v + o.chunk] = last;
                /* the SEND right after this op is produced by its last task */
                if (i + 1 < n && (ops[i + 1].kind == SC_OP_SEND_F || ops[i + 1].kind == SC_OP_SEND_B))
                    producer[d * total_ops + oi + 1] = last;
            }
            if (reduce_now && !b->st) {
                /* gradient buckets of this chunk across the dp replicas */
                sc_coll kind = cfg->zero == 0 ? SC_COLL_ALLREDUCE : SC_COLL_REDUCE_SCATTER;
                double G = b->grad[s] / K;
                double vol = kind == SC_COLL_ALLREDUCE ? 2.0 * (dp - 1) / dp * G : (dp - 1.0) / dp * G;
                double lat = kind == SC_COLL_ALLREDUCE ? 2.0 * (dp - 1) : dp - 1.0;
                int op = kind == SC_COLL_ALLREDUCE ? SC_OP_DP_ALLREDUCE : SC_OP_DP_REDUCESCATTER;
                for (int t = 0; t < tp; t++) {
                    for (int k = 0; k < K; k++) {
                        for (int d = 0; d < b->nrep; d++)
                            deps[d] = cur[d * (MAX_BUCKETS + 1) + k];
                        int s0;
                        dp_ring(b, p, t, vol, lat, deps, &b->dp_chain[p * tp + t], op, s, o.chunk,
                                grad_final ? -1 : o.mb, G, &s0);
                        if (k == 0 && (grad_final || b->dp_first[p * tp + t] < 0))
                            b->dp_first[p * tp + t] = s0;
                    }
                }
            }
        }
    }

    /* 2. pipeline messages */
    for (int d = 0; d < b->nrep && !b->st; d++) {
        for (int p = 0; p < pp && !b->st; p++) {
            int n;
            const sc_sched_op *ops = sc_sched_rank_ops(b->sched, p, &n);
            for (int i = 0; i < n && !b->st; i++) {
                sc_sched_op o = ops[i];
                if (o.kind != SC_OP_SEND_F && o.kind != SC_OP_SEND_B)
                    continue;
                int s = o.chunk * pp + p, dir = o.kind == SC_OP_SEND_B;
                int to_stage = dir ? s - 1 : s + 1;
                int recv = b->recv_task[recv_index(b, d, dir, o.mb, to_stage)];
                int prod = producer[d * total_ops + b->sched->off[p] + i];
                double bytes = b->bnd[dir ? s - 1 : s];
                int end = sc_sim_add_marker(b->sim, NULL), first_flow = -1;
                for (int t = 0; t < tp; t++) {
                    int from = rank_of(b, d, p, t), to = rank_of(b, d, o.peer, t), l[2];
                    double a;
                    path(b, from, to, l, &a);
                    /* links run at the collectives' share (bw_eff); a message
                     * reaching another share (p2p_bw_eff) costs the link
                     * bytes in proportion */
                    sc_link lk = link_class(b, from, to);
                    double wire = bytes * b->c->eff.bw_eff[lk] / sc_cluster_p2p_eff(b->c, lk);
                    int f = flow_task(b, l, wire, prod, end, from, o.kind, s, o.chunk, o.mb,
                                      bytes);
                    if (f < 0)
                        break;
                    if (first_flow < 0)
                        first_flow = f;
                }
                tinfo *ri = info_at(b, recv);
                if (!ri || end < 0)
                    break;
                ri->wait_s = first_flow;
                ri->wait_e = end;
                ri->bytes = bytes;
                sc_sim_add_dep(b->sim, end, recv);
            }
        }
    }

    /* 3. shared groups split over stages: allreduce their gradients */
    for (int i = 0; i < b->m->n_leaves && !b->st; i++) {
        const sc_module *x = b->m->leaves[i];
        if (!x->shared)
            continue;
        int seen_before = 0;
        for (int j = 0; j < i && !seen_before; j++)
            seen_before = b->m->leaves[j]->shared && !strcmp(b->m->leaves[j]->shared, x->shared);
        if (seen_before)
            continue;
        /* positions (and chunks) holding members; the group's parameters */
        int pos_chunk[64], npos = 0;
        double params = 0;
        for (int j = i; j < b->m->n_leaves; j++) {
            const sc_module *y = b->m->leaves[j];
            if (!y->shared || strcmp(y->shared, x->shared))
                continue;
            params += y->params / (y->has_tp && y->tp_shardable ? tp : 1);
            int s = sc_partition_stage_of(&b->part, j);
            int p = s % pp, c = s / pp, dup = 0;
            for (int k = 0; k < npos; k++)
                dup |= pos_chunk[k] / 64 == p;
            if (!dup && npos < 64)
                pos_chunk[npos++] = p * 64 + c;
        }
        if (npos < 2)
            continue;
        double G = params * gb;
        for (int d = 0; d < b->nrep; d++) {
            for (int t = 0; t < tp; t++) {
                for (int k = 0; k < npos; k++) {
                    int p = pos_chunk[k] / 64, c = pos_chunk[k] % 64;
                    members[k] = rank_of(b, d, p, t);
                    deps[k] = b->grad_done[(d * pp + p) * v + c];
                }
                for (int a = 1; a < npos; a++) /* sort members, keep deps aligned */
                    for (int z = a; z > 0 && members[z - 1] > members[z]; z--) {
                        int x1 = members[z], x2 = deps[z];
                        members[z] = members[z - 1];
                        deps[z] = deps[z - 1];
                        members[z - 1] = x1;
                        deps[z - 1] = x2;
                    }
                int s0;
                int end = add_ring(b, members, npos, 2.0 * (npos - 1) / npos * G,
                                   2.0 * (npos - 1), deps, npos, NULL, SC_OP_DP_ALLREDUCE, -1, -1,
                                   -1, G, &s0);
                for (int k = 0; k < npos; k++) {
                    int g = d * pp + pos_chunk[k] / 64;
                    if (b->n_extra[g] < 8) {
                        b->extra_start[g * 8 + b->n_extra[g]] = s0;
                        b->extra_deps[g * 8 + b->n_extra[g]++] = end;
                    }
                }
            }
        }
    }

    /* 4. optimizer, ZeRO 1/2 allgather, end of step */
    for (int p = 0; p < pp && !b->st; p++) {
        double params = 0;
        for (int c = 0; c < v; c++)
            params += b->pbytes[c * pp + p] / wb;
        double local = cfg->zero >= 1 ? params / dp : params;
        double topt = sc_cost_optimizer_time(b->c, b->dt, local);
        for (int d = 0; d < b->nrep; d++) {
            int g = d * pp + p;
            int t = stream_task(b, g, topt, BUSY_OPT, SC_OP_OPTIMIZER, p, -1, -1);
            tinfo *ti = info_at(b, t);
            if (!ti)
                break;
            b->opt_task[g] = t;
            int waits = 0;
            for (int q = 0; q < tp; q++)
                if (b->dp_chain[p * tp + q] >= 0) {
                    sc_sim_add_dep(b->sim, b->dp_chain[p * tp + q], t);
                    waits = 1;
                }
            for (int k = 0; k < b->n_extra[g]; k++) {
                sc_sim_add_dep(b->sim, b->extra_deps[g * 8 + k], t);
                waits = 1;
            }
            if (waits) {
                ti->wait = WAIT_DP;
                ti->wait_s = b->dp_first[p * tp] >= 0 ? b->dp_first[p * tp]
                             : b->n_extra[g]          ? b->extra_start[g * 8]
                                                      : -1;
                ti->wait_e = b->dp_chain[p * tp] >= 0 ? b->dp_chain[p * tp] : b->extra_deps[g * 8];
            }
        }
        if ((cfg->zero == 1 || cfg->zero == 2) && dp > 1) {
            int ends[64], nends = 0, s0 = -1;
            double P = params * wb; /* whole gathered buffer per rank */
            for (int q = 0; q < tp; q++) {
                for (int d = 0; d < b->nrep; d++)
                    deps[d] = b->opt_task[d * pp + p];
                int st0;
                int e = dp_ring(b, p, q, (dp - 1.0) / dp * P, dp - 1.0, deps,
                                &b->dp_chain[p * tp + q], SC_OP_DP_ALLGATHER, p, -1, -1, P, &st0);
                if (nends < 64)
                    ends[nends++] = e;
                if (s0 < 0)
                    s0 = st0;
            }
            for (int d = 0; d < b->nrep; d++) {
                int t = stream_task(b, d * pp + p, 0, BUSY_NONE, SC_OP_DP_ALLGATHER, p, -1, -1);
                tinfo *ti = info_at(b, t);
                if (!ti)
                    break;
                for (int k = 0; k < nends; k++)
                    sc_sim_add_dep(b->sim, ends[k], t);
                ti->wait = WAIT_DP;
                ti->wait_s = s0;
                ti->wait_e = ends[nends - 1];
            }
        }
    }
    sc_free(members);
    sc_free(deps);
    sc_free(cur);
    sc_free(prev_first);
    sc_free(producer);
    if (!b->st)
        b->st = sc_sim_status(b->sim, b->err);
    return b->st;
}

/* ---- results ------------------------------------------------------------------ */

static double overlap(double a0, double a1, double b0, double b1)
{
    double lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

static void add_state(builder *b, sc_mem *mem, double params)
{
    double w, g, o;
    sc_cost_state_bytes(b->dt, &w, &g, &o);
    int dp = b->dp, z = b->cfg->zero;
    double W = params * w, G = params * g, O = params * o;
    if (z >= 1)
        O /= dp;
    if (z >= 2)
        G /= dp;
    if (z >= 3)
        W /= dp;
    mem->params += params;
    mem->weights += W;
    mem->grads += G;
    mem->optimizer += O;
    mem->total += W + G + O;
}

static sc_status results(builder *b, sc_step_result *r)
{
    const sc_step_cfg *cfg = b->cfg;
    sc_sim *sim = b->sim;
    double step = sc_sim_makespan(sim);
    int groups = b->nrep * b->pp;
    r->step_time_s = step;
    r->n_ranks = b->ranks;
    r->nodes_used = (b->ranks + b->gpn - 1) / b->gpn;
    r->pp = b->pp;
    r->events = sc_sim_event_count(sim);
    r->n_tasks = sc_sim_task_count(sim);
    r->busy_fraction = sc_calloc((size_t)b->ranks, sizeof *r->busy_fraction);
    r->mem = sc_calloc((size_t)b->pp, sizeof *r->mem);
    if (!r->busy_fraction || !r->mem)
        return fail_nomem(b);

    /* breakdown per group stream, walking its tasks in order */
    sc_step_breakdown *gb = sc_calloc((size_t)groups, sizeof *gb);
    double *last_end = sc_calloc((size_t)groups, sizeof *last_end);
    if (!gb || !last_end) {
        sc_free(gb);
        sc_free(last_end);
        return fail_nomem(b);
    }
    int ntask = sc_sim_task_count(sim);
    for (int t = 0; t < ntask && t < b->ninfo; t++) {
        const tinfo *ti = &b->info[t];
        if (ti->group < 0)
            continue;
        int g = ti->group;
        double s0 = sc_sim_task_start(sim, t), e0 = sc_sim_task_end(sim, t);
        double gap = s0 - last_end[g];
        if (gap > 0) {
            double exposed = 0;
            if (ti->wait != WAIT_NONE && ti->wait_s >= 0 && ti->wait_e >= 0)
                exposed = overlap(last_end[g], s0, sc_sim_task_start(sim, ti->wait_s),
                                  sc_sim_task_end(sim, ti->wait_e));
            if (ti->wait == WAIT_TP)
                gb[g].tp += exposed;
            else if (ti->wait == WAIT_PP)
                gb[g].pp += exposed;
            else if (ti->wait == WAIT_DP)
                gb[g].dp += exposed;
            gb[g].bubble += gap - exposed;
        }
        double dur = e0 - s0;
        if (ti->busy == BUSY_COMPUTE)
            gb[g].compute += dur;
        else if (ti->busy == BUSY_RECOMPUTE)
            gb[g].recompute += dur;
        else if (ti->busy == BUSY_OPT)
            gb[g].optimizer += dur;
        else if (ti->busy == BUSY_HOST)
            gb[g].pp += dur;
        if (e0 > last_end[g])
            last_end[g] = e0;
    }
    sc_step_breakdown avg = {0};
    for (int k = 0; k < b->ranks; k++) {
        int d, p, t;
        sc_step_coords(b->cfg, k, &d, &p, &t);
        int g = (b->nrep == b->dp ? d : 0) * b->pp + p;
        double busy = gb[g].compute + gb[g].recompute + gb[g].optimizer;
        r->busy_fraction[k] = step > 0 ? busy / step : 0;
    }
    for (int g = 0; g < groups; g++) {
        gb[g].bubble += step - last_end[g];
        avg.compute += gb[g].compute / groups;
        avg.recompute += gb[g].recompute / groups;
        avg.optimizer += gb[g].optimizer / groups;
        avg.tp += gb[g].tp / groups;
        avg.pp += gb[g].pp / groups;
        avg.dp += gb[g].dp / groups;
        avg.bubble += gb[g].bubble / groups;
    }
    r->breakdown = avg;
    r->bubble_fraction = step > 0 ? avg.bubble / step : 0;
    sc_free(gb);
    sc_free(last_end);

    /* links that carried bytes */
    int nl = sc_sim_link_count(sim), used = 0;
    for (int l = 0; l < nl; l++)
        used += sc_sim_link_bytes(sim, l) > 0;
    r->links = sc_calloc((size_t)(used ? used : 1), sizeof *r->links);
    if (!r->links)
        return fail_nomem(b);
    for (int l = 0; l < nl; l++) {
        double by = sc_sim_link_bytes(sim, l);
        if (by <= 0)
            continue;
        sc_step_link *k = &r->links[r->n_links++];
        snprintf(k->name, sizeof k->name, "%s", sc_sim_link_name(sim, l));
        k->bytes = by;
        k->busy_fraction = step > 0 ? sc_sim_link_busy(sim, l) / step : 0;
        k->utilisation = step > 0 ? by / (b->link_bw[l] * step) : 0;
    }

    /* memory per pipeline position, schedule-aware */
    int *peak = sc_calloc((size_t)b->pp, sizeof *peak);
    if (!peak)
        return fail_nomem(b);
    sc_status st = sc_sched_peak_inflight(b->sched, peak);
    r->fits = 1;
    for (int p = 0; p < b->pp && !st; p++) {
        /* the position's leaves, all chunks */
        int n = 0;
        for (int c = 0; c < b->v; c++) {
            int s = c * b->pp + p;
            n += b->part.first[s + 1] - b->part.first[s];
        }
        sc_module **mods = sc_malloc(sizeof *mods * (size_t)(n ? n : 1));
        if (!mods) {
            st = fail_nomem(b);
            break;
        }
        n = 0;
        for (int c = 0; c < b->v; c++) {
            int s = c * b->pp + p;
            for (int i = b->part.first[s]; i < b->part.first[s + 1]; i++)
                mods[n++] = b->m->leaves[i];
        }
        sc_mem_cfg mc = {b->dt, b->tp, b->dp, cfg->zero, cfg->mbs,
                         (peak[p] + b->v - 1) / b->v, cfg->recompute};
        st = sc_cost_memory(b->c, mods, n, &mc, &r->mem[p], b->err);
        /* copies of shared groups owned elsewhere (a tied head's embedding) */
        for (int i = 0; i < n && !st; i++) {
            const sc_module *x = mods[i];
            if (!x->shared)
                continue;
            int first_here = 1;
            for (int j = 0; j < i; j++)
                if (mods[j]->shared && !strcmp(mods[j]->shared, x->shared))
                    first_here = 0;
            if (!first_here)
                continue;
            double here = 0, all = 0;
            for (int j = 0; j < b->m->n_leaves; j++) {
                const sc_module *y = b->m->leaves[j];
                if (!y->shared || strcmp(y->shared, x->shared))
                    continue;
                double pp_ = y->params / (y->has_tp && y->tp_shardable ? b->tp : 1);
                all += pp_;
                int s = sc_partition_stage_of(&b->part, j);
                if (s % b->pp == p)
                    here += pp_;
            }
            if (all > here)
                add_state(b, &r->mem[p], all - here);
        }
        sc_free(mods);
        if (!st && r->mem[p].total > b->c->gpu.memory_bytes)
            r->fits = 0;
    }
    sc_free(peak);
    if (st)
        return st;

    /* throughput and cost */
    sc_totals tot = sc_model_totals(b->m);
    r->global_batch = (double)b->dp * cfg->m * cfg->mbs;
    r->samples_per_s = step > 0 ? r->global_batch / step : 0;
    r->tokens_per_s = r->samples_per_s * b->m->seq_len;
    r->model_flops = 3 * tot.flops_fwd * r->global_batch;
    double hw = r->model_flops + (cfg->recompute == SC_RECOMPUTE_FULL ? tot.flops_fwd * r->global_batch : 0);
    r->tflops_per_gpu = step > 0 ? hw / (step * b->ranks) / 1e12 : 0;
    r->mfu = step > 0 ? r->model_flops / (step * b->ranks * b->c->gpu.peak_flops[b->dt]) : 0;
    r->cost_per_step_usd = r->nodes_used * b->c->price.on_demand_per_hour * step / 3600;
    double mtok = r->global_batch * b->m->seq_len / 1e6;
    r->cost_per_mtok_usd = mtok > 0 ? r->cost_per_step_usd / mtok : 0;
    return SC_OK;
}

static sc_status make_timeline(builder *b, sc_step_result *r)
{
    sc_timeline *tl = sc_timeline_new(b->ranks, "sim", b->m->name, b->c->name);
    if (!tl)
        return fail_nomem(b);
    tl->step_time_s = r->step_time_s;
    for (int k = 0; k < b->ranks; k++) {
        int d, p, t;
        sc_step_coords(b->cfg, k, &d, &p, &t);
        tl->ranks[k].node = node_of(b, k);
        tl->ranks[k].device = k % b->gpn;
        tl->ranks[k].dp = d;
        tl->ranks[k].pp = p;
        tl->ranks[k].tp = t;
    }
    sc_sim *sim = b->sim;
    int ntask = sc_sim_task_count(sim);
    int *members = sc_malloc(sizeof(int) * (size_t)(b->tp + 1));
    if (!members) {
        sc_timeline_free(tl);
        return fail_nomem(b);
    }
    for (int task = 0; task < ntask && task < b->ninfo; task++) {
        const tinfo *ti = &b->info[task];
        sc_tl_op op = {ti->op, ti->stage, ti->chunk, ti->mb, SC_STREAM_COMPUTE, ti->bytes,
                       sc_sim_task_start(sim, task), sc_sim_task_end(sim, task)};
        if (ti->group >= 0) {
            if (ti->busy == BUSY_NONE || ti->busy == BUSY_HOST)
                continue; /* waits and send time are implied by the gaps */
            if (ti->is_piece) /* a later bucket piece of one backward: extend the op */
            {
                int d = ti->group / b->pp, p = ti->group % b->pp;
                tp_members(b, d, p, members);
                for (int t = 0; t < b->tp; t++) {
                    sc_tl_rank *rk = &tl->ranks[members[t]];
                    for (int q = rk->n_ops - 1; q >= 0; q--)
                        if (rk->ops[q].stream == SC_STREAM_COMPUTE) {
                            rk->ops[q].end = op.end;
                            break;
                        }
                }
                continue;
            }
            int d = ti->group / b->pp, p = ti->group % b->pp;
            tp_members(b, d, p, members);
            for (int t = 0; t < b->tp; t++)
                sc_timeline_add(tl, members[t], &op);
        } else if (ti->rank >= 0) {
            op.stream = SC_STREAM_COMM;
            sc_timeline_add(tl, ti->rank, &op);
        }
    }
    sc_free(members);
    if (tl->oom) {
        sc_timeline_free(tl);
        return fail_nomem(b);
    }
    r->timeline = tl;
    return SC_OK;
}

static void builder_free(builder *b);

sc_status sc_step_stage_infos(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                              sc_stage_info *info, sc_error *err)
{
    sc_status st = sc_step_check(m, c, cfg, err);
    if (st)
        return st;
    builder b = {.m = m, .c = c, .cfg = cfg, .err = err, .dp = cfg->dp, .tp = cfg->tp,
                 .pp = cfg->pp, .v = cfg->v, .S = cfg->pp * cfg->v, .nm = cfg->m,
                 .dt = m->dtype};
    if (cfg->partition) {
        b.part = *cfg->partition;
    } else {
        st = sc_partition_uniform(m, b.S, &b.part, err);
        if (st)
            return st;
        b.own_part = 1;
    }
    size_t S = (size_t)b.S;
    b.tf = sc_calloc(S, sizeof(double));
    b.tb = sc_calloc(S, sizeof(double));
    b.trc = sc_calloc(S, sizeof(double));
    b.tpb = sc_calloc(S, sizeof(double));
    b.bnd = sc_calloc(S, sizeof(double));
    b.grad = sc_calloc(S, sizeof(double));
    b.pbytes = sc_calloc(S, sizeof(double));
    b.tpn = sc_calloc(S, sizeof(int));
    if (!b.tf || !b.tb || !b.trc || !b.tpb || !b.bnd || !b.grad || !b.pbytes || !b.tpn)
        st = sc_err(err, SC_ENOMEM, "sim: out of memory");
    if (!st)
        st = stage_costs(&b);
    for (int s = 0; s < b.S && !st; s++) {
        info[s] = (sc_stage_info){b.tf[s], b.tb[s], b.trc[s], b.tpb[s], b.tpn[s],
                                  s + 1 < b.S ? b.bnd[s] : 0, b.grad[s], b.pbytes[s],
                                  sc_step_bucket_count(b.grad[s], cfg->bucket_bytes)};
    }
    builder_free(&b);
    return st;
}

void sc_step_result_free(sc_step_result *r)
{
    if (!r)
        return;
    sc_free(r->busy_fraction);
    sc_free(r->mem);
    sc_free(r->links);
    sc_timeline_free(r->timeline);
    sc_free(r);
}

static void builder_free(builder *b)
{
    sc_sim_free(b->sim);
    sc_sched_free(b->sched);
    if (b->own_part)
        sc_partition_free(&b->part);
    void *arrs[] = {b->tf, b->tb, b->trc, b->tpb, b->bnd, b->grad, b->pbytes, b->tpn,
                    b->port_out, b->port_in, b->nic_out, b->nic_in, b->stream, b->link_bw,
                    b->tp_chain, b->dp_chain, b->z3_chain, b->dp_first, b->grad_done, b->recv_task,
                    b->opt_task, b->extra_deps, b->extra_start, b->n_extra, b->info};
    for (size_t i = 0; i < SC_ARRAY_LEN(arrs); i++)
        sc_free(arrs[i]);
    if (b->rng)
        gsl_rng_free(b->rng);
}

sc_status sc_step_simulate(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                           sc_step_result **out, sc_error *err)
{
    *out = NULL;
    sc_status st = sc_step_check(m, c, cfg, err);
    if (st)
        return st;
    builder b = {.m = m, .c = c, .cfg = cfg, .err = err};
    b.dp = cfg->dp;
    b.tp = cfg->tp;
    b.pp = cfg->pp;
    b.v = cfg->v;
    b.S = cfg->pp * cfg->v;
    b.nm = cfg->m;
    b.ranks = b.dp * b.tp * b.pp;
    /* one replica stands for all only when dp is the outermost placement */
    b.nrep = cfg->one_replica && placement_dp_outermost(cfg->placement) ? 1 : b.dp;
    b.gpn = c->gpus_per_node;
    b.nodes = (b.ranks + b.gpn - 1) / b.gpn;
    b.dt = m->dtype;
    st = sc_sched_generate(cfg->schedule, b.pp, cfg->m, b.v, &b.sched, err);
    if (st)
        return st;
    if (b.v > 64) {
        sc_sched_free(b.sched);
        return sc_err(err, SC_EINVAL, "sim: at most 64 chunks per rank (v=%d)", b.v);
    }
    if (cfg->partition) {
        b.part = *cfg->partition;
    } else {
        st = sc_partition_uniform(m, b.S, &b.part, err);
        if (st) {
            sc_sched_free(b.sched);
            return st;
        }
        b.own_part = 1;
    }
    size_t S = (size_t)b.S, groups = (size_t)b.dp * b.pp;
    b.tf = sc_calloc(S, sizeof(double));
    b.tb = sc_calloc(S, sizeof(double));
    b.trc = sc_calloc(S, sizeof(double));
    b.tpb = sc_calloc(S, sizeof(double));
    b.bnd = sc_calloc(S, sizeof(double));
    b.grad = sc_calloc(S, sizeof(double));
    b.pbytes = sc_calloc(S, sizeof(double));
    b.tpn = sc_calloc(S, sizeof(int));
    b.port_out = sc_malloc(sizeof(int) * (size_t)b.ranks);
    b.port_in = sc_malloc(sizeof(int) * (size_t)b.ranks);
    b.nic_out = sc_malloc(sizeof(int) * (size_t)b.nodes);
    b.nic_in = sc_malloc(sizeof(int) * (size_t)b.nodes);
    b.link_bw = sc_malloc(sizeof(double) * (size_t)(2 * b.ranks + 2 * b.nodes));
    b.stream = sc_malloc(sizeof(int) * groups);
    b.tp_chain = sc_malloc(sizeof(int) * groups);
    b.dp_chain = sc_malloc(sizeof(int) * (size_t)b.pp * b.tp);
    b.z3_chain = sc_malloc(sizeof(int) * (size_t)b.pp * b.tp);
    b.dp_first = sc_malloc(sizeof(int) * (size_t)b.pp * b.tp);
    b.grad_done = sc_malloc(sizeof(int) * groups * (size_t)b.v);
    b.recv_task = sc_malloc(sizeof(int) * (size_t)b.dp * 2 * (size_t)cfg->m * S);
    b.opt_task = sc_malloc(sizeof(int) * groups);
    b.extra_deps = sc_malloc(sizeof(int) * groups * 8);
    b.extra_start = sc_malloc(sizeof(int) * groups * 8);
    b.n_extra = sc_calloc(groups, sizeof(int));
    if (!b.tf || !b.tb || !b.trc || !b.tpb || !b.bnd || !b.grad || !b.pbytes || !b.tpn ||
        !b.port_out || !b.port_in || !b.nic_out || !b.nic_in || !b.link_bw || !b.stream ||
        !b.tp_chain || !b.dp_chain || !b.z3_chain || !b.dp_first || !b.grad_done || !b.recv_task ||
        !b.opt_task || !b.extra_deps || !b.extra_start || !b.n_extra) {
        builder_free(&b);
        return sc_err(err, SC_ENOMEM, "sim: out of memory");
    }
    for (size_t i = 0; i < groups; i++)
        b.tp_chain[i] = b.opt_task[i] = -1;
    for (int i = 0; i < b.pp * b.tp; i++)
        b.dp_chain[i] = b.z3_chain[i] = b.dp_first[i] = -1;
    for (size_t i = 0; i < groups * (size_t)b.v; i++)
        b.grad_done[i] = -1;
    for (size_t i = 0; i < (size_t)b.dp * 2 * (size_t)cfg->m * S; i++)
        b.recv_task[i] = -1;
    if (cfg->jitter > 0) {
        b.rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (!b.rng) {
            builder_free(&b);
            return sc_err(err, SC_ENOMEM, "sim: out of memory");
        }
        gsl_rng_set(b.rng, cfg->seed);
    }
    st = stage_costs(&b);
    if (!st)
        st = sc_sim_new(&b.sim, err);
    if (st) {
        builder_free(&b);
        return st;
    }
    /* links and streams */
    double bw_intra = c->intra.bytes_per_s * c->eff.bw_eff[SC_LINK_INTRA];
    double bw_inter = c->inter.nics_per_node * c->inter.nic_bytes_per_s * c->eff.bw_eff[SC_LINK_INTER];
    char name[48];
    for (int r = 0; r < b.ranks; r++) {
        snprintf(name, sizeof name, "gpu%d.out", r);
        b.port_out[r] = sc_sim_add_link(b.sim, name, bw_intra, c->eff.alpha_s[SC_LINK_INTRA]);
        snprintf(name, sizeof name, "gpu%d.in", r);
        b.port_in[r] = sc_sim_add_link(b.sim, name, bw_intra, 0);
        b.link_bw[b.port_out[r] >= 0 ? b.port_out[r] : 0] = bw_intra;
        b.link_bw[b.port_in[r] >= 0 ? b.port_in[r] : 0] = bw_intra;
    }
    for (int n = 0; n < b.nodes; n++) {
        double bw = bw_inter > 0 ? bw_inter : bw_intra; /* one node without a network */
        snprintf(name, sizeof name, "node%d.nic.out", n);
        b.nic_out[n] = sc_sim_add_link(b.sim, name, bw, c->eff.alpha_s[SC_LINK_INTER]);
        snprintf(name, sizeof name, "node%d.nic.in", n);
        b.nic_in[n] = sc_sim_add_link(b.sim, name, bw, 0);
        b.link_bw[b.nic_out[n] >= 0 ? b.nic_out[n] : 0] = bw;
        b.link_bw[b.nic_in[n] >= 0 ? b.nic_in[n] : 0] = bw;
    }
    for (size_t g = 0; g < groups; g++) {
        snprintf(name, sizeof name, "dp%zu.pp%zu", g / b.pp, g % b.pp);
        b.stream[g] = sc_sim_add_resource(b.sim, name);
    }
    st = sc_sim_status(b.sim, err);
    if (!st)
        st = build(&b);
    if (!st)
        st = sc_sim_run(b.sim, err);
    sc_step_result *r = NULL;
    if (!st) {
        r = sc_calloc(1, sizeof *r);
        if (!r)
            st = sc_err(err, SC_ENOMEM, "sim: out of memory");
    }
    if (!st)
        st = results(&b, r);
    if (!st && cfg->want_timeline)
        st = make_timeline(&b, r);
    builder_free(&b);
    if (st) {
        sc_step_result_free(r);
        return st;
    }
    *out = r;
    return SC_OK;
}

cJSON *sc_step_result_json(const sc_step_result *r, const sc_step_cfg *cfg)
{
    sc_json_init();
    int oom = 0;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    cJSON *c = sc_jadd_obj(j, "config", &oom);
    sc_jadd_num(c, "dp", cfg->dp, &oom);
    sc_jadd_num(c, "tp", cfg->tp, &oom);
    sc_jadd_num(c, "pp", cfg->pp, &oom);
    sc_jadd_num(c, "v", cfg->v, &oom);
    sc_jadd_num(c, "microbatches", cfg->m, &oom);
    sc_jadd_num(c, "mbs", cfg->mbs, &oom);
    sc_jadd_str(c, "schedule", cfg->schedule, &oom);
    sc_jadd_num(c, "zero", cfg->zero, &oom);
    sc_jadd_str(c, "recompute", sc_recompute_name(cfg->recompute), &oom);
    sc_jadd_str(c, "placement", cfg->placement ? cfg->placement : "tp,pp,dp", &oom);
    sc_jadd_num(j, "step_time_s", r->step_time_s, &oom);
    cJSON *bd = sc_jadd_obj(j, "breakdown", &oom);
    sc_jadd_num(bd, "compute_s", r->breakdown.compute, &oom);
    sc_jadd_num(bd, "recompute_s", r->breakdown.recompute, &oom);
    sc_jadd_num(bd, "optimizer_s", r->breakdown.optimizer, &oom);
    sc_jadd_num(bd, "tp_comm_s", r->breakdown.tp, &oom);
    sc_jadd_num(bd, "pp_comm_s", r->breakdown.pp, &oom);
    sc_jadd_num(bd, "dp_comm_s", r->breakdown.dp, &oom);
    sc_jadd_num(bd, "bubble_s", r->breakdown.bubble, &oom);
    sc_jadd_num(j, "bubble_fraction", r->bubble_fraction, &oom);
    sc_jadd_num(j, "global_batch", r->global_batch, &oom);
    sc_jadd_num(j, "samples_per_s", r->samples_per_s, &oom);
    sc_jadd_num(j, "tokens_per_s", r->tokens_per_s, &oom);
    sc_jadd_num(j, "model_flops_per_step", r->model_flops, &oom);
    sc_jadd_num(j, "tflops_per_gpu", r->tflops_per_gpu, &oom);
    sc_jadd_num(j, "mfu", r->mfu, &oom);
    sc_jadd_num(j, "cost_per_step_usd", r->cost_per_step_usd, &oom);
    sc_jadd_num(j, "cost_per_million_tokens_usd", r->cost_per_mtok_usd, &oom);
    sc_jadd_num(j, "ranks", r->n_ranks, &oom);
    sc_jadd_num(j, "nodes_used", r->nodes_used, &oom);
    sc_jadd_bool(j, "fits", r->fits, &oom);
    cJSON *pm = sc_jadd_arr(j, "peak_mem_bytes", &oom);
    cJSON *md = sc_jadd_arr(j, "memory", &oom);
    for (int p = 0; p < r->pp && !oom; p++) {
        sc_jpush_num(pm, r->mem[p].total, &oom);
        cJSON *o = sc_jpush_obj(md, &oom);
        if (!o)
            break;
        sc_jadd_num(o, "stage", p, &oom);
        sc_jadd_num(o, "weights", r->mem[p].weights, &oom);
        sc_jadd_num(o, "grads", r->mem[p].grads, &oom);
        sc_jadd_num(o, "optimizer", r->mem[p].optimizer, &oom);
        sc_jadd_num(o, "activations", r->mem[p].activations, &oom);
        sc_jadd_num(o, "workspace", r->mem[p].workspace, &oom);
        sc_jadd_num(o, "total", r->mem[p].total, &oom);
    }
    cJSON *bf = sc_jadd_arr(j, "busy_fraction", &oom);
    for (int k = 0; k < r->n_ranks && !oom; k++)
        sc_jpush_num(bf, r->busy_fraction[k], &oom);
    cJSON *ls = sc_jadd_arr(j, "links", &oom);
    for (int k = 0; k < r->n_links && !oom; k++) {
        cJSON *o = sc_jpush_obj(ls, &oom);
        if (!o)
            break;
        sc_jadd_str(o, "name", r->links[k].name, &oom);
        sc_jadd_num(o, "bytes", r->links[k].bytes, &oom);
        sc_jadd_num(o, "busy_fraction", r->links[k].busy_fraction, &oom);
        sc_jadd_num(o, "utilisation", r->links[k].utilisation, &oom);
    }
    sc_jadd_num(j, "events", (double)r->events, &oom);
    if (oom) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

double sc_step_interval(const sc_step_result *r, const sc_cluster *c, sc_dtype dt)
{
    const sc_cluster_fits *f = &c->eff.fits;
    if (!f->present || r->step_time_s <= 0)
        return 0;
    const sc_step_breakdown *k = &r->breakdown;
    double busy = (k->compute + k->recompute + k->optimizer) / r->step_time_s;
    double comm = (k->tp + k->pp + k->dp) / r->step_time_s;
    double sdc = f->compute[dt].n > 0 ? f->compute[dt].rel_sd : 0, sdl = 0;
    for (int l = 0; l < SC_LINK_N; l++)
        if (f->link[l].n > 0 && f->link[l].rel_sd > sdl)
            sdl = f->link[l].rel_sd;
    return 1.96 * r->step_time_s * sqrt(busy * busy * sdc * sdc + comm * comm * sdl * sdl);
}
