/**
 * Merges the per-process records of a traced job into a trace file (pure; no I/O).
 *
 * Inputs: the lines of each `<host>-<pid>.jsonl` (the profiler plugin, native/profiler/) and
 * `<host>-<pid>.py.jsonl` (the Python hook, native/pyhook/: torch.distributed's calls, and NCCL's
 * own called through ctypes or cffi, named by the NCCL function). Joins, in each process:
 *  - a communicator to the Python call whose time window holds the plugin's `init` (same thread
 *    preferred; several candidates: the innermost, and the join is reported ambiguous); a call
 *    that is a group's first collective hands the communicator to the call that created the group
 *    (a lazy group), which is then the site;
 *  - its first collective to the call whose window holds the plugin's first group span start;
 *  - its teardown to the call whose window holds `finalize`.
 * Without Python records the site is the plugin's native frame (symbolised by the caller through
 * `symbolize`); with the C interposer, a creation paid after its call returned (a group's
 * ncclGroupEnd, ncclCommInitAll, a non-blocking completion) is timed by client/trace/grouped.ts,
 * and so is one made through ctypes or cffi (the hook's records, client/trace/ffiCalls.ts). A
 * compiled extension's call (`via` extension) is a site, a first use or a teardown by its window. Across processes, the k-th communicator of a site in each process is one
 * occurrence; each phase is MAX over its ranks (the critical path), then median/p90 over occurrences.
 * NCCL's own `Init timings` (the `<host>-<pid>.nccl.log` files, NCCL_DEBUG_FILE) are joined to
 * the communicators by client/trace/ncclView.ts and shown beside the figures as NCCL's view.
 * Clocks: every phase is a difference on one host's CLOCK_MONOTONIC; when the records come from
 * several hosts, only the timeline (`perRank`, `at`) is shifted onto the first host's clock from
 * the wall-clock stamps ({@link clockOf}), never the phases.
 */
import type { TraceFile, TraceNcclView, TraceOccurrence, TracePhaseStats, TraceProcess, TraceRankSpans, TraceRayWorker, TraceSite } from '../../protocol/trace';
import { TRACE_VERSION } from '../../protocol/trace';
import { commonName, firstUseName } from './firstUse';
import { deferredNote, nativeCreation } from './grouped';
import { bindingOf, ffiCallOf, PAYER_APIS, type Binding, type FfiCall } from './ffiCalls';
import { procEnvironment, traceEnvironment, type ProcEnvironment } from './traceEnvironment';
import { NATIVE_TEARDOWN, NCCL_IN_PROGRESS, nativeCallAt, nativeCallOf, nativeStartOf, unreturned, type NativeCall, type NativeStart } from './nativeCalls';
import type { NativeFrame } from './nativeFrame';
import { combineViews, joinProcessViews, NCCL_LOG_SUFFIX, sameHost, splitLogsByProcess } from './ncclView';

export type { NativeFrame } from './nativeFrame';
import { clockOf } from './traceClock';

export { clockOf };

/** A resolved source location. */
export interface SourceLocation { file: string; line: number | null; func: string | null }
/** Resolves a native frame to file:line (addr2line on the host), or null. */
export type Symbolizer = (frame: NativeFrame) => SourceLocation | null;

/** One file's lines and its name (`<host>-<pid>.jsonl`, `.py.jsonl`, or NCCL's log `.nccl.log`). */
export interface RecordFile { name: string; text: string }

/** The job's facts that are not in the records. */
export interface JobFacts {
  command: string[];
  startedAt: string;
  endedAt: string;
  exitCode: number | null;
  signal: string | null;
  /** Why the job did not end by itself ('deadline', 'cancelled'), if so. */
  stopped?: string;
  host: string;
  /** Why NCCL's log was not asked for (the user's own NCCL_DEBUG, --no-nccl-log), if so (client/trace/jobEnv.ts). */
  ncclLogSkipped?: string;
  /** NCCL's log was asked for (then a job whose NCCL wrote none is told so). */
  ncclLogAsked?: boolean;
}

