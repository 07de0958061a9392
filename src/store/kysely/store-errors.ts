import { StoreError } from '../../domain/errors.js';
import { STORE_DIALECTS } from '../dialects.js';
import type { DriverFailure } from '../store-dialect.js';

/** Node's own network failures: the database cannot be reached, whichever it is. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN']);

/** Classifies a driver's error by the codes each dialect names (src/store/dialects.ts), without importing any driver. */
export function classifyDriverError(error: unknown): DriverFailure {
  const fields = typeof error === 'object' && error !== null ? (error as { code?: unknown; errcode?: unknown }) : {};
  const numeric = typeof fields.errcode === 'number' ? fields.errcode : undefined;
  for (const { errors } of STORE_DIALECTS) {
    const code = numeric === undefined ? String(fields.code ?? '') : errors.numericCodes?.[numeric];
    if (code === undefined) continue;
    if (NETWORK_CODES.has(code)) return 'unreachable';
    const failure = errors.codes[code] ?? Object.entries(errors.classes ?? {}).find(([prefix]) => code.startsWith(prefix))?.[1];
    if (failure !== undefined) return failure;
  }
  return 'other';
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
    if (typeof code === 'string' && STORE_DIALECTS.some(({ errors }) => errors.deadlock === code)) return true;
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
