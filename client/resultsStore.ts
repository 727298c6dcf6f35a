/**
 * Run files on disk: `<dir>/<id>.json` (the workspace's `.commcost/runs/`, or the CLI's --save-dir).
 * Saves are atomic (temp file + rename); loads are schema-validated, and a loaded run's verdict is
 * derived again from its figures by today's rules.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { RunFile } from '../protocol/runFile';
import { parseAgentEvent } from '../protocol/events';
import { runFromProtocolLines } from './runModel';
import { CommcostError, errorText } from './errors';
import { validateRunFile } from './runFileSchema';
import { deriveVerdict } from '../readings/verdict';
import { jsonPieces } from './jsonPieces';
import { JsonLimitError, JsonStreamError, JsonStreamParser } from './jsonStream';
import { linkedCommcostDirProblem, outputTargetProblem, readRegularFile, readRegularFileChunks, writeFileSafely } from './safeWrite';

/** Kernel file systems where nothing of ours belongs (and Node's recursive mkdir can loop forever). */
const KERNEL_FS = ['/proc', '/sys'];

/** How long a check of an output folder may take before it is given up (a hung file system), ms. */
export const OUTPUT_CHECK_DEADLINE_MS = 10_000;

function isUnderKernelFs(abs: string): string | undefined {
  return KERNEL_FS.find((root) => abs === root || abs.startsWith(root + sep));
}

async function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CommcostError('BAD_INPUT', `${what}: no answer from the file system within ${ms / 1000} s`, { hint: 'choose a folder on a local, responsive file system' })), ms);
    timer.unref();
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function statOrUndefined(path: string) {
  try {
    return await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new CommcostError('BAD_INPUT', `cannot check ${path}: ${errorText(e)}`, { cause: e });
  }
}

/**
 * Makes sure `dir` is a folder we can write into, creating it (and missing parents) when asked:
 * refuses folders under /proc and /sys, a `.commcost` part that is a symbolic link
 * (linkedCommcostDirProblem), a path whose existing part is a file, a folder that is not
 * writable; creates one level at a time (never Node's recursive mkdir, which can loop forever on
 * kernel file systems), then writes and removes a probe file. Gives up after `deadlineMs`.
 * @param label how the folder is named in messages, e.g. `--save-dir .commcost/runs`
 * @returns the absolute folder
 * @throws CommcostError BAD_INPUT saying what is wrong with the folder
 */
export async function ensureWritableDir(dir: string, label: string, opts: { create?: boolean; deadlineMs?: number } = {}): Promise<string> {
  const abs = resolve(dir);
  const kernel = isUnderKernelFs(abs);
  if (kernel) {
    throw new CommcostError('BAD_INPUT', `${label} is under ${kernel}, a kernel file system: nothing can be saved there`, { hint: 'choose another folder' });
  }
  const check = async (): Promise<string> => {
    // A committed `.commcost` or `.commcost/runs` that is a link (even a dangling one) is refused.
    const linked = await linkedCommcostDirProblem(abs, label);
    if (linked) throw linked;
    // The nearest part of the path that exists must be a folder.
    const missing: string[] = [];
    let existing = abs;
    let st = await statOrUndefined(existing);
    while (!st) {
      missing.unshift(existing);
      const parent = dirname(existing);
      if (parent === existing) break;
      existing = parent;
      st = await statOrUndefined(existing);
    }
    if (st && !st.isDirectory()) {
      throw new CommcostError('BAD_INPUT', `${label}: ${existing} is a file, not a folder`, { hint: 'choose a folder (it is created when missing)' });
    }
    if (missing.length > 0 && opts.create === false) {
      throw new CommcostError('BAD_INPUT', `${label}: the folder ${abs} does not exist`, { hint: 'create it first, or choose an existing folder' });
    }
    try {
      await access(existing, fsConstants.W_OK | fsConstants.X_OK);
    } catch (e) {
      throw new CommcostError('BAD_INPUT', `${label}: the folder ${existing} is not writable (${(e as NodeJS.ErrnoException).code ?? errorText(e)})`, { hint: 'choose a folder you can write to', cause: e });
    }
    for (const d of missing) {
      try {
        await mkdir(d);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new CommcostError('BAD_INPUT', `${label}: cannot create the folder ${d}: ${errorText(e)}`, { hint: 'choose a folder you can write to', cause: e });
        }
      }
    }
    const probe = join(abs, `.commcost-probe-${randomBytes(4).toString('hex')}`);
    try {
      await writeFile(probe, '', { flag: 'wx' });
    } catch (e) {
      throw new CommcostError('BAD_INPUT', `${label}: cannot write in ${abs}: ${errorText(e)}`, { hint: 'choose a folder you can write to', cause: e });
    } finally {
      await rm(probe, { force: true }).catch(() => undefined);
    }
    return abs;
  };
  return withDeadline(check(), opts.deadlineMs ?? OUTPUT_CHECK_DEADLINE_MS, label);
}

