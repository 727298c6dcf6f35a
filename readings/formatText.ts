/**
 * How the annotations write figures and untrusted text: ms and bytes for people, a share as
 * measured, and run-file text made safe for plain-text and Markdown surfaces. Pure; re-exported
 * by annotationText.ts, so importers are unchanged.
 */
import { pct } from './verdict/format';

/**
 * `ms` for people: 0.017 ms, 4.52 ms, 47.7 ms, 176 ms, 1.23 s. Each threshold is where the shorter
 * form would round up to the next (999.7 ms is "1.00 s", never "1000 ms" beside a p90 of "1.00 s";
 * 99.96 ms is "100 ms", never "100.0 ms"); a figure above 0 but under 0.01 ms keeps two
 * significant digits, as the CLI's verdict does ("0.0084 ms", "0.00038 ms", never "0.008 ms" or
 * "0.000 ms"), and 0 reads "0 ms".
 */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  const a = Math.abs(ms);
  if (a === 0) return '0 ms';
  if (a >= 999.5) return `${(ms / 1000).toFixed(2)} s`;
  if (a >= 99.95) return `${Math.round(ms)} ms`;
  if (a >= 9.995) return `${ms.toFixed(1)} ms`;
  if (a >= 0.9995) return `${ms.toFixed(2)} ms`;
  // Near the timer's resolution, two significant digits as the CLI's verdict writes them
  // (readings/verdict/format.ts `ms`): 0.0084 ms, 0.00076 ms, never "0.008 ms" or "0.001 ms".
  if (a < 0.00995) return `${ms.toPrecision(2)} ms`;
  return `${ms.toFixed(3)} ms`;
}

/**
 * Bytes as MiB / GiB: 484 MiB, 76.5 MiB, 1.5 GiB; no bytes read "0 MiB", never "0.0 MiB", and a
 * figure under 0.05 MiB keeps one significant digit ("0.04 MiB"), as the CLI's memory lines do.
 */
export function formatBytes(bytes: number): string {
  const mib = bytes / 1048576;
  if (Math.abs(mib) >= 1024) return `${(mib / 1024).toFixed(1)} GiB`;
  if (Math.abs(mib) >= 100) return `${Math.round(mib)} MiB`;
  if (mib === 0) return '0 MiB';
  if (Math.abs(mib) < 0.05) return `${Number(mib.toPrecision(1))} MiB`;
  return `${mib.toFixed(1)} MiB`;
}

/**
 * A run's NCCL in words: "NCCL 2.28.9", or "NCCL version not recorded" for a run without an
 * environment stamp (as the verdict and the CLI header say it), never "NCCL ?".
 * @param safe makes the run's untrusted version text safe for the surface (plain, escapeMarkdown).
 */
export function ncclText(version: string | undefined, safe: (t: string) => string = (t) => t): string {
  return version ? `NCCL ${safe(version)}` : 'NCCL version not recorded';
}

/** Untrusted text for plain-text surfaces: one line, no control characters, at most `max` characters. */
export function plain(text: string, max = 80): string {
  // Control characters, line separators and bidirectional overrides become a space.
  // eslint-disable-next-line no-control-regex
  const one = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** Untrusted text for Markdown: {@link plain}, then every Markdown and HTML special character escaped. */
export function escapeMarkdown(text: string, max = 120): string {
  return plain(text, max)
    .replace(/[\\`*_{}[\]()#+\-.!|~>:]/g, '\\$&')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;');
}

/**
 * A share of `whole` in percent, by the one rule every reading uses (the verdict's
 * `pct`, docs/METHOD.md "Percentages"): whole percent; under 1% one significant digit (0.3%), near
 * 100% without being it one decimal (99.7%), so a share is never rounded to 0% or 100% unless it
 * is. A whole of 0 reads "—".
 */
export function percent(part: number, whole: number): string {
  const x = part / whole;
  return Number.isFinite(x) ? pct(x) : '—';
}

/** A count and its noun, singular for 1: "1 rank", "2 ranks", "1 GPU" (`nouns` for an irregular plural). */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : nouns}`;
}

/**
 * A run's size for people: its rank count always, and the GPUs of its (first) host from the stamp
 * beside it, told apart from the ranks when they differ: "2 ranks on 2× NVIDIA H200", "1 rank
 * (its host has 2× NVIDIA H200)", "16 ranks (its host has 8× NVIDIA H200)", "1 rank" without a stamp.
 * @param ranks the run's `ranks` (world size)
 * @param gpus the stamp's GPUs (may be absent or empty)
 * @param safe makes the GPU name safe for the surface (plain text or Markdown escaping)
 */
export function runSizeText(ranks: number, gpus: readonly { name?: string }[] | undefined, safe: (text: string) => string): string {
  const r = Number.isFinite(ranks) ? plural(ranks, 'rank') : '? ranks';
  if (!gpus || gpus.length === 0) return r;
  const g = `${gpus.length}× ${safe(gpus[0]?.name ?? 'GPU')}`;
  return gpus.length === ranks ? `${r} on ${g}` : `${r} (its host has ${g})`;
}
