/* test_model.c - the model format: building, validation, JSON round trip,
 * the bad-input corpus, allocation failures. */
#include "check.h"
#include "json.h"
#include "model.h"
#include "partition.h"

#include <dirent.h>
#include <stdlib.h>

/* root -> {emb, blk -> {attn, mlp}, head}; head consumes emb (ok). */
static sc_model *small(void)
{
    sc_model *m = sc_model_new("tiny", SC_BF16, 4);
    sc_module *r = sc_model_add(m, NULL, "tiny", "model");
    sc_module *e = sc_model_add(m, r, "emb", "embedding");
    e->params = 80;
    e->act_out_bytes = 64;
    sc_module *b = sc_model_add(m, r, "blk", "block");
    sc_module *a = sc_model_add(m, b, "attn", "attention");
    a->params = 10;
    a->flops_fwd = 100;
    a->act_saved_bytes = 7;
    sc_module_set_tp(a, 64, 1);
    sc_module_set_dim(m, a, "hidden", 8);
    sc_module *p = sc_model_add(m, b, "mlp", "mlp");
    p->params = 20;
    p->flops_fwd = 200;
    p->flops_bwd = 500;
    p->act_saved_bytes = 3;
    sc_module *h = sc_model_add(m, r, "head", "head");
    h->flops_fwd = 50;
    sc_module_set_shared(m, e, "wte");
    sc_module_set_shared(m, h, "wte");
    sc_module_add_input(m, h, "emb");
    h->has_measured = 1;
    h->measured_fwd_s = 1.5e-3;
    h->measured_bwd_s = 3e-3;
    h->measured_device = sc_strdup("cpu");
    return m;
}

TEST(model_build_and_derive)
{
    sc_model *m = small();
    sc_error err = {0};
    REQUIRE(sc_model_finish(m, "<test>", &err) == SC_OK);
    CHECK_EQ_INT(m->n_modules, 6);
    CHECK_EQ_INT(m->n_leaves, 4);
    CHECK(strcmp(m->leaves[0]->name, "emb") == 0);
    CHECK(strcmp(m->leaves[1]->name, "attn") == 0);
    CHECK(strcmp(m->leaves[3]->name, "head") == 0);
    CHECK_EQ_INT(m->modules[3]->depth, 2);
    sc_totals t = sc_model_totals(m);
    CHECK_NEAR(t.params, 110, 0);
    CHECK_NEAR(t.flops_fwd, 350, 0);
    CHECK_NEAR(t.flops_bwd, 200 + 500 + 100, 0); /* absent bwd = 2 x fwd */
    CHECK_NEAR(t.tp_bytes, 64, 0);
    CHECK(sc_model_find(m, "mlp")->parent == sc_model_find(m, "blk"));
    CHECK_NEAR(sc_module_dim(sc_model_find(m, "attn"), "hidden", 0), 8, 0);
    CHECK_NEAR(sc_module_dim(sc_model_find(m, "attn"), "ffn", -3), -3, 0);
    sc_model_free(m);
    sc_model_free(NULL);
}

