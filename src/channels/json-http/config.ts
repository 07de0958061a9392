import { z } from 'zod';

/**
 * A JSON-over-HTTP channel for your own backend (`channels.jsonHttp`): off unless turned on. Its routes sit behind
 * `server.apiKey` (loopback only without one), because the caller names the user, as `palaver.chat()` does.
 */
export const jsonHttpConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** Overrides `agent.replies` for this channel (`text` or `actions`). */
    replies: z.enum(['text', 'actions']).optional(),
    /** Where its routes live: `POST <path>/messages` and `GET <path>/replies`. */
    path: z
      .string()
      .regex(/^\/[a-z0-9/_-]*[a-z0-9_-]$/i, 'a path such as /json: a single leading /, no trailing /')
      .default('/json'),
    /** Longest reply part; longer replies are split. */
    maxMessageChars: z.number().int().min(100).max(100_000).default(4_000),
    /** Replies kept per conversation for `GET <path>/replies` (the oldest go first); the store keeps them all. */
    keepReplies: z.number().int().min(1).max(1_000).default(50),
  })
  .prefault({});

export type JsonHttpConfig = z.infer<typeof jsonHttpConfigSchema>;
