"""commcost trace: the Python attribution hook (put first on PYTHONPATH by `commcost trace` only).

Off unless COMMCOST_TRACE_DIR is set. When torch.distributed is imported, wraps its group
lifecycle calls (init_process_group, new_group, split_group, shrink_group, new_subgroups,
destroy_process_group), ProcessGroupNCCL construction and eager_connect_single_device, and the
collectives (the first one on each group is recorded). Each record is one JSON line, written with
one os.write to $COMMCOST_TRACE_DIR/<host>-<pid>.py.jsonl:

  {"k":"pyproc", pid, host, rank, world, t, rt (time.time_ns() stamped with t)}  once per process
  {"k":"call", api, t0, t1 (time.monotonic_ns(), the plugin's CLOCK_MONOTONIC), tid,
   site: {file, line, func} (first frame in the user's code), chain: [{file, line, func}...]
   (the frames between the call and torch: the wrappers it went through), group (an id of the
   group object, or "WORLD"), groupOf (for a collective: the group it ran on), first (a
   collective: the first on its group), ok, error}

  {"k":"ray", node, ip, actor, actorId, job}  in a Ray worker, before its first call record of
   each actor it hosts (commcost_ray.py)

NCCL called through ctypes or cffi (vLLM's PyNcclCommunicator and the like) is recorded as `call`
lines named by the NCCL function (commcost_ffi.py), and through a compiled extension that calls
libnccl itself (Cython bindings such as nccl4py's) as `call` lines named by the extension's
function (commcost_cext.py); each such line's `via` says how (ctypes, cffi, extension); `ray.init`
in a driver carries the trace to Ray's workers through the job's runtime_env (commcost_ray.py), and
a worker that cannot write the driver's folder (another node) ships its records to the driver's
collector actor. Each sibling module is loaded from this folder when ctypes, cffi or ray is first
imported (commcost_ray.py at a Ray worker's start when the driver runs a collector).

Never changes the job: every failure of the hook itself is swallowed, wrapped functions return
and raise exactly what they did, nothing is printed. Without torch, NCCL through ctypes or cffi, or
Ray, nothing is recorded. A
sitecustomize that this one shadows (the next one on sys.path) is still run.
"""
import os
import sys


