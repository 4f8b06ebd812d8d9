/* cmd_export.c - `stagecraft export PLAN --to TARGET [-o DIR] [--json]`: a
 * plan as the files a training framework needs to run it (sc_export_make). */
#include "cli.h"
#include "cli_outputs.h"
#include "cluster.h"
#include "export.h"
#include "json.h"
#include "model.h"
#include "plan.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: stagecraft export PLAN --to TARGET [-o DIR] [--json]\n"
               "       (--plan PLAN, as sim and bench take it, is the same)\n\n"
               "Turns a plan (stagecraft.plan/1, from `plan -o` or `sim -o`) into what a\n"
               "training framework needs to run it. Without -o the main file goes to standard\n"
               "output; with -o DIR every file of the target is written into DIR, all of them\n"
               "or none. Each export says, in its header and in --json, what the framework\n"
               "will do differently from the plan, and names the framework version its flags\n"
               "were checked against. A plan the framework cannot run is refused in one line\n"
               "naming the feature (exit 2), and nothing is written.\n\n"
               "targets:\n");
    int n;
    const sc_export_target *const *t = sc_export_targets(&n);
    for (int i = 0; i < n; i++)
        fprintf(f, "  %-10s %s\n", t[i]->name, t[i]->description);
    fprintf(f, "\n"
               "  --to TARGET         one of the targets above (required)\n"
               "  -o, --output DIR    write every file of the target into DIR (created when\n"
               "                      missing); files there of the same names are replaced\n"
               "  --json              print the export as JSON (files, differences from the\n"
               "                      plan, the settings) instead of the main file\n"
               "  -h, --help          this text\n");
}

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {{"to", required_argument, NULL, 't'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"plan", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *to = NULL, *dir = NULL, *file = NULL;
    int json = 0, ch;
    if (cli_exact_longopts("export", argc, argv, "ho:", opts))
        return 2;
    optind = 0; /* GNU: reinitialise; options and PLAN may come in any order */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 't':
            to = optarg;
            break;
        case 'o':
            dir = optarg;
            break;
        case 'j':
            json = 1;
            break;
        case 'p':
            file = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage("export", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (!file && optind >= argc)
        return cli_usage("export", "missing PLAN");
    if (!file)
        file = argv[optind++];
    else if (optind < argc)
        return cli_usage("export", "unexpected argument '%s' (--plan gave the plan)",
                         argv[optind]);
    if (optind < argc)
        return cli_usage("export", "unexpected argument '%s'", argv[optind]);
    if (!to)
        return cli_usage("export", "missing --to TARGET (%s)", sc_export_target_names());
    if (!sc_export_find(to))
        return cli_usage("export", "--to: '%s' is not one of %s", to, sc_export_target_names());
    int bad = cli_outdir_bad("export", dir, "(without -o the main file goes to standard output)");
    if (bad)
        return bad;

    sc_error err = {0};
    sc_plan *p = NULL;
    sc_model *m = NULL;
    sc_cluster c;
    sc_export *e = NULL;
    if (sc_plan_load(file, &p, &err) || sc_plan_open(p, file, &m, &c, &err) ||
        sc_export_make(p, m, file, to, &e, &err)) {
        sc_model_free(m);
        sc_plan_free(p);
        return cli_fail(&err);
    }
    sc_model_free(m);
    sc_plan_free(p);

    int rc = 0;
    if (dir && sc_export_write(e, dir, &err)) {
        sc_export_free(e);
        return cli_fail(&err);
    }
    if (json) {
        cJSON *j = sc_export_to_json(e, file);
        rc = j ? cli_print_json(j) : 1;
        if (!j)
            fprintf(stderr, "stagecraft: export: out of memory\n");
    } else if (dir) {
        fprintf(stderr, "wrote %s:", dir);
        for (int i = 0; i < e->n_files; i++)
            fprintf(stderr, " %s", e->files[i].name);
        fprintf(stderr, "\n%s: %d difference%s from the plan, listed at the top of %s\n",
                e->framework, e->n_notes, e->n_notes == 1 ? "" : "s", e->files[0].name);
    } else {
        fputs(e->files[0].text, stdout);
        if (fflush(stdout) != 0)
            rc = 1;
    }
    sc_export_free(e);
    return rc;
}
