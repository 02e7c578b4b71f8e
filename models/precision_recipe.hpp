#pragma once
// Low-precision training recipes as mechanisms: which GEMMs a run quantizes, and the kernels that
// quantize each GEMM input with the HBM bytes they move. One recipe per run, derived from the
// training precision, `fp8_blockwise` and the software stack: per-tensor delayed scaling (amax
// history), per-tensor current scaling, 1x128/128x128 blockwise FP8, MXFP8 and NVFP4. Each
// constant cites the recipe description it comes from (precision_recipe.cpp, docs/models.md).

#include <cstdint>
#include <vector>

#include "models/parallel_plan.hpp"
#include "models/software_stack.hpp"
#include "topologies/gpu_spec.hpp"

namespace fabricsim::models {

enum class ScalingRecipe : uint8_t {
  none,       ///< BF16/FP16: nothing is quantized
  delayed,    ///< FP8, one scale per tensor from the amax history of earlier steps
  current,    ///< FP8, one scale per tensor from this tensor's own amax (a read pass first)
  blockwise,  ///< FP8, 1x128 activation/gradient tiles and 128x128 weight blocks, FP32 scales
  mxfp8,      ///< FP8 E4M3, 32-element blocks with E8M0 scales (OCP MX)
  nvfp4,      ///< FP4 E2M1, 16-element blocks with E4M3 scales and an FP32 tensor scale
};
const char* to_string(ScalingRecipe r);

/// Which operand of a linear layer is quantized.
enum class TensorRole : uint8_t { activation, gradient, weight };

/// Whether the kernel that produces a GEMM input can take the quantization into its own epilogue
/// (Transformer Engine's fused norm/activation + cast), or the input is a tensor written in BF16
/// by another kernel (attention output, an incoming gradient, permuted tokens).
enum class Producer : uint8_t { standalone, fused };

/// One kernel of a quantization: HBM bytes moved per element of the BF16 tensor, plus a few
/// bytes of scalars (a launch-bound kernel when the first is 0).
struct QuantKernel {
  const char* name;
  double bytes_per_element = 0;
  double fixed_bytes = 0;
};

struct PrecisionRecipe {
  ScalingRecipe scaling = ScalingRecipe::none;
  /// The run's precision: that of its quantized GEMMs, or of every linear GEMM without a recipe.
  topologies::Precision gemm = topologies::Precision::bf16;
  /// Transformer layers at the start and at the end of the model whose linear layers stay BF16.
  int bf16_first_layers = 0;
  int bf16_last_layers = 0;
  int layers = 0;
  /// The GPU's FP8 GEMMs take only the TN layout (Hopper and earlier): a per-tensor-scaled tensor
  /// that a GEMM also reads columnwise is kept as a second, transposed FP8 copy. Blackwell's FP8
  /// GEMMs read either layout from the one copy, so Transformer Engine makes no transpose there
  /// (is_non_tn_fp8_gemm_supported, compute capability 10.x and later; quantizer.cpp
  /// with_transpose = columnwise_usage && !non_tn, TE 2.9). Block-scaled copies are quantized
  /// along the GEMM's K dimension either way.
  bool transposed_copy = true;

  bool quantizes() const { return scaling != ScalingRecipe::none; }
  /// Whether layer `layer` (0-based) runs its linear layers in the low precision.
  bool quantized(int layer) const;
  /// The precision of the linear GEMMs of `layer` (BF16 for a kept layer of a low-precision run).
  topologies::Precision linear(int layer) const;
  /// The kernels that quantize one GEMM input, in issue order. `columnwise`: a second, transposed
  /// copy is needed too (a weight-gradient GEMM consumes it; not for frozen LoRA bases).
  std::vector<QuantKernel> quantize(TensorRole role, Producer producer, bool columnwise) const;
  /// Per-tensor scales (delayed, current): the columnwise copy is the exact transpose of the
  /// rowwise one, so it can be made after a gather; block scales do not transpose.
  bool transposes() const {
    return scaling == ScalingRecipe::delayed || scaling == ScalingRecipe::current;
  }
  /// Whether a tensor needed columnwise too gets a second per-tensor FP8 copy, its transpose.
  bool keeps_transpose() const { return transposes() && transposed_copy; }
  /// Bytes per parameter of the quantized weight copies Transformer Engine holds for a step: the
  /// rowwise copy the forward GEMM reads and the columnwise one the data gradient reads (a
  /// weight quantizer's usage is rowwise and columnwise while gradients are enabled,
  /// module/base.py, TE 2.9), with their block scales; 0 without a recipe. `transpose_cached`
  /// false: a per-tensor transpose is made for each backward and not held
  /// (SoftwareStack::parameter_transpose_cache).
  double weight_copy_bytes(bool transpose_cached) const;
  /// Whether a tensor quantized on a sequence shard needs the amax of the whole tensor first: one
  /// scale shared by the shards (current scaling; NVFP4's FP32 tensor scale), so TE all-reduces
  /// the shard's amax over the TP group (with_amax_reduction) before the scale and the cast.
  bool reduces_amax() const {
    return scaling == ScalingRecipe::current || scaling == ScalingRecipe::nvfp4;
  }
  /// Bytes per element of one quantized copy of a tensor in `role`, with its share of the block
  /// scales (weights take the 2D blocks of blockwise FP8 and NVFP4); BF16 without a recipe.
  double copy_size(TensorRole role) const;
  /// Bytes per element of the quantized copy a tensor-parallel all-gather moves (TE gathers
  /// quantized inputs in their low precision, with their block scales).
  double gathered_bytes() const;
  /// Bytes moved per element by quantize() (the sum over its kernels).
  double bytes_per_element(TensorRole role, Producer producer, bool columnwise) const;
  /// Bytes of the once-per-pass scale update for `tensors` quantized tensors (delayed scaling's
  /// amax-history roll and scale computation); 0 for the other recipes.
  double scale_update_bytes(int tensors) const;
};

/// The recipe a run uses: none unless the precision is fp8/mxfp8/nvfp4; for fp8, blockwise with
/// `training.fp8_blockwise`, else the stack's per-tensor scaling (current or delayed); NVFP4 keeps
/// the stack's fraction of first and last layers in BF16; a transposed per-tensor copy before
/// Blackwell.
PrecisionRecipe precision_recipe(const TrainingConfig& training, const SoftwareStack& software,
                                 int layers, topologies::GpuGeneration generation);

}  // namespace fabricsim::models
