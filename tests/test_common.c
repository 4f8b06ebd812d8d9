/* test_common.c - the helpers of common/ every layer shares: the median
 * (stats.h) and output folders (outdir.h). */
#include "check.h"
#include "outdir.h"
#include "sc.h"
#include "stats.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

TEST(common_median_odd_even_single_empty)
{
    double odd[] = {5, 1, 4, 2, 3};
    CHECK(sc_median(odd, 5) == 3);
    /* sorted in place, as documented */
    for (int i = 0; i < 5; i++)
        CHECK(odd[i] == i + 1);
    double even[] = {10, 2, 8, 4};
    CHECK(sc_median(even, 4) == 6); /* (4 + 8) / 2 */
    CHECK(even[0] == 2 && even[3] == 10);
    double two[] = {1e-9, 3e-9};
    CHECK(sc_median(two, 2) == (1e-9 + 3e-9) / 2);
    double one[] = {7.25};
    CHECK(sc_median(one, 1) == 7.25);
    double dup[] = {2, 2, 1, 2};
    CHECK(sc_median(dup, 4) == 2);
    double neg[] = {-3, -1, -2};
    CHECK(sc_median(neg, 3) == -2);
    CHECK(isnan(sc_median(NULL, 0)));
    double untouched[] = {3, 1};
    CHECK(isnan(sc_median(untouched, 0)));
    CHECK(untouched[0] == 3 && untouched[1] == 1);
}

static int is_dir(const char *path)
{
    DIR *d = opendir(path);
    if (d)
        closedir(d);
    return d != NULL;
}

static int write_text(const char *path, const char *text)
{
    return sc_write_file_atomic(path, text, strlen(text), NULL) == SC_OK;
}

/* what a file holds (at most 255 bytes), "" when it cannot be read */
static const char *read_text(const char *path)
{
    static char buf[256];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

TEST(common_mkdir_p_nested_existing_and_file_parent)
{
    const char *d = sc_test_tmpdir();
    char p[700], f[700];
    sc_error err = {0};
    /* nested: every missing level is made */
    snprintf(p, sizeof p, "%s/a/b/c", d);
    REQUIRE(sc_mkdir_p(p, &err) == SC_OK);
    CHECK(is_dir(p));
    /* existing: fine, twice; a trailing slash too */
    CHECK(sc_mkdir_p(p, &err) == SC_OK);
    snprintf(p, sizeof p, "%s/a/b/", d);
    CHECK(sc_mkdir_p(p, &err) == SC_OK);
    /* a parent that is a file: SC_EIO naming it, nothing made below */
    snprintf(f, sizeof f, "%s/a/file", d);
    REQUIRE(write_text(f, "x"));
    snprintf(p, sizeof p, "%s/a/file/sub/deeper", d);
    CHECK_EQ_INT(sc_mkdir_p(p, &err), SC_EIO);
    char want[800];
    snprintf(want, sizeof want, "%s: exists and is not a folder", f);
    CHECK_STR_HAS(err.msg, want);
    /* the path itself a file */
    CHECK_EQ_INT(sc_mkdir_p(f, &err), SC_EIO);
    CHECK_STR_HAS(err.msg, "exists and is not a folder");
    /* empty */
    CHECK_EQ_INT(sc_mkdir_p("", &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "empty folder name");
}

TEST(common_outdir_all_or_nothing)
{
    const char *d = sc_test_tmpdir();
    char dir[700], p[800];
    snprintf(dir, sizeof dir, "%s/out/set", d);
    sc_error err = {0};
    sc_outdir *od = NULL;
    const char *path;
    /* a set of two: both land, no staging folder left */
    REQUIRE(sc_outdir_open(dir, "t", &od, &err) == SC_OK);
    REQUIRE(sc_outdir_file(od, "one.txt", &path, &err) == SC_OK);
    REQUIRE(write_text(path, "one v1"));
    REQUIRE(sc_outdir_file(od, "two.txt", &path, &err) == SC_OK);
    REQUIRE(write_text(path, "two v1"));
    CHECK_EQ_INT(sc_outdir_file(od, "two.txt", &path, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "written twice");
    CHECK_EQ_INT(sc_outdir_file(od, "../x", &path, &err), SC_EINVAL);
    CHECK_EQ_INT(entries(dir), 1); /* only the staging folder so far */
    REQUIRE(sc_outdir_close(od, SC_OK, &err) == SC_OK);
    CHECK_EQ_INT(entries(dir), 2);
    snprintf(p, sizeof p, "%s/one.txt", dir);
    CHECK(!strcmp(read_text(p), "one v1"));
    /* a failed set (the caller's error) changes nothing and names dir, not
     * the staging folder */
    REQUIRE(sc_outdir_open(dir, "t", &od, &err) == SC_OK);
    REQUIRE(sc_outdir_file(od, "one.txt", &path, &err) == SC_OK);
    REQUIRE(write_text(path, "one v2"));
    REQUIRE(sc_outdir_file(od, "two.txt", &path, &err) == SC_OK);
    sc_status st = sc_err(&err, SC_EIO, "%s: cannot write: disk full", path);
    CHECK_EQ_INT(sc_outdir_close(od, st, &err), SC_EIO);
    snprintf(p, sizeof p, "%s/two.txt: cannot write", dir);
    CHECK_STR_HAS(err.msg, p);
    CHECK(!strstr(err.msg, ".t.tmp"));
    snprintf(p, sizeof p, "%s/one.txt", dir);
    CHECK(!strcmp(read_text(p), "one v1"));
    CHECK_EQ_INT(entries(dir), 2);
    /* a file added but never written: the commit refuses, nothing moves */
    REQUIRE(sc_outdir_open(dir, "t", &od, &err) == SC_OK);
    REQUIRE(sc_outdir_file(od, "one.txt", &path, &err) == SC_OK);
    REQUIRE(write_text(path, "one v3"));
    REQUIRE(sc_outdir_file(od, "three.txt", &path, &err) == SC_OK);
    CHECK_EQ_INT(sc_outdir_close(od, SC_OK, &err), SC_EIO);
    CHECK_STR_HAS(err.msg, "three.txt: was not written");
    CHECK(!strcmp(read_text(p), "one v1"));
    CHECK_EQ_INT(entries(dir), 2);
    /* a folder that cannot be made */
    snprintf(p, sizeof p, "%s/one.txt/sub", dir);
    CHECK_EQ_INT(sc_outdir_open(p, "t", &od, &err), SC_EIO);
    CHECK(od == NULL);
    CHECK_STR_HAS(err.msg, "exists and is not a folder");
    CHECK_EQ_INT(sc_outdir_close(NULL, SC_ENOMEM, &err), SC_ENOMEM);
}
