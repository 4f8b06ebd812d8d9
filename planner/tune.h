/* tune.h - the microbatch auto-tuner: for one fixed layout (dp, tp, pp, v,
 * schedule, ZeRO stage, recompute), every microbatch count m (and size
 * mbs = B / (dp·m)) that fits, simulated. It runs the planner's own search
 * with the layout fixed and every fitting candidate simulated, so `plan` and
 * `tune` share one code path.
 *
 * File (stagecraft.tune/1): { format, model, cluster, nodes, global_batch,
 *   dp, tp, pp, v, schedule, zero, recompute, [cp (context parallelism,
 *   when above 1)],
 *   points: [ { m, mbs, step_time_s, bubble_fraction, efficiency,
 *               peak_mem_bytes, tokens_per_s } ]  (ascending m),
 *   best: index into points }
 * efficiency = compute time / step time (the average rank's). best is the
 * search's winner (search.h's ranking: the fastest, or among the points
 * within SC_SEARCH_TIE of it the one with the lower peak memory), so tune
 * and plan name the same m for the same layout.
 *
 * Ownership: results freed with sc_tune_free (NULL ok).
 */
#ifndef SC_TUNE_H
#define SC_TUNE_H

#include <cjson/cJSON.h>
#include "search.h"

#define SC_TUNE_FORMAT "stagecraft.tune/1"

typedef struct sc_tune_point {
    int m, mbs;
    double step_s, bubble_fraction, efficiency, peak_mem, tokens_per_s;
    int slices;              /* token slices TeraPipe's programme chose (0: none) */
} sc_tune_point;

typedef struct sc_tune {
    char model[SC_NAME_MAX + 1], cluster[128], schedule[32];
    int nodes, dp, tp, pp, v, zero;
    sc_recompute recompute;
    int sp;                  /* sequence parallelism */
    int cp;                  /* context parallelism (1: none) */
    int tp_comm_overlap;     /* its tp collectives beside the GEMMs (with sp) */
    int overlap_param_gather; /* its parameter all-gather beside the next forward */
    int overlap_p2p_comm;    /* its pipeline sends beside the compute (default 1) */
    int grad_reduce_in_fp32; /* its gradients reduced in fp32 (default 0) */
    int fp8;                 /* its fp8 GEMMs (default 0) */
    long global_batch;
    int n, best;
    sc_tune_point *pts;
    /* the swept (m, mbs) with no point, and why (printed and in the JSON as
     * "skipped": [{m, mbs, reason}]; not read back by sc_tune_load) */
    int n_skipped;
    struct {
        int m, mbs;
        char reason[160];
    } skipped[64];
} sc_tune;

/* opts must fix dp, tp and pp; schedule defaults to 1f1b, v to 1, ZeRO to
 * 0, recompute to none, sequence parallelism off and context parallelism 1
 * (fix_cp 0 is read as 1: the layout is fixed); m and mbs are swept
 * (mbs <= opts->max_mbs). */
sc_status sc_tune_run(const sc_model *m, const sc_cluster *c, const sc_search_opts *opts,
                      sc_tune **out, sc_error *err);
cJSON *sc_tune_to_json(const sc_tune *t);
sc_status sc_tune_load(const char *file, sc_tune **out, sc_error *err);
void sc_tune_free(sc_tune *t);

#endif
