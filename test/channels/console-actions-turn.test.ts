import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleChannel } from '../../src/channels/console/console-channel.js';
import type { ScriptedCall, ScriptedReply } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TerminalScreen } from './terminal-screen.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A plan that types, sends two messages and reacts to the person's line by the id it was shown. */
function planFor(call: ScriptedCall): ScriptedReply {
  const lastUser = call.messages.findLast((item) => item.type === 'message' && item.role === 'user');
  const shownId = /^\[message_id: ([^\]]+)\]/.exec(lastUser?.type === 'message' ? String(lastUser.content) : '')?.[1] ?? 'none';
  const actions = [
    { type: 'fake_typing', seconds: 0.2 },
    { type: 'send_messages', messages: ['Friday works.', 'Morning or afternoon?'] },
    { type: 'add_reaction', emoji: '👍', message_id: shownId },
  ];
  return { text: JSON.stringify({ actions }), usage: { input: 10, output: 20 } };
}

describe('terminal chat: a reply carried out as actions', () => {
  it("types, prints two messages as two blocks, then the reaction line on the person's line", async () => {
    harness = await createHarness(planFor);
    const input = new PassThrough();
    const output = new PassThrough();
    const screen = new TerminalScreen(60);
    let raw = '';
    output.on('data', (chunk: Buffer) => {
      raw += chunk.toString('utf8');
      screen.write(chunk.toString('utf8'));
    });
    const channel = new ConsoleChannel({ input, output, color: true, columns: 60 });
    const palaver = await harness.start(
      { agent: { replies: 'actions', actions: { typingCharsPerSecond: 200 } }, channels: { web: { enabled: false } } },
      { channels: [channel] },
    );
    input.write('can I come on Friday?\n');
    await expect.poll(() => screen.lines().at(-1), { timeout: 10_000 }).toBe('you> ');
    input.end();
    await channel.done;

    // The screen model shows no echo of the typed line, so the reply starts after the first prompt.
    expect(screen.lines()).toEqual(['you> bot> Friday works.', 'bot> Morning or afternoon?', '  ↳ 👍 on "can I come on Friday?"', 'you> ']);
    // Typing was shown (and erased again) before the first message.
    expect(raw.indexOf('… typing')).toBeGreaterThan(-1);
    expect(raw.indexOf('… typing')).toBeLessThan(raw.indexOf('bot> Friday works.'));
    await palaver.close();
  });
});
