/**
 * The CLI as a user runs it (bin/commcost.js, the built bundle) on the simulated NCCL: Ctrl-C at
 * different moments, output folders checked before measuring, conflicting flags, and `report` on
 * hostile, simulated and foreign files. The agent runs from a private copy so that its processes
 * can be found afterwards by their path.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { agentBuilt, privateAgentCopy, repoRoot, waitGone } from '../support/agentHarness';

const skip = agentBuilt() && fs.existsSync(path.join(repoRoot, 'dist', 'cli.js')) ? false : 'dist/ is not built: run `npm run build` (npm test builds it)';
const bin = path.join(repoRoot, 'bin', 'commcost.js');
const cleanup: string[] = [];
after(() => {
  for (const d of cleanup) fs.rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-cli-it-'));
  cleanup.push(d);
  return d;
};

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs the CLI with piped stdio (so stderr is not a terminal); `onStderr` sees the stderr text so
 * far after each chunk and may send signals.
 */
function cli(args: string[], onStderr?: (text: string, child: ReturnType<typeof spawn>) => void, timeoutMs = 60_000): Promise<CliRun> {
  const started = Date.now();
  const child = spawn(process.execPath, [bin, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    onStderr?.(stderr, child);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    }),
  );
}

/** Sends SIGINT `times` times (10 ms apart) the first time `re` matches stderr. */
function interruptWhen(re: RegExp, times = 1) {
  let sent = false;
  return (text: string, child: ReturnType<typeof spawn>) => {
    if (sent || !re.test(text)) return;
    sent = true;
    for (let i = 0; i < times; i++) setTimeout(() => child.kill('SIGINT'), i * 10);
  };
}

function savedRuns(dir: string): RunFile[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as RunFile);
}

