/* exec.h - the executor: runs a plan's training step on real devices, one
 * MPI rank per device, and measures it (stagecraft.timeline/1, source
 * "exec", with the simulator's op identities so the two compare op for op).
 *
 * What each rank runs (exec.c): its pipeline position's list of the lowered
 * step (sim/lower.h: sc_lower), action by action, in order. lower.h holds
 * every rule of what runs after what; the simulator translates the same
 * list into engine tasks, so the two compare op for op by construction.
 * Each action becomes backend calls:
 *   - COMPUTE F: the stage's leaves as real GEMMs with the modules' dims
 *     (attention: QKV, per-head scores and values, output projection; MLP:
 *     up and down; head: the vocabulary projection; tp-shardable modules
 *     split heads, ffn and vocab by tp) and memory-bound passes (norms,
 *     embedding lookups, anything without FLOPs) over mbs samples; B: the
 *     input-gradient GEMMs (and the weight-gradient GEMMs unless the
 *     schedule splits the backward, zb-h1, where W runs them); RECOMPUTE:
 *     the forward again (full) or the attention scores and values
 *     (selective); a compute op cut into bucket pieces runs its share of
 *     the GEMMs per piece and is one timeline op; OPTIMIZER: after a compute
 *     wait on the reductions it depends on, one memory-bound pass over the
 *     rank's weights, grads and Adam states;
 *   - RECV: a nonblocking receive, then the compute stream waits for it;
 *     SEND: nonblocking, waited at the end of the step; messages are filled
 *     with a pattern of (step, direction, sending stage, mb) and checked by
 *     checksum on receipt (warm-up steps and the first measured step);
 *   - TP, GATHER, REDUCE, TIED, PARAMS: nonblocking collectives on the tp,
 *     dp or tie communicator (allreduce, reduce-scatter or allgather of the
 *     action's whole buffer); the compute stream waits at once for those the
 *     action marks `waits`.
 * Sizes are the modelled bytes; the CPU backend computes in fp32 whatever
 * the plan's dtype (GEMM buffers hold fp32; communication moves the
 * modelled byte counts).
 *
 * Measurement: W warm-up steps, then measured steps, each started by a
 * barrier. Rank 0 aligns every rank's clock (Cristian's algorithm, least
 * round trip of 8 ping-pongs); step time = latest op end - earliest step
 * start over ranks. Until stable: with a tolerance, steps go on until the
 * median of the last N (steps) moved at most the tolerance from the median
 * of the N before them (judged after every step from the 2N-th), or
 * max_steps; without one, N steps. The figures (median, min, max, spread =
 * relative interquartile range) are over the last N, the timeline is their
 * median step's ops, and the file records runs, spread, drift, tolerance
 * and whether it settled (timeline.h "steps"). A run that never settled is
 * written all the same, saying so: calibration's drift gate refuses it.
 *
 * Faults: every wait polls with a deadline of timeout_s; on timeout the
 * error reads "rank R: timed out after S s waiting for OP (stage s, mb m)
 * from rank Q" and sc_exec_run returns SC_EIO with *must_abort set: the
 * caller prints it and calls sc_exec_abort. Test hook: the environment
 * variable SC_EXEC_FAULT=RANK:STEP[:kill|hang] makes that rank raise
 * SIGKILL (kill, the default) or sleep forever (hang) just before the first
 * compute op of step STEP (counting warm-up steps from 0).
 *
 * Ownership: sc_exec_open returns a handle freed by sc_exec_close (NULL
 * ok), which also finalizes MPI when it started it.
 */
#ifndef SC_EXEC_H
#define SC_EXEC_H

#include "bench.h"
#include "sc.h"

typedef struct sc_exec sc_exec;

typedef struct sc_exec_opts {
    const char *backend;   /* "cpu" or "cuda" */
    int steps;             /* measured steps kept (the window), >= 1 */
    double tolerance;      /* > 0: run until the median of the last `steps` moves at most
                              this (relative) from the median of the `steps` before them */
    int max_steps;         /* at most this many measured steps (>= steps) */
    int warmup;            /* warm-up steps, >= 0 */
    double timeout_s;      /* per wait, > 0 */
    int verify;            /* 1: check received activations by checksum */
    int probe;             /* the speed probe's GEMM size (m = n = k; 0: none; < 0: the
                              backend's default, SC_EXEC_PROBE_CPU or _CUDA) */
    int kernels;           /* 1: after the steps, rank 0 times each kernel of its stage
                              alone (SC_EXEC_KERNEL_REPS runs, the median) and the
                              timeline carries them ("kernels": timeline.h sc_tl_kernel) */
    int zero_operands;     /* 1: the GEMMs multiply zeros (a comparison: a GPU draws less
                              power on them and can hold a clock it would not in training);
                              0: uniform random operands, as training's (SC_EXEC_OPERANDS) */
    int *argc;             /* for MPI_Init (may be NULL) */
    char ***argv;
} sc_exec_opts;

