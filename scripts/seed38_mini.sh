#!/usr/bin/env bash
# seed38_mini.sh - the executed miniature of the 38% comparison (make
# test-long): on a 2-node emulated cluster (scripts/netcluster.sh, one rank
# a node, a shaped link between them) a small GPT runs for real on the CPU
# backend twice over the same two ranks: the baseline with its tensor-
# parallel group spanning both nodes (tp 2, an allreduce in every layer over
# the link) and the pipeline (pp 2, one activation per microbatch over the
# link).
#
# The link rate is chosen so the comparison resembles the modelled seed
# case, not this machine's compute speed: the baseline of 16 x p4d.24xlarge
# (gpt-1.3b, `stagecraft repro seed38`) spends a share s of its step
# communicating (about 85%); a fixed 1 Gbit/s link on a CPU whose GEMMs are
# several times slower or faster gives another share and another
# comparison. So, first (phase 1), the cluster is brought up at 1 Gbit/s,
# GEMMs and the link are benched and calibrated, and the simulator on that
# calibration finds the rate at which the miniature's baseline spends the
# same share s communicating; then (phase 2) the cluster comes up again at
# that rate, is calibrated on benches and two other plans (dp 2; pp 2 with
# GPipe and microbatches of 1) measured there, and both layouts are
# predicted and measured (a calibration refused by a quality gate measures
# its inputs again, at most twice). Prints the target share, the chosen rate, and the
# baseline's communication share (simulated and measured) beside both
# ratios; exits 1 unless the pipeline wins in both and the two ratios agree
# within 10%.
#   scripts/seed38_mini.sh [--dir DIR] [--rate R | --share S] [--pace]   (root, repo root)
#     --rate R    skip the choice: run at R (tc units: 1gbit, 300mbit)
#     --share S   target share of the baseline's step spent communicating
#                 (default: the modelled p4d case's, from repro seed38)
#     --pace      bring the cluster up with netcluster.sh up --pace (no
#                 message passes faster than the rate)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sc=$root/bin/stagecraft
nc=$root/scripts/netcluster.sh
dir=out/seed38-mini
rate=
share=
pace=
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --share) share=$2; shift 2 ;;
    --pace) pace=--pace; shift ;;
    -h|--help) sed -n 2,31p "$0"; exit 0 ;;
    *) echo "seed38_mini.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bits_of() { awk -v r="$1" 'BEGIN { v = r + 0; u = substr(r, length(v) + 1);
  m = u ~ /^g/ ? 1e9 : u ~ /^m/ ? 1e6 : u ~ /^k/ ? 1e3 : 1; print v * m }'; }
mkdir -p "$dir"
cd "$dir"
trap '"$nc" --name scm down >/dev/null 2>&1 || true' EXIT
run2() { "$nc" --name scm run --np 2 -- "$@" 2>/dev/null; }
"$sc" model gen gpt --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 2048 --dtype fp32 \
  -o gpt.json 2>/dev/null
cluster_at() { # BITS OUT: the 2-node cluster with links of BITS bit/s
  "$sc" cluster show cpu-local --json | /usr/bin/env python3 -c "
import json, sys
c = json.load(sys.stdin)
c['name'] = 'cpu-2node'; c['gpus_per_node'] = 1; c['nodes'] = 2
c['inter']['nic_bytes_per_s'] = $1 / 8; c['inter']['nics_per_node'] = 1
json.dump(c, open('$2', 'w'), indent=1)"
}
benches() { # SUFFIX
  "$sc" bench gemm --sizes 128:1024:2 -o "bench_gemm$1.json" >/dev/null
  run2 "$sc" bench p2p --sizes 256K:16M:4 -o "bench_p2p$1.json" >/dev/null
  run2 "$sc" bench allreduce --sizes 256K:16M:4 -o "bench_allreduce$1.json" >/dev/null
}
baseline_args=(--tp 2 --microbatches 4 --mbs 2)
pipeline_args=(--pp 2 --microbatches 4 --mbs 2)

