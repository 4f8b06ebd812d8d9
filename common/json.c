/* json.c - validating JSON readers, see json.h. */
#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define SC_JSON_MAX_BYTES (64u << 20)

static void *hook_malloc(size_t n) { return sc_malloc(n); }
static void hook_free(void *p) { sc_free(p); }

void sc_json_init(void)
{
    static int done;
    if (done)
        return;
    cJSON_Hooks h = {hook_malloc, hook_free};
    cJSON_InitHooks(&h);
    done = 1;
}

static const char *dot(const char *path) { return path && *path ? "." : ""; }
static const char *nz(const char *path) { return path ? path : ""; }

/* ---- strings cJSON passes on silently -------------------------------------------
 * cJSON decodes the escape \u0000 into a NUL inside the C string it makes,
 * so "cpu\u0000evil" reads as "cpu", and copies any bytes through, so text
 * that is not UTF-8 reaches the plans we write, which Python's json and
 * every other UTF-8 reader then refuse. Both are refused here, on the raw
 * text of each string token (keys and values alike). */

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c == 0xE0)
        n = 3, lo = 0xA0;
    else if (c == 0xED)
        n = 3, hi = 0x9F; /* not U+D800..U+DFFF */
    else if (c >= 0xE1 && c <= 0xEF)
        n = 3;
    else if (c == 0xF0)
        n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
        n = 4;
    else if (c == 0xF4)
        n = 4, hi = 0x8F; /* not past U+10FFFF */
    else
        return 0;
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* The end (the closing quote) of the string token opening at text[i]. */
static size_t string_end(const char *text, size_t len, size_t i)
{
    for (i++; i < len && text[i] != '"'; i++)
        if (text[i] == '\\')
            i++;
    return i;
}

/* First bad string of text: sets *start to its opening quote, *at to the
 * offending byte and *nul to 1 for \u0000, 0 for a UTF-8 error. Returns 1
 * if there is one. text has parsed, so its tokens are well formed. */
static int bad_string(const char *text, size_t len, size_t *start, size_t *at, int *nul)
{
    const unsigned char *u = (const unsigned char *)text, *end = u + len;
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '"')
            continue;
        size_t close = string_end(text, len, i);
        for (size_t k = i + 1; k < close;) {
            if (text[k] == '\\') {
                if (k + 5 < close && text[k + 1] == 'u' && !memcmp(text + k + 2, "0000", 4)) {
                    *start = i, *at = k, *nul = 1;
                    return 1;
                }
                k += text[k + 1] == 'u' ? 6 : 2;
                continue;
            }
            size_t n = utf8_seq(u + k, end);
            if (!n) {
                *start = i, *at = k, *nul = 0;
                return 1;
            }
            k += n;
        }
        i = close;
    }
    return 0;
}

/* Appends the raw text of a key (escapes as written, bytes outside
 * printable ASCII as \xHH) to b. */
static void put_key(sc_buf *b, const char *k, size_t n)
{
    for (size_t i = 0; i < n && i < 64; i++) {
        unsigned char c = (unsigned char)k[i];
        if (c < 0x20 || c >= 0x7f)
            sc_buf_printf(b, "\\x%02x", c);
        else
            sc_buf_printf(b, "%c", c);
    }
    if (n > 64)
        sc_buf_printf(b, "...");
}

/* The JSON path (root.children[3].name) of the string token at offset
 * target, in the style of the readers' messages; a key gets " (a key)".
 * Walks the parsed text once, keeping the path of the open containers. */
