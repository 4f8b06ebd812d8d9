/* plot.c - see plot.h. */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* One colour per op kind, in sc_op_kind order. Tableau-10 hues, chosen so
 * that related kinds share a family: the two p2p directions are orange
 * (activations) and pink (gradients), sends darker than receives; the dp
 * collectives are yellows and teal; tp collectives are reds. */
static const char *const palette[SC_OP_KIND_N] = {
    "#4e79a7", /* F                blue */
    "#59a14f", /* B                green */
    "#b07aa1", /* W                purple */
    "#9c755f", /* recompute        brown */
    "#f28e2b", /* send_f           orange */
    "#ffbe7d", /* recv_f           light orange */
    "#d37295", /* send_b           pink */
    "#fabfd2", /* recv_b           light pink */
    "#e15759", /* tp_allreduce     red */
    "#edc948", /* dp_allreduce     yellow */
    "#b6992d", /* dp_reducescatter olive */
    "#76b7b2", /* dp_allgather     teal */
    "#79706e", /* optimizer        grey */
    "#ff9d9a", /* tp_reducescatter light red */
    "#a8323e", /* tp_allgather     dark red */
    "#8cd17d", /* cp_exchange      light green */
};

const char *sc_plot_kind_color(int kind)
{
    return kind >= 0 && kind < SC_OP_KIND_N ? palette[kind] : "#000000";
}

int sc_plot_format_of(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot || strchr(dot, '/'))
        return -1;
    if (!strcasecmp(dot, ".png"))
        return SC_PLOT_PNG;
    if (!strcasecmp(dot, ".svg"))
        return SC_PLOT_SVG;
    return -1;
}

/* A gnuplot single-quoted string: a quote is doubled, a backslash is
 * literal; control characters (a newline would end the command) become
 * spaces. */
static void put_quoted(sc_buf *b, const char *s)
{
    sc_buf_printf(b, "'");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'')
            sc_buf_printf(b, "''");
        else if (c < 0x20 || c == 0x7f)
            sc_buf_printf(b, " ");
        else
            sc_buf_printf(b, "%c", c);
    }
    sc_buf_printf(b, "'");
}

/* The terminal for fmt at width x height, drawing into output_path. */
static void put_terminal(sc_buf *b, int fmt, int width, int height, const char *output_path)
{
    if (fmt == SC_PLOT_PNG) {
        sc_buf_printf(b,
                      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                      "    set terminal pngcairo size %d,%d noenhanced font 'sans,10'\n"
                      "} else {\n"
                      "    set terminal png size %d,%d noenhanced\n"
                      "}\n",
                      width, height, width, height);
    } else {
        sc_buf_printf(b,
                      "set terminal svg size %d,%d noenhanced font 'sans,10' "
                      "background rgb 'white'\n",
                      width, height);
    }
    sc_buf_printf(b, "set output ");
    put_quoted(b, output_path);
    sc_buf_printf(b, "\n");
}

static int is_compute_kind(int k)
{
    return k == SC_OP_F || k == SC_OP_B || k == SC_OP_W || k == SC_OP_RECOMPUTE;
}

/* The script drawing into output_path, in the format out's extension names;
 * messages name out. */
