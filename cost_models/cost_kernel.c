/* cost_kernel.c - kernel-level compute time: a leaf's kernel list (kernel.h)
 * timed on the cluster's GEMM model (cluster.h, sc_cluster_gemm).
 *
 * Per kernel, on one rank of a tp group of t, a microbatch of b samples:
 *   t_kernel = kernel_s + max(t_compute, bytes / (hbm * memory_bw))
 *   gemm:  t_compute = waves * 2 tm tn (K + k_half) / (peak/sms * eff_max * r)
 *          with waves = ceil(batch ceil(M/tm) ceil(N/tn) / sms), the fastest
 *          of the largest tile and its halvings (r = sqrt(reuse ratio), see
 *          cluster.h); bytes = d * batch * (M K + K N + M N).
 *          Backward: the data-gradient GEMM (batch, M, K, N) and the
 *          weight-gradient GEMM (batch, K, N, M), each timed the same way,
 *          their compute scaled by efficiency.bwd_factor.
 *   mem:   t_compute = 0, or its counted FLOPs (a stencil) at the fp32
 *          (vector) peak times efficiency.compute.fp32.eff_max, twice that
 *          backward; bytes forward, bwd_bytes backward.
 * Both compute terms run at `sustained` of their burst rate (cluster.h).
 *   flash: t_compute = executed FLOPs / (peak * flash_fwd|flash_bwd * shape),
 *          shape = N / (N + flash_s0) (without the mask flash_full times
 *          N / (N + flash_s0_full)): short sequences run slower; times
 *          flash_hd64 at head size K <= 64, linear to 1 at 128; executed
 *          = 4 batch M N K (half when causal), 2.5 x that backward, K
 *          the size the kernel runs the head as (flash_head_sizes: the
 *          smallest built size at least K, padded with zeros); bytes
 *          d * batch * (2 M K + 2 N K) forward (Q, K, V in, O out), twice
 *          that backward (and their gradients). Priced for a step the
 *          executor measured (efficiency.gemm.flash_gemms): the two batched
 *          GEMMs it runs instead, (batch, M, N, K) then (batch, M, K, N),
 *          and their backward GEMMs, as above.
 * Shapes are scaled first by tp (the kernel's tp field: ceil(dim / t)) and
 * then by the microbatch (its samples field). Under sequence parallelism a
 * "seq" kernel runs on s/t tokens.
 */
#include "cost.h"
#include "cost_int.h"

#include <math.h>
#include <string.h>

static double sustained(const sc_cluster *c);

int sc_cost_uses_kernels(const sc_cluster *c, const sc_module *mod)
{
    return mod->n_kernels > 0 && c->eff.gemm.sms > 0;
}

void sc_cost_kernel_shape(const sc_kernel *k, const sc_compute_cfg *cc, double *B, double *M,
                          double *N, double *K)
{
    double t = cc->tp > 1 ? cc->tp : 1;
    double b = k->batch, m = k->m, n = k->n, kk = k->k;
    switch (k->tp) {
    case SC_KTP_N: n = ceil(n / t); break;
    case SC_KTP_K: kk = ceil(kk / t); break;
    case SC_KTP_BATCH: b = ceil(b / t); break;
    case SC_KTP_SEQ:
        if (cc->sp)
            m = ceil(m / t);
        break;
    default: break;
    }
    /* a token slice or a cp rank's share: queries (m of every token-sized
     * kernel) and keys */
    double qf = sc_cost_q_share(cc->q_frac, cc->cp), kf = cc->kv_frac > 0 ? cc->kv_frac : 1;
    if (qf != 1 || kf != 1) {
        m = ceil(m * qf);
        if (k->op == SC_KOP_FLASH || k->kv == 'n')
            n = ceil(n * kf);
        else if (k->kv == 'k')
            kk = ceil(kk * kf);
    }
    if (k->grow_batch)
        b *= cc->mbs;
    else
        m *= cc->mbs;
    *B = b;
    *M = m;
    *N = n;
    *K = kk;
}

