#include "calibration/importers.hpp"

#include <fstream>
#include <sstream>

#include "calibration/text_fields.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::calibration {

std::string_view to_string(MeasurementFormat format) {
  switch (format) {
    case MeasurementFormat::nccl_tests_log:
      return "nccl_tests_log";
    case MeasurementFormat::nccl_bench_json:
      return "nccl_bench_json";
    case MeasurementFormat::gemm_bench_json:
      return "gemm_bench_json";
    case MeasurementFormat::gemm_csv:
      return "gemm_csv";
    case MeasurementFormat::cases_json:
      return "cases_json";
  }
  return "?";
}

namespace {

constexpr std::string_view kUnknown =
    "unrecognised measurement file: expected nccl-tests output, a fabricsim-nccl-bench or "
    "fabricsim-gemm-bench JSON file, a GEMM CSV with header m,n,k,dtype,tflops, or a case file "
    "(a JSON array)";

std::string_view skip_bom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

MeasurementFormat json_format(const sim::JsonValue& root) {
  if (root.raw().is_array()) return MeasurementFormat::cases_json;
  if (!root.raw().is_object()) {
    root.fail("a JSON object with a \"format\" key, or an array of cases");
  }
  const auto format = root.raw().find("format");
  if (format == root.raw().end()) {
    throw sim::InputError(root.file(), "/format",
                          "missing key: a measurement JSON object names its \"format\" "
                          "(fabricsim-nccl-bench or fabricsim-gemm-bench)");
  }
  const sim::JsonValue value = root.child(*format, "/format");
  const std::string name = value.as_enum({"fabricsim-nccl-bench", "fabricsim-gemm-bench"});
  return name == "fabricsim-nccl-bench" ? MeasurementFormat::nccl_bench_json
                                        : MeasurementFormat::gemm_bench_json;
}

bool is_json(std::string_view content) {
  const std::string_view text = trim(skip_bom(content));
  return !text.empty() && (text.front() == '{' || text.front() == '[');
}

}  // namespace

MeasurementFormat detect_format(const std::string& path, std::string_view content) {
  if (is_json(content)) {
    const std::string_view text = trim(skip_bom(content));
    if (text.front() == '[') return MeasurementFormat::cases_json;
    return json_format(sim::parse_json_text(text, path).root());
  }
  // nccl-tests prints "# nThread ..." and a "#  size  count ... busbw" header; a CSV's "#" lines
  // are only comments, so any nccl-tests marker decides first.
  std::optional<std::string_view> first_data_line;
  for (std::string_view line : split_lines(content)) {
    const std::string_view t = trim(line);
    if (t.empty()) continue;
    if (t.front() != '#') {
      if (!first_data_line) first_data_line = t;
      continue;
    }
    const std::vector<std::string_view> tokens = split_whitespace(t.substr(1));
    const auto has = [&](std::string_view word) {
      return std::find(tokens.begin(), tokens.end(), word) != tokens.end();
    };
    if ((!tokens.empty() && tokens[0] == "nThread") || (has("size") && has("busbw")) ||
        t.find("Collective test starting:") != std::string_view::npos) {
      return MeasurementFormat::nccl_tests_log;
    }
  }
  if (first_data_line) {
    const std::vector<std::string_view> fields = split_fields(*first_data_line, ',');
    const auto has = [&](std::string_view word) {
      return std::find(fields.begin(), fields.end(), word) != fields.end();
    };
    if (has("m") && has("n") && has("k")) return MeasurementFormat::gemm_csv;
  }
  throw sim::InputError(path, "", std::string(kUnknown));
}

MeasurementSet import_measurements(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sim::InputError(path, "", "cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string content = buffer.str();
  if (is_json(content)) {
    // Parse once: the document both decides the format and is imported.
    const sim::JsonDocument doc = sim::parse_json_text(trim(skip_bom(content)), path);
    switch (json_format(doc.root())) {
      case MeasurementFormat::nccl_bench_json:
        return import_nccl_bench_json(doc.root());
      case MeasurementFormat::gemm_bench_json:
        return import_gemm_bench_json(doc.root());
      default: {
        MeasurementSet set = measurements_from_cases(read_cases(doc.root()));
        for (Provenance& p : set.provenance) {
          p.file = path;
        }
        return set;
      }
    }
  }
  switch (detect_format(path, content)) {
    case MeasurementFormat::nccl_tests_log:
      return import_nccl_tests_log(content, path);
    case MeasurementFormat::gemm_csv:
      return import_gemm_csv(content, path);
    default:
      throw sim::InputError(path, "", std::string(kUnknown));
  }
}

}  // namespace fabricsim::calibration
