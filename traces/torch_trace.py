#!/usr/bin/env python3
"""torch_trace.py - trace a PyTorch model into stagecraft's model format.

usage: torch_trace.py SPEC [--batch B] [--seq S] [--image N] [--dtype D]
                      [--measure [--repeat R] [--threads T] [--device-name NAME]]
                      [--loss auto|none] [--name NAME] -o FILE

SPEC is one of
  NAME[:k=v,...]          a torchvision classification model built with random
                          weights (weights=None; nothing is downloaded), e.g.
                          resnet50, vit_b_16 (with --image N the ViTs get
                          image_size=N), convnext_tiny:stochastic_depth_prob=0;
                          k=v pairs are passed to the builder. Its input is
                          (B, 3, N, N) with N from --image, else the size it
                          was built for (a ViT's image_size), else the crop
                          size its pretrained weights run at, as torchvision's
                          metadata lists it (inception_v3 299, efficientnet_b7
                          600; nothing is downloaded), else 224
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

Modes. The default is shape-only: the model is built on the meta device
(torch >= 2: `with torch.device("meta")`; torch 1.13: a TorchFunctionMode that
sends the factory functions - torch.empty, zeros, randn, arange, tensor, ... -
to the meta device; a model that cannot be built that way is built on the CPU
and its parameters, buffers and inputs are moved to meta, tied parameters
staying tied) and runs one forward pass on meta tensors: shapes, no data, no
arithmetic, seconds even for GPT-2 at sequence 1024. When the forward pass
fails on meta tensors (a data-dependent branch, .item(), an op without a meta
kernel), the model is rebuilt on the CPU and traced with one real forward
pass instead, with a warning (x-torch.mode "cpu"). --measure runs the model
for real on the CPU (every `inplace` flag switched off so that full
backward hooks work): one forward and backward pass to record, then R more
(--repeat, default 3) that only take times, whose median is written as
`measured`; --threads and --device-name apply to it. Shape-only files carry no
`measured` times (the cost model then uses its roofline).

What it writes (stagecraft.model/1; every quantity per sample = per batch
element, i.e. per image or per sequence; written to a temporary file,
renamed into place, mode 0644):
  tree      the nn.Module hierarchy, root = the model. Children appear in the
            order they first ran (execution order is the depth-first order of
            the leaves). A module that never ran (e.g. the out_proj of an
            nn.MultiheadAttention, whose weight the parent uses directly) is
            folded into its nearest ancestor that ran. The simulator reads
            leaves only, so a module that ran children AND owns parameters,
            FLOPs, saved activations or kernels of its own (ViT's class
            token, ConvNeXt's layer scale, an attention module computing
            softmax(QK^T)V inline, a block's residual adds, a concatenation
            of two towers' outputs) gets a synthetic leaf child NAME#self
            (kind "self") carrying them, placed after the children that had
            started when its first saved tensor was recorded, else when its
            own code first launched a kernel (before the first child when
            neither happened). Its own code's work is one leaf wherever it
            ran: a block's two residual adds sit after its attention. Own
            code that all ran between the same two children of a module
            list or dict never called itself (nanoGPT's token + position
            add, between transformer.wpe and transformer.drop) stands
            there, inside that container.
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
            dims hidden, heads, kv, seq, kv_seq; "block" for every direct
            element of an nn.Sequential / nn.ModuleList whose >= 2 elements are
            all of one class, each with children and parameters (transformer
            layers, ResNet bottlenecks, ViT encoder blocks; the uniform
            partitioner counts the outermost blocks as layers); and the
            tensor-parallel kinds below ("attention", "attention_core", "mlp",
            "head").
  flops_fwd counted at the dispatcher: a TorchDispatchMode sees every aten op
            the forward pass runs (below autograd, after composite ops are
            decomposed) and adds the FLOPs of each matrix product to the
            innermost module running (module pre/post hooks keep the stack;
            ops outside every module go to the root). So matmuls written
            inline in forward (q @ k.transpose(-2, -1)) count. Per op, with
            `out` the result: mm, bmm, matmul, addmm, baddbmm, linear, mv,
            addmv: 2 * out elements * the contracted size K (2*M*N*K, times
            the batch); addbmm 2*b*M*N*K; einsum 2 * the product of the sizes
            of all indices of each contraction (left to right); convolution
            2 * out elements * (Cin/groups) * kernel elements (transposed: 2 *
            in elements * (Cout/groups) * kernel elements); attention
            (scaled_dot_product_attention and its flash / efficient / math /
            cudnn kernels) 2*L*S*E + 2*L*S*Ev per batch and query head (the
            full L x S square, causal or not, as Narayanan et al. 2021 count
            it). Element-wise ops, norms, softmax and lookups count 0.
            flops_bwd is left out: the loader takes 2 x forward. x-torch of
            the model gives the FLOPs per op name.
  act_out_bytes   bytes of the tensors the module returned (first call).
  act_saved_bytes bytes of the tensors autograd saved for backward while the
            module (and not a child) was the innermost module running,
            counted with torch.autograd.graph.saved_tensors_hooks: each
            storage once (the first module to save it), parameters and
            buffers excluded. Bytes of floating-point tensors are scaled from
            the traced element size (normally 4) to --dtype (default bf16: 2);
            integer and bool tensors (indices) are kept as is, and a
            dropout's mask counts 1 byte an element, the bool mask CUDA's
            native_dropout keeps (off CUDA aten makes it a float tensor).
  tp, act_scores_bytes  tensor parallelism (Shoeybi et al. 2019, Megatron-LM;
            the layout traces/gen.c writes for its generated models), for
            the layers it recognises:
            - nn.MultiheadAttention (self or cross; torchvision's ViT
              attention is one): tp {bytes: d*s*h (the output all-reduced
              after the out projection), shardable}, dims hidden, heads, kv,
              seq (kv_seq for cross-attention);
            - an attention module written out (nanoGPT's CausalSelfAttention,
              HF-style q/k/v/o): a module with a head count attribute
              (n_head, num_heads, n_heads, nhead, num_attention_heads; or,
              as Hugging Face's recent attention, on its config) whose
              leaves are input projection(s) (one fused 3h or separate q, k,
              v; n_kv_head etc. for grouped K/V), the inline core and an out
              projection back to h: it becomes kind "attention" (dims hidden,
              heads, kv, seq), its core leaf (its #self, or a parameter-free
              child with FLOPs) kind "attention_core", the projections
              column-parallel, the out projection row-parallel (tp.bytes =
              its output);
            - an MLP: a module whose leaves are (norms or parameter-free
              leaves, then) Linear(h->f) (one, or several side by side as in
              SwiGLU), parameter-free element-wise leaves, Linear(f->h) reading
              their output, then parameter-free leaves (dropout): kind "mlp"
              (dims hidden, ffn, seq), the first linears column-parallel, the
              last row-parallel (tp.bytes = its output); the same pair found
              among a layer's own children (nn.TransformerEncoderLayer's
              linear1, dropout, linear2, each consuming the previous one's
              output) gets the same tp data without the "mlp" kind, and so
              does such a pair split across modules (Hugging Face BERT's
              BertIntermediate and BertOutput);
            - attention split across modules (Hugging Face's BERT and ViT):
              q, k, v and the core in a module with the head count, the out
              projection the next leaf, reading what that module returned
              (BertSelfOutput.dense): sharded as above, the first module
              kind "attention";
            - the LM head: the last Linear(h->V) leaf when an nn.Embedding
              with V rows and width h exists: kind "head", dims hidden, vocab,
              seq, vocab-parallel with the parallel cross-entropy (tp.bytes =
              12*s: three fp32 per token); that embedding (the token
              embedding; without a head, the largest embedding with more rows
              than the sequence) vocab-parallel (tp.bytes = its output).
            Leaves inside those split by tp (tp.shardable true, tp.bytes 0
            except where named above); tp.replicated_saved is what tp leaves
            whole on each rank: the input of a column-parallel projection,
            the embedding or the head (the bytes of its activation inputs,
            not parameters or buffers), of an MHA d*s*h for the query (plus
            d*s_kv*kdim for a cross-attention's key/value), capped at
            act_saved_bytes. act_scores_bytes, on MHA and attention_core
            leaves, is what their saved tensors of B * heads * s * s_kv
            elements hold among the softmax outputs and what element-wise ops
            made of them (the dropout mask and output; the dispatch mode tags
            their storages). A fused attention kernel (flash) saves none.
            When the model has any of these, its norms, its other
            embeddings (positions) and its parameter-free, FLOP-free leaves
            (dropout after an allreduce, activations, residual adds) get tp
            {bytes 0, shardable false}: replicated as Megatron-LM does, split
            by sequence parallelism. Everything else (convolutions, unpaired
            Linears, a class token, any leaf with parameters or FLOPs that
            fits none of the above) has no `tp`: it cannot be sharded and
            stays replicated whole on every tp rank; they are listed in
            x-torch.tp_replicated and on the summary line.
  measured  (--measure only) {fwd_s, bwd_s, device} per sample: wall-clock
            time of the module's own work (leaf: its whole call; container:
            its call minus its children's), summed over calls, median over
            --repeat passes, divided by the batch. Forward: forward pre/post
            hooks. Backward: every autograd node a module's own forward
            created (walking back from its outputs' grad_fn to its inputs'
            grad_fn, innermost module first) gets a post hook; the CPU
            autograd engine runs one node at a time, so a node's time is the
            gap since the previous node finished. (Full backward hooks are
            not used for timing: they break on in-place ops applied to a
            module's output, such as ResNet's `out += identity`.) device is
            "cpu:<model name from /proc/cpuinfo>" unless --device-name says
            otherwise. stagecraft's cost model uses measured times only when
            the device equals the cluster's gpu.name (e.g. --device-name
            cpu-core --threads 1 for the cpu-local cluster); otherwise it
            uses its roofline on flops and bytes. Each node's x-torch gives
            the class, the number of calls and the inclusive times.
  inputs    non-sequential data flow: every output tensor is tagged with the
            modules that returned it (by storage, innermost first); when a
            module's forward receives a tensor whose outermost producer (not
            an ancestor of the consumer) is not the module that finished
            last before it started (nor its ancestor or descendant), that
            producer is recorded, on the innermost module receiving it. A
            #self leaf records what its owner's own code read the same way
            (not the owner's own input: a residual is no edge), where every
            op of that code ran after the child before the leaf had
            finished and before the one after it started (LLaVA's
            concatenation of the image tokens and the text embedding). An
            edge to a module that does not finish before the consumer starts
            in execution order (a module called twice) is dropped and counted
            in a warning.
  dims      hidden/out/seq for Linear, hidden/vocab/seq for Embedding,
            in/out/k for Conv, hidden/seq for LayerNorm, and those of the
            tensor-parallel kinds above.
  seq_len   --seq for sequence models; otherwise the longest attention
            sequence seen, else 1.
  kernels   per leaf, what its own code launched (the model format's
            kernels, traces/kernel.h), recorded at the dispatcher: each
            GEMM with its shape per sample, every other op a memory-bound
            kernel of the bytes it read and wrote, one per op name. Dropout
            is the one kernel CUDA runs for it, native_dropout: it reads the
            input and writes the output and a bool mask, 2d + 1 bytes an
            element forward and backward (bwd_bytes), where aten off CUDA
            (and on meta) runs bernoulli_, div_ and mul, 12 bytes in bf16
            (a feature dropout, whose noise is smaller than its input, keeps
            those kernels: CUDA runs them too). Attention run unfused (softmax(Q K^T) V, as PyTorch 1.13's
            MultiheadAttention and inline code run it) is recognised in a
            leaf as a product of two activations, the scores (L x S over the
            head size E), followed by one contracting over their S keys, the
            context (L x E): those two, named "scores" and "context", and
            the passes over tensors of the scores' shape between them
            (scale, mask, softmax, dropout; "per": "scores") are tagged
            "attn": "unfused", and a "flash" kernel (heads, L, S, E) is
            listed beside them, so the plan's attention setting (--attn)
            picks either and selective recompute re-runs the one chosen. A
            leaf of its own whose every kernel passes over a sibling's
            scores (nanoGPT's attn_dropout, an nn.Dropout) is part of that
            core: its pass tagged unfused, a zero-byte "in_flash" kernel
            for --attn flash, and all it keeps its act_scores_bytes. In
            a self-attention (L = S, not a cross-attention) the products
            carry "kv" (token slices scale them). The fused kernel is
            "causal" when a triangular mask reached the scores: what tril or
            triu returned, while the model was built or in the forward, and
            what element-wise ops made of it (nanoGPT's tril buffer, the
            triu mask of nn.Transformer's decoder, added by
            MultiheadAttention's baddbmm), or a comparison of two position
            tensors (arange, and integer arithmetic on it) varying along
            different axes (Hugging Face's kv_idx <= q_idx) and what was
            made of that. On torch >= 2 meta tensors take
            F.scaled_dot_product_attention's math path (its products and
            passes, and with is_causal its own tril); on the CPU (--measure,
            or the CPU fallback) it is one fused op, recorded as its two
            products without passes and causal when is_causal is set or a
            triangular attn_mask reached it. That fused op keeps no scores,
            so there a --measure trace keeps fewer bytes than a shape-only
            one (torch 1.13 runs the math path on both).
  the loss  (--loss auto, the default) a model whose forward returns the LM
            head's logits leaves the loss to the training loop, where its
            cross-entropy over s * V logits costs as much memory as a layer
            or more: when the LM head is recognised (kind "head") and the
            forward ran no loss op (log_softmax, nll_loss, cross-entropy),
            the head is charged PyTorch's F.cross_entropy under autocast, per
            logit with d the --dtype bytes: forward the cast to fp32 (d + 4;
            none in fp32) and log_softmax's three reads and one write (16),
            backward nll_loss's fp32 gradient (4), log_softmax's backward
            (12) and the cast back (4 + d): a kernel "cross_entropy" (tp
            shard, as the vocab-parallel head) and 4 bytes saved (the fp32
            log-probabilities), as traces/gen.c charges Megatron-LM's. The
            head's and the model's x-torch.loss say so (the model's is "in
            the forward" or "none" otherwise). With --measure the loss is
            timed on the CPU as well (F.cross_entropy over random fp32
            logits of the head's shape, median of --repeat) and added to the
            head's measured times (x-torch.loss.measured_fwd_s, _bwd_s).
            --loss none leaves it out. A forward that computes its own loss
            is traced as it runs, whatever --loss says.

Errors: one line on stderr ("torch_trace.py: ..."), exit status 2 for a bad
SPEC, bad options or a model that cannot be built or run; nothing is written.
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
USER_MODULE = "torch_trace_user"  # the module a FILE.py:FACTORY spec's file is loaded as
USER_STEM = [None]                # that file's name without .py


class TraceError(Exception):
    """A user-facing failure: one line, exit status 2. user_code: it came from
    running the user's code (a factory, a builder, the forward pass), so a
    shape-only attempt may succeed on the CPU instead."""

    def __init__(self, msg, user_code=False):
        super().__init__(msg)
        self.user_code = user_code


def one_line(e):
    s = "%s: %s" % (type(e).__name__, e) if not isinstance(e, TraceError) else str(e)
    s = " ".join(s.split())
    return s if len(s) <= 600 else s[:597] + "..."


def brief(s, n=160):
    """The first sentence of s, at most n characters."""
    i = s.find(". ")
    if 0 < i < n:
        return s[:i]
    return s if len(s) <= n else s[:n - 3] + "..."


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
    p.add_argument("--measure", action="store_true")
    p.add_argument("--name", default=None)
    p.add_argument("--loss", default="auto")
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
    if a.loss not in ("auto", "none"):
        raise TraceError("--loss: unknown '%s' (auto, none)" % a.loss)
    for k in ("batch", "seq", "image", "repeat", "threads"):
        v = getattr(a, k)
        if v is not None and (v < 1 or v > 1000000):
            raise TraceError("--%s: %d is out of range [1, 1000000]" % (k, v))
    a.batch_given = a.batch
    if a.batch is None:
        a.batch = 1
    return a


def did_you_mean(name, names):
    """" (did you mean X?)" for the name in names closest to name, or ""."""
    import difflib
    near = difflib.get_close_matches(name, names, 1)
    return " (did you mean %s?)" % near[0] if near else ""


def plural(n, one, many):
    return "%d %s" % (n, one if n == 1 else many)


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
            raise TraceError("cannot build '%s': %s" % (spec, e), True)
        src, tgt = torch.randn(B, S, d), torch.randn(B, S, d)
        kw = {"tgt_mask": m.generate_square_subsequent_mask(S)}
        try:  # torch >= 2.0 would compare the mask's values to find it causal; it is
            if "tgt_is_causal" in inspect.signature(m.forward).parameters:
                kw["tgt_is_causal"] = True
        except (TypeError, ValueError):
            pass
        return "transformer", m, (src, tgt), kw, B, S
    import torchvision
    models = torchvision.models
    classif = set(models.list_models(module=models))
    if name not in classif:
        if name in set(models.list_models()):
            raise TraceError("'%s' is a torchvision model but not an image classifier; only "
                             "classification models are traced by name (wrap others in "
                             "FILE.py:FACTORY)" % name)
        raise TraceError("unknown model '%s'%s: not a torchvision classification model (e.g. "
                         "resnet50, vit_b_16), transformer[:k=v,...], "
                         "transformer_encoder[:k=v,...] or FILE.py:FACTORY" % (
                             name, did_you_mean(name, sorted(classif | {"transformer",
                                                                        "transformer_encoder"}))))
    if "weights" in kw and kw["weights"] is not None:
        raise TraceError("%s: weights are never loaded (nothing is downloaded); drop 'weights'" % spec)
    kw["weights"] = None
    if name.startswith("vit_") and args.image and "image_size" not in kw:
        kw["image_size"] = args.image
    try:
        m = models.get_model(name, **kw)
    except Exception as e:
        raise TraceError("cannot build '%s': %s" % (spec, one_line(e)), True)
    # the side it was built for (a ViT's image_size), else --image, else the
    # one its pretrained weights run at (inception_v3 299, efficientnet_b7
    # 600: torchvision's metadata, nothing downloaded), else 224
    img = (kw.get("image_size") or args.image or getattr(m, "image_size", None) or
           native_image(models, name))
    return name, m, (torch.randn(B, 3, img, img),), {}, B, None


def native_image(models, name):
    """The crop size of torchvision's default weights for the model, or 224."""
    try:
        crop = models.get_model_weights(name).DEFAULT.transforms().crop_size
        return int(crop[0] if isinstance(crop, (list, tuple)) else crop)
    except Exception:
        return 224


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
        # one user file a run, under a name no installed module has; traces
        # show its classes as the file's (gpt2.GPT), the same in every run
        ms = importlib.util.spec_from_file_location(USER_MODULE, path)
        USER_STEM[0] = os.path.splitext(os.path.basename(path))[0]
        mod = importlib.util.module_from_spec(ms)
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        ms.loader.exec_module(mod)
    except Exception as e:
        raise TraceError("%s: cannot import: %s" % (path, one_line(e)), True)
    f = getattr(mod, fac, None)
    if not callable(f):
        funcs = sorted(k for k, v in vars(mod).items()
                       if callable(v) and not k.startswith("_") and
                       getattr(v, "__module__", None) == mod.__name__)
        plain = [k for k in funcs if inspect.isfunction(vars(mod)[k])] or funcs
        hint = did_you_mean(fac, funcs)
        if not hint and plain:
            hint = " (it defines %s%s)" % (", ".join(plain[:8]), ", ..." if len(plain) > 8 else "")
        raise TraceError("%s: no function '%s'%s" % (path, fac, hint))
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
        raise TraceError("%s: %s(...) failed: %s" % (spec, fac, one_line(e)), True)
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
        self.saved_items = []  # (elements, bytes, storage key) of each storage it saved, batch total
        self.out_bytes = None
        self.in_bytes = None
        self.in_distinct = 0.0  # bytes of its distinct input storages (first call)
        self.in_producer = None  # the innermost module that returned its first input
        self.dims = {}
        self.kind = None
        self.first_ins = None  # its input tensors at the first call (during pass 1)
        self.own_event_seq = None
        self.own_edges = []         # producer Recs its own code read (not a child's call)
        self.prev_finished = None   # the Rec that finished last before its first call
        self.own_ops = []           # (calls started, calls finished) at each own kernel
                                    # (kept for modules with submodules: a #self's)
        self.post_at = 0            # calls finished when its (last) call finished
        self.edges = []  # producer Recs
        self.fwd = []    # per pass: inclusive forward seconds
        self.bwd = []    # per pass: inclusive backward seconds
        self.uses = set()  # ids of parameters used (saved) that are not in its subtree
        # the kernels its own code ran (pass 1, batch totals): ["gemm", batch,
        # m, n, k, weight?, kv] or ["mem", name, bytes(, flops(, shapes,
        # triangular?(, bwd bytes)))]; kernels_ok
        # False when a counted op had no kernel form (a transposed depthwise
        # convolution, an einsum that reached the dispatcher whole)
        self.kernels = []
        self.kernels_ok = True

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


