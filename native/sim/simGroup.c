/*
 * simGroup.c: ncclGroupStart/End and the creations they defer, as NCCL's group.cc does them.
 *
 * NCCL counts a per-thread group depth. A creation called while it is above 0 (ncclCommInitRank,
 * ncclCommInitRankConfig, ncclCommSplit) only queues its work and returns ncclSuccess with the
 * communicator pointer already set (not usable yet); the outermost ncclGroupEnd runs every queued
 * creation, each on its own thread (so one thread can create the k ranks of a communicator), and
 * returns when all are done — or, when the group's communicators are non-blocking
 * (config.blocking = 0), marks them ncclInProgress, runs them in the background and returns
 * ncclInProgress; ncclCommGetAsyncError then reports each one's result when it is done. Blocking and
 * non-blocking communicators in one group are refused (ncclInvalidArgument, from the call that
 * mixes them and again from ncclGroupEnd), as in NCCL. ncclCommInitAll is its own group.
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

static __thread int groupDepth = 0;
static __thread GroupJob* jobsHead = NULL;
static __thread GroupJob* jobsTail = NULL;
static __thread int groupBlocking = -1; /* -1: no communicator met yet in this group */
static __thread ncclResult_t groupError = ncclSuccess;

int groupDepthNow(void) { return groupDepth; }

void groupStartInternal(void) { groupDepth++; }

void groupSetError(ncclResult_t r) {
  if (groupError == ncclSuccess) groupError = r;
}

ncclResult_t groupDefer(GroupJob* job) {
  if (groupBlocking == -1) groupBlocking = job->blocking;
  else if (groupBlocking != job->blocking) {
    setLastError("%s: Blocking and nonblocking communicators are not allowed in the same group.", job->fn);
    groupError = ncclInvalidArgument;
    free(job->arg);
    free(job);
    return ncclInvalidArgument;
  }
  if (job->c) {
    pthread_mutex_lock(&job->c->lock);
    job->c->deferred = 1;
    pthread_mutex_unlock(&job->c->lock);
  }
  job->next = NULL;
  if (jobsTail) jobsTail->next = job;
  else jobsHead = job;
  jobsTail = job;
  return ncclSuccess;
}

/* One queued creation, on its own thread: its result becomes the communicator's async state. */
static void* jobMain(void* arg) {
  GroupJob* j = (GroupJob*)arg;
  j->result = j->run(j);
  if (j->c) {
    pthread_mutex_lock(&j->c->lock);
    j->c->asyncError = j->result;
    j->c->deferred = 0;
    pthread_mutex_unlock(&j->c->lock);
  }
  return NULL;
}

/* Runs every job (one thread each, as NCCL's groupLaunch), waits for all; the first error. */
static ncclResult_t launch(GroupJob* jobs) {
  for (GroupJob* j = jobs; j; j = j->next) j->threaded = pthread_create(&j->thread, NULL, jobMain, j) == 0;
  for (GroupJob* j = jobs; j; j = j->next) {
    if (j->threaded) pthread_join(j->thread, NULL);
    else jobMain(j);
  }
  ncclResult_t r = ncclSuccess;
  while (jobs) {
    GroupJob* next = jobs->next;
    if (r == ncclSuccess && jobs->result != ncclSuccess) r = jobs->result;
    free(jobs->arg);
    free(jobs);
    jobs = next;
  }
  return r;
}

static void* launchInBackground(void* arg) {
  launch((GroupJob*)arg);
  return NULL;
}

ncclResult_t groupEndInternal(void) {
  if (groupDepth == 0) { setLastError("ncclGroupEnd: not in a group call."); return ncclInvalidUsage; }
  if (--groupDepth > 0) return ncclSuccess;
  GroupJob* jobs = jobsHead;
  int blocking = groupBlocking;
  ncclResult_t err = groupError;
  jobsHead = jobsTail = NULL;
  groupBlocking = -1;
  groupError = ncclSuccess;
  if (err != ncclSuccess) {
    /* A refused call in the group: nothing of it runs; its communicators report the error. */
    while (jobs) {
      GroupJob* next = jobs->next;
      if (jobs->c) {
        pthread_mutex_lock(&jobs->c->lock);
        jobs->c->asyncError = err;
        pthread_mutex_unlock(&jobs->c->lock);
      }
      free(jobs->arg);
      free(jobs);
      jobs = next;
    }
    return err;
  }
  if (!jobs) return ncclSuccess;
  if (blocking) return launch(jobs);
  for (GroupJob* j = jobs; j; j = j->next) {
    if (!j->c) continue;
    pthread_mutex_lock(&j->c->lock);
    j->c->asyncError = ncclInProgress;
    pthread_mutex_unlock(&j->c->lock);
  }
  pthread_t t;
  if (pthread_create(&t, NULL, launchInBackground, jobs) != 0) return launch(jobs);
  pthread_detach(t);
  return ncclInProgress;
}

EXPORT ncclResult_t ncclGroupStart(void) {
  groupStartInternal();
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void) { return groupEndInternal(); }
