/* test_layers.c - scripts/check_layers.sh: the library's own tree keeps its
 * layers, and the check fails on a made-up tree that breaks them, once
 * through an #include and once through a hand-written prototype (a linked
 * symbol). */
#include "check.h"

#include <stdlib.h>
#include <unistd.h>

static char out[1 << 16];

TEST(layers_tree_holds)
{
    const char *san = getenv("SC_SAN");
    const char *build = san && !strcmp(san, "1") ? "build-san" : "build";
    int rc = sc_test_sh(out, sizeof out, "scripts/check_layers.sh %s", build);
    if (rc != 0)
        sc_test_fail(__FILE__, __LINE__, "check_layers.sh %s exited %d: %.2000s", build, rc, out);
    CHECK_STR_HAS(out, "layers: ok");
}

/* A copy of the script in a tree of its own (it runs from its parent
 * folder): every layered folder with one object; cost_models breaks the
 * order as told. */
static int fake_tree(const char *d, const char *cost_c)
{
    char root[4096];
    if (!getcwd(root, sizeof root))
        return -1;
    if (sc_test_sh(out, sizeof out,
                   "set -e; cd %s; mkdir -p scripts build; cp %s/scripts/check_layers.sh scripts/; "
                   "for x in common traces cost_models sim planner exec; do mkdir -p $x build/$x; "
                   "done; "
                   "printf 'int sim_fn(void);\\n' > sim/simx.h; "
                   "printf '#include \"simx.h\"\\nint sim_fn(void) { return 1; }\\n' > sim/simx.c; "
                   "for x in common traces planner exec; do "
                   "printf 'int %%s_fn(void) { return 0; }\\n' $x > $x/$x.c; done",
                   d, root) != 0)
        return -1;
    char path[700];
    snprintf(path, sizeof path, "%s/cost_models/cm.c", d);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(cost_c, f);
    fclose(f);
    return sc_test_sh(out, sizeof out,
                      "set -e; cd %s; for s in */*.c; do case $s in scripts/*) continue;; esac; "
                      "cc -c -Isim $s -o build/${s%%.c}.o; done",
                      d);
}

TEST(layers_include_against_the_order_fails)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(fake_tree(d, "#include \"simx.h\"\nint cm(void) { return sim_fn(); }\n") == 0);
    int rc = sc_test_sh(out, sizeof out, "%s/scripts/check_layers.sh", d);
    CHECK(rc == 1);
    CHECK_STR_HAS(out, "cost_models/cm.c:1: includes sim/simx.h");
    CHECK_STR_HAS(out, "uses sim_fn from sim/");
}

TEST(layers_symbol_through_a_prototype_fails)
{
    const char *d = sc_test_tmpdir();
    /* no include: the call goes through a prototype written by hand */
    REQUIRE(fake_tree(d, "int sim_fn(void);\nint cm(void) { return sim_fn(); }\n") == 0);
    int rc = sc_test_sh(out, sizeof out, "%s/scripts/check_layers.sh", d);
    CHECK(rc == 1);
    CHECK(!strstr(out, "includes"));
    CHECK_STR_HAS(out, "build/cost_models/cm.o: uses sim_fn from sim/");
    /* and the same tree without the call passes */
    REQUIRE(fake_tree(d, "int cm(void) { return 0; }\n") == 0);
    rc = sc_test_sh(out, sizeof out, "%s/scripts/check_layers.sh", d);
    CHECK(rc == 0);
    CHECK_STR_HAS(out, "layers: ok");
}
