// settings.ts: validation, the host list and the iterations InputBox check (data-driven).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { OPTION_LIMITS } from '../../protocol/events';
import { hostChoices, pushRecent, readSettings, SettingsError, SIMULATED_LOCALHOST, validateIterations } from '../../extension/settings';

const from = (values: Record<string, unknown>) => (key: string) => values[key];

test('defaults when nothing is set', () => {
  assert.deepEqual(readSettings(from({})), {
    hosts: ['localhost'],
    iterations: 10,
    warmup: 1,
    deadlineSeconds: 60,
    ncclPath: '',
    remoteNodePath: '',
    experiments: ['init', 'split', 'destroy', 'abort'],
  });
});

const bad: [Record<string, unknown>, string, RegExp][] = [
  [{ iterations: 0 }, 'commcost.iterations', /bad value 0: expected an integer from 1 to 100000/],
  [{ iterations: 2.5 }, 'commcost.iterations', /2\.5/],
  [{ warmup: -1 }, 'commcost.warmup', /from 0 to 1000/],
  [{ iterations: 100_001 }, 'commcost.iterations', /from 1 to 100000/],
  [{ deadlineSeconds: 0.5 }, 'commcost.deadlineSeconds', /from 1 to 86400/],
  [{ deadlineSeconds: 86_401 }, 'commcost.deadlineSeconds', /from 1 to 86400/],
  [{ deadlineSeconds: 'soon' }, 'commcost.deadlineSeconds', /"soon"/],
  [{ hosts: ['gpu1', 'bad host'] }, 'commcost.hosts', /bad host/],
  [{ hosts: 'gpu1' }, 'commcost.hosts', /"gpu1"/],
  [{ experiments: ['init', 'warp'] }, 'commcost.experiments', /warp.*init, split, shrink, grow, destroy, abort/],
  [{ ncclPath: 'a\nb' }, 'commcost.ncclPath', /one line/],
];
for (const [values, setting, message] of bad) {
  test(`rejects ${JSON.stringify(values)} naming ${setting}`, () => {
    assert.throws(() => readSettings(from(values)), (e: unknown) => {
      assert.ok(e instanceof SettingsError);
      assert.equal(e.setting, setting);
      assert.match(e.message, message);
      assert.ok(e.message.startsWith(`setting ${setting} has a bad value`));
      return true;
    });
  });
}

test('valid values pass through trimmed', () => {
  const s = readSettings(from({ hosts: [' gpu1 '], iterations: 1000, warmup: 0, ncclPath: ' /opt/nccl/libnccl.so.2 ', experiments: ['split', 'split'] }));
  assert.deepEqual([s.hosts, s.iterations, s.warmup, s.ncclPath, s.experiments], [['gpu1'], 1000, 0, '/opt/nccl/libnccl.so.2', ['split']]);
});

const iterationCases: [string, boolean][] = [['1', true], ['1000', true], ['100000', true], [' 10 ', true], ['0', false], ['100001', false], ['1.5', false], ['', false], ['ten', false], ['-3', false]];
for (const [text, ok] of iterationCases) {
  test(`iterations input ${JSON.stringify(text)} → ${ok ? 'valid' : 'invalid'}`, () => {
    assert.equal(validateIterations(text) === undefined, ok);
  });
}

test('host choices: recent first, each target once, simulated last, ssh wildcards dropped', () => {
  const c = hostChoices(['localhost', 'gpu1'], ['gpu1', 'gpu2', '*.corp'], ['gpu2']);
  assert.deepEqual(c.map((x) => [x.label, x.target, x.simulate, x.source]), [
    ['gpu2', 'gpu2', false, 'recent'],
    ['localhost', 'localhost', false, 'local'],
    ['gpu1', 'gpu1', false, 'setting'],
    [SIMULATED_LOCALHOST, 'localhost', true, 'simulated'],
  ]);
});

test('recent hosts: most recent first, bounded', () => {
  assert.deepEqual(pushRecent(['a', 'b', 'c'], 'b', 3), ['b', 'a', 'c']);
  assert.deepEqual(pushRecent(['a', 'b', 'c'], 'd', 3), ['d', 'a', 'b']);
});

test('package.json settings carry the same minimum/maximum as OPTION_LIMITS', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, { minimum?: number; maximum?: number }> } };
  };
  const props = pkg.contributes.configuration.properties;
  for (const key of ['iterations', 'warmup', 'deadlineSeconds'] as const) {
    const p = props[`commcost.${key}`];
    assert.ok(p, `commcost.${key} is contributed`);
    assert.deepEqual({ min: p.minimum, max: p.maximum }, { ...OPTION_LIMITS[key] }, `commcost.${key}`);
  }
  // and the settings reader accepts exactly the bounds
  const lim = OPTION_LIMITS;
  const s = readSettings(from({ iterations: lim.iterations.max, warmup: lim.warmup.max, deadlineSeconds: lim.deadlineSeconds.max }));
  assert.deepEqual([s.iterations, s.warmup, s.deadlineSeconds], [lim.iterations.max, lim.warmup.max, lim.deadlineSeconds.max]);
});
