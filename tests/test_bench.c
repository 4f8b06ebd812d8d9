/* test_bench.c - `stagecraft bench`: the sizes parser, the stagecraft.bench/1
 * files it writes (gemm on one rank; allreduce, allgather and p2p under
 * mpirun over shared memory), the nccl-tests busbw factors, and usage errors.
 * The mpirun tests are skipped (counted as skipped, saying why) where mpirun is
 * missing or the build has no MPI. The whole file takes a few seconds. */
#include "check.h"
#include "bench.h"
#include "backend.h"
#include "json.h"

#include <stdlib.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)
#define MPIRUN "%smpirun --allow-run-as-root --oversubscribe"

/* Open MPI leaks in MPI_Init/MPI_Finalize (from components it has unloaded,
 * so LeakSanitizer cannot even name them): under SAN=1, commands that start
 * MPI run without leak detection; AddressSanitizer and UBSan still check
 * them. Usage errors (no MPI) keep it. */
static const char *mpi_env(void)
{
    const char *s = getenv("SC_SAN");
    return s && !strcmp(s, "1") ? "ASAN_OPTIONS=detect_leaks=0 " : "";
}

static cJSON *load(const char *path)
{
    cJSON *j = NULL;
    sc_error err = {0};
    if (sc_json_load(path, &j, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* 1 when mpirun can start ranks of this build; else says why and returns 0. */
static int have_mpirun(const char *test)
{
    if (SC("command -v mpirun") != 0) {
        sc_test_skip("mpirun not found (%s)", test);
        return 0;
    }
    if (SC("%s version --json", sc_test_bin()) != 0 || !strstr(out, "\"mpi\":\ttrue")) {
        sc_test_skip("built without MPI (%s)", test);
        return 0;
    }
    return 1;
}

TEST(bench_parse_sizes)
{
    sc_bench_point p[SC_BENCH_MAX_SIZES];
    int n = 0;
    sc_error err = {0};
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_ALLREDUCE, "1K:64K:4", p, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 4);
    CHECK(p[0].bytes == 1024 && p[3].bytes == 65536);
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_P2P, "1024:65536:4", p, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 4);
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_P2P, "8,1M,2G", p, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 3);
    CHECK(p[1].bytes == 1048576 && p[2].bytes == 2147483648.0);
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_GEMM, "64:256:2", p, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 3);
    CHECK(p[2].m == 256 && p[2].n == 256 && p[2].k == 256 && p[2].bytes == 0);
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_GEMM, "512,4096x1024x256", p, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 2);
    CHECK(p[1].m == 4096 && p[1].n == 1024 && p[1].k == 256);
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_GEMM, "100:100:1", p, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 1);
    const char *bad[] = {"", "10:1:2", "1:10:0.5", "1:10", "x", "1K:2K:2:3", "0", "65M,",
                         "1.5", "128G", "1:1G:1.0000001"};
    for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
        err = (sc_error){0};
        if (sc_bench_parse_sizes(SC_BENCH_ALLREDUCE, bad[i], p, &n, &err) != SC_EINVAL)
            sc_test_fail(__FILE__, __LINE__, "'%s' parsed", bad[i]);
    }
    CHECK(sc_bench_parse_sizes(SC_BENCH_GEMM, "100000", p, &n, &err) == SC_EINVAL);
    CHECK(sc_bench_parse_sizes(SC_BENCH_GEMM, "4x4", p, &n, &err) == SC_EINVAL);
    /* BxMxNxK: a batched call; five numbers, or a batch of 0, are refused */
    REQUIRE(sc_bench_parse_sizes(SC_BENCH_GEMM, "64x2048x2048x128,8", p, &n, &err) == SC_OK);
    CHECK_EQ_INT(n, 2);
    CHECK(p[0].batch == 64 && p[0].m == 2048 && p[0].n == 2048 && p[0].k == 128);
    CHECK(p[1].batch <= 1 && p[1].m == 8);
    CHECK(sc_bench_parse_sizes(SC_BENCH_GEMM, "2x2x2x2x2", p, &n, &err) == SC_EINVAL);
    CHECK(sc_bench_parse_sizes(SC_BENCH_GEMM, "0x2x2x2", p, &n, &err) == SC_EINVAL);
    CHECK(sc_bench_parse_sizes(SC_BENCH_ALLREDUCE, "4x4x4", p, &n, &err) == SC_EINVAL);
    CHECK(sc_bench_op_parse("reducescatter") == SC_BENCH_REDUCESCATTER);
    CHECK(sc_bench_op_parse("alltoall") == -1);
}

