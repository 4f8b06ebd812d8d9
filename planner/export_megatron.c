/* export_megatron.c - a plan as Megatron-LM's launch: megatron_torchrun.sh
 * (torchrun on each node, running pretrain_gpt.py with the plan's flags)
 * and megatron_sbatch.sh (the same under Slurm).
 *
 * Flags were checked against NVIDIA/Megatron-LM at commit d98e8a6
 * (git describe core_v0.15.0rc7-2333-gd98e8a64dd, 2026-08-22):
 * megatron/training/arguments.py and the dataclasses it turns into flags
 * (megatron/core/model_parallel_config.py, transformer/transformer_config.py,
 * training/config/), parallel_state.py for the rank order,
 * pipeline_parallel_layer_layout.py for --pipeline-model-parallel-layout,
 * pipeline_parallel/schedules.py for the schedules.
 *
 * The mapping:
 *   - the model must be a GPT-style decoder (ex_gpt: identical blocks, a
 *     token embedding, an LM head); anything else is refused;
 *   - stages cut between layers; equal layers per stage need only
 *     --pipeline-model-parallel-size (and --num-layers-per-virtual-pipeline-
 *     stage for interleaved); an uneven first and/or last stage with equal
 *     middle ones, v = 1, uses --decoder-first/last-pipeline-num-layers;
 *     any other partition --pipeline-model-parallel-layout ("Et*6|t*6|..L",
 *     stage i = chunk·pp + rank, as the plan numbers them);
 *   - placement tp,pp,dp is --use-tp-pp-dp-mapping (tp-cp-ep-pp-dp),
 *     tp,dp,pp Megatron's default order (tp-cp-ep-dp-pp); others refused;
 *   - ZeRO 1 is --use-distributed-optimizer; ZeRO 2 Megatron-FSDP's
 *     optim_grads (gradients reduce-scattered every microbatch and kept
 *     sharded, as the plan lowers ZeRO 2), 3 Megatron-FSDP's
 *     optim_grads_params, both when pp = 1 and refused with pipeline
 *     parallelism (the distributed optimizer keeps the whole gradient
 *     buffer and reduces once: it is ZeRO 1);
 *   - schedules: 1f1b and interleaved are Megatron's own; gpipe and zb-h1
 *     run as 1F1B, said in the notes.
 */
#include "export_int.h"
#include "json.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MEGATRON_CHECKED                                                                   \
    "NVIDIA/Megatron-LM commit d98e8a64ddf34856e74b24714e3bedb2f5a39553 (git describe "    \
    "core_v0.15.0rc7-2333-gd98e8a64dd, 2026-08-22): megatron/training/arguments.py and "    \
    "the config dataclasses it builds flags from"

enum { G_MODEL, G_PARALLEL, G_BATCH, G_MEMORY, G_PRECISION, G_N };
static const char *const group_names[G_N] = {"MODEL_ARGS", "PARALLEL_ARGS", "BATCH_ARGS",
                                             "MEMORY_ARGS", "PRECISION_ARGS"};

typedef struct margs {
    sc_buf group[G_N];
    cJSON *json; /* settings.args: flag -> value (true for a switch) */
    int oom;
} margs;

static void arg_num(margs *a, int g, const char *flag, double v)
{
    sc_buf_printf(&a->group[g], "    %s %.0f\n", flag, v);
    sc_jadd_num(a->json, flag, v, &a->oom);
}

static void arg_str(margs *a, int g, const char *flag, const char *v)
{
    sc_buf_printf(&a->group[g], "    %s %s\n", flag, v);
    sc_jadd_str(a->json, flag, v, &a->oom);
}

static void arg_flag(margs *a, int g, const char *flag)
{
    sc_buf_printf(&a->group[g], "    %s\n", flag);
    sc_jadd_bool(a->json, flag, 1, &a->oom);
}

/* Megatron-FSDP runs ZeRO 3 (optim_grads_params) and 2 (optim_grads), with
 * no pipeline (framework.c refuses one); the distributed optimizer ZeRO 1. */
static int megatron_fsdp(const sc_plan *p)
{
    return p->zero >= 2;
}

