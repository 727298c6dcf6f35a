/**
 * The native addon built on the GPU host itself, when no prebuilt one loads there: another
 * architecture than linux-x64 / linux-arm64, or a prebuilt that the host's C library or
 * libstdc++ refuses (the prebuilt binaries need glibc ≥ 2.17 and libstdc++ of GCC ≥ 5).
 *
 * The payload ships the addon's sources (`native/src/`: *.cc, *.h and `build.json`, the flags of
 * native/build.mjs) and the Node-API headers (`native/include/`). The host's `c++` ($CXX)
 * compiles them, without any network, into `<bundle>/native/build/<platform>-<arch>/` — where
 * native/index.js looks first after the prebuilt — or, when the deploy folder is not writable,
 * into `~/.cache/commcost/addon-<sources hash>/<platform>-<arch>/`. What happens is said on
 * stderr (stdout carries protocol lines only). The built path is put in $COMMCOST_NATIVE, so the
 * rank processes the coordinator starts load it directly.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** `src/build.json`, written by native/build.mjs. */
interface BuildManifest {
  sources: string[];
  /** Include folders relative to the sources folder. */
  include: string[];
  forceInclude?: string;
  flags: string[];
  libs: string[];
}

export interface HostBuildOptions {
  /** The shipped sources folder (holding `build.json`). */
  sourceDir: string;
  /** Where `commcost.node` is written. */
  outDir: string;
  /** Compiler: default $CXX, else `c++`. */
  cxx?: string;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
  /** Compiler time limit (default 10 minutes). */
  timeoutMs?: number;
}

/** A failed on-host build: `command` is the compiler command line, `output` what it printed. */
export class AddonBuildError extends Error {
  readonly code = 'LOAD';
  readonly call = 'c++';
  readonly where = 'remote-agent/addonBuild.ts';
  constructor(
    message: string,
    readonly command: string,
    readonly output: string,
  ) {
    super(message);
    this.name = 'AddonBuildError';
  }
}

const platformArch = `${process.platform}-${process.arch}`;

