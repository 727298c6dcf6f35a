/**
 * The source files of a workspace that the call-site finder reads, for `commcost scan` and the
 * wrapper index (wrapperIndex.ts): Python and C/C++/CUDA files under the given folders, leaving
 * out `.git`, `node_modules`, virtual environments (`venv`, `.venv`, any folder holding
 * `pyvenv.cfg`, `site-packages`), `__pycache__`, and the paths `.gitignore` files exclude (with
 * the `ignore` package: the `.gitignore` of each folder walked and of its parents up to the Git
 * root, and `.git/info/exclude`). No `vscode` import.
 *
 * A cloned repository is untrusted, so only regular files are read, never more than a cap
 * (client/boundedRead.ts: no link followed at open, fstat before reading): a source file of at
 * most {@link MAX_SOURCE_BYTES}, a `.gitignore` (or `info/exclude`) of at most
 * {@link MAX_IGNORE_FILE_BYTES} that is not a link (as Git, which does not follow a linked
 * `.gitignore` either). Symbolic links to folders are not followed; a link to a file is read only
 * when its target is a regular file inside the scanned folder. Everything not read for another
 * reason than being ignored or not source (a FIFO or device named `x.py`, a link leading outside,
 * a file over the cap, a `.gitignore` that is a link or a FIFO) is listed in
 * {@link WalkResult.unreadable} with why.
 */
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { dirname, extname, join, relative, sep } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import type { SourceLanguage } from '../sites/callSites';
import { readBoundedText, readBoundedTextSync, type BoundedRead } from './boundedRead';
import { errorText } from './errors';
import { kindOf } from './safeWrite';

/** The largest source file read (8 MiB; larger ones are listed as skipped). Parsing 8 MiB takes tree-sitter 15–50 s and up to 1.5 GiB. */
export const MAX_SOURCE_BYTES = 8 * 2 ** 20;

/** The largest `.gitignore` or `.git/info/exclude` read (256 KiB); a larger one is not applied, and said so. */
export const MAX_IGNORE_FILE_BYTES = 256 * 2 ** 10;

/** The language the finder reads a file in, by its extension (lower case, with the dot). */
export const SOURCE_EXTENSIONS: Readonly<Record<string, SourceLanguage>> = {
  '.py': 'python',
  '.c': 'c',
  '.h': 'c',
  '.cc': 'cpp',
  '.cpp': 'cpp',
  '.cxx': 'cpp',
  '.hh': 'cpp',
  '.hpp': 'cpp',
  '.hxx': 'cpp',
  '.cu': 'cpp',
  '.cuh': 'cpp',
};

/** The finder's language for `path`, or undefined when it reads no such file. */
export function sourceLanguageOf(path: string): SourceLanguage | undefined {
  return SOURCE_EXTENSIONS[extname(path).toLowerCase()];
}

/** Folder names never walked. */
export const SKIPPED_FOLDERS: ReadonlySet<string> = new Set(['.git', 'node_modules', 'venv', '.venv', 'site-packages', '__pycache__']);

export interface SourceFile {
  /** Absolute, as found (a link's own path). */
  path: string;
  language: SourceLanguage;
  /**
   * The path {@link readSourceFile} opens, without following a link: `path`, or for a link (or a
   * root named by its link) its resolved target, which lies inside the scanned folder.
   */
  readPath: string;
}

export interface WalkResult {
  files: SourceFile[];
  /**
   * Folders and files not read, with why: unreadable folders; source-named entries that are not
   * regular files or are links to a missing file or to one outside the scanned folder; `.gitignore`
   * files that are links, not regular files or over {@link MAX_IGNORE_FILE_BYTES} (their rules
   * are then not applied). Not listed: what is ignored, and files that are not source.
   */
  unreadable: { path: string; reason: string }[];
  /** True when {@link WalkOptions.maxFiles} stopped the walk. */
  truncated: boolean;
}

export interface WalkOptions {
  /** Stop after this many files (default: no limit). */
  maxFiles?: number;
  /** Called between folders; an `await` point for callers that must stay responsive. */
  yieldEvery?: () => Promise<void>;
}

interface Rules {
  /** The folder the patterns are relative to. */
  base: string;
  ig: Ignore;
}

/** Where a walk reports a file it did not read. */
type Report = (path: string, reason: string) => void;

/**
 * The rules of `dir/file` (a `.gitignore` or `info/exclude`), or undefined when it is missing or
 * was not read (then reported: a link, a FIFO, a device, a folder, over {@link MAX_IGNORE_FILE_BYTES}).
 */
async function readRules(dir: string, file: string, report: Report): Promise<Rules | undefined> {
  const path = join(dir, file);
  const r = await readBoundedText(path, { maxBytes: MAX_IGNORE_FILE_BYTES });
  if (r.ok) return { base: dir, ig: ignore().add(r.text) };
  if (r.reason !== 'no such file') report(path, `${r.reason}; its ignore rules are not applied`);
  return undefined;
}

