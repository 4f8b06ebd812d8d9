#!/usr/bin/env python3
"""layer_table.py - one transformer layer's forward and backward, simulated
against the times Korthikanti et al. 2022 measured.

The validation suite checks whole iterations. Korthikanti et al. 2022
("Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198), Table 4, also gives the forward and the backward time of
one transformer layer of their 22B GPT (h 6144, 64 heads, s 2048, V 51200,
tp 8, micro-batch 4, on a DGX A100 80GB of Selene, Megatron-LM) in five
settings: no recompute, sequence parallelism, full recompute, selective
recompute, and selective recompute with sequence parallelism. Those times
check the kernel model and the tensor-parallel collectives of a layer
without the pipeline, the embedding, the loss or the optimizer around them.

This script simulates one step of that model with L and with L + 1 layers
(`stagecraft sim --timeline`, one microbatch, tp 8, dgx-a100-80g, framework
megatron) and takes one layer's time as the difference: its forward (the F
op and the tp collectives after it), and its backward (the recompute, the B
op and their collectives). It prints the predicted and the measured times and
the signed errors; --json gives them as one object; --check exits 1 when a
time is more than 10% off (the suite's per-row target, issue 13).

  scripts/layer_table.py --run bin/stagecraft [--json] [--check]

Pure Python (the standard library); the model files and timelines go to a
temporary directory that is removed afterwards.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SOURCE = ("Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large "
          "Transformer Models' (arXiv:2205.05198), Table 4: one transformer layer of "
          "the 22B model, forward and backward, ms")
MODEL = {"layers": 48, "hidden": 6144, "heads": 64, "seq": 2048, "vocab": 51200}
# (name, recompute, sequence parallelism, forward ms, backward ms) as published
TABLE = [
    ("no recompute", "none", False, 7.7, 11.9),
    ("sequence parallelism", "none", True, 7.2, 11.8),
    ("full recompute", "full", False, 7.7, 19.5),
    ("selective recompute", "selective", False, 7.7, 13.2),
    ("selective + sequence parallelism", "selective", True, 7.2, 13.1),
]
LIMIT = 0.10


def die(msg):
    sys.exit(f"layer_table.py: {msg}")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def phases(binary, model, recompute, sp, timeline):
    """Seconds of the step's forward, recompute and backward on rank 0 (each
    compute op with the collectives that follow it)."""
    cmd = [binary, "sim", "--model", model, "--cluster", "dgx-a100-80g", "--tp", "8",
           "--mbs", "4", "--microbatches", "1", "--recompute", recompute,
           "--framework", "megatron", "--allow-oom", "--timeline", timeline]
    if sp:
        cmd.append("--sp")
    run(cmd)
    try:
        with open(timeline) as f:
            ops = json.load(f)["ranks"][0]["ops"]
    except (OSError, ValueError, KeyError, IndexError) as e:
        die(f"{timeline}: not a timeline with ranks[0].ops ({e})")
    out = {"F": 0.0, "recompute": 0.0, "B": 0.0}
    phase = None
    for op in ops:
        kind = op.get("kind")
        if kind in out:
            phase = kind
        elif kind == "optimizer":
            phase = None
        if phase:
            out[phase] += op["end"] - op["start"]
    return out


def main():
    ap = argparse.ArgumentParser(description="one transformer layer, simulated against "
                                 "Korthikanti et al. 2022, Table 4")
    ap.add_argument("--run", metavar="STAGECRAFT", required=True,
                    help="the stagecraft binary to simulate with")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 when a time is more than {LIMIT:.0%} off")
    a = ap.parse_args()
    if not os.access(a.run, os.X_OK):
        die(f"{a.run}: not an executable")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        models = {}
        for layers in (MODEL["layers"], MODEL["layers"] + 1):
            path = os.path.join(tmp, f"gpt22b_l{layers}.json")
            run([a.run, "model", "gen", "gpt", "--layers", str(layers), "--hidden",
                 str(MODEL["hidden"]), "--heads", str(MODEL["heads"]), "--seq",
                 str(MODEL["seq"]), "--vocab", str(MODEL["vocab"]), "--tied", "-o", path])
            models[layers] = path
        timeline = os.path.join(tmp, "timeline.json")
        for name, recompute, sp, fwd_ms, bwd_ms in TABLE:
            lo = phases(a.run, models[MODEL["layers"]], recompute, sp, timeline)
            hi = phases(a.run, models[MODEL["layers"] + 1], recompute, sp, timeline)
            fwd = 1e3 * (hi["F"] - lo["F"])
            bwd = 1e3 * (hi["recompute"] - lo["recompute"] + hi["B"] - lo["B"])
            rows.append({"setting": name, "recompute": recompute, "sp": sp,
                         "forward_ms": fwd, "backward_ms": bwd,
                         "measured_forward_ms": fwd_ms, "measured_backward_ms": bwd_ms,
                         "forward_error": fwd / fwd_ms - 1, "backward_error": bwd / bwd_ms - 1,
                         "combined_error": (fwd + bwd) / (fwd_ms + bwd_ms) - 1})
    worst = max(max(abs(r["forward_error"]), abs(r["backward_error"])) for r in rows)
    if a.json:
        print(json.dumps({"source": SOURCE, "model": MODEL, "cluster": "dgx-a100-80g",
                          "tp": 8, "mbs": 4, "rows": rows, "max_abs_error": worst,
                          "limit": LIMIT}, indent=1))
    else:
        print(f"one layer of the 22B GPT (tp 8, micro-batch 4, dgx-a100-80g) against {SOURCE}")
        print(f"{'setting':34s} {'forward ms':>10s} {'measured':>9s} {'error':>7s}"
              f" {'backward ms':>12s} {'measured':>9s} {'error':>7s} {'combined':>9s}")
        for r in rows:
            print(f"{r['setting']:34s} {r['forward_ms']:10.2f} {r['measured_forward_ms']:9.1f}"
                  f" {100 * r['forward_error']:+6.1f}% {r['backward_ms']:12.2f}"
                  f" {r['measured_backward_ms']:9.1f} {100 * r['backward_error']:+6.1f}%"
                  f" {100 * r['combined_error']:+8.1f}%")
        print(f"largest |error| {100 * worst:.1f}% (limit {100 * LIMIT:.0f}%)")
    if a.check and worst > LIMIT:
        sys.exit(1)


if __name__ == "__main__":
    main()
