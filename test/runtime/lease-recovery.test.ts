import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../src/domain/ports/channel.js';
import type { Store } from '../../src/domain/ports/store.js';
import { createLogger } from '../../src/observability/logger.js';
import { Inbox } from '../../src/runtime/inbox.js';
import { LeaseRecovery } from '../../src/runtime/pipeline/lease-recovery.js';
import type { AcceptedMessage } from '../../src/runtime/turn/turn-context.js';
import { openStore } from '../../src/store/open-store.js';

let store: Store | undefined;
let recovery: LeaseRecovery | undefined;
afterEach(async () => {
  recovery?.stop();
  await recovery?.settled;
  await store?.close();
  store = recovery = undefined;
});

describe('taking over what a stopped process left', () => {
  it('answers a message whose quiet window passed while its process lay dead at once, not after a fresh window', async () => {
    store = await openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-recovery-')), 'palaver.db')}`);
    const { user } = await store.users.resolveAccount({ channel: 'chat', accountId: 'ann', displayName: 'Ann' });
    const session = await store.sessions.open({ userId: user.id, channel: 'chat', conversationId: 'ann' });
    // Accepted by a process that died before its quiet window ended (retired: its lease is over).
    await store.inbound.accept(
      {
        channel: 'chat',
        conversationId: 'ann',
        accountId: 'ann',
        userId: user.id,
        sessionId: session.id,
        text: 'are you there?',
        messageId: null,
        dedupeKey: null,
        correlationId: randomUUID(),
        languageHint: null,
        displayName: null,
        conversationKind: 'direct',
      },
      { owner: 'dead', leaseMs: 60_000 },
    );
    expect(await store.processes.retire('dead')).toBe(1);

    const answered: string[][] = [];
    const inbox = new Inbox<AcceptedMessage>({
      onError: () => {},
      runBatch: async (_key, batch) => void answered.push(batch.map((item) => item.inbound.text)),
    });
    // A long quiet window (one minute), and a clock two minutes past the message's arrival: its window is long over.
    const channel = { name: 'chat', capabilities: { offlineDelivery: false }, inbox: { quietWindowMs: 60_000 } } as unknown as Channel;
    recovery = new LeaseRecovery({
      deps: { store, logger: createLogger({ level: 'silent' }) },
      lease: { owner: 'heir', leaseMs: 60_000 },
      inbox,
      channels: new Map([['chat', channel]]),
      ownership: { renew: async () => {} },
      registry: { register: async () => 0, beat: async () => {} },
      heartbeatMs: 60_000,
      outbox: { resendAll: async () => {} },
      isStopped: () => false,
      now: () => Date.now() + 120_000,
    });
    recovery.start();
    await recovery.settled;
    await expect.poll(() => answered, { timeout: 2_000 }).toEqual([['are you there?']]);
  });
});
