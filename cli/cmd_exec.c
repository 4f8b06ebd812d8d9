/* cmd_exec.c - `stagecraft exec`: run a plan on real devices (one MPI rank
 * per device, or for the cuda backend one thread per GPU of this node where
 * MPI is absent or --threads asks) and write the measured timeline. */
#include "backend.h"
#include "build_info.h"
#include "cli.h"
#include "cli_outputs.h"
#include "exec.h"
#include "json.h"
#include "plan.h"
#include "team.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf(
        "usage: mpirun -np R stagecraft exec plan.json --backend cpu|cuda [--steps N]\n"
        "                      [--warmup W] [--timeout S] [--no-verify] [--probe N]\n"
        "                      [--kernels] [--zero-operands] [-o measured.json]\n"
        "       stagecraft exec plan.json --backend cuda [--threads] ...   (one node)\n"
        "Runs the plan's training step on real devices, one MPI rank per device (R must\n"
        "equal the plan's dp·cp·tp·pp; rank -> (dp, pp, tp) by the plan's placement), in the\n"
        "per-rank op order of the schedule generator: real GEMMs of the modules' shapes,\n"
        "tensor-parallel allreduces, pipeline sends and receives and data-parallel\n"
        "gradient reductions of the modelled sizes, and the optimizer. Rank 0 writes the\n"
        "median step as a timeline (stagecraft.timeline/1, source \"exec\") with the\n"
        "simulator's op identities: compare it with 'stagecraft sim --plan plan.json\n"
        "--timeline FILE'.\n\n"
        "  --plan FILE        the plan, as sim and bench take it (or as the first argument)\n"
        "  --backend cpu      OpenBLAS sgemm, one thread per rank, fp32 whatever the plan's\n"
        "                     dtype (communication moves the modelled byte counts); needs\n"
        "                     MPI (a build without MPI refuses it)\n"
        "  --backend cuda     cuBLAS on tensor cores in the plan's dtype (fp8 runs as bf16),\n"
        "                     NCCL; one GPU per rank (the node-local rank picks it)\n"
        "  --threads          cuda only: no mpirun; this process starts dp·cp·tp·pp threads,\n"
        "                     thread r on GPU r of this node (fails if fewer are visible),\n"
        "                     host collectives in-process, NCCL between the threads. The\n"
        "                     only mode of --backend cuda in a build without MPI%s\n"
        "  --steps N          measured steps the figures are over (default 10)\n"
        "  --tolerance T      repeat steps until the median of the last N moved at most\n"
        "                     T (relative) from the median of the N before them (default\n"
        "                     0.02; 0: exactly N steps)\n"
        "  --max-steps M      at most M measured steps (default 5 x N); a run that has not\n"
        "                     settled by then is written anyway and reported as too noisy\n"
        "  --warmup W         warm-up steps before them (default 2)\n"
        "  --timeout S        seconds any wait may take before every rank is aborted\n"
        "                     (default 60): a rank that dies or hangs stops the run\n"
        "  --no-verify        do not checksum received activations (done by default in\n"
        "                     the warm-up steps and the first measured step)\n"
        "  --probe N          the speed probe: before each step every rank at once times a\n"
        "                     GEMM of N x N x N (default 256 on cpu, 4096 on cuda: sizes\n"
        "                     of bench gemm's default sweep; 0: none). calibrate holds its\n"
        "                     median against a gemm bench of that size and refuses a run\n"
        "                     whose ranks ran it much slower\n"
        "  --kernels          after the steps, rank 0 times every kernel of its stage alone\n"
        "                     (one microbatch of each chunk, forward and backward, the\n"
        "                     median of 3 runs, queued back to back) and the timeline\n"
        "                     carries them: compare then prints predicted against measured\n"
        "                     kernel by kernel\n"
        "  --zero-operands    multiply zeros (the buffers as allocated) instead of uniform\n"
        "                     random operands: a comparison only. A GPU draws less power\n"
        "                     on zeros and may hold a clock it would not in training; the\n"
        "                     timeline records which (\"operands\")\n"
        "  -o FILE            write the measured timeline (only on success, whole)\n\n"
        "Launch with OpenMPI as usual: mpirun -np 4 [--hostfile H], or srun under Slurm.\n"
        "Exit status (docs/commands.md, \"Exit codes\"): 0 success, 2 bad usage or input\n"
        "(e.g. wrong rank count), 3 I/O or system error (a file, CUDA, NCCL, MPI, a rank\n"
        "that timed out), 5 does not fit in device memory, 1 any other failure (with\n"
        "threads: the first failing thread's, with its message).\n",