def storage_key(t):
    """The identity of t's storage, shared by its views. Not the data pointer:
    every meta tensor has data pointer 0. The storage objects' _cdata (the
    address of the StorageImpl) is stable while the storage lives; the tracer
    keeps every tensor it keys alive until the pass ends."""
    for get in ("untyped_storage", "storage"):  # torch >= 2.0, then 1.13
        f = getattr(t, get, None)
        if f is None:
            continue
        try:
            return f()._cdata
        except Exception:
            pass
    try:
        return ("ptr", t.data_ptr())
    except Exception:
        return ("id", id(t))


def storage_nbytes(t):
    for get in ("untyped_storage", "storage"):
        f = getattr(t, get, None)
        if f is None:
            continue
        try:
            return float(f().nbytes())
        except Exception:
            pass
    return float(t.numel() * t.element_size())


# ---- shape-only tracing: the meta device -------------------------------------------

# Factory functions that allocate; on torch 1.13 (no device context manager)
# a TorchFunctionMode sends them to the meta device. Functions that take an
# input tensor (zeros_like, new_empty, ...) follow its device already.
META_FACTORIES = ("empty", "empty_strided", "zeros", "ones", "full", "rand", "randn", "randint",
                  "randperm", "arange", "range", "linspace", "logspace", "eye", "tensor",
                  "as_tensor", "scalar_tensor", "tril_indices", "triu_indices")


