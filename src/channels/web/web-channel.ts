import type { DeliveryApproval } from '../../domain/approval.js';
import { ChannelError, PalaverError } from '../../domain/errors.js';
import type { ClusterBus } from '../../domain/ports/cluster-bus.js';
import type {
  Acceptance,
  ApprovalOutcome,
  Channel,
  ChannelCapabilities,
  ChannelContext,
  ChannelRoute,
  InboundMessage,
  OperatorEvent,
  OperatorEventTarget,
  ReplyTarget,
  SendOptions,
  SentPart,
  StoredReply,
  TurnEnd,
  TurnProgress,
} from '../../domain/ports/channel.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { isReactionEmoji } from '../shared/reaction-emoji.js';
import type { AguiStream } from './agui-stream.js';
import type { ApprovalAnswer } from './agui-input.js';
import type { AguiRunIds, FinishedReply } from './agui-translator.js';
import { INTERNAL_ERROR_CODE, WEB_CHANNEL } from './web-constants.js';
import { chatPageRoutes } from './chat-page.js';
import { errorResponse, type GuardResult, RequestGuard } from './request-guard.js';
import { badTextReason } from './text-check.js';
import { WebIdentity, type UserTokenOptions } from './web-identity.js';
import { ReplyRelay, type RelayedEvent, type RelayedTurn } from './reply-relay.js';
import { DEFAULT_VISITOR_LIMITS, VisitorLimits, type LimitRefusal, type VisitorLimitOptions } from './visitor-limits.js';
import { AddressByteWindow } from './address-bytes.js';
import { UploadPermits, type UploadTicket } from './upload-permits.js';
import type { AttachmentRules } from './attachment-check.js';
import type { Localised } from './chat-page.js';
import { systemText } from '../../i18n/index.js';
import { ConversationEvents } from './conversation-events.js';
import { ConversationEventStream } from './conversation-event-stream.js';
import { localisedText, readLanguageHint } from './localised-text.js';

export interface WebChannelOptions {
  /** Longest accepted user text, in characters (`limits.maxInboundChars`); longer → 400 `message_too_long`. */
  readonly maxInboundChars: number;
  readonly logger?: Logger;
  /** Send tool arguments and results to the client (default false: only tool names and success). */
  readonly showToolDetails?: boolean;
  /** `channels.web.controlEvents`: also send tool progress as seed 002's `control` events. Default false. */
  readonly controlEvents?: boolean;
  /** Interval of SSE comment lines that keep idle proxies from closing a long turn. Default 15 000 ms. */
  readonly keepAliveMs?: number;
  /** Largest accepted `/agui` body, in bytes. Default 1 MiB (AG-UI clients resend the history). */
  readonly maxBodyBytes?: number;
  /** How long a request body may take to arrive; then 408 `body_timeout`. Default 10 000 ms. */
  readonly bodyTimeoutMs?: number;
  /** Where `chat.html`, `chat.js` and `chat.css` live; `false` serves no page. Default: the package's `web/`. */
  readonly webDir?: string | false;
  /** Signs visitor cookies (`channels.web.cookieSecret`); see `WebIdentity`. */
  readonly cookieSecret?: string | undefined;
  /** Keeps a generated cookie secret (`channels.web.cookieSecretFile`); absent with no secret: in memory only. */
  readonly cookieSecretFile?: string | undefined;
  /** Told the cookie secret once it is read from its file or generated, so the log scrubber can censor it. */
  readonly onSecret?: ((secret: string) => void) | undefined;
  /** Verifies an embedding site's user tokens (`channels.web.userTokens`); absent: tokens are refused. */
  readonly userTokens?: UserTokenOptions | undefined;
  /** `server.apiKey`: a client presenting it is a server client and may name users. */
  readonly apiKey?: string | undefined;
  /** Other sites' origins allowed to call the API routes from a browser (`channels.web.allowedOrigins`). */
  readonly allowedOrigins?: readonly string[];
  /** Host names served besides loopback names, IP addresses and `serverHost` (`channels.web.allowedHosts`). */
  readonly allowedHosts?: readonly string[];
  /** `server.host`. */
  readonly serverHost?: string;
  /** `agent.name`, shown in the chat page's title and header. */
  readonly agentName?: string | undefined;
  /** `channels.web.accentColor`: the page's accent, a CSS hex colour. */
  readonly accentColor?: string | undefined;
  /** `channels.web.logoUrl`: a logo beside the name, http(s) or a path. */
  readonly logoUrl?: string | undefined;
  /** `channels.web.greeting`: shown before the first message; one text or one per language. */
  readonly greeting?: Localised<string> | undefined;
  /** `channels.web.suggestedPrompts`: questions shown under the greeting; one clicked is sent. */
  readonly suggestedPrompts?: Localised<readonly string[]> | undefined;
  /**
   * `channels.web.attachments`: the files a browser may attach, and how many bytes a caller may keep stored and an
   * address may send an hour. Absent or not `enabled`: none.
   */
  readonly attachments?: WebAttachmentOptions | undefined;
  /**
   * Notifications between the processes sharing the database: with it, a turn's events for a run whose client is
   * connected to another process reach that process's stream (see `ReplyRelay`). Absent: one process.
   */
  readonly bus?: ClusterBus | undefined;
  /**
   * How long a run waiting on a turn it does not see (run by another process, or retried mid-turn) may go without an
   * event before it looks for the stored reply, in case the turn's last notification was lost. Default 15 000 ms.
   */
  readonly storedReplyCheckMs?: number;
  /** How often a turn whose events are relayed tells waiting runs it still runs. Default 10 000 ms. */
  readonly relayHeartbeatMs?: number;
  /**
   * `channels.web.embed`: `allowedOrigins` are the sites whose pages may show the chat in the widget's frame
   * (`/widget.js`, `/embed`), as the frame's `Content-Security-Policy: frame-ancestors`. Default none: no site may.
   */
  readonly embed?: { readonly allowedOrigins?: readonly string[] } | undefined;
  /** `channels.web.limits`: runs and new conversations per browser caller and per address (see `VisitorLimits`). */
  readonly limits?: Partial<VisitorLimitOptions> | undefined;
  /** `agent.language`: the language of a refusal when the browser names none Palaver speaks. */
  readonly language?: string | undefined;
  /**
   * `channels.web.operatorName`: how the page names an operator who writes in a conversation; one text or one per
   * language. Default: "Support team" in the person's language.
   */
  readonly operatorName?: Localised<string> | undefined;
  /** `channels.web.showOperatorNames`: show the operator's own name (as the audit names them) instead. Default false. */
  readonly showOperatorNames?: boolean | undefined;
  /** The clock of the new-conversation window (tests). Default `Date.now`. */
  readonly now?: () => number;
}

/** `channels.web.attachments`. */
export interface WebAttachmentOptions extends AttachmentRules {
  readonly enabled: boolean;
  readonly maxStoredBytesPerVisitor: number;
  readonly maxBytesPerHourPerAddress: number;
  /** Messages with files read at once, in all and from one address (see upload-permits.ts); defaults 8 and 2. */
  readonly maxUploadsAtOnce?: number | undefined;
  readonly maxUploadsPerAddress?: number | undefined;
}

/** A body's room besides its files: the text, ids and whatever history an AG-UI client resends. */
const BODY_BYTES_WITHOUT_FILES = 1024 * 1024;

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx buffers responses by default, which would hold the whole stream back.
  'x-accel-buffering': 'no',
} as const;

