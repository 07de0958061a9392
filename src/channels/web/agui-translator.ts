import { EventType, type AGUIEvent } from '@ag-ui/core';
import { PalaverError } from '../../domain/errors.js';
import type { TurnEvent, TurnOutcome } from '../../domain/ports/channel.js';

/** Identifies the AG-UI run a translator speaks for. */
export interface AguiRunRef {
  readonly threadId: string;
  readonly runId: string;
}

/** The AG-UI `code` sent in RUN_ERROR when the failure is not a `PalaverError`. */
export const INTERNAL_ERROR_CODE = 'internal_error';

/**
 * Turns the `TurnEvent`s of one run into AG-UI events. Pure and synchronous: every method returns the events to
 * send, in order, and the caller only encodes and writes them.
 *
 * Life cycle: any number of `translate` calls, then exactly one of `finish` (the handler resolved) or `fail`
 * (it threw). After that every call returns `[]`, so a late event from a turn that outlived its stream is dropped.
 *
 * Shape of the output:
 * - RUN_STARTED comes first, before whatever arrives first (normally `turn_started`, whose correlation and
 *   session ids ride along in `metadata`).
 * - Text is TEXT_MESSAGE_START → TEXT_MESSAGE_CONTENT… → TEXT_MESSAGE_END. Empty deltas are never sent.
 *   A tool call, or a delta for another message id, closes the open text message first.
 * - A tool call is TOOL_CALL_START → TOOL_CALL_ARGS (when there are arguments) → TOOL_CALL_END; its result is
 *   TOOL_CALL_RESULT with the message id `<callId>:result`.
 * - `reply` closes the text streamed since the last tool call: that text is the reply, whatever message id it was
 *   streamed under. When nothing was streamed since, the whole reply is sent as one message. `finish` does the
 *   same with `outcome.reply` when no `reply` event came.
 * - The run ends with RUN_FINISHED (`result` carries correlation id, session id and status) or RUN_ERROR.
 *
 * @example
 * const t = new AguiTranslator({ threadId, runId });
 * const outcome = await handler.handle(msg, { onEvent: (e) => send(t.translate(e)) });
 * send(t.finish(outcome));
 */
export class AguiTranslator {
  private readonly run: AguiRunRef;
  private started = false;
  private ended = false;
  /** The text message currently open (START sent, END not yet). */
  private openMessageId: string | undefined;
  /** Whether any text was streamed since the last tool call; that text is the reply's streamed form. */
  private streamedSinceToolCall = false;
  /** The last text message id seen, used as `parentMessageId` of later tool calls. */
  private lastMessageId: string | undefined;
  private replySent = false;
  private readonly toolNames = new Map<string, string>();
  private readonly showToolDetails: boolean;

  /**
   * @param options.showToolDetails send tool arguments and results to the client. Off by default: they can carry
   *   hidden context (ids, internal data) that the person must not see; the client then learns only which tool
   *   ran and whether it succeeded.
   */
  constructor(run: AguiRunRef, options: { showToolDetails?: boolean } = {}) {
    this.run = run;
    this.showToolDetails = options.showToolDetails ?? false;
  }

  /** True once `finish` or `fail` was called. */
  get isEnded(): boolean {
    return this.ended;
  }

