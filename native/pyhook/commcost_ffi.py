"""commcost trace: NCCL called from Python through a foreign-function library (ctypes, cffi).

vLLM's PyNcclCommunicator, SGLang, verl's checkpoint engines and similar wrappers dlopen libnccl
by path and call it through ctypes (or cffi's ABI mode): no torch call is around the call, and
an LD_PRELOAD interposer never sees it (the symbol is looked up in the library's own handle).
Loaded by sitecustomize.py when ctypes or cffi is imported; off unless COMMCOST_TRACE_DIR is set.

ctypes: CDLL.__getitem__ (which CDLL.__getattr__ goes through) hands out, for the NCCL functions
below, a function pointer of a subclass of the library's own _FuncPtr whose __call__ records the
call: the same class family (isinstance, argtypes, restype, errcheck all behave as before), the
same arguments and result. cffi (ABI mode, ffi.dlopen): the library object's functions are
looked up through its class's __getattr__; an NCCL function is handed out wrapped in a Python
function with the same call. Each recorded call is the hook's `call` line (sitecustomize.py):

  api: the NCCL function's name; t0, t1 (time.monotonic_ns(), the plugin's clock), tid, site and
  chain as for torch calls (site: the first frame in the user's code; chain: the frames between),
  ok (ncclSuccess, or ncclInProgress for a non-blocking call), error ("ncclResult <n>" otherwise).
  A creation (ncclCommInitRank, …Config, …All, …Scalable, ncclCommSplit, Shrink, Grow) and a
  teardown (ncclCommDestroy, Abort, Finalize) are recorded at every call; a collective only the
  first time it runs on a communicator ("first": true): the merge joins the plugin's connect to it.
  A communicator torn down is forgotten, so that one recreated at the same address is new again.

Every record says how NCCL was reached: "via": "ctypes" or "cffi". A creating call also records
"r" (its ncclResult_t), "comm" (the communicator it set, hex), "nranks"/"rank" when it names them
and, inside ncclGroupStart/End, "group" (this thread's n-th outermost group): NCCL defers a
creation made inside a group to the group's outermost ncclGroupEnd, so that ncclGroupEnd is
recorded too (same "group", "creates": how many creating calls it held; a group without creations
is forwarded untimed), as the C interposer records it. A non-blocking creation (config.blocking =
0: the call, or its group's ncclGroupEnd, returned ncclInProgress) is completed by the first
ncclCommGetAsyncError that reports it done: that poll is recorded ("comm", "async": the state it
reported); other polls are forwarded untimed. client/trace/grouped.ts times each such creation
from its call to the call that paid it.

Calls made inside a wrapped torch call (the hook's depth counter) are the torch call's own, not
recorded twice. Never changes the call: every failure of the hook is swallowed.
"""
import threading
import time

CREATE = ("ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitAll", "ncclCommInitRankScalable",
          "ncclCommSplit", "ncclCommShrink", "ncclCommGrow")
TEARDOWN = ("ncclCommDestroy", "ncclCommAbort", "ncclCommFinalize")
# The collectives and point-to-point calls: (…, comm, stream) — the communicator is the last but one argument.
COLLECTIVES = ("ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
               "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend", "ncclRecv")
GROUP = ("ncclGroupStart", "ncclGroupEnd")
POLL = ("ncclCommGetAsyncError",)
KIND = dict([(n, "create") for n in CREATE] + [(n, "teardown") for n in TEARDOWN] + [(n, "coll") for n in COLLECTIVES]
            + [(n, "group") for n in GROUP] + [(n, "poll") for n in POLL])
NCCL_IN_PROGRESS = 7


def comm_key(value):
    """The address of a communicator argument (a c_void_p, an int, a cffi pointer), else None."""
    try:
        if value is None:
            return None
        if isinstance(value, int):
            return value
        if type(value).__module__ == "_cffi_backend":  # a cffi pointer (its attributes are the struct's)
            import cffi
            return int(_FFI.setdefault("ffi", cffi.FFI()).cast("uintptr_t", value))
        v = getattr(value, "value", None)  # ctypes.c_void_p
        if isinstance(v, int):
            return v
        import ctypes
        if isinstance(value, (ctypes._Pointer, ctypes._SimpleCData)):
            return ctypes.cast(value, ctypes.c_void_p).value
    except Exception:
        return None
    return None


_FFI = {}


def out_value(arg):
    """What an out-pointer argument points at after the call (a byref/pointer of ctypes, a cffi
    pointer), as an int; None when it cannot be read."""
    try:
        if arg is None:
            return None
        if type(arg).__module__ == "_cffi_backend":
            value = arg[0]
            return value if isinstance(value, int) else comm_key(value)
        inner = getattr(arg, "_obj", None)  # ctypes.byref(x)
        if inner is None:
            inner = getattr(arg, "contents", None)  # ctypes.pointer(x)
        if inner is None:
            return None
        value = getattr(inner, "value", inner)
        return value if isinstance(value, int) else comm_key(value)
    except Exception:
        return None


