/**
 * The words of the annotations: CodeLens titles, after-line labels, the hover's Markdown and
 * the one-line reading, all derived from an {@link Annotation}'s figures. No `vscode` import.
 *
 * Run files are untrusted: every text that comes from one (host, versions, labels, variant
 * names, skip reasons) goes through {@link escapeMarkdown} in Markdown and {@link plain} in
 * plain-text surfaces. Links are built by the caller from our own ids only.
 */
import type { CallSite } from './callSites';
import { releasesMemory, type Annotation, type Figure, type Measured, type VariantFigures } from './figures';
import { escapeMarkdown, formatBytes, formatMs, ncclText, percent, plain, runSizeText } from './formatText';
import { isSimulatedProfile, type Profile } from './profiles';
import { reading, skipGate, timeoutWords } from './readingText';
import type { RunFile } from '../../protocol/runFile';
import { nodeGpus, nodeNamesText } from '../../protocol/runNodes';

export { escapeMarkdown, formatBytes, formatMs, ncclText, percent, plain, plural, runSizeText } from './formatText';
export { FIRST_NEGLIGIBLE_SHARE, reading, skipGate, timeoutWords } from './readingText';

/** A run's GPUs for its size in words: every node's over several hosts (runNodes.ts nodeGpus), else its stamp's. */
function gpusOf(run: RunFile): readonly { name?: string }[] | undefined {
  return nodeGpus(run)?.map((name) => ({ name })) ?? run.stamp?.gpus;
}

/** The memory per GPU the annotation shows: after the first collective, else after the call. */
export function memoryPerGpu(m: Measured): number | undefined {
  return m.main.memoryAfterFirst ?? m.main.memoryAfterCall;
}

/**
 * Whether a memory figure (bytes per GPU, a free-memory delta) shows a change: it rounds to 1 MiB
 * or more (the verdict's rule, client/verdict/format.ts isNoMemory).
 */
function memoryChanged(bytes: number): boolean {
  return Math.round(bytes / 1048576) > 0;
}

/**
 * A memory figure of a lens, label or other-variant line: "484 MiB/GPU", or "no memory change
 * measured" when the delta rounds to 0 MiB or less (a shrink_group that also releases its parent
 * group nets 0: never "0 MiB/GPU", as if the group cost nothing).
 */
function memoryPart(bytes: number): string {
  return memoryChanged(bytes) ? `${formatBytes(bytes)}/GPU` : 'no memory change measured';
}

/**
 * The short label of a run, said by the status bar and every annotation: "localhost · NCCL
 * 2.28.9 · 2026-11-29", "SIMULATED · localhost · …" for a simulated run, "… · 2026-11-29 ·
 * partial" for a run stopped before its end. When another run of
 * `peers` (the store's profiles) would read the same, the label adds the UTC time it started
 * ("… · 2026-11-30 00:22 UTC"), and when that still does not tell them apart, its experiments
 * ("… · 00:22 UTC · init-abort, split-subset"): two different runs never read alike.
 */
export function runLabel(p: Profile, peers: readonly Profile[] = []): string {
  const base = baseLabel(p);
  const twins = peers.filter((q) => q !== p && q.key !== p.key && baseLabel(q) === base);
  if (twins.length === 0) return base;
  const timed = `${base} ${timeOf(p)}`;
  if (!twins.some((q) => timeOf(q) === timeOf(p))) return timed;
  return `${timed} · ${plain(p.run.experiments.map((e) => e.experiment).join(', ') || 'no experiments', 60)}`;
}

function baseLabel(p: Profile): string {
  const sim = isSimulatedProfile(p) ? 'SIMULATED · ' : '';
  // A run stopped before its end (Cancel, the hang guard, an error) says so wherever it is named,
  // as a trace's label does: what it lacks was not measured, never zero.
  const partial = p.run.status === 'partial' || p.run.status === 'failed' ? ` · ${p.run.status}` : '';
  return `${sim}${plain(p.run.host, 40)} · ${ncclText(p.run.stamp?.ncclVersion, (t) => plain(t, 20))} · ${new Date(p.time).toISOString().slice(0, 10)}${partial}`;
}

