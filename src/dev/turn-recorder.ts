import type { CallObserver, ObservedFocus, ObservedModelCall, ObservedToolCall } from '../runtime/call-observer.js';

/** A model call as the playground shows it. */
export interface RecordedModelCall {
  readonly at: string;
  readonly ms: number;
  readonly model: string;
  readonly path: string;
  /** The instructions as composed for this call: the person's section, base and role text, runtime facts, service data. */
  readonly instructions: string;
  /** The conversation items the model was sent (history, the new messages, tool calls and results of this turn). */
  readonly input: readonly unknown[];
  /** The tools offered, by name. */
  readonly tools: readonly string[];
  readonly text?: string;
  readonly toolCalls?: readonly { readonly name: string; readonly arguments: string }[];
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number; readonly cachedInputTokens?: number };
  readonly answeredBy?: string;
  /** Exact USD cost, as the turn bills it (see {@link ObservedModelCall.usdCost}). */
  readonly usdCost?: string;
  readonly error?: string;
}

/** A tool call as the playground shows it. */
export interface RecordedToolCall {
  readonly at: string;
  readonly ms: number;
  readonly callId: string;
  readonly tool: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly role: string | null;
  readonly result?: string;
  readonly isError?: boolean;
  readonly error?: string;
}

/** The entities in focus a turn loaded, as the playground shows them. */
export interface RecordedFocus {
  readonly stage: { readonly id: string; readonly by: string } | null;
  readonly entities: readonly { readonly type: string; readonly items: readonly { readonly id: string | number; readonly description: string }[] }[];
  /** Types whose loading tool failed this turn. */
  readonly unavailable: readonly string[];
}

/** The calls of one turn, by its correlation id. */
export interface RecordedTurn {
  readonly correlationId: string;
  /** Known once the turn called a tool (tool calls carry it). */
  sessionId: string | undefined;
  readonly startedAt: string;
  readonly calls: (({ readonly kind: 'model' } & RecordedModelCall) | ({ readonly kind: 'tool' } & RecordedToolCall))[];
  /** Set when the agent has focus stages and the turn loaded its focus. */
  focus: RecordedFocus | undefined;
  /** Grows with every call recorded, so a page asks only for what changed. */
  version: number;
}

/**
 * Keeps the model and tool calls of the last `limit` turns in memory, for `palaver dev`'s playground. It is the
 * {@link CallObserver} the dev server gives every Palaver it builds, so turns stay listed across reloads.
 */
export class TurnRecorder implements CallObserver {
  readonly #turns = new Map<string, RecordedTurn>();
  readonly #limit: number;
  #version = 0;

  constructor(options: { readonly limit?: number } = {}) {
    this.#limit = options.limit ?? 50;
  }

  /** The version of the newest change; 0 before any call. */
  get version(): number {
    return this.#version;
  }

  /** The turns, newest first. */
  turns(): RecordedTurn[] {
    return [...this.#turns.values()].reverse();
  }

  modelCall(call: ObservedModelCall): void {
    const { request, response } = call;
    this.#add(request.correlationId, undefined, call.startedAt, {
      kind: 'model',
      at: call.startedAt.toISOString(),
      ms: call.durationMs,
      model: call.model,
      path: call.path,
      instructions: request.instructions,
      // Images' bytes stay out of the page: it shows which were sent, not their data.
      input: request.input.map((item) =>
        item.type === 'message' && item.images ? { ...item, images: item.images.map(({ attachmentId, mimeType }) => ({ attachmentId, mimeType })) } : item,
      ),
      tools: request.tools.map((tool) => tool.name),
      ...(response
        ? {
            text: response.text,
            toolCalls: response.toolCalls.map(({ name, arguments: args }) => ({ name, arguments: args })),
            usage: response.usage,
            answeredBy: response.model,
            ...(call.usdCost === undefined ? {} : { usdCost: call.usdCost }),
          }
        : {}),
      ...(call.error === undefined ? {} : { error: call.error }),
    });
  }

  toolCall(call: ObservedToolCall): void {
    const { request, result } = call;
    this.#add(request.correlationId, request.sessionId, call.startedAt, {
      kind: 'tool',
      at: call.startedAt.toISOString(),
      ms: call.durationMs,
      callId: request.callId,
      tool: request.tool,
      arguments: request.arguments,
      role: request.role,
      ...(result ? { result: result.content, isError: result.isError } : {}),
      ...(call.error === undefined ? {} : { error: call.error }),
    });
  }

  focus(focus: ObservedFocus): void {
    const turn = this.#turn(focus.correlationId, focus.sessionId, new Date());
    turn.focus = {
      stage: focus.stage ?? null,
      entities: focus.entities.map(({ entityType, entities }) => ({ type: entityType, items: entities.map(({ id, description }) => ({ id, description })) })),
      unavailable: focus.unavailable,
    };
    turn.version = ++this.#version;
  }

  #turn(correlationId: string | undefined, sessionId: string | undefined, at: Date): RecordedTurn {
    const key = correlationId ?? 'unknown';
    let turn = this.#turns.get(key);
    if (turn === undefined) {
      turn = { correlationId: key, sessionId, startedAt: at.toISOString(), calls: [], focus: undefined, version: 0 };
      this.#turns.set(key, turn);
      if (this.#turns.size > this.#limit) this.#turns.delete(this.#turns.keys().next().value!);
    }
    turn.sessionId ??= sessionId;
    return turn;
  }

  #add(correlationId: string | undefined, sessionId: string | undefined, at: Date, entry: RecordedTurn['calls'][number]): void {
    const turn = this.#turn(correlationId, sessionId, at);
    // Calls are reported as they finish; shown in the order they started.
    turn.calls.push(entry);
    turn.calls.sort((a, b) => a.at.localeCompare(b.at));
    turn.version = ++this.#version;
  }
}
