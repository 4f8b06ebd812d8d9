/* test_framework.c - framework-aware search (planner/framework.h, search.h):
 * what each framework's search returns, cuts between layers and the send
 * bytes of a cut inside one, --top against --simulate, each configuration
 * ranked once, ties, and plan, tune and whatif agreeing on the winner. */
#include "check.h"
#include "pair_check.h"
#include "cost.h"
#include "framework.h"
#include "lower.h"
#include "overhead.h"
#include "partition.h"
#include "json.h"
#include "search.h"

#include <math.h>
#include <stdlib.h>

static char out[1 << 18];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

/* model on `nodes` p4d.24xlarge nodes */
static sc_model *open_pair(const char *model, int nodes, sc_cluster *c)
{
    sc_model *m;
    sc_test_open_pair(model, "p4d.24xlarge", nodes, &m, c);
    return m;
}

/* A search of m on c with batch B for framework fw (NULL: any), simulating
 * every fitting candidate up to K. */
static sc_search *search(const sc_model *m, const sc_cluster *c, long B, const char *fw,
                         int cut_in_layers, int K)
{
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = B;
    o.simulate = K;
    o.framework = fw ? sc_framework_find(fw) : NULL;
    o.cut_in_layers = cut_in_layers;
    sc_search *s = NULL;
    sc_error err = {0};
    if (sc_search_run(m, c, &o, &s, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "search %s: %s", fw ? fw : "any", err.msg);
    return s;
}

static int ranked_n(const sc_search *s)
{
    int n = 0;
    sc_search_counts(s, NULL, NULL, &n);
    return n;
}

/* Stages that begin inside a layer, over every ranked candidate. */
static int inside_cuts(const sc_model *m, const sc_search *s)
{
    int bad = 0;
    for (int i = 0; i < ranked_n(s); i++) {
        const sc_partition *p = sc_search_ranked(s, i)->cfg.partition;
        for (int k = 1; p && k < p->n_stages; k++)
            bad += !sc_partition_between_layers(m, p->first[k]);
    }
    return bad;
}

/* DeepSpeed: no ZeRO 2 or 3 with a pipeline, no zero-bubble, interleaved or
 * GPipe schedule, no sequence parallelism; the same search for any framework
 * does return such plans, so the restriction is what removed them. */
TEST(framework_deepspeed_restrictions)
{
    sc_cluster c;
    sc_model *m = open_pair("gpt-1.3b", 1, &c);
    REQUIRE(m);
    sc_search *ds = search(m, &c, 32, "deepspeed", 0, 4000);
    sc_search *any = search(m, &c, 32, NULL, 0, 4000);
    REQUIRE(ds && any);
    int any_z2pp = 0, any_sched = 0, any_sp = 0, ds_pp = 0;
    for (int i = 0; i < ranked_n(any); i++) {
        const sc_candidate *k = sc_search_ranked(any, i);
        any_z2pp += k->cfg.zero >= 2 && k->cfg.pp > 1;
        any_sched += k->cfg.pp > 1 && strcmp(k->schedule, "1f1b") != 0;
        any_sp += k->cfg.sp;
    }
    CHECK(any_z2pp > 0 && any_sched > 0 && any_sp > 0);
    REQUIRE(ranked_n(ds) > 10);
    for (int i = 0; i < ranked_n(ds); i++) {
        const sc_candidate *k = sc_search_ranked(ds, i);
        ds_pp += k->cfg.pp > 1;
        if ((k->cfg.zero >= 2 && k->cfg.pp > 1) || k->cfg.v > 1 || k->cfg.sp ||
            (k->cfg.pp > 1 && strcmp(k->schedule, "1f1b") != 0)) {
            sc_test_fail(__FILE__, __LINE__,
                         "deepspeed returned dp %d tp %d pp %d v %d %s zero %d sp %d", k->cfg.dp,
                         k->cfg.tp, k->cfg.pp, k->cfg.v, k->schedule, k->cfg.zero, k->cfg.sp);
            break;
        }
    }
    CHECK(ds_pp > 0); /* pipelines are searched, with 1F1B and ZeRO 0-1 */
    sc_search_free(ds);
    sc_search_free(any);
    sc_model_free(m);
}

/* torch.distributed.pipelining as exported: no tp, every schedule, ZeRO 0-1
 * with a pipeline and up to 3 (FSDP2) without one. */
TEST(framework_torch_restrictions)
{
    sc_cluster c;
    sc_model *m = open_pair("gpt-1.3b", 1, &c);
    REQUIRE(m);
    sc_search *s = search(m, &c, 32, "torch", 0, 4000);
    REQUIRE(s);
    int zb = 0, il = 0, fsdp = 0;
    for (int i = 0; i < ranked_n(s); i++) {
        const sc_candidate *k = sc_search_ranked(s, i);
        zb += !strcmp(k->schedule, "zb-h1");
        il += k->cfg.v > 1;
        fsdp += k->cfg.zero > 1;
        if (k->cfg.tp > 1 || (k->cfg.zero > 1 && k->cfg.pp > 1) || k->cfg.sp) {
            sc_test_fail(__FILE__, __LINE__, "torch returned tp %d pp %d zero %d sp %d",
                         k->cfg.tp, k->cfg.pp, k->cfg.zero, k->cfg.sp);
            break;
        }
    }
    CHECK(zb > 0 && il > 0 && fsdp > 0);
    sc_search_free(s);
    sc_model_free(m);
}

/* Megatron-LM: ZeRO 2 and 3 only without a pipeline (Megatron-FSDP; its
 * distributed optimizer, the only ZeRO it pairs with a pipeline, is ZeRO 1),
 * where the search for any framework returns ZeRO 2 with pipelines. */
TEST(framework_megatron_sharded_gradients_without_pipeline)
{
    sc_cluster c;
    sc_model *m = open_pair("gpt-1.3b", 1, &c);
    REQUIRE(m);
    sc_search *mg = search(m, &c, 32, "megatron", 0, 4000);
    REQUIRE(mg);
    int z2 = 0, z1pp = 0;
    for (int i = 0; i < ranked_n(mg); i++) {
        const sc_candidate *k = sc_search_ranked(mg, i);
        z2 += k->cfg.zero >= 2 && k->cfg.pp == 1;
        z1pp += k->cfg.zero == 1 && k->cfg.pp > 1;
        if (k->cfg.zero >= 2 && k->cfg.pp > 1) {
            sc_test_fail(__FILE__, __LINE__, "megatron returned pp %d zero %d", k->cfg.pp,
                         k->cfg.zero);
            break;
        }
    }
    CHECK(z2 > 0 && z1pp > 0);
    sc_search_free(mg);
    sc_model_free(m);
}

/* Megatron-LM never cuts inside a layer, nor does the default search; with
 * --cuts leaves (framework any) the same shapes do cut inside layers. */
TEST(framework_megatron_cuts_between_layers)
{
    sc_cluster c;
    sc_model *m = open_pair("gpt-1.3b", 1, &c);
    REQUIRE(m);
    sc_search *mg = search(m, &c, 32, "megatron", 0, 4000);
    sc_search *def = search(m, &c, 32, NULL, 0, 4000);
    sc_search *leaves = search(m, &c, 32, NULL, 1, 4000);
    REQUIRE(mg && def && leaves);
    int pipelines = 0;
    for (int i = 0; i < ranked_n(mg); i++) {
        const sc_candidate *k = sc_search_ranked(mg, i);
        pipelines += k->cfg.pp > 1;
        if (!strcmp(k->schedule, "gpipe") || !strcmp(k->schedule, "zb-h1") ||
            (k->cfg.zero == 3 && k->cfg.pp > 1)) {
            sc_test_fail(__FILE__, __LINE__, "megatron returned pp %d %s zero %d", k->cfg.pp,
                         k->schedule, k->cfg.zero);
            break;
        }
    }
    CHECK(pipelines > 0);
    CHECK_EQ_INT(inside_cuts(m, mg), 0);
    CHECK_EQ_INT(inside_cuts(m, def), 0);
    CHECK(inside_cuts(m, leaves) > 0);
    /* megatron and --cuts leaves do not go together */
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 32;
    o.framework = sc_framework_find("megatron");
    o.cut_in_layers = 1;
    sc_search *s = NULL;
    sc_error err = {0};
    CHECK(sc_search_run(m, &c, &o, &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "Megatron-LM cuts only between layers");
    sc_search_free(mg);
    sc_search_free(def);
    sc_search_free(leaves);
    sc_model_free(m);
}

/* A cut inside a layer sends the residual stream too: the layer's output
 * beside the leaf's; a cut between layers sends the leaf's output alone.
 * sc_cost_stage's send bytes are those. */
TEST(framework_cut_inside_sends_residual)
{
    sc_cluster c;
    sc_model *m = open_pair("gpt-1.3b", 1, &c);
    REQUIRE(m);
    int inside = -1, between = -1;
    for (int b = 1; b < m->n_leaves && (inside < 0 || between < 0); b++) {
        const sc_module *l = sc_partition_layer_of(m->leaves[b]);
        if (!l)
            continue;
        if (!sc_partition_between_layers(m, b) && inside < 0)
            inside = b;
        else if (sc_partition_between_layers(m, b) && between < 0 && b > 1)
            between = b;
    }
    REQUIRE(inside > 0 && between > 0);
    const sc_module *layer = sc_partition_layer_of(m->leaves[inside]);
    REQUIRE(layer->act_out_bytes > 0);
    CHECK_NEAR(sc_cost_cut_bytes(m, inside),
               m->leaves[inside - 1]->act_out_bytes + layer->act_out_bytes, 1e-12);
    CHECK_NEAR(sc_cost_cut_bytes(m, between), m->leaves[between - 1]->act_out_bytes, 1e-12);
    int starts[1] = {inside};
    sc_partition p = {0};
    sc_error err = {0};
    REQUIRE(sc_partition_explicit(m, 2, starts, 1, &p, &err) == SC_OK);
    sc_stage_info info[2];
    sc_stage_cfg sc = {.dtype = m->dtype, .tp = 2, .mbs = 4};
    REQUIRE(sc_cost_stage(&c, m, &p, &sc, info, &err) == SC_OK);
    CHECK_NEAR(info[0].send_bytes,
               (m->leaves[inside - 1]->act_out_bytes + layer->act_out_bytes) * 4 / 2, 1e-12);
    sc_partition_free(&p);
    sc_model_free(m);
}

/* tp only where the model has tensor-parallel data: the same GPT with its
 * tp data removed gets no tp > 1 from Megatron-LM's or DeepSpeed's search,
 * and a fixed --tp 2 is refused naming the modules. */
TEST(framework_tp_needs_tp_data)
{
    sc_cluster c;
    sc_model *m = open_pair("gpt-1.3b", 1, &c);
    REQUIRE(m);
    sc_fw_layout l = {.tp = 2, .pp = 1, .v = 1};
    char why[512];
    CHECK(sc_framework_judge(sc_framework_find("megatron"), m, &l, why, sizeof why) ==
          SC_FW_RUNS);
    for (int i = 0; i < m->n_leaves; i++)
        m->leaves[i]->has_tp = 0;
    CHECK(sc_framework_judge(sc_framework_find("megatron"), m, &l, why, sizeof why) ==
          SC_FW_CANNOT);
    CHECK_STR_HAS(why, "no tensor-parallel data");
    CHECK(sc_framework_judge(sc_framework_find("any"), m, &l, why, sizeof why) == SC_FW_RUNS);
    const char *fws[] = {"megatron", "deepspeed"};
    for (int f = 0; f < 2; f++) {
        sc_search *s = search(m, &c, 32, fws[f], 0, 500);
        REQUIRE(s);
        for (int i = 0; i < ranked_n(s); i++)
            CHECK_EQ_INT(sc_search_ranked(s, i)->cfg.tp, 1);
        sc_search_free(s);
    }
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 32;
    o.fix_tp = 2;
    o.framework = sc_framework_find("megatron");
    sc_search *s = NULL;
    sc_error err = {0};
    CHECK(sc_search_run(m, &c, &o, &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--framework megatron: tensor parallelism (tp=2) of gpt-1.3b");
    sc_model_free(m);
}

/* The exports refuse through the same table: a plan with sequence
 * parallelism and a pipeline, which DeepSpeed's search never returns, is
 * refused by its export with the table's phrase. */
TEST(framework_export_uses_the_table)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 --tp 2 --sp --pp 2 "
               "--microbatches 4 -o %s/sp.json >/dev/null",
               bin, d) == 0);
    CHECK(SC("%s export %s/sp.json --to deepspeed 2>&1", bin, d) == 2);
    CHECK_STR_HAS(out, "DeepSpeed cannot run this plan: sequence parallelism: DeepSpeed does "
                       "not split norms and dropouts");
    CHECK(SC("%s export %s/sp.json --to megatron >/dev/null 2>&1", bin, d) == 0);
    /* plan --framework megatron writes a plan its export takes */
    REQUIRE(SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
               "--framework megatron --pp 4 -o %s/mg.json >/dev/null",
               bin, d) == 0);
    CHECK(SC("%s export %s/mg.json --to megatron -o %s/mg >/dev/null 2>&1", bin, d, d) == 0);
    /* bad values and conflicts: exit 2, one message naming the flag */
    CHECK(SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --global-batch 64 --framework "
             "foo 2>&1",
             bin) == 2);
    CHECK_STR_HAS(out, "--framework: 'foo' is not one of megatron, deepspeed, torch, any");
    CHECK(SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --global-batch 64 --simulate 0 "
             "2>&1",
             bin) == 2);
    CHECK_STR_HAS(out, "--simulate: 0 is out of range");
    CHECK(SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
             "--framework deepspeed --pp 4 --zero 2 2>&1",
             bin) == 2);
    CHECK_STR_HAS(out, "--framework deepspeed: ZeRO-2 with pipeline parallelism (pp=4)");
    CHECK(SC("%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 --dp 4 "
             "--tp 1 --pp 4 --schedule zb-h1 --framework megatron 2>&1",
             bin) == 2);
    CHECK_STR_HAS(out, "the zb-h1 schedule: Megatron-LM runs 1F1B instead");
    /* the model rule: the same phrase as export's refusal */
    CHECK(SC("%s plan --model t5-3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
             "--framework megatron 2>&1",
             bin) == 2);
    CHECK_STR_HAS(out, "plan: --framework megatron: t5-3b is an encoder-decoder");
    CHECK(SC("%s plan --model t5-3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
             "--framework deepspeed --top 1 >/dev/null 2>&1",
             bin) == 0);
}

