/**
 * The one SQLite connection has one holder at a time: a transaction, a query run through Kysely, a statement run
 * directly, or the checkpointer's quiet moment. Waiters are served first come, first served; while any wait, the
 * gate passes straight to the next one.
 */
export class ConnectionGate {
  #held = false;
  readonly #waiters: (() => void)[] = [];

  /** Takes the gate if it is free, without waiting. */
  tryEnter(): boolean {
    if (this.#held) return false;
    this.#held = true;
    return true;
  }

  /** Resolves once the caller holds the gate. */
  enter(): Promise<void> {
    if (this.tryEnter()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Hands the gate to the next waiter, or frees it. */
  leave(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#held = false;
  }

  /** True while someone waits for the gate: the holder is not the last in line. */
  get contended(): boolean {
    return this.#waiters.length > 0;
  }
}
