/* framework.c - the table of what each framework runs, and the one judge
 * of a layout against it (see framework.h). */
#include "framework.h"
#include "export.h"
#include "partition.h"

#include <stdio.h>
#include <string.h>

/* Megatron-LM (export_megatron.c's commit): 1F1B and interleaved 1F1B
 * (pipeline_parallel/schedules.py), no GPipe and no zero-bubble schedule;
 * interleaving needs m a multiple of pp; ZeRO 1 and 2 as the distributed
 * optimizer, ZeRO 3 as Megatron-FSDP, not paired with a pipeline; tp and
 * sequence parallelism in its own layers; tp innermost in the rank order.
 * Pipeline sends block without virtual stages: arguments.py turns
 * overlap_p2p_comm off for the non-interleaved schedules, and each p2p call
 * then waits for its requests (p2p_communication.py, wait_on_reqs). */
static const sc_framework megatron = {
    .name = "megatron", .title = "Megatron-LM", .cuts_in_layers = 0,
    .schedules = "1f1b,interleaved", .runs_as = "1F1B",
    .virtual_stages = 1, .v_needs_m_multiple = 1,
    .max_zero = 3, .max_zero_pp = 1, .tp = 1, .tp_needs_data = 1, .sp = 1, .cp = 1,
    .fp8 = 1, .tp_innermost = 1, .needs_gpt = 1,
    .p2p_blocks = SC_FW_P2P_BLOCKS_V1,
    .p2p_why = "without virtual stages, where Megatron-LM turns --overlap-p2p-communication off",
    .zero_pp_why = "Megatron-LM shards gradients and parameters (ZeRO 2 and 3) only under "
                   "Megatron-FSDP, which the checked source does not pair with pipeline "
                   "parallelism; its distributed optimizer is ZeRO 1",
    .tp_why = "",
    .sp_why = "",
};

/* Context parallelism is Megatron-Core's (--context-parallel-size): the other
 * exports do not write it. */
#define CP_MEGATRON_ONLY "only --to megatron writes it (--context-parallel-size)"
/* fp8 training as the plan prices it is Transformer Engine's delayed scaling
 * in Megatron-Core's layers (--fp8-format hybrid): the other exports build
 * their layers from torch.nn, which has no fp8 GEMMs of that recipe. */
#define FP8_MEGATRON_ONLY                                                                   \
    "only --to megatron writes it (--fp8-format hybrid: Transformer Engine's layers; the "  \
    "other exports build torch.nn layers); plan without --fp8 to export there"

/* DeepSpeed (export_deepspeed.c's commit): the pipeline engine runs its own
 * 1F1B-style TrainSchedule, one contiguous stage per rank, ZeRO 0 and 1
 * only (pipe/engine.py); ZeRO 3 without a pipeline; tensor parallelism only
 * in layers that are tensor-parallel themselves (Megatron-DeepSpeed's);
 * no Megatron-style sequence parallelism of norms and dropouts. Its
 * pipeline engine sends synchronously (pipe/p2p.py send, async_op False). */
static const sc_framework deepspeed = {
    .name = "deepspeed", .title = "DeepSpeed", .cuts_in_layers = 0,
    .schedules = "1f1b", .runs_as = "its 1F1B-style TrainSchedule",
    .virtual_stages = 0, .v_needs_m_multiple = 0,
    .max_zero = 3, .max_zero_pp = 1, .tp = 1, .tp_needs_data = 1, .sp = 0, .tp_innermost = 0,
    .v_why = "DeepSpeed's pipeline engine holds one contiguous stage per rank",
    .zero_pp_why = "DeepSpeed's pipeline engine takes ZeRO stages 0 and 1 only",
    .tp_why = "",
    .sp_why = "DeepSpeed does not split norms and dropouts along the sequence (Megatron-LM's "
              "--sequence-parallel; its Ulysses sequence parallelism is another scheme)",
    .cp_why = CP_MEGATRON_ONLY,
    .fp8_why = FP8_MEGATRON_ONLY,
    .p2p_blocks = SC_FW_P2P_BLOCKS,
    .p2p_why = "in every schedule: DeepSpeed's pipeline engine sends synchronously",
};

