/**
 * Run files on disk: `<dir>/<id>.json` (the workspace's `.commcost/runs/`, or the CLI's --save-dir).
 * Saves are atomic (temp file + rename); loads are schema-validated.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunFile } from '../protocol/runFile';
import { CommcostError, errorText } from './errors';
import { validateRunFile } from './runFileSchema';

/**
 * Writes the run as `<dir>/<run.id>.json` (pretty JSON): creates `dir`, writes a temp file in it,
 * then renames, so a reader never sees a half-written file.
 * @returns the path written
 * @throws CommcostError BAD_INPUT when the id is not a safe file name, or the write fails
 */
export async function saveRun(dir: string, run: RunFile): Promise<string> {
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(run.id) || run.id.startsWith('.')) {
    throw new CommcostError('BAD_INPUT', `run id ${JSON.stringify(run.id)} is not a safe file name`);
  }
  const path = join(dir, `${run.id}.json`);
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(tmp, JSON.stringify(run, null, 2) + '\n', { flag: 'wx' });
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw new CommcostError('BAD_INPUT', `cannot save the run to ${path}: ${errorText(e)}`, { hint: 'check that the folder is writable', cause: e });
  }
  return path;
}

/**
 * Reads and validates a run file.
 * @throws CommcostError BAD_RUN_FILE (unreadable, not JSON, or failing the schema, with JSON paths)
 */
export async function loadRun(path: string): Promise<RunFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new CommcostError('BAD_RUN_FILE', `cannot read ${path}: ${errorText(e)}`, { cause: e });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new CommcostError('BAD_RUN_FILE', `${path} is not JSON: ${errorText(e)}`, { cause: e });
  }
  return validateRunFile(json, path);
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
