/* sc.h - status codes, error messages, the allocation hook and small file
 * helpers shared by every stagecraft module.
 *
 * Ownership: nothing here keeps global state except the allocation hook.
 * Errors: every fallible call returns an sc_status and, when given a non-NULL
 * sc_error, fills it with one line naming the file, the JSON path and what is
 * wrong. The library never exits; only main() decides that.
 */
#ifndef SC_H
#define SC_H

#include <stddef.h>
#include <stdarg.h>

typedef enum sc_status {
    SC_OK = 0,
    SC_ENOMEM,   /* an allocation failed */
    SC_EINVAL,   /* a value is out of range or inconsistent */
    SC_EPARSE,   /* malformed input (JSON syntax, wrong type) */
    SC_EIO,      /* a file could not be read or written */
    SC_ENOTSUP,  /* built without the feature, or not supported */
    SC_ENOTFOUND,/* no such built-in or preset */
    SC_ECUDA,
    SC_ENCCL,
    SC_EMPI,
    SC_ENOFIT,   /* the work does not fit in device memory */
    SC_EGATE     /* a fit refused by calibration's quality gates (calibrate.h) */
} sc_status;

#define SC_ERRMSG_MAX 1024

typedef struct sc_error {
    sc_status status;
    char msg[SC_ERRMSG_MAX];
} sc_error;

/* Sets err (if non-NULL) to status and a printf-formatted message; returns
 * status so callers can write `return sc_err(err, SC_EINVAL, "...")`. */
