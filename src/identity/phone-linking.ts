import { StoreError } from '../domain/errors.js';
import type { PhoneLinkOutcome } from '../domain/ports/identity.js';
import type { PhoneSource, Store } from '../domain/ports/store.js';
import { normalisePhone } from './phones.js';

/** `identity.phones` as the linking needs it. */
export interface PhonePolicy {
  /** ISO 3166-1 alpha-2 region for numbers written without a country code. */
  readonly defaultRegion?: string | undefined;
  /** A verified phone another user owns: move the account to that user, or refuse. */
  readonly onConflict: 'relink' | 'conflict';
  /** Whether a number someone only typed counts as theirs when a verified phone meets it. */
  readonly trustTyped: boolean;
}

export interface PhoneLinkRequest {
  readonly channel: string;
  readonly accountId: string;
  /** The number as given. */
  readonly phone: string;
  /**
   * Where it came from: `typed` in a message is a claim; `channel` (a contact the channel vouches for), `admin` and
   * `resolver` are verified.
   */
  readonly source: PhoneSource;
  /** Who is doing it, for the audit (default `system`). */
  readonly actor?: string;
}

/** A number taken by someone else between our look and our write: look again, it now has an owner. */
const ATTEMPTS = 3;

/**
 * Binds a phone number to the user behind a channel account, under the trust rule:
 *
 * - A typed number (a claim) is set only on a user without a phone, and only while nobody holds the number. It never
 *   moves an account and nobody is told when it is not taken: the answer would tell a stranger whether a number is
 *   registered.
 * - A verified number nobody holds becomes the user's (replacing a number they had). Held by someone who only typed
 *   it, it is taken from them unless `trustTyped`: otherwise whoever types a victim's number first would receive the
 *   victim's account when the victim verifies it.
 * - A verified number another user holds: `relink` moves the account (and its own sessions on that
 *   channel) to the holder, whose role and state then apply; `conflict` leaves everything and says so.
 *
 * All of it runs in one store transaction with its audit events. The unique constraint on `users.phone` is the final
 * arbiter: when a concurrent link took the number first, the write fails and the decision is made again, now with
 * the number held by someone else. The account must exist (resolve it first).
 */
export async function linkPhone(store: Store, request: PhoneLinkRequest, policy: PhonePolicy): Promise<PhoneLinkOutcome> {
  const verified = request.source !== 'typed';
  const normalised = await normalisePhone(request.phone, policy.defaultRegion, { plusOptional: verified });
  if (!normalised.ok) return { status: 'invalid', reason: normalised.message };
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await store.transaction((tx) => decide(tx, request, normalised.digits, verified, policy));
    } catch (error) {
      if (attempt < ATTEMPTS && error instanceof StoreError && error.code === 'conflict') continue;
      throw error;
    }
  }
}

async function decide(tx: Store, request: PhoneLinkRequest, phone: string, verified: boolean, policy: PhonePolicy): Promise<PhoneLinkOutcome> {
  const { channel, accountId, source } = request;
  const current = await tx.users.findByAccount(channel, accountId);
  if (current === undefined)
    throw new StoreError('not_found', `Channel account ${channel}/${accountId} is not bound to a user; resolve it before linking a phone.`);
  const audit = { channel, accountId, actor: request.actor ?? 'system' };
  const holder = await tx.users.findPhoneHolder(phone);

  if (holder?.user.id === current.id) {
    if (!verified || holder.verified) return { status: 'unchanged' };
    // Their own claim, now vouched for.
    await tx.users.setPhone(current.id, phone, source);
    await tx.identityEvents.add({ ...audit, userId: current.id, kind: 'phone_set', details: { source, confirmed: true } });
    return { status: 'set' };
  }

  if (holder === undefined) {
    // A claim never replaces a phone the user has.
    if (!verified && current.phone !== null) return { status: 'ignored' };
    await tx.users.setPhone(current.id, phone, source);
    await tx.identityEvents.add({ ...audit, userId: current.id, kind: 'phone_set', details: { source, replaced: current.phone !== null } });
    return { status: 'set' };
  }

  if (!verified) return { status: 'ignored' };

  if (!holder.verified && !policy.trustTyped) {
    // Freed first: the unique constraint is checked per statement.
    await tx.users.setPhone(holder.user.id, null);
    await tx.users.setPhone(current.id, phone, source);
    await tx.identityEvents.add({
      ...audit,
      userId: holder.user.id,
      kind: 'phone_revoked',
      fromUserId: holder.user.id,
      toUserId: current.id,
      details: { source },
    });
    await tx.identityEvents.add({ ...audit, userId: current.id, kind: 'phone_set', details: { source, replaced: current.phone !== null, revokedClaim: true } });
    return { status: 'set' };
  }

  const holderPhone = holder.verified ? 'verified' : 'typed';
  if (policy.onConflict === 'relink') {
    await tx.users.relinkAccount({ channel, accountId, userId: holder.user.id, carrySessions: true });
    await tx.identityEvents.add({
      ...audit,
      userId: holder.user.id,
      kind: 'relink',
      fromUserId: current.id,
      toUserId: holder.user.id,
      details: { source, holderPhone },
    });
    return { status: 'relinked', fromUserId: current.id, toUserId: holder.user.id };
  }
  await tx.identityEvents.add({
    ...audit,
    userId: current.id,
    kind: 'conflict',
    fromUserId: current.id,
    toUserId: holder.user.id,
    details: { source, holderPhone, policy: 'conflict' },
  });
  return { status: 'conflict' };
}
