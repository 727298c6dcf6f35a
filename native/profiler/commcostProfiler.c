/*
 * commcostProfiler.c: the commcost NCCL profiler plugin (libcommcost-profiler.so).
 *
 * Loaded by NCCL through NCCL_PROFILER_PLUGIN=<path of this file's .so>; `commcost trace` sets it.
 * Exports ncclProfiler_v7, _v6, _v5 and _v4: NCCL takes the newest it knows (v7 records what v6 does:
 * its only addition, the UserTag event, is neither asked for nor recorded).
 *
 * Per communicator (commId = NCCL's commHash, name, nranks, rank) it records, as JSON lines:
 *   init     when NCCL called init (after bootstrap and topology, before proxy and connection setup)
 *   connect  the first GroupApi span on it (v5+; v4: the first Group span): a blocking
 *            communicator's lazy connect runs inside it
 *   coll     the first collective's host span (v5+: CollApi; v4: Coll), its function and count;
 *            a first send or recv counts as the first collective (P2pApi; v4: P2p), its `fn` Send or Recv
 *   gpu      the first kernel-channel span in GPU globaltimer ns (only with COMMCOST_TRACE_GPU=1:
 *            asking NCCL for kernel-channel events adds proxy events)
 *   fin      when finalize was reached (end of teardown), with the number of collectives seen and
 *            the sum and max of their host spans (v5+)
 * plus one `proc` line per process (pid, host, the ABI version NCCL chose, the library's version, path
 * and whether it is commcost's simulated NCCL, the CUDA driver API version, the visible devices and
 * device 0's model, the NVIDIA driver version, the chained plugin, and `rt`: CLOCK_REALTIME ns stamped
 * with its `t`, for the cross-host timeline). Times are CLOCK_MONOTONIC ns
 * (the clock of Python's time.monotonic_ns()). Device memory: cuMemGetInfo's free bytes at init,
 * at the end of the connect span and at finalize when the CUDA driver is already loaded
 * (COMMCOST_TRACE_MEM=0 turns it off). ncclCommMemStats needs the communicator handle, which a
 * profiler plugin never receives, so it is not recorded here.
 *
 * Output: $COMMCOST_TRACE_DIR/<host>-<pid>.jsonl, opened O_APPEND; each line is complete and
 * written by one write(2), so the file can be read while the job runs, and a job that dies keeps
 * every line written so far. Without COMMCOST_TRACE_DIR nothing is written.
 *
 * Hot path: state per communicator is allocated at init; events only read a flag, take a
 * timestamp and update counters with atomics. Only the first event of each kind per communicator
 * writes a line. No lock is taken after init.
 *
 * Chaining: COMMCOST_TRACE_CHAIN_PLUGIN (the user's own NCCL_PROFILER_PLUGIN, set aside by
 * `commcost trace`) is dlopened and every call forwarded to it, at the same ABI version when it
 * has it, else v7 -> v6 (UserTag events not forwarded), v6 -> v5 (copy-engine events not forwarded)
 * or v5/v6/v7 -> v4 (API-level events not forwarded), the way NCCL itself adapts. A plugin that
 * exports only ncclProfiler_v7 is also chained when NCCL loads us at v6 or v5: their descriptors are
 * v7's without its newer members (same offsets), so they are forwarded as v7 ones, zero-filled
 * beyond the caller's size. A v4 caller is chained only to a v4 plugin. Its activation mask is added to ours.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profilerAbi.h"

#define EXPORT __attribute__((visibility("default")))
#define EV_MAGIC 0x43434556u
#define TRACE_FORMAT 1

/* ---------------------------------------------------------------------------------------- */
/* Process state (set up once, at the first init)                                             */

static pthread_mutex_t setupLock = PTHREAD_MUTEX_INITIALIZER;
static int outFd = -1;
static pid_t outPid = 0;
static int gpuEvents = 0, memEnabled = 1;
static atomic_ulong commSeq;
typedef int (*MemGetInfoFn)(size_t*, size_t*);
static MemGetInfoFn memGetInfo = NULL;
static char ncclLibPath[1024]; /* the library that called init (frames inside it are not call sites) */

