import { EventType, type AGUIEvent } from '@ag-ui/core';
import { PalaverError } from '../../domain/errors.js';
import type { StoredReply, TurnOutcome, TurnProgress } from '../../domain/ports/channel.js';
import { StreamedReply } from '../shared/streamed-reply.js';

/** Identifies the AG-UI run a translator speaks for. */
export interface AguiRunRef {
  readonly threadId: string;
  readonly runId: string;
}

/** The ids a run reports in RUN_STARTED's `metadata` and RUN_FINISHED's `result`. */
export interface AguiRunIds {
  readonly correlationId: string;
  readonly sessionId?: string;
}

import { INTERNAL_ERROR_CODE } from './web-constants.js';

export { INTERNAL_ERROR_CODE };

/** What ends a run that carried a reply: the turn's outcome, without what only the pipeline needs (usage, user). */
export type FinishedReply = Pick<TurnOutcome, 'correlationId' | 'sessionId' | 'reply' | 'replyMessageId' | 'status' | 'errorId'>;

/** RUN_ERROR code of a run whose turn failed and was answered with an apology (session status `failed`). */
export const TURN_FAILED_CODE = 'turn_failed';

/** Name of the AG-UI CUSTOM event that tells the page to remove a streamed message; `value` is `{ messageId }`. */
export const DISCARD_EVENT_NAME = 'palaver.discard';

/**
 * Name of the AG-UI CUSTOM event that shows the agent typing; `value` is `{ seconds }`, how long to show it unless a
 * message, the run's end or another typing event comes first.
 */
export const TYPING_EVENT_NAME = 'palaver.typing';

/**
 * Name of the AG-UI CUSTOM event that puts a reaction on one of the person's messages; `value` is
 * `{ messageId, emoji }`, where `messageId` is the message's channel id: the AG-UI run id that carried it.
 */
export const REACTION_EVENT_NAME = 'palaver.reaction';

/**
 * Name of the AG-UI CUSTOM event that shows a tool call as a line of progress for people (sent instead of the
 * TOOL_CALL events unless `showToolDetails`); `value` is `{ toolCallId, status: 'running', label }` when the call
 * starts, then `{ toolCallId, status: 'done' | 'failed' }`. It never carries the tool's name, arguments or result.
 */
export const TOOL_PROGRESS_EVENT_NAME = 'palaver.tool_progress';

/**
 * Name of the AG-UI CUSTOM event that asks the person to approve a tool call; `value` is
 * `{ approvalId, summary, expiresAt }`: the request's id (what an answer names), the question's text (what will
 * happen, as the text message before it says), and when it expires (ISO 8601). A client answers with a run whose
 * `forwardedProps.approval` is `{ id: approvalId, decision: 'approve' | 'decline' }`.
 */
export const APPROVAL_REQUESTED_EVENT_NAME = 'palaver.approval_requested';

/** The progress line of a tool call whose event carries no label (a pipeline that does not resolve labels). */
const GENERIC_TOOL_LABEL = 'Working on it…';

