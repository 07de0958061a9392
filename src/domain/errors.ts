/**
 * One base error and one subclass per boundary. Messages say how to fix the problem and never contain secrets.
 * `retryable` separates "the remote could not be reached / was overloaded" from "the remote refused".
 */
export class PalaverError extends Error {
  override readonly name: string = 'PalaverError';
  /** Machine-readable reason, stable across versions. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Invalid or missing configuration; `path` names the offending field (e.g. `model.baseUrl`). */
export class ConfigError extends PalaverError {
  override readonly name = 'ConfigError';
  readonly issues: readonly { path: string; message: string }[];

  constructor(message: string, issues: readonly { path: string; message: string }[] = [], options?: { cause?: unknown }) {
    super('config_invalid', message, options);
    this.issues = issues;
  }
}

export type ModelFailure =
  /** Network error, timeout, 5xx or 429: another attempt or another model may succeed. */
  | 'unreachable'
  /** 4xx other than 429: the request itself was refused. */
  | 'refused'
  /** The Responses API no longer knows `previous_response_id`. */
  | 'stale_chain'
  /** The model answered with something we cannot use. */
  | 'invalid_output';

export class ModelError extends PalaverError {
  override readonly name = 'ModelError';
  readonly failure: ModelFailure;
  readonly status: number | undefined;
  readonly model: string;

  constructor(failure: ModelFailure, model: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(`model_${failure}`, message, options);
    this.failure = failure;
    this.model = model;
    this.status = options?.status;
  }

  get retryable(): boolean {
    return this.failure === 'unreachable';
  }
}

export class ToolError extends PalaverError {
  override readonly name = 'ToolError';
  readonly tool: string;

  constructor(code: string, tool: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.tool = tool;
  }
}

export class ChannelError extends PalaverError {
  override readonly name: string = 'ChannelError';
  readonly channel: string;

  constructor(code: string, channel: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.channel = channel;
  }
}

/**
 * The channel cannot send now and says when it can (a messenger's flood wait). A reply part refused this way stays
 * in the outbox and is sent after `retryAfterMs`, never dropped and never shown to the person as a failure.
 */
export class ChannelRetryLaterError extends ChannelError {
  override readonly name = 'ChannelRetryLaterError';
  readonly retryAfterMs: number;

  constructor(channel: string, retryAfterMs: number, message: string, options?: { cause?: unknown }) {
    super('retry_later', channel, message, options);
    this.retryAfterMs = retryAfterMs;
  }
}

export type IdentityFailure =
  /** The resolver (the team's directory) could not be reached or answered badly, after its retry. */
  | 'unreachable'
  /** The resolver answered, but named no user for the account. */
  | 'unrecognised';

/** The identity step could not say who is talking; nothing may be answered under a guessed identity. */
export class IdentityError extends PalaverError {
  override readonly name = 'IdentityError';
  readonly failure: IdentityFailure;

  constructor(failure: IdentityFailure, message: string, options?: { cause?: unknown }) {
    super(`identity_${failure}`, message, options);
    this.failure = failure;
  }

  get retryable(): boolean {
    return this.failure === 'unreachable';
  }
}

export class StoreError extends PalaverError {
  override readonly name = 'StoreError';
}

/**
 * A turn's process no longer holds its conversation's claim (it was paused or cut off for longer than its lease, and
 * another process took the conversation over): the turn stops, having stored and sent nothing more; the new owner
 * answers its messages.
 */
export class FencedOut extends PalaverError {
  override readonly name = 'FencedOut';

  constructor(message: string) {
    super('fenced_out', message);
  }
}

/** A flow could not produce its result, e.g. a stage's structured output stayed invalid after its repair. */
export class FlowError extends PalaverError {
  override readonly name = 'FlowError';
  readonly stage: string | undefined;

  constructor(code: string, message: string, options?: { cause?: unknown; stage?: string }) {
    super(code, message, options);
    this.stage = options?.stage;
  }
}

/** Wraps a failure at the turn boundary with the context needed to find it in the logs. */
export class TurnError extends PalaverError {
  override readonly name = 'TurnError';
  readonly correlationId: string;
  readonly conversationId: string;

  constructor(message: string, context: { correlationId: string; conversationId: string }, options?: { cause?: unknown }) {
    super('turn_failed', message, options);
    this.correlationId = context.correlationId;
    this.conversationId = context.conversationId;
  }
}
