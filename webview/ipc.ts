/**
 * Where the webview's state comes from: the extension host (typed messages, ready handshake) or,
 * in the standalone HTML report, the run JSON embedded in `<script type="application/json"
 * id="commcost-run">`.
 */
import {
  CancelRunCommand,
  createMessage,
  ReadyCommand,
  RunDeltaNotification,
  RunStateNotification,
  ShowLogCommand,
  ShowPlanNotification,
  type IpcMessageType,
  type PlanRequest,
  type RunState,
} from '../protocol/webviewMessages';
import { applyRunDelta } from '../protocol/runDelta';
import type { RunFile } from '../protocol/runFile';
import { COMPARE_ELEMENT_ID, type ComparisonData } from '../protocol/compare';
import type { ViewActions } from './view';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** The id of the script element that carries the run in the HTML report. */
export const RUN_ELEMENT_ID = 'commcost-run';

/** VS Code's API, acquired once (acquiring twice throws); undefined outside VS Code (the HTML report). */
let api: VsCodeApi | undefined | null = null;
function vsCodeApi(): VsCodeApi | undefined {
  if (api === null) api = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : undefined;
  return api;
}

/**
 * Keeps what the panel shows (`{kind: 'run', path}` or `{kind: 'compare', paths}`, run file
 * paths only) as the webview's VS Code state: the panel serializer gets it after a window reload
 * (extension/panelSerializer.ts). Does nothing outside VS Code.
 */
export function keepPanelState(state: unknown): void {
  if (state !== undefined) vsCodeApi()?.setState(state);
}

/** The panel state the host wrote into the page (`data-commcost-state` on `<body>`, JSON); undefined when absent or not JSON. */
export function pagePanelState(doc: Document): unknown {
  const text = doc.body?.dataset.commcostState;
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Connects to the extension host when running inside VS Code: every `state/run/update` goes to
 * `onState`, and so does every `state/run/delta` once applied to the run held (appended in place:
 * protocol/runDelta.ts; a delta for another run is dropped), every `plan/show` to `onPlan`, and
 * `webview/ready` is sent once listening. Returns the actions the view may offer, or undefined
 * outside VS Code.
 */
export function connectToHost(onState: (state: RunState) => void, onPlan?: (request: PlanRequest) => void): ViewActions | undefined {
  const vscode = vsCodeApi();
  if (!vscode) return undefined;
  let counter = 0;
  const send = <P>(type: IpcMessageType<P>, params: P): void => vscode.postMessage(createMessage(type, params, 'webview', ++counter));
  /** The last state given to `onState` (the base of the next delta). */
  let held: RunState | undefined;
  window.addEventListener('message', (e: MessageEvent<unknown>) => {
    if (RunStateNotification.is(e.data)) {
      if (typeof e.data.params.savedPath === 'string') keepPanelState({ kind: 'run', path: e.data.params.savedPath });
      held = e.data.params;
      onState(held);
    } else if (RunDeltaNotification.is(e.data)) {
      const { runId, delta, ...rest } = e.data.params;
      if (!held || held.run.id !== runId) return;
      if (typeof rest.savedPath === 'string') keepPanelState({ kind: 'run', path: rest.savedPath });
      held = { ...rest, run: applyRunDelta(held.run, delta) };
      onState(held);
    } else if (ShowPlanNotification.is(e.data)) onPlan?.(e.data.params);
  });
  send(ReadyCommand, {});
  return {
    cancel: () => send(CancelRunCommand, {}),
    showLog: () => send(ShowLogCommand, {}),
  };
}

/** Reads the embedded run of the HTML report; undefined when absent or not a JSON object. */
export function readEmbeddedRun(doc: Document): RunState | undefined {
  const el = doc.getElementById(RUN_ELEMENT_ID);
  if (!el?.textContent) return undefined;
  try {
    const run: unknown = JSON.parse(el.textContent);
    if (typeof run !== 'object' || run === null) return undefined;
    return { run: run as RunFile, live: false };
  } catch {
    return undefined;
  }
}

/**
 * Reads the embedded comparison of a comparison report (`{"runs": [...]}` in
 * `<script type="application/json" id="commcost-compare">`); undefined when absent, not JSON, or
 * without at least one run object.
 */
export function readEmbeddedComparison(doc: Document): ComparisonData | undefined {
  const el = doc.getElementById(COMPARE_ELEMENT_ID);
  if (!el?.textContent) return undefined;
  try {
    const data: unknown = JSON.parse(el.textContent);
    if (typeof data !== 'object' || data === null) return undefined;
    const runs = (data as { runs?: unknown }).runs;
    if (!Array.isArray(runs)) return undefined;
    const objects = runs.filter((r): r is RunFile => typeof r === 'object' && r !== null);
    return objects.length > 0 ? { runs: objects } : undefined;
  } catch {
    return undefined;
  }
}
