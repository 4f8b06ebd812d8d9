/* test_kernel.c - the kernel-level compute model: the leaf kernel lists the
 * generators write, the GEMM tile-and-wave model against the public points
 * the presets were fitted to, memory-bound and flash kernels, and the
 * refusals of bad lists. */
#include <math.h>

#include "check.h"
#include "cost.h"
#include "json.h"
#include "model.h"
#include "calibrate.h"

#define CHECK_SAME(a, b) CHECK_STR_HAS(a, b); CHECK(strlen(a) == strlen(b))

static sc_cluster preset(const char *name)
{
    sc_cluster c;
    memset(&c, 0, sizeof c);
    sc_cluster_preset_get(name, &c, NULL);
    return c;
}

static double gemm_s(const sc_cluster *c, double m, double n, double k)
{
    sc_kernel g = sc_kernel_gemm("g", 1, m, n, k, SC_KTP_NONE, 0, SC_ATTN_ANY);
    sc_compute_cfg cc = {SC_BF16, 1, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    return sc_cost_kernel_time(c, &g, &cc, 0);
}

/* One batched GEMM (batch, m, n, k) as the kernel model times it. */
static double gemm_s_b(const sc_cluster *c, double b, double m, double n, double k)
{
    sc_kernel g = sc_kernel_gemm("g", b, m, n, k, SC_KTP_NONE, 1, SC_ATTN_ANY);
    sc_compute_cfg cc = {SC_BF16, 1, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    return sc_cost_kernel_time(c, &g, &cc, 0);
}

/* The presets give the published maximum achievable matmul rates at the
 * published shapes (S. Bekman, ml-engineering, MAMF table), the one point
 * per GPU each was fitted to. */
TEST(kernel_presets_reproduce_public_gemm_points)
{
    struct {
        const char *preset;
        double m, n, k, tflops;
    } pts[] = {{"dgx-a100-80g", 6912, 16384, 2048, 267.9},
               {"p4d.24xlarge", 6912, 16384, 2048, 267.9},
               {"dgx-h100", 6144, 17920, 2816, 792.1},
               {"h200-sxm-1", 11264, 19712, 1536, 821.0}};
    for (size_t i = 0; i < SC_ARRAY_LEN(pts); i++) {
        sc_cluster c = preset(pts[i].preset);
        REQUIRE(c.eff.gemm.sms > 0);
        /* MAMF is a burst: the model's burst rate is without the sustained factor */
        CHECK(c.eff.gemm.sustained > 0.8 && c.eff.gemm.sustained < 1);
        c.eff.gemm.sustained = 1;
        double t = gemm_s(&c, pts[i].m, pts[i].n, pts[i].k) - c.eff.gemm.kernel_s;
        double rate = 2 * pts[i].m * pts[i].n * pts[i].k / t / 1e12;
        CHECK_NEAR(rate / pts[i].tflops, 1, 0.005);
    }
    /* V100 has no public point here: no kernel model, leaves costed whole */
    sc_cluster v = preset("p3.16xlarge");
    CHECK(v.eff.gemm.sms == 0);
}

/* One tile more than the GPU has SMs costs a second wave: the time jumps
 * while the FLOPs barely move (wave quantisation); a thin K runs below the
 * ceiling (the tile's fixed prologue). */
TEST(kernel_gemm_wave_and_tile_quantisation)
{
    sc_cluster c = preset("dgx-a100-80g");
    double n = 1536;               /* 12 columns of 128 */
    double m = 256 * 9;            /* 9 rows of 256: 108 tiles, one wave on 108 SMs */
    double full = gemm_s(&c, m, n, 4096), over = gemm_s(&c, m + 1, n, 4096);
    CHECK(over / full > 1.5);
    /* rate at a large aligned shape is far above the rate at one extra row */
    double big = gemm_s(&c, 8192, 8192, 8192);
    double r_big = 2 * 8192.0 * 8192 * 8192 / big, r_over = 2 * (m + 1) * n * 4096 / over;
    CHECK(r_big > 1.4 * r_over);
    /* thin K: the rate falls */
    double thin = gemm_s(&c, 8192, 8192, 128);
    CHECK(2 * 8192.0 * 8192 * 128 / thin < 0.75 * r_big);
    /* a tiny GEMM is bound by the kernel's fixed cost */
    CHECK(gemm_s(&c, 16, 16, 16) < 2 * c.eff.gemm.kernel_s);
    CHECK(gemm_s(&c, 16, 16, 16) >= c.eff.gemm.kernel_s);
}

/* Backward = data gradient (M, K, N) + weight gradient (K, N, M); for a
 * cube both have the forward's shape. */
TEST(kernel_gemm_backward_is_two_gemms)
{
    sc_cluster c = preset("dgx-h100");
    sc_compute_cfg cc = {SC_BF16, 1, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    sc_kernel g = sc_kernel_gemm("g", 1, 4096, 4096, 4096, SC_KTP_NONE, 0, SC_ATTN_ANY);
    double f = sc_cost_kernel_time(&c, &g, &cc, 0), b = sc_cost_kernel_time(&c, &g, &cc, 1);
    CHECK_NEAR(b / f, 2, 1e-9);
    sc_kernel r = sc_kernel_gemm("r", 1, 2048, 512, 8192, SC_KTP_NONE, 0, SC_ATTN_ANY);
    double rb = sc_cost_kernel_time(&c, &r, &cc, 1);
    double want = gemm_s(&c, 2048, 8192, 512) + gemm_s(&c, 8192, 512, 2048);
    CHECK_NEAR(rb, want, 1e-15);
}

/* tp divides the kernel's own dimension; sp divides "seq" kernels; the
 * microbatch multiplies M (linear layers) or batch (attention GEMMs). */
TEST(kernel_tp_sp_and_microbatch_scaling)
{
    sc_cluster c = preset("dgx-a100-80g");
    sc_compute_cfg t1 = {SC_BF16, 1, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    sc_compute_cfg t8 = {SC_BF16, 8, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    sc_compute_cfg t8sp = {SC_BF16, 8, 1, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    sc_compute_cfg mb4 = {SC_BF16, 1, 0, 4, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    sc_kernel col = sc_kernel_gemm("fc1", 1, 2048, 8 * 6144, 12288, SC_KTP_N, 0, SC_ATTN_ANY);
    CHECK_NEAR(sc_cost_kernel_time(&c, &col, &t8, 0), gemm_s(&c, 2048, 6144, 12288), 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &col, &mb4, 0), gemm_s(&c, 4 * 2048, 8 * 6144, 12288),
               1e-15);
    sc_kernel row = sc_kernel_gemm("fc2", 1, 2048, 12288, 8 * 6144, SC_KTP_K, 0, SC_ATTN_ANY);
    CHECK_NEAR(sc_cost_kernel_time(&c, &row, &t8, 0), gemm_s(&c, 2048, 12288, 6144), 1e-15);
    /* memory-bound: kernel_s + bytes / (hbm * memory_bw) */
    double bw = c.gpu.hbm_bytes_per_s * c.eff.memory_bw, ks = c.eff.gemm.kernel_s;
    sc_kernel ln = sc_kernel_mem("norm", 1e8, 1.5e8, SC_KTP_SEQ, SC_ATTN_ANY);
    CHECK_NEAR(sc_cost_kernel_time(&c, &ln, &t1, 0), ks + 1e8 / bw, 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &ln, &t1, 1), ks + 1.5e8 / bw, 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &ln, &t8, 0), ks + 1e8 / bw, 1e-15);   /* whole */
    CHECK_NEAR(sc_cost_kernel_time(&c, &ln, &t8sp, 0), ks + 1e8 / 8 / bw, 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &ln, &mb4, 0), ks + 4e8 / bw, 1e-15);
    sc_kernel sm = sc_kernel_mem("softmax", 8e8, 1.2e9, SC_KTP_SHARD, SC_ATTN_UNFUSED);
    CHECK_NEAR(sc_cost_kernel_time(&c, &sm, &t8, 0), ks + 1e8 / bw, 1e-15);
    /* attention GEMMs: heads split by tp, samples multiply the batch */
    sc_kernel sc = sc_kernel_gemm("scores", 96, 2048, 2048, 128, SC_KTP_BATCH, 1,
                                  SC_ATTN_UNFUSED);
    sc_kernel sc12 = sc_kernel_gemm("x", 12, 2048, 2048, 128, SC_KTP_NONE, 0, SC_ATTN_ANY);
    CHECK_NEAR(sc_cost_kernel_time(&c, &sc, &t8, 0), sc_cost_kernel_time(&c, &sc12, &t1, 0),
               1e-15);
}

/* Flash: no s² traffic, causal runs half the FLOPs, the backward 2.5x. */
/* Transformer Engine's tp communication overlap (plan tp_comm_overlap under
 * sp): a layer's tp GEMMs run in chunks of their token rows as TE's default
 * configuration splits them (forward: column-parallel tp chunks, row-parallel
 * 4; backward: the row-parallel data gradient tp chunks, everything else
 * whole), each chunk its own GEMM; the LM head and other leaves stay whole,
 * and nothing changes without sp. */
TEST(kernel_tp_overlap_chunks_te_gemms)
{
    sc_cluster c = preset("dgx-h100");
    sc_model *m = NULL;
    REQUIRE(sc_model_open("gpt-13b", &m, NULL) == SC_OK);
    const sc_module *attn = sc_model_find(m, "blocks.0.attn"),
                    *mlp = sc_model_find(m, "blocks.0.mlp"), *head = sc_model_find(m, "head");
    REQUIRE(attn && mlp && head);
    const int tp = 8;
    sc_compute_cfg off = {SC_BF16, tp, 1, 2, SC_ATTN_FLASH, 0, 0, 0, 0}, on = off;
    on.tp_overlap = 1;
    double bf = c.eff.bwd_factor > 0 ? c.eff.bwd_factor : 1;
    const sc_module *mods[2] = {attn, mlp};
    for (int i = 0; i < 2; i++) {
        double want_f = 0, want_b = 0, f0, b0, f1, b1;
        for (int j = 0; j < mods[i]->n_kernels; j++) {
            const sc_kernel *k = &mods[i]->kernels[j];
            if (!sc_kernel_runs(k, on.attn))
                continue;
            double B, M, N, K;
            sc_cost_kernel_shape(k, &on, &B, &M, &N, &K);
            if (k->op != SC_KOP_GEMM || k->grow_batch || (k->tp != SC_KTP_N && k->tp != SC_KTP_K)) {
                want_f += sc_cost_kernel_time(&c, k, &on, 0);
                want_b += sc_cost_kernel_time(&c, k, &on, 1);
                continue;
            }
            double fs = k->tp == SC_KTP_N ? tp : 4, ds = k->tp == SC_KTP_K ? tp : 1;
            want_f += fs * sc_cost_gemm_time(&c, SC_BF16, B, ceil(M / fs), N, K, 1);
            want_b += ds * sc_cost_gemm_time(&c, SC_BF16, B, ceil(M / ds), K, N, bf) +
                      sc_cost_gemm_time(&c, SC_BF16, B, K, N, M, bf);
        }
        sc_cost_kernels_time(&c, mods[i], &on, &f1, &b1, NULL);
        sc_cost_kernels_time(&c, mods[i], &off, &f0, &b0, NULL);
        CHECK_NEAR(f1, want_f, 1e-12);
        CHECK_NEAR(b1, want_b, 1e-12);
        CHECK(f1 > f0 && b1 > b0); /* chunks fill the waves less well than the whole */
        /* the weight gradients are never split (zb-h1's W pass) */
        CHECK_NEAR(sc_cost_kernels_wgrad_time(&c, mods[i], &on),
                   sc_cost_kernels_wgrad_time(&c, mods[i], &off), 1e-15);
        /* without sp there is no such overlap */
        sc_compute_cfg nosp = on;
        nosp.sp = 0;
        double f2, b2, f3, b3;
        sc_compute_cfg nosp0 = nosp;
        nosp0.tp_overlap = 0;
        sc_cost_kernels_time(&c, mods[i], &nosp, &f2, &b2, NULL);
        sc_cost_kernels_time(&c, mods[i], &nosp0, &f3, &b3, NULL);
        CHECK(f2 == f3 && b2 == b3);
    }
    /* the LM head is Megatron's own linear layer: whole */
    double hf0, hb0, hf1, hb1;
    sc_cost_kernels_time(&c, head, &off, &hf0, &hb0, NULL);
    sc_cost_kernels_time(&c, head, &on, &hf1, &hb1, NULL);
    CHECK(hf0 == hf1 && hb0 == hb1);
    sc_model_free(m);
}

TEST(kernel_flash_attention)
{
    sc_cluster c = preset("dgx-a100-80g");
    sc_compute_cfg cc = {SC_BF16, 1, 0, 1, SC_ATTN_FLASH, 0, 0, 0, 0};
    sc_kernel fa = sc_kernel_flash("flash", 96, 2048, 2048, 128, 0, SC_KTP_BATCH);
    sc_kernel fc = sc_kernel_flash("flash", 96, 2048, 2048, 128, 1, SC_KTP_BATCH);
    /* compute-bound kernels run at the sustained clock */
    double peak = c.gpu.peak_flops[SC_BF16] * c.eff.gemm.sustained, ks = c.eff.gemm.kernel_s;
    double f = 4 * 96.0 * 2048 * 2048 * 128;
    /* over s keys: s / (s + s0) of the long-sequence rate, s0 the causal
     * one or the unmasked one (then flash_full times the rate) */
    const sc_cluster_gemm *g = &c.eff.gemm;
    double shape_c = 2048 / (2048 + g->flash_s0);
    double shape_f = g->flash_full * 2048 / (2048 + g->flash_s0_full);
    CHECK(g->flash_s0 > 0 && g->flash_s0_full > 0 && g->flash_full > 1);
    CHECK_NEAR(sc_cost_kernel_time(&c, &fa, &cc, 0),
               ks + f / (peak * g->flash_fwd * shape_f), 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &fc, &cc, 0),
               ks + f / 2 / (peak * g->flash_fwd * shape_c), 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &fc, &cc, 1),
               ks + 2.5 * f / 2 / (peak * g->flash_bwd * shape_c), 1e-15);
    CHECK_NEAR(sc_kernel_flops(&fa), f, 0);
    /* without a fall (flash_s0 0, a file without the keys): the rates alone */
    sc_cluster flat = c;
    flat.eff.gemm.flash_s0 = flat.eff.gemm.flash_s0_full = 0;
    flat.eff.gemm.flash_full = 0;
    CHECK_NEAR(sc_cost_kernel_time(&flat, &fa, &cc, 0), ks + f / (peak * g->flash_fwd), 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&flat, &fc, &cc, 1),
               ks + 2.5 * f / 2 / (peak * g->flash_bwd), 1e-15);
    /* the backward's own falls, where set: the forward keeps its */
    sc_cluster late = c;
    late.eff.gemm.flash_s0_bwd = 1200;
    late.eff.gemm.flash_s0_full_bwd = 500;
    CHECK_NEAR(sc_cost_kernel_time(&late, &fc, &cc, 0), sc_cost_kernel_time(&c, &fc, &cc, 0),
               0);
    CHECK_NEAR(sc_cost_kernel_time(&late, &fc, &cc, 1),
               ks + 2.5 * f / 2 / (peak * g->flash_bwd * 2048 / (2048 + 1200.0)), 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&late, &fa, &cc, 1),
               ks + 2.5 * f / (peak * g->flash_bwd * g->flash_full * 2048 / (2048 + 500.0)),
               1e-15);
    /* head size: the rate at 64 is flash_hd64 times that at 128, linear in
     * between (96: half-way), 1 above 128 */
    CHECK(g->flash_hd64 > 0 && g->flash_hd64 != 1);
    sc_kernel h64 = sc_kernel_flash("flash", 96, 2048, 2048, 64, 1, SC_KTP_BATCH);
    sc_kernel h96 = sc_kernel_flash("flash", 96, 2048, 2048, 96, 1, SC_KTP_BATCH);
    sc_kernel h256 = sc_kernel_flash("flash", 96, 2048, 2048, 256, 1, SC_KTP_BATCH);
    CHECK_NEAR(sc_cost_kernel_time(&c, &h64, &cc, 0),
               ks + f / 4 / (peak * g->flash_fwd * shape_c * g->flash_hd64), 1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &h96, &cc, 0),
               ks + f * 0.75 / 2 / (peak * g->flash_fwd * shape_c * (1 + g->flash_hd64) / 2),
               1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&c, &h256, &cc, 0),
               ks + f * 2 / 2 / (peak * g->flash_fwd * shape_c), 1e-15);
    /* a kernel built for some head sizes only (flash_head_sizes) runs a
     * head as the next built size, its extra columns zeros: FlashAttention
     * v1's 96 runs its 128 kernel, FLOPs and rate; Q, K, V and O move at
     * 96 (the roof's bytes); 64 and 128 run as they are; above the
     * largest, as it is; the preset's FA2 builds every multiple of 32 up
     * to 256 (HEADDIM_SWITCH) */
    REQUIRE(g->n_flash_heads == 8);
    CHECK(g->flash_heads[0] == 32 && g->flash_heads[2] == 96 && g->flash_heads[7] == 256);
    sc_kernel h128 = sc_kernel_flash("flash", 96, 2048, 2048, 128, 1, SC_KTP_BATCH);
    sc_kernel h40 = sc_kernel_flash("flash", 96, 2048, 2048, 40, 1, SC_KTP_BATCH);
    sc_error ferr = {0};
    sc_cluster fa1 = c;
    REQUIRE(sc_cluster_flash_kernel(&fa1, "fa1", &ferr) == SC_OK);
    REQUIRE(fa1.eff.gemm.n_flash_heads == 3 && fa1.eff.gemm.flash_heads[2] == 128);
    for (int bwd = 0; bwd < 2; bwd++) {
        CHECK_NEAR(sc_cost_kernel_time(&fa1, &h96, &cc, bwd),
                   sc_cost_kernel_time(&fa1, &h128, &cc, bwd), 1e-15);
        CHECK_NEAR(sc_cost_kernel_time(&fa1, &h40, &cc, bwd),
                   sc_cost_kernel_time(&fa1, &h64, &cc, bwd), 1e-15);
        sc_cluster open = fa1; /* the same rates without the list */
        open.eff.gemm.n_flash_heads = 0;
        CHECK(sc_cost_kernel_time(&fa1, &h96, &cc, bwd) >
              1.3 * sc_cost_kernel_time(&open, &h96, &cc, bwd));
        CHECK_NEAR(sc_cost_kernel_time(&fa1, &h64, &cc, bwd),
                   sc_cost_kernel_time(&open, &h64, &cc, bwd), 0);
        CHECK_NEAR(sc_cost_kernel_time(&fa1, &h256, &cc, bwd),
                   sc_cost_kernel_time(&open, &h256, &cc, bwd), 0);
    }
    /* 96 costs the 128 kernel's time outright (f counts head size 128) */
    CHECK_NEAR(sc_cost_kernel_time(&fa1, &h96, &cc, 0),
               ks + f / 2 /
                        (peak * fa1.eff.gemm.flash_fwd * 2048 / (2048 + fa1.eff.gemm.flash_s0)),
               1e-15);
    /* LLM Foundry's Triton kernel: the next power of two, at least 16 */
    sc_cluster tri = c;
    REQUIRE(sc_cluster_flash_kernel(&tri, "triton", &ferr) == SC_OK);
    sc_kernel h80 = sc_kernel_flash("flash", 96, 2048, 2048, 80, 1, SC_KTP_BATCH);
    sc_kernel h8 = sc_kernel_flash("flash", 96, 2048, 2048, 8, 1, SC_KTP_BATCH);
    sc_kernel h16 = sc_kernel_flash("flash", 96, 2048, 2048, 16, 1, SC_KTP_BATCH);
    CHECK_NEAR(sc_cost_kernel_time(&tri, &h80, &cc, 1), sc_cost_kernel_time(&tri, &h128, &cc, 1),
               1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&tri, &h8, &cc, 0), sc_cost_kernel_time(&tri, &h16, &cc, 0),
               1e-15);
    /* the preset's FA2: 96 is built (between 64 and 128), 80 runs as 96 */
    CHECK(sc_cost_kernel_time(&c, &h96, &cc, 0) < sc_cost_kernel_time(&c, &h128, &cc, 0));
    CHECK_NEAR(sc_cost_kernel_time(&c, &h80, &cc, 1), sc_cost_kernel_time(&c, &h96, &cc, 1),
               1e-15);
    /* FA3 (the Hopper presets'): 64, 96, 128, 192, 256; head size 64 at 0.709
     * of 128's rate (Shah et al. 2024, Fig. 5b) */
    sc_cluster h100;
    REQUIRE(sc_cluster_preset_get("dgx-h100", &h100, &ferr) == SC_OK);
    CHECK_NEAR(h100.eff.gemm.flash_hd64, 0.709, 1e-12);
    REQUIRE(h100.eff.gemm.n_flash_heads == 5);
    CHECK(h100.eff.gemm.flash_heads[0] == 64 && h100.eff.gemm.flash_heads[4] == 256);
    CHECK_NEAR(sc_cost_kernel_time(&h100, &h40, &cc, 0), sc_cost_kernel_time(&h100, &h64, &cc, 0),
               1e-15);
    CHECK_NEAR(sc_cost_kernel_time(&h100, &h80, &cc, 0), sc_cost_kernel_time(&h100, &h96, &cc, 0),
               1e-15);
    /* a short sequence runs slower per FLOP: 4 x 512-token sequences take
     * longer than one of 1024 with the same pair count */
    sc_kernel s512 = sc_kernel_flash("flash", 96 * 4, 512, 512, 128, 1, SC_KTP_BATCH);
    sc_kernel s1k = sc_kernel_flash("flash", 96, 1024, 1024, 128, 1, SC_KTP_BATCH);
    CHECK(sc_cost_kernel_time(&c, &s512, &cc, 0) > sc_cost_kernel_time(&c, &s1k, &cc, 0));

    /* gpt-175b's attention at tp 8: flash is faster than unfused, keeps no
     * scores, and selective recompute re-runs the fused kernel's forward
     * under it (Megatron-Core checkpoints the core attention whatever its
     * backend), less than unfused attention's scores, softmax and context */
    sc_model *m;
    REQUIRE(sc_model_open("gpt-175b", &m, NULL) == SC_OK);
    const sc_module *attn = sc_model_find(m, "blocks.0.attn");
    REQUIRE(attn && attn->n_kernels > 0);
    sc_compute_cfg un = {SC_BF16, 8, 0, 1, SC_ATTN_UNFUSED, 0, 0, 0, 0}, fl = {SC_BF16, 8, 0, 1, SC_ATTN_FLASH, 0, 0, 0, 0};
    double fu, bu, ru, ff, bf, rf;
    sc_cost_kernels_time(&c, attn, &un, &fu, &bu, &ru);
    sc_cost_kernels_time(&c, attn, &fl, &ff, &bf, &rf);
    CHECK(ff < fu);
    CHECK(ru > 0);
    double flash_fwd = 0;
    for (int i = 0; i < attn->n_kernels; i++)
        if (attn->kernels[i].op == SC_KOP_FLASH)
            flash_fwd += sc_cost_kernel_time(&c, &attn->kernels[i], &fl, 0);
    CHECK(flash_fwd > 0);
    CHECK_NEAR(rf, flash_fwd, 1e-15);
    CHECK(rf < ru);
    sc_cost_cfg cu = {SC_BF16, 8, 1, NULL, 0, SC_ATTN_UNFUSED}, cf = cu;
    cf.attn = SC_ATTN_FLASH;
    sc_cost_row *r1, *r2, t1, t2;
    int n1, n2;
    REQUIRE(sc_cost_table(&c, m, &cu, &r1, &n1, &t1, NULL) == SC_OK);
    REQUIRE(sc_cost_table(&c, m, &cf, &r2, &n2, &t2, NULL) == SC_OK);
    CHECK(t2.fwd_s < t1.fwd_s);
    double sel = 0;
    for (int i = 0; i < m->n_modules; i++)
        sel += sc_cost_saved_bytes(m->modules[i], 8, 0, 1);
    CHECK_NEAR(t2.act_bytes, sel, 1e-12);
    CHECK(t1.act_bytes > t2.act_bytes);
    sc_free(r1);
    sc_free(r2);
    sc_model_free(m);
}

