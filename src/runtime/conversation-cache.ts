import { LRUCache } from 'lru-cache';
import type { Session, StoredMessage, User } from '../domain/model.js';
import type { ProfileSettings } from '../domain/profile.js';
import type { UserState } from './context/user-state.js';

export interface ConversationCacheOptions {
  /** Entries per kind (participants, states, profiles, histories). */
  readonly maxEntries: number;
  /** Entries expire after this long, so data changed by another process is picked up within it. */
  readonly ttlMs: number;
  /** Display messages kept per session: the history a turn sends. */
  readonly historyLimit: number;
  /** The clock entries expire by, in milliseconds. Default `performance.now`; tests pass their own. */
  readonly now?: () => number;
}

/**
 * One account in one conversation: the account under the namespace identity binds it in (`Channel.accountNamespace`,
 * shared by channels that see the same people), the conversation on the channel it came through.
 */
export interface ParticipantKey {
  readonly namespace: string;
  readonly accountId: string;
  readonly channel: string;
  readonly conversationId: string;
}

/** The user and session behind one channel conversation. Ids never change, so this is safe to keep. */
export interface Participant {
  readonly user: User;
  /** The channel accounts linked to the user, as identity resolved them. */
  readonly accounts: readonly { readonly channel: string; readonly accountId: string }[];
  readonly session: Session;
}

/** A user's state as last loaded or saved, with the version the store holds. */
export interface CachedState {
  readonly version: number;
  readonly state: UserState;
}

/**
 * What a turn would otherwise read from the store every time: who is talking, the user's state and profile, and the
 * recent history. Written through after every store write, so one process always sees its own writes. Another process
 * writing the same rows is detected for state (the save checks the version) and expires within `ttlMs` otherwise.
 */
export class ConversationCache {
  readonly #participants: LRUCache<string, Participant>;
  readonly #states: LRUCache<string, CachedState>;
  readonly #profiles: LRUCache<string, ProfileSettings>;
  readonly #histories: LRUCache<string, readonly StoredMessage[]>;
  readonly #historyLimit: number;

  constructor(options: ConversationCacheOptions) {
    // lru-cache keeps a read of the clock for `ttlResolution` ms; a given clock is read every time instead.
    const settings = { max: options.maxEntries, ttl: options.ttlMs, ...(options.now ? { perf: { now: options.now }, ttlResolution: 0 } : {}) };
    this.#participants = new LRUCache(settings);
    this.#states = new LRUCache(settings);
    this.#profiles = new LRUCache(settings);
    this.#histories = new LRUCache(settings);
    this.#historyLimit = options.historyLimit;
  }

  participant(key: ParticipantKey): Participant | undefined {
    return this.#participants.get(participantKey(key));
  }

  rememberParticipant(key: ParticipantKey, participant: Participant): void {
    this.#participants.set(participantKey(key), participant);
  }

  /**
   * Forgets who an account (`namespace`: its account namespace) is in every conversation on every channel of the
   * namespace: the account now belongs to another user (a relink).
   */
  forgetAccount(namespace: string, accountId: string): void {
    const prefix = `${namespace}\u0000${accountId}\u0000`;
    // Rare (a relink), so a scan of the keys is fine.
    for (const key of [...this.#participants.keys()]) if (key.startsWith(prefix)) this.#participants.delete(key);
  }

  state(userId: string): CachedState | undefined {
    return this.#states.get(userId);
  }

  rememberState(userId: string, cached: CachedState): void {
    this.#states.set(userId, cached);
  }

  /** The user's profile settings as last read or written, so a turn reads them once per cache lifetime. */
  profile(userId: string): ProfileSettings | undefined {
    return this.#profiles.get(userId);
  }

  rememberProfile(userId: string, settings: ProfileSettings): void {
    this.#profiles.set(userId, settings);
  }

  forgetProfile(userId: string): void {
    this.#profiles.delete(userId);
  }

  /** The session's recent display messages, oldest first, or undefined when they must be loaded. */
  history(sessionId: string): readonly StoredMessage[] | undefined {
    return this.#histories.get(sessionId);
  }

  /** Stores the history after a turn, keeping only the display messages a turn can send. */
  rememberHistory(sessionId: string, messages: readonly StoredMessage[]): void {
    const display = messages.filter((message) => message.audience === 'display');
    this.#histories.set(sessionId, this.#historyLimit === 0 ? [] : display.slice(-this.#historyLimit));
  }

  forgetHistory(sessionId: string): void {
    this.#histories.delete(sessionId);
  }

  forgetState(userId: string): void {
    this.#states.delete(userId);
  }
}

function participantKey(key: ParticipantKey): string {
  // NUL cannot appear in the parts a channel hands over, so the key is unambiguous.
  return `${key.namespace}\u0000${key.accountId}\u0000${key.channel}\u0000${key.conversationId}`;
}