static struct {
  void* lib;
  int abi; /* 7, 6, 5, 4, or 0 = none */
  ccProfilerV6* v6; /* v7, v6 or v5 table (the same but for startEvent's descriptor type) */
  ccProfilerV4* v4;
  char error[600];
} chain;

static uint64_t nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One complete line, one write(2). Lines longer than the buffer are cut and still closed. */
static void emit(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char* fmt, ...) {
  if (outFd < 0) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 2, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof buf - 3) n = (int)sizeof buf - 3;
  buf[n++] = '\n';
  ssize_t w;
  do { w = write(outFd, buf, (size_t)n); } while (w < 0 && errno == EINTR);
}

/* JSON string body of `s` (at most 120 characters; control characters dropped). */
static const char* jsonText(const char* s, char* out, size_t cap) {
  size_t j = 0;
  if (!s) s = "";
  for (size_t i = 0; s[i] && i < 120 && j + 7 < cap; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') { out[j++] = '\\'; out[j++] = (char)ch; }
    else if (ch >= 0x20) out[j++] = (char)ch;
  }
  out[j] = 0;
  return out;
}

/* The native call site: the first frame outside this plugin and the NCCL library, as a JSON
 * member `"site":{...}` (object path, absolute address, the object's load base, nearest symbol),
 * or an empty string. The host symbolises it to file:line where the object has debug info. */
static const char* nativeSite(char* out, size_t cap) {
  void* frames[48];
  int n = backtrace(frames, 48);
  Dl_info self;
  out[0] = 0;
  if (!dladdr((void*)nativeSite, &self)) return out;
  for (int i = 1; i < n; i++) {
    Dl_info f;
    if (!dladdr(frames[i], &f) || !f.dli_fname) continue;
    if (strcmp(f.dli_fname, self.dli_fname) == 0 || (ncclLibPath[0] && strcmp(f.dli_fname, ncclLibPath) == 0)) continue;
    char obj[300], sym[200];
    /* a return address: the call instruction is just before it */
    uintptr_t a = (uintptr_t)frames[i] - 1;
    snprintf(out, cap, ",\"site\":{\"obj\":\"%s\",\"addr\":\"0x%llx\",\"base\":\"0x%llx\",\"sym\":\"%s\",\"symOff\":\"0x%llx\"}",
             jsonText(f.dli_fname, obj, sizeof obj), (unsigned long long)a, (unsigned long long)(uintptr_t)f.dli_fbase,
             jsonText(f.dli_sname ? f.dli_sname : "", sym, sizeof sym),
             (unsigned long long)(f.dli_saddr ? a - (uintptr_t)f.dli_saddr : 0));
    return out;
  }
  return out;
}

static long long freeBytes(void) {
  size_t fr = 0, total = 0;
  if (!memEnabled || !memGetInfo) return -1;
  if (memGetInfo(&fr, &total) != 0) return -1;
  return (long long)fr;
}

/* The library that called init: its version and whether it is commcost's simulated NCCL. */
static void libraryFacts(void* caller, int* version, int* simulated) {
  *version = 0; *simulated = 0;
  Dl_info info;
  void* lib = NULL;
  if (caller && dladdr(caller, &info) && info.dli_fname) {
    lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    snprintf(ncclLibPath, sizeof ncclLibPath, "%s", info.dli_fname);
  }
  int (*getVersion)(int*) = NULL;
  if (lib) getVersion = (int (*)(int*))dlsym(lib, "ncclGetVersion");
  if (!getVersion) getVersion = (int (*)(int*))dlsym(RTLD_DEFAULT, "ncclGetVersion");
  if (getVersion) getVersion(version);
  int* sim = lib ? (int*)dlsym(lib, "commcostSimulated") : NULL;
  if (!sim) sim = (int*)dlsym(RTLD_DEFAULT, "commcostSimulated");
  *simulated = sim && *sim == 1;
  /* cuMemGetInfo only where the driver is already loaded: never load CUDA ourselves. */
  memGetInfo = lib ? (MemGetInfoFn)dlsym(lib, "cuMemGetInfo_v2") : NULL;
  if (!memGetInfo) memGetInfo = (MemGetInfoFn)dlsym(RTLD_DEFAULT, "cuMemGetInfo_v2");
  if (!memGetInfo) {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda) memGetInfo = (MemGetInfoFn)dlsym(cuda, "cuMemGetInfo_v2");
  }
  if (lib) dlclose(lib);
}