/* --top only lists; --simulate is the budget. The same budget gives the
 * same winner whatever --top, and a smaller budget never a faster one. */
TEST(framework_top_is_display_only)
{
    const char *bin = sc_test_bin();
    const char *base = "plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --global-batch "
                       "512 --json";
    double step[3];
    int dp[3], n[3], sim[3];
    const char *args[3] = {"--top 1", "--top 40", "--top 40 --simulate 4"};
    for (int i = 0; i < 3; i++) {
        REQUIRE(SC("%s %s %s", bin, base, args[i]) == 0);
        cJSON *j = cJSON_Parse(out);
        REQUIRE(j);
        const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ranked"), 0);
        REQUIRE(r);
        step[i] = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "step_time_s"));
        dp[i] = (int)cJSON_GetNumberValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r, "config"), "dp"));
        n[i] = cJSON_GetArraySize(cJSON_GetObjectItem(j, "ranked"));
        sim[i] = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "simulated"));
        cJSON_Delete(j);
    }
    CHECK_EQ_INT(n[0], 1);
    CHECK_EQ_INT(n[1], 40);
    CHECK_EQ_INT(sim[0], SC_SEARCH_SIMULATE);
    CHECK_EQ_INT(sim[1], SC_SEARCH_SIMULATE);
    CHECK_EQ_INT(sim[2], 4);
    CHECK(step[0] == step[1] && dp[0] == dp[1]);
    CHECK(step[2] >= step[0] * (1 - SC_SEARCH_TIE));
}

