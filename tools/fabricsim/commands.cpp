#include "tools/fabricsim/commands.hpp"

namespace fabricsim::tools {

std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> out;
  out.push_back(make_topology_command());
  out.push_back(make_collective_command());
  out.push_back(make_validate_command());
  out.push_back(make_calibrate_command());
  out.push_back(make_run_command());
  out.push_back(make_scale_command());
  out.push_back(make_plan_command());
  out.push_back(make_size_command());
  out.push_back(make_compare_command());
  out.push_back(make_plot_command());
  out.push_back(make_goodput_command());
  out.push_back(make_sweep_command());
  out.push_back(make_stragglers_command());
  out.push_back(make_docs_command());
  return out;
}

}  // namespace fabricsim::tools