def meta_context(torch):
    """A context in which new tensors are created on the meta device."""
    dev = torch.device("meta")
    if hasattr(dev, "__enter__"):  # torch >= 2.0: the public device context
        return dev
    from torch.overrides import TorchFunctionMode
    facts = {getattr(torch, n) for n in META_FACTORIES if hasattr(torch, n)}

    class MetaFactories(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in facts:
                kwargs = dict(kwargs or {})
                kwargs["device"] = dev
            return func(*args, **(kwargs or {}))

    return MetaFactories()


TRI_FUNCS = ("tril", "triu", "tril_", "triu_")
CMP_OPS = ("le", "lt", "ge", "gt")  # aten's comparisons: of two positions, a triangle


def tri_recorder(torch, found):
    """A TorchFunctionMode that keeps, in found, every tensor that tril or
    triu returns while the model is built: a causal mask made in __init__
    (nanoGPT's tril buffer, CLIP's triu of -inf). Its values are not needed,
    only which storage holds it (Tracer.tri_keys)."""
    from torch.overrides import TorchFunctionMode

    class TriRecorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if getattr(func, "__name__", "") in TRI_FUNCS and isinstance(out, torch.Tensor):
                found.append(out)
            return out

    return TriRecorder()


def to_meta(torch, model, args_, kwargs, tri=None):
    """Moves parameters, buffers, plain tensor attributes and input tensors
    that are not on the meta device there, in place. Unlike Module.to('meta'), a parameter registered
    in several modules (tied weights) stays one parameter. Returns (args,
    kwargs) with the inputs moved. tri: storage keys of triangular masks,
    to which the keys of their meta copies are added."""
    memo = {}

    def conv(t, param):
        if t.device.type == "meta":
            return t
        if id(t) not in memo:
            n = torch.empty_like(t, device="meta")
            if param:
                n = torch.nn.Parameter(n, requires_grad=t.requires_grad)
            memo[id(t)] = (t, n)
            if tri is not None and storage_key(t) in tri:
                tri.add(storage_key(n))
        return memo[id(t)][1]

    for m in model.modules():
        for k, p in list(m._parameters.items()):
            if p is not None:
                m._parameters[k] = conv(p, True)
        for k, b in list(m._buffers.items()):
            if b is not None:
                m._buffers[k] = conv(b, False)
        for k, v in list(vars(m).items()):  # plain tensor attributes (unregistered masks)
            if isinstance(v, torch.Tensor) and not k.startswith("_"):
                setattr(m, k, conv(v, False))

    def inp(x, depth=0):
        if isinstance(x, torch.Tensor):
            return x if x.device.type == "meta" else x.detach().to("meta").requires_grad_(
                x.requires_grad and x.is_floating_point())
        if depth < 8 and isinstance(x, (list, tuple)):
            return type(x)(inp(v, depth + 1) for v in x)
        if depth < 8 and isinstance(x, dict):
            return {k: inp(v, depth + 1) for k, v in x.items()}
        return x

    return inp(tuple(args_)), inp(dict(kwargs))


# ---- FLOPs at the dispatcher ---------------------------------------------------------


def _numel(shape):
    n = 1
    for v in shape:
        n *= int(v)
    return n


def _mm_flops(k_arg, k_dim=-1):
    """2 * out elements * K, K read from args[k_arg].shape[k_dim]."""
    def f(args, kwargs, out):
        o = out[0] if isinstance(out, (tuple, list)) else out
        return 2.0 * o.numel() * args[k_arg].shape[k_dim] if args[k_arg].dim() else 0.0
    return f


def _addbmm_flops(args, kwargs, out):
    b1, b2 = args[1], args[2]
    return 2.0 * b1.numel() * b2.shape[-1]


def _dot_flops(args, kwargs, out):
    return 2.0 * args[0].numel()


def _conv_flops(transposed_arg=None, transposed=False):
    def f(args, kwargs, out):
        x, w = args[0], args[1]
        tr = transposed
        if transposed_arg is not None and len(args) > transposed_arg:
            tr = bool(args[transposed_arg])
        k = _numel(w.shape[2:])
        o = out[0] if isinstance(out, (tuple, list)) else out
        if tr:  # weight (Cin, Cout/groups, k...): every input element feeds Cout/g * k outputs
            return 2.0 * x.numel() * w.shape[1] * k
        return 2.0 * o.numel() * w.shape[1] * k  # weight (Cout, Cin/groups, k...)
    return f


def _attn_flops(seq_dim):
    """q (..., L, E), k (..., S, E), v (..., S, Ev) with heads in the leading
    dims (seq_dim -2), or (B, L, H, E) (seq_dim 1): QK^T and AV over the full
    L x S square per batch and query head."""
    def f(args, kwargs, out):
        q, k, v = args[0], args[1], args[2]
        E, Ev, S = q.shape[-1], v.shape[-1], k.shape[seq_dim]
        rows = q.numel() / max(E, 1)  # batch * query heads * L
        return 2.0 * rows * S * E + 2.0 * rows * S * Ev
    return f


def _einsum_flops(args, kwargs, out):
    """Contractions left to right (as torch.einsum without opt_einsum): each
    costs 2 * the product of the sizes of every index of its two operands
    (1 * when nothing is summed: an outer or element-wise product)."""
    eq = args[0].replace(" ", "")
    ops = list(args[1]) if len(args) > 1 and isinstance(args[1], (list, tuple)) else list(args[1:])
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ops) or len(ops) < 2:
        return 0.0
    nell = max((x.dim() - len(t.replace("...", "")) for t, x in zip(terms, ops) if "..." in t),
               default=0)
    ell = [chr(0x100 + i) for i in range(nell)]  # broadcast dims, aligned right
    size, subs = {}, []
    for t, x in zip(terms, ops):
        if "..." in t:
            a, b = t.split("...")
            k = x.dim() - len(a) - len(b)
            dims = list(a) + ell[nell - k:] + list(b)
        else:
            dims = list(t)
        for c, n in zip(dims, x.shape):
            size[c] = max(size.get(c, 1), int(n))
        subs.append(dims)
    if arrow:
        keep_out = set(rhs.replace("...", "")) | (set(ell) if "..." in rhs else set())
    else:
        keep_out = {c for c in size if sum(d.count(c) for d in subs) == 1} | set(ell)
    flops, cur = 0.0, set(subs[0])
    for i in range(1, len(subs)):
        union = cur | set(subs[i])
        later = set(c for d in subs[i + 1:] for c in d)
        keep = {c for c in union if c in keep_out or c in later}
        prod = 1.0
        for c in union:
            prod *= size[c]
        flops += (2.0 if union - keep else 1.0) * prod
        cur = keep
    return flops


# aten op name -> FLOPs(args, kwargs, out). Composite ops (matmul, linear,
# einsum, scaled_dot_product_attention) usually decompose into the others
# before the dispatch mode sees them; when one reaches it, the mode counts it
# and does not see what it calls, so nothing is counted twice.
FLOP_OPS = {
    "mm": _mm_flops(0), "bmm": _mm_flops(0), "matmul": _mm_flops(0),
    "addmm": _mm_flops(1), "_addmm_activation": _mm_flops(1), "baddbmm": _mm_flops(1),
    "addbmm": _addbmm_flops, "mv": _mm_flops(0), "addmv": _mm_flops(1),
    "dot": _dot_flops, "vdot": _dot_flops, "linear": _mm_flops(1),
    "einsum": _einsum_flops,
    "convolution": _conv_flops(6), "_convolution": _conv_flops(6),
    "convolution_overrideable": _conv_flops(6),
    "conv1d": _conv_flops(), "conv2d": _conv_flops(), "conv3d": _conv_flops(),
    "mkldnn_convolution": _conv_flops(), "cudnn_convolution": _conv_flops(),
    "conv_transpose1d": _conv_flops(None, True), "conv_transpose2d": _conv_flops(None, True),
    "conv_transpose3d": _conv_flops(None, True),
    "cudnn_convolution_transpose": _conv_flops(None, True),
    "scaled_dot_product_attention": _attn_flops(-2),
    "_scaled_dot_product_attention": _attn_flops(-2),
    "_scaled_dot_product_attention_math": _attn_flops(-2),
    "_scaled_dot_product_flash_attention": _attn_flops(-2),
    "_scaled_dot_product_flash_attention_for_cpu": _attn_flops(-2),
    "_scaled_dot_product_efficient_attention": _attn_flops(-2),
    "_scaled_dot_product_cudnn_attention": _attn_flops(-2),
    "_scaled_dot_product_fused_attention_overrideable": _attn_flops(-2),
    "_flash_attention_forward": _attn_flops(1),
    "_efficient_attention_forward": _attn_flops(1),
}


SOFTMAX_OPS = ("_softmax", "softmax", "_safe_softmax")
# ops that only a loss runs: a forward that ran one computed its own loss
LOSS_OPS = frozenset(("_log_softmax", "log_softmax", "nll_loss_forward", "nll_loss",
                      "nll_loss2d_forward", "nll_loss_nd", "cross_entropy_loss",
                      "binary_cross_entropy_with_logits", "binary_cross_entropy", "mse_loss",
                      "smooth_l1_loss", "huber_loss", "l1_loss", "kl_div"))


# Ops that only relabel a storage (no kernel of their own).
VIEW_OPS = ("view", "_unsafe_view", "reshape", "transpose", "t", "permute", "expand", "squeeze",
            "unsqueeze", "select", "slice", "as_strided", "detach", "alias", "split",
            "split_with_sizes", "chunk", "unbind", "narrow", "view_as", "expand_as",
            "lift_fresh", "_reshape_alias", "unflatten", "flatten", "contiguous", "clone",
            "_to_copy", "to", "empty", "empty_like", "zeros", "ones", "full", "arange",
            "empty_strided", "new_empty", "new_zeros", "new_ones", "scalar_tensor", "_local_scalar_dense")
# Counted ops with a GEMM form: C[batch][m][n] = A[batch][m][k] B[batch][k][n].
GEMM_OPS = ("mm", "bmm", "matmul", "addmm", "_addmm_activation", "baddbmm", "linear")
# convolutions (the ops _conv_flops counts); aten's convolution family takes
# `transposed` as its 7th argument
CONV_OPS = ("convolution", "_convolution", "convolution_overrideable", "conv1d", "conv2d",
            "conv3d", "mkldnn_convolution", "cudnn_convolution", "conv_transpose1d",
            "conv_transpose2d", "conv_transpose3d", "cudnn_convolution_transpose")
CONV_TRANSPOSED_ARG = ("convolution", "_convolution", "convolution_overrideable")
SDPA_OPS = tuple(k for k in ("scaled_dot_product_attention", "_scaled_dot_product_attention",
                             "_scaled_dot_product_attention_math",
                             "_scaled_dot_product_flash_attention",
                             "_scaled_dot_product_flash_attention_for_cpu",
                             "_scaled_dot_product_efficient_attention",
                             "_scaled_dot_product_cudnn_attention",
                             "_scaled_dot_product_fused_attention_overrideable"))
