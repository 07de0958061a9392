import { describe, expect, it } from 'vitest';
import type { AGUIEvent } from '@ag-ui/core';
import { AguiTranslator } from '../../src/channels/web/agui-translator.js';
import type { TurnOutcome, TurnProgress } from '../../src/domain/ports/channel.js';
import { ModelError } from '../../src/domain/errors.js';
import { assertValidAguiEvent } from './sse.js';

const run = { threadId: 'thread-1', runId: 'run-1' };
const ids = { correlationId: 'corr-1', sessionId: 'session-1' };

function outcome(overrides: Partial<TurnOutcome> = {}): TurnOutcome {
  return {
    correlationId: 'corr-1',
    sessionId: 'session-1',
    userId: 'user-1',
    reply: 'Hello there',
    replyMessageId: 'msg-1',
    status: 'completed',
    usage: { inputTokens: 1, outputTokens: 1, cost: '0', currency: 'USD' },
    ...overrides,
  };
}

type Step = TurnProgress | { readonly send: string };

function translateAll(steps: Step[], end: TurnOutcome | Error = outcome(), showToolDetails = true): AGUIEvent[] {
  const t = new AguiTranslator(run, { showToolDetails });
  const out = steps.flatMap((step) => ('send' in step ? t.send(step.send, ids).events : t.progress(step, ids)));
  out.push(...(end instanceof Error ? t.fail(end, 'corr-1') : t.finish(end)));
  out.forEach(assertValidAguiEvent);
  return out;
}

/** The assistant messages a client shows after these events: discarded ones removed. */
function visible(events: AGUIEvent[]): string[] {
  const messages: Array<{ id: string; text: string }> = [];
  for (const e of events as Array<AGUIEvent & Record<string, unknown>>) {
    if (e.type === 'TEXT_MESSAGE_START') messages.push({ id: String(e.messageId), text: '' });
    if (e.type === 'TEXT_MESSAGE_CONTENT') messages.findLast((m) => m.id === e.messageId)!.text += String(e.delta);
    if (e.type === 'CUSTOM' && e.name === 'palaver.discard') {
      const id = (e.value as { messageId: string }).messageId;
      messages.splice(
        messages.findLastIndex((m) => m.id === id),
        1,
      );
    }
  }
  return messages.map((m) => m.text);
}

