/**
 * The words of the annotations: CodeLens titles, after-line labels, the hover's Markdown and
 * the one-line reading, all derived from an {@link Annotation}'s figures. No `vscode` import.
 *
 * Run files are untrusted: every text that comes from one (host, versions, labels, variant
 * names, skip reasons) goes through {@link escapeMarkdown} in Markdown and {@link plain} in
 * plain-text surfaces. Links are built by the caller from our own ids only.
 */
import type { CallSite } from './callSites';
import type { Annotation, Figure, Measured, VariantFigures } from './figures';

/** `ms` for people: 0.017 ms, 4.52 ms, 47.7 ms, 176 ms, 1.23 s. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  const a = Math.abs(ms);
  if (a >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (a >= 100) return `${Math.round(ms)} ms`;
  if (a >= 10) return `${ms.toFixed(1)} ms`;
  if (a >= 1) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(3)} ms`;
}

/** Bytes as MiB / GiB: 484 MiB, 76.5 MiB, 1.5 GiB. */
export function formatBytes(bytes: number): string {
  const mib = bytes / 1048576;
  if (Math.abs(mib) >= 1024) return `${(mib / 1024).toFixed(1)} GiB`;
  if (Math.abs(mib) >= 100) return `${Math.round(mib)} MiB`;
  return `${mib.toFixed(1)} MiB`;
}

