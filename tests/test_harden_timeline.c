/* test_harden_timeline.c - readers accept what writers produce: the
 * streaming writers give cJSON's bytes, the streaming reader takes a
 * timeline past the JSON reader's 64 MiB cap with the same validation and
 * messages, and --ranks / --stages select what sim --timeline, trace and
 * plot timeline keep. */
#include "check.h"
#include "cluster.h"
#include "json.h"
#include "model.h"
#include "step.h"
#include "timeline.h"

#include <stdlib.h>
#include <sys/stat.h>

static char out[1 << 16];

/* the text of j as sc_json_save writes it, less the final newline */
static char *printed(cJSON *j)
{
    if (!j || sc_json_exact(j) != SC_OK)
        return NULL;
    char *s = cJSON_Print(j);
    return s;
}

static void same_as_cjson(const sc_timeline *t)
{
    sc_buf a = {0}, b = {0};
    sc_timeline_write(t, &a);
    sc_timeline_chrome_write(t, &b);
    cJSON *ja = sc_timeline_to_json(t), *jb = sc_timeline_chrome(t);
    char *pa = printed(ja), *pb = printed(jb);
    CHECK(pa && a.s && !strcmp(pa, a.s));
    CHECK(pb && b.s && !strcmp(pb, b.s));
    sc_free(pa);
    sc_free(pb);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    sc_buf_free(&a);
    sc_buf_free(&b);
}

TEST(htimeline_writers_match_cjson)
{
    /* awkward numbers and strings */
    sc_timeline *t = sc_timeline_new(2, "exec", "m\"odel\\x\t", "c\001l");
    snprintf(t->device, sizeof t->device, "dev \x7f \n");
    snprintf(t->plan_file, sizeof t->plan_file, "p.json");
    snprintf(t->plan_digest, sizeof t->plan_digest, "0123456789abcdef");
    t->n_steps = 3;
    t->step_median_s = 0.1;
    t->step_min_s = 1.0 / 3;
    t->step_max_s = 1e20;
    t->step_time_s = 2147483648.0;
    double vals[] = {0, -0.0, 0.1, 1.0 / 3, 2.0 / 3, 1e-300, 123456789012345678.0, 2147483647.0,
                     -2147483648.0, 4.5, 1e15 + 0.5, 5e-324};
    for (size_t i = 0; i < SC_ARRAY_LEN(vals); i++) {
        sc_tl_op op = {(int)(i % SC_OP_KIND_N), (int)i - 1, -1, (int)i, (int)(i % 2), vals[i],
                       vals[i], vals[i] * 2};
        sc_timeline_add(t, (int)(i % 2), &op);
    }
    same_as_cjson(t);
    /* what exec adds: how it ran fused attention, and its kernels timed alone */
    snprintf(t->flash_attention, sizeof t->flash_attention, "gemms");
    snprintf(t->operands, sizeof t->operands, "random");
    t->kernels = sc_calloc(2, sizeof *t->kernels);
    REQUIRE(t->kernels);
    t->n_kernels = 2;
    t->kernels_rank = 1;
    t->kernels[0] = (sc_tl_kernel){"q\"kv", "BW", "wgemm", 1, 2048, 6144, 2048, 0, 24, 1.0 / 3, 1};
    t->kernels[1] = (sc_tl_kernel){"ln", "F", "mem", 0, 0, 0, 0, 123456789012345678.0, 49, 5e-324, 1};
    same_as_cjson(t);
    sc_timeline_free(t);
    t = sc_timeline_new(0, "sim", "", "");
    same_as_cjson(t);
    sc_timeline_free(t);
    /* simulated steps */
    sc_model *m;
    sc_cluster c;
    sc_error err = {0};
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    REQUIRE(sc_cluster_open("p4d.24xlarge", &c, &err) == SC_OK);
    REQUIRE(sc_cluster_set_nodes(&c, 2, &err) == SC_OK);
    sc_step_cfg cfg = {.dp = 2, .tp = 2, .pp = 4, .v = 2, .m = 8, .mbs = 1,
                       .schedule = "interleaved", .zero = 3, .recompute = SC_RECOMPUTE_FULL,
                       .want_timeline = 1, .jitter = 0.1, .seed = 7};
    sc_step_result *r = NULL;
    REQUIRE(sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK);
    same_as_cjson(r->timeline);
    sc_step_result_free(r);
    sc_model_free(m);
}

