#include "models/precision_recipe.hpp"

#include <cmath>

namespace fabricsim::models {

using topologies::Precision;

namespace {

// Element sizes. GEMM inputs arrive in BF16 (2 bytes); FP8 E4M3/E5M2 take 1 byte, FP4 E2M1 half
// a byte (OCP Microscaling Formats (MX) v1.0 spec, section 5; NVIDIA, "Pretraining Large Language
// Models with NVFP4", arXiv:2509.25149, section 2).
constexpr double kHigh = 2.0;
constexpr double kFp8 = 1.0;
constexpr double kFp4 = 0.5;
// A scale kernel reads one FP32 amax and writes one FP32 scale (and its inverse).
constexpr double kScalarBytes = 12.0;

// Blockwise FP8 (DeepSeek-V3, arXiv:2412.19437 section 3.3.1): activations and gradients in 1x128
// tiles, weights in 128x128 blocks, one FP32 scale each (Transformer Engine Float8BlockScaling:
// x_block_scaling_dim 1, w_block_scaling_dim 2, "scaling factors are float32").
constexpr double kTile = 128.0;
constexpr double kWeightBlock = 128.0 * 128.0;
constexpr double kFp32Scale = 4.0;
// MXFP8: 32-element blocks sharing one E8M0 (1-byte) scale (OCP MX v1.0, table 1; TE
// MXFP8BlockScaling).
constexpr double kMxBlock = 32.0;
// NVFP4: 16-element blocks with one E4M3 (1-byte) scale plus one FP32 scale per tensor; weights
// scaled in 2D 16x16 blocks (arXiv:2509.25149 sections 2 and 4.3; TE NVFP4BlockScaling).
constexpr double kNvBlock = 16.0;
constexpr double kNvWeightBlock = 16.0 * 16.0;
// Delayed scaling keeps an amax history of 1024 steps per tensor (TE DelayedScaling default
// amax_history_len=1024; Megatron-Bridge bf16_with_fp8_delayed_scaling_mixed uses the same).
constexpr double kAmaxHistory = 1024.0;

/// A quantized copy: its elements and their share of the block scales.
double copy_bytes(double element, double scale_bytes, double block) {
  return element + scale_bytes / block;
}

}  // namespace

const char* to_string(ScalingRecipe r) {
  switch (r) {
    case ScalingRecipe::none:
      return "none";
    case ScalingRecipe::delayed:
      return "delayed";
    case ScalingRecipe::current:
      return "current";
    case ScalingRecipe::blockwise:
      return "blockwise";
    case ScalingRecipe::mxfp8:
      return "mxfp8";
    case ScalingRecipe::nvfp4:
      return "nvfp4";
  }
  return "?";
}

bool PrecisionRecipe::quantized(int layer) const {
  return quantizes() && layer >= bf16_first_layers && layer < layers - bf16_last_layers;
}

Precision PrecisionRecipe::linear(int layer) const {
  if (!quantizes()) return gemm;  // a BF16/FP16 run
  return quantized(layer) ? gemm : Precision::bf16;
}

double PrecisionRecipe::copy_size(TensorRole role) const {
  const bool weight = role == TensorRole::weight;
  switch (scaling) {
    case ScalingRecipe::none:
      return kHigh;
    case ScalingRecipe::delayed:
    case ScalingRecipe::current:
      return kFp8;
    case ScalingRecipe::blockwise:
      return copy_bytes(kFp8, kFp32Scale, weight ? kWeightBlock : kTile);
    case ScalingRecipe::mxfp8:
      return copy_bytes(kFp8, 1.0, kMxBlock);
    case ScalingRecipe::nvfp4:
      return copy_bytes(kFp4, 1.0, weight ? kNvWeightBlock : kNvBlock);
  }
  return kHigh;
}

std::vector<QuantKernel> PrecisionRecipe::quantize(TensorRole role, Producer producer,
                                                   bool columnwise) const {
  const double copies = columnwise ? 2.0 : 1.0;
  const bool weight = role == TensorRole::weight;
  const double copy = copy_size(role);
  // Per-tensor scales: the columnwise copy is the rowwise one transposed, where the GPU needs one.
  const bool transpose = columnwise && transposed_copy;
  const QuantKernel cast = transpose ? QuantKernel{"cast_transpose", kHigh + 2 * copy}
                                     : QuantKernel{"fp8_cast", kHigh + copy};
  switch (scaling) {
    case ScalingRecipe::none:
      return {};
    case ScalingRecipe::delayed:
      // The scale is known before the tensor exists, so TE writes FP8 straight from the norm that
      // produces a LayerNormLinear input, and transposes that FP8 copy for the weight gradient
      // (per-tensor scales transpose exactly); any other input is one fused cast + transpose
      // that also records its amax (TE cast_transpose).
      if (producer == Producer::fused && !weight) {
        if (!transpose) return {};
        return {{"fp8_transpose", 2 * copy}};
      }
      return {cast};
    case ScalingRecipe::current:
      // The scale comes from this tensor's amax: a read pass (fused into the producing norm when
      // there is one), a one-thread scale kernel, then the cast (TE Float8CurrentScalingQuantizer:
      // nvte_compute_amax, nvte_compute_scale_from_amax, nvte_quantize_v2).
      if (producer == Producer::fused && !weight) return {{"fp8_scale", 0, kScalarBytes}, cast};
      return {{"fp8_amax", kHigh}, {"fp8_scale", 0, kScalarBytes}, cast};
    case ScalingRecipe::blockwise:
      // Scales are local to a block: no amax pass. 1x128 tiles do not transpose, so the
      // columnwise copy is quantized again from the BF16 tensor in the same kernel (TE
      // Float8BlockScaling: "both versions are computed from the high precision input").
      return {{"cast_blockwise", kHigh + copies * copy}};
    case ScalingRecipe::mxfp8:
      // As blockwise, with 32-element E8M0 blocks along the GEMM's K dimension: rowwise and
      // columnwise copies each from BF16 (TE MXFP8BlockScaling).
      return {{"cast_mxfp8", kHigh + copies * copy}};
    case ScalingRecipe::nvfp4:
      // The FP32 tensor scale needs the tensor's amax first. Weights: 2D 16x16 blocks, no
      // Hadamard transform. Activations and gradients: the rowwise copy is quantized directly;
      // the columnwise copy, which feeds the weight gradient, goes through a 16x16 random
      // Hadamard transform fused with its cast, and its amax is that of the transformed tensor,
      // computed in the same read as the rowwise amax (TE NVFP4Quantizer:
      // nvte_hadamard_transform_amax, nvte_quantize_v2,
      // nvte_hadamard_transform_cast_fusion_columnwise). Gradients round stochastically inside
      // the cast kernels: no extra bytes.
      if (weight) return {{"fp8_amax", kHigh}, {"cast_nvfp4", kHigh + copies * copy}};
      if (!columnwise) return {{"fp8_amax", kHigh}, {"cast_nvfp4", kHigh + copy}};
      return {
          {"fp8_amax_rht", kHigh}, {"cast_nvfp4", kHigh + copy}, {"cast_nvfp4_rht", kHigh + copy}};
  }
  return {};
}

double PrecisionRecipe::bytes_per_element(TensorRole role, Producer producer,
                                          bool columnwise) const {
  double bytes = 0;
  for (const QuantKernel& k : quantize(role, producer, columnwise))
    bytes += k.bytes_per_element;
  return bytes;
}

double PrecisionRecipe::gathered_bytes() const {
  return copy_size(TensorRole::activation);
}

double PrecisionRecipe::weight_copy_bytes(bool transpose_cached) const {
  if (!quantizes()) return 0;
  // One per-tensor FP8 copy serves both layouts where no transpose is kept.
  const bool one_copy = transposes() && (!transposed_copy || !transpose_cached);
  return (one_copy ? 1.0 : 2.0) * copy_size(TensorRole::weight);
}

double PrecisionRecipe::scale_update_bytes(int tensors) const {
  if (scaling != ScalingRecipe::delayed) return 0;
  // Read and write every tensor's FP32 amax history once (TE
  // nvte_delayed_scaling_recipe_amax_and_scale_update_after_reduction, one bulk kernel).
  return 2.0 * 4.0 * kAmaxHistory * tensors;
}

PrecisionRecipe precision_recipe(const TrainingConfig& training, const SoftwareStack& software,
                                 int layers, topologies::GpuGeneration generation) {
  PrecisionRecipe r;
  r.layers = layers;
  r.transposed_copy = generation != topologies::GpuGeneration::blackwell;
  r.gemm = training.precision;
  switch (training.precision) {
    case Precision::fp8:
      if (training.fp8_blockwise) {
        r.scaling = ScalingRecipe::blockwise;
      } else {
        r.scaling = software.fp8_current_scaling ? ScalingRecipe::current : ScalingRecipe::delayed;
      }
      break;
    case Precision::mxfp8:
      r.scaling = ScalingRecipe::mxfp8;
      break;
    case Precision::nvfp4:
      r.scaling = ScalingRecipe::nvfp4;
      r.bf16_first_layers = static_cast<int>(std::lround(software.nvfp4_bf16_first * layers));
      r.bf16_last_layers = static_cast<int>(std::lround(software.nvfp4_bf16_last * layers));
      break;
    default:
      break;
  }
  return r;
}

}  // namespace fabricsim::models
