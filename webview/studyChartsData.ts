/**
 * The study's figures drawn the study's way, from a run's own step figures (pure models; drawn
 * by studyCharts.ts in the panel, the HTML report and the comparison report):
 *
 * - **Figure 2 style**: the critical path of every path that creates a communicator — init,
 *   split, shrink, grow and the re-init after an abort — each stacked with its first collective
 *   (segments: the run's step medians, ms), a p90 whisker on each segment (that step's p90), on a
 *   linear axis (stacked: each segment's length is its ms, so its share of the bar is its share
 *   of the path; a log axis would draw a 30 ms call as three quarters of a 170 ms bar), with the study's migration pause (dashed) and the run's own switch inside its pool
 *   (dotted: the pool experiment's `switch`, labelled as this run's, with the child it goes to) as
 *   reference lines. Like the study's Figure 2 (every path 43–195 ms), the abort-then-re-init bar
 *   is the re-init and its first collective: the abort itself is Figure 3's quantity, drawn there.
 * - **Figure 3 style**: ncclCommAbort against ncclCommFinalize + ncclCommDestroy per configuration
 *   (one group per run: host · NCCL · ranks), with the study's 500 ms floor.
 *
 * A run with c10d figures but none of these NCCL calls gets, in place of an empty chart, one line
 * that names its c10d figures as the torch calls they are (never drawn as the NCCL calls the
 * study's figures pair, nor against the study's NCCL lines).
 *
 * A bar whose step a run lacks is not drawn and is said under the chart with why (never
 * invented); so is a reference line the run lacks. Several runs: one colour per host and NCCL
 * version (runs of the same host and version share it).
 */
import { STUDY_FIGURES, studyNotComparedWhy, studyNotDrawnNote, studyReferenceNote, type StudyFigure } from '../readings/studyFigures';
import { poolVariants } from '../readings/plan/strategies';
import { stepTerm, type PlanRun } from '../readings/plan/terms';
import { isSimulatedRun, type RunFile } from '../protocol/runFile';
import { ms as msWords } from '../readings/verdict/format';
import { poolShapes } from '../readings/verdict/pool';
import { oneRankChildren, oneRankChildWords } from '../readings/verdict/oneRankChildren';
import { firstPageSummary } from '../readings/verdict/summary';
import { deriveVerdict } from '../readings/verdict';
import { runGpusText } from '../protocol/runNameParts';

/** A run shown in the study charts: its label in the legend, and the file name its steps are cited by. */
export interface StudyRun {
  label: string;
  file: string;
  run: RunFile;
}

/** One stacked segment: a step's median and p90 (ms) and where it came from. */
export interface StudySegment {
  /** "ncclCommInitRankConfig", "first collective". */
  label: string;
  ms: number;
  p90: number;
  /** "init/default/call". */
  source: string;
}

/** One bar of a category for one run. */
export interface StudyBar {
  run: number;
  /** The ranks of the communicator the bar's call made. */
  child: number;
  segments: StudySegment[];
  /** The sum of the segments' medians, ms. */
  totalMs: number;
}

export interface StudyLine {
  label: string;
  ms: number;
  style: 'dashed' | 'dotted';
  source: string;
}

/** Colours: one per distinct host and NCCL version, by order of first appearance. */
export interface StudyLegend {
  /** Per run, its colour slot. */
  colorOf: number[];
  /** Per colour slot, its words ("vm · NCCL 2.30.7"). */
  keys: string[];
}

