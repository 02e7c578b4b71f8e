#include "calibration/levenberg_marquardt.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

using namespace fabricsim::calibration;

TEST_CASE("Levenberg-Marquardt recovers a curve's parameters from noisy data", "[fit]") {
  // y = a * exp(-b x) + c with 1% multiplicative noise.
  const double a = 3.0, b = 0.7, c = 0.5;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> xs, ys;
  for (int i = 0; i < 60; ++i) {
    const double x = i * 0.1;
    xs.push_back(x);
    ys.push_back((a * std::exp(-b * x) + c) * (1 + noise(rng)));
  }
  auto residuals = [&](const Eigen::VectorXd& p) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      r[static_cast<Eigen::Index>(i)] = p[0] * std::exp(-p[1] * xs[i]) + p[2] - ys[i];
    }
    return r;
  };
  const LmResult fit = levenberg_marquardt(residuals, Eigen::Vector3d(1, 1, 1));
  CHECK(fit.converged);
  CHECK(fit.parameters[0] == Approx(a).epsilon(0.03));
  CHECK(fit.parameters[1] == Approx(b).epsilon(0.03));
  CHECK(fit.parameters[2] == Approx(c).epsilon(0.05));
}

TEST_CASE("parameters the data cannot see are left alone", "[fit]") {
  auto residuals = [](const Eigen::VectorXd& p) {
    Eigen::VectorXd r(3);
    r << p[0] - 1, p[0] - 1.2, p[0] - 0.8;
    return r;
  };
  const LmResult fit = levenberg_marquardt(residuals, Eigen::Vector2d(5, 42));
  CHECK(fit.parameters[0] == Approx(1.0));
  CHECK(fit.parameters[1] == 42);
  CHECK(fit.unconstrained[1]);
}

TEST_CASE("a parameter the data moved is fitted even when it stalls at a bound", "[fit]") {
  // The caller clamps p[0] at 2 (as the fits bound their reparameterised values): the first step
  // drives it past the bound, where its Jacobian column vanishes. It was fitted all the same;
  // reporting it as unconstrained ("left at its start value") would be false.
  auto residuals = [](const Eigen::VectorXd& p) {
    Eigen::VectorXd r(2);
    r << std::min(p[0], 2.0) - 5, p[1] - 1;
    return r;
  };
  const LmResult fit = levenberg_marquardt(residuals, Eigen::Vector2d(0, 0));
  CHECK(fit.parameters[0] >= 2);
  CHECK(fit.parameters[1] == Approx(1.0));
  CHECK_FALSE(fit.unconstrained[0]);
  CHECK_FALSE(fit.unconstrained[1]);
}
