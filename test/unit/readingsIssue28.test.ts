/**
 * Issue #28: readings follow measurement. Each rule below failed on the code before it:
 * 2. the cold start is compared with the study's quantity (its cold figure includes the process's
 *    first CUDA and library initialisation): the run's CUDA context and NCCL load are added back;
 * (rules 3–6 below).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deriveVerdict } from '../../readings/verdict';
import { load } from './verdictRuns';

const line = (file: string, id: string): string => {
  const text = deriveVerdict(load(file)).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line in ${file}`);
  return text;
};

describe('rule 2: cold start like with like', () => {
  test("2×H200 (NCCL 2.28.9): cold with its CUDA context and NCCL load is 5.04× warm, inside the study's 5.03–5.34×, its setting named", () => {
    const text = line('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json', 'cold-start');
    assert.match(text, /with the CUDA context \(257 ms\) and NCCL's load \(0\.56 ms\) added back, cold is 864 ms/, text);
    assert.match(text, /Study \(A40 across InfiniBand, GPU count and NCCL version not stated\) vs here \(2× H200 NVLink\): /, text);
    assert.match(text, /vs 5\.04× \(864 ms vs 171 ms\): agrees \(inside the study's range\)/, text);
    // The run's own figures stay as commcost times them.
    assert.match(text, /^A fresh process's first communicator costs 595 ms to its first collective, a second one in the same process 171 ms: cold costs more than warm \(3\.47×/, text);
  });
});
