/**
 * Child of startup.ts, one fresh process per sample: the first file of a session — web-tree-sitter
 * and the grammars load, then the file (argv[2], language argv[3]) is parsed, scanned and each
 * site's CodeLens title made, as the extension does on the first Python/C++ document. Prints
 * {"grammars": ms, "annotated": ms, "sites": n} (annotated counts from the start, grammars included).
 */
import { readFileSync } from 'node:fs';
import { AnnotationModel } from '../../extension/annotations/annotationModel';
import { codeLensTitle } from '../../readings/annotationText';
import { CallSiteFinder, nodeModulesGrammars, type SourceLanguage } from '../../sites/callSites';
import { ProfileStore } from '../../client/profileStore';

async function main(): Promise<void> {
  const [file, language] = [process.argv[2]!, process.argv[3] as SourceLanguage];
  const text = readFileSync(file, 'utf8');
  const t0 = performance.now();
  // As the extension loads it: the C/C++ grammar only on the first C/C++ document (register.ts).
  const finder = await CallSiteFinder.load(nodeModulesGrammars(process.cwd()), { lazyCpp: true });
  const t1 = performance.now();
  const model = new AnnotationModel(finder, new ProfileStore(() => undefined), () => ({ now: Date.now(), staleAfterDays: 30, expectedNcclVersion: '' }));
  const sites = model.open('file:///bench', language, text, 1).scan.sites;
  for (const s of sites) codeLensTitle(model.annotateSite('file:///bench', s));
  const t2 = performance.now();
  process.stdout.write(JSON.stringify({ grammars: t1 - t0, annotated: t2 - t0, sites: sites.length }) + '\n');
  process.exit(0);
}
void main();
