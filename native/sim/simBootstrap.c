/*
 * simBootstrap.c: the rendezvous server that ncclGetUniqueId starts (once per process): it gathers
 * (tag, seq) arrivals of all ranks and sends every rank all payloads.
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Rendezvous server                                                                            */


typedef struct Pending {
  uint64_t tag, seq;
  uint32_t nranks, plen, arrived;
  int* fds;
  char* payloads;
  struct Pending* next;
} Pending;

static pthread_mutex_t serverLock = PTHREAD_MUTEX_INITIALIZER;
static Pending* pendings = NULL;
static int serverFd = -1;
uint16_t serverPort = 0;

static void* connectionThread(void* arg) {
  int fd = (int)(intptr_t)arg;
  RvHeader h;
  if (readAll(fd, &h, sizeof h) != 0 || h.nranks == 0 || h.nranks > 65536 || h.rank >= h.nranks ||
      h.plen > 4096) {
    close(fd);
    return NULL;
  }
  char payload[4096];
  if (h.plen && readAll(fd, payload, h.plen) != 0) { close(fd); return NULL; }

  pthread_mutex_lock(&serverLock);
  Pending* p = pendings;
  while (p && !(p->tag == h.tag && p->seq == h.seq)) p = p->next;
  if (!p) {
    p = (Pending*)calloc(1, sizeof *p);
    p->tag = h.tag; p->seq = h.seq; p->nranks = h.nranks; p->plen = h.plen;
    p->fds = (int*)malloc(sizeof(int) * h.nranks);
    for (uint32_t i = 0; i < h.nranks; i++) p->fds[i] = -1;
    p->payloads = (char*)calloc(h.nranks, h.plen ? h.plen : 1);
    p->next = pendings;
    pendings = p;
  }
  if (p->nranks != h.nranks || p->plen != h.plen || p->fds[h.rank] >= 0) {
    pthread_mutex_unlock(&serverLock);
    close(fd); /* inconsistent call: the client sees a closed socket */
    return NULL;
  }
  p->fds[h.rank] = fd;
  if (h.plen) memcpy(p->payloads + (size_t)h.rank * h.plen, payload, h.plen);
  p->arrived++;
  int complete = p->arrived == p->nranks;
  if (complete) {
    Pending** link = &pendings;
    while (*link != p) link = &(*link)->next;
    *link = p->next;
  }
  pthread_mutex_unlock(&serverLock);
  if (!complete) return NULL; /* the thread of the last arrival answers everyone */

  size_t total = (size_t)p->nranks * p->plen;
  for (uint32_t i = 0; i < p->nranks; i++) {
    uint32_t n = p->nranks;
    if (writeAll(p->fds[i], &n, sizeof n) == 0 && total) writeAll(p->fds[i], p->payloads, total);
    close(p->fds[i]);
  }
  free(p->fds); free(p->payloads); free(p);
  return NULL;
}

static void* acceptThread(void* arg) {
  (void)arg;
  for (;;) {
    int fd = accept(serverFd, NULL, NULL);
    if (fd < 0) { if (errno == EINTR || errno == ECONNABORTED) continue; sleepMs(10); continue; }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    if (pthread_create(&t, &attr, connectionThread, (void*)(intptr_t)fd) != 0) close(fd);
    pthread_attr_destroy(&attr);
  }
  return NULL;
}

/* Starts the server once per process on addr (network order):<ephemeral>; on failure *err = errno. */
int ensureServer(uint32_t addr, int* err) {
  pthread_mutex_lock(&serverLock);
  int ok = serverFd >= 0;
  *err = 0;
  if (!ok) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = addr;
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd >= 0 && bind(fd, (struct sockaddr*)&a, sizeof a) == 0 && listen(fd, 1024) == 0 &&
        getsockname(fd, (struct sockaddr*)&a, &len) == 0) {
      pthread_t t;
      serverFd = fd;
      serverPort = ntohs(a.sin_port);
      int rc = pthread_create(&t, NULL, acceptThread, NULL);
      if (rc == 0) {
        pthread_detach(t);
        ok = 1;
      } else {
        *err = rc;
        close(fd); serverFd = -1;
      }
    } else {
      *err = errno;
      if (fd >= 0) close(fd);
    }
  }
  pthread_mutex_unlock(&serverLock);
  return ok;
}

