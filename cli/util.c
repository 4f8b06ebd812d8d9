/* util.c - shared printing and argument helpers of the command, see cli.h. */
#include "cli.h"
#include "overhead.h"
#include "json.h"
#include "cluster.h"
#include "framework.h"
#include "label.h"
#include "model.h"
#include "cli_outputs.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_exit_code(sc_status st)
{
    switch (st) {
    case SC_OK:
        return CLI_EXIT_OK;
    case SC_EINVAL:
    case SC_EPARSE:
    case SC_ENOTFOUND:
    case SC_ENOTSUP:
        return CLI_EXIT_USAGE;
    case SC_EIO:
    case SC_ECUDA:
    case SC_ENCCL:
    case SC_EMPI:
        return CLI_EXIT_IO;
    case SC_ENOFIT:
        return CLI_EXIT_INFEASIBLE;
    case SC_EGATE: /* a fit refused by a quality gate */
        return CLI_EXIT_FIT;
    case SC_ENOMEM: /* out of memory: internal (it fell in with EGATE's 4 in a merge) */
        return CLI_EXIT_INTERNAL;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

int cli_fail(const sc_error *err)
{
    const char *alias = cli_stdout_alias();
    const char *at = *alias ? strstr(err->msg, alias) : NULL;
    if (at && !isdigit((unsigned char)at[strlen(alias)])) /* the copy of stdout, by name */
        fprintf(stderr, "stagecraft: %.*sstdout%s\n", (int)(at - err->msg), err->msg,
                at + strlen(alias));
    else
        fprintf(stderr, "stagecraft: %s\n", err->msg[0] ? err->msg : sc_status_name(err->status));
    return cli_exit_code(err->status);
}

void cli_warn_cluster(const sc_cluster *c, const char *what)
{
    const sc_cluster_fits *f = &c->eff.fits;
    if (!f->present || f->n_failed <= 0)
        return;
    fprintf(stderr,
            "stagecraft: warning: %s (%s) was calibrated with --force past %d failed quality "
            "gate%s (first: %s): its predictions may be far off\n",
            what, c->name, f->n_failed, f->n_failed == 1 ? "" : "s", f->failed[0]);
}

void cli_print_p2p_rule(const sc_framework *fw, int no_overlap_p2p_comm)
{
    if (no_overlap_p2p_comm < 0 && fw && fw->p2p_why)
        printf("pipeline sends block their sender %s (--overlap-p2p-comm 1: beside the "
               "compute)\n",
               fw->p2p_why);
}

/* The run a label compares with its preset's rows; NULL without a model. */
static const sc_label_run *label_run(const sc_cluster *c, const sc_model *m, long gpus,
                                     int flash, sc_label_run *r)
{
    if (!m)
        return NULL;
    r->seq = m->seq_len;
    r->gpus = gpus;
    r->params = sc_model_totals(m).params;
    r->attention = sc_label_attention(c, flash);
    return r;
}

void cli_print_label(const sc_cluster *c, double step_s, const char *what, int ms,
                     const sc_model *m, long gpus, int flash)
{
    sc_cluster_label l;
    char d[320], b[2][32], out[256];
    double lo, hi;
    sc_label_run run;
    sc_cluster_label_of(c, &l);
    printf("cluster: %s\n", sc_label_describe(&l, c, d, sizeof d));
    if (sc_label_interval(&l, step_s, &lo, &hi)) {
        if (ms)
            printf("  error bar from the validation residuals: %s is likely %.1f to %.1f ms\n",
                   what, 1e3 * lo, 1e3 * hi);
        else
            printf("  error bar from the validation residuals: %s is likely %s to %s us\n",
                   what, cli_us(lo, b[0]), cli_us(hi, b[1]));
    }
    if (sc_label_outside(&l, label_run(c, m, gpus, flash, &run), out, sizeof out))
        printf("  beyond the validation rows on %s: %s; their error says little about this "
               "run\n", c->name, out);
}

int cli_print_attn_hint(const sc_cluster *c, const sc_model *m, int flash, int given)
{
    if (flash || given || !m || !(c->eff.gemm.sms > 0 && c->eff.gemm.flash_fwd > 0) ||
        !sc_model_prices_attention(m))
        return 0;
    printf("  attention: unfused, the default (the scores kept, their own kernels); --attn "
           "flash prices the fused kernels Megatron-Core and PyTorch run by default\n");
    return 1;
}

void cli_label_json(cJSON *o, const sc_cluster *c, double step_s, const sc_model *m, long gpus,
                    int flash)
{
    sc_label_run run;
    cJSON *x = o ? sc_cluster_label_json(c, step_s, label_run(c, m, gpus, flash, &run))
                 : NULL;
    if (x)
        cJSON_AddItemToObject(o, "cluster_label", x);
}

int cli_launcher_rank(void)
{
    const char *v[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < SC_ARRAY_LEN(v); i++)
        if (getenv(v[i]))
            return atoi(getenv(v[i]));
    return 0;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    if (cli_launcher_rank() != 0) /* every rank parses the same argv: rank 0 says it */
        return CLI_EXIT_USAGE;
    va_list ap;
    fprintf(stderr, "stagecraft %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry 'stagecraft %s --help'\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s ? s : "", &end, 10);
    if (!s || !*s || *end || errno || sc_decimal_len(s) != strlen(s))
        return cli_usage(cmd, "%s: '%s' is not an integer", opt, s ? s : "");
    if (v < lo || v > hi)
        return cli_usage(cmd, "%s: %ld is out of range [%ld, %ld]", opt, v, lo, hi);
    *out = v;
    return 0;
}

int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
               double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s ? s : "", &end);
    if (!s || !*s || *end || errno || !isfinite(v) || sc_decimal_len(s) != strlen(s))
        return cli_usage(cmd, "%s: '%s' is not a number", opt, s ? s : "");
    if (v < lo || v > hi)
        return cli_usage(cmd, "%s: %g is out of range [%g, %g]", opt, v, lo, hi);
    *out = v;
    return 0;
}

int cli_print_json(cJSON *root)
{
    char *s = root && sc_json_exact(root) == SC_OK ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!s) {
        fprintf(stderr, "stagecraft: out of memory\n");
        return 1;
    }
    fputs(s, stdout);
    fputc('\n', stdout);
    sc_free(s);
    return 0; /* main() checks that stdout was written */
}

