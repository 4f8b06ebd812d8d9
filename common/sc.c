/* sc.c - errors, allocation hook, files. */
#include "sc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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

const char *sc_fmt_bytes(double bytes, int decimals, char buf[32])
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (fabs(bytes) >= 1024 && i < 5) {
        bytes /= 1024;
        i++;
    }
    snprintf(buf, 32, "%.*f %s", i ? decimals : 0, bytes, unit[i]);
    return buf;
}

/* Edit distance of a and b (insertions, deletions, substitutions and
 * swaps of neighbours: "plna" is one from "plan"), case ignored, given up
 * past cap (returns cap + 1); both at most 63 characters. */
static int edits(const char *a, const char *b, int cap)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63 || abs(la - lb) > cap)
        return cap + 1;
    int r0[64], r1[64], r2[64]; /* rows i-2, i-1, i */
    int *pp = r0, *p = r1, *c = r2;
    for (int j = 0; j <= lb; j++)
        p[j] = j;
    for (int i = 1; i <= la; i++) {
        c[0] = i;
        int low = i;
        int ai = tolower((unsigned char)a[i - 1]);
        for (int j = 1; j <= lb; j++) {
            int bj = tolower((unsigned char)b[j - 1]);
            int v = p[j - 1] + (ai != bj);
            if (p[j] + 1 < v)
                v = p[j] + 1;
            if (c[j - 1] + 1 < v)
                v = c[j - 1] + 1;
            if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == bj && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            c[j] = v;
            if (v < low)
                low = v;
        }
        if (low > cap)
            return cap + 1;
        int *t = pp;
        pp = p;
        p = c;
        c = t;
    }
    return p[lb];
}

int sc_closest_name(const char *s, const char *const *names, int n)
{
    int best = -1, bd = 3, len = s ? (int)strlen(s) : 0;
    /* a name s begins (the shortest): "dgx-a100" is dgx-a100-80g, not the
     * one edit away dgx-h100 */
    for (int i = 0; len >= 3 && i < n; i++)
        if (!strncasecmp(names[i], s, (size_t)len) &&
            (best < 0 || strlen(names[i]) < strlen(names[best])))
            best = i;
    if (best >= 0)
        return best;
    for (int i = 0; s && i < n; i++) {
        int d = edits(s, names[i], 2);
        if (d < bd && 2 * d < len) {
            bd = d;
            best = i;
        }
    }
    if (best >= 0 || len < 3)
        return best;
    /* a word of the name: what a user calls it for short */
    for (int i = 0; i < n; i++)
        for (const char *p = strchr(names[i], '-'); p; p = strchr(p + 1, '-'))
            if (!strncasecmp(p + 1, s, (size_t)len) && (p[len + 1] == '\0' || p[len + 1] == '-')) {
                if (best < 0 || strlen(names[i]) < strlen(names[best]))
                    best = i;
                break;
            }
    return best;
}

const char *sc_did_you_mean(const char *s, const char *const *names, int n, const char *pre,
                            char *buf, size_t cap)
{
    int k = sc_closest_name(s, names, n);
    buf[0] = '\0';
    if (k >= 0)
        snprintf(buf, cap, " (did you mean %s%s?)", pre, names[k]);
    return buf;
}

int sc_reads_as_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && !strchr(s, '/') && !(n >= 5 && !strcmp(s + n - 5, ".json"));
}

size_t sc_decimal_len(const char *s)
{
    if (!s)
        return 0;
    size_t i = (s[0] == '+' || s[0] == '-'), digits = 0;
    while (isdigit((unsigned char)s[i]))
        i++, digits++;
    if (s[i] == '.')
        for (i++; isdigit((unsigned char)s[i]); i++)
            digits++;
    if (!digits)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1 + (s[i + 1] == '+' || s[i + 1] == '-');
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
    }
    return i;
}

