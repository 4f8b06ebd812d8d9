#!/usr/bin/env python3
"""torch_trace.py - trace a PyTorch model into stagecraft's model format.

usage: torch_trace.py SPEC [--batch B] [--seq S] [--image N] [--dtype D]
                      [--repeat R] [--threads T] [--device-name NAME] -o FILE

SPEC is one of
  NAME[:k=v,...]          a torchvision classification model built with random
                          weights (weights=None; nothing is downloaded), e.g.
                          resnet50, vit_b_16 (with --image N the ViTs get
                          image_size=N), convnext_tiny:stochastic_depth_prob=0;
                          k=v pairs are passed to the builder
  transformer[:k=v,...]   torch.nn.Transformer (also spelled nn.Transformer,
                          torch.nn.Transformer); keys are its constructor's:
                          d_model, nhead, num_encoder_layers,
                          num_decoder_layers, dim_feedforward, dropout,
                          activation, norm_first (batch_first is always true).
                          Inputs: src and tgt of shape (B, S, d_model), a
                          causal tgt_mask.
  transformer_encoder[:k=v,...]
                          torch.nn.TransformerEncoder of num_layers
                          TransformerEncoderLayers (d_model, nhead,
                          num_layers, dim_feedforward, dropout, activation,
                          norm_first); input (B, S, d_model)
  FILE.py:FACTORY[:k=v,...]
                          your own model: FACTORY(**kw) is called with the k=v
                          pairs plus whichever of batch, seq, image its
                          signature names (all three if it takes **kwargs),
                          and returns either an nn.Module or
                          (module, example_inputs): a tensor, a tuple/list of
                          positional arguments, or a dict of keyword
                          arguments. The first dimension of the first tensor
                          is the batch. Without example inputs the tracer
                          guesses from the first submodule: Embedding ->
                          token ids (B, seq); Conv2d -> (B, C, image, image);
                          Conv1d -> (B, C, seq); Linear -> (B, seq, in).

What it does: builds the model in train mode on the CPU (every `inplace`
flag switched off so that full backward hooks work), runs one forward and one
backward pass with module hooks to record structure, parameters, FLOPs,
activation sizes and data flow, then R more forward+backward passes (--repeat,
default 3) that only take times; the median of those is written.

What it writes (stagecraft.model/1; every quantity per sample = per batch
element, i.e. per image or per sequence):
  tree      the nn.Module hierarchy, root = the model. Children appear in the
            order they first ran (execution order is the depth-first order of
            the leaves). A module that never ran (e.g. the out_proj of an
            nn.MultiheadAttention, whose weight the parent uses directly) is
            folded into its nearest ancestor that ran. The simulator reads
            leaves only, so a module that ran children AND owns parameters or
            saved activations of its own (ViT's class token, ConvNeXt's layer
            scale, an attention module computing softmax(QK^T)V inline) gets a
            synthetic leaf child NAME#self (kind "self") carrying them, placed
            where its first saved tensor was recorded (before the first child
            when none was).
  params    parameters owned directly (recurse=False). A parameter registered
            in several modules (tied weights) is counted once, by the first
            owner in execution order; all modules using it, by registration
            or because autograd saved it while they ran, get the same
            `shared` group "tied:<qualified name of the parameter>".
            Buffers (BatchNorm running stats) are not parameters. The sum
            equals sum(p.numel() for p in model.parameters()), which is
            printed and written as x-torch.params.
  kind      the class name in lower case, except: nn.MultiheadAttention ->
            "attention" (or "cross_attention" when key is not query), with
            dims hidden, heads, kv, seq, kv_seq; and "block" for every direct
            element of an nn.Sequential / nn.ModuleList whose >= 2 elements are
            all of one class, each with children and parameters (transformer
            layers, ResNet bottlenecks, ViT encoder blocks). The uniform
            partitioner counts the outermost blocks as layers.
  flops_fwd from the shapes seen by the hooks, per sample: Linear
            2*in*out per token; Conv 2*(Cin/groups)*prod(k)*Cout*prod(out
            spatial) (ConvTranspose: 2*Cin*(Cout/groups)*prod(k)*prod(in
            spatial)); MultiheadAttention projections 2*Lq*E*E (Q) + 2*Lk*kdim*E
            (K) + 2*Lk*vdim*E (V) + 2*Lq*E*E (out) plus 2*2*Lq*Lk*E for scores
            and values. Everything else (norms, activations, pooling,
            element-wise ops, matmuls written inline in forward) counts 0.
            flops_bwd is left out: the loader takes 2 x forward.
  act_out_bytes   bytes of the tensors the module returned (first call).
  act_saved_bytes bytes of the tensors autograd saved for backward while the
            module (and not a child) was the innermost module running,
            counted with torch.autograd.graph.saved_tensors_hooks: each
            storage once (the first module to save it), parameters and
            buffers excluded. Bytes of floating-point tensors are scaled from
            the traced element size (normally 4) to --dtype (default bf16: 2);
            integer and bool tensors (dropout masks, indices) are kept as is.
  measured  {fwd_s, bwd_s, device} per sample: wall-clock time of the
            module's own work (leaf: its whole call; container: its call minus
            its children's), summed over calls, median over --repeat passes,
            divided by the batch. Forward: forward pre/post hooks. Backward:
            every autograd node a module's own forward created (walking back
            from its outputs' grad_fn to its inputs' grad_fn, innermost module
            first) gets a post hook; the CPU autograd engine runs one node at
            a time, so a node's time is the gap since the previous node
            finished. (Full backward hooks are not used for timing: they break
            on in-place ops applied to a module's output, such as ResNet's
            `out += identity`.) device is
            "cpu:<model name from /proc/cpuinfo>" unless --device-name says
            otherwise. stagecraft's cost model uses measured times only when
            the device equals the cluster's gpu.name (e.g. --device-name
            cpu-core --threads 1 for the cpu-local cluster); otherwise it
            uses its roofline on flops and bytes. Each node's x-torch gives
            the class, the number of calls and the inclusive times.
  inputs    non-sequential data flow: every output tensor is tagged with the
            modules that returned it (by storage pointer, innermost first);
            when a module's forward receives a tensor whose outermost
            producer (not an ancestor of the consumer) is not the module that
            finished last before it started (nor its ancestor or
            descendant), that producer is recorded, on the innermost module
            receiving it. An edge to a module that does not finish before the
            consumer starts in execution order (a module called twice) is
            dropped and counted in a warning.
  dims      hidden/out/seq for Linear, hidden/vocab/seq for Embedding,
            in/out/k for Conv, hidden/heads/kv/seq/kv_seq for attention.
  seq_len   --seq for sequence models; otherwise the longest attention
            sequence seen, else 1.

Errors: one line on stderr ("torch_trace.py: ..."), exit status 2 for a bad
SPEC, bad options or a model that cannot be built or run; nothing is written
(the file is written to a temporary name and renamed at the end).
"""
import argparse
import hashlib
import importlib.util
import inspect
import json
import math
import os
import statistics
import sys
import tempfile
import time
import warnings

