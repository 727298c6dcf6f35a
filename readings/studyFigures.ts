/**
 * The study's published figures: the one table of them in product code. The verdict
 * (readings/verdict/*) sets a run's own figures beside these and says whether the host agrees or
 * differs (rules in readings/verdict/agreement.ts, documented in docs/METHOD.md, "The verdict").
 * No other file may hold a figure of the study.
 *
 * Source of every entry: the study's text (shared/study/where-communicator-rebuild-actually-costs.txt,
 * "Where Communicator Rebuild Actually Costs", 2026); the design brief's "Figures from the study"
 * lists them by setting and yields to the text. Each entry carries the setting the text gives that
 * figure (GPUs, nodes, NCCL and torch versions, what it includes) and no more: where the text gives
 * none, the setting says "not stated". The figures and settings are reproduced in docs/METHOD.md,
 * "The study's figures", which every sentence cites; test/unit/studyAttribution.test.ts checks
 * both against the study's text. The study's sentences are never copied here or shown as quotes.
 * How far a figure of other hardware may stand from the study's and still be read as agreeing is
 * commcost's rule, not the study's (agreement.ts).
 */

/** The setting the study gives a figure: where and on what it was measured, in the study's terms. */
export interface StudyHost {
  /** The setting as the study gives it, e.g. "4× A40 PCIe, one node, NCCL 2.32.3". */
  text: string;
  /** The fewest ranks of the study's communicators in that setting (0: no communicator). */
  ranks: number;
  /** Those ranks in words, for "the study's had …": "4 ranks", "2–8 GPUs", "several GPUs (count not stated)". */
  ranksText: string;
  /** True when the setting includes ranks spanning several hosts. */
  acrossNodes: boolean;
  /**
   * True when the setting is across nodes only (over InfiniBand): a run on one host has other
   * transports than the study's there, so its figures are set beside these, never judged
   * against them (agreement.ts studySentence, {@link studyNotComparedWhy}).
   */
  acrossNodesOnly?: boolean;
}

/** One node of four A40s over PCIe with NCCL 2.32.3: init, split, shrink, grow, splitShare. */
export const STUDY_A40: StudyHost = { text: '4× A40 PCIe, one node, NCCL 2.32.3', ranks: 4, ranksText: '4 ranks', acrossNodes: false };
/** The same four A40s where the study gives no NCCL version for the figure (the pool, the drain). */
export const STUDY_A40_UNVERSIONED: StudyHost = {
  text: '4× A40 PCIe, one node, NCCL version not stated',
  ranks: 4,
  ranksText: '4 ranks',
  acrossNodes: false,
};
/** Two nodes of four V100s over InfiniBand: the rebuild comparison across nodes. */
export const STUDY_V100_NODES: StudyHost = {
  text: '2 nodes × 4 V100 over InfiniBand, NCCL version not stated',
  ranks: 8,
  ranksText: '8 ranks',
  acrossNodes: true,
  acrossNodesOnly: true,
};
/** Every configuration of the study's teardown figure (its Figure 3). */
export const STUDY_ALL_CONFIGS: StudyHost = {
  text: 'NCCL 2.28.9 and 2.32.3, A40 and V100, one node and across nodes, 2–8 GPUs',
  ranks: 2,
  ranksText: '2–8 GPUs',
  acrossNodes: true,
};
/** Finalize + destroy across the same configurations, whose low end the study places on eight V100s across nodes. */
export const STUDY_DESTROY_CONFIGS: StudyHost = {
  ...STUDY_ALL_CONFIGS,
  text: 'NCCL 2.28.9 and 2.32.3, A40 and V100, one node and across nodes, 2–8 GPUs; the 156 ms low end on 2 nodes × 4 V100',
};
/** Revoke: on A40, the configuration not stated. */
export const STUDY_A40_REVOKE: StudyHost = {
  text: 'A40, configuration not stated',
  ranks: 2,
  ranksText: 'several GPUs (count not stated)',
  acrossNodes: true,
};
/** c10d on A40: torch 2.11 with the A40 image's NCCL 2.28.9. */
export const STUDY_C10D_A40: StudyHost = {
  text: "A40, torch 2.11 with the image's NCCL 2.28.9, GPU count and nodes not stated",
  ranks: 2,
  ranksText: 'several GPUs (count not stated)',
  acrossNodes: true,
};
/** The cold/warm anchor: A40s across InfiniBand; the cold figure includes the process's first CUDA and library initialisation. */
export const STUDY_A40_IB_COLD: StudyHost = {
  text: 'A40 across InfiniBand, GPU count and NCCL version not stated',
  ranks: 2,
  ranksText: 'several GPUs across nodes (count not stated)',
  acrossNodes: true,
  acrossNodesOnly: true,
};
/** The warm figure beside it: the same class of cross-node A40. */
export const STUDY_A40_CROSS_WARM: StudyHost = {
  text: "cross-node A40, the same class as the cold figure's, GPU count and NCCL version not stated",
  ranks: 2,
  ranksText: 'several GPUs across nodes (count not stated)',
  acrossNodes: true,
  acrossNodesOnly: true,
};
/** The migration pause: a request handed between two single-GPU engines, an earlier experiment; no GPU setting, no communicator. */
export const STUDY_MIGRATION: StudyHost = {
  text: 'an earlier experiment, a request handed between two single-GPU engines, GPU not stated',
  ranks: 0,
  ranksText: 'no communicator',
  acrossNodes: true,
};
/** The study's estimate for eight GPUs, extrapolated from its 4× A40 pool: not a measurement. */
export const STUDY_ESTIMATE_8: StudyHost = {
  text: "the study's estimate for 8 GPUs from its 4× A40 pool, not measured",
  ranks: 8,
  ranksText: '8 GPUs',
  acrossNodes: false,
};

