import type { FakeTelegram } from '../../testing/fake-telegram/index.js';

/** A Telegram message entity as the Bot API sends it (UTF-16 offsets). */
export interface SandboxEntity {
  readonly type: string;
  readonly offset: number;
  readonly length: number;
  readonly url?: string;
  readonly language?: string;
}

/** An inline keyboard button: `data` goes back as a callback_query when pressed; `url` only opens a link. */
export interface SandboxButton {
  readonly text: string;
  readonly data?: string;
  readonly url?: string;
}

/**
 * One thing that happened in a private chat of the sandbox, in the order it happened. `seq` grows by one. `side:
 * 'account'` marks the chats with the owner's Telegram user account (there `bot` is what the account sent through the
 * API, `owner` what its owner wrote by hand, `read` its read mark up to `maxId`); without it, the chats with the bot.
 */
export type SandboxEvent = { readonly seq: number; readonly chatId: number; readonly at: number; readonly side?: 'account' } & (
  | { readonly kind: 'person'; readonly messageId: number; readonly text: string; readonly from: string }
  | {
      readonly kind: 'bot';
      readonly messageId: number;
      readonly text: string;
      readonly entities: readonly SandboxEntity[];
      readonly buttons: readonly (readonly SandboxButton[])[];
      readonly replyTo?: number;
    }
  | { readonly kind: 'typing'; readonly action: string }
  | { readonly kind: 'draft'; readonly draftId: number; readonly text: string; readonly entities: readonly SandboxEntity[] }
  | { readonly kind: 'reaction'; readonly messageId: number; readonly emoji: string }
  | { readonly kind: 'press'; readonly messageId: number; readonly data: string }
  | { readonly kind: 'owner'; readonly messageId: number; readonly text: string; readonly until?: number }
  | { readonly kind: 'read'; readonly maxId: number }
);

type NewEvent = SandboxEvent extends infer E ? (E extends SandboxEvent ? Omit<E, 'seq'> : never) : never;

/**
 * What the bot did, read off the fake Bot API as a list of chat events: accepted messages (with their entities and
 * inline keyboards), typing, drafts and reactions, plus what people wrote through the sandbox. The fake records calls
 * in arrays and emits no events to outsiders, so `watch` looks at the arrays' new tails every few milliseconds.
 */
export class Timeline {
  readonly events: SandboxEvent[] = [];
  readonly #telegram: FakeTelegram;
  readonly #listeners = new Set<(event: SandboxEvent) => void>();
  /** sendMessage calls already matched to a sent message (to find each message's reply_markup once). */
  readonly #matched = new Set<object>();
  #calls = 0;
  #sent = 0;
  #reactions = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(telegram: FakeTelegram) {
    this.#telegram = telegram;
  }

  /** Starts looking for what the bot did every `intervalMs` (default 20). */
  watch(intervalMs = 20): void {
    this.#timer ??= setInterval(() => this.collect(), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Calls `listener` with each event added from now on; returns how to stop. */
  subscribe(listener: (event: SandboxEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Adds an event that did not come from the bot (a person's message, a button pressed). */
  add(event: NewEvent): SandboxEvent {
    const full = { ...event, seq: this.events.length + 1 } as SandboxEvent;
    this.events.push(full);
    for (const listener of this.#listeners) listener(full);
    return full;
  }

  /** Turns what the bot did since the last look into events, in the order it happened. */
  collect(): void {
    const { calls, sent, reactions } = this.#telegram;
    const found: NewEvent[] = [];
    for (const call of calls.slice(this.#calls)) {
      const chatId = Number(call.params['chat_id']);
      if (call.method === 'sendChatAction') found.push({ kind: 'typing', chatId, at: call.at, action: String(call.params['action'] ?? 'typing') });
      if (call.method === 'sendMessageDraft') {
        found.push({
          kind: 'draft',
          chatId,
          at: call.at,
          draftId: Number(call.params['draft_id'] ?? 0),
          text: String(call.params['text'] ?? ''),
          entities: entitiesOf(call.params['entities']),
        });
      }
    }
    this.#calls = calls.length;
    for (const message of sent.slice(this.#sent)) {
      const call = calls.find(
        (candidate) =>
          candidate.method === 'sendMessage' &&
          !this.#matched.has(candidate) &&
          Number(candidate.params['chat_id']) === message.chatId &&
          candidate.params['text'] === message.text,
      );
      if (call) this.#matched.add(call);
      found.push({
        kind: 'bot',
        chatId: message.chatId,
        at: message.at,
        messageId: message.messageId,
        text: message.text,
        entities: entitiesOf(message.entities),
        buttons: buttonsOf(call?.params['reply_markup']),
        ...(message.replyToMessageId === undefined ? {} : { replyTo: message.replyToMessageId }),
      });
    }
    this.#sent = sent.length;
    for (const reaction of reactions.slice(this.#reactions)) {
      found.push({ kind: 'reaction', chatId: reaction.chatId, at: reaction.at, messageId: reaction.messageId, emoji: reaction.emoji });
    }
    this.#reactions = reactions.length;
    // Stable: what happened in the same millisecond keeps the order above (typing, drafts, messages, reactions).
    for (const event of found.sort((a, b) => a.at - b.at)) this.add(event);
  }
}

/** Entities as Telegram would deliver them: well-formed ones only (the fake refused a message with bad ones). */
function entitiesOf(raw: unknown): SandboxEntity[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((entity: Record<string, unknown>) =>
    typeof entity?.['type'] === 'string' && Number.isInteger(entity['offset']) && Number.isInteger(entity['length'])
      ? [
          {
            type: entity['type'],
            offset: entity['offset'] as number,
            length: entity['length'] as number,
            ...(typeof entity['url'] === 'string' ? { url: entity['url'] } : {}),
            ...(typeof entity['language'] === 'string' ? { language: entity['language'] } : {}),
          },
        ]
      : [],
  );
}

/** An inline keyboard (reply_markup.inline_keyboard), as JSON or as grammY's multipart string of JSON. */
function buttonsOf(raw: unknown): SandboxButton[][] {
  const markup = typeof raw === 'string' ? safeJson(raw) : raw;
  const rows = (markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
  if (!Array.isArray(rows)) return [];
  return rows.map((row: unknown) =>
    (Array.isArray(row) ? row : []).flatMap((button: Record<string, unknown>) =>
      typeof button?.['text'] === 'string'
        ? [
            {
              text: button['text'],
              ...(typeof button['callback_data'] === 'string' ? { data: button['callback_data'] } : {}),
              ...(typeof button['url'] === 'string' ? { url: button['url'] } : {}),
            },
          ]
        : [],
    ),
  );
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
