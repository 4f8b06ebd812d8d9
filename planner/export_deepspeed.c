/* export_deepspeed.c - a plan as DeepSpeed's run: ds_config.json (batch
 * sizes, ZeRO stage, precision, activation checkpointing) and
 * deepspeed_pipeline.py (the PipelineModule arguments: the layer list the
 * plan cuts, its stage boundaries as explicit layer indices, the process
 * topology in the plan's rank order, tied layers, the config).
 *
 * Checked against microsoft/DeepSpeed commit 38327e0 (git describe
 * v0.16.4-6-g38327e07f, version.txt 0.16.5, 2025-02-21):
 * deepspeed/runtime/pipe/module.py (PipelineModule, its partition methods,
 * _partition_layers, _set_bounds), pipe/engine.py (ZeRO 2 and 3 refused with
 * pipeline parallelism; TrainSchedule), pipe/topology.py (ProcessTopology
 * axes), runtime/config.py (train_batch_size = micro batch x accumulation x
 * data-parallel size) and docs/_pages/config-json.md.
 *
 * DeepSpeed's PipelineModule partitions by "uniform", "parameters" or
 * "type:REGEX", none of which takes explicit boundaries: the generated file
 * overrides PipelineModule._partition_layers (a private method) with the
 * plan's boundaries and says so.
 *
 * Layers: each outermost block is one PipelineModule layer, and each leaf
 * outside a block one more (embedding, final norm, head), in execution
 * order; stage boundaries must fall between them.
 */
#include "export_int.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEEPSPEED_CHECKED                                                                  \
    "microsoft/DeepSpeed commit 38327e07f6cd39b63418f60cedd1651b0be3e7c3 (git describe "   \
    "v0.16.4-6-g38327e07f, 0.16.5 in development, 2025-02-21): deepspeed/runtime/pipe/"     \
    "module.py, pipe/engine.py, pipe/topology.py, runtime/config.py, "                     \
    "docs/_pages/config-json.md"

static const char *axis_name(int a)
{
    static const char *const ds[] = {"model", "pipe", "data"};
    return ds[a];
}

static int axis_dim(const sc_plan *p, int a)
{
    return a == 0 ? p->tp : a == 1 ? p->pp : p->dp;
}

static cJSON *ds_config(const sc_export_ctx *x, sc_export *e, sc_status *st)
{
    const sc_plan *p = x->plan;
    int oom = 0;
    cJSON *c = cJSON_CreateObject();
    if (!c) {
        *st = SC_ENOMEM;
        return NULL;
    }
    sc_jadd_num(c, "train_batch_size", (double)p->dp * p->m * p->mbs, &oom);
    sc_jadd_num(c, "train_micro_batch_size_per_gpu", p->mbs, &oom);
    sc_jadd_num(c, "gradient_accumulation_steps", p->m, &oom);
    sc_dtype dt = x->model->dtype;
    if (dt == SC_BF16 || dt == SC_FP8) {
        cJSON *b = sc_jadd_obj(c, "bf16", &oom);
        sc_jadd_bool(b, "enabled", 1, &oom);
    } else if (dt == SC_FP16) {
        cJSON *f = sc_jadd_obj(c, "fp16", &oom);
        sc_jadd_bool(f, "enabled", 1, &oom);
        sc_jadd_num(f, "loss_scale", 0, &oom);
    }
    /* the plan's fp32 gradient reduction (grad_reduce_in_fp32) */
    if (sc_cost_grad_reduce_widens(dt, p->grad_reduce_in_fp32))
        sc_jadd_str(c, "communication_data_type", "fp32", &oom);
    /* the Adam states the plan's memory counts; without an optimizer in the
     * config (or passed to initialize) DeepSpeed's engine refuses backward */
    cJSON *o = sc_jadd_obj(c, "optimizer", &oom);
    sc_jadd_str(o, "type", "AdamW", &oom);
    cJSON *op = sc_jadd_obj(o, "params", &oom);
    sc_jadd_num(op, "lr", 1e-4, &oom);
    cJSON *z = sc_jadd_obj(c, "zero_optimization", &oom);
    sc_jadd_num(z, "stage", p->zero, &oom);
    if (p->zero >= 1) {
        double elems = floor(p->bucket_bytes / ex_elem_bytes(x));
        sc_jadd_bool(z, "overlap_comm", p->pp == 1, &oom);
        sc_jadd_num(z, "reduce_bucket_size", elems, &oom);
        sc_jadd_num(z, "allgather_bucket_size", elems, &oom);
        if (!*st)
            *st = ex_note(e, "ZeRO buckets hold %.0f elements (the plan's %.0f-byte buckets; "
                             "DeepSpeed's bucket sizes count elements)",
                          elems, p->bucket_bytes);
    }
    if (p->recompute == SC_RECOMPUTE_FULL) {
        cJSON *a = sc_jadd_obj(c, "activation_checkpointing", &oom);
        sc_jadd_bool(a, "partition_activations", 0, &oom);
        sc_jadd_bool(a, "cpu_checkpointing", 0, &oom);
        sc_jadd_bool(a, "contiguous_memory_optimization", 0, &oom);
    }
    if (oom) {
        cJSON_Delete(c);
        *st = SC_ENOMEM;
        return NULL;
    }
    return c;
}

