/**
 * The field-case lines of the verdict (readings/verdict/fieldCases.ts, shrinkAbort.ts): each label
 * C1–C6 is named in words on its first use and the line says the study published no figure for it
 * (review defect 24); a one-rank C1 says what one rank shows and what it cannot (review defect 5:
 * "Eager init moves the cost into new_group here." read as a finding about connecting).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { deriveVerdict } from '../../readings/verdict';
import { FIELD_CASES, NO_STUDY_FIGURE } from '../../readings/verdict/fieldCases';
import { experiment, load, synthetic, variant } from './verdictRuns';

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line`);
  return text;
};
const c10d = (ranks: number, lazy: { call: number; first: number }, eager: { call: number; first: number }): RunFile =>
  synthetic(ranks, [experiment('c10d', [variant('new_group/lazy-default', lazy), variant('new_group/eager-default', eager)])]);

describe('C1 at 1 rank: what one rank shows, and what it does not', () => {
  test('the 1×H200 c10d run: eager init moves the cost into new_group, said as the creation, not a connect', () => {
    assert.equal(
      line(load('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json'), 'c10d-new-group'),
      'Field case C1, "the first collective on a new group is slow" (torch 2.11.0): new_group on a lazy default group returns in 0.46 ms and its first all_reduce pays 50.0 ms; ' +
        'on an eager default group (device_id) new_group takes 46.3 ms and the first all_reduce 0.36 ms. Eager init moves the cost into new_group here. ' +
        'At 1 rank there is no peer to connect to, so this shows where the creation lands, not whether eager init moves a connect (a run of 2 or more ranks shows that). ' +
        'The study published no figure for this.',
    );
  });
  test('1 rank, both first all_reduces negligible: not read as "no cost to move" for a group with peers', () => {
    const text = line(c10d(1, { call: 0.4, first: 0.012 }, { call: 20, first: 0.011 }), 'c10d-new-group');
    assert.match(
      text,
      /Both first all_reduces are negligible here: there is no first-collective cost for eager init or a warm-up collective to move\. At 1 rank there is no peer to connect to, so this does not show whether a group of 2 or more ranks has a first-collective cost to move\. The study published no figure for this\.$/,
    );
  });
  test('1 rank, the first all_reduce still pays: never "not the connect"', () => {
    const text = line(c10d(1, { call: 0.4, first: 60 }, { call: 30, first: 40 }), 'c10d-new-group');
    assert.match(text, /Eager init moves the creation into new_group, not all of the first all_reduce's cost: the first all_reduce still pays 40\.0 ms of 70\.0 ms/, text);
    assert.match(text, /At 1 rank there is no peer to connect to: what the first all_reduce pays here is not a connect, and a run of 2 or more ranks shows what eager init does to one\./, text);
    assert.doesNotMatch(text, /not the connect/, text);
  });
  test('2 ranks: no one-rank note; what the first all_reduce still pays is its figure, not called the connect', () => {
    const text = line(load('h200x2-torch2.11-nccl2.28.9-c10d.json'), 'c10d-new-group');
    assert.doesNotMatch(text, /At 1 rank/, text);
    assert.match(text, /Eager init moves the creation into new_group, not all of the first all_reduce's cost: the first all_reduce still pays/, text);
    assert.doesNotMatch(text, /the connect/, text);
  });
});

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
