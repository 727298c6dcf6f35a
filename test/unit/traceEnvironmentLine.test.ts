// Every trace names where it ran (issue #32, "each trace file names its GPUs"): a stamped trace by
// its GPUs, driver, CUDA and NCCL; a trace file written before traces were stamped says that the
// environment was not recorded, rather than printing nothing (the CLI table and the trace page).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { formatTrace } from '../../cli/traceTable';
import { ENVIRONMENT_NOT_RECORDED, type TraceFile } from '../../protocol/trace';

const results = path.join(__dirname, '..', '..', 'docs', 'results');
const read = (rel: string) => JSON.parse(fs.readFileSync(path.join(results, rel), 'utf8')) as TraceFile;

test('a committed trace without a stamp says its environment was not recorded; a stamped one names its GPUs', () => {
  const old = read('h200x1-2026-12-02/grouped-trace-nccl2.28.9.json');
  assert.equal(old.environment, undefined, 'the fixture predates the stamp');
  assert.match(formatTrace(old), new RegExp(`^environment: ${ENVIRONMENT_NOT_RECORDED.replace(/[()]/g, '\\$&')}$`, 'm'));
  const stamped = read('h200x1-2026-12-02/ctypes-trace-before-pin.json');
  assert.match(formatTrace(stamped), /^environment: 1× NVIDIA H200, driver 580\.159\.04, CUDA 13\.0, NCCL 2\.28\.9 /m);
});

test('a simulated trace says no GPU took part, never a GPU model, driver or CUDA', () => {
  const stamped = read('h200x1-2026-12-02/ctypes-trace-before-pin.json');
  const sim = { ...stamped, simulated: true, environment: { ...stamped.environment!, gpuModels: ['Simulated GPU'], driverVersion: null, cudaVersion: null, ncclSource: 'simulated' as const, ncclPaths: ['/x/libnccl-sim.so'] } } as TraceFile;
  const line = formatTrace(sim).split('\n').find((l) => l.startsWith('environment: '))!;
  assert.match(line, /^environment: no GPU: commcost's simulated NCCL 2\.28\.9 \(\/x\/libnccl-sim\.so\), 1 process on vm$/);
  assert.doesNotMatch(line, /Simulated GPU|driver|CUDA|unknown/);
});