static sc_status notes(const sc_export_ctx *x, sc_export *e)
{
    const sc_plan *p = x->plan;
    sc_status st = SC_OK;
    if (p->pp > 1 && !strcmp(p->schedule, "gpipe"))
        st = ex_note(e, "DeepSpeed's pipeline engine runs its own 1F1B-style TrainSchedule, not "
                        "GPipe: the same bubble, with at most pp = %d microbatches' activations "
                        "held at once instead of m = %d",
                     p->pp, p->m);
    if (!st && p->pp > 1 && !strcmp(p->schedule, "zb-h1"))
        st = ex_note(e, "DeepSpeed's pipeline engine runs its own 1F1B-style TrainSchedule, not "
                        "ZB-H1: the backward is not split, so the bubble is that of 1F1B, about "
                        "three times ZB-H1's (Qi et al. 2023)");
    if (!st && p->dp > 1 && (p->pp > 1 || p->zero == 0))
        st = ex_note(e, "data-parallel gradients are reduced after the last microbatch's "
                        "backward (%s), not overlapped with it as the plan models",
                     p->pp > 1 ? "the pipeline engine's ReduceGrads step"
                               : "at the accumulation boundary");
    if (!st && p->dp > 1 && p->zero == 0)
        st = ex_note(e, "without ZeRO, DeepSpeed uses its own gradient bucket size, not the "
                        "plan's %.0f bytes",
                     p->bucket_bytes);
    if (!st && p->tp > 1)
        st = ex_note(e, "tp = %d: the topology reserves a model-parallel axis, but DeepSpeed "
                        "does not split layers itself: the layers must be tensor-parallel "
                        "(as Megatron-DeepSpeed's are)",
                     p->tp);
    if (!st && p->defer_embedding_wgrad)
        st = ex_note(e, "the plan defers the output layer's weight gradients to the pipeline "
                        "flush (Megatron-Core's --defer-embedding-wgrad-compute); DeepSpeed's "
                        "engine computes them in each backward, so its last stage is slower "
                        "than the plan's");
    if (!st && x->attention)
        st = ex_note(e, "the layers are yours: the plan priced their attention %s (%s)",
                     x->attention,
                     p->attn == SC_ATTN_FLASH
                         ? "a fused kernel that keeps no scores, as "
                           "F.scaled_dot_product_attention's flash kernel"
                         : "its own matmul, mask and softmax kernels, the scores kept for the "
                           "backward");
    if (!st && p->recompute == SC_RECOMPUTE_SELECTIVE)
        st = ex_note(e, "selective recompute: DeepSpeed checkpoints whole layers or none; this "
                        "export checkpoints none, so the attention scores are kept unless the "
                        "layers' attention recomputes them itself (flash attention does)");
    const sc_model *m = x->model;
    for (int i = 0; !st && i < m->n_modules; i++) {
        const sc_module *mod = m->modules[i];
        if (mod->n_inputs == 0)
            continue;
        const sc_module *src = sc_model_find(m, mod->inputs[0]);
        if (src && sc_partition_stage_of(&p->partition, sc_module_last_leaf(src)) !=
                       sc_partition_stage_of(&p->partition, sc_module_first_leaf(mod))) {
            st = ex_note(e, "%s consumes %s's output on a later stage: DeepSpeed passes only "
                            "each layer's output to the next, so the layers in between must "
                            "carry it along (a tuple of tensors; the plan counts the same "
                            "bytes)",
                         mod->name, mod->inputs[0]);
            break;
        }
    }
    if (!st && x->model->dtype == SC_FP8)
        st = ex_note(e, "fp8: the config trains in bf16; fp8 GEMMs need Transformer Engine "
                        "layers in the model");
    if (!st && x->model->dtype == SC_TF32)
        st = ex_note(e, "tf32: the config trains in fp32; TF32 GEMMs follow PyTorch's "
                        "torch.backends.cuda.matmul.allow_tf32");
    return st;
}