TEST(htimeline_sets_parse)
{
    sc_tl_set s;
    sc_error err = {0};
    REQUIRE(sc_tl_set_parse("0-7,64", "--ranks", &s, &err) == SC_OK);
    CHECK(sc_tl_set_has(&s, 0) && sc_tl_set_has(&s, 7) && sc_tl_set_has(&s, 64));
    CHECK(!sc_tl_set_has(&s, 8) && !sc_tl_set_has(&s, 63) && !sc_tl_set_has(&s, -1));
    CHECK(sc_tl_set_parse("7-3", "--ranks", &s, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "--ranks: '7-3'");
    CHECK(sc_tl_set_parse("x", "--stages", &s, &err) == SC_EINVAL);
    CHECK(sc_tl_set_parse("1,", "--stages", &s, &err) == SC_EINVAL);
    CHECK(sc_tl_set_parse("", "--stages", &s, &err) == SC_EINVAL);
    CHECK(sc_tl_set_parse("1;2", "--stages", &s, &err) == SC_EINVAL);
    sc_tl_set none = {0};
    CHECK(sc_tl_set_has(&none, 12345)); /* empty: everything */
}

/* A timeline of more than 64 MiB (what a 1024-GPU sim writes): the JSON
 * reader refuses it, the timeline reader takes it, trace converts a part. */
TEST(htimeline_reads_past_the_json_cap)
{
    const char *d = sc_test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/big.json", d);
    sc_timeline *t = sc_timeline_new(2, "sim", "big", "c");
    t->step_time_s = 1;
    t->ranks[1].node = 1;
    long n = 0;
    while (n < 400000) {
        sc_tl_op op = {SC_OP_F, (int)(n % 16), 0, (int)(n % 1000), SC_STREAM_COMPUTE,
                       123456789.0, n * 1e-6 + 1.0 / 3, n * 1e-6 + 0.5};
        sc_timeline_add(t, n < 399990 ? 0 : 1, &op);
        n++;
    }
    REQUIRE(!t->oom);
    sc_error err = {0};
    REQUIRE(sc_timeline_save(t, path, &err) == SC_OK);
    sc_timeline_free(t);
    struct stat sb;
    REQUIRE(stat(path, &sb) == 0);
    CHECK(sb.st_size > (64 << 20));
    cJSON *j = NULL;
    CHECK(sc_json_load(path, &j, &err) != SC_OK); /* the JSON reader's cap */
    cJSON_Delete(j);
    sc_timeline *u = NULL;
    REQUIRE(sc_timeline_load(path, &u, &err) == SC_OK);
    CHECK_EQ_INT(u->ranks[0].n_ops, 399990);
    CHECK_EQ_INT(u->ranks[1].n_ops, 10);
    CHECK_NEAR(u->ranks[0].ops[5].start, 5e-6 + 1.0 / 3, 1e-15);
    sc_timeline_free(u);
    /* trace takes a part of it (the other ops are read and checked, not held) */
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s -o %s/c.json --ranks 1", sc_test_bin(), path,
                     d) == 0);
    CHECK_STR_HAS(out, "1 ranks, 10 events");
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s -o %s/c2.json --max-mem 64M", sc_test_bin(),
                     path, d) == 2);
    CHECK_STR_HAS(out, "above the limit of 64.00 MiB (--max-mem");
    remove(path);
}

