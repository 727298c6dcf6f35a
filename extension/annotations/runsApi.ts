/**
 * The saved runs' API that the annotations hand to the Runs view, the palette commands and the
 * samples (register.ts builds it): a type of its own so that none of them imports register.ts.
 */
import type * as vscode from 'vscode';
import type { ProfileStore, RunFolder } from '../../client/profileStore';
import type { StaleRules } from '../../readings/profiles';
import type { TraceAnnotations } from './tracesWatch';

/**
 * The saved runs as the annotations hold them, for the Runs view and the palette commands
 * (extension/runsView.ts, extension/commands.ts): one store, one active run, one change event.
 */
export interface RunsApi {
  /** The loaded runs (workspace first, then global storage) and the active one. */
  readonly store: ProfileStore;
  /** The staleness rules now (settings and the clock). */
  rules(): StaleRules;
  /** Loads the runs once if nothing has loaded them yet (the annotations load them with tree-sitter). */
  ensureLoaded(): Promise<void>;
  /** Reads the run folders again. */
  reload(): Promise<void>;
  /** Makes the run with `key` the active one (the user's choice, kept per workspace); false when unknown. */
  setActive(key: string): Promise<boolean>;
  /** The folders runs are read from, as the store reads them. */
  folders(): RunFolder[];
  /** Fires after the runs were reloaded, the active run changed or the settings changed. */
  readonly onDidChange: vscode.Event<void>;
  /** The traces of the user's job (`.commcost/traces`) and the one the annotations ask first (the Runs view's Traces group). */
  readonly traces: TraceAnnotations;
}
