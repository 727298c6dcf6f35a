/**
 * The source files of a workspace that the call-site finder reads, for `commcost scan` and the
 * wrapper index (wrapperIndex.ts): Python and C/C++/CUDA files under the given folders, leaving
 * out `.git`, `node_modules`, virtual environments (`venv`, `.venv`, any folder holding
 * `pyvenv.cfg`, `site-packages`), `__pycache__`, and the paths `.gitignore` files exclude (with
 * the `ignore` package: the `.gitignore` of each folder walked and of its parents up to the Git
 * root, and `.git/info/exclude`). Symbolic links to folders are not followed. No `vscode` import.
 */
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, relative, sep } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import type { SourceLanguage } from '../sites/callSites';

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
  /** Absolute. */
  path: string;
  language: SourceLanguage;
}

export interface WalkResult {
  files: SourceFile[];
  /** Folders and files that could not be read, with why. */
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

async function readRules(dir: string, file: string): Promise<Rules | undefined> {
  try {
    const text = await readFile(join(dir, file), 'utf8');
    return { base: dir, ig: ignore().add(text) };
  } catch {
    return undefined;
  }
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
async function rulesAbove(dir: string): Promise<Rules[]> {
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
  const exclude = await readRules(join(root, '.git', 'info'), 'exclude');
  if (exclude) rules.push({ base: root, ig: exclude.ig });
  for (const d of chain.slice(chain.indexOf(root))) {
    const r = await readRules(d, '.gitignore');
    if (r) rules.push(r);
  }
  return ignoredBy(rules, dir, true) ? [] : rules;
}

/**
 * The source files under `roots` (absolute paths of folders or files), in path order. A root that
 * is a file is taken whatever its ignore rules; a root that is a folder is walked with the rules
 * above. Unreadable folders are reported in {@link WalkResult.unreadable} and skipped.
 * @throws Error when a root does not exist (callers check roots first and say what to do)
 */
export async function walkSources(roots: readonly string[], options: WalkOptions = {}): Promise<WalkResult> {
  const out: WalkResult = { files: [], unreadable: [], truncated: false };
  const seen = new Set<string>();
  const max = options.maxFiles ?? Infinity;
  const add = (path: string, language: SourceLanguage): boolean => {
    if (seen.has(path)) return true;
    if (out.files.length >= max) {
      out.truncated = true;
      return false;
    }
    seen.add(path);
    out.files.push({ path, language });
    return true;
  };

  // A folder given by name is walked even when it is a virtual environment.
  const walk = async (dir: string, rules: Rules[], named = false): Promise<boolean> => {
    await options.yieldEvery?.();
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      out.unreadable.push({ path: dir, reason: e instanceof Error ? e.message : String(e) });
      return true;
    }
    if (!named && entries.some((e) => e.name === 'pyvenv.cfg' && !e.isDirectory())) return true;
    const own = entries.some((e) => e.name === '.gitignore') ? await readRules(dir, '.gitignore') : undefined;
    const here = own ? [...rules, own] : rules;
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (SKIPPED_FOLDERS.has(e.name) || ignoredBy(here, path, true)) continue;
        if (!(await walk(path, here))) return false;
      } else if (e.isFile() || e.isSymbolicLink()) {
        const language = sourceLanguageOf(e.name);
        if (!language || ignoredBy(here, path, false)) continue;
        if (e.isSymbolicLink()) {
          const s = await stat(path).catch(() => undefined);
          if (!s?.isFile()) continue;
        }
        if (!add(path, language)) return false;
      }
    }
    return true;
  };

  for (const root of roots) {
    const s = await stat(root);
    if (s.isDirectory()) {
      if (!(await walk(root, await rulesAbove(root), true))) break;
    } else {
      const language = sourceLanguageOf(root);
      if (language && !add(root, language)) break;
    }
  }
  out.files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return out;
}
