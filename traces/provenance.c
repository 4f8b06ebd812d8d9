/* provenance.c - the "provenance" object of bench files and measured
 * timelines; see provenance.h. */
#include "provenance.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

/* The string fields, in the order of the file. */
typedef struct str_field {
    const char *key;
    size_t off, cap;
} str_field;

#define SF(name) {#name, offsetof(sc_provenance, name), sizeof(((sc_provenance *)0)->name)}
static const str_field fields[] = {SF(cpu),         SF(blas),        SF(blas_core),
                                   SF(mpi),         SF(nccl),        SF(cuda_device),
                                   SF(cuda_driver), SF(cuda_runtime), SF(mixed)};
#undef SF

static const char *field(const sc_provenance *p, const str_field *f)
{
    return (const char *)p + f->off;
}

void sc_provenance_to_json(const sc_provenance *p, cJSON *obj, int *oom)
{
    if (!p->present)
        return;
    cJSON *o = sc_jadd_obj(obj, "provenance", oom);
    if (!o)
        return;
    for (size_t i = 0; i < SC_ARRAY_LEN(fields); i++) {
        const char *s = field(p, &fields[i]);
        if (s[0])
            sc_jadd_str(o, fields[i].key, s, oom);
        if (!strcmp(fields[i].key, "blas_core") && p->blas_threads > 0)
            sc_jadd_num(o, "blas_threads", p->blas_threads, oom);
    }
    if (p->n_env > 0) {
        cJSON *a = sc_jadd_arr(o, "env", oom);
        for (int i = 0; a && i < p->n_env; i++)
            sc_jpush_str(a, p->env[i], oom);
    }
}

sc_status sc_provenance_from_json(const cJSON *obj, const char *file, sc_provenance *p,
                                  sc_error *err)
{
    static const char *const keys[] = {"cpu",         "blas",        "blas_core",
                                       "blas_threads", "mpi",         "nccl",        "cuda_device",
                                       "cuda_driver", "cuda_runtime", "env",
                                       "mixed",       NULL};
    memset(p, 0, sizeof *p);
    const cJSON *o = NULL, *env = NULL;
    sc_status st = sc_json_obj(obj, file, "", "provenance", 0, &o, err);
    if (st || !o)
        return st;
    st = sc_json_keys(o, file, "provenance", keys, err);
    for (size_t i = 0; !st && i < SC_ARRAY_LEN(fields); i++) {
        const char *s = NULL;
        st = sc_json_str(o, file, "provenance", fields[i].key, 0, fields[i].cap - 1, &s, err);
        if (!st && s)
            snprintf((char *)p + fields[i].off, fields[i].cap, "%s", s);
    }
    long threads = 0;
    if (!st)
        st = sc_json_int(o, file, "provenance", "blas_threads", 0, 1, 4096, &threads, err);
    p->blas_threads = (int)threads;
    if (!st)
        st = sc_json_arr(o, file, "provenance", "env", 0, &env, err);
    int i = 0;
    for (const cJSON *e = env ? env->child : NULL; !st && e; e = e->next, i++) {
        if (i >= SC_PROVENANCE_ENV_MAX) {
            st = sc_err(err, SC_EINVAL, "%s: provenance.env: more than %d entries", file,
                        SC_PROVENANCE_ENV_MAX);
            break;
        }
        const char *s = cJSON_IsString(e) ? e->valuestring : NULL;
        if (!s || !strchr(s, '=') || s[0] == '=' || strlen(s) >= sizeof p->env[0])
            st = sc_err(err, SC_EINVAL,
                        "%s: provenance.env[%d]: want a string NAME=VALUE of at most %zu "
                        "characters",
                        file, i, sizeof p->env[0] - 1);
        else
            snprintf(p->env[p->n_env++], sizeof p->env[0], "%s", s);
    }
    if (st) {
        memset(p, 0, sizeof *p);
        return st;
    }
    p->present = 1;
    return SC_OK;
}

int sc_provenance_conflict(const sc_provenance *a, const sc_provenance *b, char *why,
                           size_t cap)
{
    static const char *const compared[] = {"cpu", "blas", "blas_core", "mpi", "nccl",
                                           "cuda_device"};
    if (cap)
        why[0] = '\0';
    if (!a->present || !b->present)
        return 0;
    for (size_t k = 0; k < SC_ARRAY_LEN(compared); k++)
        for (size_t i = 0; i < SC_ARRAY_LEN(fields); i++) {
            if (strcmp(fields[i].key, compared[k]))
                continue;
            const char *x = field(a, &fields[i]), *y = field(b, &fields[i]);
            if (x[0] && y[0] && strcmp(x, y)) {
                snprintf(why, cap, "%s \"%s\" against \"%s\"", compared[k], x, y);
                return 1;
            }
        }
    if (a->blas_threads > 0 && b->blas_threads > 0 && a->blas_threads != b->blas_threads) {
        snprintf(why, cap, "blas_threads %d against %d", a->blas_threads, b->blas_threads);
        return 1;
    }
    return 0;
}