/* torch.distributed.pipelining (export_torch.c's commit): GPipe, 1F1B,
 * interleaved 1F1B and a zero-bubble schedule; pipeline() splits the traced
 * graph at any module name, passing every live tensor; the export writes
 * DDP (ZeRO 1: ZeroRedundancyOptimizer), and FSDP for ZeRO 2 and 3 without
 * a pipeline, but no FSDP around stages and no DTensor tensor parallelism.
 * Its schedules post sends with batch_isend_irecv and wait on them only
 * before the next: beside the compute. */
static const sc_framework torch_ = {
    .name = "torch", .title = "torch.distributed.pipelining", .cuts_in_layers = 1,
    .schedules = "gpipe,1f1b,interleaved,zb-h1", .runs_as = NULL,
    .virtual_stages = 1, .v_needs_m_multiple = 0,
    .max_zero = 3, .max_zero_pp = 1, .tp = 0, .tp_needs_data = 0, .sp = 0, .tp_innermost = 0,
    .zero_why = "",
    .zero_pp_why = "FSDP around pipeline stages",
    .tp_why = "for torch.distributed.pipelining (it would need a DTensor plan); export with "
              "--to megatron",
    .sp_why = "",
    .cp_why = CP_MEGATRON_ONLY,
    .fp8_why = FP8_MEGATRON_ONLY,
    .zero_by_export = 1, .tp_by_export = 1,
};

/* Everything the simulator models. */
static const sc_framework any = {
    .name = "any", .title = "any framework", .cuts_in_layers = 1,
    .schedules = "gpipe,1f1b,interleaved,zb-h1", .runs_as = NULL,
    .virtual_stages = 1, .v_needs_m_multiple = 0,
    .max_zero = 3, .max_zero_pp = 3, .tp = 1, .tp_needs_data = 0, .sp = 1, .cp = 1, .fp8 = 1,
    .tp_innermost = 0,
};

static const sc_framework *const rows[] = {&megatron, &deepspeed, &torch_, &any};

const sc_framework *const *sc_frameworks(int *n)
{
    *n = (int)SC_ARRAY_LEN(rows);
    return rows;
}

const sc_framework *sc_framework_find(const char *name)
{
    for (size_t i = 0; name && i < SC_ARRAY_LEN(rows); i++)
        if (!strcmp(rows[i]->name, name))
            return rows[i];
    return NULL;
}

const char *sc_framework_names(void) { return "megatron, deepspeed, torch, any"; }

const sc_framework *sc_framework_any(void) { return &any; }

int sc_framework_p2p_blocks(const sc_framework *fw, int pp, int v)
{
    if (!fw || pp < 2)
        return 0;
    return fw->p2p_blocks == SC_FW_P2P_BLOCKS || (fw->p2p_blocks == SC_FW_P2P_BLOCKS_V1 && v < 2);
}

int sc_framework_runs_schedule(const sc_framework *fw, const char *schedule)
{
    size_t n = strlen(schedule);
    for (const char *p = fw->schedules; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, schedule, n))
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

#define SAY(...) (why ? (void)snprintf(why, n, __VA_ARGS__) : (void)0)

