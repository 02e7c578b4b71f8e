#include "sim/json_reader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
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
  // Invalid UTF-8 can reach here from a command-line string; replace it rather than throw.
  std::string s = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
  if (value_->is_number_unsigned()) {
    if (value_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("an integer below 2^63");
    }
    return static_cast<int64_t>(value_->get<uint64_t>());
  }
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

int JsonValue::as_positive_int32() const {
  const int64_t v = as_positive_int();
  if (v > std::numeric_limits<int32_t>::max()) fail("a positive integer below 2^31");
  return static_cast<int>(v);
}

int JsonValue::as_non_negative_int32() const {
  const int64_t v = as_non_negative_int();
  if (v > std::numeric_limits<int32_t>::max()) fail("a non-negative integer below 2^31");
  return static_cast<int>(v);
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

namespace {

// "line L, column C" of byte offset `byte` (1-based lines and columns).
std::string line_column(std::string_view text, size_t byte) {
  size_t line = 1;
  size_t column = 1;
  const size_t limit = std::min(byte, text.size());
  for (size_t i = 0; i < limit; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
}

// nlohmann's DOM builder plus what a located error needs: the JSON pointer of the value being read
// and the nesting depth, checked as each container opens so that no recursive code (copy, dump,
// destructor) ever sees a document deeper than kMaxJsonDepth. nlohmann's parser itself is
// iterative. Duplicate keys are rejected too: the DOM would keep only the last one silently.
class LocatedSax {
 public:
  using Json = nlohmann::json;

  explicit LocatedSax(Json& root) : dom_(root, false) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    return value() && dom_.number_float(v, s);
  }
  bool string(Json::string_t& v) { return value() && dom_.string(v); }
  bool binary(Json::binary_t& v) { return value() && dom_.binary(v); }
  bool start_object(std::size_t n) { return open(false) && dom_.start_object(n); }
  bool start_array(std::size_t n) { return open(true) && dom_.start_array(n); }
  bool end_object() { return close() && dom_.end_object(); }
  bool end_array() { return close() && dom_.end_array(); }
  bool key(Json::string_t& k) {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {
      failure_ = Failure{json_pointer_child(pointer(), k), std::nullopt,
                         fmt::format("duplicate key '{}'", k), false};
      return false;
    }
    f.key = k;
    return dom_.key(k);
  }
  template <class Exception>
  bool parse_error(std::size_t byte, const std::string& token, const Exception& e) {
    if (e.id == 406) {  // number overflow: say which value, not only where the lexer stopped
      failure_ = Failure{value_pointer(), byte,
                         fmt::format("expected a number within the range of a double, got '{}'",
                                     token.substr(0, 40)),
                         false};
    } else {
      std::string what = e.what();
      const auto pos = what.find("parse error");
      if (pos != std::string::npos) what = what.substr(pos);
      failure_ = Failure{"", byte, fmt::format("malformed JSON ({})", what), true};
    }
    return false;
  }

  struct Failure {
    std::string pointer;
    std::optional<size_t> byte;
    std::string message;
    bool syntax;  // not JSON at all, as opposed to JSON beyond a limit
  };
  const std::optional<Failure>& failure() const { return failure_; }

 private:
  struct Frame {
    bool array = false;
    size_t index = 0;  // of the next element (arrays)
    std::string key;   // of the current member (objects)
    std::set<std::string, std::less<>> keys;
  };

  // The pointer of the container being filled.
  std::string pointer() const {
    std::string out;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      out = frames_[i].array ? out + "/" + std::to_string(frames_[i].index - 1)
                             : json_pointer_child(out, frames_[i].key);
    }
    return out;
  }
  // The pointer of the value being read now.
  std::string value_pointer() const {
    if (frames_.empty()) return "";
    const Frame& f = frames_.back();
    return f.array ? pointer() + "/" + std::to_string(f.index)
                   : json_pointer_child(pointer(), f.key);
  }
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool open(bool array) {
    value();
    if (frames_.size() >= kMaxJsonDepth) {
      frames_.push_back(Frame{array, 0, {}, {}});
      failure_ = Failure{pointer(), std::nullopt,
                         fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth), false};
      return false;
    }
    frames_.push_back(Frame{array, 0, {}, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<Frame> frames_;
  std::optional<Failure> failure_;
};

struct Parsed {
  nlohmann::json root;
  std::optional<LocatedSax::Failure> failure;
};

Parsed parse_located(std::string_view text) {
  Parsed out;
  // nlohmann takes a NUL byte for the end of the input and would ignore whatever follows it.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    out.failure = LocatedSax::Failure{"", nul + 1, "malformed JSON (a NUL byte)", true};
    return out;
  }
  LocatedSax sax(out.root);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &sax)) {
    out.failure = sax.failure();
    if (!out.failure) out.failure = LocatedSax::Failure{"", std::nullopt, "malformed JSON", true};
  }
  return out;
}

}  // namespace