# where each takes is_causal positionally (their schemas in torch 2.15)
SDPA_IS_CAUSAL_ARG = {"scaled_dot_product_attention": 5, "_scaled_dot_product_attention_math": 5,
                      "_scaled_dot_product_flash_attention": 4,
                      "_scaled_dot_product_flash_attention_for_cpu": 4,
                      "_scaled_dot_product_efficient_attention": 6,
                      "_scaled_dot_product_cudnn_attention": 6,
                      "_scaled_dot_product_fused_attention_overrideable": 5}


def flop_mode(torch, on_flops, score_keys=None, keep=None, on_kernel=None, tri_keys=None):
    """A TorchDispatchMode that calls on_flops(op name, flops) for every
    counted op (torch.utils._python_dispatch: public as a mode since 1.13).
    With score_keys (a set) it also collects the storages of attention
    scores: softmax outputs, and what ops other than the counted products
    derive from them element for element (the dropout mask and output),
    appending those tensors to keep so that their storages stay theirs.
    With tri_keys (a set) it follows triangular masks: what tril and triu
    return, what ops other than the counted products make of them (the
    boolean mask, the masked scores, their softmax), and the scores a
    baddbmm adds them to (PyTorch's MultiheadAttention)."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        raise TraceError("torch %s has no TorchDispatchMode; the tracer needs torch >= 1.13"
                         % torch.__version__)

    idx_keys = set()  # storages of integer positions: arange, and arithmetic on it

    def varying(t, n):
        """The axes along which t, broadcast to n dims, varies."""
        return {n - t.dim() + i for i, (sz, st) in enumerate(zip(t.shape, t.stride()))
                if sz > 1 and st != 0}

    class FlopCounter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.overloadpacket.__name__
            f = FLOP_OPS.get(name)
            if tri_keys is not None and isinstance(out, torch.Tensor) and (
                    name == "arange" or idx_keys) and not out.is_floating_point():
                # a causal mask made by comparing positions (Hugging Face's:
                # kv_idx <= q_idx over a row and a column of aranges) is
                # triangular: a comparison of two position tensors that vary
                # along different axes
                if name in CMP_OPS:
                    pos = [t for t in args[:2] if isinstance(t, torch.Tensor) and
                           storage_key(t) in idx_keys]
                    va, vb = (varying(t, out.dim()) for t in pos) if len(pos) == 2 else ({}, {})
                    if len(va) == 1 and len(vb) == 1 and va != vb:
                        tri_keys.add(storage_key(out))
                        if keep is not None:
                            keep.append(out)
                elif name == "arange" or (out.dtype != torch.bool and any(
                        storage_key(t) in idx_keys
                        for t in flatten_tensors((args, kwargs), torch))):
                    idx_keys.add(storage_key(out))
                    if keep is not None:
                        keep.append(out)
            if tri_keys is not None and (tri_keys or name in TRI_FUNCS):
                ins = flatten_tensors((args, kwargs), torch)
                tri = name in TRI_FUNCS or (
                    (f is None or name == "baddbmm") and
                    any(storage_key(t) in tri_keys for t in (ins if f is None else ins[:1])))
                if tri:
                    outs = flatten_tensors(out, torch)
                    tri_keys.update(storage_key(t) for t in outs)
                    if keep is not None:
                        keep.extend(outs)
            if f is not None:
                try:
                    n = f(args, kwargs, out)
                except Exception:
                    n = 0.0
                if n > 0:
                    on_flops(name, float(n))
                    if on_kernel is not None:
                        on_kernel(name, args, kwargs, out, float(n))
            elif on_kernel is not None and name not in VIEW_OPS:
                on_kernel(name, args, kwargs, out, 0.0)
            if f is None and score_keys is not None:
                outs = flatten_tensors(out, torch)
                if name not in SOFTMAX_OPS:
                    ins = [t for t in flatten_tensors((args, kwargs), torch)
                           if score_keys and storage_key(t) in score_keys]
                    outs = [t for t in outs if ins and t.numel() == ins[0].numel()]
                score_keys.update(storage_key(t) for t in outs)
                if keep is not None:
                    keep.extend(outs)
            return out

    return FlopCounter()


class Tracer:
    def __init__(self, torch, model, args_, kwargs, B, dtype_bytes):
        self.torch = torch
        self.model = model
        self.args = args_
        self.kwargs = kwargs
        self.B = B
        self.db = dtype_bytes
        self.ops_seen = set()  # aten op names the forward ran
        self.recs = {}
        self.order = []
        self.seq = 0
        self.stack = []
        self.handles = []
        self.flops_by_op = {}
        self.score_keys = set()  # storages of attention scores (softmax and after)
        self.tri_keys = set()    # storages of triangular masks and what was made of them
        self.posts = 0           # module calls finished so far
        self.noise = {}          # storage of a dropout's noise -> [(Rec, its raw kernels)]
        self.root = self._make_recs(model)
        # parameter / buffer storages
        self.param_by_key = {}
        for n, p in model.named_parameters():
            self.param_by_key.setdefault(storage_key(p), p)
        self.buffer_keys = {storage_key(b) for b in model.buffers()}
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
    def analyse(self, backward=True, context=None):
        """One forward pass with module hooks, saved-tensor hooks and the FLOP
        counting dispatch mode, inside context (the meta device for
        shape-only tracing); then, when backward, one backward pass."""
        torch = self.torch
        producers = {}  # storage key -> [Rec, ...] innermost first
        keep = []
        finished = [None]

        def note_edges(r, keys, edges, before=None):
            """Adds to edges the outermost producers of the storages keys
            that r reads and that did not finish last before it (nor last
            before `before`: what r's own code reads of its own input, a
            residual, is no edge)."""
            last = finished[0]
            for k in keys:
                ps = producers.get(k)
                if not ps:
                    continue
                cand = [p for p in ps if p is not r and not p.is_ancestor_of(r)]
                if not cand:
                    continue
                p = cand[-1]
                if any(q is not None and (p is q or p.is_ancestor_of(q) or q.is_ancestor_of(p))
                       for q in (last, before)):
                    continue
                if p not in edges:
                    edges.append(p)

        def pre(mod, inp, kwargs=None):
            r = self.recs.get(id(mod))
            if r is None:
                return None
            self.seq += 1
            r.calls += 1
            ins = flatten_tensors(inp, torch)
            if kwargs:  # torch >= 2.0 shows keyword arguments to the hook
                ins += flatten_tensors(kwargs, torch)
            keys = [storage_key(t) for t in ins]
            keep.extend(ins)
            if r.first_seq is None:
                r.first_seq = self.seq
                r.first_ins = ins
                r.in_bytes = sum(self.bytes_of(t) for t in ins)
                seen_in = set()
                for t, k in zip(ins, keys):  # activations: not parameters or buffers
                    if k not in seen_in and k not in self.param_by_key and \
                            k not in self.buffer_keys:
                        seen_in.add(k)
                        r.in_distinct += self.bytes_of(t)
                if keys and producers.get(keys[0]):
                    r.in_producer = producers[keys[0]][0]
            note_edges(r, keys, r.edges)
            if r.calls == 1:
                r.prev_finished = finished[0]
            self.stack.append(r)
            return None

        def post(mod, inp, out):
            r = self.recs.get(id(mod))
            if r is None:
                return
            if self.stack and self.stack[-1] is r:
                self.stack.pop()
            if r.calls == 1:
                r.out_bytes = self.out_bytes(out)
                self.shape_dims(r, mod, inp, out)
            for t in flatten_tensors(out, torch):
                producers.setdefault(storage_key(t), []).append(r)
                keep.append(t)
            finished[0] = r
            self.posts += 1
            r.post_at = self.posts

        seen = set()

        def pack(t):
            r = self.stack[-1] if self.stack else self.root
            key = storage_key(t)
            if key in self.param_by_key:
                p = self.param_by_key[key]
                if id(p) not in self._subtree(r):
                    r.uses.add(id(p))
                return t
            if key in self.buffer_keys or key in seen:
                return t
            seen.add(key)
            keep.append(t)
            n = storage_nbytes(t)
            if key in self.noise:  # a dropout mask: CUDA's native_dropout keeps a bool one
                n = float(t.numel())
            elif t.is_floating_point():
                n = n * self.db / t.element_size()
            r.saved += n
            r.saved_items.append((t.numel(), n, key))
            if r.own_event_seq is None:
                r.own_event_seq = self.seq
            return t

        def on_flops(name, n):
            r = self.stack[-1] if self.stack else self.root
            r.flops += n
            self.flops_by_op[name] = self.flops_by_op.get(name, 0.0) + n

        params = set(id(p) for p in self.model.parameters())

        def on_kernel(name, args_, kwargs_, out_, n):
            """The kernel an op launched, on the module whose own code ran it."""
            self.ops_seen.add(name)
            r = self.stack[-1] if self.stack else self.root
            every_in = flatten_tensors((args_, kwargs_), torch)
            if r.kids:  # own code beside submodules, which a #self leaf carries
                r.own_ops.append((self.seq, self.posts))
                # what it reads (a concatenation of two towers' outputs)
                note_edges(r, [storage_key(t) for t in every_in], r.own_edges, r.prev_finished)
            if not r.kernels_ok:
                return
            outs = [t for t in flatten_tensors(out_, torch) if t.is_floating_point()]
            if n > 0:
                o = outs[0] if outs else None
                if name in GEMM_OPS and o is not None and o.dim() >= 1:
                    N = int(o.shape[-1])
                    M = int(o.shape[-2]) if o.dim() >= 2 else 1
                    lead = _numel(o.shape[:-2]) if o.dim() >= 2 else 1
                    K = n / (2.0 * max(o.numel(), 1))
                    ins = every_in
                    weight = any(id(t) in params for t in ins) or any(
                        getattr(t, "_base", None) is not None and id(t._base) in params
                        for t in ins)
                    if weight:  # a linear layer: every leading dim is tokens
                        r.kernels.append(["gemm", 1, lead * M, N, K, True, 0])
                    else:       # activation x activation (attention): batched
                        r.kernels.append(["gemm", lead, M, N, K, False, 0])
                elif name in CONV_OPS and o is not None and o.dim() >= 3 and len(args_) > 1:
                    # a convolution as the implicit GEMM cuDNN runs for it,
                    # one per group (batch = groups): output pixels (batch x
                    # spatial) by output channels by input channels x kernel
                    # size. A transposed one is the data-gradient GEMM of the
                    # convolution it inverts: input pixels by output channels
                    # x kernel size by input channels (its scatter of the
                    # columns into the output is not counted, as the FLOPs
                    # convention has it). A depthwise one (one input channel
                    # per group) is a stencil that no library runs as a GEMM:
                    # a memory-bound kernel of its input, weight and output
                    # bytes that also counts its FLOPs (kernel.h); a
                    # transposed depthwise one keeps the leaf's totals.
                    x, w = args_[0], args_[1]
                    tr = "transpose" in name or (name in CONV_TRANSPOSED_ARG and
                                                 len(args_) > 6 and bool(args_[6]))
                    if x.dim() < 3 or w.dim() < 3 or int(w.shape[1]) < 1:
                        r.kernels_ok = False
                        return
                    # weight (Cout, Cin/groups, k...), transposed (Cin, Cout/groups, k...)
                    cin, cout, ks = int(x.shape[1]), int(o.shape[1]), _numel(w.shape[2:])
                    per = int(w.shape[1])
                    G = (cout if tr else cin) // per
                    if G > 1 and cin == G and not tr and cout % G == 0:
                        r.kernels.append(["mem", "conv_depthwise",
                                          float(x.numel() + w.numel() + o.numel()) * self.db,
                                          2.0 * o.numel() * per * ks])
                        return
                    if (G < 1 or G * per != (cout if tr else cin) or cin % G or cout % G or
                            (G > 1 and cin == G)):  # a transposed depthwise stencil
                        r.kernels_ok = False
                        return
                    cin_g, cout_g = cin // G, cout // G
                    if tr:
                        r.kernels.append(["gemm", G, x.numel() // cin, cout_g * ks, cin_g, True,
                                          0, "conv_transpose"])
                    else:
                        r.kernels.append(["gemm", G, o.numel() // cout, cout_g, cin_g * ks, True,
                                          0, "conv" if G == 1 else "conv_grouped"])
                elif name in SDPA_OPS and o is not None and o.dim() >= 2:
                    q = args_[0]
                    L, E = int(q.shape[-2]), int(q.shape[-1])
                    S = int(args_[1].shape[-2]) if len(args_) > 1 else L
                    lead = _numel(q.shape[:-2])
                    # causal: is_causal, or a triangular mask among its inputs
                    at = SDPA_IS_CAUSAL_ARG.get(name)
                    causal = bool(kwargs_.get("is_causal") or (
                        at is not None and len(args_) > at and args_[at] is True) or any(
                        storage_key(t) in self.tri_keys
                        for t in flatten_tensors((args_[3:], kwargs_), torch)))
                    r.kernels.append(["gemm", lead, L, S, E, False, "n"])
                    r.kernels.append(["gemm", lead, L, int(o.shape[-1]), S, False, "k", causal])
                else:
                    r.kernels_ok = False
                return
            ins = [t for t in every_in if t.is_floating_point()]
            nbytes = 0.0
            for t in ins + outs:
                nbytes += t.numel() * self.db
            if nbytes <= 0:
                return
            # the shapes it touched (elements, last dimension): whether it
            # ran over an attention's scores is decided in kernels_json; and
            # whether it read a triangular mask (a causal attention)
            shapes = frozenset((int(t.numel()), int(t.shape[-1]) if t.dim() else 1)
                               for t in ins + outs)
            tri = any(storage_key(t) in self.tri_keys for t in every_in)
            k = ["mem", name, nbytes, 0.0, shapes, tri]
            # dropout: off CUDA, aten's dropout is bernoulli_ on a noise
            # tensor, div_ by 1 - p, then input * noise; on CUDA it is one
            # native_dropout kernel that reads the input and writes the
            # output and a bool mask, and its backward reads the gradient
            # and the mask and writes one (2d + 1 bytes an element each way)
            nk = [storage_key(t) for t in ins]
            if name in ("bernoulli_", "div_", "mul_") and ins and (
                    name == "bernoulli_" or nk[0] in self.noise):
                self.noise.setdefault(nk[0], []).append((r, k))
            elif name == "mul" and len(ins) == 2 and outs and \
                    (nk[0] in self.noise) != (nk[1] in self.noise):
                noise = ins[0] if nk[0] in self.noise else ins[1]
                x = ins[1] if noise is ins[0] else ins[0]
                if noise.numel() == x.numel() == outs[0].numel():
                    for rr, kk in self.noise[storage_key(noise)]:
                        rr.kernels[:] = [q for q in rr.kernels if q is not kk]
                    b = x.numel() * (2.0 * self.db + 1)
                    k = ["mem", "native_dropout", b, 0.0, shapes, tri, b]
            r.kernels.append(k)

        for r in self.recs.values():
            try:  # torch >= 2.0: the hook sees keyword arguments too
                h = r.module.register_forward_pre_hook(pre, with_kwargs=True)
            except TypeError:
                h = r.module.register_forward_pre_hook(pre)
            self.handles.append(h)
            self.handles.append(r.module.register_forward_hook(post))
        if context is None:
            import contextlib
            context = contextlib.nullcontext()
        try:
            with context, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
                    flop_mode(torch, on_flops, self.score_keys, keep, on_kernel, self.tri_keys):
                try:
                    out = self.model(*self.args, **self.kwargs)
                except TraceError:
                    raise
                except Exception as e:
                    hint = ""
                    if "more than 1 value per channel when training" in str(e) and self.B < 2:
                        hint = ("; a BatchNorm in train mode needs 2 or more samples: "
                                "try --batch 2")
                    raise TraceError("forward failed: %s%s" % (one_line(e), hint), True)
        finally:
            self.remove_hooks()
            self.stack = []
        if backward:
            loss = self.loss(out)
            try:
                loss.backward()
            except Exception as e:
                raise TraceError("backward failed: %s" % one_line(e))
            self.model.zero_grad(set_to_none=True)
        out = None
        keep.clear()
        producers.clear()
        for r in self.recs.values():  # per sample from here on
            r.first_ins = None
            r.flops /= self.B
            r.saved /= self.B
            r.in_distinct /= self.B
        self.flops_by_op = {k: v / self.B for k, v in self.flops_by_op.items()}

    def ran_loss(self):
        """Whether the forward ran a loss op (LOSS_OPS): it computed its own."""
        return bool(self.ops_seen & LOSS_OPS)

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

    def shape_dims(self, r, mod, inp, out):
        """Dims and kinds from the shapes of the first call (FLOPs are counted
        at the dispatcher)."""
        nn = self.torch.nn
        B = self.B
        ins = r.first_ins if r.first_ins is not None else flatten_tensors(inp, self.torch)
        x = ins[0] if ins else None
        if isinstance(mod, nn.Linear) and x is not None:
            tokens = x.numel() / max(mod.in_features, 1)
            r.dims.update(hidden=mod.in_features, out=mod.out_features, seq=tokens / B)
        elif isinstance(mod, nn.modules.conv._ConvNd) and x is not None:
            r.dims.update({"in": mod.in_channels, "out": mod.out_channels,
                           "k": mod.kernel_size[0]})
        elif isinstance(mod, nn.MultiheadAttention) and (ins or flatten_tensors(out, self.torch)):
            if len(ins) >= 2:
                q, kk = ins[0], ins[1]
            else:  # called with keywords, which torch < 2 hooks do not see:
                q = kk = flatten_tensors(out, self.torch)[0]  # take self-attention
            bf = getattr(mod, "batch_first", False)
            if q.dim() == 3:
                Lq = q.shape[1] if bf else q.shape[0]
                Lk = kk.shape[1] if bf else kk.shape[0]
            else:
                Lq, Lk = q.shape[0], kk.shape[0]
            E = mod.embed_dim
            cross = storage_key(kk) != storage_key(q)
            r.kind = "cross_attention" if cross else "attention"
            r.dims.update(hidden=E, heads=mod.num_heads, kv=mod.head_dim, seq=Lq)
            if cross or Lk != Lq:
                r.dims["kv_seq"] = Lk
        elif isinstance(mod, nn.Embedding) and x is not None:
            r.dims.update(hidden=mod.embedding_dim, vocab=mod.num_embeddings,
                          seq=x.numel() / B)
        elif isinstance(mod, nn.LayerNorm) and x is not None:
            h = 1
            for v in mod.normalized_shape:
                h *= v
            r.dims.update(hidden=h, seq=x.numel() / max(h, 1) / B)

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
        self.saved_items = []   # (elements, bytes, storage key) per saved storage, batch total
        self.in_distinct = 0.0  # bytes per sample of its distinct inputs
        self.owner = None       # for a #self leaf: the Rec whose own work it carries
        self.edges_ok = False   # for a #self leaf: its owner's own_edges hold
        self.tp = None          # {"bytes", "shardable"[, "replicated_saved"]}
        self.tp_role = None
        self.scores = None      # act_scores_bytes
        self.krecs = []         # the Recs whose own kernels this node runs
        self.extra_kernels = [] # model-format kernels beyond its own code's (the loss)


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


def iter_subtree(rec):
    """rec and every Rec below it."""
    todo = [rec]
    while todo:
        r = todo.pop()
        yield r
        todo.extend(r.kids)


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
            into.saved_items.extend(r.saved_items)
            into.uses |= r.uses
            into.krecs.append(r)
            nodes_by_rec[id(r)] = into

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

    def gap(kids, seq):
        """Where among kids (in the order they started) something that ran
        at call count seq stands: after the kids that had started."""
        return sum(1 for k in kids if k.first_seq <= seq)

    def finished_at(rec):
        """Calls finished when rec's subtree had finished (a module list,
        never called itself, when its last call inside did)."""
        return max(r.post_at for r in iter_subtree(rec))

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
        cls_mod = type(rec.module).__module__
        node.xtorch = {"class": (USER_STEM[0] if cls_mod == USER_MODULE else cls_mod) + "." +
                       type(rec.module).__name__,
                       "calls": rec.calls}
        own = Node(None, "self")
        own.owner = rec
        own.param_ids = [id(p) for p in own_params(rec)]
        own.flops, own.saved, own.uses = rec.flops, rec.saved, set(rec.uses)
        own.saved_items = list(rec.saved_items)
        own.krecs = [rec]
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
            node.saved_items = own.saved_items
            node.in_distinct = rec.in_distinct
            node.fwd, node.bwd = own.fwd, own.bwd
            node.krecs = own.krecs
            for r in list(nodes_by_rec):
                if nodes_by_rec[r] is own:
                    nodes_by_rec[r] = node
            return node
        kids = [build(k, depth + 1) for k in ran]
        # own work with weights, FLOPs or saved tensors, or only kernels of
        # its own (residual adds, a concatenation): placed after the children
        # that had started when it first saved a tensor, else when it first
        # launched a kernel
        if own.param_ids or own.saved > 0 or own.flops > 0 or \
                any(r.kernels for r in own.krecs if r.kernels_ok):
            own.raw_name = nm + "#self"
            pos = 0
            at = rec.own_event_seq if rec.own_event_seq is not None else (
                rec.own_ops[0][0] if rec.own_ops else None)
            if at is not None:
                pos = gap(ran, at)
            # own code that ran inside a module dict's or list's span (never
            # called itself: nanoGPT's token + position add between
            # transformer.wpe and transformer.drop) stands there, inside it,
            # when all of it ran in one gap between two of its children
            host, hran, hpos = rec, ran, pos
            while hpos > 0 and rec.own_ops:
                k = hran[hpos - 1]
                inner = sorted([c for c in k.kids if c.active], key=lambda c: c.first_seq)
                kn = nodes_by_rec.get(id(k))
                if k.calls or not inner or kn is None or not kn.children or \
                        any(posts >= finished_at(k) for _, posts in rec.own_ops):
                    break
                gaps = {gap(inner, sq) for sq, _ in rec.own_ops}
                if rec.own_event_seq is not None:
                    gaps.add(gap(inner, rec.own_event_seq))
                if len(gaps) != 1 or min(gaps) == 0:
                    break
                host, hran, hpos = k, inner, gaps.pop()
            hnode = nodes_by_rec[id(host)] if host is not rec else node
            if hpos < len(hran):
                own.out = (hran[hpos].in_bytes or 0.0) / tr.B
            else:
                own.out = hnode.out
            own.fwd_incl, own.bwd_incl = own.fwd, own.bwd
            own.xtorch = {"class": "(own work of %s)" % node.xtorch["class"]}
            # what its own code read keeps its edges only where that code
            # ran where the node stands: each op after the child before it
            # finished and before the next one started (not own code lumped
            # at one end of a module dict's or list's span)
            done = finished_at(hran[hpos - 1]) if hpos > 0 else 0
            own.edges_ok = all(
                gap(hran, sq) == hpos and done <= posts
                for sq, posts in rec.own_ops)
            if host is rec:
                kids.insert(pos, own)
            else:
                at_kid = hnode.children.index(nodes_by_rec[id(hran[hpos - 1])]) + 1
                hnode.children.insert(at_kid, own)
                own.parent = hnode
                h = hnode
                while h is not None and h is not node:  # the containers now hold it
                    h.fwd_incl += own.fwd
                    h.bwd_incl += own.bwd
                    h = h.parent
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
        if n.rec is None and (n.owner is None or not n.edges_ok):
            continue
        for p in (n.rec.edges if n.rec is not None else n.owner.own_edges):
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


# ---- tensor parallelism ----------------------------------------------------------

HEAD_ATTRS = ("n_head", "num_heads", "n_heads", "nhead", "num_attention_heads")
KV_HEAD_ATTRS = ("n_kv_head", "n_kv_heads", "num_key_value_heads", "num_kv_heads")
REPLICATED_LIST_MAX = 20


def int_attr(m, names):
    for a in names:
        v = getattr(m, a, None)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def linear_shape(mod, torch):
    """(in, out) of a Linear, or of HF GPT-2's Conv1D (weight (in, out)); else None."""
    if isinstance(mod, torch.nn.Linear):
        return mod.in_features, mod.out_features
    w = getattr(mod, "weight", None)
    if type(mod).__name__ == "Conv1D" and w is not None and w.dim() == 2:
        return int(w.shape[0]), int(w.shape[1])
    return None


