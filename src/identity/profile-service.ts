import type { ProfileCodec, ProfileSettings, ProfileUpdateResult, ProfileWrite } from '../domain/profile.js';
import type { Store } from '../domain/ports/store.js';

/**
 * Where the turn keeps profiles between turns: an update writes through it, so the next turn follows at once (in
 * every process: the cache tells the others to forget theirs).
 */
export interface ProfileCache {
  profileChanged(userId: string, settings: ProfileSettings): void;
}

/** A person's profile as the admin and an embedding application see it. */
export interface StoredProfileView {
  /** The settings a turn follows: the stored ones, read through the schema, else the defaults. */
  readonly settings: ProfileSettings;
  /** False while the user has no stored profile (the defaults and channel hints apply). */
  readonly stored: boolean;
  /** Why some or all of the stored profile could not be read (its defaults stand in); the row is kept as it is. */
  readonly problem?: string;
  /** True when none of the stored profile could be read: updates are refused until it is replaced. */
  readonly unreadable?: true;
}

/** Reads, updates and replaces a person's profile outside a turn (the admin API, an embedding application). */
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
  async get(userId: string): Promise<StoredProfileView> {
    const record = await this.#store.profiles.get(userId);
    if (record === undefined) return { settings: this.#codec.seed(null), stored: false };
    return { ...this.#codec.parse(record.raw), stored: true };
  }

  /**
   * Applies `input` (any subset of the settings, in Palaver's spelling or the snake_case one) and stores the result,
   * or refuses it with field-level errors and stores nothing. Only the fields it names change in the stored row.
   * A stored profile that cannot be read is never overwritten here: the update is refused with `unreadable` (use
   * {@link replace}). The next turn of the person uses the new settings.
   * @throws StoreError `foreign_key` for an unknown user.
   */
  async update(userId: string, input: unknown): Promise<ProfileUpdateResult> {
    const record = await this.#store.profiles.get(userId);
    return this.#write(userId, this.#codec.update(input, record?.raw));
  }

  /**
   * Stores `input` as the person's whole profile, whatever is stored (also a profile that cannot be read): fields it
   * leaves out take the defaults. Refused with field-level errors, storing nothing, when invalid.
   * @throws StoreError `foreign_key` for an unknown user.
   */
  replace(userId: string, input: unknown): Promise<ProfileUpdateResult> {
    return this.#write(userId, this.#codec.replace(input));
  }

  async #write(userId: string, result: ProfileWrite): Promise<ProfileUpdateResult> {
    if (!result.ok) return result;
    await this.#store.profiles.save(userId, result.row);
    this.#cache.profileChanged(userId, result.settings);
    return { ok: true, settings: result.settings };
  }
}
