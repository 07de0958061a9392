import { addressGroup } from '../../platform/address-group.js';

const HOUR_MS = 3_600_000;
/** Addresses kept before the window is swept for those with nothing left in the last hour. */
const SWEEP_AT = 50_000;

/**
 * The attachment bytes all browser callers of one address sent in the last hour, in this process's memory (each
 * process counts its own clients, as `VisitorLimits` does). Addresses are grouped as there: IPv6 by its /64.
 */
export class AddressByteWindow {
  readonly #maxPerHour: number;
  readonly #now: () => number;
  /** Per address group: when and how many bytes, oldest first. */
  readonly #sent = new Map<string, { at: number; bytes: number }[]>();

  /** `maxPerHour` 0: no limit. */
  constructor(maxPerHour: number, now: () => number = Date.now) {
    this.#maxPerHour = maxPerHour;
    this.#now = now;
  }

  /**
   * Counts `bytes` for `address`, or refuses them when they would take it past the hourly limit. `undo` takes them
   * back (the message was not accepted after all).
   */
  take(
    address: string | undefined,
    bytes: number,
  ): { readonly ok: true; readonly undo: () => void } | { readonly ok: false; readonly retryAfterSeconds: number } {
    if (this.#maxPerHour === 0 || address === undefined) return { ok: true, undo: () => {} };
    const key = addressGroup(address);
    const now = this.#now();
    const recent = (this.#sent.get(key) ?? []).filter((entry) => entry.at > now - HOUR_MS);
    const total = recent.reduce((sum, entry) => sum + entry.bytes, 0);
    if (total + bytes > this.#maxPerHour) {
      const oldest = recent[0]?.at ?? now;
      this.#sent.set(key, recent);
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((oldest + HOUR_MS - now) / 1000)) };
    }
    const entry = { at: now, bytes };
    recent.push(entry);
    this.#sent.set(key, recent);
    if (this.#sent.size > SWEEP_AT) this.#sweep(now);
    let undone = false;
    return {
      ok: true,
      undo: () => {
        if (undone) return;
        undone = true;
        const list = this.#sent.get(key);
        const index = list?.indexOf(entry) ?? -1;
        if (list && index !== -1) list.splice(index, 1);
      },
    };
  }

  #sweep(now: number): void {
    for (const [key, list] of this.#sent) if (!list.some((entry) => entry.at > now - HOUR_MS)) this.#sent.delete(key);
  }
}
