// A stand-in for dist/agent.js in the comparison CLI tests (test/unit/compareCli.test.ts): speaks
// protocol 1 and reports the NCCL version found in the --nccl path (…/2.28.9/libnccl.so.2 →
// 2.28.9), with call samples of 10 × the patch number + 0, 1, 2 … ms (2.28.9 → 90, 91, 92), so
// that runs of different libraries differ. Not simulated: its stamp says "explicit".
'use strict';
const out = (ev) => process.stdout.write(JSON.stringify(ev) + '\n');
out({ type: 'agent/hello', protocolVersion: 1, agentVersion: 'fake', pid: process.pid });
let buf = '';
process.stdin.on('data', (d) => {
  buf += d.toString();
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const cmd = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    if (cmd.type === 'run/start') run(cmd.options);
  }
});
process.stdin.on('end', () => process.exit(0));
function run(options) {
  const path = options.ncclPath || '/search/2.0.0/libnccl.so.2';
  const version = (/(\d+\.\d+\.\d+)/.exec(path) || [])[1] || '0.0.0';
  const base = Number(version.split('.')[2]) * 10;
  const stamp = {
    hostname: 'fakehost', gpus: [{ ordinal: 0, name: 'Fake GPU', totalBytes: 1, pciBusId: '0' }], driverVersion: '0',
    ncclVersion: version, ncclVersionCode: 0, ncclPath: path, ncclSource: 'explicit', ncclSymbols: {}, topology: 'none', ncclEnv: {},
    commcostVersion: '0', nodeVersion: process.version, platform: process.platform, startedAt: new Date().toISOString(), simulated: false,
  };
  const steps = [{ step: 'call', label: 'ncclCommInitRank', kind: 'call' }];
  out({ type: 'run/plan', stamp, options, ranks: 1, simulated: false, experiments: options.experiments.map((e) => ({ experiment: e, variants: [{ variant: 'default', steps }] })) });
  for (const experiment of options.experiments) {
    const samples = [];
    for (let it = 0; it < options.iterations; it++) {
      const ms = base + it;
      samples.push(ms);
      out({ type: 'run/sample', experiment, variant: 'default', iteration: it, warmup: false, steps: { call: ms }, perRank: { call: [ms] } });
    }
    const s = [...samples].sort((a, b) => a - b);
    const stats = { median: s[Math.floor(s.length / 2)], p90: s[s.length - 1], min: s[0], max: s[s.length - 1], mean: s[0], n: s.length };
    out({ type: 'experiment/summary', experiment, variants: [{ variant: 'default', steps: [{ ...steps[0], stats, samples }] }] });
  }
  out({ type: 'run/done', status: 'complete', wallMs: 1, libraryMs: 1, endedAt: new Date().toISOString() });
}