/* A step the executor measured ran each fused attention kernel as its two
 * batched products (no backend has a fused kernel): with flash_gemms set
 * (compare and calibrate set it from the timeline) the kernel is priced as
 * those GEMMs forward and their four backward GEMMs, whole (no causal
 * skip), and never so in a cluster file. */
TEST(kernel_flash_priced_as_the_executor_runs_it)
{
    sc_cluster c = preset("h200-sxm-1");
    sc_compute_cfg cc = {SC_BF16, 1, 0, 4, SC_ATTN_FLASH, 0, 0, 0, 0};
    sc_kernel fc = sc_kernel_flash("flash", 16, 2048, 2048, 128, 1, SC_KTP_BATCH);
    double fused_f = sc_cost_kernel_time(&c, &fc, &cc, 0);
    c.eff.gemm.flash_gemms = 1;
    double B = 64, M = 2048, N = 2048, K = 128; /* 16 heads x 4 samples */
    double f = gemm_s_b(&c, B, M, N, K) + gemm_s_b(&c, B, M, K, N);
    double b = gemm_s_b(&c, B, M, K, N) + gemm_s_b(&c, B, K, N, M) + gemm_s_b(&c, B, M, N, K) +
               gemm_s_b(&c, B, N, K, M);
    CHECK_NEAR(sc_cost_kernel_time(&c, &fc, &cc, 0), f, 1e-12);
    CHECK_NEAR(sc_cost_kernel_time(&c, &fc, &cc, 1), b, 1e-12);
    CHECK(f != fused_f);
    /* runtime only: a cluster file neither writes nor reads it */
    sc_cluster back;
    REQUIRE(sc_test_cluster_round_trip(&c, "fg.json", &back));
    CHECK_EQ_INT(back.eff.gemm.flash_gemms, 0);
}

