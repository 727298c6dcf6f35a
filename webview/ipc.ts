/**
 * Where the webview's state comes from: the extension host (typed messages, ready handshake) or,
 * in the standalone HTML report, the run JSON embedded in `<script type="application/json"
 * id="commcost-run">`.
 */
import {
  CancelRunCommand,
  createMessage,
  ReadyCommand,
  RunStateNotification,
  ShowLogCommand,
  ShowPlanNotification,
  type IpcMessageType,
  type PlanRequest,
  type RunState,
} from '../protocol/webviewMessages';
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

/**
 * Connects to the extension host when running inside VS Code: every `state/run/update` goes to
 * `onState`, every `plan/show` to `onPlan`, and `webview/ready` is sent once listening. Returns
 * the actions the view may offer, or undefined outside VS Code.
 */
export function connectToHost(onState: (state: RunState) => void, onPlan?: (request: PlanRequest) => void): ViewActions | undefined {
  if (typeof acquireVsCodeApi !== 'function') return undefined;
  const vscode = acquireVsCodeApi();
  let counter = 0;
  const send = <P>(type: IpcMessageType<P>, params: P): void => vscode.postMessage(createMessage(type, params, 'webview', ++counter));
  window.addEventListener('message', (e: MessageEvent<unknown>) => {
    if (RunStateNotification.is(e.data)) onState(e.data.params);
    else if (ShowPlanNotification.is(e.data)) onPlan?.(e.data.params);
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
