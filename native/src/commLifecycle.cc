// commLifecycle.cc: the timed communicator lifecycle (commOps.h; shared state and the timed span
// in commOpsInternal.h): unique ids, init (also with several ids: InitRankScalable), split, shrink, grow, revoke, finalize, destroy, abort,
// suspend / resume, MemStats and the abortable non-blocking init.
#include <algorithm>
#include <vector>

#include "commOpsInternal.h"

namespace commcost {

using namespace ops;

// ---- unique id, init, split ----------------------------------------------------------------------

Timed getUniqueId(ncclUniqueId* id, std::optional<uint64_t> gen) {
  if (deviceReady.load(std::memory_order_acquire)) CU_CHECK(cuCtxSetCurrent, (context));
  return timedCall(gen, [&] { NCCL_CHECK(ncclGetUniqueId, nullptr, (id)); });
}

Timed commInitRank(int nranks, const ncclUniqueId& id, int rank, const std::optional<ncclConfig_t>& config,
                   std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommInitRank");
  ncclComm_t comm = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = config ? NCCL_CHECK(ncclCommInitRankConfig, nullptr, (&comm, nranks, id, rank, &cfg))
                            : NCCL_CHECK(ncclCommInitRank, nullptr, (&comm, nranks, id, rank));
    if (r == ncclInProgress) waitReady(config ? "ncclCommInitRankConfig" : "ncclCommInitRank", comm, nullptr);
  });
  *handle = addComm(comm);
  return t;
}

Timed commInitRankScalable(int nranks, const std::vector<ncclUniqueId>& ids, int rank,
                           const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommInitRankScalable");
  ncclComm_t comm = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  std::vector<ncclUniqueId> idCopy = ids;  // NCCL takes a non-const array
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommInitRankScalable, nullptr,
                                (&comm, nranks, rank, static_cast<int>(idCopy.size()), idCopy.data(),
                                 config ? &cfg : nullptr));
    if (r == ncclInProgress) waitReady("ncclCommInitRankScalable", comm, nullptr);
  });
  *handle = addComm(comm);
  return t;
}

Timed commSplit(const CommRef& parent, int color, int key, const std::optional<ncclConfig_t>& config,
                std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommSplit");
  requireAlive(parent, "ncclCommSplit");
  ncclComm_t child = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r =
        NCCL_CHECK(ncclCommSplit, lastErrorComm(parent), (parent->comm, color, key, &child, config ? &cfg : nullptr));
    if (r == ncclInProgress) {
      // Progress is reported on the parent; the child must also be ready before use.
      waitReady("ncclCommSplit", parent->comm, parent);
      if (child) waitReady("ncclCommSplit", child, nullptr);
    }
  });
  *handle = child ? addComm(child) : 0;
  return t;
}

// ---- shrink, grow, revoke ------------------------------------------------------------------------

Timed commShrink(const CommRef& parent, const std::vector<int>& excludeRanks, int flags,
                 const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommShrink");
  requireAlive(parent, "ncclCommShrink");
  std::vector<int> exclude = excludeRanks;
  ncclComm_t child = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommShrink, lastErrorComm(parent),
                                (parent->comm, exclude.empty() ? nullptr : exclude.data(), static_cast<int>(exclude.size()),
                                 &child, config ? &cfg : nullptr, flags));
    if (r == ncclInProgress) waitReady("ncclCommShrink", child ? child : parent->comm, child ? nullptr : parent);
  });
  *handle = child ? addComm(child) : 0;
  return t;
}

Timed commGetUniqueId(const CommRef& ref, ncclUniqueId* id, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommGetUniqueId");
  requireAlive(ref, "ncclCommGetUniqueId");
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommGetUniqueId, lastErrorComm(ref), (ref->comm, id)); });
}

Timed commGrow(const CommRef& parent, int nranks, const std::optional<ncclUniqueId>& id, int rank,
               const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommGrow");
  if (parent) requireAlive(parent, "ncclCommGrow");
  ncclComm_t child = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  ncclUniqueId idCopy = id ? *id : ncclUniqueId{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommGrow, parent ? lastErrorComm(parent) : nullptr,
                                (parent ? parent->comm : nullptr, nranks, id ? &idCopy : nullptr, rank, &child,
                                 config ? &cfg : nullptr));
    if (r == ncclInProgress) waitReady("ncclCommGrow", child, nullptr);
  });
  *handle = addComm(child);
  return t;
}

