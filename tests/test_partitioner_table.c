/* test_partitioner_table.c - the partitioners' one table
 * (planner/partitioner_hook.h): every name is found, every chooser by name
 * (sc_partition_by_method, sc_planner_partition, the search) reaches the
 * same function, and an unknown name is told the known ones. */
#include "check.h"
#include "cluster.h"
#include "model.h"
#include "partitioner.h"
#include "partitioner_hook.h"
#include "search.h"

#include <string.h>

static int same_partition(const sc_partition *a, const sc_partition *b)
{
    if (a->n_stages != b->n_stages)
        return 0;
    for (int i = 0; i <= a->n_stages; i++)
        if (a->first[i] != b->first[i])
            return 0;
    return 1;
}

TEST(partitioner_table_names)
{
    const char *want[] = {"uniform", "tree", "optimal"};
    int n = 0;
    for (; sc_partitioner_all[n]; n++) {
        REQUIRE(n < 3);
        CHECK(!strcmp(sc_partitioner_all[n]->name, want[n]));
        CHECK(sc_partitioner_all[n]->desc && *sc_partitioner_all[n]->desc);
        CHECK(sc_partitioner_all[n]->run != NULL);
        CHECK(sc_partitioner_find(want[n]) == sc_partitioner_all[n]);
    }
    CHECK_EQ_INT(n, 3);
    CHECK(!strcmp(sc_planner_partitioners(), "uniform, tree, optimal"));
    CHECK(!strcmp(sc_planner_default_partitioner(), "optimal"));
    CHECK(sc_partitioner_find("Optimal") == NULL);
    CHECK(sc_partitioner_find(NULL) == NULL);
    const sc_partitioner_impl *p = (const sc_partitioner_impl *)1;
    sc_error err = {0};
    CHECK_EQ_INT(sc_partitioner_lookup("plan", "magic", &p, &err), SC_ENOTFOUND);
    CHECK(p == NULL);
    CHECK_STR_HAS(err.msg, "plan: unknown partitioner 'magic' (uniform, tree, optimal)");
}

/* Each way of choosing by name gives what the table's function gives. */
TEST(partitioner_table_every_chooser_agrees)
{
    sc_model *m = NULL;
    sc_error err = {0};
    REQUIRE(sc_model_open("gpt-1.3b", &m, &err) == SC_OK);
    sc_cluster c;
    REQUIRE(sc_cluster_preset_get("p4d.24xlarge", &c, &err) == SC_OK);
    REQUIRE(sc_cluster_set_nodes(&c, 2, &err) == SC_OK);
    for (int i = 0; sc_partitioner_all[i]; i++) {
        const sc_partitioner_impl *impl = sc_partitioner_all[i];
        sc_partitioner_cfg cfg;
        sc_partitioner_cfg_init(&cfg, m, &c, 4);
        sc_partition a = {0}, b = {0};
        REQUIRE(impl->run(&cfg, &a, &err) == SC_OK);
        REQUIRE(sc_partition_by_method(impl->name, &cfg, &b, &err) == SC_OK);
        CHECK(same_partition(&a, &b));
        sc_partition_free(&a);
        sc_partition_free(&b);
        /* the search's request: the frugal memory settings of
         * partitioner_hook.c, through the same function */
        sc_part_request rq = {.m = m, .c = &c, .pp = 4, .v = 1, .tp = 1, .mbs = 1, .dp = 4,
                              .memory_weight = -1};
        REQUIRE(sc_planner_partition(impl->name, &rq, &a, &err) == SC_OK);
        sc_partitioner_cfg_init(&cfg, m, &c, 4);
        cfg.dp = 4;
        cfg.zero = 3;
        cfg.recompute = SC_RECOMPUTE_FULL;
        cfg.inflight_max = 1;
        REQUIRE(impl->run(&cfg, &b, &err) == SC_OK);
        CHECK(same_partition(&a, &b));
        sc_partition_free(&a);
        sc_partition_free(&b);
    }
    /* NULL chooses the default */
    sc_partitioner_cfg cfg;
    sc_partitioner_cfg_init(&cfg, m, &c, 4);
    sc_partition a = {0}, b = {0};
    REQUIRE(sc_partition_by_method(NULL, &cfg, &a, &err) == SC_OK);
    REQUIRE(sc_partition_optimal(&cfg, &b, &err) == SC_OK);
    CHECK(same_partition(&a, &b));
    sc_partition_free(&a);
    sc_partition_free(&b);
    /* unknown names: each chooser keeps its status, all list the table */
    CHECK_EQ_INT(sc_partition_by_method("magic", &cfg, &a, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "partition: unknown method 'magic' (uniform, tree, optimal)");
    sc_part_request rq = {.m = m, .c = &c, .pp = 4, .v = 1, .tp = 1, .mbs = 1, .dp = 4,
                          .memory_weight = -1};
    CHECK_EQ_INT(sc_planner_partition("magic", &rq, &a, &err), SC_ENOTFOUND);
    CHECK_STR_HAS(err.msg, "plan: unknown partitioner 'magic' (uniform, tree, optimal)");
    sc_search_opts o;
    sc_search_opts_default(&o);
    o.global_batch = 8;
    o.partitioner = "magic";
    sc_search *s = NULL;
    CHECK_EQ_INT(sc_search_run(m, &c, &o, &s, &err), SC_ENOTFOUND);
    CHECK_STR_HAS(err.msg, "plan: unknown partitioner 'magic' (uniform, tree, optimal)");
    CHECK(s == NULL);
    sc_model_free(m);
}
