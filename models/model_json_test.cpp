#include "models/model_json.hpp"

#include <catch2/catch.hpp>

#include "models/model_presets.hpp"

using namespace fabricsim::models;
using fabricsim::sim::InputError;
using fabricsim::sim::parse_json_text;

namespace {

TransformerConfig read(const char* text) {
  return read_model(parse_json_text(text, "m.json").root());
}

}  // namespace

TEST_CASE("a preset with overrides", "[model]") {
  const TransformerConfig c = read(R"({"preset": "llama3-8b", "seq_len": 4096})");
  TransformerConfig expected = *find_model("llama3-8b");
  expected.seq_len = 4096;
  CHECK(c == expected);

  // Overriding the shape recomputes head_dim; an MHA preset stays MHA, a GQA preset keeps kv_heads.
  const TransformerConfig gpt = read(R"({"preset": "gpt3-175b", "heads": 64, "name": "gpt-64h"})");
  CHECK(gpt.name == "gpt-64h");
  CHECK(gpt.kv_heads == 64);
  CHECK(gpt.head_dim == 192);
  CHECK(read(R"({"preset": "llama3-70b", "heads": 32})").kv_heads == 8);

  // A nested override starts from the preset's MoE block.
  const TransformerConfig moe = read(R"({"preset": "mixtral-8x7b", "moe": {"top_k": 1}})");
  CHECK(moe.moe->top_k == 1);
  CHECK(moe.moe->experts == 8);
}

TEST_CASE("a full description with defaults", "[model]") {
  const TransformerConfig c = read(R"({"name": "m", "layers": 4, "hidden": 256, "ffn": 1024,
      "heads": 8, "vocab": 1000, "seq_len": 512,
      "moe": {"experts": 4, "top_k": 2, "expert_ffn": 512}})");
  CHECK(c.kv_heads == 8);
  CHECK(c.head_dim == 32);
  CHECK(c.mlp == MlpKind::gelu);
  CHECK_FALSE(c.tied_embeddings);
  CHECK_FALSE(c.bias);
  REQUIRE(c.moe.has_value());
  CHECK(c.moe->moe_layer_freq == 1);
  CHECK(c.moe->capacity_factor == 0.0);  // dropless, Megatron-Core's default
  CHECK_FALSE(c.mla.has_value());
  // An explicit head_dim lifts the divisibility rule.
  CHECK(read(R"({"name": "m", "layers": 4, "hidden": 100, "ffn": 400, "heads": 3, "head_dim": 32,
      "vocab": 1000, "seq_len": 512})")
            .head_dim == 32);
}

TEST_CASE("every preset round-trips through JSON", "[model]") {
  for (const TransformerConfig& c : model_presets()) {
    INFO(c.name);
    const auto doc = fabricsim::sim::JsonDocument(model_to_json(c), "round-trip");
    CHECK(read_model(doc.root()) == c);
  }
}

TEST_CASE("bad model input names the place", "[model][bad-input]") {
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "layer": 3})"),
                    Catch::StartsWith("m.json: /layer: unknown key 'layer'"));
  CHECK_THROWS_WITH(
      read(R"({"preset": "llama9"})"),
      Catch::StartsWith("m.json: /preset: expected a model preset (one of: gpt3-175b, "
                        "megatron-1.7b,") &&
          Catch::Contains("deepseek-v3") && Catch::EndsWith("got \"llama9\""));
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "hidden": 0})"),
                    "m.json: /hidden: expected a positive integer, got 0");
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "moe": {"experts": 8, "top_k": 2,
                        "expert_ffn": -1}})"),
                    "m.json: /moe/expert_ffn: expected a positive integer, got -1");
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "kv_heads": 5})"),
                    "m.json: /kv_heads: expected kv_heads dividing heads (32), got 5");
  CHECK_THROWS_WITH(read(R"({"preset": "mixtral-8x7b", "moe": {"top_k": 9}})"),
                    "m.json: /moe/top_k: expected top_k at most experts (8), got 9");
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "hidden": 4001})"),
                    Catch::StartsWith("m.json: /hidden: expected heads dividing hidden (4001)"));
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "heads": 30})"),
                    Catch::StartsWith("m.json: /heads: expected heads dividing hidden (4096)"));
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "mlp": "relu"})"),
                    Catch::StartsWith("m.json: /mlp: expected one of gelu, swiglu, squared_relu"));
  CHECK_THROWS_WITH(read(R"({"name": "m", "layers": 4})"),
                    "m.json: /hidden: missing required field");
  CHECK_THROWS_WITH(read(R"({"preset": "deepseek-v3", "moe": {"dense_layers": 61}})"),
                    Catch::StartsWith("m.json: /moe/dense_layers: expected dense_layers from 0"));
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "mla": {"kv_lora_rank": 512}})"),
                    "m.json: /mla/qk_nope_head_dim: missing required field");
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "seq_len": 3000000000})"),
                    Catch::StartsWith("m.json: /seq_len: expected a positive integer below 2^31"));
  CHECK_THROWS_WITH(read(R"(["llama3-8b"])"), Catch::StartsWith("m.json: /: expected an object"));
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "sliding_window": -4})"),
                    Catch::StartsWith("m.json: /sliding_window: expected a non-negative integer"));
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "full_attention_every": 2})"),
                    "m.json: /full_attention_every: expected a sliding_window for "
                    "full_attention_every 2 to interleave with, got none");
  CHECK_THROWS_WITH(read(R"({"preset": "llama3-8b", "position": "absolute"})"),
                    "m.json: /position: expected one of rope, yarn, learned, alibi, got "
                    "\"absolute\"");
  CHECK(read(R"({"preset": "llama3-8b", "position": "alibi"})").position ==
        PositionEncoding::alibi);
  // GPT-OSS's window can be switched off, and its alternation with it.
  CHECK(read(R"({"preset": "gpt-oss-120b", "sliding_window": 0, "full_attention_every": 0})")
            .sliding_window == 0);
}

TEST_CASE("validate_model checks configs built in code", "[model][bad-input]") {
  TransformerConfig c = *find_model("deepseek-v3");
  c.moe->top_k = 300;
  CHECK_THROWS_WITH(validate_model(c, "scenario.json"),
                    "scenario.json: /moe/top_k: expected top_k at most experts (256), got 300");
  c = *find_model("llama2-7b");
  c.vocab = 0;
  CHECK_THROWS_AS(validate_model(c, "x"), InputError);
  c = *find_model("llama2-7b");
  c.mla = MlaConfig{0, 0, 128, 64, 128};
  CHECK_THROWS_WITH(validate_model(c, "x"),
                    "x: /mla/kv_lora_rank: expected a positive integer, got 0");
}
