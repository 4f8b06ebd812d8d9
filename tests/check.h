/* check.h - the tiny test runner. A test is
 *
 *     TEST(sim_bubble_1f1b) { CHECK(x == 3); CHECK_NEAR(a, b, 1e-9); }
 *
 * Tests register themselves at load time; `tests/run` runs all of them,
 * `tests/run PREFIX...` those whose name starts with a prefix (a '.' in a
 * prefix matches the '_' after the module name: sim.bubble == sim_bubble).
 * A PREFIX that matches no test is an error (exit status 2, nothing run), so
 * a typo never passes. The last line printed is "N passed, N failed, N
 * skipped"; the exit status is non-zero when anything failed. A failed CHECK
 * records file:line and the test goes on; REQUIRE stops the test.
 *
 * Skips: sc_test_skip marks a test that cannot run here (no mpirun, no
 * torch). With SC_NO_SKIP=1 in the environment (CI sets it on a machine that
 * has everything) such a skip is a failure. sc_test_skip_long marks a long
 * check outside `make test-long`: skipped by design, never a failure.
 */
#ifndef SC_CHECK_H
#define SC_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*sc_test_fn)(void);
void sc_test_register(const char *name, sc_test_fn fn);
void sc_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int sc_test_failed_now(void);
/* Absolute path of the stagecraft binary (as given when it does not exist)
 * and a fresh scratch directory for this test. */
const char *sc_test_bin(void);
const char *sc_test_tmpdir(void);
/* Runs a shell command, capturing stdout+stderr (at most cap-1 bytes) into
 * out; returns the exit status (or -1). */
int sc_test_sh(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks the running test skipped: it cannot run here (a missing tool, a
 * long check outside test-long), with the reason printed. A skipped test
 * counts as skipped, never as passed; a failure recorded in it still fails
 * it. The caller returns right after. */
void sc_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs the test only under `make test-long` (SC_LONG set): returns 1 there;
 * elsewhere marks the test skipped by design (even with SC_NO_SKIP=1) and
 * returns 0. */
int sc_test_long(void);
/* Marks the test skipped because it needs what no machine of this kind can
 * have from the project's own setup (a GPU; torch >= 2.4, which Debian does
 * not package): a skip even with SC_NO_SKIP=1, with the reason printed. */
void sc_test_unavailable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Returns 1 if the file exists. */
int sc_test_exists(const char *path);
/* A small fp32 GPT (2 layers, h 64, 2 heads, s 32, vocabulary 256) written by
 * `stagecraft model gen` to the test's scratch directory as name and opened;
 * NULL, with the failure recorded, when either step fails. Free with
 * sc_model_free. */
struct sc_model *sc_test_small_gpt(const char *name);
/* Opens model (a built-in name or a file), drops every leaf's kernel list
 * (the leaves' totals stay, as in a model file written without kernels) and
 * saves it to the test's scratch directory as name: 1 when that worked; 0,
 * with the failure recorded, otherwise. */
int sc_test_model_without_kernels(const char *model, const char *name);
/* Saves c to the test's scratch directory as name and loads it into *back:
 * 1 when both worked and *back equals c (sc_cluster_equal); 0, with the
 * failure recorded, otherwise. */
struct sc_cluster;
int sc_test_cluster_round_trip(const struct sc_cluster *c, const char *name,
                               struct sc_cluster *back);

#define TEST(name)                                                              \
    static void test_##name(void);                                              \
    __attribute__((constructor)) static void reg_##name(void)                   \
    {                                                                           \
        sc_test_register(#name, test_##name);                                   \
    }                                                                           \
    static void test_##name(void)

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond))                                                            \
            sc_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);               \
    } while (0)

#define REQUIRE(cond)                                                           \
    do {                                                                        \
        if (!(cond)) {                                                          \
            sc_test_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond);             \
            return;                                                             \
        }                                                                       \
    } while (0)

#define CHECK_NEAR(a, b, rel)                                                   \
    do {                                                                        \
        double a_ = (a), b_ = (b);                                              \
        double s_ = fabs(a_) > fabs(b_) ? fabs(a_) : fabs(b_);                  \
        if (!(fabs(a_ - b_) <= (rel) * (s_ > 0 ? s_ : 1)))                      \
            sc_test_fail(__FILE__, __LINE__, "CHECK_NEAR(%s, %s): %.17g vs %.17g", \
                         #a, #b, a_, b_);                                       \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                      \
    do {                                                                        \
        long long a_ = (long long)(a), b_ = (long long)(b);                     \
        if (a_ != b_)                                                           \
            sc_test_fail(__FILE__, __LINE__, "CHECK_EQ_INT(%s, %s): %lld vs %lld", \
                         #a, #b, a_, b_);                                       \
    } while (0)

#define CHECK_STR_HAS(hay, needle)                                              \
    do {                                                                        \
        const char *h_ = (hay), *n_ = (needle);                                 \
        if (!h_ || !strstr(h_, n_))                                             \
            sc_test_fail(__FILE__, __LINE__, "CHECK_STR_HAS: \"%s\" not in \"%.400s\"", \
                         n_, h_ ? h_ : "(null)");                               \
    } while (0)

#endif
