/* lower.h - one training step, lowered once: for each pipeline position the
 * ordered list of actions its ranks run, with their dependencies. It is the
 * single source of what runs after what. The simulator translates the list
 * into engine tasks (step.c), the executor interprets it as backend calls
 * (exec/exec.c), and calibration walks it to match measured ops, so the
 * three compare op for op by construction.
 *
 * Every replica (dp) and every tp rank of a position runs the same list:
 * the tp ranks of a position do identical work on their shards, and data
 * parallel replicas are symmetric. Only the peers differ, and those follow
 * from the placement (sc_step_rank).
 *
 * The rules, per schedule op of the position (sc_sched_generate's order):
 *   RECV_F / RECV_B -> RECV: the compute stream waits for the message.
 *   SEND_F / SEND_B -> SEND after the action that produced it (the last
 *     action of the op before it: its tp allreduce when tp > 1); never
 *     blocks the sender.
 *   F  -> [GATHER] COMPUTE(F) [TP]
 *   B  -> [GATHER] [COMPUTE(RECOMPUTE) [TP if full recompute]]
 *         COMPUTE(B) piece 0 [REDUCE 0] ... piece K-1 [REDUCE K-1] [TP]
 *   W  -> COMPUTE(W) pieces with their REDUCEs as B's (zb-h1 only)
 *   - GATHER (ZeRO 3, dp > 1): allgather of the stage's parameters; may
 *     start once the previous compute op has started (prefetch); the stream
 *     waits for it before the op's first compute. The position's first is
 *     two (FSDP gathers unit by unit): its first unit (sc_stage_info
 *     unit_bytes), which the stream waits for, then the rest, which it does
 *     not: the next op's gather follows it on the communicator.
 *   - CP (cp > 1, the stage's attention has keys and values: cp_bytes):
 *     after F's, B's and RECOMPUTE's compute, the keys and values passed
 *     around the cp group beside it (Transformer Engine's ring: each rank
 *     sends its chunk on cp - 1 times while its kernels run on the chunks
 *     received), as a ring of an all-gather's volume: bytes = cp ·
 *     cp_bytes forward and in recompute, twice that backward (the keys and
 *     values again, and their gradients back). It starts with the compute
 *     (after the stream action before it) and the stream waits for it.
 *   - TP (tp > 1 and the stage has tp bytes): ring allreduce after the
 *     compute before it; the stream waits for it. Under sequence
 *     parallelism (cfg.sp) two TPs: a reduce-scatter, then an all-gather of
 *     the same bytes (Korthikanti et al. 2022 sec. 4.2.2).
 *   - The gradients of a chunk are final after the last op that computes
 *     them (the last W under zb-h1, else the last B): that op is cut into K
 *     = sc_stage_info.buckets pieces and bucket k is reduced (allreduce
 *     under ZeRO 0, else reduce-scatter) after piece k (PyTorch DDP's
 *     overlap). Under ZeRO 2 and 3 every other B (W) is cut and
 *     reduce-scattered the same way: each rank keeps only its shard of the
 *     gradients, so FSDP and DeepSpeed reduce-scatter each microbatch's
 *     gradients during its backward (DeepSpeed #2252: "gradient reduction is
 *     required after every backward because of gradient partitioning"), not
 *     once per step and not whole after it (in the next forward's window).
 *     Reductions of one communicator run in
 *     order; the stream never waits for them until the optimizer.
 *     With cfg.no_overlap_grad_reduce (the plan's overlap_grad_reduce false,
 *     Megatron-LM without --overlap-grad-reduce) the grad-final op runs whole
 *     and every chunk's K buckets follow the position's list, after its last
 *     grad-final action: the reduction is exposed. ZeRO 2's and 3's
 *     per-microbatch reduce-scatters are unchanged.
 * Then, once per step:
 *   - TIED: a tied group (sc_model.groups) whose members sit on several
 *     positions allreduces its gradients among them after each position's
 *     grad-final op of the member chunk (Megatron-LM's embedding
 *     allreduce);
 *   - COMPUTE(OPTIMIZER): after every REDUCE and TIED of the position;
 *   - PARAMS (ZeRO 1, 2, dp > 1): allgather of the updated parameters; the
 *     stream waits for it. With cfg.overlap_param_gather none: the gathers
 *     move to the step's start instead, as GATHERs from -1 on one
 *     communicator in order, each waited for by an op: chunk 0's first unit
 *     by the position's first op, chunk 0's rest by its second, and under
 *     the interleaved schedule each later chunk's parameters by that chunk's
 *     first forward (Megatron-Core's param_sync_func). Not under PyTorch
 *     FSDP's ZeRO 2 (the cluster's framework torch, sc_lower_fsdp_zero2),
 *     which instead gathers before every F as ZeRO 3 does (GATHER above),
 *     and not before B.
 *
 * Ownership: sc_lower returns a lowered step freed with sc_lower_free (NULL
 * ok); its arrays are read-only to callers. Cost: O(pp·m·v·(K + ops)) time
 * and memory.
 */
#ifndef SC_LOWER_H
#define SC_LOWER_H

#include "cost.h"
#include "model.h"
#include "schedule.h"
#include "sc.h"
#include "step.h"

#include <stdint.h>
#include <stdio.h>

