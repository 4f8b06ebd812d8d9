/* test_partitioner.c - the tree and optimal partitioners and the stage cost
 * model: optimal against brute force on random trees, against tree and
 * uniform on the built-ins, the shared-group policies, the does-not-fit
 * message, the memory weight. */
#include "check.h"
#include "cost.h"
#include "partitioner.h"
#include "schedule.h"
#include "step.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const double GiB = 1024.0 * 1024 * 1024;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static int rint_(int lo, int hi) /* [lo, hi] */
{
    return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}
static double runif(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}

static sc_cluster cluster(const char *name, int nodes)
{
    sc_cluster c;
    sc_error err;
    sc_cluster_preset_get(name, &c, &err);
    sc_cluster_set_nodes(&c, nodes, &err);
    return c;
}

/* ---- random trees -------------------------------------------------------- */

typedef struct rtree {
    sc_model *m;
    sc_module *mods[64];
    int lo[64], hi[64]; /* leaf range [lo, hi] of each module, by creation */
    int n, leaves;
} rtree;

static void grow(rtree *t, sc_module *parent, int depth, int want)
{
    int nch = rint_(1, 4);
    for (int c = 0; c < nch && t->leaves < want && t->n < 60; c++) {
        char nm[32];
        snprintf(nm, sizeof nm, "m%d", t->n);
        int internal = depth < 3 && rint_(0, 2) == 0;
        static const char *const kinds[] = {"block", "attention", "mlp", "norm"};
        sc_module *x = sc_model_add(t->m, parent, nm, internal ? "block" : kinds[rint_(0, 3)]);
        int id = t->n++;
        t->mods[id] = x;
        t->lo[id] = t->leaves;
        x->act_out_bytes = runif(0, 6e7);
        if (internal)
            grow(t, x, depth + 1, want); /* may add none: then x is a leaf */
        if (!x->n_children) {
            x->params = rint_(0, 4) ? runif(0, 4e8) : 0;
            x->flops_fwd = rint_(0, 5) ? runif(0, 4e12) : 0;
            x->act_saved_bytes = runif(0, 2e9);
            if (rint_(0, 1))
                sc_module_set_tp(x, runif(0, 1e7), rint_(0, 1));
            t->leaves++;
        }
        t->hi[id] = t->leaves - 1;
    }
}

/* A random model with 6..14 leaves, inputs edges and shared groups. */
static sc_model *random_model(int *ok)
{
    for (;;) {
        rtree t = {0};
        int want = rint_(6, 14);
        t.m = sc_model_new("rnd", rint_(0, 3) ? SC_BF16 : SC_FP32, 64);
        sc_module *root = sc_model_add(t.m, NULL, "root", "model");
        while (t.leaves < want && t.n < 60)
            grow(&t, root, 1, want);
        if (t.leaves < 6) {
            sc_model_free(t.m);
            continue;
        }
        /* inputs: a module consumes the output of one that ended before it */
        int ne = rint_(0, 3);
        for (int e = 0; e < ne; e++) {
            int a = rint_(0, t.n - 1), b = rint_(0, t.n - 1);
            if (t.hi[b] < t.lo[a])
                sc_module_add_input(t.m, t.mods[a], t.mods[b]->name);
        }
        /* shared groups over leaves */
        int ng = rint_(0, 2);
        for (int g = 0; g < ng; g++) {
            char gn[16];
            snprintf(gn, sizeof gn, "g%d", g);
            int members = rint_(2, 3);
            for (int k = 0; k < members; k++) {
                int a = rint_(0, t.n - 1);
                if (!t.mods[a]->n_children && !t.mods[a]->shared)
                    sc_module_set_shared(t.m, t.mods[a], gn);
            }
        }
        sc_error err;
        if (sc_model_finish(t.m, "<rnd>", &err)) {
            fprintf(stderr, "random model: %s\n", err.msg);
            sc_model_free(t.m);
            *ok = 0;
            return NULL;
        }
        *ok = 1;
        return t.m;
    }
}

/* ---- brute force ------------------------------------------------------------ */

typedef struct brute {
    double best_time;  /* min bottleneck over valid, fitting splits (INFINITY if none) */
    double best_memx;  /* min over valid splits of max (mem - workspace) */
    int n_valid;       /* splits the policy allows */
} brute;

/* Boundary s (1..S-1) takes every position that leaves room for the rest;
 * at s == S the split is evaluated. */
static void brute_rec(const sc_partitioner_cfg *cfg, sc_partition *p, int s, brute *b)
{
    int S = p->n_stages, L = cfg->model->n_leaves;
    if (s == S) {
        sc_part_eval e;
        sc_error err;
        if (sc_partition_eval(cfg, p, &e, &err)) {
            fprintf(stderr, "eval: %s\n", err.msg);
            return;
        }
        if (!(cfg->shared == SC_SHARED_STRICT && e.splits_shared)) {
            b->n_valid++;
            double mx = 0, ws = cfg->cluster->eff.workspace_bytes;
            for (int k = 0; k < S; k++)
                if (e.mem_bytes[k] - ws > mx)
                    mx = e.mem_bytes[k] - ws;
            if (mx < b->best_memx)
                b->best_memx = mx;
            if (e.fits && e.bottleneck_s < b->best_time)
                b->best_time = e.bottleneck_s;
        }
        sc_part_eval_free(&e);
        return;
    }
    for (int x = p->first[s - 1] + 1; x <= L - (S - s); x++) {
        if (cfg->layer_cuts && !sc_partition_between_layers(cfg->model, x))
            continue; /* cuts between layers only */
        p->first[s] = x;
        brute_rec(cfg, p, s + 1, b);
    }
}

