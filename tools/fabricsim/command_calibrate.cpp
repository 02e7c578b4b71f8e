#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <ostream>
#include <tuple>

#include "api/run_calibration.hpp"
#include "api/trace_calibration.hpp"
#include "api/training_run.hpp"
#include "calibration/gemm_fit.hpp"
#include "calibration/importers.hpp"
#include "calibration/kineto_trace.hpp"
#include "calibration/measurement_limits.hpp"
#include "calibration/profile_fit.hpp"
#include "models/compute_model.hpp"
#include "models/system.hpp"
#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "sim/unit_parse.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::tools {
namespace {

std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  sim::write_file(path, j.dump(1) + "\n");
}

class CalibrateCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("calibrate", "Fit calibration profiles from measurements");
    app_->require_subcommand(1);
    fit_ = app_->add_subcommand(
        "fit", "Fit a profile from GEMM and NCCL measurements (formats detected from content)");
    fit_->add_option("--gemm", gemm_files_, "GEMM measurements (bench JSON, CSV, case file)")
        ->allow_extra_args(false);
    fit_->add_option("--nccl", nccl_files_,
                     "Collective measurements (nccl-tests log, bench JSON, "
                     "case file)")
        ->allow_extra_args(false);
    fit_->add_option("--base", base_, "System preset the measurements were taken on")->required();
    fit_->add_option("--output,-o", output_, "Profile to write")->required();
    fit_->add_option("--holdout", holdout_,
                     "Keep every Nth GEMM measurement out of the fit and report predicted vs "
                     "measured for those (0 = fit on all)")
        ->default_val(0);
    fit_->add_flag("--residuals", residuals_, "Print every collective point after the fit");
    fit_->add_option("--start", start_,
                     "Start from the preset's built-in profile, or from the datasheet/NCCL "
                     "defaults (parameters the data do not constrain keep the start's values)")
        ->default_val("builtin");
    shapes_ = app_->add_subcommand(
        "shapes", "List the GEMM shapes a scenario's step runs, as fabricsim-gemm-bench input");
    shapes_->add_option("scenario", scenario_file_, "Scenario JSON (default: the embedded one)");
    scenario_options_.add_to(*shapes_);
    shapes_->add_option("--output,-o", output_, "Write the shape list here (default: stdout)");
    run_ = app_->add_subcommand(
        "run",
        "Fit the sustained kernel efficiency of a GPU and software stack to one measured run "
        "and write it into a profile (every prediction that loads the profile uses it)");
    run_->add_option("scenario", run_file_, "Scenario JSON of the measured run")->required();
    run_options_.add_to(*run_);
    run_->add_option("--measured", measured_,
                     "What the run measured, METRIC=VALUE: step_time_s, tokens_per_s_per_gpu, "
                     "tflops_per_gpu, hw_tflops_per_gpu, mfu or hfu (fractions 0-1)")
        ->required();
    run_->add_option("--output,-o", output_, "Profile to write")->required();
    trace_ = app_->add_subcommand(
        "trace",
        "Read a PyTorch profiler (Kineto) trace: GPU time per kernel class and step; with a "
        "scenario, fit the GEMM, attention and memory-bound efficiencies to it");
    trace_->add_option("trace", trace_file_, "Trace JSON as torch.profiler exports it")->required();
    trace_->add_option("--scenario", trace_scenario_,
                       "Scenario of the traced run (rank 0 runs its stage 0)");
    trace_options_.add_to(*trace_);
    trace_->add_option("--output,-o", trace_output_, "Profile to write (needs --scenario)");
    trace_->add_flag("--json", trace_json_, "Print the breakdown (and fit) as JSON");
    builtin_ = app_->add_subcommand(
        "builtin", "Regenerate the built-in profiles from the public reference cases");
    builtin_->add_option("--reference", reference_, "The shared reference folder")
        ->default_val("../shared/reference");
    builtin_
        ->add_option("--gemm-data", gemm_dir_,
                     "Folder of public GEMM microbenchmark case files fitted beside the reference")
        ->default_val("calibration/data/public-gemm");
    builtin_->add_option("--output-dir,-o", output_dir_, "Where to write one JSON per preset")
        ->default_val("calibration/profiles");
    builtin_->add_option("--date", date_, "Date stamped into the profiles (default: today)");
  }

  int run(std::ostream& out, std::ostream&) override {
    if (builtin_->parsed()) return run_builtin(out);
    if (shapes_->parsed()) return run_shapes(out);
    if (run_->parsed()) return run_run(out);
    if (trace_->parsed()) return run_trace(out);
    return run_fit(out);
  }

 private:
  int run_fit(std::ostream& out) {
    if (gemm_files_.empty() && nccl_files_.empty()) {
      throw sim::InputError(kCommandLine, "--gemm/--nccl",
                            "expected at least one measurement file");
    }
    for (const std::string& f : concat(gemm_files_, nccl_files_)) {
      std::error_code ec;
      if (f == output_ || std::filesystem::equivalent(f, output_, ec)) {
        throw sim::InputError(kCommandLine, "--output",
                              fmt::format("'{}' is also an input; the fit would overwrite it", f));
      }
    }
    const models::System system = system_from_flags(base_, 8);
    calibration::MeasurementSet data;
    std::vector<calibration::GemmMeasurement> held_out;
    for (const std::string& f : gemm_files_) {
      calibration::MeasurementSet m = calibration::import_measurements(f);
      if (m.gemms.empty()) refuse_empty(f, m, "--gemm", "GEMM");
      m.collectives.clear();
      calibration::check_measurement_limits(m, system.gpu);
      data.append(std::move(m));
    }
    if (holdout_ < 0 || holdout_ == 1) {
      throw sim::InputError(kCommandLine, "--holdout",
                            fmt::format("expected 0 or a period >= 2, got {}", holdout_));
    }
    if (holdout_ > 1) {
      // Only measurements of the base system's GPU count: the fit ignores the others.
      std::vector<calibration::GemmMeasurement> kept;
      size_t index = 0;
      for (const auto& g : data.gemms) {
        const bool ours = g.system.empty() || calibration::gpu_of_system(g.system) == system.gpu.id;
        const bool hold =
            ours && index++ % static_cast<size_t>(holdout_) == static_cast<size_t>(holdout_) - 1;
        (hold ? held_out : kept).push_back(g);
      }
      data.gemms = std::move(kept);
    }
    for (const std::string& f : nccl_files_) {
      calibration::MeasurementSet m = calibration::import_measurements(f);
      if (m.collectives.empty()) refuse_empty(f, m, "--nccl", "collective");
      m.gemms.clear();
      calibration::check_measurement_limits(m, system.gpu);
      data.append(std::move(m));
    }
    if (start_ != "builtin" && start_ != "defaults") {
      throw sim::InputError(kCommandLine, "--start",
                            fmt::format("expected builtin or defaults, got '{}'", start_));
    }
    calibration::CalibrationProfile start = start_ == "builtin"
                                                ? calibration::profile_for(base_, system.gpu)
                                                : calibration::default_profile(base_, system.gpu);
    // The start's own notes and fit qualities describe another fit.
    start.notes = {
        fmt::format("fitted by `fabricsim calibrate fit`, starting from the {} profile "
                    "of {}",
                    start_ == "builtin" ? "built-in" : "default", base_)};
    start.gemm_fit.clear();
    start.collective_fit.reset();
    calibration::ProfileFitOptions options;
    options.created = date_.empty() ? today() : date_;
    options.gemm_by_gpu = true;
    std::vector<calibration::CollectiveResidual> residuals;
    options.collective_residuals = &residuals;
    const calibration::CalibrationProfile fitted =
        calibration::fit_profile(base_, std::move(data), start, options);
    write_json(output_, calibration::profile_to_json(fitted));
    out << fmt::format("wrote {} ({} provenance entries)\n", output_, fitted.provenance.size());
    for (const auto& [dtype, q] : fitted.gemm_fit) {
      out << fmt::format(
          "  GEMM {}: {} points, R^2 {:.3f}, median error {:.1f}%, max {:.1f}%, "
          "cross-validated median {}\n",
          dtype, q.points, q.r2, 100 * q.median_rel_error, 100 * q.max_rel_error,
          q.cv_median_rel_error < 0 ? std::string("n/a (too few points)")
                                    : fmt::format("{:.1f}%", 100 * q.cv_median_rel_error));
    }
    if (fitted.collective_fit) {
      const auto& q = *fitted.collective_fit;
      out << fmt::format("  collectives: {} points, median busbw error {:.1f}%, max {:.1f}%\n",
                         q.points, 100 * q.median_rel_error, 100 * q.max_rel_error);
    }
    if (residuals_ && !residuals.empty()) {
      out << fmt::format("\n{:<16} {:>6} {:>14} {:>12} {:>12} {:>8}  source\n", "collective",
                         "ranks", "size_bytes", "measured", "predicted", "error");
      for (const auto& r : residuals) {
        out << fmt::format("{:<16} {:>6} {:>14.0f} {:>12.2f} {:>12.2f} {:>+7.1f}%  {}\n", r.op,
                           r.ranks, r.bytes, r.measured_busbw_GBps, r.predicted_busbw_GBps,
                           100 * (r.predicted_busbw_GBps / r.measured_busbw_GBps - 1), r.source);
      }
    }
    if (!held_out.empty()) print_held_out(out, system.gpu, fitted, held_out);
    return 0;
  }

  static std::vector<std::string> concat(std::vector<std::string> a,
                                         const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  /// A file given to --gemm or --nccl that holds none of the measurements that flag fits.
  [[noreturn]] static void refuse_empty(const std::string& file,
                                        const calibration::MeasurementSet& m,
                                        const std::string& flag, const std::string& kind) {
    const std::string format = m.provenance.empty() ? "" : m.provenance.front().format;
    throw sim::InputError(
        file, "",
        fmt::format("given to {} but holds no {} measurements (it is a {} file{})", flag, kind,
                    format.empty() ? "measurement" : format,
                    format == "cases_json" ? "; training cases are never fitted" : ""));
  }

  /// Predicted vs measured time of the GEMMs kept out of the fit.
  static void print_held_out(std::ostream& out, const topologies::GpuSpec& gpu,
                             const calibration::CalibrationProfile& profile,
                             const std::vector<calibration::GemmMeasurement>& held_out) {
    out << fmt::format(
        "\nGEMMs kept out of the fit ({}):\n{:>7} {:>7} {:>7} {:>5} {:<6} {:>12} "
        "{:>12} {:>8}\n",
        held_out.size(), "m", "n", "k", "batch", "dtype", "measured_us", "predicted_us", "error");
    std::vector<double> errors;
    for (const auto& g : held_out) {
      const auto precision = calibration::gemm_precision(g.dtype);
      if (!precision || g.tflops <= 0 || gpu.peak_tflops(*precision) <= 0) continue;
      const double flops = 2.0 * g.m * g.n * g.k * g.batch;
      const double measured = g.time_us > 0 ? g.time_us : flops / (g.tflops * 1e12) * 1e6;
      const double predicted =
          1e6 * models::gemm_seconds(gpu, profile.compute, *precision, g.m, g.n, g.k, g.batch);
      errors.push_back(std::abs(predicted / measured - 1));
      out << fmt::format("{:>7} {:>7} {:>7} {:>5} {:<6} {:>12.2f} {:>12.2f} {:>+7.1f}%\n", g.m, g.n,
                         g.k, g.batch, g.dtype, measured, predicted,
                         100 * (predicted / measured - 1));
    }
    if (!errors.empty()) {
      std::sort(errors.begin(), errors.end());
      out << fmt::format("held-out median |error| {:.1f}%, max {:.1f}%\n",
                         100 * errors[errors.size() / 2], 100 * errors.back());
    }
  }

  /// Distinct GEMM shapes of every pass of every stage, with how often one step runs each.
  /// Writes `base` with a refitted compute profile and the provenance of what it was fitted to.
  static void write_refitted(const std::string& path, calibration::CalibrationProfile base,
                             const models::ComputeProfile& compute, calibration::Provenance prov) {
    base.compute = compute;
    base.created = today();
    prov.date = base.created;
    base.notes.push_back(prov.notes);
    base.provenance.push_back(std::move(prov));
    write_json(path, calibration::profile_to_json(base));
  }

  /// `calibrate trace`: a trace's kernel classes, and with a scenario the fit of their parameters.
  int run_trace(std::ostream& out) {
    if (!trace_output_.empty() && trace_scenario_.empty()) {
      throw sim::InputError(kCommandLine, "--output", "writing a profile needs --scenario");
    }
    const calibration::KinetoTrace t = calibration::load_kineto_trace(trace_file_);
    nlohmann::json j = {{"trace", t.file},
                        {"gpu", t.gpu_name},
                        {"steps", t.steps},
                        {"window_s", t.window_s},
                        {"gpu_busy", t.gpu_busy}};
    out << (trace_json_
                ? ""
                : fmt::format("{}: {} steps on {}, GPU busy {:.1f}% of {:.3f} s\n", t.file, t.steps,
                              t.gpu_name.empty() ? "?" : t.gpu_name, 100 * t.gpu_busy, t.window_s));
    for (const calibration::KernelClass k : calibration::kKernelClasses) {
      const size_t i = static_cast<size_t>(k);
      j["per_step_s"][std::string(to_string(k))] = t.per_step.seconds[i];
      j["kernels"][std::string(to_string(k))] = t.total.kernels[i];
      if (!trace_json_) {
        out << fmt::format("  {:<14} {:>10.3f} ms per step  {:>7} kernels\n", to_string(k),
                           1e3 * t.per_step.seconds[i], t.total.kernels[i]);
      }
    }
    if (!trace_scenario_.empty()) {
      const api::Scenario sc = trace_options_.scenario(trace_scenario_);
      const api::Evaluator cluster(sc);
      const api::TraceFit fit = api::fit_to_trace(cluster, sc, t);
      if (!fit.warning.empty()) {
        j["warning"] = fit.warning;
        if (!trace_json_) out << "warning: " << fit.warning << "\n";
      }
      if (!trace_json_) out << "fit (per step: trace, model before, model after):\n";
      for (const api::TraceClassFit& c : fit.classes) {
        j["fit"].push_back({{"class", std::string(to_string(c.kernel_class))},
                            {"trace_s", c.trace_s},
                            {"model_before_s", c.before_s},
                            {"model_after_s", c.after_s},
                            {"fitted", c.fitted},
                            {"clamped", c.clamped},
                            {"note", c.note}});
        if (!trace_json_) {
          out << fmt::format("  {:<14} {:>10.3f} {:>10.3f} {:>10.3f} ms  {}\n",
                             to_string(c.kernel_class), 1e3 * c.trace_s, 1e3 * c.before_s,
                             1e3 * c.after_s, c.fitted ? c.note : "not fitted: " + c.note);
        }
      }
      const models::ComputeProfile& c = fit.compute;
      j["fitted"] = {{"gemm_max_efficiency", c.gemm_for(sc.training.precision).max_efficiency},
                     {"attention_forward_efficiency", c.attention_forward_efficiency},
                     {"attention_backward_efficiency", c.attention_backward_efficiency},
                     {"memory_efficiency", c.memory_efficiency}};
      if (!trace_output_.empty()) {
        calibration::Provenance prov;
        prov.file = trace_file_;
        prov.format = "kineto_trace";
        prov.gpu_name = t.gpu_name;
        prov.notes =
            fmt::format("calibrate trace: {} steps, scenario {}", t.steps, trace_scenario_);
        write_refitted(trace_output_, cluster.profile(), fit.compute, std::move(prov));
        if (!trace_json_) out << "wrote " << trace_output_ << "\n";
      }
    }
    if (trace_json_) out << j.dump(2) << "\n";
    return 0;
  }

  /// `calibrate run`: the run's scenario and measurement in, a profile naming the run out.
  int run_run(std::ostream& out) {
    const auto eq = measured_.find('=');
    const std::optional<api::RunMetric> metric =
        eq == std::string::npos ? std::nullopt : api::parse_run_metric(measured_.substr(0, eq));
    if (!metric) {
      throw sim::InputError(kCommandLine, "--measured",
                            fmt::format("expected METRIC=VALUE with METRIC one of step_time_s, "
                                        "tokens_per_s_per_gpu, tflops_per_gpu, "
                                        "hw_tflops_per_gpu, mfu, hfu; got '{}'",
                                        measured_));
    }
    double value = 0;
    try {
      value = sim::parse_number(measured_.substr(eq + 1),
                                "a positive number in the metric's unit after '='");
    } catch (const sim::UnitError& e) {
      throw sim::InputError(kCommandLine, "--measured", e.what());
    }
    const api::Scenario sc = run_options_.scenario(run_file_);
    const api::Evaluator cluster(sc);
    const api::RunMeasurement m{
        *metric, value, fmt::format("{} ({} = {:.6g})", run_file_, to_string(*metric), value)};
    const api::RunFit fit = api::fit_sustained_efficiency(
        cluster, sc, m, api::fidelity_of(sc.simulation.backend), "--measured");
    const double error = api::zero_shot_error(*metric, fit.predicted_before, value);
    const bool beyond = api::beyond_validated_spread(error);
    calibration::Provenance prov;
    prov.file = run_file_;
    prov.format = "training_run";
    prov.notes = fmt::format(
        "calibrate run: {} = {:.6g} measured, {:.6g} predicted before ({:+.1f}%{}), {:.6g} after; "
        "sustained efficiency {:.4f}",
        to_string(*metric), value, fit.predicted_before, 100 * error,
        beyond ? ", beyond the model's validated spread" : "", fit.predicted_after,
        fit.compute.sustained_efficiency);
    write_refitted(output_, cluster.profile(), fit.compute, std::move(prov));
    out << fmt::format(
        "wrote {}\n  {} measured {:.6g}, predicted {:.6g} before (sustained efficiency {:.4f}), "
        "{:.6g} after\n  sustained efficiency {:.4f} ({} simulated steps); use it with "
        "--calibration {}\n",
        output_, to_string(*metric), value, fit.predicted_before,
        cluster.profile().compute.sustained_efficiency, fit.predicted_after,
        fit.compute.sustained_efficiency, fit.evaluations, output_);
    if (beyond) {
      out << fmt::format(
          "  note: the model's zero-shot prediction was {:+.1f}% off this run, beyond its "
          "validated spread ({:.0f}%): the efficiency likely absorbs a mechanism the model does "
          "not represent (host-bound eager execution, a plan or software setting other than the "
          "scenario's), and predictions of other plans or scales from this profile inherit it\n",
          100 * error, 100 * api::kValidatedSpread);
    }
    return 0;
  }

  int run_shapes(std::ostream& out) {
    const api::Scenario sc = scenario_options_.scenario(scenario_file_);
    const models::Workload w = api::scenario_workload(sc, api::scenario_profile(sc));
    // The bench measures per-tensor fp8; block-scaled formats are listed as fp8.
    auto dtype = [](topologies::Precision p) -> std::string {
      using topologies::Precision;
      return p == Precision::mxfp8 || p == Precision::nvfp4 ? "fp8"
                                                            : std::string(topologies::to_string(p));
    };
    std::map<std::tuple<long long, long long, long long, long long, std::string>, double> counts;
    for (const models::StageWork& stage : w.stages) {
      for (const models::ChunkWork& c : stage.chunks) {
        for (const models::PassProgram* pass : {&c.forward, &c.backward}) {
          for (const models::WorkOp& op : pass->ops) {
            if (op.kind != models::WorkOp::Kind::compute ||
                op.compute != models::ComputeKind::gemm) {
              continue;
            }
            const auto& g = op.gemm;
            counts[{std::llround(g.m), std::llround(g.n), std::llround(g.k), std::llround(g.batch),
                    dtype(g.precision)}] += static_cast<double>(g.count) * w.microbatches;
          }
        }
      }
    }
    nlohmann::json shapes = nlohmann::json::array();
    for (const auto& [key, per_step] : counts) {
      const auto& [m, n, k, batch, type] = key;
      shapes.push_back({{"m", m},
                        {"n", n},
                        {"k", k},
                        {"batch", batch},
                        {"dtype", type},
                        {"kernels_per_step_per_stage", per_step}});
    }
    const nlohmann::json doc = {
        {"comment",
         fmt::format("GEMM shapes of one step of {} on {} x {} (TP{} PP{} DP{} CP{} EP{}), "
                     "per stage rank",
                     sc.model.name, sc.gpus, sc.system(), sc.plan.tp, sc.plan.pp, sc.plan.dp,
                     sc.plan.cp, sc.plan.ep)},
        {"shapes", shapes}};
    if (output_.empty()) {
      out << doc.dump(1) << "\n";
    } else {
      write_json(output_, doc);
      out << fmt::format("wrote {} ({} shapes)\n", output_, shapes.size());
    }
    return 0;
  }

  int run_builtin(std::ostream& out) {
    std::filesystem::create_directories(output_dir_);
    const auto profiles = calibration::generate_builtin_profiles(reference_, gemm_dir_,
                                                                 date_.empty() ? today() : date_);
    for (const auto& p : profiles) {
      const std::string path = output_dir_ + "/" + p.system + ".json";
      write_json(path, calibration::profile_to_json(p));
      std::string quality;
      for (const auto& [dtype, q] : p.gemm_fit) {
        quality += fmt::format(" gemm {} {:.1f}%", dtype, 100 * q.median_rel_error);
      }
      if (p.collective_fit) {
        quality += fmt::format(" collectives {:.1f}%", 100 * p.collective_fit->median_rel_error);
      }
      out << fmt::format("{:<24} {}\n", p.system,
                         quality.empty() ? " (inherited/defaults)" : quality);
    }
    return 0;
  }

  CLI::App* fit_ = nullptr;
  CLI::App* builtin_ = nullptr;
  CLI::App* shapes_ = nullptr;
  CLI::App* run_ = nullptr;
  CLI::App* trace_ = nullptr;
  std::string trace_file_, trace_scenario_, trace_output_;
  bool trace_json_ = false;
  ScenarioOptions trace_options_;
  std::string run_file_, measured_;
  ScenarioOptions run_options_;
  std::string scenario_file_;
  ScenarioOptions scenario_options_;
  std::vector<std::string> gemm_files_;
  std::vector<std::string> nccl_files_;
  std::string base_;
  std::string output_;
  std::string reference_;
  std::string gemm_dir_;
  std::string output_dir_;
  std::string date_;
  int holdout_ = 0;
  std::string start_;
  bool residuals_ = false;
};

}  // namespace

std::unique_ptr<Command> make_calibrate_command() {
  return std::make_unique<CalibrateCommand>();
}

}  // namespace fabricsim::tools
