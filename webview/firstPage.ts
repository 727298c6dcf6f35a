/**
 * The first page: the answer in a few lines at the top of the results panel and the HTML report,
 * drawn from readings/verdict/summary.ts `firstPageSummary` (every sentence, figure and study
 * comparison is chosen there, by the run's figures); the verdict's detail follows below it. All
 * data is inserted as text.
 */
import type { RunFile } from '../protocol/runFile';
import { firstPageSummary, type SummaryLine, type SummaryStudy } from '../readings/verdict/summary';
import { h, replaceChildren } from './dom';

/** The study's figure beside a line, compared (with the judgement), with its setting and source. */
function comparedItem(s: SummaryStudy): HTMLElement {
  return h('li', { class: 'study compared' }, `Study: ${s.comparison ?? ''}`, h('span', { class: 'muted' }, ` (${s.setting}; ${s.source})`));
}

/**
 * The study's figures a line names but does not compare, one item per reason: "Study: A 485–534 ms;
 * B 499–502 ms — not compared: <why>", each figure's setting and source after it.
 */
function notComparedItems(study: readonly SummaryStudy[]): HTMLElement[] {
  const reasons = [...new Set(study.map((s) => s.notCompared ?? ''))];
  return reasons.map((why) => {
    const mine = study.filter((s) => (s.notCompared ?? '') === why);
    return h(
      'li',
      { class: 'study not-compared' },
      `Study: ${mine.map((s) => `${s.what} ${s.written}`).join('; ')} — not compared: ${why}`,
      h('span', { class: 'muted' }, ` (${mine.map((s) => `${s.setting}; ${s.source}`).join(' · ')})`),
    );
  });
}

/** One answer: label and figure, then the sentence, where the figure comes from and the study's beside it. */
function answerItem(l: SummaryLine): HTMLElement {
  if (l.kind === 'regime') return h('div', { class: `answer regime regime-${l.label.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}` }, h('strong', {}, l.label), ' ', l.text);
  return h(
    'div',
    { class: `answer answer-${l.kind}${l.figure === undefined ? ' absent' : ''}` },
    h('div', { class: 'answer-head' }, h('span', { class: 'answer-label' }, l.label), l.figure !== undefined && h('span', { class: 'answer-figure' }, l.figure)),
    h('div', { class: 'answer-text' }, l.text),
    l.step !== undefined && h('div', { class: 'answer-step muted' }, `from ${l.step}`),
    l.study.length > 0 &&
      h(
        'ul',
        { class: 'answer-study' },
        ...l.study.filter((x) => x.comparison !== undefined).map(comparedItem),
        ...notComparedItems(l.study.filter((x) => x.comparison === undefined)),
      ),
  );
}

/** The first page's section; {@link update} redraws it only when its lines changed. */
export class FirstPageSection {
  readonly root = h('section', { class: 'first-page', 'aria-label': 'The answer for this run' });
  private key = '';

  /** Brings the section to `run`'s summary. */
  update(run: RunFile): void {
    const lines = firstPageSummary(run);
    const key = JSON.stringify(lines);
    if (key === this.key) return;
    this.key = key;
    this.root.hidden = lines.length === 0;
    replaceChildren(this.root, h('h2', {}, 'The answer'), ...lines.map(answerItem));
  }
}
