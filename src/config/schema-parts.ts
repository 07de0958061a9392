import { z } from 'zod';

/**
 * Schema pieces more than one part of the config uses (the shared parts; each channel plug-in brings its own slice,
 * see src/channels/registry.ts).
 */

/** OpenAI-compatible /audio/transcriptions for voice and audio messages; defaults to the model's endpoint. */
export const transcriptionSchema = z.strictObject({
  baseUrl: z.url().optional(),
  apiKey: z.string().min(1).optional(),
  model: z.string().min(1).default('whisper-1'),
});

/**
 * The lease that lets one process of several on one database do what only one may (poll the bot's updates, run the
 * user account's MTProto session): renewed every `renewEveryMs`, run out `ttlMs` after the last renewal, tried by
 * the processes standing by every `retryEveryMs`. A holder killed without a word is replaced within
 * `ttlMs + retryEveryMs` (3 s with the defaults). See docs/telegram-several-processes.md.
 */
export const leaseSchema = z
  .strictObject({
    ttlMs: z.number().int().min(200).max(600_000).default(2_500),
    renewEveryMs: z.number().int().min(50).max(300_000).default(1_000),
    retryEveryMs: z.number().int().min(50).max(300_000).default(500),
  })
  .refine((lease) => lease.renewEveryMs * 2 <= lease.ttlMs, {
    message: 'renewEveryMs must be at most half of ttlMs, so that one failed renewal does not lose the lease',
    path: ['renewEveryMs'],
  })
  .prefault({});

/** `https://shop.example`, `http://localhost:5173`: a URL that is its own origin. */
export function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value.replace(/\/$/, '').toLowerCase();
  } catch {
    return false;
  }
}

export type TranscriptionSettings = z.infer<typeof transcriptionSchema>;
