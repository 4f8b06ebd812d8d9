/* search.h - the planner: enumerate parallel configurations, partition,
 * drop what does not fit, estimate every survivor analytically, simulate the
 * best K with the discrete-event simulator, rank.
 *
 * Enumeration (for G = nodes · gpus_per_node GPUs and global batch B):
 *   tp divides gpus_per_node (tp inside a node) and every attention module's
 *   heads; cp (context parallelism) 1 and, with flash attention under a
 *   framework that runs it (any, megatron), each power of two up to
 *   gpus_per_node that the model takes (sc_step_check_cp), or fix_cp;
 *   pp <= layers; dp = G / (tp·pp·cp) exactly; dp divides B; mbs divides
 *   B/dp (mbs <= max_mbs), m = B/(dp·mbs); schedules gpipe, 1f1b, zb-h1, and
 *   interleaved with v in 2..8 where m is a multiple of pp and pp·v <= layers
 *   (pp = 1 runs 1f1b only: every schedule is the same there); ZeRO 0..3;
 *   recompute none, selective, full. --fix narrows any of them.
 * Partition: one per (pp, v, tp, mbs, sp, cp), shared by the candidates that differ
 * only in schedule, ZeRO stage or recompute (see sc_search_opts.partitioner);
 * each candidate's memory is then checked on it, schedule-aware.
 * Estimate (estimate.c): per stage compute, tp allreduce and p2p time from the
 * cost models; the pipeline time of the schedule's closed form generalised
 * to unequal stages ((m-1)·max T + sum T for gpipe and 1f1b, m·max T + (p-1)·
 * max T / v for interleaved, m·max T + (p-1)·max(F, B/2) for zb-h1); the data-
 * parallel reduction exposed past the last backward's buckets; the ZeRO
 * gathers; the optimizer. O(pp·v) per candidate.
 * Framework (opts.framework, framework.h): only the layouts that framework
 * runs as planned: its schedules, v, ZeRO stages with and without a
 * pipeline, tp only where it runs tp (and the model has tp data where it
 * needs that), sequence parallelism where it runs it. NULL is "any".
 * Cuts: stages begin only between layers (sc_partition_between_layers)
 * unless opts.cut_in_layers, which only a framework whose row allows it
 * takes (any, torch); SC_EINVAL otherwise.
 * Merging: configurations that would run alike are one candidate: selective
 * recompute is not enumerated for a model without attention or with flash
 * attention (it would be recompute none: nothing re-run, nothing more
 * saved), and the ranked list holds each configuration once.
 * Ranking: by simulated step time (speed), or (memory) by peak memory among
 * the simulated plans within 5% of the fastest, then by step time. Speed
 * ties: the plans within SC_SEARCH_TIE (1%) of the step time of the fastest
 * not yet ranked are one tie, ordered by lower peak memory, then by the
 * simpler layout (fewer of dp, tp, pp, v, cp above 1; then the lower ZeRO
 * stage), then by step time (sc_search_tie says which decided).
 *
 * Ownership: sc_search_run returns a search the caller frees with
 * sc_search_free; candidates and their results belong to it.
 */
#ifndef SC_SEARCH_H
#define SC_SEARCH_H

#include <cjson/cJSON.h>
#include "cluster.h"
#include "model.h"
#include "partition.h"
#include "sc.h"
#include "step.h"

struct sc_search_progress;
struct sc_framework;

/* Candidates simulated by default: enough that plan, tune and whatif pick
 * the same winner for the README's cases (tests/test_framework.c). */
#define SC_SEARCH_SIMULATE 64
/* Step times within this fraction of each other are a tie (see Ranking). */
#define SC_SEARCH_MAX_CPS 8 /* cp degrees searched at most: 1, 2, 4, ... */
#define SC_SEARCH_TIE 0.01