def annotate_tp(tr, allnodes):
    """Writes tp, act_scores_bytes, the tensor-parallel kinds and their dims on
    the nodes (see the module docstring). Returns a summary for x-torch:
    counts of what it recognised and the leaves that stay replicated."""
    torch = tr.torch
    nn = torch.nn
    B, db = tr.B, tr.db
    leaves = [n for n in allnodes if not n.children]
    counts = {"attention": 0, "mlp": 0, "embedding": 0, "head": 0}

    def mod(n):
        return n.rec.module if n.rec is not None else None

    def lin(n):
        return linear_shape(mod(n), torch) if n.rec is not None and not n.children else None

    def weightless(n):
        return not n.children and not n.param_ids

    def free(n):  # nothing to shard: no weights, no FLOPs (dropout, activation, #self of adds)
        return weightless(n) and n.flops == 0

    def is_norm(n):
        m = mod(n)
        return m is not None and not n.children and "norm" in type(m).__name__.lower()

    def tokens(n, i, o):
        t = n.dims.get("seq")
        return float(t) if t else n.flops / max(2.0 * i * o, 1.0)

    def set_tp(n, nbytes, shardable, role, replicated=0.0):
        n.tp = {"bytes": float(nbytes), "shardable": bool(shardable)}
        if shardable and replicated > 0:
            n.tp["replicated_saved"] = min(float(replicated), n.saved)
        n.tp_role = role

    def scores(n, heads, sq, skv):
        """The saved softmax outputs (and what dropout made of them) of B *
        heads * sq * skv elements."""
        want = B * heads * sq * skv
        return sum(b for e, b, k in n.saved_items if e == want and k in tr.score_keys) / B

    def fed_by(kids, lo, j):
        """kids[j] reads what kids[lo..j-1] produced: the module that returned
        its input is one of them, or no module did (an inline op, on a #self
        leaf among them, made it)."""
        p = kids[j].rec.in_producer if kids[j].rec is not None else None
        if kids[j].rec is None:
            return True
        if p is None:
            return any(k.rec is None for k in kids[lo + 1:j])
        return any(k.rec is p for k in kids[lo:j])

    # nn.MultiheadAttention (torchvision's ViT attention, nn.Transformer's
    # layers): a leaf, its out_proj folded in
    for n in leaves:
        m = mod(n)
        if isinstance(m, nn.MultiheadAttention) and "heads" in n.dims and "seq" in n.dims:
            E, a, sq = n.dims["hidden"], n.dims["heads"], n.dims["seq"]
            skv = n.dims.get("kv_seq", sq)
            # its saved query (and, for cross-attention, key/value) input stays
            # whole on each rank: from the dims, as masks among the inputs
            # (and keyword arguments torch < 2 hooks miss) would mislead
            rep = db * sq * E
            if m.kdim != E or m.vdim != E or n.kind == "cross_attention":
                rep += db * skv * m.kdim
            set_tp(n, db * sq * E, True, "attention", rep)
            n.scores = scores(n, a, sq, skv)
            counts["attention"] += 1

    def head_counts(c, inner):
        """(heads, kv heads, head size) of attention module c whose heads
        are inner wide together, or None: the counts are attributes of the
        module or (Hugging Face's attention in recent transformers, 5.25
        tried: head_dim and num_key_value_groups only) of its config, and a
        head size it names must be inner / heads."""
        cfg = getattr(mod(c), "config", None)
        a = int_attr(mod(c), HEAD_ATTRS) or int_attr(cfg, HEAD_ATTRS)
        if not a or inner % a:
            return None
        hd = int_attr(mod(c), ("head_dim", "attention_head_size"))
        if hd and hd != inner // a:
            return None
        return a, int_attr(mod(c), KV_HEAD_ATTRS) or int_attr(cfg, KV_HEAD_ATTRS) or a, inner // a

    def qkv_fit(projs, h, inner, kvh, dk):
        """projs are q, k, v (or one fused qkv) from h for heads inner wide."""
        return all(lin(p)[0] == h for p in projs) and \
            sum(lin(p)[1] for p in projs) == inner + 2 * kvh * dk

    def mark_attention(c, core, heads, s, h, pre, projs, mid, o):
        """c is an attention: its core, its projections column-parallel, the
        leaves between them sharded (a table of relative position biases
        kept whole), the out projection o row-parallel."""
        a, kvh, dk = heads
        dims = {"hidden": h, "heads": a, "kv": dk, "seq": s}
        if kvh != a:
            dims["kv_heads"] = kvh
        c.kind, c.dims = "attention", dict(dims)
        core.kind, core.dims = "attention_core", dict(dims)
        core.scores = scores(core, a, s, s)
        for k in pre:
            if free(k) or is_norm(k):
                set_tp(k, 0, False, "replicated")
        for p in projs:
            set_tp(p, 0, True, "column", p.in_distinct)
        for k in mid:
            if isinstance(mod(k), nn.Embedding):
                set_tp(k, 0, False, "replicated")
            else:
                set_tp(k, 0, True, "core" if k is core else "sharded")
        set_tp(o, db * s * h, True, "row")
        counts["attention"] += 1

    def attention_container(c):
        kids = c.children
        li = [i for i, k in enumerate(kids) if lin(k)]
        if len(li) < 2:
            return False
        o, oi, first = kids[li[-1]], li[-1], li[0]
        inner, h = lin(o)
        heads = head_counts(c, inner)
        projs = [kids[i] for i in li[:-1]]
        if not heads or not qkv_fit(projs, h, inner, heads[1], heads[2]) or \
                any(k.tp is not None for k in kids):
            return False
        mid = [k for k in kids[first:oi] if k not in projs]
        # a table of relative position biases (T5's relative_attention_bias,
        # in its first layer) is looked up beside the core: kept whole
        if any(not weightless(k) and not isinstance(mod(k), nn.Embedding) for k in mid):
            return False
        core = [k for k in kids[li[-2] + 1:oi] if k.flops > 0]
        if not core:
            return False
        core = max(core, key=lambda k: k.flops)
        mark_attention(c, core, heads, tokens(o, inner, h), h, kids[:first], projs, mid, o)
        for k in kids[oi + 1:]:
            if free(k):
                set_tp(k, 0, False, "replicated")
        return True

    def mlp_container(c):
        kids = c.children
        li = [i for i, k in enumerate(kids) if lin(k)]
        if len(li) < 2:
            return False
        bi, first = li[-1], li[0]
        f, h = lin(kids[bi])
        cols = [kids[i] for i in li[:-1]]
        if any(lin(k) != (h, f) for k in cols) or any(k.tp is not None for k in kids):
            return False
        if any(not (free(k) or is_norm(k)) for k in kids[:first]):
            return False
        if any(not free(k) for k in kids[first:bi] if k not in cols):
            return False
        if any(not free(k) for k in kids[bi + 1:]) or not fed_by(kids, first, bi):
            return False
        s = tokens(cols[0], h, f)
        c.kind, c.dims = "mlp", {"hidden": h, "ffn": f, "seq": s}
        for k in kids[:first]:
            set_tp(k, 0, False, "replicated")
        for k in kids[first:bi]:
            if k in cols:
                set_tp(k, 0, True, "column", k.in_distinct)
            else:
                set_tp(k, 0, True, "sharded")
        set_tp(kids[bi], db * s * h, True, "row")
        for k in kids[bi + 1:]:
            set_tp(k, 0, False, "replicated")
        counts["mlp"] += 1
        return True

    def pairs_in(kids):
        """Linear(h->f), element-wise leaves, Linear(f->h), each reading the
        previous one's output, in kids (a layer's own children, or every
        leaf in execution order: a pair split across modules)."""
        for i, a in enumerate(kids):
            sa = lin(a)
            if not sa or a.tp is not None:
                continue
            h, f = sa
            j = i + 1
            while j < len(kids) and free(kids[j]) and kids[j].tp is None:
                j += 1
            if j >= len(kids) or lin(kids[j]) != (f, h) or kids[j].tp is not None:
                continue
            if not all(fed_by(kids, i, k) for k in range(i + 1, j + 1)):
                continue
            s = tokens(a, h, f)
            set_tp(a, 0, True, "column", a.in_distinct)
            for k in kids[i + 1:j]:
                set_tp(k, 0, True, "sharded")
            set_tp(kids[j], db * s * h, True, "row")
            a.dims["ffn"] = f
            counts["mlp"] += 1

    for c in allnodes:
        if not c.children or c.rec is None or any(k.children for k in c.children):
            continue
        if not attention_container(c) and not mlp_container(c):
            pairs_in(c.children)

    # Hugging Face's BERT and ViT split a layer across modules: the q, k, v
    # projections and the core in one, which has the head count
    # (BertSelfAttention), the out projection first in the next
    # (BertSelfOutput); the MLP's two linears in two (BertIntermediate,
    # BertOutput). Leaves in execution order, and the containers of leaves.
    at = {id(n): i for i, n in enumerate(leaves)}

    def split_attention(c):
        kids = c.children
        li = [i for i, k in enumerate(kids) if lin(k)]
        if len(li) < 2 or any(k.tp is not None for k in kids):
            return False
        projs = [kids[i] for i in li]
        h, inner = lin(projs[0])
        heads = head_counts(c, inner)
        if not heads or not qkv_fit(projs, h, inner, heads[1], heads[2]):
            return False
        first, last = li[0], li[-1]
        rest = [k for k in kids[first:] if k not in projs]
        core = [k for k in kids[last + 1:] if k.flops > 0]
        if any(not (free(k) or is_norm(k)) for k in kids[:first]) or \
                any(not weightless(k) for k in rest) or len(core) != 1:
            return False
        j = at[id(kids[-1])] + 1
        o = leaves[j] if j < len(leaves) else None
        if o is None or o.rec is None or o.tp is not None or lin(o) != (inner, h):
            return False
        p = o.rec.in_producer
        if p is not None and not any(r is p for r in iter_subtree(c.rec)):
            return False
        mark_attention(c, core[0], heads, tokens(o, inner, h), h, kids[:first], projs, rest, o)
        return True

    for c in allnodes:
        if c.children and c.rec is not None and not any(k.children for k in c.children):
            split_attention(c)
    # Linear(h->f), element-wise leaves, Linear(f->h) across modules
    # (Hugging Face BERT's BertIntermediate and BertOutput)
    pairs_in(leaves)

    # the LM head: the last leaf with work, a Linear(h->V) matching an
    # Embedding(V, h); that embedding is the token embedding
    embs = [n for n in leaves if isinstance(mod(n), nn.Embedding) and n.tp is None]
    head = tok = None
    for n in reversed(leaves):
        if free(n):
            continue
        sh = lin(n)
        if sh and n.tp is None:
            for e in embs:
                if (mod(e).embedding_dim, mod(e).num_embeddings) == sh:
                    head, tok = n, e
                    break
        break
    if head is not None:
        h, V = lin(head)
        s = tokens(head, h, V)
        head.kind, head.dims = "head", {"hidden": h, "vocab": V, "seq": s}
        # the parallel cross-entropy all-reduces max, sum of exps and the
        # target logit per token: 3 fp32 (Megatron-LM; as traces/gen.c)
        set_tp(head, 12.0 * s, True, "vocab", head.in_distinct)
        counts["head"] += 1
    else:
        rows = [mod(e).num_embeddings for e in embs]
        longest = max([e.dims.get("seq", 0) for e in embs] + [0])
        if rows and max(rows) > longest:
            tok = embs[rows.index(max(rows))]
    if tok is not None:
        set_tp(tok, tok.out, True, "vocab", tok.in_distinct)
        counts["embedding"] += 1

    # the rest: replicated by design where the model has tp data, else unknown
    if any(n.tp is not None for n in leaves):
        for n in leaves:
            if n.tp is None and (isinstance(mod(n), nn.Embedding) or is_norm(n) or free(n)):
                set_tp(n, 0, False, "replicated")
    stay = [n.name for n in leaves if n.tp is None and (n.param_ids or n.flops > 0)]
    return {"recognised": counts, "replicated": len(stay),
            "replicated_first": stay[:REPLICATED_LIST_MAX]}


