#include "models/precision_recipe.hpp"

#include <catch2/catch.hpp>
#include <string_view>

using namespace fabricsim::models;
using fabricsim::topologies::Precision;

namespace {

PrecisionRecipe recipe_of(Precision p, const SoftwareStack& stack, bool blockwise = false,
                          int layers = 32,
                          fabricsim::topologies::GpuGeneration generation =
                              fabricsim::topologies::GpuGeneration::hopper) {
  TrainingConfig t;
  t.precision = p;
  t.fp8_blockwise = blockwise;
  return precision_recipe(t, stack, layers, generation);
}

const SoftwareStack& bridge() {
  return *find_software("megatron-bridge-25.09");
}

double bytes(const PrecisionRecipe& r, TensorRole role, Producer p, bool columnwise) {
  return r.bytes_per_element(role, p, columnwise);
}

}  // namespace

TEST_CASE("the recipe follows the precision, fp8_blockwise and the stack", "[precision]") {
  CHECK(recipe_of(Precision::bf16, default_software()).scaling == ScalingRecipe::none);
  CHECK(recipe_of(Precision::bf16, default_software(), true).scaling == ScalingRecipe::none);
  // TE's default recipe; NeMo 24.07 states delayed scaling; Megatron-Bridge 25.x current.
  CHECK(recipe_of(Precision::fp8, default_software()).scaling == ScalingRecipe::delayed);
  CHECK(recipe_of(Precision::fp8, *find_software("nemo-24.07")).scaling == ScalingRecipe::delayed);
  CHECK(recipe_of(Precision::fp8, bridge()).scaling == ScalingRecipe::current);
  CHECK(recipe_of(Precision::fp8, bridge(), true).scaling == ScalingRecipe::blockwise);
  CHECK(recipe_of(Precision::mxfp8, bridge()).scaling == ScalingRecipe::mxfp8);
  CHECK(recipe_of(Precision::nvfp4, bridge()).scaling == ScalingRecipe::nvfp4);
  // A run without a recipe keeps its own precision (FP16 stays FP16).
  CHECK(recipe_of(Precision::fp16, default_software()).linear(0) == Precision::fp16);
  CHECK(recipe_of(Precision::fp8, default_software()).linear(31) == Precision::fp8);
}

TEST_CASE("NVFP4 keeps the paper's first and last layers in BF16, the Megatron-Core stacks none",
          "[precision]") {
  // A stack without a policy of its own (SoftwareStack's defaults): the paper's 12B model, 62
  // blocks, the first two and the last eight in BF16.
  SoftwareStack with_paper = default_software();
  with_paper.nvfp4_bf16_first = SoftwareStack{}.nvfp4_bf16_first;
  with_paper.nvfp4_bf16_last = SoftwareStack{}.nvfp4_bf16_last;
  const PrecisionRecipe paper = recipe_of(Precision::nvfp4, with_paper, false, 62);
  CHECK(paper.bf16_first_layers == 2);
  CHECK(paper.bf16_last_layers == 8);
  CHECK_FALSE(paper.quantized(1));
  CHECK(paper.quantized(2));
  CHECK(paper.quantized(53));
  CHECK_FALSE(paper.quantized(54));
  CHECK(paper.linear(0) == Precision::bf16);
  CHECK(paper.linear(2) == Precision::nvfp4);
  // Scaled to a 31-layer model: round(1) first, round(4) last.
  const PrecisionRecipe half = recipe_of(Precision::nvfp4, with_paper, false, 31);
  CHECK(half.bf16_first_layers == 1);
  CHECK(half.bf16_last_layers == 4);
  // Megatron-Core's default (first_last_layers_bf16 off), which the unknown-framework default and
  // Megatron-Bridge keep.
  for (const SoftwareStack& none : {default_software(), bridge()}) {
    const PrecisionRecipe r = recipe_of(Precision::nvfp4, none, false, 62);
    CHECK(r.quantized(0));
    CHECK(r.quantized(61));
  }
  // FP8 recipes keep every layer quantized.
  CHECK(recipe_of(Precision::fp8, default_software(), false, 62).quantized(61));
}

