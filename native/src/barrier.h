// barrier.h: the rank side of the coordinator's TCP star barrier, driven from native code so the
// release-to-call gap holds no JavaScript.
//
// Wire format (little-endian): the rank sends 16 bytes {u32 magic 0x52424343 ("CCBR"), u32 rank,
// u64 gen}; the coordinator answers 8 bytes {u64 gen} when every rank has arrived = the release.
#pragma once

#include <cstdint>
#include <string>

namespace commcost {

constexpr uint32_t kBarrierMagic = 0x52424343;

// CLOCK_MONOTONIC in nanoseconds.
uint64_t monotonicNs();

// Connects (TCP_NODELAY) to the coordinator's barrier server and keeps the socket; replaces a
// previous connection. Throws BARRIER.
void barrierConnect(const std::string& host, int port, uint32_t rank);

// Arrives at barrier `gen` and blocks until the coordinator releases it. Returns CLOCK_MONOTONIC ns
// taken right after the release was read. Throws BARRIER on a closed socket or a gen mismatch.
uint64_t barrierWait(uint64_t gen);

}  // namespace commcost
