import { expect } from 'vitest';
import type { Palaver, PalaverOptions } from '../../src/app.js';
import { startFakeTelegram, type FakeTelegram, type ModelScript, type ScriptedCall } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { readSqliteFile } from '../support/sqlite-file.js';

/** A real Palaver (SQLite file, scripted model over HTTP) with the Telegram channel on a fake Bot API server. */
export interface TelegramRig {
  readonly harness: Harness;
  readonly telegram: FakeTelegram;
  palaver: Palaver;
  /** Starts another Palaver on the same database and fake Telegram (after closing the first, or beside it). */
  start(extra?: Record<string, unknown>, palaverOptions?: PalaverOptions): Promise<Palaver>;
  close(): Promise<void>;
}

/**
 * `options.config` adds to the Palaver config of every start (e.g. `{ agent: { replies: 'actions' } }`);
 * `options.palaver` is given to every start (local tools, a clock) unless a start passes its own.
 */
export async function createTelegramRig(
  script: ModelScript,
  telegramConfig: Record<string, unknown> = {},
  options: { start?: boolean; config?: Record<string, unknown>; palaver?: PalaverOptions } = {},
): Promise<TelegramRig> {
  const harness = await createHarness(script);
  const telegram = await startFakeTelegram();
  const base = (extra: Record<string, unknown> = {}) => ({
    ...options.config,
    channels: {
      web: { enabled: false },
      telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 400, drafts: false, ...telegramConfig, ...extra },
    },
  });
  const rig: TelegramRig = {
    harness,
    telegram,
    palaver: undefined as unknown as Palaver,
    async start(extra, palaverOptions = options.palaver) {
      const palaver = await harness.start(base(extra), palaverOptions);
      rig.palaver = palaver;
      return palaver;
    },
    async close() {
      await harness.close();
      await telegram.close();
    },
  };
  if (options.start !== false) await rig.start();
  return rig;
}

/** The user texts a model call carried, in order. */
export function userTexts(call: ScriptedCall): string[] {
  return call.messages.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [item.content] : []));
}

/** Log lines (parsed) whose `msg` contains `text`. */
export function logsWith(harness: Harness, text: string): Record<string, unknown>[] {
  return harness.logs.filter((line) => typeof line['msg'] === 'string' && (line['msg'] as string).includes(text));
}

/** What the database holds of the inbox and the outbox: messages received, still queued, reply parts still pending. */
export function inboxState(harness: Harness): { readonly received: number; readonly queued: number; readonly pendingParts: number } {
  return readSqliteFile(harness.databaseUrl, (db) => ({
    received: Number(db.get<{ n: number }>('SELECT count(*) AS n FROM inbound_messages')?.n),
    queued: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM inbound_messages WHERE state = 'queued'")?.n),
    pendingParts: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'")?.n),
  }));
}

/**
 * Resolves once `received` messages are stored, none is still queued and no reply part is pending: every turn they
 * started has ended and its reply is sent (or failed for good). Absence checks come after this, never after a sleep.
 */
export async function waitUntilSettled(harness: Harness, received: number, timeout = 10_000): Promise<void> {
  await expect.poll(() => inboxState(harness), { timeout, interval: 25 }).toEqual({ received, queued: 0, pendingParts: 0 });
}
