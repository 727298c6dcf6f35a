/**
 * cold-start: what a fresh process pays before its first collective, against the same creation
 * once the process is warm (docs/METHOD.md, "cold-start").
 *
 * Every iteration runs in a fresh set of rank processes (processPerIteration: the coordinator
 * starts one set per iteration, warmups included). In each, measured separately:
 * - `ncclLoad`: the dlopen of the NCCL library (the rank's start, native `load`);
 * - `cudaContext`: cuInit + the CUDA context (the rank's start, native `initDevice`);
 * - `uniqueId`: rank 0's first ncclGetUniqueId (the rank's start; rank 0 only);
 * - `coldInit` + `coldFirst` = `cold`: the process's first ncclCommInitRankConfig (NCCL's one-time
 *   kernel load included) and the first allreduce on it; that communicator is then destroyed;
 * - `warmInit` + `warmFirst` = `warm`: a second init and its first allreduce in the same process.
 * Each step's figure is the MAX over ranks. The summary gives cold / warm from the medians.
 *
 * NCCL's view: the processes run with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT (this experiment
 * only) and NCCL_DEBUG_FILE in a temporary folder of each rank process (removed after the
 * iteration); the `Init timings` lines of the two creations (NCCL ≥ 2.23.4) are read and recorded
 * beside the figures as `cold` and `warm` (ncclInitTimings.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

import { parseInitTimings, viewsOfCreations } from '../ncclInitTimings';
import { minNcclOf } from '../../protocol/catalogue';
import { makePrivateDir } from '../privateDir';
import { BLOCKING, firstStep, needsNccl, versionCode, versionString, type ExperimentModule, type RankContext } from './experiment';

/** The first NCCL release that writes the `Init timings` line. */
export const INIT_TIMINGS_SINCE = '2.23.4';

/** NCCL's debug settings of the cold-start processes (recorded in the run's stamp as the variant's env). */
export const COLD_START_ENV: Readonly<Record<string, string>> = { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT' };

/** This process's NCCL log folder (beforeLoad), removed after the iteration or at exit. */
let logDir: string | undefined;

function removeLogDir(): void {
  if (logDir === undefined) return;
  try {
    fs.rmSync(logDir, { recursive: true, force: true });
  } catch {
    // A folder that cannot be removed is left in the temp folder; nothing else depends on it.
  }
  logDir = undefined;
}

/** The text of every log file NCCL wrote in this process's folder ('' when none). */
function readLogs(dir: string): string {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return '';
  }
  return names
    .sort()
    .map((n) => {
      try {
        return fs.readFileSync(path.join(dir, n), 'utf8');
      } catch {
        return '';
      }
    })
    .join('\n');
}

export const coldStartExperiment: ExperimentModule = {
  id: 'cold-start',
  processPerIteration: true,
  variantEnv: () => ({ ...COLD_START_ENV }),
  beforeLoad() {
    // NCCL reads these at its first call: set before the library loads. %h host, %p pid.
    // A private folder (mkdtemp, 0700, checked: remote-agent/privateDir.ts): NCCL writes its log there.
    logDir = makePrivateDir('commcost-nccl-log-').path;
    Object.assign(process.env, COLD_START_ENV, { NCCL_DEBUG_FILE: path.join(logDir, 'nccl.%h.%p.log') });
    process.once('exit', removeLogDir);
  },
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('cold-start'));
    if (skip) return { skip };
    const first = firstStep(ctx.options).label;
    const note =
      ctx.ncclVersionCode < versionCode(INIT_TIMINGS_SINCE)
        ? `NCCL ${versionString(ctx.ncclVersionCode)} predates the Init timings line (NCCL ${INIT_TIMINGS_SINCE}): no NCCL view of the creations`
        : undefined;
    return [
      {
        variant: 'default',
        steps: [
          { step: 'ncclLoad', label: 'NCCL library load (dlopen)', kind: 'call' },
          { step: 'cudaContext', label: 'cuInit + CUDA context', kind: 'call' },
          { step: 'uniqueId', label: 'first ncclGetUniqueId (rank 0)', kind: 'call' },
          { step: 'coldInit', label: 'first ncclCommInitRankConfig of the process (cold)', kind: 'call' },
          { step: 'coldFirst', label: `${first} (cold)`, kind: 'first' },
          { step: 'cold', label: 'cold: first init to first collective', kind: 'toFirst', sumOf: ['coldInit', 'coldFirst'] },
          { step: 'warmInit', label: 'second ncclCommInitRankConfig in the same process (warm)', kind: 'call' },
          { step: 'warmFirst', label: `${first} (warm)`, kind: 'first' },
          { step: 'warm', label: 'warm: second init to first collective', kind: 'toFirst', sumOf: ['warmInit', 'warmFirst'] },
        ],
        ratios: [
          { id: 'coldOverWarm', label: 'cold / warm (init to first collective)', of: 'cold', to: 'warm' },
          { id: 'coldInitOverWarmInit', label: 'cold / warm init', of: 'coldInit', to: 'warmInit' },
        ],
        ncclInitView: { creations: ['cold', 'warm'], ...(note ? { note } : {}) },
      },
    ];
  },
  async iteration(rc: RankContext) {
    const start = rc.processStart;
    if (!start) throw new Error('cold-start needs the figures of the rank process start (run it through the agent)');
    if (start.iterationsBefore > 0) {
      throw new Error(`cold-start must run in a fresh rank process, but rank ${rc.rank}'s process already ran ${start.iterationsBefore} iteration(s): the coordinator must start one process set per iteration`);
    }
    try {
      if (start.ncclLoadMs !== undefined) rc.record('ncclLoad', start.ncclLoadMs);
      if (start.cudaContextMs !== undefined) rc.record('cudaContext', start.cudaContextMs);
      if (start.firstUniqueIdMs !== undefined) rc.record('uniqueId', start.firstUniqueIdMs);
      const bytes = rc.options.firstCollectiveBytes;

      const coldId = await rc.uniqueId();
      const { comm: cold } = await rc.timed('coldInit', 'ncclCommInitRankConfig (cold process)', (gen) => rc.native.commInitRank(rc.worldSize, coldId, rc.rank, BLOCKING, gen));
      await rc.timed('coldFirst', 'first allreduce (cold process)', (gen) => rc.native.allReduce(cold, bytes, gen));
      await rc.untimed('ncclCommDestroy (cold communicator)', () => rc.native.commDestroy(cold));

      const warmId = await rc.uniqueId();
      const { comm: warm } = await rc.timed('warmInit', 'ncclCommInitRankConfig (warm process)', (gen) => rc.native.commInitRank(rc.worldSize, warmId, rc.rank, BLOCKING, gen));
      await rc.timed('warmFirst', 'first allreduce (warm process)', (gen) => rc.native.allReduce(warm, bytes, gen));
      await rc.untimed('ncclCommDestroy (warm communicator)', () => rc.native.commDestroy(warm));

      // NCCL's view: the n-th Init timings line of this rank is its n-th creation.
      if (logDir !== undefined) {
        const log = parseInitTimings(readLogs(logDir));
        rc.recordNcclInit?.(viewsOfCreations(log, rc.rank, rc.worldSize, ['cold', 'warm']), log.malformed);
      }
    } finally {
      removeLogDir();
    }
  },
};
