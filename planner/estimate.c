/* estimate.c - the planner's analytical step-time and memory model (see
 * search.h for the formulas). Everything per candidate is arithmetic over
 * a table built once per partition. */
#include "planner_int.h"
#include "cost.h"
#include "lower.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void sc_stage_table_free(sc_stage_table *t)
{
    if (!t)
        return;
    sc_partition_free(&t->part);
    double *a[] = {t->f,      t->b,    t->w,         t->rc_sel, t->rc_full, t->tp_s, t->tp_ov, t->send_s,
                   t->grad,   t->params, t->unit, t->gathered, t->act1, t->act_slope,
                   t->ramp};
    for (size_t i = 0; i < SC_ARRAY_LEN(a); i++)
        sc_free(a[i]);
    sc_free(t->dpt);
    sc_free(t->fsdp);
    memset(t, 0, sizeof *t);
}

static int node_of_position(int r, int tp, int gpn) { return r * tp / gpn; }

/* A ring of n ranks (a data- or tensor-parallel group), per_node of them on a node. Across
 * nodes, each (pp, tp) coordinate of a node runs its own ring at once, and
 * a ring leaves a node once however many of its members sit there, so the
 * gpus_per_node / per_node rings of a node share its NICs evenly: the
 * simulator shows this contention and the estimate must too. */
/* The intra and inter size ramps of one collective of msg bytes (cost.h). */
static void ramps_of(const sc_cluster *c, double msg, double r[2])
{
    r[0] = sc_cost_coll_ramp(c, SC_LINK_INTRA, msg);
    r[1] = sc_cost_coll_ramp(c, SC_LINK_INTER, msg);
}

/* r: the intra and inter size ramps of one collective of the lot (tp: one allreduce of
 * the pass; dp: one bucket; ramps_of), each hop class at its own, the ring bound by
 * its slowest hop, its latency NCCL's (sc_ring_latency). An allreduce across nodes
 * runs as NCCL's tree where "auto" picks it for one collective of msg bytes
 * (sc_coll_tree_wins, as the simulator), its NICs shared as the ring's. *lat (may be
 * NULL): the latency of one collective. A warm collective's time is divided by the
 * measured size factor of its group's class at msg (sc_size_curve), as the
 * simulator's. */
static double coll_time(const sc_cluster *c, sc_coll op, double bytes, double msg,
                        const double r[2], int n, int per_node, int cold, double *lat)
{
    if (lat)
        *lat = 0;
    if (n <= 1 || bytes <= 0)
        return 0;
    double ai = c->eff.alpha_s[SC_LINK_INTRA], ae = c->eff.alpha_s[SC_LINK_INTER];
    double wi = c->eff.bw_eff[SC_LINK_INTRA], we = c->eff.bw_eff[SC_LINK_INTER];
    if (cold) { /* data-parallel collectives run on cold buffers (sc_cluster_cold) */
        sc_cluster_cold(c, SC_LINK_INTRA, &ai, &wi);
        sc_cluster_cold(c, SC_LINK_INTER, &ae, &we);
    }
    /* each op at its own share of each link, as the simulator's */
    wi *= sc_cost_coll_share(c, SC_LINK_INTRA, op);
    we *= sc_cost_coll_share(c, SC_LINK_INTER, op);
    double bi = c->intra.bytes_per_s * wi * r[0], beta = bi, a, t;
    int k = per_node >= n ? 1 : (n + per_node - 1) / per_node; /* nodes */
    double be = k == 1 ? 0
                       : c->inter.nics_per_node * c->inter.nic_bytes_per_s * we * per_node /
                             c->gpus_per_node * r[1];
    /* (sc_coll_tree_wins says no where the cluster has no network: be > 0 there) */
    if (k > 1 && op == SC_COLL_ALLREDUCE && sc_coll_tree_wins(c, msg, n, per_node, r)) {
        a = sc_tree_latency(per_node, k, ai, ae);
        t = sc_tree_allreduce_time(bytes, per_node, k, ai, bi, ae, be);
    } else {
        if (k > 1)
            beta = be < bi ? be : bi; /* the slower ramped hop */
        if (!(beta > 0))
            return INFINITY;
        a = sc_ring_latency(op, n, k, ai, ae);
        /* allreduce; reduce-scatter, allgather */
        t = (op == SC_COLL_ALLREDUCE ? 2.0 : 1.0) * (n - 1) / n * bytes / beta + a;
    }
    double g = cold ? 1 : sc_cluster_coll_factor(c, k, msg);
    if (lat)
        *lat = a / g;
    return t / g;
}

/* A position's data-parallel terms (sc_stage_table.dpt): its gradients' reduction as an
 * allreduce (ZeRO 0) and as a reduce-scatter (ZeRO 1-3), each with every bucket's
 * latency, its bucket count, ZeRO 1-2's parameter gather, ZeRO 3's gathers (a chunk's
 * own parameters, the first unit) and reduce-scatter, and the optimizer over its whole
 * and its sharded parameters. */