typedef struct sc_search_opts {
    long global_batch;
    int optimize_memory;      /* 0: speed, 1: memory */
    int simulate;             /* candidates simulated, 0 = SC_SEARCH_SIMULATE */
    /* token slices (TeraPipe): 1 = for every simulated gpipe or 1f1b
     * candidate with fewer microbatches than stages on a causal decoder,
     * also simulate TeraPipe's slicing (sc_slices_auto) and keep it when it
     * is faster; 0 = never */
    int slices;
    const struct sc_framework *framework; /* NULL = any (framework.h) */
    int cut_in_layers;        /* 1: stages may begin inside a layer (any, torch) */
    const char *partitioner;  /* "uniform", "tree" or "optimal"; NULL = "optimal" when built */
    double memory_weight;     /* tree partitioner; < 0 = 0.2 (speed) or 0.8 (memory) */
    int max_mbs;              /* 0 = 8; a larger fix_mbs raises it (sc_search_max_mbs) */
    int shared_strict;        /* tree/optimal: keep every shared group on one stage
                                 (default: replicate it across stages, as Megatron-LM) */
    /* fixed choices; 0 (or NULL, or -1 for zero/recompute) = free */
    int fix_dp, fix_tp, fix_pp, fix_v, fix_m, fix_mbs;
    int fix_zero, fix_recompute;
    int fix_sp;               /* -1 free (searched where tp > 1), 0 off, 1 on */
    /* context parallelism (sc_step_cfg cp): 0 searched (as above), >= 1 every
     * candidate's (1: none). Ranks dp·cp·tp·pp; cp > 1 needs flash attention
     * (attn) and no token slices (a cp candidate is never sliced) */
    int fix_cp;
    sc_attn attn;             /* attention implementation of every candidate (unfused = 0) */
    int no_overlap_grad_reduce; /* 1: every candidate with overlap_grad_reduce off (the
                                   dp reduction after the backward); 0: on (default) */
    int no_overlap_p2p_comm;  /* 1: every candidate's pipeline sends block their sender
                                 (sc_step_cfg no_overlap_p2p_comm); 0: beside the compute;
                                 -1 (sc_search_opts_default): as the framework runs them
                                 (sc_search_p2p_blocks) */
    int tp_comm_overlap;      /* 1: every candidate with sp overlaps its tp collectives
                                 with its GEMMs (Megatron-LM --tp-comm-overlap); 0: none
                                 (default) */
    int overlap_param_gather; /* 1: every candidate with ZeRO 1 or 2 gathers its
                                 parameters beside the next forward (Megatron-LM
                                 --overlap-param-gather); 0: none (default) */
    int defer_embedding_wgrad; /* sim only: Megatron-Core's --defer-embedding-wgrad-compute
                                  (sc_step_cfg), of the first wgrad_deferral_limit
                                  microbatches (0: all); 0: off (default) */
    int wgrad_deferral_limit;
    int fp8;                  /* 1: every candidate trains with fp8 GEMMs (sc_step_cfg
                                 fp8); 0: none (default) */
    int grad_reduce_in_fp32;  /* 1: every candidate reduces its gradients in fp32
                                 (sc_step_cfg grad_reduce_in_fp32); 0: in the training
                                 dtype's width (default) */
    const char *fix_schedule;
    /* Once this many seconds have passed and some configuration fits, stop
     * partitioning new shapes (and simulating candidates past the first
     * that fits) and rank what was found so far (sc_search_limits says so);
     * 0 = no limit. A partition under way when time runs out returns its
     * best split so far. When nothing fits yet as time runs out, the search
     * goes on, each further shape with the partitioner's first valid split
     * rather than its optimum (its bottleneck an upper bound), until one
     * fits; sc_search_limits reports time_limited. */
    double time_limit_s;
    /* Skip simulating a candidate whose sc_step_size_estimate is above this
     * many bytes (counted in sc_search_limits), and a shape whose optimal
     * partition needs more than half of it; 0 = no limit. */
    double max_mem_bytes;
    /* called after every shape partitioned and every candidate simulated
     * (may be NULL) */
    void (*progress)(void *ud, const struct sc_search_progress *p);
    void *progress_ud;
} sc_search_opts;

/* The largest microbatch size the search tries: max_mbs (0: 8), or a
 * fixed mbs above it, which is tried whatever its size. */
int sc_search_max_mbs(const sc_search_opts *o);

/* Where a search is. Phase 0 partitions and estimates shapes (pp, v, tp,
 * mbs), phase 1 simulates candidates; fraction is of the phase, a shape
 * weighted by its stage count pp·v + 8 (bigger shapes take longer). */