describe('commcost CLI', { skip }, () => {
  const measure = (agentDir: string, saveDir: string, ...extra: string[]) => [
    'measure', '--simulate', '--agent-dir', agentDir, '--save-dir', saveDir, '--warmup', '0', ...extra,
  ];

  test('Ctrl-C before the agent has said hello: partial, saved, exit 1, no agent left', async () => {
    const agent = privateAgentCopy();
    cleanup.push(agent);
    const save = tmp();
    const r = await cli(measure(agent, save, '--iterations', '50', '--experiments', 'init', '--verbose'), interruptWhen(/starting the agent locally/));
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /cancelling: keeping what was measured/);
    assert.match(r.stdout, /: partial/);
    assert.match(r.stdout, /SIMULATED/);
    const [run] = savedRuns(save);
    assert.equal(run?.status, 'partial');
    assert.deepEqual(await waitGone(agent), [], 'no agent or rank process left');
  });

  test('Ctrl-C during the run: plain progress lines on a non-terminal, partial with what was measured, exit 1', async () => {
    const agent = privateAgentCopy();
    cleanup.push(agent);
    const save = tmp();
    const r = await cli(measure(agent, save, '--iterations', '3', '--experiments', 'init,split', '--ranks', '2'), interruptWhen(/init \(1\/2\) finished/));
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^commcost: init \(1\/2\) finished: iteration (\d+)\/\1 \(\d+ variants × 3, 0 warmup each\), \1 recorded \(SIMULATED\)$/m);
    const [run] = savedRuns(save);
    assert.ok(run);
    assert.equal(run.status, 'partial');
    assert.equal(run.experiments[0]?.state, 'finished', 'init kept');
    assert.deepEqual(await waitGone(agent), []);
  });

  test('two Ctrl-Cs at once: stops at once, still saved and partial, exit 1', async () => {
    const agent = privateAgentCopy();
    cleanup.push(agent);
    // The second Ctrl-C is sent as soon as the CLI says it handled the first ("cancelling: …"). On a
    // loaded machine the cancel may still finish the run before the second press arrives: that
    // trial tested nothing (the run ended on the first press, as it should) and is run again, at
    // most twice more.
    let r: CliRun | undefined;
    let save = '';
    for (let attempt = 1; attempt <= 3; attempt++) {
      save = tmp();
      let first = false;
      let second = false;
      r = await cli(measure(agent, save, '--iterations', '500', '--experiments', 'init', '--ranks', '2', '--verbose'), (text, child) => {
        if (!first && /agent .* \(pid \d+\) on localhost/.test(text)) {
          first = true;
          child.kill('SIGINT');
        } else if (first && !second && /cancelling: keeping what was measured/.test(text)) {
          second = true;
          child.kill('SIGINT');
        }
      });
      if (/stopping at once/.test(r.stderr) || !/^saved /m.test(r.stderr) || attempt === 3) break;
      console.log(`two Ctrl-Cs, attempt ${attempt}: the run ended on the first press before the second arrived; run again`);
    }
    assert.ok(r);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /stopping at once/);
    assert.equal(savedRuns(save)[0]?.status, 'partial');
    assert.ok(r.ms < 15_000, `took ${r.ms} ms`);
    assert.deepEqual(await waitGone(agent), []);
  });

  test('SIGTERM during the run (timeout, Slurm at the end of a job): stops at once, what was received saved, partial, exit 1', async () => {
    const agent = privateAgentCopy();
    cleanup.push(agent);
    const save = tmp();
    let sent = false;
    const r = await cli(measure(agent, save, '--iterations', '3', '--experiments', 'init,split', '--ranks', '2'), (text, child) => {
      if (sent || !/init \(1\/2\) finished/.test(text)) return;
      sent = true;
      child.kill('SIGTERM');
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /SIGTERM: stopping at once/);
    const [run] = savedRuns(save);
    assert.ok(run, 'the run is saved');
    assert.equal(run.status, 'partial');
    assert.equal(run.experiments[0]?.state, 'finished', 'init kept');
    assert.deepEqual(await waitGone(agent), []);
  });

  test('output folders and conflicting flags are refused before anything is measured (exit 2)', async () => {
    const dir = tmp();
    const afile = path.join(dir, 'afile');
    fs.writeFileSync(afile, '');
    const cases: [string[], RegExp][] = [
      [['--save-dir', afile], /--save-dir .*afile is a file, not a folder/],
      [['--save-dir', '/proc/nope'], /--save-dir \/proc\/nope is under \/proc/],
      [['--save-dir', dir, '--json', '/nonexistent/dir/x.json'], /--json \/nonexistent\/dir\/x.json: the folder \/nonexistent\/dir does not exist/],
      [['--save-dir', dir, '--html', '/nonexistent/dir/x.html'], /--html \/nonexistent\/dir\/x.html: the folder \/nonexistent\/dir does not exist/],
      [['--save-dir', dir, '--nccl', '/nonexistent'], /--nccl and --simulate conflict/],
      [['--save-dir', dir, '--host', 'a;b'], /host name "a;b" contains the shell character ";"/],
    ];
    for (const [args, re] of cases) {
      const r = await cli(['measure', '--simulate', '--experiments', 'init', ...args], undefined, 15_000);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
      assert.doesNotMatch(r.stderr, /internal error|at .*\.js:\d+/);
      assert.equal(r.stdout, '', 'nothing measured');
    }
    assert.deepEqual(fs.readdirSync(dir).sort(), ['afile']);
  });

  test('report: escapes what the file holds, labels it SIMULATED by any mark, refuses a foreign file', async () => {
    const dir = tmp();
    const run = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as RunFile;
    run.host = 'gpu\x1b[2J\x1b]0;pwned\x07';
    run.experiments[0]!.variants[0]!.steps[0]!.label = 'init\x1b[31m';
    run.stamp!.simulated = true; // the top-level flag stays false
    const file = path.join(dir, 'hostile.json');
    fs.writeFileSync(file, JSON.stringify(run));
    const r = await cli(['report', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('\x1b') && !r.stderr.includes('\x1b'), 'no ESC reaches the terminal');
    assert.ok(r.stdout.includes('gpu\\x1b[2J\\x1b]0;pwned\\x07'));
    assert.match(r.stdout, /^\*\*\* SIMULATED NCCL/);
    assert.ok(!fs.existsSync(path.join(dir, 'hostile.html')), 'no page without --html');
    const page = await cli(['report', file, '--html']);
    assert.equal(page.code, 0, page.stderr);
    assert.ok(!page.stderr.includes('\x1b'));
    assert.ok(fs.existsSync(path.join(dir, 'hostile.html')));

    const ref = await cli(['report', path.join(repoRoot, 'docs', 'results', 'h200x2-nccl2.28.9-wheel.reference.json'), '--html', path.join(dir, 'ref.html')]);
    assert.equal(ref.code, 2);
    assert.match(ref.stderr, /is not a commcost run file: it has no "schema" field/);
    assert.doesNotMatch(ref.stderr, /another version|measure again/);

    const noDir = await cli(['report', file, '--html', '/nonexistent/dir/x.html']);
    assert.equal(noDir.code, 2);
    assert.match(noDir.stderr, /the folder \/nonexistent\/dir does not exist/);
  });

  test('one GPU and no --experiments: the one-GPU set runs (cold start, connect mode, …) and split says it needs 2 GPUs; a chosen set is kept', async () => {
    const dir = tmp();
    const byDefault = await cli(['measure', '--simulate', '--ranks', '1', '--iterations', '1', '--warmup', '0', '--json', path.join(dir, 'd.json'), '--save-dir', dir], undefined, 120_000);
    assert.equal(byDefault.code, 0, byDefault.stderr);
    const d = JSON.parse(fs.readFileSync(path.join(dir, 'd.json'), 'utf8')) as RunFile;
    assert.deepEqual(d.options.experiments, ['init', 'cold-start', 'split', 'destroy', 'abort', 'connect-mode', 'suspend']);
    assert.ok(d.experiments.some((e) => e.experiment === 'cold-start'), 'cold-start ran');
    assert.match(d.skipped.find((s) => s.experiment === 'split')?.reason ?? '', /needs 2 GPUs/);
    assert.match(byDefault.stdout, /skipped split: needs 2 GPUs/);

    const chosen = await cli(['measure', '--simulate', '--ranks', '1', '--iterations', '1', '--warmup', '0', '--experiments', 'init,split,destroy,abort', '--json', path.join(dir, 'c.json'), '--save-dir', dir], undefined, 120_000);
    assert.equal(chosen.code, 0, chosen.stderr);
    const c = JSON.parse(fs.readFileSync(path.join(dir, 'c.json'), 'utf8')) as RunFile;
    assert.deepEqual(c.options.experiments, ['init', 'split', 'destroy', 'abort']);
  });

  test('every message a rank sends in a default 2-rank catalogue passes the wire check (setup ops included)', async () => {
    const dir = tmp();
    // Split, shrink and the pool create communicators in their variants' untimed setup: the rank
    // announces those ops (iteration -1) so that the hang guard can name them.
    const r = await cli(['measure', '--simulate', '--ranks', '2', '--iterations', '1', '--warmup', '0', '--verbose', '--save-dir', dir], undefined, 120_000);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /malformed message/, 'a rank message was refused by the wire check');
    assert.match(r.stderr, /split \(\d+\/\d+\) finished/, 'split ran (it has a setup)');
  });

  test('a reader that goes away (| head) does not crash the CLI with EPIPE', async () => {
    const { spawnSync } = await import('node:child_process');
    // The reader closes its end at once, so every write of the CLI meets EPIPE.
    const r = spawnSync('sh', ['-c', `"${process.execPath}" "${bin}" measure --help | (exec 0<&-; sleep 0.5)`], { encoding: 'utf8', timeout: 30_000 });
    assert.doesNotMatch(r.stderr, /EPIPE|Unhandled 'error' event/, r.stderr);
  });
});