TEST(bench_gemm_one_rank_json)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s%s bench gemm --sizes 64:256:2 --iters 3 --warmup 1 -o %s/g.json", mpi_env(),
               sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "GFLOP/s");
    char p[600];
    snprintf(p, sizeof p, "%s/g.json", d);
    cJSON *j = load(p);
    REQUIRE(j);
    CHECK(!strcmp(str(j, "format"), "stagecraft.bench/1"));
    CHECK(!strcmp(str(j, "op"), "gemm"));
    CHECK(!strcmp(str(j, "backend"), "cpu"));
    CHECK(strlen(str(j, "device")) > 0);
    CHECK(num(j, "ranks") == 1);
    CHECK(!strcmp(str(j, "dtype"), "fp32"));
    const cJSON *r = cJSON_GetObjectItem(j, "results");
    REQUIRE(cJSON_GetArraySize(r) == 3);
    int want = 64;
    for (const cJSON *x = r->child; x; x = x->next, want *= 2) {
        CHECK(num(x, "m") == want && num(x, "n") == want && num(x, "k") == want);
        double t = num(x, "time_s"), tmin = num(x, "time_min_s");
        CHECK(t > 0 && tmin > 0 && tmin <= t && t < 10);
        CHECK(num(x, "flops") > 1e6);
        CHECK_NEAR(num(x, "flop"), 2.0 * want * want * want, 0);
        CHECK_NEAR(num(x, "flops"), num(x, "flop") / t, 1e-12);
        CHECK(!cJSON_GetObjectItem(x, "bytes"));
    }
    cJSON_Delete(j);
    /* --json prints the same document */
    REQUIRE(SC("%s%s bench gemm --sizes 32 --iters 1 --warmup 0 --json", mpi_env(),
               sc_test_bin()) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "results")) == 1);
    cJSON_Delete(j);
}

