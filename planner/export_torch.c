/* export_torch.c - a plan as one runnable Python file for
 * torch.distributed.pipelining (torch >= 2.4): torch_pipeline.py.
 *
 * The API was checked against pytorch/pytorch: torch/distributed/
 * pipelining/__init__.py and schedules.py (commit 00722e6, which has
 * ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B,
 * ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble, ScheduleDualPipeV),
 * stage.py (PipelineStage(submodule, stage_index, num_stages, device,
 * input_args=..., group=...)) and _IR.py (pipeline(module, mb_args,
 * split_spec={name: SplitPoint.BEGINNING}); a parameter used by two stages
 * is copied into both). The 2.4 release's __init__ exports pipeline,
 * SplitPoint, PipelineStage and the first three schedules; the file checks
 * for its schedule class at run time.
 *
 * The file holds the plan as constants (degrees, placement, microbatches,
 * the schedule class, the split points by module name, the units of each
 * stage) and a program:
 *   - when the plan's model is stagecraft's GPT (embed, blocks.N, ln_f,
 *     head), a reference implementation with the same module names, cut
 *     into manual PipelineStages at the plan's boundaries, DDP over the
 *     data-parallel group (the plan's bucket size), ZeroRedundancyOptimizer
 *     for ZeRO-1, torch.utils.checkpoint per block for full recompute, and
 *     the tied embedding kept in step across the first and last stage;
 *   - otherwise --factory FILE.py:FUNC[:k=v,...] (as traces/torch_trace.py
 *     takes it; batch=MBS and seq=SEQ offered as the tracer offers --batch
 *     and --seq) builds the model, and pipeline() splits it at SPLIT_POINTS.
 * ZeRO 2 and 3 (pp = 1 only: framework.c's table) run as FSDP2 instead of
 * DDP (fully_shard from torch.distributed.fsdp, torch 2.6 on, or
 * torch.distributed._composable.fsdp in 2.4-2.5; MixedPrecisionPolicy;
 * DeviceMesh.from_group over the data-parallel group): one unit per layer of
 * the plan (FSDP_UNITS, by module name), then the root; ZeRO 3 reshards the
 * parameters after the forward, ZeRO 2 keeps them until the backward; fp32
 * parameters with bf16 compute and reductions; every microbatch
 * reduce-scattered, as the simulator runs ZeRO 2 and 3. FSDP1
 * (FullyShardedDataParallel) is not used: it refuses CPU devices, and FSDP2
 * is what current PyTorch recommends.
 *
 * Run here (2026-12-04) with torch 2.15.0 from PyPI, on CPU over gloo, on a
 * 4-layer GPT: every schedule at pp 2 (interleaved at v 2), dp 2 x pp 2
 * with ZeRO 1, and dp 2 with ZeRO 0-3 (and full recompute), the reference
 * model and --factory alike, train (docs/commands.md). torch 2.5.1 hung in
 * its 1F1B over gloo (one batched send/recv pair never completed); it is
 * untried here over NCCL.
 * Schedules: gpipe ScheduleGPipe, 1f1b Schedule1F1B, interleaved
 * ScheduleInterleaved1F1B (v stages per rank), zb-h1
 * ScheduleInterleavedZeroBubble with one stage per rank (torch's ZB1P).
 * Refused (not written by this export): tensor parallelism, ZeRO 2 and 3
 * with a pipeline.
 */
#include "export_int.h"
#include "json.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* The leaf the plan charged the loss to: the generators, and the tracer with
 * --loss auto, give an LM head a cross_entropy kernel. NULL when none has one. */
static const sc_module *priced_ce(const sc_model *m)
{
    for (int i = 0; i < m->n_leaves; i++)
        if (sc_module_kernel(m->leaves[i], "cross_entropy"))
            return m->leaves[i];
    return NULL;
}

#define TORCH_CHECKED                                                                      \
    "pytorch/pytorch: torch/distributed/pipelining/schedules.py at commit "               \
    "00722e648b740f91d0e71494baa17891749fd291, stage.py, _IR.py, __init__.py (torch 2.4 "  \
    "exports pipeline, SplitPoint, PipelineStage, ScheduleGPipe, Schedule1F1B, "           \
    "ScheduleInterleaved1F1B; later releases add ScheduleInterleavedZeroBubble)"