PROG = "torch_trace.py"
NAME_MAX = 128
KIND_MAX = 64
MAX_DEPTH = 64
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}


class TraceError(Exception):
    """A user-facing failure: one line, exit status 2."""


def one_line(e):
    s = "%s: %s" % (type(e).__name__, e) if not isinstance(e, TraceError) else str(e)
    s = " ".join(s.split())
    return s if len(s) <= 600 else s[:597] + "..."


def warn(msg):
    print("%s: warning: %s" % (PROG, msg), file=sys.stderr)


# ---- arguments ---------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise TraceError("%s (see --help)" % message)


def parse_args(argv):
    p = Parser(prog=PROG, add_help=False, usage="%(prog)s SPEC [options] -o FILE")
    p.add_argument("spec", nargs="?")
    p.add_argument("-o", "--output")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--seq", type=int, default=None)
    p.add_argument("--image", type=int, default=None)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device-name", default=None)
    p.add_argument("--name", default=None)
    p.add_argument("-h", "--help", action="store_true")
    a = p.parse_args(argv)
    if a.help:
        return a
    if not a.spec:
        raise TraceError("which model? give a SPEC (see --help)")
    if not a.output:
        raise TraceError("-o FILE is required")
    if a.dtype not in DTYPE_BYTES:
        raise TraceError("--dtype: unknown '%s' (fp32, tf32, fp16, bf16, fp8)" % a.dtype)
    for k in ("batch", "seq", "image", "repeat", "threads"):
        v = getattr(a, k)
        if v is not None and (v < 1 or v > 1000000):
            raise TraceError("--%s: %d is out of range [1, 1000000]" % (k, v))
    a.batch_given = a.batch
    if a.batch is None:
        a.batch = 1
    return a


def parse_kv(s, where):
    out = {}
    if not s:
        return out
    for part in s.split(","):
        if "=" not in part:
            raise TraceError("%s: '%s' is not KEY=VALUE" % (where, part))
        k, v = part.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise TraceError("%s: '%s' is not a parameter name" % (where, k))
        out[k] = parse_value(v.strip())
    return out


def parse_value(v):
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


# ---- building the model ------------------------------------------------------


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine() or "unknown"


