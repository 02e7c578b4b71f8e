#include "api/sweep_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "api/scenario.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::api {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

/// `inner` is `outer` or a field inside it.
bool within(const std::string& inner, const std::string& outer) {
  return inner == outer || starts_with(inner, outer + "/");
}

/// FNV-1a: a stable hash (std::hash is not specified to be the same across builds).
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// Each value of an axis, applied to the base alone, must name a field the scenario reader knows
/// and have the type it expects there. Other complaints (a plan that no longer divides) depend on
/// the other axes and make that point infeasible, not the spec wrong.
void check_axis(const SweepSpec& spec, const SweepAxis& axis, const sim::JsonValue& where) {
  for (size_t i = 0; i < axis.values.size(); ++i) {
    const std::string at = sim::json_pointer_child(where.pointer(), std::to_string(i));
    nlohmann::json doc = spec.base;
    try {
      sim::set_at_pointer(doc, axis.pointer, axis.values[i], spec.source);
    } catch (const sim::InputError& e) {
      throw sim::InputError(spec.source, where.pointer(),
                            "the base scenario has no place for this pointer: " + e.message());
    }
    try {
      read_scenario(sim::JsonDocument(std::move(doc), spec.source).root());
    } catch (const sim::InputError& e) {
      const bool unknown = starts_with(e.message(), "unknown key") &&
                           (within(e.path(), axis.pointer) || within(axis.pointer, e.path()));
      const bool mistyped = starts_with(e.message(), "expected ") && within(e.path(), axis.pointer);
      if (unknown) {
        throw sim::InputError(spec.source, where.pointer(),
                              "the base scenario does not accept this field: " + e.message());
      }
      if (mistyped) {
        throw sim::InputError(spec.source, at,
                              fmt::format("not a value for {}: {}", axis.pointer, e.message()));
      }
    }
  }
}

nlohmann::json read_base(const std::optional<sim::JsonValue>& v, const std::string& spec_file) {
  if (!v) return default_scenario_json();
  if (v->raw().is_object()) return v->raw();
  if (!v->raw().is_string()) v->fail("a scenario object or a scenario file name");
  std::filesystem::path file = v->as_string();
  if (file.is_relative()) file = std::filesystem::path(spec_file).parent_path() / file;
  return sim::load_json_file(file.string()).root().raw();
}

}  // namespace

SweepSpec read_sweep_spec(const sim::JsonValue& root) {
  SweepSpec spec;
  spec.source = root.file();
  sim::ObjectReader top = root.as_object();
  top.ignore("comment");
  spec.base = read_base(top.optional("base"), root.file());
  if (auto c = top.optional("combine")) {
    spec.combine =
        c->as_enum({"product", "zip"}) == "zip" ? SweepCombine::zip : SweepCombine::product;
  }
  if (auto f = top.optional("fidelity")) {
    spec.fidelity =
        f->as_enum({"analytical", "flow"}) == "flow" ? Fidelity::flow : Fidelity::analytical;
  }
  const sim::JsonValue axes_value = top.required("axes");
  sim::ObjectReader axes = axes_value.as_object();
  const std::vector<std::string> pointers = axes.keys();
  if (pointers.empty()) axes_value.fail("at least one axis (\"/json/pointer\": [values...])");
  std::vector<sim::JsonValue> locations;
  for (const std::string& pointer : pointers) {
    const sim::JsonValue v = axes.required(pointer);
    if (pointer.empty() || pointer[0] != '/') {
      v.fail_message("an axis is named by a JSON pointer into the scenario, such as /system/gpus");
    }
    SweepAxis axis{pointer, {}};
    for (const sim::JsonValue& value : v.as_array())
      axis.values.push_back(value.raw());
    if (axis.values.empty()) v.fail("a non-empty list of values");
    for (const SweepAxis& other : spec.axes) {
      if (within(pointer, other.pointer) || within(other.pointer, pointer)) {
        v.fail_message(fmt::format("overlaps the axis {}", other.pointer));
      }
    }
    if (spec.combine == SweepCombine::zip && !spec.axes.empty() &&
        axis.values.size() != spec.axes.front().values.size()) {
      v.fail_message(fmt::format("zipped axes need lists of one length: this one has {}, {} has {}",
                                 axis.values.size(), spec.axes.front().pointer,
                                 spec.axes.front().values.size()));
    }
    spec.axes.push_back(std::move(axis));
    locations.push_back(v);
  }
  top.finish();
  for (size_t a = 0; a < spec.axes.size(); ++a)
    check_axis(spec, spec.axes[a], locations[a]);
  return spec;
}

SweepSpec load_sweep_spec(const std::string& path) {
  return read_sweep_spec(sim::load_json_file(path).root());
}

int64_t sweep_point_count(const SweepSpec& spec) {
  if (spec.combine == SweepCombine::zip)
    return static_cast<int64_t>(spec.axes.front().values.size());
  int64_t n = 1;
  for (const SweepAxis& a : spec.axes) {
    const auto len = static_cast<int64_t>(a.values.size());
    if (n > (int64_t{1} << 40) / len) {
      throw sim::InputError(spec.source, "/axes", "more than 2^40 points; split the sweep");
    }
    n *= len;
  }
  return n;
}

SweepPoint sweep_point(const SweepSpec& spec, int64_t index) {
  SweepPoint p;
  p.index = index;
  p.assignments.resize(spec.axes.size());
  int64_t rest = index;
  for (size_t k = spec.axes.size(); k-- > 0;) {
    const SweepAxis& a = spec.axes[k];
    const auto len = static_cast<int64_t>(a.values.size());
    const int64_t i = spec.combine == SweepCombine::zip ? index : rest % len;
    rest /= len;
    p.assignments[k] = {a.pointer, a.values[static_cast<size_t>(i)]};
  }
  nlohmann::json assigned = nlohmann::json::object();
  for (const auto& [pointer, value] : p.assignments)
    assigned[pointer] = value;
  const int width =
      std::max<int>(6, static_cast<int>(std::to_string(sweep_point_count(spec) - 1).size()));
  p.id = fmt::format("{:0{}d}-{:08x}", index, width,
                     static_cast<uint32_t>(fnv1a(assigned.dump()) & 0xffffffffu));
  return p;
}

nlohmann::json sweep_point_document(const SweepSpec& spec, const SweepPoint& point) {
  nlohmann::json doc = spec.base;
  for (const auto& [pointer, value] : point.assignments)
    sim::set_at_pointer(doc, pointer, value, spec.source);
  return doc;
}

nlohmann::json sweep_spec_json(const SweepSpec& spec) {
  nlohmann::json axes = nlohmann::json::object();
  for (const SweepAxis& a : spec.axes)
    axes[a.pointer] = a.values;
  nlohmann::json j = {{"base", spec.base},
                      {"axes", axes},
                      {"combine", spec.combine == SweepCombine::zip ? "zip" : "product"}};
  if (spec.fidelity) j["fidelity"] = *spec.fidelity == Fidelity::flow ? "flow" : "analytical";
  return j;
}

}  // namespace fabricsim::api
