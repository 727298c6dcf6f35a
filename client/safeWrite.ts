/**
 * The one way commcost writes a file of its own output (a report, `--json`, `--html`, a saved
 * run): never through a symbolic link, never in place.
 *
 * A cloned repository is untrusted: it may commit `runs/x.html` as a link to
 * `~/.ssh/authorized_keys`. Writing follows no link: the target is checked with `lstat`
 * (a link or anything but a regular file is refused), the bytes go to a fresh temp file in the
 * same folder opened with O_CREAT|O_EXCL|O_NOFOLLOW, are fsynced, and the temp file is renamed
 * over the target (rename replaces a link itself, never what it points to). A reader never sees
 * a half-written file, and a full disk leaves the previous file whole.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { lstat, open, readlink, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { CommcostError, errorText } from './errors';

/** What kind of thing `lstat` (or `fstat`) found, in words: "a symbolic link", "a named pipe (FIFO)", "a device", … */
export function kindOf(st: { isSymbolicLink(): boolean; isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * Why `path` may not be written as an output, or undefined when it may (missing, or a regular
 * file). Follows no link.
 * @param label how the file is named in messages, e.g. `--html out.html`
 */
export async function outputTargetProblem(path: string, label: string): Promise<CommcostError | undefined> {
  const abs = resolve(path);
  let st;
  try {
    st = await lstat(abs);
  } catch (e) {
    // Missing, or a path through a file: the folder checks that follow say what is wrong.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    return new CommcostError('BAD_INPUT', `${label}: cannot inspect ${abs}: ${errorText(e)}`, { hint: 'choose another file', cause: e });
  }
  if (st.isFile()) return undefined;
  const what = kindOf(st);
  const hint = st.isSymbolicLink()
    ? 'commcost never writes through a link (a cloned repository may hold one pointing outside it): remove the link, or give another file name'
    : 'give the name of a regular file, or a new one';
  return new CommcostError('BAD_INPUT', `${label}: ${abs} is ${what}`, { hint });
}

/**
 * Why commcost must not write in `dir` because a `.commcost` part of it is a symbolic link, or
 * undefined when none is: from the first `.commcost` segment of the absolute path on (`.commcost`,
 * `.commcost/runs`, `.commcost/traces`, …), each part that exists is checked with `lstat`. A
 * cloned repository may commit `.commcost/runs` as a link to elsewhere (or a dangling one): saves
 * and traces would land outside it. Parts above `.commcost` (your own folders) are not judged.
 * @param dir the folder about to be created or written in (relative to the working folder, or absolute)
 * @param label how the output is named in messages, e.g. `--save-dir .commcost/runs`
 * @returns a CommcostError BAD_INPUT naming the link, where it points and what to do; or undefined
 */
export async function linkedCommcostDirProblem(dir: string, label: string): Promise<CommcostError | undefined> {
  const abs = resolve(dir);
  const parts = abs.split(sep);
  const from = parts.indexOf('.commcost');
  if (from < 0) return undefined;
  for (let i = from; i < parts.length; i++) {
    const part = parts.slice(0, i + 1).join(sep) || sep;
    let st;
    try {
      st = await lstat(part);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
      return new CommcostError('BAD_INPUT', `${label}: cannot inspect ${part}: ${errorText(e)}`, { hint: 'choose another folder', cause: e });
    }
    if (st.isSymbolicLink()) {
      const to = await readlink(part).catch(() => '?');
      const dangling = await stat(part).then(() => '', () => ', which does not exist');
      return new CommcostError('BAD_INPUT', `${label}: ${part} is a symbolic link (to ${to}${dangling}): commcost writes its runs and traces only in a real folder, never through a link`, {
        hint: `a cloned repository may commit it as a link to elsewhere: remove the link (rm ${part}; it is made again as a folder), or give another folder (--save-dir, --out)`,
      });
    }
  }
  return undefined;
}

/**
 * Writes `data` to `path` atomically without following links: temp file in the same folder
 * (O_EXCL|O_NOFOLLOW, mode 0644 less the umask), fsync, rename over `path`.
 * @param data the bytes, or an iterable of pieces written one after another (a large report is
 *   never one string: client/htmlReport.ts `reportPieces`)
 * @param label how the file is named in messages, e.g. `--json run.json`, `the report x.html`
 * @throws CommcostError BAD_INPUT when `path` is a link or not a regular file (nothing written),
 *   or the write fails (the temp file removed, any previous `path` left whole)
 */
export async function writeFileSafely(path: string, data: string | Uint8Array | Iterable<string | Uint8Array>, label: string = path): Promise<void> {
  const abs = resolve(path);
  const problem = await outputTargetProblem(abs, label);
  if (problem) throw problem;
  const tmp = join(dirname(abs), `.${basename(abs).slice(0, 100)}.${randomBytes(6).toString('hex')}.tmp`);
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;
  let handle;
  try {
    handle = await open(tmp, flags, 0o644);
  } catch (e) {
    throw new CommcostError('BAD_INPUT', `${label}: cannot write in ${dirname(abs)}: ${errorText(e)}`, { hint: 'choose a folder you can write to', cause: e });
  }
  try {
    if (typeof data === 'string' || data instanceof Uint8Array) await handle.writeFile(data);
    else for (const piece of data) await handle.writeFile(piece);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(tmp, abs);
  } catch (e) {
    await handle?.close().catch(() => undefined);
    await rm(tmp, { force: true }).catch(() => undefined);
    throw new CommcostError('BAD_INPUT', `${label}: cannot write ${abs}: ${errorText(e)}`, { hint: 'check the free space and that the folder is writable; any previous file there is unchanged', cause: e });
  }
}

/**
 * One line of text safe to append to a file outside the run's own (known_hosts): control
 * characters (newlines included) removed, so a value from an untrusted run file or server can
 * never start a line of its own.
 */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '');
}

