import type { DeliveryApproval } from '../../domain/approval.js';
import { z } from 'zod';
import { newId } from '../../domain/ids.js';
import { MAX_CLUSTER_MESSAGE_BYTES, type ClusterBus, type ClusterMessage } from '../../domain/ports/cluster-bus.js';
import type { ReplyTarget, TurnProgress } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import type { FinishedReply } from './agui-translator.js';

/** The bus topic replies travel on. */
export const REPLY_TOPIC = 'reply';

/** What one turn did for its web runs, as another process replays it on the run's stream. */
export type RelayOp =
  | { readonly kind: 'progress'; readonly event: TurnProgress }
  /** `approval`: the part asks the person to approve a tool call (`SendOptions.approval`). */
  | { readonly kind: 'send'; readonly text: string; readonly approval?: DeliveryApproval | undefined }
  | { readonly kind: 'typing' }
  | { readonly kind: 'reaction'; readonly messageId: string; readonly emoji: string }
  /** The turn still runs (a reply plan's pause shows nothing): the waiting run does not look for a stored reply yet. */
  | { readonly kind: 'alive' }
  /**
   * The turn ended. `whole`: every event of the turn was relayed (none went to a stream of the publisher's own).
   * `answeredIn`: the run whose stream in the publisher's process took the reply, if any.
   */
  | { readonly kind: 'settle'; readonly whole: boolean; readonly answeredIn?: string | undefined; readonly end: RelayedEnd };

/** How a relayed turn ended: answered, or failed before a reply was stored (`code`/`message` of a PalaverError). */
export type RelayedEnd =
  | { readonly kind: 'answered'; readonly outcome: FinishedReply }
  | { readonly kind: 'error'; readonly code?: string | undefined; readonly message?: string | undefined };

/** The turn a relayed event belongs to, and the runs it answers: the routing the receiver checks against its own streams. */
export interface RelayedTurn {
  readonly conversationId: string;
  /** The runs the turn answers (`ReplyTarget.inReplyTo`), oldest first. */
  readonly runs: readonly string[];
  readonly correlationId: string;
  readonly sessionId: string;
}

/** One event as the receiving process gets it. `continuous`: no event of the turn was missed before it. */
export interface RelayedEvent {
  readonly turn: RelayedTurn;
  readonly op: RelayOp;
  readonly continuous: boolean;
}

export interface ReplyRelayOptions {
  readonly bus: ClusterBus;
  /** The channel's name, carried in every message: a process only takes messages of its own channel. */
  readonly channel: string;
  readonly logger: Logger;
  /** How often a turn whose events are relayed says it is still running. Default 10 000 ms. */
  readonly heartbeatMs?: number;
}

const runId = z.string().min(1).max(256);
const progressSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text_delta'), messageId: z.string(), delta: z.string() }),
  z.object({ type: z.literal('tool_call'), callId: z.string(), name: z.string(), arguments: z.string(), label: z.string().optional() }),
  z.object({ type: z.literal('tool_result'), callId: z.string(), name: z.string(), content: z.string(), isError: z.boolean() }),
  z.object({ type: z.literal('discard'), messageId: z.string() }),
]);
const opSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('progress'), event: progressSchema }),
  z.object({ kind: z.literal('send'), text: z.string(), approval: z.object({ id: z.string(), expiresAt: z.string() }).optional() }),
  z.object({ kind: z.literal('typing') }),
  z.object({ kind: z.literal('reaction'), messageId: z.string(), emoji: z.string() }),
  z.object({ kind: z.literal('alive') }),
  z.object({
    kind: z.literal('settle'),
    whole: z.boolean(),
    answeredIn: runId.optional(),
    end: z.discriminatedUnion('kind', [
      z.object({
        kind: z.literal('answered'),
        outcome: z.object({
          correlationId: z.string(),
          sessionId: z.string(),
          reply: z.string(),
          replyMessageId: z.string(),
          status: z.enum(['completed', 'failed']),
          errorId: z.string().optional(),
        }),
      }),
      z.object({ kind: z.literal('error'), code: z.string().optional(), message: z.string().optional() }),
    ]),
  }),
]);
const turnFields = {
  v: z.literal(1),
  channel: z.string(),
  origin: z.string().min(1),
  conversationId: z.string().min(1),
  runs: z.array(runId).min(1),
  turn: z.string().min(1),
  session: z.string(),
  seq: z.number().int().nonnegative(),
};
const envelopeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('event'), ...turnFields, op: z.unknown() }),
  // An event too large for one message, cut into pieces of its JSON text, each with its own `seq`.
  z.object({ kind: z.literal('piece'), ...turnFields, index: z.number().int().nonnegative(), count: z.number().int().positive(), data: z.string() }),
  // A client's retried run now streams in the origin process: other processes end their own stream of that run.
  z.object({ kind: z.literal('watch'), v: z.literal(1), channel: z.string(), origin: z.string().min(1), conversationId: z.string().min(1), runId }),
]);

