#include "models/parallel_plan.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>

#include "models/model_presets.hpp"
#include "sim/input_error.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

namespace {

ParallelPlan plan_of(int tp, int pp, int dp, int cp = 1, int ep = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.cp = cp;
  p.ep = ep;
  return p;
}

TrainingConfig batch(int global_batch) {
  TrainingConfig t;
  t.global_batch = global_batch;
  return t;
}

/// The error validate_plan raises, or an empty one when the plan is accepted.
sim::InputError rejection(const ParallelPlan& plan, const TrainingConfig& training,
                          const char* model, int gpus) {
  try {
    validate_plan(plan, training, *find_model(model), gpus, "scenario.json", "/parallelism");
  } catch (const sim::InputError& e) {
    return e;
  }
  return sim::InputError("", "", "");
}

std::vector<uint32_t> iota(uint32_t first, uint32_t count, uint32_t stride = 1) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < count; ++i)
    out.push_back(first + i * stride);
  return out;
}

}  // namespace

TEST_CASE("valid plans pass validation", "[plan]") {
  CHECK(rejection(plan_of(8, 1, 1), batch(4), "llama2-7b", 8).message().empty());
  CHECK(rejection(plan_of(8, 4, 4, 2), batch(64), "llama2-70b", 256).message().empty());
  CHECK(rejection(plan_of(1, 1, 8, 1, 8), batch(8), "mixtral-8x7b", 8).message().empty());
}

