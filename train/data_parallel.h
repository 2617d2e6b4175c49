// The ranks of a data-parallel `swan train` (docs/design.md §3: MPI, as llm.c).
//
// Under `mpirun -np N` (Open MPI, MPICH or Slurm's PMI in the environment)
// the first Get() initializes MPI and every rank holds the whole model; a
// process started without a launcher is rank 0 of 1 and makes no MPI call,
// so swan needs no mpirun for one process (and builds without MPI, where
// launching under mpirun with N > 1 is refused).
//
// Collectives run on the main thread only (MPI_THREAD_FUNNELED): the
// OpenMP kernels between them make no MPI call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

class DataParallel {
 public:
  // The process's ranks; initializes MPI on first use when launched by mpirun.
  static DataParallel& Get();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool lead() const { return rank_ == 0; }  // writes logs, checkpoints, the export

  // In place across ranks (a no-op on one rank).
  void SumDoubles(double* values, int count);
  // Every rank's values[0, count), rank by rank: [size() * count].
  std::vector<double> GatherDoubles(const double* values, int count);

  // Gradient buckets: StartSum begins summing data[0, count) across ranks
  // (non-blocking; the buffer must stay untouched), Progress lets started
  // sums advance (MPI progresses them only inside MPI calls), FinishSums
  // waits for all of them.
  void StartSum(float* data, int64_t count);
  void Progress();
  void FinishSums();
  // Seconds spent inside MPI calls since the last call (the wait that
  // communication adds to a step).
  double TakeCommSeconds();

  // Start-up agreement: every rank passes its settings as a JSON object;
  // when any rank's differ from rank 0's, every rank ends MPI and throws,
  // and each disagreeing rank names the first setting that differs.
  void CheckSettingsAgree(const std::string& settings_json);

  // Ends the whole job after an error on this rank (others may be waiting
  // in a collective): MPI_Abort. One rank: returns.
  void AbortAll(int code);
  // MPI_Finalize, once, when MPI was initialized.
  void Finish();
  bool finished() const { return finished_; }

 private:
  DataParallel();
  int rank_ = 0, size_ = 1;
  bool mpi_ = false, finished_ = false;
  double comm_seconds_ = 0;
};

}  // namespace swan
