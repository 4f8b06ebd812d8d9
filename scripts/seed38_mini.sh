#!/usr/bin/env bash
# seed38_mini.sh - the executed miniature of the 38% comparison (make
# test-long): on a 2-node emulated cluster (scripts/netcluster.sh, one rank
# a node, a shaped link between them) a small GPT runs for real on the CPU
# backend twice over the same two ranks: the baseline with its tensor-
# parallel group spanning both nodes (tp 2, an allreduce in every layer over
# the link) and the pipeline (pp 2, one activation per microbatch over the
# link). The cluster is calibrated first on benches and two other plans (dp
# 2; pp 2 with GPipe and microbatches of 1) measured on the same emulated
# cluster; then both plans are predicted and measured. Prints the measured
# and simulated step times and ratios; exits 1 unless the pipeline wins in
# both and the two ratios agree within 20%.
#   scripts/seed38_mini.sh [--dir DIR] [--rate 1gbit]   (root, repo root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sc=$root/bin/stagecraft
nc=$root/scripts/netcluster.sh
dir=out/seed38-mini
rate=1gbit
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "seed38_mini.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bits=$(awk -v r="$rate" 'BEGIN { v = r + 0; u = substr(r, length(v) + 1);
  m = u ~ /^g/ ? 1e9 : u ~ /^m/ ? 1e6 : u ~ /^k/ ? 1e3 : 1; print v * m }')
mkdir -p "$dir"
cd "$dir"
"$nc" --name scm up --nodes 2 --rate "$rate" >/dev/null
trap '"$nc" --name scm down >/dev/null 2>&1 || true' EXIT
run2() { "$nc" --name scm run --np 2 -- "$@" 2>/dev/null; }
"$sc" model gen gpt --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 2048 --dtype fp32 \
  -o gpt.json 2>/dev/null
"$sc" cluster show cpu-local --json | /usr/bin/env python3 -c "
import json, sys
c = json.load(sys.stdin)
c['name'] = 'cpu-2node'; c['gpus_per_node'] = 1; c['nodes'] = 2
c['inter']['nic_bytes_per_s'] = $bits / 8; c['inter']['nics_per_node'] = 1
json.dump(c, open('cpu.json', 'w'), indent=1)"
"$sc" bench gemm --sizes 32:1024:2 -o bench_gemm.json >/dev/null
run2 "$sc" bench p2p --sizes 256K:16M:4 -o bench_p2p.json >/dev/null
run2 "$sc" bench allreduce --sizes 256K:16M:4 -o bench_allreduce.json >/dev/null
plan() { # NAME ARGS... (schedule 1f1b unless ARGS say)
  local name=$1; shift
  "$sc" sim --model gpt.json --cluster cpu.json --nodes 2 --schedule 1f1b "$@" \
    -o "$name.plan.json" >/dev/null
  run2 "$sc" exec "$name.plan.json" --backend cpu --steps 5 --warmup 2 -o "$name.measured.json" >/dev/null
}
# two calibration plans that are neither layout compared: dp 2 (microbatches
# of 2), and a GPipe pp 2 with microbatches of 1, whose sends give the
# sender's host time (and whose stages give more op points: one stage's F,
# B and optimizer alone cannot fix the per-op overhead, HBM efficiency and
# backward factor together)
plan cal_dp2 --dp 2 --microbatches 4 --mbs 2
plan cal_pp2_gpipe --pp 2 --microbatches 8 --mbs 1 --schedule gpipe
"$sc" calibrate --cluster cpu.json bench_gemm.json bench_p2p.json bench_allreduce.json \
  cal_dp2.measured.json cal_pp2_gpipe.measured.json -o calibrated.json > calibrate.txt
plan baseline_tp2 --tp 2 --microbatches 4 --mbs 2
plan pipeline_pp2 --pp 2 --microbatches 4 --mbs 2
for p in baseline_tp2 pipeline_pp2; do
  "$sc" compare "$p.plan.json" "$p.measured.json" --cluster calibrated.json --json > "$p.compare.json"
done
/usr/bin/env python3 - "$rate" <<'PY'
import json, sys
b = json.load(open('baseline_tp2.compare.json'))['step']
p = json.load(open('pipeline_pp2.compare.json'))['step']
mr = p['measured_s'] / b['measured_s']
sr = p['predicted_s'] / b['predicted_s']
print(f"2 nodes, 1 rank each, link {sys.argv[1]}; gpt 4 layers h256 s128, 4 microbatches of 2")
print(f"| layout | simulated ms | measured ms |")
print(f"| --- | ---: | ---: |")
print(f"| baseline: tp 2 across the link | {b['predicted_s']*1e3:.1f} | {b['measured_s']*1e3:.1f} |")
print(f"| pipeline: pp 2 across the link | {p['predicted_s']*1e3:.1f} | {p['measured_s']*1e3:.1f} |")
print(f"| ratio pipeline / baseline | {sr:.3f} | {mr:.3f} |")
print(f"\nmeasured gain {1/mr-1:+.0%}, simulated gain {1/sr-1:+.0%}; ratios differ by {sr/mr-1:+.1%}")
json.dump({"measured_ratio": mr, "simulated_ratio": sr, "baseline": b, "pipeline": p},
          open('seed38_mini.json', 'w'), indent=1)
sys.exit(0 if mr < 1 and sr < 1 and abs(sr / mr - 1) <= 0.20 else 1)
PY
