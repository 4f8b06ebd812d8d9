/* test_harden_limits.c - memory and time limits: sc_step_size_estimate
 * against what sc_step_simulate builds, sim's --max-mem refusal just over
 * the estimate, the search's progress and --time-limit, and the optimal
 * partitioner's deadline. */
#include "check.h"
#include "pair_check.h"
#include "cluster.h"
#include "lower.h"
#include "model.h"
#include "partitioner.h"
#include "search.h"
#include "step.h"

#include <stdlib.h>

static char out[1 << 16];

/* The estimate's counts are never below what the simulator builds and at
 * most twice it, on layouts that exercise every kind of action. */
TEST(limits_step_size_counts)
{
    static const struct {
        int dp, tp, pp, v, m;
        const char *sched;
        int zero, rc, one, tl, cp, slices;
    } cases[] = {
        {8, 8, 2, 1, 8, "1f1b", 0, 0, 0, 1, 0, 0},        {8, 8, 2, 1, 16, "1f1b", 0, 0, 1, 0, 0, 0},
        {4, 2, 8, 2, 16, "interleaved", 3, 2, 0, 1, 0, 0}, {2, 8, 8, 1, 32, "zb-h1", 1, 1, 0, 1, 0, 0},
        {16, 1, 4, 1, 8, "gpipe", 2, 1, 1, 1, 0, 0},      {1, 1, 1, 1, 4, "1f1b", 0, 0, 0, 1, 0, 0},
        {4, 2, 2, 1, 8, "1f1b", 1, 0, 0, 1, 2, 0},        {2, 2, 1, 1, 4, "1f1b", 0, 1, 1, 1, 4, 0},
        /* FSDP-like ZeRO 3: every backward cut into its buckets */
        {16, 1, 1, 1, 8, "1f1b", 3, 1, 0, 1, 0, 0},       {16, 1, 1, 1, 8, "1f1b", 3, 0, 1, 0, 0, 0},
        /* token slices (TeraPipe): every slice an op of its own, under ZeRO 2 each
         * backward slice cut into its buckets (the estimate once counted the
         * microbatches alone: 1,110 actions for 8,582) */
        {16, 1, 2, 1, 8, "1f1b", 2, 0, 0, 1, 0, 8},    {16, 1, 2, 1, 8, "1f1b", 1, 0, 1, 0, 0, 4},
    };
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 16, &m, &c);
    REQUIRE(m);
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        sc_step_cfg cfg = {0};
        cfg.dp = cases[i].dp;
        cfg.tp = cases[i].tp;
        cfg.pp = cases[i].pp;
        cfg.v = cases[i].v;
        cfg.m = cases[i].m;
        cfg.mbs = 1;
        cfg.schedule = cases[i].sched;
        cfg.zero = cases[i].zero;
        cfg.recompute = (sc_recompute)cases[i].rc;
        cfg.one_replica = cases[i].one;
        cfg.want_timeline = cases[i].tl;
        cfg.slices = cases[i].slices;
        cfg.cp = cases[i].cp;
        cfg.attn = cfg.cp ? SC_ATTN_FLASH : SC_ATTN_UNFUSED;
        sc_step_size z;
        sc_step_size_estimate(m, &c, &cfg, &z);
        sc_error err = {0};
        sc_lowered *lw = NULL;
        REQUIRE(sc_lower(m, &c, &cfg, &lw, &err) == SC_OK);
        long actions = 0;
        for (int p = 0; p < cfg.pp; p++)
            actions += lw->pos[p].n;
        sc_lower_free(lw);
        sc_step_result *r = NULL;
        REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
        long ops = 0;
        for (int k = 0; r->timeline && k < r->timeline->n_ranks; k++)
            ops += r->timeline->ranks[k].n_ops;
        CHECK(z.actions >= actions && z.actions <= 2.0 * actions);
        CHECK(z.tasks >= r->n_tasks && z.tasks <= 2.0 * r->n_tasks);
        if (cfg.want_timeline)
            CHECK(z.timeline_ops >= ops && z.timeline_ops <= 2.0 * ops);
        else
            CHECK(z.timeline_ops == 0);
        CHECK(z.bytes > 0);
        if (sc_test_failed_now())
            fprintf(stderr, "    case %zu: actions %ld est %.0f, tasks %d est %.0f, ops %ld est %.0f\n",
                    i, actions, z.actions, r->n_tasks, z.tasks, ops, z.timeline_ops);
        /* the cap: just under the estimate refuses, just over it runs */
        sc_step_result_free(r);
        r = NULL;
        cfg.max_mem_bytes = z.bytes * 0.999;
        CHECK(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_EINVAL);
        CHECK(r == NULL);
        CHECK_STR_HAS(err.msg, "above the limit of");
        cfg.max_mem_bytes = z.bytes * 1.001;
        CHECK(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
        sc_step_result_free(r);
    }
    sc_model_free(m);
}

