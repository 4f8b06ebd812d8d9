/* test_harden_outputs.c - commands with several outputs write all or none
 * (cli/cli_outputs.h): sim's --timeline, --lowered and -o, plot's picture and
 * --script; exec and trace check their output can be created before doing
 * any work; whatif on a cluster without prices plots time only and a failed
 * whatif leaves no folder behind. */
#include "check.h"

#include "../cli/cli_outputs.c"

#include "json.h"

#include <stdlib.h>
#include <sys/stat.h>

static char out[1 << 16];

/* Files under dir whose name contains what (temporaries left behind). */
static int count_named(const char *dir, const char *what)
{
    char o[64];
    if (sc_test_sh(o, sizeof o, "ls -a %s | grep -c -- '%s'", dir, what) < 0)
        return -1;
    return atoi(o);
}

static int have_gnuplot(void)
{
    char o[256];
    return sc_test_sh(o, sizeof o, "command -v gnuplot") == 0;
}

/* plan and tune know a missing folder before they search, as sim does: exit 3,
 * the folder named, nothing searched (plan wrote its table, then failed) */
TEST(outputs_plan_tune_missing_folder_refused_first)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    CHECK(sc_test_sh(out, sizeof out, "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                     "--global-batch 64 -o %s/missing_dir/p.json", bin, d) == 3);
    CHECK_STR_HAS(out, "missing_dir/p.json: cannot create: folder ");
    CHECK(!strstr(out, "searched"));
    CHECK(sc_test_sh(out, sizeof out, "%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 "
                     "--dp 2 --tp 1 --pp 4 --global-batch 64 -o %s/missing_dir/t.json", bin,
                     d) == 3);
    CHECK_STR_HAS(out, "missing_dir/t.json: cannot create: folder ");
    CHECK(!strstr(out, "best:"));
}

TEST(outputs_sim_one_missing_folder_writes_none)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *args = "--model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 8 "
                       "--microbatches 2";
    char p[700];
    /* the case: the timeline's folder is fine, the plan's is not */
    /* a folder that does not exist is an I/O failure: exit 3 (docs/commands.md) */
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s --timeline %s/t.json -o %s/missing_dir/p.json",
                     bin, args, d, d) == 3);
    CHECK_STR_HAS(out, "missing_dir/p.json: cannot create: folder ");
    CHECK(!strstr(out, "step time")); /* refused before simulating */
    snprintf(p, sizeof p, "%s/t.json", d);
    CHECK(!sc_test_exists(p));
    /* the other way round, and with --lowered in between */
    CHECK(sc_test_sh(out, sizeof out,
                     "%s sim %s --timeline %s/nope/t.json --lowered %s/l.txt -o %s/p.json", bin,
                     args, d, d, d) == 3);
    snprintf(p, sizeof p, "%s/l.txt", d);
    CHECK(!sc_test_exists(p));
    snprintf(p, sizeof p, "%s/p.json", d);
    CHECK(!sc_test_exists(p));
    /* a target that is a folder */
    CHECK(sc_test_sh(out, sizeof out, "mkdir -p %s/adir && %s sim %s --timeline %s/t.json -o %s/adir",
                     d, bin, args, d, d) == 2);
    CHECK_STR_HAS(out, "adir: is a folder");
    snprintf(p, sizeof p, "%s/t.json", d);
    CHECK(!sc_test_exists(p));
    /* all three, no temporaries left */
    REQUIRE(sc_test_sh(out, sizeof out, "%s sim %s --timeline %s/t.json --lowered %s/l.txt -o %s/p.json",
                       bin, args, d, d, d) == 0);
    CHECK(sc_test_exists(p));
    snprintf(p, sizeof p, "%s/l.txt", d);
    CHECK(sc_test_exists(p));
    snprintf(p, sizeof p, "%s/p.json", d);
    CHECK(sc_test_exists(p));
    CHECK_EQ_INT(count_named(d, ".stagecraft-"), 0);
}

/* The helper itself: a failure after some outputs were written renames
 * none and removes the temporaries; messages name the targets. */