/** Room left for the run ids in one message; a huge batch relays only its latest runs (the others find the stored reply). */
const MAX_RUNS_BYTES = 2_000;
/** Turns remembered per side; past it the oldest go (a turn whose end never came). */
const MAX_TURNS = 10_000;

interface PublishedTurn {
  seq: number;
  whole: boolean;
  /** Events waiting for the ones before them to be published (a text delta joins the delta before it). */
  queue: { target: ReplyTarget; op: RelayOp }[];
  flushing: boolean;
  heartbeat: NodeJS.Timeout | undefined;
}

interface ReceivedTurn {
  next: number;
  /** An event was missed: the next one delivered says so. */
  missed: boolean;
  pieces: string[] | undefined;
}

/**
 * Carries a web turn's events between the processes that share one database, on the cluster bus's `reply` topic:
 * the process that runs a turn publishes what its own streams could not take (the run's client is connected to
 * another process, or to none), and every other process hands them to its stream of that run. Per turn, messages are
 * numbered; a receiver that misses one says so, and the run then ends showing the stored reply instead of what it
 * pieced together. The bus may lose messages: nothing here is needed for the reply to be stored, only to show it live.
 *
 * Routing is by conversation and run id, which the receiving channel matches against streams it opened for callers it
 * identified itself; a message never opens a stream or names a caller.
 */
export class ReplyRelay {
  /** This process's id on the bus: its own messages come back to it and are ignored. */
  readonly origin = newId();
  readonly #options: ReplyRelayOptions;
  readonly #published = new Map<string, PublishedTurn>();
  readonly #received = new Map<string, ReceivedTurn>();
  #unsubscribe: (() => Promise<void>) | undefined;
  #closed = false;

  constructor(options: ReplyRelayOptions) {
    this.#options = options;
  }

  /** Listens to the other processes' reply events and retried runs. */
  async start(handlers: { readonly onEvent: (event: RelayedEvent) => void; readonly onWatch: (conversationId: string, runId: string) => void }): Promise<void> {
    this.#unsubscribe = await this.#options.bus.subscribe(REPLY_TOPIC, (message) => this.#receive(message, handlers));
  }

