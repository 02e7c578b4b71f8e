#include "tools/cuda/run_info.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <regex>
#include <set>

namespace fabricsim::tools::cuda {

std::string utc_timestamp(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::optional<std::string> parse_nvidia_driver_version(std::string_view proc_text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Thu ..." or
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build ...".
  static const std::regex pattern(R"(Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+))");
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_search(proc_text.begin(), proc_text.end(), match, pattern)) return match[1].str();
  return std::nullopt;
}

std::string format_nccl_version(int code) {
  int major = 0;
  int minor = 0;
  int patch = 0;
  if (code >= 20900) {
    major = code / 10000;
    minor = code % 10000 / 100;
    patch = code % 100;
  } else {
    major = code / 1000;
    minor = code % 1000 / 100;
    patch = code % 100;
  }
  return fmt::format("{}.{}.{}", major, minor, patch);
}

int mpi_launch_size(const std::function<const char*(const char*)>& getenv) {
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"}) {
    const char* value = getenv(name);
    if (value == nullptr || *value == '\0') continue;
    const std::string text(value);
    if (!std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
      continue;
    }
    return std::stoi(text);
  }
  // PMIx launchers (srun --mpi=pmix) announce the rank but not always the size: MPI tells it.
  if (const char* rank = getenv("PMIX_RANK"); rank != nullptr && *rank != '\0') return 1;
  return 0;
}

int count_distinct(std::vector<std::string> names) {
  return static_cast<int>(std::set<std::string>(names.begin(), names.end()).size());
}

std::string describe_topology(const TopologyFacts& facts) {
  std::string out =
      fmt::format("ncclCommCount {} ranks on {} host(s)", facts.nccl_ranks, facts.hosts.size());
  for (size_t i = 0; i < facts.hosts.size(); ++i) {
    out += fmt::format("{}{}", i == 0 ? " [" : ", ", facts.hosts[i]);
  }
  if (!facts.hosts.empty()) out += "]";
  out += "; GPUs visible on rank 0's host:";
  for (const TopologyFacts::Gpu& g : facts.gpus) {
    out += fmt::format(" {}={} {}{};", g.index, g.pci_bus_id, g.name, g.used ? " (used)" : "");
  }
  if (!facts.p2p.empty()) {
    out += " P2P access (cudaDeviceCanAccessPeer, row = from GPU, Y = yes):";
    for (size_t i = 0; i < facts.p2p.size(); ++i) {
      out += fmt::format(" {}:", i);
      for (size_t j = 0; j < facts.p2p[i].size(); ++j) {
        out += i == j ? '-' : (facts.p2p[i][j] ? 'Y' : 'n');
      }
    }
  }
  return out;
}

}  // namespace fabricsim::tools::cuda
