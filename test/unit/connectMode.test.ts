/**
 * The connect-mode plan without rank processes: the per-algorithm variants (NCCL_ALGO=Ring,
 * NCCL_ALGO=Tree) with their environment, and Tree skipped with the reason on one GPU.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeOptions } from '../../remote-agent/coordinator';
import { connectModeExperiment, parseConnectVariant } from '../../remote-agent/experiments/connectMode';

const ctx = (ranks: number, ncclVersionCode = 22809) => ({ ranks, ncclVersionCode, symbols: {}, options: normalizeOptions({ experiments: ['connect-mode'] }) });

test('connect-mode: Ring and Tree variants last, each with its NCCL_ALGO; the others keep their environment', () => {
  const plan = connectModeExperiment.plan(ctx(2));
  assert.ok(Array.isArray(plan));
  assert.deepEqual(
    plan.map((v) => [v.variant, connectModeExperiment.variantEnv!(v.variant)]),
    [
      ['init/runtimeConnect=1', { NCCL_RUNTIME_CONNECT: '1' }],
      ['init/runtimeConnect=0', { NCCL_RUNTIME_CONNECT: '0' }],
      ['one-rank/runtimeConnect=1', { NCCL_RUNTIME_CONNECT: '1' }],
      ['one-rank/runtimeConnect=0', { NCCL_RUNTIME_CONNECT: '0' }],
      ['one-rank/runtimeConnect=1/cumem=0', { NCCL_RUNTIME_CONNECT: '1', NCCL_CUMEM_ENABLE: '0' }],
      ['one-rank/runtimeConnect=0/cumem=0', { NCCL_RUNTIME_CONNECT: '0', NCCL_CUMEM_ENABLE: '0' }],
      ['init/runtimeConnect=1/algo=Ring', { NCCL_RUNTIME_CONNECT: '1', NCCL_ALGO: 'Ring' }],
      ['init/runtimeConnect=1/algo=Tree', { NCCL_RUNTIME_CONNECT: '1', NCCL_ALGO: 'Tree' }],
    ],
  );
  assert.deepEqual(connectModeExperiment.skippedVariants!(), []);
  assert.deepEqual(parseConnectVariant('init/runtimeConnect=1/algo=Tree'), { shape: 'init', runtimeConnect: '1', algo: 'Tree' });
  assert.deepEqual(parseConnectVariant('one-rank/runtimeConnect=0/cumem=0'), { shape: 'one-rank', runtimeConnect: '0', cumem: '0' });
});

test('connect-mode on one GPU: Tree is skipped with the reason, Ring runs', () => {
  const plan = connectModeExperiment.plan(ctx(1));
  assert.ok(Array.isArray(plan));
  assert.ok(plan.some((v) => v.variant === 'init/runtimeConnect=1/algo=Ring'));
  assert.ok(!plan.some((v) => v.variant.endsWith('algo=Tree')));
  assert.deepEqual(connectModeExperiment.skippedVariants!(), [{ variant: 'init/runtimeConnect=1/algo=Tree', reason: 'NCCL_ALGO=Tree needs 2 GPUs, host has 1' }]);
});

test('connect-mode on NCCL 2.21: the whole experiment is skipped, no variant left over', () => {
  assert.deepEqual(connectModeExperiment.plan(ctx(1, 22105)), { skip: 'needs NCCL ≥ 2.22.3, host has 2.21.5' });
  assert.deepEqual(connectModeExperiment.skippedVariants!(), []);
});
