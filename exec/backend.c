/* backend.c - the backend registry and the helpers every backend shares. */
#include "backend.h"
#include "exec_int.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

/* OpenBLAS's own queries (declared here: not every cblas.h has them). The
 * library always links OpenBLAS (Makefile), whatever the backend. */
char *openblas_get_corename(void);
char *openblas_get_config(void);
int openblas_get_num_threads(void);

const sc_backend *sc_backend_find(const char *name)
{
    if (!name)
        return NULL;
    if (!strcmp(name, "cpu"))
        return &sc_backend_cpu;
    if (!strcmp(name, "cuda"))
        return &sc_backend_cuda;
    return NULL;
}

size_t sc_backend_elem_bytes(sc_dtype dt)
{
    switch (dt) {
    case SC_FP16:
    case SC_BF16:
        return 2;
    case SC_FP8:
        return 1;
    default:
        return 4;
    }
}

uint64_t sc_backend_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

double sc_exec_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sc_exec_relax(long *polls)
{
    if (++*polls < 64) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 20000}; /* 20 us: ranks may share cores */
    nanosleep(&ts, NULL);
}

/* Copies src into dst (cap bytes) with control characters (which the file
 * readers refuse) turned into spaces and trailing blanks dropped. */
static void clean_copy(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; src && src[n] && n + 1 < cap; n++)
        dst[n] = (unsigned char)src[n] < 0x20 ? ' ' : src[n];
    while (n > 0 && dst[n - 1] == ' ')
        n--;
    dst[n] = '\0';
}

/* The CPU model of this host: /proc/cpuinfo's "model name" (x86), else its
 * "Hardware" or "CPU part" line, else the machine name of uname. */
static void cpu_model(char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    static const char *const keys[] = {"model name", "Hardware", "CPU part"};
    for (size_t k = 0; f && k < SC_ARRAY_LEN(keys) && !out[0]; k++) {
        rewind(f);
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, keys[k], strlen(keys[k])))
                continue;
            const char *c = strchr(line, ':');
            if (!c)
                continue;
            c++;
            while (*c == ' ' || *c == '\t')
                c++;
            line[strcspn(line, "\n")] = '\0';
            clean_copy(out, cap, c);
            break;
        }
    }
    if (f)
        fclose(f);
    struct utsname u;
    if (!out[0] && uname(&u) == 0)
        clean_copy(out, cap, u.machine);
}

void sc_backend_host_provenance(sc_provenance *p)
{
    memset(p, 0, sizeof *p);
    p->present = 1;
    cpu_model(p->cpu, sizeof p->cpu);
    clean_copy(p->blas, sizeof p->blas, openblas_get_config());
    clean_copy(p->blas_core, sizeof p->blas_core, openblas_get_corename());
    p->blas_threads = openblas_get_num_threads();
    static const char *const env[] = SC_PROVENANCE_ENV;
    for (size_t i = 0; i < SC_ARRAY_LEN(env) && p->n_env < SC_PROVENANCE_ENV_MAX; i++) {
        const char *v = getenv(env[i]);
        if (!v)
            continue;
        char kv[sizeof p->env[0]];
        snprintf(kv, sizeof kv, "%s=%s", env[i], v);
        clean_copy(p->env[p->n_env++], sizeof p->env[0], kv);
    }
}

sc_status sc_backend_gather_provenance(const sc_backend *be, sc_bk *bk, double deadline,
                                       sc_provenance *out, sc_error *err)
{
    be->provenance(bk, out);
    int n = be->size(bk), rank = be->rank(bk);
    if (n <= 1)
        return SC_OK;
    sc_provenance *all = rank == 0 ? sc_calloc((size_t)n, sizeof *all) : NULL;
    if (rank == 0 && !all) /* the others time out in the gather */
        return sc_err(err, SC_ENOMEM, "out of memory");
    sc_status st = be->gather_host(bk, out, sizeof *out, all, 0, deadline, err);
    for (int r = 1; !st && all && r < n; r++) {
        char why[200];
        if (sc_provenance_conflict(&all[r], out, why, sizeof why)) {
            snprintf(out->mixed, sizeof out->mixed, "rank %d: %.200s (rank 0)", r, why);
            break;
        }
    }
    sc_free(all);
    return st;
}
