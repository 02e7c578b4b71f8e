#include "tools/cuda/run_info.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>

using namespace fabricsim::tools::cuda;

TEST_CASE("timestamps are ISO 8601 UTC", "[cuda-tools]") {
  CHECK(utc_timestamp(std::chrono::system_clock::from_time_t(0)) == "1970-01-01T00:00:00Z");
  CHECK(utc_timestamp(std::chrono::system_clock::from_time_t(1796022000)) ==
        "2026-11-30T07:00:00Z");
}

TEST_CASE("the kernel driver version is read from /proc/driver/nvidia/version", "[cuda-tools]") {
  CHECK(parse_nvidia_driver_version(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Thu Oct  2 2025\n"
            "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n") == "580.159");
  CHECK(parse_nvidia_driver_version(
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build") ==
        "570.86.15");
  CHECK_FALSE(parse_nvidia_driver_version(""));
}

TEST_CASE("NCCL version codes", "[cuda-tools]") {
  CHECK(format_nccl_version(22707) == "2.27.7");
  CHECK(format_nccl_version(22809) == "2.28.9");
  CHECK(format_nccl_version(2804) == "2.8.4");
}

TEST_CASE("MPI launches are recognized from the environment", "[cuda-tools]") {
  const auto size_with = [](const std::map<std::string, std::string>& env) {
    return mpi_launch_size([&](const char* name) -> const char* {
      const auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  CHECK(size_with({}) == 0);
  CHECK(size_with({{"OMPI_COMM_WORLD_SIZE", "8"}}) == 8);
  CHECK(size_with({{"PMI_SIZE", "junk"}, {"MV2_COMM_WORLD_SIZE", "16"}}) == 16);
  CHECK(size_with({{"PMIX_RANK", "3"}}) == 1);
}

TEST_CASE("topology text names ranks, hosts, GPUs and P2P access", "[cuda-tools]") {
  TopologyFacts facts;
  facts.nccl_ranks = 2;
  facts.hosts = {"node-a"};
  facts.gpus = {{0, "0000:18:00.0", "NVIDIA H200", true}, {1, "0000:2A:00.0", "NVIDIA H200", true}};
  facts.p2p = {{false, true}, {true, false}};
  CHECK(describe_topology(facts) ==
        "ncclCommCount 2 ranks on 1 host(s) [node-a]; GPUs visible on rank 0's host: "
        "0=0000:18:00.0 NVIDIA H200 (used); 1=0000:2A:00.0 NVIDIA H200 (used); P2P access "
        "(cudaDeviceCanAccessPeer, row = from GPU, Y = yes): 0:-Y 1:Y-");
  CHECK(count_distinct({"a", "b", "a"}) == 2);
}
