/* validate_by.h - `validate --by KEY[,KEY...]`: the rows' errors grouped by
 * what the rows are (their sequence length, GPU count, cluster, ...), one
 * line per distinct value (or combination of values): how many rows, MAPE,
 * mean signed error, the most negative and the most positive error.
 *
 * This is how a regime the model gets wrong shows itself (a sequence length,
 * a microbatch size, a kernel): docs/accuracy.md, "The MPT tables beyond the
 * suite", grouped by cluster and sequence.
 *
 * Keys: suite, cluster, model, seq, gpus, dp, tp, pp, cp, mbs, recompute, sp,
 * attention, framework. Groups are sorted by their values, numbers as
 * numbers and the digits inside names too (strverscmp: "l48" before "l105"). */
#ifndef SC_VALIDATE_BY_H
#define SC_VALIDATE_BY_H

#include "json.h"
#include "validate.h"

#include <stddef.h>

#define VBY_MAX_KEYS 4

typedef struct vby {
    int n;                   /* keys given; 0: no --by */
    int keys[VBY_MAX_KEYS];  /* indexes into the key table */
} vby;

/* The keys, comma-separated, for messages and --help. */
const char *vby_key_names(void);

/* Parses "seq" or "cluster,seq" into *by: 0, or -1 with a one-line reason in
 * msg (an unknown key, one given twice, more than VBY_MAX_KEYS, an empty
 * one). */
int vby_parse(const char *arg, vby *by, char *msg, size_t cap);

/* The grouped table on standard output (text), after a header line naming
 * the keys. res[k] and errs[k] are row k of the suites in order. 0, or -1 out
 * of memory (nothing printed then). */
int vby_print(const vby *by, sc_val_suite *const *suites, int n, const sc_val_result *res,
              const double *errs);

/* The same as JSON: adds "by": {"keys": [...], "groups": [{KEY: value, ...,
 * "rows", "mape", "mean_signed_error", "max_abs_error", "min_error",
 * "max_error"}]} to j (errors as fractions; numeric keys as numbers). *oom
 * is set on failure. */
void vby_json(cJSON *j, const vby *by, sc_val_suite *const *suites, int n,
              const sc_val_result *res, const double *errs, int *oom);

#endif