/** Whether `path` (a folder when `isDir`) is excluded by `rules` (deepest last: a deeper file decides first, as in Git). */
function ignoredBy(rules: readonly Rules[], path: string, isDir: boolean): boolean {
  for (let i = rules.length - 1; i >= 0; i--) {
    const r = rules[i]!;
    const rel = relative(r.base, path);
    if (rel === '' || rel.startsWith('..')) continue;
    const posix = sep === '/' ? rel : rel.split(sep).join('/');
    const t = r.ig.test(isDir ? `${posix}/` : posix);
    if (t.unignored) return false;
    if (t.ignored) return true;
  }
  return false;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The `.gitignore` rules above `dir` that apply inside it: those of its parent folders up to the
 * Git root (the folder holding `.git`), and that root's `.git/info/exclude`. None when `dir` is not
 * inside a Git work tree, or when these rules exclude `dir` itself (it was asked for by name).
 */
async function rulesAbove(dir: string, report: Report): Promise<Rules[]> {
  const chain: string[] = [];
  let root: string | undefined;
  for (let d = dirname(dir); ; d = dirname(d)) {
    chain.unshift(d);
    if (await exists(join(d, '.git'))) {
      root = d;
      break;
    }
    if (dirname(d) === d) break;
  }
  if (!root) return [];
  const rules: Rules[] = [];
  const exclude = await readRules(join(root, '.git', 'info'), 'exclude', report);
  if (exclude) rules.push({ base: root, ig: exclude.ig });
  for (const d of chain.slice(chain.indexOf(root))) {
    const r = await readRules(d, '.gitignore', report);
    if (r) rules.push(r);
  }
  return ignoredBy(rules, dir, true) ? [] : rules;
}

/** Whether `path` is `root` or inside it (both resolved, no links). */
function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Where the link `path` leads when it may be read: its resolved target, a regular file inside
 * `root` (resolved). Otherwise why not (reported), or `skip` for a link to a folder (links to
 * folders are never followed, as before: not reported).
 */
async function linkTarget(path: string, root: string): Promise<{ target: string } | { reason: string } | 'skip'> {
  let target: string;
  try {
    target = await realpath(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { reason: code === 'ENOENT' ? 'a symbolic link to a missing file' : code === 'ELOOP' ? 'a loop of symbolic links' : `a symbolic link that cannot be resolved: ${errorText(e)}` };
  }
  if (!inside(root, target)) return { reason: `a symbolic link to ${target}, outside the scanned folder ${root} (not followed)` };
  const st = await stat(target).catch(() => undefined);
  if (st?.isDirectory()) return 'skip';
  if (!st?.isFile()) return { reason: `a symbolic link to ${st ? kindOf(st) : 'something that cannot be read'}, not a regular file` };
  return { target };
}

/**
 * The source files under `roots` (absolute paths of folders or files), in path order. A root that
 * is a file is taken whatever its ignore rules; a root that is a folder is walked with the rules
 * above. What is not read (unreadable folders, FIFOs and devices named like source, links leading
 * outside the root, `.gitignore` files that are not regular files) is reported in
 * {@link WalkResult.unreadable}, with why, and skipped. Files are listed, not read: read each with
 * {@link readSourceFile}, which checks it again.
 * @throws Error when a root does not exist (callers check roots first and say what to do)
 */
export async function walkSources(roots: readonly string[], options: WalkOptions = {}): Promise<WalkResult> {
  const out: WalkResult = { files: [], unreadable: [], truncated: false };
  const seen = new Set<string>();
  const max = options.maxFiles ?? Infinity;
  const report: Report = (path, reason) => void out.unreadable.push({ path, reason });
  const add = (path: string, language: SourceLanguage, readPath: string): boolean => {
    if (seen.has(path)) return true;
    if (out.files.length >= max) {
      out.truncated = true;
      return false;
    }
    seen.add(path);
    out.files.push({ path, language, readPath });
    return true;
  };

  // A folder given by name is walked even when it is a virtual environment. `top` is the root, resolved.
  const walk = async (dir: string, rules: Rules[], top: string, named = false): Promise<boolean> => {
    await options.yieldEvery?.();
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      report(dir, errorText(e));
      return true;
    }
    if (!named && entries.some((e) => e.name === 'pyvenv.cfg' && !e.isDirectory())) return true;
    const own = entries.some((e) => e.name === '.gitignore') ? await readRules(dir, '.gitignore', report) : undefined;
    const here = own ? [...rules, own] : rules;
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (SKIPPED_FOLDERS.has(e.name) || ignoredBy(here, path, true)) continue;
        if (!(await walk(path, here, top))) return false;
        continue;
      }
      const language = sourceLanguageOf(e.name);
      if (!language || ignoredBy(here, path, false)) continue;
      if (e.isFile()) {
        if (!add(path, language, path)) return false;
      } else if (e.isSymbolicLink()) {
        const t = await linkTarget(path, top);
        if (t === 'skip') continue;
        if ('reason' in t) report(path, t.reason);
        else if (!add(path, language, t.target)) return false;
      } else {
        report(path, `${kindOf(e)}, not a regular file`);
      }
    }
    return true;
  };

  for (const root of roots) {
    const s = await stat(root);
    if (s.isDirectory()) {
      if (!(await walk(root, await rulesAbove(root, report), await realpath(root), true))) break;
    } else {
      const language = sourceLanguageOf(root);
      if (!language) continue;
      if (!s.isFile()) report(root, `${kindOf(s)}, not a regular file`);
      else if (!add(root, language, await realpath(root))) break;
    }
  }
  out.files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return out;
}

/**
 * Reads a file {@link walkSources} listed: UTF-8, when `file.readPath` is still a regular file (no
 * link followed, opened non-blocking, checked with fstat) of at most {@link MAX_SOURCE_BYTES}.
 * @returns the text, or why it was not read ("9.5 MiB, over the 8 MiB limit"); never throws for
 *   an unreadable file
 */
export function readSourceFile(file: Pick<SourceFile, 'readPath'>): Promise<BoundedRead> {
  return readBoundedText(file.readPath, { maxBytes: MAX_SOURCE_BYTES });
}

/** {@link readSourceFile}, synchronously (boundedRead.ts `readBoundedTextSync`): the same checks and answers. */
export function readSourceFileSync(file: Pick<SourceFile, 'readPath'>): BoundedRead {
  return readBoundedTextSync(file.readPath, { maxBytes: MAX_SOURCE_BYTES });
}
