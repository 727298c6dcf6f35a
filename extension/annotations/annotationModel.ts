/**
 * The annotations of open documents: one incrementally re-parsed tree per document, its call
 * sites, and each API's annotation on the active profile (cached until the profiles or the
 * settings change). The VS Code providers read from here; hovers are answered from this cache.
 * No `vscode` import.
 */
import { createHash } from 'node:crypto';
import { findings, type Finding } from '../../readings/advice';
import { firstUseKindOf, type ApiName } from '../../sites/apiMap';
import type { FirstUseKind } from '../../protocol/runOptions';
import {
  ParsedDocument,
  type CallSite,
  type CallSiteFinder,
  type Position,
  type ScanResult,
  type SourceLanguage,
  type TextChange,
} from '../../sites/callSites';
import { resolveAnnotation, type Annotation, type SiteContext } from '../../readings/figures';
import { siteIsEager } from '../../readings/siteVariant';
import type { Profile, StaleRules } from '../../readings/profiles';
import type { ProfileStore } from '../../client/profileStore';

/** A call answered by another run than the active one (for the status bar tooltip). */
export interface AnsweredElsewhere {
  api: ApiName;
  source: Profile;
  why: string;
}

/**
 * The call sites of a document made through wrapper functions (wrapperIndex.ts, fed by
 * wrapperWatch.ts): appended to the finder's sites of each parse, so that every surface shows them.
 */
export interface WrapperCallers {
  /** Re-indexes document `uri` from `text` (the finder's `scan` of it is given) and returns its sites through wrappers. */
  update(uri: string, language: SourceLanguage, text: string, scan: ScanResult): CallSite[];
  /** Content changes of `uri`, before the next {@link update}. */
  edit(uri: string, changes: readonly TextChange[]): void;
  /** The document's sites through wrappers now, without re-parsing it (other files changed). */
  callers(uri: string): CallSite[];
  /** The document was closed. */
  closed(uri: string): void;
}

/** A stable key of the sites beyond the finder's (position, API, chain) to tell whether they changed. */
function callersKey(sites: readonly CallSite[]): string {
  return sites.map((s) => `${s.startIndex}:${s.api}:${(s as CallSite & { chain?: string[] }).chain?.join('>') ?? ''}`).join('|');
}

/** One document's state after its last parse. */
export interface DocumentAnnotations {
  /** The document version the scan was made from. */
  version: number;
  scan: ScanResult;
  /** The text the scan was made from. */
  text: string;
  /** Built on first use. */
  findings?: Finding[];
}

function contains(site: CallSite, p: Position): boolean {
  const r = site.nameRange;
  const s = site.range;
  const inside = (a: Position, b: Position): boolean =>
    (p.line > a.line || (p.line === a.line && p.character >= a.character)) &&
    (p.line < b.line || (p.line === b.line && p.character <= b.character));
  return inside(r.start, r.end) || inside(s.start, s.end);
}

/** Scans kept by content (language + SHA-1 of the text), most recent last: a file opened again unchanged is not parsed. */
export const SCAN_CACHE_SIZE = 64;

/** The key of a text's scan in the cache: its language and the SHA-1 of its content. */
export function scanKey(language: SourceLanguage, text: string): string {
  return `${language}:${createHash('sha1').update(text).digest('hex')}`;
}

export class AnnotationModel {
  /** `direct`: the finder's scan of the last parse (without the sites through wrappers). */
  private readonly docs = new Map<string, { parsed: ParsedDocument; direct?: ScanResult; state?: DocumentAnnotations }>();
  private readonly scans = new Map<string, ScanResult>();
  /** How many opens were answered from {@link scans} (for the log and the tests). */
  cachedOpens = 0;
  private readonly cache = new Map<string, Annotation>();
  private wrappers: WrapperCallers | undefined;
  /** The Measure picker's gate (experimentInfo.ts `unavailableReason`), once {@link setGate} gave it. */
  private gate: SiteContext['unavailable'];

  /**
   * @param finder the loaded finder
   * @param store the profiles
   * @param rules the staleness rules now (settings and clock)
   */
  constructor(
    private readonly finder: CallSiteFinder,
    private readonly store: ProfileStore,
    private readonly rules: () => StaleRules,
  ) {}

