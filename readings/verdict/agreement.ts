/**
 * The verdict's regimes and its rules for agreeing with the study (docs/METHOD.md, "The
 * verdict"). Pure: every input is a figure of the run (ms or bytes, medians) or of
 * readings/studyFigures.ts.
 *
 * The agree/differ rule, one tolerance per kind of comparison (docs/METHOD.md, "The verdict"):
 * - a time or a size of the run against the study's figure agrees when their ratio is within
 *   {@link ORDER_BAND} (√10, half an order of magnitude) either way: the hardware differs, and
 *   commcost's rule (not the study's words) is to expect the same order of magnitude on other
 *   hardware, not the same value;
 * - a ratio of two figures of the run (split against a fresh init, cold against warm, …) against
 *   the same ratio in the study agrees when the two ratios are within {@link RATIO_FACTOR} of each
 *   other either way, on a log scale (|ln(here / study)| ≤ ln 2): a ratio of one host cancels most
 *   of its hardware's speed, so its band is narrower; 0.88× against 0.0000029× differs;
 * - a share (a part of a total) against the study's share agrees when the two are at most
 *   {@link SHARE_POINTS} points (of 100) apart, in absolute points, whichever side of half each
 *   is: 53% against 50% agrees (3 points apart), 53% against 82% differs (29 points apart).
 * A boundary value (exactly √10, 2× or 20 points) agrees.
 *
 * Every judgement prints its band ("within commcost's 0.5–2× band"). Inside the band a time, a
 * size or a ratio at least {@link CLOSE_FACTOR} from the study's (1.5× or more apart, on the log
 * scale, to the nearer end of a range) reads "same order as the study", never "agrees": the band is
 * about order of magnitude, and 1.8× the study's value is not agreement. A figure outside the
 * study's range (0.508 s against 0.16–0.43 s) also reads "same order as the study": a reader takes
 * "agrees" with a range for inside it. A share is judged in points only.
 */
import { PRACTICAL_FLOOR_MS } from '../../protocol/compare';
import { STUDY_SHARES, TRANSPORTS_DIFFER, type StudyFigure, type StudyHost, type StudyShare } from '../studyFigures';
import { bytes, fewIterationsNote, isBelowTimer, isNoMemory, ms, msAll, num, pct, seconds, times } from './format';

/** A part (e.g. the first collective) is negligible when it is at most this share of its total… */
export const NEGLIGIBLE_SHARE = 0.05;
/** …and at most this many ms. Both must hold: 50 ms of a 2 s total is not negligible. */
export const NEGLIGIBLE_MS = 1;

/** Where most of a total lies: in the part (majority), not (minority), or the part is negligible. */
export type ShareRegime = 'negligible' | 'minority' | 'majority';

/**
 * The regime of `part` in `total` (ms): negligible when part ≤ NEGLIGIBLE_MS and part ≤
 * NEGLIGIBLE_SHARE × total; majority when part > total / 2; minority otherwise.
 */
export function shareRegime(part: number, total: number): ShareRegime {
  if (part <= NEGLIGIBLE_MS && part <= NEGLIGIBLE_SHARE * total) return 'negligible';
  return total > 0 && part > total / 2 ? 'majority' : 'minority';
}

/** Two figures of one run are "about the same" when their ratio is within this factor… */
export const SAME_FACTOR = 1.1;
/**
 * …or when they are less than this many ms apart: the comparison's practical floor
 * (protocol/compare.ts PRACTICAL_FLOOR_MS; docs/METHOD.md, "Comparing runs"), so a µs-level step
 * (0.0021 vs 0.00019 ms) is never read as cheaper or costlier.
 */
export const SAME_FLOOR_MS = PRACTICAL_FLOOR_MS;

/**
 * How `a` compares with `b`: lower, about the same (within SAME_FACTOR, or for times in ms less
 * than SAME_FLOOR_MS apart), higher. A figure below 0 counts as 0.
 * @param unit 'ms' (default) applies the absolute floor; 'bytes' compares by ratio only.
 */