def hex_key(key):
    """A communicator's address as the records write it ("0x…"), or "" when unknown."""
    return "0x%x" % key if isinstance(key, int) else ""


def int_arg(args, i):
    """args[i] as an int (a Python int or a ctypes c_int), else None."""
    try:
        v = args[i]
        v = getattr(v, "value", v)
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    except Exception:
        return None


# Where a creating call names the communicator's size and this call's rank (argument indexes).
SIZE_RANK = {"ncclCommInitRank": (1, 3), "ncclCommInitRankConfig": (1, 3), "ncclCommInitRankScalable": (1, 2),
             "ncclCommInitAll": (1, None)}


class Recorder:
    """Times and records the NCCL calls handed out by the patched libraries (one per process)."""

    def __init__(self, hook):
        # hook: emit(record), site_and_chain(depth), local (the torch wrapper's thread-local depth)
        self.hook = hook
        self.seen = set()
        self.lock = threading.Lock()
        self.groups = threading.local()  # this thread's group: depth, seq, creates, comms
        self.pending = set()  # non-blocking creations not yet seen done by a poll

    def group_state(self):
        g = self.groups
        if not hasattr(g, "depth"):
            g.depth, g.seq, g.creates, g.comms = 0, 0, 0, []
        return g

    def timed(self, api, fn, args, via, extra):
        """Calls fn(*args), emitting one record of the call with `extra`; returns (result, record)."""
        record = {"k": "call", "api": api, "via": via, "tid": threading.get_native_id()}
        try:
            record["site"], record["chain"] = self.hook.site_and_chain(2, True)
        except Exception:
            pass
        record.update(extra)
        t0 = time.monotonic_ns()
        try:
            result = fn(*args)
        except BaseException as err:
            record.update(t0=t0, t1=time.monotonic_ns(), ok=False, error=type(err).__name__)
            self.hook.emit(record)
            raise
        record.update(t0=t0, t1=time.monotonic_ns(), ok=result in (0, NCCL_IN_PROGRESS) if isinstance(result, int) else True)
        if isinstance(result, int):
            record["r"] = result
        return result, record

    def group_call(self, api, fn, args, via):
        """ncclGroupStart/End: counts this thread's depth; times an outermost end that held creations."""
        g = self.group_state()
        if api == "ncclGroupStart":
            result = fn(*args)
            if result == 0:
                if g.depth == 0:
                    g.seq, g.creates, g.comms = g.seq + 1, 0, []
                g.depth += 1
            return result
        if g.depth == 0:
            return fn(*args)
        g.depth -= 1
        if g.depth > 0 or g.creates == 0:
            return fn(*args)
        creates, comms = g.creates, g.comms
        g.creates, g.comms = 0, []
        result, record = self.timed(api, fn, args, via, {"group": g.seq, "creates": creates})
        if result == NCCL_IN_PROGRESS:
            with self.lock:
                self.pending.update(comms)
        self.hook.emit(record)
        return result

    def poll_call(self, api, fn, args, via):
        """ncclCommGetAsyncError: recorded when it is the first to see a pending non-blocking creation done."""
        if not self.pending or len(args) < 2:
            return fn(*args)
        key = comm_key(args[0])
        if key not in self.pending:
            return fn(*args)
        result, record = self.timed(api, fn, args, via, {"comm": hex_key(key)})
        state = out_value(args[1])
        if result == 0 and isinstance(state, int) and state != NCCL_IN_PROGRESS:
            with self.lock:
                self.pending.discard(key)
            record["async"] = state
            self.hook.emit(record)
        return result

    def create_call(self, api, fn, args, via):
        """A creating call: timed and recorded with its result, communicator, size, rank and group."""
        g = self.group_state()
        extra = {}
        where = SIZE_RANK.get(api)
        if where:
            nranks = int_arg(args, where[0])
            rank = int_arg(args, where[1]) if where[1] is not None else None
            if nranks is not None:
                extra["nranks"] = nranks
            if rank is not None:
                extra["rank"] = rank
        if g.depth > 0:
            extra["group"] = g.seq
        result, record = self.timed(api, fn, args, via, extra)
        try:
            split = api in ("ncclCommSplit", "ncclCommShrink", "ncclCommGrow")
            # The out argument: the first (inits), newcomm (ncclCommSplit's fourth); shrink's and grow's
            # place differs between versions, so theirs is not read.
            out = args[3] if api == "ncclCommSplit" and len(args) > 3 else (args[0] if args and not split else None)
            key = out_value(out) if api != "ncclCommInitAll" else None
            record["comm"] = hex_key(key)
            if split and args:
                record["parent"] = hex_key(comm_key(args[0]))
            if g.depth > 0:
                g.creates += 1
                if key is not None:
                    g.comms.append(key)
            elif result == NCCL_IN_PROGRESS and key is not None:
                with self.lock:
                    self.pending.add(key)
            if isinstance(result, int) and result not in (0, NCCL_IN_PROGRESS):
                record["error"] = "ncclResult %d" % result
        except Exception:
            pass
        self.hook.emit(record)
        return result

    def call(self, api, fn, args, via="ctypes"):
        """Calls fn(*args) as the program would, recording the call when it is one of ours."""
        hook = self.hook
        kind = KIND.get(api)
        if kind is None or getattr(hook.local, "depth", 0) > 0:
            return fn(*args)
        if kind == "group":
            return self.group_call(api, fn, args, via)
        if kind == "poll":
            return self.poll_call(api, fn, args, via)
        if kind == "create":
            return self.create_call(api, fn, args, via)
        record = None
        key = None
        try:
            if kind == "coll":
                key = comm_key(args[-2]) if len(args) >= 2 else None
                with self.lock:
                    first = key is not None and key not in self.seen
                    if first:
                        self.seen.add(key)
                if first:
                    record = {"k": "call", "api": api, "first": True, "via": via}
            else:
                record = {"k": "call", "api": api, "via": via}
            if record is not None:
                record["tid"] = threading.get_native_id()
                record["site"], record["chain"] = hook.site_and_chain(3, True)
        except Exception:
            record = None
        t0 = time.monotonic_ns()
        try:
            result = fn(*args)
        except BaseException as err:
            t1 = time.monotonic_ns()
            if record is not None:
                record.update(t0=t0, t1=t1, ok=False, error=type(err).__name__)
                hook.emit(record)
            raise
        t1 = time.monotonic_ns()
        if record is not None:
            try:
                ok = result in (0, NCCL_IN_PROGRESS) if isinstance(result, int) else True
                record.update(t0=t0, t1=t1, ok=ok)
                if not ok:
                    record["error"] = "ncclResult %d" % result
                if kind == "teardown" and args:
                    torn = comm_key(args[0])
                    with self.lock:
                        self.seen.discard(torn)
            except Exception:
                pass
            hook.emit(record)
        return result