/**
 * Turns what the pipeline tells the web channel about one AG-UI run into AG-UI events. Pure and synchronous: every
 * method returns the events to send, in order; the caller only encodes and writes them.
 *
 * Life cycle: `start`, `progress` and `send` any number of times, then exactly one of `finish` (the turn answered
 * this run), `answeredTogether` (another run of the same batch carried the reply), `duplicate` (the run id was seen
 * before) or `fail`. After that every call returns `[]`, so a late call from a turn that outlived its stream is dropped.
 *
 * Shape of the output:
 * - RUN_STARTED comes first, once; the correlation and session ids ride along in `metadata` when known.
 * - Streamed text is TEXT_MESSAGE_START → TEXT_MESSAGE_CONTENT… → TEXT_MESSAGE_END; empty deltas are never sent. A
 *   tool call, or a delta for another message id, closes the open text message first.
 * - With `showToolDetails`, a tool call is TOOL_CALL_START (the tool's name) → TOOL_CALL_ARGS → TOOL_CALL_END and its
 *   result TOOL_CALL_RESULT with the message id `<callId>:result`. Without it, the client learns neither the name nor
 *   the arguments nor the result: a CUSTOM `palaver.tool_progress` event `{ toolCallId, status: 'running', label }`
 *   shows the tool's label, and another `{ toolCallId, status }` says whether it succeeded.
 * - The person sees exactly the sent reply, once: a sent part that the stream already showed adds nothing (the
 *   streamed message is closed once all of it was sent); otherwise the part is a new text message. Streamed text that
 *   is not the reply (a `discard`, a part that differs, text left over at the end, a failed turn) is withdrawn with
 *   TEXT_MESSAGE_END and a CUSTOM `palaver.discard` event `{ messageId }`, and the sent text follows as new messages.
 * - Each sent part the stream did not show is its own text message with its own id (`<runId>:part-<n>`), so a
 *   reply of several messages (replies as actions) is several bubbles.
 * - Typing is a CUSTOM `palaver.typing` event `{ seconds }`, left out while a streamed message is open (its growing
 *   text already shows the agent writing); a reaction is a CUSTOM `palaver.reaction` event `{ messageId, emoji }`.
 * - The run ends as the session's turn did: RUN_FINISHED (`result`: correlation id, session id, status `completed`,
 *   reply message id) when it answered; RUN_ERROR (code `turn_failed`, `metadata` with the ids and the `errorId` the
 *   apology shows) when it failed and the apology was sent; RUN_ERROR without an `errorId` when nothing could be sent.
 *
 * @example
 * const t = new AguiTranslator({ threadId, runId });
 * write(t.progress({ type: 'text_delta', messageId: 'm1', delta: 'Hi' }, ids));
 * write(t.send('Hi').events);
 * write(t.finish(outcome));
 */
export class AguiTranslator {
  readonly #run: AguiRunRef;
  readonly #showToolDetails: boolean;
  #started = false;
  #ended = false;
  /** The text message currently open (START sent, END not yet). */
  #openMessageId: string | undefined;
  /** The last text message id shown, used as `parentMessageId` of later tool calls. */
  #lastMessageId: string | undefined;
  /** Streamed messages still on screen, by AG-UI message id. */
  readonly #shown = new Set<string>();
  /** Messages streamed since the last tool call: the reply's streamed form. */
  #region: string[] = [];
  readonly #reply = new StreamedReply();
  /** A pipeline message id whose bubble was withdrawn continues under a fresh AG-UI id, so ids never repeat. */
  readonly #aliases = new Map<string, string>();
  #renames = 0;
  #parts = 0;
  /** The texts of the sent parts this run showed, in order (streamed or whole): what `finishExactly` compares. */
  readonly #partsShown: string[] = [];
  /** Whole messages on screen, by AG-UI id: withdrawn with the streamed ones when the run shows the reply afresh. */
  readonly #wholeShown: string[] = [];

  /**
   * @param options.showToolDetails send tool names, arguments and results to the client. Off by default: they can
   *   carry hidden context (ids, internal data) that the person must not see; the client then learns only the
   *   tool's label for people and whether it succeeded.
   */
  constructor(run: AguiRunRef, options: { showToolDetails?: boolean } = {}) {
    this.#run = run;
    this.#showToolDetails = options.showToolDetails ?? false;
  }

  /** True once the run ended (`finish`, `answeredTogether`, `duplicate` or `fail`). */
  get isEnded(): boolean {
    return this.#ended;
  }

