/* cmd_plot.c - `stagecraft plot timeline`: pictures drawn by gnuplot. */
#include "cli.h"
#include "plot.h"
#include "timeline.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int is_help(const char *s) { return !strcmp(s, "--help") || !strcmp(s, "-h"); }

static void usage(FILE *f)
{
    fprintf(f, "usage: stagecraft plot timeline TIMELINE -o FILE.png|FILE.svg [--title T]\n"
               "                      [--width W] [--height H] [--script FILE.gp]\n\n"
               "Draws pictures with gnuplot (scripts/deps.sh installs gnuplot-nox).\n\n"
               "  timeline   one training step (stagecraft.timeline/1) as a Gantt chart:\n"
               "             a row per rank (rank 0 at the top; compute stream above, comm\n"
               "             stream below), time in ms, ops coloured by kind. At most %d\n"
               "             rows are drawn; the title says when ranks were left out.\n\n"
               "  -o, --output FILE   .png or .svg (the extension picks the format); written\n"
               "                      whole or not at all\n"
               "  --title T           the chart's title (default: model, cluster, step time)\n"
               "  --width W           width in pixels (default 1200)\n"
               "  --height H          height in pixels (default from the number of rows)\n"
               "  --script FILE       also save the gnuplot script (self-contained: edit it\n"
               "                      and rerun with 'gnuplot FILE')\n",
            SC_PLOT_MAX_ROWS);
}

static int plot_timeline(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"title", required_argument, NULL, 't'},
                                         {"width", required_argument, NULL, 'W'},
                                         {"height", required_argument, NULL, 'H'},
                                         {"script", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *cmd = "plot timeline";
    sc_plot_opts po = {0};
    const char *out = NULL;
    long v;
    int ch;
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
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage(cmd, "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage(cmd, "missing TIMELINE");
    const char *in = argv[optind++];
    if (optind < argc)
        return cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
    if (!out)
        return cli_usage(cmd, "missing -o FILE.png|FILE.svg");
    if (sc_plot_format_of(out) < 0)
        return cli_usage(cmd, "-o %s: unknown format (the name must end in .png or .svg)", out);

    sc_error err = {0};
    sc_timeline *t = NULL;
    if (sc_timeline_load(in, &t, &err))
        return cli_fail(&err);
    sc_status st = sc_plot_timeline(t, out, &po, &err);
    if (!st) {
        int rows = t->n_ranks < SC_PLOT_MAX_ROWS ? t->n_ranks : SC_PLOT_MAX_ROWS;
        fprintf(stderr, "wrote %s: %d of %d ranks%s%s\n", out, rows, t->n_ranks,
                po.script ? ", script " : "", po.script ? po.script : "");
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
        return plot_timeline(argc - 1, argv + 1);
    return cli_usage("plot", "unknown subcommand '%s' (timeline)", argv[1]);
}
