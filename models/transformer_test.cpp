#include "models/transformer.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <stdexcept>

#include "models/model_presets.hpp"

using namespace fabricsim::models;

namespace {

const TransformerConfig& preset(const char* name) {
  const TransformerConfig* c = find_model(name);
  REQUIRE(c != nullptr);
  return *c;
}

/// A model small enough to count by hand.
TransformerConfig tiny() {
  TransformerConfig c;
  c.name = "tiny";
  c.layers = 2;
  c.hidden = 8;
  c.ffn = 32;
  c.heads = 2;
  c.kv_heads = 2;
  c.head_dim = 4;
  c.vocab = 10;
  c.seq_len = 16;
  return c;
}

}  // namespace

TEST_CASE("parameters of a small dense model, by hand", "[model]") {
  TransformerConfig c = tiny();
  ParameterCount p = count_parameters(c);
  // Untied: 2 * 10 * 8; attention 4 * 8 * 8 per layer; MLP 2 * 8 * 32; RMSNorm 8 twice + final.
  CHECK(p.embedding == 160);
  CHECK(p.attention == 2 * 256);
  CHECK(p.mlp_dense == 2 * 512);
  CHECK(p.norms == 2 * 16 + 8);
  CHECK(p.total == 160 + 512 + 1024 + 40);
  CHECK(p.active == p.total);

  // GQA shrinks k and v; SwiGLU adds a gate matrix; biases add LayerNorm shifts and bias vectors.
  c.kv_heads = 1;
  c.mlp = MlpKind::swiglu;
  c.bias = true;
  c.tied_embeddings = true;
  p = count_parameters(c);
  CHECK(p.embedding == 80);
  // q, o: 8x8 each; k, v: 8x4 each; biases q 8 + k 4 + v 4 + o 8.
  CHECK(p.attention == 2 * (64 + 64 + 32 + 32 + 24));
  // gate, up: 8x32 + 32 bias each; down: 32x8 + 8 bias.
  CHECK(p.mlp_dense == 2 * (3 * 256 + 2 * 32 + 8));
  CHECK(p.norms == 2 * 2 * 16 + 16);
}

TEST_CASE("MoE layers follow dense_layers and moe_layer_freq", "[model]") {
  TransformerConfig c = tiny();
  c.layers = 8;
  CHECK_FALSE(is_moe_layer(c, 0));
  c.moe = MoeConfig{4, 2, 16};
  CHECK(moe_layer_count(c) == 8);
  c.moe->dense_layers = 3;
  c.moe->moe_layer_freq = 2;
  // Layers 0-2 dense, then the even ones (the absolute index, as DeepSeek's and Megatron's
  // configs count).
  CHECK_FALSE(is_moe_layer(c, 2));
  CHECK_FALSE(is_moe_layer(c, 3));
  CHECK(is_moe_layer(c, 4));
  CHECK_FALSE(is_moe_layer(c, 5));
  CHECK(is_moe_layer(c, 6));
  CHECK(moe_layer_count(c) == 2);
  CHECK_THROWS_AS(is_moe_layer(c, 8), std::out_of_range);
  CHECK_THROWS_AS(is_moe_layer(c, -1), std::out_of_range);
}

TEST_CASE("MoE parameters: all experts in total, top_k plus shared active", "[model]") {
  TransformerConfig c = tiny();
  c.moe = MoeConfig{4, 2, 16};
  c.moe->shared_experts = 1;
  c.moe->shared_expert_ffn = 8;
  c.moe->dense_layers = 1;
  const ParameterCount p = count_parameters(c);
  const double expert = 2 * 8 * 16;
  CHECK(p.mlp_experts == 1 * 4 * expert);
  CHECK(p.mlp_dense == 2 * 8 * 32 + 2 * 8 * 8);  // layer 0 dense MLP, layer 1 shared expert
  CHECK(p.router == 8 * 4);
  CHECK(p.active == p.total - 2 * expert);
}

