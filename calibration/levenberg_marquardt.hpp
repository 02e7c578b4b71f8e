#pragma once
// Levenberg-Marquardt least squares with a forward-difference Jacobian (Eigen for the linear
// algebra). The residual function maps parameters to residuals; callers reparameterise (logs,
// logits) so that every real vector is a valid parameter set.

#include <Eigen/Dense>
#include <functional>

namespace fabricsim::calibration {

struct LmOptions {
  int max_iterations = 100;
  double initial_lambda = 1e-3;
  double step = 1e-5;        ///< relative finite-difference step
  double tolerance = 1e-10;  ///< relative cost improvement that counts as converged
};

struct LmResult {
  Eigen::VectorXd parameters;
  double cost = 0;  ///< sum of squared residuals
  int iterations = 0;
  bool converged = false;
  /// Parameters the data do not constrain (Jacobian column ~ 0): left at their start value.
  std::vector<bool> unconstrained;
};

using ResidualFunction = std::function<Eigen::VectorXd(const Eigen::VectorXd&)>;

LmResult levenberg_marquardt(const ResidualFunction& residuals, Eigen::VectorXd start,
                             const LmOptions& options = {});

}  // namespace fabricsim::calibration