TEST(bench_allreduce_busbw_nccl_tests)
{
    if (!have_mpirun("bench_allreduce_busbw_nccl_tests"))
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(SC(MPIRUN " -np 2 %s bench allreduce --sizes 1024:65536:4 --iters 5 -o %s/a.json",
               mpi_env(), sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "busbw");
    CHECK_STR_HAS(out, "(nccl-tests convention, 2 ranks)");
    char p[600];
    snprintf(p, sizeof p, "%s/a.json", d);
    cJSON *j = load(p);
    REQUIRE(j);
    CHECK(!strcmp(str(j, "op"), "allreduce"));
    CHECK(num(j, "ranks") == 2 && num(j, "world") == 2);
    CHECK(num(j, "nodes") == 1 && num(j, "ranks_per_node") == 2);
    CHECK(!strcmp(str(j, "link"), "intra"));
    CHECK(num(j, "busbw_factor") == 1);
    const cJSON *r = cJSON_GetObjectItem(j, "results");
    REQUIRE(cJSON_GetArraySize(r) == 4);
    double want = 1024;
    for (const cJSON *x = r->child; x; x = x->next, want *= 4) {
        CHECK(num(x, "bytes") == want);
        CHECK(num(x, "time_s") > 0 && num(x, "time_min_s") <= num(x, "time_s"));
        CHECK(num(x, "algbw") > 0);
        CHECK(num(x, "busbw") == num(x, "algbw") * (2.0 * (2 - 1) / 2)); /* exactly */
        CHECK_NEAR(num(x, "algbw"), want / num(x, "time_s"), 1e-12);
    }
    cJSON_Delete(j);
}

TEST(bench_allgather_three_ranks)
{
    if (!have_mpirun("bench_allgather_three_ranks"))
        return;
    const char *d = sc_test_tmpdir();
    /* S is the whole 3-rank buffer: 1000 bytes rounds down to 996 = 3 x 83 floats */
    REQUIRE(SC(MPIRUN " -np 3 %s bench allgather --sizes 1000,12K --iters 3 -o %s/g.json",
               mpi_env(), sc_test_bin(), d) == 0);
    char p[600];
    snprintf(p, sizeof p, "%s/g.json", d);
    cJSON *j = load(p);
    REQUIRE(j);
    CHECK(num(j, "ranks") == 3);
    CHECK(num(j, "busbw_factor") == 2.0 / 3);
    const cJSON *r = cJSON_GetObjectItem(j, "results");
    REQUIRE(cJSON_GetArraySize(r) == 2);
    CHECK(num(r->child, "bytes") == 996);
    CHECK(num(r->child->next, "bytes") == 12288);
    for (const cJSON *x = r->child; x; x = x->next)
        CHECK(num(x, "busbw") == num(x, "algbw") * (2.0 / 3));
    cJSON_Delete(j);
}

TEST(bench_p2p_pingpong)
{
    if (!have_mpirun("bench_p2p_pingpong"))
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(SC(MPIRUN " -np 2 %s bench p2p --sizes 1K:1M:32 --iters 100 -o %s/p.json", mpi_env(),
               sc_test_bin(), d) == 0);
    char p[600];
    snprintf(p, sizeof p, "%s/p.json", d);
    cJSON *j = load(p);
    REQUIRE(j);
    CHECK(!strcmp(str(j, "op"), "p2p"));
    CHECK(num(j, "ranks") == 2 && !strcmp(str(j, "link"), "intra"));
    const cJSON *r = cJSON_GetObjectItem(j, "results");
    REQUIRE(cJSON_GetArraySize(r) == 3);
    for (const cJSON *x = r->child; x; x = x->next) {
        CHECK(num(x, "time_s") > 0);
        CHECK(num(x, "busbw") == num(x, "algbw"));
    }
    /* bigger messages move faster: judged on each size's fastest iteration,
     * which a descheduled rank on a shared machine does not move (100 of
     * them: with 20 it failed once, in a sanitizer run of CI on two cores,
     * 2026-12-05) */
    const cJSON *big = r->child->next->next, *small = r->child;
    CHECK(num(big, "bytes") / num(big, "time_min_s") > num(small, "bytes") /
                                                          num(small, "time_min_s"));
    cJSON_Delete(j);
}

TEST(bench_bad_args_exit2_nothing_written)
{
    const char *d = sc_test_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/x.json", d);
    const char *bad[] = {"",
                         "alltoall",
                         "gemm --sizes 10:1:2",
                         "gemm --sizes 64x64",
                         "allreduce --sizes 0",
                         "gemm --iters 0",
                         "gemm --warmup -1",
                         "gemm --backend tpu",
                         "gemm --dtype fp7",
                         "gemm --bogus",
                         "gemm extra",
                         "gemm --timeout 0",
                         "gemm --hot 5",           /* heating is for a GPU */
                         "allreduce --hot 1",
                         "gemm --hot -1"};
    for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
        int rc = SC("%s bench %s -o %s", sc_test_bin(), bad[i], p);
        if (rc != 2)
            sc_test_fail(__FILE__, __LINE__, "'bench %s' exited %d: %.200s", bad[i], rc, out);
        CHECK_STR_HAS(out, "stagecraft bench: ");
        CHECK(!sc_test_exists(p));
    }
    /* p2p on one rank: a clear error, exit 2, no file */
    CHECK(SC("%s%s bench p2p -o %s", mpi_env(), sc_test_bin(), p) == 2);
    CHECK(strstr(out, "needs 2 ranks") || strstr(out, "built without MPI"));
    CHECK(!sc_test_exists(p));
    /* a collective on one rank runs with MPI; without, it says why not */
    int rc = SC("%s%s bench allreduce --sizes 1K --iters 1 -o %s", mpi_env(), sc_test_bin(), p);
    CHECK(rc == 0 || (rc == 2 && strstr(out, "built without MPI")));
    CHECK(rc == 0 || !sc_test_exists(p));
    if (rc == 0) /* its busbw is 0: the table says why */
        CHECK_STR_HAS(out, "(nccl-tests convention, 1 rank: no link crossed");
    /* an unwritable output: exit non-zero, nothing left behind */
    CHECK(SC("%s%s bench gemm --sizes 16 --iters 1 -o %s/no/such/dir.json", mpi_env(),
             sc_test_bin(), d) != 0);
    CHECK(SC("%s bench --help", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "busbw");
}

TEST(bench_load_roundtrip_and_errors)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s%s bench gemm --sizes 32,64x16x8 --iters 2 --warmup 0 -o %s/g.json", mpi_env(),
               sc_test_bin(), d) == 0);
    char p[600], q[600];
    snprintf(p, sizeof p, "%s/g.json", d);
    snprintf(q, sizeof q, "%s/g2.json", d);
    sc_bench_result *r = NULL;
    sc_error err = {0};
    REQUIRE(sc_bench_load(p, &r, &err) == SC_OK);
    CHECK(r->op == SC_BENCH_GEMM && r->n_rows == 2 && r->ranks == 1);
    CHECK(r->rows[1].m == 64 && r->rows[1].n == 16 && r->rows[1].k == 8);
    CHECK(r->rows[1].flop == 2.0 * 64 * 16 * 8);
    /* saving what was loaded gives the same bytes */
    REQUIRE(sc_bench_save(r, q, &err) == SC_OK);
    CHECK(r->hot_s == 0); /* a CPU core: never heated */
    CHECK(SC("cmp %s %s", p, q) == 0);
    /* a GPU sweep's heating (bench.h "Hot") is kept */
    r->hot_s = 0.005;
    char h[600];
    snprintf(h, sizeof h, "%s/hot.json", d);
    REQUIRE(sc_bench_save(r, h, &err) == SC_OK);
    sc_bench_result_free(r);
    r = NULL;
    REQUIRE(sc_bench_load(h, &r, &err) == SC_OK);
    CHECK_NEAR(r->hot_s, 0.005, 0);
    sc_bench_result_free(r);
    REQUIRE(SC("sed 's/\"hot_s\":\t[-0-9.e]*/\"hot_s\":\t-1/' %s > %s", h, q) == 0);
    r = NULL;
    CHECK(sc_bench_load(q, &r, &err) == SC_EINVAL && r == NULL);
    CHECK_STR_HAS(err.msg, "hot_s");

    /* damaged copies: one-line errors naming the file and the JSON path */
    struct {
        const char *sed, *want;
    } bad[] = {
        {"s/\"link\":\\t\"intra\"/\"link\":\\t\"pcie\"/", "link: \"pcie\""},
        {"s/\"time_min_s\":\\t[-0-9.e]*/\"time_min_s\":\\t1000/", "results[0].time_min_s"},
        {"s/\"flops\":/\"flopz\": 1, \"flops\":/", "results[0]"},
        {"s/stagecraft.bench\\/1/stagecraft.bench\\/2/", "unsupported version"},
        {"s/\"op\":\\t\"gemm\"/\"op\":\\t\"gemv\"/", "op: unknown \"gemv\""},
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
        REQUIRE(SC("sed '%s' %s > %s", bad[i].sed, p, q) == 0);
        err = (sc_error){0};
        r = NULL;
        if (sc_bench_load(q, &r, &err) == SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "damage %zu loaded", i);
            sc_bench_result_free(r);
            continue;
        }
        CHECK(r == NULL);
        CHECK_STR_HAS(err.msg, "g2.json: ");
        CHECK_STR_HAS(err.msg, bad[i].want);
    }
}

