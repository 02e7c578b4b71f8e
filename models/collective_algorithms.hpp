#pragma once
// Pure schedule builders: which transfers each NCCL-like algorithm puts on the fabric. They know
// nothing of the network backend; the runner turns transfers into flows.
//
// NCCL runs many channels; here the channels of one algorithm are folded into one "instance" per
// scale-up member, because that is what decides which links carry the traffic: instance c of a
// multi-domain ring runs through domain d starting at member c and leaves through member c's NIC,
// so every NIC carries one instance. Identical intra-domain transfers of different instances are
// merged (multiplicity), which is exact under max-min sharing.

#include <stdexcept>
#include <string>
#include <vector>

#include "models/collective_schedule.hpp"
#include "models/group_layout.hpp"
#include "topologies/router.hpp"

namespace fabricsim::models {

/// Raised when an algorithm cannot run a collective on a group (e.g. NVLS without NVSwitch).
class AlgorithmUnavailable : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Transfers of `op` over `group` with `algorithm`, `size` in nccl-tests' convention.
std::vector<Phase> build_phases(CollectiveOp op, Algorithm algorithm, double size,
                                const GroupLayout& group, topologies::Router& router);

}  // namespace fabricsim::models
