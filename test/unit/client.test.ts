// Unit tests of client/: targets, ssh config, known_hosts, quoting, run model, schema, store.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { AgentEvent, RunOptions, StepPlan } from '../../protocol/events';
import { LineSplitter } from '../../client/agentProcess';
import { CommcostError } from '../../client/errors';
import { listConfiguredHosts, parseTargetSpec, resolveTarget, sshTryCommand, type SshTarget } from '../../client/hosts';
import { appendHostKey, checkHostKey, fingerprint } from '../../client/knownHosts';
import { checkOutputFile, ensureWritableDir, listRuns, loadRun, saveRun } from '../../client/resultsStore';
import { validateRunFile } from '../../client/runFileSchema';
import { applyEvent, markStopped, newRun } from '../../client/runModel';
import { shellCommand, shellQuote } from '../../client/shellQuote';

const tmp = () => mkdtempSync(join(tmpdir(), 'commcost-unit-'));

/** Asserts that fn throws a CommcostError with `code` whose message matches `re`. */
function throwsCode(fn: () => unknown, code: string, re?: RegExp | string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof CommcostError, `expected CommcostError, got ${String(e)}`);
    assert.equal(e.code, code);
    if (typeof re === 'string') assert.ok(e.message.includes(re), `${JSON.stringify(e.message)} lacks ${JSON.stringify(re)}`);
    else if (re) assert.match(e.message, re);
    return true;
  });
}

