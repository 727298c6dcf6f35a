// Profiles from the real H200 runs of docs/results: the figures an annotation shows (equal to
// the run's), the hover and CodeLens text, staleness rules, and malformed or hostile run files.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  codeLensTitle,
  decorationLabel,
  escapeMarkdown,
  formatBytes,
  formatMs,
  hoverLinks as hoverLinksFor,
  hoverMarkdown,
  reading,
} from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import { staleReasons, type StaleRules } from '../../readings/profiles';
import type { CallSite } from '../../sites/callSites';
import type { RunFile } from '../../protocol/runFile';
import { rawRun, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const wheel = rawRun('2.28.9-wheel');
const system = rawRun('2.28.3-system');
const startedAt = (r: RunFile) => Date.parse(r.stamp?.startedAt ?? '');
/** The short run label every annotation ends with (readings/runName.ts), from the run's own stamp: GPUs · NCCL version · start. */
const label = (r: RunFile) => `${r.ranks}× ${r.stamp?.gpus[0]?.name.replace(/^NVIDIA /, '')} · NCCL ${r.stamp?.ncclVersion} · ${r.stamp?.startedAt.slice(0, 16).replace('T', ' ')} UTC`;
const fresh = (r: RunFile): StaleRules => ({
  now: startedAt(r) + 86_400_000,
  staleAfterDays: 30,
  expectedNcclVersion: r.stamp?.ncclVersion ?? '',
});

function step(run: RunFile, experiment: string, variant: string, id: string) {
  const s = run.experiments
    .find((e) => e.experiment === experiment)
    ?.variants.find((v) => v.variant === variant)
    ?.steps.find((x) => x.step === id);
  assert.ok(s, `${experiment}/${variant}/${id} in the fixture run`);
  return s.stats;
}
function memory(run: RunFile, experiment: string, variant: string, point: string): number {
  const m = run.experiments.find((e) => e.experiment === experiment)?.variants.find((v) => v.variant === variant)?.memoryBytes?.[point];
  assert.equal(typeof m, 'number');
  return m as number;
}
/** Markdown escapes removed, to compare with plain figures. */
const unescape = (md: string) => md.replace(/\\(.)/g, '$1');

async function siteOf(language: 'python' | 'cpp', text: string): Promise<CallSite> {
  const s = (await scanText(language, text)).sites[0];
  assert.ok(s);
  return s;
}

test("ncclCommInitRank on the 2.28.9 run: the figures, CodeLens, label and reading are the run's", async () => {
  const { store } = await storeOf(runFolder([wheel]));
  const a = resolveAnnotation('ncclCommInitRank', store.active, store.profiles, fresh(wheel));
  const total = step(wheel, 'init', 'default', 'total');
  const first = step(wheel, 'init', 'default', 'first');
  const call = step(wheel, 'init', 'default', 'call');
  const mem = memory(wheel, 'init', 'default', 'afterFirst');
  assert.deepEqual([a.measured?.main.total?.stats, a.measured?.main.first?.stats, a.measured?.main.call?.stats], [total, first, call]);
  assert.deepEqual([a.stale, a.simulated], [[], false]);
  assert.equal(codeLensTitle(a), `⏱ ${formatMs(total.median)} to first collective · ${formatBytes(mem)}/GPU — ${label(wheel)}`);
  assert.equal(decorationLabel(a), `${formatMs(total.median)} · ${formatBytes(mem)}/GPU`);
  assert.equal(
    reading(a),
    // Of call + first (docs/METHOD.md "Percentages"), with its two parts.
    `${Math.round((100 * first.median) / (call.median + first.median))}% of this init is paid in its first collective (of the call + first collective, ${formatMs(call.median).replace(' ms', '')} + ${formatMs(first.median)})`,
  );

  const site = await siteOf('cpp', 'void f(){ ncclCommInitRank(&c, 2, id, 0); }');
  const md = hoverMarkdown(a, site, hoverLinksFor(a));
  const text = unescape(md);
  for (const figure of [call.median, call.p90, first.median, first.p90, total.median, total.p90])
    assert.ok(text.includes(`;${formatMs(figure)} |`), `hover shows ${formatMs(figure)}`);
  assert.ok(text.includes(`${wheel.stamp?.gpus.length}× ${wheel.stamp?.gpus[0]?.name}`));
  assert.ok(text.includes(`NCCL ${wheel.stamp?.ncclVersion}`));
  assert.ok(text.includes(`n = ${total.n}`));
  assert.ok(text.includes(wheel.stamp?.startedAt.slice(0, 10) ?? '?'));
  assert.ok(text.includes(`Memory per GPU: ${formatBytes(mem)} after the first collective`));
  assert.match(md, /\[Open run\]\(command:commcost\.openRun\?/);
  assert.match(md, /\[Re-measure on localhost\]\(command:commcost\.remeasure\?/);
});

test('split_group falls back to the ncclCommSplit beneath it and says so; the headline is the 2-rank child, one-rank children listed as such', async () => {
  const { store } = await storeOf(runFolder([wheel]));
  const a = resolveAnnotation('split_group', store.active, store.profiles, fresh(wheel));
  assert.equal(a.measured?.experiment, 'split');
  // 2 ranks: halves are one-rank children (nothing to connect); the split that pays the lazy connect is whole/splitShare=0.
  assert.equal(a.measured?.main.variant, 'whole/splitShare=0');
  assert.equal(a.measured?.main.childRanks, 2);
  assert.deepEqual(a.measured?.main.total?.stats, step(wheel, 'split', 'whole/splitShare=0', 'total'));
  assert.deepEqual(
    a.measured?.others.map((v) => [v.variant, v.childRanks]),
    [
      ['whole/splitShare=1', 2],
      ['halves/splitShare=0', 1],
      ['halves/splitShare=1', 1],
    ],
  );
  assert.ok(a.measured?.via);
  assert.match(codeLensTitle(a), /\(split beneath\)/);
  const site = await siteOf('python', 'import torch.distributed as dist\ng = dist.split_group(None, [[0]])\n');
  const text = unescape(hoverMarkdown(a, site, hoverLinksFor(a)));
  assert.match(text, /No c10d figures for this call/);
  assert.match(text, /halves\/splitShare=0: [^·]*\(one-rank communicator: nothing to connect\)/);
  // The reading states the share of the first collective as measured (~140 of ~186 ms on this run).
  const first = step(wheel, 'split', 'whole/splitShare=0', 'first');
  const call = step(wheel, 'split', 'whole/splitShare=0', 'call');
  assert.equal(
    reading(a)?.split(';')[0],
    `${Math.round((100 * first.median) / (call.median + first.median))}% of this split is paid in its first collective (of the call + first collective, ${formatMs(call.median).replace(' ms', '')} + ${formatMs(first.median)})`,
  );
  assert.doesNotMatch(text, /100%|is the call itself/);
});

test('teardown: destroy and abort headlines are the call; abort lists the re-init', async () => {
  const { store } = await storeOf(runFolder([wheel]));
  const d = resolveAnnotation('ncclCommDestroy', store.active, store.profiles, fresh(wheel));
  assert.deepEqual(d.measured?.headline.stats, step(wheel, 'destroy', 'default', 'destroy'));
  const ab = resolveAnnotation('ncclCommAbort', store.active, store.profiles, fresh(wheel));
  const abort = step(wheel, 'abort', 'default', 'abort');
  const reinit = step(wheel, 'abort', 'default', 'total');
  assert.equal(
    codeLensTitle(ab),
    `⏱ ${formatMs(abort.median)} ncclCommAbort · ${formatMs(reinit.median)} re-init to first collective — ${label(wheel)}`,
  );
  assert.match(reading(ab) ?? '', new RegExp(`recovering costs ${formatMs(abort.median + reinit.median).replace('.', '\\.')}`));
});

test('an experiment the run lacks: "not measured in this run" and a Measure lens on the profile\'s host', async () => {
  const { store } = await storeOf(runFolder([wheel]));
  for (const api of ['ncclCommShrink', 'ncclCommGrow', 'ncclCommRevoke', 'ncclCommRegister', 'ncclCommSuspend'] as const) {
    const a = resolveAnnotation(api, store.active, store.profiles, fresh(wheel));
    assert.equal(a.measured, undefined);
    assert.equal(a.missing?.reason, 'not measured in this run');
    assert.equal(codeLensTitle(a), '⏱ not measured in this run · Measure this on localhost');
  }
  const skipped: RunFile = {
    ...wheel,
    id: '20261129-194828-skipped',
    skipped: [{ experiment: 'grow' as never, reason: 'needs NCCL ≥ 2.29.2, host has 2.28.9' }],
  };
  const { store: s2 } = await storeOf(runFolder([skipped]));
  assert.equal(
    resolveAnnotation('ncclCommGrow', s2.active, s2.profiles, fresh(wheel)).missing?.reason,
    'skipped on localhost (2× H200): needs NCCL ≥ 2.29.2, host has 2.28.9',
  );
});

test('a simulated run, once chosen, says SIMULATED in the CodeLens, label and hover', async () => {
  const sim: RunFile = {
    ...wheel,
    id: '20261129-200000-localhost',
    simulated: true,
    stamp: wheel.stamp && { ...wheel.stamp, simulated: true },
  };
  const { store } = await storeOf(runFolder([sim]));
  // Never the active run by itself: only once the user chooses it.
  assert.equal(store.active, undefined);
  assert.ok(store.setActiveKey(store.profiles[0]?.key ?? ''));
  for (const api of ['ncclCommInitRank', 'ncclCommDestroy', 'ncclCommShrink'] as const) {
    const a = resolveAnnotation(api, store.active, store.profiles, fresh(wheel));
    assert.match(codeLensTitle(a), /SIMULATED/);
    if (a.measured) assert.match(codeLensTitle(a), /^SIMULATED · .* — 2 ranks · NCCL /);
    assert.doesNotMatch(codeLensTitle(a), /H200/, 'never a GPU it did not run on');
    if (a.measured) assert.match(decorationLabel(a) ?? '', /SIMULATED/);
    const site = await siteOf('cpp', `void f(){ ${api}(c); }`);
    assert.match(hoverMarkdown(a, site, hoverLinksFor(a)), /\*\*SIMULATED\*\*/);
  }
});

// Staleness, data-driven: [case, runs (active first), rules, expected reasons as regexps].
const day = 86_400_000;
const staleCases: [string, RunFile[], (r: RunFile) => StaleRules, RegExp[]][] = [
  ['same version, recent', [wheel], fresh, []],
  [
    'expected version set to another',
    [wheel],
    (r) => ({ ...fresh(r), expectedNcclVersion: '2.29.2' }),
    [/measured with NCCL 2\.28\.9; this workspace loads 2\.29\.2 \(setting commcost\.expectedNcclVersion\)/],
  ],
  [
    'older than staleAfterDays',
    [wheel],
    (r) => ({ ...fresh(r), now: startedAt(r) + 45 * day }),
    [/measured 45 days ago \(older than 30 days\)/],
  ],
  [
    'no expected version: the last run on the host decides',
    [wheel, system],
    (r) => ({ ...fresh(r), expectedNcclVersion: '' }),
    [/measured with NCCL 2\.28\.9; this workspace loads 2\.28\.3 \(the last run on localhost\)/],
  ],
  ['the last run on the host is the active one', [system, wheel], (r) => ({ ...fresh(r), expectedNcclVersion: '' }), []],
];
for (const [name, runs, rules, expected] of staleCases) {
  test(`stale: ${name}`, async () => {
    const { store } = await storeOf(runFolder(runs));
    const active = store.profiles.find((p) => p.run.id === runs[0]?.id);
    assert.ok(active);
    const reasons = staleReasons(active, active, store.profiles, rules(runs[0] as RunFile));
    assert.equal(reasons.length, expected.length, reasons.join(' | '));
    expected.forEach((re, i) => assert.match(reasons[i] ?? '', re));
  });
}

test('stale: figures from another host, and a target that now reaches another machine', async () => {
  const other: RunFile = { ...system, id: '20261129-194942-gpu7', host: 'gpu7' };
  const { store } = await storeOf(runFolder([wheel, other]));
  const active = store.profiles.find((p) => p.run.host === 'gpu7');
  const source = store.profiles.find((p) => p.run.host === 'localhost');
  assert.ok(active && source);
  assert.ok(
    staleReasons(source, active, store.profiles, fresh(system)).some((r) => r === 'measured on localhost, the active profile is gpu7'),
  );
  // The active profile lacks an experiment: its figures come from another host's run, marked stale.
  const reduced: RunFile = { ...other, experiments: other.experiments.filter((e) => e.experiment !== 'abort') };
  const { store: s2 } = await storeOf(runFolder([wheel, reduced]));
  const gpu7 = s2.profiles.find((p) => p.run.host === 'gpu7');
  assert.ok(gpu7 && s2.setActiveKey(gpu7.key));
  const a = resolveAnnotation('ncclCommAbort', s2.active, s2.profiles, fresh(system));
  assert.equal(a.measured?.source.run.host, 'localhost');
  assert.ok(a.stale.includes('measured on localhost, the active profile is gpu7'));
  assert.match(codeLensTitle(a), /· stale$/);
  assert.match(decorationLabel(a) ?? '', /\(stale\)$/);
  const moved: RunFile = {
    ...wheel,
    id: '20261201-000000-localhost',
    stamp: wheel.stamp && { ...wheel.stamp, hostname: 'vm2', startedAt: '2026-12-01T00:00:00.000Z' },
  };
  const { store: s3 } = await storeOf(runFolder([wheel, moved]));
  const old = s3.profiles.find((p) => p.run.id === wheel.id);
  assert.ok(old && s3.active);
  assert.ok(
    staleReasons(old, s3.active, s3.profiles, { ...fresh(wheel), expectedNcclVersion: '2.28.9' }).includes(
      'localhost was machine vm when measured, it is now vm2',
    ),
  );
});

const hostileHost = '[x](command:workbench.action.terminal.new) <img src=x onerror=alert(1)> **bold**';
const hostileCases: [string, { name: string; text: string }][] = [
  ['not JSON', { name: 'broken.json', text: '{"schema": "commcost.run/1", ' }],
  ['wrong schema', { name: 'other.json', text: JSON.stringify({ schema: 'other/1', id: 'x' }) }],
  [
    'a string where figures belong',
    {
      name: 'typed.json',
      text: JSON.stringify({
        ...wheel,
        id: 'typed',
        experiments: [
          {
            ...wheel.experiments[0],
            variants: [
              { variant: 'default', steps: [{ step: 'total', label: 'x', kind: 'toFirst', stats: { median: 'fast' }, samples: [] }] },
            ],
          },
        ],
      }),
    },
  ],
  ['an unsafe id', { name: 'id.json', text: JSON.stringify({ ...wheel, id: '../../etc/passwd' }) }],
  [
    'an unknown experiment id',
    { name: 'exp.json', text: JSON.stringify({ ...wheel, id: 'exp', experiments: [{ ...wheel.experiments[0], experiment: 'rm -rf' }] }) },
  ],
  ['too large', { name: 'huge.json', text: ' '.repeat(17 * 1024 * 1024) }],
];
for (const [name, file] of hostileCases) {
  test(`a malformed run file (${name}) is reported once and ignored`, async () => {
    const dir = runFolder([wheel, file]);
    const { store, reports } = await storeOf(dir);
    assert.deepEqual(
      store.profiles.map((p) => p.run.id),
      [wheel.id],
    );
    assert.equal(reports.length, 1);
    assert.ok(reports[0]?.includes(file.name), reports[0]);
    await store.reload([{ dir, source: 'workspace' }]);
    assert.equal(reports.length, 1, 'reported once, not on every reload');
  });
}

test('a valid run with hostile text injects no markup or links into the hover', async () => {
  const hostile: RunFile = {
    ...wheel,
    id: '20261129-194828-hostile',
    host: hostileHost,
    stamp: wheel.stamp && {
      ...wheel.stamp,
      hostname: '</a><script>x</script>',
      ncclVersion: '2.28.9](command:evil)',
      gpus: wheel.stamp.gpus.map((g) => ({ ...g, name: '`code` | pipe\nnewline' })),
    },
    experiments: wheel.experiments.map((e) => ({
      ...e,
      variants: e.variants.map((v) => ({
        ...v,
        variant: '[v](https://evil.invalid)',
        steps: v.steps.map((s) => ({ ...s, label: '<b>x</b>|[l](command:evil)' })),
      })),
    })),
  };
  const { store, reports } = await storeOf(runFolder([hostile]));
  assert.deepEqual(reports, []);
  const site = await siteOf('cpp', 'void f(){ ncclCommSplit(p, 0, 0, &c, NULL); }');
  for (const api of ['ncclCommSplit', 'ncclCommInitRank', 'ncclCommShrink'] as const) {
    const a = resolveAnnotation(api, store.active, store.profiles, {
      now: startedAt(wheel),
      staleAfterDays: 30,
      expectedNcclVersion: '9.9.9',
    });
    const md = hoverMarkdown(a, site, hoverLinksFor(a));
    const links = [...md.matchAll(/\]\(([^)]*)\)/g)].map((m) => m[1] ?? '');
    assert.ok(links.length > 0);
    for (const l of links) assert.match(l, /^command:commcost\.(openRun|remeasure)\?%5B%22(p\d+)?%22(%2C%22[a-z0-9-]+%22)?%5D$/);
    assert.doesNotMatch(md, /<(img|script|b|\/a)/i);
    // The GPU name's newline is a space: "pipe newline" on one line (the hover names the run by its GPUs, #28).
    assert.doesNotMatch(md, /pipe\s*\n/, 'no raw newline from file text');
    assert.ok(!md.includes('**bold**'));
    for (const title of [codeLensTitle(a), decorationLabel(a) ?? '']) assert.doesNotMatch(title, /[\n\r]/);
  }
});

test('escapeMarkdown escapes every Markdown and HTML special character', () => {
  assert.equal(escapeMarkdown('a*b_[c](d)<e>&`f`|g\nh'), 'a\\*b\\_\\[c\\]\\(d\\)&lt;e\\>&amp;\\`f\\`\\|g h');
});
