/**
 * Rank identity under an external launcher: torchrun, Slurm's srun, Open MPI's mpirun (or
 * commcost's own COMMCOST_* variables). Pure: reads an environment, returns who this process is
 * and where rank 0 (which hosts the coordinator and the barrier) listens.
 *
 * Precedence when several launchers' variables are set: COMMCOST_* > torchrun > Open MPI >
 * Slurm (an `mpirun` or `torchrun` inside a Slurm allocation sees SLURM_* too, but its own
 * variables describe the processes it started).
 */

/** Which launcher's variables gave the identity. */
export type LauncherKind = 'commcost' | 'torchrun' | 'mpi' | 'slurm';

export interface LaunchIdentity {
  launcher: LauncherKind;
  /** Global rank, 0 … worldSize-1. */
  rank: number;
  worldSize: number;
  /** Rank on this node (0 … localWorldSize-1): picks the GPU when several are visible. */
  localRank: number;
  /** Processes on this node, when the launcher says. */
  localWorldSize?: number;
  /** Address of rank 0's node (where the coordinator listens). */
  coordinatorAddress: string;
  /** TCP port of the coordinator on that node. */
  coordinatorPort: number;
  /** Where the port came from, for messages ("COMMCOST_PORT", "MASTER_PORT + 1", …). */
  portSource: string;
  /**
   * Shared secret every process presents to the coordinator: COMMCOST_TOKEN, else the job's id
   * (SLURM_JOB_ID, TORCHELASTIC_RUN_ID, OMPI's job id), else empty (any process of the job
   * that reaches the port may join: see SECURITY.md).
   */
  token: string;
}

/** A launcher variable is missing or malformed. The message names the variable and the value. */
export class LaunchEnvError extends Error {}

/** Port used when no variable gives one (not torchrun's default 29500, which its store holds). */
export const DEFAULT_COORDINATOR_PORT = 29517;

function int(env: NodeJS.ProcessEnv, name: string, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') throw new LaunchEnvError(`${name} is not set`);
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min) throw new LaunchEnvError(`${name}=${JSON.stringify(raw)} is not an integer ≥ ${min}`);
  return Number(raw);
}

function optionalInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  return env[name] === undefined || env[name] === '' ? undefined : int(env, name, 1);
}

function port(raw: string, name: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > 65535) throw new LaunchEnvError(`${name}=${JSON.stringify(raw)} is not a TCP port (1–65535)`);
  return n;
}

/**
 * The first host of a Slurm node list: `gpu[03-04,07],login1` → `gpu03`,
 * `a-[1-2]-b` → `a-1-b`, `node7` → `node7`. Zero padding of ranges is kept.
 * @throws LaunchEnvError on an empty or unbalanced list.
 */
export function firstSlurmNode(nodelist: string): string {
  const s = nodelist.trim();
  if (s === '') throw new LaunchEnvError('SLURM_JOB_NODELIST is empty');
  // The first entry ends at the first comma outside brackets.
  let depth = 0;
  let end = s.length;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '[') depth++;
    else if (s[i] === ']') depth--;
    else if (s[i] === ',' && depth === 0) {
      end = i;
      break;
    }
    if (depth < 0 || depth > 1) throw new LaunchEnvError(`SLURM_JOB_NODELIST=${JSON.stringify(nodelist)} has unbalanced brackets`);
  }
  if (depth !== 0) throw new LaunchEnvError(`SLURM_JOB_NODELIST=${JSON.stringify(nodelist)} has unbalanced brackets`);
  // Replace each bracket group with its first element (`03-04,07` → `03`).
  return s.slice(0, end).replace(/\[([^\]]*)\]/g, (_m, inner: string) => {
    const first = inner.split(',')[0]!.split('-')[0]!;
    if (first === '') throw new LaunchEnvError(`SLURM_JOB_NODELIST=${JSON.stringify(nodelist)} has an empty range`);
    return first;
  });
}

