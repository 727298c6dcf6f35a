// The run-file validator precompiled at build time (scripts/build.mjs PRECOMPILED → dist/vendor/
// run-file-validator.js) against the one ajv compiles from the schema at run time: same verdict and
// same errors on a real run and on broken ones; a validator made from another schema is not used.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Ajv, { type ValidateFunction } from 'ajv';
import { precompiledValidator, RUN_FILE_AJV_OPTIONS, runFileJsonSchema, runFileSchemaHash } from '../../client/runFileSchema';

const root = join(__dirname, '..', '..');
const built = join(root, 'dist', 'vendor', 'run-file-validator.js');
const load = createRequire(__filename);
const skip = existsSync(built) ? false : `${built} not built (node scripts/build.mjs)`;
const run = (): Record<string, unknown> => JSON.parse(readFileSync(join(root, 'docs', 'results', 'h200x2-2026-12-01', 'h200x2-nccl2.28.9-wheel.json'), 'utf8'));

/** A real run and runs broken in different places (type, enum, missing field, extra depth). */
function cases(): [string, unknown][] {
  const broken = (what: string, f: (r: Record<string, any>) => void): [string, unknown] => {
    const r = run();
    f(r);
    return [what, r];
  };
  return [
    ['the real run', run()],
    broken('host a number', (r) => (r.host = 7)),
    broken('no schema', (r) => delete r.schema),
    broken('an unknown experiment', (r) => (r.experiments[0].experiment = 'no-such-experiment')),
    broken('a sample a string', (r) => {
      const variant = Object.values(r.experiments[0].variants)[0] as { steps: Record<string, { samples: unknown[] }> };
      const step = Object.values(variant.steps)[0]!;
      assert.ok(Array.isArray(step.samples), 'the fixture changed: no step samples');
      step.samples[0] = 'x';
    }),
    ['not an object', [1, 2]],
    ['null', null],
  ];
}

describe('precompiled run-file validator', { skip }, () => {
  test('is used when built from this schema, and agrees with ajv at run time', () => {
    const pre = precompiledValidator(() => load(built));
    assert.ok(pre, 'the built validator was refused: its schemaHash differs from runFileSchemaHash() (rebuild)');
    const ajv: ValidateFunction = new Ajv(RUN_FILE_AJV_OPTIONS).compile(runFileJsonSchema);
    let invalid = 0;
    for (const [what, json] of cases()) {
      const a = ajv(json);
      const p: boolean = pre(json);
      assert.equal(p, a, `${what}: precompiled says ${p}, ajv ${a}`);
      assert.deepEqual(pre.errors ?? null, ajv.errors ?? null, `${what}: errors differ`);
      if (!a) invalid++;
    }
    assert.equal(cases()[0]![0], 'the real run');
    assert.equal(ajv(cases()[0]![1]), true, 'the real run must be valid');
    assert.ok(invalid >= 5, `only ${invalid} broken cases were invalid`);
  });

  test('one made from another schema, or none at all, is not used', () => {
    const made = load(built) as { schemaHash: string };
    assert.equal(made.schemaHash, runFileSchemaHash());
    const other = Object.assign(() => true, { schemaHash: '0'.repeat(40) });
    assert.equal(precompiledValidator(() => other), undefined);
    assert.equal(
      precompiledValidator(() => {
        throw new Error("Cannot find module 'commcost-run-file-validator'");
      }),
      undefined,
    );
    // Run from source (no bundle maps the bare name): ajv compiles at run time.
    assert.equal(precompiledValidator(), undefined);
  });
});
