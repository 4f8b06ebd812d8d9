/* team.h - an in-process team of N threads standing in for MPI's host-side
 * collectives where MPI is absent: the CUDA backend built without MPI runs
 * one thread per GPU in one process, and their barrier, gather, broadcast
 * and clock offset (backend.h's host helpers) go through a team.
 *
 *     sc_team *t;
 *     if (sc_team_new(4, &t, &err)) ...;
 *     sc_team_run(t, fn, arg, &err);      // 4 threads: fn(t, rank, arg), joined
 *     sc_team_free(t);
 *
 * Inside fn every call names the calling thread's rank (0..n-1), and every
 * rank makes the same calls in the same order (as with MPI collectives).
 * A thread started by sc_team_run is bound to (t, rank): sc_team_bound()
 * returns them to code that cannot be handed the team (the backend's init).
 *
 * Waiting: nothing blocks without a deadline (seconds of CLOCK_MONOTONIC,
 * sc_exec_clock()); waits are pthread_cond_timedwait on a CLOCK_MONOTONIC
 * condition variable. A barrier that some rank never reaches returns
 * SC_EIO, with a message starting "timed out" and naming the missing ranks,
 * on every rank that reached it; that rank withdraws, so the barrier stays
 * consistent. A gather or broadcast that times out after data was exchanged
 * breaks the team (every later call fails at once). sc_team_fail(t, rank,
 * why) marks a rank failed: every current and later wait of the other ranks
 * returns at once with SC_EMPI (the team stands in for MPI; SC_EIO is kept
 * for "timed out", which the executor rewords) and the message
 * "team: rank R: gave up: rank Q failed: WHY".
 *
 * Data: gather and broadcast copy through per-rank buffers the team owns,
 * under its mutex, so no thread ever reads another thread's memory and a
 * rank that gave up may free its buffers at once.
 *
 * Clock: all threads of a process read one CLOCK_MONOTONIC, so the clock
 * offset between any two ranks is 0 (sc_team_clock_offset says so without
 * exchanging anything).
 *
 * Ownership: sc_team_new returns a team freed by sc_team_free (NULL ok),
 * which must not be called while a thread is inside a team call.
 * Thread safety: every function is safe to call from the team's threads
 * concurrently, each with its own rank.
 */
#ifndef SC_TEAM_H
#define SC_TEAM_H

#include <stddef.h>
#include "sc.h"

typedef struct sc_team sc_team;

/* 1 <= n <= 4096. */
sc_status sc_team_new(int n, sc_team **out, sc_error *err);
void sc_team_free(sc_team *t);
int sc_team_size(const sc_team *t);

/* Every rank calls it; returns when all n have arrived (SC_OK), at the
 * deadline (SC_EIO, "timed out: team barrier K: waiting for rank 3 (3 of 4
 * arrived)"), or when a peer failed (SC_EINVAL). */
sc_status sc_team_barrier(sc_team *t, int rank, double deadline, sc_error *err);
/* Every rank gives len bytes (the same len on every rank); root receives
 * n·len bytes in rank order into recv (ignored elsewhere). */
sc_status sc_team_gather(sc_team *t, int rank, const void *send, size_t len, void *recv,
                         int root, double deadline, sc_error *err);
/* len bytes of buf from root to every rank. */
sc_status sc_team_bcast(sc_team *t, int rank, void *buf, size_t len, int root,
                        double deadline, sc_error *err);
/* *offset = clock(peer) - clock(rank) = 0: one CLOCK_MONOTONIC per process. */
sc_status sc_team_clock_offset(sc_team *t, int rank, int peer, double *offset, sc_error *err);
/* Marks rank failed (why: one line, may be NULL): every wait of the other
 * ranks returns at once with "gave up: rank R failed: WHY". The first
 * failure is kept. */
void sc_team_fail(sc_team *t, int rank, const char *why);
/* 1 if some rank failed or the team broke. */
int sc_team_broken(const sc_team *t);

/* Runs fn(t, rank, arg) on n new threads (each bound to (t, rank), see
 * sc_team_bound) and joins them all. Fails (SC_ENOMEM) only if a thread
 * cannot be started: the ones already started see the team failed and are
 * joined. What each thread reports is fn's business (through arg). */
typedef void (*sc_team_fn)(sc_team *t, int rank, void *arg);
sc_status sc_team_run(sc_team *t, sc_team_fn fn, void *arg, sc_error *err);

/* The team and rank the calling thread is bound to (thread-local), or NULL
 * (*rank = -1). sc_team_bind(NULL, -1) unbinds. */
void sc_team_bind(sc_team *t, int rank);
sc_team *sc_team_bound(int *rank);

#endif
