import { isIP } from 'node:net';
import { z } from 'zod';
import { DEFAULT_MAX_TOOL_RESULT_CHARS } from '../domain/tool-result-cap.js';
import { canonicalLanguageTag, checkTimeZone, isCountryCode } from '../i18n/locale-codes.js';
import { channelsConfigSchema } from '../channels/registry.js';
import { dialectOfUrl } from '../store/dialects.js';
import { normaliseDatabaseUrl } from './database-url.js';
import { personLimitsSchema } from './person-limits.js';

const providerKind = z.enum(['openai-chat', 'openai-responses']);
/** The primary model may also be `scripted`: Palaver's built-in offline model (docs/models.md#the-offline-model). */
const primaryProviderKind = z.enum([...providerKind.options, 'scripted']);

const decimalString = (example: string) => z.string().regex(/^\d+(\.\d+)?$/, `a decimal number as a string, e.g. "${example}"`);
/** The built-in USD rate, behind the default CN → CNY billing mapping. */
const DEFAULT_USD_RATES: Readonly<Record<string, string>> = { CNY: '7.10' };

/** ISO 4217 codes this Node's Intl knows; made on first use. */
let currencyCodes: ReadonlySet<string> | undefined;
const currencyCode = z
  .string()
  .regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as USD')
  .refine((code) => (currencyCodes ??= new Set(Intl.supportedValuesOf('currency'))).has(code), 'not an ISO 4217 currency code (e.g. USD, EUR, CNY)');
const countryCode = z
  .string()
  .regex(/^[A-Z]{2}$/, 'an ISO 3166-1 alpha-2 code such as CN')
  .refine(isCountryCode, 'not an ISO 3166-1 country code (e.g. UA, US, CN)');
/** An IANA zone, checked at start (a misspelt one would fail every turn later) and kept in its canonical spelling. */
const timeZoneName = z.string().transform((zone, ctx) => {
  const checked = checkTimeZone(zone);
  if ('zone' in checked) return checked.zone;
  ctx.addIssue({ code: 'custom', message: checked.problem });
  return z.NEVER;
});
/** A BCP-47 tag, checked at start and kept in canonical case. */
const languageTagName = z.string().transform((tag, ctx) => {
  const canonical = canonicalLanguageTag(tag);
  if (canonical !== undefined) return canonical;
  ctx.addIssue({ code: 'custom', message: `"${tag}" is not a BCP-47 language tag (e.g. en, en-US, zh-Hant-TW)` });
  return z.NEVER;
});

/** Price of a model in USD per million tokens; decimal strings so no float rounding. */
const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
type Weekday = (typeof WEEKDAYS)[number];

/** "09:00-18:00": a day's working hours, start before end. */
const hoursRange = z
  .string()
  .regex(/^([01]\d|2[0-3]):[0-5]\d-(([01]\d|2[0-3]):[0-5]\d|24:00)$/, 'a range of hours, e.g. "09:00-18:00"')
  .refine((range) => range.slice(0, 5) < range.slice(6), 'the range must end after it starts');

const priceSchema = z.strictObject({
  input: decimalString('0.40'),
  output: decimalString('1.60'),
  /** Input tokens read from the provider's prompt cache; `input` when not set. */
  cachedInput: decimalString('0.10').optional(),
});

const modelEndpointSchema = z.strictObject({
  provider: providerKind.default('openai-chat'),
  /** Model name sent to the endpoint. */
  name: z.string().min(1),
  /** Any OpenAI-compatible base URL (OpenAI, xAI, Ollama, vLLM, llama.cpp). Defaults to OpenAI's. */
  baseUrl: z.url().optional(),
  apiKey: z.string().min(1).optional(),
  timeoutMs: z.number().int().positive().default(60_000),
  maxRetries: z.number().int().min(0).max(10).default(2),
  temperature: z.number().min(0).max(2).optional(),
  /** Nucleus sampling, sent as `top_p`: only the likeliest tokens whose probabilities add up to it are drawn from. */
  topP: z.number().gt(0).max(1).optional(),
  /**
   * The most tokens one call may write (reasoning included), sent to the endpoint (`max_output_tokens`,
   * `max_completion_tokens`). Unset: the endpoint's own limit, or 4096 while budgets are on (a call's cost must
   * have a ceiling to be reserved; see docs/costs.md).
   */
  maxOutputTokens: z.number().int().positive().optional(),
  /**
   * Whether the model reads images: a person's attached images then go with their message (Chat Completions
   * `image_url`, Responses `input_image` parts); the default. `false`: they are named in the text only (`[image: cat.png]`).
   */
  images: z.boolean().optional(),
});