Timed commRevoke(const CommRef& ref, std::optional<uint64_t> gen, double* callMs) {
  makeContextCurrent("ncclCommRevoke");
  requireAlive(ref, "ncclCommRevoke");
  uint64_t called = 0;
  uint64_t start = 0;
  Timed t = timedCall(gen, [&] {
    start = monotonicNs();
    NCCL_CHECK(ncclCommRevoke, lastErrorComm(ref), (ref->comm, NCCL_REVOKE_DEFAULT));
    called = monotonicNs();
    waitReady("ncclCommRevoke", ref->comm, ref);  // until quiet
  });
  *callMs = static_cast<double>(called - start) / 1e6;
  return t;
}

// ---- finalize, destroy, abort --------------------------------------------------------------------

Timed commFinalize(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommFinalize");
  requireAlive(ref, "ncclCommFinalize");
  return timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommFinalize, lastErrorComm(ref), (ref->comm));
    if (r == ncclInProgress) waitReady("ncclCommFinalize", ref->comm, ref);
  });
}

Timed commDestroy(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommDestroy");
  requireAlive(ref, "ncclCommDestroy");
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommDestroy, nullptr, (ref->comm)); });
}

Timed commAbort(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommAbort");
  requireAlive(ref, "ncclCommAbort");
  ref->aborted.store(true);
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommAbort, nullptr, (ref->comm)); });
}

// ---- suspend / resume ----------------------------------------------------------------------------

Timed commSuspend(const CommRef& ref, int flags, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommSuspend");
  requireAlive(ref, "ncclCommSuspend");
  return timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommSuspend, lastErrorComm(ref), (ref->comm, flags));
    if (r == ncclInProgress) waitReady("ncclCommSuspend", ref->comm, ref);
  });
}

Timed commResume(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommResume");
  requireAlive(ref, "ncclCommResume");
  return timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommResume, lastErrorComm(ref), (ref->comm));
    if (r == ncclInProgress) waitReady("ncclCommResume", ref->comm, ref);
  });
}

std::optional<MemStats> commMemStats(const CommRef& ref) {
  const NcclApi& api = nccl();
  if (!api.ncclCommMemStats || loadInfo().ncclVersionCode < kSuspendSince) return std::nullopt;
  requireAlive(ref, "ncclCommMemStats");
  MemStats m;
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemSuspend, &m.suspendable));
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemSuspended, &m.suspended));
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemPersist, &m.persistent));
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemTotal, &m.total));
  return m;
}

// ---- abortable non-blocking init -----------------------------------------------------------------

Timed commInitRankAbortable(int nranks, const ncclUniqueId& id, int rank, double deadlineMs,
                            std::optional<uint64_t> gen, int* handle, bool* aborted, double* abortMs) {
  makeContextCurrent("ncclCommInitRankConfig");
  CommConfigArg arg;
  arg.blocking = 0;
  ncclConfig_t cfg = makeConfig(arg);
  ncclComm_t comm = nullptr;
  const uint64_t abortsBefore = abortGeneration.load();
  *aborted = false;
  *abortMs = 0;
  Timed t = timedCall(gen, [&] {
    const uint64_t start = monotonicNs();
    const uint64_t deadline = start + static_cast<uint64_t>(std::max(0.0, deadlineMs) * 1e6);
    ncclResult_t r = NCCL_CHECK(ncclCommInitRankConfig, nullptr, (&comm, nranks, id, rank, &cfg));
    while (r == ncclInProgress) {
      if (abortGeneration.load() != abortsBefore || monotonicNs() >= deadline) {
        *aborted = true;
        const uint64_t abortStart = monotonicNs();
        NCCL_CHECK(ncclCommAbort, nullptr, (comm));
        *abortMs = static_cast<double>(monotonicNs() - abortStart) / 1e6;
        return;
      }
      sched_yield();
      ncclResult_t state = ncclInProgress;
      NCCL_CHECK(ncclCommGetAsyncError, comm, (comm, &state));
      if (state != ncclSuccess && state != ncclInProgress) {
        // Release what the failed init holds, then report its error.
        nccl().ncclCommAbort(comm);
        failNccl("ncclCommInitRankConfig", state, nullptr, __FILE__, __LINE__);
      }
      r = state;
    }
  });
  *handle = *aborted ? 0 : addComm(comm);
  return t;
}

}  // namespace commcost
