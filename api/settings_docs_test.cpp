#include "api/settings_docs.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "api/scenario_settings.hpp"
#include "sim/input_error.hpp"
#include "tests/source_file.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

std::string doc(const std::string& name) {
  std::ifstream in(testing::source_file("docs", name));
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("docs/formats.md and docs/cli.md hold the tables the settings table generates",
          "[settings][docs]") {
  for (const std::string name : {"formats.md", "cli.md"}) {
    INFO(name);
    const std::string committed = doc(name);
    if (with_settings_tables(committed, "docs/" + name) != committed) {
      FAIL("docs/" << name
                   << " differs from api/scenario_settings.cpp; regenerate it with "
                      "`build/tools/fabricsim/fabricsim docs settings --update docs/"
                   << name << "`");
    }
  }
  const std::string formats = doc("formats.md");
  for (const std::string& section : settings_sections()) {
    INFO("section '" << section << "'");
    CHECK_THAT(formats, Catch::Contains("<!-- settings table " +
                                        (section.empty() ? std::string("/") : section) + " -->\n"));
  }
  CHECK_THAT(doc("cli.md"), Catch::Contains("<!-- settings table flags -->\n"));
}

TEST_CASE("a settings table has one row per setting of its section", "[settings][docs]") {
  const std::string table = settings_table("/parallelism");
  CHECK_THAT(table, Catch::StartsWith("| key | type | default | flag | meaning |\n"));
  CHECK_THAT(table,
             Catch::Contains("| `tp` | positive integer | 1 | `--tp` | tensor parallel size |\n"));
  size_t rows = 0;
  for (const Setting& s : scenario_settings())
    rows += s.section() == "/parallelism";
  CHECK(static_cast<size_t>(std::count(table.begin(), table.end(), '\n')) == rows + 2);
  // No flag in the section: no flag column.
  CHECK_THAT(settings_table("/system/nvlink"),
             Catch::StartsWith("| key | type | default | meaning |\n"));
}

TEST_CASE("stale or unknown settings markers are replaced or rejected",
          "[settings][docs][bad-input]") {
  const std::string stale =
      "intro\n<!-- settings table /simulation -->\n| old |\n<!-- end settings table -->\nafter\n";
  CHECK(with_settings_tables(stale, "x.md") == "intro\n<!-- settings table /simulation -->\n" +
                                                   settings_table("/simulation") +
                                                   "<!-- end settings table -->\nafter\n");
  for (const std::string bad : {"<!-- settings table /nothing -->\n<!-- end settings table -->\n",
                                "<!-- settings table /training -->\n| open |\n"}) {
    INFO(bad);
    CHECK_THROWS_AS(with_settings_tables(bad, "x.md"), sim::InputError);
  }
}
