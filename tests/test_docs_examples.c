/* test_docs_examples.c - the example commands of README.md and docs/commands.md
 * against what they print today, so the pages cannot go stale.
 *
 * An example is a line starting with "$ " inside a ``` fenced block (a line
 * ending in '\' continues on the next); the lines after it, up to the next
 * "$ " line or the end of the block, are what it prints. Each page's examples
 * run in order, through the shell as written (pipes to sed, grep, head, jq
 * included), in a scratch folder of their own (the test's scratch folder,
 * one subfolder per page, with an empty out/ as in the repository root), so
 * that files an example writes (out/plan.json, long.json) are there for the
 * ones after it. "stagecraft" and "bin/stagecraft" at the start become the
 * binary under test.
 *
 * Every shown line must be a line of the real output (stdout and stderr
 * together), byte for byte once trailing blanks are trimmed, except
 *   - "..." and lines starting with "  ..." (the page left lines out);
 *   - lines volatile by nature: a date, or an absolute path (the machine's);
 *   - values volatile by nature, masked in both lines before they are
 *     compared (the rest of the line is still checked): a wall-clock time
 *     ("in 0.09 s", validate's run time column, "2.29 s" at the end of a
 *     line) and the default memory limit ("above the limit of 11.8 GiB
 *     (--max-mem)": half this machine's memory).
 * Which examples are not run, and why, is the table skip_rules below; each
 * skip is counted, and the test fails if fewer than MIN_RUN examples ran, so
 * it cannot pass by skipping everything. What the executor measures (exec,
 * bench, calibrate, compare) is never run, so no rule for measured values is
 * needed; every example run takes under 3 s here (42 in about 11 s on two
 * cores), so none is skipped for its time.
 *
 * A failure names the page and line of the shown line, the command, the
 * shown line, and the closest actual line: one with the same text once
 * numbers are masked (every run of digits, with its '.', ',' and sign, is
 * one '#'; runs of blanks are one blank), preferring the line right after
 * (or before) the actual line its shown neighbour matched, else the only one
 * of that shape between its neighbours' matches.
 *
 * Update mode: with SC_DOCS_UPDATE=1 in the environment
 *     SC_DOCS_UPDATE=1 build/tests/run docs_examples
 * rewrites each stale shown line in place with that closest actual line,
 * when there is exactly one (none, or several of the same shape with no
 * neighbour to tell them apart, is still a failure, to fix by hand). Each
 * page is written whole or not at all (sc_write_file_atomic: a temporary
 * file, then a rename), and every line rewritten is listed; review the diff
 * (prose that quotes a changed figure is not rewritten, nor are the lines of
 * examples not run).
 *
 * Tests run from the repository root (tests/run.c), so the pages are at hand.
 */
#include "check.h"
#include "sc.h"

#include <ctype.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The examples that run today are 42; far fewer means the rules (or
 * the pages) changed so that most are skipped. */
#define MIN_RUN 30
/* No example takes more than a few seconds; a hung one must not hang the suite. */
#define EXAMPLE_TIMEOUT_S 60

static const char *const pages[] = {"README.md", "docs/commands.md"};

/* ---- a page, split into lines ------------------------------------------------ */

typedef struct page {
    const char *name;
    char **line; /* without the '\n' */
    int n;
    int final_newline;
} page;

static int page_read(page *pg, const char *name)
{
    char *s = NULL;
    size_t len = 0;
    sc_error err = {0};
    memset(pg, 0, sizeof *pg);
    pg->name = name;
    if (sc_read_file(name, 8 << 20, &s, &len, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "cannot read %s: %s", name, err.msg);
        return 0;
    }
    pg->final_newline = len > 0 && s[len - 1] == '\n';
    int cap = 0;
    for (char *p = s; *p;) {
        char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (pg->n == cap) {
            cap = cap ? 2 * cap : 1024;
            pg->line = realloc(pg->line, sizeof *pg->line * (size_t)cap);
            if (!pg->line)
                abort();
        }
        pg->line[pg->n++] = strndup(p, n);
        p += n + (eol != NULL);
    }
    sc_free(s);
    return 1;
}

