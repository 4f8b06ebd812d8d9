/* test_seed38.c - `repro seed38`: the closed form, the layouts both models
 * run, the bandwidth sweep's monotonicity, the files and the command. */
#include "check.h"
#include "cluster.h"
#include "json.h"
#include "model.h"
#include "search.h"
#include "seed38.h"
#include "step.h"

#include <stdlib.h>

TEST(seed38_closed_form)
{
    /* the text's 0.625: 1/2 + 1/2 · 1/log2 16 */
    CHECK_NEAR(sc_seed38_closed(0.5, 16), 0.625, 1e-15);
    /* "the network cost drops to a third": 1/2 + 1/2 · 1/3 */
    CHECK_NEAR(sc_seed38_closed(0.5, 8), 2.0 / 3.0, 1e-15);
    CHECK_NEAR(1 / sc_seed38_closed(0.5, 16) - 1, 0.6, 1e-12);
    CHECK_NEAR(1 / sc_seed38_closed(0.5, 8) - 1, 0.5, 1e-12);
    CHECK_NEAR(sc_seed38_closed(0, 16), 1, 1e-15);
    CHECK_NEAR(sc_seed38_closed(1, 16), 0.25, 1e-15);
    CHECK_NEAR(sc_seed38_closed(0.5, 2), 1, 1e-15); /* two machines: no gain */
}

