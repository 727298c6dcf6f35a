/**
 * What to do about an error of a run, as the run's pages show it (results panel, HTML report,
 * terminal summary): the error's own hint, chosen against the run's regime. A simulated run used
 * commcost's simulated NCCL and no GPU, so advice about GPUs (e.g. "raise the deadline if the
 * GPUs are busy", written by an agent before it told a simulated start-up apart) does not follow
 * from what failed there: the advice is to read the log, where the rank processes' output is.
 * Pure: no I/O.
 */

/** What a simulated run's failure advises in place of a hint about GPUs. */
export const SIMULATED_FAILURE_ADVICE = "check the log: it holds the rank processes' output (this simulated run used no GPU)";

/** A hint that advises about GPUs (names a GPU, GPUs or the CUDA device). */
const ABOUT_GPUS = /\bGPUs?\b|\bCUDA device/i;

/**
 * The advice shown with error `e` of a run: its hint, except on a simulated run, where a hint
 * about GPUs is replaced by {@link SIMULATED_FAILURE_ADVICE}. An expected hang's hint is its
 * "why" (a field case's result), kept as written.
 * @returns undefined when the error has no hint.
 */
export function errorAdvice(e: { hint?: string; expected?: boolean }, simulated: boolean): string | undefined {
  if (typeof e.hint !== 'string' || e.hint === '') return undefined;
  if (!simulated || e.expected === true || !ABOUT_GPUS.test(e.hint)) return e.hint;
  return SIMULATED_FAILURE_ADVICE;
}
