import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/domain/errors.js';
import { classifyDriverError, isDeadlock, toStoreError } from '../../src/store/kysely/store-errors.js';

/** Each dialect names its driver's codes in its own folder; the store reads them all from the dialect registry. */
describe('driver errors, by the codes each dialect names', () => {
  it('says what a failure means whichever driver raised it', () => {
    expect(classifyDriverError({ code: '23505' })).toBe('conflict'); // pg
    expect(classifyDriverError({ code: 'ER_DUP_ENTRY' })).toBe('conflict'); // mysql2
    expect(classifyDriverError({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' })).toBe('foreign_key'); // better-sqlite3
    expect(classifyDriverError({ code: 'ERR_SQLITE_ERROR', errcode: 1299 })).toBe('not_null'); // node:sqlite
    expect(classifyDriverError({ code: '08006' })).toBe('unreachable'); // a PostgreSQL connection exception
    expect(classifyDriverError({ code: 'ECONNREFUSED' })).toBe('unreachable');
    expect(classifyDriverError({ code: 'ERR_SQLITE_ERROR', errcode: 1 })).toBe('other');
    expect(classifyDriverError(new Error('syntax error'))).toBe('other');
  });

  it('turns a driver failure into a StoreError naming the operation, and finds a deadlock behind a cause', () => {
    const error = toStoreError('messages.append', Object.assign(new Error('duplicate key'), { code: '23505' }));
    expect(error).toBeInstanceOf(StoreError);
    expect(error.code).toBe('conflict');
    expect(error.message).toContain('messages.append');
    expect(isDeadlock(new Error('wrapped', { cause: { code: 'ER_LOCK_DEADLOCK' } }))).toBe(true);
    expect(isDeadlock({ code: '40P01' })).toBe(true);
    expect(isDeadlock({ code: '23505' })).toBe(false);
  });
});