export type Relation = 'lower' | 'same' | 'higher';
export function relation(a: number, b: number, unit: 'ms' | 'bytes' = 'ms'): Relation {
  // A figure below 0 (a damaged file) reads 0 like every figure at or below the timer's
  // resolution (format.ts isBelowTimer): -643 ms against -187 ms is not "lower".
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  if (unit === 'ms' && Math.abs(a - b) < SAME_FLOOR_MS) return 'same';
  if (a * SAME_FACTOR < b) return 'lower';
  if (a > b * SAME_FACTOR) return 'higher';
  return 'same';
}

/** "costs less than" / "costs about the same as" / "costs more than". */
export function costWords(r: Relation): string {
  return r === 'lower' ? 'costs less than' : r === 'same' ? 'costs about the same as' : 'costs more than';
}

/**
 * {@link costWords} of `a` against `b` (ms), except where only the absolute floor made them "the
 * same" (0.00079 vs 0.000096 ms: 8× apart, 0.0007 ms apart): "is within 0.05 ms (commcost's floor
 * for a difference) of", never "about the same as" for figures several times apart.
 */
export function costWordsOf(a: number, b: number): string {
  const r = relation(a, b);
  const byFloorOnly = r === 'same' && relation(a, b, 'bytes') !== 'same';
  return byFloorOnly ? `is within ${SAME_FLOOR_MS} ms (commcost's floor for a difference) of` : costWords(r);
}

/** A time or a size agrees with the study's when within this factor of it: half an order of magnitude either way. */
export const ORDER_BAND = Math.sqrt(10);
/** {@link ORDER_BAND} in words: 1/√10 to √10, "0.32–3.2×". */
const ORDER_BAND_TEXT = '0.32–3.2×';
/** A ratio of two figures of the run agrees with the study's same ratio when within this factor of it, either way (log scale). */
export const RATIO_FACTOR = 2;
/** A share agrees when it is within this many points (of 100) of the study's, either way. */
export const SHARE_POINTS = 20;
/**
 * Inside a band, a figure or a ratio this far or more from the study's (either way) reads "same order
 * as the study" rather than "agrees".
 */
export const CLOSE_FACTOR = 1.5;
/** Slack for floating-point error at the boundaries of the three rules above. */
const EPSILON = 1e-9;

/** One comparison with the study, before the verdict word is added. */
export interface Clause {
  /** The study's host for this figure. */
  host: StudyHost;
  /** e.g. "init to first collective 92 ms vs 176 ms (1.9×)". */
  text: string;
  agrees: boolean;
  /** Said after the verdict word, e.g. "(29 points apart)". */
  detail?: string;
  /** The band the judgement used, e.g. "0.5–2×", "±20-point": printed with every judgement. */
  band?: string;
  /** How far apart the figures are, as a factor ≥ 1 (to the nearer end of a range; 1 inside): from {@link CLOSE_FACTOR} on, inside the band reads "same order as the study". */
  apart?: number;
  /** True when the study gives a range and the run's figure lies outside it: never "agrees" (a reader takes that for inside the range). */
  outsideRange?: boolean;
  /** Set when the figures cannot be judged (e.g. a zero figure makes no ratio): said instead of agrees/differs. */
  notJudged?: string;
  /** The study's published figures this clause uses: their sources are named once per sentence. */
  sources: readonly StudyFigure[];
}

/** Where the run's figures stand: the host's words, and whether they are measurements at all. */
export interface Here {
  host: string;
  simulated: boolean;
  /** Recorded iterations per step of the run (its options); below 3 a judgement is said to rest on that few. */
  iterations?: number;
  /**
   * Hosts the run's ranks spanned (its `nodes`; 1 or absent: one host). Across hosts a figure of
   * the study measured on one host is named, not judged ({@link studySentence}).
   */
  nodes?: number;
}

/**
 * The study's figure and the run's figures (in the unit of `f`: ms or bytes) written in one unit,
 * the unit the study wrote its figure in where it can be: "0.16–0.43 s" against 508 ms is "0.508 s",
 * "~76 MB" against 80 MiB is "84 MB" (the study's MB are 10^6 bytes). A time the study wrote in ms against a run's figure of 1 s or
 * more is written, with the study's, in seconds ("0.092 s vs 1.95 s"). Never two units in one comparison.
 */