/* Each configuration once; the ranking is by step time up to the tie
 * tolerance, and inside a tie by peak memory, then layout. */
TEST(framework_merge_and_ties)
{
    sc_cluster c;
    sc_model *m = open_pair("gpt-1.3b", 2, &c);
    REQUIRE(m);
    sc_search *s = search(m, &c, 64, NULL, 0, 3000);
    REQUIRE(s);
    int n = ranked_n(s), ties = 0;
    REQUIRE(n > 100);
    for (int i = 0; i < n; i++) {
        const sc_candidate *a = sc_search_ranked(s, i);
        for (int j = i + 1; j < n; j++) {
            const sc_candidate *b = sc_search_ranked(s, j);
            const sc_step_cfg *x = &a->cfg, *y = &b->cfg;
            if (x->dp == y->dp && x->tp == y->tp && x->pp == y->pp && x->v == y->v &&
                x->m == y->m && x->mbs == y->mbs && x->zero == y->zero &&
                x->recompute == y->recompute && x->sp == y->sp && !strcmp(a->schedule, b->schedule))
                sc_test_fail(__FILE__, __LINE__, "ranks %d and %d are one configuration", i + 1,
                             j + 1);
            /* never more than the tolerance faster than a plan ranked above */
            if (b->sim->step_time_s * (1 + SC_SEARCH_TIE) < a->sim->step_time_s * (1 - 1e-12))
                sc_test_fail(__FILE__, __LINE__, "rank %d (%.6f s) is ranked below %d (%.6f s)",
                             j + 1, b->sim->step_time_s, i + 1, a->sim->step_time_s);
        }
        if (i + 1 < n) {
            const sc_candidate *b = sc_search_ranked(s, i + 1);
            double pa = 0, pb = 0;
            for (int k = 0; k < a->sim->pp; k++)
                pa = fmax(pa, a->sim->mem[k].total);
            for (int k = 0; k < b->sim->pp; k++)
                pb = fmax(pb, b->sim->mem[k].total);
            switch (sc_search_tie(s, i)) {
            case SC_TIE_MEMORY:
                ties++;
                CHECK(pa < pb);
                break;
            case SC_TIE_LAYOUT:
                ties++;
                CHECK(pa == pb && (sc_search_dims(&a->cfg) < sc_search_dims(&b->cfg) ||
                                   (sc_search_dims(&a->cfg) == sc_search_dims(&b->cfg) &&
                                    a->cfg.zero < b->cfg.zero)));
                break;
            case SC_TIE_STEP:
                CHECK(a->sim->step_time_s <= b->sim->step_time_s);
                break;
            case SC_TIE_NONE:
                break;
            }
        }
    }
    CHECK(ties > 0);
    sc_search_free(s);
    sc_model_free(m);
    /* the explanation names the tie and its reason, never "0.0 ms faster"
     * (dp 128 on 16 p4d nodes: ZeRO 1 and 2 take the same step, ZeRO 2
     * less memory) */
    REQUIRE(SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --global-batch 512 "
               "--dp 128 --mbs 2 --recompute none --top 3",
               sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "  a tie: the steps are within 1% of each other (");
    CHECK_STR_HAS(out, "ms), and #1 needs less peak memory (");
    CHECK(!strstr(out, "0.0 ms faster"));
}

