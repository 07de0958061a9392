/**
 * The tool dispatch port: a tool call as data. A request holds everything a tool may learn about the call, and a
 * result holds everything the call changed, so a call can cross a process boundary (a queue of tool workers) as
 * JSON. Inline dispatch (in this process) is one adapter; a queue is another.
 */

/** One tool call, as the core hands it to a dispatcher. JSON-serialisable. */
export interface ToolCallRequest {
  /** The model's call id; a dispatcher treats a repeated id as the same call (idempotency). */
  readonly callId: string;
  /**
   * Stable across a resume: a call the turn runs again after a crash (cut off while running) carries the same key.
   * The tool uses it for the side effects it makes elsewhere (`ToolCallContext.idempotencyKey`).
   */
  readonly idempotencyKey: string;
  readonly tool: string;
  /** Parsed arguments, as the model wrote them (a bound user argument is checked by the host). */
  readonly arguments: Readonly<Record<string, unknown>>;
  /** The user the server bound to the turn: the only user the tool may act for. */
  readonly userId: string;
  /** The channel accounts linked to that user, so a tool can map to the team's own users. */
  readonly accounts: readonly { readonly channel: string; readonly accountId: string }[];
  readonly sessionId: string;
  readonly conversationId: string;
  readonly correlationId: string;
  /** The user's role when the call was made. */
  readonly role: string | null;
  /** The user's flow state by namespace, as the tool may read it. */
  readonly flowState: Readonly<Record<string, unknown>>;
}

/** What a call changed besides its result, applied by the core when the result comes back. */
export interface ToolEffects {
  /** The tool asked for this role; the turn re-runs once under it. */
  readonly role?: string;
  /** Flow state namespaces the tool set; `null` clears a namespace. */
  readonly flowState?: Readonly<Record<string, unknown>>;
  /** The conversation goes to a person: the turn ends after this round with Palaver's notice, and the agent pauses. */
  readonly handoff?: HandoffEffect;
}

/**
 * A request to hand the conversation to a person: `source` is `model` for Palaver's built-in `handoff` tool and
 * `tool` for any other tool's `ctx.handoff` (the core holds a tool to that, whatever it sends).
 */
export interface HandoffEffect {
  /** Why, for the operators: at most 500 characters (`handoffReason`, src/domain/handoff-reason.ts). */
  readonly reason: string;
  readonly source: 'model' | 'tool';
}

/** The outcome of one call. JSON-serialisable. */
export interface ToolCallResult {
  readonly callId: string;
  /** Text handed back to the model. */
  readonly content: string;
  /** Structured content, when the tool returns some (MCP `structuredContent`). */
  readonly structured?: unknown;
  /** A failed call still goes back to the model, marked as an error. */
  readonly isError: boolean;
  readonly effects: ToolEffects;
  /** How long the tool ran, in ms. */
  readonly durationMs: number;
}

/**
 * Runs tool calls somewhere: in this process, or on a worker behind a queue. `dispatch` never rejects for a tool's
 * own failure, an unknown tool or a timeout: it resolves with `isError: true` and a message for the model. It
 * rejects only when the dispatcher itself is unusable (closed, the queue unreachable).
 */
export interface ToolDispatcher {
  /**
   * `dispatch` writes the call's record (the store's `toolCalls.start`) itself, before the call leaves (the streams
   * dispatcher: in the transaction of its outbox entry), so the turn journal does not record it first.
   */
  readonly recordsCalls?: boolean;
  dispatch(request: ToolCallRequest, options?: { readonly signal?: AbortSignal }): Promise<ToolCallResult>;
  /** Releases what the dispatcher holds. Safe to call twice. */
  close(): Promise<void>;
}