/** The largest input file commcost reads whole as text (a run's `.jsonl`, a plan, a trace), bytes. */
export const MAX_INPUT_FILE_BYTES = 256 * 1024 * 1024;

/**
 * Opens `path` for reading as a regular file of at most `maxBytes` (with `head`: any size): opened
 * non-blocking and checked with fstat on the open descriptor before any byte is read, so a FIFO
 * named `*.json`, `/dev/zero` or a folder never blocks or fills memory.
 * @returns the open handle (the caller closes it) and the file's size in bytes
 * @throws CommcostError `code` saying what the file is and what to give instead
 */
async function openRegularFile(path: string, label: string, code: string, maxBytes: number, head: boolean): Promise<{ handle: FileHandle; size: number }> {
  let handle: FileHandle;
  try {
    handle = await open(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (e) {
    const errno = (e as NodeJS.ErrnoException).code;
    // The common cases in words, with the absolute path the name was looked up as.
    if (errno === 'ENOENT') {
      const what = label === path ? `no such file "${path}"` : `${label}: no such file`;
      const hint = code === 'BAD_RUN_FILE' ? "check the path; a saved run is a .json file in the workspace's .commcost/runs/ or the --save-dir folder" : 'check the path';
      throw new CommcostError(code, `${what} (${resolve(path)})`, { cause: e, hint });
    }
    if (errno === 'EACCES') throw new CommcostError(code, `cannot read ${label} (${resolve(path)}): permission denied`, { cause: e, hint: 'check the file\'s permissions' });
    throw new CommcostError(code, `cannot read ${label}: ${errorText(e)}`, { cause: e, hint: 'check the path' });
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new CommcostError(code, `${label} is ${kindOf(st)}, not a file commcost can read`, { hint: st.isDirectory() ? 'give a file inside it, e.g. one of its .json runs' : 'give a regular file' });
    if (!head && st.size > maxBytes) throw new CommcostError(code, `${label} is ${st.size} bytes, over the ${maxBytes}-byte limit`, { hint: 'give the file commcost wrote' });
    return { handle, size: st.size };
  } catch (e) {
    await handle.close().catch(() => undefined);
    if (e instanceof CommcostError) throw e;
    throw new CommcostError(code, `cannot read ${label}: ${errorText(e)}`, { cause: e });
  }
}

/**
 * Reads a regular file of at most `maxBytes` as UTF-8 (checked as {@link openRegularFile} says).
 * With `head`, reads only the first `head` bytes (however long the file), for a look at what it is.
 * @param label how the file is named in messages
 * @throws CommcostError `code` (default BAD_INPUT) saying what the file is and what to give instead
 */
export async function readRegularFile(path: string, label: string, opts: { maxBytes?: number; code?: string; head?: number } = {}): Promise<string> {
  const maxBytes = opts.head ?? opts.maxBytes ?? MAX_INPUT_FILE_BYTES;
  const code = opts.code ?? 'BAD_INPUT';
  const { handle, size } = await openRegularFile(path, label, code, maxBytes, opts.head !== undefined);
  try {
    const buf = Buffer.alloc(Math.min(size, maxBytes) + (opts.head === undefined ? 1 : 0));
    let got = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, null);
      if (bytesRead === 0) break;
      got += bytesRead;
      if (got > maxBytes || got === buf.length) {
        if (got > maxBytes && opts.head === undefined) throw new CommcostError(code, `${label} grew past the ${maxBytes}-byte limit while being read`, { hint: 'give a file that is not being written' });
        break;
      }
    }
    return buf.subarray(0, got).toString('utf8');
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError(code, `cannot read ${label}: ${errorText(e)}`, { cause: e });
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Reads a regular file of at most `maxBytes` (checked as {@link openRegularFile} says) in chunks
 * of `chunkBytes`, handing each to `onChunk` in order; the chunk's buffer is reused for the next
 * one, so `onChunk` must copy what it keeps. The file is never held whole: memory is one chunk.
 * @param label how the file is named in messages
 * @throws CommcostError `code` (default BAD_INPUT) when the file cannot be read, is over
 *   `maxBytes` or grows past it while being read; what `onChunk` throws, as it is
 */
export async function readRegularFileChunks(
  path: string,
  label: string,
  onChunk: (chunk: Buffer) => void,
  opts: { maxBytes: number; code?: string; chunkBytes?: number },
): Promise<number> {
  const code = opts.code ?? 'BAD_INPUT';
  const { handle } = await openRegularFile(path, label, code, opts.maxBytes, false);
  try {
    const buf = Buffer.alloc(opts.chunkBytes ?? 1 << 20);
    let total = 0;
    for (;;) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(buf, 0, buf.length, null));
      } catch (e) {
        throw new CommcostError(code, `cannot read ${label}: ${errorText(e)}`, { cause: e });
      }
      if (bytesRead === 0) return total;
      total += bytesRead;
      if (total > opts.maxBytes) throw new CommcostError(code, `${label} grew past the ${opts.maxBytes}-byte limit while being read`, { hint: 'give a file that is not being written' });
      onChunk(buf.subarray(0, bytesRead));
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
}
