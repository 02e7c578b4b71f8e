// Reader for the text output of NVIDIA's nccl-tests (all_reduce_perf and friends). Layouts differ
// between versions (with or without the redop and root columns, "#wrong" or "error", "N/A" when
// validation is off), so columns are located by name from the "# size count type ..." header.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <set>

#include "calibration/bus_bandwidth.hpp"
#include "calibration/importers.hpp"
#include "calibration/text_fields.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::calibration {

namespace {

using sim::InputError;

constexpr size_t kMissing = SIZE_MAX;

struct ColumnGroup {
  size_t time = kMissing, algbw = kMissing, busbw = kMissing;
  std::optional<size_t> wrong;  ///< "#wrong": a count of wrong results, or N/A
  std::optional<bool> in_place;
};

struct Layout {
  std::vector<std::string> names;
  size_t size = 0;
  std::vector<ColumnGroup> groups;
};

std::string line_ref(size_t line) {
  return fmt::format("line {}", line);
}

std::string strip_perf(std::string_view op) {
  if (op.size() > 5 && op.substr(op.size() - 5) == "_perf") op.remove_suffix(5);
  return std::string(op);
}

bool known_op(std::string_view op) {
  const auto& ops = collective_ops();
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

/// The op of an "<op>_perf" in a file name such as "logs/all_gather_perf_64gpu.log".
std::optional<std::string> op_from_file_name(std::string_view name) {
  const size_t slash = name.find_last_of('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  // Longest first so that "all_reduce" wins over its suffix "reduce".
  std::vector<std::string> ops = collective_ops();
  std::sort(ops.begin(), ops.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (size_t at = name.find("_perf"); at != std::string_view::npos;
       at = name.find("_perf", at + 1)) {
    const std::string_view before = name.substr(0, at);
    for (const std::string& op : ops) {
      if (before.size() < op.size() || before.substr(before.size() - op.size()) != op) continue;
      // "xall_reduce_perf" names no op, not "reduce".
      const size_t start = before.size() - op.size();
      if (start == 0 || !std::isalnum(static_cast<unsigned char>(before[start - 1]))) return op;
      break;
    }
  }
  return std::nullopt;
}

/// The value after `key` ("NCCL_ALGO=Ring", possibly quoted) anywhere in `line`.
std::optional<std::string> env_value(std::string_view line, std::string_view key) {
  for (size_t at = line.find(key); at != std::string_view::npos; at = line.find(key, at + 1)) {
    const bool starts_word =
        at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
    if (!starts_word) continue;
    std::string_view rest = line.substr(at + key.size());
    if (!rest.empty() && rest.front() == '=') {
      rest.remove_prefix(1);
    } else if (rest.substr(0, 23) == " set by environment to ") {
      // NCCL_DEBUG=INFO prints "NCCL INFO NCCL_ALGO set by environment to Ring".
      rest.remove_prefix(23);
    } else {
      continue;
    }
    const std::vector<std::string_view> tokens = split_whitespace(rest);
    if (tokens.empty()) continue;
    std::string_view value = tokens.front();
    while (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
      value.remove_prefix(1);
    }
    while (!value.empty() && (value.back() == '"' || value.back() == '\'')) {
      value.remove_suffix(1);
    }
    if (!value.empty()) return std::string(value);
  }
  return std::nullopt;
}

/// The token after `key` in `line`, e.g. the version in "NCCL version 2.18.5+cuda12.2".
std::optional<std::string> word_after(std::string_view line, std::string_view key) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const std::vector<std::string_view> tokens = split_whitespace(line.substr(at + key.size()));
  if (tokens.empty()) return std::nullopt;
  return std::string(tokens.front());
}

class LogParser {
 public:
  LogParser(std::string_view text, const std::string& name, std::optional<std::string> op_hint)
      : text_(text), name_(name), op_hint_(std::move(op_hint)) {}

  MeasurementSet parse() {
    if (op_hint_) {
      *op_hint_ = strip_perf(*op_hint_);
      if (!known_op(*op_hint_)) {
        throw InputError(name_, "",
                         fmt::format("expected an op hint among {}, got '{}'",
                                     join(collective_ops(), ", "), *op_hint_));
      }
    }
    const std::vector<std::string_view> lines = split_lines(text_);
    for (size_t i = 0; i < lines.size(); ++i) {
      parse_line(lines[i], i + 1);
    }
    if (set_.collectives.empty()) {
      throw InputError(name_, "",
                       "expected nccl-tests result rows after a '#  size  count  type ... busbw' "
                       "header, found none");
    }
    finish();
    return std::move(set_);
  }

 private:
  void parse_line(std::string_view line, size_t number) {
    if (auto algo = env_value(line, "NCCL_ALGO")) algorithm_ = *algo;
    if (auto proto = env_value(line, "NCCL_PROTO")) protocol_ = *proto;
    if (!nccl_version_) nccl_version_ = word_after(line, "NCCL version ");
    const std::string_view trimmed = trim(line);
    if (trimmed.empty()) return;
    if (trimmed.front() == '#') {
      parse_comment(trimmed.substr(1), number);
      return;
    }
    // NCCL_DEBUG output is interleaved with the table; host names may start with a digit.
    if (line.find("NCCL INFO") != std::string_view::npos ||
        line.find("NCCL WARN") != std::string_view::npos) {
      return;
    }
    // A signed number is a row too, so that a negative size is an error, not a skipped line.
    const bool sign = trimmed.size() > 1 && (trimmed[0] == '-' || trimmed[0] == '+');
    if (layout_ && std::isdigit(static_cast<unsigned char>(trimmed[sign ? 1 : 0]))) {
      parse_row(trimmed, number);
    }
  }

  void parse_comment(std::string_view body, size_t number) {
    const std::vector<std::string_view> tokens = split_whitespace(body);
    if (tokens.empty()) return;
    if (tokens[0] == "nThread") {
      close_segment();
      parse_thread_header(tokens, number);
    } else if (tokens[0] == "Rank") {
      parse_rank(tokens, number);
    } else if (tokens[0] == "nccl-tests" && tokens.size() >= 3 && tokens[1] == "version") {
      tests_version_ = std::string(tokens[2]);
    } else if (body.find("Collective test starting:") != std::string_view::npos) {
      const auto op = word_after(body, "Collective test starting:");
      if (!op || !known_op(strip_perf(*op))) {
        throw InputError(name_, line_ref(number),
                         fmt::format("expected '# Collective test starting: <op>_perf' with op "
                                     "among {}, got '{}'",
                                     join(collective_ops(), ", "), trim(body)));
      }
      current_op_ = strip_perf(*op);
    } else if (std::find(tokens.begin(), tokens.end(), "size") != tokens.end() &&
               std::find(tokens.begin(), tokens.end(), "busbw") != tokens.end()) {
      parse_header(tokens, number);
    } else if (std::find(tokens.begin(), tokens.end(), "out-of-place") != tokens.end() ||
               std::find(tokens.begin(), tokens.end(), "in-place") != tokens.end()) {
      group_labels_.clear();
      for (std::string_view t : tokens) {
        group_labels_.push_back(t == "in-place");
      }
    }
  }

  // "# nThread 1 nGpus 8 minBytes 8 maxBytes ...": name/value pairs.
  void parse_thread_header(const std::vector<std::string_view>& tokens, size_t number) {
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] != "nThread" && tokens[i] != "nGpus") continue;
      const auto value = parse_integer(tokens[i + 1]);
      if (!value || *value <= 0) {
        throw InputError(name_, line_ref(number),
                         fmt::format("expected a positive integer after '{}', got '{}'", tokens[i],
                                     tokens[i + 1]));
      }
      (tokens[i] == "nThread" ? threads_ : gpus_per_thread_) = *value;
    }
  }

