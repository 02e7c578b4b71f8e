#include <fmt/format.h>

#include <fstream>
#include <ostream>
#include <sstream>

#include "api/settings_docs.hpp"
#include "sim/file_write.hpp"
#include "sim/input_error.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"

namespace fabricsim::tools {
namespace {

/// `fabricsim docs settings`: the documentation generated from the settings table.
class DocsCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("docs", "Print documentation generated from the code");
    app_->require_subcommand(1);
    settings_ = app_->add_subcommand(
        "settings", "The scenario settings tables of docs/formats.md, with their markers");
    settings_->add_option("--update", update_,
                          "Rewrite the marked settings tables of this Markdown file in place "
                          "(docs/formats.md)");
  }

  int run(std::ostream& out, std::ostream&) override {
    if (update_.empty()) {
      for (const std::string& section : api::settings_sections()) {
        out << fmt::format("<!-- settings table {} -->\n{}<!-- end settings table -->\n\n",
                           section.empty() ? "/" : section, api::settings_table(section));
      }
      return 0;
    }
    std::ifstream in(update_);
    if (!in) throw sim::InputError(kCommandLine, "--update", "cannot read " + update_);
    std::stringstream text;
    text << in.rdbuf();
    sim::write_file(update_, api::with_settings_tables(text.str(), update_));
    return 0;
  }

 private:
  CLI::App* settings_ = nullptr;
  std::string update_;
};

}  // namespace

std::unique_ptr<Command> make_docs_command() {
  return std::make_unique<DocsCommand>();
}

}  // namespace fabricsim::tools
