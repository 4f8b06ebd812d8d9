#!/usr/bin/env bash
# deps.sh - installs the Debian packages stagecraft needs, when missing.
# Idempotent; prints nothing when everything is there.
#   scripts/deps.sh            build + test dependencies
#   scripts/deps.sh --notebooks  also what the notebooks and the tracer need
set -euo pipefail
pkgs=(libcjson-dev libgsl-dev gnuplot-nox libopenmpi-dev openmpi-bin libopenblas-dev
      iproute2 clang libclang-rt-14-dev)
if [[ ${1:-} == --notebooks ]]; then
  pkgs+=(jupyter-nbconvert python3-ipykernel python3-nbformat python3-matplotlib python3-pandas
        python3-torch python3-torchvision)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "deps.sh: installing ${missing[*]}" >&2
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "deps.sh: need root to install: ${missing[*]}" >&2; exit 1; fi
else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
