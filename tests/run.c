/* run.c - main() of the test runner, see check.h. */
#include "check.h"
#include "cluster.h"
#include "model.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const char *name;
    sc_test_fn fn;
} entry;

static entry tests[2048];
static int ntests, failed_now, skipped_now, skip_by_design;
static char skip_reason[512];
static char tmpdir[512], tmproot[256];
static const char *bin = "bin/stagecraft";

void sc_test_register(const char *name, sc_test_fn fn)
{
    if (ntests < (int)(sizeof tests / sizeof tests[0]))
        tests[ntests++] = (entry){name, fn};
}

void sc_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "    %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    failed_now++;
}

void sc_test_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(skip_reason, sizeof skip_reason, fmt, ap);
    va_end(ap);
    skipped_now = 1;
}

void sc_test_unavailable(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(skip_reason, sizeof skip_reason, fmt, ap);
    va_end(ap);
    skipped_now = 1;
    skip_by_design = 1;
}

int sc_test_long(void)
{
    if (getenv("SC_LONG"))
        return 1;
    sc_test_skip("a long check: make test-long");
    skip_by_design = 1;
    return 0;
}

int sc_test_failed_now(void) { return failed_now; }
const char *sc_test_bin(void) { return bin; }
const char *sc_test_tmpdir(void) { return tmpdir; }

struct sc_model *sc_test_small_gpt(const char *name)
{
    char out[4096], path[PATH_MAX];
    if (sc_test_sh(out, sizeof out,
                   "cd %s && %s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 32 "
                   "--vocab 256 --dtype fp32 -o %s",
                   tmpdir, sc_test_bin(), name) != 0) {
        sc_test_fail(__FILE__, __LINE__, "model gen: %.400s", out);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    sc_model *m = NULL;
    sc_error err;
    if (sc_model_open(path, &m, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    return m;
}

int sc_test_model_without_kernels(const char *model, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    sc_model *m = NULL;
    sc_error err = {0};
    sc_status st = sc_model_open(model, &m, &err);
    for (int i = 0; !st && i < m->n_leaves; i++)
        m->leaves[i]->n_kernels = 0;
    if (!st)
        st = sc_model_save(m, path, &err);
    sc_model_free(m);
    if (st)
        sc_test_fail(__FILE__, __LINE__, "%s without kernels: %s", model, err.msg);
    return !st;
}

int sc_test_cluster_round_trip(const sc_cluster *c, const char *name, sc_cluster *back)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    sc_error err = {0};
    if (sc_cluster_save(c, path, &err) != SC_OK || sc_cluster_load(path, back, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return 0;
    }
    return sc_cluster_equal(c, back);
}

int sc_test_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int sc_test_sh(char *out, size_t cap, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8400];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = 0;
    if (out && cap)
        out[0] = '\0';
    char tmp[4096];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out && n + 1 < cap) {
            size_t take = got < cap - 1 - n ? got : cap - 1 - n;
            memcpy(out + n, tmp, take);
            n += take;
            out[n] = '\0';
        }
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int matches(const char *name, const char *prefix)
{
    for (; *prefix; prefix++, name++) {
        char c = *prefix == '.' ? '_' : *prefix;
        if (*name != c)
            return 0;
    }
    return 1;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

int main(int argc, char **argv)
{
    int list = 0, first = 1;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: tests/run [--list] [--bin PATH] [PREFIX...]\n"
               "Runs the unit and CLI tests whose name starts with a PREFIX (all by default);\n"
               "a PREFIX that matches no test is an error (exit status 2).\n"
               "SC_NO_SKIP=1: a test that skips (other than a long check) fails instead.\n");
        return 0;
    }
    while (first < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "--list"))
            list = 1;
        else if (!strcmp(argv[first], "--bin") && first + 1 < argc)
            bin = argv[++first];
        else {
            fprintf(stderr, "tests/run: unknown option '%s' (try --help)\n", argv[first]);
            return 2;
        }
        first++;
    }
    if (getenv("SC_BIN"))
        bin = getenv("SC_BIN");
    /* by absolute path: many tests run commands in their own folder */
    static char abs_bin[PATH_MAX];
    if (realpath(bin, abs_bin))
        bin = abs_bin;
    const char *ns = getenv("SC_NO_SKIP");
    int no_skip = ns && *ns && strcmp(ns, "0") != 0;
    qsort(tests, (size_t)ntests, sizeof tests[0], cmp);
    /* every prefix must match a test: a typo is an error, not a pass */
    int unmatched = 0;
    for (int a = first; a < argc; a++) {
        int hit = 0;
        for (int i = 0; i < ntests && !hit; i++)
            hit = matches(tests[i].name, argv[a]);
        if (!hit) {
            fprintf(stderr, "tests/run: no test name starts with '%s' (tests/run --list lists them)\n",
                    argv[a]);
            unmatched++;
        }
    }
    if (unmatched)
        return 2;
    const char *t = getenv("TMPDIR");
    snprintf(tmproot, sizeof tmproot, "%s/sctest.XXXXXX", t ? t : "/tmp");
    if (!list && !mkdtemp(tmproot)) {
        perror("mkdtemp");
        return 2;
    }
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < ntests; i++) {
        int want = first >= argc;
        for (int a = first; a < argc && !want; a++)
            want = matches(tests[i].name, argv[a]);
        if (!want)
            continue;
        if (list) {
            printf("%s\n", tests[i].name);
            continue;
        }
        snprintf(tmpdir, sizeof tmpdir, "%s/%s", tmproot, tests[i].name);
        mkdir(tmpdir, 0755);
        failed_now = skipped_now = skip_by_design = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (skipped_now && !failed_now && no_skip && !skip_by_design) {
            fprintf(stderr, "    skipped, and SC_NO_SKIP=1 makes that a failure: %s\n",
                    skip_reason);
            failed_now = 1;
        }
        if (failed_now) {
            failed++;
            printf("FAIL %s (%.0f ms)\n", tests[i].name, ms);
        } else if (skipped_now) {
            skipped++;
            printf("skip %s: %s\n", tests[i].name, skip_reason);
        } else {
            passed++;
            printf("ok   %s (%.0f ms)\n", tests[i].name, ms);
        }
        fflush(stdout);
    }
    if (list)
        return 0;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmproot);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", tmproot);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
