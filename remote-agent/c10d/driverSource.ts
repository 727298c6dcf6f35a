/**
 * The c10d driver's Python source (its docstring says what it does). Kept as a string so the
 * agent stays one bundle: experiments/c10d.ts writes it into a private folder of the rank process
 * (remote-agent/privateDir.ts: mkdtemp, 0700, a new 0600 file) and runs it with the host's Python. test/unit/c10dDriver.test.ts compiles it and tests its barrier client.
 */
export const DRIVER_SOURCE = String.raw`"""commcost's c10d driver: one process per rank, started by the agent's rank process.

It times PyTorch's process-group lifecycle (torch.distributed) with commcost's method: before
every timed call it takes the agent's TCP barrier (the same server and generations as the
native ranks), times the call with time.perf_counter_ns (collectives include
torch.cuda.synchronize), and reports each iteration as one JSON line on stdout.

Protocol (JSON lines): stdin from the agent: {"cmd": "iteration", "gen": G} or {"cmd": "exit"};
stdout to the agent: {"t": "ready"} once set up, {"t": "begin"|"end", "op": ...} around each
library call (for the hang guard), {"t": "iteration", "steps": {...ms}, "releaseNs": {...},
"memory": {...bytes}, "gen": last generation used}, {"t": "error", "message": ...}.
Closing stdin ends the process. "python3 driver.py probe" prints what the host's torch
supports; "python3 driver.py barrier-selftest HOST PORT RANK N TOKEN" passes N barrier generations.
"""
import inspect
import json
import os
import socket
import struct
import sys
import threading
import time

MAGIC = 0x52424343
HELLO_MAGIC = 0x48424343


def emit(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def probe():
    """Prints {"torch": version, "ncclVersion": "2.x.y", "features": {...}} or {"error": ...}."""
    try:
        import torch
        import torch.distributed as dist
    except Exception as e:  # no torch on this host
        emit({"error": f"{type(e).__name__}: {e}"})
        return
    features = {
        "device_id": "device_id" in inspect.signature(dist.init_process_group).parameters,
        "split_group": hasattr(dist, "split_group"),
        "shrink_group": hasattr(dist, "shrink_group"),
        "abort": hasattr(dist.distributed_c10d, "_abort_process_group") or hasattr(dist.ProcessGroup, "abort"),
        "nccl": dist.is_nccl_available(),
        "cuda": torch.cuda.is_available(),
    }
    nccl = None
    try:
        v = torch.cuda.nccl.version()
        nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
    emit({"torch": torch.__version__, "ncclVersion": nccl, "features": features})


class Barrier:
    """Client of the agent's barrier: hello with the session's secret, then arrive(rank, gen), wait for release(gen)."""

    def __init__(self, host, port, rank, token):
        secret = token.encode("latin-1")
        if len(secret) != 32:
            raise RuntimeError(f"the barrier's session secret must be 32 characters, got {len(secret)}")
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rank = rank
        self.sock.sendall(struct.pack("<II", HELLO_MAGIC, rank) + secret)

    def wait(self, gen):
        self.sock.sendall(struct.pack("<IIQ", MAGIC, self.rank, gen))
        got = b""
        while len(got) < 8:
            chunk = self.sock.recv(8 - len(got))
            if not chunk:
                raise RuntimeError("barrier connection closed")
            got += chunk
        released = time.monotonic_ns()
        echoed = struct.unpack("<Q", got)[0]
        if echoed != gen:
            raise RuntimeError(f"barrier released generation {echoed}, expected {gen}")
        return released


class Driver:
    def __init__(self, variant):
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.variant = variant
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.local = int(os.environ["LOCAL_RANK"])
        self.store_dir = os.environ["COMMCOST_C10D_STORE_DIR"]
        self.first_bytes = int(os.environ.get("COMMCOST_FIRST_BYTES", str(1 << 20)))
        torch.cuda.set_device(self.local)
        self.device = torch.device("cuda", self.local)
        self.buf = torch.ones(self.first_bytes // 4, dtype=torch.float32, device=self.device)
        host, port = os.environ["COMMCOST_BARRIER"].rsplit(":", 1)
        self.barrier = Barrier(host, int(port), self.rank, os.environ.get("COMMCOST_BARRIER_TOKEN", ""))
        self.store_seq = 0
        self.gen = 0
        self.steps, self.release, self.memory = {}, {}, {}

    # -- helpers ---------------------------------------------------------------------------
    def op(self, name, fn):
        emit({"t": "begin", "op": name})
        out = fn()
        emit({"t": "end", "op": name})
        return out

    def timed(self, step, name, fn):
        self.gen += 1
        emit({"t": "begin", "op": name})
        self.release[step] = self.barrier.wait(self.gen)
        t0 = time.perf_counter_ns()
        out = fn()
        self.steps[step] = (time.perf_counter_ns() - t0) / 1e6
        emit({"t": "end", "op": name})
        return out

    def sit_out(self):
        self.gen += 1
        self.barrier.wait(self.gen)

    def allreduce(self, group=None):
        self.dist.all_reduce(self.buf, group=group)
        self.torch.cuda.synchronize()

    def free(self):
        return self.torch.cuda.mem_get_info()[0]

    def new_store(self):
        self.store_seq += 1
        name = self.variant.replace("/", "_")
        return self.dist.FileStore(os.path.join(self.store_dir, f"store-{name}-{self.store_seq}"), self.world)

    def init(self, eager):
        kwargs = {"backend": "nccl", "store": self.new_store(), "rank": self.rank, "world_size": self.world}
        if eager:
            kwargs["device_id"] = self.device
        self.dist.init_process_group(**kwargs)

    def abort_default(self):
        c10d = self.dist.distributed_c10d
        if hasattr(c10d, "_abort_process_group"):
            c10d._abort_process_group()
        else:
            self.dist.group.WORLD.abort()

    # -- variants --------------------------------------------------------------------------
    def setup(self):
        kind = self.variant.split("/")[0]
        if kind in ("new_group", "split_group", "shrink_group"):
            eager = self.variant != "new_group/lazy-default"
            self.op("init_process_group (default group)", lambda: self.init(eager))
            self.op("all_reduce (warm default group)", self.allreduce)

    def teardown(self):
        if self.dist.is_initialized():
            self.op("destroy_process_group", lambda: self.dist.destroy_process_group())

    def iteration(self):
        v = self.variant
        base = self.free()
        if v in ("init/lazy", "init/eager"):
            self.timed("call", "init_process_group", lambda: self.init(v == "init/eager"))
            self.memory["afterCall"] = base - self.free()
            self.timed("first", "first all_reduce", self.allreduce)
            self.memory["afterFirst"] = base - self.free()
            self.timed("second", "second all_reduce", self.allreduce)
            self.timed("destroy", "destroy_process_group", lambda: self.dist.destroy_process_group())
        elif v.startswith("new_group/") or v == "split_group":
            everyone = list(range(self.world))
            if v == "split_group":
                g = self.timed("call", "split_group", lambda: self.dist.split_group(split_ranks=[everyone]))
            else:
                g = self.timed("call", "new_group", lambda: self.dist.new_group(ranks=everyone))
            self.memory["afterCall"] = base - self.free()
            self.timed("first", "first all_reduce", lambda: self.allreduce(g))
            self.memory["afterFirst"] = base - self.free()
            self.timed("second", "second all_reduce", lambda: self.allreduce(g))
            self.op("destroy_process_group (group)", lambda: self.dist.destroy_process_group(g))
        elif v == "shrink_group":
            g = self.op("new_group", lambda: self.dist.new_group(ranks=list(range(self.world))))
            self.op("all_reduce (warm group)", lambda: self.allreduce(g))
            excluded = self.world - 1
            if self.rank == excluded:
                # torch's shrink_group releases the parent group on the survivors, and that waits
                # for every member (measured, torch 2.11 + NCCL 2.28: it returned only when the
                # excluded rank's process ended). So the excluded rank releases its group while
                # the survivors shrink, as a rank that leaves on purpose would.
                self.sit_out()
                self.op("destroy_process_group (group, excluded rank)", lambda: self.dist.destroy_process_group(g))
                self.sit_out()
            else:
                s = self.timed("call", "shrink_group", lambda: self.dist.shrink_group([excluded], group=g))
                # No memory point here: the call both builds the child and releases the parent.
                self.timed("first", "first all_reduce", lambda: self.allreduce(s))
                self.op("destroy_process_group (shrunk)", lambda: self.dist.destroy_process_group(s))
                # torch 2.11's shrink_group has released g; a torch that keeps it gets it destroyed here.
                if g in getattr(getattr(self.dist.distributed_c10d, "_world", None), "pg_map", {}):
                    self.op("destroy_process_group (group)", lambda: self.dist.destroy_process_group(g))
        elif v == "abort":
            self.op("init_process_group", lambda: self.init(True))
            self.op("all_reduce (first)", self.allreduce)
            self.timed("abort", "abort process group", self.abort_default)
            if self.dist.is_initialized():
                try:
                    self.op("destroy_process_group (after abort)", lambda: self.dist.destroy_process_group())
                except Exception as e:  # the aborted group may refuse; the next init must still work
                    emit({"t": "log", "message": f"destroy after abort: {e}"})
        else:
            raise RuntimeError(f"unknown c10d variant {v}")


pending = []
pending_ready = threading.Event()
# Set once the agent asked the driver to exit and teardown is done: EOF on stdin is then normal.
exiting = threading.Event()


def read_stdin():
    """Queues stdin lines; exits the process at EOF (the agent went away)."""
    for line in sys.stdin:
        pending.append(line)
        pending_ready.set()
    os._exit(0 if exiting.is_set() else 3)


def barrier_selftest(host, port, rank, count, token):
    b = Barrier(host, int(port), int(rank), token)
    emit({"released": [b.wait(g) for g in range(1, int(count) + 1)]})


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "probe":
        probe()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "barrier-selftest":
        barrier_selftest(*sys.argv[2:7])
        return
    variant = sys.argv[1]
    threading.Thread(target=read_stdin, daemon=True).start()
    try:
        driver = Driver(variant)
        driver.setup()
        emit({"t": "ready"})
        while True:
            while not pending:
                pending_ready.wait(1)
                pending_ready.clear()
            cmd = json.loads(pending.pop(0))
            if cmd["cmd"] == "exit":
                driver.teardown()
                exiting.set()
                emit({"t": "bye"})
                # Exit now: the stdin reader ends the process with 3 when the agent closes stdin
                # after "bye", and the interpreter's own shutdown would race it.
                sys.stdout.flush()
                os._exit(0)
            driver.gen = cmd["gen"] - 1
            driver.steps, driver.release, driver.memory = {}, {}, {}
            driver.iteration()
            emit({"t": "iteration", "steps": driver.steps, "releaseNs": driver.release, "memory": driver.memory, "gen": driver.gen})
    except Exception as e:
        emit({"t": "error", "message": f"{type(e).__name__}: {e}"})
        os._exit(2)


if __name__ == "__main__":
    main()
`;
