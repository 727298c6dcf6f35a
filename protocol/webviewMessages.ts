/**
 * Messages between the extension host and the results webview (GitLens style).
 *
 * Transport: `webview.postMessage` / `acquireVsCodeApi().postMessage`; every message is an
 * {@link IpcMessage} `{ id, method, params }`. Methods are namespaced `scope/noun/verb` (or
 * `scope/verb` where the noun is the scope). Each message type is a typed descriptor with an
 * `is()` guard, so both sides dispatch without casting.
 *
 * The host sends a complete snapshot (`state/run/update`) after every `webview/ready` and when
 * another run is shown; while a run streams it sends deltas (`state/run/delta`, ./runDelta.ts:
 * the run without its sample arrays plus the values appended since the previous post), so a post
 * costs what is new, not every sample so far. The webview applies every delta as it arrives
 * (appends) and renders the latest state at most once per frame, which is how it keeps up with
 * 1,000 events/s.
 *
 * This file imports only from `./events`, `./runFile` and `./runDelta`: it is shared by extension/
 * and webview/.
 */
import type { RunDelta } from './runDelta';
import type { RunFile } from './runFile';

/** The envelope of every message. `id` is unique per sender and only used for tracing. */
export interface IpcMessage<Params = unknown> {
  id: string;
  method: string;
  params: Params;
}

/** Who sends a message type. */
export type IpcDirection = 'webview→host' | 'host→webview';

/** Fire-and-forget message type: a command (webview asks the host to act) or a notification (host tells the webview). */
export interface IpcMessageType<Params> {
  readonly method: string;
  readonly direction: IpcDirection;
  /** True when `msg` is this message type (method match plus a shallow shape check of `params`). */
  is(msg: unknown): msg is IpcMessage<Params>;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function messageType<Params>(
  method: string,
  direction: IpcDirection,
  paramsOk: (p: unknown) => boolean,
): IpcMessageType<Params> {
  return {
    method,
    direction,
    is(msg: unknown): msg is IpcMessage<Params> {
      return isRecord(msg) && msg.method === method && typeof msg.id === 'string' && paramsOk(msg.params);
    },
  };
}

const noParams = (p: unknown): boolean => p === undefined || isRecord(p);

// ---------------------------------------------------------------------------------------------
// Webview → host

/**
 * Webview → host, command: the webview script has loaded (again, after a reload) and wants the
 * complete state. The host answers with one {@link RunStateNotification}.
 */
export const ReadyCommand = messageType<Record<string, never>>('webview/ready', 'webview→host', noParams);

/** Webview → host, command: the user pressed Cancel. The host aborts the run; results so far are kept (partial). */
export const CancelRunCommand = messageType<Record<string, never>>('run/cancel', 'webview→host', noParams);

/** Webview → host, command: open the `commcost` output channel (the "Show Log" action). */
export const ShowLogCommand = messageType<Record<string, never>>('log/show', 'webview→host', noParams);

// ---------------------------------------------------------------------------------------------
// Host → webview

/**
 * A failure that left no run to show (the engine rejected: unreachable host, no Node, ...).
 * `where` is already formatted for display ("host gpu1, rank 2").
 */
export interface HostFailure {
  code: string;
  message: string;
  where?: string;
  hint?: string;
}

/**
 * The complete state the webview renders. `run` is a full snapshot (every figure in ms, memory in
 * bytes, as in {@link RunFile}); `live` is true while the run is streaming (Cancel is offered).
 */
export interface RunState {
  run: RunFile;
  live: boolean;
  /** Set when the engine failed before anything was measured. */
  failure?: HostFailure;
  /**
   * The run file this state shows, once saved (absolute path). The webview keeps it as its VS
   * Code state, so the panel can be restored with the same run after a window reload
   * (extension/panelSerializer.ts reads the file again).
   */
  savedPath?: string;
}

/** Host → webview, notification: the complete state (after `webview/ready` and after every run snapshot). */
export const RunStateNotification = messageType<RunState>(
  'state/run/update',
  'host→webview',
  (p) => isRecord(p) && isRecord(p.run) && typeof p.live === 'boolean',
);

/**
 * A live run's next state as a delta (protocol/runDelta.ts): the run without its sample arrays
 * plus the values appended to each since the previous post. Applies to the run the webview holds
 * when its id is `runId` (the host posts a complete {@link RunStateNotification} first, and again
 * after every `webview/ready`); ignored otherwise.
 */
export interface RunDeltaState extends Omit<RunState, 'run'> {
  runId: string;
  delta: RunDelta;
}

/** Host → webview, notification: the next state of the run shown, as a delta (while it streams). */
export const RunDeltaNotification = messageType<RunDeltaState>(
  'state/run/delta',
  'host→webview',
  (p) => isRecord(p) && typeof p.runId === 'string' && typeof p.live === 'boolean' && isRecord(p.delta) && isRecord(p.delta.run) && Array.isArray(p.delta.append),
);

/**
 * What the Plan section is opened with (all optional; an absent field keeps the section's value).
 * `shapes`: TP shapes, largest first (e.g. [4, 2, 1]); `switchEvery`, `step`, `budget`: as the
 * user would type them ("2s", "30ms", "60GiB"); `origin`: where they came from, shown above the
 * inputs ("from build_pool in train.py: TP4, TP2, TP1 from `for tp in (4, 2, 1)` (line 7)").
 */
export interface PlanRequest {
  shapes?: number[];
  switchEvery?: string;
  step?: string;
  budget?: string;
  origin?: string;
  /** Which section to show: the reshape planner (default) or the recovery paths (`recovery`, readings/plan/recovery.ts; the other inputs do not apply). */
  section?: 'reshape' | 'recovery';
}

/**
 * Host → webview, notification: show the Plan section with these inputs (sent by the
 * extension's "plan this reshape" CodeLens, extension/annotations/planLensProvider.ts, after the
 * run's `state/run/update`). The webview sets the inputs, recomputes the plan, scrolls the section
 * into view and focuses its first input.
 */
export const ShowPlanNotification = messageType<PlanRequest>(
  'plan/show',
  'host→webview',
  (p) =>
    isRecord(p) &&
    (p.shapes === undefined || (Array.isArray(p.shapes) && p.shapes.every((x) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 1))) &&
    ['switchEvery', 'step', 'budget', 'origin'].every((k) => p[k] === undefined || typeof p[k] === 'string') &&
    (p.section === undefined || p.section === 'reshape' || p.section === 'recovery'),
);

/** Every webview → host message type. */
export const WEBVIEW_TO_HOST = [ReadyCommand, CancelRunCommand, ShowLogCommand] as const;
/** Every host → webview message type. */
export const HOST_TO_WEBVIEW = [RunStateNotification, RunDeltaNotification, ShowPlanNotification] as const;

/** Parameters of a message type. */
export type ParamsOf<T> = T extends IpcMessageType<infer P> ? P : never;

/**
 * Builds a message of `type` with `params`. `id` is `<prefix>:<counter>`, unique per sender.
 */
export function createMessage<P>(type: IpcMessageType<P>, params: P, prefix: string, counter: number): IpcMessage<P> {
  return { id: `${prefix}:${counter}`, method: type.method, params };
}
