/* cli_opts.c - the shared option table of plan, tune, whatif and sim, its
 * parse functions, the parser and the --help printer (see cli_opts.h). */
#include "cli_opts.h"
#include "cli.h"
#include "cli_limits.h"
#include "cluster.h"
#include "cost.h"
#include "framework.h"
#include "partitioner_hook.h"
#include "schedule.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(o, dst, type) ((type *)((char *)(dst) + (o)->off))
#define OFF(f) offsetof(cli_search_args, f)

void cli_search_args_init(cli_search_args *a)
{
    memset(a, 0, sizeof *a);
    sc_search_opts_default(&a->o);
    a->top = CLI_TOP;
}

/* ---- parse functions ------------------------------------------------------ */

int cli_opt_str(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                void *dst)
{
    *FIELD(o, dst, const char *) = arg;
    return 0;
}

int cli_opt_flag(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                 void *dst)
{
    *FIELD(o, dst, int) = 1;
    return 0;
}

/* A flag that is also a --fix key: no value sets 1, --fix sp=0|1 sets it. */
static int opt_sp(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                  void *dst)
{
    if (!arg) {
        *FIELD(o, dst, int) = 1;
        return 0;
    }
    return cli_opt_int(cmd, label, o, arg, dst);
}

/* --overlap-grad-reduce 0|1 into the search's no_overlap_grad_reduce (1 - the value);
 * --overlap-p2p-comm likewise. */
static int opt_overlap(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                       void *dst)
{
    long v;
    if (cli_long(cmd, label, arg, 0, 1, &v))
        return 2;
    *FIELD(o, dst, int) = !v;
    return 0;
}

int cli_opt_long(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                 void *dst)
{
    return cli_long(cmd, label, arg, (long)o->lo, (long)o->hi, FIELD(o, dst, long));
}

int cli_opt_int(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                void *dst)
{
    long v;
    if (cli_long(cmd, label, arg, (long)o->lo, (long)o->hi, &v))
        return 2;
    *FIELD(o, dst, int) = (int)v;
    return 0;
}

int cli_opt_double(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                   void *dst)
{
    return cli_double(cmd, label, arg, o->lo, o->hi, FIELD(o, dst, double));
}

int cli_opt_count(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                  void *dst)
{
    /* a trailing k, M, B (or G) or T multiplies by 10^3, 10^6, 10^9, 10^12 */
    static const char suf[] = "kKMBGT";
    static const double mul[] = {1e3, 1e3, 1e6, 1e9, 1e9, 1e12};
    size_t n = arg ? strlen(arg) : 0;
    const char *at = n > 1 ? strchr(suf, arg[n - 1]) : NULL;
    char num[64];
    if (!at || n >= sizeof num)
        return cli_double(cmd, label, arg, o->lo, o->hi, FIELD(o, dst, double));
    snprintf(num, sizeof num, "%.*s", (int)(n - 1), arg);
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    if (*end || errno || !isfinite(v) || sc_decimal_len(num) != strlen(num))
        return cli_usage(cmd, "%s: '%s' is not a number (like 3e11, 300B, 1.5T)", label, arg);
    v *= mul[at - suf];
    if (v < o->lo || v > o->hi)
        return cli_usage(cmd, "%s: %s = %g is out of range [%g, %g]", label, arg, v, o->lo, o->hi);
    *FIELD(o, dst, double) = v;
    return 0;
}

static int not_one_of(const char *cmd, const char *label, const cli_opt *o, const char *arg)
{
    return cli_usage(cmd, "%s: '%s' is not one of %s", label, arg, o->choices());
}

/* Words: the index of arg among words (", "-separated), or -1. */
static int word_index(const char *words, const char *arg)
{
    size_t n = strlen(arg);
    int i = 0;
    for (const char *p = words; *p; i++) {
        const char *e = strstr(p, ", ");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, arg, n))
            return i;
        if (!e)
            break;
        p = e + 2;
    }
    return -1;
}

