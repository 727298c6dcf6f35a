/**
 * The shape checks of the agent's events on the host side (protocol/events.ts parseAgentEvent):
 * a line of a known type but the wrong shape must not crash the host or put values into a run
 * file that its schema refuses. Pure; used before any field is read.
 */
import type { AgentEvent } from './eventTypes';
import { EXPERIMENT_IDS } from './runOptions';

/** True for a plain object (not null, not an array). */
export function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** True for a finite number. */
export const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
/** True for a string. */
export const isStr = (x: unknown): x is string => typeof x === 'string';
const isExperiment = (x: unknown): boolean => typeof x === 'string' && (EXPERIMENT_IDS as readonly string[]).includes(x);
const isNumRecord = (x: unknown): boolean => isRecord(x) && !Object.hasOwn(x, '__proto__') && Object.values(x).every(isNum);
const isPartsRecord = (x: unknown): boolean => isRecord(x) && !Object.hasOwn(x, '__proto__') && Object.values(x).every(isNumRecord);
const isNcclInitSummary = (x: unknown): boolean =>
  isRecord(x) && isPartsRecord(x.medians) && isNumRecord(x.iterations) && isNum(x.malformedLines) && (x.note === undefined || isStr(x.note));
const isStepList = (x: unknown): boolean => Array.isArray(x) && x.every((s) => isRecord(s) && isStr(s.step) && isStr(s.label) && isStr(s.kind));

/**
 * What is wrong with the fields of an event the host folds into a run (client/runModel.ts), or
 * undefined: a line of the right type but the wrong shape must not crash the host or put
 * values into a run file that its schema refuses.
 */
export function eventShapeProblem(v: Record<string, unknown>): string | undefined {
  const need = (ok: boolean, what: string): string | undefined => (ok ? undefined : what);
  switch (v.type as AgentEvent['type']) {
    case 'agent/hello':
      return need(isStr(v.agentVersion) && isNum(v.pid), '"agentVersion" must be a string and "pid" a number');
    case 'run/plan': {
      const o = v.options;
      const s = v.stamp;
      if (!isRecord(o) || !Array.isArray(o.experiments) || !o.experiments.every(isExperiment) || !isNum(o.iterations) || !isNum(o.warmup) || !isNum(o.deadlineSeconds)) {
        return '"options" must hold known "experiments" and numeric "iterations", "warmup", "deadlineSeconds"';
      }
      if (!isRecord(s) || !['hostname', 'driverVersion', 'ncclVersion', 'ncclPath', 'startedAt'].every((k) => isStr(s[k])) || !Array.isArray(s.gpus) || typeof s.simulated !== 'boolean') {
        return '"stamp" must be an environment stamp (hostname, gpus, driverVersion, ncclVersion, ncclPath, startedAt, simulated)';
      }
      return (
        need(Number.isInteger(v.ranks) && (v.ranks as number) >= 0, '"ranks" must be a whole number') ??
        need(typeof v.simulated === 'boolean', '"simulated" must be true or false') ??
        need(
          v.nodes === undefined ||
            (Array.isArray(v.nodes) && v.nodes.every((n) => isRecord(n) && Number.isInteger(n.index) && isStr(n.hostname) && isStr(n.address) && Array.isArray(n.ranks) && n.ranks.every(Number.isInteger) && Array.isArray(n.gpus) && n.gpus.every(isStr))),
          '"nodes" must list index, hostname, address, ranks and gpus',
        ) ??
        need(
          Array.isArray(v.experiments) && v.experiments.every((e) => isRecord(e) && isExperiment(e.experiment) && Array.isArray(e.variants) && e.variants.every((x) => isRecord(x) && isStr(x.variant) && isStepList(x.steps))),
          '"experiments" must list known experiments with their variants and steps',
        )
      );
    }
    case 'agent/heartbeat':
      return undefined;
    case 'run/listening':
      return need(Number.isInteger(v.port) && Array.isArray(v.addresses) && v.addresses.every(isStr) && isStr(v.token), 'needs an integer "port", "addresses" (strings) and "token"');
    case 'node/joined':
      return need(isStr(v.coordinator) && isStr(v.hostname) && Number.isInteger(v.slots), 'needs "coordinator", "hostname" and an integer "slots"');
    case 'run/startup':
      return need(Array.isArray(v.cudaInitMs) && v.cudaInitMs.every(isNum) && isNum(v.firstUniqueIdMs), '"cudaInitMs" must be numbers and "firstUniqueIdMs" a number');
    case 'run/progress':
      return need(isExperiment(v.experiment) && isStr(v.variant) && isNum(v.iteration) && isNum(v.total) && typeof v.warmup === 'boolean', 'needs a known "experiment", "variant", numeric "iteration" and "total", and "warmup"');
    case 'run/sample':
      return (
        need(isExperiment(v.experiment) && isStr(v.variant) && isNum(v.iteration) && typeof v.warmup === 'boolean', 'needs a known "experiment", "variant", numeric "iteration" and "warmup"') ??
        need(isNumRecord(v.steps), '"steps" must map step ids to finite numbers (ms)') ??
        need(isRecord(v.perRank), '"perRank" must be an object') ??
        need(v.ncclInit === undefined || isPartsRecord(v.ncclInit), '"ncclInit" must map creations to parts in ms')
      );
    case 'experiment/summary':
      return need(
        isExperiment(v.experiment) &&
          Array.isArray(v.variants) &&
          v.variants.every(
            (x) =>
              isRecord(x) &&
              isStr(x.variant) &&
              isStepList(x.steps) &&
              (x.steps as Record<string, unknown>[]).every((s) => isRecord(s.stats) && ['median', 'p90', 'min', 'max', 'mean', 'n'].every((k) => isNum((s.stats as Record<string, unknown>)[k])) && Array.isArray(s.samples) && s.samples.every(isNum)) &&
              (x.memoryBytes === undefined || isNumRecord(x.memoryBytes)) &&
              (x.memStats === undefined || isPartsRecord(x.memStats)) &&
              (x.counts === undefined || isPartsRecord(x.counts)) &&
              (x.ratios === undefined || (Array.isArray(x.ratios) && x.ratios.every((r) => isRecord(r) && isStr(r.id) && isStr(r.label) && isStr(r.of) && isStr(r.to) && isNum(r.value)))) &&
              (x.ncclInit === undefined || isNcclInitSummary(x.ncclInit)),
          ),
        'needs a known "experiment" and "variants" with steps, stats and samples (numbers)',
      );
    case 'experiment/skipped':
      return need(isExperiment(v.experiment) && isStr(v.reason) && (v.variant === undefined || isStr(v.variant)), 'needs a known "experiment" and a "reason"');
    case 'run/error':
      return need(isStr(v.code) && isStr(v.message) && isRecord(v.where) && typeof v.fatal === 'boolean', 'needs "code", "message", "where" and "fatal"');
    case 'run/done':
      return need(['complete', 'partial', 'failed'].includes(v.status as string) && isNum(v.wallMs) && isNum(v.libraryMs) && isStr(v.endedAt), 'needs "status" (complete, partial or failed), numeric "wallMs" and "libraryMs", and "endedAt"');
  }
}
