/* test_plot.c - the timeline Gantt chart (traces/plot.c) and the `trace` and
 * `plot timeline` commands. */
#include "check.h"
#include "json.h"
#include "plot.h"
#include "timeline.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Three ranks of a pipeline: forwards, a send/recv pair, backwards and the
 * optimizer. */
static sc_timeline *small_pipeline(void)
{
    sc_timeline *t = sc_timeline_new(3, "sim", "tiny", "cpu-local");
    if (!t)
        return NULL;
    for (int r = 0; r < 3; r++) {
        t->ranks[r].pp = r;
        t->ranks[r].node = r / 2;
        double off = r * 1.2e-3;
        for (int mb = 0; mb < 2; mb++) {
            sc_tl_op f = {SC_OP_F, r, 0, mb, SC_STREAM_COMPUTE, 0, off + mb * 1e-3,
                          off + (mb + 1) * 1e-3};
            sc_timeline_add(t, r, &f);
            sc_tl_op b = {SC_OP_B, r, 0, mb, SC_STREAM_COMPUTE, 0, 6e-3 + mb * 2e-3 - off,
                          6e-3 + (mb + 1) * 2e-3 - off};
            sc_timeline_add(t, r, &b);
        }
        if (r < 2) {
            sc_tl_op s = {SC_OP_SEND_F, r, 0, 0, SC_STREAM_COMM, 1 << 20, off + 1e-3,
                          off + 1.2e-3};
            sc_timeline_add(t, r, &s);
        }
        if (r > 0) {
            sc_tl_op v = {SC_OP_RECV_F, r, 0, 0, SC_STREAM_COMM, 1 << 20, off - 0.2e-3, off};
            sc_timeline_add(t, r, &v);
        }
        sc_tl_op o = {SC_OP_OPTIMIZER, r, -1, -1, SC_STREAM_COMPUTE, 0, 10.2e-3, 10.5e-3};
        sc_timeline_add(t, r, &o);
    }
    t->step_time_s = 10.5e-3;
    return t;
}

