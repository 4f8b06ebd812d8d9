# calibrate_retry.sh - sourced by accuracy.sh and seed38_mini.sh (not run):
#   calibrate_retrying NAME REMEASURE SC ARGS...
# runs `SC calibrate ARGS... -o calibrated.json > calibrate.txt`; when a
# quality gate refuses the input (exit 4: a noisy bench, steps that spread,
# host times that do not follow the bytes) it does what calibrate's message
# asks, measures again (the caller's function REMEASURE, given the try 1 or
# 2) and calibrates again, at most twice. Sets calibrate_status to
# calibrate's last status (calibrated.json exists only when it is 0) and
# returns 0: called plainly, not after || or if, so that under set -e a
# failing re-measure still stops the caller.
calibrate_retrying() {
  local name=$1 remeasure=$2 sc=$3 tries
  shift 3
  for ((tries = 0; ; tries++)); do
    calibrate_status=0
    rm -f calibrated.json
    "$sc" calibrate "$@" -o calibrated.json > calibrate.txt || calibrate_status=$?
    [[ $calibrate_status == 4 && $tries -lt 2 ]] || return 0
    echo "$name: calibrate refused its input (exit 4): measuring it again ($((tries + 1)) of 2)" >&2
    "$remeasure" $((tries + 1))
  done
}
