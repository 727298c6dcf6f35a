/**
 * Child of startup.ts, one cold process per sample, run as a bundle (startup.ts builds it with
 * esbuild, the product's libraries taken from dist/vendor/ as the shipped bundles take them): the
 * first file of a session as the extension meets it (register.ts: the engine load of warmStart.ts,
 * then ensureModel) — the shipped grammars (dist/grammars, argv[4]) loaded and warmed
 * (CallSiteFinder.warmUp) and the saved runs of a folder (argv[5]: a run loaded, as in a workspace
 * with .commcost/runs) loaded together, then the file (argv[2], language argv[3]) is parsed,
 * scanned and each site's CodeLens title made from the run.
 * argv[6] "cold": the file is opened at activation (its open starts the load: onLanguage:python);
 * "warm": it is opened once the background load after activation has ended (the clock of `open`
 * starts then).
 * Prints {"modules", "grammars", "open", "annotated": ms since the process started (performance.now()
 * counts from Node's time origin, before the modules load), "sites": n, "answered": n}.
 */
import { readFileSync } from 'node:fs';
import { AnnotationModel } from '../../extension/annotations/annotationModel';
import { codeLensTitle } from '../../readings/annotationText';
import { CallSiteFinder, shippedGrammars, type SourceLanguage } from '../../sites/callSites';
import { ProfileStore } from '../../client/profileStore';
import { DEEP_WARM_ROUNDS, inSlices } from '../../extension/annotations/warmStart';

async function main(): Promise<void> {
  const modules = performance.now(); // this bundle's modules evaluated, Node started
  const [file, language, grammars, runs, mode] = [
    process.argv[2]!,
    process.argv[3] as SourceLanguage,
    process.argv[4]!,
    process.argv[5]!,
    process.argv[6] ?? 'cold',
  ];
  const store = new ProfileStore((line) => process.stderr.write(`${line}\n`));
  let grammarsAt = 0;
  // As the extension loads them: together; the C/C++ grammar only on the first C/C++ document.
  const [finder] = await Promise.all([
    CallSiteFinder.load(shippedGrammars(grammars), { lazyCpp: true }).then((f) => (f.warmUp(), (grammarsAt = performance.now()), f)),
    store.reload([{ dir: runs, source: 'workspace' }], null),
  ]);
  if (store.profiles.length === 0) throw new Error(`no run loaded from ${runs}`);
  // warm: the extension's deeper warm-up after a background load (register.ts), to its end.
  if (mode === 'warm') await inSlices(() => finder.warmUp(), DEEP_WARM_ROUNDS, () => false);
  // cold: the open came first and waited for all of the above; warm: it comes now.
  const open = mode === 'warm' ? performance.now() : 0;
  const text = readFileSync(file, 'utf8');
  const model = new AnnotationModel(finder, store, () => ({ now: Date.now(), staleAfterDays: 30, expectedNcclVersion: '' }));
  const sites = model.open('file:///bench', language, text, 1).scan.sites;
  let answered = 0;
  for (const s of sites) if (/\d/.test(codeLensTitle(model.annotateSite('file:///bench', s)))) answered++;
  const annotated = performance.now();
  process.stdout.write(JSON.stringify({ modules, grammars: grammarsAt, open, annotated, sites: sites.length, answered }) + '\n');
  process.exit(0);
}
void main();
