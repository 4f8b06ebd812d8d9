/* test_whatif.c - the checkpoint-interval mathematics, the expected-time
 * model's limits, the Pareto front, node lists, a study through the library
 * and the whatif command's files and errors. */
#include "check.h"
#include "json.h"
#include "whatif.h"

#include <math.h>
#include <stdlib.h>

/* Young 1974 and Daly 2006 against values worked by hand (δ = 60 s, M = 1 h):
 * Young sqrt(2·60·3600) = sqrt(432000) = 657.267069...; Daly r = δ/2M = 1/120,
 * 657.267069 · (1 + sqrt(1/120)/3 + 1/1080) - 60 = 617.875649... */
TEST(whatif_young_daly_interval)
{
    CHECK_NEAR(sc_whatif_young_interval(60, 3600), 657.2670690061993, 1e-12);
    CHECK_NEAR(sc_whatif_daly_interval(60, 3600), 617.8756496256495, 1e-12);
    /* δ >= 2M: checkpoint every M */
    CHECK_NEAR(sc_whatif_daly_interval(100, 40), 40, 1e-15);
    CHECK_NEAR(sc_whatif_daly_interval(80, 40), 40, 1e-15);
    /* no interruptions: never */
    CHECK(isinf(sc_whatif_young_interval(60, INFINITY)));
    CHECK(isinf(sc_whatif_daly_interval(60, INFINITY)));
    /* Daly tends to Young as δ/M -> 0 (relative gap ~ sqrt(δ/2M)/3) */
    double y = sc_whatif_young_interval(1, 1e8), d = sc_whatif_daly_interval(1, 1e8);
    CHECK(d < y * 1.001 && d > y * 0.999);
}

/* Daly 2006's exponential ("complete") model, to check the first-order one
 * where both should hold. */
static double daly_complete(double ts, double delta, double r, double tau, double m)
{
    return m * exp(r / m) * (exp((tau + delta) / m) - 1) * ts / tau;
}

TEST(whatif_expected_time_limits)
{
    /* hand value: T_s 10 h, δ 60 s, R 600 s, τ 600 s, M 10 h:
     * (36000 + 59·60) / (1 - (330 + 600)/36000) = 39540 / 0.97416... */
    CHECK_NEAR(sc_whatif_wall(36000, 60, 600, 600, 36000), 40588.5372112917, 1e-12);
    /* no interruptions: no overhead at all */
    CHECK(sc_whatif_wall(1e6, 60, 600, INFINITY, INFINITY) == 1e6);
    sc_whatif_spot s;
    sc_whatif_spot_eval(1e6, 16, 0, 18e9, 1e9, 600, &s);
    CHECK(s.feasible);
    CHECK(s.wall_s == 1e6);
    CHECK(s.waste_fraction == 0);
    CHECK(isinf(s.interval_s));
    CHECK_NEAR(s.checkpoint_s, 18e9 / 16e9, 1e-15);
    /* rarer interruptions waste less */
    double prev = 1;
    for (double rate = 0.1; rate > 1e-6; rate /= 4) {
        sc_whatif_spot_eval(1e6, 8, rate, 18e9, 1e9, 600, &s);
        REQUIRE(s.feasible);
        CHECK(s.waste_fraction < prev);
        CHECK(s.waste_fraction > 0);
        CHECK_NEAR(s.interruptions_per_hour, 8 * rate, 1e-15);
        CHECK_NEAR(s.mtbi_s, 3600 / (8 * rate), 1e-12);
        prev = s.waste_fraction;
    }
    /* more nodes: interrupted more often, but each checkpoint is faster */
    sc_whatif_spot a, b;
    sc_whatif_spot_eval(1e6, 1, 0.01, 18e9, 1e9, 600, &a);
    sc_whatif_spot_eval(1e6, 64, 0.01, 18e9, 1e9, 600, &b);
    CHECK_NEAR(b.checkpoint_s * 64, a.checkpoint_s, 1e-12);
    CHECK(b.waste_fraction > a.waste_fraction);
    /* infeasible when M is tiny: the restart alone outlasts the mean interval */
    sc_whatif_spot_eval(1e6, 1, 12, 18e9, 1e9, 600, &s); /* M = 300 s < R */
    CHECK(!s.feasible);
    CHECK(isinf(s.wall_s));
    CHECK(s.waste_fraction == 1);
    CHECK(isinf(sc_whatif_wall(1e6, 60, 600, 600, 900)));   /* 930 >= 900 */
    CHECK(isfinite(sc_whatif_wall(1e6, 60, 600, 600, 1000))); /* 930 < 1000 */
    /* the first-order model agrees with Daly's exponential one when δ, R, τ << M */
    struct { double delta, r, m, tol; } cs[] = {
        {10, 60, 1e5, 1e-4}, {18.4, 600, 360000, 1e-4}, {0.29, 600, 5625, 1e-2}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cs); i++) {
        double tau = sc_whatif_daly_interval(cs[i].delta, cs[i].m);
        CHECK_NEAR(sc_whatif_wall(1e6, cs[i].delta, cs[i].r, tau, cs[i].m),
                   daly_complete(1e6, cs[i].delta, cs[i].r, tau, cs[i].m), cs[i].tol);
    }
    /* Daly's interval is (near) the best interval for the model it feeds */
    double tau = sc_whatif_daly_interval(18.4, 360000), best = sc_whatif_wall(1e6, 18.4, 600, tau, 360000);
    CHECK(best <= sc_whatif_wall(1e6, 18.4, 600, tau * 2, 360000));
    CHECK(best <= sc_whatif_wall(1e6, 18.4, 600, tau / 2, 360000));
}

