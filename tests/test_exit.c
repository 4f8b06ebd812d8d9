/* test_exit.c - the exit-code table (cli/cli.h, docs/commands.md "Exit
 * codes") command by command: a usage error is 2, a bad input file is 2, an
 * output that cannot be written is 3 (an I/O error, whatever the command),
 * and the library's statuses map through one function. */
#include "check.h"
#include "sc.h"

#include <limits.h>
#include <stdlib.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

/* Open MPI's MPI_Init leaks by itself (see test_exec.c): no leak check in
 * the sanitizer build for the commands that start it (bench, exec). */
#define NO_LEAK_CHECK "ASAN_OPTIONS=detect_leaks=0 "

/* Files every case below uses, in the test's directory:
 *   bad.json     not JSON at all
 *   nodir        a regular file, so nodir/x.json cannot be created
 *   tiny.json    a small model; cpu1.json a one-device CPU cluster
 *   plan.json    a one-rank plan of it; tl.json its simulated timeline
 *   tune.json    a microbatch sweep; gemm.json a bench of four GEMMs */
static int setup(const char *d)
{
    const char *b = sc_test_bin();
    return SC("cd %s && printf '{\"format\": ' > bad.json && echo x > nodir && "
              "%s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 --vocab 100 "
              "--dtype fp32 -o tiny.json && "
              "%s cluster show cpu-local --nodes 1 -o cpu1.json && "
              "%s sim --model tiny.json --cluster cpu1.json --dp 1 --tp 1 --pp 1 "
              "--microbatches 1 --mbs 1 -o plan.json --timeline tl.json && "
              "%s tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
              "--dp 2 --tp 8 --pp 1 -o tune.json && "
              NO_LEAK_CHECK "%s bench gemm --sizes 32,64,128,256 --iters 2 --warmup 0 "
              "-o gemm.json",
              d, b, b, b, b, b);
}

/* Runs `bin ARGS` in directory d and checks the exit status and that the
 * one-line message names what it should. */
static void expect(const char *d, int want, const char *needle, const char *args)
{
    int mpi = !strncmp(args, "bench ", 6) || !strncmp(args, "exec ", 5);
    int rc = SC("cd %s && %s%s %s", d, mpi ? NO_LEAK_CHECK : "", sc_test_bin(), args);
    if (rc != want)
        sc_test_fail(__FILE__, __LINE__, "'stagecraft %s' exited %d, want %d: %.300s", args, rc,
                     want, out);
    else if (needle && !strstr(out, needle))
        sc_test_fail(__FILE__, __LINE__, "'stagecraft %s': no '%s' in: %.300s", args, needle,
                     out);
}

TEST(exit_usage_errors_are_2)
{
    const char *d = sc_test_tmpdir();
    static const char *cmds[] = {"model", "cluster", "cost", "trace", "plot", "exec",
                                 "sim",   "plan",    "calibrate", "compare", "tune",
                                 "whatif", "repro", "bench", "version"};
    char args[128];
    for (size_t i = 0; i < SC_ARRAY_LEN(cmds); i++) {
        snprintf(args, sizeof args, "%s --no-such-option", cmds[i]);
        expect(d, 2, NULL, args);
    }
    /* one message, the command's own, naming the option (exec printed
     * getopt's "exec: unrecognized option" first) */
    for (size_t i = 0; i < SC_ARRAY_LEN(cmds); i++) {
        snprintf(args, sizeof args, "%s --no-such-option", cmds[i]);
        expect(d, 2, "'--no-such-option'", args);
        if (strstr(out, "unrecognized option"))
            sc_test_fail(__FILE__, __LINE__, "'stagecraft %s': getopt's message too: %.300s",
                         args, out);
    }
    expect(d, 2, "unknown command", "no-such-command");
    expect(d, 2, NULL, "");
    expect(d, 2, "--layers", "model gen gpt --layers x");
    expect(d, 2, "--nodes", "plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 0 "
                            "--global-batch 8");
}

