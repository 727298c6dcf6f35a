#include "shmBarrier.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "barrier.h"
#include "nativeError.h"

namespace commcost {
namespace {

struct Mapping {
  uint32_t magic;
  uint32_t worldSize;
  unsigned char pad0[56];
  alignas(64) std::atomic<uint32_t> arrived;
  unsigned char pad1[60];
  alignas(64) std::atomic<uint32_t> released;
  unsigned char pad2[60];
  alignas(64) std::atomic<uint32_t> sleepers;
};
static_assert(sizeof(std::atomic<uint32_t>) == 4, "atomic u32 must be lock-free and 4 bytes");

Mapping* mapping = nullptr;
uint32_t mappedWorld = 0;
uint64_t spinNs = 0;

long futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Generations compare on their low 32 bits: a later one is less than 2^31 ahead.
inline bool reached(uint32_t released, uint32_t want) {
  return static_cast<int32_t>(released - want) >= 0;
}

}  // namespace

uint64_t shmBarrierSpinNs() {
  const char* env = std::getenv("COMMCOST_BARRIER_SPIN_US");
  if (env && *env) return static_cast<uint64_t>(std::strtoull(env, nullptr, 10)) * 1000ull;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  // 2 ms: ranks reach a barrier after uneven setup; on the 16-CPU GPU host (1×H200 machine,
  // 2026-12-02, bench section 1, arrivals spread 0–500 µs) a 200 µs spin let 4 and 8 ranks sleep
  // (p99 198 and 320 µs), 1 ms and 2 ms did not (p99 0.6/15 and 0.4/11 µs). The spin precedes the
  // timed span, so it costs CPU only, never a figure.
  return cpus > static_cast<long>(mappedWorld) ? 2000000ull : 0ull;
}

void shmBarrierAttach(const std::string& path, uint32_t worldSize) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) COMMCOST_FAIL("BARRIER", "shmBarrierAttach", "cannot open the barrier's release file " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kShmBarrierBytes || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    close(fd);
    COMMCOST_FAIL("BARRIER", "shmBarrierAttach", "the barrier's release file " + path + " is not a 4096-byte file of this user with mode 0600");
  }
  void* p = mmap(nullptr, kShmBarrierBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mapErrno = errno;
  close(fd);
  if (p == MAP_FAILED) COMMCOST_FAIL("BARRIER", "shmBarrierAttach", "cannot map the barrier's release file " + path + ": " + std::strerror(mapErrno));
  Mapping* m = static_cast<Mapping*>(p);
  if (m->magic != kShmBarrierMagic || m->worldSize != worldSize) {
    const std::string why = "magic " + std::to_string(m->magic) + ", world size " + std::to_string(m->worldSize) + " (expected " + std::to_string(worldSize) + ")";
    munmap(p, kShmBarrierBytes);
    COMMCOST_FAIL("BARRIER", "shmBarrierAttach", "the barrier's release file " + path + " does not match this session: " + why);
  }
  if (mapping) munmap(mapping, kShmBarrierBytes);
  mapping = m;
  mappedWorld = worldSize;
  spinNs = shmBarrierSpinNs();
}

bool shmBarrierAttached() { return mapping != nullptr; }

uint64_t shmBarrierWait(uint64_t gen) {
  Mapping* m = mapping;
  const uint32_t want = static_cast<uint32_t>(gen);
  const uint32_t before = m->released.load(std::memory_order_acquire);
  if (reached(before, want)) {
    COMMCOST_FAIL("BARRIER", "barrierWait",
                  "barrier gen mismatch: arrived at " + std::to_string(gen) + ", generation " + std::to_string(before) + " (low 32 bits) already released");
  }
  // Arrive. The last rank resets the count (before the release, so the next generation's
  // arrivals, which follow the release, count from zero) and releases.
  if (m->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == m->worldSize) {
    m->arrived.store(0, std::memory_order_relaxed);
    m->released.store(want, std::memory_order_seq_cst);
    if (m->sleepers.load(std::memory_order_seq_cst) > 0) futex(&m->released, FUTEX_WAKE, INT_MAX);
    return monotonicNs();
  }
  // Spin briefly, reading the clock every 64 turns.
  uint32_t seen = before;
  if (spinNs > 0) {
    const uint64_t until = monotonicNs() + spinNs;
    for (unsigned turn = 1;; turn++) {
      seen = m->released.load(std::memory_order_acquire);
      if (reached(seen, want)) break;
      cpuRelax();
      if ((turn & 63) == 0 && monotonicNs() > until) break;
    }
  }
  if (!reached(seen, want)) {
  // Sleep on the futex word. sleepers is raised before the word is read again (seq_cst on both
  // sides), so the releasing rank either sees a sleeper and wakes it or this rank sees the release.
    m->sleepers.fetch_add(1, std::memory_order_seq_cst);
    for (;;) {
      seen = m->released.load(std::memory_order_seq_cst);
      if (reached(seen, want)) break;
      long r = futex(&m->released, FUTEX_WAIT, seen);
      if (r != 0 && errno != EAGAIN && errno != EINTR) {
        const std::string why = std::strerror(errno);
        m->sleepers.fetch_sub(1, std::memory_order_relaxed);
        COMMCOST_FAIL("BARRIER", "barrierWait", "FUTEX_WAIT on the barrier's release word failed at gen " + std::to_string(gen) + ": " + why);
      }
    }
    m->sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
  uint64_t releaseNs = monotonicNs();
  if (seen != want) {
    COMMCOST_FAIL("BARRIER", "barrierWait",
                  "barrier gen mismatch: waited at " + std::to_string(gen) + ", released " + std::to_string(seen) + " (low 32 bits)");
  }
  return releaseNs;
}

}  // namespace commcost