TEST(whatif_pareto_front)
{
    /* (days, $): 0 (1,10) front; 1 (2,5) front; 2 (3,6) dominated by 1;
     * 3 (4,1) front; 4 (2,5) equal to 1: kept; 5 (1,12) dominated by 0;
     * 6 (inf) never; 7 (0.5, 100) front */
    double x[] = {1, 2, 3, 4, 2, 1, INFINITY, 0.5};
    double y[] = {10, 5, 6, 1, 5, 12, 0.1, 100};
    int f[8];
    CHECK_EQ_INT(sc_whatif_pareto(x, y, 8, f), 5);
    int want[] = {1, 1, 0, 1, 1, 0, 0, 1};
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(f[i], want[i]);
    CHECK_EQ_INT(sc_whatif_pareto(x, y, 0, f), 0);
}

TEST(whatif_parse_nodes)
{
    long v[SC_WHATIF_MAX_COUNTS];
    int n = 0;
    sc_error err;
    REQUIRE(sc_whatif_parse_nodes("1-64", v, SC_WHATIF_MAX_COUNTS, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 7);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(v[i], 1L << i);
    REQUIRE(sc_whatif_parse_nodes("12,3,1,2-8,4", v, SC_WHATIF_MAX_COUNTS, &n, &err) == SC_OK);
    long want[] = {1, 2, 3, 4, 8, 12};
    CHECK_EQ_INT(n, 6);
    for (int i = 0; i < n && i < 6; i++)
        CHECK_EQ_INT(v[i], want[i]);
    REQUIRE(sc_whatif_parse_nodes("3-20", v, SC_WHATIF_MAX_COUNTS, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(v[0], 4);
    const char *bad[] = {"", "x", "4-2", "0", "3-3", "1,,2", "1-", "-4", "2,100001", "1.5"};
    for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
        err.msg[0] = '\0';
        CHECK(sc_whatif_parse_nodes(bad[i], v, SC_WHATIF_MAX_COUNTS, &n, &err) == SC_EINVAL);
        CHECK_STR_HAS(err.msg, "--nodes");
    }
    CHECK(sc_whatif_parse_nodes("1,2,3", v, 2, &n, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "more than 2");
}

/* Through the library: a count where no configuration matches is skipped
 * (global batch 1 on 512 GPUs needs tp·pp = 512: pp 64 > 24 layers), the
 * rest of the study goes on. */
TEST(whatif_study_skips)
{
    sc_model *m;
    sc_cluster c;
    sc_error err;
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    sc_whatif_opts o;
    sc_whatif_opts_default(&o);
    o.global_batch = 1;
    o.tokens = 1e9;
    o.spot = 1;
    long nodes[] = {1, 64};
    sc_whatif *w;
    REQUIRE(sc_whatif_run(m, &c, 1, nodes, 2, &o, &w, &err) == SC_OK);
    CHECK_EQ_INT(w->n_points, 1);
    CHECK_EQ_INT(w->n_skipped, 1);
    CHECK_EQ_INT(w->skipped[0].nodes, 64);
    CHECK_STR_HAS(w->skipped[0].reason, "no configuration");
    CHECK_NEAR(w->points[0].scaling_efficiency, 1, 1e-15);
    CHECK(w->points[0].pareto_on_demand || w->points[0].pareto_spot);
    sc_whatif_free(w);
    /* bad options fail the study */
    long down[] = {4, 2};
    CHECK(sc_whatif_run(m, &c, 1, down, 2, &o, &w, &err) == SC_EINVAL);
    o.tokens = 0;
    CHECK(sc_whatif_run(m, &c, 1, nodes, 2, &o, &w, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--tokens");
    sc_model_free(m);
}

static char out[1 << 17];

static int file_starts(const char *path, const char *magic, size_t n)
{
    char *data = NULL;
    size_t len = 0;
    sc_error err;
    if (sc_read_file(path, 1 << 26, &data, &len, &err))
        return 0;
    int ok = len >= n && memcmp(data, magic, n) == 0;
    sc_free(data);
    return ok;
}

static const cJSON *get(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!x)
        sc_test_fail(__FILE__, __LINE__, "no key %s", k);
    return x;
}

/* gpt-1.3b on p4d.24xlarge and p5.48xlarge at 1, 2, 4 nodes, spot: the CSV,
 * JSON, PNG and SVG files exist and parse, days fall as nodes grow, costs
 * are nodes × price × hours. */
TEST(whatif_cli_study)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s whatif --model gpt-1.3b --cluster p4d.24xlarge,p5.48xlarge --nodes 1,2,4 "
                       "--global-batch 64 --tokens 1e10 --spot -o %s/w/x --json 2>/dev/null",
                       bin, d) == 0);
    cJSON *printed = cJSON_Parse(out);
    REQUIRE(printed);
    char path[700];
    snprintf(path, sizeof path, "%s/w/x/whatif.json", d);
    cJSON *j;
    sc_error err;
    REQUIRE(sc_json_load(path, &j, &err) == SC_OK);
    CHECK(cJSON_Compare(j, printed, 1));
    cJSON_Delete(printed);
    CHECK_STR_HAS(cJSON_GetStringValue(get(j, "format")), "stagecraft.whatif/1");
    CHECK_STR_HAS(cJSON_GetStringValue(get(j, "model")), "gpt-1.3b");
    CHECK_EQ_INT(cJSON_GetArraySize(get(j, "clusters")), 2);
    CHECK_EQ_INT(get(j, "global_batch")->valuedouble, 64);
    const cJSON *pts = get(j, "points");
    REQUIRE(cJSON_GetArraySize(pts) == 6);
    CHECK_EQ_INT(cJSON_GetArraySize(get(j, "skipped")), 0);
    double prev_days = INFINITY;
    const char *prev_cluster = "";
    for (int i = 0; i < 6; i++) {
        const cJSON *p = cJSON_GetArrayItem(pts, i);
        const char *cname = cJSON_GetStringValue(get(p, "cluster"));
        REQUIRE(cname);
        sc_cluster c;
        REQUIRE(sc_cluster_preset_get(cname, &c, &err) == SC_OK);
        double nodes = get(p, "nodes")->valuedouble, days = get(p, "days")->valuedouble;
        CHECK_EQ_INT(get(p, "gpus")->valuedouble, nodes * 8);
        const cJSON *g = get(p, "config");
        CHECK_EQ_INT(get(g, "dp")->valuedouble * get(g, "tp")->valuedouble *
                         get(g, "pp")->valuedouble,
                     nodes * 8);
        CHECK_EQ_INT(get(g, "dp")->valuedouble * get(g, "m")->valuedouble *
                         get(g, "mbs")->valuedouble,
                     64);
        if (strcmp(cname, prev_cluster)) {
            prev_days = INFINITY;
            CHECK_NEAR(get(p, "scaling_efficiency")->valuedouble, 1, 1e-12);
        }
        CHECK(days < prev_days);
        prev_days = days;
        prev_cluster = cname;
        double tps = get(p, "tokens_per_s")->valuedouble;
        CHECK_NEAR(days, 1e10 / tps / 86400, 1e-12);
        CHECK_NEAR(get(p, "cost_on_demand_usd")->valuedouble,
                   nodes * c.price.on_demand_per_hour * days * 24, 1e-12);
        const cJSON *s = get(p, "spot");
        REQUIRE(cJSON_IsObject(s));
        CHECK(cJSON_IsTrue(get(s, "feasible")));
        double sdays = get(s, "days")->valuedouble, waste = get(s, "waste_fraction")->valuedouble;
        CHECK(sdays > days);
        CHECK_NEAR(days / sdays, 1 - waste, 1e-12);
        CHECK_NEAR(get(p, "cost_spot_usd")->valuedouble, nodes * c.price.spot_per_hour * sdays * 24,
                   1e-12);
        CHECK_NEAR(get(s, "interruptions_per_hour")->valuedouble,
                   nodes * c.price.spot_interruptions_per_hour, 1e-12);
        CHECK(get(s, "checkpoint_s")->valuedouble > 0);
        CHECK(get(s, "interval_s")->valuedouble > 0);
    }
    const cJSON *pa = get(j, "pareto");
    CHECK(cJSON_GetArraySize(pa) >= 1);
    for (int i = 0; i < cJSON_GetArraySize(pa); i++) {
        const cJSON *p = cJSON_GetArrayItem(pts, (int)cJSON_GetArrayItem(pa, i)->valuedouble);
        REQUIRE(p);
        CHECK(cJSON_IsTrue(get(p, "pareto_on_demand")) || cJSON_IsTrue(get(p, "pareto_spot")));
    }
    cJSON_Delete(j);
    /* the CSV: a header and one row per point, 27 fields each (cp last) */
    snprintf(path, sizeof path, "%s/w/x/whatif.csv", d);
    char *csv = NULL;
    size_t len;
    REQUIRE(sc_read_file(path, 1 << 20, &csv, &len, &err) == SC_OK);
    CHECK(!strncmp(csv, "cluster,nodes,gpus,dp,", 22));
    int lines = 0, fields = 1, bad = 0;
    for (size_t i = 0; i < len; i++) {
        if (csv[i] == ',')
            fields++;
        if (csv[i] == '\n') {
            bad |= fields != 27;
            fields = 1;
            lines++;
        }
    }
    CHECK_EQ_INT(lines, 7);
    CHECK(!bad);
    sc_free(csv);
    static const char *const charts[] = {"time_vs_cost", "tokens_vs_nodes",
                                         "cost_per_mtok_vs_nodes"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/w/x/%s.png", d, charts[i]);
        CHECK(file_starts(path, "\x89PNG\r\n\x1a\n", 8));
        snprintf(path, sizeof path, "%s/w/x/%s.svg", d, charts[i]);
        CHECK(file_starts(path, "<?xml", 5));
        REQUIRE(sc_test_sh(out, sizeof out, "grep -c '</svg>' %s", path) == 0);
    }
    /* nothing temporary left behind */
    REQUIRE(sc_test_sh(out, sizeof out, "ls -A %s/w/x | wc -l", d) == 0);
    CHECK_EQ_INT(atoi(out), 8);
    /* the table */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s whatif --model gpt-1.3b --cluster p4d.24xlarge,dgx-h100 --nodes 1-2 "
                       "--global-batch 64 --tokens 1e10 --spot -o %s/w/t 2>&1",
                       bin, d) == 0);
    CHECK_STR_HAS(out, "p4d.24xlarge       1     8");
    CHECK_STR_HAS(out, "dgx-h100: $23.92/h on demand per node; no spot price");
    CHECK_STR_HAS(out, "wrote ");
}