/* plan, tune (the winner's layout) and whatif (16 nodes) name the same
 * winner for gpt-1.3b on 16 x p4d.24xlarge, global batch 512. */
TEST(framework_plan_tune_whatif_agree)
{
    const char *bin = sc_test_bin(), *d = sc_test_tmpdir();
    const char *common = "--model gpt-1.3b --global-batch 512";
    REQUIRE(SC("%s plan %s --cluster p4d.24xlarge --nodes 16 --json --top 1", bin, common) == 0);
    cJSON *p = cJSON_Parse(out);
    REQUIRE(p);
    const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "ranked"), 0);
    const cJSON *g = cJSON_GetObjectItem(r, "config");
    REQUIRE(r && g);
#define NUM(o, k) ((int)cJSON_GetNumberValue(cJSON_GetObjectItem((o), (k))))
#define STR(o, k) cJSON_GetStringValue(cJSON_GetObjectItem((o), (k)))
    double step = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "step_time_s"));
    /* every ranked row says whether it won a tie with the next */
    CHECK(cJSON_GetObjectItem(r, "tie_with_next") != NULL);
    int sp = cJSON_IsTrue(cJSON_GetObjectItem(g, "sp"));
    /* tune on the winner's layout */
    REQUIRE(SC("%s tune %s --cluster p4d.24xlarge --nodes 16 --dp %d --tp %d --pp %d --v %d "
               "--schedule %s --zero %d --recompute %s %s --json",
               bin, common, NUM(g, "dp"), NUM(g, "tp"), NUM(g, "pp"), NUM(g, "v"),
               STR(g, "schedule"), NUM(g, "zero"), STR(g, "recompute"), sp ? "--sp" : "") == 0);
    cJSON *t = cJSON_Parse(out);
    REQUIRE(t);
    const cJSON *best =
        cJSON_GetArrayItem(cJSON_GetObjectItem(t, "points"), NUM(t, "best"));
    REQUIRE(best);
    CHECK_EQ_INT(NUM(best, "m"), NUM(g, "microbatches"));
    CHECK_EQ_INT(NUM(best, "mbs"), NUM(g, "mbs"));
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(best, "step_time_s")), step, 1e-12);
    /* whatif at 16 nodes */
    REQUIRE(SC("%s whatif %s --cluster p4d.24xlarge --nodes 16 --tokens 1e9 -o %s/wi --json "
               "2>/dev/null",
               bin, common, d) == 0);
    cJSON *w = cJSON_Parse(out);
    REQUIRE(w);
    const cJSON *pt = cJSON_GetArrayItem(cJSON_GetObjectItem(w, "points"), 0);
    const cJSON *wg = cJSON_GetObjectItem(pt, "config");
    REQUIRE(pt && wg);
    CHECK_EQ_INT(NUM(wg, "dp"), NUM(g, "dp"));
    CHECK_EQ_INT(NUM(wg, "tp"), NUM(g, "tp"));
    CHECK_EQ_INT(NUM(wg, "pp"), NUM(g, "pp"));
    CHECK_EQ_INT(NUM(wg, "m"), NUM(g, "microbatches"));
    CHECK_EQ_INT(NUM(wg, "zero"), NUM(g, "zero"));
    CHECK(!strcmp(STR(wg, "recompute"), STR(g, "recompute")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(wg, "sp")) == sp);
    CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(pt, "step_time_s")), step, 1e-12);
    cJSON_Delete(p);
    cJSON_Delete(t);
    cJSON_Delete(w);
}