/* The program after the constants (written from a tested Python file). */
static const char *const body[] = {
    "",
    "",
    "def rank_coords(rank):",
    "    \"\"\"(dp, pp, tp) of a rank under PLACEMENT (innermost axis first).\"\"\"",
    "    dims = {\"tp\": TP, \"pp\": PP, \"dp\": DP}",
    "    c = {}",
    "    for axis in PLACEMENT:",
    "        c[axis] = rank % dims[axis]",
    "        rank //= dims[axis]",
    "    return c[\"dp\"], c[\"pp\"], c[\"tp\"]",
    "",
    "",
    "def rank_of(dp, pp, tp):",
    "    dims = {\"tp\": TP, \"pp\": PP, \"dp\": DP}",
    "    c = {\"tp\": tp, \"pp\": pp, \"dp\": dp}",
    "    rank, scale = 0, 1",
    "    for axis in PLACEMENT:",
    "        rank += c[axis] * scale",
    "        scale *= dims[axis]",
    "    return rank",
    "",
    "",
    "def make_groups(dp, pp):",
    "    \"\"\"This rank's pipeline, data-parallel and tied-weight groups (every rank",
    "    creates every group, in the same order, as new_group requires).\"\"\"",
    "    pp_group = dp_group = tie_group = None",
    "    for d in range(DP):",
    "        ranks = [rank_of(d, p, 0) for p in range(PP)]",
    "        g = dist.new_group(ranks)",
    "        if d == dp:",
    "            pp_group = g",
    "    for p in range(PP):",
    "        ranks = [rank_of(d, p, 0) for d in range(DP)]",
    "        g = dist.new_group(ranks)",
    "        if p == pp:",
    "            dp_group = g",
    "    if GPT is not None and GPT[\"tied\"] and PP > 1:",
    "        for d in range(DP):",
    "            g = dist.new_group([rank_of(d, 0, 0), rank_of(d, PP - 1, 0)])",
    "            if d == dp:",
    "                tie_group = g",
    "    return pp_group, dp_group, tie_group",
    "",
    "",
    "def shard(module, group, device, dtype):",
    "    \"\"\"FSDP2 over the data-parallel group (ZeRO 3: parameters resharded after",
    "    the forward, ZeRO 2: kept whole until the backward): a unit per module",
    "    named in FSDP_UNITS (the plan's layers), the rest in the root's;",
    "    parameters, gradients and AdamW states in fp32, sharded; the compute",
    "    and the gathers in dtype, the reduce-scatters in REDUCE_DTYPE.\"\"\"",
    "    try:  # torch >= 2.6",
    "        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard",
    "    except ImportError:  # torch 2.4-2.5",
    "        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard",
    "    from torch.distributed.device_mesh import DeviceMesh",
    "    mixed = (MixedPrecisionPolicy() if dtype == torch.float32",
    "             else MixedPrecisionPolicy(param_dtype=dtype,",
    "                                       reduce_dtype=getattr(torch, REDUCE_DTYPE)))",
    "    kw = dict(mesh=DeviceMesh.from_group(group, device.type), mp_policy=mixed,",
    "              reshard_after_forward=ZERO == 3)",
    "    for name in FSDP_UNITS:",
    "        fully_shard(module.get_submodule(name), **kw)",
    "    fully_shard(module, **kw)",
    "    return module",
    "",
    "",
    "# ---- the plan's model, when it is stagecraft's GPT (module names as in the plan)",
    "",
    "class Embedding(nn.Module):",
    "    def __init__(self, g):",
    "        super().__init__()",
    "        self.tok = nn.Embedding(g[\"vocab\"], g[\"hidden\"])",
    "        self.pos = nn.Embedding(g[\"seq\"], g[\"hidden\"]) if g[\"pos_embed\"] else None",
    "        for e in (self.tok, self.pos):  # GPT-2's scale (a tied head shares tok's)",
    "            if e is not None:",
    "                nn.init.normal_(e.weight, std=0.02)",
    "",
    "    def forward(self, tokens):",
    "        x = self.tok(tokens)",
    "        if self.pos is not None:",
    "            x = x + self.pos(torch.arange(tokens.shape[1], device=tokens.device))",
    "        return x",
    "",
    "",
    "def unfused_attention(q, k, v):",
    "    \"\"\"The plan's unfused attention: QK^T, the causal mask, softmax and the",
    "    product with V as kernels of their own; the backward keeps the scores.\"\"\"",
    "    s = q.shape[-2]",
    "    scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5",
    "    future = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)",
    "    return torch.matmul(torch.softmax(scores.masked_fill(future, float(\"-inf\")), dim=-1), v)",
    "",
    "",
    "class Attention(nn.Module):",
    "    def __init__(self, g):",
    "        super().__init__()",
    "        self.heads, self.kv = g[\"heads\"], g[\"kv\"]",
    "        self.qkv = nn.Linear(g[\"hidden\"], 3 * g[\"heads\"] * g[\"kv\"])",
    "        self.proj = nn.Linear(g[\"heads\"] * g[\"kv\"], g[\"hidden\"])",
    "",
    "    def forward(self, x):",
    "        b, s, _ = x.shape",
    "        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.kv).permute(2, 0, 3, 1, 4)",
    "        if ATTENTION == \"flash\":",
    "            # flash / memory-efficient kernels keep no attention scores for the backward",
    "            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)",
    "        elif RECOMPUTE == \"selective\" and self.training:",
    "            # selective recompute: the scores are dropped and rebuilt in the backward",
    "            y = checkpoint(unfused_attention, q, k, v, use_reentrant=False)",
    "        else:",
    "            y = unfused_attention(q, k, v)",
    "        return self.proj(y.transpose(1, 2).reshape(b, s, self.heads * self.kv))",
    "",
    "",
    "class MLP(nn.Module):",
    "    def __init__(self, g):",
    "        super().__init__()",
    "        self.fc1 = nn.Linear(g[\"hidden\"], g[\"ffn\"])",
    "        self.fc2 = nn.Linear(g[\"ffn\"], g[\"hidden\"])",
    "",
    "    def forward(self, x):",
    "        return self.fc2(F.gelu(self.fc1(x)))",
    "",
    "",
    "class Block(nn.Module):",
    "    def __init__(self, g):",
    "        super().__init__()",
    "        self.ln1 = nn.LayerNorm(g[\"hidden\"])",
    "        self.attn = Attention(g)",
    "        self.ln2 = nn.LayerNorm(g[\"hidden\"])",
    "        self.mlp = MLP(g)",
    "",
    "    def forward(self, x):",
    "        x = x + self.attn(self.ln1(x))",
    "        return x + self.mlp(self.ln2(x))",
    "",
    "",
    "class Head(nn.Module):",
    "    def __init__(self, g):",
    "        super().__init__()",
    "        self.weight = nn.Parameter(torch.empty(g[\"vocab\"], g[\"hidden\"]))",
    "        nn.init.normal_(self.weight, std=0.02)",
    "",
    "    def forward(self, x):",
    "        return F.linear(x, self.weight)",
    "",
    "",
    "class StageModel(nn.Module):",
    "    \"\"\"The units of one stage: embed, blocks.N, ln_f, head (names as in the plan).\"\"\"",
    "",
    "    def __init__(self, g, units):",
    "        super().__init__()",
    "        self.embed = Embedding(g) if \"embed\" in units else None",
    "        self.blocks = nn.ModuleDict(",
    "            {u.split(\".\")[1]: Block(g) for u in units if u.startswith(\"blocks.\")})",
    "        self.ln_f = nn.LayerNorm(g[\"hidden\"]) if \"ln_f\" in units else None",
    "        self.head = Head(g) if \"head\" in units else None",
    "        if self.head is not None and self.embed is not None and g[\"tied\"]:",
    "            self.head.weight = self.embed.tok.weight",
    "",
    "    def forward(self, x):",
    "        if self.embed is not None:",
    "            x = self.embed(x)",
    "        for block in self.blocks.values():",
    "            if RECOMPUTE == \"full\" and self.training:",
    "                x = checkpoint(block, x, use_reentrant=False)",
    "            else:",
    "                x = block(x)",
    "        if self.ln_f is not None:",
    "            x = self.ln_f(x)",
    "        if self.head is not None:",
    "            x = self.head(x)",
    "        return x",
    "",
    "",
    "def tied_weights(modules):",
    "    \"\"\"The tied embedding / head weights this rank holds (pp > 1).\"\"\"",
    "    out = []",
    "    for m in modules:",
    "        m = m.module if isinstance(m, DDP) else m",
    "        if getattr(m, \"embed\", None) is not None:",
    "            out.append(m.embed.tok.weight)",
    "        if getattr(m, \"head\", None) is not None:",
    "            out.append(m.head.weight)",
    "    return out",
    "",
    "",
    "def factory_value(v):",
    "    low = v.lower()",
    "    if low in (\"true\", \"false\"):",
    "        return low == \"true\"",
    "    if low in (\"none\", \"null\"):",
    "        return None",
    "    for conv in (int, float):",
    "        try:",
    "            return conv(v)",
    "        except ValueError:",
    "            pass",
    "    return v",
    "",
    "",
    "def load_factory(spec):",
    "    \"\"\"FILE.py:FUNC[:k=v,...], as torch_trace.py takes it -> what FUNC(**kw)",
    "    returns: a module, or (module, example_inputs). FUNC also gets batch=MBS",
    "    where its signature names batch (or takes **kwargs), and seq=SEQ where it",
    "    names seq, unless the spec sets them: its example is one microbatch.\"\"\"",
    "    path, sep, rest = spec.partition(\".py:\")",
    "    if not sep and not spec.endswith(\".py\"):",
    "        raise SystemExit(f\"--factory {spec}: expected FILE.py:FUNC[:k=v,...]\")",
    "    path = path + \".py\" if sep else spec",
    "    func, _, kvs = rest.partition(\":\")",
    "    kw = {}",
    "    for part in filter(None, kvs.split(\",\")):",
    "        k, eq, v = part.partition(\"=\")",
    "        if not eq or not k.strip().isidentifier():",
    "            raise SystemExit(f\"--factory {spec}: '{part}' is not KEY=VALUE\")",
    "        kw[k.strip()] = factory_value(v.strip())",
    "    if not os.path.isfile(path):",
    "        raise SystemExit(f\"--factory {spec}: no such file {path}\")",
    "    loader = importlib.util.spec_from_file_location(\"stagecraft_factory\", path)",
    "    mod = importlib.util.module_from_spec(loader)",
    "    loader.loader.exec_module(mod)",
    "    f = getattr(mod, func or \"make\", None)",
    "    if not callable(f):",
    "        raise SystemExit(f\"--factory {spec}: {path} has no function '{func or 'make'}'\")",
    "    try:",
    "        params = inspect.signature(f).parameters",
    "    except (TypeError, ValueError):",
    "        params = {}",
    "    anykw = any(p.kind == p.VAR_KEYWORD for p in params.values())",
    "    if \"batch\" not in kw and (\"batch\" in params or anykw):",
    "        kw[\"batch\"] = MBS",
    "    if \"seq\" not in kw and \"seq\" in params:",
    "        kw[\"seq\"] = SEQ",
    "    if int(os.environ.get(\"RANK\", \"0\")) == 0:",
    "        print(f\"factory: {func or 'make'}({', '.join(f'{k}={v!r}' for k, v in kw.items())})\",",
    "              flush=True)",
    "    made = f(**kw)",
    "    if isinstance(made, tuple):",
    "        module, example = made",
    "    else:",
    "        module, example = made, None",
    "    if example is None:",
    "        if VOCAB is None:",
    "            raise SystemExit(\"the factory must return (module, example_inputs)\")",
    "        example = torch.randint(VOCAB, (MBS, SEQ))",
    "    if not isinstance(example, tuple):",
    "        example = (example,)",
    "    first = next((e for e in example if torch.is_tensor(e) and e.dim() > 0), None)",
    "    if first is not None and first.shape[0] != MBS and int(os.environ.get(\"RANK\", \"0\")) == 0:",
    "        print(f\"note: the factory's example holds {first.shape[0]} samples, the plan's \"",
    "              f\"microbatch {MBS}: the run's microbatches hold {first.shape[0]}\", flush=True)",
    "    return module, example",
    "",
    "",
    "def lm_loss(output, target):",
    "    return F.cross_entropy(output.flatten(0, 1).float(), target.flatten())",
    "",
    "",
    "def placeholder_loss(output, target):",
    "    # the factory path's stand-in: replace it with the model's real loss",
    "    return output.float().mean()",
    "",
    "",
    "def factory_loss(output, target):",
    "    \"\"\"The plan's cross-entropy where it priced one and the last stage gives",
    "    next-token logits over VOCAB for the target's tokens; else the stand-in.\"\"\"",
    "    if PRICED_LOSS == \"cross_entropy\" and VOCAB is not None and torch.is_tensor(output) \\",
    "            and output.dim() == 3 and output.shape[-1] == VOCAB \\",
    "            and not target.is_floating_point() and target.shape == output.shape[:2]:",
    "        return lm_loss(output, target)",
    "    return placeholder_loss(output, target)",
    "",
    "",
    "def batch(step, dp, device):",
    "    \"\"\"Synthetic tokens for one step of one data-parallel replica: the same on",
    "    the ranks of the first and the last stage.\"\"\"",
    "    g = torch.Generator().manual_seed(1000003 * step + dp)",
    "    t = torch.randint(VOCAB, (N_MICROBATCHES * MBS, SEQ + 1), generator=g)",
    "    # contiguous: a stage checks its inputs' strides against its example's",
    "    return t[:, :-1].contiguous().to(device), t[:, 1:].contiguous().to(device)",
    "",
    "",
    "def main():",
    "    ap = argparse.ArgumentParser(description=__doc__)",
    "    ap.add_argument(\"--factory\", help=\"FILE.py:FUNC[:k=v,...] building the plan's model \"",
    "                    \"(nn.Module or (module, example_inputs)), as torch_trace.py takes it; \"",
    "                    \"required unless the plan's model is GPT\")",
    "    ap.add_argument(\"--steps\", type=int, default=10)",
    "    ap.add_argument(\"--lr\", type=float, default=1e-4)",
    "    args = ap.parse_args()",
    "",
    "    if tuple(int(x) for x in torch.__version__.split(\".\")[:2]) < (2, 4):",
    "        raise SystemExit(f\"torch.distributed.pipelining needs torch >= 2.4, not {torch.__version__}\")",
    "    if SCHEDULE is not None and not hasattr(pipelining, SCHEDULE):",
    "        raise SystemExit(f\"this torch ({torch.__version__}) has no {SCHEDULE}\")",
    "    cuda = torch.cuda.is_available()",
    "    dist.init_process_group(\"nccl\" if cuda else \"gloo\")",
    "    rank, world = dist.get_rank(), dist.get_world_size()",
    "    if world != WORLD:",
    "        raise SystemExit(f\"the plan has {WORLD} ranks, torchrun started {world}\")",
    "    local = int(os.environ.get(\"LOCAL_RANK\", \"0\"))",
    "    device = torch.device(\"cuda\", local) if cuda else torch.device(\"cpu\")",
    "    if cuda:",
    "        torch.cuda.set_device(device)",
    "    dtype = getattr(torch, DTYPE)",
    "    dp, pp, _ = rank_coords(rank)",
    "    pp_group, dp_group, tie_group = make_groups(dp, pp)",
    "    stage_ids = [pp + c * PP for c in range(V)]",
    "    n_stages = PP * V",
    "    torch.manual_seed(1234 + pp)",
    "",
    "    reference = args.factory is None",
    "    if reference and (GPT is None or STAGE_UNITS is None):",
    "        raise SystemExit(\"the plan's model is not stagecraft's GPT: pass --factory FILE.py:FUNC\")",
    "    # FSDP keeps fp32 parameters and computes in dtype; DDP runs the cast model",
    "    wdtype = torch.float32 if ZERO >= 2 else dtype",
    "    if reference:",
    "        modules = [StageModel(GPT, STAGE_UNITS[s]).to(device=device, dtype=wdtype)",
    "                   for s in stage_ids]",
    "        loss_fn = lm_loss",
    "        tied = tied_weights(modules) if tie_group is not None else []",
    "        for w in tied:  # the stage-0 copy is the one both start from",
    "            dist.broadcast(w.data, src=rank_of(dp, 0, 0), group=tie_group)",
    "        if ZERO >= 2:  # pp = 1 (the plan's framework allows no FSDP around stages)",
    "            modules = [shard(m, dp_group, device, dtype) for m in modules]",
    "        elif DP > 1:",
    "            modules = [DDP(m, process_group=dp_group, bucket_cap_mb=BUCKET_MIB)",
    "                       for m in modules]",
    "        stages = []",
    "        for s, m in zip(stage_ids, modules) if PP > 1 else ():",
    "            if s == 0:",
    "                example = torch.zeros(MBS, SEQ, dtype=torch.long, device=device)",
    "            else:  # activations need gradients (later torch reads requires_grad here)",
    "                example = torch.zeros(MBS, SEQ, GPT[\"hidden\"], dtype=dtype, device=device,",
    "                                      requires_grad=True)",
    "            # the output's shape too: without it torch 2.4-2.5 run the stage on",
    "            # uninitialised inputs to find it (token ids out of the vocabulary)",
    "            width = GPT[\"vocab\"] if s == n_stages - 1 else GPT[\"hidden\"]",
    "            output = torch.zeros(MBS, SEQ, width, dtype=dtype, device=device,",
    "                                 requires_grad=True)",
    "            stages.append(PipelineStage(m, s, n_stages, device, input_args=(example,),",
    "                                        output_args=(output,), group=pp_group))",
    "    else:",
    "        model, example = load_factory(args.factory)",
    "        loss_fn = factory_loss",
    "        tied = []",
    "        if ZERO >= 2:  # pp = 1: FSDP around the whole model, no pipeline() split",
    "            modules = [shard(model.to(device=device), dp_group, device, dtype)]",
    "            stages = []",
    "        else:",
    "            model = model.to(device=device, dtype=dtype) if dtype != torch.float32 else model",
    "            # the example's floating inputs in the model's dtype, as the batches",
    "            example = tuple(e.to(device=device, dtype=dtype) if e.is_floating_point()",
    "                            else e.to(device) for e in example)",
    "            pipe = pipeline(model, mb_args=example,",
    "                            split_spec={name: SplitPoint.BEGINNING for name in SPLIT_POINTS})",
    "            stages = [pipe.build_stage(s, device, group=pp_group) for s in stage_ids]",
    "            modules = [st.submod for st in stages]",
    "",
    "    params = [p for m in modules for p in m.parameters()]",
    "    if ZERO == 1 and DP > 1:",
    "        opt = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW,",
    "                                      process_group=dp_group, lr=args.lr)",
    "    else:",
    "        opt = torch.optim.AdamW(params, lr=args.lr)",
    "",
    "    if PP == 1:",
    "        schedule = None",
    "    elif V > 1 or SCHEDULE == \"ScheduleInterleavedZeroBubble\":",
    "        schedule = getattr(pipelining, SCHEDULE)(stages, N_MICROBATCHES, loss_fn=loss_fn)",
    "    else:",
    "        schedule = getattr(pipelining, SCHEDULE)(stages[0], N_MICROBATCHES, loss_fn=loss_fn)",
    "",
    "    first = 0 in stage_ids",
    "    last = n_stages - 1 in stage_ids",
    "    for step in range(args.steps):",
    "        opt.zero_grad(set_to_none=True)",
    "        if reference:",
    "            tokens, labels = batch(step, dp, device)",
    "            inputs = (tokens,)",
    "        else:",
    "            inputs = tuple(torch.cat([e.to(device)] * N_MICROBATCHES) for e in example)",
    "            # token ids: the next token is each one's label (the last wraps)",
    "            labels = inputs[0] if inputs[0].is_floating_point() or inputs[0].dim() != 2 \\",
    "                else inputs[0].roll(-1, 1)",
    "        losses = []",
    "        if schedule is None:",
    "            m = modules[0]",
    "            for i in range(N_MICROBATCHES):",
    "                x = tuple(t[i * MBS:(i + 1) * MBS] for t in inputs)",
    "                y = labels[i * MBS:(i + 1) * MBS]",
    "                # DDP reduces after the last microbatch; FSDP reduce-scatters every",
    "                # microbatch's gradients into its fp32 shard, as Composer runs it",
    "                sync = i == N_MICROBATCHES - 1 or not isinstance(m, DDP)",
    "                with (contextlib.nullcontext() if sync else m.no_sync()):",
    "                    loss = loss_fn(m(*x), y) / N_MICROBATCHES",
    "                    loss.backward()",
    "                losses.append(loss.detach() * N_MICROBATCHES)",
    "        else:",
    "            step_args = inputs if first else ()",
    "            schedule.step(*step_args, target=labels if last else None,",
    "                          losses=losses if last else None)",
    "        if not reference and DP > 1 and ZERO < 2:",
    "            # pipeline() builds the stages, so DDP cannot wrap them: reduce here",
    "            for p in params:",
    "                if p.grad is not None:",
    "                    dist.all_reduce(p.grad, group=dp_group)",
    "                    p.grad /= DP",
    "        for w in tied:",
    "            if w.grad is not None:",
    "                dist.all_reduce(w.grad, group=tie_group)",
    "        opt.step()",
    "        if last and losses and (DP == 1 or dp == 0):",
    "            mean = torch.stack([l.float() for l in losses]).mean().item()",
    "            print(f\"step {step}: loss {mean:.4f}\", flush=True)",
    "    dist.destroy_process_group()",
    "",
    "",
    "if __name__ == \"__main__\":",
    "    main()",
};

