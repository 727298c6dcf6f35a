/**
 * The splits, shrinks and grows a run timed outside the experiments that make them the study's
 * way, whose child has one rank: a 1-rank run's every split (connect-mode's `ncclCommSplit (color
 * = rank)`, c10d's `split_group` of its one rank), and at any size a split by `color = rank`. Such
 * a child has no peer to connect to: it is not the study's split of a communicator into parts
 * (4 ranks in half), so the first page and Figure 2 name it as what it is, never as "no split"
 * (issue #28). Pure: read from the run's step labels and medians only.
 */
import type { RunFile } from '../../protocol/runFile';
import { msAll } from './format';

/** The three calls that make a child of a parent: split, shrink, grow. */
export type ChildCall = 'split' | 'shrink' | 'grow';

/** The timed figures of one call in one experiment, each making a one-rank child. */
export interface OneRankChildFigures {
  call: ChildCall;
  /** The experiment that timed it ("connect-mode", "c10d"). */
  experiment: string;
  /** The call step's label as the run names it ("ncclCommSplit (color = rank)", "split_group"). */
  label: string;
  /** The variants, in the run's order ("one-rank/runtimeConnect=1", …). */
  variants: string[];
  /** Their medians, ms: the call step's `total` (the call to its first collective) where the variant has one, else the call's. */
  medians: number[];
  /** Whether {@link medians} run to the first collective (`total`), or are the call alone. */
  toFirst: boolean;
}

/** The experiments that time split, shrink and grow the study's way (Figure 2's categories). */
const OWN: Record<ChildCall, string> = { split: 'split', shrink: 'shrink', grow: 'grow' };

/** Which call a call step's label names, by its NCCL or c10d name; undefined for any other. */
function callOf(label: string): ChildCall | undefined {
  if (/^ncclCommSplit\b|^split_group\b/.test(label)) return 'split';
  if (/^ncclCommShrink\b|^shrink_group\b/.test(label)) return 'shrink';
  if (/^ncclCommGrow\b/.test(label)) return 'grow';
  return undefined;
}

/**
 * The one-rank children `run` timed outside the split, shrink and grow experiments, grouped per
 * call, experiment and label (see the file comment): at 1 rank every such call; at more ranks
 * only a call whose label says `color = rank`. Empty when there is none.
 */
export function oneRankChildren(run: RunFile): OneRankChildFigures[] {
  const out: OneRankChildFigures[] = [];
  for (const e of Array.isArray(run.experiments) ? run.experiments : []) {
    for (const v of Array.isArray(e.variants) ? e.variants : []) {
      const step = v.steps.find((s) => s.kind === 'call' && callOf(s.label) !== undefined);
      if (!step) continue;
      const call = callOf(step.label)!;
      if (e.experiment === OWN[call] || !(run.ranks === 1 || /color = rank/.test(step.label))) continue;
      // Its `total` (call to first collective): `total` beside `call`, `total/n1` beside `call/n1` (many-comms).
      const total = v.steps.find((s) => s.step === step.step.replace(/^call/, 'total'))?.stats.median;
      const value = total ?? step.stats.median;
      if (!Number.isFinite(value)) continue;
      let g = out.find((x) => x.call === call && x.experiment === e.experiment && x.label === step.label && x.toFirst === (total !== undefined));
      if (!g) out.push((g = { call, experiment: e.experiment, label: step.label, variants: [], medians: [], toFirst: total !== undefined }));
      g.variants.push(v.variant);
      g.medians.push(value);
    }
  }
  return out;
}

/**
 * One group in words: "ncclCommSplit (color = rank) in the connect-mode experiment (4 variants,
 * 19.7 ms to 47.6 ms to its first collective)", "split_group in the c10d experiment (41.1 ms to
 * its first collective)".
 */
export function oneRankChildWords(g: OneRankChildFigures): string {
  const lo = Math.min(...g.medians);
  const hi = Math.max(...g.medians);
  const [a, b] = msAll([lo, hi]);
  const range = lo === hi ? a! : `${a!} to ${b!}`;
  const many = g.variants.length > 1 ? `${g.variants.length} variants, ` : '';
  return `${g.label} in the ${g.experiment} experiment (${many}${range}${g.toFirst ? ' to its first collective' : ', the call alone'})`;
}
