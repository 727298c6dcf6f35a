/**
 * First use (issue #27, rule 3): a group's first collective is the first executed after its
 * creation on that flow — an explicit warm-up right after creation (the next statement, also
 * after a `;` on the same line) counts; a method the creating function calls after the creation
 * comes before another method that only comes first in the file; where several functions could
 * run first and nothing orders them, none is named. Failed on the code before the rule.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scanText } from '../support/annotationFixtures';

const TEXT = `import torch.distributed as dist


def same_line(t):
    g = dist.new_group([0, 1]); dist.barrier(group=g)
    return g


def next_line(t):
    h = dist.new_group([0, 1])
    dist.all_reduce(t, group=h)
    return h


class Trainer:
    def step(self, t):
        dist.all_reduce(t, group=self.tp)

    def __init__(self):
        self.tp = dist.new_group([0, 1])
        self.prepare()
        self.warmup()

    def prepare(self):
        pass

    def warmup(self):
        dist.barrier(group=self.tp)


class Unordered:
    def a(self, t):
        dist.all_reduce(t, group=self.pp)

    def b(self, t):
        dist.broadcast(t, 0, group=self.pp)

    def __init__(self):
        self.pp = dist.new_group([0, 1])
`;

test('first use: the warm-up right after creation (next line or after ";"), a method called after the creation, never a method only because it is first in the file', async () => {
  const scan = await scanText('python', TEXT);
  const by = (v: string) => scan.sites.find((s) => s.warmUp?.variable === v)!.warmUp!;
  const lineOf = (needle: string): number => TEXT.split('\n').findIndex((l) => l.includes(needle));
  assert.deepEqual(by('g'), { variable: 'g', warm: true, firstCollective: { line: lineOf('dist.barrier(group=g)'), call: 'dist.barrier', function: 'same_line' } });
  assert.deepEqual(by('h'), { variable: 'h', warm: true, firstCollective: { line: lineOf('group=h'), call: 'dist.all_reduce', function: 'next_line' } });
  assert.deepEqual(by('self.tp').firstCollective, { line: lineOf('dist.barrier(group=self.tp)'), call: 'dist.barrier', function: 'warmup' });
  // Two methods, neither called by the creating one: which runs first is not in the code.
  assert.equal(by('self.pp').firstCollective, undefined);
});