function stderrLog(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Shell-like rendering of a command line, for messages only. */
function commandText(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

function readManifest(sourceDir: string): BuildManifest {
  const file = path.join(sourceDir, 'build.json');
  let manifest: BuildManifest;
  try {
    manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as BuildManifest;
  } catch (e) {
    throw new AddonBuildError(`cannot read the addon's build description ${file}: ${(e as Error).message}`, '', '');
  }
  if (!Array.isArray(manifest.sources) || manifest.sources.length === 0 || !Array.isArray(manifest.flags)) {
    throw new AddonBuildError(`${file} lists no sources or flags`, '', '');
  }
  return manifest;
}

/**
 * Compiles the shipped sources into `<outDir>/commcost.node` (written under a temporary name,
 * then renamed, so a concurrent build or load never sees half a file).
 * @returns the path of the built addon
 * @throws AddonBuildError naming the compiler command and its output when the build fails
 */
export function buildAddonOnHost(options: HostBuildOptions): string {
  const { sourceDir, outDir } = options;
  const cxx = options.cxx ?? (process.env.CXX || 'c++');
  const log = options.log ?? stderrLog;
  const manifest = readManifest(sourceDir);
  fs.mkdirSync(outDir, { recursive: true });
  const output = path.join(outDir, 'commcost.node');
  const temp = path.join(outDir, `commcost.node.${process.pid}.tmp`);
  const args = [
    ...manifest.flags,
    ...(manifest.forceInclude ? ['-include', path.join(sourceDir, manifest.forceInclude)] : []),
    ...manifest.include.map((dir) => `-I${path.resolve(sourceDir, dir)}`),
    ...manifest.sources.map((f) => path.join(sourceDir, f)),
    '-o',
    temp,
    ...manifest.libs,
  ];
  const command = commandText([cxx, ...args]);
  const t0 = Date.now();
  try {
    execFileSync(cxx, args, {
      cwd: sourceDir,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 600_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (e) {
    fs.rmSync(temp, { force: true });
    const err = e as NodeJS.ErrnoException & { stdout?: Buffer; stderr?: Buffer; status?: number | null; signal?: string | null };
    if (err.code === 'ENOENT') {
      throw new AddonBuildError(
        `cannot build the commcost native addon for ${platformArch}: no C++ compiler '${cxx}' on this host. ` +
          'Install a C++17 compiler (e.g. g++ ≥ 7) or set CXX to one.\n' +
          `command: ${command}`,
        command,
        '',
      );
    }
    const text = `${err.stderr?.toString() ?? ''}${err.stdout?.toString() ?? ''}`.trim();
    const tail = text.length > 8000 ? `…${text.slice(-8000)}` : text;
    const how = err.signal ? `was stopped by ${err.signal}` : `exited with ${String(err.status ?? err.code ?? 'an error')}`;
    throw new AddonBuildError(
      `building the commcost native addon for ${platformArch} failed: ${cxx} ${how}.\n` +
        `command: ${command}\n` +
        `output:\n${tail || '(none)'}\n` +
        'It needs a C++17 compiler (g++ ≥ 7 or clang ≥ 5); set CXX to another compiler if this one is too old.',
      command,
      text,
    );
  }
  fs.renameSync(temp, output);
  log(`commcost: built ${output} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return output;
}

/** First of `dirs` that can be created and written to. */
function writableDir(dirs: readonly string[]): string | undefined {
  for (const dir of dirs) {
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.accessSync(dir, fs.constants.W_OK);
      return dir;
    } catch {
      // next one
    }
  }
  return undefined;
}

/** Hash of the sources' names and contents: names the fallback build folder. */
function sourcesHash(sourceDir: string): string {
  const h = createHash('sha256');
  for (const name of fs.readdirSync(sourceDir).sort()) {
    const file = path.join(sourceDir, name);
    if (fs.statSync(file).isFile()) h.update(name).update('\0').update(fs.readFileSync(file)).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

export interface LoadOrBuildOptions {
  /** Folder of the running bundle (default: this file's folder, i.e. the deployed agent's). */
  bundleDir?: string;
  /** Sources folder (default: `<bundleDir>/native/src`, else `dist/native/src` of a checkout). */
  sourceDir?: string;
  /** Output folder (default: `<bundleDir>/native/build/<platform>-<arch>`, else ~/.cache/commcost/…). */
  outDir?: string;
  cxx?: string;
  log?: (line: string) => void;
}

/**
 * Returns `loadPrebuilt()`; when that fails with a LOAD error (no prebuilt for this platform,
 * or it does not load here), builds the addon from the shipped sources and loads that instead.
 * @throws the loader's error, extended with why the on-host build did not help
 */
export function loadOrBuildAddon<T>(loadPrebuilt: () => T, options: LoadOrBuildOptions = {}): T {
  let loadError: Error;
  try {
    const binding = loadPrebuilt();
    // A bundled module whose first evaluation threw is returned empty the second time.
    if (typeof (binding as { load?: unknown } | undefined)?.load === 'function') return binding;
    loadError = Object.assign(new Error('the commcost native addon loader returned no addon (it failed earlier in this process)'), {
      code: 'LOAD',
    });
  } catch (e) {
    if (!(e instanceof Error) || (e as { code?: unknown }).code !== 'LOAD') throw e;
    loadError = e;
  }
  return buildAndLoad<T>(loadError, options);
}

function buildAndLoad<T>(loadError: Error, options: LoadOrBuildOptions): T {
  const log = options.log ?? stderrLog;
  const bundleDir = options.bundleDir ?? __dirname;
  const sourceCandidates = options.sourceDir
    ? [options.sourceDir]
    : [path.join(bundleDir, 'native', 'src'), path.join(bundleDir, '..', 'dist', 'native', 'src')];
  const sourceDir = sourceCandidates.find((d) => fs.existsSync(path.join(d, 'build.json')));
  if (!sourceDir) {
    loadError.message += `\nNo addon sources to build it on this host either (looked for build.json in ${sourceCandidates.join(', ')}); a deploy leaves them out where the payload has a prebuilt addon for the host's platform (${platformArch}).`;
    throw loadError;
  }
  const prebuilt = path.join(bundleDir, 'native', platformArch, 'commcost.node');
  const why = fs.existsSync(prebuilt) ? `the prebuilt addon ${prebuilt} did not load` : `no prebuilt addon for ${platformArch}`;
  const outCandidates = options.outDir
    ? [options.outDir]
    : [
        path.join(bundleDir, 'native', 'build', platformArch),
        path.join(os.homedir(), '.cache', 'commcost', `addon-${sourcesHash(sourceDir)}`, platformArch),
      ];
  const outDir = writableDir(outCandidates);
  if (!outDir) {
    loadError.message += `\nCannot build it on this host: none of ${outCandidates.join(', ')} is writable.`;
    throw loadError;
  }
  const cxx = options.cxx ?? (process.env.CXX || 'c++');
  log(`commcost: ${why}; building it with ${cxx} from ${sourceDir} into ${outDir} (once per deployed version; this takes a minute) …`);
  let built: string;
  try {
    built = buildAddonOnHost({ sourceDir, outDir, cxx, log });
  } catch (e) {
    if (e instanceof Error) e.message += `\n(the on-host build was tried because ${why}; the loader said: ${loadError.message})`;
    throw e;
  }
  let binding: T;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    binding = require(built) as T;
  } catch (e) {
    const err = new AddonBuildError(
      `the commcost native addon built on this host (${built}) does not load: ${(e as Error).message}`,
      '',
      '',
    );
    throw err;
  }
  // Rank processes inherit the environment: they load this build without searching again.
  process.env.COMMCOST_NATIVE = built;
  return binding;
}