/* Every generator's kernel lists count exactly its leaves' FLOPs under both
 * attention implementations, and a leaf's time is the sum of its kernels'. */
TEST(kernel_generator_lists_match_leaf_flops)
{
    const char *names[] = {"gpt-1.3b", "llama3-8b", "t5-3b", "fid-3b", "mm-1.3b", "vit-huge"};
    sc_cluster c = preset("dgx-h100");
    for (size_t i = 0; i < SC_ARRAY_LEN(names); i++) {
        sc_model *m;
        REQUIRE(sc_model_open(names[i], &m, NULL) == SC_OK);
        int with = 0;
        for (int l = 0; l < m->n_leaves; l++) {
            const sc_module *x = m->leaves[l];
            if (!x->n_kernels)
                continue;
            with++;
            for (int a = 0; a < SC_ATTN_N; a++) {
                double f = 0;
                for (int k = 0; k < x->n_kernels; k++)
                    if (sc_kernel_runs(&x->kernels[k], (sc_attn)a))
                        f += sc_kernel_flops(&x->kernels[k]);
                CHECK_NEAR(f, x->flops_fwd, 1e-12);
            }
            sc_compute_cfg cc = {SC_BF16, 2, 0, 2, SC_ATTN_FLASH, 0, 0, 0, 0};
            double fw, bw, sf = 0, sb = 0;
            REQUIRE(sc_cost_module_time_cfg(&c, x, &cc, &fw, &bw, NULL) == SC_OK);
            for (int k = 0; k < x->n_kernels; k++)
                if (sc_kernel_runs(&x->kernels[k], SC_ATTN_FLASH)) {
                    sf += sc_cost_kernel_time(&c, &x->kernels[k], &cc, 0);
                    sb += sc_cost_kernel_time(&c, &x->kernels[k], &cc, 1);
                }
            CHECK_NEAR(fw, sf, 1e-15);
            CHECK_NEAR(bw, sb, 1e-15);
        }
        CHECK(with > m->n_leaves / 2);
        sc_model_free(m);
    }
}

