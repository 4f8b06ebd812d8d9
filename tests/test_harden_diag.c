/* test_harden_diag.c - diagnostics that name the actual cause: a global
 * batch that needs more than 65536 microbatches, an unknown or repeated
 * --fix key, a fixed choice no schedule takes, a fixed mbs, sp with tp 1,
 * degrees that do not use every GPU, a v the schedule does not run,
 * a size sweep whose factor
 * never moves. (whatif on a cluster without prices: test_harden_outputs.c.) */
#include "bench.h"
#include "check.h"
#include "model.h"

static char out[1 << 16];

TEST(diag_plan_names_the_cause)
{
    const char *bin = sc_test_bin();
    const char *base = "--model gpt-1.3b --cluster p4d.24xlarge --nodes 2";
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 1073741824", bin, base) == 2);
    CHECK_STR_HAS(out, "global batch 1073741824 needs more than 65536 microbatches per pipeline");
    CHECK(!strstr(out, "dp must divide"));
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix schedule=foo", bin,
                     base) == 2);
    CHECK_STR_HAS(out, "--fix schedule: 'foo' is not one of gpipe, 1f1b, interleaved, zb-h1");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix dp=1,dp=2", bin,
                     base) == 2);
    CHECK_STR_HAS(out, "--fix: 'dp' is given twice");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix pp=2,tp=2,pp=2", bin,
                     base) == 2);
    CHECK_STR_HAS(out, "'pp' is given twice");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix schedule=interleaved,pp=1",
                     bin, base) == 2);
    CHECK_STR_HAS(out, "pp 1 runs 1f1b only");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix m=7", bin, base) == 2);
    CHECK_STR_HAS(out, "no layout gives 7 microbatches with global batch 64");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 63 --fix dp=2", bin, base) == 2);
    CHECK_STR_HAS(out, "must divide the batch");
    /* a fixed mbs above the search's --max-mbs (8) is searched, not refused
     * as "more than 65536 microbatches"; one that divides no replica's batch
     * says so */
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix mbs=64", bin, base) ==
          0);
    CHECK_STR_HAS(out, " 64 gpipe");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix mbs=3", bin, base) == 2);
    CHECK_STR_HAS(out, "no layout takes microbatches of 3 samples with global batch 64 (mbs "
                       "must divide the global batch / dp, dp at most 16)");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix mbs=8,dp=16", bin,
                     base) == 2);
    CHECK_STR_HAS(out, "dp at most 16, with the degrees fixed)");
    /* tune's bound is 64: a fixed 128 is judged, here too big for 40 GB */
    CHECK(sc_test_sh(out, sizeof out, "%s tune %s --global-batch 256 --dp 2 --tp 8 --pp 1 --mbs 128",
                     bin, base) == 5); /* exit 5: does not fit */
    CHECK_STR_HAS(out, "does not fit: needs ");
    CHECK(!strstr(out, "65536 microbatches"));
    /* sequence parallelism with tp 1 names the conflict */
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --sp --fix tp=1", bin, base) ==
          2);
    CHECK_STR_HAS(out, "sequence parallelism (--sp, --fix sp=1) needs tp >= 2, and tp is 1 here");
    /* degrees whose product is not the GPU count said "dp = GPUs / (tp·pp)
     * must divide the batch" of a dp that did divide it; a v the schedule
     * cannot run said "none matches the fixed choices"; tune repeated
     * "plan: " after its own name */
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix dp=2,tp=1,pp=1", bin,
                     base) == 2);
    CHECK_STR_HAS(out, "plan: dp·tp·pp = 2, but a layout uses every GPU: 16 here (2 nodes of 8; "
                       "--nodes sets the count)");
    CHECK(sc_test_sh(out, sizeof out, "%s tune %s --global-batch 64 --dp 4 --tp 1 --pp 4 --v 2",
                     bin, base) == 2);
    CHECK_STR_HAS(out, "stagecraft: tune: no schedule accepts the layouts: 1f1b runs one chunk "
                       "per rank (v 2 needs the interleaved schedule)");
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix pp=2,v=1,"
                                      "schedule=interleaved",
                     bin, base) == 2);
    CHECK_STR_HAS(out, "interleaved needs v >= 2 chunks per rank (v 1 is 1f1b)");
    /* what still works */
    CHECK(sc_test_sh(out, sizeof out, "%s plan %s --global-batch 64 --fix dp=2,tp=8 --top 2", bin,
                     base) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s tune %s --global-batch 64 --dp 4 --tp 1 --pp 4 --v 2 "
                                      "--schedule interleaved",
                     bin, base) == 0);
}