def build(args, torch):
    """Returns (name, module, args_tuple, kwargs_dict, batch, seq_len or None)."""
    nn = torch.nn
    spec = args.spec
    B = args.batch
    if ".py:" in spec or spec.endswith(".py"):
        return build_file(args, torch)
    name, _, kvs = spec.partition(":")
    kw = parse_kv(kvs, spec)
    if name in ("transformer", "nn.Transformer", "torch.nn.Transformer",
                "transformer_encoder", "nn.TransformerEncoder", "torch.nn.TransformerEncoder"):
        S = args.seq or 128
        enc_only = "Encoder" in name or name == "transformer_encoder"
        kw.setdefault("d_model", 512)
        kw.setdefault("nhead", 8)
        d = kw["d_model"]
        try:
            if enc_only:
                layers = kw.pop("num_layers", 6)
                layer = nn.TransformerEncoderLayer(batch_first=True, **kw)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = nn.TransformerEncoder(layer, layers)
                x = torch.randn(B, S, d)
                return "transformer_encoder", m, (x,), {}, B, S
            m = nn.Transformer(batch_first=True, **kw)
        except TypeError as e:
            raise TraceError("cannot build '%s': %s" % (spec, e))
        src, tgt = torch.randn(B, S, d), torch.randn(B, S, d)
        mask = m.generate_square_subsequent_mask(S)
        return "transformer", m, (src, tgt), {"tgt_mask": mask}, B, S
    import torchvision
    models = torchvision.models
    classif = set(models.list_models(module=models))
    if name not in classif:
        if name in set(models.list_models()):
            raise TraceError("'%s' is a torchvision model but not an image classifier; only "
                             "classification models are traced by name (wrap others in "
                             "FILE.py:FACTORY)" % name)
        raise TraceError("unknown model '%s': not a torchvision classification model (e.g. "
                         "resnet50, vit_b_16), transformer[:k=v,...], "
                         "transformer_encoder[:k=v,...] or FILE.py:FACTORY" % name)
    if "weights" in kw and kw["weights"] is not None:
        raise TraceError("%s: weights are never loaded (nothing is downloaded); drop 'weights'" % spec)
    kw["weights"] = None
    img = args.image or 224
    if name.startswith("vit_") and args.image and "image_size" not in kw:
        kw["image_size"] = args.image
    if "image_size" in kw:
        img = kw["image_size"]
    try:
        m = models.get_model(name, **kw)
    except Exception as e:
        raise TraceError("cannot build '%s': %s" % (spec, one_line(e)))
    return name, m, (torch.randn(B, 3, img, img),), {}, B, None


def build_file(args, torch):
    spec = args.spec
    path, sep, rest = spec.partition(".py:")
    path += ".py"
    if not sep:
        raise TraceError("%s: name the factory: FILE.py:FACTORY" % spec)
    fac, _, kvs = rest.partition(":")
    if not fac.isidentifier():
        raise TraceError("%s: '%s' is not a function name" % (spec, fac))
    kw = parse_kv(kvs, spec)
    if not os.path.isfile(path):
        raise TraceError("%s: no such file" % path)
    try:
        ms = importlib.util.spec_from_file_location("torch_trace_user_%d" % os.getpid(), path)
        mod = importlib.util.module_from_spec(ms)
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        ms.loader.exec_module(mod)
    except Exception as e:
        raise TraceError("%s: cannot import: %s" % (path, one_line(e)))
    f = getattr(mod, fac, None)
    if not callable(f):
        raise TraceError("%s: no function '%s'" % (path, fac))
    try:
        sig = inspect.signature(f)
        anykw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
        offer = {"batch": args.batch_given, "seq": args.seq, "image": args.image}
        for k, v in offer.items():
            if v is not None and (anykw or k in sig.parameters) and k not in kw:
                kw[k] = v
    except (TypeError, ValueError):
        pass
    try:
        r = f(**kw)
    except Exception as e:
        raise TraceError("%s: %s(...) failed: %s" % (spec, fac, one_line(e)))
    inputs = None
    if isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], torch.nn.Module):
        r, inputs = r
    if not isinstance(r, torch.nn.Module):
        raise TraceError("%s: %s returned %s, not an nn.Module or (module, example_inputs)"
                         % (spec, fac, type(r).__name__))
    m = r
    seq = args.seq
    if inputs is None:
        a, seq = guess_inputs(m, args, torch)
        kwargs = {}
    elif isinstance(inputs, torch.Tensor):
        a, kwargs = (inputs,), {}
    elif isinstance(inputs, (tuple, list)):
        a, kwargs = tuple(inputs), {}
    elif isinstance(inputs, dict):
        a, kwargs = (), dict(inputs)
    else:
        raise TraceError("%s: example_inputs is a %s; give a tensor, a tuple/list or a dict"
                         % (spec, type(inputs).__name__))
    first = next((t for t in list(a) + list(kwargs.values()) if isinstance(t, torch.Tensor)), None)
    if first is None or first.dim() == 0:
        raise TraceError("%s: example_inputs hold no tensor with a batch dimension" % spec)
    B = first.shape[0]
    if seq is None and first.dim() == 2 and not first.is_floating_point():
        seq = first.shape[1]
    return os.path.splitext(os.path.basename(path))[0], m, a, kwargs, B, seq


def guess_inputs(m, args, torch):
    nn = torch.nn
    B, S, img = args.batch, args.seq or 128, args.image or 224
    for _, x in m.named_modules():
        if isinstance(x, nn.Embedding):
            return (torch.randint(0, x.num_embeddings, (B, S)),), S
        if isinstance(x, nn.Conv2d):
            return (torch.randn(B, x.in_channels, img, img),), None
        if isinstance(x, nn.Conv1d):
            return (torch.randn(B, x.in_channels, S),), S
        if isinstance(x, nn.Linear):
            return (torch.randn(B, S, x.in_features),), S
    raise TraceError("cannot guess an input for %s: have the factory return "
                     "(module, example_inputs)" % type(m).__name__)