  /**
   * Resolves once documents of `language` can be opened (the C/C++ grammar may load after the
   * finder: CallSiteFinder `lazyCpp`). @throws Error (rejects) when that grammar cannot be loaded
   */
  ready(language: SourceLanguage): Promise<void> {
    return this.finder.ready(language);
  }

  /** Feeds the sites made through wrappers into every later parse (see {@link refreshCallers} for the open documents). */
  setWrapperCallers(wrappers: WrapperCallers | undefined): void {
    this.wrappers = wrappers;
  }

  /** The finder's scan of a parse plus the document's sites through wrappers. */
  private withCallers(uri: string, language: SourceLanguage, text: string, scan: ScanResult): ScanResult {
    const extra = this.wrappers?.update(uri, language, text, scan) ?? [];
    return extra.length > 0 ? { ...scan, sites: [...scan.sites, ...extra] } : scan;
  }

  /**
   * Re-reads every open document's sites through wrappers (after another file changed, or the
   * wrapper index was built) without re-parsing; returns the documents whose sites changed.
   */
  refreshCallers(): string[] {
    const changed: string[] = [];
    if (!this.wrappers) return changed;
    for (const [uri, d] of this.docs) {
      const direct = d.direct;
      if (!d.state || !direct) continue;
      const extra = this.wrappers.callers(uri);
      if (callersKey(d.state.scan.sites.slice(direct.sites.length)) === callersKey(extra)) continue;
      d.state = { ...d.state, scan: extra.length > 0 ? { ...direct, sites: [...direct.sites, ...extra] } : direct };
      changed.push(uri);
    }
    return changed;
  }

  /**
   * The annotation of `api` (lazy-init figures where the run has both ways; cached).
   * @param creator a first collective's creating API (figures.ts `SiteContext.creator`)
   * @param groupSize the ranks of the group the code makes, where it fixes them (figures.ts `SiteContext.groupSize`)
   * @param firstUse how that group is first used (figures.ts `SiteContext.firstUse`)
   */
  annotate(api: ApiName, eager = false, creator?: ApiName, groupSize?: number, firstUse?: FirstUseKind): Annotation {
    const key = `${api}${eager ? ' eager' : ''}${creator ? ` by ${creator}` : ''}${groupSize !== undefined ? ` of ${groupSize}` : ''}${firstUse ? ` first ${firstUse}` : ''}`;
    let a = this.cache.get(key);
    if (!a) {
      const chosen = this.store.chosen;
      a = resolveAnnotation(api, this.store.active, this.store.profiles, this.rules(), {
        eager,
        ...(chosen ? { chosen } : {}),
        ...(creator ? { creator } : {}),
        ...(groupSize !== undefined ? { groupSize } : {}),
        ...(firstUse ? { firstUse } : {}),
        ...(this.gate ? { unavailable: this.gate } : {}),
      });
      this.cache.set(key, a);
    }
    return a;
  }

  /** The annotation of a call site of document `uri` (its eager facts: {@link siteIsEager}; a first collective's creator). */
  annotateSite(uri: string, site: CallSite): Annotation {
    return this.annotate(site.api, siteIsEager(site, this.state(uri)?.scan.sites ?? [site]), site.firstCollectiveOf?.api, site.groupSize, firstUseKindOf(site.firstCollectiveOf?.collective));
  }

  /**
   * The calls of the open documents whose figures come from another run than the active one,
   * one per API and run, with why (for the status bar tooltip).
   */
  answeredElsewhere(): AnsweredElsewhere[] {
    const out: AnsweredElsewhere[] = [];
    for (const [uri, d] of this.docs) {
      for (const site of d.state?.scan.sites ?? []) {
        const a = this.annotateSite(uri, site);
        const m = a.measured;
        if (!m || !a.why || out.some((x) => x.api === a.api && x.source === m.source)) continue;
        out.push({ api: a.api, source: m.source, why: a.why });
      }
    }
    return out;
  }

  /**
   * Gives the model the Measure picker's gate (experimentInfo.ts `unavailableReason`, loaded lazily
   * by register.ts: it holds the agent's experiment needs): from then on a site whose experiment
   * the run did not ask for and whose host cannot run it says so instead of offering a Measure that
   * would be skipped (figures.ts `SiteContext.unavailable`). Forgets the annotations made without it.
   */
  setGate(gate: NonNullable<SiteContext['unavailable']>): void {
    this.gate = gate;
    this.invalidate();
  }

