"""commcost trace: Ray's workers, reached through Ray's own runtime_env.

Loaded by sitecustomize.py when ray is imported (off unless COMMCOST_TRACE_DIR is set).

In the driver, ray.init is wrapped: the job's runtime_env (Ray applies it to every worker it
starts for the job, on any node of a local or running cluster) gets
  - env_vars: the variables `commcost trace` gave the job, as COMMCOST_TRACE_RAY lists them
    (client/trace/jobEnv.ts `rayForwardEnv`: {"set": {NAME: value}, "prepend": {NAME: part}}).
    A prepended one (PYTHONPATH, LD_LIBRARY_PATH, LD_PRELOAD) is written "<part>:${NAME}", which Ray
    expands with the worker's own value; a value of the user's runtime_env is kept (ours goes
    first on a prepended one; their NCCL_PROFILER_PLUGIN is chained through
    COMMCOST_TRACE_CHAIN_PLUGIN; their NCCL_DEBUG or NCCL_DEBUG_FILE keeps NCCL's log theirs).
  - worker_process_setup_hook "commcost_ray.setup" (unless the user has one: Ray takes one), which
    runs in each worker before its tasks: it removes the empty PYTHONPATH entry (the current
    folder) that "${PYTHONPATH}" leaves on a node where PYTHONPATH was unset.
In a worker, the process's Ray identity is written once per actor before its first record:
  {"k":"ray", node (node id), ip, actor (class name, null in a task), actorId, job}

Collection back to the driver (workers that cannot write the driver's records folder: another
node without a shared folder). The driver writes a marker file `.commcost-ray-<token>` in its
COMMCOST_TRACE_DIR, forwards COMMCOST_TRACE_RAY_COLLECTOR ({name, namespace, token, mode}) with the
other variables, and once ray.init returns starts a named collector actor (not detached: it ends
with the job; num_cpus 0; pinned to the driver's node) that appends what it is sent to the
driver's folder. A worker whose COMMCOST_TRACE_DIR does not show that marker (or any worker, with
COMMCOST_TRACE_RAY_COLLECT=actor in the driver's environment; never with =off) moves, at its
interpreter's start (sitecustomize.py, before NCCL or the hook open a file), its records and
NCCL's log to a private folder of its node (<tmp>/commcost-<uid>/ray-<token>-XXXXXX, 0700) and a
daemon thread ships their new bytes to the collector: every 10 s, at the worker's exit, and when
the driver flushes (then the private folder is removed). The driver flushes before ray.shutdown and at its exit: the collector asks every
worker that reached it to ship, and waits for them at most COMMCOST_TRACE_RAY_FLUSH_S (10 s).
The job is never changed otherwise: every failure here is swallowed, ray.init returns and raises
what it did; a worker's shipping waits for nothing the job waits on.
"""
import atexit
import functools
import json
import os
import re
import sys
import threading
import time

SETUP_HOOK = "commcost_ray.setup"
PREPENDED = ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")
NCCL_LOG = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE")


def runtime_env(user, forward):
    """The job's runtime_env: the user's (a dict or RuntimeEnv, or None) with the trace's variables and setup hook."""
    env = dict(user or {})
    env_vars = dict(env.get("env_vars") or {})
    theirs = dict(env_vars)
    for name, value in (forward.get("set") or {}).items():
        if name == "NCCL_PROFILER_PLUGIN" and theirs.get(name) and theirs[name] != value:
            env_vars["COMMCOST_TRACE_CHAIN_PLUGIN"] = theirs[name]
            env_vars[name] = value
        elif name in NCCL_LOG and (theirs.get("NCCL_DEBUG") or theirs.get("NCCL_DEBUG_FILE")):
            continue
        elif name not in theirs:
            env_vars[name] = value
    for name, part in (forward.get("prepend") or {}).items():
        env_vars[name] = "%s:%s" % (part, theirs[name] if theirs.get(name) else "${%s}" % name)
    env["env_vars"] = env_vars
    if not env.get("worker_process_setup_hook"):
        env["worker_process_setup_hook"] = SETUP_HOOK
    return env


