import { describe, expect, it } from 'vitest';
import { en } from '../../src/i18n/catalogues/en.js';
import { catalogueLanguage, fullCatalogue, SYSTEM_TEXT_LANGUAGES, systemText, type SystemTextKey } from '../../src/i18n/index.js';

const KEYS = Object.keys(en) as SystemTextKey[];

/** The `{value}` names of an ICU message (outside plurals' inner texts it is enough for our catalogues). */
function placeholders(text: string): string[] {
  return [...text.matchAll(/\{(\w+)/g)].map((match) => match[1]!).sort();
}

describe('Palaver’s own texts', () => {
  it('has every text, with the same values, in each language it speaks in full', () => {
    for (const language of SYSTEM_TEXT_LANGUAGES) {
      const catalogue = fullCatalogue(language);
      for (const key of KEYS) {
        expect(catalogue[key].trim(), `${language} ${key}`).not.toBe('');
        expect(placeholders(catalogue[key]), `${language} ${key}`).toEqual(placeholders(en[key]));
      }
    }
  });

  it('speaks each language in its own words, not English copied over', () => {
    for (const language of ['ru', 'uk', 'zh'] as const) {
      const copied = KEYS.filter((key) => fullCatalogue(language)[key] === en[key]);
      expect(copied, language).toEqual([]);
    }
  });

  it('follows the tag down to a catalogue: zh-TW → zh, uk-UA → uk, pt_BR → pt', () => {
    expect(catalogueLanguage('zh-TW')).toBe('zh');
    expect(catalogueLanguage('zh-Hant-TW')).toBe('zh');
    expect(catalogueLanguage('uk-UA')).toBe('uk');
    expect(catalogueLanguage('RU')).toBe('ru');
    expect(catalogueLanguage('pt_BR')).toBe('pt');
    expect(catalogueLanguage('tlh')).toBeUndefined();
    expect(catalogueLanguage('')).toBeUndefined();
  });

  it('answers in the person’s language, else the agent’s, else English', () => {
    expect(systemText('zh-TW', 'reset.done')).toBe(fullCatalogue('zh')['reset.done']);
    expect(systemText('tlh', 'reset.done', undefined, 'uk')).toBe(fullCatalogue('uk')['reset.done']);
    expect(systemText(undefined, 'reset.done', undefined, 'tlh')).toBe(en['reset.done']);
  });

  it('falls back text by text in a language it speaks only in part', () => {
    expect(systemText('de-AT', 'turn.apology')).toMatch(/^Entschuldigung/);
    expect(systemText('de-AT', 'reset.done', undefined, 'ru')).toBe(fullCatalogue('ru')['reset.done']);
  });

  it('fills in values', () => {
    expect(systemText('ru', 'telegram.greeting', { name: 'Салон' })).toContain('Я Салон.');
    expect(systemText('zh', 'telegram.shortDescription', { name: 'Bot' })).toBe('Bot：在这个聊天中回答问题的助手。');
  });
});
