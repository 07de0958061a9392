import type { ChannelAccount, User } from '../model.js';

/** A channel account as the channel vouches for it: the server decided who this is, not the message. */
export interface AccountClaim {
  /**
   * The account's namespace: the channel's `accountNamespace`, by default its name (`telegram` for both Telegram
   * channels). Channels that share it share their people.
   */
  readonly channel: string;
  readonly accountId: string;
  readonly displayName?: string | null;
  /** A phone number the account gave (a shared contact); a directory resolver passes it on and skips its cache. */
  readonly phone?: string | null;
  /**
   * Whether something trustworthy vouches that `phone` is the person's: the channel (a Telegram contact of the
   * sender's own), the admin API or a directory. Otherwise (the default) it is a claim, merely typed in a message,
   * which never moves an account to another user.
   */
  readonly phoneVerified?: boolean;
}

/**
 * What became of a phone that came with a claim. `set`: now the user's; `unchanged`: already theirs; `ignored`: a typed
 * number that could not be taken (the user has one, or someone else holds it), nobody told; `relinked`: the account
 * moved to the number's owner; `conflict`: refused, the person is to be told; `invalid`: not a phone number.
 */
export type PhoneLinkOutcome =
  | { readonly status: 'set' | 'unchanged' | 'ignored' | 'conflict' }
  | { readonly status: 'relinked'; readonly fromUserId: string; readonly toUserId: string }
  | { readonly status: 'invalid'; readonly reason: string };

/** Who is talking: the internal user behind a channel account, and the accounts linked to that user. */
export interface ResolvedIdentity {
  readonly user: User;
  readonly accounts: readonly Pick<ChannelAccount, 'channel' | 'accountId'>[];
  /** Present when the claim carried a phone: what became of it. */
  readonly phone?: PhoneLinkOutcome;
  /**
   * True when the resolver could not reach its authority and stands in a provisional user for the account
   * (`identity.onUnreachable: "provisional"`): such an identity is not remembered between messages, so the next
   * message asks again and is joined to the real user once the authority answers.
   */
  readonly provisional?: true;
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
  /** Lets go of connections (a directory's MCP session); called once when Palaver closes. */
  close?(): Promise<void>;
}