static brute brute_force(const sc_partitioner_cfg *cfg)
{
    int S = cfg->n_stages, L = cfg->model->n_leaves;
    brute b = {INFINITY, INFINITY, 0};
    sc_partition p = {S, calloc((size_t)S + 1, sizeof(int))};
    p.first[0] = 0;
    p.first[S] = L;
    brute_rec(cfg, &p, 1, &b);
    free(p.first);
    return b;
}

static void random_cfg(sc_partitioner_cfg *cfg, const sc_model *m, sc_cluster *c, int *inflight)
{
    int S = rint_(2, 4);
    int pp = S, v = 1;
    if (S == 4 && rint_(0, 1)) {
        pp = 2;
        v = 2;
    }
    sc_partitioner_cfg_init(cfg, m, c, S);
    cfg->pp = pp;
    cfg->v = v;
    static const int tps[] = {1, 2, 4, 8};
    cfg->tp = tps[rint_(0, 3)];
    cfg->mbs = rint_(1, 2);
    cfg->dp = rint_(1, 3);
    cfg->zero = rint_(0, 3);
    cfg->recompute = (sc_recompute)rint_(0, 2);
    cfg->shared = rint_(0, 1) ? SC_SHARED_STRICT : SC_SHARED_REPLICATE;
    if (rint_(0, 1)) {
        for (int r = 0; r < pp; r++)
            inflight[r] = rint_(0, 4);
        cfg->inflight = inflight;
    } else {
        cfg->inflight = NULL;
        cfg->inflight_max = rint_(0, 4);
    }
    /* memory: somewhere between hopeless and ample */
    double total = 0;
    sc_mem_cfg mc = {m->dtype, cfg->tp,      cfg->dp,        cfg->zero,
                     cfg->mbs, 2,            cfg->recompute, 0, SC_ATTN_UNFUSED, 0,
                     m->has_layers, 0};
    sc_mem mm;
    sc_error err;
    sc_cost_memory(c, m->leaves, m->n_leaves, &mc, &mm, &err);
    total = mm.total - mm.workspace;
    c->eff.workspace_bytes = rint_(0, 1) ? 0 : runif(0, 2e9);
    c->gpu.memory_bytes = c->eff.workspace_bytes + total * runif(0.05, 1.2) + 1;
}

static int contiguous_nonempty(const sc_partition *p, int S, int L)
{
    if (p->n_stages != S || p->first[0] != 0 || p->first[S] != L)
        return 0;
    for (int s = 0; s < S; s++)
        if (p->first[s + 1] <= p->first[s])
            return 0;
    return 1;
}

TEST(partitioner_optimal_matches_brute_force)
{
    rng_state = 0x1234567887654321ULL;
    int trials = 1000, compared = 0, nofit = 0, strict_err = 0;
    for (int tr = 0; tr < trials; tr++) {
        int ok;
        sc_model *m = random_model(&ok);
        REQUIRE(ok);
        sc_cluster c = cluster("p4d.24xlarge", 16);
        sc_partitioner_cfg cfg;
        int inflight[8];
        random_cfg(&cfg, m, &c, inflight);
        /* cuts between layers only: the optimal partitioner splits the runs of
         * leaves between them */
        cfg.layer_cuts = rint_(0, 2) == 0;
        brute b = brute_force(&cfg);
        sc_partition p = {0};
        sc_error err;
        sc_status st = sc_partition_optimal(&cfg, &p, &err);
        if (b.n_valid == 0) {
            CHECK_EQ_INT(st, SC_EINVAL);
            CHECK(strstr(err.msg, "use the replicate policy") ||
                  (cfg.layer_cuts && strstr(err.msg, "cut points between layers")));
            strict_err++;
        } else if (b.best_time == INFINITY) {
            CHECK_EQ_INT(st, SC_ENOFIT);
            char want[128];
            snprintf(want, sizeof want, "does not fit: needs %.1f GiB per GPU, has %.1f GiB",
                     (c.eff.workspace_bytes + cfg.v * b.best_memx) / GiB,
                     c.gpu.memory_bytes / GiB);
            CHECK(strcmp(err.msg, want) == 0);
            if (strcmp(err.msg, want))
                fprintf(stderr, "    trial %d: '%s' vs '%s'\n", tr, err.msg, want);
            nofit++;
        } else {
            CHECK_EQ_INT(st, SC_OK);
            if (st == SC_OK) {
                sc_part_eval e;
                REQUIRE(sc_partition_eval(&cfg, &p, &e, &err) == SC_OK);
                CHECK(e.fits);
                if (cfg.shared == SC_SHARED_STRICT)
                    CHECK(!e.splits_shared);
                CHECK_NEAR(e.bottleneck_s, b.best_time, 1e-12);
                /* tree: S contiguous non-empty stages, never faster when it fits */
                sc_partition pt = {0};
                cfg.mem_weight = runif(0, 1);
                REQUIRE(sc_partition_tree(&cfg, &pt, &err) == SC_OK);
                CHECK(contiguous_nonempty(&pt, cfg.n_stages, m->n_leaves));
                sc_part_eval et;
                REQUIRE(sc_partition_eval(&cfg, &pt, &et, &err) == SC_OK);
                if (et.fits && !(cfg.shared == SC_SHARED_STRICT && et.splits_shared))
                    CHECK(e.bottleneck_s <= et.bottleneck_s * (1 + 1e-12));
                if (cfg.shared == SC_SHARED_STRICT)
                    CHECK(!et.splits_shared);
                sc_part_eval_free(&et);
                sc_partition_free(&pt);
                if (fabs(e.bottleneck_s - b.best_time) > 1e-12 * b.best_time)
                    fprintf(stderr, "    trial %d: S %d pp %d tp %d rc %d\n", tr,
                            cfg.n_stages, cfg.pp, cfg.tp, (int)cfg.recompute);
                sc_part_eval_free(&e);
                compared++;
            }
        }
        sc_partition_free(&p);
        sc_model_free(m);
        if (sc_test_failed_now() > 10)
            break;
    }
    if (getenv("SC_PART_VERBOSE"))
        fprintf(stderr, "compared %d, does not fit %d, strict errors %d\n", compared, nofit,
                strict_err);
    /* the mix exercises every outcome */
    CHECK(compared > trials / 4);
    CHECK(nofit > 10);
    CHECK(strict_err > 0);
}