/* Stores the index of a word of o->choices() into an int field. */
static int opt_word(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                    void *dst)
{
    int i = word_index(o->choices(), arg);
    if (i < 0)
        return not_one_of(cmd, label, o, arg);
    *FIELD(o, dst, int) = i;
    return 0;
}

/* --attn: a word, remembered as given (cli_print_attn_hint); dst is the
 * cli_search_args every shared option lands in. */
static int opt_attn(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                    void *dst)
{
    int st = opt_word(cmd, label, o, arg, dst);
    if (!st)
        ((cli_search_args *)dst)->attn_given = 1;
    return st;
}

/* sc_recompute_name's words, in sc_recompute order, built once (the CLI is
 * one thread). */
static const char *recompute_words(void)
{
    static char list[96];
    if (!list[0]) {
        size_t n = 0;
        for (int r = SC_RECOMPUTE_NONE; strcmp(sc_recompute_name((sc_recompute)r), "?") &&
                                        n < sizeof list;
             r++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
                                  sc_recompute_name((sc_recompute)r));
    }
    return list;
}

static int opt_recompute(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                         void *dst)
{
    int r = sc_recompute_parse(arg);
    if (r < 0)
        return not_one_of(cmd, label, o, arg);
    *FIELD(o, dst, int) = r;
    return 0;
}

static int opt_framework(const char *cmd, const char *label, const cli_opt *o,
                         const char *arg, void *dst)
{
    const sc_framework *f = sc_framework_find(arg);
    if (!f)
        return not_one_of(cmd, label, o, arg);
    *FIELD(o, dst, const sc_framework *) = f;
    return 0;
}

static const char *cuts_words(void) { return "layers, leaves"; } /* cut_in_layers 0, 1 */
static const char *optimize_words(void) { return "speed, memory"; } /* optimize_memory 0, 1 */
static const char *attn_words(void) { return "unfused, flash"; } /* SC_ATTN_UNFUSED, _FLASH */
static const char *shared_words(void) { return "replicate, strict"; } /* shared_strict 0, 1 */

/* The schedules of sim/schedule.h's table, built once (the CLI is one
 * thread). */
static const char *schedule_words(void)
{
    static char list[256];
    if (!list[0]) {
        size_t n = 0;
        for (int i = 0; sc_sched_all[i] && n < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                                  sc_sched_all[i]->name);
    }
    return list;
}

/* A schedule's name, from the table (so --fix can keep it past its buffer). */
static int opt_schedule(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                        void *dst)
{
    const sc_sched_impl *s = sc_sched_find(arg);
    if (!s)
        return not_one_of(cmd, label, o, arg);
    *FIELD(o, dst, const char *) = s->name;
    return 0;
}

static int opt_partitioner(const char *cmd, const char *label, const cli_opt *o,
                           const char *arg, void *dst)
{
    const sc_partitioner_impl *p = sc_partitioner_find(arg);
    if (!p)
        return not_one_of(cmd, label, o, arg);
    *FIELD(o, dst, const char *) = p->name;
    return 0;
}

/* ---- the table ------------------------------------------------------------ */

#define ALL (CLI_PLAN | CLI_TUNE | CLI_WHATIF | CLI_SIM)
#define LAYOUT (CLI_PLAN | CLI_TUNE | CLI_SIM)