/* Compute seconds of one GEMM (batch, M, N, K) on the tile-and-wave model. */
static double gemm_compute(const sc_cluster *c, sc_dtype dt, double B, double M, double N,
                           double K)
{
    const sc_cluster_gemm *g = &c->eff.gemm;
    double eff = dt == SC_FP8 && g->eff_max_fp8 > 0 ? g->eff_max_fp8 : g->eff_max;
    double per_sm = c->gpu.peak_flops[dt] / g->sms * eff * sustained(c);
    /* each candidate tile's 2·tm·tn / r, which depends on the tile only:
     * computed once per tile shape (the planner times millions of GEMMs) */
    static __thread double cache_tm, cache_tn, work[9];
    if (cache_tm != g->tile_m || cache_tn != g->tile_n) {
        double reuse_max = g->tile_m * g->tile_n / (g->tile_m + g->tile_n);
        for (int i = 0; i < 9; i++) {
            double tm = g->tile_m / (1 << (i / 3)), tn = g->tile_n / (1 << (i % 3));
            work[i] = tm < 16 || tn < 16 ? 0
                                         : 2 * tm * tn / sqrt(tm * tn / (tm + tn) / reuse_max);
        }
        cache_tm = g->tile_m;
        cache_tn = g->tile_n;
    }
    double best = HUGE_VAL, kk = (K + g->k_half) / per_sm;
    for (int i = 0; i < 9; i++) {
        if (work[i] == 0)
            continue;
        double tm = g->tile_m / (1 << (i / 3)), tn = g->tile_n / (1 << (i % 3));
        double waves = ceil(B * ceil(M / tm) * ceil(N / tn) / g->sms);
        double t = waves * work[i] * kk;
        if (t < best)
            best = t;
    }
    return best;
}

/* The sustained-clock factor of compute-bound kernels (1 when absent). */
static double sustained(const sc_cluster *c)
{
    return c->eff.gemm.sustained > 0 ? c->eff.gemm.sustained : 1;
}

static double roof(const sc_cluster *c, double compute_s, double bytes)
{
    double tm = bytes / (c->gpu.hbm_bytes_per_s * c->eff.memory_bw);
    return c->eff.gemm.kernel_s + (compute_s > tm ? compute_s : tm);
}

/* A GEMM in dtype dt; f8: an fp8 GEMM of fp8 training (sc_compute_cfg fp8),
 * its operands read at 1 byte, its output written at 2 (dt the model's). */
static double gemm_time8(const sc_cluster *c, sc_dtype dt, int f8, double B, double M,
                         double N, double K, double scale)
{
    double d = sc_dtype_bytes(dt), din = f8 ? 1 : d;
    return roof(c, scale * gemm_compute(c, f8 ? SC_FP8 : dt, B, M, N, K),
                B * (din * (M * K + K * N) + d * M * N));
}

static double gemm_time(const sc_cluster *c, sc_dtype dt, double B, double M, double N,
                        double K, double scale)
{
    return gemm_time8(c, dt, 0, B, M, N, K, scale);
}

/* A GEMM's forward (bwd 0) or its two backward GEMMs, the data gradient
 * (batch, M, K, N) and the weight gradient (batch, K, N, M), their compute
 * scaled by the backward factor. */
static double gemm_pass8(const sc_cluster *c, sc_dtype dt, int f8, double B, double M, double N,
                         double K, int bwd)
{
    if (!bwd)
        return gemm_time8(c, dt, f8, B, M, N, K, 1);
    double bf = c->eff.bwd_factor > 0 ? c->eff.bwd_factor : 1;
    return gemm_time8(c, dt, f8, B, M, K, N, bf) + gemm_time8(c, dt, f8, B, K, N, M, bf);
}