static char *leaf_with(const char *kernels)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"format\": \"stagecraft.model/1\", \"name\": \"k\", \"dtype\": \"bf16\", "
             "\"seq_len\": 16, \"root\": {\"name\": \"r\", \"kind\": \"model\", \"params\": 0, "
             "\"flops_fwd\": 0, \"act_out_bytes\": 0, \"act_saved_bytes\": 0, \"children\": "
             "[{\"name\": \"mlp\", \"kind\": \"mlp\", \"params\": 100, \"flops_fwd\": 8192, "
             "\"act_out_bytes\": 64, \"act_saved_bytes\": 64, \"kernels\": %s}]}}",
             kernels);
    return buf;
}

static const char *load_msg(const char *text)
{
    static sc_error err;
    memset(&err, 0, sizeof err);
    cJSON *j = cJSON_Parse(text);
    if (!j)
        return "unparsable";
    sc_model *m = NULL;
    sc_status st = sc_model_from_json(j, "k.json", &m, &err);
    cJSON_Delete(j);
    sc_model_free(m);
    return st ? err.msg : "";
}

/* Bad lists are refused with one line naming the file and the JSON path. */
TEST(kernel_bad_lists_refused)
{
    /* 2*16*16*16 = 8192: agrees */
    CHECK_SAME(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16, \"n\": 16, "
                                    "\"k\": 16}]")),
                 "");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16, \"n\": 16, "
                                     "\"k\": 32}]")),
                  "k.json: root.children[0].kernels: the unfused kernels count 16384 FLOPs");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": -16, \"n\": 16, "
                                     "\"k\": 16}]")),
                  "k.json: root.children[0].kernels[0]");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16.5, \"n\": 16, "
                                     "\"k\": 16}]")),
                  "root.children[0].kernels[0].m: 16.5 is not an integer");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"conv\", \"m\": 16, \"n\": 16, "
                                     "\"k\": 16}]")),
                  "root.children[0].kernels[0].op: unknown \"conv\"");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16, \"n\": 16, "
                                     "\"k\": 16, \"tp\": \"shard\"}]")),
                  "kernels[0].tp: a gemm kernel cannot be sharded by \"shard\"");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16, \"n\": 16, "
                                     "\"k\": 16, \"bytes\": 5}]")),
                  "kernels[0].bytes: a gemm kernel has no bytes");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16, \"n\": 16, "
                                     "\"k\": 16}, {\"name\": \"f\", \"op\": \"flash\", \"m\": 4, "
                                     "\"n\": 4, \"k\": 4}]")),
                  "has \"flash\" kernels but none for \"unfused\"");
    CHECK_STR_HAS(load_msg(leaf_with("[]")), "root.children[0].kernels: empty");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"m\", \"op\": \"mem\", \"bytes\": -1}]")),
                  "kernels[0].bytes");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16, \"n\": 16, "
                                     "\"k\": 16, \"spin\": 1}]")),
                  "kernels[0]");
    /* a list on a module with children */
    const char *inner =
        "{\"format\": \"stagecraft.model/1\", \"name\": \"k\", \"dtype\": \"bf16\", "
        "\"seq_len\": 16, \"root\": {\"name\": \"r\", \"kind\": \"model\", \"params\": 0, "
        "\"flops_fwd\": 0, \"act_out_bytes\": 0, \"act_saved_bytes\": 0, \"kernels\": "
        "[{\"name\": \"m\", \"op\": \"mem\", \"bytes\": 4}], \"children\": [{\"name\": \"x\", "
        "\"kind\": \"mlp\", \"params\": 1, \"flops_fwd\": 1, \"act_out_bytes\": 1, "
        "\"act_saved_bytes\": 1}]}}";
    CHECK_STR_HAS(load_msg(inner), "k.json: root.kernels: only a leaf lists kernels");
}

