#include "tools/cuda/tool_errors.hpp"

#include <exception>
#include <ostream>

#include "sim/input_error.hpp"

namespace fabricsim::tools::cuda {

std::string describe_call_failure(std::string_view call, std::string_view error_name,
                                  std::string_view error_text) {
  std::string out(call);
  out += ": ";
  out += error_name;
  if (!error_text.empty() && error_text != error_name) {
    out += " (";
    out += error_text;
    out += ")";
  }
  return out;
}

int exit_code_of_current_exception() {
  try {
    throw;
  } catch (const sim::InputError&) {
    return kExitBadInput;
  } catch (const DeviceUnavailable&) {
    return kExitNoDevice;
  } catch (...) {
    return kExitRuntimeFailure;
  }
}

int run_tool(std::string_view tool, std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    err << tool << ": " << e.what() << '\n';
    return exit_code_of_current_exception();
  } catch (...) {
    err << tool << ": unknown error\n";
    return kExitRuntimeFailure;
  }
}

}  // namespace fabricsim::tools::cuda