  /** RUN_STARTED, if it was not sent yet. */
  start(ids?: AguiRunIds): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    return out;
  }

  /** Events for one progress event of the turn. */
  progress(event: TurnProgress, ids?: AguiRunIds): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    switch (event.type) {
      case 'text_delta': {
        // The AG-UI schema rejects an empty delta, and a START for nothing would render an empty bubble.
        if (event.delta === '') break;
        const id = this.#aliases.get(event.messageId) ?? event.messageId;
        this.#openText(out, id);
        if (!this.#region.includes(id)) this.#region.push(id);
        this.#reply.append(event.delta);
        out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: id, delta: event.delta });
        break;
      }
      case 'tool_call':
        // Text before a tool call stays on screen as its own message; the reply is what is streamed after it.
        this.#closeText(out);
        this.#region = [];
        this.#reply.reset();
        if (!this.#showToolDetails) {
          out.push(toolProgress({ toolCallId: event.callId, status: 'running', label: event.label ?? GENERIC_TOOL_LABEL }));
          break;
        }
        out.push({
          type: EventType.TOOL_CALL_START,
          toolCallId: event.callId,
          toolCallName: event.name,
          ...(this.#lastMessageId === undefined ? {} : { parentMessageId: this.#lastMessageId }),
        });
        if (event.arguments !== '') out.push({ type: EventType.TOOL_CALL_ARGS, toolCallId: event.callId, delta: event.arguments });
        out.push({ type: EventType.TOOL_CALL_END, toolCallId: event.callId });
        break;
      case 'tool_result':
        if (!this.#showToolDetails) {
          out.push(toolProgress({ toolCallId: event.callId, status: event.isError ? 'failed' : 'done' }));
          break;
        }
        out.push({
          type: EventType.TOOL_CALL_RESULT,
          messageId: `${event.callId}:result`,
          toolCallId: event.callId,
          content: event.content,
          role: 'tool',
          // The content stays a plain string for every client; the flag lets a UI style a failure.
          ...(event.isError ? { metadata: { isError: true } } : {}),
        });
        break;
      case 'discard': {
        const id = this.#aliases.get(event.messageId) ?? event.messageId;
        if (this.#region.includes(id)) this.#withdraw(out, this.#region);
        else if (this.#shown.has(id)) this.#withdraw(out, [id]);
        else break;
        this.#aliases.set(event.messageId, `${event.messageId}:${++this.#renames}`);
        break;
      }
    }
    return out;
  }

  /**
   * Events for one sent part of the reply, and the AG-UI message id that shows it (the streamed message when the
   * stream already showed this part).
   */
  send(text: string, ids?: AguiRunIds): { readonly events: AGUIEvent[]; readonly messageId: string } {
    const messageId = `${this.#run.runId}:part-${++this.#parts}`;
    if (this.#ended) return { events: [], messageId };
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    const match = this.#reply.match(text);
    this.#partsShown.push(text);
    if (match.kind === 'shown') {
      const streamedId = this.#region.at(-1) ?? messageId;
      if (this.#reply.isComplete) this.#closeText(out);
      return { events: out, messageId: streamedId };
    }
    if (match.kind === 'mismatch') {
      this.#withdraw(out, this.#region);
      match.replay.forEach((part, index) => this.#wholeMessage(out, `${messageId}:replay-${index}`, part));
    }
    this.#wholeMessage(out, messageId, text);
    return { events: out, messageId };
  }

  /**
   * The CUSTOM `palaver.approval_requested` event for a sent part that asks the person to approve a tool call (the
   * part itself was shown by `send`, just before).
   */
  approvalRequested(approval: { readonly approvalId: string; readonly summary: string; readonly expiresAt: string }, ids?: AguiRunIds): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    out.push({ type: EventType.CUSTOM, name: APPROVAL_REQUESTED_EVENT_NAME, value: { ...approval } });
    return out;
  }

  /**
   * Events that end a run that carried a decision the channel could not pass on (decided before, expired, not the
   * caller's, unknown): `text` says so as one message, then RUN_FINISHED with `result.status` `approval_<outcome>`.
   * `result`: more of RUN_FINISHED's `result` (the decision that stands). No turn answers such a run.
   */
  approvalRefused(text: string, outcome: string, result: Readonly<Record<string, string>> = {}): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out);
    this.#wholeMessage(out, `${this.#run.runId}:approval`, text);
    this.#ended = true;
    out.push({ type: EventType.RUN_FINISHED, threadId: this.#run.threadId, runId: this.#run.runId, result: { ...result, status: `approval_${outcome}` } });
    return out;
  }

  /** A typing indicator for `seconds`; nothing while a streamed message is open, or once the run ended. */
  typing(seconds: number, ids?: AguiRunIds): AGUIEvent[] {
    if (this.#ended || this.#openMessageId !== undefined) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    out.push({ type: EventType.CUSTOM, name: TYPING_EVENT_NAME, value: { seconds } });
    return out;
  }

  /** A reaction `emoji` on the person's message `messageId` (checked by the caller: it is shown as given). */
  reaction(messageId: string, emoji: string, ids?: AguiRunIds): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    out.push({ type: EventType.CUSTOM, name: REACTION_EVENT_NAME, value: { messageId, emoji } });
    return out;
  }

  /**
   * Events that end the run that carried the reply: withdrawn text if the stream showed more than was sent, then
   * RUN_FINISHED for a completed turn, or RUN_ERROR with the error id for a failed one (its apology was sent as text).
   */
  finish(outcome: FinishedReply): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, outcome);
    if (this.#reply.hasUnsentText) {
      const replay = [...this.#reply.shownParts];
      this.#withdraw(out, this.#region);
      replay.forEach((part, index) => this.#wholeMessage(out, `${this.#run.runId}:final-${index}`, part));
    }
    this.#closeText(out);
    this.#ended = true;
    const ids = { correlationId: outcome.correlationId, sessionId: outcome.sessionId, status: outcome.status, replyMessageId: outcome.replyMessageId };
    if (outcome.status === 'failed') {
      // The person already got the apology as text; the error carries it again with the id they can quote.
      out.push({
        type: EventType.RUN_ERROR,
        message: outcome.reply,
        code: TURN_FAILED_CODE,
        metadata: { ...ids, ...(outcome.errorId === undefined ? {} : { errorId: outcome.errorId }) },
      });
    } else {
      out.push({ type: EventType.RUN_FINISHED, threadId: this.#run.threadId, runId: this.#run.runId, result: ids });
    }
    return out;
  }

  /**
   * Ends the run showing exactly `outcome.reply`, for a run that may have missed part of its turn (a retry attached
   * mid-turn, a relayed event lost between processes): when the sent parts it showed are the reply, as `finish`;
   * otherwise everything it showed is withdrawn and the reply is shown as one message, then the run ends as `finish`.
   */
  finishExactly(outcome: FinishedReply): AGUIEvent[] {
    if (this.#ended) return [];
    if (sameText(this.#partsShown.join('\n\n'), outcome.reply) && !this.#reply.hasUnsentText) return this.finish(outcome);
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, outcome);
    this.#withdraw(out, [...this.#shown]);
    for (const messageId of this.#wholeShown.splice(0)) out.push({ type: EventType.CUSTOM, name: DISCARD_EVENT_NAME, value: { messageId } });
    this.#region = [];
    this.#reply.reset();
    this.#partsShown.length = 0;
    this.#wholeMessage(out, `${this.#run.runId}:reply`, outcome.reply);
    return [...out, ...this.finish(outcome)];
  }

  /**
   * Events that end a run whose message was answered together with later ones, in the run `answeredIn`: the reply
   * went there, this run ends without text so the client is not left waiting.
   */
  answeredTogether(ids: AguiRunIds, answeredIn: string): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    this.#closeText(out);
    this.#ended = true;
    out.push({
      type: EventType.RUN_FINISHED,
      threadId: this.#run.threadId,
      runId: this.#run.runId,
      result: {
        correlationId: ids.correlationId,
        ...(ids.sessionId === undefined ? {} : { sessionId: ids.sessionId }),
        status: 'answered_together',
        answeredIn,
      },
    });
    return out;
  }

  /**
   * Events that end a run whose message was stored and is held: an operator paused the agent in the conversation, a
   * person answers. RUN_FINISHED with status `held`; the page shows that a person will answer.
   */
  held(ids: AguiRunIds): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, ids);
    this.#ended = true;
    const result = { correlationId: ids.correlationId, ...(ids.sessionId === undefined ? {} : { sessionId: ids.sessionId }), status: 'held' };
    out.push({ type: EventType.RUN_FINISHED, threadId: this.#run.threadId, runId: this.#run.runId, result });
    return out;
  }

  /** Events that end a run whose run id was seen before: an empty run, finished with status `duplicate`. */
  duplicate(correlationId: string): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, { correlationId });
    this.#ended = true;
    out.push({ type: EventType.RUN_FINISHED, threadId: this.#run.threadId, runId: this.#run.runId, result: { correlationId, status: 'duplicate' } });
    return out;
  }

  /**
   * Events for a retried run whose turn already completed: the stored reply again, as one text message (its id is
   * the stored reply's message id), then RUN_FINISHED with status `duplicate`, the ids and the reply's own status
   * (with its `errorId` when it was an apology). Nothing new was stored or asked of the model.
   */
  replay(stored: StoredReply): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, { correlationId: stored.correlationId, sessionId: stored.sessionId });
    this.#wholeMessage(out, stored.replyMessageId, stored.text);
    this.#ended = true;
    out.push({
      type: EventType.RUN_FINISHED,
      threadId: this.#run.threadId,
      runId: this.#run.runId,
      result: {
        correlationId: stored.correlationId,
        sessionId: stored.sessionId,
        status: 'duplicate',
        replyStatus: stored.status,
        replyMessageId: stored.replyMessageId,
        ...(stored.errorId === undefined ? {} : { errorId: stored.errorId }),
      },
    });
    return out;
  }

  /**
   * Events that end a run that failed: nothing was sent, so streamed text is withdrawn, then RUN_ERROR. A
   * `PalaverError` keeps its code and message (those are written to be shown); anything else becomes
   * `internal_error` with a generic message, since its text may expose internals. `correlationId`, when known, is
   * added so the person can quote it.
   */
  fail(error: unknown, correlationId?: string): AGUIEvent[] {
    if (this.#ended) return [];
    const out: AGUIEvent[] = [];
    this.#ensureStarted(out, correlationId === undefined ? undefined : { correlationId });
    if (this.#reply.isStreaming) this.#withdraw(out, this.#region);
    this.#closeText(out);
    this.#ended = true;
    const known = error instanceof PalaverError;
    const reference = correlationId === undefined ? '' : ` (reference ${correlationId})`;
    out.push({
      type: EventType.RUN_ERROR,
      message: known ? error.message : `The agent could not answer because of an internal error${reference}.`,
      code: known ? error.code : INTERNAL_ERROR_CODE,
    });
    return out;
  }

  #ensureStarted(out: AGUIEvent[], ids?: AguiRunIds): void {
    if (this.#started) return;
    this.#started = true;
    const metadata = ids === undefined ? undefined : { correlationId: ids.correlationId, ...(ids.sessionId === undefined ? {} : { sessionId: ids.sessionId }) };
    out.push({ type: EventType.RUN_STARTED, threadId: this.#run.threadId, runId: this.#run.runId, ...(metadata ? { metadata } : {}) });
  }

  #openText(out: AGUIEvent[], messageId: string): void {
    if (this.#openMessageId === messageId) return;
    this.#closeText(out);
    out.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
    this.#openMessageId = messageId;
    this.#lastMessageId = messageId;
    this.#shown.add(messageId);
  }

  #closeText(out: AGUIEvent[]): void {
    if (this.#openMessageId === undefined) return;
    out.push({ type: EventType.TEXT_MESSAGE_END, messageId: this.#openMessageId });
    this.#openMessageId = undefined;
  }

  /** A sent part shown as one complete text message. */
  #wholeMessage(out: AGUIEvent[], messageId: string, text: string): void {
    this.#closeText(out);
    if (text === '') return;
    out.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
    out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: text });
    out.push({ type: EventType.TEXT_MESSAGE_END, messageId });
    this.#lastMessageId = messageId;
    this.#wholeShown.push(messageId);
  }

  /** Takes streamed messages off the screen: END for the open one, then a discard event per message. */
  #withdraw(out: AGUIEvent[], messageIds: readonly string[]): void {
    for (const messageId of [...messageIds]) {
      if (this.#openMessageId === messageId) this.#closeText(out);
      if (!this.#shown.delete(messageId)) continue;
      out.push({ type: EventType.CUSTOM, name: DISCARD_EVENT_NAME, value: { messageId } });
    }
    if (messageIds === this.#region || messageIds.every((id) => this.#region.includes(id))) {
      this.#region = this.#region.filter((id) => !messageIds.includes(id));
      if (this.#region.length === 0) this.#reply.reset();
    }
  }
}

/** Whether two replies read the same, whitespace aside (splitting a reply into parts may trim it). */
function sameText(a: string, b: string): boolean {
  return a.replace(/\s+/g, ' ').trim() === b.replace(/\s+/g, ' ').trim();
}

function toolProgress(value: { toolCallId: string; status: 'running' | 'done' | 'failed'; label?: string }): AGUIEvent {
  return { type: EventType.CUSTOM, name: TOOL_PROGRESS_EVENT_NAME, value };
}
