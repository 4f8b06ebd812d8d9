/* cmd_trace.c - `stagecraft trace TIMELINE -o FILE`: a timeline as Chrome
 * trace JSON (open it in https://ui.perfetto.dev or chrome://tracing). */
#include "cli.h"
#include "cli_outputs.h"
#include "json.h"
#include "timeline.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: stagecraft trace TIMELINE -o FILE\n\n"
               "Converts a timeline (stagecraft.timeline/1, from the simulator or the\n"
               "executor) into Chrome trace JSON: one process per node, one thread per\n"
               "rank and stream (compute, comm), one event per op. Open the result in\n"
               "https://ui.perfetto.dev or chrome://tracing.\n\n"
               "  -o, --output FILE   where to write the trace ('-' for standard output);\n"
               "                      written whole or not at all\n");
}

int cmd_trace(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL;
    int ch;
    optind = 0; /* GNU: reinitialise; options and TIMELINE may come in any order */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage("trace", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage("trace", "missing TIMELINE");
    const char *in = argv[optind++];
    if (optind < argc)
        return cli_usage("trace", "unexpected argument '%s'", argv[optind]);
    if (!out)
        return cli_usage("trace", "missing -o FILE");

    sc_error err = {0};
    if (cli_output_check(out, &err)) /* before reading anything */
        return cli_fail(&err);
    sc_timeline *t = NULL;
    if (sc_timeline_load(in, &t, &err))
        return cli_fail(&err);
    cJSON *c = sc_timeline_chrome(t);
    if (!c) {
        sc_timeline_free(t);
        sc_err(&err, SC_ENOMEM, "%s: out of memory", in);
        return cli_fail(&err);
    }
    sc_status st = sc_json_save(out, c, &err);
    if (!st && strcmp(out, "-") != 0) {
        long ops = 0;
        for (int i = 0; i < t->n_ranks; i++)
            ops += t->ranks[i].n_ops;
        fprintf(stderr, "wrote %s: %d ranks, %ld events (open in https://ui.perfetto.dev)\n", out,
                t->n_ranks, ops);
    }
    cJSON_Delete(c);
    sc_timeline_free(t);
    return st ? cli_fail(&err) : 0;
}