interface PyCall {
  api: string; t0: number; t1: number; tid: number | null; site: SourceLocation | null; chain: SourceLocation[];
  group?: string; groupOf?: string; first?: boolean; ok: boolean;
  /** How NCCL was reached (ctypes, cffi, a C extension), for a binding's call; its ncclResult_t when recorded. */
  via?: Binding; r?: number;
}
interface Comm {
  i: number; commId: string; nranks: number; rank: number; tInit: number; tidInit: number | null; freeInit: number | null;
  connect?: { t0: number; t1: number; free: number | null; site: NativeFrame | null };
  fin?: { t: number; free: number | null; site: NativeFrame | null };
  site: NativeFrame | null;
  /** The first collective's NCCL function as the plugin named it (`collStart` `fn`: AllReduce, Broadcast, Send…). */
  firstFn?: string;
  /** NCCL's view of its creation (its log's Init timings line), when joined. */
  view?: TraceNcclView;
}
interface Proc {
  host: string; pid: number; rank: number | null; python: boolean; plugin: boolean; abi: number | null; nccl: number | null;
  sim: boolean; comms: Map<number, Comm>; calls: PyCall[]; chainError: string;
  /** The C interposer's calls (nativeCalls.ts), and the calls it started forwarding. */
  ncalls: NativeCall[];
  nstarts: NativeStart[];
  /** The Python hook's ctypes/cffi creations, ncclGroupEnd and ncclCommGetAsyncError calls (ffiCalls.ts). */
  fcalls: FfiCall<PyCall>[];
  /** (wall clock − monotonic) ns of each `proc`/`pyproc` record that has both stamps. */
  wallMinusMono: number[];
  /** ns added to this process's monotonic times on the timeline (its host's offset to the reference host; 0 on one host). */
  shift: number;
  /** The `proc` record's environment fields (traceEnvironment.ts). */
  env?: Omit<ProcEnvironment, 'nccl' | 'sim'>;
  /** A Ray worker's identity (the hook's `ray` line), else null. */
  ray: TraceRayWorker | null;
}

const NS = 1e6;
const CREATE_APIS = new Set(['init_process_group', 'new_group', 'split_group', 'shrink_group', 'new_subgroups', 'ProcessGroupNCCL', 'eager_connect_single_device']);
/** Python calls that tear a communicator down: torch's, and NCCL's own called through ctypes or cffi (native/pyhook/commcost_ffi.py). */
const TEARDOWN_APIS = new Set(['destroy_process_group', ...NATIVE_TEARDOWN]);

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}
function location(v: unknown): SourceLocation | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const file = str(o.file);
  return file === null ? null : { file, line: num(o.line), func: str(o.func) };
}
function frame(v: unknown): NativeFrame | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const obj = str(o.obj), addr = str(o.addr), base = str(o.base);
  return obj && addr && base ? { obj, addr, base, sym: str(o.sym) ?? '', symOff: str(o.symOff) ?? '0x0' } : null;
}

/** Parses every file into processes; malformed lines are counted in `problems` and skipped. */
function readProcesses(files: RecordFile[], problems: string[]): Map<string, Proc> {
  const procs = new Map<string, Proc>();
  for (const f of files) {
    const m = /^(.*)-(\d+)(\.py|\.native)?\.jsonl$/.exec(f.name);
    if (!m) { problems.push(`${f.name}: not a trace record file name (<host>-<pid>.jsonl), skipped`); continue; }
    const key = `${m[1]}-${m[2]}`;
    let p = procs.get(key);
    if (!p) {
      p = { host: m[1]!, pid: Number(m[2]), rank: null, python: false, plugin: false, abi: null, nccl: null, sim: false, comms: new Map(), calls: [], chainError: '', ncalls: [], nstarts: [], fcalls: [], wallMinusMono: [], shift: 0, ray: null };
      procs.set(key, p);
    }
    let bad = 0;
    const lines = f.text.split('\n');
    lines.forEach((line, idx) => {
      if (!line.trim()) return;
      let r: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(line);
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        r = parsed as Record<string, unknown>;
      } catch {
        // The last line of a file still being written (or of a killed process) may be cut short.
        bad++;
        if (bad <= 3) problems.push(`${f.name} line ${idx + 1}: malformed record skipped${idx === lines.length - 1 ? ' (cut short: the process ended while writing it)' : ''}`);
        return;
      }
      if (!applyRecord(p!, r)) {
        bad++;
        if (bad <= 3) problems.push(`${f.name} line ${idx + 1}: record of unknown kind or missing fields skipped`);
      }
    });
    if (bad > 3) problems.push(`${f.name}: ${bad} malformed records skipped in all`);
  }
  return procs;
}

