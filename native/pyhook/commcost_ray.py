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
The job is never changed otherwise: every failure here is swallowed, ray.init returns and raises
what it did.
"""
import functools
import json
import os
import sys

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
        try:
            forward = json.loads(os.environ.get("COMMCOST_TRACE_RAY") or "{}")
            if forward:
                kwargs["runtime_env"] = runtime_env(kwargs.get("runtime_env"), forward)
        except Exception:
            pass
        return init(*args, **kwargs)

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
