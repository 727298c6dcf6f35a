// settings.ts: validation, the host list and the iterations InputBox check (data-driven).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { OPTION_LIMITS } from '../../protocol/events';
import { hostChoices, measureRunOptions, normalizeHostEntry, pushRecent, readSettings, SettingsError, SIMULATED_LOCALHOST, SLURM_KEYS, validateIterations } from '../../extension/settings';

const from = (values: Record<string, unknown>) => (key: string) => values[key];

interface Section {
  id: string;
  title: string;
  order: number;
  properties: Record<string, Record<string, unknown>>;
}
/** package.json's settings sections (contributes.configuration is an array of them). */
function sections(): Section[] {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { contributes: { configuration: Section[] } };
  return pkg.contributes.configuration;
}
/** Every contributed setting, whatever its section. */
function contributedSettings<T>(): Record<string, T> {
  return Object.assign({}, ...sections().map((s) => s.properties)) as Record<string, T>;
}

test('settings are grouped: Measurement, Hosts, Annotations, Advanced, in that order; each setting ordered and described in Markdown', () => {
  const s = sections();
  assert.deepEqual(s.map((x) => [x.title, x.order]), [['Measurement', 1], ['Hosts', 2], ['Annotations', 3], ['Advanced', 4]]);
  for (const section of s) {
    const props = Object.entries(section.properties);
    assert.deepEqual(props.map(([, p]) => p.order), props.map((_, i) => i + 1), `${section.title}: order 1…n as listed`);
    for (const [k, p] of props) {
      assert.ok(typeof p.markdownDescription === 'string' && p.markdownDescription.length > 20, `${k} has a markdownDescription`);
      assert.equal(p.description, undefined, `${k}: one description, in Markdown`);
      // A setting named in a description is a link in the Settings editor, and names a real setting.
      for (const m of (p.markdownDescription as string).matchAll(/`#(commcost\.[\w.]+)#`/g)) assert.ok(contributedSettings()[m[1]!], `${k} links ${m[1]}`);
    }
  }
  assert.ok(contributedSettings()['commcost.annotations.codeLens'] && contributedSettings()['commcost.annotations.decorations'], 'CodeLens and after-line label each have their own switch');
});

