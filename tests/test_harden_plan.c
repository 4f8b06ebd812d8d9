/* test_harden_plan.c - tampered plans: every file of tests/corpus/plan
 * (hand-edited variants of good/plan.json: ranks that are not the layout's
 * permutation, a device beyond the node, a global batch that is not
 * dp·m·mbs, a stage naming another module, an unknown method, ...) is
 * refused by sc_plan_load + sc_plan_open with its NAME.expect text, which
 * carries the JSON path, and a message naming the file; sim --plan and exec
 * refuse them the same way; good/plan.json still loads and replays. */
#include "check.h"
#include "partitioner_hook.h"
#include "plan.h"

#include <dirent.h>
#include <stdlib.h>

#define DIR_PLAN "tests/corpus/plan"

static char out[1 << 16];

static sc_status load_open(const char *path, sc_error *err)
{
    sc_plan *p = NULL;
    sc_model *m = NULL;
    sc_cluster c;
    sc_status st = sc_plan_load(path, &p, err);
    if (!st)
        st = sc_plan_open(p, path, &m, &c, err);
    sc_model_free(m);
    sc_plan_free(p);
    return st;
}

TEST(plan_good_corpus_opens)
{
    sc_error err = {0};
    CHECK(load_open(DIR_PLAN "/good/plan.json", &err) == SC_OK);
    if (err.msg[0])
        fprintf(stderr, "    %s\n", err.msg);
    CHECK(sc_test_sh(out, sizeof out, "%s sim --plan %s/good/plan.json", sc_test_bin(),
                     DIR_PLAN) == 0);
    CHECK_STR_HAS(out, "step time");
}

/* Calls fn(path, expect) for every bad plan; returns how many. */
static int each_bad(void (*fn)(const char *path, const char *want))
{
    DIR *d = opendir(DIR_PLAN);
    if (!d)
        return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        char path[512], exp[512];
        snprintf(path, sizeof path, "%s/%s", DIR_PLAN, e->d_name);
        snprintf(exp, sizeof exp, "%s/%.*s.expect", DIR_PLAN, (int)(l - 5), e->d_name);
        char *want = NULL;
        size_t wl = 0;
        sc_error err = {0};
        if (sc_read_file(exp, 4096, &want, &wl, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s has no .expect file", path);
            continue;
        }
        while (wl && (want[wl - 1] == '\n' || want[wl - 1] == '\r'))
            want[--wl] = 0;
        fn(path, want);
        sc_free(want);
        n++;
    }
    closedir(d);
    return n;
}

static void lib_refuses(const char *path, const char *want)
{
    sc_error err = {0};
    sc_status st = load_open(path, &err);
    if (st == SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s: loaded and opened but should fail", path);
        return;
    }
    CHECK_STR_HAS(err.msg, path);
    CHECK_STR_HAS(err.msg, want);
}

TEST(plan_bad_corpus_refused)
{
    CHECK(each_bad(lib_refuses) >= 18);
}

static void sim_refuses(const char *path, const char *want)
{
    CHECK(sc_test_sh(out, sizeof out, "%s sim --plan %s", sc_test_bin(), path) == 2);
    CHECK_STR_HAS(out, path);
    CHECK_STR_HAS(out, want);
    CHECK(!strstr(out, "step time"));
}

TEST(plan_bad_corpus_sim_refuses)
{
    CHECK(each_bad(sim_refuses) >= 18);
}

static const char *exec_dir;

static void exec_refuses(const char *path, const char *want)
{
    CHECK(sc_test_sh(out, sizeof out,
                     "env ASAN_OPTIONS=detect_leaks=0 %s exec %s --backend cpu -o %s/m.json",
                     sc_test_bin(), path, exec_dir) != 0);
    CHECK_STR_HAS(out, path);
    CHECK_STR_HAS(out, want);
    char m[600];
    snprintf(m, sizeof m, "%s/m.json", exec_dir);
    CHECK(!sc_test_exists(m));
}

/* exec (one MPI start per file: a sample of the corpus, the rest shares the
 * loader with sim) */
TEST(plan_bad_corpus_exec_refuses)
{
    if (sc_test_sh(out, sizeof out, "%s version", sc_test_bin()) != 0 || strstr(out, "MPI:  no")) {
        sc_test_skip("built without MPI: exec reads no plan");
        return;
    }
    exec_dir = sc_test_tmpdir();
    static const char *const names[] = {"ranks_pp_swapped", "device_beyond", "batch_9",
                                        "first_other", "method_unknown"};
    for (size_t i = 0; i < SC_ARRAY_LEN(names); i++) {
        char path[256], exp[256];
        snprintf(path, sizeof path, "%s/%s.json", DIR_PLAN, names[i]);
        snprintf(exp, sizeof exp, "%s/%s.expect", DIR_PLAN, names[i]);
        char *want = NULL;
        sc_error err = {0};
        REQUIRE(sc_read_file(exp, 4096, &want, NULL, &err) == SC_OK);
        exec_refuses(path, want);
        sc_free(want);
    }
}

