/**
 * Measurement targets: `localhost` (a local agent process, no SSH), an alias of `~/.ssh/config`,
 * or `user@host[:port]`. Aliases are resolved with the `ssh-config` package; this file adds what
 * it leaves out (`~` and `%` expansion of IdentityFile, ProxyJump chains, defaults).
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { homedir, userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import SSHConfig from 'ssh-config';
import { CommcostError } from './errors';
import { readRegularFile } from './safeWrite';
import { shellQuote } from './shellQuote';

/** The local machine: the agent runs as a child process, no SSH. */
export interface LocalTarget {
  kind: 'local';
  /** Always `localhost`. */
  name: string;
}

/** A host reached over SSH, fully resolved. */
export interface SshTarget {
  kind: 'ssh';
  /** The target as the user named it (alias or user@host:port); used in messages and run ids. */
  name: string;
  /** The network host to connect to (HostName of the alias, or the name itself). */
  hostname: string;
  /** TCP port (default 22). */
  port: number;
  /** Remote user name (default: the local user). */
  user: string;
  /** Private key files to offer, in order, absolute paths (only those that exist). */
  identityFiles: string[];
  /** Hosts to jump through, outermost first (ProxyJump), each resolved like a target. */
  proxyJump: SshTarget[];
}

export type Target = LocalTarget | SshTarget;

/** Where the resolver looks; every field overridable for tests. */
export interface HostResolveOptions {
  /** ssh config file (default `~/.ssh/config`); a missing file is an empty config. */
  sshConfigPath?: string;
  /** Home directory used for `~`, `%d` and default keys (default `os.homedir()`). */
  homeDir?: string;
  /** Local user name for `%u` and the default remote user (default `os.userInfo().username`). */
  localUser?: string;
}

/** The parts of a target written as `[user@]host[:port]`, before any config lookup. */
export interface TargetSpec {
  user?: string;
  host: string;
  port?: number;
}

/** Default private keys OpenSSH tries, relative to `~/.ssh`. */
const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/** Characters a shell gives a meaning to; never part of a host or user name. */
const SHELL_META = /[;|&$`<>()'"\\]/;

/** The longest target name (`user@host:port`, an alias), characters: DNS names stop at 253. */
export const MAX_TARGET_CHARS = 512;

/** A name as messages show it: JSON-quoted, cut to 80 characters. */
function shownName(name: string): string {
  return name.length > 80 ? `${JSON.stringify(name.slice(0, 80))}…` : JSON.stringify(name);
}

/**
 * Rejects names that could be read as an option or smuggle shell text: whitespace, control
 * characters, shell metacharacters (`; | & $ \` < > ( ) ' " \`), a leading `-`, an empty name, or one over
 * MAX_TARGET_CHARS (shown cut to 80 characters).
 * Called before any lookup, so such a name never reaches the ssh config, DNS or a hint.
 * @throws CommcostError BAD_TARGET naming the offending character
 */
export function checkTargetName(name: string): void {
  const hint = 'give localhost, an alias of ~/.ssh/config or user@host[:port]';
  if (name.length === 0) {
    throw new CommcostError('BAD_TARGET', 'host name is empty', { hint });
  }
  // Shown once and bounded: a 100,000-character name is not echoed back.
  if (name.length > MAX_TARGET_CHARS) {
    throw new CommcostError('BAD_TARGET', `host name ${shownName(name)} is ${name.length} characters long, over ${MAX_TARGET_CHARS}`, { hint });
  }
  // eslint-disable-next-line no-control-regex -- rejecting control characters is the point
  const bad = /[\s\x00-\x1f\x7f-\x9f]/.exec(name);
  if (bad) {
    const code = bad[0].charCodeAt(0).toString(16).padStart(2, '0');
    throw new CommcostError(
      'BAD_TARGET',
      `host name ${shownName(name)} contains whitespace or a control character (0x${code})`,
      { hint },
    );
  }
  const meta = SHELL_META.exec(name);
  if (meta) {
    throw new CommcostError('BAD_TARGET', `host name ${shownName(name)} contains the shell character ${JSON.stringify(meta[0])}`, {
      hint: `${hint}; host and user names cannot contain ; | & $ \` < > ( ) ' " \\ or spaces`,
    });
  }
  if (name.startsWith('-')) {
    throw new CommcostError('BAD_TARGET', `host name ${shownName(name)} starts with '-'`, {
      hint: 'a host name cannot start with a dash',
    });
  }
}

/**
 * The `ssh` command a user can paste to try a target by hand, every word shell-quoted:
 * `ssh gpu1`, `ssh alice@gpu1`, and for `[user@]host:port` targets `ssh -p PORT [user@]host`.
 * Falls back to quoting the name as one word when it does not parse.
 */