export function sameUnit(f: StudyFigure, values: readonly number[]): { study: string; here: string[] } {
  if (f.unit === 'bytes') {
    const unit = /\d (MB|GB)\b/.exec(f.written)?.[1];
    if (unit === undefined) return { study: f.written, here: values.map(bytes) };
    const scale = unit === 'GB' ? 1e9 : 1e6;
    const write = (x: number): string => `${x / scale >= 10 ? Math.round(x / scale) : Number((x / scale).toPrecision(2))} ${unit}`;
    return { study: f.written, here: values.map(write) };
  }
  if (/\d s$/.test(f.written)) return { study: f.written, here: msAll(values, true) };
  if (!values.some((x) => x >= 999.5)) return { study: f.written, here: values.map(ms) };
  const study = f.min === f.max ? seconds(f.min) : `${seconds(f.min).replace(/ s$/, '')}–${seconds(f.max)}`;
  return { study, here: msAll(values, true) };
}

/** Why a figure of the run is not set against the study's: it reads 0 (a time below the timer's resolution, or no memory change). */
function zeroWords(x: number, f: StudyFigure): string | undefined {
  if (f.unit === 'bytes') return isNoMemory(x) ? 'no memory change measured here' : undefined;
  return isBelowTimer(x) ? "it reads 0 ms here, below the timer's resolution" : undefined;
}

/**
 * A figure of the run against the study's: the ratio to the study's value, or to the nearest end
 * of its range (1 inside it); agrees when that ratio is within ORDER_BAND either way.
 * @param value the run's figure, in the unit of `f` (ms or bytes).
 */
export function figureClause(value: number, f: StudyFigure, name = f.what): Clause {
  const pair = sameUnit(f, [value]);
  // A figure that reads 0 makes no ratio: named, not judged, never divided by.
  const zero = zeroWords(value, f);
  if (zero !== undefined) return { host: f.host, text: `${name} ${pair.study} vs ${pair.here[0]}`, agrees: false, notJudged: zero, sources: [f] };
  const ref = value < f.min ? f.min : value > f.max ? f.max : undefined;
  const ratio = ref === undefined ? 1 : value / ref;
  const where =
    ref === undefined
      ? "inside the study's range"
      : f.min === f.max
        ? times(ratio)
        : `${times(ratio)} its ${ref === f.max ? 'upper' : 'lower'} end`;
  return {
    host: f.host,
    text: `${name} ${pair.study} vs ${pair.here[0]} (${where})`,
    agrees: Math.abs(Math.log(ratio)) <= Math.log(ORDER_BAND) + EPSILON,
    band: ORDER_BAND_TEXT,
    apart: Math.exp(Math.abs(Math.log(ratio))),
    ...(ref !== undefined && f.min !== f.max ? { outsideRange: true } : {}),
    sources: [f],
  };
}

/**
 * A range of the run's figures (lo…hi, e.g. a sweep over message sizes) against the study's
 * range, like with like: the run's lowest against the study's lowest (its lower end), the run's
 * highest against its highest (its upper end), each a ratio; agrees when both ratios are within
 * ORDER_BAND either way. Never one end of the run's against the other end of the study's.
 * @param lo the run's lowest figure, hi its highest, in the unit of `f`.
 */
export function rangeClause(lo: number, hi: number, f: StudyFigure, name = f.what): Clause {
  if (lo === hi) return figureClause(lo, f, name);
  const pair = sameUnit(f, [lo, hi]);
  const span = `${pair.here[0]!.replace(/ (ms|s|MB|GB|MiB|GiB)$/, (u) => (pair.here[1]!.endsWith(u) ? '' : u))}–${pair.here[1]}`;
  // An end that reads 0 makes no ratio: named, not judged, never divided by.
  const zero = zeroWords(Math.min(lo, hi), f);
  if (zero !== undefined) return { host: f.host, text: `${name} ${pair.study} vs ${span}`, agrees: false, notJudged: zero.replace(/^it reads/, 'its lowest reads'), sources: [f] };
  const low = lo / f.min;
  const high = hi / f.max;
  const end = (which: 'lower' | 'upper'): string => (f.min === f.max ? 'its value' : `its ${which} end`);
  const within = (r: number): boolean => Math.abs(Math.log(r)) <= Math.log(ORDER_BAND) + EPSILON;
  return {
    host: f.host,
    text: `${name} ${pair.study} vs ${span} (lowest ${times(low)} ${end('lower')}, highest ${times(high)} ${end('upper')})`,
    agrees: within(low) && within(high),
    band: ORDER_BAND_TEXT,
    apart: Math.max(Math.exp(Math.abs(Math.log(low))), Math.exp(Math.abs(Math.log(high)))),
    sources: [f],
  };
}

