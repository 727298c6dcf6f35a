/**
 * The switch strategies of a reshape and the run steps each adds up: what lies on the critical
 * path of one switch, what is prepaid at startup, what is deferred to the background after the
 * switch, and the memory per GPU it holds. Terms come from {@link stepTerm}/{@link memoryTerm}
 * (docs/METHOD.md, "Planning a reshape", gives the arithmetic and every term's step). Pure.
 */
import { absentTerm, lackWhy, memoryTerm, stepTerm, variantNames, type PlanRun, type Term, type TermKey } from './terms';

/** `t` marked as the lifecycle figure `key` (a trace's figure of the same API and size may replace it). */
const keyed = (t: Term, api: TermKey['api'], size: number, phase: TermKey['phase']): Term => ({ ...t, key: { api, size, phase } });

/** The strategies, in the order they are printed. */
export type StrategyId = 'lazy' | 'warmup' | 'destroy-now' | 'pool' | 'pool-share' | 'split' | 'split-share' | 'shrink' | 'grow' | 'suspended';

/** One strategy's terms, before any arithmetic. */
export interface StrategyTerms {
  id: StrategyId;
  /** Its name in tables and sentences: "on-demand rebuild (lazy connect)". */
  name: string;
  /** What it does at a switch, in one sentence. */
  how: string;
  critical: Term[];
  prepaid: Term[];
  deferred: Term[];
  /** Memory per GPU held while it runs (bytes); a term with `times: -1` is subtracted. */
  memory: Term[];
  /** What the figures stand for where they are not exactly the strategy (a TPn figure for every shape…). */
  note?: string;
}

/** TP shapes of `n` GPUs as the pool experiment builds them: n, n/2, … while even, then 1 (6 → 6, 3, 1). */
export function tpShapes(n: number): number[] {
  const shapes = [n];
  let s = n;
  while (s > 1) {
    s = s % 2 === 0 ? s / 2 : 1;
    shapes.push(s);
  }
  return shapes;
}

/** The pool experiment's variant without sharing (`tp2+1`) and with (`tp2+1/splitShare=1`), from the runs or by the rule. */
export function poolVariants(runs: readonly PlanRun[], ranks: number): { plain: string; share: string } {
  const names = variantNames(runs, 'pool');
  const plain = names.find((v) => !v.endsWith('/splitShare=1')) ?? `tp${tpShapes(ranks).join('+')}`;
  return { plain, share: names.find((v) => v.endsWith('/splitShare=1')) ?? `${plain}/splitShare=1` };
}

/** The memory terms of a pool of `shapes`: the last point for the pool the run built, else one shape's step between two points each. */
function poolMemory(runs: readonly PlanRun[], variant: string, ranks: number, shapes: readonly number[]): Term[] {
  const built = tpShapes(ranks);
  if (shapes.length === built.length && shapes.every((s, i) => s === built[i])) {
    return [memoryTerm(runs, `a pool of ${shapes.map((s) => `TP${s}`).join(' + ')}`, 'pool', [variant], `pool after TP${built[built.length - 1]!}`)];
  }
  return shapes.flatMap((s): Term[] => {
    const i = built.indexOf(s);
    if (i < 0) return [absentTerm(`the TP${s} communicator of a pool`, 'bytes', 'pool', `TP${s} needs ${s} GPUs; the runs have ${ranks} (a pool run on ≥ ${s} GPUs measures it; see the estimate for n GPUs)`)];
    const at = memoryTerm(runs, `the pool after TP${s}`, 'pool', [variant], `pool after TP${s}`);
    if (i === 0) return [at];
    return [at, { ...memoryTerm(runs, `the pool before TP${s}`, 'pool', [variant], `pool after TP${built[i - 1]!}`), times: -1 }];
  });
}