TEST(outputs_commit_all_or_none)
{
    const char *d = sc_test_tmpdir();
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/a.json", d);
    snprintf(b, sizeof b, "%s/b.txt", d);
    cli_outputs s = {0};
    sc_error err = {0};
    const char *ta, *tb, *tc;
    REQUIRE(cli_outputs_add(&s, a, &ta, &err) == SC_OK);
    REQUIRE(cli_outputs_add(&s, b, &tb, &err) == SC_OK);
    CHECK(strstr(ta, "/.stagecraft-") && !strcmp(ta + strlen(ta) - 7, ".a.json"));
    CHECK(cli_outputs_add(&s, a, &tc, &err) == SC_EINVAL); /* twice */
    REQUIRE(sc_write_file_atomic(ta, "{}", 2, &err) == SC_OK);
    /* b was never written: nothing lands */
    CHECK(cli_outputs_commit(&s, SC_OK, &err) == SC_EIO);
    CHECK_STR_HAS(err.msg, "b.txt: was not written");
    CHECK(!sc_test_exists(a) && !sc_test_exists(b));
    CHECK_EQ_INT(count_named(d, ".stagecraft-"), 0);
    /* a writer's failure names the target, not the temporary */
    REQUIRE(cli_outputs_add(&s, a, &ta, &err) == SC_OK);
    sc_err(&err, SC_EIO, "%s: cannot write: disk full", ta);
    CHECK(cli_outputs_commit(&s, SC_EIO, &err) == SC_EIO);
    CHECK(!strncmp(err.msg, a, strlen(a)));
    CHECK(!strstr(err.msg, ".stagecraft-"));
    /* both written: both land */
    REQUIRE(cli_outputs_add(&s, a, &ta, &err) == SC_OK);
    REQUIRE(cli_outputs_add(&s, b, &tb, &err) == SC_OK);
    REQUIRE(sc_write_file_atomic(ta, "{}", 2, &err) == SC_OK);
    REQUIRE(sc_write_file_atomic(tb, "x", 1, &err) == SC_OK);
    CHECK(cli_outputs_commit(&s, SC_OK, &err) == SC_OK);
    CHECK(sc_test_exists(a) && sc_test_exists(b));
    CHECK_EQ_INT(count_named(d, ".stagecraft-"), 0);
    CHECK(cli_output_check("-", &err) == SC_OK);
    CHECK(cli_output_check("no/such/folder/x", &err) == SC_EIO);
}

TEST(outputs_exec_and_trace_check_first)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    /* exec: refused before the plan is even opened, let alone run */
    CHECK(sc_test_sh(out, sizeof out,
                     "env ASAN_OPTIONS=detect_leaks=0 %s exec tests/corpus/plan/good/plan.json "
                     "--backend cpu -o %s/missing_dir/m.json",
                     bin, d) != 0);
    CHECK_STR_HAS(out, "missing_dir/m.json: cannot create: folder ");
    CHECK(!strstr(out, "measured steps"));
    /* trace: before reading the timeline */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --microbatches 2 "
                       "--timeline %s/t.json",
                       bin, d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s/t.json -o %s/nope/c.json", bin, d, d) == 3);
    CHECK_STR_HAS(out, "nope/c.json: cannot create");
    /* plot: the script's folder is checked before drawing; nothing written */
    CHECK(sc_test_sh(out, sizeof out, "%s plot timeline %s/t.json -o %s/g.png --script %s/nope/g.gp",
                     bin, d, d, d) == 3);
    CHECK_STR_HAS(out, "nope/g.gp: cannot create");
    char p[700];
    snprintf(p, sizeof p, "%s/g.png", d);
    CHECK(!sc_test_exists(p));
    if (!have_gnuplot())
        return;
    CHECK(sc_test_sh(out, sizeof out, "%s plot timeline %s/t.json -o %s/g.png --script %s/g.gp",
                     bin, d, d, d) == 0);
    CHECK(sc_test_exists(p));
    snprintf(p, sizeof p, "%s/g.gp", d);
    CHECK(sc_test_exists(p));
    CHECK_EQ_INT(count_named(d, ".stagecraft-"), 0);
}

/* whatif on cpu-local ($0 an hour): time only, no gnuplot failure; a whatif
 * that fails to write leaves no folder of its own. */