export function sshTryCommand(name: string): string {
  let spec: TargetSpec;
  try {
    spec = parseTargetSpec(name);
  } catch {
    return `ssh -- ${shellQuote(name)}`;
  }
  const dest = shellQuote((spec.user !== undefined ? `${spec.user}@` : '') + spec.host);
  return spec.port !== undefined ? `ssh -p ${spec.port} ${dest}` : `ssh ${dest}`;
}

/**
 * Splits `[user@]host[:port]` (also `[user@][v6addr]:port`).
 * @throws CommcostError BAD_TARGET on a hostile name, an empty part or a port outside 1..65535
 */
export function parseTargetSpec(text: string): TargetSpec {
  checkTargetName(text);
  let rest = text;
  let user: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    user = rest.slice(0, at);
    rest = rest.slice(at + 1);
    if (user === '') throw new CommcostError('BAD_TARGET', `empty user name in ${JSON.stringify(text)}`);
    checkTargetName(user);
  }
  let host = rest;
  let portText: string | undefined;
  const v6 = /^\[([^\]]+)\](?::(.*))?$/.exec(rest);
  if (v6) {
    host = v6[1] ?? '';
    portText = v6[2];
  } else if ((rest.match(/:/g) ?? []).length === 1) {
    const colon = rest.indexOf(':');
    host = rest.slice(0, colon);
    portText = rest.slice(colon + 1);
  }
  if (host === '') throw new CommcostError('BAD_TARGET', `empty host name in ${JSON.stringify(text)}`);
  checkTargetName(host);
  const spec: TargetSpec = { host };
  if (user !== undefined) spec.user = user;
  if (portText !== undefined) {
    const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
    if (!(port >= 1 && port <= 65535)) {
      throw new CommcostError('BAD_TARGET', `port ${JSON.stringify(portText)} of ${JSON.stringify(text)} is not 1..65535`);
    }
    spec.port = port;
  }
  return spec;
}

/** True for the literal target `localhost`, which runs the agent locally without SSH. */
export function isLocalTarget(text: string): boolean {
  return text === 'localhost';
}

/** The largest ssh config file read (each of the main file and its Includes), bytes. */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * Reads an ssh config with its `Include` lines expanded in place, as OpenSSH reads them: each
 * pattern (relative ones under ~/.ssh; `*` and `?` in the file name) is replaced by the
 * matching files' text, in name order, up to 16 levels. Only regular files under 4 MiB are read.
 * @throws CommcostError BAD_INPUT naming the file that cannot be read
 */
async function readConfigText(path: string, sshDir: string, depth: number): Promise<string> {
  if (depth > 16) throw new CommcostError('BAD_INPUT', `ssh config ${path}: Include nested deeper than 16 levels`, { hint: 'check for an Include that includes itself' });
  const text = await readRegularFile(path, `ssh config ${path}`, { maxBytes: MAX_CONFIG_BYTES });
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*include\s*(?:=\s*|\s)(.*)$/i.exec(line);
    if (!m) {
      out.push(line);
      continue;
    }
    for (const pattern of m[1]!.trim().split(/\s+/).filter(Boolean)) {
      const unquoted = pattern.replace(/^"(.*)"$/, '$1');
      const abs = unquoted.startsWith('~/') ? join(homedirOf(sshDir), unquoted.slice(2)) : isAbsolute(unquoted) ? unquoted : join(sshDir, unquoted);
      for (const file of await globFiles(abs)) out.push(await readConfigText(file, sshDir, depth + 1));
    }
  }
  return out.join('\n');
}

/** The home folder whose `.ssh` is `sshDir`. */
function homedirOf(sshDir: string): string {
  return dirname(sshDir);
}

