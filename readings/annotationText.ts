/**
 * The words of the annotations: CodeLens titles, after-line labels, the run picker's and the
 * status bar's words, all derived from an {@link Annotation}'s figures. No `vscode` import. It
 * re-exports the hover's Markdown (hoverText.ts), run labels and memory words (labelText.ts),
 * the one-line reading (readingText.ts) and formatting (formatText.ts), so importers need only it.
 *
 * Run files are untrusted: every text that comes from one (host, versions, labels, variant
 * names, skip reasons) goes through {@link escapeMarkdown} in Markdown and {@link plain} in
 * plain-text surfaces. Links are built by the caller from our own ids only.
 */
import type { CallSite } from '../sites/callSites';
import { releasesMemory, type Annotation, type Figure, type Measured } from './figures';
import { formatBytes, formatMs, ncclText, plain, runSizeText } from './formatText';
import { codeSizeWords, gpusOf, noFigureOfCodeSize, memoryPart, memoryPerGpu, runLabel, showsMemory, sourceLabel } from './labelText';
import type { Profile } from './profiles';
import { skipGate, timeoutWords } from './readingText';
import { hostGpusText } from '../protocol/runNameParts';

export { escapeMarkdown, formatBytes, formatMs, ncclText, percent, plain, plural, runSizeText } from './formatText';
export { CELL_GAP, chainLine, commandUri, firstCollectiveLine, HOVER_COMMANDS, hoverLinks, hoverMarkdown, type HoverLinks } from './hoverText';
export { memoryPerGpu, runLabel, showsMemory } from './labelText';
export { FIRST_NEGLIGIBLE_SHARE, reading, skipGate, timeoutWords } from './readingText';

/**
 * A suspend's memory (figures.ts `releasesMemory`), from its run's points before and after the
 * call (bytes per GPU): "releases 480 MiB/GPU (4.0 MiB left)", or "484 MiB/GPU after it (484 MiB
 * before: nothing released)" when the run shows no drop. Undefined for other calls, or when the
 * run lacks either point.
 */
export function releaseWords(a: Annotation, m: Measured): string | undefined {
  if (!releasesMemory(a.entry, a.entry.answer)) return undefined;
  const before = m.main.memoryBeforeCall;
  const after = m.main.memoryAfterCall;
  if (before === undefined || after === undefined) return undefined;
  return before > after
    ? `releases ${formatBytes(before - after)}/GPU (${formatBytes(after)} left)`
    : `${formatBytes(after)}/GPU after it (${formatBytes(before)} before: nothing released)`;
}

function headlineWords(a: Annotation, m: Measured): string {
  const h = m.headline;
  if (h === m.main.total && a.entry.role !== 'teardown') return 'to first collective';
  return plain(h.label, 40);
}

/**
 * A creation whose group's first collective is a site of its own further on (groupFlow.ts found
 * it: `site.warmUp.firstCollective`): that line pays the first collective, so this line's lens
 * and label give the call alone and point there, rather than the total to first collective, which
 * would show one cost at two lines. Undefined when the headline is not the total, or the run has
 * no call or first-collective figure for it.
 * @returns the call's figure (ms), the first collective's (ms) and its 1-based line
 */
export function firstCollectiveElsewhere(
  a: Annotation,
  site?: CallSite,
  sites?: readonly CallSite[],
): { call: Figure; first: Figure; line: number } | undefined {
  const m = a.measured;
  const at = site?.role === 'create' && site.warmUp && !site.warmUp.warm ? site.warmUp.firstCollective : site && sites ? defaultFirstCollective(site, sites) : undefined;
  if (!m || !at || m.headline !== m.main.total || !m.main.call || !m.main.first) return undefined;
  return { call: m.main.call, first: m.main.first, line: at.line + 1 };
}

/**
 * A creation whose group is not held in a variable — a lazy `init_process_group`'s default group —
 * and whose first collective the scan found as a site of its own (`first_collective` with
 * `firstCollectiveOf` naming this line and API: defaultGroup.ts): that site's 0-based line.
 */
function defaultFirstCollective(site: CallSite, sites: readonly CallSite[]): { line: number } | undefined {
  if (site.role !== 'create' || site.eager === true) return undefined;
  const line = site.range.start.line;
  const first = sites.find((x) => x !== site && x.firstCollectiveOf && x.firstCollectiveOf.line === line && x.firstCollectiveOf.api === site.api);
  return first ? { line: first.range.start.line } : undefined;
}

/**
 * The CodeLens title, e.g. "⏱ 176 ms to first collective · 484 MiB/GPU — localhost · NCCL 2.28.9 ·
 * 2026-11-29": the headline figure and the run it comes from ({@link runLabel}). With `site`, a
 * creation whose first collective is a site further on gives its call and points there
 * ({@link firstCollectiveElsewhere}): "⏱ 0.43 ms call · its first collective (line 8) pays 191 ms …";
 * `sites` (the document's) lets a lazy init_process_group find its default group's first collective.
 */
