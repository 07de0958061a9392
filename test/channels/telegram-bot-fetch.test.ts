import { Bot } from 'grammy';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchForGrammy } from '../../src/channels/telegram-bot/grammy-fetch.js';
import { startFakeTelegram, type FakeTelegram } from '../../src/testing/index.js';

// Node 24's `fetch` (and undici's) refuse any signal that is not a real AbortSignal; Node 20 and 22 let grammY's
// `abort-controller` signal through. This fetch refuses it on every Node, as Node 24 does.
const seen: AbortSignal[] = [];
const strictFetch: typeof fetch = async (input, init) => {
  if (init?.signal != null && !(init.signal instanceof AbortSignal)) throw new TypeError('RequestInit: Expected signal to be an instance of AbortSignal.');
  if (init?.signal) seen.push(init.signal);
  return fetch(input, init);
};

let telegram: FakeTelegram | undefined;
afterEach(async () => {
  seen.length = 0;
  await telegram?.close();
  telegram = undefined;
});

describe('telegram bot: the fetch grammY calls out with', () => {
  it('reaches the Bot API through a fetch that takes real AbortSignals only', async () => {
    telegram = await startFakeTelegram();
    const bot = new Bot(telegram.token, { client: { apiRoot: telegram.apiRoot, fetch: fetchForGrammy(strictFetch) } });
    const me = await bot.api.getMe();
    expect(me.is_bot).toBe(true);
    expect(seen.length).toBeGreaterThan(0);
  });

  it('aborts the request when grammY aborts its call', async () => {
    telegram = await startFakeTelegram();
    const bot = new Bot(telegram.token, { client: { apiRoot: telegram.apiRoot, fetch: fetchForGrammy(strictFetch) } });
    const stop = new AbortController();
    stop.abort(new Error('stopping'));
    // grammY types its signal as the polyfill's; a real one is what callers hand it.
    await expect(bot.api.getMe(stop.signal as Parameters<typeof bot.api.getMe>[0])).rejects.toThrow();
    expect(seen.at(-1)?.aborted).toBe(true);
  });
});