/** "00:22 UTC": when the run started (its profile time), to the minute. */
function timeOf(p: Profile): string {
  return `${new Date(p.time).toISOString().slice(11, 16)} UTC`;
}

/** The label of run `p` in `a`'s annotation, told apart from the other runs and from `also` ({@link runLabel}). */
function sourceLabel(a: Annotation, p: Profile, ...also: Profile[]): string {
  return runLabel(p, [...(a.peers ?? []), ...also]);
}

/**
 * Whether memory per GPU belongs to what `a` headlines: a creation (create), a registration or a
 * suspend/resume — never a teardown, whose variant's memory is that of the communicator it was
 * made with (or, for an abort, of the re-init), nor a query.
 */
export function showsMemory(a: Annotation): boolean {
  return a.entry.role === 'create' || a.entry.role === 'register' || a.entry.role === 'suspend';
}

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

/** "one-rank communicator: nothing to connect" for a one-rank child, else undefined. */
function oneRank(v: VariantFigures): string | undefined {
  return v.childRanks === 1 ? 'one-rank communicator: nothing to connect' : undefined;
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
    const reason = a.missing?.reason ?? '';
    const gate = skipGate(a);
    // Measuring again on the same host would skip it again: say why, and offer another host.
    if (gate) return `${sim}⏱ skipped on ${host ?? '…'}: ${plain(gate, 60)} · Measure on a host that meets it`;
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
    return `${sim}⏱ ${why}Measure this on ${host ?? '…'}`;
  }
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
  if (m.main.childRanks === 1) parts.push('one-rank communicator');
  const via = m.via ? ` (${m.experiment} beneath)` : '';
  const stale = a.stale.length ? ' · stale' : '';
  return `${sim}⏱ ${parts.join(' · ')}${via} — ${sourceLabel(a, m.source).replace(/^SIMULATED · /, '')}${stale}`;
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
  const released = releaseWords(a, m);
  const mem = showsMemory(a) && !releasesMemory(a.entry, a.entry.answer) ? memoryPerGpu(m) : undefined;
  const one = m.main.childRanks === 1 ? ' · one-rank' : '';
  const elsewhere = firstCollectiveElsewhere(a, site, sites);
  const head = elsewhere
    ? `${formatMs(elsewhere.call.stats.median)} (+${formatMs(elsewhere.first.stats.median)} at line ${elsewhere.line})`
    : formatMs(m.headline.stats.median);
  const text = `${head}${released ? ` · ${released}` : mem !== undefined ? ` · ${memoryPart(mem)}` : ''}${one}`;
  const from = a.active && m.source !== a.active ? ` — ${sourceLabel(a, m.source).replace(/^SIMULATED · /, '')}` : '';
  return `${a.simulated ? 'SIMULATED ' : ''}${text}${from}${a.stale.length ? ' (stale)' : ''}`;
}

/** Colour class of a label by the user's thresholds (ms, on the headline median). */
export type CostClass = 'small' | 'medium' | 'large';
export function costClass(ms: number, mediumMs: number, largeMs: number): CostClass {
  return ms >= largeMs ? 'large' : ms >= mediumMs ? 'medium' : 'small';
}

/** Links the hover offers, built by the caller from our own ids. */
export interface HoverLinks {
  openRun?: string;
  remeasure?: string;
  measure?: string;
}

/** The commands hover links may run (the hover's `isTrusted.enabledCommands`). */
export const HOVER_COMMANDS = ['commcost.openRun', 'commcost.remeasure'] as const;

/** A `command:` URI for one of {@link HOVER_COMMANDS} with JSON string arguments. */
export function commandUri(command: (typeof HOVER_COMMANDS)[number], args: readonly string[]): string {
  return `command:${command}?${encodeURIComponent(JSON.stringify(args))}`;
}

/** The links of an annotation: profile keys and experiment ids of apiMap.ts only, never run-file text. */
export function hoverLinks(a: Annotation): HoverLinks {
  const m = a.measured;
  if (m)
    return {
      openRun: commandUri('commcost.openRun', [m.source.key]),
      remeasure: commandUri('commcost.remeasure', [m.source.key, m.experiment]),
    };
  // Nothing can measure it: no measure link (the run, where its facts are, instead).
  if (a.missing?.unmeasurable) return a.active ? { openRun: commandUri('commcost.openRun', [a.active.key]) } : {};
  return { measure: commandUri('commcost.remeasure', [a.active?.key ?? '', a.missing?.experiment ?? a.entry.answer.experiment]) };
}

