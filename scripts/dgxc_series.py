#!/usr/bin/env python3
"""dgxc_series.py - every point of NVIDIA's DGX Cloud weak-scaling tables,
BF16 and FP8, simulated beside the one point of each that is a validation row.

The suite `validation/nvidia_dgxc2024.json` holds one row per table of NVIDIA's
DGX Cloud Benchmarking recipes (release 24.11, github.com/NVIDIA/dgxc-benchmarking
at 35a9aec): the largest GPU count of each weak-scaling series, in BF16 and in
FP8. Each table also gives the same work per GPU at smaller counts. This script
takes each shipped row as the template of its table, changes the GPU count,
the data-parallel degree and the global batch as the table does, runs the
points through `stagecraft validate` as one scratch suite, and prints per
point the measured and predicted step, BF16 and FP8 side by side, with the
measured and the predicted speedup of FP8. Nothing is fitted to these points.

  scripts/dgxc_series.py --run bin/stagecraft [--json]

The step times below are the tables' "Training step time (seconds per step)"
rows, read from the READMEs named per model. Pure Python (the standard
library); the scratch suite goes to a temporary directory removed afterwards.
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile

# model: (README at 35a9aec, {GPUs: BF16 s}, {GPUs: FP8 s})
SERIES = {
    "gpt3-175b": ("nemo_megatron/README_175b.md",
                  {128: 8.91, 256: 8.95, 512: 9.09, 1024: 9.01, 2048: 9.02},
                  {128: 5.92, 256: 5.96, 512: 6.44, 1024: 6.72, 2048: 6.24}),
    "nemotron4-15b": ("nemotron/README_15b.md",
                      {16: 2.83, 32: 2.86, 64: 2.86, 128: 2.89, 256: 2.88, 512: 2.92,
                       1024: 2.92, 2048: 2.96},
                      {16: 2.08, 32: 2.07, 64: 2.09, 128: 2.08, 256: 2.10, 512: 2.12,
                       1024: 2.12, 2048: 2.18}),
    "nemotron4-340b": ("nemotron/README_340b.md",
                       {128: 4.61, 256: 4.67, 512: 4.70, 1024: 4.73, 2048: 4.84},
                       {128: 3.16, 256: 3.21, 512: 3.26, 1024: 3.34, 2048: 3.49}),
    "llama31-8b": ("llama3.1/README_8b.md",
                   {8: 12.91, 16: 13.00, 32: 13.05, 64: 13.08, 128: 13.10},
                   {8: 9.67, 16: 9.73, 32: 9.75, 64: 9.80, 128: 9.82}),
    "llama31-70b": ("llama3.1/README_70b.md",
                    {64: 14.72, 128: 14.73, 256: 14.80, 512: 14.89, 1024: 14.92,
                     2048: 14.98},
                    {64: 11.01, 128: 10.93, 256: 11.16, 512: 11.18, 1024: 11.28,
                     2048: 11.39}),
    # the 32 to 192 GPU columns run 7 to 42 layers: only the full model's
    "llama31-405b": ("llama3.1/README_405b.md",
                     {576: 17.20, 1152: 17.52, 2304: 17.62},
                     {576: 11.24, 1152: 11.31, 2304: 12.35}),
}


def model_of(row_id):
    for key in SERIES:
        if row_id.startswith(key + "-"):
            return key
    return None


def build(suite):
    """The scratch suite's rows: every point of every table, from its row."""
    rows = []
    for r in suite["rows"]:
        key = model_of(r["id"])
        if key is None:
            sys.exit("dgxc_series.py: row %s is not one of the series" % r["id"])
        fp8 = bool(r["layout"].get("fp8", False))
        gpus0 = r["cluster"]["nodes"] * 8
        lay = r["layout"]
        if lay["dp"] * gpus0 == 0 or gpus0 % lay["dp"]:
            sys.exit("dgxc_series.py: row %s: dp does not divide its GPUs" % r["id"])
        for gpus, step in SERIES[key][2 if fp8 else 1].items():
            x = copy.deepcopy(r)
            x["id"] = "%s-%s-%dgpu" % (key, "fp8" if fp8 else "bf16", gpus)
            x["layout"]["dp"] = lay["dp"] * gpus // gpus0
            x["layout"]["global_batch"] = lay["global_batch"] * gpus // gpus0
            x["cluster"]["nodes"] = max(1, gpus // 8)
            x["measured"] = {"iteration_s": step}
            rows.append(x)
    out = copy.deepcopy(suite)
    out["name"] = "dgxc_series"
    out["rows"] = rows
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="the stagecraft binary")
    ap.add_argument("--suite", default=None,
                    help="the shipped suite (default: validation/nvidia_dgxc2024.json beside "
                         "this script)")
    ap.add_argument("--json", action="store_true", help="one JSON object")
    a = ap.parse_args()
    path = a.suite or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                   "validation", "nvidia_dgxc2024.json")
    try:
        with open(path) as f:
            suite = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("dgxc_series.py: %s: %s" % (path, e))
    scratch = build(suite)
    with tempfile.TemporaryDirectory() as d:
        sp = os.path.join(d, "dgxc_series.json")
        with open(sp, "w") as f:
            json.dump(scratch, f)
        p = subprocess.run([a.run, "validate", "--suite", sp, "--json"], capture_output=True,
                           text=True)
    if p.returncode not in (0, 1):
        sys.exit("dgxc_series.py: %s validate exited %d: %s" % (a.run, p.returncode,
                                                               p.stderr.strip()))
    res = {r["id"]: r for r in json.loads(p.stdout)["rows"]}
    points = []
    for key, (readme, bf, f8) in SERIES.items():
        for gpus in bf:
            b = res.get("%s-bf16-%dgpu" % (key, gpus))
            e = res.get("%s-fp8-%dgpu" % (key, gpus))
            if not b or not e:
                sys.exit("dgxc_series.py: %s at %d GPUs was not simulated" % (key, gpus))
            points.append({
                "model": key, "readme": readme, "gpus": gpus,
                "bf16": {"measured_s": b["measured_s"], "predicted_s": b["predicted_s"],
                         "error": b["error"]},
                "fp8": {"measured_s": e["measured_s"], "predicted_s": e["predicted_s"],
                        "error": e["error"]},
                "speedup_measured": b["measured_s"] / e["measured_s"],
                "speedup_predicted": b["predicted_s"] / e["predicted_s"]})
    summary = {}
    for dt in ("bf16", "fp8"):
        errs = [q[dt]["error"] for q in points]
        summary[dt] = {"points": len(errs), "mape": statistics.mean(abs(x) for x in errs),
                       "mean_signed_error": statistics.mean(errs),
                       "max_abs_error": max(abs(x) for x in errs)}
    if a.json:
        print(json.dumps({"points": points, "summary": summary}, indent=1))
        return
    print("| model | GPUs | BF16 measured s | predicted | FP8 measured s | predicted | "
          "speedup measured | predicted |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for q in points:
        print("| %s | %d | %.2f | %.3f (%+.1f%%) | %.2f | %.3f (%+.1f%%) | %.2fx | %.2fx |" % (
            q["model"], q["gpus"], q["bf16"]["measured_s"], q["bf16"]["predicted_s"],
            100 * q["bf16"]["error"], q["fp8"]["measured_s"], q["fp8"]["predicted_s"],
            100 * q["fp8"]["error"], q["speedup_measured"], q["speedup_predicted"]))
    for dt in ("bf16", "fp8"):
        s = summary[dt]
        print("%s: %d points, MAPE %.1f%%, mean signed %+.1f%%, max |error| %.1f%%" % (
            dt.upper(), s["points"], 100 * s["mape"], 100 * s["mean_signed_error"],
            100 * s["max_abs_error"]))


if __name__ == "__main__":
    main()
