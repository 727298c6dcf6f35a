/**
 * registration: ncclCommRegister / ncclCommDeregister of 64 MiB … 1 GiB buffers (first call
 * and a repeated call on the same range, which hits NCCL's registration cache), and the first
 * collective that uses the registered buffer (where NCCL does the real registration since
 * 2.21) against a second one; and ncclCommWindowRegister / Deregister (collective) on
 * ncclMemAlloc buffers.
 */
import type { StepPlan } from '../../protocol/events';
import { minNcclOf } from '../../protocol/catalogue';
import { formatBytes, needsNccl, needsSymbols, warmCommunicator, type ExperimentModule } from './experiment';

const SIZES = [64 << 20, 256 << 20, 1 << 30];

function parse(variant: string): { kind: 'register' | 'window'; bytes: number } {
  const [kind, size] = variant.split('/');
  const bytes = SIZES.find((b) => formatBytes(b).replace(' ', '') === size) ?? SIZES[0]!;
  return { kind: kind === 'window' ? 'window' : 'register', bytes };
}

interface State {
  comm: number;
  buffer: number;
}

export const registrationExperiment: ExperimentModule<State> = {
  id: 'registration',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('registration')) ?? needsSymbols(ctx, 'ncclCommRegister', 'ncclCommDeregister', 'ncclMemAlloc');
    if (skip) return { skip };
    const useSteps = (bytes: number): StepPlan[] => [
      { step: 'firstUse', label: `first ${formatBytes(bytes)} allreduce on the registered buffer`, kind: 'first' },
      { step: 'secondUse', label: `second ${formatBytes(bytes)} allreduce on it`, kind: 'steady' },
    ];
    const variants = SIZES.map((bytes) => ({
      variant: `register/${formatBytes(bytes).replace(' ', '')}`,
      steps: [
        { step: 'register', label: 'ncclCommRegister', kind: 'call' as const },
        { step: 'registerAgain', label: 'ncclCommRegister, same range again (cache)', kind: 'call' as const },
        ...useSteps(bytes),
        { step: 'deregister', label: 'ncclCommDeregister', kind: 'teardown' as const },
      ],
    }));
    if (!needsNccl(ctx, '2.27.3') && !needsSymbols(ctx, 'ncclCommWindowRegister', 'ncclCommWindowDeregister')) {
      for (const bytes of SIZES) {
        variants.push({
          variant: `window/${formatBytes(bytes).replace(' ', '')}`,
          steps: [
            { step: 'register', label: 'ncclCommWindowRegister (collective)', kind: 'call' as const },
            ...useSteps(bytes),
            { step: 'deregister', label: 'ncclCommWindowDeregister', kind: 'teardown' as const },
          ],
        });
      }
    }
    return variants;
  },
  async setup(rc, variant) {
    const { bytes } = parse(variant);
    const comm = await warmCommunicator(rc);
    const { buffer } = await rc.untimed(`ncclMemAlloc ${formatBytes(bytes)}`, () => rc.native.memAlloc(bytes, 'nccl'));
    return { comm, buffer };
  },
  async iteration(rc, variant, { comm, buffer }) {
    const { kind, bytes } = parse(variant);
    const use = async (): Promise<void> => {
      await rc.timed('firstUse', 'first allreduce on the registered buffer', (gen) => rc.native.allReduce(comm, bytes, gen, { buffer }));
      rc.markMemory('afterFirstUse');
      await rc.timed('secondUse', 'second allreduce on the registered buffer', (gen) => rc.native.allReduce(comm, bytes, gen, { buffer }));
    };
    if (kind === 'register') {
      const { handle } = await rc.timed('register', 'ncclCommRegister', (gen) => rc.native.commRegister(comm, buffer, bytes, gen));
      const again = await rc.timed('registerAgain', 'ncclCommRegister (again)', (gen) => rc.native.commRegister(comm, buffer, bytes, gen));
      await use();
      await rc.untimed('ncclCommDeregister (second handle)', () => rc.native.commDeregister(comm, again.handle));
      await rc.timed('deregister', 'ncclCommDeregister', (gen) => rc.native.commDeregister(comm, handle, gen));
    } else {
      const { window } = await rc.timed('register', 'ncclCommWindowRegister', (gen) => rc.native.windowRegister(comm, buffer, bytes, 0, gen));
      await use();
      if (window !== null) await rc.timed('deregister', 'ncclCommWindowDeregister', (gen) => rc.native.windowDeregister(comm, window, gen));
    }
  },
  async teardown(rc, _variant, { comm, buffer }) {
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
    await rc.untimed('ncclMemFree', () => rc.native.memFree(buffer));
  },
};
