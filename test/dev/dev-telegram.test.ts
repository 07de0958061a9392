import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, killAll, PALAVER_BIN, spawnNode } from '../cli/child-process.js';
import { createDevProject, type DevProject } from './dev-project.js';

// `palaver dev --telegram` from a project as `init` makes it: the bot runs on the sandbox's fake Bot API, and a
// person writing on the sandbox page is answered there, as on Telegram, with no token and no network.

let project: DevProject | undefined;
afterEach(async () => {
  await killAll();
  project?.remove();
  project = undefined;
});

/** What the sandbox page hears (its server-sent events), until `until` matches or the time is up. */
async function eventsUntil(url: string, until: RegExp, timeoutMs = 30_000): Promise<string> {
  const response = await fetch(new URL('/api/events', url), { signal: AbortSignal.timeout(timeoutMs) });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let heard = '';
  try {
    while (!until.test(heard)) {
      const { done, value } = await reader.read();
      if (done) break;
      heard += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return heard;
}

describe('palaver dev --telegram', () => {
  it('answers a person writing on the sandbox page through the bot channel, offline', { timeout: 90_000 }, async () => {
    project = createDevProject();
    const dev = spawnNode(PALAVER_BIN, ['dev', '--telegram', '--port', '0'], { cwd: project.dir, env: cleanEnv() });
    const [, sandboxUrl] = await dev.waitForOutput(/Telegram sandbox: (http:\/\/127\.0\.0\.1:\d+\/)/, 60_000);
    const info = (await (await fetch(new URL('/api/info', sandboxUrl!))).json()) as { people: { id: number; firstName: string }[] };
    const person = info.people[0]!;

    const heard = eventsUntil(sandboxUrl!, /We are open saturday: 9:00-17:00\./);
    const sent = await fetch(new URL('/api/messages', sandboxUrl!), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chatId: person.id, text: 'Are you open on Saturday?' }),
    });
    expect(sent.status).toBeLessThan(300);
    // The offline model's rule called the project's tool; the reply went out through the Bot API to this person.
    expect(await heard).toContain('We are open saturday: 9:00-17:00.');
  });

  it('with --telegram-user, the owner’s account answers a person on the sandbox page too, and the owner’s step-back follows the config', {
    timeout: 90_000,
  }, async () => {
    project = createDevProject();
    const dev = spawnNode(PALAVER_BIN, ['dev', '--telegram-user', '--port', '0'], { cwd: project.dir, env: cleanEnv() });
    const [, sandboxUrl] = await dev.waitForOutput(/Telegram sandbox: (http:\/\/127\.0\.0\.1:\d+\/)/, 60_000);
    const info = (await (await fetch(new URL('/api/info', sandboxUrl!))).json()) as { people: { id: number }[]; account: { owner: { first_name: string } } };
    expect(info.account.owner.first_name).toBe('Owner');
    const person = info.people[0]!;
    const toAccount = (text: string, asOwner: boolean) =>
      fetch(new URL('/api/account/messages', sandboxUrl!), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chatId: person.id, text, asOwner }),
      });

    const heard = eventsUntil(sandboxUrl!, /"side":"account","kind":"bot".*We are open saturday: 9:00-17:00\./);
    expect((await toAccount('Are you open on Saturday?', false)).status).toBe(200);
    expect(await heard).toContain('We are open saturday: 9:00-17:00.');

    // The owner writes: the page is told until when the agent steps back (ownerTakeoverMinutes, 30 by default).
    const owner = eventsUntil(sandboxUrl!, /"kind":"owner"[^\n]*/);
    expect((await toAccount('I will answer this one.', true)).status).toBe(200);
    const event = JSON.parse(/data: (\{[^\n]*"kind":"owner"[^\n]*\})/.exec(await owner)![1]!) as { at: number; until: number };
    expect(event.until - event.at).toBe(30 * 60_000);
  });
});
