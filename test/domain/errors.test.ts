import { describe, expect, it } from 'vitest';
import { ChannelError, ConfigError, FlowError, IdentityError, ModelError, PalaverError, StoreError, ToolError, TurnError } from '../../src/domain/errors.js';

describe('errors', () => {
  it('name their boundary and carry a stable code and their cause, as the logs show them', () => {
    const cause = new Error('socket hang up');
    const errors: [PalaverError, string, string][] = [
      [new PalaverError('x', 'm', { cause }), 'PalaverError', 'x'],
      [new ConfigError('m', [{ path: 'model.baseUrl', message: 'required' }], { cause }), 'ConfigError', 'config_invalid'],
      [new ModelError('refused', 'gpt', 'm', { cause }), 'ModelError', 'model_refused'],
      [new ToolError('tool_failed', 'book', 'm', { cause }), 'ToolError', 'tool_failed'],
      [new ChannelError('send_failed', 'telegram', 'm', { cause }), 'ChannelError', 'send_failed'],
      [new IdentityError('unrecognised', 'm', { cause }), 'IdentityError', 'identity_unrecognised'],
      [new StoreError('invalid_decimal', 'm', { cause }), 'StoreError', 'invalid_decimal'],
      [new FlowError('stage_invalid', 'm', { cause, stage: 'plan' }), 'FlowError', 'stage_invalid'],
      [new TurnError('m', { correlationId: 'r1', conversationId: 'c1' }, { cause }), 'TurnError', 'turn_failed'],
    ];
    for (const [error, name, code] of errors) {
      expect(error).toBeInstanceOf(PalaverError);
      expect({ name: error.name, code: error.code, message: error.message, cause: error.cause }).toEqual({ name, code, message: 'm', cause });
    }
  });

  it('keep the context that finds the failure', () => {
    expect(new ConfigError('m').issues).toEqual([]);
    expect(new ConfigError('m', [{ path: 'model.baseUrl', message: 'required' }]).issues).toEqual([{ path: 'model.baseUrl', message: 'required' }]);
    expect(new ModelError('unreachable', 'gpt-4o', 'm', { status: 503 })).toMatchObject({ failure: 'unreachable', model: 'gpt-4o', status: 503 });
    expect(new ModelError('refused', 'gpt-4o', 'm').status).toBeUndefined();
    expect(new ToolError('c', 'book', 'm').tool).toBe('book');
    expect(new ChannelError('c', 'web', 'm').channel).toBe('web');
    expect(new FlowError('c', 'm', { stage: 'plan' }).stage).toBe('plan');
    expect(new FlowError('c', 'm').stage).toBeUndefined();
    expect(new TurnError('m', { correlationId: 'r1', conversationId: 'c1' })).toMatchObject({ correlationId: 'r1', conversationId: 'c1' });
  });

  it('call only an unreachable model or directory worth another attempt', () => {
    expect(['unreachable', 'refused', 'stale_chain', 'invalid_output'].map((failure) => new ModelError(failure as never, 'm', 'x').retryable)).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect([new IdentityError('unreachable', 'x').retryable, new IdentityError('unrecognised', 'x').retryable]).toEqual([true, false]);
    expect(new IdentityError('unreachable', 'x').code).toBe('identity_unreachable');
    expect(new ModelError('unreachable', 'm', 'x').code).toBe('model_unreachable');
  });
});
