import type { ChannelStateStore } from '../../domain/ports/channel.js';

/** Why an update was given up: its shape is unusable, or handling it failed `maxAttempts` times. */
export type DeadLetterReason = 'malformed' | 'failed';

/** One update given up, as kept under `dead-letter:<update_id>` in the channel's state. */
export interface DeadLetter {
  readonly reason: DeadLetterReason;
  readonly attempts: number;
  /** The error's message, cut to 500 characters. */
  readonly error: string;
  /** ISO time it was given up. */
  readonly at: string;
  /** The update as received; past 64 KiB only its id and the start of its JSON (`head`). */
  readonly update: unknown;
}

const MAX_UPDATE_JSON = 64 * 1024;

/**
 * Updates the channel gave up on, kept in its state (`channel_state`, keys `dead-letter:<update_id>`) so that an
 * operator can read and replay them: the channel never drops one silently. Kept as JSON, whose escapes make NUL and
 * lone surrogates storable on every database.
 */
export class DeadLetters {
  readonly #state: ChannelStateStore;
  readonly #now: () => Date;

  constructor(state: ChannelStateStore, now: () => Date = () => new Date()) {
    this.#state = state;
    this.#now = now;
  }

  /** Keeps one update. @throws what the store throws (the caller then tries again later). */
  async keep(
    updateId: number,
    update: unknown,
    failure: { readonly reason: DeadLetterReason; readonly attempts: number; readonly error: string },
  ): Promise<void> {
    const json = JSON.stringify(update) ?? 'null';
    const letter: DeadLetter = {
      reason: failure.reason,
      attempts: failure.attempts,
      error: failure.error.slice(0, 500),
      at: this.#now().toISOString(),
      update: json.length <= MAX_UPDATE_JSON ? update : { update_id: updateId, head: json.slice(0, MAX_UPDATE_JSON) },
    };
    await this.#state.set(`dead-letter:${updateId}`, JSON.stringify(letter));
  }
}
