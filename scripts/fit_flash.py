#!/usr/bin/env python3
"""fit_flash.py - the presets' fused-attention rates from public benchmarks.

Reproduces the fit behind cost_models/presets.c (flash_rates) and
docs/accuracy.md ("Fused attention by sequence length"). Pure Python, no
packages.

Data: "Attention forward + backward speed" on A100 80GB SXM4 and on H100 80GB
SXM5, TFLOP/s at sequence lengths 512 .. 16k (batch x sequence = 16k tokens,
hidden 2048, head size 64 and 128, with and without the causal mask), for
FlashAttention (v1), FlashAttention in Triton (A100 only; the Triton
package's own triton.ops.flash_attention, which the presets take as a
stand-in for LLM Foundry's flash_attn_triton.py) and
FlashAttention-2: Dao 2023 (FlashAttention-2, arXiv:2307.08691, Fig. 4), the
same bars as assets/flash2_a100_fwd_bwd_benchmark.png and
assets/flash2_h100_fwd_bwd_benchmark.png of Dao-AILab/flash-attention at
4f285b35 (2023-07-17), read off the figures' bar labels. Three labels are
hidden behind the legend and were read from the bars' heights against the
axis (A100, FA2, no mask: head 64 at 1k, head 128 at 512 and 1k). The
benchmark counts 4 x batch x heads x s^2 x head-size FLOPs forward (half
of that with the causal mask) and 2.5 times that backward, the convention of
cost_models/cost_kernel.c.

Model (cost_models/cost_kernel.c): a fused attention kernel over a sequence
of s keys runs at R * s / (s + s0), R its rate on long sequences. For each
series: s0 on a grid of 2 tokens, R in closed form, both minimising the
squared relative error.

FlashAttention-3 and cuDNN's fused attention (Hopper only) have forward
rates by sequence (FWD below) and backward rates without the mask (BWD),
printed last with the H100/H200 presets' values drawn from them.

Measured on your GPU: `--measured FILE` fits a stagecraft.flash_bench/1 file
(scripts/bench_flash.py: PyTorch's fused attention backends on the same
grid) the same way, each backend's forward + backward, forward and backward
(the difference of the two) rates, and prints them beside the published fits
the presets take; `stagecraft calibrate` fits a cluster's keys from the same
file, the forward and the backward each with its own fall.

Usage: python3 scripts/fit_flash.py [--measured FILE]
       (prints each fit and its residuals)
"""
import json
import math
import sys

SEQ = [512, 1024, 2048, 4096, 8192, 16384]

# (gpu, mask and head size) -> kernel -> TFLOP/s at SEQ
DATA = {
    ("A100", "full", 64): {"fa1": [91, 92, 104, 108, 110, 110],
                           "triton": [90, 102, 98, 98, 100, 100],
                           "fa2": [132, 153, 162, 171, 175, 176]},
    ("A100", "full", 128): {"fa1": [76, 72, 76, 80, 82, 83],
                            "triton": [78, 85, 90, 93, 95, 95],
                            "fa2": [151, 173, 187, 196, 201, 203]},
    ("A100", "causal", 64): {"fa1": [58, 70, 77, 87, 92, 97],
                             "triton": [59, 75, 79, 76, 79, 80],
                             "fa2": [88, 119, 140, 156, 165, 171]},
    ("A100", "causal", 128): {"fa1": [55, 62, 69, 76, 80, 83],
                              "triton": [50, 61, 68, 74, 78, 80],
                              "fa2": [99, 133, 155, 173, 182, 189]},
    ("H100", "full", 64): {"fa1": [157, 159, 161, 161, 166, 168],
                           "fa2": [215, 254, 274, 288, 294, 296]},
    ("H100", "full", 128): {"fa1": [127, 127, 128, 131, 137, 139],
                            "fa2": [248, 294, 320, 326, 335, 338]},
    ("H100", "causal", 64): {"fa1": [104, 123, 136, 138, 149, 156],
                             "fa2": [141, 192, 232, 257, 273, 284]},
    ("H100", "causal", 128): {"fa1": [98, 109, 108, 126, 135, 137],
                              "fa2": [163, 221, 265, 294, 308, 328]},
}

