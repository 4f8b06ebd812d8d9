/* test_timeline.c - the timeline format and its Chrome trace export. */
#include "check.h"
#include "json.h"
#include "timeline.h"

#include <dirent.h>

static sc_timeline *two_ranks(void)
{
    sc_timeline *t = sc_timeline_new(2, "sim", "tiny", "cpu-local");
    t->ranks[1].node = 1;
    t->ranks[1].pp = 1;
    sc_tl_op f0 = {SC_OP_F, 0, 0, 0, SC_STREAM_COMPUTE, 0, 0.0, 1.0};
    sc_tl_op s0 = {SC_OP_SEND_F, 0, 0, 0, SC_STREAM_COMM, 4096, 1.0, 1.25};
    sc_tl_op f1 = {SC_OP_F, 1, 0, 0, SC_STREAM_COMPUTE, 0, 1.25, 2.25};
    sc_tl_op o1 = {SC_OP_OPTIMIZER, 1, -1, -1, SC_STREAM_COMPUTE, 0, 2.25, 2.5};
    sc_timeline_add(t, 0, &f0);
    sc_timeline_add(t, 0, &s0);
    sc_timeline_add(t, 1, &f1);
    sc_timeline_add(t, 1, &o1);
    t->step_time_s = 2.5;
    return t;
}

TEST(timeline_roundtrip)
{
    sc_timeline *t = two_ranks();
    char path[600];
    snprintf(path, sizeof path, "%s/t.json", sc_test_tmpdir());
    sc_error err = {0};
    REQUIRE(sc_timeline_save(t, path, &err) == SC_OK);
    sc_timeline *u;
    REQUIRE(sc_timeline_load(path, &u, &err) == SC_OK);
    CHECK_EQ_INT(u->n_ranks, 2);
    CHECK_EQ_INT(u->ranks[0].n_ops, 2);
    CHECK_EQ_INT(u->ranks[1].node, 1);
    CHECK(u->ranks[0].ops[1].kind == SC_OP_SEND_F);
    CHECK(u->ranks[0].ops[1].stream == SC_STREAM_COMM);
    CHECK_NEAR(u->ranks[0].ops[1].bytes, 4096, 0);
    CHECK_EQ_INT(u->ranks[1].ops[1].mb, -1);
    CHECK_NEAR(u->step_time_s, 2.5, 0);
    CHECK(strcmp(u->model, "tiny") == 0);
    sc_timeline_free(t);
    sc_timeline_free(u);
}

/* exec's speed probe (timeline.h "probe") through both writers (the
 * streaming one of save, cJSON's of to_json) and both readers (the
 * streaming load, from_json); a timeline without one writes none. */
/* t written and read back both ways: w[0] through the file (the streaming
 * writer and reader), w[1] through cJSON; 0 when both loaded. */
static int both_ways(const sc_timeline *t, const char *name, sc_timeline *w[2])
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", sc_test_tmpdir(), name);
    sc_error err = {0};
    w[0] = w[1] = NULL;
    if (sc_timeline_save(t, path, &err) || sc_timeline_load(path, &w[0], &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return -1;
    }
    cJSON *j = sc_timeline_to_json(t);
    int bad = !j || sc_timeline_from_json(j, "<mem>", &w[1], &err) != SC_OK;
    cJSON_Delete(j);
    if (bad) {
        sc_test_fail(__FILE__, __LINE__, "cJSON path: %s", err.msg);
        sc_timeline_free(w[0]);
        return -1;
    }
    return 0;
}

