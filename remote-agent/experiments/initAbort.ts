/**
 * init-abort (field case C6, meta-pytorch/torchft#179): a communicator init whose last rank
 * never joins. `nonblocking`: config.blocking = 0, the caller polls and aborts after a poll
 * deadline; timed from the start of the init to the return of ncclCommAbort (`abort`), in two
 * parts from the same native call: the init and its polling (`poll`) and the ncclCommAbort call
 * alone (`abortCall`). `blocking`: a
 * blocking init cannot be aborted from the calling thread; the hang guard is expected to stop
 * it at the run's deadline and kill every rank.
 */
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import { needsNccl, needsRanks, type ExperimentModule } from './experiment';

/** How long the non-blocking init is polled before the abort, ms. */
export function pollDeadlineMs(deadlineSeconds: number): number {
  return Math.min(2000, (deadlineSeconds * 1000) / 4);
}

export const initAbortExperiment: ExperimentModule = {
  id: 'init-abort',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('init-abort')) ?? needsRanks(ctx, minGpusOf('init-abort'));
    if (skip) return { skip };
    const poll = pollDeadlineMs(ctx.options.deadlineSeconds);
    return [
      {
        variant: 'nonblocking',
        steps: [
          { step: 'poll', label: `non-blocking init, polled until ${poll} ms`, kind: 'teardown' },
          { step: 'abortCall', label: 'the ncclCommAbort call', kind: 'teardown' },
          { step: 'abort', label: `non-blocking init polled ${poll} ms, then ncclCommAbort`, kind: 'teardown', sumOf: ['poll', 'abortCall'] },
        ],
      },
      {
        variant: 'blocking',
        hangIsResult: 'field case C6: a blocking init whose peer never joins blocks without bound',
        steps: [{ step: 'abort', label: 'blocking init (ended by the hang guard)', kind: 'teardown' }],
      },
    ];
  },
  async iteration(rc, variant) {
    const joins = rc.rank < rc.worldSize - 1;
    const id = await rc.uniqueId();
    if (variant === 'blocking') {
      if (!joins) return new Promise<never>(() => undefined); // this rank never joins
      await rc.untimed('ncclCommInitRankConfig (blocking)', () => rc.native.commInitRank(rc.worldSize, id, rc.rank, { blocking: 1 }));
      throw new Error('a blocking init returned although one rank never joined');
    }
    if (!joins) {
      await rc.sitOut('abort');
      return;
    }
    const poll = pollDeadlineMs(rc.options.deadlineSeconds);
    const result = await rc.timed('abort', 'non-blocking init, then ncclCommAbort', (gen) => rc.native.commInitRankAbortable(rc.worldSize, id, rc.rank, poll, gen));
    if (!result.aborted) throw new Error('the non-blocking init completed although one rank never joined');
    // The parts of the whole `abort` (its sumOf): the whole is the one measured span.
    rc.record('poll', result.ms - result.abortMs);
    rc.record('abortCall', result.abortMs);
  },
};
