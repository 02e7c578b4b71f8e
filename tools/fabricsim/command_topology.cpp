#include <fmt/format.h>

#include <ostream>

#include "sim/json_reader.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"
#include "tools/fabricsim/scenario_options.hpp"
#include "topologies/describe.hpp"
#include "topologies/topology_json.hpp"

namespace fabricsim::tools {
namespace {

class TopologyCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand("topology", "Build a system's topology and describe it");
    app_->add_option("--system", system_, "System preset")->default_val("dgx-h100");
    app_->add_option("--gpus", gpus_, "Number of GPUs")->default_val(8);
    options_.add_set_to(*app_);
    app_->add_option("--graph", graph_file_, "Describe a graph exported with --json instead");
    app_->add_flag("--json", graph_json_, "Export the whole graph as JSON");
    app_->add_flag("--summary-json", summary_json_, "Print the description as JSON");
  }

  int run(std::ostream& out, std::ostream&) override {
    std::shared_ptr<const topologies::Topology> topology;
    if (!graph_file_.empty()) {
      if (options_.has_sets()) {
        throw sim::InputError(kCommandLine, "--set",
                              "a graph from --graph is described as exported; --set changes "
                              "presets");
      }
      const sim::JsonDocument doc = sim::load_json_file(graph_file_);
      topology = std::make_shared<topologies::Topology>(topologies::topology_from_json(doc.root()));
    } else {
      topology = options_.system(system_, gpus_).topology;
    }
    if (graph_json_) {
      out << topologies::topology_to_json(*topology).dump(1) << "\n";
      return 0;
    }
    const topologies::TopologySummary summary = topologies::summarize(*topology);
    const ScenarioRecord record = graph_file_.empty() ? options_.system_record(system_, gpus_)
                                                      : ScenarioRecord{"graph " + graph_file_, {}};
    if (summary_json_) {
      nlohmann::json j = topologies::summary_to_json(summary);
      add_record(j, record);
      out << j.dump(2) << "\n";
    } else {
      out << topologies::summary_to_text(summary) << record_text(record) << "\n";
    }
    return 0;
  }

 private:
  std::string system_;
  int gpus_ = 8;
  ScenarioOptions options_;
  std::string graph_file_;
  bool graph_json_ = false;
  bool summary_json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_topology_command() {
  return std::make_unique<TopologyCommand>();
}

}  // namespace fabricsim::tools
