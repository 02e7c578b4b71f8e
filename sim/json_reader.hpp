#pragma once
// Strict, located reading of JSON input. Every value carries its file and JSON pointer, so any
// complaint names exactly where it is; objects reject keys nobody asked for. All config readers in
// the project (scenarios, topologies, calibration profiles, cases) are written with these classes.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/input_error.hpp"
#include "sim/units.hpp"

namespace fabricsim::sim {

class ObjectReader;

/// The document a value belongs to: its file name, and ownership of the parsed tree.
struct JsonSource {
  std::string file;
  std::shared_ptr<const nlohmann::json> document;
};

/// A JSON value plus where it came from. Keeps its document alive.
class JsonValue {
 public:
  JsonValue(const nlohmann::json& value, std::shared_ptr<const JsonSource> source,
            std::string pointer);

  const std::string& file() const { return source_->file; }
  const std::string& pointer() const { return pointer_; }
  const nlohmann::json& raw() const { return *value_; }
  bool is_null() const { return value_->is_null(); }

  /// Throws InputError at this value's location: "expected <expectation>, got <value>".
  [[noreturn]] void fail(std::string_view expectation) const;
  /// Throws InputError at this value's location with a free-form message.
  [[noreturn]] void fail_message(std::string_view message) const;

  std::string as_string() const;
  bool as_bool() const;
  double as_number() const;
  double as_positive_number() const;
  double as_fraction() const;  ///< a number in [0, 1]
  int64_t as_int() const;
  int64_t as_positive_int() const;
  int64_t as_non_negative_int() const;
  /// The same, for values held in an `int` (counts, sizes of a plan): anything of 2^31 or more is
  /// an error, never truncated.
  int as_positive_int32() const;
  int as_non_negative_int32() const;
  /// One of `choices`, else an error listing them.
  std::string as_enum(const std::vector<std::string>& choices) const;

  // Quantities are written as strings with units ("400 Gbps"); zero or negative values are
  // rejected because no physical rate, size or time in a config may be zero.
  Time as_time() const;
  Time as_time_or_zero() const;
  Bytes as_bytes() const;
  Bandwidth as_bandwidth() const;
  FlopRate as_flop_rate() const;

  ObjectReader as_object() const;
  std::vector<JsonValue> as_array() const;
  JsonValue at(size_t index) const;
  /// A member or element of this value, located at `pointer`.
  JsonValue child(const nlohmann::json& value, std::string pointer) const {
    return JsonValue(value, source_, std::move(pointer));
  }

 private:
  const nlohmann::json* value_;
  std::shared_ptr<const JsonSource> source_;
  std::string pointer_;
};

/// Reads the members of one JSON object. Call finish() once all known keys have been read: any
/// remaining key is reported as unknown, with the list of accepted keys.
class ObjectReader {
 public:
  explicit ObjectReader(const JsonValue& object);

  const JsonValue& self() const { return self_; }
  bool has(std::string_view key) const;  ///< present and not null
  /// The member `key`; missing (or null) is an error.
  JsonValue required(std::string_view key);
  /// The member `key`, or nullopt when absent or null.
  std::optional<JsonValue> optional(std::string_view key);
  /// Marks a key as known without reading it (e.g. "comment").
  void ignore(std::string_view key);
  /// Every key of the object, in document order.
  std::vector<std::string> keys() const;

  void finish() const;

 private:
  JsonValue self_;
  std::set<std::string, std::less<>> known_;
};

/// A parsed JSON document that owns its data.
class JsonDocument {
 public:
  JsonDocument(nlohmann::json value, std::string file);
  JsonValue root() const;
  const std::string& file() const { return source_->file; }

 private:
  std::shared_ptr<const JsonSource> source_;
};

/// Deepest nesting of arrays and objects any JSON input may have (docs/formats.md). Checked while
/// parsing, so nothing recursive ever touches a deeper document.
inline constexpr size_t kMaxJsonDepth = 64;

/// Reads and parses a JSON file; unreadable files and malformed JSON throw InputError with the
/// line and column of the problem; numbers beyond a double's range, duplicate keys and nesting
/// deeper than kMaxJsonDepth throw with the JSON pointer of the value.
JsonDocument load_json_file(const std::string& path);
/// Parses JSON text; `name` is used in error messages.
JsonDocument parse_json_text(std::string_view text, const std::string& name);
/// A command-line value (`--set /pointer=text`): the parsed JSON, or nullopt when `text` is not
/// JSON (a bare word, taken as a string by the caller). JSON that breaks the limits above still
/// throws, located at `where` and `pointer`.
std::optional<nlohmann::json> parse_json_value(std::string_view text, const std::string& where,
                                               const std::string& pointer);
/// doc[pointer] = value for a command-line assignment; a malformed pointer, a path through a
/// scalar or an array index beyond the end is an InputError at `where` and `pointer`.
void set_at_pointer(nlohmann::json& doc, const std::string& pointer, nlohmann::json value,
                    const std::string& where);

/// "/a/b" + "c" -> "/a/b/c", escaping '~' and '/' as RFC 6901 requires.
std::string json_pointer_child(const std::string& parent, std::string_view key);
/// Short rendering of a value for error messages.
std::string json_preview(const nlohmann::json& value);

}  // namespace fabricsim::sim
