/**
 * The hover's Markdown of an annotation and its links: the figures table, memory per GPU, the
 * reading, other variants, the run it comes from, and the `command:` links the hover may run
 * ({@link HOVER_COMMANDS}). No `vscode` import; re-exported by annotationText.ts, so importers
 * are unchanged.
 *
 * Run files are untrusted: every text that comes from one goes through {@link escapeMarkdown};
 * links are built from our own ids only (profile keys, apiMap.ts experiment ids).
 */
import type { CallSite } from '../sites/callSites';
import { releasesMemory, type Annotation, type Figure, type Measured, type VariantFigures } from './figures';
import { escapeMarkdown, formatBytes, formatMs, ncclText, percent, plain, runSizeText } from './formatText';
import { figureSizeNote, gpusOf, memoryChanged, memoryPart, memoryPerGpu, oneRank, showsMemory, sourceLabel } from './labelText';
import { reading, skipGate } from './readingText';
import { nodeNamesText } from '../protocol/runNodes';

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

/**
 * The figure of another variant set beside the headline: its step of the same name as the
 * headline's (the same quantity: "ncclCommRevoke until quiet" beside "ncclCommRevoke until
 * quiet"), else the figure the role headlines (a creation's total, else its call; a teardown's call,
 * else its total), which {@link variantLine} then names. Undefined when it has neither.
 */
function sameQuantity(v: VariantFigures, headline: Figure, role: string): Figure | undefined {
  const all = [v.call, v.first, v.total, ...v.extra];
  const same = all.find((f) => f?.step === headline.step);
  if (same) return same;
  return role === 'create' || role === 'register' || role === 'suspend' ? (v.total ?? v.call) : (v.call ?? v.total);
}

/**
 * One other variant: the figure of the headline's quantity ({@link sameQuantity}), named by its
 * label where it is another quantity than the headline's, and its memory per GPU when
 * `withMemory` (see {@link showsMemory}).
 */
