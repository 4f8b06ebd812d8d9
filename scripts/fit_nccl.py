#!/usr/bin/env python3
"""fit_nccl.py - the presets' collective parameters from public nccl-tests curves.

Reproduces the fit behind cost_models/presets.c ([N1]-[N6]) and
docs/accuracy.md ("Collectives fitted to nccl-tests"). Pure Python, no
packages: a Nelder-Mead search on the squared log errors of busbw.

Model (cost_models/cost.h, "size ramp"): an allreduce of S bytes over a ring
of n ranks takes
    t(S) = 2(n-1) alpha + 2(n-1)/n * S / (B * bw_eff * r(S)),
    r(S) = 1 / (1 + (s_half / S)^ramp_exp),
and nccl-tests reports busbw = 2(n-1)/n * S / t. Across nodes the model's
default ("auto", cost_models/coll_tree.c) takes the faster of that ring and
NCCL's tree (t_auto below); the EFA sweeps, over two nodes, are fitted to it.

Usage: python3 scripts/fit_nccl.py   (prints each fit and its residuals)
"""
import math

KIB = 1024
MIB = 1024 * 1024

# [N1]-[N3]: Azure/AI-benchmarking-guide, NCCL Bandwidth tables, 8 GPUs in one
# node, busbw in GB/s at 1 KiB * 2^i, i = 0..23 (1 KiB .. 8 GiB).
SIZES_1K_8G = [KIB * 2 ** i for i in range(24)]
N1_A100 = [0.04, 0.08, 0.17, 0.33, 0.67, 1.37, 2.70, 5.15, 10.11, 19.24, 36.22, 53.54,
           71.43, 89.99, 109.22, 132.77, 166.63, 174.18, 213.87, 221.58, 228.10, 230.22,
           230.48, 231.58]
N2_H100 = [0.07, 0.14, 0.27, 0.53, 0.95, 1.71, 2.72, 5.40, 10.86, 21.35, 43.70, 81.93,
           128.73, 172.13, 234.45, 295.53, 361.78, 400.61, 423.38, 438.46, 466.35, 472.36,
           475.54, 478.87]
N3_H200 = [0.06, 0.12, 0.23, 0.47, 0.93, 1.84, 3.72, 7.39, 14.75, 29.38, 52.96, 88.78,
           138.44, 181.94, 240.41, 300.91, 368.11, 412.45, 432.24, 442.72, 467.58, 472.57,
           477.41, 479.98]

# [N4]: NVIDIA/nccl-tests issue #119, 3 x 8 A100-SXM4-40GB, 4 x 200 Gb/s HDR a
# node (100 GB/s of NICs), 24 ranks: six published points, and the printed
# average over its 128 sizes (8 B, then k MiB + 8 B for k = 1..127).
N4_POINTS = [(75497480, 86.20), (80740360, 85.71), (84934664, 85.50), (85983240, 93.76),
             (127926280, 95.75), (133169160, 95.74)]
N4_AVERAGE = 84.8558
N4_AVG_SIZES = [8] + [k * MIB + 8 for k in range(1, 128)]

# [N7], [N8]: aws-samples/awsome-distributed-training,
# micro-benchmarks/nccl-tests/README.md (commit 0162aacd), "Results":
# all_reduce_perf on 2 x p4de.24xlarge (8 x A100-80GB, 4 x 100 Gb/s EFA a node)
# and 2 x p5.48xlarge (8 x H100, 32 x 100 Gb/s EFA), 16 ranks, out-of-place
# time in us at 8 B * 2^i (8 B .. 2 GiB and 8 B .. 16 GiB).
N7_P4DE_US = [164.3, 161.4, 161.5, 161.0, 161.2, 161.8, 162.3, 165.0, 177.6, 169.4, 175.9,
              193.4, 224.6, 227.4, 229.7, 238.2, 260.3, 309.4, 432.6, 533.9, 762.8, 1191.8,
              1540.2, 2644.6, 3912.9, 7201.7, 13552, 26217, 51406]
N8_P5_US = [69.12, 72.64, 74.06, 65.48, 74.92, 74.12, 69.50, 69.24, 72.22, 78.58, 81.44,
            94.36, 111.7, 135.1, 108.9, 128.0, 123.7, 123.2, 147.2, 168.6, 204.8, 298.1,
            439.7, 601.5, 870.3, 1468.2, 2559.2, 4607.6, 9074.5, 17286, 33605, 66132]


def busbw(S, n, B, alpha, bw_eff, s_half, ramp_exp):
    """GB/s, the nccl-tests convention."""
    r = 1.0 / (1.0 + (s_half / S) ** ramp_exp) if s_half > 0 else 1.0
    f = 2.0 * (n - 1) / n
    t = 2 * (n - 1) * alpha + f * S / (B * bw_eff * r)
    return f * S / t / 1e9