char *cli_si(double v, char *buf)
{
    static const char *suf[] = {"", "k", "M", "G", "T", "P", "E"};
    int i = 0;
    double a = fabs(v);
    while (a >= 1000 && i < 6) {
        a /= 1000;
        v /= 1000;
        i++;
    }
    if (i == 0 && v == floor(v))
        snprintf(buf, 32, "%.0f", v);
    else
        snprintf(buf, 32, "%.*f%s", a >= 100 ? 1 : 2, v, suf[i]);
    return buf;
}

char *cli_bytes(double v, char *buf)
{
    sc_fmt_bytes(v, 2, buf);
    return buf;
}

char *cli_us(double seconds, char *buf)
{
    double us = seconds * 1e6;
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.1f", us);
    /* thousands separators on the integer part */
    char *dotp = strchr(tmp, '.');
    size_t ilen = dotp ? (size_t)(dotp - tmp) : strlen(tmp);
    size_t start = tmp[0] == '-' ? 1 : 0, o = 0;
    if (start)
        buf[o++] = '-';
    for (size_t i = start; i < ilen && o < 28; i++) {
        buf[o++] = tmp[i];
        size_t left = ilen - i - 1;
        if (left > 0 && left % 3 == 0)
            buf[o++] = ',';
    }
    snprintf(buf + o, 32 - o, "%s", dotp ? dotp : "");
    return buf;
}

int cli_open(const char *model, const char *cluster, long nodes, const char *framework,
             sc_model **m, sc_cluster *c)
{
    sc_error err = {0};
    *m = NULL;
    if (sc_model_open(model, m, &err))
        return cli_fail(&err);
    if (sc_cluster_open(cluster, c, &err) || (nodes && sc_cluster_set_nodes(c, nodes, &err)) ||
        sc_overhead_apply(c, framework, "--framework", &err)) {
        sc_model_free(*m);
        *m = NULL;
        return cli_fail(&err);
    }
    cli_warn_cluster(c, cluster);
    return 0;
}

void cli_warn_tp_replicated(const sc_model *m, int tp)
{
    const char *names[8];
    int n = tp > 1 ? sc_model_tp_replicated(m, names, 8) : 0;
    if (n <= 0)
        return;
    fprintf(stderr,
            "stagecraft: warning: --tp %d: %d module%s of %s ha%s no tensor-parallel data and "
            "stay%s replicated on every tp rank (whole weights, compute and activations): ",
            tp, n, n == 1 ? "" : "s", m->name, n == 1 ? "s" : "ve", n == 1 ? "s" : "");
    for (int i = 0; i < n && i < 8; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
    if (n > 8)
        fprintf(stderr, ", ... (%d more)", n - 8);
    fputc('\n', stderr);
}
