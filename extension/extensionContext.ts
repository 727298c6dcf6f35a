/**
 * Lifetimes (rust-analyzer's ctx.ts habit): one object owns what lives as long as the extension
 * (commands, the output channel, the panel) and, separately, the scope of the run in progress
 * (its AbortController, listeners and progress), which Cancel or the run's end disposes.
 */

/** Anything with a dispose method (vscode.Disposable fits). */
export interface Disposable {
  dispose(): unknown;
}

/** Disposables disposed together, last added first. Adding to a disposed scope disposes at once. */
export class DisposableScope implements Disposable {
  private readonly items: Disposable[] = [];
  private disposed = false;

  /** Takes ownership of `d`; returns it. */
  add<T extends Disposable>(d: T): T {
    if (this.disposed) void d.dispose();
    else this.items.push(d);
    return d;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const d of this.items.splice(0).reverse()) {
      try {
        void d.dispose();
      } catch (err) {
        console.error('commcost: dispose failed', err);
      }
    }
  }
}

/** The scope of one run: cancelling aborts the engine's signal; disposing cancels first. */
export class RunScope extends DisposableScope {
  private readonly controller = new AbortController();

  constructor(readonly target: string) {
    super();
  }

  /** Read-only cancellation for the engine (only this scope cancels it). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Asks the run to stop; results so far are kept (partial). Idempotent. */
  cancel(): void {
    if (!this.controller.signal.aborted) this.controller.abort();
  }

  override dispose(): void {
    this.cancel();
    super.dispose();
  }
}

/** The extension's lifetime and the current run's. */
export class CommcostContext implements Disposable {
  /** Lives until deactivate. */
  readonly subscriptions = new DisposableScope();
  private run: RunScope | undefined;

  /** The run in progress, if any. */
  get activeRun(): RunScope | undefined {
    return this.run;
  }

  /**
   * Opens the scope of a new run; it ends (and is disposed) when `body` settles.
   * @throws Error when a run is already in progress (one run at a time).
   */
  async withRun<T>(target: string, body: (scope: RunScope) => Promise<T>): Promise<T> {
    if (this.run) throw new Error(`a run on ${this.run.target} is already in progress`);
    const scope = new RunScope(target);
    this.run = scope;
    try {
      return await body(scope);
    } finally {
      this.run = undefined;
      scope.dispose();
    }
  }

  dispose(): void {
    this.run?.dispose();
    this.run = undefined;
    this.subscriptions.dispose();
  }
}
