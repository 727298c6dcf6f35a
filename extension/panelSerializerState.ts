/**
 * What a results or comparison panel keeps across a window reload, with no `vscode` import
 * (unit-tested). Only run file paths are kept — never figures: the serializer reads the files
 * again through client/resultsStore.ts `loadRun` (schema-validated), so a restored panel shows
 * what is on disk now, and a file that is gone or no longer valid is said so.
 *
 * The state is the webview's own (`acquireVsCodeApi().setState`, webview/ipc.ts
 * `keepPanelState`): the page carries it in `data-commcost-state` on `<body>`, and a live run's
 * panel learns its path from `RunState.savedPath` once the run is saved.
 */
import { isAbsolute } from 'node:path';

/** The view types of the panels (package.json `onWebviewPanel:` activation events). */
export const RESULTS_VIEW_TYPE = 'commcost.results';
export const COMPARE_VIEW_TYPE = 'commcost.compare';

/** A results panel shows one saved run; a comparison panel two or more. Paths are absolute. */
export type PanelRestoreState = { kind: 'run'; path: string } | { kind: 'compare'; paths: string[] };

/** At most this many runs in one comparison (more are not restored). */
export const MAX_COMPARED_RUNS = 26;

const runPath = (p: unknown): p is string =>
  typeof p === 'string' && p.length > 0 && p.length < 4096 && !p.includes('\0') && isAbsolute(p) && p.endsWith('.json');

/**
 * The restore state of a panel read back from VS Code (untrusted shape: it is whatever the
 * webview stored); undefined when it is not one this version wrote.
 */
export function parseRestoreState(state: unknown): PanelRestoreState | undefined {
  if (typeof state !== 'object' || state === null) return undefined;
  const s = state as Record<string, unknown>;
  if (s.kind === 'run' && runPath(s.path)) return { kind: 'run', path: s.path };
  if (s.kind === 'compare' && Array.isArray(s.paths) && s.paths.length >= 2 && s.paths.length <= MAX_COMPARED_RUNS && s.paths.every(runPath))
    return { kind: 'compare', paths: [...(s.paths as string[])] };
  return undefined;
}

/** The state as the page's `data-commcost-state` attribute value (JSON, HTML-escaped: safe in a quoted attribute). */
export function restoreAttribute(state: PanelRestoreState): string {
  return JSON.stringify(state).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
