/* outdir.c - mkdir -p and sets of files renamed into a folder together, see
 * outdir.h. */
#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_MAX_LEN 4096

sc_status sc_mkdir_p(const char *dir, sc_error *err)
{
    char path[PATH_MAX_LEN];
    if (!dir || !*dir)
        return sc_err(err, SC_EINVAL, "empty folder name");
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return sc_err(err, SC_EINVAL, "%s: path too long", dir);
    /* each prefix ending before a '/' (and the whole path), the leading '/'
     * of an absolute path skipped */
    for (char *q = path + 1;; q++) {
        if (*q != '/' && *q != '\0')
            continue;
        char c = *q;
        *q = '\0';
        struct stat sb;
        if (stat(path, &sb) != 0) {
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return sc_err(err, SC_EIO, "%s: cannot create folder: %s", path,
                              strerror(errno));
            if (stat(path, &sb) != 0) /* lost a race to a remover */
                return sc_err(err, SC_EIO, "%s: cannot create folder: %s", path,
                              strerror(errno));
        }
        if (!S_ISDIR(sb.st_mode))
            return sc_err(err, SC_EIO, "%s: exists and is not a folder", path);
        *q = c;
        if (!c)
            break;
    }
    return SC_OK;
}

struct sc_outdir {
    char *dir;        /* as given */
    char *tmp;        /* DIR/.TAG.tmpXXXXXX */
    char **names;     /* added file names */
    char **staged;    /* TMP/NAME */
    int *slots;       /* sc_tmp_register's slot of each staged file */
    int tmp_slot;     /* and of the staging folder */
    int n, cap;
};

static void outdir_free(sc_outdir *d)
{
    for (int i = 0; i < d->n; i++) {
        sc_tmp_unregister(d->slots[i]);
        sc_free(d->names[i]);
        sc_free(d->staged[i]);
    }
    sc_tmp_unregister(d->tmp_slot);
    sc_free(d->slots);
    sc_free(d->names);
    sc_free(d->staged);
    sc_free(d->tmp);
    sc_free(d->dir);
    sc_free(d);
}

sc_status sc_outdir_open(const char *dir, const char *tag, sc_outdir **out, sc_error *err)
{
    *out = NULL;
    if (!tag || !*tag || strchr(tag, '/'))
        return sc_err(err, SC_EINVAL, "outdir: bad tag '%s'", tag ? tag : "");
    sc_status st = sc_mkdir_p(dir, err);
    if (st)
        return st;
    sc_outdir *d = sc_calloc(1, sizeof *d);
    if (d)
        d->tmp_slot = -1;
    size_t tl = strlen(dir) + strlen(tag) + 16;
    if (!d || !(d->dir = sc_strdup(dir)) || !(d->tmp = sc_malloc(tl))) {
        if (d)
            outdir_free(d);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", dir);
    }
    snprintf(d->tmp, tl, "%s/.%s.tmpXXXXXX", dir, tag);
    if (sc_tmp_create(d->tmp, 1, &d->tmp_slot) < 0) { /* removed on SIGINT/SIGTERM */
        st = sc_err(err, SC_EIO, "%s: cannot create a temporary folder: %s", dir,
                    strerror(errno));
        outdir_free(d);
        return st;
    }
    *out = d;
    return SC_OK;
}

const char *sc_outdir_dir(const sc_outdir *d) { return d->dir; }

