#!/usr/bin/env bash
# check_layers.sh - the library's layers, and the check that nothing goes
# against them.
#
#   scripts/check_layers.sh [BUILD]      check includes and linked symbols
#   scripts/check_layers.sh --deps DIR   the folders DIR may use (for the Makefile)
#
# From the ground up: common -> traces -> cost_models -> sim -> {planner, exec}
# -> cli. A folder may use only itself and the folders below it; planner and
# exec sit side by side and use neither the other. cli, tests, bench and the
# fuzz targets may use everything.
#
# Two checks, each naming the file and what it uses:
#   1. includes: every #include "x.h" in a layered folder's .c, .h and .cu
#      files resolves to the one folder holding x.h (header names are unique
#      across the library), which must be allowed;
#   2. symbols: every symbol an object file in BUILD/DIR (default build)
#      leaves undefined and another folder's object defines must come from
#      an allowed folder (catches a call through a hand-written prototype).
# Exit status 0 when clean, 1 on any violation, 2 on bad usage or when an
# object file is missing (run make first).
set -euo pipefail
cd "$(dirname "$0")/.."

DIRS=(common traces cost_models sim planner exec)
deps() {
    case "$1" in
    common) echo "common" ;;
    traces) echo "common traces" ;;
    cost_models) echo "common traces cost_models" ;;
    sim) echo "common traces cost_models sim" ;;
    planner) echo "common traces cost_models sim planner" ;;
    exec) echo "common traces cost_models sim exec" ;;
    *) echo "common traces cost_models sim planner exec" ;;
    esac
}

if [ "${1:-}" = "--deps" ]; then
    [ $# -eq 2 ] || { echo "usage: $0 --deps DIR" >&2; exit 2; }
    deps "$2"
    exit 0
fi
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
BUILD=${1:-build}
bad=0
allowed() { # allowed FROM TO
    local d
    for d in $(deps "$1"); do [ "$d" = "$2" ] && return 0; done
    return 1
}

# header -> folder
declare -A home
for d in "${DIRS[@]}"; do
    for h in "$d"/*.h; do
        [ -e "$h" ] || continue
        b=$(basename "$h")
        if [ -n "${home[$b]:-}" ]; then
            echo "layers: $b is in both ${home[$b]}/ and $d/: header names must be unique" >&2
            bad=1
        fi
        home[$b]=$d
    done
done

# 1. includes
for d in "${DIRS[@]}"; do
    for f in "$d"/*.c "$d"/*.h "$d"/*.cu; do
        [ -e "$f" ] || continue
        while IFS=: read -r line inc; do
            h=$(sed -E 's/.*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$inc")
            to=${home[$(basename "$h")]:-}
            [ -n "$to" ] || continue # a header of another project or of tests
            if ! allowed "$d" "$to"; then
                echo "layers: $f:$line: includes $to/$(basename "$h"): $d may use only $(deps "$d")" >&2
                bad=1
            fi
        done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | sed 's/:/:/')
    done
done

# 2. symbols, of the objects whose source is still there (a moved file
# leaves its old object behind)
command -v nm >/dev/null || { echo "layers: nm not found (binutils)" >&2; exit 2; }
declare -A owner objs_of
for d in "${DIRS[@]}"; do
    objs=()
    for src in "$d"/*.c "$d"/*.cu; do
        [ -e "$src" ] || continue
        case "$src" in *.cu) o="$BUILD/$src.o" ;; *) o="$BUILD/${src%.c}.o" ;; esac
        if [ ! -e "$o" ]; then
            case "$src" in *.cu) command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || continue ;; esac
            echo "layers: $o missing (run make first)" >&2
            exit 2
        fi
        objs+=("$o")
    done
    objs_of[$d]="${objs[*]}"
    while read -r sym; do
        owner[$sym]=$d
    done < <(nm -g --defined-only "${objs[@]}" 2>/dev/null | awk 'NF == 3 { print $3 }')
done
for d in "${DIRS[@]}"; do
    for o in ${objs_of[$d]}; do
        while read -r sym; do
            to=${owner[$sym]:-}
            [ -n "$to" ] || continue # libc, cJSON, GSL, MPI, CUDA ...
            if ! allowed "$d" "$to"; then
                echo "layers: $o: uses $sym from $to/: $d may use only $(deps "$d")" >&2
                bad=1
            fi
        done < <(nm -u "$o" 2>/dev/null | awk '{ print $NF }')
    done
done

if [ $bad -ne 0 ]; then
    echo "layers: violations above (order: common -> traces -> cost_models -> sim -> planner | exec -> cli)" >&2
    exit 1
fi
echo "layers: ok (${#DIRS[@]} folders, ${#home[@]} headers, ${#owner[@]} symbols)"