/* The fast memory of the search equals the cost model's on every range. */
TEST(partitioner_fast_memory_matches_eval)
{
    rng_state = 0xabcdef0123456789ULL;
    for (int tr = 0; tr < 100; tr++) {
        int ok;
        sc_model *m = random_model(&ok);
        REQUIRE(ok);
        sc_cluster c = cluster("p4d.24xlarge", 16);
        sc_partitioner_cfg cfg;
        int inflight[8];
        random_cfg(&cfg, m, &c, inflight);
        sc_pctx x;
        sc_error err;
        REQUIRE(sc_pctx_init(&x, &cfg, &err) == SC_OK);
        int L = m->n_leaves;
        for (int i = 0; i < L; i++)
            for (int j = i + 1; j <= L; j++) {
                int k = rint_(0, cfg.n_stages - 1);
                sc_mem_cfg mc = {m->dtype, cfg.tp, cfg.dp, cfg.zero, cfg.mbs, x.kc[k % x.pp],
                                 cfg.recompute, 0, SC_ATTN_UNFUSED, 0, m->has_layers, 0};
                sc_mem mm;
                REQUIRE(sc_cost_memory(&c, m->leaves + i, j - i, &mc, &mm, &err) == SC_OK);
                double copies = 0;
                for (int g = 0; g < x.n_groups; g++)
                    if (x.groups[g].next[i] < j)
                        copies += x.groups[g].all - (x.groups[g].here[j] - x.groups[g].here[i]);
                double want = mm.total - mm.workspace + copies * x.state_bpp;
                CHECK_NEAR(sc_pctx_memx(&x, k, i, j), want, 1e-12);
            }
        sc_pctx_free(&x);
        sc_model_free(m);
        if (sc_test_failed_now())
            break;
    }
}

/* ---- strict never splits ------------------------------------------------------ */

TEST(partitioner_strict_never_splits_a_group)
{
    rng_state = 0x5555aaaa5555aaaaULL;
    int done = 0;
    for (int tr = 0; tr < 300; tr++) {
        int ok;
        sc_model *m = random_model(&ok);
        REQUIRE(ok);
        sc_cluster c = cluster("p4d.24xlarge", 16);
        sc_partitioner_cfg cfg;
        int inflight[8];
        random_cfg(&cfg, m, &c, inflight);
        cfg.shared = SC_SHARED_STRICT;
        c.gpu.memory_bytes = 1e15; /* ample: only the policy constrains */
        cfg.mem_weight = runif(0, 1);
        sc_partition p = {0};
        sc_error err;
        for (int meth = 0; meth < 2; meth++) {
            sc_status st = meth ? sc_partition_tree(&cfg, &p, &err)
                                : sc_partition_optimal(&cfg, &p, &err);
            if (st) {
                CHECK_EQ_INT(st, SC_EINVAL);
                CHECK_STR_HAS(err.msg, "cannot split into");
                continue;
            }
            CHECK(contiguous_nonempty(&p, cfg.n_stages, m->n_leaves));
            sc_part_eval e;
            REQUIRE(sc_partition_eval(&cfg, &p, &e, &err) == SC_OK);
            CHECK(!e.splits_shared);
            /* every member of every group on one stage */
            for (int a = 0; a < m->n_leaves; a++)
                for (int b2 = a + 1; b2 < m->n_leaves; b2++) {
                    const sc_module *x = m->leaves[a], *y = m->leaves[b2];
                    if (x->shared && y->shared && !strcmp(x->shared, y->shared))
                        CHECK_EQ_INT(sc_partition_stage_of(&p, a), sc_partition_stage_of(&p, b2));
                }
            sc_part_eval_free(&e);
            sc_partition_free(&p);
            done++;
        }
        sc_model_free(m);
        if (sc_test_failed_now() > 10)
            break;
    }
    CHECK(done > 200);
}

TEST(partitioner_strict_tied_gpt_cannot_split)
{
    sc_model *m = NULL;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c = cluster("p4d.24xlarge", 2);
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 4);
    cfg.shared = SC_SHARED_STRICT;
    sc_partition p = {0};
    CHECK_EQ_INT(sc_partition_optimal(&cfg, &p, &err), SC_EINVAL);
    CHECK(!strcmp(err.msg, "shared group 'wte' spans embed..head: cannot split into 4 stages; "
                           "use the replicate policy"));
    CHECK_EQ_INT(sc_partition_tree(&cfg, &p, &err), SC_EINVAL);
    CHECK(!strcmp(err.msg, "shared group 'wte' spans embed..head: cannot split into 4 stages; "
                           "use the replicate policy"));
    /* S = 1 is fine, and replicate splits it */
    sc_partitioner_cfg_init(&cfg, m, &c, 1);
    cfg.shared = SC_SHARED_STRICT;
    REQUIRE(sc_partition_optimal(&cfg, &p, &err) == SC_OK);
    CHECK_EQ_INT(p.n_stages, 1);
    sc_partition_free(&p);
    sc_partitioner_cfg_init(&cfg, m, &c, 4);
    REQUIRE(sc_partition_optimal(&cfg, &p, &err) == SC_OK);
    CHECK(contiguous_nonempty(&p, 4, m->n_leaves));
    sc_partition_free(&p);
    sc_model_free(m);
}