static double gemm_pass(const sc_cluster *c, sc_dtype dt, double B, double M, double N, double K,
                        int bwd)
{
    return gemm_pass8(c, dt, 0, B, M, N, K, bwd);
}

double sc_cost_gemm_time(const sc_cluster *c, sc_dtype dt, double B, double M, double N,
                         double K, double scale)
{
    if (c->eff.gemm.sms > 0)
        return gemm_time(c, dt, B, M, N, K, scale);
    return sc_cost_call_time(c, dt, scale * 2 * B * M * N * K,
                             sc_dtype_bytes(dt) * B * (M * K + K * N + M * N));
}

double sc_cost_pass_time(const sc_cluster *c, double bytes)
{
    return c->eff.gemm.sms > 0 ? roof(c, 0, bytes) : sc_cost_call_time(c, SC_FP32, 0, bytes);
}

/* A mem kernel's scale on one rank for a microbatch: samples, its tp share
 * and a token slice's fraction. */
static double mem_scale(const sc_kernel *k, const sc_compute_cfg *cc)
{
    double t = cc->tp > 1 ? cc->tp : 1;
    double share = k->tp == SC_KTP_SHARD || (k->tp == SC_KTP_SEQ && cc->sp) ? t : 1;
    double qf = sc_cost_q_share(cc->q_frac, cc->cp), kf = cc->kv_frac > 0 ? cc->kv_frac : 1;
    double sl = k->scores ? qf * kf : qf;
    return sl * cc->mbs / share;
}

double sc_cost_kernel_bytes(const sc_kernel *k, const sc_compute_cfg *cc, int bwd)
{
    if (k->op != SC_KOP_MEM)
        return 0;
    return (bwd ? k->bwd_bytes : k->bytes) * mem_scale(k, cc);
}

/* A stencil's compute (mem kernel with FLOPs): on the vector units, not
 * the tensor cores, at fp32's peak and efficiency ceiling. */
static double mem_compute(const sc_cluster *c, const sc_kernel *k, const sc_compute_cfg *cc,
                          int bwd)
{
    double peak = c->gpu.peak_flops[SC_FP32], e = c->eff.eff_max[SC_FP32];
    if (!(k->flops > 0) || !(peak > 0))
        return 0;
    double bf = bwd && c->eff.bwd_factor > 0 ? c->eff.bwd_factor : 1;
    return (bwd ? 2 * bf : 1) * k->flops * mem_scale(k, cc) /
           (peak * (e > 0 ? e : 1) * sustained(c));
}

/* A fused attention kernel's rate over N keys of head size K relative to
 * flash_fwd|bwd: N / (N + s0), s0 the causal or the unmasked one (the
 * backward's own where set: flash_s0_bwd, flash_s0_full_bwd), times
 * flash_full without the mask, times flash_hd64 at K <= 64, linear up to
 * 1 at K = 128 (cluster.h; fitted in scripts/fit_flash.py). */
static double flash_shape(const sc_cluster_gemm *g, double N, double K, int causal, int bwd)
{
    double s0 = causal ? g->flash_s0 : g->flash_s0_full;
    double s0b = causal ? g->flash_s0_bwd : g->flash_s0_full_bwd;
    if (bwd && s0b > 0) /* the backward's own fall */
        s0 = s0b;
    double full = !causal && g->flash_full > 0 ? g->flash_full : 1;
    double w = K >= 128 ? 0 : K <= 64 ? 1 : (128 - K) / 64;
    double head = g->flash_hd64 > 0 ? 1 + (g->flash_hd64 - 1) * w : 1;
    return full * head * (s0 > 0 ? N / (N + s0) : 1);
}

/* The head size a fused attention kernel runs a head of size K as: the
 * smallest of the sizes it is built for (flash_head_sizes) at least K, its
 * extra columns zeros; K itself without a list or above its largest. */