static int have_gnuplot(void)
{
    return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

/* 1 if dir holds a name containing ".tmp" (a leftover temporary file). */
static int has_tmp_leftover(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp"))
            found = 1;
    closedir(d);
    return found;
}

static char *slurp(const char *path, size_t *len)
{
    char *s = NULL;
    if (sc_read_file(path, 64 << 20, &s, len, NULL) != SC_OK)
        return NULL;
    return s;
}

static void save_small(const char *path)
{
    sc_timeline *t = small_pipeline();
    sc_error err = {0};
    if (!t || sc_timeline_save(t, path, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "cannot save %s: %s", path, err.msg);
    sc_timeline_free(t);
}

TEST(plot_format_of)
{
    CHECK_EQ_INT(sc_plot_format_of("a/gantt.png"), SC_PLOT_PNG);
    CHECK_EQ_INT(sc_plot_format_of("GANTT.PNG"), SC_PLOT_PNG);
    CHECK_EQ_INT(sc_plot_format_of("x.svg"), SC_PLOT_SVG);
    CHECK_EQ_INT(sc_plot_format_of("x.pdf"), -1);
    CHECK_EQ_INT(sc_plot_format_of("png"), -1);
    CHECK_EQ_INT(sc_plot_format_of("dir.png/file"), -1);
    CHECK_EQ_INT(sc_plot_format_of(NULL), -1);
    CHECK(strcmp(sc_plot_kind_color(SC_OP_F), sc_plot_kind_color(SC_OP_B)) != 0);
    CHECK(strcmp(sc_plot_kind_color(-1), "#000000") == 0);
}

TEST(plot_script)
{
    sc_timeline *t = small_pipeline();
    REQUIRE(t);
    sc_buf b = {0};
    sc_error err = {0};
    sc_plot_opts o = {.title = "it's a \"test\"", .width = 800, .height = 300};
    REQUIRE(sc_plot_timeline_script(t, "out/g.svg", &o, &b, &err) == SC_OK);
    CHECK_STR_HAS(b.s, "set terminal svg size 800,300");
    CHECK_STR_HAS(b.s, "set output 'out/g.svg'");
    CHECK_STR_HAS(b.s, "set title 'it''s a \"test\"'");
    CHECK_STR_HAS(b.s, "'rank 0' 0, 'rank 1' 1, 'rank 2' 2");
    CHECK_STR_HAS(b.s, "with boxxyerror");
    CHECK_STR_HAS(b.s, "title 'send_f'");
    CHECK_STR_HAS(b.s, "title 'optimizer'");
    CHECK_STR_HAS(b.s, "compute stream above, comm stream below");
    CHECK(!strstr(b.s, "title 'W'")); /* only the kinds present */
    sc_buf_free(&b);

    /* rows beyond max_rows are left out and the title says so */
    sc_buf c = {0};
    sc_plot_opts o2 = {.max_rows = 2};
    REQUIRE(sc_plot_timeline_script(t, "g.png", &o2, &c, &err) == SC_OK);
    CHECK_STR_HAS(c.s, "pngcairo");
    CHECK_STR_HAS(c.s, "tiny on cpu-local: sim timeline");
    CHECK_STR_HAS(c.s, "(first 2 of 3 ranks shown)");
    CHECK(!strstr(c.s, "'rank 2'"));
    sc_buf_free(&c);

    sc_buf d = {0};
    CHECK(sc_plot_timeline_script(t, "g.pdf", NULL, &d, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "g.pdf");
    sc_plot_opts o3 = {.width = 5};
    CHECK(sc_plot_timeline_script(t, "g.png", &o3, &d, &err) == SC_EINVAL);
    sc_buf_free(&d);
    sc_timeline_free(t);

    sc_timeline *e = sc_timeline_new(2, "sim", "", "");
    sc_buf f = {0};
    CHECK(sc_plot_timeline_script(e, "g.png", NULL, &f, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "nothing to plot");
    sc_buf_free(&f);
    sc_timeline_free(e);
}

TEST(plot_png_svg)
{
    if (!have_gnuplot()) {
        fprintf(stderr, "    (gnuplot not installed: checking the error only)\n");
        sc_timeline *t = small_pipeline();
        char p[600];
        snprintf(p, sizeof p, "%s/g.png", sc_test_tmpdir());
        sc_error err = {0};
        CHECK(sc_plot_timeline(t, p, NULL, &err) == SC_ENOTSUP);
        CHECK(!sc_test_exists(p));
        sc_timeline_free(t);
        return;
    }
    sc_timeline *t = small_pipeline();
    REQUIRE(t);
    const char *dir = sc_test_tmpdir();
    char png[600], svg[600], gp[600];
    snprintf(png, sizeof png, "%s/gantt.png", dir);
    snprintf(svg, sizeof svg, "%s/gantt.svg", dir);
    snprintf(gp, sizeof gp, "%s/gantt.gp", dir);
    sc_error err = {0};
    sc_plot_opts o = {.script = gp};
    REQUIRE(sc_plot_timeline(t, png, &o, &err) == SC_OK);
    size_t len = 0;
    char *s = slurp(png, &len);
    REQUIRE(s);
    CHECK(len > 1000);
    CHECK(len >= 8 && memcmp(s, "\x89PNG\r\n\x1a\n", 8) == 0);
    sc_free(s);
    /* the saved script is self-contained and names the real output */
    s = slurp(gp, NULL);
    REQUIRE(s);
    CHECK_STR_HAS(s, "$F << EOD");
    CHECK_STR_HAS(s, png);
    sc_free(s);

    REQUIRE(sc_plot_timeline(t, svg, NULL, &err) == SC_OK);
    s = slurp(svg, NULL);
    REQUIRE(s);
    CHECK_STR_HAS(s, "<svg");
    CHECK_STR_HAS(s, "rank 2");
    CHECK_STR_HAS(s, "<text>F</text>");
    CHECK_STR_HAS(s, "<text>B</text>");
    CHECK_STR_HAS(s, "<text>send_f</text>");
    CHECK_STR_HAS(s, "<text>recv_f</text>");
    CHECK_STR_HAS(s, "<text>optimizer</text>");
    sc_free(s);
    CHECK(!has_tmp_leftover(dir));
    sc_timeline_free(t);
}

TEST(plot_failures_write_nothing)
{
    sc_timeline *t = small_pipeline();
    REQUIRE(t);
    const char *dir = sc_test_tmpdir();
    char out[600], fake[600];
    sc_error err = {0};

    /* unknown extension */
    snprintf(out, sizeof out, "%s/gantt.pdf", dir);
    CHECK(sc_plot_timeline(t, out, NULL, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, ".png or .svg");
    CHECK(!sc_test_exists(out));

    /* gnuplot missing */
    snprintf(out, sizeof out, "%s/gantt.png", dir);
    sc_plot_opts o = {.gnuplot = "/nonexistent/gnuplot"};
    CHECK(sc_plot_timeline(t, out, &o, &err) == SC_ENOTSUP);
    CHECK_STR_HAS(err.msg, "gnuplot not found (scripts/deps.sh installs gnuplot-nox)");
    CHECK(!sc_test_exists(out));

    /* gnuplot failing: its stderr is in the message, nothing is left */
    snprintf(fake, sizeof fake, "%s/fake-gnuplot", dir);
    static const char fake_sh[] = "#!/bin/sh\n"
                                  "out=$(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\" \"$1\")\n"
                                  "echo junk > \"$out\"\n"
                                  "echo 'line 7: boom' >&2\n"
                                  "exit 1\n";
    REQUIRE(sc_write_file_atomic(fake, fake_sh, sizeof fake_sh - 1, &err) == SC_OK);
    REQUIRE(chmod(fake, 0755) == 0);
    o.gnuplot = fake;
    char gp[600];
    snprintf(gp, sizeof gp, "%s/g.gp", dir);
    o.script = gp;
    CHECK(sc_plot_timeline(t, out, &o, &err) == SC_EIO);
    CHECK_STR_HAS(err.msg, "gnuplot failed (exit 1)");
    CHECK_STR_HAS(err.msg, "line 7: boom");
    CHECK(!sc_test_exists(out));
    CHECK(!sc_test_exists(gp));
    CHECK(!has_tmp_leftover(dir));
    sc_timeline_free(t);
}

TEST(plot_cli_trace)
{
    const char *dir = sc_test_tmpdir(), *bin = sc_test_bin();
    char tl[600], out[8192], path[700];
    snprintf(tl, sizeof tl, "%s/t.json", dir);
    save_small(tl);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s trace --help", bin), 0);
    CHECK_STR_HAS(out, "usage: stagecraft trace");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s trace %s -o %s/chrome.json", bin, tl, dir), 0);
    snprintf(path, sizeof path, "%s/chrome.json", dir);
    cJSON *j = NULL;
    sc_error err = {0};
    REQUIRE(sc_json_load(path, &j, &err) == SC_OK);
    const cJSON *ev = cJSON_GetObjectItem(j, "traceEvents");
    CHECK(cJSON_IsArray(ev));
    int x = 0;
    for (const cJSON *e = ev ? ev->child : NULL; e; e = e->next)
        x += !strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X");
    CHECK_EQ_INT(x, 19); /* 3 x (2 F + 2 B + optimizer) + 2 sends + 2 recvs */
    cJSON_Delete(j);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s trace %s", bin, tl), 2); /* no -o */
    CHECK_STR_HAS(out, "missing -o");
}

TEST(plot_cli_plot)
{
    const char *dir = sc_test_tmpdir(), *bin = sc_test_bin();
    char tl[600], out[8192], path[700];
    snprintf(tl, sizeof tl, "%s/t.json", dir);
    save_small(tl);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s plot --help", bin), 0);
    CHECK_STR_HAS(out, "plot timeline TIMELINE");
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s plot timeline %s -o %s/g.pdf", bin, tl, dir), 2);
    CHECK_STR_HAS(out, "unknown format");
    snprintf(path, sizeof path, "%s/g.pdf", dir);
    CHECK(!sc_test_exists(path));
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s plot timeline %s -o %s/g.png --width 5", bin,
                            tl, dir), 2);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s plot gantt", bin), 2);
    if (!have_gnuplot())
        return;
    CHECK_EQ_INT(sc_test_sh(out, sizeof out,
                            "%s plot timeline %s -o %s/g.png --title 'three ranks' --width 900 "
                            "--height 400 --script %s/g.gp",
                            bin, tl, dir, dir),
                 0);
    snprintf(path, sizeof path, "%s/g.png", dir);
    size_t len = 0;
    char *s = slurp(path, &len);
    REQUIRE(s);
    CHECK(len >= 8 && memcmp(s, "\x89PNG\r\n\x1a\n", 8) == 0);
    sc_free(s);
    snprintf(path, sizeof path, "%s/g.gp", dir);
    s = slurp(path, NULL);
    REQUIRE(s);
    CHECK_STR_HAS(s, "size 900,400");
    CHECK_STR_HAS(s, "set title 'three ranks'");
    sc_free(s);
    /* the saved script reruns as it is */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "cd %s && rm g.png && gnuplot g.gp && test -s g.png",
                            dir),
                 0);
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s plot timeline %s -o %s/g.svg", bin, tl, dir), 0);
    snprintf(path, sizeof path, "%s/g.svg", dir);
    s = slurp(path, NULL);
    REQUIRE(s);
    CHECK_STR_HAS(s, "<svg");
    sc_free(s);
}

TEST(plot_cli_bad_timeline)
{
    const char *dir = sc_test_tmpdir(), *bin = sc_test_bin();
    char bad[600], out[8192], path[700];
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    static const char text[] =
        "{\"format\": \"stagecraft.timeline/1\", \"source\": \"sim\", \"step_time_s\": 1,\n"
        " \"ranks\": [{\"rank\": 0, \"node\": 0, \"device\": 0, \"dp\": 0, \"pp\": 0, \"tp\": 0,\n"
        "   \"ops\": [{\"kind\": \"F\", \"stage\": 0, \"chunk\": 0, \"mb\": 0, \"bytes\": 0,\n"
        "             \"stream\": \"compute\", \"start\": 2, \"end\": 1}]}]}\n";
    sc_error err = {0};
    REQUIRE(sc_write_file_atomic(bad, text, sizeof text - 1, &err) == SC_OK);

    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s trace %s -o %s/c.json", bin, bad, dir), 2);
    CHECK_STR_HAS(out, bad);
    CHECK_STR_HAS(out, "ranks[0].ops[0].end");
    snprintf(path, sizeof path, "%s/c.json", dir);
    CHECK(!sc_test_exists(path));

    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s plot timeline %s -o %s/g.png --script %s/g.gp",
                            bin, bad, dir, dir),
                 2);
    CHECK_STR_HAS(out, bad);
    CHECK_STR_HAS(out, "ranks[0].ops[0].end");
    snprintf(path, sizeof path, "%s/g.png", dir);
    CHECK(!sc_test_exists(path));
    snprintf(path, sizeof path, "%s/g.gp", dir);
    CHECK(!sc_test_exists(path));

    /* a missing file too */
    CHECK_EQ_INT(sc_test_sh(out, sizeof out, "%s trace %s/nope.json -o %s/c.json", bin, dir, dir),
                 2);
    CHECK_STR_HAS(out, "nope.json");
    CHECK(!has_tmp_leftover(dir));
}

TEST(plot_oom)
{
    sc_timeline *t = small_pipeline();
    REQUIRE(t);
    char out[600];
    snprintf(out, sizeof out, "%s/g.svg", sc_test_tmpdir());
    sc_error err = {0};
    /* "true" as gnuplot writes nothing: past the allocations the call fails
     * with SC_EIO, before them with SC_ENOMEM, and never leaves a file */
    sc_plot_opts o = {.gnuplot = "true"};
    int failures = 0, reached = 0;
    for (long k = 1; k < 200; k++) {
        sc_alloc_fail_at(k);
        sc_status st = sc_plot_timeline(t, out, &o, &err);
        sc_alloc_fail_at(0);
        CHECK(!sc_test_exists(out));
        if (st == SC_EIO) {
            CHECK_STR_HAS(err.msg, "gnuplot wrote nothing");
            reached = 1;
            break;
        }
        CHECK_EQ_INT(st, SC_ENOMEM);
        failures++;
    }
    CHECK(reached);
    CHECK(failures >= 3);
    CHECK(!has_tmp_leftover(sc_test_tmpdir()));
    sc_timeline_free(t);
}