KERNELS_MAX = 64  # per leaf (model format)
IN_FLASH = "in_flash"  # a pass over a sibling's scores under --attn flash: none


def attention_cores(ks, cross=False):
    """The core attentions among a leaf's raw kernels: a product of two
    activations (the scores, batch x L x S over the head size E) followed by
    one whose contraction runs over the scores' keys (the context, batch x L
    x E over S): softmax(Q K^T) V as PyTorch's unfused attention runs it.
    Each is a dict of the two kernels' indices, the fused kernel's shape
    (batch, m = L, n = S, k = E; only where the context's width is E too, so
    that FlashAttention's counted FLOPs are the pair's), the elements of a
    scores tensor (what marks the passes over them: softmax, mask, dropout)
    whether it is a self-attention (L == S in a leaf that is not a
    cross-attention, whose keys are another sequence's: token slices scale
    a self-attention's keys),
    and whether it is causal: a self-attention one of whose passes over the
    scores read a triangular mask (Tracer.tri_keys)."""
    cores, used = [], set()
    acts = [i for i, k in enumerate(ks) if k[0] == "gemm" and not k[5]]
    for a, i in enumerate(acts):
        if i in used:
            continue
        _, b, L, S, E = ks[i][:5]
        for j in acts[a + 1:]:
            if j in used:
                continue
            _, b2, L2, E2, S2 = ks[j][:5]
            if b2 == b and L2 == L and int(round(S2)) == S and E2 == int(round(E)):
                cores.append({"scores": i, "context": j, "batch": b, "m": L, "n": S,
                              "k": int(round(E)), "elems": (b * L * S, S),
                              "self": L == S and not cross,
                              "causal": L == S and not cross and len(ks[j]) > 7 and ks[j][7]})
                used.update((i, j))
                break
    for k in ks:
        c = scores_core(cores, k)
        if c is not None and c["self"] and len(k) > 5 and k[5]:
            c["causal"] = True
    return cores