sc_status sc_err_unknown_name(sc_error *err, const char *s, const char *what,
                              const char *const *names, int n, const char *list)
{
    int k = sc_closest_name(s, names, n);
    return sc_err(err, SC_ENOTFOUND,
                  "%s: no %s of that name and no such file (%s%s%s`%s` lists them)", s, what,
                  k >= 0 ? "did you mean " : "", k >= 0 ? names[k] : "", k >= 0 ? "? " : "",
                  list);
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

int sc_grow_arrays(void ***arrs, const size_t *sz, int n, int need, int *cap)
{
    if (need <= *cap)
        return 0;
    long long nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    if (nc > INT32_MAX)
        return -1;
    for (int i = 0; i < n; i++) {
        void *p = sc_realloc(*arrs[i], (size_t)nc * sz[i]);
        if (!p)
            return -1;
        *arrs[i] = p;
    }
    *cap = (int)nc;
    return 0;
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

static sc_status too_large(const char *path, size_t max_bytes, sc_error *err)
{
    char b[32];
    return sc_err(err, SC_EINVAL, "%s: larger than the limit of %s on an input file", path,
                  sc_fmt_bytes((double)max_bytes, 0, b));
}

sc_status sc_read_file(const char *path, size_t max_bytes, char **out, size_t *len,
                       sc_error *err)
{
    *out = NULL;
    /* standard input can be read once: a second "-" would read nothing and
     * be reported as an empty or truncated file */
    static atomic_int stdin_taken;
    if (!strcmp(path, "-") && atomic_exchange(&stdin_taken, 1))
        return sc_err(err, SC_EINVAL, "-: standard input is read once, and another input of "
                                      "this command took it: give this one a file");
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) /* a name that is not there is the caller's mistake, not the system's */
        return sc_err(err, errno == ENOENT || errno == ENOTDIR ? SC_ENOTFOUND : SC_EIO,
                      "%s: cannot open: %s", path, strerror(errno));
    struct stat sb; /* fopen opens a folder for reading; its reads then fail */
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (f != stdin)
            fclose(f);
        return sc_err(err, SC_EINVAL, "%s: is a folder, not a file", path);
    }
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
                return too_large(path, max_bytes, err);
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
    int bad = ferror(f), e = errno;
    if (f != stdin)
        fclose(f);
    if (bad) {
        sc_free(buf);
        return sc_err(err, SC_EIO, "%s: read error: %s", path, strerror(e));
    }
    if (n > max_bytes) {
        sc_free(buf);
        return too_large(path, max_bytes, err);
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return SC_OK;
}

/* ---- temporary files removed on a signal ---------------------------------------
 * A fixed table, so that the handler touches no allocator: a slot is free
 * (0), being filled (1) or live (2). Only live slots are read by the
 * handler; a slot is filled completely before it goes live. */

#define TMP_SLOTS 64
#define TMP_PATH 4096

static struct {
    _Atomic int state;
    int dir;
    char path[TMP_PATH];
} tmp_slots[TMP_SLOTS];

static const int tmp_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void tmp_on_signal(int sig)
{
    int saved = errno;
    /* files first, then the folders they were in */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < TMP_SLOTS; i++)
            if (atomic_load(&tmp_slots[i].state) == 2 && tmp_slots[i].dir == pass) {
                if (pass)
                    rmdir(tmp_slots[i].path);
                else
                    unlink(tmp_slots[i].path);
            }
    /* die of the signal as if we had not caught it: the default action is
     * back, and the signal, blocked while we run, arrives when we return */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

static pthread_once_t tmp_once = PTHREAD_ONCE_INIT;

static void tmp_install(void)
{
    for (size_t i = 0; i < SC_ARRAY_LEN(tmp_signals); i++) {
        struct sigaction old, sa;
        if (sigaction(tmp_signals[i], NULL, &old) != 0)
            continue;
        /* a signal someone ignores or handles is theirs */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = tmp_on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < SC_ARRAY_LEN(tmp_signals); k++)
            sigaddset(&sa.sa_mask, tmp_signals[k]);
        sigaction(tmp_signals[i], &sa, NULL);
    }
}

int sc_tmp_register(const char *path, int is_dir)
{
    size_t n = strlen(path);
    if (n >= TMP_PATH)
        return -1;
    pthread_once(&tmp_once, tmp_install);
    for (int i = 0; i < TMP_SLOTS; i++) {
        int want = 0;
        if (atomic_compare_exchange_strong(&tmp_slots[i].state, &want, 1)) {
            memcpy(tmp_slots[i].path, path, n + 1);
            tmp_slots[i].dir = is_dir ? 1 : 0;
            atomic_store(&tmp_slots[i].state, 2);
            return i;
        }
    }
    return -1;
}

