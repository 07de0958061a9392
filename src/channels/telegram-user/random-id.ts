import { createHash } from 'node:crypto';
import { Long } from '@mtcute/node';

/**
 * The MTProto `random_id` of a send, derived from the outbox's delivery key: the first 8 bytes of its SHA-256 as a
 * signed 64-bit integer. The same part gets the same id on every attempt, in any process, so when a crash left
 * Palaver unsure whether a part went out, the resend is one Telegram itself drops (it answers with the message it
 * already has).
 */
export function randomIdOf(deliveryKey: string): Long {
  const digest = createHash('sha256').update(deliveryKey, 'utf8').digest();
  const id = Long.fromBytesBE([...digest.subarray(0, 8)], false);
  // 0 is no id to Telegram; a digest whose first 8 bytes are all zero is left to the next bytes.
  return id.isZero() ? Long.fromBytesBE([...digest.subarray(8, 16)], false) : id;
}
