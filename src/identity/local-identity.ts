import type { AccountClaim, IdentityResolver, ResolvedIdentity } from '../domain/ports/identity.js';
import type { Store } from '../domain/ports/store.js';
import type { User } from '../domain/model.js';

/**
 * Identity from Palaver's own store: each (channel, account id) belongs to one user, created on first contact.
 * The channel that hands a message over has already vouched for the account.
 */
export class LocalIdentityResolver implements IdentityResolver {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  async resolve(claim: AccountClaim): Promise<ResolvedIdentity> {
    const { user } = await this.#store.users.resolveAccount({ channel: claim.channel, accountId: claim.accountId, displayName: claim.displayName ?? null });
    return this.#withAccounts(user);
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
