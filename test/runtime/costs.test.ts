import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../src/config/index.js';
import type { Palaver } from '../../src/app.js';
import type { ModelScript, ScriptedReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks up an order',
  input: z.object({ id: z.number() }),
  run: ({ id }) => ({ id, status: 'shipped' }),
});

// The token counts the scripted model reports, per call.
const TOOL_CALL = { input: 1200, cached: 1000, output: 30 };
const ANSWER = { input: 1500, cached: 1200, output: 80 };
const FOLLOW_UP = { input: 100, output: 20 };

/** "order?" → a lookup, then an answer from its result; anything else is answered at once. */
const orderScript: ModelScript = (call): ScriptedReply => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: `Result: ${last.output}`, usage: ANSWER };
  if (lastUserText(call) === 'order?') return { toolCalls: [{ name: 'lookup', arguments: { id: 7 } }], usage: TOOL_CALL };
  return { text: 'You are welcome.', usage: FOLLOW_UP };
};

// Prices of the scripted model in USD per million tokens; cached input at its own price.
const PRICES = { scripted: { input: '2.50', cachedInput: '1.25', output: '10' } };
// A rate with enough digits that rounding to 6 places shows.
const BILLING = { usdRates: { CNY: '7.1235' } };

/** The internal id of the user behind a chat() user id. */
async function userIdOf(palaver: Palaver, accountId: string): Promise<string> {
  return (await palaver.store.users.resolveAccount({ channel: 'api', accountId })).user.id;
}

async function livingIn(palaver: Palaver, accountId: string, preferences: Record<string, unknown>): Promise<string> {
  const userId = await userIdOf(palaver, accountId);
  expect((await palaver.profiles.update(userId, { preferences })).ok).toBe(true);
  return userId;
}

