#!/usr/bin/env bash
# fuzz.sh - runs the libFuzzer targets (make fuzz) one after the other, each
# to a number of executions, niced, and prints what each reached.
#   scripts/fuzz.sh [-n RUNS] [TARGET...]     (default: 10000000, every target)
# Targets and their seed corpora (the repository's, copied into
# out/fuzz/corpus/NAME so that new inputs land there, never in tests/):
#   model     tests/fuzz/corpus/model tests/corpus/model
#   cluster   tests/corpus/cluster tests/corpus/cluster/good
#   timeline  tests/fuzz/corpus/timeline tests/corpus/timeline
#   plan      tests/fuzz/corpus/plan tests/corpus/plan      (with its cross-checks)
#   files     tests/fuzz/corpus/files                       (plan alone, tune, bench,
#             validation suite, calibration's inputs)
# Each run: nice -n 19 build/fuzz/fuzz_NAME -runs=RUNS -timeout=10
# -print_final_stats=1 out/fuzz/corpus/NAME; its log is out/fuzz/NAME.log and
# a crashing input out/fuzz/NAME-crash-*. The summary line per target gives
# the executions libFuzzer counted (stat::number_of_executed_units), the wall
# time and the exit status; a finding stops that target, not the others.
# Exit status: 0 when every target finished its runs without a finding.
set -u
cd "$(dirname "$0")/.."
runs=10000000
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(model cluster timeline plan files)
seeds() {
    case $1 in
    model) echo tests/fuzz/corpus/model tests/corpus/model ;;
    cluster) echo tests/corpus/cluster tests/corpus/cluster/good ;;
    timeline) echo tests/fuzz/corpus/timeline tests/corpus/timeline ;;
    plan) echo tests/fuzz/corpus/plan tests/corpus/plan ;;
    files) echo tests/fuzz/corpus/files ;;
    *) return 1 ;;
    esac
}
make -s fuzz || exit 1
mkdir -p out/fuzz/corpus
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
fail=0
for t in "${targets[@]}"; do
    dirs=$(seeds "$t") || { echo "fuzz.sh: unknown target $t" >&2; exit 2; }
    c=out/fuzz/corpus/$t
    mkdir -p "$c"
    for d in $dirs; do find "$d" -maxdepth 1 -type f -name '*.json' -exec cp -n {} "$c/" \; ; done
    log=out/fuzz/$t.log
    t0=$(date +%s)
    echo "$(date -u +%H:%M:%S) fuzz_$t: -runs=$runs on $(ls "$c" | wc -l) inputs"
    nice -n 19 build/fuzz/fuzz_$t -runs="$runs" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="out/fuzz/$t-" "$c" </dev/null >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    echo "$(date -u +%H:%M:%S) fuzz_$t: rc $rc, ${execs:-?} executions in $((t1 - t0)) s" \
         "(${rate:-?}/s), corpus $(ls "$c" | wc -l)"
    if [ $rc -ne 0 ]; then
        fail=1
        grep -m3 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log"
    fi
done
exit $fail