/* The reader needs only the measurements (what calibration reads); the
 * run's record is checked when present, held as "not recorded" when absent
 * and left out again on save. The fuzz corpus's bench files load. */
TEST(bench_load_measurements_only)
{
    const char *d = sc_test_tmpdir();
    char p[600], q[600], q2[600];
    snprintf(p, sizeof p, "%s/min.json", d);
    snprintf(q, sizeof q, "%s/min2.json", d);
    snprintf(q2, sizeof q2, "%s/min3.json", d);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    fputs("{\"format\": \"stagecraft.bench/1\", \"op\": \"allreduce\", \"device\": \"cpu-core\", "
          "\"ranks\": 4, \"link\": \"intra\", \"compute_dtype\": \"fp32\", \"elem_bytes\": 4, "
          "\"results\": [{\"bytes\": 4096, \"time_s\": 1e-5}, {\"bytes\": 8192, \"time_s\": "
          "2e-5}]}\n",
          f);
    fclose(f);
    sc_bench_result *r = NULL;
    sc_error err = {0};
    REQUIRE(sc_bench_load(p, &r, &err) == SC_OK);
    CHECK(r->op == SC_BENCH_ALLREDUCE && r->ranks == 4 && r->n_rows == 2);
    CHECK(r->world == 0 && r->nodes == 0 && r->ranks_per_node == 0);
    CHECK(r->iters == 0 && r->warmup == -1 && (int)r->dtype < 0 && !r->backend[0]);
    CHECK(r->busbw_factor == -1);
    CHECK(r->rows[1].bytes == 8192 && r->rows[1].time_s == 2e-5);
    CHECK(r->rows[0].time_min_s == -1 && r->rows[0].algbw == -1 && r->rows[0].busbw == -1);
    /* saved, it records no more than it was given, and loads again */
    REQUIRE(sc_bench_save(r, q, &err) == SC_OK);
    sc_bench_result_free(r);
    cJSON *j = load(q);
    REQUIRE(j);
    CHECK(!cJSON_GetObjectItem(j, "world") && !cJSON_GetObjectItem(j, "iters") &&
          !cJSON_GetObjectItem(j, "dtype") && !cJSON_GetObjectItem(j, "backend"));
    CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(j, "results")->child, "algbw"));
    cJSON_Delete(j);
    REQUIRE(sc_bench_load(q, &r, &err) == SC_OK);
    REQUIRE(sc_bench_save(r, q2, &err) == SC_OK);
    sc_bench_result_free(r);
    CHECK(SC("cmp %s %s", q, q2) == 0);
    /* a record field that is present is still checked */
    REQUIRE(SC("sed 's/\"ranks\": 4,/\"ranks\": 4, \"world\": 2,/' %s > %s", p, q) == 0);
    r = NULL;
    CHECK(sc_bench_load(q, &r, &err) == SC_EINVAL);
    CHECK(r == NULL);
    CHECK_STR_HAS(err.msg, "min2.json: world: 2 is out of range [4, ");
    /* what `stagecraft bench` wrote loads and saves back byte for byte */
    const char *corpus[] = {"tests/fuzz/corpus/files/bench_gemm.json",
                            "tests/fuzz/corpus/files/bench_allreduce.json",
                            "tests/fuzz/corpus/files/bench_p2p.json",
                            "tests/fuzz/corpus/files/bench_gemm_batched.json"};
    for (size_t i = 0; i < SC_ARRAY_LEN(corpus); i++) {
        r = NULL;
        if (sc_bench_load(corpus[i], &r, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
            continue;
        }
        CHECK(r->world >= r->ranks && r->iters > 0 && r->warmup >= 0);
        CHECK(sc_bench_save(r, q, &err) == SC_OK);
        sc_bench_result_free(r);
        CHECK(SC("cmp %s %s", corpus[i], q) == 0);
    }
}

