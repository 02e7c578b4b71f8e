#include "api/sweep_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "api/sweep_runner.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::api {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "fabricsim-sweep-1";

std::string in_dir(const std::string& dir, const char* name) {
  return (fs::path(dir) / name).string();
}

nlohmann::json meta_json(const SweepSpec& spec, SweepShard shard) {
  return {{"format", kFormat},
          {"points", sweep_point_count(spec)},
          {"shard", fmt::format("{}/{}", shard.index, shard.count)},
          {"sweep", sweep_spec_json(spec)}};
}

nlohmann::json read_meta(const std::string& dir) {
  const std::string path = in_dir(dir, "sweep.json");
  if (!fs::exists(path)) {
    throw sim::InputError(dir, "", "not a sweep output folder (it has no sweep.json)");
  }
  nlohmann::json meta = sim::load_json_file(path).root().raw();
  if (!meta.is_object() || meta.value("format", "") != kFormat || !meta.contains("sweep")) {
    throw sim::InputError(path, "", fmt::format("expected a {} description", kFormat));
  }
  return meta;
}

bool has_entries(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return false;
  if (!fs::is_directory(dir, ec)) throw sim::InputError(dir, "", "exists and is not a folder");
  return !fs::is_empty(dir, ec);
}

void make_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw sim::InputError(dir, "", "cannot create the folder: " + ec.message());
}

/// The complete lines of a results.jsonl, parsed; `complete` is their length in bytes. Bytes after
/// the last newline are a row an interruption cut short.
struct Lines {
  std::vector<nlohmann::json> rows;
  uintmax_t complete = 0;
  bool torn = false;
};

Lines read_rows(const std::string& path) {
  Lines out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const size_t end = text.rfind('\n');
  out.complete = end == std::string::npos ? 0 : end + 1;
  out.torn = out.complete < text.size();
  size_t start = 0;
  for (int line = 1; start < out.complete; ++line) {
    const size_t nl = text.find('\n', start);
    nlohmann::json row = nlohmann::json::parse(text.substr(start, nl - start), nullptr, false);
    if (!row.is_object() || !row.contains("id") || !row["id"].is_string() ||
        !row.contains("index") || !row["index"].is_number_integer()) {
      throw sim::InputError(path, fmt::format("line {}", line), "expected a sweep result row");
    }
    out.rows.push_back(std::move(row));
    start = nl + 1;
  }
  return out;
}

/// A row must be a point of `spec`: its index in range and its id the one the spec gives it.
void check_row(const SweepSpec& spec, const nlohmann::json& row, const std::string& path) {
  const auto index = row["index"].get<int64_t>();
  if (index < 0 || index >= sweep_point_count(spec) ||
      sweep_point(spec, index).id != row["id"].get<std::string>()) {
    throw sim::InputError(
        path, "",
        fmt::format("row {} is not a point of this folder's sweep", row["id"].get<std::string>()));
  }
}

}  // namespace

SweepShard parse_sweep_shard(const std::string& text, const std::string& where) {
  SweepShard s;
  const size_t slash = text.find('/');
  auto number = [&](std::string_view part, int& value) {
    const auto r = std::from_chars(part.data(), part.data() + part.size(), value);
    return r.ec == std::errc() && r.ptr == part.data() + part.size();
  };
  const std::string_view all(text);
  if (slash == std::string::npos || !number(all.substr(0, slash), s.index) ||
      !number(all.substr(slash + 1), s.count) || s.count < 1 || s.index < 0 || s.index >= s.count) {
    throw sim::InputError(where, "--shard",
                          fmt::format("expected i/N with 0 <= i < N, got '{}'", text));
  }
  return s;
}

