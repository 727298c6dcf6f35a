/**
 * What a recovery term needs that the runs' host lacks (issue #28): the catalogue's needs
 * (protocol/catalogue.ts EXPERIMENT_NEEDS) filtered by the stamp's NCCL version, the run's rank
 * count and whether torch was found, so that a "needs X" reason is given only where the host
 * lacks X. Pure.
 */
import { EXPERIMENT_NEEDS, versionCode } from '../../protocol/catalogue';
import type { ExperimentId } from '../../protocol/runOptions';
import type { PlanHost, PlanRun } from './terms';

/** What the runs' host has, from the stamp: its NCCL version, its rank count and whether torch was found. */
export interface HostHas {
  ncclVersion?: string;
  ranks: number;
  torch: boolean;
}

/** The runs' host as {@link HostHas}: torch is present where a run's stamp has a torch version. */
export function hostHas(runs: readonly PlanRun[], host: PlanHost): HostHas {
  return { ...(host.ncclVersion ? { ncclVersion: host.ncclVersion } : {}), ranks: host.ranks, torch: runs.some((p) => typeof p.run.stamp?.torchVersion === 'string' && p.run.stamp.torchVersion !== '') };
}

/** "NCCL ≥ 2.29.2 and 2 GPUs": the catalogue's needs of `ids` together (the newest NCCL, the most GPUs). */
export function needsWords(...ids: ExperimentId[]): string {
  return lackingNeeds(ids);
}

/**
 * The catalogue's needs of `ids` together, as {@link needsWords}; with `host`, only the needs that
 * host lacks: an NCCL need where its stamp's version is older (none said where the stamp has no
 * version), a GPU need where it has fewer ranks, torch where no stamp has torch; "" when it lacks none.
 */
export function lackingNeeds(ids: readonly ExperimentId[], host?: HostHas): string {
  let nccl: string | undefined;
  let gpus = 1;
  const other: string[] = [];
  for (const id of ids) {
    const n = EXPERIMENT_NEEDS[id];
    if (n.minNccl && (nccl === undefined || versionCode(n.minNccl) > versionCode(nccl))) nccl = n.minNccl;
    gpus = Math.max(gpus, n.minGpus ?? 1);
    if (n.other && !(host?.torch ?? false)) other.push(n.other);
  }
  const ncclLacks = nccl !== undefined && (host === undefined || (host.ncclVersion !== undefined && versionCode(host.ncclVersion) < versionCode(nccl)));
  const gpusLack = gpus > 1 && (host === undefined || host.ranks < gpus);
  return [ncclLacks ? `NCCL ≥ ${nccl}` : '', gpusLack ? `${gpus} GPUs` : '', ...other].filter((s) => s).join(' and ');
}