/* ---- built-ins: optimal is never worse than tree or uniform ------------------ */

TEST(partitioner_optimal_beats_tree_and_uniform_builtins)
{
    static const char *const models[] = {"gpt-1.3b", "t5-3b", "fid-3b", "mm-1.3b"};
    static const int shapes[][3] = {{2, 2, 1}, {4, 4, 1}, {8, 8, 1}, {4, 2, 2}, {16, 4, 4}};
    for (size_t mi = 0; mi < SC_ARRAY_LEN(models); mi++) {
        sc_model *m = NULL;
        sc_error err;
        REQUIRE(sc_model_open(models[mi], &m, &err) == SC_OK);
        for (size_t si = 0; si < SC_ARRAY_LEN(shapes); si++) {
            for (int tp = 1; tp <= 8; tp *= 8) {
                sc_cluster c = cluster("p4de.24xlarge", 16);
                c.gpu.memory_bytes = 1e15; /* ample: compare time only */
                sc_partitioner_cfg cfg;
                sc_partitioner_cfg_init(&cfg, m, &c, shapes[si][0]);
                cfg.pp = shapes[si][1];
                cfg.v = shapes[si][2];
                cfg.tp = tp;
                cfg.dp = 2;
                sc_partition po = {0}, pt = {0}, pu = {0};
                REQUIRE(sc_partition_optimal(&cfg, &po, &err) == SC_OK);
                REQUIRE(sc_partition_tree(&cfg, &pt, &err) == SC_OK);
                REQUIRE(sc_partition_uniform(m, cfg.n_stages, &pu, &err) == SC_OK);
                CHECK(contiguous_nonempty(&pt, cfg.n_stages, m->n_leaves));
                sc_part_eval eo, et, eu;
                REQUIRE(sc_partition_eval(&cfg, &po, &eo, &err) == SC_OK);
                REQUIRE(sc_partition_eval(&cfg, &pt, &et, &err) == SC_OK);
                REQUIRE(sc_partition_eval(&cfg, &pu, &eu, &err) == SC_OK);
                CHECK(eo.bottleneck_s <= et.bottleneck_s * (1 + 1e-12));
                CHECK(eo.bottleneck_s <= eu.bottleneck_s * (1 + 1e-12));
                if (getenv("SC_PART_VERBOSE"))
                    fprintf(stderr, "%-9s S %2d pp %2d tp %d: optimal %.3f ms tree %.3f ms "
                                    "uniform %.3f ms\n",
                            models[mi], cfg.n_stages, cfg.pp, tp, eo.bottleneck_s * 1e3,
                            et.bottleneck_s * 1e3, eu.bottleneck_s * 1e3);
                sc_part_eval_free(&eo);
                sc_part_eval_free(&et);
                sc_part_eval_free(&eu);
                sc_partition_free(&po);
                sc_partition_free(&pt);
                sc_partition_free(&pu);
            }
        }
        sc_model_free(m);
    }
}

/* With real memory: whenever uniform or tree fits, optimal fits and is no
 * slower. */
TEST(partitioner_optimal_beats_fitting_uniform_real_memory)
{
    static const char *const models[] = {"gpt-1.3b", "t5-3b", "fid-3b", "mm-1.3b"};
    int compared = 0;
    for (size_t mi = 0; mi < SC_ARRAY_LEN(models); mi++) {
        sc_model *m = NULL;
        sc_error err;
        REQUIRE(sc_model_open(models[mi], &m, &err) == SC_OK);
        for (int S = 2; S <= 16; S *= 2)
            for (int rc = 0; rc <= 2; rc++) {
                sc_cluster c = cluster("p4d.24xlarge", 16);
                sc_partitioner_cfg cfg;
                sc_partitioner_cfg_init(&cfg, m, &c, S);
                cfg.tp = 2;
                cfg.dp = 4;
                cfg.zero = 1;
                cfg.recompute = (sc_recompute)rc;
                sc_partition po = {0}, pu = {0}, pt = {0};
                REQUIRE(sc_partition_uniform(m, S, &pu, &err) == SC_OK);
                REQUIRE(sc_partition_tree(&cfg, &pt, &err) == SC_OK);
                sc_part_eval eu, et;
                REQUIRE(sc_partition_eval(&cfg, &pu, &eu, &err) == SC_OK);
                REQUIRE(sc_partition_eval(&cfg, &pt, &et, &err) == SC_OK);
                sc_status st = sc_partition_optimal(&cfg, &po, &err);
                if (eu.fits || et.fits)
                    CHECK_EQ_INT(st, SC_OK);
                if (st == SC_OK) {
                    sc_part_eval eo;
                    REQUIRE(sc_partition_eval(&cfg, &po, &eo, &err) == SC_OK);
                    CHECK(eo.fits);
                    if (eu.fits)
                        CHECK(eo.bottleneck_s <= eu.bottleneck_s * (1 + 1e-12));
                    if (et.fits)
                        CHECK(eo.bottleneck_s <= et.bottleneck_s * (1 + 1e-12));
                    compared++;
                    sc_part_eval_free(&eo);
                } else {
                    CHECK_EQ_INT(st, SC_ENOFIT);
                    CHECK_STR_HAS(err.msg, "does not fit: needs ");
                }
                sc_part_eval_free(&eu);
                sc_part_eval_free(&et);
                sc_partition_free(&po);
                sc_partition_free(&pu);
                sc_partition_free(&pt);
            }
        sc_model_free(m);
    }
    CHECK(compared > 10);
}

/* ---- constructed cases --------------------------------------------------------- */