def scores_core(cores, k):
    """The core attention whose scores a raw mem kernel ran over, or None."""
    if k[0] != "mem" or len(k) < 5:
        return None
    return next((c for c in cores if c["elems"] in k[4]), None)


def kernels_json(n, B):
    """The kernels a leaf's own code launched (pass 1), per sample, in the
    model format's terms (kernel.h): each GEMM with its shape (a linear
    layer's tokens in m, the tp split its role gives: column "n", row "k"; a
    product of two activations batched, split by heads where the node is
    tp-shardable), every other op (norms, GeLU, softmax, dropout, adds) a
    memory-bound kernel of the bytes it read and wrote, one per op name.
    A convolution is the implicit GEMM cuDNN runs (output pixels x output
    channels x input channels * kernel size; grouped: one per group, as the
    GEMM's batch; transposed: input pixels x output channels * kernel size x
    input channels), tp none; a depthwise one a memory-bound kernel that
    counts its FLOPs ("conv_depthwise": a stencil on the vector units).
    None when the leaf ran an op without a kernel form (a transposed
    depthwise convolution, an einsum that reached the mode undecomposed; on
    torch 1.13 einsums arrive as bmm), a shape does not divide by the batch,
    or the kernels' FLOPs differ from the leaf's counted ones: then the leaf
    is timed whole."""
    if n.children or not n.krecs:
        return None
    ks = []
    for r in n.krecs:
        if not r.kernels_ok:
            return None
        ks.extend(r.kernels)
    if not ks:
        return None
    shard = bool(n.tp and n.tp.get("shardable"))
    # a shardable leaf that holds both projections itself (an attention or an
    # MLP written with inline weights): Megatron-LM's pattern, every linear
    # column-parallel but the last, which is row-parallel; a single one (a
    # vocab-parallel head) column-parallel
    n_lin = sum(1 for k in ks if k[0] == "gemm" and k[5])
    lin_seen = 0
    # memory-bound kernels: split by tp inside a sharded attention or MLP; on
    # s/t tokens under sequence parallelism in a tp-aware replicated leaf (a
    # norm); whole in a vocab-parallel embedding (its output is whole)
    mem_tp = ("none" if n.kind == "embedding" or not n.tp else "shard" if shard else "seq")
    cores = attention_cores(ks, cross=n.kind == "cross_attention")
    # a leaf of its own that only passes over a sibling's scores (nanoGPT's
    # and Hugging Face GPT-2's attention dropout, an nn.Dropout module):
    # part of that attention's unfused core
    sib = []
    if not cores and n.parent is not None and all(k[0] == "mem" for k in ks):
        for x in n.parent.children:
            if x is not n and not x.children and x.krecs and \
                    all(r.kernels_ok for r in x.krecs):
                sib += attention_cores([k for r in x.krecs for k in r.kernels],
                                       cross=x.kind == "cross_attention")
        if not all(scores_core(sib, k) for k in ks):
            sib = []
    core_gemm = {}   # index in ks -> (core, "n" | "k"): a scores or context product
    for c in cores:
        core_gemm[c["scores"]] = (c, "n")
        core_gemm[c["context"]] = (c, "k")
    out, mem, mem_flops, flops = [], {}, {}, 0.0
    for i, k in enumerate(ks):
        if k[0] == "mem":
            # a pass over an attention's scores (softmax, masking, dropout)
            # is that attention's own: priced only when it runs unfused
            c = scores_core(cores or sib, k)
            key = (k[1], id(c) if c else None)
            if key not in mem:
                mem[key] = [0.0, c, 0.0, False]  # bytes, core, backward bytes, given?
            g = mem[key]
            g[0] += k[2] / B
            given = len(k) > 6 and k[6] is not None
            g[2] += (k[6] if given else 2.0 * k[2]) / B
            g[3] = g[3] or given
            if len(k) > 3 and k[3] > 0:
                mem_flops[key] = mem_flops.get(key, 0.0) + k[3] / B
            continue
        batch, m, nn, kk, weight, kv = k[1:7]
        kk_i = int(round(kk))
        if kk_i < 1 or abs(kk - kk_i) > 1e-6 * kk:
            return None
        if weight:
            if m % B:
                return None
            e = {"name": k[7] if len(k) > 7 else "linear", "op": "gemm", "m": m // B, "n": nn,
                 "k": kk_i}
            if batch > 1:  # a grouped convolution: one GEMM per group
                e["batch"] = batch
            lin_seen += 1
            tp = {"column": "n", "row": "k"}.get(n.tp_role)
            if tp is None:
                tp = ("none" if not shard else "k" if lin_seen == n_lin and n_lin > 1 else "n")
        else:
            if batch % B:
                return None
            e = {"name": "matmul", "op": "gemm", "batch": batch // B, "m": m, "n": nn,
                 "k": kk_i, "samples": "batch"}
            tp = "batch" if shard else "none"
            if kv:
                e["kv"] = kv
            if i in core_gemm:
                c, role = core_gemm[i]
                e["name"] = "scores" if role == "n" else "context"
                if c["self"]:
                    e["kv"] = role
                else:  # a cross-attention's keys are another sequence's
                    e.pop("kv", None)
                e["attn"] = "unfused"
        if tp != "none":
            e["tp"] = tp
        flops += 2.0 * e.get("batch", 1) * e["m"] * e["n"] * e["k"]
        out.append(e)
        if i in core_gemm and core_gemm[i][1] == "k":
            # the fused kernel that replaces this attention's scores, passes
            # and context under --attn flash, beside its unfused kernels
            c = core_gemm[i][0]
            f = {"name": "flash", "op": "flash", "batch": c["batch"] // B, "m": c["m"],
                 "n": c["n"], "k": c["k"]}
            if c["causal"]:
                f["causal"] = True
            if shard:
                f["tp"] = "batch"
            out.append(f)
    for key, (b, c, bwd, given) in sorted(mem.items(), key=lambda x: -x[1][0]):
        e = {"name": key[0][:31], "op": "mem", "bytes": b}
        if given:
            e["bwd_bytes"] = bwd
        if mem_flops.get(key, 0) > 0:
            e["flops"] = mem_flops[key]
            flops += e["flops"]
        if mem_tp != "none":
            e["tp"] = mem_tp
        if c is not None:
            if c["self"]:
                e["per"] = "scores"
            e["attn"] = "unfused"
        out.append(e)
    if sib:  # under --attn flash its pass runs inside the fused kernel
        out.append({"name": IN_FLASH, "op": "mem", "bytes": 0, "attn": "flash"})
    out.extend(n.extra_kernels)  # per sample already, no FLOPs
    if len(out) > KERNELS_MAX or abs(flops - n.flops) > 0.001 * max(n.flops, 1.0):
        return None
    return out


