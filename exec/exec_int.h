/* exec_int.h - what only exec/'s own files share: the return-on-error
 * macros that record where and why a CUDA, NCCL or MPI call failed.
 *
 * Each macro evaluates the call once; on failure it fills `err` (an
 * sc_error * in scope) with "BACKEND: rank R: CALL (FILE:LINE): REASON"
 * and returns the status from the enclosing function, which must return
 * sc_status. `bk_rank_` must be an int in scope (the rank, -1 if unknown).
 * (After nccl-tests' NCCLCHECK.)
 */
#ifndef SC_EXEC_INT_H
#define SC_EXEC_INT_H

#include "backend.h"
#include "sc.h"

#ifdef SC_HAVE_MPI
#include <mpi.h>
/* The reason of an MPI error code, into a static-free buffer. */
static inline const char *sc_mpi_reason(int rc, char *buf)
{
    int len = 0;
    if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS)
        return "unknown MPI error";
    buf[len] = 0;
    return buf;
}
/* Polls one MPI request until done or deadline ("timed out", SC_EIO). */
sc_status sc_mpi_wait(int me, MPI_Request *q, double deadline, sc_error *err);
/* Cristian's clock offset over MPI_COMM_WORLD (see backend.h clock_offset). */
sc_status sc_mpi_clock_offset(int me, int peer, int rounds, double deadline, double *offset,
                              sc_error *err);
#define MPI_TRY(call)                                                                  \
    do {                                                                               \
        int rc_ = (call);                                                              \
        if (rc_ != MPI_SUCCESS) {                                                      \
            char b_[MPI_MAX_ERROR_STRING + 1];                                         \
            return sc_err(err, SC_EMPI, "mpi: rank %d: %s (%s:%d): %s", bk_rank_, #call, \
                          __FILE__, __LINE__, sc_mpi_reason(rc_, b_));                 \
        }                                                                              \
    } while (0)
#endif

/* Seconds of CLOCK_MONOTONIC. */
double sc_exec_clock(void);
/* Lets other ranks run between polls of a busy wait (sched_yield, then a
 * short sleep after many polls: ranks may share cores). */
void sc_exec_relax(long *polls);

#endif