/** Building each shape of a pool: the call and the first collective (warm-up) of every shape. */
function poolBuild(runs: readonly PlanRun[], variant: string, ranks: number, shapes: readonly number[]): Term[] {
  const built = tpShapes(ranks);
  return shapes.flatMap((s): Term[] => {
    if (!built.includes(s)) return [absentTerm(`building TP${s}`, 'ms', 'pool', `TP${s} needs ${s} GPUs; the runs have ${ranks}`)];
    const call = s === ranks ? `ncclCommInitRankConfig TP${s}` : `ncclCommSplit into TP${s}`;
    const api = s === ranks ? 'init' : 'split';
    return [
      keyed(stepTerm(runs, call, 'pool', [variant], `call/tp${s}`), api, s, 'creation'),
      keyed(stepTerm(runs, `first collective TP${s}`, 'pool', [variant], `first/tp${s}`), api, s, 'first'),
    ];
  });
}

/** A pool's switch term when there is nothing to switch to (one TP shape), else undefined. */
function noSwitch(ranks: number, shapes: readonly number[], experiment: string, what: string): Term[] | undefined {
  if (tpShapes(ranks).length < 2) return [absentTerm(what, 'ms', experiment, `${ranks} rank${ranks === 1 ? ' has' : 's have'} one TP shape: a pool has nothing to switch to`)];
  if (shapes.length < 2) return [absentTerm(what, 'ms', experiment, `one shape (TP${shapes[0]}) was asked for: nothing to switch to`)];
  return undefined;
}

/** The TP shape a step's label names ("switch to TP1 inside the pool" → 1), else undefined. */
function labelShape(runs: readonly PlanRun[], experiment: string, variant: string, step: string): number | undefined {
  for (const p of runs) {
    const v = p.run.experiments.find((e) => e.experiment === experiment)?.variants.find((x) => x.variant === variant);
    const label = v?.steps.find((x) => x.step === step)?.label;
    if (label !== undefined) {
      const k = Number(/TP(\d+)/.exec(label)?.[1]);
      return Number.isSafeInteger(k) ? k : undefined;
    }
  }
  return undefined;
}

/** A term the run did not measure for a switch to `target`: "not measured: …", never another shape's figure. */
export function notMeasuredTerm(what: string, experiment: string, target: number, why: string): Term {
  return { ...absentTerm(what, 'ms', experiment, `not measured: ${why}`), target };
}

/**
 * A step a strategy cannot take at a switch to `target`: it needs a communicator the strategy has
 * already destroyed (a split of the TPn parent after the parent's destroy). "not priced: why",
 * never the figure of the step taken with the parent alive.
 */
export function notPricedTerm(what: string, experiment: string, target: number, why: string): Term {
  return { ...absentTerm(what, 'ms', experiment, `not priced: ${why}`), target };
}

/**
 * The pool's switch to each target shape: the pool experiment times one switch, to its first
 * child (its step label names it, "switch to TP1 inside the pool"; remote-agent/experiments/pool.ts),
 * so only a switch to that shape has a figure; a switch to any other shape is "not measured", never
 * charged the first child's figure. With one shape, why a pool has no switch.
 */
function poolSwitch(runs: readonly PlanRun[], variant: string, ranks: number, shapes: readonly number[]): Term[] {
  const what = 'switch inside the pool (a collective + CUDA graph capture + instantiate)';
  const none = noSwitch(ranks, shapes, 'pool', what);
  if (none) return none;
  // Runs without this pool variant: each switch is missing for what they lack, never described by a pool experiment they do not have.
  if (lackWhy(runs, 'pool', variant) !== undefined) return shapes.map((t): Term => ({ ...stepTerm(runs, `switch to TP${t} inside the pool`, 'pool', [variant], 'switch'), target: t }));
  const timed = labelShape(runs, 'pool', variant, 'switch') ?? tpShapes(ranks)[1];
  return shapes.map((t): Term =>
    t === timed
      ? { ...stepTerm(runs, `switch to TP${t} inside the pool (a collective + CUDA graph capture + instantiate)`, 'pool', [variant], 'switch'), target: t }
      : notMeasuredTerm(`switch to TP${t} inside the pool`, 'pool', t, `the pool experiment times only the switch to TP${timed ?? '?'} (pool/${variant}/switch); no switch to TP${t}`),
  );
}