function applyRecord(p: Proc, r: Record<string, unknown>): boolean {
  const k = r.k;
  const i = num(r.i);
  switch (k) {
    case 'proc':
      wallPair(p, r);
      p.plugin = true; p.abi = num(r.abi); p.nccl = num(r.nccl); p.sim = r.sim === true; p.chainError = str(r.chainError) ?? ''; p.env = procEnvironment(r, p.host);
      return true;
    case 'pyproc':
      wallPair(p, r);
      p.python = true; p.rank = num(r.rank);
      return true;
    case 'ray':
      if (str(r.node) === null) return false;
      p.ray = { node: str(r.node)!, ip: str(r.ip), actor: str(r.actor), actorId: str(r.actorId) };
      return true;
    case 'init': {
      const t = num(r.t), nranks = num(r.nranks), rank = num(r.rank);
      if (i === null || t === null || nranks === null || rank === null) return false;
      p.comms.set(i, { i, commId: str(r.c) ?? '', nranks, rank, tInit: t, tidInit: num(r.tid), freeInit: nonNegative(r.free), site: frame(r.site) });
      return true;
    }
    case 'connect': {
      const c = i === null ? undefined : p.comms.get(i);
      const t0 = num(r.t0), t1 = num(r.t1);
      if (!c || t0 === null || t1 === null) return false;
      c.connect = { t0, t1, free: nonNegative(r.free), site: frame(r.site) };
      return true;
    }
    case 'fin': {
      const c = i === null ? undefined : p.comms.get(i);
      const t = num(r.t);
      if (!c || t === null) return false;
      c.fin = { t, free: nonNegative(r.free), site: frame(r.site) };
      return true;
    }
    case 'ncall': {
      const call = nativeCallOf(r, frame);
      if (call) p.ncalls.push(call);
      return call !== null;
    }
    case 'ncallStart': {
      const start = nativeStartOf(r, frame);
      if (start) p.nstarts.push(start);
      return start !== null;
    }
    case 'collStart': {
      const c = i === null ? undefined : p.comms.get(i);
      if (c && str(r.fn)) c.firstFn = str(r.fn)!;
      return c !== undefined;
    }
    case 'coll': case 'gpu':
      return i !== null && p.comms.has(i);
    case 'call': {
      const t0 = num(r.t0), t1 = num(r.t1), api = str(r.api);
      if (t0 === null || t1 === null || api === null) return false;
      const chain = Array.isArray(r.chain) ? r.chain.map(location).filter((x): x is SourceLocation => x !== null) : [];
      const via = bindingOf(r.via), rc = num(r.r);
      const call: PyCall = { api, t0, t1, tid: num(r.tid), site: location(r.site), chain, ok: r.ok !== false, ...(via ? { via } : {}), ...(rc !== null ? { r: rc } : {}),
        ...(str(r.group) ? { group: str(r.group)! } : {}), ...(str(r.groupOf) ? { groupOf: str(r.groupOf)! } : {}), ...(r.first === true ? { first: true } : {}) };
      const ffi = ffiCallOf(r, call);
      if (ffi) p.fcalls.push(ffi);
      // A binding's ncclGroupEnd or poll only pays a deferred creation (grouped.ts): never a site.
      if (!(ffi && PAYER_APIS.has(api))) p.calls.push(call);
      return true;
    }
    default:
      return false;
  }
}

/** Keeps a record's (wall clock − monotonic) pair, when it has both stamps (`rt`, `t`, ns). */
function wallPair(p: Proc, r: Record<string, unknown>): void {
  const t = num(r.t), rt = num(r.rt);
  if (t !== null && rt !== null && rt > 0) p.wallMinusMono.push(rt - t);
}

function nonNegative(v: unknown): number | null {
  const n = num(v);
  return n !== null && n >= 0 ? n : null;
}

