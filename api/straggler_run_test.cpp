#include "api/straggler_run.hpp"

#include <catch2/catch.hpp>

#include "tests/run_cli.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

Scenario read(nlohmann::json stragglers, int gpus = 1, const char* backend = "analytical") {
  nlohmann::json d = nlohmann::json::parse(R"({
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 1, "pp": 1, "micro_batch": 1, "zero": 1},
    "training": {"seq_len": 4096}
  })");
  d["system"] = {{"preset", "dgx-h100"}, {"gpus", gpus}};
  d["training"]["global_batch"] = 2 * gpus;
  d["simulation"] = {{"backend", backend}};
  d["stragglers"] = std::move(stragglers);
  const sim::JsonDocument parsed(d, "stragglers.json");
  return read_scenario(parsed.root());
}

}  // namespace

TEST_CASE("a straggler in a purely compute-bound step slows it by its own factor", "[straggler]") {
  // One GPU: nothing to wait for, every kernel and the optimizer 1.25x slower.
  const StragglerReport r = run_stragglers(read({{"ranks", {{"0", 1.25}}}}));
  CHECK(r.slow_ranks == 1);
  CHECK(r.slowdown == Approx(1.25).epsilon(1e-6));
  CHECK(r.propagated_through == "none");
}

TEST_CASE("one slow GPU holds back every data-parallel replica", "[straggler]") {
  for (const char* backend : {"analytical", "flow"}) {
    CAPTURE(backend);
    const Scenario s = read({{"ranks", {{"5", 1.3}}}}, 8, backend);
    CHECK(s.simulation.full_ranks);
    const StragglerReport r = run_stragglers(s);
    CHECK(r.slow_ranks == 1);
    // The other seven wait for it at the gradient reduction: the step follows the slow rank.
    CHECK(r.slowdown > 1.2);
    CHECK(r.slowdown < 1.3 + 1e-9);
    CHECK(r.propagated_through == "DP");
  }
  // A slow node throttles its eight GPUs alike: the same as naming them.
  const StragglerReport node = run_stragglers(read({{"nodes", {{"0", 1.3}}}}, 8));
  nlohmann::json named;
  for (int g = 0; g < 8; ++g)
    named[std::to_string(g)] = 1.3;
  const StragglerReport each = run_stragglers(read({{"ranks", named}}, 8));
  CHECK(node.slow_ranks == 8);
  CHECK(node.straggler_step_s == each.straggler_step_s);
  // Kernels 1.3x slower, the gradient all-reduce not: a little under 1.3x.
  CHECK(node.slowdown < 1.3);
  CHECK(node.slowdown > 1.25);
}

TEST_CASE("a slow link slows only the steps whose traffic crosses it", "[straggler]") {
  // Eight GPUs of one DGX reduce gradients over NVLink: a slow NIC changes nothing.
  const StragglerReport inside = run_stragglers(read({{"links", {{"3", 4.0}}}}, 8, "flow"));
  CHECK(inside.slow_links == 1);
  CHECK(inside.slow_ranks == 0);
  CHECK(inside.slowdown == Approx(1.0));
  // Sixteen over two nodes: the ring crosses GPU 3's NIC at a quarter of its rate.
  const StragglerReport across = run_stragglers(read({{"links", {{"3", 4.0}}}}, 16, "flow"));
  CHECK(across.slowdown > 1.001);
  CHECK(across.propagated_through == "DP");
}

TEST_CASE("a link slow for part of the step slows it less than for all of it", "[straggler]") {
  const StragglerReport whole = run_stragglers(read({{"links", {{"3", 4.0}}}}, 16, "flow"));
  const StragglerReport same =
      run_stragglers(read({{"links", {{"3", {{"factor", 4.0}}}}}}, 16, "flow"));
  CHECK(same.slow_links == 1);
  CHECK(same.straggler_step_s == whole.straggler_step_s);
  CHECK(same.nominal_step_s == whole.nominal_step_s);
  // Slow from the middle of the step on: only the traffic after that sees it.
  const std::string from = std::to_string(0.5 * whole.nominal_step_s) + " s";
  const StragglerReport late =
      run_stragglers(read({{"links", {{"3", {{"factor", 4.0}, {"from", from}}}}}}, 16, "flow"));
  CHECK(late.straggler_step_s <= whole.straggler_step_s);
  CHECK(late.straggler_step_s >= late.nominal_step_s);
  // Windows change capacities in time: the analytical backend has none to change. Without a
  // window the object is the number form, on either backend.
  CHECK_THROWS_WITH(
      run_stragglers(read({{"links", {{"3", {{"factor", 4.0}, {"from", from}}}}}}, 16)),
      Catch::Contains("/stragglers/links") && Catch::Contains("flow backend"));
  CHECK(run_stragglers(read({{"links", {{"3", {{"factor", 4.0}}}}}}, 16)).straggler_step_s ==
        run_stragglers(read({{"links", {{"3", 4.0}}}}, 16)).straggler_step_s);
}

TEST_CASE("stragglers section is read strictly", "[straggler][bad-input]") {
  auto fails = [](nlohmann::json v, const std::string& what) {
    CAPTURE(what);
    try {
      read(std::move(v), 8);
      FAIL("accepted");
    } catch (const sim::InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
    }
  };
  fails({{"ranks", {{"8", 1.5}}}}, "0..7");
  fails({{"ranks", {{"x", 1.5}}}}, "'x'");
  fails({{"nodes", {{"1", 1.5}}}}, "0..0");
  fails({{"slowdown", 0.5}, {"fraction", 0.1}}, "at least 1");
  fails({{"slowdown", {{"min", 1.5}, {"max", 1.2}}}}, "max must be at least min");
  fails({{"fraction", 2}}, "/stragglers/fraction");
  fails({{"sloth", 1}}, "sloth");
  fails({{"links", {{"9", 2.0}}}}, "0..7");
  fails({{"links", {{"9", {{"factor", 2.0}}}}}}, "0..7");
  fails({{"links", {{"1", {{"factor", 0.5}}}}}}, "/stragglers/links/1/factor");
  fails({{"links", {{"1", {{"factor", 2}, {"from", "2 s"}, {"until", "1 s"}}}}}},
        "/stragglers/links/1/until: expected a time after 'from'");
  fails({{"links", {{"1", {{"factor", 2}, {"when", "1 s"}}}}}}, "when");
  fails({{"links", {{"1", {{"from", "1 s"}}}}}}, "/stragglers/links/1/factor: missing");
  CHECK_THROWS_AS(run_stragglers(read(nlohmann::json::object(), 8)), sim::InputError);
}

TEST_CASE("cli: stragglers compares the step with and without the slow GPUs", "[cli][straggler]") {
  using fabricsim::testing::run_fabricsim;
  const auto r = run_fabricsim(
      {"stragglers", "--gpus", "16", "--tp", "2", "--cp", "1", "--backend", "analytical", "--set",
       "/stragglers={\"fraction\":0.125,\"slowdown\":1.2,\"seed\":3}", "--json"});
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["slow_ranks"] == 2);
  CHECK(j["slowdown"].get<double>() > 1.1);
  CHECK(j["slowdown"].get<double>() <= 1.2 + 1e-9);
  CHECK(run_fabricsim({"stragglers", "--backend", "analytical"}).code == 2);
}