static int open_gpt(sc_model **m, sc_cluster *c, int nodes)
{
    sc_error err = {0};
    if (sc_model_open("gpt-1.3b", m, &err) || sc_cluster_open("p4d.24xlarge", c, &err) ||
        sc_cluster_set_nodes(c, nodes, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    return 0;
}

TEST(seed38_layouts)
{
    sc_model *m = NULL;
    sc_cluster c;
    REQUIRE(!open_gpt(&m, &c, 16));
    sc_step_cfg b, p;
    int k = 0;
    sc_error err = {0};
    REQUIRE(sc_seed38_layouts(m, &c, 512, 8, &b, &p, &k, &err) == SC_OK);
    /* 16 heads: a tp group of at most 16 = 2 whole p4d nodes */
    CHECK_EQ_INT(k, 2);
    CHECK_EQ_INT(b.dp, 8);
    CHECK_EQ_INT(b.tp, 16);
    CHECK_EQ_INT(b.pp, 1);
    CHECK_EQ_INT(p.dp, 8);
    CHECK_EQ_INT(p.tp, 8);
    CHECK_EQ_INT(p.pp, 2);
    /* like for like: GPUs, microbatches, batch */
    CHECK_EQ_INT(b.dp * b.tp * b.pp, 128);
    CHECK_EQ_INT(p.dp * p.tp * p.pp, 128);
    CHECK_EQ_INT(b.m, 8);
    CHECK_EQ_INT(p.m, 8);
    CHECK_EQ_INT(b.mbs, 8);
    CHECK_EQ_INT(p.mbs, 8);
    CHECK_EQ_INT(b.dp * b.m * b.mbs, 512);
    /* the baseline's tp group crosses the node boundary; the pipeline's does not,
     * its stages do */
    CHECK_EQ_INT(sc_seed38_group_nodes(&b, c.gpus_per_node, 0), 2);
    CHECK_EQ_INT(sc_seed38_group_nodes(&b, c.gpus_per_node, 1), 1);
    CHECK_EQ_INT(sc_seed38_group_nodes(&p, c.gpus_per_node, 0), 1);
    CHECK_EQ_INT(sc_seed38_group_nodes(&p, c.gpus_per_node, 1), 2);
    /* errors */
    CHECK(sc_seed38_layouts(m, &c, 500, 8, &b, &p, &k, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "global batch 500");
    sc_cluster one = c;
    one.nodes = 1;
    CHECK(sc_seed38_layouts(m, &one, 512, 8, &b, &p, &k, &err) == SC_EINVAL);
    sc_cluster odd = c;
    odd.nodes = 3; /* 2 does not divide 3, and tp 24 does not divide 16 heads */
    CHECK(sc_seed38_layouts(m, &odd, 512, 8, &b, &p, &k, &err) == SC_EINVAL);
    sc_model_free(m);
}

/* The numbers printed come from exactly these layouts: recompute them here. */
TEST(seed38_same_layouts)
{
    sc_seed38_opts o = {.models = "gpt-1.3b"};
    sc_seed38 *r = NULL;
    sc_error err = {0};
    REQUIRE(sc_seed38_run(&o, &r, &err) == SC_OK);
    REQUIRE(r->n_models == 1);
    const sc_seed38_model *x = &r->models[0];
    CHECK_EQ_INT(r->nodes, 16);
    CHECK_EQ_INT(r->global_batch, 512);
    CHECK_EQ_INT(x->base_tp_nodes, 2);
    CHECK_EQ_INT(x->pipe_tp_nodes, 1);
    CHECK_EQ_INT(x->pipe_pp_nodes, 2);
    sc_model *m = NULL;
    sc_cluster c;
    REQUIRE(!open_gpt(&m, &c, 16));
    sc_step_cfg b, p;
    int k;
    REQUIRE(sc_seed38_layouts(m, &c, 512, 8, &b, &p, &k, &err) == SC_OK);
    CHECK(x->base.dp == b.dp && x->base.tp == b.tp && x->base.pp == b.pp && x->base.m == b.m &&
          x->base.mbs == b.mbs);
    CHECK(x->pipe.dp == p.dp && x->pipe.tp == p.tp && x->pipe.pp == p.pp && x->pipe.m == p.m &&
          x->pipe.mbs == p.mbs);
    sc_estimate eb, ep;
    REQUIRE(sc_estimate_step(m, &c, &b, &eb, &err) == SC_OK);
    REQUIRE(sc_estimate_step(m, &c, &p, &ep, &err) == SC_OK);
    CHECK_NEAR(x->est.base.step_s, eb.step_s, 1e-12);
    CHECK_NEAR(x->est.ratio, ep.step_s / eb.step_s, 1e-12);
    sc_step_result *sb = NULL, *sp = NULL;
    REQUIRE(sc_step_simulate(m, &c, &b, &sb, &err) == SC_OK);
    REQUIRE(sc_step_simulate(m, &c, &p, &sp, &err) == SC_OK);
    CHECK_NEAR(x->sim.base.step_s, sb->step_time_s, 1e-12);
    CHECK_NEAR(x->sim.pipe.step_s, sp->step_time_s, 1e-12);
    CHECK_NEAR(x->sim.ratio, sp->step_time_s / sb->step_time_s, 1e-12);
    CHECK_NEAR(x->sim.gain, sb->step_time_s / sp->step_time_s - 1, 1e-12);
    double comm = sb->breakdown.tp + sb->breakdown.pp + sb->breakdown.dp;
    CHECK_NEAR(x->sim.share, comm / sb->step_time_s, 1e-12);
    /* the baseline is the communication-bound one; the pipeline wins */
    CHECK(x->sim.share > x->sim.pipe.share);
    CHECK(x->sim.ratio < 1 && x->est.ratio < 1);
    CHECK_NEAR(x->sim.pred16, sc_seed38_closed(x->sim.share, 16), 1e-15);
    /* the preset's bandwidth is the sweep's factor-1 point */
    CHECK_NEAR(x->bw[3].x, 1, 0);
    CHECK_NEAR(x->bw[3].ratio_sim, x->sim.ratio, 1e-12);
    /* the node sweep at 16 nodes is the comparison itself */
    int found = 0;
    for (int i = 0; i < x->n_nodes; i++)
        if (x->nodes[i].x == 16) {
            found = 1;
            CHECK_NEAR(x->nodes[i].ratio_sim, x->sim.ratio, 1e-12);
            CHECK_NEAR(x->nodes[i].closed16, 0.625, 1e-15);
        }
    CHECK(found);
    CHECK_EQ_INT(x->n_nodes, 5);
    sc_step_result_free(sb);
    sc_step_result_free(sp);
    sc_model_free(m);
    sc_seed38_free(r);
}

/* Less inter-node bandwidth: a larger communication share for the baseline
 * and a smaller pipeline/baseline ratio, for both models and both cost
 * models, while the network is the baseline's bottleneck (factors 1/8..4;
 * strictly); beyond, with the presets' fitted collectives, NVSwitch at the tp
 * allreduce's size bounds the baseline's ring (the NICs, 4 x 400 Gb/s at 0.9,
 * outrun it) while the pipeline's sends keep speeding up, so only the share is
 * checked there, to within what the faster reduction gives back to the
 * compute it slowed. */
TEST(seed38_bandwidth_monotonic)
{
    sc_seed38 *r = NULL;
    sc_error err = {0};
    REQUIRE(sc_seed38_run(NULL, &r, &err) == SC_OK);
    REQUIRE(r->n_models == 2);
    for (int i = 0; i < r->n_models; i++) {
        const sc_seed38_model *x = &r->models[i];
        for (int k = 1; k < SC_SEED38_N_BW; k++) {
            const sc_seed38_point *a = &x->bw[k - 1], *b = &x->bw[k]; /* b: twice a's bandwidth */
            CHECK_NEAR(b->x, 2 * a->x, 1e-15);
            if (b->x > 4) {
                /* past the NICs' bottleneck the baseline's communication stops
                 * shrinking, but its data-parallel reduction still speeds up,
                 * and with it the compute it slowed (overlap_slowdown): the
                 * share may rise by that little */
                CHECK(b->share_sim <= a->share_sim + 0.002);
                CHECK(b->share_est <= a->share_est + 0.002);
                continue;
            }
            CHECK(a->share_sim >= b->share_sim - 1e-12);
            CHECK(a->share_est >= b->share_est - 1e-12);
            CHECK(a->ratio_sim <= b->ratio_sim + 1e-12);
            CHECK(a->ratio_est <= b->ratio_est + 1e-12);
            {
                CHECK(a->share_sim > b->share_sim);
                CHECK(a->ratio_sim < b->ratio_sim);
            }
        }
        CHECK(x->bw[0].share_sim > 0.9);
    }
    sc_seed38_free(r);
}

TEST(seed38_measured)
{
    sc_seed38_opts o = {.models = "gpt-1.3b", .nodes = 2, .global_batch = 64};
    sc_seed38 *r = NULL;
    sc_error err = {0};
    REQUIRE(sc_seed38_run(&o, &r, &err) == SC_OK);
    CHECK(isnan(r->models[0].measured_ratio));
    cJSON *j = sc_seed38_to_json(r);
    REQUIRE(j);
    cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "models"), 0);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(m0, "measured")));
    cJSON_Delete(j);
    CHECK(sc_seed38_set_measured(r, "gpt-9b", 0.7, "x", &err) == SC_ENOTFOUND);
    CHECK(sc_seed38_set_measured(r, "gpt-1.3b", -1, "x", &err) == SC_EINVAL);
    CHECK(sc_seed38_set_measured(r, "gpt-1.3b", NAN, "x", &err) == SC_EINVAL);
    REQUIRE(sc_seed38_set_measured(r, "gpt-1.3b", 0.8, "netcluster test", &err) == SC_OK);
    j = sc_seed38_to_json(r);
    REQUIRE(j);
    m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "models"), 0);
    cJSON *me = cJSON_GetObjectItem(m0, "measured");
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(me, "ratio")), 0.8, 0);
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(me, "gain")), 0.25, 1e-12);
    CHECK_STR_HAS(cJSON_GetStringValue(cJSON_GetObjectItem(me, "source")), "netcluster");
    cJSON_Delete(j);
    /* options */
    sc_seed38 *bad = NULL;
    sc_seed38_opts ob = {.models = "gpt-1.3b,,mm-1.3b"};
    CHECK(sc_seed38_run(&ob, &bad, &err) == SC_EINVAL);
    ob = (sc_seed38_opts){.models = "no-such-model"};
    CHECK(sc_seed38_run(&ob, &bad, &err) != SC_OK);
    ob = (sc_seed38_opts){.cluster = "no-such-cluster"};
    CHECK(sc_seed38_run(&ob, &bad, &err) != SC_OK);
    CHECK(bad == NULL);
    sc_seed38_free(r);
    sc_seed38_free(NULL);
}

