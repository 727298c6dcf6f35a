// Rewrites run files saved before the agent marked expected hangs (field cases C4, C5, C6: a
// hang-guard stop of a variant whose plan declares `hangIsResult`): each such TIMEOUT gets
// `expected: true` and its plan's own hint, and the status is recomputed (a run that was partial
// only because of those hangs becomes complete). Any other error is left as it is. The rules are
// in remote-agent/experiments/expectedHangs.ts; each file is read and the result checked with
// client/runFileSchema.ts, and a file is written only when something changed (same indentation).
//
//   node --import tsx scripts/migrate-expected-hangs.mjs [--check] <run.json>...
//
// --check: print what would change and exit 1 when some file needs migrating; write nothing.
// Exit 2 on a file that cannot be read or is not a valid run (nothing is written then).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { migrateExpectedHangs } from '../remote-agent/experiments/expectedHangs.ts';
import { validateRunFile } from '../client/runFileSchema.ts';

const args = process.argv.slice(2);
const check = args.includes('--check');
const files = args.filter((a) => a !== '--check');
if (files.length === 0 || files.some((f) => f.startsWith('-'))) {
  process.stderr.write('usage: node --import tsx scripts/migrate-expected-hangs.mjs [--check] <run.json>...\n');
  process.exit(2);
}

/** The file's indentation (its first indented line), so a rewritten file keeps its layout. */
function indentOf(text) {
  return /\n([ \t]+)"/.exec(text)?.[1] ?? '  ';
}

const plans = [];
for (const file of files) {
  let text;
  let run;
  try {
    text = readFileSync(file, 'utf8');
    run = validateRunFile(JSON.parse(text), file);
  } catch (e) {
    process.stderr.write(`${file}: ${e instanceof Error ? e.message : String(e)}\n  nothing was written: give saved commcost run files (.json)\n`);
    process.exit(2);
  }
  const m = migrateExpectedHangs(run);
  if (m.changed) validateRunFile(m.run, `${file} after migration`);
  plans.push({ file, text, m });
}

let pending = 0;
for (const { file, text, m } of plans) {
  if (!m.changed) {
    process.stdout.write(`${file}: nothing to migrate (status ${m.status.after})\n`);
    continue;
  }
  pending++;
  process.stdout.write(`${file}: ${m.migrated.length} expected hang(s); status ${m.status.before} → ${m.status.after}\n`);
  for (const h of m.migrated) process.stdout.write(`  ${h.experiment} ${h.variant}: ${h.hint}\n`);
  if (check) continue;
  const tmp = `${file}.migrating.tmp`;
  writeFileSync(tmp, JSON.stringify(m.run, null, indentOf(text)) + (text.endsWith('\n') ? '\n' : ''));
  renameSync(tmp, file);
}
if (check && pending > 0) {
  process.stdout.write(`${pending} file(s) to migrate: run without --check\n`);
  process.exit(1);
}
