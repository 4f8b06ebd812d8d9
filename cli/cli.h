/* cli.h - the stagecraft command: one file per command group (cmd_model.c,
 * cmd_cluster.c, cmd_cost.c, ...), each exporting `int cmd_NAME(int argc,
 * char **argv)` where argv[0] is the command name. Commands parse arguments,
 * call the library and print; no logic of their own.
 *
 * Exit status: 0 success, 2 usage error or bad input (the message names the
 * file and the JSON path), 4 a calibration refused by its quality gates
 * (SC_EGATE), 1 any other failure. Errors print one line
 * "stagecraft: MESSAGE" on stderr.
 */
#ifndef SC_CLI_H
#define SC_CLI_H

#include <cjson/cJSON.h>
#include "sc.h"

int cmd_model(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_cost(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_exec(int, char **);
int cmd_bench(int, char **);
int cmd_whatif(int argc, char **argv);
int cmd_repro(int argc, char **argv);

/* Prints the error and returns the exit status for its code. */
int cli_fail(const sc_error *err);
/* One warning line on stderr when c was calibrated with --force past failed
 * quality gates (efficiency.fits.gates_failed): its predictions may be far
 * off. what names where it came from (a file or preset name). */
struct sc_cluster;
void cli_warn_cluster(const struct sc_cluster *c, const char *what);
/* Prints "stagecraft CMD: MESSAGE" and "try 'stagecraft CMD --help'"; returns 2. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses numbers for option opt; on error prints a usage error and returns 2. */
int cli_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
               double *out);
/* Opens a model (built-in name or file) and a cluster (preset or file),
 * applying nodes when it is not 0. On failure prints the error, frees what
 * it opened and returns the exit status; 0 on success. */
struct sc_model;
struct sc_cluster;
int cli_open(const char *model, const char *cluster, long nodes, struct sc_model **m,
             struct sc_cluster *c);
/* Prints root to stdout (formatted) and frees it; returns 0, or 1 on OOM. */
int cli_print_json(cJSON *root);
/* Human-readable numbers into buf (at least 32 bytes); returns buf. */
char *cli_si(double v, char *buf);      /* 1.32G, 845.2M, 12.0k */
char *cli_bytes(double v, char *buf);   /* 2.45 GiB, 120.0 MiB */
char *cli_us(double seconds, char *buf);/* microseconds with thousands: 12,345.6 */

#endif
