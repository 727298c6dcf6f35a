/**
 * The pure parts of the palette commands (no `vscode` import, unit-tested): what an untrusted
 * workspace refuses and how it says so, the choice of runs to compare, and the default file name
 * of an HTML report.
 *
 * Workspace trust (package.json `capabilities.untrustedWorkspaces`: limited): in Restricted Mode
 * commcost starts no program — no measurement (it runs the agent, NCCL and the host's Python), no
 * deploy to a host, no trace — because the workspace's settings choose the hosts, the NCCL
 * library and the Python that would run. Reading saved run files (annotations, the Runs view,
 * panels, reports) still works: run files are data, validated on load.
 */

/** What an untrusted workspace refuses. */
export type RestrictedAction = 'measure' | 'deploy' | 'trace';

const WHAT: Record<RestrictedAction, string> = {
  measure: 'measuring runs the agent, NCCL and Python on the chosen host',
  deploy: 'deploying copies the agent to a host and starts it there',
  trace: 'tracing runs the Python file',
};

/** The label of the action on the refusal that opens VS Code's workspace trust editor. */
export const MANAGE_TRUST = 'Manage Workspace Trust';

/** The one line the status bar item and its tooltip show in Restricted Mode. */
export const RESTRICTED_LINE = 'commcost in Restricted Mode: annotations and saved runs only — no measure, deploy or trace';

/**
 * The message shown when `action` is asked for in an untrusted workspace: what was refused, why,
 * what still works and what to do.
 */
export function untrustedRefusal(action: RestrictedAction): string {
  return `commcost: this workspace is not trusted, so ${action} is off (${WHAT[action]}, with programs and hosts this workspace's settings choose). Annotations and saved runs still work, read-only. To ${action}, trust the workspace (${MANAGE_TRUST})`;
}

/**
 * Wraps a command handler so that it runs only in a trusted workspace; otherwise `refuse` gets
 * the {@link untrustedRefusal} text and the handler is not called (resolves undefined).
 * @param isTrusted read at each call (trust can be granted while the window is open)
 */
export function whenTrusted<A extends unknown[], R>(
  action: RestrictedAction,
  isTrusted: () => boolean,
  refuse: (message: string) => void,
  handler: (...args: A) => R,
): (...args: A) => R | undefined {
  return (...args: A) => {
    if (!isTrusted()) {
      refuse(untrustedRefusal(action));
      return undefined;
    }
    return handler(...args);
  };
}

/**
 * The runs to compare, in the user's order (run A, the baseline of every ratio, first), without
 * repeats; or why there are not enough: a comparison needs at least two runs.
 */
export function compareChoice(keys: readonly string[]): { ok: true; keys: string[] } | { ok: false; why: string } {
  const unique = [...new Set(keys)];
  if (unique.length < 2) return { ok: false, why: `choose at least two runs to compare (${unique.length} chosen)` };
  return { ok: true, keys: unique };
}

/** The default file name of a run's HTML report: `<run id>.html`, the id made safe for a file name. */
export function reportFileName(runId: string): string {
  const safe = runId.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '').slice(0, 120);
  return `${safe || 'run'}.html`;
}
