#include "models/pipeline_layout.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::models;

namespace {

PipelineLayout parse(const char* text) {
  std::string error;
  const std::optional<PipelineLayout> layout = parse_pipeline_layout(text, &error);
  INFO(text << ": " << error);
  REQUIRE(layout);
  return *layout;
}

std::string error_of(const char* text) {
  std::string error;
  CHECK_FALSE(parse_pipeline_layout(text, &error));
  return error;
}

using Stage = PipelineLayout::Stage;

}  // namespace

TEST_CASE("pipeline layouts as Megatron-Bridge writes DeepSeek-V3's", "[plan][pipeline]") {
  // 25.09's configs: the embedding and a layer, 30 stages of two layers, MTP and loss alone.
  const PipelineLayout a = parse("Et|(tt|)*30mL");
  REQUIRE(a.stages.size() == 32);
  CHECK(a.stages.front() == Stage{.decoders = 1, .embedding = true});
  for (size_t i = 1; i < 31; ++i)
    CHECK(a.stages[i] == Stage{.decoders = 2});
  CHECK(a.stages.back() == Stage{.mtp = 1, .loss = true});
  // The recipe's 16-stage map: 4 layers a stage, one layer beside MTP and the loss.
  const PipelineLayout b = parse("Et*4|(t*4|)*14tmL");
  REQUIRE(b.stages.size() == 16);
  CHECK(b.stages.front() == Stage{.decoders = 4, .embedding = true});
  CHECK(b.stages[7] == Stage{.decoders = 4});
  CHECK(b.stages.back() == Stage{.decoders = 1, .mtp = 1, .loss = true});
  // Megatron-Core's documented example: ',' only separates; MTP and the loss on stages of their
  // own.
  const PipelineLayout c = parse("Et*3|(tt|)*29,m|L");
  REQUIRE(c.stages.size() == 32);
  CHECK(c.stages[30] == Stage{.mtp = 1});
  CHECK(c.stages[31] == Stage{.loss = true});
  int decoders = 0;
  for (const Stage& s : c.stages)
    decoders += s.decoders;
  CHECK(decoders == 61);
}

TEST_CASE("a layout written back parses to itself", "[plan][pipeline]") {
  for (const char* text : {"Et|(tt|)*30mL", "Et*4|(t*4|)*14tmL", "Et*3|(tt|)*29,m|L", "EtL",
                           "E|t*0|tt|L", "(Et)|((t|)*2)t*3mmL"}) {
    const PipelineLayout layout = parse(text);
    INFO(text);
    CHECK(parse(pipeline_layout_text(layout).c_str()) == layout);
  }
  CHECK(pipeline_layout_text(parse("E t*2 | t m L")) == "Ett|tmL");
}

TEST_CASE("a malformed layout says what it expected and where", "[plan][pipeline][input]") {
  CHECK(error_of("Etx|L") == "expected a part (E, t, m, L, |) or '(' at character 3, got 'x'");
  CHECK(error_of("Et*|L") == "expected a repeat count after '*' at character 4, got '|'");
  CHECK(error_of("E(t|L") == "expected ')' at the end");
  CHECK(error_of("Et)L") == "expected a part (E, t, m, L, |) or '(' at character 3, got ')'");
  CHECK(error_of("Et*99999999L") ==
        "expected a repeat count of at most 65536 at character 8, "
        "got '9'");
  CHECK(error_of("(t*300)*300L") == "expected at most 65536 parts once repeated");
  CHECK(error_of("((((((((((((((((((t))))))))))))))))))") ==
        "expected at most 16 nested groups at character 17, got '('");
  // The parts in the model's order, the embedding first and the loss last.
  CHECK(error_of("tEL") == "expected the embedding (E) before the first decoder layer");
  CHECK(error_of("t|EL") == "expected the embedding (E) before the first decoder layer");
  CHECK(error_of("Et|Et|L") == "expected the embedding (E) once, first");
  CHECK(error_of("EtmtL") == "expected decoder layers (t) before MTP modules and the loss");
  CHECK(error_of("Et|t") == "expected the loss (L)");
  CHECK(error_of("EtL|") == "expected the loss (L) on the last stage");
  CHECK(error_of("EtLt") == "expected decoder layers (t) before MTP modules and the loss");
  CHECK(error_of("") == "expected the loss (L)");
}