static void page_free(page *pg)
{
    for (int i = 0; i < pg->n; i++)
        free(pg->line[i]);
    free(pg->line);
}

/* Writes the page back whole or not at all. */
static void page_write(const page *pg)
{
    sc_buf b = {0};
    for (int i = 0; i < pg->n; i++)
        sc_buf_printf(&b, "%s%s", pg->line[i], i + 1 < pg->n || pg->final_newline ? "\n" : "");
    sc_error err = {0};
    if (b.oom || sc_write_file_atomic(pg->name, b.s, b.len, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "cannot rewrite %s: %s", pg->name,
                     b.oom ? "out of memory" : err.msg);
    sc_buf_free(&b);
}

/* ---- comparing lines ----------------------------------------------------------- */

static void rtrim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* A shown line that stands for lines left out. */
static int is_ellipsis(const char *s)
{
    return !strcmp(s, "...") || !strncmp(s, "  ...", 5);
}

/* A shown line whose whole content differs by machine or by day: a date
 * (2026-01-01) or an absolute path (a word starting with '/' that has
 * another '/', like /usr/lib/x86_64-linux-gnu). */
static int is_volatile_line(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
            isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) && p[4] == '-' &&
            isdigit((unsigned char)p[5]) && isdigit((unsigned char)p[6]) && p[7] == '-' &&
            isdigit((unsigned char)p[8]) && isdigit((unsigned char)p[9]))
            return 1;
        if (*p == '/' && (p == s || p[-1] == ' ' || p[-1] == '(' || p[-1] == '\'' ||
                          p[-1] == '"') &&
            isalpha((unsigned char)p[1])) {
            const char *e = p + 1;
            while (*e && *e != ' ' && *e != '/')
                e++;
            if (*e == '/')
                return 1;
        }
    }
    return 0;
}

/* The length of the number at p ("536.6", "1,059.7", "40"), 0 if none. */
static size_t number_len(const char *p)
{
    if (!isdigit((unsigned char)*p))
        return 0;
    size_t n = 1;
    while (isdigit((unsigned char)p[n]) ||
           ((p[n] == '.' || p[n] == ',') && isdigit((unsigned char)p[n + 1])))
        n++;
    return n;
}

/* s with its volatile values masked, into out (see the header): a number
 * followed by " s" (seconds) after "in " or at the end of the line, and the
 * size before " (--max-mem)". The blanks before a masked value become one, as
 * a longer time takes the room of the column's padding. */
static void mask_volatile(const char *s, char *out, size_t cap)
{
    static const char mem[] = " (--max-mem)";
    size_t k = 0;
    for (const char *p = s; *p && k + 8 < cap;) {
        size_t n = number_len(p);
        const char *after = p + n;
        int lead = p == s || !isalnum((unsigned char)p[-1]);
        int secs = n && lead && !strncmp(after, " s", 2) &&
                   (after[2] == '\0' || strchr(";,)", after[2])) &&
                   ((p - s >= 3 && !strncmp(p - 3, "in ", 3)) || after[2] == '\0');
        /* "11.8 GiB (--max-mem)": the number, its unit, then the option */
        const char *unit = after;
        if (n && *unit == ' ')
            while (isalpha((unsigned char)unit[1]))
                unit++;
        int limit = n && lead && unit > after && !strncmp(unit + 1, mem, sizeof mem - 1);
        if (secs || limit) {
            while (k && out[k - 1] == ' ')
                k--;
            k += (size_t)snprintf(out + k, cap - k, "%s<volatile>", k ? " " : "");
            p = limit ? unit + 1 : after;
            continue;
        }
        /* a number kept whole, so that its tail is never taken for one */
        for (size_t j = 0; j < (n ? n : 1) && k + 8 < cap; j++)
            out[k++] = *p++;
    }
    out[k] = '\0';
}

/* s's shape: numbers (with a sign right before them) as '#', runs of blanks
 * as one blank; two lines of one shape differ only in their figures. */