/** One published figure: a value (`min` = `max`) or a range, in ms or bytes. */
export interface StudyFigure {
  /** What was measured, in the field's words. */
  what: string;
  unit: 'ms' | 'bytes';
  min: number;
  max: number;
  /** How the study wrote it, e.g. "464 MB" (shown as written; MB read as 10^6 bytes). */
  written: string;
  /** The setting the study gives this figure. */
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
    STUDY_A40_UNVERSIONED,
  ),
  splitShare1ToFirst: fig('split with splitShare 1 to first collective', 78, 78, '78 ms', 'splitShare=1 vs 0', STUDY_A40_UNVERSIONED),
  splitShare0ToFirst: fig('split with splitShare 0 to first collective', 81, 81, '81 ms', 'splitShare=1 vs 0', STUDY_A40_UNVERSIONED),
  shrinkToFirst: fig(
    'shrink to first collective',
    64,
    64,
    '64 ms',
    'rebuild comparison, each + first collective',
    STUDY_A40_UNVERSIONED,
  ),
  growToFirst: fig(
    'grow to first collective',
    78,
    78,
    '78 ms',
    'rebuild comparison, each + first collective',
    STUDY_A40_UNVERSIONED,
  ),
  freshToFirst: fig(
    'fresh init to first collective',
    92,
    92,
    '92 ms',
    'rebuild comparison, each + first collective',
    STUDY_A40_UNVERSIONED,
  ),
  nodesShrinkToFirst: fig('shrink to first collective', 180, 180, '180 ms', 'rebuild comparison across nodes', STUDY_V100_NODES),
  nodesGrowToFirst: fig('grow to first collective', 175, 175, '175 ms', 'rebuild comparison across nodes', STUDY_V100_NODES),
  nodesFreshToFirst: fig('fresh init to first collective', 184, 184, '184 ms', 'rebuild comparison across nodes', STUDY_V100_NODES),
  abort: fig('ncclCommAbort', 485, 534, '485–534 ms', 'abort', STUDY_ALL_CONFIGS),
  revoke: fig('ncclCommRevoke until quiet', 499, 502, '499–502 ms', 'revoke', STUDY_A40_REVOKE),
  destroy: fig('ncclCommFinalize + ncclCommDestroy', 160, 430, '0.16–0.43 s', 'finalize + destroy', STUDY_DESTROY_CONFIGS),
  c10dDestroy: fig('destroy_process_group', 940, 960, '0.94–0.96 s', 'c10d destroy_process_group', STUDY_C10D_A40),
  poolBytes: fig(
    'a pool of every TP shape, per GPU',
    464e6,
    464e6,
    '464 MB (TP4 + 2×TP2 + 4×TP1)',
    'pool TP4 + 2×TP2 + 4×TP1',
    STUDY_A40_UNVERSIONED,
    'bytes',
  ),
  tp2ChildBytes: fig('one TP2 child, per GPU', 76e6, 76e6, '~76 MB', 'pool: one TP2 child', STUDY_A40_UNVERSIONED, 'bytes'),
  steadyChild: fig('64 MB allreduce on a split child', 3.273, 3.273, '3.273 ms', '64 MB allreduce on a child vs a fresh communicator', STUDY_A40_UNVERSIONED),
  steadyFresh: fig(
    '64 MB allreduce on a fresh communicator',
    3.272,
    3.272,
    '3.272 ms',
    '64 MB allreduce on a child vs a fresh communicator',
    STUDY_A40_UNVERSIONED,
  ),
  poolSwitch: fig(
    'switch inside the pool (collective + CUDA Graph capture and instantiation)',
    0.48,
    0.48,
    '≈ 0.2 ms collective + 0.28 ms capturing and instantiating one allreduce in a CUDA Graph',
    'switch inside the pool',
    STUDY_A40_UNVERSIONED,
  ),
  coldToFirst: fig(
    "a cold process's first init to first collective, with its first CUDA and library initialisation",
    493,
    523,
    '493–523 ms',
    'cold vs warm process: first init + first collective',
    STUDY_A40_IB_COLD,
  ),
  warmToFirst: fig('a warm process: init to first collective', 98, 98, '98 ms', 'cold vs warm process: first init + first collective', STUDY_A40_CROSS_WARM),
  drain: fig('until quiet with four 16–256 MB allreduces in flight', 7, 112, '7–112 ms', 'drain of four in-flight 16–256 MB messages', STUDY_A40_UNVERSIONED),
  // The study's anchor and summaries, used by readings/plan/ and the study charts.
  migrationPause: {
    what: 'a request-migration pause (median)',
    unit: 'ms',
    min: 69,
    max: 69,
    written: '69 ms',
    host: STUDY_MIGRATION,
    source: `migration pause, the reference line of the study's Figure 2 (${SECTION})`,
    measurement: "migration pause, the reference line of the study's Figure 2",
    document: SECTION,
  },
  abortFloor: {
    what: 'the floor abort and revoke sit on',
    unit: 'ms',
    min: 500,
    max: 500,
    written: '~0.5 s',
    host: STUDY_ALL_CONFIGS,
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
    host: STUDY_ESTIMATE_8,
    source: `estimate of a pool at 8 GPUs: ~15 shapes, ~1 GB (${SECTION})`,
    measurement: 'estimate of a pool at 8 GPUs: ~15 shapes, ~1 GB',
    document: SECTION,
  },
} as const satisfies Record<string, StudyFigure>;