/** A stage's model: its name, and what differs from the primary model (the rest is inherited, so no defaults here). */
const stageModelSchema = z.strictObject({
  name: z.string().min(1),
  provider: providerKind.optional(),
  baseUrl: z.url().optional(),
  apiKey: z.string().min(1).optional(),
  timeoutMs: z.number().int().positive().optional(),
  maxRetries: z.number().int().min(0).max(10).optional(),
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().gt(0).max(1).optional(),
  maxOutputTokens: z.number().int().positive().optional(),
});

export const configSchema = z
  .strictObject({
    agent: z
      .strictObject({
        name: z.string().min(1).default('Palaver agent'),
        /** Folder with `base.md` (always used) and one `<role>.md` per role. */
        instructionsDir: z.string().min(1).default('instructions'),
        /** Role used before a tool sets one; `null` means only the base instructions. */
        defaultRole: z.string().min(1).nullable().default(null),
        /** How many earlier display messages of the conversation the model sees. */
        historyLimit: z.number().int().min(0).max(1000).default(20),
        /**
         * Estimated tokens (each message's stored `tokenEstimate`) the earlier display messages the model sees may
         * take together: the newest that fit both this and `historyLimit`, whole messages only. 0: no token bound.
         */
        historyTokenLimit: z.number().int().min(0).default(8000),
        /** Each of the person's messages the model sees shows when it was written, in their zone: `[Fri 2025-03-14 09:05] …`. */
        historyTimes: z.boolean().default(false),
        /** What the agent keeps of a long conversation beyond the history it is sent (docs/long-conversations.md). */
        memory: z
          .strictObject({
            /**
             * Rolling summaries of the older part of a conversation, written by a model call after a turn (never
             * delaying its reply); the next turns read the newest summary before the history. Off when absent.
             */
            summarize: z
              .strictObject({
                /** A new summary is written once the display messages older than `keepRecentMessages` and not yet summarised estimate more tokens than this. */
                afterTokens: z.number().int().min(1),
                /** The newest messages a summary never covers: the model reads them as they were written. */
                keepRecentMessages: z.number().int().min(0).max(1000),
                /** The model that writes summaries, on the primary model's provider, endpoint and key; the primary model when absent. */
                model: z.string().min(1).optional(),
              })
              .optional(),
          })
          .prefault({}),
        /** Model ⇄ tool rounds per turn before the loop stops. */
        maxToolRounds: z.number().int().min(1).max(50).default(8),
        /**
         * Longest model reply in characters (UTF-16 units, as channels count them); a longer one is cut at a paragraph,
         * sentence or word boundary and ends with a short notice. 16 000 is about four Telegram messages or 4 000
         * tokens of prose: more than a chat answer needs, and a runaway model cannot flood a chat or the database.
         */
        maxReplyChars: z.number().int().min(200).max(1_000_000).default(16_000),
        /** IANA zone for users without a profile zone. */
        timezone: timeZoneName.default('UTC'),
        /** BCP-47 language for users without a profile language. */
        language: languageTagName.default('en'),
        /** A JS or TypeScript module exporting `tools` (an array made with `defineTool`); TypeScript loads on Node 22.18+ and 24 (type stripping), elsewhere through tsx installed in your project. */
        toolsModule: z.string().min(1).optional(),
        /** Palaver's built-in tools the agent is given: `handoff` lets the model hand the conversation to a person. */
        tools: z.array(z.enum(['handoff'])).default([]),
        /** Tool calls per turn across all tools; past it a call is refused and the model is told why. */
        maxToolCallsPerTurn: z.number().int().min(1).max(200).default(16),
        /** Calls of any one tool per turn. */
        maxCallsPerTool: z.number().int().min(1).max(200).default(8),
        /**
         * How a turn runs: `single` is the model ⇄ tools loop with the role re-run; `staged` is intent → execution →
         * organization, each stage on the model `staged.types[agent.type]` names.
         */
        flow: z.enum(['single', 'staged']).default('single'),
        /** The agent's type: picks the stage models of the staged flow from `staged.types`. */
        type: z.string().min(1).optional(),
        /**
         * How the model answers: `text` is one reply (split to the channel's limit); `actions` is a checked plan of
         * actions Palaver carries out in order (type, send short messages, react, wait, or not answer). A channel may
         * override it (`channels.<name>.replies`).
         */
        replies: z.enum(['text', 'actions']).default('text'),
        /** Limits and pacing of replies as actions (`replies: "actions"`). */
        actions: z
          .strictObject({
            /** Most actions in one plan; each message of a `send_messages` counts as one. */
            maxActions: z.number().int().min(1).max(50).default(10),
            /** Longest single `wait` or `fake_typing`, in seconds. */
            maxWaitSeconds: z.number().min(0).max(300).default(30),
            /** Longest total of waits and typing in one plan, in seconds; the typing shown before messages counts too. */
            maxTotalWaitSeconds: z.number().min(0).max(600).default(60),
            /** Typing shown before each message lasts its length at this speed (0: no typing before messages). */
            typingCharsPerSecond: z.number().min(0).max(1_000).default(25),
            /** Longest typing shown before one message, in seconds. */
            maxTypingSeconds: z.number().min(0).max(60).default(6),
            /** A new message from the person drops the plan's remaining waits and sends (recorded as not sent). */
            interruptOnNewMessage: z.boolean().default(false),
            /** After the one repair attempt fails: `silence` sends nothing (seed 004), `apologise` sends the apology. */
            onInvalidActions: z.enum(['silence', 'apologise']).default('silence'),
          })
          .prefault({}),
      })
      .superRefine((agent, ctx) => {
        const summarize = agent.memory.summarize;
        // The messages between would be neither summarised nor sent to the model.
        if (summarize !== undefined && summarize.keepRecentMessages > agent.historyLimit)
          ctx.addIssue({
            code: 'custom',
            path: ['memory', 'summarize', 'keepRecentMessages'],
            message: `must not exceed agent.historyLimit (${agent.historyLimit}): the messages kept out of summaries must fit in the history the model is sent`,
          });
      })
      .prefault({}),
    /**
     * Roles: each has an instructions file `<instructionsDir>/<role>.md` and an allowlist of tool names across
     * local and MCP sources. With no roles configured every tool is offered.
     */
    roles: z
      .strictObject({
        definitions: z
          .record(z.string().regex(/^[a-z][a-z0-9_-]*$/, 'lower-case letters, digits, _ or -'), z.strictObject({ tools: z.array(z.string()).default([]) }))
          .default({}),
        /** Tools offered before a role is known (e.g. `set_role`). */
        withoutRole: z.array(z.string()).default([]),
        /** A tool whose successful call sets the user's role from its `roleArgument` argument. */
        setRoleTool: z.string().default('set_role'),
        roleArgument: z.string().default('role'),
      })
      .prefault({}),
    /**
     * Conversation stages and entities in focus (hidden context): the stage is found by rules (or `classifier`); a stage that `needs`
     * an entity type has it loaded with its tool and shown to the model only, and tool arguments named in
     * `idArguments` must be ids from it.
     */
    focus: z
      .strictObject({
        stages: z
          .array(
            z.strictObject({
              id: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'lower-case letters, digits, _ or -'),
              /** What the stage is about, shown to the classification call (`classifier`). */
              description: z.string().min(1).optional(),
              keywords: z.array(z.string().min(1)).default([]),
              afterTools: z.array(z.string().min(1)).default([]),
              scenario: z.string().min(1).optional(),
              needs: z.array(z.string().min(1)).default([]),
              /** Nothing in focus: answer with `emptyReply` (per language) or Palaver's own text, without the model. */
              viewing: z.boolean().default(false),
              emptyReply: z.record(z.string().min(2), z.string().min(1)).optional(),
            }),
          )
          .default([]),
        entities: z
          .array(
            z.strictObject({
              type: z.string().min(1),
              loadTool: z.string().min(1),
              ttlSeconds: z.number().int().positive().default(300),
              refreshAfter: z.array(z.string().min(1)).default([]),
              /** Tool name → the arguments that must hold an id of this type in focus. */
              idArguments: z.record(z.string().min(1), z.array(z.string().min(1))).default({}),
            }),
          )
          .default([]),
        /**
         * A cheap classification call (structured output, no tools) that picks the stage when no keyword or last-tool
         * rule matched; on its failure the default stage applies. `model` inherits the rest from `model`.
         */
        classifier: z
          .strictObject({
            enabled: z.boolean().default(false),
            model: stageModelSchema.optional(),
            /** How many of the last messages of the conversation it sees. */
            recentMessages: z.number().int().min(1).max(50).default(6),
          })
          .prefault({}),
      })
      .superRefine((focus, ctx) => {
        const types = new Set(focus.entities.map((entity) => entity.type));
        focus.stages.forEach((stage, index) => {
          for (const needed of stage.needs) {
            if (!types.has(needed)) ctx.addIssue({ code: 'custom', path: ['stages', index, 'needs'], message: `no entity type "${needed}" in focus.entities` });
          }
        });
      })
      .prefault({}),
    /**
     * Profile settings (see "Profiles and language" in the README): what a new profile starts with when neither the
     * person nor their channel's language hint says otherwise. Unset values fall back to agent.language and agent.timezone.
     */
    profiles: z
      .strictObject({
        defaults: z
          .strictObject({
            /** Language of Palaver's own texts; agent.language when unset. */
            interfaceLanguage: languageTagName.optional(),
            /** Language the agent answers in; interfaceLanguage when unset. */
            aiLanguage: languageTagName.optional(),
            /** IANA zone; agent.timezone when unset. */
            timeZone: timeZoneName.optional(),
            /** ISO 3166-1 alpha-2 code; none when unset. */
            country: z.string().refine(isCountryCode, 'an ISO 3166-1 alpha-2 country code such as UA or US').optional(),
          })
          .prefault({}),
      })
      .prefault({}),
    /**
     * Reset triggers: a message whose whole text is one of these (any language's, case ignored) starts the
     * conversation afresh and is answered by Palaver, without the model. Setting `triggers` replaces the defaults.
     */
    reset: z
      .strictObject({
        triggers: z
          .record(z.string().min(2), z.array(z.string().trim().min(1)))
          .default({ en: ['/reset', 'start over'], ru: ['начать заново'], uk: ['почати заново'], zh: ['重新开始'] }),
        /** Keep the role a tool set; false: the person starts again without one (agent.defaultRole). */
        keepRole: z.boolean().default(true),
      })
      .prefault({}),
    /** MCP servers reached over Streamable HTTP. */
    mcp: z
      .strictObject({
        servers: z
          .array(
            z
              .strictObject({
                label: z.string().regex(/^[a-zA-Z0-9_-]+$/, 'letters, digits, _ or -'),
                url: z.url(),
                /** Sent as `Authorization: Bearer …`; never logged. */
                bearerToken: z.string().min(1).optional(),
                /**
                 * Further headers on every request, hosted or local (`MCP-Protocol-Version`, a tenant id); `bearerToken`
                 * wins over an `Authorization` here. Values of credential-like names (Authorization, *token*, *key*, …) are scrubbed from logs.
                 */
                headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'a header name'), z.string()).optional(),
                timeoutMs: z.number().int().positive().default(30_000),
                /** `local`: Palaver calls the server; `hosted`: the Responses API calls it (`type: "mcp"` tool). */
                mode: z.enum(['local', 'hosted']).default('local'),
                /** Argument that carries the bound user id; a model-supplied different value is refused. */
                userIdArgument: z.string().min(1).optional(),
                allowedTools: z.array(z.string()).optional(),
                /** What people see while a tool runs, by tool name: one text, or one per language (`{ en: '…', uk: '…' }`). */
                toolLabels: z.record(z.string(), z.union([z.string().min(1), z.record(z.string(), z.string().min(1))])).optional(),
                /** Only `never`: the model provider makes a hosted server's calls, so Palaver cannot hold them (use `approval` with `mode: "local"`). */
                requireApproval: z
                  .literal('never', { error: 'only "never" is supported: Palaver cannot yet ask for approval of hosted MCP calls' })
                  .default('never'),
                /** Longest result of this server's tools, in characters; by default `tools.maxResultChars`. */
                maxResultChars: z.number().int().positive().optional(),
                /** Tools of this server whose calls someone approves first: the person asked, or an operator (docs/approvals.md). */
                approval: z.strictObject({ tools: z.array(z.string().min(1)).min(1), by: z.enum(['person', 'operator']) }).optional(),
              })
              .refine((server) => !(server.mode === 'hosted' && server.approval), {
                message: 'hosted mode cannot wait for an approval: the model provider calls the server itself. Use mode "local" for tools that need one',
                path: ['approval'],
              })
              .refine((server) => !(server.mode === 'hosted' && server.userIdArgument), {
                message:
                  'hosted mode cannot bind the user: the model provider calls the server with the model\'s arguments. Use mode "local" for tools that act for a user',
                path: ['userIdArgument'],
              }),
          )
          .default([]),
      })
      .prefault({}),
    /**
     * The staged flow (`agent.flow: "staged"`): per agent type, the model of each stage (inheriting `provider`,
     * `baseUrl` and `apiKey` from `model`, and using its fallback), and optional texts that replace the built-in stage
     * prompts.
     */
    staged: z
      .strictObject({
        types: z
          .record(z.string().min(1), z.strictObject({ intent: stageModelSchema, execution: stageModelSchema, organization: stageModelSchema }))
          .default({}),
        prompts: z
          .strictObject({ intent: z.string().min(1).optional(), execution: z.string().min(1).optional(), organization: z.string().min(1).optional() })
          .prefault({}),
      })
      .prefault({}),
    model: modelEndpointSchema.extend({
      /** `scripted`: no endpoint, no key; Palaver runs a scripted model in-process (echo, or the rules of `script`). */
      provider: primaryProviderKind.default('openai-chat'),
      /** `provider: "scripted"` only: a YAML or JSON file of reply rules (docs/models.md#the-offline-model); default: echo. */
      script: z.string().min(1).optional(),
      /** Used when the primary model fails after its retries. */
      /** Inherits `provider`, `baseUrl` and `apiKey` from the primary when it does not set them. */
      fallback: modelEndpointSchema.extend({ provider: providerKind.optional() }).optional(),
      /** Overrides of the price table, by model name (they win over `@pydantic/genai-prices`). */
      prices: z.record(z.string(), priceSchema).default({}),
    }),
    /** Which currency a user is billed in, and how USD converts into it. See "Costs and budgets" in the README. */
    billing: z
      .strictObject({
        /** Country of a user whose profile names none; without it such users pay `defaultCurrency`. */
        defaultCountry: countryCode.optional(),
        /** Billing currency by the user's country; other countries pay `defaultCurrency`. */
        currencyByCountry: z.record(countryCode, currencyCode).default({ CN: 'CNY' }),
        defaultCurrency: currencyCode.default('USD'),
        /**
         * Units of each billing currency one USD buys, as decimal strings. Every currency billed needs one (USD is 1).
         * Rates given are added to the built-in CNY rate (which backs the default CN → CNY mapping), so setting one
         * rate for your own currency does not leave that mapping without one.
         */
        usdRates: z.preprocess(
          (rates) => (rates !== null && typeof rates === 'object' && !Array.isArray(rates) ? { ...DEFAULT_USD_RATES, ...rates } : rates),
          z
            .record(
              currencyCode,
              decimalString('7.10').refine((rate) => Number(rate) > 0, 'a rate above zero'),
            )
            .default({ ...DEFAULT_USD_RATES }),
        ),
        /** Off: only `model.prices` price calls (other models cost 0) and the price table is never loaded. */
        priceTable: z.boolean().default(true),
      })
      .prefault({}),
    /**
     * Spend caps in `currency` (default `billing.defaultCurrency`), checked before every model call: the turn reserves
     * atomically what it spent plus the most the call can cost, and a call that could cross a cap is not made (the
     * person is told so). A user's day is the calendar day in their time zone. See docs/costs.md.
     */
    budgets: z
      .strictObject({
        perUserPerDay: decimalString('1.50').optional(),
        perSession: decimalString('0.50').optional(),
        /** The least a running turn holds against the caps (a floor over what its model calls reserve); default none. */
        reservePerTurn: decimalString('0.02')
          .refine((amount) => Number(amount) > 0, 'an amount above zero')
          .optional(),
        currency: currencyCode.optional(),
      })
      .prefault({}),
    database: z
      .strictObject({
        /**
         * `sqlite:<path>` (default, a file under ./data), a plain file path (read as `sqlite:<path>`), or
         * `postgres://…` / `postgresql://…`, or `mysql://…` / `mariadb://…` (MariaDB 10.11+). Other URL schemes are
         * refused.
         */
        url: z
          .string()
          .transform((url, ctx) => {
            const normalised = normaliseDatabaseUrl(url);
            if (normalised.ok) return normalised.url;
            ctx.addIssue({ code: 'custom', message: normalised.message });
            return z.NEVER;
          })
          .default('sqlite:./data/palaver.db'),
      })
      .prefault({}),
    server: z
      .strictObject({
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).max(65_535).default(3000),
        /**
         * Bearer key for /agui and /metrics. Without one, only loopback clients are served; with one, every client
         * must send it.
         */
        apiKey: z.string().min(8, 'use at least 8 characters').optional(),
        /**
         * Bearer token of the admin API (/admin: profiles, phones, roles, relinks). Without one the admin API is off.
         * Must differ from `apiKey`: whoever may chat must not thereby administer.
         */
        adminToken: z.string().min(16, 'use at least 16 characters').optional(),
        /** Send tool arguments and results to web clients. Off: they may carry hidden context. */
        showToolDetails: z.boolean().default(false),
        /**
         * Host names (optionally with :port) /health and /metrics answer to, besides loopback names, IP addresses,
         * `host` and `channels.web.allowedHosts`; any other `Host` gets 421 (DNS rebinding). Add the name a scraper
         * uses.
         */
        allowedHosts: z.array(z.string().regex(/^[a-z0-9.-]+(:\d{1,5})?$/i, 'a host name, optionally with :port')).default([]),
        /**
         * Reverse proxies in front of this server (IP addresses or CIDR ranges). From these peers only, the client's
         * address is read from `X-Forwarded-For`, for the admin sign-in limit; empty: the socket's peer is the client.
         */
        trustedProxies: z.array(z.string().refine(isAddressOrRange, 'an IP address or a CIDR range, e.g. 127.0.0.1 or 10.0.0.0/8')).default([]),
        /**
         * On SIGTERM / SIGINT (and `Palaver.close()`), how long running turns and replies still being sent may take
         * before the process goes anyway; what is left stays leased and is answered after the next start.
         */
        shutdownGraceMs: z.number().int().min(0).max(600_000).default(10_000),
      })
      .refine((server) => server.adminToken === undefined || server.adminToken !== server.apiKey, {
        message: 'must differ from server.apiKey',
        path: ['adminToken'],
      })
      .prefault({}),
    limits: z
      .strictObject({
        /** Model calls running at once across all conversations. */
        maxConcurrentModelCalls: z.number().int().min(1).max(1024).default(16),
        /**
         * Turns running at once across all conversations; more wait in the inbox, holding only their messages (a crowd
         * of thousands then costs memory per message, not per half-run turn).
         */
        maxConcurrentTurns: z.number().int().min(1).max(10_000).default(64),
        /**
         * Inbound messages being stored at once (identity, session, inbox row); more wait before the store, holding only
         * their text. Keeps a crowd's burst of first contacts from inflating memory.
         */
        maxConcurrentAccepts: z.number().int().min(1).max(10_000).default(256),
        /** Longest accepted inbound text, in characters. */
        maxInboundChars: z.number().int().min(1).default(16_000),
        /** Messages per person per minute, hour or day (off by default); see docs/long-conversations.md. */
        perPerson: personLimitsSchema.optional(),
      })
      .prefault({}),
    /**
     * The durable inbox. Each accepted message is leased to the process that answers it and the lease is renewed while
     * that process lives; after a crash the message is answered (once) when its lease has run out.
     */
    inbox: z
      .strictObject({
        /**
         * How long an accepted message, and the claim of a conversation whose turn runs, stay a process's without a
         * renewal (its heartbeat): a stopped process's work is taken over this long after its last heartbeat.
         */
        leaseMs: z.number().int().min(100).max(600_000).default(2_000),
        /**
         * Turns that may take one message (a first turn, retries of turns that failed to store, recoveries after a
         * crash), counted in the store across restarts. Retries wait a third of a lease, doubling each time; after the
         * last attempt the message is answered with an apology without asking the model again.
         */
        maxTurnAttempts: z.number().int().min(1).max(20).default(3),
      })
      .prefault({}),
    /**
     * In-process cache of participants, user states and recent histories (written through on every store write).
     * `ttlMs` bounds how long a change made by another process on the same database can go unseen.
     */
    cache: z
      .strictObject({
        maxEntries: z.number().int().min(0).default(10_000),
        ttlMs: z.number().int().min(1).default(300_000),
      })
      .prefault({}),
    /** Several Palaver processes on one database (see docs/scale-out.md). */
    cluster: z
      .strictObject({
        /**
         * How the processes tell each other what changed (so their caches forget it) and pass streamed replies on:
         * `postgres` (LISTEN/NOTIFY on the database), `redis` (pub/sub on `redis.url`), `local` (one process only), or
         * `auto` (default): `postgres` on a PostgreSQL database, `local` on SQLite, `redis` on any other database.
         */
        bus: z.enum(['auto', 'local', 'postgres', 'redis']).default('auto'),
        /**
         * How often a process renews its leases and conversation claims and looks for work a stopped process left, in
         * ms. Kept below a third of `inbox.leaseMs` (it is lowered to that when higher).
         */
        heartbeatMs: z.number().int().min(50).max(60_000).default(500),
      })
      .prefault({}),
    channels: channelsConfigSchema(),
    /** Who is talking: how channel accounts map to users. */
    identity: z
      .strictObject({
        /** Phone numbers: normalised to E.164 digits without the plus; one number belongs to one user. */
        phones: z
          .strictObject({
            /** ISO 3166-1 alpha-2 region for numbers written without a country code (`UA`: `067 123 45 67` → `380671234567`). */
            defaultRegion: z
              .string()
              .regex(/^[A-Za-z]{2}$/, 'an ISO 3166-1 alpha-2 code, e.g. "UA"')
              .transform((region) => region.toUpperCase())
              .optional(),
            /**
             * A verified phone (a channel, the admin API or a directory vouches for it) that another user owns:
             * `relink` moves the account to that user, `conflict` refuses and tells the person.
             */
            onConflict: z.enum(['relink', 'conflict']).default('conflict'),
            /** Look for a phone number in what people write (a claim: set only on a user without one, never relinks). */
            fromText: z.boolean().default(true),
            /**
             * Whether a number someone only typed counts as theirs when a verified phone later meets it (then
             * `onConflict` applies). Off, a verified phone takes a typed number away from whoever typed it: otherwise
             * anyone who types a victim's number first would receive the victim's account when the victim verifies.
             */
            trustTyped: z.boolean().default(false),
          })
          .prefault({}),
        /**
         * Who decides which user an account is: `local` (Palaver's store; the default) or `mcp`, the team's own
         * directory: a tool on its MCP server (not one of `mcp.servers`, so the model never sees it) names the user.
         */
        resolver: z
          .discriminatedUnion('kind', [
            z.strictObject({ kind: z.literal('local') }),
            z.strictObject({
              kind: z.literal('mcp'),
              /** Streamable HTTP endpoint of the directory, e.g. `https://directory.example/mcp`. */
              url: z.url({ protocol: /^https?$/ }),
              /** Called with `{ channel, account_id, phone? }`; answers `user_id` or `id`. */
              tool: z.string().min(1).default('verify_user'),
              /** Sent as `Authorization: Bearer …`; never logged. */
              bearerToken: z.string().min(1).optional(),
              /** Further headers on every request (a tenant id); values of credential-like names (Authorization, *token*, *key*, …) are scrubbed from logs. */
              headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'a header name'), z.string()).optional(),
              /** Per request; the person's first message waits for it. */
              timeoutMs: z.number().int().positive().max(120_000).default(10_000),
              /** Accounts whose user this process remembers. */
              cacheSize: z.number().int().min(0).default(10_000),
              /** How long a remembered user is trusted before the directory is asked again; 0 asks every time. */
              cacheTtlSeconds: z.number().int().min(0).default(300),
            }),
          ])
          .default({ kind: 'local' }),
        /**
         * When the directory (`resolver.kind: mcp`) cannot be reached: `refuse` the message (the person is told to try
         * later), or answer a new account as a `provisional` user, joined to its real user once the directory answers.
         * See docs/identity-and-profiles.md for what a provisional identity is not given.
         */
        onUnreachable: z.enum(['refuse', 'provisional']).default('refuse'),
      })
      .prefault({}),
    /**
     * Where tool calls run: `inline` (this process, the default) or `streams` (an outbox relays each call to a Redis
     * stream; `palaver worker` processes in a consumer group run it and answer on this runtime's response stream). See
     * docs/tool-workers.md.
     */
    /** People who step in: handing a conversation to them, when they answer, and how they are told (docs/operator-actions.md). */
    operators: z
      .strictObject({
        /**
         * The dashboard's address as operators reach it (e.g. https://support.example.com): notices link to the
         * conversation there. Without it they name the conversation by its id.
         */
        dashboardUrl: z.url().optional(),
        handoff: z
          .strictObject({
            /**
             * Words that hand the conversation to a person without asking the model ("operator", "живой человек"):
             * matched case-insensitively as whole words in the person's message. The model decides otherwise (give
             * it the tool with `agent.tools: ["handoff"]`).
             */
            phrases: z.array(z.string().trim().min(2).max(200)).max(100).default([]),
          })
          .prefault({}),
        /**
         * When people answer, in `timeZone`: per weekday a range "09:00-18:00"; a day left out has nobody. The person
         * handed over is told "a person will answer shortly" within hours, else when the next hours start. Without it
         * they are told a person will answer, with no time.
         */
        hours: z
          .strictObject({
            timeZone: timeZoneName.default('UTC'),
            days: z.strictObject(Object.fromEntries(WEEKDAYS.map((day) => [day, hoursRange.optional()])) as Record<Weekday, z.ZodOptional<typeof hoursRange>>),
          })
          .optional(),
        notify: z
          .strictObject({
            /** POSTed a signed JSON notice for each handoff (Standard Webhooks signature with `webhookSecret`). */
            webhookUrl: z.url().optional(),
            /** The webhook's signing secret (better: PALAVER_OPERATORS_WEBHOOK_SECRET); required with `webhookUrl`. */
            webhookSecret: z.string().min(24, 'use at least 24 characters').optional(),
            /** A Telegram chat of operators the bot (channels.telegram) posts each handoff to: its id, e.g. -1001234567890. */
            telegramChatId: z.union([z.number().int(), z.string().regex(/^-?\d{1,20}$/, 'a chat id, e.g. -1001234567890')]).optional(),
            /** Told again every this many minutes while nobody has taken the conversation. */
            repeatMinutes: z.number().int().min(1).max(1440).default(10),
            /** How many times to tell again after the first notice (0: once only). */
            repeats: z.number().int().min(0).max(50).default(3),
          })
          .refine((notify) => notify.webhookUrl === undefined || notify.webhookSecret !== undefined, {
            message: 'set webhookSecret (or PALAVER_OPERATORS_WEBHOOK_SECRET) with webhookUrl: receivers check the signature',
            path: ['webhookSecret'],
          })
          .prefault({}),
      })
      .prefault({}),
    tools: z
      .strictObject({
        dispatch: z.enum(['inline', 'streams']).default('inline'),
        /** `streams`: how long a turn waits for one attempt's result before it publishes the call again. */
        callTimeoutMs: z.number().int().min(100).max(600_000).default(15_000),
        /** `streams`: attempts per call (the first included); after the last the model is told the tool failed. */
        maxAttempts: z.number().int().min(1).max(20).default(3),
        /**
         * `streams`: a call a worker took and has not acknowledged for this long is taken over by another live worker
         * (XAUTOCLAIM): the first worker is presumed dead. Keep it below `callTimeoutMs`, so a crashed worker's call is
         * finished within the same attempt.
         */
        reclaimIdleMs: z.number().int().min(100).max(3_600_000).default(10_000),
        /** `streams`: the stream tool calls are published to (under `redis.keyPrefix`). */
        stream: z
          .string()
          .regex(/^[A-Za-z0-9._:-]{1,200}$/, 'letters, digits, ., _, : or -')
          .default('events.plugins'),
        /** `streams`: the workers' consumer group on `stream`. */
        group: z
          .string()
          .regex(/^[A-Za-z0-9._:-]{1,200}$/, 'letters, digits, ., _, : or -')
          .default('plugins-workers'),
        /**
         * Longest tool result, in characters, that reaches the model, the store and the web stream (local tools, MCP
         * servers without their own `maxResultChars`, worker results; a worker cuts before it publishes). Longer
         * results are cut and end in `…[truncated N chars]`.
         */
        maxResultChars: z.number().int().min(100).max(10_000_000).default(DEFAULT_MAX_TOOL_RESULT_CHARS),
        /**
         * How long a tool call waits for someone's approval (docs/approvals.md) before it is declined as expired and
         * the model is told so, in minutes.
         */
        approvalTimeoutMinutes: z.number().int().min(1).max(43_200).default(60),
        /**
         * `streams`: a secret runtime and workers share (better: PALAVER_TOOL_RESULT_SECRET). Workers sign each result
         * with it (HMAC-SHA256) and the runtime uses only results whose signature checks out; without it, whoever can
         * write to Redis can answer tool calls. See docs/tool-workers.md#who-is-trusted.
         */
        resultSecret: z.string().min(32, 'use at least 32 characters').optional(),
      })
      .prefault({}),
    /**
     * The Redis server of `tools.dispatch: "streams"` (runtime and workers). Only read when something needs Redis.
     */
    redis: z
      .strictObject({
        /**
         * `redis://[user:password@]host:port[/db]` or `rediss://…` for TLS (better: PALAVER_REDIS_URL). The password is
         * scrubbed from logs; errors never show the URL.
         */
        url: z.string().refine(isRedisUrl, 'a redis:// or rediss:// URL, e.g. redis://:password@127.0.0.1:6379/0').default('redis://127.0.0.1:6379'),
        /**
         * Put before every key and stream name, so several Palavers (and test runs) can share one Redis, e.g.
         * `shop-a:`. Empty by default: the streams are `events.plugins` and `rpc.plugins.responses:<id>`, as tool
         * workers written to that design expect.
         */
        keyPrefix: z
          .string()
          .regex(/^[A-Za-z0-9._:-]{0,100}$/, 'letters, digits, ., _, : or -')
          .default(''),
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        /** `auto`: lines a person reads on a terminal, JSON otherwise; `json` or `pretty` always. */
        format: z.enum(['auto', 'json', 'pretty']).default('auto'),
      })
      .prefault({}),
  })
  .superRefine((config, ctx) => {
    // A currency Palaver may bill in or budget in without a USD rate could never be computed: refused at start.
    const { billing, budgets } = config;
    const needsRate = (currency: string, path: (string | number)[]) => {
      if (currency !== 'USD' && billing.usdRates[currency] === undefined)
        ctx.addIssue({ code: 'custom', path, message: `no USD rate for ${currency}: add billing.usdRates.${currency}` });
    };
    needsRate(billing.defaultCurrency, ['billing', 'defaultCurrency']);
    for (const [country, currency] of Object.entries(billing.currencyByCountry)) needsRate(currency, ['billing', 'currencyByCountry', country]);
    if (budgets.currency !== undefined) needsRate(budgets.currency, ['budgets', 'currency']);
    if (config.cluster.bus === 'postgres' && dialectOfUrl(config.database.url)?.name !== 'postgres') {
      ctx.addIssue({ code: 'custom', path: ['cluster', 'bus'], message: 'postgres needs a PostgreSQL database.url; use redis (or local for one process)' });
    }
  });

export type PalaverConfig = z.infer<typeof configSchema>;
/** What a caller may pass: defaults filled in by `parseConfig`. */
export type PalaverConfigInput = z.input<typeof configSchema>;
export type ModelEndpointConfig = z.infer<typeof modelEndpointSchema>;

/** `redis://…` or `rediss://…` with a host. Never echoes the value (it may hold a password). */
function isRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** `192.0.2.1`, `::1`, `10.0.0.0/8`, `fd00::/8`: what `server.trustedProxies` takes. */
function isAddressOrRange(entry: string): boolean {
  const [address = '', bits, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}
