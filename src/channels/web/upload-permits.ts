import { addressGroup } from '../../platform/address-group.js';

/**
 * How many large request bodies (a message with files: up to ~29 MB of JSON with the defaults) this process reads
 * at once, in all and per client address. A body is read and decoded before any per-visitor limit can apply (who
 * sends it is known only from its contents), so without this bound a few hundred parallel uploads would hold
 * gigabytes. A body past the size of a message without files takes a permit before more of it is read; with none
 * left the request is refused (429) and the connection's bytes are not buffered.
 */
export class UploadPermits {
  readonly #maxAtOnce: number;
  readonly #maxPerAddress: number;
  readonly #byAddress = new Map<string, number>();
  #inUse = 0;

  constructor(maxAtOnce: number, maxPerAddress: number) {
    this.#maxAtOnce = maxAtOnce;
    this.#maxPerAddress = maxPerAddress;
  }

  /** A ticket for one request: it takes at most one permit, and gives it back once, when released. */
  ticket(address: string | undefined): UploadTicket {
    const key = address === undefined ? '' : addressGroup(address);
    let held = false;
    return {
      take: () => {
        if (held) return true;
        const ofAddress = this.#byAddress.get(key) ?? 0;
        if (this.#inUse >= this.#maxAtOnce || ofAddress >= this.#maxPerAddress) return false;
        this.#inUse += 1;
        this.#byAddress.set(key, ofAddress + 1);
        held = true;
        return true;
      },
      release: () => {
        if (!held) return;
        held = false;
        this.#inUse -= 1;
        const left = (this.#byAddress.get(key) ?? 1) - 1;
        if (left === 0) this.#byAddress.delete(key);
        else this.#byAddress.set(key, left);
      },
    };
  }
}

/** One request's claim on an upload permit. */
export interface UploadTicket {
  /** Takes the permit (true), or says none is free (false). Taking it again is a no-op. */
  take(): boolean;
  /** Gives the permit back, if taken. */
  release(): void;
}
