/* cmd_plot.c - `stagecraft plot timeline`: pictures drawn by gnuplot. */
#include "cli.h"
#include "cli_limits.h"
#include "cli_outputs.h"
#include "plot.h"
#include "timeline.h"
#include "tune.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int is_help(const char *s) { return !strcmp(s, "--help") || !strcmp(s, "-h"); }

static void usage(FILE *f)
{
    fprintf(f, "usage: stagecraft plot timeline TIMELINE -o FILE.png|FILE.svg [--title T]\n"
               "                      [--width W] [--height H] [--script FILE.gp]\n"
               "                      [--ranks LIST] [--stages LIST] [--max-mem SIZE]\n"
               "       stagecraft plot tune TUNE.json -o FILE.png|FILE.svg [same options]\n\n"
               "Draws pictures with gnuplot (scripts/deps.sh installs gnuplot-nox).\n\n"
               "  timeline   one training step (stagecraft.timeline/1) as a Gantt chart:\n"
               "             a row per rank (rank 0 at the top; compute stream above, comm\n"
               "             stream below), time in ms, ops coloured by kind. At most %d\n"
               "             rows are drawn; the title says when ranks were left out.\n"
               "  tune       a microbatch sweep (stagecraft tune -o TUNE.json): step time and\n"
               "             bubble fraction against the microbatch count, best point marked.\n\n"
               "  -o, --output FILE   .png or .svg (the extension picks the format); written\n"
               "                      whole or not at all\n"
               "  --title T           the chart's title (default: model, cluster, step time)\n"
               "  --width W           width in pixels (default 1200)\n"
               "  --height H          height in pixels (default from the number of rows)\n"
               "  --script FILE       also save the gnuplot script (self-contained: edit it\n"
               "                      and rerun with 'gnuplot FILE')\n"
               "  --ranks LIST        timeline: only these ranks, one row each (\"0-7,64\")\n"
               "  --stages LIST       timeline: only the ops of these stages (\"0,3-5\")\n"
               "  --max-mem SIZE      timeline: refuse one whose reading would need more\n"
               "                      (512M, 8G; default half the physical memory)\n",
            SC_PLOT_MAX_ROWS);
}

static int plot_tune_file(const char *in, const char *out, const sc_plot_opts *po)
{
    sc_error err = {0};
    sc_tune *t = NULL;
    if (sc_tune_load(in, &t, &err))
        return cli_fail(&err);
    double *x = sc_malloc(sizeof(double) * (size_t)t->n * 3);
    if (!x) {
        sc_tune_free(t);
        fprintf(stderr, "stagecraft: out of memory\n");
        return 1;
    }
    double *step = x + t->n, *bub = x + 2 * t->n;
    for (int i = 0; i < t->n; i++) {
        x[i] = t->pts[i].m;
        step[i] = 1e3 * t->pts[i].step_s;
        bub[i] = t->pts[i].bubble_fraction;
    }
    double mark[2] = {x[t->best], step[t->best]};
    char title[400], mt[64];
    snprintf(title, sizeof title, "%s on %d x %s: dp %d tp %d pp %d %s, global batch %ld",
             t->model, t->nodes, t->cluster, t->dp, t->tp, t->pp, t->schedule, t->global_batch);
    snprintf(mt, sizeof mt, "best: m = %d", t->pts[t->best].m);
    sc_plot_series ser[2] = {{.title = "step time (ms)", .x = x, .y = step, .n = t->n, .mark = mark,
                              .n_mark = 1, .mark_title = mt},
                             {.title = "bubble fraction", .x = x, .y = bub, .n = t->n, .y2 = 1}};
    sc_plot_xy xy = {title, "microbatches per step (m)", "step time (ms)", "bubble fraction",
                     1, 0, ser, 2};
    sc_status st = sc_plot_lines(&xy, out, po, &err);
    if (!st)
        fprintf(stderr, "wrote %s: %d points, best m = %d\n", out, t->n, t->pts[t->best].m);
    sc_free(x);
    sc_tune_free(t);
    return st ? cli_fail(&err) : 0;
}

