/**
 * Entries of `commcost.hosts` and of the host picker. Three forms:
 * - one host: `localhost`, an ssh alias or `user@host[:port]`;
 * - a group, `gpu-a + gpu-b + gpu-c`: one run over those hosts, one agent each, the coordinator
 *   on the first (client/runSession.ts `moreTargets`);
 * - `slurm:login1`: login1 is a Slurm login node; the agent there starts the ranks with srun,
 *   with the job step of `commcost.slurm` (client/slurm.ts `srunArgsFor`). The prefix always
 *   means Slurm: a host that is itself named `slurm` is written `user@slurm:port` or by an alias.
 *
 * No `vscode` import (unit-tested); loaded with the Measure command, not at activation.
 */
import { CommcostError } from '../client/errors';
import { isLocalTarget, parseTargetSpec } from '../client/hosts';
import { srunArgsFor, type SlurmOptions } from '../client/slurm';
import type { RunRequest } from './runController';
import { GROUP_SEPARATOR, normalizeHostEntry } from './settings';

/** The prefix of a Slurm login node entry. */
export const SLURM_PREFIX = 'slurm:';

/** Most hosts in a group (the agent's `run/start` takes a cluster of 1–64 nodes). */
export const MAX_GROUP_HOSTS = 64;

/** A parsed entry. */
export interface HostEntry {
  /** The entry, normalized (`gpu-a + gpu-b`, `slurm:login1`): the picker's label, the recent-hosts key. */
  entry: string;
  /** The first host: the coordinator's host, or the Slurm login node. */
  target: string;
  /** The other hosts of a group, in order (absent for one host). */
  moreTargets?: string[];
  /** `target` is a Slurm login node. */
  slurm?: true;
}

const NAME_HINT = 'write localhost, an ssh alias or user@host[:port]; a group as gpu-a + gpu-b; a Slurm login node as slurm:login1';

function refuse(entry: string, what: string, hint: string, code = 'BAD_INPUT'): never {
  throw new CommcostError(code, `host entry ${JSON.stringify(entry)} ${what}`, { hint });
}

/** Checks one host name of an entry with client/hosts.ts; its error is re-thrown naming the entry. */
function checkName(entry: string, name: string): void {
  if (isLocalTarget(name)) return;
  try {
    parseTargetSpec(name);
  } catch (e) {
    if (!(e instanceof CommcostError)) throw e;
    refuse(entry, `is refused: ${e.message}`, e.hint ?? NAME_HINT, e.code);
  }
}

/**
 * Parses one entry (spaces around `+` and after `slurm:` optional).
 * @throws CommcostError (BAD_TARGET for a bad host name, else BAD_INPUT) naming the entry, with a
 *   hint: an empty name, a bad name, a host twice in a group, more than {@link MAX_GROUP_HOSTS}
 *   hosts, `slurm:` without a login node, on localhost, or combined with `+`.
 */
export function parseHostEntry(text: string): HostEntry {
  const entry = normalizeHostEntry(text);
  if (entry === '') refuse(entry, 'is empty', NAME_HINT);
  const names = entry.split(GROUP_SEPARATOR).map((n) => n.trim());
  const slurmNames = names.filter((n) => n.startsWith(SLURM_PREFIX));
  if (slurmNames.length > 0 && names.length > 1) {
    refuse(
      entry,
      'combines slurm: with +: a Slurm run takes one login node, and srun places the ranks on the compute nodes',
      'write slurm:<login node> alone and set the nodes in commcost.slurm (nodes, gpusPerNode)',
    );
  }
  if (slurmNames.length > 0) {
    const login = entry.slice(SLURM_PREFIX.length);
    if (login === '') refuse(entry, 'names no Slurm login node', 'write slurm:<login node>, e.g. slurm:login1');
    if (isLocalTarget(login)) refuse(entry, 'names localhost: a Slurm run needs a login node reached over SSH', 'write slurm:<login node>, e.g. slurm:login1');
    checkName(entry, login);
    return { entry, target: login, slurm: true };
  }
  if (names.some((n) => n === '')) refuse(entry, `has an empty host name around ${GROUP_SEPARATOR}`, `join host names with ${GROUP_SEPARATOR}, e.g. gpu-a + gpu-b`);
  if (names.length > MAX_GROUP_HOSTS) refuse(entry, `names ${names.length} hosts; a run takes at most ${MAX_GROUP_HOSTS}`, 'split it into smaller groups');
  for (const n of names) checkName(entry, n);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) {
    refuse(entry, `names ${twice} twice`, 'name each host of a group once: one agent runs per host, with one rank per GPU');
  }
  const [target, ...more] = names as [string, ...string[]];
  return more.length > 0 ? { entry, target, moreTargets: more } : { entry, target };
}

/** How a run on the entry is shown in titles and messages: `gpu-a`, `gpu-a + 2 more`, `slurm:login1`. */
export function hostLabel(e: HostEntry): string {
  const more = e.moreTargets?.length ?? 0;
  if (more > 0) return `${e.target} ${GROUP_SEPARATOR} ${more} more`;
  return e.slurm ? `${SLURM_PREFIX}${e.target}` : e.target;
}

/** The srun command line shown for a Slurm entry: `srun --nodes=1 …`. */
function srunLine(slurm: SlurmOptions): string {
  return [slurm.srunPath || 'srun', ...srunArgsFor(slurm)].join(' ');
}

/**
 * The picker's description of a group or a Slurm entry (undefined for one host):
 * `3 hosts, one agent each, coordinator on gpu-a`, `Slurm login node: srun --nodes=2 …`.
 * Never throws: bad Slurm settings are described as such.
 */
export function describeHostEntry(e: HostEntry, slurm: SlurmOptions): string | undefined {
  const more = e.moreTargets?.length ?? 0;
  if (more > 0) return `${more + 1} hosts, one agent each, coordinator on ${e.target}`;
  if (!e.slurm) return undefined;
  try {
    return `Slurm login node: ${srunLine(slurm)}`;
  } catch (err) {
    return `Slurm login node: commcost.slurm is refused (${err instanceof Error ? err.message : String(err)})`;
  }
}

/** The part of a {@link RunRequest} an entry decides. */
export type EntryRequest = Pick<RunRequest, 'target' | 'moreTargets' | 'coordinatorAddress' | 'slurm' | 'label'>;

/**
 * Where a run on the entry goes: the targets, the coordinator address (groups only; "" =
 * discovered) and the srun arguments of a Slurm entry.
 * @throws CommcostError BAD_INPUT from `srunArgsFor` when `commcost.slurm` is refused (Slurm entries only)
 */
export function entryRequest(e: HostEntry, s: { coordinatorAddress?: string; slurm: SlurmOptions }): EntryRequest {
  const out: EntryRequest = { target: e.target, label: hostLabel(e) };
  if (e.moreTargets && e.moreTargets.length > 0) {
    out.moreTargets = [...e.moreTargets];
    if (s.coordinatorAddress) out.coordinatorAddress = s.coordinatorAddress;
  }
  if (e.slurm) out.slurm = { srunArgs: srunArgsFor(s.slurm), ...(s.slurm.srunPath ? { srunPath: s.slurm.srunPath } : {}) };
  return out;
}
