/**
 * The one question commcost asks before trusting an SSH host key it has never seen (Measure and
 * Trace Python File on a host): a modal warning with the key's fingerprint and how to check it.
 * Stateless: each lazy bundle that asks keeps its own copy (scripts/build.mjs LAZY_COPIES_OK).
 */
import * as vscode from 'vscode';

/**
 * Asks the user whether to trust the unknown host key of `hostName`.
 * @param fingerprint the key's SHA256 fingerprint as ssh-keygen prints it
 * @returns true when the user chose "Trust and continue" (the key is then added to ~/.ssh/known_hosts by the caller), false otherwise
 */
export async function confirmUnknownHostKey(hostName: string, fingerprint: string): Promise<boolean> {
  const trust = 'Trust and continue';
  const answer = await vscode.window.showWarningMessage(
    `commcost: the host key of ${hostName} is not known`,
    { modal: true, detail: `Fingerprint: ${fingerprint}\n\nCompare it with the host's key (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host) before trusting it. Trusting adds it to ~/.ssh/known_hosts.` },
    trust,
  );
  return answer === trust;
}