#ifdef SC_HAVE_MPI
        ""
#else
        " (this one)"
#endif
    );
}

/* What one rank did. */
typedef struct rank_result {
    int rank;               /* sc_exec_rank: -1 if the backend did not start */
    sc_status st;
    int setup;              /* failed in sc_exec_open */
    sc_error err;
    sc_exec_summary sum;
} rank_result;

/* One rank's exec: open, run, close (the same for an MPI rank and a
 * thread). Run errors are printed at once (every rank's own line) and abort
 * every rank when others may be stuck; setup errors are left in r for the
 * caller. team: the threads' team (NULL under MPI), told of a failure so
 * the other threads stop waiting. */
static void one_rank(const char *plan, const sc_exec_opts *o, const char *out, sc_team *team,
                     int team_rank, rank_result *r)
{
    sc_exec *x = NULL;
    r->st = sc_exec_open(plan, o, &x, &r->err);
    r->rank = sc_exec_rank(x);
    if (r->st) {
        r->setup = 1;
        sc_team_fail(team, team_rank, r->err.msg);
        sc_exec_close(x);
        return;
    }
    int must_abort = 0;
    r->st = sc_exec_run(x, out, &r->sum, &must_abort, &r->err);
    if (r->st) {
        fprintf(stderr, "stagecraft exec: %s\n", r->err.msg);
        fflush(stderr);
        if (must_abort)
            sc_exec_abort(x, cli_exit_code(r->st)); /* MPI_Abort; threads: the whole process */
        sc_team_fail(team, team_rank, r->err.msg);
    }
    sc_exec_close(x);
}

static void print_summary(const char *plan, const char *out, const sc_exec_summary *sum,
                          const char *mode)
{
    char b[3][32];
    printf("exec %s: %d ranks%s, %s (GEMMs in %s)\n", plan, sum->ranks, mode, sum->device,
           sum->dtype);
    printf("%d measured steps", sum->steps);
    if (sum->runs > sum->steps)
        printf(" (the last of %d)", sum->runs);
    printf(": median %s us, min %s us, max %s us, spread %.1f%%; %ld ops per step\n",
           cli_us(sum->median_s, b[0]), cli_us(sum->min_s, b[1]), cli_us(sum->max_s, b[2]),
           100 * sum->spread, sum->ops_per_step);
    if (sum->stable == 1)
        printf("settled: the median moved %.1f%% from the %d steps before (tolerance %.3g%%)\n",
               100 * sum->drift, sum->steps, 100 * sum->tolerance);
    if (sum->probe > 0)
        printf("probe: a %d^3 GEMM before each step, median %s us on the slowest rank (%d), "
               "%s us on the fastest\n",
               sum->probe, cli_us(sum->probe_s, b[0]), sum->probe_rank,
               cli_us(sum->probe_fast_s, b[1]));
    if (sum->kernels > 0)
        printf("kernels: %d of rank 0's, each timed alone (compare lists them)\n", sum->kernels);
    if (out)
        printf("wrote %s\n", cli_out_name(out));
    fflush(stdout);
    if (sum->tolerance > 0 && sum->stable != 1)
        fprintf(stderr,
                "stagecraft exec: too noisy: after %d measured steps the median of the last "
                "%d %s (tolerance %.3g%%; their spread %.1f%%); the file says so, and calibrate "
                "will refuse it\n",
                sum->runs, sum->steps,
                sum->stable == 0 ? "still moved"
                                 : "could not be judged (fewer than twice as many steps)",
                100 * sum->tolerance, 100 * sum->spread);
    if (sum->tolerance > 0 && sum->stable == 0)
        fprintf(stderr, "stagecraft exec: the median moved %.1f%% between the last two windows "
                "of %d steps\n", 100 * sum->drift, sum->steps);
}