const cli_opt cli_search_opts[] = {
    {"model", 0, "M", "a built-in model (stagecraft model list) or a model file",
     cli_opt_str, OFF(model), 0, 0, ALL, NULL, NULL, 0},
    {"cluster", 0, "C", "a preset (stagecraft cluster list) or a cluster file",
     cli_opt_str, OFF(cluster), 0, 0, LAYOUT, NULL, NULL, 0},
    {"nodes", 0, "N", "nodes to use (default: the cluster's count)",
     cli_opt_long, OFF(nodes), 1, SC_CLUSTER_MAX_NODES, LAYOUT, NULL, NULL, 0},
    {"global-batch", 0, "B", "samples per step (dp x microbatches x mbs; sim: gives\n"
     "the microbatches, B / (dp x mbs))", cli_opt_long,
     OFF(batch), 1, (double)CLI_MAX_BATCH, ALL, NULL, NULL, 0},
    {"optimize", 0, "O", "what the ranking favours", opt_word, OFF(o.optimize_memory), 0, 0,
     CLI_PLAN, NULL, optimize_words, 0},
    {"top", 0, "N", "plans listed (the table and --json's ranked); what is\n"
     "simulated is --simulate's", cli_opt_long, OFF(top), 1, CLI_MAX_TOP, CLI_PLAN, NULL, NULL,
     1},
    {"simulate", 0, "K", "candidates the search simulates, the best estimates\n"
     "first: the budget that picks the winner (the same\n"
     "default in plan and whatif)", cli_opt_int, OFF(o.simulate), 1, CLI_MAX_SIMULATE,
     CLI_PLAN | CLI_WHATIF, NULL, NULL, 1},
    {"framework", 0, "F", "plan for that framework: step times include its\n"
     "measured overhead (docs/accuracy.md#framework-overheads),\n"
     "and the search keeps to what it runs as planned\n"
     "(schedules, v, ZeRO with a pipeline, tp, sp, cuts;\n"
     "docs/commands.md#framework-aware-search); default any", opt_framework,
     OFF(o.framework), 0, 0, CLI_PLAN | CLI_TUNE | CLI_WHATIF | CLI_SIM, NULL,
     sc_framework_names, 0},
    {"cuts", 0, "C", "where a pipeline stage may begin: between layers\n"
     "(default) or at any leaf, inside a layer (its send then\n"
     "carries the residual stream too; --framework any or\n"
     "torch only)", opt_word, OFF(o.cut_in_layers), 0, 0, CLI_PLAN | CLI_TUNE | CLI_WHATIF,
     NULL, cuts_words, 0},
    {"partitioner", 0, "P", "pipeline split (default optimal)", opt_partitioner,
     OFF(o.partitioner), 0, 0, CLI_PLAN | CLI_TUNE, NULL, sc_planner_partitioners, 0},
    {"max-mbs", 0, "S", "largest microbatch size to try (a fixed --mbs is\n"
     "tried whatever its size)", cli_opt_int,
     OFF(o.max_mbs), 1, CLI_MAX_MBS, CLI_PLAN | CLI_TUNE, NULL, NULL, 1},
    {"memory-weight", 0, "W", "tree partitioner: memory's weight against time\n"
     "(default 0.2 for speed, 0.8 for memory)", cli_opt_double, OFF(o.memory_weight), 0, 1,
     CLI_PLAN, NULL, NULL, 0},
    {"shared", 0, "X", "modules sharing parameters (a tied embedding and LM\n"
     "head): replicated on the stages that hold them, their\n"
     "gradients allreduced (default, as Megatron-LM), or kept\n"
     "on one stage (strict; a tied GPT then has one stage)",
     opt_word, OFF(o.shared_strict), 0, 0, CLI_PLAN, NULL, shared_words, 0},
    /* the layout; plan: each fixes that choice of the search, as --fix does */
    {"dp", 0, "D", "data-parallel degree", cli_opt_int, OFF(o.fix_dp), 1, CLI_MAX_DP, LAYOUT,
     "dp", NULL, 0},
    {"tp", 0, "T", "tensor-parallel degree", cli_opt_int, OFF(o.fix_tp), 1, CLI_MAX_TP, LAYOUT,
     "tp", NULL, 0},
    {"pp", 0, "P", "pipeline-parallel degree (stages)", cli_opt_int, OFF(o.fix_pp), 1,
     CLI_MAX_PP, LAYOUT, "pp", NULL, 0},
    {"v", 0, "V", "model chunks per rank (interleaved: 2 or more)", cli_opt_int, OFF(o.fix_v),
     1, CLI_MAX_V, LAYOUT, "v", NULL, 0},
    {"cp", 0, "C", "context parallelism: each sample's sequence split over C\n"
     "ranks that pass keys and values around beside the fused\n"
     "attention (Megatron-Core --context-parallel-size; needs\n"
     "--attn flash and 2·C dividing the sequence; ranks\n"
     "dp·cp·tp·pp; sim, tune: default 1; plan, whatif: with\n"
     "--attn flash searched over 1, 2, 4 .. GPUs a node\n"
     "unless given)", cli_opt_int, OFF(o.fix_cp), 1,
     4096, ALL, "cp", NULL, 0},
    {"microbatches", 0, "M", "microbatches per step per pipeline", cli_opt_int, OFF(o.fix_m), 1,
     CLI_MAX_M, CLI_PLAN | CLI_SIM, "m", NULL, 0},
    {"mbs", 0, "S", "samples per microbatch", cli_opt_int, OFF(o.fix_mbs), 1, CLI_MAX_MBS,
     LAYOUT, "mbs", NULL, 0},
    {"schedule", 0, "S", "pipeline schedule", opt_schedule,
     OFF(o.fix_schedule), 0, 0, LAYOUT, "schedule", schedule_words, 0},
    {"zero", 0, "Z", "ZeRO stage", cli_opt_int, OFF(o.fix_zero), 0, 3, LAYOUT, "zero", NULL, 0},
    {"recompute", 0, "R", "activation recomputation", opt_recompute, OFF(o.fix_recompute), 0,
     0, LAYOUT, "recompute", recompute_words, 0},
    {"sp", 0, NULL, "sequence parallelism (needs tp >= 2; plan searches it\n"
     "unless given; --fix sp=0 turns it off)", opt_sp, OFF(o.fix_sp), 0, 1,
     CLI_PLAN | CLI_TUNE | CLI_SIM | CLI_WHATIF, "sp", NULL, 0},
    {"overlap-grad-reduce", 0, "0|1", "data-parallel gradient buckets reduced during the\n"
     "backward (1, default; Megatron-LM --overlap-grad-reduce)\n"
     "or after it (0); with sim --plan, 0 replays the plan\n"
     "without overlap", opt_overlap, OFF(o.no_overlap_grad_reduce), 0, 1, ALL, NULL, NULL, 0},
    {"overlap-p2p-comm", 0, "0|1", "pipeline sends beside the compute (1; Megatron-LM's\n"
     "interleaved schedule, torch.distributed.pipelining) or\n"
     "blocking their sender until they arrive (0: Megatron-LM's\n"
     "other schedules, its interleaved one before October 2023\n"
     "or with --no-overlap-p2p-communication, DeepSpeed's\n"
     "pipeline engine); default: as --framework runs them\n"
     "(0: megatron with v 1, deepspeed), else 1; with\n"
     "sim --plan, 0 replays the plan so", opt_overlap, OFF(o.no_overlap_p2p_comm), 0, 1, ALL, NULL,
     NULL, 0},
    {"tp-comm-overlap", 0, "0|1", "sequence parallelism's tp collectives split into\n"
     "chunks that move beside the GEMMs (1; Megatron-LM\n"
     "--tp-comm-overlap, Transformer Engine; plan: where sp) or\n"
     "after them (0, default); with sim --plan, 1 replays the\n"
     "plan with it", cli_opt_int, OFF(o.tp_comm_overlap), 0, 1, ALL, NULL, NULL, 0},
    {"overlap-param-gather", 0, "0|1", "ZeRO 1 and 2: the updated parameters' all-gather\n"
     "beside the next step's first forward (1; Megatron-LM\n"
     "--overlap-param-gather; plan: where ZeRO 1 or 2) or\n"
     "after the optimizer (0, default); with sim --plan, 1\n"
     "replays the plan with it", cli_opt_int, OFF(o.overlap_param_gather), 0, 1, ALL, NULL,
     NULL, 0},
    {"grad-reduce-in-fp32", 0, "0|1", "data-parallel gradients reduced in fp32 where the\n"
     "model trains in 16 bits (1: Megatron-LM's default in\n"
     "bf16, FSDP reduce_dtype fp32, DDP under autocast) or in\n"
     "the training dtype (0, default: --grad-reduce-in-bf16);\n"
     "with sim --plan, 1 replays the plan so", cli_opt_int, OFF(o.grad_reduce_in_fp32), 0, 1,
     ALL, NULL, NULL, 0},
    {"fp8", 0, NULL, "fp8 training as Transformer Engine runs it (Megatron-LM\n"
     "--fp8-format hybrid): the attention and MLP weight GEMMs\n"
     "in fp8, with their casts; the rest in the model's 16 bits\n"
     "(needs fp8 tensor cores: H100, H200); with sim --plan,\n"
     "replays the plan so", cli_opt_flag, OFF(o.fp8), 0, 0, ALL, NULL, NULL, 0},
    {"defer-embedding-wgrad-compute", 0, NULL, "the output layer's weight gradients run in the\n"
     "pipeline flush, after the last position's last backward\n"
     "(Megatron-Core --defer-embedding-wgrad-compute; needs\n"
     "pp >= 2); with sim --plan, replays the plan with it",
     cli_opt_flag, OFF(o.defer_embedding_wgrad), 0, 0, CLI_SIM, NULL, NULL, 0},
    {"wgrad-deferral-limit", 0, "N", "with --defer-embedding-wgrad-compute: only the first N\n"
     "microbatches' (default 0: all; Megatron-Core's)",
     cli_opt_int, OFF(o.wgrad_deferral_limit), 0, 1000000, CLI_SIM, NULL, NULL, 0},
    {"attn", 0, "A", "attention kernels (where the model lists kernels):\n"
     "unfused keeps the scores (Megatron-LM's local\n"
     "attention); flash fuses them and keeps none, as the\n"
     "Transformer Engine kernels Megatron-Core picks by\n"
     "default (default unfused)", opt_attn, OFF(o.attn), 0, 0, ALL,
     "attn", attn_words, 0},
    {"max-mem", 0, "SIZE", "refuse to simulate a step whose estimated memory is\n"
     "above SIZE (512M, 8G; default half the physical memory)", cli_opt_bytes,
     OFF(max_mem), 0, 0, ALL, NULL, NULL, 0},
    {"json", 0, NULL, "print JSON instead of the table", cli_opt_flag, OFF(json), 0, 0, ALL,
     NULL, NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL, 0},
};

