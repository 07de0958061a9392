import { z } from 'zod';
import { ATTACHMENT_TYPES } from './attachment-check.js';

/** The web chat page and AG-UI over SSE on Palaver's HTTP server. */
export const webConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    /** Overrides `agent.replies` for this channel (`text` or `actions`). */
    replies: z.enum(['text', 'actions']).optional(),
    /**
     * Also send each tool call's progress as a server-sent event named `control`, `{ type: "tool", status, … }`, for
     * clients written to that design (seed 002); the tool's name only with `server.showToolDetails`. Off by default:
     * an AG-UI client that reads every `data:` line would meet an event it does not know.
     */
    controlEvents: z.boolean().default(false),
    /**
     * HMAC-SHA256 key that signs visitor cookies (better: PALAVER_COOKIE_SECRET). When unset, one is generated
     * and kept in `cookieSecretFile`, so visitors keep their identity across restarts.
     */
    cookieSecret: z.string().min(32, 'use at least 32 characters').optional(),
    /**
     * Where a generated cookie secret is kept. Default: `web-cookie-secret` beside the SQLite file; `data/` in
     * the config folder (or working folder) for PostgreSQL; none (in memory) for `sqlite::memory:`.
     */
    cookieSecretFile: z.string().min(1).optional(),
    /** Signed user tokens (JWT) from a site that embeds the chat, sent as `x-palaver-user-token`. */
    userTokens: z
      .strictObject({
        /** HS256 shared secret (better: PALAVER_USER_TOKEN_SECRET). */
        secret: z.string().min(32, 'use at least 32 characters').optional(),
        /** JWKS of the issuer, for asymmetric tokens (RS256, ES256, EdDSA, …). */
        jwksUrl: z.url({ protocol: /^https?$/ }).optional(),
        /** Required `iss` when set. */
        issuer: z.string().min(1).optional(),
        /** Required `aud` when set. */
        audience: z.string().min(1).optional(),
      })
      .refine((tokens) => (tokens.secret === undefined) !== (tokens.jwksUrl === undefined), 'set exactly one of secret and jwksUrl')
      .optional(),
    /**
     * Origins (scheme://host[:port]) of other sites allowed to call /agui and /conversations from a browser;
     * they get CORS headers. The page's own origin needs no entry.
     */
    allowedOrigins: z.array(z.string().refine(isOrigin, 'an origin such as https://shop.example (scheme, host and port only)')).optional(),
    /**
     * Host names (optionally with :port) this server answers to, besides loopback names, IP addresses and
     * `server.host`; any other `Host` is refused (DNS rebinding). Add the public name behind a reverse proxy.
     */
    allowedHosts: z.array(z.string().regex(/^[a-z0-9.-]+(:\d{1,5})?$/i, 'a host name, optionally with :port')).optional(),
    /** The chat page's accent colour (buttons, the person's bubbles, links), as a CSS hex colour. */
    accentColor: z
      .string()
      .regex(/^#([0-9a-f]{3}|[0-9a-f]{4}|[0-9a-f]{6}|[0-9a-f]{8})$/i, 'a CSS hex colour such as #2f6feb')
      .optional(),
    /** A logo beside the agent's name on the chat page: an http(s) URL, or a path on this server (`/logo.svg`). */
    logoUrl: z.union([z.url({ protocol: /^https?$/ }), z.string().regex(/^\/(?!\/)\S*$/, 'a path starting with a single /')]).optional(),
    /**
     * Shown in the chat before the first message (not sent to the model, not stored): one text, or one per language
     * (`{ en: "Hi!", de: "Hallo!" }`), picked like the page's own texts from the browser's languages, then
     * `agent.language`, then the first listed.
     */
    greeting: localisedSchema(z.string().trim().min(1).max(1_000)).optional(),
    /** Up to 6 short questions shown under the greeting; one clicked is sent as the person's message. Same choice of language. */
    suggestedPrompts: localisedSchema(z.array(z.string().trim().min(1).max(200)).max(6)).optional(),
    /**
     * Images and files a person attaches to a message. The bytes are checked on the server (their signature decides
     * the type, not what the browser says), stored with the conversation and, for images, sent to models that accept
     * images (`model.images`).
     */
    attachments: z
      .strictObject({
        enabled: z.boolean().default(true),
        /** What may be attached, by type; checked against the bytes' signature. */
        types: z.array(z.enum(ATTACHMENT_TYPES)).min(1).default(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf']),
        /** Largest file, in bytes (default 5 MiB). */
        maxFileBytes: z
          .number()
          .int()
          .min(1_024)
          .max(20 * 1024 * 1024)
          .default(5 * 1024 * 1024),
        /** Files in one message. */
        maxFilesPerMessage: z.number().int().min(1).max(10).default(4),
        /** What one browser caller (a visitor or a token user) may have stored in all, in bytes (default 25 MiB). */
        maxStoredBytesPerVisitor: z
          .number()
          .int()
          .min(1_024)
          .default(25 * 1024 * 1024),
        /** Bytes all browser callers from one address may attach in an hour (default 100 MiB; 0: no limit). */
        maxBytesPerHourPerAddress: z
          .number()
          .int()
          .min(0)
          .default(100 * 1024 * 1024),
        /**
         * Messages with files this process reads at once, in all and from one address: their bodies are read before
         * any other limit can apply, so these bound the memory uploads can take (defaults 8 and 2).
         */
        maxUploadsAtOnce: z.number().int().min(1).max(1_000).default(8),
        maxUploadsPerAddress: z.number().int().min(1).max(100).default(2),
      })
      .prefault({}),
    /**
     * How the page names an operator who writes in a conversation (through the admin API): one text or one per
     * language. Default: "Support team" in the person's language.
     */
    operatorName: localisedSchema(z.string().trim().min(1).max(80)).optional(),
    /** Show the operator's own name (as the audit names them: their account's) instead of `operatorName`. */
    showOperatorNames: z.boolean().default(false),
    /** The chat on other sites: the widget (`/widget.js`) and its frame (`/embed`). */
    embed: z
      .strictObject({
        /**
         * Origins (scheme://host[:port]) of the sites whose pages may show the chat in a frame; sent as the
         * frame's `Content-Security-Policy: frame-ancestors`. Empty (the default): no site may frame it.
         */
        allowedOrigins: z.array(z.string().refine(isOrigin, 'an origin such as https://shop.example (scheme, host and port only)')).default([]),
      })
      .prefault({}),
    /**
     * What one browser caller (a visitor or a token user; never a server client) and one client address may
     * hold, counted by each process: beyond them a run is refused with 429 and a text in the person's language.
     */
    limits: z
      .strictObject({
        /** Runs (messages waiting for their answer) one caller may have open at once. */
        runsPerVisitor: z.number().int().min(1).max(1_000).default(4),
        /** Runs all callers from one address (IPv6: one /64) may have open at once; 0: no limit. */
        runsPerAddress: z.number().int().min(0).max(100_000).default(16),
        /** New conversations one caller may start in an hour. */
        newConversationsPerHourPerVisitor: z.number().int().min(1).max(100_000).default(20),
        /** New conversations all callers from one address may start in an hour; 0: no limit. */
        newConversationsPerHourPerAddress: z.number().int().min(0).max(1_000_000).default(100),
        /** Chat pages all callers from one address may hold open between runs (`/conversations/events`); 0: no limit. */
        openPagesPerAddress: z.number().int().min(0).max(100_000).default(32),
      })
      .prefault({}),
  })
  .prefault({});

export type WebConfig = z.infer<typeof webConfigSchema>;

/** One value, or one per language tag (`en`, `pt-BR`): at least one. */
function localisedSchema<T extends z.ZodType>(value: T) {
  return z.union([value, z.record(z.string().regex(/^[a-z]{2,3}(-[a-z0-9]{2,8})*$/i, 'a language tag such as en or pt-BR'), value)]);
}

/** `https://shop.example`, `http://localhost:5173`: a URL that is its own origin. */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value.replace(/\/$/, '').toLowerCase();
  } catch {
    return false;
  }
}
