/**
 * Pure parts of the agent: statistics, option checks, the barrier server's wire format and
 * release rule, JSON-lines framing, and the protocol parser.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { parseAgentEvent, parseHostCommand, PROTOCOL_VERSION, ProtocolError } from '../../protocol/events';
import { COMMCOST_VERSION } from '../../protocol/version';
import { BARRIER_MAGIC, BARRIER_NOTICE_MAGIC, BarrierServer, barrierHello } from '../../remote-agent/barrierServer';
import { normalizeOptions, RunSetupError } from '../../remote-agent/coordinator';
import { versionCode, versionString, needsNccl, formatBytes } from '../../remote-agent/experiments/experiment';
import { LineChannel, onLines } from '../../remote-agent/lineChannel';
import { combineRanks, quantileSorted, summarize } from '../../remote-agent/stats';
import { applicationEnv, environmentStamp, hostPython, ncclEnvironment, RANK_METHOD_ENV, rankProcessEnv } from '../../remote-agent/environment';
import { pythonWheelNccl, searchedPlaces } from '../../remote-agent/ncclLocator';
import type { LoadInfo } from '../../remote-agent/nativeBinding';
import { SPAWN_ENV_ALLOWED } from '../../remote-agent/nodes';
import { rankIdentityFromEnv } from '../../remote-agent/rank';

function check<I, O>(name: string, cases: [I, O][], fn: (input: I) => O): void {
  for (const [input, expected] of cases) {
    test(`${name}(${JSON.stringify(input)})`, () => assert.deepEqual(fn(input), expected));
  }
}

describe('stats', () => {
  check('summarize', [
    [[5], { median: 5, p90: 5, min: 5, max: 5, mean: 5, n: 1 }],
    [[4, 1, 3, 2], { median: 2.5, p90: 3.7, min: 1, max: 4, mean: 2.5, n: 4 }],
    [[10, 20, 30, 40, 50, 60, 70, 80, 90, 100], { median: 55, p90: 91, min: 10, max: 100, mean: 55, n: 10 }],
  ], (v) => {
    const s = summarize(v);
    return { ...s, p90: Math.round(s.p90 * 1e9) / 1e9 };
  });
  check('quantileSorted p0/p1', [[[1, 2, 3], [1, 3]]], (v) => [quantileSorted(v, 0), quantileSorted(v, 1)]);
  check('combineRanks is the MAX', [[[3.5, 9.25, 1], 9.25], [[2], 2]], combineRanks);
  test('summarize of nothing throws', () => assert.throws(() => summarize([]), RangeError));
});

describe('experiment helpers', () => {
  check('versionCode', [['2.28.9', 22809], ['2.18.1', 21801], ['2.29.7', 22907]], versionCode);
  check('versionString', [[22809, '2.28.9'], [23003, '2.30.3']], versionString);
  check('formatBytes', [[1 << 20, '1 MiB'], [64 << 20, '64 MiB'], [1 << 30, '1 GiB'], [1000, '1000 B']], formatBytes);
  test('needsNccl says what is needed and what the host has', () => {
    const ctx = { ranks: 2, ncclVersionCode: 22809, symbols: {}, options: normalizeOptions({}) };
    assert.equal(needsNccl(ctx, '2.29.2'), 'needs NCCL ≥ 2.29.2, host has 2.28.9');
    assert.equal(needsNccl(ctx, '2.18.1'), undefined);
  });
});

describe('normalizeOptions', () => {
  test('defaults: 10 recorded + 1 warmup, 60 s deadline, 1 MiB first, 64 MiB steady', () => {
    const o = normalizeOptions({});
    assert.deepEqual([o.iterations, o.warmup, o.deadlineSeconds, o.firstCollectiveBytes, o.steadyBytes], [10, 1, 60, 1 << 20, 64 << 20]);
  });
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ iterations: -1 }, /iterations must be an integer from 1/],
    [{ iterations: 2.5 }, /iterations/],
    [{ warmup: -1 }, /warmup/],
    [{ deadlineSeconds: 0 }, /deadlineSeconds/],
    [{ deadlineSeconds: Number.NaN }, /deadlineSeconds/],
    [{ deadlineSeconds: 0.5 }, /deadlineSeconds must be a number of seconds from 1 to 86400/],
    [{ iterations: 100_001 }, /iterations must be an integer from 1 to 100000/],
    [{ ranks: 1025 }, /ranks must be an integer from 1 to 1024/],
    [{ experiments: [] }, /no experiments/],
    [{ experiments: ['init;rm -rf /'] }, /unknown experiment "init;rm -rf \/"/],
    [{ ranks: 0 }, /ranks must be/],
    [{ steadyBytes: 3 }, /steadyBytes/],
    [{ python: '' }, /^python is empty, got "": give the path of the Python with torch on the GPU host \(one line, 1 to 4096 characters, no NUL\), or leave python out to use \$COMMCOST_PYTHON, else python3$/],
    [{ python: '/opt/py\n/bin/python3' }, /^python contains a line break, got "\/opt\/py\\n\/bin\/python3": give the path of the Python with torch/],
    [{ python: '/opt/py\r' }, /^python contains a line break/],
    [{ python: '/opt/py\0thon' }, /^python contains a NUL character/],
    [{ python: 3 }, /^python is not text, got 3: /],
    [{ python: null }, /^python is not text, got null: /],
  ];
  for (const [input, message] of bad) {
    test(`rejects ${JSON.stringify(input)}`, () => {
      assert.throws(() => normalizeOptions(input as never), (e: unknown) => e instanceof RunSetupError && e.code === 'BAD_COMMAND' && message.test(e.message));
    });
  }
  test('rejects a python of 4097 characters, naming the limit and showing only the start of the value', () => {
    assert.throws(
      () => normalizeOptions({ python: `/${'p'.repeat(4096)}` }),
      (e: unknown) => e instanceof RunSetupError && e.code === 'BAD_COMMAND' && /^python is 4097 characters long \(at most 4096\), got "\/p{79}"…: /.test(e.message) && e.message.length < 400,
    );
  });
  test('a good python is kept as given; none stays absent', () => {
    assert.equal(normalizeOptions({ python: '/opt/conda/envs/torch/bin/python3' }).python, '/opt/conda/envs/torch/bin/python3');
    assert.equal(normalizeOptions({ python: 'python3.12' }).python, 'python3.12', 'a command name on PATH');
    const longest = `/${'p'.repeat(4095)}`;
    assert.equal(normalizeOptions({ python: longest }).python, longest, '4096 characters is the limit');
    assert.equal('python' in normalizeOptions({}), false);
  });
});

describe('environment', () => {
  test('stamp keeps NCCL_* and TORCH_NCCL_*, COMMCOST_SIM_* only when simulated', () => {
    const env = { NCCL_DEBUG: 'INFO', TORCH_NCCL_BLOCKING_WAIT: '1', COMMCOST_SIM_INIT_MS: '5', HOME: '/x' };
    assert.deepEqual(ncclEnvironment(env, false), { NCCL_DEBUG: 'INFO', TORCH_NCCL_BLOCKING_WAIT: '1' });
    assert.deepEqual(ncclEnvironment(env, true), { NCCL_DEBUG: 'INFO', TORCH_NCCL_BLOCKING_WAIT: '1', COMMCOST_SIM_INIT_MS: '5' });
  });
  test('the stamp records the method variables every rank process gets, and a node lets them through', () => {
    const info = { simulated: true, driverVersion: 13000, ncclVersion: '2.28.9', ncclVersionCode: 22809, ncclPath: 'sim', symbols: {} } as unknown as LoadInfo;
    const stamp = environmentStamp(info, [], 'simulated', {});
    assert.deepEqual(stamp.rankEnv, { UV_THREADPOOL_SIZE: '1', MALLOC_ARENA_MAX: '1' });
    assert.deepEqual(stamp.rankEnv, { ...RANK_METHOD_ENV });
    for (const name of Object.keys(RANK_METHOD_ENV)) assert.match(name, SPAWN_ENV_ALLOWED, `${name} must pass a node's filter, or ranks on other hosts run without it`);
  });
  test('a rank gets the method variables; a process meant to look like the application gets the agent\'s values back', () => {
    const rankEnv = rankProcessEnv({ PATH: '/bin', MALLOC_ARENA_MAX: '4', GLIBC_TUNABLES: 'glibc.malloc.arena_max=8:glibc.malloc.tcache_count=0' }, { ...RANK_METHOD_ENV });
    assert.equal(rankEnv.GLIBC_TUNABLES, 'glibc.malloc.tcache_count=0', 'a tunable that would override MALLOC_ARENA_MAX is removed, the others kept');
    assert.equal('GLIBC_TUNABLES' in rankProcessEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=8' }, { ...RANK_METHOD_ENV }), false);
    assert.equal(rankEnv.MALLOC_ARENA_MAX, '1');
    assert.equal(rankEnv.UV_THREADPOOL_SIZE, '1');
    const app = applicationEnv(rankEnv);
    assert.equal(app.MALLOC_ARENA_MAX, '4', 'the user had set it: theirs comes back');
    assert.equal('UV_THREADPOOL_SIZE' in app, false, 'the user had not set it: it is removed');
    assert.equal('COMMCOST_APP_ENV' in app, false);
    assert.equal(app.PATH, '/bin');
    const broken = applicationEnv({ ...rankEnv, COMMCOST_APP_ENV: '{not json' });
    assert.equal('MALLOC_ARENA_MAX' in broken, false);
    assert.equal('UV_THREADPOOL_SIZE' in broken, false);
  });
  test('the Python with torch: the python option, else COMMCOST_PYTHON, else python3', () => {
    assert.equal(hostPython('/opt/a/bin/python', { COMMCOST_PYTHON: '/opt/b/bin/python' }), '/opt/a/bin/python', 'the option wins');
    assert.equal(hostPython(undefined, { COMMCOST_PYTHON: '/opt/b/bin/python' }), '/opt/b/bin/python');
    assert.equal(hostPython('', { COMMCOST_PYTHON: '/opt/b/bin/python' }), '/opt/b/bin/python', 'an empty option counts as none');
    assert.equal(hostPython(undefined, {}), 'python3');
    assert.equal(hostPython(undefined, { COMMCOST_PYTHON: '' }), 'python3');
  });
  test('the NCCL wheel search with a Python that is not there finds nothing, and the searched places name it', () => {
    assert.equal(pythonWheelNccl('/nonexistent/python3'), undefined);
    assert.ok(searchedPlaces(undefined, '/nonexistent/python3').includes('the nvidia-nccl wheel of /nonexistent/python3 (nvidia/nccl/lib/libnccl.so.2)'));
  });
  test('rank identity from the environment', () => {
    assert.deepEqual(rankIdentityFromEnv({ COMMCOST_RANK: '1', COMMCOST_WORLD_SIZE: '2', COMMCOST_LOCAL_RANK: '1', COMMCOST_COORDINATOR: '127.0.0.1:4000' }), {
      rank: 1, worldSize: 2, localRank: 1, coordinatorHost: '127.0.0.1', coordinatorPort: 4000,
    });
    assert.throws(() => rankIdentityFromEnv({}), /COMMCOST_COORDINATOR|COMMCOST_RANK/);
  });
  test('protocol version constant matches package.json version', async () => {
    const pkg = (await import('../../package.json', { with: { type: 'json' } })) as { default: { version: string } };
    assert.equal(COMMCOST_VERSION, pkg.default.version);
  });
});

describe('JSON lines', () => {
  test('split across chunks, CRLF, empty lines', () => {
    const s = new PassThrough();
    const lines: string[] = [];
    onLines(s, (l) => lines.push(l));
    s.write('{"a":');
    s.write('1}\r\n\n{"b"');
    s.write(':2}\n');
    assert.deepEqual(lines, ['{"a":1}', '{"b":2}']);
  });
  test('a channel whose peer closed drops the message; nothing is thrown', async () => {
    // The CI failure this guards against: the coordinator's shutdown wrote to a rank that had
    // just been SIGKILLed, and the socket's 'error' event had no listener and took the agent down.
    const server = net.createServer((s) => s.end());
    try {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const socket = net.connect({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port });
      const channel = new LineChannel<{ t: string }, unknown>(socket);
      await new Promise<void>((r) => socket.once('end', () => r()));
      await new Promise((r) => setImmediate(r));
      assert.deepEqual([channel.send({ t: 'exit' }), channel.send({ t: 'exit' })], [false, false]);
      socket.destroy();
    } finally {
      server.close();
    }
  });
  test('a stream error is reported to onStreamError, not thrown as an unhandled event', async () => {
    const stream = new PassThrough();
    const errors: string[] = [];
    new LineChannel<{ t: string }, unknown>(stream, stream, undefined, (e) => errors.push(e.message));
    stream.destroy(new Error('EPIPE from a test'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(errors, ['EPIPE from a test']);
  });
  test('a line longer than the cap is dropped and reported, once; the lines after it are read', () => {
    const s = new PassThrough();
    const lines: string[] = [];
    let overflows = 0;
    onLines(s, (l) => lines.push(l), 1000, () => overflows++);
    for (let i = 0; i < 50; i++) s.write('x'.repeat(100));
    s.write('tail\n{"ok":1}\n');
    assert.deepEqual([lines, overflows], [['{"ok":1}'], 1]);
  });
  const badLines: [string, RegExp][] = [
    ['not json', /not JSON/],
    ['{"type":"run/nonsense"}', /unknown message/],
    ['[1,2]', /unknown message/],
    [`{"type":"agent/hello","protocolVersion":${PROTOCOL_VERSION + 1}}`, /protocol 2, this side speaks 1: redeploy/],
  ];
  for (const [line, message] of badLines) {
    test(`agent line ${line.slice(0, 30)} is refused`, () => {
      assert.throws(() => parseAgentEvent(line), (e: unknown) => e instanceof ProtocolError && message.test(e.message));
    });
  }
  test('host commands', () => {
    assert.deepEqual(parseHostCommand('{"type":"run/cancel"}'), { type: 'run/cancel' });
    assert.throws(() => parseHostCommand('{"type":"run/start"}'), /without options/);
    assert.throws(() => parseHostCommand('{"type":"shell","cmd":"rm"}'), /unknown command/);
    const join = (over: Record<string, unknown>) => JSON.stringify({ type: 'node/join', options: { experiments: ['init'] }, index: 1, coordinator: { addresses: ['10.0.0.1'], port: 4000, token: 't', ...over } });
    assert.equal(parseHostCommand(join({})).type, 'node/join');
    for (const port of [0, 70000, 1.5, '4000']) assert.throws(() => parseHostCommand(join({ port })), /"port" \(1–65535\)/, String(port));
    assert.throws(() => parseHostCommand(join({ addresses: [] })), /"addresses"/);
    assert.throws(() => parseHostCommand('{"type":"run/start","options":{},"cluster":{"nodes":0}}'), /"nodes" \(1–64\)/);
    assert.throws(() => parseHostCommand('{"type":"run/start","options":{},"slurm":{"srunArgs":"--nodes=2"}}'), /"srunArgs" \(strings\)/);
  });
});

describe('barrier server', () => {
  const TOKEN = 'a'.repeat(32);
  /** A connection that has said its hello for `rank` with `token`. */
  function connect(port: number, rank: number, token = TOKEN): Promise<net.Socket> {
    return new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(barrierHello(rank, token));
        resolve(s);
      });
    });
  }
  function arrive(socket: net.Socket, rank: number, gen: number, magic = BARRIER_MAGIC): void {
    const b = Buffer.alloc(16);
    b.writeUInt32LE(magic, 0);
    b.writeUInt32LE(rank, 4);
    b.writeBigUInt64LE(BigInt(gen), 8);
    socket.write(b);
  }
  function released(socket: net.Socket): Promise<number> {
    return new Promise((resolve) => socket.once('data', (d: Buffer) => resolve(Number(d.readBigUInt64LE(0)))));
  }
  /**
   * Resolves once `cond()` holds, checked every 2 ms: the server has read what a test sent (a
   * fixed sleep is not enough on a loaded machine). The test's own timeout bounds the wait.
   */
  async function until(cond: () => boolean): Promise<void> {
    while (!cond()) await new Promise((r) => setTimeout(r, 2));
  }

  test('releases a generation only when every rank has arrived, to every rank', async () => {
    const server = new BarrierServer({ worldSize: 3, token: TOKEN });
    const port = await server.listen();
    const sockets = await Promise.all([0, 1, 2].map((rank) => connect(port, rank)));
    const waits = sockets.map(released);
    arrive(sockets[0]!, 0, 1);
    arrive(sockets[1]!, 1, 1);
    await until(() => server.lastArrival(0) === 1 && server.lastArrival(1) === 1);
    assert.deepEqual(server.missing(1), [2]);
    assert.equal(server.released, 0);
    arrive(sockets[2]!, 2, 1);
    assert.deepEqual(await Promise.all(waits), [1, 1, 1]);
    assert.equal(server.released, 1);
    for (const s of sockets) s.destroy();
    server.close();
  });

  test('arrival notices (one-host release) are counted but never answered; a generation that mixes them with TCP arrivals is reported', async () => {
    const problems: string[] = [];
    const server = new BarrierServer({ worldSize: 2, token: TOKEN, onProtocolError: (m) => problems.push(m) });
    const port = await server.listen();
    const sockets = await Promise.all([0, 1].map((rank) => connect(port, rank)));
    const got: Buffer[] = [];
    for (const s of sockets) s.on('data', (d: Buffer) => got.push(d));
    arrive(sockets[0]!, 0, 1, BARRIER_NOTICE_MAGIC);
    await until(() => server.lastArrival(0) === 1);
    assert.deepEqual(server.missing(1), [1]);
    assert.equal(server.released, 0);
    arrive(sockets[1]!, 1, 1, BARRIER_NOTICE_MAGIC);
    await until(() => server.lastArrival(1) === 1);
    assert.equal(server.released, 1);
    // A release written back would be on its way by now; the short wait only gives it time to land
    // (nothing is waited for here, so a slow machine can at worst miss it, never fail falsely).
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(got, [], 'the ranks release each other through shared memory: nothing written back');
    // Generation 2: rank 0 waits on TCP, rank 1 in shared memory: rank 1 would never be released.
    const wait0 = released(sockets[0]!);
    arrive(sockets[0]!, 0, 2);
    arrive(sockets[1]!, 1, 2, BARRIER_NOTICE_MAGIC);
    assert.equal(await wait0, 2);
    assert.deepEqual(problems, ['barrier: generation 2 mixes 1 one-host (shared memory) arrivals with 1 TCP ones']);
    for (const s of sockets) s.destroy();
    server.close();
  });

  test('TCP releases start from a rank that rotates with the generation', async () => {
    const server = new BarrierServer({ worldSize: 4, token: TOKEN });
    const port = await server.listen();
    const sockets = await Promise.all([0, 1, 2, 3].map((rank) => connect(port, rank)));
    // Each socket's release is written in one pass; the write order shows in which socket's
    // 'data' fires first only loosely, so read the order off the sockets' write calls instead.
    const order: number[][] = [];
    const serverSockets: net.Socket[] = [];
    const origWrite = net.Socket.prototype.write;
    net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
      if (!sockets.includes(this)) serverSockets.push(this);
      return (origWrite as (...a: unknown[]) => boolean).apply(this, args);
    } as typeof origWrite;
    try {
      for (let gen = 1; gen <= 4; gen++) {
        serverSockets.length = 0;
        const waits = sockets.map(released);
        // In rank order: each arrival seen by the server before the next is sent.
        for (let rank = 0; rank < 4; rank++) {
          arrive(sockets[rank]!, rank, gen);
          while (rank < 3 && server.lastArrival(rank) !== gen) await new Promise((r) => setTimeout(r, 2));
        }
        await Promise.all(waits);
        order.push(serverSockets.map((s) => s.remotePort!).map((p) => sockets.findIndex((c) => c.localPort === p)));
      }
    } finally {
      net.Socket.prototype.write = origWrite;
    }
    // Arrival order is rank order, so the rotation alone decides who goes first.
    assert.deepEqual(order.map((o) => o[0]), [1, 2, 3, 0]);
    for (const o of order) assert.deepEqual([...o].sort(), [0, 1, 2, 3]);
    for (const s of sockets) s.destroy();
    server.close();
  });

  test('a bad frame is reported and the connection dropped', async () => {
    const problems: string[] = [];
    const server = new BarrierServer({ worldSize: 1, token: TOKEN, onProtocolError: (m) => problems.push(m) });
    const port = await server.listen();
    const s = await connect(port, 0);
    const closed = new Promise((r) => s.on('close', r));
    arrive(s, 0, 1, 0xdeadbeef);
    await closed;
    assert.match(problems[0] ?? '', /bad frame \(magic deadbeef, rank 0, hello for rank 0\)/);
    server.close();
  });

  test('a connection without the session secret can neither arrive for a rank nor take its releases', { timeout: 15_000 }, async () => {
    const problems: string[] = [];
    const server = new BarrierServer({ worldSize: 2, token: TOKEN, onProtocolError: (m) => problems.push(m) });
    const port = await server.listen();
    const closedBy = (s: net.Socket) => new Promise<void>((r) => s.on('close', () => r()));
    // 1. An arrive frame with no hello (the old protocol, or a port scanner that knows it).
    const bare = net.connect(port, '127.0.0.1');
    const bareClosed = closedBy(bare);
    arrive(bare, 0, 1);
    await bareClosed;
    // 2. A hello with the wrong secret, then an arrive for rank 1.
    const wrong = await connect(port, 1, 'b'.repeat(32));
    const wrongClosed = closedBy(wrong);
    arrive(wrong, 1, 1);
    await wrongClosed;
    // 3. The right secret, but a rank beyond the world size; 4. right secret, arrive for another rank.
    const beyond = await connect(port, 5);
    await closedBy(beyond);
    const other = await connect(port, 0);
    const otherClosed = closedBy(other);
    arrive(other, 1, 1);
    await otherClosed;
    assert.deepEqual(problems.map((p) => p.replace(/^barrier: connection from [^ ]+ closed: /, '')), [
      'its first frame is not a hello (magic 52424343)',
      'hello for rank 1 without this session\'s secret',
      'hello for rank 5, world size 2',
      'bad frame (magic 52424343, rank 1, hello for rank 0)',
    ]);
    // None of them arrived: generation 1 still waits for both ranks, and the real ranks pass it.
    assert.deepEqual(server.missing(1), [0, 1]);
    const ranks = await Promise.all([0, 1].map((rank) => connect(port, rank)));
    const waits = ranks.map(released);
    ranks.forEach((s, rank) => arrive(s, rank, 1));
    assert.deepEqual(await Promise.all(waits), [1, 1]);
    // A connection that never says its hello is closed with the server, not left open.
    const silent = net.connect(port, '127.0.0.1');
    await new Promise((r) => silent.once('connect', r));
    const silentClosed = closedBy(silent);
    server.close();
    await silentClosed;
    for (const s of ranks) s.destroy();
  });

  test('a token that is not 32 characters is refused when the server is made', () => {
    assert.throws(() => new BarrierServer({ worldSize: 1, token: 'short' }), /barrier token must be 32 characters, got 5/);
  });
});