# ---- tracing -------------------------------------------------------------------


class Rec:
    """What the hooks learn about one nn.Module."""

    def __init__(self, name, module, parent):
        self.name = name
        self.module = module
        self.parent = parent
        self.kids = []
        self.calls = 0
        self.first_seq = None
        self.flops = 0.0
        self.saved = 0.0
        self.out_bytes = None
        self.in_bytes = None
        self.dims = {}
        self.kind = None
        self.own_event_seq = None
        self.edges = []  # producer Recs
        self.fwd = []    # per pass: inclusive forward seconds
        self.bwd = []    # per pass: inclusive backward seconds
        self.uses = set()  # ids of parameters used (saved) that are not in its subtree

    def ancestors(self):
        p = self.parent
        while p:
            yield p
            p = p.parent

    def is_ancestor_of(self, other):
        return any(a is self for a in other.ancestors())


def flatten_tensors(obj, torch, out=None, depth=0):
    if out is None:
        out = []
    if depth > 8:
        return out
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            flatten_tensors(x, torch, out, depth + 1)
    elif isinstance(obj, dict):
        for x in obj.values():
            flatten_tensors(x, torch, out, depth + 1)
    return out


def storage_ptr(t):
    try:
        return t.storage().data_ptr()
    except Exception:
        return t.data_ptr()


