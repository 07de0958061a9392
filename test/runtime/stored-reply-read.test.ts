import { afterEach, describe, expect, it } from 'vitest';
import { ContextKeepingChannel } from '../support/context-keeping-channel.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe("a channel reading a message's stored reply", () => {
  it('finds nothing while the turn runs and the reply once it is stored, for the conversation owner only, counting no duplicate', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    harness = await createHarness(async (call) => {
      await held;
      return { text: `echo: ${userTexts(call).at(-1)}` };
    });
    const chat = new ContextKeepingChannel({ name: 'chat' });
    const palaver = await harness.start({}, { channels: [chat] });
    const said = await chat.say('where is my parcel?', { accountId: 'ann', conversationId: 'ann', dedupeKey: 'run-7' });
    const context = chat.context!;

    expect(await context.storedReply('ann', 'ann', 'run-7')).toBeUndefined();
    expect(await context.storedReply('ann', 'ann', 'run-unknown')).toBeUndefined();
    await expect(context.storedReply('mallory', 'ann', 'run-7')).rejects.toMatchObject({ code: 'forbidden' });
    await expect(context.storedReply('ann', 'nobody', 'run-7')).rejects.toMatchObject({ code: 'not_found' });

    release();
    await chat.reply(said);
    expect(await context.storedReply('ann', 'ann', 'run-7')).toMatchObject({ text: 'echo: where is my parcel?', status: 'completed' });
    expect(await palaver.metrics.registry.getSingleMetricAsString('palaver_inbound_duplicates_total')).toMatch(/ 0$/m);
    expect(harness.logs.some((line) => line['msg'] === 'duplicate inbound message ignored')).toBe(false);
  });
});
