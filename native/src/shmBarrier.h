// shmBarrier.h: the one-host release of the barrier through shared memory.
//
// When every rank of a barrier runs on one host, the coordinator creates a small mapping (a file
// in /dev/shm, mode 0600, with a random name handed to the ranks in COMMCOST_BARRIER_SHM, and
// unlinked once every rank has mapped it). The ranks arrive on an atomic counter; the last one to
// arrive resets the counter, publishes the generation in a 32-bit futex word and wakes the ranks
// that sleep on it. A waiting rank spins briefly on the word, then sleeps in FUTEX_WAIT. No
// process in between: the release skew is one cache-line transfer for a spinning rank and one
// futex wake-up for a sleeping one.
//
// Layout (little-endian, 4096 bytes, written by the coordinator except the atomics):
//   offset 0:   u32 magic 0x53424343 ("CCBS"), u32 world size
//   offset 64:  atomic u32 arrived (ranks arrived at the generation being gathered)
//   offset 128: atomic u32 released (the last released generation, low 32 bits: the futex word)
//   offset 192: atomic u32 sleepers (ranks in FUTEX_WAIT or about to be)
#pragma once

#include <cstdint>
#include <string>

namespace commcost {

constexpr uint32_t kShmBarrierMagic = 0x53424343;
constexpr uint64_t kShmBarrierBytes = 4096;

// Maps the coordinator's release file at `path` and checks its magic and world size. Replaces a
// previous mapping. Throws BARRIER (cannot open or map it, wrong size, magic or world size).
void shmBarrierAttach(const std::string& path, uint32_t worldSize);

// True once shmBarrierAttach succeeded.
bool shmBarrierAttached();

// Arrives at generation `gen` and returns when every rank has arrived: CLOCK_MONOTONIC ns taken
// right after this rank saw the release (after its own futex wake for the last arriving rank).
// Spins up to `spinNs` (see shmBarrierSpinNs) before sleeping. Throws BARRIER when a later
// generation than `gen` was released (the ranks disagree on the generation).
uint64_t shmBarrierWait(uint64_t gen);

// The spin budget before FUTEX_WAIT, ns: COMMCOST_BARRIER_SPIN_US (µs) when set, else 2 ms when
// the host has more online CPUs than ranks, else 0 (spinning would take the CPU from the ranks
// that have yet to arrive).
uint64_t shmBarrierSpinNs();

}  // namespace commcost