class Tracer:
    def __init__(self, torch, model, args_, kwargs, B, dtype_bytes):
        self.torch = torch
        self.model = model
        self.args = args_
        self.kwargs = kwargs
        self.B = B
        self.db = dtype_bytes
        self.recs = {}
        self.order = []
        self.seq = 0
        self.stack = []
        self.handles = []
        self.root = self._make_recs(model)
        # parameter / buffer storages
        self.param_by_ptr = {}
        for n, p in model.named_parameters():
            self.param_by_ptr.setdefault(storage_ptr(p), p)
        self.buffer_ptrs = {storage_ptr(b) for b in model.buffers()}
        self.subtree_params = {}

    def _make_recs(self, model):
        root = Rec("", model, None)
        self.recs[id(model)] = root
        todo = [root]
        while todo:
            r = todo.pop()
            for cname, c in r.module.named_children():
                if c is None or id(c) in self.recs:
                    continue  # a module registered twice stays where it first appeared
                q = Rec(r.name + "." + cname if r.name else cname, c, r)
                self.recs[id(c)] = q
                r.kids.append(q)
                todo.append(q)
        return root

    def bytes_of(self, t):
        n = t.numel() * t.element_size()
        if t.is_floating_point():
            n = n * self.db / t.element_size()
        return float(n)

    def out_bytes(self, obj):
        return sum(self.bytes_of(t) for t in flatten_tensors(obj, self.torch))

    # -- pass 1: structure, flops, activations, data flow -------------------
    def analyse(self):
        torch = self.torch
        producers = {}  # storage ptr -> [Rec, ...] innermost first
        keep = []
        finished = [None]

        def pre(mod, inp):
            r = self.recs.get(id(mod))
            if r is None:
                return
            self.seq += 1
            r.calls += 1
            if r.first_seq is None:
                r.first_seq = self.seq
                r.in_bytes = self.out_bytes(inp)
            last = finished[0]
            for t in flatten_tensors(inp, torch):
                ps = producers.get(storage_ptr(t))
                if not ps:
                    continue
                cand = [p for p in ps if p is not r and not p.is_ancestor_of(r)]
                if not cand:
                    continue
                p = cand[-1]
                if last is not None and (p is last or p.is_ancestor_of(last) or last.is_ancestor_of(p)):
                    continue
                if p not in r.edges:
                    r.edges.append(p)
            self.stack.append(r)

        def post(mod, inp, out):
            r = self.recs.get(id(mod))
            if r is None:
                return
            if self.stack and self.stack[-1] is r:
                self.stack.pop()
            if r.calls == 1:
                r.out_bytes = self.out_bytes(out)
                self.shape_flops(r, mod, inp, out, first=True)
            else:
                self.shape_flops(r, mod, inp, out, first=False)
            for t in flatten_tensors(out, torch):
                producers.setdefault(storage_ptr(t), []).append(r)
                keep.append(t)
            finished[0] = r

        seen = set()

        def pack(t):
            r = self.stack[-1] if self.stack else self.root
            ptr = storage_ptr(t)
            if ptr in self.param_by_ptr:
                p = self.param_by_ptr[ptr]
                if id(p) not in self._subtree(r):
                    r.uses.add(id(p))
                return t
            if ptr in self.buffer_ptrs or ptr in seen:
                return t
            seen.add(ptr)
            try:
                n = t.storage().nbytes()
                if t.is_floating_point():
                    n = n * self.db / t.element_size()
            except Exception:
                n = self.bytes_of(t)
            r.saved += float(n)
            if r.own_event_seq is None:
                r.own_event_seq = self.seq
            return t

        for r in self.recs.values():
            self.handles.append(r.module.register_forward_pre_hook(pre))
            self.handles.append(r.module.register_forward_hook(post))
        try:
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                try:
                    out = self.model(*self.args, **self.kwargs)
                except Exception as e:
                    raise TraceError("forward failed: %s" % one_line(e))
        finally:
            self.remove_hooks()
        loss = self.loss(out)
        try:
            loss.backward()
        except Exception as e:
            raise TraceError("backward failed: %s" % one_line(e))
        self.model.zero_grad(set_to_none=True)
        keep.clear()
        producers.clear()
        for r in self.recs.values():  # per sample from here on
            r.flops /= self.B
            r.saved /= self.B

    def _subtree(self, r):
        s = self.subtree_params.get(id(r))
        if s is None:
            s = {id(p) for p in r.module.parameters()}
            self.subtree_params[id(r)] = s
        return s

    def loss(self, out):
        ts = [t for t in flatten_tensors(out, self.torch)
              if t.is_floating_point() and t.requires_grad]
        if not ts:
            raise TraceError("the forward pass returned no floating-point tensor that requires "
                             "grad: nothing to backpropagate")
        return sum(t.float().mean() for t in ts)

    def shape_flops(self, r, mod, inp, out, first):
        nn = self.torch.nn
        B = self.B
        ins = flatten_tensors(inp, self.torch)
        x = ins[0] if ins else None
        f = 0.0
        if isinstance(mod, nn.Linear) and x is not None:
            tokens = x.numel() / max(mod.in_features, 1)
            f = 2.0 * mod.in_features * mod.out_features * tokens
            if first:
                r.dims.update(hidden=mod.in_features, out=mod.out_features, seq=tokens / B)
        elif isinstance(mod, nn.modules.conv._ConvNd) and x is not None:
            outs = flatten_tensors(out, self.torch)
            k = 1
            for v in mod.kernel_size:
                k *= v
            if isinstance(mod, nn.modules.conv._ConvTransposeMixin):
                spatial = x.numel() / max(mod.in_channels, 1)
                f = 2.0 * mod.in_channels * (mod.out_channels / mod.groups) * k * spatial
            elif outs:
                spatial = outs[0].numel() / max(mod.out_channels, 1)
                f = 2.0 * (mod.in_channels / mod.groups) * k * mod.out_channels * spatial
            if first:
                r.dims.update({"in": mod.in_channels, "out": mod.out_channels,
                               "k": mod.kernel_size[0]})
        elif isinstance(mod, nn.MultiheadAttention) and (ins or flatten_tensors(out, self.torch)):
            if len(ins) >= 2:
                q, kk = ins[0], ins[1]
            else:  # called with keywords (the hooks see positional arguments only):
                q = kk = flatten_tensors(out, self.torch)[0]  # take self-attention
            bf = getattr(mod, "batch_first", False)
            if q.dim() == 3:
                Lq = q.shape[1] if bf else q.shape[0]
                Lk = kk.shape[1] if bf else kk.shape[0]
                nb = q.shape[0] if bf else q.shape[1]
            else:
                Lq, Lk, nb = q.shape[0], kk.shape[0], 1
            E = mod.embed_dim
            per = (2.0 * Lq * E * E + 2.0 * Lk * mod.kdim * E + 2.0 * Lk * mod.vdim * E
                   + 2.0 * Lq * E * E + 2.0 * 2.0 * Lq * Lk * E)
            f = per * nb
            if first:
                cross = storage_ptr(kk) != storage_ptr(q)
                r.kind = "cross_attention" if cross else "attention"
                r.dims.update(hidden=E, heads=mod.num_heads, kv=mod.head_dim, seq=Lq)
                if cross or Lk != Lq:
                    r.dims["kv_seq"] = Lk
        elif isinstance(mod, nn.Embedding) and x is not None:
            if first:
                r.dims.update(hidden=mod.embedding_dim, vocab=mod.num_embeddings,
                              seq=x.numel() / B)
        elif isinstance(mod, nn.LayerNorm) and x is not None and first:
            h = 1
            for v in mod.normalized_shape:
                h *= v
            r.dims.update(hidden=h, seq=x.numel() / max(h, 1) / B)
        r.flops += f

    # -- passes 2..: times ------------------------------------------------------
    def time_passes(self, repeat):
        """Forward: pre/post hooks, inclusive per call. Backward: every autograd
        node created by a module's own forward (found by walking back from its
        outputs' grad_fn to its inputs' grad_fn, innermost module first) gets a
        post hook; the CPU engine runs nodes one at a time, so a node's time is
        the gap since the previous node finished."""
        torch = self.torch
        recs = [r for r in self.recs.values() if r.calls > 0]
        for r in recs:
            r.fwd, r.bwd = [], []
        for _ in range(repeat):
            fstart, fsum, stops = {}, {}, {}
            owner = {}      # autograd node -> Rec
            done = []       # (time, Rec) in completion order

            def pre(mod, inp):
                k = id(mod)
                stops.setdefault(k, []).append(
                    {t.grad_fn for t in flatten_tensors(inp, torch) if t.grad_fn is not None})
                fstart.setdefault(k, []).append(time.perf_counter())

            def post(mod, inp, out):
                t1 = time.perf_counter()
                k = id(mod)
                t0 = fstart[k].pop()
                fsum[k] = fsum.get(k, 0.0) + (t1 - t0)
                stop = stops[k].pop()
                r = self.recs[k]
                todo = [t.grad_fn for t in flatten_tensors(out, torch) if t.grad_fn is not None]
                while todo:
                    n = todo.pop()
                    if n is None or n in stop or n in owner:
                        continue
                    owner[n] = r
                    todo.extend(nf for nf, _ in n.next_functions)

            hs = []
            for r in recs:
                hs.append(r.module.register_forward_pre_hook(pre))
                hs.append(r.module.register_forward_hook(post))
            try:
                try:
                    out = self.model(*self.args, **self.kwargs)
                except Exception as e:
                    raise TraceError("timing pass failed: %s" % one_line(e))
            finally:
                for h in hs:
                    h.remove()
            loss = self.loss(out)
            todo, seen = [loss.grad_fn], set()
            while todo:  # nodes outside every module (the loss) belong to the root
                n = todo.pop()
                if n is None or n in seen:
                    continue
                seen.add(n)
                owner.setdefault(n, self.root)
                todo.extend(nf for nf, _ in n.next_functions)
            for n, r in owner.items():
                n.register_hook(lambda gi, go, r=r: done.append((time.perf_counter(), r)))
            t_prev = time.perf_counter()
            try:
                loss.backward()
            except Exception as e:
                raise TraceError("timing pass failed in backward: %s" % one_line(e))
            bsum = {}
            for t, r in done:
                bsum[id(r)] = bsum.get(id(r), 0.0) + (t - t_prev)
                t_prev = t
            owner.clear()
            done.clear()
            out = loss = None
            self.model.zero_grad(set_to_none=True)
            for r in recs:
                r.fwd.append(fsum.get(id(r.module), 0.0))
                r.bwd.append(bsum.get(id(r), 0.0))  # own (exclusive) backward time
        for r in recs:
            r.fwd_s = statistics.median(r.fwd) if r.fwd else 0.0
            r.bwd_own_s = statistics.median(r.bwd) if r.bwd else 0.0

    def remove_hooks(self):
        for h in self.handles:
            h.remove()
        self.handles = []