sc_status sc_outdir_file(sc_outdir *d, const char *name, const char **path, sc_error *err)
{
    *path = NULL;
    if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return sc_err(err, SC_EINVAL, "%s: '%s' is not a file name", d->dir, name ? name : "");
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->names[i], name))
            return sc_err(err, SC_EINVAL, "%s/%s: written twice", d->dir, name);
    if (d->n == d->cap) {
        int nc = d->cap ? 2 * d->cap : 8;
        char **a = sc_realloc(d->names, sizeof *a * (size_t)nc);
        if (a)
            d->names = a;
        char **b = a ? sc_realloc(d->staged, sizeof *b * (size_t)nc) : NULL;
        if (b)
            d->staged = b;
        int *c = b ? sc_realloc(d->slots, sizeof *c * (size_t)nc) : NULL;
        if (c)
            d->slots = c;
        if (!a || !b || !c)
            return sc_err(err, SC_ENOMEM, "%s: out of memory", d->dir);
        d->cap = nc;
    }
    size_t sl = strlen(d->tmp) + strlen(name) + 2;
    char *nm = sc_strdup(name), *sp = sc_malloc(sl);
    if (!nm || !sp) {
        sc_free(nm);
        sc_free(sp);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", d->dir);
    }
    snprintf(sp, sl, "%s/%s", d->tmp, name);
    d->names[d->n] = nm;
    d->staged[d->n] = sp;
    d->slots[d->n] = sc_tmp_register(sp, 0);
    d->n++;
    *path = sp;
    return SC_OK;
}

/* DIR/NAME into a fresh string; NULL on OOM. */
static char *final_path(const sc_outdir *d, int i)
{
    size_t l = strlen(d->dir) + strlen(d->names[i]) + 2;
    char *p = sc_malloc(l);
    if (p)
        snprintf(p, l, "%s/%s", d->dir, d->names[i]);
    return p;
}

/* A DIR/NAME that is a symbolic link, a device or a FIFO is not renamed
 * over: the staged file's bytes go to it through sc_write_file_atomic,
 * which follows the link or writes through the device. */
static sc_status copy_into(const char *staged, const char *dst, sc_error *err)
{
    char *data = NULL;
    size_t len = 0;
    sc_status st = sc_read_file(staged, (size_t)1 << 30, &data, &len, err);
    if (!st)
        st = sc_write_file_atomic(dst, data, len, err);
    sc_free(data);
    if (!st)
        unlink(staged);
    return st;
}

static sc_status commit(sc_outdir *d, sc_error *err)
{
    struct stat sb;
    for (int i = 0; i < d->n; i++)
        if (stat(d->staged[i], &sb) != 0)
            return sc_err(err, SC_EIO, "%s/%s: was not written", d->dir, d->names[i]);
    /* every destination path before the first rename, so that an allocation
     * failing here renames nothing */
    char **dst = sc_calloc((size_t)d->n + 1, sizeof *dst);
    sc_status st = dst ? SC_OK : SC_ENOMEM;
    for (int i = 0; !st && i < d->n; i++)
        if (!(dst[i] = final_path(d, i)))
            st = SC_ENOMEM;
    if (st == SC_ENOMEM)
        sc_err(err, SC_ENOMEM, "%s: out of memory", d->dir);
    for (int i = 0; !st && i < d->n; i++) {
        if (lstat(dst[i], &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
            st = copy_into(d->staged[i], dst[i], err);
        else if (rename(d->staged[i], dst[i]) != 0)
            st = sc_err(err, SC_EIO, "%s: cannot rename into place: %s", dst[i],
                        strerror(errno));
    }
    for (int i = 0; dst && i < d->n; i++)
        sc_free(dst[i]);
    sc_free(dst);
    if (st)
        return st;
    /* the renames survive a crash once the folder is on disk */
    int fd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return SC_OK;
}

sc_status sc_outdir_close(sc_outdir *d, sc_status st, sc_error *err)
{
    if (!d)
        return st;
    if (!st)
        st = commit(d, err);
    /* messages name the staging folder; name DIR instead */
    if (st && err) {
        char *q = strstr(err->msg, d->tmp);
        if (q) {
            char fixed[SC_ERRMSG_MAX];
            snprintf(fixed, sizeof fixed, "%.*s%s%s", (int)(q - err->msg), err->msg, d->dir,
                     q + strlen(d->tmp));
            memcpy(err->msg, fixed, sizeof fixed);
        }
    }
    for (int i = 0; i < d->n; i++)
        unlink(d->staged[i]); /* those not renamed; ENOENT for the others */
    rmdir(d->tmp);
    outdir_free(d);
    return st;
}
