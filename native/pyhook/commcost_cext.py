"""commcost trace: NCCL called from a compiled extension module (Cython bindings such as nccl4py's,
a CPython C extension).

Such an extension calls libnccl from C — through function pointers it looked up itself
(dlopen/dlsym, as nccl4py's bindings do) or linked — so neither ctypes/cffi (commcost_ffi.py) nor
an LD_PRELOAD interposer on a dlsym'd pointer sees the call; the profiler plugin sees NCCL reach
init, connect and finalize, but not which Python line asked. Loaded by sitecustomize.py; off
unless COMMCOST_TRACE_DIR is set.

Which modules: every extension module (ExtensionFileLoader) whose file names one of NCCL's
lifecycle functions (the bytes b"ncclCommInitRank", b"ncclCommDestroy", … in its ELF .dynstr or
.rodata: a module linked to them or that dlsyms them holds the names) — except
torch's (its Python API is hooked by sitecustomize.py). Of such a module, each module-level
function (builtin or Cython) is replaced, right after the module is executed and before any
importer sees it, by a Python function with the same name, arguments and result. Methods of the
module's extension types cannot be replaced (their types are immutable) and are not seen.

What is recorded: a call of a wrapped function during which the profiler plugin wrote a record
(its file `<host>-<pid>.jsonl` grew: NCCL reached init, a communicator's first collective, or
finalize — the plugin writes nothing for later collectives), as the hook's `call` line with
"api": "<module>.<function>", "via": "extension", t0/t1 (time.monotonic_ns(), the plugin's
clock), tid, site (the first frame in the user's code) and chain (the wrappers in site-packages on
the way), ok. Other calls cost two os.stat calls and record nothing. merge.ts joins the plugin's
init, connect and finalize to the call whose window holds them, on the same thread preferred.
Calls made inside a wrapped torch call (the hook's depth counter) are not recorded. Never changes
the call: every failure of the hook is swallowed.
"""
import os
import socket
import threading
import time

import re

# Bytes whose presence in an extension's file marks it as calling NCCL's lifecycle itself.
NCCL_NAMES = re.compile(rb"ncclComm(?:InitRank|InitAll|Split|Destroy|Abort)")
FUNCTION_TYPES = ("builtin_function_or_method", "cython_function_or_method", "fused_cython_function")


def string_ranges(m):
    """The (offset, size) of an ELF64 file's .dynstr and .rodata* sections — where a linked
    function's name (.dynstr) or a name passed to dlsym or kept by Cython (.rodata) lies — or the
    whole file when it is not a little-endian ELF64 file or its section table cannot be read."""
    import struct
    whole = [(0, len(m))]
    try:
        if m[:6] != b"\x7fELF\x02\x01":
            return whole
        shoff, = struct.unpack_from("<Q", m, 0x28)
        entsize, count, names = struct.unpack_from("<HHH", m, 0x3A)
        if shoff == 0 or entsize < 0x28 or names >= count:
            return whole
        sections = [struct.unpack_from("<IIQQQQ", m, shoff + i * entsize) for i in range(count)]
        name_base = sections[names][4]
        ranges = []
        for sh_name, _type, _flags, _addr, offset, size in sections:
            end = m.find(b"\0", name_base + sh_name)
            name = m[name_base + sh_name:end]
            if name == b".dynstr" or name.startswith(b".rodata"):
                ranges.append((offset, size))
        return ranges or whole
    except Exception:
        return whole


def calls_nccl(path):
    """Whether the extension file at `path` names one of NCCL's lifecycle functions (searched in
    its string sections: a whole large extension would cost tens of ms at every import)."""
    try:
        import mmap
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            for offset, size in string_ranges(m):
                # mmap.find is a C-speed search; the pattern is checked only where "ncclComm" occurs.
                at = m.find(b"ncclComm", offset, offset + size)
                while at >= 0:
                    if NCCL_NAMES.match(m, at):
                        return True
                    at = m.find(b"ncclComm", at + 1, offset + size)
            return False
    except Exception:
        return False


class ExtensionRecorder:
    """Wraps the functions of NCCL-calling extension modules; one per process."""

    def __init__(self, hook, trace_dir):
        # hook: emit(record), site_and_chain(depth, innermost), local (the torch wrapper's thread-local depth)
        self.hook = hook
        self.trace_dir = trace_dir
        self.host = socket.gethostname()

    def plugin_size(self):
        """The size of this process's profiler-plugin records file (-1 before the plugin wrote one)."""
        try:
            return os.stat(os.path.join(self.trace_dir, "%s-%d.jsonl" % (self.host, os.getpid()))).st_size
        except Exception:
            return -1

    def wrap(self, module, name, fn):
        """A Python function calling `fn` exactly, recording the call when the plugin wrote during it."""
        hook, api = self.hook, "%s.%s" % (module.__name__, name)

        def wrapper(*args, **kwargs):
            if getattr(hook.local, "depth", 0) > 0:
                return fn(*args, **kwargs)
            size0 = self.plugin_size()
            t0 = time.monotonic_ns()
            try:
                result = fn(*args, **kwargs)
            except BaseException as err:
                self.record(api, t0, size0, False, type(err).__name__)
                raise
            self.record(api, t0, size0, True, None)
            return result

        try:
            import functools
            functools.update_wrapper(wrapper, fn)
        except Exception:
            pass
        wrapper.__commcost_wrapped__ = True
        return wrapper

    def record(self, api, t0, size0, ok, error):
        t1 = time.monotonic_ns()
        try:
            if self.plugin_size() == size0:
                return
            record = {"k": "call", "api": api, "via": "extension", "t0": t0, "t1": t1, "tid": threading.get_native_id(), "ok": ok}
            record["site"], record["chain"] = self.hook.site_and_chain(3, True)
            if error:
                record["error"] = error
            self.hook.emit(record)
        except Exception:
            pass

    def instrument(self, module):
        """Wraps `module`'s functions when its file names NCCL's lifecycle (see the module text)."""
        name = getattr(module, "__name__", "") or ""
        path = getattr(module, "__file__", None)
        if not path or name == "torch" or name.startswith("torch.") or not calls_nccl(path):
            return
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") or type(value).__name__ not in FUNCTION_TYPES:
                continue
            if getattr(value, "__commcost_wrapped__", False):
                continue
            try:
                setattr(module, attr, self.wrap(module, attr, value))
            except Exception:
                pass


def instrument_loader(loader_class, recorder):
    """Patches ExtensionFileLoader.exec_module so that each extension module is offered to `recorder`."""
    original = loader_class.exec_module
    if getattr(original, "__commcost_wrapped__", False):
        return

    def exec_module(self, module):
        original(self, module)
        try:
            recorder.instrument(module)
        except Exception:
            pass

    exec_module.__commcost_wrapped__ = True
    exec_module.__wrapped__ = original
    loader_class.exec_module = exec_module
