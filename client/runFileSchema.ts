/**
 * JSON schema of a run file and its validator. Run files found in a workspace are untrusted:
 * read them through {@link validateRunFile}, never by casting.
 */
import { createHash } from 'node:crypto';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { EXPERIMENT_IDS } from '../protocol/events';
import { RUN_FILE_SCHEMA, type RunFile } from '../protocol/runFile';
import { CommcostError } from './errors';

const num = { type: 'number' } as const;
const str = { type: 'string', maxLength: 100_000 } as const;
const int = { type: 'integer', minimum: 0 } as const;
const numArray = { type: 'array', items: num } as const;
const experimentId = { enum: [...EXPERIMENT_IDS] } as const;

const stepPlan = {
  step: str,
  label: str,
  kind: { enum: ['call', 'first', 'toFirst', 'steady', 'teardown'] },
  sumOf: { type: 'array', items: str },
};

const stepStats = {
  type: 'object',
  required: ['median', 'p90', 'min', 'max', 'mean', 'n'],
  properties: { median: num, p90: num, min: num, max: num, mean: num, n: int },
};

const variantSummary = {
  type: 'object',
  required: ['variant', 'steps'],
  properties: {
    variant: str,
    steps: {
      type: 'array',
      items: {
        type: 'object',
        required: ['step', 'label', 'kind', 'stats', 'samples'],
        properties: { ...stepPlan, stats: stepStats, samples: numArray },
      },
    },
    memoryBytes: { type: 'object', additionalProperties: num },
    memStats: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['suspendableBytes', 'persistentBytes', 'totalBytes'],
        properties: { suspendableBytes: num, persistentBytes: num, totalBytes: num },
      },
    },
    counts: {
      type: 'object',
      additionalProperties: { type: 'object', required: ['min', 'max', 'sum', 'n'], properties: { min: num, max: num, sum: num, n: int } },
    },
    env: { type: 'object', additionalProperties: str },
    ratios: {
      type: 'array',
      items: { type: 'object', required: ['id', 'label', 'of', 'to', 'value'], properties: { id: str, label: str, of: str, to: str, value: num } },
    },
    ncclInit: {
      type: 'object',
      required: ['medians', 'iterations', 'malformedLines'],
      properties: {
        medians: { type: 'object', additionalProperties: { type: 'object', additionalProperties: num } },
        iterations: { type: 'object', additionalProperties: int },
        malformedLines: int,
        note: str,
      },
    },
  },
};

const runOptions = {
  type: 'object',
  required: ['experiments', 'iterations', 'warmup', 'deadlineSeconds'],
  properties: {
    experiments: { type: 'array', items: experimentId },
    iterations: { type: 'integer', minimum: 1 },
    warmup: int,
    deadlineSeconds: { type: 'number', exclusiveMinimum: 0 },
    ncclPath: str,
    simulate: { type: 'boolean' },
    ranks: { type: 'integer', minimum: 1 },
    firstCollectiveBytes: int,
    steadyBytes: int,
    commCounts: { type: 'array', items: { type: 'integer', minimum: 1 } },
    firstUse: { type: 'array', items: { type: 'string', enum: ['allreduce', 'broadcast', 'sendrecv'] } },
  },
};

const where = {
  type: 'object',
  properties: { host: str, rank: int, experiment: experimentId, variant: str, step: str, iteration: int },
};

const stamp = {
  type: 'object',
  required: ['hostname', 'gpus', 'driverVersion', 'ncclVersion', 'ncclPath', 'startedAt', 'simulated'],
  properties: {
    hostname: str,
    gpus: {
      type: 'array',
      items: {
        type: 'object',
        required: ['ordinal', 'name', 'totalBytes'],
        properties: { ordinal: int, name: str, totalBytes: num, pciBusId: str },
      },
    },
    driverVersion: str,
    ncclVersion: str,
    ncclVersionCode: num,
    ncclPath: str,
    ncclSource: str,
    ncclSymbols: { type: 'object', additionalProperties: { type: 'boolean' } },
    topology: str,
    ncclEnv: { type: 'object', additionalProperties: str },
    rankEnv: { type: 'object', additionalProperties: str },
    variantEnv: { type: 'object', additionalProperties: { type: 'object', additionalProperties: str } },
    torchVersion: str,
    commcostVersion: str,
    nodeVersion: str,
    platform: str,
    startedAt: str,
    simulated: { type: 'boolean' },
  },
};

