#include "calibration/levenberg_marquardt.hpp"

#include <cmath>
#include <vector>

namespace fabricsim::calibration {

LmResult levenberg_marquardt(const ResidualFunction& residuals, Eigen::VectorXd x,
                             const LmOptions& options) {
  const Eigen::Index n = x.size();
  LmResult result;
  // Unconstrained = frozen in every iteration. A parameter the data moved and that then stalled
  // (at a bound of the caller's reparameterisation, say) was fitted, not left at its start.
  result.unconstrained.assign(static_cast<size_t>(n), true);
  std::vector<bool> frozen(static_cast<size_t>(n), false);
  Eigen::VectorXd r = residuals(x);
  double cost = r.squaredNorm();
  double lambda = options.initial_lambda;
  for (int it = 0; it < options.max_iterations; ++it) {
    result.iterations = it + 1;
    Eigen::MatrixXd jacobian(r.size(), n);
    for (Eigen::Index j = 0; j < n; ++j) {
      Eigen::VectorXd xp = x;
      const double h = options.step * std::max(1.0, std::fabs(x[j]));
      xp[j] += h;
      jacobian.col(j) = (residuals(xp) - r) / h;
    }
    // Columns the data do not move are frozen: their normal equations would be singular.
    for (Eigen::Index j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(j);
      frozen[k] = jacobian.col(j).norm() < 1e-9;
      if (frozen[k]) {
        jacobian.col(j).setZero();
      } else {
        result.unconstrained[k] = false;
      }
    }
    const Eigen::MatrixXd jtj = jacobian.transpose() * jacobian;
    const Eigen::VectorXd jtr = jacobian.transpose() * r;
    bool improved = false;
    for (int attempt = 0; attempt < 20; ++attempt) {
      Eigen::MatrixXd a = jtj;
      for (Eigen::Index j = 0; j < n; ++j) {
        a(j, j) += lambda * std::max(jtj(j, j), 1e-12);
        if (frozen[static_cast<size_t>(j)]) a(j, j) = 1.0;
      }
      const Eigen::VectorXd delta = a.ldlt().solve(-jtr);
      const Eigen::VectorXd candidate = x + delta;
      const Eigen::VectorXd rc = residuals(candidate);
      const double c = rc.squaredNorm();
      if (std::isfinite(c) && c < cost) {
        const double gain = (cost - c) / std::max(cost, 1e-300);
        x = candidate;
        r = rc;
        cost = c;
        lambda = std::max(lambda / 3, 1e-12);
        improved = true;
        if (gain < options.tolerance) result.converged = true;
        break;
      }
      lambda *= 4;
    }
    if (!improved || result.converged) {
      result.converged = true;
      break;
    }
  }
  result.parameters = x;
  result.cost = cost;
  return result;
}

}  // namespace fabricsim::calibration
