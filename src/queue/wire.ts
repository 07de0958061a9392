/**
 * What travels through Redis between the runtime and tool workers (seed 002's payloads), as zod schemas: everything
 * read from a stream is parsed here before anything acts on it, since any process with the Redis password can write
 * to a stream. Each stream entry has one field, `data`, holding one of these as JSON.
 *
 * Streams and keys, all under `redis.keyPrefix` when one is set (by default none: the names are the seed's own):
 * - `<stream>` (`tools.stream`, default `events.plugins`): `ToolCallRequested` and `ToolCallCancelled`, read by the
 *   workers' consumer group `tools.group`, which remove each entry as they acknowledge it.
 * - `<responseChannel>` (`rpc.plugins.responses:<runtime instance id>`): `ToolCallCompleted`, read by the runtime
 *   that asked.
 * - `<stream>.dead`: calls that failed `tools.maxAttempts` times, with their last error.
 * - `tools.catalogue:<worker id>`: a worker's `ToolCatalogue`, with a TTL its heartbeat renews.
 * - `tools.result:<correlationId>:<toolCallId>`: the first result of a call, so a repeat delivery returns it again.
 */
import { z } from 'zod';
import { MAX_HANDOFF_REASON_CHARS } from '../domain/handoff-reason.js';

const jsonObject = z.record(z.string(), z.unknown());

/** A tool call leaving the runtime (the outbox relay publishes it). */
export const toolCallRequested = z.strictObject({
  eventType: z.literal('PluginToolCallRequested'),
  /** The turn's correlation id: logs on both sides carry it. */
  correlationId: z.string().min(1).max(200),
  sessionId: z.string().min(1).max(200),
  /** The turn's id (`ToolCallRequest.idempotencyKey` is `<turn>:<toolCallId>`). */
  turn: z.string().min(1).max(200),
  toolCallId: z.string().min(1).max(200),
  idempotencyKey: z.string().min(1).max(400),
  toolName: z.string().min(1).max(200),
  arguments: jsonObject,
  /** The user the runtime bound to the turn, and that user's channel accounts: the only user the tool may act for. */
  userId: z.string().min(1).max(200),
  accounts: z.array(z.strictObject({ channel: z.string(), accountId: z.string() })).max(100),
  conversationId: z.string().max(400),
  role: z.string().nullable(),
  flowState: jsonObject,
  /** The stream the result goes to. */
  responseChannel: z.string().min(1).max(400),
  /** 1 on the first publication; the runtime's retries count up to `tools.maxAttempts`. */
  attempt: z.number().int().min(1).max(100),
  /** When the runtime stops waiting (epoch ms): a worker does not start a call past it. */
  deadline: z.number().int().nonnegative(),
});
export type ToolCallRequested = z.infer<typeof toolCallRequested>;

/** The runtime gave up on a call (its turn was cancelled): a worker that has not started it skips it. */
export const toolCallCancelled = z.strictObject({
  eventType: z.literal('PluginToolCallCancelled'),
  correlationId: z.string().min(1).max(200),
  toolCallId: z.string().min(1).max(200),
});
export type ToolCallCancelled = z.infer<typeof toolCallCancelled>;

/** A worker's answer: the `ToolCallResult` of the dispatch port, with the ids that route it. */
export const toolCallCompleted = z.strictObject({
  eventType: z.literal('PluginToolCallCompleted'),
  correlationId: z.string().min(1).max(200),
  toolCallId: z.string().min(1).max(200),
  content: z.string(),
  structured: z.unknown().optional(),
  isError: z.boolean(),
  effects: z.strictObject({
    role: z.string().optional(),
    flowState: jsonObject.optional(),
    /** `ctx.handoff`: a worker's tool is never the built-in `handoff`, so its source is always `tool`. */
    handoff: z.strictObject({ reason: z.string().min(1).max(MAX_HANDOFF_REASON_CHARS), source: z.literal('tool') }).optional(),
  }),
  durationMs: z.number().nonnegative(),
  /** The worker that ran it, for logs. */
  workerId: z.string().min(1).max(200),
  /** With `tools.resultSecret`: HMAC-SHA256 of the call and result (result-signature.ts), hex. */
  signature: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});
export type ToolCallCompleted = z.infer<typeof toolCallCompleted>;

/** A tool's progress label as a worker announces it: bounded, since anyone who reaches Redis can write one. */
const toolLabel = z.union([
  z.string().min(1).max(200),
  z.record(z.string().min(1).max(35), z.string().min(1).max(200)).refine((labels) => Object.keys(labels).length <= 50, 'at most 50 languages'),
]);

/** What one worker serves, as the runtime offers it to the model. */
export const toolCatalogue = z.strictObject({
  workerId: z.string().min(1).max(200),
  /** Epoch ms of the heartbeat that wrote it. */
  at: z.number().int().nonnegative(),
  tools: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(200),
        description: z.string().max(10_000),
        inputSchema: jsonObject,
        /** The progress line people see while it runs (`defineTool`'s `label`): one text, or one per language tag. */
        label: toolLabel.optional(),
      }),
    )
    .max(1_000),
});
export type ToolCatalogue = z.infer<typeof toolCatalogue>;

export const streamEvent = z.discriminatedUnion('eventType', [toolCallRequested, toolCallCancelled]);
export type StreamEvent = z.infer<typeof streamEvent>;

/** Parses one stream entry's `data` field; `undefined` for anything that is not a well-formed event. */
export function parseEntry<T>(schema: z.ZodType<T>, data: string | undefined): T | undefined {
  if (data === undefined) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(data));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
