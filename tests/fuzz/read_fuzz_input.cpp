#include "tests/fuzz/read_fuzz_input.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "api/job_mix.hpp"
#include "api/scaling_study.hpp"
#include "api/scenario.hpp"
#include "calibration/cases.hpp"
#include "calibration/importers.hpp"
#include "calibration/kineto_trace.hpp"
#include "calibration/profile.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "topologies/spec_error.hpp"
#include "topologies/topology_json.hpp"

namespace fabricsim::testing {
namespace {

constexpr std::string_view kReaders = "TSPLCGNKRJF";

// Scenarios that build more GPUs than this are skipped: they are valid, only slow to build, and
// the size limits themselves are tested in tests/hardening_test.cpp.
constexpr int64_t kMaxFuzzGpus = 4096;

void read_scenario_text(std::string_view text) {
  std::vector<std::string> sets;
  while (!text.empty() && text.front() == '/') {
    const size_t end = std::min(text.find('\n'), text.size());
    sets.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  nlohmann::json doc = text.empty() ? api::default_scenario_json()
                                    : sim::parse_json_text(text, "fuzz.json").root().raw();
  api::apply_assignments(doc, sets, "<command line>");
  const nlohmann::json::json_pointer gpus("/system/gpus");
  if (doc.is_object() && doc.contains(gpus) && doc[gpus].is_number() &&
      doc[gpus].get<double>() > kMaxFuzzGpus) {
    return;
  }
  const sim::JsonDocument parsed(doc, "fuzz.json");
  api::read_scenario(parsed.root());
  api::read_scaling_study(parsed.root());
}

/// A jobs file (several jobs on one cluster), read but not simulated; the cluster and each job
/// are bounded as scenarios are.
void read_job_mix_text(std::string_view text) {
  const sim::JsonDocument parsed = sim::parse_json_text(text, "fuzz.json");
  const nlohmann::json& doc = parsed.root().raw();
  const nlohmann::json::json_pointer gpus("/system/gpus");
  if (doc.is_object() && doc.contains(gpus) && doc[gpus].is_number() &&
      doc[gpus].get<double>() > kMaxFuzzGpus) {
    return;
  }
  api::read_job_mix(parsed.root());
}

void read(char reader, std::string_view text) {
  const std::string name = "fuzz";
  switch (reader) {
    case 'T':
      try {
        topologies::topology_from_json(sim::parse_json_text(text, name).root());
      } catch (const topologies::SpecError&) {
      }
      break;
    case 'S':
      read_scenario_text(text);
      break;
    case 'P':
      calibration::profile_from_json(sim::parse_json_text(text, name).root());
      break;
    case 'L':
      calibration::import_nccl_tests_log(text, name);
      break;
    case 'C':
      calibration::import_gemm_csv(text, name);
      break;
    case 'G':
      calibration::import_gemm_bench_json(sim::parse_json_text(text, name).root());
      break;
    case 'N':
      calibration::import_nccl_bench_json(sim::parse_json_text(text, name).root());
      break;
    case 'K':
      calibration::measurements_from_cases(
          calibration::read_cases(sim::parse_json_text(text, name).root()));
      break;
    case 'R':
      calibration::read_kineto_trace(sim::parse_json_text(text, name).root());
      break;
    case 'J':
      read_job_mix_text(text);
      break;
    default:
      calibration::detect_format(name, text);
      break;
  }
}

}  // namespace

void read_fuzz_input(std::string_view bytes) {
  if (bytes.empty()) return;
  const char first = bytes.front();
  const char reader = kReaders.find(first) != std::string_view::npos
                          ? first
                          : kReaders[static_cast<unsigned char>(first) % kReaders.size()];
  try {
    read(reader, bytes.substr(1));
  } catch (const sim::InputError&) {
  }
}

}  // namespace fabricsim::testing