export function codeLensTitle(a: Annotation, site?: CallSite, sites?: readonly CallSite[]): string {
  const sim = a.simulated ? 'SIMULATED · ' : '';
  const m = a.measured;
  if (!m) {
    const host = a.active ? plain(a.active.run.host, 40) : undefined;
    // A skip or gate names the host with the GPUs its run is named by ("localhost (1× H200)").
    const gpuHost = a.active ? plain(hostGpusText(a.active.run), 80) : undefined;
    const reason = a.missing?.reason ?? '';
    const gate = skipGate(a);
    // The run did not ask for it, and its host cannot run it (the Measure picker's gate): measuring there would skip it.
    if (a.missing?.cannotRun)
      return `${sim}⏱ ${plain(a.missing.experiment, 30)} on ${gpuHost ?? '…'}: ${plain(a.missing.cannotRun, 60)} · Measure on a host that meets it`;
    // Measuring again on the same host would skip it again: say why, and offer another host.
    if (gate) return `${sim}⏱ skipped on ${gpuHost ?? '…'}: ${plain(gate, 60)} · Measure on a host that meets it`;
    // Nothing can measure it: say what the run shows instead, and offer no measurement.
    if (a.missing?.unmeasurable) return `${sim}⏱ ${plain(reason, 140)}`;
    // The hang guard stopped it: a hang, not an absence; measuring again may pass.
    if (a.missing?.timedOut) return `${sim}⏱ ${plain(timeoutWords(a.missing.timedOut), 120)} in this run · Measure again on ${host ?? '…'}`;
    const why = !a.active
      ? ''
      : reason.startsWith('skipped')
        ? `skipped on ${host ?? '…'} · `
        : reason.startsWith('not measured in this run')
          ? 'not measured in this run · '
          : 'not measured in the runs used here · ';
    // The call beneath was skipped on this host for a reason of its own (split_group's ncclCommSplit
    // on one GPU): said in the words of that call's own lens, while this call can still be measured.
    const b = a.active ? a.missing?.beneathSkip : undefined;
    const beneath = b ? `${plain(b.note, 60)} was skipped on ${gpuHost ?? '…'}: ${plain(b.reason, 60)} · ` : '';
    const there = b?.oneRank ? ' (a one-rank group there)' : '';
    return `${sim}⏱ ${why}${beneath}Measure this on ${host ?? '…'}${there}`;
  }
  const via = m.via ? ` (${m.experiment} beneath)` : '';
  const stale = a.stale.length ? ' · stale' : '';
  // The code's group size has no figure in this run: said instead, never the other size's figure as the headline.
  const none = noFigureOfCodeSize(m);
  if (none) return `${sim}⏱ ${none}${via} — ${sourceLabel(a, m.source).replace(/^SIMULATED · /, '')}${stale}`;
  const elsewhere = firstCollectiveElsewhere(a, site, sites);
  const parts = elsewhere
    ? [`${formatMs(elsewhere.call.stats.median)} call`, `its first collective (line ${elsewhere.line}) pays ${formatMs(elsewhere.first.stats.median)}`]
    : [`${formatMs(m.headline.stats.median)} ${headlineWords(a, m)}`];
  if (a.entry.role === 'teardown' && m.main.total && m.main.total !== m.headline)
    parts.push(`${formatMs(m.main.total.stats.median)} ${plain(m.main.total.label, 40)}`);
  const reinit = a.entry.role === 'teardown' ? m.main.extra.find((f) => f.step === 'total') : undefined;
  if (reinit) parts.push(`${formatMs(reinit.stats.median)} re-init to first collective`);
  const released = releaseWords(a, m);
  const mem = showsMemory(a) && !releasesMemory(a.entry, a.entry.answer) ? memoryPerGpu(m) : undefined;
  if (released) parts.push(released);
  else if (mem !== undefined) parts.push(memoryPart(mem));
  const size = codeSizeWords(m);
  if (size) parts.push(size);
  else if (m.main.childRanks === 1) parts.push('one-rank communicator');
  const once = site?.firstCallOnly ? 'may create (first call only): ' : '';
  return `${sim}⏱ ${once}${parts.join(' · ')}${via} — ${sourceLabel(a, m.source).replace(/^SIMULATED · /, '')}${stale}`;
}

/**
 * The after-line label (Import Cost style), e.g. "176 ms · 484 MiB/GPU"; when the figures come
 * from another run than the active one (the status bar's), that run's label follows:
 * "176 ms · 484 MiB/GPU — localhost · NCCL 2.28.9 · 2026-11-29". With `site`, as
 * {@link codeLensTitle}: "0.43 ms (+191 ms at line 8) · 484 MiB/GPU".
 */