describe('target parsing', () => {
  const check = (input: string, expected: ReturnType<typeof parseTargetSpec> | string) => {
    if (typeof expected === 'string') throwsCode(() => parseTargetSpec(input), 'BAD_TARGET', new RegExp(expected));
    else assert.deepEqual(parseTargetSpec(input), expected, input);
  };
  test('good names', () => {
    check('gpu1', { host: 'gpu1' });
    check('alice@gpu1', { user: 'alice', host: 'gpu1' });
    check('alice@gpu1:2222', { user: 'alice', host: 'gpu1', port: 2222 });
    check('gpu1.example.com:22', { host: 'gpu1.example.com', port: 22 });
    check('[::1]:2200', { host: '::1', port: 2200 });
    check('bob@[fe80::1]', { user: 'bob', host: 'fe80::1' });
  });
  test('hostile and malformed names', () => {
    check('-oProxyCommand=touch /tmp/x', "starts with '-'|whitespace");
    check('-oProxyCommand=x', "starts with '-'");
    check('gpu1 ; rm -rf /', 'whitespace');
    check('gpu1\nHost *', 'control character');
    check('gpu1\x00', 'control character');
    check('gpu\t1', 'whitespace');
    check('', 'empty');
    check('@gpu1', 'empty user');
    check('alice@', 'empty host');
    check('-alice@gpu1', "starts with '-'");
    check('gpu1:0', 'not 1..65535');
    check('gpu1:70000', 'not 1..65535');
    check('gpu1:22x', 'not 1..65535');
    for (const hostile of ['a;b', 'a|b', 'a&b', 'a$b', 'a`b`', 'a<b', 'a>b', 'a(b)', "a'b", 'a"b', 'a\\b', 'a b', 'alice;x@gpu1', 'gpu1\x1b[2J']) {
      check(hostile, 'shell character|whitespace|control character');
    }
  });
  test('hostile names are refused before any lookup', async () => {
    await assert.rejects(resolveTarget('a;b', { sshConfigPath: join(tmp(), 'none') }), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_TARGET' && /shell character ";"/.test(e.message));
  });
  test('the ssh command of a hint is quoted, with -p for host:port', () => {
    assert.equal(sshTryCommand('gpu1'), 'ssh gpu1');
    assert.equal(sshTryCommand('alice@gpu1'), 'ssh alice@gpu1');
    assert.equal(sshTryCommand('alice@gpu1:2222'), 'ssh -p 2222 alice@gpu1');
    assert.equal(sshTryCommand('127.0.0.1:2200'), 'ssh -p 2200 127.0.0.1');
    assert.equal(sshTryCommand('[::1]:2200'), 'ssh -p 2200 ::1');
    // a name that does not parse is still one quoted word
    assert.equal(sshTryCommand('a;b'), "ssh -- 'a;b'");
  });
});

describe('ssh config resolution', () => {
  const dir = tmp();
  const home = join(dir, 'home');
  mkdirSync(join(home, '.ssh'), { recursive: true });
  writeFileSync(join(home, '.ssh', 'id_ed25519'), 'x');
  writeFileSync(join(home, 'key-gpu-a.example.com-alice'), 'x');
  const config = join(dir, 'config');
  writeFileSync(
    config,
    [
      'Host gpu-a',
      '  HostName gpu-a.example.com',
      '  User alice',
      '  Port 2222',
      '  IdentityFile ~/key-%h-%r',
      '  IdentityFile %d/missing-key',
      '  ProxyJump jumper',
      'Host jumper',
      '  HostName jump.example.com',
      '  User jj',
      'Host bastion2',
      '  HostName 10.0.0.2',
      'Host *.internal web?',
      '  User wild',
      'Host *',
      '  Port 22',
      '',
    ].join('\n'),
  );
  const opts = { sshConfigPath: config, homeDir: home, localUser: 'me' };
  test('alias with HostName, User, Port, IdentityFile expansion, ProxyJump', async () => {
    const t = (await resolveTarget('gpu-a', opts)) as SshTarget;
    assert.equal(t.kind, 'ssh');
    assert.deepEqual(
      { name: t.name, hostname: t.hostname, user: t.user, port: t.port, identityFiles: t.identityFiles },
      { name: 'gpu-a', hostname: 'gpu-a.example.com', user: 'alice', port: 2222, identityFiles: [join(home, 'key-gpu-a.example.com-alice')] },
    );
    assert.equal(t.proxyJump.length, 1);
    assert.deepEqual(
      { hostname: t.proxyJump[0]!.hostname, user: t.proxyJump[0]!.user, port: t.proxyJump[0]!.port },
      { hostname: 'jump.example.com', user: 'jj', port: 22 },
    );
  });
  test('user@host:port beats the config; default key and local user', async () => {
    const t = (await resolveTarget('bob@gpu-a:2200', opts)) as SshTarget;
    assert.equal(t.user, 'bob');
    assert.equal(t.port, 2200);
    const plain = (await resolveTarget('other.host', opts)) as SshTarget;
    assert.deepEqual([plain.hostname, plain.user, plain.port, plain.identityFiles], ['other.host', 'me', 22, [join(home, '.ssh', 'id_ed25519')]]);
  });
  test('wildcard blocks apply', async () => {
    const t = (await resolveTarget('db.internal', opts)) as SshTarget;
    assert.equal(t.user, 'wild');
  });
  test('localhost is local', async () => {
    assert.deepEqual(await resolveTarget('localhost', opts), { kind: 'local', name: 'localhost' });
  });
  test('missing config = empty', async () => {
    const t = (await resolveTarget('h1', { ...opts, sshConfigPath: join(dir, 'nope') })) as SshTarget;
    assert.equal(t.hostname, 'h1');
  });
  test('listConfiguredHosts skips patterns', async () => {
    assert.deepEqual(await listConfiguredHosts(config), ['gpu-a', 'jumper', 'bastion2']);
    assert.deepEqual(await listConfiguredHosts(join(dir, 'nope')), []);
  });
});

describe('known_hosts', () => {
  const dir = tmp();
  const keyFile = join(dir, 'k');
  const other = join(dir, 'o');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyFile]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
  const pub = (f: string) => readFileSync(f + '.pub', 'utf8').split(' ').slice(0, 2).join(' ');
  const blob = Buffer.from(pub(keyFile).split(' ')[1]!, 'base64');
  const hashed = (name: string) => {
    const salt = randomBytes(20);
    return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
  };
  const check = async (content: string, host: string, port: number, expected: string, line?: number) => {
    const path = join(dir, `kh-${randomBytes(4).toString('hex')}`);
    writeFileSync(path, content);
    const r = await checkHostKey(path, host, port, blob);
    assert.equal(r.outcome, expected, `${content} / ${host}:${port}`);
    if (line !== undefined) assert.equal((r as { line: number }).line, line);
  };
  test('outcomes', async () => {
    await check(`gpu1 ${pub(keyFile)}\n`, 'gpu1', 22, 'match', 1);
    await check(`# c\n\nfoo,gpu1 ${pub(keyFile)}\n`, 'gpu1', 22, 'match', 3);
    await check(`gpu1 ${pub(keyFile)}\n`, 'gpu2', 22, 'unknown');
    await check(`${hashed('gpu1')} ${pub(keyFile)}\n`, 'gpu1', 22, 'match');
    await check(`${hashed('[gpu1]:2222')} ${pub(keyFile)}\n`, 'gpu1', 2222, 'match');
    await check(`[gpu1]:2222 ${pub(keyFile)}\n`, 'gpu1', 2222, 'match');
    await check(`gpu1 ${pub(keyFile)}\n`, 'gpu1', 2222, 'unknown');
    await check(`[gpu1]:2222 ${pub(other)}\n`, 'gpu1', 2222, 'mismatch', 1);
    await check(`x ${pub(other)}\n${hashed('gpu1')} ${pub(other)}\n`, 'gpu1', 22, 'mismatch', 2);
    await check(`*.lab ${pub(keyFile)}\n`, 'gpu1.lab', 22, 'match');
    await check(`*.lab,!gpu1.lab ${pub(keyFile)}\n`, 'gpu1.lab', 22, 'unknown');
    await check(`@revoked gpu1 ${pub(other)}\n@cert-authority gpu1 ${pub(other)}\n`, 'gpu1', 22, 'unknown');
    // A key of another type for a known host is a changed key, as OpenSSH says (issue #21).
    await check(`gpu1 ssh-rsa AAAAB3NzaC1yc2E=\n`, 'gpu1', 22, 'mismatch', 1);
    assert.equal((await checkHostKey(join(dir, 'missing'), 'gpu1', 22, blob)).outcome, 'unknown');
  });
  test('append then match; fingerprint like ssh-keygen', async () => {
    const path = join(dir, 'sub', 'known_hosts');
    await appendHostKey(path, '127.0.0.1', 2200, blob);
    assert.equal((await checkHostKey(path, '127.0.0.1', 2200, blob)).outcome, 'match');
    const expected = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', keyFile + '.pub'], { encoding: 'utf8' }).split(' ')[1];
    assert.equal(fingerprint(blob), expected);
  });
});