test('defaults when nothing is set', () => {
  assert.deepEqual(readSettings(from({})), {
    hosts: ['localhost'],
    iterations: 10,
    warmup: 1,
    deadlineSeconds: 60,
    commCounts: [1, 2, 4, 8, 16],
    ncclPath: '',
    python: '',
    remoteNodePath: '',
    experiments: ['init', 'split', 'destroy', 'abort'],
    coordinatorAddress: '',
    slurm: { nodes: 1, gpusPerNode: 1 },
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
  [{ python: '/opt/py\n/bin/python3' }, 'commcost.python', /one line/],
  [{ python: 3 }, 'commcost.python', /bad value 3/],
  [{ commCounts: [4, 2] }, 'commcost.commCounts', /strictly ascending \(must be strictly ascending, got 4,2\)/],
  [{ commCounts: [0, 1] }, 'commcost.commCounts', /whole numbers from 1 to 64/],
  [{ commCounts: [] }, 'commcost.commCounts', /must list 1 to 8 counts, got 0/],
  [{ commCounts: '1,2,4' }, 'commcost.commCounts', /is not a list/],
  [{ hosts: ['gpu-a + gpu b'] }, 'commcost.hosts', /gpu b.*groups of them joined by \+/],
  [{ coordinatorAddress: '10.0.0.1 10.0.0.2' }, 'commcost.coordinatorAddress', /without spaces \(empty: discovered\)/],
  [{ coordinatorAddress: '-oProxyCommand=x' }, 'commcost.coordinatorAddress', /host name or IP address/],
  [{ coordinatorAddress: 7 }, 'commcost.coordinatorAddress', /bad value 7/],
  [{ slurm: 'gpu' }, 'commcost.slurm', /"gpu": expected an object with partition, account, nodes, gpusPerNode, time, extraArgs, srunPath/],
  [{ slurm: ['--nodes=2'] }, 'commcost.slurm', /expected an object/],
  [{ slurm: { nodes: 0 } }, 'commcost.slurm', /"nodes" to be a whole number from 1 to 1024/],
  [{ slurm: { nodes: 1.5 } }, 'commcost.slurm', /"nodes" to be a whole number/],
  [{ slurm: { gpusPerNode: 1025 } }, 'commcost.slurm', /"gpusPerNode" to be a whole number from 1 to 1024/],
  [{ slurm: { gpusPerNode: '4' } }, 'commcost.slurm', /"gpusPerNode"/],
  [{ slurm: { partition: 7 } }, 'commcost.slurm', /"partition" to be text on one line/],
  [{ slurm: { time: '10\n' } }, 'commcost.slurm', /"time" to be text on one line/],
  [{ slurm: { extraArgs: '--qos=debug' } }, 'commcost.slurm', /"extraArgs" to be a list of srun options/],
  [{ slurm: { extraArgs: ['--qos=debug', 3] } }, 'commcost.slurm', /"extraArgs"/],
  [{ slurm: { gpus_per_node: 4 } }, 'commcost.slurm', /only the properties .* \(not gpus_per_node\)/],
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

test('commcost.python: a path passes trimmed, blank is automatic (""), longer than the agent takes is refused', () => {
  assert.equal(readSettings(from({ python: ' /opt/conda/envs/torch/bin/python ' })).python, '/opt/conda/envs/torch/bin/python');
  assert.equal(readSettings(from({ python: '   ' })).python, '');
  assert.equal(readSettings(from({ python: `/${'p'.repeat(4095)}` })).python.length, 4096);
  assert.throws(() => readSettings(from({ python: `/${'p'.repeat(4096)}` })), (e: unknown) => e instanceof SettingsError && e.setting === 'commcost.python' && /expected a path on one line of at most 4096 characters \(empty: \$COMMCOST_PYTHON on the host, else python3\)$/.test(e.message));
});

test('package.json contributes commcost.python: a string, empty by default (automatic), as long as the agent takes', () => {
  const p = contributedSettings<{ type: string; default?: unknown; maxLength?: number; markdownDescription?: string }>()['commcost.python'];
  assert.ok(p, 'commcost.python is contributed');
  assert.deepEqual([p.type, p.default, p.maxLength], ['string', '', OPTION_LIMITS.pythonChars.max]);
  assert.match(p.markdownDescription ?? '', /c10d.*COMMCOST_PYTHON.*python3/s);
  assert.equal(readSettings(from({ python: p.default })).python, '', 'the default reads as automatic');
});

test('host entries: groups and slurm: entries pass, spacing normalized', () => {
  const s = readSettings(from({ hosts: [' gpu-a+gpu-b ', 'gpu-a  +   gpu-b +gpu-c', 'slurm: login1', 'slurm:login2', 'alice@gpu9:2222'] }));
  assert.deepEqual(s.hosts, ['gpu-a + gpu-b', 'gpu-a + gpu-b + gpu-c', 'slurm:login1', 'slurm:login2', 'alice@gpu9:2222']);
});

test('host entries: normalizeHostEntry changes only spacing', () => {
  assert.equal(normalizeHostEntry('a+b'), 'a + b');
  assert.equal(normalizeHostEntry('  a  +b  '), 'a + b');
  assert.equal(normalizeHostEntry('slurm:  login1 '), 'slurm:login1');
  assert.equal(normalizeHostEntry('gpu1'), 'gpu1');
  assert.equal(normalizeHostEntry('user@[::1]:22'), 'user@[::1]:22');
});

test('commcost.slurm: values pass through trimmed, empty strings and lists dropped', () => {
  const s = readSettings(
    from({
      slurm: { partition: ' gpu ', account: '', nodes: 2, gpusPerNode: 4, time: '0:10:00', extraArgs: [' --qos=debug ', ''], srunPath: '/opt/slurm/bin/srun' },
      coordinatorAddress: ' 10.1.2.3 ',
    }),
  );
  assert.deepEqual(s.slurm, { partition: 'gpu', nodes: 2, gpusPerNode: 4, time: '0:10:00', extraArgs: ['--qos=debug'], srunPath: '/opt/slurm/bin/srun' });
  assert.equal(s.coordinatorAddress, '10.1.2.3');
  assert.deepEqual(readSettings(from({ slurm: { extraArgs: [] } })).slurm, { nodes: 1, gpusPerNode: 1 });
  assert.deepEqual(readSettings(from({ slurm: null })).slurm, { nodes: 1, gpusPerNode: 1 });
});

test('package.json contributes commcost.slurm with every property described, and commcost.coordinatorAddress', () => {
  const props = contributedSettings<{ type: string; markdownDescription?: string; default?: unknown; properties?: Record<string, { type: string; description?: string; minimum?: number; maximum?: number }> }>();
  const slurm = props['commcost.slurm'];
  assert.ok(slurm?.properties, 'commcost.slurm is an object setting');
  assert.equal(slurm.type, 'object');
  assert.deepEqual(Object.keys(slurm.properties).sort(), [...SLURM_KEYS].sort());
  for (const [k, p] of Object.entries(slurm.properties)) assert.ok(p.description && p.description.length > 10, `commcost.slurm.${k} has a description`);
  for (const k of ['nodes', 'gpusPerNode']) assert.deepEqual([slurm.properties[k]!.type, slurm.properties[k]!.minimum, slurm.properties[k]!.maximum], ['integer', 1, 1024]);
  assert.deepEqual(readSettings(from({ slurm: slurm.default })).slurm, { nodes: 1, gpusPerNode: 1 }, 'the default reads as the defaults');
  assert.equal(props['commcost.coordinatorAddress']?.type, 'string');
  assert.equal(props['commcost.coordinatorAddress']?.default, '');
  assert.match(props['commcost.hosts']?.markdownDescription ?? '', /gpu-a \+ gpu-b/);
  assert.match(props['commcost.hosts']?.markdownDescription ?? '', /slurm:login1/);
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

test('host choices: groups and slurm: entries are one choice each, compared normalized; ssh aliases with + left out', () => {
  const c = hostChoices(['gpu-a + gpu-b', 'slurm:login1', 'bad entry'], ['odd+alias', 'gpu-a'], ['gpu-a+gpu-b']);
  assert.deepEqual(c.map((x) => [x.label, x.target, x.source]), [
    ['gpu-a + gpu-b', 'gpu-a + gpu-b', 'recent'],
    ['localhost', 'localhost', 'local'],
    ['slurm:login1', 'slurm:login1', 'setting'],
    ['gpu-a', 'gpu-a', 'ssh config'],
    [SIMULATED_LOCALHOST, 'localhost', 'simulated'],
  ]);
});

test('recent hosts: most recent first, bounded', () => {
  assert.deepEqual(pushRecent(['a', 'b', 'c'], 'b', 3), ['b', 'a', 'c']);
  assert.deepEqual(pushRecent(['a', 'b', 'c'], 'd', 3), ['d', 'a', 'b']);
});

test('package.json settings carry the same minimum/maximum as OPTION_LIMITS', () => {
  const props = contributedSettings<{ minimum?: number; maximum?: number }>();
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

test('commcost.commCounts reaches the Measure run options as the CLI\'s --comm-counts does; the default adds nothing', () => {
  const set = readSettings(from({ commCounts: [1, 3, 9] }));
  assert.deepEqual(set.commCounts, [1, 3, 9]);
  assert.deepEqual(measureRunOptions(set, ['many-comms'], 3, false).commCounts, [1, 3, 9]);
  const plain = measureRunOptions(readSettings(from({})), ['many-comms'], 3, true);
  assert.equal('commCounts' in plain, false);
  assert.equal(plain.simulate, true);
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { contributes: { configuration: { properties: Record<string, { default?: unknown; maxItems?: number; items?: { minimum?: number; maximum?: number } }> }[] } };
  const contributed = Object.assign({}, ...pkg.contributes.configuration.map((x) => x.properties))['commcost.commCounts'];
  assert.ok(contributed, 'commcost.commCounts is contributed');
  assert.deepEqual(contributed.default, readSettings(from({})).commCounts);
  assert.equal(contributed.maxItems, OPTION_LIMITS.commCounts.max);
  assert.deepEqual([contributed.items?.minimum, contributed.items?.maximum], [OPTION_LIMITS.commCount.min, OPTION_LIMITS.commCount.max]);
});
