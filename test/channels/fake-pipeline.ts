import type { ApprovalDecision } from '../../src/domain/approval.js';
import type { ApprovalOutcome } from '../../src/domain/ports/channel.js';
import { ChannelError } from '../../src/domain/errors.js';
import type {
  Acceptance,
  Channel,
  ChannelContext,
  ConversationSummary,
  InboundMessage,
  RecordedConversation,
  RecordedMessage,
  ReplyTarget,
  SentPart,
  StoredReply,
  TranscriptEntry,
  TurnOutcome,
} from '../../src/domain/ports/channel.js';

/** One message as the fake context received it, with the acceptance it got (none when refused). */
export interface Received {
  readonly message: InboundMessage;
  readonly signal: AbortSignal | undefined;
  readonly acceptance: Acceptance | undefined;
}

type Step =
  | { readonly kind: 'refuse'; readonly error: unknown }
  | { readonly kind: 'duplicate'; readonly answered?: StoredReply; readonly until?: Promise<void> }
  | { readonly kind: 'hold'; readonly until: Promise<void> };

/**
 * A `ChannelContext` with scripted acceptance, standing in for the whole pipeline: every message is accepted
 * (correlation id `corr-<n>`, session `session-<conversation>`) unless the next answer was scripted as a refusal,
 * a duplicate or a delay. Tests then answer accepted messages themselves through `answer`.
 */
export class FakeChannelContext implements ChannelContext {
  readonly received: Received[] = [];
  readonly #script: Step[] = [];
  readonly #listeners = new Set<() => void>();
  /** Who opened each conversation, once `enforceOwnership()` was called. */
  #owners: Map<string, string> | undefined;

  /** The next `accept` rejects with `error`. */
  refuseNext(error: unknown): void {
    this.#script.push({ kind: 'refuse', error });
  }

  /** The next `accept` reports a duplicate (of a run answered with `answered`, when given), after `until` if given. */
  duplicateNext(answered?: StoredReply, until?: Promise<void>): void {
    this.#script.push({ kind: 'duplicate', ...(answered === undefined ? {} : { answered }), ...(until === undefined ? {} : { until }) });
  }

  /**
   * From now on a direct conversation belongs to the account that sent its first message: `accept` from anyone
   * else rejects with ChannelError `forbidden`, as the pipeline does (the message is not recorded as received).
   */
  enforceOwnership(): void {
    this.#owners = new Map();
  }

  /** Decisions channels passed on (`decideApproval`), in order; each is answered with {@link approvalOutcome}. */
  readonly decisions: { readonly accountId: string; readonly approvalId: string; readonly decision: ApprovalDecision }[] = [];
  approvalOutcome: ApprovalOutcome = { kind: 'decided', status: 'approved' };

  async decideApproval(accountId: string, approvalId: string, decision: ApprovalDecision): Promise<ApprovalOutcome> {
    this.decisions.push({ accountId, approvalId, decision });
    return this.approvalOutcome.kind === 'decided' ? { kind: 'decided', status: decision } : this.approvalOutcome;
  }

  /** Messages stored through `record`, in order, deduplicated by conversation and message id as the pipeline does. */
  readonly recorded: { readonly conversation: RecordedConversation; readonly message: RecordedMessage }[] = [];

  async record(conversation: RecordedConversation, entries: readonly RecordedMessage[]): Promise<{ readonly stored: number }> {
    let stored = 0;
    for (const message of entries) {
      const seen = this.recorded.some((r) => r.conversation.conversationId === conversation.conversationId && r.message.messageId === message.messageId);
      if (seen) continue;
      this.recorded.push({ conversation, message });
      stored += 1;
    }
    return { stored };
  }

  /** Resets nothing: the fake keeps no model history. */
  async reset(): Promise<void> {}

  /** Stored replies `storedReply` finds, by dedupe key: a test sets one to stand for a turn that answered. */
  readonly storedReplies = new Map<string, StoredReply>();

  async storedReply(_accountId: string, _conversationId: string, dedupeKey: string): Promise<StoredReply | undefined> {
    return this.storedReplies.get(dedupeKey);
  }

  /** The fake keeps no files. */
  async attachment(): Promise<undefined> {
    return undefined;
  }

  async interfaceLanguage(_accountId: string, hint?: string): Promise<string> {
    return hint ?? 'en';
  }

  /** A channel's key-value state, in memory. */
  readonly state = memoryState();

  async conversations(accountId: string): Promise<readonly ConversationSummary[]> {
    const seen = new Map<string, ConversationSummary>();
    for (const { message, acceptance } of this.received) {
      if (message.accountId !== accountId || acceptance === undefined) continue;
      seen.set(message.conversationId, {
        conversationId: message.conversationId,
        title: message.text.slice(0, 40),
        status: 'completed',
        updatedAt: new Date(0),
      });
    }
    return [...seen.values()].reverse();
  }

  async transcript(accountId: string, conversationId: string): Promise<readonly TranscriptEntry[]> {
    const messages = this.received.filter((r) => r.message.conversationId === conversationId && r.acceptance !== undefined);
    if (messages.length === 0) throw new ChannelError('not_found', 'fake', `No conversation ${conversationId}.`);
    if (messages[0]!.message.accountId !== accountId) throw new ChannelError('forbidden', 'fake', 'This conversation belongs to someone else.');
    return messages.map(({ message }, index) => ({ id: message.messageId ?? `m-${index}`, role: 'user', text: message.text, at: new Date(0) }));
  }

  /** The next `accept` resolves only after `until`. */
  holdNext(until: Promise<void>): void {
    this.#script.push({ kind: 'hold', until });
  }

