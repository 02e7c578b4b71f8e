#include "tools/fabricsim/scenario_options.hpp"

#include <fmt/format.h>

#include "tools/fabricsim/cli_options.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::tools {

void ScenarioOptions::add_set_to(CLI::App& app) {
  // One value per occurrence, so a scenario file after it stays positional.
  app.add_option("--set", sets_, "Set a scenario field: /json/pointer=value (repeatable)")
      ->allow_extra_args(false);
}

void ScenarioOptions::add_to(CLI::App& app, bool plan_flags) {
  add_set_to(app);
  app.add_option("--system", system_, "System preset");
  app.add_option("--gpus", gpus_, "Number of GPUs")->check(positive_count());
  app.add_option("--model", model_, "Model preset");
  if (plan_flags) {
    app.add_option("--tp", tp_, "Tensor parallel size")->check(positive_count());
    app.add_option("--pp", pp_, "Pipeline parallel size")->check(positive_count());
    app.add_option("--dp", dp_, "Data parallel size (default: what is left)")
        ->check(positive_count());
    app.add_option("--cp", cp_, "Context parallel size")->check(positive_count());
    app.add_option("--ep", ep_, "Expert parallel size")->check(positive_count());
    app.add_option("--vp", vp_, "Virtual pipeline stages (interleaving)")->check(positive_count());
    app.add_option("--micro-batch", mb_, "Sequences per micro-batch")->check(positive_count());
  }
  app.add_option("--global-batch", gbs_, "Sequences per step")->check(positive_count());
  app.add_option("--seq-len", seq_, "Training sequence length")->check(positive_count());
  if (plan_flags) app.add_option("--zero", zero_, "ZeRO stage (0-3)")->check(CLI::Range(0, 3));
  app.add_option("--precision", precision_, "bf16, fp16, fp8, mxfp8 or nvfp4");
  if (plan_flags) app.add_option("--recompute", recompute_, "none, selective or full");
  app.add_option("--task", task_, "pretrain, sft or lora");
  app.add_option("--backend", backend_, "flow or analytical");
  app.add_option("--calibration", calibration_, "Calibration profile JSON");
  app.add_flag("--ignore-memory", ignore_memory_, "Simulate plans that do not fit in HBM");
  app.add_flag("--collnet", collnet_,
               "Let NCCL use IB SHARP (CollNet, NCCL_COLLNET_ENABLE=1) where the fabric has it");
}

std::vector<api::Assignment> ScenarioOptions::overrides() const {
  // Checked before the file is read: in "--set /x 2" the 2 would be taken as the scenario file.
  for (const std::string& a : sets_) {
    if (a.find('=') == std::string::npos) {
      throw sim::InputError(
          kCommandLine, "--set",
          fmt::format("expected /json/pointer=value, got '{}' (no spaces around '=')", a));
    }
  }
  std::vector<api::Assignment> out;
  auto set = [&](const std::string& pointer, const nlohmann::json& value) {
    out.push_back({pointer, value});
  };
  if (!system_.empty()) set("/system/preset", system_);
  if (gpus_ > 0) set("/system/gpus", gpus_);
  if (!model_.empty()) set("/model", {{"preset", model_}});
  if (tp_ > 0) set("/parallelism/tp", tp_);
  if (pp_ > 0) set("/parallelism/pp", pp_);
  if (cp_ > 0) set("/parallelism/cp", cp_);
  if (ep_ > 0) set("/parallelism/ep", ep_);
  if (vp_ > 0) set("/parallelism/vp", vp_);
  if (mb_ > 0) set("/parallelism/micro_batch", mb_);
  if (zero_ >= 0) set("/parallelism/zero", zero_);
  if (!recompute_.empty()) set("/parallelism/recompute", recompute_);
  if (dp_ > 0) set("/parallelism/dp", dp_);
  if (gbs_ > 0) set("/training/global_batch", gbs_);
  if (seq_ > 0) set("/training/seq_len", seq_);
  if (!precision_.empty()) set("/training/precision", precision_);
  if (!task_.empty()) set("/training/task", task_);
  if (!backend_.empty()) set("/simulation/backend", backend_);
  if (!calibration_.empty()) set("/calibration", calibration_);
  if (ignore_memory_) set("/simulation/ignore_memory", true);
  if (collnet_) set("/simulation/collnet", true);
  for (const std::string& a : sets_)
    out.push_back(api::parse_assignment(a, kCommandLine));
  return out;
}

ScenarioRecord ScenarioOptions::record(const std::string& file) const {
  return {file.empty() ? std::string("<embedded default>") : file, overrides()};
}

nlohmann::json ScenarioOptions::document(const std::string& file) const {
  const std::vector<api::Assignment> sets = overrides();
  nlohmann::json doc = api::default_scenario_json();
  if (!file.empty()) doc = sim::load_json_file(file).root().raw();
  if (dp_ == 0 && (gpus_ > 0 || tp_ > 0 || pp_ > 0 || cp_ > 0) && doc.contains("parallelism")) {
    doc["parallelism"].erase("dp");  // re-derived from the new GPU count or plan
  }
  for (const api::Assignment& a : sets)
    sim::set_at_pointer(doc, a.pointer, a.value, kCommandLine);
  return doc;
}

ScenarioRecord ScenarioOptions::system_record(const std::string& preset, int gpus) const {
  ScenarioRecord record{fmt::format("preset {}, {} GPUs", preset, gpus), overrides()};
  for (const api::Assignment& a : record.overrides) {
    if (!a.pointer.starts_with("/system/")) {
      throw sim::InputError(kCommandLine, "--set",
                            fmt::format("expected a /system/... field (the system is all this "
                                        "command builds), got '{}'",
                                        a.pointer));
    }
    if (a.pointer == "/system/preset" || a.pointer == "/system/gpus" ||
        a.pointer.starts_with("/system/routing")) {
      throw sim::InputError(
          kCommandLine, "--set",
          fmt::format("{} has its own flag here (--system, --gpus, --routing)", a.pointer));
    }
  }
  return record;
}

models::System ScenarioOptions::system(const std::string& preset, int gpus) const {
  const ScenarioRecord record = system_record(preset, gpus);
  // Without overrides the flags are checked as flags (errors name --gpus and --system).
  if (record.overrides.empty()) return system_from_flags(preset, gpus);
  nlohmann::json doc = {{"system", {{"preset", preset}, {"gpus", gpus}}}};
  for (const api::Assignment& a : record.overrides)
    sim::set_at_pointer(doc, a.pointer, a.value, kCommandLine);
  const sim::JsonDocument parsed(doc, kCommandLine);
  api::Scenario sc;
  api::read_system(parsed.root().as_object().required("system"), sc);
  const topologies::SystemPreset& p = *topologies::find_system(sc.system);
  return {sc.cluster.system, *topologies::find_gpu(p.gpu), p.cpu, sc.topology};
}

api::Scenario ScenarioOptions::scenario(const std::string& file) const {
  const nlohmann::json doc = document(file);
  const sim::JsonDocument parsed(doc, file.empty() ? std::string("<scenario>") : file);
  return api::read_scenario(parsed.root());
}

api::Scenario ScenarioOptions::search_base(const std::string& file) const {
  return api::read_search_base(document(file), file.empty() ? std::string("<scenario>") : file);
}

}  // namespace fabricsim::tools