describe('shell quoting', () => {
  const hostile = [
    'plain',
    '',
    'a b',
    "it's",
    "''",
    '$(touch /tmp/commcost-pwned)',
    '`id`',
    '; rm -rf / #',
    'a|b&c>d<e',
    '*?[x]~',
    '$HOME ${PATH}',
    '-n',
    'new\nline',
    'tab\there',
    '\\back\\slash',
    '"dq"',
    'ünïcødé',
  ];
  test('a real sh gets the exact argv back', () => {
    const line = shellCommand(['printf', '%s\\0', ...hostile]);
    const out = execFileSync('sh', ['-c', line], { encoding: 'utf8' });
    assert.deepEqual(out.split('\0').slice(0, -1), hostile);
  });
  test('shapes', () => {
    const check = (input: string, expected: string) => assert.equal(shellQuote(input), expected);
    check('abc', 'abc');
    check('/a/b-c.js', '/a/b-c.js');
    check('', "''");
    check("it's", "'it'\\''s'");
    check('-n', "'-n'");
    check('a b', "'a b'");
    assert.throws(() => shellQuote('a\0b'));
  });
});

describe('line splitting', () => {
  test('partial chunks, CRLF, split UTF-8, last line without newline', () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l));
    const bytes = Buffer.from('{"a":1}\r\n{"b":"é"}\n\nlast', 'utf8');
    for (let i = 0; i < bytes.length; i++) s.push(bytes.subarray(i, i + 1));
    s.end();
    assert.deepEqual(lines, ['{"a":1}', '{"b":"é"}', '', 'last']);
  });
});

