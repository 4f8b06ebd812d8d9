/* whatif.h - what-if studies: the best plan of a model for each node count
 * and each cluster, and what training a token budget on it takes in days and
 * dollars, on demand and on spot capacity.
 *
 * The study. For every cluster C and node count N: the planner's search
 * (sc_search_run, opts.simulate candidates simulated, speed, opts.framework) on C at N nodes; its winner gives
 * the step time and tokens/s. A count where nothing fits or no configuration
 * matches (SC_ENOFIT, SC_EINVAL from the search, or a node count the cluster
 * cannot take) is skipped with the search's message; any other error fails
 * the study. Per point:
 *   scaling efficiency = (tokens/s / GPUs) / (tokens/s / GPUs at the
 *                         smallest count of the same cluster that ran)
 *   work time  T_s     = tokens / tokens_per_s;   days = T_s / 86400
 *   on demand          = N · on_demand_per_hour · T_s / 3600
 *   $ per Mtok         = N · price_per_hour / (3600 · tokens_per_s) · 1e6
 *   spot (when asked and the cluster has a spot price): see sc_whatif_spot_eval
 *                        = N · spot_per_hour · T_w / 3600, T_w the expected
 *                        wall time with interruptions.
 *
 * Spot interruptions (all figures per job):
 *   λ_job = λ_node · N per hour (the job stops when any of its nodes is taken
 *           back; nodes independent, so the rates add); M = 3600 / λ_job s.
 *   δ     = checkpoint write time = state / (storage_bytes_per_s · N), state =
 *           (weight + optimizer bytes per parameter, sc_cost_state_bytes) ·
 *           total parameters, written in parallel by every node (gradients
 *           are not saved).
 *   τ     = the checkpoint interval (work between checkpoints): Daly's
 *           higher-order optimum (sc_whatif_daly_interval), which refines
 *           Young's first-order τ = sqrt(2δM) (sc_whatif_young_interval).
 *   T_w   = expected wall time, the first-order model (sc_whatif_wall).
 *   waste = 1 - T_s / T_w.
 * Sources: J. W. Young, "A first order approximation to the optimum
 * checkpoint interval", Communications of the ACM 17(9):530-531, 1974.
 * J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
 * restart dumps", Future Generation Computer Systems 22(3):303-312, 2006.
 *
 * The Pareto front: the (days, dollars) options not dominated by another
 * (another at most as long and at most as dear, and better in one), across
 * every cluster and node count, and over on-demand and spot options both when
 * spot is studied.
 *
 * Files (sc_whatif_write, into DIR): whatif.csv, whatif.json
 * (stagecraft.whatif/1, see sc_whatif_to_json), and gnuplot charts
 * time_vs_cost, tokens_vs_nodes, cost_per_mtok_vs_nodes, each .png and .svg.
 *
 * Ownership: sc_whatif_run returns a study the caller frees with
 * sc_whatif_free (NULL ok); it keeps no reference to its arguments.
 */
#ifndef SC_WHATIF_H
#define SC_WHATIF_H

#include <cjson/cJSON.h>
#include "cluster.h"
#include "model.h"
#include "plot.h"
#include "sc.h"
#include "search.h"

#define SC_WHATIF_FORMAT "stagecraft.whatif/1"
#define SC_WHATIF_MAX_COUNTS 64   /* distinct node counts in a study */
#define SC_WHATIF_MAX_CLUSTERS 16

/* ---- the checkpoint/restart mathematics ---------------------------------- */

/* Young 1974: τ = sqrt(2 δ M). δ, M in seconds (> 0); M = INFINITY gives
 * INFINITY (never checkpoint). */
double sc_whatif_young_interval(double delta_s, double mtbi_s);

/* Daly 2006's higher-order estimate: for δ < 2M,
 *   τ = sqrt(2δM) · [1 + (1/3)·sqrt(δ/(2M)) + (1/9)·δ/(2M)] - δ,
 * else τ = M. M = INFINITY gives INFINITY. */
double sc_whatif_daly_interval(double delta_s, double mtbi_s);

/* Expected wall time of T_s seconds of work checkpointed every τ seconds of
 * work, each checkpoint taking δ, interrupted at mean interval M (a Poisson
 * process), each interruption costing a restart R plus the work since the
 * last checkpoint. The first-order model (the one Young 1974 optimises and
 * Daly 2006 starts from, before his exponential refinement):
 *   T_w = T_s + (T_s/τ - 1)·δ + (T_w / M)·((τ + δ)/2 + R)
 * that is
 *   T_w = [T_s + max(0, T_s/τ - 1)·δ] / (1 - ((τ + δ)/2 + R) / M):
 * the checkpoints cost (T_s/τ - 1)·δ (none after the last segment); T_w/M
 * interruptions are expected, each losing on average half a segment of work
 * and checkpoint plus R. When the denominator is <= 0 an interruption costs
 * on average at least the time between two of them: no progress, and the
 * result is INFINITY. M = INFINITY (no interruptions) gives T_s exactly
 * (τ is then INFINITY too: no checkpoints). */
