/* test_runner.c - the test runner itself (tests/run.c): a filter that
 * matches no test is an error, SC_NO_SKIP=1 turns a skip into a failure
 * (but not a long check's), and `make golden-update`'s filter names the
 * golden test. Each check runs this very runner (/proc/self/exe) again with
 * SC_RUNNER_SELFTEST set, which makes runner_self_skip skip instead of
 * checking. */
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static char out[1 << 14];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

static int self(char *exe, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", exe, cap - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    return 1;
}

TEST(runner_self_skip)
{
    const char *mode = getenv("SC_RUNNER_SELFTEST");
    if (mode && !strcmp(mode, "skip")) {
        sc_test_skip("the runner's self-test");
        return;
    }
    if (mode && !strcmp(mode, "long")) {
        if (sc_test_long())
            sc_test_fail(__FILE__, __LINE__, "SC_LONG is set in the self-test");
        return;
    }
    char exe[4096];
    REQUIRE(self(exe, sizeof exe));
    const char *env = "env -u SC_NO_SKIP -u SC_LONG SC_RUNNER_SELFTEST";

    /* a plain skip is a skip, exit 0 */
    CHECK_EQ_INT(SC("%s=skip %s runner_self_skip", env, exe), 0);
    CHECK_STR_HAS(out, "skip runner_self_skip: the runner's self-test");
    CHECK_STR_HAS(out, "0 passed, 0 failed, 1 skipped");
    /* SC_NO_SKIP=1: the same skip fails, with the reason */
    CHECK_EQ_INT(SC("%s=skip SC_NO_SKIP=1 %s runner_self_skip", env, exe), 1);
    CHECK_STR_HAS(out, "SC_NO_SKIP=1 makes that a failure: the runner's self-test");
    CHECK_STR_HAS(out, "FAIL runner_self_skip");
    CHECK_STR_HAS(out, "0 passed, 1 failed, 0 skipped");
    /* SC_NO_SKIP=0 is off */
    CHECK_EQ_INT(SC("%s=skip SC_NO_SKIP=0 %s runner_self_skip", env, exe), 0);
    /* a long check outside test-long stays a skip even with SC_NO_SKIP=1 */
    CHECK_EQ_INT(SC("%s=long SC_NO_SKIP=1 %s runner_self_skip", env, exe), 0);
    CHECK_STR_HAS(out, "skip runner_self_skip: a long check: make test-long");
    CHECK_STR_HAS(out, "0 passed, 0 failed, 1 skipped");
}

TEST(runner_unmatched_filter_is_an_error)
{
    char exe[4096];
    REQUIRE(self(exe, sizeof exe));
    CHECK_EQ_INT(SC("%s no_such_test_xyz", exe), 2);
    CHECK_STR_HAS(out, "tests/run: no test name starts with 'no_such_test_xyz'");
    CHECK(!strstr(out, "passed"));
    /* one typo among good prefixes is still an error, and nothing runs */
    CHECK_EQ_INT(SC("%s runner_unmatched no_such_test_xyz", exe), 2);
    CHECK(!strstr(out, "ok   runner_unmatched"));
    CHECK_EQ_INT(SC("%s --list no_such_test_xyz", exe), 2);
    CHECK_EQ_INT(SC("%s --no-such-option", exe), 2);
    CHECK_STR_HAS(out, "unknown option");
    /* a '.' in a prefix still matches the '_' after the module */
    CHECK_EQ_INT(SC("%s --list runner.unmatched", exe), 0);
    CHECK_STR_HAS(out, "runner_unmatched_filter_is_an_error");
}

/* `make golden-update` runs the runner with a filter: it must select the
 * golden test (it once said "golden", which matched nothing, so the target
 * rewrote nothing and exited 0). */
TEST(runner_golden_update_filter)
{
    char exe[4096];
    REQUIRE(self(exe, sizeof exe));
    REQUIRE(SC("sed -n 's/.*SC_GOLDEN_UPDATE=1 $(TESTRUN) *//p' Makefile") == 0);
    char filter[256];
    REQUIRE(sscanf(out, "%255[^\n]", filter) == 1);
    CHECK_EQ_INT(SC("%s --list %s", exe, filter), 0);
    CHECK_STR_HAS(out, "step_golden_timelines");
}
