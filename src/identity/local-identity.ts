import type { AccountClaim, IdentityResolver, ResolvedIdentity } from '../domain/ports/identity.js';
import type { Store } from '../domain/ports/store.js';
import type { User } from '../domain/model.js';
import { linkPhone, type PhonePolicy } from './phone-linking.js';

export interface LocalIdentityOptions {
  /** How phones that come with a claim are linked (`identity.phones`); without it they are left alone. */
  readonly phones?: PhonePolicy;
}

/**
 * Identity from Palaver's own store: each (channel, account id) belongs to one user, created on first contact.
 * The channel that hands a message over has already vouched for the account.
 */
export class LocalIdentityResolver implements IdentityResolver {
  readonly #store: Store;
  readonly #phones: PhonePolicy | undefined;

  constructor(store: Store, options: LocalIdentityOptions = {}) {
    this.#store = store;
    this.#phones = options.phones;
  }

  /** Resolves the account and, when the claim carries a phone, links it (see {@link linkPhone}): the user may change. */
  async resolve(claim: AccountClaim): Promise<ResolvedIdentity> {
    const { user } = await this.#store.users.resolveAccount({ channel: claim.channel, accountId: claim.accountId, displayName: claim.displayName ?? null });
    if (!claim.phone || this.#phones === undefined) return this.#withAccounts(user);
    const phone = await linkPhone(
      this.#store,
      { channel: claim.channel, accountId: claim.accountId, phone: claim.phone, source: claim.phoneVerified === true ? 'channel' : 'typed' },
      this.#phones,
    );
    if (phone.status !== 'set' && phone.status !== 'relinked') return { ...(await this.#withAccounts(user)), phone };
    const now = await this.#store.users.findByAccount(claim.channel, claim.accountId);
    return { ...(await this.#withAccounts(now ?? user)), phone };
  }

  async find(claim: AccountClaim): Promise<ResolvedIdentity | undefined> {
    const user = await this.#store.users.findByAccount(claim.channel, claim.accountId);
    return user ? this.#withAccounts(user) : undefined;
  }

  async #withAccounts(user: User): Promise<ResolvedIdentity> {
    const accounts = await this.#store.users.listAccounts(user.id);
    return { user, accounts: accounts.map(({ channel, accountId }) => ({ channel, accountId })) };
  }
}
