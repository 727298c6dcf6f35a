/** Every experiment module, by id. Adding an experiment = one module + one line here. */
import type { ExperimentId } from '../../protocol/events';
import { abortExperiment } from './abort';
import { c10dExperiment } from './c10d';
import { coldStartExperiment } from './coldStart';
import { connectModeExperiment } from './connectMode';
import { destroyExperiment } from './destroy';
import { drainExperiment } from './drain';
import type { ExperimentModule } from './experiment';
import { growExperiment } from './grow';
import { initAbortExperiment } from './initAbort';
import { initExperiment } from './init';
import { manyCommsExperiment } from './manyComms';
import { poolExperiment } from './pool';
import { registrationExperiment } from './registration';
import { revokeExperiment } from './revoke';
import { shrinkExperiment } from './shrink';
import { shrinkAbortExperiment } from './shrinkAbort';
import { splitExperiment } from './split';
import { splitShareExperiment } from './splitShare';
import { splitSubsetExperiment } from './splitSubset';
import { suspendExperiment } from './suspend';

export const CATALOGUE: Record<ExperimentId, ExperimentModule<any>> = {
  init: initExperiment,
  split: splitExperiment,
  shrink: shrinkExperiment,
  grow: growExperiment,
  destroy: destroyExperiment,
  abort: abortExperiment,
  revoke: revokeExperiment,
  registration: registrationExperiment,
  drain: drainExperiment,
  pool: poolExperiment,
  'connect-mode': connectModeExperiment,
  suspend: suspendExperiment,
  c10d: c10dExperiment,
  'split-share': splitShareExperiment,
  'split-subset': splitSubsetExperiment,
  'shrink-abort': shrinkAbortExperiment,
  'init-abort': initAbortExperiment,
  'cold-start': coldStartExperiment,
  'many-comms': manyCommsExperiment,
};