export function decorationLabel(a: Annotation, site?: CallSite, sites?: readonly CallSite[]): string | undefined {
  const m = a.measured;
  if (!m) return undefined;
  const from = a.active && m.source !== a.active ? ` — ${sourceLabel(a, m.source).replace(/^SIMULATED · /, '')}` : '';
  // The code's group size has no figure in this run: said instead of the other size's figure (as the lens).
  const none = noFigureOfCodeSize(m);
  if (none) return `${a.simulated ? 'SIMULATED ' : ''}${none}${from}${a.stale.length ? ' (stale)' : ''}`;
  const released = releaseWords(a, m);
  const mem = showsMemory(a) && !releasesMemory(a.entry, a.entry.answer) ? memoryPerGpu(m) : undefined;
  const size = codeSizeWords(m);
  const one = size ? ` · ${size}` : m.main.childRanks === 1 ? ' · one-rank' : '';
  const elsewhere = firstCollectiveElsewhere(a, site, sites);
  const head = elsewhere
    ? `${formatMs(elsewhere.call.stats.median)} (+${formatMs(elsewhere.first.stats.median)} at line ${elsewhere.line})`
    : formatMs(m.headline.stats.median);
  const text = `${head}${released ? ` · ${released}` : mem !== undefined ? ` · ${memoryPart(mem)}` : ''}${one}`;
  return `${a.simulated ? 'SIMULATED ' : ''}${site?.firstCallOnly ? 'may create (first call only): ' : ''}${text}${from}${a.stale.length ? ' (stale)' : ''}`;
}

/** Colour class of a label by the user's thresholds (ms, on the headline median). */
export type CostClass = 'small' | 'medium' | 'large';
export function costClass(ms: number, mediumMs: number, largeMs: number): CostClass {
  return ms >= largeMs ? 'large' : ms >= mediumMs ? 'medium' : 'small';
}


/** One line naming a run in the run picker: host, NCCL, its size (ranks, and the host's GPUs: {@link runSizeText}), UTC start. */
export function profileLabel(p: Profile): string {
  const s = p.run.stamp;
  const size = runSizeText(p.run.ranks, gpusOf(p.run), (t) => plain(t, 30));
  return `${plain(p.run.host, 40)} · ${ncclText(s?.ncclVersion, (t) => plain(t, 16))} · ${size} · ${new Date(p.time).toISOString().slice(0, 16).replace('T', ' ')}`;
}

/** What the status bar item shows: its text and tooltip. */
export interface StatusText {
  text: string;
  tooltip: string;
}

/**
 * The status bar's words: the active run's label ({@link runLabel}), stale when so, and a tooltip
 * that names the calls answered by another run and why, and the runs left out here.
 * @param active the active profile
 * @param chosen whether the user chose it (else it is the newest measured run with figures for annotated calls: profiles.ts `active`)
 * @param stale why the active run is stale ([] = fresh)
 * @param elsewhere calls of the open documents answered by another run (annotationModel.ts)
 * @param left runs not used here: simulated (until one is chosen), global runs of another window,
 *   measured (while a simulated run is chosen)
 * @param peers every loaded run, so that labels that would read alike are told apart ({@link runLabel})
 */
export function statusText(
  active: Profile | undefined,
  chosen: boolean,
  stale: readonly string[],
  elsewhere: readonly { api: string; source: Profile; why: string }[],
  left: { simulated: number; foreign: number; measured?: number },
  peers: readonly Profile[] = [],
): StatusText {
  const label = (p: Profile): string => runLabel(p, [...peers, ...(active ? [active] : []), ...elsewhere.map((e) => e.source)]);
  const measured = left.measured ?? 0;
  const leftLines = [
    measured > 0 ? `${measured} measured run${measured === 1 ? '' : 's'} not used while a simulated run is chosen` : '',
    left.simulated > 0
      ? `${left.simulated} simulated run${left.simulated === 1 ? '' : 's'} not used: choose one to see its figures (marked SIMULATED)`
      : '',
    left.foreign > 0
      ? `${left.foreign} run${left.foreign === 1 ? '' : 's'} saved from another window not used here: choose one to see it`
      : '',
  ].filter(Boolean);
  if (!active) {
    const none = left.simulated + left.foreign > 0;
    return {
      text: `$(pulse) commcost: ${none ? 'no measured run' : 'no runs'}`,
      tooltip: [
        none ? 'No measured run in this window' : 'No saved commcost run',
        ...leftLines,
        'Click to choose a run, or run "commcost: Measure communicator rebuild"',
      ].join('\n'),
    };
  }
  return {
    text: `$(pulse) ${label(active)}${stale.length ? ' (stale)' : ''}`,
    tooltip: [
      `commcost annotations come from ${label(active)} (${chosen ? 'the run you chose' : 'the newest measured run with figures for annotated calls'})`,
      ...stale.map((s) => `stale: ${plain(s, 200)}`),
      ...elsewhere.map((e) => `${plain(e.api, 60)} answered by ${label(e.source)} — ${plain(e.why, 200)}`),
      ...leftLines,
      'Click to switch runs',
    ].join('\n'),
  };
}
