#pragma once
// The measurements a calibration fit consumes, independent of the file they came from (nccl-tests
// logs, our own bench JSON, GEMM CSVs, reference cases). Importers fill these; the fitter reads
// them. Unknown numbers are 0 or "" as noted per field, never guessed.

#include <optional>
#include <string>
#include <vector>

namespace fabricsim::calibration {

/// Where one imported file came from.
struct Provenance {
  std::string file;
  std::string format;    ///< a MeasurementFormat name, e.g. "nccl_tests_log"
  std::string gpu_name;  ///< as the source names it; "" if unknown
  std::string versions;  ///< free text, e.g. "NCCL 2.18.5+cuda12.2"
  std::string date;
  std::string notes;
};

struct GemmMeasurement {
  long long m = 0, n = 0, k = 0, batch = 1;
  std::string dtype;   ///< bf16, fp16, fp8, tf32, mxfp8, nvfp4 or fp4
  double tflops = 0;   ///< 2*m*n*k*batch / time
  double time_us = 0;  ///< 0 if the source gives only the rate
  std::string system;  ///< preset id if known, else ""
  std::string gpu_name;
  std::string source;  ///< file:line, file:/json/pointer or case id
  /// The best of a brute-force search over shapes (the MAMF finder's table): no shape of this
  /// GPU and precision runs faster, so a fit's ceiling may not exceed it.
  bool sweep_maximum = false;
};

struct CollectiveMeasurement {
  std::string
      op;  ///< all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv
  int ranks = 0;
  int nodes = 0;          ///< 0 = unknown
  int gpus_per_node = 0;  ///< 0 = unknown (or ranks not evenly spread over the nodes)
  /// nccl-tests "size" in bytes. 0 = unknown: a single published bandwidth without its message
  /// size (a reference case's `busbw_GBps`), which the fitter treats as a large-message bandwidth;
  /// time_us is then 0 too.
  double bytes = 0;
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<bool> in_place;
  std::string algorithm, protocol, nccl_version;  ///< "" if unknown
  std::string system;                             ///< preset id if known, else ""
  std::string source;                             ///< file:line, file:/json/pointer or case id

  bool size_known() const { return bytes > 0; }
};

struct MeasurementSet {
  std::vector<GemmMeasurement> gemms;
  std::vector<CollectiveMeasurement> collectives;
  std::vector<Provenance> provenance;

  void append(MeasurementSet other);
};

/// The GEMM dtypes a measurement may name.
const std::vector<std::string>& gemm_dtypes();

}  // namespace fabricsim::calibration