void sc_tmp_unregister(int slot)
{
    if (slot >= 0 && slot < TMP_SLOTS)
        atomic_store(&tmp_slots[slot].state, 0);
}

int sc_tmp_create(char *template, int is_dir, int *slot)
{
    *slot = -1;
    pthread_once(&tmp_once, tmp_install);
    /* a signal between creating and registering would leave the file: the
     * signals wait (in this thread) until it is registered */
    sigset_t hold, saved;
    sigemptyset(&hold);
    for (size_t i = 0; i < SC_ARRAY_LEN(tmp_signals); i++)
        sigaddset(&hold, tmp_signals[i]);
    pthread_sigmask(SIG_BLOCK, &hold, &saved);
    int fd = is_dir ? (mkdtemp(template) ? 0 : -1) : mkstemp(template);
    int e = errno;
    if (fd >= 0)
        *slot = sc_tmp_register(template, is_dir);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    errno = e;
    return fd;
}

/* ---- writing a file ---------------------------------------------------------- */

/* write(2) until done; 0 or an errno value. */
static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The process's umask, read without changing it (umask(2) can only set it,
 * and setting it to read it races with other threads creating files). */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        unsigned m;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Umask: %o", &m) == 1) {
                fclose(f);
                return (mode_t)m;
            }
        fclose(f);
    }
    mode_t m = umask(022); /* kernels before 4.7: no Umask line */
    umask(m);
    return m;
}

/* fsync of the folder holding file, so that a rename into it survives a
 * crash. Best effort: the file is in place whatever this returns. */
static void sync_parent(const char *file)
{
    const char *slash = strrchr(file, '/');
    char dir[TMP_PATH];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == file)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - file) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - file), file);
    else
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}


/* Where the bytes for path go (see sc_write_file_atomic): follows symbolic
 * links one at a time (dangling ones too) to the file to replace, or finds
 * that the name is a device or FIFO to write through, or a descriptor of
 * this process (/dev/stdout, /dev/fd/N, /proc/self/fd/N). *target (the
 * caller frees it) is the file to replace or to open; *fd the descriptor
 * for SC_OUT_FD. */
static sc_status out_target(const char *path, char **target, int *kind, int *fd, sc_error *err)
{
    *target = NULL;
    char *cur = sc_strdup(path);
    if (!cur)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
    for (int hops = 0;; hops++) {
        int n = -1, end = 0;
        if ((sscanf(cur, "/proc/self/fd/%d%n", &n, &end) == 1 ||
             sscanf(cur, "/dev/fd/%d%n", &n, &end) == 1) &&
            cur[end] == '\0' && n >= 0) {
            *kind = SC_OUT_FD;
            *fd = n;
            *target = cur;
            return SC_OK;
        }
        if (!strncmp(cur, "/proc/", 6)) {
            sc_status st = sc_err(err, SC_EINVAL, "%s: refusing to write under /proc (%s)",
                                  path, cur);
            sc_free(cur);
            return st;
        }
        struct stat sb;
        if (lstat(cur, &sb) != 0) { /* a new file, or a parent that is missing: */
            *kind = SC_OUT_REPLACE;    /* creating the temporary file says which */
            *target = cur;
            return SC_OK;
        }
        if (S_ISREG(sb.st_mode)) {
            *kind = SC_OUT_REPLACE;
            *target = cur;
            return SC_OK;
        }
        if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)) {
            *kind = SC_OUT_THROUGH;
            *target = cur;
            return SC_OK;
        }
        if (!S_ISLNK(sb.st_mode)) {
            const char *what = S_ISDIR(sb.st_mode)   ? "a folder"
                               : S_ISBLK(sb.st_mode) ? "a block device"
                               : S_ISSOCK(sb.st_mode) ? "a socket"
                                                      : "not a regular file";
            sc_status st = sc_err(err, SC_EINVAL, "%s: is %s: refusing to write over it", path,
                                  what);
            sc_free(cur);
            return st;
        }
        if (hops >= 40) {
            sc_free(cur);
            return sc_err(err, SC_EIO, "%s: cannot write: %s", path, strerror(ELOOP));
        }
        char link[TMP_PATH];
        ssize_t ln = readlink(cur, link, sizeof link - 1);
        if (ln < 0 || ln >= (ssize_t)sizeof link - 1) {
            sc_status st = sc_err(err, SC_EIO, "%s: cannot read the link %s: %s", path, cur,
                                  ln < 0 ? strerror(errno) : "too long");
            sc_free(cur);
            return st;
        }
        link[ln] = '\0';
        /* a relative link is relative to the folder holding it */
        const char *slash = strrchr(cur, '/');
        size_t keep = link[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = sc_malloc(keep + (size_t)ln + 1);
        if (!next) {
            sc_free(cur);
            return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
        }
        memcpy(next, cur, keep);
        memcpy(next + keep, link, (size_t)ln + 1);
        sc_free(cur);
        cur = next;
    }
}

