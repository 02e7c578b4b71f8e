#include "calibration/measurements.hpp"

#include <iterator>

namespace fabricsim::calibration {

void MeasurementSet::append(MeasurementSet other) {
  gemms.insert(gemms.end(), std::make_move_iterator(other.gemms.begin()),
               std::make_move_iterator(other.gemms.end()));
  collectives.insert(collectives.end(), std::make_move_iterator(other.collectives.begin()),
                     std::make_move_iterator(other.collectives.end()));
  provenance.insert(provenance.end(), std::make_move_iterator(other.provenance.begin()),
                    std::make_move_iterator(other.provenance.end()));
}

const std::vector<std::string>& gemm_dtypes() {
  static const std::vector<std::string> dtypes = {"bf16",  "fp16",  "fp8",   "tf32",
                                                  "mxfp8", "nvfp4", "mxfp4", "fp4"};
  return dtypes;
}

}  // namespace fabricsim::calibration