function variantLine(v: VariantFigures, headline: Figure, role: string, withMemory: boolean): string {
  const h = sameQuantity(v, headline, role);
  const named = h && h.step !== headline.step ? `${escapeMarkdown(h.label, 60)} ` : '';
  const mem = withMemory ? (v.memoryAfterFirst ?? v.memoryAfterCall) : undefined;
  const one = oneRank(v, role);
  return `${escapeMarkdown(v.variant, 60)}: ${h ? `${named}${formatMs(h.stats.median)} (p90 ${formatMs(h.stats.p90)})` : '—'}${mem !== undefined ? `, ${memoryPart(mem)}` : ''}${one ? ` (${one})` : ''}`;
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
export function firstCollectiveLine(
  site: CallSite,
  figure: Figure | undefined,
  beneath = false,
  m?: Pick<Measured, 'firstUse' | 'firstUseAsked' | 'main'> & { source?: Pick<Measured['source'], 'run'> },
): string | undefined {
  const of = site.firstCollectiveOf;
  if (!of) return undefined;
  // The figure's ranks decide the words (its communicator's, else the run's), not the code's group size alone.
  const ranks = m ? (m.main.childRanks ?? m.source?.run.ranks) : undefined;
  const line = firstCollectiveCore(of, figure, beneath, site.groupSize, ranks);
  const use = firstUseWords(of.collective, m);
  return use ? `${line} ${use}` : line;
}

/**
 * Which op's figure a first collective is: the run's variant of this first use (a broadcast, a send/recv
 * pair), or the allreduce's standing in for another op (with how to measure it). Undefined for an
 * allreduce, or without a run.
 */
export function firstUseWords(collective: string | undefined, m?: Pick<Measured, 'firstUse' | 'firstUseAsked' | 'main'>): string | undefined {
  if (!m || !collective || collective === 'all_reduce') return undefined;
  const op = escapeMarkdown(collective, 40);
  if (m.firstUse) return `This group is first used by \`${op}\`: the figure is the run's ${m.firstUse === 'sendrecv' ? 'send/recv pair' : m.firstUse} variant (${escapeMarkdown(m.main.variant, 80)}).`;
  const how = m.firstUseAsked ? ` (measure it: --first-use ${m.firstUseAsked})` : ' (no experiment times this op first)';
  return `This group is first used by \`${op}\`; the figure is the allreduce's${how}.`;
}

/**
 * The first-collective sentence. Its words follow the ranks of the figure it gives
 * (`figureRanks`: a one-rank communicator has no peer, whatever the code's group): "pays the
 * group's init + connect" only for a figure of several ranks; a group the code makes of one rank
 * with no one-rank figure in the run gives no figure (the run's is of another size).
 */
function firstCollectiveCore(
  of: NonNullable<CallSite['firstCollectiveOf']>,
  figure: Figure | undefined,
  beneath: boolean,
  groupSize: number | undefined,
  figureRanks: number | undefined,
): string {
  const group = of.variable === 'the default group' ? 'the default group' : codeSpan(of.variable);
  const by = of.api ? ` by ${escapeMarkdown(of.api, 60)}` : '';
  const head = `First collective on ${group} (created at line ${of.line + 1}${by})`;
  const cost = figure ? `, ${formatMs(figure.stats.median)} (p90 ${formatMs(figure.stats.p90)})` : '';
  // Figures of the NCCL call beneath (no c10d figures): the first collective after an NCCL init, not the group's init + connect.
  if (beneath && figure)
    return `${head}: ${formatMs(figure.stats.median)} (p90 ${formatMs(figure.stats.p90)}) as the first collective after the NCCL init beneath (this run has no c10d figures) — once, on this first call.`;
  if (figure && figureRanks === 1) {
    const other = groupSize !== undefined && groupSize !== 1 ? ` (the code makes ${groupSize}-rank groups: not what they pay)` : '';
    return `${head}: pays the group's init${cost}, as a one-rank group in this run: nothing to connect${other} — once, on this first call.`;
  }
  if (groupSize === 1)
    return figure
      ? `${head}: a one-rank group, nothing to connect; this run has no figure for a one-rank group (its figures are of a ${figureRanks ?? 'larger'}-rank group) — the group's init is paid once, on this first call.`
      : `${head}: a one-rank group, nothing to connect; pays the group's init — once, on this first call.`;
  return `${head}: pays the group's init + connect${cost} — once, on this first call; later collectives on it do not.`;
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
      // Named as every run is (labelText.ts runLabel: its GPUs and count, NCCL, start), never by its host alone.
      out.push('', `Active profile: ${escapeMarkdown(sourceLabel(a, a.active), 160)}`);
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
  const one = oneRank(m.main, a.entry.role);
  out.push(`**commcost** · ${api} → \`${m.experiment}\` · ${escapeMarkdown(m.main.variant, 60)}${one ? ` (${one})` : ''}`);
  const through = chainLine(site);
  if (through) out.push('', through);
  if (m.via)
    out.push('', `*No c10d figures for this call in the runs used here: these are of ${escapeMarkdown(m.via)} (\`${m.experiment}\`).*`);
  const note = headlineNote(a, m, site);
  if (note) out.push('', note);
  const size = figureSizeNote(m, site.role);
  if (size) out.push('', size);
  if (site.firstCallOnly)
    out.push('', `May create (first call only): the function called creates its group on its first call and returns the cached one after; later calls create nothing.`);
  const pays = firstCollectiveLine(site, m.headline, m.via !== undefined, m);
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
  const r = reading(a, site);
  if (r) out.push('', `${r.charAt(0).toUpperCase()}${r.slice(1)}.`);
  if (site.repeated && !site.firstCollectiveOf)
    out.push('', `⚠ This call is ${escapeMarkdown(site.repeated.detail, 200)}: the cost is paid each time.`);
  // The headline's quantity is named once; a variant's figure of another quantity names its own.
  if (m.others.length)
    out.push(
      '',
      `Other variants (${escapeMarkdown(m.headline.label, 60)}): ${m.others.map((v) => variantLine(v, m.headline, a.entry.role, showsMemory(a))).join(' · ')}`,
    );
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
