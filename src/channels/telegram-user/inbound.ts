import type { FileDownloadLocation, FileDownloadParameters, Message, User } from '@mtcute/core';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelContext, InboundMessage, RecordedConversation } from '../../domain/ports/channel.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { describeMedia, transcribeAudio, withTranscript, type Transcribe } from '../telegram/index.js';
import type { AnswerPolicy, NotAnswered } from './answer-policy.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import type { OwnSends } from './own-sends.js';
import type { OwnerTakeover } from './owner-takeover.js';
import { readMessage, type ReadMessage, type ReplySource } from './read-message.js';

/** The client calls inbound needs: the replied-to message for quotes, and media downloads for transcription. */
export interface InboundClient extends ReplySource {
  downloadAsBuffer(location: FileDownloadLocation, params?: FileDownloadParameters): Promise<Uint8Array>;
}

export interface TelegramUserInboundOptions {
  readonly context: ChannelContext;
  readonly client: InboundClient;
  readonly policy: AnswerPolicy;
  readonly ownSends: OwnSends;
  readonly takeover: OwnerTakeover;
  /** Voice, audio and round video are transcribed with it; without it the model reads `[voice message]`. */
  readonly transcribe?: Transcribe;
  readonly logger?: Logger;
  /** Longest audio downloaded for transcription, in bytes. Default 25 MB (what OpenAI's endpoint takes). */
  readonly maxAudioBytes?: number;
  /**
   * `importHistoryOnFirstContact`: stores a chat's earlier messages (before `beforeId`) the first time the chat is
   * answered; once per chat (history-sync.ts keeps the mark). A failure is logged and the message answered anyway.
   */
  readonly importHistory?: (chatId: number, beforeId: number) => Promise<void>;
}

/** What became of one message, for the caller's logs and for tests. */
export type InboundOutcome =
  /** Handed to the pipeline: it will be answered (or it was seen before: `duplicate`). */
  | { readonly kind: 'accepted' | 'duplicate'; readonly message: InboundMessage }
  /** Stored without a turn: the owner's own message, or the person's while the owner has the chat. */
  | { readonly kind: 'owner' | 'held'; readonly conversationId: string; readonly messageId: string; readonly until?: Date }
  /** The pipeline refused it (too long, unreadable, identity unreachable, busy); logged, nothing sent. */
  | { readonly kind: 'refused'; readonly code: string }
  | { readonly kind: 'ignored'; readonly reason: NotAnswered | 'own_send' | 'empty' };

const DEFAULT_MAX_AUDIO_BYTES = 25 * 1024 * 1024;

/**
 * The inbound side of the Telegram user account: each new message (live or caught up) is sorted once.
 *
 * - Out of scope (groups, channels, Saved Messages, service messages, bots, Telegram's 777000, people the `answer`
 *   setting leaves out): ignored, nothing stored.
 * - Outgoing and sent by this channel (its id known, or a pending send with its text): ignored; the core stored it.
 * - Outgoing and typed by the owner (from a phone): stored as the assistant's side (`record`, source `owner`) and
 *   the chat is taken over for the configured window.
 * - Incoming while the chat is taken over: stored (`record`, source `held`), not answered.
 * - Otherwise: read (text, caption, media, quote, transcript, own contact → phone) and handed to `accept`.
 *
 * `handle` resolves only once the message is stored (or known to need no storing), so the caller may let the update
 * state advance after it; storage failures reject.
 */
export class TelegramUserInbound {
  readonly #options: TelegramUserInboundOptions;
  readonly #logger: Logger;

  constructor(options: TelegramUserInboundOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
  }

