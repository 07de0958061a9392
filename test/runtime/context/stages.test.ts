import { describe, expect, it } from 'vitest';
import { detectStage, withScenario, type StageDefinition } from '../../../src/runtime/context/stages.js';

describe('stage rules, edge cases', () => {
  const stages: StageDefinition[] = [
    { id: 'cancel', keywords: ['cancel'], afterTools: ['list_bookings'] },
    { id: 'after-pay', afterTools: ['pay'] },
    { id: 'blank', keywords: ['', ' !? '] },
    { id: 'chat', scenario: '  Chat freely.  ' },
  ];

  it('falls back to the default stage when the last tool is one no stage follows', () => {
    expect(detectStage(stages, { text: 'hello', lastToolCalled: 'weather' })).toMatchObject({ stage: { id: 'chat' }, by: 'default' });
    expect(detectStage(stages, { text: 'hello', lastToolCalled: 'pay' })).toMatchObject({ stage: { id: 'after-pay' }, by: 'last_tool' });
  });

  it('takes as default only a stage with neither keywords nor tools', () => {
    expect(detectStage(stages.slice(0, 2), { text: 'hello' })).toBeUndefined();
  });

  it('never matches a keyword that holds no word, not even an empty message', () => {
    expect(detectStage(stages, { text: '' })).toMatchObject({ stage: { id: 'chat' }, by: 'default' });
    expect(detectStage(stages, { text: '?!' })).toMatchObject({ stage: { id: 'chat' }, by: 'default' });
  });

  it('adds the scenario trimmed, and nothing for a stage without one', () => {
    expect(withScenario('Be kind.', stages[3])).toBe('Be kind.\n\n## Current stage: chat\nChat freely.');
    expect(withScenario('Be kind.', stages[0])).toBe('Be kind.');
    expect(withScenario('Be kind.', { id: 'empty', scenario: '   ' })).toBe('Be kind.');
    expect(withScenario('Be kind.', undefined)).toBe('Be kind.');
  });
});