TEST_CASE("validation names what does not divide", "[plan]") {
  SECTION("the plan does not factor the GPUs") {
    const auto e = rejection(plan_of(8, 2, 2), batch(16), "llama2-7b", 16);
    CHECK(e.where() == "scenario.json");
    CHECK(e.path() == "/parallelism");
    CHECK_THAT(
        e.message(),
        Catch::Contains("tp x cp x dp x pp = 8 x 1 x 2 x 2 = 32 does not match the 16 GPUs"));
  }
  SECTION("attention heads do not divide by tp") {
    // llama2-13b has 40 heads.
    const auto e = rejection(plan_of(16, 1, 1), batch(4), "llama2-13b", 16);
    CHECK(e.path() == "/parallelism/tp");
    CHECK_THAT(e.message(), Catch::Contains("40 attention heads do not divide by tp = 16"));
  }
  SECTION("key/value heads can neither be split nor replicated") {
    // 48 query heads split over TP16, but 12 KV heads can neither be split (12 % 16) nor
    // replicated (16 % 12) over it.
    TransformerConfig m = *find_model("llama2-70b");
    m.heads = 48;
    m.kv_heads = 12;
    m.head_dim = 128;
    try {
      validate_plan(plan_of(16, 1, 1), batch(4), m, 16, "s", "/parallelism");
      FAIL("accepted");
    } catch (const sim::InputError& e) {
      CHECK(e.path() == "/parallelism/tp");
      CHECK_THAT(e.message(), Catch::Contains("12 key/value heads cannot be split or replicated"));
    }
  }
  SECTION("layers do not divide into pp x vp stages") {
    // llama2-7b has 32 layers.
    const auto e = rejection(plan_of(1, 3, 1), batch(3), "llama2-7b", 3);
    CHECK(e.path() == "/parallelism/pp");
    CHECK_THAT(e.message(), Catch::Contains("32 layers do not divide into pp x vp = 3 x 1 stages"));
    CHECK_THAT(e.message(), Catch::Contains("balanced_pipeline"));
    ParallelPlan vp = plan_of(1, 4, 1);
    vp.vp = 3;
    const auto ev = rejection(vp, batch(4), "llama2-7b", 4);
    CHECK_THAT(ev.message(),
               Catch::Contains("32 layers do not divide into pp x vp = 4 x 3 stages"));
    // Balanced pipelines accept the remainder.
    ParallelPlan balanced = plan_of(1, 3, 1);
    balanced.balanced_pipeline = true;
    CHECK(rejection(balanced, batch(3), "llama2-7b", 3).message().empty());
  }
  SECTION("experts do not divide by ep") {
    // mixtral-8x7b has 8 experts; 6 ranks per stage allow EP 3 and EP 6.
    const auto e = rejection(plan_of(1, 1, 6, 1, 3), batch(6), "mixtral-8x7b", 6);
    CHECK(e.path() == "/parallelism/ep");
    CHECK_THAT(e.message(), Catch::Contains("8 experts do not divide by ep = 3"));
  }
  SECTION("ep does not divide the ranks of a stage") {
    const auto e = rejection(plan_of(1, 1, 2, 1, 4), batch(2), "mixtral-8x7b", 2);
    CHECK(e.path() == "/parallelism/ep");
    CHECK_THAT(e.message(), Catch::Contains("ep = 4 does not divide the tp x cp x dp = 2 ranks"));
  }
  SECTION("expert parallelism without experts") {
    const auto e = rejection(plan_of(1, 1, 8, 1, 2), batch(8), "llama2-7b", 8);
    CHECK(e.path() == "/parallelism/ep");
    CHECK_THAT(e.message(), Catch::Contains("expert parallelism needs an MoE model"));
  }
  SECTION("the global batch does not divide into dp x micro_batch") {
    ParallelPlan p = plan_of(1, 1, 4);
    p.micro_batch = 2;
    const auto e = rejection(p, batch(12), "llama2-7b", 4);
    CHECK(e.path() == "/training/global_batch");
    CHECK_THAT(e.message(),
               Catch::Contains("the global batch of 12 sequences does not divide into dp x "
                               "micro_batch = 4 x 2"));
    CHECK(rejection(p, batch(16), "llama2-7b", 4).message().empty());
  }
  SECTION("interleaving needs micro-batches divisible by pp") {
    ParallelPlan p = plan_of(1, 4, 1);
    p.vp = 2;
    const auto e = rejection(p, batch(6), "llama2-7b", 4);
    CHECK(e.path() == "/parallelism/vp");
    CHECK_THAT(e.message(), Catch::Contains("micro-batches (6) divisible by pp (4)"));
  }
  SECTION("the sequence does not divide into context-parallel chunks") {
    // Causal CP splits the 4096 tokens into 2 x cp chunks for load balance.
    TrainingConfig t = batch(1);
    t.seq_len = 4000;
    const auto e = rejection(plan_of(1, 1, 1, 32), t, "llama2-7b", 32);
    CHECK(e.path() == "/parallelism/cp");
    CHECK_THAT(e.message(), Catch::Contains("4000 tokens does not divide into 64"));
  }
  SECTION("a size below one") {
    const auto e = rejection(plan_of(0, 1, 1), batch(1), "llama2-7b", 0);
    CHECK(e.path() == "/parallelism/tp");
    CHECK_THAT(e.message(), Catch::Contains("expected a positive size, got 0"));
  }
  SECTION("a ZeRO stage outside 0..3") {
    ParallelPlan p = plan_of(1, 1, 1);
    p.zero = 4;
    const auto e = rejection(p, batch(1), "llama2-7b", 1);
    CHECK(e.path() == "/parallelism/zero");
  }
}

TEST_CASE("placement puts TP innermost and PP outermost", "[plan][placement]") {
  // 2 pipeline stages of TP4 x CP2 x DP2 = 16 ranks each.
  const ParallelPlan p = plan_of(4, 2, 2, 2);
  const Placement place(p, p.gpus());
  CHECK(place.order_string() == "tp-cp-dp-pp");
  CHECK(place.group(GroupKind::tp, 0) == iota(0, 4));
  CHECK(place.group(GroupKind::cp, 0) == iota(0, 2, 4));
  // The DP group holds the data- and context-parallel ranks of one TP position (dense_dp).
  CHECK(place.group(GroupKind::dp, 0) == iota(0, 4, 4));
  CHECK(place.group(GroupKind::pp, 0) == iota(0, 2, 16));
  CHECK(place.group(GroupKind::tp, 21) == iota(20, 4));
  CHECK(place.stage_representative(0) == 0);
  CHECK(place.stage_representative(1) == 16);
  const Coordinates c = place.coordinates(27);  // 27 = 3 + 4 x (0 + 2 x (1 + 2 x 1))
  CHECK(c.tp == 3);
  CHECK(c.cp == 0);
  CHECK(c.dp == 1);
  CHECK(c.pp == 1);
  CHECK(c.flat == 3 + 4 * (0 + 2 * 1));
}

