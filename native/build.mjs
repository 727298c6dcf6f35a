// build.mjs: builds the native artifacts with the host's compilers (no node-gyp, no downloads).
//   dist/native/commcost.node    the addon (C++17, node-addon-api, N-API 8)
//   dist/native/libnccl-sim.so   the simulated NCCL + CUDA driver (test fixture)
//   dist/native/libnccl-sim-legacy.so   the same, without the symbols newer than NCCL 2.19
// Usage: node native/build.mjs [--force] [--out <dir>]   or   import { buildNative } from './build.mjs'
import { execFile } from 'node:child_process';
import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const nativeDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.dirname(nativeDir);

async function mtimeMs(file) {
  try {
    return (await stat(file)).mtimeMs;
  } catch {
    return -1;
  }
}

async function listFiles(dir, exts) {
  const names = await readdir(dir);
  return names.filter((n) => exts.some((e) => n.endsWith(e))).map((n) => path.join(dir, n));
}

/** True when `output` is missing or older than any of `inputs`. */
async function stale(output, inputs) {
  const out = await mtimeMs(output);
  if (out < 0) return true;
  for (const input of inputs) if ((await mtimeMs(input)) > out) return true;
  return false;
}

async function compile(label, output, inputs, compiler, args, force) {
  if (!force && !(await stale(output, inputs))) {
    console.log(`native: ${label} up to date (${path.relative(repoRoot, output)})`);
    return output;
  }
  const t0 = performance.now();
  try {
    await run(compiler, args, { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const detail = err.stderr || err.message;
    throw new Error(`native: building ${label} with ${compiler} failed:\n${detail}`);
  }
  const ms = Math.round(performance.now() - t0);
  console.log(`native: built ${label} -> ${path.relative(repoRoot, output)} (${ms} ms)`);
  return output;
}

/**
 * Builds the addon and the simulated NCCL into `outDir` (relative to the repository root unless
 * absolute). Skips an artifact whose output is newer than all of its sources unless `force`.
 * Compilers: $CXX / $CC, else `c++` / `cc`. Throws with the compiler's stderr on failure.
 * @returns {Promise<{addon: string, sim: string, simLegacy: string}>} absolute paths of the artifacts
 */
export async function buildNative({ outDir = 'dist/native', force = false } = {}) {
  const out = path.resolve(repoRoot, outDir);
  await mkdir(out, { recursive: true });
  const srcDir = path.join(nativeDir, 'src');
  const addonSources = await listFiles(srcDir, ['.cc']);
  const addonHeaders = await listFiles(srcDir, ['.h']);
  const addonOut = path.join(out, 'commcost.node');
  const addonApi = path.join(repoRoot, 'node_modules', 'node-addon-api');
  const apiHeaders = path.join(repoRoot, 'node_modules', 'node-api-headers', 'include');
  const thisFile = fileURLToPath(import.meta.url);

  const addon = compile(
    'addon',
    addonOut,
    [...addonSources, ...addonHeaders, thisFile],
    process.env.CXX || 'c++',
    [
      '-std=c++17', '-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-fvisibility=hidden', '-fexceptions',
      '-DNAPI_VERSION=8', '-DNAPI_CPP_EXCEPTIONS', `-I${addonApi}`, `-I${apiHeaders}`,
      ...addonSources, '-o', addonOut, '-ldl', '-pthread',
    ],
    force,
  );
  const simSource = path.join(nativeDir, 'sim', 'ncclsim.c');
  const simOut = path.join(out, 'libnccl-sim.so');
  const sim = compile(
    'simulated NCCL',
    simOut,
    [simSource, thisFile],
    process.env.CC || 'cc',
    ['-std=c11', '-O2', '-Wall', '-Wextra', '-fPIC', '-shared', '-pthread', simSource, '-o', simOut],
    force,
  );
  // The same file without the symbols newer than 2.19 (shrink, grow, revoke, windows, suspend):
  // tests of the addon's "not in this NCCL" errors.
  const legacyOut = path.join(out, 'libnccl-sim-legacy.so');
  const legacy = compile(
    'simulated NCCL (legacy)',
    legacyOut,
    [simSource, thisFile],
    process.env.CC || 'cc',
    ['-std=c11', '-O2', '-Wall', '-Wextra', '-fPIC', '-shared', '-pthread', '-DCOMMCOST_SIM_LEGACY', simSource, '-o', legacyOut],
    force,
  );
  const [addonPath, simPath, legacyPath] = await Promise.all([addon, sim, legacy]);
  return { addon: addonPath, sim: simPath, simLegacy: legacyPath };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const outIdx = args.indexOf('--out');
  buildNative({ force: args.includes('--force'), outDir: outIdx >= 0 ? args[outIdx + 1] : undefined }).catch(
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