# Forward only, H100 80GB SXM5, FP16, the same batches and FLOP count: Shah et
# al. 2024 (FlashAttention-3, arXiv:2407.08608, Fig. 5), the bars of
# assets/flash3_fp16_fwd.png of Dao-AILab/flash-attention at 7ef24848
# (2024-07-11), head size 128. One label (FA3 without the mask at 1k) is
# partly hidden by the legend; its visible digits agree with the bar's height.
# The same figure's cuDNN bars (cuDNN's fused attention, mid-2024), and
# both kernels at head size 64 with the causal mask (panel b).
FWD = {
    ("H100", "full", 128): {"fa2": [309, 350, 362, 368, 370, 370],
                            "fa3": [467, 565, 625, 638, 646, 648],
                            "cudnn": [497, 574, 617, 609, 600, 595]},
    ("H100", "causal", 128): {"fa2": [191, 260, 298, 319, 333, 335],
                              "fa3": [292, 423, 521, 579, 602, 616],
                              "cudnn": [315, 410, 484, 518, 529, 539]},
    ("H100", "causal", 64): {"fa3": [197, 265, 371, 420, 460, 473],
                             "cudnn": [225, 288, 334, 363, 379, 388]},
}

# Backward only, head size 128: Shah et al. 2024, Fig. 6 (not among the
# repository's assets; its bar labels as transcribed). The presets take only
# the ratio of cuDNN's fit to FA3's from it (cost_models/presets.c).
BWD = {
    ("H100", "full", 128): {"fa2": [214, 260, 291, 310, 318, 322],
                            "cudnn": [305, 408, 465, 499, 518, 516],
                            "fa3": [316, 424, 501, 542, 559, 561]},
}


def fit(y, seqs=SEQ):
    """(R, s0, rms, max) of R * s / (s + s0) against y, relative errors."""
    best = None
    for s0 in range(0, 4000, 2):
        f = [s / (s + s0) for s in seqs]
        num = sum(fi / yi for fi, yi in zip(f, y))
        den = sum((fi / yi) ** 2 for fi, yi in zip(f, y))
        r = num / den
        e = [r * fi / yi - 1 for fi, yi in zip(f, y)]
        sse = sum(x * x for x in e)
        if best is None or sse < best[0]:
            best = (sse, r, s0, max(abs(x) for x in e))
    sse, r, s0, mx = best
    return r, s0, math.sqrt(sse / len(seqs)), mx


def hd64_of(r64, s064, rc, s0c):
    """The head-64 rate over the head-128 one, both fits at s = 2048."""
    return (r64 * 2048 / (2048 + s064)) / (rc * 2048 / (2048 + s0c))


def fit_table(table, fits, tag=()):
    """Fits and prints every series of table, keeping (R, s0) in fits under
    (gpu, mask, head, kernel) + tag."""
    for (gpu, mask, head), series in table.items():
        for kernel, y in series.items():
            r, s0, rms, mx = fit(y)
            fits[(gpu, mask, head, kernel) + tag] = (r, s0)
            print("%-5s %-7s %4d %-7s %8.1f %9d %5.1f%% %5.1f%%"
                  % (gpu, mask, head, kernel, r, s0, 100 * rms, 100 * mx))


def preset_of(fits, gpu, kernel, tag=()):
    """'R .. s0 .. s0_full .. full .. hd64 ..' as presets.c takes a kernel."""
    rc, s0c = fits[(gpu, "causal", 128, kernel) + tag]
    rf, s0f = fits[(gpu, "full", 128, kernel) + tag]
    r64, s064 = fits[(gpu, "causal", 64, kernel) + tag]
    return ("R %.1f  s0 %d  s0_full %d  full %.3f  hd64 %.3f"
            % (rc, s0c, s0f, rf / rc, hd64_of(r64, s064, rc, s0c)))