export interface Figure2Model {
  /** "init", "split", "shrink", "grow", "abort then re-init". */
  categories: string[];
  /** bars[category][k]: the drawn bars of that category, one per run that has all of its steps. */
  bars: StudyBar[][];
  lines: StudyLine[];
  /** What is not drawn and why ("grow (vm · NCCL 2.28.9): grow was skipped in …: needs NCCL ≥ 2.29.2"). */
  absent: string[];
  /** Which variant each split/shrink/grow bar is and the size of its child ("split: split/whole/splitShare=0, a child of 2 ranks"). */
  drawn: string[];
  /**
   * Per run whose bars the study's migration pause is drawn beside but not compared with, why
   * ({@link notComparedNotes}); when every run with a bar is simulated, the pause is not drawn and
   * this holds the one note that says so.
   */
  notCompared: string[];
  legend: StudyLegend;
  /** The rows left out because no run has a bar in them, in one line ("No bar for shrink and grow: the run has no figure for them (why below)."). */
  notDrawn?: string;
  /** One line in place of the chart when no run has a bar: "no figures for Figure 2: …" (never an empty chart). */
  empty?: string;
  /**
   * Linear axis ends, ms: 0 and a round value past every segment end, whisker and line. Linear,
   * not log: the bars are stacked, and on a log axis a segment's length is not its share of the
   * bar (a 30 ms call of a 170 ms bar would fill three quarters of it).
   */
  min: number;
  max: number;
  /** Always 'linear': stacked segments are drawn at their length in ms (see {@link min}). */
  axis: 'linear';
}

interface CategoryDef {
  name: string;
  experiment: string;
  /**
   * The variants to draw, in order of preference for a run of `ranks` ranks: the one whose child
   * has several ranks first (a one-rank child has nothing to connect: DESIGN.md, "Readings follow
   * measurement"), with the size of the communicator it makes.
   */
  variants: (ranks: number) => { variant: string; child: number }[];
  steps: { step: string; label: string }[];
}

const FIRST = { step: 'first', label: 'first collective' };

/** The Figure 2 categories and the run steps each stacks (docs/METHOD.md, "Planning a reshape"). */
export const FIGURE2_CATEGORIES: readonly CategoryDef[] = [
  { name: 'init', experiment: 'init', variants: (n) => [{ variant: 'default', child: n }], steps: [{ step: 'call', label: 'ncclCommInitRankConfig' }, FIRST] },
  {
    name: 'split',
    experiment: 'split',
    variants: (n) => {
      // The halves are colored rank < n/2 (remote-agent/experiments/split.ts): at an odd n the
      // larger child, ceil(n/2) ranks, is the one whose figure the MAX over ranks reports.
      const halves = { variant: 'halves/splitShare=0', child: Math.max(1, Math.ceil(n / 2)) };
      const whole = { variant: 'whole/splitShare=0', child: n };
      return halves.child >= 2 ? [halves, whole] : [whole, halves];
    },
    steps: [{ step: 'call', label: 'ncclCommSplit' }, FIRST],
  },
  { name: 'shrink', experiment: 'shrink', variants: (n) => [{ variant: 'default', child: Math.max(1, n - 1) }], steps: [{ step: 'call', label: 'ncclCommShrink' }, FIRST] },
  { name: 'grow', experiment: 'grow', variants: (n) => [{ variant: 'default', child: n }], steps: [{ step: 'call', label: 'ncclCommGrow' }, FIRST] },
  // The study's abort-then-reinit path is the re-init plus its first collective (its Figure 2
  // paths are 43–195 ms; the abort, ~0.5 s, is its Figure 3's): the abort is not stacked here.
  {
    name: 'abort then re-init',
    experiment: 'abort',
    variants: (n) => [{ variant: 'default', child: n }],
    steps: [{ step: 'reinit', label: 'ncclCommInitRankConfig after ncclCommAbort' }, FIRST],
  },
];

/** A step's median and p90 in `run`, or undefined. */
function stepStats(run: RunFile, experiment: string, variant: string, step: string): { median: number; p90: number } | undefined {
  const s = run.experiments.find((e) => e.experiment === experiment)?.variants.find((v) => v.variant === variant)?.steps.find((x) => x.step === step);
  if (!s || !Number.isFinite(s.stats.median) || !Number.isFinite(s.stats.p90)) return undefined;
  return { median: s.stats.median, p90: s.stats.p90 };
}

