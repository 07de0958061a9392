import type { ApprovalDecision, DeliveryApproval } from '../../src/domain/approval.js';
import type { ApprovalOutcome } from '../../src/domain/ports/channel.js';
import { ChannelError } from '../../src/domain/errors.js';
import type {
  Acceptance,
  Channel,
  ChannelContext,
  ConversationSummary,
  DecideOptions,
  InboundMessage,
  ReplyTarget,
  TranscriptEntry,
  TurnProgress,
} from '../../src/domain/ports/channel.js';
import { memoryState } from '../channels/fake-pipeline.js';

export interface ScriptedPipelineOptions {
  /** Reply text, streamed as deltas of `chunkChars`, then sent as one part. Default "It is 10:30 in Zurich." */
  readonly reply?: string;
  readonly chunkChars?: number;
  /** Pause between outbound calls, to make streaming observable. Default 0. */
  readonly delayMs?: number;
  /** `accept` rejects with this (the message is refused). */
  readonly refuse?: unknown;
  /** The turn ends with this error instead of a reply. */
  readonly fail?: unknown;
  /** Skip the `current_time` tool call. */
  readonly noTool?: boolean;
  /** Streamed first, then discarded (a stream that broke), before the reply streams. */
  readonly withdrawn?: string;
  /** The turn waits for this after its first delta. */
  readonly gate?: Promise<void>;
  /** The reply is a question asking to approve a tool call: sent with `SendOptions.approval` (this id, expiring then). */
  readonly approval?: DeliveryApproval;
  /** What `decideApproval` answers; default: decided as asked (and the turn goes on, answering the decision's run). */
  readonly approvalOutcome?: ApprovalOutcome;
}

/**
 * A stand-in for Palaver's pipeline behind one channel: accepts every message (`corr-<n>`), then runs a scripted
 * turn through the channel's outbound side as the real pipeline does: a tool call and result, text deltas, one
 * sent part, settle.
 */
export class ScriptedPipeline implements ChannelContext {
  readonly received: InboundMessage[] = [];
  readonly signals: AbortSignal[] = [];
  /** Every conversation's owner and displayed messages, as the pipeline would store them. */
  readonly #conversations = new Map<string, { owner: string; entries: TranscriptEntry[]; updatedAt: Date }>();
  readonly #channel: Channel;
  #options: ScriptedPipelineOptions;

  constructor(channel: Channel, options: ScriptedPipelineOptions = {}) {
    this.#channel = channel;
    this.#options = options;
  }

