import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TelegramNetworkOverride } from '../../channels/telegram-user/client-factory.js';
import { FakeMtproto, fakeMtprotoLink, signInSessionFile } from '../../testing/fake-mtproto/index.js';
import type { SandboxEntity, Timeline } from './timeline.js';

/** The owner's Telegram account in the sandbox: a fake Telegram at the MTProto level, already signed in. */
export interface SandboxUserAccount {
  /** The fake Telegram the account lives on, the one the tests use (every call, what the account sent). */
  readonly telegram: FakeMtproto;
  /** The way to it: `createPalaver(config, { telegramUserNetwork: network })`. In-process only. */
  readonly network: TelegramNetworkOverride;
  /** What to lay over `channels.telegramUser`: placeholder credentials and a session signed in as the owner. */
  readonly settings: { readonly apiId: number; readonly apiHash: string; readonly sessionFile: string };
}

/** The running account side: what it shows on the page, and how to end it. */
export interface RunningUserAccount extends SandboxUserAccount {
  /** A person wrote to the account (`asOwner`: the owner wrote in that chat from their phone); returns the message id. */
  write(chatId: number, text: string, asOwner: boolean): number;
  close(): void;
}

// Telegram's TL entity names → the Bot API's, which the page renders (others keep their name and show as text).
const ENTITY_TYPES: Readonly<Record<string, string>> = {
  messageEntityBold: 'bold',
  messageEntityItalic: 'italic',
  messageEntityUnderline: 'underline',
  messageEntityStrike: 'strikethrough',
  messageEntityCode: 'code',
  messageEntityPre: 'pre',
  messageEntitySpoiler: 'spoiler',
  messageEntityBlockquote: 'blockquote',
  messageEntityTextUrl: 'text_link',
  messageEntityUrl: 'url',
  messageEntityEmail: 'email',
};

/**
 * Starts the fake Telegram of the owner's account, with `people` as users who can write to it, and signs a session
 * in for the owner (a session file in a temporary folder, removed by `close`), as `palaver telegram login` would.
 * What the account does (messages sent through the API, typing, read marks, reactions) goes onto `timeline` as events
 * of `side: 'account'`: the fake records them in arrays, looked at every 20 ms, as the bot side's Timeline does.
 * `ownerTakeoverMinutes` (when it gives a number) lets the page say until when the agent steps back after the owner wrote.
 */
export async function startSandboxUserAccount(
  people: readonly { readonly id: number; readonly first_name: string; readonly username?: string }[],
  timeline: Timeline,
  ownerTakeoverMinutes: () => number | undefined,
): Promise<RunningUserAccount> {
  const telegram = new FakeMtproto();
  for (const person of people) telegram.addUser({ id: person.id, firstName: person.first_name, ...(person.username ? { username: person.username } : {}) });
  const network = fakeMtprotoLink(telegram);
  const folder = mkdtempSync(join(tmpdir(), 'palaver-sandbox-account-'));
  const sessionFile = join(folder, 'telegram-user.session');
  try {
    await signInSessionFile(network, sessionFile);
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }

  const seen = { typing: 0, reads: 0, reactions: 0, sent: new Set<number>() };
  const collect = () => {
    const at = Date.now();
    for (const typing of telegram.typing.slice(seen.typing)) {
      const action = typing.action === 'sendMessageCancelAction' ? 'cancel' : 'typing';
      timeline.add({ side: 'account', kind: 'typing', chatId: typing.chatId, at: typing.at, action });
    }
    seen.typing = telegram.typing.length;
    for (const message of telegram.sent().filter((sent) => !seen.sent.has(sent.id))) {
      seen.sent.add(message.id);
      timeline.add({
        side: 'account',
        kind: 'bot',
        chatId: message.chatId,
        at,
        messageId: message.id,
        text: message.text,
        entities: entitiesOf(message.entities ?? []),
        buttons: [],
        ...(message.replyToId === undefined ? {} : { replyTo: message.replyToId }),
      });
    }
    for (const read of telegram.reads.slice(seen.reads)) timeline.add({ side: 'account', kind: 'read', chatId: read.chatId, at: read.at, maxId: read.maxId });
    seen.reads = telegram.reads.length;
    for (const reaction of telegram.reactions.slice(seen.reactions)) {
      timeline.add({ side: 'account', kind: 'reaction', chatId: reaction.chatId, at: reaction.at, messageId: reaction.messageId, emoji: reaction.emoji });
    }
    seen.reactions = telegram.reactions.length;
  };
  const timer = setInterval(collect, 20);
  timer.unref();

  return {
    telegram,
    network,
    settings: { apiId: 1, apiHash: randomBytes(16).toString('hex'), sessionFile },
    write(chatId, text, asOwner) {
      // What the account did before this message shows before it.
      collect();
      const at = Date.now();
      if (asOwner) {
        const message = telegram.ownerWrites(chatId, text);
        const minutes = ownerTakeoverMinutes();
        timeline.add({
          side: 'account',
          kind: 'owner',
          chatId,
          at,
          messageId: message.id,
          text,
          ...(minutes === undefined ? {} : { until: at + minutes * 60_000 }),
        });
        return message.id;
      }
      const message = telegram.incoming(chatId, text);
      const from = people.find((person) => person.id === chatId)?.first_name ?? String(chatId);
      timeline.add({ side: 'account', kind: 'person', chatId, at, messageId: message.id, text, from });
      return message.id;
    },
    close() {
      clearInterval(timer);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** TL entities as the page knows them from the Bot API (offsets are UTF-16 in both). */
function entitiesOf(entities: readonly { readonly _: string; readonly offset: number; readonly length: number }[]): SandboxEntity[] {
  return entities.map((entity) => {
    const extra = entity as { url?: unknown; language?: unknown };
    return {
      type: ENTITY_TYPES[entity._] ?? entity._,
      offset: entity.offset,
      length: entity.length,
      ...(typeof extra.url === 'string' ? { url: extra.url } : {}),
      ...(typeof extra.language === 'string' && extra.language ? { language: extra.language } : {}),
    };
  });
}
