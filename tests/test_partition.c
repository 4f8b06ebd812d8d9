/* test_partition.c - uniform and explicit partitions. */
#include "check.h"
#include "partition.h"

/* emb, L blocks of (attn, mlp), norm, head */
static sc_model *layers(int L)
{
    sc_model *m = sc_model_new("p", SC_BF16, 8);
    sc_module *r = sc_model_add(m, NULL, "p", "model");
    sc_model_add(m, r, "emb", "embedding");
    for (int i = 0; i < L; i++) {
        char n[32];
        snprintf(n, sizeof n, "b%d", i);
        sc_module *b = sc_model_add(m, r, n, "block");
        snprintf(n, sizeof n, "b%d.attn", i);
        sc_model_add(m, b, n, "attention");
        snprintf(n, sizeof n, "b%d.mlp", i);
        sc_model_add(m, b, n, "mlp");
    }
    sc_model_add(m, r, "norm", "norm");
    sc_model_add(m, r, "head", "head");
    sc_error err;
    if (sc_model_finish(m, "<t>", &err)) {
        sc_model_free(m);
        return NULL;
    }
    return m;
}

TEST(partition_uniform_equal_layers)
{
    sc_model *m = layers(8);
    REQUIRE(m);
    sc_partition p = {0};
    sc_error err;
    REQUIRE(sc_partition_uniform(m, 4, &p, &err) == SC_OK);
    /* leaves: emb=0, b0=1,2, b1=3,4, ..., b7=15,16, norm=17, head=18 */
    CHECK_EQ_INT(p.first[0], 0);
    CHECK_EQ_INT(p.first[1], 5);  /* b2.attn */
    CHECK_EQ_INT(p.first[2], 9);  /* b4.attn */
    CHECK_EQ_INT(p.first[3], 13); /* b6.attn */
    CHECK_EQ_INT(p.first[4], 19);
    CHECK(strcmp(sc_partition_first_name(m, &p, 0), "emb") == 0);
    CHECK(strcmp(sc_partition_last_name(m, &p, 3), "head") == 0);
    CHECK_EQ_INT(sc_partition_stage_of(&p, 0), 0);
    CHECK_EQ_INT(sc_partition_stage_of(&p, 4), 0);
    CHECK_EQ_INT(sc_partition_stage_of(&p, 5), 1);
    CHECK_EQ_INT(sc_partition_stage_of(&p, 18), 3);
    sc_partition_free(&p);
    /* 7 layers over 3 stages: 3, 2, 2 */
    sc_model_free(m);
    m = layers(7);
    REQUIRE(sc_partition_uniform(m, 3, &p, &err) == SC_OK);
    CHECK_EQ_INT(p.first[1], 7);  /* b3.attn = 1 + 2*3 */
    CHECK_EQ_INT(p.first[2], 11); /* b5.attn */
    sc_partition_free(&p);
    CHECK(sc_partition_uniform(m, 8, &p, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "7 layers, fewer than the 8 pipeline stages");
    sc_model_free(m);
}

TEST(partition_explicit_and_parse)
{
    sc_model *m = layers(4);
    REQUIRE(m);
    sc_partition p = {0};
    sc_error err;
    REQUIRE(sc_partition_parse("3,6", m, 3, &p, &err) == SC_OK);
    CHECK_EQ_INT(p.first[1], 3);
    CHECK_EQ_INT(p.first[2], 6);
    CHECK_EQ_INT(p.first[3], m->n_leaves);
    sc_partition_free(&p);
    CHECK(sc_partition_parse("6,3", m, 3, &p, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "increasing");
    CHECK(sc_partition_parse("3", m, 3, &p, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "3 stages need 2 boundaries, got 1");
    CHECK(sc_partition_parse("3,x", m, 3, &p, &err) == SC_EINVAL);
    CHECK_STR_HAS(err.msg, "neither 'uniform' nor a list");
    CHECK(sc_partition_parse("3,99", m, 3, &p, &err) == SC_EINVAL);
    CHECK(sc_partition_parse("uniform", m, 2, &p, &err) == SC_OK);
    sc_partition_free(&p);
    sc_partition_free(&p); /* twice is fine */
    sc_model_free(m);
}
