// Model FLOPs as the framework reports them (SoftwareStack::flop_count).

#include <catch2/catch.hpp>

#include "api/evaluator.hpp"
#include "models/megatron_bridge_flops.hpp"
#include "models/transformer.hpp"
#include "sim/json_reader.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

TEST_CASE("Megatron-Bridge's count of a dense model is the GEMM count with causal attention",
          "[metrics]") {
  // Llama 3 8B: head width hidden/heads, a SiLU gate, a vocabulary that is a multiple of 128 and
  // no router, so Bridge's closed form is the model's GEMMs with half the score matrix.
  nlohmann::json doc = default_scenario_json();
  doc["simulation"]["backend"] = "analytical";
  Scenario s = read_scenario(sim::JsonDocument(doc, "test").root());
  const Evaluator cluster(s);
  const PreparedPlan p = cluster.prepare(s);
  const StepEvaluation e = cluster.evaluate(p, Fidelity::analytical);
  REQUIRE(e.step);
  // The attention part of the model FLOPs, in closed form: 3 x (QK^T + AV) per token of the
  // full score matrix, 4 x seq x heads x head_dim per layer and token forward.
  const models::TransformerConfig& m = s.model;
  const double seq = 8192;
  const double head_dim = m.head_dim > 0 ? m.head_dim : double(m.hidden) / m.heads;
  const double per_token = 3.0 * 4.0 * seq * m.heads * head_dim * m.layers;
  CHECK(p.workload.model_attention_flops == Approx(per_token * p.workload.tokens_per_step));

  Scenario bridge = s;
  bridge.lowering.software.flop_count = models::FlopCount::megatron_bridge;
  const TrainingMetrics full = training_metrics(s, p.workload, *e.step, cluster.system().gpu);
  const TrainingMetrics half = training_metrics(bridge, p.workload, *e.step, cluster.system().gpu);
  const double expected =
      (p.workload.model_flops - 0.5 * p.workload.model_attention_flops) / p.workload.model_flops;
  CHECK(half.model_tflops_per_gpu / full.model_tflops_per_gpu == Approx(expected).epsilon(1e-12));
  CHECK(half.mfu / full.mfu == Approx(expected).epsilon(1e-12));
  CHECK(half.tokens_per_s_per_gpu == full.tokens_per_s_per_gpu);
  CHECK(expected < 1.0);
}