/* The memory bomb is refused at once, in one line with the estimate
 * and the limit; a configuration just over a small --max-mem is refused and
 * one under it runs; --one-replica stays available. */
TEST(limits_sim_max_mem_cli)
{
    const char *bin = sc_test_bin();
    CHECK(sc_test_sh(out, sizeof out,
                     "%s sim --model gpt-175b --cluster dgx-a100-80g --nodes 128 --dp 8 --tp 8 "
                     "--pp 16 --microbatches 65536 --mbs 1 --schedule 1f1b --max-mem 8G",
                     bin) == 2);
    CHECK_STR_HAS(out, "stagecraft: sim: simulating this step needs about ");
    CHECK_STR_HAS(out, "above the limit of 8.0 GiB (--max-mem)");
    CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* one line */
    /* a small config around a small cap: the estimate decides */
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 2, &m, &c);
    REQUIRE(m);
    sc_step_cfg cfg = {.dp = 2, .tp = 8, .pp = 1, .v = 1, .m = 64, .mbs = 1, .schedule = "1f1b"};
    sc_step_size z;
    sc_step_size_estimate(m, &c, &cfg, &z);
    sc_model_free(m);
    const char *args = "--model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 8 --pp 1 "
                       "--microbatches 64 --mbs 1";
    double mib = z.bytes / 1048576;
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s --max-mem %.3fM", bin, args, mib - 0.5) == 2);
    CHECK_STR_HAS(out, "above the limit of");
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s --max-mem %.3fM", bin, args, mib + 0.5) == 0);
    CHECK_STR_HAS(out, "step time");
    CHECK(sc_test_sh(out, sizeof out, "%s sim %s --max-mem lots", bin, args) == 2);
    CHECK_STR_HAS(out, "--max-mem: 'lots' is not a size");
    /* plan: a search whose candidates are all over the cap names the cap and
     * the analytical estimate */
    CHECK(sc_test_sh(out, sizeof out,
                     "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --global-batch 64 "
                     "--fix dp=2,tp=8,pp=1,mbs=1 --max-mem 1M",
                     bin) == 2);
    CHECK_STR_HAS(out, "(--max-mem); its analytical estimate: step ");
    CHECK_STR_HAS(out, "above the limit of 1.0 MiB (--max-mem)"); /* was "0.0 GiB" */
    CHECK(!strstr(out, "0.0 GiB"));
}

static int calls[2], last_done[2];
static long last_total[2];
static int monotone = 1;

static void record(void *ud, const sc_search_progress *p)
{
    int ph = p->phase ? 1 : 0;
    if (p->done < last_done[ph] || p->fraction < 0 || p->fraction > 1 + 1e-9)
        monotone = 0;
    calls[ph]++;
    last_done[ph] = (int)p->done;
    last_total[ph] = p->total;
}

static void record_reset(void)
{
    calls[0] = calls[1] = last_done[0] = last_done[1] = 0;
    last_total[0] = last_total[1] = 0;
    monotone = 1;
}

/* Progress comes for every shape and every simulation, done counting up to
 * the total; a time limit ranks what was found, and says so. */
