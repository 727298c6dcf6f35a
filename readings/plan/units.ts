/**
 * The planner's units: durations (`2s`, `30ms`), sizes (`60GiB`, or `0.4`: a fraction of GPU
 * memory) and the words a figure is written with (ms, GiB, percent). Pure.
 */

/** Bad planner input: what, where (the flag or field) and what to do. Callers match on `name`. */
export class PlanInputError extends Error {
  /**
   * @param message what is wrong, without a trailing period
   * @param where the flag or field, e.g. "--switch-every"
   * @param hint what to do
   */
  constructor(
    message: string,
    readonly where: string,
    readonly hint: string,
  ) {
    super(message);
    this.name = 'PlanInputError';
  }
}

const DURATION_UNITS: Readonly<Record<string, number>> = { us: 1e-3, µs: 1e-3, ms: 1, s: 1000, min: 60_000, m: 60_000, h: 3_600_000 };

/**
 * Parses a duration: a positive number and a unit of us, ms, s, min or h (`2s`, `30ms`, `1.5 s`).
 * @returns milliseconds
 * @throws PlanInputError when the text is not a positive number with one of those units
 */
export function parseDuration(text: string, where: string): number {
  const m = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-zµ]+)\s*$/i.exec(text);
  const factor = m ? DURATION_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || factor === undefined) {
    throw new PlanInputError(`${where} ${JSON.stringify(text)} is not a duration`, where, 'write a number and a unit: 30ms, 2s, 1.5min (units: us, ms, s, min, h)');
  }
  const ms = Number(m[1]) * factor;
  if (!(ms > 0) || !Number.isFinite(ms)) throw new PlanInputError(`${where} ${JSON.stringify(text)} must be more than 0`, where, 'give a positive duration, e.g. 30ms');
  return ms;
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
};

/** A memory budget as given: bytes, or a fraction of the GPU's memory. */
export type Budget = { bytes: number } | { fraction: number };

/**
 * Parses a memory budget per GPU: a size with a unit (`60GiB`, `500MB`, `1.5TiB`; KiB/MiB/GiB/TiB
 * are powers of 2, KB/MB/GB/TB powers of 10) or a bare number in (0, 1], a fraction of the GPU's
 * memory (`0.4`).
 * @throws PlanInputError for anything else (a bare number above 1, no unit, an unknown unit)
 */
export function parseBudget(text: string, where: string): Budget {
  const bare = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*$/.exec(text);
  if (bare) {
    const f = Number(bare[1]);
    if (f > 0 && f <= 1) return { fraction: f };
    throw new PlanInputError(
      `${where} ${JSON.stringify(text)}: a number without a unit is a fraction of GPU memory and must be in (0, 1]`,
      where,
      'give a fraction such as 0.4, or a size with its unit such as 60GiB',
    );
  }
  const m = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-z]+)\s*$/i.exec(text);
  const factor = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || factor === undefined) {
    throw new PlanInputError(`${where} ${JSON.stringify(text)} is not a size`, where, 'write a size with its unit (60GiB, 500MB; units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB) or a fraction of GPU memory (0.4)');
  }
  const bytes = Number(m[1]) * factor;
  if (!(bytes > 0)) throw new PlanInputError(`${where} ${JSON.stringify(text)} must be more than 0`, where, 'give a positive size, e.g. 60GiB');
  return { bytes };
}

/**
 * Parses TP shapes: `tp4,tp2,tp1` (or `4,2,1`) → [4, 2, 1], largest first, each once.
 * @throws PlanInputError for an empty list, a shape that is not `tp<n>` with n ≥ 1, or a repeat
 */
export function parseShapes(text: string, where: string): number[] {
  const parts = text.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (parts.length === 0) throw new PlanInputError(`${where} is empty`, where, 'list TP shapes, e.g. tp4,tp2,tp1');
  const shapes: number[] = [];
  for (const p of parts) {
    const m = /^(?:tp)?(\d+)$/i.exec(p);
    const n = m ? Number(m[1]) : NaN;
    if (!(n >= 1) || !Number.isSafeInteger(n)) throw new PlanInputError(`${where}: ${JSON.stringify(p)} is not a TP shape`, where, 'write each shape as tp<n> with n ≥ 1, e.g. tp4,tp2,tp1');
    if (shapes.includes(n)) throw new PlanInputError(`${where}: tp${n} is listed twice`, where, 'list each shape once');
    shapes.push(n);
  }
  return shapes.sort((a, b) => b - a);
}

/** Milliseconds in words: "321 ms", "2.5 ms", "0.023 ms", "2 s" (≥ 1 s: seconds). */
export function msText(ms: number): string {
  if (ms >= 1000) return `${Number((ms / 1000).toPrecision(3))} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  if (ms >= 1) return `${Number(ms.toPrecision(3))} ms`;
  if (ms === 0) return '0 ms';
  return `${Number(ms.toPrecision(2))} ms`;
}

/** Bytes in words, powers of 2: "1.36 GiB", "484 MiB", "0 B". */
export function bytesText(bytes: number): string {
  if (bytes >= 2 ** 30) return `${Number((bytes / 2 ** 30).toPrecision(3))} GiB`;
  if (bytes >= 2 ** 20) return `${Number((bytes / 2 ** 20).toPrecision(3))} MiB`;
  if (bytes >= 2 ** 10) return `${Number((bytes / 2 ** 10).toPrecision(3))} KiB`;
  return `${Math.round(bytes)} B`;
}

/** A share (0.083 = 8.3%) in words: ≥ 10% whole, ≥ 1% one decimal, below two significant digits ("0.12%"). */
export function percentText(share: number): string {
  const p = share * 100;
  if (p >= 10) return `${Math.round(p)}%`;
  if (p >= 1) return `${Number(p.toFixed(1))}%`;
  if (p === 0) return '0%';
  return `${Number(p.toPrecision(2))}%`;
}

/** A share of one step in words: "5.9×" from one step up, else a percent ("8%"). */
export function stepShareText(share: number): string {
  return share >= 1 ? `${Number(share.toPrecision(2))}×` : percentText(share);
}