/* A plan whose pipeline sends block (overlap_p2p_comm false) is one the
 * executor does not run: refused, naming the file and the key, nothing
 * written (sim --plan replays it: plan_overlap_p2p_comm_through_commands). */
TEST(plan_blocking_p2p_exec_refuses)
{
    if (sc_test_sh(out, sizeof out, "%s version", sc_test_bin()) != 0 || strstr(out, "MPI:  no")) {
        sc_test_skip("built without MPI: exec reads no plan");
        return;
    }
    exec_dir = sc_test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/bl.json", exec_dir);
    REQUIRE(sc_test_sh(out, sizeof out, "cd %s && %s model gen gpt --layers 2 --hidden 256 "
                       "--heads 4 --seq 128 --vocab 1024 --dtype fp32 -o tiny.json 2>&1 && "
                       "%s sim --model tiny.json --cluster cpu-local --pp 2 --microbatches 2 "
                       "--overlap-p2p-comm 0 -o %s 2>&1",
                       exec_dir, sc_test_bin(), sc_test_bin(), path) == 0);
    exec_refuses(path, "overlap_p2p_comm: false: the executor sends pipeline messages beside "
                       "the compute only");
}

/* Every partitioner the planner may name is a method a plan may carry. */
TEST(plan_methods_cover_partitioners)
{
    for (int i = 0; sc_partitioner_all[i]; i++) {
        int found = 0;
        for (int k = 0; sc_plan_methods[k]; k++)
            found |= !strcmp(sc_plan_methods[k], sc_partitioner_all[i]->name);
        CHECK(found);
    }
}

/* In d: removes `clear`, makes the folders `dirs`, puts old.json at `where`,
 * then checks that the plan `path` opens and returns its replayed step time
 * (`sim --plan --json`); -1 where a step failed. */
static double replay_with_copy(const char *d, const char *clear, const char *dirs,
                               const char *where, const char *path)
{
    sc_error err = {0};
    if (sc_test_sh(out, sizeof out, "cd %s && rm -rf %s && mkdir -p %s && cp old.json %s", d,
                   clear, dirs, where) != 0) {
        sc_test_fail(__FILE__, __LINE__, "placing old.json at %s: %s", where, out);
        return -1;
    }
    CHECK(load_open(path, &err) == SC_OK);
    if (sc_test_sh(out, sizeof out, "%s sim --plan %s --json", sc_test_bin(), path) != 0) {
        sc_test_fail(__FILE__, __LINE__, "sim --plan %s with old.json at %s: %s", path, where,
                     out);
        return -1;
    }
    cJSON *j = cJSON_Parse(out);
    double t = j ? cJSON_GetNumberValue(cJSON_GetObjectItem(j, "step_time_s")) : -1;
    cJSON_Delete(j);
    return t;
}

/* A plan made with a built-in model replays after the built-in has changed
 * against a copy of the model as it was: NAME.json beside the plan, in
 * models/ beside it or in models/ one folder up; only a copy whose digest
 * is the plan's stands in, and without one the refusal says where a copy
 * would go. (Here the "model as it was" is gpt-1.3b with apex's loss, and
 * the plan's digest is set to it, as if the built-in had changed since.) */