/** Files matching `pattern` (wildcards `*` and `?` in the last part only), sorted; none is not an error. */
async function globFiles(pattern: string): Promise<string[]> {
  const dir = dirname(pattern);
  const base = basename(pattern);
  if (!/[*?]/.test(base)) return existsSync(pattern) ? [pattern] : [];
  const re = new RegExp(`^${base.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  return names.filter((n) => re.test(n)).sort().map((n) => join(dir, n));
}

async function loadConfig(path: string): Promise<SSHConfig> {
  let text: string;
  if (!existsSync(path)) return SSHConfig.parse('');
  try {
    text = await readConfigText(path, dirname(path), 0);
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError('BAD_INPUT', `cannot read ssh config ${path}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return SSHConfig.parse(text);
  } catch (e) {
    throw new CommcostError('BAD_INPUT', `cannot parse ssh config ${path}: ${(e as Error).message}`, { cause: e });
  }
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function all(v: string | string[] | undefined): string[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/**
 * Expands `~`, `%h` (remote host name), `%u` (local user), `%r` (remote user), `%d` (home),
 * `%p` (port), `%n` (the name as given) and `%%` in an IdentityFile value.
 */
export function expandIdentityPath(
  path: string,
  v: { home: string; hostname: string; localUser: string; remoteUser: string; port: number; name: string },
): string {
  let out = path.replace(/%([%hurdpn])/g, (_m, c: string) => {
    switch (c) {
      case 'h': return v.hostname;
      case 'u': return v.localUser;
      case 'r': return v.remoteUser;
      case 'd': return v.home;
      case 'p': return String(v.port);
      case 'n': return v.name;
      default: return '%';
    }
  });
  if (out === '~') out = v.home;
  else if (out.startsWith('~/')) out = join(v.home, out.slice(2));
  return out;
}

/**
 * Resolves a target name to where and how to connect.
 * - `localhost` → {@link LocalTarget}.
 * - Otherwise `[user@]host[:port]`; `host` is looked up in the ssh config (first match wins per
 *   option, as OpenSSH does); explicit user/port in the name beat the config.
 * - ProxyJump (`a,b`, each `[user@]host[:port]`, or `none`) is resolved recursively (depth ≤ 8).
 * @throws CommcostError BAD_TARGET for a hostile or malformed name, BAD_INPUT for an unreadable config
 */
export async function resolveTarget(text: string, options: HostResolveOptions = {}): Promise<Target> {
  if (isLocalTarget(text)) return { kind: 'local', name: 'localhost' };
  const home = options.homeDir ?? homedir();
  const config = await loadConfig(options.sshConfigPath ?? join(home, '.ssh', 'config'));
  const localUser = options.localUser ?? userInfo().username;
  return resolveWith(text, config, home, localUser, 0);
}

function resolveWith(text: string, config: SSHConfig, home: string, localUser: string, depth: number): SshTarget {
  if (depth > 8) throw new CommcostError('BAD_TARGET', `ProxyJump chain of ${text} is deeper than 8 hosts`);
  const spec = parseTargetSpec(text);
  const computed = config.compute({ Host: spec.host, ...(spec.user ? { User: spec.user } : {}) }, { ignoreCase: true, matchExec: false });
  const get = (k: string) => computed[k.toLowerCase()] ?? computed[k];
  const hostname = first(get('HostName'))?.replace(/%h/g, spec.host) ?? spec.host;
  checkTargetName(hostname);
  const user = spec.user ?? first(get('User')) ?? localUser;
  const portText = first(get('Port'));
  const port = spec.port ?? (portText !== undefined ? Number(portText) : 22);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new CommcostError('BAD_TARGET', `port ${String(portText)} of host ${spec.host} in the ssh config is not 1..65535`);
  }
  const vars = { home, hostname, localUser, remoteUser: user, port, name: spec.host };
  const configured = all(get('IdentityFile')).map((p) => expandIdentityPath(p, vars));
  const candidates = configured.length > 0 ? configured : DEFAULT_IDENTITIES.map((f) => join(home, '.ssh', f));
  const identityFiles = candidates.filter((p) => existsSync(p));
  // A ProxyCommand is not run: connecting directly would bypass the user's proxy, so refuse.
  const proxyCommand = first(get('ProxyCommand'));
  if (proxyCommand && proxyCommand.toLowerCase() !== 'none') {
    throw new CommcostError('BAD_TARGET', `host ${spec.host} is reached through a ProxyCommand in the ssh config, which commcost does not run (a direct connection would bypass your proxy)`, {
      hint: `use ProxyJump for ${spec.host} instead (commcost follows ProxyJump chains), or measure from a machine that reaches the host directly`,
    });
  }
  const jump = first(get('ProxyJump'));
  const proxyJump =
    jump && jump.toLowerCase() !== 'none'
      ? jump.split(',').map((j) => resolveWith(j.trim().replace(/^ssh:\/\//, ''), config, home, localUser, depth + 1))
      : [];
  return { kind: 'ssh', name: text, hostname, port, user, identityFiles, proxyJump };
}

/**
 * Host aliases of the ssh config for a picker: every name of every `Host` line that has no
 * wildcard (`*`, `?`) or negation (`!`), in file order, without duplicates.
 * @throws CommcostError BAD_INPUT for an unreadable config (a missing one gives `[]`)
 */
export async function listConfiguredHosts(sshConfigPath?: string): Promise<string[]> {
  const config = await loadConfig(sshConfigPath ?? join(homedir(), '.ssh', 'config'));
  const out: string[] = [];
  for (const line of config) {
    if (line.type !== SSHConfig.DIRECTIVE || line.param.toLowerCase() !== 'host') continue;
    const values = typeof line.value === 'string' ? line.value.split(/\s+/) : line.value.map((v) => v.val);
    for (const v of values) {
      if (v && !/[*?!]/.test(v) && !out.includes(v)) out.push(v);
    }
  }
  return out;
}
