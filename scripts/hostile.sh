#!/usr/bin/env bash
# hostile.sh - issue 15's hostile-input run, repeatable: replays the issue's
# reproducers and the bad-input corpora (tests/corpus/, tests/fuzz/corpus/)
# against the built command and checks, for every case:
#   crash   no death by a signal (exit status 128 + N) or sanitizer report
#   hang    no run past its timeout (timeout(1): 124)
#   exit    the documented exit status (docs/commands.md "Exit codes":
#           0 ok, 1 internal, 2 bad input or usage, 3 I/O, 4 calibration
#           refused, 5 infeasible)
#   message a failure is one line on stderr, "stagecraft: ...", naming the
#           file it is about (and the corpus's .expect text where there is one)
#   outputs a failure leaves the output as it was (a sentinel file stays
#           byte for byte), no OUT.tmp* beside it; special files stay special
# Not part of `make test` (a few minutes); run after `make`:
#   scripts/hostile.sh [--bin PATH] [--huge] [--keep]
# --huge adds the 199,996-leaf model on 512 nodes (plan without --time-limit;
# minutes). Prints one line per failed check and the counts at the end; exit
# status 0 when every check passed.
set -u
cd "$(dirname "$0")/.."
root=$PWD
bin=$root/bin/stagecraft
huge=0
keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$(realpath "$2"); shift 2 ;;
    --huge) huge=1; shift ;;
    --keep) keep=1; shift ;;
    *) echo "usage: scripts/hostile.sh [--bin PATH] [--huge] [--keep]" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "hostile.sh: $bin is not built (make)" >&2; exit 2; }
w=$(mktemp -d /tmp/sc-hostile.XXXXXX)
[ $keep = 1 ] || trap 'rm -rf "$w"' EXIT
cd "$w" || exit 3
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

ncase=0 nfail=0 ncrash=0 nhang=0 nexit=0 nmsg=0 nout=0
declare -A by_rc
fail() { # KIND NAME WHAT
    nfail=$((nfail + 1))
    case $1 in
    crash) ncrash=$((ncrash + 1)) ;; hang) nhang=$((nhang + 1)) ;;
    exit) nexit=$((nexit + 1)) ;; message) nmsg=$((nmsg + 1)) ;;
    outputs) nout=$((nout + 1)) ;;
    esac
    echo "FAIL [$1] $2: $3"
}

# run NAME RC NEEDLE TIMEOUT -- ARGS...: runs the command (stdin /dev/null,
# stdout to $w/out, stderr to $w/err) and checks crash, hang, the exit status
# RC and, when RC is not 0, a one-line message on stderr containing NEEDLE.
run() {
    local name=$1 want=$2 needle=$3 t=$4
    shift 5
    ncase=$((ncase + 1))
    timeout -k 5 "$t" "$bin" "$@" </dev/null >"$w/out" 2>"$w/err"
    local rc=$?
    by_rc[$rc]=$((${by_rc[$rc]:-0} + 1))
    last_rc=$rc
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        fail hang "$name" "ran past ${t} s"
        return 1
    fi
    if [ $rc -gt 128 ] || grep -q -E '^==[0-9]+==ERROR|runtime error:' "$w/err"; then
        fail crash "$name" "exit $rc: $(grep -m1 -E 'ERROR|runtime error|' "$w/err")"
        return 1
    fi
    if [ "$rc" != "$want" ]; then
        fail exit "$name" "exit $rc, documented $want: $(head -c 300 "$w/err" | tr '\n' '|')"
        return 1
    fi
    if [ "$want" != 0 ]; then
        local lines
        # one line, "stagecraft: ..." or "stagecraft CMD: ..."; a usage
        # error adds "try 'stagecraft CMD --help'"; warnings and progress
        # lines are not errors
        lines=$(grep -v -E "^stagecraft: warning:|^[a-z]+: (partitioned|simulated|enumerating) |^try 'stagecraft" "$w/err" | wc -l)
        if [ "$lines" != 1 ] || ! head -1 "$w/err" | grep -q -E '^stagecraft( [a-z]+)?: '; then
            fail message "$name" "not one 'stagecraft: ' line ($lines): $(head -c 300 "$w/err" | tr '\n' '|')"
            return 1
        fi
        if [ -n "$needle" ] && ! grep -q -F -- "$needle" "$w/err"; then
            fail message "$name" "does not say '$needle': $(head -c 300 "$w/err")"
            return 1
        fi
    fi
    return 0
}