typedef struct sc_search_progress {
    int phase;
    long done, total;
    double fraction, elapsed_s;
    int workers; /* threads at work on the phase (0 or 1: one item at a time) */
} sc_search_progress;

typedef struct sc_estimate {
    double step_s, pipe_s, bubble_s, compute_s, tp_s, pp_s, dp_s, optimizer_s;
    double peak_mem;          /* worst pipeline position */
    int fits;
} sc_estimate;

typedef struct sc_candidate {
    sc_step_cfg cfg;          /* partition points into the search's cache */
    char schedule[16];
    int part_key;
    sc_estimate est;
    sc_step_result *sim;      /* set for the simulated ones */
    int slice_len[64];        /* cfg.slice_len when cfg.slices > 1 (SC_SLICES_MAX) */
    double unsliced_s;        /* the step without slices, when slicing won (else 0) */
} sc_candidate;

typedef struct sc_search sc_search;

/* Defaults for opts (every field free, K = SC_SEARCH_SIMULATE). */
void sc_search_opts_default(sc_search_opts *o);
/* Whether o's candidates of pp stages and v chunks a rank block on their
 * pipeline sends: o->no_overlap_p2p_comm where given (0 or 1), else as
 * o->framework runs them (sc_framework_p2p_blocks; NULL: beside the
 * compute). */
int sc_search_p2p_blocks(const sc_search_opts *o, int pp, int v);
sc_status sc_search_run(const sc_model *m, const sc_cluster *c, const sc_search_opts *o,
                        sc_search **out, sc_error *err);
void sc_search_free(sc_search *s);
/* Counts: enumerated configurations, those that fit, those simulated. */
void sc_search_counts(const sc_search *s, long *enumerated, long *fitting, int *simulated);
/* Simulated candidates in rank order (0 = the winner); NULL past the end. */
const sc_candidate *sc_search_ranked(const sc_search *s, int i);
/* What cut the search short: *time_limited when opts.time_limit_s ended it
 * (after *shapes_done of *shapes_total shapes), *over_mem candidates not
 * simulated for opts.max_mem_bytes. Any pointer may be NULL. */
void sc_search_limits(const sc_search *s, int *time_limited, long *shapes_done,
                      long *shapes_total, int *over_mem);
/* What ordered candidate i before i+1 when their step times tie (within
 * SC_SEARCH_TIE): SC_TIE_NONE (not a tie: i+1 is slower), SC_TIE_MEMORY,
 * SC_TIE_LAYOUT (fewer dimensions above 1, or a lower ZeRO stage) or
 * SC_TIE_STEP (same memory and layout: the faster first); also what the
 * memory ranking decided (SC_TIE_MEMORY) when opts.optimize_memory. */
typedef enum { SC_TIE_NONE, SC_TIE_MEMORY, SC_TIE_LAYOUT, SC_TIE_STEP } sc_search_tie_kind;
sc_search_tie_kind sc_search_tie(const sc_search *s, int i);
/* Dimensions above 1 among dp, tp, pp and v: the layout's complexity the
 * ties compare. */
int sc_search_dims(const sc_step_cfg *cfg);
/* The threads the shapes were partitioned on: 1 when one by one as the search
 * asked for them (one core, SC_THREADS=1, or shapes so large that their
 * partitions' working memory, each held to half of opts.max_mem_bytes, would
 * not fit in that half together), else 2 to 4 ahead of the search (the same
 * results). */
int sc_search_part_threads(const sc_search *s);
/* Seconds spent in enumeration+partition+estimate and in simulation. */
void sc_search_times(const sc_search *s, double *estimate_s, double *simulate_s);
/* The partition method used. */
const char *sc_search_partitioner(const sc_search *s);
/* The context-parallel degrees the search tried (1 alone: cp not searched,
 * or fixed at 1); out gets up to SC_SEARCH_MAX_CPS of them. Returns the count. */
int sc_search_cps(const sc_search *s, int out[SC_SEARCH_MAX_CPS]);

/* The analytical estimate of one configuration (cfg->partition NULL =
 * uniform); the same model the search uses, without its caches. */
sc_status sc_estimate_step(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                           sc_estimate *out, sc_error *err);

#endif
