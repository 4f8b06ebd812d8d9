/* step.c - the lowered step (lower.h) as tasks on the engine; see step.h
 * for how each action is modelled.
 *
 * Build order (so every dependency names a task that already exists):
 *   1. build_ops: per pipeline position, per schedule op of its lowered
 *      list: the op's ZeRO-3 gathers, then each simulated replica's stream
 *      tasks (compute pieces, tp allreduces, send host time, receive
 *      markers), then its gradient buckets across the replicas;
 *   2. build_messages: a flow per tp rank from each SEND's producer to the
 *      matching RECV's marker;
 *   3. build_ties: the allreduces of tied groups split over positions;
 *   4. build_optimizer: per position, the optimizer, ZeRO 1/2's parameter
 *      allgather and its end-of-step wait.
 * Cost: O(T) tasks with T = dp·pp·m·v·(actions per microbatch)·(1 + tp),
 * then the engine's run.
 */
#include "step.h"
#include "engine.h"
#include "json.h"
#include "lower.h"
#include "schedule.h"

#include <assert.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>


/* BUSY_HOST: the sender's time in a send (p2p_host_s_per_byte), on its compute
 * stream; counted as exposed pp communication, not as busy time */
enum { BUSY_NONE = 0, BUSY_COMPUTE, BUSY_RECOMPUTE, BUSY_OPT, BUSY_HOST };
enum { WAIT_NONE = 0, WAIT_TP, WAIT_PP, WAIT_DP, WAIT_CP };

/* What the builder remembers of a task (indexed by engine task id) for the
 * step's breakdown. */
typedef struct tinfo {
    int32_t group;   /* (d, p) stream group for stream tasks, -1 otherwise */
    int32_t wait_s, wait_e; /* comm interval a stream task waited on: start of wait_s .. end of wait_e */
    uint8_t busy, wait;
} tinfo;

/* And for the timeline, kept only when one is wanted (at 16,384 GPUs the
 * two together were a third of the memory the step touched). */
typedef struct tlinfo {
    int32_t rank;    /* sending rank of a flow, -1 otherwise */
    int32_t mb;
    int32_t from;    /* a flow of a ring: the task it starts after (the ring's latency), or -1 */
    int16_t chunk, stage;
    uint8_t op, is_piece;
    double bytes;
} tlinfo;

/* One (replica d, position p) stream group: the tp ranks of a position
 * share one compute stream in the engine. */
typedef struct sgroup {
    int stream;        /* engine resource */
    int tp_chain;      /* end marker of the group's last tp collective */
    int opt;           /* its optimizer task */
    int *task;         /* per action of position p: its last stream task, -1 none */
} sgroup;

/* One (position p, tp rank t) data-parallel communicator. */
typedef struct dcomm {
    int dp_chain;      /* gradient reductions and ZeRO 1/2 gathers, in order */
    int z3_chain;      /* ZeRO-3 parameter gathers (their own stream) */
    int dp_first;      /* start marker of the first collective of the pending reduction */
} dcomm;