JsonDocument parse_json_text(std::string_view text, const std::string& name) {
  Parsed p = parse_located(text);
  if (const auto& f = p.failure) {
    const std::string at = f->byte ? line_column(text, *f->byte == 0 ? 0 : *f->byte - 1) : "";
    if (f->syntax) throw InputError(name, at, f->message);
    throw InputError(name, f->pointer.empty() ? "/" : f->pointer,
                     at.empty() ? f->message : fmt::format("{} ({})", f->message, at));
  }
  return JsonDocument(std::move(p.root), name);
}

std::optional<nlohmann::json> parse_json_value(std::string_view text, const std::string& where,
                                               const std::string& pointer) {
  Parsed p = parse_located(text);
  if (!p.failure) return std::move(p.root);
  if (p.failure->syntax) return std::nullopt;
  throw InputError(where, pointer + p.failure->pointer, p.failure->message);
}

namespace {
// The reference tokens of a pointer nlohmann has already validated, unescaped (RFC 6901).
std::vector<std::string> pointer_tokens(const std::string& pointer) {
  std::vector<std::string> out;
  for (size_t start = 1; start <= pointer.size();) {
    size_t end = pointer.find('/', start);
    if (end == std::string::npos) end = pointer.size();
    std::string token;
    for (size_t i = start; i < end; ++i) {
      if (pointer[i] == '~' && i + 1 < end) {
        token.push_back(pointer[i + 1] == '1' ? '/' : '~');
        ++i;
      } else {
        token.push_back(pointer[i]);
      }
    }
    out.push_back(std::move(token));
    start = end + 1;
  }
  return out;
}
}  // namespace

void set_at_pointer(nlohmann::json& doc, const std::string& pointer, nlohmann::json value,
                    const std::string& where) {
  try {
    const nlohmann::json::json_pointer ptr(pointer);
    // nlohmann grows an array to any index it is given, and makes a missing value addressed by a
    // number such an array: allow an index at most one past the end ("-" appends).
    const nlohmann::json* node = &doc;  // nullptr once past what the document holds
    std::string walked;
    for (const std::string& token : pointer_tokens(pointer)) {
      const bool digits =
          !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
      const bool array = node != nullptr && node->is_array();
      if (array || ((node == nullptr || node->is_null()) && digits)) {
        const size_t size = array ? node->size() : 0;
        if (token != "-" && (!digits || token.size() > 9 || std::stoul(token) > size)) {
          throw InputError(where, pointer,
                           fmt::format("expected an index between 0 and {} into the array at '{}'",
                                       size, walked.empty() ? "/" : walked));
        }
        node = array && token != "-" && std::stoul(token) < size ? &(*node)[std::stoul(token)]
                                                                 : nullptr;
      } else if (node != nullptr && node->is_object() && node->contains(token)) {
        node = &(*node)[token];
      } else {
        node = nullptr;
      }
      walked = json_pointer_child(walked, token);
    }
    doc[ptr] = std::move(value);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, pointer, fmt::format("cannot set this field ({})", e.what()));
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
