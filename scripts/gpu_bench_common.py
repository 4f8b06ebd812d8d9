"""gpu_bench_common.py - what scripts/bench_flash.py and bench_optimizer.py share:
finding PyTorch and a CUDA GPU, timing calls queued back to back with CUDA
events, and writing a JSON file whole or not at all."""
import json
import os
import statistics
import sys


def torch_on_cuda(script, need=""):
    """torch, where it imports (with `need`, a module of it, e.g.
    "torch.nn.attention") and sees a CUDA GPU; else says why and exits 3."""
    try:
        import importlib
        torch = importlib.import_module("torch")
        if need:
            importlib.import_module(need)
    except ImportError as e:
        print("%s: skipped: no PyTorch%s (%s)" % (script, " with " + need if need else "", e))
        sys.exit(3)
    if not torch.cuda.is_available():
        print("%s: skipped: PyTorch sees no CUDA GPU" % script)
        sys.exit(3)
    return torch


def queued_times(torch, fn, iters, warmup=3, before=None):
    """Median and min seconds of `iters` calls of fn queued back to back
    (no idle gaps), after `warmup` untimed calls and `before()` if given."""
    for _ in range(warmup):
        fn()
    if before:
        before()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    ev[0].record()
    for i in range(iters):
        fn()
        ev[i + 1].record()
    torch.cuda.synchronize()
    ts = [ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(iters)]
    return statistics.median(ts), min(ts)


def write_json(script, path, obj):
    """obj to path, whole or not at all (a temporary name, then a rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    print("%s: wrote %s" % (script, path))
