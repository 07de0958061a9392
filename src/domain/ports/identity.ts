import type { ChannelAccount, User } from '../model.js';

/** A channel account as the channel vouches for it: the server decided who this is, not the message. */
export interface AccountClaim {
  readonly channel: string;
  readonly accountId: string;
  readonly displayName?: string | null;
}

/** Who is talking: the internal user behind a channel account, and the accounts linked to that user. */
export interface ResolvedIdentity {
  readonly user: User;
  readonly accounts: readonly Pick<ChannelAccount, 'channel' | 'accountId'>[];
}

/**
 * The identity step of the pipeline: maps every (channel, account id) to one internal user, creating the user on
 * first contact. Local resolution reads the store; a team's own directory (an MCP `verify_user` tool) is another
 * adapter. A resolver that cannot decide rejects: nothing is answered under a guessed identity.
 */
export interface IdentityResolver {
  resolve(claim: AccountClaim): Promise<ResolvedIdentity>;
  /** Who the account is, if it is known, without creating anyone (to refuse a stranger without leaving a trace). */
  find(claim: AccountClaim): Promise<ResolvedIdentity | undefined>;
}
