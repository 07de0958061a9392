import type { ProfileCodec, ProfileSettings, ProfileUpdateResult } from '../domain/profile.js';
import type { Store } from '../domain/ports/store.js';

/**
 * Where the turn keeps profiles between turns: an update writes through it, so the next turn follows at once (in
 * every process: the cache tells the others to forget theirs).
 */
export interface ProfileCache {
  profileChanged(userId: string, settings: ProfileSettings): void;
}

/** Reads and updates a person's profile outside a turn (the admin API, an embedding application). */
export class ProfileService {
  readonly #store: Store;
  readonly #codec: ProfileCodec;
  readonly #cache: ProfileCache;

  constructor(store: Store, codec: ProfileCodec, cache: ProfileCache) {
    this.#store = store;
    this.#codec = codec;
    this.#cache = cache;
  }

  /** The person's settings as a turn would see them: stored (read through the schema), else the defaults. */
  async get(userId: string): Promise<{ readonly settings: ProfileSettings; readonly stored: boolean; readonly problem?: string }> {
    const record = await this.#store.profiles.get(userId);
    if (record === undefined) return { settings: this.#codec.seed(null), stored: false };
    return { ...this.#codec.parse(record.raw), stored: true };
  }

  /**
   * Applies `input` (any subset of the settings) and stores the result, or refuses it with field-level errors and
   * stores nothing. The next turn of the person uses the new settings.
   * @throws StoreError `foreign_key` for an unknown user.
   */
  async update(userId: string, input: unknown): Promise<ProfileUpdateResult> {
    const { settings: current } = await this.get(userId);
    const result = this.#codec.update(input, current);
    if (!result.ok) return result;
    await this.#store.profiles.save(userId, JSON.stringify(result.settings));
    this.#cache.profileChanged(userId, result.settings);
    return result;
  }
}
