#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>

#include "api/plan_search.hpp"
#include "api/scaling_study.hpp"
#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"

namespace fabricsim::tools {
namespace {

/// A row of the table; with a token budget a days column follows the efficiency, with replan
/// the plan chosen comes before the losses.
std::string row_text(const api::ScalingRow& r, bool days, bool plan) {
  std::string line = fmt::format("{:>7} {:>6} {:>7}", r.gpus, r.dp, r.global_batch);
  if (!r.feasible) return line + "   infeasible: " + r.reason;
  line += fmt::format(" {:>9.3f} {:>11.0f} {:>9.1f} {:>6.1f}%", r.step_time_s,
                      r.tokens_per_s_per_gpu, r.model_tflops_per_gpu, 100 * r.mfu);
  line += r.efficiency ? fmt::format(" {:>6.1f}%", 100 * *r.efficiency) : "       -";
  if (days) line += fmt::format(" {:>8.1f}", r.days_to_train.value_or(0));
  if (plan) line += fmt::format("  {:<34}", r.plan ? api::plan_label(*r.plan) : "");
  if (!r.efficiency) return line;
  std::string lost;
  for (const api::ScalingLoss& l : r.losses) {
    if (l.points < 0.005) break;
    if (!lost.empty()) lost += ", ";
    lost += fmt::format("{} {:.1f}", l.component, 100 * l.points);
  }
  return lost.empty() ? line : line + "  " + lost;
}

class ScaleCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand(
        "scale",
        "Scaling study: throughput per GPU and efficiency from the smallest size up, in "
        "weak and strong scaling, on one or more systems");
    app_->add_option("scenario", file_,
                     "Scenario JSON; its optional \"scale\" section sets the study (default: the "
                     "embedded Llama 3 8B study on three systems)");
    options_.add_to(*app_);
    app_->add_option("--systems", systems_, "System presets to compare (comma separated)")
        ->delimiter(',')
        ->allow_extra_args(false);
    app_->add_option("--gpu-counts", counts_, "GPU counts, ascending (comma separated)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(positive_count());
    app_->add_option("--max-gpus", max_gpus_, "Run 8, 16, 32, ... up to this many GPUs")
        ->check(positive_count());
    app_->add_option("--mode", mode_, "weak, strong or both");
    app_->add_option("--strong-global-batch", strong_batch_,
                     "Global batch (sequences) held fixed in strong scaling")
        ->check(positive_count());
    app_->add_flag("--replan", replan_,
                   "Search the best plan at every size (as size does) instead of keeping the "
                   "scenario's plan; weak scaling keeps the batch per GPU");
    app_->add_option("--tokens", tokens_, "Token budget, e.g. 15T: rows carry the days to train");
    app_->add_option("--prices", prices_file_,
                     "Price table JSON for the per-dollar comparison (with --replan)");
    app_->add_option("--threads", threads_, "Plan-search threads with --replan (0: every core)")
        ->check(CLI::NonNegativeNumber);
    app_->add_flag("--json", json_, "Print rows and summary as JSON at the end");
    app_->add_option("--jsonl", jsonl_,
                     "Write each row to this new file as it finishes (JSON lines)");
  }

