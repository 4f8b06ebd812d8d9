/* engine.h - the discrete-event engine: tasks on resources and flows on links.
 *
 * The engine knows nothing about GPUs or models. It holds
 *   - resources that run one task at a time (a compute stream, a comm stream);
 *   - links with a bandwidth (bytes/s) and a latency (s), shared by the flows
 *     crossing them with max-min fairness;
 *   - tasks: COMPUTE (a fixed duration, on a resource or on none), FLOW (N
 *     bytes over a path of up to SC_SIM_MAX_PATH links, optionally holding a
 *     resource while it runs) and MARKER (zero duration, no resource);
 *   - dependencies "task B starts after task A ends", any number per task.
 *
 * Rules (the contract a step builder relies on):
 *   - A task starts at the earliest time at which all its dependencies have
 *     ended AND, if it is on a resource, the task submitted to that resource
 *     just before it has ended. Tasks on one resource therefore run in the
 *     order they were submitted (added), never reordered by readiness: the
 *     schedule gives the per-rank op order and the engine replays exactly it.
 *     (Resource order is an implicit dependency on the previous task there.)
 *   - A FLOW starts (and takes its resource) when ready, waits the sum of the
 *     latencies of the links on its path once, then moves its bytes at the
 *     max-min fair rate of its path, recomputed whenever a flow starts moving
 *     or finishes. Rates are recomputed once per distinct event time and only
 *     for the connected component (flows sharing links, transitively) that
 *     changed: O((L_c + F_c*P) log L_c) per recompute for a component of L_c
 *     links and F_c flows of path length <= P (a heap of link shares); the
 *     worst case (everything in one component) is O((L + F*P) log L),
 *     within the O(F*L) of the textbook version.
 *     (Progressive filling: Bertsekas & Gallager, Data Networks, 6.5.2.)
 *   - Events are ordered by (time, insertion sequence), so a run is
 *     deterministic: the same calls give bit-identical results.
 *   - A dependency cycle, or a cycle made with resource order, is reported by
 *     sc_sim_run as SC_EINVAL "deadlock: ..." naming a stuck task and the
 *     cycle it is in; the run never hangs.
 *
 * Ownership and errors: sc_sim_new creates the handle, sc_sim_free(NULL) does
 * nothing; the handle owns every array and copies names. The add functions
 * return an id >= 0 (0, 1, 2, ... per kind, in the order added) or -1; the
 * first failure (bad argument or out of memory) is kept in the handle, every
 * later add returns -1, and sc_sim_run / sc_sim_status report it. This lets a
 * builder add thousands of tasks and check once.
 *
 * Cost: adds are amortised O(1) (arrays grow by doubling; no per-event
 * allocation). A run is O(T + E + G log Q) for T tasks, E dependencies, Q
 * groups of equal-time events in flight and G such groups in all (at most
 * one per event: O((T + E) log Q) when no two events share a time), plus the
 * flow recomputes above: the event queue keeps the events of one time in one
 * FIFO (engine_queue.c), and a step's replicas finish in lockstep. sc_sim_run may be called
 * again after more adds; it recomputes everything from time 0.
 */
#ifndef SC_ENGINE_H
#define SC_ENGINE_H

#include "sc.h"

#include <stdint.h>

typedef struct sc_sim sc_sim;

#define SC_SIM_MAX_PATH 8

typedef enum sc_sim_task_type {
    SC_SIM_COMPUTE = 0,
    SC_SIM_FLOW = 1,
    SC_SIM_MARKER = 2
} sc_sim_task_type;

/* Caller data carried by a task, returned untouched after the run. The step
 * builder uses e.g. kind = op kind, a = rank, b = stage, c = chunk,
 * d = microbatch; user is never dereferenced. */
typedef struct sc_sim_tag {
    int kind;
    int a, b, c, d;
    void *user;
} sc_sim_tag;

/* Creates an empty simulation. SC_ENOMEM on failure (*out = NULL). */
sc_status sc_sim_new(sc_sim **out, sc_error *err);
void sc_sim_free(sc_sim *s);

/* Optional capacity hint (no effect on results). */
void sc_sim_reserve(sc_sim *s, int ntasks, int ndeps);

