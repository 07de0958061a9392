import { join } from 'node:path';
import { expect } from 'vitest';
import type { Palaver } from '../../../src/app.js';
import { TelegramUserChannel, type TelegramUserChannelOptions } from '../../../src/channels/telegram-user/telegram-user-channel.js';
import { createLogger } from '../../../src/observability/logger.js';
import { FakeMtproto, fakeMtprotoLink } from '../../../src/testing/fake-mtproto/index.js';
import type { ModelScript } from '../../../src/testing/index.js';
import { createHarness, type Harness } from '../../support/palaver-harness.js';
import { readSqliteFile } from '../../support/sqlite-file.js';

/**
 * A real Palaver (SQLite file, scripted model over HTTP) with the Telegram user-account channel: the real mtcute
 * client on the in-process fake MTProto server, its session in a SQLite file of the test's folder (so a restart
 * catches up from where the last process was).
 */
export interface UserAccountRig {
  readonly harness: Harness;
  readonly telegram: FakeMtproto;
  channel: TelegramUserChannel;
  palaver: Palaver;
  /** Starts (another) Palaver with a new channel on the same database, session file and fake. */
  start(options?: Partial<TelegramUserChannelOptions>): Promise<Palaver>;
  close(): Promise<void>;
}

/** `config` adds to the Palaver config of every start (e.g. `{ inbox: { leaseMs } }` for quicker outbox rounds). */
export async function createUserAccountRig(
  script: ModelScript,
  options: Partial<TelegramUserChannelOptions> = {},
  config: Record<string, unknown> = {},
): Promise<UserAccountRig> {
  const harness = await createHarness(script);
  const telegram = new FakeMtproto({ self: { id: 100, firstName: 'Reception' } });
  const link = fakeMtprotoLink(telegram);
  const rig: UserAccountRig = {
    harness,
    telegram,
    channel: undefined as unknown as TelegramUserChannel,
    palaver: undefined as unknown as Palaver,
    async start(extra = {}) {
      rig.channel = new TelegramUserChannel({
        apiId: 1,
        apiHash: 'fake',
        session: join(harness.dir, 'data', 'telegram-user.session'),
        network: link,
        quietWindowMs: 400,
        mtcuteLogLevel: 0,
        logger: createLogger({ level: 'silent' }),
        ...options,
        ...extra,
      });
      rig.palaver = await harness.start({ ...config, channels: { web: { enabled: false } } }, { channels: [rig.channel] });
      return rig.palaver;
    },
    async close() {
      await harness.close();
    },
  };
  await rig.start();
  return rig;
}

/** What the database holds of the inbox and the outbox. */
export function inboxState(harness: Harness): { readonly received: number; readonly queued: number; readonly pendingParts: number } {
  return readSqliteFile(harness.databaseUrl, (db) => ({
    received: Number(db.get<{ n: number }>('SELECT count(*) AS n FROM inbound_messages')?.n),
    queued: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM inbound_messages WHERE state = 'queued'")?.n),
    pendingParts: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'")?.n),
  }));
}

/** Resolves once `received` messages are stored, none queued and no reply part pending. */
export async function waitUntilSettled(harness: Harness, received: number, timeout = 15_000): Promise<void> {
  await expect.poll(() => inboxState(harness), { timeout, interval: 25 }).toEqual({ received, queued: 0, pendingParts: 0 });
}
