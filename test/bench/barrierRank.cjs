// One rank of the barrier benchmark: connects the native barrier client (and maps the one-host
// release when COMMCOST_BARRIER_SHM names it), passes `count` generations and prints each release
// time (CLOCK_MONOTONIC ns) as one JSON array on stdout. With COMMCOST_BENCH_ARRIVE_SPREAD_US=S,
// each generation's arrival is delayed by a busy wait of 0–S µs (a fixed pseudo-random sequence per
// rank), so that ranks do not arrive back to back inside the release's spin window.
'use strict';
const native = require(process.env.COMMCOST_NATIVE);
const [port, rank, count, world] = process.argv.slice(2).map(Number);
native.barrierConnect('127.0.0.1', port, rank, process.env.COMMCOST_BARRIER_TOKEN);
if (process.env.COMMCOST_BARRIER_SHM) native.barrierAttachShm(process.env.COMMCOST_BARRIER_SHM, world);
(async () => {
  const out = [];
  const spreadNs = Number(process.env.COMMCOST_BENCH_ARRIVE_SPREAD_US ?? 0) * 1000;
  let seed = (rank + 1) * 2654435761 >>> 0;
  for (let gen = 1; gen <= count; gen++) {
    if (spreadNs > 0) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      const until = process.hrtime.bigint() + BigInt(Math.floor((seed / 2 ** 32) * spreadNs));
      while (process.hrtime.bigint() < until);
    }
    out.push((await native.barrierWait(gen)).releaseNs);
  }
  process.stdout.write(JSON.stringify(out));
})();