// ------------------------------------------------------------------------------------------------
// Run model

const options: RunOptions = { experiments: ['init', 'split'], iterations: 2, warmup: 1, deadlineSeconds: 60 };
const steps: StepPlan[] = [
  { step: 'call', label: 'ncclCommInitRank', kind: 'call' },
  { step: 'first', label: 'first 1 MiB allreduce', kind: 'first' },
  { step: 'total', label: 'to first collective', kind: 'toFirst', sumOf: ['call', 'first'] },
];
const stamp = {
  hostname: 'gpu1', gpus: [{ ordinal: 0, name: 'A40', totalBytes: 48e9, pciBusId: '0000:01:00.0' }], driverVersion: '550',
  ncclVersion: '2.28.9', ncclVersionCode: 22809, ncclPath: '/usr/lib/libnccl.so.2', ncclSource: 'loader', ncclSymbols: {},
  topology: '', ncclEnv: {}, commcostVersion: '0.1.0', nodeVersion: 'v20', platform: 'linux', startedAt: '2026-01-02T03:04:05.000Z', simulated: false,
};
const sample = (experiment: 'init' | 'split', variant: string, iteration: number, call: number): AgentEvent => ({
  type: 'run/sample', experiment, variant, iteration, warmup: iteration < 1,
  steps: { call, first: 10 * call, total: 11 * call }, perRank: { call: [call] },
});
const stats = (xs: number[]) => ({ median: xs[0]!, p90: xs[1]!, min: xs[0]!, max: xs[1]!, mean: (xs[0]! + xs[1]!) / 2, n: 2 });
const events: AgentEvent[] = [
  { type: 'agent/hello', protocolVersion: 1, agentVersion: '0.1.0', pid: 1 },
  {
    type: 'run/plan', stamp, options, ranks: 2, simulated: false,
    experiments: [
      { experiment: 'init', variants: [{ variant: 'default', steps }] },
      // The agent plans only what it can run: the skipped variant share1 is not in the plan.
      { experiment: 'split', variants: [{ variant: 'share0', steps }] },
    ],
  },
  { type: 'run/startup', cudaInitMs: [100, 110], firstUniqueIdMs: 5 },
  { type: 'run/progress', experiment: 'init', variant: 'default', iteration: 0, total: 3, warmup: true, experimentIndex: 0, experimentCount: 2 },
  sample('init', 'default', 0, 9),
  sample('init', 'default', 1, 1),
  sample('init', 'default', 2, 2),
  { type: 'experiment/summary', experiment: 'init', variants: [{ variant: 'default', steps: steps.map((s) => ({ ...s, stats: stats([1, 2]), samples: [1, 2] })), memoryBytes: { afterCall: 1 << 20 } }] },
  { type: 'experiment/skipped', experiment: 'split', variant: 'share1', reason: 'needs NCCL ≥ 2.29.2, host has 2.28.9' },
  { type: 'run/progress', experiment: 'split', variant: 'share0', iteration: 0, total: 3, warmup: true, experimentIndex: 1, experimentCount: 2 },
  sample('split', 'share0', 0, 5),
  sample('split', 'share0', 1, 3),
];

