#!/usr/bin/env bash
# accuracy.sh - the calibration loop's accuracy check (make test-long):
# calibrate on benches plus two plans, predict five other plans of a small
# GPT that differ in pp, m, schedule and tp, and compare with what the CPU
# backend measures. Prints a markdown table; exits 1 when a plan's step-time
# error exceeds 10% or the MAPE exceeds 5%.
#   scripts/accuracy.sh [--dir DIR] [--netcluster [--pace]]   (run from the repo root)
# With --netcluster the ranks run on a 2-node emulated cluster
# (scripts/netcluster.sh, one rank per node, shaped inter-node link), and the
# plans use the inter-node path. Every bench and plan runs SC_ACCURACY_PASSES
# times (default 3): per bench size the median pass, per plan the fastest run; a calibration refused by a quality
# gate (exit 4) re-measures the benches and calibration plans, at most
# twice, before the check gives up with calibrate's status. --pace brings
# the emulated cluster up with `netcluster.sh up --pace` (no message passes
# faster than the rate).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sc=$root/bin/stagecraft
dir=out/accuracy
net=0
pace=
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --netcluster) net=1; shift ;;
    --pace) pace=--pace; shift ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "accuracy.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v mpirun >/dev/null || { echo "accuracy.sh: mpirun not found (scripts/deps.sh)" >&2; exit 2; }
mkdir -p "$dir"
cd "$dir"
rate=${SC_NET_RATE:-1gbit}
rate_bits=$(awk -v r="$rate" 'BEGIN { v = r + 0; u = substr(r, length(v) + 1);
  m = u ~ /^g/ ? 1e9 : u ~ /^m/ ? 1e6 : u ~ /^k/ ? 1e3 : 1; print v * m }')
if [[ $net == 1 ]]; then
  "$root/scripts/netcluster.sh" --name sca up --nodes 2 --rate "$rate" $pace >/dev/null
  trap '"$root/scripts/netcluster.sh" --name sca down >/dev/null 2>&1 || true' EXIT
  run2() { "$root/scripts/netcluster.sh" --name sca run --np 2 -- "$@" 2>/dev/null; }
  nodes=2
else
  run2() { mpirun --allow-run-as-root --oversubscribe -np 2 "$@"; }
  nodes=1
fi
"$sc" model gen gpt --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 2048 --dtype fp32 \
  -o gpt.json 2>/dev/null
# the cluster: this machine's cores; on the emulated cluster 2 nodes of 1
# core, linked at the shaped rate
"$sc" cluster show cpu-local --json | /usr/bin/env python3 -c "
import json, sys
c = json.load(sys.stdin)
if $net:
    c['name'] = 'cpu-net'; c['nodes'] = 2; c['gpus_per_node'] = 1
    c['inter']['nic_bytes_per_s'] = $rate_bits / 8; c['inter']['nics_per_node'] = 1
else:
    c['gpus_per_node'] = 2