static void shape_of(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *p = s; *p && k + 2 < cap;) {
        if (*p == ' ' || *p == '\t') {
            while (*p == ' ' || *p == '\t')
                p++;
            out[k++] = ' ';
            continue;
        }
        const char *q = p;
        if ((*q == '+' || *q == '-') && (q == s || q[-1] == ' ' || q[-1] == '('))
            q++;
        size_t n = number_len(q);
        if (n) {
            out[k++] = '#';
            p = q + n;
            continue;
        }
        out[k++] = *p++;
    }
    out[k] = '\0';
}

static int same_line(const char *shown, const char *actual)
{
    char a[4096], b[4096];
    mask_volatile(shown, a, sizeof a);
    mask_volatile(actual, b, sizeof b);
    return !strcmp(a, b);
}

static int same_shape(const char *shown, const char *actual)
{
    char a[4096], b[4096], ma[4096], mb[4096];
    mask_volatile(shown, ma, sizeof ma);
    mask_volatile(actual, mb, sizeof mb);
    shape_of(ma, a, sizeof a);
    shape_of(mb, b, sizeof b);
    return !strcmp(a, b);
}

/* ---- which examples run ------------------------------------------------------- */

/* One example: its command and the lines shown after it. */
typedef struct example {
    int line;       /* of the "$ " line, 1-based */
    char cmd[4096]; /* after "$ ", continuations joined by a blank, for messages */
    char sh[4096];  /* the same for the shell, with the binary's absolute path */
    int first, n;   /* the shown lines: page lines [first, first + n) */
} example;

typedef struct context {
    const char *dir; /* the page's scratch folder */
    int block_shows_output;
    int have_jq, have_gnuplot;
} context;

/* The words of cmd (at most cap, each at most 511 bytes); quotes are kept,
 * which is enough for the paths and options these rules look at. */
static int words(const char *cmd, char w[][512], int cap)
{
    int n = 0;
    for (const char *p = cmd; *p && n < cap;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        size_t k = 0;
        while (*p && *p != ' ') {
            if (k + 1 < 512)
                w[n][k++] = *p;
            p++;
        }
        w[n++][k] = '\0';
    }
    return n;
}

/* The part of cmd before its first pipe or comment: what stagecraft itself
 * is given. */
static void own_part(const char *cmd, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *p = cmd; *p && *p != '|' && !(*p == '#' && p > cmd && p[-1] == ' ') &&
                              k + 1 < cap;
         p++)
        out[k++] = *p;
    out[k] = '\0';
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* The subcommands whose output is deterministic and quick: what the
 * planner, the simulator and the exports compute from built-in models,
 * presets and files the page wrote. exec, bench and calibrate measure this
 * machine (and need mpirun or a GPU); compare reads their measurements. */
static const char *const runnable[] = {"model", "cluster", "cost",     "sim",   "plan",  "tune",
                                       "whatif", "export", "validate", "trace", "plot",  "repro"};

/* Plain file viewers run on what an earlier example wrote (`head -4
 * step.txt` after `sim --lowered step.txt`). */
static const char *const viewers[] = {"head", "tail", "cat"};

static int is_stagecraft(const char *cmd)
{
    return !strncmp(cmd, "stagecraft ", 11) || !strncmp(cmd, "bin/stagecraft ", 15);
}

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i]))
            return 1;
    return 0;
}

static int rule_no_output(const example *e, const context *c, char *why, size_t cap)
{
    return !c->block_shows_output;
}

static int rule_not_ours(const example *e, const context *c, char *why, size_t cap)
{
    char w[2][512];
    if (words(e->cmd, w, 2) < 1)
        return 1;
    if (!is_stagecraft(e->cmd)) {
        snprintf(why, cap, "%s", w[0]);
        return !in_list(w[0], viewers, SC_ARRAY_LEN(viewers));
    }
    snprintf(why, cap, "stagecraft %s", w[1]);
    return !in_list(w[1], runnable, SC_ARRAY_LEN(runnable));
}

/* A path outside the scratch folder: absolute, from home, or climbing out
 * with "..". Only the part stagecraft is given is looked at (a sed script
 * after a pipe has slashes of its own), and every redirection. */
static int is_outside(const char *w)
{
    return w[0] == '/' || w[0] == '~' || !strcmp(w, "..") || !strncmp(w, "../", 3) ||
           strstr(w, "/../") || ends_with(w, "/..");
}

