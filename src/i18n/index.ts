import { lookup } from 'bcp-47-match';
import { createRequire } from 'node:module';
import type { IntlMessageFormat } from 'intl-messageformat';
import { en, type Catalogue, type SystemTextKey } from './catalogues/en.js';
import { partialCatalogues } from './catalogues/partial.js';
import { ru } from './catalogues/ru.js';
import { uk } from './catalogues/uk.js';
import { zh } from './catalogues/zh.js';

export type { Catalogue, SystemTextKey } from './catalogues/en.js';

/** The languages Palaver speaks in full; the first is the last resort of every fallback chain. */
export const SYSTEM_TEXT_LANGUAGES = ['en', 'ru', 'uk', 'zh'] as const;
export type SystemTextLanguage = (typeof SYSTEM_TEXT_LANGUAGES)[number];

const FULL: Readonly<Record<SystemTextLanguage, Catalogue>> = { en, ru, uk, zh };
const CATALOGUES: Readonly<Record<string, Partial<Catalogue>>> = { ...partialCatalogues, ...FULL };
const TAGS = Object.keys(CATALOGUES);

/** Values of an ICU message: `{name}` and friends. */
export type SystemTextValues = Readonly<Record<string, string | number>>;

/**
 * The catalogue for a BCP-47 tag by RFC 4647 lookup (`zh-TW` → `zh`, `uk-UA` → `uk`; Telegram's `pt_BR` spelling
 * too), or undefined when Palaver has none for it.
 */
export function catalogueLanguage(tag: string | null | undefined): string | undefined {
  if (!tag) return undefined;
  return lookup(TAGS, tag.replaceAll('_', '-').toLowerCase());
}

/**
 * One of Palaver's own texts in `language`, falling back along the tag (`zh-TW` → `zh`), then to `defaultLanguage`
 * (the agent's language), then to English. A language Palaver speaks only in part falls back text by text.
 */
export function systemText(language: string | null | undefined, key: SystemTextKey, values?: SystemTextValues, defaultLanguage?: string): string {
  const catalogue = systemTextLanguage(language, key, defaultLanguage);
  return format(catalogue, key, CATALOGUES[catalogue]?.[key] ?? en[key], values);
}

/**
 * The catalogue {@link systemText} writes `key` in for the same arguments (`en` as the last resort): the language to
 * format the values of that text in (a date in a Russian sentence is written in Russian).
 */
export function systemTextLanguage(language: string | null | undefined, key: SystemTextKey, defaultLanguage?: string): string {
  for (const tag of [language, defaultLanguage]) {
    const catalogue = catalogueLanguage(tag);
    if (catalogue !== undefined && CATALOGUES[catalogue]?.[key] !== undefined) return catalogue;
  }
  return 'en';
}

/** The whole catalogue of a language Palaver speaks in full, as plain texts (to register bot commands, say). */
export function fullCatalogue(language: SystemTextLanguage): Catalogue {
  return FULL[language];
}

/**
 * The ICU message parser, required with the first text that has a placeholder (an ES module required synchronously,
 * which Node 20.19+ allows): a server that has sent no such text has not loaded it.
 */
let IntlMessageFormatClass: typeof IntlMessageFormat | undefined;
function messageFormat(): typeof IntlMessageFormat {
  IntlMessageFormatClass ??= (createRequire(import.meta.url)('intl-messageformat') as typeof import('intl-messageformat')).IntlMessageFormat;
  return IntlMessageFormatClass;
}

// Compiled messages, by language and key: a handful of texts, each parsed once.
const compiled = new Map<string, IntlMessageFormat>();

function format(language: string, key: SystemTextKey, text: string, values: SystemTextValues | undefined): string {
  // Most texts are plain sentences: no parser needed for them.
  if (!text.includes('{') && !text.includes("'")) return text;
  const id = `${language}\u0000${key}`;
  let message = compiled.get(id);
  if (!message) compiled.set(id, (message = new (messageFormat())(text, language)));
  const result = message.format(values);
  return typeof result === 'string' ? result : String(result);
}