/** The Python call whose window holds `t` (thread `tid` preferred); `ambiguous` when several fit equally. */
function callAt(calls: PyCall[], t: number, tid: number | null, filter: (c: PyCall) => boolean): { call: PyCall | null; ambiguous: boolean } {
  let fits = calls.filter((c) => filter(c) && c.t0 <= t && t <= c.t1);
  if (tid !== null && fits.some((c) => c.tid === tid)) fits = fits.filter((c) => c.tid === tid);
  if (fits.length === 0) return { call: null, ambiguous: false };
  fits.sort((a, b) => a.t1 - a.t0 - (b.t1 - b.t0));
  return { call: fits[0]!, ambiguous: fits.length > 1 };
}

function where(l: SourceLocation | null): string | null {
  return l ? `${l.file}${l.line !== null ? `:${l.line}` : ''}` : null;
}

/** Median and p90 (nearest rank) of `xs`, ms. */
export function phaseStats(xs: Array<number | null>): TracePhaseStats | null {
  const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const at = (q: number) => v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))]!;
  const mid = v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
  return { n: v.length, medianMs: mid, p90Ms: at(0.9), maxMs: v[v.length - 1]! };
}

interface Attributed {
  proc: Proc; comm: Comm; siteKey: string; site: Omit<TraceSite, 'count' | 'creation' | 'firstCollective' | 'connect' | 'teardown' | 'memoryBytes' | 'cold' | 'nccl' | 'occurrences' | 'notes'>;
  /** `end`: the call's own return, drawn on the timeline when the creation's completion was never seen (a non-blocking call). */
  creation: { t0: number; t1: number | null; end?: number } | null; firstColl: { t0: number; t1: number } | null; teardown: { t0: number | null; t1: number } | null;
  cold: boolean; notes: string[];
  /** The first use's op (firstUse.ts), null when unknown; communicators its teardown call tore down, when several. */
  firstUse: string | null; teardownShared?: number;
}

/**
 * Merges the record files of one traced job. `symbolize` resolves native frames (may return null).
 * Never throws on bad records: they are reported in `problems`.
 */
