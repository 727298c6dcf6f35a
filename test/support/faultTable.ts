/**
 * The fault table printed by test/integration/faults.test.ts at its end: one row per injected
 * fault (fault · expected · observed · time to recover · processes left).
 */

/** One fault's row; `recoverMs` a number of ms, or text when there is no figure (skipped). */
export interface FaultRow {
  fault: string;
  expected: string;
  observed: string;
  recoverMs: number | string;
  left: number | string;
}

/** Prints `rows` as an aligned text table under the heading "commcost fault injection". */
export function printFaultTable(rows: readonly FaultRow[]): void {
  const head: FaultRow = { fault: 'fault', expected: 'expected', observed: 'observed', recoverMs: 'time to recover', left: 'processes left' };
  const cells = [head, ...rows].map((r) => [r.fault, r.expected, r.observed, typeof r.recoverMs === 'number' ? `${r.recoverMs} ms` : r.recoverMs, String(r.left)]);
  const widths = [0, 1, 2, 3, 4].map((i) => Math.max(...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i]!)).join(' | ');
  console.log(['', 'commcost fault injection', line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('-|-'), ...cells.slice(1).map(line), ''].join('\n'));
}
