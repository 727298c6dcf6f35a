/**
 * Number and text formatting shared by the webview's header, charts and tables. Pure: no DOM.
 */
import type { ErrorWhere } from '../protocol/events';

/**
 * Formats a duration in milliseconds with 2–3 significant decimals: ≥ 100 ms → 1 decimal
 * ("485.3"), ≥ 1 ms → 2 decimals ("43.12", "3.27"), below 1 ms → 3 significant digits ("0.162",
 * "0.0042"). Non-finite values → "–".
 */
export function formatMs(ms: number | undefined | null): string {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '–';
  const a = Math.abs(ms);
  if (a >= 100) return ms.toFixed(1);
  if (a >= 1) return ms.toFixed(2);
  if (a === 0) return '0';
  return Number(ms.toPrecision(3)).toString();
}

/**
 * A duration with its unit: below 1 s as {@link formatMs} in ms ("485.3 ms"), from 1 s in seconds
 * with 3 significant digits at most one decimal beyond ("1.86 s", "14.2 s", "141.4 s"), so a wall
 * of minutes never reads "141384.0 ms". Non-finite → "–".
 */
export function formatDuration(ms: number | undefined | null): string {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '–';
  if (Math.abs(ms) < 999.95) return `${formatMs(ms)} ms`;
  const s = ms / 1000;
  return `${Math.abs(s) >= 10 ? s.toFixed(1) : s.toFixed(2)} s`;
}

/** A whole count with its thousands grouped: 12345 → "12,345" (no Intl: its first call costs tens of ms). */
export function formatCount(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Bytes → MiB with 1 decimal ("76.0"); non-finite → "–". */
export function formatMiB(bytes: number | undefined | null): string {
  if (bytes === undefined || bytes === null || !Number.isFinite(bytes)) return '–';
  return (bytes / (1024 * 1024)).toFixed(1);
}

/** "where" of an error as one line: "host gpu1, rank 2, experiment split, variant halves, step call, iteration 3". */
export function formatWhere(where: ErrorWhere | string | undefined): string {
  if (where === undefined) return '';
  if (typeof where === 'string') return where;
  const parts: string[] = [];
  if (where.host !== undefined) parts.push(`host ${where.host}`);
  if (where.rank !== undefined) parts.push(`rank ${where.rank}`);
  if (where.experiment !== undefined) parts.push(`experiment ${where.experiment}`);
  if (where.variant !== undefined) parts.push(`variant ${where.variant}`);
  if (where.step !== undefined) parts.push(`step ${where.step}`);
  if (where.iteration !== undefined) parts.push(`iteration ${where.iteration}`);
  return parts.join(', ');
}

/** GPU list as "2 × NVIDIA H200" or "NVIDIA A40, NVIDIA A100" when models differ; "" when none. */
export function formatGpus(gpus: readonly { name: string }[] | undefined): string {
  if (!gpus || gpus.length === 0) return '';
  const names = new Set(gpus.map((g) => g.name));
  if (names.size === 1) return `${gpus.length} × ${gpus[0]!.name}`;
  return gpus.map((g) => g.name).join(', ');
}

/** An ISO 8601 date as "2025-01-31 14:02:07" (local time of the viewer); the input on parse failure. */
export function formatDate(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