enum {
    SC_DPT_AR,       /* the allreduce of every chunk's buckets, each with its latency (s) */
    SC_DPT_RS,       /* the same as reduce-scatters (s) */
    SC_DPT_K,        /* buckets of the position's first chunk */
    SC_DPT_AG12,     /* ZeRO 1-2: the gather of the updated parameters (s) */
    SC_DPT_Z3_AG,    /* ZeRO 3: one chunk's gather (s) */
    SC_DPT_Z3_AG1,   /* ZeRO 3: the step's first unit's gather (s) */
    SC_DPT_Z3_RS,    /* ZeRO 2, 3: one chunk's reduce-scatter a microbatch (s) */
    SC_DPT_OPT,      /* the optimizer over every parameter of the position (s) */
    SC_DPT_OPT_SHARD, /* over its 1/dp shard (ZeRO >= 1) (s) */
    SC_DPT_N
};

struct sc_dp_terms {
    int valid, dp;
    const sc_cluster *c;
    double bucket;
    sc_dtype dt;
    double tie;  /* the shared group's allreduce among the positions holding it (s) */
    double x[];  /* pp x SC_DPT_N */
};

sc_status sc_stage_table_build(const sc_model *m, const sc_cluster *c, int pp, int v, int tp,
                               int sp, int tp_overlap, sc_attn attn, int mbs, int cp,
                               int grad_fp32, int fp8, const sc_partition *part,
                               sc_stage_table *out,
                               sc_error *err)
{
    cp = cp > 1 ? cp : 1;
    sc_stage_table t = {.S = pp * v, .pp = pp, .v = v, .tp = tp, .mbs = mbs, .sp = sp,
                        .attn = attn, .cp = cp,
                        .grad_fp32 = grad_fp32};
    size_t S = (size_t)t.S, P = (size_t)pp;
    t.part.n_stages = part->n_stages;
    t.part.first = sc_malloc(sizeof(int) * (S + 1));
    t.f = sc_calloc(S, sizeof(double));
    t.b = sc_calloc(S, sizeof(double));
    t.w = sc_calloc(S, sizeof(double));
    t.fsdp = sc_calloc(S, sizeof *t.fsdp);
    t.rc_sel = sc_calloc(S, sizeof(double));
    t.rc_full = sc_calloc(S, sizeof(double));
    t.tp_s = sc_calloc(S, sizeof(double));
    t.tp_ov = sc_calloc(2 * (size_t)S, sizeof(double));
    t.send_s = sc_calloc(S, sizeof(double));
    t.grad = sc_calloc(S, sizeof(double));
    t.params = sc_calloc(P, sizeof(double));
    t.unit = sc_calloc(P, sizeof(double));
    t.gathered = sc_calloc(P, sizeof(double));
    t.act1 = sc_calloc(P * 3, sizeof(double));
    t.act_slope = sc_calloc(P * 3, sizeof(double));
    t.ramp = sc_calloc(P * SC_RAMP_N * 2, sizeof(double));
    t.dpt = sc_calloc(1, sizeof *t.dpt + P * SC_DPT_N * sizeof(double));
    if (!t.part.first || !t.f || !t.b || !t.w || !t.fsdp || !t.rc_sel || !t.rc_full || !t.tp_s || !t.tp_ov || !t.send_s || !t.grad ||
        !t.params || !t.unit || !t.gathered || !t.act1 || !t.act_slope || !t.ramp || !t.dpt) {
        sc_stage_table_free(&t);
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    }
    memcpy(t.part.first, part->first, sizeof(int) * (S + 1));
    /* the simulator's own per-stage figures, with and without selective
     * recompute */
    sc_stage_info *info = sc_malloc(sizeof *info * S);
    if (!info) {
        sc_stage_table_free(&t);
        return sc_err(err, SC_ENOMEM, "plan: out of memory");
    }
    sc_stage_cfg scfg = {.dtype = m->dtype,
                         .tp = tp,
                         .mbs = mbs,
                         .recompute = SC_RECOMPUTE_SELECTIVE,
                         .sp = sp,
                         .attn = attn,
                         .tp_overlap = tp_overlap,
                         .cp = cp, /* a cp rank's share of the tokens */
                         .grad_reduce_fp32 = grad_fp32,
                         .fp8 = fp8};
    sc_status st = sc_cost_stage(c, m, &t.part, &scfg, info, err);
    int gpn = c->gpus_per_node;
    double host_prev = 0; /* the host time of the message into stage s from s + 1's B */
    for (int s = 0; s < t.S && !st; s++) {
        t.f[s] = info[s].fwd_s;
        t.b[s] = info[s].bwd_s + host_prev; /* B of s > 0 sends its gradient back */
        t.w[s] = info[s].bwd_w_s;
        t.fsdp[s] = info[s].fsdp;
        host_prev = 0;
        t.rc_sel[s] = info[s].recompute_s;
        t.rc_full[s] = info[s].recompute_full_s;
        t.grad[s] = info[s].grad_bytes;
        if (s < pp)
            t.unit[s] = info[s].unit_bytes; /* chunk 0's: the position's first op */
        if (tp > 1 && info[s].tp_count > 0) {
            int per_node = tp < gpn ? tp : gpn;
            double r[2];
            double msg = info[s].tp_bytes / info[s].tp_count, lat;
            ramps_of(c, msg, r);
            /* allreduces; under sequence parallelism each a reduce-scatter and an
             * all-gather of the same bytes, at their own share of the link
             * (sc_cluster_ag_rs_eff), as the simulator runs them */
            sc_coll op = sp ? SC_COLL_REDUCE_SCATTER : SC_COLL_ALLREDUCE;
            double halves = sp ? 2 : 1;
            double one = coll_time(c, op, info[s].tp_bytes, msg, r, tp, per_node, 0, &lat);
            /* the latency once per collective of the pass */
            t.tp_s[s] = halves * (one + (info[s].tp_count - 1) * lat);
            /* under tp comm overlap: (tp - 1) / tp of the bytes beside the op,
             * the last chunk after it; each at its own message size, each
             * paying every collective's latency */
            for (int k = 0; k < 2; k++) {
                double share = k ? 1.0 / tp : (tp - 1.0) / tp;
                ramps_of(c, msg * share, r);
                t.tp_ov[2 * s + k] =
                    halves * (coll_time(c, op, info[s].tp_bytes * share, msg * share, r, tp,
                                        per_node, 0, &lat) +
                              (info[s].tp_count - 1) * lat);
            }
        }
        if (!st && s + 1 < t.S && info[s].send_bytes > 0) {
            int r = s % pp, r2 = (s + 1) % pp;
            int inter = node_of_position(r, tp * cp, gpn) != node_of_position(r2, tp * cp, gpn);
            st = sc_cost_p2p(c, info[s].send_bytes, inter, inter ? (tp < gpn ? tp : gpn) : 1,
                             &t.send_s[s], err);
            /* the sender's host time per message (CPU devices): s's F sends
             * forward, s + 1's B sends the same size back */
            double h = c->eff.p2p_host_s_per_byte[inter ? SC_LINK_INTER : SC_LINK_INTRA] *
                       info[s].send_bytes;
            t.f[s] += h;
            host_prev = h;
        }
    }
    sc_free(info);
    /* per position: parameters and activation coefficients */
    sc_module **mods = st ? NULL : sc_malloc(sizeof *mods * (size_t)(m->n_leaves + 1));
    if (!st && !mods)
        st = sc_err(err, SC_ENOMEM, "plan: out of memory");
    for (int r = 0; r < pp && !st; r++) {
        int n = 0;
        for (int ch = 0; ch < v; ch++) {
            int s = ch * pp + r;
            for (int i = t.part.first[s]; i < t.part.first[s + 1]; i++)
                mods[n++] = m->leaves[i];
        }
        for (int mode = 0; mode < 3 && !st; mode++) {
            sc_mem a1, a2;
            sc_mem_cfg mc = {m->dtype, tp,   1,  0,  mbs, 1, (sc_recompute)mode,
                             sp,       attn, cp, m->has_layers, 0};
            st = sc_cost_memory(c, mods, n, &mc, &a1, err);
            mc.inflight = 2;
            if (!st)
                st = sc_cost_memory(c, mods, n, &mc, &a2, err);
            if (!st) {
                t.act1[r * 3 + mode] = a1.activations;
                t.act_slope[r * 3 + mode] = a2.activations - a1.activations;
                t.params[r] = a1.params;
                t.gathered[r] = a1.gathered;
            }
        }
    }
    /* shared groups split over positions: each holder keeps a copy */
    for (int g = 0; g < m->n_groups && !st; g++) {
        const sc_model_group *G = &m->groups[g];
        double all = 0, *here = sc_calloc(P, sizeof(double));
        int *holds = sc_calloc(P, sizeof(int));
        if (!here || !holds) {
            sc_free(here);
            sc_free(holds);
            st = sc_err(err, SC_ENOMEM, "plan: out of memory");
            break;
        }
        for (int k = 0; k < G->n; k++) {
            int j = G->leaves[k];
            const sc_module *y = m->leaves[j];
            double p = y->params / (y->has_tp && y->tp_shardable ? tp : 1);
            int r = sc_partition_stage_of(&t.part, j) % pp;
            all += p;
            here[r] += p;
            holds[r] = 1;
        }
        int npos = 0;
        for (int r = 0; r < pp; r++)
            if (holds[r]) {
                npos++;
                t.params[r] += all - here[r];
            }
        double gw = sc_cost_grad_reduce_bytes(m->dtype, grad_fp32);
        if (npos > 1 && all * gw > t.shared_grad) {
            t.shared_grad = all * gw;
            t.shared_npos = npos;
        }
        sc_free(here);
        sc_free(holds);
    }
    sc_free(mods);
    /* the size ramps at the estimate's collective sizes (planner_int.h) */
    double wb, gb, ob;
    sc_cost_state_bytes(m->dtype, &wb, &gb, &ob);
    for (int r = 0; r < pp && !st; r++) {
        double grads = 0, *x = t.ramp + (size_t)r * SC_RAMP_N * 2;
        for (int ch = 0; ch < v; ch++)
            grads += t.grad[ch * pp + r];
        int K = sc_cost_bucket_count(t.grad[r], SC_DEFAULT_BUCKET_BYTES);
        ramps_of(c, t.grad[r] / K, x + 2 * SC_RAMP_BUCKET);
        ramps_of(c, t.params[r] * wb, x + 2 * SC_RAMP_PARAMS);
        ramps_of(c, grads / v, x + 2 * SC_RAMP_GRADS_V);
        ramps_of(c, t.unit[r], x + 2 * SC_RAMP_UNIT);
    }
    ramps_of(c, t.shared_grad, t.ramp_shared);
    if (st) {
        sc_stage_table_free(&t);
        return st;
    }
    *out = t;
    return SC_OK;
}