/* Inputs are values uniform in [-1, 1) (never raw bytes, whose NaN, Inf and
 * denormals slow some BLAS kernels 10-15x), and every file says what ran it
 * and how long each size took to settle. */
TEST(bench_inputs_uniform_and_provenance)
{
    double lo = 1, hi = -1, mean = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        double v = sc_backend_uniform(7, i);
        CHECK(v >= -1 && v < 1);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        mean += v / 100000;
    }
    CHECK(lo < -0.999 && hi > 0.999);
    CHECK(fabs(mean) < 0.01);
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("OMP_NUM_THREADS=1 %s%s bench gemm --sizes 32,64 --iters 3 --warmup 1 "
               "--max-iters 9 -o %s/g.json", mpi_env(), sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "spread");
    char p[600];
    snprintf(p, sizeof p, "%s/g.json", d);
    cJSON *j = load(p);
    REQUIRE(j);
    const cJSON *pv = cJSON_GetObjectItem(j, "provenance");
    REQUIRE(pv);
    CHECK(strlen(str(pv, "cpu")) > 0);
    CHECK_STR_HAS(str(pv, "blas"), "OpenBLAS");
    CHECK(strlen(str(pv, "blas_core")) > 0);
    CHECK(num(pv, "blas_threads") == 1);
    int env_seen = 0;
    const cJSON *env = cJSON_GetObjectItem(pv, "env");
    for (const cJSON *e = env ? env->child : NULL; e; e = e->next)
        env_seen |= cJSON_IsString(e) && !strcmp(e->valuestring, "OMP_NUM_THREADS=1");
    CHECK(env_seen);
    CHECK(num(j, "tolerance") == 0.02 && num(j, "max_iters") == 9);
    for (const cJSON *x = cJSON_GetObjectItem(j, "results")->child; x; x = x->next) {
        double runs = num(x, "runs");
        CHECK(runs >= 3 && runs <= 9 && fmod(runs, 3) == 0);
        CHECK(num(x, "spread") >= 0);
        CHECK(runs == 3 || num(x, "drift") >= 0);
    }
    cJSON_Delete(j);
    /* --tolerance 0: one block, as before */
    REQUIRE(SC("%s%s bench gemm --sizes 32 --iters 4 --tolerance 0 -o %s/g1.json", mpi_env(),
               sc_test_bin(), d) == 0);
    snprintf(p, sizeof p, "%s/g1.json", d);
    j = load(p);
    REQUIRE(j);
    const cJSON *x = cJSON_GetObjectItem(j, "results")->child;
    CHECK(num(x, "runs") == 4 && !cJSON_GetObjectItem(x, "drift"));
    CHECK(!cJSON_GetObjectItem(j, "tolerance"));
    cJSON_Delete(j);
    CHECK(SC("%s bench gemm --iters 10 --max-iters 5", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "--max-iters 5 is below --iters 10");
}

