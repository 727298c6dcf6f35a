/**
 * The chart model of one experiment, independent of chart.js (pure, testable).
 *
 * One bar group per variant. Non-derived steps are bar segments, stacked by what they are part
 * of: "build" (call + first collective, whose stack total is "to first collective"), "teardown"
 * (finalize/destroy/abort/revoke), "steady" (a collective on a warm communicator); a step whose
 * kind is unknown (live, before the summary) gets its own stack. Segment length = median (ms).
 * Derived steps (`sumOf`) are never drawn as segments: they give the p90 whisker of the stack
 * whose segments they sum. A one-segment stack uses its own p90. The p90 of a sum is not the sum
 * of p90s, so a stack with several segments and no derived step has no whisker.
 */
import type { StepPlan } from '../protocol/events';
import type { VariantView } from './stats';
export type StackId = string;
/** One dataset: one step id across variants; `data[i]` is the median (ms) for variant i or null. */
export interface SegmentSeries {
    key: string;
    label: string;
    kind: StepPlan['kind'] | 'other';
    stack: StackId;
    data: (number | null)[];
}
/** A p90 whisker: from the stack total (sum of medians) to the p90 of the stack, ms. */
export interface Whisker {
    variantIndex: number;
    stack: StackId;
    /** Sum of the stack's segment medians, ms. */
    from: number;
    /** p90, ms. */
    to: number;
    /** Which step gave the p90 ("toFirst", "call", ...). */
    source: string;
}
export interface ChartModel {
    labels: string[];
    series: SegmentSeries[];
    whiskers: Whisker[];
}
/** Builds the chart model (see the file comment) from the variants of one experiment. */
export declare function chartModel(variants: readonly VariantView[]): ChartModel;