typedef struct thread_job {
    const char *plan, *out;
    sc_exec_opts o;
    rank_result *res;
} thread_job;

static void thread_main(sc_team *t, int rank, void *arg)
{
    thread_job *j = arg;
    one_rank(j->plan, &j->o, rank == 0 ? j->out : NULL, t, rank, &j->res[rank]);
}

/* --backend cuda without MPI: dp·tp·pp threads of this process, thread r on
 * GPU r, each running what an MPI rank runs; rank 0 writes the timeline. */
static int exec_threads(const char *plan, const sc_exec_opts *o, const char *out)
{
    sc_error err = {0};
    sc_plan *p = NULL;
    sc_status st = sc_plan_load(plan, &p, &err);
    if (st) {
        fprintf(stderr, "stagecraft exec: %s\n", err.msg);
        return cli_exit_code(st);
    }
    int dp = p->dp * p->cp, tp = p->tp, pp = p->pp, n = dp * tp * pp;
    sc_plan_free(p);
    /* no device at all (no driver, or none visible): the threads start and
     * the backend's init says why, in the CUDA runtime's words */
    int ndev = sc_build_info_get().cuda_devices;
    if (ndev > 0 && n > ndev) {
        fprintf(stderr,
                "stagecraft exec: %s: the plan needs dp·cp·tp·pp = %d·%d·%d = %d GPUs (one "
                "thread each), but %d CUDA %s visible\n",
                sc_basename(plan), dp, tp, pp, n, ndev, ndev == 1 ? "device is" : "devices are");
        return 2;
    }
    sc_json_init(); /* once, before the threads (it installs cJSON's hooks) */
    sc_team *t = NULL;
    rank_result *res = sc_calloc((size_t)n, sizeof *res);
    if (!res || (st = sc_team_new(n, &t, &err))) {
        sc_free(res);
        fprintf(stderr, "stagecraft exec: %s\n", res ? err.msg : "out of memory");
        return res ? cli_exit_code(st) : CLI_EXIT_INTERNAL;
    }
    thread_job j = {plan, out, *o, res};
    st = sc_team_run(t, thread_main, &j, &err);
    sc_team_free(t);
    int code = 0;
    if (st) {
        fprintf(stderr, "stagecraft exec: %s\n", err.msg);
        code = cli_exit_code(st);
    }
    /* setup errors: the first rank's own failure (not "gave up" because of
     * another's), as rank 0 alone reports them under MPI */
    int cause = -1;
    for (int r = 0; r < n; r++)
        if (res[r].setup && (cause < 0 || (strstr(res[cause].err.msg, ": gave up: ") &&
                                           !strstr(res[r].err.msg, ": gave up: "))))
            cause = r;
    if (cause >= 0) {
        fprintf(stderr, "stagecraft exec: %s\n", res[cause].err.msg);
        if (!code)
            code = cli_exit_code(res[cause].st);
    }
    for (int r = 0; r < n && !code; r++)
        if (res[r].st) /* run errors were printed by their thread */
            code = cli_exit_code(res[r].st);
    if (!code)
        print_summary(plan, out, &res[0].sum, ", one thread per GPU");
    sc_free(res);
    return code;
}

