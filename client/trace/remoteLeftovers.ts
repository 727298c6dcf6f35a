/**
 * What `commcost trace --host H` does with the folders that an earlier trace from this machine left
 * on H (its commcost process SIGKILLed: nothing downloaded the records). No `vscode` import.
 *
 * A remote trace's folder is `~/.cache/commcost/trace-<this machine>-<pid>-XXXXXX/` (remote.ts:
 * mktemp, 0700) with `records/`, `status` (`pid <n>`: the job's process group, written by the
 * wrapper) and `owner.json` ({@link TraceOwner}, written before the job starts: this machine's
 * commcost pid and its start time, the command, where the trace was to be saved here). Before its
 * own job, a remote trace lists the folders named after this machine in one round trip and, for
 * each whose commcost process (here) is gone:
 * - a link, or a folder not owned by the login user with mode 0700, is left alone (and said so);
 * - while the job's process group still runs on H, it is kept (and said so);
 * - else its records are read over the same SSH connection (SFTP), merged and saved here as
 *   `<planned trace less .json>.recovered.json` (leftovers.ts `saveRecovered`, the local path's
 *   code; in this user's private folder when that fails), and the folder is removed on H
 *   (`rm -rf` after checking again that it is no link, ours, 0700 and its group gone);
 * - a folder without `owner.json` (made by an older commcost) is removed when it holds no record,
 *   else kept and named.
 */
import { basename, join, posix } from 'node:path';
import { errorText } from '../errors';
import type { SshSession } from '../sshSession';
import { parseOwner, privateTraceRoot, processAlive, saveRecovered, type LeftoverReport, type TraceOwner } from './leftovers';
import type { RecordFile, Symbolizer } from './merge';
import { NCCL_LOG_SUFFIX } from './ncclView';

/**
 * Lists `~/.cache/commcost/$1*` but `$2`: per entry a tab-separated line, `link <dir>`,
 * `foreign <dir> <uid mode>` (not the login user's, or not 0700) or `dir <dir> <job pgid or empty> <1 when that group still runs>`.
 */
const SCAN = [
  'u=$(id -u)',
  'for d in "$HOME/.cache/commcost/$1"*; do',
  '  [ "$d" = "$2" ] && continue',
  '  if [ -L "$d" ]; then printf "link\\t%s\\n" "$d"; continue; fi',
  '  [ -d "$d" ] || continue',
  '  m=$(stat -c "%u %a" "$d" 2>/dev/null) || continue',
  '  if [ "$m" != "$u 700" ]; then printf "foreign\\t%s\\t%s\\n" "$d" "$m"; continue; fi',
  '  g=; if read -r w p < "$d/status" 2>/dev/null && [ "$w" = pid ]; then g=$p; fi',
  '  a=0; if [ -n "$g" ] && kill -s 0 -- "-$g" 2>/dev/null; then a=1; fi',
  '  printf "dir\\t%s\\t%s\\t%s\\n" "$d" "$g" "$a"',
  'done; exit 0',
].join('\n');

/** Removes folder `$1` only when it is no link, the login user's with mode 0700, and its job's group (status) is gone; exit 3 otherwise. */
const REMOVE = [
  'd=$1; [ ! -L "$d" ] && [ -d "$d" ] && [ "$(stat -c "%u %a" "$d" 2>/dev/null)" = "$(id -u) 700" ] || exit 3',
  'if read -r w p < "$d/status" 2>/dev/null && [ "$w" = pid ] && kill -s 0 -- "-$p" 2>/dev/null; then exit 3; fi',
  'exec rm -rf -- "$d"',
].join('\n');

/** Reads every record file (`*.jsonl`, NCCL's `*.nccl.log`) of the remote folder `dir` over SFTP. */
export async function downloadRecords(session: SshSession, dir: string): Promise<RecordFile[]> {
  const sftp = await session.sftp();
  const names = await new Promise<string[]>((res, rej) => sftp.readdir(dir, (e, list) => (e ? rej(e) : res(list.map((x) => x.filename)))));
  const wanted = names.filter((n) => n.endsWith('.jsonl') || n.endsWith(NCCL_LOG_SUFFIX)).sort();
  return Promise.all(wanted.map((name) => new Promise<RecordFile>((res, rej) => sftp.readFile(posix.join(dir, name), (e, b) => (e ? rej(e) : res({ name, text: b.toString('utf8') }))))));
}