/* A framework's measured overhead (cost_models/overhead.h): sim
 * --framework scales every forward, backward and recompute by 1 + the
 * table's fraction, says so in its label, writes it into the plan, and sim
 * --plan applies it again; an unknown name is refused; the stage costs
 * scale exactly. */
TEST(framework_overhead_applies)
{
    const char *base = "--model gpt-1.3b --cluster dgx-a100-80g --dp 8 --microbatches 4 "
                       "--mbs 4";
    double t[2];
    const char *fws[2] = {"", "--framework torch"};
    for (int k = 0; k < 2; k++) {
        REQUIRE(SC("%s sim %s %s --json", sc_test_bin(), base, fws[k]) == 0);
        cJSON *j = cJSON_Parse(out);
        REQUIRE(j);
        t[k] = cJSON_GetObjectItemCaseSensitive(j, "step_time_s")->valuedouble;
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(j, "cluster_label");
        const cJSON *fw = cJSON_GetObjectItemCaseSensitive(l, "framework");
        if (k)
            CHECK(cJSON_IsString(fw) && !strcmp(fw->valuestring, "torch"));
        else
            CHECK(cJSON_IsNull(fw));
        cJSON_Delete(j);
    }
    const sc_overhead *o = sc_overhead_find("torch");
    REQUIRE(o && o->compute > 0);
    CHECK(t[1] > t[0] * (1 + o->compute / 2));
    CHECK(t[1] <= t[0] * (1 + o->compute) * (1 + 1e-9));

    /* the plan keeps it; sim --plan applies it again */
    char plan[512];
    snprintf(plan, sizeof plan, "%s/fw_plan.json", sc_test_tmpdir());
    REQUIRE(SC("%s sim %s --framework torch -o %s", sc_test_bin(), base, plan) == 0);
    CHECK_STR_HAS(out, "with torch's measured overhead");
    REQUIRE(SC("cat %s", plan) == 0);
    CHECK_STR_HAS(out, "\"framework\":\t\"torch\"");
    REQUIRE(SC("%s sim --plan %s --json", sc_test_bin(), plan) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(j, "step_time_s")->valuedouble, t[1],
               1e-9 * t[1]);
    cJSON_Delete(j);

    /* plan --framework includes it in what it ranks */
    REQUIRE(SC("%s plan --model gpt-1.3b --cluster dgx-a100-80g --global-batch 128 --framework "
               "megatron --fix dp=8,tp=1,pp=1 --json", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "\"framework\":\t\"megatron\"");

    /* an unknown name */
    CHECK(SC("%s sim %s --framework jax", sc_test_bin(), base) == 2);
    CHECK_STR_HAS(out, "--framework");
    CHECK_STR_HAS(out, "jax");

    /* the stage costs scale exactly, the bytes do not */
    sc_cluster c;
    sc_error err = {0};
    sc_model *m = NULL;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    REQUIRE(sc_cluster_preset_get("dgx-a100-80g", &c, &err) == SC_OK);
    sc_partition part = {0};
    REQUIRE(sc_partition_uniform(m, 2, &part, &err) == SC_OK);
    sc_stage_cfg cfg = {m->dtype, 2, 2, SC_RECOMPUTE_FULL, 0, 0, SC_ATTN_UNFUSED,
                        0, 0, 0, 0, 0, 0, 0};
    sc_stage_info a[2], b[2];
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, a, &err) == SC_OK);
    REQUIRE(sc_overhead_set(&c, "deepspeed", 0.25, &err) == SC_OK);
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, b, &err) == SC_OK);
    for (int s = 0; s < 2; s++) {
        CHECK_NEAR(b[s].fwd_s, 1.25 * a[s].fwd_s, 1e-12 * a[s].fwd_s);
        CHECK_NEAR(b[s].bwd_s, 1.25 * a[s].bwd_s, 1e-12 * a[s].bwd_s);
        CHECK_NEAR(b[s].recompute_s, 1.25 * a[s].recompute_s, 1e-12 * a[s].recompute_s);
        CHECK(b[s].tp_bytes == a[s].tp_bytes && b[s].send_bytes == a[s].send_bytes);
    }
    CHECK(sc_overhead_set(&c, "deepspeed", -1, &err) != SC_OK);
    CHECK(sc_overhead_apply(&c, "jax", "--framework", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "jax");
    REQUIRE(sc_overhead_apply(&c, "any", "--framework", &err) == SC_OK);
    CHECK(c.framework[0] == '\0' && c.framework_overhead == 0);
    sc_partition_free(&part);
    sc_model_free(m);
}

/* The step time of the search's first ranked candidate of m on c, every choice
 * fixed (dp 8, no tp or pipeline, 4 microbatches of 4, ZeRO z, no recompute):
 * the estimate in *est, the simulator's in the return value. */
