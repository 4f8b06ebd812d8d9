/* cmd_trace.c - `stagecraft trace TIMELINE -o FILE`: a timeline as Chrome
 * trace JSON (open it in https://ui.perfetto.dev or chrome://tracing). */
#include "cli.h"
#include "cli_limits.h"
#include "cli_outputs.h"
#include "json.h"
#include "timeline.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: stagecraft trace TIMELINE -o FILE [--ranks LIST] [--stages LIST]\n"
               "                        [--max-mem SIZE]\n\n"
               "Converts a timeline (stagecraft.timeline/1, from the simulator or the\n"
               "executor) into Chrome trace JSON: one process per node, one thread per\n"
               "rank and stream (compute, comm), one event per op. Open the result in\n"
               "https://ui.perfetto.dev or chrome://tracing.\n\n"
               "  -o, --output FILE   where to write the trace ('-' for standard output);\n"
               "                      written whole or not at all\n"
               "  --ranks LIST        only these ranks (\"0-7,64\")\n"
               "  --stages LIST       only the ops of these stages (\"0,3-5\")\n"
               "  --max-mem SIZE      refuse a timeline whose reading and trace would need\n"
               "                      more (512M, 8G; default half the physical memory)\n");
}

int cmd_trace(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"ranks", required_argument, NULL, 'r'},
                                         {"stages", required_argument, NULL, 's'},
                                         {"max-mem", required_argument, NULL, 'M'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL;
    sc_tl_filter flt;
    memset(&flt, 0, sizeof flt);
    int filtered = 0;
    double max_mem = 0;
    sc_error err = {0};
    int ch;
    if (cli_exact_longopts("trace", argc, argv, "ho:", opts))
        return 2;
    optind = 0; /* GNU: reinitialise; options and TIMELINE may come in any order */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 'r':
        case 's':
            if (sc_tl_set_parse(optarg, ch == 'r' ? "--ranks" : "--stages",
                                ch == 'r' ? &flt.ranks : &flt.stages, &err))
                return cli_usage("trace", "%s", err.msg);
            filtered = 1;
            break;
        case 'M':
            if (cli_parse_bytes("trace", "--max-mem", optarg, &max_mem))
                return 2;
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

    if (cli_output_check(out, &err)) /* before reading anything */
        return cli_fail(&err);
    /* what it will hold: the text read and the ops (sc_timeline_load_bytes),
     * then the ops and the trace written (an event's text is about 1.3 times
     * an op's; the buffer grows by doubling): measured 2 times the file */
    struct stat sb;
    double cap = cli_mem_cap(max_mem);
    if (stat(in, &sb) == 0 && S_ISREG(sb.st_mode)) {
        double load = (double)sc_timeline_load_bytes((size_t)sb.st_size);
        double write = 0.3 * sb.st_size + 2.6 * sb.st_size;
        double need = load > write ? load : write;
        if (need > cap) {
            char b1[32], b2[32], b3[32];
            sc_err(&err, SC_EINVAL,
                   "trace: %s needs about %s to read and convert (a %s timeline), above the "
                   "limit of %s (--max-mem; --ranks or --stages take a part)",
                   in, cli_bytes(need, b1), cli_bytes((double)sb.st_size, b2),
                   cli_bytes(cap, b3));
            return cli_fail(&err);
        }
    }
    sc_timeline *t = NULL;
    if (sc_timeline_load_filtered(in, filtered ? &flt : NULL, 1, &t, &err))
        return cli_fail(&err);
    sc_buf b = {0};
    sc_timeline_chrome_write(t, &b);
    sc_buf_printf(&b, "\n");
    sc_status st = b.oom ? sc_err(&err, SC_ENOMEM, "%s: out of memory", out)
                         : sc_write_file_atomic(out, b.s, b.len, &err);
    sc_buf_free(&b);
    if (!st && !cli_is_stdout(out)) {
        long ops = 0;
        for (int i = 0; i < t->n_ranks; i++)
            ops += t->ranks[i].n_ops;
        fprintf(stderr, "wrote %s: %d ranks, %ld events (open in https://ui.perfetto.dev)\n", out,
                t->n_ranks, ops);
    }
    sc_timeline_free(t);
    return st ? cli_fail(&err) : 0;
}
