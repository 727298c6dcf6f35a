/*
 * The outside anchors of the barrier benchmark (bench.ts), compiled at bench time with `cc`:
 *
 *   cBarrier server <world> <gens>   a TCP star barrier in C with the coordinator's wire protocol
 *       (remote-agent/barrierServer.ts): reads the session secret from COMMCOST_BARRIER_TOKEN,
 *       listens on 127.0.0.1, prints its port on stdout, accepts <world> ranks (hello: u32
 *       0x48424343, u32 rank, 32-byte secret), then for <gens> generations reads every rank's
 *       16-byte arrival and writes the 8-byte release to every rank back to back, in rank order.
 *   cBarrier rtt <count>             the loopback floor: one 8-byte message there and back between
 *       two processes over TCP on 127.0.0.1 (NODELAY), <count> times; prints the round trips as a
 *       JSON array of µs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(2);
}

static void full(int fd, void* p, size_t n, int writing) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = writing ? write(fd, (char*)p + done, n - done) : read(fd, (char*)p + done, n - done);
    if (r <= 0) die(writing ? "write" : "read");
    done += (size_t)r;
  }
}

static int listener(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr*)&a, sizeof a) || listen(fd, 128)) die("listen");
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr*)&a, &len);
  *port = ntohs(a.sin_port);
  return fd;
}

static void nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static uint32_t le32(const unsigned char* p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static int server(int world, long gens) {
  const char* token = getenv("COMMCOST_BARRIER_TOKEN");
  if (!token || strlen(token) != 32) {
    fprintf(stderr, "COMMCOST_BARRIER_TOKEN must hold the 32-character session secret\n");
    return 2;
  }
  int port;
  int lfd = listener(&port);
  printf("%d\n", port);
  fflush(stdout);
  int* fds = calloc((size_t)world, sizeof(int));
  for (int i = 0; i < world; i++) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) die("accept");
    nodelay(fd);
    unsigned char hello[40];
    full(fd, hello, sizeof hello, 0);
    uint32_t rank = le32(hello + 4);
    if (le32(hello) != 0x48424343 || memcmp(hello + 8, token, 32) != 0 || rank >= (uint32_t)world || fds[rank]) {
      fprintf(stderr, "refused a hello\n");
      return 2;
    }
    fds[rank] = fd;
  }
  for (long g = 1; g <= gens; g++) {
    // A star: the release waits for every arrival, so reading them in rank order costs nothing.
    for (int r = 0; r < world; r++) {
      unsigned char arrive[16];
      full(fds[r], arrive, sizeof arrive, 0);
      if (le32(arrive) != 0x52424343 || le32(arrive + 4) != (uint32_t)r) {
        fprintf(stderr, "bad arrival from rank %d\n", r);
        return 2;
      }
    }
    unsigned char release[8];
    for (int i = 0; i < 8; i++) release[i] = (unsigned char)((uint64_t)g >> (8 * i));
    for (int r = 0; r < world; r++) full(fds[r], release, sizeof release, 1);
  }
  return 0;
}

static double nowUs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int rtt(long count) {
  int port;
  int lfd = listener(&port);
  pid_t child = fork();
  if (child == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr*)&a, sizeof a)) die("connect");
    nodelay(fd);
    unsigned char m[8];
    for (long i = 0; i < count; i++) {
      full(fd, m, 8, 0);
      full(fd, m, 8, 1);
    }
    _exit(0);
  }
  int fd = accept(lfd, NULL, NULL);
  nodelay(fd);
  unsigned char m[8] = {0};
  printf("[");
  for (long i = 0; i < count; i++) {
    double t0 = nowUs();
    full(fd, m, 8, 1);
    full(fd, m, 8, 0);
    printf("%s%.3f", i ? "," : "", nowUs() - t0);
  }
  printf("]\n");
  waitpid(child, NULL, 0);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "server") == 0) return server(atoi(argv[2]), atol(argv[3]));
  if (argc == 3 && strcmp(argv[1], "rtt") == 0) return rtt(atol(argv[2]));
  fprintf(stderr, "usage: cBarrier server <world> <gens> | cBarrier rtt <count>\n");
  return 2;
}
