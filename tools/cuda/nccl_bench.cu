// fabricsim-nccl-bench: times NCCL collectives over a size sweep, the way nccl-tests does, for
// fabricsim's network calibration. Per op and size: warm-up ops, then `iters` back-to-back ops
// between two CUDA events on each GPU's stream; time per op = elapsed / iters, averaged over all
// ranks (nccl-tests' default). One process drives -g local GPUs (ncclCommInitAll and group calls),
// or, in MPI builds, mpirun starts one process per GPU (or per -g GPUs) on any number of nodes.
// Everything that needs no GPU lives in fabricsim_cuda_tools_core.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#if FABRICSIM_NCCL_BENCH_MPI
#include <mpi.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/input_error.hpp"
#include "tools/cuda/check_kernels.cuh"
#include "tools/cuda/collective_ops.hpp"
#include "tools/cuda/cuda_check.hpp"
#include "tools/cuda/cuda_handles.hpp"
#include "tools/cuda/nccl_options.hpp"
#include "tools/cuda/nccl_report.hpp"
#include "tools/cuda/report_output.hpp"
#include "tools/cuda/run_info.hpp"
#include "tools/cuda/size_sweep.hpp"
#include "tools/cuda/tool_errors.hpp"

namespace fabricsim::tools::cuda {
namespace {

constexpr const char* kTool = "fabricsim-nccl-bench";

void check_nccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) {
    throw CallFailure(describe_call_failure(call, "ncclResult " + std::to_string(result),
                                            ncclGetErrorString(result)));
  }
}

ncclDataType_t nccl_type(NcclDtype dtype) {
  switch (dtype) {
    case NcclDtype::kFloat:
      return ncclFloat32;
    case NcclDtype::kHalf:
      return ncclFloat16;
    case NcclDtype::kBfloat16:
      return ncclBfloat16;
  }
  throw std::invalid_argument("unknown NCCL dtype");
}

/// Calls `f` with a value of the element type of `dtype` (for the typed check kernels).
template <typename F>
void with_element_type(NcclDtype dtype, F&& f) {
  switch (dtype) {
    case NcclDtype::kFloat:
      return f(float{});
    case NcclDtype::kHalf:
      return f(__half{});
    case NcclDtype::kBfloat16:
      return f(__nv_bfloat16{});
  }
}