/** The JSON schema (draft-07) of {@link RunFile}. Unknown extra properties are allowed (newer writers). */
export const runFileJsonSchema = {
  $id: 'https://commcost.invalid/run-file.json',
  type: 'object',
  required: ['schema', 'id', 'host', 'simulated', 'status', 'options', 'ranks', 'experiments', 'skipped', 'errors'],
  properties: {
    schema: { const: RUN_FILE_SCHEMA },
    id: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,200}$' },
    host: str,
    simulated: { type: 'boolean' },
    status: { enum: ['running', 'complete', 'partial', 'failed'] },
    options: runOptions,
    ranks: int,
    nodes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'hostname', 'address', 'ranks', 'gpus'],
        properties: { index: int, hostname: str, address: str, ranks: { type: 'array', items: int }, gpus: { type: 'array', items: str } },
      },
    },
    stamp,
    startup: {
      type: 'object',
      required: ['cudaInitMs', 'firstUniqueIdMs'],
      properties: { cudaInitMs: numArray, firstUniqueIdMs: num },
    },
    experiments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['experiment', 'variants', 'done', 'total', 'samples', 'state'],
        properties: {
          experiment: experimentId,
          variants: { type: 'array', items: variantSummary },
          done: int,
          total: int,
          samples: { type: 'object', additionalProperties: { type: 'object', additionalProperties: numArray } },
          releaseSkewUs: { type: 'object', additionalProperties: { type: 'object', additionalProperties: numArray } },
          state: { enum: ['pending', 'running', 'finished', 'stopped'] },
        },
      },
    },
    verdict: {
      type: 'array',
      items: { type: 'object', required: ['id', 'text'], properties: { id: str, text: str } },
    },
    skipped: {
      type: 'array',
      items: { type: 'object', required: ['experiment', 'reason'], properties: { experiment: experimentId, variant: str, reason: str } },
    },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['code', 'message', 'where', 'fatal'],
        properties: { code: str, message: str, where, detail: str, hint: str, fatal: { type: 'boolean' }, expected: { type: 'boolean' } },
      },
    },
    wallMs: num,
    measuredMs: num,
    libraryMs: num,
    wallSplit: {
      type: 'object',
      required: ['timedMs', 'setupMs', 'processStartMs', 'processExitMs', 'harnessMs'],
      properties: { timedMs: num, setupMs: num, processStartMs: num, processExitMs: num, harnessMs: num },
    },
    endedAt: str,
  },
} as const;

/** The options the schema is compiled with, here and at build time (scripts/build.mjs `PRECOMPILED`). */
export const RUN_FILE_AJV_OPTIONS = { allErrors: true, strict: true } as const;

/** SHA-1 (hex) of the schema as JSON: a precompiled validator made from another schema is not used. */
export function runFileSchemaHash(): string {
  return createHash('sha1').update(JSON.stringify(runFileJsonSchema)).digest('hex');
}

/**
 * The validator that scripts/build.mjs compiled from this schema at build time (ajv standalone
 * code in dist/vendor/run-file-validator.js, required by its bare name, which the bundles map to
 * that file), or undefined where there is none (run from source) or it was made from another
 * schema (its `schemaHash` differs from {@link runFileSchemaHash}).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a bare name the bundles map to dist/vendor/ (scripts/build.mjs PRECOMPILED)
export function precompiledValidator(load: () => unknown = () => require('commcost-run-file-validator')): ValidateFunction<RunFile> | undefined {
  let m: unknown;
  try {
    m = load();
  } catch {
    return undefined;
  }
  if (typeof m !== 'function' || (m as { schemaHash?: unknown }).schemaHash !== runFileSchemaHash()) return undefined;
  return m as ValidateFunction<RunFile>;
}

/**
 * The validator, made on the first validation: the precompiled one where the build made it (a few
 * ms to load), else compiled with ajv (~150 ms; this module is loaded at extension activation
 * through the annotations: ARCHITECTURE.md, activation stays cheap).
 * @throws Error only if ajv itself cannot be loaded
 */
