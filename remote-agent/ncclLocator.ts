/**
 * Finds libnccl.so.2 on this host, in the order DESIGN.md gives: an explicit path (flag,
 * setting or COMMCOST_NCCL_PATH) → the NCCL wheel next to the host's Python/torch → the
 * dynamic loader's path → standard CUDA folders.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hostPython } from './environment';

export interface NcclLocation {
  path: string;
  /** "explicit", "python-wheel", "loader", "cuda-folder" or "simulated". */
  source: string;
}

/** Standard folders searched last. */
export const CUDA_FOLDERS = [
  '/usr/local/cuda/lib64',
  '/usr/local/cuda/lib',
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/local/lib',
  '/opt/nccl/lib',
];

const PY_PROBE = [
  'import os, importlib.util',
  "s = importlib.util.find_spec('nvidia.nccl')",
  'locs = list(s.submodule_search_locations or []) if s else []',
  "print(os.path.join(locs[0], 'lib', 'libnccl.so.2') if locs else '')",
].join('\n');

/**
 * The wheel's libnccl.so.2 as `python` sees it (5 s deadline).
 * @param python the Python to ask (default: {@link hostPython} without an option).
 * @returns the library's path, or undefined when that Python does not run, has no nvidia-nccl
 * wheel, or the wheel has no library.
 */
export function pythonWheelNccl(python: string = hostPython()): string | undefined {
  try {
    const out = execFileSync(python, ['-c', PY_PROBE], { timeout: 5000, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return out && fs.existsSync(out) ? out : undefined;
  } catch {
    return undefined;
  }
}

/** libnccl.so.2 known to the loader (LD_LIBRARY_PATH, then `ldconfig -p`), or undefined. */
export function loaderNccl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean)) {
    const p = path.join(dir, 'libnccl.so.2');
    if (fs.existsSync(p)) return p;
  }
  for (const ldconfig of ['/sbin/ldconfig', '/usr/sbin/ldconfig', 'ldconfig']) {
    try {
      const out = execFileSync(ldconfig, ['-p'], { timeout: 3000, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      const m = /libnccl\.so\.2 \([^)]*x86-64[^)]*\) => (\S+)|libnccl\.so\.2 \([^)]*\) => (\S+)/.exec(out);
      const found = m?.[1] ?? m?.[2];
      if (found) return found;
    } catch {
      // try the next spelling
    }
  }
  return undefined;
}

/**
 * Every place searched, for the error message when nothing is found.
 * @param python the Python whose wheel was searched (default: {@link hostPython} without an option).
 */
export function searchedPlaces(explicit?: string, python: string = hostPython()): string[] {
  return [
    explicit ? `explicit path ${explicit}` : 'explicit path (none given: --nccl, commcost.ncclPath or COMMCOST_NCCL_PATH)',
    `the nvidia-nccl wheel of ${python} (nvidia/nccl/lib/libnccl.so.2)`,
    'LD_LIBRARY_PATH and ldconfig -p',
    ...CUDA_FOLDERS,
  ];
}

/**
 * Locates NCCL.
 * @param explicit a path given by flag or setting (wins; must exist).
 * @param env where COMMCOST_NCCL_PATH, COMMCOST_PYTHON and LD_LIBRARY_PATH are read.
 * @param python the run's `python` option: the Python whose wheel is searched ({@link hostPython}).
 * @returns the location, or undefined when nothing was found (see {@link searchedPlaces}).
 * @throws Error when the explicit path does not exist.
 */
export function locateNccl(explicit?: string, env: NodeJS.ProcessEnv = process.env, python?: string): NcclLocation | undefined {
  const given = explicit || env.COMMCOST_NCCL_PATH;
  if (given) {
    if (!fs.existsSync(given)) throw new Error(`the NCCL library ${given} does not exist`);
    return { path: given, source: 'explicit' };
  }
  const wheel = pythonWheelNccl(hostPython(python, env));
  if (wheel) return { path: wheel, source: 'python-wheel' };
  const loader = loaderNccl(env);
  if (loader) return { path: loader, source: 'loader' };
  for (const dir of CUDA_FOLDERS) {
    const p = path.join(dir, 'libnccl.so.2');
    if (fs.existsSync(p)) return { path: p, source: 'cuda-folder' };
  }
  return undefined;
}
