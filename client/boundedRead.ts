/**
 * Reading a file that an untrusted folder holds (a source file or a `.gitignore` of a cloned
 * repository, a trace) without following a link, blocking on a FIFO or a terminal, or reading
 * more than a cap: opened `O_RDONLY|O_NONBLOCK|O_NOCTTY` (and `O_NOFOLLOW` unless links are
 * allowed), checked with `fstat` on the open descriptor (a regular file, at most `maxBytes`) before
 * one byte is read, then read up to the cap. A refusal is an answer (`{ ok: false, reason }`), not
 * an exception, so that a walk over many files can list each one it skipped with why.
 */
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { errorText } from './errors';
import { kindOf } from './safeWrite';

/** The text of a file read, or why it was not read ("a named pipe (FIFO), not a regular file"). */
export type BoundedRead = { ok: true; text: string } | { ok: false; reason: string };

/** `bytes` in words for a limit or a size: "8 MiB", "256 KiB", "200.5 MiB", "512 bytes". */
export function byteSizeText(bytes: number): string {
  for (const [unit, size] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} bytes`;
}

/** An open(2) failure in words, without the path (the caller names the file). */
function openFailure(e: unknown, followLinks: boolean): string {
  switch ((e as NodeJS.ErrnoException).code) {
    case 'ENOENT':
    case 'ENOTDIR': // a component of the path is a file (`.git` of a worktree is one)
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    // O_NOFOLLOW on a link: ELOOP on Linux, EMLINK on FreeBSD, EFTYPE on NetBSD.
    case 'ELOOP':
    case 'EMLINK':
    case 'EFTYPE':
      return followLinks ? 'a loop of symbolic links' : 'a symbolic link (not followed)';
    case 'ENXIO':
      return 'a device or socket with nothing behind it, not a regular file';
    default:
      return errorText(e);
  }
}

/**
 * Reads `path` as UTF-8 when it is a regular file of at most `maxBytes`.
 * @param options.maxBytes the cap; a larger file is refused before any byte is read
 * @param options.followLinks follow a link at the last component of `path` (default false: a link is refused)
 * @returns the text, or the reason it was not read, e.g. "a named pipe (FIFO), not a regular file",
 *   "a symbolic link (not followed)", "200 MiB, over the 8 MiB limit", "no such file"; never throws
 *   for a file that cannot be read
 */
export async function readBoundedText(path: string, options: { maxBytes: number; followLinks?: boolean }): Promise<BoundedRead> {
  const { maxBytes, followLinks = false } = options;
  const flags = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY | (followLinks ? 0 : fsConstants.O_NOFOLLOW);
  let handle;
  try {
    handle = await open(path, flags);
  } catch (e) {
    return { ok: false, reason: openFailure(e, followLinks) };
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return { ok: false, reason: `${kindOf(st)}, not a regular file` };
    if (st.size > maxBytes) return { ok: false, reason: `${byteSizeText(st.size)}, over the ${byteSizeText(maxBytes)} limit` };
    // One byte more than fstat said: a file that grows while being read (being written) is refused.
    const buf = Buffer.alloc(st.size + 1);
    let got = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, null);
      if (bytesRead === 0) break;
      got += bytesRead;
      if (got === buf.length) return { ok: false, reason: 'grew while being read (a file being written)' };
    }
    return { ok: true, text: buf.subarray(0, got).toString('utf8') };
  } catch (e) {
    return { ok: false, reason: errorText(e) };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * {@link readBoundedText} without waiting: the same checks (no link followed unless allowed,
 * non-blocking open, fstat on the descriptor, the cap) and the same answers, read synchronously —
 * for a caller that must have the text at once (the wrapper index reading a file again when it
 * wakes, cli/scan.ts).
 * @returns the text, or the reason it was not read; never throws for a file that cannot be read
 */
export function readBoundedTextSync(path: string, options: { maxBytes: number; followLinks?: boolean }): BoundedRead {
  const { maxBytes, followLinks = false } = options;
  const flags = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY | (followLinks ? 0 : fsConstants.O_NOFOLLOW);
  let fd: number;
  try {
    fd = openSync(path, flags);
  } catch (e) {
    return { ok: false, reason: openFailure(e, followLinks) };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { ok: false, reason: `${kindOf(st)}, not a regular file` };
    if (st.size > maxBytes) return { ok: false, reason: `${byteSizeText(st.size)}, over the ${byteSizeText(maxBytes)} limit` };
    // Not zeroed: only the bytes read are decoded.
    const buf = Buffer.allocUnsafe(st.size + 1);
    let got = 0;
    for (;;) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
      if (got === buf.length) return { ok: false, reason: 'grew while being read (a file being written)' };
    }
    return { ok: true, text: buf.subarray(0, got).toString('utf8') };
  } catch (e) {
    return { ok: false, reason: errorText(e) };
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Closing a descriptor read from cannot lose data; nothing to report.
    }
  }
}