/* A memory-bound kernel may count FLOPs (a depthwise convolution: a stencil
 * on the vector units): they count toward the leaf's flops_fwd, run at the
 * fp32 peak times its eff_max, twice that backward, and the kernel takes the
 * longer of that and its bytes. Only mem kernels carry flops. */
TEST(kernel_stencil_counts_flops)
{
    /* 8192 counted FLOPs as one stencil: the leaf agrees */
    CHECK_SAME(load_msg(leaf_with("[{\"name\": \"dw\", \"op\": \"mem\", \"bytes\": 64, "
                                  "\"flops\": 8192}]")),
               "");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"dw\", \"op\": \"mem\", \"bytes\": 64, "
                                     "\"flops\": 4096}]")),
                  "the unfused kernels count 4096 FLOPs, the module's flops_fwd is 8192");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"dw\", \"op\": \"mem\", \"bytes\": 64, "
                                     "\"flops\": -1}]")),
                  "kernels[0].flops");
    CHECK_STR_HAS(load_msg(leaf_with("[{\"name\": \"g\", \"op\": \"gemm\", \"m\": 16, "
                                     "\"n\": 16, \"k\": 16, \"flops\": 8192}]")),
                  "kernels[0].flops: a gemm kernel has no flops");

    sc_cluster c = preset("dgx-a100-80g");
    sc_compute_cfg cc = {SC_BF16, 1, 0, 4, SC_ATTN_UNFUSED, 0, 0, 0, 0};
    double vec = c.gpu.peak_flops[SC_FP32] * c.eff.eff_max[SC_FP32] * c.eff.gemm.sustained;
    double hbm = c.gpu.hbm_bytes_per_s * c.eff.memory_bw, ks = c.eff.gemm.kernel_s;
    /* compute-bound: 1 GFLOP and 1 MB per sample, 4 samples */
    sc_kernel k = sc_kernel_mem("dw", 1e6, 2e6, SC_KTP_NONE, SC_ATTN_ANY);
    k.flops = 1e9;
    CHECK_NEAR(sc_kernel_flops(&k), 1e9, 0);
    CHECK_NEAR(sc_cost_kernel_time(&c, &k, &cc, 0), ks + 4e9 / vec, 1e-12);
    CHECK_NEAR(sc_cost_kernel_time(&c, &k, &cc, 1), ks + 8e9 / vec, 1e-12);
    /* memory-bound: the same FLOPs behind 1 GB a sample */
    k.bytes = 1e9;
    CHECK_NEAR(sc_cost_kernel_time(&c, &k, &cc, 0), ks + 4e9 / hbm, 1e-12);
    /* without flops, as before: bytes only */
    k.flops = 0;
    k.bytes = 1e6;
    CHECK_NEAR(sc_cost_kernel_time(&c, &k, &cc, 0), ks + 4e6 / hbm, 1e-12);
    /* the round trip keeps them */
    cJSON *j = cJSON_Parse(leaf_with("[{\"name\": \"dw\", \"op\": \"mem\", \"bytes\": 64, "
                                     "\"flops\": 8192}]"));
    REQUIRE(j);
    sc_model *m = NULL;
    REQUIRE(sc_model_from_json(j, "k.json", &m, NULL) == SC_OK);
    cJSON *back = sc_model_to_json(m);
    char *t = cJSON_PrintUnformatted(back);
    CHECK_STR_HAS(t, "\"flops\":8192");
    cJSON_free(t);
    cJSON_Delete(back);
    cJSON_Delete(j);
    sc_model_free(m);
}