  /** Stops listening and publishing; turns still running here go on without relaying. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const turn of this.#published.values()) clearInterval(turn.heartbeat);
    this.#published.clear();
    await this.#unsubscribe?.().catch(() => undefined);
  }

  /** Publishes one event of `target`'s turn, after the ones published before it. */
  publish(target: ReplyTarget, op: RelayOp): void {
    const turn = this.#turn(target);
    if (turn.heartbeat === undefined && op.kind !== 'settle') {
      turn.heartbeat = setInterval(() => this.#send(target, turn, { kind: 'alive' }), this.#options.heartbeatMs ?? 10_000);
      turn.heartbeat.unref();
    }
    this.#send(target, turn, op);
  }

  /** An event of `target`'s turn went to a stream of this process instead: the relayed turn is not whole. */
  noteLocal(target: ReplyTarget): void {
    this.#turn(target).whole = false;
  }

  /** Publishes the end of `target`'s turn and forgets it. */
  settle(target: ReplyTarget, end: RelayedEnd, answeredIn: string | undefined): void {
    const turn = this.#turn(target);
    clearInterval(turn.heartbeat);
    this.#send(target, turn, { kind: 'settle', whole: turn.whole, ...(answeredIn === undefined ? {} : { answeredIn }), end });
    this.#published.delete(turnKey(target.conversationId, target.correlationId));
  }

  /** Tells the other processes that the client of run `runId` now waits here. */
  watch(conversationId: string, runId: string): void {
    this.#publishRaw({ kind: 'watch', v: 1, channel: this.#options.channel, origin: this.origin, conversationId, runId });
  }

  #turn(target: ReplyTarget): PublishedTurn {
    const key = turnKey(target.conversationId, target.correlationId);
    let turn = this.#published.get(key);
    if (!turn) {
      turn = { seq: 0, whole: true, queue: [], flushing: false, heartbeat: undefined };
      this.#published.set(key, turn);
      for (const [oldest, old] of this.#published) {
        if (this.#published.size <= MAX_TURNS) break;
        clearInterval(old.heartbeat);
        this.#published.delete(oldest);
      }
    }
    return turn;
  }

  /**
   * Queues `op` behind the turn's earlier events and publishes the queue in order. While a publish is on its way, a
   * text delta joins the queued delta before it, so a fast stream costs fewer notifications, not more latency.
   */
  #send(target: ReplyTarget, turn: PublishedTurn, op: RelayOp): void {
    if (this.#closed) return;
    const last = turn.queue.at(-1);
    if (last && isDelta(last.op) && isDelta(op) && last.op.event.messageId === op.event.messageId) {
      last.op = { kind: 'progress', event: { ...last.op.event, delta: last.op.event.delta + op.event.delta } };
    } else turn.queue.push({ target, op });
    if (!turn.flushing) void this.#flush(turn);
  }

  async #flush(turn: PublishedTurn): Promise<void> {
    turn.flushing = true;
    try {
      for (let next = turn.queue.shift(); next; next = turn.queue.shift()) {
        for (const message of this.#number(next.target, turn, next.op)) await this.#publishRaw(message);
      }
    } finally {
      turn.flushing = false;
    }
  }

  /** The bus messages of one event, numbered: one, or pieces of its JSON text when it is too large for one. */
  #number(target: ReplyTarget, turn: PublishedTurn, op: RelayOp): ClusterMessage[] {
    const fields = {
      v: 1,
      channel: this.#options.channel,
      origin: this.origin,
      conversationId: target.conversationId,
      runs: latestRuns(target.inReplyTo),
      turn: target.correlationId,
      session: target.sessionId,
    };
    const whole = { kind: 'event', ...fields, seq: turn.seq, op };
    if (byteLength(whole) <= MAX_CLUSTER_MESSAGE_BYTES) {
      turn.seq += 1;
      return [whole];
    }
    const room = MAX_CLUSTER_MESSAGE_BYTES - byteLength({ kind: 'piece', ...fields, seq: Number.MAX_SAFE_INTEGER, index: 1e6, count: 1e6, data: '' }) - 16;
    const chunks = splitForJson(JSON.stringify(op), room);
    return chunks.map((data, index) => ({ kind: 'piece', ...fields, seq: turn.seq++, index, count: chunks.length, data }));
  }