static sc_status build_script(const sc_timeline *t, const char *out, const char *output_path,
                              const sc_plot_opts *o, sc_buf *b, sc_error *err)
{
    int fmt = sc_plot_format_of(out);
    if (fmt < 0)
        return sc_err(err, SC_EINVAL, "%s: unknown plot format (the name must end in .png or .svg)",
                      out);
    if ((o->width && (o->width < 100 || o->width > SC_PLOT_MAX_PIXELS)) ||
        (o->height && (o->height < 100 || o->height > SC_PLOT_MAX_PIXELS)))
        return sc_err(err, SC_EINVAL, "%s: plot size %dx%d out of range [100, %d]", out, o->width,
                      o->height, SC_PLOT_MAX_PIXELS);
    if (o->max_rows < 0)
        return sc_err(err, SC_EINVAL, "%s: max_rows %d is negative", out, o->max_rows);
    if (t->oom)
        return sc_err(err, SC_ENOMEM, "%s: the timeline is incomplete (out of memory)", out);
    int max_rows = o->max_rows ? o->max_rows : SC_PLOT_MAX_ROWS;
    int rows = t->n_ranks < max_rows ? t->n_ranks : max_rows;

    /* What is there to draw: the time span, the kinds present, any comm. */
    double xmax = t->step_time_s;
    int present[SC_OP_KIND_N] = {0}, has_comm = 0;
    long n_ops = 0;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < t->ranks[r].n_ops; i++) {
            const sc_tl_op *op = &t->ranks[r].ops[i];
            if (op->kind < 0 || op->kind >= SC_OP_KIND_N)
                continue;
            present[op->kind] = 1;
            has_comm |= op->stream == SC_STREAM_COMM;
            if (op->end > xmax)
                xmax = op->end;
            n_ops++;
        }
    if (n_ops == 0)
        return sc_err(err, SC_EINVAL, "%s: nothing to plot: the timeline has no ops", out);
    xmax *= 1e3; /* ms */
    if (!(xmax > 0))
        xmax = 1;

    int width = o->width ? o->width : 1200;
    int height = o->height;
    if (!height) {
        height = 170 + rows * (rows <= 16 ? 40 : 24);
        if (height > SC_PLOT_MAX_PIXELS)
            height = SC_PLOT_MAX_PIXELS;
    }

    /* Sub-rows, in row units (the y axis is reversed: negative is up). */
    double yc_compute = has_comm ? -0.12 : 0, dy_compute = has_comm ? 0.27 : 0.38;
    double yc_comm = 0.28, dy_comm = 0.11;

    sc_buf_printf(b, "# stagecraft plot timeline: %d of %d ranks, %ld ops\n", rows, t->n_ranks,
                  n_ops);
    sc_buf_printf(b, "# self-contained: edit and rerun with `gnuplot THIS_FILE`\n");
    put_terminal(b, fmt, width, height, output_path);

    char title[512];
    if (o->title && o->title[0])
        snprintf(title, sizeof title, "%s", o->title);
    else
        snprintf(title, sizeof title, "%s%s%s: %s timeline, step %.4g ms",
                 t->model[0] ? t->model : "timeline", t->cluster[0] ? " on " : "", t->cluster,
                 t->source, t->step_time_s * 1e3);
    if (rows < t->n_ranks) {
        size_t l = strlen(title);
        snprintf(title + l, sizeof title - l, " (first %d of %d ranks shown)", rows, t->n_ranks);
    }
    sc_buf_printf(b, "set title ");
    put_quoted(b, title);
    sc_buf_printf(b, "\nset xlabel '%s'\n",
                  has_comm ? "time (ms)    [each rank: compute stream above, comm stream below]"
                           : "time (ms)");
    sc_buf_printf(b, "set xrange [0:%.9g]\n", xmax);
    sc_buf_printf(b, "set yrange [%.2f:-0.5]\n", rows - 0.5);
    sc_buf_printf(b, "set xtics out nomirror\nset mxtics\n");
    sc_buf_printf(b, "set ytics scale 0 nomirror (");
    for (int r = 0; r < rows; r++)
        sc_buf_printf(b, "%s'rank %d' %d", r ? ", " : "", t->ranks[r].rank, r);
    sc_buf_printf(b, ")\n");
    sc_buf_printf(b, "set grid xtics lc rgb '#d8d8d8' lw 1\n");
    sc_buf_printf(b, "set border 3 lc rgb '#404040'\n");
    sc_buf_printf(b, "set key outside below center horizontal reverse Left samplen 1.5 "
                     "width 1 spacing 1.2\n");
    sc_buf_printf(b, "set lmargin 10\n");

    /* One data block per kind: x_center y_center x_half y_half (ms, rows). */
    double plot_px = width - 140.0; /* roughly the plot area's width */
    int n_labels = 0;
    for (int k = 0; k < SC_OP_KIND_N; k++) {
        if (!present[k])
            continue;
        sc_buf_printf(b, "$%s << EOD\n", sc_op_kind_name((sc_op_kind)k));
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < t->ranks[r].n_ops; i++) {
                const sc_tl_op *op = &t->ranks[r].ops[i];
                if (op->kind != k)
                    continue;
                int comm = op->stream == SC_STREAM_COMM;
                double s = op->start * 1e3, e = op->end * 1e3;
                sc_buf_printf(b, "%.9g %.4f %.9g %.4f\n", (s + e) / 2,
                              r + (comm ? yc_comm : yc_compute), (e - s) / 2,
                              comm ? dy_comm : dy_compute);
                if (!comm && op->mb >= 0 && is_compute_kind(k)) {
                    int digits = snprintf(NULL, 0, "%d", op->mb);
                    if ((e - s) / xmax * plot_px >= 7.0 * digits + 6)
                        n_labels++;
                }
            }
        sc_buf_printf(b, "EOD\n");
    }
    if (n_labels) {
        sc_buf_printf(b, "$labels << EOD\n");
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < t->ranks[r].n_ops; i++) {
                const sc_tl_op *op = &t->ranks[r].ops[i];
                double s = op->start * 1e3, e = op->end * 1e3;
                if (op->stream == SC_STREAM_COMM || op->mb < 0 || !is_compute_kind(op->kind))
                    continue;
                int digits = snprintf(NULL, 0, "%d", op->mb);
                if ((e - s) / xmax * plot_px >= 7.0 * digits + 6)
                    sc_buf_printf(b, "%.9g %.4f \"%d\"\n", (s + e) / 2, r + yc_compute, op->mb);
            }
        sc_buf_printf(b, "EOD\n");
    }

    sc_buf_printf(b, "plot ");
    int first = 1;
    for (int k = 0; k < SC_OP_KIND_N; k++) {
        if (!present[k])
            continue;
        const char *name = sc_op_kind_name((sc_op_kind)k);
        /* the border is a darker shade of the fill: it parts adjacent ops
         * of one kind, and ops a pixel wide keep their hue */
        unsigned rgb = (unsigned)strtoul(palette[k] + 1, NULL, 16);
        unsigned dark = (((rgb >> 16) & 0xff) * 6 / 10) << 16 | (((rgb >> 8) & 0xff) * 6 / 10) << 8 |
                        ((rgb & 0xff) * 6 / 10);
        sc_buf_printf(b,
                      "%s$%s using 1:2:3:4 with boxxyerror fs solid 1.0 border lc rgb '#%06x' "
                      "lc rgb '%s' title '%s'",
                      first ? "" : ", \\\n     ", name, dark, palette[k], name);
        first = 0;
    }
    if (n_labels)
        sc_buf_printf(b, ", \\\n     $labels using 1:2:3 with labels font ',8' tc rgb '#ffffff' "
                         "notitle");
    sc_buf_printf(b, "\nunset output\n");
    if (b->oom)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", out);
    return SC_OK;
}

