// build.mjs: builds the native artifacts with the host's compilers (no node-gyp, no downloads).
//   dist/native/commcost.node    the addon (C++17, node-addon-api, N-API 8)
//   dist/native/libnccl-sim.so   the simulated NCCL + CUDA driver (test fixture)
//   dist/native/libnccl-sim-legacy.so   the same, without the symbols newer than NCCL 2.19
//   dist/native/linux-<arch>/{commcost.node,libnccl-sim.so}   per-architecture copies the agent
//       loads first: the host's architecture always; with --prebuilt, linux-x64 and linux-arm64
//       (the other one cross-compiled: apt-get install g++-aarch64-linux-gnu / g++-x86-64-linux-gnu)
//   dist/native/libcommcost-profiler.so   the NCCL profiler plugin of `commcost trace` (C11), also
//       per architecture under linux-<arch>/ like the addon
//   dist/native/libcommcost-interposer.so   the LD_PRELOAD interposer of `commcost trace --interpose`
//       over NCCL's lifecycle calls (C11), also per architecture under linux-<arch>/
//   dist/native/src/, dist/native/include/   the addon's sources, headers and build.json, shipped
//       so that the agent can build the addon on a host with no matching prebuilt
// Usage: node native/build.mjs [--force] [--prebuilt] [--out <dir>]   or   import { buildNative } from './build.mjs'
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
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

async function copyIfStale(from, to) {
  if (!(await stale(to, [from]))) return to;
  await mkdir(path.dirname(to), { recursive: true });
  await copyFile(from, to);
  return to;
}

/**
 * Compiler flags of the addon, shared by this build and the agent's on-host build (which reads
 * them from the shipped src/build.json). `glibcCompat.h` is force-included so that the binaries
 * need glibc >= 2.17 and libstdc++ >= GCC 5 only (native/README.md).
 */
export const ADDON_FLAGS = [
  '-std=c++17', '-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-fvisibility=hidden', '-fexceptions',
  '-DNAPI_VERSION=8', '-DNAPI_CPP_EXCEPTIONS',
];
export const ADDON_LIBS = ['-ldl', '-pthread'];
// Our own builds (the packaging machine: glibc) also record libdl.so.2 and libpthread.so.0 as
// needed, so that the base-version dlopen/pthread_* symbols of glibcCompat.h are found there on
// a glibc older than 2.34 whatever the loading program links.
const GLIBC_NEEDED = ['-Wl,--push-state,--no-as-needed', '-l:libdl.so.2', '-l:libpthread.so.0', '-Wl,--pop-state'];
const SIM_FLAGS = ['-std=c11', '-O2', '-Wall', '-Wextra', '-fPIC', '-shared', '-pthread'];

/** Prebuilt architectures (Node's process.arch) and their Debian cross compilers. */
export const PREBUILT_ARCHES = {
  x64: { cxx: 'x86_64-linux-gnu-g++', cc: 'x86_64-linux-gnu-gcc', apt: 'g++-x86-64-linux-gnu' },
  arm64: { cxx: 'aarch64-linux-gnu-g++', cc: 'aarch64-linux-gnu-gcc', apt: 'g++-aarch64-linux-gnu' },
};

/** Copies the addon's sources and the Node-API headers into `<out>/src` and `<out>/include`. */
async function stageSources(out, addonSources, addonHeaders, addonApi, apiHeaders) {
  const srcOut = path.join(out, 'src');
  const copies = [];
  for (const f of [...addonSources, ...addonHeaders]) copies.push(copyIfStale(f, path.join(srcOut, path.basename(f))));
  for (const f of ['napi.h', 'napi-inl.h', 'napi-inl.deprecated.h', 'LICENSE.md']) {
    copies.push(copyIfStale(path.join(addonApi, f), path.join(out, 'include', 'node-addon-api', f)));
  }
  for (const f of await listFiles(apiHeaders, ['.h'])) copies.push(copyIfStale(f, path.join(out, 'include', 'node-api-headers', path.basename(f))));
  copies.push(copyIfStale(path.join(apiHeaders, '..', 'LICENSE'), path.join(out, 'include', 'node-api-headers', 'LICENSE')));
  await Promise.all(copies);
  const manifest = {
    comment: 'Read by the agent (remote-agent/addonBuild.ts) to build commcost.node on a host with no matching prebuilt.',
    sources: addonSources.map((f) => path.basename(f)).sort(),
    include: ['../include/node-addon-api', '../include/node-api-headers'],
    forceInclude: 'glibcCompat.h',
    flags: ADDON_FLAGS,
    libs: ADDON_LIBS,
  };
  await writeFile(path.join(srcOut, 'build.json'), JSON.stringify(manifest, null, 2) + '\n');
}

