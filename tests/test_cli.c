/* test_cli.c - the stagecraft command as a user runs it: help, exit codes,
 * one-line errors, nothing written on failure, JSON output. */
#include "check.h"
#include "json.h"
#include "timeline.h"

#include <stdlib.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

TEST(cli_help_everywhere)
{
    CHECK(SC("%s --help", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "commands:");
    const char *cmds[] = {"model", "model gen", "model gen gpt", "model show", "model list",
                          "cluster", "cluster show", "cluster list", "cost", "sim", "trace",
                          "plot", "plot timeline", "version"};
    for (size_t i = 0; i < SC_ARRAY_LEN(cmds); i++) {
        int rc = SC("%s %s --help", sc_test_bin(), cmds[i]);
        if (rc != 0)
            sc_test_fail(__FILE__, __LINE__, "'%s --help' exited %d: %.200s", cmds[i], rc, out);
        CHECK_STR_HAS(out, "usage");
    }
    CHECK(SC("%s frobnicate", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "unknown command 'frobnicate'");
}

TEST(cli_model_gen_show_roundtrip)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s model gen gpt --layers 24 --hidden 2048 --heads 16 --seq 2048 --vocab 50257 "
               "--tied -o %s/g.json", sc_test_bin(), d) == 0);
    /* the generated file shows the same totals as the built-in gpt-1.3b */
    REQUIRE(SC("%s model show %s/g.json --json", sc_test_bin(), d) == 0);
    cJSON *a = cJSON_Parse(out);
    REQUIRE(SC("%s model show gpt-1.3b --json", sc_test_bin()) == 0);
    cJSON *b = cJSON_Parse(out);
    REQUIRE(a && b);
    const cJSON *ta = cJSON_GetObjectItem(a, "totals"), *tb = cJSON_GetObjectItem(b, "totals");
    CHECK(cJSON_GetObjectItem(ta, "params")->valuedouble ==
          cJSON_GetObjectItem(tb, "params")->valuedouble);
    CHECK(cJSON_GetObjectItem(ta, "flops_fwd")->valuedouble ==
          cJSON_GetObjectItem(tb, "flops_fwd")->valuedouble);
    cJSON_Delete(a);
    cJSON_Delete(b);
    CHECK(SC("%s model show %s/g.json --depth 1", sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "total: 1.32G params");
    CHECK(SC("%s model list", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "gpt-175b");
    CHECK_STR_HAS(out, "mm-1.3b");
}

TEST(cli_bad_input_one_line_exit2_nothing_written)
{
    const char *d = sc_test_tmpdir();
    /* a bad model file: exit 2, one line naming file and path */
    CHECK(SC("%s model show tests/corpus/model/negative_params.json 2>&1 >/dev/null",
             sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "stagecraft: tests/corpus/model/negative_params.json: root.params:");
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);
    /* generator errors write nothing */
    CHECK(SC("%s model gen gpt --heads 3 -o %s/x.json", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "must divide");
    CHECK(!sc_test_exists("x.json"));
    char p[600];
    snprintf(p, sizeof p, "%s/x.json", d);
    CHECK(!sc_test_exists(p));
    CHECK(SC("%s model gen gpt --bogus 3 -o %s", sc_test_bin(), p) == 2);
    CHECK_STR_HAS(out, "gpt has no parameter '--bogus'");
    CHECK(!sc_test_exists(p));
    /* sim with a bad model file writes no timeline */
    snprintf(p, sizeof p, "%s/t.json", d);
    CHECK(SC("%s sim --model tests/corpus/model/cycle_input.json --cluster p4d.24xlarge "
             "--microbatches 2 --timeline %s", sc_test_bin(), p) == 2);
    CHECK_STR_HAS(out, "makes a cycle");
    CHECK(!sc_test_exists(p));
    CHECK(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 4 --tp 8 --pp 1 "
             "--microbatches 2 --timeline %s", sc_test_bin(), p) == 2);
    CHECK_STR_HAS(out, "32 ranks, but p4d.24xlarge with 1 node has 8 GPUs");
    CHECK(!sc_test_exists(p));
    CHECK(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --tp x --microbatches 2",
             sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "--tp: 'x' is not an integer");
    CHECK(SC("%s sim --model gpt-1.3b --cluster nowhere.json --microbatches 2",
             sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "nowhere.json");
}

TEST(cli_sim_json_and_timeline)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 4 --pp 2 "
               "--microbatches 4 --mbs 1 --schedule 1f1b --json --timeline %s/t.json",
               sc_test_bin(), d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const char *keys[] = {"step_time_s", "bubble_fraction", "tflops_per_gpu", "mfu",
                          "peak_mem_bytes", "cost_per_step_usd", "breakdown", "busy_fraction",
                          "links", "tokens_per_s"};
    for (size_t i = 0; i < SC_ARRAY_LEN(keys); i++)
        if (!cJSON_GetObjectItem(j, keys[i]))
            sc_test_fail(__FILE__, __LINE__, "sim --json lacks %s", keys[i]);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "peak_mem_bytes")) == 2);
    double step = cJSON_GetObjectItem(j, "step_time_s")->valuedouble;
    cJSON_Delete(j);
    char p[600];
    snprintf(p, sizeof p, "%s/t.json", d);
    sc_timeline *t;
    sc_error err;
    REQUIRE(sc_timeline_load(p, &t, &err) == SC_OK);
    CHECK_EQ_INT(t->n_ranks, 16);
    CHECK_NEAR(t->step_time_s, step, 1e-12);
    sc_timeline_free(t);
    /* byte-identical without jitter */
    static char first[1 << 16];
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --tp 2 --pp 2 "
               "--microbatches 4", sc_test_bin()) == 0);
    snprintf(first, sizeof first, "%s", out);
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --tp 2 --pp 2 "
               "--microbatches 4", sc_test_bin()) == 0);
    CHECK(strcmp(first, out) == 0);
    CHECK_STR_HAS(out, "step time");
    /* jitter over several runs reports a spread */
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 1 --tp 2 --pp 2 "
               "--microbatches 4 --jitter 0.05 --seed 3 --runs 5 --json", sc_test_bin()) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *runs = cJSON_GetObjectItem(j, "runs");
    REQUIRE(runs);
    CHECK(cJSON_GetObjectItem(runs, "stddev_step_time_s")->valuedouble > 0);
    CHECK(cJSON_GetObjectItem(runs, "min_step_time_s")->valuedouble <
          cJSON_GetObjectItem(runs, "max_step_time_s")->valuedouble);
    cJSON_Delete(j);
}

