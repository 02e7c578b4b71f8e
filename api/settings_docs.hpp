#pragma once
// The tables of docs/formats.md that document the scenario settings, generated from the settings
// table (api/scenario_settings). Each generated table in a Markdown file sits between
//   <!-- settings table SECTION -->  and  <!-- end settings table -->
// (SECTION a JSON pointer such as /training, or / for the top level), so that
// `fabricsim docs settings --update docs/formats.md` rewrites them and a test can check that the
// committed file is what the table generates.

#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::api {

/// The sections that have settings, in table order ("" is the top level).
std::vector<std::string> settings_sections();

/// The Markdown table of one section's keys: key, type, default, flag (when any key of the section
/// has one) and meaning.
std::string settings_table(std::string_view section);

/// `markdown` with every marked table regenerated; `file` names it in errors (an unknown section
/// or a marker without its end is a sim::InputError).
std::string with_settings_tables(const std::string& markdown, const std::string& file);

}  // namespace fabricsim::api