static double flash_head(const sc_cluster_gemm *g, double K)
{
    for (int i = 0; i < g->n_flash_heads; i++)
        if (g->flash_heads[i] >= K)
            return g->flash_heads[i];
    return K;
}

/* Transformer Engine's userbuffer tp communication overlap runs a layer's
 * tensor-parallel GEMMs in chunks of their token rows (M), each chunk beside
 * the exchange of the next; TE's defaults (initialize_ub in
 * transformer_engine/pytorch/module/base.py, the configuration Megatron-LM's
 * --tp-comm-overlap and NeMo use unless told otherwise):
 *   forward: a column-parallel GEMM (qkv, fc1: tp "n") after the all-gather,
 *            "ring_exchange", tp chunks; a row-parallel one (out_proj, fc2:
 *            tp "k") before the reduce-scatter, "pipeline", 4 chunks;
 *   backward: a row-parallel GEMM's data gradient "ring_exchange", tp chunks;
 *            the column-parallel data gradients and every weight gradient
 *            whole ("bulk", "external": the collective beside a whole GEMM).
 * Each chunk is timed as its own GEMM (tiles, waves, kernel_s): small
 * chunks fill the GPU's waves less well than the whole. The SMs the
 * collectives take are efficiency.overlap_slowdown's (the simulator's). */
#define SC_UB_PIPELINE_SPLITS 4

/* Whether mod's tensor-parallel GEMMs run under TE's userbuffer overlap:
 * cc asks for it (tp >= 2 with sp) and mod is a transformer layer's
 * attention or MLP (TE's modules; the LM head is Megatron's own
 * ColumnParallelLinear, whole). */
static int te_module(const sc_module *mod)
{
    return mod && mod->kind &&
           (!strcmp(mod->kind, "attention") || !strcmp(mod->kind, "cross_attention") ||
            !strcmp(mod->kind, "mlp"));
}

static int ub_module(const sc_module *mod, const sc_compute_cfg *cc)
{
    return cc->tp_overlap && cc->sp && cc->tp > 1 && te_module(mod);
}

/* A weight GEMM: a linear layer's (samples multiply its tokens), not a
 * batched product of activations. */
static int weight_gemm(const sc_kernel *k)
{
    return k->op == SC_KOP_GEMM && !k->grow_batch;
}

int sc_cost_fp8_gemm(const sc_module *mod, const sc_kernel *k, const sc_compute_cfg *cc)
{
    return cc->fp8 && weight_gemm(k) && te_module(mod);
}

/* The cast kernels of an fp8 GEMM (batch B, M x N x K on this rank) for a
 * pass: forward, its input cast to fp8 with the transpose its weight
 * gradient reads, 4 bytes an element of B·M·K (read 2, write 1 + 1), or a
 * transpose alone, 2 bytes an element, where the input is the leaf's own
 * (lead: a norm's output, which TE's LayerNormLinear writes in fp8 itself);
 * under sp a column-parallel GEMM's input is cast before its all-gather, on
 * the rank's 1/t of the tokens. Backward: the output gradient cast and
 * transposed, 4 bytes an element of B·M·N. One kernel each. */
static double fp8_casts(const sc_cluster *c, const sc_kernel *k, const sc_compute_cfg *cc,
                        double B, double M, double N, double K, int lead, int bwd)
{
    if (bwd)
        return roof(c, 0, 4 * B * M * N);
    double rows = cc->sp && cc->tp > 1 && k->tp == SC_KTP_N ? ceil(M / cc->tp) : M;
    return roof(c, 0, (lead ? 2 : 4) * B * rows * K);
}

/* The chunks of the rule above for kernel k of a ub module (ub 1). */
static void ub_splits(const sc_kernel *k, const sc_compute_cfg *cc, int ub, int *fwd,
                      int *dgrad)
{
    *fwd = *dgrad = 1;
    if (!ub || !weight_gemm(k) ||
        (k->tp != SC_KTP_N && k->tp != SC_KTP_K))
        return;
    *fwd = k->tp == SC_KTP_N ? cc->tp : SC_UB_PIPELINE_SPLITS;
    *dgrad = k->tp == SC_KTP_K ? cc->tp : 1;
}

