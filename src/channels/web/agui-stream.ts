import type { AGUIEvent } from '@ag-ui/core';
import type { TurnProgress } from '../../domain/ports/channel.js';
import { AguiTranslator, type AguiRunIds, type AguiRunRef } from './agui-translator.js';
import { encodeControlEvent, toolControlEvent } from './control-event.js';

export interface AguiStreamOptions {
  readonly showToolDetails: boolean;
  /** Also send each tool call's progress as a seed 002 `control` event (see control-event.ts). */
  readonly controlEvents?: boolean;
  /** Interval of SSE comment lines that keep idle proxies from closing a long turn. */
  readonly keepAliveMs: number;
  /** The request's signal: the client went away. */
  readonly clientSignal: AbortSignal;
  /** Called once when the client leaves before the run ended. */
  readonly onClientGone: () => void;
}

const textEncoder = new TextEncoder();

/** One event as a server-sent event (the translator never sets a field to null, so nothing needs omitting). */
const encodeSse = (event: AGUIEvent): string => `data: ${JSON.stringify(event)}\n\n`;

/**
 * The server-sent event stream of one AG-UI run: the translator's events go out as `data:` lines, a comment line
 * keeps idle proxies from closing it, and it closes itself once the translator says the run ended.
 */
export class AguiStream {
  readonly run: AguiRunRef;
  readonly translator: AguiTranslator;
  /** The response body. */
  readonly body: ReadableStream<Uint8Array>;
  /** The correlation id of the turn writing to this run, once known (for the `x-correlation-id` header). */
  correlationId: string | undefined;
  /**
   * The run may not have seen all of its turn (a retry attached mid-turn, an event relayed from another process
   * lost): it ends showing the stored reply exactly (`AguiTranslator.finishExactly`).
   */
  partial = false;
  /** A turn of this process writes to the run: it settles it, so the stored reply need not be looked up. */
  fedLocally = false;
  #active = false;
  /** Resolves when the first event was written, or the stream closed. */
  readonly firstWrite: Promise<void>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
  #wrote!: () => void;
  readonly #keepAlive: NodeJS.Timeout;
  readonly #options: AguiStreamOptions;
  readonly #closed: Array<() => void> = [];

  constructor(run: AguiRunRef, options: AguiStreamOptions) {
    this.run = run;
    this.#options = options;
    this.translator = new AguiTranslator(run, { showToolDetails: options.showToolDetails });
    this.firstWrite = new Promise((resolve) => (this.#wrote = resolve));
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => this.#clientGone(),
    });
    this.#keepAlive = setInterval(() => this.#enqueue(': keep-alive\n\n'), options.keepAliveMs);
    options.clientSignal.addEventListener('abort', this.#clientGone);
  }

  /** True until the run ended or the client left. */
  get isOpen(): boolean {
    return this.#open;
  }

  /** Runs `listener` once the stream closed, for whatever reason. */
  onClose(listener: () => void): void {
    if (this.#open) this.#closed.push(listener);
    else listener();
  }

  /** Notes that the run's turn is alive (an event, or a relayed sign of life). */
  noteActivity(): void {
    this.#active = true;
  }

  /** True when there was activity since the last call. */
  takeActivity(): boolean {
    const active = this.#active;
    this.#active = false;
    return active;
  }

  /** Writes the events of one turn progress event, and its `control` event when those are on. */
  progress(event: TurnProgress, ids?: AguiRunIds): void {
    const control = this.#options.controlEvents && !this.translator.isEnded ? toolControlEvent(event, this.#options.showToolDetails) : undefined;
    this.write(this.translator.progress(event, ids), control === undefined ? '' : encodeControlEvent(control));
  }

  /** Writes events (and `extra`, already encoded, after them); closes the stream when they ended the run. Ignored once closed. */
  write(events: readonly AGUIEvent[], extra = ''): void {
    if (!this.#open) return;
    this.#active = true;
    if (events.length > 0 || extra !== '') {
      // One chunk for the events of one write: the server sends each chunk as its own write to the socket, and a
      // reply's first words (TEXT_MESSAGE_START, then CONTENT) should leave together.
      let chunk = '';
      for (const event of events) chunk += encodeSse(event);
      this.#enqueue(chunk + extra);
      this.#wrote();
    }
    if (this.translator.isEnded) {
      this.#controller.close();
      this.#close();
    }
  }

  /** Ends the stream without a word, for a run that never started (its message was refused before any event). */
  dispose(): void {
    if (!this.#open) return;
    this.#controller.close();
    this.#close();
  }

  #enqueue(chunk: string): void {
    if (this.#open) this.#controller.enqueue(textEncoder.encode(chunk));
  }

  readonly #clientGone = (): void => {
    if (!this.#open) return;
    this.#close();
    this.#options.onClientGone();
  };

  #close(): void {
    if (!this.#open) return;
    this.#open = false;
    clearInterval(this.#keepAlive);
    this.#options.clientSignal.removeEventListener('abort', this.#clientGone);
    this.#wrote();
    for (const listener of this.#closed.splice(0)) listener();
  }
}