/* Members of a data-parallel communicator (a position's tp rank) on one node, under
 * the default placement: dp of them (dp·cp with context parallelism, whose cp peers
 * sit next to tp: rank ((d·pp + p)·cp + c)·tp + t). */
static int dp_per_node(int tp, int pp, int cp, int dp, int gpn)
{
    if (cp <= 1) {
        int stride = tp * pp, n = stride >= gpn ? 1 : gpn / stride;
        return n > dp ? dp : n;
    }
    int n = 0;
    for (long d = 0; d * cp < dp && d * pp * cp * tp < gpn; d++)
        for (long c = 0; c < cp && (d * pp * cp + c) * tp < gpn; c++)
            n++;
    return n > 0 ? n : 1;
}

/* The table's data-parallel terms for (c, dp, bucket size, dt), computed once for each
 * new key: a search estimates every microbatch count, schedule, ZeRO stage and recompute
 * of a table at one dp, and these collectives were half of each estimate's time. */
static const struct sc_dp_terms *dp_terms(const sc_stage_table *t, const sc_cluster *c,
                                          int dp, double bucket, sc_dtype dt)
{
    struct sc_dp_terms *d = t->dpt;
    if (d->valid && d->c == c && d->dp == dp && d->bucket == bucket && d->dt == dt)
        return d;
    int pp = t->pp, v = t->v, tp = t->tp, gpn = c->gpus_per_node;
    int per_node = dp_per_node(tp, pp, t->cp, dp, gpn);
    double wb, gb, ob;
    sc_cost_state_bytes(dt, &wb, &gb, &ob);
    double gw = sc_cost_grad_reduce_bytes(dt, t->grad_fp32); /* t->grad's bytes a parameter */
    for (int r = 0; r < pp; r++) {
        double *y = d->x + (size_t)r * SC_DPT_N, grads = 0;
        for (int ch = 0; ch < v; ch++)
            grads += t->grad[ch * pp + r];
        double P = t->params[r];
        int K = sc_cost_bucket_count(t->grad[r], bucket);
        const double *x = t->ramp + (size_t)r * SC_RAMP_N * 2;
        double rb[2];
        if (bucket > 0 && bucket != SC_DEFAULT_BUCKET_BYTES)
            ramps_of(c, t->grad[r] / K, rb); /* not the cached bucket size */
        else
            rb[0] = x[2 * SC_RAMP_BUCKET], rb[1] = x[2 * SC_RAMP_BUCKET + 1];
        /* every bucket of every chunk is a collective of its own, with its own
         * latency, as the simulator runs them */
        int buckets = 0;
        for (int ch = 0; ch < v; ch++)
            buckets += sc_cost_bucket_count(t->grad[ch * pp + r], bucket);
        double lat;
        y[SC_DPT_AR] = coll_time(c, SC_COLL_ALLREDUCE, grads, t->grad[r] / K, rb, dp, per_node,
                                 1, &lat);
        y[SC_DPT_AR] += (buckets - 1) * lat;
        y[SC_DPT_RS] = coll_time(c, SC_COLL_REDUCE_SCATTER, grads, t->grad[r] / K, rb, dp,
                                 per_node, 1, &lat);
        y[SC_DPT_RS] += (buckets - 1) * lat;
        y[SC_DPT_K] = K;
        y[SC_DPT_AG12] = coll_time(c, SC_COLL_ALLGATHER, P * wb, P * wb,
                                   x + 2 * SC_RAMP_PARAMS, dp, per_node, 1, NULL);
        /* ZeRO 3 gathers the stage's own parameters: a tied copy held for another
         * position is not gathered (its gradient is allreduced) */
        double Pv = grads / gw * wb / v, U = t->unit[r];
        y[SC_DPT_Z3_AG] = coll_time(c, SC_COLL_ALLGATHER, Pv, Pv, x + 2 * SC_RAMP_GRADS_V, dp,
                                    per_node, 1, NULL);
        y[SC_DPT_Z3_AG1] = U > 0 && U < Pv ? coll_time(c, SC_COLL_ALLGATHER, U, U,
                                                        x + 2 * SC_RAMP_UNIT, dp, per_node, 1,
                                                        NULL)
                                           : y[SC_DPT_Z3_AG];
        /* a chunk's reduce-scatter a microbatch: its buckets, each with its
         * latency, as every backward reduces them under ZeRO 3 (lower.h) */
        y[SC_DPT_Z3_RS] = y[SC_DPT_RS] / v;
        y[SC_DPT_OPT] = sc_cost_optimizer_time(c, dt, P);
        y[SC_DPT_OPT_SHARD] = sc_cost_optimizer_time(c, dt, P / dp);
    }
    /* the tie's allreduce among the positions holding it: on one node when a
     * whole replica is (the default placement puts a replica's tp x pp ranks
     * next to each other), else a position a node */
    d->tie = t->shared_npos > 1 ? coll_time(c, SC_COLL_ALLREDUCE, t->shared_grad,
                                            t->shared_grad, t->ramp_shared, t->shared_npos,
                                            tp * t->cp * pp <= gpn ? t->shared_npos : 1, 1,
                                            NULL)
                                : 0;
    d->valid = 1, d->dp = dp, d->c = c, d->bucket = bucket, d->dt = dt;
    return d;
}