static cJSON *load_json(const char *path)
{
    cJSON *j = NULL;
    sc_error err = {0};
    if (sc_json_load(path, &j, &err))
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    return j;
}

TEST(seed38_cli_files)
{
    const char *dir = sc_test_tmpdir(), *bin = sc_test_bin();
    static char out[1 << 17];
    /* the table, with the closed form's two variants */
    REQUIRE(sc_test_sh(out, sizeof out, "%s repro seed38 -o %s/a/b", bin, dir) == 0);
    CHECK_STR_HAS(out, "ratio 0.6250");
    CHECK_STR_HAS(out, "ratio 0.6667");
    CHECK_STR_HAS(out, "2. analytical");
    CHECK_STR_HAS(out, "3. simulated");
    CHECK_STR_HAS(out, "gpt-1.3b");
    CHECK_STR_HAS(out, "mm-1.3b");
    CHECK_STR_HAS(out, "tp group on 2 nodes");
    static const char *files[] = {"seed38.json", "seed38_vs_share.png", "seed38_vs_share.svg",
                                  "seed38_vs_nodes.png", "seed38_vs_nodes.svg"};
    char path[1024];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/a/b/%s", dir, files[i]);
        CHECK(sc_test_exists(path));
    }
    /* the PNGs are PNGs, the SVGs SVGs */
    snprintf(path, sizeof path, "%s/a/b/seed38_vs_share.png", dir);
    FILE *f = fopen(path, "rb");
    unsigned char sig[8] = {0};
    CHECK(f && fread(sig, 1, 8, f) == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8));
    if (f)
        fclose(f);
    REQUIRE(sc_test_sh(out, sizeof out, "grep -c '<svg' %s/a/b/seed38_vs_nodes.svg", dir) == 0);
    /* the JSON file parses and holds the numbers */
    snprintf(path, sizeof path, "%s/a/b/seed38.json", dir);
    cJSON *j = load_json(path);
    REQUIRE(j);
    CHECK_STR_HAS(cJSON_GetStringValue(cJSON_GetObjectItem(j, "format")), SC_SEED38_FORMAT);
    cJSON *cf = cJSON_GetObjectItem(j, "closed_form");
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cf, "log2_16"), "ratio")),
               0.625, 1e-15);
    cJSON *models = cJSON_GetObjectItem(j, "models");
    CHECK_EQ_INT(cJSON_GetArraySize(models), 2);
    cJSON *m0 = cJSON_GetArrayItem(models, 0);
    cJSON *sim = cJSON_GetObjectItem(m0, "simulated");
    double ratio = cJSON_GetNumberValue(cJSON_GetObjectItem(sim, "ratio"));
    CHECK(ratio > 0 && ratio < 1);
    CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m0, "baseline"),
                                                          "tp_nodes")), 2);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(m0, "sweep_bandwidth")), SC_SEED38_N_BW);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(m0, "sweep_nodes")), 5);
    cJSON_Delete(j);
    /* --json prints the same document */
    REQUIRE(sc_test_sh(out, sizeof out, "%s repro seed38 --model gpt-1.3b --json -o %s/c", bin,
                       dir) == 0);
    cJSON *k = NULL;
    sc_error err = {0};
    REQUIRE(sc_json_parse("stdout", out, strlen(out), &k, &err) == SC_OK);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(k, "models")), 1);
    cJSON_Delete(k);
}

