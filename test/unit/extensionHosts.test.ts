// hostEntries.ts: entries of commcost.hosts (one host, a group joined by +, slurm:<login node>),
// their labels, the picker's descriptions and the host part of the run request.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommcostError } from '../../client/errors';
import { srunArgsFor } from '../../client/slurm';
import { describeHostEntry, entryRequest, hostLabel, MAX_GROUP_HOSTS, parseHostEntry } from '../../extension/hostEntries';

const slurm = { nodes: 2, gpusPerNode: 4, partition: 'gpu', time: '0:10:00' };

const good: [string, ReturnType<typeof parseHostEntry>][] = [
  ['gpu1', { entry: 'gpu1', target: 'gpu1' }],
  ['  localhost ', { entry: 'localhost', target: 'localhost' }],
  ['alice@gpu9:2222', { entry: 'alice@gpu9:2222', target: 'alice@gpu9:2222' }],
  ['gpu-a + gpu-b + gpu-c', { entry: 'gpu-a + gpu-b + gpu-c', target: 'gpu-a', moreTargets: ['gpu-b', 'gpu-c'] }],
  ['gpu-a+gpu-b', { entry: 'gpu-a + gpu-b', target: 'gpu-a', moreTargets: ['gpu-b'] }],
  [' gpu-a   +gpu-b+  bob@[fe80::1]:22 ', { entry: 'gpu-a + gpu-b + bob@[fe80::1]:22', target: 'gpu-a', moreTargets: ['gpu-b', 'bob@[fe80::1]:22'] }],
  ['localhost + gpu-b', { entry: 'localhost + gpu-b', target: 'localhost', moreTargets: ['gpu-b'] }],
  ['slurm:login1', { entry: 'slurm:login1', target: 'login1', slurm: true }],
  ['slurm: alice@login1:2200', { entry: 'slurm:alice@login1:2200', target: 'alice@login1:2200', slurm: true }],
];
for (const [text, parsed] of good) {
  test(`parses ${JSON.stringify(text)}`, () => {
    assert.deepEqual(parseHostEntry(text), parsed);
  });
}

const bad: [string, string, RegExp, RegExp][] = [
  ['a host twice in a group', 'gpu-a + gpu-b + gpu-a', /^host entry "gpu-a \+ gpu-b \+ gpu-a" names gpu-a twice$/, /name each host of a group once/],
  ['a host twice, spacing aside', 'gpu-a+gpu-a', /"gpu-a \+ gpu-a" names gpu-a twice/, /once/],
  ['a shell character in a group', 'gpu-a + gpu;b', /^host entry "gpu-a \+ gpu;b" is refused: host name "gpu;b" contains the shell character ";"$/, /cannot contain/],
  ['a dash-led name in a group', 'gpu-a + -oProxyCommand=x', /"-oProxyCommand=x" starts with '-'/, /dash/],
  ['a bad port in a group', 'gpu-a + gpu-b:99999', /port "99999" of "gpu-b:99999" is not 1\.\.65535/, /.+/],
  ['an empty name around +', 'gpu-a + ', /"gpu-a \+ " has an empty host name around \+/, /join host names with \+/],
  ['+ + ', 'gpu-a + + gpu-b', /empty host name/, /gpu-a \+ gpu-b/],
  ['slurm: without a login node', 'slurm:', /^host entry "slurm:" names no Slurm login node$/, /slurm:login1/],
  ['slurm: with spaces only', 'slurm:   ', /names no Slurm login node/, /slurm:<login node>/],
  ['slurm:localhost', 'slurm:localhost', /names localhost: a Slurm run needs a login node reached over SSH/, /slurm:login1/],
  ['slurm: with a bad name', 'slurm:login1;rm', /"slurm:login1;rm" is refused: host name "login1;rm" contains the shell character/, /.+/],
  ['slurm: combined with + (first)', 'slurm:login1 + gpu-b', /combines slurm: with \+/, /commcost\.slurm \(nodes, gpusPerNode\)/],
  ['slurm: combined with + (later)', 'gpu-a + slurm:login1', /combines slurm: with \+/, /slurm:<login node> alone/],
  ['an empty entry', '   ', /is empty/, /localhost/],
];
for (const [what, text, message, hint] of bad) {
  test(`refuses ${what}: ${JSON.stringify(text)}`, () => {
    assert.throws(() => parseHostEntry(text), (e: unknown) => {
      assert.ok(e instanceof CommcostError, String(e));
      assert.ok(e.code === 'BAD_INPUT' || e.code === 'BAD_TARGET', e.code);
      assert.match(e.message, message);
      assert.match(e.hint ?? '', hint);
      return true;
    });
  });
}