sc_status sc_output_kind(const char *path, char **target, int *kind, int *fd, sc_error *err)
{
    *fd = -1;
    if (strcmp(path, "-") != 0)
        return out_target(path, target, kind, fd, err);
    *kind = SC_OUT_FD;
    *fd = STDOUT_FILENO;
    *target = sc_strdup(path);
    return *target ? SC_OK : sc_err(err, SC_ENOMEM, "%s: out of memory", path);
}

/* Temporary file beside target, written, synced, given the mode a new file
 * gets, renamed over target, the folder synced. Messages name path. */
static sc_status replace_file(const char *path, const char *target, const void *data,
                              size_t len, sc_error *err)
{
    size_t tl = strlen(target);
    char *tmp = sc_malloc(tl + 16);
    if (!tmp)
        return sc_err(err, SC_ENOMEM, "%s: out of memory", path);
    snprintf(tmp, tl + 16, "%s.tmpXXXXXX", target);
    int slot;
    int fd = sc_tmp_create(tmp, 0, &slot);
    if (fd < 0) {
        sc_status st = sc_err(err, SC_EIO, "%s: cannot create: %s", path, strerror(errno));
        sc_free(tmp);
        return st;
    }
    const char *what = "write error";
    int e = write_all(fd, data, len);
    /* mkstemp makes 0600; a new file is 0666 less the umask */
    if (!e && fchmod(fd, 0666 & ~current_umask()) != 0)
        e = errno, what = "cannot set the mode";
    if (!e && fsync(fd) != 0 && errno != EINVAL) /* EINVAL: cannot sync, nothing lost */
        e = errno, what = "write error";
    if (close(fd) != 0 && !e)
        e = errno, what = "write error";
    if (!e && rename(tmp, target) != 0)
        e = errno, what = "cannot write";
    if (e)
        unlink(tmp);
    sc_tmp_unregister(slot);
    sc_free(tmp);
    if (e)
        return sc_err(err, SC_EIO, "%s: %s: %s", path, what, strerror(e));
    sync_parent(target);
    return SC_OK;
}

sc_status sc_write_file_atomic(const char *path, const void *data, size_t len, sc_error *err)
{
    char *target = NULL;
    int kind = SC_OUT_FD, fd = STDOUT_FILENO;
    if (strcmp(path, "-") != 0) {
        sc_status st = out_target(path, &target, &kind, &fd, err);
        if (st)
            return st;
    }
    sc_status st = SC_OK;
    if (kind == SC_OUT_REPLACE) {
        st = replace_file(path, target, data, len, err);
    } else if (kind == SC_OUT_FD) {
        /* what stdio holds for that descriptor goes first */
        if (fd == STDOUT_FILENO)
            fflush(stdout);
        else if (fd == STDERR_FILENO)
            fflush(stderr);
        int e = write_all(fd, data, len);
        if (e)
            st = sc_err(err, SC_EIO, "%s: write error: %s",
                        fd == STDOUT_FILENO ? "stdout" : path, strerror(e));
    } else {
        /* a device or FIFO: written through, never replaced (/dev/null
         * stays a device; /dev/full says it is full) */
        int ofd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        int e = ofd < 0 ? errno : write_all(ofd, data, len);
        if (ofd >= 0 && close(ofd) != 0 && !e)
            e = errno;
        if (e)
            st = sc_err(err, SC_EIO, "%s: %s: %s", path,
                        ofd < 0 ? "cannot open" : "write error", strerror(e));
    }
    sc_free(target);
    return st;
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