TEST_CASE("groups of every kind partition the ranks", "[plan][placement][invariant]") {
  ParallelPlan reordered = plan_of(2, 2, 3, 2, 3);
  reordered.order = *parse_order("pp-dp-tp-cp");
  for (const ParallelPlan& p : {plan_of(8, 4, 2), plan_of(4, 2, 2, 2), plan_of(2, 3, 4, 1, 4),
                                plan_of(1, 1, 16, 2, 8), plan_of(2, 2, 3, 2, 3), reordered}) {
    const Placement place(p, p.gpus());
    const int stage_ranks = p.tp * p.cp * p.dp;
    const std::pair<GroupKind, int> kinds[] = {
        {GroupKind::tp, p.tp}, {GroupKind::cp, p.cp}, {GroupKind::dp, p.dense_dp()},
        {GroupKind::pp, p.pp}, {GroupKind::ep, p.ep}, {GroupKind::edp, stage_ranks / p.ep}};
    for (auto [kind, size] : kinds) {
      INFO("tp " << p.tp << " pp " << p.pp << " dp " << p.dp << " cp " << p.cp << " ep " << p.ep
                 << " order " << place.order_string() << " group " << to_string(kind));
      std::set<std::vector<uint32_t>> groups;
      std::vector<int> seen(static_cast<size_t>(p.gpus()), 0);
      for (int r = 0; r < p.gpus(); ++r) {
        CHECK(place.rank_of(place.coordinates(r)) == r);
        std::vector<uint32_t> g = place.group(kind, r);
        CHECK(static_cast<int>(g.size()) == size);
        CHECK(std::count(g.begin(), g.end(), static_cast<uint32_t>(r)) == 1);
        // Every member reports the same group.
        for (uint32_t m : g)
          CHECK(place.group(kind, static_cast<int>(m)) == g);
        std::sort(g.begin(), g.end());
        if (groups.insert(g).second) {
          for (uint32_t m : g)
            ++seen[m];
        }
      }
      // Disjoint and covering: every rank is in exactly one distinct group.
      CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
      CHECK(static_cast<int>(groups.size()) == p.gpus() / size);
      // Groups other than pp stay inside one pipeline stage, and stage_groups lists exactly
      // the groups that touch the stage.
      if (kind == GroupKind::pp) continue;
      for (int s = 0; s < p.pp; ++s) {
        std::set<uint32_t> covered;
        for (const auto& g : place.stage_groups(kind, s)) {
          for (uint32_t m : g) {
            CHECK(place.coordinates(static_cast<int>(m)).pp == s);
            CHECK(covered.insert(m).second);
          }
        }
        CHECK(static_cast<int>(covered.size()) == stage_ranks);
      }
    }
  }
}

TEST_CASE("EP groups are consecutive flat ranks, expert-DP strides across them",
          "[plan][placement]") {
  // TP2 x DP4 = 8 ranks per stage, EP4: EP groups are flat 0..3 and 4..7; expert-DP pairs
  // ranks holding the same experts, 4 apart.
  const ParallelPlan p = plan_of(2, 1, 4, 1, 4);
  const Placement place(p, p.gpus());
  CHECK(place.group(GroupKind::ep, 0) == iota(0, 4));
  CHECK(place.group(GroupKind::ep, 5) == iota(4, 4));
  CHECK(place.group(GroupKind::edp, 1) == std::vector<uint32_t>{1, 5});
}