def instrument_driver(ray):
    """Wraps ray.init (and ray._private.worker.init, which Ray's auto-init calls) to add the trace's runtime_env."""
    init = getattr(ray, "init", None)
    if init is None or getattr(init, "__commcost_wrapped__", False):
        return

    def wrapped(*args, **kwargs):
        spec = None
        try:
            forward = json.loads(os.environ.get("COMMCOST_TRACE_RAY") or "{}")
            if forward:
                spec = collector_spec()
                if spec is not None:
                    forward = dict(forward, set=dict(forward.get("set") or {}, COMMCOST_TRACE_RAY_COLLECTOR=json.dumps(spec)))
                kwargs["runtime_env"] = runtime_env(kwargs.get("runtime_env"), forward)
        except Exception:
            spec = None
        result = init(*args, **kwargs)
        if spec is not None:
            start_collector(ray, spec)
        return result

    functools.update_wrapper(wrapped, init)
    wrapped.__commcost_wrapped__ = True
    ray.init = wrapped
    worker = sys.modules.get("ray._private.worker")
    if worker is not None and getattr(worker, "init", None) is init:
        worker.init = wrapped


_seen = {}


def identity():
    """This worker's Ray identity record, once per actor (None in the driver, outside Ray, or already written)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return None
    try:
        ctx = ray.get_runtime_context()
        if getattr(ctx, "worker", None) is None or ctx.worker.mode != 1:  # ray._private.worker.WORKER_MODE
            return None
        actor_id = ctx.get_actor_id()
        if _seen.get("actor", False) == actor_id:
            return None
        _seen["actor"] = actor_id
        actor = None
        if actor_id:
            try:
                actor = ctx.current_actor._ray_actor_creation_function_descriptor.class_name
            except Exception:
                actor = None
        try:
            ip = ray.util.get_node_ip_address()
        except Exception:
            ip = None
        return {"k": "ray", "node": ctx.get_node_id(), "ip": ip, "actor": actor, "actorId": actor_id,
                "job": ctx.get_job_id()}
    except Exception:
        return None


def setup():
    """Ray's worker_process_setup_hook: drops the current-folder entry an unset ${PYTHONPATH} left."""
    try:
        value = os.environ.get("PYTHONPATH", "")
        if value.endswith(":"):
            os.environ["PYTHONPATH"] = value.rstrip(":")
            cwd = os.getcwd()
            # Python made the empty entry the current folder, after the entries before it.
            if cwd not in value.split(":") and cwd in sys.path[1:]:
                sys.path.remove(cwd) if sys.path[0] != cwd else sys.path.pop(sys.path.index(cwd, 1))
    except Exception:
        pass


# ---- Collection back to the driver ----------------------------------------------------------

RECORD_NAME = re.compile(r"^[\w.-]+(\.jsonl|\.nccl\.log)$")
_driver = {}
_worker = {}


def _mode():
    mode = (os.environ.get("COMMCOST_TRACE_RAY_COLLECT") or "auto").strip().lower()
    return mode if mode in ("auto", "actor", "off") else "auto"


def collector_spec():
    """In the driver, before ray.init: the collector's name and token, the marker written in the records folder (None: collection off)."""
    trace_dir = os.environ.get("COMMCOST_TRACE_DIR")
    mode = _mode()
    if not trace_dir or mode == "off":
        return None
    if "spec" in _driver:
        return _driver["spec"]
    token = os.urandom(12).hex()
    with open(os.path.join(trace_dir, ".commcost-ray-" + token), "w") as f:
        f.write(token)
    spec = {"name": "commcost-collector-" + token, "namespace": "commcost", "token": token, "mode": mode}
    _driver.update(spec=spec, dir=trace_dir)
    return spec