static int rule_outside(const example *e, const context *c, char *why, size_t cap)
{
    char own[4096], w[64][512];
    own_part(e->cmd, own, sizeof own);
    int n = words(own, w, 64);
    for (int i = 0; i < n; i++)
        if (is_outside(w[i])) {
            snprintf(why, cap, "%s", w[i]);
            return 1;
        }
    n = words(e->cmd, w, 64);
    for (int i = 0; i < n; i++) {
        const char *r = w[i];
        if (*r != '>')
            continue;
        r += strspn(r, ">");
        if (!*r && i + 1 < n)
            r = w[i + 1];
        if (is_outside(r)) {
            snprintf(why, cap, "%s", w[i]);
            return 1;
        }
    }
    return 0;
}

/* A file the example reads: a word ending in .json or .txt that no output
 * option (-o, --timeline, --lowered) names. */
static int rule_missing_input(const example *e, const context *c, char *why, size_t cap)
{
    char own[4096], w[64][512];
    own_part(e->cmd, own, sizeof own);
    int n = words(own, w, 64);
    for (int i = 1; i < n; i++) {
        if (!ends_with(w[i], ".json") && !ends_with(w[i], ".txt"))
            continue;
        if (!strcmp(w[i - 1], "-o") || !strcmp(w[i - 1], "--timeline") ||
            !strcmp(w[i - 1], "--lowered"))
            continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", c->dir, w[i]);
        if (!sc_test_exists(path)) {
            snprintf(why, cap, "%s", w[i]);
            return 1;
        }
    }
    return 0;
}

static int rule_no_jq(const example *e, const context *c, char *why, size_t cap)
{
    return !c->have_jq && strstr(e->cmd, "| jq") != NULL;
}

/* whatif and repro draw their plots, plot draws one: all fail without gnuplot */
static int rule_no_gnuplot(const example *e, const context *c, char *why, size_t cap)
{
    char w[2][512];
    return !c->have_gnuplot && is_stagecraft(e->cmd) && words(e->cmd, w, 2) == 2 &&
           (!strcmp(w[1], "whatif") || !strcmp(w[1], "repro") || !strcmp(w[1], "plot"));
}

/* The examples not run, in the order tried; the first that matches counts. */
static const struct skip_rule {
    const char *name;
    int (*match)(const example *, const context *, char *why, size_t cap);
} skip_rules[] = {
    /* a ``` block of commands alone (a recipe, not an example of output) */
    {"its block shows no output", rule_no_output},
    /* mpirun, python3, a launch script, exec, bench, calibrate, compare, and
     * anything else that is not a deterministic, quick stagecraft command */
    {"not a command this test runs", rule_not_ours},
    /* it would read or write outside the scratch folder */
    {"names a path outside the scratch folder", rule_outside},
    /* it reads a file the page describes but no example before it wrote
     * (torch_trace.py's out/gpt2.json, validate's broken bad.json) */
    {"reads a file no example before it wrote", rule_missing_input},
    /* optional tools (scripts/deps.sh installs gnuplot-nox; jq is Debian's jq) */
    {"jq is not installed", rule_no_jq},
    {"gnuplot is not installed", rule_no_gnuplot},
};

/* ---- running an example and checking its lines ---------------------------------- */

typedef struct tally {
    int run, skipped[SC_ARRAY_LEN(skip_rules)], checked, stale, updated;
    double seconds, slowest;
    char slowest_cmd[256];
} tally;

static char output[1 << 20];

/* Splits output into trimmed lines (pointers into output). */
static int split_lines(char *s, char ***lines)
{
    int n = 0, cap = 256;
    *lines = malloc(sizeof **lines * (size_t)cap);
    if (!*lines)
        abort();
    for (char *p = s; *p;) {
        char *eol = strchr(p, '\n');
        if (eol)
            *eol = '\0';
        rtrim(p);
        if (n == cap) {
            cap *= 2;
            *lines = realloc(*lines, sizeof **lines * (size_t)cap);
            if (!*lines)
                abort();
        }
        (*lines)[n++] = p;
        if (!eol)
            break;
        p = eol + 1;
    }
    return n;
}

