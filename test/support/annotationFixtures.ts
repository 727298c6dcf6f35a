// Shared by the annotation tests and benchmark: the finder on node_modules' grammars, the
// call-site fixtures, and the real H200 runs of docs/results as profiles.
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CallSiteFinder, nodeModulesGrammars, type ScanResult, type SourceLanguage } from '../../sites/callSites';
import { ProfileStore } from '../../client/profileStore';
import type { RunFile } from '../../protocol/runFile';

export const ROOT = join(__dirname, '..', '..');
export const CALLSITES = join(ROOT, 'test', 'fixtures', 'callsites');
export const RESULTS = join(ROOT, 'docs', 'results');

let finder: Promise<CallSiteFinder> | undefined;
/** The finder, loaded once per process. */
export function loadFinder(): Promise<CallSiteFinder> {
  return (finder ??= CallSiteFinder.load(nodeModulesGrammars(ROOT)));
}

export function languageOf(file: string): SourceLanguage {
  return file.endsWith('.py') ? 'python' : file.endsWith('.c') ? 'c' : 'cpp';
}

/** Parses and scans `text`, deleting the tree. */
export async function scanText(language: SourceLanguage, text: string): Promise<ScanResult & { hasError: boolean }> {
  const f = await loadFinder();
  const tree = f.parse(language, text);
  try {
    return { ...f.scan(language, tree, text), hasError: tree.rootNode.hasError };
  } finally {
    tree.delete();
  }
}

/** The call-site fixture files (not the corpus/ folder of real files: callSiteCorpus.test.ts). */
export function fixtureFiles(): string[] {
  return readdirSync(CALLSITES)
    .filter((n) => /\.(py|c|cc|cpp|h|hpp|cu|cuh)$/.test(n))
    .sort();
}

/** The real runs of docs/results (not the independent reference files). */
export function realRunFiles(): string[] {
  return readdirSync(RESULTS)
    // Runs of the init/split suite only: not the independent reference's output, not the catalogue, field-case or c10d runs.
    .filter((n) => n.endsWith('.json') && !/\.(reference|catalogue|cases)\.json$|-c10d\.json$/.test(n))
    .sort()
    .map((n) => join(RESULTS, n));
}

/** A run of docs/results parsed as plain JSON (independently of the code under test). */
export function rawRun(nameIncludes: string): RunFile {
  const path = realRunFiles().find((p) => p.includes(nameIncludes));
  if (!path) throw new Error(`no run ${nameIncludes} in docs/results`);
  return JSON.parse(readFileSync(path, 'utf8')) as RunFile;
}

/** A temp folder holding `runs` as files `<id>.json` (or raw text for hostile files). */
export function runFolder(runs: (RunFile | { name: string; text: string })[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-runs-'));
  for (const r of runs) {
    if ('text' in r) writeFileSync(join(dir, r.name), r.text);
    else writeFileSync(join(dir, `${r.id}.json`), JSON.stringify(r));
  }
  return dir;
}

/** A store loaded from `dir` as the workspace folder; `reports` collects what it logs. */
export async function storeOf(dir: string): Promise<{ store: ProfileStore; reports: string[] }> {
  const reports: string[] = [];
  const store = new ProfileStore((line) => reports.push(line));
  await store.reload([{ dir, source: 'workspace' }]);
  return { store, reports };
}
