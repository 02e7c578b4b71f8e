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

bool ScenarioOptions::Flag::given() const {
  switch (setting->kind) {
    case api::SettingKind::boolean:
      return on;
    case api::SettingKind::count:
      return number > 0;
    case api::SettingKind::stage:
    case api::SettingKind::natural:
      return number >= 0;
    default:
      return !text.empty();
  }
}

nlohmann::json ScenarioOptions::Flag::value() const {
  switch (setting->kind) {
    case api::SettingKind::boolean:
      return true;
    case api::SettingKind::count:
    case api::SettingKind::stage:
    case api::SettingKind::natural:
      return number;
    case api::SettingKind::object:  // a structured part: the flag names its preset (--model)
      return {{"preset", text}};
    default:
      return text;
  }
}

const ScenarioOptions::Flag* ScenarioOptions::flag(std::string_view pointer) const {
  for (const Flag& f : flags_) {
    if (f.setting->pointer == pointer) return &f;
  }
  return nullptr;
}

void ScenarioOptions::add_to(CLI::App& app, bool plan_flags) {
  add_set_to(app);
  for (const api::Setting& s : api::scenario_settings()) {
    if (s.flag.empty() || (!plan_flags && s.section() == "/parallelism")) continue;
    Flag& f = flags_.emplace_back(Flag{.setting = &s});
    const std::string name(s.flag_name()), help(s.help);
    switch (s.kind) {
      case api::SettingKind::boolean:
        app.add_flag(name, f.on, help);
        break;
      case api::SettingKind::count:
        app.add_option(name, f.number, help)->check(positive_count());
        break;
      case api::SettingKind::stage:
        f.number = -1;
        app.add_option(name, f.number, help)->check(CLI::Range(0, 3));
        break;
      case api::SettingKind::natural:
        f.number = -1;  // unset: 0 is a value
        app.add_option(name, f.number, help)->check(natural_count());
        break;
      default:
        app.add_option(name, f.text, help);
    }
  }
}

std::string ScenarioOptions::system() const {
  const Flag* f = flag("/system/preset");
  return f != nullptr ? f->text : std::string();
}

int ScenarioOptions::gpus() const {
  const Flag* f = flag("/system/gpus");
  return f != nullptr ? f->number : 0;
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
  for (const Flag& f : flags_) {
    if (f.given()) out.push_back({std::string(f.setting->pointer), f.value()});
  }
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
  auto given = [&](std::string_view pointer) {
    const Flag* f = flag(pointer);
    return f != nullptr && f->given();
  };
  if (!given("/parallelism/dp") &&
      (given("/system/gpus") || given("/parallelism/tp") || given("/parallelism/pp") ||
       given("/parallelism/cp")) &&
      doc.contains("parallelism")) {
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
  const topologies::SystemPreset& p = *sc.preset;
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
