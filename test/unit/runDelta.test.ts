/**
 * Run deltas (protocol/runDelta.ts): the host's deltas, applied in order by the webview to the
 * snapshot it got first, give the host's run exactly; each delta carries only the new values.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyEvent, newRun } from '../../client/runModel';
import type { AgentEvent, RunOptions } from '../../protocol/events';
import { join } from 'node:path';
import { loadRun } from '../../client/resultsStore';
import { compareRuns } from '../../protocol/compare';
import { applyRunDelta, runDelta, runForView, sentCountsOf, type RunDelta } from '../../protocol/runDelta';
import { variantViews } from '../../webview/stats';
import type { RunExperiment, RunFile } from '../../protocol/runFile';

const OPTIONS = { iterations: 1000, warmup: 1, experiments: ['init', 'split'] } as unknown as RunOptions;
const copy = (r: RunFile): RunFile => JSON.parse(JSON.stringify(r)) as RunFile;

function sample(experiment: 'init' | 'split', variant: string, iteration: number, warmup = false): AgentEvent {
  return { type: 'run/sample', experiment, variant, iteration, warmup, steps: { call: iteration, first: iteration / 2 }, perRank: {}, stepSkewUs: { call: iteration % 5 } } as unknown as AgentEvent;
}

describe('run deltas', () => {
  test('snapshot then deltas rebuild the run; each delta holds only what is new', () => {
    let host = newRun('h', OPTIONS);
    host = applyEvent(host, sample('init', 'default', 0, true));
    host = applyEvent(host, sample('init', 'default', 1));
    // The webview's first state: a complete snapshot (a copy: postMessage clones).
    let view = copy(host);
    const sent = sentCountsOf(host);
    let events = 0;
    for (let i = 2; i < 300; i++) {
      host = applyEvent(host, sample(i % 3 === 0 ? 'split' : 'init', i % 2 === 0 ? 'default' : 'share', i));
      events++;
      if (i % 37 === 0 || i === 299) {
        const delta = runDelta(host, sent)!;
        const values = delta.append.reduce((n, a) => n + a.values.length, 0);
        // steps call + first, and the skew of call: three values per sample event since the last post.
        assert.equal(values, events * 3);
        assert.ok(delta.run.experiments.every((e) => Object.keys(e.samples).length === 0 && e.releaseSkewUs === undefined));
        view = applyRunDelta(copy({ ...view }), copy(delta as unknown as RunFile) as unknown as typeof delta);
        events = 0;
      }
    }
    assert.deepEqual(view, copy(host));
    const skews = view.experiments.find((e) => e.experiment === 'init')!.releaseSkewUs!.share!.call!;
    assert.equal(skews.length, [...Array(300).keys()].filter((i) => i >= 2 && i % 3 !== 0 && i % 2 === 1).length);
  });

  test('a delta applied over values the snapshot already had is idempotent (from)', () => {
    let host = newRun('h', OPTIONS);
    for (let i = 0; i < 5; i++) host = applyEvent(host, sample('init', 'default', i));
    const sent = sentCountsOf(host);
    for (let i = 5; i < 8; i++) host = applyEvent(host, sample('init', 'default', i));
    // The snapshot was serialized late and already holds 6 of the values.
    const late = copy(host);
    late.experiments[0]!.samples.default!.call!.length = 6;
    late.experiments[0]!.samples.default!.first!.length = 6;
    late.experiments[0]!.releaseSkewUs!.default!.call!.length = 6;
    const merged = applyRunDelta(late, runDelta(host, sent)!);
    assert.deepEqual(merged, copy(host));
  });

  test('an array shorter than what was sent (not this run\'s growth): no delta', () => {
    let host = newRun('h', OPTIONS);
    for (let i = 0; i < 5; i++) host = applyEvent(host, sample('init', 'default', i));
    const sent = sentCountsOf(host);
    const other = copy(host);
    other.experiments[0]!.samples.default!.call!.length = 2;
    assert.equal(runDelta(other, sent), undefined);
  });

  test('the panel is posted a finished experiment without its raw arrays, and reads the same figures from it', async () => {
    const run = await loadRun(join(__dirname, '..', '..', 'docs', 'results', 'h200x2-2026-12-01', 'h200x2-nccl2.28.9-wheel.json'));
    // A live experiment beside the finished ones keeps its arrays: the panel's figures come from them.
    let live = newRun('h', OPTIONS);
    for (let i = 0; i < 5; i++) live = applyEvent(live, sample('split', 'default', i));
    const liveExp = live.experiments.find((e) => e.experiment === 'split')!;
    const full: RunFile = { ...run, experiments: [...run.experiments, { ...liveExp, experiment: 'many-comms' as RunExperiment['experiment'] }] };
    const lean = runForView(full);
    assert.ok(full.experiments.some((e) => e.variants.length > 0 && Object.keys(e.samples).length > 0), 'the committed run has raw arrays');
    for (const [i, e] of lean.experiments.entries()) {
      if (e.variants.length > 0) assert.deepEqual(e.samples, {});
      else assert.equal(e.samples, full.experiments[i]!.samples);
      assert.deepEqual(variantViews(e), variantViews(full.experiments[i]!));
    }
    assert.deepEqual(compareRuns([lean, lean]), compareRuns([full, full]));
    // Nothing to drop: the run itself.
    assert.equal(runForView(lean), lean);
    assert.equal(runForView(live), live);
  });

  test('deltas of the panel\'s run (runForView) rebuild what the panel reads while an experiment finishes', () => {
    let host = newRun('h', OPTIONS);
    for (let i = 0; i < 4; i++) host = applyEvent(host, sample('init', 'default', i));
    let view = copy(runForView(host));
    const sent = sentCountsOf(runForView(host));
    for (let i = 4; i < 8; i++) host = applyEvent(host, sample('init', 'default', i));
    view = applyRunDelta(view, copy(runDelta(runForView(host), sent)! as unknown as RunFile) as unknown as RunDelta);
    assert.deepEqual(variantViews(view.experiments[0]!), variantViews(host.experiments[0]!));
    // The summary arrives: the raw arrays are no longer posted, and no delta repeats them.
    const summarized: RunFile = copy(host);
    const values = summarized.experiments[0]!.samples.default!.call!;
    summarized.experiments[0]!.variants = [{ variant: 'default', steps: [{ step: 'call', label: 'call', kind: 'call', stats: { median: 3.5, p90: 6.3, min: 0, max: 7, mean: 3.5, n: values.length }, samples: values }] } as unknown as RunExperiment['variants'][number]];
    const d = runDelta(runForView(summarized), sent)!;
    assert.deepEqual(d.append, []);
    view = applyRunDelta(view, copy(d as unknown as RunFile) as unknown as RunDelta);
    assert.deepEqual(variantViews(view.experiments[0]!), variantViews(summarized.experiments[0]!));
  });
});

