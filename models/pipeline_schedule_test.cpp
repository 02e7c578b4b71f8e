#include "models/pipeline_schedule.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace fabricsim::models;

TEST_CASE("1F1B: warm-up forwards, steady alternation, cool-down backwards", "[pipeline]") {
  const auto s = pipeline_schedule(4, 1, 8);
  REQUIRE(s.size() == 4);
  // Stage 0 warms up with pp - 1 = 3 forwards; the last stage alternates from the start.
  CHECK(s[0][0].forward);
  CHECK(s[0][1].forward);
  CHECK(s[0][2].forward);
  CHECK(s[0][3].forward);
  CHECK_FALSE(s[0][4].forward);
  CHECK(s[3][0].forward);
  CHECK_FALSE(s[3][1].forward);
  // 1F1B bounds activation memory by pp - stage micro-batches.
  for (int st = 0; st < 4; ++st)
    CHECK(max_in_flight(s[st]) == 4 - st);
}

TEST_CASE("every stage runs every (micro-batch, chunk) forward and backward once", "[pipeline]") {
  for (auto [pp, vp, m] : {std::tuple{4, 1, 8}, {4, 2, 8}, {2, 3, 6}, {8, 4, 16}, {1, 1, 3}}) {
    const auto s = pipeline_schedule(pp, vp, m);
    for (const auto& tasks : s) {
      std::set<std::tuple<bool, int, int>> seen;
      int live = 0;
      for (const auto& t : tasks) {
        CHECK(seen.insert({t.forward, t.microbatch, t.chunk}).second);
        live += t.forward ? 1 : -1;
        CHECK(live >= 0);  // a backward never precedes its forward
      }
      CHECK(static_cast<int>(seen.size()) == 2 * m * vp);
    }
  }
}

TEST_CASE("interleaving follows Megatron's chunk order", "[pipeline]") {
  // pp = 2, vp = 2, m = 4: stage 0 runs forwards (mb0,c0) (mb1,c0) (mb0,c1) (mb1,c1) ...
  const auto s = pipeline_schedule(2, 2, 4);
  CHECK(s[0][0].chunk == 0);
  CHECK(s[0][1].chunk == 0);
  CHECK(s[0][2].chunk == 1);
  CHECK(s[0][2].microbatch == 0);
  // The first backward of a stage is the last chunk's.
  for (const auto& t : s[0]) {
    if (!t.forward) {
      CHECK(t.chunk == 1);
      break;
    }
  }
  CHECK_THROWS(pipeline_schedule(4, 2, 6));
}