TEST_CASE("bytes each recipe moves per BF16 element, in closed form", "[precision]") {
  const auto act = TensorRole::activation;
  const auto weight = TensorRole::weight;
  const auto alone = Producer::standalone;
  const auto fused = Producer::fused;
  SECTION("delayed: one cast + transpose, or a transpose of the norm's FP8 output") {
    const PrecisionRecipe r = recipe_of(Precision::fp8, default_software());
    CHECK(bytes(r, act, alone, true) == 2 + 1 + 1);
    CHECK(bytes(r, act, alone, false) == 2 + 1);
    CHECK(bytes(r, act, fused, true) == 1 + 1);
    CHECK(r.quantize(act, fused, false).empty());
    CHECK(r.quantize(act, alone, true).size() == 1);
    CHECK(bytes(r, weight, fused, true) == 4);  // weights are never a norm's output
    CHECK(r.scale_update_bytes(10) == 2 * 4 * 1024 * 10);
  }
  SECTION("current: an amax read pass and a scale kernel before the cast") {
    const PrecisionRecipe r = recipe_of(Precision::fp8, bridge());
    CHECK(bytes(r, act, alone, true) == 2 + (2 + 1 + 1));
    CHECK(r.quantize(act, alone, true).size() == 3);
    CHECK(bytes(r, act, fused, true) == 2 + 1 + 1);  // the norm computes the amax
    CHECK(r.quantize(act, fused, true).size() == 2);
    CHECK(r.quantize(act, fused, true).front().fixed_bytes > 0);
    CHECK(r.scale_update_bytes(10) == 0);
  }
  SECTION("per-tensor FP8 on Blackwell: one copy serves both layouts, no transpose") {
    const auto blackwell = fabricsim::topologies::GpuGeneration::blackwell;
    const PrecisionRecipe delayed =
        recipe_of(Precision::fp8, default_software(), false, 32, blackwell);
    CHECK(bytes(delayed, act, alone, true) == 2 + 1);
    CHECK(std::string_view(delayed.quantize(act, alone, true).front().name) == "fp8_cast");
    CHECK(delayed.quantize(act, fused, true).empty());  // the norm's FP8 output is the copy
    const PrecisionRecipe current = recipe_of(Precision::fp8, bridge(), false, 32, blackwell);
    CHECK(bytes(current, act, alone, true) == 2 + (2 + 1));
    CHECK(current.transposes());
    CHECK_FALSE(current.keeps_transpose());
    CHECK(recipe_of(Precision::fp8, bridge()).keeps_transpose());
    // Block scales are along K: two copies on any GPU.
    CHECK(bytes(recipe_of(Precision::mxfp8, bridge(), false, 32, blackwell), act, alone, true) ==
          2 + 2 * (1 + 1.0 / 32));
  }
  SECTION("blockwise: both copies from BF16, one FP32 scale per 1x128 tile / 128x128 block") {
    const PrecisionRecipe r = recipe_of(Precision::fp8, bridge(), true);
    CHECK(bytes(r, act, alone, true) == 2 + 2 * (1 + 4.0 / 128));
    CHECK(bytes(r, act, fused, true) == 2 + 2 * (1 + 4.0 / 128));  // TE fuses no blockwise cast
    CHECK(bytes(r, act, alone, false) == 2 + 1 + 4.0 / 128);
    CHECK(bytes(r, weight, alone, true) == 2 + 2 * (1 + 4.0 / (128 * 128)));
    CHECK(r.quantize(act, alone, true).size() == 1);
  }
  SECTION("MXFP8: both copies from BF16, one E8M0 byte per 32 elements") {
    const PrecisionRecipe r = recipe_of(Precision::mxfp8, bridge());
    CHECK(bytes(r, act, alone, true) == 2 + 2 * (1 + 1.0 / 32));
    CHECK(bytes(r, act, alone, false) == 2 + 1 + 1.0 / 32);
  }
  SECTION("NVFP4: amax pass, rowwise cast, Hadamard-transformed columnwise cast") {
    const PrecisionRecipe r = recipe_of(Precision::nvfp4, bridge());
    CHECK(bytes(r, act, alone, true) == 2 + 2 * (2 + 0.5 + 1.0 / 16));
    CHECK(r.quantize(act, alone, true).size() == 3);
    CHECK(bytes(r, TensorRole::gradient, alone, true) == 2 + 2 * (2 + 0.5 + 1.0 / 16));
    CHECK(bytes(r, act, alone, false) == 2 + 2 + 0.5 + 1.0 / 16);
    CHECK(bytes(r, weight, alone, true) == 2 + 2 + 2 * (0.5 + 1.0 / 256));
    CHECK(r.quantize(weight, alone, true).size() == 2);
  }
  CHECK(recipe_of(Precision::bf16, bridge()).quantize(act, alone, true).empty());
}
