/* cli_outputs.c - outputs written all or none, see cli_outputs.h. */
#include "cli_outputs.h"

#include <errno.h>
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

sc_status cli_output_check(const char *path, sc_error *err)
{
    if (!path || !strcmp(path, "-"))
        return SC_OK;
    if (!*path)
        return sc_err(err, SC_EINVAL, "an output file name is empty");
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return sc_err(err, SC_EIO, "%s: cannot create: folder %s does not exist", path, dir);
    if (!S_ISDIR(sb.st_mode))
        return sc_err(err, SC_EIO, "%s: cannot create: %s is not a folder", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return sc_err(err, SC_EIO, "%s: cannot create: folder %s is not writable: %s", path, dir,
                      strerror(errno));
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return sc_err(err, SC_EINVAL, "%s: is a folder", path); /* bad usage: exit 2 */
    return SC_OK;
}

sc_status cli_outputs_add(cli_outputs *s, const char *path, const char **write_to,
                          sc_error *err)
{
    *write_to = NULL;
    if (!path)
        return SC_OK;
    sc_status st = cli_output_check(path, err);
    if (st)
        return st;
    if (!strcmp(path, "-")) {
        *write_to = path;
        return SC_OK;
    }
    if (s->n >= CLI_OUTPUTS_MAX)
        return sc_err(err, SC_EINVAL, "%s: more than %d outputs", path, CLI_OUTPUTS_MAX);
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->o[i].final, path))
            return sc_err(err, SC_EINVAL, "%s: named for two outputs", path);
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
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
        if (rename(s->o[i].tmp, s->o[i].final) != 0)
            st = sc_err(err, SC_EIO, "%s: cannot write: %s", s->o[i].final, strerror(errno));
    for (int i = 0; i < s->n; i++)
        unlink(s->o[i].tmp); /* gone when renamed */
    if (st)
        name_targets(s, err);
    s->n = 0;
    return st;
}