/** Writes a remote trace folder's `owner.json` (0600, over SFTP; the folder is 0700). Never throws: without it, a later trace cannot recover the folder's records, and says so. */
export async function writeRemoteOwner(session: SshSession, dir: string, owner: TraceOwner): Promise<void> {
  try {
    const sftp = await session.sftp();
    await new Promise<void>((res) => sftp.writeFile(posix.join(dir, 'owner.json'), JSON.stringify(owner) + '\n', { mode: 0o600 }, () => res()));
  } catch {
    /* the trace runs all the same */
  }
}

/** The `owner.json` of remote folder `dir`, or null when missing or malformed. */
async function readRemoteOwner(session: SshSession, dir: string): Promise<TraceOwner | null> {
  const sftp = await session.sftp();
  return new Promise((res) => sftp.readFile(posix.join(dir, 'owner.json'), (e, b) => res(e ? null : parseOwner(b.toString('utf8')))));
}

/**
 * Recovers the folders that traces from this machine left on the session's host (see the file's
 * comment). Never throws (what failed is in `kept`).
 * @param prefix the folder name up to the pid, `trace-<this machine>-` (remote.ts names them so)
 * @param current this trace's own folder (absolute, on the host), never touched
 * @param symbolizerFor the host's symboliser for a set of records (remote.ts `remoteSymbolizer`)
 * @returns what was recovered (`from` is `<host>:<folder>`), kept and why, and removed
 */
export async function recoverRemoteLeftovers(session: SshSession, prefix: string, current: string, symbolizerFor: (files: RecordFile[]) => Promise<Symbolizer>): Promise<LeftoverReport> {
  const report: LeftoverReport = { recovered: [], kept: [], removed: [] };
  const host = session.target.name;
  const at = (dir: string) => `${host}:${dir}`;
  let lines: string[];
  try {
    const r = await session.run(['sh', '-c', SCAN, 'sh', prefix, current], { timeoutMs: 30_000 });
    lines = r.stdout.split('\n').filter((l) => /^(link|foreign|dir)\t/.test(l));
  } catch {
    return report;
  }
  const remove = async (dir: string): Promise<boolean> => (await session.run(['sh', '-c', REMOVE, 'sh', dir], { timeoutMs: 60_000 }).catch(() => null))?.code === 0;
  for (const line of lines) {
    const [kind, dir = '', a = '', b = ''] = line.split('\t');
    const pid = Number(/^(\d+)-[A-Za-z0-9]+$/.exec(posix.basename(dir).slice(prefix.length))?.[1] ?? NaN);
    if (!Number.isInteger(pid) || !posix.basename(dir).startsWith(prefix)) continue;
    try {
      if (kind !== 'dir') {
        report.kept.push({ dir: at(dir), why: kind === 'link' ? 'a symbolic link, not a folder commcost made: left alone (never followed)' : `not a private folder of the login user (owner uid and mode ${a}, not ${'0700'}): left alone` });
        continue;
      }
      const owner = await readRemoteOwner(session, dir);
      if (pid === process.pid || processAlive(owner?.pid ?? pid, owner?.pidStart ?? null)) continue; // a trace from here still running
      if (b === '1') {
        report.kept.push({ dir: at(dir), why: `the job of an earlier trace${owner ? ` (${owner.command.join(' ').slice(0, 120)})` : ''} still runs on ${host} as process group ${a}; its records are kept until it ends` });
        continue;
      }
      const files = await downloadRecords(session, posix.join(dir, 'records')).catch(() => []);
      if (files.length === 0) {
        if (await remove(dir)) report.removed.push(at(dir));
        continue;
      }
      if (!owner) {
        report.kept.push({ dir: at(dir), why: 'left by a trace of an older commcost (no owner.json): its records are not recovered; remove the folder when they are not needed' });
        continue;
      }
      const saved = await saveRecovered(owner, files, join(privateTraceRoot(), `recovered-${host.replace(/[^\w.-]/g, '_')}-${basename(dir)}.json`), await symbolizerFor(files));
      if ('why' in saved) {
        report.kept.push({ dir: at(dir), why: `its records could not be saved as a trace here: ${saved.why}` });
        continue;
      }
      report.recovered.push({ file: saved.file, from: at(dir) });
      if (!(await remove(dir))) report.kept.push({ dir: at(dir), why: 'its records are saved, but the folder could not be removed' });
    } catch (e) {
      report.kept.push({ dir: at(dir), why: `it could not be read: ${errorText(e)}` });
    }
  }
  return report;
}
