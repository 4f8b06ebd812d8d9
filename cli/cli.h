/* cli.h - the stagecraft command: one file per command group (cmd_model.c,
 * cmd_cluster.c, cmd_cost.c, ...), each exporting `int cmd_NAME(int argc,
 * char **argv)` where argv[0] is the command name. Commands parse arguments,
 * call the library and print; no logic of their own.
 *
 * Exit status: one table for every command (cli_exit_code, and the section
 * "Exit codes" of docs/commands.md). Errors print one line
 * "stagecraft: MESSAGE" on stderr (the message names the file and the JSON
 * path). main() checks that standard output was written (CLI_EXIT_IO
 * otherwise, with "stagecraft: stdout: write error: REASON"). A calibration
 * refused by its quality gates (SC_EGATE) exits CLI_EXIT_FIT (4).
 */
#ifndef SC_CLI_H
#define SC_CLI_H

#include <cjson/cJSON.h>
#include "model.h"
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
int cmd_export(int argc, char **argv);
int cmd_validate(int argc, char **argv);

/* The exit status of a command. Scripts can tell "fix your command or your
 * file" (2) from "the machine failed" (3) from "the configuration cannot
 * run" (5). */
enum {
    CLI_EXIT_OK = 0,         /* success */
    CLI_EXIT_INTERNAL = 1,   /* out of memory, a bug, anything not below */
    CLI_EXIT_USAGE = 2,      /* bad usage or bad input: an option or argument, an input
                                file's content, a name that is neither a built-in nor a
                                file, a format version or feature this build lacks */
    CLI_EXIT_IO = 3,         /* I/O or system error: a file that cannot be read, created
                                or written, standard output, a device runtime (CUDA,
                                NCCL, MPI) or a rank that failed or timed out */
    CLI_EXIT_FIT = 4,        /* a fit refused by calibration's quality gates (SC_EGATE) */
    CLI_EXIT_INFEASIBLE = 5, /* the configuration cannot run: it does not fit in device
                                memory, or no configuration fits or matches */
};
/* The one map from a library status to an exit status:
 *   SC_OK 0; SC_ENOMEM and unknown codes 1;
 *   SC_EINVAL, SC_EPARSE, SC_ENOTFOUND, SC_ENOTSUP 2;
 *   SC_EIO, SC_ECUDA, SC_ENCCL, SC_EMPI 3; SC_ENOFIT 5. */
int cli_exit_code(sc_status st);
/* Prints the error and returns cli_exit_code of its status. */
int cli_fail(const sc_error *err);
/* One warning line on stderr when c was calibrated with --force past failed
 * quality gates (efficiency.fits.gates_failed): its predictions may be far
 * off. what names where it came from (a file or preset name). */
struct sc_cluster;
void cli_warn_cluster(const struct sc_cluster *c, const char *what);
/* Which kind of cluster a prediction used (sc_cluster_label_of, label.h), for
 * sim, plan, tune and whatif: cli_print_label prints "cluster: KIND (...)" and,
 * for a validated preset with a step of step_s > 0, the validation suite's error
 * bar of that step (what names it: "the measured step") in ms where ms is set
 * (the unit of plan's, tune's and whatif's tables), else in us, on stdout, then,
 * where the run (model m's sequence and parameters on gpus GPUs, its attention
 * fused (flash set: c's kernel) or not; m NULL: none) lies beyond the preset's
 * rows, a line saying where (sc_label_outside);
 * cli_label_json adds
 * "cluster_label": {kind, description, validation?: {rows, mape,
 * mean_signed_error, sd_signed_error, seq, gpus, params, attention},
 * step_time_range_s?: [lo, hi], outside_validation?: [...]} to o
 * (sc_cluster_label_json). */
struct sc_model;
void cli_print_label(const struct sc_cluster *c, double step_s, const char *what, int ms,
                     const struct sc_model *m, long gpus, int flash);
/* Under the label, when the prediction took the default unfused attention
 * (given 0) for a model m whose kernels price attention
 * (sc_model_prices_attention) on a cluster c with fused-attention rates: a
 * line saying so and how to price the fused kernels (--attn flash), which
 * Megatron-Core and PyTorch run by default. Returns 1 when it printed. */
int cli_print_attn_hint(const struct sc_cluster *c, const struct sc_model *m, int flash,
                         int given);
struct cJSON;
void cli_label_json(struct cJSON *o, const struct sc_cluster *c, double step_s,
                    const struct sc_model *m, long gpus, int flash);
/* plan's and whatif's line under their header when the framework fw makes
 * the pipeline sends block (no_overlap_p2p_comm -1: not given; framework.h
 * p2p_why): "pipeline sends block their sender WHY (--overlap-p2p-comm 1:
 * beside the compute)"; nothing otherwise. */
struct sc_framework;
void cli_print_p2p_rule(const struct sc_framework *fw, int no_overlap_p2p_comm);
/* The rank the MPI launcher gave this process (OMPI_COMM_WORLD_RANK,
 * PMI_RANK, PMIX_RANK), read before MPI starts; 0 outside a launcher. */
int cli_launcher_rank(void);
/* Prints "stagecraft CMD: MESSAGE" and "try 'stagecraft CMD --help'" (on
 * rank 0 only under an MPI launcher: every rank parses the same arguments);
 * returns CLI_EXIT_USAGE (2). */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error for the stray argument argv[k], 'unexpected argument ARG';
 * where the command takes --model (and --plan) and argv gives neither, one
 * that does not begin with '-' is shown as the option it most likely meant:
 * "(a model is given as --model ARG)". Returns 2. */
int cli_stray_arg(const char *cmd, int argc, char **argv, int k, int takes_model,
                  int takes_plan);
/* Before a getopt_long loop: every "--name" in argv[1..] (up to "--") must be
 * one of opts' whole names (getopt_long takes an unambiguous prefix, so that
 * a command without --tp would read "--tp 1" as --tp-comm-overlap 1). Skips
 * the values of options that take one (shorts as getopt's string). Returns
 * 0, or prints a usage error for cmd and returns 2. */
struct option;
int cli_exact_longopts(const char *cmd, int argc, char **argv, const char *shorts,
                       const struct option *opts);
/* Parses numbers for option opt; on error prints a usage error and returns 2. */
int cli_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
               double *out);
/* Opens a model (built-in name or file) and a cluster (preset or file),
 * applying nodes when it is not 0 and the framework's overhead
 * (cost_models/overhead.h; NULL or "any": none). On failure prints the
 * error, frees what it opened and returns the exit status; 0 on success. */
struct sc_model;
struct sc_cluster;
int cli_open(const char *model, const char *cluster, long nodes, const char *framework,
             struct sc_model **m, struct sc_cluster *c);
/* Prints root to stdout (formatted) and frees it; returns 0, or 1 on OOM.
 * Write errors on stdout are main()'s to report (close_stdout). */
int cli_print_json(cJSON *root);
/* Human-readable numbers into buf (at least 32 bytes); returns buf. */
char *cli_si(double v, char *buf);      /* 1.32G, 845.2M, 12.0k */
char *cli_bytes(double v, char *buf);   /* 2.45 GiB, 120.0 MiB */
char *cli_us(double seconds, char *buf);/* microseconds with thousands: 12,345.6 */

/* At tp > 1, one line on stderr naming (at most 8 of) the leaves tp cannot
 * touch (sc_model_tp_replicated): they stay whole on every tp rank. */
void cli_warn_tp_replicated(const sc_model *m, int tp);

#endif
