/**
 * Starting an agent that is already deployed in ONE remote command (issue 19: "already deployed:
 * command to first event < 1 s"). Every command over SSH pays the remote login shell's start-up,
 * rc files included (a `pyenv init` or `conda init` in ~/.bashrc costs 0.5–3 s per command on
 * the hosts our users run); the full path (find Node, probe and deploy, start) costs three. The
 * launch script does all three in one: it finds Node (the explicit path, or `node` on the
 * non-login PATH), checks the deployed files against the payload's sha256 (`sha256sum -c`), and
 * when everything matches prints one marker line and `exec`s the agent, so the command's channel
 * becomes the agent's. Otherwise it prints why and exits 0, and the caller takes the full path
 * (findRemoteNode, deployAgent, startSshAgent), which keeps every diagnostic it has.
 *
 * The marker lines (tab-separated, on stdout before anything of the agent's):
 *   COMMCOST-LAUNCH   <node path> <node -v> <remote dir>
 *   COMMCOST-NOLAUNCH <reason> [<node path> <node -v>]
 */
import type { ClientChannel } from 'ssh2';
import { wrapAgentChannel, type AgentProcess } from './agentProcess';
import type { AgentPayload } from './deploy';
import { MIN_NODE_MAJOR, PLATFORM_SH } from './deploy';
import { CommcostError } from './errors';
import type { PreparedFolder } from './preparedFolder';
import type { SshSession } from './sshSession';

export type { PreparedFolder } from './preparedFolder';

/** Most characters read of what the script prepared for a deploy (a folder line and one line per file). */
const MAX_PREPARED_CHARS = 4 * 1024 * 1024;

/** Longest marker line read before the agent's own output (bytes). */
const MAX_MARKER_BYTES = 64 * 1024;

/**
 * The launch script, run as `sh -c SCRIPT sh <hash> <explicit node or ''> <"sha256  rel"…>`.
 * Exported for tests, which run it with a local sh.
 */
export const LAUNCH_SCRIPT = [
  'd="$HOME/.cache/commcost/$1"; n="$2"; shift 2',
  // Only the files this host needs (deploy.ts filesForHost, the same rule): no other platform's
  // prebuilt folder; no addon sources or headers when its platform's prebuilt addon is in the payload.
  PLATFORM_SH,
  'h=; for f in "$@"; do [ -n "$a" ] && [ "${f#*  }" = "native/$a/commcost.node" ] && h=1; done',
  'c=$#; for f in "$@"; do r="${f#*  }"; k=1; case "$r" in native/linux-*/*) case "$r" in "native/$a/"*) ;; *) [ -n "$a" ] && k=;; esac;; native/src/*|native/include/*) [ -n "$h" ] && k=;; esac; [ -n "$k" ] && set -- "$@" "$f"; done; shift "$c"',
  '[ -n "$n" ] || n="$(command -v node 2>/dev/null)"',
  'if [ -z "$n" ] || [ ! -x "$n" ]; then printf "COMMCOST-NOLAUNCH\\tno node on the PATH of sh -c\\n"; exit 0; fi',
  'v="$("$n" -v 2>/dev/null | head -n 1)"',
  // Node's major from "vNN.x.y": below the minimum (or no answer), take the full path, which says why.
  `m="\${v#v}"; m="\${m%%.*}"; case "$m" in ''|*[!0-9]*) m=0;; esac`,
  `if [ "$m" -lt ${MIN_NODE_MAJOR} ]; then printf "COMMCOST-NOLAUNCH\\tnode %s is not usable\\t%s\\t%s\\n" "$v" "$n" "$v"; exit 0; fi`,
  // Not launched for want of files: make the payload's folders (so an upload needs no mkdir of its
  // own) and say which files are in place already (COMMCOST-OK), so the deploy needs no command.
  'prepare() { printf "COMMCOST-DIR\\t%s\\n" "$d"; printf "COMMCOST-PLATFORM\\t%s\\n" "$a"; p=; for f in "$@"; do r="${f#*  }"; case "$r" in */*) r="${r%/*}";; *) r=.;; esac; ' +
    '[ "$r" = "$p" ] || mkdir -p -- "$d/$r" 2>/dev/null || printf "COMMCOST-MKDIR-FAILED\\t%s\\n" "$r"; p="$r"; done; }',
  'cd "$d" 2>/dev/null || { printf "COMMCOST-NOLAUNCH\\tnot deployed\\t%s\\t%s\\n" "$n" "$v"; prepare "$@"; exit 0; }',
  'if ! printf "%s\\n" "$@" | sha256sum -c --status - 2>/dev/null; then',
  '  printf "COMMCOST-NOLAUNCH\\tnot deployed or changed\\t%s\\t%s\\n" "$n" "$v"; prepare "$@"',
  '  printf "%s\\n" "$@" | sha256sum -c - 2>/dev/null | sed -n "s/^\\(.*\\): OK$/COMMCOST-OK\\t\\1/p"; exit 0',
  'fi',
  'printf "COMMCOST-LAUNCH\\t%s\\t%s\\t%s\\n" "$n" "$v" "$d"',
  'exec "$n" "$d/agent.js"',
].join('\n');

/** What the one command did. */
export type QuickLaunch =
  | { launched: true; agent: AgentProcess; node: { path: string; version: string }; remoteDir: string }
  | { launched: false; reason: string; node?: { path: string; version: string }; prepared?: PreparedFolder };