# sentinel FILE: a file with known bytes; intact FILE NAME: still them, and
# no FILE.tmp* beside it.
sentinel() { printf 'sentinel %s\n' "$1" >"$1"; }
intact() {
    if [ "$(cat "$1" 2>/dev/null)" != "sentinel $1" ]; then
        fail outputs "$2" "$1 was replaced or removed"
    fi
    if ls "$1".tmp* >/dev/null 2>&1 || ls "$(dirname "$1")"/.*tmp* >/dev/null 2>&1; then
        fail outputs "$2" "a temporary file was left beside $1"
    fi
}

# ---- inputs ----------------------------------------------------------------
"$bin" model gen gpt --layers 4 --hidden 64 --heads 4 --seq 32 --vocab 256 --dtype fp32 -o tiny.json >/dev/null
"$bin" cluster show cpu-local --nodes 1 -o cpu1.json >/dev/null
cp "$root"/tests/corpus/plan/good/{tiny,p4d,plan}.json . 2>/dev/null
mkdir -p good && cp "$root"/tests/corpus/plan/good/{tiny,tiny_llama,p4d}.json good/
"$bin" sim --model tiny.json --cluster p4d.json --pp 2 --microbatches 4 -o okplan.json >/dev/null
"$bin" sim --plan okplan.json --timeline tl.json >/dev/null

