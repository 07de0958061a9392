import type { ApprovalDecider } from '../approval.js';
import type { JsonSchema } from './model-provider.js';

/** A tool a host offers, with the JSON Schema of its arguments. */
export interface ToolDescriptor {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  /** Where it comes from: `local` or `mcp:<server>`. */
  readonly source: string;
  /** What people see while the tool runs, instead of its name. */
  readonly label?: ToolLabel;
  /** The tool only reads (its team said so): a turn records its calls with their result, not before they run. */
  readonly readOnly?: boolean;
  /**
   * Whether a call needs someone's yes before it runs, and whose (`LocalTool.approval`, `mcp.servers[].approval`):
   * undefined (or absent) runs it at once.
   */
  readonly approval?: (args: Readonly<Record<string, unknown>>, ctx: ApprovalContext) => ApprovalDecider | undefined;
  /** What a call will do, in plain words, for the person asked to approve it (`LocalTool.describe`). */
  readonly describe?: (args: Readonly<Record<string, unknown>>) => string;
}

/** What a tool's approval rule may look at: who the turn answers, in which conversation, in which role. */
export interface ApprovalContext {
  readonly userId: string;
  readonly sessionId: string;
  readonly conversationId: string;
  readonly role: string | null;
}

/**
 * A tool's progress line for people, e.g. "Checking the calendar…": one text, or one per language (BCP-47 tag or its
 * primary subtag → text).
 */
export type ToolLabel = string | Readonly<Record<string, string>>;

/**
 * What a tool learns about the turn that calls it. `userId` is the user the server bound to the turn;
 * a user id in model-written arguments is never trusted.
 */
export interface ToolCallContext {
  readonly userId: string;
  /** The channel accounts linked to `userId` (channel, account id), so a tool can map to the team's own users. */
  readonly accounts: readonly { readonly channel: string; readonly accountId: string }[];
  readonly sessionId: string;
  readonly conversationId: string;
  readonly correlationId: string;
  readonly callId: string;
  /**
   * The key for the side effects this call makes elsewhere (a booking, a payment, a message): the same every time
   * the turn runs this call, including after a crash that cut it off while running. Pass it to the service as its
   * idempotency key (or store it beside the effect and look it up first), so a call run again does not act twice.
   */
  readonly idempotencyKey: string;
  readonly signal: AbortSignal;
  /** The user's current role, if any. */
  readonly role: string | null;
  /** Requests a role change; the turn re-runs once under the new role. */
  setRole(role: string): void;
  /** Reads this user's flow state in `namespace`. */
  getFlowState(namespace: string): unknown;
  /** Sets (or with `undefined` clears) this user's flow state in `namespace`; saved at the end of the turn. */
  setFlowState(namespace: string, value: unknown): void;
  /**
   * Hands the conversation to a person: the turn ends after this round of tool calls (the model is not asked again),
   * the person is told that a person will answer here, and the agent stays paused until an operator resumes it.
   * `reason` is for the operators (cut to 500 characters). The last call in a call wins.
   * @throws TypeError when `reason` is not a non-empty string.
   */
  handoff(request: { readonly reason: string }): void;
}

export interface ToolResult {
  /** Text handed back to the model. */
  readonly content: string;
  /** Structured content, when the tool returns some (MCP `structuredContent`). */
  readonly structured?: unknown;
  /** A failed call still goes back to the model, marked as an error. */
  readonly isError: boolean;
}

/**
 * A source of tools: local tools, one MCP server, … `call` never rejects for a tool's own failure, bad
 * arguments, an unknown tool name or a timeout: it resolves with `isError: true` and a message for the model.
 * It rejects only when the host itself is unusable (closed).
 */
export interface ToolHost {
  /** Stable name used in logs and allowlists, e.g. `local` or `mcp:logistics`. */
  readonly name: string;
  /** Lists the tools; hosts may cache and refresh. */
  list(): Promise<readonly ToolDescriptor[]>;
  call(name: string, args: Readonly<Record<string, unknown>>, ctx: ToolCallContext): Promise<ToolResult>;
  /** Releases connections. Safe to call twice. */
  close(): Promise<void>;
}
