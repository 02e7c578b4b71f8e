#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "api/cluster_sizing.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

/// "15T", "2.5e12", "300B": a token count with an optional K, M, B (or G) or T suffix.
double parse_tokens_flag(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  double scale = 1;
  const std::string suffix = used > 0 ? text.substr(used) : "";
  if (suffix == "K" || suffix == "k") {
    scale = 1e3;
  } else if (suffix == "M") {
    scale = 1e6;
  } else if (suffix == "B" || suffix == "G") {
    scale = 1e9;
  } else if (suffix == "T") {
    scale = 1e12;
  } else if (!suffix.empty()) {
    used = 0;
  }
  if (used == 0 || !std::isfinite(value) || value <= 0) {
    throw sim::InputError(kCommandLine, "--tokens",
                          fmt::format("expected a positive token count such as 15T or 2.5e12, "
                                      "got \"{}\"",
                                      text));
  }
  return value * scale;
}

class SizeCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand(
        "size",
        "Smallest cluster of each system that trains a token budget by a deadline, "
        "with its plan, energy, power and cost");
    app_->add_option("scenario", file_,
                     "Scenario JSON for the model and training (default: the embedded example)");
    options_.add_to(*app_, false);
    app_->add_option("--tokens", tokens_, "Training tokens, e.g. 15T")->required();
    app_->add_option("--days", days_, "Deadline in days (or give --gpus)");
    app_->add_option("--systems", request_.systems, "Candidate system presets")
        ->delimiter(',')
        ->default_str("dgx-h100,dgx-b200,gb200-nvl72,gb300-nvl72,vr-nvl72");
    app_->add_option("--prices", prices_file_, "Price table JSON (docs/formats.md)");
    app_->add_option("--pue", pue_, "Power usage effectiveness (default 1.3)");
    app_->add_option("--electricity", electricity_, "Electricity price, USD per kWh (0.08)");
    app_->add_option("--max-gpus", request_.max_gpus, "Largest GPU count tried")
        ->check(CLI::PositiveNumber);
    app_->add_option("--threads", request_.threads, "Threads (0: every core)")
        ->check(CLI::NonNegativeNumber);
    app_->add_flag("--json", json_, "Print the sizing as JSON");
  }

  int run(std::ostream& out, std::ostream& err) override {
    api::SizingRequest request = request_;
    if (request.systems.empty()) {
      request.systems = {"dgx-h100", "dgx-b200", "gb200-nvl72", "gb300-nvl72", "vr-nvl72"};
    }
    request.tokens = parse_tokens_flag(tokens_);
    if (days_ != 0) request.days = days_;
    if (options_.gpus() > 0) request.gpus = options_.gpus();
    models::PriceTable prices = models::default_prices();
    if (!prices_file_.empty()) {
      models::read_price_table(sim::load_json_file(prices_file_).root(), prices);
    }
    if (pue_ != 0) {
      if (pue_ < 1) throw sim::InputError(kCommandLine, "--pue", "expected a PUE of at least 1");
      prices.pue = pue_;
    }
    if (electricity_ >= 0) prices.electricity_usd_per_kwh = electricity_;
    if (days_ < 0) throw sim::InputError(kCommandLine, "--days", "expected a positive deadline");
    const nlohmann::json base = options_.document(file_);
    const std::vector<api::SizingRow> rows = api::size_clusters(base, request, prices);
    if (json_) {
      nlohmann::json j = api::sizing_to_json(rows, request, prices);
      add_record(j, options_.record(file_));
      out << j.dump(2) << "\n";
    } else {
      out << record_text(options_.record(file_)) << "\n" << api::sizing_to_text(rows, request);
    }
    const bool any = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.met; });
    if (!any) {
      err << "fabricsim: no system meets the request";
      for (const api::SizingRow& r : rows)
        err << fmt::format("; {}: {}", r.system, r.reason);
      err << "\n";
      return 3;
    }
    return 0;
  }

 private:
  std::string file_, tokens_, prices_file_;
  ScenarioOptions options_;
  api::SizingRequest request_;
  double days_ = 0, pue_ = 0, electricity_ = -1;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_size_command() {
  return std::make_unique<SizeCommand>();
}

}  // namespace fabricsim::tools