export function mergeTrace(files: RecordFile[], job: JobFacts, symbolize: Symbolizer = () => null): TraceFile {
  const problems: string[] = [];
  const missing: string[] = [];
  const logs = files.filter((f) => f.name.endsWith(NCCL_LOG_SUFFIX));
  const procs = [...readProcesses(files.filter((f) => !f.name.endsWith(NCCL_LOG_SUFFIX)), problems).values()].sort((a, b) => (a.rank ?? 1e9) - (b.rank ?? 1e9) || a.pid - b.pid);
  const ncclLog = job.ncclLogSkipped
    ? { processes: 0, creations: 0, joined: 0, note: job.ncclLogSkipped }
    : logs.length === 0 && job.ncclLogAsked && procs.some((p) => p.plugin)
      ? { processes: 0, creations: 0, joined: 0, note: 'NCCL wrote no log file although NCCL_DEBUG_FILE was set (the records folder not writable from the job, or the variables not passed on by the launcher)' }
      : joinLogs(procs, logs, problems);
  const clock = clockOf(procs);
  const attributed: Attributed[] = [];
  /** Each teardown call (Python or native) → the notes of the communicators it tore down. */
  const tornBy = new Map<object, { api: string; ms: number; at: string | null; notes: string[][] }>();
  for (const p of procs) {
    if (p.chainError) problems.push(`pid ${p.pid}: the chained profiler plugin was not loaded: ${p.chainError}`);
    if (p.python && !p.plugin && p.calls.length > 0)
      missing.push(`pid ${p.pid}${p.rank !== null ? ` (rank ${p.rank})` : ''}: no profiler plugin records — NCCL did not load the plugin (NCCL older than 2.27.3, NCCL_PROFILER_PLUGIN overridden, or no communicator was created)`);
    for (const u of unreturned(p.nstarts, p.ncalls))
      missing.push(`pid ${p.pid}: ${u.api} at ${u.site ? nativeWhere(u.site, symbolize) : 'an unknown caller'} started and never returned — the process hung in it or was killed in it`);
    const comms = [...p.comms.values()].sort((a, b) => a.tInit - b.tInit);
    const coldI = comms[0]?.i;
    const nTaken = new Map<NativeCall, number>();
    const fTaken = new Map<FfiCall<PyCall>, number>();
    for (const c of comms) {
      const notes: string[] = [];
      const made = callAt(p.calls, c.tInit, c.tidInit, () => true);
      if (made.ambiguous) notes.push(`ambiguous join: communicator ${c.commId} of pid ${p.pid} falls in several Python calls' windows; the innermost was taken`);
      let siteCall = made.call;
      let lazy = false;
      let firstColl: { t0: number; t1: number } | null = null;
      let firstPy: string | null = null;
      if (siteCall && siteCall.first && siteCall.groupOf) {
        firstPy = siteCall.api;
        // A lazy group: the communicator was created at its first collective; the site is the group's creation.
        const groupOf = siteCall.groupOf;
        const maker = [...p.calls].reverse().find((k) => k.t1 <= siteCall!.t0 && k.group === groupOf && CREATE_APIS.has(k.api));
        firstColl = { t0: siteCall.t0, t1: siteCall.t1 };
        if (maker) { lazy = true; siteCall = maker; }
      }
      // A ctypes/cffi creation paid after its call returned (in a group, non-blocking): the call that made it, as for C.
      const pyDeferred = p.fcalls.length && (!siteCall || siteCall.r === NCCL_IN_PROGRESS) ? nativeCreation(p.fcalls, c, fTaken) : null;
      if (pyDeferred) siteCall = pyDeferred.call.py;
      const pyPaid = pyDeferred && deferredNote(pyDeferred, (k) => where(k.py.site));
      if (pyPaid) notes.push(pyPaid.note);
      const connectT = c.connect?.t0;
      if (!firstColl && connectT !== undefined) {
        // A C extension's call holding the connect is the first use (its name is the extension's, not an op).
        const fc = callAt(p.calls, connectT, null, (k) => k.first === true || k.via === 'extension');
        if (fc.call) { firstColl = { t0: fc.call.t0, t1: fc.call.t1 }; firstPy = fc.call.via === 'extension' ? null : fc.call.api; }
        else if (!p.python && c.connect) firstColl = { t0: c.connect.t0, t1: c.connect.t1 };
      }
      const td = c.fin ? callAt(p.calls, c.fin.t, null, (k) => TEARDOWN_APIS.has(k.api) || k.via === 'extension') : { call: null, ambiguous: false };
      // The C interposer's calls: the creating call when no Python call holds init, the teardown call when no Python one holds finalize.
      const nCreation = siteCall ? null : nativeCreation(p.ncalls, c, nTaken);
      const nMade = nCreation?.call ?? null, paid = nCreation && deferredNote(nCreation, (k) => (k.site ? nativeWhere(k.site, symbolize) : null));
      if (paid) notes.push(paid.note);
      const nTd = td.call || !c.fin ? null : nativeCallAt(p.ncalls, c.fin.t, null, 'teardown');
      let site: Attributed['site'];
      if (siteCall) {
        site = { key: `py:${where(siteCall.site) ?? '?'}:${siteCall.api}`, source: 'python', api: siteCall.api, file: siteCall.site?.file ?? null, line: siteCall.site?.line ?? null,
          func: siteCall.site?.func ?? null, chain: siteCall.chain.map((l) => where(l)!).filter(Boolean), lazy,
          firstCollectiveSite: null, teardownSite: where(td.call?.site ?? null), ...(siteCall.via ? { binding: siteCall.via } : {}), ...(pyPaid ? { deferred: pyPaid.deferred } : {}) };
        if (lazy) site.firstCollectiveSite = where(made.call!.site);
      } else if (nMade) {
        const frameOf = nMade.site ?? c.site;
        const loc = frameOf ? symbolize(frameOf) : null;
        const name = loc ? where(loc)! : frameOf ? `${frameOf.obj}+${offsetOf(frameOf)}` : '(unknown)';
        site = { key: `native:${name}:${nMade.api}`, source: 'native', api: nMade.api, file: loc?.file ?? frameOf?.obj ?? null, line: loc?.line ?? null,
          func: loc?.func ?? (frameOf?.sym || null), chain: [], lazy: false,
          firstCollectiveSite: c.connect?.site ? nativeWhere(c.connect.site, symbolize) : null, teardownSite: nTd?.site ? nativeWhere(nTd.site, symbolize) : c.fin?.site ? nativeWhere(c.fin.site, symbolize) : null,
          ...(paid ? { deferred: paid.deferred } : {}) };
      } else {
        const loc = c.site ? symbolize(c.site) : null;
        if (c.site) notes.push('native site: creation is known only as the moment NCCL reached the plugin (trace with --interpose to time the creating call itself)');
        const name = loc ? where(loc)! : c.site ? `${c.site.obj}+${offsetOf(c.site)}` : '(unknown)';
        if (p.python) notes.push(`communicator ${c.commId} of pid ${p.pid} was created outside every wrapped Python call (ctypes, a framework's own NCCL, or a C extension)`);
        site = { key: c.site ? `native:${name}` : 'unattributed', source: c.site ? 'native' : 'unattributed', api: 'communicator creation', file: loc?.file ?? (c.site ? c.site.obj : null),
          line: loc?.line ?? null, func: loc?.func ?? (c.site?.sym || null), chain: [], lazy: false,
          firstCollectiveSite: c.connect?.site ? nativeWhere(c.connect.site, symbolize) : null, teardownSite: c.fin?.site ? nativeWhere(c.fin.site, symbolize) : null };
      }
      const creation = pyDeferred ? { t0: siteCall!.t0, t1: pyDeferred.t1, end: siteCall!.t1 } : siteCall ? { t0: siteCall.t0, t1: siteCall.t1 } : nMade ? { t0: nMade.t0, t1: nCreation!.t1, end: nMade.t1 } : { t0: c.tInit, t1: null };
      const teardown = td.call ? { t0: td.call.t0, t1: td.call.t1 } : nTd ? { t0: nTd.t0, t1: nTd.t1 } : c.fin ? { t0: null, t1: c.fin.t } : null;
      if (!c.fin) missing.push(`communicator ${c.commId} (rank ${c.rank} of ${c.nranks}, pid ${p.pid}) never reached finalize: not torn down before the process ended, or the process was killed`);
      if (c.nranks > 1 && !c.connect) notes.push(`communicator ${c.commId} of pid ${p.pid} ran no collective (no connect recorded)`);
      if (c.nranks === 1 && !firstColl)
        notes.push(`communicator ${c.commId} of pid ${p.pid} has 1 rank: the plugin reported no group or collective event on it, so it has no first-collective figure`);
      const tdCall = td.call ?? nTd;
      if (tdCall) {
        const at = td.call ? where(td.call.site) : nTd?.site ? nativeWhere(nTd.site, symbolize) : null;
        const torn = tornBy.get(tdCall) ?? { api: tdCall.api, ms: (tdCall.t1 - tdCall.t0) / NS, at, notes: [] };
        torn.notes.push(notes);
        tornBy.set(tdCall, torn);
      }
      attributed.push({ proc: p, comm: c, siteKey: site.key, site, creation, firstColl, teardown, cold: c.i === coldI, notes, firstUse: firstColl ? firstUseName(firstPy, c.firstFn) : null });
    }
  }
  // One teardown call that tore down several communicators (destroy_process_group() of the default
  // group takes every group with it): its time is given to each, and each says so.
  for (const torn of tornBy.values()) {
    if (torn.notes.length < 2) continue;
    for (const a of attributed) if (torn.notes.includes(a.notes)) a.teardownShared = torn.notes.length;
    for (const notes of torn.notes)
      notes.push(`one ${torn.api} call${torn.at ? ` at ${torn.at}` : ''} tore down ${torn.notes.length} communicators of its process: its ${torn.ms.toFixed(1)} ms is the teardown of each, paid once`);
  }
  const sites = buildSites(attributed, problems);
  const simulated = procs.some((p) => p.sim);
  const stopped = job.stopped ? [`the job was stopped (${job.stopped}) before it ended by itself`] : [];
  if (job.exitCode !== 0 || job.signal) stopped.push(`the job exited with ${job.signal ? `signal ${job.signal}` : `code ${job.exitCode}`}`);
  if (procs.every((p) => !p.plugin)) missing.push('no profiler plugin records at all: no communicator was created, or NCCL did not load the plugin');
  const processes: TraceProcess[] = procs.map((p) => ({ host: p.host, pid: p.pid, rank: p.rank ?? [...p.comms.values()][0]?.rank ?? null, python: p.python, plugin: p.plugin, pluginAbi: p.abi, ncclVersion: p.nccl, communicators: p.comms.size, ...(p.ray ? { ray: p.ray } : {}) }));
  const versions = [...new Set(procs.map((p) => p.nccl).filter((v): v is number => v !== null))];
  return {
    kind: 'commcost-trace', version: TRACE_VERSION, command: job.command, startedAt: job.startedAt, endedAt: job.endedAt,
    exitCode: job.exitCode, signal: job.signal, status: stopped.length + missing.length > 0 ? 'partial' : 'complete',
    missing: [...stopped, ...missing], simulated, host: job.host, ncclVersion: versions.length === 1 ? versions[0]! : null,
    processes, ncclLog, sites, problems, clock,
    environment: traceEnvironment(procs.map((p) => ({ ...(p.env ?? procEnvironment({}, p.host)), nccl: p.nccl, sim: p.sim, plugin: p.plugin })), job.host),
  };
}