/* A resource that runs one task at a time. name may be NULL. */
int sc_sim_add_resource(sc_sim *s, const char *name);
/* A link: bandwidth > 0 bytes/s, latency >= 0 s. name may be NULL. */
int sc_sim_add_link(sc_sim *s, const char *name, double bandwidth, double latency);

/* A task of fixed duration >= 0 on resource (or -1: on no resource, a pure
 * delay). tag may be NULL (all zero). */
int sc_sim_add_compute(sc_sim *s, int resource, double duration, const sc_sim_tag *tag);
/* A flow of bytes >= 0 over links[0..nlinks-1] (1 <= nlinks <= SC_SIM_MAX_PATH,
 * no link twice), holding resource (or -1) from start to end. */
int sc_sim_add_flow(sc_sim *s, double bytes, const int *links, int nlinks, int resource,
                    const sc_sim_tag *tag);
/* The latency flow task `task` pays before it moves (its links' latencies
 * summed) is multiplied by scale >= 0 (a message whose measured size factor
 * speeds or slows its whole time, cluster.h sc_size_curve). Returns 0 or -1. */
int sc_sim_scale_flow_latency(sc_sim *s, int task, double scale);
/* A zero-duration task on no resource (a barrier / join point). */
int sc_sim_add_marker(sc_sim *s, const sc_sim_tag *tag);
/* Task `after` starts only once task `before` has ended. Returns 0 or -1. */
int sc_sim_add_dep(sc_sim *s, int before, int after);

/* Contention: while at least one span on `resource` is open, a COMPUTE task
 * running there progresses at 1 / (1 + factor) of its rate (a task wholly
 * inside takes duration x (1 + factor); one partly inside, its share of
 * each). A span is open from the end of task `open` to the end of task
 * `close` (a close that ends first keeps it from ever opening); spans that
 * open or close at the same time as a task starts count for it. The step
 * builder opens one per collective on each member's compute stream: NCCL's
 * kernels share the GPU with the compute kernels. factor >= 0 (0: none,
 * the default). Returns 0 / the span's id, or -1 (sticky error). Cost:
 * O(S log S) a run for S spans, O(log S) at each task that opens or closes
 * one, and a dropped END event at each change of rate. */
int sc_sim_set_slowdown(sc_sim *s, int resource, double factor);
int sc_sim_add_span(sc_sim *s, int open, int close, int resource);

/* The sticky error of the adds (SC_OK if none). */
sc_status sc_sim_status(const sc_sim *s, sc_error *err);

/* Runs the simulation from time 0. SC_EINVAL on deadlock or an earlier bad
 * add, SC_ENOMEM on allocation failure; results are valid only after SC_OK. */
sc_status sc_sim_run(sc_sim *s, sc_error *err);

/* ---- results (valid after a successful run) ----------------------------- */
int sc_sim_task_count(const sc_sim *s);
int sc_sim_resource_count(const sc_sim *s);
int sc_sim_link_count(const sc_sim *s);
sc_sim_task_type sc_sim_task_type_of(const sc_sim *s, int task);
const sc_sim_tag *sc_sim_task_tag(const sc_sim *s, int task);
int sc_sim_task_resource(const sc_sim *s, int task); /* -1 if none */
double sc_sim_task_start(const sc_sim *s, int task);
double sc_sim_task_end(const sc_sim *s, int task);
/* Sum of the durations of the tasks run on the resource. */
double sc_sim_resource_busy(const sc_sim *s, int resource);
const char *sc_sim_resource_name(const sc_sim *s, int resource);
/* Bytes carried (sum of finished flows crossing it) and time during which at
 * least one flow was moving bytes on it (latency phases excluded). */
double sc_sim_link_bytes(const sc_sim *s, int link);
double sc_sim_link_busy(const sc_sim *s, int link);
const char *sc_sim_link_name(const sc_sim *s, int link);
/* Largest task end time (0 with no tasks). */
double sc_sim_makespan(const sc_sim *s);
/* Events popped and acted on (task ends, flow starts/ends; stale flow and
 * slowed-task completion predictions superseded by a rate change are not
 * counted). */
long long sc_sim_event_count(const sc_sim *s);

#endif