/* The program after the constants: with a pipeline, the PipelineModule
 * (run with DeepSpeed 0.19.8 and torch 2.15 on CPU over gloo); */
static const char *const pipeline_py[] = {
    "def planned_pipeline_module(layers, loss_fn=None, **kwargs):",
    "    \"\"\"A deepspeed.pipe.PipelineModule over `layers` cut where the plan cuts.",
    "",
    "    DeepSpeed's partition methods (uniform, parameters, type:REGEX) take no",
    "    explicit boundaries, so this replaces PipelineModule._partition_layers",
    "    (a private method) with one that sets the plan's PARTS. Layers are",
    "    recomputed with DeepSpeed's non-reentrant checkpoint, which takes the",
    "    first stage's token ids (inputs that need no gradient).",
    "    \"\"\"",
    "    import deepspeed",
    "    from deepspeed.pipe import PipelineModule",
    "    from deepspeed.runtime.pipe.topology import ProcessTopology",
    "",
    "    layers = list(layers)",
    "    if len(layers) != len(LAYERS):",
    "        raise ValueError(",
    "            f\"the plan cuts {len(LAYERS)} layers ({LAYERS[0]} .. {LAYERS[-1]}), \"",
    "            f\"got {len(layers)}\")",
    "",
    "    class PlannedPipelineModule(PipelineModule):",
    "        def _partition_layers(self, method=\"uniform\"):",
    "            self.parts = list(PARTS)",
    "            stage = self._topo.get_coord(self.global_rank).pipe",
    "            self._set_bounds(start=self.parts[stage], stop=self.parts[stage + 1])",
    "",
    "    topology = ProcessTopology(axes=TOPOLOGY_AXES, dims=TOPOLOGY_DIMS)",
    "    kwargs.setdefault(\"activation_checkpoint_func\",",
    "                      deepspeed.checkpointing.non_reentrant_checkpoint)",
    "    return PlannedPipelineModule(",
    "        layers=layers,",
    "        topology=topology,",
    "        loss_fn=loss_fn,",
    "        activation_checkpoint_interval=ACTIVATION_CHECKPOINT_INTERVAL,",
    "        **kwargs)",
    "",
};

