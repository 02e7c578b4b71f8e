#include "tools/fabricsim/sweep_ranks.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "sim/input_error.hpp"
#include "tools/fabricsim/cli_options.hpp"

#if FABRICSIM_SWEEP_MPI
#include <mpi.h>
#endif

namespace fabricsim::tools {
namespace {

bool env_above_one(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 1;
}

#if FABRICSIM_SWEEP_MPI
constexpr int kRowTag = 1;
constexpr int kFinishedTag = 2;

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}
#endif

}  // namespace

bool launched_by_mpi() {
  return env_above_one("OMPI_COMM_WORLD_SIZE") || env_above_one("PMI_SIZE") ||
         std::getenv("PMIX_RANK") != nullptr;
}

#if FABRICSIM_SWEEP_MPI

SweepRanks::SweepRanks() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw sim::InputError(kCommandLine, "mpirun",
                          "the MPI library does not support threads (MPI_THREAD_SERIALIZED)");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

SweepRanks::~SweepRanks() {
  MPI_Finalize();
}

std::optional<std::string> SweepRanks::broadcast(const std::optional<std::string>& text) const {
  // A length of -1 says rank 0 failed (it reports why); the others end quietly.
  long long length = rank_ == 0 && text ? static_cast<long long>(text->size()) : -1;
  check(MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (length < 0) return std::nullopt;
  std::string out = rank_ == 0 ? *text : std::string(static_cast<size_t>(length), '\0');
  check(MPI_Bcast(out.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

void SweepRanks::send_row(const std::string& line) const {
  check(MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, kRowTag, MPI_COMM_WORLD),
        "MPI_Send");
}

void SweepRanks::finish() const {
  check(MPI_Send(nullptr, 0, MPI_CHAR, 0, kFinishedTag, MPI_COMM_WORLD), "MPI_Send");
}

void SweepRanks::receive_rows(const std::function<void(const std::string&)>& on_row) const {
  int finished = 0;
  std::string line;
  while (finished < size_ - 1) {
    int ready = 0;
    MPI_Status status;
    check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ready, &status), "MPI_Iprobe");
    if (!ready) {
      // Polled rather than blocked on: a blocking receive spins a core rank 0's workers need.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    line.resize(static_cast<size_t>(count));
    check(MPI_Recv(line.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE),
          "MPI_Recv");
    if (status.MPI_TAG == kFinishedTag) {
      ++finished;
    } else {
      on_row(line);
    }
  }
}

void SweepRanks::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else

SweepRanks::SweepRanks() {
  throw sim::InputError(kCommandLine, "mpirun",
                        "this fabricsim was built without MPI (install libopenmpi-dev and "
                        "rebuild), so it cannot share a sweep across processes; use --shard");
}

SweepRanks::~SweepRanks() = default;

std::optional<std::string> SweepRanks::broadcast(const std::optional<std::string>& text) const {
  return text;
}
void SweepRanks::send_row(const std::string&) const {}
void SweepRanks::finish() const {}
void SweepRanks::receive_rows(const std::function<void(const std::string&)>&) const {}
void SweepRanks::abort(int code) const {
  std::_Exit(code);
}

#endif

}  // namespace fabricsim::tools