static void path_of(const char *text, size_t len, size_t target, sc_buf *b)
{
    enum { MAXD = CJSON_NESTING_LIMIT + 1 }; /* cJSON parsed no deeper */
    size_t *saved = sc_malloc(sizeof *saved * MAXD);
    long *index = sc_malloc(sizeof *index * MAXD);
    char *is_arr = sc_malloc(MAXD);
    if (!saved || !index || !is_arr) {
        b->oom = 1;
        goto done;
    }
    int d = 0, want_key = 0;
    const char *key = NULL;
    size_t keyn = 0;
    /* component of the value starting now, appended to the path */
    #define PUT_COMPONENT()                                                    \
        do {                                                                   \
            if (d > 0 && is_arr[d - 1])                                        \
                sc_buf_printf(b, "[%ld]", index[d - 1]);                       \
            else if (d > 0) {                                                  \
                if (b->len)                                                    \
                    sc_buf_printf(b, ".");                                     \
                put_key(b, key, keyn);                                         \
            }                                                                  \
        } while (0)
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '"') {
            size_t close = string_end(text, len, i);
            if (d > 0 && !is_arr[d - 1] && want_key) {
                if (i == target) {
                    if (b->len)
                        sc_buf_printf(b, ".");
                    put_key(b, text + i + 1, close - i - 1);
                    sc_buf_printf(b, " (a key)");
                    goto done;
                }
                key = text + i + 1, keyn = close - i - 1;
                want_key = 0;
            } else if (i == target) {
                PUT_COMPONENT();
                goto done;
            }
            i = close;
        } else if (c == '{' || c == '[') {
            if (d >= MAXD)
                goto done;
            saved[d] = b->len;
            PUT_COMPONENT();
            is_arr[d] = c == '[';
            index[d] = 0;
            d++;
            want_key = c == '{';
        } else if (c == '}' || c == ']') {
            if (d > 0) {
                b->len = saved[--d];
                if (b->s)
                    b->s[b->len] = '\0';
            }
        } else if (c == ',') {
            if (d > 0 && is_arr[d - 1])
                index[d - 1]++;
            else
                want_key = 1;
        }
    }
    #undef PUT_COMPONENT
done:
    sc_free(saved);
    sc_free(index);
    sc_free(is_arr);
}

sc_status sc_json_check_strings(const char *file, const char *text, size_t len, sc_error *err)
{
    size_t start, at;
    int nul;
    if (!bad_string(text, len, &start, &at, &nul))
        return SC_OK;
    sc_buf b = {0};
    path_of(text, len, start, &b);
    const char *path = b.s && b.len ? b.s : "(top level)";
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n')
            line++, col = 1;
        else
            col++;
    }
    sc_status st;
    if (b.oom)
        st = sc_err(err, SC_ENOMEM, "%s: out of memory while checking strings", file);
    else if (nul)
        st = sc_err(err, SC_EPARSE,
                    "%s: %s: the string contains \\u0000, a NUL character that would cut it "
                    "short (line %zu, column %zu)",
                    file, path, line, col);
    else
        st = sc_err(err, SC_EPARSE,
                    "%s: %s: the string is not valid UTF-8 (byte 0x%02x at line %zu, column %zu)",
                    file, path, (unsigned char)text[at], line, col);
    sc_buf_free(&b);
    return st;
}