# the target: the modelled seed case's baseline share, unless given
if [[ -z $share ]]; then
  share=$("$sc" repro seed38 --model gpt-1.3b --json -o repro | /usr/bin/env python3 -c "
import json, sys
print(json.load(sys.stdin)['models'][0]['simulated']['baseline']['share'])")
  share_from="the modelled 16 x p4d.24xlarge baseline (gpt-1.3b, repro seed38)"
else
  share_from="--share"
fi

# phase 1: the rate at which the miniature's baseline communicates that share
if [[ -z $rate ]]; then
  "$nc" --name scm up --nodes 2 --rate 1gbit $pace >/dev/null
  cluster_at 1e9 cpu1g.json
  benches .probe
  # gates apply, but this calibration only picks a rate: a refusal is
  # reported and the fit written anyway (--force), never used to predict
  if ! "$sc" calibrate --cluster cpu1g.json bench_gemm.probe.json bench_p2p.probe.json \
      bench_allreduce.probe.json -o probe.json > probe.txt 2> probe.err; then
    echo "seed38_mini.sh: the probe calibration failed its gates (used only to pick the rate):" >&2
    cat probe.err >&2
    "$sc" calibrate --cluster cpu1g.json bench_gemm.probe.json bench_p2p.probe.json \
      bench_allreduce.probe.json -o probe.json --force > probe.txt 2>/dev/null
  fi
  "$nc" --name scm down >/dev/null
  rate=$(/usr/bin/env python3 - "$sc" "$share" "${baseline_args[@]}" <<'PY'
import json, math, subprocess, sys
sc, target, args = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
base = json.load(open('probe.json'))
def share_at(bits):
    c = json.loads(json.dumps(base))
    c['inter']['nic_bytes_per_s'] = bits / 8
    json.dump(c, open('probe_rate.json', 'w'))
    out = subprocess.run([sc, 'sim', '--model', 'gpt.json', '--cluster', 'probe_rate.json',
                          '--nodes', '2', '--schedule', '1f1b', *args, '--json'],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    b, step = d['breakdown'], d['step_time_s']
    return sum(b[k] for k in ('tp_comm_s', 'pp_comm_s', 'dp_comm_s') if k in b) / step
lo, hi = math.log(1e7), math.log(1e11)   # 10 Mbit/s .. 100 Gbit/s; the share falls with the rate
for _ in range(40):
    mid = (lo + hi) / 2
    if share_at(math.exp(mid)) > target:
        lo = mid
    else:
        hi = mid
mbit = max(1, round(math.exp((lo + hi) / 2) / 1e6))
print(f"{mbit}mbit")
PY
)
  chose="chosen so that its simulated share matches"
else
  chose="given (--rate)"
fi
bits=$(bits_of "$rate")

# phase 2: at that rate, calibrate, predict and measure both layouts
"$nc" --name scm up --nodes 2 --rate "$rate" $pace >/dev/null
cluster_at "$bits" cpu.json
benches ""
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
cal_plans() {
  plan cal_dp2 --dp 2 --microbatches 4 --mbs 2
  plan cal_pp2_gpipe --pp 2 --microbatches 8 --mbs 1 --schedule gpipe
}
cal_plans
# a calibration refused by a quality gate measures the benches and both
# calibration plans again (calibrate_retry.sh)
remeasure() { benches ""; cal_plans; }
. "$root/scripts/calibrate_retry.sh"
calibrate_retrying seed38_mini.sh remeasure "$sc" --cluster cpu.json bench_gemm.json \
  bench_p2p.json bench_allreduce.json cal_dp2.measured.json cal_pp2_gpipe.measured.json
[[ $calibrate_status == 0 ]] || exit $calibrate_status
plan baseline_tp2 "${baseline_args[@]}"
plan pipeline_pp2 "${pipeline_args[@]}"
for p in baseline_tp2 pipeline_pp2; do
  "$sc" compare "$p.plan.json" "$p.measured.json" --cluster calibrated.json --json > "$p.compare.json"
done
"$sc" sim --model gpt.json --cluster calibrated.json --nodes 2 --schedule 1f1b "${baseline_args[@]}" \
  --json > baseline_tp2.sim.json
"$sc" sim --model gpt.json --cluster calibrated.json --nodes 2 --schedule 1f1b "${pipeline_args[@]}" \
  --json > pipeline_pp2.sim.json
/usr/bin/env python3 - "$rate" "$share" "$share_from" "$chose" <<'PY'
import json, sys
rate, target, share_from, chose = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
b = json.load(open('baseline_tp2.compare.json'))
p = json.load(open('pipeline_pp2.compare.json'))
bs, ps = b['step'], p['step']
mr = ps['measured_s'] / bs['measured_s']
sr = ps['predicted_s'] / bs['predicted_s']
def sim_of(name):
    d = json.load(open(f'{name}.sim.json'))
    return d['breakdown'], d['step_time_s']
def sim_comm(name):   # the seed's share: exposed communication (tp + pp + dp) / step
    k, step = sim_of(name)
    return sum(k[x] for x in ('tp_comm_s', 'pp_comm_s', 'dp_comm_s')) / step
def sim_idle(name):   # the step not computing: exposed communication and bubble
    k, step = sim_of(name)
    return 1 - (k['compute_s'] + k['recompute_s'] + k['optimizer_s']) / step
def meas_idle(c):     # the same measured: 1 - the ranks' mean busy time / step
    busy = sum(r['measured_busy_s'] for r in c['ranks']) / len(c['ranks'])
    return 1 - busy / c['step']['measured_s']
sb, mb = sim_comm('baseline_tp2'), meas_idle(b)
print(f"2 nodes, 1 rank each, link {rate} ({chose} the target share {target:.1%}: {share_from});")
print(f"gpt 4 layers h256 s128, 4 microbatches of 2")
print(f"| layout | simulated ms | measured ms | not computing, simulated | measured |")
print(f"| --- | ---: | ---: | ---: | ---: |")
print(f"| baseline: tp 2 across the link | {bs['predicted_s']*1e3:.1f} | {bs['measured_s']*1e3:.1f} | {sim_idle('baseline_tp2'):.1%} | {mb:.1%} |")
print(f"| pipeline: pp 2 across the link | {ps['predicted_s']*1e3:.1f} | {ps['measured_s']*1e3:.1f} | {sim_idle('pipeline_pp2'):.1%} | {meas_idle(p):.1%} |")
print(f"| ratio pipeline / baseline | {sr:.3f} | {mr:.3f} | | |")
print(f"\nbaseline communication share: target {target:.1%}, simulated {sb:.1%}, measured {mb:.1%} "
      f"(measured: the step not computing; the baseline has no bubble)")
print(f"measured gain {1/mr-1:+.0%}, simulated gain {1/sr-1:+.0%}; ratios differ by {sr/mr-1:+.1%}")
json.dump({"rate": rate, "target_share": target, "baseline_share_simulated": sb,
           "baseline_share_measured": mb, "measured_ratio": mr, "simulated_ratio": sr,
           "baseline": bs, "pipeline": ps}, open('seed38_mini.json', 'w'), indent=1)
sys.exit(0 if mr < 1 and sr < 1 and abs(sr / mr - 1) <= 0.10 else 1)
PY