TEST(model_roundtrip_exact)
{
    sc_model *m = small();
    sc_error err = {0};
    REQUIRE(sc_model_finish(m, "<test>", &err) == SC_OK);
    sc_model_find(m, "mlp")->params = 1315819520.0; /* not an int32 */
    sc_model_find(m, "attn")->flops_fwd = 1.0 / 3.0; /* needs 17 digits */
    char path[600];
    snprintf(path, sizeof path, "%s/m.json", sc_test_tmpdir());
    REQUIRE(sc_model_save(m, path, &err) == SC_OK);
    sc_model *m2;
    REQUIRE(sc_model_load(path, &m2, &err) == SC_OK);
    CHECK_EQ_INT(m2->n_modules, m->n_modules);
    for (int i = 0; i < m->n_modules; i++) {
        const sc_module *a = m->modules[i], *b = m2->modules[i];
        CHECK(strcmp(a->name, b->name) == 0);
        CHECK(a->params == b->params);
        CHECK(a->flops_fwd == b->flops_fwd);
        CHECK(a->flops_bwd == b->flops_bwd);
        CHECK(a->has_tp == b->has_tp && a->tp_bytes == b->tp_bytes);
        CHECK((a->shared == NULL) == (b->shared == NULL));
        CHECK(a->n_inputs == b->n_inputs && a->n_dims == b->n_dims);
        CHECK(a->has_measured == b->has_measured && a->measured_bwd_s == b->measured_bwd_s);
    }
    /* saving the reloaded model gives the same bytes */
    cJSON *j1 = sc_model_to_json(m), *j2 = sc_model_to_json(m2);
    char *s1 = cJSON_Print(j1), *s2 = cJSON_Print(j2);
    CHECK(strcmp(s1, s2) == 0);
    sc_free(s1);
    sc_free(s2);
    cJSON_Delete(j1);
    cJSON_Delete(j2);
    sc_model_free(m);
    sc_model_free(m2);
}