sc_status sc_plot_timeline_script(const sc_timeline *t, const char *out,
                                  const sc_plot_opts *o, sc_buf *script, sc_error *err)
{
    static const sc_plot_opts defaults = {0};
    return build_script(t, out, out, o ? o : &defaults, script, err);
}

/* ---- running gnuplot ------------------------------------------------------ */

/* "a/b/c" + "x" -> "a/b/c/x"; NULL on OOM. */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = sc_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* gnuplot's stderr, trimmed to its last ~600 characters on one line. */
static void gnuplot_stderr(const char *path, char *out, size_t cap)
{
    char *s = NULL;
    size_t len = 0;
    out[0] = '\0';
    if (sc_read_file(path, 1 << 20, &s, &len, NULL) != SC_OK)
        return;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\n' || s[i] == '\r' || s[i] == '\t')
            s[i] = ' ';
    char *p = s;
    while (*p == ' ')
        p++;
    size_t l = strlen(p);
    while (l > 0 && p[l - 1] == ' ')
        p[--l] = '\0';
    /* collapse runs of spaces (gnuplot points at errors with a column of
     * spaces and a caret) */
    size_t w = 0;
    for (size_t i = 0; i < l; i++)
        if (!(p[i] == ' ' && w > 0 && p[w - 1] == ' '))
            p[w++] = p[i];
    p[w] = '\0';
    if (w > 600)
        snprintf(out, cap, "...%s", p + w - 600);
    else
        snprintf(out, cap, "%s", p);
    sc_free(s);
}