typedef struct builder {
    const sc_model *m;
    const sc_cluster *c;
    const sc_step_cfg *cfg;
    sc_error *err;
    sc_sim *sim;
    const sc_lowered *lw;
    int dp, tp, pp, v, S, ranks, gpn, nodes;
    int nrep;          /* data-parallel replicas simulated: dp (dp·cp), or 1 (one_replica:
                          replica 0 stands for every other, its cp peers included) */
    sc_dtype dt;
    /* links */
    int *port_out, *port_in, *nic_out, *nic_in;
    double *link_bw;
    sgroup *grp;       /* nrep·pp, index d·pp + p */
    dcomm *comm;       /* pp·tp, index p·tp + t */
    int *tie_start, *tie_end; /* per (tie, d, t): a TIED ring's start and end markers */
    int *members, *deps; /* scratch: max(dp, tp, pp) + 1 entries each */
    /* One replica standing for all (nrep < dp): per (position p, tp rank t <
     * ntp), index p·tp + t, the ranks replica 0's stands for on its node (its
     * cp peers where cp·tp ranks share a node; with ntp 1 its group's tp
     * ranks too): its sends and ties that leave the node carry theirs
     * (nic_mult while they are built); NULL when every replica is simulated */
    int *img;
    double nic_mult; /* flow_task's factor on flows through a NIC, 1 outside */
    /* The tp ranks whose communication is built: tp, or 1 when one replica
     * stands for all and every tp group lies in one node (tp_stands_one):
     * tp rank 0 then stands for its group too, its flows through a NIC
     * carrying the group's tp / ntp */
    int ntp;
    int nic0;        /* the first NIC link (ports come first, add_resources) */
    tinfo *info;
    tlinfo *tl;        /* NULL without cfg->want_timeline */
    int ninfo, ninit; /* capacity; entries set to their defaults (the tasks so far) */
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

static int placement_parse(const char *pl, int order[3]);

/* The parse of the last placement string seen (sc_step_rank runs millions
 * of times per search with the same few strings). */
static int placement_order(const char *pl, int order[3])
{
    static __thread char last[16];
    static __thread int last_order[3], last_rc = -2;
    if (!pl)
        pl = "tp,pp,dp";
    if (last_rc != -2 && !strncmp(pl, last, sizeof last) && strlen(pl) < sizeof last) {
        memcpy(order, last_order, sizeof last_order);
        return last_rc;
    }
    int rc = placement_parse(pl, order);
    if (strlen(pl) < sizeof last) {
        snprintf(last, sizeof last, "%s", pl);
        memcpy(last_order, order, sizeof last_order);
        last_rc = rc;
    }
    return rc;
}

static int placement_parse(const char *pl, int order[3])
{
    /* order[i] = 0 (tp), 1 (pp), 2 (dp) from innermost to outermost */
    const char *names[3] = {"tp", "pp", "dp"};
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
    /* context parallelism: the cp index joins t in the placement's tp place */
    int cp = sc_step_cp(cfg);
    int order[3], coord[3] = {t, p, d}, dim[3] = {cfg->tp * cp, cfg->pp, cfg->dp};
    if (cp > 1) { /* no division on the search's path (cp 1) */
        coord[0] = d % cp * cfg->tp + t;
        coord[2] = d / cp;
    }
    if (placement_order(cfg->placement, order))
        return -1;
    int r = 0;
    for (int i = 2; i >= 0; i--)
        r = r * dim[order[i]] + coord[order[i]];
    return r;
}

void sc_step_coords(const sc_step_cfg *cfg, int rank, int *d, int *p, int *t)
{
    int cp = sc_step_cp(cfg);
    int order[3], dim[3] = {cfg->tp * cp, cfg->pp, cfg->dp}, coord[3] = {0, 0, 0};
    if (placement_order(cfg->placement, order) == 0)
        for (int i = 0; i < 3; i++) {
            coord[order[i]] = rank % dim[order[i]];
            rank /= dim[order[i]];
        }
    *t = coord[0] % cfg->tp;
    *p = coord[1];
    *d = coord[2] * cp + coord[0] / cfg->tp;
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
    if (cfg->cp < 0 || cfg->cp > 4096)
        return sc_err(err, SC_EINVAL, "sim: context parallelism cp=%d (1 to 4096)", cfg->cp);
    int cp = sc_step_cp(cfg);
    long ranks = (long)cfg->dp * cp * cfg->tp * cfg->pp;
    long gpus = sc_cluster_total_gpus(c);
    if (ranks > gpus)
        return sc_err(err, SC_EINVAL,
                      "sim: dp·%stp·pp = %ld ranks, but %s with %d node%s has %ld GPUs",
                      cp > 1 ? "cp·" : "", ranks, c->name, c->nodes, c->nodes == 1 ? "" : "s",
                      gpus);
    sc_status cst = sc_step_check_cp(m, cfg, err);
    if (cst)
        return cst;
    if (cfg->partition && cfg->partition->n_stages != cfg->pp * cfg->v)
        return sc_err(err, SC_EINVAL, "sim: the partition has %d stages, pp·v = %d",
                      cfg->partition->n_stages, cfg->pp * cfg->v);
    if (c->gpu.peak_flops[m->dtype] <= 0)
        return sc_err_no_peak(err, "sim", c, m->dtype, m, NULL);
    if ((unsigned)cfg->attn >= SC_ATTN_N)
        return sc_err(err, SC_EINVAL, "sim: attention implementation %d is not unfused or flash",
                      (int)cfg->attn);
    if (cfg->sp && cfg->tp < 2)
        return sc_err(err, SC_EINVAL,
                      "sim: sequence parallelism splits the tensor-parallel group's sequence: "
                      "it needs tp >= 2 (tp=%d)", cfg->tp);
    const char *key, *why = sc_step_overlap_why(cfg->sp, cfg->zero, !cfg->no_overlap_grad_reduce,
                                                 cfg->tp_comm_overlap, cfg->overlap_param_gather,
                                                 &key);
    if (why)
        return sc_err(err, SC_EINVAL, "sim: %s: %s", key, why);
    if (!(cfg->jitter >= 0 && cfg->jitter < 1))
        return sc_err(err, SC_EINVAL, "sim: jitter %g must be in [0, 1)", cfg->jitter);
    if (cfg->wgrad_deferral_limit < 0)
        return sc_err(err, SC_EINVAL, "sim: wgrad_deferral_limit %d must be 0 (every microbatch) "
                      "or more", cfg->wgrad_deferral_limit);
    if ((why = sc_step_defer_why(cfg->defer_embedding_wgrad, cfg->pp)))
        return sc_err(err, SC_EINVAL, "sim: defer_embedding_wgrad_compute: %s (pp=%d)", why,
                      cfg->pp);
    if (cfg->defer_embedding_wgrad && cfg->slices > 1)
        return sc_err(err, SC_EINVAL, "sim: defer_embedding_wgrad_compute and token slices "
                      "(--slices): not both");
    return sc_step_check_slices(m, cfg, err);
}

sc_status sc_step_check_cp(const sc_model *m, const sc_step_cfg *cfg, sc_error *err)
{
    int cp = cfg->cp;
    if (cp <= 1)
        return SC_OK;
    if (cfg->attn != SC_ATTN_FLASH)
        return sc_err(err, SC_EINVAL,
                      "--cp: context parallelism passes keys and values between fused attention "
                      "kernels (Transformer Engine's): it needs --attn flash");
    if (cfg->slices > 1)
        return sc_err(err, SC_EINVAL, "--cp: context parallelism and token slices (--slices) "
                      "both split the sequence: use one");
    if (m->seq_len % (2 * cp))
        return sc_err(err, SC_EINVAL,
                      "--cp: %d ranks hold 2·cp = %d balanced chunks of the sequence, which "
                      "must divide its %d tokens", cp, 2 * cp, m->seq_len);
    int attn = 0;
    for (int i = 0; i < m->n_leaves; i++) {
        const sc_module *x = m->leaves[i];
        int flash = 0, self = 1;
        for (int k = 0; k < x->n_kernels; k++)
            if (x->kernels[k].op == SC_KOP_FLASH) {
                flash = 1;
                self &= x->kernels[k].m == x->kernels[k].n;
            }
        if (!sc_module_is_attention(x) && !flash)
            continue;
        attn++;
        if (!flash)
            return sc_err(err, SC_EINVAL,
                          "--cp: attention leaf %s lists no fused attention kernel (the model's "
                          "\"kernels\"): context parallelism is modelled on those", x->name);
        if (!self)
            return sc_err(err, SC_EINVAL,
                          "--cp: %s attends over another sequence (cross-attention); context "
                          "parallelism splits self-attention only", x->name);
    }
    if (!attn)
        return sc_err(err, SC_EINVAL, "--cp: the model has no attention to split");
    return SC_OK;
}

const char *sc_step_overlap_why(int sp, int zero, int ogr, int tpo, int opg, const char **key)
{
    *key = tpo && !sp ? "tp_comm_overlap" : "overlap_param_gather";
    if (tpo && !sp)
        return "overlapping the sequence-parallel all-gathers and reduce-scatters with the "
               "GEMMs (Megatron-LM's --tp-comm-overlap) needs sp";
    if (opg && zero != 1 && zero != 2)
        return "the parameter all-gather beside the next forward (Megatron-LM's "
               "--overlap-param-gather) is the distributed optimizer's: it needs ZeRO 1 or 2";
    if (opg && !ogr)
        return "the parameter all-gather beside the next forward needs the gradient reduction "
               "overlapped too (Megatron-LM asserts --overlap-grad-reduce with it)";
    return NULL;
}

const char *sc_step_defer_why(int defer, int pp)
{
    if (defer && pp < 2)
        return "the output layer's weight gradients wait for the pipeline flush "
               "(Megatron-Core's --defer-embedding-wgrad-compute): it needs pp >= 2";
    return NULL;
}

void sc_step_overlaps_where_apply(sc_step_cfg *cfg, int tpo, int opg)
{
    const char *key;
    cfg->tp_comm_overlap = tpo && !sc_step_overlap_why(cfg->sp, cfg->zero, 1, 1, 0, &key);
    cfg->overlap_param_gather =
        opg && !sc_step_overlap_why(1, cfg->zero, !cfg->no_overlap_grad_reduce, 0, 1, &key);
}

sc_status sc_step_check_slices(const sc_model *m, const sc_step_cfg *cfg, sc_error *err)
{
    int k = cfg->slices;
    if (k < 0 || k > m->seq_len)
        return sc_err(err, SC_EINVAL, "--slices: %d is out of range [1, %d] (the sequence's "
                      "tokens)", k, m->seq_len);
    if (k <= 1)
        return SC_OK;
    if (strcmp(cfg->schedule, "gpipe") && strcmp(cfg->schedule, "1f1b"))
        return sc_err(err, SC_EINVAL, "--slices: token slices run with gpipe or 1f1b, not %s",
                      cfg->schedule);
    const char *why = NULL;
    const sc_module *x = sc_model_not_causal(m, &why);
    if (x)
        return sc_err(err, SC_EINVAL,
                      "--slices: token slices need a causal decoder: %s of %s cannot be sliced "
                      "(%s)", x->name, m->name, why);
    if (!cfg->slice_len) {
        if (m->seq_len % k)
            return sc_err(err, SC_EINVAL,
                          "--slices: %d equal slices do not divide the sequence of %d tokens", k,
                          m->seq_len);
        return SC_OK;
    }
    long sum = 0;
    for (int j = 0; j < k; j++) {
        if (cfg->slice_len[j] < 1)
            return sc_err(err, SC_EINVAL, "slice_len[%d]: %d tokens (every slice needs at "
                          "least one)", j, cfg->slice_len[j]);
        sum += cfg->slice_len[j];
    }
    if (sum != m->seq_len)
        return sc_err(err, SC_EINVAL, "slice_len: the slices sum to %ld tokens, the sequence "
                      "has %d", sum, m->seq_len);
    return SC_OK;
}

/* ---- tasks ------------------------------------------------------------------- */

/* Room for task's entry; the entries up to it set to their defaults as
 * they are first reached, so that memory reserved ahead (reserve) is not
 * touched until used. */
static int info_room(builder *b, int task)
{
    if (task < 0)
        return fail_nomem(b), -1;
    if (task >= b->ninfo) {
        int n = b->ninfo ? b->ninfo : 1024;
        while (n <= task)
            n *= 2;
        tinfo *ni = sc_realloc(b->info, sizeof *ni * (size_t)n);
        if (!ni)
            return fail_nomem(b), -1;
        b->info = ni;
        if (b->cfg->want_timeline) {
            tlinfo *nl = sc_realloc(b->tl, sizeof *nl * (size_t)n);
            if (!nl)
                return fail_nomem(b), -1;
            b->tl = nl;
        }
        b->ninfo = n;
    }
    return 0;
}

static tinfo *info_at(builder *b, int task)
{
    if (info_room(b, task))
        return NULL;
    for (; b->ninit <= task; b->ninit++) {
        b->info[b->ninit] = (tinfo){.group = -1, .wait_s = -1, .wait_e = -1};
        if (b->tl)
            b->tl[b->ninit] = (tlinfo){.rank = -1, .mb = -1, .from = -1, .chunk = -1,
                                       .stage = -1};
    }
    return &b->info[task];
}

/* Task t's timeline record (after info_at(b, t)), or NULL without a timeline. */
static tlinfo *tl_at(builder *b, int t) { return b->tl ? &b->tl[t] : NULL; }

/* Flow f of a ring shows in the timeline from task `from` (the ring's latency). */
static void set_from(builder *b, int f, int from)
{
    tlinfo *x = tl_at(b, f);
    if (x)
        x->from = from;
}

static double noisy(builder *b, double d)
{
    if (!b->rng || d <= 0)
        return d;
    double f = 1 + gsl_ran_gaussian(b->rng, b->cfg->jitter);
    return d * (f < 0.1 ? 0.1 : f);
}

/* The op identity task t reports in the timeline. */
static void set_op(builder *b, int t, int op, int stage, int chunk, int mb)
{
    tlinfo *i = tl_at(b, t);
    if (!i)
        return;
    i->op = (uint8_t)op;
    i->stage = (int16_t)stage;
    i->chunk = (int16_t)chunk;
    i->mb = mb;
}

/* A task on group g's compute stream. */
static int stream_task(builder *b, int g, double dur, int busy, int op, int stage, int chunk,
                       int mb)
{
    int t = sc_sim_add_compute(b->sim, b->grp[g].stream, busy ? noisy(b, dur) : 0, NULL);
    tinfo *i = info_at(b, t);
    if (!i)
        return -1;
    i->group = g;
    i->busy = (uint8_t)busy;
    set_op(b, t, op, stage, chunk, mb);
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
    if (b->nic_mult != 1 && links[0] >= b->nic0)
        vol *= b->nic_mult;
    int f = sc_sim_add_flow(b->sim, vol, links, 2, -1, NULL);
    if (!info_at(b, f))
        return -1;
    set_op(b, f, op, stage, chunk, mb);
    tlinfo *tl = tl_at(b, f);
    if (tl) {
        tl->rank = rank;
        tl->bytes = report;
    }
    if (from >= 0)
        sc_sim_add_dep(b->sim, from, f);
    if (to >= 0)
        sc_sim_add_dep(b->sim, f, to);
    return f;
}

/* A cold collective's share of link class l relative to the warm one the
 * links run at (sc_cluster_cold): its flows move vol / share bytes' worth of
 * link time. 1 when warm or when the cluster has no cold line. */
static double cold_share(builder *b, sc_link l, int cold)
{
    if (!cold)
        return 1;
    double a, bw;
    sc_cluster_cold(b->c, l, &a, &bw);
    return bw / b->c->eff.bw_eff[l];
}

/* A delay task of `delay` seconds after marker start; start itself when there is
 * none. Returns what the collective's flows start after. */
static int delay_after(builder *b, int start, double delay)
{
    if (!(delay > 0))
        return start;
    int from = sc_sim_add_compute(b->sim, -1, delay, NULL);
    sc_sim_add_dep(b->sim, start, from);
    return from;
}

/* The latency of a ring of lat_steps steps over n ranks on k nodes (k runs of
 * members), after marker start, as NCCL counts it (sc_ring_latency): lat_steps /
 * (n - 1) collectives' worth of steps, (k - 1) of each collective's n - 1 crossing
 * the network at the inter alpha, the rest at the intra one; the cold alphas for a
 * data-parallel collective. Its flows' links add one alpha of their own (awarm, the
 * warm one), so a delay task holds the rest. Returns what the flows start after
 * (start itself when there is no rest). */
static void alphas(builder *b, int cold, double *ai, double *ae);

static int ring_latency(builder *b, int start, double lat_steps, int n, int k, int cold,
                        double awarm, double g)
{
    if (!(lat_steps > 1) || n < 2)
        return start;
    double ai, ae;
    alphas(b, cold, &ai, &ae);
    /* lat_steps / (n - 1) passes of n - 1 steps, each a reduce-scatter's latency */
    double lat = lat_steps / (n - 1) * sc_ring_latency(SC_COLL_REDUCE_SCATTER, n, k, ai, ae);
    return delay_after(b, start, (lat - awarm) / g);
}

/* The measured size factor (cluster.h, sc_size_curve) of a warm collective of msg
 * bytes over a group spanning k nodes: its whole time, latency and flows, is
 * divided by it. Cold ones (data-parallel) run at their own line: 1. */
static double coll_factor(builder *b, int k, double msg, int cold)
{
    return cold ? 1 : sc_cluster_coll_factor(b->c, k, msg);
}

/* Flow task f pays its links' latency divided by g (coll_factor); f on failure. */
static int flow_factor(builder *b, int f, double g)
{
    if (f >= 0 && g != 1 && sc_sim_scale_flow_latency(b->sim, f, 1 / g) < 0)
        return -1;
    return f;
}

static void group_shape(builder *b, const int *members, int n, int *k, int *pmax);

/* A collective's start and end markers: start after deps[0..ndeps) and the
 * communicator's previous collective (*chain, which becomes end). end NULL:
 * the start alone, the caller setting *chain to its own end. 0, or -1 on
 * failure. */
static int coll_markers(builder *b, const int *deps, int ndeps, int *chain, int *start,
                        int *end)
{
    *start = sc_sim_add_marker(b->sim, NULL);
    if (end)
        *end = sc_sim_add_marker(b->sim, NULL);
    if (*start < 0 || (end && *end < 0))
        return fail_nomem(b), -1;
    for (int i = 0; i < ndeps; i++)
        if (deps[i] >= 0)
            sc_sim_add_dep(b->sim, deps[i], *start);
    if (chain && *chain >= 0)
        sc_sim_add_dep(b->sim, *chain, *start);
    if (chain && end)
        *chain = *end;
    return 0;
}

/* A ring of point-to-point sends (context parallelism's key/value ring:
 * Transformer Engine passes the chunks with send and receive, not a
 * collective), for add_ring's coll: each hop at the class's p2p share
 * (sc_cost_p2p_share). */
#define RING_P2P SC_COLL_N

/* The share of link class lk that ring hops of coll reach, relative to
 * bw_eff (the links' rate). */
static double hop_share(const builder *b, sc_link lk, sc_coll coll)
{
    return coll == RING_P2P ? sc_cost_p2p_share(b->c, lk) : sc_cost_coll_share(b->c, lk, coll);
}

/* A ring collective among ranks members[0..n) (ascending). Each member sends
 * vol bytes to the next; lat_steps alpha of latency in all. Starts after
 * deps and after the communicator's previous collective (*chain). msg is the
 * size of one collective of the lot (nccl-tests' S): the links run at the
 * plateau (bw_eff), so a hop below it, reaching only r(msg) of its class's
 * plateau (the size ramp, cost.h), moves vol / r(msg) bytes' worth of link
 * time, at collective coll's share (sc_cost_coll_share; RING_P2P: the sends'
 * share); the ring ends with its
 * slowest hop. cold: a data-parallel collective, at the cold alpha and share
 * (sc_cluster_cold, cold_share). Returns the
 * end marker (and the start marker in *start_out); -1 on failure. */
static int add_ring(builder *b, const int *members, int n, double vol, double lat_steps,
                    const int *deps, int ndeps, int *chain, int op, int stage, int chunk, int mb,
                    double report_bytes, double msg, sc_coll coll, int cold, int *start_out)
{
    int start, end;
    if (coll_markers(b, deps, ndeps, chain, &start, &end) < 0)
        return -1;
    if (n > 1 && (vol > 0 || lat_steps > 0)) {
        double awarm = 0;
        for (int i = 0; i < n; i++) {
            int l[2];
            double a;
            path(b, members[i], members[(i + 1) % n], l, &a);
            awarm = fmax(awarm, a);
        }
        int k, pmax;
        group_shape(b, members, n, &k, &pmax);
        double g = coll_factor(b, k, msg, cold);
        int from = ring_latency(b, start, lat_steps, n, k, cold, awarm, g);
        for (int i = 0; i < n; i++) {
            int l[2];
            double a;
            path(b, members[i], members[(i + 1) % n], l, &a);
            /* each hop at its class's ramp (cost.h, sc_flat_beta) */
            sc_link lk = link_class(b, members[i], members[(i + 1) % n]);
            double r = sc_cost_coll_ramp(b->c, lk, msg) * cold_share(b, lk, cold) *
                       hop_share(b, lk, coll);
            int f = flow_factor(b, flow_task(b, l, vol / (r * g), from, end, members[i], op,
                                             stage, chunk, mb, report_bytes), g);
            if (f < 0)
                return -1;
            /* the op a timeline shows starts with the ring's latency, as the
             * executor's measured one starts when the collective is issued */
            if (from != start)
                set_from(b, f, from);
        }
    } else {
        sc_sim_add_dep(b->sim, start, end);
    }
    if (start_out)
        *start_out = start;
    return end;
}

/* add_ring's ring among n members of one node with member r standing for the
 * others (ntp 1: a tp group, whose members run the same ops at the same
 * times): each member sends vol to the next and receives as much from the
 * one before, so r's share is one flow out of its port and into it (its hop,
 * and the image of the hop into it), at add_ring's latency and rates. Two
 * tasks: the start marker, and the flow, which pays the ring's whole latency
 * itself (its link's alpha scaled to it) and is the end (the marker add_ring
 * ends with, and the communicator's chain). */
static int ring_one(builder *b, const int *members, int n, double vol, double lat_steps,
                    const int *deps, int ndeps, int *chain, int op, int stage, int chunk, int mb,
                    double report_bytes, double msg, sc_coll coll, int *start_out)
{
    int r = members[0];
    double ai = b->c->eff.alpha_s[SC_LINK_INTRA], ae;
    /* nothing to move, or no alpha to scale: add_ring as it is */
    if (!(n > 1 && (vol > 0 || lat_steps > 0)) || !(ai > 0))
        return add_ring(b, members, n, vol, lat_steps, deps, ndeps, chain, op, stage, chunk, mb,
                        report_bytes, msg, coll, 0, start_out);
    int start;
    if (coll_markers(b, deps, ndeps, chain, &start, NULL) < 0)
        return -1;
    double g = coll_factor(b, 1, msg, 0);
    /* ring_latency's whole latency, or the link's alpha alone */
    double lat = ai;
    if (lat_steps > 1) {
        alphas(b, 0, &ai, &ae);
        lat = fmax(ai, lat_steps / (n - 1) * sc_ring_latency(SC_COLL_REDUCE_SCATTER, n, 1, ai, ae));
    }
    int l[2] = {b->port_out[r], b->port_in[r]};
    double rate = sc_cost_coll_ramp(b->c, SC_LINK_INTRA, msg) * hop_share(b, SC_LINK_INTRA, coll);
    int f = flow_task(b, l, vol / (rate * g), start, -1, r, op, stage, chunk, mb, report_bytes);
    if (f < 0 || sc_sim_scale_flow_latency(b->sim, f, lat / ai / g) < 0)
        return fail_nomem(b), -1;
    if (chain)
        *chain = f;
    if (start_out)
        *start_out = start;
    return f;
}

/* The alphas of the two link classes, cold ones for a data-parallel collective
 * (sc_cluster_cold). */
static void alphas(builder *b, int cold, double *ai, double *ae)
{
    double w;
    *ai = b->c->eff.alpha_s[SC_LINK_INTRA];
    *ae = b->c->eff.alpha_s[SC_LINK_INTER];
    if (cold) {
        sc_cluster_cold(b->c, SC_LINK_INTRA, ai, &w);
        sc_cluster_cold(b->c, SC_LINK_INTER, ae, &w);
    }
}

/* The end of the run of members[i..) on members[i]'s node (members ascend). */
static int node_run(builder *b, const int *members, int n, int i)
{
    int j = i + 1;
    while (j < n && node_of(b, members[j]) == node_of(b, members[i]))
        j++;
    return j;
}

/* The nodes members[0..n) (ascending) span, *k, and the most of them on one, *pmax. */
static void group_shape(builder *b, const int *members, int n, int *k, int *pmax)
{
    *k = *pmax = 0;
    for (int i = 0, j; i < n; i = j, ++*k) {
        j = node_run(b, members, n, i);
        *pmax = j - i > *pmax ? j - i : *pmax;
    }
}

/* Whether "auto" runs an allreduce of msg bytes (one collective) over n ranks,
 * per_node of them on a node, as NCCL's tree: the choice of cost and the estimate
 * (sc_coll_tree_wins), at the size ramps of msg. */
static int uses_tree(builder *b, int n, int per_node, double msg)
{
    double r[2] = {sc_cost_coll_ramp(b->c, SC_LINK_INTRA, msg),
                   sc_cost_coll_ramp(b->c, SC_LINK_INTER, msg)};
    return sc_coll_tree_wins(b->c, msg, n, per_node, r);
}

/* What NCCL's tree's flows start after: count trees' latency over k nodes of p
 * (coll_tree.c), at the cold alphas for a data-parallel collective, after marker
 * start; the NICs' flows add the warm inter alpha of their own. */
static int tree_latency(builder *b, int start, int p, int k, double count, int cold, double g)
{
    double ai, ae;
    alphas(b, cold, &ai, &ae);
    return delay_after(b, start,
                       (count * sc_tree_latency(p, k, ai, ae) - b->c->eff.alpha_s[SC_LINK_INTER]) /
                           g);
}

/* NCCL's tree allreduce of S bytes (count collectives of msg bytes each) among
 * members[0..n) (ascending) spanning k nodes, at most pmax on one (coll_tree.c).
 * After count trees' latency, each node's NICs send f(k) S (sc_tree_nic_factor)
 * into the next node's, and each member of a node with p of them 2(p-1)/p S
 * through its ports into the next member there: the loads the tree puts on each
 * NIC and port, each flow at its class's ramp at msg (and cold share, as
 * add_ring). Returns the end marker (the start in *start_out); -1 on failure. */
static int add_tree(builder *b, const int *members, int n, int k, int pmax, double S,
                    double count, const int *deps, int ndeps, int *chain, int op, int stage,
                    int chunk, int mb, double report_bytes, double msg, int cold, int *start_out)
{
    int start, end;
    if (coll_markers(b, deps, ndeps, chain, &start, &end) < 0)
        return -1;
    double g = coll_factor(b, k, msg, cold);
    int from = tree_latency(b, start, pmax, k, count, cold, g);
    double ri = sc_cost_coll_ramp(b->c, SC_LINK_INTRA, msg) * cold_share(b, SC_LINK_INTRA, cold) * g;
    double re = sc_cost_coll_ramp(b->c, SC_LINK_INTER, msg) * cold_share(b, SC_LINK_INTER, cold) * g;
    for (int i = 0, j; i < n; i = j) {
        j = node_run(b, members, n, i);
        int p = j - i, l[2] = {b->nic_out[node_of(b, members[i])],
                               b->nic_in[node_of(b, members[j < n ? j : 0])]};
        double a;
        int f = flow_factor(b, flow_task(b, l, sc_tree_nic_factor(k) * S / re, from, end,
                                         p == 1 ? members[i] : -1, op, stage, chunk, mb,
                                         report_bytes), g);
        if (f < 0)
            return -1;
        if (from != start)
            set_from(b, f, from);
        for (int q = i; p > 1 && q < j; q++) {
            path(b, members[q], members[q + 1 < j ? q + 1 : i], l, &a);
            f = flow_factor(b, flow_task(b, l, 2.0 * (p - 1) / p * S / ri, from, end, members[q],
                                         op, stage, chunk, mb, report_bytes), g);
            if (f < 0)
                return -1;
            if (from != start)
                set_from(b, f, from);
        }
    }
    if (start_out)
        *start_out = start;
    return end;
}

/* An allreduce of S bytes in all (count collectives of msg bytes) among
 * members[0..n) (ascending): NCCL's tree where "auto" picks it (uses_tree, on the
 * nodes spanned and the most members a node holds), else the ring. */
static int add_allreduce(builder *b, const int *members, int n, double S, double count,
                         const int *deps, int ndeps, int *chain, int op, int stage, int chunk,
                         int mb, double report_bytes, double msg, int cold, int *start_out)
{
    int k, pmax;
    group_shape(b, members, n, &k, &pmax);
    if (k > 1 && uses_tree(b, n, pmax, msg))
        return add_tree(b, members, n, k, pmax, S, count, deps, ndeps, chain, op, stage, chunk,
                        mb, report_bytes, msg, cold, start_out);
    return add_ring(b, members, n, 2.0 * (n - 1) / n * S, 2.0 * (n - 1) * count, deps, ndeps,
                    chain, op, stage, chunk, mb, report_bytes, msg, SC_COLL_ALLREDUCE, cold,
                    start_out);
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

/* Contention: the compute streams of position p's replicas run slower
 * while the collective [start, end] of tp rank 0 runs (the other tp ranks'
 * run beside it on the same groups; engine.h, sc_sim_add_span). */
static void contend(builder *b, int p, int t, int start, int end)
{
    if (t != 0 || !(b->c->eff.overlap_slowdown > 0) || start < 0 || end < 0)
        return;
    for (int d = 0; d < b->nrep; d++)
        sc_sim_add_span(b->sim, start, end, b->grp[d * b->pp + p].stream);
}

static int dp_coll_flows(builder *b, int p, int t, sc_coll coll, double S, const int *deps,
                         int *chain, int op, int stage, int chunk, int mb, int *start_out);

/* A data-parallel collective (coll: allreduce, reduce-scatter or allgather of S
 * bytes, nccl-tests' size) of communicator (p, t) after deps[0..nrep) (one task
 * per simulated replica). Simulating every replica, it is add_allreduce or
 * add_ring over the dp members. Simulating replica 0 alone (one_replica), its
 * member stands for all: by the symmetry of the default placement every
 * replica runs the same ops at the same times, and a ring (or NCCL's tree)
 * through a node leaves it once and enters it once, so the collective's
 * inter-node traffic becomes one flow through its node's NIC out and in, and
 * (when several members share the node) its intra-node traffic one flow
 * through its GPU's ports.
 * Its replicas' compute streams run slower while it runs (contend). */
static int dp_coll(builder *b, int p, int t, sc_coll coll, double S, const int *deps,
                   int *chain, int op, int stage, int chunk, int mb, int *start_out)
{
    int s0 = -1;
    int e = dp_coll_flows(b, p, t, coll, S, deps, chain, op, stage, chunk, mb, &s0);
    contend(b, p, t, s0, e);
    if (start_out)
        *start_out = s0;
    return e;
}

/* dp_coll's tasks: its markers, latency and flows. */
static int dp_coll_flows(builder *b, int p, int t, sc_coll coll, double S, const int *deps,
                         int *chain, int op, int stage, int chunk, int mb, int *start_out)
{
    int dp = b->dp, ar = coll == SC_COLL_ALLREDUCE;
    double vol = ar ? 2.0 * (dp - 1) / dp * S : (dp - 1.0) / dp * S;
    double lat_steps = ar ? 2.0 * (dp - 1) : dp - 1.0;
    if (b->nrep == dp) {
        int *members = sc_malloc(sizeof(int) * (size_t)dp);
        if (!members)
            return fail_nomem(b), -1;
        dp_members(b, p, t, members);
        int e = ar ? add_allreduce(b, members, dp, S, 1, deps, dp, chain, op, stage, chunk, mb,
                                   S, S, 1, start_out)
                   : add_ring(b, members, dp, vol, lat_steps, deps, dp, chain, op, stage, chunk,
                              mb, S, S, coll, 1, start_out);
        sc_free(members);
        return e;
    }
    int start, end;
    if (coll_markers(b, deps, b->nrep, chain, &start, &end) < 0)
        return -1;
    int r = rank_of(b, 0, p, t), X = node_of(b, r), rpn = 0;
    for (int d = 0; d < dp; d++)
        rpn += node_of(b, rank_of(b, d, p, t)) == X;
    if (dp > 1) {
        /* data-parallel collectives run on cold buffers */
        sc_link lc = rpn < dp ? SC_LINK_INTER : SC_LINK_INTRA;
        double vols[2] = {vol, vol};
        int from, k = (dp + rpn - 1) / rpn;
        if (ar && uses_tree(b, dp, rpn, S)) { /* NCCL's tree (add_tree) */
            from = tree_latency(b, start, rpn, k, 1, 1, 1);
            vols[0] = sc_tree_nic_factor(k) * S;
            vols[1] = 2.0 * (rpn - 1) / rpn * S;
        } else {
            from = ring_latency(b, start, lat_steps, dp, k, 1, b->c->eff.alpha_s[lc], 1);
        }
        int paths[2][2] = {{b->nic_out[X], b->nic_in[X]}, {b->port_out[r], b->port_in[r]}};
        int first = 1;
        for (int q = 0; q < 2; q++) {
            if ((q == 0 && rpn == dp) || (q == 1 && rpn == 1))
                continue;
            /* one comm op per collective in the timeline; each path at its class's
             * size ramp (add_ring) */
            sc_link lk = q == 0 ? SC_LINK_INTER : SC_LINK_INTRA;
            double ramp = sc_cost_coll_ramp(b->c, lk, S) * cold_share(b, lk, 1) *
                          sc_cost_coll_share(b->c, lk, coll);
            b->nic_mult = b->tp / b->ntp; /* with ntp 1, its group's communicators' */
            int f = flow_task(b, paths[q], vols[q] / ramp, from, end, first ? r : -1, op, stage,
                              chunk, mb, S);
            b->nic_mult = 1;
            if (f < 0)
                return -1;
            first = 0;
        }
    } else {
        sc_sim_add_dep(b->sim, start, end);
    }
    if (start_out)
        *start_out = start;
    return end;
}

/* The tp collective of action a (a TP action: an allreduce, as NCCL's tree or
 * the ring (add_allreduce), or sequence parallelism's reduce-scatter or
 * all-gather, a ring of half an allreduce's volume and steps) after task
 * `after` of group g: returns the tp_done marker on the stream. */
static int tp_after(builder *b, int g, int after, const sc_action *a)
{
    int d = g / b->pp, p = g % b->pp, s0;
    tp_members(b, d, p, b->members);
    double S = a->bytes;
    int count = b->lw->info[a->stage].tp_count;
    double msg = sc_lowered_tp_msg(b->lw, a);
    /* as a ring: an allreduce moves twice a reduce-scatter's (or all-gather's)
     * volume in twice its steps */
    int ar = a->coll == SC_COLL_ALLREDUCE, n = b->tp;
    double vol = (ar ? 2.0 : 1.0) * (n - 1) / n * S, steps = (ar ? 2.0 : 1.0) * (n - 1) * count;
    int *chain = &b->grp[g].tp_chain, end;
    if (b->ntp == 1)
        end = ring_one(b, b->members, n, vol, steps, &after, 1, chain, a->op, a->stage,
                       a->chunk, a->mb, S, msg, a->coll, &s0);
    else if (ar)
        end = add_allreduce(b, b->members, n, S, count, &after, 1, chain, a->op, a->stage,
                            a->chunk, a->mb, S, msg, 0, &s0);
    else
        end = add_ring(b, b->members, n, vol, steps, &after, 1, chain, a->op, a->stage,
                       a->chunk, a->mb, S, msg, a->coll, 0, &s0);
    if (!a->waits) {
        /* moved beside the compute (tp communication overlap, lower.h): no
         * stream task waits for it; the stream's compute runs slower while
         * it moves (the cluster's overlap_slowdown, as beside a dp collective) */
        if (end >= 0 && b->c->eff.overlap_slowdown > 0)
            sc_sim_add_span(b->sim, s0, end, b->grp[g].stream);
        return end;
    }
    int done = stream_task(b, g, 0, BUSY_NONE, a->op, a->stage, a->chunk, a->mb);
    tinfo *i = info_at(b, done);
    if (!i || end < 0)
        return -1;
    i->wait = WAIT_TP;
    i->wait_s = s0;
    i->wait_e = end;
    sc_sim_add_dep(b->sim, end, done);
    return done;
}

/* ---- build: the lowered step as engine tasks --------------------------------- */

/* deps[d] = replica d's task of action `act` of position p (-1 for none). */
static const int *replica_tasks(builder *b, int p, int act)
{
    for (int d = 0; d < b->nrep; d++)
        b->deps[d] = act >= 0 ? b->grp[d * b->pp + p].task[act] : -1;
    return b->deps;
}

/* The gathers of one schedule op [i, j) of position p: a ring per tp rank
 * over the dp communicator; ends[t] and *start receive the markers of the
 * one the stream waits for (lower.h). */
static void build_gathers(builder *b, int p, int i, int j, int *ends, int *start)
{
    const sc_action *acts = b->lw->pos[p].acts;
    for (int a = i; a < j && !b->st; a++) {
        if (acts[a].kind != SC_ACT_GATHER)
            continue;
        double P = acts[a].bytes;
        for (int t = 0; t < b->ntp && !b->st; t++) {
            int s0;
            int e = dp_coll(b, p, t, SC_COLL_ALLGATHER, P, replica_tasks(b, p, acts[a].after),
                            &b->comm[p * b->tp + t].z3_chain, SC_OP_DP_ALLGATHER,
                            acts[a].stage, acts[a].chunk, acts[a].mb, &s0);
            if (!acts[a].waits)
                continue;
            ends[t] = e;
            if (t == 0)
                *start = s0;
        }
    }
}

/* The stream tasks of one schedule op [i, j) of position p for replica d;
 * the op's first compute waits for its gathers (ends[0..tp), when ng). */
static void build_stream(builder *b, int d, int p, int i, int j, const int *ends, int ng,
                         int gstart)
{
    const sc_action *acts = b->lw->pos[p].acts;
    sgroup *G = &b->grp[d * b->pp + p];
    int g = d * b->pp + p;
    for (int k = i; k < j && !b->st; k++) {
        const sc_action *a = &acts[k];
        switch (a->kind) {
        case SC_ACT_COMPUTE: {
            int busy = a->op == SC_OP_RECOMPUTE ? BUSY_RECOMPUTE : BUSY_COMPUTE;
            int t = stream_task(b, g, a->seconds, busy, a->op, a->stage, a->chunk, a->mb);
            tinfo *ti = info_at(b, t);
            if (!ti)
                return;
            tlinfo *tx = tl_at(b, t);
            if (tx)
                tx->is_piece = a->piece > 0;
            if (ng) {
                for (int q = 0; q < b->ntp; q++)
                    sc_sim_add_dep(b->sim, ends[q], t);
                ti->wait = WAIT_DP;
                ti->wait_s = gstart;
                ti->wait_e = ends[b->ntp - 1];
                ng = 0;
            }
            G->task[k] = t;
            break;
        }
        case SC_ACT_TP:
            G->task[k] = tp_after(b, g, a->after >= 0 ? G->task[a->after] : -1, a);
            break;
        case SC_ACT_SEND: {
            /* the sender's host time, if any, holds its compute stream */
            sc_link lk = link_class(b, rank_of(b, d, p, 0), rank_of(b, d, a->peer, 0));
            double h = b->c->eff.p2p_host_s_per_byte[lk] * a->bytes;
            if (h > 0)
                G->task[k] = stream_task(b, g, h, BUSY_HOST, a->op, a->stage, a->chunk, a->mb);
            if (b->cfg->no_overlap_p2p_comm) {
                /* a blocking send: the stream waits for it (build_messages) */
                int t = stream_task(b, g, 0, BUSY_NONE, a->op, a->stage, a->chunk, a->mb);
                tinfo *ti = info_at(b, t);
                if (!ti)
                    return;
                ti->wait = WAIT_PP;
                G->task[k] = t;
            }
            break;
        }
        case SC_ACT_RECV:
        case SC_ACT_CP: {
            /* the stream waits for the message (build_messages), or for its cp
             * group's ring (build_cp) */
            int t = stream_task(b, g, 0, BUSY_NONE, a->op, a->stage, a->chunk, a->mb);
            tinfo *ti = info_at(b, t);
            if (!ti)
                return;
            ti->wait = a->kind == SC_ACT_RECV ? WAIT_PP : WAIT_CP;
            G->task[k] = t;
            break;
        }
        default: /* collectives across replicas: build_reduces, build_gathers */
            break;
        }
    }
}

/* The key/value ring of action a (tp rank t of position p) with replica 0
 * standing for its whole cp group (one_replica): every member runs the same
 * ops at the same times (the causal chunks are balanced), so the ring ends
 * when replica 0's hops end. Each member sends (cp - 1)/cp·S to the next and
 * receives as much from the one before, so replica 0's share of the ring is
 * one flow through its own ports out and in (its send, and the image of the
 * one it receives) when its node holds several members, and one through its
 * node's NICs out and in (the ring leaves and enters each node once) when the
 * group spans nodes: dp_coll's symmetry, at add_ring's latency and rates.
 * Returns the end marker (the start in *start_out); -1 on failure. */
static int cp_ring_one(builder *b, int p, int t, const sc_action *a, int dep, int *start_out)
{
    int cp = b->cfg->cp, *mem = b->members;
    for (int c = 0; c < cp; c++) /* ascending with c (build_cp) */
        mem[c] = rank_of(b, c, p, t);
    int start, end;
    if (coll_markers(b, &dep, 1, NULL, &start, &end) < 0)
        return -1;
    double S = a->bytes, vol = (cp - 1.0) / cp * S, msg = S / cp, awarm = 0;
    int r = mem[0], X = node_of(b, r), rpn = 0, k, pmax;
    for (int c = 0; c < cp; c++) {
        int l[2];
        double al;
        path(b, mem[c], mem[(c + 1) % cp], l, &al);
        awarm = fmax(awarm, al);
        rpn += node_of(b, mem[c]) == X;
    }
    group_shape(b, mem, cp, &k, &pmax);
    double g = coll_factor(b, k, msg, 0);
    int from = ring_latency(b, start, cp - 1.0, cp, k, 0, awarm, g);
    int paths[2][2] = {{b->nic_out[X], b->nic_in[X]}, {b->port_out[r], b->port_in[r]}};
    for (int q = 0, first = 1; q < 2; q++) {
        if ((q == 0 && rpn == cp) || (q == 1 && rpn == 1))
            continue;
        sc_link lk = q == 0 ? SC_LINK_INTER : SC_LINK_INTRA;
        double rate = sc_cost_coll_ramp(b->c, lk, msg) * hop_share(b, lk, RING_P2P);
        b->nic_mult = b->tp / b->ntp; /* with ntp 1, its group's tp rings' */
        int f = flow_factor(b, flow_task(b, paths[q], vol / (rate * g), from, end, first ? r : -1,
                                         a->op, a->stage, a->chunk, a->mb, S),
                            g);
        b->nic_mult = 1;
        if (f < 0)
            return -1;
        if (from != start)
            set_from(b, f, from);
        first = 0;
    }
    if (start_out)
        *start_out = start;
    return end;
}

/* Group G's SC_ACT_CP task (action k) waits for the ring [s0, e] of tp rank t
 * and its stream runs slower while the ring moves (overlap_slowdown); tp
 * rank 0's ring is the wait the breakdown counts. */
static void cp_wait(builder *b, const sgroup *G, int k, int s0, int e, int t)
{
    int done = G->task[k];
    sc_sim_add_dep(b->sim, e, done);
    if (b->c->eff.overlap_slowdown > 0)
        sc_sim_add_span(b->sim, s0, e, G->stream);
    tinfo *ti = info_at(b, done);
    if (ti && t == 0) {
        ti->wait_s = s0;
        ti->wait_e = e;
    }
}

/* The key/value rings of one schedule op [i, j) of position p (context
 * parallelism): per data-parallel index and tp rank, a ring over the cp
 * replicas d·cp .. d·cp + cp - 1, from each member's `after` task; each
 * member's stream waits for it (its SC_ACT_CP task) and runs slower while
 * it moves (overlap_slowdown: NCCL's send and receive kernels take SMs).
 * With replica 0 standing for all (nrep 1), cp_ring_one. */
static void build_cp(builder *b, int p, int i, int j)
{
    const sc_action *acts = b->lw->pos[p].acts;
    int cp = b->cfg->cp, groups = b->nrep / cp; /* the cp groups simulated */
    for (int k = i; k < j && !b->st; k++) {
        const sc_action *a = &acts[k];
        if (a->kind != SC_ACT_CP)
            continue;
        double S = a->bytes;
        for (int t = 0; !groups && t < b->ntp && !b->st; t++) {
            const sgroup *G = &b->grp[p];
            int s0, e = cp_ring_one(b, p, t, a, a->after >= 0 ? G->task[a->after] : -1, &s0);
            if (e < 0) {
                fail_nomem(b);
                return;
            }
            cp_wait(b, G, k, s0, e, t);
        }
        for (int dd = 0; dd < groups && !b->st; dd++)
            for (int t = 0; t < b->tp && !b->st; t++) {
                /* the members ascend with c: the cp index sits in the tp place
                 * of the placement (sc_step_rank), whatever its order */
                for (int c = 0; c < cp; c++) {
                    const sgroup *G = &b->grp[(dd * cp + c) * b->pp + p];
                    b->members[c] = rank_of(b, dd * cp + c, p, t);
                    b->deps[c] = a->after >= 0 ? G->task[a->after] : -1;
                }
                /* sends and receives (Transformer Engine's
                 * flash_attn_p2p_communicate), at the sends' share of each link */
                int s0, e = add_ring(b, b->members, cp, (cp - 1.0) / cp * S, cp - 1.0, b->deps,
                                     cp, NULL, a->op, a->stage, a->chunk, a->mb, S, S / cp,
                                     RING_P2P, 0, &s0);
                if (e < 0)
                    return;
                for (int c = 0; c < cp; c++)
                    cp_wait(b, &b->grp[(dd * cp + c) * b->pp + p], k, s0, e, t);
            }
    }
}

/* The gradient buckets of one schedule op [i, j) of position p, per tp
 * rank, across the replicas. */
static void build_reduces(builder *b, int p, int i, int j)
{
    const sc_action *acts = b->lw->pos[p].acts;
    for (int t = 0; t < b->ntp && !b->st; t++) {
        dcomm *C = &b->comm[p * b->tp + t];
        for (int k = i; k < j && !b->st; k++) {
            const sc_action *a = &acts[k];
            if (a->kind != SC_ACT_REDUCE)
                continue;
            int s0;
            dp_coll(b, p, t, a->coll, a->bytes, replica_tasks(b, p, a->after), &C->dp_chain,
                    a->op, a->stage, a->chunk, a->mb, &s0);
            if (a->piece == 0 && (a->mb < 0 || C->dp_first < 0))
                C->dp_first = s0;
        }
    }
}

/* Phase 1: the schedule's ops, position by position, op by op: gathers,
 * then each replica's stream tasks, then the buckets across replicas. */
static void build_ops(builder *b)
{
    int *ends = sc_malloc(sizeof(int) * (size_t)b->tp);
    if (!ends) {
        fail_nomem(b);
        return;
    }
    for (int p = 0; p < b->pp && !b->st; p++) {
        const sc_lowered_pos *L = &b->lw->pos[p];
        for (int i = 0, j; i < L->n && !b->st; i = j) {
            for (j = i + 1; j < L->n && L->acts[j].sched_op == L->acts[i].sched_op; j++)
                ;
            if (L->acts[i].sched_op < 0)
                continue; /* step-level: build_ties, build_optimizer */
            int gstart = -1, ng = 0;
            for (int k = i; k < j; k++)
                ng |= L->acts[k].kind == SC_ACT_GATHER;
            build_gathers(b, p, i, j, ends, &gstart);
            for (int d = 0; d < b->nrep && !b->st; d++)
                build_stream(b, d, p, i, j, ends, ng, gstart);
            if (b->cfg->cp > 1)
                build_cp(b, p, i, j);
            build_reduces(b, p, i, j);
        }
    }
    sc_free(ends);
}

/* Phase 2: pipeline messages, a flow per tp rank from each SEND's producer
 * to the matching RECV's marker. */
static void build_messages(builder *b)
{
    for (int d = 0; d < b->nrep && !b->st; d++)
        for (int p = 0; p < b->pp && !b->st; p++) {
            const sc_lowered_pos *L = &b->lw->pos[p];
            for (int i = 0; i < L->n && !b->st; i++) {
                const sc_action *a = &L->acts[i];
                if (a->kind != SC_ACT_SEND)
                    continue;
                int recv = b->grp[d * b->pp + a->peer].task[a->match];
                int prod = b->grp[d * b->pp + p].task[a->after];
                int end = sc_sim_add_marker(b->sim, NULL), first_flow = -1;
                for (int t = 0; t < b->ntp; t++) {
                    int from = rank_of(b, d, p, t), to = rank_of(b, d, a->peer, t), l[2];
                    double al;
                    path(b, from, to, l, &al);
                    /* links run at the collectives' share (bw_eff); a message
                     * reaching another share (p2p_bw_eff) costs the link
                     * bytes in proportion */
                    sc_link lk = link_class(b, from, to);
                    /* a measured size factor (sc_size_curve) divides its whole time */
                    double g = sc_size_curve_at(&b->c->eff.p2p_curve[lk], a->bytes);
                    double wire = a->bytes / sc_cost_p2p_share(b->c, lk) / g;
                    b->nic_mult = b->img ? b->img[p * b->tp + t] : 1;
                    int f = flow_factor(b, flow_task(b, l, wire, prod, end, from, a->op, a->stage,
                                                     a->chunk, a->mb, a->bytes), g);
                    b->nic_mult = 1;
                    if (f < 0)
                        return;
                    if (first_flow < 0)
                        first_flow = f;
                }
                if (b->cfg->no_overlap_p2p_comm) {
                    int sw = b->grp[d * b->pp + p].task[i];
                    tinfo *si = info_at(b, sw);
                    if (!si || end < 0)
                        return;
                    si->wait_s = first_flow;
                    si->wait_e = end;
                    sc_sim_add_dep(b->sim, end, sw);
                }
                tinfo *ri = info_at(b, recv);
                if (!ri || end < 0)
                    return;
                ri->wait_s = first_flow;
                ri->wait_e = end;
                tlinfo *rx = tl_at(b, recv);
                if (rx)
                    rx->bytes = a->bytes;
                sc_sim_add_dep(b->sim, end, recv);
            }
        }
}

/* Phase 3: each tie's allreduce among the positions holding it, per
 * replica and tp rank, after each member's grad-final op. */
static void build_ties(builder *b)
{
    const sc_lowered *lw = b->lw;
    for (int k = 0; k < lw->n_ties && !b->st; k++) {
        const sc_tie *T = &lw->ties[k];
        int n = T->npos;
        double G = T->bytes;
        for (int d = 0; d < b->nrep && !b->st; d++)
            for (int t = 0; t < b->ntp && !b->st; t++) {
                /* positions ascend and so do their ranks along the placement
                 * order; sort anyway, keeping deps aligned */
                for (int q = 0; q < n; q++) {
                    int p = T->pos[q];
                    b->members[q] = rank_of(b, d, p, t);
                    b->deps[q] = b->grp[d * b->pp + p].task[lw->pos[p].acts[T->act[q]].after];
                }
                for (int a = 1; a < n; a++)
                    for (int z = a; z > 0 && b->members[z - 1] > b->members[z]; z--) {
                        int x1 = b->members[z], x2 = b->deps[z];
                        b->members[z] = b->members[z - 1];
                        b->deps[z] = b->deps[z - 1];
                        b->members[z - 1] = x1;
                        b->deps[z - 1] = x2;
                    }
                int s0, at = (k * b->nrep + d) * b->tp + t;
                b->nic_mult = b->img ? b->img[T->pos[0] * b->tp + t] : 1;
                b->tie_end[at] = add_allreduce(b, b->members, n, G, 1, b->deps, n, NULL,
                                               SC_OP_DP_ALLREDUCE, -1, -1, -1, G, G, 1, &s0);
                b->nic_mult = 1;
                b->tie_start[at] = s0;
            }
    }
}

/* Phase 4: per position, the optimizer after its reductions (the chain's
 * end stands for every REDUCE of a communicator: they run in order) and
 * ties, then ZeRO 1/2's parameter gather, which the stream waits for. */
static void build_optimizer(builder *b, int p)
{
    const sc_lowered_pos *L = &b->lw->pos[p];
    const sc_action *opt = NULL, *params = NULL;
    for (int i = 0; i < L->n; i++) {
        if (L->acts[i].kind == SC_ACT_COMPUTE && L->acts[i].op == SC_OP_OPTIMIZER)
            opt = &L->acts[i];
        if (L->acts[i].kind == SC_ACT_PARAMS)
            params = &L->acts[i];
    }
    assert(opt);
    int tp = b->tp, ntp = b->ntp;
    dcomm *C0 = &b->comm[p * tp];
    for (int d = 0; d < b->nrep && !b->st; d++) {
        int g = d * b->pp + p;
        int t = stream_task(b, g, opt->seconds, BUSY_OPT, SC_OP_OPTIMIZER, p, -1, -1);
        tinfo *ti = info_at(b, t);
        if (!ti)
            return;
        b->grp[g].opt = t;
        int reduces = 0, tie_s = -1, tie_e = -1;
        for (int k = 0; k < opt->ndeps; k++) {
            const sc_action *a = &L->acts[L->deps[opt->dep0 + k]];
            reduces |= a->kind == SC_ACT_REDUCE;
            if (a->kind != SC_ACT_TIED)
                continue;
            for (int q = 0; q < ntp; q++) {
                int at = (a->peer * b->nrep + d) * tp + q;
                sc_sim_add_dep(b->sim, b->tie_end[at], t);
                if (tie_e < 0) {
                    tie_s = b->tie_start[at];
                    tie_e = b->tie_end[at];
                }
            }
        }
        for (int q = 0; q < ntp && reduces; q++)
            sc_sim_add_dep(b->sim, b->comm[p * tp + q].dp_chain, t);
        if (reduces || tie_e >= 0) {
            ti->wait = WAIT_DP;
            ti->wait_s = C0->dp_first >= 0 ? C0->dp_first : tie_s;
            ti->wait_e = C0->dp_chain >= 0 ? C0->dp_chain : tie_e;
        }
    }
    if (!params || b->st)
        return;
    int s0 = -1, *ends = sc_malloc(sizeof(int) * (size_t)tp);
    if (!ends) {
        fail_nomem(b);
        return;
    }
    double P = params->bytes;
    for (int q = 0; q < ntp; q++) {
        for (int d = 0; d < b->nrep; d++)
            b->deps[d] = b->grp[d * b->pp + p].opt;
        int st0;
        ends[q] = dp_coll(b, p, q, SC_COLL_ALLGATHER, P, b->deps, &b->comm[p * tp + q].dp_chain,
                          SC_OP_DP_ALLGATHER, p, -1, -1, &st0);
        if (s0 < 0)
            s0 = st0;
    }
    for (int d = 0; d < b->nrep && !b->st; d++) {
        int t = stream_task(b, d * b->pp + p, 0, BUSY_NONE, SC_OP_DP_ALLGATHER, p, -1, -1);
        tinfo *ti = info_at(b, t);
        if (!ti)
            break;
        for (int k = 0; k < ntp; k++)
            sc_sim_add_dep(b->sim, ends[k], t);
        ti->wait = WAIT_DP;
        ti->wait_s = s0;
        ti->wait_e = ends[ntp - 1];
    }
    sc_free(ends);
}

/* The lowered step as tasks, in four phases so that every dependency names
 * a task that already exists. */
static sc_status build(builder *b)
{
    build_ops(b);
    build_messages(b);
    build_ties(b);
    for (int p = 0; p < b->pp && !b->st; p++)
        build_optimizer(b, p);
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
    double W, G, O;
    sc_cost_states(b->dt, b->cfg->grad_reduce_in_fp32, b->cfg->zero, b->dp, params, &W, &G, &O);
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
    for (int t = 0; t < ntask && t < b->ninit; t++) {
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
            else if (ti->wait == WAIT_CP)
                gb[g].cp += exposed;
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
        int g = d % b->nrep * b->pp + p; /* one replica (or cp group) stands for all */
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
        avg.cp += gb[g].cp / groups;
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
    sc_status st = sc_sched_peak_inflight(b->lw->sched, peak);
    r->fits = 1;
    for (int p = 0; p < b->pp && !st; p++) {
        /* the position's leaves, all chunks */
        int n = 0;
        for (int c = 0; c < b->v; c++) {
            int s = c * b->pp + p;
            n += b->lw->part.first[s + 1] - b->lw->part.first[s];
        }
        sc_module **mods = sc_malloc(sizeof *mods * (size_t)(n ? n : 1));
        if (!mods) {
            st = fail_nomem(b);
            break;
        }
        n = 0;
        for (int c = 0; c < b->v; c++) {
            int s = c * b->pp + p;
            for (int i = b->lw->part.first[s]; i < b->lw->part.first[s + 1]; i++)
                mods[n++] = b->m->leaves[i];
        }
        /* in flight, in microbatches: a token slice holds its share of one
         * (counted at the longest slice's) */
        int inflight = (peak[p] + b->v - 1) / b->v;
        if (b->lw->k > 1) {
            int mx = 0;
            for (int j = 0; j < b->lw->k; j++)
                mx = b->lw->slice_len[j] > mx ? b->lw->slice_len[j] : mx;
            inflight = (int)ceil((double)peak[p] * mx / b->m->seq_len);
        }
        sc_mem_cfg mc = {b->dt,  b->tp,          b->dp,   cfg->zero, cfg->mbs,
                         inflight, cfg->recompute, cfg->sp, cfg->attn, cfg->cp, b->m->has_layers,
                         cfg->grad_reduce_in_fp32};
        st = sc_cost_memory(b->c, mods, n, &mc, &r->mem[p], b->err);
        /* copies of shared groups owned elsewhere (a tied head's embedding) */
        for (int g = 0; g < b->m->n_groups && !st; g++) {
            const sc_model_group *G = &b->m->groups[g];
            double here = 0, all = 0;
            int member = 0;
            for (int k = 0; k < G->n; k++) {
                const sc_module *y = b->m->leaves[G->leaves[k]];
                double py = y->params / (y->has_tp && y->tp_shardable ? b->tp : 1);
                all += py;
                if (sc_partition_stage_of(&b->lw->part, G->leaves[k]) % b->pp == p) {
                    here += py;
                    member = 1;
                }
            }
            if (member && all > here)
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
    r->global_batch = (double)cfg->dp * cfg->m * cfg->mbs; /* cp ranks share samples */
    r->seq_len = b->m->seq_len;
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
    for (int task = 0; task < ntask && task < b->ninit; task++) {
        const tinfo *ti = &b->info[task];
        const tlinfo *tx = &b->tl[task];
        sc_tl_op op = {tx->op, tx->stage, tx->chunk, tx->mb, SC_STREAM_COMPUTE, tx->bytes,
                       sc_sim_task_start(sim, task), sc_sim_task_end(sim, task)};
        if (ti->group >= 0) {
            if (ti->busy == BUSY_NONE || ti->busy == BUSY_HOST)
                continue; /* waits and send time are implied by the gaps */
            if (tx->is_piece) /* a later bucket piece of one backward: extend the op */
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
        } else if (tx->rank >= 0) {
            op.stream = SC_STREAM_COMM;
            if (tx->from >= 0)
                op.start = sc_sim_task_start(sim, tx->from);
            if (b->ntp == b->tp) {
                sc_timeline_add(tl, tx->rank, &op);
                continue;
            }
            /* tp rank 0 stood for its group (ntp 1): the op is each member's */
            int d, p, t;
            sc_step_coords(b->cfg, tx->rank, &d, &p, &t);
            tp_members(b, d, p, members);
            for (int q = 0; q < b->tp; q++)
                sc_timeline_add(tl, members[q], &op);
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

sc_stage_cfg sc_step_stage_cfg(const sc_model *m, const sc_step_cfg *cfg)
{
    return (sc_stage_cfg){.dtype = m->dtype,
                          .tp = cfg->tp,
                          .mbs = cfg->mbs,
                          .recompute = cfg->recompute,
                          .bucket_bytes = cfg->bucket_bytes,
                          .sp = cfg->sp,
                          .attn = cfg->attn,
                          .zero = cfg->zero,
                          .dp = sc_step_dpc(cfg),
                          .tp_overlap = cfg->tp_comm_overlap,
                          .cp = cfg->cp,
                          .grad_reduce_fp32 = cfg->grad_reduce_in_fp32,
                          .fp8 = cfg->fp8};
}

sc_status sc_step_stage_infos(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                              sc_stage_info *info, sc_error *err)
{
    sc_status st = sc_step_check(m, c, cfg, err);
    if (st)
        return st;
    sc_partition own = {0};
    const sc_partition *part = cfg->partition;
    if (!part) {
        st = sc_partition_uniform(m, cfg->pp * cfg->v, &own, err);
        if (st)
            return st;
        part = &own;
    }
    sc_stage_cfg sc = sc_step_stage_cfg(m, cfg);
    st = sc_cost_stage(c, m, part, &sc, info, err);
    sc_partition_free(&own);
    return st;
}

double sc_step_peak_mem(const sc_step_result *r)
{
    double p = 0;
    for (int i = 0; i < r->pp; i++)
        p = fmax(p, r->mem[i].total);
    return p;
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

/* Whether tp rank 0 can stand for its tp group's communication when one
 * replica stands for all: tp >= 2 and every group (replica 0's, and so each
 * by the placement's symmetry) in one node, where its ring runs through
 * its members' own ports. */
static int tp_stands_one(const sc_step_cfg *cfg, int gpn)
{
    if (cfg->tp < 2 || gpn < 1)
        return 0;
    for (int p = 0; p < cfg->pp; p++) {
        int X = sc_step_rank(cfg, 0, p, 0) / gpn;
        for (int t = 1; t < cfg->tp; t++)
            if (sc_step_rank(cfg, 0, p, t) / gpn != X)
                return 0;
    }
    return 1;
}

/* The replicas and tp ranks whose work is built: with one_replica, one
 * replica standing for all (its cp peers too, cp_ring_one) when dp is the
 * outermost placement, else every one of dp·cp; and where that leaves one
 * replica, tp rank 0 standing for its group where tp_stands_one, else every
 * tp rank. */
static void stand_ins(const sc_step_cfg *cfg, int gpn, int *nrep, int *ntp)
{
    *nrep = cfg->one_replica && placement_dp_outermost(cfg->placement) ? 1 : sc_step_dpc(cfg);
    *ntp = cfg->one_replica && *nrep == 1 && tp_stands_one(cfg, gpn) ? 1 : cfg->tp;
}

static void builder_free(builder *b)
{
    sc_sim_free(b->sim);
    for (int g = 0; b->grp && g < b->nrep * b->pp; g++)
        sc_free(b->grp[g].task);
    void *arrs[] = {b->port_out, b->port_in, b->nic_out, b->nic_in, b->link_bw, b->grp,
                    b->comm, b->tie_start, b->tie_end, b->members, b->deps, b->info, b->tl,
                    b->img};
    for (size_t i = 0; i < SC_ARRAY_LEN(arrs); i++)
        sc_free(arrs[i]);
    if (b->rng)
        gsl_rng_free(b->rng);
}

/* The builder's state for lw: every array allocated and set to "none". */
static sc_status builder_init(builder *b, const sc_model *m, const sc_cluster *c,
                              const sc_step_cfg *cfg, const sc_lowered *lw, sc_error *err)
{
    *b = (builder){.m = m, .c = c, .cfg = cfg, .err = err, .lw = lw};
    b->dp = sc_step_dpc(cfg); /* the replicas: data-parallel ranks with their cp peers */
    b->tp = cfg->tp;
    b->pp = cfg->pp;
    b->v = cfg->v;
    b->S = cfg->pp * cfg->v;
    b->ranks = b->dp * b->tp * b->pp;
    b->gpn = c->gpus_per_node;
    stand_ins(cfg, b->gpn, &b->nrep, &b->ntp);
    b->nodes = (b->ranks + b->gpn - 1) / b->gpn;
    b->dt = m->dtype;
    int groups = b->nrep * b->pp, maxn = b->dp;
    if (maxn < b->tp)
        maxn = b->tp;
    if (maxn < b->pp)
        maxn = b->pp;
    size_t nt = (size_t)(lw->n_ties ? lw->n_ties : 1) * (size_t)b->nrep * (size_t)b->tp;
    b->port_out = sc_malloc(sizeof(int) * (size_t)b->ranks);
    b->port_in = sc_malloc(sizeof(int) * (size_t)b->ranks);
    b->nic_out = sc_malloc(sizeof(int) * (size_t)b->nodes);
    b->nic_in = sc_malloc(sizeof(int) * (size_t)b->nodes);
    b->link_bw = sc_malloc(sizeof(double) * (size_t)(2 * b->ranks + 2 * b->nodes));
    b->grp = sc_calloc((size_t)groups, sizeof *b->grp);
    b->comm = sc_malloc(sizeof *b->comm * (size_t)b->pp * (size_t)b->tp);
    b->tie_start = sc_malloc(sizeof(int) * nt);
    b->tie_end = sc_malloc(sizeof(int) * nt);
    b->members = sc_malloc(sizeof(int) * (size_t)(maxn + 1));
    b->deps = sc_malloc(sizeof(int) * (size_t)(maxn + 1));
    if (!b->port_out || !b->port_in || !b->nic_out || !b->nic_in || !b->link_bw || !b->grp ||
        !b->comm || !b->tie_start || !b->tie_end || !b->members || !b->deps)
        return sc_err(err, SC_ENOMEM, "sim: out of memory");
    for (int g = 0; g < groups; g++) {
        const sc_lowered_pos *L = &lw->pos[g % b->pp];
        sgroup *G = &b->grp[g];
        *G = (sgroup){-1, -1, -1, sc_malloc(sizeof(int) * (size_t)(L->n ? L->n : 1))};
        if (!G->task)
            return sc_err(err, SC_ENOMEM, "sim: out of memory");
        for (int i = 0; i < L->n; i++)
            G->task[i] = -1;
    }
    for (int i = 0; i < b->pp * b->tp; i++)
        b->comm[i] = (dcomm){-1, -1, -1};
    b->nic_mult = 1;
    if (b->nrep < b->dp || b->ntp < b->tp) {
        b->img = sc_malloc(sizeof(int) * (size_t)b->pp * (size_t)b->tp);
        if (!b->img)
            return sc_err(err, SC_ENOMEM, "sim: out of memory");
        for (int p = 0; p < b->pp; p++)
            for (int t = 0; t < b->ntp; t++) {
                int X = node_of(b, sc_step_rank(cfg, 0, p, t)), n = 0;
                for (int d = 0; d < b->dp; d++)
                    for (int u = b->ntp == 1 ? 0 : t; u < (b->ntp == 1 ? b->tp : t + 1); u++)
                        n += node_of(b, sc_step_rank(cfg, d, p, u)) == X;
                b->img[p * b->tp + t] = n;
            }
    }
    if (cfg->jitter > 0) {
        b->rng = gsl_rng_alloc(gsl_rng_mt19937);
        if (!b->rng)
            return sc_err(err, SC_ENOMEM, "sim: out of memory");
        gsl_rng_set(b->rng, cfg->seed);
    }
    return sc_sim_new(&b->sim, err);
}

/* Sizes the engine's task and dependency arrays, and the builder's task
 * info, for the step about to be built, so that they do not grow by copying
 * (at 16,384 GPUs the copies and their page faults were a fifth of the run).
 * Measured on gpt-13b and gpt-175b at tp 8 (bench/sim_bench.c): 5.6-6.2
 * tasks and 9.6-10.4 dependencies per lowered action, a tp ring adding a
 * flow and two dependencies per member; the estimate adds 10%. A short
 * estimate only means the arrays grow as before. */
static void reserve(builder *b)
{
    double acts = 0;
    for (int g = 0; g < b->nrep * b->pp; g++)
        acts += b->lw->pos[g % b->pp].n;
    double t = acts * (2.2 + 0.55 * b->tp), e = acts * (2.2 + 1.1 * b->tp);
    if (t > INT_MAX / 2 || e > INT_MAX / 2)
        return;
    sc_sim_reserve(b->sim, (int)t, (int)e);
    if (t >= 1)
        info_room(b, (int)t - 1);
}

/* The engine's links (a port out and in per GPU, a NIC out and in per node)
 * and one compute stream per simulated group. */
static void add_resources(builder *b)
{
    const sc_cluster *c = b->c;
    double bw_intra = c->intra.bytes_per_s * c->eff.bw_eff[SC_LINK_INTRA];
    double bw_inter = c->inter.nics_per_node * c->inter.nic_bytes_per_s * c->eff.bw_eff[SC_LINK_INTER];
    char name[48];
    for (int r = 0; r < b->ranks; r++) {
        snprintf(name, sizeof name, "gpu%d.out", r);
        b->port_out[r] = sc_sim_add_link(b->sim, name, bw_intra, c->eff.alpha_s[SC_LINK_INTRA]);
        snprintf(name, sizeof name, "gpu%d.in", r);
        b->port_in[r] = sc_sim_add_link(b->sim, name, bw_intra, 0);
        b->link_bw[b->port_out[r] >= 0 ? b->port_out[r] : 0] = bw_intra;
        b->link_bw[b->port_in[r] >= 0 ? b->port_in[r] : 0] = bw_intra;
    }
    b->nic0 = sc_sim_link_count(b->sim);
    for (int n = 0; n < b->nodes; n++) {
        double bw = bw_inter > 0 ? bw_inter : bw_intra; /* one node without a network */
        snprintf(name, sizeof name, "node%d.nic.out", n);
        b->nic_out[n] = sc_sim_add_link(b->sim, name, bw, c->eff.alpha_s[SC_LINK_INTER]);
        snprintf(name, sizeof name, "node%d.nic.in", n);
        b->nic_in[n] = sc_sim_add_link(b->sim, name, bw, 0);
        b->link_bw[b->nic_out[n] >= 0 ? b->nic_out[n] : 0] = bw;
        b->link_bw[b->nic_in[n] >= 0 ? b->nic_in[n] : 0] = bw;
    }
    for (int g = 0; g < b->nrep * b->pp; g++) {
        snprintf(name, sizeof name, "dp%d.pp%d", g / b->pp, g % b->pp);
        b->grp[g].stream = sc_sim_add_resource(b->sim, name);
        /* compute beside a data-parallel collective (dp_coll's spans) */
        if (c->eff.overlap_slowdown > 0 && b->grp[g].stream >= 0)
            sc_sim_set_slowdown(b->sim, b->grp[g].stream, c->eff.overlap_slowdown);
    }
}

void sc_step_size_estimate(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                           sc_step_size *out)
{
    /* mb: the ops a chunk runs per kind, one per microbatch, or per token slice
     * with slices (each slice is lowered as a microbatch of its own) */
    double dp = sc_step_dpc(cfg), tp = cfg->tp, pp = cfg->pp, v = cfg->v;
    double mb = (double)cfg->m * (cfg->slices > 1 ? cfg->slices : 1);
    int nrep_i, ntp_i;
    stand_ins(cfg, c->gpus_per_node, &nrep_i, &ntp_i); /* what builder_init builds */
    double nrep = nrep_i, ntp = ntp_i;
    int split = cfg->schedule && !strcmp(cfg->schedule, "zb-h1");
    int z3 = cfg->zero == 3 && dp > 1, dpc = dp > 1;
    double w, g, o;
    sc_cost_state_bytes(m->dtype, &w, &g, &o);
    double grad = sc_model_totals(m).params * g / tp / (pp * v);
    double K = dpc ? sc_cost_bucket_count(grad, cfg->bucket_bytes) : 0;
    /* per microbatch and chunk of a position */
    double comp = 2 + split + (cfg->recompute != SC_RECOMPUTE_NONE);
    double tpa = cfg->tp > 1 ? 2 + (cfg->recompute == SC_RECOMPUTE_FULL) : 0;
    double sends = pp * v > 1 ? 2 : 0, recvs = sends;
    /* ZeRO 3: two gathers a microbatch; ZeRO 2 and 3: every backward cut into K
     * pieces, each reduce-scattered (the grad-final buckets among them) */
    int zrs = cfg->zero >= 2 && dp > 1;
    /* PyTorch FSDP's ZeRO 2: one gather a microbatch (before F), none after the
     * optimizer; zg: the step's first gather is two actions */
    int fz2 = sc_lower_fsdp_zero2(cfg, c), zg = z3 || fz2;
    double gathers = z3 ? 2 : fz2 ? 1 : 0, z3red = zrs ? K : 0;
    comp += zrs ? K - 1 : 0;
    /* context parallelism: a ring after F, B and a recompute (cpa a microbatch),
     * a stream task per replica, and per cp group and tp rank 2 markers, a
     * latency task and cp flows (cpf a replica); with one replica standing
     * for all, its own 2 flows at most (cp_ring_one) */
    double cp = cfg->cp > 1 ? cfg->cp : 0;
    double cpf = nrep == dp ? 1 : 2, cpg = nrep == dp ? cp : 1;
    double cpa = cp ? 2 + (cfg->recompute != SC_RECOMPUTE_NONE) : 0;
    double per_mb = comp + tpa + sends + recvs + gathers + z3red + cpa;
    double dpflows = nrep == dp ? dp : 2;
    double kf = zrs ? 0 : K; /* the grad-final op's buckets beyond per_mb */
    double actions = pp * v * (mb * per_mb + 2 * kf) + (3 + zg) * pp;
    /* dp collectives (ZeRO 3's first gather is two: its first unit, then the rest) */
    double coll = pp * v * (mb * (gathers + z3red) + kf) + zg * pp;
    double flows = nrep * pp * v * mb * (tpa * ntp + sends * ntp + cpa * ntp * cpf) +
                   coll * ntp * dpflows + nrep * pp * ntp * 2; /* ties */
    int z12 = (cfg->zero == 1 || cfg->zero == 2) && dp > 1 && !fz2;
    double ties = m->n_groups > 0 && pp * v > 1 ? m->n_groups * nrep * ntp * (3 + pp) : 0;
    /* a tp collective: 2 markers, a latency task, tp flows and the stream's
     * wait; with ntp 1 (ring_one) a marker, one flow and the wait */
    double tpc = ntp == 1 ? 3 : 4 + tp;
    double tasks = nrep * pp * v *
                       (mb * (comp + recvs + tpa * tpc + sends * (ntp + 2) +
                              cpa * (1 + (cp ? ntp * (3 + cpf * cpg) / cpg : 0))) +
                        kf) +
                   coll * ntp * (3 + dpflows) + nrep * pp * (1 + z12) +
                   (z12 ? pp * ntp * (3 + dpflows) : 0) + ties;
    double tl = 0;
    if (cfg->want_timeline) {
        /* each simulated rank shows its ops; a dp collective simulated for
         * one replica standing for all (one_replica) shows on its ranks only */
        double dpacts = coll + (z12 ? pp : 0);
        tl = (actions - dpacts) * nrep * tp + dpacts * tp * (nrep == dp ? nrep : 1);
    }
    out->actions = actions;
    out->tasks = tasks;
    out->flows = flows;
    out->timeline_ops = tl;
    /* the peak: simulating (the lowered step, the engine, the task info and
     * the timeline's ops), or writing the timeline afterwards (its ops and
     * its text, ~200 bytes an op in a buffer that grows by doubling); plus
     * links, stage tables and the model: a few MiB */
    double sim_phase = actions * 96 + tasks * 200 + flows * 64 + tl * 72;
    double out_phase = tl * (72 + 400);
    out->bytes = (sim_phase > out_phase ? sim_phase : out_phase) + 16.0 * 1048576;
}

sc_status sc_step_simulate(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                           sc_step_result **out, sc_error *err)
{
    *out = NULL;
    sc_lowered *lw = NULL;
    if (cfg->max_mem_bytes > 0) {
        sc_status cst = sc_step_check(m, c, cfg, err);
        if (cst)
            return cst;
        sc_step_size z;
        sc_step_size_estimate(m, c, cfg, &z);
        if (z.bytes > cfg->max_mem_bytes) {
            char tl[64] = "";
            if (z.timeline_ops > 0)
                snprintf(tl, sizeof tl, ", %.3g timeline ops", z.timeline_ops);
            char b1[32], b2[32];
            return sc_err(err, SC_EINVAL,
                          "sim: simulating this step needs about %s (%.3g actions, %.3g "
                          "engine tasks%s), above the limit of %s (--max-mem); %sfewer "
                          "microbatches or the planner's analytical estimate fit such sizes",
                          sc_fmt_bytes(z.bytes, 1, b1), z.actions, z.tasks, tl,
                          sc_fmt_bytes(cfg->max_mem_bytes, 1, b2),
                          cfg->one_replica ? "" : "--one-replica, ");
        }
    }
    sc_status st = sc_lower(m, c, cfg, &lw, err);
    if (st)
        return st;
    builder b;
    st = builder_init(&b, m, c, cfg, lw, err);
    if (st) {
        builder_free(&b);
        sc_lower_free(lw);
        return st;
    }
    add_resources(&b);
    reserve(&b);
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
    sc_lower_free(lw);
    if (st) {
        sc_step_result_free(r);
        return st;
    }
    *out = r;
    return SC_OK;
}

void sc_step_breakdown_json(cJSON *parent, const sc_step_breakdown *b, int cp, int *oom)
{
    cJSON *bd = sc_jadd_obj(parent, "breakdown", oom);
    sc_jadd_num(bd, "compute_s", b->compute, oom);
    sc_jadd_num(bd, "recompute_s", b->recompute, oom);
    sc_jadd_num(bd, "optimizer_s", b->optimizer, oom);
    sc_jadd_num(bd, "tp_comm_s", b->tp, oom);
    if (cp > 1)
        sc_jadd_num(bd, "cp_comm_s", b->cp, oom);
    sc_jadd_num(bd, "pp_comm_s", b->pp, oom);
    sc_jadd_num(bd, "dp_comm_s", b->dp, oom);
    sc_jadd_num(bd, "bubble_s", b->bubble, oom);
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
    if (cfg->cp > 1)
        sc_jadd_num(c, "cp", cfg->cp, &oom);
    sc_jadd_num(c, "tp", cfg->tp, &oom);
    sc_jadd_num(c, "pp", cfg->pp, &oom);
    sc_jadd_num(c, "v", cfg->v, &oom);
    sc_jadd_num(c, "microbatches", cfg->m, &oom);
    sc_jadd_num(c, "mbs", cfg->mbs, &oom);
    sc_jadd_str(c, "schedule", cfg->schedule, &oom);
    sc_jadd_num(c, "zero", cfg->zero, &oom);
    sc_jadd_str(c, "recompute", sc_recompute_name(cfg->recompute), &oom);
    sc_jadd_bool(c, "sp", cfg->sp, &oom);
    if (cfg->tp_comm_overlap)
        sc_jadd_bool(c, "tp_comm_overlap", 1, &oom);
    if (cfg->overlap_param_gather)
        sc_jadd_bool(c, "overlap_param_gather", 1, &oom);
    if (cfg->no_overlap_p2p_comm)
        sc_jadd_bool(c, "overlap_p2p_comm", 0, &oom);
    if (cfg->fp8)
        sc_jadd_bool(c, "fp8", 1, &oom);
    sc_jadd_str(c, "attention", sc_attn_name(cfg->attn), &oom);
    if (cfg->slices > 1) {
        cJSON *a = sc_jadd_arr(c, "slices", &oom);
        for (int k = 0; a && k < cfg->slices; k++)
            sc_jpush_num(a, cfg->slice_len ? cfg->slice_len[k] : r->seq_len / cfg->slices, &oom);
    }
    sc_jadd_str(c, "placement", cfg->placement ? cfg->placement : "tp,pp,dp", &oom);
    sc_jadd_num(j, "step_time_s", r->step_time_s, &oom);
    sc_step_breakdown_json(j, &r->breakdown, cfg->cp, &oom);
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
    double comm = (k->tp + k->cp + k->pp + k->dp) / r->step_time_s;
    double sdc = f->compute[dt].n > 0 ? f->compute[dt].rel_sd : 0, sdl = 0;
    for (int l = 0; l < SC_LINK_N; l++)
        if (f->link[l].n > 0 && f->link[l].rel_sd > sdl)
            sdl = f->link[l].rel_sd;
    return 1.96 * r->step_time_s * sqrt(busy * busy * sdc * sdc + comm * comm * sdl * sdl);
}