  async accept(message: InboundMessage, options?: { readonly signal?: AbortSignal }): Promise<Acceptance> {
    const owner = this.#owners?.get(message.conversationId);
    if (this.#owners && message.conversationKind !== 'shared') {
      if (owner !== undefined && owner !== message.accountId)
        throw new ChannelError('forbidden', message.channel, 'This conversation belongs to someone else.');
      this.#owners.set(message.conversationId, message.accountId);
    }
    const n = this.received.length + 1;
    const step = this.#script.shift();
    const correlationId = message.correlationId ?? `corr-${n}`;
    let acceptance: Acceptance | undefined;
    if (step?.kind === 'duplicate')
      acceptance = step.answered === undefined ? { status: 'duplicate', correlationId } : { status: 'duplicate', correlationId, answered: step.answered };
    else if (step?.kind !== 'refuse')
      acceptance = { status: 'accepted', correlationId, sessionId: `session-${message.conversationId}`, userId: `user-${message.accountId}` };
    this.received.push({ message, signal: options?.signal, acceptance });
    for (const listener of [...this.#listeners]) listener();
    if (step?.kind === 'refuse') throw step.error;
    if ((step?.kind === 'hold' || step?.kind === 'duplicate') && step.until) await step.until;
    return acceptance!;
  }

  /** Resolves with the first `count` received messages once that many arrived; fails after `timeoutMs`. */
  waitForMessages(count: number, timeoutMs = 5000): Promise<InboundMessage[]> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.received.length < count) return;
        this.#listeners.delete(check);
        clearTimeout(timer);
        resolve(this.received.slice(0, count).map((r) => r.message));
      };
      const timer = setTimeout(() => {
        this.#listeners.delete(check);
        reject(new Error(`Only ${this.received.length} of ${count} messages reached accept within ${timeoutMs} ms.`));
      }, timeoutMs);
      this.#listeners.add(check);
      check();
    });
  }

  /** The acceptance a received message got. */
  acceptanceOf(message: InboundMessage): Acceptance | undefined {
    return this.received.find((r) => r.message === message)?.acceptance;
  }
}

/** How the fake pipeline answers: tool activity, streamed deltas (some discarded), the parts it sends, how it ends. */
export interface FakeReply {
  readonly parts: readonly string[];
  /** Deltas streamed before the parts are sent (only to channels that stream). */
  readonly stream?: readonly string[];
  /** Streamed first, then discarded, before `stream`. */
  readonly discarded?: readonly string[];
  /** Tool activity streamed first: a call and its result. */
  readonly tool?: { readonly name: string; readonly arguments: string; readonly result: string; readonly isError?: boolean; readonly label?: string };
  /** End with this error instead of an answer (then no part is sent). */
  readonly error?: unknown;
  readonly status?: TurnOutcome['status'];
}

/** The target of a turn answering `messages` (one conversation), as the pipeline builds it. */
export function targetFor(channel: Channel, context: FakeChannelContext, messages: readonly InboundMessage[]): ReplyTarget {
  const last = messages.at(-1)!;
  return {
    channel: channel.name,
    conversationId: last.conversationId,
    accountId: last.accountId,
    inReplyTo: messages.flatMap((m) => (m.messageId === undefined ? [] : [m.messageId])),
    correlationId: context.acceptanceOf(last)?.correlationId ?? 'corr-unknown',
    sessionId: `session-${last.conversationId}`,
  };
}

/**
 * Answers `messages` as one turn, calling the channel's outbound side in the pipeline's order: progress (only when
 * the channel streams), `send` once per part, then `settle` exactly once. Resolves with the sent parts.
 */
export async function answer(
  channel: Channel,
  context: FakeChannelContext,
  messages: readonly InboundMessage[],
  reply: FakeReply,
): Promise<readonly SentPart[]> {
  const target = targetFor(channel, context, messages);
  const draftId = `draft-${target.correlationId}`;
  if (channel.capabilities.streaming && channel.progress) {
    if (reply.tool) {
      const callId = `call-${target.correlationId}`;
      channel.progress(target, {
        type: 'tool_call',
        callId,
        name: reply.tool.name,
        arguments: reply.tool.arguments,
        ...(reply.tool.label === undefined ? {} : { label: reply.tool.label }),
      });
      channel.progress(target, { type: 'tool_result', callId, name: reply.tool.name, content: reply.tool.result, isError: reply.tool.isError ?? false });
    }
    if (reply.discarded) {
      for (const delta of reply.discarded) channel.progress(target, { type: 'text_delta', messageId: draftId, delta });
      channel.progress(target, { type: 'discard', messageId: draftId });
    }
    for (const delta of reply.stream ?? []) channel.progress(target, { type: 'text_delta', messageId: draftId, delta });
  }
  if (reply.error !== undefined) {
    channel.settle?.(target, { kind: 'error', correlationId: target.correlationId, error: reply.error });
    return [];
  }
  const sent: SentPart[] = [];
  for (const part of reply.parts) sent.push(await channel.send(target, part));
  channel.settle?.(target, {
    kind: 'answered',
    parts: sent,
    outcome: {
      correlationId: target.correlationId,
      sessionId: target.sessionId,
      userId: `user-${target.accountId}`,
      reply: reply.parts.join('\n'),
      replyMessageId: `reply-${target.correlationId}`,
      status: reply.status ?? 'completed',
      usage: { inputTokens: 10, outputTokens: 5, cost: '0.0001', currency: 'USD' },
    },
  });
  return sent;
}

/** An in-memory channel state store (`ChannelContext.state`). */
export function memoryState(): {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
} {
  const values = new Map<string, string>();
  return {
    get: async (key) => values.get(key),
    set: async (key, value) => void values.set(key, value),
    delete: async (key) => void values.delete(key),
  };
}