/** Which launcher set this environment, or undefined when none did. */
export function detectLauncher(env: NodeJS.ProcessEnv): LauncherKind | undefined {
  if (env.COMMCOST_RANK !== undefined && env.COMMCOST_WORLD_SIZE !== undefined) return 'commcost';
  if (env.RANK !== undefined && env.WORLD_SIZE !== undefined && (env.MASTER_ADDR !== undefined || env.TORCHELASTIC_RUN_ID !== undefined)) return 'torchrun';
  if (env.OMPI_COMM_WORLD_RANK !== undefined && env.OMPI_COMM_WORLD_SIZE !== undefined) return 'mpi';
  if (env.SLURM_PROCID !== undefined && env.SLURM_NTASKS !== undefined) return 'slurm';
  return undefined;
}

/**
 * Reads this process's rank identity from a launcher's environment.
 *
 * - torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR; the port is
 *   COMMCOST_PORT, else MASTER_PORT + 1 (torchrun's own store already listens on MASTER_PORT).
 * - Open MPI: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE; the address is
 *   COMMCOST_COORDINATOR_ADDR or MASTER_ADDR, else 127.0.0.1 when every rank is on one node.
 * - Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE; the address is
 *   COMMCOST_COORDINATOR_ADDR, MASTER_ADDR, else the first node of SLURM_JOB_NODELIST.
 * - commcost: COMMCOST_RANK, COMMCOST_WORLD_SIZE, COMMCOST_LOCAL_RANK, COMMCOST_COORDINATOR_ADDR.
 * For MPI, Slurm and commcost the port is COMMCOST_PORT, else MASTER_PORT, else
 * {@link DEFAULT_COORDINATOR_PORT}. COMMCOST_COORDINATOR_ADDR overrides the address for all.
 *
 * @throws LaunchEnvError naming the missing or malformed variable, and which launchers were looked for.
 */