/* Bad files: the same messages as the whole-file reader, syntax included. */
TEST(htimeline_messages_as_before)
{
    const char *d = sc_test_tmpdir();
    static const char *const bodies[] = {
        "{\"format\": \"stagecraft.timeline/1\", \"source\": \"sim\", \"step_time_s\": 1, "
        "\"ranks\": [{\"rank\": 0, \"node\": 0, \"device\": 0, \"dp\": 0, \"pp\": 0, \"tp\": 0, "
        "\"ops\": [{\"kind\": \"F\", \"stage\": 0, \"chunk\": 0, \"mb\": 0, \"bytes\": 0, "
        "\"stream\": \"compute\", \"start\": 0, \"end\": 1}",
        "{\"format\": \"stagecraft.timeline/1\", \"source\": \"sim\", \"step_time_s\": 1, "
        "\"ranks\": [{\"rank\": 0, \"node\": 0, \"device\": 0, \"dp\": 0, \"pp\": 0, \"tp\": 0, "
        "\"ops\": [{\"kind\": \"F\", \"stage\": 0, \"chunk\": 0, \"mb\": 0, \"bytes\": 0, "
        "\"stream\": \"compute\", \"start\": 0, \"end\": tru}]}]}",
        "{\"format\": \"stagecraft.timeline/1\", \"source\": \"sim\", \"step_time_s\": 1, "
        "\"ranks\": [{\"rank\": 0, \"node\": 0, \"device\": 0, \"dp\": 0, \"pp\": 0, \"tp\": 0, "
        "\"ops\": [], \"ops\": []}]}",
        "{\"format\": \"stagecraft.timeline/1\", \"source\": \"sim\", \"step_time_s\": 1, "
        "\"ranks\": [], \"ranks\": []}",
        "{\"format\": \"stagecraft.timeline/1\", \"source\": \"sim\", \"step_time_s\": 1, "
        "\"ranks\": [{\"rank\": 0, \"node\": 0, \"device\": 0, \"dp\": 0, \"pp\": 0, \"tp\": 0, "
        "\"ops\": [7]}]}",
        "{\"format\": \"stagecraft.timeline/1\", \"source\": \"sim\", \"step_time_s\": 1, "
        "\"ranks\": [{\"rank\": 0, \"node\": 0, \"device\": 0, \"dp\": 0, \"pp\": 0, \"tp\": 0, "
        "\"ops\": {}}]} x",
        "[1, 2]",
        "",
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(bodies); i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/b%zu.json", d, i);
        sc_error err = {0}, want = {0};
        REQUIRE(sc_write_file_atomic(path, bodies[i], strlen(bodies[i]), &err) == SC_OK);
        cJSON *j = NULL;
        sc_timeline *t = NULL;
        if (sc_json_load(path, &j, &want) == SC_OK) {
            CHECK(sc_timeline_from_json(j, path, &t, &want) != SC_OK);
            cJSON_Delete(j);
        }
        CHECK(sc_timeline_load(path, &t, &err) != SC_OK);
        CHECK(t == NULL);
        CHECK(!strcmp(err.msg, want.msg));
        if (strcmp(err.msg, want.msg))
            fprintf(stderr, "    case %zu: '%s' vs '%s'\n", i, err.msg, want.msg);
    }
}

