/* sc.c - errors, allocation hook, files. */
#include "sc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>

sc_status sc_err(sc_error *err, sc_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void sc_err_prefix(sc_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char pre[SC_ERRMSG_MAX], old[SC_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(pre);
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, pre, n);
    memcpy(err->msg + n, ": ", 2);
    size_t room = sizeof err->msg - n - 3;
    size_t ol = strlen(old);
    if (ol > room)
        ol = room;
    memcpy(err->msg + n + 2, old, ol);
    err->msg[n + 2 + ol] = '\0';
}

void sc_err_clear(sc_error *err)
{
    if (err) {
        err->status = SC_OK;
        err->msg[0] = '\0';
    }
}

const char *sc_status_name(sc_status s)
{
    static const char *names[] = {"ok", "out of memory", "invalid value", "parse error",
                                  "i/o error", "not supported", "not found", "CUDA error",
                                  "NCCL error", "MPI error", "does not fit",
                                  "refused by a quality gate"};
    if ((unsigned)s < SC_ARRAY_LEN(names))
        return names[s];
    return "unknown error";
}

/* ---- allocation ---------------------------------------------------------- */

/* atomic: the executor's thread mode allocates from several threads */
static _Atomic long alloc_count, alloc_fail_at;

static void *default_alloc(void *ud, void *ptr, size_t size)
{
    (void)ud;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    long k = ++alloc_count;
    if (alloc_fail_at > 0 && k == alloc_fail_at)
        return NULL;
    return realloc(ptr, size);
}

static sc_alloc_fn alloc_fn = default_alloc;
static void *alloc_ud;

void sc_set_alloc(sc_alloc_fn fn, void *ud)
{
    alloc_fn = fn ? fn : default_alloc;
    alloc_ud = fn ? ud : NULL;
}

void sc_alloc_fail_at(long n)
{
    alloc_count = 0;
    alloc_fail_at = n;
}

long sc_alloc_count(void) { return alloc_count; }

static _Atomic long alloc_failures;
long sc_alloc_failures(void) { return alloc_failures; }

void *sc_malloc(size_t n)
{
    void *p = alloc_fn(alloc_ud, NULL, n ? n : 1);
    if (!p)
        alloc_failures++;
    return p;
}

void *sc_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size)
        return NULL;
    void *p = sc_malloc(n * size);
    if (p)
        memset(p, 0, (n && size) ? n * size : 1);
    return p;
}

void *sc_realloc(void *p, size_t n)
{
    void *q = alloc_fn(alloc_ud, p, n ? n : 1);
    if (!q)
        alloc_failures++;
    return q;
}

void sc_free(void *p)
{
    if (p)
        alloc_fn(alloc_ud, p, 0);
}

char *sc_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = sc_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- files ----------------------------------------------------------------- */

const char *sc_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

sc_status sc_read_file(const char *path, size_t max_bytes, char **out, size_t *len,
                       sc_error *err)
{
    *out = NULL;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return sc_err(err, SC_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 65536, n = 0;
    char *buf = sc_malloc(cap);
    if (!buf) {
        if (f != stdin)
            fclose(f);
        return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max_bytes) {
                sc_free(buf);
                if (f != stdin)
                    fclose(f);
                return sc_err(err, SC_EINVAL, "%s: file is larger than the %zu-byte limit",
                              path, max_bytes);
            }
            char *nb = sc_realloc(buf, cap * 2);
            if (!nb) {
                sc_free(buf);
                if (f != stdin)
                    fclose(f);
                return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    if (f != stdin)
        fclose(f);
    if (bad) {
        sc_free(buf);
        return sc_err(err, SC_EIO, "%s: read error", path);
    }
    if (n > max_bytes) {
        sc_free(buf);
        return sc_err(err, SC_EINVAL, "%s: file is larger than the %zu-byte limit", path,
                      max_bytes);
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return SC_OK;
}

sc_status sc_write_file_atomic(const char *path, const void *data, size_t len, sc_error *err)
{
    if (strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            return sc_err(err, SC_EIO, "<stdout>: write error");
        return SC_OK;
    }
    size_t pl = strlen(path);
    char *tmp = sc_malloc(pl + 16);
    if (!tmp)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
    snprintf(tmp, pl + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        sc_status st = sc_err(err, SC_EIO, "%s: cannot create: %s", path, strerror(errno));
        sc_free(tmp);
        return st;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            sc_status st = sc_err(err, SC_EIO, "%s: write error: %s", path, strerror(errno));
            close(fd);
            unlink(tmp);
            sc_free(tmp);
            return st;
        }
        p += w;
        left -= (size_t)w;
    }
    fchmod(fd, 0644);
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        sc_status st = sc_err(err, SC_EIO, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        sc_free(tmp);
        return st;
    }
    sc_free(tmp);
    return SC_OK;
}

/* ---- buffers --------------------------------------------------------------- */

void sc_buf_vprintf(sc_buf *b, const char *fmt, va_list ap)
{
    if (b->oom)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    int need = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (need < 0)
        return;
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + (size_t)need + 1)
            nc *= 2;
        char *ns = sc_realloc(b->s, nc);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    b->len += (size_t)need;
}

void sc_buf_printf(sc_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sc_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void sc_buf_free(sc_buf *b)
{
    sc_free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}