/* bench gemm --plan times the GEMM shapes the executor runs for a plan:
 * each forward (m, n, k) and its two backward shapes, (m, k, n) and
 * (k, n, m), once each. A 2-layer GPT (h 64, 2 heads, seq 32, vocab 128) at
 * pp 2, mbs 2 on the CPU cluster runs its leaves as qkv (64, 192, 64), the
 * per-head scores and context (32, 32, 32), the output projection
 * (64, 64, 64), the MLP (64, 256, 64) and (64, 64, 256), and the head
 * (64, 128, 64). */
TEST(bench_gemm_plan_shapes)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 32 --vocab 128 "
               "--dtype fp32 -o %s/m.json", sc_test_bin(), d) == 0);
    REQUIRE(SC("%s sim --model %s/m.json --cluster cpu-local --pp 2 --microbatches 2 --mbs 2 "
               "--schedule 1f1b -o %s/p.json", sc_test_bin(), d, d) == 0);
    REQUIRE(SC("%s%s bench gemm --plan %s/p.json --iters 1 --warmup 0 --tolerance 0 -o %s/g.json",
               mpi_env(), sc_test_bin(), d, d) == 0);
    static const int fwd[][3] = {{64, 192, 64}, {32, 32, 32}, {64, 64, 64},
                                 {64, 256, 64}, {64, 64, 256}, {64, 128, 64}};
    int want[3 * SC_ARRAY_LEN(fwd)][3], nw = 0;
    for (size_t i = 0; i < SC_ARRAY_LEN(fwd); i++) {
        int m = fwd[i][0], n = fwd[i][1], k = fwd[i][2];
        const int s[3][3] = {{m, n, k}, {m, k, n}, {k, n, m}};
        for (int j = 0; j < 3; j++) {
            int dup = 0;
            for (int q = 0; q < nw && !dup; q++)
                dup = want[q][0] == s[j][0] && want[q][1] == s[j][1] && want[q][2] == s[j][2];
            if (!dup) {
                memcpy(want[nw], s[j], sizeof want[nw]);
                nw++;
            }
        }
    }
    char p[600];
    snprintf(p, sizeof p, "%s/g.json", d);
    cJSON *j = load(p);
    REQUIRE(j);
    const cJSON *r = cJSON_GetObjectItem(j, "results");
    CHECK_EQ_INT(cJSON_GetArraySize(r), nw);
    int found = 0;
    for (const cJSON *x = r ? r->child : NULL; x; x = x->next)
        for (int q = 0; q < nw; q++)
            found += num(x, "m") == want[q][0] && num(x, "n") == want[q][1] &&
                     num(x, "k") == want[q][2];
    CHECK_EQ_INT(found, nw);
    cJSON_Delete(j);
    /* with --sizes: both, a shape once */
    REQUIRE(SC("%s%s bench gemm --sizes 16,64x192x64 --plan %s/p.json --iters 1 --warmup 0 "
               "--tolerance 0 --json", mpi_env(), sc_test_bin(), d) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "results")), nw + 1);
    cJSON_Delete(j);
    /* not for communication; a missing plan is named */
    CHECK(SC("%s bench allreduce --plan %s/p.json -o %s/x.json", sc_test_bin(), d, d) == 2);
    CHECK_STR_HAS(out, "--plan is for gemm");
    CHECK(SC("%s bench gemm --plan %s/none.json -o %s/x.json", sc_test_bin(), d, d) != 0);
    CHECK_STR_HAS(out, "none.json");
    snprintf(p, sizeof p, "%s/x.json", d);
    CHECK(!sc_test_exists(p));
}