TEST(outputs_whatif_no_price_and_no_empty_folder)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s model gen gpt --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 1024 "
                       "--dtype fp32 -o %s/tiny.json",
                       bin, d) == 0);
    const char *args = "--cluster cpu-local --nodes 1 --global-batch 8 --tokens 1e6";
    /* gnuplot missing: the run fails and the folder it made is gone */
    CHECK(sc_test_sh(out, sizeof out, "env PATH=/nonexistent %s whatif --model %s/tiny.json %s -o %s/w1",
                     bin, d, args, d) != 0);
    char p[700];
    snprintf(p, sizeof p, "%s/w1", d);
    CHECK(!sc_test_exists(p));
    if (!have_gnuplot()) {
        sc_test_skip("gnuplot not installed (scripts/deps.sh)");
        return;
    }
    CHECK(sc_test_sh(out, sizeof out, "%s whatif --model %s/tiny.json %s -o %s/w2", bin, d, args,
                     d) == 0);
    CHECK_STR_HAS(out, "no cost charts: no cluster has a price");
    snprintf(p, sizeof p, "%s/w2/tokens_vs_nodes.png", d);
    CHECK(sc_test_exists(p));
    snprintf(p, sizeof p, "%s/w2/whatif.csv", d);
    CHECK(sc_test_exists(p));
    snprintf(p, sizeof p, "%s/w2/time_vs_cost.png", d);
    CHECK(!sc_test_exists(p));
}

/* A FIFO and a symbolic link named as sim's outputs: the FIFO is written
 * through and the link followed, as every other writer does
 * (sc_write_file_atomic). They were staged beside the name and renamed over
 * it: the FIFO and the link became regular files, and as root `sim
 * --timeline /dev/null` replaced the system's /dev/null with the timeline
 * (the test makes its own FIFO: a regression must not harm the machine). */
TEST(outputs_sim_fifo_and_link_not_renamed_over)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *args = "--model gpt-1.3b --cluster p4d.24xlarge --dp 2 --microbatches 2";
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && mkfifo ff && mkdir sub && ln -s sub/real.json "
                       "link.json && ln -s ../low.txt sub/low.txt", d) == 0);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out,
                            "cd %s && (timeout 10 cat ff > got 2>/dev/null &) && "
                            "%s sim %s --timeline ff -o link.json "
                            "--lowered sub/low.txt",
                            d, bin, args),
                 0);
    CHECK_STR_HAS(out, "timeline written to ff");
    char p[700];
    struct stat sb;
    snprintf(p, sizeof p, "%s/ff", d);
    CHECK(lstat(p, &sb) == 0 && S_ISFIFO(sb.st_mode));
    snprintf(p, sizeof p, "%s/link.json", d);
    CHECK(lstat(p, &sb) == 0 && S_ISLNK(sb.st_mode));
    snprintf(p, sizeof p, "%s/sub/low.txt", d);
    CHECK(lstat(p, &sb) == 0 && S_ISLNK(sb.st_mode));
    /* the bytes reached the FIFO's reader and the links' files */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && sleep 0.2; grep -c stagecraft.timeline/1 got "
                            "&& %s sim --plan sub/real.json && test -s low.txt", d, bin), 0);
    CHECK_EQ_INT(count_named(d, ".stagecraft-"), 0);
    char sub[700];
    snprintf(sub, sizeof sub, "%s/sub", d);
    CHECK_EQ_INT(count_named(sub, ".stagecraft-"), 0);
    /* a link and the file it ends at name one output: refused */
    cli_outputs s = {0};
    sc_error err = {0};
    const char *ta, *tb;
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/link.json", d);
    snprintf(b, sizeof b, "%s/sub/real.json", d);
    REQUIRE(cli_outputs_add(&s, a, &ta, &err) == SC_OK);
    CHECK(strstr(ta, "/sub/.stagecraft-") != NULL); /* staged beside the file, not the link */
    CHECK(cli_outputs_add(&s, b, &tb, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "real.json: named for two outputs");
    cli_outputs_commit(&s, SC_EINVAL, NULL);
    /* a FIFO is passed through, never staged */
    snprintf(a, sizeof a, "%s/ff", d);
    REQUIRE(cli_outputs_add(&s, a, &ta, &err) == SC_OK);
    CHECK(!strcmp(ta, a));
    CHECK_EQ_INT(s.n, 0);
}

/* An output on standard output (-o -, /dev/fd/1, a link to fd 1) takes
 * it alone: the command's report goes to standard error, so the file can be
 * piped. It used to come after (or before) the file on stdout: `sim -o -`,
 * `plan -o -`, `calibrate -o -` gave JSON no parser reads. --json beside
 * such an output, or two of them, are refused; a full stdout is still exit
 * 3 naming stdout. */