TEST(timeline_probe_roundtrip)
{
    sc_timeline *t = two_ranks();
    t->probe_m = 512, t->probe_n = 256, t->probe_k = 128, t->probe_reps = 3;
    t->probe_steps = 10;
    snprintf(t->probe_dtype, sizeof t->probe_dtype, "fp32");
    t->ranks[0].probe_s = 0.008;
    t->ranks[1].probe_s = 0.0135;
    sc_timeline *w[2];
    REQUIRE(both_ways(t, "p.json", w) == 0);
    sc_timeline *u = w[0], *v = w[1];
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(w[i]->probe_m, 512);
        CHECK_EQ_INT(w[i]->probe_n, 256);
        CHECK_EQ_INT(w[i]->probe_k, 128);
        CHECK_EQ_INT(w[i]->probe_reps, 3);
        CHECK_EQ_INT(w[i]->probe_steps, 10);
        CHECK(!strcmp(w[i]->probe_dtype, "fp32"));
        CHECK_NEAR(w[i]->ranks[0].probe_s, 0.008, 0);
        CHECK_NEAR(w[i]->ranks[1].probe_s, 0.0135, 0);
    }
    sc_timeline_free(u);
    sc_timeline_free(v);
    sc_timeline_free(t);
    /* none: no key at all */
    t = two_ranks();
    char path[600];
    snprintf(path, sizeof path, "%s/p.json", sc_test_tmpdir());
    sc_error err = {0};
    REQUIRE(sc_timeline_save(t, path, &err) == SC_OK);
    char *txt = NULL;
    REQUIRE(sc_read_file(path, 1 << 20, &txt, NULL, &err) == SC_OK);
    CHECK(!strstr(txt, "probe"));
    sc_free(txt);
    sc_timeline_free(t);
}

TEST(timeline_chrome_events)
{
    sc_timeline *t = two_ranks();
    cJSON *c = sc_timeline_chrome(t);
    REQUIRE(c);
    const cJSON *ev = cJSON_GetObjectItem(c, "traceEvents");
    int x = 0, procs = 0, threads = 0;
    double dur_send = -1;
    int tid_send = -1, pid_f1 = -1;
    for (const cJSON *e = ev->child; e; e = e->next) {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
        if (!strcmp(ph, "X")) {
            x++;
            if (!strcmp(name, "send_f0")) {
                dur_send = cJSON_GetObjectItem(e, "dur")->valuedouble;
                tid_send = cJSON_GetObjectItem(e, "tid")->valueint;
            }
            if (!strcmp(name, "F0") && cJSON_GetObjectItem(e, "tid")->valueint == 2)
                pid_f1 = cJSON_GetObjectItem(e, "pid")->valueint;
        } else if (!strcmp(name, "process_name")) {
            procs++;
        } else if (!strcmp(name, "thread_name")) {
            threads++;
        }
    }
    CHECK_EQ_INT(x, 4);
    CHECK_EQ_INT(procs, 2);
    CHECK_EQ_INT(threads, 4);
    CHECK_NEAR(dur_send, 0.25e6, 1e-12); /* microseconds */
    CHECK_EQ_INT(tid_send, 1);           /* rank 0, comm stream */
    CHECK_EQ_INT(pid_f1, 1);             /* rank 1 lives on node 1 */
    cJSON_Delete(c);
    sc_timeline_free(t);
}

/* How a measurement ran fused attention round-trips through both writers
 * and readers; an exec timeline without the key ran it as two GEMMs (the
 * executor has no fused kernel), a simulated one did not run it at all. */
TEST(timeline_flash_attention_roundtrip)
{
    sc_timeline *t = two_ranks();
    CHECK(!sc_timeline_flash_gemms(t)); /* simulated: it ran no kernel at all */
    snprintf(t->source, sizeof t->source, "exec");
    CHECK(sc_timeline_flash_gemms(t)); /* not recorded: the executor's way */
    snprintf(t->flash_attention, sizeof t->flash_attention, "fused");
    CHECK(!sc_timeline_flash_gemms(t));
    const char *ways[2] = {"fused", "gemms"};
    for (int k = 0; k < 2; k++) {
        snprintf(t->flash_attention, sizeof t->flash_attention, "%s", ways[k]);
        sc_timeline *w[2];
        REQUIRE(both_ways(t, "f.json", w) == 0);
        CHECK(!strcmp(w[0]->flash_attention, ways[k]) && !strcmp(w[1]->flash_attention, ways[k]));
        CHECK_EQ_INT(sc_timeline_flash_gemms(w[0]), k);
        sc_timeline_free(w[0]);
        sc_timeline_free(w[1]);
    }
    snprintf(t->source, sizeof t->source, "sim");
    t->flash_attention[0] = '\0';
    CHECK(!sc_timeline_flash_gemms(t));
    sc_timeline_free(t);
}