TEST_CASE("a custom order moves TP outward", "[plan][placement]") {
  ParallelPlan p = plan_of(4, 2, 2);
  const auto order = parse_order("dp-tp-cp-pp");
  REQUIRE(order);
  p.order = *order;
  const Placement place(p, p.gpus());
  CHECK(place.order_string() == "dp-tp-cp-pp");
  CHECK(place.group(GroupKind::dp, 0) == iota(0, 2));
  CHECK(place.group(GroupKind::tp, 0) == iota(0, 4, 2));
  // "ep" is accepted and ignored; repeats, unknown and missing dimensions are not.
  CHECK(parse_order("tp-cp-ep-dp-pp") == parse_order("tp-cp-dp-pp"));
  CHECK_FALSE(parse_order("tp-tp-dp-pp"));
  CHECK_FALSE(parse_order("tp-cp-dp"));
  CHECK_FALSE(parse_order("tp-cp-dp-pp-xp"));
}

TEST_CASE("layers per virtual stage add up to the model", "[plan][pipeline]") {
  ParallelPlan p = plan_of(1, 4, 1);
  CHECK(layers_per_virtual_stage(p, 32) == std::vector<int>(4, 8));
  p.vp = 2;
  CHECK(layers_per_virtual_stage(p, 32) == std::vector<int>(8, 4));
  // Balanced: the first and last virtual stages give up the surplus.
  p.vp = 1;
  for (int layers : {30, 31, 33, 61, 126}) {
    for (int pp : {3, 4, 7, 8}) {
      if (layers < pp) continue;
      p.pp = pp;
      const auto per = layers_per_virtual_stage(p, layers);
      INFO(layers << " layers on " << pp << " stages");
      CHECK(static_cast<int>(per.size()) == pp);
      CHECK(std::accumulate(per.begin(), per.end(), 0) == layers);
      const int most = *std::max_element(per.begin(), per.end());
      CHECK(most == (layers + pp - 1) / pp);
      for (size_t i = 1; i + 1 < per.size(); ++i)
        CHECK(per[i] == most);
    }
  }
  p.pp = 4;
  CHECK(layers_per_virtual_stage(p, 30) == std::vector<int>{7, 8, 8, 7});
  // Two stages more than layers: the ends hold only the embedding and the loss (Llama 3.1 405B's
  // 126 layers on pp 16 x vp 8, as Megatron-Bridge runs it).
  p.pp = 16;
  p.vp = 8;
  std::vector<int> ends(128, 1);
  ends.front() = ends.back() = 0;
  CHECK(layers_per_virtual_stage(p, 126) == ends);
}

TEST_CASE("a balanced pipeline may leave the ends to the embedding and the loss, no more",
          "[plan][pipeline]") {
  const TransformerConfig model = *find_model("llama3-405b");
  ParallelPlan p = plan_of(4, 16, 4);
  p.vp = 8;
  p.balanced_pipeline = true;
  TrainingConfig training;
  training.global_batch = 64;
  CHECK(check_plan(p, training, model, p.gpus()) == std::nullopt);
  TransformerConfig fewer = model;
  fewer.layers = 125;
  const auto problem = check_plan(p, training, fewer, p.gpus());
  REQUIRE(problem);
  CHECK_THAT(problem->message, Catch::Contains("125 layers cannot fill pp x vp = 128 stages"));
  p.balanced_pipeline = false;
  CHECK(check_plan(p, training, model, p.gpus()));
}

TEST_CASE("all-to-all CP needs a TP rank's query and key/value heads to divide by cp", "[plan]") {
  // Llama 3 8B: 32 query and 8 key/value heads; at TP 2 a rank holds 16 and 4.
  const TransformerConfig model = *find_model("llama3-8b");
  TrainingConfig training;
  training.global_batch = 64;
  ParallelPlan p = plan_of(2, 1, 1);
  p.cp = 4;
  p.cp_comm = CpComm::a2a;
  CHECK(check_plan(p, training, model, p.gpus()) == std::nullopt);
  p.cp = 8;
  const auto problem = check_plan(p, training, model, p.gpus());
  REQUIRE(problem);
  CHECK(problem->field == "/cp_comm_type");
  CHECK_THAT(problem->message, Catch::Contains("16 query and 4 key/value heads"));
  p.cp_comm = CpComm::p2p;  // the ring splits the sequence, not the heads
  CHECK(check_plan(p, training, model, p.gpus()) == std::nullopt);
}

