import { describe, expect, it } from 'vitest';
import { toolProgressLabel } from '../../src/runtime/tools/tool-label.js';

describe('toolProgressLabel', () => {
  const calendar = { en: 'Checking the calendar…', uk: 'Дивлюся календар…' };

  it('shows a per-language label in the person’s language, by its primary subtag too', () => {
    expect(toolProgressLabel(calendar, 'uk')).toBe('Дивлюся календар…');
    expect(toolProgressLabel(calendar, 'en-GB')).toBe('Checking the calendar…');
  });

  it('shows one plain label whatever the language', () => {
    expect(toolProgressLabel('Checking the calendar…', 'zh')).toBe('Checking the calendar…');
  });

  it('falls back to a localised generic line without a label or without the person’s language in it', () => {
    expect(toolProgressLabel(undefined, 'en')).toBe('Working on it…');
    expect(toolProgressLabel(undefined, 'ru-RU')).toBe('Работаю над этим…');
    expect(toolProgressLabel(calendar, 'zh')).toBe('正在处理…');
  });
});