/** Why `run` has no `experiment/variant/step` (the planner's words: skipped, no variant, no experiment). */
function why(r: StudyRun, experiment: string, variant: string, step: string): string {
  const runs: PlanRun[] = [{ file: r.file, run: r.run }];
  return stepTerm(runs, step, experiment, [variant], step).missing?.why ?? `${experiment}/${variant} has no ${step}`;
}

/**
 * One colour per distinct configuration as the run's name says it: the GPUs and their count
 * (protocol/runNameParts.ts runGpusText: "2× H200", "SIMULATED · 2 ranks") and the NCCL version.
 */
export function studyLegend(runs: readonly StudyRun[]): StudyLegend {
  const keys: string[] = [];
  const colorOf = runs.map((r) => {
    // A simulated run never shares a measured run's colour: its bars are not measurements.
    const key = `${runGpusText(r.run)}${r.run.stamp?.ncclVersion ? ` · NCCL ${r.run.stamp.ncclVersion}` : ''}`;
    if (!keys.includes(key)) keys.push(key);
    return keys.indexOf(key);
  });
  return { colorOf, keys };
}

/** Powers of ten around `values` (> 0); [0.01, 1000] when there is none. */
function logBounds(values: readonly number[]): { min: number; max: number } {
  const v = values.filter((x) => x > 0 && Number.isFinite(x));
  if (v.length === 0) return { min: 0.01, max: 1000 };
  return { min: 10 ** Math.floor(Math.log10(Math.min(...v))), max: 10 ** Math.ceil(Math.log10(Math.max(...v)) + 1e-9) };
}

/**
 * A linear axis from 0 to a round value (1, 2 or 5 × a power of ten) at or above every value
 * (> 0); [0, 1] when there is none. For stacked bars, whose segments' lengths must be their ms.
 */
export function linearBounds(values: readonly number[]): { min: number; max: number } {
  const top = Math.max(0, ...values.filter((x) => Number.isFinite(x)));
  if (top <= 0) return { min: 0, max: 1 };
  const p = 10 ** Math.floor(Math.log10(top));
  const step = [1, 2, 5, 10].find((k) => k * p >= top * (1 - 1e-9))!;
  return { min: 0, max: step * p };
}

const who = (runs: readonly StudyRun[], r: StudyRun) => (runs.length > 1 ? ` (${r.label})` : '');

/**
 * The notes under a chart for the runs (of `drawn`, indices into `runs`) whose bars the study's
 * figure `f` is drawn beside but that the verdict does not compare with it, by its rule
 * (readings/studyFigures.ts studyNotComparedWhy: 1 rank, several hosts, simulated): "The study's
 * floor (~0.5 s, NCCL 2.28.9 and 2.32.3, A40 and V100, …) is shown for reference, not compared with this run: a
 * communicator of 1 rank has no peer, the study's had 4 ranks (study: …, in docs/METHOD.md …)."
 * Empty when every drawn run is compared.
 * @param line the line's name ("floor", "migration pause"); `subject` what the study measured ("teardown").
 */
export function notComparedNotes(runs: readonly StudyRun[], drawn: ReadonlySet<number>, f: StudyFigure, line: string, subject: string): string[] {
  return runs.flatMap((r, i) => {
    if (!drawn.has(i)) return [];
    const why = studyNotComparedWhy(f, { ranks: r.run.ranks, nodes: Array.isArray(r.run.nodes) && r.run.nodes.length > 1 ? r.run.nodes.length : 1, simulated: isSimulatedRun(r.run) }, subject);
    if (why === undefined) return [];
    const whom = runs.length > 1 ? `run ${r.label} (${configText(r.run)})` : 'this run';
    return [studyReferenceNote(f, line, whom, why)];
  });
}

/**
 * The Figure 2 model of `runs` (one bar per run per category; see the file comment).
 * Reference lines: the study's migration pause (studyFigures.ts, with its source) and, per run
 * that measured it, its in-pool swap (pool/<variant>/switch median).
 */
