#pragma once
// Facts about a run that both benches record, in the forms their JSON uses, computed from plain
// inputs so they can be tested without a GPU.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::tools::cuda {

/// "2026-11-30T07:00:00Z".
std::string utc_timestamp(std::chrono::system_clock::time_point when);

/// The kernel driver version ("580.159") from the text of /proc/driver/nvidia/version.
std::optional<std::string> parse_nvidia_driver_version(std::string_view proc_text);

/// ncclGetVersion's code as "2.27.7" (codes of NCCL >= 2.9 are major*10000 + minor*100 + patch,
/// older ones major*1000 + minor*100 + patch).
std::string format_nccl_version(int code);

/// The world size an MPI launcher (mpirun/mpiexec, srun with PMI-2) announces through the
/// environment; 1 when a PMIx launcher started the process without saying the size; 0 when the
/// process was not started by a launcher. `getenv` is injected for tests.
int mpi_launch_size(const std::function<const char*(const char*)>& getenv);

/// Number of distinct names (e.g. hostnames of all ranks).
int count_distinct(std::vector<std::string> names);

/// What the NCCL bench records as "topology": the NCCL rank count, the hosts, the GPUs rank 0's
/// host sees (PCI bus id, name, whether this run uses it) and their P2P access matrix.
struct TopologyFacts {
  int nccl_ranks = 0;              ///< ncclCommCount
  std::vector<std::string> hosts;  ///< distinct hostnames, rank 0's first
  struct Gpu {
    int index = 0;
    std::string pci_bus_id;
    std::string name;
    bool used = false;
  };
  std::vector<Gpu> gpus;               ///< every GPU visible on rank 0's host
  std::vector<std::vector<bool>> p2p;  ///< p2p[i][j]: cudaDeviceCanAccessPeer(i, j)
};
std::string describe_topology(const TopologyFacts& facts);

}  // namespace fabricsim::tools::cuda
