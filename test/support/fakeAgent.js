#!/usr/bin/env node
// A stand-in for dist/agent.js in SSH tests: speaks protocol 1 (hello, plan, samples, summary,
// done), ~20 ms per iteration, stops on run/cancel (run/done partial) and exits on stdin EOF.
// COMMCOST_FAKE_MARKER
'use strict';
const out = (ev) => process.stdout.write(JSON.stringify(ev) + '\n');
out({ type: 'agent/hello', protocolVersion: 1, agentVersion: 'fake', pid: process.pid });
let cancelled = false;
let buf = '';
process.stdin.on('data', (d) => {
  buf += d.toString();
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    const cmd = JSON.parse(line);
    if (cmd.type === 'run/start') void run(cmd.options);
    if (cmd.type === 'run/cancel') cancelled = true;
  }
});
process.stdin.on('end', () => process.exit(0));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function run(options) {
  const t0 = Date.now();
  const stamp = {
    hostname: 'fake', gpus: [{ ordinal: 0, name: 'Fake GPU', totalBytes: 1, pciBusId: '0' }], driverVersion: '0',
    ncclVersion: '2.28.9', ncclVersionCode: 22809, ncclPath: '/fake/libnccl.so.2', ncclSource: 'simulated', ncclSymbols: {},
    topology: 'none', ncclEnv: {}, commcostVersion: '0', nodeVersion: process.version, platform: process.platform,
    startedAt: new Date().toISOString(), simulated: true,
  };
  const steps = [{ step: 'call', label: 'ncclCommInitRank', kind: 'call' }];
  out({ type: 'run/plan', stamp, options, ranks: 1, simulated: true, experiments: options.experiments.map((e) => ({ experiment: e, variants: [{ variant: 'default', steps }] })) });
  const total = options.warmup + options.iterations;
  for (const experiment of options.experiments) {
    const samples = [];
    for (let it = 0; it < total && !cancelled; it++) {
      out({ type: 'run/progress', experiment, variant: 'default', iteration: it, total, warmup: it < options.warmup, experimentIndex: 0, experimentCount: options.experiments.length });
      await sleep(20);
      const ms = 1 + it;
      if (it >= options.warmup) samples.push(ms);
      out({ type: 'run/sample', experiment, variant: 'default', iteration: it, warmup: it < options.warmup, steps: { call: ms }, perRank: { call: [ms] } });
    }
    if (cancelled) break;
    const s = [...samples].sort((a, b) => a - b);
    const stats = { median: s[Math.floor(s.length / 2)], p90: s[s.length - 1], min: s[0], max: s[s.length - 1], mean: s.reduce((a, b) => a + b, 0) / s.length, n: s.length };
    out({ type: 'experiment/summary', experiment, variants: [{ variant: 'default', steps: [{ ...steps[0], stats, samples }] }] });
  }
  out({ type: 'run/done', status: cancelled ? 'partial' : 'complete', wallMs: Date.now() - t0, libraryMs: 1, endedAt: new Date().toISOString() });
}
