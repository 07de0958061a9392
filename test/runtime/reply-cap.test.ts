import { afterEach, describe, expect, it } from 'vitest';
import { checkReply, cutReply } from '../../src/runtime/reply.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { events, newVisitor, postRun, runInput } from '../security/attack-kit.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

const NOTICE = '[This answer was too long and has been shortened.]';

describe('cutting a reply to agent.maxReplyChars', () => {
  it('cuts after the last whole sentence that fits and ends with the notice on its own paragraph', () => {
    const text = 'First sentence here. Second sentence is longer than that. Third one.';
    const cut = cutReply(text, 50, '[cut]');
    expect(cut).toBe('First sentence here.\n\n[cut]');
    expect(cut.length).toBeLessThanOrEqual(50);
    expect(cutReply('short', 50, '[cut]')).toBe('short');
  });

  it('cuts a text without spaces hard, never inside a surrogate pair', () => {
    const cut = cutReply('😀'.repeat(40), 30, '[cut]');
    expect(cut.length).toBeLessThanOrEqual(30);
    expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('reports the length before the cut, and leaves a reply that fits alone', () => {
    const capabilities = { maxMessageChars: 20 } as Parameters<typeof checkReply>[1];
    const long = checkReply('word '.repeat(100), capabilities, { maxChars: 100, notice: () => '[cut]' });
    expect(long).toMatchObject({ ok: true, cutFrom: 499 });
    if (long.ok) expect(long.parts.every((part) => part.length <= 20)).toBe(true);
    expect(checkReply('fits', capabilities, { maxChars: 100, notice: () => '[cut]' })).toEqual({ ok: true, text: 'fits', parts: ['fits'] });
  });
});

describe('a runaway reply on the web', () => {
  let harness: Harness | undefined;
  let server: RunningHttpServer | undefined;
  afterEach(async () => {
    await server?.close();
    await harness?.close();
    server = harness = undefined;
  });

  it('streams at most agent.maxReplyChars of it and stores it cut', async () => {
    // 400 words of 1,000 characters: 400,000 characters, streamed word by word.
    const runaway = `${'a'.repeat(999)} `.repeat(400);
    harness = await createHarness(() => ({ text: runaway }));
    const palaver = await harness.start({ agent: { maxReplyChars: 5_000 } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const { cookie } = await newVisitor(server.url);

    const response = await postRun(server.url, runInput('runaway-thread', 'talk forever'), { cookie });
    expect(response.status).toBe(200);
    const list = events(response);
    expect(list.at(-1)?.type).toBe('RUN_FINISHED');
    const deltas = list.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => event.delta as string);
    // What streamed before the cut (at most the cap), then the stored reply in its place (at most the cap).
    expect(deltas.join('').length).toBeLessThanOrEqual(2 * 5_000);
    expect(response.body.length).toBeLessThan(60_000);
    const [finished] = harness.logs.filter((line) => line['msg'] === 'turn finished');
    const [reply] = await palaver.store.messages.listRecent(finished!['sessionId'] as string, { limit: 1, audience: 'display' });
    expect(reply!.content.length).toBeLessThanOrEqual(5_000);
    expect(reply!.content.endsWith(NOTICE)).toBe(true);
    expect(deltas.join('').endsWith(NOTICE)).toBe(true);
  });
});