/* The schedules the estimate tells apart, read from the name once per estimate. */
typedef enum { SCHED_1F1B, SCHED_GPIPE, SCHED_ZBH1, SCHED_INTERLEAVED } sched_kind;

static sched_kind sched_of(const char *schedule)
{
    return !strcmp(schedule, "gpipe")         ? SCHED_GPIPE
           : !strcmp(schedule, "zb-h1")       ? SCHED_ZBH1
           : !strcmp(schedule, "interleaved") ? SCHED_INTERLEAVED
                                              : SCHED_1F1B;
}

static int inflight(sched_kind k, int pp, int m, int v, int r)
{
    if (k == SCHED_GPIPE)
        return m * v;
    if (k == SCHED_ZBH1)
        return pp < m ? pp : m;
    if (k == SCHED_INTERLEAVED && v > 1) {
        if (m == pp)
            return m * v;
        int n = 2 * (pp - r - 1) + (v - 1) * pp + 1;
        return n < m * v ? n : m * v;
    }
    return pp - r < m ? pp - r : m; /* 1f1b */
}

int sc_inflight(const char *schedule, int pp, int m, int v, int r)
{
    return inflight(sched_of(schedule), pp, m, v, r);
}

/* fmax and fmin as the estimate's loops need them, inlined (the library's are calls
 * through the PLT here, a sixth of an estimate's time once the collectives were kept);
 * NaN handled as fmax and fmin do: the other argument wins. */
