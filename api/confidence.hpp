#pragma once
// How much measured data a prediction rests on: the calibration profile behind it and, for each
// calibrated part of the model (GEMMs of the training precision, collectives, the software
// stack, the kernels that keep documented defaults), whether it was fitted and to how many public
// points. `run`, `scale` and `plan` print it as one line and carry it under "confidence" in JSON.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/scenario.hpp"
#include "calibration/profile.hpp"
#include "models/compute_profile.hpp"

namespace fabricsim::api {

struct Confidence {
  std::string system;        ///< the system preset
  std::string calibration;   ///< where the profile came from (describe_calibration)
  std::string precision;     ///< the GEMM precision of the training run
  bool gemm_fitted = false;  ///< GEMM efficiency fitted to measurements of this GPU
  int gemm_points = 0;       ///< measurements behind that fit
  double gemm_median = 0;    ///< its median relative error
  bool collective_fitted = false;
  int collective_points = 0;
  /// The step's tensor-core rate over the GEMM fit's at its precision (models::sustained_clock):
  /// below 1 where the GPU's sustained matmul figure, measured on one GPU, caps a burst fit.
  double sustained_clock = 1;
  /// The sustained share is assumed (a Blackwell GPU without a figure of its own takes the H200's).
  bool sustained_assumed = false;
  /// Attention runs in FP8 (software.fp8_attention in a quantized run), at speed-ups over BF16
  /// that rest on one cuDNN benchmark a generation (models::fp8_attention_speedup).
  bool fp8_attention = false;
  /// MoE tokens cross NVLink through Hybrid-EP on a GPU that is not a Blackwell: its NVLink rates
  /// come from B200/GB200 rows only (models/moe_alltoall).
  bool hybridep_nvlink_assumed = false;
  std::string software;  ///< the software preset
  bool software_documented = false;
  /// The preset's figures are announcements, not a measured product (Vera Rubin).
  bool announced = false;
  /// Nothing of this GPU or system was measured: figures are announced (e.g. Vera Rubin) or
  /// inherited from a related preset.
  bool unmeasured = false;
  /// Paths the scenario runs on which published runs are known to be slower than the model
  /// predicts, each with the docs/validation.md section that measures it (known_gaps).
  std::vector<std::string> known_gaps;
};

/// The known gaps of a scenario: dropless MoE through NCCL's all-to-all dispatcher with eager
/// experts, GPT-OSS's layer (its clamped GLU, expert biases and attention sinks), and
/// expert-parallel MoE on an x86 Blackwell system. Read off the scenario's own settings; the
/// figures are comparisons with published runs, never fitted.
std::vector<std::string> known_gaps(const Scenario& s);

/// "built-in profile of <system>" (every preset has one) or the profile's path; with a
/// run-calibrated sustained efficiency, that too.
std::string describe_calibration(const Scenario& s, const models::ComputeProfile& compute);
Confidence assess_confidence(const calibration::CalibrationProfile& profile, const Scenario& s);
/// The confidence of `s` on its own calibration profile (scenario_profile): what a command that
/// runs many plans or sizes of one system states once.
Confidence scenario_confidence(const Scenario& s);
nlohmann::json confidence_to_json(const Confidence& c);
/// "GEMM fp8: 10 points (median 2.7%); collectives: 33 points; attention, memory-bound and host
/// costs: documented defaults; software nemo-24.07 (documented)"
std::string confidence_line(const Confidence& c);
/// The calibration, then confidence_line: "built-in profile of dgx-h100; GEMM bf16: ...", the
/// line `scale` and `plan` print (`run` prints the calibration on a line of its own).
std::string confidence_with_calibration(const Confidence& c);

}  // namespace fabricsim::api
