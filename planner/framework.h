/* framework.h - what each training framework runs, in one table: the
 * planner's search keeps to it (`plan`, `tune`, `whatif --framework`) and the
 * exports refuse what it excludes (export.c, `export --to`), so a plan
 * searched for a framework is one its export writes.
 *
 * Each row says, for one framework as stagecraft exports to it:
 *   cuts      whether a stage may begin inside a layer (an outermost module
 *             of kind "block", sc_partition_layer_of);
 *   schedules the pipeline schedules it runs as planned; others it runs as
 *             its own 1F1B (`runs_as`, the export says so in its notes) or,
 *             when runs_as is NULL, not at all;
 *   v         whether it runs interleaved virtual stages (v > 1), and
 *             whether it needs m to be a multiple of pp for them;
 *   zero      the highest ZeRO stage it runs without and with a pipeline;
 *   tp        whether it runs tensor parallelism, and only where the model
 *             has tensor-parallel data (sc_model_tp_replicated finds none
 *             without);
 *   sp        whether it runs sequence parallelism;
 *   cp        whether its export writes context parallelism (the search
 *             tries cp only where it does: search.h);
 *   placement whether tp must be the innermost axis of the rank order;
 *   model     whether it needs a GPT-style decoder (sc_export_is_gpt:
 *             Megatron-LM's GPT model, the one its export launches);
 *   p2p       whether its pipeline sends block their sender (sc_step_cfg
 *             no_overlap_p2p_comm): never, without virtual stages, or always.
 * A rule is the framework's (it cannot run that: "cannot run this plan") or
 * the export's (the framework could, stagecraft's export does not write
 * it: "does not write"); sc_fw_verdict says which.
 *
 * "any" is the framework-neutral row: every schedule, ZeRO stage and layout
 * the simulator models. It is the only row without a cut rule of its own:
 * whether it cuts inside layers is the search's choice (search.h, cuts).
 *
 * Sources: the checked commits named in export_megatron.c,
 * export_deepspeed.c and export_torch.c.
 *
 * Ownership: the table is static; nothing here allocates.
 */
#ifndef SC_FRAMEWORK_H
#define SC_FRAMEWORK_H

#include <stddef.h>
#include "model.h"
#include "sc.h"

typedef struct sc_framework {
    const char *name;         /* "megatron": --framework and export --to */
    const char *title;        /* "Megatron-LM" */
    int cuts_in_layers;       /* a stage may begin inside a layer */
    const char *schedules;    /* run as planned: "1f1b,interleaved" */
    const char *runs_as;      /* what it runs for the other schedules, or NULL */
    int virtual_stages;       /* runs v > 1 */
    int v_needs_m_multiple;   /* interleaved needs m a multiple of pp */
    int max_zero;             /* the highest ZeRO stage with pp = 1 */
    int max_zero_pp;          /* ... with pp > 1 */
    int tp;                   /* runs tp > 1 */
    int tp_needs_data;        /* only where the model has tp data */
    int sp;                   /* runs sequence parallelism */
    int cp;                   /* its export writes context parallelism (cp > 1) */
    int fp8;                  /* its export writes fp8 training (a plan's fp8) */
    int tp_innermost;         /* the rank order must put tp innermost */
    int needs_gpt;            /* the model must be GPT-style (sc_export_is_gpt) */
    /* the reasons, one phrase each, after the feature ("...: WHY") */
    const char *v_why;        /* v > 1 refused */
    const char *zero_why;     /* ZeRO above max_zero (pp = 1) */
    const char *zero_pp_why;  /* ZeRO above max_zero_pp with a pipeline */
    const char *tp_why;       /* tp > 1 refused */
    const char *sp_why;       /* sequence parallelism refused */
    const char *cp_why;       /* context parallelism not written */
    const char *fp8_why;      /* fp8 training not written */
    int zero_by_export;       /* the ZeRO rules are the export's, not the framework's */
    int tp_by_export;         /* so is the tp rule */
    int p2p_blocks;           /* its pipeline sends block their sender: SC_FW_P2P_* */
    const char *p2p_why;      /* where and why they block ("without virtual stages,
                                 where ..."), or NULL */
} sc_framework;

enum {
    SC_FW_P2P_BESIDE = 0,     /* beside the compute, every schedule */
    SC_FW_P2P_BLOCKS_V1,      /* blocking without virtual stages (v = 1) */
    SC_FW_P2P_BLOCKS          /* blocking, every schedule */
};

/* The rows, in a fixed order (megatron, deepspeed, torch, any); *n gets
 * their count. */
const sc_framework *const *sc_frameworks(int *n);
/* The row called name, or NULL. */
const sc_framework *sc_framework_find(const char *name);
/* "megatron, deepspeed, torch, any": for usage messages (static). */
const char *sc_framework_names(void);
/* The framework-neutral row ("any"). */
const sc_framework *sc_framework_any(void);

/* A layout to judge. placement NULL = the default "tp,pp,dp"; m 0 = not
 * known yet (the m rule is then not judged). */
typedef struct sc_fw_layout {
    int tp, pp, v, m, zero, sp, cp; /* cp 0 or 1: none */
    int fp8;                        /* fp8 GEMMs (a plan's fp8) */
    const char *schedule;
    const char *placement;
} sc_fw_layout;

typedef enum sc_fw_verdict {
    SC_FW_RUNS = 0,           /* runs it as planned */
    SC_FW_RUNS_AS,            /* runs it, with another schedule (fw->runs_as) */
    SC_FW_CANNOT,             /* the framework cannot run it */
    SC_FW_UNWRITTEN,          /* the framework could; the export does not write it */
    SC_FW_NOMEM               /* out of memory judging the model's shape */
} sc_fw_verdict;

/* Judges a layout of model m (NULL: the model rules, its shape and its tp
 * data, are not judged) for
 * fw. Where it is not SC_FW_RUNS, why gets one phrase naming the feature
 * and the reason ("ZeRO-2 with pipeline parallelism (pp=4): DeepSpeed's
 * pipeline engine takes ZeRO stages 0 and 1 only"); why may be NULL.
 * The rules are judged in a fixed order and the first that fails answers.
 * O(1) (O(leaves) when the tp rule needs the model). */
sc_fw_verdict sc_framework_judge(const sc_framework *fw, const sc_model *m,
                                 const sc_fw_layout *l, char *why, size_t n);

/* Whether fw's pipeline sends block their sender in a layout of pp stages
 * and v model chunks a rank (the step's no_overlap_p2p_comm): 0 without a
 * pipeline, and for fw NULL (any). */
int sc_framework_p2p_blocks(const sc_framework *fw, int pp, int v);

/* Whether fw runs schedule as planned (its `schedules` list). */
int sc_framework_runs_schedule(const sc_framework *fw, const char *schedule);

/* The phrase for a stage that begins inside a layer, for fw: "stage S
 * begins at LEAF, inside the layer LAYER (TITLE cuts only between
 * layers)". stage is 0-based (printed 1-based). */
void sc_framework_cut_why(const sc_framework *fw, const sc_model *m, int stage, int leaf,
                          char *why, size_t n);

#endif