/**
 * Checks that `file` can be written before anything is measured: an existing file must be a
 * writable regular file (not a folder, a symbolic link, a FIFO or a device); else its folder must exist and be writable (it is not created).
 * @param label how the file is named in messages, e.g. `--json out/run.json`
 * @throws CommcostError BAD_INPUT saying what is wrong
 */
export async function checkOutputFile(file: string, label: string, opts: { deadlineMs?: number } = {}): Promise<void> {
  const abs = resolve(file);
  const kernel = isUnderKernelFs(abs);
  if (kernel) throw new CommcostError('BAD_INPUT', `${label} is under ${kernel}, a kernel file system`, { hint: 'choose another file' });
  const check = async (): Promise<void> => {
    // A link (e.g. committed in a cloned repository) or a FIFO is refused before anything is measured.
    const linkProblem = await outputTargetProblem(abs, label);
    if (linkProblem) throw linkProblem;
    const st = await statOrUndefined(abs);
    if (st) {
      if (st.isDirectory()) throw new CommcostError('BAD_INPUT', `${label}: ${abs} is a folder`, { hint: 'give a file name' });
      try {
        await access(abs, fsConstants.W_OK);
      } catch (e) {
        throw new CommcostError('BAD_INPUT', `${label}: ${abs} is not writable (${(e as NodeJS.ErrnoException).code ?? errorText(e)})`, { hint: 'choose a file you can write to', cause: e });
      }
      return;
    }
    const dir = dirname(abs);
    const dst = await statOrUndefined(dir);
    if (!dst) throw new CommcostError('BAD_INPUT', `${label}: the folder ${dir} does not exist`, { hint: 'create the folder first, or write the file elsewhere' });
    if (!dst.isDirectory()) throw new CommcostError('BAD_INPUT', `${label}: ${dir} is not a folder`, { hint: 'write the file elsewhere' });
    try {
      await access(dir, fsConstants.W_OK | fsConstants.X_OK);
    } catch (e) {
      throw new CommcostError('BAD_INPUT', `${label}: the folder ${dir} is not writable (${(e as NodeJS.ErrnoException).code ?? errorText(e)})`, { hint: 'write the file elsewhere', cause: e });
    }
  };
  return withDeadline(check(), opts.deadlineMs ?? OUTPUT_CHECK_DEADLINE_MS, label);
}

/**
 * Writes the run as `<dir>/<run.id>.json` (JSON indented by 2, written in pieces: never one
 * string, so a run of 100,000 iterations a step can be saved): creates `dir` (see
 * {@link ensureWritableDir}), writes a temp file in it, fsyncs, then renames, so a reader never
 * sees a half-written file; never through a link ({@link writeFileSafely}).
 * @returns the path written
 * @throws CommcostError BAD_INPUT when the id is not a safe file name, or the write fails
 */