/** How often the pipeline renews typing; each `palaver.typing` event lasts a second longer, so it never flickers. */
const TYPING_INTERVAL_MS = 4_000;
const TYPING_EVENT_SECONDS = TYPING_INTERVAL_MS / 1000 + 1;

/** Longest conversation id `GET /conversations/messages` takes, as `/agui` takes for a thread id. */
const MAX_ID_CHARS = 256;

/**
 * The web channel: AG-UI over server-sent events at `POST /agui`, the caller's conversations at
 * `GET /conversations` and `GET /conversations/messages?id=<threadId>`, the chat page at `GET /`, `/chat.js`,
 * `/chat.css`, and the widget for other sites (`/widget.js`, its frame `/embed`; see `chatPageRoutes`). Every route is `public` for the server and does its own checks, in this order:
 *
 * 1. same-origin rules (`RequestGuard`): allowed `Host` (421), own or allowed `Origin` (403), JSON body (415);
 * 2. the body within `bodyTimeoutMs` (408) and as AG-UI input (400: `invalid_json`, `invalid_input` — NUL or lone
 *    surrogates included —, `no_user_message`, `empty_message`, `message_too_long`);
 * 3. who is talking (`WebIdentity`): API key, user token, visitor cookie, or (without a key) a loopback server
 *    client (401 otherwise); `forwardedProps.userId` from anyone but a server client is 403 `forbidden`;
 * 4. `accept`, awaited before the stream starts: a refused message gets its status (403 for another person's
 *    conversation, 400 for text the pipeline refuses) and nothing is stored.
 *
 * Then the response is the run's SSE stream. A retried run id whose turn completed gets the stored reply again
 * (RUN_FINISHED status `duplicate`); one whose turn has not answered waits for that turn, wherever it runs, and
 * streams its reply (an older stream of the same run ends with status `duplicate`). With a `bus`, a turn's events for
 * a run whose stream is in another process travel there (`ReplyRelay`). When the client disconnects, a turn that
 * began goes on (its reply is stored for a retry); a message whose turn has not begun is dropped (`AcceptOptions.left`)
 * unless the run is retried first.
 *
 * Outbound, a reply goes to the open stream of the last run it answers (`target.inReplyTo`); other runs of the
 * same batch finish with status `answered_together` and `answeredIn`, the run that carried the reply. Each sent part
 * is its own AG-UI message; typing and reactions go to the same run as CUSTOM events (`palaver.typing`,
 * `palaver.reaction`, see `AguiTranslator`). A part that asks to approve a tool call is followed by a CUSTOM
 * `palaver.approval_requested` event; a run whose `forwardedProps.approval` is `{ id, decision }` answers it (see
 * `#decide`) and carries the reply of the turn that goes on.
 *
 * @example
 * const web = new WebChannel({ maxInboundChars: 16_000, logger, cookieSecret, apiKey });
 * createHttpApp({ health, logger, routes: web.routes ?? [] });
 */
export class WebChannel implements Channel {
  readonly name = WEB_CHANNEL;
  /**
   * Typing and reactions reach the page as AG-UI custom events while the run that carries the reply is open. Typing
   * is on in text replies too: it replaces the page's "Thinking…" until the first words, and is left out while the
   * reply streams (the growing bubble shows it). Quoting (`SendOptions.replyTo`) is not shown: messages follow in
   * order.
   */
  readonly capabilities: ChannelCapabilities = {
    maxMessageChars: null,
    streaming: true,
    typing: true,
    typingIntervalMs: TYPING_INTERVAL_MS,
    reactions: true,
    readReceipts: false,
    // A question part shows Approve / Decline on the page (`palaver.approval_requested`); the press is a run.
    approvalButtons: true,
  };
  readonly routes: readonly ChannelRoute[];
  readonly #options: WebChannelOptions;
  readonly #logger: Logger;
  readonly #guard: RequestGuard;
  readonly #identity: WebIdentity;
  readonly #limits: VisitorLimits;
  /** What files a message may carry; undefined when attachments are off. */
  readonly #attachments: WebAttachmentOptions | undefined;
  readonly #addressBytes: AddressByteWindow;
  readonly #uploads: UploadPermits;
  #context: ChannelContext | undefined;
  #stopped = false;
  /** Open streams by conversation and run id: a run id is only unique within its thread. */
  readonly #streams = new Map<string, AguiStream>();
  /**
   * Runs whose client left before the run ended, by stream key, until their turn settles: a retry of one is attached
   * to the turn still running instead of being told `duplicate` with nothing to show.
   */
  readonly #orphaned = new Set<string>();
  /**
   * Runs whose turn settled lately, here or (as relayed) in another process, by stream key: a retry that attaches
   * to one after the store said "not answered" asks again, since that turn will not settle a second time.
   */
  readonly #settled = new Set<string>();
  /**
   * Runs whose client left with no retry since, by stream key: a message of one whose turn has not begun is dropped
   * (`AcceptOptions.left`), so a crowd that came and went leaves no turns queued behind it.
   */
  readonly #left = new Set<string>();
  /** Relays turn events to and from the other processes, when a bus was given. */
  #relay: ReplyRelay | undefined;
  #relayedParts = 0;
  /** The pages open on each conversation outside runs (`GET /conversations/events`), here and, with a bus, elsewhere. */
  readonly #events: ConversationEvents;

