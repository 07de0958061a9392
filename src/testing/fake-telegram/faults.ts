import type { EventEmitter } from 'node:events';
import type { FakeCall } from './types.js';

/** A Bot API error answer (`{ ok: false, error_code, description, parameters }`). */
export interface Failure {
  readonly code: number;
  readonly description: string;
  readonly parameters?: Record<string, unknown>;
}

type AfterEffect =
  | { readonly kind: 'lose' }
  | { readonly kind: 'hold'; readonly applied: Promise<FakeCall>; readonly released: Promise<void>; onApplied(call: FakeCall): void; release(): void };

/**
 * Faults a test orders: a call that fails once (429, 400, …), a call carried out whose answer is lost or held back,
 * and methods that hang as if Telegram could not be reached.
 */
export class Faults {
  readonly #events: EventEmitter;
  readonly #failures = new Map<string, Failure[]>();
  /** What happens to the answer of a call already carried out, per method: cut, or held until released. */
  readonly #afterEffects = new Map<string, AfterEffect[]>();
  readonly #holds = new Set<Extract<AfterEffect, { kind: 'hold' }>>();
  readonly #hanging = new Set<string>();
  /** Callers waiting on a hanging method, by method. */
  readonly #waiting = new Map<string, number>();

  constructor(events: EventEmitter) {
    this.#events = events;
  }

  failNext(method: string, failure: { retryAfter: number } | { code: number; description: string }): void {
    const list = this.#failures.get(method) ?? [];
    list.push(
      'retryAfter' in failure
        ? { code: 429, description: `Too Many Requests: retry after ${failure.retryAfter}`, parameters: { retry_after: failure.retryAfter } }
        : failure,
    );
    this.#failures.set(method, list);
  }

  /** The failure ordered for this call of `method`, if any (used up). */
  takeFailure(method: string): Failure | undefined {
    return this.#failures.get(method)?.shift();
  }

  loseResponseNext(method: string): void {
    this.#afterEffects.set(method, [...(this.#afterEffects.get(method) ?? []), { kind: 'lose' }]);
  }

  holdResponseNext(method: string): { readonly applied: Promise<FakeCall>; release(): void } {
    let applied!: (call: FakeCall) => void;
    let release!: () => void;
    const effect: AfterEffect = {
      kind: 'hold',
      applied: new Promise<FakeCall>((resolve) => (applied = resolve)),
      released: new Promise<void>((resolve) => (release = resolve)),
      onApplied: (call) => applied(call),
      release: () => release(),
    };
    this.#afterEffects.set(method, [...(this.#afterEffects.get(method) ?? []), effect]);
    this.#holds.add(effect);
    return { applied: effect.applied, release: effect.release };
  }

  /**
   * What becomes of the answer to a call of `method` that was carried out: `lose` (the connection is cut), `send`,
   * after waiting while it is held back.
   */
  async afterCall(method: string, call: FakeCall): Promise<'lose' | 'send'> {
    const effect = this.#afterEffects.get(method)?.shift();
    if (effect?.kind === 'lose') return 'lose';
    if (effect?.kind === 'hold') {
      effect.onApplied(call);
      await effect.released;
      this.#holds.delete(effect);
    }
    return 'send';
  }

  /** Calls of `method` waiting on a hang now (a caller that gave up no longer counts). */
  hanging(method: string): number {
    return this.#waiting.get(method) ?? 0;
  }

  hang(method: string, on = true): void {
    if (on) this.#hanging.add(method);
    else {
      this.#hanging.delete(method);
      this.#events.emit('released');
    }
  }

  /** Resolves true at once or once `method` no longer hangs, false when the caller gave up first. */
  released(method: string, signal: AbortSignal): Promise<boolean> {
    if (!this.#hanging.has(method)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (value: boolean) => {
        this.#events.off('released', onRelease);
        signal.removeEventListener('abort', onAbort);
        this.#waiting.set(method, (this.#waiting.get(method) ?? 1) - 1);
        resolve(value);
      };
      const onRelease = () => {
        if (!this.#hanging.has(method)) finish(true);
      };
      const onAbort = () => finish(false);
      if (signal.aborted) return resolve(false);
      this.#waiting.set(method, (this.#waiting.get(method) ?? 0) + 1);
      this.#events.on('released', onRelease);
      signal.addEventListener('abort', onAbort);
    });
  }

  /** Lets every held answer go (the server closes). */
  releaseAll(): void {
    for (const hold of this.#holds) hold.release();
  }
}