static const char *schedule_class(const sc_plan *p)
{
    if (p->pp == 1)
        return NULL;
    if (!strcmp(p->schedule, "gpipe"))
        return "ScheduleGPipe";
    if (!strcmp(p->schedule, "interleaved"))
        return "ScheduleInterleaved1F1B";
    if (!strcmp(p->schedule, "zb-h1"))
        return "ScheduleInterleavedZeroBubble";
    return "Schedule1F1B";
}

/* The leaf a stage beginning at `leaf` is split at: a #self leaf (a
 * module's own code, the tracer's; '#' is in no PyTorch module name) is no
 * module pipeline() can split at, so the split moves to the next leaf that
 * is one, and that code runs at the end of the stage before. m->n_leaves
 * when no leaf after it is. */
static int split_leaf(const sc_model *m, int leaf)
{
    while (leaf < m->n_leaves && strchr(m->leaves[leaf]->name, '#'))
        leaf++;
    return leaf;
}

/* The highest module (below the root) whose first leaf is leaf. */
static const sc_module *split_module(const sc_model *m, int leaf)
{
    leaf = split_leaf(m, leaf);
    const sc_module *x = m->leaves[leaf];
    while (x->parent && x->parent->parent && sc_module_first_leaf(x->parent) == leaf)
        x = x->parent;
    return x;
}