  // "#  Rank  0 Group  0 Pid  12345 on    node01 device  0 [0x1b] NVIDIA H100 80GB HBM3"; older
  // versions have no "Group".
  void parse_rank(const std::vector<std::string_view>& tokens, size_t number) {
    const auto on = std::find(tokens.begin(), tokens.end(), "on");
    const auto device = std::find(tokens.begin(), tokens.end(), "device");
    const auto rank = tokens.size() > 1 ? parse_integer(tokens[1]) : std::nullopt;
    if (!rank || *rank < 0 || on == tokens.end() || on + 1 >= device || device == tokens.end()) {
      throw InputError(name_, line_ref(number),
                       fmt::format("expected a device line '#  Rank <n> ... on <host> device <d> "
                                   "[<bus id>] <GPU name>', got '{}'",
                                   join(tokens, " ")));
    }
    ranks_.insert(*rank);
    hosts_.insert(std::string(*(on + 1)));
    auto name = device + 1;
    if (name != tokens.end()) ++name;  // the device number
    if (name != tokens.end() && name->front() == '[') ++name;
    const std::string gpu = join(std::vector<std::string_view>(name, tokens.end()), " ");
    if (!gpu.empty() && std::find(gpu_names_.begin(), gpu_names_.end(), gpu) == gpu_names_.end()) {
      gpu_names_.push_back(gpu);
    }
  }

