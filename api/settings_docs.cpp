#include "api/settings_docs.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/scenario_settings.hpp"
#include "sim/input_error.hpp"

namespace fabricsim::api {
namespace {

constexpr std::string_view kBegin = "<!-- settings table ";
constexpr std::string_view kEnd = "<!-- end settings table -->";

}  // namespace

std::vector<std::string> settings_sections() {
  std::vector<std::string> out;
  for (const Setting& s : scenario_settings()) {
    const std::string section(s.section());
    if (std::find(out.begin(), out.end(), section) == out.end()) out.push_back(section);
  }
  return out;
}

std::string settings_table(std::string_view section) {
  std::vector<const Setting*> rows;
  for (const Setting& s : scenario_settings()) {
    if (s.section() == section) rows.push_back(&s);
  }
  const bool flags =
      std::any_of(rows.begin(), rows.end(), [](const Setting* s) { return !s->flag.empty(); });
  std::string out = flags ? "| key | type | default | flag | meaning |\n|---|---|---|---|---|\n"
                          : "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const Setting* s : rows) {
    out += fmt::format("| `{}` | {} | {} |", s->key(), s->type, s->fallback);
    if (flags) out += s->flag.empty() ? " |" : fmt::format(" `{}` |", s->flag);
    out += fmt::format(" {} |\n", s->meaning);
  }
  return out;
}

std::string with_settings_tables(const std::string& markdown, const std::string& file) {
  const std::vector<std::string> sections = settings_sections();
  std::string out;
  size_t at = 0;
  for (size_t begin; (begin = markdown.find(kBegin, at)) != std::string::npos;) {
    const size_t close = markdown.find("-->", begin);
    const size_t end = markdown.find(kEnd, begin);
    if (close == std::string::npos || end == std::string::npos) {
      throw sim::InputError(file, "settings table",
                            fmt::format("a '{}' marker without '{}'", kBegin, kEnd));
    }
    std::string section = markdown.substr(begin + kBegin.size(), close - begin - kBegin.size());
    section.erase(section.find_last_not_of(' ') + 1);
    if (section == "/") section.clear();
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
      throw sim::InputError(file, "settings table",
                            fmt::format("no settings section '{}'", section));
    }
    const size_t body = markdown.find('\n', close) + 1;
    out += markdown.substr(at, body - at) + settings_table(section);
    at = end;
  }
  return out + markdown.substr(at);
}

}  // namespace fabricsim::api