/* Whether the layers are Llama-style (export.c, ex_gpt_variant): the
 * reference implementation builds GPT's (MHA, GeLU, LayerNorm, biases). */
static int llama_style(const ex_gpt *g)
{
    return g->kv_groups < g->heads || g->mlp != EX_MLP_GELU || g->rmsnorm || g->no_bias ||
           g->rope;
}

/* stagecraft's GPT layout: units embed, blocks.0..L-1, ln_f, head. */
static int std_gpt(const sc_export_ctx *x)
{
    if (!x->gpt.ok || x->n_units != x->n_blocks + 3 || llama_style(&x->gpt))
        return 0;
    if (strcmp(x->units[0].mod->name, "embed") || strcmp(x->units[x->n_units - 2].mod->name, "ln_f") ||
        strcmp(x->units[x->n_units - 1].mod->name, "head"))
        return 0;
    for (int u = 1; u <= x->n_blocks; u++) {
        char nm[32];
        snprintf(nm, sizeof nm, "blocks.%d", u - 1);
        if (strcmp(x->units[u].mod->name, nm))
            return 0;
    }
    return 1;
}

static const char *py_dtype(sc_dtype d)
{
    return d == SC_FP16 ? "float16" : d == SC_BF16 || d == SC_FP8 ? "bfloat16" : "float32";
}

