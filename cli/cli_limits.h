/* cli_limits.h - the memory cap every command checks its estimate against
 * before allocating (docs/commands.md, "Memory and time limits"): --max-mem
 * SIZE, by default half the machine's physical memory.
 *
 * A command estimates what it is about to allocate (sim: the lowered step,
 * the engine's tasks and the timeline, sc_step_size_estimate; plan, tune,
 * whatif: each candidate it simulates; trace and plot timeline: the
 * timeline read and the output written) and refuses, in one line naming the
 * estimate and the limit, anything above the cap.
 */
#ifndef SC_CLI_LIMITS_H
#define SC_CLI_LIMITS_H

#include "cli_opts.h"

/* Half of sysconf(_SC_PHYS_PAGES) · sysconf(_SC_PAGESIZE); 8 GiB when the
 * system does not say. */
double cli_mem_default(void);

/* The cap in bytes: given (> 0) or the default. */
double cli_mem_cap(double given);

/* Parses SIZE: a number of bytes with an optional suffix K, M, G or T
 * (powers of 1024; "8G", "512M", "1.5T"), at least 1 MiB. Returns 0 and
 * sets *out, or prints a usage error for cmd naming opt and returns 2. */
int cli_parse_bytes(const char *cmd, const char *opt, const char *s, double *out);

/* The option-table parse function of --max-mem (a double field, bytes). */
int cli_opt_bytes(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                  void *dst);

/* Progress of a long search on stderr, whether or not it is a terminal: a
 * line once CLI_PROGRESS_AFTER_S have passed, then every
 * CLI_PROGRESS_EVERY_S, with done / total of the phase, its rate and the
 * time it has left ("plan: partitioned 37/112 shapes, 3.1/s, 12 s elapsed,
 * about 25 s left to partition"), and a last line when a search that
 * printed one ends. The search reports after each shape and each
 * simulation; one shape of a huge model can take longer than
 * CLI_PROGRESS_EVERY_S, so cli_progress_start runs a heartbeat thread that
 * repeats the last figures with the time elapsed ("..., 41 s elapsed, shape
 * 43 under way", or "2 shapes under way" while the search partitions on two
 * threads) whenever no line came for CLI_PROGRESS_EVERY_S, until
 * cli_progress_stop. One heartbeat at a time (a process-wide lock). */
#define CLI_PROGRESS_AFTER_S 2.0
#define CLI_PROGRESS_EVERY_S 5.0
typedef struct cli_progress {
    const char *cmd;
    double t0, last;      /* start (cli_wall) and the last line, from t0 */
    int lines;
    int phase;            /* private: the phase seen last and when it began */
    double phase_t0;
    int have;             /* private: snap holds the search's last report */
    struct {
        int phase;
        long done, total;
        double fraction;
        int workers;
    } snap;
} cli_progress;
struct sc_search_progress;
/* CLOCK_MONOTONIC seconds. */
double cli_wall(void);
/* Prints a line when one is due; 1 if it did. */
int cli_search_progress_line(cli_progress *ps, const struct sc_search_progress *p);
/* Starts / stops the heartbeat of ps (ps outlives it); start returns 0, or
 * -1 when no thread could be made (then the search reports without it). */
int cli_progress_start(cli_progress *ps);
void cli_progress_stop(cli_progress *ps);

/* plan's --time-limit when none is given (docs/commands.md, plan): a search
 * stops partitioning new shapes after this many seconds once something fits,
 * and says so; --time-limit 0 searches every shape however long it takes.
 * Searches of the built-in models take well under a second to 15 s here;
 * one of a 199,996-leaf model on 512 nodes would take most of an hour. */
#define CLI_PLAN_TIME_LIMIT_S 60.0

#endif
