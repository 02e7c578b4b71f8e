#pragma once
// Random GEMM inputs generated on the device from a seed: a counter-based hash (splitmix64) gives
// element i its value, so no curand state and no host copy is needed, and the data is the same for
// the same seed. Values are uniform in [-1, 1): never zero everywhere, never constant (tensor
// cores can be faster on constant or zero data) and in range for fp8.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tools/cuda/cuda_check.hpp"

namespace fabricsim::tools::cuda {

__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void fill_random_kernel(T* data, uint64_t count, uint64_t seed) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint64_t bits = splitmix64(seed ^ splitmix64(i));
    const float u = static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;  // 24 bits
    data[i] = static_cast<T>(u);
  }
}

/// Fills `count` elements of type T at `data` on `stream`.
template <typename T>
void fill_random(T* data, uint64_t count, uint64_t seed, cudaStream_t stream) {
  if (count == 0) return;
  constexpr uint64_t kThreads = 256;
  const uint64_t blocks = std::min<uint64_t>((count + kThreads - 1) / kThreads, 65535);
  fill_random_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(data, count, seed);
  check_cuda(cudaGetLastError(), "fill_random_kernel<<<>>>");
}

}  // namespace fabricsim::tools::cuda