static sc_status notes(const sc_export_ctx *x, sc_export *e, int reference)
{
    const sc_plan *p = x->plan;
    sc_status st = SC_OK;
    /* the dtype the file runs in (fp8 as bf16) */
    const char *run = sc_dtype_name(x->model->dtype == SC_FP8 ? SC_BF16 : x->model->dtype);
    if (p->pp > 1 && !strcmp(p->schedule, "zb-h1"))
        st = ex_note(e, "ZB-H1 runs as ScheduleInterleavedZeroBubble with one stage per rank "
                        "(torch's ZB1P schedule); the file stops if the installed torch lacks it");
    if (!st && p->defer_embedding_wgrad)
        st = ex_note(e, "the plan defers the output layer's weight gradients to the pipeline "
                        "flush (Megatron-Core's --defer-embedding-wgrad-compute); "
                        "torch.distributed.pipelining computes them in each backward, so the "
                        "last stage is slower than the plan's");
    if (!st && p->zero >= 2)
        st = ex_note(e, "ZeRO-%d runs as FSDP2 (fully_shard, %s), a unit per layer and the rest "
                        "in the root unit; parameters, gradients and AdamW states stay in fp32, "
                        "sharded, and MixedPrecisionPolicy computes and gathers in %s and "
                        "reduce-scatters in %s. FSDP2 also copies each gather into the "
                        "parameters and the gradients "
                        "into its reduce-scatter buffer; the plan's FSDP work on the gradients "
                        "(--framework torch) is FSDP1's. FSDP2 keeps one reduce-scatter in "
                        "flight: before a unit's, the compute stream waits for the one before "
                        "it (set_reduce_scatter_max_input_buffers, 1 by default), where the "
                        "plan lets the compute run ahead, so a backward whose reduce-scatters "
                        "outlast its compute runs at their pace",
                     p->zero,
                     p->zero == 3 ? "parameters resharded after the forward"
                                  : "parameters kept whole from the forward to the backward",
                     run, p->grad_reduce_in_fp32 ? "fp32" : run);
    if (!st && p->zero < 2 && (x->model->dtype == SC_BF16 || x->model->dtype == SC_FP16))
        st = ex_note(e, "the model is cast to %s: weights, gradients and AdamW states in %s "
                        "with no fp32 master copy, less memory than the plan's mixed precision",
                     sc_dtype_name(x->model->dtype), sc_dtype_name(x->model->dtype));
    if (!st && p->zero < 2 && p->dp > 1 &&
        sc_cost_grad_reduce_widens(x->model->dtype, p->grad_reduce_in_fp32))
        st = ex_note(e, "DDP reduces the cast model's gradients in %s; the plan reduces them in "
                        "fp32 (grad_reduce_in_fp32), twice the bytes", run);
    if (!st && x->model->dtype == SC_FP8)
        st = ex_note(e, "fp8: the file runs in bf16 (no fp8 GEMMs)");
    if (!st && p->zero == 1 && p->dp > 1)
        st = ex_note(e, "ZeRO-1 runs as ZeroRedundancyOptimizer: DDP all-reduces the gradients "
                        "(the plan reduce-scatters them) and each rank broadcasts the parameters "
                        "it updated");
    if (reference) {
        if (!st && x->gpt.tied && p->pp > 1)
            st = ex_note(e, "the tied embedding and LM head are two parameters, on the first and "
                            "the last stage: the file starts them equal and all-reduces their "
                            "gradients between the two after each step, after the pipeline "
                            "rather than overlapped with it");
        if (!st && p->recompute == SC_RECOMPUTE_SELECTIVE)
            st = p->attn == SC_ATTN_FLASH
                     ? ex_note(e, "selective recompute: F.scaled_dot_product_attention's flash "
                                  "and memory-efficient kernels keep no attention scores, which "
                                  "is what selective recompute saves, so nothing is recomputed; "
                                  "the plan, as Megatron-Core does, re-runs the fused kernel's "
                                  "forward in the backward, so the file steps a little faster "
                                  "than planned")
                     : ex_note(e, "selective recompute: the unfused attention (scores, mask, "
                                  "softmax, the product with V) is checkpointed and rebuilt in "
                                  "the backward, as Megatron-LM's selective recompute; nothing "
                                  "else is recomputed");
        if (!st && x->gpt.ce && strcmp(x->gpt.ce, "megatron"))
            st = ex_note(e, "the file's loss is PyTorch's F.cross_entropy over fp32 logits, "
                            "which passes over them more often than the plan's %s loss",
                         x->gpt.ce);
        if (!st && x->dropout == 1)
            st = ex_note(e, "the file's GPT has no dropout: the plan's dropout kernels and "
                            "their masks do not run, so it holds less memory and steps faster "
                            "than planned");
        if (!st && x->attention && p->attn == SC_ATTN_UNFUSED)
            st = ex_note(e, "attention runs unfused, as the plan priced it: its own matmul, mask "
                            "and softmax kernels, the scores kept for the backward (plan with "
                            "--attn flash for F.scaled_dot_product_attention's fused kernels)");
    } else {
        if (!st && x->gpt.ok && llama_style(&x->gpt))
            st = ex_note(e, "the model's layers are Llama-style (grouped-query attention, a gated "
                            "or squared-ReLU MLP, RMSNorm, no biases or rotary positions), which "
                            "the file's reference GPT does not build");
        if (!st)
            st = ex_note(e, "the plan's model is not stagecraft's GPT cut between layers: run the "
                            "file with --factory FILE.py:FUNC building the model; pipeline() "
                            "splits it at SPLIT_POINTS by module name and copies a weight used by "
                            "two stages into both without keeping the copies in step");
        if (!st && p->dp > 1)
            st = ex_note(e, "with --factory, data-parallel gradients are all-reduced after the "
                            "pipeline step, not overlapped with the backward");
        if (!st && p->recompute != SC_RECOMPUTE_NONE)
            st = ex_note(e, "with --factory, recompute is the model's own: the file adds none");
        const sc_module *ce = priced_ce(x->model);
        if (!st && ce && x->gpt.ok)
            st = ex_note(e, "with --factory, the loss is F.cross_entropy of the last stage's "
                            "logits against the next tokens, as the plan priced over %s's "
                            "logits, where they are (batch, %d, %d) for token ids; else a "
                            "stand-in, the mean of the output (placeholder_loss): put the "
                            "model's own there",
                         ce->name, x->model->seq_len, x->gpt.vocab);
        else if (!st)
            st = ex_note(e, "with --factory, the loss is a stand-in, the mean of the last "
                            "stage's output (placeholder_loss): put the model's own there; the "
                            "plan priced %s%s%s",
                         ce ? "a cross-entropy over " : "none", ce ? ce->name : "",
                         ce ? "'s logits" : "");
        if (!st && x->attention)
            st = ex_note(e, "with --factory, attention is the model's own: the plan priced it "
                            "%s (%s)",
                         x->attention,
                         p->attn == SC_ATTN_FLASH ? "a fused kernel that keeps no scores"
                                                  : "the scores kept for the backward");
    }
    for (int s = 1; !st && s < x->n_stages; s++) {
        int f = p->partition.first[s], g = split_leaf(x->model, f);
        if (g != f)
            st = ex_note(e, "stage %d begins at %s, a module's own code, where pipeline() cannot "
                            "split: it runs at the end of stage %d and stage %d begins at %s",
                         s, x->model->leaves[f]->name, s - 1, s,
                         split_module(x->model, f)->name);
    }
    return st;
}

