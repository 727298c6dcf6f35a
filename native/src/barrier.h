// barrier.h: the rank side of the coordinator's TCP star barrier, driven from native code so the
// release-to-call gap holds no JavaScript.
//
// Wire format (little-endian): on connect the rank sends its hello, 40 bytes {u32 magic 0x48424343
// ("CCBH"), u32 rank, 32 bytes: the rank session's secret}; then per barrier 16 bytes {u32 magic
// 0x52424343 ("CCBR"), u32 rank, u64 gen}; the coordinator answers 8 bytes {u64 gen} when every
// rank has arrived = the release. The coordinator closes a connection without the secret.
// With the one-host release (shmBarrier.h attached), the arrival is sent as a notice instead,
// 16 bytes {u32 magic 0x41424343 ("CCBA"), u32 rank, u64 gen}: the coordinator records it (hang
// messages name the rank that never arrived) and writes nothing back; the release comes through
// shared memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace commcost {

constexpr uint32_t kBarrierMagic = 0x52424343;
constexpr uint32_t kBarrierHelloMagic = 0x48424343;
constexpr uint32_t kBarrierNoticeMagic = 0x41424343;
constexpr size_t kBarrierTokenBytes = 32;

// CLOCK_MONOTONIC in nanoseconds.
uint64_t monotonicNs();

// Connects (TCP_NODELAY) to the coordinator's barrier server, sends the hello with `token` (the
// session's secret, kBarrierTokenBytes characters) and keeps the socket; replaces a previous
// connection. Throws BARRIER (bad port or token, no connection, hello not sent).
void barrierConnect(const std::string& host, int port, uint32_t rank, const std::string& token);

// Arrives at barrier `gen` and blocks until the coordinator releases it (TCP), or, once
// shmBarrierAttach mapped the one-host release, sends the arrival notice and waits in shared
// memory. Returns CLOCK_MONOTONIC ns taken right after the release was seen. Throws BARRIER on a
// closed socket or a gen mismatch.
uint64_t barrierWait(uint64_t gen);

}  // namespace commcost
