/*
 * simProfiler.c: the profiler-plugin region: NCCL_PROFILER_PLUGIN loaded and called the way NCCL does
 * (init at creation, GroupApi/CollApi spans around each allreduce, finalize at teardown).
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Profiler plugin (NCCL_PROFILER_PLUGIN), loaded and called the way NCCL does                   */

/* Loaded at the first communicator's init and closed (dlclose) when the last one that loaded it
 * is finalized, as NCCL does (src/plugin/profiler.cc: a reference count per communicator,
 * ncclProfilerPluginUnload closes the library at zero; the next init loads it again). A plugin
 * whose static state must outlive that has to pin itself. */
static struct { pthread_mutex_t lock; int refs; void* lib; int abi; ccProfilerV6* v6; ccProfilerV5* v5; ccProfilerV4* v4; } prof = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0, NULL, NULL, NULL };

static void profLoad(void) {
  const char* name = getenv("NCCL_PROFILER_PLUGIN");
  int version = settings()->version;
  if (!name || !*name || strcasecmp(name, "none") == 0 || version < 22703) return;
  char path[1024];
  if (!strchr(name, '/') && strncmp(name, "lib", 3) != 0) snprintf(path, sizeof path, "libnccl-profiler-%s.so", name);
  else snprintf(path, sizeof path, "%s", name);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "ncclsim: PROFILER/Plugin: %s: %s\n", path, dlerror()); return; }
  /* v7: only with the test knob COMMCOST_SIM_PROFILER_ABI=7 (which NCCL release first takes v7 is
   * not confirmed here; the knob makes no claim about one). Its table is v6's but for the descriptor. */
  const char* abi = getenv("COMMCOST_SIM_PROFILER_ABI");
  if (abi && *abi && strcmp(abi, "7") != 0)
    fprintf(stderr, "ncclsim: COMMCOST_SIM_PROFILER_ABI=%s is not understood (only 7, to offer ncclProfiler_v7 first); ignored\n", abi);
  if (abi && strcmp(abi, "7") == 0 && (prof.v6 = (ccProfilerV6*)dlsym(lib, "ncclProfiler_v7"))) prof.abi = 7;
  else if (version >= 22902 && (prof.v6 = (ccProfilerV6*)dlsym(lib, "ncclProfiler_v6"))) prof.abi = 6;
  else if (version >= 22803 && (prof.v5 = (ccProfilerV5*)dlsym(lib, "ncclProfiler_v5"))) prof.abi = 5;
  else if ((prof.v4 = (ccProfilerV4*)dlsym(lib, "ncclProfiler_v4"))) prof.abi = 4;
  else { fprintf(stderr, "ncclsim: PROFILER/Plugin: %s exports no version this library knows\n", path); dlclose(lib); return; }
  prof.lib = lib;
}

/* Drops one communicator's reference; the last one closes the library. */
static void profUnref(void) {
  pthread_mutex_lock(&prof.lock);
  if (prof.refs > 0 && --prof.refs == 0 && prof.lib) {
    dlclose(prof.lib);
    prof.lib = NULL; prof.abi = 0; prof.v6 = NULL; prof.v5 = NULL; prof.v4 = NULL;
  }
  pthread_mutex_unlock(&prof.lock);
}

/* init: at creation, after the rendezvous (bootstrap) and before the connect. */
void profInit(ncclComm_t c) {
  pthread_mutex_lock(&prof.lock);
  if (prof.refs == 0) profLoad();
  if (!prof.abi) { pthread_mutex_unlock(&prof.lock); return; }
  prof.refs++;
  pthread_mutex_unlock(&prof.lock);
  c->profRef = 1;
  void* ctx = NULL;
  int mask = 0, r;
  if (prof.abi >= 6) r = prof.v6->init(&ctx, c->tag, &mask, NULL, 1, c->nranks, c->rank, NULL);
  else if (prof.abi == 5) r = prof.v5->init(&ctx, c->tag, &mask, NULL, 1, c->nranks, c->rank, NULL);
  else r = prof.v4->init(&ctx, &mask, NULL, c->tag, 1, c->nranks, c->rank, NULL);
  if (r != 0) return; /* NCCL continues without the profiler (the reference is kept until teardown) */
  c->profCtx = ctx;
  c->profMask = mask;
}

