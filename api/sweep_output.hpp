#pragma once
// A sweep's output folder: sweep.json (the spec, its point count and the shard, so that a resume
// or a merge can check it has the same sweep), results.jsonl and results.csv (one line per point,
// appended as each point finishes, so an interrupted sweep loses only the points in flight).
// Formats in docs/formats.md ("sweep results").

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "api/sweep_spec.hpp"
#include "sim/file_write.hpp"

namespace fabricsim::api {

/// Which share of the points a run computes: those with index % count == index_.
struct SweepShard {
  int index = 0;
  int count = 1;
};
/// "i/N" with 0 <= i < N; `where` names the flag for errors.
SweepShard parse_sweep_shard(const std::string& text, const std::string& where);

class SweepOutput {
 public:
  /// Opens `dir` (created when missing). A folder that holds anything is refused unless
  /// `resume`; then it must hold the same sweep and shard, its finished points are kept (a line
  /// cut short by an interruption is dropped) and done() lists their ids.
  SweepOutput(const std::string& dir, const SweepSpec& spec, SweepShard shard, bool resume);
  ~SweepOutput();
  SweepOutput(const SweepOutput&) = delete;
  SweepOutput& operator=(const SweepOutput&) = delete;

  const std::set<std::string>& done() const { return done_; }
  /// Appends one finished point to both files (each write checked).
  void write(const nlohmann::json& row);
  void close();

 private:
  const SweepSpec& spec_;
  std::set<std::string> done_;
  std::unique_ptr<sim::AppendFile> jsonl_, csv_;
};

/// The indices a run of `shard` evaluates, ascending: its points whose ids are not in `done`
/// (a resumed folder's finished points). The CLI, its MPI ranks and the Python module share it.
std::vector<int64_t> sweep_todo(const SweepSpec& spec, SweepShard shard,
                                const std::set<std::string>& done);

struct SweepMerge {
  int64_t points = 0;                ///< in the sweep
  int64_t merged = 0;                ///< distinct points written
  int64_t duplicates = 0;            ///< identical rows found in more than one place
  std::vector<std::string> missing;  ///< ids of points no folder holds, in order
};

/// Joins the output folders of shards (or partial runs) of one sweep into `out` (a new or empty
/// folder), rows sorted by point id. Throws sim::InputError when the folders hold different
/// sweeps, when one id has two different rows, or when points are missing and not
/// `allow_missing` (then nothing is written).
SweepMerge merge_sweep_outputs(const std::vector<std::string>& dirs, const std::string& out,
                               bool allow_missing);

}  // namespace fabricsim::api
