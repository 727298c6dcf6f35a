/**
 * The Recovery section of the results view and the HTML report: the recovery paths after one
 * rank is lost (readings/plan/recovery.ts) on the shown run — a table of the job's waits and the
 * background work per path, each path's terms with their medians, p90s and run steps (or why a
 * term is missing), the in-flight work it drops, and the sentences. `plan/show` with section
 * `recovery` (the "plan this recovery" CodeLens) says where it came from and scrolls to it. All
 * text is inserted as text.
 */
import type { RunFile } from '../protocol/runFile';
import type { PlanRequest } from '../protocol/webviewMessages';
import { droppedText, planRecovery, recoveryApplies, recoveryEmptyLine, recoverySumText, type RecoveryPath, type RecoveryPhase, type RecoveryPlan, type RecoveryTerm } from '../readings/plan/recovery';
import { recoverySentences } from '../readings/plan/recoverySentences';
import { termSourceText } from '../readings/plan/terms';
import { msText, PlanInputError } from '../readings/plan/units';
import { h, replaceChildren } from './dom';


/**
 * The recovery table of `paths` (a 1-rank run: only the full rebuilds it measured; the line above
 * the table says what it can and cannot show, instead of rows of "incomplete").
 */
function recoveryTable(plan: RecoveryPlan, paths: readonly RecoveryPath[]): HTMLElement {
  const head = ['path', 'after the loss (job waits)', 'background (all)', 'rank returns (job waits)', 'both waits', 'in-flight work'];
  return h('table', { class: 'plan-table recovery-table' },
    h('thead', {}, h('tr', {}, ...head.map((x) => h('th', {}, x)))),
    h('tbody', {}, ...paths.map((p) => {
      const bg = [...p.afterLoss.background, ...(p.onReturn?.background ?? [])];
      const bgMs = p.afterLoss.backgroundMs === undefined || (p.onReturn && p.onReturn.backgroundMs === undefined) ? undefined : p.afterLoss.backgroundMs + (p.onReturn?.backgroundMs ?? 0);
      return h('tr', { title: p.how, 'data-path': p.id },
        h('td', {}, p.name, p.complete ? '' : ' (incomplete)'),
        h('td', {}, recoverySumText(p.afterLoss.criticalMs, p.afterLoss.critical)),
        h('td', {}, recoverySumText(bgMs, bg)),
        h('td', {}, p.onReturn ? recoverySumText(p.onReturn.criticalMs, p.onReturn.critical) : '– (full size)'),
        h('td', {}, p.cycleMs === undefined ? 'incomplete' : msText(p.cycleMs)),
        h('td', {}, droppedText(p)),
      );
    })),
  );
}

function termItem(t: RecoveryTerm): HTMLElement {
  const value = t.value === undefined ? 'missing' : `${msText(t.value)}${t.p90 !== undefined ? ` (p90 ${msText(t.p90)})` : ''}`;
  return h('li', { class: t.value === undefined ? 'missing' : undefined }, h('strong', {}, value), ` ${t.what} — ${t.value === undefined ? (t.missing?.why ?? 'no figure') : termSourceText(t)}`);
}

function phaseItems(label: string, ph: RecoveryPhase): HTMLElement[] {
  const out: HTMLElement[] = [];
  for (const [part, terms] of [[`${label}, the job waits`, ph.critical], [`${label}, in the background`, ph.background]] as const) {
    if (terms.length > 0) out.push(h('li', {}, part, h('ul', {}, ...terms.map(termItem))));
  }
  return out;
}

/** One path's terms, its in-flight work and its note, in a details element. */
function pathDetails(p: RecoveryPath): HTMLElement {
  return h('details', { class: 'recovery-path' },
    h('summary', {}, `${p.name} (${p.sizes})`),
    h('p', { class: 'muted' }, p.how, p.note ? ` (${p.note})` : ''),
    h('ul', {},
      ...phaseItems('after the loss', p.afterLoss),
      ...(p.onReturn ? phaseItems('when the rank returns', p.onReturn) : [h('li', {}, `when the rank returns: ${p.onReturnNone ?? '–'}`)]),
      h('li', {}, `in-flight work: ${p.drops.text}`),
    ),
  );
}

/** The Recovery section. Construct once; {@link update} with each run snapshot. */
export class RecoverySection {
  readonly root: HTMLElement;
  /** Where the request came from when the CodeLens opened the section ("from on_failure in train.py: …"). */
  private readonly origin = h('p', { class: 'plan-origin muted' });
  private readonly problem = h('p', { class: 'plan-problem', role: 'alert' });
  private readonly tableBox = h('div');
  private readonly pathsBox = h('div');
  private readonly sentencesBox = h('ul', { class: 'plan-sentences' });
  private key = '';

  constructor() {
    this.root = h('section', { class: 'plan recovery', id: 'recovery' },
      h('h2', {}, 'Recovery after a lost rank'),
      this.origin, this.problem, this.tableBox, this.sentencesBox, this.pathsBox);
    this.origin.hidden = true;
    this.problem.hidden = true;
  }

  /** Says where the request came from, scrolls the section into view. */
  show(request: PlanRequest): void {
    this.origin.hidden = !request.origin;
    replaceChildren(this.origin, request.origin ?? '');
    this.root.scrollIntoView({ block: 'start' });
  }

  /** Plans the recovery of `run` again when it changed (a complete snapshot). */
  update(run: RunFile): void {
    const key = JSON.stringify([run.id, run.status, run.experiments.map((e) => [e.experiment, e.state, e.variants.length])]);
    if (key === this.key) return;
    this.key = key;
    let plan: RecoveryPlan;
    try {
      plan = planRecovery([{ file: run.id, run }]);
    } catch (e) {
      this.problem.hidden = false;
      replaceChildren(this.problem, e instanceof PlanInputError ? `${e.message} — ${e.hint}` : String(e));
      return;
    }
    this.problem.hidden = true;
    // Nothing measured for any path: one line, no table of "incomplete".
    const empty = recoveryEmptyLine(plan);
    // One rank: the one line of what the run can and cannot show (recovery.ts oneRankLine) in place
    // of the sentences, and only the full rebuilds it measured in the table and details.
    const oneRank = plan.oneRank !== undefined;
    const shown = oneRank ? plan.paths.filter((p) => recoveryApplies(p, plan.host.ranks) && p.complete) : plan.paths;
    replaceChildren(
      this.tableBox,
      empty !== undefined && h('p', { class: 'note' }, empty),
      empty === undefined && oneRank && h('p', { class: 'note' }, plan.oneRank!),
      empty === undefined && shown.length > 0 && recoveryTable(plan, shown),
    );
    replaceChildren(this.sentencesBox, ...(empty !== undefined || oneRank ? [] : recoverySentences(plan).map((s) => h('li', {}, s))));
    replaceChildren(this.pathsBox, ...(empty !== undefined ? [] : shown.map(pathDetails)));
  }
}
