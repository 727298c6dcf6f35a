/**
 * A corpus of bad inputs ("hard to break"), data-driven: every entry is `check(input, pattern)`
 * and must end in a typed error whose text says what is wrong and where (matched by `pattern`),
 * never in a crash (a TypeError, a RangeError, an unhandled rejection) or a hang.
 *
 * Sources: agent protocol lines and whole agent streams (parseAgentEvent, runMeasurement's line
 * handling with a fake agent), run files (validateRunFile / loadRun), the VS Code settings, the
 * CLI's flags, host names; then shell quoting proved with a real `sh`, and an XSS corpus through
 * renderReport, parsed back with parse5.
 *
 * Covered elsewhere and not repeated here: a tampered deploy folder is re-uploaded
 * (test/integration/ssh.test.ts, "deploy uploads, skips when present, re-uploads a tampered
 * file"); a changed host key is refused for every policy, naming the known_hosts file and line
 * (ssh.test.ts, "mismatched host key is refused naming the file and line"; the `mismatch` outcome
 * in test/unit/client.test.ts, "known_hosts").
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAgentEvent, ProtocolError, type RunOptions } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { main } from '../../cli/main';
import { remoteHashes, findRemoteNode } from '../../client/deploy';
import { CommcostError } from '../../client/errors';
import { checkTargetName } from '../../client/hosts';
import { renderReport } from '../../client/htmlReport';
import { checkOutputFile, loadRun, saveRun } from '../../client/resultsStore';
import { readRegularFile, writeFileSafely } from '../../client/safeWrite';
import { appendHostKey } from '../../client/knownHosts';
import { srunArgsFor } from '../../client/slurm';
import { nodeMessageProblem, rankMessageProblem } from '../../protocol/agentWire';
import { helloProblem } from '../../remote-agent/nodes';
import { validateRunFile } from '../../client/runFileSchema';
import { runMeasurement } from '../../client/runSession';
import { shellCommand } from '../../client/shellQuote';
import type { ExecResult, RemoteExec } from '../../client/sshSession';
import { readSettings, SettingsError } from '../../extension/settings';
import { normalizeOptions, RunSetupError } from '../../remote-agent/coordinator';
import { locateNccl } from '../../remote-agent/ncclLocator';
import { runWithMemoryPoints } from '../support/memoryPointsRun';

const repoRoot = join(__dirname, '..', '..');
const tmp = () => mkdtempSync(join(tmpdir(), 'commcost-bad-'));
const goodRun = (): RunFile => JSON.parse(readFileSync(join(repoRoot, 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as RunFile;

/** Typed errors of the product: anything else thrown by a bad input counts as a crash. */
const TYPED = [CommcostError, ProtocolError, SettingsError];
let corpusSize = 0;

/** The text a user is shown for an error: message, and the hint where there is one. */
function shown(e: unknown): string {
  if (e instanceof CommcostError) return e.describe();
  return e instanceof Error ? e.message : String(e);
}

/**
 * One corpus entry: `input()` must throw (or reject with) a typed error whose shown text matches
 * `expected`, within 5 s, with a bounded message (a 1 MB input must not come back whole).
 */
function check(name: string, input: () => unknown, expected: RegExp, typed: readonly (abstract new (...a: never[]) => Error)[] = TYPED): void {
  corpusSize++;
  test(name, { timeout: 5000 }, async () => {
    let caught: unknown;
    try {
      await input();
    } catch (e) {
      caught = e;
    }
    assert.ok(caught !== undefined, 'expected an error, the input was accepted');
    assert.ok(
      typed.some((t) => caught instanceof t),
      `crash instead of a typed error: ${caught instanceof Error ? caught.stack : String(caught)}`,
    );
    const text = shown(caught);
    assert.match(text, expected);
    assert.ok(text.length < 2000, `message of ${text.length} characters`);
  });
}

// ------------------------------------------------------------------------------------------------
// 1. Agent protocol lines

