#include "tools/cuda/gemm_shape.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <stdexcept>

#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::tools::cuda {
namespace {

// Sizes past 2^31 in one dimension are far beyond any GEMM that fits a GPU; the cap keeps every
// product of the byte arithmetic inside 64 bits.
constexpr int64_t kMaxDimension = std::numeric_limits<int32_t>::max();

[[noreturn]] void shape_error(std::string_view text, const std::string& why) {
  throw sim::InputError(
      "<command line>", "--shape",
      fmt::format("expected MxNxK[:dtype[:batch]] such as 8192x8192x8192:bf16, got '{}' ({})", text,
                  why));
}

int64_t parse_dimension(std::string_view part, std::string_view text, const char* name) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value < 1 ||
      value > kMaxDimension) {
    shape_error(text, std::string(name) + " must be a positive integer");
  }
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t pos = text.find(separator); pos != std::string_view::npos;
       pos = text.find(separator, start)) {
    parts.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

int64_t read_dimension(sim::ObjectReader& object, std::string_view key) {
  const sim::JsonValue value = object.required(key);
  const int64_t v = value.as_positive_int();
  if (v > kMaxDimension) value.fail("a positive integer below 2^31");
  return v;
}

}  // namespace

const std::vector<std::string>& gemm_dtype_names() {
  static const std::vector<std::string> names = {"bf16", "fp16", "fp8", "tf32"};
  return names;
}

std::string_view gemm_dtype_name(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBf16:
      return "bf16";
    case GemmDtype::kFp16:
      return "fp16";
    case GemmDtype::kFp8:
      return "fp8";
    case GemmDtype::kTf32:
      return "tf32";
  }
  throw std::invalid_argument("unknown GEMM dtype");
}

GemmDtype parse_gemm_dtype(std::string_view name) {
  if (name == "bf16") return GemmDtype::kBf16;
  if (name == "fp16") return GemmDtype::kFp16;
  if (name == "fp8") return GemmDtype::kFp8;
  if (name == "tf32") return GemmDtype::kTf32;
  throw std::invalid_argument(
      fmt::format("unknown dtype '{}' (expected one of: bf16, fp16, fp8, tf32)", name));
}

uint64_t gemm_input_bytes(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kFp8:
      return 1;
    case GemmDtype::kBf16:
    case GemmDtype::kFp16:
      return 2;
    case GemmDtype::kTf32:
      return 4;
  }
  throw std::invalid_argument("unknown GEMM dtype");
}

uint64_t gemm_output_bytes(GemmDtype dtype) {
  return dtype == GemmDtype::kTf32 ? 4 : 2;
}

int gemm_min_compute_capability(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kFp16:
      return 75;
    case GemmDtype::kBf16:
    case GemmDtype::kTf32:
      return 80;
    case GemmDtype::kFp8:
      return 89;
  }
  throw std::invalid_argument("unknown GEMM dtype");
}

double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch);
}

uint64_t gemm_set_bytes(const GemmShape& s) {
  const auto m = static_cast<uint64_t>(s.m);
  const auto n = static_cast<uint64_t>(s.n);
  const auto k = static_cast<uint64_t>(s.k);
  const auto batch = static_cast<uint64_t>(s.batch);
  return batch * ((m * k + k * n) * gemm_input_bytes(s.dtype) + m * n * gemm_output_bytes(s.dtype));
}

GemmShape parse_shape_arg(std::string_view text) {
  const std::vector<std::string_view> fields = split(text, ':');
  if (fields.size() > 3) shape_error(text, "too many ':' fields");
  const std::vector<std::string_view> dims = split(fields[0], 'x');
  if (dims.size() != 3) shape_error(text, "need three sizes separated by 'x'");
  GemmShape shape;
  shape.m = parse_dimension(dims[0], text, "M");
  shape.n = parse_dimension(dims[1], text, "N");
  shape.k = parse_dimension(dims[2], text, "K");
  if (fields.size() >= 2) {
    try {
      shape.dtype = parse_gemm_dtype(fields[1]);
    } catch (const std::invalid_argument& e) {
      shape_error(text, e.what());
    }
  }
  if (fields.size() == 3) shape.batch = parse_dimension(fields[2], text, "batch");
  return shape;
}

namespace {

std::vector<GemmShape> read_shapes(const sim::JsonDocument& document) {
  sim::ObjectReader root = document.root().as_object();
  root.ignore("comment");
  const sim::JsonValue list = root.required("shapes");
  root.finish();
  std::vector<GemmShape> shapes;
  for (const sim::JsonValue& item : list.as_array()) {
    sim::ObjectReader object = item.as_object();
    GemmShape shape;
    shape.m = read_dimension(object, "m");
    shape.n = read_dimension(object, "n");
    shape.k = read_dimension(object, "k");
    if (object.has("batch")) shape.batch = read_dimension(object, "batch");
    if (const auto dtype = object.optional("dtype")) {
      shape.dtype = parse_gemm_dtype(dtype->as_enum(gemm_dtype_names()));
    }
    // Written by `fabricsim calibrate shapes`: how often a step runs the shape (informative).
    if (const auto count = object.optional("kernels_per_step_per_stage")) count->as_number();
    object.finish();
    shapes.push_back(shape);
  }
  if (shapes.empty()) list.fail("a non-empty list of shapes");
  return shapes;
}

}  // namespace

std::vector<GemmShape> parse_shapes_json(std::string_view text, const std::string& file_name) {
  return read_shapes(sim::parse_json_text(text, file_name));
}

std::vector<GemmShape> load_shapes_file(const std::string& path) {
  return read_shapes(sim::load_json_file(path));
}

}  // namespace fabricsim::tools::cuda