/* The speed probe (timeline.h "probe"): before every step (warm-up steps
 * too, so that every step starts alike), outside its time, every rank at
 * once runs one square GEMM of the compute dtype once untimed and
 * SC_EXEC_PROBE_REPS times timed; each rank's figure is the median over
 * the measured steps the timeline's figures are over of each step's
 * median. Held against a gemm bench of the same size by calibrate's probe
 * gate, it shows a run whose ranks got less of their devices than a lone
 * benchmark did: on a 2-vCPU cloud guest the host slowed both vCPUs 1.6-2x
 * in phases of seconds to minutes, and two ranks' GEMMs ran that much
 * slower than the bench's while every other gate passed
 * (docs/accuracy.md). Per step, not once before and after: a phase
 * shorter than the run that happened to cover a single probe refused a
 * run whose ops were at full speed. The defaults are sizes of bench gemm's
 * default sweeps (CPU: 4 x 1 ms a step on this project's guests). */
#define SC_EXEC_PROBE_CPU 256
#define SC_EXEC_PROBE_CUDA 4096
#define SC_EXEC_PROBE_REPS 3
/* The kernel profile (exec --kernels): after the measured steps, rank 0
 * runs one microbatch of each of its chunks (with token slices, the first
 * slice's), forward and backward as the schedule splits it, SC_EXEC_KERNEL_REPS
 * times after one untimed run, with an event between every two kernels
 * queued back to back (so a kernel's time is from the end of the one before
 * it: its launch gap included where the host falls behind; the first
 * kernel, on an asynchronous backend, is queued behind an untimed call of
 * itself, not launched from an idle stream), and keeps each
 * kernel's median. Kernels of the same name, pass and shape are pooled:
 * their calls counted, the time the mean of their medians. */
#define SC_EXEC_KERNEL_REPS 3
/* The GEMMs' operands: three buffers filled once with uniform random
 * values in [-1, 1) (the activation, the weight and the incoming
 * gradient), never written, and one buffer every product writes. Not
 * zeros: a GPU's power, and so its clock under a power cap, depends on the
 * bits its multipliers toggle; a run on zeros may hold a clock training
 * would not. Not outputs fed back as inputs: their values would grow
 * without bound to infinities. The timeline records which ("operands"). */

typedef struct sc_exec_summary {
    int ranks, steps;      /* steps: the window the figures are over */
    int kernels;           /* kernels timed alone (--kernels; 0: none) */
    int runs;              /* measured steps run in all */
    double median_s, min_s, max_s;
    double spread;         /* (q3 - q1) / median of the window (sc_spread) */
    double drift;          /* its median against the window before it (-1: not judged) */
    double tolerance;      /* as asked (0: no repetition) */
    int stable;            /* drift <= tolerance; -1 not judged */
    long ops_per_step;     /* all ranks together */
    long checked;          /* messages verified by checksum on this rank */
    char device[96];
    char dtype[8];         /* what GEMMs ran in */
    int probe;             /* the probe's size (0: none) */
    double probe_s;        /* rank 0: the slowest rank's probe (its median) */
    double probe_fast_s;   /* and the fastest's */
    int probe_rank;        /* the slowest rank */
} sc_exec_summary;

/* Appends to out[0..*n) (at most cap) the GEMM shapes (m, n, k) the
 * executor runs for plan_file that are not there yet: every pipeline
 * position's, forward (m, n, k) and backward (the data gradient (m, k, n)
 * and the weight gradient (k, n, m)), in order of first use; a batched GEMM
 * is the one call it repeats. More than cap is SC_EINVAL. Needs no backend
 * and no MPI: `bench gemm --plan` times exactly these. Errors as
 * sc_exec_open's loading of the plan. */
sc_status sc_exec_plan_gemms(const char *plan_file, sc_bench_point *out, int cap, int *n,
                             sc_error *err);

/* Starts the backend (MPI_Init for both backends), loads and opens the plan
 * and checks the world size equals dp·tp·pp. On error *out is NULL unless
 * the backend started, in which case *out is a handle to close (so MPI is
 * finalized) and sc_exec_rank tells which rank failed. */
sc_status sc_exec_open(const char *plan_file, const sc_exec_opts *o, sc_exec **out,
                       sc_error *err);
int sc_exec_rank(const sc_exec *x);   /* -1 before the backend started */
/* Runs warm-up and measured steps; on rank 0 writes the measured timeline
 * to out_file (whole or not at all; NULL: none). On failure *must_abort
 * says the other ranks may be stuck (call sc_exec_abort after printing). */
sc_status sc_exec_run(sc_exec *x, const char *out_file, sc_exec_summary *sum,
                      int *must_abort, sc_error *err);
/* MPI_Abort with code; never returns. */
void sc_exec_abort(sc_exec *x, int code);
void sc_exec_close(sc_exec *x);

#endif