/* The pipeline flags for the plan's partition (see the top of the file). */
static sc_status pipeline_args(const sc_export_ctx *x, sc_export *e, margs *a)
{
    const sc_plan *p = x->plan;
    int S = x->n_stages, cnt0 = ex_stage_blocks(x, 0);
    int even = 1, mid_even = 1, zero = 0;
    for (int s = 0; s < S; s++) {
        int c = ex_stage_blocks(x, s);
        even &= c == cnt0;
        zero |= c == 0;
        if (s > 1 && s < S - 1)
            mid_even &= c == ex_stage_blocks(x, 1);
    }
    arg_num(a, G_PARALLEL, "--pipeline-model-parallel-size", p->pp);
    if (S == 1)
        return SC_OK;
    /* pipeline messages: Megatron-LM overlaps them with the interleaved
     * schedule's chunks unless told not to, and blocks on them otherwise */
    if (p->pp > 1 && p->v > 1 && !p->overlap_p2p_comm)
        arg_flag(a, G_PARALLEL, "--no-overlap-p2p-communication");
    if (p->pp > 1 && p->v == 1 && p->overlap_p2p_comm &&
        ex_note(e, "Megatron-LM's non-interleaved schedule waits for each pipeline message; the "
                   "plan has them beside the compute (overlap_p2p_comm), so its step is "
                   "optimistic by their time (plan with --framework megatron, or --overlap-p2p-comm 0, "
                   "to predict it)"))
        return SC_ENOMEM;
    if (even && !zero) {
        if (p->v > 1)
            arg_num(a, G_PARALLEL, "--num-layers-per-virtual-pipeline-stage", cnt0);
    } else if (p->v == 1 && mid_even && !zero) {
        int first = ex_stage_blocks(x, 0), last = ex_stage_blocks(x, S - 1);
        int mid = S > 2 ? ex_stage_blocks(x, 1) : -1;
        if (first != mid)
            arg_num(a, G_PARALLEL, "--decoder-first-pipeline-num-layers", first);
        if (last != mid)
            arg_num(a, G_PARALLEL, "--decoder-last-pipeline-num-layers", last);
    } else {
        sc_buf l = {0};
        for (int s = 0; s < S; s++) {
            int c = ex_stage_blocks(x, s);
            sc_buf_printf(&l, "%s%s", s ? "|" : "", s == 0 ? "E" : "");
            if (c == 1)
                sc_buf_printf(&l, "t");
            else if (c > 1)
                sc_buf_printf(&l, "t*%d", c);
            if (s == S - 1)
                sc_buf_printf(&l, "L");
        }
        if (l.oom) {
            sc_buf_free(&l);
            return SC_ENOMEM;
        }
        const char *layout = l.s ? l.s : ""; /* S > 1 stages: never empty */
        sc_buf_printf(&a->group[G_PARALLEL], "    --pipeline-model-parallel-layout \"%s\"\n",
                      layout);
        sc_jadd_str(a->json, "--pipeline-model-parallel-layout", layout, &a->oom);
        sc_buf_free(&l);
        for (int s = 0; s < S; s++)
            if (ex_stage_blocks(x, s) == 0 && s > 0 && s < S - 1)
                if (ex_note(e, "stage %d holds no layer (only %s): Megatron-LM runs it as an "
                               "empty stage and puts the final norm with the LM head on the "
                               "last stage",
                            s + 1, x->units[x->stage_unit[s]].mod->name))
                    return SC_ENOMEM;
    }
    /* a non-block unit after the last layer on a stage before the last one
     * (the final norm): Megatron keeps it with the LM head */
    for (int s = 0; s < S - 1; s++)
        for (int u = x->stage_unit[s]; u < x->stage_unit[s + 1]; u++)
            if (x->units[u].block < 0 && u > 0 && x->units[u - 1].block >= 0 &&
                ex_stage_blocks(x, s) > 0)
                if (ex_note(e, "%s sits on stage %d in the plan; Megatron-LM runs it on the "
                               "last stage, with the LM head",
                            x->units[u].mod->name, s + 1))
                    return SC_ENOMEM;
    return SC_OK;
}

