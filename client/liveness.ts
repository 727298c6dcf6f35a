/**
 * The host side of the liveness protocol (protocol/liveness.ts): keepalives to the agent, and a
 * deadline on what comes back, so that a run never waits forever on an agent that stopped talking
 * while its process or SSH channel stays open (a SIGSTOPped agent, a partition where TCP stays up).
 */
import { DEFAULT_LIVENESS, livenessProblem, type KeepaliveCommand, type LivenessSettings } from '../protocol/events';
import { CommcostError } from './errors';

/** The environment variables that set the liveness settings (ms) of the CLI and the extension. */
export const LIVENESS_ENV = { intervalMs: 'COMMCOST_HEARTBEAT_MS', deadlineMs: 'COMMCOST_LIVENESS_DEADLINE_MS' } as const;

/**
 * The liveness settings of a run, ms: `given` fields first, then the environment
 * ({@link LIVENESS_ENV}), then {@link DEFAULT_LIVENESS} (a heartbeat every 5 s, gone after 120 s).
 * @throws CommcostError BAD_INPUT naming the variable or field when a value is not a whole number
 *   within protocol/liveness.ts LIVENESS_LIMITS, or the deadline is under 2 × the interval
 */
export function livenessSettings(given: Partial<LivenessSettings> = {}, env: NodeJS.ProcessEnv = process.env): LivenessSettings {
  const pick = (key: keyof LivenessSettings): { value: number; from: string } => {
    if (given[key] !== undefined) return { value: given[key], from: key };
    const text = env[LIVENESS_ENV[key]];
    if (text !== undefined && text.trim() !== '') {
      return { value: /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN, from: `${LIVENESS_ENV[key]}=${JSON.stringify(text.slice(0, 40))}` };
    }
    return { value: DEFAULT_LIVENESS[key], from: 'default' };
  };
  const interval = pick('intervalMs');
  const deadline = pick('deadlineMs');
  const problem = livenessProblem(interval.value, deadline.value);
  if (problem) {
    throw new CommcostError('BAD_INPUT', `the liveness settings are not usable (${interval.from}, ${deadline.from}): ${problem}`, {
      hint: `set ${LIVENESS_ENV.intervalMs} and ${LIVENESS_ENV.deadlineMs} to whole numbers of ms (defaults ${DEFAULT_LIVENESS.intervalMs} and ${DEFAULT_LIVENESS.deadlineMs}), or unset them`,
    });
  }
  return { intervalMs: interval.value, deadlineMs: deadline.value };
}

/**
 * Keepalives to one agent and the deadline on its silence. Nothing runs until
 * {@link AgentLiveness.start} (called at the agent's hello); every line from the agent (stdout or
 * stderr) goes to {@link AgentLiveness.heard}; `onSilent` is called once when nothing came for
 * `deadlineMs`. Owned by the run: {@link AgentLiveness.dispose} stops both timers.
 */
export class AgentLiveness {
  private keepalive: NodeJS.Timeout | undefined;
  private watch: NodeJS.Timeout | undefined;
  private lastHeard = Date.now();
  private done = false;

  /**
   * @param send writes one command to the agent (ignored by the agent's channel once closed)
   * @param onSilent called once with the silence (ms) when nothing came for the deadline
   */
  constructor(
    readonly settings: LivenessSettings,
    private readonly send: (cmd: KeepaliveCommand) => void,
    private readonly onSilent: (silentMs: number) => void,
  ) {}

  /** Sends the first keepalive and arms the deadline; later calls do nothing. */
  start(): void {
    if (this.done || this.keepalive) return;
    const cmd: KeepaliveCommand = { type: 'host/keepalive', intervalMs: this.settings.intervalMs, deadlineMs: this.settings.deadlineMs };
    this.lastHeard = Date.now();
    this.send(cmd);
    this.keepalive = setInterval(() => this.send(cmd), this.settings.intervalMs);
    // Checked a few times per interval: the stop comes within deadline + interval / 4.
    this.watch = setInterval(() => {
      const silent = Date.now() - this.lastHeard;
      if (silent < this.settings.deadlineMs || this.done) return;
      this.dispose();
      this.onSilent(silent);
    }, Math.max(25, Math.floor(this.settings.intervalMs / 4)));
  }

  /** Something came from the agent. */
  heard(): void {
    this.lastHeard = Date.now();
  }

  /** Stops the keepalives and the deadline. Idempotent. */
  dispose(): void {
    this.done = true;
    clearInterval(this.keepalive);
    clearInterval(this.watch);
  }
}