TEST(plan_replays_against_a_model_snapshot)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    char path[600], snap[600], dg[17];
    sc_error err = {0};
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && mkdir -p runs/a && %s model gen gpt --layers 24 --hidden 2048 "
                       "--heads 16 --seq 2048 --vocab 50257 --tied --cross_entropy xentropy "
                       "--name gpt-1.3b -o old.json 2>&1 && %s sim --model gpt-1.3b --cluster "
                       "p4d.24xlarge --microbatches 2 -o runs/a/p.json >/dev/null",
                       d, bin, bin) == 0);
    snprintf(snap, sizeof snap, "%s/old.json", d);
    sc_model *old = NULL;
    REQUIRE(sc_model_open(snap, &old, &err) == SC_OK);
    REQUIRE(sc_model_digest(old, dg) == SC_OK);
    sc_model_free(old);
    snprintf(path, sizeof path, "%s/runs/a/p.json", d);
    /* the plan as if made when gpt-1.3b was old.json */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s/runs/a && sed -i '0,/\"digest\":\t\"[0-9a-f]*\"/"
                       "s//\"digest\":\t\"%s\"/' p.json", /* the model's, the first */
                       d, dg) == 0);
    CHECK(load_open(path, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "p.json: model.digest: gpt-1.3b has changed since the plan was made");
    char want[128];
    snprintf(want, sizeof want, "gpt-1.3b.json or gpt-1.3b.%s.json beside the plan or in a "
             "models/ folder", dg);
    CHECK_STR_HAS(err.msg, want);
    static const char *const where[] = {"runs/a/gpt-1.3b.json", "runs/a/models/gpt-1.3b.json",
                                        "runs/models/gpt-1.3b.json"};
    double t[3];
    for (int i = 0; i < 3; i++)
        t[i] = replay_with_copy(d, "runs/a/gpt-1.3b.json runs/a/models runs/models",
                                "runs/a/models runs/models", where[i], path);
    CHECK(t[0] > 0 && t[0] == t[1] && t[1] == t[2]);
    /* the built-in (Megatron-LM's loss) is slower than the copy (apex's) */
    REQUIRE(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge "
                       "--microbatches 2 --json", bin) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK(cJSON_GetObjectItem(j, "step_time_s")->valuedouble > t[0]);
    cJSON_Delete(j);
    /* a copy of another model is not taken */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && rm -rf runs/a/models runs/models && %s model gen gpt --layers 2 "
                       "--name gpt-1.3b -o runs/a/gpt-1.3b.json 2>/dev/null",
                       d, bin) == 0);
    sc_err_clear(&err);
    CHECK(load_open(path, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "model.digest: gpt-1.3b has changed");
}

/* A plan made on a cluster preset replays after the preset has changed
 * against a copy of the preset as it was (cluster show NAME -o): NAME.json
 * or NAME.DIGEST.json beside the plan, in clusters/ beside it or in
 * clusters/ one folder up; only a copy whose digest is the plan's stands
 * in. (Here the "preset as it was" is p4d.24xlarge with slower NVLink
 * collectives, and the plan's cluster digest is set to it.) */
TEST(plan_replays_against_a_cluster_snapshot)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    char path[600], snap[600], dg[17];
    sc_error err = {0};
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && mkdir -p runs/a && %s cluster show p4d.24xlarge -o now.json "
                       ">/dev/null && sed 's/\"bw_eff\":\t0.9034/\"bw_eff\":\t0.6/' now.json "
                       "> old.json && ! cmp -s now.json old.json && %s sim --model gpt-1.3b "
                       "--cluster p4d.24xlarge --tp 8 --microbatches 2 -o runs/a/p.json "
                       ">/dev/null", d, bin, bin) == 0);
    snprintf(snap, sizeof snap, "%s/old.json", d);
    sc_cluster old;
    REQUIRE(sc_cluster_load(snap, &old, &err) == SC_OK);
    REQUIRE(sc_cluster_digest(&old, dg) == SC_OK);
    snprintf(path, sizeof path, "%s/runs/a/p.json", d);
    /* the plan as if made when p4d.24xlarge was old.json: the cluster's
     * digest, the second in the file */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s/runs/a && sed -i '/\"source\":\t\"p4d.24xlarge\",/{n;"
                       "s/\"digest\":\t\"[0-9a-f]*\"/\"digest\":\t\"%s\"/}' p.json && "
                       "grep -c %s p.json", d, dg, dg) == 0);
    CHECK(load_open(path, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "p.json: cluster.digest: p4d.24xlarge has changed since the plan was "
                  "made");
    char want[128];
    snprintf(want, sizeof want, "p4d.24xlarge.json or p4d.24xlarge.%s.json beside the plan", dg);
    CHECK_STR_HAS(err.msg, want);
    char where[6][80];
    static const char *const dirs[] = {"runs/a", "runs/a/clusters", "runs/clusters"};
    for (int i = 0; i < 6; i++)
        snprintf(where[i], sizeof where[i], "%s/p4d.24xlarge%s%s.json", dirs[i / 2],
                 i % 2 ? "." : "", i % 2 ? dg : "");
    double t[6];
    for (int i = 0; i < 6; i++) {
        t[i] = replay_with_copy(d, "runs/a/p4d* runs/a/clusters runs/clusters",
                                "runs/a/clusters runs/clusters", where[i], path);
        CHECK(t[i] > 0 && t[i] == t[0]);
    }
    /* the copy's tp collectives are slower than the preset's */
    REQUIRE(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --tp 8 "
                       "--microbatches 2 --json", bin) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK(cJSON_GetObjectItem(j, "step_time_s")->valuedouble < t[0]);
    cJSON_Delete(j);
    /* a copy of another digest, or of a cluster file (not a preset), is not taken */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "cd %s && rm -rf runs/a/clusters runs/clusters && cp now.json "
                       "runs/a/p4d.24xlarge.json", d) == 0);
    sc_err_clear(&err);
    CHECK(load_open(path, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "cluster.digest: p4d.24xlarge has changed");
}
