/* cli_opts.h - the options that plan, tune, whatif and sim share, in one
 * table, and the one parser and --help printer the four commands use.
 *
 * Each option of the table (cli_opts.c) has its name, its argument's
 * metavariable, a help line, a parse function, one set of limits and the
 * commands that take it: --v is [1, 64] in every command that takes it
 * (sim/step.c refuses more than 64 chunks per rank), --max-mbs [1, 65536]
 * (the largest --mbs the simulator takes), and so on; plan's --fix KEY=VALUE
 * parses each KEY through the same entry as the option of that name, so
 * `plan --fix v=65` and `tune --v 65` give the same verdict. A command adds
 * its own options (its output file, whatif's node list, sim's jitter) in a
 * second table of the same shape.
 *
 * Errors print one usage line naming the option and what it allows
 * ("stagecraft tune: --v: 65 is out of range [1, 64]", "--schedule: 'x' is
 * not one of gpipe, 1f1b, interleaved, zb-h1") and the parser returns 2.
 *
 * Ownership: the parser stores pointers into argv (or to static names); it
 * allocates nothing.
 */
#ifndef SC_CLI_OPTS_H
#define SC_CLI_OPTS_H

#include <stddef.h>
#include "search.h"

/* The commands that take a shared option (cli_opt.cmds). */
enum { CLI_PLAN = 1u, CLI_TUNE = 2u, CLI_WHATIF = 4u, CLI_SIM = 8u };

/* The limits, one definition each. */
#define CLI_MAX_BATCH (1L << 30)
#define CLI_MAX_TOP 1000
#define CLI_TOP 16              /* plans plan lists by default */
#define CLI_MAX_SIMULATE 100000 /* --simulate */
#define CLI_MAX_DP (1 << 20)
#define CLI_MAX_TP (1 << 12)
#define CLI_MAX_PP (1 << 12)
#define CLI_MAX_V 64           /* sim/step.c: at most 64 chunks per rank */
#define CLI_MAX_M (1 << 16)    /* microbatches; the search skips m > 65536 too */
#define CLI_MAX_MBS (1 << 16)  /* --mbs and --max-mbs */

/* Where the shared options land. A command whose own options need more
 * fields puts this struct FIRST in its own struct and passes that: offsets
 * of the shared table are offsets into it. */
typedef struct cli_search_args {
    const char *model, *cluster;
    long nodes;               /* 0: the cluster's own count */
    long batch;               /* --global-batch; 0: not given */
    long top;                 /* --top: plans listed (display only) */
    int json;
    double max_mem;           /* --max-mem in bytes; 0: the default (cli_mem.h) */
    int attn_given;           /* --attn (or --fix attn=) was given */
    sc_search_opts o;         /* partitioner, max_mbs, optimize_memory, memory_weight,
                                 shared_strict and the fixed choices fix_* (0, NULL or
                                 -1: not given) */
} cli_search_args;

/* Sets every field to "not given" and the search's defaults
 * (sc_search_opts_default; top = CLI_TOP). */
void cli_search_args_init(cli_search_args *a);

typedef struct cli_opt cli_opt;
/* Parses arg (NULL for a flag) for option o into dst (the command's struct;
 * the field is at o->off). label names the option in messages ("--v",
 * "--fix v"). Returns 0, or 2 after printing a usage error for cmd. */
typedef int (*cli_parse_fn)(const char *cmd, const char *label, const cli_opt *o,
                            const char *arg, void *dst);

struct cli_opt {
    const char *name;         /* --NAME; NULL ends a table */
    char short_name;          /* -X as well, or 0 */
    const char *arg;          /* metavariable for --help; NULL: a flag, no value */
    const char *help;         /* one line; a '\n' continues it, indented, on the next */
    cli_parse_fn parse;
    size_t off;               /* the field parse fills, from the start of dst */
    double lo, hi;            /* the allowed values of a number, inclusive */
    unsigned cmds;            /* shared table: CLI_* of the commands that take it */
    const char *fix_key;      /* shared table: its KEY in plan's --fix, or NULL */
    const char *(*choices)(void); /* the allowed words, for --help and errors, or NULL */
    int show_default;         /* --help prints the field's value before parsing */
};

/* Parse functions for both tables. int/long/double check [lo, hi]. */
int cli_opt_str(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                void *dst);
int cli_opt_flag(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                 void *dst);
int cli_opt_int(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                void *dst);
int cli_opt_long(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                 void *dst);
int cli_opt_double(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                   void *dst);
/* A double that may end in a decimal multiplier: k (10^3), M (10^6), B or G
 * (10^9), T (10^12): "300B" tokens is 3e11. */
int cli_opt_count(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                  void *dst);
/* plan's --fix KEY=VALUE[,...]: each KEY through the shared entry whose
 * fix_key it is (dst: a cli_search_args, or a struct that starts with one). */
int cli_opt_fix(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                void *dst);

/* The keys --fix takes, in table order: "dp, tp, pp, v, cp, m, mbs, schedule,
 * zero, recompute". */
const char *cli_fix_keys(void);

/* The shared table ({NULL}-terminated). */
extern const cli_opt cli_search_opts[];

typedef struct cli_cmd {
    const char *name;         /* "plan": messages say "stagecraft plan: ..." */
    unsigned who;             /* CLI_PLAN: which shared options it takes */
    const char *usage;        /* synopsis and description, before the options */
    const char *notes;        /* after them, or NULL */
    const cli_opt *own;       /* the command's own options ({NULL}-terminated), or NULL */
} cli_cmd;

#define CLI_HELP_SHOWN (-1)

/* Parses argv[1..argc) (argv[0] is the command) into dst: the shared
 * options that cmd->who takes and cmd->own. Positional arguments are
 * refused. Returns 0 to go on, 2 after a usage error (printed), or
 * CLI_HELP_SHOWN after printing --help on stdout (the command then exits
 * 0). dst holds the defaults on entry (cli_search_args_init and the
 * command's own); --help shows those marked show_default. */
int cli_parse(const cli_cmd *cmd, int argc, char **argv, void *dst);

/* The --help text: cmd->usage, the shared options, the command's own,
 * cmd->notes. */
void cli_help(const cli_cmd *cmd, const void *dst);

#endif