  async #publishRaw(message: ClusterMessage): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#options.bus.publish(REPLY_TOPIC, message);
    } catch (error) {
      // The reply is stored; a waiting run on another process finds it there.
      this.#options.logger.warn({ err: error }, 'could not relay a reply event to the other processes');
    }
  }

  #receive(
    raw: ClusterMessage,
    handlers: { readonly onEvent: (event: RelayedEvent) => void; readonly onWatch: (conversationId: string, runId: string) => void },
  ): void {
    const parsed = envelopeSchema.safeParse(raw);
    if (!parsed.success) {
      this.#options.logger.warn({ problem: parsed.error.issues[0]?.message }, 'ignored a malformed reply message from the cluster bus');
      return;
    }
    const message = parsed.data;
    if (message.origin === this.origin || message.channel !== this.#options.channel) return;
    if (message.kind === 'watch') {
      handlers.onWatch(message.conversationId, message.runId);
      return;
    }
    const key = `${message.origin}\u0000${turnKey(message.conversationId, message.turn)}`;
    let state = this.#received.get(key);
    if (!state) {
      // Joined mid-turn (this process started listening, or the run was retried here, after its first events).
      state = { next: 0, missed: false, pieces: undefined };
      this.#received.set(key, state);
      for (const oldest of this.#received.keys()) {
        if (this.#received.size <= MAX_TURNS) break;
        this.#received.delete(oldest);
      }
    }
    if (message.seq !== state.next) {
      state.missed = true;
      state.pieces = undefined;
    }
    state.next = message.seq + 1;
    let opJson: unknown;
    if (message.kind === 'event') opJson = message.op;
    else {
      // A piece other than the first with nothing before it: its start was lost.
      if (message.index === 0) state.pieces = [];
      if (state.pieces === undefined || state.pieces.length !== message.index) {
        state.missed = true;
        state.pieces = undefined;
        return;
      }
      state.pieces.push(message.data);
      if (message.index + 1 < message.count) return;
      const text = state.pieces.join('');
      state.pieces = undefined;
      try {
        opJson = JSON.parse(text);
      } catch {
        state.missed = true;
        return;
      }
    }
    const op = opSchema.safeParse(opJson);
    if (!op.success) {
      state.missed = true;
      this.#options.logger.warn({ problem: op.error.issues[0]?.message }, 'ignored a malformed reply event from the cluster bus');
      return;
    }
    const continuous = !state.missed;
    state.missed = false;
    if (op.data.kind === 'settle') this.#received.delete(key);
    const turn: RelayedTurn = { conversationId: message.conversationId, runs: message.runs, correlationId: message.turn, sessionId: message.session };
    handlers.onEvent({ turn, op: op.data as RelayOp, continuous });
  }
}

function isDelta(op: RelayOp): op is { kind: 'progress'; event: Extract<TurnProgress, { type: 'text_delta' }> } {
  return op.kind === 'progress' && op.event.type === 'text_delta';
}

function turnKey(conversationId: string, correlationId: string): string {
  return `${conversationId}\u0000${correlationId}`;
}

function byteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** The latest runs of a batch that fit the room for run ids (the reply goes to the latest open one). */
function latestRuns(runs: readonly string[]): string[] {
  const kept: string[] = [];
  let bytes = 0;
  for (let i = runs.length - 1; i >= 0; i--) {
    bytes += byteLength(runs[i]) + 1;
    if (bytes > MAX_RUNS_BYTES && kept.length > 0) break;
    kept.unshift(runs[i]!);
  }
  return kept;
}

/** Cuts `text` into pieces whose JSON string forms take at most `room` bytes each, never inside a code point. */
export function splitForJson(text: string, room: number): string[] {
  const pieces: string[] = [];
  let current = '';
  let size = 0;
  for (const char of text) {
    const charSize = Buffer.byteLength(JSON.stringify(char)) - 2;
    if (size + charSize > room && current !== '') {
      pieces.push(current);
      current = '';
      size = 0;
    }
    current += char;
    size += charSize;
  }
  if (current !== '' || pieces.length === 0) pieces.push(current);
  return pieces;
}