TEST(limits_search_progress_and_time_limit)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-1.3b", "p4d.24xlarge", 4, &m, &c);
    REQUIRE(m);
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 64;
    o.simulate = 4;
    o.progress = record;
    record_reset();
    sc_search *s = NULL;
    sc_error err = {0};
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    int limited, over;
    long done, total;
    sc_search_limits(s, &limited, &done, &total, &over);
    CHECK(!limited && over == 0);
    CHECK(total > 10 && done == total);
    CHECK(monotone);
    CHECK_EQ_INT(calls[0], (int)total);
    CHECK_EQ_INT(last_done[0], (int)total);
    CHECK_EQ_INT(calls[1], 4);
    CHECK_EQ_INT((int)last_total[1], 4);
    double best = sc_search_ranked(s, 0)->sim->step_time_s;
    sc_search_free(s);
    /* a limit already past: the first shape that fits, then a ranking */
    o.progress = NULL;
    o.time_limit_s = 1e-9;
    REQUIRE(sc_search_run(m, &c, &o, &s, &err) == SC_OK);
    sc_search_limits(s, &limited, &done, &total, &over);
    CHECK(limited);
    CHECK(done >= 1 && done < total);
    CHECK(sc_search_ranked(s, 0) != NULL);
    CHECK(sc_search_ranked(s, 0)->sim->step_time_s >= best * (1 - 1e-12));
    sc_search_free(s);
    sc_model_free(m);
    /* the command says so on stdout and stderr */
    CHECK(sc_test_sh(out, sizeof out,
                     "%s plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 4 --global-batch 64 "
                     "--time-limit 0.001",
                     sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "time limit of 0.001 s reached after ");
    CHECK_STR_HAS(out, "the best plans found so far");
    CHECK_STR_HAS(out, "plan: the time limit of 0.001 s ran out after ");
}

/* The optimal partitioner past its deadline returns a valid split no better
 * than the optimum (its best so far). */
TEST(limits_partition_deadline)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-13b", "p4d.24xlarge", 4, &m, &c);
    REQUIRE(m);
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 8);
    cfg.tp = 8;
    cfg.zero = 3;
    cfg.recompute = SC_RECOMPUTE_FULL;
    cfg.inflight_max = 1;
    sc_partition best = {0}, late = {0};
    sc_error err = {0};
    REQUIRE(sc_partition_optimal(&cfg, &best, &err) == SC_OK);
    cfg.deadline_s = 1e-9; /* long past */
    REQUIRE(sc_partition_optimal(&cfg, &late, &err) == SC_OK);
    sc_part_eval eb, el;
    REQUIRE(sc_partition_eval(&cfg, &best, &eb, &err) == SC_OK);
    REQUIRE(sc_partition_eval(&cfg, &late, &el, &err) == SC_OK);
    CHECK(el.fits);
    CHECK_EQ_INT(late.n_stages, 8);
    CHECK(el.bottleneck_s >= eb.bottleneck_s * (1 - 1e-12));
    sc_part_eval_free(&eb);
    sc_part_eval_free(&el);
    sc_partition_free(&best);
    sc_partition_free(&late);
    /* its working memory under a limit: refused, naming it */
    cfg.deadline_s = 0;
    cfg.max_bytes = 1000;
    CHECK(sc_partition_optimal(&cfg, &late, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "need more than 0.0 MiB of working memory");
    cfg.max_bytes = 1e9;
    CHECK(sc_partition_optimal(&cfg, &late, &err) == SC_OK);
    sc_partition_free(&late);
    sc_model_free(m);
    /* past the deadline before any split exists (the compute-balanced start
     * does not fit in memory): the first valid split still comes, where one
     * exists, and a shape that fits nowhere says so (before: "time limit
     * reached" for both; the search past its limit with nothing fitting asks
     * for exactly that split) */
    sc_test_open_pair("gpt-175b", "dgx-a100-80g", 5, &m, &c);
    REQUIRE(m);
    int both = 0;
    for (int pp = 2; pp <= 40; pp++) {
        for (int tp = 1; tp <= 8; tp *= 2) {
            if (40 % (pp * tp))
                continue;
            sc_partitioner_cfg_init(&cfg, m, &c, pp);
            cfg.tp = tp;
            cfg.dp = 40 / (pp * tp);
            cfg.recompute = SC_RECOMPUTE_FULL;
            cfg.deadline_s = 0;
            sc_status sb = sc_partition_optimal(&cfg, &best, &err);
            cfg.deadline_s = 1e-9;
            sc_status sl = sc_partition_optimal(&cfg, &late, &err);
            CHECK_EQ_INT(sl, sb);
            if (!sb && !sl) {
                both++;
                REQUIRE(sc_partition_eval(&cfg, &late, &el, &err) == SC_OK);
                CHECK(el.fits);
                sc_part_eval_free(&el);
            }
            if (!sb)
                sc_partition_free(&best);
            if (!sl)
                sc_partition_free(&late);
        }
    }
    CHECK(both >= 3);
    sc_model_free(m);
}

