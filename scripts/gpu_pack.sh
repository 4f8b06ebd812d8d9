#!/usr/bin/env bash
# gpu_pack.sh - a bundle that runs exec/gpu_check.sh on a GPU machine that
# has the NVIDIA driver and CUDA 13's cuBLAS and NCCL (the CUDA toolkit, or
# PyTorch's nvidia-* pip packages) but none of this project's Debian
# libraries and no MPI: a rented GPU box, a container with PyTorch.
#
# It builds a CUDA build without MPI here (objects in build-pack/, so the
# usual build/ and bin/ stay as they are), copies the binary into DIR, packs
# the shared libraries it needs that such a machine lacks (cJSON, GSL,
# OpenBLAS and theirs; not glibc, libstdc++ or CUDA's) into DIR/libs.tar.xz,
# and writes DIR/run.sh. On the GPU machine, from a copy of this checkout
# with DIR in it:
#     bash DIR/run.sh [OUTDIR]
# unpacks the libraries, finds CUDA's (/usr/local/cuda, then the nvidia pip
# packages of the first python3), and runs exec/gpu_check.sh with the
# bundled binary (SC_BIN), its results in OUTDIR (default gpu_check_out) and
# OUTDIR.tar.gz. The binary needs glibc 2.35 or newer there (Ubuntu 22.04,
# Debian 12).
#   usage: scripts/gpu_pack.sh [DIR]      (default .gpu_pack)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.gpu_pack}
case "$dir" in -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
say() { echo "gpu_pack: $*"; }

[ "$(make -s config USE_MPI=no BUILD=build-pack | sed -n 's/.*USE_CUDA=\([a-z]*\).*/\1/p')" = yes ] ||
    { say "no nvcc here (CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}): cannot build the CUDA backend"; exit 1; }
say "building without MPI into build-pack/ (a minute on 2 cores)"
make -s -j"$(nproc)" USE_MPI=no BUILD=build-pack CLI=build-pack/bin/stagecraft \
    build-pack/libstagecraft.a build-pack/bin/stagecraft >/dev/null
bin=build-pack/bin/stagecraft
"$bin" version | grep -q '^CUDA: yes' || { say "$bin was built without CUDA"; exit 1; }

mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$bin" "$dir/stagecraft.tmp" && mv "$dir/stagecraft.tmp" "$dir/stagecraft"
# every library the binary loads but glibc's, the compiler runtime's and CUDA's
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    case "$name" in
        linux-vdso*|ld-linux*|libc.so*|libm.so*|libpthread*|libdl.so*|librt.so*) continue ;;
        libstdc++*|libgcc_s*) continue ;;
        libcuda*|libcublas*|libnccl*|libnvidia*) continue ;;
    esac
    cp -L "$path" "$tmp/$name"
done
tar -C "$tmp" -cJf "$dir/libs.tar.xz.tmp" . && mv "$dir/libs.tar.xz.tmp" "$dir/libs.tar.xz"

cat > "$dir/run.sh.tmp" <<'RUN'
#!/usr/bin/env bash
# run.sh (written by scripts/gpu_pack.sh): exec/gpu_check.sh with the
# bundled binary and libraries.   usage: bash DIR/run.sh [OUTDIR]
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
out=${1:-gpu_check_out}
lib=$(mktemp -d)
tar -C "$lib" -xJf "$here/libs.tar.xz" || exit 1
L=$lib
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    $(python3 -c "import nvidia, os; print(' '.join(os.path.join(p, x, 'lib') for p in nvidia.__path__ for x in sorted(os.listdir(p))))" 2>/dev/null); do
    [ -d "$d" ] && L=$L:$d
done
export LD_LIBRARY_PATH=$L${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
missing=$(ldd "$here/stagecraft" | grep 'not found')
[ -z "$missing" ] || { echo "run.sh: libraries not found:"; echo "$missing"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>/dev/null
mkdir -p "$out"
SC_BIN="$here/stagecraft" exec/gpu_check.sh "$out" 2>&1 | tee "$out/gpu_check.log"
rc=${PIPESTATUS[0]}
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
echo "run.sh: gpu_check exit $rc; everything in $out.tar.gz"
exit $rc
RUN
chmod +x "$dir/run.sh.tmp" && mv "$dir/run.sh.tmp" "$dir/run.sh"
say "wrote $dir/ ($(du -sh "$dir" | cut -f1)): stagecraft, libs.tar.xz ($(tar -tJf "$dir/libs.tar.xz" | grep -c so) libraries), run.sh"
say "on the GPU machine, in a copy of this checkout with $dir in it: bash $dir/run.sh [OUTDIR]"