const char *cli_fix_keys(void)
{
    static char list[128];
    if (!list[0]) {
        size_t n = 0;
        for (const cli_opt *o = cli_search_opts; o->name && n < sizeof list; o++)
            if (o->fix_key)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
                                      o->fix_key);
    }
    return list;
}

int cli_opt_fix(const char *cmd, const char *label, const cli_opt *o, const char *arg,
                void *dst)
{
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", arg) >= (int)sizeof buf)
        return cli_usage(cmd, "%s: longer than %zu characters", label, sizeof buf - 1);
    const cli_opt *seen[32];
    int nseen = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return cli_usage(cmd, "%s: '%s' is not KEY=VALUE", label, tok);
        *eq++ = '\0';
        const cli_opt *k = cli_search_opts;
        while (k->name && !(k->fix_key && !strcmp(k->fix_key, tok)))
            k++;
        if (!k->name)
            return cli_usage(cmd, "%s: unknown key '%s' (%s)", label, tok, cli_fix_keys());
        for (int i = 0; i < nseen; i++)
            if (seen[i] == k)
                return cli_usage(cmd, "%s: '%s' is given twice", label, tok);
        if (nseen < (int)SC_ARRAY_LEN(seen))
            seen[nseen++] = k;
        char what[64];
        snprintf(what, sizeof what, "%s %s", label, tok);
        /* string values must outlive buf: the table's parsers of words store
         * static names (opt_schedule), never the argument */
        if (k->parse == cli_opt_str)
            return cli_usage(cmd, "%s: cannot be fixed", what);
        if (k->parse(cmd, what, k, eq, dst))
            return 2;
    }
    return 0;
}