  void parse_header(const std::vector<std::string_view>& tokens, size_t number) {
    Layout layout;
    std::optional<size_t> size;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string_view t = tokens[i];
      layout.names.emplace_back(t);
      if (t == "time") {
        layout.groups.push_back({i, kMissing, kMissing, std::nullopt, std::nullopt});
      } else if (t == "size" && layout.groups.empty()) {
        size = i;
      } else if (!layout.groups.empty() && (t == "algbw" || t == "busbw" || t == "#wrong")) {
        ColumnGroup& g = layout.groups.back();
        if (t == "algbw") g.algbw = i;
        if (t == "busbw") g.busbw = i;
        if (t == "#wrong") g.wrong = i;
      }
    }
    const bool complete = std::all_of(
        layout.groups.begin(), layout.groups.end(),
        [](const ColumnGroup& g) { return g.algbw != kMissing && g.busbw != kMissing; });
    if (!size || layout.groups.empty() || layout.groups.size() > 2 || !complete) {
      throw InputError(name_, line_ref(number),
                       fmt::format("expected a column header 'size ... time algbw busbw' with one "
                                   "or two time/algbw/busbw groups, got '{}'",
                                   join(tokens, " ")));
    }
    layout.size = *size;
    // nccl-tests prints out-of-place first, then in-place; a label line above says so.
    if (group_labels_.size() == layout.groups.size()) {
      for (size_t g = 0; g < layout.groups.size(); ++g) {
        layout.groups[g].in_place = group_labels_[g];
      }
    } else if (layout.groups.size() == 2) {
      layout.groups[0].in_place = false;
      layout.groups[1].in_place = true;
    }
    layout_ = std::move(layout);
  }

  void parse_row(std::string_view line, size_t number) {
    const Layout& layout = *layout_;
    const std::vector<std::string_view> fields = split_whitespace(line);
    if (fields.size() != layout.names.size()) {
      throw InputError(
          name_, line_ref(number),
          fmt::format("expected {} whitespace-separated columns ({}), got {}: '{}'",
                      layout.names.size(), join(layout.names, " "), fields.size(), line));
    }
    const auto size = parse_integer(fields[layout.size]);
    if (!size || *size < 0) {
      throw InputError(
          name_, line_ref(number),
          fmt::format("expected a size in bytes in column 'size', got '{}'", fields[layout.size]));
    }
    // A zero-byte row carries no bandwidth, and bytes == 0 means "size unknown" downstream.
    if (*size == 0) return;
    const std::string& op = row_op();
    for (const ColumnGroup& g : layout.groups) {
      const std::string_view group = !g.in_place   ? ""
                                     : *g.in_place ? " (in-place)"
                                                   : " (out-of-place)";
      const auto number_in = [&](size_t column, bool positive) {
        const auto value = parse_number(fields[column]);
        if (!value || *value < 0 || (positive && *value == 0)) {
          throw InputError(name_, line_ref(number),
                           fmt::format("expected a {} number in column '{}'{}, got '{}'",
                                       positive ? "positive" : "non-negative", layout.names[column],
                                       group, fields[column]));
        }
        return *value;
      };
      CollectiveMeasurement m;
      m.op = op;
      m.bytes = static_cast<double>(*size);
      m.time_us = number_in(g.time, true);
      m.algbw_GBps = number_in(g.algbw, false);
      m.busbw_GBps = number_in(g.busbw, false);
      m.in_place = g.in_place;
      m.source = fmt::format("{}:{}", name_, number);
      if (g.wrong && fields[*g.wrong] != "N/A") {
        const auto wrong = parse_integer(fields[*g.wrong]);
        if (!wrong || *wrong < 0) {
          throw InputError(name_, line_ref(number),
                           fmt::format("expected a count or N/A in column '#wrong'{}, got '{}'",
                                       group, fields[*g.wrong]));
        }
        // A run whose results fail validation is not a measurement of a working system.
        if (*wrong > 0) {
          throw InputError(name_, line_ref(number),
                           fmt::format("expected 0 wrong results in column '#wrong'{}, got {}: "
                                       "nccl-tests validation failed for this run",
                                       group, *wrong));
        }
      }
      set_.collectives.push_back(std::move(m));
      row_lines_.push_back(number);
    }
  }

  const std::string& row_op() {
    if (current_op_) return *current_op_;
    if (!fallback_op_) {
      fallback_op_ = op_hint_ ? op_hint_ : op_from_file_name(name_);
      if (!fallback_op_) {
        throw InputError(name_, "",
                         "could not determine the collective op: no '# Collective test starting: "
                         "<op>_perf' line, no op hint, and the file name contains no '<op>_perf'");
      }
    }
    return *fallback_op_;
  }

  // One log may hold several tests (each starting with "# nThread ..."), possibly on different
  // rank sets: the rank count of each test applies to its own rows.
  void close_segment() {
    if (segment_start_ == set_.collectives.size()) return;
    int ranks = 0;
    int nodes = 0;
    int per_node = 0;
    std::string source;
    if (!ranks_.empty()) {
      ranks = static_cast<int>(ranks_.size());
      nodes = static_cast<int>(hosts_.size());
      per_node = ranks % nodes == 0 ? ranks / nodes : 0;
      source = fmt::format("{} ranks on {} hosts from device lines", ranks, nodes);
    } else if (threads_ && gpus_per_thread_) {
      // Without device lines the MPI process count is not in the log: one process is assumed.
      ranks = static_cast<int>(*threads_ * *gpus_per_thread_);
      source = fmt::format("{} ranks from nThread x nGpus (no device lines; one process assumed)",
                           ranks);
    } else {
      throw InputError(name_, line_ref(row_lines_[segment_start_]),
                       "could not determine the number of ranks: no '#  Rank' device lines and no "
                       "'# nThread <t> nGpus <g>' header");
    }
    if (std::find(rank_sources_.begin(), rank_sources_.end(), source) == rank_sources_.end()) {
      rank_sources_.push_back(source);
    }
    for (size_t i = segment_start_; i < set_.collectives.size(); ++i) {
      CollectiveMeasurement& m = set_.collectives[i];
      m.ranks = ranks;
      m.nodes = nodes;
      m.gpus_per_node = per_node;
      check_bus_factor(m, row_lines_[i]);
    }
    segment_start_ = set_.collectives.size();
    ranks_.clear();
    hosts_.clear();
    threads_.reset();
    gpus_per_thread_.reset();
  }

  void finish() {
    close_segment();
    const std::string version = nccl_version_.value_or("");
    const std::string short_version = version.substr(0, version.find('+'));
    for (CollectiveMeasurement& m : set_.collectives) {
      m.nccl_version = short_version;
      m.algorithm = algorithm_;
      m.protocol = protocol_;
    }
    Provenance p;
    p.file = name_;
    p.format = std::string(to_string(MeasurementFormat::nccl_tests_log));
    p.gpu_name = join(gpu_names_, "; ");
    std::vector<std::string> versions;
    if (nccl_version_) versions.push_back("NCCL " + *nccl_version_);
    if (tests_version_) versions.push_back("nccl-tests " + *tests_version_);
    p.versions = join(versions, "; ");
    p.notes = fmt::format("{} rows; {}", set_.collectives.size(), join(rank_sources_, "; "));
    set_.provenance.push_back(std::move(p));
  }

  // The printed busbw/algbw ratio must be the op's factor for the rank count; otherwise the op or
  // the rank count was misread (e.g. a wrong op hint) and every derived number would be wrong.
  void check_bus_factor(const CollectiveMeasurement& m, size_t line) const {
    const double factor = *bus_bandwidth_factor(m.op, m.ranks);
    if (m.algbw_GBps < 1.0) return;  // two printed decimals say too little below 1 GB/s
    const double expected = m.algbw_GBps * factor;
    if (std::fabs(m.busbw_GBps - expected) > 0.02 + 0.005 * expected) {
      throw InputError(name_, line_ref(line),
                       fmt::format("expected busbw = algbw x {:.4f} = {:.2f} for {} on {} ranks, "
                                   "got {:.2f}: is the op or the rank count wrong?",
                                   factor, expected, m.op, m.ranks, m.busbw_GBps));
    }
  }

  std::string_view text_;
  const std::string& name_;
  std::optional<std::string> op_hint_;
  MeasurementSet set_;
  std::vector<size_t> row_lines_;  ///< source line of each collective in set_
  size_t segment_start_ = 0;       ///< first row of the current test
  std::vector<std::string> rank_sources_;
  std::optional<Layout> layout_;
  std::vector<bool> group_labels_;
  std::optional<std::string> current_op_, fallback_op_;
  std::optional<long long> threads_, gpus_per_thread_;
  std::set<long long> ranks_;
  std::set<std::string> hosts_;
  std::vector<std::string> gpu_names_;
  std::optional<std::string> nccl_version_, tests_version_;
  std::string algorithm_, protocol_;
};

}  // namespace

MeasurementSet import_nccl_tests_log(std::string_view text, const std::string& name,
                                     std::optional<std::string> op_hint) {
  return LogParser(text, name, std::move(op_hint)).parse();
}

}  // namespace fabricsim::calibration