/**
 * The derived share of the study with this part and total (ms) on this host, if it is one of
 * {@link STUDY_SHARES}: how it was derived and from which published figures.
 */
function knownShare(studyPart: number, studyTotal: number, host: StudyHost): StudyShare | undefined {
  return Object.values(STUDY_SHARES).find(
    (x) => x.host === host && Math.abs(x.part - studyPart) < EPSILON && Math.abs(x.total - studyTotal) < EPSILON,
  );
}

/**
 * A share of the run (part of total, ms) against the study's (studyPart of studyTotal, ms):
 * agrees when the two shares are at most SHARE_POINTS points apart (absolute points, either side
 * of half). The detail says how many points apart, agreeing or not. The study published no share:
 * its share is said as derived by commcost, with the published figures it comes from (a share of
 * {@link STUDY_SHARES}; their sources are the clause's), never as "49 of 92 ms" as if quoted.
 */
export function shareClause(part: number, total: number, studyPart: number, studyTotal: number, host: StudyHost, name: string): Clause {
  return shareClauseOf(part, total, knownShare(studyPart, studyTotal, host) ?? { part: studyPart, total: studyTotal, derivation: '', from: [], host }, name);
}

/**
 * A share of the run (part of total = call + first, ms) against a derived share of the study
 * ({@link STUDY_SHARES}), by the rule of {@link shareClause}: "first collective's share 53%
 * (derived by commcost from its 43 ms init and 92 ms init + first 1 MB allreduce) vs 82% (of the
 * call + first collective, 31.9 + 144 ms)". The parts are given, not their sum: a line's total
 * is the median of its per-iteration totals, which the sum of the medians need not equal.
 */
export function shareClauseOf(part: number, total: number, study: StudyShare, name: string): Clause {
  const studyShare = study.part / study.total;
  const derived = study.derivation
    ? `derived by commcost ${study.derivation}`
    : `derived by commcost from the study's figures: ${num(study.part)} of ${num(study.total)} ms`;
  const [partText, totalText] = msAll([part, total]);
  // A total that reads 0 has no share: named, not judged, never divided by.
  if (isBelowTimer(total)) {
    return { host: study.host, text: `${name} ${pct(studyShare)} (${derived}) vs no share (${partText} of ${totalText})`, agrees: false, notJudged: "a total of 0 ms here, below the timer's resolution", sources: study.from };
  }
  const share = part / total;
  const points = Math.abs(share - studyShare) * 100;
  const shown = Math.round(points);
  // The share is of call + first (docs/METHOD.md, "Percentages"): its two parts are given, never
  // their sum as a total, which the line's own total (the median of the per-iteration totals) need
  // not equal: one sentence, one figure per quantity.
  const [callText, firstText] = msAll([total - part, part]);
  return {
    host: study.host,
    text: `${name} ${pct(studyShare)} (${derived}) vs ${pct(share)} (of the call + first collective, ${callText!.replace(/ (ms|s)$/, '')} + ${firstText})`,
    agrees: points <= SHARE_POINTS + EPSILON,
    band: `±${SHARE_POINTS}-point`,
    detail: `(${shown} point${shown === 1 ? '' : 's'} apart)`,
    sources: study.from,
  };
}

/** A ratio range "5.03–5.34×", or one ratio "0.88×" when both ends are equal. */
function ratioText(lo: number, hi: number): string {
  return times(lo) === times(hi) ? times(lo) : `${times(lo).replace(/×$/, '')}–${times(hi)}`;
}

