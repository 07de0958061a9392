import type { ConversationHandler, InboundMessage, TurnEvent, TurnOutcome } from '../../src/domain/ports/channel.js';

export interface FakeHandlerOptions {
  /** Reply text, streamed as deltas of `chunkChars`. Default "It is 10:30 in Zurich." */
  readonly reply?: string;
  readonly chunkChars?: number;
  /** Pause between events, to make streaming observable. Default 0. */
  readonly delayMs?: number;
  /** Throw this after turn_started instead of answering. */
  readonly fail?: Error;
  /** Skip the `current_time` tool call. */
  readonly noTool?: boolean;
}

/** A stand-in for the runtime: emits what a real turn would (turn_started, a tool call and result, deltas, reply). */
export class FakeHandler implements ConversationHandler {
  readonly received: InboundMessage[] = [];
  readonly signals: AbortSignal[] = [];
  private turns = 0;

  constructor(private readonly options: FakeHandlerOptions = {}) {}

  async handle(message: InboundMessage, options?: { onEvent?: (event: TurnEvent) => void; signal?: AbortSignal }): Promise<TurnOutcome> {
    this.received.push(message);
    if (options?.signal) this.signals.push(options.signal);
    const turn = ++this.turns;
    const emit = async (event: TurnEvent): Promise<void> => {
      if (this.options.delayMs) await new Promise((resolve) => setTimeout(resolve, this.options.delayMs));
      options?.onEvent?.(event);
    };
    const correlationId = `corr-${turn}`;
    const sessionId = `session-${message.conversationId}`;
    await emit({ type: 'turn_started', correlationId, sessionId });
    if (this.options.fail) throw this.options.fail;
    if (!this.options.noTool) {
      await emit({ type: 'tool_call', callId: `call-${turn}`, name: 'current_time', arguments: '{"zone":"Europe/Zurich"}' });
      await emit({ type: 'tool_result', callId: `call-${turn}`, name: 'current_time', content: '2025-01-01T10:30:00+01:00', isError: false });
    }
    const reply = this.options.reply ?? 'It is 10:30 in Zurich.';
    const messageId = `msg-${turn}`;
    const size = this.options.chunkChars ?? 4;
    for (let i = 0; i < reply.length; i += size) await emit({ type: 'text_delta', messageId, delta: reply.slice(i, i + size) });
    await emit({ type: 'reply', messageId, text: reply });
    return {
      correlationId,
      sessionId,
      userId: `user-${message.accountId}`,
      reply,
      replyMessageId: messageId,
      status: 'completed',
      usage: { inputTokens: 10, outputTokens: 5, cost: '0.0001', currency: 'USD' },
    };
  }
}
