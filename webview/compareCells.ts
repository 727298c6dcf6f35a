/**
 * How a ratio cell of the comparison table reads (pure, no DOM): its text, its colour class and
 * its tooltip, from the cell's judgement (protocol/compare.ts `judgeDifference`): coloured only
 * when the difference is beyond the spread of both runs' samples and clears the practical floor
 * (a µs-level step that is statistically apart is left plain; its tooltip says why).
 */
import { formatRatio, PRACTICAL_FLOOR_MS, PRACTICAL_FLOOR_RATIO, type StepDifference } from '../protocol/compare';

export interface RatioCellView {
  text: string;
  /** `num ratio-up` (higher than the first run, beyond the spread), `num ratio-down`, or `num`. */
  className: string;
  /** What the judgement rests on, for the cell's title; undefined for the first run's own cells. */
  title?: string;
}

const pText = (p: number | undefined): string => (p === undefined ? '' : `, Mann–Whitney p = ${p < 0.0001 ? p.toExponential(1) : p.toFixed(4)}`);

/**
 * A ratio and its judgement as a table cell. `difference` undefined (memory rows, or no ratio):
 * the ratio alone, never coloured.
 */
export function ratioCellView(ratio: number | undefined, difference: StepDifference | undefined): RatioCellView {
  const text = formatRatio(ratio);
  if (!difference || ratio === undefined) return { text, className: 'num' };
  const n = `n = ${difference.n[0]} and ${difference.n[1]}`;
  const from = difference.basis === 'range' ? 'min–max ranges' : 'p10–p90 of the samples';
  switch (difference.verdict) {
    case 'higher':
    case 'lower':
      return { text, className: difference.verdict === 'higher' ? 'num ratio-up' : 'num ratio-down', title: `beyond the spread of both runs (${from} apart${pText(difference.p)}; ${n})` };
    case 'within-spread':
      return { text, className: 'num', title: `within the spread of the runs' samples (${n}${pText(difference.p)})` };
    case 'below-floor':
      return {
        text,
        className: 'num',
        title: `beyond the spread of both runs (${from} apart${pText(difference.p)}; ${n}) but below the practical floor: the medians differ by less than ${PRACTICAL_FLOOR_MS} ms or by a ratio inside [${PRACTICAL_FLOOR_RATIO[0]}, ${PRACTICAL_FLOOR_RATIO[1]}]`,
      };
    case 'too-few-samples':
      return { text: `${text} (too few samples)`, className: 'num', title: `too few samples to tell (${n})` };
    case 'no-spread':
      return { text: `${text} (no spread)`, className: 'num', title: 'the run files hold no samples or range for this step' };
  }
}