sc_status sc_json_parse(const char *file, const char *text, size_t len, cJSON **out,
                        sc_error *err)
{
    sc_json_init();
    *out = NULL;
    if (len > SC_JSON_MAX_BYTES)
        return sc_err(err, SC_EINVAL, "%s: larger than %u bytes", file, SC_JSON_MAX_BYTES);
    if (memchr(text, '\0', len))
        return sc_err(err, SC_EPARSE, "%s: not JSON: contains a NUL byte", file);
    /* Parse a NUL-terminated copy: cJSON reads one byte past an unterminated
     * buffer (found by fuzzing) and wants the NUL inside the length. */
    char *copy = sc_malloc(len + 1);
    if (!copy)
        return sc_err(err, SC_ENOMEM, "%s: out of memory while parsing", file);
    memcpy(copy, text, len);
    copy[len] = '\0';
    const char *end = NULL;
    long fails = sc_alloc_failures();
    cJSON *root = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
    if (end)
        end = text + (end - copy);
    sc_free(copy);
    if (!root) {
        if (!end || sc_alloc_failures() != fails) /* cJSON folds OOM into syntax errors */
            return sc_err(err, SC_ENOMEM, "%s: out of memory while parsing", file);
        size_t off = (size_t)(end - text), line = 1, col = 1;
        for (size_t i = 0; i < off && i < len; i++) {
            if (text[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        if (off >= len || text[off] == '\0')
            return sc_err(err, SC_EPARSE, "%s: invalid JSON: unexpected end of input (line %zu)",
                          file, line);
        return sc_err(err, SC_EPARSE, "%s: invalid JSON at line %zu, column %zu", file, line,
                      col);
    }
    sc_status st = sc_json_check_strings(file, text, len, err);
    if (st) {
        cJSON_Delete(root);
        return st;
    }
    *out = root;
    return SC_OK;
}

sc_status sc_json_load(const char *file, cJSON **out, sc_error *err)
{
    char *text;
    size_t len;
    *out = NULL;
    sc_status st = sc_read_file(file, SC_JSON_MAX_BYTES, &text, &len, err);
    if (st)
        return st;
    st = sc_json_parse(file, text, len, out, err);
    sc_free(text);
    return st;
}

sc_status sc_json_exact(cJSON *node)
{
    for (; node; node = node->next) {
        if (cJSON_IsNumber(node) && isfinite(node->valuedouble)) {
            char buf[40];
            double v = node->valuedouble;
            int prec = 15;
            for (; prec <= 17; prec++) {
                snprintf(buf, sizeof buf, "%.*g", prec, v);
                if (strtod(buf, NULL) == v)
                    break;
            }
            if (prec > 15) {
                char *s = sc_strdup(buf);
                if (!s)
                    return SC_ENOMEM;
                node->type = cJSON_Raw;
                node->valuestring = s;
            }
        }
        if (node->child) {
            sc_status st = sc_json_exact(node->child);
            if (st)
                return st;
        }
    }
    return SC_OK;
}

sc_status sc_json_save(const char *file, cJSON *root, sc_error *err)
{
    sc_json_init();
    if (sc_json_exact(root))
        return sc_err(err, SC_ENOMEM, "%s: out of memory while printing JSON", file);
    char *s = cJSON_Print(root);
    if (!s)
        return sc_err(err, SC_ENOMEM, "%s: out of memory while printing JSON", file);
    size_t n = strlen(s);
    /* add the trailing newline a text file should have */
    char *t = sc_realloc(s, n + 2);
    if (!t) {
        sc_free(s);
        return sc_err(err, SC_ENOMEM, "%s: out of memory while printing JSON", file);
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    sc_status st = sc_write_file_atomic(file, t, n + 1, err);
    sc_free(t);
    return st;
}

sc_status sc_json_format(const cJSON *root, const char *file, const char *want, sc_error *err)
{
    if (!cJSON_IsObject(root))
        return sc_err(err, SC_EPARSE, "%s: top level must be a JSON object", file);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!f)
        return sc_err(err, SC_EPARSE, "%s: format: missing (expected \"%s\")", file, want);
    if (!cJSON_IsString(f))
        return sc_err(err, SC_EPARSE, "%s: format: must be a string (expected \"%s\")", file,
                      want);
    if (strcmp(f->valuestring, want) != 0) {
        /* same kind, other version: say so */
        size_t kl = strcspn(want, "/");
        if (strncmp(f->valuestring, want, kl) == 0 && f->valuestring[kl] == '/')
            return sc_err(err, SC_ENOTSUP,
                          "%s: format: unsupported version \"%.64s\" (this build reads \"%s\")",
                          file, f->valuestring, want);
        return sc_err(err, SC_EPARSE, "%s: format: \"%.64s\" is not \"%s\"", file,
                      f->valuestring, want);
    }
    return SC_OK;
}

sc_status sc_json_keys(const cJSON *obj, const char *file, const char *path,
                       const char *const *allowed, sc_error *err)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *k = c->string ? c->string : "";
        int ok = strcmp(k, "comment") == 0 || strncmp(k, "x-", 2) == 0;
        for (const char *const *a = allowed; !ok && *a; a++)
            ok = strcmp(k, *a) == 0;
        if (!ok)
            return sc_err(err, SC_EPARSE, "%s: %s%s%.64s: unknown field", file, nz(path),
                          dot(path), k);
        for (const cJSON *d = c->next; d; d = d->next)
            if (d->string && strcmp(d->string, k) == 0)
                return sc_err(err, SC_EPARSE, "%s: %s%s%.64s: duplicate field", file, nz(path),
                              dot(path), k);
    }
    return SC_OK;
}

static sc_status missing(const char *file, const char *path, const char *key, sc_error *err)
{
    return sc_err(err, SC_EPARSE, "%s: %s%s%s: missing", file, nz(path), dot(path), key);
}

sc_status sc_json_num(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, double lo, double hi, double *out, sc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return required ? missing(file, path, key, err) : SC_OK;
    if (!cJSON_IsNumber(v))
        return sc_err(err, SC_EPARSE, "%s: %s%s%s: must be a number", file, nz(path), dot(path),
                      key);
    double d = v->valuedouble;
    if (!isfinite(d))
        return sc_err(err, SC_EINVAL, "%s: %s%s%s: must be finite", file, nz(path), dot(path),
                      key);
    if (d < lo || d > hi)
        return sc_err(err, SC_EINVAL, "%s: %s%s%s: %g is out of range [%g, %g]", file, nz(path),
                      dot(path), key, d, lo, hi);
    *out = d;
    return SC_OK;
}

sc_status sc_json_int(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, long lo, long hi, long *out, sc_error *err)
{
    double d = 0;
    int present = cJSON_GetObjectItemCaseSensitive(obj, key) != NULL;
    sc_status st = sc_json_num(obj, file, path, key, required, (double)lo, (double)hi, &d, err);
    if (st || !present)
        return st;
    if (d != floor(d))
        return sc_err(err, SC_EINVAL, "%s: %s%s%s: %g must be an integer", file, nz(path),
                      dot(path), key, d);
    *out = (long)d;
    return SC_OK;
}

sc_status sc_json_str(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, size_t maxlen, const char **out, sc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return required ? missing(file, path, key, err) : SC_OK;
    if (!cJSON_IsString(v))
        return sc_err(err, SC_EPARSE, "%s: %s%s%s: must be a string", file, nz(path), dot(path),
                      key);
    size_t n = strlen(v->valuestring);
    if (n == 0)
        return sc_err(err, SC_EINVAL, "%s: %s%s%s: must not be empty", file, nz(path),
                      dot(path), key);
    if (n > maxlen)
        return sc_err(err, SC_EINVAL, "%s: %s%s%s: longer than %zu characters", file, nz(path),
                      dot(path), key, maxlen);
    for (const unsigned char *p = (const unsigned char *)v->valuestring; *p; p++)
        if (*p < 0x20)
            return sc_err(err, SC_EINVAL, "%s: %s%s%s: contains a control character", file,
                          nz(path), dot(path), key);
    *out = v->valuestring;
    return SC_OK;
}

sc_status sc_json_bool(const cJSON *obj, const char *file, const char *path, const char *key,
                       int required, int *out, sc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return required ? missing(file, path, key, err) : SC_OK;
    if (!cJSON_IsBool(v))
        return sc_err(err, SC_EPARSE, "%s: %s%s%s: must be true or false", file, nz(path),
                      dot(path), key);
    *out = cJSON_IsTrue(v);
    return SC_OK;
}

static sc_status typed(const cJSON *obj, const char *file, const char *path, const char *key,
                       int required, const cJSON **out, int want_arr, sc_error *err)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return required ? missing(file, path, key, err) : SC_OK;
    if (want_arr ? !cJSON_IsArray(v) : !cJSON_IsObject(v))
        return sc_err(err, SC_EPARSE, "%s: %s%s%s: must be %s", file, nz(path), dot(path), key,
                      want_arr ? "an array" : "an object");
    *out = v;
    return SC_OK;
}

