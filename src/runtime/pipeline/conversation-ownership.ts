import { FencedOut } from '../../domain/errors.js';
import type { ConversationFence, Store } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';
import type { ConversationCache } from '../conversation-cache.js';

/** A conversation this process owns for one turn. */
export interface TurnClaim {
  readonly fence: ConversationFence;
  /**
   * Another process owned the conversation since this one last did: what this process cached of it may be stale, and
   * its messages may have been answered there.
   */
  readonly takenFromAnother: boolean;
  /** Whether the conversation's messages are held (read with the claim): an operator paused it, or a turn waits for an approval. */
  readonly paused: boolean;
  /** Checks, in the transaction `tx` of a turn's write, that the claim still holds. @throws FencedOut when it does not. */
  check(tx: Store): Promise<void>;
  /**
   * The check of a turn's closing write, which also ends the claim when that write commits: the conversation is free
   * for the next turn with no write of its own. @throws FencedOut when the claim no longer holds.
   */
  end(tx: Store): Promise<void>;
}

export interface ConversationOwnershipOptions {
  readonly store: Store;
  readonly cache: ConversationCache;
  readonly logger: Logger;
  /** This process, as the owner of its claims. */
  readonly owner: string;
  /** How long a claim lives without a renewal (the inbox lease). */
  readonly leaseMs: number;
  readonly now?: () => number;
}

/**
 * One owner per conversation across the processes on a database. A turn claims its conversation before it starts
 * and releases it when it ends; the heartbeat renews the claims of running turns. A process whose claim ran out
 * (paused, cut off) is fenced: each write of its turn checks the claim's token in the write's own transaction.
 */
export class ConversationOwnership {
  readonly #options: ConversationOwnershipOptions;
  readonly #now: () => number;
  /** Releases that failed (the database was away): tried again with each renewal, so no claim is renewed forever. */
  readonly #unreleased = new Map<string, ConversationFence>();

  constructor(options: ConversationOwnershipOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Claims the conversation for a turn; undefined while another process's turn holds it. */
  async claim(channel: string, conversationId: string, sessionId: string, userIds: readonly string[]): Promise<TurnClaim | undefined> {
    const { store, owner, leaseMs, cache } = this.#options;
    const outcome = await store.claims.claim({ channel, conversationId, owner, now: this.#now(), ttlMs: leaseMs, pausedSession: sessionId });
    if (!outcome.claimed) return undefined;
    const fence: ConversationFence = { channel, conversationId, owner, token: outcome.token };
    this.#unreleased.delete(keyOf(fence));
    const takenFromAnother = outcome.previousOwner !== null && outcome.previousOwner !== owner;
    if (takenFromAnother) {
      // Its writes were announced on the cluster bus, but a notice may still be on its way: read afresh now.
      cache.invalidate({ kind: 'history', sessionId });
      for (const userId of userIds) cache.invalidate({ kind: 'state', userId });
    }
    const fencedOut = () => new FencedOut(`another process took conversation ${conversationId} over while this turn ran; it stores and sends nothing more`);
    return {
      fence,
      takenFromAnother,
      paused: outcome.paused === true,
      check: async (tx) => {
        if (!(await tx.claims.holds(fence))) throw fencedOut();
      },
      end: async (tx) => {
        if (!(await tx.claims.releaseIfHeld(fence))) throw fencedOut();
      },
    };
  }

  /**
   * Ends a turn's claim when its closing write did not (it failed, or the turn carries out a reply plan after it).
   * Never throws: a release the database refused is tried again with the next renewal.
   */
  async release(claim: TurnClaim): Promise<void> {
    try {
      await this.#options.store.claims.release(claim.fence);
    } catch (error) {
      this.#unreleased.set(keyOf(claim.fence), claim.fence);
      this.#options.logger.warn(
        { err: error, conversationId: claim.fence.conversationId },
        'could not release a conversation claim; trying again with the next heartbeat',
      );
    }
  }

  /** The heartbeat's part: releases what could not be released, then renews the claims of running turns. */
  async renew(): Promise<void> {
    const { store, owner, leaseMs } = this.#options;
    for (const [key, fence] of this.#unreleased) {
      await store.claims.release(fence);
      this.#unreleased.delete(key);
    }
    await store.heartbeat.claims.renew(owner, this.#now(), leaseMs);
  }
}

function keyOf(fence: ConversationFence): string {
  return `${fence.channel}\u0000${fence.conversationId}`;
}