/* n leaf layers under the root with the given params and flops. */
static sc_model *layers(int n, const double *params, const double *flops, double act_out)
{
    sc_model *m = sc_model_new("lay", SC_BF16, 8);
    sc_module *r = sc_model_add(m, NULL, "lay", "model");
    for (int i = 0; i < n; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "l%d", i);
        sc_module *x = sc_model_add(m, r, nm, "block");
        x->params = params[i];
        x->flops_fwd = flops[i];
        x->act_out_bytes = act_out;
    }
    sc_error err;
    if (sc_model_finish(m, "<t>", &err)) {
        sc_model_free(m);
        return NULL;
    }
    return m;
}

TEST(partitioner_does_not_fit_message)
{
    /* 4 layers of 2^26 bf16 parameters: 16 B each = 1 GiB of states per
     * layer. Two stages need 2 GiB at best. */
    double P = 67108864, params[4] = {P, P, P, P}, flops[4] = {1e12, 1e12, 1e12, 1e12};
    sc_model *m = layers(4, params, flops, 1e6);
    REQUIRE(m);
    sc_cluster c = cluster("p4d.24xlarge", 1);
    c.eff.workspace_bytes = 0;
    c.gpu.memory_bytes = 1.5 * GiB;
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 2);
    sc_partition p = {0};
    sc_error err;
    CHECK_EQ_INT(sc_partition_optimal(&cfg, &p, &err), SC_ENOFIT);
    CHECK(!strcmp(err.msg, "does not fit: needs 2.0 GiB per GPU, has 1.5 GiB"));
    /* with a workspace of 0.5 GiB and an interleaved v = 2 (S = 4, pp 2):
     * every chunk holds one layer (1 GiB), a rank two: 0.5 + 2 x 1 */
    c.eff.workspace_bytes = 0.5 * GiB;
    sc_partitioner_cfg_init(&cfg, m, &c, 4);
    cfg.pp = 2;
    cfg.v = 2;
    CHECK_EQ_INT(sc_partition_optimal(&cfg, &p, &err), SC_ENOFIT);
    CHECK(!strcmp(err.msg, "does not fit: needs 2.5 GiB per GPU, has 1.5 GiB"));
    /* enough memory: it fits */
    c.gpu.memory_bytes = 2.5 * GiB;
    CHECK_EQ_INT(sc_partition_optimal(&cfg, &p, &err), SC_OK);
    sc_partition_free(&p);
    sc_model_free(m);
}

/* A tied model: embed (shared, P params) ... head (shared, no params). */
static sc_model *tied(int L, double P)
{
    sc_model *m = sc_model_new("tied", SC_BF16, 8);
    sc_module *r = sc_model_add(m, NULL, "tied", "model");
    sc_module *e = sc_model_add(m, r, "embed", "embedding");
    e->params = P;
    e->act_out_bytes = 1e6;
    e->flops_fwd = 1e9;
    sc_module_set_shared(m, e, "wte");
    for (int i = 0; i < L; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "b%d", i);
        sc_module *x = sc_model_add(m, r, nm, "block");
        x->params = 1e6;
        x->flops_fwd = 1e12;
        x->act_out_bytes = 1e6;
    }
    sc_module *h = sc_model_add(m, r, "head", "head");
    h->flops_fwd = 1e12;
    h->act_out_bytes = 1e7;
    sc_module_set_shared(m, h, "wte");
    sc_error err;
    if (sc_model_finish(m, "<t>", &err)) {
        sc_model_free(m);
        return NULL;
    }
    return m;
}

TEST(partitioner_replicate_charges_copies)
{
    double P = 1e9;
    sc_model *m = tied(6, P);
    REQUIRE(m);
    sc_cluster c = cluster("p4d.24xlarge", 1);
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 2);
    cfg.inflight_max = 1;
    sc_partition p = {0};
    sc_error err;
    int starts[1] = {4};
    REQUIRE(sc_partition_explicit(m, 2, starts, 1, &p, &err) == SC_OK);
    sc_part_eval e;
    REQUIRE(sc_partition_eval(&cfg, &p, &e, &err) == SC_OK);
    /* the last stage (b3..head) is charged the embedding's states */
    sc_mem_cfg mc = {SC_BF16, 1, 1, 0, 1, 1, SC_RECOMPUTE_NONE, 0, SC_ATTN_UNFUSED, 0,
                     m->has_layers, 0};
    sc_mem mm;
    REQUIRE(sc_cost_memory(&c, m->leaves + 4, m->n_leaves - 4, &mc, &mm, &err) == SC_OK);
    double w, g, o;
    sc_cost_state_bytes(SC_BF16, &w, &g, &o);
    CHECK_NEAR(e.mem_bytes[1], mm.total + P * (w + g + o), 1e-12);
    CHECK(e.splits_shared);
    /* ZeRO 3 over dp 4 divides the copy as it divides the rest */
    cfg.zero = 3;
    cfg.dp = 4;
    sc_part_eval e3;
    REQUIRE(sc_partition_eval(&cfg, &p, &e3, &err) == SC_OK);
    mc.zero = 3;
    mc.dp = 4;
    REQUIRE(sc_cost_memory(&c, m->leaves + 4, m->n_leaves - 4, &mc, &mm, &err) == SC_OK);
    CHECK_NEAR(e3.mem_bytes[1], mm.total + P * (w + g + o) / 4, 1e-12);
    sc_part_eval_free(&e3);
    /* optimal accounts for it: memory between "without the copy" and "with
     * it" makes every split infeasible (both stages would hold the group) */
    cfg.zero = 0;
    cfg.dp = 1;
    double one = e.mem_bytes[1];
    c.gpu.memory_bytes = one - 1; /* the last stage with its copy no longer fits */
    sc_partition po = {0};
    sc_status st = sc_partition_optimal(&cfg, &po, &err);
    if (st == SC_OK) {
        sc_part_eval eo;
        REQUIRE(sc_partition_eval(&cfg, &po, &eo, &err) == SC_OK);
        CHECK(eo.fits);
        CHECK(eo.mem_bytes[0] <= c.gpu.memory_bytes && eo.mem_bytes[1] <= c.gpu.memory_bytes);
        sc_part_eval_free(&eo);
        sc_partition_free(&po);
    } else {
        CHECK_EQ_INT(st, SC_ENOFIT);
    }
    /* the copy alone makes every split too large: the best split (embed +
     * 3 blocks | 3 blocks + head + copy) needs (P + 3e6) x 16 B per stage */
    c.gpu.memory_bytes = c.eff.workspace_bytes + P * (w + g + o) * 1.001;
    CHECK_EQ_INT(sc_partition_optimal(&cfg, &po, &err), SC_ENOFIT);
    char want[128];
    snprintf(want, sizeof want, "does not fit: needs %.1f GiB per GPU, has %.1f GiB",
             (c.eff.workspace_bytes + (P + 3e6) * (w + g + o)) / GiB, c.gpu.memory_bytes / GiB);
    CHECK(!strcmp(err.msg, want));
    sc_part_eval_free(&e);
    sc_partition_free(&p);
    sc_model_free(m);
}