static double fixed_zero_step(const sc_model *m, const sc_cluster *c, int z, double *est)
{
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 128;
    o.fix_dp = 8, o.fix_tp = 1, o.fix_pp = 1, o.fix_v = 1, o.fix_m = 4, o.fix_mbs = 4;
    o.fix_zero = z, o.fix_recompute = SC_RECOMPUTE_NONE, o.fix_sp = 0;
    o.simulate = 4;
    sc_search *s = NULL;
    sc_error err = {0};
    if (sc_search_run(m, c, &o, &s, &err) != SC_OK || ranked_n(s) < 1) {
        sc_test_fail(__FILE__, __LINE__, "search: %s", err.msg);
        sc_search_free(s);
        return NAN;
    }
    const sc_candidate *k = sc_search_ranked(s, 0);
    *est = k->est.step_s;
    double t = k->sim ? k->sim->step_time_s : NAN;
    sc_search_free(s);
    return t;
}

/* PyTorch FSDP's own work on the gradients (sc_cost_fsdp_copies): its bytes
 * per parameter as documented, added to every backward of a torch stage
 * under ZeRO 2 and 3 with dp >= 2 and nowhere else, and the planner's
 * estimate and the simulator adding the same. */
TEST(framework_torch_fsdp_copies)
{
    sc_cluster c;
    sc_error err = {0};
    REQUIRE(sc_cluster_preset_get("dgx-h100", &c, &err) == SC_OK);
    double bw = c.gpu.hbm_bytes_per_s * c.eff.memory_bw, k = c.eff.gemm.kernel_s;
    REQUIRE(bw > 0 && k > 0);
    double P = 1e9;
    /* bf16: the concatenation and the pre-divide read and write 2 B each;
     * the shard: the cast back (2 + 4) and the accumulation (8 + 4), and per
     * gather the cast to bf16 (4 + 2) */
    sc_fsdp_cost x16 = sc_cost_fsdp_copies(&c, SC_BF16, P, 10, 0);
    CHECK_NEAR(x16.all_s, 20 * k + 8 * P / bw, 1e-12 * x16.all_s);
    CHECK_NEAR(x16.shard_s, 18 * P / bw, 1e-12 * x16.shard_s);
    CHECK_NEAR(x16.gather_s, 6 * P / bw, 1e-12 * x16.gather_s);
    sc_fsdp_cost x32 = sc_cost_fsdp_copies(&c, SC_FP32, P, 10, 0); /* no casts */
    CHECK_NEAR(x32.all_s, 20 * k + 16 * P / bw, 1e-12 * x32.all_s);
    CHECK_NEAR(x32.shard_s, 12 * P / bw, 1e-12 * x32.shard_s);
    CHECK(x32.gather_s == 0);
    /* bf16 reduced in fp32 (Composer's DEFAULT): the concatenation (2 + 2),
     * the cast to fp32 before the reduce-scatter (2 + 4), the pre-divide in
     * fp32 (4 + 4); the shard needs no cast back, only the accumulation */
    sc_fsdp_cost xr = sc_cost_fsdp_copies(&c, SC_BF16, P, 10, 1);
    CHECK_NEAR(xr.all_s, 20 * k + 18 * P / bw, 1e-12 * xr.all_s);
    CHECK_NEAR(xr.shard_s, 12 * P / bw, 1e-12 * xr.shard_s);
    CHECK_NEAR(xr.gather_s, x16.gather_s, 1e-12 * x16.gather_s);
    sc_fsdp_cost x32r = sc_cost_fsdp_copies(&c, SC_FP32, P, 10, 1); /* fp32 already */
    CHECK(x32r.all_s == x32.all_s && x32r.shard_s == x32.shard_s);
    sc_fsdp_cost x0 = sc_cost_fsdp_copies(&c, SC_BF16, 0, 10, 0);
    CHECK(x0.all_s == 0 && x0.shard_s == 0 && x0.gather_s == 0);
    sc_fsdp_cost fi = {.all_s = 1, .shard_s = 8, .gather_s = 4};
    CHECK_NEAR(sc_cost_fsdp_time(&fi, 3, 4), 1 + (8 + 2 * 4) / 4.0, 1e-15);
    CHECK_NEAR(sc_cost_fsdp_time(&fi, 2, 4), 1 + (8 + 4) / 4.0, 1e-15);
    CHECK(sc_cost_fsdp_time(&fi, 1, 4) == 0 && sc_cost_fsdp_time(&fi, 3, 1) == 0);

    sc_model *m = NULL;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_partition part = {0};
    REQUIRE(sc_partition_uniform(m, 1, &part, &err) == SC_OK);
    sc_stage_cfg cfg = {.dtype = m->dtype, .tp = 1, .mbs = 4, .attn = SC_ATTN_FLASH};
    sc_stage_info a, b;
    REQUIRE(sc_overhead_apply(&c, "torch", "--framework", &err) == SC_OK);
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, &a, &err) == SC_OK); /* zero 0 */
    CHECK(a.fsdp.all_s > 0 && a.fsdp.shard_s > 0);
    /* gpt-1.3b's layers are its units, and the root's leaves one more */
    double params = a.param_bytes / 2;
    sc_fsdp_cost want = sc_cost_fsdp_copies(&c, m->dtype, params, 24 + 1, 0);
    CHECK_NEAR(a.fsdp.all_s, want.all_s, 1e-12 * want.all_s);
    CHECK_NEAR(a.fsdp.shard_s, want.shard_s, 1e-12 * want.shard_s);
    CHECK_NEAR(a.fsdp.gather_s, want.gather_s, 1e-12 * want.gather_s);
    cfg.zero = 3, cfg.dp = 8;
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, &b, &err) == SC_OK);
    double x = a.fsdp.all_s + (a.fsdp.shard_s + 2 * a.fsdp.gather_s) / 8;
    CHECK_NEAR(b.bwd_s - a.bwd_s, x, 1e-9 * b.bwd_s);
    CHECK_NEAR(b.bwd_w_s - a.bwd_w_s, x, 1e-9 * b.bwd_s);
    CHECK(b.fwd_s == a.fwd_s && b.recompute_s == a.recompute_s);
    /* not at dp 1, not under ZeRO 0 or 1, not under another framework */
    cfg.dp = 1;
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, &b, &err) == SC_OK);
    CHECK(b.bwd_s == a.bwd_s);
    cfg.dp = 8, cfg.zero = 1;
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, &b, &err) == SC_OK);
    CHECK(b.bwd_s == a.bwd_s);
    cfg.zero = 3;
    REQUIRE(sc_overhead_apply(&c, "deepspeed", "--framework", &err) == SC_OK);
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, &b, &err) == SC_OK);
    CHECK(b.fsdp.all_s == 0 && b.fsdp.shard_s == 0);
    cfg.zero = 0;
    REQUIRE(sc_cost_stage(&c, m, &part, &cfg, &a, &err) == SC_OK);
    CHECK(b.bwd_s == a.bwd_s);

    /* the search: under torch ZeRO 3 costs the copies more than ZeRO 1 does,
     * in the estimate and in the simulator alike; the framework's search
     * itself keeps to ZeRO 1 (its export writes DDP), so the cluster carries
     * the framework here without restricting the search */
    double e3[2], s3[2], e1[2], s1[2];
    for (int t = 0; t < 2; t++) {
        REQUIRE(sc_overhead_apply(&c, t ? "torch" : "any", "--framework", &err) == SC_OK);
        if (t) /* the copies alone: no fraction on the kernels */
            REQUIRE(sc_overhead_set(&c, "torch", 0, &err) == SC_OK);
        s3[t] = fixed_zero_step(m, &c, 3, &e3[t]);
        s1[t] = fixed_zero_step(m, &c, 1, &e1[t]);
    }
    double per_step = 4 * x; /* 4 microbatches */
    CHECK_NEAR(s1[1], s1[0], 1e-9 * s1[0]);
    CHECK_NEAR(e1[1], e1[0], 1e-9 * e1[0]);
    /* the copies lengthen each backward by x; the simulator may hide part of
     * it behind the data-parallel collectives (a step bound by them), the
     * estimate likewise: both grow by at least half of it, at most all */
    CHECK(s3[1] - s3[0] >= 0.5 * per_step && s3[1] - s3[0] <= per_step * (1 + 1e-6));
    CHECK(e3[1] - e3[0] >= 0.5 * per_step && e3[1] - e3[0] <= per_step * (1 + 1e-6));
    CHECK(fabs((s3[1] - s3[0]) - (e3[1] - e3[0])) <= 0.25 * per_step);
    sc_partition_free(&part);
    sc_model_free(m);
}