static inline double max2(double a, double b) { return a >= b || b != b ? a : b; }
static inline double min2(double a, double b) { return a <= b || b != b ? a : b; }

/* An op of T seconds and its tp collectives under tp communication overlap
 * (sc_step_cfg tp_comm_overlap, lower.h): ov[0] seconds of them (the chunks,
 * (tp - 1) / tp of the bytes) move beside the op, which runs at 1 / (1 +
 * kappa) of its rate while they do; the stream waits for the longer of the
 * two, then for the last chunk, ov[1] seconds. Returns the stream's time;
 * *lost gets the op's slowdown, *exposed the communication time the stream
 * waits for. */
static inline double tp_overlapped(double T, const double *ov, double kappa, double *lost,
                                   double *exposed)
{
    double beside = ov[0], slow = min2(beside, T * (1 + kappa)) * kappa / (1 + kappa);
    double op = T + slow;
    *lost = slow;
    *exposed = max2(0, beside - op) + ov[1];
    return op + *exposed;
}

/* Stage s's recompute before its backward under recompute mode (with full
 * recompute its tp collectives again). */
static inline double recompute_s(const sc_stage_table *t, int mode, int s)
{
    return mode == SC_RECOMPUTE_FULL ? t->rc_full[s] + t->tp_s[s]
           : mode == SC_RECOMPUTE_SELECTIVE ? t->rc_sel[s]
                                            : 0;
}

/* n windows of an op of T seconds, each with a gather of C beside it that the
 * next op waits for: the op runs at 1 / (1 + kappa) meanwhile, so a gather
 * longer than T (1 + kappa) exposes C - T (the slowed op included) and is
 * *covered; a shorter one nothing. */
static inline void window(double C, double T, int n, double kappa, double *ex, double *covered)
{
    if (n > 0 && C > T * (1 + kappa)) {
        *ex += n * (C - T);
        *covered += n * C;
    }
}

/* Chunk ch's part of position r's parameter all-gather of A seconds: its
 * gradients' share of the position's, grads (an even share when that is 0). */
static double opg_chunk(const sc_stage_table *t, int r, int ch, double A, double grads)
{
    return grads > 0 ? A * t->grad[ch * t->pp + r] / grads : A / t->v;
}