/* bad input: exit 2 (no configuration at all: 5), a clear message, nothing written */
TEST(whatif_cli_errors)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    char path[700];
    snprintf(path, sizeof path, "%s/nothing", d);
    CHECK(sc_test_sh(out, sizeof out,
                     "%s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 1,x "
                     "--global-batch 64 --tokens 1e10 -o %s",
                     bin, path) == 2);
    CHECK_STR_HAS(out, "--nodes: 'x' is not a count or a range A-B");
    CHECK(sc_test_sh(out, sizeof out,
                     "%s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 8-4 "
                     "--global-batch 64 --tokens 1e10 -o %s",
                     bin, path) == 2);
    CHECK_STR_HAS(out, "--nodes: '8-4'");
    CHECK(sc_test_sh(out, sizeof out,
                     "%s whatif --model gpt-1.3b --cluster p4d.24xlarge,nosuch.box --nodes 1 "
                     "--global-batch 64 --tokens 1e10 -o %s",
                     bin, path) == 2);
    CHECK_STR_HAS(out, "nosuch.box");
    CHECK(sc_test_sh(out, sizeof out,
                     "%s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 "
                     "--global-batch 64 -o %s",
                     bin, path) == 2);
    CHECK_STR_HAS(out, "--tokens");
    CHECK(sc_test_sh(out, sizeof out,
                     "%s whatif --model gpt-1.3b --cluster p4d.24xlarge,p4d.24xlarge --nodes 1 "
                     "--global-batch 64 --tokens 1e10 -o %s",
                     bin, path) == 2);
    CHECK_STR_HAS(out, "listed twice");
    /* every count skipped: exit 5 (infeasible), the reasons, nothing written */
    CHECK(sc_test_sh(out, sizeof out,
                     "%s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 64 "
                     "--global-batch 1 --tokens 1e10 -o %s",
                     bin, path) == 5);
    CHECK_STR_HAS(out, "nothing written");
    CHECK_STR_HAS(out, "no configuration");
    CHECK(!sc_test_exists(path));
}
