import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryChannel, type Said } from '../../src/channels/memory/memory-channel.js';
import { fullCatalogue } from '../../src/i18n/index.js';
import type { ModelScript } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, lastUserText, userTexts, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;

/** The user a message was accepted for. */
function senderOf(said: Said): string {
  if (said.status !== 'accepted') throw new Error(`message ${said.messageId} was not accepted: ${said.status}`);
  return said.userId;
}
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const setRole = defineTool({
  name: 'set_role',
  description: 'Sets the role of the person',
  input: z.object({ role: z.string() }),
  run: ({ role }) => `role ${role} set`,
});

/** Picks a role when asked to; otherwise says which role it was given and which user messages it saw. */
const script: ModelScript = (call) => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: 'Role set.' };
  if (/I am a client/.test(lastUserText(call) ?? '') && call.toolNames.includes('set_role'))
    return { toolCalls: [{ name: 'set_role', arguments: { role: 'client' } }] };
  const role = call.instructions.includes('- role: client') ? 'client' : 'none';
  return { text: `role=${role}; seen=${userTexts(call).join(' | ')}` };
};

/**
 * One person, two channels: a web-like chat where they type their number, and a messenger that vouches for the
 * number they share (as Telegram does for a contact of one's own).
 */
async function start(onConflict: 'relink' | 'conflict') {
  harness = await createHarness(script, { client: 'You help clients.' });
  const web = new MemoryChannel({ name: 'webchat' });
  const messenger = new MemoryChannel({ name: 'messenger' });
  const palaver = await harness.start(
    {
      roles: { definitions: { client: { tools: ['set_role'] } }, withoutRole: ['set_role'] },
      // The number was only typed in the web chat: trusted here, as the flow asks (see the README on why the
      // default is not to).
      identity: { phones: { defaultRegion: 'UA', onConflict, trustTyped: true } },
    },
    { channels: [web, messenger], tools: [setRole] },
  );

  // In the web chat the person picks a role and types their number.
  await web.waitForReply(await web.say('I am a client', { accountId: 'visitor-1' }));
  await web.waitForReply(await web.say('my number is 067 123 45 67', { accountId: 'visitor-1' }));
  const webUser = (await palaver.store.users.findByAccount('webchat', 'visitor-1'))!;
  expect(webUser.phone).toBe('380671234567');

  // On the messenger the same person writes first as a stranger, then shares their contact.
  await messenger.waitForReply(await messenger.say('hello there', { accountId: 'tg-42', languageHint: 'uk' }));
  const stranger = (await palaver.store.users.findByAccount('messenger', 'tg-42'))!;
  expect(stranger.id).not.toBe(webUser.id);
  const shared = await messenger.say('[contact: me, +380671234567]', { accountId: 'tg-42', languageHint: 'uk', phone: '380671234567' });
  const reply = await messenger.waitForReply(shared);
  return { palaver, messenger, webUser, stranger, shared, reply };
}

describe('one phone across two channels', () => {
  it('under relink: the messenger account joins the web user, with the role and both histories', async () => {
    const { palaver, messenger, webUser, stranger, shared, reply } = await start('relink');

    expect(senderOf(shared)).toBe(webUser.id);
    expect(reply.parts).toEqual(['role=client; seen=hello there | [contact: me, +380671234567]']);
    expect((await palaver.store.users.findByAccount('messenger', 'tg-42'))?.id).toBe(webUser.id);
    // Both conversations are the web user's now; the messenger's earlier one came along.
    const sessions = await palaver.store.sessions.listByUser(webUser.id);
    expect(sessions.map((session) => session.channel).sort()).toEqual(['messenger', 'webchat']);
    expect(await palaver.store.sessions.listByUser(stranger.id)).toEqual([]);
    const events = await palaver.store.identityEvents.listByUser(webUser.id);
    expect(events.map((event) => [event.kind, event.channel])).toEqual([
      ['phone_set', 'webchat'],
      ['relink', 'messenger'],
    ]);
    expect(events[1]).toMatchObject({
      fromUserId: stranger.id,
      toUserId: webUser.id,
      accountId: 'tg-42',
      actor: 'system',
      details: { source: 'channel', holderPhone: 'typed' },
    });

    // Later messages on the messenger are the web user's too.
    const later = await messenger.say('what do you know?', { accountId: 'tg-42' });
    expect(senderOf(later)).toBe(webUser.id);
    expect((await messenger.waitForReply(later)).parts[0]).toMatch(/^role=client; seen=hello there \| .* \| what do you know\?$/);
  });

  it('under conflict: refused, told in their language, and still answered as who they were', async () => {
    const { palaver, webUser, stranger, shared, reply } = await start('conflict');

    expect(senderOf(shared)).toBe(stranger.id);
    expect(reply.parts).toEqual([fullCatalogue('uk')['identity.phoneConflict'], 'role=none; seen=hello there | [contact: me, +380671234567]']);
    expect((await palaver.store.users.findByAccount('messenger', 'tg-42'))?.id).toBe(stranger.id);
    expect((await palaver.store.users.findById(stranger.id))?.phone).toBeNull();
    expect((await palaver.store.users.findById(webUser.id))?.phone).toBe('380671234567');
    expect(await palaver.store.identityEvents.listByUser(stranger.id)).toMatchObject([
      { kind: 'conflict', fromUserId: stranger.id, toUserId: webUser.id, channel: 'messenger' },
    ]);
    expect(
      harness!.logs.some((line) => line['msg'] === 'phone link refused: the verified phone belongs to another user (identity.phones.onConflict is conflict)'),
    ).toBe(true);
    // The number never reaches the log.
    expect(harness!.logText()).not.toContain('671234567');
  });
});