/** Joins each process's NCCL log to its communicators (sets `Comm.view`); null when there was no log. */
function joinLogs(procs: Proc[], logs: RecordFile[], problems: string[]): TraceFile['ncclLog'] {
  if (logs.length === 0) return null;
  let creations = 0, joined = 0, read = 0;
  for (const f of splitLogsByProcess(logs)) {
    const p = procs.find((x) => x.pid === f.pid && sameHost(f.host, x.host));
    if (!p) {
      if (f.text.includes('Init COMPLETE')) problems.push(`NCCL's log of pid ${f.pid} on ${f.host}: a process the plugin never saw; its Init timings are not joined`);
      problems.push(...joinProcessViews([], f.text, `pid ${f.pid}`).problems.filter((x) => / NCCL warn/.test(x)));
      continue;
    }
    read++;
    const r = joinProcessViews([...p.comms.values()].map((c) => ({ i: c.i, commId: c.commId, rank: c.rank, nranks: c.nranks, tInit: c.tInit })), f.text, `pid ${p.pid}`);
    creations += r.creations;
    problems.push(...r.problems);
    for (const [i, v] of r.byComm) {
      p.comms.get(i)!.view = v;
      joined++;
    }
  }
  return { processes: read, creations, joined };
}

function offsetOf(f: NativeFrame): string {
  try {
    return `0x${(BigInt(f.addr) - BigInt(f.base)).toString(16)}`;
  } catch {
    return f.addr;
  }
}