  async handle(message: Message): Promise<InboundOutcome> {
    const { policy } = this.#options;
    const chatId = String(message.chat.id);
    const notAnswered = policy.check(message);
    if (message.isOutgoing) return this.#outgoing(message, chatId, notAnswered);
    if (notAnswered !== undefined) {
      this.#logger.debug({ chatId, messageId: message.id, reason: notAnswered }, 'telegram user message not answered');
      return { kind: 'ignored', reason: notAnswered };
    }
    const person = message.chat as User;
    const read = await this.#read(message, person);
    if (read === undefined) return { kind: 'ignored', reason: 'empty' };
    const until = this.#options.takeover.heldUntil(chatId);
    if (until !== undefined) {
      await this.#options.context.record(conversationOf(person, chatId), [
        { role: 'user', text: read.text, messageId: String(message.id), at: message.date, source: 'held' },
      ]);
      this.#logger.info({ chatId, messageId: message.id, until: until.toISOString() }, 'message stored, not answered: the owner has taken this chat over');
      return { kind: 'held', conversationId: chatId, messageId: String(message.id), until };
    }
    const inbound: InboundMessage = {
      channel: TELEGRAM_USER_CHANNEL,
      accountId: String(person.id),
      displayName: displayNameOf(person),
      conversationId: chatId,
      text: read.text,
      messageId: String(message.id),
      dedupeKey: `${TELEGRAM_USER_CHANNEL}:${chatId}:${message.id}`,
      ...(person.language ? { languageHint: person.language } : {}),
      conversationKind: 'direct',
      ...(read.phone ? { phone: read.phone } : {}),
    };
    if (this.#options.importHistory) {
      // Before the message itself is accepted, so the first turn's model already reads what was said before.
      await this.#options
        .importHistory(person.id, message.id)
        .catch((error: unknown) =>
          this.#logger.warn({ err: error, chatId, messageId: message.id }, "could not import the chat's earlier history; answering without it"),
        );
    }
    try {
      const acceptance = await this.#options.context.accept(inbound);
      if (acceptance.status === 'duplicate') this.#logger.debug({ chatId, messageId: message.id }, 'telegram user message seen before; not answered again');
      return { kind: acceptance.status === 'duplicate' ? 'duplicate' : 'accepted', message: inbound };
    } catch (error) {
      if (!(error instanceof ChannelError)) throw error;
      // A person's own account answering with Palaver's canned notices would give the agent away; the refusal is
      // logged and the message left unanswered, as a person who missed it would.
      this.#logger.warn({ err: error, chatId, messageId: message.id, code: error.code }, 'telegram user message refused by the pipeline; not answered');
      return { kind: 'refused', code: error.code };
    }
  }

  /** An outgoing message: one of ours (ignored) or the owner's by hand (stored, chat taken over). */
  async #outgoing(message: Message, chatId: string, notAnswered: NotAnswered | undefined): Promise<InboundOutcome> {
    if (notAnswered !== undefined) return { kind: 'ignored', reason: notAnswered };
    // Known ids first: a message this process sent is recognised without reading the state.
    if (await this.#options.ownSends.isOwn(chatId, message.id, message.text)) return { kind: 'ignored', reason: 'own_send' };
    const person = message.chat as User;
    // The owner's voice is not transcribed (nobody is waiting for an answer to it); it is described.
    const read = await readMessage(message, this.#options.client, (error) => this.#quoteFailed(error, chatId));
    if (read === undefined) return { kind: 'ignored', reason: 'empty' };
    const text = read.audio ? withTranscript(read.text, describeMedia(read.audio.media)) : read.text;
    await this.#options.context.record(conversationOf(person, chatId), [
      { role: 'assistant', text, messageId: String(message.id), at: message.date, source: 'owner' },
    ]);
    const { until } = await this.#options.takeover.ownerWrote(chatId, message.date);
    this.#logger.info(
      { chatId, messageId: message.id, until: until.toISOString() },
      "the owner wrote by hand; stored as the account's side of the conversation",
    );
    return { kind: 'owner', conversationId: chatId, messageId: String(message.id), until };
  }

  /** The message as text for the model, its speech transcribed (or described when that cannot be done). */
  async #read(message: Message, person: User): Promise<ReadMessage | undefined> {
    const chatId = String(message.chat.id);
    const read = await readMessage(message, this.#options.client, (error) => this.#quoteFailed(error, chatId));
    if (read?.audio === undefined) return read;
    const { media, location } = read.audio;
    const transcription = await transcribeAudio({
      media,
      transcribe: this.#options.transcribe,
      download: () => this.#options.client.downloadAsBuffer(location, { abortSignal: AbortSignal.timeout(60_000) }),
      languageHint: person.language ?? undefined,
      maxBytes: this.#options.maxAudioBytes ?? DEFAULT_MAX_AUDIO_BYTES,
    });
    if (transcription.status === 'transcribed') return { ...read, text: withTranscript(read.text, transcription.text) };
    // No notice from a person's account: the model reads `[voice message]` and can ask, in its own words, for text.
    if (transcription.status === 'off') this.#logger.info({ chatId }, 'voice message not transcribed: no transcriber configured');
    else
      this.#logger.warn({ err: transcription.error, chatId }, 'telegram user voice message could not be transcribed; the model reads it as undescribed speech');
    return { ...read, text: withTranscript(read.text, describeMedia(media)) };
  }

  #quoteFailed(error: unknown, chatId: string): void {
    this.#logger.warn({ err: error, chatId }, 'the message a reply answers could not be fetched; read without the quote');
  }
}

function conversationOf(person: User, chatId: string): RecordedConversation {
  return { accountId: String(person.id), displayName: displayNameOf(person), conversationId: chatId, conversationKind: 'direct' };
}

function displayNameOf(person: User): string | null {
  return [person.firstName, person.lastName].filter(Boolean).join(' ') || person.username || null;
}
