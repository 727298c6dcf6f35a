// The call-site finder on real framework files (test/fixtures/callsites/corpus: vLLM and SGLang
// (pynccl and its ctypes wrapper, parallel state, stateless groups, weight transfer, the P2P NCCL
// KV connector), nccl4py, torchft, Megatron, DeepSpeed, verl, NeMo RL, OpenRLHF, TRL, torchcomms,
// nccl-tests, NCCL's own examples), against labels written by reading the code (labels.json):
// recall and precision overall and per kind, each at least 95%, on the files materialized (a file
// that is not is named, and its labels left out). Wrapper callers (kind wrapperCaller) are the
// wrapper index's, not the finder's: left out here.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CALLSITES, languageOf, scanText } from '../support/annotationFixtures';

const CORPUS = join(CALLSITES, 'corpus');

interface Label {
  file: string;
  line: number;
  api: string;
  role: string;
  kind: string;
}
interface Labels {
  sites: Label[];
  lookalikes: { file: string; line: number; why: string }[];
  wrapperCallers: { file: string; line: number; kind: 'wrapperCaller' }[];
}
interface Manifest {
  files: { file: string; repo: string; path: string; commit: string; license: string; sha256: string }[];
}

const allLabels = JSON.parse(readFileSync(join(CORPUS, 'labels.json'), 'utf8')) as Labels;
const manifest = JSON.parse(readFileSync(join(CORPUS, 'manifest.json'), 'utf8')) as Manifest;
const missing = manifest.files.filter((f) => !existsSync(join(CORPUS, f.file))).map((f) => f.file);
/** The manifest's files in place here; the measure is taken on them and their labels only. */
const present = manifest.files.filter((f) => !missing.includes(f.file));
const MATERIALIZE = 'node test/fixtures/callsites/corpus/materialize.mjs';
const RECALL = 0.95;
const PRECISION = 0.95;

/** A found site: `file:line api`, the line 1-based (the callee's). */
type Found = { file: string; line: number; api: string; role: string };

async function scanCorpus(): Promise<Found[]> {
  const found: Found[] = [];
  for (const { file } of present) {
    const scan = await scanText(languageOf(file), readFileSync(join(CORPUS, file), 'utf8'));
    for (const s of scan.sites) found.push({ file, line: s.range.start.line + 1, api: s.api, role: s.role });
  }
  return found;
}

const key = (x: { file: string; line: number }): string => `${x.file}:${x.line}`;

test('corpus: labels name only files of the manifest, each line once, wrapper callers apart', () => {
  const files = new Set(manifest.files.map((f) => f.file));
  const seen = new Set<string>();
  for (const x of [...allLabels.sites, ...allLabels.lookalikes, ...allLabels.wrapperCallers]) {
    assert.ok(files.has(x.file), `${x.file} is not in manifest.json`);
    assert.ok(!seen.has(key(x)), `${key(x)} is labelled twice`);
    seen.add(key(x));
  }
  assert.ok(allLabels.wrapperCallers.every((w) => w.kind === 'wrapperCaller'));
  for (const kind of ['c10d', 'ctypes', 'nccl4py', 'backend', 'framework', 'firstCollective', 'c'])
    assert.ok(
      allLabels.sites.some((s) => s.kind === kind),
      `no labelled site of kind ${kind}`,
    );
});