static sc_status build(const sc_export_ctx *x, sc_export *e, sc_error *err)
{
    const sc_plan *p = x->plan;
    const sc_model *m = x->model;
    /* tp and ZeRO 2-3 with a pipeline, which this export does not write,
     * were refused by framework.h's table (export.c) */
    assert(p->tp == 1 && (p->zero <= 1 || p->pp == 1));
    /* each split at a module, after the one before it */
    for (int s = 1, prev = 0; s < x->n_stages; s++) {
        int f = p->partition.first[s], g = split_leaf(m, f);
        if (g >= m->n_leaves || g <= prev)
            return sc_err(err, SC_EINVAL,
                          "%s: stage %d holds only a module's own code (from %s), which "
                          "pipeline() cannot split off: cut the stages elsewhere",
                          x->plan_file, g >= m->n_leaves ? s : s - 1,
                          m->leaves[g >= m->n_leaves ? f : p->partition.first[s - 1]]->name);
        prev = g;
    }
    int cuts_ok = 1;
    for (int s = 0; s < x->n_stages; s++)
        cuts_ok &= x->stage_unit[s] >= 0;
    int reference = std_gpt(x) && cuts_ok;
    sc_status st = notes(x, e, reference);
    if (st)
        return st;

    const char *sched = schedule_class(p);
    int oom = 0;
    cJSON *js = e->settings;
    sc_jadd_str(js, "schedule_class", sched ? sched : "none (pp = 1)", &oom);
    sc_jadd_num(js, "n_microbatches", p->m, &oom);
    sc_jadd_num(js, "stages_per_rank", p->v, &oom);
    sc_jadd_str(js, "data_parallel",
                p->dp == 1      ? "none"
                : p->zero == 3  ? "FSDP2, resharded after the forward"
                : p->zero == 2  ? "FSDP2, kept whole until the backward"
                : !reference    ? "all-reduce after the step"
                : p->zero == 1  ? "DDP + ZeroRedundancyOptimizer"
                                : "DDP",
                &oom);
    sc_jadd_num(js, "bucket_cap_mb", p->bucket_bytes / (1 << 20), &oom);
    sc_jadd_bool(js, "reference_model", reference, &oom);
    cJSON *sp = sc_jadd_arr(js, "split_points", &oom);
    for (int s = 1; sp && s < x->n_stages; s++)
        sc_jpush_str(sp, split_module(m, p->partition.first[s])->name, &oom);
    if (oom)
        return SC_ENOMEM;

    sc_buf b = {0};
    sc_buf_printf(&b, "#!/usr/bin/env python3\n"
                      "# torch.distributed.pipelining run of a stagecraft plan.\n"
                      "# Written by stagecraft export from\n");
    ex_plan_line(x, &b, "#   ");
    ex_wrap(&b, "# ", "#   ", "API checked against " TORCH_CHECKED ".");
    sc_buf_printf(&b, "#\n");
    if (e->n_notes) {
        sc_buf_printf(&b, "# What torch.distributed.pipelining does differently from the plan:\n");
        ex_notes_comment(e, &b, "#");
    } else {
        sc_buf_printf(&b, "# torch.distributed.pipelining runs the plan as it stands.\n");
    }
    sc_buf_printf(&b,
                  "#\n"
                  "# Run it on %s%d node%s (NODE_RANK 0..%d):\n"
                  "#   torchrun --nnodes %d --nproc-per-node %d --node-rank $NODE_RANK \\\n"
                  "#       --master-addr $MASTER_ADDR --master-port 29500 torch_pipeline.py%s\n"
                  "\"\"\"torch.distributed.pipelining run of plan %s (stagecraft export).\"\"\"\n\n"
                  "import argparse\n"
                  "import contextlib\n"
                  "import importlib.util\n"
                  "import inspect\n"
                  "import os\n\n"
                  "import torch\n"
                  "import torch.distributed as dist\n"
                  "import torch.distributed.pipelining as pipelining\n"
                  "import torch.nn as nn\n"
                  "import torch.nn.functional as F\n"
                  "from torch.distributed.optim import ZeroRedundancyOptimizer\n"
                  "from torch.distributed.pipelining import PipelineStage, SplitPoint, pipeline\n"
                  "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                  "from torch.utils.checkpoint import checkpoint\n\n",
                  x->nodes > 1 ? "each of the " : "the ", x->nodes, x->nodes > 1 ? "s" : "",
                  x->nodes - 1, x->nodes, x->per_node,
                  reference ? "" : " \\\n#       --factory FILE.py:FUNC",
                  sc_basename(x->plan_file));
    sc_buf_printf(&b, "MODEL_NAME = \"%s\"\nDP, TP, PP, V = %d, %d, %d, %d\nWORLD = %d\n"
                      "N_MICROBATCHES = %d\nMBS = %d\nSEQ = %d\n",
                  p->model_name, p->dp, p->tp, p->pp, p->v, x->world, p->m, p->mbs, m->seq_len);
    if (x->gpt.ok)
        sc_buf_printf(&b, "VOCAB = %d\n", x->gpt.vocab);
    else
        sc_buf_printf(&b, "VOCAB = None\n");
    sc_buf_printf(&b, "# what the plan priced as the loss (a cross-entropy kernel on its head)\n"
                      "PRICED_LOSS = %s\n",
                  priced_ce(m) ? "\"cross_entropy\"" : "None");
    sc_buf_printf(&b, "# rank order, innermost axis first (the plan's placement)\n"
                      "PLACEMENT = [\"%s\", \"%s\", \"%s\"]\n",
                  ex_axis(x->order[0]), ex_axis(x->order[1]), ex_axis(x->order[2]));
    if (sched)
        sc_buf_printf(&b, "SCHEDULE = \"%s\"\n", sched);
    else
        sc_buf_printf(&b, "SCHEDULE = None  # pp = 1: microbatches with gradient accumulation\n");
    sc_buf_printf(&b, "# stage s + 1 begins at the module SPLIT_POINTS[s] (stage i = chunk * PP + "
                      "pp rank)\nSPLIT_POINTS = [");
    for (int s = 1; s < x->n_stages; s++)
        sc_buf_printf(&b, "%s\"%s\"", s > 1 ? ", " : "",
                      split_module(m, p->partition.first[s])->name);
    sc_buf_printf(&b, "]\n");
    if (reference) {
        sc_buf_printf(&b, "# the units of each stage, for the reference model\nSTAGE_UNITS = [\n");
        for (int s = 0; s < x->n_stages; s++) {
            sc_buf_printf(&b, "    [");
            for (int u = x->stage_unit[s]; u < x->stage_unit[s + 1]; u++)
                sc_buf_printf(&b, "%s\"%s\"", u > x->stage_unit[s] ? ", " : "",
                              x->units[u].mod->name);
            sc_buf_printf(&b, "],\n");
        }
        sc_buf_printf(&b, "]\n");
        const ex_gpt *g = &x->gpt;
        sc_buf_printf(&b, "GPT = {\"layers\": %d, \"hidden\": %d, \"heads\": %d, \"kv\": %d, "
                          "\"ffn\": %d, \"vocab\": %d,\n       \"seq\": %d, \"tied\": %s, "
                          "\"pos_embed\": %s}\n",
                      g->layers, g->hidden, g->heads, g->kv, g->ffn, g->vocab, g->seq,
                      g->tied ? "True" : "False", g->pos_embed ? "True" : "False");
    } else {
        sc_buf_printf(&b, "STAGE_UNITS = None\nGPT = None\n");
    }
    sc_buf_printf(&b, "ZERO = %d\nRECOMPUTE = \"%s\"\nATTENTION = \"%s\"\nDTYPE = \"%s\"\n"
                      "REDUCE_DTYPE = \"%s\"\nBUCKET_MIB = %.17g\n",
                  p->zero, sc_recompute_name(p->recompute), sc_attn_name(p->attn),
                  py_dtype(m->dtype),
                  p->grad_reduce_in_fp32 ? "float32" : py_dtype(m->dtype),
                  p->bucket_bytes / (1 << 20));
    sc_buf_printf(&b, "# ZeRO 2-3: the FSDP units, one per layer (the root unit holds the rest)\n"
                      "FSDP_UNITS = [");
    for (int u = 0, n = 0; p->zero >= 2 && u < x->n_units; u++)
        if (x->units[u].block >= 0)
            sc_buf_printf(&b, "%s\"%s\"", n++ ? ", " : "", x->units[u].mod->name);
    sc_buf_printf(&b, "]\n");
    for (size_t i = 0; i < SC_ARRAY_LEN(body); i++)
        sc_buf_printf(&b, "%s\n", body[i]);
    st = ex_file(e, "torch_pipeline.py", &b);
    sc_buf_free(&b);
    return st;
}

const sc_export_target sc_export_torch = {
    .name = "torch",
    .framework = "torch.distributed.pipelining",
    .description = "a runnable torch.distributed.pipelining program (torch_pipeline.py)",
    .checked = TORCH_CHECKED,
    .build = build,
};
