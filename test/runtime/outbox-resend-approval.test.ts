import { describe, expect, it } from 'vitest';
import type { Channel, ReplyTarget, SendOptions } from '../../src/domain/ports/channel.js';
import type { DeliveryRecord } from '../../src/domain/ports/store.js';
import { silentLogger } from '../../src/observability/logger.js';
import { OutboxResend, type OutboxResendOptions } from '../../src/runtime/pipeline/outbox-resend.js';

// A question left in the outbox by a process that stopped is sent after the restart with its approval, so a channel
// with buttons still shows them (and the person can still answer).
describe('outbox resend: a question part keeps its approval', () => {
  it('passes the stored approval to send, and none for an ordinary part', async () => {
    const sends: { text: string; options: SendOptions | undefined }[] = [];
    const channel = {
      name: 'buttons',
      capabilities: { approvalButtons: true },
      send: async (_target: ReplyTarget, text: string, options?: SendOptions) => {
        sends.push({ text, options });
        return { messageId: `m-${sends.length}` };
      },
    } as unknown as Channel;
    const marked: string[] = [];
    const deps = {
      store: { deliveries: { markSent: async (id: string) => void marked.push(id), markFailed: async () => {} } },
      metrics: {},
      logger: silentLogger(),
    } as unknown as OutboxResendOptions['deps'];
    const approval = { id: '5f0c1a52-7d0e-4c11-9a57-3f7f2a9b8c01', expiresAt: '2030-01-01T00:00:00.000Z' };
    const part = (index: number, text: string, extra: Partial<DeliveryRecord>): DeliveryRecord => ({
      id: `d-${index}`,
      sessionId: 's',
      replyMessageId: 'r',
      part: index,
      text,
      channel: 'buttons',
      conversationId: 'c',
      accountId: 'a',
      inReplyTo: [],
      correlationId: 'corr',
      state: 'pending',
      channelMessageId: null,
      ...extra,
    });
    await new OutboxResend({ deps, channels: new Map([['buttons', channel]]) }).resendAll([
      part(0, 'I can cancel it.', { approval: null }),
      part(1, 'Before I go on, I need your yes: cancel the 14:00 appointment', { approval }),
    ]);
    expect(sends).toEqual([
      { text: 'I can cancel it.', options: { deliveryKey: 'd-0' } },
      { text: 'Before I go on, I need your yes: cancel the 14:00 appointment', options: { deliveryKey: 'd-1', approval } },
    ]);
    expect(marked).toEqual(['d-0', 'd-1']);
  });
});