/* ---- the parser ------------------------------------------------------------ */

#define MAX_OPTS 64

/* The options cmd takes, shared ones first; returns how many. */
static int gather(const cli_cmd *cmd, const cli_opt **list)
{
    int n = 0;
    for (const cli_opt *o = cli_search_opts; o->name; o++)
        if (o->cmds & cmd->who)
            list[n++] = o;
    for (const cli_opt *o = cmd->own; o && o->name && n < MAX_OPTS; o++)
        list[n++] = o;
    return n;
}

#define HELP_COL 24
#define HELP_WIDTH 80

/* Prints lead then text at column *col (lead: "", " ", ": " or "; "). When
 * text's first line would pass HELP_WIDTH it goes on a fresh indented line,
 * the lead's punctuation staying behind; a '\n' in text starts an indented
 * line. */
static void put_wrapped(const char *lead, const char *text, int *col)
{
    const char *nl = strchr(text, '\n');
    int len = (int)strlen(lead) + (nl ? (int)(nl - text) : (int)strlen(text));
    if (*col > HELP_COL && *col + len > HELP_WIDTH) {
        if (lead[0] && lead[0] != ' ')
            putchar(lead[0]);
        printf("\n%*s", HELP_COL, "");
        *col = HELP_COL;
    } else {
        *col += printf("%s", lead);
    }
    for (; *text; text++) {
        putchar(*text);
        (*col)++;
        if (*text == '\n') {
            printf("%*s", HELP_COL, "");
            *col = HELP_COL;
        }
    }
}