double sc_whatif_wall(double work_s, double delta_s, double restart_s, double interval_s,
                      double mtbi_s);

typedef struct sc_whatif_spot {
    double interruptions_per_hour; /* the job's: per node · nodes */
    double mtbi_s;                 /* 3600 / that; INFINITY when 0 */
    double checkpoint_s;           /* δ */
    double interval_s;             /* τ (Daly); INFINITY when no interruptions */
    double wall_s;                 /* T_w; INFINITY when infeasible */
    double waste_fraction;         /* 1 - T_s/T_w; 1 when infeasible */
    int feasible;
} sc_whatif_spot;

/* The spot model for one job: work_s of work on `nodes` nodes each taken back
 * at rate_per_node_per_hour (>= 0), state_bytes checkpointed at
 * storage_bytes_per_s per node (> 0) by all nodes in parallel, restart_s per
 * interruption. Formulas at the top of this file. */
void sc_whatif_spot_eval(double work_s, long nodes, double rate_per_node_per_hour,
                         double state_bytes, double storage_bytes_per_s, double restart_s,
                         sc_whatif_spot *out);

/* Marks on_front[i] = 1 for every (x[i], y[i]) no other point dominates
 * (x[j] <= x[i], y[j] <= y[i], one of them strictly); equal points are all
 * kept. Non-finite points are never on the front and dominate nothing.
 * Returns how many are on it. O(n²). */
int sc_whatif_pareto(const double *x, const double *y, int n, int *on_front);

/* Parses a node-count list into out[0..*n), ascending and without repeats:
 * comma-separated items, each a count ("12") or a range "A-B" standing for
 * the powers of two p with A <= p <= B ("1-64" = 1,2,4,...,64). Counts lie in
 * [1, SC_CLUSTER_MAX_NODES]; at most max distinct counts. SC_EINVAL with a
 * message naming the bad item ("--nodes: 'x' is not a count or a range A-B"). */
sc_status sc_whatif_parse_nodes(const char *list, long *out, int max, int *n, sc_error *err);

/* ---- the study ------------------------------------------------------------- */

struct sc_whatif_point;

typedef struct sc_whatif_opts {
    long global_batch;             /* samples per step, >= 1 */
    double tokens;                 /* to train, > 0 */
    int spot;                      /* study spot capacity too */
    double interruptions_per_hour; /* per node; < 0 = each cluster's price.spot_interruptions_per_hour */
    double storage_bytes_per_s;    /* per node; <= 0 = each cluster's storage_bytes_per_s */
    double restart_s;              /* per interruption; < 0 = 600 */
    int simulate;                  /* candidates each search simulates; 0 = SC_SEARCH_SIMULATE
                                      (the same as plan's, so both pick one winner) */
    const struct sc_framework *framework; /* sc_search_opts.framework; NULL = any */
    int cut_in_layers;             /* sc_search_opts.cut_in_layers */
    double max_mem_bytes;          /* sc_search_opts.max_mem_bytes of each search; 0 = none */
    sc_attn attn;                  /* attention implementation of every search */
    int fix_sp;                    /* sc_search_opts.fix_sp: -1 searched (default), 0, 1 */
    int fix_cp;                    /* sc_search_opts.fix_cp: 0 searched (default; with flash
                                      attention), >= 1 fixed */
    int no_overlap_grad_reduce;    /* sc_search_opts.no_overlap_grad_reduce (default 0) */
    int no_overlap_p2p_comm;       /* sc_search_opts.no_overlap_p2p_comm (default -1) */
    int tp_comm_overlap;           /* sc_search_opts.tp_comm_overlap (default 0) */
    int overlap_param_gather;      /* sc_search_opts.overlap_param_gather (default 0) */
    int grad_reduce_in_fp32;       /* sc_search_opts.grad_reduce_in_fp32 (default 0) */
    int fp8;                       /* sc_search_opts.fp8 (default 0) */
    /* called after each (cluster, nodes) with done of total finished; point is
     * NULL for a skipped one (reason says why). May be NULL. */
    void (*progress)(void *ud, int done, int total, const char *cluster, long nodes,
                     const struct sc_whatif_point *point, const char *reason);
    void *progress_ud;
} sc_whatif_opts;

void sc_whatif_opts_default(sc_whatif_opts *o);