/* With two partitioning threads (and with one), a limit already past cuts
 * the partitioning short where nothing fits yet (gpt-175b on 40 A100-80GB:
 * the first shapes do not fit): the search then partitions the next shapes
 * itself until one fits, each counted once and reported as it is done, and
 * never more shapes than there are (before: 69 of 40, and the progress
 * stalled at 17). With sequence parallelism fixed on, the shapes of tp 1,
 * never searched, are not counted (a full search ended at 24 of 40). */
TEST(limits_progress_after_prefill_cut_short)
{
    sc_model *m;
    sc_cluster c;
    sc_test_open_pair("gpt-175b", "dgx-a100-80g", 5, &m, &c);
    REQUIRE(m);
    static const struct {
        const char *threads;
        double limit;
        int fix_sp;
    } cases[] = {{"2", 1e-9, -1}, {"1", 1e-9, -1}, {"2", 0, 1}, {"2", 1e-9, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sc_search_opts o;
        sc_search_opts_default(&o);
        o.global_batch = 64;
        o.simulate = 2;
        o.progress = record;
        o.time_limit_s = cases[i].limit;
        o.fix_sp = cases[i].fix_sp;
        record_reset();
        setenv("SC_THREADS", cases[i].threads, 1);
        sc_search *s = NULL;
        sc_error err = {0};
        sc_status st = sc_search_run(m, &c, &o, &s, &err);
        unsetenv("SC_THREADS");
        CHECK_EQ_INT(st, SC_OK);
        if (st)
            continue;
        int limited, over;
        long done, total;
        sc_search_limits(s, &limited, &done, &total, &over);
        CHECK_EQ_INT(limited, cases[i].limit > 0);
        CHECK(monotone);
        CHECK(done >= 1 && done <= total);
        if (!limited)
            CHECK_EQ_INT((int)done, (int)total);
        else
            CHECK(done > 1); /* the first shapes do not fit */
        CHECK_EQ_INT(calls[0], (int)done);
        CHECK_EQ_INT(last_done[0], (int)done);
        CHECK(sc_search_ranked(s, 0) != NULL && sc_search_ranked(s, 0)->sim->fits);
        sc_search_free(s);
    }
    sc_model_free(m);
    /* the command's count */
    CHECK(sc_test_sh(out, sizeof out,
                     "%s plan --model gpt-175b --cluster dgx-a100-80g --nodes 5 --global-batch 64 "
                     "--time-limit 0.001",
                     sc_test_bin()) == 0);
    const char *at = strstr(out, "time limit of 0.001 s reached after ");
    CHECK(at != NULL);
    int n = 0, of = 0;
    if (at)
        CHECK(sscanf(at, "time limit of 0.001 s reached after %d of %d shapes", &n, &of) == 2);
    CHECK(n >= 1 && n <= of);
}

/* scripts/huge_model.py (the 199,996-leaf search of scripts/hostile.sh
 * --huge, a long check) writes a model the loader takes: from the day the
 * generators wrote kernel lists its file was 121 MB, over the 64 MiB limit
 * on a file, and nothing here noticed. 2,000 leaves load, and at their size
 * per leaf the full model stays under the limit with room to spare. */
TEST(limits_huge_model_script_fits_the_loader)
{
    if (!sc_test_exists("/usr/bin/python3")) {
        sc_test_skip("no /usr/bin/python3");
        return;
    }
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s model gen gpt --layers 1 --hidden 256 --heads 4 --seq 1024 --vocab 32000 "
                       "-o %s/g1.json && /usr/bin/python3 scripts/huge_model.py %s/g1.json 2000 "
                       "> %s/h2k.json",
                       bin, d, d, d) == 0);
    char path[512];
    snprintf(path, sizeof path, "%s/h2k.json", d);
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    fseek(f, 0, SEEK_END);
    double bytes = (double)ftell(f);
    fclose(f);
    CHECK(bytes / 2000 * 199996 < 0.8 * 64 * 1048576.0);
    CHECK(sc_test_sh(out, sizeof out, "%s model show %s/h2k.json", bin, d) == 0);
    CHECK_STR_HAS(out, "2001 modules (2000 leaves)");
}
