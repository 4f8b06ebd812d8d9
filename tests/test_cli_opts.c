/* test_cli_opts.c - the option table plan, tune, whatif and sim share
 * (cli/cli_opts.c), seen from the command line: one verdict and one message
 * per option and value whichever command parses it, --fix KEY=VALUE judged as
 * --KEY VALUE, the same --help line everywhere, and the old spellings. A
 * value that parses is shown by `--help` after it: the parser reaches --help
 * (exit 0) only when every option before it was accepted. */
#include "check.h"
#include "json.h"

#include <stdlib.h>
#include <unistd.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

/* out's first line without "stagecraft CMD: ", into buf. */
static const char *message(char *buf, size_t cap)
{
    const char *p = strstr(out, ": ");
    p = p ? p + 2 : out;
    size_t n = strcspn(p, "\n");
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return buf;
}

typedef struct {
    const char *opt, *bad, *good, *msg; /* msg: the verdict on bad */
    const char *cmds[4];                /* the commands that take opt */
} probe;

static const probe probes[] = {
    {"--v", "65", "64", "--v: 65 is out of range [1, 64]", {"plan", "tune", "sim"}},
    {"--max-mbs", "65537", "65536", "--max-mbs: 65537 is out of range [1, 65536]",
     {"plan", "tune"}},
    {"--max-mbs", "x", "1024", "--max-mbs: 'x' is not an integer", {"plan", "tune"}},
    {"--mbs", "65537", "65536", "--mbs: 65537 is out of range [1, 65536]",
     {"plan", "tune", "sim"}},
    {"--dp", "0", "1048576", "--dp: 0 is out of range [1, 1048576]", {"plan", "tune", "sim"}},
    {"--tp", "4097", "4096", "--tp: 4097 is out of range [1, 4096]", {"plan", "tune", "sim"}},
    {"--zero", "4", "3", "--zero: 4 is out of range [0, 3]", {"plan", "tune", "sim"}},
    {"--microbatches", "65537", "65536", "--microbatches: 65537 is out of range [1, 65536]",
     {"plan", "sim"}},
    {"--schedule", "bogus", "zb-h1",
     "--schedule: 'bogus' is not one of gpipe, 1f1b, interleaved, zb-h1",
     {"plan", "tune", "sim"}},
    {"--recompute", "some", "selective", "--recompute: 'some' is not one of none, selective, full",
     {"plan", "tune", "sim"}},
    {"--partitioner", "magic", "tree",
     "--partitioner: 'magic' is not one of uniform, tree, optimal", {"plan", "tune"}},
    {"--global-batch", "0", "1073741824", "--global-batch: 0 is out of range [1, 1073741824]",
     {"plan", "tune", "whatif"}},
    {"--top", "1001", "1000", "--top: 1001 is out of range [1, 1000]", {"plan"}},
    {"--simulate", "0", "100000", "--simulate: 0 is out of range [1, 100000]", {"plan", "whatif"}},
    {"--framework", "foo", "megatron",
     "--framework: 'foo' is not one of megatron, deepspeed, torch, any", {"plan", "tune", "whatif"}},
    {"--cuts", "inside", "leaves", "--cuts: 'inside' is not one of layers, leaves",
     {"plan", "tune", "whatif"}},
    {"--nodes", "0", "100000", "--nodes: 0 is out of range [1, 100000]",
     {"plan", "tune", "sim"}},
};

TEST(cli_opts_same_verdict_in_every_command)
{
    const char *bin = sc_test_bin();
    char want[256], got[256];
    for (size_t i = 0; i < SC_ARRAY_LEN(probes); i++) {
        const probe *p = &probes[i];
        for (int c = 0; c < 4 && p->cmds[c]; c++) {
            int rc = SC("%s %s %s %s", bin, p->cmds[c], p->opt, p->bad);
            if (rc != 2 || strcmp(message(got, sizeof got), p->msg))
                sc_test_fail(__FILE__, __LINE__, "%s %s %s: exit %d, '%s' (want 2, '%s')",
                             p->cmds[c], p->opt, p->bad, rc, got, p->msg);
            snprintf(want, sizeof want, "try 'stagecraft %s --help'", p->cmds[c]);
            CHECK_STR_HAS(out, want);
            rc = SC("%s %s %s %s --help", bin, p->cmds[c], p->opt, p->good);
            if (rc != 0)
                sc_test_fail(__FILE__, __LINE__, "%s %s %s refused: %.200s", p->cmds[c],
                             p->opt, p->good, out);
        }
    }
}

