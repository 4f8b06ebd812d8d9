#!/usr/bin/env python3
"""bench_flash.py - fused attention's rate by sequence length on this GPU.

Times PyTorch's scaled_dot_product_attention through each fused backend it
has (flash: FlashAttention-2 as PyTorch ships it; cudnn: cuDNN's fused
attention; efficient: the memory-efficient kernel; fa3: FlashAttention-3
where PyTorch can activate it) on the grid of Dao 2023's Fig. 4, the data
scripts/fit_flash.py fits the presets to: 16k tokens (batch x sequence),
hidden 2048, sequences 512 .. 16k, head size 64 and 128, with and without
the causal mask, bf16, forward and forward + backward. FLOPs are counted as
that benchmark does (4 x batch x heads x s^2 x head size forward, half with
the causal mask, 2.5 times the forward backward), so the rates compare with
the presets' fit. Each point is the median of CUDA-event timings after
warm-up, on random operands, the calls queued back to back behind 5 ms of
GEMMs (the GPU busy throughout, its clock at the power limit as in
training).

--dropout P times the kernels with attention dropout P (default 0, as the
benchmark the presets are fitted to): the runs of the flash-attention
trainer trained with 0.1 inside the kernel, and what that costs a fused
kernel near its compute bound is not published for FA2 (docs/accuracy.md,
"FlashAttention-2's end-to-end table").

Writes a stagecraft.flash_bench/1 JSON file (-o); `scripts/fit_flash.py
--measured FILE` fits it as it fits the published bars. Exits 3 (nothing
written) where PyTorch or a CUDA GPU is missing, 2 on a bad argument.

usage: python3 scripts/bench_flash.py [-o FILE] [--seqs 512,...] [--heads 64,128]
                                      [--backends flash,cudnn,fa3] [--iters N]
                                      [--dropout P]
"""
import argparse
import json
import sys

from gpu_bench_common import queued_times, torch_on_cuda, write_json


def die(msg):
    print("bench_flash.py: " + msg, file=sys.stderr)
    sys.exit(2)


def parse_list(s, what):
    try:
        v = [int(x) for x in s.split(",") if x]
    except ValueError:
        die("--%s: %r is not a list of integers" % (what, s))
    if not v or min(v) <= 0:
        die("--%s: give positive integers, comma-separated" % what)
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", help="JSON file to write (default: print only)")
    ap.add_argument("--seqs", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--heads", default="64,128", help="head sizes")
    ap.add_argument("--tokens", type=int, default=16384, help="batch x sequence")
    ap.add_argument("--dim", type=int, default=2048, help="hidden size (heads x head size)")
    ap.add_argument("--backends", default="flash,cudnn,fa3",
                    help="of flash, cudnn, efficient, fa3")
    ap.add_argument("--iters", type=int, default=15, help="timed calls per point")
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="attention dropout probability in [0, 1) (default 0)")
    a = ap.parse_args()
    if not 0.0 <= a.dropout < 1.0:
        die("--dropout: %g is not in [0, 1)" % a.dropout)
    seqs, heads = parse_list(a.seqs, "seqs"), parse_list(a.heads, "heads")
    if a.iters < 3:
        die("--iters: at least 3")
    for s in seqs:
        if a.tokens % s:
            die("--seqs: %d does not divide --tokens %d" % (s, a.tokens))
    for d in heads:
        if a.dim % d:
            die("--heads: %d does not divide --dim %d" % (d, a.dim))
    known = ("flash", "cudnn", "efficient", "fa3")
    backends = [b for b in a.backends.split(",") if b]
    for b in backends:
        if b not in known:
            die("--backends: %r is not one of %s" % (b, ", ".join(known)))

    torch = torch_on_cuda("bench_flash.py", "torch.nn.attention")
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    info = {"format": "stagecraft.flash_bench/1", "device": props.name,
            "sms": props.multi_processor_count, "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "dtype": "bf16", "tokens": a.tokens, "dim": a.dim, "iters": a.iters,
            "dropout": a.dropout,
            "flops": "forward 4 b h s^2 d (causal: half), backward 2.5 x forward",
            "results": [], "skipped": []}
    print("bench_flash.py: %s (%d SMs), torch %s, CUDA %s, cuDNN %s, dropout %g" % (
        props.name, props.multi_processor_count, torch.__version__, torch.version.cuda,
        info["cudnn"], a.dropout))

    heat_a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)

    def heat():  # ~5 ms of dense math queued ahead: the GPU at its power limit
        for _ in range(25):
            torch.mm(heat_a, heat_a)

    def timed(fn):
        return queued_times(torch, fn, a.iters, before=heat)

    def skip(entry):
        info["skipped"].append(entry)
        print("bench_flash.py: skipped: %s" % json.dumps(entry), flush=True)

    for b in backends:
        deact = None
        if b == "fa3":
            act = getattr(torch.nn.attention, "activate_flash_attention_impl", None)
            if act is None:
                skip({"backend": b, "why": "this PyTorch has no "
                      "torch.nn.attention.activate_flash_attention_impl"})
                continue
            try:
                act("FA3")
            except Exception as e:  # the FA3 library is a separate install
                skip({"backend": b, "why": "activate_flash_attention_impl('FA3'): %s"
                      % (str(e).splitlines() or [type(e).__name__])[0][:200]})
                continue
            deact = getattr(torch.nn.attention, "restore_flash_attention_impl", None)
            kernel = SDPBackend.FLASH_ATTENTION
        else:
            kernel = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                      "efficient": SDPBackend.EFFICIENT_ATTENTION}[b]
        for mask in ("causal", "full"):
            causal = mask == "causal"
            for d in heads:
                for s in seqs:
                    batch, h = a.tokens // s, a.dim // d
                    q, k, v = (torch.randn(batch, h, s, d, device=dev, dtype=torch.bfloat16,
                                           requires_grad=True) for _ in range(3))
                    g = torch.randn(batch, h, s, d, device=dev, dtype=torch.bfloat16)

                    def fwd():
                        with torch.no_grad():
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                           dropout_p=a.dropout)

                    def fwd_bwd():
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                           dropout_p=a.dropout)
                        o.backward(g)

                    try:
                        with sdpa_kernel([kernel]):
                            tf, tf_min = timed(fwd)
                            tb, tb_min = timed(fwd_bwd)
                    except RuntimeError as e:
                        skip({"backend": b, "mask": mask, "head_dim": d, "seq": s,
                              "why": (str(e).splitlines() or ["RuntimeError"])[0][:200]})
                        continue
                    fl = 4.0 * batch * h * s * s * d * (0.5 if causal else 1.0)
                    r = {"backend": b, "mask": mask, "head_dim": d, "seq": s, "batch": batch,
                         "heads": h, "fwd_s": tf, "fwd_min_s": tf_min, "fwd_bwd_s": tb,
                         "fwd_bwd_min_s": tb_min, "fwd_tflops": fl / tf / 1e12,
                         "fwd_bwd_tflops": 3.5 * fl / tb / 1e12}
                    info["results"].append(r)
                    print("%-9s %-6s d %3d s %5d: forward %7.1f TFLOP/s, forward + backward "
                          "%7.1f TFLOP/s" % (b, mask, d, s, r["fwd_tflops"], r["fwd_bwd_tflops"]),
                          flush=True)
        if deact:
            deact()
    if a.output:
        write_json("bench_flash.py", a.output, info)
        print("bench_flash.py: %d points" % len(info["results"]))
    return 0 if info["results"] else 1


if __name__ == "__main__":
    sys.exit(main())
