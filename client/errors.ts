/**
 * The host side's typed error. Callers match on {@link CommcostError.code}, never on message text.
 *
 * Messages say what failed, where (host) and why, with no trailing period; `hint` says what to do.
 */
import type { ErrorWhere } from '../protocol/events';

/** Reason codes of the host side (the agent's own codes, e.g. NO_GPU, pass through unchanged). */
export type CommcostErrorCode =
  | 'BAD_INPUT'
  | 'BAD_TARGET'
  | 'HOST_UNREACHABLE'
  | 'HOST_KEY_UNKNOWN'
  | 'HOST_KEY_MISMATCH'
  | 'AUTH_FAILED'
  | 'SSH_FAILED'
  | 'CONNECTION_LOST'
  | 'NO_NODE'
  | 'NO_AGENT'
  | 'DEPLOY_FAILED'
  | 'AGENT_EXITED'
  | 'AGENT_SILENT'
  | 'PROTOCOL'
  | 'CANCELLED'
  | 'NO_GPU'
  | 'BAD_RUN_FILE'
  | 'INTERNAL'
  | (string & {});

export class CommcostError extends Error {
  /** Literal reason code, e.g. `HOST_UNREACHABLE`. */
  readonly code: CommcostErrorCode;
  /** Where it happened (host, rank, experiment, …). */
  readonly where?: ErrorWhere;
  /** What the user can do about it. */
  readonly hint?: string;

  /**
   * @param code reason code
   * @param message what failed, where and why, without a trailing period
   * @param extra where it happened, a hint, and the underlying error as `cause`
   */
  constructor(
    code: CommcostErrorCode,
    message: string,
    extra: { where?: ErrorWhere; hint?: string; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'CommcostError';
    this.code = code;
    if (extra.where !== undefined) this.where = extra.where;
    if (extra.hint !== undefined) this.hint = extra.hint;
  }

  /** `message` followed by the hint on its own line, for a terminal or a notification. */
  describe(): string {
    return this.hint ? `${this.message}\n  hint: ${this.hint}` : this.message;
  }
}

/** True for a {@link CommcostError}, optionally of one code. */
export function isCommcostError(e: unknown, code?: CommcostErrorCode): e is CommcostError {
  return e instanceof CommcostError && (code === undefined || e.code === code);
}

/** The message of any thrown value (Error or not). */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
