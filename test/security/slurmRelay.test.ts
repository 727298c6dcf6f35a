/**
 * The Slurm relay (remote-agent/slurm.ts) survives a line from the job step longer than the
 * agent's 8 MiB channel cap (issue #21, item 5: a summary of ~66,000 iterations is that long):
 * the run's later lines, `run/done` included, still reach the host.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseAgentEvent } from '../../protocol/events';
import { relayThroughSrun } from '../../remote-agent/slurm';

test('a 9 MiB line from the job step is relayed (or dropped) without ending the relay; run/done arrives', { timeout: 30_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-relay-'));
  const srun = path.join(dir, 'srun');
  // A stand-in srun: rank 0's lines, one of them an experiment/skipped event 9 MiB long.
  fs.writeFileSync(
    srun,
    `#!${process.execPath}
const long = JSON.stringify({ type: 'experiment/skipped', experiment: 'grow', reason: 'x'.repeat(9 * 1024 * 1024) });
process.stdout.write(long + '\\n');
process.stdout.write(JSON.stringify({ type: 'run/done', status: 'complete', wallMs: 1, libraryMs: 0, endedAt: new Date().toISOString() }) + '\\n');
`,
    { mode: 0o755 },
  );
  const lines: string[] = [];
  const logs: string[] = [];
  const relay = relayThroughSrun({ experiments: ['init'], simulate: true }, { srunArgs: [], srunPath: srun }, (l) => lines.push(l), (l) => logs.push(l));
  await relay.done;
  const events = lines.map((l) => parseAgentEvent(l.trimEnd()));
  const done = events.find((e) => e.type === 'run/done');
  assert.ok(done && done.type === 'run/done', `no run/done relayed; log: ${logs.join('\n').slice(0, 2000)}`);
  assert.equal(done.status, 'complete');
  assert.ok(events.some((e) => e.type === 'experiment/skipped'), 'the long line was relayed');
  assert.ok(!events.some((e) => e.type === 'run/error'), JSON.stringify(events.filter((e) => e.type === 'run/error')));
});
