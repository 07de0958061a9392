import { randomUUID } from 'node:crypto';

/** Random ids for rows and correlation. UUID v4 strings work as keys on every back end. */
export function newId(): string {
  return randomUUID();
}
