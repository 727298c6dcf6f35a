/**
 * The many-comms curve on the results page and in the HTML report: the tables of
 * readings/manyComms.ts (memory per GPU after N communicators per variant, NCCL's count where the
 * run has it, the N-th creation's time) as HTML tables, text only. The memory chart above them
 * draws the same points per variant.
 */
import type { RunExperiment } from '../protocol/runFile';
import { curveTables, manyCommsCurve } from '../readings/manyComms';
import { h } from './dom';

/** The curve tables of the many-comms experiment `exp` of a run of `ranks` ranks; false when it has no figures yet. */
export function manyCommsTables(exp: RunExperiment, ranks: number): HTMLElement | false {
  const curve = manyCommsCurve({ experiments: [exp], ranks });
  if (!curve) return false;
  return h('div', { class: 'many-comms' },
    ...curveTables(curve).map((t) => {
      const [head = [], ...rows] = t.rows;
      return h('div', {},
        h('h3', {}, t.title),
        h('table', { class: 'steps many-comms-curve' },
          h('thead', {}, h('tr', {}, ...head.map((x, i) => h('th', { class: i > 0 ? 'num' : undefined }, x)))),
          h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((x, i) => h('td', { class: i > 0 ? 'num' : undefined }, x))))),
        ),
        ...(t.notes ?? []).map((n) => h('p', { class: 'note' }, n)),
      );
    }),
  );
}
