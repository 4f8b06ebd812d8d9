/* test_netcluster.c - scripts/netcluster.sh, the emulated cluster.
 *
 * Always: the script parses (bash -n), --help works, and bad arguments exit
 * 2 before touching anything. Under SC_LONG=1 (make test-long), as root with
 * iproute2 and mpirun: up 2 nodes with shaped links, a 2-rank MPI job lands
 * one rank in each node's namespace, 4 ranks (2 per node: shared memory
 * inside, TCP across) run a collective, `stagecraft bench p2p` across the
 * link measures below the shaped rate and within a factor 2 of it, and down
 * leaves no namespace and no state behind; with --pace a 64 KiB message
 * takes its time at the rate (unpaced it fits the token bucket and beats it).
 * The cluster is named "sclt" so a user's own cluster ("sc") is left alone. */
#include "check.h"
#include "json.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)
#define NC "scripts/netcluster.sh --name sclt"
#define RATE_BITS 200e6 /* the rate the long test shapes the links to */

/* Under SAN=1: Open MPI's own leaks are not ours (see test_bench.c). */
static const char *mpi_env(void)
{
    const char *s = getenv("SC_SAN");
    return s && !strcmp(s, "1") ? "ASAN_OPTIONS=detect_leaks=0 " : "";
}

TEST(netcluster_script_parses_and_helps)
{
    CHECK(SC("bash -n scripts/netcluster.sh") == 0);
    CHECK(SC("scripts/netcluster.sh --help") == 0);
    CHECK_STR_HAS(out, "usage: scripts/netcluster.sh");
    CHECK_STR_HAS(out, "tbf");
    CHECK(SC("scripts/netcluster.sh up --help") == 0);
    /* argument errors exit 2 and make nothing (checked before needing root) */
    const char *bad[] = {"up --nodes 0", "up --nodes x", "up --rate fast", "up --slots 0",
                         "up --bogus", "up --cores-per-node 0", "up --cores-per-node x",
                         "up --cores-per-node 100000", "frobnicate", "run", "run --np 2",
                         "run --map-by core -- true"};
    for (size_t i = 0; i < SC_ARRAY_LEN(bad); i++) {
        int rc = SC(NC " %s", bad[i]);
        if (rc != 2)
            sc_test_fail(__FILE__, __LINE__, "'netcluster.sh %s' exited %d: %.200s", bad[i], rc,
                         out);
    }
    CHECK(SC("scripts/netcluster.sh --name 'a b' status") == 2);
    CHECK(SC("ip netns list 2>/dev/null | grep -c '^sclt-'") != 0); /* nothing made */
}

static int tool(const char *name)
{
    return SC("command -v %s", name) == 0;
}

/* A long run as root with the tools the cluster needs (a skip otherwise). */
static int can_run(void)
{
    if (!sc_test_long())
        return 0;
    if (geteuid() != 0 || !tool("ip") || !tool("tc") || !tool("mpirun") || !tool("unshare")) {
        sc_test_skip("needs root, iproute2, unshare and mpirun");
        return 0;
    }
    return 1;
}

static void on_cluster(const char *bin);

static void nc_down(void)
{
    if (SC(NC " down") != 0)
        sc_test_fail(__FILE__, __LINE__, "down failed: %.300s", out);
}

TEST(netcluster_long_up_run_bench_down)
{
    if (!can_run())
        return;
    const char *bin = sc_test_bin();
    /* two nodes, 2 slots each, links at 200 Mbit/s each way */
    if (SC(NC " up --nodes 2 --rate 200mbit --slots 2") != 0) {
        sc_test_fail(__FILE__, __LINE__, "up failed: %.400s", out);
        CHECK(SC("ip netns list | grep -c '^sclt-'") != 0); /* up cleaned up */
        return;
    }
    on_cluster(bin);

    /* down removes everything, and again is fine */
    nc_down();
    CHECK(SC("ip netns list | grep -c '^sclt-'") != 0);
    CHECK(!sc_test_exists("/run/stagecraft-netcluster/sclt"));
    CHECK(SC(NC " down") == 0);
    CHECK(SC(NC " status") == 1);
    CHECK_STR_HAS(out, "not up");
}

/* The checks made while the cluster is up (it returns early on a failure;
 * the caller takes the cluster down either way). */