/**
 * Padding before each figure of the hover's table (HTML entities: the Markdown renderer trims
 * spaces, non-breaking ones included, from table cells), so that "46.7 ms" and "49.1 ms" of
 * adjacent right-aligned columns read apart.
 */
export const CELL_GAP = '&nbsp;'.repeat(4);

function row(name: string, f: Figure | undefined): string | undefined {
  if (!f) return undefined;
  return `| ${name} (${escapeMarkdown(f.label, 60)}) | ${CELL_GAP}${formatMs(f.stats.median)} | ${CELL_GAP}${formatMs(f.stats.p90)} |`;
}

/** One other variant: its headline figure, and its memory per GPU when `withMemory` (see {@link showsMemory}). */
function variantLine(v: VariantFigures, withMemory: boolean): string {
  const h = v.total ?? v.call;
  const mem = withMemory ? (v.memoryAfterFirst ?? v.memoryAfterCall) : undefined;
  const one = oneRank(v);
  return `${escapeMarkdown(v.variant, 60)}: ${h ? `${formatMs(h.stats.median)} (p90 ${formatMs(h.stats.p90)})` : '—'}${mem !== undefined ? `, ${memoryPart(mem)}` : ''}${one ? ` (${one})` : ''}`;
}

/**
 * Which variant the headline is and why, when the run has more than one way for this call. When
 * the code does not show whether the creation is eager (`site.eager` undefined: e.g. a call
 * through a wrapper in a file without init_process_group, or `**kwargs`; creations only: a
 * teardown has no `eager`), it says the lazy headline is an assumption, not what the file's init passes.
 */
function headlineNote(a: Annotation, m: Measured, site?: CallSite): string | undefined {
  if (m.assumes === 'lazy' && site?.role === 'create' && site.eager === undefined)
    return 'The headline assumes a lazy init because the code does not show which; the eager variant is listed below.';
  if (m.assumes) {
    // Eager only when an init_process_group of this file passes device_id (annotationModel.ts
    // siteIsEager); lazy also when the file has no init_process_group at all, so the lazy words
    // name no call that may not exist.
    const self = a.api === 'init_process_group';
    return m.assumes === 'eager'
      ? `The headline assumes an eager init: ${self ? 'this call' : "this file's init_process_group"} passes device_id; the lazy variant is listed below.`
      : `The headline assumes a lazy init: ${self ? 'this call passes no device_id' : 'no init_process_group in this file passes device_id'}; the eager variant is listed below.`;
  }
  const n = m.main.childRanks;
  if (n !== undefined && n > 1 && m.others.some((v) => v.childRanks === 1))
    return `The headline is the ${n}-rank child; a one-rank child has nothing to connect.`;
  return undefined;
}

/**
 * A lazy group's first collective: which group, where and by what it was created, and that this
 * call pays its init + connect once ("First collective on `tp` (created at line 5 by
 * new_group): pays the group's init + connect, 191 ms (p90 204 ms) — once, on this first call.").
 * Undefined for other sites.
 * @param figure the first-collective figure of the answering run (ms), when measured
 * @param beneath the figure is of the NCCL call beneath (no c10d figures): said so, never "the group's init + connect"
 */
export function firstCollectiveLine(site: CallSite, figure: Figure | undefined, beneath = false): string | undefined {
  const of = site.firstCollectiveOf;
  if (!of) return undefined;
  const group = of.variable === 'the default group' ? 'the default group' : codeSpan(of.variable);
  const by = of.api ? ` by ${escapeMarkdown(of.api, 60)}` : '';
  const cost = figure ? `, ${formatMs(figure.stats.median)} (p90 ${formatMs(figure.stats.p90)})` : '';
  // Figures of the NCCL call beneath (no c10d figures): the first collective after an NCCL init, not the group's init + connect.
  if (beneath && figure)
    return `First collective on ${group} (created at line ${of.line + 1}${by}): ${formatMs(figure.stats.median)} (p90 ${formatMs(figure.stats.p90)}) as the first collective after the NCCL init beneath (this run has no c10d figures) — once, on this first call.`;
  return `First collective on ${group} (created at line ${of.line + 1}${by}): pays the group's init + connect${cost} — once, on this first call; later collectives on it do not.`;
}

