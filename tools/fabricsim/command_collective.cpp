#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "models/collective_algorithms.hpp"
#include "models/collective_model.hpp"
#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/profile_options.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

// A sweep longer than this is a mistyped factor, not a study (nccl-tests' -f 2 from 8 B to 8 GiB
// is 31 rows); docs/cli.md states both bounds.
constexpr double kMaxRows = 10'000;
// Sizes are written as integers; 2^53 bytes (8 PiB) is the largest a double holds exactly.
constexpr double kMaxSizeBytes = 9007199254740992.0;

class CollectiveCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand(
        "collective", "Predict what nccl-tests would measure: time, algbw and busbw per size");
    app_->add_option("--system", system_, "System preset")->default_val("dgx-h100");
    app_->add_option("--gpus", gpus_, "GPUs in the cluster")->default_val(8);
    options_.add_set_to(*app_);
    app_->add_option("--ranks", ranks_, "GPUs in the communicator (default: all)")
        ->check(positive_count());
    app_->add_option("--op", op_,
                     "all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                     "alltoall or sendrecv")
        ->default_val("all_reduce");
    app_->add_option("--min-bytes,-b", min_bytes_, "Smallest size (nccl-tests 'size')")
        ->default_val("8");
    app_->add_option("--max-bytes,-e", max_bytes_, "Largest size")->default_val("8G");
    app_->add_option("--step-factor,-f", factor_, "Size multiplier between rows")->default_val(2);
    app_->add_option("--algo", algo_, "Force an algorithm, like NCCL_ALGO");
    app_->add_option("--proto", proto_, "Force a protocol (ll, ll128, simple), like NCCL_PROTO");
    app_->add_option("--backend", backend_, "flow (max-min sharing) or analytical")
        ->default_val("flow");
    app_->add_option("--routing", routing_, "ecmp, spray, rail_aware or shortest")
        ->default_val("ecmp");
    app_->add_flag("--collnet", collnet_, "Enable CollNet/SHARP (NCCL_COLLNET_ENABLE=1)");
    app_->add_flag("--json", json_, "Print the rows as JSON");
    app_->add_flag("--csv", csv_, "Print the rows as CSV");
    app_->add_option("--output,-o", output_,
                     "Also write the rows: CSV if the name ends in .csv, else JSON");
    add_profile_option(*app_, calibration_);
  }

  int run(std::ostream& out, std::ostream&) override {
    if (json_ && csv_) throw sim::InputError(kCommandLine, "--csv", "give either --json or --csv");
    const models::System system = options_.system(system_, gpus_);
    const int ranks = ranks_ > 0 ? ranks_ : gpus_;
    if (ranks > gpus_) {
      throw sim::InputError(
          kCommandLine, "--ranks",
          fmt::format("expected at most --gpus ({}) ranks, got {}", gpus_, ranks));
    }
    std::optional<sim::AtomicFile> output;  // opened first: a bad path fails before simulating
    if (!output_.empty()) output.emplace(output_);
    const models::CollectiveProfile profile = profile_from_option(calibration_, system).collective;
    models::CollectiveRequest request;
    request.op = parse_op_flag("--op", op_);
    if (request.op == models::CollectiveOp::sendrecv && ranks < 2) {
      throw sim::InputError(kCommandLine, ranks_ > 0 ? "--ranks" : "--gpus",
                            "a sendrecv needs at least 2 ranks");
    }
    request.ranks = models::first_ranks(ranks);
    request.collnet = collnet_;
    if (!algo_.empty()) request.algorithm = parse_algorithm_flag("--algo", algo_);
    if (!proto_.empty()) request.protocol = parse_protocol_flag("--proto", proto_);
    const double min_bytes = parse_size_flag("--min-bytes", min_bytes_).count();
    const double max_bytes = parse_size_flag("--max-bytes", max_bytes_).count();
    if (max_bytes < min_bytes) {
      throw sim::InputError(kCommandLine, "--max-bytes", "expected a size >= --min-bytes");
    }
    if (max_bytes > kMaxSizeBytes) {
      throw sim::InputError(
          kCommandLine, "--max-bytes",
          fmt::format("expected a size of at most 2^53 bytes (8 PiB), got {}", max_bytes_));
    }
    if (!(factor_ > 1)) {
      throw sim::InputError(kCommandLine, "--step-factor",
                            fmt::format("expected a factor > 1, got {}", factor_));
    }
    if (const double rows = std::floor(std::log(max_bytes / min_bytes) / std::log(factor_)) + 1;
        !(rows <= kMaxRows)) {
      throw sim::InputError(
          kCommandLine, "--step-factor",
          fmt::format("-b {} -e {} -f {} asks for {:.3g} rows; at most {:.0f} are allowed (raise "
                      "the factor)",
                      min_bytes_, max_bytes_, factor_, rows, kMaxRows));
    }
    if (backend_ != "flow" && backend_ != "analytical") {
      throw sim::InputError(kCommandLine, "--backend",
                            fmt::format("expected flow or analytical, got '{}'", backend_));
    }
    const models::Backend backend =
        backend_ == "flow" ? models::Backend::flow : models::Backend::analytical;
    topologies::Router router(*system.topology, parse_routing_flag("--routing", routing_));

    const std::string title = fmt::format(
        "# fabricsim collective: {} over {} of {} GPUs of {} ({} domain(s) of {}), {} backend, "
        "{} routing, calibration: {}",
        models::to_string(request.op), ranks, gpus_, system_,
        models::make_group_layout(*system.topology, request.ranks).domain_count(),
        system.topology->info().gpus_per_domain, models::to_string(backend), routing_,
        profile.source);
    const ScenarioRecord record = options_.system_record(system_, gpus_);
    if (!json_ && !csv_) {
      out << title << "\n# " << record_text(record) << "\n";
      out << fmt::format("#{:>14} {:>13} {:>8} {:>11} {:>8} {:>8}  {:<14} {}\n", "size", "count",
                         "type", "time", "algbw", "busbw", "algorithm", "protocol");
      out << fmt::format("#{:>14} {:>13} {:>8} {:>11} {:>8} {:>8}\n", "(B)", "(elements)", "",
                         "(us)", "(GB/s)", "(GB/s)");
    }
    if (csv_) out << "size_bytes,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,protocol\n";
    nlohmann::json rows = nlohmann::json::array();
    for (double size = min_bytes; size <= max_bytes * (1 + 1e-12); size *= factor_) {
      request.size_bytes = std::floor(size);
      models::CollectiveResult r;
      try {
        r = models::simulate_collective(system, profile, router, request, backend);
      } catch (const models::AlgorithmUnavailable& e) {
        throw sim::InputError(kCommandLine, request.algorithm ? "--algo" : "--op", e.what());
      }
      if (r.time.is_saturated()) {
        throw sim::InputError(
            kCommandLine, "--max-bytes",
            fmt::format("a {:.0f}-byte {} takes longer than the simulator's range of a time "
                        "(107 days); check the size and the calibration profile's bandwidths",
                        request.size_bytes, models::to_string(request.op)));
      }
      const double count = std::floor(request.size_bytes / 4);
      nlohmann::json row = {{"size_bytes", static_cast<int64_t>(request.size_bytes)},
                            {"count", static_cast<int64_t>(count)},
                            {"type", "float"},
                            {"time_us", r.time.us()},
                            {"algbw_GBps", r.algbw_GBps},
                            {"busbw_GBps", r.busbw_GBps},
                            {"algorithm", std::string(models::to_string(r.algorithm))},
                            {"protocol", std::string(models::to_string(r.protocol))}};
      if (csv_) {
        out << fmt::format("{:.0f},{:.0f},float,{:.3f},{:.3f},{:.3f},{},{}\n", request.size_bytes,
                           count, r.time.us(), r.algbw_GBps, r.busbw_GBps,
                           models::to_string(r.algorithm), models::to_string(r.protocol));
      } else if (!json_) {
        out << fmt::format(" {:>14.0f} {:>13.0f} {:>8} {:>11.2f} {:>8.2f} {:>8.2f}  {:<14} {}\n",
                           request.size_bytes, count, "float", r.time.us(), r.algbw_GBps,
                           r.busbw_GBps, models::to_string(r.algorithm),
                           models::to_string(r.protocol));
      }
      out.flush();
      rows.push_back(std::move(row));
    }
    nlohmann::json doc = {{"system", system_},
                          {"gpus", gpus_},
                          {"ranks", ranks},
                          {"op", std::string(models::to_string(request.op))},
                          {"backend", std::string(models::to_string(backend))},
                          {"routing", routing_},
                          {"calibration", profile.source},
                          {"rows", rows}};
    add_record(doc, record);
    if (json_) out << doc.dump(2) << "\n";
    if (output) {
      std::string text;
      if (output_.ends_with(".csv")) {
        text = "size_bytes,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,protocol\n";
        for (const nlohmann::json& row : rows) {
          text += fmt::format("{},{},float,{:.3f},{:.3f},{:.3f},{},{}\n",
                              row["size_bytes"].get<int64_t>(), row["count"].get<int64_t>(),
                              row["time_us"].get<double>(), row["algbw_GBps"].get<double>(),
                              row["busbw_GBps"].get<double>(), row["algorithm"].get<std::string>(),
                              row["protocol"].get<std::string>());
        }
      } else {
        text = doc.dump(2) + "\n";
      }
      output->write(text);
      output->commit();
    }
    return 0;
  }

 private:
  std::string system_;
  int gpus_ = 8;
  ScenarioOptions options_;
  int ranks_ = 0;
  std::string op_;
  std::string min_bytes_;
  std::string max_bytes_;
  double factor_ = 2;
  std::string algo_;
  std::string proto_;
  std::string backend_;
  std::string routing_;
  bool collnet_ = false;
  bool json_ = false;
  bool csv_ = false;
  std::string output_;
  std::string calibration_;
};

}  // namespace

std::unique_ptr<Command> make_collective_command() {
  return std::make_unique<CollectiveCommand>();
}

}  // namespace fabricsim::tools