TEST(partitioner_tree_contiguous_and_memory_weight)
{
    /* 8 layers: the first four hold the parameters, the last four the
     * compute. Balancing time puts the cut late, balancing memory early. */
    double params[8] = {4e8, 4e8, 4e8, 4e8, 1e6, 1e6, 1e6, 1e6};
    double flops[8] = {1e10, 1e10, 1e10, 1e10, 4e12, 4e12, 4e12, 4e12};
    sc_model *m = layers(8, params, flops, 1e6);
    REQUIRE(m);
    sc_cluster c = cluster("p4d.24xlarge", 1);
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 2);
    sc_partition p0 = {0}, p1 = {0};
    sc_error err;
    cfg.mem_weight = 0;
    REQUIRE(sc_partition_tree(&cfg, &p0, &err) == SC_OK);
    cfg.mem_weight = SC_PARTITION_W_MEMORY;
    REQUIRE(sc_partition_tree(&cfg, &p1, &err) == SC_OK);
    CHECK(contiguous_nonempty(&p0, 2, 8));
    CHECK(contiguous_nonempty(&p1, 2, 8));
    CHECK_EQ_INT(p0.first[1], 6);    /* time: 2 heavy layers on each side */
    CHECK(p1.first[1] < p0.first[1]); /* memory pulls the cut forward */
    CHECK(p1.first[1] <= 3);
    /* and the memory-balanced split has the lower peak memory */
    sc_part_eval e0, e1;
    REQUIRE(sc_partition_eval(&cfg, &p0, &e0, &err) == SC_OK);
    REQUIRE(sc_partition_eval(&cfg, &p1, &e1, &err) == SC_OK);
    CHECK(e1.max_mem_bytes < e0.max_mem_bytes);
    CHECK(e0.bottleneck_s < e1.bottleneck_s);
    sc_part_eval_free(&e0);
    sc_part_eval_free(&e1);
    sc_partition_free(&p0);
    sc_partition_free(&p1);
    sc_model_free(m);
}

/* Tree descends into a child too large for one stage, and among near-equal
 * cuts takes the one with fewer bytes. */
TEST(partitioner_tree_descends_and_prefers_small_boundaries)
{
    sc_model *m = sc_model_new("nest", SC_BF16, 8);
    sc_module *r = sc_model_add(m, NULL, "nest", "model");
    sc_module *a = sc_model_add(m, r, "a", "encoder"); /* 6 of 8 units of work */
    for (int i = 0; i < 6; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "a%d", i);
        sc_module *x = sc_model_add(m, a, nm, "block");
        x->flops_fwd = 1e12;
        x->act_out_bytes = i == 2 ? 1e9 : (i == 3 ? 1e3 : 1e8);
    }
    for (int i = 0; i < 2; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "b%d", i);
        sc_module *x = sc_model_add(m, r, nm, "block");
        x->flops_fwd = 1e12;
        x->act_out_bytes = 1e8;
    }
    sc_error err;
    REQUIRE(sc_model_finish(m, "<t>", &err) == SC_OK);
    sc_cluster c = cluster("p4d.24xlarge", 1);
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 2);
    cfg.mem_weight = 0;
    sc_partition p = {0};
    REQUIRE(sc_partition_tree(&cfg, &p, &err) == SC_OK);
    /* ideal cut after a3 (4 | 4): a3's output is tiny, so it is taken */
    CHECK_EQ_INT(p.first[1], 4);
    sc_partition_free(&p);
    /* 4 stages: ideal cuts at 2, 4, 6: the cut after a2 (1 GB) sits at the
     * ideal, no near-equal alternative exists: it is kept */
    sc_partitioner_cfg_init(&cfg, m, &c, 4);
    cfg.mem_weight = 0;
    REQUIRE(sc_partition_tree(&cfg, &p, &err) == SC_OK);
    CHECK(contiguous_nonempty(&p, 4, 8));
    CHECK_EQ_INT(p.first[1], 2);
    CHECK_EQ_INT(p.first[2], 4);
    CHECK_EQ_INT(p.first[3], 6);
    sc_partition_free(&p);
    sc_model_free(m);
}

/* The time model: compute from sc_cost_module_time plus p2p both ways on
 * each boundary, inter-node when the pipeline ranks sit on other nodes. */