  /** Forgets every annotation and finding (profiles, the active profile or settings changed). */
  invalidate(): void {
    this.cache.clear();
    for (const d of this.docs.values()) if (d.state) delete d.state.findings;
  }

  /**
   * Parses `text` in full (a newly opened document, or after a language change) — or, when a text
   * with the same content hash was scanned in this session ({@link SCAN_CACHE_SIZE} kept), takes
   * that scan and leaves the parse to the first edit (a full one then, there being no tree to edit).
   */
  open(uri: string, language: SourceLanguage, text: string, version: number): DocumentAnnotations {
    const old = this.docs.get(uri);
    if (old && old.parsed.language !== language) this.close(uri);
    const key = scanKey(language, text);
    const cached = this.scans.get(key);
    if (cached) {
      // A kept tree may be of another text: drop it, so that no edit is applied to the wrong tree.
      this.docs.get(uri)?.parsed.dispose();
      this.docs.set(uri, { parsed: new ParsedDocument(this.finder, language) });
      this.cachedOpens++;
    }
    let d = this.docs.get(uri);
    if (!d) {
      d = { parsed: new ParsedDocument(this.finder, language) };
      this.docs.set(uri, d);
    }
    const direct = cached ?? d.parsed.reparse(text);
    this.keepScan(key, direct);
    d.direct = direct;
    const scan = this.withCallers(uri, language, text, direct);
    d.state = { version, scan, text };
    return d.state;
  }

  /** Remembers `scan` under `key`, the least recently used beyond {@link SCAN_CACHE_SIZE} forgotten. */
  private keepScan(key: string, scan: ScanResult): void {
    this.scans.delete(key);
    this.scans.set(key, scan);
    while (this.scans.size > SCAN_CACHE_SIZE) this.scans.delete(this.scans.keys().next().value!);
  }

  /** Records content changes on the kept tree; call {@link reparse} (debounced) afterwards. */
  edit(uri: string, changes: readonly TextChange[]): void {
    const d = this.docs.get(uri);
    d?.parsed.edit(changes);
    if (d) this.wrappers?.edit(uri, changes);
  }

  /** Re-parses incrementally against the edited tree. Undefined when the document is not open here. */
  reparse(uri: string, text: string, version: number): DocumentAnnotations | undefined {
    const d = this.docs.get(uri);
    if (!d) return undefined;
    const direct = d.parsed.reparse(text);
    this.keepScan(scanKey(d.parsed.language, text), direct);
    d.direct = direct;
    const scan = this.withCallers(uri, d.parsed.language, text, direct);
    d.state = { version, scan, text };
    return d.state;
  }

  has(uri: string): boolean {
    return this.docs.has(uri);
  }

  state(uri: string): DocumentAnnotations | undefined {
    return this.docs.get(uri)?.state;
  }

  /** The findings of the document's last parse (built once per parse and profile state). */
  findings(uri: string): Finding[] {
    const s = this.state(uri);
    if (!s) return [];
    // advice.ts asks by API: the file's eager facts apply to new_group / destroy_process_group;
    // its init_process_group advice concerns calls without device_id (lazy).
    const fileEager = (api: ApiName): boolean =>
      api !== 'init_process_group' && s.scan.sites.some((x) => x.api === api && siteIsEager(x, s.scan.sites));
    s.findings ??= findings(s.scan, (api, site) => this.annotate(api, fileEager(api), undefined, site.groupSize), s.text);
    return s.findings;
  }

  /** The call site at `p` and its annotation, from the cache. */
  at(uri: string, p: Position): { site: CallSite; annotation: Annotation } | undefined {
    const s = this.state(uri);
    const site = s?.scan.sites.find((x) => contains(x, p));
    return site ? { site, annotation: this.annotateSite(uri, site) } : undefined;
  }

  close(uri: string): void {
    this.docs.get(uri)?.parsed.dispose();
    if (this.docs.delete(uri)) this.wrappers?.closed(uri);
  }

  dispose(): void {
    for (const uri of [...this.docs.keys()]) this.close(uri);
    this.cache.clear();
  }
}