/** Text from source code as a Markdown code span: one line, no backtick. */
function codeSpan(text: string): string {
  return `\`${plain(text, 80).replace(/`/g, "'")}\``;
}

/**
 * The hover's line for a call made through wrapper functions (wrapperIndex.ts): "via
 * `create_group` → `torch.distributed.new_group` (parallel_state.py:232)", and when the first
 * wrapper's body makes several lifecycle calls, that the figures are of one. Undefined for a
 * direct call.
 */
export function chainLine(site: CallSite): string | undefined {
  const { chain, wrapper } = site as CallSite & { chain?: readonly string[]; wrapper?: { file: string; line: number; calls: number } };
  if (!chain || chain.length === 0) return undefined;
  const where = wrapper ? ` (${escapeMarkdown(wrapper.file.split(/[\\/]/).pop() ?? wrapper.file, 60)}:${wrapper.line + 1})` : '';
  const several =
    wrapper && wrapper.calls > 1
      ? ` — ${codeSpan(chain[0] ?? '')} makes ${wrapper.calls} lifecycle calls in its body: these figures are of one`
      : '';
  return `via ${chain.map(codeSpan).join(' → ')}${where}${several}`;
}

/**
 * The hover's Markdown for `site` (`isTrusted` must be limited to our command ids by the
 * caller). Everything from the run file is escaped.
 */
