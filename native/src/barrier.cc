#include "barrier.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "nativeError.h"
#include "shmBarrier.h"

namespace commcost {
namespace {

std::mutex barrierMutex;  // one barrier exchange at a time on the one socket
int barrierFd = -1;
uint32_t barrierRank = 0;

void putLe(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t getLe(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void barrierConnect(const std::string& host, int port, uint32_t rank, const std::string& token) {
  if (port <= 0 || port > 65535) COMMCOST_FAIL("BARRIER", "barrierConnect", "invalid port " + std::to_string(port));
  if (token.size() != kBarrierTokenBytes) {
    COMMCOST_FAIL("BARRIER", "barrierConnect",
                  "the session secret must be " + std::to_string(kBarrierTokenBytes) + " characters, got " + std::to_string(token.size()));
  }
  addrinfo hints;
  std::memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (gai != 0) {
    COMMCOST_FAIL("BARRIER", "barrierConnect", "cannot resolve barrier host '" + host + "': " + gai_strerror(gai));
  }
  int fd = -1;
  std::string lastError = "no address";
  for (addrinfo* a = list; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      lastError = std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    lastError = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(list);
  if (fd < 0) {
    COMMCOST_FAIL("BARRIER", "barrierConnect",
                  "cannot connect to the barrier server " + host + ":" + std::to_string(port) + ": " + lastError);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // The hello: magic 'CCBH', rank, the session's secret; the server closes a connection without it.
  unsigned char hello[8 + kBarrierTokenBytes];
  putLe(hello, kBarrierHelloMagic, 4);
  putLe(hello + 4, rank, 4);
  std::memcpy(hello + 8, token.data(), kBarrierTokenBytes);
  size_t sent = 0;
  while (sent < sizeof hello) {
    ssize_t w = send(fd, hello + sent, sizeof hello - sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      COMMCOST_FAIL("BARRIER", "barrierConnect", "cannot send the hello to the barrier server " + host + ":" + std::to_string(port) + ": " + why);
    }
    sent += static_cast<size_t>(w);
  }
  std::lock_guard<std::mutex> lock(barrierMutex);
  if (barrierFd >= 0) close(barrierFd);
  barrierFd = fd;
  barrierRank = rank;
}

uint64_t barrierWait(uint64_t gen) {
  std::lock_guard<std::mutex> lock(barrierMutex);
  if (barrierFd < 0) COMMCOST_FAIL("BARRIER", "barrierWait", "no barrier connection: call barrierConnect first");
  const bool shm = shmBarrierAttached();
  unsigned char out[16];
  putLe(out, shm ? kBarrierNoticeMagic : kBarrierMagic, 4);
  putLe(out + 4, barrierRank, 4);
  putLe(out + 8, gen, 8);
  size_t sent = 0;
  while (sent < sizeof out) {
    ssize_t w = send(barrierFd, out + sent, sizeof out - sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      COMMCOST_FAIL("BARRIER", "barrierWait",
                    "cannot send to the barrier server (gen " + std::to_string(gen) + "): " + std::strerror(errno));
    }
    sent += static_cast<size_t>(w);
  }
  if (shm) return shmBarrierWait(gen);
  unsigned char in[8];
  size_t got = 0;
  while (got < sizeof in) {
    ssize_t r = recv(barrierFd, in + got, sizeof in - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      COMMCOST_FAIL("BARRIER", "barrierWait",
                    "the coordinator closed the barrier connection while rank waited at gen " + std::to_string(gen));
    }
    if (r < 0) {
      COMMCOST_FAIL("BARRIER", "barrierWait",
                    "barrier receive failed at gen " + std::to_string(gen) + ": " + std::strerror(errno));
    }
    got += static_cast<size_t>(r);
  }
  uint64_t releaseNs = monotonicNs();
  uint64_t echoed = getLe(in, 8);
  if (echoed != gen) {
    COMMCOST_FAIL("BARRIER", "barrierWait",
                  "barrier gen mismatch: waited at " + std::to_string(gen) + ", coordinator released " +
                      std::to_string(echoed));
  }
  return releaseNs;
}

}  // namespace commcost