export type StudyFigureKey = keyof typeof STUDY_FIGURES;

/** Allreduces in flight in the study's drain ({@link STUDY_FIGURES}.drain: four in-flight messages of 16–256 MB). */
export const STUDY_DRAIN_IN_FLIGHT = 4;

/**
 * The makeup of the study's pool ({@link STUDY_FIGURES}.poolBytes): its TP shapes, largest first,
 * on 4 GPUs, built without sharing (the parent's splitShare 0): a TP4 parent, 2×TP2 and 4×TP1.
 */
export const STUDY_POOL_SHAPES: readonly number[] = [4, 2, 1];

/**
 * A pool's makeup in words, from its TP shapes largest first (the largest spans every GPU of the
 * pool): [4, 2, 1] → "TP4 + 2×TP2 + 4×TP1 on 4 GPUs", [2, 1] → "TP2 + 2×TP1 on 2 GPUs".
 */
export function poolMakeup(shapes: readonly number[]): string {
  const gpus = shapes[0] ?? 0;
  const parts = shapes.map((s) => (gpus / s > 1 ? `${gpus / s}×TP${s}` : `TP${s}`));
  return `${parts.join(' + ')} on ${gpus} GPU${gpus === 1 ? '' : 's'}`;
}

/**
 * Why a pool of `shapes` (TP shapes, largest first, splitShare 0) is not set beside the study's
 * pool memory, or undefined when it is made as the study's was ({@link STUDY_POOL_SHAPES}): a pool
 * of other shapes holds other communicators, so its memory is another quantity. "the pools are
 * made differently: here TP2 + 2×TP1 on 2 GPUs, the study's TP4 + 2×TP2 + 4×TP1 on 4 GPUs".
 */
export function poolMakeupDiffers(shapes: readonly number[]): string | undefined {
  const same = shapes.length === STUDY_POOL_SHAPES.length && shapes.every((s, i) => s === STUDY_POOL_SHAPES[i]);
  return same ? undefined : `the pools are made differently: here ${poolMakeup(shapes)}, the study's ${poolMakeup(STUDY_POOL_SHAPES)}`;
}

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

