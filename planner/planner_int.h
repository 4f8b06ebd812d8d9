/* planner_int.h - what the planner's own files share: the per-partition
 * table of stage figures that makes an estimate O(pp·v). */
#ifndef SC_PLANNER_INT_H
#define SC_PLANNER_INT_H

#include "search.h"

/* Figures of one partition for one (pp, v, tp, mbs). Arrays are per stage
 * (S = pp·v) or per pipeline position (pp), as marked. */
typedef struct sc_stage_table {
    int S, pp, v, tp, mbs, sp;
    int cp;                     /* context parallelism (1: none): a position's ranks of
                                   one replica are tp·cp wide, the data-parallel
                                   group dp·cp; the cp rings are taken as hidden */
    sc_attn attn;
    sc_partition part;          /* owned */
    double *f, *b, *rc_sel;     /* per stage: forward, backward, selective recompute (s) */
    double *rc_full;            /* per stage: what full recompute re-runs (s, the layers'
                                   forward: sc_stage_info recompute_full_s) */
    double *w;                  /* per stage: the backward's weight gradients (s, bwd_w_s) */
    sc_fsdp_cost *fsdp;         /* per stage: the framework's gradient work per backward
                                   under ZeRO 2 and 3 (sc_stage_info fsdp); 0 but under
                                   torch */
    double *tp_s;               /* per stage: one pass's tp allreduces (s) */
    double *tp_ov;              /* per stage, under tp comm overlap: [2s] the chunks
                                   beside the op, [2s + 1] the last chunk (s) */
    double *send_s;             /* per stage: p2p time to the next stage (s), 0 on the last */
    double *grad;               /* per stage: gradient bytes per rank, as reduced */
    int grad_fp32;              /* they are reduced in fp32 (sc_step_cfg grad_reduce_in_fp32):
                                   the estimate's states follow it too */
    double *params;             /* per position: parameters per rank, shared copies included */
    double *unit;               /* per position: ZeRO 3's first gather, bytes (its first
                                   stage's sc_stage_info unit_bytes) */
    double *gathered;           /* per position: what ZeRO 3 holds gathered beside its
                                   shards, bytes (sc_mem.gathered of its leaves) */
    double *act1, *act_slope;   /* per position x 3 recompute modes: activations at 1
                                   microbatch in flight and per extra one */
    double shared_grad;         /* bytes of the largest shared group split over positions */
    int shared_npos;            /* positions it spans (0 = none) */
    /* The collectives' size ramps (cost.h) at the sizes the estimate uses, computed once
     * per table (a pow each: per candidate they cost more than the rest of the
     * estimate): per position x SC_RAMP_N sizes x 2 link classes (intra, inter), and
     * the shared group's allreduce. Sizes: a data-parallel bucket at the default bucket
     * size, the position's parameters (P·w), its gradients per chunk (also ZeRO 3's
     * gather of a chunk's own parameters), ZeRO 3's first gather (unit). */
    double *ramp;
    double ramp_shared[2];
    /* The data-parallel terms of the last (cluster, dp, bucket size, dtype) a candidate
     * asked for (sc_dp_terms, estimate.c): per position, SC_DPT_N figures that depend
     * on those alone, not on the microbatches, schedule, ZeRO stage or recompute a
     * candidate varies, so a search's candidates of one table compute them once. Owned,
     * filled by sc_estimate_fast (the table stays const to it: the memo is behind a
     * pointer), so one thread at a time estimates on a table (the search estimates on
     * one thread; only its simulations run on several). */
    struct sc_dp_terms *dpt;
} sc_stage_table;

enum {
    SC_RAMP_BUCKET = 0,
    SC_RAMP_PARAMS,
    SC_RAMP_GRADS_V,
    SC_RAMP_UNIT,
    SC_RAMP_N
};

/* cp: context parallelism (sc_step_cfg cp; 0 or 1: none), fixed for a table;
 * grad_fp32: the gradients reduced in fp32 (sc_step_cfg grad_reduce_in_fp32)
 * and fp8: fp8 GEMMs (sc_step_cfg fp8), each one setting for every table of
 * a search. */
sc_status sc_stage_table_build(const sc_model *m, const sc_cluster *c, int pp, int v, int tp,
                               int sp, int tp_overlap, sc_attn attn, int mbs, int cp,
                               int grad_fp32, int fp8, const sc_partition *part,
                               sc_stage_table *out,
                               sc_error *err);
void sc_stage_table_free(sc_stage_table *t);
/* Microbatches in flight on position r (sets of one chunk), from the
 * schedules' closed forms (tests/test_sched.c checks them against the
 * generated lists). */
int sc_inflight(const char *schedule, int pp, int m, int v, int r);
void sc_estimate_fast(const sc_stage_table *t, const sc_cluster *c, const sc_step_cfg *cfg,
                      sc_dtype dt, sc_estimate *out);

#endif
