// NCCL's device API (2.28+) as lifecycle sites: ncclDevCommCreate makes a device communicator on a
// host communicator, ncclDevCommDestroy frees it (sites/apiMap.ts). No experiment times either,
// so the reading says so — never a figure of init or destroy — and, on a run of an NCCL older than
// the device API, that its library predates the call; a simulated run's version is not a library's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { codeLensTitle, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import { findings } from '../../readings/advice';
import type { RunFile } from '../../protocol/runFile';
import type { StaleRules } from '../../readings/profiles';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { loadFinder, RESULTS, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const RUN = 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';
const read = (): RunFile => JSON.parse(readFileSync(join(RESULTS, RUN), 'utf8')) as RunFile;
const TEXT = [
  'void f(ncclComm_t comm, ncclDevComm_t* d, int layers) {',
  '  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;',
  '  for (int l = 0; l < layers; l++) ncclDevCommCreate(comm, &reqs, &d[l]);',
  '  ncclDevCommDestroy(comm, &d[0]);',
  '}',
].join('\n');

test('device API: ncclDevCommCreate is a creation and ncclDevCommDestroy a teardown, each ending in itself', async () => {
  const { sites } = await scanText('cpp', TEXT);
  assert.deepEqual(
    sites.map((s) => `${s.range.start.line + 1} ${s.api} ${s.role} ${s.callsInto}${s.repeated ? ` ${s.repeated.kind}` : ''}`),
    ['3 ncclDevCommCreate create ncclDevCommCreate loop', '4 ncclDevCommDestroy teardown ncclDevCommDestroy'],
  );
});

test('device API: the reading says no experiment times it, borrows no figure, offers no Measure; in a loop, no finding with figures', async () => {
  const run = read();
  const { store } = await storeOf(runFolder([run]));
  const scan = await scanText('cpp', TEXT);
  assert.deepEqual(
    scan.sites.map((s) => s.api),
    ['ncclDevCommCreate', 'ncclDevCommDestroy'],
  );
  for (const s of scan.sites) {
    const a = resolveAnnotation(s.api, store.active, store.profiles, RULES, {});
    assert.equal(a.measured, undefined, `${s.api} borrows no figure`);
    assert.equal(codeLensTitle(a), `⏱ no commcost experiment times ${s.api}`);
    assert.equal(hoverLinks(a).measure, undefined);
    const hover = hoverMarkdown(a, s, hoverLinks(a));
    assert.doesNotMatch(hover, /\d ms|Measure this/, hover);
  }
  const found = findings(scan, (api) => resolveAnnotation(api, store.active, store.profiles, RULES, {}), TEXT);
  assert.deepEqual(found, []);
});

test('device API: a run of an NCCL older than 2.28 says its library predates the device API; a simulated one does not', async () => {
  const old = read();
  old.stamp!.ncclVersion = '2.27.7';
  old.stamp!.ncclVersionCode = 22707;
  const { store } = await storeOf(runFolder([old]));
  const a = resolveAnnotation('ncclDevCommCreate', store.active, store.profiles, RULES, {});
  assert.equal(
    codeLensTitle(a),
    "⏱ no commcost experiment times ncclDevCommCreate (the device API came with NCCL 2.28; this run's NCCL is 2.27.7)",
  );
  const sim = read();
  sim.stamp!.ncclVersion = '2.27.7';
  sim.stamp!.ncclVersionCode = 22707;
  sim.stamp!.simulated = true;
  const { store: s2 } = await storeOf(runFolder([sim]));
  // A simulated run is never the active one by default: chosen here as the user would.
  const b = resolveAnnotation('ncclDevCommDestroy', s2.profiles[0], s2.profiles, RULES, {});
  assert.equal(codeLensTitle(b), 'SIMULATED · ⏱ no commcost experiment times ncclDevCommDestroy');
});

test('device API: a C++ wrapper of ncclDevCommCreate makes its callers sites of it', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  try {
    index.setFile('/w/dev.cc', 'cpp', 'void makeDevComm(ncclComm_t c, ncclDevComm_t* d) {\n  ncclDevCommCreate(c, &reqs, d);\n}\n');
    index.setFile('/w/main.cc', 'cpp', 'int main() {\n  makeDevComm(comm, &dc);\n}\n');
    assert.deepEqual(
      index.callerSites('/w/main.cc').map((s) => `${s.range.start.line + 1} ${s.api} ${s.role} ${s.chain.join(' > ')}`),
      ['2 ncclDevCommCreate create makeDevComm > ncclDevCommCreate'],
    );
  } finally {
    index.dispose();
  }
});
