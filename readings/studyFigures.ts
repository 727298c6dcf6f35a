/**
 * The study's published figures: the one table of them in product code. The verdict
 * (readings/verdict/*) sets a run's own figures beside these and says whether the host agrees or
 * differs (rules in readings/verdict/agreement.ts, documented in docs/METHOD.md, "The verdict").
 * No other file may hold a figure of the study.
 *
 * Source of every entry: the design brief's section "Figures from the study", which quotes the
 * study (and, for the planner's three, its "Plan a reshape" brief); both are reproduced in
 * docs/METHOD.md, "The study's figures", which every sentence cites. Each entry names the
 * measurement of the study it comes from. Hardware is 4× NVIDIA A40 over PCIe
 * with NCCL 2.32.3 unless an entry names another host. The study's own warning applies to every
 * comparison: "on other hardware expect the same orders of magnitude, not the same values".
 */

/** A host the study measured on. */
export interface StudyHost {
  /** e.g. "4× A40 PCIe, NCCL 2.32.3". */
  text: string;
  /** World size of the study's communicators on that host. */
  ranks: number;
  /** True when the study's ranks spanned several hosts. */
  acrossNodes: boolean;
}

export const STUDY_A40: StudyHost = { text: '4× A40 PCIe, NCCL 2.32.3', ranks: 4, acrossNodes: false };
export const STUDY_V100_NODES: StudyHost = { text: '8× V100 across nodes, NCCL 2.32.3', ranks: 8, acrossNodes: true };

/** One published figure: a value (`min` = `max`) or a range, in ms or bytes. */
export interface StudyFigure {
  /** What was measured, in the field's words. */
  what: string;
  unit: 'ms' | 'bytes';
  min: number;
  max: number;
  /** How the study wrote it, e.g. "464 MB" (shown as written; MB read as 10^6 bytes). */
  written: string;
  host: StudyHost;
  /** The measurement of the study it comes from, and where it is quoted: `${measurement} (${document})`. */
  source: string;
  /** The measurement of the study it comes from, in a few words, e.g. "init + first 1 MB allreduce". */
  measurement: string;
  /** Where the study's figure is quoted in the repository: 'docs/METHOD.md "The study's figures"'. */
  document: string;
}

/** Where every figure below is quoted in the repository: the table there is kept equal to this file by a unit test. */
const SECTION = 'docs/METHOD.md "The study\'s figures"';
const PLAN_ISSUE = SECTION;

function fig(
  what: string,
  min: number,
  max: number,
  written: string,
  source: string,
  host: StudyHost = STUDY_A40,
  unit: 'ms' | 'bytes' = 'ms',
): StudyFigure {
  return { what, unit, min, max, written, host, source: `${source} (${SECTION})`, measurement: source, document: SECTION };
}

