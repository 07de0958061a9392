import { afterEach, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Open TCP connections in this process (both ends of a loopback connection count). */
const openSockets = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPSocketWrap').length;

describe('closing Palaver', () => {
  it('closes the connections it kept open to the model, so that nothing is left holding the process', async () => {
    harness = await createHarness(() => ({ text: 'Hello!' }));
    const before = openSockets();
    const chat = new MemoryChannel({ name: 'chat' });
    const palaver = await harness.start({ channels: { web: { enabled: false } } }, { channels: [chat] });
    expect((await chat.waitForReply(await chat.say('hi', { accountId: 'ann' }), { timeoutMs: 10_000 })).outcome.reply).toBe('Hello!');
    // The model call's keep-alive connection, both ends.
    expect(openSockets()).toBeGreaterThan(before);
    await palaver.close();
    await expect.poll(openSockets).toBe(before);
  });
});