/** Reads the lines after a not-launched marker (COMMCOST-DIR, COMMCOST-PLATFORM, COMMCOST-OK, COMMCOST-MKDIR-FAILED). */
export function parsePrepared(lines: readonly string[]): PreparedFolder | undefined {
  let remoteDir: string | undefined;
  const present = new Set<string>();
  const mkdirFailed: string[] = [];
  let platform = '';
  for (const raw of lines) {
    const [tag, value] = raw.replace(/\r$/, '').split('\t');
    if (!value) continue;
    if (tag === 'COMMCOST-DIR' && value.startsWith('/')) remoteDir = value;
    else if (tag === 'COMMCOST-OK') present.add(value);
    else if (tag === 'COMMCOST-MKDIR-FAILED') mkdirFailed.push(value);
    else if (tag === 'COMMCOST-PLATFORM') platform = value;
  }
  return remoteDir ? { remoteDir, present, mkdirFailed, platform } : undefined;
}

/** argv of the launch command for `payload` (the files as `sha256sum -c` lines). */
export function launchArgv(payload: AgentPayload, explicitNode: string | undefined): string[] {
  return ['sh', '-c', LAUNCH_SCRIPT, 'sh', payload.hash, explicitNode ?? '', ...payload.files.map((f) => `${f.sha256}  ${f.rel}`)];
}

/**
 * Parses the launch script's first stdout line.
 * @returns the launch or why not; undefined for a line that is not a marker
 */
export function parseMarker(line: string): { launched: true; node: { path: string; version: string }; remoteDir: string } | { launched: false; reason: string; node?: { path: string; version: string } } | undefined {
  const parts = line.replace(/\r$/, '').split('\t');
  if (parts[0] === 'COMMCOST-LAUNCH' && parts.length === 4 && parts[1] && parts[3]) {
    return { launched: true, node: { path: parts[1], version: parts[2] ?? '' }, remoteDir: parts[3] };
  }
  if (parts[0] === 'COMMCOST-NOLAUNCH' && parts[1]) {
    return { launched: false, reason: parts[1], ...(parts[2] ? { node: { path: parts[2], version: parts[3] ?? '' } } : {}) };
  }
  return undefined;
}

/**
 * Starts the agent of `payload` on the session's host in one command when it is deployed there
 * and Node ≥ MIN_NODE_MAJOR is found (see the module comment).
 * @param timeoutMs how long to wait for the marker line (the login shell's start-up included)
 * @returns launched with the agent, or not launched with the reason (and Node when it was found)
 * @throws CommcostError CONNECTION_LOST when the command cannot start or the connection drops;
 * SSH_FAILED when no marker line comes within `timeoutMs` (the rc files of the login
 * shell waiting on something: the channel is closed first)
 */
export async function launchIfDeployed(session: SshSession, payload: AgentPayload, explicitNode: string | undefined, timeoutMs = 60_000): Promise<QuickLaunch> {
  const host = session.target.name;
  const channel: ClientChannel = await session.exec(launchArgv(payload, explicitNode));
  return new Promise<QuickLaunch>((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let stderr = '';
    let done = false;
    const finish = (): void => {
      done = true;
      clearTimeout(timer);
      channel.removeListener('data', onData);
      channel.stderr.removeListener('data', onStderr);
      channel.removeListener('close', onClose);
    };
    const fail = (e: CommcostError): void => {
      finish();
      channel.close();
      reject(e);
    };
    const onStderr = (d: Buffer): void => {
      if (stderr.length < 4096) stderr += d.toString('utf8');
    };
    const onData = (d: Buffer): void => {
      if (done) return;
      buf = Buffer.concat([buf, d]);
      const nl = buf.indexOf(0x0a);
      if (nl < 0) {
        if (buf.length > MAX_MARKER_BYTES) fail(new CommcostError('DEPLOY_FAILED', `the launch command on ${host} wrote ${buf.length} bytes without a line end before its marker`, { where: { host } }));
        return;
      }
      const line = buf.subarray(0, nl).toString('utf8');
      const rest = buf.subarray(nl + 1);
      const marker = parseMarker(line);
      if (!marker) {
        // Something printed before the marker (an rc file writing to stdout): not ours to run.
        fail(new CommcostError('DEPLOY_FAILED', `the launch command on ${host} printed "${line.slice(0, 200)}" before its marker line`, { where: { host }, hint: 'a login rc file (~/.bashrc) writes to stdout in non-interactive shells: guard it with [ -t 1 ] or move it to ~/.bash_profile' }));
        return;
      }
      if (!marker.launched) {
        // The script exits after what it prepared for the deploy: read it to the end.
        let tail = rest.toString('utf8');
        channel.removeListener('data', onData);
        channel.removeListener('close', onClose);
        channel.on('data', (more: Buffer) => {
          if (tail.length < MAX_PREPARED_CHARS) tail += more.toString('utf8');
        });
        channel.on('close', () => {
          if (done) return;
          finish();
          const prepared = parsePrepared(tail.split('\n'));
          resolve({ ...marker, ...(prepared ? { prepared } : {}) });
        });
        return;
      }
      finish();
      channel.pause();
      const agent = wrapAgentChannel(channel, session, rest);
      channel.resume();
      resolve({ launched: true, agent, node: marker.node, remoteDir: marker.remoteDir });
    };
    const onClose = (): void => {
      if (done) return;
      fail(new CommcostError('CONNECTION_LOST', `the launch command on ${host} ended without a marker line${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`, { where: { host } }));
    };
    const timer = setTimeout(() => {
      fail(new CommcostError('SSH_FAILED', `a command on ${host} gave no answer within ${Math.round(timeoutMs / 1000)} s`, { where: { host }, hint: `run \`ssh ${host} true\` to see whether the login shell's rc files (~/.bashrc: pyenv, conda, module loads) wait on something there` }));
    }, timeoutMs);
    channel.on('data', onData);
    channel.stderr.on('data', onStderr);
    channel.on('close', onClose);
  });
}