TEST(partitioner_eval_time_model)
{
    double params[4] = {1e6, 1e6, 1e6, 1e6}, flops[4] = {1e12, 2e12, 3e12, 4e12};
    sc_model *m = layers(4, params, flops, 3e7);
    REQUIRE(m);
    sc_cluster c = cluster("p4d.24xlarge", 4);
    sc_error err;
    for (int tp = 1; tp <= 8; tp *= 8) {
        sc_partitioner_cfg cfg;
        sc_partitioner_cfg_init(&cfg, m, &c, 2);
        cfg.tp = tp;
        cfg.mbs = 2;
        int starts[1] = {2};
        sc_partition p = {0};
        REQUIRE(sc_partition_explicit(m, 2, starts, 1, &p, &err) == SC_OK);
        sc_part_eval e;
        REQUIRE(sc_partition_eval(&cfg, &p, &e, &err) == SC_OK);
        double f, b, comm;
        REQUIRE(sc_cost_modules_time(&c, m->leaves, 2, SC_BF16, tp, 2, &f, &b, &err) == SC_OK);
        /* tp 8 fills a node: ranks 0 and 1 are on different nodes */
        REQUIRE(sc_cost_p2p(&c, 3e7 * 2 / tp, tp == 8, tp, &comm, &err) == SC_OK);
        CHECK_NEAR(e.time_s[0], f + b + 2 * comm, 1e-12);
        REQUIRE(sc_cost_modules_time(&c, m->leaves + 2, 2, SC_BF16, tp, 2, &f, &b, &err) ==
                SC_OK);
        CHECK_NEAR(e.time_s[1], f + b + 2 * comm, 1e-12);
        CHECK_EQ_INT(e.bottleneck_stage, 1);
        sc_part_eval_free(&e);
        sc_partition_free(&p);
    }
    sc_model_free(m);
}

/* An inputs edge crossing a boundary adds its bytes there (and on every
 * boundary it crosses). */
TEST(partitioner_inputs_edges_cross_boundaries)
{
    double params[5] = {0, 0, 0, 0, 0}, flops[5] = {1e12, 1e12, 1e12, 1e12, 1e12};
    sc_model *m = sc_model_new("edge", SC_BF16, 8);
    sc_module *r = sc_model_add(m, NULL, "edge", "model");
    for (int i = 0; i < 5; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "l%d", i);
        sc_module *x = sc_model_add(m, r, nm, "block");
        x->params = params[i];
        x->flops_fwd = flops[i];
        x->act_out_bytes = 1e6;
        if (i == 0)
            x->act_out_bytes = 5e8;
        if (i == 4)
            sc_module_add_input(m, x, "l0");
    }
    sc_error err;
    REQUIRE(sc_model_finish(m, "<t>", &err) == SC_OK);
    sc_cluster c = cluster("p4d.24xlarge", 1);
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 1);
    sc_pctx x;
    REQUIRE(sc_pctx_init(&x, &cfg, &err) == SC_OK);
    /* l0's output as the next leaf's input and again as l4's (step.c
     * counts both) */
    CHECK_NEAR(x.bytes[1], 5e8 + 5e8, 1e-15);
    CHECK_NEAR(x.bytes[2], 1e6 + 5e8, 1e-15); /* l1's plus the edge */
    CHECK_NEAR(x.bytes[4], 1e6 + 5e8, 1e-15);
    sc_pctx_free(&x);
    sc_model_free(m);
}

/* Under TE's tp overlap (cfg.tp_overlap with sp, tp >= 2) the partitioner
 * times a layer's attention and MLP leaves with their tp GEMMs in chunks,
 * as the step's simulation does (sc_compute_cfg.tp_overlap), and the LM
 * head whole: stages balance on what they run. */
TEST(partitioner_times_tp_overlap_chunks)
{
    sc_model *m = NULL;
    sc_error err;
    REQUIRE(sc_model_open("gpt-13b", &m, &err) == SC_OK);
    sc_cluster c = cluster("dgx-h100", 2);
    sc_pctx x[2];
    for (int o = 0; o < 2; o++) {
        sc_partitioner_cfg cfg;
        sc_partitioner_cfg_init(&cfg, m, &c, 4);
        cfg.tp = 8;
        cfg.sp = 1;
        cfg.attn = SC_ATTN_FLASH;
        cfg.tp_overlap = o;
        REQUIRE(sc_pctx_init(&x[o], &cfg, &err) == SC_OK);
    }
    int layers = 0, heads = 0, same = 0;
    for (int l = 0; l < m->n_leaves; l++) {
        const sc_module *leaf = m->leaves[l];
        sc_compute_cfg cc = {m->dtype, 8, 1, 1, SC_ATTN_FLASH, 0, 0, 1, 0};
        double f = 0, b = 0;
        REQUIRE(sc_cost_module_time_cfg(&c, leaf, &cc, &f, &b, &err) == SC_OK);
        CHECK_NEAR(x[1].t[l], f + b, 1e-15);
        int layer = !strcmp(leaf->kind, "attention") || !strcmp(leaf->kind, "mlp");
        if (layer && x[1].t[l] > x[0].t[l])
            layers++;
        if (!strcmp(leaf->kind, "head"))
            heads += x[1].t[l] == x[0].t[l];
        same += !layer && x[1].t[l] == x[0].t[l];
    }
    CHECK_EQ_INT(layers, 2 * 40); /* every layer's attention and MLP costs more in chunks */
    CHECK_EQ_INT(heads, 1);
    CHECK_EQ_INT(same, m->n_leaves - 2 * 40);
    sc_pctx_free(&x[0]);
    sc_pctx_free(&x[1]);
    sc_model_free(m);
}