/* The actual line standing for shown line i whose exact text is missing,
 * or -1: the line right after the match of the shown line before it, or
 * right before the match of the one after it (no "..." between), else the
 * only line of the same shape between the two matches. pos[] holds the
 * shown lines' matches (-1: none, -2: not compared). */
static int closest(char **shown, int ns, const int *pos, int i, char **act, int na, int *shape_any)
{
    *shape_any = -1;
    for (int k = 0; k < na; k++)
        if (same_shape(shown[i], act[k])) {
            *shape_any = k;
            break;
        }
    if (i > 0 && pos[i - 1] >= 0 && pos[i - 1] + 1 < na &&
        same_shape(shown[i], act[pos[i - 1] + 1]))
        return pos[i - 1] + 1;
    if (i + 1 < ns && pos[i + 1] > 0 && same_shape(shown[i], act[pos[i + 1] - 1]))
        return pos[i + 1] - 1;
    int lo = 0, hi = na;
    for (int k = i - 1; k >= 0; k--)
        if (pos[k] >= 0) {
            lo = pos[k] + 1;
            break;
        }
    for (int k = i + 1; k < ns; k++)
        if (pos[k] >= 0) {
            hi = pos[k];
            break;
        }
    int found = -1, count = 0;
    for (int k = lo; k < hi; k++)
        if (same_shape(shown[i], act[k])) {
            found = k;
            count++;
        }
    return count == 1 ? found : -1;
}

static void run_example(page *pg, const example *e, const context *c, tally *t, int update)
{
    char script[1200];
    snprintf(script, sizeof script, "%s/example-%d.sh", c->dir, e->line);
    FILE *f = fopen(script, "w");
    if (!f) {
        sc_test_fail(__FILE__, __LINE__, "cannot write %s", script);
        return;
    }
    fprintf(f, "%s\n", e->sh);
    fclose(f);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = sc_test_sh(output, sizeof output, "cd '%s' && timeout %d sh '%s'", c->dir,
                        EXAMPLE_TIMEOUT_S, script);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    t->run++;
    t->seconds += s;
    if (s > t->slowest) {
        t->slowest = s;
        snprintf(t->slowest_cmd, sizeof t->slowest_cmd, "%.200s", e->cmd);
    }
    if (rc == 124)
        sc_test_fail(__FILE__, __LINE__, "%s:%d: `%s` ran past %d s", pg->name, e->line, e->cmd,
                     EXAMPLE_TIMEOUT_S);
    char **act;
    int na = split_lines(output, &act);
    int ns = e->n;
    char **shown = malloc(sizeof *shown * (size_t)(ns + 1));
    int *pos = malloc(sizeof *pos * (size_t)(ns + 1));
    if (!shown || !pos)
        abort();
    /* first the exact matches, in order where the order allows */
    int cursor = 0;
    for (int i = 0; i < ns; i++) {
        shown[i] = strdup(pg->line[e->first + i]);
        if (!shown[i])
            abort();
        rtrim(shown[i]);
        pos[i] = -2;
        if (is_ellipsis(shown[i]) || is_volatile_line(shown[i]))
            continue;
        t->checked++;
        pos[i] = -1;
        for (int k = cursor; k < na && pos[i] < 0; k++)
            if (same_line(shown[i], act[k]))
                pos[i] = k;
        for (int k = 0; k < cursor && pos[i] < 0; k++)
            if (same_line(shown[i], act[k]))
                pos[i] = k;
        if (pos[i] >= 0)
            cursor = pos[i] + 1;
    }
    /* then the stale ones, each beside its neighbours' matches; a line
     * placed lets its neighbour be placed, hence the passes */
    int *stale = calloc((size_t)ns + 1, sizeof *stale);
    if (!stale)
        abort();
    for (int i = 0; i < ns; i++)
        stale[i] = pos[i] == -1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < ns; i++) {
            int any;
            if (pos[i] != -1)
                continue;
            int k = closest(shown, ns, pos, i, act, na, &any);
            if (k >= 0) {
                pos[i] = k;
                changed = 1;
            }
        }
    }
    for (int i = 0; i < ns; i++) {
        if (!stale[i])
            continue;
        t->stale++;
        int line = e->first + i + 1;
        int any = -1, at = -1;
        if (pos[i] < 0) {
            for (int k = 0; k < na && any < 0; k++)
                if (same_shape(shown[i], act[k]))
                    any = k;
            /* no line of its shape (reworded): the one where it would be */
            for (int k = i - 1; k >= 0 && at < 0; k--)
                if (pos[k] >= 0)
                    at = pos[k] + 1 + (i - 1 - k);
            if (at < 0 || at >= na)
                at = na && i < na ? i : -1;
        }
        if (update && pos[i] >= 0) {
            fprintf(stderr, "    %s:%d: updated\n      was: %s\n      now: %s\n", pg->name, line,
                    shown[i], act[pos[i]]);
            free(pg->line[line - 1]);
            pg->line[line - 1] = strdup(act[pos[i]]);
            t->updated++;
            continue;
        }
        char near[1200];
        if (pos[i] >= 0)
            snprintf(near, sizeof near, "%.1000s", act[pos[i]]);
        else if (any >= 0)
            snprintf(near, sizeof near, "%.1000s   (one of several of this shape; none "
                     "placed by its neighbours)", act[any]);
        else if (at >= 0)
            snprintf(near, sizeof near, "%.1000s   (no line of this shape; this one is where "
                     "it would be; exit status %d)", act[at], rc);
        else
            snprintf(near, sizeof near, "(no line of this shape, and no line where it would "
                     "be; exit status %d)", rc);
        sc_test_fail(__FILE__, __LINE__,
                     "%s:%d: a shown line is not in the output of\n      $ %s\n"
                     "      shown:  %s\n      actual: %s", pg->name, line, e->cmd,
                     shown[i][0] ? shown[i] : "(a blank line)", near);
    }
    for (int i = 0; i < ns; i++)
        free(shown[i]);
    free(shown);
    free(pos);
    free(stale);
    free(act);
}