def nelder_mead(fn, x0, steps=4000):
    k = len(x0)
    pts = [list(x0)] + [[x0[j] + (0.5 if j == i else 0) for j in range(k)] for i in range(k)]
    vals = [fn(p) for p in pts]
    for _ in range(steps):
        order = sorted(range(k + 1), key=lambda i: vals[i])
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        c = [sum(pts[i][j] for i in range(k)) / k for j in range(k)]
        xr = [c[j] + (c[j] - pts[-1][j]) for j in range(k)]
        fr = fn(xr)
        if fr < vals[0]:
            xe = [c[j] + 2 * (c[j] - pts[-1][j]) for j in range(k)]
            fe = fn(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = [c[j] + 0.5 * (pts[-1][j] - c[j]) for j in range(k)]
            fc = fn(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                for i in range(1, k + 1):
                    pts[i] = [pts[0][j] + 0.5 * (pts[i][j] - pts[0][j]) for j in range(k)]
                    vals[i] = fn(pts[i])
    return pts[0], vals[0]


def best_of(loss, starts):
    return min((nelder_mead(loss, s) for s in starts), key=lambda r: r[1])


def fit_intra(name, gbps, B, alpha=None, bw_eff=None):
    """alpha and bw_eff free unless held; bw_eff None and alpha None: the plateau
    pinned to the largest size's busbw."""
    pts = list(zip(SIZES_1K_8G, gbps))
    n = 8

    def params(q):
        la, lh, g = q
        a = math.exp(la) if alpha is None else alpha
        e = bw_eff
        if e is None:  # pin the plateau: the model equals the last point
            e = 1.0
            for _ in range(40):
                e *= pts[-1][1] / busbw(pts[-1][0], n, B, a, e, math.exp(lh), g)
        return a, e, math.exp(lh), g

    def loss(q):
        if not 0.25 <= q[2] <= 4:
            return 1e9
        p = params(q)
        return sum((math.log(busbw(S, n, B, *p)) - math.log(b)) ** 2 for S, b in pts)

    starts = [[math.log(2e-6), math.log(h), g] for h in (1e5, 1e6, 1e7) for g in (0.5, 1, 2)]
    q, v = best_of(loss, starts)
    a, e, h, g = params(q)
    print("%s intra (n 8): alpha_s %.3g, bw_eff %.4g, s_half_bytes %.4g, ramp_exp %.3g"
          % (name, a, e, h, g))
    worst = max(pts, key=lambda p: abs(busbw(p[0], n, B, a, e, h, g) / p[1] - 1))
    print("  worst %+.1f%% at %d B; rms of log error %.3f"
          % (100 * (busbw(worst[0], n, B, a, e, h, g) / worst[1] - 1), worst[0],
             math.sqrt(v / len(pts))))


def fit_inter_ib():
    n, B, alpha, e = 24, 100e9, 2e-6, 0.96  # alpha held, bw_eff: 24 GB/s per 25

    def loss(q):
        lh, g = q
        if not 0.25 <= g <= 4:
            return 1e9
        h = math.exp(lh)
        err = sum((math.log(busbw(S, n, B, alpha, e, h, g)) - math.log(b)) ** 2
                  for S, b in N4_POINTS)
        avg = sum(busbw(S, n, B, alpha, e, h, g) for S in N4_AVG_SIZES) / len(N4_AVG_SIZES)
        return err + 3 * (math.log(avg) - math.log(N4_AVERAGE)) ** 2

    (lh, g), _ = best_of(loss, [[math.log(h), g] for h in (1e5, 1e6, 1e7) for g in (0.5, 1, 2)])
    h = math.exp(lh)
    print("InfiniBand inter (n 24, 3 nodes): alpha_s %.3g (held), bw_eff %.3g (held), "
          "s_half_bytes %.4g, ramp_exp %.3g" % (alpha, e, h, g))
    for S, b in N4_POINTS:
        print("  %11d B: %.2f GB/s against %.2f (%+.1f%%)"
              % (S, busbw(S, n, B, alpha, e, h, g), b, 100 * (busbw(S, n, B, alpha, e, h, g) / b - 1)))
    avg = sum(busbw(S, n, B, alpha, e, h, g) for S in N4_AVG_SIZES) / len(N4_AVG_SIZES)
    print("  average %.2f GB/s against %.2f" % (avg, N4_AVERAGE))
    # "auto" over these 3 nodes (A100's intra fit): the ring at every size of the sweep
    intra = (2.97e-6, 0.9034 * 300e9, 7.099e6, 0.25)
    algos = sorted({t_auto(S, n, 8, intra, (alpha, B * e, h, g))[1]
                    for S in N4_AVG_SIZES + [S for S, _ in N4_POINTS]})
    print("  auto runs: %s" % ", ".join(algos))


def r_of(S, s_half, g):
    return 1.0 / (1.0 + (s_half / S) ** g) if s_half > 0 else 1.0


def t_auto(S, n, p, intra, inter):
    """The model's "auto" allreduce (cost_models/coll_tree.c): the faster of the
    ring and NCCL's tree over k = n/p nodes. intra = (alpha, beta at the plateau,
    s_half, exp); inter = (alpha, the node's NICs at the plateau, s_half, exp).
    Returns (time, "ring" or "tree")."""
    ai, bi, hi, gi = intra
    ae, be, he, ge = inter
    k = n // p
    bi_s, be_s = bi * r_of(S, hi, gi), be * r_of(S, he, ge)
    ring = 2 * (n - 1) * ae + 2.0 * (n - 1) / n * S / min(bi_s, be_s)
    fk = 1.0 if k == 2 else 2.0
    tree = (2 * ((p - 1) * ai + math.ceil(math.log2(k)) * ae)
            + max(2.0 * (p - 1) / p * S / bi_s, fk * S / be_s))
    return (tree, "tree") if tree < ring else (ring, "ring")


def fit_inter_efa(name, times_us, B, intra, preset=(15e-6, 0.9)):
    """Two nodes of 8 (n 16), the presets' EFA inter parameters (p4d, p4de, p5).
    Their busbw passes the NICs' rate (78 GB/s on p4de's 50): a ring cannot,
    as it moves 2(n-1)/n S through each node's NICs; NCCL's tree over two nodes
    moves S. So the fit is of the model's "auto" allreduce (t_auto: the tree
    wins at every size here), alpha, bw_eff (of the node's NICs, B), s_half and
    ramp_exp free, the intra link held at the preset's own fit. The last line
    compares 8 MiB with these parameters, with the plain alpha-beta ring the
    presets had before (alpha 15 us, bw_eff 0.9), and the measurement."""
    n, p = 16, 8
    pts = [(8 * 2 ** i, t * 1e-6) for i, t in enumerate(times_us)]

    def loss(q):
        la, le, lh, g = q
        if not 0.25 <= g <= 4 or le > 0:
            return 1e9
        inter = (math.exp(la), B * math.exp(le), math.exp(lh), g)
        return sum((math.log(t_auto(S, n, p, intra, inter)[0]) - math.log(t)) ** 2
                   for S, t in pts)

    starts = [[math.log(a), math.log(e), math.log(h), g] for a in (5e-6, 5e-5)
              for e in (0.5, 0.9) for h in (1e5, 1e6, 1e7) for g in (0.5, 1, 2)]
    (la, le, lh, g), v = best_of(loss, starts)
    a, e, h = math.exp(la), math.exp(le), math.exp(lh)
    inter = (a, B * e, h, g)
    algos = sorted({t_auto(S, n, p, intra, inter)[1] for S, _ in pts})
    print("%s inter (n 16, 2 nodes): alpha_s %.4g, bw_eff %.4g, s_half_bytes %.4g, "
          "ramp_exp %.3g (auto runs: %s)" % (name, a, e, h, g, ", ".join(algos)))
    worst = max(pts, key=lambda q: abs(t_auto(q[0], n, p, intra, inter)[0] / q[1] - 1))
    print("  worst %+.1f%% at %d B; rms of log error %.3f"
          % (100 * (t_auto(worst[0], n, p, intra, inter)[0] / worst[1] - 1), worst[0],
             math.sqrt(v / len(pts))))
    S = 8 * MIB
    old = 2 * (n - 1) * preset[0] + 2.0 * (n - 1) / n * S / min(intra[1], B * preset[1])
    print("  8 MiB: %.0f us with this fit, %.0f us with the plain ring before, %.0f us measured"
          % (t_auto(S, n, p, intra, inter)[0] * 1e6, old * 1e6, dict(pts)[S] * 1e6))


if __name__ == "__main__":
    fit_intra("A100 [N1]", N1_A100, 300e9)
    fit_intra("H100 [N2]", N2_H100, 450e9, alpha=2e-6, bw_eff=1.0)
    fit_intra("H200 [N3]", N3_H200, 450e9, bw_eff=1.0)
    fit_inter_ib()
    fit_inter_efa("p4d/p4de EFA [N7]", N7_P4DE_US, 50e9, (2.97e-6, 0.9034 * 300e9, 7.099e6, 0.25))
    fit_inter_efa("p5 EFA [N8]", N8_P5_US, 400e9, (2e-6, 1.0 * 450e9, 4.934e6, 0.715))
