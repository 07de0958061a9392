import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { newVisitor, postRun, runInput, shownText, type RawResponse } from '../security/attack-kit.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

// One visitor (one cookie) or one address must not take the capacity everyone shares: runs at once and new
// conversations an hour are limited, beyond them a run is refused with 429 and a text in the person's language.
// Real Palaver on SQLite, real HTTP, a scripted model that holds the messages starting with "hold".

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  await server?.close();
  await harness?.close();
  harness = server = release = undefined;
});

async function start(limits: Record<string, number> = {}, trustedProxies: readonly string[] = []): Promise<string> {
  const held = new Promise<void>((resolve) => (release = resolve));
  harness = await createHarness(async (call) => {
    const text = userTexts(call).at(-1) ?? '';
    if (text.startsWith('hold')) await held;
    return { text: `echo: ${text}` };
  });
  const palaver = await harness.start({ channels: { web: { limits } }, server: { trustedProxies } });
  server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  return server.url;
}

function errorOf(response: RawResponse): { code: string; message: string } {
  return (JSON.parse(response.body) as { error: { code: string; message: string } }).error;
}

/** Resolves with the responses that have arrived once `count` of `runs` have (the others are still streaming). */
async function firstSettled(runs: readonly Promise<RawResponse>[], count: number): Promise<RawResponse[]> {
  const arrived: RawResponse[] = [];
  await new Promise<void>((resolve, reject) => {
    for (const run of runs) {
      run.then((response) => {
        arrived.push(response);
        if (arrived.length === count) resolve();
      }, reject);
    }
  });
  return arrived;
}

