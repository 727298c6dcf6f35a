/**
 * Leftovers of the readings review (2026-12-01): each test names the item it covers and failed on
 * the code before its fix. Field case C5's headings named in words; the drain's and the study's
 * sources; one unit per comparison; a zero figure never divided by; the few-iterations note on
 * every judgement; "NCCL version not recorded", never "NCCL ?"; "0 MiB", never "0.0 MiB"; every
 * node of a run over several named in the results page's and the report's header.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { renderReport } from '../../client/htmlReport';
import { formatSummary } from '../../cli/summary';
import type { RunFile } from '../../protocol/runFile';
import { experiment, synthetic } from './verdictRuns';


function stubBundle(): string {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-leftovers-'));
  const path = join(dir, 'webview.js');
  writeFileSync(path, 'window.__commcost = "loaded";');
  return path;
}

const noscript = (html: string): string => /<noscript>([\s\S]*)<\/noscript>/.exec(html)?.[1] ?? '';

/** A 2-rank run with the shrink-abort experiment planned and nothing summarised yet. */
function c5Run(over: Partial<RunFile> = {}): RunFile {
  return synthetic(2, [experiment('shrink-abort', [])], over);
}

describe('field case C5 headings (leftover 1)', () => {
  test('the CLI names C5 in words in its table header, which comes before the verdict', () => {
    const text = formatSummary(c5Run({ stamp: undefined }));
    const header = text.split('\n').find((l) => l.includes('C5'));
    assert.equal(
      header,
      'Field case C5, "shrink with abort, then destroy, hangs" (shrink-abort) on NCCL version not recorded: after ncclCommShrink drops the last rank, each way to release the parent:',
    );
    assert.match(formatSummary(c5Run()), /^Field case C5, "shrink with abort, then destroy, hangs" \(shrink-abort\) on NCCL 2\.28\.9: /m);
  });

  test('the HTML report names C5 in words and never writes "NCCL ?"', () => {
    const bare = noscript(renderReport(c5Run({ stamp: undefined }), { webviewJsPath: stubBundle() }));
    assert.match(bare, /<h2>Field case C5, &#34;shrink with abort, then destroy, hangs&#34; on NCCL version not recorded: releasing the parent after ncclCommShrink<\/h2>/);
    assert.doesNotMatch(bare, /NCCL \?/);
    assert.match(noscript(renderReport(c5Run(), { webviewJsPath: stubBundle() })), /<h2>Field case C5, &#34;shrink with abort, then destroy, hangs&#34; on NCCL 2\.28\.9: /);
  });
});