/* Round trip of a list with every field, and the cluster's gemm block. */
TEST(kernel_roundtrip_and_cluster_block)
{
    sc_model *m;
    REQUIRE(sc_model_open("llama3-8b", &m, NULL) == SC_OK);
    cJSON *j = sc_model_to_json(m);
    REQUIRE(j);
    sc_model *m2 = NULL;
    REQUIRE(sc_model_from_json(j, "rt", &m2, NULL) == SC_OK);
    cJSON *j2 = sc_model_to_json(m2);
    char *a = cJSON_PrintUnformatted(j), *b = cJSON_PrintUnformatted(j2);
    CHECK_SAME(a, b);
    CHECK(strstr(a, "\"causal\":true") != NULL);
    cJSON_free(a);
    cJSON_free(b);
    cJSON_Delete(j);
    cJSON_Delete(j2);
    sc_model_free(m);
    sc_model_free(m2);

    sc_cluster c = preset("dgx-h100"), c2;
    cJSON *cj = sc_cluster_to_json(&c);
    REQUIRE(cj);
    REQUIRE(sc_cluster_from_json(cj, "c.json", &c2, NULL) == SC_OK);
    CHECK(sc_cluster_equal(&c, &c2));
    cJSON *g = cJSON_GetObjectItem(cJSON_GetObjectItem(cj, "efficiency"), "gemm");
    REQUIRE(g);
    cJSON_ReplaceItemInObject(g, "eff_max", cJSON_CreateNumber(1.5));
    sc_error err = {0};
    CHECK(sc_cluster_from_json(cj, "c.json", &c2, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "c.json: efficiency.gemm.eff_max");
    cJSON_ReplaceItemInObject(g, "eff_max", cJSON_CreateNumber(0.8));
    cJSON_ReplaceItemInObject(g, "sms", cJSON_CreateNumber(0));
    CHECK(sc_cluster_from_json(cj, "c.json", &c2, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "c.json: efficiency.gemm.sms");
    cJSON_Delete(cj);
}

/* calibrate fits the GEMM model's eff_max, k_half and kernel_s back from
 * GEMM timings the model itself produced (with +-0.5% noise), keeps the
 * device's SMs and tile, and refuses one repeated size. */
TEST(kernel_calibrate_fits_gemm_model)
{
    sc_cluster base = preset("dgx-h100"), truth = base;
    truth.eff.gemm.eff_max = 0.7;
    truth.eff.gemm.k_half = 64;
    truth.eff.gemm.kernel_s = 5e-6;
    static const double sz[][3] = {{512, 512, 512},    {1024, 1024, 1024}, {2048, 2048, 2048},
                                   {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 8192, 128},
                                   {8192, 1024, 8192}, {2304, 1537, 4096}, {128, 8192, 8192},
                                   {3072, 12288, 4096}, {6144, 6144, 256}, {256, 256, 256}};
    enum { N = sizeof sz / sizeof sz[0] };
    sc_calib_gemm g[N];
    for (int i = 0; i < N; i++) {
        double m = sz[i][0], n = sz[i][1], k = sz[i][2];
        /* the last point a batched call, as attention's products are */
        double b = i == N - 1 ? 16 : 1;
        double t = gemm_s_b(&truth, b, m, n, k) * (1 + 0.005 * ((i % 3) - 1));
        g[i] = (sc_calib_gemm){2 * b * m * n * k, 2 * b * (m * k + k * n + m * n), t, 0, m, n, k, b};
    }
    sc_calib_points pts = {.dtype = SC_BF16, .n_gemm = N, .gemm = g};
    sc_cluster out;
    sc_calib_report rep;
    sc_error err = {0};
    sc_status st = sc_calib_fit_points(&base, &pts, 0, &out, &rep, &err);
    REQUIRE(st == SC_OK);
    CHECK_NEAR(out.eff.gemm.eff_max, 0.7, 0.02);
    CHECK_NEAR(out.eff.gemm.kernel_s, 5e-6, 0.2);
    CHECK(fabs(out.eff.gemm.k_half - 64) < 32);
    CHECK(out.eff.gemm.sms == base.eff.gemm.sms && out.eff.gemm.tile_m == 256);
    CHECK(out.eff.fits.gemm.n == N && out.eff.fits.gemm.mape < 0.01);
    int found = 0;
    for (int i = 0; i < rep.n_gates; i++)
        if (!strcmp(rep.gates[i].what, "gemm model bf16")) {
            found++;
            CHECK(!rep.gates[i].failed);
        }
    CHECK(found >= 4);
    /* one size five times: refused, naming the gemm model's points gate */
    sc_calib_gemm one[5];
    for (int i = 0; i < 5; i++)
        one[i] = g[3];
    sc_calib_points p1 = {.dtype = SC_BF16, .n_gemm = 5, .gemm = one};
    st = sc_calib_fit_points(&base, &p1, 0, &out, &rep, &err);
    CHECK(st == SC_EGATE);
    int refused = 0;
    for (int i = 0; i < rep.n_gates; i++)
        refused += !strcmp(rep.gates[i].what, "gemm model bf16") &&
                   !strcmp(rep.gates[i].gate, "points") && rep.gates[i].failed;
    CHECK(refused == 1);
}

/* The optimizer on a kernel-level cluster: Megatron-LM's clip norm, fused
 * Adam, master-to-model copy and gradient zeroing, 42 bytes per parameter of
 * 16-bit training in four kernels (36 in three in fp32: no copy); elsewhere every state byte
 * read and written once (2 x 16). */
TEST(kernel_optimizer_terms)
{
    sc_cluster g = preset("dgx-a100-80g"), c = preset("cpu-local");
    double P = 1e9, bw = g.gpu.hbm_bytes_per_s * g.eff.memory_bw;
    CHECK_NEAR(sc_cost_optimizer_time(&g, SC_BF16, P), 4 * g.eff.gemm.kernel_s + 42 * P / bw,
               1e-12);
    CHECK_NEAR(sc_cost_optimizer_time(&g, SC_FP32, P), 3 * g.eff.gemm.kernel_s + 36 * P / bw,
               1e-12);
    /* the kernels the executor runs are the ones priced */
    double kb[SC_OPT_KERNELS];
    REQUIRE(sc_cost_optimizer_kernels(&g, SC_BF16, P, kb) == 4);
    CHECK(kb[0] == 4 * P && kb[1] == 28 * P && kb[2] == 6 * P && kb[3] == 4 * P);
    REQUIRE(sc_cost_optimizer_kernels(&g, SC_FP32, P, kb) == 3);
    CHECK(kb[0] + kb[1] + kb[2] == 36 * P);
    REQUIRE(sc_cost_optimizer_kernels(&c, SC_BF16, P, kb) == 1);
    CHECK(kb[0] == 32 * P);
    CHECK(sc_cost_optimizer_kernels(&g, SC_BF16, 0, kb) == 0);
    double cb = c.gpu.hbm_bytes_per_s * c.eff.memory_bw;
    CHECK_NEAR(sc_cost_optimizer_time(&c, SC_FP32, P), c.eff.op_overhead_s + 32 * P / cb, 1e-12);
    CHECK(sc_cost_optimizer_time(&g, SC_BF16, 0) == 0);
}
