/* cmd_bench.c - `stagecraft bench OP`: microbenchmarks of GEMM, point-to-point
 * and collectives on a backend, run under mpirun for the communication ops
 * (see exec/bench.h for what is measured and how). */
#include "cli.h"
#include "cli_outputs.h"
#include "bench.h"
#include "exec.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: stagecraft bench gemm|p2p|allreduce|allgather|reducescatter [OPTIONS]\n"
            "       mpirun -np R stagecraft bench OP [OPTIONS]\n\n"
            "Measures one operation over a sweep of sizes and prints a table on rank 0.\n"
            "gemm runs on every rank at once (C[m,n] = A[m,k] B[k,n]; FLOP/s = 2mnk/time);\n"
            "p2p is a ping-pong between ranks 0 and 1 (time = half the round trip);\n"
            "allreduce, allgather and reducescatter run over every rank. Bandwidths follow\n"
            "nccl-tests (doc/PERFORMANCE.md): size S is the per-rank buffer for allreduce\n"
            "and p2p, the whole n-rank buffer for allgather and reducescatter;\n"
            "algbw = S / time, busbw = algbw x 2(n-1)/n (allreduce), (n-1)/n (allgather,\n"
            "reducescatter), 1 (p2p). Times are the median (and min) over iterations of\n"
            "the slowest rank.\n\n"
            "  --backend B        cpu (OpenBLAS + MPI, default) or cuda (cuBLAS + NCCL)\n"
            "  --sizes SPEC       MIN:MAX:FACTOR or a list A,B,C; suffixes K, M, G (x1024).\n"
            "                     Bytes for the communication ops (default 1K:16M:4 on cpu,\n"
            "                     1K:1G:4 on cuda); square m=n=k for gemm, or MxNxK list\n"
            "                     items, or BxMxNxK: B products in one batched call\n"
            "                     (default 128:1024:2 on cpu, 256:16384:2 on cuda)\n"
            "  --plan FILE        gemm: time the GEMM shapes the executor runs for this plan\n"
            "                     (forward and both backward shapes, every stage; repeat\n"
            "                     for several plans; with --sizes, both), so calibrate fits\n"
            "                     the shapes the plans run rather than squares\n"
            "  --dtype D          fp32, tf32, fp16, bf16, fp8 (default fp32 on cpu, bf16 on\n"
            "                     cuda; the cpu backend runs everything in fp32)\n"
            "  --iters N          timed iterations per block (default 20)\n"
            "  --tolerance T      repeat blocks of N iterations until the median of the last\n"
            "                     block is within T (relative) of the block's before it\n"
            "                     (default 0.02; 0: one block)\n"
            "  --max-iters M      at most M timed iterations per size (default 5 x N); a\n"
            "                     size that has not settled by then is reported as too noisy\n"
            "  --cold SIZE        communication ops: write SIZE bytes of another buffer\n"
            "                     before every iteration (untimed), so each collective\n"
            "                     starts with cold caches, as a step's gradient reduction\n"
            "                     does; choose SIZE well above the last-level cache (e.g.\n"
            "                     256M). calibrate fits such files as the cold link\n"
            "  --hot MS           gemm on cuda: queue MS milliseconds of a 4096^3 GEMM on\n"
            "                     random operands before every timed call, so the GPU runs\n"
            "                     it at its power limit, as a training step holds it\n"
            "                     (default 5 on cuda; 0: a burst at the boost clock, which a\n"
            "                     long step does not hold). Not on cpu\n"
            "  --warmup W         untimed iterations first (default 3)\n"
            "  --timeout S        seconds to wait for a peer before giving up (default 120)\n"
            "  -o, --output FILE  write the results (stagecraft.bench/1) on rank 0, whole or\n"
            "                     not at all ('-': standard output, instead of the table)\n"
            "  --json             print the results as JSON instead of the table\n\n"
            "examples:\n"
            "  stagecraft bench gemm --sizes 256:2048:2 -o gemm.json\n"
            "  stagecraft bench gemm --plan cal.plan.json --plan held.plan.json -o gemm.json\n"
            "  mpirun -np 2 stagecraft bench allreduce --sizes 1K:64M:4 -o ar.json\n"
            "  mpirun -np 2 stagecraft bench allreduce --cold 256M --sizes 4M:32M:2 -o cold.json\n"
            "  scripts/netcluster.sh run --np 2 -- $PWD/bin/stagecraft bench p2p -o p2p.json\n");
}

