#!/usr/bin/env bash
# Every GPU measurement fabricsim's calibration uses, in one call on a GPU machine that has the
# CUDA toolkit, the NVIDIA driver and PyTorch but not fabricsim's build dependencies (a lent or
# rented node): the tools are built here and carried there.
#
#   tools/cuda/bare-gpu.sh pack DIR        on the build machine: copies the built
#                                          fabricsim-gemm-bench, the libraries a bare machine
#                                          lacks (libfmt) and the shape list into DIR
#   tools/cuda/bare-gpu.sh measure DIR OUT on the GPU machine: the GEMM sweep (about 85 s on an
#                                          H200), tools/cuda/kernel_bench.py (about 150 s) and
#                                          tools/cuda/step_trace.py (about 1 min), each under its
#                                          own time limit, results and logs in OUT
#
# FABRICSIM_BUILD_DIR (default <repo>/build) is where `pack` finds the built tool. cuBLASLt and
# the CUDA runtime are the GPU machine's own (searched under /usr/local and /opt).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() {
  echo "bare-gpu: $*" >&2
  exit 2
}

case "${1:-}" in
  pack)
    dir="${2:?usage: bare-gpu.sh pack DIR}"
    tool="${FABRICSIM_BUILD_DIR:-$repo/build}/tools/cuda/fabricsim-gemm-bench"
    [[ -x "$tool" ]] || die "$tool not built (nvcc and cuBLASLt are needed at configure time)"
    mkdir -p "$dir/lib"
    cp "$tool" "$dir/"
    # The shared libraries that are neither the CUDA toolkit's nor the C/C++ runtime's.
    ldd "$tool" | awk '/=> \// {print $3}' | grep -E 'libfmt' | xargs -r -I{} cp -L {} "$dir/lib/"
    python3 "$repo/tools/cuda/gemm_shapes.py" >"$dir/gemm-shapes.json"
    ls -l "$dir" "$dir/lib"
    ;;
  measure)
    dir="${2:?usage: bare-gpu.sh measure DIR OUT}"
    out="${3:?usage: bare-gpu.sh measure DIR OUT}"
    command -v nvidia-smi >/dev/null || die "nvidia-smi not found: run this on the GPU machine"
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu \
      --format=csv | tee "$out/gpu.txt"
    cublas=$(find /usr/local /opt -name 'libcublasLt.so.*' 2>/dev/null | head -n 1)
    [[ -n "$cublas" ]] || die "no libcublasLt on this machine"
    export LD_LIBRARY_PATH="$dir/lib:$(dirname "$cublas"):${LD_LIBRARY_PATH:-}"
    export PYTHONUNBUFFERED=1
    start=$SECONDS
    timeout 300 "$dir/fabricsim-gemm-bench" --shapes "$dir/gemm-shapes.json" --warmup 10 \
      --iters 50 -o "$out/gemm.json" 2>"$out/gemm.log" || echo "bare-gpu: GEMM sweep rc=$?"
    echo "bare-gpu: GEMM sweep $((SECONDS - start)) s"
    start=$SECONDS
    timeout 300 python3 "$repo/tools/cuda/kernel_bench.py" -o "$out/kernels.json" \
      >"$out/kernels.log" 2>&1 || echo "bare-gpu: kernel_bench rc=$?"
    echo "bare-gpu: kernel_bench $((SECONDS - start)) s"
    start=$SECONDS
    timeout 180 python3 "$repo/tools/cuda/step_trace.py" -o "$out/step-trace.json" \
      >"$out/step_trace.log" 2>&1 || echo "bare-gpu: step_trace rc=$?"
    echo "bare-gpu: step_trace $((SECONDS - start)) s"
    tail -n 40 "$out/kernels.log"
    ;;
  *)
    die "usage: bare-gpu.sh pack DIR | measure DIR OUT"
    ;;
esac