describe('AguiTranslator', () => {
  it('by default tells the client only the tool label and whether it worked, never its name, arguments or result', () => {
    const out = translateAll(
      [
        { type: 'tool_call', callId: 'c1', name: 'cancel_booking', arguments: '{"booking_id":"b-42"}', label: 'Cancelling your booking…' },
        { type: 'tool_result', callId: 'c1', name: 'cancel_booking', content: 'internal row 42 deleted', isError: false },
        { type: 'tool_call', callId: 'c2', name: 'notify', arguments: '{}' },
        { type: 'tool_result', callId: 'c2', name: 'notify', content: 'smtp 10.0.0.5 refused', isError: true },
        { send: 'Cancelled.' },
      ],
      outcome(),
      false,
    );
    const wire = JSON.stringify(out);
    expect(wire).not.toContain('cancel_booking');
    expect(wire).not.toContain('notify');
    expect(wire).not.toContain('b-42');
    expect(wire).not.toContain('internal row');
    expect(wire).not.toContain('10.0.0.5');
    expect(out.filter((e) => e.type.startsWith('TOOL_CALL'))).toEqual([]);
    expect(out.filter((e) => e.type === 'CUSTOM').map((e) => (e as { value: unknown }).value)).toEqual([
      { toolCallId: 'c1', status: 'running', label: 'Cancelling your booking…' },
      { toolCallId: 'c1', status: 'done' },
      { toolCallId: 'c2', status: 'running', label: 'Working on it…' },
      { toolCallId: 'c2', status: 'failed' },
    ]);
  });

  it('streams a full turn as RUN_STARTED, tool call, text message and RUN_FINISHED, the sent text not repeated', () => {
    const out = translateAll([
      { type: 'tool_call', callId: 'c1', name: 'current_time', arguments: '{}' },
      { type: 'tool_result', callId: 'c1', name: 'current_time', content: '10:30', isError: false },
      { type: 'text_delta', messageId: 'msg-1', delta: 'Hello ' },
      { type: 'text_delta', messageId: 'msg-1', delta: '' },
      { type: 'text_delta', messageId: 'msg-1', delta: 'there' },
      { send: 'Hello there' },
    ]);
    expect(out.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(out[0]).toMatchObject({ threadId: 'thread-1', runId: 'run-1', metadata: { correlationId: 'corr-1', sessionId: 'session-1' } });
    expect(out[4]).toMatchObject({ toolCallId: 'c1', content: '10:30', role: 'tool' });
    expect(out[5]).toMatchObject({ messageId: 'msg-1', role: 'assistant' });
    expect(out.at(-1)).toMatchObject({ result: { correlationId: 'corr-1', sessionId: 'session-1', status: 'completed', replyMessageId: 'msg-1' } });
  });

  it('shows a part that was not streamed as one whole message, and each part of a split reply in order', () => {
    const whole = translateAll([{ send: 'Whole answer' }]);
    expect(whole.map((e) => e.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
    expect(whole[2]).toMatchObject({ messageId: 'run-1:part-1', delta: 'Whole answer' });
    expect(visible(translateAll([{ send: 'One.' }, { send: 'Two.' }]))).toEqual(['One.', 'Two.']);
  });

  it('closes a streamed message only once every part of it was sent', () => {
    const t = new AguiTranslator(run);
    t.progress({ type: 'text_delta', messageId: 'm', delta: 'First part. Second part.' }, ids);
    const first = t.send('First part.', ids);
    expect(first.events).toEqual([]);
    expect(first.messageId).toBe('m');
    expect(t.send('Second part.', ids).events.map((e) => e.type)).toEqual(['TEXT_MESSAGE_END']);
  });

  it('withdraws discarded text and shows the sent text as a new message', () => {
    const out = translateAll([
      { type: 'text_delta', messageId: 'm1', delta: 'Broken ans' },
      { type: 'discard', messageId: 'm1' },
      { type: 'text_delta', messageId: 'm1', delta: 'Sorry, ' },
      { type: 'text_delta', messageId: 'm1', delta: 'try again.' },
      { send: 'Sorry, try again.' },
    ]);
    expect(out.slice(1, 5).map((e) => e.type)).toEqual(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'CUSTOM']);
    expect(out[4]).toMatchObject({ name: 'palaver.discard', value: { messageId: 'm1' } });
    // The retried stream gets a fresh message id, so no id is used twice.
    expect(out[5]).toMatchObject({ type: 'TEXT_MESSAGE_START', messageId: 'm1:1' });
    expect(visible(out)).toEqual(['Sorry, try again.']);
  });

  it('withdraws streamed text the sent part does not match, and text left over at the end', () => {
    expect(visible(translateAll([{ type: 'text_delta', messageId: 'm', delta: 'Draft answer' }, { send: 'Checked answer' }]))).toEqual(['Checked answer']);
    expect(visible(translateAll([{ type: 'text_delta', messageId: 'm', delta: 'Kept. Cut off later' }, { send: 'Kept.' }]))).toEqual(['Kept.']);
    expect(visible(translateAll([{ type: 'text_delta', messageId: 'm', delta: 'Never sent' }]))).toEqual([]);
  });

  it('keeps text streamed before a tool call, and closes it first', () => {
    const out = translateAll([
      { type: 'text_delta', messageId: 'm1', delta: 'Let me check.' },
      { type: 'tool_call', callId: 'c1', name: 'lookup', arguments: '' },
      { type: 'text_delta', messageId: 'm2', delta: 'Found it.' },
      { send: 'Found it.' },
    ]);
    expect(out.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(out[4]).toMatchObject({ parentMessageId: 'm1' });
    expect(visible(out)).toEqual(['Let me check.', 'Found it.']);
  });

  it('ends with RUN_ERROR carrying the code of a PalaverError, the streamed text withdrawn', () => {
    const out = translateAll([{ type: 'text_delta', messageId: 'm1', delta: 'Hal' }], new ModelError('unreachable', 'gpt', 'The model could not be reached.'));
    expect(out.map((e) => e.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'CUSTOM', 'RUN_ERROR']);
    expect(out.at(-1)).toMatchObject({ code: 'model_unreachable', message: 'The model could not be reached.' });
  });

  it('ends a failed turn, whose apology was sent, with RUN_ERROR carrying the error id; a retried run of it says the same', () => {
    const apology = 'Sorry, I cannot answer right now. Please try again in a moment.\nError reference: 0A1B2C3D';
    const out = translateAll([{ send: apology }], outcome({ status: 'failed', reply: apology, errorId: '0A1B2C3D' }));
    expect(out.map((e) => e.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_ERROR']);
    expect(visible(out)).toEqual([apology]);
    expect(out.at(-1)).toMatchObject({
      code: 'turn_failed',
      message: apology,
      metadata: { correlationId: 'corr-1', sessionId: 'session-1', status: 'failed', replyMessageId: 'msg-1', errorId: '0A1B2C3D' },
    });

    const replay = new AguiTranslator(run).replay({
      sessionId: 'session-1',
      correlationId: 'corr-1',
      replyMessageId: 'msg-1',
      text: apology,
      status: 'failed',
      errorId: '0A1B2C3D',
    });
    replay.forEach(assertValidAguiEvent);
    expect(replay.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'duplicate', replyStatus: 'failed', errorId: '0A1B2C3D' } });
  });

  it('hides the text of unexpected errors', () => {
    const out = translateAll([], new Error('connect ECONNREFUSED 10.0.0.5:5432 password=hunter2'));
    const error = out.at(-1) as { code: string; message: string };
    expect(error.code).toBe('internal_error');
    expect(error.message).not.toContain('hunter2');
    expect(error.message).toContain('corr-1');
  });

  it('ends a duplicate run empty, and a run answered in another run with a pointer to it', () => {
    const duplicate = new AguiTranslator(run).duplicate('corr-9');
    duplicate.forEach(assertValidAguiEvent);
    expect(duplicate).toMatchObject([
      { type: 'RUN_STARTED', metadata: { correlationId: 'corr-9' } },
      { type: 'RUN_FINISHED', result: { correlationId: 'corr-9', status: 'duplicate' } },
    ]);
    const together = new AguiTranslator(run).answeredTogether(ids, 'run-2');
    together.forEach(assertValidAguiEvent);
    expect(together.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      result: { correlationId: 'corr-1', sessionId: 'session-1', status: 'answered_together', answeredIn: 'run-2' },
    });
  });

  it('ignores everything after the run ended', () => {
    const t = new AguiTranslator(run);
    t.finish(outcome());
    expect(t.isEnded).toBe(true);
    expect(t.progress({ type: 'text_delta', messageId: 'm', delta: 'late' })).toEqual([]);
    expect(t.send('late').events).toEqual([]);
    expect(t.fail(new Error('late'))).toEqual([]);
    expect(t.answeredTogether(ids, 'x')).toEqual([]);
  });
});
