import { chmodSync, closeSync, existsSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { createRequire } from 'node:module';
import type { BaseSqliteStorage } from '@mtcute/core';
import { ChannelError } from '../../domain/errors.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import { nodeSqlite } from '../../platform/sqlite-bindings.js';

/** Who a session file says is signed in, read from the file alone (no network): the user id and usernames. */
export interface StoredAccount {
  readonly userId: number;
  readonly usernames: readonly string[];
}

/**
 * The MTProto session of the Telegram user account: an SQLite file in mtcute's own format (auth keys, the signed-in
 * user, update state, peers). Whoever has the file is signed in as the account, so it is created owner-only (0600)
 * before mtcute opens it, in a folder created 0700; SQLite gives its -wal and -shm files the same mode. Nothing here
 * reads the key into a string: it never reaches a log line.
 *
 * A file rather than a table of Palaver's database: mtcute keeps its update state (pts) and peer cache in this
 * storage and writes it on every update, through its own SQLite driver; in Palaver's PostgreSQL that would need a
 * storage adapter of our own, and a session kept beside the database a team already backs up is one more copy of
 * a credential. The file holds one account; the database lease (session-lease.ts) keeps it in one process.
 */
export class TelegramSessionFile {
  constructor(readonly path: string) {}

  exists(): boolean {
    return existsSync(this.path);
  }

  /** Creates the folder (0700) and an empty file (0600) if missing, and narrows an existing file to 0600. */
  ensure(): void {
    const folder = dirname(this.path);
    if (!existsSync(folder)) mkdirSync(folder, { recursive: true, mode: 0o700 });
    if (!existsSync(this.path)) closeSync(openSync(this.path, 'a', 0o600));
    // `mode` above is masked by the umask, and a file made by hand may be wider: set it explicitly.
    if ((statSync(this.path).mode & 0o777) !== 0o600) chmodSync(this.path, 0o600);
  }

  /** mtcute's storage on this file, the file made owner-only first. Loads mtcute (about 90 MB) on first use. */
  async openStorage(): Promise<BaseSqliteStorage> {
    this.ensure();
    const { sessionStorage } = await import('./session-storage.js');
    return sessionStorage(this.path);
  }

  /**
   * The signed-in account, read from the file without any network: mtcute stores the user once Telegram accepted
   * the sign-in and clears it on log-out, and an auth key must be there to use it. Undefined when the file is
   * missing, empty, mid-login or logged out.
   */
  account(): StoredAccount | undefined {
    if (!this.exists() || statSync(this.path).size === 0) return undefined;
    let db: ReadOnlySqlite | undefined;
    try {
      db = openReadOnly(this.path);
      const tables = new Set(db.all<{ name: string }>("select name from sqlite_master where type = 'table'").map((row) => row.name));
      if (!tables.has('auth_keys') || !tables.has('key_value')) return undefined;
      const hasKey = db.all('select 1 from auth_keys limit 1').length > 0;
      const row = db.all<{ value: Uint8Array }>("select value from key_value where key = 'current_user'")[0];
      if (!hasKey || !row) return undefined;
      return parseCurrentUser(row.value);
    } catch {
      // Not an SQLite file, or not mtcute's: nobody is signed in through it.
      return undefined;
    } finally {
      db?.close();
    }
  }

  isSignedIn(): boolean {
    return this.account() !== undefined;
  }

  /**
   * The account, or the error `palaver start` fails with at once (before any connection) when nobody signed in.
   * @throws ChannelError `not_signed_in` naming `palaver telegram login`.
   */
  requireSignedIn(): StoredAccount {
    const account = this.account();
    if (account === undefined) throw notSignedInError(this.path);
    return account;
  }

  /** Removes the file and SQLite's companions (-wal, -shm, -journal). */
  delete(): void {
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${this.path}${suffix}`, { force: true });
  }
}

interface ReadOnlySqlite {
  all<T = unknown>(sql: string): T[];
  close(): void;
}

/**
 * A read-only connection on the binding Palaver's store uses on this Node (node:sqlite where complete, else
 * better-sqlite3), so that checking the session loads neither mtcute nor, on Node 24, better-sqlite3.
 */
function openReadOnly(path: string): ReadOnlySqlite {
  const builtin = nodeSqlite();
  if (builtin) {
    // The store's type of the module names only what the store uses; node:sqlite takes `{ readOnly }` too.
    const DatabaseSync = builtin.DatabaseSync as unknown as new (
      path: string,
      options: { readOnly: boolean },
    ) => { prepare(sql: string): { all(): unknown[] }; close(): void };
    const db = new DatabaseSync(path, { readOnly: true });
    return { all: <T>(sql: string) => db.prepare(sql).all() as T[], close: () => db.close() };
  }
  const BetterSqlite3 = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');
  const db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  return { all: <T>(sql: string) => db.prepare(sql).all() as T[], close: () => db.close() };
}

/** The error for a channel configured but not signed in. */
export function notSignedInError(path: string): ChannelError {
  return new ChannelError(
    'not_signed_in',
    TELEGRAM_USER_CHANNEL,
    `The Telegram user account is not signed in (no session in ${path}). Sign in once with: palaver telegram login`,
  );
}

/**
 * mtcute 0.30's `current_user` value (CurrentUserService): int32 version 1, int32 flags (1 bot, 2 usernames,
 * 4 premium), a 53-bit user id as a little-endian long, then, with flag 2, an int32 count and TL strings. mtcute is
 * pinned exactly; the login test reads back what mtcute wrote, so a format change fails there.
 */
function parseCurrentUser(value: Uint8Array): StoredAccount | undefined {
  if (value.length < 16) return undefined;
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  if (view.getInt32(0, true) !== 1) return undefined;
  const flags = view.getInt32(4, true);
  const userId = (view.getInt32(8, true) >>> 0) + 2 ** 32 * view.getInt32(12, true);
  const usernames: string[] = [];
  if (flags & 2) {
    let offset = 16;
    const count = view.getInt32(offset, true);
    offset += 4;
    for (let index = 0; index < count && offset < value.length; index += 1) {
      // A TL string: one length byte (or 254 and three more), the bytes, padding to a multiple of four.
      let length = value[offset]!;
      let header = 1;
      if (length === 254) {
        length = value[offset + 1]! | (value[offset + 2]! << 8) | (value[offset + 3]! << 16);
        header = 4;
      }
      usernames.push(new TextDecoder().decode(value.subarray(offset + header, offset + header + length)));
      offset += Math.ceil((header + length) / 4) * 4;
    }
  }
  return userId > 0 ? { userId, usernames } : undefined;
}
