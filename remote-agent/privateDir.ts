/**
 * Private folders in a shared temp folder (the agent's side; client/privateDir.ts is the host
 * side's). /tmp is writable by every local user, and the nodes of a cluster often share it: a
 * predictable name there can be taken first by someone else (a file, a folder of theirs, a link).
 * So everything the agent executes or writes under a shared folder goes in a folder it has just
 * created itself: `mkdtemp` (a random name, mode 0700), then checked with `lstat` — a real
 * folder, not a link, owned by this user, no access for group or others — before any use. Files
 * in it are created new (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600): never one already there.
 *
 * Invariant: nothing here removes a folder this process did not create ({@link PrivateDir.remove}
 * only removes the one {@link makePrivateDir} made).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The variable that gives a rank process its session's private folder (made by the coordinator for
 * a session whose experiments ask for one: ExperimentModule.sessionDir), and the one that says why
 * there is none when it could not be made.
 */
export const SESSION_DIR_ENV = 'COMMCOST_SESSION_DIR';
export const SESSION_DIR_ERROR_ENV = 'COMMCOST_SESSION_DIR_ERROR';

/** A private folder is refused, or cannot be made: `message` says what, where and what to do. */
export class PrivateDirError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PrivateDirError';
  }
}

/** This process's user id (undefined where the platform has none, e.g. Windows). */
function myUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/**
 * Why `dir` is not a private folder of this user, or undefined when it is: it must exist, be a
 * real folder (`lstat`: not a symbolic link), be owned by `process.getuid()`, and give no access
 * to group or others (`mode & 0o077 === 0`).
 * @param dir absolute path of the folder
 * @returns a sentence (what is wrong with `dir`), or undefined
 */
export function privateDirProblem(dir: string): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `${dir} does not exist` : `cannot inspect ${dir}: ${(e as Error).message}`;
  }
  if (st.isSymbolicLink()) return `${dir} is a symbolic link, not a folder commcost made`;
  if (!st.isDirectory()) return `${dir} is not a folder`;
  const uid = myUid();
  if (uid !== undefined && st.uid !== uid) return `${dir} is owned by user id ${st.uid}, not by this user (${uid})`;
  if ((st.mode & 0o077) !== 0) return `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}; a private folder has 0700)`;
  return undefined;
}

/**
 * Checks that `dir` is a private folder of this user ({@link privateDirProblem}).
 * @param what how the folder is named in the message, e.g. `the c10d store folder`
 * @throws PrivateDirError naming the folder, what is wrong and what to do
 */
export function checkPrivateDir(dir: string, what: string): void {
  const problem = privateDirProblem(dir);
  if (problem) throw new PrivateDirError(`${what} is not a private folder of this user: ${problem}; commcost uses only a folder it has just created itself (mode 0700) — remove ${dir} if it is not yours, or report this`);
}

/** A private folder this process made ({@link makePrivateDir}). */
export interface PrivateDir {
  /** Its absolute path. */
  readonly path: string;
  /**
   * Creates `name` in the folder with `content`: a new file only (`O_CREAT|O_EXCL|O_NOFOLLOW`,
   * mode 0600), never one already there; the folder is checked again first.
   * @param name a plain file name (no `/`)
   * @returns the file's absolute path
   * @throws PrivateDirError when the folder is no longer private, the name is taken, or the write fails
   */
  writeFile(name: string, content: string | Uint8Array): string;
  /** Removes the folder and everything in it. Idempotent; never throws. */
  remove(): void;
}

/** The private folders this process made and has not removed yet: removed at its exit. */
const live = new Set<string>();
let exitHook = false;

function removeAtExit(dir: string): void {
  live.add(dir);
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const d of live) {
      try {
        fs.rmSync(d, { recursive: true, force: true });
      } catch {
        /* left in the temp folder: nothing else to do at exit */
      }
    }
  });
}

/**
 * Makes a new private folder `<parent>/<prefix>XXXXXX` (`fs.mkdtempSync`: a random suffix,
 * mode 0700) and checks it ({@link checkPrivateDir}).
 * @param prefix the start of its name, e.g. `commcost-c10d-`
 * @param parent where (default: the system temp folder, `os.tmpdir()`, which honours TMPDIR)
 * and removes it at this process's exit when {@link PrivateDir.remove} has not (a process killed
 * with SIGKILL leaves it: a 0700 folder of this user's, named `<prefix>XXXXXX`).
 * @throws PrivateDirError when it cannot be made, or is not private once made (it is then left alone)
 */
export function makePrivateDir(prefix: string, parent: string = os.tmpdir()): PrivateDir {
  let dir: string;
  try {
    dir = fs.mkdtempSync(path.join(parent, prefix));
  } catch (e) {
    throw new PrivateDirError(`cannot make a private folder in ${parent}: ${(e as Error).message}; set TMPDIR to a folder of yours that is writable`, { cause: e });
  }
  checkPrivateDir(dir, `the new folder ${dir}`);
  removeAtExit(dir);
  let removed = false;
  return {
    path: dir,
    writeFile(name: string, content: string | Uint8Array): string {
      if (name.includes('/') || name === '' || name === '.' || name === '..') throw new PrivateDirError(`${JSON.stringify(name)} is not a plain file name`);
      checkPrivateDir(dir, `the folder ${dir}`);
      const file = path.join(dir, name);
      let fd: number;
      try {
        fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0), 0o600);
      } catch (e) {
        throw new PrivateDirError(`cannot create ${file}: ${(e as Error).message}`, { cause: e });
      }
      try {
        fs.writeFileSync(fd, content);
      } catch (e) {
        throw new PrivateDirError(`cannot write ${file}: ${(e as Error).message}`, { cause: e });
      } finally {
        fs.closeSync(fd);
      }
      return file;
    },
    remove(): void {
      if (removed) return;
      removed = true;
      live.delete(dir);
      try {
        fs.rmSync(dir, { recursive: true, force: true });
      } catch {
        /* already gone, or not removable: nothing else to do */
      }
    },
  };
}
