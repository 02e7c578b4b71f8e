#pragma once
// Component failures of a training job: rates per GPU-hour, per node-hour or per job-hour by
// component class, each with its blast radius (stops the synchronous job, or only slows it) and
// whether the failed node must be replaced. Defaults are the Llama 3 405B run's unexpected
// interruptions (16,384 H100, 54 days, 419 interruptions), documented in docs/models.md.

#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::models {

/// What a rate is counted per: one GPU, one node (server) or the whole job, per hour.
enum class FailureScope { gpu, node, job };
std::string_view to_string(FailureScope s);

/// A job-stopping failure interrupts every rank of the synchronous step (restart from the last
/// checkpoint); a degrading one lets the job continue slower until it is repaired (a link whose
/// traffic the fabric routes around, an NVLink error the driver retries).
enum class BlastRadius { job, degrade };
std::string_view to_string(BlastRadius b);

struct FailureRate {
  double per_hour = 0;  ///< events per scope-unit per hour
  FailureScope scope = FailureScope::gpu;
};

/// "9.2e-6/GPU-h", "6.1%/GPU-year" (an annualised failure rate), "0.87/job-day", "2e-5/node-h".
/// Throws sim::UnitError saying what is expected.
FailureRate parse_failure_rate(std::string_view text);
std::string format_failure_rate(const FailureRate& rate);

struct FailureClass {
  std::string name;  ///< gpu, hbm, nvlink, nic, switch, host, software
  FailureRate rate;
  BlastRadius blast = BlastRadius::job;
  double slowdown = 0;       ///< degrade only: fraction of throughput lost until repaired
  bool needs_repair = true;  ///< hardware: the node is replaced (spare) or waits for repair
  std::string source;
};

/// The seven classes with the Llama 3 405B rates: what each counts and where it comes from.
std::vector<FailureClass> default_failure_classes();
const std::vector<std::string>& failure_class_names();

/// Events per hour of one class for a job on `gpus` GPUs over `nodes` nodes.
double events_per_hour(const FailureClass& c, int gpus, int nodes);

struct JobFailureRates {
  double interruptions_per_hour = 0;  ///< job-stopping, all classes
  double repair_per_hour = 0;         ///< of those, the ones that take a node out
  double degrade_per_hour = 0;
  double degrade_slowdown_hours_per_hour = 0;  ///< sum of rate x slowdown (times repair time later)
  double mtbf_hours() const;                   ///< 1 / interruptions_per_hour; inf when none
};
JobFailureRates job_failure_rates(const std::vector<FailureClass>& classes, int gpus, int nodes);

}  // namespace fabricsim::models