/* The environment stamp of the process (the `proc` record's env fields; once per process, at the first
 * init, when NCCL has initialised CUDA): the CUDA driver API version, the visible devices and device 0's
 * model (through the driver NCCL already loaded: never loaded here), the NVIDIA kernel driver version
 * from /proc/driver/nvidia/version ("" when absent). */
static void environmentFacts(int* cudaVersion, int* devices, char* model, size_t modelLen, char* driver, size_t driverLen) {
  *cudaVersion = 0; *devices = 0; model[0] = 0; driver[0] = 0;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* where = cuda ? cuda : RTLD_DEFAULT;
  int (*getVersion)(int*) = (int (*)(int*))dlsym(where, "cuDriverGetVersion");
  int (*getCount)(int*) = (int (*)(int*))dlsym(where, "cuDeviceGetCount");
  int (*getName)(char*, int, int) = (int (*)(char*, int, int))dlsym(where, "cuDeviceGetName");
  if (getVersion && getVersion(cudaVersion) != 0) *cudaVersion = 0;
  if (getCount && getCount(devices) != 0) *devices = 0;
  if (getName && *devices > 0 && getName(model, (int)modelLen, 0) != 0) model[0] = 0;
  model[modelLen - 1] = 0;
  if (cuda) dlclose(cuda);
  FILE* f = fopen("/proc/driver/nvidia/version", "r");
  if (f) {
    char line[512];
    if (fgets(line, sizeof line, f)) {
      /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Tue ..." or, the open modules,
         "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
         the first word after "Kernel Module" that is a version (a digit first, a dot in it). */
      const char* k = strstr(line, "Kernel Module");
      if (k) k += strlen("Kernel Module");
      while (k && *k) {
        while (*k == ' ' || *k == '\t') k++;
        size_t w = 0;
        while (k[w] && k[w] != ' ' && k[w] != '\t' && k[w] != '\n') w++;
        if (w == 0) break;
        if (k[0] >= '0' && k[0] <= '9' && memchr(k, '.', w) != NULL) {
          size_t n = w < driverLen - 1 ? w : driverLen - 1;
          memcpy(driver, k, n);
          driver[n] = 0;
          break;
        }
        k += w;
      }
    }
    fclose(f);
  }
}

static void loadChain(int abi) {
  const char* name = getenv("COMMCOST_TRACE_CHAIN_PLUGIN");
  chain.abi = 0;
  if (!name || !*name || strcasecmp(name, "none") == 0) return;
  char path[512];
  if (!strchr(name, '/') && !(strncmp(name, "lib", 3) == 0 && strlen(name) > 3 && strcmp(name + strlen(name) - 3, ".so") == 0))
    snprintf(path, sizeof path, "libnccl-profiler-%s.so", name);
  else
    snprintf(path, sizeof path, "%s", name);
  chain.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!chain.lib) { snprintf(chain.error, sizeof chain.error, "dlopen %s: %s", path, dlerror()); return; }
  /* Never chain to ourselves (the user's variable pointing at commcost's own plugin). */
  if (dlsym(chain.lib, "commcostProfilerFormat")) { snprintf(chain.error, sizeof chain.error, "%s is commcost's own plugin", path); dlclose(chain.lib); chain.lib = NULL; return; }
  if (abi >= 7 && (chain.v6 = (ccProfilerV6*)dlsym(chain.lib, "ncclProfiler_v7"))) chain.abi = 7;
  else if (abi >= 6 && (chain.v6 = (ccProfilerV6*)dlsym(chain.lib, "ncclProfiler_v6"))) chain.abi = 6;
  else if (abi >= 5 && (chain.v6 = (ccProfilerV6*)dlsym(chain.lib, "ncclProfiler_v5"))) chain.abi = 5;
  else if (abi >= 5 && (chain.v6 = (ccProfilerV6*)dlsym(chain.lib, "ncclProfiler_v7"))) chain.abi = 7; /* v6/v5 caller, v7-only plugin */
  else if ((chain.v4 = (ccProfilerV4*)dlsym(chain.lib, "ncclProfiler_v4"))) chain.abi = 4;
  else snprintf(chain.error, sizeof chain.error, "%s exports no ncclProfiler_v%d..v4", path, abi);
}