static int plot_file(const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"title", required_argument, NULL, 't'},
                                         {"width", required_argument, NULL, 'W'},
                                         {"height", required_argument, NULL, 'H'},
                                         {"script", required_argument, NULL, 's'},
                                         {"ranks", required_argument, NULL, 'r'},
                                         {"stages", required_argument, NULL, 'S'},
                                         {"max-mem", required_argument, NULL, 'M'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    sc_plot_opts po = {0};
    sc_tl_filter flt;
    memset(&flt, 0, sizeof flt);
    int filtered = 0;
    double max_mem = 0;
    sc_error ferr = {0};
    const char *out = NULL;
    long v;
    int ch;
    if (cli_exact_longopts("plot", argc, argv, "ho:", opts))
        return 2;
    optind = 0; /* GNU: reinitialise; options and TIMELINE may come in any order */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 't':
            po.title = optarg;
            break;
        case 'W':
            if (cli_long(cmd, "--width", optarg, 100, SC_PLOT_MAX_PIXELS, &v))
                return 2;
            po.width = (int)v;
            break;
        case 'H':
            if (cli_long(cmd, "--height", optarg, 100, SC_PLOT_MAX_PIXELS, &v))
                return 2;
            po.height = (int)v;
            break;
        case 's':
            po.script = optarg;
            break;
        case 'r':
        case 'S':
            if (sc_tl_set_parse(optarg, ch == 'r' ? "--ranks" : "--stages",
                                ch == 'r' ? &flt.ranks : &flt.stages, &ferr))
                return cli_usage(cmd, "%s", ferr.msg);
            filtered = 1;
            break;
        case 'M':
            if (cli_parse_bytes(cmd, "--max-mem", optarg, &max_mem))
                return 2;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage(cmd, "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage(cmd, "missing the input file");
    const char *in = argv[optind++];
    if (optind < argc)
        return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
    if (!out)
        return cli_usage(cmd, "missing -o FILE.png|FILE.svg");
    if (sc_plot_format_of(out) < 0)
        return cli_usage(cmd, "-o %s: unknown format (the name must end in .png or .svg)", out);

    /* the picture and the script: both checked now, the script written under
     * a temporary name and renamed only once the picture is in place */
    sc_error err = {0};
    cli_outputs outs = {0};
    const char *script = po.script;
    if (cli_output_check(out, &err) || cli_outputs_add(&outs, script, &po.script, &err))
        return cli_fail(&err);
    sc_status st;
    if (filtered && !strcmp(cmd, "plot tune"))
        return cli_usage(cmd, "--ranks and --stages are for plot timeline");
    if (!strcmp(cmd, "plot tune")) {
        int rc = plot_tune_file(in, out, &po);
        st = cli_outputs_commit(&outs, rc ? SC_EINVAL : SC_OK, &err);
        return rc ? rc : st ? cli_fail(&err) : 0;
    }
    struct stat sb;
    double cap = cli_mem_cap(max_mem);
    if (stat(in, &sb) == 0 && S_ISREG(sb.st_mode) &&
        (double)sc_timeline_load_bytes((size_t)sb.st_size) > cap) {
        char b1[32], b2[32], b3[32];
        sc_err(&err, SC_EINVAL,
               "%s: %s needs about %s to read (a %s timeline), above the limit of %s "
               "(--max-mem)",
               cmd, in, cli_bytes((double)sc_timeline_load_bytes((size_t)sb.st_size), b1),
               cli_bytes((double)sb.st_size, b2), cli_bytes(cap, b3));
        return cli_outputs_commit(&outs, SC_EINVAL, NULL), cli_fail(&err);
    }
    sc_timeline *t = NULL;
    if (sc_timeline_load_filtered(in, filtered ? &flt : NULL, 1, &t, &err))
        return cli_outputs_commit(&outs, SC_EINVAL, NULL), cli_fail(&err);
    st = sc_plot_timeline(t, out, &po, &err);
    st = cli_outputs_commit(&outs, st, &err);
    if (!st) {
        int rows = t->n_ranks < SC_PLOT_MAX_ROWS ? t->n_ranks : SC_PLOT_MAX_ROWS;
        fprintf(stderr, "wrote %s: %d of %d ranks%s%s\n", out, rows, t->n_ranks,
                script ? ", script " : "", script ? script : "");
    }
    sc_timeline_free(t);
    return st ? cli_fail(&err) : 0;
}

int cmd_plot(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "timeline"))
        return plot_file("plot timeline", argc - 1, argv + 1);
    if (!strcmp(argv[1], "tune"))
        return plot_file("plot tune", argc - 1, argv + 1);
    return cli_usage("plot", "unknown subcommand '%s' (timeline, tune)", argv[1]);
}