json.dump(c, open('cpu.json', 'w'), indent=1)"
benches() { # SUFFIX: the three benches, into bench_OP.SUFFIX
  "$sc" bench gemm --sizes 128:1024:2 -o "bench_gemm.$1" >/dev/null
  run2 "$sc" bench allreduce --sizes $sizes -o "bench_allreduce.$1" >/dev/null
  run2 "$sc" bench p2p --sizes $sizes -o "bench_p2p.$1" >/dev/null
  run2 "$sc" bench allreduce --cold 256M --sizes $cold_sizes -o "bench_allreduce_cold.$1" >/dev/null
}
# the sizes the plans send (activations of 128-256 KiB, tp halves of 64-128
# KiB; dp2_m2's one gradient bucket of 16.2 MiB is reduced cold, after the
# backward, and has its own bench over 2-16 MiB with 256 MiB written before
# each iteration, bench --cold): in shared memory Open MPI's times step up
# by 4-8x at a size that depends on the machine (between 64 and 128 KiB on
# an Intel guest, 128-512 KiB on an AMD EPYC one), and no alpha-beta line
# fits both sides, so the benches sweep 32 KiB-4 MiB and calibrate fits the
# regime the calibration plans' messages fall in (docs/commands.md); across
# a shaped link, messages under the token bucket pass at memory speed:
# measure from 256 KiB up there
sizes=32K:4M:2 cold_sizes=2M:16M:2
[[ $net == 1 ]] && sizes=256K:16M:4
plan() { # NAME ARGS...: make the plan
  local name=$1; shift
  "$sc" sim --model gpt.json --cluster cpu.json --nodes $nodes "$@" -o "$name.plan.json" >/dev/null
}
measure() { # NAME OUT: run the plan once
  run2 "$sc" exec "$1.plan.json" --backend cpu --steps 6 --warmup 2 -o "$2" >/dev/null
}
cal="cal_pp2 cal_tp2"
predict="pp2_gpipe_m8 pp2_zbh1_m4 pp2_interleaved_m4 tp2_m4 dp2_m2"
plan cal_pp2 --pp 2 --microbatches 4 --mbs 2 --schedule 1f1b
plan cal_tp2 --tp 2 --microbatches 2 --mbs 2 --schedule 1f1b
plan pp2_gpipe_m8 --pp 2 --microbatches 8 --mbs 1 --schedule gpipe
plan pp2_zbh1_m4 --pp 2 --microbatches 4 --mbs 2 --schedule zb-h1
plan pp2_interleaved_m4 --pp 2 --v 2 --microbatches 4 --mbs 2 --schedule interleaved
plan tp2_m4 --tp 2 --microbatches 4 --mbs 1 --schedule 1f1b
plan dp2_m2 --dp 2 --microbatches 2 --mbs 2 --schedule 1f1b
# Every bench and plan runs three times, in three passes over all of them
# (the second in reverse order); per bench size the median pass is kept, per
# plan the fastest run (for plans the fastest of the runs whose steps spread at most
# 5%, calibrate's ceiling, and whose speed probe, exec --probe, ran within
# 20% of the gemm bench, when there is one): this machine is a VM whose speed drifts over tens of
# seconds, interference only ever adds time, and runs spread over the whole
# check keep a slow phase from moving the calibration inputs against the
# predicted plans (one allreduce bench in a slow phase measured 1.3-8x the
# usual times and put the tp and dp plans 8-14% high; with two passes one
# run still measured both pipeline plans of the emulated cluster 10% slow).
# Calibration reads only the benches and the calibration plans'
# measurements; the predictions are made from the plans and the calibrated
# cluster alone.
passes=${SC_ACCURACY_PASSES:-3}
all="$cal $predict"
rev=$(echo $all | tr ' ' '\n' | tac | tr '\n' ' ')
for ((k = 1; k <= passes; k++)); do
  benches "pass$k.json"
  order=$all
  (( k % 2 == 0 )) && order=$rev
  for p in $order; do measure "$p" "$p.pass$k.json"; done