/**
 * A relation between two figures of the run (a against b, ms) set beside the same relation in the
 * study (sa against sb): the run's ratio a / b against the study's, which is a range when either
 * figure is one (sa.min / sb.max to sa.max / sb.min: 493–523 ms vs 98 ms is 5.03–5.34×). The two
 * are compared on a log scale, to the study's nearer end (1 inside its range), and agree when
 * within RATIO_FACTOR either way. The detail gives the run's ratio as a multiple of the study's.
 * A ratio that is not a positive finite number (a zero figure) is named, not judged.
 */
export function relationClause(a: number, b: number, sa: StudyFigure, sb: StudyFigure, name: string): Clause {
  const lo = sa.min / sb.max;
  const hi = sa.max / sb.min;
  const ratio = a / b;
  const base = `${name} ${ratioText(lo, hi)} (${sa.written} vs ${sb.written}) vs`;
  const sources = sa === sb ? [sa] : [sa, sb];
  const [aText, bText] = msAll([a, b]);
  if (!(Number.isFinite(ratio) && ratio > 0)) {
    return { host: sa.host, text: `${base} no ratio (${aText} vs ${bText})`, agrees: false, notJudged: "a figure here reads 0 ms, below the timer's resolution", sources };
  }
  const ref = ratio < lo ? lo : ratio > hi ? hi : undefined;
  const apart = ref === undefined ? 1 : ratio / ref;
  return {
    host: sa.host,
    text: `${base} ${times(ratio)} (${aText} vs ${bText})`,
    agrees: Math.abs(Math.log(apart)) <= Math.log(RATIO_FACTOR) + EPSILON,
    band: `${times(1 / RATIO_FACTOR).replace(/×$/, '')}–${times(RATIO_FACTOR)}`,
    apart: Math.exp(Math.abs(Math.log(apart))),
    detail:
      ref === undefined
        ? "(inside the study's range)"
        : lo === hi
          ? `(here ${times(apart)} the study's ratio)`
          : `(here ${times(apart)} the ${ref === hi ? 'upper' : 'lower'} end of the study's)`,
    sources,
  };
}

/**
 * The study's sources of these figures, compactly: each measurement once, then where it is
 * quoted, e.g. 'init; init + first 1 MB allreduce, in docs/METHOD.md "The study's figures"'.
 * @returns '' when there is no figure.
 */
export function studySources(figures: readonly StudyFigure[]): string {
  const documents = [...new Set(figures.map((f) => f.document))];
  return documents
    .map((d) => `${[...new Set(figures.filter((f) => f.document === d).map((f) => f.measurement))].join('; ')}, in ${d}`)
    .join('; ');
}

/**
 * The sentence that sets a line's figures beside the study's, one part per study host:
 * "Study (4× A40 PCIe, NCCL 2.32.3) vs here (2× H200 NVLink): init to first collective 92 ms vs
 * 176 ms (1.9×): agrees (study: init + first 1 MB allreduce, in DESIGN.md "Figures from the
 * study")." The sources of the study's figures are named once per sentence. For a simulated run
 * the study's figures are only named (studyNotCompared): simulated figures are not measurements;
 * for a run over several hosts ({@link Here.nodes}) so are the study's figures of one host. For a
 * run on one host, a study figure measured across nodes only (the cold/warm anchor, over
 * InfiniBand) is set beside the run's and not judged: the transports differ.
 * @returns '' when there is no clause.
 */