static void print_opt(const cli_opt *o, const void *dst)
{
    char left[64], seg[160];
    int n = o->short_name ? snprintf(left, sizeof left, "  -%c, --%s", o->short_name, o->name)
                          : snprintf(left, sizeof left, "  --%s", o->name);
    if (o->arg)
        snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg);
    printf("%-*s", HELP_COL, left);
    if ((int)strlen(left) >= HELP_COL)
        printf("\n%*s", HELP_COL, "");
    int col = HELP_COL;
    put_wrapped("", o->help, &col);
    if (o->choices)
        put_wrapped(": ", o->choices(), &col);
    seg[0] = '\0';
    if (o->parse == cli_opt_int || o->parse == cli_opt_long)
        snprintf(seg, sizeof seg, "[%.0f, %.0f]", o->lo, o->hi);
    else if (o->parse == cli_opt_double)
        snprintf(seg, sizeof seg, "[%g, %g]", o->lo, o->hi);
    if (seg[0])
        put_wrapped(" ", seg, &col);
    seg[0] = '\0';
    if (o->show_default && dst) {
        if (o->parse == cli_opt_int)
            snprintf(seg, sizeof seg, "default %d", *FIELD(o, dst, const int));
        else if (o->parse == cli_opt_long)
            snprintf(seg, sizeof seg, "default %ld", *FIELD(o, dst, const long));
        else if (o->parse == cli_opt_double)
            snprintf(seg, sizeof seg, "default %g", *FIELD(o, dst, const double));
        else if (o->parse == cli_opt_str && *FIELD(o, dst, const char *const))
            snprintf(seg, sizeof seg, "default %s", *FIELD(o, dst, const char *const));
    }
    if (seg[0])
        put_wrapped("; ", seg, &col);
    putchar('\n');
}

static const cli_opt help_opt = {"help", 'h', NULL, "this text", cli_opt_flag, 0, 0, 0, 0,
                                 NULL, NULL, 0};

void cli_help(const cli_cmd *cmd, const void *dst)
{
    fputs(cmd->usage, stdout);
    printf("\noptions shared with the other search commands (plan, tune, whatif, sim):\n");
    for (const cli_opt *o = cli_search_opts; o->name; o++)
        if (o->cmds & cmd->who)
            print_opt(o, dst);
    printf("\noptions of %s:\n", cmd->name);
    for (const cli_opt *o = cmd->own; o && o->name; o++)
        print_opt(o, dst);
    print_opt(&help_opt, NULL);
    if (cmd->notes) {
        putchar('\n');
        fputs(cmd->notes, stdout);
    }
}