TEST(seed38_cli_bad_args)
{
    const char *dir = sc_test_tmpdir(), *bin = sc_test_bin();
    char out[4096], path[1024];
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro", bin), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed39", bin), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --bogus -o %s/x", bin, dir), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --nodes 0 -o %s/x", bin, dir), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --nodes 1 -o %s/x", bin, dir), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --nodes x -o %s/x", bin, dir), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --global-batch 100 -o %s/x", bin,
                            dir), 2);
    CHECK_STR_HAS(out, "global batch 100");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --model nope -o %s/x", bin, dir), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --cluster nope -o %s/x", bin, dir),
                 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 extra -o %s/x", bin, dir), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 -o", bin), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 -o ''", bin), 2);
    /* nothing written on failure */
    snprintf(path, sizeof path, "%s/x", dir);
    CHECK(!sc_test_exists(path));
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro seed38 --help", bin), 0);
    CHECK_STR_HAS(out, "usage: stagecraft repro seed38");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s repro --help", bin), 0);
}

/* A write that fails (gnuplot missing) leaves the folder's files as they
 * were and no staging folder behind (common/outdir.h). */
TEST(seed38_write_failure_keeps_folder)
{
    sc_seed38_opts o = {.models = "gpt-1.3b", .nodes = 2, .global_batch = 64};
    sc_seed38 *r = NULL;
    sc_error err = {0};
    REQUIRE(sc_seed38_run(&o, &r, &err) == SC_OK);
    char dir[700], path[800], sub[900], out[4096];
    snprintf(dir, sizeof dir, "%s/keep", sc_test_tmpdir());
    snprintf(path, sizeof path, "%s/seed38_vs_share.png", dir);
    REQUIRE(sc_test_sh(out, sizeof out, "mkdir -p %s && printf old > %s", dir, path) == 0);
    const char *old_path = getenv("PATH");
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", old_path ? old_path : "/usr/bin:/bin");
    setenv("PATH", "/nonexistent", 1);
    sc_status st = sc_seed38_write(r, dir, &err);
    setenv("PATH", saved, 1);
    CHECK_EQ_INT(st, SC_ENOTSUP);
    CHECK_STR_HAS(err.msg, "gnuplot not found");
    REQUIRE(sc_test_sh(out, sizeof out, "cat %s; echo; ls -A %s | wc -l", path, dir) == 0);
    CHECK_STR_HAS(out, "old\n1\n");
    /* a folder that cannot be made names the file in the way */
    snprintf(sub, sizeof sub, "%s/sub", path);
    CHECK_EQ_INT(sc_seed38_write(r, sub, &err), SC_EIO);
    CHECK_STR_HAS(err.msg, "seed38_vs_share.png: exists and is not a folder");
    sc_seed38_free(r);
}
