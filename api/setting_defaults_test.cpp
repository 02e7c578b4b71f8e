// The defaults docs/formats.md states (each setting's `fallback`, generated into its tables) are
// the values a scenario that leaves the setting out is read with: a stated default that drifted
// from the reader's would mislead every user who trusts the table.

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/scenario.hpp"
#include "api/scenario_settings.hpp"
#include "api/training_run.hpp"
#include "models/software_stack.hpp"
#include "sim/json_reader.hpp"
#include "topologies/system_presets.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// The JSON value a fallback states literally (`false`, 16, `flow`, `"tp-cp-dp-pp"`), or nothing
/// for a fallback in words ("the preset's", "required", "GPUs / (tp x pp x cp)").
std::optional<nlohmann::json> literal(std::string text) {
  if (text.size() >= 2 && text.front() == '`' && text.back() == '`')
    text = text.substr(1, text.size() - 2);
  else if (text.find_first_not_of("0123456789.") != std::string::npos)
    return std::nullopt;  // words, not a literal
  if (text.empty() || text.find(' ') != std::string::npos) return std::nullopt;
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  return nlohmann::json(text);  // a bare word: `flow`, `bf16`
}

}  // namespace

TEST_CASE("every default the settings table states literally is the one a scenario is read with",
          "[settings][docs]") {
  // Only the required settings: everything else takes its default.
  const nlohmann::json minimal = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama3-8b"},
    "parallelism": {},
    "training": {"global_batch": 64}
  })");
  const Scenario s = read_scenario(sim::JsonDocument(minimal, "minimal").root());
  const nlohmann::json echo = echo_settings(s);
  int checked = 0;
  for (const Setting& setting : scenario_settings()) {
    const std::optional<nlohmann::json> stated = literal(std::string(setting.fallback));
    if (!stated) continue;
    const nlohmann::json::json_pointer at{std::string(setting.pointer)};
    INFO(setting.pointer << ": the table says " << stated->dump());
    REQUIRE(echo.contains(at));
    const nlohmann::json& read = echo.at(at);
    if (stated->is_number() && read.is_number()) {
      CHECK(read.get<double>() == Approx(stated->get<double>()));
    } else {
      CHECK(read == *stated);
    }
    ++checked;
  }
  // 26 literal defaults at this commit: a change of the table that loses them shows here.
  CHECK(checked == 26);
}

TEST_CASE("a scenario as run --json echoes it reads back into the same run, on every system",
          "[settings]") {
  for (const topologies::SystemPreset& preset : topologies::system_presets()) {
    for (const int gpus : {8, 64, 512}) {
      INFO(preset.name << ", " << gpus << " GPUs");
      const nlohmann::json doc = {{"system", {{"preset", preset.name}, {"gpus", gpus}}},
                                  {"model", {{"preset", "llama3-8b"}}},
                                  {"parallelism", nlohmann::json::object()},
                                  {"training", {{"global_batch", gpus}}},
                                  {"simulation", {{"backend", "analytical"}}}};
      const Scenario first = read_scenario(sim::JsonDocument(doc, "first").root());
      const nlohmann::json echo = scenario_to_json(first);
      Scenario again;
      REQUIRE_NOTHROW(again = read_scenario(sim::JsonDocument(echo, "echo").root()));
      CHECK(scenario_to_json(again) == echo);
      CHECK(run_training(again).metrics.step_time_s == run_training(first).metrics.step_time_s);
    }
  }
}