/* without one, a plain module for DeepSpeed's engine and its step; */
static const char *const plain_py[] = {
    "def planned_module(layers, loss_fn):",
    "    \"\"\"pp = 1: `layers` (LayerSpec, TiedLayerSpec, modules or functions, as a",
    "    PipelineModule takes them) as one module for DeepSpeed's plain engine,",
    "    whose forward(inputs, labels) returns the loss. A PipelineModule always",
    "    gets DeepSpeed's pipeline engine, which refuses ZeRO 2 and 3.\"\"\"",
    "    import functools",
    "",
    "    import deepspeed",
    "    import torch.nn as nn",
    "    from deepspeed.pipe import LayerSpec, TiedLayerSpec",
    "    from torch.utils.checkpoint import checkpoint",
    "",
    "    layers = list(layers)",
    "    if len(layers) != len(LAYERS):",
    "        raise ValueError(",
    "            f\"the plan has {len(LAYERS)} layers ({LAYERS[0]} .. {LAYERS[-1]}), \"",
    "            f\"got {len(layers)}\")",
    "",
    "    class PlannedModule(nn.Module):",
    "        def __init__(self):",
    "            super().__init__()",
    "            self.tied = nn.ModuleDict()",
    "            self.layers = nn.ModuleList()",
    "            self.funcs = []",
    "            for spec in layers:",
    "                if isinstance(spec, TiedLayerSpec):",
    "                    if spec.key not in self.tied:",
    "                        self.tied[spec.key] = spec.build()",
    "                    owner = self.tied[spec.key]",
    "                    if spec.forward_fn is None:",
    "                        self.funcs.append(owner)",
    "                        continue",
    "                    self.funcs.append(functools.partial(spec.forward_fn, owner))",
    "                    if DS_CONFIG[\"zero_optimization\"][\"stage\"] == 3:",
    "                        # used outside its module's forward: ZeRO 3 gathers it here too",
    "                        for p in owner.parameters():",
    "                            deepspeed.zero.register_external_parameter(self, p)",
    "                elif isinstance(spec, (LayerSpec, nn.Module)):",
    "                    self.layers.append(spec.build() if isinstance(spec, LayerSpec) else spec)",
    "                    self.funcs.append(self.layers[-1])",
    "                else:",
    "                    self.funcs.append(spec)",
    "",
    "        def forward(self, inputs, labels):",
    "            x = inputs",
    "            for f in self.funcs:",
    "                if ACTIVATION_CHECKPOINT_INTERVAL and self.training:",
    "                    x = checkpoint(f, x, use_reentrant=False)",
    "                else:",
    "                    x = f(x)",
    "            return loss_fn(x, labels)",
    "",
    "    return PlannedModule()",
    "",
    "",
    "def train_batch(engine, data_iter):",
    "    \"\"\"One step of the plan: gradient_accumulation_steps microbatches of",
    "    (inputs, labels) from data_iter; DeepSpeed steps the optimizer after the",
    "    last. Returns the mean loss.\"\"\"",
    "    losses = []",
    "    for _ in range(DS_CONFIG[\"gradient_accumulation_steps\"]):",
    "        inputs, labels = next(data_iter)",
    "        loss = engine(inputs.to(engine.device), labels.to(engine.device))",
    "        engine.backward(loss)",
    "        engine.step()",
    "        losses.append(loss.detach().float())",
    "    return sum(losses) / len(losses)",
    "",
};

/* then the same main. */
static const char *const main_py[] = {
    "if __name__ == \"__main__\":",
    "    for s in range(NUM_STAGES):",
    "        names = LAYERS[PARTS[s]:PARTS[s + 1]]",
    "        print(f\"stage {s}: layers {PARTS[s]}..{PARTS[s + 1] - 1} \"",
    "              f\"({names[0]} .. {names[-1]})\")",
    "    print(json.dumps(DS_CONFIG, indent=2))",
};