/* sim --global-batch B names the microbatches, B / (dp x mbs), as plan and
 * tune take the batch (it was refused as an unknown option): the same step
 * as --microbatches; a batch that does not divide, or that disagrees with a
 * --microbatches also given, is refused in one line, exit 2 */
TEST(cli_sim_global_batch)
{
    static char by_m[1 << 16];
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --pp 2 --mbs 2 "
               "--microbatches 8", sc_test_bin()) == 0);
    snprintf(by_m, sizeof by_m, "%s", out);
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --pp 2 --mbs 2 "
               "--global-batch 32", sc_test_bin()) == 0);
    CHECK(!strcmp(by_m, out));
    CHECK_STR_HAS(out, "microbatches 8  mbs 2");
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --pp 2 --mbs 2 "
               "--global-batch 32 --microbatches 8", sc_test_bin()) == 0);
    CHECK(!strcmp(by_m, out));
    CHECK(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --mbs 2 --global-batch 30",
             sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "--global-batch 30 is not a multiple of dp x mbs = 2 x 2 = 4");
    CHECK(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --mbs 2 --global-batch 32 "
             "--microbatches 4", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "--global-batch 32 disagrees with dp x microbatches x mbs = 2 x 4 x 2 = 16");
    CHECK(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "--microbatches is required (or --global-batch");
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --microbatches 2 -o %s/gb.json",
               sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "(1 GPU used of 8)"); /* "1 GPUs" once */
    CHECK(SC("%s sim --plan %s/gb.json --global-batch 2", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "--plan replays a plan");
}

