#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <thread>

#include "api/sweep_output.hpp"
#include "api/sweep_runner.hpp"
#include "api/sweep_spec.hpp"
#include "sim/input_error.hpp"
#include "tools/fabricsim/cli.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/sweep_ranks.hpp"

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
    std::optional<SweepRanks> ranks;  // MPI is initialised only under an MPI launcher
    if (launched_by_mpi()) ranks.emplace();
    if (ranks && ranks->size() > 1) {
      return ranks->rank() == 0 ? run_rank0(*ranks, out, err) : run_rank(*ranks, err);
    }
    Sweep sweep(*this, err);
    const Clock::time_point start = Clock::now();
    api::run_sweep(sweep.spec, sweep.todo, threads_,
                   [&](const api::SweepPoint&, const nlohmann::json& row) { sweep.record(row); });
    return sweep.finish(out, start, 1);
  }

 private:
  /// One run's spec, output folder, points to do and rows so far (on one process, or on rank 0 of
  /// an MPI job, which records every rank's rows).
  struct Sweep {
    Sweep(const SweepCommand& c, std::ostream& err)
        : spec(api::load_sweep_spec(c.spec_file_)),
          shard(c.shard_.empty() ? api::SweepShard{}
                                 : api::parse_sweep_shard(c.shard_, kCommandLine)),
          dir(c.dir_),
          quiet(c.quiet_) {
      if (!dir.empty()) output.emplace(dir, spec, shard, c.resume_);
      todo = api::sweep_todo(spec, shard, output ? output->done() : std::set<std::string>{});
      progress.emplace(err, !quiet && ::isatty(STDERR_FILENO) == 1, todo.size());
    }

    void record(const nlohmann::json& row) {
      if (output) {
        output->write(row);
      } else {
        rows.emplace(row.at("index").get<int64_t>(), row);
      }
      feasible += row.at("feasible").get<bool>() ? 1 : 0;
      progress->point_done();
    }

    int finish(std::ostream& out, Clock::time_point start, int processes) {
      progress->finish();
      const double wall = std::chrono::duration<double>(Clock::now() - start).count();
      if (!output) {
        for (const auto& [index, row] : rows)
          out << api::sweep_row_line(row);
        return 0;
      }
      output->close();
      if (!quiet) {
        out << fmt::format("{} points evaluated ({} feasible) in {:.2f} s", todo.size(), feasible,
                           wall);
        if (processes > 1) out << fmt::format(" on {} MPI processes", processes);
        if (output->done().size() > 0) {
          out << fmt::format(", {} done before", output->done().size());
        }
        out << "; results in " << dir << "\n";
      }
      return 0;
    }

    const api::SweepSpec spec;
    const api::SweepShard shard;
    const std::string dir;
    const bool quiet;
    std::optional<api::SweepOutput> output;
    std::vector<int64_t> todo;
    std::optional<Progress> progress;
    std::map<int64_t, nlohmann::json> rows;  // without -o: printed in point order at the end
    int64_t feasible = 0;
  };

  /// The points of `todo` rank `rank` of `size` evaluates: every size-th, so that each rank gets
  /// a mix of the sweep's cheap and dear corners.
  static std::vector<int64_t> share(const std::vector<int64_t>& todo, int rank, int size) {
    std::vector<int64_t> mine;
    for (size_t j = static_cast<size_t>(rank); j < todo.size(); j += static_cast<size_t>(size))
      mine.push_back(todo[j]);
    return mine;
  }

  /// Rank 0 reads the spec and the folder, sends the others the canonical spec and the points
  /// to do, evaluates its share and writes every rank's rows as they arrive.
  int run_rank0(const SweepRanks& ranks, std::ostream& out, std::ostream& err) {
    std::unique_ptr<Sweep> sweep;
    try {
      sweep = std::make_unique<Sweep>(*this, err);
    } catch (...) {
      ranks.broadcast(std::nullopt);  // the others end; this rank reports the error
      throw;
    }
    const nlohmann::json setup = {{"sweep", api::sweep_spec_json(sweep->spec)},
                                  {"todo", sweep->todo}};
    ranks.broadcast(setup.dump());
    const Clock::time_point start = Clock::now();
    std::mutex recording;
    auto record = [&](const nlohmann::json& row) {
      std::lock_guard<std::mutex> lock(recording);
      sweep->record(row);
    };
    auto fail = [&](const std::exception& e) {
      std::lock_guard<std::mutex> lock(recording);
      const CliError error = cli_error(e);
      err << "fabricsim: " << error.message << std::endl;
      ranks.abort(error.code);
    };
    std::thread receiver([&] {
      try {
        ranks.receive_rows([&](const std::string& line) { record(nlohmann::json::parse(line)); });
      } catch (const std::exception& e) {
        fail(e);
      }
    });
    try {
      api::run_sweep(sweep->spec, share(sweep->todo, 0, ranks.size()), threads_,
                     [&](const api::SweepPoint&, const nlohmann::json& row) { record(row); });
    } catch (const std::exception& e) {
      fail(e);
    }
    receiver.join();
    return sweep->finish(out, start, ranks.size());
  }

  /// A rank above 0 evaluates its share of the points rank 0 sent and sends each row back.
  int run_rank(const SweepRanks& ranks, std::ostream& err) const {
    // Rank 0 could not set the sweep up and reports why itself. End quietly and successfully:
    // a non-zero exit here would make mpirun kill rank 0 before its message is out; the job's
    // status is rank 0's.
    const std::optional<std::string> setup = ranks.broadcast(std::nullopt);
    if (!setup) return 0;
    try {
      const nlohmann::json doc = nlohmann::json::parse(*setup);
      const api::SweepSpec spec =
          api::read_sweep_spec(sim::JsonDocument(doc.at("sweep"), spec_file_).root());
      const auto todo = doc.at("todo").get<std::vector<int64_t>>();
      api::run_sweep(spec, share(todo, ranks.rank(), ranks.size()), threads_,
                     [&](const api::SweepPoint&, const nlohmann::json& row) {
                       ranks.send_row(api::sweep_row_line(row));
                     });
      ranks.finish();
    } catch (const std::exception& e) {
      const CliError error = cli_error(e);
      err << fmt::format("fabricsim: rank {}: {}", ranks.rank(), error.message) << std::endl;
      ranks.abort(error.code);
    }
    return 0;
  }

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
