/**
 * The wire protocol between the remote agent and its host side (extension or CLI).
 *
 * Transport: JSON lines. The agent writes one {@link AgentEvent} per line on its stdout and
 * nothing else; the host writes one {@link HostCommand} per line on the agent's stdin. Closing
 * the agent's stdin tears the whole run down (the agent treats EOF as cancel + exit).
 * Both sides also watch for a peer that goes silent with its pipe or connection still open:
 * `host/keepalive` one way, `agent/heartbeat` the other, each with a deadline (liveness.ts).
 *
 * This folder imports nothing: it is shared by extension/, webview/, client/, cli/ and
 * remote-agent/.
 */

export * from './runOptions';

export { DEFAULT_LIVENESS, LIVENESS_LIMITS, livenessProblem, type HeartbeatEvent, type KeepaliveCommand, type LivenessSettings } from './liveness';

export { PROTOCOL_VERSION, ProtocolError, parseAgentEvent, parseHostCommand, toLine } from './eventLines';

export type * from './eventTypes';
