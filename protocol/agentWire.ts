/**
 * Shape checks of the agent's internal wire messages (remote-agent/rankWire.ts): a rank process
 * → its coordinator on the control channel, and a node host → the coordinator on the node
 * server. Pure: each takes what JSON.parse returned (anything: `null`, `42`, `[]`, a record with
 * `steps: null`) and returns undefined when the message may be used as its type says, else the
 * problem in words. The agent checks every message with these before reading one field of it,
 * before and after the peer has authenticated (a peer holding the secret must not crash it
 * either).
 *
 * Limits (what a message may hold) are part of the shape: a string field is at most
 * {@link WIRE_LIMITS.text} characters, a record at most {@link WIRE_LIMITS.keys} keys.
 */

/** What one wire message may hold. */
export const WIRE_LIMITS = {
  /** Characters of a name, label or message field. */
  text: 64 * 1024,
  /** Characters of a unique id (base64 of NCCL's 128 bytes, or a c10d store value). */
  id: 16 * 1024,
  /** Keys of a record (steps, memory points, counts, environment variables). */
  keys: 4096,
  /** Largest id key, iteration, rank or pid. */
  int: 2 ** 31 - 1,
} as const;

type Rec = Record<string, unknown>;

const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const isText = (v: unknown, max: number = WIRE_LIMITS.text): v is string => typeof v === 'string' && v.length <= max;
const isInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= WIRE_LIMITS.int;
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const optional = (v: unknown, ok: (x: unknown) => boolean): boolean => v === undefined || ok(v);

/** A record of at most WIRE_LIMITS.keys entries, each value passing `ok`. */
function recordOf(v: unknown, ok: (x: unknown) => boolean): boolean {
  if (!isRec(v)) return false;
  const keys = Object.keys(v);
  return keys.length <= WIRE_LIMITS.keys && keys.every((k) => k.length <= 256 && ok(v[k]));
}

const numberRecord = (v: unknown): boolean => recordOf(v, isNum);

/** The first field of `fields` whose check fails, as a problem, or undefined. */
function fieldsProblem(t: string, msg: Rec, fields: Record<string, (v: unknown) => boolean>): string | undefined {
  for (const [name, ok] of Object.entries(fields)) if (!ok(msg[name])) return `"${t}" with a bad "${name}" (${describe(msg[name])})`;
  return undefined;
}

/** A short, bounded description of a value for a problem message. */
function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v.length > 40 ? `a string of ${v.length} characters` : JSON.stringify(v);
  if (typeof v === 'object') return 'an object';
  return typeof v === 'number' || typeof v === 'boolean' ? String(v) : typeof v;
}

/** The fields every message of a kind needs, by `t`. */
const RANK_MESSAGES: Record<string, Record<string, (v: unknown) => boolean>> = {
  hello: { rank: isInt, pid: isInt, token: (v) => optional(v, (x) => isText(x, 256)) },
  ready: { rank: isInt, cudaInitMs: isNum, firstUniqueIdMs: (v) => optional(v, isNum) },
  begin: { op: isText, experiment: (v) => isText(v, 256), variant: (v) => isText(v, 256), iteration: (v) => v === -1 || isInt(v), step: (v) => optional(v, (x) => isText(x, 256)) },
  end: { op: isText },
  'id/publish': { key: isInt, id: (v) => isText(v, WIRE_LIMITS.id) },
  'id/request': { key: isInt },
  iteration: {
    rank: isInt,
    experiment: (v) => isText(v, 256),
    variant: (v) => isText(v, 256),
    iteration: isInt,
    warmup: (v) => typeof v === 'boolean',
    steps: numberRecord,
    releaseNs: numberRecord,
    memory: numberRecord,
    memStats: (v) => optional(v, (x) => recordOf(x, numberRecord)),
    counts: (v) => optional(v, numberRecord),
    libraryMs: isNum,
    timedMs: (v) => optional(v, isNum),
    // views: creation → part → ms (NcclInitParts).
    ncclInit: (v) => optional(v, (x) => isRec(x) && recordOf(x.views, numberRecord) && isInt(x.malformedLines)),
  },
  error: {
    code: (v) => isText(v, 64),
    message: isText,
    detail: (v) => optional(v, isText),
    experiment: (v) => optional(v, (x) => isText(x, 256)),
    variant: (v) => optional(v, (x) => isText(x, 256)),
    iteration: (v) => optional(v, isInt),
    op: (v) => optional(v, isText),
  },
  finished: { libraryMs: isNum, timedMs: (v) => optional(v, isNum) },
};

/**
 * What is wrong with a message a rank process sent its coordinator (rankWire.ts
 * `RankToCoordinator`), or undefined when every field is typed as the wire says.
 */
export function rankMessageProblem(msg: unknown): string | undefined {
  if (!isRec(msg)) return `not a message object (${describe(msg)})`;
  const t = msg.t;
  if (typeof t !== 'string' || !Object.prototype.hasOwnProperty.call(RANK_MESSAGES, t)) return `unknown message type ${describe(t)}`;
  return fieldsProblem(t, msg, RANK_MESSAGES[t]!);
}

const NODE_MESSAGES: Record<string, Record<string, (v: unknown) => boolean>> = {
  // node/hello's fields are checked by the node server's own rules (nodes.ts helloProblem).
  'node/hello': { nonce: (v) => isText(v, 128) },
  'node/auth': { proof: (v) => isText(v, 256) },
  'node/pong': {},
  'node/exit': { rank: isInt, code: (v) => v === null || Number.isInteger(v), signal: (v) => v === null || isText(v, 64) },
  'node/log': { rank: isInt, line: isText },
};

/**
 * What is wrong with a message a node host sent the coordinator's node server (rankWire.ts
 * `NodeToCoordinator`), or undefined.
 */
export function nodeMessageProblem(msg: unknown): string | undefined {
  if (!isRec(msg)) return `not a message object (${describe(msg)})`;
  const t = msg.t;
  if (typeof t !== 'string' || !Object.prototype.hasOwnProperty.call(NODE_MESSAGES, t)) return `unknown message type ${describe(t)}`;
  return fieldsProblem(t, msg, NODE_MESSAGES[t]!);
}

const COORDINATOR_TO_NODE: Record<string, Record<string, (v: unknown) => boolean>> = {
  'node/challenge': { proof: (v) => isText(v, 256), nonce: (v) => isText(v, 128) },
  'node/welcome': {},
  'node/refused': { reason: isText },
  'node/spawn': { rank: isInt, env: (v) => recordOf(v, (x) => isText(x)) },
  'node/kill': { rank: isInt },
  'node/ping': {},
  'node/bye': { status: (v) => v === undefined || v === 'complete' || v === 'partial' || v === 'failed' },
};

/**
 * What is wrong with a message the coordinator sent a node host (rankWire.ts
 * `CoordinatorToNode`), or undefined.
 */
export function coordinatorToNodeProblem(msg: unknown): string | undefined {
  if (!isRec(msg)) return `not a message object (${describe(msg)})`;
  const t = msg.t;
  if (typeof t !== 'string' || !Object.prototype.hasOwnProperty.call(COORDINATOR_TO_NODE, t)) return `unknown message type ${describe(t)}`;
  return fieldsProblem(t, msg, COORDINATOR_TO_NODE[t]!);
}
