#!/usr/bin/env bash
# clock.sh: the SM clock and power of one H200 while it runs GEMMs back to
# back (is the preset's sustained factor 0.844 what a lone GPU holds?), and
# gpt-2.7b's step with the kernel profile once more.   usage: bash .gpu_pack/clock.sh OUT
here=$(cd "$(dirname "$0")" && pwd); cd "$here/.."; out=$1; mkdir -p "$out"
lib=$(mktemp -d); tar -C "$lib" -xJf "$here/libs.tar.xz" || exit 1
L=$lib; for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && L=$L:$d; done
export LD_LIBRARY_PATH=$L${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
S=$here/stagecraft
nvidia-smi --query-gpu=clocks.max.sm,clocks.sm,power.limit,power.draw,temperature.gpu --format=csv | tee "$out/idle.csv"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 250 > "$out/smi.csv" 2>&1 &
smi=$!
sleep 1
# 1. a sweep of big GEMMs, repeated for ~15 s
timeout 60 $S bench gemm --backend cuda --dtype bf16 --sizes 8192,4096x10240x2560,2048x8192x2048 --iters 200 --warmup 20 > "$out/bench_long.txt" 2>&1
# 2. gpt-2.7b mbs 2 flash, 20 steps, with the kernel profile
$S sim --model gpt-2.7b --cluster h200-sxm-1 --mbs 2 --microbatches 4 --attn flash -o "$out/plan.json" > /dev/null
timeout 120 $S exec "$out/plan.json" --backend cuda --steps 20 --warmup 3 --timeout 60 --kernels -o "$out/measured.json" > "$out/exec.txt" 2>&1
kill $smi; sleep 0.5
cat "$out/bench_long.txt" "$out/exec.txt"
python3 - "$out/smi.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))[1:]
clk = [float(r[1].split()[0]) for r in rows if len(r) > 2 and r[1].strip()[0].isdigit()]
pw = [float(r[2].split()[0]) for r in rows if len(r) > 2 and r[2].strip()[0].isdigit()]
busy = [c for c, p in zip(clk, pw) if p > 250]
print("samples", len(clk), "busy samples (>250 W)", len(busy))
if busy:
    busy.sort(); print("SM clock under load: median %.0f MHz, min %.0f, max %.0f" % (busy[len(busy)//2], busy[0], busy[-1]))
    print("power under load: max %.0f W" % max(pw))
PY
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