  /** Events for one `TurnEvent`. */
  translate(event: TurnEvent): AGUIEvent[] {
    if (this.ended) return [];
    const out: AGUIEvent[] = [];
    if (event.type === 'turn_started') {
      this.ensureStarted(out, { correlationId: event.correlationId, sessionId: event.sessionId });
      return out;
    }
    this.ensureStarted(out);
    switch (event.type) {
      case 'text_delta':
        this.appendText(out, event.messageId, event.delta);
        break;
      case 'tool_call':
        this.closeText(out);
        this.streamedSinceToolCall = false;
        this.toolNames.set(event.callId, event.name);
        out.push({
          type: EventType.TOOL_CALL_START,
          toolCallId: event.callId,
          toolCallName: event.name,
          ...(this.lastMessageId === undefined ? {} : { parentMessageId: this.lastMessageId }),
        });
        if (this.showToolDetails && event.arguments !== '') out.push({ type: EventType.TOOL_CALL_ARGS, toolCallId: event.callId, delta: event.arguments });
        out.push({ type: EventType.TOOL_CALL_END, toolCallId: event.callId });
        break;
      case 'tool_result':
        out.push({
          type: EventType.TOOL_CALL_RESULT,
          messageId: `${event.callId}:result`,
          toolCallId: event.callId,
          content: this.showToolDetails ? event.content : event.isError ? 'failed' : 'done',
          role: 'tool',
          // The content stays a plain string for every client; the flag lets a UI style a failure.
          ...(event.isError ? { metadata: { isError: true } } : {}),
        });
        break;
      case 'reply':
        this.emitReply(out, event.messageId, event.text);
        break;
    }
    return out;
  }

  /** Events that end a run whose handler resolved: the reply if it was not sent yet, then RUN_FINISHED. */
  finish(outcome: TurnOutcome): AGUIEvent[] {
    if (this.ended) return [];
    const out: AGUIEvent[] = [];
    this.ensureStarted(out, { correlationId: outcome.correlationId, sessionId: outcome.sessionId });
    if (!this.replySent) this.emitReply(out, outcome.replyMessageId, outcome.reply);
    this.closeText(out);
    this.ended = true;
    out.push({
      type: EventType.RUN_FINISHED,
      threadId: this.run.threadId,
      runId: this.run.runId,
      // A failed turn still ends normally here: the person got an apology as text, the status tells clients why.
      result: { correlationId: outcome.correlationId, sessionId: outcome.sessionId, status: outcome.status, replyMessageId: outcome.replyMessageId },
    });
    return out;
  }

  /**
   * Events that end a run whose handler threw. A `PalaverError` keeps its code and message (those are written
   * to be shown); anything else becomes `internal_error` with a generic message, since its text may expose
   * internals. `correlationId`, when known, is added so the person can quote it.
   */
  fail(error: unknown, correlationId?: string): AGUIEvent[] {
    if (this.ended) return [];
    const out: AGUIEvent[] = [];
    this.ensureStarted(out);
    this.closeText(out);
    this.ended = true;
    const known = error instanceof PalaverError;
    const reference = correlationId === undefined ? '' : ` (reference ${correlationId})`;
    out.push({
      type: EventType.RUN_ERROR,
      message: known ? error.message : `The agent could not answer because of an internal error${reference}.`,
      code: known ? error.code : INTERNAL_ERROR_CODE,
    });
    return out;
  }

  private ensureStarted(out: AGUIEvent[], ids?: { correlationId: string; sessionId: string }): void {
    if (this.started) return;
    this.started = true;
    out.push({ type: EventType.RUN_STARTED, threadId: this.run.threadId, runId: this.run.runId, ...(ids ? { metadata: ids } : {}) });
  }

  private appendText(out: AGUIEvent[], messageId: string, delta: string): void {
    // The AG-UI schema rejects an empty delta, and a START for nothing would render an empty bubble.
    if (delta === '') return;
    if (this.openMessageId !== messageId) {
      this.closeText(out);
      out.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
      this.openMessageId = messageId;
      this.lastMessageId = messageId;
    }
    this.streamedSinceToolCall = true;
    out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta });
  }

  private closeText(out: AGUIEvent[]): void {
    if (this.openMessageId === undefined) return;
    out.push({ type: EventType.TEXT_MESSAGE_END, messageId: this.openMessageId });
    this.openMessageId = undefined;
  }

  private emitReply(out: AGUIEvent[], messageId: string, text: string): void {
    this.replySent = true;
    if (this.streamedSinceToolCall) {
      // Already on screen as deltas; only the closing END is missing.
      this.closeText(out);
      return;
    }
    this.appendText(out, messageId, text);
    this.closeText(out);
  }
}