#define USAGE(...) cli_usage("bench", __VA_ARGS__)

int cmd_bench(int argc, char **argv)
{
    enum { O_BACKEND = 1000, O_SIZES, O_DTYPE, O_ITERS, O_WARMUP, O_TIMEOUT, O_JSON, O_TOL,
           O_MAXIT, O_PLAN, O_COLD, O_HOT };
    static const struct option opts[] = {{"backend", required_argument, NULL, O_BACKEND},
                                         {"sizes", required_argument, NULL, O_SIZES},
                                         {"plan", required_argument, NULL, O_PLAN},
                                         {"dtype", required_argument, NULL, O_DTYPE},
                                         {"iters", required_argument, NULL, O_ITERS},
                                         {"warmup", required_argument, NULL, O_WARMUP},
                                         {"timeout", required_argument, NULL, O_TIMEOUT},
                                         {"json", no_argument, NULL, O_JSON},
                                         {"tolerance", required_argument, NULL, O_TOL},
                                         {"max-iters", required_argument, NULL, O_MAXIT},
                                         {"cold", required_argument, NULL, O_COLD},
                                         {"hot", required_argument, NULL, O_HOT},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *backend = "cpu", *sizes = NULL, *dtype = NULL, *out = NULL, *cold = NULL;
    const char *plans[16];
    int nplans = 0;
    long iters = 20, warmup = 3, max_iters = 0;
    double timeout = 120, tolerance = 0.02, hot_ms = -1;
    int json = 0, ch, quiet = cli_launcher_rank() != 0;
    if (cli_exact_longopts("bench", argc, argv, "ho:", opts))
        return 2;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case O_BACKEND: backend = optarg; break;
        case O_SIZES: sizes = optarg; break;
        case O_PLAN:
            if (nplans >= (int)SC_ARRAY_LEN(plans))
                return USAGE("--plan: at most %d plans", (int)SC_ARRAY_LEN(plans));
            plans[nplans++] = optarg;
            break;
        case O_DTYPE: dtype = optarg; break;
        case O_ITERS:
            if (cli_long("bench", "--iters", optarg, 1, 100000, &iters))
                return 2;
            break;
        case O_WARMUP:
            if (cli_long("bench", "--warmup", optarg, 0, 100000, &warmup))
                return 2;
            break;
        case O_TIMEOUT:
            if (cli_double("bench", "--timeout", optarg, 0.001, 86400, &timeout))
                return 2;
            break;
        case O_TOL:
            if (cli_double("bench", "--tolerance", optarg, 0, 1, &tolerance))
                return 2;
            break;
        case O_MAXIT:
            if (cli_long("bench", "--max-iters", optarg, 1, 10000000, &max_iters))
                return 2;
            break;
        case O_COLD: cold = optarg; break;
        case O_HOT:
            if (cli_double("bench", "--hot", optarg, 0, 10000, &hot_ms))
                return 2;
            break;
        case O_JSON: json = 1; break;
        case 'o': out = optarg; break;
        case 'h':
            if (!quiet)
                usage(stdout);
            return 0;
        default:
            return USAGE("unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (max_iters == 0)
        max_iters = 5 * iters;
    if (max_iters < iters)
        return USAGE("--max-iters %ld is below --iters %ld", max_iters, iters);
    if (optind >= argc)
        return USAGE("missing OP (gemm, p2p, allreduce, allgather, reducescatter)");
    int op = sc_bench_op_parse(argv[optind]);
    if (op < 0)
        return USAGE("unknown OP '%s' (gemm, p2p, allreduce, allgather, reducescatter)",
                     argv[optind]);
    if (optind + 1 < argc)
        return USAGE("unexpected argument '%s'", argv[optind + 1]);
    int cuda = !strcmp(backend, "cuda");
    if (!cuda && strcmp(backend, "cpu"))
        return USAGE("--backend: unknown '%s' (cpu, cuda)", backend);
    int dt = sc_dtype_parse(dtype ? dtype : cuda ? "bf16" : "fp32");
    if (dt < 0)
        return USAGE("--dtype: unknown '%s' (fp32, tf32, fp16, bf16, fp8)", dtype);
    if (nplans && op != SC_BENCH_GEMM)
        return USAGE("--plan is for gemm (the shapes a plan runs); %s takes --sizes",
                     argv[optind]);
    if (hot_ms < 0)
        hot_ms = cuda && op == SC_BENCH_GEMM ? 5 : 0;
    if (hot_ms > 0 && (!cuda || op != SC_BENCH_GEMM))
        return USAGE("--hot is for gemm on --backend cuda (a GPU's power limit; a CPU core "
                     "has none modelled)");
    double cold_bytes = 0;
    if (cold) {
        sc_bench_point one[SC_BENCH_MAX_SIZES];
        int n1 = 0;
        sc_error ce = {0};
        if (op == SC_BENCH_GEMM)
            return USAGE("--cold is for the communication ops (p2p, allreduce, allgather, "
                         "reducescatter)");
        if (sc_bench_parse_sizes(SC_BENCH_ALLREDUCE, cold, one, &n1, &ce) || n1 != 1)
            return USAGE("--cold: '%s' is not one size (e.g. 256M)", cold);
        cold_bytes = one[0].bytes;
    }
    if (!sizes && !nplans)
        sizes = op == SC_BENCH_GEMM ? (cuda ? "256:16384:2" : "128:1024:2")
                                    : (cuda ? "1K:1G:4" : "1K:16M:4");
    static sc_bench_point pts[SC_BENCH_MAX_SIZES];
    int npts = 0;
    sc_error err = {0};
    if (sizes && sc_bench_parse_sizes((sc_bench_op)op, sizes, pts, &npts, &err))
        return USAGE("%s", err.msg);
    for (int i = 0; i < nplans; i++)
        if (sc_exec_plan_gemms(plans[i], pts, SC_BENCH_MAX_SIZES, &npts, &err))
            return !quiet ? cli_fail(&err) : cli_exit_code(err.status);
    /* rank 0 writes the results: known before anything is measured */
    if (!quiet && cli_output_take("bench", &out, json, &err))
        return cli_fail(&err);

    sc_bench *b = NULL;
    if (sc_bench_open(backend, NULL, NULL, &b, &err)) {
        int rc = cli_fail(&err);
        return rc;
    }
    sc_bench_opts o = {.op = (sc_bench_op)op, .dtype = (sc_dtype)dt, .sizes = pts,
                       .n_sizes = npts, .iters = (int)iters, .warmup = (int)warmup,
                       .tolerance = tolerance, .max_iters = (int)max_iters,
                       .timeout_s = timeout, .cold_bytes = cold_bytes,
                       .hot_s = hot_ms / 1e3};
    sc_bench_result *r = NULL;
    int rank = sc_bench_rank(b), size = sc_bench_nranks(b);
    sc_status st = sc_bench_run(b, &o, &r, &err);
    int rc = 0;
    if (st) {
        /* SC_EINVAL and SC_ENOTSUP come from checks every rank makes alike
         * (p2p on one rank, comm ops without MPI): said once, by rank 0.
         * Anything else may leave the other ranks waiting on this one: end
         * them all. */
        int uniform = st == SC_EINVAL || st == SC_ENOTSUP;
        if (rank == 0 || !uniform)
            rc = cli_fail(&err);
        else
            rc = cli_exit_code(st);
        if (size > 1 && !uniform)
            sc_bench_abort(b, rc);
    } else if (rank == 0) {
        if (out && (st = sc_bench_save(r, out, &err)))
            rc = cli_fail(&err);
        double worst;
        int bad = sc_bench_unstable(r, &worst);
        if (json) {
            cJSON *j = sc_bench_to_json(r);
            int prc = cli_print_json(j);
            rc = rc ? rc : prc;
        } else {
            sc_bench_print(r, stdout);
            if (out && !st)
                printf("wrote %s\n", cli_out_name(out));
        }
        fflush(stdout);
        if (bad && json) /* the table, on stdout or (-o -) stderr, says it otherwise */
            fprintf(stderr,
                    "stagecraft bench: too noisy: %d of %d sizes did not settle in %d "
                    "iterations (median still moving by up to %.1f%%, tolerance %.3g%%)\n",
                    bad, r->n_rows, r->max_iters, 100 * worst, 100 * r->tolerance);
    }
    sc_bench_result_free(r);
    sc_bench_close(b);
    return rc;
}
