/* main.c - `stagecraft`: dispatch to a command. */
#include "cli.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"model", "generate, show and list model descriptions", cmd_model},
    {"cluster", "list and show cluster descriptions and presets", cmd_cluster},
    {"cost", "per-module compute, communication and memory costs", cmd_cost},
    {"trace", "a timeline as Chrome trace JSON (Perfetto, chrome://tracing)", cmd_trace},
    {"plot", "draw a timeline as a Gantt chart (gnuplot)", cmd_plot},
    {"exec", "run a plan on real devices (mpirun) and measure it", cmd_exec},
    {"sim", "simulate one training step of a parallel configuration", cmd_sim},
    {"plan", "search for the best parallel configuration", cmd_plan},
    {"calibrate", "fit a cluster's efficiency parameters to measurements", cmd_calibrate},
    {"compare", "a plan's prediction beside its measurement", cmd_compare},
    {"export", "a plan as a training framework's launch and config (Megatron-LM, DeepSpeed, torch)",
     cmd_export},
    {"tune", "sweep the microbatch count of one layout", cmd_tune},
    {"whatif", "best plan per node count and cluster: days and dollars, on demand and spot", cmd_whatif},
    {"repro", "reproduce a claim: seed38 (pipeline vs tensor parallelism, the 38%)", cmd_repro},
    {"validate", "published end-to-end runs through the simulator: predicted against measured",
     cmd_validate},
    {"bench", "microbenchmarks: gemm, p2p, allreduce, allgather, reducescatter", cmd_bench},
    {"version", "version and the optional parts this build has", cmd_version},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: stagecraft COMMAND [ARGS]   (stagecraft COMMAND --help for more)\n\n"
               "stagecraft plans, simulates and runs distributed training of large models.\n\n"
               "commands:\n");
    for (size_t i = 0; i < SC_ARRAY_LEN(commands); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

/* Whatever the command printed must have reached standard output: a full
 * disk or /dev/full fails in the last fflush (or earlier, leaving the error
 * flag). Reports "stagecraft: stdout: write error: REASON" and turns a
 * success into CLI_EXIT_IO; a command's own failure keeps its status. A
 * closed stdout (>&-) that nothing was written to is no error (as GNU
 * coreutils' close_stdout). */
static int close_stdout(int rc)
{
    int pending = __fpending(stdout) > 0, bad = ferror(stdout), e = 0;
    errno = 0;
    if (fflush(stdout) != 0) {
        bad = 1;
        e = errno;
    }
    errno = 0;
    if (fclose(stdout) != 0 && (bad || pending || errno != EBADF)) {
        bad = 1;
        if (!e)
            e = errno;
    }
    if (!bad)
        return rc;
    fprintf(stderr, "stagecraft: stdout: write error: %s\n",
            e ? strerror(e) : "an earlier write failed");
    return rc ? rc : CLI_EXIT_IO;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < SC_ARRAY_LEN(commands); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    const char *names[SC_ARRAY_LEN(commands)];
    for (size_t i = 0; i < SC_ARRAY_LEN(commands); i++)
        names[i] = commands[i].name;
    char mean[96];
    fprintf(stderr, "stagecraft: unknown command '%s'%s\n", argv[1],
            sc_did_you_mean(argv[1], names, (int)SC_ARRAY_LEN(commands), "", mean, sizeof mean));
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    /* The planner simulates dozens of candidates one after another (two per
     * thread), each allocating and freeing a few tens of MB of tasks and
     * events. glibc would hand blocks that large back to the kernel at every
     * free and fault them in again for the next candidate (a fifth of plan's
     * time for gpt-175b on 1024 GPUs); keeping them in the heap costs no
     * more memory than the largest candidate already took. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    int rc = close_stdout(run(argc, argv));
    /* Exit status 1 is an internal failure, out of memory among them. Under
     * a memory limit (ulimit -v) an OpenBLAS worker thread can be left
     * retrying its buffer's allocation forever, and OpenBLAS's destructor
     * joins it at exit: the command reported its error and then hung.
     * Nothing of ours runs at exit (no atexit handlers; outputs are renamed
     * or removed before returning), so a failed command leaves at once. */
    if (rc == 1) {
        fflush(stderr);
        _exit(rc);
    }
    return rc;
}
