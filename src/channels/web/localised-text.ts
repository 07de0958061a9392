import type { Localised } from './chat-page.js';

/** The first language tag of an `Accept-Language` header (`de-CH,de;q=0.9` → `de-CH`), if it is well formed. */
export function readLanguageHint(acceptLanguage: string | undefined): string | undefined {
  const first = acceptLanguage?.split(',')[0]?.split(';')[0]?.trim();
  return first !== undefined && /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/.test(first) ? first : undefined;
}

/**
 * A configured text that is one text or one per language tag, in `language` (the tag, then its primary subtag), else
 * `fallbackLanguage`, else the first given; undefined when nothing is configured. As the page picks its greeting.
 */
export function localisedText(value: Localised<string> | undefined, language: string | undefined, fallbackLanguage: string | undefined): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  const keys = Object.keys(value);
  const find = (tag: string | undefined): string | undefined => {
    if (!tag) return undefined;
    const lower = tag.toLowerCase();
    return keys.find((key) => key.toLowerCase() === lower) ?? keys.find((key) => key.toLowerCase() === lower.split('-')[0]);
  };
  const key = find(language) ?? find(fallbackLanguage) ?? keys[0];
  return key === undefined ? undefined : value[key];
}