/* plan's --fix KEY=VALUE is judged by the option KEY's own entry. */
TEST(cli_opts_fix_is_the_option)
{
    const char *bin = sc_test_bin();
    char got[256];
    static const struct {
        const char *fix, *msg;
    } cases[] = {
        {"v=65", "--fix v: 65 is out of range [1, 64]"},
        {"m=0", "--fix m: 0 is out of range [1, 65536]"},
        {"mbs=65537", "--fix mbs: 65537 is out of range [1, 65536]"},
        {"dp=8,zero=9", "--fix zero: 9 is out of range [0, 3]"},
        {"schedule=bogus", "--fix schedule: 'bogus' is not one of gpipe, 1f1b, interleaved, zb-h1"},
        {"recompute=some", "--fix recompute: 'some' is not one of none, selective, full"},
        {"bogus=1",
         "--fix: unknown key 'bogus' (dp, tp, pp, v, cp, m, mbs, schedule, zero, recompute, sp, attn)"},
        {"pp", "--fix: 'pp' is not KEY=VALUE"},
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        int rc = SC("%s plan --model gpt-1.3b --cluster p4d.24xlarge --global-batch 8 --fix %s",
                    bin, cases[i].fix);
        if (rc != 2 || strcmp(message(got, sizeof got), cases[i].msg))
            sc_test_fail(__FILE__, __LINE__, "--fix %s: exit %d, '%s' (want 2, '%s')",
                         cases[i].fix, rc, got, cases[i].msg);
    }
    CHECK(SC("%s plan --fix dp=2,tp=2,pp=2,v=64,m=65536,mbs=65536,schedule=interleaved,zero=3,"
             "recompute=full --help", bin) == 0);
}

/* The same help line for a shared option in every command that takes it. */
TEST(cli_opts_one_help_line)
{
    const char *bin = sc_test_bin();
    static const struct {
        const char *opt, *cmds[4];
    } lines[] = {
        {"  --v V ", {"plan", "tune", "sim"}},
        {"  --mbs S ", {"plan", "tune", "sim"}},
        {"  --schedule S ", {"plan", "tune", "sim"}},
        {"  --global-batch B ", {"plan", "tune", "whatif"}},
        {"  --model M ", {"plan", "tune", "whatif", "sim"}},
        {"  --framework F ", {"plan", "tune", "whatif"}},
        {"  --simulate K ", {"plan", "whatif"}},
    };
    static char first[1 << 16], line[1 << 16];
    for (size_t i = 0; i < SC_ARRAY_LEN(lines); i++) {
        for (int c = 0; c < 4 && lines[i].cmds[c]; c++) {
            /* the option's line and its continuation lines */
            REQUIRE(SC("%s %s --help | awk '/^%s/ {p = 1; print; next} p && /^      / {print; "
                       "next} {p = 0}'",
                       bin, lines[i].cmds[c], lines[i].opt) == 0);
            snprintf(line, sizeof line, "%s", out);
            if (!*line)
                sc_test_fail(__FILE__, __LINE__, "%s --help has no '%s'", lines[i].cmds[c],
                             lines[i].opt);
            if (c == 0)
                snprintf(first, sizeof first, "%s", line);
            else if (strcmp(first, line))
                sc_test_fail(__FILE__, __LINE__, "%s --help: '%s' is not plan's '%s'",
                             lines[i].cmds[c], line, first);
        }
    }
    REQUIRE(SC("%s tune --help", bin) == 0);
    CHECK_STR_HAS(out, "--v V                 model chunks per rank (interleaved: 2 or more) "
                       "[1, 64]");
    CHECK_STR_HAS(out, "--max-mbs S           largest microbatch size to try (a fixed --mbs is");
    CHECK_STR_HAS(out, "tried whatever its size) [1, 65536]; default 64");
    REQUIRE(SC("%s plan --help", bin) == 0);
    CHECK_STR_HAS(out, "tried whatever its size) [1, 65536]; default 8");
    CHECK_STR_HAS(out, "--top N               plans listed (the table and --json's ranked); what is");
    CHECK_STR_HAS(out, "[1, 1000]; default 16");
    CHECK_STR_HAS(out, "--simulate K          candidates the search simulates, the best estimates");
    CHECK_STR_HAS(out, "[1, 100000]; default 64");
    REQUIRE(SC("%s whatif --help", bin) == 0);
    CHECK_STR_HAS(out, "[1, 100000]; default 64");
    CHECK(SC("%s whatif --top 2", bin) == 2);
    CHECK_STR_HAS(out, "unknown option '--top'");
    /* the options a command does not take are unknown to it */
    CHECK(SC("%s whatif --v 2", bin) == 2);
    CHECK_STR_HAS(out, "unknown option '--v'");
    CHECK(SC("%s sim --top 2", bin) == 2);
    CHECK_STR_HAS(out, "unknown option '--top'");
    CHECK(SC("%s tune --microbatches 2", bin) == 2);
    CHECK_STR_HAS(out, "unknown option '--microbatches'");
    CHECK(SC("%s plan --model gpt-1.3b extra", bin) == 2);
    CHECK_STR_HAS(out, "unexpected argument 'extra'");
}

