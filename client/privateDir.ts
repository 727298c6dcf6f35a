/**
 * Private folders in a shared temp folder, on your side (the CLI, the extension, local traces;
 * remote-agent/privateDir.ts is the agent's own, as the agent imports nothing from here).
 *
 * /tmp is writable by every local user: a fixed name there (`/tmp/commcost-runs`) can be taken
 * first by someone else — a world-writable folder of theirs, or a link to a folder of yours. So
 * what commcost writes under a shared folder goes in a folder it has just created itself
 * (`mkdtemp`: a random name, mode 0700), checked with `lstat` before use: a real folder, not a
 * link, owned by this user, no access for group or others. Nothing here removes a folder it did
 * not make.
 */
import { lstat, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommcostError, errorText } from './errors';

/**
 * Why `dir` is not a private folder of this user, or undefined when it is: it must be a real
 * folder (`lstat`: not a symbolic link), owned by `process.getuid()`, with `mode & 0o077 === 0`.
 * Never throws.
 * @param dir absolute path
 * @returns a sentence saying what is wrong with `dir`, or undefined
 */
export async function privateDirProblem(dir: string): Promise<string | undefined> {
  let st;
  try {
    st = await lstat(dir);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? `${dir} does not exist` : `cannot inspect ${dir}: ${errorText(e)}`;
  }
  if (st.isSymbolicLink()) return `${dir} is a symbolic link`;
  if (!st.isDirectory()) return `${dir} is not a folder`;
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (uid !== undefined && st.uid !== uid) return `${dir} is owned by user id ${st.uid}, not by you (${uid})`;
  if ((st.mode & 0o077) !== 0) return `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')})`;
  return undefined;
}

/**
 * Makes a new private folder `<parent>/<prefix>XXXXXX` (`mkdtemp`, mode 0700) and checks it
 * ({@link privateDirProblem}). The caller owns it: it removes it ({@link removePrivateDir}) or
 * leaves it on purpose (a run saved there).
 * @param prefix the start of the folder's name, e.g. `commcost-runs-`
 * @param parent where (default: the OS temp folder, `os.tmpdir()`, which honours TMPDIR)
 * @returns the folder's absolute path
 * @throws CommcostError BAD_INPUT when it cannot be made, or is not private once made (then left alone)
 */
export async function makePrivateDir(prefix: string, parent: string = tmpdir()): Promise<string> {
  let dir: string;
  try {
    dir = await mkdtemp(join(parent, prefix));
  } catch (e) {
    throw new CommcostError('BAD_INPUT', `cannot make a private folder in ${parent}: ${errorText(e)}`, { hint: 'set TMPDIR to a writable folder of yours', cause: e });
  }
  const problem = await privateDirProblem(dir);
  if (problem) throw new CommcostError('BAD_INPUT', `the new folder ${dir} is not private: ${problem}`, { hint: `commcost writes only in a folder it has just made (mode 0700); check ${parent}, or set TMPDIR to a folder of yours` });
  return dir;
}

/** Removes a folder made by {@link makePrivateDir} and what is in it. Never throws. */
export async function removePrivateDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}
