/* cmd_exec.c - `stagecraft exec`: run a plan on real devices (one MPI rank
 * per device) and write the measured timeline. */
#include "cli.h"
#include "exec.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void help(void)
{
    printf(
        "usage: mpirun -np R stagecraft exec plan.json --backend cpu|cuda [--steps N]\n"
        "                      [--warmup W] [--timeout S] [--no-verify] [-o measured.json]\n"
        "Runs the plan's training step on real devices, one MPI rank per device (R must\n"
        "equal the plan's dp·tp·pp; rank -> (dp, pp, tp) by the plan's placement), in the\n"
        "per-rank op order of the schedule generator: real GEMMs of the modules' shapes,\n"
        "tensor-parallel allreduces, pipeline sends and receives and data-parallel\n"
        "gradient reductions of the modelled sizes, and the optimizer. Rank 0 writes the\n"
        "median step as a timeline (stagecraft.timeline/1, source \"exec\") with the\n"
        "simulator's op identities: compare it with 'stagecraft sim --plan plan.json\n"
        "--timeline FILE'.\n\n"
        "  --backend cpu      OpenBLAS sgemm, one thread per rank, fp32 whatever the plan's\n"
        "                     dtype (communication moves the modelled byte counts); MPI\n"
        "  --backend cuda     cuBLAS on tensor cores in the plan's dtype (fp8 runs as bf16),\n"
        "                     NCCL; one GPU per rank (the node-local rank picks it)\n"
        "  --steps N          measured steps (default 10)\n"
        "  --warmup W         warm-up steps before them (default 2)\n"
        "  --timeout S        seconds any wait may take before every rank is aborted\n"
        "                     (default 60): a rank that dies or hangs stops the run\n"
        "  --no-verify        do not checksum received activations (done by default in\n"
        "                     the warm-up steps and the first measured step)\n"
        "  -o FILE            write the measured timeline (only on success, whole)\n\n"
        "Launch with OpenMPI as usual: mpirun -np 4 [--hostfile H], or srun under Slurm.\n"
        "Exit status: 0 success, 2 bad input (e.g. wrong rank count), 1 any other failure.\n");
}

int cmd_exec(int argc, char **argv)
{
    static const struct option opts[] = {
        {"backend", required_argument, 0, 'b'}, {"steps", required_argument, 0, 'n'},
        {"warmup", required_argument, 0, 'w'},  {"timeout", required_argument, 0, 't'},
        {"no-verify", no_argument, 0, 'V'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *backend = NULL, *out = NULL;
    long steps = 10, warmup = 2;
    double timeout = 60;
    int verify = 1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            backend = optarg;
            break;
        case 'n':
            if (cli_long("exec", "--steps", optarg, 1, 100000, &steps))
                return 2;
            break;
        case 'w':
            if (cli_long("exec", "--warmup", optarg, 0, 100000, &warmup))
                return 2;
            break;
        case 't':
            if (cli_double("exec", "--timeout", optarg, 1e-3, 1e6, &timeout))
                return 2;
            break;
        case 'V':
            verify = 0;
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            help();
            return 0;
        default:
            return cli_usage("exec", "unknown option");
        }
    }
    if (optind != argc - 1)
        return cli_usage("exec", "want exactly one plan file");
    if (!backend)
        return cli_usage("exec", "--backend cpu|cuda is required");
    if (strcmp(backend, "cpu") && strcmp(backend, "cuda"))
        return cli_usage("exec", "--backend '%s': want cpu or cuda", backend);
    const char *plan = argv[optind];

    sc_exec_opts o = {backend, (int)steps, (int)warmup, timeout, verify, NULL, NULL};
    sc_error err = {0};
    sc_exec *x = NULL;
    sc_status st = sc_exec_open(plan, &o, &x, &err);
    int rank = sc_exec_rank(x);
    if (st) {
        /* setup errors are the same on every rank: rank 0 (or a lone
         * process) reports them */
        if (rank <= 0)
            fprintf(stderr, "stagecraft exec: %s\n", err.msg);
        sc_exec_close(x);
        return st == SC_EINVAL || st == SC_EPARSE || st == SC_ENOTFOUND ? 2 : 1;
    }
    sc_exec_summary sum;
    int must_abort = 0;
    st = sc_exec_run(x, out, &sum, &must_abort, &err);
    if (st) {
        fprintf(stderr, "stagecraft exec: %s\n", err.msg);
        fflush(stderr);
        if (must_abort)
            sc_exec_abort(x, 1);
        sc_exec_close(x);
        return 1;
    }
    if (rank == 0) {
        char b[3][32];
        printf("exec %s: %d ranks, %s (GEMMs in %s)\n", plan, sum.ranks, sum.device, sum.dtype);
        printf("%d measured steps: median %s us, min %s us, max %s us; %ld ops per step\n",
               sum.steps, cli_us(sum.median_s, b[0]), cli_us(sum.min_s, b[1]),
               cli_us(sum.max_s, b[2]), sum.ops_per_step);
        if (out)
            printf("wrote %s\n", out);
    }
    sc_exec_close(x);
    return 0;
}
