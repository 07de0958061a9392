import { MemoryStorage } from '@mtcute/node';
import { TelegramUserChannel } from '../../../src/channels/telegram-user/telegram-user-channel.js';
import { systemText, type SystemTextKey } from '../../../src/i18n/index.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeMtproto, fakeMtprotoLink } from '../../../src/testing/fake-mtproto/index.js';
import { runChannelContract, type ChannelDriver } from '../channel-contract.js';

/** The notices the channel sends of its own when the pipeline refuses a message: what the person reads as an error. */
const NOTICES = new Set(
  (['inbox.busy', 'inbound.tooLong', 'inbound.unreadable', 'identity.unavailable', 'identity.unrecognised'] as SystemTextKey[]).map((key) =>
    systemText('en', key, { name: 'Owner' }),
  ),
);

/**
 * People writing to a Telegram user account in private chats (`c1`, `c2`), through the real mtcute client on the fake
 * MTProto server: what they see is what the account sent to their chat.
 */
async function userAccountDriver(): Promise<ChannelDriver> {
  const telegram = new FakeMtproto({ self: { id: 100, firstName: 'Owner' } });
  const people: Record<string, number> = { c1: telegram.addUser({ firstName: 'Ann' }).id, c2: telegram.addUser({ firstName: 'Bob' }).id };
  const channel = new TelegramUserChannel({
    apiId: 1,
    apiHash: 'fake',
    session: new MemoryStorage(),
    network: fakeMtprotoLink(telegram),
    quietWindowMs: 0,
    mtcuteLogLevel: 0,
    logger: silentLogger(),
  });
  const chat = (name: string): number => people[name] ?? Number.NaN;
  const shown = (name: string) =>
    telegram
      .history(chat(name))
      .filter((m) => m.out)
      .map((m) => m.text);
  return {
    channel,
    manyConversations: true,
    acceptsWhileAnswering: true,
    // Refusals are logged, not told: a canned notice from a person's own account would give the agent away.
    tellsRefusals: false,
    conversationId: (name) => String(chat(name)),
    say: async (name, text) => void telegram.incoming(chat(name), text),
    replies: (name) => shown(name).filter((text) => !NOTICES.has(text)),
    errors: (name) => shown(name).filter((text) => NOTICES.has(text)),
    waiting: () => 0,
    async sayAfterStop(name, text) {
      telegram.incoming(chat(name), text);
      // A stopped channel has no client listening: give a live one time to have picked the push up.
      await new Promise((resolve) => setTimeout(resolve, 200));
    },
    async close() {},
  };
}

runChannelContract('telegram user account (MTProto, fake server)', userAccountDriver);