void sc_cost_kernel_splits(const sc_module *mod, const sc_kernel *k, const sc_compute_cfg *cc,
                           int *fwd, int *dgrad)
{
    ub_splits(k, cc, ub_module(mod, cc), fwd, dgrad);
}

int sc_cost_gemm_chunks(double M, int splits, double *rows)
{
    int n = splits <= 1 || M < 2 ? 1 : splits > M ? (int)M : splits;
    *rows = ceil(M / n);
    return n;
}

double sc_cost_gemm_chunks_time(const sc_cluster *c, sc_dtype dt, double B, double M, double N,
                                double K, double scale, int splits)
{
    double rows;
    int n = sc_cost_gemm_chunks(M, splits, &rows);
    return n * sc_cost_gemm_time(c, dt, B, rows, N, K, scale);
}

/* The same for an fp8 GEMM (f8) or one in dt (kernel level). */
static double chunks_time8(const sc_cluster *c, sc_dtype dt, int f8, double B, double M,
                           double N, double K, double scale, int splits)
{
    double rows;
    int n = sc_cost_gemm_chunks(M, splits, &rows);
    return n * gemm_time8(c, dt, f8, B, rows, N, K, scale);
}

/* Kernel k's time for a pass; ub: its module runs TE's tp overlap; f8: it
 * is an fp8 GEMM (sc_cost_fp8_gemm), lead: reading its leaf's input. */
static double kernel_time(const sc_cluster *c, const sc_kernel *k, const sc_compute_cfg *cc,
                          int bwd, int ub, int f8, int lead)
{
    sc_dtype dt = cc->dtype;
    double B, M, N, K;
    sc_cost_kernel_shape(k, cc, &B, &M, &N, &K);
    double bf = bwd && c->eff.bwd_factor > 0 ? c->eff.bwd_factor : 1;
    double d = sc_dtype_bytes(dt);
    int fs, ds;
    ub_splits(k, cc, ub, &fs, &ds);
    switch (k->op) {
    case SC_KOP_GEMM: {
        double cast = f8 ? fp8_casts(c, k, cc, B, M, N, K, lead, bwd) : 0;
        if (fs > 1 || ds > 1) {
            if (!bwd)
                return cast + chunks_time8(c, dt, f8, B, M, N, K, 1, fs);
            /* data gradient (batch, M, K, N), weight gradient (batch, K, N, M) */
            return cast + chunks_time8(c, dt, f8, B, M, K, N, bf, ds) +
                   gemm_time8(c, dt, f8, B, K, N, M, bf);
        }
        return cast + gemm_pass8(c, dt, f8, B, M, N, K, bwd);
    }
    case SC_KOP_MEM: {
        double bytes = sc_cost_kernel_bytes(k, cc, bwd), fl = mem_compute(c, k, cc, bwd);
        if (!(bytes > 0) && !(fl > 0)) /* a pass without work: no kernel (forward-only) */
            return 0;
        return roof(c, fl, bytes);
    }
    case SC_KOP_FLASH: {
        const sc_cluster_gemm *g = &c->eff.gemm;
        if (g->flash_gemms) /* as the executor runs it: S = Q K^T, then S V, whole */
            return gemm_pass(c, dt, B, M, N, K, bwd) + gemm_pass(c, dt, B, M, K, N, bwd);
        /* causal: the keys after each query are skipped; a slice of M
         * queries over N >= M keys runs M·N - M²/2 pairs (M²/2 when whole);
         * a context-parallel rank's M = N/cp queries, two chunks placed for
         * balance, run half their M x N rectangle, 1/cp of the whole's */
        int cp = cc->cp > 1 ? cc->cp : 1;
        double pairs = !k->causal ? M * N
                       : cp > 1   ? M * N / 2
                       : N >= M   ? M * N - M * M / 2
                                  : M * N / 2;
        /* a padded head runs the built size's FLOPs at its rate; Q, K, V
         * and O move at the head's own size */
        double Kr = flash_head(g, K);
        double f = 4 * B * pairs * Kr;
        double io = d * B * (2 * M * K + 2 * N * K);
        double peak = c->gpu.peak_flops[dt] * sustained(c);
        /* under cp: one kernel per key chunk passed around the group, each
         * over N / cp keys */
        double Nk = N / cp, more = (cp - 1) * g->kernel_s;
        if (!bwd)
            return more +
                   roof(c, f / (peak * flash_shape(g, Nk, Kr, k->causal, 0) * g->flash_fwd), io);
        return more + roof(c,
                           bf * 2.5 * f /
                               (peak * flash_shape(g, Nk, Kr, k->causal, 1) * g->flash_bwd),
                           2 * io);
    }
    default: return 0;
    }
}

