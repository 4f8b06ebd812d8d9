/* plot.h - pictures of stagecraft data drawn with gnuplot: the timeline of
 * one training step as a Gantt chart, and line charts (tune curves, what-if
 * studies).
 *
 * The chart: one row per rank (rank 0 at the top, "rank N" on the y axis),
 * time in milliseconds on the x axis, one box per op coloured by its kind
 * (a fixed palette, sc_plot_kind_color) with a legend naming the kinds
 * present. When the timeline has comm-stream ops, each row is split into an
 * upper sub-row for the compute stream and a thinner lower one for the comm
 * stream. Only the first max_rows ranks are drawn (64 by default); the title
 * then says how many were left out. Compute ops wide enough to hold it carry
 * their microbatch number.
 *
 * The gnuplot script is self-contained (the boxes are inline data blocks), so
 * a script saved with opts.script can be edited and rerun with
 * `gnuplot FILE.gp`; it picks pngcairo when that terminal exists, else png.
 *
 * Running gnuplot: the script goes into a fresh temporary directory
 * (mkdtemp under $TMPDIR or /tmp), gnuplot runs with stdin and stdout on
 * /dev/null and its stderr captured there, drawing into a temporary file
 * beside the output; only when it exits 0 and produced a non-empty file is
 * that renamed over the output. On any failure nothing is written, the
 * temporary files are removed, and the error carries gnuplot's own message.
 * The temporary directory is always removed.
 *
 * Ownership: nothing here keeps a reference to its arguments; the caller
 * frees the buffer sc_plot_timeline_script fills with sc_buf_free.
 */
#ifndef SC_PLOT_H
#define SC_PLOT_H

#include "sc.h"
#include "timeline.h"

typedef enum sc_plot_format { SC_PLOT_PNG = 0, SC_PLOT_SVG = 1 } sc_plot_format;

#define SC_PLOT_MAX_ROWS 64
#define SC_PLOT_MAX_PIXELS 20000

typedef struct sc_plot_opts {
    const char *title;   /* NULL or "": "MODEL on CLUSTER: SOURCE timeline, step T ms" */
    int width, height;   /* pixels, 0 = default (1200 wide, height from the rows) */
    int max_rows;        /* 0 = SC_PLOT_MAX_ROWS */
    const char *script;  /* if set, also save the gnuplot script here (after success) */
    const char *gnuplot; /* program to run; NULL = "gnuplot" found on PATH */
} sc_plot_opts;

/* The output format named by path's extension (.png or .svg, any case), or
 * -1 for anything else. */
int sc_plot_format_of(const char *path);

/* "#rrggbb" of the box colour for an op kind (a fixed palette: forward blue,
 * backward green, weight gradient purple, recompute brown, sends and
 * receives orange/pink, tp allreduce red, dp collectives yellow/teal,
 * optimizer grey); "#000000" for an unknown kind. */
const char *sc_plot_kind_color(int kind);

/* Appends to *script the gnuplot script that draws t into out (whose
 * extension picks the terminal). o may be NULL (defaults). Fails with
 * SC_EINVAL for an unknown extension, an out-of-range size or a timeline
 * without ops, SC_ENOMEM if the buffer could not grow. O(ops). */
sc_status sc_plot_timeline_script(const sc_timeline *t, const char *out,
                                  const sc_plot_opts *o, sc_buf *script, sc_error *err);

/* Draws t into out (.png or .svg) with gnuplot, whole or not at all (see the
 * top of this file). Errors: SC_EINVAL as sc_plot_timeline_script;
 * SC_ENOTSUP "gnuplot not found (scripts/deps.sh installs gnuplot-nox)";
 * SC_EIO when gnuplot fails (its stderr in the message) or a file cannot be
 * written. */
sc_status sc_plot_timeline(const sc_timeline *t, const char *out, const sc_plot_opts *o,
                           sc_error *err);

/* A line chart: each series is a line with points (or points only), on the
 * left axis or the right one (y2); mark holds n_mark (x, y) pairs drawn as
 * large circles (a best point, a Pareto front); labels, when set, name each
 * point. */
typedef struct sc_plot_series {
    const char *title;
    const double *x, *y;
    int n;
    int y2, points_only;
    const double *mark;
    int n_mark;
    const char *mark_title;
    /* optional: n short texts drawn beside the points, in the series' colour
     * (a double quote in one becomes a single quote) */
    const char *const *labels;
} sc_plot_series;

typedef struct sc_plot_xy {
    const char *title, *xlabel, *ylabel, *y2label;
    int logx, logy;
    const sc_plot_series *series;
    int n_series;
} sc_plot_xy;

/* The script of a line chart (as sc_plot_timeline_script). */
sc_status sc_plot_lines_script(const sc_plot_xy *p, const char *out, const sc_plot_opts *o,
                               sc_buf *script, sc_error *err);
/* Draws a line chart into out (.png or .svg), whole or not at all, as
 * sc_plot_timeline. */
sc_status sc_plot_lines(const sc_plot_xy *p, const char *out, const sc_plot_opts *o,
                        sc_error *err);

#endif
