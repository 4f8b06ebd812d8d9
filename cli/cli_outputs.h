/* cli_outputs.h - a command's output files written all or none, wherever
 * they go.
 *
 * sc_outdir (common/outdir.h) stages the files of one folder; a command
 * whose outputs may lie in different folders (sim's --timeline, --lowered
 * and -o; plot's picture and --script) registers each final name here
 * before doing any work: the folder must exist and be writable, or the
 * command stops at once naming the file. Each output is then written (whole,
 * by its usual writer) under a temporary name beside its target,
 * DIR/.stagecraft-PID-N.NAME (the extension kept: some writers read it), and
 * cli_outputs_commit renames them all onto their targets only when every
 * one was written; otherwise it removes the temporaries and nothing is left.
 *
 * Trade-off taken: the renames are one per file (no file system renames
 * several at once); a rename that fails half-way (a target replaced by a
 * folder meanwhile) leaves the outputs renamed before it. Every temporary is
 * checked to exist before the first rename.
 *
 * Ownership: a cli_outputs lives on the caller's stack; paths returned point
 * into it; commit releases everything. Only a file that is replaced is
 * staged: a name that is a symbolic link is followed (the file it ends at is
 * staged beside that file and renamed onto it; the link stays a link), and
 * "-", a descriptor (/dev/stdout, /dev/fd/N), a character device or a FIFO
 * (/dev/null) is passed through as is and written through when its turn
 * comes, as sc_write_file_atomic does (never renamed over: a rename onto
 * /dev/null would replace the device for everyone).
 */
#ifndef SC_CLI_OUTPUTS_H
#define SC_CLI_OUTPUTS_H

#include "sc.h"

#define CLI_OUTPUTS_MAX 8

typedef struct cli_outputs {
    int n;
    struct {
        const char *final; /* as the user named it, for messages */
        char dest[4096];   /* the file it ends at, links followed: the one replaced */
        char tmp[4200];
    } o[CLI_OUTPUTS_MAX];
} cli_outputs;

/* Checks that path can be created: its folder exists and is writable, and
 * path is not a folder. SC_OK, or SC_EIO "PATH: cannot create: folder DIR
 * does not exist" (or "is not a folder", "is not writable: REASON", "PATH:
 * is a folder"). "-" is always fine. */
sc_status cli_output_check(const char *path, sc_error *err);

/* Adds an output (NULL: nothing, *write_to NULL): checks it
 * (cli_output_check) and sets *write_to to the temporary name to write
 * instead ("-" as is). SC_EINVAL past CLI_OUTPUTS_MAX. */
sc_status cli_outputs_add(cli_outputs *s, const char *path, const char **write_to,
                          sc_error *err);

/* When st is SC_OK: checks every temporary exists, then renames each onto
 * its target (SC_EIO naming the target on failure); otherwise, or on that
 * failure, removes the temporaries. Messages in err that name a temporary
 * are rewritten to name its target. Returns st or the commit's error. */
sc_status cli_outputs_commit(cli_outputs *s, sc_status st, sc_error *err);

/* Whether path names this process's standard output: "-", or a name that
 * ends, links followed, at /dev/fd/1 or /proc/self/fd/1 (/dev/stdout). */
int cli_is_stdout(const char *path);

/* A command whose outputs may go to standard output calls this once, after
 * parsing and before printing anything, with pointers to its output paths
 * (NULL entries and NULL paths skipped). When one names standard output,
 * that output keeps the descriptor and the command's report goes to
 * standard error instead, as curl -o - and tar -f - do: *paths[i] becomes
 * "/dev/fd/K", K a copy of descriptor 1, and descriptor 1 then writes to
 * standard error. Refused (SC_EINVAL, naming cmd): two outputs on standard
 * output, or one beside --json (json non-zero), which would mix there.
 * cli_fail names that copy "stdout" in its messages. */
sc_status cli_stdout_claim(const char *cmd, const char **const paths[], int n, int json,
                           sc_error *err);

/* A command with one output, *path (NULL: none): cli_output_check, then
 * cli_stdout_claim of it, before any work. */
sc_status cli_output_take(const char *cmd, const char **path, int json, sc_error *err);

/* The name cli_stdout_claim gave standard output ("" when it was not
 * called or found none): cli_fail rewrites it to "stdout". */
const char *cli_stdout_alias(void);

/* path for a message: "standard output" for the name cli_stdout_claim gave
 * it, path otherwise. */
const char *cli_out_name(const char *path);

/* For a command that writes a folder (-o DIR): the usage error, exit 2,
 * for an empty name or one that names standard output ("-", /dev/stdout:
 * a folder of several files cannot go there; hint, when not NULL, says what
 * does); 0 when dir is fine or NULL. */
int cli_outdir_bad(const char *cmd, const char *dir, const char *hint);

#endif