describe('web channel: limits per visitor and per address', { timeout: 30_000 }, () => {
  it('refuses a visitor’s runs beyond four at once with 429 and a localised text, and another visitor is answered meanwhile', async () => {
    const base = await start();
    const greedy = await newVisitor(base);
    const runs = Array.from({ length: 12 }, (_, i) =>
      postRun(base, runInput(`greedy-${i}`, `hold ${i}`), { cookie: greedy.cookie, 'accept-language': 'uk-UA,uk;q=0.9' }),
    );
    const refused = await firstSettled(runs, 8);
    for (const response of refused) {
      expect(response.status).toBe(429);
      expect(response.headers['retry-after']).toBe('5');
      expect(errorOf(response)).toEqual({
        code: 'too_many_runs',
        message: 'Ви вже чекаєте на відповідь на кілька повідомлень. Будь ласка, дочекайтеся їх, перш ніж надсилати нові.',
      });
    }

    // The four admitted runs still wait on the model; another visitor is answered now.
    const other = await newVisitor(base);
    const answered = await postRun(base, runInput('other-1', 'hello'), { cookie: other.cookie });
    expect(answered.status).toBe(200);
    expect(shownText(answered)).toBe('echo: hello');

    release!();
    const admitted = (await Promise.all(runs)).filter((response) => response.status === 200);
    expect(admitted.map(shownText).sort()).toEqual(['echo: hold 0', 'echo: hold 1', 'echo: hold 2', 'echo: hold 3']);
    // Only the admitted messages reached the model (and the other visitor's).
    expect(harness!.model.calls).toHaveLength(5);

    // Their slots are free again once their answers came.
    const again = await postRun(base, runInput('greedy-0', 'one more'), { cookie: greedy.cookie });
    expect(shownText(again)).toBe('echo: one more');
  });

  it('refuses runs beyond the address’s limit, across visitors, in English by default', async () => {
    const base = await start({ runsPerVisitor: 4, runsPerAddress: 5 });
    const first = await newVisitor(base);
    const second = await newVisitor(base);
    const third = await newVisitor(base);
    const held = [
      ...Array.from({ length: 4 }, (_, i) => postRun(base, runInput(`first-${i}`, `hold a${i}`), { cookie: first.cookie })),
      postRun(base, runInput('second-0', 'hold b'), { cookie: second.cookie }),
    ];
    await expect.poll(() => harness!.model.calls.length, { timeout: 10_000 }).toBe(5);

    const refused = await postRun(base, runInput('third-0', 'hello'), { cookie: third.cookie });
    expect(refused.status).toBe(429);
    expect(errorOf(refused)).toEqual({ code: 'too_many_runs', message: 'Too many chats are open from your network right now. Please try again in a moment.' });

    release!();
    expect((await Promise.all(held)).map((response) => response.status)).toEqual([200, 200, 200, 200, 200]);
    expect(shownText(await postRun(base, runInput('third-0', 'hello'), { cookie: third.cookie }))).toBe('echo: hello');
  });

  it('behind a trusted proxy counts each client by X-Forwarded-For, and from any other peer ignores the header', async () => {
    // Palaver behind a proxy on this machine: every connection comes from 127.0.0.1.
    const base = await start({ runsPerVisitor: 4, runsPerAddress: 1 }, ['127.0.0.1']);
    const [ann, bob] = [await newVisitor(base), await newVisitor(base)];
    const held = postRun(base, runInput('ann-0', 'hold ann'), { cookie: ann.cookie, 'x-forwarded-for': '198.51.100.7' });
    await expect.poll(() => harness!.model.calls.length, { timeout: 10_000 }).toBe(1);
    // Another client behind the same proxy has its own count; the first one's second run is over its address's limit.
    const other = postRun(base, runInput('bob-0', 'hold bob'), { cookie: bob.cookie, 'x-forwarded-for': '203.0.113.9' });
    await expect.poll(() => harness!.model.calls.length, { timeout: 10_000 }).toBe(2);
    expect((await postRun(base, runInput('ann-1', 'hello'), { cookie: ann.cookie, 'x-forwarded-for': '198.51.100.7' })).status).toBe(429);
    release!();
    expect((await Promise.all([held, other])).map((response) => response.status)).toEqual([200, 200]);
  });

  it('without trusted proxies, a forged X-Forwarded-For does not get a client a count of its own', async () => {
    const base = await start({ runsPerVisitor: 4, runsPerAddress: 1 });
    const [ann, bob] = [await newVisitor(base), await newVisitor(base)];
    const held = postRun(base, runInput('ann-0', 'hold ann'), { cookie: ann.cookie, 'x-forwarded-for': '198.51.100.7' });
    await expect.poll(() => harness!.model.calls.length, { timeout: 10_000 }).toBe(1);
    expect((await postRun(base, runInput('bob-0', 'hello'), { cookie: bob.cookie, 'x-forwarded-for': '203.0.113.9' })).status).toBe(429);
    release!();
    expect((await held).status).toBe(200);
  });

  it('refuses a visitor’s new conversations beyond the hour’s limit, and lets them go on in their own', async () => {
    const base = await start({ newConversationsPerHourPerVisitor: 3 });
    const visitor = await newVisitor(base);
    for (const thread of ['c-1', 'c-2', 'c-3']) {
      expect(shownText(await postRun(base, runInput(thread, `start ${thread}`), { cookie: visitor.cookie }))).toBe(`echo: start ${thread}`);
    }
    const refused = await postRun(base, runInput('c-4', 'a fourth'), { cookie: visitor.cookie, 'accept-language': 'ru' });
    expect(refused.status).toBe(429);
    expect(errorOf(refused)).toEqual({
      code: 'too_many_conversations',
      message: 'Вы начали слишком много новых разговоров за короткое время. Продолжите один из прежних или попробуйте позже.',
    });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3_000);
    // Nothing of the refused conversation was stored or sent to the model.
    expect(harness!.model.calls).toHaveLength(3);

    // An existing conversation goes on; another visitor starts theirs.
    expect(shownText(await postRun(base, runInput('c-2', 'more'), { cookie: visitor.cookie }))).toBe('echo: more');
    const other = await newVisitor(base);
    expect(shownText(await postRun(base, runInput('d-1', 'mine'), { cookie: other.cookie }))).toBe('echo: mine');
  });

  it('does not count a conversation continued after a restart as new, even at the limit', async () => {
    const base = await start({ newConversationsPerHourPerVisitor: 2 });
    const visitor = await newVisitor(base);
    expect(shownText(await postRun(base, runInput('old-1', 'first'), { cookie: visitor.cookie }))).toBe('echo: first');
    // A fresh process (its counts start empty) on the same database: the visitor starts one new conversation, then
    // continues the old one, unknown to this process's memory, while at the limit.
    await server!.close();
    const palaver = await harness!.start({ channels: { web: { limits: { newConversationsPerHourPerVisitor: 1 } } } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const restarted = server.url;
    expect(shownText(await postRun(restarted, runInput('new-1', 'second'), { cookie: visitor.cookie }))).toBe('echo: second');
    expect(shownText(await postRun(restarted, runInput('old-1', 'third'), { cookie: visitor.cookie }))).toBe('echo: third');
    expect((await postRun(restarted, runInput('new-2', 'fourth'), { cookie: visitor.cookie })).status).toBe(429);
  });
});