# ---- building the stagecraft tree -----------------------------------------------


class Node:
    def __init__(self, name, kind, rec=None):
        self.name = name
        self.kind = kind
        self.rec = rec
        self.children = []
        self.parent = None
        self.params = 0.0
        self.param_ids = []     # parameters it carries (registrations)
        self.flops = 0.0
        self.saved = 0.0
        self.out = 0.0
        self.fwd = 0.0
        self.bwd = 0.0
        self.fwd_incl = 0.0
        self.bwd_incl = 0.0
        self.dims = {}
        self.inputs = []
        self.shared = None
        self.uses = set()
        self.xtorch = {}


def shorten(name, taken):
    if len(name) > NAME_MAX:
        h = hashlib.sha1(name.encode()).hexdigest()[:8]
        tail = NAME_MAX - 50 - 10
        name = name[:50] + "~" + h + "~" + name[-tail:]
    base, i = name, 2
    while name in taken:
        sfx = "~%d" % i
        name = base[:NAME_MAX - len(sfx)] + sfx
        i += 1
    taken.add(name)
    return name


def is_block(rec, torch):
    nn = torch.nn
    p = rec.parent
    if p is None or not isinstance(p.module, (nn.Sequential, nn.ModuleList)):
        return False
    sibs = [c for _, c in p.module.named_children()]
    if len(sibs) < 2 or any(type(c) is not type(sibs[0]) for c in sibs):
        return False
    return all(any(True for _ in c.children()) and any(True for _ in c.parameters())
               for c in sibs)