  async accept(message: InboundMessage, options?: { readonly signal?: AbortSignal }): Promise<Acceptance> {
    const conversation = this.#conversations.get(message.conversationId);
    if (conversation && conversation.owner !== message.accountId)
      throw new ChannelError('forbidden', message.channel, 'This conversation belongs to someone else.');
    this.received.push(message);
    if (options?.signal) this.signals.push(options.signal);
    if (this.#options.refuse !== undefined) throw this.#options.refuse;
    const turn = this.received.length;
    const record = conversation ?? { owner: message.accountId, entries: [], updatedAt: new Date() };
    record.entries.push({ id: message.messageId ?? `m-${turn}`, role: 'user', text: message.text, at: new Date() });
    record.updatedAt = new Date();
    this.#conversations.set(message.conversationId, record);
    const acceptance = {
      status: 'accepted',
      correlationId: message.correlationId ?? `corr-${turn}`,
      sessionId: `session-${message.conversationId}`,
      userId: `user-${message.accountId}`,
    } as const;
    const target: ReplyTarget = {
      channel: this.#channel.name,
      conversationId: message.conversationId,
      accountId: message.accountId,
      inReplyTo: message.messageId === undefined ? [] : [message.messageId],
      correlationId: acceptance.correlationId,
      sessionId: acceptance.sessionId,
    };
    void this.#turn(target, turn);
    return acceptance;
  }

  /** Resets nothing: the fake keeps no model history. */
  async reset(): Promise<void> {}

  /** Every scripted turn settles in this process: a waiting run never needs the stored reply. */
  async attachment(): Promise<undefined> {
    return undefined;
  }

  async storedReply(): Promise<undefined> {
    return undefined;
  }

  /** The web channel never records history without a turn. */
  async record(): Promise<{ readonly stored: number }> {
    throw new Error('the web channel does not record history');
  }

  /** Decisions the web channel passed on, in order, with the message id each carried. */
  readonly decisions: {
    readonly accountId: string;
    readonly approvalId: string;
    readonly decision: ApprovalDecision;
    readonly messageId: string | undefined;
  }[] = [];
  /** The approval requests the scripted turns asked, by id: whom they asked, in which conversation. */
  readonly #asked = new Map<string, { readonly conversationId: string; readonly accountId: string; readonly sessionId: string }>();

  /**
   * Records the decision, then answers as the core would: `approvalOutcome` when scripted; else refused for anyone
   * but the person asked, unknown for an id never asked, and otherwise decided, with a turn that goes on and answers
   * the decision's message id (the run that carried it).
   */
  async decideApproval(accountId: string, approvalId: string, decision: ApprovalDecision, options?: DecideOptions): Promise<ApprovalOutcome> {
    this.decisions.push({ accountId, approvalId, decision, messageId: options?.messageId });
    if (this.#options.approvalOutcome) return this.#options.approvalOutcome;
    const asked = this.#asked.get(approvalId);
    if (!asked) return { kind: 'not_found' };
    if (asked.accountId !== accountId) return { kind: 'refused', reason: 'not_yours' };
    this.#asked.delete(approvalId);
    const turn = this.received.length + this.decisions.length;
    const target: ReplyTarget = {
      channel: this.#channel.name,
      conversationId: asked.conversationId,
      accountId,
      inReplyTo: options?.messageId === undefined ? [] : [options.messageId],
      correlationId: `corr-decision-${this.decisions.length}`,
      sessionId: asked.sessionId,
    };
    const reply = decision === 'approved' ? 'Done: the appointment is cancelled.' : 'All right, I left it as it is.';
    setTimeout(() => void this.#turn(target, turn, { reply, approval: undefined, noTool: true }), 0);
    return { kind: 'decided', status: decision };
  }

  async interfaceLanguage(_accountId: string, hint?: string): Promise<string> {
    return hint ?? 'en';
  }

  /** A channel's key-value state, in memory. */
  readonly state = memoryState();

  async conversations(accountId: string): Promise<readonly ConversationSummary[]> {
    return [...this.#conversations.entries()]
      .filter(([, c]) => c.owner === accountId)
      .sort(([, a], [, b]) => b.updatedAt.getTime() - a.updatedAt.getTime())
      .map(([conversationId, c]) => ({ conversationId, title: c.entries[0]?.text.slice(0, 40) ?? null, status: 'completed', updatedAt: c.updatedAt }));
  }

  async transcript(accountId: string, conversationId: string): Promise<readonly TranscriptEntry[]> {
    const conversation = this.#conversations.get(conversationId);
    if (!conversation) throw new ChannelError('not_found', 'scripted', `No conversation ${conversationId}.`);
    if (conversation.owner !== accountId) throw new ChannelError('forbidden', 'scripted', 'This conversation belongs to someone else.');
    return [...conversation.entries];
  }

  /** Changes how the next turns run. */
  script(options: ScriptedPipelineOptions): void {
    this.#options = { ...this.#options, ...options };
  }

  async #turn(target: ReplyTarget, turn: number, override: ScriptedPipelineOptions = {}): Promise<void> {
    const channel = this.#channel;
    const script = { ...this.#options, ...override };
    const pause = async (): Promise<void> => {
      if (script.delayMs) await new Promise((resolve) => setTimeout(resolve, script.delayMs));
    };
    const progress = async (event: TurnProgress): Promise<void> => {
      await pause();
      channel.progress?.(target, event);
    };
    if (!script.noTool) {
      await progress({ type: 'tool_call', callId: `call-${turn}`, name: 'current_time', arguments: '{"zone":"Europe/Zurich"}', label: 'Checking the clock…' });
      await progress({ type: 'tool_result', callId: `call-${turn}`, name: 'current_time', content: '2025-01-01T10:30:00+01:00', isError: false });
    }
    if (script.withdrawn !== undefined) {
      await progress({ type: 'text_delta', messageId: `draft-${turn}`, delta: script.withdrawn });
      await progress({ type: 'discard', messageId: `draft-${turn}` });
    }
    const reply = script.reply ?? 'It is 10:30 in Zurich.';
    const size = script.chunkChars ?? 4;
    for (let i = 0; i < reply.length; i += size) {
      await progress({ type: 'text_delta', messageId: `msg-${turn}`, delta: reply.slice(i, i + size) });
      if (i === 0 && script.gate) await script.gate;
    }
    await pause();
    if (script.fail !== undefined) {
      channel.settle?.(target, { kind: 'error', correlationId: target.correlationId, error: script.fail });
      return;
    }
    this.#conversations.get(target.conversationId)?.entries.push({ id: `reply-${turn}`, role: 'assistant', text: reply, at: new Date() });
    try {
      if (script.approval)
        this.#asked.set(script.approval.id, { conversationId: target.conversationId, accountId: target.accountId, sessionId: target.sessionId });
      const part = await channel.send(target, reply, { deliveryKey: `delivery-${turn}`, ...(script.approval ? { approval: script.approval } : {}) });
      channel.settle?.(target, {
        kind: 'answered',
        parts: [part],
        outcome: {
          correlationId: target.correlationId,
          sessionId: target.sessionId,
          userId: `user-${target.accountId}`,
          reply,
          replyMessageId: `reply-${turn}`,
          status: 'completed',
          usage: { inputTokens: 10, outputTokens: 5, cost: '0.0001', currency: 'USD' },
        },
      });
    } catch {
      // The client left: the real pipeline logs the failed delivery and goes on.
    }
  }
}