TEST(exit_bad_input_files_are_2)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d) == 0);
    expect(d, 2, "bad.json", "model show bad.json");
    expect(d, 2, "bad.json", "cluster show bad.json");
    expect(d, 2, "bad.json", "cost --model bad.json --cluster p4d.24xlarge");
    expect(d, 2, "bad.json", "cost --model gpt-1.3b --cluster bad.json");
    expect(d, 2, "bad.json", "trace bad.json -o t.json");
    expect(d, 2, "bad.json", "plot timeline bad.json -o t.png");
    expect(d, 2, "bad.json", "plot tune bad.json -o t.png");
    expect(d, 2, "bad.json", "sim --model bad.json --cluster p4d.24xlarge --dp 1 --tp 1 "
                             "--pp 1 --microbatches 1 --mbs 1");
    expect(d, 2, "bad.json", "sim --plan bad.json");
    expect(d, 2, "bad.json", "plan --model bad.json --cluster p4d.24xlarge --nodes 1 "
                             "--global-batch 8");
    expect(d, 2, "bad.json", "calibrate --cluster cpu-local bad.json -o c.json");
    expect(d, 2, "bad.json", "calibrate --cluster bad.json tl.json -o c.json");
    expect(d, 2, "bad.json", "compare bad.json tl.json");
    expect(d, 2, "bad.json", "compare plan.json bad.json");
    expect(d, 2, "bad.json", "tune --model bad.json --cluster p4d.24xlarge --nodes 2 "
                             "--global-batch 64 --dp 2 --tp 8 --pp 1");
    expect(d, 2, "bad.json", "whatif --model bad.json --cluster p4d.24xlarge --nodes 1 "
                             "--global-batch 64 --tokens 1e9 -o w");
    expect(d, 2, "bad.json", "repro seed38 --model gpt-1.3b --cluster bad.json -o r");
    /* a name that is neither a built-in nor a file is the caller's mistake */
    expect(d, 2, "no-such.json", "model show no-such.json");
    expect(d, 2, "no-such.json", "trace no-such.json -o t.json");
    /* nothing was written by any of them */
    CHECK(SC("cd %s && ls t.json t.png c.json w r 2>/dev/null | wc -l", d) == 0);
    CHECK_STR_HAS(out, "0");
}

TEST(exit_unwritable_output_is_3)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d) == 0);
    /* nodir is a file: nodir/x cannot be created (ENOTDIR, even as root) */
    expect(d, 3, "nodir/x.json", "model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 "
                                 "--vocab 100 -o nodir/x.json");
    expect(d, 3, "nodir/x.json", "cluster show p4d.24xlarge -o nodir/x.json");
    expect(d, 3, "nodir/x.json", "trace tl.json -o nodir/x.json");
    expect(d, 3, "nodir/x.png", "plot timeline tl.json -o nodir/x.png");
    expect(d, 3, "nodir/x.png", "plot tune tune.json -o nodir/x.png");
    expect(d, 3, "nodir/x.json", "sim --plan plan.json -o nodir/x.json");
    expect(d, 3, "nodir/x.json", "sim --plan plan.json --timeline nodir/x.json");
    expect(d, 3, "nodir/x.json", "plan --model tiny.json --cluster cpu1.json "
                                 "--global-batch 4 -o nodir/x.json");
    expect(d, 3, "nodir/x.json", "calibrate --cluster cpu1.json gemm.json -o nodir/x.json");
    expect(d, 3, "nodir/x.json", "tune --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                                 "--global-batch 64 --dp 2 --tp 8 --pp 1 -o nodir/x.json");
    expect(d, 3, "nodir", "whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 "
                          "--global-batch 64 --tokens 1e9 -o nodir/w");
    expect(d, 3, "nodir", "repro seed38 --model gpt-1.3b -o nodir/r");
    expect(d, 3, "nodir/x.json", "bench gemm --sizes 32 --iters 1 --warmup 0 -o nodir/x.json");
    /* exec writes its timeline after the run: one rank, one step */
    if (SC("%s version | grep -q 'MPI:  yes'", sc_test_bin()) == 0)
        expect(d, 3, "nodir/x.json", "exec plan.json --backend cpu --steps 1 --warmup 0 "
                                     "-o nodir/x.json");
}