def _install():
    trace_dir = os.environ.get("COMMCOST_TRACE_DIR")
    if not trace_dir:
        return
    import json
    import socket
    import threading
    import time

    here = os.path.dirname(os.path.abspath(__file__))
    state = {"fd": None, "pid": None}
    lock = threading.Lock()
    local = threading.local()

    def out():
        pid = os.getpid()
        if state["pid"] != pid:
            state["pid"] = pid
            host = socket.gethostname().replace("/", "_")
            path = os.path.join(trace_dir, "%s-%d.py.jsonl" % (host, pid))
            state["fd"] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
            env = os.environ
            rank = env.get("RANK") or env.get("SLURM_PROCID") or env.get("OMPI_COMM_WORLD_RANK")
            world = env.get("WORLD_SIZE") or env.get("SLURM_NTASKS") or env.get("OMPI_COMM_WORLD_SIZE")
            # The wall clock stamped with the monotonic one (the middle of two monotonic reads):
            # merge.ts puts several hosts' timelines on one axis from these pairs.
            m0 = time.monotonic_ns()
            rt = time.time_ns()
            m1 = time.monotonic_ns()
            emit_line({"k": "pyproc", "f": 1, "pid": pid, "host": host,
                       "rank": int(rank) if rank and rank.isdigit() else None,
                       "world": int(world) if world and world.isdigit() else None,
                       "t": m0 + (m1 - m0) // 2, "rt": rt, "argv0": (sys.argv[0] if sys.argv else "")[:300]}, fd_ready=True)
        return state["fd"]

    def emit_line(record, fd_ready=False):
        try:
            fd = state["fd"] if fd_ready else out()
            ray = getattr(hook, "ray", None)
            identity = ray.identity() if ray is not None and record.get("k") == "call" else None
            if identity is not None:
                identity["pid"] = state["pid"]
                os.write(fd, (json.dumps(identity, separators=(",", ":"), default=str) + "\n").encode("utf-8", "replace"))
            data = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode("utf-8", "replace")
            os.write(fd, data)
        except Exception:
            pass

    def library_file(filename):
        if not filename or filename.startswith("<"):
            return True
        f = os.path.abspath(filename)
        if f.startswith(here):
            return True
        parts = f.replace("\\", "/").split("/")
        if "torch" in parts and ("site-packages" in parts or "dist-packages" in parts or "distributed" in parts):
            return True
        if "fake_torch" in parts and "torch" in parts:  # the test stub of torch.distributed
            return True
        stdlib = os.path.dirname(os.__file__)
        return f.startswith(stdlib) and "site-packages" not in parts and "dist-packages" not in parts

    def site_and_chain(depth=2, innermost=False):
        """The first frame in the user's code above `depth` and the library frames on the way; with
        `innermost`, the innermost frame outside the hook when no frame is the user's."""
        frame = sys._getframe(depth)
        chain = []
        while frame is not None:
            code = frame.f_code
            entry = {"file": code.co_filename, "line": frame.f_lineno, "func": code.co_name}
            fname = code.co_filename.replace("\\", "/")
            in_torch = "/torch/" in fname or library_file(code.co_filename)
            if not in_torch and not ("site-packages" in fname or "dist-packages" in fname):
                return entry, chain[-8:]
            if not fname.startswith(here):
                chain.append(entry)
            frame = frame.f_back
        return (chain[0] if innermost and chain else None), chain[-8:]

    def group_key(g):
        if g is None:
            return "WORLD"
        try:
            name = getattr(g, "group_name", None)
            if isinstance(name, str) and name:
                return "pg:" + name
        except Exception:
            pass
        return "obj:%x" % id(g)

    seen_groups = set()

    def wrap(owner, name, api, kind):
        try:
            fn = getattr(owner, name)
        except Exception:
            return
        if getattr(fn, "__commcost_wrapped__", False):
            return

        def wrapper(*args, **kwargs):
            depth = getattr(local, "depth", 0)
            if depth > 0:  # inside another wrapped call: the outer one is the call site
                return fn(*args, **kwargs)
            record = None
            try:
                record = {"k": "call", "api": api, "tid": threading.get_native_id()}
                if kind == "coll":
                    g = kwargs.get("group")
                    if g is None:
                        for a in args[1:]:
                            if a is not None and not isinstance(a, (int, float, str, bool, list, tuple)) and hasattr(a, "__class__") and "Group" in type(a).__name__:
                                g = a
                                break
                    key = group_key(g)
                    with lock:
                        first = key not in seen_groups
                        seen_groups.add(key)
                    if not first:
                        record = None
                    else:
                        record["groupOf"] = key
                        record["first"] = True
                elif kind == "method":
                    record["group"] = group_key(args[0] if args else None)
                if record is not None:
                    record["site"], record["chain"] = site_and_chain()
            except Exception:
                record = None
            local.depth = depth + 1
            t0 = time.monotonic_ns()
            try:
                result = fn(*args, **kwargs)
            except BaseException as err:
                t1 = time.monotonic_ns()
                local.depth = depth
                if record is not None:
                    record.update(t0=t0, t1=t1, ok=False, error=type(err).__name__)
                    emit_line(record)
                raise
            t1 = time.monotonic_ns()
            local.depth = depth
            if record is not None:
                try:
                    record.update(t0=t0, t1=t1, ok=True)
                    if kind == "create" and result is not None:
                        if isinstance(result, tuple):
                            record["group"] = group_key(result[0])
                        else:
                            record["group"] = group_key(result)
                    elif kind == "init":
                        record["group"] = "WORLD"
                except Exception:
                    pass
                emit_line(record)
            return result

        try:
            wrapper.__commcost_wrapped__ = True
            wrapper.__wrapped__ = fn
            wrapper.__name__ = getattr(fn, "__name__", name)
            wrapper.__doc__ = getattr(fn, "__doc__", None)
            setattr(owner, name, wrapper)
        except Exception:
            pass

    COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
                   "reduce_scatter", "reduce", "all_to_all", "all_to_all_single", "barrier", "gather", "scatter",
                   # A pair's first send/recv is its group's first use too (pipeline stages, prefill/decode).
                   "send", "recv", "isend", "irecv")

    def instrument(dist):
        modules = [dist]
        c10d = getattr(dist, "distributed_c10d", None)
        if c10d is not None:
            modules.append(c10d)
        for m in modules:
            wrap(m, "init_process_group", "init_process_group", "init")
            for api in ("new_group", "split_group", "shrink_group", "new_subgroups"):
                wrap(m, api, api, "create")
            wrap(m, "destroy_process_group", "destroy_process_group", "teardown")
            for api in COLLECTIVES:
                wrap(m, api, api, "coll")
        try:
            out()  # the pyproc line: only processes that import torch.distributed have one
        except Exception:
            pass
        pg = getattr(dist, "ProcessGroupNCCL", None)
        if pg is not None:
            wrap(pg, "__init__", "ProcessGroupNCCL", "method")
            wrap(pg, "eager_connect_single_device", "eager_connect_single_device", "method")

    def load_sibling(name):
        """A module of the hook's folder, loaded by path (sys.path may not hold the folder)."""
        import importlib.util
        spec = importlib.util.spec_from_file_location(name, os.path.join(here, name + ".py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    class Hook:
        """What the hook's sibling modules (commcost_ffi.py, commcost_ray.py) record through."""

    hook = Hook()
    hook.emit, hook.site_and_chain, hook.local, hook.here = emit_line, site_and_chain, local, here
    ffi = {}

    def recorder():
        if "r" not in ffi:
            mod = load_sibling("commcost_ffi")
            ffi["mod"], ffi["r"] = mod, mod.Recorder(hook)
        return ffi["mod"], ffi["r"]

    def instrument_ctypes(module):
        mod, r = recorder()
        mod.instrument_ctypes(module, r)

    def instrument_cffi(module):
        mod, r = recorder()
        mod.instrument_cffi(module, r)

    def ray_module():
        # One module object, importable by name: Ray pickles the collector actor's class by reference.
        mod = sys.modules.get("commcost_ray") or load_sibling("commcost_ray")
        sys.modules.setdefault("commcost_ray", mod)
        return mod

    if os.environ.get("COMMCOST_TRACE_RAY_COLLECTOR"):
        # A Ray worker of a traced job: its records may go to the driver through the collector
        # actor (a folder of its own node), decided before anything records (commcost_ray.py).
        try:
            trace_dir = ray_module().worker_trace_dir(trace_dir) or trace_dir
        except Exception:
            pass

    def instrument_ray(module):
        mod = ray_module()
        hook.ray = mod  # emit_line asks it for a Ray worker's identity
        mod.instrument_driver(module)

    try:
        # A compiled extension calling libnccl itself (Cython bindings, a C extension): commcost_cext.py.
        import importlib.machinery
        cext = load_sibling("commcost_cext")
        cext.instrument_loader(importlib.machinery.ExtensionFileLoader, cext.ExtensionRecorder(hook, trace_dir))
    except Exception:
        pass

    targets = {"torch.distributed": instrument, "ctypes": instrument_ctypes, "cffi.api": instrument_cffi, "ray": instrument_ray}

    class Finder:
        """Instruments torch.distributed, ctypes, cffi and ray right after each is first imported."""

        def find_spec(self, name, path=None, target=None):
            if name not in targets:
                return None
            patch = targets[name]
            import importlib.machinery
            for finder in sys.meta_path:
                if finder is self:
                    continue
                try:
                    spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
                except Exception:
                    spec = None
                if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    loader = spec.loader
                    original = loader.exec_module

                    def exec_module(module, _original=original, _patch=patch):
                        _original(module)
                        try:
                            _patch(module)
                        except Exception:
                            pass

                    try:
                        loader.exec_module = exec_module
                    except Exception:
                        return None
                    return spec
            return None

    for name, patch in targets.items():
        if name in sys.modules:
            try:
                patch(sys.modules[name])
            except Exception:
                pass
    sys.meta_path.insert(0, Finder())


def _chain_next_sitecustomize():
    """Runs the sitecustomize this file shadows (the next one on sys.path), as Python would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        try:
            if not entry or os.path.abspath(entry) == here:
                continue
            candidate = os.path.join(entry, "sitecustomize.py")
            if os.path.isfile(candidate):
                with open(candidate, "rb") as f:
                    code = compile(f.read(), candidate, "exec")
                exec(code, {"__name__": "sitecustomize", "__file__": candidate})
                return
        except Exception:
            return


try:
    _install()
except Exception:
    pass
_chain_next_sitecustomize()
