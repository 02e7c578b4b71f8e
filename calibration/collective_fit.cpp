#include "calibration/collective_fit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>

#include "calibration/fit_quality.hpp"
#include "calibration/levenberg_marquardt.hpp"
#include "models/collective_algorithms.hpp"
#include "models/collective_model.hpp"
#include "models/system.hpp"

namespace fabricsim::calibration {
namespace {

double logit(double x) {
  return std::log(x / (1 - x));
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

/// Smallest |d log(time) / d parameter| at some point for a parameter to count as fitted.
constexpr double kMinSensitivity = 0.01;
/// Weight of the prior residual (x - start) per parameter, in log/logit units: moving a parameter
/// by a factor e costs as much as one point missing by 1%.
constexpr double kPriorWeight = 0.01;

const std::vector<std::string> kNames{"nvlink_efficiency", "nvls_factor", "network_efficiency",
                                      "launch_overhead", "latency_scale"};

Eigen::VectorXd pack(const models::CollectiveProfile& p) {
  Eigen::VectorXd x(5);
  x << logit(std::clamp(p.nvlink_efficiency, 0.05, 0.99)),
      logit(std::clamp(p.nvls_factor, 0.05, 0.99)),
      logit(std::clamp(p.network_efficiency, 0.05, 0.99)),
      std::log(std::max(p.launch_overhead.us(), 0.5)), std::log(std::max(p.latency_scale, 0.05));
  return x;
}

models::CollectiveProfile unpack(const Eigen::VectorXd& x, models::CollectiveProfile p) {
  // Efficiencies stay within [0.7%, 99.3%] however far a trial step goes.
  p.nvlink_efficiency = sigmoid(std::clamp(x[0], -5.0, 5.0));
  p.nvls_factor = sigmoid(std::clamp(x[1], -5.0, 5.0));
  p.network_efficiency = sigmoid(std::clamp(x[2], -5.0, 5.0));
  // Bounded so that a wild Levenberg-Marquardt trial step stays a finite, physical profile.
  p.launch_overhead = sim::Time::from_us(std::exp(std::clamp(x[3], -5.0, 7.0)));
  p.latency_scale = std::exp(std::clamp(x[4], -5.0, 3.0));
  return p;
}

/// Sets parameter `index` (of kNames) of `p` to its value in `start`.
void keep_start(size_t index, const models::CollectiveProfile& start,
                models::CollectiveProfile& p) {
  if (index == 0) p.nvlink_efficiency = start.nvlink_efficiency;
  if (index == 1) p.nvls_factor = start.nvls_factor;
  if (index == 2) p.network_efficiency = start.network_efficiency;
  if (index == 3) p.launch_overhead = start.launch_overhead;
  if (index == 4) p.latency_scale = start.latency_scale;
}

struct Sized {
  models::System system;
  std::unique_ptr<topologies::Router> router;
};

}  // namespace

CollectiveFitResult fit_collectives(const std::string& system,
                                    const std::vector<CollectiveMeasurement>& measurements,
                                    const models::CollectiveProfile& start,
                                    double default_large_message) {
  CollectiveFitResult result;
  result.profile = start;
  std::map<int, std::unique_ptr<Sized>> systems;
  struct Job {
    CollectivePoint point;
    models::CollectiveRequest request;
    Sized* sized;
  };
  std::vector<Job> jobs;
  for (const CollectiveMeasurement& m : measurements) {
    if (m.system != system || m.ranks < 2 || m.busbw_GBps <= 0) continue;
    const auto op = models::parse_collective_op(m.op);
    if (!op) continue;
    std::optional<models::Algorithm> algorithm;
    if (!m.algorithm.empty()) {
      algorithm = models::parse_algorithm(m.algorithm);
      if (!algorithm) continue;
    }
    auto& sized = systems[m.ranks];
    if (!sized) {
      sized = std::make_unique<Sized>();
      sized->system = models::make_system(system, m.ranks);
      sized->router = std::make_unique<topologies::Router>(*sized->system.topology,
                                                           topologies::RoutingStrategy::ecmp);
    }
    Job job;
    job.point = {&m, m.size_known() ? m.bytes : default_large_message, m.busbw_GBps, 0};
    job.request.op = *op;
    job.request.size_bytes = job.point.bytes;
    job.request.ranks = models::first_ranks(m.ranks);
    job.request.algorithm = algorithm;
    job.sized = sized.get();
    // Keep only points the model can run.
    try {
      models::plan_collective(sized->system, start, *sized->router, job.request);
    } catch (const models::AlgorithmUnavailable&) {
      continue;
    }
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) {
    result.not_fitted = kNames;
    return result;
  }
  auto predict = [&](const models::CollectiveProfile& profile, Job& job) {
    const auto r = models::simulate_collective(job.sized->system, profile, *job.sized->router,
                                               job.request, models::Backend::flow);
    return r.busbw_GBps;
  };
  auto residuals = [&](const Eigen::VectorXd& x) {
    const models::CollectiveProfile profile = unpack(x, start);
    Eigen::VectorXd r(static_cast<Eigen::Index>(jobs.size()));
    for (size_t i = 0; i < jobs.size(); ++i) {
      // log(predicted time / measured time) = log(measured busbw / predicted busbw).
      r[static_cast<Eigen::Index>(i)] =
          std::log(jobs[i].point.measured_busbw / predict(profile, jobs[i]));
    }
    return r;
  };
  // A weak prior keeps every parameter near its start unless the data ask otherwise (a MAP fit):
  // without it, terms few points depend on (latencies of a data set with only large messages)
  // drift to a bound on noise.
  const Eigen::VectorXd x0 = pack(start);
  const auto n = static_cast<Eigen::Index>(jobs.size());
  const auto k = static_cast<Eigen::Index>(kNames.size());
  auto with_prior = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd r(n + k);
    r << residuals(x), kPriorWeight * (x - x0);
    return r;
  };
  LmOptions options;
  options.max_iterations = 60;
  const LmResult fit = levenberg_marquardt(with_prior, x0, options);
  result.profile = unpack(fit.parameters, start);
  // Reported as fitted: parameters that move some point's time by at least 1% of their own (log
  // or logit) change at the solution; the others keep their exact start value.
  std::vector<bool> fitted(kNames.size(), false);
  const Eigen::VectorXd r1 = residuals(fit.parameters);
  for (Eigen::Index j = 0; j < k; ++j) {
    Eigen::VectorXd x = fit.parameters;
    const double h = 1e-3;
    x[j] += h;
    fitted[static_cast<size_t>(j)] =
        ((residuals(x) - r1) / h).cwiseAbs().maxCoeff() >= kMinSensitivity;
  }
  for (size_t j = 0; j < kNames.size(); ++j) {
    (fitted[j] ? result.fitted : result.not_fitted).push_back(kNames[j]);
    // pack() clamps (efficiencies to [0.05, 0.99], launch overhead to >= 0.5 us): a parameter
    // the data do not constrain gets its exact start value back, as documented.
    if (!fitted[j]) keep_start(j, start, result.profile);
  }
  std::vector<double> predicted, measured;
  for (Job& job : jobs) {
    job.point.predicted_busbw = predict(result.profile, job);
    predicted.push_back(job.point.predicted_busbw);
    measured.push_back(job.point.measured_busbw);
    result.points.push_back(job.point);
  }
  result.quality = fit_quality(predicted, measured);
  result.profile.source = fmt::format("fitted to {} collective points of {} ({})", jobs.size(),
                                      system, fmt::join(result.fitted, ", "));
  return result;
}

}  // namespace fabricsim::calibration
