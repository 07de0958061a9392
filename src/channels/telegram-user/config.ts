import { z } from 'zod';
import { leaseSchema } from '../../platform/held-lease.js';
import { transcriptionSchema } from '../telegram/transcription-settings.js';

/**
 * Someone the Telegram user account answers: a user id (a number, or its digits as a string, since JSON cannot hold
 * every id exactly) or a username (`@Some_Name` → `some_name`: usernames are case-insensitive, 4–32 characters).
 */
const telegramPeer = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const text = String(value).trim();
  if (/^\d{1,20}$/.test(text) && text !== '0') return text;
  if (/^@?[A-Za-z][A-Za-z0-9_]{3,31}$/.test(text)) return text.replace(/^@/, '').toLowerCase();
  ctx.addIssue({ code: 'custom', message: `"${text}" is neither a Telegram user id (digits) nor a Telegram username such as @alice_smith` });
  return z.NEVER;
});

/**
 * A person's own Telegram account (MTProto, mtcute): the agent answers private chats as that account, paced
 * like a person. On when `apiId` and `apiHash` are set (TELEGRAM_API_ID / TELEGRAM_API_HASH); sign in first
 * with `palaver telegram login`. See docs/telegram-user-account.md.
 */
export const telegramUserConfigSchema = z
  .strictObject({
    /**
     * Unset: on when `apiId` and `apiHash` are set. `false`: off even with them (`palaver chat` turns it off, so a
     * terminal chat never takes the session from a running server). `true` without them is refused.
     */
    enabled: z.boolean().optional(),
    /** From my.telegram.org → "API development tools" (better: TELEGRAM_API_ID). */
    apiId: z.number().int().positive('the api_id from my.telegram.org, a positive number').optional(),
    /** From my.telegram.org, 32 hex characters (better: TELEGRAM_API_HASH). A secret: scrubbed from logs. */
    apiHash: z
      .string()
      .regex(/^[0-9a-f]{32}$/i, 'the api_hash from my.telegram.org: 32 hex characters')
      .optional(),
    /**
     * SQLite file holding the MTProto session (the account's auth key), created owner-only (mode 0600). Default:
     * `telegram-user.session` beside the SQLite database, or in `data/` of the config folder for PostgreSQL.
     * Whoever has this file is signed in as the account: keep it out of backups others can read.
     */
    sessionFile: z.string().min(1).optional(),
    /**
     * Who gets answers, always in private chats only and only after they wrote first: `everyone` (default),
     * `contacts` (people in the account's contact list), or a list of user ids and @usernames. Bots, Telegram's
     * service account (777000) and the account's own messages are never answered; groups and channels never.
     */
    answer: z
      .union([z.enum(['everyone', 'contacts']), z.array(telegramPeer).min(1, 'name at least one user id or @username, or use "everyone"')], {
        // A list's own problem (which entry is wrong) rather than zod's "Invalid input" for a failed union.
        error: (issue) =>
          (issue.code === 'invalid_union' && Array.isArray(issue.input) ? issue.errors[1]?.[0]?.message : undefined) ??
          '"everyone", "contacts", or a list of user ids and @usernames',
      })
      .default('everyone'),
    /**
     * When the account's owner writes in a chat by hand (from a phone), the agent stays quiet in that chat for this
     * many minutes; what arrives meanwhile is stored, not answered. 0: the agent never steps back.
     */
    ownerTakeoverMinutes: z.number().int().min(0).max(10_080).default(30),
    /** Overrides `agent.replies` for the user account (`text` or `actions`). */
    replies: z.enum(['text', 'actions']).optional(),
    /**
     * Import this many of a chat's last messages (both sides, no turn, no cost) before its first turn, so an agent
     * taking over an existing chat knows what was said. 0: off. `palaver telegram sync` imports on demand.
     */
    importHistoryOnFirstContact: z.number().int().min(0).max(1_000).default(0),
    /**
     * A turn starts only after this many ms without a new message in the chat: one answer to a burst, and no
     * machine-fast replies (Telegram limits accounts that answer faster than a person could).
     */
    quietWindowMs: z.number().int().min(0).max(60_000).default(2_500),
    /** The longest the first message of a burst waits while more keep coming. Default 4 × quietWindowMs. */
    maxWaitMs: z.number().int().min(0).max(600_000).optional(),
    /**
     * FLOOD_WAIT up to this many seconds is waited out inside the send; a longer one leaves the reply in the outbox
     * and it is sent when Telegram allows (never dropped, never an error to the person).
     */
    floodWaitInlineMaxSeconds: z.number().int().min(0).max(300).default(10),
    /** Voice and round video transcription; unset: the same as `channels.telegram.transcription`. */
    transcription: transcriptionSchema.optional(),
    /**
     * The session's lease (one MTProto session runs in one process): a start finding it held by a process that
     * stopped renewing it waits for it to run out (about 3 s) rather than failing.
     */
    lease: leaseSchema,
  })
  .refine((user) => (user.apiId === undefined) === (user.apiHash === undefined), {
    message: 'set both apiId and apiHash (TELEGRAM_API_ID / TELEGRAM_API_HASH), or neither',
    path: ['apiHash'],
  })
  .refine((user) => user.enabled !== true || user.apiId !== undefined, {
    message:
      'enabled is true but apiId and apiHash are missing: get them at my.telegram.org ("API development tools") and set TELEGRAM_API_ID / TELEGRAM_API_HASH',
    path: ['apiId'],
  })
  .prefault({});

export type TelegramUserConfig = z.infer<typeof telegramUserConfigSchema>;

/** Whether the Telegram user-account channel runs: credentials set and not turned off. */
export function telegramUserEnabled(user: TelegramUserConfig): boolean {
  return user.enabled !== false && user.apiId !== undefined && user.apiHash !== undefined;
}
