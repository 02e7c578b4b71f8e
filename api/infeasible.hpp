#pragma once
// Why a plan cannot run: a value evaluations return, not an exception.

#include <string>

namespace fabricsim::api {

struct Infeasible {
  enum class Cause {
    plan,    ///< the plan does not divide the model, batch or cluster
    memory,  ///< it does not fit in HBM (the reason holds the memory breakdown)
  };
  Cause cause = Cause::plan;
  std::string field;  ///< plan: the setting at fault, as a scenario JSON pointer
  std::string reason;
};

}  // namespace fabricsim::api
