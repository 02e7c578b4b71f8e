#include "sim/json_reader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/unit_parse.hpp"

namespace fabricsim::sim {

std::string json_pointer_child(const std::string& parent, std::string_view key) {
  std::string out = parent;
  out.push_back('/');
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string json_preview(const nlohmann::json& value) {
  std::string s = value.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

JsonValue::JsonValue(const nlohmann::json& value, std::shared_ptr<const JsonSource> source,
                     std::string pointer)
    : value_(&value), source_(std::move(source)), pointer_(std::move(pointer)) {}

void JsonValue::fail(std::string_view expectation) const {
  throw InputError(source_->file, pointer_.empty() ? "/" : pointer_,
                   fmt::format("expected {}, got {}", expectation, json_preview(*value_)));
}

void JsonValue::fail_message(std::string_view message) const {
  throw InputError(source_->file, pointer_.empty() ? "/" : pointer_, std::string(message));
}

std::string JsonValue::as_string() const {
  if (!value_->is_string()) fail("a string");
  return value_->get<std::string>();
}

bool JsonValue::as_bool() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

double JsonValue::as_number() const {
  if (!value_->is_number()) fail("a number");
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("a finite number");
  return v;
}

double JsonValue::as_positive_number() const {
  const double v = as_number();
  if (!(v > 0)) fail("a positive number");
  return v;
}

double JsonValue::as_fraction() const {
  const double v = as_number();
  if (v < 0 || v > 1) fail("a number between 0 and 1");
  return v;
}

int64_t JsonValue::as_int() const {
  if (value_->is_number_integer()) return value_->get<int64_t>();
  if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15) {
      return static_cast<int64_t>(d);
    }
  }
  fail("an integer");
}

int64_t JsonValue::as_positive_int() const {
  if (!value_->is_number()) fail("a positive integer");
  const int64_t v = as_int();
  if (v <= 0) fail("a positive integer");
  return v;
}

int64_t JsonValue::as_non_negative_int() const {
  if (!value_->is_number()) fail("a non-negative integer");
  const int64_t v = as_int();
  if (v < 0) fail("a non-negative integer");
  return v;
}

std::string JsonValue::as_enum(const std::vector<std::string>& choices) const {
  std::string list;
  for (const auto& c : choices)
    list += (list.empty() ? "" : ", ") + c;
  if (!value_->is_string()) fail(fmt::format("one of {}", list));
  std::string v = value_->get<std::string>();
  for (const auto& c : choices) {
    if (c == v) return v;
  }
  fail(fmt::format("one of {}", list));
}

namespace {
template <class F>
auto parse_quantity(const JsonValue& v, F parse, std::string_view what) {
  if (!v.raw().is_string()) v.fail(fmt::format("{} written as a string with its unit", what));
  try {
    return parse(v.raw().get<std::string>());
  } catch (const UnitError& e) {
    v.fail_message(e.what());
  }
}
}  // namespace

Time JsonValue::as_time() const {
  const Time t = parse_quantity(*this, parse_time, "a time such as \"1.5 us\"");
  if (t <= Time::zero()) fail("a positive time");
  return t;
}

Time JsonValue::as_time_or_zero() const {
  return parse_quantity(*this, parse_time, "a time such as \"1.5 us\"");
}

Bytes JsonValue::as_bytes() const {
  if (value_->is_number()) {
    const double v = as_number();
    if (!(v > 0)) fail("a positive size");
    return Bytes::of(v);
  }
  const Bytes b = parse_quantity(*this, parse_bytes, "a size such as \"64 MiB\"");
  if (!(b.count() > 0)) fail("a positive size");
  return b;
}

Bandwidth JsonValue::as_bandwidth() const {
  const Bandwidth bw = parse_quantity(*this, parse_bandwidth, "a bandwidth such as \"400 Gbps\"");
  if (!(bw.bytes_per_s() > 0)) fail("a positive bandwidth");
  return bw;
}

FlopRate JsonValue::as_flop_rate() const {
  const FlopRate r = parse_quantity(*this, parse_flop_rate, "a FLOP rate such as \"989 TFLOPS\"");
  if (!(r.per_s() > 0)) fail("a positive FLOP rate");
  return r;
}

ObjectReader JsonValue::as_object() const {
  return ObjectReader(*this);
}

std::vector<JsonValue> JsonValue::as_array() const {
  if (!value_->is_array()) fail("an array");
  std::vector<JsonValue> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i)
    out.push_back(at(i));
  return out;
}

JsonValue JsonValue::at(size_t index) const {
  if (!value_->is_array() || index >= value_->size()) fail("an array with enough elements");
  return child((*value_)[index], pointer_ + "/" + std::to_string(index));
}

ObjectReader::ObjectReader(const JsonValue& object) : self_(object) {
  if (!object.raw().is_object()) object.fail("an object");
}

bool ObjectReader::has(std::string_view key) const {
  const auto it = self_.raw().find(key);
  return it != self_.raw().end() && !it->is_null();
}

JsonValue ObjectReader::required(std::string_view key) {
  known_.emplace(key);
  const auto it = self_.raw().find(key);
  if (it == self_.raw().end() || it->is_null()) {
    throw InputError(self_.file(), json_pointer_child(self_.pointer(), key),
                     "missing required field");
  }
  return self_.child(*it, json_pointer_child(self_.pointer(), key));
}

std::optional<JsonValue> ObjectReader::optional(std::string_view key) {
  known_.emplace(key);
  const auto it = self_.raw().find(key);
  if (it == self_.raw().end() || it->is_null()) return std::nullopt;
  return self_.child(*it, json_pointer_child(self_.pointer(), key));
}

void ObjectReader::ignore(std::string_view key) {
  known_.emplace(key);
}

std::vector<std::string> ObjectReader::keys() const {
  std::vector<std::string> out;
  for (const auto& item : self_.raw().items())
    out.push_back(item.key());
  return out;
}

void ObjectReader::finish() const {
  for (const auto& item : self_.raw().items()) {
    if (known_.count(item.key()) != 0) continue;
    std::string list;
    for (const auto& k : known_)
      list += (list.empty() ? "" : ", ") + k;
    throw InputError(self_.file(), json_pointer_child(self_.pointer(), item.key()),
                     fmt::format("unknown key '{}' (expected one of: {})", item.key(), list));
  }
}

JsonDocument::JsonDocument(nlohmann::json value, std::string file)
    : source_(std::make_shared<const JsonSource>(
          JsonSource{std::move(file), std::make_shared<const nlohmann::json>(std::move(value))})) {}

JsonValue JsonDocument::root() const {
  return JsonValue(*source_->document, source_, "");
}

JsonDocument parse_json_text(std::string_view text, const std::string& name) {
  try {
    return JsonDocument(nlohmann::json::parse(text.begin(), text.end()), name);
  } catch (const nlohmann::json::parse_error& e) {
    size_t line = 1;
    size_t column = 1;
    const size_t limit = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
    for (size_t i = 0; i < limit; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    const auto pos = what.find("parse error");
    if (pos != std::string::npos) what = what.substr(pos);
    throw InputError(name, fmt::format("line {}, column {}", line, column),
                     fmt::format("malformed JSON ({})", what));
  }
}

JsonDocument load_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path);
}

}  // namespace fabricsim::sim