static sc_status notes_and_args(const sc_export_ctx *x, sc_export *e, margs *a)
{
    const sc_plan *p = x->plan;
    const ex_gpt *g = &x->gpt;
    sc_status st = SC_OK;

    arg_num(a, G_MODEL, "--num-layers", g->layers);
    arg_num(a, G_MODEL, "--hidden-size", g->hidden);
    arg_num(a, G_MODEL, "--num-attention-heads", g->heads);
    if (g->kv_groups < g->heads) { /* grouped-query attention */
        arg_flag(a, G_MODEL, "--group-query-attention");
        arg_num(a, G_MODEL, "--num-query-groups", g->kv_groups);
    }
    if (g->kv * g->heads != g->hidden)
        arg_num(a, G_MODEL, "--kv-channels", g->kv);
    arg_num(a, G_MODEL, "--ffn-hidden-size", g->ffn);
    if (g->mlp == EX_MLP_SWIGLU) /* gate and up each ffn wide, as the model's 3·h·f */
        arg_flag(a, G_MODEL, "--swiglu");
    else if (g->mlp == EX_MLP_RELU2)
        arg_flag(a, G_MODEL, "--squared-relu");
    if (g->rmsnorm)
        arg_str(a, G_MODEL, "--normalization", "RMSNorm");
    if (g->no_bias)
        arg_flag(a, G_MODEL, "--disable-bias-linear");
    arg_num(a, G_MODEL, "--seq-length", g->seq);
    /* a learned table as long as the model's (a GPT-2 traced at 512 tokens
     * keeps its 1024 rows), so the parameters are the plan's */
    arg_num(a, G_MODEL, "--max-position-embeddings", g->pos_rows > g->seq ? g->pos_rows : g->seq);
    if (g->rope && !g->pos_embed) {
        arg_str(a, G_MODEL, "--position-embedding-type", "rope");
        st = st ? st : ex_note(e, "rotary positions: their base and scaling are not part of the "
                                  "model, so Megatron-LM's defaults apply (--rotary-base 10000, "
                                  "no scaling); set the model's (Llama 3: --rotary-base 500000 "
                                  "--use-rope-scaling)");
    } else if (!g->pos_embed) {
        arg_str(a, G_MODEL, "--position-embedding-type", "none");
        st = st ? st : ex_note(e, "the model's embedding holds no learned position table: the "
                                  "script sets --position-embedding-type none (use rope if the "
                                  "model is rotary)");
    }
    if (!g->tied)
        arg_flag(a, G_MODEL, "--untie-embeddings-and-output-weights");
    /* the loss over the logits the plan priced (model gen --cross_entropy) */
    if (g->ce && strcmp(g->ce, "megatron")) {
        arg_flag(a, G_MODEL, "--cross-entropy-loss-fusion");
        if (!strcmp(g->ce, "xentropy"))
            st = st ? st : ex_note(e, "the plan priced apex's one-kernel cross-entropy "
                                      "(xentropy); Megatron-LM has none, so the script takes its "
                                      "fused loss (--cross-entropy-loss-fusion), which passes over "
                                      "the logits more often: the last stage is slower than "
                                      "planned");
    }
    /* Megatron-LM drops out at 0.1 unless told: a model whose kernels run
     * no dropout (Llama's; Megatron's Llama examples pass the same) */
    if (x->dropout == 0) {
        arg_num(a, G_MODEL, "--attention-dropout", 0);
        arg_num(a, G_MODEL, "--hidden-dropout", 0);
    }
    /* Megatron-Core's default (--attention-backend auto) lets Transformer
     * Engine pick a fused kernel, which keeps no scores: the run of a plan
     * priced unfused would hold less memory and step faster than planned */
    if (x->attention && p->attn == SC_ATTN_UNFUSED) {
        arg_str(a, G_MODEL, "--attention-backend", "unfused");
        st = st ? st : ex_note(e, "the plan priced attention unfused, its scores kept for the "
                                  "backward: --attention-backend unfused runs Transformer "
                                  "Engine's unfused attention as planned (plan with --attn "
                                  "flash for the fused kernels Megatron-Core picks by default)");
    }

    arg_num(a, G_PARALLEL, "--tensor-model-parallel-size", p->tp);
    if (p->cp > 1) {
        /* Megatron-Core's order tp-cp-ep-dp-pp keeps each rank's cp index
         * next to its tp index, as the plan places it (sim/step.h) */
        arg_num(a, G_PARALLEL, "--context-parallel-size", p->cp);
        st = st ? st : ex_note(e, "context parallelism runs on Transformer Engine's fused "
                                  "attention (the default --transformer-impl); the plan's "
                                  "gradients are reduced over the dp·cp ranks, as Megatron "
                                  "reduces them");
    }
    if (p->sp)
        arg_flag(a, G_PARALLEL, "--sequence-parallel");
    if (p->tp_comm_overlap) {
        /* validate_args: "Tensor parallel communication/GEMM overlap can happen
         * only when sequence parallelism is enabled" (the plan loader refuses
         * the key without sp); initialize.py builds Transformer Engine's
         * userbuffers */
        arg_flag(a, G_PARALLEL, "--tp-comm-overlap");
        st = st ? st : ex_note(e, "--tp-comm-overlap needs Transformer Engine (the default "
                                  "--transformer-impl) and its userbuffers, which exchange over "
                                  "NVLink: keep each tp group inside a node");
    }
    if (!st)
        st = pipeline_args(x, e, a);
    if (x->order[0] == 0 && x->order[1] == 1)
        arg_flag(a, G_PARALLEL, "--use-tp-pp-dp-mapping");

    arg_num(a, G_BATCH, "--micro-batch-size", p->mbs);
    arg_num(a, G_BATCH, "--global-batch-size", (double)p->dp * p->m * p->mbs);

    if (p->recompute == SC_RECOMPUTE_SELECTIVE) {
        arg_str(a, G_MEMORY, "--recompute-granularity", "selective");
    } else if (p->recompute == SC_RECOMPUTE_FULL) {
        arg_str(a, G_MEMORY, "--recompute-granularity", "full");
        arg_str(a, G_MEMORY, "--recompute-method", "uniform");
        arg_num(a, G_MEMORY, "--recompute-num-layers", 1);
    }
    double eb = ex_elem_bytes(x), bucket = floor(p->bucket_bytes / eb);
    if (megatron_fsdp(p)) {
        arg_flag(a, G_MEMORY, "--use-megatron-fsdp");
        arg_str(a, G_MEMORY, "--data-parallel-sharding-strategy",
                p->zero == 3 ? "optim_grads_params" : "optim_grads");
        /* validate_args: "Megatron-FSDP requires the `fsdp_dtensor`
         * checkpointing format" (arguments.py at the checked commit) */
        arg_str(a, G_MEMORY, "--ckpt-format", "fsdp_dtensor");
        if (p->zero == 3)
            st = st ? st
                    : ex_note(e, "ZeRO-3 runs as Megatron-FSDP (--use-megatron-fsdp, sharding "
                                 "optim_grads_params), which gathers parameters per module "
                                 "rather than per stage as the plan models");
        else
            st = st ? st
                    : ex_note(e, "ZeRO-2 runs as Megatron-FSDP (--use-megatron-fsdp, sharding "
                                 "optim_grads): it reduce-scatters every microbatch's "
                                 "gradients and keeps their shard, and gathers the updated "
                                 "parameters after the optimizer, as the plan models");
        /* MegatronFSDP.__init__ (megatron_fsdp.py at the checked commit)
         * turns overlap_grad_reduce on whenever gradients are sharded, and
         * overlap_param_gather under optim_grads_params; under optim_grads
         * the gather after the optimizer follows --overlap-param-gather,
         * which validate_args takes only beside --overlap-grad-reduce: the
         * script says the overlap it gets */
        if (p->dp * p->cp > 1) {
            arg_flag(a, G_MEMORY, "--overlap-grad-reduce");
            if (!p->overlap_grad_reduce)
                st = st ? st
                        : ex_note(e, "Megatron-FSDP always reduce-scatters beside the backward, "
                                     "where the plan reduces after it (overlap_grad_reduce "
                                     "false)");
            if (p->zero == 2 && p->overlap_param_gather)
                arg_flag(a, G_MEMORY, "--overlap-param-gather");
        }
    } else {
        if (p->zero >= 1)
            arg_flag(a, G_MEMORY, "--use-distributed-optimizer");
        if (p->dp * p->cp > 1) {
            /* the plan's overlap_grad_reduce: Megatron-LM reduces after the
             * backward unless told to overlap */
            if (p->overlap_grad_reduce)
                arg_flag(a, G_MEMORY, "--overlap-grad-reduce");
            if (p->overlap_param_gather)
                arg_flag(a, G_MEMORY, "--overlap-param-gather");
        }
        /* the plan's deferred output-layer weight gradients (ModelParallelConfig's
         * defer_embedding_wgrad_compute, wgrad_deferral_limit: arguments of the
         * same names) */
        if (p->defer_embedding_wgrad) {
            arg_flag(a, G_PARALLEL, "--defer-embedding-wgrad-compute");
            if (p->wgrad_deferral_limit > 0)
                arg_num(a, G_PARALLEL, "--wgrad-deferral-limit", p->wgrad_deferral_limit);
        }
        if (p->dp * p->cp > 1) {
            arg_num(a, G_MEMORY, "--ddp-bucket-size", bucket);
            st = st ? st : ex_note(e, "data-parallel buckets hold %.0f parameters (the plan's "
                                      "%.0f-byte buckets; --ddp-bucket-size counts parameters, "
                                      "not bytes)",
                                   bucket, p->bucket_bytes);
        }
    }

    switch (x->model->dtype) {
    case SC_BF16:
        arg_flag(a, G_PRECISION, "--bf16");
        if (p->dp * p->cp > 1 && megatron_fsdp(p)) {
            /* Megatron-FSDP accumulates and reduces in the parameters'
             * dtype unless told (param_and_grad_buffer.py's
             * _resolve_group_grad_dtype at the checked commit) */
            if (p->grad_reduce_in_fp32)
                arg_str(a, G_PRECISION, "--megatron-fsdp-main-grads-dtype", "fp32");
        } else if (p->dp * p->cp > 1 && !p->grad_reduce_in_fp32) {
            arg_flag(a, G_PRECISION, "--grad-reduce-in-bf16");
            st = st ? st : ex_note(e, "gradients are reduced in bf16 as the plan models "
                                      "(--grad-reduce-in-bf16); without it Megatron-LM reduces "
                                      "them in fp32, twice the bytes");
        }
        break;
    case SC_FP16:
        arg_flag(a, G_PRECISION, "--fp16");
        /* fp16 accumulates and reduces in fp16 unless told otherwise */
        if (p->grad_reduce_in_fp32)
            arg_flag(a, G_PRECISION, "--accumulate-allreduce-grads-in-fp32");
        break;
    case SC_FP8:
        arg_flag(a, G_PRECISION, "--bf16");
        arg_str(a, G_PRECISION, "--fp8-format", "hybrid");
        st = st ? st : ex_note(e, "fp8 runs through Transformer Engine (--fp8-format hybrid) "
                                  "with bf16 for what is not a GEMM");
        break;
    case SC_TF32:
        st = st ? st : ex_note(e, "tf32: Megatron-LM trains in fp32; TF32 GEMMs follow "
                                  "PyTorch's torch.backends.cuda.matmul.allow_tf32");
        break;
    default:
        break;
    }
    /* the plan's fp8 training (a 16-bit model's GEMMs in fp8, as the plan
     * prices them): Transformer Engine's delayed scaling with the HYBRID
     * format (E4M3 forward, E5M2 gradients), the amax history and algorithm
     * NVIDIA's published recipes use (DGX Cloud Benchmarking 24.11) */
    if (p->fp8 && x->model->dtype != SC_FP8) {
        arg_str(a, G_PRECISION, "--fp8-format", "hybrid");
        arg_num(a, G_PRECISION, "--fp8-amax-history-len", 1024);
        arg_str(a, G_PRECISION, "--fp8-amax-compute-algo", "max");
        st = st ? st : ex_note(e, "fp8: the attention and MLP GEMMs run in fp8 through "
                                  "Transformer Engine (--fp8-format hybrid, delayed scaling), "
                                  "as the plan prices them; the LM head and the rest in %s",
                               sc_dtype_name(x->model->dtype));
    }

    /* the vocabulary Megatron pads to (build_tokenizer.py, vocab_size_with_padding) */
    long mult = 128L * p->tp, padded = (g->vocab + mult - 1) / mult * mult;
    if (padded != g->vocab && !st)
        st = ex_note(e, "the vocabulary is padded from %d to %ld (a multiple of 128 x tp %d): "
                        "the embedding%s holds %.0f more parameters than the plan counts",
                     g->vocab, padded, p->tp, g->tied ? "" : " and the LM head each",
                     (double)(padded - g->vocab) * g->hidden);

    if (!st && !strcmp(p->schedule, "gpipe") && p->pp > 1)
        st = ex_note(e, "Megatron-LM has no GPipe schedule: it runs 1F1B, with the same bubble "
                        "and at most pp = %d microbatches' activations held at once instead of "
                        "m = %d",
                     p->pp, p->m);
    if (!st && !strcmp(p->schedule, "zb-h1") && p->pp > 1)
        st = ex_note(e, "Megatron-LM has no zero-bubble schedule (none in the checked source): "
                        "it runs 1F1B, without splitting the backward, so the bubble is that of "
                        "1F1B, about three times ZB-H1's (Qi et al. 2023)");
    if (!st && p->tp > 1 && !p->sp)
        st = ex_note(e, "--sequence-parallel is off, as in the plan (tp allreduces); turning "
                        "it on keeps the bytes and cuts activation memory");
    return st ? st : a->oom ? SC_ENOMEM : SC_OK;
}

