// Reader for simple GEMM tables: a header naming the columns (m, n, k, dtype, tflops, optional
// batch; any order), one GEMM per line, "#" comment lines and blank lines allowed.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "calibration/importers.hpp"
#include "calibration/text_fields.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::calibration {

namespace {

using sim::InputError;

constexpr std::array<std::string_view, 6> kColumns = {"m", "n", "k", "batch", "dtype", "tflops"};
constexpr std::array<std::string_view, 5> kRequired = {"m", "n", "k", "dtype", "tflops"};

std::string line_ref(size_t line) {
  return fmt::format("line {}", line);
}

}  // namespace

MeasurementSet import_gemm_csv(std::string_view text, const std::string& name) {
  MeasurementSet set;
  std::map<std::string_view, size_t> column;  // name -> index
  std::vector<std::string_view> header;
  const std::vector<std::string_view> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t number = i + 1;
    const std::string_view line = trim(lines[i]);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> fields = split_fields(line, ',');
    if (header.empty()) {
      header = fields;
      for (size_t c = 0; c < fields.size(); ++c) {
        if (std::find(kColumns.begin(), kColumns.end(), fields[c]) == kColumns.end()) {
          throw InputError(name, line_ref(number),
                           fmt::format("expected a header of columns m, n, k, dtype, tflops and "
                                       "optionally batch, got column '{}'",
                                       fields[c]));
        }
        if (!column.emplace(fields[c], c).second) {
          throw InputError(name, line_ref(number),
                           fmt::format("expected each column once, got '{}' twice", fields[c]));
        }
      }
      for (std::string_view required : kRequired) {
        if (column.count(required) == 0) {
          throw InputError(name, line_ref(number),
                           fmt::format("expected a header with columns m, n, k, dtype, tflops, "
                                       "got no '{}' column",
                                       required));
        }
      }
      continue;
    }
    if (fields.size() != header.size()) {
      throw InputError(
          name, line_ref(number),
          fmt::format("expected {} comma-separated fields, got {}", header.size(), fields.size()));
    }
    const auto integer = [&](std::string_view key) {
      const std::string_view field = fields[column.at(key)];
      const auto value = parse_integer(field);
      if (!value || *value <= 0) {
        throw InputError(
            name, line_ref(number),
            fmt::format("expected a positive integer in column '{}', got '{}'", key, field));
      }
      return *value;
    };
    GemmMeasurement g;
    g.m = integer("m");
    g.n = integer("n");
    g.k = integer("k");
    g.batch = column.count("batch") != 0 ? integer("batch") : 1;
    const std::string dtype(fields[column.at("dtype")]);
    const auto& dtypes = gemm_dtypes();
    if (std::find(dtypes.begin(), dtypes.end(), dtype) == dtypes.end()) {
      throw InputError(name, line_ref(number),
                       fmt::format("expected a dtype among {} in column 'dtype', got '{}'",
                                   join(dtypes, ", "), dtype));
    }
    g.dtype = dtype;
    const std::string_view rate = fields[column.at("tflops")];
    const auto tflops = parse_number(rate);
    if (!tflops || *tflops <= 0) {
      throw InputError(
          name, line_ref(number),
          fmt::format("expected a positive number in column 'tflops', got '{}'", rate));
    }
    g.tflops = *tflops;
    g.source = fmt::format("{}:{}", name, number);
    set.gemms.push_back(std::move(g));
  }
  if (header.empty()) {
    throw InputError(name, "", "expected a header line 'm,n,k,dtype,tflops', found no content");
  }
  if (set.gemms.empty()) {
    throw InputError(name, "", "expected GEMM rows after the header, found none");
  }
  Provenance p;
  p.file = name;
  p.format = std::string(to_string(MeasurementFormat::gemm_csv));
  p.notes = fmt::format("{} rows", set.gemms.size());
  set.provenance.push_back(std::move(p));
  return set;
}

}  // namespace fabricsim::calibration