/**
 * Every strategy's terms from the runs.
 * @param ranks the runs' rank count (the largest TP shape, the communicator init and destroy measured)
 * @param shapes the TP shapes switched between, largest first
 */
export function strategyTerms(runs: readonly PlanRun[], ranks: number, shapes: readonly number[]): StrategyTerms[] {
  const n = ranks;
  const initCall = keyed(stepTerm(runs, `ncclCommInitRankConfig TP${n}`, 'init', ['default'], 'call'), 'init', n, 'creation');
  // One rank has no peer: its first collective connects nothing, and is not called a connect.
  const initFirst = keyed(
    stepTerm(runs, `first collective TP${n} (${n > 1 ? 'its lazy connect' : 'one rank: no peer to connect to'})`, 'init', ['default'], 'first'),
    'init',
    n,
    'first',
  );
  const initMem = memoryTerm(runs, `a TP${n} communicator`, 'init', ['default'], 'afterFirst');
  const destroy = stepTerm(runs, `ncclCommFinalize + ncclCommDestroy TP${n}`, 'destroy', ['default'], 'total');
  // Building TPn to its first collective: the init experiment's `total` median (as the first page
  // and the verdict read it), its call and first collective kept as parts; the two medians where it has no total.
  const initTotal = stepTerm(runs, `ncclCommInitRankConfig TP${n} + first collective TP${n} (${n > 1 ? 'its lazy connect' : 'one rank: no peer to connect to'})`, 'init', ['default'], 'total');
  const initBuild: Term[] = initTotal.value !== undefined ? [{ ...initTotal, parts: [initCall, initFirst] }] : [initCall, initFirst];
  const { plain, share } = poolVariants(runs, n);
  const k = shapes.length;
  const tpn = `TP${n}`;
  const built = tpShapes(n);
  const multi = k > 1;
  /** The shape switched from at a switch to `t`, in a cycle through the shapes (largest first, then back). */
  const prev = (t: number): number => shapes[(shapes.indexOf(t) - 1 + k) % k]!;
  /**
   * The on-demand rebuild of target shape `t`, priced with the run's figure for that shape: TPn is
   * the init experiment's communicator (its `total`); a smaller shape is a split of the TPn parent:
   * the pool experiment's on-demand rebuild of it (its first child) or its split into that shape
   * while the pool was built; where the runs have neither and `t` is n/2, the split experiment's
   * halves (the same split of TPn into TPn/2, its source named). Never the TPn figure charged for a
   * smaller shape. `parentGone` (why) when the strategy has destroyed the TPn parent by this switch:
   * the split is then not priced.
   */
  const rebuildTo = (t: number, parentGone?: string): Term[] => {
    const at = (x: Term): Term => ({ ...x, target: t });
    if (t === n) return initBuild.map(at);
    if (!built.includes(t)) return [at(absentTerm(`an on-demand rebuild of TP${t}`, 'ms', 'pool', `TP${t} is not a TP shape of ${n} GPUs the runs built`))];
    if (parentGone !== undefined) return [notPricedTerm(`ncclCommSplit into TP${t} + first collective TP${t}`, 'pool', t, `the split into TP${t} needs the TP${n} parent, which this strategy ${parentGone}; the runs time no creation of TP${t} without it`)];
    const [callStep, firstStep, how] = t === built[1] ? ['rebuild/call', 'rebuild/first', 'on-demand rebuild'] : [`call/tp${t}`, `first/tp${t}`, 'pool build'];
    const firstWhat = `first collective TP${t}${t > 1 ? '' : ' (one rank: no peer to connect to)'}`;
    const viaPool = [
      at(keyed(stepTerm(runs, `ncclCommSplit into TP${t} (${how})`, 'pool', [plain], callStep), 'split', t, 'creation')),
      at(keyed(stepTerm(runs, firstWhat, 'pool', [plain], firstStep), 'split', t, 'first')),
    ];
    if (viaPool.every((x) => x.value !== undefined) || !(n % 2 === 0 && t === n / 2)) return viaPool;
    // The split experiment's halves colour rank < n/2 (remote-agent/experiments/split.ts): the same split of TPn into TPn/2.
    const viaSplit = [
      at(keyed(stepTerm(runs, `ncclCommSplit into TP${t} (the split experiment's halves, split/halves/splitShare=0: the same split of TP${n} into TP${t}; ${lackWhy(runs, 'pool', plain) ?? 'the pool experiment has no figure for it'})`, 'split', ['halves/splitShare=0'], 'call'), 'split', t, 'creation')),
      at(keyed(stepTerm(runs, firstWhat, 'split', ['halves/splitShare=0'], 'first'), 'split', t, 'first')),
    ];
    return viaSplit.every((x) => x.value !== undefined) ? viaSplit : viaPool;
  };
  // Lazy and warm-up destroy the shape left after creating the new one: TPn is alive at a switch from TPn only.
  const lazyGone = (t: number): string | undefined => (prev(t) === n ? undefined : `destroyed at the switch away from TP${n}`);
  const rebuilds = multi ? shapes.flatMap((t) => rebuildTo(t, lazyGone(t))) : shapes.flatMap((t) => rebuildTo(t));
  /**
   * The destroy of the TP`s` communicator left at a switch to `t`: the destroy experiment's figure
   * is of a TPn communicator only; a smaller one's destroy is not measured, never charged TPn's.
   */
  const destroyLacks = lackWhy(runs, 'destroy', 'default');
  const destroyOf = (s: number, t: number): Term =>
    s === n
      ? { ...destroy, target: t }
      : notMeasuredTerm(`ncclCommFinalize + ncclCommDestroy TP${s}`, 'destroy', t, destroyLacks ?? `the destroy experiment destroys a TP${n} communicator; the runs time no destroy of a TP${s} one`);
  /** At each switch the shape left is destroyed (one term per target). */
  const destroyLeft: Term[] = multi ? shapes.map((t) => destroyOf(prev(t), t)) : [destroy];
  const creationNote =
    shapes.length > 1
      ? `a switch to each shape is priced with the run's figure for that shape — TP${n} the init experiment's communicator (its total to the first collective), a smaller one a split of the TP${n} parent (the pool experiment's, else the split experiment's halves where they are that shape) — and the shape left is destroyed (the destroy experiment measures TP${n} only); a split after the strategy has destroyed the TP${n} parent is not priced; one switch is the mean over the shapes switched to, computed only where every switch was measured`
      : `the rebuild is the init experiment's ${tpn} communicator`;

  // The communicator each reshape from the maximum topology makes: split halves, shrink by one, grow to n.
  // The halves are colored rank < n/2 (remote-agent/experiments/split.ts): at an odd n the first
  // child is the larger, ceil(n/2) ranks, and the step is the MAX over ranks, so its figure is that child's.
  const halves = Math.max(1, Math.ceil(n / 2));
  const halvesNote = `the child is the split experiment's halves (TP${halves}${n % 2 === 1 && n > 1 ? ', the larger half: the step is the MAX over ranks' : ''})`;
  const childSize: Record<string, number> = { split: halves, shrink: Math.max(1, n - 1), grow: n };
  // At one rank there is no smaller communicator to split or shrink into, and none of n−1 = 0
  // ranks to grow from: the terms and notes say so (the GPU count, before any NCCL version), never "1 → 0" or "0 → 1".
  const oneRankWhy: Record<string, string> = {
    split: 'a communicator of 1 rank has no halves to split into',
    shrink: 'a communicator of 1 rank has no rank to drop',
    grow: 'a run of 1 rank has no communicator of fewer ranks to grow from',
  };
  /**
   * A reshape from a kept communicator (split and shrink keep TPn, grow keeps n−1 ranks): a switch
   * to the shape the experiment makes is its call + first collective; a switch to another shape (the
   * kept one included) is not measured. The shape left is destroyed in the background unless it is
   * the kept one (the destroy experiment measures TPn only).
   */
  const fromMax = (id: StrategyId, name: string, experiment: 'split' | 'shrink' | 'grow', variant: string, call: string, childPoint: string, how: string, note: string): StrategyTerms => {
    const c = childSize[experiment]!;
    const kept = experiment === 'grow' ? n - 1 : n;
    const made = (t?: number): Term[] => [
      { ...keyed(stepTerm(runs, call, experiment, [variant], 'call'), experiment, c, 'creation'), ...(t !== undefined ? { target: t } : {}) },
      { ...keyed(stepTerm(runs, 'first collective on the child', experiment, [variant], 'first'), experiment, c, 'first'), ...(t !== undefined ? { target: t } : {}) },
    ];
    const critical: Term[] =
      n < 2
        ? [absentTerm(call, 'ms', experiment, oneRankWhy[experiment]!), absentTerm('first collective on the child', 'ms', experiment, oneRankWhy[experiment]!)]
        : !multi
          ? made()
          : shapes.flatMap((t): Term[] =>
              t === c
                ? made(t)
                : [notMeasuredTerm(`${call}, a switch to TP${t}`, experiment, t, t === kept ? `the runs time no switch back to the kept TP${kept} communicator` : (lackWhy(runs, experiment, variant) ?? `the ${experiment} experiment makes a ${c}-rank child (${experiment}/${variant}), not TP${t}`))],
            );
    return {
      id,
      name,
      how,
      critical,
      prepaid: initBuild,
      deferred: multi ? shapes.flatMap((t) => (prev(t) === kept ? [] : [destroyOf(prev(t), t)])) : [destroy],
      memory: [initMem, n < 2 ? absentTerm(`the ${experiment} child`, 'bytes', experiment, oneRankWhy[experiment]!) : memoryTerm(runs, `the ${experiment} child`, experiment, [variant], childPoint)],
      note,
    };
  };
  const suspendTerm = stepTerm(runs, 'ncclCommSuspend of the previous shape', 'suspend', ['default'], 'suspend');

  return [
    {
      id: 'lazy',
      name: 'on-demand rebuild (lazy connect)',
      how: `at each switch create the new shape's communicator; its first collective ${n > 1 ? 'connects' : 'runs (one rank: nothing to connect)'} inside the first step after the switch; the old one is destroyed in the background`,
      critical: rebuilds,
      prepaid: [],
      deferred: destroyLeft,
      memory: [initMem],
      note: creationNote,
    },
    {
      id: 'warmup',
      name: 'on-demand rebuild + warm-up',
      how: `as the on-demand rebuild, with one collective right after creation: ${n > 1 ? 'the connect is' : 'its first collective (one rank: no connect) is'} paid in the switch, not in the first step`,
      critical: rebuilds,
      prepaid: [],
      deferred: destroyLeft,
      memory: [initMem],
      note: `the same terms as the lazy rebuild: the warm-up moves the first collective, it does not remove it; ${creationNote}`,
    },
    {
      id: 'destroy-now',
      name: 'on-demand rebuild, destroy now',
      how: 'as the on-demand rebuild, with the old communicator destroyed before the new one is created, on the critical path',
      // The shape left is destroyed before the new one is created: a split needs the TPn parent, gone by then.
      critical: multi ? shapes.flatMap((t) => [destroyOf(prev(t), t), ...rebuildTo(t, `destroys before the switch (${prev(t) === n ? 'as the shape left' : `at the switch away from TP${n}`})`)]) : [destroy, ...rebuilds],
      prepaid: [],
      deferred: [],
      memory: [initMem],
      note: creationNote,
    },
    {
      id: 'pool',
      name: 'prewarmed pool',
      how: 'build and warm a communicator of every shape at startup; a switch is a handle swap, one collective and a CUDA graph capture',
      critical: poolSwitch(runs, plain, n, shapes),
      prepaid: poolBuild(runs, plain, n, shapes),
      deferred: [],
      memory: poolMemory(runs, plain, n, shapes),
    },
    {
      id: 'pool-share',
      name: 'prewarmed pool, splitShare=1',
      how: 'the prewarmed pool with every child split from a parent created with splitShare 1 (children share the parent\'s resources)',
      critical: poolSwitch(runs, share, n, shapes),
      prepaid: poolBuild(runs, share, n, shapes),
      deferred: [],
      memory: poolMemory(runs, share, n, shapes),
    },
    fromMax('split', 'split from the maximum topology', 'split', 'halves/splitShare=0', 'ncclCommSplit into halves',
      'afterFirst', `keep a warm ${tpn} communicator; at each switch split it (halves) and run the first collective on the child`,
      n < 2 ? oneRankWhy.split! : halvesNote),
    fromMax('split-share', 'split from the maximum topology, splitShare=1', 'split', 'halves/splitShare=1', 'ncclCommSplit into halves (splitShare 1)',
      'afterFirst', `as the split, from a ${tpn} parent created with splitShare 1`, n < 2 ? oneRankWhy.split! : halvesNote),
    fromMax('shrink', 'shrink from the maximum topology', 'shrink', 'default', 'ncclCommShrink',
      'afterFirst', `keep a warm ${tpn} communicator; at each switch shrink it and run the first collective`, n < 2 ? oneRankWhy.shrink! : `the run's shrink drops one rank (${n} → ${n - 1})`),
    fromMax('grow', 'grow to the maximum topology', 'grow', 'default', 'ncclCommGrow',
      'afterFirst', 'keep a communicator of n−1 ranks; at each switch grow it by one rank and run the first collective', n < 2 ? oneRankWhy.grow! : `the run's grow adds one rank (${n - 1} → ${n}); its parent is counted at the init experiment's ${tpn} figure`),
    {
      id: 'suspended',
      name: 'pool kept suspended',
      how: 'build a communicator of every shape at startup and suspend those not in use (ncclCommSuspend); a switch is a resume and the first collective',
      critical: noSwitch(n, shapes, 'suspend', 'resume of a suspended communicator') ??
        shapes.flatMap((t): Term[] =>
          t === n
            ? [
                { ...stepTerm(runs, `ncclCommResume of TP${n}`, 'suspend', ['default'], 'resume'), target: t },
                { ...stepTerm(runs, 'first collective after resume', 'suspend', ['default'], 'first'), target: t },
              ]
            : [notMeasuredTerm(`ncclCommResume of TP${t}`, 'suspend', t, lackWhy(runs, 'suspend', 'default') ?? `the suspend experiment resumes a TP${n} communicator; no resume of TP${t}`)],
        ),
      prepaid: [...poolBuild(runs, plain, n, shapes), { ...stepTerm(runs, 'ncclCommSuspend', 'suspend', ['default'], 'suspend'), times: Math.max(0, k - 1) }],
      deferred: multi
        ? shapes.map((t) =>
            prev(t) === n
              ? { ...suspendTerm, what: `ncclCommSuspend of TP${n}`, target: t }
              : notMeasuredTerm(`ncclCommSuspend of TP${prev(t)}`, 'suspend', t, lackWhy(runs, 'suspend', 'default') ?? `the suspend experiment suspends a TP${n} communicator; no suspend of TP${prev(t)}`),
          )
        : [suspendTerm],
      memory: [
        memoryTerm(runs, `the communicator in use (${tpn}, warm)`, 'suspend', ['default'], 'warm'),
        { ...memoryTerm(runs, `a suspended communicator (${tpn})`, 'suspend', ['default'], 'afterSuspend'), times: Math.max(0, k - 1) },
      ],
      note: `memory and the suspends at startup are counted at the suspend experiment's ${tpn} figures (${k} shape${k === 1 ? '' : 's'}: one in use, ${Math.max(0, k - 1)} suspended); a switch to TP${n} is its resume and first collective, a switch to a smaller shape is not measured`,
    },
  ];
}