/* ---- the pages ------------------------------------------------------------------ */

/* Reads the example starting at page line i ("$ "): its command (with
 * continuation lines) and the shown lines up to the next "$ " or the end of
 * the block at line end. Returns the index of the line after it. */
static int read_example(const page *pg, int i, int end, example *e)
{
    memset(e, 0, sizeof *e);
    e->line = i + 1;
    size_t kc = 0, ks = 0;
    const char *bin = sc_test_bin();
    for (int first = 1;; first = 0) {
        const char *l = pg->line[i] + (first ? 2 : 0);
        size_t len = strlen(l);
        int more = len && l[len - 1] == '\\' && i + 1 < end;
        const char *body = l;
        if (!first)
            while (*body == ' ')
                body++;
        kc += (size_t)snprintf(e->cmd + kc, sizeof e->cmd - kc, "%s%.*s", first ? "" : " ",
                               (int)(strlen(body) - (size_t)more), body);
        if (kc >= sizeof e->cmd)
            kc = sizeof e->cmd - 1;
        if (first && is_stagecraft(l)) {
            l += !strncmp(l, "bin/", 4) ? 15 : 11;
            ks += (size_t)snprintf(e->sh + ks, sizeof e->sh - ks, "'%s' ", bin);
        }
        ks += (size_t)snprintf(e->sh + ks, sizeof e->sh - ks, "%s%s", l, more ? "\n" : "");
        if (ks >= sizeof e->sh)
            ks = sizeof e->sh - 1;
        i++;
        if (!more)
            break;
    }
    e->first = i;
    while (i < end && strncmp(pg->line[i], "$ ", 2))
        i++;
    e->n = i - e->first;
    return i;
}