/* The operands an exec measurement multiplied round-trip through both
 * writers and readers; another value is refused naming the file and key. */
TEST(timeline_operands_roundtrip)
{
    sc_timeline *t = two_ranks();
    snprintf(t->source, sizeof t->source, "exec");
    const char *ways[2] = {"random", "zeros"};
    for (int k = 0; k < 2; k++) {
        snprintf(t->operands, sizeof t->operands, "%s", ways[k]);
        sc_timeline *w[2];
        REQUIRE(both_ways(t, "o.json", w) == 0);
        CHECK(!strcmp(w[0]->operands, ways[k]) && !strcmp(w[1]->operands, ways[k]));
        sc_timeline_free(w[0]);
        sc_timeline_free(w[1]);
    }
    cJSON *j = sc_timeline_to_json(t);
    REQUIRE(j);
    cJSON_ReplaceItemInObject(j, "operands", cJSON_CreateString("ones"));
    sc_timeline *bad = NULL;
    sc_error err = {0};
    CHECK(sc_timeline_from_json(j, "o.json", &bad, &err) == SC_EINVAL);
    CHECK(bad == NULL);
    CHECK_STR_HAS(err.msg, "o.json: operands: \"ones\"");
    cJSON_Delete(j);
    sc_timeline_free(t);
}

/* exec --kernels' kernels round-trip through both writers and readers. */
TEST(timeline_kernels_roundtrip)
{
    sc_timeline *t = two_ranks();
    t->kernels = sc_calloc(2, sizeof *t->kernels);
    REQUIRE(t->kernels);
    t->n_kernels = 2;
    t->kernels_rank = 1;
    t->kernels[0] = (sc_tl_kernel){"qkv", "F", "wgemm", 1, 2048, 6144, 2048, 0, 24, 1.5e-4, 4};
    t->kernels[1] = (sc_tl_kernel){"ln1", "BW", "mem", 0, 0, 0, 0, 3.2e7, 24, 2e-5, 1};
    sc_timeline *w[2];
    REQUIRE(both_ways(t, "k.json", w) == 0);
    for (int i = 0; i < 2; i++) {
        REQUIRE(w[i]->n_kernels == 2);
        CHECK_EQ_INT(w[i]->kernels_rank, 1);
        CHECK(!strcmp(w[i]->kernels[0].name, "qkv") && !strcmp(w[i]->kernels[0].op, "wgemm"));
        CHECK(w[i]->kernels[0].n == 6144 && w[i]->kernels[0].calls == 24);
        CHECK_NEAR(w[i]->kernels[0].time_s, 1.5e-4, 0);
        CHECK(!strcmp(w[i]->kernels[1].pass, "BW") && w[i]->kernels[1].bytes == 3.2e7);
        CHECK_EQ_INT(w[i]->kernels[0].splits, 4); /* TE's tp-overlap chunks */
        CHECK_EQ_INT(w[i]->kernels[1].splits, 1); /* absent: whole */
    }
    sc_timeline_free(w[0]);
    sc_timeline_free(w[1]);
    sc_timeline_free(t);
}

TEST(timeline_bad_corpus)
{
    DIR *d = opendir("tests/corpus/timeline");
    REQUIRE(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        char path[512], exp[512];
        snprintf(path, sizeof path, "tests/corpus/timeline/%s", e->d_name);
        snprintf(exp, sizeof exp, "tests/corpus/timeline/%.*s.expect", (int)(l - 5), e->d_name);
        char *want = NULL;
        sc_error err = {0};
        REQUIRE(sc_read_file(exp, 4096, &want, NULL, &err) == SC_OK);
        sc_timeline *t = NULL;
        if (sc_timeline_load(path, &t, &err) == SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s loaded but should fail", path);
            sc_timeline_free(t);
        } else {
            CHECK_STR_HAS(err.msg, want);
            CHECK_STR_HAS(err.msg, path);
        }
        sc_free(want);
        n++;
    }
    closedir(d);
    CHECK(n >= 6);
}
