#include "models/model_presets.hpp"

#include <catch2/catch.hpp>
#include <set>

#include "models/model_json.hpp"

using namespace fabricsim::models;

namespace {

struct Published {
  const char* name;
  double total;   ///< parameters, billions, as published
  double active;  ///< 0 when the model is dense
};

}  // namespace

TEST_CASE("preset parameter counts match the published ones", "[model]") {
  // Tolerance 2%: published counts are rounded (names such as "70B" or Table 1's one decimal)
  // and we do not count learned position embeddings (<0.1%). Exact counts are used where the
  // model card gives them (Llama 2 7B is 6.74B, Llama 3 8B 8.03B, 70B 70.6B); the Megatron 1.7B
  // model is 1.65B by the paper's own parameter formula and is rounded up in its name, so it is
  // compared against 1.65.
  static const Published kPublished[] = {
      {"gpt3-175b", 175.0, 0},
      {"megatron-1.7b", 1.65, 0},
      {"megatron-3.6b", 3.6, 0},
      {"megatron-7.5b", 7.5, 0},
      {"megatron-18.4b", 18.4, 0},
      {"megatron-39.1b", 39.1, 0},
      {"megatron-76.1b", 76.1, 0},
      {"megatron-145.6b", 145.6, 0},
      {"megatron-310.1b", 310.1, 0},
      {"megatron-529.6b", 529.6, 0},
      {"megatron-1t", 1008.0, 0},
      {"llama2-7b", 6.74, 0},
      {"llama2-13b", 13.0, 0},
      {"llama2-70b", 69.0, 0},
      {"llama3-8b", 8.03, 0},
      {"llama3-70b", 70.6, 0},
      {"llama3-405b", 405.0, 0},
      {"mixtral-8x7b", 46.7, 12.9},
      {"mixtral-8x22b", 141.0, 39.0},
      {"deepseek-v3", 671.0, 37.0},
      {"nemotron-4-340b", 341.0, 0},
      {"nemotron-3-8b", 8.0, 0},
      {"nemotron-3-22b", 22.0, 0},
      {"qwen3-30b-a3b", 30.5, 3.3},
      {"qwen3-235b-a22b", 235.0, 22.0},
      // The model card's 5.13B active counts the 0.58B embedding once; untied, we count the
      // output layer too (the convention of Mixtral and DeepSeek-V3 above).
      {"gpt-oss-120b", 116.83, 5.13 + 0.58},
  };
  REQUIRE(std::size(kPublished) == model_presets().size());
  for (const Published& row : kPublished) {
    INFO(row.name);
    const TransformerConfig* c = find_model(row.name);
    REQUIRE(c != nullptr);
    const ParameterCount p = count_parameters(*c);
    // Nemotron-3's names round more: 8.5B and 21.3B by NeMo's architecture, 2.1B and 3.1B of
    // them the untied 256k-token embeddings.
    const bool rounded_name = std::string_view(row.name).rfind("nemotron-3", 0) == 0;
    CHECK(p.total * 1e-9 == Approx(row.total).epsilon(rounded_name ? 0.07 : 0.02));
    if (row.active > 0) {
      CHECK(p.active * 1e-9 == Approx(row.active).epsilon(0.02));
    } else {
      CHECK(p.active == p.total);
    }
  }
}

TEST_CASE("Nemotron-4 340B splits as its report does", "[model]") {
  // 9.4B embedding + 331.6B non-embedding (arXiv:2406.11704).
  const ParameterCount p = count_parameters(*find_model("nemotron-4-340b"));
  CHECK(p.embedding * 1e-9 == Approx(9.4).epsilon(0.01));
  CHECK((p.total - p.embedding) * 1e-9 == Approx(331.6).epsilon(0.01));
}

TEST_CASE("every preset is valid, cited and uniquely named", "[model]") {
  std::set<std::string> names;
  for (const TransformerConfig& c : model_presets()) {
    INFO(c.name);
    CHECK_NOTHROW(validate_model(c, "presets"));
    CHECK_FALSE(c.source.empty());
    CHECK(names.insert(c.name).second);
  }
  CHECK(find_model("llama3-70b")->layers == 80);
  CHECK(find_model("no-such-model") == nullptr);
  CHECK(model_names().find("deepseek-v3") != std::string::npos);
}