sc_status sc_err(sc_error *err, sc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes an existing message with "PREFIX: ". */
void sc_err_prefix(sc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sc_err_clear(sc_error *err);
const char *sc_status_name(sc_status s);
/* bytes for a person: whole bytes below 1 KiB ("512 B"), else the largest
 * of KiB, MiB, GiB, TiB, PiB it reaches with `decimals` places ("1.0 MiB"
 * at 1, "2.45 GiB" at 2: a 1 MiB limit does not read "0.0 GiB"); returns
 * buf. cli_bytes is this at 2 places. */
const char *sc_fmt_bytes(double bytes, int decimals, char buf[32]);
/* The index of the name in names[0..n) s most likely meant (a "did you
 * mean" for unknown names), case ignored: the shortest name that begins
 * with s (of 3 characters or more), else the closest by edit distance
 * (insertions, deletions, substitutions, swaps of neighbours) when near
 * enough to be a typo: at most 2 edits, and fewer than half of s's length;
 * else the shortest name s is a whole '-'-separated word of ("batch" is
 * global-batch, "a100" dgx-a100-80g); -1 when none is. */
int sc_closest_name(const char *s, const char *const *names, int n);
/* " (did you mean PRE NAME?)" into buf for the name sc_closest_name picks,
 * "" when none; returns buf (cap at least 1). */
const char *sc_did_you_mean(const char *s, const char *const *names, int n, const char *pre,
                            char *buf, size_t cap);
/* Whether a name_or_file argument that could not be opened reads as a name
 * (no '/' and no ".json" ending) rather than as a path. */
int sc_reads_as_name(const char *s);
/* The length of the decimal number s begins with: an optional sign, digits
 * with at most one '.' (at least one digit), an optional exponent e[+-]DIGITS;
 * 0 when s does not begin with one. Number options read with strtod take
 * only what this accepts: strtod also reads leading blanks, hex ("0x10" is
 * 16), "inf" and "nan", which no one means on a command line. */
size_t sc_decimal_len(const char *s);
/* SC_ENOTFOUND for s, neither one of names[0..n) nor a file: "S: no WHAT of
 * that name and no such file (did you mean NAME? `LIST` lists them)". */
sc_status sc_err_unknown_name(sc_error *err, const char *s, const char *what,
                              const char *const *names, int n, const char *list);

/* ---- allocation hook ----------------------------------------------------
 * Every allocation of the library goes through sc_malloc/sc_calloc/
 * sc_realloc/sc_free (and cJSON through them too, see sc_json_init). Tests
 * install a hook that fails the Nth allocation to check error paths. */
typedef void *(*sc_alloc_fn)(void *ud, void *ptr, size_t size); /* size 0 = free */
void sc_set_alloc(sc_alloc_fn fn, void *ud); /* NULL restores the default */
void *sc_malloc(size_t n);
void *sc_calloc(size_t n, size_t size);
void *sc_realloc(void *p, size_t n);
/* Grows each of the n parallel arrays *arrs[i] (element sizes sz[i]) to hold
 * need elements, doubling from *cap (16 when 0); *cap is updated only when
 * every one grew (the ones that did keep their new size). 0, or -1 out of
 * memory or past INT32_MAX elements. */
int sc_grow_arrays(void ***arrs, const size_t *sz, int n, int need, int *cap);
void sc_free(void *p);
char *sc_strdup(const char *s);
/* Test helper: make the Nth allocation from now fail (0 disables). Counts
 * allocations through the default allocator. */
void sc_alloc_fail_at(long n);
long sc_alloc_count(void);
/* How many allocations have failed so far (any allocator): lets callers of
 * libraries that fold allocation failure into other errors tell them apart. */
long sc_alloc_failures(void);

/* ---- files --------------------------------------------------------------- */
/* Reads a whole file (at most max_bytes) into a NUL-terminated buffer the
 * caller frees with sc_free. "-" reads standard input, once a process: a second "-"
 * is refused (SC_EINVAL) rather than read as an empty file. Errors: SC_ENOTFOUND
 * when path does not exist (ENOENT, ENOTDIR), SC_EIO when it cannot be
 * opened or read otherwise, SC_EINVAL past max_bytes, SC_ENOMEM. */
sc_status sc_read_file(const char *path, size_t max_bytes, char **out,
                       size_t *len, sc_error *err);
/* Writes data to path; every file stagecraft writes goes through here
 * (sc_json_save, the plots, the sets of sc_outdir), so one rule holds:
 *   - a regular file, or a name that does not exist yet: whole or not at
 *     all. A temporary file PATH.tmpXXXXXX beside it is written, fsync'd,
 *     given mode 0666 less the umask (a replaced file's own mode is not
 *     kept), renamed over PATH, and the folder fsync'd. On failure, and on
 *     SIGINT, SIGTERM or SIGHUP meanwhile (sc_tmp_register), the temporary
 *     file is removed and PATH is as it was.
 *   - a symbolic link: followed (dangling or not, at most 40 links) and the
 *     file it ends at is replaced as above; the link stays a link.
 *   - a character device or a FIFO (/dev/null, a copy of /dev/full, a named
 *     pipe): written through (opened for writing, never created, truncated
 *     or replaced). Not whole-or-nothing: a failure may leave part written,
 *     as with any write to a device. A FIFO waits for its reader.
 *   - "-", /dev/stdout, /dev/fd/N, /proc/self/fd/N: written to that
 *     descriptor of this process (stdio's buffer for it flushed first).
 *   - a folder, a block device, a socket, anything else under /proc:
 *     refused (SC_EINVAL), nothing written.
 * Errors: SC_EIO naming path ("PATH: cannot create: REASON", "PATH: write
 * error: REASON"; "stdout: write error: REASON" for standard output),
 * SC_EINVAL as above, SC_ENOMEM. */
sc_status sc_write_file_atomic(const char *path, const void *data, size_t len,
                               sc_error *err);

/* How sc_write_file_atomic would write path, for a caller that stages
 * several outputs itself (cli/cli_outputs.h): SC_OUT_REPLACE (a regular
 * file or a new name; *target is the name at the end of any symbolic links,
 * the one to replace), SC_OUT_THROUGH (a character device or a FIFO) or
 * SC_OUT_FD (a descriptor of this process, *fd; "-" is 1, standard output;
 * *fd is -1 for the other kinds). *target, set for every kind, is the
 * caller's to sc_free. Refuses what the write refuses, with the same
 * errors. */
enum { SC_OUT_REPLACE, SC_OUT_THROUGH, SC_OUT_FD };
sc_status sc_output_kind(const char *path, char **target, int *kind, int *fd, sc_error *err);

/* Temporary files removed when the process is killed by SIGINT, SIGTERM or
 * SIGHUP: sc_tmp_register records path (a file, or with is_dir an empty
 * folder, removed after the files) and returns a slot for
 * sc_tmp_unregister, or -1 when the table (64 slots) is full or the path
 * longer than 4095 bytes: that file is then not removed on a signal. The
 * first call installs a handler for those signals that have their default
 * action (one ignored or handled by someone else is left alone); it
 * unlinks and rmdirs what is registered (async-signal-safe calls only),
 * restores the default action and re-raises the signal, so the process
 * still dies of it. Thread-safe. sc_tmp_unregister(-1) does nothing. */
int sc_tmp_register(const char *path, int is_dir);
void sc_tmp_unregister(int slot);
/* mkstemp (or, with is_dir, mkdtemp) of template (ending in XXXXXX, which
 * it rewrites) and sc_tmp_register of the result, with those signals held
 * back in between so that none can leave the new file unregistered.
 * Returns the open descriptor of the file, 0 for a folder, or -1 with errno
 * set; *slot is the registration (-1 on failure or a full table). */
int sc_tmp_create(char *template, int is_dir, int *slot);

/* Basename of a path for messages (no allocation). */
const char *sc_basename(const char *path);

/* Growable string buffer; on allocation failure it sets oom and keeps going
 * silently so callers check once at the end. */
typedef struct sc_buf {
    char *s;
    size_t len, cap;
    int oom;
} sc_buf;
void sc_buf_printf(sc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sc_buf_vprintf(sc_buf *b, const char *fmt, va_list ap);
void sc_buf_free(sc_buf *b);

#define SC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
