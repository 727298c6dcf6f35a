/**
 * The wrapper index's memo of call resolutions (wrapperIndex.ts): each call keeps the def it
 * resolved to (wrapperResolve.ts, cppWrapperFacts.ts `CppNames`) with the other files the
 * resolution looked into; a file whose surface changes (wrapperFacts.ts `surfaceOf`) makes stale
 * the resolutions that looked into it, another module table makes all of them stale. Pure; no `vscode` import.
 */
import type { DefId } from './wrapperDerive';
import type { Call, FileEntry } from './wrapperFacts';

/** Resolutions memoised on the calls (`Call.resolved`, `resolvedAt`, `deps`). */
export class ResolutionMemo {
  private version = 0;
  /** A file → the calls whose resolution looked into it, with the path of the file each call is in. */
  private readonly dependents = new Map<string, Map<Call, string>>();
  /** The files the resolution under way looked into. */
  private consulted: string[] | undefined;

  /** `resolveNow`: the resolution itself, which reports the files it looks into through {@link consult}. */
  constructor(private readonly resolveNow: (f: FileEntry, call: Call) => DefId | undefined) {}

  /** Records that the resolution under way looked into the file at `path`. */
  consult(path: string): void {
    this.consulted?.push(path);
  }

  /** The def `call` (in file `f`) resolves to, or undefined: memoised until a file it looked into changes its surface. */
  resolve(f: FileEntry, call: Call): DefId | undefined {
    if (call.resolvedAt === this.version) return call.resolved;
    const consulted: string[] = [];
    this.consulted = consulted;
    try {
      call.resolved = this.resolveNow(f, call);
    } finally {
      this.consulted = undefined;
    }
    call.resolvedAt = this.version;
    for (const dep of call.deps ?? []) this.dependents.get(dep)?.delete(call);
    const deps = [...new Set(consulted)].filter((p) => p !== f.path);
    if (deps.length > 0) call.deps = deps;
    else delete call.deps;
    for (const dep of deps) {
      let set = this.dependents.get(dep);
      if (!set) this.dependents.set(dep, (set = new Map()));
      set.set(call, f.path);
    }
    return call.resolved;
  }

  /** Makes every resolution stale (another module table). */
  clear(): void {
    this.version++;
    this.dependents.clear();
  }

  /** Makes stale the resolutions that looked into `path`. @returns those calls, each with the path of its file */
  invalidate(path: string): [Call, string][] {
    const calls = [...(this.dependents.get(path) ?? [])];
    for (const [call] of calls) call.resolvedAt = -1;
    this.dependents.delete(path);
    return calls;
  }

  /** Forgets the calls of `calls` (their file's facts are replaced). */
  forget(calls: Iterable<Call>): void {
    for (const call of calls) for (const dep of call.deps ?? []) this.dependents.get(dep)?.delete(call);
  }
}