export function studySentence(here: Here, clauses: Clause[]): string {
  // A simulated run's figures are not measurements: the study's figures are named, and nothing
  // is set against them (no "92 ms vs 94.8 ms (1.03×)", which reads as a comparison).
  if (here.simulated) {
    const figures = [...new Set(clauses.flatMap((c) => c.sources))];
    return figures.length > 0 ? studyNotCompared(figures, 'simulated figures are not measurements') : '';
  }
  // A run over several hosts pays the network where the study's one-host figures did not (its
  // connect, its teardown): like with like, those are named, not judged; the study's figures
  // across nodes are judged.
  const nodes = here.nodes ?? 1;
  if (nodes > 1 && clauses.some((c) => !c.host.acrossNodes)) {
    const oneHost = clauses.filter((c) => !c.host.acrossNodes);
    const figures = [...new Set(oneHost.flatMap((c) => c.sources))];
    const across = studySentence(here, clauses.filter((c) => c.host.acrossNodes));
    const named = studyNotCompared(figures, `this run spans ${nodes} hosts, the study's ${figures.length === 1 ? 'figure was' : 'figures were'} of one host`);
    // The line's own cost words are judgements too: with no judged clause to carry the
    // few-iterations note, the named sentence carries it.
    const few = across === '' ? fewIterationsNote(here) : undefined;
    return [across, few ? `${named.replace(/\.$/, '')} (${few}).` : named].filter((x) => x !== '').join(' ');
  }
  const hosts = [...new Set(clauses.map((c) => c.host))];
  return hosts
    .map((host) => {
      // A study figure measured across nodes only (over InfiniBand) against a run on one host: the
      // transports differ, so the figures are set side by side, the quantity the study measured,
      // and not judged (studyFigures.ts studyNotComparedWhy, the same rule for the charts).
      const otherTransport = nodes <= 1 && host.acrossNodesOnly === true;
      const parts = clauses
        .filter((c) => c.host === host)
        .map((c) =>
          otherTransport
            ? c.notJudged !== undefined
              ? `${c.text} (${c.notJudged})`
              : c.text
            : c.notJudged !== undefined
              ? `${c.text}: not judged (${c.notJudged})`
              : `${c.text}: ${judgement(c)}`,
        );
      const notJudged = otherTransport ? ` — not judged: ${TRANSPORTS_DIFFER}, the study's ${parts.length === 1 ? 'figure was' : 'figures were'} measured across nodes, this run's on one host` : '';
      const sources = studySources(clauses.filter((c) => c.host === host).flatMap((c) => c.sources));
      // One wording of the few-iterations note for every line (format.ts).
      const few = fewIterationsNote(here);
      const tail = few ? ` (${few})` : '';
      return `Study (${host.text}) vs here (${here.host}): ${parts.join('; ')}${notJudged}${sources ? ` (study: ${sources})` : ''}${tail}.`;
    })
    .join(' ');
}

/**
 * The judgement of a clause with its detail and band (commcost's rule, not the study's): "agrees
 * (3 points apart, within commcost's ±20-point band)", "same order as the study (within commcost's
 * 0.32–3.2× band)" when {@link CLOSE_FACTOR} or more apart or outside the study's range, "differs (here 5.2× the study's ratio,
 * outside commcost's 0.5–2× band)".
 */
export function judgement(c: Pick<Clause, 'agrees' | 'band' | 'apart' | 'detail' | 'outsideRange'>): string {
  const word = !c.agrees ? 'differs' : c.outsideRange || (c.apart ?? 1) >= CLOSE_FACTOR - EPSILON ? 'same order as the study' : 'agrees';
  const detail = c.detail?.replace(/^\((.*)\)$/, '$1');
  // The band is commcost's rule (docs/METHOD.md), never the study's: said so in the words.
  const band = c.band === undefined ? undefined : `${c.agrees ? 'within' : 'outside'} commcost's ${c.band} band`;
  const words = [detail, band].filter((x): x is string => x !== undefined && x !== '');
  return words.length > 0 ? `${word} (${words.join(', ')})` : word;
}

/**
 * The study's figures named but not compared, with why (e.g. a one-shape pool against the study's
 * pool of seven communicators): "Study (4× A40 PCIe, NCCL 2.32.3): a pool … 464 MB (…); … — not
 * compared here: one shape, no child."
 */
export function studyNotCompared(figures: StudyFigure[], why: string | ((f: StudyFigure) => string)): string {
  const hosts = [...new Set(figures.map((f) => f.host))];
  return hosts
    .map((host) => {
      const mine = figures.filter((f) => f.host === host);
      const parts = mine.map((f) => `${f.what} ${f.written}`);
      // A why per figure (the study's setting differs by figure) is the first of the group's: figures share a host only when the study gave them one setting.
      const reason = typeof why === 'function' ? why(mine[0]!) : why;
      return `Study (${host.text}): ${parts.join('; ')} — not compared here: ${reason} (study: ${studySources(mine)}).`;
    })
    .join(' ');
}