EXPORT int commcostProfilerFormat = TRACE_FORMAT;

/* Keeps this library loaded for the life of the process. NCCL dlcloses its profiler plugin when
 * the last communicator that loaded it is finalized and dlopens it again at the next creation
 * (src/plugin/profiler.cc, ncclProfilerPluginUnload); without the pin, a process that makes and
 * destroys one communicator at a time (a weight-sync group per sync) would start each load with
 * fresh static state: communicator numbers from 1 again, the `proc` line again, and its records
 * of earlier communicators would be taken for the later ones' (seen on NCCL 2.28.9, 1×H200). The
 * handle is never closed; RTLD_NODELETE also keeps the object if it were. */
static void pinSelf(void) {
  static int pinned;
  if (pinned) return;
  Dl_info self;
  if (dladdr((void*)pinSelf, &self) && self.dli_fname) pinned = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != NULL;
}

/* Opens the output and writes the `proc` line, once per process (again after a fork). */
static void setupProcess(int abi, void* caller) {
  pthread_mutex_lock(&setupLock);
  pinSelf();
  pid_t pid = getpid();
  if (outPid != pid) {
    if (outFd >= 0) close(outFd);
    outFd = -1;
    outPid = pid;
    const char* gpu = getenv("COMMCOST_TRACE_GPU");
    gpuEvents = gpu && strcmp(gpu, "1") == 0;
    const char* mem = getenv("COMMCOST_TRACE_MEM");
    memEnabled = !(mem && strcmp(mem, "0") == 0);
    if (chain.lib == NULL && chain.error[0] == 0) loadChain(abi); /* a forked child keeps its parent's */
    const char* dir = getenv("COMMCOST_TRACE_DIR");
    char host[128] = "host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    for (char* p = host; *p; p++) if (*p == '/') *p = '_';
    if (dir && *dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s-%d.jsonl", dir, host, (int)pid);
      outFd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    int version, simulated;
    libraryFacts(caller, &version, &simulated);
    /* The wall clock beside the monotonic one, stamped together (the monotonic stamp is the middle
     * of two around the wall-clock read): merge.ts puts the timelines of several hosts on one axis
     * from these pairs. Only once per process, never on the hot path. */
    uint64_t m0 = nowNs();
    struct timespec rts;
    clock_gettime(CLOCK_REALTIME, &rts);
    uint64_t m1 = nowNs();
    unsigned long long rt = (unsigned long long)rts.tv_sec * 1000000000ull + (unsigned long long)rts.tv_nsec;
    char h[260], cn[260], ce[420], model[128], driver[64], jm[260], jd[140], jp[2100];
    int cudaVersion, devices;
    environmentFacts(&cudaVersion, &devices, model, sizeof model, driver, sizeof driver);
    emit("{\"k\":\"proc\",\"f\":%d,\"pid\":%d,\"host\":\"%s\",\"abi\":%d,\"nccl\":%d,\"sim\":%s,\"t\":%llu,\"rt\":%llu,\"chain\":\"%s\",\"chainAbi\":%d,\"chainError\":\"%s\",\"gpu\":%s,"
         "\"ncclPath\":\"%s\",\"cuda\":%d,\"devices\":%d,\"model\":\"%s\",\"driver\":\"%s\"}",
         TRACE_FORMAT, (int)pid, jsonText(host, h, sizeof h), abi, version, simulated ? "true" : "false",
         (unsigned long long)(m0 + (m1 - m0) / 2), rt, jsonText(getenv("COMMCOST_TRACE_CHAIN_PLUGIN"), cn, sizeof cn), chain.abi,
         jsonText(chain.error, ce, sizeof ce), gpuEvents ? "true" : "false", jsonText(ncclLibPath, jp, sizeof jp), cudaVersion, devices,
         jsonText(model, jm, sizeof jm), jsonText(driver, jd, sizeof jd));
  }
  pthread_mutex_unlock(&setupLock);
}

/* ---------------------------------------------------------------------------------------- */
/* Communicators and events                                                                   */

enum { K_NONE = 0, K_FIRST_GROUP, K_FIRST_COLL, K_LATER_COLL, K_FIRST_GPU };

typedef struct Comm Comm;
typedef struct Ev {
  char site[700]; /* first-of-kind events only: where the first collective was called */
  uint32_t magic;
  uint8_t kind, heap;
  Comm* comm;
  void* chain; /* the chained plugin's handle */
  uint64_t t0;
  uint64_t gpu0;
} Ev;

struct Comm {
  unsigned long seq;
  int abi;
  void* chainCtx;
  atomic_int groupClaimed, collClaimed, gpuClaimed;
  atomic_ulong colls, collNs, collMaxNs, groups;
  Ev firstGroup, firstColl, firstGpu;
};

static __thread Ev laterColl; /* CollApi start and stop are adjacent on the calling thread */

static int claim(atomic_int* flag) {
  if (atomic_load_explicit(flag, memory_order_relaxed)) return 0;
  int expected = 0;
  return atomic_compare_exchange_strong(flag, &expected, 1);
}

static int ourMask(int abi) {
  int m = abi >= 5 ? (CC_EV_GROUP_API | CC_EV_COLL_API | CC_EV_P2P_API) : (CC_EV_GROUP | CC_EV_COLL | CC_EV_P2P);
  if (gpuEvents) m |= CC_EV_KERNEL_CH;
  return m;
}

static ccNcclResult initCommon(int abi, void** ctx, uint64_t commId, int* mask, const char* name, int nNodes, int nranks,
                               int rank, ccNcclLogger log, void* caller) {
  uint64_t t = nowNs();
  setupProcess(abi, caller);
  Comm* c = (Comm*)calloc(1, sizeof *c);
  if (!c) return 1; /* ncclSystemError-like: NCCL continues without the profiler */
  c->seq = atomic_fetch_add(&commSeq, 1) + 1;
  c->abi = abi;
  int m = ourMask(abi);
  if (chain.abi) {
    int cm = 0;
    ccNcclResult r = chain.abi == 4 ? chain.v4->init(&c->chainCtx, &cm, name, commId, nNodes, nranks, rank, log)
                                    : chain.v6->init(&c->chainCtx, commId, &cm, name, nNodes, nranks, rank, log);
    if (r == 0) m |= cm;
    else c->chainCtx = NULL;
  }
  *mask = m;
  *ctx = c;
  char nm[260], site[700];
  emit("{\"k\":\"init\",\"i\":%lu,\"c\":\"%016llx\",\"name\":\"%s\",\"nranks\":%d,\"rank\":%d,\"nNodes\":%d,\"t\":%llu,\"tid\":%d,\"free\":%lld%s}",
       c->seq, (unsigned long long)commId, jsonText(name, nm, sizeof nm), nranks, rank, nNodes, (unsigned long long)t,
       (int)gettid(), freeBytes(), nativeSite(site, sizeof site));
  return 0;
}

static int chainOn(Comm* c) { return chain.abi && c->chainCtx; }

/* Translates a parent handle NCCL gave us into the chained plugin's (ours are Ev). */
static void* chainParent(void* parent, int mayBeForeign) {
  if (!parent || mayBeForeign) return parent;
  Ev* p = (Ev*)parent;
  return p->magic == EV_MAGIC ? p->chain : NULL;
}

/* Our part of startEvent: which record this event feeds. */
static int classify(Comm* c, uint64_t type) {
  int v5 = c->abi >= 5;
  if (type == (uint64_t)(v5 ? CC_EV_GROUP_API : CC_EV_GROUP)) {
    atomic_fetch_add_explicit(&c->groups, 1, memory_order_relaxed);
    return claim(&c->groupClaimed) ? K_FIRST_GROUP : K_NONE;
  }
  /* A send or recv is a first use too (pipeline stages, prefill/decode pairs): P2pApi (v5+), P2p (v4). */
  if (type == (uint64_t)(v5 ? CC_EV_COLL_API : CC_EV_COLL) || type == (uint64_t)(v5 ? CC_EV_P2P_API : CC_EV_P2P)) {
    atomic_fetch_add_explicit(&c->colls, 1, memory_order_relaxed);
    if (claim(&c->collClaimed)) return K_FIRST_COLL;
    return v5 ? K_LATER_COLL : K_NONE; /* v4 Coll events of one plan overlap: counted, not timed */
  }
  if (type == CC_EV_KERNEL_CH && gpuEvents) return claim(&c->gpuClaimed) ? K_FIRST_GPU : K_NONE;
  return K_NONE;
}

static Ev* ourEvent(Comm* c, int kind) {
  switch (kind) {
  case K_FIRST_GROUP: return &c->firstGroup;
  case K_FIRST_COLL: return &c->firstColl;
  case K_FIRST_GPU: return &c->firstGpu;
  case K_LATER_COLL: return &laterColl;
  default: return NULL;
  }
}

static void startOurs(Ev* e, Comm* c, int kind, uint64_t gpuStart, const char* func, size_t count, const char* dtype) {
  e->magic = EV_MAGIC;
  e->kind = (uint8_t)kind;
  e->comm = c;
  e->t0 = nowNs();
  e->gpu0 = gpuStart;
  if (kind == K_FIRST_GROUP) nativeSite(e->site, sizeof e->site);
  if (kind == K_FIRST_COLL) {
    char f[260], d[260];
    emit("{\"k\":\"collStart\",\"i\":%lu,\"t\":%llu,\"fn\":\"%s\",\"count\":%zu,\"dt\":\"%s\"}", c->seq,
         (unsigned long long)e->t0, jsonText(func, f, sizeof f), count, jsonText(dtype, d, sizeof d));
  }
}

static void stopOurs(Ev* e) {
  uint64_t t1 = nowNs();
  Comm* c = e->comm;
  switch (e->kind) {
  case K_FIRST_GROUP:
    emit("{\"k\":\"connect\",\"i\":%lu,\"t0\":%llu,\"t1\":%llu,\"tid\":%d,\"free\":%lld%s}", c->seq, (unsigned long long)e->t0,
         (unsigned long long)t1, (int)gettid(), freeBytes(), e->site);
    break;
  case K_FIRST_COLL:
    emit("{\"k\":\"coll\",\"i\":%lu,\"t0\":%llu,\"t1\":%llu}", c->seq, (unsigned long long)e->t0, (unsigned long long)t1);
    __attribute__((fallthrough)); /* the first collective counts in the sums too */
  case K_LATER_COLL: {
    unsigned long d = (unsigned long)(t1 - e->t0);
    atomic_fetch_add_explicit(&c->collNs, d, memory_order_relaxed);
    unsigned long prev = atomic_load_explicit(&c->collMaxNs, memory_order_relaxed);
    while (d > prev && !atomic_compare_exchange_weak(&c->collMaxNs, &prev, d)) {}
    break;
  }
  default: break;
  }
}

/* startEvent for v5, v6 and v7 callers: `size` is the caller's descriptor size (v5's is smaller;
 * v7's is v6's, its UserTag member read by neither). */
static ccNcclResult startApi(void* ctx, void** handle, const ccDescrV6* d, size_t size) {
  Comm* c = (Comm*)ctx;
  *handle = NULL;
  if (!c) return 0;
  int kind = classify(c, d->type);
  const char* func = d->type == CC_EV_COLL_API ? d->collApi.func : d->type == CC_EV_COLL ? d->coll.func
                   : d->type == CC_EV_P2P_API ? d->p2pApi.func : d->type == CC_EV_P2P ? d->p2p.func : NULL;
  size_t count = d->type == CC_EV_COLL_API ? d->collApi.count : d->type == CC_EV_COLL ? d->coll.count
               : d->type == CC_EV_P2P_API ? d->p2pApi.count : d->type == CC_EV_P2P ? d->p2p.count : 0;
  const char* dtype = d->type == CC_EV_COLL_API ? d->collApi.datatype : d->type == CC_EV_COLL ? d->coll.datatype
                    : d->type == CC_EV_P2P_API ? d->p2pApi.datatype : d->type == CC_EV_P2P ? d->p2p.datatype : NULL;
  uint64_t gpu0 = d->type == CC_EV_KERNEL_CH ? d->kernelCh.pTimer : 0;
  if (!chainOn(c)) {
    Ev* e = ourEvent(c, kind);
    if (e) { startOurs(e, c, kind, gpu0, func, count, dtype); *handle = e; }
    return 0;
  }
  Ev* e = (Ev*)calloc(1, sizeof *e);
  if (!e) return 0;
  startOurs(e, c, kind, gpu0, func, count, dtype);
  e->heap = 1;
  int foreign = d->type == CC_EV_PROXY_OP && d->proxyOp.pid != getpid();
  if (chain.abi >= 5) {
    /* An event type newer than the chained version is not forwarded (v7's UserTag to v6, CE to v5). */
    if (!(chain.abi == 5 && d->type >= CC_EV_CE_COLL) && !(chain.abi == 6 && d->type > CC_EV_CE_BATCH)) {
      ccDescrV6 fwd;
      memset(&fwd, 0, sizeof fwd);
      memcpy(&fwd, d, size);
      fwd.parentObj = chainParent(d->parentObj, foreign);
      if (d->type == CC_EV_COLL) fwd.coll.parentGroup = chainParent(d->coll.parentGroup, 0);
      if (d->type == CC_EV_P2P) fwd.p2p.parentGroup = chainParent(d->p2p.parentGroup, 0);
      if (chain.abi == 7) ((ccProfilerV7*)chain.v6)->startEvent(c->chainCtx, &e->chain, (ccDescrV7*)&fwd);
      else if (chain.abi == 6) chain.v6->startEvent(c->chainCtx, &e->chain, &fwd);
      else ((ccProfilerV5*)chain.v6)->startEvent(c->chainCtx, &e->chain, (ccDescrV5*)&fwd);
    }
  } else if (d->type <= CC_EV_NET_PLUGIN) { /* v4 knows no API-level or copy-engine events */
    ccDescrV4 v4;
    memset(&v4, 0, sizeof v4);
    v4.type = (uint8_t)d->type;
    v4.rank = d->rank;
    v4.parentObj = chainParent(d->parentObj, foreign);
    switch (d->type) {
    case CC_EV_COLL:
      memcpy(&v4.coll, &d->coll, sizeof v4.coll);
      v4.parentObj = chainParent(d->coll.parentGroup, 0);
      break;
    case CC_EV_P2P:
      memcpy(&v4.p2p, &d->p2p, sizeof v4.p2p);
      v4.parentObj = chainParent(d->p2p.parentGroup, 0);
      break;
    case CC_EV_PROXY_OP: v4.proxyOp = d->proxyOp; break;
    case CC_EV_PROXY_STEP: v4.proxyStep = d->proxyStep; break;
    case CC_EV_KERNEL_CH: v4.kernelCh = d->kernelCh; break;
    case CC_EV_NET_PLUGIN: v4.netPlugin = d->netPlugin; break;
    default: break;
    }
    chain.v4->startEvent(c->chainCtx, &e->chain, &v4);
  }
  *handle = e;
  return 0;
}

static ccNcclResult startV7(void* ctx, void** handle, ccDescrV7* d) { return startApi(ctx, handle, (const ccDescrV6*)d, sizeof *d); }
static ccNcclResult startV6(void* ctx, void** handle, ccDescrV6* d) { return startApi(ctx, handle, d, sizeof *d); }
static ccNcclResult startV5(void* ctx, void** handle, ccDescrV5* d) { return startApi(ctx, handle, (const ccDescrV6*)d, sizeof *d); }

static ccNcclResult startV4(void* ctx, void** handle, ccDescrV4* d) {
  Comm* c = (Comm*)ctx;
  *handle = NULL;
  if (!c) return 0;
  int kind = classify(c, d->type);
  const char* func = d->type == CC_EV_COLL ? d->coll.func : d->type == CC_EV_P2P ? d->p2p.func : NULL;
  size_t count = d->type == CC_EV_COLL ? d->coll.count : d->type == CC_EV_P2P ? d->p2p.count : 0;
  const char* dtype = d->type == CC_EV_COLL ? d->coll.datatype : d->type == CC_EV_P2P ? d->p2p.datatype : NULL;
  uint64_t gpu0 = d->type == CC_EV_KERNEL_CH ? d->kernelCh.pTimer : 0;
  if (!chainOn(c)) {
    Ev* e = ourEvent(c, kind);
    if (e) { startOurs(e, c, kind, gpu0, func, count, dtype); *handle = e; }
    return 0;
  }
  Ev* e = (Ev*)calloc(1, sizeof *e);
  if (!e) return 0;
  startOurs(e, c, kind, gpu0, func, count, dtype);
  e->heap = 1;
  ccDescrV4 fwd = *d;
  fwd.parentObj = chainParent(d->parentObj, d->type == CC_EV_PROXY_OP && d->proxyOp.pid != getpid());
  chain.v4->startEvent(c->chainCtx, &e->chain, &fwd); /* a v4 call is only chained to a v4 plugin */
  *handle = e;
  return 0;
}

static ccNcclResult stopEvent(void* handle) {
  Ev* e = (Ev*)handle;
  if (!e || e->magic != EV_MAGIC) return 0;
  stopOurs(e);
  if (e->heap) {
    if (e->chain) { if (chain.abi == 4) chain.v4->stopEvent(e->chain); else chain.v6->stopEvent(e->chain); }
    e->magic = 0;
    free(e);
  }
  return 0;
}

static ccNcclResult recordState(void* handle, int state, ccStateArgs* args) {
  Ev* e = (Ev*)handle;
  if (!e || e->magic != EV_MAGIC) return 0;
  if (state == CC_STATE_KERNEL_CH_STOP && e->kind == K_FIRST_GPU && args) {
    emit("{\"k\":\"gpu\",\"i\":%lu,\"ns\":%llu}", e->comm->seq, (unsigned long long)(args->kernelCh.pTimer - e->gpu0));
  }
  if (e->heap && e->chain) {
    if (chain.abi == 4) {
      if (state < CC_STATE_GROUP_START_API_STOP) chain.v4->recordEventState(e->chain, state, args);
    } else {
      chain.v6->recordEventState(e->chain, state, args);
    }
  }
  return 0;
}

static ccNcclResult finalizeComm(void* ctx) {
  Comm* c = (Comm*)ctx;
  if (!c) return 0;
  uint64_t t = nowNs();
  char site[700];
  emit("{\"k\":\"fin\",\"i\":%lu,\"t\":%llu,\"tid\":%d,\"colls\":%lu,\"collNs\":%lu,\"collMaxNs\":%lu,\"groups\":%lu,\"free\":%lld%s}", c->seq,
       (unsigned long long)t, (int)gettid(), atomic_load(&c->colls), atomic_load(&c->collNs), atomic_load(&c->collMaxNs),
       atomic_load(&c->groups), freeBytes(), nativeSite(site, sizeof site));
  if (chainOn(c)) { if (chain.abi == 4) chain.v4->finalize(c->chainCtx); else chain.v6->finalize(c->chainCtx); }
  free(c);
  return 0;
}

static ccNcclResult initV7(void** ctx, uint64_t commId, int* mask, const char* name, int nNodes, int nranks, int rank, ccNcclLogger log) {
  return initCommon(7, ctx, commId, mask, name, nNodes, nranks, rank, log, __builtin_return_address(0));
}
static ccNcclResult initV6(void** ctx, uint64_t commId, int* mask, const char* name, int nNodes, int nranks, int rank, ccNcclLogger log) {
  return initCommon(6, ctx, commId, mask, name, nNodes, nranks, rank, log, __builtin_return_address(0));
}
static ccNcclResult initV5(void** ctx, uint64_t commId, int* mask, const char* name, int nNodes, int nranks, int rank, ccNcclLogger log) {
  return initCommon(5, ctx, commId, mask, name, nNodes, nranks, rank, log, __builtin_return_address(0));
}
static ccNcclResult initV4(void** ctx, int* mask, const char* name, uint64_t commHash, int nNodes, int nranks, int rank, ccNcclLogger log) {
  return initCommon(4, ctx, commHash, mask, name, nNodes, nranks, rank, log, __builtin_return_address(0));
}

EXPORT ccProfilerV7 ncclProfiler_v7 = { "commcost", initV7, startV7, stopEvent, recordState, finalizeComm };
EXPORT ccProfilerV6 ncclProfiler_v6 = { "commcost", initV6, startV6, stopEvent, recordState, finalizeComm };
EXPORT ccProfilerV5 ncclProfiler_v5 = { "commcost", initV5, startV5, stopEvent, recordState, finalizeComm };
EXPORT ccProfilerV4 ncclProfiler_v4 = { "commcost", initV4, startV4, stopEvent, recordState, finalizeComm };