def instrument_ctypes(ctypes, recorder):
    """Patches ctypes.CDLL so that the NCCL functions it hands out are recorded (see the module text)."""
    cdll = ctypes.CDLL
    original = cdll.__getitem__
    if getattr(original, "__commcost_wrapped__", False):
        return

    def timed_class(lib):
        cls = lib.__dict__.get("_commcost_FuncPtr")
        if cls is None:
            base = lib._FuncPtr

            def __call__(self, *args):
                return recorder.call(self.__name__, lambda *a: base.__call__(self, *a), args, "ctypes")

            ns = {"_flags_": base._flags_, "__call__": __call__, "__module__": __name__}
            if hasattr(base, "_restype_"):
                ns["_restype_"] = base._restype_
            cls = type(base)(base.__name__, (base,), ns)
            lib.__dict__["_commcost_FuncPtr"] = cls
        return cls

    def __getitem__(self, name_or_ordinal):
        func = original(self, name_or_ordinal)
        if isinstance(name_or_ordinal, str) and name_or_ordinal in KIND:
            try:
                timed = timed_class(self)((name_or_ordinal, self))
                timed.__name__ = name_or_ordinal
                return timed
            except Exception:
                return func
        return func

    __getitem__.__commcost_wrapped__ = True
    try:
        cdll.__getitem__ = __getitem__
    except Exception:
        pass


def instrument_cffi(cffi_api, recorder):
    """Patches cffi's FFI.dlopen (ABI mode) so that the NCCL functions of the library are recorded."""
    ffi_class = getattr(cffi_api, "FFI", None)
    original = getattr(ffi_class, "dlopen", None)
    if original is None or getattr(original, "__commcost_wrapped__", False):
        return

    def patch(cls):
        # cffi makes one FFILibrary class per dlopen (named FFILibrary_<path>): its __getattr__ loads a function once and
        # caches it in the instance's __dict__. An NCCL function is cached wrapped instead, and
        # the class's __addressof__ (ffi.addressof) still answers the function itself.
        lookup = cls.__dict__["__getattr__"]
        addressof = cls.__dict__.get("__addressof__")

        def __getattr__(inner, name):
            value = lookup(inner, name)
            if name in KIND and callable(value) and not hasattr(value, "__commcost_ffi__"):
                def fn(*a, _fn=value):
                    return recorder.call(name, _fn, a, "cffi")
                fn.__name__ = name
                fn.__wrapped__ = value
                fn.__commcost_ffi__ = True
                inner.__dict__[name] = fn
                return fn
            return value

        cls.__getattr__ = __getattr__
        if addressof is not None:
            def __addressof__(inner, name):
                value = addressof(inner, name)
                return getattr(value, "__wrapped__", value) if getattr(value, "__commcost_ffi__", False) else value
            cls.__addressof__ = __addressof__

    def dlopen(self, *args, **kwargs):
        lib = original(self, *args, **kwargs)
        try:
            cls = type(lib)
            if cls.__name__.startswith("FFILibrary") and "__getattr__" in cls.__dict__:
                patch(cls)
        except Exception:
            pass
        return lib

    dlopen.__commcost_wrapped__ = True
    dlopen.__wrapped__ = original
    try:
        ffi_class.dlopen = dlopen
    except Exception:
        pass