def make_tree(tr, model_name, torch, warnings_out):
    taken = set()
    nodes_by_rec = {}
    root_name_hint = model_name

    def own_params(rec):
        return [p for p in rec.module.parameters(recurse=False)]

    def fold_subtree(rec, into):
        """Adds rec's subtree (not run, or too deep) to node `into`."""
        for r in iter_subtree(rec):
            into.param_ids.extend(id(p) for p in own_params(r))
            into.flops += r.flops
            into.saved += r.saved
            into.uses |= r.uses
            nodes_by_rec[id(r)] = into

    def iter_subtree(rec):
        todo = [rec]
        while todo:
            r = todo.pop()
            yield r
            todo.extend(r.kids)

    # A module that was never called but whose descendants ran (an
    # nn.ModuleList iterated in forward) stays as a container.
    def prep(rec):
        for k in rec.kids:
            prep(k)
        act = [k for k in rec.kids if k.active]
        rec.active = rec.calls > 0 or bool(act)
        if rec.calls == 0 and act:
            act.sort(key=lambda k: k.first_seq)
            rec.first_seq = act[0].first_seq
            rec.fwd_s = sum(k.fwd_s for k in act)
            rec.out_bytes, rec.in_bytes = act[-1].out_bytes, act[0].in_bytes
        if not hasattr(rec, "bwd_own_s"):
            rec.bwd_own_s = 0.0
        if not hasattr(rec, "fwd_s"):
            rec.fwd_s = 0.0
        rec.bwd_sub = rec.bwd_own_s + sum(k.bwd_sub for k in act)

    prep(tr.root)

    def build(rec, depth):
        nm = rec.name if rec.name else root_name_hint
        kind = rec.kind or ("block" if is_block(rec, torch) else type(rec.module).__name__.lower())
        node = Node(None, kind[:KIND_MAX], rec)
        node.raw_name = nm
        nodes_by_rec[id(rec)] = node
        ran = sorted([k for k in rec.kids if k.active], key=lambda k: k.first_seq)
        unrun = [k for k in rec.kids if not k.active]
        node.out = (rec.out_bytes or 0.0) / tr.B
        node.fwd_incl, node.bwd_incl = rec.fwd_s / tr.B, rec.bwd_sub / tr.B
        node.xtorch = {"class": type(rec.module).__module__ + "." + type(rec.module).__name__,
                       "calls": rec.calls}
        own = Node(None, "self")
        own.param_ids = [id(p) for p in own_params(rec)]
        own.flops, own.saved, own.uses = rec.flops, rec.saved, set(rec.uses)
        for k in unrun:
            fold_subtree(k, own)
        if depth >= MAX_DEPTH and ran:
            for k in ran:
                fold_subtree(k, own)
            ran = []
        # own time: forward inclusive minus the children's; backward measured own
        own.fwd = max(0.0, node.fwd_incl - sum(k.fwd_s for k in ran) / tr.B)
        own.bwd = node.bwd_incl - sum(k.bwd_sub for k in ran) / tr.B
        node.dims = dict(rec.dims)
        if not ran:
            # a leaf carries everything itself
            node.param_ids, node.flops, node.saved = own.param_ids, own.flops, own.saved
            node.uses = own.uses
            node.fwd, node.bwd = own.fwd, own.bwd
            for r in list(nodes_by_rec):
                if nodes_by_rec[r] is own:
                    nodes_by_rec[r] = node
            return node
        kids = [build(k, depth + 1) for k in ran]
        if own.param_ids or own.saved > 0 or own.flops > 0:
            own.raw_name = nm + "#self"
            pos = 0
            if rec.own_event_seq is not None:
                pos = sum(1 for k in ran if k.first_seq <= rec.own_event_seq)
            if pos < len(ran):
                own.out = (ran[pos].in_bytes or 0.0) / tr.B
            else:
                own.out = node.out
            own.fwd_incl, own.bwd_incl = own.fwd, own.bwd
            own.xtorch = {"class": "(own work of %s)" % node.xtorch["class"]}
            kids.insert(pos, own)
        else:
            node.fwd, node.bwd = own.fwd, own.bwd
        for k in kids:
            k.parent = node
        node.children = kids
        return node

    root = build(tr.root, 0)
    # names, in pre-order so that the root keeps its name
    def walk(n):
        yield n
        for c in n.children:
            yield from walk(c)
    allnodes = list(walk(root))
    for n in allnodes:
        n.name = shorten(n.raw_name, taken)
    leaves = [n for n in allnodes if not n.children]
    for i, n in enumerate(leaves):
        n.leaf_index = i

    def span(n):
        a = b = n
        while a.children:
            a = a.children[0]
        while b.children:
            b = b.children[-1]
        return a.leaf_index, b.leaf_index

    # parameters: the first carrier in execution order owns each one
    carriers = {}
    for n in leaves:
        for pid in n.param_ids:
            carriers.setdefault(pid, [])
            if n not in carriers[pid]:
                carriers[pid].append(n)
    pnames = {}
    for qn, p in tr.model.named_parameters():
        pnames.setdefault(id(p), qn)
    numel = {id(p): p.numel() for p in tr.model.parameters()}
    owner = {}
    for pid, ns in carriers.items():
        owner[pid] = ns[0]
        ns[0].params += numel.get(pid, 0)
    # sharing: a parameter carried or used (saved by autograd) by several leaves
    users = {pid: list(ns) for pid, ns in carriers.items()}
    for n in leaves:
        for pid in n.uses:
            if pid in owner and n not in users[pid]:
                users[pid].append(n)
    parent = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x
    order = {id(p): i for i, p in enumerate(tr.model.parameters())}
    tied = sorted((pid for pid in users if len(users[pid]) > 1),
                  key=lambda p: order.get(p, 1 << 30))
    for pid in tied:
        r0 = find(id(users[pid][0]))
        for n in users[pid][1:]:
            r = find(id(n))
            if r != r0:
                parent[r] = r0
    gname = {}
    for pid in tied:
        gname.setdefault(find(id(users[pid][0])), "tied:" + pnames.get(pid, "param"))
    for pid in tied:
        for n in users[pid]:
            n.shared = gname[find(id(n))]
    # data flow edges: keep them on the innermost consumer, drop invalid ones
    dropped = []
    edge_of = {}
    for n in allnodes:
        if n.rec is None:
            continue
        for p in n.rec.edges:
            pn = nodes_by_rec.get(id(p))
            if pn is None or pn is n:
                continue
            edge_of.setdefault(id(n), []).append(pn)
    for n in allnodes:
        es = edge_of.get(id(n), [])
        if not es:
            continue
        xf, _ = span(n)
        for pn in es:
            # an edge that a descendant also records is that descendant's
            if any(pn in edge_of.get(id(d), []) for d in walk(n) if d is not n):
                continue
            _, yl = span(pn)
            if yl >= xf:
                dropped.append("%s <- %s" % (n.name, pn.name))
                continue
            if pn.name not in n.inputs:
                n.inputs.append(pn.name)
    if dropped:
        warnings_out.append("dropped %d inputs edge(s) that do not finish before their consumer "
                            "starts in execution order (a module called more than once?): %s%s"
                            % (len(dropped), ", ".join(dropped[:3]),
                               ", ..." if len(dropped) > 3 else ""))
    return root, allnodes


