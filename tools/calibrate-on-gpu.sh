#!/usr/bin/env bash
# Measures this GPU machine for fabricsim's calibration: builds fabricsim-gemm-bench and
# fabricsim-nccl-bench for the local GPU, times a GEMM shape sweep (bf16 and fp8, square and
# transformer shapes; about 2 minutes on an H100-class GPU) and the NCCL collectives over all local
# GPUs from 8 B to 1 GiB, writes gemm.json and nccl.json into the output folder, then fits
# profile.json from them and prints predicted vs measured times for GEMM shapes kept out of the fit.
#
#   tools/calibrate-on-gpu.sh [OUTPUT_DIR]     (default: calibration-run-YYYYmmdd-HHMMSS)
#
# Environment: FABRICSIM_BUILD_DIR (default <repo>/build-calibration), FABRICSIM_BASE_PRESET (the
# preset the fit starts from; guessed from the GPU name when unset).
# Multi-node NCCL runs are not driven from here: see tools/cuda/README.md (mpirun).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-calibration-run-$(date +%Y%m%d-%H%M%S)}"
build="${FABRICSIM_BUILD_DIR:-$repo/build-calibration}"

die() {
  echo "calibrate-on-gpu: $*" >&2
  exit 2
}

command -v nvidia-smi >/dev/null || die "nvidia-smi not found: run this on a machine with NVIDIA GPUs"
command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
  die "nvcc not found: install the CUDA toolkit (or put its bin/ on PATH)"
[[ -x /usr/local/cuda/bin/nvcc ]] && export PATH="$PATH:/usr/local/cuda/bin"

# GPUs this run may use: CUDA_VISIBLE_DEVICES when set, else every GPU nvidia-smi lists.
if [[ -n "${CUDA_VISIBLE_DEVICES:-}" ]]; then
  IFS=',' read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
  gpus=${#visible[@]}
else
  gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
fi
((gpus > 0)) || die "no GPU visible (nvidia-smi -L lists none)"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)

mkdir -p "$out"
out="$(cd "$out" && pwd)"
echo "calibrate-on-gpu: $gpus x $gpu_name; results in $out"

# ---- Build ------------------------------------------------------------------------------------
# CMake >= 3.24 can target exactly the local GPU; older ones get Hopper (sm_90).
cmake_version=$(cmake --version | head -n 1 | awk '{print $3}')
if printf '%s\n' 3.24 "$cmake_version" | sort -V -C; then arch=native; else arch=90; fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFABRICSIM_BENCH=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="$arch"
cmake --build "$build" --parallel "$(nproc)" \
  --target fabricsim-gemm-bench fabricsim-nccl-bench fabricsim
gemm_bench="$build/tools/cuda/fabricsim-gemm-bench"
nccl_bench="$build/tools/cuda/fabricsim-nccl-bench"
[[ -x "$gemm_bench" && -x "$nccl_bench" ]] ||
  die "the CUDA tools were not built (see the 'CUDA tools:' lines of the cmake output above)"

# ---- GEMM shapes ------------------------------------------------------------------------------
# Squares and the GEMMs of a transformer layer in bf16 and fp8 (tools/cuda/gemm_shapes.py).
shapes="$out/gemm-shapes.json"
python3 "$repo/tools/cuda/gemm_shapes.py" >"$shapes"

# ---- Measure ----------------------------------------------------------------------------------
start=$SECONDS
"$gemm_bench" --shapes "$shapes" --warmup 10 --iters 50 -o "$out/gemm.json" 2>&1 |
  tee "$out/gemm.log"
echo "calibrate-on-gpu: GEMM sweep took $((SECONDS - start)) s"

start=$SECONDS
"$nccl_bench" -g "$gpus" -b 8 -e 1G -f 2 --warmup 5 --iters 20 -o "$out/nccl.json" 2>&1 |
  tee "$out/nccl.log"
echo "calibrate-on-gpu: NCCL sweep took $((SECONDS - start)) s"

# ---- Fit ---------------------------------------------------------------------------------------
# Every 5th GEMM shape is kept out of the fit; the report compares their predicted and measured
# times, then lists the collective residuals per size.
base="${FABRICSIM_BASE_PRESET:-}"
if [[ -z "$base" ]]; then
  case "$gpu_name" in
    *H200*) base=dgx-h200 ;;
    *H100*) base=dgx-h100 ;;
    *H800*) base=dgx-h800 ;;
    *A100*80GB*) base=dgx-a100-80gb ;;
    *A100*) base=dgx-a100-40gb ;;
    *B200*) base=dgx-b200 ;;
    *B300*) base=dgx-b300 ;;
  esac
fi
[[ -n "$base" ]] || die "cannot guess the system preset from '$gpu_name': set FABRICSIM_BASE_PRESET"
"$build/tools/fabricsim/fabricsim" calibrate fit --gemm "$out/gemm.json" --nccl "$out/nccl.json" \
  --base "$base" -o "$out/profile.json" --holdout 5 --residuals | tee "$out/fit-report.txt"
echo "calibrate-on-gpu: wrote $out/profile.json; use it with --calibration $out/profile.json"
