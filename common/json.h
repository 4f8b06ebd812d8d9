/* json.h - validating readers over cJSON that name the file and the JSON path
 * of anything wrong, and whole-or-nothing writers.
 *
 * Every reader returns SC_OK, or an error whose message reads
 *   "FILE: PATH.KEY: what is wrong"
 * Absent optional fields leave *out untouched and return SC_OK.
 * Strings returned point into the cJSON tree (owned by it).
 */
#ifndef SC_JSON_H
#define SC_JSON_H

#include <cjson/cJSON.h>
#include "sc.h"

/* Routes cJSON's allocations through the sc allocation hook. Idempotent. */
void sc_json_init(void);

/* Parses text[0..len) (a copy is parsed, so text need not be
 * NUL-terminated); on a syntax error reports line and column. Rejects input
 * larger than 64 MiB, and (SC_EPARSE, naming the file, the JSON path of the
 * string, line and column) any string, key or value, that holds the escape
 * \u0000 (cJSON would cut the string there) or bytes that are not UTF-8.
 * O(len). The caller frees *out with cJSON_Delete. */
/* The string rule of every loader, for a reader that scans text itself (the
 * streaming timeline reader): SC_EPARSE naming the file, the JSON path, line
 * and column of a \u0000 or of a byte that is not UTF-8 inside a string. */
sc_status sc_json_check_strings(const char *file, const char *text, size_t len,
                                sc_error *err);
sc_status sc_json_parse(const char *file, const char *text, size_t len, cJSON **out,
                        sc_error *err);
/* Reads and parses a file. */
sc_status sc_json_load(const char *file, cJSON **out, sc_error *err);
/* cJSON prints a double with 15 significant digits whenever they read back
 * within one rounding step, which is not exact. This turns every number
 * that needs 16 or 17 digits into a raw node holding its exact text, so
 * printing round-trips every double. Call it right before printing: the
 * nodes it changes are no longer cJSON numbers. SC_ENOMEM or SC_OK. */
sc_status sc_json_exact(cJSON *root);
/* Prints exactly (sc_json_exact, so root's numbers may become raw nodes)
 * and writes whole-or-nothing (temp file + rename). */
sc_status sc_json_save(const char *file, cJSON *root, sc_error *err);

/* Checks root is an object whose "format" equals want ("stagecraft.model/1"). */
sc_status sc_json_format(const cJSON *root, const char *file, const char *want,
                         sc_error *err);

/* Fails on keys not in allowed (NULL-terminated), and on duplicate keys.
 * Keys starting with "x-" or named "comment" are always allowed. */
sc_status sc_json_keys(const cJSON *obj, const char *file, const char *path,
                       const char *const *allowed, sc_error *err);

sc_status sc_json_num(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, double lo, double hi, double *out, sc_error *err);
sc_status sc_json_int(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, long lo, long hi, long *out, sc_error *err);
sc_status sc_json_str(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, size_t maxlen, const char **out, sc_error *err);
sc_status sc_json_bool(const cJSON *obj, const char *file, const char *path, const char *key,
                       int required, int *out, sc_error *err);
/* Gets a child that must be an object (or array); *out NULL if absent. */
sc_status sc_json_obj(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, const cJSON **out, sc_error *err);
sc_status sc_json_arr(const cJSON *obj, const char *file, const char *path, const char *key,
                      int required, const cJSON **out, sc_error *err);

/* Builders that record the first allocation failure in *oom. */
cJSON *sc_jadd_num(cJSON *obj, const char *key, double v, int *oom);
cJSON *sc_jadd_str(cJSON *obj, const char *key, const char *v, int *oom);
cJSON *sc_jadd_bool(cJSON *obj, const char *key, int v, int *oom);
cJSON *sc_jadd_obj(cJSON *obj, const char *key, int *oom);
cJSON *sc_jadd_arr(cJSON *obj, const char *key, int *oom);
/* Appends a new object (a number, a string) to array arr; NULL and *oom = 1 on failure. */
cJSON *sc_jpush_obj(cJSON *arr, int *oom);
cJSON *sc_jpush_num(cJSON *arr, double v, int *oom);
cJSON *sc_jpush_str(cJSON *arr, const char *v, int *oom);
cJSON *sc_jpush_arr(cJSON *arr, int *oom);

/* Hex SHA-256-free content digest (FNV-1a 64) of a cJSON tree printed
 * unformatted: stable across runs, used to tie plans to their inputs. */
sc_status sc_json_digest(const cJSON *root, char out[17]);

#endif
