/**
 * Liveness of the link between the host side (extension or CLI) and its agent, both ways, for a
 * peer that stops talking while its process, pipe or TCP connection stays open (a SIGSTOPped
 * process, a network partition that sends no FIN or RST).
 *
 * - Host → agent: `host/keepalive` ({@link KeepaliveCommand}), sent right after the agent's
 *   `agent/hello` and then every `intervalMs`. The first one arms the agent's watch: from then
 *   on, when no line at all comes from the host for `deadlineMs`, the agent cancels its run
 *   (the ranks are aborted, then killed: the same path as a cancel) and exits.
 * - Agent → host: `agent/heartbeat` ({@link HeartbeatEvent}), every `intervalMs` from the first
 *   keepalive until the agent exits. The host stops with AGENT_SILENT when no line at all (stdout
 *   or stderr) comes from the agent for `deadlineMs`.
 *
 * Imports nothing (protocol/ invariant).
 */

/** Agent → host: "still here". Carries nothing else; never folded into a run. */
export interface HeartbeatEvent {
  type: 'agent/heartbeat';
}

/**
 * Host → agent: "still here", and how both sides watch each other: the agent sends its
 * heartbeats every `intervalMs` and gives up on the host after `deadlineMs` of silence.
 * Every keepalive carries the same values; the agent takes the latest.
 */
export interface KeepaliveCommand {
  type: 'host/keepalive';
  /** Between two keepalives, and between two of the agent's heartbeats, ms. */
  intervalMs: number;
  /** Silence after which each side counts the other as gone, ms (at least 2 × intervalMs). */
  deadlineMs: number;
}

/** The interval and deadline of {@link KeepaliveCommand}, ms. */
export interface LivenessSettings {
  intervalMs: number;
  deadlineMs: number;
}

/**
 * Defaults, ms: a heartbeat every 5 s; gone after 120 s of silence (24 intervals). The deadline
 * leaves room for what blocks an agent's event loop for a while (a first build of the native
 * addon on the GPU host, a busy 2-core CI machine) and for an extension host busy elsewhere.
 */
export const DEFAULT_LIVENESS: LivenessSettings = { intervalMs: 5_000, deadlineMs: 120_000 };

/** Inclusive limits of the two settings, ms (the deadline also at least 2 × the interval). */
export const LIVENESS_LIMITS = {
  intervalMs: { min: 50, max: 600_000 },
  deadlineMs: { min: 100, max: 86_400_000 },
} as const;

/**
 * What is wrong with an interval and deadline pair, or undefined when both are usable.
 * @returns a sentence without a trailing period, e.g. "deadlineMs (100) must be at least 2 × intervalMs (200)"
 */
export function livenessProblem(intervalMs: unknown, deadlineMs: unknown): string | undefined {
  const whole = (x: unknown, lim: { min: number; max: number }): boolean => typeof x === 'number' && Number.isInteger(x) && x >= lim.min && x <= lim.max;
  if (!whole(intervalMs, LIVENESS_LIMITS.intervalMs)) return `intervalMs must be a whole number of ms from ${LIVENESS_LIMITS.intervalMs.min} to ${LIVENESS_LIMITS.intervalMs.max}, not ${String(intervalMs)}`;
  if (!whole(deadlineMs, LIVENESS_LIMITS.deadlineMs)) return `deadlineMs must be a whole number of ms from ${LIVENESS_LIMITS.deadlineMs.min} to ${LIVENESS_LIMITS.deadlineMs.max}, not ${String(deadlineMs)}`;
  if ((deadlineMs as number) < 2 * (intervalMs as number)) return `deadlineMs (${String(deadlineMs)}) must be at least 2 × intervalMs (${String(intervalMs)})`;
  return undefined;
}