static void check_page(const char *name, tally *t, const context *tools, int update)
{
    page pg;
    if (!page_read(&pg, name))
        return;
    char dir[800], outdir[900];
    snprintf(dir, sizeof dir, "%s/%s", sc_test_tmpdir(), sc_basename(name));
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    /* the pages run from the repository root, where out/ is the output
     * folder (README's tour says to make it) and validation/ holds the
     * suites `validate` finds in the working folder (beside bin/stagecraft
     * it would find them too, but not beside the sanitizer build's binary) */
    char cwd[600], suites[700], link[900];
    if (mkdir(dir, 0755) != 0 || mkdir(outdir, 0755) != 0 || !getcwd(cwd, sizeof cwd)) {
        sc_test_fail(__FILE__, __LINE__, "cannot make %s", outdir);
        page_free(&pg);
        return;
    }
    snprintf(suites, sizeof suites, "%s/validation", cwd);
    snprintf(link, sizeof link, "%s/validation", dir);
    if (symlink(suites, link) != 0) {
        sc_test_fail(__FILE__, __LINE__, "cannot link %s", link);
        page_free(&pg);
        return;
    }
    int stale_before = t->stale, updated_before = t->updated;
    for (int i = 0; i < pg.n; i++) {
        if (strncmp(pg.line[i], "```", 3))
            continue;
        int b = i + 1, end = b;
        while (end < pg.n && strncmp(pg.line[end], "```", 3))
            end++;
        i = end; /* the closing fence */
        int shows = 0, has_cmd = 0;
        for (int k = b; k < end; k++) {
            if (!strncmp(pg.line[k], "$ ", 2))
                has_cmd = 1;
            else if (has_cmd && !(k > b && ends_with(pg.line[k - 1], "\\")))
                shows = 1;
        }
        context c = *tools;
        c.dir = dir;
        c.block_shows_output = shows;
        for (int k = b; k < end;) {
            if (strncmp(pg.line[k], "$ ", 2)) {
                k++;
                continue;
            }
            static example e;
            k = read_example(&pg, k, end, &e);
            int skip = -1;
            char why[600] = "";
            for (size_t r = 0; r < SC_ARRAY_LEN(skip_rules) && skip < 0; r++)
                if (skip_rules[r].match(&e, &c, why, sizeof why))
                    skip = (int)r;
            if (skip >= 0) {
                t->skipped[skip]++;
                if (getenv("SC_DOCS_VERBOSE"))
                    fprintf(stderr, "    %s:%d: skipped (%s%s%s): %s\n", name, e.line,
                            skip_rules[skip].name, why[0] ? ": " : "", why, e.cmd);
                continue;
            }
            run_example(&pg, &e, &c, t, update);
        }
    }
    if (update && t->updated > updated_before)
        page_write(&pg);
    if (update)
        fprintf(stderr, "    %s: %d stale lines, %d rewritten\n", name, t->stale - stale_before,
                t->updated - updated_before);
    page_free(&pg);
}

TEST(docs_examples_match_output)
{
    char buf[256];
    context tools = {
        .have_jq = sc_test_sh(buf, sizeof buf, "command -v jq") == 0,
        .have_gnuplot = sc_test_sh(buf, sizeof buf, "command -v gnuplot") == 0,
    };
    const char *u = getenv("SC_DOCS_UPDATE");
    int update = u && *u && strcmp(u, "0") != 0;
    tally t = {0};
    for (size_t p = 0; p < SC_ARRAY_LEN(pages); p++)
        check_page(pages[p], &t, &tools, update);
    int skipped = 0;
    char why[1024] = "";
    size_t k = 0;
    for (size_t r = 0; r < SC_ARRAY_LEN(skip_rules); r++) {
        skipped += t.skipped[r];
        if (t.skipped[r] && k < sizeof why)
            k += (size_t)snprintf(why + k, sizeof why - k, "%s%d %s", k ? ", " : "",
                                  t.skipped[r], skip_rules[r].name);
    }
    fprintf(stderr, "    %d examples run (%d shown lines compared, %d stale) in %.1f s, slowest "
            "%.1f s (%.80s); %d skipped: %s\n", t.run, t.checked, t.stale, t.seconds, t.slowest,
            t.slowest_cmd, skipped, why);
    if (t.run < MIN_RUN)
        sc_test_fail(__FILE__, __LINE__, "only %d examples ran (at least %d should): the skip "
                     "rules or the pages changed", t.run, MIN_RUN);
}