double sc_cost_kernel_time(const sc_cluster *c, const sc_kernel *k, const sc_compute_cfg *cc,
                           int bwd)
{
    return kernel_time(c, k, cc, bwd, 0, 0, 0);
}

/* Whether kernel i of mod reads the leaf's input: a weight GEMM with no
 * other kind of kernel before it. */
static int reads_input(const sc_module *mod, int i)
{
    for (int j = 0; j <= i; j++)
        if (!weight_gemm(&mod->kernels[j]))
            return 0;
    return 1;
}

double sc_cost_kernel_time_in(const sc_cluster *c, const sc_module *mod, int i,
                              const sc_compute_cfg *cc, int bwd)
{
    const sc_kernel *k = &mod->kernels[i];
    return kernel_time(c, k, cc, bwd, 0, sc_cost_fp8_gemm(mod, k, cc), reads_input(mod, i));
}

double sc_cost_kernels_wgrad_time(const sc_cluster *c, const sc_module *mod,
                                  const sc_compute_cfg *cc)
{
    double w = 0, bf = c->eff.bwd_factor > 0 ? c->eff.bwd_factor : 1;
    for (int i = 0; i < mod->n_kernels; i++) {
        const sc_kernel *k = &mod->kernels[i];
        if (!weight_gemm(k) || !sc_kernel_runs(k, cc->attn))
            continue;
        double B, M, N, K;
        sc_cost_kernel_shape(k, cc, &B, &M, &N, &K);
        /* dB = A^T dC */
        w += gemm_time8(c, cc->dtype, sc_cost_fp8_gemm(mod, k, cc), B, K, N, M, bf);
    }
    return w;
}

void sc_cost_kernels_time(const sc_cluster *c, const sc_module *mod, const sc_compute_cfg *cc,
                          double *fwd_s, double *bwd_s, double *recompute_s)
{
    double f = 0, b = 0, r = 0;
    int ub = ub_module(mod, cc);
    for (int i = 0; i < mod->n_kernels; i++) {
        const sc_kernel *k = &mod->kernels[i];
        if (!sc_kernel_runs(k, cc->attn))
            continue;
        int f8 = sc_cost_fp8_gemm(mod, k, cc), lead = f8 && reads_input(mod, i);
        double kf = kernel_time(c, k, cc, 0, ub, f8, lead);
        f += kf;
        b += kernel_time(c, k, cc, 1, ub, f8, lead);
        /* selective recompute re-runs the core attention: what unfused
         * attention stores, or the fused kernel's forward */
        if (k->attn == SC_ATTN_UNFUSED || k->op == SC_KOP_FLASH)
            r += kf;
    }
    if (fwd_s)
        *fwd_s = f;
    if (bwd_s)
        *bwd_s = b;
    if (recompute_s)
        *recompute_s = r;
}
