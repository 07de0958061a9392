import { StoreError } from '../../domain/errors.js';

/** What a driver failure means to a caller. */
export type DriverFailure = 'conflict' | 'foreign_key' | 'not_null' | 'unreachable' | 'other';

/** node:sqlite reports SQLite's extended result code as a number (`errcode`); these are the ones named below. */
const SQLITE_EXTENDED_CODES: Readonly<Record<number, string>> = {
  5: 'SQLITE_BUSY',
  787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
  1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
};

/** Classifies a better-sqlite3, node:sqlite, pg or mysql2 error without importing any driver. */
export function classifyDriverError(error: unknown): DriverFailure {
  const fields = typeof error === 'object' && error !== null ? (error as { code?: unknown; errcode?: unknown }) : {};
  const code = typeof fields.errcode === 'number' ? (SQLITE_EXTENDED_CODES[fields.errcode] ?? '') : String(fields.code ?? '');
  switch (code) {
    case '23505':
    case 'SQLITE_CONSTRAINT_UNIQUE':
    case 'SQLITE_CONSTRAINT_PRIMARYKEY':
    case 'ER_DUP_ENTRY':
      return 'conflict';
    case '23503':
    case 'SQLITE_CONSTRAINT_FOREIGNKEY':
    case 'ER_NO_REFERENCED_ROW_2':
    case 'ER_ROW_IS_REFERENCED_2':
      return 'foreign_key';
    case '23502':
    case 'SQLITE_CONSTRAINT_NOTNULL':
    case 'ER_BAD_NULL_ERROR':
      return 'not_null';
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'ETIMEDOUT':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case '57P01': // admin_shutdown
    case '57P03': // cannot_connect_now
    case '53300': // too_many_connections
    case 'SQLITE_BUSY':
    case 'PROTOCOL_CONNECTION_LOST':
    case 'ER_CON_COUNT_ERROR':
    case 'ER_SERVER_SHUTDOWN':
      return 'unreachable';
    default:
      return code.startsWith('08') ? 'unreachable' : 'other';
  }
}

/**
 * Whether a failure (or what caused it) is the database picking this transaction as a deadlock's victim: InnoDB
 * (`ER_LOCK_DEADLOCK`) and PostgreSQL (`40P01`) roll the whole transaction back, and the way out is to run it again.
 * InnoDB meets it in ordinary traffic: a foreign key check takes a shared lock on the parent row (a session), so two
 * transactions that each insert a child and then update that parent deadlock.
 */
export function isDeadlock(error: unknown): boolean {
  for (let current = error; typeof current === 'object' && current !== null; current = (current as { cause?: unknown }).cause) {
    const code = (current as { code?: unknown }).code;
    if (code === 'ER_LOCK_DEADLOCK' || code === '40P01') return true;
  }
  return false;
}

/** Runs of a transaction a deadlock may cost before its error is the caller's. */
const DEADLOCK_ATTEMPTS = 5;

/**
 * Runs a transaction, and again (at most five times in all, after a short random wait) while the database rolls it
 * back to break a deadlock ({@link isDeadlock}). `run` must do nothing but the transaction's writes.
 */
export async function retryingDeadlocks<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= DEADLOCK_ATTEMPTS || !isDeadlock(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}

/**
 * Runs one repository operation and turns driver failures into a `StoreError` whose code says what happened
 * (`conflict`, `foreign_key`, `unreachable`, `query_failed`). StoreErrors pass through untouched.
 */
export async function storeOperation<T>(operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toStoreError(operation, error);
  }
}

/** Wraps `error` in a StoreError naming the failed operation, keeping the original as `cause`. */
export function toStoreError(operation: string, error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const failure = classifyDriverError(error);
  const detail = error instanceof Error ? error.message : String(error);
  const code = failure === 'other' ? 'query_failed' : failure;
  return new StoreError(code, `Store operation ${operation} failed (${code}): ${detail}`, { cause: error });
}
