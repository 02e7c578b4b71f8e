#pragma once
// Device side of `fabricsim-nccl-bench --check`: writes the input pattern of
// nccl_check_pattern.hpp into send buffers and counts result elements that differ from the
// expected value, so that checking an 8 GiB buffer needs no copy to the host.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tools/cuda/cuda_check.hpp"
#include "tools/cuda/nccl_check_pattern.hpp"

namespace fabricsim::tools::cuda {

template <typename T>
__global__ void fill_pattern_kernel(T* data, uint64_t count, int rank, bool sentinel) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const double v = sentinel ? kCheckSentinel : check_input_value(rank, i);
    data[i] = static_cast<T>(static_cast<float>(v));
  }
}

template <typename T>
__global__ void count_wrong_kernel(const T* result, uint64_t count, CollectiveOp op, int rank,
                                   int ranks, uint64_t per_rank_count, double tolerance,
                                   unsigned long long* wrong) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const double expected = check_expected_value(op, rank, ranks, per_rank_count, i);
    const double got = static_cast<float>(result[i]);
    const double scale = expected < 0 ? -expected : expected;
    const double diff = got > expected ? got - expected : expected - got;
    if (!(diff <= tolerance * (scale > 1 ? scale : 1))) ++local;
  }
  if (local > 0) atomicAdd(wrong, local);
}

inline unsigned grid_for(uint64_t count) {
  return static_cast<unsigned>(std::min<uint64_t>((count + 255) / 256, 65535));
}

/// Writes rank `rank`'s input pattern (or the sentinel) into `count` elements.
template <typename T>
void fill_pattern(T* data, uint64_t count, int rank, bool sentinel, cudaStream_t stream) {
  if (count == 0) return;
  fill_pattern_kernel<T><<<grid_for(count), 256, 0, stream>>>(data, count, rank, sentinel);
  check_cuda(cudaGetLastError(), "fill_pattern_kernel<<<>>>");
}

/// Adds the number of wrong elements of `result` to the device counter `wrong`.
template <typename T>
void count_wrong(const T* result, uint64_t count, CollectiveOp op, int rank, int ranks,
                 uint64_t per_rank_count, double tolerance, unsigned long long* wrong,
                 cudaStream_t stream) {
  if (count == 0) return;
  count_wrong_kernel<T><<<grid_for(count), 256, 0, stream>>>(result, count, op, rank, ranks,
                                                             per_rank_count, tolerance, wrong);
  check_cuda(cudaGetLastError(), "count_wrong_kernel<<<>>>");
}

}  // namespace fabricsim::tools::cuda
