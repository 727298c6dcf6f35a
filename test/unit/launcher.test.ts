/**
 * Launcher identities (remote-agent/launcher.ts) and rank placement (remote-agent/nodes.ts):
 * each launcher's variable set, precedence, ports, tokens, Slurm node lists, and the errors a
 * user gets for missing or malformed variables.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { describe, test } from 'node:test';
import { DEFAULT_COORDINATOR_PORT, detectLauncher, firstSlurmNode, LaunchEnvError, launchIdentityFromEnv } from '../../remote-agent/launcher';
import { launchedOptions } from '../../remote-agent/launched';
import { helloProblem, placeRanks } from '../../remote-agent/nodes';
import { NodeHostError, runNodeHost } from '../../remote-agent/nodeHost';
import { NodeServer } from '../../remote-agent/nodeServer';

describe('launcher identity', () => {
  test('torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR; port MASTER_PORT + 1; token from the run id', () => {
    const id = launchIdentityFromEnv({ RANK: '5', WORLD_SIZE: '8', LOCAL_RANK: '1', LOCAL_WORLD_SIZE: '4', MASTER_ADDR: 'node01', MASTER_PORT: '29500', TORCHELASTIC_RUN_ID: 'job7' });
    assert.deepEqual(id, { launcher: 'torchrun', rank: 5, worldSize: 8, localRank: 1, localWorldSize: 4, coordinatorAddress: 'node01', coordinatorPort: 29501, portSource: 'MASTER_PORT + 1', token: 'job7' });
  });
  test('Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE "4(x2)", first node of the list, job id as token', () => {
    const id = launchIdentityFromEnv({ SLURM_PROCID: '6', SLURM_NTASKS: '8', SLURM_LOCALID: '2', SLURM_NTASKS_PER_NODE: '4(x2)', SLURM_JOB_NODELIST: 'gpu[07-08]', SLURM_JOB_ID: '4242' });
    assert.deepEqual(id, { launcher: 'slurm', rank: 6, worldSize: 8, localRank: 2, localWorldSize: 4, coordinatorAddress: 'gpu07', coordinatorPort: DEFAULT_COORDINATOR_PORT, portSource: `default ${DEFAULT_COORDINATOR_PORT}`, token: '4242' });
  });
  test('Open MPI: OMPI_COMM_WORLD_*; one node without an address → loopback; MASTER_PORT used as is', () => {
    const id = launchIdentityFromEnv({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2', OMPI_COMM_WORLD_LOCAL_RANK: '1', OMPI_COMM_WORLD_LOCAL_SIZE: '2', MASTER_PORT: '31000' });
    assert.equal(id.launcher, 'mpi');
    assert.equal(id.coordinatorAddress, '127.0.0.1');
    assert.equal(id.coordinatorPort, 31000);
    assert.equal(id.localRank, 1);
  });
  test('Open MPI over several nodes without an address: the error says which variable to set', () => {
    assert.throws(
      () => launchIdentityFromEnv({ OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_SIZE: '2' }),
      (e: unknown) => e instanceof LaunchEnvError && /COMMCOST_COORDINATOR_ADDR/.test(e.message),
    );
  });
  test('COMMCOST_COORDINATOR_ADDR, COMMCOST_PORT and COMMCOST_TOKEN override every launcher', () => {
    const env = { SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'a1', SLURM_JOB_ID: '1', COMMCOST_COORDINATOR_ADDR: '10.0.0.9', COMMCOST_PORT: '40000', COMMCOST_TOKEN: 's3cret' };
    const id = launchIdentityFromEnv(env);
    assert.deepEqual([id.coordinatorAddress, id.coordinatorPort, id.portSource, id.token], ['10.0.0.9', 40000, 'COMMCOST_PORT', 's3cret']);
  });
  test('precedence: torchrun inside a Slurm allocation is torchrun; mpirun inside one is MPI', () => {
    const slurm = { SLURM_PROCID: '0', SLURM_NTASKS: '1', SLURM_JOB_NODELIST: 'n1' };
    assert.equal(detectLauncher({ ...slurm, RANK: '3', WORLD_SIZE: '4', MASTER_ADDR: 'n1' }), 'torchrun');
    assert.equal(detectLauncher({ ...slurm, OMPI_COMM_WORLD_RANK: '3', OMPI_COMM_WORLD_SIZE: '4' }), 'mpi');
    assert.equal(detectLauncher(slurm), 'slurm');
    assert.equal(detectLauncher({ COMMCOST_RANK: '0', COMMCOST_WORLD_SIZE: '1', RANK: '0', WORLD_SIZE: '1', MASTER_ADDR: 'x' }), 'commcost');
    assert.equal(detectLauncher({ PATH: '/bin' }), undefined);
  });
  const bad: [string, NodeJS.ProcessEnv, RegExp][] = [
    ['no launcher at all', {}, /no launcher variables found: expected torchrun .* Slurm .* Open MPI/],
    ['a rank that is not a number', { SLURM_PROCID: 'x', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'n' }, /SLURM_PROCID="x" is not an integer/],
    ['a rank beyond the world', { RANK: '4', WORLD_SIZE: '4', MASTER_ADDR: 'a' }, /rank 4 is not below the world size 4/],
    ['a world size of 0', { OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '0' }, /OMPI_COMM_WORLD_SIZE="0" is not an integer ≥ 1/],
    ['a port out of range', { COMMCOST_RANK: '0', COMMCOST_WORLD_SIZE: '1', COMMCOST_PORT: '70000' }, /COMMCOST_PORT="70000" is not a TCP port/],
    ['torchrun without MASTER_ADDR', { RANK: '0', WORLD_SIZE: '2', TORCHELASTIC_RUN_ID: 'r' }, /MASTER_ADDR is not set/],
    ['Slurm without a node list', { SLURM_PROCID: '0', SLURM_NTASKS: '2' }, /SLURM_JOB_NODELIST is not set/],
    ['an unbalanced node list', { SLURM_PROCID: '0', SLURM_NTASKS: '2', SLURM_JOB_NODELIST: 'gpu[01-02' }, /unbalanced brackets/],
  ];
  for (const [what, env, message] of bad) {
    test(`clear error: ${what}`, () => assert.throws(() => launchIdentityFromEnv(env), (e: unknown) => e instanceof LaunchEnvError && message.test(e.message)));
  }
  const lists: [string, string][] = [
    ['node7', 'node7'],
    ['gpu[03-04,07],login1', 'gpu03'],
    ['a-[1-2]-b[5-6]', 'a-1-b5'],
    ['n1,n2', 'n1'],
    ['rack[2]-gpu[010-012]', 'rack2-gpu010'],
  ];
  for (const [list, first] of lists) test(`firstSlurmNode(${list}) = ${first}`, () => assert.equal(firstSlurmNode(list), first));
});

describe('launched run options', () => {
  test('flags win over --options JSON; ranks are the launcher\'s', () => {
    const { options, out } = launchedOptions(['--options', '{"experiments":["split"],"iterations":3,"ranks":4}', '--iterations', '5', '--simulate', '--out', 'r.jsonl'], {});
    assert.deepEqual([options.experiments, options.iterations, options.simulate, options.ranks, out], [['split'], 5, true, undefined, 'r.jsonl']);
  });
  test('COMMCOST_OPTIONS is read when --options is absent', () => {
    assert.deepEqual(launchedOptions([], { COMMCOST_OPTIONS: '{"experiments":["abort"]}' }).options.experiments, ['abort']);
  });
  const bad: [string[], RegExp][] = [
    [['--bogus'], /Unknown option '--bogus'/],
    [['--options', '{nope'], /--options is not JSON/],
    [['--iterations', 'many'], /--iterations "many" is not a number/],
    [['--experiments', 'init,warp'], /unknown experiment "warp"/],
    [['--options', '[1]'], /must be a JSON object/],
  ];
  for (const [argv, message] of bad) test(`clear error for ${argv.join(' ')}`, () => assert.throws(() => launchedOptions(argv, {}), message));
});

describe('rank placement', () => {
  const hello = (h: Record<string, unknown>) => ({ hello: { t: 'node/hello' as const, nonce: 'n'.repeat(32), hostname: 'h', pid: 1, slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2.28.9', simulated: true, ...h } });
  test('SSH nodes in index order, ranks numbered consecutively, per-node GPU counts may differ', () => {
    const places = placeRanks([hello({ index: 1, slots: 1, devices: [0] }), hello({ index: 0, slots: 2, devices: [0, 1] }), hello({ index: 2, slots: 3, devices: [0, 1, 2] })]);
    assert.deepEqual(places.map((p) => [p.rank, p.node, p.device]), [[0, 1, 0], [1, 1, 1], [2, 0, 0], [3, 2, 0], [4, 2, 1], [5, 2, 2]]);
  });
  test('launched processes keep their rank and device', () => {
    const places = placeRanks([hello({ fixedRank: 1, devices: [1] }), hello({ fixedRank: 0, devices: [0] })]);
    assert.deepEqual(places.map((p) => [p.rank, p.node, p.device]), [[0, 1, 0], [1, 0, 1]]);
  });
  test('a duplicated or missing rank is named', () => {
    assert.throws(() => placeRanks([hello({ fixedRank: 0 }), hello({ fixedRank: 0 })]), /rank 0 joined twice/);
    assert.throws(() => placeRanks([hello({ fixedRank: 0 }), hello({ fixedRank: 2 })]), /rank 1 never joined/);
  });
});

describe('node authentication', () => {
  const hello = { slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2.28.9', simulated: true, fixedRank: 1, worldSize: 2 };
  const quiet = (): void => undefined;

  test('a node whose token differs: the node sees the listener cannot prove the token and leaves; nothing joins', async () => {
    const server = new NodeServer({ expected: 2, token: 'run-secret', port: 0, bindAddress: '127.0.0.1', log: quiet });
    const port = await server.listen();
    try {
      await assert.rejects(
        runNodeHost({ addresses: ['127.0.0.1'], port, token: 'other-secret', connectDeadlineMs: 3000, log: quiet, hello }),
        (e: unknown) => e instanceof NodeHostError && e.code === 'NODE_REFUSED' && /does not know this run's token/.test(e.message),
      );
      assert.equal(server.nodes.length, 0);
    } finally {
      server.close();
    }
  });

  test('a listener that is not the coordinator cannot make a node start anything (NODE_OPTIONS injection)', async () => {
    const fake = net.createServer((s) => {
      s.write(JSON.stringify({ t: 'node/challenge', proof: 'f'.repeat(64), nonce: 'x'.repeat(32) }) + '\n');
      s.write(JSON.stringify({ t: 'node/spawn', rank: 1, env: { NODE_OPTIONS: '--require /tmp/evil.js' } }) + '\n');
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    const port = (fake.address() as net.AddressInfo).port;
    const logs: string[] = [];
    try {
      await assert.rejects(runNodeHost({ addresses: ['127.0.0.1'], port, token: 't', connectDeadlineMs: 3000, log: (l) => logs.push(l), hello }), /does not know this run's token/);
      assert.ok(!logs.some((l) => /refused to start|rank 1/.test(l)), logs.join('\n'));
    } finally {
      fake.close();
    }
  });

  test('a joined node refuses variables outside COMMCOST_*, NCCL_*, TORCH_NCCL_*, UV_THREADPOOL_SIZE, MALLOC_ARENA_MAX', async () => {
    const server = new NodeServer({ expected: 1, token: 'tok', port: 0, bindAddress: '127.0.0.1', log: quiet });
    const port = await server.listen();
    const logs: string[] = [];
    const node = runNodeHost({ addresses: ['127.0.0.1'], port, token: 'tok', connectDeadlineMs: 3000, log: (l) => logs.push(l), hello: { ...hello, fixedRank: 0, worldSize: 1 } });
    await server.waitForNodes(3000, () => false);
    const exit = await new Promise<number | null>((resolve) => server.spawn(0, 0, { NODE_OPTIONS: '--require /tmp/evil.js', COMMCOST_RANK: '0' }, { onLine: quiet, onExit: (code) => resolve(code) }));
    assert.equal(exit, 126);
    assert.match(logs.join('\n'), /variables not allowed in a rank's environment: NODE_OPTIONS/);
    server.close('complete');
    assert.equal(await node, 'complete');
  });

  const badHellos: [string, Record<string, unknown>, RegExp][] = [
    ['no nonce', { hostname: 'h', slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true }, /no nonce/],
    ['no gpus', { nonce: 'n'.repeat(32), hostname: 'h', slots: 1, devices: [0], ncclVersion: '2', simulated: true }, /"gpus" must name one GPU per slot/],
    ['devices do not match slots', { nonce: 'n'.repeat(32), hostname: 'h', slots: 2, devices: [0], gpus: ['G', 'G'], ncclVersion: '2', simulated: true }, /one ordinal per slot/],
    ['a world size as a string', { nonce: 'n'.repeat(32), hostname: 'h', slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true, worldSize: '2' }, /"worldSize" must be a whole number/],
  ];
  for (const [what, h, re] of badHellos) test(`a malformed hello is refused: ${what}`, () => assert.match(helloProblem(h) ?? '', re));
});