def measured(path):
    """Fits a stagecraft.flash_bench/1 file: per backend, mask and head size."""
    try:
        with open(path) as f:
            b = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("fit_flash.py: %s: %s" % (path, e))
    if not isinstance(b, dict) or b.get("format") != "stagecraft.flash_bench/1":
        sys.exit("fit_flash.py: %s: format: not a stagecraft.flash_bench/1 file" % path)
    series = {}
    for i, r in enumerate(b.get("results", [])):
        try:
            key = (r["backend"], r["mask"], int(r["head_dim"]))
            point = (int(r["seq"]), float(r["fwd_bwd_tflops"]), float(r["fwd_tflops"]))
        except (KeyError, TypeError, ValueError):
            sys.exit("fit_flash.py: %s: results[%d]: needs backend, mask, head_dim, seq, "
                     "fwd_tflops and fwd_bwd_tflops" % (path, i))
        if point[0] <= 0 or point[1] <= 0 or point[2] <= 0:
            sys.exit("fit_flash.py: %s: results[%d]: seq and rates must be positive" % (path, i))
        if not point[1] < 3.5 * point[2]:
            sys.exit("fit_flash.py: %s: results[%d]: fwd_bwd_tflops must be below 3.5 x "
                     "fwd_tflops (the backward takes time)" % (path, i))
        # the backward alone: 2.5 forwards' FLOPs in the forward + backward's
        # time less the forward's
        point += (2.5 / (3.5 / point[1] - 1 / point[2]),)
        series.setdefault(key, []).append(point)
    dropout = b.get("dropout", 0) or 0
    print("measured on %s (torch %s, cuDNN %s), %s tokens, hidden %s%s:"
          % (b.get("device", "?"), b.get("torch", "?"), b.get("cudnn", "?"),
             b.get("tokens", "?"), b.get("dim", "?"),
             ", attention dropout %g (the presets' rates are without)" % dropout
             if dropout else ""))
    print("backend   mask    head pass       R TFLOP/s     s0   rms    max  points")
    fits = {}
    for key in sorted(series):
        pts = sorted(series[key])
        if len(pts) < 3:
            continue
        seqs = [p[0] for p in pts]
        for col, what in ((1, "fwd+bwd"), (2, "fwd"), (3, "bwd")):
            r, s0, rms, mx = fit([p[col] for p in pts], seqs)
            fits[key + (what,)] = (r, s0)
            print("%-9s %-7s %4d %-7s %8.1f %9d %5.1f%% %5.1f%%  %d"
                  % (key + (what, r, s0, 100 * rms, 100 * mx, len(seqs))))
    print()
    print("as the presets take them (head size 128): R causal, s0 causal, s0 full,")
    print("full/causal R; hd64: head size 64 over 128 at s = 2048, causal")
    for backend in sorted({k[0] for k in fits}):
        for what in ("fwd+bwd", "fwd", "bwd"):
            need = [(backend, m, h, what) for m, h in (("causal", 128), ("full", 128))]
            if not all(k in fits for k in need):
                continue
            rc, s0c = fits[need[0]]
            rf, s0f = fits[need[1]]
            line = "%-9s %-7s R %.1f  s0 %d  s0_full %d  full %.3f" % (
                backend, what, rc, s0c, s0f, rf / rc)
            if (backend, "causal", 64, what) in fits:
                r64, s064 = fits[(backend, "causal", 64, what)]
                line += "  hd64 %.3f" % hd64_of(r64, s064, rc, s0c)
            print(line)
    return fits


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--measured":
        measured(sys.argv[2])
        print()
        print("published (the presets' fits):")
    elif len(sys.argv) > 1:
        sys.exit("fit_flash.py: usage: fit_flash.py [--measured FILE]")
    fits = {}
    print("gpu   mask    head kernel      R TFLOP/s     s0   rms    max")
    fit_table(DATA, fits)
    print()
    print("presets (head size 128): R causal, s0 causal, s0 full, full/causal R;")
    print("hd64: head size 64 over 128, both fits at s = 2048, causal")
    for gpu in ("A100", "H100"):
        for kernel in ("fa1", "triton", "fa2"):
            if (gpu, "causal", 128, kernel) not in fits:
                continue
            print("%-5s %-7s %s" % (gpu, kernel, preset_of(fits, gpu, kernel)))
    print()
    print("forward only (FlashAttention-3's figure):")
    fit_table(FWD, fits, ("fwd",))
    print()
    print("backward only (FlashAttention-3's Fig. 6):")
    fit_table(BWD, fits, ("bwd",))
    print()
    print("as presets.c takes them, forward (head size 128; hd64 at s = 2048, causal;")
    print("FA3's hd64 is not taken yet, presets.c says why):")
    for kernel in ("fa3", "cudnn"):
        print("H100  %-7s %s (forward)" % (kernel, preset_of(fits, "H100", kernel, ("fwd",))))
    rb_c, _ = fits[("H100", "full", 128, "cudnn", "bwd")]
    rb_f, _ = fits[("H100", "full", 128, "fa3", "bwd")]
    print("H100  cudnn   backward = FA3's x %.4f (R %.1f / %.1f, Fig. 6)"
          % (rb_c / rb_f, rb_c, rb_f))


if __name__ == "__main__":
    main()
