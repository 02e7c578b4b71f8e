#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <ostream>

#include "api/sweep_output.hpp"
#include "api/sweep_runner.hpp"
#include "api/sweep_spec.hpp"
#include "sim/input_error.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"

namespace fabricsim::tools {
namespace {

using Clock = std::chrono::steady_clock;

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  const auto whole = static_cast<int64_t>(s);
  if (s < 3600) return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  return fmt::format("{:.1f}h", s / 3600);
}

/// "done/total, rate, ETA" on one terminal line, redrawn at most ten times a second.
class Progress {
 public:
  Progress(std::ostream& err, bool shown, size_t total)
      : err_(err), shown_(shown), total_(total), start_(Clock::now()), drawn_(start_) {}
  void point_done() {
    ++done_;
    if (!shown_) return;
    const Clock::time_point now = Clock::now();
    if (done_ < total_ && now - drawn_ < std::chrono::milliseconds(100)) return;
    drawn_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
    err_ << fmt::format("\r{}/{} points, {:.1f}/s, ETA {}   ", done_, total_, rate,
                        duration_text(eta))
         << std::flush;
  }
  void finish() {
    if (shown_ && done_ > 0) err_ << "\n" << std::flush;
  }

 private:
  std::ostream& err_;
  bool shown_;
  size_t total_;
  size_t done_ = 0;
  Clock::time_point start_, drawn_;
};

class SweepCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand(
        "sweep", "Evaluate every point of a sweep spec (a base scenario and axes over its fields)");
    app_->add_option("spec", spec_file_, "Sweep spec JSON (docs/formats.md, \"Sweep spec\")");
    app_->add_option("-o,--output", dir_,
                     "Folder for sweep.json, results.jsonl and results.csv, appended as points "
                     "finish (default: print the rows as JSON lines when all are done)");
    app_->add_flag("--resume", resume_, "Continue the sweep in -o's folder, skipping done points");
    app_->add_option("--threads", threads_, "Worker threads (0: one per core)")
        ->check(CLI::NonNegativeNumber);
    app_->add_option("--shard", shard_, "Run only the points with index % N == i (i/N)");
    app_->add_flag("-q,--quiet", quiet_, "No progress line on a terminal, no summary");
    merge_ = app_->add_subcommand("merge", "Join the output folders of a sweep's shards");
    merge_->add_option("dirs", merge_dirs_, "Output folders of `sweep -o`")->required();
    merge_->add_option("-o,--output", merge_out_, "New folder for the merged results")->required();
    merge_->add_flag("--allow-missing", allow_missing_,
                     "Write the merge even if points are missing");
  }

  int run(std::ostream& out, std::ostream& err) override {
    if (merge_->parsed()) return run_merge(out);
    if (spec_file_.empty()) throw sim::InputError(kCommandLine, "spec", "give a sweep spec file");
    if (resume_ && dir_.empty()) {
      throw sim::InputError(kCommandLine, "--resume", "needs the output folder (-o DIR)");
    }
    const api::SweepSpec spec = api::load_sweep_spec(spec_file_);
    const api::SweepShard shard =
        shard_.empty() ? api::SweepShard{} : api::parse_sweep_shard(shard_, kCommandLine);
    std::optional<api::SweepOutput> output;
    if (!dir_.empty()) output.emplace(dir_, spec, shard, resume_);

    const int64_t total = api::sweep_point_count(spec);
    std::vector<int64_t> todo;
    for (int64_t k = shard.index; k < total; k += shard.count) {
      if (!output || output->done().count(api::sweep_point(spec, k).id) == 0) todo.push_back(k);
    }
    Progress progress(err, !quiet_ && ::isatty(STDERR_FILENO) == 1, todo.size());
    std::map<int64_t, nlohmann::json> rows;  // without -o: printed in point order at the end
    int64_t feasible = 0;
    const Clock::time_point start = Clock::now();
    api::run_sweep(spec, todo, threads_, [&](const api::SweepPoint& p, const nlohmann::json& row) {
      if (output) {
        output->write(row);
      } else {
        rows.emplace(p.index, row);
      }
      feasible += row.at("feasible").get<bool>() ? 1 : 0;
      progress.point_done();
    });
    progress.finish();
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    if (!output) {
      for (const auto& [index, row] : rows)
        out << api::sweep_row_line(row);
      return 0;
    }
    output->close();
    if (!quiet_) {
      out << fmt::format("{} points evaluated ({} feasible) in {:.2f} s", todo.size(), feasible,
                         wall);
      if (output->done().size() > 0) out << fmt::format(", {} done before", output->done().size());
      out << "; results in " << dir_ << "\n";
    }
    return 0;
  }

 private:
  int run_merge(std::ostream& out) const {
    const api::SweepMerge m = api::merge_sweep_outputs(merge_dirs_, merge_out_, allow_missing_);
    out << fmt::format("merged {} of {} points from {} folders into {}", m.merged, m.points,
                       merge_dirs_.size(), merge_out_);
    if (m.duplicates > 0) out << fmt::format("; {} duplicate rows dropped", m.duplicates);
    if (!m.missing.empty()) {
      out << fmt::format("; {} missing (first: {})", m.missing.size(), m.missing.front());
    }
    out << "\n";
    return 0;
  }

  CLI::App* merge_ = nullptr;
  std::string spec_file_, dir_, shard_, merge_out_;
  std::vector<std::string> merge_dirs_;
  bool resume_ = false, quiet_ = false, allow_missing_ = false;
  int threads_ = 1;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() {
  return std::make_unique<SweepCommand>();
}

}  // namespace fabricsim::tools
