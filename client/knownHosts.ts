/**
 * Host key checking against an OpenSSH `known_hosts` file: plain and hashed (`|1|salt|hash`)
 * host patterns, the `[host]:port` form for ports other than 22, wildcards and negations.
 * Lines with a marker (`@cert-authority`, `@revoked`) are ignored: commcost does not do host
 * certificates.
 */
import { createHash, createHmac } from 'node:crypto';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { oneLine } from './safeWrite';

/** Result of {@link checkHostKey}. `line` is 1-based. */
export type HostKeyCheck =
  | { outcome: 'match'; file: string; line: number }
  | { outcome: 'unknown' }
  | { outcome: 'mismatch'; file: string; line: number; keyType: string };

/** Default known_hosts path: `~/.ssh/known_hosts`. */
export function defaultKnownHostsPath(): string {
  return join(homedir(), '.ssh', 'known_hosts');
}

/** The name a host is stored under: `host` for port 22, else `[host]:port`. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/**
 * The command that removes the host's entries from `knownHostsPath`, shell-quoted as the user
 * types it: `ssh-keygen -R '[host]:2222' -f …` for a port other than 22 (a bare host name
 * would leave that entry in place).
 */
export function removeHostKeyCommand(host: string, port: number, knownHostsPath: string): string {
  const q = (w: string): string => (/^[A-Za-z0-9_./:@%+=-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);
  const name = oneLine(knownHostsName(host, port));
  return `ssh-keygen -R ${q(name)}${knownHostsPath === defaultKnownHostsPath() ? '' : ` -f ${q(knownHostsPath)}`}`;
}

/** Key type inside an SSH wire-format public key blob (`ssh-ed25519`, `rsa-sha2-…` keys say `ssh-rsa`). */
export function keyTypeOf(key: Buffer): string {
  if (key.length < 4) return '';
  const n = key.readUInt32BE(0);
  return key.subarray(4, 4 + n).toString('latin1');
}

/** OpenSSH's fingerprint of a public key blob: `SHA256:` + unpadded base64 of its sha256. */
export function fingerprint(key: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(key).digest('base64').replace(/=+$/, '');
}

function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    '^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$',
    'i',
  );
  return re.test(name);
}

/** True when a known_hosts host field (comma list, possibly hashed) names `name`. */
export function hostFieldMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    const mac = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64');
    return mac === hash;
  }
  let matched = false;
  for (const pattern of field.split(',')) {
    if (pattern.startsWith('!')) {
      if (globMatch(pattern.slice(1), name)) return false;
    } else if (globMatch(pattern, name)) {
      matched = true;
    }
  }
  return matched;
}

/**
 * Checks a server's host key (wire-format blob, as ssh2 hands it to `hostVerifier`).
 * match: an entry for the host has this key; mismatch: an entry for the host has another key
 * (file and 1-based line given; an entry of the same type is preferred, else one of another type:
 * OpenSSH too says the key changed when the server offers a type it has no entry for but it knows
 * the host by another); unknown: no entry for the host (also when the file is missing).
 * @throws on read errors other than ENOENT
 */
export async function checkHostKey(
  knownHostsPath: string,
  host: string,
  port: number,
  key: Buffer,
): Promise<HostKeyCheck> {
  let text: string;
  try {
    text = await readFile(knownHostsPath, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { outcome: 'unknown' };
    throw e;
  }
  const name = knownHostsName(host, port);
  const type = keyTypeOf(key);
  const blob = key.toString('base64');
  let mismatch: Extract<HostKeyCheck, { outcome: 'mismatch' }> | undefined;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#') || line.startsWith('@')) continue;
    const [hosts, lineType, lineBlob] = line.split(/\s+/);
    if (!hosts || !lineType || !lineBlob || !hostFieldMatches(hosts, name)) continue;
    if (lineBlob === blob) return { outcome: 'match', file: knownHostsPath, line: i + 1 };
    if (lineType === type && (!mismatch || mismatch.keyType !== type)) {
      mismatch = { outcome: 'mismatch', file: knownHostsPath, line: i + 1, keyType: type };
    } else if (!mismatch) {
      mismatch = { outcome: 'mismatch', file: knownHostsPath, line: i + 1, keyType: lineType };
    }
  }
  return mismatch ?? { outcome: 'unknown' };
}

/**
 * Appends `name type base64` for the host (plain, not hashed), creating the file and its folder
 * (mode 0700/0600) when missing. A host name with a control character or whitespace is refused
 * (a newline in a host name from an untrusted run file would start a line of its own); the key
 * type loses any.
 * @throws Error when the host name is empty once cleaned, or holds a space
 */
export async function appendHostKey(knownHostsPath: string, host: string, port: number, key: Buffer): Promise<void> {
  await mkdir(dirname(knownHostsPath), { recursive: true, mode: 0o700 });
  let prefix = '';
  try {
    const existing = await readFile(knownHostsPath, 'utf8');
    if (existing.length > 0 && !existing.endsWith('\n')) prefix = '\n';
  } catch {
    // Missing file: created below.
  }
  const name = knownHostsName(host, port);
  // A control character (a newline would start a line of its own) or a space: not a host name.
  if (host === '' || oneLine(name) !== name || /\s/.test(name)) throw new Error(`not recording the host key of ${JSON.stringify(host.slice(0, 100))}: not a host name`);
  const line = `${name} ${oneLine(keyTypeOf(key)).replace(/\s/g, '')} ${key.toString('base64')}\n`;
  await appendFile(knownHostsPath, prefix + line, { mode: 0o600 });
}
