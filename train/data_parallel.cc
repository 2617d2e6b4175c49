#include "train/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#ifdef SWAN_HAVE_MPI
#include <mpi.h>
#endif

namespace swan {
namespace {

// The world size a launcher announces (Open MPI, PMIx, MPICH/Slurm's PMI);
// 0 when the process was not started by one.
int LauncherWorldSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return std::getenv("PMIX_RANK") || std::getenv("PMI_RANK") ? 1 : 0;
}

#ifdef SWAN_HAVE_MPI
// The first setting in which `mine` differs from `lead`'s, as a sentence.
std::string FirstDifference(const std::string& lead, const std::string& mine) {
  const nlohmann::json a = nlohmann::json::parse(lead, nullptr, false);
  const nlohmann::json b = nlohmann::json::parse(mine, nullptr, false);
  if (a.is_object() && b.is_object())
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || b[it.key()] != it.value())
        return it.key() + " is " + (b.contains(it.key()) ? b[it.key()].dump() : "unset") + " here, " +
               it.value().dump() + " on rank 0";
  return "the settings differ from rank 0's";
}

std::vector<MPI_Request>& Pending() {
  static std::vector<MPI_Request> requests;
  return requests;
}

// Adds the wall time of its scope to `seconds`.
struct CommTimer {
  double& seconds;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  ~CommTimer() { seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};
#endif

}  // namespace

DataParallel& DataParallel::Get() {
  static DataParallel ranks;
  return ranks;
}

DataParallel::DataParallel() {
  const int launched = LauncherWorldSize();
  if (launched == 0) return;
#ifdef SWAN_HAVE_MPI
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  mpi_ = true;
#else
  if (launched > 1)
    throw std::runtime_error("this swan was built without MPI (libopenmpi-dev), so it cannot train on " +
                             std::to_string(launched) + " ranks; rebuild after scripts/setup.sh");
#endif
}

void DataParallel::SumDoubles(double* values, int count) {
  if (size_ == 1) return;
#ifdef SWAN_HAVE_MPI
  CommTimer t{comm_seconds_};
  MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
}

std::vector<double> DataParallel::GatherDoubles(const double* values, int count) {
  std::vector<double> all(values, values + count);  // [size_ * count]
  if (size_ == 1) return all;
#ifdef SWAN_HAVE_MPI
  CommTimer t{comm_seconds_};
  all.resize(size_t(size_) * size_t(count));
  MPI_Allgather(values, count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, MPI_COMM_WORLD);
#endif
  return all;
}

void DataParallel::StartSum(float* data, int64_t count) {
  if (size_ == 1 || count == 0) return;
#ifdef SWAN_HAVE_MPI
  CommTimer t{comm_seconds_};
  // Counts are int: a bucket over 2^31 floats goes in pieces.
  for (int64_t at = 0; at < count; at += int64_t(1) << 30) {
    const int n = int(std::min<int64_t>(count - at, int64_t(1) << 30));
    Pending().emplace_back();
    MPI_Iallreduce(MPI_IN_PLACE, data + at, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &Pending().back());
  }
#endif
}

void DataParallel::Progress() {
#ifdef SWAN_HAVE_MPI
  if (Pending().empty()) return;
  CommTimer t{comm_seconds_};
  int done = 0;
  MPI_Testall(int(Pending().size()), Pending().data(), &done, MPI_STATUSES_IGNORE);
  if (done) Pending().clear();
#endif
}

void DataParallel::FinishSums() {
#ifdef SWAN_HAVE_MPI
  if (Pending().empty()) return;
  CommTimer t{comm_seconds_};
  MPI_Waitall(int(Pending().size()), Pending().data(), MPI_STATUSES_IGNORE);
  Pending().clear();
#endif
}

double DataParallel::TakeCommSeconds() {
  const double s = comm_seconds_;
  comm_seconds_ = 0;
  return s;
}

void DataParallel::CheckSettingsAgree(const std::string& settings_json) {
  if (size_ == 1) return;
#ifdef SWAN_HAVE_MPI
  std::string lead = settings_json;
  long long length = (long long)lead.size();
  MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  lead.resize(size_t(length));
  MPI_Bcast(lead.data(), int(length), MPI_CHAR, 0, MPI_COMM_WORLD);
  int agree = lead == settings_json ? 1 : 0;
  if (!agree) std::fprintf(stderr, "swan train rank %d: %s\n", rank_, FirstDifference(lead, settings_json).c_str());
  MPI_Allreduce(MPI_IN_PLACE, &agree, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!agree) {
    Finish();  // every rank is here: a clean end, not an abort
    throw std::runtime_error("the " + std::to_string(size_) +
                             " ranks were started with different settings (each disagreeing rank says "
                             "which above); start every rank with the same command");
  }
#endif
}

void DataParallel::AbortAll(int code) {
#ifdef SWAN_HAVE_MPI
  if (mpi_ && size_ > 1) {
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
#endif
}

void DataParallel::Finish() {
#ifdef SWAN_HAVE_MPI
  if (mpi_ && !finished_) MPI_Finalize();
#endif
  finished_ = true;
}

}  // namespace swan
