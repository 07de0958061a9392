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
 * An entry this process changed (wrote through after a store write, or forgot), which other processes sharing the
 * database must forget: what the cluster bus carries on its `cache` topic.
 */
export type CacheChange =
  | { readonly kind: 'account'; readonly namespace: string; readonly accountId: string }
  | { readonly kind: 'state'; readonly userId: string }
  | { readonly kind: 'profile'; readonly userId: string }
  | { readonly kind: 'history'; readonly sessionId: string };

/**
 * What a turn would otherwise read from the store every time: who is talking, the user's state and profile, and the
 * recent history. Written through after every store write, so one process always sees its own writes. Every such
 * write and every forget is told to the observers (see `observe`), which tell the other processes on the database;
 * they `invalidate` the entry. A notification that never arrives is bounded by `ttlMs`, and state is safe regardless:
 * its save checks the version.
 */
export class ConversationCache {
  readonly #participants: LRUCache<string, Participant>;
  readonly #states: LRUCache<string, CachedState>;
  readonly #profiles: LRUCache<string, ProfileSettings>;
  readonly #histories: LRUCache<string, readonly StoredMessage[]>;
  readonly #historyLimit: number;
  readonly #observers = new Set<(change: CacheChange) => void>();
  #generation = 0;

  constructor(options: ConversationCacheOptions) {
    // lru-cache keeps a read of the clock for `ttlResolution` ms; a given clock is read every time instead.
    const settings = { max: options.maxEntries, ttl: options.ttlMs, ...(options.now ? { perf: { now: options.now }, ttlResolution: 0 } : {}) };
    this.#participants = new LRUCache(settings);
    this.#states = new LRUCache(settings);
    this.#profiles = new LRUCache(settings);
    this.#histories = new LRUCache(settings);
    this.#historyLimit = options.historyLimit;
  }

  /**
   * Calls `observer` with every change this process makes (not with `invalidate`, which applies another process's).
   * Returns the function that stops it.
   */
  observe(observer: (change: CacheChange) => void): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  /** Forgets an entry another process changed; observers are not told (it is not this process's change). */
  invalidate(change: CacheChange): void {
    this.#generation += 1;
    this.#forget(change);
  }

  /** Forgets everything: changes made by other processes may have been missed (the bus was disconnected). */
  clear(): void {
    this.#generation += 1;
    this.#participants.clear();
    this.#states.clear();
    this.#profiles.clear();
    this.#histories.clear();
  }

  /**
   * Grows with each `invalidate` and `clear`. Read it before a store read whose result is to be remembered and pass it
   * on: a result read while another process's change arrived may be the old value, and is not kept.
   */
  get generation(): number {
    return this.#generation;
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
    this.#changed({ kind: 'account', namespace, accountId });
  }

  state(userId: string): CachedState | undefined {
    return this.#states.get(userId);
  }

  /** The state as this process just saved it; other processes forget theirs. */
  rememberState(userId: string, cached: CachedState): void {
    this.#states.set(userId, cached);
    this.#tell({ kind: 'state', userId });
  }

  /** The user's profile settings as last read or written, so a turn reads them once per cache lifetime. */
  profile(userId: string): ProfileSettings | undefined {
    return this.#profiles.get(userId);
  }

  /**
   * The profile as read from the store (or seeded), unless another process's change arrived since `generation` (read
   * before the store read) was current.
   */
  rememberProfile(userId: string, settings: ProfileSettings, generation = this.#generation): void {
    if (generation === this.#generation) this.#profiles.set(userId, settings);
  }

  /** The profile as this process just saved it; other processes forget theirs. */
  profileChanged(userId: string, settings: ProfileSettings): void {
    this.#profiles.set(userId, settings);
    this.#tell({ kind: 'profile', userId });
  }

  forgetProfile(userId: string): void {
    this.#changed({ kind: 'profile', userId });
  }

  /** The session's recent display messages, oldest first, or undefined when they must be loaded. */
  history(sessionId: string): readonly StoredMessage[] | undefined {
    return this.#histories.get(sessionId);
  }

  /**
   * Stores the history after this process appended to it, keeping only the display messages a turn can send; other
   * processes forget theirs.
   */
  rememberHistory(sessionId: string, messages: readonly StoredMessage[]): void {
    const display = messages.filter((message) => message.audience === 'display');
    this.#histories.set(sessionId, this.#historyLimit === 0 ? [] : display.slice(-this.#historyLimit));
    this.#tell({ kind: 'history', sessionId });
  }

  forgetHistory(sessionId: string): void {
    this.#changed({ kind: 'history', sessionId });
  }

  forgetState(userId: string): void {
    this.#changed({ kind: 'state', userId });
  }

  #changed(change: CacheChange): void {
    this.#forget(change);
    this.#tell(change);
  }

  #forget(change: CacheChange): void {
    switch (change.kind) {
      case 'account': {
        const prefix = `${change.namespace}\u0000${change.accountId}\u0000`;
        // Rare (a relink), so a scan of the keys is fine.
        for (const key of [...this.#participants.keys()]) if (key.startsWith(prefix)) this.#participants.delete(key);
        return;
      }
      case 'state':
        this.#states.delete(change.userId);
        return;
      case 'profile':
        this.#profiles.delete(change.userId);
        return;
      case 'history':
        this.#histories.delete(change.sessionId);
        return;
    }
  }

  #tell(change: CacheChange): void {
    for (const observer of [...this.#observers]) observer(change);
  }
}

function participantKey(key: ParticipantKey): string {
  // NUL cannot appear in the parts a channel hands over, so the key is unambiguous.
  return `${key.namespace}\u0000${key.accountId}\u0000${key.channel}\u0000${key.conversationId}`;
}