export function launchIdentityFromEnv(env: NodeJS.ProcessEnv): LaunchIdentity {
  const kind = detectLauncher(env);
  if (!kind) {
    // Part of one launcher's set: name what is missing.
    const sets: [string, string[]][] = [
      ['COMMCOST', ['COMMCOST_RANK', 'COMMCOST_WORLD_SIZE']],
      ['torchrun', ['RANK', 'WORLD_SIZE', 'MASTER_ADDR']],
      ['Open MPI', ['OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE']],
      ['Slurm', ['SLURM_PROCID', 'SLURM_NTASKS']],
    ];
    for (const [name, vars] of sets) {
      const set = vars.filter((v) => env[v] !== undefined);
      if (set.length > 0) {
        throw new LaunchEnvError(`${set.join(' and ')} ${set.length === 1 ? 'is' : 'are'} set but not ${vars.filter((v) => env[v] === undefined).join(' or ')}: ${name}'s variables are incomplete; start agent.js rank under ${name === 'COMMCOST' ? 'a launcher or set them all' : name}`);
      }
    }
    throw new LaunchEnvError(
      'no launcher variables found: expected torchrun (RANK, WORLD_SIZE, MASTER_ADDR), Slurm (SLURM_PROCID, SLURM_NTASKS), ' +
        'Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or COMMCOST_RANK and COMMCOST_WORLD_SIZE. ' +
        'agent.js rank is one process of a launched run: start it with srun, mpirun or torchrun (README, "Beyond one host"), ' +
        'or measure from your machine with `commcost measure --host <gpu host>`',
    );
  }
  let rank: number;
  let worldSize: number;
  let localRank: number;
  let localWorldSize: number | undefined;
  let address: string | undefined = env.COMMCOST_COORDINATOR_ADDR || undefined;
  let portRaw: string | undefined;
  let portSource = '';
  let token = env.COMMCOST_TOKEN ?? '';
  switch (kind) {
    case 'commcost':
      rank = int(env, 'COMMCOST_RANK');
      worldSize = int(env, 'COMMCOST_WORLD_SIZE', 1);
      localRank = env.COMMCOST_LOCAL_RANK ? int(env, 'COMMCOST_LOCAL_RANK') : rank;
      address ??= '127.0.0.1';
      break;
    case 'torchrun': {
      rank = int(env, 'RANK');
      worldSize = int(env, 'WORLD_SIZE', 1);
      localRank = env.LOCAL_RANK ? int(env, 'LOCAL_RANK') : rank;
      localWorldSize = optionalInt(env, 'LOCAL_WORLD_SIZE');
      address ??= env.MASTER_ADDR || undefined;
      if (!address) throw new LaunchEnvError('MASTER_ADDR is not set (torchrun sets it; or set COMMCOST_COORDINATOR_ADDR)');
      if (!env.COMMCOST_PORT && env.MASTER_PORT) {
        portRaw = String(port(env.MASTER_PORT, 'MASTER_PORT') + 1);
        portSource = 'MASTER_PORT + 1';
      }
      token ||= env.TORCHELASTIC_RUN_ID ?? '';
      break;
    }
    case 'mpi':
      rank = int(env, 'OMPI_COMM_WORLD_RANK');
      worldSize = int(env, 'OMPI_COMM_WORLD_SIZE', 1);
      localRank = env.OMPI_COMM_WORLD_LOCAL_RANK ? int(env, 'OMPI_COMM_WORLD_LOCAL_RANK') : rank;
      localWorldSize = optionalInt(env, 'OMPI_COMM_WORLD_LOCAL_SIZE');
      address ??= env.MASTER_ADDR || undefined;
      if (!address) {
        if (localWorldSize === worldSize) address = '127.0.0.1';
        else throw new LaunchEnvError('the ranks span several nodes: set COMMCOST_COORDINATOR_ADDR (or MASTER_ADDR) to rank 0\'s node, e.g. mpirun -x COMMCOST_COORDINATOR_ADDR=node01 …');
      }
      token ||= env.OMPI_MCA_ess_base_jobid ?? env.OMPI_MCA_orte_ess_jobid ?? '';
      break;
    case 'slurm': {
      rank = int(env, 'SLURM_PROCID');
      worldSize = int(env, 'SLURM_NTASKS', 1);
      localRank = env.SLURM_LOCALID ? int(env, 'SLURM_LOCALID') : rank;
      // SLURM_NTASKS_PER_NODE may read "4" or "4(x2)" (Slurm's compressed form).
      const perNode = env.SLURM_NTASKS_PER_NODE?.match(/^(\d+)/)?.[1];
      localWorldSize = perNode ? Number(perNode) : undefined;
      address ??= env.MASTER_ADDR || undefined;
      if (!address) {
        const list = env.SLURM_JOB_NODELIST ?? env.SLURM_NODELIST;
        if (!list) throw new LaunchEnvError('SLURM_JOB_NODELIST is not set: set COMMCOST_COORDINATOR_ADDR to rank 0\'s node');
        address = firstSlurmNode(list);
      }
      token ||= env.SLURM_JOB_ID ?? env.SLURM_JOBID ?? '';
      break;
    }
  }
  if (rank >= worldSize) throw new LaunchEnvError(`rank ${rank} is not below the world size ${worldSize}`);
  if (env.COMMCOST_PORT) {
    portRaw = env.COMMCOST_PORT;
    portSource = 'COMMCOST_PORT';
  } else if (!portRaw && env.MASTER_PORT && kind !== 'torchrun') {
    portRaw = env.MASTER_PORT;
    portSource = 'MASTER_PORT';
  }
  const coordinatorPort = portRaw ? port(portRaw, portSource) : DEFAULT_COORDINATOR_PORT;
  if (!portRaw) portSource = `default ${DEFAULT_COORDINATOR_PORT}`;
  return { launcher: kind, rank, worldSize, localRank, ...(localWorldSize ? { localWorldSize } : {}), coordinatorAddress: address, coordinatorPort, portSource, token };
}