TEST(model_inputs_must_precede)
{
    sc_model *m = small();
    sc_error err = {0};
    sc_module_add_input(m, sc_model_find(m, "emb"), "head"); /* later module */
    CHECK(sc_model_finish(m, "<t>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "root.children[0].inputs[0]: \"head\" makes a cycle");
    sc_model_free(m);
    m = small();
    sc_module_add_input(m, sc_model_find(m, "mlp"), "blk"); /* its own ancestor */
    CHECK(sc_model_finish(m, "<t>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "\"blk\" makes a cycle");
    sc_model_free(m);
    m = small();
    sc_module_add_input(m, sc_model_find(m, "mlp"), "attn"); /* earlier sibling: fine */
    CHECK(sc_model_finish(m, "<t>", &err) == SC_OK);
    sc_model_free(m);
}

TEST(model_rejects_negative_and_nan_when_built)
{
    sc_model *m = small();
    sc_error err = {0};
    sc_model_find(m, "attn")->act_saved_bytes = -1;
    CHECK(sc_model_finish(m, "<gen>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "<gen>: root.children[1].children[0].act_saved_bytes: must not be negative");
    sc_model_find(m, "attn")->act_saved_bytes = NAN;
    CHECK(sc_model_finish(m, "<gen>", &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "must be finite");
    sc_model_free(m);
}

/* Every file in tests/corpus/model must fail to load with its .expect text,
 * and the message must name the file. */
TEST(model_bad_corpus)
{
    DIR *d = opendir("tests/corpus/model");
    REQUIRE(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        char path[512], exp[512];
        snprintf(path, sizeof path, "tests/corpus/model/%s", e->d_name);
        snprintf(exp, sizeof exp, "tests/corpus/model/%.*s.expect", (int)(l - 5), e->d_name);
        char *want = NULL;
        size_t wl;
        sc_error err = {0};
        if (sc_read_file(exp, 4096, &want, &wl, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s has no .expect file", path);
            continue;
        }
        sc_model *m = NULL;
        sc_status st = sc_model_load(path, &m, &err);
        if (st == SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s loaded but should fail", path);
            sc_model_free(m);
        } else {
            CHECK_STR_HAS(err.msg, want);
            CHECK_STR_HAS(err.msg, path);
            CHECK(m == NULL);
        }
        sc_free(want);
        n++;
    }
    closedir(d);
    CHECK(n >= 20);
}

/* Fail each allocation of a load in turn: always a clean error, never a
 * crash or leak (the sanitizer build checks the leaks). */
TEST(model_load_alloc_failures)
{
    sc_model *m = small();
    sc_error err = {0};
    REQUIRE(sc_model_finish(m, "<t>", &err) == SC_OK);
    char path[600];
    snprintf(path, sizeof path, "%s/m.json", sc_test_tmpdir());
    REQUIRE(sc_model_save(m, path, &err) == SC_OK);
    sc_model_free(m);
    int failures = 0, successes = 0;
    for (long k = 1; k < 400; k++) {
        sc_alloc_fail_at(k);
        sc_model *x = NULL;
        sc_status st = sc_model_load(path, &x, &err);
        sc_alloc_fail_at(0);
        if (st == SC_OK) {
            successes++;
            sc_model_free(x);
            break; /* k is past the last allocation */
        }
        CHECK(x == NULL);
        CHECK(st == SC_ENOMEM);
        failures++;
    }
    CHECK(successes == 1);
    CHECK(failures > 20);
}

TEST(model_save_is_atomic)
{
    char path[600];
    snprintf(path, sizeof path, "%s/dir-that-does-not-exist/m.json", sc_test_tmpdir());
    sc_model *m = small();
    sc_error err = {0};
    REQUIRE(sc_model_finish(m, "<t>", &err) == SC_OK);
    CHECK(sc_model_save(m, path, &err) == SC_EIO);
    CHECK_STR_HAS(err.msg, path);
    /* an existing file is replaced whole */
    snprintf(path, sizeof path, "%s/m.json", sc_test_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("old", f);
    fclose(f);
    CHECK(sc_model_save(m, path, &err) == SC_OK);
    char out[256];
    CHECK(sc_test_sh(out, sizeof out, "ls %s | wc -l", sc_test_tmpdir()) == 0);
    CHECK(atoi(out) == 1); /* no temporary left behind */
    sc_model_free(m);
}

/* The derived layer and attention flags (sc_model_finish) are what walking
 * the tree and comparing kinds gives, for every module of every built-in
 * model and for a block inside a block (its outermost block is its layer);
 * before finish they are walked. */
TEST(model_derived_layer_and_attention)
{
    const char *names[] = {"gpt-1.3b", "gpt-175b", "llama3-8b", "t5-3b", "vit-huge",
                           "fid-3b", "mm-1.3b"};
    for (size_t i = 0; i < SC_ARRAY_LEN(names); i++) {
        sc_model *m;
        sc_error err;
        REQUIRE(sc_model_open(names[i], &m, &err) == SC_OK);
        int layers = 0, attn = 0;
        for (int k = 0; k < m->n_modules; k++) {
            const sc_module *x = m->modules[k], *b = NULL;
            for (const sc_module *p = x; p; p = p->parent)
                if (!strcmp(p->kind, "block"))
                    b = p;
            int a = !strcmp(x->kind, "attention") || !strcmp(x->kind, "cross_attention") ||
                    !strcmp(x->kind, "attention_core");
            CHECK(x->derived);
            CHECK(sc_partition_layer_of(x) == b);
            CHECK_EQ_INT(sc_module_is_attention(x), a);
            layers += b != NULL;
            attn += a;
        }
        CHECK(layers > 0 && attn > 0);
        sc_model_free(m);
    }
    sc_model *m = sc_model_new("nested", SC_BF16, 4);
    sc_module *r = sc_model_add(m, NULL, "nested", "model");
    sc_module *o = sc_model_add(m, r, "outer", "block");
    sc_module *in = sc_model_add(m, o, "inner", "block");
    sc_module *a = sc_model_add(m, in, "attn", "attention");
    a->flops_fwd = 1;
    sc_module *e = sc_model_add(m, r, "head", "head");
    e->flops_fwd = 1;
    CHECK(!a->derived && sc_partition_layer_of(a) == o && sc_module_is_attention(a));
    REQUIRE(sc_model_finish(m, "nested", NULL) == SC_OK);
    CHECK(a->derived && sc_partition_layer_of(a) == o && sc_partition_layer_of(in) == o);
    CHECK(sc_partition_layer_of(e) == NULL && !sc_module_is_attention(e));
    CHECK(sc_module_is_attention(a));
    sc_model_free(m);
}