function nativeWhere(f: NativeFrame, symbolize: Symbolizer): string {
  const loc = symbolize(f);
  return loc ? where(loc)! : `${f.obj}+${offsetOf(f)}`;
}

/** One rank's spans of an occurrence, monotonic ms. */
function rankSpans(a: Attributed): TraceRankSpans {
  const c = a.comm;
  const d = a.proc.shift; // the host's offset onto the reference host's clock (0 on one host)
  const span = (t0: number | null, t1: number | null): [number, number] | null => (t0 !== null && t1 !== null ? [(t0 + d) / NS, (t1 + d) / NS] : null);
  return {
    rank: a.proc.rank ?? c.rank, pid: a.proc.pid, host: a.proc.host, commRank: c.rank,
    creation: a.creation ? span(a.creation.t0, a.creation.t1 ?? a.creation.end ?? a.creation.t0) : null, init: (c.tInit + d) / NS,
    firstCollective: a.firstColl ? span(a.firstColl.t0, a.firstColl.t1) : null,
    connect: c.connect ? span(c.connect.t0, c.connect.t1) : null,
    teardown: a.teardown ? span(a.teardown.t0 ?? a.teardown.t1, a.teardown.t1) : null,
    fin: c.fin ? (c.fin.t + d) / NS : null, cold: a.cold,
  };
}

