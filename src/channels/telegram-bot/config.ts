import { z } from 'zod';
import { leaseSchema } from '../../platform/held-lease.js';
import { transcriptionSchema } from '../telegram/transcription-settings.js';

/**
 * The Telegram bot (grammY). On when a token is set (better: TELEGRAM_BOT_TOKEN). See "Telegram" in the README.
 */
export const telegramBotConfigSchema = z
  .strictObject({
    /** Off: no Telegram channel even with a token (`palaver chat` turns it off, so it never polls beside `start`). */
    enabled: z.boolean().default(true),
    /** Overrides `agent.replies` for this channel (`text` or `actions`). */
    replies: z.enum(['text', 'actions']).optional(),
    /** The bot token from @BotFather (better: TELEGRAM_BOT_TOKEN). Without one the channel is off. */
    token: z
      .string()
      .regex(/^\d+:[A-Za-z0-9_-]+$/, 'a bot token as @BotFather gives it: digits, a colon, then letters, digits, _ or -')
      .optional(),
    /** Bot API root (TELEGRAM_API_ROOT): a self-hosted Bot API server, or a fake one in tests. */
    apiRoot: z.url({ protocol: /^https?$/ }).default('https://api.telegram.org'),
    /** `polling` (default; long polling, offset kept in the database) or `webhook` (default when webhookUrl is set). */
    mode: z.enum(['polling', 'webhook']).optional(),
    /** Public HTTPS URL of POST /telegram/webhook on this server (TELEGRAM_WEBHOOK_URL); registered at start. */
    webhookUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** Checked against X-Telegram-Bot-Api-Secret-Token on every webhook request (TELEGRAM_WEBHOOK_SECRET). */
    webhookSecret: z
      .string()
      .regex(/^[A-Za-z0-9_-]{16,256}$/, '16 to 256 characters: letters, digits, _ or -')
      .optional(),
    /** A turn starts only after this many ms without a new message in the chat (one answer to a burst). */
    quietWindowMs: z.number().int().min(0).max(60_000).default(2_500),
    /** The longest the first message of a burst waits while more keep coming. Default 4 × quietWindowMs. */
    maxWaitMs: z.number().int().min(0).max(600_000).optional(),
    groups: z
      .strictObject({
        /** `mention`: answer a group message only when it mentions or replies to the bot; `all`: every message. */
        answer: z.enum(['mention', 'all']).default('mention'),
      })
      .prefault({}),
    /** Stream the reply as a live draft in private chats (sendMessageDraft, Bot API 9.5+). */
    drafts: z.boolean().default(true),
    /** Attempts at handling one update before it is kept as a dead letter and skipped (polling goes on). */
    maxUpdateAttempts: z.number().int().min(1).max(100).default(3),
    /**
     * The longest flood wait (429 retry_after, seconds) waited out inside a send; a longer one leaves the reply
     * part in the outbox, sent when Telegram allows (the conversation's later replies queue behind it).
     */
    floodWaitInlineMaxSeconds: z.number().int().min(0).max(3_600).default(30),
    /** OpenAI-compatible /audio/transcriptions for voice and audio messages; defaults to the model's endpoint. */
    transcription: transcriptionSchema.prefault({}),
    /**
     * Polling mode with several processes on one database: the polling lease. One process polls; the others
     * stand by (they still send the replies of the turns they run) and take over when it stops or dies.
     */
    lease: leaseSchema,
  })
  .refine((telegram) => !(telegram.mode === 'polling' && telegram.webhookUrl !== undefined), {
    message: 'webhookUrl is set but mode is "polling": drop one (Telegram sends no updates to getUpdates while a webhook is set)',
    path: ['webhookUrl'],
  })
  .refine(
    (telegram) =>
      telegram.token === undefined || (telegram.mode ?? (telegram.webhookUrl ? 'webhook' : 'polling')) === 'polling' || telegram.webhookSecret !== undefined,
    {
      message: 'webhook mode needs webhookSecret (TELEGRAM_WEBHOOK_SECRET): without it anyone could post updates',
      path: ['webhookSecret'],
    },
  )
  .prefault({});

export type TelegramBotConfig = z.infer<typeof telegramBotConfigSchema>;
