import { z } from 'zod';

/** Messages per window: `{ messages: 30, per: "hour" }`. */
const rate = z.strictObject({
  /** Messages a person may send within any window of `per`; more are stored and not answered. */
  messages: z.number().int().min(1).max(100_000),
  /** The sliding window: the last minute, hour or day before each message. */
  per: z.enum(['minute', 'hour', 'day']),
});

/**
 * `limits.perPerson`: how fast one person may use the agent (off by default). Counted per user Palaver resolved (not
 * per account a client names), in the database, so every process on it counts the same messages.
 *
 * @example
 * limits: { perPerson: { messages: 30, per: 'hour', channels: { telegram: { messages: 10, per: 'minute' } },
 *   exempt: { users: ['01J…'], accounts: ['telegram:12345'] } } }
 */
export const personLimitsSchema = rate.extend({
  /**
   * A channel's own limit in place of the one above (its messages are then counted apart from the other channels'),
   * or `false`: no limit on that channel.
   */
  channels: z.record(z.string().min(1), z.union([rate, z.literal(false)])).default({}),
  /** Who is never limited: user ids, and channel accounts written `channel:accountId` (e.g. `telegram:12345`). */
  exempt: z
    .strictObject({
      users: z.array(z.string().min(1)).default([]),
      accounts: z.array(z.string().regex(/^[^:]+:.+$/, 'channel:accountId, e.g. telegram:12345')).default([]),
    })
    .prefault({}),
});

export type PersonLimitsConfig = z.infer<typeof personLimitsSchema>;