/* Runs `prog script` with stdin and stdout on /dev/null and stderr into
 * errlog; waits for it. Returns 0 and sets *status (a waitpid status), or an
 * errno value (ENOENT when the program is not found). The child reports a
 * failed exec through a close-on-exec pipe, so exec errors are told apart
 * from gnuplot's own exit codes. (fork + execvp rather than posix_spawnp:
 * the child's exec error comes back through the pipe.) */
static int spawn_wait(const char *prog, const char *script, const char *errlog, int *status)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return errno;
    char *argv[] = {(char *)prog, (char *)script, NULL};
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (pid == 0) { /* child: only async-signal-safe calls until exec */
        int in = open("/dev/null", O_RDONLY), out = open("/dev/null", O_WRONLY);
        int er = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = 0;
        if (in < 0 || out < 0 || er < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(er, 2) < 0)
            e = errno;
        if (!e) {
            execvp(prog, argv);
            e = errno;
        }
        ssize_t w = write(pfd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(pfd[1]);
    int child_errno = 0;
    ssize_t n;
    while ((n = read(pfd[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR)
        ;
    close(pfd[0]);
    if (n != (ssize_t)sizeof child_errno)
        child_errno = 0;
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return child_errno ? child_errno : errno;
    return child_errno;
}

/* Builds the script that draws ctx into output_path (messages name out). */
typedef sc_status (*build_fn)(const void *ctx, const char *out, const char *output_path,
                              const sc_plot_opts *o, sc_buf *b, sc_error *err);

static sc_status run_plot(build_fn build_script_of, const void *ctx, const char *out,
                          const sc_plot_opts *o, sc_error *err)
{
    const char *prog = o->gnuplot && o->gnuplot[0] ? o->gnuplot : "gnuplot";
    if (!out || !*out || !strcmp(out, "-"))
        return sc_err(err, SC_EINVAL, "%s: a plot needs a file name ending in .png or .svg",
                      out ? out : "(null)");

    sc_status st = SC_OK;
    sc_buf run = {0}, saved = {0};
    char *pic = NULL, *gp = NULL, *errlog = NULL, *data = NULL;
    char dir[512] = "";
    int slot_dir = -1, slot_pic = -1, slot_gp = -1, slot_err = -1;

    /* The script that is saved names the real output; the one that runs
     * draws into a private folder, so that a failed or interrupted gnuplot
     * never leaves a half-written picture under the real name. The picture
     * then reaches out through sc_write_file_atomic, like every file: a
     * regular file is replaced whole, a link followed, a device written
     * through. */
    if ((st = build_script_of(ctx, out, out, o, &saved, err)))
        goto done;
    const char *tmp_env = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sc-plot.XXXXXX", tmp_env && *tmp_env ? tmp_env : "/tmp");
    if (sc_tmp_create(dir, 1, &slot_dir) < 0) {
        st = sc_err(err, SC_EIO, "%s: cannot create a temporary directory: %s", dir,
                    strerror(errno));
        dir[0] = '\0';
        goto done;
    }
    /* the picture keeps out's extension: gnuplot's terminal follows it */
    const char *ext = strrchr(sc_basename(out), '.');
    char picname[32];
    snprintf(picname, sizeof picname, "picture%.8s", ext ? ext : "");
    pic = join(dir, picname);
    gp = join(dir, "plot.gp");
    errlog = join(dir, "gnuplot.err");
    if (!pic || !gp || !errlog) {
        st = sc_err(err, SC_ENOMEM, "%s: out of memory", out);
        goto done;
    }
    slot_pic = sc_tmp_register(pic, 0);
    slot_gp = sc_tmp_register(gp, 0);
    slot_err = sc_tmp_register(errlog, 0);
    if ((st = build_script_of(ctx, out, pic, o, &run, err)))
        goto done;
    if ((st = sc_write_file_atomic(gp, run.s, run.len, err)))
        goto done;

    int status = 0;
    int rc = spawn_wait(prog, gp, errlog, &status);
    if (rc == ENOENT || rc == EACCES || rc == ENOTDIR) {
        st = sc_err(err, SC_ENOTSUP, "%s: gnuplot not found (scripts/deps.sh installs gnuplot-nox)",
                    out);
        goto done;
    }
    if (rc) {
        st = sc_err(err, SC_EIO, "%s: cannot run %s: %s", out, prog, strerror(rc));
        goto done;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char msg[700];
        gnuplot_stderr(errlog, msg, sizeof msg);
        if (WIFSIGNALED(status))
            st = sc_err(err, SC_EIO, "%s: gnuplot killed by signal %d%s%s", out, WTERMSIG(status),
                        msg[0] ? ": " : "", msg);
        else
            st = sc_err(err, SC_EIO, "%s: gnuplot failed (exit %d)%s%s", out,
                        WEXITSTATUS(status), msg[0] ? ": " : "", msg);
        goto done;
    }
    struct stat sb;
    if (stat(pic, &sb) != 0 || sb.st_size == 0) {
        char msg[700];
        gnuplot_stderr(errlog, msg, sizeof msg);
        st = sc_err(err, SC_EIO, "%s: gnuplot wrote nothing%s%s", out, msg[0] ? ": " : "", msg);
        goto done;
    }
    size_t len = 0;
    if ((st = sc_read_file(pic, (size_t)1 << 30, &data, &len, err))) {
        sc_err_prefix(err, "%s: reading what gnuplot drew", out);
        goto done;
    }
    if (o->script && (st = sc_write_file_atomic(o->script, saved.s, saved.len, err)))
        goto done;
    st = sc_write_file_atomic(out, data, len, err);

done:
    if (pic)
        unlink(pic);
    if (gp)
        unlink(gp);
    if (errlog)
        unlink(errlog);
    if (dir[0])
        rmdir(dir);
    sc_tmp_unregister(slot_pic);
    sc_tmp_unregister(slot_gp);
    sc_tmp_unregister(slot_err);
    sc_tmp_unregister(slot_dir);
    sc_free(data);
    sc_free(pic);
    sc_free(gp);
    sc_free(errlog);
    sc_buf_free(&run);
    sc_buf_free(&saved);
    return st;
}

static sc_status timeline_builder(const void *ctx, const char *out, const char *output_path,
                                  const sc_plot_opts *o, sc_buf *b, sc_error *err)
{
    return build_script(ctx, out, output_path, o, b, err);
}

sc_status sc_plot_timeline(const sc_timeline *t, const char *out, const sc_plot_opts *o,
                           sc_error *err)
{
    static const sc_plot_opts defaults = {0};
    return run_plot(timeline_builder, t, out, o ? o : &defaults, err);
}

/* ---- line charts ---------------------------------------------------------- */

static sc_status lines_script(const void *ctx, const char *out, const char *output_path,
                              const sc_plot_opts *o, sc_buf *b, sc_error *err)
{
    const sc_plot_xy *p = ctx;
    int fmt = sc_plot_format_of(out);
    if (fmt < 0)
        return sc_err(err, SC_EINVAL, "%s: unknown plot format (the name must end in .png or .svg)",
                      out);
    if ((o->width && (o->width < 100 || o->width > SC_PLOT_MAX_PIXELS)) ||
        (o->height && (o->height < 100 || o->height > SC_PLOT_MAX_PIXELS)))
        return sc_err(err, SC_EINVAL, "%s: plot size %dx%d out of range [100, %d]", out, o->width,
                      o->height, SC_PLOT_MAX_PIXELS);
    int points = 0, y2 = 0;
    for (int i = 0; i < p->n_series; i++) {
        points += p->series[i].n;
        y2 |= p->series[i].y2;
    }
    if (points == 0)
        return sc_err(err, SC_EINVAL, "%s: nothing to plot: no points", out);
    sc_buf_printf(b, "# stagecraft line chart: %d series, %d points\n", p->n_series, points);
    sc_buf_printf(b, "# self-contained: edit and rerun with `gnuplot THIS_FILE`\n");
    put_terminal(b, fmt, o->width ? o->width : 1000, o->height ? o->height : 600, output_path);
    sc_buf_printf(b, "set title ");
    put_quoted(b, o->title && o->title[0] ? o->title : p->title ? p->title : "");
    sc_buf_printf(b, "\nset xlabel ");
    put_quoted(b, p->xlabel ? p->xlabel : "");
    sc_buf_printf(b, "\nset ylabel ");
    put_quoted(b, p->ylabel ? p->ylabel : "");
    sc_buf_printf(b, "\nset grid\nset key outside bottom center horizontal\n");
    if (p->logx)
        sc_buf_printf(b, "set logscale x 2\n");
    if (p->logy)
        sc_buf_printf(b, "set logscale y\n");
    if (y2) {
        sc_buf_printf(b, "set y2label ");
        put_quoted(b, p->y2label ? p->y2label : "");
        sc_buf_printf(b, "\nset y2tics\nset ytics nomirror\n");
    }
    for (int i = 0; i < p->n_series; i++) {
        const sc_plot_series *ser = &p->series[i];
        sc_buf_printf(b, "$s%d << EOD\n", i);
        for (int k = 0; k < ser->n; k++)
            if (isfinite(ser->x[k]) && isfinite(ser->y[k]))
                sc_buf_printf(b, "%.17g %.17g\n", ser->x[k], ser->y[k]);
        sc_buf_printf(b, "EOD\n");
        if (ser->mark && ser->n_mark > 0) {
            sc_buf_printf(b, "$m%d << EOD\n", i);
            for (int k = 0; k < ser->n_mark; k++)
                sc_buf_printf(b, "%.17g %.17g\n", ser->mark[2 * k], ser->mark[2 * k + 1]);
            sc_buf_printf(b, "EOD\n");
        }
        if (ser->labels) {
            sc_buf_printf(b, "$l%d << EOD\n", i);
            for (int k = 0; k < ser->n; k++) {
                if (!isfinite(ser->x[k]) || !isfinite(ser->y[k]) || !ser->labels[k])
                    continue;
                sc_buf_printf(b, "%.17g %.17g \"", ser->x[k], ser->y[k]);
                for (const char *q = ser->labels[k]; *q; q++)
                    sc_buf_printf(b, "%c", *q == '"' ? '\'' : (unsigned char)*q < ' ' ? ' ' : *q);
                sc_buf_printf(b, "\"\n");
            }
            sc_buf_printf(b, "EOD\n");
        }
    }
    sc_buf_printf(b, "plot ");
    for (int i = 0; i < p->n_series; i++) {
        const sc_plot_series *ser = &p->series[i];
        sc_buf_printf(b, "%s$s%d using 1:2 axes x1y%d with %s lw 2 pt 7 ps 0.8 lc rgb '%s' title ",
                      i ? ", \\\n     " : "", i, ser->y2 ? 2 : 1,
                      ser->points_only ? "points" : "linespoints", sc_plot_kind_color(i % SC_OP_KIND_N));
        put_quoted(b, ser->title ? ser->title : "");
        if (ser->mark && ser->n_mark > 0) {
            sc_buf_printf(b, ", \\\n     $m%d using 1:2 axes x1y%d with points pt 6 ps 2.5 lw 2 "
                             "lc rgb 'black' title ", i, ser->y2 ? 2 : 1);
            put_quoted(b, ser->mark_title ? ser->mark_title : "marked");
        }
        if (ser->labels)
            sc_buf_printf(b, ", \\\n     $l%d using 1:2:3 axes x1y%d with labels left offset "
                             "char 0.6,0.6 textcolor rgb '%s' notitle", i, ser->y2 ? 2 : 1,
                          sc_plot_kind_color(i % SC_OP_KIND_N));
    }
    sc_buf_printf(b, "\n");
    return b->oom ? sc_err(err, SC_ENOMEM, "%s: out of memory", out) : SC_OK;
}

sc_status sc_plot_lines_script(const sc_plot_xy *p, const char *out, const sc_plot_opts *o,
                               sc_buf *script, sc_error *err)
{
    static const sc_plot_opts defaults = {0};
    return lines_script(p, out, out, o ? o : &defaults, script, err);
}

sc_status sc_plot_lines(const sc_plot_xy *p, const char *out, const sc_plot_opts *o,
                        sc_error *err)
{
    static const sc_plot_opts defaults = {0};
    return run_plot(lines_script, p, out, o ? o : &defaults, err);
}
