import { describe, expect, it } from 'vitest';
import { AguiTranslator } from '../../src/channels/web/agui-translator.js';
import type { TurnEvent, TurnOutcome } from '../../src/domain/ports/channel.js';
import { ModelError } from '../../src/domain/errors.js';
import { assertValidAguiEvent } from './sse.js';

const run = { threadId: 'thread-1', runId: 'run-1' };

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

function translateAll(events: TurnEvent[], end: TurnOutcome | Error = outcome(), showToolDetails = true) {
  const t = new AguiTranslator(run, { showToolDetails });
  const out = events.flatMap((e) => t.translate(e));
  out.push(...(end instanceof Error ? t.fail(end, 'corr-1') : t.finish(end)));
  out.forEach(assertValidAguiEvent);
  return out;
}

describe('AguiTranslator', () => {
  it('by default tells the client only which tool ran and whether it worked, never its arguments or result', () => {
    const out = translateAll(
      [
        { type: 'tool_call', callId: 'c1', name: 'cancel_booking', arguments: '{"booking_id":"b-42"}' },
        { type: 'tool_result', callId: 'c1', name: 'cancel_booking', content: 'internal row 42 deleted', isError: false },
        { type: 'reply', messageId: 'msg-1', text: 'Cancelled.' },
      ],
      outcome(),
      false,
    );
    const wire = JSON.stringify(out);
    expect(wire).toContain('cancel_booking');
    expect(wire).not.toContain('b-42');
    expect(wire).not.toContain('internal row');
    expect(out.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({ content: 'done' });
  });

  it('streams a full turn as RUN_STARTED, tool call, text message and RUN_FINISHED', () => {
    const out = translateAll([
      { type: 'turn_started', correlationId: 'corr-1', sessionId: 'session-1' },
      { type: 'tool_call', callId: 'c1', name: 'current_time', arguments: '{}' },
      { type: 'tool_result', callId: 'c1', name: 'current_time', content: '10:30', isError: false },
      { type: 'text_delta', messageId: 'msg-1', delta: 'Hello ' },
      { type: 'text_delta', messageId: 'msg-1', delta: '' },
      { type: 'text_delta', messageId: 'msg-1', delta: 'there' },
      { type: 'reply', messageId: 'msg-1', text: 'Hello there' },
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
    expect(out.at(-1)).toMatchObject({ result: { correlationId: 'corr-1', status: 'completed' } });
  });

  it('sends the whole reply as one message when nothing was streamed', () => {
    const out = translateAll([{ type: 'reply', messageId: 'msg-9', text: 'Whole answer' }]);
    expect(out.map((e) => e.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
    expect(out[2]).toMatchObject({ messageId: 'msg-9', delta: 'Whole answer' });
  });

  it('uses the outcome reply when the handler emitted no reply event', () => {
    const out = translateAll([], outcome({ reply: 'From outcome' }));
    expect(out.find((e) => e.type === 'TEXT_MESSAGE_CONTENT')).toMatchObject({ delta: 'From outcome' });
  });

  it('does not repeat a reply that was streamed under another message id', () => {
    const out = translateAll([
      { type: 'text_delta', messageId: 'draft', delta: 'Hi' },
      { type: 'reply', messageId: 'final', text: 'Hi' },
    ]);
    expect(out.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')).toHaveLength(1);
  });

  it('closes text before a tool call and sends the reply after it', () => {
    const out = translateAll([
      { type: 'text_delta', messageId: 'm1', delta: 'Let me check.' },
      { type: 'tool_call', callId: 'c1', name: 'lookup', arguments: '' },
      { type: 'reply', messageId: 'm2', text: 'Found it.' },
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
  });

  it('ends with RUN_ERROR carrying the code of a PalaverError', () => {
    const out = translateAll([{ type: 'text_delta', messageId: 'm1', delta: 'Hal' }], new ModelError('unreachable', 'gpt', 'The model could not be reached.'));
    expect(out.map((e) => e.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_ERROR']);
    expect(out.at(-1)).toMatchObject({ code: 'model_unreachable', message: 'The model could not be reached.' });
  });

  it('hides the text of unexpected errors', () => {
    const out = translateAll([], new Error('connect ECONNREFUSED 10.0.0.5:5432 password=hunter2'));
    const error = out.at(-1) as { code: string; message: string };
    expect(error.code).toBe('internal_error');
    expect(error.message).not.toContain('hunter2');
    expect(error.message).toContain('corr-1');
  });

  it('ignores events after the run ended', () => {
    const t = new AguiTranslator(run);
    t.finish(outcome());
    expect(t.translate({ type: 'text_delta', messageId: 'm', delta: 'late' })).toEqual([]);
    expect(t.fail(new Error('late'))).toEqual([]);
  });
});