TEST_CASE("forward FLOPs per token, by hand", "[model]") {
  TransformerConfig c = tiny();
  const FlopsPerToken f = flops_per_token(c);
  CHECK(f.logits == 2 * 8 * 10);
  CHECK(f.dense_matmul == 2 * (2 * (256 + 512)) + f.logits);
  // QK^T and AV: 2 * 2 * seq * head_dim * heads per layer.
  CHECK(f.attention_scores == 2 * (2 * 2 * 16 * 4 * 2));
  CHECK(f.total(false) == f.dense_matmul + f.attention_scores);
  CHECK(f.total(true) == f.dense_matmul + 0.5 * f.attention_scores);
  CHECK(training_flops_per_token(c, true) == 3 * f.total(true));
}

TEST_CASE("GPT-style FLOPs reduce to Megatron's closed form", "[model]") {
  // 72 l h^2 + 12 l h s + 6 h V per token: our weight GEMMs, scores and logits times 3. Summed in
  // a different order, so equal to rounding, not bit for bit.
  int checked = 0;
  for (const TransformerConfig& c : model_presets()) {
    const bool gpt_style = c.mlp == MlpKind::gelu && c.ffn == 4 * c.hidden &&
                           c.kv_heads == c.heads && c.heads * c.head_dim == c.hidden && !c.moe &&
                           !c.mla;
    if (!gpt_style) continue;
    INFO(c.name);
    CHECK(training_flops_per_token(c, false) == Approx(megatron_flops_per_token(c)).epsilon(1e-12));
    ++checked;
  }
  CHECK(checked == 11);  // gpt3-175b and the ten Megatron SC'21 models
}

TEST_CASE("weight GEMM FLOPs are twice the active matmul weights", "[model]") {
  // Without biases, every active parameter except the input embedding and the norms is a matmul
  // weight a token multiplies once: dense_matmul = 2 x those.
  // (The main model: a multi-token-prediction module is outside `active`; its own test is below.)
  for (TransformerConfig c : model_presets()) {
    if (c.bias) continue;
    INFO(c.name);
    c.mtp_layers = 0;
    const ParameterCount p = count_parameters(c);
    const double input_embedding = static_cast<double>(c.vocab) * c.hidden;
    const double matmul_weights = p.active - input_embedding - p.norms;
    CHECK(flops_per_token(c).dense_matmul == Approx(2 * matmul_weights).epsilon(1e-12));
  }
}

TEST_CASE("MLA attention counts its low-rank projections", "[model]") {
  const TransformerConfig& c = preset("deepseek-v3");
  const ParameterCount p = count_parameters(c);
  // wq_a 7168x1536, wq_b 1536x128x192, wkv_a 7168x(512+64), wkv_b 512x128x(128+128), wo
  // 128x128x7168.
  const double per_layer =
      7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
  CHECK(p.attention == 61 * per_layer);
  // Scores: q/k width 192, v width 128, in the 61 layers and the MTP module's.
  CHECK(flops_per_token(c).attention_scores == 62 * 2.0 * 4096 * 128 * (192 + 128));
}