def node_json(n, device, B=1):
    """device: where the times were measured, or None (shape-only: no times)."""
    j = {"name": n.name, "kind": n.kind, "params": n.params, "flops_fwd": n.flops / 1.0,
         "act_out_bytes": n.out, "act_saved_bytes": n.saved}
    if n.scores is not None and not n.children:
        j["act_scores_bytes"] = min(n.scores, n.saved)
    if n.tp is not None:
        t = {"bytes": n.tp["bytes"], "shardable": n.tp["shardable"]}
        if n.tp["shardable"] and n.tp.get("replicated_saved", 0) > 0:
            t["replicated_saved"] = min(n.tp["replicated_saved"], n.saved)
        j["tp"] = t
    if n.shared:
        j["shared"] = n.shared
    if n.inputs:
        j["inputs"] = n.inputs
    if device is not None:
        j["measured"] = {"fwd_s": n.fwd, "bwd_s": n.bwd, "device": device}
    dims = {k: float(v) for k, v in n.dims.items() if v is not None and math.isfinite(v) and v >= 0}
    if dims:
        j["dims"] = dict(list(dims.items())[:8])
    x = dict(n.xtorch)
    if n.children and device is not None:
        x["fwd_incl_s"], x["bwd_incl_s"] = n.fwd_incl, n.bwd_incl
    if n.tp_role:
        x["tp"] = n.tp_role
    j["x-torch"] = x
    kern = kernels_json(n, B)
    if kern:
        j["kernels"] = kern
        if any(k.get("name") == IN_FLASH for k in kern):
            j["act_scores_bytes"] = n.saved  # all it keeps is of the scores
    if n.children:
        j["children"] = [node_json(c, device, B) for c in n.children]
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
            # mkstemp creates 0600; the model file is for everyone to read
            os.fchmod(f.fileno(), 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def prepare(args, torch, meta):
    """Builds the model (on the meta device when meta) in train mode with every
    `inplace` flag off. Returns (name, model, args, kwargs, B, seq, n_inplace,
    built, tri): built says how ("meta", "cpu then meta", "cpu"); tri holds
    the storage keys of the triangular tensors its construction made (and
    their meta copies), kept alive by the model that holds them."""
    on_meta = False
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if meta:
            try:
                with meta_context(torch), tri_recorder(torch, found):
                    name, model, a, kw, B, seq = build(args, torch)
                on_meta = True
            except TraceError as e:
                if not e.user_code:
                    raise
            except Exception:
                found = []
                # built again on the CPU below, where its own errors surface
        if not on_meta:
            torch.manual_seed(0)
            with tri_recorder(torch, found):
                name, model, a, kw, B, seq = build(args, torch)
        tri = {storage_key(t) for t in found}
        if meta:
            a, kw = to_meta(torch, model, a, kw, tri)
    built = "meta" if on_meta else "cpu then meta" if meta else "cpu"
    model.train()
    n_inplace = 0
    for m in model.modules():
        if isinstance(getattr(m, "inplace", None), bool) and m.inplace:
            m.inplace = False
            n_inplace += 1
    return name, model, a, kw, B, seq, n_inplace, built, (tri, found)


def ce_bytes(d):
    """PyTorch's F.cross_entropy (log_softmax, then nll_loss) under autocast,
    in bytes per logit of d bytes: forward, backward, saved (--help: the
    loss)."""
    cast = 0 if d == 4 else d + 4
    return cast + 16, 16 + cast, 4


def time_loss(tr, n, V, repeat):
    """The median forward and backward seconds of F.cross_entropy over n
    tokens of V fp32 logits on this CPU (--measure), as the training loop
    would run it on the head's output."""
    torch = tr.torch
    x = torch.randn(n, V, requires_grad=True)
    y = torch.randint(V, (n,))
    f, b = [], []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(x, y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        f.append(t1 - t0)
        b.append(t2 - t1)
        x.grad = None
    return statistics.median(f), statistics.median(b)


def charge_loss(args, tr, allnodes, mode):
    """With --loss auto, a recognised LM head whose model ran no loss op is
    charged the training loop's cross-entropy; returns what was charged
    (x-torch.loss of the model), or None. With --measure the loss is timed
    too (time_loss) and its times added to the head's and its ancestors'."""
    if args.loss == "none" or tr.ran_loss():
        return None
    heads = [n for n in allnodes if n.kind == "head" and not n.children]
    if len(heads) != 1:
        return None
    head = heads[0]
    s, V = head.dims.get("seq", 0), head.dims.get("vocab", 0)
    if not (s > 0 and V > 0):
        return None
    fwd_b, bwd_b, saved_b = ce_bytes(tr.db)
    head.saved += saved_b * s * V
    k = {"name": "cross_entropy", "op": "mem", "bytes": fwd_b * s * V,
         "bwd_bytes": bwd_b * s * V}
    if head.tp and head.tp.get("shardable"):
        k["tp"] = "shard"
    head.extra_kernels.append(k)
    what = {"module": head.name, "kind": "cross_entropy", "vocab": int(V), "seq": s,
            "saved_bytes": saved_b * s * V, "fwd_bytes": k["bytes"], "bwd_bytes": k["bwd_bytes"],
            "source": "the training loop's F.cross_entropy under autocast (--loss auto)"}
    if mode == "measure":
        fs, bs = time_loss(tr, int(round(s * tr.B)), int(V), args.repeat)
        fs, bs = fs / tr.B, bs / tr.B  # per sample, as every measured time
        what["measured_fwd_s"], what["measured_bwd_s"] = fs, bs
        head.fwd += fs
        head.bwd += bs
        n = head
        while n is not None:
            n.fwd_incl += fs
            n.bwd_incl += bs
            n = n.parent
    head.xtorch["loss"] = what
    return what


def trace(args, torch, mode):
    """One trace in mode "shape" (meta tensors, no backward, no times), "cpu"
    (one real forward, no times) or "measure". Returns (Tracer, name, seq,
    n_inplace, built, torch_params)."""
    name, model, a, kw, B, seq, n_inplace, built, tri = prepare(args, torch, mode == "shape")
    torch_params = sum(p.numel() for p in model.parameters())
    tr = Tracer(torch, model, a, kw, B, DTYPE_BYTES[args.dtype])
    tr.tri_keys.update(tri[0])
    tr.tri_found = tri[1]  # alive while traced: their storages stay theirs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr.analyse(backward=mode == "measure",
                   context=meta_context(torch) if mode == "shape" else None)
        if mode == "measure":
            tr.time_passes(args.repeat)
    return tr, name, seq, n_inplace, built, torch_params


def main(argv):
    args = parse_args(argv)
    if args.help:
        print(__doc__.strip())
        return 0
    t0 = time.perf_counter()
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
    notes = []
    mode = "measure" if args.measure else "shape"
    try:
        tr, name, seq, n_inplace, built, torch_params = trace(args, torch, mode)
    except TraceError as e:
        if mode != "shape" or not e.user_code:
            raise
        # a data-dependent branch, .item(), an op without a meta kernel: run
        # it for real once (a failure here is the model's own, reported alone)
        torch.manual_seed(0)
        tr, name, seq, n_inplace, built, torch_params = trace(args, torch, "cpu")
        mode = "cpu"
        notes.append("shape-only tracing failed on meta tensors (%s); traced with one real "
                     "forward pass on the CPU instead" % brief(str(e)))
    if args.name:
        name = args.name
    device = (args.device_name or "cpu:" + cpu_name())[:128] if mode == "measure" else None
    root, allnodes = make_tree(tr, name, torch, notes)
    tp = annotate_tp(tr, allnodes)
    loss = charge_loss(args, tr, allnodes, mode)
    for w in notes:
        warn(w)
    traced = sum(n.params for n in allnodes)
    if traced != torch_params:
        raise TraceError("internal error: traced %d parameters but torch counts %d"
                         % (traced, torch_params))
    if seq is None:
        seqs = [n.dims.get("seq", 0) for n in allnodes if n.kind in ("attention", "cross_attention")]
        seq = int(max(seqs)) if seqs else 1
    xt = {"spec": args.spec, "params": torch_params, "torch": torch.__version__, "batch": tr.B,
          "mode": mode, "built": built, "inplace_disabled": n_inplace,
          "flops_by_op": dict(sorted(tr.flops_by_op.items())), "tp": tp, "warnings": notes,
          "loss": loss or ("in the forward" if tr.ran_loss() else "none")}
    if mode == "measure":
        xt.update(repeat=args.repeat, threads=torch.get_num_threads(), device=device)
    out = {"format": "stagecraft.model/1", "name": name[:NAME_MAX], "dtype": args.dtype,
           "seq_len": max(1, int(seq)), "root": node_json(root, device, tr.B), "x-torch": xt}
    xt["trace_s"] = round(time.perf_counter() - t0, 3)
    write_atomic(args.output, clean_numbers(out))
    n_leaves = sum(1 for n in allnodes if not n.children)
    how = {"shape": "shape-only (meta tensors)", "cpu": "one real CPU pass",
           "measure": "measured on the CPU"}[mode]
    print("%s: %s: %d parameters (torch: %d), %s (%s), %.4g GFLOP/sample "
          "forward, %s in %.1f s, written to %s" % (
              PROG, name, traced, torch_params, plural(len(allnodes), "module", "modules"),
              plural(n_leaves, "leaf", "leaves"),
              sum(n.flops for n in allnodes) / 1e9, how, xt["trace_s"], args.output))
    if loss:
        print("%s: loss: the training loop's cross-entropy over %s's %d logits per token "
              "charged to it (%.4g MiB/sample saved in fp32; --loss none leaves it out)" % (
                  PROG, loss["module"], loss["vocab"], loss["saved_bytes"] / 2**20))
    c = tp["recognised"]
    found = ", ".join("%d %s" % (c[k], k) for k in ("attention", "mlp", "embedding", "head") if c[k])
    if found or tp["replicated"]:
        print("%s: tensor parallelism: %s; %s" % (
            PROG, found + " sharded" if found else "nothing recognised",
            "%d module%s with work stay%s replicated: %s%s" % (
                tp["replicated"], "" if tp["replicated"] == 1 else "s",
                "s" if tp["replicated"] == 1 else "", ", ".join(tp["replicated_first"][:5]),
                ", ..." if tp["replicated"] > 5 else "") if tp["replicated"] else
            "every module with work has tp data"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except TraceError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
