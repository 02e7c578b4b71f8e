// Feeds arbitrary bytes to the JSON readers of user input. A reader may reject the input only with
// sim::InputError (or a SpecError for an impossible topology); anything else is a bug: a crash,
// a sanitizer report, a hang, or another exception escaping.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/input_error.hpp"
#include "sim/json_reader.hpp"
#include "topologies/spec_error.hpp"
#include "topologies/topology_json.hpp"

using namespace fabricsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const sim::JsonDocument doc = sim::parse_json_text(text, "fuzz.json");
    try {
      topologies::topology_from_json(doc.root());
    } catch (const sim::InputError&) {
    } catch (const topologies::SpecError&) {
    }
  } catch (const sim::InputError&) {
  }
  return 0;
}