# ---- the bad-input corpora: each file refused with 2, naming it ------------
corpus() { # DIR CMD... (the file is appended)
    local dir=$1
    shift
    for f in "$root/$dir"/*.json; do
        [ -f "$f" ] || continue
        local base=${f%.json} needle=
        [ -f "$base.expect" ] && needle=$(head -1 "$base.expect")
        [ -f "$f.expect" ] && needle=$(head -1 "$f.expect")
        cp "$f" "in_$(basename "$f")"
        sentinel o.json
        run "$dir/$(basename "$f")" 2 "in_$(basename "$f")" 60 -- "$@" "in_$(basename "$f")"
        # the message names the file; the .expect text is what it says of it
        if [ -n "$needle" ] && [ "$last_rc" = 2 ] && ! grep -q -F -- "$needle" "$w/err"; then
            fail message "$dir/$(basename "$f")" "does not say '$needle': $(head -c 300 "$w/err")"
        fi
        rm -f "in_$(basename "$f")"
    done
}
corpus tests/corpus/model model show
corpus tests/corpus/cluster cluster show
corpus tests/corpus/timeline trace -o o.json
intact o.json "trace of bad timelines"
# tampered plans, found beside their model and cluster (good/)
for f in "$root"/tests/corpus/plan/*.json; do
    n=$(basename "$f")
    needle=$(head -1 "${f%.json}.expect" 2>/dev/null)
    cp "$f" "t_$n"
    sentinel p_out.json
    run "plan/$n sim" 2 "t_$n" 60 -- sim --plan "t_$n" --timeline p_out.json
    [ "$last_rc" = 2 ] && [ -n "$needle" ] && ! grep -q -F -- "$needle" "$w/err" &&
        fail message "plan/$n sim" "does not say '$needle': $(head -c 300 "$w/err")"
    intact p_out.json "plan/$n sim"
    run "plan/$n export" 2 "t_$n" 60 -- export "t_$n" --to megatron -o exp_dir
    [ -e exp_dir ] && fail outputs "plan/$n export" "exp_dir was created"
    run "plan/$n exec" 2 "t_$n" 60 -- exec "t_$n" --backend cpu -o p_out.json
    intact p_out.json "plan/$n exec"
    rm -f "t_$n"
done
# a plan naming a FIFO as its model, a measured timeline naming a FIFO as its
# plan: refused (opening a FIFO waits for a writer)
mkfifo in_fifo
sed 's|"source": "-"|"source": "in_fifo"|' "$root"/tests/corpus/plan/source_stdin.json >pfifo.json
run "plan naming a FIFO" 2 "in_fifo is not a regular file" 30 -- sim --plan pfifo.json
"$bin" model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 --vocab 100 --dtype fp32 -o t2.json 2>/dev/null
"$bin" sim --model t2.json --cluster cpu1.json --microbatches 1 -o p1.json >/dev/null 2>&1
if "$bin" exec p1.json --backend cpu --steps 2 --warmup 0 -o m1.json >/dev/null 2>&1; then
    sed 's|"file":	"p1.json"|"file":	"in_fifo"|' m1.json >mfifo.json
    sentinel cal.json
    run "timeline naming a FIFO" 2 "in_fifo is not a regular file" 30 -- calibrate \
        --cluster cpu1.json mfifo.json -o cal.json
    intact cal.json "timeline naming a FIFO"
fi
rm -f in_fifo
# the fuzz seeds that are not valid: each loader refuses with 2 or loads
for f in "$root"/tests/fuzz/corpus/model/*.json; do
    n=$(basename "$f")
    case $n in ok_*) want=0 ;; *) want=2 ;; esac
    cp "$f" "fm_$n"
    run "fuzz/model/$n" $want "fm_$n" 60 -- model show "fm_$n"
    rm -f "fm_$n"
done
for f in "$root"/tests/fuzz/corpus/files/*.json; do
    n=$(basename "$f")
    cp "$f" "ff_$n"
    case $n in
    tampered_* | bad_* | nul_*) run "fuzz/files/$n sim" 2 "ff_$n" 60 -- sim --plan "ff_$n" ;;
    validation_bad_*) run "fuzz/files/$n validate" 2 "ff_$n" 60 -- validate --suite "ff_$n" ;;
    esac
    rm -f "ff_$n"
done

# ---- issue 15's reproducers -------------------------------------------------
gen=(model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 --vocab 100)
# 1. -o on special files and symlinks
if mknod myfull c 1 7 2>/dev/null; then
    run "1. -o a copy of /dev/full" 3 "myfull" 30 -- "${gen[@]}" -o myfull
    [ -c myfull ] || fail outputs "1. -o myfull" "myfull is no longer a character device"
    mknod mynull c 1 3
    run "1. -o a copy of /dev/null" 0 "" 30 -- "${gen[@]}" -o mynull
    [ -c mynull ] || fail outputs "1. -o mynull" "mynull is no longer a character device"
    rm -f myfull mynull
else
    echo "note: mknod not permitted here: the device-file cases were not run"
fi
sentinel target.json
ln -sf target.json link.json
run "1. -o a symlink" 0 "" 30 -- "${gen[@]}" -o link.json
[ -L link.json ] || fail outputs "1. -o link.json" "the symlink was replaced"
grep -q '"format"' target.json || fail outputs "1. -o link.json" "its target was not written"
mkfifo fifo.json
(timeout 40 cat fifo.json >fifo.out) &
run "1. -o a FIFO" 0 "" 30 -- "${gen[@]}" -o fifo.json
wait
[ -p fifo.json ] || fail outputs "1. -o fifo.json" "the FIFO was replaced"
grep -q '"format"' fifo.out || fail outputs "1. -o fifo.json" "nothing came through the FIFO"
run "1. -o -" 0 "" 30 -- "${gen[@]}" -o -
grep -q '"format"' "$w/out" || fail outputs "1. -o -" "the model did not go to stdout"
# the same for the commands that stage several outputs (sim's three, plot's
# script): they were renamed over whatever the name was until 2026-12-07
simo=(sim --model tiny.json --cluster p4d.json --pp 2 --microbatches 4)
for opt in --timeline --lowered -o; do
    if mknod "dev$opt" c 1 3 2>/dev/null; then
        run "1. sim $opt a copy of /dev/null" 0 "" 30 -- "${simo[@]}" "$opt" "dev$opt"
        [ -c "dev$opt" ] || fail outputs "1. sim $opt dev$opt" "no longer a character device"
        rm -f "dev$opt"
    fi
    sentinel "target$opt"
    ln -sf "target$opt" "link$opt"
    run "1. sim $opt a symlink" 0 "" 30 -- "${simo[@]}" "$opt" "link$opt"
    [ -L "link$opt" ] || fail outputs "1. sim $opt link$opt" "the symlink was replaced"
    [ "$(cat "target$opt")" != "sentinel target$opt" ] ||
        fail outputs "1. sim $opt link$opt" "its target was not written"
    mkfifo "fifo$opt"
    (timeout 40 cat "fifo$opt" >"fifo$opt.out") & # a writer that never opens it: no hang
    run "1. sim $opt a FIFO" 0 "" 30 -- "${simo[@]}" "$opt" "fifo$opt"
    wait
    [ -p "fifo$opt" ] || fail outputs "1. sim $opt fifo$opt" "the FIFO was replaced"
    [ -s "fifo$opt.out" ] || fail outputs "1. sim $opt fifo$opt" "nothing came through the FIFO"
    rm -f "target$opt" "link$opt" "fifo$opt" "fifo$opt.out"
done
# an output on stdout takes it alone: the document parses, the report is on stderr
for c in "${simo[*]} -o -" "${simo[*]} --timeline -" \
    "plan --model tiny.json --cluster p4d.json --global-batch 8 -o -"; do
    read -r -a cargs <<<"$c"
    run "1. $c" 0 "" 60 -- "${cargs[@]}"
    head -c 1 "$w/out" | grep -q '{' && tail -c 3 "$w/out" | grep -q '}' ||
        fail outputs "1. $c" "standard output is not the document alone"
done
run "1. sim -o - --json" 2 "--json prints on standard output" 30 -- "${simo[@]}" -o - --json
# 3. memory bomb: refused before allocating, naming the estimate and the cap
run "3. sim m 65536 on 128 nodes" 2 "--max-mem" 120 -- sim --model gpt-175b --cluster dgx-a100-80g \
    --nodes 128 --dp 8 --tp 8 --pp 16 --microbatches 65536 --mbs 1 --schedule 1f1b
# 4. time bombs
"$bin" model gen gpt --layers 4096 --hidden 256 --heads 4 --seq 128 --vocab 1000 -o deep.json >/dev/null
run "4. plan of a 4096-layer GPT on 16 nodes" 0 "" 300 -- plan --model deep.json \
    --cluster p4d.24xlarge --nodes 16 --global-batch 512
if [ $huge = 1 ]; then
    "$bin" model gen gpt --layers 1 --hidden 256 --heads 4 --seq 1024 --vocab 32000 -o g1.json >/dev/null
    python3 "$root/scripts/huge_model.py" g1.json >huge.json
    t0=$(date +%s)
    run "4. plan of 199,996 leaves on 512 nodes" 0 "" 900 -- plan --model huge.json \
        --cluster p4d.24xlarge --nodes 512 --global-batch 4096 -o huge.plan.json
    echo "note: the 199,996-leaf plan took $(($(date +%s) - t0)) s, exit $last_rc;" \
        "$(grep -c 'elapsed' "$w/err") progress lines; $(grep -m1 'time limit' "$w/out")"
fi
# 6. several outputs: all or none
sentinel tl6.json
run "6. sim --timeline, -o in a missing folder" 3 "missing_dir" 60 -- sim --model tiny.json \
    --cluster cpu1.json --microbatches 2 --timeline tl6.json -o missing_dir/p.json
intact tl6.json "6. sim --timeline"
run "6. exec -o in a missing folder" 3 "missing_dir" 60 -- exec okplan.json --backend cpu \
    -o missing_dir/m.json
sentinel wdir
run "6. whatif -o onto a file" 3 "wdir" 120 -- whatif --model tiny.json --cluster p4d.24xlarge \
    --nodes 1,2 --global-batch 16 --tokens 1e9 -o wdir
intact wdir "6. whatif -o onto a file"
# 7. SIGTERM or SIGINT while writing: no temporary file left
"$bin" model gen gpt --layers 64 --hidden 256 --heads 4 --seq 128 --vocab 1000 -o mid.json >/dev/null
for sig in TERM INT; do
    for delay in 0.05 0.2 0.5 1; do
        ncase=$((ncase + 1))
        timeout -s $sig "$delay" "$bin" sim --model mid.json --cluster p4d.24xlarge --pp 8 \
            --microbatches 64 --timeline term.json -o term.plan.json >/dev/null 2>&1
        if ls term.json.tmp* term.plan.json.tmp* .*.tmp* >/dev/null 2>&1; then
            fail outputs "7. SIG$sig after $delay s" "a temporary file was left"
        fi
        rm -f term.json term.plan.json
    done
done
# 8. stdout write errors
if [ -w /dev/full ]; then
    for args in "model list" "cluster list" "model show tiny.json --json" \
        "sim --model tiny.json --cluster cpu1.json --microbatches 2"; do
        ncase=$((ncase + 1))
        # shellcheck disable=SC2086
        timeout 60 "$bin" $args >/dev/full 2>"$w/err" </dev/null
        rc=$?
        by_rc[$rc]=$((${by_rc[$rc]:-0} + 1))
        [ $rc = 3 ] || fail exit "8. $args > /dev/full" "exit $rc, documented 3"
        grep -q "stdout: write error" "$w/err" ||
            fail message "8. $args > /dev/full" "no 'stdout: write error': $(head -c 200 "$w/err")"
    done
fi
# 10. infeasible configurations
run "10. sim tp 3 (4 heads)" 2 "tp" 60 -- sim --model tiny.json --cluster p4d.24xlarge --tp 3 --microbatches 1
run "10. sim tp 32 (4 heads)" 2 "tp" 60 -- sim --model tiny.json --cluster p4d.24xlarge --nodes 4 --tp 32 --microbatches 1
run "10. cost tp 3" 2 "tp" 60 -- cost --model tiny.json --cluster p4d.24xlarge --tp 3
printf '{"format": "stagecraft.model/1", "name": "e", "dtype": "fp32", "seq_len": 8, "root": {"name": "r", "kind": "model", "params": 0, "flops_fwd": 0, "act_out_bytes": 0, "act_saved_bytes": 0}}' >empty.json
run "10. sim of an empty model" 2 "empty.json" 60 -- sim --model empty.json --cluster cpu1.json --microbatches 1
cp "$root"/tests/corpus/cluster/tiny_intra_bandwidth.json tiny_bw.json
run "10. sim on a 1e-300 B/s fabric" 2 "tiny_bw.json" 60 -- sim --model tiny.json --cluster tiny_bw.json --tp 2 --microbatches 2
run "10. sim that does not fit" 5 "does not fit" 60 -- sim --model gpt-175b --cluster p4d.24xlarge --one-replica \
    --tp 8 --pp 1 --dp 1 --microbatches 1
run "10. ... with --allow-oom" 0 "" 60 -- sim --model gpt-175b --cluster p4d.24xlarge --one-replica \
    --tp 8 --pp 1 --dp 1 --microbatches 1 --allow-oom
# 11. the timeline it writes, read back; filters
run "11. trace of sim's timeline" 0 "" 60 -- trace tl.json -o tl.chrome.json
run "11. trace --ranks 0" 0 "" 60 -- trace tl.json --ranks 0 -o tl0.chrome.json
# 12. strings
printf '{"format": "stagecraft.model/1", "name": "cpu\\u0000evil", "dtype": "fp32", "seq_len": 8, "root": {"name": "r", "kind": "model", "params": 1, "flops_fwd": 1, "act_out_bytes": 1, "act_saved_bytes": 1}}' >nul.json
run "12. \\u0000 in a name" 2 "nul.json" 30 -- model show nul.json
printf '{"format": "stagecraft.model/1", "name": "\xff\xfe", "dtype": "fp32", "seq_len": 8, "root": {"name": "r", "kind": "model", "params": 1, "flops_fwd": 1, "act_out_bytes": 1, "act_saved_bytes": 1}}' >utf8.json
run "12. invalid UTF-8" 2 "utf8.json" 30 -- model show utf8.json
# 13. diagnostics that name the cause
run "13. --fix schedule=foo" 2 "foo" 60 -- plan --model tiny.json --cluster p4d.24xlarge --global-batch 8 --fix schedule=foo
run "13. --fix dp=1,dp=2" 2 "dp" 60 -- plan --model tiny.json --cluster p4d.24xlarge --global-batch 8 --fix dp=1,dp=2
# the tool's cap on microbatches, named: bad input (tests/test_harden_diag.c)
run "13. plan --global-batch 2^30" 2 "65536 microbatches" 120 -- plan --model tiny.json --cluster p4d.24xlarge --global-batch 1073741824
run "13. bench gemm --sizes 1:64:1" 2 "sizes" 30 -- bench gemm --sizes 1:64:1 -o b.json
run "13. whatif on cpu-local" 0 "" 120 -- whatif --model tiny.json --cluster cpu-local --nodes 1 --global-batch 4 --tokens 1e6 -o wcpu
ls wcpu/*.csv >/dev/null 2>&1 || fail outputs "13. whatif on cpu-local" "no CSV in wcpu/"
# usage errors and missing files, every command
for c in model cluster plan sim cost tune whatif trace plot compare calibrate export validate bench exec repro version; do
    run "usage: $c --no-such-option" 2 "" 30 -- $c --no-such-option
done
run "missing model file" 2 "nosuch.json" 30 -- model show nosuch.json
run "missing plan file" 2 "nosuch.json" 30 -- sim --plan nosuch.json
run "missing timeline" 2 "nosuch.json" 30 -- trace nosuch.json -o x.json
chmod 000 cpu1.json
if ! cat cpu1.json >/dev/null 2>&1; then
    run "unreadable cluster file" 3 "cpu1.json" 30 -- cluster show cpu1.json
fi
chmod 644 cpu1.json

echo
echo "hostile.sh: $ncase cases, $nfail failed checks ($ncrash crashes, $nhang hangs," \
     "$nexit wrong exit codes, $nmsg messages, $nout outputs)"
printf 'exit statuses seen:'
for k in $(printf '%s\n' "${!by_rc[@]}" | sort -n); do printf ' %s×%s' "$k" "${by_rc[$k]}"; done
echo
[ $nfail = 0 ]
