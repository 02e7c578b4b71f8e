#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <ostream>

#include "sim/input_error.hpp"
#include "tools/fabricsim/cli_options.hpp"
#include "tools/fabricsim/commands.hpp"

extern char** environ;

namespace fabricsim::tools {
namespace {

/// Runs tools/plot/fabricsim_plot.py of this source tree with Debian's Python (where
/// python3-matplotlib is installed), without a shell: file names pass through untouched.
class PlotCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app_ = app.add_subcommand(
        "plot",
        "Draw a JSON output of scale, run, plan, compare, sweep or validate as PNG and SVG "
        "(matplotlib)");
    app_->add_option("kind", kind_,
                     "scale, breakdown (run --json), plan, compare, sweep (sweep -o DIR), links "
                     "(run --link-trace) or validate (its scaling points)")
        ->required()
        ->check(
            CLI::IsMember({"scale", "breakdown", "plan", "compare", "sweep", "links", "validate"}));
    app_->add_option("input", input_,
                     "The command's --json (or scale --jsonl) output; for sweep its folder or "
                     "results.jsonl")
        ->required();
    app_->add_option("--x", x_, "sweep: the axis (JSON pointer) across (default: the first)");
    app_->add_option("--y", y_, "sweep: the axis up (default: the next)");
    app_->add_option("--metric", metric_,
                     "sweep: the metric coloured (default tokens_per_s_per_gpu)");
    app_->add_option("-o,--output", output_, "Output prefix: PREFIX.png and PREFIX.svg")
        ->required();
    app_->add_option("--python", python_, "Python interpreter with matplotlib");
  }

  int run(std::ostream& out, std::ostream& err) override {
    const std::string script = FABRICSIM_PLOT_SCRIPT;
    std::vector<std::string> args{python_, script, kind_, input_, "-o", output_};
    for (const auto& [flag, value] :
         {std::pair{"--x", &x_}, {"--y", &y_}, {"--metric", &metric_}}) {
      if (value->empty()) continue;
      if (kind_ != "sweep") {
        throw sim::InputError(kCommandLine, flag, "only a sweep heatmap has axes and a metric");
      }
      args.insert(args.end(), {flag, *value});
    }
    std::vector<char*> argv;
    for (std::string& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawnp(&pid, python_.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      throw sim::InputError(kCommandLine, "--python", fmt::format("cannot run \"{}\"", python_));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code == 77) {
      err << fmt::format(
          "fabricsim: {} has no matplotlib (install python3-matplotlib, or give "
          "--python)\n",
          python_);
      return 2;
    }
    if (code == 0) out << fmt::format("wrote {0}.png and {0}.svg\n", output_);
    return code;
  }

 private:
  std::string kind_, input_, output_, x_, y_, metric_;
  std::string python_ = "/usr/bin/python3";
};

}  // namespace

std::unique_ptr<Command> make_plot_command() {
  return std::make_unique<PlotCommand>();
}

}  // namespace fabricsim::tools