/* Token slices: each slice's backward reduce-scatters its gradients whole under
 * ZeRO 3 (lower.h), and FSDP's own work on them goes with it, all of it in every
 * slice's figures. It was once left out of the slices' figures altogether: a
 * sliced torch step under ZeRO 3 lost it (12.5 ms a microbatch of gpt-1.3b
 * over 8 p4d GPUs). */
TEST(framework_torch_fsdp_copies_with_slices)
{
    sc_model *m = NULL;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 1, &m, &c);
    REQUIRE(m);
    sc_error err = {0};
    REQUIRE(sc_overhead_apply(&c, "torch", "--framework", &err) == SC_OK);
    sc_lowered *lw[2] = {NULL, NULL};
    for (int z = 0; z < 2; z++) {
        sc_step_cfg cfg = {.dp = 4, .tp = 1, .pp = 2, .v = 1, .m = 2, .mbs = 1,
                           .zero = z ? 3 : 1, .schedule = "1f1b", .slices = 2,
                           .one_replica = 1};
        if (sc_lower(m, &c, &cfg, &lw[z], &err) != SC_OK)
            sc_test_fail(__FILE__, __LINE__, "zero %d: %s", z ? 3 : 1, err.msg);
    }
    if (lw[0] && lw[1]) {
        CHECK_EQ_INT(lw[1]->k, 2);
        for (int s = 0; s < lw[1]->S; s++) {
            double x = sc_cost_fsdp_time(&lw[1]->info[s].fsdp, 3, 4);
            CHECK(x > 0);
            for (int j = 0; j < lw[1]->k; j++) {
                const sc_stage_info *a = &lw[0]->slice_info[j * lw[0]->S + s];
                const sc_stage_info *b = &lw[1]->slice_info[j * lw[1]->S + s];
                CHECK_NEAR(b->bwd_s - a->bwd_s, x, 1e-9 * b->bwd_s);
                CHECK(b->fwd_s == a->fwd_s);
            }
        }
    }
    sc_lower_free(lw[0]);
    sc_lower_free(lw[1]);
    sc_model_free(m);
}

/* Pipeline sends as each framework runs them (framework.h, p2p): Megatron-LM
 * blocks without virtual stages, DeepSpeed always, torch and any never;
 * never without a pipeline. The search's default (-1) follows the row, a
 * given --overlap-p2p-comm wins; sim, plan and tune say so in their output
 * and plans; a blocking step is never faster than the same step beside. */