TEST(htimeline_filters_in_the_commands)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 4 "
                       "--pp 2 --microbatches 4 --timeline %s/f.json --ranks 0-3,12 --stages 1",
                       bin, d) == 0);
    char path[600];
    snprintf(path, sizeof path, "%s/f.json", d);
    sc_timeline *t = NULL;
    sc_error err = {0};
    REQUIRE(sc_timeline_load(path, &t, &err) == SC_OK);
    CHECK_EQ_INT(t->n_ranks, 16); /* every rank listed */
    for (int r = 0; r < t->n_ranks; r++) {
        int kept = r == 12; /* ranks 0-3 hold stage 0 only */
        CHECK(kept ? t->ranks[r].n_ops > 0 : t->ranks[r].n_ops == 0);
        for (int o = 0; o < t->ranks[r].n_ops; o++)
            CHECK_EQ_INT(t->ranks[r].ops[o].stage, 1);
    }
    sc_timeline_free(t);
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 2 "
                     "--microbatches 2 --ranks 0", bin) == 2);
    CHECK_STR_HAS(out, "--ranks and --stages select what --timeline writes");
    /* trace and plot */
    REQUIRE(sc_test_sh(out, sizeof out,
                       "%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 --dp 2 --tp 4 "
                       "--pp 2 --microbatches 4 --timeline %s/all.json",
                       bin, d) == 0);
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s/all.json -o %s/c.json --ranks 4-5 --stages 1",
                     bin, d, d) == 0);
    CHECK_STR_HAS(out, "wrote ");
    CHECK_STR_HAS(out, ": 2 ranks, ");
    snprintf(path, sizeof path, "%s/c.json", d);
    cJSON *j = NULL;
    REQUIRE(sc_json_load(path, &j, &err) == SC_OK);
    int x = 0, bad = 0;
    for (const cJSON *e = cJSON_GetObjectItem(j, "traceEvents")->child; e; e = e->next)
        if (!strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X")) {
            x++;
            int tid = cJSON_GetObjectItem(e, "tid")->valueint;
            bad |= tid / 2 < 4 || tid / 2 > 5;
            bad |= cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "stage")->valueint != 1;
        }
    CHECK(x > 0 && !bad);
    cJSON_Delete(j);
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s/all.json -o %s/c.json --ranks 9-2", bin, d,
                     d) == 2);
    CHECK_STR_HAS(out, "--ranks: '9-2'");
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s/all.json -o %s/c.json --ranks 0-1000000000",
                     bin, d, d) == 2);
    CHECK_STR_HAS(out, "--ranks: '0-1000000000': 1000000000 is above 100000000");
    /* a selection that keeps nothing wrote an empty trace, exit 0; now refused,
     * with what the timeline has, and nothing written */
    snprintf(path, sizeof path, "%s/none.json", d);
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s/all.json -o %s --ranks 16-20", bin, d, path) ==
          2);
    CHECK_STR_HAS(out, "all.json: no rank selected (--ranks): it has ranks 0-15\n");
    CHECK(sc_test_sh(out, sizeof out, "%s trace %s/all.json -o %s --ranks 0-3 --stages 1", bin, d,
                     path) == 2);
    CHECK_STR_HAS(out, "no op of the ranks selected lies in the stages selected (--stages): its "
                       "stages are 0-1\n");
    CHECK(sc_test_sh(out, sizeof out, "%s sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 2 "
                     "--dp 2 --tp 4 --pp 2 --microbatches 4 --timeline %s --stages 2", bin,
                     path) == 2);
    CHECK_STR_HAS(out, "sim: no op of the ranks selected lies in the stages selected (--stages): "
                       "its stages are 0-1\n");
    CHECK(!sc_test_exists(path));
    if (sc_test_sh(out, sizeof out, "command -v gnuplot") != 0)
        return;
    CHECK(sc_test_sh(out, sizeof out, "%s plot timeline %s/all.json -o %s/e.svg --ranks 99", bin,
                     d, d) == 2);
    CHECK_STR_HAS(out, "no rank selected (--ranks)");
    CHECK(sc_test_sh(out, sizeof out, "%s plot timeline %s/all.json -o %s/g.svg --ranks 0,5-6",
                     bin, d, d) == 0);
    CHECK_STR_HAS(out, "3 of 3 ranks");
    snprintf(path, sizeof path, "%s/g.svg", d);
    char *svg = NULL;
    REQUIRE(sc_read_file(path, 1 << 24, &svg, NULL, &err) == SC_OK);
    CHECK(strstr(svg, "rank 5") && strstr(svg, "rank 6") && !strstr(svg, "rank 1<"));
    sc_free(svg);
}
