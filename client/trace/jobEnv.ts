/**
 * The environment variables `commcost trace` adds for NCCL's own log and for the C interposer
 * (pure; the engine, client/trace/run.ts `traceEnv`, merges them into the job's environment).
 * Only variables are added or prepended; a variable the user set is never replaced or lost.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CommcostError } from '../errors';
import { NCCL_LOG_SUFFIX } from './ncclView';

/**
 * The C interposer library (libcommcost-interposer.so) next to the running bundle: `<base>/native`
 * or `<base>/../dist/native`, the per-architecture copy first.
 * @throws CommcostError BAD_INPUT when it is not there (with how to build it)
 */
export function interposerPath(base: string): string {
  for (const d of [join(base, 'native'), join(base, '..', 'dist', 'native')])
    for (const f of [join(d, `linux-${process.arch}`, 'libcommcost-interposer.so'), join(d, 'libcommcost-interposer.so')]) if (existsSync(f)) return f;
  throw new CommcostError('BAD_INPUT', `commcost trace --interpose: the interposer libcommcost-interposer.so was not found next to ${base}`, { hint: 'build it: node native/build.mjs (or reinstall commcost)' });
}

/** Whether and how NCCL's log is asked for: the variables to add, or why it is not. */
export interface NcclLogEnv {
  add: Record<string, string>;
  /** Why NCCL's view will be missing (said in the trace), when the log is not asked for. */
  skipped?: string;
}

/**
 * NCCL's `Init timings` log: NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT and a per-process
 * NCCL_DEBUG_FILE `<recordsDir>/%h-%p.nccl.log` (NCCL expands %h to the host name, %p to the pid),
 * only when the user set neither NCCL_DEBUG nor NCCL_DEBUG_FILE: otherwise the user's own log
 * settings (and where their log goes: stdout or their file) stay exactly as they were, and the
 * trace says that NCCL's view was not read. NCCL_DEBUG_SUBSYS without NCCL_DEBUG prints nothing,
 * so replacing it changes nothing the user sees. With NCCL_DEBUG unset NCCL prints nothing at all,
 * so moving its INFO lines to a file leaves the job's output as it was.
 * @param base the job's environment before tracing
 * @param recordsDir the folder of the per-process records (absolute)
 * @param enabled false: the user turned it off (--no-nccl-log)
 */
export function ncclLogEnv(base: NodeJS.ProcessEnv, recordsDir: string, enabled = true): NcclLogEnv {
  if (!enabled) return { add: {}, skipped: "NCCL's log was not asked for (--no-nccl-log)" };
  if (base.NCCL_DEBUG !== undefined && base.NCCL_DEBUG !== '')
    return { add: {}, skipped: `NCCL_DEBUG=${base.NCCL_DEBUG} was set by you: your NCCL log settings were kept, so NCCL's Init timings were not read` };
  if (base.NCCL_DEBUG_FILE !== undefined && base.NCCL_DEBUG_FILE !== '')
    return { add: {}, skipped: 'NCCL_DEBUG_FILE was set by you: your NCCL log settings were kept, so NCCL\'s Init timings were not read' };
  return { add: { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT', NCCL_DEBUG_FILE: `${recordsDir}/%h-%p${NCCL_LOG_SUFFIX}` } };
}

/**
 * The C interposer (native/interposer/): its library first in LD_PRELOAD, the user's preloads kept
 * after it (LD_PRELOAD is separated by spaces or colons; ours is joined with a colon, the user's
 * text is kept as it was).
 * @param base the job's environment before tracing
 * @param lib the interposer's absolute path (no space or colon in it, else it is refused)
 * @throws Error when `lib` holds a space or a colon (LD_PRELOAD could not carry it)
 */
export function interposerEnv(base: NodeJS.ProcessEnv, lib: string): Record<string, string> {
  if (/[\s:]/.test(lib)) throw new Error(`the interposer's path ${lib} holds a space or a colon: LD_PRELOAD cannot carry it; install commcost in a folder without them`);
  const user = base.LD_PRELOAD?.trim();
  return { LD_PRELOAD: user ? `${lib}:${user}` : lib };
}