/// The processes of the run: MPI_COMM_WORLD when started by an MPI launcher (MPI builds), else
/// this process alone. Every collective helper is a no-op for a single process.
class Processes {
 public:
  explicit Processes(bool use_mpi) {
#if FABRICSIM_NCCL_BENCH_MPI
    if (!use_mpi) return;
    mpi_ = true;
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw CallFailure("MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
#else
    (void)use_mpi;
#endif
  }
  ~Processes() {
#if FABRICSIM_NCCL_BENCH_MPI
    if (mpi_) MPI_Finalize();
#endif
  }
  Processes(const Processes&) = delete;
  Processes& operator=(const Processes&) = delete;

  int rank() const {
    return rank_;
  }
  int size() const {
    return size_;
  }
  int local_rank() const {
    return local_rank_;
  }
  int local_size() const {
    return local_size_;
  }
  bool is_root() const {
    return rank_ == 0;
  }

  void broadcast_from_root(void* data, int bytes) const {
#if FABRICSIM_NCCL_BENCH_MPI
    if (mpi_) MPI_Bcast(data, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
#else
    (void)data;
    (void)bytes;
#endif
  }
  double sum(double value) const {
#if FABRICSIM_NCCL_BENCH_MPI
    if (mpi_) MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
    return value;
  }
  void barrier() const {
#if FABRICSIM_NCCL_BENCH_MPI
    if (mpi_) MPI_Barrier(MPI_COMM_WORLD);
#endif
  }
  /// Every process's hostname, by rank.
  std::vector<std::string> hostnames() const {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    std::vector<std::string> names;
#if FABRICSIM_NCCL_BENCH_MPI
    if (mpi_) {
      std::vector<char> all(sizeof name * static_cast<size_t>(size_));
      MPI_Allgather(name, sizeof name, MPI_CHAR, all.data(), sizeof name, MPI_CHAR, MPI_COMM_WORLD);
      for (int r = 0; r < size_; ++r)
        names.emplace_back(all.data() + sizeof name * r);
      return names;
    }
#endif
    names.emplace_back(name);
    return names;
  }
  [[noreturn]] void abort(int code) const {
#if FABRICSIM_NCCL_BENCH_MPI
    if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    std::exit(code);
  }

 private:
  bool mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

/// One GPU this process drives, with its NCCL rank and buffers. The communicator is destroyed
/// before the buffers and stream it uses (members go in reverse order).
struct LocalGpu {
  LocalGpu(int device_index, uint64_t buffer_bytes) : device(device_index) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    stream = std::make_unique<CudaStream>();
    start = std::make_unique<CudaEvent>();
    stop = std::make_unique<CudaEvent>();
    send = DeviceBuffer(buffer_bytes, "cudaMalloc(send buffer; lower -e?)");
    recv = DeviceBuffer(buffer_bytes, "cudaMalloc(receive buffer; lower -e?)");
    wrong = DeviceBuffer(sizeof(unsigned long long), "cudaMalloc(check counter)");
  }
  ~LocalGpu() {
    if (comm != nullptr) ncclCommDestroy(comm);
  }
  LocalGpu(const LocalGpu&) = delete;
  LocalGpu& operator=(const LocalGpu&) = delete;

  int device = 0;
  int rank = 0;
  std::unique_ptr<CudaStream> stream;
  std::unique_ptr<CudaEvent> start;
  std::unique_ptr<CudaEvent> stop;
  DeviceBuffer send;
  DeviceBuffer recv;
  DeviceBuffer wrong;
  ncclComm_t comm = nullptr;
};

class NcclBench {
 public:
  NcclBench(const NcclOptions& options, const Processes& processes, int device_count)
      : options_(options),
        processes_(processes),
        ranks_(processes.size() * options.gpus_per_process),
        element_bytes_(nccl_dtype_bytes(options.dtype)) {
    const int per_process = options.gpus_per_process;
    const int first = processes.local_rank() * per_process;
    if (first + per_process > device_count) {
      throw DeviceUnavailable("not enough CUDA devices: " + std::to_string(processes.local_size()) +
                              " process(es) on this host with -g " + std::to_string(per_process) +
                              " need " + std::to_string(processes.local_size() * per_process) +
                              ", " + std::to_string(device_count) + " visible");
    }
    for (int i = 0; i < per_process; ++i) {
      gpus_.push_back(std::make_unique<LocalGpu>(first + i, options.max_bytes));
      gpus_.back()->rank = processes.rank() * per_process + i;
    }
    init_communicators();
    // Defined data everywhere; the values do not matter for timing, --check refills what it uses.
    for (auto& gpu : gpus_) {
      check_cuda(cudaSetDevice(gpu->device), "cudaSetDevice");
      fill(gpu->send.bytes(), options.max_bytes / element_bytes_, gpu->rank, false, *gpu);
      fill(gpu->recv.bytes(), options.max_bytes / element_bytes_, gpu->rank, false, *gpu);
    }
    synchronize();
  }

  int ranks() const { return ranks_; }
  int first_device() const { return gpus_.front()->device; }
  ncclComm_t first_comm() const { return gpus_.front()->comm; }

  /// Times every op over the sweep; rows are returned on the root process only.
  std::vector<NcclRow> run() {
    std::vector<NcclRow> rows;
    const std::vector<uint64_t> sizes =
        size_sweep(options_.min_bytes, options_.max_bytes, options_.step_factor);
    for (CollectiveOp op : options_.ops) {
      uint64_t previous_bytes = 0;
      for (uint64_t size : sizes) {
        const CollectiveLayout layout = collective_layout(op, size, element_bytes_, ranks_);
        // Too small for one element per rank, or the same as the last size after rounding.
        if (layout.bytes == 0 || layout.bytes == previous_bytes) continue;
        previous_bytes = layout.bytes;
        for (bool in_place : {false, true}) {
          if (in_place && !(options_.in_place && has_in_place_form(op))) continue;
          if (options_.check) check(op, layout, in_place);
          const double time_us = time_op(op, layout, in_place);
          const NcclRow row = make_nccl_row(op, layout, options_.dtype, in_place, time_us, ranks_);
          if (processes_.is_root()) {
            std::fprintf(
                stderr, "%s: %-14s %13llu B %-12s %12.2f us  algbw %8.2f  busbw %8.2f GB/s\n",
                kTool, std::string(collective_op_name(op)).c_str(),
                static_cast<unsigned long long>(row.bytes), in_place ? "in-place" : "out-of-place",
                row.time_us, row.algbw_gbps, row.busbw_gbps);
            rows.push_back(row);
          }
        }
      }
    }
    return rows;
  }

 private:
  void init_communicators() {
    std::vector<ncclComm_t> comms(gpus_.size());
    if (processes_.size() == 1) {
      std::vector<int> devices;
      for (auto& gpu : gpus_)
        devices.push_back(gpu->device);
      check_nccl(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), devices.data()),
                 "ncclCommInitAll");
    } else {
      ncclUniqueId id{};
      if (processes_.is_root()) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      processes_.broadcast_from_root(&id, sizeof id);
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (size_t i = 0; i < gpus_.size(); ++i) {
        check_cuda(cudaSetDevice(gpus_[i]->device), "cudaSetDevice");
        check_nccl(ncclCommInitRank(&comms[i], ranks_, id, gpus_[i]->rank), "ncclCommInitRank");
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd(ncclCommInitRank)");
    }
    for (size_t i = 0; i < gpus_.size(); ++i)
      gpus_[i]->comm = comms[i];
  }

  void fill(char* data, uint64_t count, int rank, bool sentinel, const LocalGpu& gpu) const {
    with_element_type(options_.dtype, [&](auto element) {
      using T = decltype(element);
      fill_pattern(reinterpret_cast<T*>(data), count, rank, sentinel, gpu.stream->get());
    });
  }

  void synchronize() const {
    for (const auto& gpu : gpus_) {
      check_cuda(cudaStreamSynchronize(gpu->stream->get()), "cudaStreamSynchronize");
    }
  }

  /// Enqueues one op on every local GPU, as one NCCL group.
  void launch(CollectiveOp op, const CollectiveLayout& l, bool in_place) const {
    const ncclDataType_t type = nccl_type(options_.dtype);
    const uint64_t chunk_bytes = l.per_rank_count * element_bytes_;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (const auto& gpu : gpus_) {
      char* const send = gpu->send.bytes();
      char* const recv = gpu->recv.bytes();
      const cudaStream_t stream = gpu->stream->get();
      const int rank = gpu->rank;
      switch (op) {
        case CollectiveOp::kAllReduce:
          check_nccl(ncclAllReduce(in_place ? recv : send, recv, l.count, type, ncclSum, gpu->comm,
                                   stream),
                     "ncclAllReduce");
          break;
        case CollectiveOp::kAllGather:
          check_nccl(ncclAllGather(in_place ? recv + rank * chunk_bytes : send, recv,
                                   l.per_rank_count, type, gpu->comm, stream),
                     "ncclAllGather");
          break;
        case CollectiveOp::kReduceScatter:
          check_nccl(
              ncclReduceScatter(in_place ? recv : send, in_place ? recv + rank * chunk_bytes : recv,
                                l.per_rank_count, type, ncclSum, gpu->comm, stream),
              "ncclReduceScatter");
          break;
        case CollectiveOp::kAllToAll:
          // Point-to-point pairs, as nccl-tests does (ncclAlltoAll exists only in NCCL >= 2.28).
          for (int peer = 0; peer < ranks_; ++peer) {
            check_nccl(ncclSend(send + peer * chunk_bytes, l.per_rank_count, type, peer, gpu->comm,
                                stream),
                       "ncclSend");
            check_nccl(ncclRecv(recv + peer * chunk_bytes, l.per_rank_count, type, peer, gpu->comm,
                                stream),
                       "ncclRecv");
          }
          break;
        case CollectiveOp::kBroadcast:
          check_nccl(
              ncclBroadcast(in_place ? recv : send, recv, l.count, type, 0, gpu->comm, stream),
              "ncclBroadcast");
          break;
        case CollectiveOp::kSendRecv:
          check_nccl(ncclSend(send, l.count, type, (rank + 1) % ranks_, gpu->comm, stream),
                     "ncclSend");
          check_nccl(ncclRecv(recv, l.count, type, (rank + ranks_ - 1) % ranks_, gpu->comm, stream),
                     "ncclRecv");
          break;
      }
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

  double time_op(CollectiveOp op, const CollectiveLayout& layout, bool in_place) const {
    for (int i = 0; i < options_.warmup; ++i)
      launch(op, layout, in_place);
    synchronize();
    processes_.barrier();
    for (const auto& gpu : gpus_) {
      check_cuda(cudaEventRecord(gpu->start->get(), gpu->stream->get()), "cudaEventRecord");
    }
    for (int i = 0; i < options_.iters; ++i)
      launch(op, layout, in_place);
    for (const auto& gpu : gpus_) {
      check_cuda(cudaEventRecord(gpu->stop->get(), gpu->stream->get()), "cudaEventRecord");
    }
    synchronize();
    double local_ms = 0;
    for (const auto& gpu : gpus_)
      local_ms += elapsed_ms(*gpu->start, *gpu->stop);
    const double mean_ms = processes_.sum(local_ms) / ranks_;
    return mean_ms * 1000.0 / options_.iters;
  }

  /// Runs the op once on known data and counts wrong result elements over all ranks.
  void check(CollectiveOp op, const CollectiveLayout& l, bool in_place) const {
    const uint64_t span = std::max(l.send_count, l.recv_count);
    for (const auto& gpu : gpus_) {
      check_cuda(cudaSetDevice(gpu->device), "cudaSetDevice");
      char* const recv = gpu->recv.bytes();
      fill(recv, span, gpu->rank, true, *gpu);
      if (!in_place) {
        fill(gpu->send.bytes(), l.send_count, gpu->rank, false, *gpu);
      } else if (op == CollectiveOp::kAllGather) {
        fill(recv + gpu->rank * l.per_rank_count * element_bytes_, l.per_rank_count, gpu->rank,
             false, *gpu);
      } else {
        fill(recv, l.send_count, gpu->rank, false, *gpu);
      }
    }
    synchronize();
    launch(op, l, in_place);
    synchronize();
    // Results are exact small integers for up to 64 bf16 ranks; beyond that allow rounding.
    const double tolerance = options_.dtype == NcclDtype::kFloat ? 1e-6 : 1.0 / 64;
    double wrong_total = 0;
    for (const auto& gpu : gpus_) {
      check_cuda(cudaSetDevice(gpu->device), "cudaSetDevice");
      auto* const counter = reinterpret_cast<unsigned long long*>(gpu->wrong.bytes());
      check_cuda(cudaMemsetAsync(counter, 0, sizeof *counter, gpu->stream->get()),
                 "cudaMemsetAsync");
      const bool shifted = in_place && op == CollectiveOp::kReduceScatter;
      const char* result =
          gpu->recv.bytes() + (shifted ? gpu->rank * l.per_rank_count * element_bytes_ : 0);
      with_element_type(options_.dtype, [&](auto element) {
        using T = decltype(element);
        count_wrong(reinterpret_cast<const T*>(result), l.recv_count, op, gpu->rank, ranks_,
                    l.per_rank_count, tolerance, counter, gpu->stream->get());
      });
      unsigned long long wrong = 0;
      check_cuda(cudaMemcpyAsync(&wrong, counter, sizeof wrong, cudaMemcpyDeviceToHost,
                                 gpu->stream->get()),
                 "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(gpu->stream->get()), "cudaStreamSynchronize");
      wrong_total += static_cast<double>(wrong);
    }
    wrong_total = processes_.sum(wrong_total);
    if (wrong_total > 0) {
      throw CallFailure("--check failed: " + std::string(collective_op_name(op)) + " of " +
                        std::to_string(l.bytes) + " bytes (" +
                        (in_place ? "in-place" : "out-of-place") +
                        "): " + std::to_string(static_cast<unsigned long long>(wrong_total)) +
                        " wrong elements over all ranks");
    }
  }

  const NcclOptions& options_;
  const Processes& processes_;
  int ranks_ = 1;
  uint64_t element_bytes_ = 4;
  std::vector<std::unique_ptr<LocalGpu>> gpus_;
};

std::vector<std::string> environment_entries() {
  std::vector<std::string> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    entries.emplace_back(*e);
  return entries;
}

std::string topology_text(const NcclBench& bench, const std::vector<std::string>& hostnames,
                          int device_count, int gpus_per_process) {
  TopologyFacts facts;
  check_nccl(ncclCommCount(bench.first_comm(), &facts.nccl_ranks), "ncclCommCount");
  for (const std::string& host : hostnames) {
    if (std::find(facts.hosts.begin(), facts.hosts.end(), host) == facts.hosts.end()) {
      facts.hosts.push_back(host);
    }
  }
  for (int d = 0; d < device_count; ++d) {
    TopologyFacts::Gpu gpu;
    gpu.index = d;
    char bus_id[64] = {};
    check_cuda(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, d), "cudaDeviceGetPCIBusId");
    gpu.pci_bus_id = bus_id;
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    gpu.name = prop.name;
    gpu.used = d >= bench.first_device() && d < bench.first_device() + gpus_per_process;
    facts.gpus.push_back(gpu);
    std::vector<bool> row;
    for (int peer = 0; peer < device_count; ++peer) {
      int can = 0;
      if (peer != d) {
        check_cuda(cudaDeviceCanAccessPeer(&can, d, peer), "cudaDeviceCanAccessPeer");
      }
      row.push_back(can != 0);
    }
    facts.p2p.push_back(row);
  }
  return describe_topology(facts);
}

int measure(const NcclOptions& options, const Processes& processes, int device_count) {
  ReportOutput output(options.output, processes.is_root());
  NcclBench bench(options, processes, device_count);
  const std::vector<std::string> hostnames = processes.hostnames();

  NcclReport report;
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  report.nccl_version = format_nccl_version(version);
  int driver = 0;
  check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  report.cuda_driver_version = std::to_string(driver);
  int runtime = 0;
  check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  report.cuda_runtime_version = std::to_string(runtime);
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, bench.first_device()), "cudaGetDeviceProperties");
  report.gpu_name = prop.name;
  report.nodes = count_distinct(hostnames);
  report.gpus_per_node = processes.local_size() * options.gpus_per_process;
  report.ranks = bench.ranks();
  report.env = nccl_env_snapshot(environment_entries());
  report.topology = topology_text(bench, hostnames, device_count, options.gpus_per_process);
  report.date = utc_timestamp(std::chrono::system_clock::now());
  report.warmup_iters = options.warmup;
  report.iters = options.iters;
  if (processes.is_root()) {
    std::fprintf(stderr, "%s: NCCL %s, %d rank(s) on %d node(s), %s\n", kTool,
                 report.nccl_version.c_str(), report.ranks, report.nodes, report.gpu_name.c_str());
  }
  report.rows = bench.run();

  if (!processes.is_root()) return kExitOk;
  output.write(nccl_report_text(report));
  return kExitOk;
}

int run(int argc, char** argv) {
  const CommandLine<NcclOptions> command_line = parse_nccl_args(argc, argv);
  if (command_line.help) {
    std::cout << *command_line.help;
    return kExitOk;
  }
  const int launched_ranks = mpi_launch_size([](const char* name) { return std::getenv(name); });
#if !FABRICSIM_NCCL_BENCH_MPI
  if (launched_ranks > 1) {
    throw sim::InputError("<command line>", "",
                          "this fabricsim-nccl-bench was built without MPI and cannot run as " +
                              std::to_string(launched_ranks) +
                              " MPI processes; run one process with -g N instead");
  }
#endif
  // Before MPI_Init: a machine without GPUs fails at once, without starting MPI.
  const int device_count = require_cuda_devices();
  const Processes processes(launched_ranks > 0);
  try {
    return measure(command_line.options, processes, device_count);
  } catch (const std::exception& e) {
    if (processes.size() == 1) throw;
    // Other ranks would wait forever in their next collective: report and take the job down.
    std::fprintf(stderr, "%s: rank %d: %s\n", kTool, processes.rank(), e.what());
    processes.abort(exit_code_of_current_exception());
  }
}

}  // namespace
}  // namespace fabricsim::tools::cuda

int main(int argc, char** argv) {
  return fabricsim::tools::cuda::run_tool(fabricsim::tools::cuda::kTool, std::cerr,
                                          [&] { return fabricsim::tools::cuda::run(argc, argv); });
}
