// Child of bench.ts section 2: the polling loop of a non-blocking call inside its timed span, on the
// simulated NCCL at one rank with a fixed init cost (COMMCOST_SIM_INIT_MS, no jitter). Alternates
// ncclCommInitRank blocking and non-blocking (config.blocking = 0: the addon polls
// ncclCommGetAsyncError with sched_yield inside the span until the library's own thread is done),
// `count` of each, every communicator destroyed before the next; prints
// {"blocking": [ms…], "nonBlocking": [ms…]} (each the span's `ms`, as a figure reports it).
'use strict';
const native = require(process.env.COMMCOST_NATIVE);
const [sim, count] = [process.argv[2], Number(process.argv[3])];
native.load({ ncclPath: sim, cudaPath: sim });
(async () => {
  await native.initDevice(0, 1 << 20);
  const out = { blocking: [], nonBlocking: [] };
  for (let i = 0; i < count; i++) {
    for (const blocking of i % 2 === 0 ? [1, 0] : [0, 1]) {
      const { id } = await native.getUniqueId();
      const r = await native.commInitRank(1, id, 0, { blocking });
      (blocking ? out.blocking : out.nonBlocking).push(r.ms);
      await native.commDestroy(r.comm);
    }
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
