/* cli_limits.c - the memory cap and the progress lines of the commands, see
 * cli_limits.h. */
#include "cli_limits.h"
#include "cli.h"

#include "search.h"

#include <errno.h>
#include <pthread.h>
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
    if (!s || e == s || errno || !isfinite(v) || e != s + sc_decimal_len(s))
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

/* One heartbeat at a time: the lock guards the cli_progress it watches. */
static pthread_mutex_t hb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t hb_thread;
static volatile int hb_stop, hb_running;

/* Prints ps's line for its last report at time t (from ps->t0); hb: from
 * the heartbeat (the shape after the last is under way). Locked. */
static void print_line(cli_progress *ps, double t, int hb)
{
    ps->last = t;
    ps->lines++;
    if (!ps->have) {
        fprintf(stderr, "%s: enumerating, %.0f s elapsed\n", ps->cmd, t);
        fflush(stderr);
        return;
    }
    double in_phase = t - ps->phase_t0;
    double rate = in_phase > 0 ? ps->snap.done / in_phase : 0;
    char eta[64] = "", now[64] = "";
    double f = ps->snap.fraction;
    if (f > 0.005 && f < 1)
        snprintf(eta, sizeof eta, ", about %.0f s left to %s", in_phase * (1 - f) / f,
                 ps->snap.phase ? "simulate" : "partition");
    long left = ps->snap.total - ps->snap.done;
    long busy = ps->snap.workers < left ? ps->snap.workers : left;
    if (hb && busy > 1) /* which ones, the threads finishing out of order, is not known */
        snprintf(now, sizeof now, ", %ld %s under way", busy,
                 ps->snap.phase ? "candidates" : "shapes");
    else if (hb && left > 0)
        snprintf(now, sizeof now, ", %s %ld under way", ps->snap.phase ? "candidate" : "shape",
                 ps->snap.done + 1);
    fprintf(stderr, "%s: %s %ld/%ld %s, %.1f/s, %.0f s elapsed%s%s\n", ps->cmd,
            ps->snap.phase ? "simulated" : "partitioned", ps->snap.done, ps->snap.total,
            ps->snap.phase ? "candidates" : "shapes", rate, t, eta, now);
    fflush(stderr);
}

int cli_search_progress_line(cli_progress *ps, const sc_search_progress *p)
{
    pthread_mutex_lock(&hb_mu);
    double t = cli_wall() - ps->t0;
    if (p->phase != ps->phase || !ps->have) {
        if (p->phase != ps->phase)
            ps->phase_t0 = t;
        ps->phase = p->phase;
    }
    ps->have = 1;
    ps->snap.phase = p->phase;
    ps->snap.done = p->done;
    ps->snap.total = p->total;
    ps->snap.fraction = p->fraction;
    ps->snap.workers = p->workers;
    int last = p->phase == 1 && p->done == p->total;
    int due = t >= CLI_PROGRESS_AFTER_S &&
              (last || !ps->lines || t - ps->last >= CLI_PROGRESS_EVERY_S);
    /* a search that ends without a line needs none */
    int printed = due && !(last && !ps->lines);
    if (printed)
        print_line(ps, t, 0);
    pthread_mutex_unlock(&hb_mu);
    return printed;
}

static void *heartbeat(void *ud)
{
    cli_progress *ps = ud;
    struct timespec tick = {0, 200 * 1000 * 1000};
    while (!hb_stop) {
        nanosleep(&tick, NULL);
        pthread_mutex_lock(&hb_mu);
        double t = cli_wall() - ps->t0;
        if (!hb_stop && (ps->lines ? t - ps->last >= CLI_PROGRESS_EVERY_S
                                   : t >= CLI_PROGRESS_AFTER_S))
            print_line(ps, t, 1);
        pthread_mutex_unlock(&hb_mu);
    }
    return NULL;
}

int cli_progress_start(cli_progress *ps)
{
    if (hb_running)
        return -1;
    hb_stop = 0;
    if (pthread_create(&hb_thread, NULL, heartbeat, ps) != 0)
        return -1;
    hb_running = 1;
    return 0;
}

void cli_progress_stop(cli_progress *ps)
{
    (void)ps;
    if (!hb_running)
        return;
    pthread_mutex_lock(&hb_mu);
    hb_stop = 1;
    pthread_mutex_unlock(&hb_mu);
    pthread_join(hb_thread, NULL);
    hb_running = 0;
}