test('corpus: recall and precision of the finder, overall and per kind, at least 95%', async (t) => {
  if (present.length === 0) {
    t.skip(`no corpus file is materialized: ${MATERIALIZE}`);
    return;
  }
  if (missing.length > 0)
    t.diagnostic(`${missing.length} corpus files not materialized, their labels left out (${MATERIALIZE}): ${missing.join(', ')}`);
  const here = new Set(present.map((f) => f.file));
  const labels = {
    sites: allLabels.sites.filter((s) => here.has(s.file)),
    lookalikes: allLabels.lookalikes.filter((l) => here.has(l.file)),
  };
  const found = await scanCorpus();
  const byKey = new Map<string, Found[]>();
  for (const f of found) byKey.set(key(f), [...(byKey.get(key(f)) ?? []), f]);
  const expected = new Map(labels.sites.map((s) => [key(s), s]));
  const lines: string[] = [];
  const report = (kind: string, sites: Label[]): { recall: number; precision: number } => {
    const hit = sites.filter((s) => byKey.get(key(s))?.some((f) => f.api === s.api && f.role === s.role));
    const kindFiles = new Set(sites.map((s) => s.file));
    // A found site is right when a label of that line names its API; for a kind, the found sites
    // counted are those on the kind's labelled lines plus those on no labelled site line of the kind's files.
    const foundOfKind = found.filter((f) => {
      const e = expected.get(key(f));
      return e ? e.kind === kind || kind === 'all' : kind === 'all' || (kindFiles.has(f.file) && kindOfUnlabelled(f) === kind);
    });
    const right = foundOfKind.filter((f) => expected.get(key(f))?.api === f.api);
    const recall = sites.length ? hit.length / sites.length : 1;
    const precision = foundOfKind.length ? right.length / foundOfKind.length : 1;
    lines.push(
      `${kind.padEnd(16)} recall ${(100 * recall).toFixed(1)}% (${hit.length}/${sites.length})  precision ${(100 * precision).toFixed(1)}% (${right.length}/${foundOfKind.length})`,
    );
    return { recall, precision };
  };
  const all = report('all', labels.sites);
  const kinds = [...new Set(labels.sites.map((s) => s.kind))].sort();
  const per = kinds.map(
    (k) =>
      [
        k,
        report(
          k,
          labels.sites.filter((s) => s.kind === k),
        ),
      ] as const,
  );
  const missed = labels.sites.filter((s) => !byKey.get(key(s))?.some((f) => f.api === s.api)).map((s) => `missed ${key(s)} ${s.api}`);
  const wrong = found.filter((f) => expected.get(key(f))?.api !== f.api).map((f) => `not a site ${key(f)} ${f.api}`);
  t.diagnostic([...lines, ...missed, ...wrong].join('\n'));
  assert.ok(all.recall >= RECALL && all.precision >= PRECISION, lines[0]);
  for (const [k, r] of per)
    assert.ok(r.recall >= RECALL && r.precision >= PRECISION, `${k}: ${JSON.stringify(r)}\n${[...missed, ...wrong].join('\n')}`);
  // Every look-alike is left alone (they count in the precision above; here each is named).
  const flagged = labels.lookalikes.filter((l) => byKey.has(key(l))).map((l) => `${key(l)}: ${l.why}`);
  assert.ok(
    flagged.length <= Math.floor(labels.lookalikes.length * (1 - PRECISION)),
    `look-alikes taken for call sites:\n${flagged.join('\n')}`,
  );
});

/** The kind an unlabelled found site would have (for per-kind precision). */
function kindOfUnlabelled(f: Found): string {
  if (f.api === 'first_collective') return 'firstCollective';
  if (!f.file.endsWith('.py')) return 'c';
  if (/^nccl/.test(f.api)) return 'ctypes';
  if (['ProcessGroupNCCL', 'eager_connect_single_device', '_new_process_group_helper'].includes(f.api)) return 'backend';
  if (
    [
      'PyNcclCommunicator',
      'init_collective_group',
      'destroy_collective_group',
      'init_distributed',
      'new_comm',
      'ProcessGroupNCCL.configure',
    ].includes(f.api)
  )
    return 'framework';
  return 'c10d';
}

test('corpus: each materialized file is the one labelled (sha256 of the manifest)', async (t) => {
  if (present.length === 0) {
    t.skip(`no corpus file is materialized: ${MATERIALIZE}`);
    return;
  }
  if (missing.length > 0) t.diagnostic(`${missing.length} corpus files not materialized: ${missing.join(', ')}`);
  const { createHash } = await import('node:crypto');
  for (const f of present)
    assert.equal(
      createHash('sha256')
        .update(readFileSync(join(CORPUS, f.file)))
        .digest('hex'),
      f.sha256,
      f.file,
    );
});
