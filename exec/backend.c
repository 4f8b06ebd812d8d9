/* backend.c - the backend registry and the helpers every backend shares. */
#include "backend.h"
#include "exec_int.h"

#include <sched.h>
#include <string.h>
#include <time.h>

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