test('a bad host name keeps client/hosts.ts code BAD_TARGET; layout problems are BAD_INPUT', () => {
  assert.throws(() => parseHostEntry('gpu-a + gpu$b'), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_TARGET');
  assert.throws(() => parseHostEntry('gpu-a + gpu-a'), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT');
});

test(`a group of more than ${MAX_GROUP_HOSTS} hosts is refused`, () => {
  const names = Array.from({ length: MAX_GROUP_HOSTS + 1 }, (_, i) => `gpu${i}`);
  assert.throws(() => parseHostEntry(names.join(' + ')), /names 65 hosts; a run takes at most 64/);
  assert.equal(parseHostEntry(names.slice(0, MAX_GROUP_HOSTS).join('+')).moreTargets?.length, MAX_GROUP_HOSTS - 1);
});

test('labels: one host, a group as "first + N more", a Slurm entry as written', () => {
  assert.equal(hostLabel(parseHostEntry('gpu1')), 'gpu1');
  assert.equal(hostLabel(parseHostEntry('gpu-a + gpu-b + gpu-c')), 'gpu-a + 2 more');
  assert.equal(hostLabel(parseHostEntry('gpu-a + gpu-b')), 'gpu-a + 1 more');
  assert.equal(hostLabel(parseHostEntry('slurm:login1')), 'slurm:login1');
});

test('picker descriptions: a group names its size and coordinator, a Slurm entry its srun line', () => {
  assert.equal(describeHostEntry(parseHostEntry('gpu1'), slurm), undefined);
  assert.equal(describeHostEntry(parseHostEntry('gpu-a + gpu-b + gpu-c'), slurm), '3 hosts, one agent each, coordinator on gpu-a');
  assert.equal(
    describeHostEntry(parseHostEntry('slurm:login1'), slurm),
    'Slurm login node: srun --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 --partition=gpu --time=0:10:00',
  );
  assert.equal(describeHostEntry(parseHostEntry('slurm:login1'), { ...slurm, srunPath: '/opt/slurm/bin/srun' })?.startsWith('Slurm login node: /opt/slurm/bin/srun --nodes=2'), true);
  // Bad Slurm settings are described, not thrown.
  assert.match(describeHostEntry(parseHostEntry('slurm:login1'), { partition: 'gpu a' }) ?? '', /^Slurm login node: commcost\.slurm is refused \(--partition "gpu a" is not a Slurm name/);
});

test('entryRequest: a group yields moreTargets and the coordinator address; one host neither', () => {
  const group = entryRequest(parseHostEntry('gpu-a + gpu-b + gpu-c'), { coordinatorAddress: '10.0.0.1', slurm });
  assert.deepEqual(group, { target: 'gpu-a', label: 'gpu-a + 2 more', moreTargets: ['gpu-b', 'gpu-c'], coordinatorAddress: '10.0.0.1' });
  assert.deepEqual(entryRequest(parseHostEntry('gpu-a + gpu-b'), { coordinatorAddress: '', slurm }), { target: 'gpu-a', label: 'gpu-a + 1 more', moreTargets: ['gpu-b'] });
  assert.deepEqual(entryRequest(parseHostEntry('gpu1'), { coordinatorAddress: '10.0.0.1', slurm }), { target: 'gpu1', label: 'gpu1' });
});

test("entryRequest: a Slurm entry yields srunArgsFor's arguments and srunPath", () => {
  const s = { ...slurm, extraArgs: ['--qos=debug'], srunPath: '/opt/slurm/bin/srun' };
  const req = entryRequest(parseHostEntry('slurm:login1'), { coordinatorAddress: '10.0.0.1', slurm: s });
  assert.equal(req.coordinatorAddress, undefined, 'the coordinator address is for groups only');
  assert.deepEqual(req, { target: 'login1', label: 'slurm:login1', slurm: { srunArgs: srunArgsFor(s), srunPath: '/opt/slurm/bin/srun' } });
});

test("entryRequest: srunArgsFor's BAD_INPUT passes through with its message and hint", () => {
  assert.throws(
    () => entryRequest(parseHostEntry('slurm:login1'), { slurm: { time: 'ten minutes' } }),
    (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && /--time "ten minutes" is not a Slurm time limit/.test(e.message) && /0:10:00/.test(e.hint ?? ''),
  );
  assert.throws(() => entryRequest(parseHostEntry('slurm:login1'), { slurm: { extraArgs: ['--ntasks=8'] } }), /changes the task layout/);
  // Not a Slurm entry: commcost.slurm is not looked at.
  assert.deepEqual(entryRequest(parseHostEntry('gpu1'), { slurm: { time: 'ten minutes' } }), { target: 'gpu1', label: 'gpu1' });
});