let compiled: ValidateFunction<RunFile> | undefined;
function validator(): ValidateFunction<RunFile> {
  if (compiled) return compiled;
  const pre = precompiledValidator();
  if (pre) return (compiled = pre);
  // Required here, not imported: ajv's own module load (~10 ms) is paid on the first run file read too.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { default: Ajv } = require('ajv') as typeof import('ajv');
  return (compiled = new Ajv(RUN_FILE_AJV_OPTIONS).compile<RunFile>(runFileJsonSchema));
}

function describe(e: ErrorObject): string {
  const path = e.instancePath === '' ? '(root)' : e.instancePath;
  if (e.keyword === 'enum') return `${path}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (e.keyword === 'const') return `${path}: must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
  return `${path}: ${e.message ?? e.keyword}`;
}

/** Keys that change an object's prototype when assigned; never part of a run file. */
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The JSON pointer of the first key in {@link UNSAFE_KEYS} anywhere in `json` (iterative walk), or undefined. */
function unsafeKeyPath(json: unknown): string | undefined {
  const stack: [unknown, string][] = [[json, '']];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      value.forEach((item: unknown, i) => {
        if (item !== null && typeof item === 'object') stack.push([item, `${path}/${i}`]);
      });
      continue;
    }
    for (const key of Object.keys(value)) {
      const at = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (UNSAFE_KEYS.has(key)) return at;
      stack.push([(value as Record<string, unknown>)[key], at]);
    }
  }
  return undefined;
}

/**
 * Checks that `json` is a run file and returns it typed.
 * @param source a file name for the message
 * @throws CommcostError BAD_RUN_FILE listing the first (≤ 5) problems as `<JSON pointer>: <problem>`
 */
export function validateRunFile(json: unknown, source = 'run file'): RunFile {
  const unsafe = unsafeKeyPath(json);
  if (unsafe !== undefined) {
    throw new CommcostError('BAD_RUN_FILE', `${source} is not a valid commcost run: ${unsafe}: a key named ${JSON.stringify(unsafe.slice(unsafe.lastIndexOf('/') + 1))} is not allowed in a run file`, {
      hint: 'the file was edited by hand or made to attack the reader: do not use it; measure again',
    });
  }
  const validate = validator();
  if (validate(json)) return json;
  // Not a run file at all (another tool's JSON, e.g. the GPU proof's *.reference.json): say so,
  // without the "measure again" hint that fits a damaged or older run file.
  const isObject = json !== null && typeof json === 'object' && !Array.isArray(json);
  const schema = isObject ? (json as { schema?: unknown }).schema : undefined;
  const readsWhat = `commcost report reads the run files that commcost measure saves (schema "${RUN_FILE_SCHEMA}")`;
  if (isObject) {
    if (schema === undefined) {
      throw new CommcostError('BAD_RUN_FILE', `${source} is not a commcost run file: it has no "schema" field`, { hint: readsWhat });
    }
    if (typeof schema !== 'string' || !schema.startsWith('commcost.run/')) {
      throw new CommcostError('BAD_RUN_FILE', `${source} is not a commcost run file: its schema is ${JSON.stringify(schema)?.slice(0, 80) ?? String(schema)}, not "${RUN_FILE_SCHEMA}"`, { hint: readsWhat });
    }
    if (schema !== RUN_FILE_SCHEMA) {
      throw new CommcostError('BAD_RUN_FILE', `${source} is a commcost run file of schema ${JSON.stringify(schema.slice(0, 80))}; this version reads "${RUN_FILE_SCHEMA}"`, {
        hint: 'it was written by another version of commcost: open it with that version, or measure again',
      });
    }
  }
  const errors = validate.errors ?? [];
  const shown = errors.slice(0, 5).map(describe);
  const more = errors.length > 5 ? ` (and ${errors.length - 5} more)` : '';
  throw new CommcostError('BAD_RUN_FILE', `${source} is not a valid commcost run: ${shown.join('; ')}${more}`, {
    hint: 'the file may be damaged or edited by hand: measure again',
  });
}
