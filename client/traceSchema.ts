/**
 * Validation of untrusted trace files (`.commcost/traces/*.json`): `validateTraceFile` returns the
 * file typed, or throws CommcostError BAD_RUN_FILE naming the first field that is wrong and where.
 * Version 1 files (before NCCL's view and the per-rank spans) are read as version 2 files with
 * neither: `nccl` null, `perRank` empty, `ncclLog` null.
 */
import { TRACE_VERSION, TRACE_VERSIONS_READ, type TraceFile } from '../protocol/trace';
import { CommcostError } from './errors';

function fail(where: string, what: string): never {
  throw new CommcostError('BAD_RUN_FILE', `not a commcost trace file: ${where} ${what}`, {
    hint: 'give a file that `commcost trace` saved (in .commcost/traces/), unedited',
  });
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isNumOrNull = (v: unknown) => v === null || isNum(v);
const isStrOrNull = (v: unknown) => v === null || typeof v === 'string';

function checkView(v: unknown, where: string): void {
  if (v === null || v === undefined) return;
  if (typeof v !== 'object') fail(where, 'must be an object or null');
  const o = v as Record<string, unknown>;
  if (!isStrOrNull(o.fn) || !isNum(o.n) || (o.join !== 'commId' && o.join !== 'order')) fail(where, 'needs fn, n and join (commId or order)');
  if (!o.parts || typeof o.parts !== 'object' || Array.isArray(o.parts)) fail(`${where}.parts`, 'must be an object');
  for (const [k, x] of Object.entries(o.parts as Record<string, unknown>)) if (!isNum(x)) fail(`${where}.parts.${k}`, 'must be a number (ms)');
}

const isSpan = (v: unknown) => v === null || (Array.isArray(v) && v.length === 2 && isNum(v[0]) && isNum(v[1]));

function checkRanks(v: unknown, where: string): void {
  if (v === undefined) return;
  if (!Array.isArray(v)) fail(where, 'must be a list');
  v.forEach((r: unknown, i) => {
    const o = r as Record<string, unknown>;
    if (!o || typeof o !== 'object' || !isNum(o.pid) || typeof o.host !== 'string' || !isNumOrNull(o.rank) || !isNum(o.init) || !isNumOrNull(o.fin))
      fail(`${where}[${i}]`, 'needs pid, host, rank, init and fin');
    for (const k of ['creation', 'firstCollective', 'connect', 'teardown']) if (!isSpan(o[k])) fail(`${where}[${i}].${k}`, 'must be [start ms, end ms] or null');
  });
}

function checkDeferred(v: unknown, where: string): void {
  if (v === undefined) return;
  const o = v as Record<string, unknown>;
  if (!o || typeof o !== 'object' || !['group', 'initAll', 'nonblocking'].includes(o.kind as string)) fail(where, 'needs kind (group, initAll or nonblocking)');
  if (!isStrOrNull(o.api) || !isStrOrNull(o.at) || (o.groupEnd !== undefined && !isStrOrNull(o.groupEnd))) fail(where, 'api, at and groupEnd must be strings or null');
}

const isStrList = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** The environment stamp (optional: files written before it have none). */
function checkEnvironment(v: unknown, where: string): void {
  if (v === undefined) return;
  const o = v as Record<string, unknown>;
  if (!o || typeof o !== 'object' || Array.isArray(o)) fail(where, 'must be an object');
  for (const k of ['hosts', 'gpuModels', 'ncclVersions', 'ncclPaths']) if (!isStrList(o[k])) fail(`${where}.${k}`, 'must be a list of strings');
  if (!isNumOrNull(o.gpuCount) || !isNum(o.processes) || !isStrOrNull(o.driverVersion) || !isStrOrNull(o.cudaVersion) || typeof o.tracedFrom !== 'string')
    fail(where, 'needs gpuCount, processes, driverVersion, cudaVersion and tracedFrom');
  if (o.ncclSource !== 'simulated' && o.ncclSource !== 'job') fail(`${where}.ncclSource`, 'must be simulated or job');
}

function checkStats(v: unknown, where: string): void {
  if (v === null) return;
  if (!v || typeof v !== 'object') fail(where, 'must be an object or null');
  const s = v as Record<string, unknown>;
  for (const k of ['n', 'medianMs', 'p90Ms', 'maxMs']) if (!isNum(s[k]) || (s[k] as number) < 0) fail(`${where}.${k}`, 'must be a number ≥ 0');
}

/**
 * Checks a parsed trace file. `source` names it in errors.
 * @returns the file as the current version (a version 1 file upgraded: no NCCL view, no per-rank spans)
 * @throws CommcostError BAD_RUN_FILE for a wrong kind, a version not in TRACE_VERSIONS_READ, or a malformed field
 */
export function validateTraceFile(data: unknown, source = 'trace'): TraceFile {
  if (!data || typeof data !== 'object' || Array.isArray(data)) fail(source, 'is not a JSON object');
  const t = data as Record<string, unknown>;
  if (t.kind !== 'commcost-trace') fail(`${source}: kind`, 'must be "commcost-trace"');
  if (!TRACE_VERSIONS_READ.includes(t.version as number)) fail(`${source}: version`, `is ${JSON.stringify(t.version)}; this commcost reads versions ${TRACE_VERSIONS_READ.join(' and ')}`);
  if (!Array.isArray(t.command) || !t.command.every((c) => typeof c === 'string')) fail(`${source}: command`, 'must be a list of strings');
  for (const k of ['startedAt', 'endedAt', 'host']) if (typeof t[k] !== 'string') fail(`${source}: ${k}`, 'must be a string');
  if (!isNumOrNull(t.exitCode) || !isStrOrNull(t.signal)) fail(`${source}: exitCode/signal`, 'must be a number/string or null');
  if (t.status !== 'complete' && t.status !== 'partial') fail(`${source}: status`, 'must be "complete" or "partial"');
  if (typeof t.simulated !== 'boolean') fail(`${source}: simulated`, 'must be true or false');
  for (const k of ['missing', 'problems']) if (!Array.isArray(t[k]) || !(t[k] as unknown[]).every((x) => typeof x === 'string')) fail(`${source}: ${k}`, 'must be a list of strings');
  if (!Array.isArray(t.processes)) fail(`${source}: processes`, 'must be a list');
  (t.processes as unknown[]).forEach((p, i) => {
    const o = p as Record<string, unknown>;
    if (!o || typeof o !== 'object' || !isNum(o.pid) || typeof o.host !== 'string' || !isNumOrNull(o.rank)) fail(`${source}: processes[${i}]`, 'needs host, pid and rank');
    const r = o.ray as Record<string, unknown> | undefined;
    if (r !== undefined && (!r || typeof r !== 'object' || typeof r.node !== 'string' || !isStrOrNull(r.ip) || !isStrOrNull(r.actor) || !isStrOrNull(r.actorId))) fail(`${source}: processes[${i}].ray`, 'needs node, and ip, actor, actorId as strings or null');
  });
  if (!Array.isArray(t.sites)) fail(`${source}: sites`, 'must be a list');
  (t.sites as unknown[]).forEach((s, i) => {
    const w = `${source}: sites[${i}]`;
    if (!s || typeof s !== 'object') fail(w, 'must be an object');
    const o = s as Record<string, unknown>;
    if (typeof o.key !== 'string' || typeof o.api !== 'string') fail(w, 'needs key and api strings');
    if (!['python', 'native', 'unattributed'].includes(o.source as string)) fail(`${w}.source`, 'must be python, native or unattributed');
    if (!isStrOrNull(o.file) || !isNumOrNull(o.line) || !isStrOrNull(o.func)) fail(w, 'file/line/func must be string/number/string or null');
    if (!isNum(o.count) || !Array.isArray(o.occurrences) || o.occurrences.length !== o.count) fail(`${w}.count`, 'must equal the number of occurrences');
    if (!Array.isArray(o.notes) || !Array.isArray(o.chain)) fail(w, 'needs notes and chain lists');
    if (o.actors !== undefined && (!Array.isArray(o.actors) || !o.actors.every((a) => typeof a === 'string'))) fail(`${w}.actors`, 'must be a list of strings');
    for (const k of ['creation', 'firstCollective', 'connect', 'teardown']) checkStats(o[k], `${w}.${k}`);
    if (!isNumOrNull(o.memoryBytes) || typeof o.cold !== 'boolean' || typeof o.lazy !== 'boolean') fail(w, 'memoryBytes/cold/lazy have the wrong type');
    checkView(o.nccl, `${w}.nccl`);
    checkDeferred(o.deferred, `${w}.deferred`);
    if (o.binding !== undefined && !['ctypes', 'cffi', 'extension'].includes(o.binding as string)) fail(`${w}.binding`, 'must be ctypes, cffi or extension (how a Python site reached NCCL)');
    if (o.teardownShared !== undefined && !isNum(o.teardownShared)) fail(`${w}.teardownShared`, 'must be a number');
    if (o.firstUse !== undefined && typeof o.firstUse !== 'string') fail(`${w}.firstUse`, 'must be a string (the first use\'s op)');
    (o.occurrences as unknown[]).forEach((oc, j) => {
      if (!oc || typeof oc !== 'object') fail(`${w}.occurrences[${j}]`, 'must be an object');
      const x = oc as Record<string, unknown>;
      checkView(x.nccl, `${w}.occurrences[${j}].nccl`);
      checkRanks(x.perRank, `${w}.occurrences[${j}].perRank`);
    });
  });
  const c = t.clock as Record<string, unknown> | undefined;
  if (c !== undefined) {
    if (!c || typeof c !== 'object' || (c.kind !== 'monotonic' && c.kind !== 'wall-offsets') || !isNum(c.hosts) || typeof c.note !== 'string') fail(`${source}: clock`, 'needs kind (monotonic or wall-offsets), hosts and note');
    if (c.offsetsMs !== undefined && (!c.offsetsMs || typeof c.offsetsMs !== 'object' || !Object.values(c.offsetsMs).every(isNumOrNull))) fail(`${source}: clock.offsetsMs`, 'must map hosts to ms or null');
  }
  checkEnvironment(t.environment, `${source}: environment`);
  const n = t.ncclLog as Record<string, unknown> | null | undefined;
  if (n !== undefined && n !== null && (typeof n !== 'object' || !isNum(n.processes) || !isNum(n.creations) || !isNum(n.joined))) fail(`${source}: ncclLog`, 'needs processes, creations and joined');
  return upgrade(data as TraceFile);
}

/** A version 1 file read as the current version: the fields it did not have are null or empty. */
function upgrade(t: TraceFile): TraceFile {
  if (t.version === TRACE_VERSION) return t;
  return {
    ...t, version: TRACE_VERSION, ncclLog: t.ncclLog ?? null,
    sites: t.sites.map((s) => ({ ...s, nccl: s.nccl ?? null, occurrences: s.occurrences.map((o) => ({ ...o, nccl: o.nccl ?? null, perRank: o.perRank ?? [] })) })),
  };
}