TEST(outputs_stdout_output_takes_stdout_alone)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    const char *sim = "sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 --microbatches 2";
    const char *plan = "plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 --global-batch 16 "
                       "--top 2";
    const char *tune = "tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 --dp 2 --tp 1 "
                       "--pp 4 --global-batch 64";
    struct {
        const char *cmd, *out, *report;
    } cases[] = {
        {sim, "-o -", "plan written to standard output"},
        {sim, "-o /dev/fd/1", "step time"}, /* never /dev/stdout: a regression would */
                                              /* replace the machine's own */
        {sim, "--timeline -", "timeline written to standard output"},
        {sim, "-o fd1", "plan written to standard output"},
        {plan, "-o -", "winner written to standard output"},
        {tune, "-o -", "curve written to standard output"},
        /* bench starts MPI, whose leaks LeakSanitizer reports (test_bench.c) */
        {"bench gemm --sizes 32,48,64 --iters 2 --warmup 1", "-o -", "wrote standard output"},
    };
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && ln -s /proc/self/fd/1 fd1", d) == 0);
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        CHECK_EQ_INT(sc_test_sh(out, sizeof out,
                                "cd %s && %s%s %s %s > o.json 2> e.txt; rc=$?; cat e.txt; exit $rc",
                                d, strncmp(cases[i].cmd, "bench", 5) ? "" : "ASAN_OPTIONS=detect_leaks=0 ",
                                bin, cases[i].cmd, cases[i].out),
                     0);
        CHECK_STR_HAS(out, cases[i].report);
        char p[700], *text = NULL;
        size_t len = 0;
        sc_error err = {0};
        cJSON *j = NULL;
        snprintf(p, sizeof p, "%s/o.json", d);
        REQUIRE(sc_read_file(p, 1 << 26, &text, &len, &err) == SC_OK);
        if (sc_json_parse(p, text, len, &j, &err) != SC_OK)
            sc_test_fail(__FILE__, __LINE__, "%s %s: stdout is not one JSON document: %s",
                         cases[i].cmd, cases[i].out, err.msg);
        cJSON_Delete(j);
        sc_free(text);
    }
    /* the plan piped out replays */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s %s -o - 2>/dev/null | %s sim --plan -", d,
                            bin, sim, bin),
                 0);
    CHECK_STR_HAS(out, "step time");
    /* refusals: exit 2, nothing run */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s %s -o - --json", bin, sim), 2);
    CHECK_STR_HAS(out, "sim: --json prints on standard output, where the output '-' goes");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s %s -o - --timeline fd1", d, bin, sim), 2);
    CHECK_STR_HAS(out, "sim: two outputs name standard output");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s %s -o - --json", bin, plan), 2);
    CHECK(!strstr(out, "searched"));
    /* a full standard output: exit 3, named stdout (not the copy's /dev/fd/N) */
    if (sc_test_exists("/dev/full")) {
        CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s %s -o - > /dev/full", bin, sim), 3);
        CHECK_STR_HAS(out, "stagecraft: stdout: write error: No space left on device");
        CHECK(!strstr(out, "/dev/fd/"));
    }
    /* a closed one: the same words as any write to it */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s %s -o - >&-", bin, sim), 3);
    CHECK_STR_HAS(out, "stagecraft: stdout: write error: Bad file descriptor");
}

/* A command that writes a folder took -o - as a folder named '-' in the
 * working directory; now refused (exit 2) before any work, saying where a
 * single document does go. */
TEST(outputs_folder_commands_refuse_stdout)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && %s sim --model gpt-1.3b --cluster p4d.24xlarge "
                       "--dp 2 --microbatches 2 -o p.json", d, bin) == 0);
    const char *cmds[] = {
        "whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 --global-batch 64 --tokens 1e9",
        "repro seed38",
        "export p.json --to megatron",
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(cmds); i++) {
        CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s %s -o -", d, bin, cmds[i]), 2);
        CHECK_STR_HAS(out, "writes a folder of several files, which standard output cannot "
                           "take: give a folder name");
        CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s %s -o ''", d, bin, cmds[i]), 2);
        CHECK_STR_HAS(out, "-o: an empty folder name");
    }
    char p[700];
    snprintf(p, sizeof p, "%s/-", d);
    CHECK(!sc_test_exists(p));
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && %s export p.json --to megatron -o -", d,
                            bin),
                 2);
    CHECK_STR_HAS(out, "(without -o the main file goes to standard output)");
}