static void on_cluster(const char *bin)
{
    const char *d = sc_test_tmpdir();
    CHECK(SC("ip netns list") == 0);
    CHECK_STR_HAS(out, "sclt-node0");
    CHECK_STR_HAS(out, "sclt-node1");
    CHECK_STR_HAS(out, "sclt-hub");
    CHECK(SC(NC " status") == 0);
    CHECK_STR_HAS(out, "rate 200Mbit");
    /* the root namespace got no address of the cluster */
    CHECK(SC("ip -o addr show | grep -c '10\\.77\\.0\\.'") != 0);

    /* one rank per node: each runs in its own namespace, under its name */
    CHECK(SC("timeout 60 " NC " run --np 2 --map-by node -- sh -c "
             "'echo rank=$OMPI_COMM_WORLD_RANK ns=$(ip netns identify) host=$(hostname)'") == 0);
    CHECK_STR_HAS(out, "mpirun --allow-run-as-root --oversubscribe -np 2");
    CHECK_STR_HAS(out, "rank=0 ns=sclt-node0 host=sclt-node0");
    CHECK_STR_HAS(out, "rank=1 ns=sclt-node1 host=sclt-node1");

    /* each node's ranks run on the node's own cores: with 2 or more CPUs
     * the two nodes share none (before, every orted bound its rank to
     * core 0) */
    CHECK(SC("timeout 60 " NC " run --np 2 --map-by node -- sh -c "
             "'echo rank=$OMPI_COMM_WORLD_RANK cpus=$(awk \"/^Cpus_allowed_list/ "
             "{ print \\$2 }\" /proc/self/status)'") == 0);
    char c0[64] = "", c1[64] = "";
    const char *r0 = strstr(out, "rank=0 cpus="), *r1 = strstr(out, "rank=1 cpus=");
    CHECK(r0 && sscanf(r0, "rank=0 cpus=%63s", c0) == 1);
    CHECK(r1 && sscanf(r1, "rank=1 cpus=%63s", c1) == 1);
    if (sysconf(_SC_NPROCESSORS_ONLN) >= 2 && strcmp(c0, c1) == 0)
        sc_test_fail(__FILE__, __LINE__, "both nodes' ranks run on cpus %s", c0);
    CHECK(SC(NC " status") == 0);
    CHECK_STR_HAS(out, "core(s) each");

    /* two ranks per node: shared memory inside a node, TCP across */
    char p[600];
    snprintf(p, sizeof p, "%s/ar.json", d);
    CHECK(SC("%stimeout 60 " NC " run --np 4 -- %s bench allreduce --sizes 4K:64K:16 --iters 3 "
             "--timeout 20 -o %s", mpi_env(), bin, p) == 0);
    cJSON *j = NULL;
    sc_error err = {0};
    if (sc_json_load(p, &j, &err) == SC_OK) {
        CHECK(cJSON_GetObjectItem(j, "ranks")->valuedouble == 4);
        CHECK(cJSON_GetObjectItem(j, "nodes")->valuedouble == 2);
        CHECK(cJSON_GetObjectItem(j, "ranks_per_node")->valuedouble == 2);
        CHECK(!strcmp(cJSON_GetObjectItem(j, "link")->valuestring, "inter"));
        cJSON_Delete(j);
    } else {
        sc_test_fail(__FILE__, __LINE__, "%s: %.300s", err.msg, out);
    }

    /* p2p across the shaped link: below the rate, and not far below */
    snprintf(p, sizeof p, "%s/p2p.json", d);
    CHECK(SC("%stimeout 120 " NC " run --np 2 --map-by node -- %s bench p2p --sizes 2M,8M "
             "--iters 3 --warmup 1 --timeout 30 -o %s", mpi_env(), bin, p) == 0);
    j = NULL;
    if (sc_json_load(p, &j, &err) == SC_OK) {
        CHECK(!strcmp(cJSON_GetObjectItem(j, "link")->valuestring, "inter"));
        CHECK(cJSON_GetObjectItem(j, "nodes")->valuedouble == 2);
        const cJSON *r = cJSON_GetObjectItem(j, "results");
        const cJSON *last = cJSON_GetArrayItem(r, cJSON_GetArraySize(r) - 1);
        double bits = last ? cJSON_GetObjectItem(last, "algbw")->valuedouble * 8 : 0;
        fprintf(stderr, "    p2p across a %.0f Mbit/s link: %.1f Mbit/s\n", RATE_BITS / 1e6,
                bits / 1e6);
        CHECK(bits < RATE_BITS);
        CHECK(bits > 0.5 * RATE_BITS);
        cJSON_Delete(j);
    } else {
        sc_test_fail(__FILE__, __LINE__, "%s: %.300s", err.msg, out);
    }
}

/* The fastest 64 KiB p2p message across the cluster "sclt", in seconds
 * (0 when the bench failed, which the caller reports). */
static double p2p_64k_min_s(const char *bin)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/p2p64.json", sc_test_tmpdir());
    if (SC("%stimeout 120 " NC " run --np 2 --map-by node -- %s bench p2p --sizes 64K "
           "--iters 20 --warmup 3 --timeout 30 -o %s",
           mpi_env(), bin, p) != 0) {
        sc_test_fail(__FILE__, __LINE__, "bench p2p failed: %.300s", out);
        return 0;
    }
    cJSON *j = NULL;
    sc_error err = {0};
    double t = 0;
    if (sc_json_load(p, &j, &err) == SC_OK) {
        const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0);
        const cJSON *m = r ? cJSON_GetObjectItem(r, "time_min_s") : NULL;
        t = cJSON_IsNumber(m) ? m->valuedouble : 0;
        cJSON_Delete(j);
    } else {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
    }
    return t;
}

/* --pace: a message smaller than the token bucket no longer passes at memory
 * speed. Unpaced, a 64 KiB message fits the 64 KiB bucket and its fastest
 * run beats the rate; paced, even the fastest takes at least 90% of its
 * time at the rate (2.6 ms at 200 Mbit/s), less the one packet an idle link
 * lets through. */
TEST(netcluster_long_pace)
{
    if (!can_run())
        return;
    const char *bin = sc_test_bin();
    const double at_rate = 65536 * 8 / RATE_BITS, packet = (8192 + 1024) * 8 / RATE_BITS;
    if (SC(NC " up --nodes 2 --rate 200mbit") != 0) {
        sc_test_fail(__FILE__, __LINE__, "up failed: %.400s", out);
        return;
    }
    double unpaced = p2p_64k_min_s(bin);
    nc_down();
    if (SC(NC " up --nodes 2 --rate 200mbit --pace") != 0) {
        sc_test_fail(__FILE__, __LINE__, "up --pace failed: %.400s", out);
        return;
    }
    CHECK(SC(NC " status") == 0);
    CHECK_STR_HAS(out, "peakrate");
    double paced = p2p_64k_min_s(bin);
    nc_down();
    fprintf(stderr, "    64 KiB across 200 Mbit/s: %.0f us unpaced, %.0f us paced (%.0f us at the rate)\n",
            unpaced * 1e6, paced * 1e6, at_rate * 1e6);
    CHECK(unpaced > 0 && unpaced < at_rate);
    CHECK(paced > 0.9 * (at_rate - packet));
}