/** Every figure of the study the verdict compares with, by key. */
export const STUDY_FIGURES = {
  initCall: fig('ncclCommInitRank(Config)', 43, 43, '43 ms', 'init'),
  initToFirst: fig('init to the first 1 MB allreduce', 92, 92, '92 ms', 'init + first 1 MB allreduce'),
  splitCall: fig('ncclCommSplit', 23, 23, '23 ms', 'split + first allreduce'),
  splitFirst: fig('first allreduce on a split child', 54.5, 54.5, '54.5 ms', 'split + first allreduce'),
  splitToFirst: fig(
    'split to first collective',
    81,
    81,
    '81 ms',
    'rebuild comparison, each + first collective',
  ),
  splitShare1ToFirst: fig('split with splitShare 1 to first collective', 78, 78, '78 ms', 'splitShare=1 vs 0'),
  splitShare0ToFirst: fig('split with splitShare 0 to first collective', 81, 81, '81 ms', 'splitShare=1 vs 0'),
  shrinkToFirst: fig(
    'shrink to first collective',
    64,
    64,
    '64 ms',
    'rebuild comparison, each + first collective',
  ),
  growToFirst: fig(
    'grow to first collective',
    78,
    78,
    '78 ms',
    'rebuild comparison, each + first collective',
  ),
  freshToFirst: fig(
    'fresh init to first collective',
    92,
    92,
    '92 ms',
    'rebuild comparison, each + first collective',
  ),
  nodesShrinkToFirst: fig('shrink to first collective', 180, 180, '180 ms', 'rebuild comparison across nodes', STUDY_V100_NODES),
  nodesGrowToFirst: fig('grow to first collective', 175, 175, '175 ms', 'rebuild comparison across nodes', STUDY_V100_NODES),
  nodesFreshToFirst: fig('fresh init to first collective', 184, 184, '184 ms', 'rebuild comparison across nodes', STUDY_V100_NODES),
  abort: fig('ncclCommAbort', 485, 534, '485–534 ms', 'abort'),
  revoke: fig('ncclCommRevoke until quiet', 499, 502, '499–502 ms', 'revoke'),
  destroy: fig('ncclCommFinalize + ncclCommDestroy', 160, 430, '0.16–0.43 s', 'finalize + destroy'),
  c10dDestroy: fig('destroy_process_group', 940, 960, '0.94–0.96 s', 'c10d destroy_process_group'),
  poolBytes: fig(
    'a pool of every TP shape, per GPU',
    464e6,
    464e6,
    '464 MB (TP4 + 2×TP2 + 4×TP1)',
    'pool TP4 + 2×TP2 + 4×TP1',
    STUDY_A40,
    'bytes',
  ),
  tp2ChildBytes: fig('one TP2 child, per GPU', 76e6, 76e6, '~76 MB', 'pool: one TP2 child', STUDY_A40, 'bytes'),
  steadyChild: fig('64 MB allreduce on a split child', 3.273, 3.273, '3.273 ms', '64 MB allreduce on a child vs a fresh communicator'),
  steadyFresh: fig(
    '64 MB allreduce on a fresh communicator',
    3.272,
    3.272,
    '3.272 ms',
    '64 MB allreduce on a child vs a fresh communicator',
  ),
  poolSwitch: fig(
    'switch inside the pool (collective + graph capture)',
    0.48,
    0.48,
    '≈ 0.2 ms collective + 0.28 ms graph capture',
    'switch inside the pool',
  ),
  coldToFirst: fig(
    "a fresh process's first init to first collective",
    493,
    523,
    '493–523 ms',
    'cold vs warm process: first init + first collective',
  ),
  warmToFirst: fig('a warm process: init to first collective', 98, 98, '98 ms', 'cold vs warm process: first init + first collective'),
  drain: fig('until quiet with four 16–256 MB allreduces in flight', 7, 112, '7–112 ms', 'drain of four in-flight 16–256 MB messages'),
  // The study's derived results, quoted by the "Plan a reshape" brief; used by readings/plan/.
  migrationPause: {
    what: 'a live migration pause',
    unit: 'ms',
    min: 69,
    max: 69,
    written: '69 ms',
    host: STUDY_A40,
    source: `migration pause, the reference line of the study's Figure 2 (${PLAN_ISSUE})`,
    measurement: "migration pause, the reference line of the study's Figure 2",
    document: PLAN_ISSUE,
  },
  abortFloor: {
    what: 'the floor abort and revoke sit on',
    unit: 'ms',
    min: 500,
    max: 500,
    written: '~0.5 s',
    host: STUDY_A40,
    source:
      `the floor abort and revoke sit on: the study's summary of abort 485–534 ms and revoke 499–502 ms, the 500 ms floor of its Figure 3 (${SECTION})`,
    measurement: "the study's summary of abort 485–534 ms and revoke 499–502 ms; the 500 ms floor of its Figure 3",
    document: SECTION,
  },
  pool8Bytes: {
    what: 'a pool of every TP shape at 8 GPUs, per GPU (the study\'s estimate)',
    unit: 'bytes',
    min: 1e9,
    max: 1e9,
    written: '~1 GB',
    host: STUDY_A40,
    source: `estimate of a pool at 8 GPUs: ~15 shapes, ~1 GB (${PLAN_ISSUE})`,
    measurement: 'estimate of a pool at 8 GPUs: ~15 shapes, ~1 GB',
    document: PLAN_ISSUE,
  },
} as const satisfies Record<string, StudyFigure>;

export type StudyFigureKey = keyof typeof STUDY_FIGURES;

/**
 * The study's estimate of a pool of every TP shape at 8 GPUs, as a count: "~15 shapes" (TP8 +
 * 2×TP4 + 4×TP2 + 8×TP1 = 15 communicators over the node) and "~1 GB" per GPU
 * ({@link STUDY_FIGURES}.pool8Bytes). Estimated by the study from its 4-GPU pool, not measured.
 */
