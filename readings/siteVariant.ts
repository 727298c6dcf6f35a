/**
 * Which variant of a run answers a call site, where the code says it: eager or lazy creation.
 * Pure (no `vscode`, no I/O).
 */
import type { CallSite } from '../sites/callSites';

/**
 * Whether the figures that answer `site` are those of an eager creation: `init_process_group`
 * passes `device_id`; `new_group` / `destroy_process_group` in a file whose `init_process_group`
 * passes it. Only these APIs have eager variants (apiMap.ts `whenEager`).
 */
export function siteIsEager(site: CallSite, sites: readonly CallSite[]): boolean {
  const eagerInit = (s: CallSite): boolean => s.api === 'init_process_group' && s.keywords.includes('device_id');
  if (site.api === 'init_process_group') return eagerInit(site);
  if (site.api === 'new_group' || site.api === 'destroy_process_group') return sites.some(eagerInit);
  return false;
}
