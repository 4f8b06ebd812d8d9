/* cli_outputs.c - outputs written all or none, see cli_outputs.h. */
#include "cli_outputs.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder of path into dir ("." when it has none). */
static void folder_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* The file path ends at when it is one to replace (a regular file or a new
 * name, links followed) into dest; 0 when it is written through (a device,
 * a FIFO, a descriptor), 1 when replaced, or the error. */
static sc_status replaced_file(const char *path, char *dest, size_t n, int *replace,
                               sc_error *err)
{
    char *target = NULL;
    int kind, fd;
    sc_status st = sc_output_kind(path, &target, &kind, &fd, err);
    if (st)
        return st;
    *replace = kind == SC_OUT_REPLACE;
    int len = snprintf(dest, n, "%s", target);
    sc_free(target);
    if (len < 0 || (size_t)len >= n)
        return sc_err(err, SC_EINVAL, "%s: name too long", path);
    return SC_OK;
}

/* Checks the file path is replaced in (target, at the end of its links). */
static sc_status folder_check(const char *path, const char *target, sc_error *err)
{
    char dir[4096];
    folder_of(target, dir, sizeof dir);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return sc_err(err, SC_EIO, "%s: cannot create: folder %s does not exist", path, dir);
    if (!S_ISDIR(sb.st_mode))
        return sc_err(err, SC_EIO, "%s: cannot create: %s is not a folder", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return sc_err(err, SC_EIO, "%s: cannot create: folder %s is not writable: %s", path, dir,
                      strerror(errno));
    return SC_OK;
}

sc_status cli_output_check(const char *path, sc_error *err)
{
    if (!path || !strcmp(path, "-"))
        return SC_OK;
    if (!*path)
        return sc_err(err, SC_EINVAL, "an output file name is empty");
    char target[4096];
    int replace;
    sc_status st = replaced_file(path, target, sizeof target, &replace, err);
    if (st || !replace) /* a device, FIFO or descriptor is written through */
        return st;
    return folder_check(path, target, err);
}

sc_status cli_outputs_add(cli_outputs *s, const char *path, const char **write_to,
                          sc_error *err)
{
    *write_to = NULL;
    if (!path)
        return SC_OK;
    if (!strcmp(path, "-")) {
        *write_to = path;
        return SC_OK;
    }
    if (!*path)
        return sc_err(err, SC_EINVAL, "an output file name is empty");
    if (s->n >= CLI_OUTPUTS_MAX)
        return sc_err(err, SC_EINVAL, "%s: more than %d outputs", path, CLI_OUTPUTS_MAX);
    char *dest = s->o[s->n].dest;
    int replace;
    sc_status st = replaced_file(path, dest, sizeof s->o[s->n].dest, &replace, err);
    if (st)
        return st;
    if (!replace) { /* written through as it comes, never staged or renamed over */
        *write_to = path;
        return SC_OK;
    }
    st = folder_check(path, dest, err);
    if (st)
        return st;
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->o[i].dest, dest))
            return sc_err(err, SC_EINVAL, "%s: named for two outputs", path);
    char dir[4096];
    folder_of(dest, dir, sizeof dir);
    const char *base = strrchr(dest, '/') ? strrchr(dest, '/') + 1 : dest;
    int len = snprintf(s->o[s->n].tmp, sizeof s->o[s->n].tmp, "%s/.stagecraft-%ld-%d.%s", dir,
                       (long)getpid(), s->n, base);
    if (len < 0 || (size_t)len >= sizeof s->o[s->n].tmp)
        return sc_err(err, SC_EINVAL, "%s: name too long", path);
    s->o[s->n].final = path;
    *write_to = s->o[s->n++].tmp;
    return SC_OK;
}

/* Rewrites the first mention of each temporary in err's message. */
static void name_targets(cli_outputs *s, sc_error *err)
{
    if (!err)
        return;
    for (int i = 0; i < s->n; i++) {
        char *at = strstr(err->msg, s->o[i].tmp);
        if (!at)
            continue;
        char rest[SC_ERRMSG_MAX];
        snprintf(rest, sizeof rest, "%s", at + strlen(s->o[i].tmp));
        snprintf(at, sizeof err->msg - (size_t)(at - err->msg), "%s%s", s->o[i].final, rest);
    }
}

sc_status cli_outputs_commit(cli_outputs *s, sc_status st, sc_error *err)
{
    struct stat sb;
    for (int i = 0; i < s->n && !st; i++)
        if (stat(s->o[i].tmp, &sb) != 0)
            st = sc_err(err, SC_EIO, "%s: was not written", s->o[i].final);
    for (int i = 0; i < s->n && !st; i++)
        if (rename(s->o[i].tmp, s->o[i].dest) != 0)
            st = sc_err(err, SC_EIO, "%s: cannot write: %s", s->o[i].final, strerror(errno));
    for (int i = 0; i < s->n; i++)
        unlink(s->o[i].tmp); /* gone when renamed */
    if (st)
        name_targets(s, err);
    s->n = 0;
    return st;
}

sc_status cli_output_take(const char *cmd, const char **path, int json, sc_error *err)
{
    const char **const one[] = {path};
    sc_status st = cli_output_check(*path, err);
    return st ? st : cli_stdout_claim(cmd, one, 1, json, err);
}

int cli_outdir_bad(const char *cmd, const char *dir, const char *hint)
{
    if (!dir)
        return 0;
    if (!*dir)
        return cli_usage(cmd, "-o: an empty folder name");
    if (cli_is_stdout(dir))
        return cli_usage(cmd, "-o %s: %s writes a folder of several files, which standard "
                              "output cannot take: give a folder name%s%s",
                         dir, cmd, hint ? " " : "", hint ? hint : "");
    return 0;
}

int cli_is_stdout(const char *path)
{
    if (!path || !*path)
        return 0;
    char *target = NULL;
    int kind, fd;
    sc_error err = {0};
    if (sc_output_kind(path, &target, &kind, &fd, &err))
        return 0;
    sc_free(target);
    return kind == SC_OUT_FD && fd == STDOUT_FILENO;
}

static char stdout_alias[32];

const char *cli_stdout_alias(void)
{
    return stdout_alias;
}

const char *cli_out_name(const char *path)
{
    return path && *stdout_alias && !strcmp(path, stdout_alias) ? "standard output" : path;
}

sc_status cli_stdout_claim(const char *cmd, const char **const paths[], int n, int json,
                           sc_error *err)
{
    const char **taken = NULL;
    for (int i = 0; i < n; i++) {
        if (!paths[i] || !cli_is_stdout(*paths[i]))
            continue;
        if (taken)
            return sc_err(err, SC_EINVAL,
                          "%s: two outputs name standard output (%s and %s): give one of "
                          "them a file",
                          cmd, *taken, *paths[i]);
        taken = paths[i];
    }
    if (!taken)
        return SC_OK;
    if (json)
        return sc_err(err, SC_EINVAL,
                      "%s: --json prints on standard output, where the output '%s' goes: "
                      "give the output a file, or leave out --json",
                      cmd, *taken);
    fflush(stdout);
    int keep = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (keep < 0) /* closed (>&-): the output cannot be written, as any write would say */
        return sc_err(err, SC_EIO, "stdout: write error: %s", strerror(errno));
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        sc_status st = sc_err(err, SC_EIO, "%s: cannot move the report to standard error: %s",
                              cmd, strerror(errno));
        close(keep);
        return st;
    }
    snprintf(stdout_alias, sizeof stdout_alias, "/dev/fd/%d", keep);
    *taken = stdout_alias;
    return SC_OK;
}
