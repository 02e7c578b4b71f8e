#include "api/plan_space.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <set>

#include "api/plan_search.hpp"
#include "models/model_presets.hpp"
#include "sim/input_error.hpp"

using namespace fabricsim;
using namespace fabricsim::api;
using models::ParallelPlan;

namespace {

models::TrainingConfig training(int global_batch, int seq) {
  models::TrainingConfig t;
  t.global_batch = global_batch;
  t.seq_len = seq;
  return t;
}

bool validates(const ParallelPlan& p, const models::TrainingConfig& t,
               const models::TransformerConfig& m) {
  try {
    models::validate_plan(p, t, m, p.gpus(), "test", "/parallelism");
    return true;
  } catch (const sim::InputError&) {
    return false;
  }
}

std::string key(const ParallelPlan& p) {
  return fmt::format("{} {} {} {} {} {} {} {} {}", p.tp, p.pp, p.dp, p.cp, p.ep, p.vp,
                     p.micro_batch, static_cast<int>(p.recompute), p.zero);
}

}  // namespace

TEST_CASE("plan space: the rejection value agrees with validate_plan on a grid", "[plan]") {
  // A dense GQA model (8 kv heads, 32 layers) and an MoE one (8 experts); sizes that do and do
  // not divide, odd sequence lengths for CP and SP.
  for (const char* name : {"llama3-8b", "mixtral-8x7b"}) {
    const models::TransformerConfig& model = *models::find_model(name);
    for (int seq : {4096, 4100}) {
      const models::TrainingConfig t = training(48, seq);
      int rejected = 0, accepted = 0;
      for (int tp : {1, 2, 3, 4, 8, 16}) {
        for (int cp : {1, 2, 3}) {
          for (int pp : {1, 2, 3, 4, 5}) {
            for (int vp : {1, 2, 3}) {
              for (int ep : {1, 2, 4, 8, 16}) {
                for (int dp : {1, 2, 4}) {
                  for (int mb : {1, 2, 5}) {
                    ParallelPlan p;
                    p.tp = tp;
                    p.cp = cp;
                    p.pp = pp;
                    p.vp = vp;
                    p.ep = ep;
                    p.dp = dp;
                    p.micro_batch = mb;
                    const bool ok = !plan_rejection(p, t, model);
                    INFO(name << " seq " << seq << " plan " << key(p));
                    REQUIRE(ok == validates(p, t, model));
                    (ok ? accepted : rejected)++;
                  }
                }
              }
            }
          }
        }
      }
      CHECK(accepted > 0);
      CHECK(rejected > 0);
    }
  }
}

TEST_CASE("plan space: every plan divides, none repeats, constraints hold", "[plan]") {
  const models::TransformerConfig& model = *models::find_model("llama3-8b");
  const models::TrainingConfig t = training(64, 8192);
  PlanConstraints c;
  const PlanSpace all = enumerate_plans(ParallelPlan{}, model, t, 64, 8, c);
  REQUIRE(!all.plans.empty());
  std::set<std::string> seen;
  for (const ParallelPlan& p : all.plans) {
    CHECK(p.gpus() == 64);
    CHECK(p.tp <= 8);  // the scale-up domain
    CHECK(validates(p, t, model));
    CHECK(seen.insert(key(p)).second);
  }
  // Every shape is either rejected for a reason or expanded over recompute x ZeRO (ZeRO
  // stages collapse to one without data-parallel sharding, dp = 1 here only with ep = 1).
  long long rejected = 0;
  for (const auto& [why, n] : all.rejected)
    rejected += n;
  CHECK(all.rejected.count(Rejection::memory) == 0);  // memory is the search's business
  CHECK(rejected + static_cast<long long>(all.plans.size()) <= all.candidates);
  CHECK(rejected + static_cast<long long>(all.plans.size()) > all.candidates / 2);

  c.fixed["tp"] = 2;
  c.allow_cp = false;
  c.zero_stages = {1};
  c.recompute = {models::Recompute::full};
  c.max_micro_batch = 2;
  const PlanSpace fixed = enumerate_plans(ParallelPlan{}, model, t, 64, 8, c);
  REQUIRE(!fixed.plans.empty());
  for (const ParallelPlan& p : fixed.plans) {
    CHECK(p.tp == 2);
    CHECK(p.cp == 1);
    CHECK(p.zero == 1);
    CHECK(p.recompute == models::Recompute::full);
    CHECK(p.micro_batch <= 2);
  }
  // A size that cannot divide the GPUs leaves nothing to look at.
  c.fixed["tp"] = 3;
  const PlanSpace none = enumerate_plans(ParallelPlan{}, model, t, 64, 8, c);
  CHECK(none.plans.empty());
  CHECK(none.candidates == 0);
}