/**
 * Builds the addon and the simulated NCCL into `outDir` (relative to the repository root unless
 * absolute). Skips an artifact whose output is newer than all of its sources unless `force`.
 * Compilers: $CXX / $CC, else `c++` / `cc`. Throws with the compiler's stderr on failure.
 * @returns {Promise<{addon: string, sim: string, simLegacy: string, profiler: string, interposer: string}>} absolute paths of the artifacts
 */
export async function buildNative({ outDir = 'dist/native', force = false, prebuilt = false } = {}) {
  const out = path.resolve(repoRoot, outDir);
  await mkdir(out, { recursive: true });
  const srcDir = path.join(nativeDir, 'src');
  const addonSources = await listFiles(srcDir, ['.cc']);
  const addonHeaders = await listFiles(srcDir, ['.h']);
  const addonOut = path.join(out, 'commcost.node');
  const addonApi = path.join(repoRoot, 'node_modules', 'node-addon-api');
  const apiHeaders = path.join(repoRoot, 'node_modules', 'node-api-headers', 'include');
  const thisFile = fileURLToPath(import.meta.url);
  const compat = path.join(srcDir, 'glibcCompat.h');
  const addonArgs = (output) => [
    ...ADDON_FLAGS, '-include', compat, `-I${addonApi}`, `-I${apiHeaders}`, ...addonSources, '-o', output, ...ADDON_LIBS, ...GLIBC_NEEDED,
  ];
  // The simulated NCCL: every .c file of native/sim/ (split by concern) and their internal header.
  const simDir = path.join(nativeDir, 'sim');
  const simSources = (await listFiles(simDir, ['.c'])).sort();
  const simInputs = [...simSources, ...(await listFiles(simDir, ['.h'])), path.join(nativeDir, 'profiler', 'profilerAbi.h'), compat, thisFile];
  const simArgs = (output, extra = []) => [...SIM_FLAGS, '-include', compat, ...extra, ...simSources, '-o', output, ...GLIBC_NEEDED];

  const addon = compile(
    'addon',
    addonOut,
    [...addonSources, ...addonHeaders, thisFile],
    process.env.CXX || 'c++',
    addonArgs(addonOut),
    force,
  );
  const simOut = path.join(out, 'libnccl-sim.so');
  const sim = compile(
    'simulated NCCL',
    simOut,
    simInputs,
    process.env.CC || 'cc',
    simArgs(simOut),
    force,
  );
  // The same sources without the symbols newer than 2.19 (shrink, grow, revoke, windows, suspend):
  // tests of the addon's "not in this NCCL" errors.
  const legacyOut = path.join(out, 'libnccl-sim-legacy.so');
  const legacy = compile(
    'simulated NCCL (legacy)',
    legacyOut,
    simInputs,
    process.env.CC || 'cc',
    simArgs(legacyOut, ['-DCOMMCOST_SIM_LEGACY']),
    force,
  );
  // The profiler plugin of `commcost trace` (native/profiler/): one C11 file, no NCCL or CUDA link.
  const profilerSource = path.join(nativeDir, 'profiler', 'commcostProfiler.c');
  const profilerInputs = [profilerSource, path.join(nativeDir, 'profiler', 'profilerAbi.h'), compat, thisFile];
  const profilerArgs = (output) => [...SIM_FLAGS, '-fvisibility=hidden', '-include', compat, profilerSource, '-o', output, '-ldl', ...GLIBC_NEEDED];
  const profilerOut = path.join(out, 'libcommcost-profiler.so');
  const profiler = compile('profiler plugin', profilerOut, profilerInputs, process.env.CC || 'cc', profilerArgs(profilerOut), force);
  // The LD_PRELOAD interposer of `commcost trace --interpose` (native/interposer/): one C11 file, no NCCL link.
  const interposerSource = path.join(nativeDir, 'interposer', 'commcostInterposer.c');
  const interposerInputs = [interposerSource, compat, thisFile];
  const interposerArgs = (output) => [...SIM_FLAGS, '-fvisibility=hidden', '-include', compat, interposerSource, '-o', output, '-ldl', ...GLIBC_NEEDED];
  const interposerOut = path.join(out, 'libcommcost-interposer.so');
  const interposer = compile('interposer', interposerOut, interposerInputs, process.env.CC || 'cc', interposerArgs(interposerOut), force);
  // linux-<arch>/: what the agent loads first. The host's architecture is a copy of the build
  // above; with `prebuilt`, every other architecture of PREBUILT_ARCHES is cross-compiled.
  const archDir = (arch) => path.join(out, `linux-${arch}`);
  const perArch = [
    addon.then((a) => copyIfStale(a, path.join(archDir(process.arch), 'commcost.node'))),
    sim.then((s) => copyIfStale(s, path.join(archDir(process.arch), 'libnccl-sim.so'))),
    profiler.then((p) => copyIfStale(p, path.join(archDir(process.arch), 'libcommcost-profiler.so'))),
    interposer.then((p) => copyIfStale(p, path.join(archDir(process.arch), 'libcommcost-interposer.so'))),
  ];
  if (prebuilt) {
    for (const [arch, tools] of Object.entries(PREBUILT_ARCHES)) {
      if (arch === process.arch) continue;
      await mkdir(archDir(arch), { recursive: true });
      const cross = (label, compiler, output, inputs, args) =>
        compile(label, output, inputs, compiler, args, force).catch((err) => {
          throw new Error(`${err.message}\n(cross compiler for linux-${arch}: apt-get install -y ${tools.apt})`);
        });
      const crossAddon = path.join(archDir(arch), 'commcost.node');
      perArch.push(cross(`addon linux-${arch}`, tools.cxx, crossAddon, [...addonSources, ...addonHeaders, thisFile], addonArgs(crossAddon)));
      const crossSim = path.join(archDir(arch), 'libnccl-sim.so');
      perArch.push(cross(`simulated NCCL linux-${arch}`, tools.cc, crossSim, simInputs, simArgs(crossSim)));
      const crossProfiler = path.join(archDir(arch), 'libcommcost-profiler.so');
      perArch.push(cross(`profiler plugin linux-${arch}`, tools.cc, crossProfiler, profilerInputs, profilerArgs(crossProfiler)));
      const crossInterposer = path.join(archDir(arch), 'libcommcost-interposer.so');
      perArch.push(cross(`interposer linux-${arch}`, tools.cc, crossInterposer, interposerInputs, interposerArgs(crossInterposer)));
    }
  }
  // The Python hook of `commcost trace` (sitecustomize.py and its sibling modules), shipped beside the plugin.
  const pyhook = Promise.all(['sitecustomize.py', 'commcost_ffi.py', 'commcost_ray.py', 'commcost_cext.py'].map((f) => copyIfStale(path.join(nativeDir, 'pyhook', f), path.join(out, 'pyhook', f))));
  const staged = stageSources(out, addonSources, addonHeaders, addonApi, apiHeaders);
  const [addonPath, simPath, legacyPath, profilerPath, interposerPath] = await Promise.all([addon, sim, legacy, profiler, interposer, staged, pyhook, ...perArch]);
  return { addon: addonPath, sim: simPath, simLegacy: legacyPath, profiler: profilerPath, interposer: interposerPath };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const outIdx = args.indexOf('--out');
  buildNative({ force: args.includes('--force'), prebuilt: args.includes('--prebuilt'), outDir: outIdx >= 0 ? args[outIdx + 1] : undefined }).catch(
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
