/* cli_limits.c - the memory cap and the progress lines of the commands, see
 * cli_limits.h. */
#include "cli_limits.h"
#include "cli.h"

#include "search.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

double cli_mem_default(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0)
        return 8.0 * 1024 * 1024 * 1024;
    return 0.5 * (double)pages * (double)size;
}

double cli_mem_cap(double given) { return given > 0 ? given : cli_mem_default(); }

int cli_parse_bytes(const char *cmd, const char *opt, const char *s, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(s ? s : "", &e);
    if (!s || e == s || errno || !isfinite(v))
        return cli_usage(cmd, "%s: '%s' is not a size (like 512M, 8G)", opt, s ? s : "");
    double k = 1;
    switch (*e) {
    case 'k': case 'K': k = 1024.0; e++; break;
    case 'm': case 'M': k = 1024.0 * 1024; e++; break;
    case 'g': case 'G': k = 1024.0 * 1024 * 1024; e++; break;
    case 't': case 'T': k = 1024.0 * 1024 * 1024 * 1024; e++; break;
    default: break;
    }
    if (*e == 'i' && e[1] == 'B')
        e += 2;
    else if (*e == 'B')
        e++;
    if (*e)
        return cli_usage(cmd, "%s: '%s' is not a size (like 512M, 8G)", opt, s);
    v *= k;
    if (v < 1024.0 * 1024 || v > 1e18)
        return cli_usage(cmd, "%s: %s is out of range [1M, 1e18 bytes]", opt, s);
    *out = v;
    return 0;
}

int cli_opt_bytes(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                  void *dst)
{
    return cli_parse_bytes(cmd, label, arg, (double *)((char *)dst + o->off));
}

double cli_wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int cli_search_progress_line(cli_progress *ps, const sc_search_progress *p)
{
    double t = cli_wall() - ps->t0;
    if (p->phase != ps->phase) {
        ps->phase = p->phase;
        ps->phase_t0 = t;
    }
    int last = p->phase == 1 && p->done == p->total;
    if (t < CLI_PROGRESS_AFTER_S || (!last && ps->lines && t - ps->last < CLI_PROGRESS_EVERY_S))
        return 0;
    if (last && !ps->lines)
        return 0; /* a search that ends without a line needs none */
    ps->last = t;
    ps->lines++;
    double in_phase = t - ps->phase_t0;
    double rate = in_phase > 0 ? p->done / in_phase : 0;
    char eta[64] = "";
    if (p->fraction > 0.005 && p->fraction < 1)
        snprintf(eta, sizeof eta, ", about %.0f s left to %s",
                 in_phase * (1 - p->fraction) / p->fraction, p->phase ? "simulate" : "partition");
    fprintf(stderr, "%s: %s %ld/%ld %s, %.1f/s, %.0f s elapsed%s\n", ps->cmd,
            p->phase ? "simulated" : "partitioned", p->done, p->total,
            p->phase ? "candidates" : "shapes", rate, t, eta);
    fflush(stderr);
    return 1;
}