def node_json(n, device):
    j = {"name": n.name, "kind": n.kind, "params": n.params, "flops_fwd": n.flops / 1.0,
         "act_out_bytes": n.out, "act_saved_bytes": n.saved}
    if n.shared:
        j["shared"] = n.shared
    if n.inputs:
        j["inputs"] = n.inputs
    j["measured"] = {"fwd_s": n.fwd, "bwd_s": n.bwd, "device": device}
    dims = {k: float(v) for k, v in n.dims.items() if v is not None and math.isfinite(v) and v >= 0}
    if dims:
        j["dims"] = dict(list(dims.items())[:8])
    x = dict(n.xtorch)
    if n.children:
        x["fwd_incl_s"], x["bwd_incl_s"] = n.fwd_incl, n.bwd_incl
    j["x-torch"] = x
    if n.children:
        j["children"] = [node_json(c, device) for c in n.children]
    return j


def clean_numbers(j):
    """Integral floats as ints, every number finite and non-negative."""
    if isinstance(j, dict):
        return {k: clean_numbers(v) for k, v in j.items()}
    if isinstance(j, list):
        return [clean_numbers(v) for v in j]
    if isinstance(j, float):
        if not math.isfinite(j) or j < 0:
            return 0
        return int(j) if j.is_integer() and abs(j) < 2 ** 53 else j
    return j


def write_atomic(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".torch_trace.", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv):
    args = parse_args(argv)
    if args.help:
        print(__doc__.strip())
        return 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch
            import torch.nn  # noqa: F401
    except Exception as e:
        print("%s: cannot import torch (%s); install python3-torch and python3-torchvision "
              "and run with /usr/bin/python3" % (PROG, one_line(e)), file=sys.stderr)
        return 1
    d = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(d):
        raise TraceError("%s: no such directory" % d)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        name, model, a, kw, B, seq = build(args, torch)
    if args.name:
        name = args.name
    model.train()
    n_inplace = 0
    for m in model.modules():
        if isinstance(getattr(m, "inplace", None), bool) and m.inplace:
            m.inplace = False
            n_inplace += 1
    torch_params = sum(p.numel() for p in model.parameters())
    tr = Tracer(torch, model, a, kw, B, DTYPE_BYTES[args.dtype])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr.analyse()
        tr.time_passes(args.repeat)
    device = args.device_name or "cpu:" + cpu_name()
    notes = []
    root, allnodes = make_tree(tr, name, torch, notes)
    for w in notes:
        warn(w)
    traced = sum(n.params for n in allnodes)
    if traced != torch_params:
        raise TraceError("internal error: traced %d parameters but torch counts %d"
                         % (traced, torch_params))
    if seq is None:
        seqs = [n.dims.get("seq", 0) for n in allnodes if n.kind in ("attention", "cross_attention")]
        seq = int(max(seqs)) if seqs else 1
    out = {"format": "stagecraft.model/1", "name": name[:NAME_MAX], "dtype": args.dtype,
           "seq_len": max(1, int(seq)), "root": node_json(root, device[:128]),
           "x-torch": {"spec": args.spec, "params": torch_params, "torch": torch.__version__,
                       "batch": B, "repeat": args.repeat, "threads": torch.get_num_threads(),
                       "inplace_disabled": n_inplace, "device": device[:128],
                       "warnings": notes}}
    write_atomic(args.output, clean_numbers(out))
    n_leaves = sum(1 for n in allnodes if not n.children)
    print("%s: %s: %d parameters (torch: %d), %d modules (%d leaves), %.4g GFLOP/sample "
          "forward, written to %s" % (PROG, name, traced, torch_params, len(allnodes), n_leaves,
                                      sum(n.flops for n in allnodes) / 1e9, args.output))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except TraceError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
