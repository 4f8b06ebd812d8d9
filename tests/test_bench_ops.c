/* test_bench_ops.c - the microbenchmark ops' one table (exec/bench.c): every
 * op's name in sc_bench_op order, found back by name, and the op no other
 * test runs (reducescatter, under mpirun) through its table entry. The
 * mpirun part passes, saying it skipped, where mpirun or MPI is missing (as
 * tests/test_bench.c does). */
#include "check.h"
#include "bench.h"
#include "json.h"

#include <stdlib.h>

static char out[1 << 16];

TEST(bench_ops_table_names)
{
    static const char *const want[SC_BENCH_OP_N] = {"gemm", "p2p", "allreduce", "allgather",
                                                    "reducescatter"};
    for (int i = 0; i < SC_BENCH_OP_N; i++) {
        CHECK(!strcmp(sc_bench_op_name((sc_bench_op)i), want[i]));
        CHECK_EQ_INT(sc_bench_op_parse(want[i]), i);
    }
    CHECK(!strcmp(sc_bench_op_name(SC_BENCH_OP_N), "?"));
    CHECK(!strcmp(sc_bench_op_name((sc_bench_op)-1), "?"));
    CHECK_EQ_INT(sc_bench_op_parse("AllReduce"), -1);
    CHECK_EQ_INT(sc_bench_op_parse(""), -1);
    CHECK_EQ_INT(sc_bench_op_parse(NULL), -1);
}

TEST(bench_ops_reducescatter_three_ranks)
{
    if (sc_test_sh(out, sizeof out, "command -v mpirun") != 0) {
        fprintf(stderr, "    skipped: mpirun not found\n");
        return;
    }
    if (sc_test_sh(out, sizeof out, "%s version --json", sc_test_bin()) != 0 ||
        !strstr(out, "\"mpi\":\ttrue")) {
        fprintf(stderr, "    skipped: built without MPI\n");
        return;
    }
    const char *san = getenv("SC_SAN");
    const char *env = san && !strcmp(san, "1") ? "ASAN_OPTIONS=detect_leaks=0 " : "";
    const char *d = sc_test_tmpdir();
    /* S is the whole 3-rank input: 1000 bytes rounds down to 996 = 3 x 83
     * floats; busbw = algbw x (n-1)/n */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%smpirun --allow-run-as-root --oversubscribe -np 3 %s bench "
                       "reducescatter --sizes 1000,12K --iters 3 -o %s/r.json",
                       env, sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "bench reducescatter on cpu");
    char p[600];
    snprintf(p, sizeof p, "%s/r.json", d);
    cJSON *j = NULL;
    sc_error err = {0};
    REQUIRE(sc_json_load(p, &j, &err) == SC_OK);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "op")), "reducescatter"));
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "ranks")) == 3);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "busbw_factor")) == 2.0 / 3);
    const cJSON *r = cJSON_GetObjectItem(j, "results");
    REQUIRE(cJSON_GetArraySize(r) == 2);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(r->child, "bytes")) == 996);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(r->child->next, "bytes")) == 12288);
    for (const cJSON *x = r->child; x; x = x->next) {
        double t = cJSON_GetNumberValue(cJSON_GetObjectItem(x, "time_s"));
        CHECK(t > 0);
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(x, "time_min_s")) <= t);
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(x, "busbw")) ==
              cJSON_GetNumberValue(cJSON_GetObjectItem(x, "algbw")) * (2.0 / 3));
    }
    cJSON_Delete(j);
    /* the file reads back through the one reader */
    sc_bench_result *b = NULL;
    REQUIRE(sc_bench_load(p, &b, &err) == SC_OK);
    CHECK_EQ_INT(b->op, SC_BENCH_REDUCESCATTER);
    sc_bench_result_free(b);
}
