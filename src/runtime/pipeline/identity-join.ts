import { ChannelError, IdentityError } from '../../domain/errors.js';
import type { Channel, InboundMessage } from '../../domain/ports/channel.js';
import type { AccountClaim, IdentityResolver, PhoneLinkOutcome, ResolvedIdentity } from '../../domain/ports/identity.js';
import { systemText } from '../../i18n/index.js';
import type { Participant } from '../conversation-cache.js';
import type { TurnDependencies } from '../turn/turn-context.js';
import { accountNamespaceOf, participantKey } from './keys.js';
import { titleFrom } from './title.js';

/** A phone a message carries, and whether the channel vouches for it. */
export interface CarriedPhone {
  readonly raw: string;
  readonly verified: boolean;
}

/** What joining a conversation needs. */
export interface IdentityJoinOptions {
  readonly deps: Pick<TurnDependencies, 'store' | 'cache' | 'logger' | 'agent'>;
  readonly identity: IdentityResolver;
  /** See `PipelineOptions.findPhoneInText`. */
  readonly findPhoneInText?: ((text: string) => Promise<string | undefined>) | undefined;
  /** The language to tell a person about their phone in (see `ConversationReads.interfaceLanguage`). */
  readonly interfaceLanguage: (channel: Channel, accountId: string, hint: string | undefined) => Promise<string>;
}

/**
 * Who writes in a conversation: identity resolves the account (and a phone it carries), the conversation's session is
 * opened, and a direct conversation is kept its opener's. Refusals are `ChannelError`s a channel passes on.
 */
export class IdentityJoin {
  readonly #deps: IdentityJoinOptions['deps'];
  readonly #options: IdentityJoinOptions;

  constructor(options: IdentityJoinOptions) {
    this.#deps = options.deps;
    this.#options = options;
  }

  /**
   * The phone a message carries: one the channel vouches for (a shared contact of the sender's own) is verified; a
   * number found in the text is only a claim.
   */
  async phoneOf(message: InboundMessage, text: string): Promise<CarriedPhone | undefined> {
    if (message.phone) return { raw: message.phone, verified: true };
    const found = await this.#options.findPhoneInText?.(text);
    return found === undefined ? undefined : { raw: `+${found}`, verified: false };
  }

  /**
   * First message of an account in a conversation, or one that carries a phone: who it is (identity), and whether the
   * conversation is theirs.
   */
  async join(
    channel: Channel,
    message: InboundMessage,
    text: string,
    kind: 'direct' | 'shared',
    correlationId: string,
    phone?: CarriedPhone,
  ): Promise<{ readonly participant: Participant; readonly phone?: PhoneLinkOutcome }> {
    // Identity knows accounts by their namespace: channels that see the same people share it.
    const claim: AccountClaim = {
      channel: accountNamespaceOf(channel),
      accountId: message.accountId,
      displayName: message.displayName ?? null,
      ...(phone === undefined ? {} : { phone: phone.raw, phoneVerified: phone.verified }),
    };
    if (kind === 'direct') {
      // Someone else's conversation is refused before anything is created for the stranger.
      const existing = await this.#deps.store.sessions.findByConversation(message.channel, message.conversationId);
      if (existing && (await this.#options.identity.find(claim))?.user.id !== existing.userId) throw this.#refuseStranger(message);
    }
    const identity = await this.#resolveIdentity(claim, message, correlationId);
    const { user, accounts } = identity;
    if (identity.phone !== undefined) this.#notePhone(identity.phone, claim.channel, message, correlationId);
    const session = await this.#deps.store.transaction(async (tx) => {
      const session = await tx.sessions.open({ userId: user.id, channel: message.channel, conversationId: message.conversationId });
      // Set once, from the first input with text; never changed later.
      const title = session.title === null ? titleFrom(text) : '';
      if (title !== '') await tx.sessions.setTitle(session.id, title, { ifUntitled: true });
      return session;
    });
    // A direct conversation is its opener's (and their linked accounts'): nobody else writes into it or reads it.
    // (Checked again: two people may have opened the same new conversation at once.)
    if (kind === 'direct' && session.userId !== user.id) throw this.#refuseStranger(message);
    const participant = { user, accounts, session };
    // Remembered only after the checks: a refused or rolled-back first contact must not be cached. A provisional one
    // never is: the next message asks the directory again, to join the real user when it answers.
    if (identity.provisional !== true) this.#deps.cache.rememberParticipant(participantKey(channel, message), participant);
    return identity.phone === undefined ? { participant } : { participant, phone: identity.phone };
  }

