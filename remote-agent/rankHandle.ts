/**
 * A rank process as the rank session sees it, and the callbacks that hear from it: the same for a
 * rank started here (rankSpawner.ts, nodes.ts startLocalRank) and one started on another node
 * (nodeServer.ts). Its own module so that nodes.ts and rankSpawner.ts both import it and never
 * each other both ways; nodes.ts re-exports it.
 */

/** A rank process as the rank session sees it, wherever it runs. */
export interface RankHandle {
  /** Ends it now (SIGKILL). Safe to call again or after it ended. */
  kill(): void;
  /** True once it has exited. */
  readonly exited: boolean;
  /** Resolves when it has exited. */
  readonly done: Promise<void>;
}

/** What the caller hears from a rank process: each line it writes on stdout, then its exit. */
export interface RankCallbacks {
  onLine(line: string): void;
  onExit(code: number | null, signal: string | null): void;
}
