#include "tools/fabricsim/cli.hpp"

#include <ostream>

namespace fabricsim::tools {

int run_cli(int, const char* const*, std::ostream& out, std::ostream&) {
  out << "fabricsim\n";
  return 0;
}

}  // namespace fabricsim::tools
