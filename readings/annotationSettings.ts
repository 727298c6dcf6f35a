/**
 * The annotation settings' shape and defaults (`commcost.annotations.*`, `commcost.staleAfterDays`,
 * `commcost.expectedNcclVersion`): the thresholds that colour a label and date a figure. Read and
 * validated by extension/annotations/annotationSettings.ts; `commcost scan` uses the defaults.
 */
export interface AnnotationSettings {
  codeLens: boolean;
  decorations: boolean;
  diagnostics: boolean;
  /** Labels at or above this many ms are coloured "medium". */
  mediumMs: number;
  /** Labels at or above this many ms are coloured "large". */
  largeMs: number;
  /** Figures older than this many days are stale. */
  staleAfterDays: number;
  /** The NCCL version the workspace's environment loads; "" = the last run on the profile's host. */
  expectedNcclVersion: string;
}

export const ANNOTATION_DEFAULTS: AnnotationSettings = {
  codeLens: true,
  decorations: true,
  diagnostics: true,
  mediumMs: 50,
  largeMs: 200,
  staleAfterDays: 30,
  expectedNcclVersion: '',
};
