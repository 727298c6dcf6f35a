/**
 * The field-case lines of the verdict (client/verdict/fieldCases.ts, shrinkAbort.ts): each label
 * C1–C6 is named in words on its first use and the line says the study published no figure for it
 * (review defect 24).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { deriveVerdict } from '../../client/verdict';
import { FIELD_CASES, NO_STUDY_FIGURE } from '../../client/verdict/fieldCases';
import { experiment, load, synthetic, variant } from './verdictRuns';

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line`);
  return text;
};
describe('field-case labels are named in words on first use, and the study published no figure for them', () => {
  const runs = [
    'h200x2-nccl2.28.9-wheel.cases.json',
    'h200x2-nccl2.28.9-wheel.c4c6.cases.json',
    'h200x2-nccl2.28.3-system.cases.json',
    'h200x2-torch2.11-nccl2.28.9-c10d.json',
    'h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json',
  ];
  test('every label C1–C6 is followed by its name on its first use in the verdict', () => {
    const seen = new Set<string>();
    for (const name of runs) {
      const text = deriveVerdict(load(name))
        .map((l) => l.text)
        .join('\n');
      for (const [id, words] of Object.entries(FIELD_CASES)) {
        const at = text.search(new RegExp(`\\b${id}\\b`));
        if (at < 0) continue;
        seen.add(id);
        assert.equal(text.slice(at, at + id.length + words.length + 4), `${id}, "${words}"`, `${name}: ${text.slice(at, at + 120)}`);
      }
    }
    assert.deepEqual([...seen].sort(), ['C1', 'C2', 'C3', 'C4', 'C5', 'C6']);
  });
  test('each field-case line ends with "The study published no figure for this."', () => {
    const ids = ['c10d-new-group', 'split-share', 'one-rank-memory', 'split-subset', 'init-abort', 'shrink-abort'];
    let n = 0;
    for (const name of runs)
      for (const l of deriveVerdict(load(name)).filter((x) => ids.includes(x.id))) {
        n++;
        assert.ok(l.text.endsWith(` ${NO_STUDY_FIGURE}`), l.text);
      }
    assert.ok(n >= 10, `only ${n} field-case lines`);
  });
  test('C4 on the cases run, in full words', () => {
    assert.match(
      line(load('h200x2-nccl2.28.9-wheel.cases.json'), 'split-subset'),
      /^Field case C4, "split hangs when only some ranks call it": ncclCommSplit called by only some ranks hung and was stopped by the hang guard; .* The study published no figure for this\.$/,
    );
  });
  test('the c10d teardown line without destroy_process_group says the study has no figure for it', () => {
    const run = synthetic(2, [experiment('c10d', [variant('abort', { abort: 500 })])]);
    assert.equal(line(run, 'c10d-lifecycle'), `In torch 2.11.0: aborting the default group 500 ms. ${NO_STUDY_FIGURE}`);
  });
});