sc_status sc_json_obj(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, const cJSON **out, sc_error *err)
{
    return typed(obj, file, path, key, required, out, 0, err);
}

sc_status sc_json_arr(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, const cJSON **out, sc_error *err)
{
    return typed(obj, file, path, key, required, out, 1, err);
}

static cJSON *add(cJSON *obj, const char *key, cJSON *item, int *oom)
{
    if (!item || !obj || !cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        *oom = 1;
        return NULL;
    }
    return item;
}

cJSON *sc_jadd_num(cJSON *obj, const char *key, double v, int *oom)
{
    return add(obj, key, cJSON_CreateNumber(v), oom);
}
cJSON *sc_jadd_str(cJSON *obj, const char *key, const char *v, int *oom)
{
    return add(obj, key, cJSON_CreateString(v), oom);
}
cJSON *sc_jadd_bool(cJSON *obj, const char *key, int v, int *oom)
{
    return add(obj, key, cJSON_CreateBool(v), oom);
}
cJSON *sc_jadd_obj(cJSON *obj, const char *key, int *oom)
{
    return add(obj, key, cJSON_CreateObject(), oom);
}
cJSON *sc_jadd_arr(cJSON *obj, const char *key, int *oom)
{
    return add(obj, key, cJSON_CreateArray(), oom);
}

static cJSON *push(cJSON *arr, cJSON *item, int *oom)
{
    if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        *oom = 1;
        return NULL;
    }
    return item;
}

cJSON *sc_jpush_obj(cJSON *arr, int *oom)
{
    return push(arr, cJSON_CreateObject(), oom);
}
cJSON *sc_jpush_num(cJSON *arr, double v, int *oom)
{
    return push(arr, cJSON_CreateNumber(v), oom);
}
cJSON *sc_jpush_str(cJSON *arr, const char *v, int *oom)
{
    return push(arr, cJSON_CreateString(v), oom);
}
cJSON *sc_jpush_arr(cJSON *arr, int *oom)
{
    return push(arr, cJSON_CreateArray(), oom);
}

sc_status sc_json_digest(const cJSON *root, char out[17])
{
    sc_json_init();
    char *s = cJSON_PrintUnformatted(root);
    if (!s)
        return SC_ENOMEM;
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    sc_free(s);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    return SC_OK;
}
