/* provenance.h - what a measurement ran on: the host's CPU, the BLAS library
 * and the kernel it picked, its threads, the environment variables that
 * steer it, the MPI library, and on GPUs the CUDA device, driver and
 * runtime. Bench files (bench_file.h) and measured timelines (timeline.h)
 * carry it as one optional "provenance" object, so that calibration can
 * refuse to fit one set of parameters to measurements of different
 * hardware or kernels (a GEMM bench of one OpenBLAS kernel beside a plan
 * run by another measures two machines).
 *
 * JSON (every key optional; absent = not recorded):
 *   "provenance": { "cpu": "Intel(R) Xeon(R) ...",      (/proc/cpuinfo)
 *                   "blas": "OpenBLAS 0.3.21 ... SkylakeX MAX_THREADS=64",
 *                   "blas_core": "SkylakeX",            (the kernel in use)
 *                   "blas_threads": 1,
 *                   "mpi": "Open MPI v4.1.4", "nccl": "NCCL 2.21.5",
 *                   "cuda_device": "NVIDIA H200 (sm_90, 132 SMs)",
 *                   "cuda_driver": "12.4", "cuda_runtime": "12.4",
 *                   "env": ["OPENBLAS_CORETYPE=Haswell", ...],
 *                   "mixed": "rank 3: blas_core \"Haswell\", rank 0 \"SkylakeX\"" }
 * env holds the variables of SC_PROVENANCE_ENV that were set, in that order.
 * mixed is written when the ranks of one run did not all record the same
 * hardware and kernels (sc_provenance_conflict against rank 0's): the run
 * itself mixes machines.
 *
 * Ownership: plain value struct, copy with `=`. Errors of the reader name
 * the file and the JSON path ("b.json: provenance.blas_threads: ...").
 */
#ifndef SC_PROVENANCE_H
#define SC_PROVENANCE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include "sc.h"

#define SC_PROVENANCE_ENV_MAX 16

/* The environment variables recorded, when set: the ones that choose the
 * BLAS kernel or its threads, and the ones that choose GPUs and NCCL's
 * algorithms. */
#define SC_PROVENANCE_ENV                                                                   \
    {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS",   \
     "OPENBLAS_VERBOSE", "CUDA_VISIBLE_DEVICES", "NCCL_ALGO", "NCCL_PROTO",                \
     "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET"}

typedef struct sc_provenance {
    int present;            /* 0: none recorded (an older file) */
    char cpu[128];
    char blas[192];
    char blas_core[64];
    int blas_threads;       /* 0 = not recorded */
    char mpi[128];
    char nccl[32];
    char cuda_device[128];
    char cuda_driver[32];
    char cuda_runtime[32];
    int n_env;
    char env[SC_PROVENANCE_ENV_MAX][128]; /* "NAME=value" */
    char mixed[256];        /* "" = every rank recorded the same */
} sc_provenance;

/* Adds "provenance" to obj when p->present; sets *oom on allocation failure. */
void sc_provenance_to_json(const sc_provenance *p, cJSON *obj, int *oom);
/* Reads obj's optional "provenance" into *p (present = 0 when absent). */
sc_status sc_provenance_from_json(const cJSON *obj, const char *file, sc_provenance *p,
                                  sc_error *err);
/* 1 when a and b record different hardware or kernels: a field both record
 * differs among cpu, blas, blas_core, blas_threads, mpi, nccl and cuda_device
 * (driver, runtime and env are kept for the record; the kernel the
 * environment chose shows in blas_core). Fills why (cap bytes) with
 * "blas_core \"Haswell\" against \"SkylakeX\"". 0 when either is absent. */
int sc_provenance_conflict(const sc_provenance *a, const sc_provenance *b, char *why,
                           size_t cap);

#endif
