/**
 * Reading and writing the protocol's lines (the messages are in eventTypes.ts, re-exported by
 * events.ts): an agent's stdout line parsed and shape-checked into an AgentEvent, a line of the
 * agent's stdin into a HostCommand, a message serialised as a line. Every check happens before a
 * message is used.
 */
import type { AgentEvent, HostCommand } from './eventTypes';
import { eventShapeProblem, isNum, isRecord, isStr } from './eventShapes';
import { livenessProblem } from './liveness';

/** Bumped on any incompatible change of the line format. */
export const PROTOCOL_VERSION = 1;

const AGENT_EVENT_TYPES: ReadonlySet<string> = new Set<AgentEvent['type']>([
  'agent/hello',
  'agent/heartbeat',
  'run/listening',
  'node/joined',
  'run/plan',
  'run/startup',
  'run/progress',
  'run/sample',
  'experiment/summary',
  'experiment/skipped',
  'run/error',
  'run/done',
]);

/** Why a line could not be read as a protocol message. */
export class ProtocolError extends Error {
  constructor(
    message: string,
    readonly line: string,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/**
 * The JSON value of one protocol line.
 * @param who the side that sent it, for the message
 * @throws ProtocolError when the line is not JSON
 */
function jsonOf(line: string, who: 'agent' | 'host'): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    throw new ProtocolError(`${who} sent a line that is not JSON: ${line.slice(0, 200)}`, line);
  }
}

/**
 * Parses one agent stdout line.
 * @throws ProtocolError when the line is not JSON or not a known event type.
 */
export function parseAgentEvent(line: string): AgentEvent {
  const value = jsonOf(line, 'agent');
  if (!isRecord(value) || typeof value.type !== 'string' || !AGENT_EVENT_TYPES.has(value.type)) {
    throw new ProtocolError(`agent sent an unknown message: ${line.slice(0, 200)}`, line);
  }
  // Streams recorded before libraryMs was named (launcher runs saved as protocol lines) call it measuredMs.
  if (value.type === 'run/done' && value.libraryMs === undefined && isNum(value.measuredMs)) {
    value.libraryMs = value.measuredMs;
    delete value.measuredMs;
  }
  if (value.type === 'agent/hello' && value.protocolVersion !== PROTOCOL_VERSION) {
    throw new ProtocolError(
      `agent speaks protocol ${String(value.protocolVersion)}, this side speaks ${PROTOCOL_VERSION}: redeploy the agent`,
      line,
    );
  }
  const problem = eventShapeProblem(value);
  if (problem) throw new ProtocolError(`agent sent a malformed ${value.type}: ${problem}: ${line.slice(0, 200)}`, line);
  return value as unknown as AgentEvent;
}

/**
 * Parses one line of the agent's stdin.
 * @throws ProtocolError when the line is not JSON or not a known command.
 */
export function parseHostCommand(line: string): HostCommand {
  const value = jsonOf(line, 'host');
  if (!isRecord(value) || (value.type !== 'run/start' && value.type !== 'run/cancel' && value.type !== 'node/join' && value.type !== 'host/keepalive')) {
    throw new ProtocolError(`host sent an unknown command: ${line.slice(0, 200)}`, line);
  }
  if (value.type === 'host/keepalive') {
    const problem = livenessProblem(value.intervalMs, value.deadlineMs);
    if (problem) throw new ProtocolError(`host/keepalive: ${problem}`, line);
  }
  if ((value.type === 'run/start' || value.type === 'node/join') && !isRecord(value.options)) {
    throw new ProtocolError(`${value.type} without options`, line);
  }
  if (value.type === 'run/start' && value.cluster !== undefined) {
    const c = value.cluster;
    if (!isRecord(c) || !Number.isInteger(c.nodes) || (c.nodes as number) < 1 || (c.nodes as number) > 64 || (c.coordinatorAddress !== undefined && !isStr(c.coordinatorAddress))) {
      throw new ProtocolError('run/start "cluster" must give "nodes" (1–64) and optionally "coordinatorAddress"', line);
    }
  }
  if (value.type === 'run/start' && value.slurm !== undefined) {
    const sl = value.slurm;
    if (!isRecord(sl) || !Array.isArray(sl.srunArgs) || !sl.srunArgs.every(isStr) || (sl.srunPath !== undefined && !isStr(sl.srunPath))) {
      throw new ProtocolError('run/start "slurm" must give "srunArgs" (strings) and optionally "srunPath"', line);
    }
  }
  if (value.type === 'node/join') {
    const c = value.coordinator;
    if (
      !Number.isInteger(value.index) ||
      (value.index as number) < 1 ||
      !isRecord(c) ||
      !Array.isArray(c.addresses) ||
      c.addresses.length === 0 ||
      !c.addresses.every(isStr) ||
      !Number.isInteger(c.port) ||
      (c.port as number) < 1 ||
      (c.port as number) > 65535 ||
      !isStr(c.token)
    ) {
      throw new ProtocolError('node/join needs "index" (≥ 1) and "coordinator" with "addresses", "port" (1–65535) and "token"', line);
    }
  }
  return value as unknown as HostCommand;
}

/** Serialises one message as a protocol line (with the trailing newline). */
export function toLine(message: AgentEvent | HostCommand): string {
  return JSON.stringify(message) + '\n';
}
