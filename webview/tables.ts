/**
 * The per-experiment table: every step of every variant with median, p90, min, max (ms) and n,
 * then the memory points (MiB).
 */
import { memoryPointLabel } from '../protocol/runFile';
import { h } from './dom';
import { formatMiB, formatMs } from './format';
import type { VariantView } from './stats';

const KIND_LABEL: Record<string, string> = {
  call: 'call',
  first: 'first collective',
  toFirst: 'to first collective',
  steady: 'steady',
  teardown: 'teardown',
};

/** Builds the table element for `variants` (times in ms, memory bytes shown as MiB). */
export function stepTable(variants: readonly VariantView[]): HTMLTableElement {
  const head = h(
    'thead',
    {},
    h('tr', {}, h('th', {}, 'variant'), h('th', {}, 'step'), h('th', {}, 'kind'),
      h('th', { class: 'num' }, 'median ms'), h('th', { class: 'num' }, 'p90 ms'),
      h('th', { class: 'num' }, 'min ms'), h('th', { class: 'num' }, 'max ms'), h('th', { class: 'num' }, 'n')),
  );
  const body = h('tbody');
  for (const v of variants) {
    v.steps.forEach((s, i) => {
      body.appendChild(
        h('tr', { class: s.kind === 'toFirst' || (s.sumOf?.length ?? 0) > 0 ? 'derived' : undefined },
          h('td', {}, i === 0 ? v.variant + (v.live ? ' (live)' : '') : ''),
          h('td', {}, s.label),
          h('td', {}, s.kind ? (KIND_LABEL[s.kind] ?? s.kind) : ''),
          h('td', { class: 'num' }, formatMs(s.stats.median)),
          h('td', { class: 'num' }, formatMs(s.stats.p90)),
          h('td', { class: 'num' }, formatMs(s.stats.min)),
          h('td', { class: 'num' }, formatMs(s.stats.max)),
          h('td', { class: 'num' }, String(s.stats.n)),
        ),
      );
    });
    for (const [point, bytes] of Object.entries(v.memoryBytes)) {
      body.appendChild(
        h('tr', { class: 'memory' },
          h('td', {}, ''),
          h('td', {}, `memory ${memoryPointLabel(point)}`),
          h('td', {}, 'memory'),
          h('td', { class: 'num', colspan: '5' }, `${formatMiB(bytes)} MiB per GPU (median of per-GPU max)`),
        ),
      );
    }
  }
  return h('table', { class: 'steps' }, head, body);
}
