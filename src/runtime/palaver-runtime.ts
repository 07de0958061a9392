import { ChannelError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Session, StoredMessage, User } from '../domain/model.js';
import type { ConversationHandler, InboundMessage, TurnEvent, TurnOutcome } from '../domain/ports/channel.js';
import type { Store, TransactionOptions } from '../domain/ports/store.js';
import type { Participant } from './conversation-cache.js';
import { Inbox } from './inbox.js';
import { runTurn, type TurnDependencies } from './turn.js';

export interface RuntimeOptions {
  /** Longest accepted inbound text in characters. */
  readonly maxInboundChars: number;
  /** Inbox quiet window in ms (0: answer at once). */
  readonly debounceMs?: number;
}

const SHARED_COMMIT: TransactionOptions = { shareCommit: true };
const OWN_COMMIT: TransactionOptions = {};

interface AcceptedMessage {
  readonly user: User;
  readonly session: Session;
  readonly text: string;
  /** The stored message: settled already, or being written while the turn's first model call runs. */
  readonly stored: Promise<StoredMessage>;
  readonly correlationId: string;
  readonly languageHint: string | undefined;
  readonly onEvent: ((event: TurnEvent) => void) | undefined;
  readonly signal: AbortSignal | undefined;
}

/**
 * The inbound pipeline every channel shares: validate, deduplicate and persist the message, resolve the user, then
 * queue it in the conversation's inbox.
 *
 * When a message is stored: a first contact, a message with a delivery key (a redelivery must be recognised before
 * the model is asked) and any message while hosted MCP tools are configured (they run inside the model call) are
 * stored before their turn is queued. Other messages of a known conversation are written while the turn's first
 * model request is on its way; the turn waits for that write before it runs a tool or replies, and fails with the
 * store's error if the write fails. Either way no tool acts on, and no reply answers, a message that is not stored.
 */
export class PalaverRuntime implements ConversationHandler {
  readonly #deps: TurnDependencies;
  readonly #options: RuntimeOptions;
  readonly #inbox: Inbox<AcceptedMessage, TurnOutcome>;

  constructor(deps: TurnDependencies, options: RuntimeOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#inbox = new Inbox({ runBatch: (_key, batch) => this.#runBatch(batch), debounceMs: options.debounceMs ?? 0 });
  }

