#!/usr/bin/env python3
"""bench_optimizer.py - a framework's optimizer step on this GPU, by kernel.

Times the four steps the cost model prices for mixed-precision training
(cost_models/cost.h, sc_cost_optimizer_time), as PyTorch runs them over
fp32 master weights shaped like a model's (default: gpt-1.3b's tensors,
24 layers of hidden 2048, vocabulary 50264):
  clip   the L2 norm of the fp32 gradients, _foreach_norm (4 B/param; as
         Megatron-LM's clip_grads, which scales them only when clipping)
  adam   torch.optim.AdamW(fused=True).step(): read g, w, m, v; write w, m, v
         (28 B/param)
  copy   the master weights to the bf16 model weights, _foreach_copy_ (6 B)
  zero   the gradients zeroed, _foreach_zero_ (4 B)
Each is the median of CUDA-event timings of back-to-back repetitions; the
rate printed is the model's byte count over the time, and its fraction of
the HBM bandwidth given (--hbm, default the H200's 4.8e12 B/s), to set
against the preset's memory_bw (0.8).

Writes a stagecraft.optimizer_bench/1 JSON file (-o). Exits 3 (nothing
written) where PyTorch or a CUDA GPU is missing, 2 on a bad argument.

usage: python3 scripts/bench_optimizer.py [-o FILE] [--layers N] [--hidden H]
                                          [--vocab V] [--hbm B/s] [--iters N]
"""
import argparse
import sys

from gpu_bench_common import queued_times, torch_on_cuda, write_json

PER_PARAM = {"clip": 4, "adam": 28, "copy": 6, "zero": 4}  # cost_models/cost_memory.c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", help="JSON file to write (default: print only)")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=50264)
    ap.add_argument("--hbm", type=float, default=4.8e12, help="HBM bytes/s of the GPU")
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    if a.layers <= 0 or a.hidden <= 0 or a.vocab <= 0 or a.hbm <= 0 or a.iters < 3:
        print("bench_optimizer.py: --layers, --hidden, --vocab, --hbm must be positive, "
              "--iters at least 3", file=sys.stderr)
        sys.exit(2)
    torch = torch_on_cuda("bench_optimizer.py")
    dev = torch.device("cuda")
    h = a.hidden
    shapes = [(a.vocab, h)]  # the tied embedding
    for _ in range(a.layers):  # ln, qkv, out, ln, fc1, fc2 with biases
        shapes += [(h,), (h,), (3 * h, h), (3 * h,), (h, h), (h,), (h,), (h,),
                   (4 * h, h), (4 * h,), (h, 4 * h), (h,)]
    shapes += [(h,), (h,)]
    params = [torch.nn.Parameter(torch.randn(s, device=dev) * 0.02) for s in shapes]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    model16 = [torch.empty(s, device=dev, dtype=torch.bfloat16) for s in shapes]
    n = sum(p.numel() for p in params)
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    opt.step()  # the states exist before timing
    grads = [p.grad for p in params]
    steps = {
        "clip": lambda: torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))),
        "adam": opt.step,
        "copy": lambda: torch._foreach_copy_(model16, [p.data for p in params]),
        "zero": lambda: torch._foreach_zero_(grads),
    }
    props = torch.cuda.get_device_properties(dev)
    out = {"format": "stagecraft.optimizer_bench/1", "device": props.name,
           "torch": torch.__version__, "params": n, "hbm_bytes_per_s": a.hbm,
           "iters": a.iters, "bytes_per_param": PER_PARAM, "results": []}
    print("bench_optimizer.py: %s, torch %s, %.3f G parameters in %d tensors"
          % (props.name, torch.__version__, n / 1e9, len(params)))
    for name, fn in steps.items():
        t = queued_times(torch, fn, a.iters, warmup=2)[0]
        rate = PER_PARAM[name] * n / t
        out["results"].append({"step": name, "time_s": t, "bytes": PER_PARAM[name] * n,
                               "bytes_per_s": rate, "of_hbm": rate / a.hbm})
        print("%-5s %8.3f ms  %2d B/param  %7.0f GB/s  %.3f of HBM"
              % (name, 1e3 * t, PER_PARAM[name], rate / 1e9, rate / a.hbm), flush=True)
    tot = sum(r["time_s"] for r in out["results"])
    byt = sum(r["bytes"] for r in out["results"])
    out["total_s"], out["total_of_hbm"] = tot, byt / tot / a.hbm
    print("all   %8.3f ms  %2d B/param  %7.0f GB/s  %.3f of HBM"
          % (1e3 * tot, byt / n, byt / tot / 1e9, byt / tot / a.hbm))
    if a.output:
        write_json("bench_optimizer.py", a.output, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