export function hoverMarkdown(a: Annotation, site: CallSite, links: HoverLinks): string {
  const out: string[] = [];
  const api = `\`${site.api}\``;
  if (a.simulated) out.push("**SIMULATED** — figures from commcost's simulated NCCL, not a measurement", '');
  const m = a.measured;
  if (!m) {
    // An experiment that does not exist is never named as one.
    out.push(a.missing?.unmeasurable ? `**commcost** · ${api}` : `**commcost** · ${api} → experiment \`${a.missing?.experiment ?? a.entry.answer.experiment}\``, '');
    const through = chainLine(site);
    if (through) out.push(through, '');
    const pays = firstCollectiveLine(site, undefined);
    if (pays) out.push(pays, '');
    // A reason may name the call beneath and its own skip (figures.ts): room for both.
    out.push(`${escapeMarkdown(a.missing?.reason ?? 'not measured in this run', 320)}.`);
    if (a.active)
      out.push('', `Active profile: ${escapeMarkdown(a.active.run.host)}, ${ncclText(a.active.run.stamp?.ncclVersion, (t) => escapeMarkdown(t))}`);
    if (a.missing?.timedOut && a.missing.timedOut.hint) out.push('', `Hint from the run: ${escapeMarkdown(a.missing.timedOut.hint, 200)}.`);
    if (skipGate(a))
      out.push('', `${a.active ? escapeMarkdown(a.active.run.host, 60) : 'This host'} cannot run it as measured: measure it on a host, or with an NCCL, that meets this.`);
    else if (a.missing?.unmeasurable) {
      if (links.openRun) out.push('', `[Open run](${links.openRun})`);
    } else if (links.measure)
      out.push('', `[Measure ${a.missing?.timedOut ? 'again' : 'this'} on ${a.active ? escapeMarkdown(a.active.run.host, 60) : '…'}](${links.measure})`);
    return out.join('\n');
  }
  const run = m.source.run;
  const stamp = run.stamp;
  const one = oneRank(m.main);
  out.push(`**commcost** · ${api} → \`${m.experiment}\` · ${escapeMarkdown(m.main.variant, 60)}${one ? ` (${one})` : ''}`);
  const through = chainLine(site);
  if (through) out.push('', through);
  if (m.via)
    out.push('', `*No c10d figures for this call in the runs used here: these are of ${escapeMarkdown(m.via)} (\`${m.experiment}\`).*`);
  const note = headlineNote(a, m, site);
  if (note) out.push('', note);
  const pays = firstCollectiveLine(site, m.headline, m.via !== undefined);
  if (pays) out.push('', pays);
  out.push('', `| step | ${CELL_GAP}median | ${CELL_GAP}p90 |`, '|---|---:|---:|');
  for (const r of [
    row('call', m.main.call),
    row('first collective', m.main.first),
    row('total', m.main.total),
    ...m.main.extra.map((f) => row('also', f)),
  ])
    if (r) out.push(r);
  const release = releasesMemory(a.entry, a.entry.answer);
  const mem = showsMemory(a) ? memoryPerGpu(m) : undefined;
  if (release) {
    const { memoryBeforeCall: before, memoryAfterCall: after } = m.main;
    if (after !== undefined)
      out.push(
        '',
        `Memory per GPU: ${formatBytes(after)} after the call${before !== undefined ? `, ${formatBytes(before)} before it${before > after ? `: the call releases ${formatBytes(before - after)}` : ': nothing released'}` : ''}`,
      );
    if (m.resume)
      out.push(
        '',
        `The resume to first collective of the same run (${formatMs(m.resume.stats.median)}, p90 ${formatMs(m.resume.stats.p90)}) is ncclCommResume's figure, shown on its line.`,
      );
  } else if (mem !== undefined) {
    // A share as measured (never "0.00% of the GPU"); a delta of 0 MiB or less is no change.
    const share = m.gpuTotalBytes && memoryChanged(mem) ? ` (${percent(mem, m.gpuTotalBytes)} of the GPU)` : '';
    const afterCall =
      m.main.memoryAfterFirst !== undefined && m.main.memoryAfterCall !== undefined
        ? `; ${formatBytes(m.main.memoryAfterCall)} after the call`
        : '';
    const point = m.main.memoryAfterFirst !== undefined ? ' after the first collective' : ' after the call';
    out.push(
      '',
      memoryChanged(mem)
        ? `Memory per GPU: ${formatBytes(mem)}${point}${share}${afterCall}`
        : `Memory per GPU: no change measured${point} (the free-memory delta reads ${formatBytes(Math.max(0, mem))})${afterCall}`,
    );
  }
  const r = reading(a);
  if (r) out.push('', `${r.charAt(0).toUpperCase()}${r.slice(1)}.`);
  if (site.repeated && !site.firstCollectiveOf)
    out.push('', `⚠ This call is ${escapeMarkdown(site.repeated.detail, 200)}: the cost is paid each time.`);
  if (m.others.length) out.push('', `Other variants: ${m.others.map((v) => variantLine(v, showsMemory(a))).join(' · ')}`);
  const gpus = runSizeText(run.ranks, gpusOf(run), (t) => escapeMarkdown(t, 60));
  const n = (m.main.total ?? m.headline).stats.n;
  const date = new Date(m.source.time).toISOString().slice(0, 10);
  // A run over several nodes names them: its stamp is of one host only.
  const nodes = nodeNamesText(run);
  const where = nodes ? ` (${escapeMarkdown(nodes, 120)}, ${run.nodes!.length} nodes)` : stamp ? ` (${escapeMarkdown(stamp.hostname, 60)})` : '';
  out.push('', `*${escapeMarkdown(run.host, 60)}${where} · ${gpus} · ${ncclText(stamp?.ncclVersion, (t) => escapeMarkdown(t, 30))} · ${date} · n = ${n}*`);
  if (a.why && a.active)
    out.push(
      '',
      `*From ${escapeMarkdown(sourceLabel(a, m.source, a.active), 160)}, not the active run (${escapeMarkdown(sourceLabel(a, a.active, m.source), 160)}): ${escapeMarkdown(a.why, 200)}.*`,
    );
  if (a.stale.length) out.push('', `**Stale:** ${a.stale.map((s) => escapeMarkdown(s, 200)).join('; ')}`);
  const actions = [
    links.openRun ? `[Open run](${links.openRun})` : undefined,
    links.remeasure ? `[Re-measure on ${escapeMarkdown(run.host, 60)}](${links.remeasure})` : undefined,
  ].filter(Boolean);
  if (actions.length) out.push('', actions.join(' · '));
  return out.join('\n');
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