  /**
   * Accepts a message and resolves with the outcome of the turn that answers it.
   * @throws ChannelError `inbound_invalid` for empty or oversized text (nothing is stored then).
   */
  async handle(message: InboundMessage, options: { onEvent?: (event: TurnEvent) => void; signal?: AbortSignal } = {}): Promise<TurnOutcome> {
    const text = message.text.trim();
    if (!text) throw new ChannelError('inbound_invalid', message.channel, 'The message has no text.');
    if (text.length > this.#options.maxInboundChars) {
      throw new ChannelError('inbound_invalid', message.channel, `The message is too long: ${text.length} characters, at most ${this.#options.maxInboundChars}.`);
    }
    const correlationId = message.correlationId ?? newId();
    const { cache } = this.#deps;
    const conversationKey = `${message.channel}:${message.conversationId}`;
    const known = cache.participant(message.channel, message.accountId, message.conversationId);
    const queued = (participant: Participant, stored: Promise<StoredMessage>): AcceptedMessage => ({
      ...participant,
      text,
      stored,
      correlationId,
      languageHint: message.languageHint,
      onEvent: options.onEvent,
      signal: options.signal,
    });

    if (known && message.dedupeKey === undefined && this.#deps.hostedMcp.length === 0) {
      // Queued first: the write then runs while the turn's first model request is under way (its own conversation
      // is in the inbox by then, hence `own` 1).
      const stored = afterPendingIo(() => this.#deps.store.transaction((tx) => appendUserMessage(tx, known.session, text, correlationId), this.#commitOptions(1)));
      return this.#inbox.submit(conversationKey, queued(known, stored));
    }

    // Not queued yet: any conversation in the inbox is another one.
    const accepted = await this.#deps.store.transaction(async (tx) => {
      if (message.dedupeKey && !(await tx.inbound.remember(message.channel, message.dedupeKey))) return undefined;
      let participant = known;
      if (!participant) {
        const { user } = await tx.users.resolveAccount({ channel: message.channel, accountId: message.accountId, displayName: message.displayName ?? null });
        const session = await tx.sessions.open({ userId: user.id, channel: message.channel, conversationId: message.conversationId });
        if (session.title === null) await tx.sessions.setTitle(session.id, titleFrom(text));
        participant = { user, session };
      }
      return { participant, message: await appendUserMessage(tx, participant.session, text, correlationId) };
    }, this.#commitOptions(0));
    if (!accepted) {
      this.#deps.metrics.duplicates.inc();
      this.#deps.logger.info({ correlationId, channel: message.channel, dedupeKey: message.dedupeKey }, 'duplicate inbound message ignored');
      return { correlationId, sessionId: '', userId: '', reply: '', replyMessageId: '', status: 'duplicate', usage: { inputTokens: 0, outputTokens: 0, cost: '0', currency: this.#deps.currency } };
    }
    // Remembered only after the commit: a rolled-back first contact must not be cached.
    if (!known) cache.rememberParticipant(message.channel, message.accountId, message.conversationId, accepted.participant);
    return this.#inbox.submit(conversationKey, queued(accepted.participant, Promise.resolve(accepted.message)));
  }

  /**
   * While other conversations have turns in flight, their writes come at about the same time as this one's: let
   * the store commit them together (a hint; it still resolves only once the writes are durable).
   */
  #commitOptions(own: 0 | 1): TransactionOptions {
    return this.#inbox.activeConversations - own > 0 ? SHARED_COMMIT : OWN_COMMIT;
  }

  /** Resolves when every queued turn has finished. */
  drain(): Promise<void> {
    return this.#inbox.drain();
  }

  async #runBatch(batch: readonly AcceptedMessage[]): Promise<TurnOutcome> {
    const first = batch[0]!;
    const last = batch[batch.length - 1]!;
    if (batch.length > 1) {
      this.#deps.logger.info({ correlationId: first.correlationId, joined: batch.slice(1).map((item) => item.correlationId) }, 'messages answered together');
    }
    const listeners = batch.flatMap((item) => (item.onEvent ? [item.onEvent] : []));
    const stop = this.#deps.metrics.turnSeconds.startTimer();
    try {
      const outcome = await runTurn(this.#deps, {
        user: first.user,
        session: first.session,
        newTexts: batch.map((item) => item.text),
        stored: Promise.all(batch.map((item) => item.stored)),
        correlationId: first.correlationId,
        commit: this.#commitOptions(1),
        language: last.languageHint ?? this.#deps.agent.defaultLanguage,
        timeZone: this.#deps.agent.defaultTimeZone,
        ...(listeners.length > 0 ? { onEvent: (event: TurnEvent) => listeners.forEach((listener) => listener(event)) } : {}),
        // Only a lone message may cancel its turn; a batch belongs to several callers.
        ...(batch.length === 1 && first.signal ? { signal: first.signal } : {}),
      });
      const seconds = stop();
      this.#deps.logger.info(
        { correlationId: outcome.correlationId, sessionId: outcome.sessionId, status: outcome.status, ms: Math.round(seconds * 1000), inputTokens: outcome.usage.inputTokens, outputTokens: outcome.usage.outputTokens, cost: outcome.usage.cost },
        'turn finished',
      );
      return outcome;
    } catch (error) {
      stop();
      throw error;
    }
  }
}

/** Stores a person's message; the session has work in flight from then until its turn ends. */
async function appendUserMessage(tx: Store, session: Session, text: string, correlationId: string): Promise<StoredMessage> {
  const [stored] = await tx.messages.append(session.id, [{ role: 'user', audience: 'display', content: text, correlationId }], { status: 'running' });
  return stored!;
}

/**
 * Runs `write` once the work already under way has reached its I/O: in the event loop's check phase, after the
 * promise chain that sends the turn's first model request. Its failure is left to whoever awaits the result (the turn
 * does, before its first tool call or its reply); the no-op handler only keeps it from counting as unhandled
 * meanwhile.
 */
function afterPendingIo<T>(write: () => Promise<T>): Promise<T> {
  const written = new Promise<void>((resolve) => setImmediate(resolve)).then(write);
  written.catch(() => {});
  return written;
}

function titleFrom(text: string): string {
  const line = text.split('\n')[0]!.trim();
  return line.length <= 60 ? line : `${line.slice(0, 59)}…`;
}