TEST(diag_bench_sizes_factor_one)
{
    sc_bench_point pts[SC_BENCH_MAX_SIZES];
    int n = 0;
    sc_error err = {0};
    CHECK(sc_bench_parse_sizes(SC_BENCH_GEMM, "1:64:1", pts, &n, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--sizes '1:64:1': FACTOR 1 never reaches MAX");
    CHECK(sc_bench_parse_sizes(SC_BENCH_GEMM, "64:64:1", pts, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 1);
    CHECK(sc_bench_parse_sizes(SC_BENCH_GEMM, "1:64:2", pts, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 7);
    CHECK(sc_test_sh(out, sizeof out, "%s bench gemm --sizes 1:64:1", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "FACTOR 1 never reaches MAX");
}

/* A model or cluster argument that is neither a built-in nor a file: one
 * line saying both, with the name meant where one is near (it used to say
 * only "foo: cannot open: No such file or directory"). Paths keep the
 * system's message. */
TEST(diag_unknown_model_or_cluster_names_the_builtins)
{
    const char *names[] = {"p4d.24xlarge", "p4de.24xlarge", "dgx-a100-80g", "dgx-h100"};
    CHECK_EQ_INT(sc_closest_name("dgx-a100", names, 4), 2); /* a prefix beats 1 edit */
    CHECK_EQ_INT(sc_closest_name("p4d", names, 4), 0);      /* the shortest it begins */
    CHECK_EQ_INT(sc_closest_name("DGX-H10", names, 4), 3);  /* case ignored */
    CHECK_EQ_INT(sc_closest_name("dgx-h1000", names, 4), 3);
    CHECK_EQ_INT(sc_closest_name("h100", names, 4), 3);     /* a word of dgx-h100 */
    CHECK_EQ_INT(sc_closest_name("a100", names, 4), 2);
    CHECK_EQ_INT(sc_closest_name("24xlarge", names, 4), -1); /* p4d.24xlarge: no '-' word */
    CHECK_EQ_INT(sc_closest_name("a10", names, 4), -1);     /* a word whole, not its start */
    const char *opts[] = {"max-mbs", "global-batch", "train-batch-size-total", "microbatches"};
    CHECK_EQ_INT(sc_closest_name("batch", opts, 4), 1);     /* the shortest with the word */
    CHECK_EQ_INT(sc_closest_name("mbs", opts, 4), 0);
    CHECK_EQ_INT(sc_closest_name("ab", names, 4), -1);
    CHECK_EQ_INT(sc_closest_name("dgx-1h00", names, 4), 3); /* a swap is one edit */
    const char *cmds[] = {"sim", "plan", "compare"};
    CHECK_EQ_INT(sc_closest_name("plna", cmds, 3), 1);
    CHECK_EQ_INT(sc_closest_name("cmopaer", cmds, 3), 2);   /* two swaps */
    CHECK_EQ_INT(sc_closest_name("xyz", cmds, 3), -1);
    CHECK_EQ_INT(sc_closest_name("", names, 4), -1);
    CHECK(sc_reads_as_name("gpt-13"));
    CHECK(!sc_reads_as_name("m.json") && !sc_reads_as_name("./m") && !sc_reads_as_name(""));
    const char *bin = sc_test_bin();
    const char *rest = "--nodes 1 --dp 8 --tp 1 --pp 1 --microbatches 1";
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-13 --cluster p4d.24xlarge %s", bin,
                     rest) == 2);
    CHECK_STR_HAS(out, "stagecraft: gpt-13: no built-in model of that name and no such file "
                       "(did you mean gpt-13b? `stagecraft model list` lists them)\n");
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-13b --cluster dgx-a100 --nodes 1 "
                                      "--global-batch 8",
                     bin) == 2);
    CHECK_STR_HAS(out, "dgx-a100: no cluster preset of that name and no such file (did you "
                       "mean dgx-a100-80g? `stagecraft cluster list` lists them)");
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model zzzz --cluster p4d.24xlarge %s", bin,
                     rest) == 2);
    CHECK_STR_HAS(out, "zzzz: no built-in model of that name and no such file (`stagecraft");
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-13b --cluster ./nope %s", bin, rest) ==
          2);
    CHECK_STR_HAS(out, "./nope: cannot open: No such file or directory");
    CHECK(sc_test_sh(out, sizeof out, "%s plna", bin) == 2);
    CHECK_STR_HAS(out, "stagecraft: unknown command 'plna' (did you mean plan?)\n");
}

/* An input that is a folder said "read error" (exit 3, as if the disk had
 * failed); one past the size limit gave the limit in bytes. Now: "is a
 * folder, not a file" (bad usage, 2), and the limit in MiB. */
TEST(diag_input_folder_and_oversized)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s model show %s", bin, d), 2);
    CHECK_STR_HAS(out, ": is a folder, not a file\n");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s sim --plan %s", bin, d), 2);
    CHECK_STR_HAS(out, ": is a folder, not a file\n");
    char big[700];
    snprintf(big, sizeof big, "%s/big.json", d);
    REQUIRE(sc_test_sh(out, sizeof out, "truncate -s 65M %s", big) == 0);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s model show %s", bin, big), 2);
    CHECK_STR_HAS(out, "big.json: larger than the limit of 64 MiB on an input file\n");
}

/* Two inputs given as "-": the second read nothing and was reported as
 * "-: invalid JSON: unexpected end of input"; now it says stdin was taken. */
TEST(diag_stdin_read_once)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    sc_model *m = sc_test_small_gpt("m.json");
    REQUIRE(m);
    sc_model_free(m);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s sim --model - --cluster - --dp 2 "
                            "--microbatches 2 < m.json", d, bin),
                 2);
    CHECK_STR_HAS(out, "stagecraft: -: standard input is read once, and another input of this "
                       "command took it: give this one a file\n");
    /* one input on stdin still works */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s sim --model - --cluster cpu-local --dp 2 "
                            "--microbatches 2 < m.json", d, bin),
                 0);
    CHECK_STR_HAS(out, "step time");
}

/* sim --runs K without --jitter simulated the same step K times and
 * reported a spread of 0 as if measured; refused now, naming --jitter. */
TEST(diag_sim_runs_need_jitter)
{
    const char *bin = sc_test_bin();
    const char *base = "sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --microbatches 2";
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s %s --runs 5", bin, base), 2);
    CHECK_STR_HAS(out, "--runs 5 repeats the step with --jitter's noise: without --jitter every "
                       "run is the same step");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s %s --runs 3 --jitter 0.05", bin, base), 0);
    CHECK_STR_HAS(out, "jitter 0.05 over 3 runs (seeds 1..3)");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s %s --runs 1", bin, base), 0);
}