/* bytes from "169.78 MiB" as cli_bytes prints them */
static double shown_bytes(double v, const char *unit)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    for (size_t i = 0; i < SC_ARRAY_LEN(u); i++, v *= 1024)
        if (!strcmp(unit, u[i]))
            return v;
    return -1;
}

/* sim's stage table adds up: weights + grads + optimizer + activations +
 * workspace = total on every row (the workspace reserve was once left out,
 * so the columns fell 2 GiB short of the total they sat beside) */
TEST(cli_sim_stage_table_adds_up)
{
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --tp 2 --pp 2 "
               "--microbatches 4", sc_test_bin()) == 0);
    const char *h = strstr(out, "\nstage ");
    REQUIRE(h);
    CHECK_STR_HAS(h, "activations   workspace       total");
    int rows = 0;
    for (const char *l = strchr(h + 1, '\n'); l && l[1] >= '0' && l[1] <= '9';
         l = strchr(l + 1, '\n'), rows++) {
        /* the sizes follow the two module names, 66 columns in */
        REQUIRE(strlen(l + 1) > 66);
        double v[6];
        char u[6][8];
        const char *q = l + 1 + 66;
        REQUIRE(sscanf(q, "%lf %7s %lf %7s %lf %7s %lf %7s %lf %7s %lf %7s", &v[0], u[0], &v[1],
                       u[1], &v[2], u[2], &v[3], u[3], &v[4], u[4], &v[5], u[5]) == 12);
        double sum = 0;
        for (int i = 0; i < 5; i++)
            sum += shown_bytes(v[i], u[i]);
        double total = shown_bytes(v[5], u[5]);
        CHECK(shown_bytes(v[4], u[4]) > 0); /* the preset's reserve */
        CHECK_NEAR(sum / total, 1, 0.005);  /* as rounded to two decimals */
    }
    CHECK_EQ_INT(rows, 2);
    /* the default stages say they are not the planner's; a partition given,
     * or a plan's, does not */
    CHECK_STR_HAS(out, "\nstages: uniform, the layers spread evenly (--partition); plan and "
                       "tune place them by cost");
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --tp 2 --pp 2 "
               "--microbatches 4 --partition 40 -o %s/p.json", sc_test_bin(), d) == 0);
    CHECK(!strstr(out, "stages: uniform"));
    REQUIRE(SC("%s sim --plan %s/p.json", sc_test_bin(), d) == 0);
    CHECK(!strstr(out, "stages: uniform"));
    /* --json: how the stages were cut, and each one's modules */
    REQUIRE(SC("%s sim --plan %s/p.json --json", sc_test_bin(), d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"),
                                                           "partition")), "explicit"));
    const cJSON *m1 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "memory"), 1);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(m1, "last_module")), "head"));
    CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(m1, "first_module")) != NULL);
    cJSON_Delete(j);
}

/* A tensor-parallel group spanning nodes: `cost` (one ring, alone on the
 * network) and the simulator (one microbatch, nothing else moving) agree on
 * the tp time. The ring crosses each node boundary once, so its hop across
 * has the NICs whole; `cost` once gave each member 1/8 of them (4x the
 * simulated time here). */
TEST(cli_cost_tp_across_nodes_matches_sim)
{
    REQUIRE(SC("%s cost --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --tp 16 --mbs 1 "
               "--depth 9 --json", sc_test_bin()) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    double tp_cost = 0; /* own costs per module: their sum is the model's */
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(j, "modules"))
        tp_cost += cJSON_GetObjectItem(m, "tp_s")->valuedouble;
    cJSON_Delete(j);
    REQUIRE(SC("%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --tp 16 --mbs 1 "
               "--microbatches 1 --json", sc_test_bin()) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    double tp_sim =
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "breakdown"), "tp_comm_s")->valuedouble;
    cJSON_Delete(j);
    CHECK(tp_cost > 0);
    CHECK_NEAR(tp_cost / tp_sim, 1.0, 0.01);
}
