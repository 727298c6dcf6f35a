/**
 * Per-step statistics for the webview: taken from the experiment summary when it arrived, else
 * computed from the live samples received so far. Pure: no DOM.
 */
import type { StepPlan, StepStats } from '../protocol/events';
import type { RunExperiment } from '../protocol/runFile';
/** One step of one variant as the charts and tables show it. Times in ms. */
export interface StepView {
    step: string;
    label: string;
    /** Undefined while live when the step id does not tell the kind. */
    kind?: StepPlan['kind'];
    sumOf?: string[];
    stats: StepStats;
}
/** One variant: its steps and memory points (bytes). `live` when computed from samples. */
export interface VariantView {
    variant: string;
    steps: StepView[];
    memoryBytes: Record<string, number>;
    live: boolean;
}
/**
 * Distribution of `samples` (ms): median (mean of the two middle values for even n), p90
 * (nearest rank: the ⌈0.9·n⌉-th smallest), min, max, mean, n. n = 0 → all NaN except n.
 */
export declare function computeStats(samples: readonly number[]): StepStats;
/**
 * The variants of an experiment to display: the summary's when it has arrived, else live
 * statistics over `exp.samples` (recorded iterations only). Tolerates missing fields.
 */
export declare function variantViews(exp: RunExperiment): VariantView[];