done
merge() { # [--latest] PLANS...: from every pass so far, the benches and these plans' files
  /usr/bin/env python3 - "$@" <<'PY'
import glob, json, os, re, sys
def load(f):
    return json.load(open(f))
def passes(stem):
    return sorted(glob.glob(f'{stem}.pass*.json'))
# per size the median pass: the fastest would mix regimes, as shared-memory
# p2p on this machine has two (a 128 KiB message in 15 or 65 us, either in any
# pass: one run's fastest-per-size p2p line missed calibrate's 15% MAPE
# ceiling at 47%)
for op in ('gemm', 'allreduce', 'p2p', 'allreduce_cold'):
    runs = [load(f) for f in passes(f'bench_{op}')]
    best = runs[0]
    def mid(rs):
        rs = sorted(rs, key=lambda r: r['time_s'])
        return rs[(len(rs) - 1) // 2]
    best['results'] = [mid(rs) for rs in zip(*(r['results'] for r in runs))]
    json.dump(best, open(f'bench_{op}.json.tmp', 'w'), indent=1)
    os.replace(f'bench_{op}.json.tmp', f'bench_{op}.json')
# the merged gemm bench's time at each square size: what exec's speed probe
# (a square GEMM on every rank at once) is held against
ref = {r['m']: r['time_s'] for r in load('bench_gemm.json')['results']
       if r.get('m') == r.get('n') == r.get('k')}
def quiet(t):
    # every rank's probe within calibrate's 20% of the bench: the ranks had
    # their cores (on a 2-vCPU guest the host runs both vCPUs on one core's
    # hardware threads for minutes at a time: probes and ops 1.6-2x slow)
    p = t.get('probe')
    if not p or p['m'] not in ref:
        return True
    return all(abs(r['probe_s'] / ref[p['m']] - 1) <= 0.20 for r in t['ranks'])
latest = sys.argv[1:2] == ['--latest']
for p in sys.argv[1 + latest:]:           # each plan's fastest settled run, or its latest
    files = sorted(passes(p), key=lambda f: int(re.search(r'pass(\d+)', f).group(1)))
    # a run whose steps spread past calibrate's 5% ceiling, or whose probe
    # ran slow, was measured in a noisy phase: the fastest of the runs that
    # are both settled and quiet, else of the quiet ones, else of the
    # settled ones, else of all
    is_settled = lambda f: load(f).get('steps', {}).get('spread', 1) <= 0.05
    quiet_f = [f for f in files if quiet(load(f))]
    settled = ([f for f in quiet_f if is_settled(f)] or quiet_f
               or [f for f in files if is_settled(f)] or files)
    # a re-measure after a refusal: the run just made, settled or not (the
    # fastest is the run calibrate refused, and would be picked again)
    best = files[-1] if latest else min(settled, key=lambda f: load(f)['step_time_s'])
    with open(best) as src, open(f'{p}.measured.json.tmp', 'w') as dst:
        dst.write(src.read())
    os.replace(f'{p}.measured.json.tmp', f'{p}.measured.json')
PY
}
merge $all
# A calibration refused by a quality gate is measured again
# (calibrate_retry.sh): one more pass of the benches and the calibration
# plans (the held-out plans' measurements are not its input): the benches
# merged with the passes before, the calibration plans' runs replaced by the
# new ones (the fastest run, which calibrate refused, would be picked again;
# three refusals in a row at the same figure, 115.1%, showed it).
remeasure() { # TRY
  local k=$((passes + $1))
  benches "pass$k.json"
  for p in $cal; do measure "$p" "$p.pass$k.json"; done
  merge --latest $cal
}
. "$root/scripts/calibrate_retry.sh"
calibrate_retrying accuracy.sh remeasure "$sc" --cluster cpu.json bench_gemm.json \
  bench_allreduce.json bench_p2p.json bench_allreduce_cold.json cal_pp2.measured.json \
  cal_tp2.measured.json
rm -f bench_*.pass*.json ./*.pass*.json
[[ $calibrate_status == 0 ]] || exit $calibrate_status
echo "| plan | predicted ms | measured ms | error |"
echo "| --- | ---: | ---: | ---: |"
fail=0
sum=0
n=0
for p in $predict; do
  "$sc" compare "$p.plan.json" "$p.measured.json" --cluster calibrated.json --json > "$p.compare.json"
  read -r pred meas err < <(/usr/bin/env python3 -c "
import json,sys
d=json.load(open('$p.compare.json'))['step']
print(d['predicted_s']*1e3, d['measured_s']*1e3, d['error']*100)")
  printf '| %s | %.1f | %.1f | %+.1f%% |\n' "$p" "$pred" "$meas" "$err"
  awk -v e="$err" 'BEGIN { exit !(e > 10 || e < -10) }' && fail=1
  sum=$(awk -v s="$sum" -v e="$err" 'BEGIN { print s + (e < 0 ? -e : e) }')
  n=$((n + 1))
done
mape=$(awk -v s="$sum" -v n="$n" 'BEGIN { printf "%.1f", s / n }')
echo
echo "MAPE $mape% over $n plans (targets: each error within 10%, MAPE at most 5%)"
awk -v m="$mape" 'BEGIN { exit !(m > 5) }' && fail=1
exit $fail