describe('costs', () => {
  it('match a hand-computed table for a CN and a US user across two model calls with a tool round, and sum per session', async () => {
    harness = await createHarness(orderScript);
    const palaver = await harness.start({ model: { prices: PRICES }, billing: BILLING }, { tools: [lookup] });
    await livingIn(palaver, 'li', { country: 'CN' });
    await livingIn(palaver, 'ann', { country: 'US' });

    // Per call, USD = (uncached input × 2.50 + cached × 1.25 + output × 10) / 10^6:
    //   tool call:  (200 × 2.50 + 1000 × 1.25 +  30 × 10) / 10^6 = (500 + 1250 + 300) / 10^6 = 0.00205
    //   answer:     (300 × 2.50 + 1200 × 1.25 +  80 × 10) / 10^6 = (750 + 1500 + 800) / 10^6 = 0.00305
    //   follow-up:  (100 × 2.50 +    0        +  20 × 10) / 10^6 = (250 + 200) / 10^6         = 0.00045
    // Message 1 = 0.00205 + 0.00305 = 0.0051 USD; in CNY 0.0051 × 7.1235 = 0.03632985 → 0.036330 (half-up at 6 places)
    // Message 2 = 0.00045 USD;                      in CNY 0.00045 × 7.1235 = 0.003205575 → 0.003206
    // Session CN = 0.03633 + 0.003206 = 0.039536 CNY; session US = 0.0051 + 0.00045 = 0.00555 USD
    const table = [
      { user: 'li', currency: 'CNY', first: '0.03633', second: '0.003206', session: '0.039536' },
      { user: 'ann', currency: 'USD', first: '0.0051', second: '0.00045', session: '0.00555' },
    ];
    for (const row of table) {
      const first = await palaver.chat({ userId: row.user, text: 'order?' });
      expect(first.usage).toEqual({ inputTokens: 2700, outputTokens: 110, cost: row.first, currency: row.currency });
      const second = await palaver.chat({ userId: row.user, text: 'thanks' });
      expect(second.usage).toEqual({ inputTokens: 100, outputTokens: 20, cost: row.second, currency: row.currency });

      const messages = await palaver.store.messages.listRecent(first.sessionId, { limit: 10 });
      const replies = messages.filter((message) => message.role === 'assistant' && message.audience === 'display');
      expect(
        replies.map(({ inputTokens, cachedInputTokens, outputTokens, cost, currency }) => ({ inputTokens, cachedInputTokens, outputTokens, cost, currency })),
      ).toEqual([
        { inputTokens: 2700, cachedInputTokens: 2200, outputTokens: 110, cost: row.first, currency: row.currency },
        { inputTokens: 100, cachedInputTokens: 0, outputTokens: 20, cost: row.second, currency: row.currency },
      ]);
      expect(await palaver.store.sessions.findById(first.sessionId)).toMatchObject({
        inputTokens: 2800,
        cachedInputTokens: 2200,
        outputTokens: 130,
        cost: row.session,
        currency: row.currency,
      });
    }
    expect(harness.model.calls).toHaveLength(6);
  });

  it('match a hand-computed table across the stages of a staged flow, each on its own model and price, with a tool round', async () => {
    const stagedScript: ModelScript = (call): ScriptedReply => {
      const stage = call.output?.name;
      if (stage === 'intent')
        return { text: JSON.stringify({ direct: false, answer: null, intent: 'order status', details: 'order 7' }), usage: { input: 1000, output: 50 } };
      if (stage === 'execution') {
        if (call.messages.at(-1)?.type !== 'tool_result')
          return { toolCalls: [{ name: 'lookup', arguments: { id: 7 } }], usage: { input: 2000, cached: 1500, output: 40 } };
        return { text: JSON.stringify({ status: 'done', summary: 'order 7 shipped', facts: ['7'] }), usage: { input: 2500, cached: 2000, output: 60 } };
      }
      return { text: JSON.stringify({ reply: 'Order 7 has shipped.' }), usage: { input: 800, output: 100 } };
    };
    harness = await createHarness(stagedScript);
    const palaver = await harness.start(
      {
        agent: { flow: 'staged', type: 'shop' },
        staged: { types: { shop: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } } } },
        model: {
          prices: {
            'intent-model': { input: '0.40', output: '1.60' },
            'execution-model': { input: '2.50', cachedInput: '1.25', output: '10' },
            'organization-model': { input: '0.40', output: '1.60' },
          },
        },
        billing: BILLING,
      },
      { tools: [lookup] },
    );
    await livingIn(palaver, 'li', { country: 'CN' });
    await livingIn(palaver, 'ann', { country: 'US' });

    // USD per call = (uncached input × input price + cached × cached price + output × output price) / 10^6:
    //   intent        (1000 × 0.40 + 50 × 1.60) / 10^6                  = 0.00048
    //   execution 1   (500 × 2.50 + 1500 × 1.25 + 40 × 10) / 10^6        = 0.003525   (the tool call)
    //   execution 2   (500 × 2.50 + 2000 × 1.25 + 60 × 10) / 10^6        = 0.00435    (the work report)
    //   organization  (800 × 0.40 + 100 × 1.60) / 10^6                   = 0.00048
    // The reply = 0.008835 USD; in CNY 0.008835 × 7.1235 = 0.0629361225 → 0.062936 (half-up at 6 places)
    for (const row of [
      { user: 'li', cost: '0.062936', currency: 'CNY' },
      { user: 'ann', cost: '0.008835', currency: 'USD' },
    ]) {
      const reply = await palaver.chat({ userId: row.user, text: 'where is my order?' });
      expect(reply.text).toBe('Order 7 has shipped.');
      expect(reply.usage).toEqual({ inputTokens: 6300, outputTokens: 250, cost: row.cost, currency: row.currency });
      expect(await palaver.store.sessions.findById(reply.sessionId)).toMatchObject({
        inputTokens: 6300,
        cachedInputTokens: 3500,
        outputTokens: 250,
        cost: row.cost,
        currency: row.currency,
      });
    }
    expect(harness.model.calls.map((call) => call.model)).toEqual(
      [...Array(2)].flatMap(() => ['intent-model', 'execution-model', 'execution-model', 'organization-model']),
    );
  });

  it('keep the currency of a session that holds money when the user moves to another country', async () => {
    harness = await createHarness(orderScript);
    const palaver = await harness.start({ model: { prices: PRICES }, billing: BILLING }, { tools: [lookup] });
    await livingIn(palaver, 'li', { country: 'CN' });
    const first = await palaver.chat({ userId: 'li', text: 'order?' });
    expect(first.usage).toMatchObject({ cost: '0.03633', currency: 'CNY' });
    await livingIn(palaver, 'li', { country: 'US' });
    // The session stays in CNY (0.003206, as in the table above); a new conversation is billed in USD.
    const second = await palaver.chat({ userId: 'li', text: 'thanks' });
    expect(second).toMatchObject({ status: 'completed', usage: { cost: '0.003206', currency: 'CNY' } });
    const elsewhere = await palaver.chat({ userId: 'li', text: 'thanks', conversationId: 'new' });
    expect(elsewhere.usage).toMatchObject({ cost: '0.00045', currency: 'USD' });
  });

  it('follow the seed 003 settings from the environment: CNY at 7.2 without a country and in China, USD elsewhere', async () => {
    // The seed's own variable for the rate, Palaver's for the default country; the file sets neither.
    const { config } = loadConfig({
      cwd: mkdtempSync(join(tmpdir(), 'palaver-seed-003-')),
      env: { PALAVER_MODEL: 'scripted', BILLING_USD_CNY_RATE: '7.2', PALAVER_BILLING_DEFAULT_COUNTRY: 'CN' },
    });
    expect(config.billing).toMatchObject({ defaultCountry: 'CN', currencyByCountry: { CN: 'CNY' }, defaultCurrency: 'USD', usdRates: { CNY: '7.2' } });
    harness = await createHarness(orderScript);
    const palaver = await harness.start({ model: { prices: PRICES }, billing: config.billing }, { tools: [lookup] });
    await livingIn(palaver, 'li', { country: 'CN' });
    await livingIn(palaver, 'ann', { country: 'US' });
    await livingIn(palaver, 'hans', { country: 'DE' });
    // The first message of the table above: 0.0051 USD; × 7.2 = 0.03672 CNY (the seed: usd_cost × rate, 6 places).
    for (const [user, cost, currency] of [
      ['nobody', '0.03672', 'CNY'],
      ['li', '0.03672', 'CNY'],
      ['ann', '0.0051', 'USD'],
      ['hans', '0.0051', 'USD'],
    ] as const) {
      const reply = await palaver.chat({ userId: user, text: 'order?' });
      expect(reply.usage, user).toMatchObject({ cost, currency });
      expect(await palaver.store.sessions.findById(reply.sessionId), user).toMatchObject({ cost, currency });
    }
    // Nobody's profile still names no country: the default country is billing's, not the profile's.
    expect((await palaver.profiles.get(await userIdOf(palaver, 'nobody'))).settings.preferences.country).toBeNull();
  });

  it('reads cached tokens from the Responses API too', async () => {
    harness = await createHarness(orderScript);
    const palaver = await harness.start({ model: { provider: 'openai-responses', prices: PRICES } }, { tools: [lookup] });
    const reply = await palaver.chat({ userId: 'ann', text: 'order?' });
    // The same two calls as above, in USD (no country: the default currency).
    expect(reply.usage).toEqual({ inputTokens: 2700, outputTokens: 110, cost: '0.0051', currency: 'USD' });
    expect(await palaver.store.sessions.findById(reply.sessionId)).toMatchObject({ cachedInputTokens: 2200, cost: '0.0051' });
  });

  describe('prices', () => {
    const usage = { input: 10_000, cached: 4_000, output: 1_000 };

    it('come from the maintained price table for a known model, cached input at its own price', async () => {
      harness = await createHarness(() => ({ text: 'hi', usage }));
      const palaver = await harness.start({ model: { name: 'gpt-4o-mini' } });
      const reply = await palaver.chat({ userId: 'ann', text: 'hello' });
      // gpt-4o-mini's published prices: $0.15 input, $0.075 cached input, $0.60 output per million tokens:
      // (6000 × 0.15 + 4000 × 0.075 + 1000 × 0.60) / 10^6 = (900 + 300 + 600) / 10^6 = 0.0018
      expect(reply.usage).toMatchObject({ cost: '0.0018', currency: 'USD' });
    });

    it('from model.prices beat the table', async () => {
      harness = await createHarness(() => ({ text: 'hi', usage }));
      const palaver = await harness.start({ model: { name: 'gpt-4o-mini', prices: { 'gpt-4o-mini': { input: '1', output: '2' } } } });
      const reply = await palaver.chat({ userId: 'ann', text: 'hello' });
      // No cachedInput override: cached tokens at the input price. (10000 × 1 + 1000 × 2) / 10^6 = 0.012
      expect(reply.usage).toMatchObject({ cost: '0.012', currency: 'USD' });
    });

    it('of an unknown model are 0, with one warning for the model', async () => {
      harness = await createHarness(() => ({ text: 'hi', usage }));
      const palaver = await harness.start({ model: { name: 'no-such-model-anywhere' } });
      expect((await palaver.chat({ userId: 'ann', text: 'hello' })).usage.cost).toBe('0');
      expect((await palaver.chat({ userId: 'bob', text: 'hello' })).usage.cost).toBe('0');
      const warnings = harness.logs.filter((line) => line['level'] === 40 && line['model'] === 'no-such-model-anywhere');
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]!['msg'])).toContain('no price');
    });
  });

  describe('budgets', () => {
    it('per session: a call that could cross the cap is not made, and the person gets the notice in their language', async () => {
      harness = await createHarness(orderScript);
      // Each call writes at most 100 tokens (0.001 USD at 10 per million): its cost has a ceiling to reserve.
      const palaver = await harness.start({ model: { prices: PRICES, maxOutputTokens: 100 }, budgets: { perSession: '0.006' } }, { tools: [lookup] });
      await livingIn(palaver, 'ann', { country: 'US', interfaceLanguage: 'ru' });
      // 0.00205 spent before the answer's call, plus the most that call can cost (~0.0033), fits under 0.006: it is
      // made. The turn ends at 0.0051; the next call could cost ~0.003 more, so it is not made.
      const first = await palaver.chat({ userId: 'ann', text: 'order?' });
      expect(first.text).toBe('Result: {"id":7,"status":"shipped"}');
      expect(harness.model.calls).toHaveLength(2);

      const refused = await palaver.chat({ userId: 'ann', text: 'thanks' });
      expect(refused.status).toBe('completed');
      expect(refused.text).toBe('Извините, лимит расходов на наш разговор исчерпан, поэтому сейчас я больше не могу отвечать. Пожалуйста, попробуйте позже.');
      expect(harness.model.calls).toHaveLength(2);
      expect(await palaver.store.sessions.findById(refused.sessionId)).toMatchObject({ status: 'completed', cost: '0.0051' });
      const [notice] = await palaver.store.messages.listRecent(refused.sessionId, { limit: 1 });
      expect(notice).toMatchObject({ content: refused.text, cost: '0', meta: { budget: 'perSession' } });

      // Another conversation is another session: its own budget.
      const elsewhere = await palaver.chat({ userId: 'ann', text: 'thanks', conversationId: 'second' });
      expect(elsewhere.text).toBe('You are welcome.');
      expect(harness.model.calls).toHaveLength(3);
    });

    it("per user and day: calls are made while what they can cost fits under the cap; the next turn's first call would not, so it is refused in any conversation, counted in the user's day", async () => {
      harness = await createHarness(orderScript);
      // 23:30 UTC is already the next day in Shanghai.
      const now = () => new Date('2026-03-01T23:30:00Z');
      const palaver = await harness.start(
        { model: { prices: PRICES, maxOutputTokens: 100 }, billing: BILLING, budgets: { perUserPerDay: '0.04', currency: 'CNY' } },
        { tools: [lookup], now },
      );
      const userId = await livingIn(palaver, 'li', { country: 'CN', timeZone: 'Asia/Shanghai', interfaceLanguage: 'zh' });

      // Both calls of the first turn fit: what was spent plus the most each can cost stays under 0.04 CNY.
      const first = await palaver.chat({ userId: 'li', text: 'order?' });
      expect(first.text).toBe('Result: {"id":7,"status":"shipped"}');
      expect(harness.model.calls).toHaveLength(2);
      // 0.0051 USD × 7.1235 = 0.03632985 → 0.03633 CNY
      expect(first.usage).toEqual({ inputTokens: 2700, outputTokens: 110, cost: '0.03633', currency: 'CNY' });
      expect(await palaver.store.spend.daily(userId, '2026-03-02')).toEqual([{ currency: 'CNY', cost: '0.03633' }]);

      const refused = await palaver.chat({ userId: 'li', text: 'order?' });
      expect(refused.text).toBe('抱歉，本次对话的费用已达上限，我现在无法继续回答。请稍后再试。');
      expect(refused.usage).toEqual({ inputTokens: 0, outputTokens: 0, cost: '0', currency: 'CNY' });
      expect(harness.model.calls).toHaveLength(2);
      const stored = await palaver.store.messages.listRecent(refused.sessionId, { limit: 2 });
      expect(stored.map((message) => [message.role, message.audience, message.meta?.['budget']])).toEqual([
        ['user', 'display', undefined],
        ['assistant', 'display', 'perUserPerDay'],
      ]);

      // The same day in another conversation: still over, no model call.
      const elsewhere = await palaver.chat({ userId: 'li', text: 'hello', conversationId: 'second' });
      expect(elsewhere.text).toBe(refused.text);
      expect(harness.model.calls).toHaveLength(2);

      // Another user has their own day.
      expect((await palaver.chat({ userId: 'ann', text: 'hello' })).text).toBe('You are welcome.');
      expect(harness.model.calls).toHaveLength(3);
    });
  });
});
