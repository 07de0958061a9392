import { ChannelError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { AttachmentRef, InboundRecord } from '../../domain/model.js';
import type { Acceptance, AcceptOptions, Channel, InboundMessage, StoredReply } from '../../domain/ports/channel.js';
import type { Store } from '../../domain/ports/store.js';
import type { Inbox } from '../inbox.js';
import type { AcceptedMessage, TurnDependencies } from '../turn/turn-context.js';
import type { IdentityJoin } from './identity-join.js';
import { accountNamespaceOf, conversationKey, participantKey } from './keys.js';
import type { ProcessLease } from './lease.js';
import type { PersonRateLimit } from './person-rate-limit.js';
import { checkStorable } from './storable-inbound.js';
import type { TurnRunner } from './turn-runner.js';

/** Messages that may wait in one conversation unless its channel says otherwise. */
const DEFAULT_MAX_WAITING = 50;

/** What accepting a message needs. */
export interface IntakeOptions {
  readonly deps: Pick<TurnDependencies, 'store' | 'cache' | 'logger' | 'metrics' | 'now'>;
  /** See `PipelineOptions.maxInboundChars`. */
  readonly maxInboundChars: number;
  /** See `PipelineOptions.limitAccepts`. */
  readonly limitAccepts?: (<T>(store: () => Promise<T>) => Promise<T>) | undefined;
  /** The lease an accepted message is stored under (this process). */
  readonly lease: ProcessLease;
  /** How many messages wait per conversation (for the busy refusal). */
  readonly inbox: Pick<Inbox<AcceptedMessage>, 'waiting'>;
  readonly identity: Pick<IdentityJoin, 'phoneOf' | 'join' | 'tellPhoneConflict'>;
  /** Where a stored message goes to be answered. */
  readonly turns: Pick<TurnRunner, 'queueAccepted'>;
  /** `limits.perPerson`, when configured: counted in the transaction that stores the message. */
  readonly personRate?: PersonRateLimit | undefined;
  /** The reply a duplicate's original already got (see `ConversationReads.storedReply`). */
  readonly storedReply: (record: InboundRecord) => Promise<StoredReply | undefined>;
}

/**
 * Takes a message in from a channel: checks it, refuses it when its conversation is flooded, resolves who sent it,
 * stores it in the durable inbox under this process's lease (or finds the duplicate it is), and queues it.
 */
export class Intake {
  readonly #deps: IntakeOptions['deps'];
  readonly #options: IntakeOptions;

  constructor(options: IntakeOptions) {
    this.#deps = options.deps;
    this.#options = options;
  }

  /** See `Pipeline.accept`. */
  async accept(channel: Channel, message: InboundMessage, options: AcceptOptions = {}): Promise<Acceptance> {
    // The channel that hands the message over vouches for it: a message cannot claim another channel's accounts.
    if (message.channel !== channel.name) {
      throw new ChannelError('inbound_invalid', channel.name, `Channel ${channel.name} handed over a message of channel ${message.channel}.`);
    }
    const text = message.text.trim();
    // A message may be only files (a photo sent without words).
    if (!text && (message.attachments?.length ?? 0) === 0) throw new ChannelError('inbound_invalid', message.channel, 'The message has no text.');
    if (text.length > this.#options.maxInboundChars) {
      throw new ChannelError(
        'inbound_invalid',
        message.channel,
        `The message is too long: ${text.length} characters, at most ${this.#options.maxInboundChars}.`,
      );
    }
    checkStorable(message, text);
    const limit = this.#options.limitAccepts;
    return limit ? limit(() => this.#store(channel, message, text, options)) : this.#store(channel, message, text, options);
  }

  async #store(channel: Channel, message: InboundMessage, text: string, options: AcceptOptions): Promise<Acceptance> {
    // A conversation that floods faster than it is answered: refused before anything is stored.
    const maxWaiting = channel.inbox?.maxWaiting ?? DEFAULT_MAX_WAITING;
    if (this.#options.inbox.waiting(conversationKey(message.channel, message.conversationId)) >= maxWaiting) {
      throw new ChannelError('busy', message.channel, `Too many messages are waiting in this conversation (at most ${maxWaiting}); wait for the answer.`);
    }
    const kind = message.conversationKind ?? 'direct';
    const correlationId = message.correlationId ?? newId();
    const { identity } = this.#options;
    const phone = await identity.phoneOf(message, text);
    const cached = this.#deps.cache.participant(participantKey(channel, message));
    // A phone goes through identity (it may change who this is), unless it is a claim that could not change anything.
    const phoneMatters = phone !== undefined && (phone.verified || (cached?.user.phone ?? null) === null);
    const joined = cached && !phoneMatters ? { participant: cached } : await identity.join(channel, message, text, kind, correlationId, phone);
    const { participant } = joined;

    // Named before the transaction: a transaction may run again (a deadlock on PostgreSQL) and must write the same.
    const attachments = (message.attachments ?? []).map((file) => ({ ...file, id: newId() }));
    const refs = attachments.map(({ bytes: _bytes, ...ref }) => ref);
    const { personRate } = this.#options;
    const rule = personRate?.ruleFor(message.channel, participant, message.accountId);
    const receivedAt = this.#deps.now();
    const result = await this.#deps.store.transaction(async (tx) => {
      // The person's accepts are taken one at a time across processes while a limit counts them.
      if (rule) await tx.personRate.lock(participant.user.id);
      const accepted = await tx.inbound.accept(
        {
          channel: message.channel,
          conversationId: message.conversationId,
          accountId: message.accountId,
          accountNamespace: accountNamespaceOf(channel),
          userId: participant.user.id,
          sessionId: participant.session.id,
          text,
          messageId: message.messageId ?? null,
          dedupeKey: message.dedupeKey ?? null,
          correlationId,
          languageHint: message.languageHint ?? null,
          displayName: message.displayName ?? null,
          conversationKind: kind,
          ...(refs.length === 0 ? {} : { attachments: refs }),
        },
        { owner: this.#options.lease.owner, leaseMs: this.#options.lease.leaseMs },
      );
      if (accepted.accepted && attachments.length > 0) await storeAttachments(tx, message, accepted.record, attachments, options.maxStoredAttachmentBytes);
      if (accepted.accepted) await tx.sessions.setStatus(participant.session.id, 'running');
      if (!accepted.accepted || !rule) return accepted;
      const rateLimited = await personRate!.count(tx, accepted.record.id, participant.user.id, rule, receivedAt);
      return rateLimited === undefined ? accepted : { ...accepted, record: { ...accepted.record, rateLimited } };
    });
    if (!result.accepted) {
      this.#deps.metrics.duplicates.inc();
      this.#deps.logger.info(
        { correlationId: result.existing.correlationId, channel: message.channel, dedupeKey: message.dedupeKey },
        'duplicate inbound message ignored',
      );
      const answered = await this.#options.storedReply(result.existing);
      return { status: 'duplicate', correlationId: result.existing.correlationId, ...(answered ? { answered } : {}) };
    }
    if (result.record.rateLimited !== undefined) {
      this.#deps.metrics.rateLimited.inc({ channel: message.channel });
      this.#deps.logger.info(
        { correlationId, channel: message.channel, userId: participant.user.id, notice: result.record.rateLimited === 'notice' },
        'message over limits.perPerson: stored, not answered by the model',
      );
    }
    if (joined.phone?.status === 'conflict') await identity.tellPhoneConflict(channel, message, participant, correlationId);
    this.#options.turns.queueAccepted(channel, participant, result.record, options);
    return { status: 'accepted', correlationId, sessionId: participant.session.id, userId: participant.user.id };
  }
}

/**
 * Stores the files of an accepted message in its transaction, once the account's stored bytes leave room for them
 * (`maxStored`); otherwise throws, which undoes the accept too. Two messages of one account at once may both pass
 * the check: the overshoot is bounded by the runs a caller may have open.
 * @throws ChannelError `attachments_quota`
 */
async function storeAttachments(
  tx: Store,
  message: InboundMessage,
  record: InboundRecord,
  files: readonly (AttachmentRef & { readonly bytes: Uint8Array })[],
  maxStored: number | undefined,
): Promise<void> {
  const adding = files.reduce((sum, file) => sum + file.size, 0);
  if (maxStored !== undefined && (await tx.attachments.storedBytes(message.channel, message.accountId)) + adding > maxStored) {
    throw new ChannelError('attachments_quota', message.channel, `The files would take this account over its ${maxStored} stored bytes.`);
  }
  await tx.attachments.add({ channel: message.channel, accountId: message.accountId, sessionId: record.sessionId, inboundId: record.id }, files);
}
