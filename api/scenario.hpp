#pragma once
// Scenario files: a system (preset + GPU count + fabric overrides), a model (preset or full), a
// parallelism plan, a training configuration, a calibration profile and simulation options.
// Every field can also be set from the command line with `--set /json/pointer=value`; the format
// is documented in docs/formats.md.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/operations_scenario.hpp"
#include "models/parallel_plan.hpp"
#include "models/step_simulator.hpp"
#include "models/transformer.hpp"
#include "models/workload.hpp"
#include "sim/json_reader.hpp"
#include "topologies/cluster_spec.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {

struct Scenario {
  std::string source = "<scenario>";  ///< file name for messages
  /// The system preset, resolved once by the reader (an alias's preset): what the GPU, host CPU
  /// and cluster come from; system() is its name.
  const topologies::SystemPreset* preset = topologies::find_system("dgx-h100");
  const std::string& system() const { return preset->name; }
  int gpus = 8;
  topologies::ClusterSpec cluster;  ///< the preset's spec with the overrides applied
  /// The topology of `cluster`, built once by the reader (whoever changes `cluster` resets it).
  std::shared_ptr<const topologies::Topology> topology;
  models::TransformerConfig model;
  models::ParallelPlan plan;
  models::TrainingConfig training;
  std::string calibration;  ///< profile path; empty = built-in
  models::StepOptions simulation;
  models::LoweringOptions lowering;
  bool ignore_memory = false;
  OperationsSpec operations;  ///< reliability, checkpoint and storage (api/operations_scenario)
  /// The operations sections as written (reliability, checkpoint, storage, stragglers), echoed
  /// as given by scenario_to_json: they are structured, not settings of the table.
  nlohmann::json operations_input = nlohmann::json::object();
};

/// The embedded default scenario: Llama 3 8B pre-training at sequence length 8192 with NeMo's
/// published plan for it (TP1 PP1 CP2, micro-batch 1), on 8 DGX H100 GPUs; its "scale" section
/// is the default scaling study (PCIe servers vs DGX H100 vs GB200 NVL72, 8 to 1,024 GPUs). It is
/// also the base that flags and `--set` modify when no file is given.
nlohmann::json default_scenario_json();

/// One `--set`: a JSON pointer and the value put there.
struct Assignment {
  std::string pointer;
  nlohmann::json value;
};

/// Parses "pointer=value" (value parsed as JSON when it is valid JSON, else taken as a string);
/// `where` names the origin for errors.
Assignment parse_assignment(const std::string& text, const std::string& where);

/// Applies "pointer=value" assignments (parse_assignment each).
void apply_assignments(nlohmann::json& doc, const std::vector<std::string>& assignments,
                       const std::string& where);

/// The GPU of a scenario's system (its resolved preset's).
const topologies::GpuSpec& scenario_gpu(const Scenario& scenario);

/// Reads and validates a scenario (strict: unknown keys are errors, plans that do not divide are
/// rejected with the reason, unless `check_plan` is false: the plan searches only take the
/// scenario's plan as the base for the choices they do not make).
Scenario read_scenario(const sim::JsonValue& root, bool check_plan = true);

/// A scenario document as the base of a plan search (`plan`, the Python module): the sizes of its
/// plan (tp, pp, dp, cp, ep, vp, micro_batch) are dropped, since the search chooses them, and the
/// rest is read without checking the plan. `source` names the document for errors.
Scenario read_search_base(nlohmann::json doc, const std::string& source);

/// Reads a scenario's "system" section into `scenario`: preset, GPU count, routing, NVLink and
/// fabric overrides, and the topology they build (what a scaling study re-reads per size).
void read_system(const sim::JsonValue& system, Scenario& scenario);

/// A plan as the `parallelism` object of a scenario (every key the reader accepts but bucket
/// sizes, plus the placement order).
nlohmann::json plan_to_json(const models::ParallelPlan& plan);
/// The scenario as read, as a scenario document that reads back to the same scenario: every
/// setting of api/scenario_settings, the full model, the fabric's tiers and the operations
/// sections as written (`run --json`'s `scenario`).
nlohmann::json scenario_to_json(const Scenario& s);
/// The resolved software stack: preset, attention kernel, CUDA graphs, FSDP, DeepEP, documented.
nlohmann::json software_to_json(const models::SoftwareStack& stack);

}  // namespace fabricsim::api