void sc_estimate_fast(const sc_stage_table *t, const sc_cluster *c, const sc_step_cfg *cfg,
                      sc_dtype dt, sc_estimate *out)
{
    /* dp: the data-parallel group, with its cp peers (sc_step_dpc) */
    int pp = t->pp, v = t->v, m = cfg->m, dp = sc_step_dpc(cfg), tp = t->tp;
    int gpn = c->gpus_per_node, mode = (int)cfg->recompute;
    sched_kind sched = sched_of(cfg->schedule);
    /* the states a parameter costs a rank (sc_cost_states is linear in params) */
    double w1, g1, o1;
    sc_cost_states(dt, t->grad_fp32, cfg->zero, dp, 1, &w1, &g1, &o1);
    double maxT = 0, sumT = 0, maxF = 0, maxBi = 0, maxsend = 0, compute = 0, tps = 0;
    int ov = cfg->tp_comm_overlap && tp > 1; /* tp communication overlap */
    for (int r = 0; r < pp; r++) {
        double F = 0, B = 0, W = 0;
        for (int ch = 0; ch < v; ch++) {
            int s = ch * pp + r;
            double rc = recompute_s(t, mode, s);
            /* the framework's gradient work under ZeRO 2 and 3 (sc_stage_info fsdp) */
            double fs = sc_cost_fsdp_time(&t->fsdp[s], cfg->zero, dp);
            if (ov && t->tp_s[s] > 0) {
                /* each op's tp collectives beside it, all but the last chunk */
                double kappa = c->eff.overlap_slowdown, lf, xf, lb, xb, lr = 0, xr = 0;
                const double *tov = &t->tp_ov[2 * s];
                double fo = tp_overlapped(t->f[s], tov, kappa, &lf, &xf);
                double bo = tp_overlapped(t->b[s] + fs, tov, kappa, &lb, &xb);
                int full = mode == SC_RECOMPUTE_FULL;
                F += fo;
                double ro = full ? tp_overlapped(t->rc_full[s], tov, kappa, &lr, &xr) : rc;
                B += bo + ro;
                W += t->w[s] + fs;
                compute += (t->f[s] + t->b[s] + fs + lf + lb) / pp;
                tps += (xf + xb + xr) / pp;
            } else {
                F += t->f[s] + t->tp_s[s];
                B += t->b[s] + t->tp_s[s] + rc + fs;
                W += t->w[s] + fs;
                compute += (t->f[s] + t->b[s] + fs) / pp;
                tps += (mode == SC_RECOMPUTE_FULL ? 3 : 2) * t->tp_s[s] / pp;
            }
            if (t->send_s[s] > maxsend)
                maxsend = t->send_s[s];
            if (cfg->no_overlap_p2p_comm) {
                /* blocking sends: the forward waits for its output to reach
                 * s + 1, the backward for its gradient to reach s - 1 */
                if (s + 1 < t->S)
                    F += t->send_s[s];
                if (s > 0)
                    B += t->send_s[s - 1];
            }
        }
        double T = F + B;
        sumT += T;
        maxT = max2(maxT, T);
        maxF = max2(maxF, F);
        maxBi = max2(maxBi, B - W); /* zb-h1's B: the backward less its W */
    }
    double pipe;
    if (pp == 1)
        pipe = m * maxT;
    else if (sched == SCHED_INTERLEAVED)
        pipe = m * maxT + (pp - 1) * maxT / v;
    else if (sched == SCHED_ZBH1)
        pipe = m * maxT + (pp - 1) * max2(maxF, maxBi);
    else
        pipe = (m - 1) * maxT + sumT;
    double p2p = pp > 1 ? 2.0 * (pp - 1) * maxsend : 0;
    pipe += p2p;
    /* data parallelism, ZeRO, the optimizer: the slowest position's tail */
    int per_node = dp_per_node(tp, pp, t->cp, dp, gpn);
    double tail = 0, dpx_max = 0, opt_max = 0, mem_max = 0, zero3 = 0;
    const struct sc_dp_terms *D = dp_terms(t, c, dp, cfg->bucket_bytes, dt);
    /* compute beside a data-parallel collective progresses at 1 / (1 + kappa)
     * (the cluster's overlap_slowdown; the simulator's spans, step.c contend) */
    double kappa = c->eff.overlap_slowdown, slow_max = 0;
    /* PyTorch FSDP's ZeRO 2 gathers before every forward (sc_lower_fsdp_zero2) */
    int fz2 = sc_lower_fsdp_zero2(cfg, c);
    /* Positions that share a node (pn of them, consecutive, when a node holds more than
     * one position's tp ranks) share its NICs, but do not reduce in lockstep: the later
     * stages finish their backwards first. The tail above takes every ring of the node
     * to run at once; the node's NICs need only carry all of the block's work, from the
     * earliest moment one of its positions can start: the mean of the positions' works
     * at the full share of rings, less the longest overlap window. A position alone
     * with its own tp rings bounds that from below. */
    int pn = tp <= gpn && per_node * tp < gpn ? gpn / (per_node * tp) : 1;
    if (pn > pp)
        pn = pp;
    double blk_cur = 0, blk_work = 0, blk_hide = 0, blk_solo = 0, blk_opt = 0, blk_dpx = 0;
    double z_total = 0, z_ag1 = 0, z_win = 0; /* ZeRO 2 and 3's, per block */
    /* overlap_param_gather: what the step's gathers hold back the pipeline by,
     * and the forwards before position r's first (chunk 0) */
    double opg_front = 0, opg_fill = 0;
    int blk_n = 0;
    for (int r = 0; r < pp; r++) {
        double work = 0, hide = 0;
        /* blast: the backward work after the first chunk's reductions may start. The
         * interleaved schedule runs its last pp microbatches' backwards chunk by chunk
         * (sched_interleaved.c): after chunk v - 1's last one come pp of each lower
         * chunk */
        double blast = 0;
        for (int ch = 0; ch < v; ch++) {
            blast += (ch == v - 1 ? 1 : pp) * t->b[ch * pp + r];
        }
        double P = t->params[r];
        const double *y = D->x + (size_t)r * SC_DPT_N;
        double dpx = 0;
        if (dp > 1) {
            int z0 = cfg->zero == 0;
            double K = y[SC_DPT_K];
            double tr = y[z0 ? SC_DPT_AR : SC_DPT_RS];
            /* buckets overlap that backward work but the last bucket of the last
             * chunk, and, interleaved, the pipeline flush: position r idles pp -
             * 1 - r chunk backwards' worth in it (waiting for the later
             * positions') and ends r of them before position 0, the step's last
             * (with one chunk the same credit makes build/bench/estimate_bench's
             * 1f1b and zb-h1 candidates worse, so it is left out there); with
             * overlap_grad_reduce off all of it is exposed */
            double overlap = blast - t->b[r] / K +
                             (sched == SCHED_INTERLEAVED ? (pp - 1) * t->b[r] : 0);
            /* the work beside them runs at 1 / (1 + kappa), so it covers
             * overlap (1 + kappa) of them */
            dpx = cfg->no_overlap_grad_reduce ? tr
                                              : max2(tr / (K * v), tr - overlap * (1 + kappa));
            hide = tr - dpx;
            /* the backward beside them loses hide kappa / (1 + kappa) */
            slow_max = max2(slow_max, hide * kappa / (1 + kappa));
            if ((cfg->zero == 1 || cfg->zero == 2) && !cfg->overlap_param_gather && !fz2)
                dpx += y[SC_DPT_AG12];
            if ((cfg->zero == 1 || cfg->zero == 2) && cfg->overlap_param_gather && !fz2) {
                /* the gather at the step's start (lower.h): chunk 0's first
                 * unit before the position's first forward, the rest of chunk 0
                 * beside it (which loses kappa / (1 + kappa) of what it
                 * overlaps) and before the second op, each later chunk's
                 * before its first forward; the forwards of the positions
                 * before it hide what they can */
                double A = y[SC_DPT_AG12], ag1 = min2(y[SC_DPT_Z3_AG1], A);
                double grads = 0;
                for (int ch = 0; ch < v; ch++)
                    grads += t->grad[ch * pp + r];
                double rest = max2(0, opg_chunk(t, r, 0, A, grads) - ag1);
                double f0 = t->f[r] + t->tp_s[r];
                double lost = min2(rest, f0 * (1 + kappa)) * kappa / (1 + kappa);
                double front = ag1 + max2(0, rest - f0 - lost) + lost;
                /* interleaved: chunk ch's gather, after the ones before it, is
                 * waited for by its first forward, which the schedule runs
                 * after pp forwards of each chunk before it */
                double done = rest, need = 0;
                for (int ch = 1; ch < v; ch++) {
                    done += opg_chunk(t, r, ch, A, grads);
                    need += pp * (t->f[(ch - 1) * pp + r] + t->tp_s[(ch - 1) * pp + r]);
                    double l = min2(done, need * (1 + kappa)) * kappa / (1 + kappa);
                    front = max2(front, ag1 + max2(0, done - need - l) + l);
                }
                opg_front = max2(opg_front, front - opg_fill);
            }
            if (cfg->zero >= 2) {
                /* ZeRO 2 and 3 reduce-scatter every microbatch's gradients during
                 * its backward (lower.h), the last one's the grad-final tail
                 * above (tr, dpx); ZeRO 3, and PyTorch FSDP's ZeRO 2, gather
                 * the parameters before every F (ZeRO 3 before every B too),
                 * the step's first unit always exposed. They share the NICs
                 * and move during the whole pipeline so far: every op of the
                 * position's stream (forwards, backwards, recomputes, tp
                 * collectives; m T_r <= pipe) and its bubbles */
                int gathers = cfg->zero == 3 || fz2, bgather = cfg->zero == 3;
                double ag = gathers ? y[SC_DPT_Z3_AG] : 0;
                double ag1 = gathers ? y[SC_DPT_Z3_AG1] : 0, rs = y[SC_DPT_Z3_RS];
                double total = m * v * (1 + bgather) * ag + (m - 1) * v * rs;
                /* each op's gather moves beside the op before it (a B's beside
                 * its F, the next F's beside the B; the step's last B, chunk
                 * 0's, has none), which runs at 1 / (1 + kappa) meanwhile: a
                 * gather C longer than its window's op T stretched, T (1 +
                 * kappa), exposes what it exceeds the op by, C - T, slowed op
                 * included; the reduce-scatters may spill into the next window
                 * and count in total alone */
                double ex = 0, covered = 0, bg = bgather ? ag : 0;
                for (int ch = 0; ch < v; ch++) {
                    int s = ch * pp + r;
                    double Tf = t->f[s] + t->tp_s[s];
                    double Tb = t->b[s] + t->tp_s[s] + recompute_s(t, mode, s) +
                                sc_cost_fsdp_time(&t->fsdp[s], cfg->zero, dp);
                    /* F windows hold their B's gather; the step's first also
                     * the rest of its own (after its first unit) */
                    window(ch == 0 ? (1 + bgather) * ag - ag1 : bg, Tf, 1, kappa, &ex, &covered);
                    window(bg, Tf, m - 1, kappa, &ex, &covered);
                    /* B windows hold the next F's */
                    window(ag, Tb, ch == 0 ? m - 1 : m, kappa, &ex, &covered);
                }
                /* the rest of the collectives slows the compute beside them by
                 * kappa / (1 + kappa) of their time, kappa pipe at most */
                double lost = min2(kappa * pipe, max2(0, total - covered) * kappa / (1 + kappa));
                z_win = max2(z_win, ex + lost);
                /* the positions of a node share its NICs: what one leaves
                 * idle the others take, so the node's work is their mean at
                 * the shares coll_time gives them all at once */
                z_total += total;
                z_ag1 = max2(z_ag1, ag1);
            }
        }
        dpx += D->tie;
        double opt = y[cfg->zero >= 1 ? SC_DPT_OPT_SHARD : SC_DPT_OPT];
        work = dpx + hide;
        blk_cur = max2(blk_cur, dpx + opt);
        blk_work += work;
        blk_hide = max2(blk_hide, hide);
        blk_solo = max2(blk_solo, work / pn - hide + opt);
        blk_opt = max2(blk_opt, opt);
        blk_dpx = max2(blk_dpx, dpx);
        if (++blk_n == pn || r == pp - 1) {
            if (cfg->zero >= 2 && dp > 1)
                zero3 = max2(zero3, z_ag1 + max2(z_total / blk_n - pipe, z_win));
            z_total = z_ag1 = z_win = 0;
            double nic = blk_work / blk_n - blk_hide + blk_opt;
            double t_blk = blk_n > 1 ? min2(blk_cur, max2(nic, blk_solo)) : blk_cur;
            tail = max2(tail, t_blk);
            dpx_max = max2(dpx_max, blk_n > 1 ? min2(blk_dpx, t_blk - blk_opt) : blk_dpx);
            blk_cur = blk_work = blk_hide = blk_solo = blk_opt = blk_dpx = 0;
            blk_n = 0;
        }
        opt_max = max2(opt_max, opt);
        opg_fill += t->f[r] + t->tp_s[r];
        /* memory: states under ZeRO, activations with the schedule's in-flight count */
        double W = P * w1, G = P * g1, O = P * o1;
        /* ZeRO 3's gathered units beside the shards (sc_cost_memory) */
        double gath = cfg->zero >= 3 && dp > 1 ? t->gathered[r] : 0;
        int peak = inflight(sched, pp, m, v, r);
        int k = (peak + v - 1) / v;
        double act = t->act1[r * 3 + mode] + (k - 1) * t->act_slope[r * 3 + mode];
        double mem = W + G + O + gath + act + c->eff.workspace_bytes;
        mem_max = max2(mem_max, mem);
    }
    pipe += zero3 + opg_front;
    out->step_s = pipe + tail + slow_max;
    out->pipe_s = pipe;
    out->bubble_s = max2(0, pipe - p2p - zero3 - opg_front - m * maxT);
    out->compute_s = m * compute + slow_max;
    out->tp_s = m * tps;
    out->pp_s = p2p;
    out->dp_s = dpx_max + zero3 + opg_front;
    out->optimizer_s = opt_max;
    out->peak_mem = mem_max;
    out->fits = mem_max <= c->gpu.memory_bytes;
}

sc_status sc_estimate_step(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                           sc_estimate *out, sc_error *err)
{
    sc_partition part = {0};
    sc_status st = SC_OK;
    const sc_partition *pp = cfg->partition;
    if (!pp) {
        st = sc_partition_uniform(m, cfg->pp * cfg->v, &part, err);
        pp = &part;
    }
    sc_stage_table t;
    if (!st)
        st = sc_stage_table_build(m, c, cfg->pp, cfg->v, cfg->tp, cfg->sp, cfg->tp_comm_overlap,
                                  cfg->attn, cfg->mbs, cfg->cp, cfg->grad_reduce_in_fp32, cfg->fp8, pp, &t,
                                  err);
    sc_partition_free(&part);
    if (st)
        return st;
    sc_estimate_fast(&t, c, cfg, m->dtype, out);
    sc_stage_table_free(&t);
    return SC_OK;
}