typedef struct sc_whatif_point {
    int cluster;                   /* index into the study's clusters */
    long nodes, gpus;
    int dp, tp, pp, v, m, mbs, zero;
    int sp;                        /* sequence parallelism */
    int cp;                        /* context parallelism (1: none) */
    int tp_comm_overlap;           /* its tp collectives beside the GEMMs */
    int overlap_param_gather;      /* its parameter all-gather beside the next forward */
    int overlap_p2p_comm;          /* its pipeline sends beside the compute */
    int grad_reduce_in_fp32;       /* its gradients reduced in fp32 */
    int fp8;                       /* its fp8 GEMMs */
    char schedule[16];
    sc_recompute recompute;
    double step_s, tokens_per_s, scaling_efficiency;
    double work_s, days;           /* T_s, T_s / 86400 */
    double cost_on_demand, usd_per_mtok_on_demand;
    int has_spot;                  /* spot studied and offered on this cluster */
    sc_whatif_spot spot;           /* valid when has_spot */
    double spot_days, cost_spot, usd_per_mtok_spot; /* INFINITY when infeasible */
    int pareto_on_demand, pareto_spot;
} sc_whatif_point;

typedef struct sc_whatif_skip {
    int cluster;
    long nodes;
    char reason[SC_ERRMSG_MAX];
} sc_whatif_skip;

typedef struct sc_whatif {
    char model[SC_NAME_MAX + 1];
    int seq;                       /* the model's sequence length */
    double params;                 /* and its parameters (for the cluster labels) */
    int flash;                     /* its attention fused (opts' attn) */
    int n_clusters;
    sc_cluster *clusters;          /* as given (node counts as given) */
    long global_batch;
    double tokens, restart_s;
    int spot;
    int n_points;                  /* cluster by cluster, ascending nodes */
    sc_whatif_point *points;
    int n_skipped;
    sc_whatif_skip *skipped;
} sc_whatif;

/* Runs the study of model m on clusters[0..n_clusters) at nodes[0..n_nodes)
 * (ascending, distinct). Fails (SC_EINVAL) on bad options; a study where every
 * point was skipped succeeds with n_points 0. Cost: one search per point. */
sc_status sc_whatif_run(const sc_model *m, const sc_cluster *clusters, int n_clusters,
                        const long *nodes, int n_nodes, const sc_whatif_opts *o,
                        sc_whatif **out, sc_error *err);
void sc_whatif_free(sc_whatif *w);
/* Cluster c's first point (its smallest node count: points run cluster by
 * cluster, ascending), NULL when none; the one its label's error bar is of. */
const sc_whatif_point *sc_whatif_first_point(const sc_whatif *w, int c);

/* {format, model, clusters: [names], global_batch, tokens, spot (bool),
 *  restart_s, points: [{cluster, nodes, gpus, config {dp, tp, pp, v, m, mbs,
 *  schedule, zero, recompute, sp, cp}, step_time_s, tokens_per_s, scaling_efficiency,
 *  days, cost_on_demand_usd, usd_per_mtok_on_demand, cost_spot_usd | null,
 *  usd_per_mtok_spot | null, spot: {interruptions_per_hour, checkpoint_s,
 *  interval_s | null, waste_fraction, feasible, days | null} | null,
 *  pareto_on_demand, pareto_spot}], skipped: [{cluster, nodes, reason}],
 *  pareto: [indices of points with an option on the front]}.
 * spot.interruptions_per_hour is the job's (per node · nodes). NULL on OOM. */
cJSON *sc_whatif_to_json(const sc_whatif *w);

/* One header line and one row per point (skipped counts are not rows):
 * cluster,nodes,gpus,dp,tp,pp,v,m,mbs,schedule,zero,recompute,step_time_s,
 * tokens_per_s,scaling_efficiency,days,cost_on_demand_usd,
 * usd_per_mtok_on_demand,spot_interruptions_per_hour,checkpoint_s,interval_s,
 * waste_fraction,spot_days,cost_spot_usd,usd_per_mtok_spot,pareto,cp
 * (spot fields empty when not studied or not offered, and "inf" days/cost
 * when infeasible; pareto is "", "on_demand", "spot" or "both"). */
sc_status sc_whatif_csv(const sc_whatif *w, sc_buf *out, sc_error *err);

/* 1 when some point has a price (cost_on_demand > 0); a study of clusters
 * without prices (cpu-local) has no cost charts. */
int sc_whatif_has_cost(const sc_whatif *w);

/* Writes DIR/whatif.csv, DIR/whatif.json and the charts (DIR/time_vs_cost,
 * DIR/tokens_vs_nodes, DIR/cost_per_mtok_vs_nodes, each .png and .svg; only
 * tokens_vs_nodes when !sc_whatif_has_cost, and time_vs_cost leaves out the
 * $0 points its log axis cannot show), creating DIR (and its parents) if
 * missing. Everything is first written into a fresh temporary folder inside
 * DIR and renamed into place only when every file exists, so a failure
 * (gnuplot missing: SC_ENOTSUP; gnuplot or a write failing: SC_EIO) leaves
 * DIR's files as they were. po may be NULL (default sizes; po->gnuplot picks
 * the program). */
sc_status sc_whatif_write(const sc_whatif *w, const char *dir, const sc_plot_opts *po,
                          sc_error *err);

#endif
