/* test_harden_fifo.c - inputs that name other inputs (a plan's model and
 * cluster sources, a measured timeline's plan.file) are opened only when they
 * are regular files: a FIFO there made `sim --plan` and `calibrate` wait
 * forever for a writer (found by scripts/hostile.sh's review, issue 15), and
 * /dev/zero or /dev/stdin read the terminal or up to the size limit. */
#include "check.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

TEST(fifo_plan_source_refused)
{
    const char *d = sc_test_tmpdir();
    char cwd[PATH_MAX];
    REQUIRE(getcwd(cwd, sizeof cwd));
    REQUIRE(SC("cd %s && mkdir -p good && cp %s/tests/corpus/plan/good/tiny.json "
               "%s/tests/corpus/plan/good/p4d.json good/ && mkfifo fifo && "
               "sed -e 's|\"source\": \"-\"|\"source\": \"fifo\"|' "
               "%s/tests/corpus/plan/source_stdin.json > pf.json && grep -q '\"fifo\"' pf.json",
               d, cwd, cwd, cwd) == 0);
    CHECK(SC("cd %s && timeout 20 %s sim --plan pf.json < /dev/null", d, sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "stagecraft: pf.json: model.source: fifo is not a regular file");
}

TEST(fifo_timeline_plan_file_refused)
{
    const char *d = sc_test_tmpdir();
    const char *b = sc_test_bin();
    REQUIRE(SC("cd %s && %s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 --vocab 100 "
               "--dtype fp32 -o t2.json && %s cluster show cpu-local --nodes 1 -o c1.json && "
               "%s sim --model t2.json --cluster c1.json --microbatches 1 -o p1.json && "
               "ASAN_OPTIONS=detect_leaks=0 %s exec p1.json --backend cpu --steps 2 --warmup 0 "
               "-o m1.json && mkfifo fifo && "
               "sed -e 's|\"file\":\t\"p1.json\"|\"file\":\t\"fifo\"|' m1.json > mf.json && "
               "grep -q '\"fifo\"' mf.json",
               d, b, b, b, b) == 0);
    CHECK(SC("cd %s && timeout 20 %s calibrate --cluster c1.json mf.json -o cal.json "
             "< /dev/null",
             d, b) == 2);
    CHECK_STR_HAS(out, "stagecraft: mf.json: plan.file: fifo is not a regular file");
    CHECK(SC("cd %s && test ! -e cal.json", d) == 0);
}