/* plan --KEY VALUE and plan --fix KEY=VALUE make the same search. */
TEST(cli_opts_plan_options_equal_fix)
{
    const char *bin = sc_test_bin();
    const char *base = "plan --model gpt-1.3b --cluster p4d.24xlarge --global-batch 16 --top 2 "
                       "--json";
    REQUIRE(SC("%s %s --pp 2 --zero 1 --schedule 1f1b", bin, base) == 0);
    cJSON *a = cJSON_Parse(out);
    REQUIRE(SC("%s %s --fix pp=2,zero=1,schedule=1f1b", bin, base) == 0);
    cJSON *b = cJSON_Parse(out);
    REQUIRE(a && b);
    /* wall-clock figures aside, the same document */
    static const char *const wall[] = {"estimate_wall_s", "simulate_wall_s"};
    for (int i = 0; i < 2; i++) {
        cJSON_DeleteItemFromObject(a, wall[i]);
        cJSON_DeleteItemFromObject(b, wall[i]);
    }
    CHECK(cJSON_Compare(a, b, 1));
    const cJSON *r = cJSON_GetObjectItem(a, "ranked");
    REQUIRE(cJSON_GetArraySize(r) >= 1);
    for (const cJSON *x = r->child; x; x = x->next) {
        const cJSON *g = cJSON_GetObjectItem(x, "config");
        CHECK_EQ_INT(cJSON_GetObjectItem(g, "pp")->valueint, 2);
        CHECK_EQ_INT(cJSON_GetObjectItem(g, "zero")->valueint, 1);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* A long option by its whole name only: getopt_long alone takes an
 * unambiguous prefix, so whatif (which has no --tp) read "--tp 1" as
 * --tp-comm-overlap 1 and ran with it. Every command that parses long
 * options refuses a prefix with its name (exit 2); whole names, "--name=V"
 * and values that start with "-" after an option that takes one still
 * parse. */
TEST(cli_opts_no_prefix_abbreviations)
{
    const char *bin = sc_test_bin();
    if (!sc_test_exists(bin))
        return;
    char buf[256];
    CHECK(SC("%s whatif --model gpt-1.3b --cluster dgx-a100-80g --nodes 1 --global-batch 8 "
             "--tokens 1e9 --tp 1 2>&1", bin) == 2);
    CHECK_STR_HAS(message(buf, sizeof buf), "unknown option '--tp'");
    CHECK(SC("%s plan --model gpt-1.3b --cluster dgx-a100-80g --global-batch 8 --glob 8 2>&1",
             bin) == 2);
    CHECK_STR_HAS(out, "unknown option '--glob' (did you mean --global-batch?)");
    CHECK(SC("%s plan --model gpt-1.3b --cluster dgx-a100-80g --global-bach 8 2>&1", bin) == 2);
    CHECK_STR_HAS(out, "unknown option '--global-bach' (did you mean --global-batch?)");
    /* a word of an option's name; a model given without --model (the
     * option it needs is named, unless one is given) */
    static const char *const said[][2] = {
        {"plan --model gpt-1.3b --cluster dgx-a100-80g --batch 8",
         "unknown option '--batch' (did you mean --global-batch?)"},
        {"plan m.json --cluster dgx-a100-80g --global-batch 8",
         "unexpected argument 'm.json' (a model is given as --model m.json)\n"},
        {"cost gpt-1.3b --cluster dgx-a100-80g",
         "unexpected argument 'gpt-1.3b' (a model is given as --model gpt-1.3b)"},
        {"sim p.json", "unexpected argument 'p.json' (--model p.json for a model, --plan p.json "
                       "for a plan)"},
        {"sim --model gpt-1.3b x", "unexpected argument 'x'\n"}};
    for (size_t i = 0; i < SC_ARRAY_LEN(said); i++) {
        CHECK(SC("%s %s 2>&1", bin, said[i][0]) == 2);
        CHECK_STR_HAS(out, said[i][1]);
    }
    CHECK(SC("%s plan --model gpt-1.3b --cluster dgx-a100-80g --global-batch 8 --xyz 2>&1",
             bin) == 2);
    CHECK_STR_HAS(out, "unknown option '--xyz'\n");
    static const char *const cmds[] = {
        "validate --chec", "cost --model gpt-1.3b --cluster dgx-a100-80g --kern",
        "cluster show dgx-h100 --fla fa2", "export x.json --t megatron", "calibrate --clu c",
        "compare a b --js", "exec x.json --ste 2", "bench gemm --siz 64", "trace x --outp y",
        "repro seed38 --mod gpt-1.3b", "plot timeline t.json --outp x"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        CHECK(SC("%s %s 2>&1", bin, cmds[i]) == 2);
        if (!strstr(out, "unknown option '--"))
            sc_test_fail(__FILE__, __LINE__, "%s: %s", cmds[i], out);
    }
    /* whole names and =VALUE parse; a value may start with '-' */
    CHECK(SC("%s plan --model gpt-1.3b --cluster dgx-a100-80g --global-batch=8 --top 1 "
             "--json >/dev/null 2>&1", bin) == 0);
    CHECK(SC("%s cost --model gpt-1.3b --cluster dgx-a100-80g --depth -1 2>&1", bin) == 2);
    CHECK(!strstr(out, "unknown option"));
}

/* whatif --tokens takes the multipliers people write token counts with:
 * 300B is 3e11 and 1.5T 1.5e12, the same run as the number spelt out. */
TEST(cli_opts_tokens_take_multipliers)
{
    const char *w = "whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 --global-batch 64 "
                    "--json --tokens";
    static char a[sizeof out];
    REQUIRE(SC("%s %s 3e11 2>/dev/null", sc_test_bin(), w) == 0);
    snprintf(a, sizeof a, "%s", out);
    REQUIRE(SC("%s %s 300B 2>/dev/null", sc_test_bin(), w) == 0);
    CHECK(!strcmp(a, out)); /* byte for byte the same results */
    CHECK_STR_HAS(out, "\"tokens\":\t300000000000");
    REQUIRE(SC("%s %s 1.5T 2>/dev/null", sc_test_bin(), w) == 0);
    CHECK_STR_HAS(out, "\"tokens\":\t1500000000000");
    CHECK(SC("%s %s 300G 2>/dev/null", sc_test_bin(), w) == 0);
    CHECK(SC("%s %s 2M 2>/dev/null", sc_test_bin(), w) == 0);
    CHECK(SC("%s %s '300 B'", sc_test_bin(), w) == 2);
    CHECK_STR_HAS(out, "--tokens: '300 B' is not a number (like 3e11, 300B, 1.5T)");
    CHECK(SC("%s %s 2000000T", sc_test_bin(), w) == 2);
    CHECK_STR_HAS(out, "--tokens: 2000000T = 2e+18 is out of range [1, 1e+18]");
}

/* Numbers on the command line are decimal: strtod alone also reads hex
 * ("0x10" as 16, "0x1p3" as 8), leading blanks, inf and nan, which no one
 * means; each is refused with the parser's own message, in every kind of
 * number option (integer, real, count with a multiplier, size, bench sizes). */
TEST(cli_opts_numbers_are_decimal)
{
    const char *bin = sc_test_bin();
    const char *w = "whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 --global-batch 64";
    static const char *bad_tokens[] = {"0x10", "0x1p3", "' 5'", "inf", "nan", "0x1p3B", "'5 '"};
    for (size_t i = 0; i < SC_ARRAY_LEN(bad_tokens); i++) {
        CHECK(SC("%s %s --tokens %s", bin, w, bad_tokens[i]) == 2);
        CHECK_STR_HAS(out, "--tokens: '");
        CHECK_STR_HAS(out, "is not a number");
    }
    /* what people write is still read: signs, a leading point, exponents */
    static const char *good_tokens[] = {"5", "+5", ".5e3", "3e11", "3E+11", "300B", "1.5T"};
    for (size_t i = 0; i < SC_ARRAY_LEN(good_tokens); i++)
        if (SC("%s %s --tokens %s", bin, w, good_tokens[i]) != 0)
            sc_test_fail(__FILE__, __LINE__, "--tokens %s refused: %.200s", good_tokens[i], out);
    CHECK(SC("%s sim --model gpt-1.3b --cluster dgx-a100-80g --tp ' 2'", bin) == 2);
    CHECK_STR_HAS(out, "--tp: ' 2' is not an integer");
    CHECK(SC("%s sim --model gpt-1.3b --cluster dgx-a100-80g --max-mem 0x10G", bin) == 2);
    CHECK_STR_HAS(out, "--max-mem: '0x10G' is not a size (like 512M, 8G)");
    CHECK(SC("%s sim --model gpt-1.3b --cluster dgx-a100-80g --max-mem ' 16G'", bin) == 2);
    CHECK_STR_HAS(out, "--max-mem: ' 16G' is not a size");
    char never[512];
    snprintf(never, sizeof never, "%s/never.json", sc_test_tmpdir());
    CHECK(SC("%s bench gemm --sizes 16:64:0x2 -o %s", bin, never) == 2);
    CHECK_STR_HAS(out, "--sizes '16:64:0x2': FACTOR must be a number >= 1");
    CHECK(access(never, F_OK) != 0);
}
