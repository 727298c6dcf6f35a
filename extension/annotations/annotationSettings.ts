/**
 * The annotation settings (`commcost.annotations.*`, `commcost.staleAfterDays`,
 * `commcost.expectedNcclVersion`), read and validated. No `vscode` import: the caller passes
 * `workspace.getConfiguration('commcost').get`.
 */
import { SettingsError } from '../settings';
import { ANNOTATION_DEFAULTS, type AnnotationSettings } from '../../readings/annotationSettings';

function bool(get: (k: string) => unknown, key: string, dflt: boolean): boolean {
  const v = get(key);
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw new SettingsError(`commcost.${key}`, v, 'true or false');
  return v;
}

function num(get: (k: string) => unknown, key: string, min: number, max: number, dflt: number): number {
  const v = get(key);
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
    throw new SettingsError(`commcost.${key}`, v, `a number from ${min} to ${max}`);
  return v;
}

/**
 * Reads the annotation settings through `get` (key without `commcost.`; undefined = default).
 * @throws SettingsError naming the setting and the bad value
 */
export function readAnnotationSettings(get: (key: string) => unknown): AnnotationSettings {
  const mediumMs = num(get, 'annotations.mediumMs', 0, 1e7, ANNOTATION_DEFAULTS.mediumMs);
  const largeMs = num(get, 'annotations.largeMs', 0, 1e7, ANNOTATION_DEFAULTS.largeMs);
  if (largeMs < mediumMs)
    throw new SettingsError('commcost.annotations.largeMs', largeMs, `a number of ms at least commcost.annotations.mediumMs (${mediumMs})`);
  const version = get('expectedNcclVersion') ?? '';
  if (typeof version !== 'string' || (version.trim() !== '' && !/^\d+\.\d+\.\d+$/.test(version.trim()))) {
    throw new SettingsError('commcost.expectedNcclVersion', version, 'an NCCL version like 2.28.9, or empty');
  }
  return {
    codeLens: bool(get, 'annotations.codeLens', ANNOTATION_DEFAULTS.codeLens),
    decorations: bool(get, 'annotations.decorations', ANNOTATION_DEFAULTS.decorations),
    diagnostics: bool(get, 'annotations.diagnostics', ANNOTATION_DEFAULTS.diagnostics),
    mediumMs,
    largeMs,
    staleAfterDays: num(get, 'staleAfterDays', 0, 36500, ANNOTATION_DEFAULTS.staleAfterDays),
    expectedNcclVersion: version.trim(),
  };
}
