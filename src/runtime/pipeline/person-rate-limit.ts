import type { PersonRateRequest, RateLimitedKind, Store } from '../../domain/ports/store.js';
import type { Participant } from '../conversation-cache.js';

/** How long a rate window lasts, by its name in the config. */
const RATE_WINDOW_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** Messages per window, as `limits.perPerson` gives them. */
interface PersonRate {
  readonly messages: number;
  readonly per: keyof typeof RATE_WINDOW_MS;
}

/** `limits.perPerson` as the runtime reads it (the config's schema is in src/config/person-limits.ts). */
export interface PersonLimitsSettings extends PersonRate {
  /** A channel's own limit (counted apart), or `false`: none there. */
  readonly channels: Readonly<Record<string, PersonRate | false>>;
  readonly exempt: { readonly users: readonly string[]; readonly accounts: readonly string[] };
}

/** The window a person's message of a channel is counted in, without the message's time. */
export type PersonRateRule = Omit<PersonRateRequest, 'userId' | 'at'>;

/**
 * `limits.perPerson`: which limit a person's message falls under, and the count itself, made inside the transaction
 * that accepts the message (so two processes accepting at once cannot both let the last allowed message through).
 * Counted per user the server resolved: a person cannot get a fresh count by naming another account.
 */
export class PersonRateLimit {
  readonly #config: PersonLimitsSettings;
  readonly #exemptUsers: ReadonlySet<string>;
  readonly #exemptAccounts: ReadonlySet<string>;

  constructor(config: PersonLimitsSettings) {
    this.#config = config;
    this.#exemptUsers = new Set(config.exempt.users);
    this.#exemptAccounts = new Set(config.exempt.accounts);
  }

  /**
   * The rule a message of `participant` on `channel` is counted under; undefined when none applies: the channel has
   * `false`, or the person is exempt (their user id, or one of their linked accounts, is allowlisted).
   */
  ruleFor(channel: string, participant: Participant, accountId: string): PersonRateRule | undefined {
    if (this.#exemptUsers.has(participant.user.id)) return undefined;
    if (this.#exemptAccounts.has(`${channel}:${accountId}`)) return undefined;
    if (participant.accounts.some((account) => this.#exemptAccounts.has(`${account.channel}:${account.accountId}`))) return undefined;
    const own = this.#config.channels[channel];
    if (own === false) return undefined;
    const rate = own ?? this.#config;
    // A channel with its own limit is counted apart from the others; the rest share one count.
    return { scope: own === undefined ? '*' : channel, limit: rate.messages, windowMs: RATE_WINDOW_MS[rate.per] };
  }

  /**
   * Counts an accepted message in its transaction; when the limit stops it, marks it so that whoever answers it
   * answers without the model, and says how. Undefined: admitted.
   */
  async count(tx: Store, inboundId: string, userId: string, rule: PersonRateRule, at: Date): Promise<RateLimitedKind | undefined> {
    const outcome = await tx.personRate.take({ ...rule, userId, at: at.getTime() });
    if (outcome.admitted) return undefined;
    const kind: RateLimitedKind = outcome.notice ? 'notice' : 'silent';
    await tx.personRate.mark(inboundId, kind);
    return kind;
  }
}