  /**
   * Tells the person their verified phone could not be linked, before the reply to their message. Sent straight
   * through the channel, not through the outbox: after a crash it may be lost or, on a redelivery, sent again.
   */
  async tellPhoneConflict(channel: Channel, message: InboundMessage, participant: Participant, correlationId: string): Promise<void> {
    const language = await this.#options.interfaceLanguage(channel, message.accountId, message.languageHint);
    const text = systemText(language, 'identity.phoneConflict', undefined, this.#deps.agent.defaultLanguage);
    const target = {
      channel: message.channel,
      conversationId: message.conversationId,
      accountId: message.accountId,
      inReplyTo: message.messageId ? [message.messageId] : [],
      correlationId,
      sessionId: participant.session.id,
    };
    try {
      await channel.send(target, text);
    } catch (error) {
      this.#deps.logger.warn({ err: error, correlationId, channel: message.channel }, 'could not send the phone conflict notice');
    }
  }

  /** Logs what became of a phone (never the number) and forgets who the account was, when that changed. */
  #notePhone(outcome: PhoneLinkOutcome, namespace: string, message: InboundMessage, correlationId: string): void {
    const where = { correlationId, channel: message.channel, accountId: message.accountId };
    switch (outcome.status) {
      case 'relinked':
        // Other conversations of this account, on every channel of its namespace (other processes are told).
        this.#deps.cache.forgetAccount(namespace, message.accountId);
        this.#deps.logger.info({ ...where, fromUserId: outcome.fromUserId, toUserId: outcome.toUserId }, 'account relinked to the owner of its verified phone');
        return;
      case 'conflict':
        this.#deps.logger.warn(where, 'phone link refused: the verified phone belongs to another user (identity.phones.onConflict is conflict)');
        return;
      case 'invalid':
        this.#deps.logger.info({ ...where, reason: outcome.reason }, 'phone not linked: not a valid number');
        return;
      case 'set':
        this.#deps.logger.info(where, 'phone set');
        return;
      default:
        return;
    }
  }

  /**
   * Who sent the message. When the resolver cannot tell (its directory is unreachable, or names nobody), the message
   * is refused with a short text in the person's language for the channel to pass on: nothing is answered under a
   * guessed identity, and the refusal is logged with the message's correlation id.
   */
  async #resolveIdentity(claim: AccountClaim, message: InboundMessage, correlationId: string): Promise<ResolvedIdentity> {
    try {
      return await this.#options.identity.resolve(claim);
    } catch (error) {
      if (!(error instanceof IdentityError)) throw error;
      this.#deps.logger.warn(
        { err: error, correlationId, channel: message.channel, conversationId: message.conversationId, accountId: message.accountId, failure: error.failure },
        'message refused: the identity resolver could not say who sent it',
      );
      const text = systemText(
        message.languageHint,
        error.failure === 'unreachable' ? 'identity.unavailable' : 'identity.unrecognised',
        undefined,
        this.#deps.agent.defaultLanguage,
      );
      throw new ChannelError(error.code, message.channel, text, { cause: error });
    }
  }

  #refuseStranger(message: InboundMessage): ChannelError {
    this.#deps.logger.warn(
      { channel: message.channel, conversationId: message.conversationId, accountId: message.accountId },
      "message into another user's conversation refused",
    );
    return new ChannelError('forbidden', message.channel, 'This conversation belongs to someone else.');
  }
}