/* The library's statuses, through the command: an infeasible configuration
 * is 5; "built without" is 2. */
TEST(exit_infeasible_is_5)
{
    const char *d = sc_test_tmpdir();
    /* gpt-175b's states alone outgrow one 40 GB GPU whatever the layout */
    expect(d, 5, "does not fit", "plan --model gpt-175b --cluster p4d.24xlarge --nodes 1 "
                                 "--global-batch 8 --fix tp=1,pp=1");
}

/* Output on standard output that cannot be written (a full disk; /dev/full)
 * is an I/O error with a message, whatever the command printed: tables,
 * JSON, a document through -o -. */
TEST(exit_stdout_write_error_is_3)
{
    const char *d = sc_test_tmpdir();
    if (!sc_test_exists("/dev/full")) {
        sc_test_skip("no /dev/full");
        return;
    }
    static const char *cases[] = {
        "model list",
        "model list --json",
        "model show gpt-175b", /* more than one stdio buffer */
        "cluster list",
        "cluster show p4d.24xlarge --json",
        "version",
        "version --json",
        "cost --model gpt-1.3b --cluster p4d.24xlarge --depth 1",
        "sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 8 --pp 1 "
        "--microbatches 4 --mbs 1",
        "sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 8 --pp 1 "
        "--microbatches 4 --mbs 1 --json",
        "plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 --global-batch 8 --top 2",
        "model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 --vocab 100 -o -",
        "--help",
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        char args[400];
        snprintf(args, sizeof args, "%s >/dev/full", cases[i]);
        expect(d, 3, "stagecraft: stdout: write error: No space left on device", args);
    }
    /* a command that printed nothing has nothing to lose */
    expect(d, 2, "no-such.json", "model show no-such.json --json >/dev/full");
    CHECK(!strstr(out, "stdout"));
}

/* Out of memory under a virtual-memory limit exits 1 at once: OpenBLAS's
 * destructor used to join a worker thread left retrying its buffer's
 * allocation, so the command reported the error and then hung (timeout 60
 * turns a hang into 124). The sanitizer build reserves more address space
 * than the limit allows, so it does not run this case.
 *
 * The limit is found, not fixed: the address space a command needs just to
 * start depends on the build (about 200 MB without MPI, about 1.1 GB with
 * Open MPI's libraries here), so a fixed 1 GB was enough to load the model
 * in one and not even to start in the other. The scan lowers the limit in
 * steps (200 MB, then 20 MB) until `version` no longer starts (below its
 * start-up need OpenBLAS may spin in its constructor, hence the timeout,
 * generous so that a loaded machine does not end the scan early), then gives
 * the command 20-40 MB above that: it starts, and the 11 MB model, which
 * needs about 90 MB to load, does not fit. */
TEST(exit_out_of_memory_is_1_and_exits)
{
    const char *san = getenv("SC_SAN");
    if (san && !strcmp(san, "1")) {
        sc_test_skip("the sanitizer build cannot start under ulimit -v");
        return;
    }
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s model gen gpt --layers 3000 --hidden 64 --heads 2 --seq 16 --vocab 100 "
               "-o %s/big.json",
               sc_test_bin(), d) == 0);
    REQUIRE(SC("b=%s; top=8000000; "
               "for l in $(seq $top -200000 200000); do "
               "(ulimit -v $l; timeout 3 $b version >/dev/null 2>&1) || break; top=$l; done; "
               "for l in $(seq $top -20000 20000); do "
               "(ulimit -v $l; timeout 3 $b version >/dev/null 2>&1) || "
               "{ echo $((l + 20000)); exit 0; }; done; echo 0",
               sc_test_bin()) == 0);
    long start_kb = strtol(out, NULL, 10);
    REQUIRE(start_kb > 20000);
    int rc = SC("ulimit -v %ld; timeout 60 %s model show %s/big.json > /dev/null",
                start_kb + 20000, sc_test_bin(), d);
    CHECK_EQ_INT(rc, 1);
    CHECK_STR_HAS(out, "out of memory");
    CHECK_STR_HAS(out, "big.json");
}
