#include "models/failure_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

#include "sim/unit_parse.hpp"

namespace fabricsim::models {
namespace {

// The Llama 3 405B snapshot every default rate is counted over: 16,384 H100 in 2,048 servers of
// eight for 54 days (GK-REL, DCD-LLAMA, LLAMA3-SUMMARY in ../shared/reference/hardware.json).
constexpr double kLlamaHours = 54.0 * 24.0;
constexpr double kLlamaGpuHours = 16384.0 * kLlamaHours;
constexpr double kLlamaNodeHours = 2048.0 * kLlamaHours;
constexpr const char* kLlamaSource =
    "Llama 3 405B run, 16,384 H100, 54 days, 419 unexpected interruptions (hardware.json "
    "reliability.llama3_405b_run: GK-REL, DCD-LLAMA, LLAMA3-SUMMARY)";

}  // namespace

std::string_view to_string(FailureScope s) {
  switch (s) {
    case FailureScope::gpu:
      return "GPU";
    case FailureScope::node:
      return "node";
    case FailureScope::job:
      return "job";
  }
  return "?";
}

std::string_view to_string(BlastRadius b) {
  return b == BlastRadius::job ? "job" : "degrade";
}

FailureRate parse_failure_rate(std::string_view text) {
  constexpr std::string_view what =
      "a failure rate such as '9.2e-6/GPU-h', '6.1%/GPU-year', '2e-5/node-h' or '0.9/job-day'";
  const sim::ScopedRate r = sim::parse_scoped_rate(text, what);
  FailureRate rate;
  rate.per_hour = r.per_hour;
  if (r.scope == "gpu") {
    rate.scope = FailureScope::gpu;
  } else if (r.scope == "node") {
    rate.scope = FailureScope::node;
  } else if (r.scope == "job") {
    rate.scope = FailureScope::job;
  } else {
    throw sim::UnitError(
        fmt::format("expected {}, got '{}' (unknown scope '{}')", what, text, r.scope));
  }
  return rate;
}

std::string format_failure_rate(const FailureRate& rate) {
  return fmt::format("{:.3g}/{}-h", rate.per_hour, to_string(rate.scope));
}

std::vector<FailureClass> default_failure_classes() {
  auto per_gpu = [](double count) {
    return FailureRate{count / kLlamaGpuHours, FailureScope::gpu};
  };
  auto per_node = [](double count) {
    return FailureRate{count / kLlamaNodeHours, FailureScope::node};
  };
  std::vector<FailureClass> out;
  out.push_back({"gpu", per_gpu(148 + 19 + 17 + 6 + 6), BlastRadius::job, 0, true,
                 fmt::format("{}: faulty GPU incl. NVLink 148, SRAM 19, GSP 17, silent data "
                             "corruption 6, thermal interface 6",
                             kLlamaSource)});
  out.push_back(
      {"hbm", per_gpu(72), BlastRadius::job, 0, true, fmt::format("{}: HBM3 72", kLlamaSource)});
  // Llama 3 counts NVLink faults under "Faulty GPU"; NCSA Delta reports NVLink errors are mostly
  // retried without failing the job (DELTA-SUM). Zero here so nothing is counted twice.
  out.push_back({"nvlink", FailureRate{0, FailureScope::gpu}, BlastRadius::degrade, 0, false,
                 "counted in gpu (Llama 3 'Faulty GPU (incl. NVLink)'); NVLink errors are mostly "
                 "retried without job failure (NCSA Delta, DELTA-SUM)"});
  // One NIC per GPU on Meta's RoCE cluster, so per GPU-hour.
  out.push_back(
      {"nic", per_gpu(7), BlastRadius::job, 0, true, fmt::format("{}: NIC 7", kLlamaSource)});
  // The fabric's switches and cables grow with the GPU count.
  out.push_back({"switch", per_gpu(35), BlastRadius::job, 0, true,
                 fmt::format("{}: network switch/cable 35", kLlamaSource)});
  out.push_back({"host", per_node(32 + 3 + 3 + 2 + 2 + 2 + 2), BlastRadius::job, 0, true,
                 fmt::format("{}: unplanned host maintenance 32, SSD 3, power supply 3, chassis 2, "
                             "IO board 2, CPU 2, system memory 2",
                             kLlamaSource)});
  out.push_back(
      {"software", per_gpu(54 + 2 + 7), BlastRadius::job, 0, false,
       fmt::format("{}: software bug 54, dependency 2, NCCL watchdog timeout 7", kLlamaSource)});
  return out;
}

const std::vector<std::string>& failure_class_names() {
  static const std::vector<std::string> names = {"gpu",    "hbm",  "nvlink",  "nic",
                                                 "switch", "host", "software"};
  return names;
}

double events_per_hour(const FailureClass& c, int gpus, int nodes) {
  switch (c.rate.scope) {
    case FailureScope::gpu:
      return c.rate.per_hour * gpus;
    case FailureScope::node:
      return c.rate.per_hour * nodes;
    case FailureScope::job:
      return c.rate.per_hour;
  }
  return 0;
}

double JobFailureRates::mtbf_hours() const {
  return interruptions_per_hour > 0 ? 1.0 / interruptions_per_hour
                                    : std::numeric_limits<double>::infinity();
}

JobFailureRates job_failure_rates(const std::vector<FailureClass>& classes, int gpus, int nodes) {
  JobFailureRates r;
  for (const FailureClass& c : classes) {
    const double e = events_per_hour(c, gpus, nodes);
    if (c.blast == BlastRadius::job) {
      r.interruptions_per_hour += e;
      if (c.needs_repair) r.repair_per_hour += e;
    } else {
      r.degrade_per_hour += e;
      r.degrade_slowdown_hours_per_hour += e * c.slowdown;
    }
  }
  return r;
}

}  // namespace fabricsim::models