TEST_CASE("plan space: unbalanced pipelines only when allowed", "[plan]") {
  const models::TransformerConfig& model = *models::find_model("llama3-405b");  // 126 layers
  const models::TrainingConfig t = training(2048, 8192);
  PlanConstraints c;
  c.fixed = {{"tp", 8}, {"pp", 16}, {"cp", 1}, {"vp", 1}, {"micro_batch", 1}};
  const PlanSpace balanced = enumerate_plans(ParallelPlan{}, model, t, 16384, 8, c);
  REQUIRE(!balanced.plans.empty());
  CHECK(balanced.plans.front().balanced_pipeline);
  c.allow_unbalanced = false;
  const PlanSpace strict = enumerate_plans(ParallelPlan{}, model, t, 16384, 8, c);
  CHECK(strict.plans.empty());
  CHECK(strict.rejected.at(Rejection::layers) > 0);
}

TEST_CASE("plan space: overlap and order variants", "[plan]") {
  PlanConstraints c;
  ParallelPlan p;
  p.tp = 8;
  p.pp = 4;
  p.dp = 16;
  p.zero = 1;
  const std::vector<ParallelPlan> v = plan_variants(p, c);
  // CP is 1, so the orders that differ only in where CP sits are one: tp-dp-pp and tp-pp-dp,
  // times the three switches on and off.
  CHECK(v.size() == 2 * 8);
  CHECK(v.front().order == p.order);
  CHECK(v.front().tp_comm_overlap);
  std::set<std::string> seen;
  for (const ParallelPlan& x : v) {
    CHECK(same_shape(x, p));
    seen.insert(fmt::format("{} {} {} {}", models::Placement(x, x.gpus()).order_string(),
                            x.tp_comm_overlap, x.dp_comm_overlap, x.param_gather_overlap));
  }
  CHECK(seen.size() == v.size());
  // Nothing to switch without TP, DP or sharding; nothing to order with one dimension.
  ParallelPlan single;
  single.dp = 8;
  single.zero = 0;
  const std::vector<ParallelPlan> s = plan_variants(single, c);
  CHECK(s.size() == 2);  // DP overlap on and off
  c.search_overlap = false;
  c.search_order = false;
  CHECK(plan_variants(p, c).size() == 1);
}

TEST_CASE("plan space: --fix items", "[plan]") {
  PlanConstraints c;
  add_fixed(c, "tp=8", "--fix");
  add_fixed(c, "zero=0", "--fix");
  CHECK(c.fixed.at("tp") == 8);
  CHECK(c.fixed.at("zero") == 0);
  CHECK_THROWS_WITH(add_fixed(c, "tq=8", "--fix"), Catch::Contains("tp, pp, dp"));
  CHECK_THROWS_WITH(add_fixed(c, "tp=0", "--fix"), Catch::Contains("positive size for tp"));
  CHECK_THROWS_WITH(add_fixed(c, "tp=8x", "--fix"), Catch::Contains("positive size"));
  CHECK_THROWS_WITH(add_fixed(c, "zero=4", "--fix"), Catch::Contains("ZeRO stage 0..3"));
  CHECK_THROWS_WITH(add_fixed(c, "tp", "--fix"), Catch::Contains("size=value"));
}

TEST_CASE("plan space: a pipeline layout is kept for the pipelines of its stage count", "[plan]") {
  // DeepSeek-V3 (61 layers and its MTP module) in Megatron-Bridge's 16-stage layout: pp 16, and
  // the interleavings 8 x 2 and 4 x 4 it implies though 61 layers divide by none.
  const models::TransformerConfig& model = *models::find_model("deepseek-v3");
  ParallelPlan base;
  base.pipeline_layout = "Et*4|(t*4|)*14tmL";
  PlanConstraints c;
  c.fixed = {{"tp", 1}, {"cp", 1}, {"ep", 8}, {"micro_batch", 1}, {"zero", 1}};
  c.recompute = {models::Recompute::selective};
  const PlanSpace space = enumerate_plans(base, model, training(2048, 4096), 256, 8, c);
  std::set<std::pair<int, int>> laid_out;
  for (const ParallelPlan& p : space.plans) {
    if (p.pp * p.vp == 16) {
      CHECK(p.pipeline_layout == base.pipeline_layout);
      laid_out.emplace(p.pp, p.vp);
    } else {
      CHECK(p.pipeline_layout.empty());  // the default split
    }
    CHECK(validates(p, training(2048, 4096), model));
  }
  CHECK(laid_out == std::set<std::pair<int, int>>{{16, 1}, {8, 2}, {4, 4}, {2, 8}});
}
