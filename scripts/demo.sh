#!/usr/bin/env bash
# demo.sh - the main job on built-ins (run by `make demo` after the build), the
# seed scenario end to end with its plots in out/:
# gpt-1.3b on 16 x p4d.24xlarge, its per-module costs, and one simulated
# training step two ways: tensor parallelism spread across nodes (every layer
# all-reduces over the network) against a pipeline across nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p out
sc=bin/stagecraft
echo "== the model: gpt-1.3b =="
$sc model show gpt-1.3b --depth 1
echo
echo "== the cluster: 16 x p4d.24xlarge =="
$sc cluster show p4d.24xlarge --nodes 16
echo
echo "== per-module costs, tp 8, one sample per microbatch =="
$sc cost --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --tp 8 --mbs 1 --depth 1
echo
echo "== one step, tensor parallelism across 2 nodes (dp 8, tp 16) =="
$sc sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --dp 8 --tp 16 --pp 1 \
  --microbatches 8 --mbs 1 --schedule 1f1b
echo
echo "== one step, pipeline across 2 nodes (dp 8, tp 8, pp 2) =="
$sc sim --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --dp 8 --tp 8 --pp 2 \
  --microbatches 8 --mbs 1 --schedule 1f1b
echo
echo "== the planner: the best plan for gpt-1.3b on 16 x p4d.24xlarge, global batch 512 =="
$sc plan --model gpt-1.3b --cluster p4d.24xlarge --nodes 16 --global-batch 512 --top 8 -o out/demo-plan.json
echo
echo "== the 38% claim: tensor parallelism across nodes against a pipeline (plots in out/seed38) =="
$sc repro seed38 -o out/seed38
echo
echo "== what if: 1 to 64 nodes of p4d.24xlarge and p5.48xlarge, on demand and spot (plots in out/whatif) =="
$sc whatif --model gpt-1.3b --cluster p4d.24xlarge,p5.48xlarge --nodes 1-64 --global-batch 512 \
  --tokens 300e9 --spot -o out/whatif