/** Why a run on one host is not judged against a study figure measured across nodes only. */
export const TRANSPORTS_DIFFER = 'the transports differ';

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
 * - a run on one host against a study figure measured across nodes only (over InfiniBand): "the
 *   transports differ: the study's <subject> was measured across nodes, this run on one host";
 * - a simulated run: "simulated figures are not measurements".
 * @param subject what the study measured, in a few words ("teardown", "migration pause").
 */
export function studyNotComparedWhy(f: StudyFigure, run: StudyRegime, subject: string): string | undefined {
  if (run.ranks < 2 && f.host.ranks >= 2) return `a communicator of 1 rank has no peer, the study's had ${f.host.ranksText}`;
  if (run.nodes > 1 && !f.host.acrossNodes) return `this run spans ${run.nodes} hosts, the study's ${subject} was measured on one`;
  if (run.nodes <= 1 && f.host.acrossNodesOnly) return `${TRANSPORTS_DIFFER}: the study's ${subject} was measured across nodes, this run on one host`;
  if (run.simulated) return 'simulated figures are not measurements';
  return undefined;
}

/**
 * The note under a chart that draws the study's figure `f` beside a run's bars that
 * {@link studyNotComparedWhy} says are not compared with it: "The study's floor (~0.5 s, 4× A40
 * PCIe, one node, NCCL 2.32.3) is shown for reference, not compared with this run: <why> (study: <its
 * measurement>, in <where quoted>)." Used by the study charts and the Plan chart.
 * @param line the line's name ("floor", "migration pause"); `whom` "this run" or "run B (…)".
 */
export function studyReferenceNote(f: StudyFigure, line: string, whom: string, why: string): string {
  return `The study's ${line} (${f.written}, ${f.host.text}) is shown for reference, not compared with ${whom}: ${why} (study: ${f.measurement}, in ${f.document}).`;
}

/**
 * The note in place of a study line that a chart does not draw because every run it would stand
 * beside is simulated: simulated figures are not measurements, so no study line is drawn against
 * them (issue #28). "The study's migration pause (69 ms, <setting>) is not drawn: this run's
 * figures are simulated, not measurements (study: <its measurement>, in <where quoted>)."
 * @param whom "this run's figures" or "these runs' figures".
 */
export function studyNotDrawnNote(f: StudyFigure, line: string, whom: string): string {
  return `The study's ${line} (${f.written}, ${f.host.text}) is not drawn: ${whom} are simulated, not measurements (study: ${f.measurement}, in ${f.document}).`;
}

/**
 * Why a run's split is not set beside the study's split figures (its first-collective share, split
 * against a fresh init, splitShare 1 against 0), or undefined when it is made as the study's was:
 * a split in half of a parent of at least the study's ranks (the study split 4 ranks in half and
 * set each 2-rank child against a fresh init of 4 ranks). A split that keeps the parent's ranks
 * (`whole`, the headline below 4 ranks) sets a child of the parent's shape against a fresh init of
 * that shape, and a shared child reuses every connection: another quantity, so the study's figures
 * are named with both settings, never judged (issue #28). At 1 rank there is no peer to connect to.
 * @param ranks the run's world size (the parent's ranks); `halves` true for a `halves/…` split
 *   variant; `childRanks` the ranks of the child on the critical path; `fresh` false when the run
 *   has no fresh init to set its split against (its setting then says none).
 */
export function splitNotComparedWhy(ranks: number, halves: boolean, childRanks: number, fresh = true): string | undefined {
  const studyParent = STUDY_FIGURES.splitToFirst.host.ranks;
  if (halves && ranks >= studyParent) return undefined;
  const r = (n: number): string => `${n} rank${n === 1 ? '' : 's'}`;
  if (ranks < 2) return `a communicator of 1 rank has no peer to connect to; the study split ${STUDY_FIGURES.splitToFirst.host.ranksText} in half`;
  const shape = halves
    ? `the split here halves a parent of ${r(ranks)}`
    : `the split here keeps the parent's ${r(ranks)}, a child of the same shape as its parent`;
  const studyChild = Math.ceil(studyParent / 2);
  return (
    `${shape}; the study split ${STUDY_FIGURES.splitToFirst.host.ranksText} in half: ` +
    `here a ${childRanks}-rank child of a ${ranks}-rank parent${fresh ? `, set against a ${ranks}-rank fresh init` : ''}; ` +
    `the study's a ${studyChild}-rank child of a ${studyParent}-rank parent, set against a ${studyParent}-rank fresh init`
  );
}
