import type { AGUIEvent } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import type { Handler } from 'hono';
import { parseAguiInput, readCorrelationHeader, readLanguageHint } from '../channels/web/agui-input.js';
import { AguiTranslator } from '../channels/web/agui-translator.js';
import type { ConversationHandler, TurnEvent, TurnOutcome } from '../domain/ports/channel.js';
import type { Logger } from '../observability/logger.js';
import { errorBody } from './error-body.js';

export interface AguiRouteOptions {
  readonly handler: ConversationHandler;
  /** Longest accepted user text, in characters (`limits.maxInboundChars`). */
  readonly maxInboundChars: number;
  readonly logger: Logger;
  /**
   * How long to hold the response headers back waiting for `turn_started`, so `x-correlation-id` can be set.
   * After that the stream starts anyway and the id is only in RUN_STARTED's `metadata`. Default 1000 ms.
   */
  readonly headerWaitMs?: number;
  /** Interval of SSE comment lines that keep idle proxies from closing a long turn. Default 15 000 ms. */
  readonly keepAliveMs?: number;
  /** Send tool arguments and results to the client (default false: only tool names and success). */
  readonly showToolDetails?: boolean;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx buffers responses by default, which would hold the whole stream back.
  'x-accel-buffering': 'no',
} as const;

/**
 * `POST /agui`: runs one AG-UI `RunAgentInput` through the `ConversationHandler` and streams AG-UI events as
 * server-sent events. Refused bodies get 400 `{ error: { code, message } }` (`invalid_json`, `invalid_input`,
 * `no_user_message`, `empty_message`, `message_too_long`). The stream ends after RUN_FINISHED or RUN_ERROR.
 * When the client disconnects the handler's `signal` aborts; the turn may still finish and be persisted.
 */
export function aguiRoute(options: AguiRouteOptions): Handler {
  const { handler, maxInboundChars, logger } = options;
  const headerWaitMs = options.headerWaitMs ?? 1000;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const encoder = new EventEncoder();
  const textEncoder = new TextEncoder();

  return async (c) => {
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return c.json(errorBody('invalid_json', 'The body is not valid JSON; send an AG-UI RunAgentInput object.'), 400);
    }
    const parsed = parseAguiInput(body, {
      maxInboundChars,
      correlationId: readCorrelationHeader(c.req.header('x-correlation-id')),
      languageHint: readLanguageHint(c.req.header('accept-language')),
    });
    if (!parsed.ok) return c.json(errorBody(parsed.problem.code, parsed.problem.message), 400);

    const { threadId, runId } = parsed.input;
    const log = logger.child({ threadId, runId });
    const translator = new AguiTranslator({ threadId, runId }, { showToolDetails: options.showToolDetails ?? false });
    const abort = new AbortController();
    let correlationId = parsed.message.correlationId;
    let stream!: ReadableStreamDefaultController<Uint8Array>;
    let open = true;
    let firstEvents!: () => void;
    const firstEventsWritten = new Promise<void>((resolve) => (firstEvents = resolve));

    const close = (): void => {
      if (!open) return;
      open = false;
      clearInterval(keepAlive);
      c.req.raw.signal.removeEventListener('abort', onClientGone);
      firstEvents();
    };
    const onClientGone = (): void => {
      if (!open) return;
      log.info('client disconnected before the run ended');
      close();
      abort.abort(new Error('The AG-UI client disconnected.'));
    };
    const writeRaw = (chunk: string): void => {
      if (open) stream.enqueue(textEncoder.encode(chunk));
    };
    const write = (events: readonly AGUIEvent[]): void => {
      for (const event of events) writeRaw(encoder.encodeSSE(event));
      if (events.length > 0) firstEvents();
      if (translator.isEnded && open) {
        stream.close();
        close();
      }
    };
    const keepAlive = setInterval(() => writeRaw(': keep-alive\n\n'), keepAliveMs);

    const body$ = new ReadableStream<Uint8Array>({
      start: (controller) => {
        stream = controller;
      },
      cancel: onClientGone,
    });
    c.req.raw.signal.addEventListener('abort', onClientGone);

    const onEvent = (event: TurnEvent): void => {
      if (event.type === 'turn_started') correlationId = event.correlationId;
      write(translator.translate(event));
    };
    // Wrapped so a handler that throws synchronously still ends the stream with RUN_ERROR.
    new Promise<TurnOutcome>((resolve) => resolve(handler.handle(parsed.message, { onEvent, signal: abort.signal }))).then(
      (outcome) => {
        correlationId = outcome.correlationId;
        write(translator.finish(outcome));
      },
      (error: unknown) => {
        if (abort.signal.aborted) log.info({ err: error, correlationId }, 'run ended after the client left');
        else log.error({ err: error, correlationId }, 'AG-UI run failed');
        write(translator.fail(error, correlationId));
      },
    );

    // Wait briefly for the first events so the correlation id can go into a header; never wait long, a slow
    // turn must still show the client that it started.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([firstEventsWritten, new Promise<void>((resolve) => (timer = setTimeout(resolve, headerWaitMs)))]);
    clearTimeout(timer);

    const headers: Record<string, string> = { ...SSE_HEADERS };
    if (correlationId !== undefined) headers['x-correlation-id'] = correlationId;
    return new Response(body$, { status: 200, headers });
  };
}