static void* profStart(ncclComm_t c, int type, void* parent, const char* func, size_t count, uint64_t pTimer) {
  void* h = NULL;
  if (!c->profCtx) return NULL;
  if (prof.abi >= 5) {
    ccDescrV6 d;
    memset(&d, 0, sizeof d);
    d.type = (uint64_t)type; d.parentObj = parent; d.rank = c->rank;
    if (type == CC_EV_COLL_API) { d.collApi.func = func; d.collApi.count = count; d.collApi.datatype = "ncclFloat32"; }
    if (type == CC_EV_P2P_API) { d.p2pApi.func = func; d.p2pApi.count = count; d.p2pApi.datatype = "ncclFloat32"; }
    if (type == CC_EV_COLL) { d.coll.func = func; d.coll.count = count; d.coll.datatype = "ncclFloat32"; d.coll.algo = "RING"; d.coll.proto = "SIMPLE"; d.coll.parentGroup = parent; }
    if (type == CC_EV_P2P) { d.p2p.func = func; d.p2p.count = count; d.p2p.datatype = "ncclFloat32"; d.p2p.parentGroup = parent; }
    if (type == CC_EV_KERNEL_CH) d.kernelCh.pTimer = pTimer;
    if (prof.abi == 7) ((ccProfilerV7*)prof.v6)->startEvent(c->profCtx, &h, (ccDescrV7*)&d);
    else if (prof.abi == 6) prof.v6->startEvent(c->profCtx, &h, &d);
    else prof.v5->startEvent(c->profCtx, &h, (ccDescrV5*)&d);
  } else {
    ccDescrV4 d;
    memset(&d, 0, sizeof d);
    d.type = (uint8_t)type; d.parentObj = parent; d.rank = c->rank;
    if (type == CC_EV_COLL) { d.coll.func = func; d.coll.count = count; d.coll.datatype = "ncclFloat32"; d.coll.algo = "RING"; d.coll.proto = "SIMPLE"; }
    if (type == CC_EV_P2P) { d.p2p.func = func; d.p2p.count = count; d.p2p.datatype = "ncclFloat32"; }
    if (type == CC_EV_KERNEL_CH) d.kernelCh.pTimer = pTimer;
    prof.v4->startEvent(c->profCtx, &h, &d);
  }
  return h;
}

static void profStop(void* h) {
  if (!h) return;
  if (prof.abi >= 6) prof.v6->stopEvent(h); else if (prof.abi == 5) prof.v5->stopEvent(h); else prof.v4->stopEvent(h);
}

static void profState(void* h, int state, ccStateArgs* args) {
  if (!h) return;
  if (prof.abi >= 6) prof.v6->recordEventState(h, state, args);
  else if (prof.abi == 5) prof.v5->recordEventState(h, state, args);
  else prof.v4->recordEventState(h, state, args);
}



/* One ncclAllReduce seen by the plugin: GroupApi { CollApi } then the group launch (the lazy
 * connect of a communicator not yet connected, waited for here as NCCL does it on the host), with
 * Group { Coll { KernelCh } } around the launch where the mask asks for them. `enqueue` does the work. */
ncclResult_t profiledCollective(ncclComm_t c, size_t count, ncclResult_t (*enqueue)(void*), void* arg) {
  return profiledOp(c, "AllReduce", -1, count, enqueue, arg);
}

/* Any op as the plugin sees it: GroupApi { CollApi | P2pApi } then the launch, Group { Coll | P2p { KernelCh } };
 * a send/recv (`peer` >= 0) waits in the launch for its peer's lazy connect, a collective for the ring's. */
ncclResult_t profiledOp(ncclComm_t c, const char* func, int peer, size_t count, ncclResult_t (*enqueue)(void*), void* arg) {
  int m = c->profMask;
  int v5 = prof.abi >= 5;
  int p2p = peer >= 0;
  int apiEv = p2p ? CC_EV_P2P_API : CC_EV_COLL_API, opEv = p2p ? CC_EV_P2P : CC_EV_COLL;
  int deep = CC_EV_GROUP | CC_EV_COLL | CC_EV_P2P | CC_EV_PROXY_OP | CC_EV_PROXY_STEP | CC_EV_KERNEL_CH | CC_EV_NET_PLUGIN;
  void* groupApi = v5 && (m & (CC_EV_GROUP_API | apiEv | deep)) ? profStart(c, CC_EV_GROUP_API, NULL, NULL, 0, 0) : NULL;
  void* collApi = v5 && (m & (apiEv | deep)) ? profStart(c, apiEv, groupApi, func, count, 0) : NULL;
  profStop(collApi);
  profState(groupApi, CC_STATE_GROUP_END_API_START, NULL);
  int connectNow = opConnectsNow(c, p2p ? OP_SEND : OP_ALLREDUCE, peer);
  void* group = (m & deep) ? profStart(c, CC_EV_GROUP, NULL, NULL, 0, 0) : NULL;
  void* coll = (m & (deep & ~CC_EV_GROUP)) ? profStart(c, opEv, v5 ? collApi : group, func, count, 0) : NULL;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t gpu0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  void* kernel = (m & CC_EV_KERNEL_CH) ? profStart(c, CC_EV_KERNEL_CH, coll, NULL, 0, gpu0) : NULL;
  ncclResult_t r = enqueue(arg);
  if (r == ncclSuccess && connectNow) waitCommDrained(c); /* the lazy connect, inside the group launch */
  if (kernel) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ccStateArgs a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    profState(kernel, CC_STATE_KERNEL_CH_STOP, &a);
    profStop(kernel);
  }
  profStop(coll);
  profStop(group);
  profStop(groupApi);
  return r;
}

/* finalize: at the end of teardown (destroy or abort), once per communicator. */
void profFinalize(ncclComm_t c) {
  pthread_mutex_lock(&c->lock);
  void* ctx = c->profCtx;
  c->profCtx = NULL;
  pthread_mutex_unlock(&c->lock);
  int ref = c->profRef;
  c->profRef = 0;
  if (ctx) {
    if (prof.abi >= 6) prof.v6->finalize(ctx); else if (prof.abi == 5) prof.v5->finalize(ctx); else prof.v4->finalize(ctx);
  }
  if (ref) profUnref();
}