int cli_exact_longopts(const char *cmd, int argc, char **argv, const char *shorts,
                       const struct option *opts)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if (a[0] == '-' && a[1] && a[1] != '-') { /* -x VALUE: skip the value */
            const char *sp = strchr(shorts, a[1]);
            if (sp && sp[1] == ':' && !a[2])
                i++;
            continue;
        }
        if (strncmp(a, "--", 2))
            continue;
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct option *k = NULL;
        for (const struct option *o = opts; o->name && !k; o++)
            if (strlen(o->name) == len && !strncmp(o->name, name, len))
                k = o;
        if (!k) {
            const char *names[256];
            int n = 0;
            for (const struct option *o = opts; o->name && n < 256; o++)
                names[n++] = o->name;
            char typed[64], mean[96] = "";
            snprintf(typed, sizeof typed, "%.*s", (int)(len < 63 ? len : 63), name);
            if (len < 64)
                sc_did_you_mean(typed, names, n, "--", mean, sizeof mean);
            return cli_usage(cmd, "unknown option '%.*s'%s", (int)len + 2, a, mean);
        }
        if (k->has_arg == required_argument && !eq)
            i++;
    }
    return 0;
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, void *dst)
{
    const cli_opt *list[MAX_OPTS];
    int n = gather(cmd, list);
    struct option lo[MAX_OPTS + 2];
    char shorts[2 * MAX_OPTS + 2] = "h";
    size_t ns = 1;
    enum { LONG_BASE = 1000 };
    for (int i = 0; i < n; i++) {
        lo[i] = (struct option){list[i]->name, list[i]->arg ? required_argument : no_argument,
                                NULL, LONG_BASE + i};
        if (list[i]->short_name) {
            shorts[ns++] = list[i]->short_name;
            if (list[i]->arg)
                shorts[ns++] = ':';
        }
    }
    shorts[ns] = '\0';
    lo[n] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n + 1] = (struct option){NULL, 0, NULL, 0};
    if (cli_exact_longopts(cmd->name, argc, argv, shorts, lo))
        return 2;
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (ch == 'h') {
            cli_help(cmd, dst);
            return CLI_HELP_SHOWN;
        }
        const cli_opt *o = NULL;
        if (ch >= LONG_BASE && ch < LONG_BASE + n)
            o = list[ch - LONG_BASE];
        for (int i = 0; i < n && !o && ch != '?' && ch != ':'; i++)
            if (list[i]->short_name == ch)
                o = list[i];
        if (!o)
            return cli_usage(cmd->name, "unknown option or missing value '%s'", argv[optind - 1]);
        char label[64];
        if (ch >= LONG_BASE)
            snprintf(label, sizeof label, "--%s", o->name);
        else
            snprintf(label, sizeof label, "-%c", o->short_name);
        if (o->parse(cmd->name, label, o, optarg, dst))
            return 2;
    }
    if (optind < argc) {
        int model = 0, plan = 0;
        for (int i = 0; i < n; i++) {
            model |= !strcmp(list[i]->name, "model");
            plan |= !strcmp(list[i]->name, "plan");
        }
        return cli_stray_arg(cmd->name, argc, argv, optind, model, plan);
    }
    return 0;
}

int cli_stray_arg(const char *cmd, int argc, char **argv, int k, int takes_model,
                  int takes_plan)
{
    const char *arg = argv[k];
    int given = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        given |= !strncmp(argv[i], "--model", 7) || !strncmp(argv[i], "--plan", 6);
    if (arg[0] == '-' || !takes_model || given)
        return cli_usage(cmd, "unexpected argument '%s'", arg);
    if (takes_plan)
        return cli_usage(cmd, "unexpected argument '%s' (--model %s for a model, --plan %s for a "
                         "plan)", arg, arg, arg);
    return cli_usage(cmd, "unexpected argument '%s' (a model is given as --model %s)", arg, arg);
}