static sc_status build(const sc_export_ctx *x, sc_export *e, sc_error *err)
{
    const sc_plan *p = x->plan;
    /* what DeepSpeed cannot run was refused by framework.h's table */
    sc_status st = notes(x, e);
    cJSON *cfg = st ? NULL : ds_config(x, e, &st);
    if (!cfg)
        return st ? st : SC_ENOMEM;

    int oom = 0;
    char *cfg_text = cJSON_Print(cfg);
    if (!cfg_text) {
        cJSON_Delete(cfg);
        return SC_ENOMEM;
    }
    if (!cJSON_AddItemToObject(e->settings, "ds_config", cfg)) {
        cJSON_Delete(cfg);
        sc_free(cfg_text);
        return SC_ENOMEM;
    }
    cJSON *pm = sc_jadd_obj(e->settings, "pipeline_module", &oom);
    sc_jadd_num(pm, "num_stages", p->pp, &oom);
    cJSON *parts = sc_jadd_arr(pm, "parts", &oom);
    for (int s = 0; parts && s <= x->n_stages; s++)
        sc_jpush_num(parts, x->stage_unit[s], &oom);
    cJSON *layers = sc_jadd_arr(pm, "layers", &oom);
    for (int u = 0; layers && u < x->n_units; u++)
        sc_jpush_str(layers, x->units[u].mod->name, &oom);
    cJSON *topo = sc_jadd_obj(pm, "topology", &oom);
    cJSON *axes = sc_jadd_arr(topo, "axes", &oom), *dims = sc_jadd_arr(topo, "dims", &oom);
    for (int k = 2; axes && dims && k >= 0; k--) {
        sc_jpush_str(axes, axis_name(x->order[k]), &oom);
        sc_jpush_num(dims, axis_dim(p, x->order[k]), &oom);
    }
    int interval = p->recompute == SC_RECOMPUTE_FULL ? 1 : 0;
    sc_jadd_num(pm, "activation_checkpoint_interval", interval, &oom);
    cJSON *tied = sc_jadd_obj(pm, "tied", &oom);
    const sc_model *m = x->model;
    for (int g = 0; tied && g < m->n_groups; g++) {
        cJSON *arr = sc_jadd_arr(tied, m->groups[g].name, &oom);
        for (int k = 0; arr && k < m->groups[g].n_mods; k++)
            sc_jpush_str(arr, m->modules[m->groups[g].mods[k]]->name, &oom);
    }
    if (oom) {
        sc_free(cfg_text);
        return SC_ENOMEM;
    }

    sc_buf b = {0};
    sc_buf_printf(&b, "#!/usr/bin/env python3\n"
                      "# DeepSpeed run of a stagecraft plan: the config and the PipelineModule\n"
                      "# arguments. Written by stagecraft export from\n");
    ex_plan_line(x, &b, "#   ");
    ex_wrap(&b, "# ", "#   ", "Checked against " DEEPSPEED_CHECKED ".");
    sc_buf_printf(&b, "#\n");
    if (e->n_notes) {
        sc_buf_printf(&b, "# What DeepSpeed does differently from the plan:\n");
        ex_notes_comment(e, &b, "#");
    } else {
        sc_buf_printf(&b, "# DeepSpeed runs the plan as it stands.\n");
    }
    sc_buf_printf(&b,
                  "#\n"
                  "# Use: in your training script, build the layers (layer i is the module\n"
                  "# LAYERS[i] of the plan's model; TiedLayerSpec for the groups in TIED), then\n"
                  "#   from deepspeed_pipeline import DS_CONFIG, %s\n"
                  "#   net = %s(layers, loss_fn=...)\n"
                  "#   engine, _, _, _ = deepspeed.initialize(model=net, config=DS_CONFIG,\n"
                  "#       model_parameters=[p for p in net.parameters() if p.requires_grad])\n"
                  "#   loss = %sdata_iter)  # one step: %d microbatches\n"
                  "# and launch it on %d node%s of %d GPUs (hostfile: one line per node, slots=%d):\n"
                  "#   deepspeed --hostfile hostfile --num_nodes %d --num_gpus %d train.py\n"
                  "# ds_config.json beside this file holds the same config. Its optimizer is\n"
                  "# AdamW (the Adam states the plan counts) at a placeholder learning rate,\n"
                  "# 1e-4: set yours there.\n"
                  "\"\"\"DeepSpeed pipeline arguments for plan %s (stagecraft export).\"\"\"\n\n"
                  "import json\n\n",
                  p->pp > 1 ? "planned_pipeline_module" : "planned_module, train_batch",
                  p->pp > 1 ? "planned_pipeline_module" : "planned_module",
                  p->pp > 1 ? "engine.train_batch(" : "train_batch(engine, ", p->m, x->nodes,
                  x->nodes > 1 ? "s" : "", x->per_node, x->per_node, x->nodes, x->per_node,
                  sc_basename(x->plan_file));
    sc_buf_printf(&b, "DS_CONFIG = json.loads(r'''\n%s\n''')\n\n", cfg_text);
    sc_free(cfg_text);
    sc_buf_printf(&b, "# Pipeline stages (pp); %s\n"
                      "NUM_STAGES = %d\n\n"
                      "# The PipelineModule's layers, in order: layer i must compute the module\n"
                      "# named LAYERS[i] of the plan's model.\n"
                      "LAYERS = [\n",
                  p->pp > 1 ? "DeepSpeed's PipelineEngine runs them."
                            : "1: no PipelineModule is needed, only DS_CONFIG.",
                  p->pp);
    for (int u = 0; u < x->n_units; u++) {
        /* a traced #self leaf ('#' is in no PyTorch module name) is no
         * module: say what it stands for */
        const char *nm = x->units[u].mod->name, *hash = strchr(nm, '#');
        if (hash)
            sc_buf_printf(&b, "    \"%s\",  # no module: what %.*s's forward runs besides its "
                              "children\n",
                          nm, (int)(hash - nm), nm);
        else
            sc_buf_printf(&b, "    \"%s\",\n", nm);
    }
    sc_buf_printf(&b, "]\n\n# Stage s holds LAYERS[PARTS[s]:PARTS[s + 1]]: the plan's partition.\n"
                      "PARTS = [");
    for (int s = 0; s <= x->n_stages; s++)
        sc_buf_printf(&b, "%s%d", s ? ", " : "", x->stage_unit[s]);
    sc_buf_printf(&b, "]\n\n# Rank order, outermost axis first (the plan's placement %s).\n"
                      "TOPOLOGY_AXES = [",
                  p->placement);
    for (int k = 2; k >= 0; k--)
        sc_buf_printf(&b, "%s\"%s\"", k < 2 ? ", " : "", axis_name(x->order[k]));
    sc_buf_printf(&b, "]\nTOPOLOGY_DIMS = [");
    for (int k = 2; k >= 0; k--)
        sc_buf_printf(&b, "%s%d", k < 2 ? ", " : "", axis_dim(p, x->order[k]));
    sc_buf_printf(&b, "]\n\n# Layers that share weights (TiedLayerSpec keys): DeepSpeed all-reduces\n"
                      "# their gradients across the stages that hold them, as the plan does.\n"
                      "TIED = {\n");
    for (int g = 0; g < m->n_groups; g++) {
        sc_buf_printf(&b, "    \"%s\": [", m->groups[g].name);
        for (int k = 0; k < m->groups[g].n_mods; k++)
            sc_buf_printf(&b, "%s\"%s\"", k ? ", " : "", m->modules[m->groups[g].mods[k]]->name);
        sc_buf_printf(&b, "],\n");
    }
    sc_buf_printf(&b, "}\n\n"
                      "# 1: checkpoint every layer (full recompute); 0: none.\n"
                      "ACTIVATION_CHECKPOINT_INTERVAL = %d\n\n\n",
                  interval);
    for (size_t i = 0; i < SC_ARRAY_LEN(pipeline_py) && p->pp > 1; i++)
        sc_buf_printf(&b, "%s\n", pipeline_py[i]);
    for (size_t i = 0; i < SC_ARRAY_LEN(plain_py) && p->pp == 1; i++)
        sc_buf_printf(&b, "%s\n", plain_py[i]);
    for (size_t i = 0; i < SC_ARRAY_LEN(main_py); i++)
        sc_buf_printf(&b, "%s\n", main_py[i]);
    st = ex_file(e, "deepspeed_pipeline.py", &b);
    if (!st) {
        char *t = cJSON_Print(cfg);
        if (!t) {
            st = SC_ENOMEM;
        } else {
            sc_buf_printf(&b, "%s\n", t);
            sc_free(t);
            st = ex_file(e, "ds_config.json", &b);
        }
    }
    sc_buf_free(&b);
    return st;
}

const sc_export_target sc_export_deepspeed = {
    .name = "deepspeed",
    .framework = "DeepSpeed",
    .description = "ds_config.json and the PipelineModule arguments (deepspeed_pipeline.py)",
    .checked = DEEPSPEED_CHECKED,
    .build = build,
};