static void header(const sc_export_ctx *x, const sc_export *e, sc_buf *b, const char *what)
{
    sc_buf_printf(b, "# %s\n# Written by stagecraft export from\n", what);
    ex_plan_line(x, b, "#   ");
    ex_wrap(b, "# ", "#   ", "Flags checked against " MEGATRON_CHECKED ".");
    sc_buf_printf(b, "#\n");
    if (e->n_notes) {
        sc_buf_printf(b, "# What Megatron-LM does differently from the plan:\n");
        ex_notes_comment(e, b, "#");
    } else {
        sc_buf_printf(b, "# Megatron-LM runs the plan as it stands.\n");
    }
}

static sc_status build(const sc_export_ctx *x, sc_export *e, sc_error *err)
{
    const sc_plan *p = x->plan;
    /* a GPT-style model, placement, cuts, ZeRO with a pipeline,
     * interleaving: framework.h's table, judged before (export.c) */
    assert(x->gpt.ok);
    assert(x->order[0] == 0);
    sc_status st;
    margs a = {0};
    cJSON *margs_json = sc_jadd_obj(e->settings, "args", &a.oom);
    a.json = margs_json;
    if (!a.json)
        return SC_ENOMEM;
    st = notes_and_args(x, e, &a);

    sc_buf b = {0};
    if (!st) {
        sc_buf_printf(&b, "#!/usr/bin/env bash\n");
        header(x, e, &b, "Megatron-LM launch of a stagecraft plan: torchrun on each node.");
        sc_buf_printf(
            &b,
            "#\n"
            "# Run it once on every node (NODE_RANK 0..%d), MEGATRON pointing at a Megatron-LM\n"
            "# checkout:\n"
            "#   NODE_RANK=0 MASTER_ADDR=<node 0's address> MEGATRON=/path/to/Megatron-LM \\\n"
            "#       bash megatron_torchrun.sh\n"
            "# or under Slurm: sbatch megatron_sbatch.sh (from this folder).\n"
            "# Data: without DATA_PATH, Megatron's mock data and NullTokenizer with the model's\n"
            "# vocabulary (a throughput run); set DATA_PATH (an indexed dataset prefix),\n"
            "# VOCAB_FILE and MERGE_FILE (GPT-2 BPE) for real data. TRAIN_ITERS and LR are not\n"
            "# part of the plan.\n"
            "set -euo pipefail\n\n"
            "MEGATRON=${MEGATRON:-Megatron-LM}\n"
            "NNODES=%d\nGPUS_PER_NODE=%d\n\n",
            x->nodes - 1, x->nodes, x->per_node);
        /* validate_args (arguments.py at the checked commit): before
         * Blackwell, tp without Megatron-FSDP asserts one CUDA connection
         * (kernels and tp collectives in issue order); Megatron-FSDP asserts
         * the opposite */
        if (p->tp > 1 && !megatron_fsdp(p))
            sc_buf_printf(&b, "# tensor parallelism: Megatron-LM asks for one CUDA connection "
                              "before Blackwell\n"
                              "export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}"
                              "\n\n");
        for (int g = 0; g < G_N; g++) {
            sc_buf_printf(&b, "%s=(\n%s)\n", group_names[g], a.group[g].s ? a.group[g].s : "");
            if (a.group[g].oom)
                b.oom = 1;
        }
        sc_buf_printf(
            &b,
            "if [ -n \"${DATA_PATH:-}\" ]; then\n"
            "    DATA_ARGS=(--data-path \"$DATA_PATH\" --tokenizer-type GPT2BPETokenizer\n"
            "               --vocab-file \"${VOCAB_FILE:?set VOCAB_FILE}\"\n"
            "               --merge-file \"${MERGE_FILE:?set MERGE_FILE}\")\n"
            "else\n"
            "    DATA_ARGS=(--mock-data --tokenizer-type NullTokenizer --vocab-size %d)\n"
            "fi\n"
            "TRAINING_ARGS=(--train-iters \"${TRAIN_ITERS:-100}\" --lr \"${LR:-1.0e-4}\" "
            "--log-interval 1)\n\n"
            "exec torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
            "    --node-rank \"${NODE_RANK:-0}\" --master-addr \"${MASTER_ADDR:-localhost}\" \\\n"
            "    --master-port \"${MASTER_PORT:-6000}\" \\\n"
            "    \"$MEGATRON/pretrain_gpt.py\" \\\n"
            "    \"${MODEL_ARGS[@]}\" \"${PARALLEL_ARGS[@]}\" \"${BATCH_ARGS[@]}\" "
            "\"${MEMORY_ARGS[@]}\" \\\n"
            "    \"${PRECISION_ARGS[@]}\" \"${DATA_ARGS[@]}\" \"${TRAINING_ARGS[@]}\" \"$@\"\n",
            x->gpt.vocab);
        st = ex_file(e, "megatron_torchrun.sh", &b);
    }
    if (!st) {
        sc_buf_printf(&b,
                      "#!/usr/bin/env bash\n"
                      "#SBATCH --job-name=stagecraft-%s\n"
                      "#SBATCH --nodes=%d\n"
                      "#SBATCH --ntasks-per-node=1\n"
                      "#SBATCH --gpus-per-node=%d\n"
                      "#SBATCH --exclusive\n",
                      p->model_name, x->nodes, x->per_node);
        header(x, e, &b, "Megatron-LM launch of a stagecraft plan under Slurm.");
        sc_buf_printf(&b,
                      "#\n"
                      "# Submit from the folder that holds megatron_torchrun.sh (which has the\n"
                      "# flags): sbatch megatron_sbatch.sh. One task per node runs torchrun.\n"
                      "set -euo pipefail\n\n"
                      "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
                      "export MASTER_ADDR MASTER_PORT=${MASTER_PORT:-6000}\n"
                      "srun --export=ALL bash -c 'NODE_RANK=$SLURM_NODEID exec bash "
                      "\"$SLURM_SUBMIT_DIR/megatron_torchrun.sh\"'\n");
        st = ex_file(e, "megatron_sbatch.sh", &b);
    }
    sc_buf_free(&b);
    for (int g = 0; g < G_N; g++)
        sc_buf_free(&a.group[g]);
    if (!st) {
        int oom = 0;
        sc_jadd_num(e->settings, "nodes", x->nodes, &oom);
        sc_jadd_num(e->settings, "gpus_per_node", x->per_node, &oom);
        sc_jadd_str(e->settings, "entry", "pretrain_gpt.py", &oom);
        if (oom)
            st = SC_ENOMEM;
    }
    return st;
}

const sc_export_target sc_export_megatron = {
    .name = "megatron",
    .framework = "Megatron-LM",
    .description = "launch scripts (torchrun per node, sbatch) with Megatron-LM's flags",
    .checked = MEGATRON_CHECKED,
    .build = build,
};