TEST(framework_p2p_as_each_runs_it)
{
    const sc_framework *mg = sc_framework_find("megatron"), *ds = sc_framework_find("deepspeed"),
                       *to = sc_framework_find("torch");
    REQUIRE(mg && ds && to);
    CHECK(sc_framework_p2p_blocks(mg, 4, 1));
    CHECK(!sc_framework_p2p_blocks(mg, 4, 2));
    CHECK(!sc_framework_p2p_blocks(mg, 1, 1));
    CHECK(sc_framework_p2p_blocks(ds, 4, 1));
    CHECK(sc_framework_p2p_blocks(ds, 4, 3));
    CHECK(!sc_framework_p2p_blocks(to, 4, 1));
    CHECK(!sc_framework_p2p_blocks(sc_framework_any(), 4, 1));
    CHECK(!sc_framework_p2p_blocks(NULL, 4, 1));
    sc_search_opts o;
    sc_search_opts_default(&o);
    CHECK_EQ_INT(o.no_overlap_p2p_comm, -1);
    o.framework = mg;
    CHECK(sc_search_p2p_blocks(&o, 4, 1));
    o.no_overlap_p2p_comm = 0;
    CHECK(!sc_search_p2p_blocks(&o, 4, 1));
    o.framework = NULL;
    o.no_overlap_p2p_comm = 1;
    CHECK(sc_search_p2p_blocks(&o, 4, 2));

    const char *bin = sc_test_bin(), *d = sc_test_tmpdir();
    const char *lay = "--model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --pp 8 "
                      "--microbatches 16 --mbs 1";
    double t[3];
    const char *fw[3] = {"--framework megatron", "--framework megatron --overlap-p2p-comm 1",
                         "--overlap-p2p-comm 0"};
    for (int i = 0; i < 3; i++) {
        REQUIRE(SC("%s sim %s %s --json", bin, lay, fw[i]) == 0);
        cJSON *j = cJSON_Parse(out);
        REQUIRE(j);
        const cJSON *c = cJSON_GetObjectItem(j, "config");
        /* the key is written only when the sends block */
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(c, "overlap_p2p_comm")) == (i != 1));
        t[i] = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "step_time_s"));
        cJSON_Delete(j);
    }
    CHECK(t[0] > t[1]);
    /* the megatron default is the step with --overlap-p2p-comm 0, less its overhead */
    CHECK(SC("%s sim %s --framework megatron --overlap-p2p-comm 0 --json", bin, lay) == 0);
    CHECK_STR_HAS(out, "\"overlap_p2p_comm\":\tfalse");
    REQUIRE(SC("%s sim %s --framework megatron", bin, lay) == 0);
    CHECK_STR_HAS(out, "blocking sends");
    /* interleaved under megatron: beside the compute */
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --pp 8 --v 2 "
               "--schedule interleaved --microbatches 16 --mbs 1 --framework megatron --json",
               bin) == 0);
    CHECK(!strstr(out, "\"overlap_p2p_comm\""));
    /* plan: the header says why, the plan file records it, export takes it */
    REQUIRE(SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
               "--framework megatron --pp 4 --v 1 --schedule 1f1b -o %s/p2p.json",
               bin, d) == 0);
    CHECK_STR_HAS(out, "pipeline sends block their sender without virtual stages, where "
                       "Megatron-LM turns --overlap-p2p-communication off");
    REQUIRE(SC("cat %s/p2p.json", d) == 0);
    CHECK_STR_HAS(out, "\"overlap_p2p_comm\":\tfalse");
    REQUIRE(SC("%s export %s/p2p.json --to megatron -o %s/p2p >/dev/null 2>&1 && cat "
               "%s/p2p/megatron_torchrun.sh",
               bin, d, d, d) == 0);
    CHECK(!strstr(out, "(overlap_p2p_comm)"));
    REQUIRE(SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
               "--framework megatron --pp 4 --v 1 --schedule 1f1b --overlap-p2p-comm 1 -o "
               "%s/p2p1.json",
               bin, d) == 0);
    CHECK(!strstr(out, "pipeline sends block"));
    REQUIRE(SC("cat %s/p2p1.json", d) == 0);
    CHECK(!strstr(out, "\"overlap_p2p_comm\""));
    /* the export notes that plan's optimism (the note the default avoids) */
    REQUIRE(SC("%s export %s/p2p1.json --to megatron -o %s/p2p1 >/dev/null 2>&1 && cat "
               "%s/p2p1/megatron_torchrun.sh",
               bin, d, d, d) == 0);
    CHECK_STR_HAS(out, "(overlap_p2p_comm)");
    /* whatif says the rule under its header, as plan does */
    REQUIRE(SC("%s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
               "--tokens 1e9 --framework deepspeed -o %s/wi-p2p",
               bin, d) == 0);
    CHECK_STR_HAS(out, "pipeline sends block their sender in every schedule: DeepSpeed's "
                       "pipeline engine sends synchronously");
    /* tune on a DeepSpeed layout records the blocking sends */
    REQUIRE(SC("%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
               "--dp 4 --tp 1 --pp 4 --schedule 1f1b --framework deepspeed --json",
               bin) == 0);
    CHECK_STR_HAS(out, "\"overlap_p2p_comm\":\tfalse");
    REQUIRE(SC("%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
               "--dp 4 --tp 1 --pp 4 --schedule 1f1b --framework deepspeed",
               bin) == 0);
    CHECK_STR_HAS(out, "global batch 64, blocking sends");
}
