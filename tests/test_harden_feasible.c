/* test_harden_feasible.c - configurations that cannot run are refused with
 * their real cause: tp that does not divide the heads (one rule for the
 * planner, sim, cost and plans), an empty model, absurd cluster figures
 * (tests/corpus/cluster/tiny_*.json), a step that does not fit in memory
 * (non-zero exit unless --allow-oom, the warning on stderr). */
#include "check.h"
#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "search.h"

static char out[1 << 16];

TEST(feasible_tp_must_divide_heads)
{
    const char *bin = sc_test_bin();
    sc_model *m = NULL;
    sc_error err = {0};
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    CHECK(sc_cost_tp_divides_heads(m, 8));
    CHECK(sc_cost_tp_divides_heads(m, 16));
    CHECK(!sc_cost_tp_divides_heads(m, 3));
    CHECK(!sc_cost_tp_divides_heads(m, 32));
    CHECK(sc_cost_tp_check(m, 3, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "tp 3 does not divide the 16 heads of blocks.0.attn");
    /* the planner says the same */
    sc_cluster c;
    REQUIRE(sc_cluster_open("p4d.24xlarge", &c, &err) == SC_OK);
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 8;
    o.fix_tp = 3;
    sc_search *s = NULL;
    CHECK(sc_search_run(m, &c, &o, &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "tp 3 does not divide the 16 heads");
    sc_model_free(m);
    /* sim and cost */
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --tp 3 "
                     "--microbatches 2", bin) == 2);
    CHECK_STR_HAS(out, "sim: gpt-1.3b: tp 3 does not divide the 16 heads of blocks.0.attn");
    CHECK(!strstr(out, "step time"));
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 4 "
                     "--tp 32 --microbatches 2", bin) == 2);
    CHECK_STR_HAS(out, "tp 32 does not divide the 16 heads");
    CHECK(sc_test_sh(out, sizeof out, "%s cost --model gpt-1.3b --cluster p4d.24xlarge --tp 3",
                     bin) == 2);
    CHECK_STR_HAS(out, "cost: gpt-1.3b: tp 3 does not divide the 16 heads");
    CHECK(sc_test_sh(out, sizeof out, "%s cost --model gpt-1.3b --cluster p4d.24xlarge --tp 8",
                     bin) == 0);
}

TEST(feasible_empty_model_refused)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "echo '{\"format\":\"stagecraft.model/1\",\"name\":\"empty\",\"dtype\":"
                       "\"bf16\",\"seq_len\":8,\"root\":{\"name\":\"root\",\"kind\":\"model\","
                       "\"params\":0,\"flops_fwd\":0,\"act_out_bytes\":0,\"act_saved_bytes\":0}}' "
                       "> %s/empty.json",
                       d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model %s/empty.json --cluster p4d.24xlarge "
                     "--microbatches 2", bin, d) == 2);
    CHECK_STR_HAS(out, "empty.json: root: the model has no work");
    CHECK_STR_HAS(out, "the root has no children");
    CHECK(!strstr(out, "step time"));
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model %s/empty.json --cluster p4d.24xlarge "
                     "--global-batch 8", bin, d) == 2);
    CHECK_STR_HAS(out, "empty.json: root: the model has no work");
}

/* A cluster rate of 1e-300 gave "inf us" or a deadlock, a peak of 1e-300
 * FLOP/s "out of memory": now the loader names the figure. */
TEST(feasible_absurd_cluster_named)
{
    const char *bin = sc_test_bin();
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster "
                     "tests/corpus/cluster/tiny_intra_bandwidth.json --tp 2 --microbatches 2",
                     bin) == 2);
    CHECK_STR_HAS(out, "tiny_intra_bandwidth.json: intra.bytes_per_s: 1e-300 is implausibly small");
    CHECK(!strstr(out, "deadlock") && !strstr(out, "inf us"));
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster "
                     "tests/corpus/cluster/tiny_peak_flops.json --microbatches 2",
                     bin) == 2);
    CHECK_STR_HAS(out, "gpu.peak_flops.bf16: 1e-300 is implausibly small");
    CHECK(!strstr(out, "out of memory"));
}

/* Does not fit: the report on stdout, the warning on stderr, exit non-zero
 * and nothing written, unless --allow-oom. */
TEST(feasible_oom_exits_nonzero_unless_allowed)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *args = "--model gpt-13b --cluster p4d.24xlarge --microbatches 2";
    char p[700];
    snprintf(p, sizeof p, "%s/p.json", d);
    int rc = sc_test_sh(out, sizeof out, "%s sim %s -o %s 2>/dev/null", bin, args, p);
    CHECK(rc != 0 && rc != 1);
    CHECK_STR_HAS(out, "DOES NOT FIT"); /* the report still comes */
    CHECK(!strstr(out, "warning"));     /* not on stdout */
    CHECK(!sc_test_exists(p));
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s -o %s >/dev/null", bin, args, p) != 0);
    CHECK_STR_HAS(out, "sim: a stage needs ");
    CHECK_STR_HAS(out, "--allow-oom");
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s --json 2>/dev/null", bin, args) != 0);
    CHECK_STR_HAS(out, "\"fits\":\tfalse");
    /* allowed: exit 0, the warning on stderr, the plan written */
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s --allow-oom -o %s 2>/dev/null", bin, args, p) ==
          0);
    CHECK(!strstr(out, "warning"));
    CHECK(sc_test_exists(p));
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s --allow-oom >/dev/null", bin, args) == 0);
    CHECK_STR_HAS(out, "warning: a stage needs ");
    /* one that fits: no warning anywhere */
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --tp 8 "
                     "--microbatches 2", bin) == 0);
    CHECK(!strstr(out, "warning") && !strstr(out, "DOES NOT FIT"));
}