TEST_CASE("every default the settings table states in words is what the reader applies",
          "[settings][docs]") {
  const auto read = [](const nlohmann::json& doc) {
    return read_scenario(sim::JsonDocument(doc, "worded").root());
  };
  nlohmann::json minimal = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 64},
    "model": {"preset": "llama3-8b"},
    "parallelism": {"tp": 2, "pp": 2},
    "training": {"global_batch": 64}
  })");
  // "GPUs / (tp x pp x cp)", "the model's seq_len", "the `default` preset", "none".
  {
    const Scenario s = read(minimal);
    CHECK(s.plan.dp == 64 / (2 * 2 * 1));
    CHECK(models::sequence_length(s.training, s.model) == s.model.seq_len);
    CHECK(echo_settings(s).at(nlohmann::json::json_pointer("/training/seq_len")) ==
          s.model.seq_len);
    CHECK(s.lowering.software.id == "default");
    const nlohmann::json echo = echo_settings(s);
    CHECK_FALSE(echo.contains(nlohmann::json::json_pointer("/training/tokens_to_train")));
  }
  // "the software preset's" and "the preset's": each software preset's own choices.
  for (const models::SoftwareStack& preset : models::software_presets()) {
    INFO(preset.id);
    nlohmann::json doc = minimal;
    doc["software"] = {{"framework", preset.id}};
    const nlohmann::json echo = echo_settings(read(doc));
    // A setting the echo leaves out is null: what the reader then assumes.
    const auto at = [&](const char* pointer) {
      const nlohmann::json::json_pointer p{pointer};
      return echo.contains(p) ? echo.at(p) : nlohmann::json();
    };
    CHECK(at("/parallelism/recompute") == std::string(models::to_string(preset.recompute)));
    CHECK(at("/parallelism/tp_comm_overlap") == preset.tp_comm_overlap);
    // The size this run used: 16 data-parallel ranks, below the floor of Megatron-Core's rule.
    const double bucket = std::max(preset.bucket_bytes, 16 * preset.bucket_bytes_per_dp_rank);
    CHECK(at("/parallelism/bucket_size") ==
          (bucket > 0 ? nlohmann::json(bucket) : nlohmann::json()));
    CHECK(at("/training/attention_kernel") == std::string(models::to_string(preset.attention)));
    CHECK(at("/software/cuda_graphs") == std::string(models::to_string(preset.cuda_graphs)));
    CHECK(at("/software/cuda_graph_moe_router") == preset.graph_moe_router);
    CHECK(at("/software/eager_elementwise") == preset.eager_elementwise);
    CHECK(at("/software/grouped_gemm") == std::string(models::to_string(preset.grouped_gemm)));
    CHECK(at("/software/moe_dispatcher") == std::string(models::to_string(preset.moe_dispatcher)));
    CHECK(at("/software/loss_kernel") == std::string(models::to_string(preset.loss)));
    CHECK(at("/software/moe_a2a_overlap_scope") ==
          std::string(models::to_string(preset.moe_a2a_overlap_scope)));
  }
  // "preset" under /system: the system preset's own spec at that GPU count, and "the whole
  // domain" for the NVLink segment.
  for (const topologies::SystemPreset& preset : topologies::system_presets()) {
    INFO(preset.name);
    nlohmann::json doc = minimal;
    doc["system"] = {{"preset", preset.name}, {"gpus", 64}};
    const Scenario s = read(doc);
    const topologies::ClusterSpec spec = preset.make(64);
    CHECK(s.cluster.gpus_per_server == spec.gpus_per_server);
    REQUIRE(s.cluster.nvlink.has_value() == spec.nvlink.has_value());
    if (spec.nvlink) {
      CHECK(s.cluster.nvlink->gpus_per_domain == spec.nvlink->gpus_per_domain);
      CHECK(s.cluster.nvlink->link_bandwidth == spec.nvlink->link_bandwidth);
    }
    REQUIRE(s.cluster.scale_out.has_value() == spec.scale_out.has_value());
    if (spec.scale_out) {
      CHECK(s.cluster.scale_out->nic_bandwidth == spec.scale_out->nic_bandwidth);
      CHECK(s.cluster.scale_out->nics_per_server == spec.scale_out->nics_per_server);
      CHECK(s.cluster.scale_out->radix == spec.scale_out->radix);
      CHECK(s.cluster.scale_out->upper_tiers.size() == spec.scale_out->upper_tiers.size());
    }
  }
}

TEST_CASE("a preset's bucket grows with the data-parallel ranks, a bucket_size set stays fixed",
          "[settings][buckets]") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 4096},
    "model": {"preset": "llama3-8b"},
    "parallelism": {"tp": 8},
    "training": {"global_batch": 512}
  })");
  const auto bucket = [](const nlohmann::json& d) {
    const Scenario s = read_scenario(sim::JsonDocument(d, "buckets").root());
    const nlohmann::json echo = echo_settings(s);
    CHECK(echo.at(nlohmann::json::json_pointer("/parallelism/bucket_size")) ==
          s.plan.gradient_bucket_bytes());
    return s.plan.gradient_bucket_bytes();
  };
  // The default stack is Megatron-Core's: 1M fp32 gradients per data-parallel rank (512).
  CHECK(bucket(doc) == 512 * 1e6 * 4);
  doc["parallelism"]["bucket_size"] = "100 MB";
  CHECK(bucket(doc) == 100e6);
}

