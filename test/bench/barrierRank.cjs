// One rank of the barrier benchmark: connects the native barrier client (and maps the one-host
// release when COMMCOST_BARRIER_SHM names it), passes `count` generations and prints each release
// time (CLOCK_MONOTONIC ns) as one JSON array on stdout.
'use strict';
const native = require(process.env.COMMCOST_NATIVE);
const [port, rank, count, world] = process.argv.slice(2).map(Number);
native.barrierConnect('127.0.0.1', port, rank, process.env.COMMCOST_BARRIER_TOKEN);
if (process.env.COMMCOST_BARRIER_SHM) native.barrierAttachShm(process.env.COMMCOST_BARRIER_SHM, world);
(async () => {
  const out = [];
  for (let gen = 1; gen <= count; gen++) out.push((await native.barrierWait(gen)).releaseNs);
  process.stdout.write(JSON.stringify(out));
})();
