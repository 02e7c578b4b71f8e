#include <iostream>

#include "tools/fabricsim/cli.hpp"

int main(int argc, char** argv) {
  return fabricsim::tools::run_cli(argc, argv, std::cout, std::cerr);
}