class Collector:
    """The driver's collector actor: appends what workers ship to the driver's records folder, and runs the flushes."""

    def __init__(self, trace_dir):
        self.dir = trace_dir
        self.sizes = {}
        self.round = 0
        self.acks = {}
        self.cond = threading.Condition()

    def put(self, worker, round_, chunks):
        """Appends each (name, offset, bytes) from `offset` (what was written already is skipped); `round_` is the flush it answers."""
        with self.cond:
            for name, offset, data in chunks:
                if not isinstance(name, str) or not RECORD_NAME.match(name) or not isinstance(data, bytes):
                    continue
                have = self.sizes.get(name, 0)
                if offset > have or offset + len(data) <= have:
                    continue
                fd = os.open(os.path.join(self.dir, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
                try:
                    os.write(fd, data[have - offset:])
                finally:
                    os.close(fd)
                self.sizes[name] = offset + len(data)
            self.acks[worker] = max(self.acks.get(worker, 0), round_)
            self.cond.notify_all()
        return True

    def wait(self, worker, round_, timeout):
        """A worker's long poll: returns the flush round once it passes `round_`, or after `timeout` s."""
        with self.cond:
            self.acks.setdefault(worker, round_)
            self.cond.wait_for(lambda: self.round > round_, timeout)
            return self.round

    def gone(self, worker):
        """A worker that exits has shipped all it will."""
        with self.cond:
            self.acks[worker] = float("inf")
            self.cond.notify_all()

    def flush(self, timeout, expected=()):
        """Asks every worker that reached the collector to ship, and waits for all of them, and for
        the `expected` workers (the job's live actors, which may not have reached it yet), at most
        `timeout` s; returns how many did not answer."""
        with self.cond:
            for worker in expected:
                self.acks.setdefault(worker, 0)
            self.round += 1
            target = self.round
            self.cond.notify_all()
            self.cond.wait_for(lambda: all(r >= target for r in self.acks.values()), timeout)
            return sum(1 for r in self.acks.values() if r < target)


def start_collector(ray, spec):
    """In the driver, after ray.init: starts the collector on the driver's node and hooks the flush to ray.shutdown and the exit."""
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        node = ray.get_runtime_context().get_node_id()
        actor = ray.remote(Collector).options(
            name=spec["name"], namespace=spec["namespace"], num_cpus=0, max_concurrency=1000,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False)).remote(_driver["dir"])
        _driver["actor"] = actor
        shutdown = ray.shutdown
        if not getattr(shutdown, "__commcost_wrapped__", False):
            def wrapped_shutdown(*args, **kwargs):
                flush(ray)
                return shutdown(*args, **kwargs)

            functools.update_wrapper(wrapped_shutdown, shutdown)
            wrapped_shutdown.__commcost_wrapped__ = True
            ray.shutdown = wrapped_shutdown
        atexit.register(flush, ray)
    except Exception:
        pass


def _live_actor_workers(ray):
    """The "node:pid" keys of this job's live actors but the collector: a worker whose shipping thread
    has not reached the collector yet (a short job on a busy machine) is still waited for, instead of
    being stopped by ray.shutdown with its records unshipped. Empty when Ray's actor table cannot be read."""
    try:
        from ray._private import state
        job = ray.get_runtime_context().get_job_id()
        name = _driver["spec"]["name"]
        out = []
        for a in state.actors().values():
            if a.get("State") == "ALIVE" and a.get("JobID") == job and a.get("Name") != name and a.get("Pid"):
                out.append("%s:%d" % ((a.get("Address") or {}).get("NodeID", ""), a["Pid"]))
        return out
    except Exception:
        return []


def flush(ray):
    """In the driver: the workers' last records brought back (bounded by COMMCOST_TRACE_RAY_FLUSH_S), then the marker removed. Once."""
    actor = _driver.pop("actor", None)
    if actor is None:
        return
    try:
        timeout = float(os.environ.get("COMMCOST_TRACE_RAY_FLUSH_S") or 10)
        if ray.is_initialized():
            ray.get(actor.flush.remote(timeout, _live_actor_workers(ray)), timeout=timeout + 10)
    except Exception:
        pass
    try:
        os.unlink(os.path.join(_driver["dir"], ".commcost-ray-" + _driver["spec"]["token"]))
    except Exception:
        pass


def worker_trace_dir(trace_dir):
    """In a Ray worker (sitecustomize.py, at start): the private folder its records go to when they
    are to be shipped to the driver's collector (COMMCOST_TRACE_DIR and NCCL_DEBUG_FILE moved
    there, the shipping thread started), or None to write `trace_dir` as is."""
    try:
        spec = json.loads(os.environ.get("COMMCOST_TRACE_RAY_COLLECTOR") or "null")
        if not isinstance(spec, dict) or not re.match(r"^[0-9a-f]{8,64}$", str(spec.get("token"))) or spec.get("mode") == "off":
            return None
        if spec.get("mode") != "actor" and _shared(trace_dir, spec["token"]):
            return None
        import tempfile
        uid = os.getuid() if hasattr(os, "getuid") else 0
        root = os.path.join(tempfile.gettempdir(), "commcost-%d" % uid)
        try:
            os.mkdir(root, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(root)
        if not os.path.isdir(root) or os.path.islink(root) or st.st_uid != uid:
            return None
        local = tempfile.mkdtemp(prefix="ray-%s-" % spec["token"][:8], dir=root)
        log = os.environ.get("NCCL_DEBUG_FILE")
        if log and log.startswith(trace_dir.rstrip("/") + "/"):
            os.environ["NCCL_DEBUG_FILE"] = os.path.join(local, log[len(trace_dir.rstrip("/")) + 1:])
        os.environ["COMMCOST_TRACE_DIR"] = local
        _worker.update(spec=spec, dir=local, offsets={}, round=0, lock=threading.Lock())
        threading.Thread(target=_ship_loop, name="commcost-ray-ship", daemon=True).start()
        atexit.register(_ship_at_exit)
        return local
    except Exception:
        return None


def _shared(trace_dir, token):
    """Whether this worker sees the driver's records folder (its marker, and may write there)."""
    try:
        with open(os.path.join(trace_dir, ".commcost-ray-" + token)) as f:
            return f.read().strip() == token and os.access(trace_dir, os.W_OK)
    except Exception:
        return False


def _chunks():
    """The new bytes of each record file of the worker's private folder: [(name, offset, bytes)]."""
    out = []
    folder, offsets = _worker["dir"], _worker["offsets"]
    for name in sorted(os.listdir(folder)):
        if not RECORD_NAME.match(name):
            continue
        at = offsets.get(name, 0)
        with open(os.path.join(folder, name), "rb") as f:
            f.seek(at)
            data = f.read()
        if data:
            out.append((name, at, data))
    return out


def _ship(ray, actor, round_, timeout):
    """Sends the new bytes (and that flush `round_` is answered); the offsets move only once the collector has them."""
    with _worker["lock"]:
        chunks = _chunks()
        ray.get(actor.put.remote(_worker["key"], round_, chunks), timeout=timeout)
        for name, at, data in chunks:
            _worker["offsets"][name] = at + len(data)


def _ship_loop():
    """The worker's shipping thread: waits for Ray to connect, finds the collector, then ships on each flush and every 10 s."""
    try:
        spec = _worker["spec"]
        ray = None
        actor = None
        tries = 0
        while tries < 240:  # the worker connects when Ray gives it work; then 2 min at most for the collector to start
            ray = sys.modules.get("ray")
            try:
                if ray is not None and ray.is_initialized():
                    tries += 1
                    actor = ray.get_actor(spec["name"], namespace=spec["namespace"])
                    break
            except Exception:
                pass
            time.sleep(0.5)
        ctx = ray.get_runtime_context() if actor is not None else None
        if actor is None or (ctx.get_actor_id() and ctx.get_actor_id() == actor._actor_id.hex()):
            # No collector to ship to, or this is the collector's own process: an empty folder goes.
            try:
                os.rmdir(_worker["dir"])
            except OSError:
                pass
            return
        _worker.update(ray=ray, actor=actor, key="%s:%d" % (ctx.get_node_id(), os.getpid()))
        round_ = 0
        while True:
            try:
                _ship(ray, actor, round_, 60)
                if round_ > 0:
                    # The driver flushes once, as the job ends (Ray then stops its workers, often
                    # before their atexit runs): the private folder goes once the collector has it all.
                    import shutil
                    shutil.rmtree(_worker["dir"], ignore_errors=True)
                    return
                round_ = ray.get(actor.wait.remote(_worker["key"], round_, 10.0), timeout=70)
                _worker["round"] = round_
            except Exception:
                time.sleep(1)
    except Exception:
        pass


def _ship_at_exit():
    """At the worker's exit: what is left shipped (2 s at most), and the private folder removed once it is."""
    try:
        ray, actor = _worker.get("ray"), _worker.get("actor")
        if ray is None or actor is None or not os.path.isdir(_worker["dir"]):
            return
        _ship(ray, actor, _worker.get("round", 0), 2)
        actor.gone.remote(_worker["key"])
        import shutil
        shutil.rmtree(_worker["dir"], ignore_errors=True)
    except Exception:
        pass