TEST_CASE("a multi-token-prediction module: a layer of the last kind, eh_proj and one more head",
          "[model][moe]") {
  TransformerConfig c = tiny();
  c.moe = MoeConfig{4, 2, 16};
  c.moe->shared_experts = 1;
  c.moe->shared_expert_ffn = 8;
  c.moe->dense_layers = 1;  // layer 1, the last, has experts: so has the module
  const FlopsPerToken f0 = flops_per_token(c);
  const ParameterCount p0 = count_parameters(c);
  c.mtp_layers = 1;
  const FlopsPerToken f1 = flops_per_token(c);
  const ParameterCount p1 = count_parameters(c);
  // Per token: attention projections 256, two routed experts 2 x 256, the shared one 128, the
  // router 8 x 4, eh_proj 2 x 8 x 8; a second pass through the 8 x 10 head; one more layer of
  // attention scores.
  CHECK(f1.dense_matmul - f0.dense_matmul == 2 * (256 + 2 * 256 + 128 + 32 + 128) + 2 * 8 * 10);
  CHECK(f1.logits == 2 * f0.logits);
  CHECK(f1.attention_scores == f0.attention_scores * 3 / 2);
  // Outside the published total: enorm, hnorm and its final norm (3 x 8), eh_proj 128, the
  // layer's attention 256 and two norms 16, all four experts 4 x 256, the shared one 128 and the
  // router 32.
  CHECK(p0.norms == 2 * 16 + 8);
  CHECK(p1.total == p0.total);
  CHECK(p1.mtp == 24 + 128 + 256 + 16 + 4 * 256 + 128 + 32);
  // A dense last layer gives a dense module.
  c.moe.reset();
  c.mtp_layers = 2;
  const FlopsPerToken dense = flops_per_token(c);
  const double layer_and_projection = 256 + 2 * 8 * 32 + 128;
  CHECK(dense.dense_matmul - flops_per_token(tiny()).dense_matmul ==
        2 * (2 * layer_and_projection + 2 * 8 * 10));
}

TEST_CASE("DeepSeek-V3 with its MTP module is the published 685B", "[model][moe]") {
  // 671B, and 14B for the module with its own copies of the embedding and the output head
  // (deepseek-ai/DeepSeek-V3 model card: "685B ... 671B of the Main Model weights and 14B of
  // the Multi-Token Prediction (MTP) Module weights").
  TransformerConfig c = preset("deepseek-v3");
  c.mtp_layers = 1;
  const ParameterCount p = count_parameters(c);
  const double copies = 2.0 * c.vocab * c.hidden;
  CHECK(p.mtp + copies == Approx(14e9).epsilon(0.05));
  CHECK(p.total + p.mtp + copies == Approx(685e9).epsilon(0.005));
}

TEST_CASE("QK-norm weighs one head width each for queries and keys per layer", "[model]") {
  TransformerConfig c = tiny();
  const double before = count_parameters(c).norms;
  c.qk_norm = true;
  CHECK(count_parameters(c).norms - before == 2 * 2 * 4);  // 2 layers x (q, k) x head_dim 4
  CHECK(flops_per_token(c).dense_matmul == flops_per_token(tiny()).dense_matmul);
}

TEST_CASE("sliding windows: which layers are banded and the keys a query sees", "[model]") {
  TransformerConfig c = tiny();
  CHECK_FALSE(is_windowed_layer(c, 0));
  c.sliding_window = 8;
  CHECK(is_windowed_layer(c, 0));
  CHECK(is_windowed_layer(c, 1));
  c.full_attention_every = 2;  // GPT-OSS: banded, full, banded, full...
  CHECK(is_windowed_layer(c, 0));
  CHECK_FALSE(is_windowed_layer(c, 1));
  CHECK_THROWS_AS(is_windowed_layer(c, 2), std::out_of_range);
  const TransformerConfig& gpt_oss = preset("gpt-oss-120b");
  CHECK(gpt_oss.sliding_window == 128);
  CHECK(is_windowed_layer(gpt_oss, 34));
  CHECK_FALSE(is_windowed_layer(gpt_oss, 35));
  // Queries see [i - w, i + w] of the sequence: 2w - w^2/S on average, S once w reaches S.
  CHECK(windowed_span(4096, 0) == 4096);
  CHECK(windowed_span(4096, 4096) == 4096);
  CHECK(windowed_span(4096, 128) == Approx(256 - 4.0));
  // Summed over every query of a short sequence, exactly.
  const int S = 64, w = 5;
  double keys = 0;
  for (int i = 0; i < S; ++i)
    keys += std::min(i + w, S - 1) - std::max(i - w, 0);
  CHECK(windowed_span(S, w) == Approx(keys / S).epsilon(0.02));
}