TEST(partitioner_bad_config)
{
    sc_model *m = NULL;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c = cluster("p4d.24xlarge", 2);
    sc_partitioner_cfg cfg;
    sc_partition p = {0};
    sc_partitioner_cfg_init(&cfg, m, &c, 4);
    cfg.v = 2;
    CHECK_EQ_INT(sc_partition_optimal(&cfg, &p, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "4 stages is not pp 4 x v 2");
    sc_partitioner_cfg_init(&cfg, m, &c, 1000);
    CHECK_EQ_INT(sc_partition_tree(&cfg, &p, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "fewer than the 1000 stages");
    sc_partitioner_cfg_init(&cfg, m, &c, 2);
    cfg.mem_weight = 1.5;
    CHECK_EQ_INT(sc_partition_tree(&cfg, &p, &err), SC_EINVAL);
    CHECK_EQ_INT(sc_partition_by_method("magic", &cfg, &p, &err), SC_EINVAL);
    cfg.mem_weight = 0.5;
    REQUIRE(sc_partition_by_method("uniform", &cfg, &p, &err) == SC_OK);
    sc_partition_free(&p);
    CHECK_EQ_INT(sc_shared_policy_parse("strict"), SC_SHARED_STRICT);
    CHECK_EQ_INT(sc_shared_policy_parse("nope"), -1);
    CHECK(!strcmp(sc_shared_policy_name(SC_SHARED_REPLICATE), "replicate"));
    sc_model_free(m);
}

/* Allocation failures anywhere give SC_ENOMEM and leak nothing (under the
 * sanitizer build). */
TEST(partitioner_out_of_memory)
{
    double params[6] = {1, 2, 3, 4, 5, 6}, flops[6] = {1e12, 1e12, 1e12, 1e12, 1e12, 1e12};
    sc_model *m = layers(6, params, flops, 1e6);
    REQUIRE(m);
    sc_cluster c = cluster("p4d.24xlarge", 1);
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 3);
    for (int meth = 0; meth < 3; meth++) {
        int seen_ok = 0;
        for (long n = 1; n < 200 && !seen_ok; n++) {
            sc_partition p = {0};
            sc_part_eval e = {0};
            sc_error err;
            sc_alloc_fail_at(n);
            sc_status st;
            if (meth == 2) {
                sc_partition q = {0};
                int starts[2] = {2, 4};
                sc_alloc_fail_at(0);
                REQUIRE(sc_partition_explicit(m, 3, starts, 2, &q, &err) == SC_OK);
                sc_alloc_fail_at(n);
                st = sc_partition_eval(&cfg, &q, &e, &err);
                sc_partition_free(&q);
            } else {
                st = meth ? sc_partition_tree(&cfg, &p, &err) : sc_partition_optimal(&cfg, &p, &err);
            }
            sc_alloc_fail_at(0);
            if (st == SC_OK)
                seen_ok = 1;
            else
                CHECK_EQ_INT(st, SC_ENOMEM);
            sc_partition_free(&p);
            sc_part_eval_free(&e);
        }
        CHECK(seen_ok);
    }
    sc_model_free(m);
}

/* The memory the partitioners see is the simulator's, per pipeline rank,
 * with the schedule's in-flight counts (v = 1: every recompute policy; v = 2:
 * recompute none and selective, where a rank's memory is the sum of its
 * chunks'). */
TEST(partitioner_memory_matches_simulator)
{
    sc_model *m = NULL;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c = cluster("p4d.24xlarge", 1);
    static const struct {
        int pp, v, rc;
        const char *sched;
    } cases[] = {{4, 1, 0, "1f1b"}, {4, 1, 1, "1f1b"}, {4, 1, 2, "gpipe"}, {2, 2, 0, "interleaved"},
                 {2, 2, 1, "interleaved"}};
    for (size_t ci = 0; ci < SC_ARRAY_LEN(cases); ci++) {
        int pp = cases[ci].pp, v = cases[ci].v, S = pp * v, mb = 8;
        sc_sched *sch = NULL;
        REQUIRE(sc_sched_generate(cases[ci].sched, pp, mb, v, &sch, &err) == SC_OK);
        int peak[8];
        REQUIRE(sc_sched_peak_inflight(sch, peak) == SC_OK);
        sc_sched_free(sch);
        sc_partitioner_cfg cfg;
        sc_partitioner_cfg_init(&cfg, m, &c, S);
        cfg.pp = pp;
        cfg.v = v;
        cfg.tp = 2;
        cfg.zero = 1;
        cfg.dp = 1;
        cfg.recompute = (sc_recompute)cases[ci].rc;
        cfg.inflight = peak;
        sc_partition p = {0};
        REQUIRE(sc_partition_optimal(&cfg, &p, &err) == SC_OK);
        sc_part_eval e;
        REQUIRE(sc_partition_eval(&cfg, &p, &e, &err) == SC_OK);
        sc_step_cfg sc = {.dp = 1, .tp = 2, .pp = pp, .v = v, .m = mb, .mbs = 1,
                          .schedule = cases[ci].sched, .zero = 1,
                          .recompute = cfg.recompute, .partition = &p};
        sc_step_result *r = NULL;
        REQUIRE(sc_step_simulate(m, &c, &sc, &r, &err) == SC_OK);
        for (int k = 0; k < pp; k++)
            CHECK_NEAR(e.rank_mem[k], r->mem[k].total, 1e-9);
        if (getenv("SC_PART_VERBOSE"))
            fprintf(stderr, "%s v %d: rank 0 %.6g vs %.6g, fits %d\n", cases[ci].sched, v,
                    e.rank_mem[0], r->mem[0].total, e.fits);
        sc_step_result_free(r);
        sc_part_eval_free(&e);
        sc_partition_free(&p);
    }
    sc_model_free(m);
}
