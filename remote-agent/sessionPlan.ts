/**
 * The shapes a run is planned and recorded in, shared by the coordinator, its rank sessions and
 * the combining of ranks: the planned experiments, the rank sessions they are grouped into
 * (sessionUnits), the per-variant record of recorded iterations, and what ends a session early.
 */
import type { AgentEvent, ErrorCode, ExperimentId, VariantPlan } from '../protocol/events';
import { CATALOGUE } from './experiments/catalogue';
import type { ExtrasRecord } from './iterationExtras';
import type { ViewRecord } from './ncclInitTimings';

export type Emit = (ev: AgentEvent) => void;
export type Log = (line: string) => void;

/** One experiment of the plan with its variants (run/plan's `experiments`). */
export interface PlannedExperiment {
  experiment: ExperimentId;
  variants: VariantPlan[];
  /** Only this iteration (0-based, warmups included): a process set per iteration (processPerIteration). */
  iteration?: number;
}

/** Per-variant accumulation of recorded iterations (figures in ms, memory in bytes). */
export interface VariantRecord {
  plan: VariantPlan;
  samples: Record<string, number[]>;
  memory: Record<string, number[]>;
  done: number;
  /** NCCL's view over the recorded iterations (plans with ncclInitView). */
  nccl?: ViewRecord;
  /** ncclCommMemStats and counts of the recorded iterations (iterationExtras.ts). */
  extras?: ExtrasRecord;
}

/** What ended a rank session early. */
export interface SessionFailure {
  code: ErrorCode;
  message: string;
  detail?: string;
  hint?: string;
  where: { rank?: number; experiment?: ExperimentId; variant?: string; iteration?: number; step?: string };
}

/** Work that runs in one set of rank processes, with the environment it needs. */
export interface SessionUnit {
  work: PlannedExperiment[];
  env: Record<string, string>;
}

/**
 * Groups the plan into rank sessions: consecutive experiments that need no environment of
 * their own share one session; each variant that needs one (e.g. NCCL_RUNTIME_CONNECT=0)
 * gets fresh processes.
 */
export function sessionUnits(planned: PlannedExperiment[], iterationsPerVariant = 1): SessionUnit[] {
  const units: SessionUnit[] = [];
  let shared: SessionUnit | undefined;
  for (const p of planned) {
    const module = CATALOGUE[p.experiment];
    if (!module.variantEnv) {
      if (!shared) units.push((shared = { work: [], env: {} }));
      shared.work.push(p);
      continue;
    }
    shared = undefined;
    for (const v of p.variants) {
      const env = v.env ?? module.variantEnv(v.variant) ?? {};
      // processPerIteration: one set of fresh rank processes per iteration, warmups included.
      if (module.processPerIteration) {
        for (let i = 0; i < iterationsPerVariant; i++) units.push({ work: [{ experiment: p.experiment, variants: [v], iteration: i }], env });
      } else units.push({ work: [{ experiment: p.experiment, variants: [v] }], env });
    }
  }
  return units;
}