export const STUDY_POOL_ESTIMATE = {
  gpus: 8,
  communicators: 15,
  writtenCount: '~15 shapes',
  bytes: STUDY_FIGURES.pool8Bytes,
  source: `estimate of a pool at 8 GPUs: ~15 shapes, ~1 GB (${SECTION})`,
} as const;

/**
 * A share the study did not publish as a share: derived by commcost from two of its figures
 * (e.g. the first collective's share of init to first collective, (92 − 43) of 92 ms). Shown as
 * derived, with the published figures it comes from, never as a figure of the study.
 */
export interface StudyShare {
  /** The part and the whole, in ms, as derived. */
  part: number;
  total: number;
  /** How it was derived, in the study's written figures, e.g. "from its 43 ms init and 92 ms init + first 1 MB allreduce". */
  derivation: string;
  /** The published figures it is derived from (their sources are the share's). */
  from: readonly StudyFigure[];
  host: StudyHost;
}

const F = STUDY_FIGURES;

/** The shares the verdict sets beside a run's, each derived from two published figures. */
export const STUDY_SHARES = {
  /** The first collective's share of init to the first 1 MB allreduce: (92 − 43) of 92 ms. */
  initFirst: {
    part: F.initToFirst.min - F.initCall.min,
    total: F.initToFirst.min,
    derivation: `from its ${F.initCall.written} init and ${F.initToFirst.written} init + first 1 MB allreduce`,
    from: [F.initCall, F.initToFirst],
    host: F.initToFirst.host,
  },
  /** The first allreduce's share of split to first allreduce: 54.5 of (23 + 54.5) ms. */
  splitFirst: {
    part: F.splitFirst.min,
    total: F.splitCall.min + F.splitFirst.min,
    derivation: `from its ${F.splitCall.written} split and ${F.splitFirst.written} first allreduce`,
    from: [F.splitCall, F.splitFirst],
    host: F.splitFirst.host,
  },
} as const satisfies Record<string, StudyShare>;

/** What {@link studyNotComparedWhy} reads of a run: its ranks, the hosts they spanned, simulated or not. */
export interface StudyRegime {
  /** World size of the run's communicators. */
  ranks: number;
  /** Hosts the ranks spanned (the run's `nodes`; 1 for one host). */
  nodes: number;
  /** True for a run on commcost's simulated NCCL; absent or false for a measured run. */
  simulated?: boolean;
}

/**
 * Why the study's figure `f` is named beside a run's figures but not compared with them, or
 * undefined when it is compared. One rule for the verdict (readings/verdict/lifecycle.ts, the
 * teardown floors; agreement.ts studySentence for simulated runs) and the study charts
 * (webview/studyChartsData.ts, the notes under Figures 2 and 3), checked in this order:
 * - a run of 1 rank against a study figure of several ranks: "a communicator of 1 rank has no
 *   peer, the study's had 4 ranks";
 * - a run over several hosts against a study figure of one host: "this run spans 2 hosts, the
 *   study's <subject> was measured on one";
 * - a simulated run: "simulated figures are not measurements".
 * @param subject what the study measured, in a few words ("teardown", "migration pause").
 */
export function studyNotComparedWhy(f: StudyFigure, run: StudyRegime, subject: string): string | undefined {
  if (run.ranks < 2 && f.host.ranks >= 2) return `a communicator of 1 rank has no peer, the study's had ${f.host.ranks} ranks`;
  if (run.nodes > 1 && !f.host.acrossNodes) return `this run spans ${run.nodes} hosts, the study's ${subject} was measured on one`;
  if (run.simulated) return 'simulated figures are not measurements';
  return undefined;
}

/**
 * The note under a chart that draws the study's figure `f` beside a run's bars that
 * {@link studyNotComparedWhy} says are not compared with it: "The study's floor (~0.5 s, 4× A40
 * PCIe, NCCL 2.32.3) is shown for reference, not compared with this run: <why> (study: <its
 * measurement>, in <where quoted>)." Used by the study charts and the Plan chart.
 * @param line the line's name ("floor", "migration pause"); `whom` "this run" or "run B (…)".
 */
export function studyReferenceNote(f: StudyFigure, line: string, whom: string, why: string): string {
  return `The study's ${line} (${f.written}, ${f.host.text}) is shown for reference, not compared with ${whom}: ${why} (study: ${f.measurement}, in ${f.document}).`;
}