export async function saveRun(dir: string, run: RunFile): Promise<string> {
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(run.id) || run.id.startsWith('.')) {
    throw new CommcostError('BAD_INPUT', `run id ${JSON.stringify(run.id)} is not a safe file name`);
  }
  const path = join(dir, `${run.id}.json`);
  await ensureWritableDir(dir, 'cannot save the run');
  // Temp file (O_EXCL|O_NOFOLLOW) + fsync + rename; a link at `path` is refused (safeWrite.ts).
  try {
    // In pieces: a run of 100,000 iterations is ~700 MB of indented JSON, past V8's longest string.
    const text = (function* (): Generator<string> {
      yield* jsonPieces(run, undefined, 2);
      yield '\n';
    })();
    await writeFileSafely(path, text, `cannot save the run to ${path}`);
  } catch (e) {
    // A refused target (a link, a FIFO) is said as it is; a failed write names the system's error.
    const cause = e instanceof Error ? e.cause : undefined;
    if (cause === undefined) throw e;
    throw new CommcostError('BAD_INPUT', `cannot save the run to ${path}: ${errorText(cause)}`, { hint: 'check that the folder is writable and has free space', cause });
  }
  return path;
}

/**
 * The most numbers (samples, figures) a saved run (`.json`) may hold for commcost to read it. A
 * run file is parsed as it is read (client/jsonStream.ts): never held whole as text, its samples
 * 8 bytes each, so the memory `commcost report` needs follows the numbers, not the bytes.
 * Measured (test/bench/bigRun.ts: node dist/cli.js report --html of a generated full-catalogue run,
 * 9 experiments, 214 series, full-precision samples, peak RSS by getrusage; a 2-core machine,
 * Node 20; `COMMCOST_BENCH_SECTIONS=11 npm run bench`), peak RSS of `report` / `report --html`:
 * 100,000 iterations (21.4 M samples, 393 MiB): 285–300 / 302–304 MB; 149,000 iterations (31.9 M
 * samples, 585 MiB, the largest this limit admits): 367–406 / 378–402 MB (two bench runs). Before
 * the streaming read (a 256 MiB limit of bytes), 60,000 iterations (236 MiB) took 817 / 2,253 MB.
 * The limit keeps the largest run it admits under the 500 MB target with about 100 MB to spare.
 */
export const MAX_RUN_NUMBERS = 32_000_000;

/**
 * The largest saved run (`.json`) commcost reads, bytes: the bytes cost reading time, not memory
 * ({@link MAX_RUN_NUMBERS} bounds that). A run as commcost saves it (JSON indented by 2, with
 * full-precision samples: 34.6 bytes a sample, compact 19.4, measured on the bench's generated
 * run) holding {@link MAX_RUN_NUMBERS} numbers is about 1,060 MiB; at 100,000 iterations of the
 * full catalogue, about 710 MiB. A `.jsonl` (a launched run's protocol lines) is read whole:
 * MAX_INPUT_FILE_BYTES (client/safeWrite.ts).
 */
export const MAX_RUN_FILE_BYTES = 1280 * 1024 * 1024;

/**
 * What a saved run may hold besides its numbers, so that a file of {@link MAX_RUN_FILE_BYTES}
 * cannot fill memory with something else (strings, objects: a cloned repository's run file is
 * untrusted): at most 1,000,000 other values and keys and 64 MiB of string text (the committed
 * runs and fixtures hold at most 3,343 values and 67 KB of text, the longest string 26.5 KB).
 */
const RUN_LIMITS = { maxNumbers: MAX_RUN_NUMBERS, maxValues: 1_000_000, maxStringBytes: 64 * 1024 * 1024 } as const;

/**
 * Reads and validates a run file: a saved run (`.json`, parsed as it is read: never one string;
 * at most {@link MAX_RUN_FILE_BYTES} and {@link MAX_RUN_NUMBERS}), or the protocol lines a launched run's rank 0 wrote (`.jsonl`,
 * read whole, at most MAX_INPUT_FILE_BYTES, folded by runFromProtocolLines).
 * @throws CommcostError BAD_RUN_FILE (unreadable, over the size limit, not JSON, a bad protocol
 *   line with its number, or failing the schema, with JSON paths)
 */
