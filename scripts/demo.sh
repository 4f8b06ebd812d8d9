#!/usr/bin/env bash
# demo.sh - the main job on built-ins (run by `make demo` after the build).
set -euo pipefail
cd "$(dirname "$0")/.."
sc=bin/stagecraft
echo "== gpt-1.3b: the model =="
$sc model show gpt-1.3b --depth 1
echo
echo "== gpt-1.3b on 16 x p4d.24xlarge, tp 8: per-module costs =="
$sc cluster show p4d.24xlarge --nodes 16
echo
$sc cost --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --tp 8 --mbs 1 --depth 1
