import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { newVisitor, postRun, runInput, shownText } from '../security/attack-kit.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

// Clients that sent a message and left before its turn began leave nothing behind: no turn runs for them, nobody
// pays a model call, and no conversation stays "running". A turn that began still answers. Real Palaver on
// SQLite, real HTTP, one turn at a time (limits.maxConcurrentTurns 1) and a model that holds "hold" messages.

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  await server?.close();
  await harness?.close();
  harness = server = release = undefined;
});

interface AdminConversation {
  readonly conversationId: string;
  readonly status: string;
  readonly waiting: number;
  readonly lastMessage: { readonly role: string; readonly text: string } | null;
}

async function adminConversations(base: string): Promise<Map<string, AdminConversation>> {
  const response = await fetch(`${base}/admin/conversations?channel=web&limit=100`, { headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}` } });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { conversations: AdminConversation[] };
  return new Map(body.conversations.map((conversation) => [conversation.conversationId, conversation]));
}

/** Posts a run as a browser and leaves once it has started (the message is stored and queued). */
async function postAndLeave(base: string, input: Record<string, unknown>, cookie: string): Promise<void> {
  const abort = new AbortController();
  const response = await fetch(`${base}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify(input),
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  abort.abort();
  await response.body?.cancel().catch(() => {});
}

describe('web channel: runs whose client left before their turn began', { timeout: 30_000 }, () => {
  it('drops their queued messages: no model call, no conversation left running, and a retry is answered', async () => {
    const held = new Promise<void>((resolve) => (release = resolve));
    harness = await createHarness(async (call) => {
      const text = userTexts(call).at(-1) ?? '';
      if (text.startsWith('hold')) await held;
      return { text: `echo: ${text}` };
    });
    const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken }, limits: { maxConcurrentTurns: 1 } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const base = server.url;
    const [first, second, staying] = [await newVisitor(base), await newVisitor(base), await newVisitor(base)];

    // The one turn slot is taken by a held turn whose client stays.
    const answered = postRun(base, runInput('t-held', 'hold first'), { cookie: first.cookie });
    await expect.poll(() => harness!.model.calls.length, { timeout: 10_000 }).toBe(1);

    // Queued behind it, then left: a second message of the same conversation, and new conversations of two visitors.
    const leftRuns = [
      { input: runInput('t-held', 'second, then gone'), cookie: first.cookie },
      { input: runInput('t-a', 'gone a'), cookie: first.cookie },
      { input: runInput('t-b1', 'gone b1'), cookie: second.cookie },
      { input: runInput('t-b2', 'gone b2'), cookie: second.cookie },
      { input: runInput('t-b3', 'gone b3'), cookie: second.cookie },
    ];
    for (const run of leftRuns) await postAndLeave(base, run.input, run.cookie);
    await expect
      .poll(() => harness!.logs.filter((line) => line['msg'] === 'client disconnected before the run ended').length, { timeout: 5_000 })
      .toBe(leftRuns.length);
    // A visitor who stays is answered once the slot is free.
    const stayed = postRun(base, runInput('t-stay', 'I wait'), { cookie: staying.cookie });
    await expect.poll(async () => (await adminConversations(base)).get('t-stay')?.waiting, { timeout: 10_000 }).toBe(1);

    release!();
    expect(shownText(await answered)).toBe('echo: hold first');
    expect(shownText(await stayed)).toBe('echo: I wait');
    // The model answered the two who waited, and nobody else.
    expect(harness.model.calls.map((call) => userTexts(call).at(-1))).toEqual(['hold first', 'I wait']);

    // As an operator sees it: nothing waits, nothing runs; the answered message stays answered.
    await expect
      .poll(async () => [...(await adminConversations(base)).values()].filter((c) => c.status === 'running' || c.waiting > 0).map((c) => c.conversationId), {
        timeout: 10_000,
      })
      .toEqual([]);
    const conversations = await adminConversations(base);
    expect(conversations.get('t-held')?.lastMessage).toMatchObject({ role: 'assistant', text: 'echo: hold first' });
    expect(harness.logs.filter((line) => line['msg'] === 'message dropped: its client left before its turn began').length).toBeGreaterThan(0);

    // The client of a dropped run comes back and retries it: it is answered.
    const retried = await postRun(base, leftRuns[2]!.input, { cookie: second.cookie });
    expect(retried.status).toBe(200);
    expect(shownText(retried)).toBe('echo: gone b1');
  });
});
