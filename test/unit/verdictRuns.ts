/**
 * Run files for the verdict tests: the committed 2×H200 runs of docs/results, and synthetic runs
 * built to look like real ones in the regimes those do not cover (1 rank, 4 ranks, several hosts,
 * old NCCL, partial). The 1-rank figures follow what a real 1×H200 run shows (init call 17–35 ms,
 * first collective ~0.01 ms; connect mode: runtimeConnect=1 and 0 both with a first collective of
 * ~0.02 ms); the tests never read a 1-rank file from docs/results.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { StepPlan, VariantSummary } from '../../protocol/events';
import type { RunExperiment, RunFile } from '../../protocol/runFile';
import { validateRunFile } from '../../client/runFileSchema';

/** One run file of docs/results, validated like any run the tool opens. */
export function load(name: string): RunFile {
  return validateRunFile(JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'results', name), 'utf8')));
}

const KIND: Record<string, StepPlan['kind']> = { call: 'call', first: 'first', total: 'toFirst', reinit: 'call', resume: 'call' };

/** A summarised variant: step → median ms (min = 0.98 × median); memory points in MiB. */
export function variant(name: string, steps: Record<string, number>, memoryMiB?: Record<string, number>): VariantSummary {
  return {
    variant: name,
    steps: Object.entries(steps).map(([step, median]) => ({
      step,
      label: step,
      kind:
        KIND[step] ??
        (step.startsWith('first')
          ? 'first'
          : step.startsWith('steady') || step.startsWith('second') || step.startsWith('switch')
            ? 'steady'
            : 'teardown'),
      stats: { median, p90: median * 1.02, min: median * 0.98, max: median * 1.05, mean: median, n: 10 },
      samples: [],
    })),
    ...(memoryMiB ? { memoryBytes: Object.fromEntries(Object.entries(memoryMiB).map(([k, m]) => [k, m * 2 ** 20])) } : {}),
  };
}

export function experiment(id: string, variants: VariantSummary[]): RunExperiment {
  return { experiment: id as RunExperiment['experiment'], variants, done: 10, total: 10, samples: {}, state: 'finished' };
}

const H200_TOPOLOGY_1 = '\x1b[4m\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \t0-31\t0\t\tN/A\n';
const PCIE_TOPOLOGY_4 =
  '\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPIX\tSYS\tSYS\t0-23\t0\nGPU1\tPIX\t X \tSYS\tSYS\t0-23\t0\nGPU2\tSYS\tSYS\t X \tPIX\t24-47\t1\nGPU3\tSYS\tSYS\tPIX\t X \t24-47\t1\n\nLegend:\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect\n  NV#  = Connection traversing a bonded set of # NVLinks\n';

/** A run of `ranks` GPUs of `gpu` made from the 2×H200 run's frame, with these experiments. */
export function synthetic(
  ranks: number,
  experiments: RunExperiment[],
  over: Partial<RunFile> = {},
  gpu = 'NVIDIA H200',
  topology?: string,
): RunFile {
  const frame = load('h200x2-nccl2.28.9-wheel.json');
  const stamp = structuredClone(frame.stamp!);
  stamp.gpus = Array.from({ length: ranks }, (_, i) => ({
    ordinal: i,
    name: gpu,
    totalBytes: 150_754_820_096,
    pciBusId: `0000:${i}:00.0`,
  }));
  stamp.topology = topology ?? (ranks === 1 ? H200_TOPOLOGY_1 : stamp.topology);
  return { ...frame, id: `synthetic-${ranks}`, ranks, stamp, experiments, skipped: [], errors: [], verdict: undefined, ...over };
}

/** A 1×H200 run as a real one reads: NCCL 2.30.7, every experiment one GPU can run. */
export function oneRank(): RunFile {
  const run = synthetic(1, [
    experiment('init', [variant('default', { call: 17.4, first: 0.014, total: 17.41, steady: 0.01 }, { afterCall: 196, afterFirst: 196 })]),
    experiment('destroy', [variant('default', { finalize: 0.1, destroy: 3.2, total: 3.3 })]),
    experiment('abort', [variant('default', { abort: 2.4, reinit: 17.9, first: 0.013, total: 17.92 })]),
    experiment('connect-mode', [
      variant('init/runtimeConnect=1', { call: 18.1, first: 0.021, total: 18.12 }),
      variant('init/runtimeConnect=0', { call: 19.0, first: 0.019, total: 19.02 }),
    ]),
    experiment('suspend', [
      variant(
        'default',
        { suspend: 4.1, resume: 66, first: 0.02, total: 66.02 },
        { warm: 196, afterSuspend: 68, afterResume: 196, afterFirst: 196 },
      ),
    ]),
  ]);
  run.stamp!.ncclVersion = '2.30.7';
  run.stamp!.ncclVersionCode = 23007;
  run.skipped = ['split', 'shrink', 'grow'].map((e) => ({
    experiment: e as RunExperiment['experiment'],
    reason: 'needs 2 GPUs, host has 1',
  }));
  return run;
}

/** A 4×A40-like PCIe run with split into halves (2-rank children), shrink (3 ranks) and grow. */
export function fourRanks(): RunFile {
  return synthetic(
    4,
    [
      experiment('init', [variant('default', { call: 45, first: 50, total: 95 })]),
      experiment('split', [
        variant('halves/splitShare=0', { call: 24, first: 55, total: 79 }),
        variant('halves/splitShare=1', { call: 22, first: 54, total: 76 }),
        variant('whole/splitShare=0', { call: 30, first: 60, total: 90 }),
        variant('whole/splitShare=1', { call: 25, first: 0.3, total: 25.3 }),
      ]),
      experiment('shrink', [variant('default', { call: 20, first: 45, total: 65 })]),
      experiment('grow', [variant('default', { call: 30, first: 48, total: 78 })]),
    ],
    {},
    'NVIDIA A40',
    PCIE_TOPOLOGY_4,
  );
}

/**
 * The committed 2×H200 run `name` (docs/results) made into a run over two nodes, gpu0 and gpu1,
 * of 8 H100s and 8 ranks each (16 ranks): for the readings of runs over several hosts.
 */
export function twoNodes(name: string): RunFile {
  const run = structuredClone(load(name));
  run.ranks = 16;
  run.nodes = [0, 1].map((index) => ({
    index,
    hostname: `gpu${index}`,
    address: `10.0.0.${index + 1}`,
    ranks: Array.from({ length: 8 }, (_, i) => 8 * index + i),
    gpus: Array.from({ length: 8 }, () => 'NVIDIA H100 80GB HBM3'),
  }));
  return run;
}