function buildSites(items: Attributed[], problems: string[]): TraceSite[] {
  const bySite = new Map<string, Attributed[]>();
  for (const a of items) {
    const list = bySite.get(a.siteKey) ?? [];
    list.push(a);
    bySite.set(a.siteKey, list);
  }
  const sites: TraceSite[] = [];
  for (const [, list] of bySite) {
    // The k-th communicator of this site in each process is occurrence k.
    const perProc = new Map<Proc, Attributed[]>();
    for (const a of list) perProc.set(a.proc, [...(perProc.get(a.proc) ?? []), a]);
    const depth = Math.max(...[...perProc.values()].map((l) => l.length));
    const occurrences: TraceOccurrence[] = [];
    const notes = new Set<string>();
    for (const a of list) for (const n of a.notes) notes.add(n);
    for (let k = 0; k < depth; k++) {
      const at = [...perProc.values()].map((l) => l.sort((x, y) => x.comm.tInit - y.comm.tInit)[k]).filter((x): x is Attributed => !!x);
      const maxOf = (f: (a: Attributed) => number | null) => {
        const v = at.map(f).filter((x): x is number => x !== null);
        return v.length ? Math.max(...v) : null;
      };
      const ids = [...new Set(at.map((a) => a.comm.commId))];
      for (const id of ids) {
        const holders = at.filter((a) => a.comm.commId === id);
        const n = holders[0]!.comm.nranks;
        const elsewhere = items.filter((a) => a.comm.commId === id).length;
        if (elsewhere < n) notes.add(`communicator ${id} has ${n} ranks but the trace holds ${elsewhere}: ranks missing from the trace`);
      }
      if (at.length < perProc.size) problems.push(`site ${list[0]!.site.key}: occurrence ${k + 1} is missing in ${perProc.size - at.length} process(es): joined by order, check the ranks`);
      occurrences.push({
        index: k, ranks: at.length, commRanks: [...new Set(at.map((a) => a.comm.nranks))], commIds: ids,
        creationMs: maxOf((a) => (a.creation && a.creation.t1 !== null ? (a.creation.t1 - a.creation.t0) / NS : null)),
        firstCollectiveMs: maxOf((a) => (a.firstColl ? (a.firstColl.t1 - a.firstColl.t0) / NS : null)),
        connectMs: maxOf((a) => (a.comm.connect ? (a.comm.connect.t1 - a.comm.connect.t0) / NS : null)),
        teardownMs: maxOf((a) => (a.teardown && a.teardown.t0 !== null ? (a.teardown.t1 - a.teardown.t0) / NS : null)),
        memoryBytes: maxOf((a) => (a.comm.freeInit !== null && a.comm.connect?.free != null ? Math.max(0, a.comm.freeInit - a.comm.connect.free) : null)),
        cold: at.some((a) => a.cold),
        nccl: combineViews(at.map((a) => a.comm.view ?? null), 'max'),
        perRank: at.map(rankSpans),
        at: {
          creation: at[0]!.creation ? (at[0]!.creation.t0 + at[0]!.proc.shift) / NS : null,
          firstCollective: at[0]!.firstColl ? (at[0]!.firstColl.t0 + at[0]!.proc.shift) / NS : null,
          teardown: at[0]!.teardown ? ((at[0]!.teardown.t0 ?? at[0]!.teardown.t1) + at[0]!.proc.shift) / NS : null,
        },
      });
    }
    const first = list[0]!;
    const firstUse = commonName(list.map((a) => a.firstUse));
    const actors = [...new Set(list.filter((a) => a.proc.ray).map((a) => `${a.proc.ray!.actor ?? 'task'}@${a.proc.ray!.ip ?? a.proc.ray!.node.slice(0, 8)}`))].sort();
    const mem = occurrences.map((o) => o.memoryBytes).filter((x): x is number => x !== null);
    sites.push({
      ...first.site, ...(actors.length ? { actors } : {}), count: occurrences.length,
      creation: phaseStats(occurrences.map((o) => o.creationMs)), firstCollective: phaseStats(occurrences.map((o) => o.firstCollectiveMs)),
      connect: phaseStats(occurrences.map((o) => o.connectMs)), teardown: phaseStats(occurrences.map((o) => o.teardownMs)),
      memoryBytes: mem.length ? Math.max(...mem) : null, cold: occurrences.some((o) => o.cold),
      nccl: combineViews(occurrences.map((o) => o.nccl), 'median'), occurrences, notes: [...notes],
      ...(firstUse ? { firstUse } : {}), ...(list.some((a) => a.teardownShared) ? { teardownShared: Math.max(...list.map((a) => a.teardownShared ?? 0)) } : {}),
    });
  }
  return sites.sort((a, b) => (a.occurrences[0]?.at.creation ?? 0) - (b.occurrences[0]?.at.creation ?? 0));
}