describe('run model', () => {
  const t0 = new Date('2026-01-02T03:04:05Z');
  test('id and fresh run', () => {
    const run = newRun('alice@gpu 1:22', options, t0);
    assert.equal(run.id, '20260102-030405-alice_gpu_1_22');
    assert.equal(run.status, 'running');
    assert.doesNotThrow(() => validateRunFile(run));
  });
  test('folding a sequence', () => {
    const start = newRun('gpu1', options, t0);
    const frozen = JSON.stringify(start);
    let run = start;
    for (const ev of events) run = applyEvent(run, ev);
    assert.equal(JSON.stringify(start), frozen, 'input not mutated');
    assert.equal(run.ranks, 2);
    assert.deepEqual(run.startup, { cudaInitMs: [100, 110], firstUniqueIdMs: 5 });
    const [init, split] = run.experiments;
    assert.deepEqual([init!.state, init!.done, init!.total, init!.samples], ['finished', 3, 3, { default: { call: [1, 2], first: [10, 20], total: [11, 22] } }]);
    assert.equal(init!.variants[0]!.memoryBytes!.afterCall, 1 << 20);
    assert.deepEqual([split!.state, split!.done, split!.total], ['running', 2, 3]);
    assert.deepEqual(split!.samples, { share0: { call: [3], first: [30], total: [33] } });
    assert.equal(run.skipped.length, 1);
    assert.doesNotThrow(() => validateRunFile(run));

    const errored = applyEvent(run, { type: 'run/error', code: 'TIMEOUT', message: 'timed out at step call on rank 1', where: { rank: 1, experiment: 'split' }, fatal: true });
    const done = applyEvent(errored, { type: 'run/done', status: 'partial', wallMs: 1000, libraryMs: 500, endedAt: '2026-01-02T03:05:00Z' });
    assert.deepEqual([done.status, done.wallMs, done.errors.length, done.experiments[1]!.state], ['partial', 1000, 1, 'stopped']);
    assert.equal(done.experiments[0]!.state, 'finished');
  });
  test('markStopped: partial with samples, failed without', () => {
    let run = newRun('gpu1', options, t0);
    for (const ev of events.slice(0, 5)) run = applyEvent(run, ev); // only a warmup sample
    const err = { code: 'RANK_EXITED' as const, message: 'agent exited', where: { host: 'gpu1' }, fatal: true };
    assert.equal(markStopped(run, err).status, 'failed');
    run = applyEvent(run, events[5]!);
    const stopped = markStopped(run, err);
    assert.deepEqual([stopped.status, stopped.errors.length, stopped.experiments.map((e) => e.state)], ['partial', 1, ['stopped', 'stopped']]);
    assert.equal(run.status, 'running', 'input untouched');
  });
});

describe('run file schema', () => {
  let good = newRun('gpu1', options, new Date('2026-01-02T03:04:05Z'));
  for (const ev of events) good = applyEvent(good, ev);
  const check = (mutate: (r: any) => void, expectedPath: string) => {
    const bad = structuredClone(good) as any;
    mutate(bad);
    throwsCode(() => validateRunFile(bad, 'x.json'), 'BAD_RUN_FILE', expectedPath);
  };
  test('accepts a folded run', () => assert.equal(validateRunFile(structuredClone(good)).id, good.id));
  test('rejects malformed files with JSON paths', () => {
    check((r) => (r.schema = 'other/1'), 'is not a commcost run file: its schema is "other/1"');
    check((r) => delete r.host, "(root): must have required property 'host'");
    check((r) => (r.status = 'exploded'), '/status: must be one of');
    check((r) => (r.experiments[0].samples.default.call[1] = 'fast'), '/experiments/0/samples/default/call/1: must be number');
    check((r) => (r.experiments[0].variants[0].steps[0].stats.median = null), '/experiments/0/variants/0/steps/0/stats/median');
    check((r) => (r.options.iterations = 0), '/options/iterations: must be >= 1');
    check((r) => (r.id = '../../etc/passwd'), '/id: must match pattern');
    check((r) => (r.experiments[1].experiment = 'rm -rf'), '/experiments/1/experiment: must be one of');
  });
  test('a file that is not a run file says so, without the "measure again" hint', () => {
    for (const [json, message] of [
      [{ ncclPath: '/lib/libnccl.so.2', ranks: 2, steps: {} }, 'x.json is not a commcost run file: it has no "schema" field'],
      [{ schema: 'something.else/3' }, 'x.json is not a commcost run file: its schema is "something.else/3"'],
    ] as const) {
      assert.throws(() => validateRunFile(json, 'x.json'), (e: unknown) => {
        assert.ok(e instanceof CommcostError && e.code === 'BAD_RUN_FILE');
        assert.ok(e.message.startsWith(message), e.message);
        assert.doesNotMatch(e.describe(), /measure again|another version/);
        return true;
      });
    }
    const reference = JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'results', 'h200x2-nccl2.28.9-wheel.reference.json'), 'utf8')) as unknown;
    throwsCode(() => validateRunFile(reference, 'ref.json'), 'BAD_RUN_FILE', 'ref.json is not a commcost run file');
    // another version of the run file: then the hint fits
    throwsCode(() => validateRunFile({ ...structuredClone(good), schema: 'commcost.run/2' }, 'x.json'), 'BAD_RUN_FILE', 'schema "commcost.run/2"; this version reads "commcost.run/1"');
  });
  test('non-objects', () => {
    throwsCode(() => validateRunFile(null), 'BAD_RUN_FILE', /\(root\): must be object/);
    throwsCode(() => validateRunFile([1]), 'BAD_RUN_FILE');
  });
});