sc_fw_verdict sc_framework_judge(const sc_framework *fw, const sc_model *m,
                                 const sc_fw_layout *l, char *why, size_t n)
{
    if (l->cp > 1 && !fw->cp) {
        SAY("context parallelism (the plan's cp %d): %s", l->cp, fw->cp_why);
        return SC_FW_UNWRITTEN;
    }
    if (l->fp8 && !fw->fp8) {
        SAY("fp8 training (the plan's fp8): %s", fw->fp8_why ? fw->fp8_why : "not written");
        return SC_FW_UNWRITTEN;
    }
    if (m && fw->needs_gpt) {
        char buf[512];
        int gpt = sc_export_is_gpt(m, buf, sizeof buf);
        if (gpt != 1) {
            SAY("%s", buf);
            return gpt < 0 ? SC_FW_NOMEM : SC_FW_CANNOT;
        }
    }
    const char *pl = l->placement ? l->placement : "tp,pp,dp";
    if (fw->tp_innermost && strncmp(pl, "tp", 2) != 0) {
        SAY("placement %s: %s orders ranks with tp innermost (tp,dp,pp by default, tp,pp,dp "
            "with --use-tp-pp-dp-mapping)",
            pl, fw->title);
        return SC_FW_CANNOT;
    }
    if (l->v > 1 && !fw->virtual_stages) {
        SAY("the interleaved schedule (v=%d chunks per rank): %s", l->v, fw->v_why);
        return SC_FW_CANNOT;
    }
    if (l->v > 1 && fw->v_needs_m_multiple && l->m > 0 && (l->m % l->pp != 0 || l->m < l->pp)) {
        SAY("the interleaved schedule with m=%d microbatches: %s needs a multiple of pp=%d", l->m,
            fw->title, l->pp);
        return SC_FW_CANNOT;
    }
    sc_fw_verdict as = SC_FW_RUNS;
    char as_why[256] = "";
    if (l->pp > 1 && l->schedule && !sc_framework_runs_schedule(fw, l->schedule)) {
        if (!fw->runs_as) {
            SAY("the %s schedule: %s runs %s only", l->schedule, fw->title, fw->schedules);
            return SC_FW_CANNOT;
        }
        as = SC_FW_RUNS_AS;
        snprintf(as_why, sizeof as_why, "the %s schedule: %s runs %s instead", l->schedule,
                 fw->title, fw->runs_as);
    }
    sc_fw_verdict zv = fw->zero_by_export ? SC_FW_UNWRITTEN : SC_FW_CANNOT;
    if (l->pp > 1 && l->zero > fw->max_zero_pp) {
        if (fw->zero_by_export)
            SAY("ZeRO-%d (%s)", l->zero, fw->zero_pp_why);
        else
            SAY("ZeRO-%d with pipeline parallelism (pp=%d): %s", l->zero, l->pp,
                fw->zero_pp_why);
        return zv;
    }
    if (l->zero > fw->max_zero) {
        SAY("ZeRO-%d (%s)", l->zero, fw->zero_why);
        return zv;
    }
    if (l->tp > 1 && !fw->tp) {
        SAY("tensor parallelism (tp=%d) %s", l->tp, fw->tp_why);
        return fw->tp_by_export ? SC_FW_UNWRITTEN : SC_FW_CANNOT;
    }
    if (l->tp > 1 && fw->tp_needs_data && m) {
        const char *names[3];
        int k = sc_model_tp_replicated(m, names, 3);
        if (k > 0) {
            SAY("tensor parallelism (tp=%d) of %s, which has no tensor-parallel data for %d "
                "module%s (%s%s%s%s): the plan keeps them whole on every tp rank, %s shards "
                "its own layers",
                l->tp, m->name, k, k == 1 ? "" : "s", names[0], k > 1 ? ", " : "",
                k > 1 ? names[1] : "", k > 2 ? ", ..." : "", fw->title);
            return SC_FW_CANNOT;
        }
    }
    if (l->sp && !fw->sp) {
        SAY("sequence parallelism: %s", fw->sp_why);
        return SC_FW_CANNOT;
    }
    if (as != SC_FW_RUNS)
        SAY("%s", as_why);
    return as;
}

void sc_framework_cut_why(const sc_framework *fw, const sc_model *m, int stage, int leaf,
                          char *why, size_t n)
{
    const sc_module *layer = sc_partition_layer_of(m->leaves[leaf]);
    SAY("stage %d begins at %s, inside the layer %s (%s cuts only between layers)", stage + 1,
        m->leaves[leaf]->name, layer ? layer->name : "?", fw->title);
}