typedef enum sc_act_kind {
    SC_ACT_COMPUTE = 0, /* op F, B, W, RECOMPUTE or OPTIMIZER; piece of pieces (a W
                           with mb -1: the output layer's weight gradients deferred to
                           the flush, sc_step_cfg defer_embedding_wgrad; its own
                           sched_op, the position's schedule op count) */
    SC_ACT_TP,          /* tp collective (coll) of `bytes` after action `after` */
    SC_ACT_GATHER,      /* ZeRO-3 allgather of `bytes` (whole); prefetch from `after` */
    SC_ACT_REDUCE,      /* dp gradient bucket of `bytes` after action `after` */
    SC_ACT_SEND,        /* message of `bytes` to position peer, after `after` */
    SC_ACT_RECV,        /* message of `bytes` from position peer */
    SC_ACT_TIED,        /* allreduce of tie `peer`'s gradients after `after` */
    SC_ACT_PARAMS,      /* ZeRO 1/2 allgather of `bytes` (whole) after the optimizer */
    SC_ACT_CP,          /* cp group's key/value ring of `bytes` beside the compute before
                           it, from action `after`; the stream waits for it */
    SC_ACT_N
} sc_act_kind;
const char *sc_act_kind_name(int kind);

typedef struct sc_action {
    uint8_t kind;     /* sc_act_kind */
    uint8_t op;       /* the timeline op kind it reports as (sc_op_kind) */
    uint8_t coll;     /* sc_coll of a collective */
    uint8_t waits;    /* the compute stream waits for it (RECV, TP, GATHER, PARAMS) */
    int16_t stage;    /* virtual stage; OPTIMIZER, PARAMS, TIED: the position (TIED: -1) */
    int16_t chunk;    /* -1 when step-level */
    int32_t mb;       /* -1 when not per microbatch (final buckets, step-level) */
    int16_t piece, pieces; /* COMPUTE: piece k of K; REDUCE: its bucket k of K */
    int32_t peer;     /* SEND/RECV: the other position; TIED: the tie index */
    int32_t match;    /* SEND: index of the matching RECV in the peer's list */
    int32_t sched_op; /* the schedule op it belongs to (index in the rank's list), -1 step-level */
    int32_t after;    /* index in this list (see the kinds), -1 none */
    int32_t dep0, ndeps; /* OPTIMIZER: indices deps[dep0 .. dep0+ndeps) it waits for */
    double seconds;   /* COMPUTE: modelled duration */
    double bytes;     /* what it moves (COMPUTE OPTIMIZER: the states it reads and writes) */
} sc_action;

/* A tied group split over positions. */
typedef struct sc_tie {
    int group;        /* index into the model's groups */
    int npos;
    int *pos;         /* positions holding members, ascending */
    int *act;         /* the TIED action's index in each position's list */
    double bytes;     /* gradient bytes per rank (tp-sharded members /tp) */
} sc_tie;

typedef struct sc_lowered_pos {
    int n;
    sc_action *acts;
    int *deps;        /* the OPTIMIZER's dependencies */
    int ndeps;
    int cap_, capdeps_; /* private: allocated lengths */
} sc_lowered_pos;

typedef struct sc_lowered {
    sc_step_cfg cfg;     /* as given; partition points into part */
    sc_partition part;   /* the partition used (cfg's, or uniform) */
    sc_sched *sched;
    int S;               /* pp·v virtual stages */
    sc_stage_info *info; /* per virtual stage (sc_cost_stage), a whole microbatch */
    int k;               /* token slices per microbatch (1: none) */
    sc_stage_info *slice_info; /* k x S: slice j of stage s at [j * S + s]; NULL when k = 1 */
    int *slice_len;      /* k token counts (NULL when k = 1) */
    sc_lowered_pos *pos; /* pp lists */
    int n_ties;
    sc_tie *ties;
    int own_part;
} sc_lowered;

/* Checks cfg (sc_step_check), generates the schedule, costs the stages and
 * lowers the step. Errors of those, or SC_ENOMEM. */
sc_status sc_lower(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                   sc_lowered **out, sc_error *err);
void sc_lower_free(sc_lowered *lw);
/* Whether cfg on c runs PyTorch FSDP's ZeRO 2 (SHARD_GRAD_OP): zero 2, dp > 1
 * (with its cp peers) and c's framework torch. Its parameters are gathered
 * before every forward and freed after the backward, with no gather after the
 * optimizer (DeepSpeed's ZeRO 2 keeps them whole and gathers the updated
 * ones after it, as the rules above do). */
int sc_lower_fsdp_zero2(const sc_step_cfg *cfg, const sc_cluster *c);
/* The bytes of one of TP action a's collectives: the stage's tp_count of
 * them share a->bytes evenly (a count of 0: one collective). */
double sc_lowered_tp_msg(const sc_lowered *lw, const sc_action *a);

/* Writes the lowered step as text: per position a header line, then one
 * line per action: index, kind, the op it reports as, stage, chunk, mb,
 * piece k/K, "after N", "peer P", "match M", "waits", the modelled
 * duration of a compute, its bytes and the optimizer's deps. */
void sc_lower_dump(const sc_lowered *lw, FILE *f);
/* The same into file, whole or not at all (`sim --lowered FILE`). */
sc_status sc_lower_save(const sc_lowered *lw, const char *file, sc_error *err);

#endif