  int run(std::ostream& out, std::ostream&) override {
    nlohmann::json doc = options_.document(file_);
    ScenarioRecord record = options_.record(file_);
    apply_flags(doc, record);
    const std::string source = file_.empty() ? "<scenario>" : file_;
    api::ScalingStudy study = api::read_scaling_study(sim::JsonDocument(doc, source).root());
    study.threads = threads_;
    if (!prices_file_.empty()) {
      models::read_price_table(sim::load_json_file(prices_file_).root(), study.prices);
    }
    const bool days = study.tokens > 0;

    std::optional<sim::AppendFile> jsonl;
    if (!jsonl_.empty()) {
      // Appending to an earlier study would mix its rows with these, duplicates included.
      std::error_code ec;
      if (std::filesystem::is_regular_file(jsonl_, ec) &&
          std::filesystem::file_size(jsonl_, ec) > 0) {
        throw sim::InputError(jsonl_, "",
                              "the file already holds rows; remove it or give a new file name");
      }
      jsonl.emplace(jsonl_);
    }
    std::string group;
    auto on_row = [&](const api::ScalingRow& r) {
      if (jsonl) {
        // Each line stands alone, so it carries its system's confidence too.
        nlohmann::json line = api::scaling_row_json(r);
        line["confidence"] = api::confidence_to_json(r.confidence);
        jsonl->write(line.dump() + "\n");
      }
      if (json_) return;
      const std::string g = r.system + api::to_string(r.mode);
      if (g != group) {
        group = g;
        out << fmt::format("\n{} scaling on {} ({}):\n", api::to_string(r.mode), r.system,
                           r.mode == api::ScalingMode::strong ? "global batch fixed"
                           : study.replan                     ? "batch per GPU fixed"
                                                              : "batch per replica fixed");
        std::string head =
            fmt::format("{:>7} {:>6} {:>7} {:>9} {:>11} {:>9} {:>7} {:>7}", "GPUs", "DP", "batch",
                        "step s", "tok/s/GPU", "TFLOP/s", "MFU", "eff.");
        if (days) head += fmt::format(" {:>8}", "days");
        if (study.replan) head += fmt::format("  {:<34}", "plan (searched)");
        out << head << "  efficiency lost to (points)\n";
      }
      out << row_text(r, days, study.replan) << std::endl;
    };
    if (!json_)
      out << header(doc, source, study.replan) << "# " << record_text(record) << "\n" << std::flush;
    const std::vector<api::ScalingRow> rows = api::run_scaling_study(doc, source, study, on_row);
    if (jsonl) jsonl->close();
    if (json_) {
      nlohmann::json j = api::scaling_study_json(rows, study);
      add_record(j, record);
      out << j.dump(2) << "\n";
    } else {
      const std::vector<std::string> warnings = api::scaling_warnings(rows);
      const nlohmann::json comparison =
          study.replan ? api::scaling_comparison_json(rows) : nlohmann::json::array();
      out << "\n" << api::scaling_summary_text(rows, api::kNearLinearEfficiency);
      out << "\n" << api::scaling_confidence_text(rows);
      if (!comparison.empty()) out << "\n" << api::scaling_comparison_text(comparison);
      if (!warnings.empty()) out << "\n";
      for (const std::string& w : warnings)
        out << w << "\n";
    }
    const bool any_feasible =
        std::any_of(rows.begin(), rows.end(), [](const api::ScalingRow& r) { return r.feasible; });
    return any_feasible ? 0 : 3;
  }

 private:
  /// The study flags, each a change of the "scale" section that `record` lists.
  void apply_flags(nlohmann::json& doc, ScenarioRecord& record) const {
    nlohmann::json& scale = doc["scale"];
    auto set = [&](const char* key, const nlohmann::json& value) {
      scale[key] = value;
      record.overrides.push_back({std::string("/scale/") + key, value});
    };
    if (!systems_.empty()) {
      set("systems", systems_);
    } else if (!options_.system().empty()) {
      set("systems", {options_.system()});
    }
    if (!counts_.empty()) {
      scale.erase("max_gpus");
      set("gpus", counts_);
    }
    if (max_gpus_ > 0) {
      if (!counts_.empty()) {
        throw sim::InputError(kCommandLine, "--max-gpus", "give either --gpu-counts or --max-gpus");
      }
      scale.erase("gpus");
      set("max_gpus", max_gpus_);
    }
    if (!mode_.empty()) {
      if (mode_ == "both") {
        set("modes", {"weak", "strong"});
      } else if (mode_ == "weak" || mode_ == "strong") {
        set("modes", {mode_});
      } else {
        throw sim::InputError(kCommandLine, "--mode",
                              fmt::format("expected weak, strong or both, got '{}'", mode_));
      }
    }
    if (strong_batch_ > 0) set("strong_global_batch", strong_batch_);
    if (replan_) set("replan", true);
    if (!tokens_.empty()) set("tokens", parse_tokens_flag("--tokens", tokens_));
  }

  static std::string header(const nlohmann::json& doc, const std::string& source, bool replan) {
    const nlohmann::json& p = doc.value("parallelism", nlohmann::json::object());
    const nlohmann::json& t = doc.value("training", nlohmann::json::object());
    const std::string plan = replan ? "searched at every size (ZeRO-1, selective or full "
                                      "recomputation, micro-batch up to 2, as size searches)"
                                    : p.dump() + " (DP takes the rest)";
    return fmt::format("# fabricsim scale: {} | {} | plan {} | training {}\n", source,
                       doc.value("model", nlohmann::json::object()).dump(), plan, t.dump());
  }

  std::string file_;
  ScenarioOptions options_;
  std::vector<std::string> systems_;
  std::vector<int> counts_;
  int max_gpus_ = 0;
  std::string mode_;
  int strong_batch_ = 0;
  bool replan_ = false;
  std::string tokens_, prices_file_;
  int threads_ = 1;
  bool json_ = false;
  std::string jsonl_;
};

}  // namespace

std::unique_ptr<Command> make_scale_command() {
  return std::make_unique<ScaleCommand>();
}

}  // namespace fabricsim::tools
