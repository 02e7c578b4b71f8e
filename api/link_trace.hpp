#pragma once
// Link utilisation over time: the busiest links of a flow step, each as its average share of
// usable capacity per time bucket, from the rate counters the traced step recorded (every
// re-solve of the flow network's max-min sharing). Written by `run --link-trace`, drawn by
// `fabricsim plot links`.

#include <nlohmann/json.hpp>

#include "models/step_simulator.hpp"

namespace fabricsim::api {

/// {"format": "fabricsim-link-trace-1", "step_time_s", "bucket_s", "buckets",
///  "links": [{"link", "kind", "bytes", "usable_GBps", "utilization": [one per bucket]}]}.
/// `step` must have been simulated with tracing on the flow backend; a link's usable capacity
/// is what its step-average utilisation implies (bytes / (utilization x step time)), so the
/// buckets of a link average to that utilisation. Throws std::invalid_argument for buckets < 1.
nlohmann::json link_trace_json(const models::StepResult& step, int buckets);

}  // namespace fabricsim::api
