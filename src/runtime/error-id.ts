import { randomBytes } from 'node:crypto';

/** A short id for one failed turn, given to the person in the apology and written beside the error in the log. */
export function newErrorId(): string {
  return randomBytes(4).toString('hex').toUpperCase();
}