describe('protocol lines from the agent', () => {
  const hello = { type: 'agent/hello', protocolVersion: 1, agentVersion: '0.1.0', pid: 1 };
  const line = (o: unknown) => JSON.stringify(o);
  const cases: [string, string, RegExp][] = [
    ['empty line', '', /agent sent a line that is not JSON/],
    ['plain text (a crash message on stdout)', 'Segmentation fault (core dumped)', /not JSON: Segmentation fault/],
    ['truncated JSON', '{"type":"run/sample","experiment":"ini', /not JSON: \{"type":"run\/sample"/],
    ['a JSON array', '[1,2]', /unknown message: \[1,2\]/],
    ['JSON null', 'null', /unknown message: null/],
    ['unknown type', line({ type: 'run/explode' }), /unknown message: .*run\/explode/],
    ['numeric type', line({ type: 42 }), /unknown message/],
    ['no type', line({ experiment: 'init' }), /unknown message/],
    ['__proto__ as type', line({ type: '__proto__' }), /unknown message/],
    ['type hidden in __proto__', '{"__proto__":{"type":"run/done"}}', /unknown message/],
    ['wrong protocol version', line({ ...hello, protocolVersion: 2 }), /agent speaks protocol 2, this side speaks 1: redeploy the agent/],
    ['protocol version as a string', line({ ...hello, protocolVersion: '1' }), /agent speaks protocol 1, this side speaks 1|speaks protocol/],
    ['hello without a version', line({ type: 'agent/hello' }), /agent speaks protocol undefined/],
    ['sample without steps', line({ type: 'run/sample', experiment: 'init', variant: 'default', iteration: 0, warmup: false }), /malformed run\/sample: "steps" must map step ids to finite numbers/],
    ['sample with a string figure', line({ type: 'run/sample', experiment: 'init', variant: 'd', iteration: 0, warmup: false, steps: { call: 'fast' }, perRank: {} }), /malformed run\/sample: "steps"/],
    ['sample of an unknown experiment', line({ type: 'run/sample', experiment: 'rm -rf', variant: 'd', iteration: 0, warmup: false, steps: {}, perRank: {} }), /malformed run\/sample: needs a known "experiment"/],
    ['sample with a __proto__ step', `{"type":"run/sample","experiment":"init","variant":"d","iteration":0,"warmup":false,"steps":{"__proto__":1},"perRank":{}}`, /malformed run\/sample: "steps"/],
    ['plan without a stamp', line({ type: 'run/plan', options: { experiments: ['init'], iterations: 1, warmup: 0, deadlineSeconds: 1 }, ranks: 2, simulated: true, experiments: [] }), /malformed run\/plan: "stamp" must be an environment stamp/],
    ['plan with experiments as an object', line({ type: 'run/plan', options: { experiments: {}, iterations: 1, warmup: 0, deadlineSeconds: 1 } }), /malformed run\/plan: "options" must hold known "experiments"/],
    ['summary with NaN-as-string stats', line({ type: 'experiment/summary', experiment: 'init', variants: [{ variant: 'd', steps: [{ step: 'call', label: 'x', kind: 'call', stats: { median: 'NaN', p90: 1, min: 1, max: 1, mean: 1, n: 1 }, samples: [] }] }] }), /malformed experiment\/summary/],
    ['error without where', line({ type: 'run/error', code: 'TIMEOUT', message: 'x', fatal: true }), /malformed run\/error: needs "code", "message", "where" and "fatal"/],
    ['done with an unknown status', line({ type: 'run/done', status: 'exploded', wallMs: 1, libraryMs: 1, endedAt: 'x' }), /malformed run\/done: needs "status" \(complete, partial or failed\)/],
    ['a 1 MB line of garbage', 'x'.repeat(1 << 20), /not JSON: x{200}$/],
  ];
  for (const [name, text, re] of cases) check(`protocol: ${name}`, () => parseAgentEvent(text), re);
});

// ------------------------------------------------------------------------------------------------
// 2. Whole agent streams through runMeasurement (a fake agent.js prints them)

describe('agent streams through the run session', () => {
  const options: RunOptions = { experiments: ['init'], iterations: 1, warmup: 0, deadlineSeconds: 5, simulate: true };
  const HELLO = JSON.stringify({ type: 'agent/hello', protocolVersion: 1, agentVersion: 'fake', pid: 1 }) + '\n';
  /**
   * Runs a fake agent that writes `stdout` (and `stderr`), then exits with `code` (or waits for
   * stdin EOF when code is undefined). @throws the CommcostError of the session, or the fatal
   * error entry of the run it resolved with.
   */
  async function session(stdout: string, opts: { stderr?: string; code?: number } = {}): Promise<never> {
    const dir = tmp();
    mkdirSync(join(dir, 'native'));
    writeFileSync(join(dir, 'out'), stdout);
    writeFileSync(
      join(dir, 'agent.js'),
      `const fs = require('fs');
process.stderr.write(${JSON.stringify(opts.stderr ?? '')});
process.stdout.write(fs.readFileSync(__dirname + '/out'), () => {
  ${opts.code === undefined ? "process.stdin.on('end', () => process.exit(0)); process.stdin.resume();" : `process.exit(${opts.code});`}
});`,
    );
    const run = await runMeasurement({ target: 'localhost', options, agentDir: dir }, { onRun: () => undefined, onLog: () => undefined });
    const last = run.errors.at(-1);
    assert.ok(last, `the run resolved ${run.status} without an error entry`);
    assert.notEqual(run.status, 'complete');
    throw new CommcostError(last.code, last.message, last.hint ? { hint: last.hint } : {});
  }
  const sample = JSON.stringify({ type: 'run/sample', experiment: 'init', variant: 'default', iteration: 0, warmup: false, steps: { call: 1 }, perRank: { call: [1] } }) + '\n';
  const cases: [string, () => Promise<never>, RegExp][] = [
    ['a malformed sample after the hello (no crash: the run ends with PROTOCOL)', () => session(HELLO + '{"type":"run/sample","experiment":"init"}\n'), /agent on localhost broke the protocol: agent sent a malformed run\/sample[\s\S]*hint: /],
    ['a stream truncated mid-line, then exit', () => session(HELLO + sample + '{"type":"run/sample","exper', { code: 0 }), /agent on localhost broke the protocol: agent sent a line that is not JSON|agent on localhost exited/],
    ['a wrong protocol version in the hello', () => session(JSON.stringify({ type: 'agent/hello', protocolVersion: 99, agentVersion: 'x', pid: 1 }) + '\n'), /speaks protocol 99, this side speaks 1: redeploy the agent[\s\S]*hint: /],
    ['garbage before the hello', () => session('Illegal instruction\n'), /broke the protocol: agent sent a line that is not JSON: Illegal instruction/],
    ['an agent that dies at once, with its last words', () => session('', { stderr: 'Error: Cannot find module commcost.node\n', code: 1 }), /agent on localhost exited with code 1 before the run ended: Error: Cannot find module commcost.node/],
    ['a 1 MB line without a newline, then exit', () => session(HELLO + 'y'.repeat(1 << 20), { code: 0 }), /broke the protocol: agent sent a line that is not JSON: y{200}/],
    ['run/done with an unknown status', () => session(HELLO + JSON.stringify({ type: 'run/done', status: 'exploded', wallMs: 1, libraryMs: 1, endedAt: 'x' }) + '\n'), /malformed run\/done/],
    ['a plan of an unknown experiment', () => session(HELLO + JSON.stringify({ type: 'run/plan', stamp: {}, options: { experiments: ['bogus'], iterations: 1, warmup: 0, deadlineSeconds: 1 }, ranks: 1, simulated: true, experiments: [] }) + '\n'), /malformed run\/plan/],
  ];
  for (const [name, fn, re] of cases) check(`stream: ${name}`, fn, re);
});

// ------------------------------------------------------------------------------------------------
// 3. Hostile or malformed run files

describe('run files', () => {
  const mutate = (change: (r: any) => void): unknown => {
    const r = goodRun() as any;
    change(r);
    return r;
  };
  const cases: [string, () => unknown, RegExp][] = [
    ['missing id', () => mutate((r) => delete r.id), /x\.json is not a valid commcost run: \(root\): must have required property 'id'[\s\S]*hint: .*measure again/],
    ['host is a number', () => mutate((r) => (r.host = 42)), /\/host: must be string/],
    ['unknown status', () => mutate((r) => (r.status = 'done')), /\/status: must be one of "running", "complete", "partial", "failed"/],
    ['negative ranks', () => mutate((r) => (r.ranks = -2)), /\/ranks: must be >= 0/],
    ['negative done count', () => mutate((r) => (r.experiments[0].done = -1)), /\/experiments\/0\/done: must be >= 0/],
    ['negative iterations', () => mutate((r) => (r.options.iterations = -5)), /\/options\/iterations: must be >= 1/],
    ['zero deadline', () => mutate((r) => (r.options.deadlineSeconds = 0)), /\/options\/deadlineSeconds: must be > 0/],
    ['negative n', () => mutate((r) => (r.experiments[0].variants[0].steps[0].stats.n = -3)), /\/experiments\/0\/variants\/0\/steps\/0\/stats\/n: must be >= 0/],
    ['"NaN" as a median', () => mutate((r) => (r.experiments[0].variants[0].steps[0].stats.median = 'NaN')), /stats\/median: must be number/],
    ['"Infinity" as a p90', () => mutate((r) => (r.experiments[0].variants[0].steps[0].stats.p90 = 'Infinity')), /stats\/p90: must be number/],
    ['"-Infinity" in samples', () => mutate((r) => (r.experiments[0].variants[0].steps[0].samples = ['-Infinity'])), /\/samples\/0: must be number/],
    ['experiments as an object', () => mutate((r) => (r.experiments = {})), /\/experiments: must be array/],
    ['options null', () => mutate((r) => (r.options = null)), /\/options: must be object/],
    ['gpus as a string', () => mutate((r) => (r.stamp.gpus = '8x H200')), /\/stamp\/gpus: must be array/],
    ['markup as an experiment id', () => mutate((r) => (r.skipped = [{ experiment: '<script>', reason: 'x' }])), /\/skipped\/0\/experiment: must be one of/],
    ['fatal as a string', () => mutate((r) => (r.errors = [{ code: 'X', message: 'm', where: {}, fatal: 'yes' }])), /\/errors\/0\/fatal: must be boolean/],
    ['a 100 001-character host', () => mutate((r) => (r.host = 'h'.repeat(100_001))), /\/host: must NOT have more than 100000 characters/],
    ['a million strings in samples (bounded message, fast)', () => mutate((r) => (r.experiments[0].samples = { default: { call: Array.from({ length: 1_000_000 }, () => 'x') } })), /samples\/default\/call\/0: must be number; .*\(and 999995 more\)/],
    ['__proto__ at the top level', () => JSON.parse(JSON.stringify(goodRun()).replace('{', '{"__proto__":{"simulated":true},')), /\/__proto__: a key named "__proto__" is not allowed in a run file[\s\S]*hint: /],
    ['__proto__ as a variant of samples', () => mutate((r) => (r.experiments[0].samples = JSON.parse('{"__proto__":{"call":[1]}}'))), /\/experiments\/0\/samples\/__proto__: a key named "__proto__"/],
    ['constructor in ncclEnv', () => mutate((r) => (r.stamp.ncclEnv = { constructor: 'x' })), /\/stamp\/ncclEnv\/constructor: a key named "constructor"/],
    ['prototype deep in a variant', () => mutate((r) => (r.experiments[0].variants[0].env = { prototype: 'x' })), /\/experiments\/0\/variants\/0\/env\/prototype/],
    ['a schema of another tool', () => mutate((r) => (r.schema = 'torch.profile/1')), /is not a commcost run file: its schema is "torch.profile\/1"/],
  ];
  for (const [name, make, re] of cases) check(`run file: ${name}`, () => validateRunFile(make(), 'x.json'), re);

  const dir = tmp();
  const file = (name: string, content: string | Buffer) => {
    const p = join(dir, name);
    writeFileSync(p, content);
    return p;
  };
  check('run file on disk: truncated JSON', () => loadRun(file('trunc.json', JSON.stringify(goodRun()).slice(0, 500))), /trunc\.json is not JSON: /);
  check('run file on disk: empty', () => loadRun(file('empty.json', '')), /empty\.json is not JSON/);
  check('run file on disk: binary garbage', () => loadRun(file('bin.json', randomBytes(4096))), /bin\.json is not JSON/);
  check('run file on disk: 100 000 nested arrays', () => loadRun(file('deep.json', '['.repeat(100_000) + ']'.repeat(100_000))), /deep\.json is not (JSON|a commcost run file|a valid commcost run)/);
  check('run file on disk: a folder', () => loadRun(dir), /is a folder, not a file commcost can read/);
  check('run file on disk: missing', () => loadRun(join(dir, 'nope.json')), /no such file ".*nope\.json" \(\/.*nope\.json\)/);

  test('a __proto__ key never changes a prototype, accepted or not', () => {
    const text = JSON.stringify(goodRun()).replace('{', '{"__proto__":{"polluted":true},');
    assert.throws(() => validateRunFile(JSON.parse(text)));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  // Valid, not bad, but hard on the reader: 40,000 memory points per variant (issue #21, "4,000
  // memory points freeze the report page"). `commcost report --html` writes the page, every point in
  // it; the page itself is loaded in headless Chromium by test/security/reportMemoryPoints.test.ts.
  test('a run of 40,000 memory points per variant: `commcost report --html` exits 0 with every point in the page', { skip: existsSync(join(repoRoot, 'dist', 'webview.js')) ? false : 'dist/webview.js is not built' }, async () => {
    const file = join(dir, 'memory-40000.json');
    const out = join(dir, 'memory-40000.html');
    writeFileSync(file, JSON.stringify(runWithMemoryPoints(40_000)));
    let text = '';
    const writes = [process.stdout.write, process.stderr.write];
    const capture = ((chunk: string | Uint8Array) => {
      text += chunk.toString();
      return true;
    }) as typeof process.stdout.write;
    process.stdout.write = capture;
    process.stderr.write = capture;
    let code: number;
    try {
      code = await main(['node', 'commcost', 'report', file, '--html', out]);
    } finally {
      [process.stdout.write, process.stderr.write] = writes as [typeof process.stdout.write, typeof process.stderr.write];
    }
    assert.equal(code, 0, text);
    const html = readFileSync(out, 'utf8');
    assert.ok(html.includes('after 40000 groups'), 'the last point is in the page');
  });
});

// ------------------------------------------------------------------------------------------------
// 4. Settings (VS Code) and the NCCL path

describe('settings', () => {
  const get = (values: Record<string, unknown>) => (k: string) => values[k];
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['negative iterations', { iterations: -1 }, /setting commcost\.iterations has a bad value -1: expected an integer from 1 to 100000/],
    ['fractional iterations', { iterations: 1.5 }, /commcost\.iterations has a bad value 1\.5/],
    ['iterations as text', { iterations: '10' }, /commcost\.iterations has a bad value "10"/],
    ['warmup above the limit', { warmup: 1001 }, /commcost\.warmup has a bad value 1001: expected an integer from 0 to 1000/],
    ['zero deadline', { deadlineSeconds: 0 }, /commcost\.deadlineSeconds has a bad value 0: expected a number of seconds from 1 to 86400/],
    ['absurd deadline', { deadlineSeconds: 1e12 }, /commcost\.deadlineSeconds has a bad value 1000000000000/],
    ['NaN deadline', { deadlineSeconds: NaN }, /commcost\.deadlineSeconds has a bad value null|NaN/],
    ['unknown experiment', { experiments: ['init', 'bogus'] }, /commcost\.experiments has a bad value \["init","bogus"\]: expected a list of experiment ids from init, split/],
    ['experiments as a string', { experiments: 'init' }, /commcost\.experiments has a bad value "init"/],
    ['a host with a space', { hosts: ['gpu 1'] }, /commcost\.hosts has a bad value \["gpu 1"\]: expected a list of host names/],
    ['an NCCL path on two lines', { ncclPath: '/opt/nccl\n/lib' }, /commcost\.ncclPath has a bad value "\/opt\/nccl\\n\/lib": expected a path on one line/],
    ['a Node path that is a number', { remoteNodePath: 42 }, /commcost\.remoteNodePath has a bad value 42/],
    ['a Python path on two lines', { python: '/opt/py\n/bin/python3' }, /commcost\.python has a bad value "\/opt\/py\\n\/bin\/python3": expected a path on one line/],
  ];
  for (const [name, values, re] of cases) check(`setting: ${name}`, () => readSettings(get(values)), re);
  check('a python option on two lines (checked by the agent)', () => normalizeOptions({ python: '/opt/py\n/bin/python3' }), /python contains a line break, got .*: give the path of the Python with torch on the GPU host .*or leave python out to use \$COMMCOST_PYTHON, else python3/, [RunSetupError]);
  check('NCCL path that does not exist (checked by the agent)', () => locateNccl('/nonexistent/libnccl.so.2', {}), /the NCCL library \/nonexistent\/libnccl\.so\.2 does not exist/, [Error]);
});

// ------------------------------------------------------------------------------------------------
// 5. CLI flags: exit 2 and a message naming the flag, before anything is measured

describe('CLI flags', () => {
  const saveDir = tmp();
  /** Runs the CLI in this process with stderr captured; throws a CommcostError carrying stderr when it exits 2. */
  async function cli(args: string[]): Promise<void> {
    let err = '';
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      err += chunk.toString();
      return true;
    }) as typeof process.stderr.write;
    let code: number;
    try {
      code = await main(['node', 'commcost', ...args]);
    } finally {
      process.stderr.write = write;
    }
    assert.doesNotMatch(err, /internal error|\n\s+at /, 'no stack trace');
    if (code === 2) throw new CommcostError('BAD_INPUT', err.trim());
    assert.fail(`exit ${code}: ${err}`);
  }
  const measure = (...a: string[]) => () => cli(['measure', '--simulate', '--save-dir', saveDir, ...a]);
  /** The 2-GPU H200 run, changed by `change`, saved as `<name>.json` in saveDir. @returns its path */
  const planRun = (name: string, change: (r: any) => void): string => {
    const r = goodRun() as any;
    change(r);
    const file = join(saveDir, `${name}.json`);
    writeFileSync(file, JSON.stringify(r));
    return file;
  };
  const cases: [string, () => Promise<void>, RegExp][] = [
    ['--iterations -1', measure('--iterations', '-1'), /--iterations "-1" must be a whole number from 1 to 100000/],
    ['--iterations 1.5', measure('--iterations', '1.5'), /--iterations "1\.5" must be a whole number/],
    ['--iterations 1e3', measure('--iterations', '1e3'), /--iterations "1e3" must be a whole number/],
    ['--warmup 1001', measure('--warmup', '1001'), /--warmup "1001" must be a whole number from 0 to 1000/],
    ['--deadline 0', measure('--deadline', '0'), /--deadline "0" must be seconds, from 1 to 86400/],
    ['--deadline Infinity', measure('--deadline', 'Infinity'), /--deadline "Infinity" must be seconds/],
    ['--deadline abc', measure('--deadline', 'abc'), /--deadline "abc" must be seconds/],
    ['--ranks 1025', measure('--ranks', '1025'), /--ranks "1025" must be a whole number from 1 to 1024/],
    ['--experiments init,bogus', measure('--experiments', 'init,bogus'), /unknown experiment "bogus"\n\s+hint: known experiments: init, split/],
    ['--experiments ,', measure('--experiments', ','), /--experiments is empty/],
    ['--python on two lines', measure('--python', '/opt/py\n/bin/python3'), /--python "\/opt\/py\\n\/bin\/python3" contains a line break\n\s+hint: give the path of the Python with torch on the host, on one line \(at most 4096 characters\), or leave --python out to use COMMCOST_PYTHON, else python3/],
    ['--python empty', measure('--python', ''), /--python "" is empty/],
    ['an unknown flag', measure('--iteration', '3'), /unknown option '--iteration'/],
    ['--host $(reboot)', measure('--host', '$(reboot)'), /host name "\$\(reboot\)" contains the shell character "\$"/],
    ['--host with a port out of range', measure('--host', 'gpu1:99999'), /not 1\.\.65535/],
    ['report of a missing file', () => cli(['report', join(saveDir, 'missing.json')]), /no such file ".*missing\.json" \(\/.*missing\.json\)/],
    // Issue #21: numbers JavaScript would read but a user did not mean; outputs that clash.
    ['--deadline 0x10', measure('--deadline', '0x10'), /--deadline "0x10" must be seconds/],
    ['--deadline 1e3', measure('--deadline', '1e3'), /--deadline "1e3" must be seconds/],
    ['--deadline 0b11', measure('--deadline', '0b11'), /--deadline "0b11" must be seconds/],
    ['--deadline -5', measure('--deadline', '-5'), /--deadline "-5" must be seconds/],
    ['--deadline blank', measure('--deadline', '  '), /--deadline " {2}" must be seconds/],
    ["--save-dir ''", () => cli(['measure', '--simulate', '--save-dir', '']), /--save-dir is empty/],
    ['--json X --html X', measure('--json', join(saveDir, 'x.out'), '--html', join(saveDir, 'x.out')), /--json and --html name the same file/],
    ['--json X --html ./X', measure('--json', join(saveDir, 'y.out'), '--html', join(saveDir, '.', 'y.out')), /--json and --html name the same file/],
    ["--json ''", measure('--json', ''), /--json is empty/],
    ['--json through a symbolic link', () => {
      const link = join(saveDir, 'link.json');
      if (!existsSync(link)) symlinkSync(join(saveDir, 'elsewhere.json'), link);
      return cli(['measure', '--simulate', '--save-dir', saveDir, '--json', link]);
    }, /--json .*link\.json: .* is a symbolic link/],
    ['--html is a FIFO', () => {
      const fifo = join(saveDir, 'pipe.html');
      if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
      return cli(['measure', '--simulate', '--save-dir', saveDir, '--html', fifo]);
    }, /--html .*pipe\.html: .* is a named pipe \(FIFO\)/],
    ['report of a FIFO named *.json', () => {
      const fifo = join(saveDir, 'pipe.json');
      if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
      return cli(['report', fifo]);
    }, /pipe\.json is a named pipe \(FIFO\), not a file commcost can read/],
    ['report of /dev/zero', () => cli(['report', '/dev/zero']), /\/dev\/zero is a device, not a file commcost can read/],
    // A cloned repository's .commcost/runs committed as a dangling link, or .commcost as a link elsewhere.
    ['--save-dir through a dangling .commcost/runs link', () => {
      const repo = join(saveDir, 'dangling-repo');
      if (!existsSync(repo)) {
        mkdirSync(join(repo, '.commcost'), { recursive: true });
        symlinkSync(join(saveDir, 'no-such-folder'), join(repo, '.commcost', 'runs'));
      }
      return cli(['measure', '--simulate', '--save-dir', join(repo, '.commcost', 'runs')]);
    }, /--save-dir .*: .*\.commcost\/runs is a symbolic link \(to .*no-such-folder, which does not exist\)[^]*hint: .*remove the link/],
    ['--save-dir under a .commcost that is a link', () => {
      const repo = join(saveDir, 'linked-repo');
      if (!existsSync(repo)) {
        mkdirSync(join(saveDir, 'elsewhere'), { recursive: true });
        mkdirSync(repo, { recursive: true });
        symlinkSync(join(saveDir, 'elsewhere'), join(repo, '.commcost'));
      }
      return cli(['measure', '--simulate', '--save-dir', join(repo, '.commcost', 'runs')]);
    }, /--save-dir .*: .*linked-repo\/\.commcost is a symbolic link \(to .*elsewhere\)/],
    // Hardening issue, item 7: plan from runs that pass validation but would print NaN/Infinity, and shapes the run cannot hold.
    ['plan --shapes tp99999999 on a 2-GPU run', () => cli(['plan', '--run', planRun('wide', () => undefined), '--shapes', 'tp99999999,tp2']), /--shapes: tp99999999 is not a TP shape of the 2 GPUs the run measured\n\s+hint: give shapes that divide 2: tp2, tp1/],
    ['plan --shapes tp3 on a 2-GPU run', () => cli(['plan', '--run', planRun('wide', () => undefined), '--shapes', 'tp3']), /--shapes: tp3 is not a TP shape of the 2 GPUs/],
    ['plan of a run with ranks: 0', () => cli(['plan', '--run', planRun('ranks0', (r) => (r.ranks = 0))]), /ranks0\.json: "ranks" is 0; a plan needs a run of at least one rank/],
    ['plan of a run whose medians are 1e308', () => cli(['plan', '--run', planRun('huge', (r) => r.experiments.forEach((e: any) => e.variants.forEach((v: any) => v.steps.forEach((x: any) => (x.stats.median = 1e308)))))]), /huge\.json: experiment "init", variant "default", step "(call|total)": stats\.median = 1e\+308: too large to plan with \(on-demand rebuild \(lazy connect\): its (critical path|cost of a switch to TP\d+) is Infinity\)/],
    ['plan of a run whose memory points are 1e308', () => cli(['plan', '--run', planRun('hugemem', (r) => r.experiments.forEach((e: any) => e.variants.forEach((v: any) => v.memoryBytes && Object.keys(v.memoryBytes).forEach((k) => (v.memoryBytes[k] = 1e308)))))]), /hugemem\.json: experiment "\w+", variant "[^"]+", memoryBytes\["[^"]+"\] = 1e\+308: too large to plan with/],
    ['plan --trace of a FIFO', () => {
      const fifo = join(saveDir, 'trace-pipe.json');
      if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
      return cli(['plan', '--trace', fifo]);
    }, /cannot read the trace .*trace-pipe\.json: a named pipe \(FIFO\), not a regular file/],
    ['plan --trace of /dev/zero', () => cli(['plan', '--trace', '/dev/zero']), /cannot read the trace \/dev\/zero: a device, not a regular file/],
  ];
  for (const [name, fn, re] of cases) check(`cli: ${name}`, fn, re);
  test('cli: report of a validated run whose step median is 0: reported (exit 0), no NaN, no Infinity, no stack trace', { skip: existsSync(join(repoRoot, 'dist', 'cli.js')) ? false : 'dist/cli.js is not built: run `npm run build`' }, () => {
    const run = JSON.parse(readFileSync(join(repoRoot, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json'), 'utf8')) as RunFile;
    (run.experiments[0]!.variants[0]!.steps[2]!.stats as { median: number }).median = 0;
    const file = join(saveDir, 'median0.json');
    writeFileSync(file, JSON.stringify(run));
    const r = spawnSync(process.execPath, [join(repoRoot, 'bin', 'commcost.js'), 'report', file, '--html', join(saveDir, 'median0.html')], { encoding: 'utf8', timeout: 60_000 });
    const out = `${r.stdout}${r.stderr}`;
    assert.equal(r.status, 0, out);
    assert.match(out, /verdict for this host:/);
    assert.doesNotMatch(out, /NaN|Infinity|internal error|\n\s+at |No verdict/);
    assert.ok(existsSync(join(saveDir, 'median0.html')));
  });
  test('nothing was measured or saved by the bad flags', () => assert.equal(existsSync(join(saveDir, 'x')), false));
});

// ------------------------------------------------------------------------------------------------
// 6. Host names and paths with shell metacharacters

describe('host names and paths with shell metacharacters', () => {
  const names: [string, RegExp][] = [
    ['gpu1\u2028x', /whitespace or a control character \(0x2028\)|whitespace/],
    ['gpu1\u00a0', /whitespace/],
    ['gpu1\x7f', /control character \(0x7f\)/],
    ['gpu1\r', /control character \(0x0d\)/],
    ['--', /starts with '-'/],
    ['gpu1`id`', /shell character "`"/],
    ['gpu1$(id)', /shell character "\$"/],
    ['gpu1>/etc/passwd', /shell character ">"/],
  ];
  for (const [name, re] of names) check(`host name ${JSON.stringify(name)}`, () => checkTargetName(name), re);

  // A RemoteExec that runs argv through a real `sh -c <quoted line>`, as sshd's login shell does.
  const viaShell: RemoteExec = async (argv) => {
    const line = shellCommand(argv);
    try {
      return { code: 0, signal: null, stdout: execFileSync('sh', ['-c', line], { encoding: 'utf8' }), stderr: '' } satisfies ExecResult;
    } catch (e) {
      const x = e as { status: number | null; stdout?: string; stderr?: string };
      return { code: x.status, signal: null, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
    }
  };
  const hostile = ["it's", '$(touch PWNED)', '`touch PWNED`', 'a;touch PWNED', 'a|b&c', '*', '$HOME', 'new\nline', ' lead space', '-n', '\\', '"', 'ünï'];

  test('every hostile word reaches sh -c printf intact, and nothing runs', () => {
    const cwd = tmp();
    const out = execFileSync('sh', ['-c', shellCommand(['printf', '%s\\0', ...hostile])], { cwd, encoding: 'utf8' });
    assert.deepEqual(out.split('\0').slice(0, -1), hostile);
    assert.equal(existsSync(join(cwd, 'PWNED')), false);
  });

  test('deploy hashes files in a folder whose name is hostile, through a real shell', async () => {
    const root = tmp();
    const dir = join(root, "dep'l $(touch PWNED) `x`;|&*");
    mkdirSync(join(dir, 'native'), { recursive: true });
    const files = { 'agent.js': 'agent', 'native/lib $(x).so': 'lib' } as const;
    for (const [rel, content] of Object.entries(files)) writeFileSync(join(dir, rel), content);
    const hashes = await remoteHashes(viaShell, dir, Object.keys(files));
    for (const [rel, content] of Object.entries(files)) assert.equal(hashes.get(rel), createHash('sha256').update(content).digest('hex'), rel);
    assert.equal(existsSync(join(process.cwd(), 'PWNED')) || existsSync(join(root, 'PWNED')), false);
  });

  check('a hostile --node path is looked up as a file, not run', () => findRemoteNode(viaShell, 'gpu1', { explicit: '/tmp/$(touch PWNED)/node' }), /\/tmp\/\$\(touch PWNED\)\/node/);
});

// ------------------------------------------------------------------------------------------------
// 7. XSS corpus through the HTML report

type P5Node = { nodeName: string; tagName?: string; attrs?: { name: string; value: string }[]; childNodes?: P5Node[]; value?: string; content?: P5Node };
let parse5: { parse(html: string, opts?: { scriptingEnabled?: boolean }): P5Node } | undefined;
try {
  // parse5 comes with the dev tools (via @vscode/vsce); without it these tests are skipped.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional: a transitive dev dependency
  parse5 = require('parse5') as typeof parse5;
} catch {
  parse5 = undefined;
}
const bundle = join(repoRoot, 'dist', 'webview.js');
const xssSkip = !parse5 ? 'parse5 is not installed' : !existsSync(bundle) ? 'dist/webview.js is not built' : false;

describe('XSS corpus in the HTML report', { skip: xssSkip }, () => {
  const payloads = [
    '</script><script>alert(1)</script>',
    '<img src=x onerror=alert(1)>',
    'javascript:alert(1)',
    '<a href="javascript:alert(1)">click</a>',
    '<svg onload=alert(1)>',
    '"><script>alert(1)</script>',
    "'><img src=x onerror=alert(1)>",
    '\u2028\u2029</script>\u2028alert(1)',
    '<!--<script>alert(1)//-->',
    '</noscript><script>alert(1)</script>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<style>body{background:url(javascript:alert(1))}</style>',
    '&lt;script&gt;alert(1)&lt;/script&gt;',
    '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
    '<base href="https://evil.example/">',
    ']]><script>alert(1)</script>',
    '{{constructor.constructor("alert(1)")()}}',
  ];
  const OURS = new Set(['html', 'head', 'body', 'meta', 'title', 'style', 'div', 'noscript', 'p', 'strong', 'h2', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'ul', 'li', 'script']);

  function runWith(payload: string): RunFile {
    const r = goodRun();
    r.host = payload;
    r.stamp!.hostname = payload;
    r.stamp!.ncclPath = payload;
    r.experiments[0]!.variants[0]!.variant = payload;
    r.experiments[0]!.variants[0]!.steps[0]!.label = payload;
    r.skipped = [{ experiment: 'grow', variant: payload, reason: payload }];
    r.errors = [{ code: 'TIMEOUT', message: payload, where: { host: payload, variant: payload }, detail: payload, hint: payload, fatal: false }];
    return validateRunFile(r);
  }
  function walk(n: P5Node, visit: (n: P5Node) => void): void {
    visit(n);
    for (const c of n.childNodes ?? []) walk(c, visit);
    if (n.content) walk(n.content, visit);
  }

  for (const payload of payloads) {
    corpusSize++;
    test(`payload ${JSON.stringify(payload)}`, () => {
      const run = runWith(payload);
      const html = renderReport(run, { webviewJsPath: bundle });
      for (const scriptingEnabled of [true, false]) {
        const doc = parse5!.parse(html, { scriptingEnabled });
        const scripts: P5Node[] = [];
        const texts: string[] = [];
        let styles = 0;
        walk(doc, (n) => {
          if (n.nodeName === '#text') texts.push(n.value ?? '');
          if (!n.tagName) return;
          assert.ok(OURS.has(n.tagName), `an element <${n.tagName}> came out of the data (scripting ${scriptingEnabled})`);
          if (n.tagName === 'script') scripts.push(n);
          if (n.tagName === 'style') styles++;
          for (const a of n.attrs ?? []) {
            assert.doesNotMatch(a.name, /^on/i, `event handler attribute ${a.name}`);
            assert.doesNotMatch(a.value, /^\s*javascript:/i, `javascript: URL in ${a.name}`);
          }
        });
        assert.equal(scripts.length, 2, 'only the run JSON and the nonce-carrying bundle');
        assert.equal(styles, 1, 'only our style element');
        const [json, code] = scripts;
        assert.deepEqual(json!.attrs, [{ name: 'type', value: 'application/json' }, { name: 'id', value: 'commcost-run' }]);
        assert.ok(code!.attrs?.some((a) => a.name === 'nonce'));
        // The embedded JSON parses back to the very same strings (U+2028/9 included).
        const text = json!.childNodes?.map((c) => c.value).join('') ?? '';
        assert.deepEqual(JSON.parse(text), run);
        // With scripting off, the fallback shows the payload as text.
        if (!scriptingEnabled) assert.ok(texts.some((t) => t.includes(payload.replace(/\r\n?/g, '\n'))), 'the payload is shown as text in the fallback');
      }
      // Outside the bundle, markup characters of the payload never appear raw.
      const outsideBundle = html.replace(/<script nonce="[^"]*">[\s\S]*<\/script>/, '');
      if (/[<>"']/.test(payload)) assert.equal(outsideBundle.includes(payload), false, 'payload appears unescaped');
    });
  }
});

// ------------------------------------------------------------------------------------------------
// 8. Issue #21: hostile wire messages, Slurm layout options, output and input files, known_hosts

describe('hostile messages on the agent\'s ports (protocol/agentWire.ts)', () => {
  const lines = [
    'null', '42', '[]', '"text"', 'true', '{}', '{"t":null}', '{"t":42}', '{"t":"__proto__"}', '{"t":"toString"}',
    '{"t":"hello","rank":null,"pid":1}', '{"t":"hello","rank":-1,"pid":1}', '{"t":"hello","rank":1.5,"pid":1}', '{"t":"hello","rank":0,"pid":1,"token":42}',
    '{"t":"ready","rank":0,"cudaInitMs":"fast"}', '{"t":"begin","op":null,"experiment":"init","variant":"v","iteration":0}',
    '{"t":"begin","op":"x","experiment":42,"variant":"v","iteration":0}', '{"t":"end"}', '{"t":"id/publish","key":-1,"id":"x"}', '{"t":"id/request","key":"1"}',
    '{"t":"iteration","rank":0,"experiment":"init","variant":"v","iteration":0,"warmup":false,"steps":null,"releaseNs":{},"memory":{},"libraryMs":1}',
    '{"t":"iteration","rank":0,"experiment":"init","variant":"v","iteration":0,"warmup":false,"steps":{"a":"1"},"releaseNs":{},"memory":{},"libraryMs":1}',
    '{"t":"iteration","rank":0,"experiment":"init","variant":"v","iteration":0,"warmup":"no","steps":{},"releaseNs":{},"memory":{},"libraryMs":1}',
    '{"t":"iteration","rank":0,"experiment":"init","variant":"v","iteration":0,"warmup":false,"steps":{},"releaseNs":[],"memory":{},"libraryMs":1}',
    '{"t":"error","code":"NCCL_ERROR","message":"m","experiment":42}', '{"t":"error","code":null,"message":"m"}', '{"t":"finished","libraryMs":null}',
  ];
  for (const line of lines) {
    check(`control channel: ${line.slice(0, 70)}`, () => {
      const p = rankMessageProblem(JSON.parse(line));
      if (p) throw new ProtocolError(`refused: ${p}`, line);
    }, /refused: (not a message object|unknown message type|"[a-z/]+" with a bad)/);
  }
  const nodeLines = [
    'null', '7', '[]', '{"t":null}', '{"t":"node/hello"}', '{"t":"node/auth","proof":null}', '{"t":"node/exit","rank":"0","code":1,"signal":null}',
    '{"t":"node/exit","rank":0,"code":"1","signal":null}', '{"t":"node/log","rank":0,"line":null}', '{"t":"node/spawn","rank":0,"env":{}}',
  ];
  for (const line of nodeLines) {
    check(`node server: ${line}`, () => {
      const p = nodeMessageProblem(JSON.parse(line));
      if (p) throw new ProtocolError(`refused: ${p}`, line);
    }, /refused: /);
  }
  const helloCases: [string, Record<string, unknown>, RegExp][] = [
    ['257 slots', { slots: 257, devices: [...Array(257).keys()], gpus: Array(257).fill('G') }, /"slots" must be 1–256/],
    ['0 slots', { slots: 0, devices: [], gpus: [] }, /"slots" must be 1–256/],
    ['devices not one per slot', { slots: 2, devices: [0], gpus: ['G', 'G'] }, /"devices" must list one ordinal per slot/],
    ['a GPU name of 201 characters', { gpus: ['G'.repeat(201)] }, /"gpus" must name one GPU per slot/],
    ['a host name of 256 characters', { hostname: 'h'.repeat(256) }, /no hostname/],
    ['a short nonce', { nonce: 'abc' }, /no nonce/],
    ['fixedRank -1', { fixedRank: -1 }, /"fixedRank" must be a whole number/],
    ['worldSize 0', { worldSize: 0 }, /"worldSize" must be a whole number ≥ 1/],
  ];
  for (const [name, over, re] of helloCases) {
    check(`node hello: ${name}`, () => {
      const p = helloProblem({ t: 'node/hello', nonce: 'n'.repeat(32), hostname: 'h', pid: 1, slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true, ...over });
      if (p) throw new ProtocolError(`malformed hello: ${p}`, '');
    }, re);
  }
});

describe('long host names are refused once, bounded (client/hosts.ts)', () => {
  check('a host name of 100,000 characters', () => checkTargetName('a'.repeat(100_000)), /host name "a{80}"… is 100000 characters long, over 512/);
  check('user@ and a host of 100,000 characters with a shell character', () => checkTargetName(`u@${'b'.repeat(100_000)};`), /is 100003 characters long/);
  check('a host name of 600 characters with a space', () => checkTargetName(`${'c'.repeat(599)} `), /is 600 characters long/);
});

describe('Slurm options that change the task layout (client/slurm.ts)', () => {
  for (const extra of ['-N9', '-n2', '-lN2', '-G2', '-w', 'gpu1', '--gpus=2', '--gpus', '--gpus-per-task=1', '--multi-prog', '--ntask=2', '--ntasks=2', '--nodes=3', '--nod=3', '--gres=gpu:2', '--distribution=cyclic', '--nodelist=a,b', '-m', '--het-group=1']) {
    check(`--srun-arg ${extra}`, () => srunArgsFor({ extraArgs: [extra] }), extra.startsWith('-') ? /changes the task layout, which commcost sets/ : /is not an srun option/);
  }
});

describe('files commcost writes or reads (client/safeWrite.ts)', () => {
  const dir = tmp();
  const victim = join(dir, 'victim');
  writeFileSync(victim, 'keep\n');
  const link = join(dir, 'run.html');
  symlinkSync(victim, link);
  const dangling = join(dir, 'dangling.json');
  symlinkSync(join(dir, 'nowhere'), dangling);
  const fifo = join(dir, 'fifo.json');
  execFileSync('mkfifo', [fifo]);
  const big = join(dir, 'big.json');
  writeFileSync(big, Buffer.alloc(2048, 0x20));
  check('write through a link to another file', () => writeFileSafely(link, 'x'), /is a symbolic link\n\s+hint: commcost never writes through a link/);
  check('write through a dangling link', () => writeFileSafely(dangling, 'x'), /is a symbolic link/);
  check('write to a FIFO', () => writeFileSafely(fifo, 'x'), /is a named pipe \(FIFO\)/);
  check('write to /dev/null', () => writeFileSafely('/dev/null', 'x'), /\/dev\/null is a device/);
  check('write to a folder', () => writeFileSafely(dir, 'x'), /is a folder/);
  check('write in a missing folder', () => writeFileSafely(join(dir, 'missing', 'x.html'), 'x'), /cannot write in .*missing: ENOENT/);
  check('output check of a link', () => checkOutputFile(link, `--html ${link}`), /--html .*run\.html: .* is a symbolic link/);
  check('output check of a FIFO', () => checkOutputFile(fifo, `--json ${fifo}`), /is a named pipe/);
  check('saved run onto a link', () => {
    const run = goodRun();
    symlinkSync(victim, join(dir, `${run.id}.json`));
    return saveRun(dir, run);
  }, /is a symbolic link/);
  check('read a FIFO named *.json', () => loadRun(fifo), /fifo\.json is a named pipe \(FIFO\), not a file commcost can read/);
  check('read /dev/zero', () => loadRun('/dev/zero'), /is a device, not a file commcost can read/);
  check('read /dev/zero as an IdentityFile-like input', () => readRegularFile('/dev/zero', 'IdentityFile /dev/zero'), /IdentityFile \/dev\/zero is a device/);
  check('read a file over the size cap', () => readRegularFile(big, big, { maxBytes: 1024 }), /is 2048 bytes, over the 1024-byte limit/);
  test('the file a link pointed to is unchanged', () => assert.equal(readFileSync(victim, 'utf8'), 'keep\n'));
});

describe('known_hosts entries from untrusted text (client/knownHosts.ts)', () => {
  const dir = tmp();
  const key = Buffer.concat([Buffer.from([0, 0, 0, 11]), Buffer.from('ssh-ed25519'), Buffer.from([0, 0, 0, 1, 7])]);
  for (const host of ['gpu1\nevil ssh-ed25519 AAAA', 'gpu1 evil', '\n', '\u0000\u0001', 'a\tb']) {
    check(`host ${JSON.stringify(host)}`, async () => {
      try {
        await appendHostKey(join(dir, 'known_hosts'), host, 22, key);
      } catch (e) {
        throw new CommcostError('BAD_INPUT', (e as Error).message);
      }
    }, /not recording the host key of .*: not a host name/);
  }
  test('no line of known_hosts was written by them', () => assert.equal(existsSync(join(dir, 'known_hosts')) ? readFileSync(join(dir, 'known_hosts'), 'utf8') : '', ''));
});

test(`the corpus holds at least 200 bad inputs`, () => {
  assert.ok(corpusSize >= 200, `${corpusSize} entries`);
  console.log(`bad-input corpus: ${corpusSize} entries`);
});