describe('results store', () => {
  test('atomic save, load, list', async () => {
    const dir = join(tmp(), 'a', 'b');
    let run = newRun('gpu1', options, new Date('2026-01-02T03:04:05Z'));
    for (const ev of events) run = applyEvent(run, ev);
    const path = await saveRun(dir, run);
    assert.equal(path, join(dir, `${run.id}.json`));
    assert.deepEqual(readdirSync(dir), [`${run.id}.json`], 'no temp file left');
    assert.deepEqual(await loadRun(path), run);
    await saveRun(dir, { ...run, status: 'complete' });
    assert.equal((await loadRun(path)).status, 'complete');
    writeFileSync(join(dir, 'broken.json'), '{"schema":');
    const list = await listRuns(dir);
    assert.equal(list.length, 2);
    assert.ok(list.some((l) => l.run?.id === run.id));
    assert.ok(list.some((l) => l.error?.code === 'BAD_RUN_FILE'));
    assert.deepEqual(await listRuns(join(dir, 'none')), []);
  });
  test('refuses an unsafe id and leaves nothing behind on failure', async () => {
    const dir = tmp();
    const run = newRun('gpu1', options);
    await assert.rejects(saveRun(dir, { ...run, id: '../x' }), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT');
    writeFileSync(join(dir, 'file'), '');
    await assert.rejects(saveRun(join(dir, 'file'), run));
    assert.deepEqual(readdirSync(dir), ['file']);
  });
  test('output folders are checked before a run: files, missing folders, /proc and /sys, no hang', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'afile'), '');
    const rejects = (p: Promise<unknown>, re: RegExp) =>
      assert.rejects(p, (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && re.test(e.message));
    await rejects(ensureWritableDir(join(dir, 'afile'), '--save-dir x'), /--save-dir x: .*afile is a file, not a folder/);
    await rejects(ensureWritableDir(join(dir, 'afile', 'sub'), '--save-dir x'), /afile is a file, not a folder/);
    const started = Date.now();
    await rejects(ensureWritableDir('/proc/nope', '--save-dir /proc/nope'), /under \/proc, a kernel file system/);
    await rejects(ensureWritableDir('/sys/x/y', '--save-dir /sys/x/y'), /under \/sys/);
    assert.ok(Date.now() - started < 2000, 'answers at once');
    // a missing folder is created, parents too, and nothing is left in it
    const made = await ensureWritableDir(join(dir, 'new', 'runs'), '--save-dir');
    assert.deepEqual(readdirSync(made), []);
    await rejects(ensureWritableDir(join(dir, 'missing'), 'x', { create: false }), /does not exist/);

    await checkOutputFile(join(dir, 'out.json'), '--json');
    await checkOutputFile(join(dir, 'afile'), '--json');
    await rejects(checkOutputFile('/nonexistent/dir/x.json', '--json /nonexistent/dir/x.json'), /--json \/nonexistent\/dir\/x.json: the folder \/nonexistent\/dir does not exist/);
    await rejects(checkOutputFile(join(dir, 'afile', 'x.html'), '--html'), /is not a folder/);
    await rejects(checkOutputFile(dir, '--html'), /is a folder/);
    await rejects(checkOutputFile('/proc/self/x.json', '--json'), /under \/proc/);
  });
});