export async function loadRun(path: string): Promise<RunFile> {
  if (/\.jsonl$/i.test(path)) {
    let folded: RunFile;
    const text = await readRunText(path, () => readRegularFile(path, path, { code: 'BAD_RUN_FILE' }));
    try {
      folded = runFromProtocolLines(text, parseAgentEvent);
    } catch (e) {
      throw new CommcostError('BAD_RUN_FILE', `${path}: ${errorText(e)}`, { cause: e, hint: 'give the .jsonl file rank 0 wrote (agent.js rank --out), or a saved run .json' });
    }
    return withCurrentVerdict(validateRunFile(folded, path));
  }
  const parser = new JsonStreamParser(RUN_LIMITS);
  let json: unknown;
  try {
    // Regular files only, size-capped: a FIFO named *.json or /dev/zero never hangs or fills memory.
    await readRunText(path, () => readRegularFileChunks(path, path, (chunk) => parser.push(chunk), { code: 'BAD_RUN_FILE', maxBytes: MAX_RUN_FILE_BYTES }));
    json = parser.end();
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    if (e instanceof JsonLimitError) {
      const what = e.what === 'numbers' ? 'numbers (samples)' : e.what;
      throw new CommcostError('BAD_RUN_FILE', `${path} holds more than ${e.limit.toLocaleString('en-US')} ${what}, over the limit commcost reads`, {
        hint: 'measure with fewer --iterations or fewer experiments per run',
        cause: e,
      });
    }
    throw new CommcostError('BAD_RUN_FILE', `${path} is not JSON: ${errorText(e)}`, { cause: e });
  }
  return withCurrentVerdict(validateRunFile(json, path));
}

/** `read()`, its failures as CommcostError BAD_RUN_FILE (a syntax error of the parser passes through, to be named "not JSON"). */
async function readRunText<T>(path: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof CommcostError || e instanceof JsonStreamError || e instanceof JsonLimitError) throw e;
    throw new CommcostError('BAD_RUN_FILE', `cannot read ${path}: ${errorText(e)}`, { cause: e });
  }
}

/**
 * `run` with its verdict derived again from its own figures by today's rules
 * (readings/verdict.ts `deriveVerdict`). The verdict stored in a file is what the rules of the day
 * it was saved said; every surface (the CLI report, the results panel, the exported HTML, the
 * samples) shows the one recomputed here instead. Should deriving throw on a file the rules do not
 * foresee, the verdict is one line that says so (never the stored one, which may be stale), and
 * the run's figures are still shown. `derive` is the verdict's rules (tests give others).
 */
export function withCurrentVerdict(run: RunFile, derive: (run: RunFile) => NonNullable<RunFile['verdict']> = deriveVerdict): RunFile {
  try {
    return { ...run, verdict: derive(run) };
  } catch (e) {
    return { ...run, verdict: [{ id: 'no-verdict', text: `No verdict: this run's figures could not be read by the verdict's rules (${errorText(e)}); the figures below are as measured.` }] };
  }
}

/** One file of {@link listRuns}: the run when valid, else why not. */
export interface RunListing {
  path: string;
  run?: RunFile;
  error?: CommcostError;
}

/**
 * Every `*.json` in `dir` (not recursive), loaded and validated, newest id first. A missing
 * folder gives `[]`; invalid files are listed with their error, never thrown.
 */
export async function listRuns(dir: string): Promise<RunListing[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const out: RunListing[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort().reverse()) {
    const path = join(dir, name);
    try {
      out.push({ path, run: await loadRun(path) });
    } catch (e) {
      out.push({ path, error: e instanceof CommcostError ? e : new CommcostError('BAD_RUN_FILE', errorText(e)) });
    }
  }
  return out;
}
