#pragma once
// Message sizes of the NCCL bench, written and swept as nccl-tests does: `-b 8 -e 8G -f 2` runs
// 8, 16, ..., 8 GiB. A bare number is bytes and K/M/G (either case) are binary multiples, as in
// nccl-tests; the unit forms of the rest of fabricsim ("64 MiB", "1 GB") are accepted too.

#include <cstdint>
#include <string_view>
#include <vector>

namespace fabricsim::tools::cuda {

/// Parses a positive, whole number of bytes; `flag` names the option in the InputError thrown.
uint64_t parse_message_size(std::string_view text, std::string_view flag);

/// min, min*factor, min*factor^2, ... while <= max (min <= max, factor >= 2, min >= 1).
std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor);

}  // namespace fabricsim::tools::cuda
