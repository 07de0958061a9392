import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { createHarness, lastUserText, userTexts, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// Two Palavers on one PostgreSQL database, each with its own bus connection: two processes behind a load balancer.
let database: TestPostgresDatabase;
const harnesses: Harness[] = [];
beforeAll(async () => {
  database = await createTestPostgresDatabase();
});
afterAll(async () => {
  for (const harness of harnesses) await harness.close();
  await database?.drop();
});

async function process(): Promise<{ harness: Harness; palaver: Palaver }> {
  const harness = await createHarness((call) => ({ text: `echo: ${lastUserText(call) ?? ''}` }));
  harnesses.push(harness);
  const palaver = await harness.start({ database: { url: database.url }, cache: { ttlMs: 3_600_000 } });
  return { harness, palaver };
}

/** Waits until `harness`'s process has heard that another process changed `kind` (the log says so). */
async function heard(harness: Harness, kind: string, key: Record<string, string>): Promise<void> {
  await vi.waitFor(() =>
    expect(
      harness.logs.some(
        (line) =>
          line['msg'] === 'cache entry forgotten: another process changed it' &&
          (line['change'] as Record<string, unknown>)?.['kind'] === kind &&
          Object.entries(key).every(([name, value]) => (line['change'] as Record<string, unknown>)[name] === value),
      ),
    ).toBe(true),
  );
}

describe('caches of two processes on one PostgreSQL database', () => {
  it("shows the model the other process's profile change and replies in the next turn of the conversation", async () => {
    const a = await process();
    const b = await process();
    // b answers first: it now caches the person's profile and the conversation's history.
    const first = await b.palaver.chat({ userId: 'ada', text: 'hello' });
    expect(first.text).toBe('echo: hello');
    expect(b.harness.model.calls.at(-1)!.instructions).toContain('Time zone: UTC');

    // A profile change through the admin API of a.
    const user = (await a.palaver.admin.userOfAccount('api', 'ada'))!;
    const changed = await a.palaver.admin.updateProfile(user.id, { preferences: { timeZone: 'Europe/Kyiv' } }, { actor: 'test' } as never);
    expect(changed.ok).toBe(true);
    await heard(b.harness, 'profile', { userId: user.id });

    // A turn of the same conversation on a: its reply joins the history b had cached.
    const second = await a.palaver.chat({ userId: 'ada', text: 'from a' });
    expect(second.text).toBe('echo: from a');
    await heard(b.harness, 'history', { sessionId: first.sessionId });

    const third = await b.palaver.chat({ userId: 'ada', text: 'and b again' });
    expect(third.sessionId).toBe(first.sessionId);
    const request = b.harness.model.calls.at(-1)!;
    expect(request.instructions).toContain('Time zone: Europe/Kyiv');
    expect(userTexts(request)).toEqual(['hello', 'from a', 'and b again']);
    expect(request.messages.some((item) => item.type === 'message' && item.role === 'assistant' && item.content === 'echo: from a')).toBe(true);
  });
});
