/**
 * Runs through a Slurm login node: the user's allocation options become the `srun` arguments the
 * agent on the login node starts the job step with (remote-agent/slurm.ts). Each option is one
 * argv element in `--name=value` form; nothing is ever joined into shell text.
 */
import { CommcostError } from './errors';

/** What the user chose for the job step (CLI flags or the `commcost.slurm` setting). */
export interface SlurmOptions {
  partition?: string;
  account?: string;
  /** Nodes of the step (default 1). */
  nodes?: number;
  /** GPUs per node = ranks per node (one task per GPU; default 1). */
  gpusPerNode?: number;
  /** Time limit, in a form srun takes (`10`, `0:10:00`, `1-00:00:00`). */
  time?: string;
  /** More srun options, each one argv element starting with `-` (e.g. `--qos=debug`). */
  extraArgs?: string[];
  /** srun on the login node (default: `srun` on its PATH). */
  srunPath?: string;
}

const NAME = /^[A-Za-z0-9_.:+@%-]{1,128}$/;
const TIME = /^(\d+-)?\d{1,4}(:\d{1,2}){0,2}$/;

function refuse(what: string, hint: string): never {
  throw new CommcostError('BAD_INPUT', what, { hint });
}

/** srun's long options that change which tasks run where, or what each runs. */
const LAYOUT_OPTIONS = [
  'ntasks', 'ntasks-per-node', 'ntasks-per-socket', 'ntasks-per-core', 'ntasks-per-gpu', 'nodes', 'nodelist', 'gpus', 'gpus-per-node',
  'gpus-per-task', 'gpus-per-socket', 'gres', 'tres-per-task', 'multi-prog', 'distribution', 'het-group', 'pack-group', 'relative', 'arbitrary',
];
/** srun's short options among them: -n (ntasks), -N (nodes), -G (gpus), -m (distribution), -w (nodelist), -r (relative). */
const LAYOUT_SHORT = /[nNGmwr]/;
/** srun's short options that take a value (`-Aproj`: the rest of the cluster is the value). */
const SHORT_WITH_VALUE = 'ABCcDdeGiJKLMmNnopqrSTtWwx';

/**
 * True when an srun option would change the task layout: a short option cluster holding one of
 * LAYOUT_SHORT (`-N9`, `-n2`, `-lN2`), or a long option that is one of LAYOUT_OPTIONS or an
 * abbreviation srun accepts of one (`--gpus=2`, `--ntask=2`, `--multi-prog`).
 */
export function changesLayout(option: string): boolean {
  if (/^-[^-]/.test(option)) {
    // A cluster as getopt reads it: flags, until one that takes a value (the rest is its value).
    for (const c of option.slice(1)) {
      if (LAYOUT_SHORT.test(c)) return true;
      if (SHORT_WITH_VALUE.includes(c) || !/[A-Za-z]/.test(c)) return false;
    }
    return false;
  }
  const name = option.replace(/^--/, '').split('=')[0]!.toLowerCase();
  return name.length >= 2 && LAYOUT_OPTIONS.some((o) => o === name || (name.length >= 3 && o.startsWith(name)));
}

/**
 * The srun arguments of a job step with one task per GPU: `--nodes=N --ntasks-per-node=G
 * --gpus-per-node=G` plus partition, account, time and the extra options, in that order.
 * @throws CommcostError BAD_INPUT naming the option and value (names with spaces, shell
 *   characters or a leading `-`; counts out of 1–1024; extra options that are not options;
 *   extra options that would change the task layout, which commcost sets itself).
 */
export function srunArgsFor(o: SlurmOptions): string[] {
  const nodes = o.nodes ?? 1;
  const gpus = o.gpusPerNode ?? 1;
  for (const [flag, n] of [['--slurm-nodes', nodes], ['--gpus-per-node', gpus]] as const) {
    if (!Number.isInteger(n) || n < 1 || n > 1024) refuse(`${flag} must be a whole number from 1 to 1024, got ${String(n)}`, `e.g. ${flag} 2`);
  }
  const args = [`--nodes=${nodes}`, `--ntasks-per-node=${gpus}`, `--gpus-per-node=${gpus}`];
  for (const [flag, value] of [['--partition', o.partition], ['--account', o.account]] as const) {
    if (value === undefined || value === '') continue;
    if (!NAME.test(value) || value.startsWith('-')) refuse(`${flag} ${JSON.stringify(value)} is not a Slurm name (letters, digits, _ . : + @ % -, not starting with -)`, `check the name with sinfo / sacctmgr`);
    args.push(`${flag}=${value}`);
  }
  if (o.time !== undefined && o.time !== '') {
    if (!TIME.test(o.time)) refuse(`--time ${JSON.stringify(o.time)} is not a Slurm time limit`, 'e.g. 10 (minutes), 0:10:00 or 1-00:00:00');
    args.push(`--time=${o.time}`);
  }
  for (const extra of o.extraArgs ?? []) {
    // eslint-disable-next-line no-control-regex -- refusing control characters is the point
    if (!extra.startsWith('-') || /[\x00-\x1f\x7f]/.test(extra)) refuse(`--srun-arg ${JSON.stringify(extra)} is not an srun option`, 'give one option per --srun-arg, e.g. --srun-arg=--qos=debug');
    if (changesLayout(extra)) refuse(`--srun-arg ${extra} changes the task layout, which commcost sets (one task per GPU)`, 'use --slurm-nodes and --gpus-per-node');
    args.push(extra);
  }
  return args;
}