  /**
   * @throws PalaverError `web_assets_missing` when the chat page's files cannot be read; `cookie_secret_unreadable`
   *   or `cookie_secret_invalid` when the cookie secret file cannot be used.
   */
  constructor(options: WebChannelOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
    this.#guard = new RequestGuard({
      ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
      ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
      ...(options.serverHost === undefined ? {} : { serverHost: options.serverHost }),
    });
    this.#identity = new WebIdentity({
      cookieSecret: options.cookieSecret,
      cookieSecretFile: options.cookieSecretFile,
      userTokens: options.userTokens,
      apiKey: options.apiKey,
      logger: this.#logger,
      onSecret: options.onSecret,
    });
    this.#limits = new VisitorLimits({ ...DEFAULT_VISITOR_LIMITS, ...options.limits }, options.now);
    this.#attachments = options.attachments?.enabled ? options.attachments : undefined;
    this.#addressBytes = new AddressByteWindow(this.#attachments?.maxBytesPerHourPerAddress ?? 0, options.now);
    this.#events = new ConversationEvents({
      channel: this.name,
      bus: options.bus,
      logger: this.#logger,
      ...(options.limits?.openPagesPerAddress === undefined ? {} : { maxPerAddress: options.limits.openPagesPerAddress }),
    });
    this.#uploads = new UploadPermits(this.#attachments?.maxUploadsAtOnce ?? 8, this.#attachments?.maxUploadsPerAddress ?? 2);
    // Files travel in the body as base64 (4 characters per 3 bytes): the body may be as large as they can be.
    const fileBodyBytes = this.#attachments ? Math.ceil((this.#attachments.maxFilesPerMessage * this.#attachments.maxFileBytes) / 3) * 4 : 0;
    const preflight = (request: Request): Response => this.#guard.preflight(request);
    const api: ChannelRoute[] = [
      {
        method: 'POST',
        path: '/agui',
        access: 'public',
        maxBodyBytes: options.maxBodyBytes ?? BODY_BYTES_WITHOUT_FILES + fileBodyBytes,
        handle: (request, info) => this.#run(request, info.remoteAddress),
      },
      { method: 'GET', path: '/conversations', access: 'public', handle: (request, info) => this.#conversations(request, info.remoteAddress) },
      { method: 'GET', path: '/conversations/messages', access: 'public', handle: (request, info) => this.#transcript(request, info.remoteAddress) },
      { method: 'GET', path: '/conversations/attachment', access: 'public', handle: (request, info) => this.#attachment(request, info.remoteAddress) },
      { method: 'GET', path: '/conversations/events', access: 'public', handle: (request, info) => this.#watch(request, info.remoteAddress) },
      // CORS preflights, answered only for the configured origins.
      ...['/agui', '/conversations', '/conversations/messages', '/conversations/attachment', '/conversations/events'].map(
        (path): ChannelRoute => ({ method: 'OPTIONS', path, access: 'public', handle: preflight }),
      ),
    ];
    const appearance = {
      name: options.agentName,
      accentColor: options.accentColor,
      logoUrl: options.logoUrl,
      greeting: options.greeting,
      suggestedPrompts: options.suggestedPrompts,
      defaultLanguage: options.language,
      attachments: this.#attachments,
    };
    this.routes =
      options.webDir === false
        ? api
        : [...api, ...chatPageRoutes(options.webDir, (request, path) => this.#page(request, path), appearance, options.embed?.allowedOrigins ?? [])];
  }

  async start(context: ChannelContext): Promise<void> {
    if (this.#context) throw new Error('WebChannel.start() was called twice; a channel belongs to one Palaver.');
    this.#context = context;
    const { bus } = this.#options;
    if (bus) {
      const relay = new ReplyRelay({
        bus,
        channel: this.name,
        logger: this.#logger,
        ...(this.#options.relayHeartbeatMs === undefined ? {} : { heartbeatMs: this.#options.relayHeartbeatMs }),
      });
      await relay.start({
        onEvent: (event) => this.#relayed(event),
        onWatch: (conversationId, runId) => {
          // Its client came back on another process, which waits for the answer: not to be dropped here.
          this.#left.delete(streamKey(conversationId, runId));
          this.#supersede(conversationId, runId, 'retried on another process');
        },
      });
      this.#relay = relay;
    }
    await this.#events.start();
  }

  /**
   * Refuses new runs (503 `channel_stopped`); runs already streaming still get their replies. Open pages' event
   * streams end (a page reconnects, to another process). Safe to call twice.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#events.stop();
  }

  /**
   * Shows an operator's act on the conversation's open pages, here and in the other processes: a message as a
   * person's (named by `operatorName`, or the operator's own name with `showOperatorNames`), or a pause ("a person
   * will answer here") and a resume. A page not open shows the message from the transcript when it loads.
   */
  showOperatorEvent(conversation: OperatorEventTarget, event: OperatorEvent): void {
    this.#events.publish(
      conversation.conversationId,
      event.kind === 'paused'
        ? { type: 'paused', paused: event.paused }
        : { type: 'operator_message', id: event.messageId, text: event.text, operator: event.operator, at: event.at },
    );
  }

  /** Streams the turn's progress to the open run; with a bus and no run open here, to the other processes. */
  progress(target: ReplyTarget, event: TurnProgress): void {
    const stream = this.#streamFor(target);
    if (stream) {
      stream.progress(event, ids(target));
      this.#relay?.noteLocal(target);
    } else this.#relay?.publish(target, { kind: 'progress', event });
  }

  /**
   * Shows one part as its own AG-UI text message (`options.replyTo` is not shown: the page has no quotes). A part
   * that asks for a tool call's approval (`options.approval`) is followed by a CUSTOM `palaver.approval_requested`
   * event `{ approvalId, summary, expiresAt }`, the page's cue to show Approve / Decline.
   * With a bus and no run open here, the part goes to the other processes (a run there shows it), and is taken.
   * @throws ChannelError `client_gone` when, without a bus, no run the reply answers has an open stream any more.
   */
  async send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart> {
    const approval = options?.approval;
    const stream = this.#streamFor(target);
    if (!stream && this.#relay) {
      this.#relay.publish(target, { kind: 'send', text, ...(approval === undefined ? {} : { approval }) });
      return { messageId: `${target.inReplyTo.at(-1) ?? target.correlationId}:relayed-${++this.#relayedParts}` };
    }
    this.#relay?.noteLocal(target);
    if (!stream) {
      throw new ChannelError(
        'client_gone',
        this.name,
        `No AG-UI stream is open for run ${target.inReplyTo.at(-1) ?? '(none)'}; the client left before the reply was sent.`,
      );
    }
    const { events, messageId } = stream.translator.send(text, ids(target));
    stream.write(events);
    if (approval) stream.write(stream.translator.approvalRequested(approvalEvent(text, approval), ids(target)));
    return { messageId };
  }

  /** Shows the agent typing on the open run; nothing when the person has left (there is no one to show it to). */
  async typing(target: ReplyTarget): Promise<void> {
    const stream = this.#streamFor(target);
    if (stream) {
      stream.write(stream.translator.typing(TYPING_EVENT_SECONDS, ids(target)));
      this.#relay?.noteLocal(target);
    } else this.#relay?.publish(target, { kind: 'typing' });
  }

  /**
   * Puts `emoji` on the person's message `messageId` (an AG-UI run id of the conversation) on the open run.
   * Reactions are not stored with the conversation: a reload does not show them.
   * @throws ChannelError `invalid_reaction` when `emoji` is not one emoji or `messageId` is not an id the page could
   *   hold; `client_gone` when the person has left (as `send`). Nothing is shown then.
   */
  async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    if (!isReactionEmoji(emoji))
      throw new ChannelError('invalid_reaction', this.name, `A reaction is one emoji; ${JSON.stringify(emoji.slice(0, 32))} is not shown.`);
    if (!isIdParam(messageId)) {
      throw new ChannelError('invalid_reaction', this.name, "A reaction names the run id of one of the person's messages.");
    }
    const stream = this.#streamFor(target);
    if (!stream && this.#relay) {
      this.#relay.publish(target, { kind: 'reaction', messageId, emoji });
      return;
    }
    if (!stream) throw new ChannelError('client_gone', this.name, 'The client left before the reaction could be shown.');
    this.#relay?.noteLocal(target);
    stream.write(stream.translator.reaction(messageId, emoji, ids(target)));
  }

  /** Ends the runs the turn answered here; with a bus, tells the other processes how it ended. */
  settle(target: ReplyTarget, end: TurnEnd): void {
    const settled: SettledTurn = end.kind === 'answered' ? { kind: 'answered', outcome: end.outcome } : end;
    const answeredIn = this.#settleStreams(target, settled);
    // No run here carried the reply (the message was held while paused and answered on resume, or its page left):
    // open pages of the conversation show it. A page whose run in another process showed it knows its id.
    if (end.kind === 'answered' && answeredIn === undefined && end.outcome.reply !== '') {
      this.#events.publish(target.conversationId, { type: 'reply', id: end.outcome.replyMessageId, text: end.outcome.reply });
    }
    if (!this.#relay) return;
    const relayedEnd =
      end.kind === 'answered'
        ? { kind: 'answered' as const, outcome: finishedOf(end.outcome) }
        : { kind: 'error' as const, ...(end.error instanceof PalaverError ? { code: end.error.code, message: end.error.message } : {}) };
    this.#relay.settle(target, relayedEnd, answeredIn);
  }

  /**
   * Ends the runs of a settled turn that stream here: the last open one carries the reply (or `relayed.answeredIn`,
   * the run another process gave it to), the others finish as answered together. Returns the run that carried it here.
   */
  #settleStreams(target: TurnRef, end: SettledTurn, relayed?: { readonly whole: boolean; readonly answeredIn: string | undefined }): string | undefined {
    for (const runId of target.inReplyTo) {
      const key = streamKey(target.conversationId, runId);
      this.#orphaned.delete(key);
      this.#left.delete(key);
      remember(this.#settled, key);
    }
    let stream: AguiStream | undefined;
    let carrier: string | undefined;
    if (relayed?.answeredIn === undefined) {
      stream = this.#streamFor(target, relayed === undefined);
      carrier = stream?.run.runId;
    } else {
      // The publisher's stream of that run took the reply; a stream of it here missed what went there.
      carrier = relayed.answeredIn;
      stream = this.#streams.get(streamKey(target.conversationId, carrier));
      if (stream?.isOpen) stream.partial = true;
      else stream = undefined;
    }
    if (carrier === undefined) return undefined;
    if (stream && relayed && !relayed.whole) stream.partial = true;
    for (const runId of target.inReplyTo) {
      const other = this.#streams.get(streamKey(target.conversationId, runId));
      if (!other || other === stream) continue;
      other.write(end.kind === 'answered' ? other.translator.answeredTogether(ids(target), carrier) : other.translator.fail(end.error, end.correlationId));
    }
    if (!stream) return undefined;
    if (end.kind === 'error') stream.write(stream.translator.fail(end.error, end.correlationId));
    else stream.write(stream.partial ? stream.translator.finishExactly(end.outcome) : stream.translator.finish(end.outcome));
    return stream.run.runId;
  }

  /** An event of a turn another process runs: shown on this process's stream of the run, if it has one. */
  #relayed({ turn, op, continuous }: RelayedEvent): void {
    const target = turnRefOf(turn);
    if (op.kind === 'settle') {
      const end: SettledTurn =
        op.end.kind === 'answered'
          ? op.end
          : {
              kind: 'error',
              correlationId: turn.correlationId,
              error: op.end.code === undefined ? new Error('The turn failed in another process.') : new PalaverError(op.end.code, op.end.message ?? ''),
            };
      this.#settleStreams(target, end, { whole: op.whole && continuous, answeredIn: op.answeredIn });
      return;
    }
    const stream = this.#streamFor(target, false);
    if (!stream) return;
    if (!continuous) stream.partial = true;
    stream.noteActivity();
    switch (op.kind) {
      case 'progress':
        stream.progress(op.event, ids(target));
        break;
      case 'send':
        stream.write(stream.translator.send(op.text, ids(target)).events);
        if (op.approval) stream.write(stream.translator.approvalRequested(approvalEvent(op.text, op.approval), ids(target)));
        break;
      case 'typing':
        stream.write(stream.translator.typing(TYPING_EVENT_SECONDS, ids(target)));
        break;
      case 'reaction':
        if (isReactionEmoji(op.emoji)) stream.write(stream.translator.reaction(op.messageId, op.emoji, ids(target)));
        break;
      case 'alive':
        break;
    }
  }

  /** Ends this process's stream of a run whose client came back in a newer request: that one gets the reply. */
  #supersede(conversationId: string, runId: string, why: string): void {
    const stream = this.#streams.get(streamKey(conversationId, runId));
    if (!stream?.isOpen) return;
    this.#logger.info({ threadId: conversationId, runId }, `run ${why}: its earlier stream ends here`);
    stream.write(stream.translator.duplicate(stream.correlationId ?? ''));
  }

  /**
   * A run that waits on a turn it may not see settle (run by another process, or retried here mid-turn): after a
   * quiet `storedReplyCheckMs` (no event, no sign of life from the turn), it reads the stored reply (a read, not
   * another `accept`: nothing is counted as a duplicate), and once there is one shows it and ends. This is what makes a lost notification cost time, not the reply.
   */
  #checkStoredReply(stream: AguiStream, message: InboundMessage, context: ChannelContext, log: Logger): void {
    let checking = false;
    const timer = setInterval(() => {
      if (!stream.isOpen || checking || stream.takeActivity() || stream.fedLocally) return;
      checking = true;
      context
        .storedReply(message.accountId, message.conversationId, message.dedupeKey ?? '')
        .then((answered) => {
          if (answered === undefined || !stream.isOpen) return;
          log.info({ correlationId: answered.correlationId }, 'run ended with its stored reply: its turn was not seen to settle');
          stream.write(stream.translator.finishExactly(finishedOfStored(answered)));
        })
        .catch((error: unknown) => log.warn({ err: error }, 'could not look for the stored reply of a waiting run'))
        .finally(() => (checking = false));
    }, this.#options.storedReplyCheckMs ?? 15_000);
    timer.unref();
    stream.onClose(() => clearInterval(timer));
  }

  /** Remembers a run left by its client; the oldest are forgotten past 10 000 (their turns never settled here). */
  #orphan(key: string): void {
    remember(this.#orphaned, key);
  }

  /**
   * The stream of the last answered run that is still open in this process. `local`: a turn of this process writes
   * (else one relayed from another process).
   */
  #streamFor(target: TurnRef, local = true): AguiStream | undefined {
    for (let i = target.inReplyTo.length - 1; i >= 0; i--) {
      const stream = this.#streams.get(streamKey(target.conversationId, target.inReplyTo[i]!));
      if (!stream?.isOpen) continue;
      // The turn can stream before `accept` resolved (the store writes while the model starts).
      stream.correlationId ??= target.correlationId;
      if (local) stream.fedLocally = true;
      return stream;
    }
    return undefined;
  }

  /**
   * The page: refused for a foreign `Host`; `GET /` and `GET /embed` give a browser without a valid visitor cookie a
   * new one (in the widget's frame, one another site's page may carry: see `visitorSetCookie`).
   */
  #page(request: Request, path: string): { refuse: Response } | { headers: Record<string, string>; visitor?: string } {
    const refusal = this.#guard.checkHost(request);
    if (refusal) return { refuse: errorResponse(refusal) };
    if ((path !== '/' && path !== '/embed') || this.#identity.hasValidVisitorCookie(request)) return { headers: {} };
    const visitor = this.#identity.newVisitorCookie();
    const headers = { 'set-cookie': this.#identity.visitorSetCookie(visitor, request, path === '/embed') };
    // In another site's page the browser may keep no cookie for the frame (third-party cookies blocked): the frame's
    // page carries the same signed id and sends it as a header instead, so the chat works for the page's lifetime.
    return path === '/embed' ? { headers, visitor } : { headers };
  }

  /** One AG-UI run; a body large enough to hold files is read under an upload permit, held until the run is answered. */
  async #run(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const upload = this.#uploads.ticket(remoteAddress);
    try {
      return await this.#runWith(request, remoteAddress, upload);
    } finally {
      upload.release();
    }
  }

  async #runWith(request: Request, remoteAddress: string | undefined, upload: UploadTicket): Promise<Response> {
    const context = this.#context;
    if (!context || this.#stopped) {
      return json(503, 'channel_stopped', 'The web channel is not accepting messages right now; try again shortly.');
    }
    const guard = this.#guard.check(request, 'write');
    if (!guard.ok) return errorResponse(guard);
    const cors = guard.cors;

    // Read outside the JSON try: a body-limit error from the server must stay a 413, not become invalid_json.
    const raw = await readBody(request, this.#options.bodyTimeoutMs ?? 10_000, BODY_BYTES_WITHOUT_FILES, upload);
    if (raw === 'busy') {
      return json(429, 'uploads_busy', 'Too many messages with files are arriving at once; send it again in a few seconds.', { ...cors, 'retry-after': '5' });
    }
    if (raw === undefined) {
      return json(408, 'body_timeout', `The request body did not arrive within ${this.#options.bodyTimeoutMs ?? 10_000} ms; send it whole.`, cors);
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return json(400, 'invalid_json', 'The body is not valid JSON; send an AG-UI RunAgentInput object.', cors);
    }
    const { parseAguiInput, readCorrelationHeader, readLanguageHint, AguiStream } = await loadAguiProtocol();
    const parsed = parseAguiInput(body, {
      maxInboundChars: this.#options.maxInboundChars,
      correlationId: readCorrelationHeader(request.headers.get('x-correlation-id') ?? undefined),
      languageHint: readLanguageHint(request.headers.get('accept-language') ?? undefined),
      ...(this.#attachments === undefined ? {} : { attachments: this.#attachments }),
    });
    if (!parsed.ok) return json(parsed.problem.status ?? 400, parsed.problem.code, parsed.problem.message, cors);

    const { threadId, runId } = parsed.input;
    const account = await this.#account(request, remoteAddress, parsed.claimedUserId, threadId);
    if (!account.ok) return json(account.status, account.code, account.message, cors);
    if (parsed.kind === 'approval') {
      return this.#decide(
        { context, threadId, runId, answer: parsed.approval, languageHint: parsed.languageHint, account, remoteAddress, cors, signal: request.signal },
        AguiStream,
      );
    }
    const message: InboundMessage = { ...parsed.message, accountId: account.accountId };

    // A browser caller holds a run slot until its stream closes, and starts only so many conversations: one visitor
    // (or one address) cannot take the capacity everyone shares. A server client answers for its own users.
    let releaseRun = (): void => {};
    let undoConversation = (): void => {};
    let undoBytes = (): void => {};
    if (account.browser) {
      const slot = this.#limits.openRun(account.accountId, remoteAddress);
      if (!slot.ok) return this.#tooMany(slot, parsed.message.languageHint, cors);
      const started = await this.#limits.startConversation(account.accountId, remoteAddress, threadId, () =>
        conversationExists(context, account.accountId, threadId),
      );
      if (!started.ok) {
        slot.release();
        return this.#tooMany(started, parsed.message.languageHint, cors);
      }
      releaseRun = slot.release;
      undoConversation = started.undo;
      // The bytes all callers of one address may send an hour: a visitor's quota alone is no bound, since a new
      // cookie costs nothing.
      const attached = message.attachments?.reduce((sum, file) => sum + file.size, 0) ?? 0;
      const bytes = attached > 0 ? this.#addressBytes.take(remoteAddress, attached) : { ok: true as const, undo: () => {} };
      if (!bytes.ok) {
        slot.release();
        started.undo();
        return json(
          429,
          'too_many_attachment_bytes',
          systemText(parsed.message.languageHint, 'web.attachmentBytesFromAddress', undefined, this.#options.language),
          {
            ...cors,
            'retry-after': String(bytes.retryAfterSeconds),
          },
        );
      }
      undoBytes = bytes.undo;
      undoConversation = () => {
        started.undo();
        bytes.undo();
      };
    }

    const log = this.#logger.child({ threadId, runId });
    const key = streamKey(threadId, runId);
    let registered = false;
    const stream = new AguiStream(
      { threadId, runId },
      {
        showToolDetails: this.#options.showToolDetails ?? false,
        controlEvents: this.#options.controlEvents ?? false,
        keepAliveMs: this.#options.keepAliveMs ?? 15_000,
        clientSignal: request.signal,
        onClientGone: () => {
          log.info('client disconnected before the run ended');
          if (registered) {
            this.#orphan(key);
            remember(this.#left, key);
          }
        },
      },
    );
    stream.onClose(releaseRun);
    // A run id already streaming is a retry: it will be recognised as a duplicate and takes over the stream only once
    // `accept` has confirmed the conversation is the caller's (`replace`).
    const register = (replace = false): boolean => {
      const current = this.#streams.get(key);
      if (current === stream) return true;
      if (current && !replace) return false;
      if (current) this.#supersede(threadId, runId, 'retried');
      registered = true;
      this.#streams.set(key, stream);
      stream.onClose(() => {
        if (this.#streams.get(key) === stream) this.#streams.delete(key);
      });
      return true;
    };
    // A retry of a run whose client left: its turn may still be running, so the stream takes that run's place only
    // once `accept` has confirmed the conversation is the caller's (until then, someone else's turn must not write
    // to it). A new run is registered first, so nothing its turn streams before `accept` returns is lost.
    const retryOfLeftRun = this.#orphaned.has(key);
    // Someone waits for this run again: its message is not to be dropped (a message already dropped is taken back
    // by `accept`).
    this.#left.delete(key);
    if (!retryOfLeftRun) register();
    stream.correlationId = message.correlationId;

    // The message is stored (or refused) before the stream starts, so a refusal is an HTTP status, not a run. No
    // abort signal: a client that disconnects (a dropped connection, a closed tab) does not cancel a turn that began,
    // whose reply is stored and given to the retried run; only a message whose turn has not begun is dropped.
    let acceptance: Acceptance;
    let attached = false;
    try {
      acceptance = await context.accept(message, {
        left: () => this.#left.has(key),
        ...(account.browser && this.#attachments ? { maxStoredAttachmentBytes: this.#attachments.maxStoredBytesPerVisitor } : {}),
      });
    } catch (error) {
      stream.dispose();
      undoConversation();
      if (error instanceof ChannelError && error.code === 'attachments_quota') {
        log.info('web run refused: the caller has stored as many attachment bytes as allowed');
        return json(413, 'attachments_quota', systemText(parsed.message.languageHint, 'web.attachmentsQuota', undefined, this.#options.language), cors);
      }
      return this.#refused(error, log, message.correlationId, cors);
    }
    if (acceptance.status === 'duplicate' && acceptance.answered === undefined) {
      // A retry of a run whose turn has not answered yet (its client left, or this or another process restarted):
      // the stream waits for that turn here, wherever it runs, and is told everything it missed at the end.
      attached = register(true);
      stream.partial = true;
      this.#relay?.watch(threadId, runId);
      // The turn settled between the store's answer and now: its reply is stored, ask for it. (A settle whose
      // notification was lost is found by the stored-reply check below.)
      if (this.#settled.has(key)) {
        try {
          const answered = await context.storedReply(message.accountId, message.conversationId, message.dedupeKey ?? '');
          if (answered !== undefined) {
            acceptance = { status: 'duplicate', correlationId: answered.correlationId, answered };
            attached = false;
          }
        } catch (error) {
          log.warn({ err: error }, 'could not look for the stored reply of a retried run; waiting for its turn');
        }
      }
    }
    stream.correlationId = acceptance.correlationId;
    // A retried run stores no files again: its bytes do not count twice against its address.
    if (acceptance.status === 'duplicate') undoBytes();
    // A retry of a left run whose message had been dropped was accepted afresh: its turn streams here.
    if (acceptance.status === 'accepted' && retryOfLeftRun) register(true);
    if (acceptance.status === 'accepted' && (await this.#paused(context, account.accountId, threadId, log))) {
      // An operator paused the agent: the message is stored and held, a person answers (on the conversation's events).
      // The run ends now, so the page is not left waiting and the person may write more.
      log.info({ correlationId: acceptance.correlationId }, 'web run ended: the conversation is paused, its message is held for a person');
      stream.write(stream.translator.held({ correlationId: acceptance.correlationId, sessionId: acceptance.sessionId }));
    } else if (acceptance.status === 'accepted') {
      stream.write(stream.translator.start({ correlationId: acceptance.correlationId, sessionId: acceptance.sessionId }));
    } else if (attached) {
      // This stream took the place of the run whose client left: the turn still running streams its reply here
      // and finishes it.
      log.info({ correlationId: acceptance.correlationId }, 'retried run attached to its running turn');
      stream.write(stream.translator.start({ correlationId: acceptance.correlationId }));
    } else if (acceptance.answered) {
      log.info({ correlationId: acceptance.correlationId }, 'retried run answered with its stored reply');
      stream.write(stream.translator.replay(acceptance.answered));
    }
    if (stream.isOpen && (attached || this.#relay)) this.#checkStoredReply(stream, message, context, log);
    return new Response(stream.body, { status: 200, headers: { ...SSE_HEADERS, ...cors, 'x-correlation-id': acceptance.correlationId } });
  }

  /**
   * A run that answers an approval request (`forwardedProps.approval`): the decision is passed on for the caller's
   * own verified account (never one the body names), with the run id as the decision's message id. Checked as any
   * run: a run slot for a browser caller, and the conversation must be the caller's (403 / 404 otherwise). Decided:
   * the run stays open and carries the resumed turn's reply, as a message's run does. Anything else (decided before,
   * expired, not the caller's, an operator's, unknown) ends the run at once with a short text in the person's language.
   */
  async #decide(
    run: {
      readonly context: ChannelContext;
      readonly threadId: string;
      readonly runId: string;
      readonly answer: ApprovalAnswer;
      readonly languageHint: string | undefined;
      readonly account: { readonly accountId: string; readonly browser: boolean };
      readonly remoteAddress: string | undefined;
      readonly cors: Record<string, string>;
      readonly signal: AbortSignal;
    },
    AguiStreamClass: typeof AguiStream,
  ): Promise<Response> {
    const { context, threadId, runId, answer, languageHint, account, remoteAddress, cors } = run;
    const log = this.#logger.child({ threadId, runId, approvalId: answer.id });
    let releaseRun = (): void => {};
    if (account.browser) {
      const slot = this.#limits.openRun(account.accountId, remoteAddress);
      if (!slot.ok) return this.#tooMany(slot, languageHint, cors);
      releaseRun = slot.release;
    }
    // The conversation the run names must be the caller's, as for a message (the reply comes back on it).
    try {
      // One session read where the context offers it (a transcript read would fetch messages for nothing).
      await (context.conversationState?.(account.accountId, threadId) ?? context.transcript(account.accountId, threadId, { limit: 1 }));
    } catch (error) {
      releaseRun();
      return this.#refused(error, log, undefined, cors);
    }
    const key = streamKey(threadId, runId);
    const stream = new AguiStreamClass(
      { threadId, runId },
      {
        showToolDetails: this.#options.showToolDetails ?? false,
        controlEvents: this.#options.controlEvents ?? false,
        keepAliveMs: this.#options.keepAliveMs ?? 15_000,
        clientSignal: run.signal,
        onClientGone: () => log.info('client disconnected before the decision run ended'),
      },
    );
    stream.onClose(releaseRun);
    // Registered before the decision is taken: the turn it lets go on may answer before `decideApproval` returns.
    if (this.#streams.get(key)?.isOpen) this.#supersede(threadId, runId, 'retried');
    this.#streams.set(key, stream);
    stream.onClose(() => {
      if (this.#streams.get(key) === stream) this.#streams.delete(key);
    });
    let outcome: ApprovalOutcome;
    try {
      outcome = await context.decideApproval(account.accountId, answer.id, answer.decision === 'approve' ? 'approved' : 'declined', {
        messageId: runId,
        conversationId: threadId,
      });
    } catch (error) {
      stream.dispose();
      return this.#refused(error, log, undefined, cors);
    }
    if (outcome.kind === 'decided') {
      log.info({ decision: outcome.status }, 'approval decided on the web; the run waits for the turn that goes on');
      stream.write(stream.translator.start(stream.correlationId === undefined ? undefined : { correlationId: stream.correlationId }));
      // With other processes, the turn may go on there: the reply to the decision is found by its record's dedupe
      // key should the turn's last notification be lost.
      if (stream.isOpen && this.#relay) {
        const record: InboundMessage = {
          channel: this.name,
          accountId: account.accountId,
          conversationId: threadId,
          text: '',
          dedupeKey: `approval:${answer.id}`,
        };
        this.#checkStoredReply(stream, record, context, log);
      }
    } else {
      const refusal = approvalRefusal(outcome);
      log.info({ outcome: refusal.status }, 'approval not decided on the web');
      let language = languageHint;
      try {
        language = await context.interfaceLanguage(account.accountId, languageHint);
      } catch (error) {
        log.warn({ err: error }, "could not read the person's language; the browser's is used");
      }
      stream.write(stream.translator.approvalRefused(systemText(language, refusal.key, undefined, this.#options.language), refusal.status, refusal.result));
    }
    return new Response(stream.body, { status: 200, headers: { ...SSE_HEADERS, ...cors } });
  }

  /** `GET /conversations`: the caller's conversations on this channel, most recent first. */
  async #conversations(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const read = this.#openRead(request);
    if (!read.ok) return read.response;
    const { context, guard, url } = read;
    const account = await this.#account(request, remoteAddress, url.searchParams.get('userId') ?? undefined, undefined);
    if (!account.ok) return json(account.status, account.code, account.message, guard.cors);
    try {
      const list = await context.conversations(account.accountId, { limit: 50 });
      const conversations = list.map((c) => ({ id: c.conversationId, title: c.title, status: c.status, updatedAt: c.updatedAt.toISOString() }));
      return Response.json({ conversations }, { status: 200, headers: { ...guard.cors, 'cache-control': 'no-store' } });
    } catch (error) {
      return this.#refused(error, this.#logger, undefined, guard.cors);
    }
  }

  /** `GET /conversations/messages?id=<threadId>`: the displayed messages of one of the caller's conversations. */
  async #transcript(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const read = this.#openRead(request);
    if (!read.ok) return read.response;
    const { context, guard, url } = read;
    const id = url.searchParams.get('id') ?? '';
    if (!isIdParam(id)) {
      return json(400, 'invalid_input', `Name the conversation as ?id=<thread id> (1 to ${MAX_ID_CHARS} characters, no NUL or lone surrogates).`, guard.cors);
    }
    const account = await this.#account(request, remoteAddress, url.searchParams.get('userId') ?? undefined, id);
    if (!account.ok) return json(account.status, account.code, account.message, guard.cors);
    try {
      const entries = await context.transcript(account.accountId, id, { limit: 200 });
      const paused = context.conversationState ? (await context.conversationState(account.accountId, id)).paused : false;
      const languageHint = readLanguageHint(request.headers.get('accept-language') ?? undefined);
      const messages = entries.map((m) => ({
        id: m.id,
        role: m.role,
        text: m.text,
        at: m.at.toISOString(),
        ...(m.operator === undefined ? {} : { author: this.#operatorLabel(m.operator, languageHint) }),
        // A question whose request still waits: the page shows Approve / Decline under it again.
        ...(m.approval === undefined ? {} : { approval: { id: m.approval.id, expiresAt: m.approval.expiresAt } }),
        ...(m.attachments === undefined
          ? {}
          : { attachments: m.attachments.map(({ id, kind, mimeType, name, size }) => ({ id, kind, mimeType, name, size })) }),
      }));
      return Response.json({ conversationId: id, paused, messages }, { status: 200, headers: { ...guard.cors, 'cache-control': 'no-store' } });
    } catch (error) {
      return this.#refused(error, this.#logger, undefined, guard.cors);
    }
  }

  /**
   * `GET /conversations/attachment?conversation=<threadId>&id=<attachment id>`: a file attached in one of the caller's
   * conversations, as stored. Served so that it can do nothing on this origin: its checked type, `nosniff`, a
   * sandboxing policy, and a PDF only as a download.
   */
  async #attachment(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const read = this.#openRead(request);
    if (!read.ok) return read.response;
    const { context, guard, url } = read;
    const conversationId = url.searchParams.get('conversation') ?? '';
    const id = url.searchParams.get('id') ?? '';
    for (const value of [conversationId, id]) {
      if (!isIdParam(value)) {
        return json(400, 'invalid_input', `Name the file as ?conversation=<thread id>&id=<attachment id> (1 to ${MAX_ID_CHARS} characters each).`, guard.cors);
      }
    }
    const account = await this.#account(request, remoteAddress, url.searchParams.get('userId') ?? undefined, conversationId);
    if (!account.ok) return json(account.status, account.code, account.message, guard.cors);
    try {
      const file = await context.attachment(account.accountId, conversationId, id);
      if (file === undefined) return json(404, 'not_found', 'There is no such file in this conversation.', guard.cors);
      const disposition = file.kind === 'image' ? 'inline' : 'attachment';
      return new Response(Buffer.from(file.bytes), {
        status: 200,
        headers: {
          ...guard.cors,
          'content-type': file.mimeType,
          'content-length': String(file.bytes.byteLength),
          'content-disposition': `${disposition}; filename*=UTF-8''${encodeURIComponent(file.name)}`,
          'content-security-policy': "default-src 'none'; sandbox",
          'x-content-type-options': 'nosniff',
          'cache-control': 'private, no-store',
        },
      });
    } catch (error) {
      return this.#refused(error, this.#logger, undefined, guard.cors);
    }
  }

  /**
   * `GET /conversations/events?id=<threadId>`: the caller's open page of one of their conversations, as server-sent
   * events outside any run (see `PageEvent`): first `state` (paused or not), then an operator's messages, pauses and
   * resumes, and replies no run of the page carried. Checked as `/conversations/messages` (a conversation not stored
   * yet is 404: the page opens it after its first message).
   */
  async #watch(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const read = this.#openRead(request, { refuseWhileStopping: true });
    if (!read.ok) return read.response;
    const { context, guard, url } = read;
    const id = url.searchParams.get('id') ?? '';
    if (!isIdParam(id)) {
      return json(400, 'invalid_input', `Name the conversation as ?id=<thread id> (1 to ${MAX_ID_CHARS} characters, no NUL or lone surrogates).`, guard.cors);
    }
    const account = await this.#account(request, remoteAddress, url.searchParams.get('userId') ?? undefined, id);
    if (!account.ok) return json(account.status, account.code, account.message, guard.cors);
    let state: { readonly paused: boolean };
    try {
      // A pipeline that cannot say whether it is paused still checks whose conversation it is (by its transcript).
      if (context.conversationState) state = await context.conversationState(account.accountId, id);
      else {
        await context.transcript(account.accountId, id, { limit: 1 });
        state = { paused: false };
      }
    } catch (error) {
      return this.#refused(error, this.#logger, undefined, guard.cors);
    }
    const languageHint = readLanguageHint(request.headers.get('accept-language') ?? undefined);
    if (!this.#events.hasRoomFor(remoteAddress)) {
      return json(429, 'too_many_streams', 'Too many chat pages are open from this address; close some and try again.', { ...guard.cors, 'retry-after': '30' });
    }
    const stream = new ConversationEventStream({
      accountId: account.accountId,
      address: remoteAddress,
      signal: request.signal,
      keepAliveMs: this.#options.keepAliveMs ?? 15_000,
      authorOf: (operator) => this.#operatorLabel(operator, languageHint),
    });
    stream.onClose(this.#events.watch(id, stream));
    stream.send({ type: 'state', paused: state.paused });
    return new Response(stream.body, { status: 200, headers: { ...SSE_HEADERS, ...guard.cors } });
  }

  /**
   * What every read of the caller's conversations checks first: the channel runs (`refuseWhileStopping`: and is not
   * stopping, for a stream that would outlive it) and the request passes the guard (host, origin, key).
   */
  #openRead(
    request: Request,
    options: { readonly refuseWhileStopping?: boolean } = {},
  ):
    | { readonly ok: true; readonly context: ChannelContext; readonly guard: GuardResult & { readonly ok: true }; readonly url: URL }
    | { readonly ok: false; readonly response: Response } {
    const context = this.#context;
    if (!context || (options.refuseWhileStopping === true && this.#stopped))
      return { ok: false, response: json(503, 'channel_stopped', 'The web channel is not running; try again shortly.') };
    const guard = this.#guard.check(request, 'read');
    if (!guard.ok) return { ok: false, response: errorResponse(guard) };
    return { ok: true, context, guard, url: new URL(request.url) };
  }

  /** Whether the conversation is paused now; a failed read says no (the run then waits as any other). */
  async #paused(context: ChannelContext, accountId: string, conversationId: string, log: Logger): Promise<boolean> {
    if (!context.conversationState) return false;
    try {
      return (await context.conversationState(accountId, conversationId)).paused;
    } catch (error) {
      log.warn({ err: error }, 'could not read whether the conversation is paused; the run waits for its turn');
      return false;
    }
  }

  /** How the page names an operator: their own name (`showOperatorNames`), else `operatorName`, else "Support team". */
  #operatorLabel(operator: string, languageHint: string | undefined): string {
    if (this.#options.showOperatorNames && operator !== 'admin') return operator;
    return (
      localisedText(this.#options.operatorName, languageHint, this.#options.language) ??
      systemText(languageHint, 'web.operatorTeam', undefined, this.#options.language)
    );
  }

  /**
   * The account a request acts for. A server client (API key, or loopback without a key) may name a user
   * (`api:<userId>`; without one, the conversation stands for the account as before); a user token or a visitor
   * cookie is the account itself, and naming another user is refused with 403.
   */
  async #account(
    request: Request,
    remoteAddress: string | undefined,
    claimedUserId: string | undefined,
    conversationId: string | undefined,
  ): Promise<{ ok: true; accountId: string; browser: boolean } | { ok: false; status: number; code: string; message: string }> {
    const identity = await this.#identity.identify(request, remoteAddress);
    if (!identity.ok) return identity;
    const { caller } = identity;
    if (caller.kind !== 'server') {
      if (claimedUserId !== undefined && claimedUserId !== '') {
        return {
          ok: false,
          status: 403,
          code: 'forbidden',
          message: 'Naming a user (forwardedProps.userId) is only for a server client holding the API key; a browser talks as itself.',
        };
      }
      return { ok: true, accountId: caller.accountId, browser: true };
    }
    if (claimedUserId !== undefined && claimedUserId !== '') {
      if (claimedUserId.length > MAX_ID_CHARS || badTextReason(claimedUserId) !== undefined) {
        return { ok: false, status: 400, code: 'invalid_input', message: `userId must be 1 to ${MAX_ID_CHARS} characters without NUL or lone surrogates.` };
      }
      return { ok: true, accountId: `api:${claimedUserId}`, browser: false };
    }
    if (conversationId === undefined) return { ok: false, status: 400, code: 'user_required', message: 'A server client names the user: add ?userId=<id>.' };
    return { ok: true, accountId: `api:${conversationId}`, browser: false };
  }

  /**
   * 429 for a run over a limit, with a text in the browser's language (its `Accept-Language`, else the agent's): no
   * store is read for a refusal, which a flood may send by the thousand.
   */
  #tooMany(refusal: LimitRefusal, languageHint: string | undefined, cors: Record<string, string>): Response {
    const key = refusal.limit === 'conversations' ? 'web.tooManyConversations' : refusal.scope === 'address' ? 'web.tooManyRunsFromAddress' : 'web.tooManyRuns';
    this.#logger.debug({ limit: refusal.limit, scope: refusal.scope }, 'web run refused: over a limit');
    const code = refusal.limit === 'conversations' ? 'too_many_conversations' : 'too_many_runs';
    return json(429, code, systemText(languageHint, key, undefined, this.#options.language), { ...cors, 'retry-after': String(refusal.retryAfterSeconds) });
  }

  /** The HTTP answer to a refused message or lookup; nothing was stored. */
  #refused(error: unknown, log: Logger, correlationId: string | undefined, cors: Record<string, string>): Response {
    if (error instanceof ChannelError) {
      log.info({ err: error, correlationId }, 'web request refused');
      if (error.code === 'forbidden') return json(403, 'forbidden', 'This conversation belongs to someone else; start a new one.', cors);
      if (error.code === 'not_found') return json(404, 'not_found', 'There is no such conversation.', cors);
      // Who is writing could not be established (the team's directory): a passing outage, in the person's language.
      if (error.code.startsWith('identity_')) return json(503, error.code, error.message, cors);
      return json(400, error.code, error.message, cors);
    }
    log.error({ err: error, correlationId }, 'web request failed');
    const reference = correlationId === undefined ? '' : ` (reference ${correlationId})`;
    return json(500, INTERNAL_ERROR_CODE, `The server could not handle the message${reference}; it was not stored, try again.`, cors);
  }
}

/**
 * Whether a conversation is there already, for a caller at the new-conversation limit: one of theirs (or someone
 * else's, which `accept` then refuses with 403) is not new. A failed look-up says yes: `accept` meets the same store.
 */
async function conversationExists(context: ChannelContext, accountId: string, conversationId: string): Promise<boolean> {
  try {
    await context.transcript(accountId, conversationId, { limit: 1 });
    return true;
  } catch (error) {
    return !(error instanceof ChannelError && error.code === 'not_found');
  }
}

/**
 * The body as text, or undefined when it did not arrive within `timeoutMs` (a half-sent body must not hold the
 * connection), or `busy` when it is larger than `smallBytes` (declared or as it arrives) and no upload permit is free:
 * then no more of it is read. Errors of the stream itself (the server's body limit) are thrown on, so they keep
 * their status.
 */
async function readBody(request: Request, timeoutMs: number, smallBytes: number, upload: UploadTicket): Promise<string | undefined | 'busy'> {
  if (request.body === null) return '';
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > smallBytes && !upload.take()) {
    request.body.cancel().catch(() => {});
    return 'busy';
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), deadline]);
      if (next === 'timeout') {
        reader.cancel().catch(() => {});
        return undefined;
      }
      if (next.done) break;
      received += next.value.byteLength;
      if (received > smallBytes && !upload.take()) {
        reader.cancel().catch(() => {});
        return 'busy';
      }
      chunks.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Adds `key` to a bounded set: past 10 000 the oldest go. */
function remember(set: Set<string>, key: string): void {
  set.delete(key);
  set.add(key);
  for (const oldest of set) {
    if (set.size <= 10_000) break;
    set.delete(oldest);
  }
}

/** Whether a query parameter can be an id here: 1 to MAX_ID_CHARS characters, no NUL or lone surrogates. */
function isIdParam(value: string): boolean {
  return value !== '' && value.length <= MAX_ID_CHARS && badTextReason(value) === undefined;
}

/** The `palaver.approval_requested` event's value for a question part: its text is what will happen. */
function approvalEvent(text: string, approval: DeliveryApproval): { approvalId: string; summary: string; expiresAt: string } {
  return { approvalId: approval.id, summary: text, expiresAt: approval.expiresAt };
}

/** What a run that carried an undecided answer says: the text's key, and `status` / `result` of RUN_FINISHED. */
function approvalRefusal(outcome: Exclude<ApprovalOutcome, { readonly kind: 'decided' }>): {
  readonly key: 'approval.alreadyDecided' | 'approval.expired' | 'approval.notYours' | 'approval.byOperator' | 'approval.unknown';
  readonly status: string;
  readonly result: Record<string, string>;
} {
  switch (outcome.kind) {
    case 'already':
      return { key: 'approval.alreadyDecided', status: 'already', result: { decision: outcome.status } };
    case 'expired':
      return { key: 'approval.expired', status: 'expired', result: {} };
    case 'refused':
      return outcome.reason === 'operator'
        ? { key: 'approval.byOperator', status: 'operator', result: {} }
        : { key: 'approval.notYours', status: 'not_yours', result: {} };
    case 'not_found':
      return { key: 'approval.unknown', status: 'unknown', result: {} };
  }
}

function streamKey(conversationId: string, runId: string): string {
  return `${conversationId}\u0000${runId}`;
}

/** What a turn's events are routed by: its conversation, the runs it answers, its ids. */
type TurnRef = Pick<ReplyTarget, 'conversationId' | 'inReplyTo' | 'correlationId' | 'sessionId'>;

/** How a turn ended, as the streams of its runs show it. */
type SettledTurn =
  | { readonly kind: 'answered'; readonly outcome: FinishedReply }
  | { readonly kind: 'error'; readonly correlationId: string; readonly error: unknown };

function turnRefOf(turn: RelayedTurn): TurnRef {
  return { conversationId: turn.conversationId, inReplyTo: turn.runs, correlationId: turn.correlationId, sessionId: turn.sessionId };
}

function finishedOf(outcome: FinishedReply): FinishedReply {
  const { correlationId, sessionId, reply, replyMessageId, status, errorId } = outcome;
  return { correlationId, sessionId, reply, replyMessageId, status, ...(errorId === undefined ? {} : { errorId }) };
}

function finishedOfStored(stored: StoredReply): FinishedReply {
  return {
    correlationId: stored.correlationId,
    sessionId: stored.sessionId,
    reply: stored.text,
    replyMessageId: stored.replyMessageId,
    status: stored.status,
    ...(stored.errorId === undefined ? {} : { errorId: stored.errorId }),
  };
}

function ids(target: TurnRef): AguiRunIds {
  return { correlationId: target.correlationId, sessionId: target.sessionId };
}

function json(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ error: { code, message } }, { status, headers });
}

let aguiProtocol: Promise<typeof import('./agui-protocol.js')> | undefined;

/** The AG-UI schemas, translator and stream, loaded by the first request that needs them. */
function loadAguiProtocol(): Promise<typeof import('./agui-protocol.js')> {
  return (aguiProtocol ??= import('./agui-protocol.js'));
}