TEST_CASE("the loss kernel setting overrides the preset's and rejects other names",
          "[settings][bad-input]") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama3-8b"},
    "parallelism": {},
    "training": {"global_batch": 64},
    "software": {"framework": "nemo-24.07", "loss_kernel": "megatron_fused"}
  })");
  const Scenario s = read_scenario(sim::JsonDocument(doc, "loss.json").root());
  CHECK(s.lowering.software.loss == models::LossKernel::megatron_fused);
  CHECK(models::find_software("nemo-24.07")->loss == models::LossKernel::fp32_upcast);
  doc["software"]["loss_kernel"] = "fast";
  CHECK_THROWS_WITH(read_scenario(sim::JsonDocument(doc, "loss.json").root()),
                    Catch::Contains("loss.json: /software/loss_kernel: expected one of "
                                    "fp32_upcast, megatron_fused, fused"));
}

TEST_CASE("the all-to-all overlap scope overrides the preset's and rejects other names",
          "[settings][bad-input]") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h800", "gpus": 16},
    "model": {"preset": "mixtral-8x7b"},
    "parallelism": {"ep": 8},
    "training": {"global_batch": 64},
    "software": {"framework": "hai-llm", "moe_a2a_overlap_scope": "modules"}
  })");
  // DeepSeek's stack overlaps over the whole chunk (DualPipe); the setting takes it back.
  CHECK(models::find_software("hai-llm")->moe_a2a_overlap_scope == models::A2aOverlapScope::chunk);
  const Scenario s = read_scenario(sim::JsonDocument(doc, "scope.json").root());
  CHECK(s.lowering.software.moe_a2a_overlap);
  CHECK(s.lowering.software.moe_a2a_overlap_scope == models::A2aOverlapScope::modules);
  doc["software"]["moe_a2a_overlap_scope"] = "layer";
  CHECK_THROWS_WITH(read_scenario(sim::JsonDocument(doc, "scope.json").root()),
                    Catch::Contains("scope.json: /software/moe_a2a_overlap_scope: expected one of "
                                    "modules, chunk"));
}

TEST_CASE("the activation input in FP8 is a SwiGLU setting, which other MLPs reject",
          "[settings][bad-input]") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-b200", "gpus": 8},
    "model": {"preset": "llama2-70b"},
    "parallelism": {},
    "training": {"global_batch": 8, "precision": "fp8", "task": "lora", "seq_len": 8192},
    "software": {"framework": "nemo", "version": "25.04", "fp8_activation_input": true}
  })");
  CHECK_FALSE(models::find_software("nemo-25.04")->fp8_activation_input);
  CHECK(read_scenario(sim::JsonDocument(doc, "act.json").root())
            .lowering.software.fp8_activation_input);
  // Megatron-Core raises for any other activation; so does the reader, at the setting.
  doc["model"] = {{"preset", "gpt3-175b"}};
  CHECK_THROWS_WITH(read_scenario(sim::JsonDocument(doc, "act.json").root()),
                    Catch::Contains("act.json: /software/fp8_activation_input: the activation "
                                    "input is kept in FP8 for SwiGLU MLPs only"));
  doc["software"]["fp8_activation_input"] = "yes";
  CHECK_THROWS_WITH(read_scenario(sim::JsonDocument(doc, "act.json").root()),
                    Catch::Contains("act.json: /software/fp8_activation_input"));
}

TEST_CASE("FP8 parameter transposes uncached: a setting for parameters held in FP8",
          "[settings][bad-input]") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h200", "gpus": 8},
    "model": {"preset": "llama2-70b"},
    "parallelism": {"cp": 2},
    "training": {"global_batch": 8, "precision": "fp8", "task": "lora", "seq_len": 8192},
    "software": {"framework": "nemo", "version": "24.07", "fp8_params": true,
                 "parameter_transpose_cache": false}
  })");
  CHECK(models::find_software("nemo-24.07")->parameter_transpose_cache);
  const Scenario sc = read_scenario(sim::JsonDocument(doc, "tr.json").root());
  CHECK_FALSE(sc.lowering.software.parameter_transpose_cache);
  // Without FP8 parameters TE's copies are workspaces, which the setting does not model.
  doc["software"].erase("fp8_params");
  CHECK_THROWS_WITH(read_scenario(sim::JsonDocument(doc, "tr.json").root()),
                    Catch::Contains("tr.json: /software/parameter_transpose_cache: false is "
                                    "modelled for parameters held in FP8 only"));
  doc["software"]["parameter_transpose_cache"] = 0;
  CHECK_THROWS_WITH(read_scenario(sim::JsonDocument(doc, "tr.json").root()),
                    Catch::Contains("tr.json: /software/parameter_transpose_cache"));
}
