import { ChannelError } from '../../domain/errors.js';
import type {
  Acceptance,
  Channel,
  ChannelCapabilities,
  ChannelContext,
  ChannelRoute,
  ReplyTarget,
  SentPart,
  TurnEnd,
  TurnProgress,
} from '../../domain/ports/channel.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { parseAguiInput, readCorrelationHeader, readLanguageHint, WEB_CHANNEL } from './agui-input.js';
import { AguiStream } from './agui-stream.js';
import type { AguiRunIds } from './agui-translator.js';
import { chatPageRoutes } from './chat-page.js';

export interface WebChannelOptions {
  /** Longest accepted user text, in characters (`limits.maxInboundChars`); longer → 400 `message_too_long`. */
  readonly maxInboundChars: number;
  readonly logger?: Logger;
  /** Send tool arguments and results to the client (default false: only tool names and success). */
  readonly showToolDetails?: boolean;
  /**
   * How long to hold the response headers back waiting for the message to be accepted, so `x-correlation-id` can
   * be set. After that the stream starts anyway and the id is only in RUN_STARTED's `metadata`. Default 1000 ms.
   */
  readonly headerWaitMs?: number;
  /** Interval of SSE comment lines that keep idle proxies from closing a long turn. Default 15 000 ms. */
  readonly keepAliveMs?: number;
  /** Largest accepted `/agui` body, in bytes. Default 1 MiB (AG-UI clients resend the history). */
  readonly maxBodyBytes?: number;
  /** Where `chat.html`, `chat.js` and `chat.css` live; `false` serves no page. Default: the package's `web/`. */
  readonly webDir?: string | false;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx buffers responses by default, which would hold the whole stream back.
  'x-accel-buffering': 'no',
} as const;

/**
 * The web channel: AG-UI over server-sent events at `POST /agui` (access `client`), and the chat page at `GET /`,
 * `/chat.js`, `/chat.css` (access `public`).
 *
 * Inbound, each `RunAgentInput` becomes one message (`messageId` and `dedupeKey`: the run id; conversation: the
 * thread id) and its response is the run's SSE stream. Refused bodies get 400 `{ error: { code, message } }`
 * (`invalid_json`, `invalid_input`, `no_user_message`, `empty_message`, `message_too_long`); a message the pipeline
 * refuses ends its run with RUN_ERROR; a redelivered run id gets an empty run finished with status `duplicate`.
 * When the client disconnects, the signal handed to `accept` aborts (a lone message's turn is then cancelled).
 *
 * Outbound, a reply goes to the open stream of the last run it answers (`target.inReplyTo`); other runs of the
 * same batch finish with status `answered_together` and `answeredIn`, the run that carried the reply.
 *
 * @example
 * const web = new WebChannel({ maxInboundChars: 16_000, logger });
 * createHttpApp({ health, logger, routes: web.routes ?? [] });
 */
export class WebChannel implements Channel {
  readonly name = WEB_CHANNEL;
  readonly capabilities: ChannelCapabilities = { maxMessageChars: null, streaming: true, typing: false, reactions: false, readReceipts: false };
  readonly routes: readonly ChannelRoute[];
  readonly #options: WebChannelOptions;
  readonly #logger: Logger;
  #context: ChannelContext | undefined;
  #stopped = false;
  /** Open streams by conversation and run id: a run id is only unique within its thread. */
  readonly #streams = new Map<string, AguiStream>();

  /** @throws PalaverError `web_assets_missing` when the chat page's files cannot be read. */
  constructor(options: WebChannelOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
    const agui: ChannelRoute = {
      method: 'POST',
      path: '/agui',
      access: 'client',
      maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
      handle: (request) => this.#run(request),
    };
    this.routes = options.webDir === false ? [agui] : [agui, ...chatPageRoutes(options.webDir)];
  }

