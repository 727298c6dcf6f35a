/** Every experiment module, by id. Adding an experiment = one module + one line here. */
import type { ExperimentId } from '../../protocol/events';
import { abortExperiment } from './abort';
import { destroyExperiment } from './destroy';
import type { ExperimentModule } from './experiment';
import { initExperiment } from './init';
import { splitExperiment } from './split';

export const CATALOGUE: Record<ExperimentId, ExperimentModule<any>> = {
  init: initExperiment,
  split: splitExperiment,
  destroy: destroyExperiment,
  abort: abortExperiment,
};