export function figure2Model(runs: readonly StudyRun[]): Figure2Model {
  const absent: string[] = [];
  const drawn: string[] = [];
  const bars = FIGURE2_CATEGORIES.map((c) =>
    runs.flatMap((r, ri): StudyBar[] => {
      const choices = c.variants(r.run.ranks);
      const chosen = choices.find((v) => c.steps.every((s) => stepStats(r.run, c.experiment, v.variant, s.step))) ;
      if (!chosen) {
        const v = choices[0]!.variant;
        const lacking = c.steps.find((s) => !stepStats(r.run, c.experiment, v, s.step))!;
        absent.push(`${c.name}${who(runs, r)}: ${why(r, c.experiment, v, lacking.step)}`);
        return [];
      }
      const segments = c.steps.map((s): StudySegment => {
        const st = stepStats(r.run, c.experiment, chosen.variant, s.step)!;
        return { label: s.label, ms: st.median, p90: st.p90, source: `${c.experiment}/${chosen.variant}/${s.step}` };
      });
      if (c.experiment !== 'init' && c.experiment !== 'abort') {
        drawn.push(`${c.name}${who(runs, r)}: ${c.experiment}/${chosen.variant}, a child of ${chosen.child} rank${chosen.child === 1 ? ' (nothing to connect: its first collective is not a lazy connect)' : 's'}`);
      }
      if (c.experiment === 'abort') {
        const abort = stepStats(r.run, 'abort', chosen.variant, 'abort');
        drawn.push(`${c.name}${who(runs, r)}: the re-init after ncclCommAbort and its first collective${abort ? `; the abort itself (${msWords(abort.median)}) is Figure 3's, drawn there` : ''}`);
      }
      return [{ run: ri, child: chosen.child, segments, totalMs: segments.reduce((a, s) => a + s.ms, 0) }];
    }),
  );
  const pause = STUDY_FIGURES.migrationPause;
  const withBars = new Set(bars.flat().map((b) => b.run));
  // A study line is never drawn against simulated figures alone: a note says so instead.
  const simulatedOnly = allSimulated(runs, withBars);
  const lines: StudyLine[] = simulatedOnly ? [] : [{ label: `the study's migration pause ${pause.written}`, ms: pause.min, style: 'dashed', source: pause.source }];
  // The run's own switch inside its pool, named as the run's (the child it goes to, from the
  // variant's shapes): never the study's swap, which is set beside it only where the verdict does
  // (readings/verdict/pool.ts: not for a one-rank child, whose collective has no peer).
  const swapNotes: string[] = [];
  runs.forEach((r) => {
    const variant = poolVariants([{ file: r.file, run: r.run }], r.run.ranks).plain;
    const st = stepStats(r.run, 'pool', variant, 'switch');
    const child = poolShapes(variant)[1];
    const to = child === undefined ? 'inside the pool' : `to TP${child} inside the pool${child === 1 ? ' (a one-rank child)' : ''}`;
    if (st && st.median > 0) {
      lines.push({ label: `${runs.length > 1 ? `run ${r.label}'s` : "this run's"} switch ${to} ${Number(st.median.toPrecision(2))} ms`, ms: st.median, style: 'dotted', source: `pool/${variant}/switch (${r.file})` });
      if (child === 1) swapNotes.push(swapNotDrawnNote(runs.length > 1 ? `run ${r.label}'s` : "this run's"));
    } else absent.push(`the line of the switch inside the pool${who(runs, r)}: ${why(r, 'pool', variant, 'switch')}`);
  });
  const ends = bars.flat().flatMap((b) => {
    let at = 0;
    return b.segments.flatMap((s) => {
      const out = [s.ms, at + s.p90];
      at += s.ms;
      return [...out, at];
    });
  });
  const notCompared = [
    ...(simulatedOnly
      ? [studyNotDrawnNote(pause, 'migration pause', runs.length > 1 ? "these runs' figures" : "this run's figures")]
      : notComparedNotes(runs, withBars, pause, 'migration pause', 'migration pause')),
    ...swapNotes,
  ];
  const empty =
    withBars.size === 0
      ? `no figures for Figure 2: ${runsWord(runs)} measured none of ${FIGURE2_CATEGORIES.map((c) => c.experiment).join(', ')}${c10dNote(runs, C10D_CREATION, 'the NCCL paths Figure 2 stacks')}`
      : undefined;
  // A row with no bar in any run is not drawn (no empty rows at 1 rank): one line names them, the
  // absent list says why each is missing.
  const kept = FIGURE2_CATEGORIES.map((_, i) => i).filter((i) => empty !== undefined || bars[i]!.length > 0);
  const dropped = FIGURE2_CATEGORIES.filter((_, i) => !kept.includes(i)).map((c) => c.name);
  return {
    categories: kept.map((i) => FIGURE2_CATEGORIES[i]!.name),
    bars: kept.map((i) => bars[i]!),
    ...(dropped.length > 0 ? { notDrawn: notDrawnWords(runs, dropped) } : {}),
    lines,
    absent,
    drawn,
    notCompared,
    legend: studyLegend(runs),
    ...(empty !== undefined ? { empty } : {}),
    ...linearBounds([...ends, ...lines.map((l) => l.ms)]),
    axis: 'linear',
  };
}

/**
 * The line for Figure 2's rows with no bar in any run: those the runs have no figure for ("the run
 * has no figure for shrink and grow (why below)"), and, by name, a split, shrink or grow a run did
 * time outside its own experiment whose child has one rank (readings/verdict/oneRankChildren.ts:
 * connect-mode's `ncclCommSplit (color = rank)`, c10d's `split_group` at 1 rank): not the study's
 * split of a communicator into parts, so not drawn as one, and never called absent (issue #28).
 */
function notDrawnWords(runs: readonly StudyRun[], dropped: readonly string[]): string {
  const children = runs.flatMap((r) => oneRankChildren(r.run).filter((g) => dropped.includes(g.call)).map((g) => ({ r, g })));
  const none = dropped.filter((d) => !children.some((x) => x.g.call === d));
  const parts = [
    ...(none.length > 0
      ? [`${runsWord(runs)} ${runs.length === 1 ? 'has' : 'have'} no figure for ${children.length === 0 ? (none.length === 1 ? 'it' : 'them') : listWords(none)} (why below)`]
      : []),
    ...children.map(
      ({ r, g }) =>
        `${runs.length > 1 ? `run ${r.label}'s` : "the run's"} ${g.call}, ${oneRankChildWords(g)}, makes a one-rank child (no peer to connect to), not the study's ${g.call} of a communicator of several ranks: not drawn as one`,
    ),
  ];
  return `No bar for ${listWords(dropped)}: ${parts.join('; ')}.`;
}

/** One configuration of Figure 3: a run's abort and finalize + destroy (ms), either absent with why. */
export interface Figure3Group {
  run: number;
  /** "vm · 2× NVIDIA H200 · NCCL 2.30.7 · 2 ranks". */
  config: string;
  abort?: StudySegment;
  finalizeDestroy?: StudySegment;
}

export interface Figure3Model {
  groups: Figure3Group[];
  /** The study's floor; absent when every run drawn is simulated (a note in `notCompared` says so). */
  floor?: StudyLine;
  absent: string[];
  /** Per run whose bars the study's floor is drawn beside but not compared with, why ({@link notComparedNotes}). */
  notCompared: string[];
  legend: StudyLegend;
  /** One line in place of the chart when no run has abort or destroy: "no figures for Figure 3: …". */
  empty?: string;
  /** Log axis ends: powers of ten around every bar and whisker end and the floor. */
  min: number;
  max: number;
  /** 'logarithmic': abort and finalize + destroy stand side by side, never stacked. */
  axis: 'logarithmic';
}

/** Whether every run of `drawn` (indices into `runs`) is simulated, and there is at least one. */
function allSimulated(runs: readonly StudyRun[], drawn: ReadonlySet<number>): boolean {
  return drawn.size > 0 && [...drawn].every((i) => isSimulatedRun(runs[i]!.run));
}

/** "a", "a and b", "a, b and c". */
function listWords(xs: readonly string[]): string {
  return xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`;
}

/** "the run" (one run), "the runs" (several): the subject of an empty chart's line. */
function runsWord(runs: readonly StudyRun[]): string {
  return runs.length === 1 ? 'the run' : 'the runs';
}

/**
 * A run's configuration in words, named as the run's name names it: its GPUs and their count
 * (runGpusText: "2× H200", "4× H200 over 2 hosts", "SIMULATED · 2 ranks", never a simulated
 * device's name) · NCCL · the ranks when the GPU count does not already say them.
 */
export function configText(r: RunFile): string {
  const gpus = runGpusText(r);
  const ranks = isSimulatedRun(r) || gpus.startsWith(`${r.ranks}× `) ? undefined : `${r.ranks} rank${r.ranks === 1 ? '' : 's'}`;
  return [gpus, r.stamp?.ncclVersion ? `NCCL ${r.stamp.ncclVersion}` : undefined, ranks].filter((x): x is string => x !== undefined).join(' · ');
}

/**
 * The Figure 3 model: per run, ncclCommAbort (abort/default/abort) against ncclCommFinalize +
 * ncclCommDestroy (destroy/default/total), with the study's 500 ms floor (studyFigures.ts
 * `abortFloor`, with its source) as a dashed line. A run with neither is said absent.
 */
export function figure3Model(runs: readonly StudyRun[]): Figure3Model {
  const absent: string[] = [];
  const groups = runs.flatMap((r, ri): Figure3Group[] => {
    const g: Figure3Group = { run: ri, config: configText(r.run) };
    const abort = stepStats(r.run, 'abort', 'default', 'abort');
    const destroy = stepStats(r.run, 'destroy', 'default', 'total');
    if (abort) g.abort = { label: 'ncclCommAbort', ms: abort.median, p90: abort.p90, source: 'abort/default/abort' };
    else absent.push(`ncclCommAbort${who(runs, r)}: ${why(r, 'abort', 'default', 'abort')}`);
    if (destroy) g.finalizeDestroy = { label: 'ncclCommFinalize + ncclCommDestroy', ms: destroy.median, p90: destroy.p90, source: 'destroy/default/total' };
    else absent.push(`ncclCommFinalize + ncclCommDestroy${who(runs, r)}: ${why(r, 'destroy', 'default', 'total')}`);
    return g.abort || g.finalizeDestroy ? [g] : [];
  });
  const f = STUDY_FIGURES.abortFloor;
  const drawn = new Set(groups.map((g) => g.run));
  // A study line is never drawn against simulated figures alone: a note says so instead.
  const simulatedOnly = allSimulated(runs, drawn);
  const floor: StudyLine | undefined = simulatedOnly ? undefined : { label: `the study's floor ${f.written}`, ms: f.min, style: 'dashed', source: f.source };
  const values = groups.flatMap((g) => [g.abort, g.finalizeDestroy].flatMap((s) => (s ? [s.ms, s.p90] : [])));
  const notCompared = simulatedOnly
    ? [studyNotDrawnNote(f, 'floor', runs.length > 1 ? "these runs' figures" : "this run's figures")]
    : notComparedNotes(runs, drawn, f, 'floor', 'teardown');
  const empty =
    groups.length === 0
      ? `no figures for Figure 3: ${runsWord(runs)} measured neither ncclCommAbort (abort) nor ncclCommFinalize + ncclCommDestroy (destroy)${c10dNote(runs, C10D_TEARDOWN, 'the NCCL calls Figure 3 pairs')}`
      : undefined;
  return {
    groups,
    ...(floor ? { floor } : {}),
    absent,
    notCompared,
    legend: studyLegend(runs),
    ...(empty !== undefined ? { empty } : {}),
    ...logBounds([...values, ...(floor ? [floor.ms] : [])]),
    axis: 'logarithmic',
  };
}

/** A c10d figure a chart names in place of the NCCL bars it lacks: variant, step and the call in words. */
interface C10dFigure {
  variant: string;
  step: string;
  words: string;
}

/** The c10d creations to their first all_reduce (the c10d experiment's `total` steps). */
const C10D_CREATION: readonly C10dFigure[] = [
  { variant: 'init/eager', step: 'total', words: 'init_process_group(device_id) to its first all_reduce' },
  { variant: 'init/lazy', step: 'total', words: 'init_process_group without device_id to its first all_reduce' },
  { variant: 'new_group/eager-default', step: 'total', words: 'new_group on an eager default group to its first all_reduce' },
  { variant: 'split_group', step: 'total', words: 'split_group to its first all_reduce' },
];

/** The c10d teardowns (destroy_process_group after each init, the default group's abort). */
const C10D_TEARDOWN: readonly C10dFigure[] = [
  { variant: 'init/eager', step: 'destroy', words: 'destroy_process_group (after init with device_id)' },
  { variant: 'init/lazy', step: 'destroy', words: 'destroy_process_group (after a lazy init)' },
  { variant: 'abort', step: 'abort', words: 'abort of the default process group' },
];

/**
 * Where a c10d figure of `run` is said on the page besides its step table: "on the first page"
 * (a first-page line answered from c10d, labelled "(c10d)") and "in the verdict's c10d line" (the
 * verdict's `c10d-lifecycle` line), each only where that line writes the figure (`ms` words); else
 * "in the c10d step table only". Never a place that does not carry it (issue #28).
 */
function c10dPlaces(run: RunFile, words: string): string {
  const places: string[] = [];
  const safely = <T>(f: () => T[]): T[] => {
    try {
      return f();
    } catch {
      return [];
    }
  };
  if (safely(() => firstPageSummary(run)).some((l) => l.label.endsWith('(c10d)') && l.text.includes(words))) places.push('on the first page');
  if (safely(() => deriveVerdict(run)).some((l) => l.id === 'c10d-lifecycle' && l.text.includes(words))) places.push("in the verdict's c10d line");
  return places.length > 0 ? places.join(' and ') : 'in the c10d step table only';
}

/**
 * What the runs measured of c10d instead, for a chart with no NCCL bar: "; its c10d figures
 * (init_process_group(device_id) to its first all_reduce 186 ms, on the first page; …) are of
 * torch's calls, not <what>", each figure with where it is said ({@link c10dPlaces}); at 1 rank
 * split_group is named a one-rank child. Empty when no run has any.
 */
function c10dNote(runs: readonly StudyRun[], figures: readonly C10dFigure[], what: string): string {
  const found = runs.flatMap((r) =>
    figures.flatMap((f) => {
      const st = stepStats(r.run, 'c10d', f.variant, f.step);
      if (!st) return [];
      const one = f.variant === 'split_group' && r.run.ranks === 1 ? ', a one-rank child' : '';
      return [`${f.words}${who(runs, r)} ${msWords(st.median)}${one}, ${c10dPlaces(r.run, msWords(st.median))}`];
    }),
  );
  if (found.length === 0) return '';
  return `; ${runs.length === 1 ? 'its' : 'their'} c10d figures (${found.join('; ')}) are of torch's calls, not ${what}`;
}

/**
 * The note under Figure 2 where a run's switch inside its pool goes to a one-rank child: the
 * study's swap (STUDY_FIGURES.poolSwitch) is not drawn beside it, as the verdict does not set them
 * side by side (a one-rank child's collective has no peer).
 * @param whose "this run's" or "run B's".
 */
function swapNotDrawnNote(whose: string): string {
  const f = STUDY_FIGURES.poolSwitch;
  return `The study's swap inside the pool (${f.written}, ${f.host.text}) is not drawn: ${whose} switch is to a one-rank child, whose collective has no peer; the dotted line is ${whose} own figure, not the study's (study: ${f.measurement}, in ${f.document}).`;
}
