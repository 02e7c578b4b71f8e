#pragma once
// The processes of an MPI job (`mpirun -np N fabricsim sweep ...`) sharing one sweep: rank 0 reads
// the spec and the output folder and sends each rank its share of the points; the other ranks
// send their finished rows back as they complete, and rank 0 writes them. Only this file's source
// knows MPI (the api layer has none). Built without MPI, a launch by mpirun is refused rather than
// run N times over one folder.

#include <functional>
#include <optional>
#include <string>

namespace fabricsim::tools {

/// Whether a launcher started this process as one of several (OMPI_COMM_WORLD_SIZE or PMI_SIZE
/// above 1, or a PMIx launch); a plain `fabricsim sweep` never initialises MPI.
bool launched_by_mpi();

class SweepRanks {
 public:
  /// Initialises MPI (thread level serialized: rows are sent from one worker thread at a time).
  /// Throws sim::InputError when fabricsim was built without MPI.
  SweepRanks();
  ~SweepRanks();  ///< finalises MPI
  SweepRanks(const SweepRanks&) = delete;
  SweepRanks& operator=(const SweepRanks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Rank 0 passes the setup text (nullopt: setup failed and the job ends); every rank returns
  /// it (nullopt on the others when rank 0 failed).
  std::optional<std::string> broadcast(const std::optional<std::string>& text) const;
  /// A rank above 0: one finished row (a JSON line) to rank 0; then finish() once.
  void send_row(const std::string& line) const;
  void finish() const;
  /// Rank 0: every row the other ranks send, until each has finished.
  void receive_rows(const std::function<void(const std::string&)>& on_row) const;
  /// Ends every process of the job (an error on one rank cannot be recovered by the others).
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace fabricsim::tools