TEST_CASE("recompute modules are read by name and written back the same", "[plan]") {
  std::string error;
  const auto m = parse_recompute_modules("mla_up_proj, mlp,core_attn", &error);
  REQUIRE(m);
  CHECK(*m == (static_cast<uint8_t>(RecomputeModule::mla_up_proj) |
               static_cast<uint8_t>(RecomputeModule::mlp)));
  CHECK(recompute_modules_text(*m) == "mla_up_proj,mlp");
  CHECK(parse_recompute_modules("", &error) == uint8_t{0});
  CHECK_FALSE(parse_recompute_modules("layernorm,moe", &error));
  CHECK_THAT(error, Catch::Contains("unknown recompute module \"moe\""));
  // Full recomputation reruns everything: no module is recomputed on its own.
  ParallelPlan p;
  p.recompute_modules = *m;
  CHECK(p.recomputes(RecomputeModule::mlp));
  CHECK_FALSE(p.recomputes(RecomputeModule::layernorm));
  p.recompute = Recompute::full;
  CHECK_FALSE(p.recomputes(RecomputeModule::mlp));
}

TEST_CASE("a pipeline layout must build the model's layers on pp x vp stages",
          "[plan][pipeline][input]") {
  const TransformerConfig model = *find_model("deepseek-v3");  // with its MTP module
  ParallelPlan p = plan_of(1, 16, 16, 1, 8);
  p.pipeline_layout = "Et*4|(t*4|)*14tmL";
  TrainingConfig training;
  training.global_batch = 2048;
  CHECK(check_plan(p, training, model, p.gpus()) == std::nullopt);
  // The layout decides the stages' layers, undivided and unbalanced as they are.
  std::vector<int> per(16, 4);
  per.back() = 1;
  CHECK(layers_per_virtual_stage(p, 61) == per);
  const PipelineLayout layout = stage_layout(p, model);
  CHECK(layout.stages.back().mtp == 1);
  CHECK(layout.stages.back().loss);
  const auto message = [&](const ParallelPlan& plan, const TransformerConfig& m) {
    const auto problem = check_plan(plan, training, m, plan.gpus());
    REQUIRE(problem);
    CHECK(problem->field == "/pipeline_layout");
    return problem->message;
  };
  ParallelPlan wrong = p;
  wrong.vp = 2;
  wrong.dp = 8;
  CHECK(message(wrong, model) == "expected pp x vp = 16 x 2 = 32 stages, got 16");
  TransformerConfig without = model;
  without.mtp_layers = 0;
  CHECK(message(p, without) ==
        "expected the model's 61 decoder layers (t) and 0 MTP modules (m), got 61 and 1");
  wrong = p;
  wrong.pipeline_layout = "Et*4|(t*4|)*14ttmL";
  CHECK(message(wrong, model) ==
        "expected the model's 61 decoder layers (t) and 1 MTP modules (m), got 62 and 1");
  wrong.pipeline_layout = "Et*4|(t*4|)*14tLm";
  CHECK(message(wrong, model) == "expected MTP modules (m) after the decoders");
}

TEST_CASE("without a layout, the default split with the MTP modules beside the loss",
          "[plan][pipeline]") {
  const TransformerConfig model = *find_model("deepseek-v3");  // with its MTP module
  ParallelPlan p = plan_of(1, 16, 16, 1, 8);
  p.balanced_pipeline = true;
  const PipelineLayout layout = stage_layout(p, model);
  REQUIRE(layout.stages.size() == 16);
  const std::vector<int> per = layers_per_virtual_stage(p, 61);
  for (size_t v = 0; v < 16; ++v) {
    CHECK(layout.stages[v].decoders == per[v]);
    CHECK(layout.stages[v].embedding == (v == 0));
    CHECK(layout.stages[v].loss == (v == 15));
    CHECK(layout.stages[v].mtp == (v == 15 ? 1 : 0));
  }
  // Written out, the default split is a layout that builds the same stages.
  p.pipeline_layout = pipeline_layout_text(layout);
  CHECK(stage_layout(p, model) == layout);
}