  async start(context: ChannelContext): Promise<void> {
    if (this.#context) throw new Error('WebChannel.start() was called twice; a channel belongs to one Palaver.');
    this.#context = context;
  }

  /** Refuses new runs (503 `channel_stopped`); runs already streaming still get their replies. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopped = true;
  }

  progress(target: ReplyTarget, event: TurnProgress): void {
    const stream = this.#streamFor(target);
    stream?.write(stream.translator.progress(event, ids(target)));
  }

  /** @throws ChannelError `client_gone` when no run the reply answers has an open stream any more. */
  async send(target: ReplyTarget, text: string): Promise<SentPart> {
    const stream = this.#streamFor(target);
    if (!stream) {
      throw new ChannelError('client_gone', this.name, `No AG-UI stream is open for run ${target.inReplyTo.at(-1) ?? '(none)'}; the client left before the reply was sent.`);
    }
    const { events, messageId } = stream.translator.send(text, ids(target));
    stream.write(events);
    return { messageId };
  }

  settle(target: ReplyTarget, end: TurnEnd): void {
    const stream = this.#streamFor(target);
    if (!stream) return;
    for (const runId of target.inReplyTo) {
      const other = this.#streams.get(streamKey(target.conversationId, runId));
      if (!other || other === stream) continue;
      other.write(end.kind === 'answered' ? other.translator.answeredTogether(ids(target), stream.run.runId) : other.translator.fail(end.error, end.correlationId));
    }
    if (end.kind === 'answered') stream.write(stream.translator.finish(end.outcome));
    else stream.write(stream.translator.fail(end.error, end.correlationId));
  }

  /** The stream of the last answered run that is still open. */
  #streamFor(target: ReplyTarget): AguiStream | undefined {
    for (let i = target.inReplyTo.length - 1; i >= 0; i--) {
      const stream = this.#streams.get(streamKey(target.conversationId, target.inReplyTo[i]!));
      if (!stream?.isOpen) continue;
      // The turn can stream before `accept` resolved (the store writes while the model starts).
      stream.correlationId ??= target.correlationId;
      return stream;
    }
    return undefined;
  }

  async #run(request: Request): Promise<Response> {
    const context = this.#context;
    if (!context || this.#stopped) {
      return json(503, 'channel_stopped', 'The web channel is not accepting messages right now; try again shortly.');
    }
    // Read outside the JSON try: a body-limit error from the server must stay a 413, not become invalid_json.
    const raw = await request.text();
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return json(400, 'invalid_json', 'The body is not valid JSON; send an AG-UI RunAgentInput object.');
    }
    const parsed = parseAguiInput(body, {
      maxInboundChars: this.#options.maxInboundChars,
      correlationId: readCorrelationHeader(request.headers.get('x-correlation-id') ?? undefined),
      languageHint: readLanguageHint(request.headers.get('accept-language') ?? undefined),
    });
    if (!parsed.ok) return json(400, parsed.problem.code, parsed.problem.message);

    const { threadId, runId } = parsed.input;
    const log = this.#logger.child({ threadId, runId });
    const stream = new AguiStream(
      { threadId, runId },
      {
        showToolDetails: this.#options.showToolDetails ?? false,
        keepAliveMs: this.#options.keepAliveMs ?? 15_000,
        clientSignal: request.signal,
        onClientGone: () => log.info('client disconnected before the run ended'),
      },
    );
    const key = streamKey(threadId, runId);
    // A run id already streaming is a retry: it will be recognised as a duplicate and must not take over the stream.
    if (!this.#streams.has(key)) {
      this.#streams.set(key, stream);
      stream.onClose(() => {
        if (this.#streams.get(key) === stream) this.#streams.delete(key);
      });
    }

    let correlationId = parsed.message.correlationId;
    stream.correlationId = correlationId;
    // Wrapped so an accept that throws synchronously still ends the stream with RUN_ERROR.
    const accepted = new Promise<Acceptance>((resolve) => resolve(context.accept(parsed.message, { signal: stream.abort.signal }))).then(
      (acceptance) => {
        correlationId = acceptance.correlationId;
        stream.correlationId = correlationId;
        if (acceptance.status === 'duplicate') stream.write(stream.translator.duplicate(acceptance.correlationId));
        else stream.write(stream.translator.start({ correlationId: acceptance.correlationId, sessionId: acceptance.sessionId }));
      },
      (error: unknown) => {
        if (stream.abort.signal.aborted) log.info({ err: error, correlationId }, 'message refused after the client left');
        else if (error instanceof ChannelError) log.info({ err: error, correlationId }, 'message refused');
        else log.error({ err: error, correlationId }, 'AG-UI message could not be accepted');
        stream.write(stream.translator.fail(error, correlationId));
      },
    );

    // Wait briefly for the acceptance so the correlation id can go into a header; never wait long, a slow store
    // must still show the client that its run started.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([accepted, stream.firstWrite, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#options.headerWaitMs ?? 1000)))]);
    clearTimeout(timer);

    const headers: Record<string, string> = { ...SSE_HEADERS };
    const headerId = correlationId ?? stream.correlationId;
    if (headerId !== undefined) headers['x-correlation-id'] = headerId;
    return new Response(stream.body, { status: 200, headers });
  }
}

function streamKey(conversationId: string, runId: string): string {
  return `${conversationId}\u0000${runId}`;
}

function ids(target: ReplyTarget): AguiRunIds {
  return { correlationId: target.correlationId, sessionId: target.sessionId };
}

function json(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}