SweepOutput::SweepOutput(const std::string& dir, const SweepSpec& spec, SweepShard shard,
                         bool resume)
    : spec_(spec) {
  const nlohmann::json meta = meta_json(spec, shard);
  const std::string jsonl = in_dir(dir, "results.jsonl");
  const std::string csv = in_dir(dir, "results.csv");
  if (has_entries(dir)) {
    if (!resume) {
      throw sim::InputError(dir, "",
                            "the folder is not empty; pass --resume to continue the sweep in it, "
                            "or give a new folder");
    }
    if (read_meta(dir) != meta) {
      throw sim::InputError(
          in_dir(dir, "sweep.json"), "",
          "the folder holds a different sweep (spec or shard); give a new folder");
    }
    Lines kept = read_rows(jsonl);
    if (kept.torn) fs::resize_file(jsonl, kept.complete);
    // The CSV is rebuilt from the rows kept, so both files hold the same points.
    std::string table = sweep_csv_header(spec);
    for (const nlohmann::json& row : kept.rows) {
      check_row(spec, row, jsonl);
      if (done_.insert(row["id"].get<std::string>()).second) table += sweep_csv_line(spec, row);
    }
    sim::write_file(csv, table);
  } else {
    make_dir(dir);
    sim::write_file(in_dir(dir, "sweep.json"), meta.dump(2) + "\n");
    sim::write_file(csv, sweep_csv_header(spec));
  }
  jsonl_ = std::make_unique<sim::AppendFile>(jsonl);
  csv_ = std::make_unique<sim::AppendFile>(csv);
}

SweepOutput::~SweepOutput() = default;

void SweepOutput::write(const nlohmann::json& row) {
  jsonl_->write(sweep_row_line(row));
  csv_->write(sweep_csv_line(spec_, row));
}

void SweepOutput::close() {
  jsonl_->close();
  csv_->close();
}

std::vector<int64_t> sweep_todo(const SweepSpec& spec, SweepShard shard,
                                const std::set<std::string>& done) {
  std::vector<int64_t> todo;
  const int64_t total = sweep_point_count(spec);
  for (int64_t k = shard.index; k < total; k += shard.count) {
    if (done.empty() || done.count(sweep_point(spec, k).id) == 0) todo.push_back(k);
  }
  return todo;
}

SweepMerge merge_sweep_outputs(const std::vector<std::string>& dirs, const std::string& out,
                               bool allow_missing) {
  if (dirs.empty()) throw sim::InputError("<command line>", "", "give the folders to merge");
  if (has_entries(out)) throw sim::InputError(out, "", "the output folder is not empty");
  const nlohmann::json first = read_meta(dirs.front());
  const SweepSpec spec =
      read_sweep_spec(sim::JsonDocument(first["sweep"], in_dir(dirs.front(), "sweep.json")).root());
  SweepMerge m;
  m.points = sweep_point_count(spec);
  std::map<int64_t, nlohmann::json> rows;
  for (const std::string& dir : dirs) {
    const nlohmann::json meta = read_meta(dir);
    if (meta["sweep"] != first["sweep"]) {
      throw sim::InputError(in_dir(dir, "sweep.json"), "",
                            "holds a different sweep from " + dirs.front());
    }
    const std::string path = in_dir(dir, "results.jsonl");
    for (nlohmann::json& row : read_rows(path).rows) {
      check_row(spec, row, path);
      const auto index = row["index"].get<int64_t>();
      auto [at, inserted] = rows.emplace(index, row);
      if (inserted) continue;
      if (at->second != row) {
        throw sim::InputError(path, "",
                              fmt::format("point {} has a different row in another folder",
                                          row["id"].get<std::string>()));
      }
      ++m.duplicates;
    }
  }
  m.merged = static_cast<int64_t>(rows.size());
  for (int64_t k = 0; k < m.points && m.merged < m.points; ++k) {
    if (rows.count(k) == 0) m.missing.push_back(sweep_point(spec, k).id);
  }
  if (!m.missing.empty() && !allow_missing) {
    throw sim::InputError(out, "",
                          fmt::format("{} of {} points are missing (first: {}); merge the other "
                                      "shards too, or pass --allow-missing",
                                      m.missing.size(), m.points, m.missing.front()));
  }
  make_dir(out);
  std::string jsonl, table = sweep_csv_header(spec);
  for (const auto& [index, row] : rows) {
    jsonl += sweep_row_line(row);
    table += sweep_csv_line(spec, row);
  }
  nlohmann::json meta = meta_json(spec, SweepShard{});
  sim::write_file(in_dir(out, "sweep.json"), meta.dump(2) + "\n");
  sim::write_file(in_dir(out, "results.jsonl"), jsonl);
  sim::write_file(in_dir(out, "results.csv"), table);
  return m;
}

}  // namespace fabricsim::api