/** Untrusted text for plain-text surfaces: one line, no control characters, at most `max` characters. */
export function plain(text: string, max = 80): string {
  // Control characters, line separators and bidirectional overrides become a space.
  // eslint-disable-next-line no-control-regex
  const one = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** Untrusted text for Markdown: {@link plain}, then every Markdown and HTML special character escaped. */
export function escapeMarkdown(text: string, max = 120): string {
  return plain(text, max)
    .replace(/[\\`*_{}[\]()#+\-.!|~>:]/g, '\\$&')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;');
}

/** The memory per GPU the annotation shows: after the first collective, else after the call. */
export function memoryPerGpu(m: Measured): number | undefined {
  return m.main.memoryAfterFirst ?? m.main.memoryAfterCall;
}

const pct = (part: number, whole: number): string => `${Math.round((100 * part) / whole)}%`;

function headlineWords(a: Annotation, m: Measured): string {
  const h = m.headline;
  if (h === m.main.total && a.entry.role !== 'teardown') return 'to first collective';
  return plain(h.label, 40);
}

/**
 * One sentence read off the figures, e.g. "82% of this init is the lazy connect in the first
 * collective (144 ms of 176 ms)". Undefined when the figures say nothing more than the numbers.
 */
export function reading(a: Annotation): string | undefined {
  const m = a.measured;
  if (!m) return undefined;
  const { call, first, total } = m.main;
  if (a.entry.role === 'create' && first && total && total.stats.median > 0) {
    const what = m.experiment === 'init' ? 'init' : m.experiment === 'split' ? 'split' : 'rebuild';
    const share = first.stats.median / total.stats.median;
    let sentence: string;
    if (share >= 0.5) {
      sentence = `${pct(first.stats.median, total.stats.median)} of this ${what} is the lazy connect in the first collective (${formatMs(first.stats.median)} of ${formatMs(total.stats.median)})`;
    } else if (share < 0.05 && call) {
      sentence = `the first collective adds only ${formatMs(first.stats.median)}: ${pct(call.stats.median, total.stats.median)} of this ${what} is the call itself`;
    } else {
      sentence = `the call takes ${formatMs(call?.stats.median ?? NaN)} and the first collective ${formatMs(first.stats.median)} (${pct(first.stats.median, total.stats.median)})`;
    }
    if (m.freshInit && m.freshInit.stats.median > 0) {
      sentence += `; a fresh init to first collective takes ${formatMs(m.freshInit.stats.median)} on this run (this is ${pct(total.stats.median, m.freshInit.stats.median)} of it)`;
    }
    return sentence;
  }
  if (m.experiment === 'destroy' && total && total.stats.median > 0) {
    const destroy = [call, ...m.main.extra].find((f) => f?.step === 'destroy');
    if (destroy)
      return `${pct(destroy.stats.median, total.stats.median)} of finalize + destroy (${formatMs(total.stats.median)}) is ncclCommDestroy`;
  }
  if (m.experiment === 'abort' && call) {
    const reinit = m.main.extra.find((f) => f.step === 'total');
    if (reinit)
      return `recovering costs ${formatMs(call.stats.median + reinit.stats.median)}: the abort (${formatMs(call.stats.median)}) then a re-init to first collective (${formatMs(reinit.stats.median)})`;
  }
  return undefined;
}

function where(a: Annotation, m: Measured): string {
  const run = m.source.run;
  return `${plain(run.host, 40)}, NCCL ${plain(run.stamp?.ncclVersion ?? '?', 20)}`;
}

/** The CodeLens title, e.g. "⏱ 176 ms to first collective · 484 MiB/GPU — localhost, NCCL 2.28.9". */
export function codeLensTitle(a: Annotation): string {
  const sim = a.simulated ? 'SIMULATED · ' : '';
  const m = a.measured;
  if (!m) {
    const host = a.active ? plain(a.active.run.host, 40) : undefined;
    return `${sim}⏱ ${a.missing?.reason === 'no run saved yet' ? '' : 'not measured in this run · '}Measure this on ${host ?? '…'}`;
  }
  const parts = [`${formatMs(m.headline.stats.median)} ${headlineWords(a, m)}`];
  if (a.entry.role === 'teardown' && m.main.total && m.main.total !== m.headline)
    parts.push(`${formatMs(m.main.total.stats.median)} ${plain(m.main.total.label, 40)}`);
  const reinit = a.entry.role === 'teardown' ? m.main.extra.find((f) => f.step === 'total') : undefined;
  if (reinit) parts.push(`${formatMs(reinit.stats.median)} re-init to first collective`);
  const mem = a.entry.role === 'create' ? memoryPerGpu(m) : undefined;
  if (mem !== undefined) parts.push(`${formatBytes(mem)}/GPU`);
  const via = m.via ? ` (${m.experiment} beneath)` : '';
  const stale = a.stale.length ? ' · stale' : '';
  return `${sim}⏱ ${parts.join(' · ')}${via} — ${where(a, m)}${stale}`;
}

/** The after-line label (Import Cost style), e.g. "176 ms · 484 MiB/GPU". */
export function decorationLabel(a: Annotation): string | undefined {
  const m = a.measured;
  if (!m) return undefined;
  const mem = a.entry.role === 'create' ? memoryPerGpu(m) : undefined;
  const text = `${formatMs(m.headline.stats.median)}${mem !== undefined ? ` · ${formatBytes(mem)}/GPU` : ''}`;
  return `${a.simulated ? 'SIMULATED ' : ''}${text}${a.stale.length ? ' (stale)' : ''}`;
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
  return { measure: commandUri('commcost.remeasure', [a.active?.key ?? '', a.missing?.experiment ?? a.entry.answer.experiment]) };
}

function row(name: string, f: Figure | undefined): string | undefined {
  if (!f) return undefined;
  return `| ${name} (${escapeMarkdown(f.label, 60)}) | ${formatMs(f.stats.median)} | ${formatMs(f.stats.p90)} |`;
}

function variantLine(v: VariantFigures): string {
  const h = v.total ?? v.call;
  const mem = v.memoryAfterFirst ?? v.memoryAfterCall;
  return `${escapeMarkdown(v.variant, 60)}: ${h ? `${formatMs(h.stats.median)} (p90 ${formatMs(h.stats.p90)})` : '—'}${mem !== undefined ? `, ${formatBytes(mem)}/GPU` : ''}`;
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
    out.push(`**commcost** · ${api} → experiment \`${a.missing?.experiment ?? a.entry.answer.experiment}\``, '');
    out.push(`${escapeMarkdown(a.missing?.reason ?? 'not measured in this run', 200)}.`);
    if (a.active)
      out.push('', `Active profile: ${escapeMarkdown(a.active.run.host)}, NCCL ${escapeMarkdown(a.active.run.stamp?.ncclVersion ?? '?')}`);
    if (links.measure) out.push('', `[Measure this on ${a.active ? escapeMarkdown(a.active.run.host, 60) : '…'}](${links.measure})`);
    return out.join('\n');
  }
  const run = m.source.run;
  const stamp = run.stamp;
  out.push(`**commcost** · ${api} → \`${m.experiment}\` · ${escapeMarkdown(m.main.variant, 60)}`);
  if (m.via) out.push('', `*No c10d figures in this run: these are of ${escapeMarkdown(m.via)} (\`${m.experiment}\`).*`);
  out.push('', '| step | median | p90 |', '|---|---:|---:|');
  for (const r of [
    row('call', m.main.call),
    row('first collective', m.main.first),
    row('total', m.main.total),
    ...m.main.extra.map((f) => row('also', f)),
  ])
    if (r) out.push(r);
  const mem = memoryPerGpu(m);
  if (mem !== undefined) {
    const share = m.gpuTotalBytes ? ` (${((100 * mem) / m.gpuTotalBytes).toFixed(2)}% of the GPU)` : '';
    const afterCall =
      m.main.memoryAfterFirst !== undefined && m.main.memoryAfterCall !== undefined
        ? `; ${formatBytes(m.main.memoryAfterCall)} after the call`
        : '';
    out.push(
      '',
      `Memory per GPU: ${formatBytes(mem)}${m.main.memoryAfterFirst !== undefined ? ' after the first collective' : ' after the call'}${share}${afterCall}`,
    );
  }
  const r = reading(a);
  if (r) out.push('', `${r.charAt(0).toUpperCase()}${r.slice(1)}.`);
  if (site.repeated) out.push('', `⚠ This call is ${escapeMarkdown(site.repeated.detail, 200)}: the cost is paid each time.`);
  if (m.others.length) out.push('', `Other variants: ${m.others.map(variantLine).join(' · ')}`);
  const gpus = stamp?.gpus.length ? `${stamp.gpus.length}× ${escapeMarkdown(stamp.gpus[0]?.name ?? 'GPU', 60)}` : `${run.ranks} ranks`;
  const n = (m.main.total ?? m.headline).stats.n;
  const date = new Date(m.source.time).toISOString().slice(0, 10);
  out.push(
    '',
    `*${escapeMarkdown(run.host, 60)}${stamp ? ` (${escapeMarkdown(stamp.hostname, 60)})` : ''} · ${gpus} · NCCL ${escapeMarkdown(stamp?.ncclVersion ?? '?', 30)} · ${date} · n = ${n}*`,
  );
  if (a.stale.length) out.push('', `**Stale:** ${a.stale.map((s) => escapeMarkdown(s, 200)).join('; ')}`);
  const actions = [
    links.openRun ? `[Open run](${links.openRun})` : undefined,
    links.remeasure ? `[Re-measure on ${escapeMarkdown(run.host, 60)}](${links.remeasure})` : undefined,
  ].filter(Boolean);
  if (actions.length) out.push('', actions.join(' · '));
  return out.join('\n');
}