int cmd_exec(int argc, char **argv)
{
    static const struct option opts[] = {
        {"backend", required_argument, 0, 'b'}, {"steps", required_argument, 0, 'n'},
        {"warmup", required_argument, 0, 'w'},  {"timeout", required_argument, 0, 't'},
        {"no-verify", no_argument, 0, 'V'},     {"help", no_argument, 0, 'h'},
        {"threads", no_argument, 0, 'T'},       {"tolerance", required_argument, 0, 'L'},
        {"max-steps", required_argument, 0, 'M'}, {"probe", required_argument, 0, 'P'},
        {"kernels", no_argument, 0, 'K'},       {"zero-operands", no_argument, 0, 'Z'},
        {"plan", required_argument, 0, 'p'},    {0, 0, 0, 0}};
    const char *backend = NULL, *out = NULL, *plan = NULL;
    long steps = 10, warmup = 2, max_steps = 0, probe = -1;
    double timeout = 60, tolerance = 0.02;
    int verify = 1, threads = 0, kernels = 0, zeros = 0, c;
    if (cli_exact_longopts("exec", argc, argv, "o:h", opts))
        return 2;
    optind = 1;
    opterr = 0; /* one message, ours (getopt's own came first, unprefixed) */
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
        case 'L':
            if (cli_double("exec", "--tolerance", optarg, 0, 1, &tolerance))
                return 2;
            break;
        case 'M':
            if (cli_long("exec", "--max-steps", optarg, 1, 10000000, &max_steps))
                return 2;
            break;
        case 'P':
            if (cli_long("exec", "--probe", optarg, 0, 65536, &probe))
                return 2;
            break;
        case 'V':
            verify = 0;
            break;
        case 'K':
            kernels = 1;
            break;
        case 'Z':
            zeros = 1;
            break;
        case 'T':
            threads = 1;
            break;
        case 'o':
            out = optarg;
            break;
        case 'p':
            plan = optarg;
            break;
        case 'h':
            help();
            return 0;
        default:
            return cli_usage("exec", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (plan && optind < argc)
        return cli_usage("exec", "unexpected argument '%s' (--plan gave the plan)", argv[optind]);
    if (!plan && optind != argc - 1)
        return cli_usage("exec", "want exactly one plan file");
    if (!plan)
        plan = argv[optind];
    if (!backend)
        return cli_usage("exec", "--backend cpu|cuda is required");
    if (strcmp(backend, "cpu") && strcmp(backend, "cuda"))
        return cli_usage("exec", "--backend '%s': want cpu or cuda", backend);
    if (threads && strcmp(backend, "cuda"))
        return cli_usage("exec", "--threads is for --backend cuda (the cpu backend needs MPI)");
#ifndef SC_HAVE_MPI
    threads = !strcmp(backend, "cuda"); /* the only way to run it without MPI */
#endif

    /* the output must be creatable before any step runs (rank 0 writes it) */
    sc_error oerr = {0};
    if (cli_launcher_rank() == 0 && cli_output_take("exec", &out, 0, &oerr))
        return cli_fail(&oerr);
    if (max_steps == 0)
        max_steps = 5 * steps;
    if (max_steps < steps)
        return cli_usage("exec", "--max-steps %ld is below --steps %ld", max_steps, steps);
    sc_exec_opts o = {.backend = backend, .steps = (int)steps, .tolerance = tolerance,
                      .max_steps = (int)max_steps, .warmup = (int)warmup, .timeout_s = timeout,
                      .verify = verify, .probe = (int)probe, .kernels = kernels,
                      .zero_operands = zeros};
    if (threads && sc_backend_cuda.available)
        return exec_threads(plan, &o, out);
    rank_result r;
    memset(&r, 0, sizeof r);
    one_rank(plan, &o, out, NULL, -1, &r);
    if (r.setup) {
        /* setup errors are the same on every rank: rank 0 (or a lone
         * process) reports them */
        if (r.rank <= 0)
            fprintf(stderr, "stagecraft exec: %s\n", r.err.msg);
        return cli_exit_code(r.st);
    }
    if (r.st)
        return cli_exit_code(r.st);
    if (r.rank == 0)
        print_summary(plan, out, &r.sum, "");
    return 0;
}
