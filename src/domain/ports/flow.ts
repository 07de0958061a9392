import type { NewMessage, Session, TokenUsage, User } from '../model.js';
import type { TurnProgress } from './channel.js';
import type {
  HostedMcpSpec,
  HostedToolCall,
  ModelInputItem,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  ModelToolSpec,
  StructuredOutputSpec,
} from './model-provider.js';
import type { HandoffEffect, ToolCallResult } from './tool-dispatch.js';

/**
 * The `Flow` port: how a turn turns the conversation into a reply. The single agent loop (model ⇄ tools, with a
 * re-run on a role change) is one flow; a staged intent → execution → organization flow is another. A flow sees
 * the conversation and the user's state, calls models and tools only through its context, and returns a neutral
 * result; the turn stores it and hands the reply on. A flow never writes to the store or talks to a channel.
 */
export interface Flow {
  /** The name config selects it by (`agent.flow`). */
  readonly name: string;
  run(request: FlowRequest, context: FlowContext): Promise<FlowResult>;
}

/** A recent tool call, remembered in the user's state for the model's service-data block. */
export interface RecentToolCall {
  readonly name: string;
  readonly arguments: string;
  readonly ok: boolean;
  /** ISO instant. */
  readonly at: string;
}

/** The user's state as a flow reads and changes it. */
export interface FlowState {
  readonly role: string | null;
  /** Responses API chain: the response to continue from next turn, or null. */
  readonly responseChainId: string | null;
  /**
   * Where the chain stands: the conversation (session) it belongs to and the `seq` of the last message its responses
   * saw (the reply that ended it). Set by the turn when it stores a reply; a flow leaves it as it is. The chain is
   * continued only in that conversation and only while nothing was stored there since (messages recorded without a
   * turn); otherwise the turn sends the whole history without it.
   */
  readonly responseChainAt?: ResponseChainPoint | null;
  readonly recentToolCalls: readonly RecentToolCall[];
  /** Namespaced flow state that tools and flows may set (e.g. `{ documents: { step: 2 } }`). */
  readonly flows: Readonly<Record<string, unknown>>;
}

/** The conversation and message a Responses chain reached. */
export interface ResponseChainPoint {
  readonly sessionId: string;
  readonly seq: number;
}

/** What a flow is asked to answer. */
export interface FlowRequest {
  readonly user: User;
  readonly session: Session;
  readonly correlationId: string;
  /** BCP-47 language of the reply. */
  readonly language: string;
  /** IANA zone for anything about time. */
  readonly timeZone: string;
  /** The earlier conversation, oldest first: display messages only. */
  readonly history: readonly ModelInputItem[];
  /** The new messages this turn answers, oldest first (in a group, each labelled with its sender). */
  readonly newItems: readonly ModelInputItem[];
  /**
   * The new messages' texts as the person wrote them, without labels: for rules that read what they said (stage
   * keywords). Absent: read from `newItems`.
   */
  readonly newTexts?: readonly string[];
  /** The user's state when the turn began. */
  readonly state: FlowState;
  readonly signal?: AbortSignal;
}

/** One model call as it happened, for the message record and billing. */
export interface ModelCallRecord {
  readonly model: string;
  readonly usage: TokenUsage;
  readonly fallback: boolean;
  readonly responseId: string | undefined;
  /** How the call was made: `direct`, `chain`, `chain_retry` (stale chain dropped), `fallback`, `no_tools`. */
  readonly path: string;
}

/** A model call's response with its record. */
export interface ModelCall {
  readonly response: ModelResponse;
  readonly record: ModelCallRecord;
}

/** The turn's limits and agent settings a flow obeys. */
export interface FlowSettings {
  readonly defaultRole: string | null;
  readonly maxToolRounds: number;
  readonly maxToolCallsPerTurn: number;
  readonly maxCallsPerTool: number;
  /** The primary model continues Responses chains. */
  readonly responseChains: boolean;
  /** The format of the reply when it is not free text (replies as actions); absent: the reply is text. */
  readonly replyFormat?: ReplyFormat;
}

/**
 * A reply that must be JSON (replies as actions answer with a plan). A flow adds `instructions` to the instructions of
 * the calls whose answer is the reply and asks them for `output` (`ModelRequest.output`; tool rounds stay possible),
 * and returns the answer's text unchecked: the turn checks it.
 */
export interface ReplyFormat {
  readonly output: StructuredOutputSpec;
  /** What the model is told about the format (the actions, the limits, the message ids). */
  readonly instructions: string;
}

/** Log lines a flow writes carry the turn's correlation id. */
export interface FlowLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** Which of the agent's models a call goes to. */
export interface ModelChoice {
  /** A named model set (a staged flow's stage model); the agent's primary model (and its fallback) when absent. */
  readonly models?: string;
}

/** What the turn lends a flow: every model call, tool call and instruction text goes through here. */
export interface FlowContext {
  readonly settings: FlowSettings;
  readonly log: FlowLog;
  now(): Date;
  /** The system instructions for `role`: its files, the runtime facts and the service-data block of `state`. */
  instructions(role: string | null, state: FlowState): string;
  /** The tools `role` may use (role policy applied); hosts that cannot list their tools are skipped and logged. */
  toolsFor(role: string | null): Promise<readonly ModelToolSpec[]>;
  /**
   * The MCP servers the model provider calls itself (hosted MCP) for `role`: offered beside the tools, even without
   * local ones, each with `allowedTools` narrowed to the role's allowlist; a server the role may use nothing of is left out.
   */
  hostedMcpFor(role: string | null): readonly HostedMcpSpec[];
  /**
   * The role a hosted MCP call of the role tool (`set_role` as an `mcp_call` in the response) moved the person into,
   * under the same rule as a local call: only a configured role that tool may grant, from a server offered to `role`.
   * Undefined when none did; a refused one is logged and ignored.
   */
  roleFromHostedCalls(calls: readonly HostedToolCall[], role: string | null): string | undefined;
  /**
   * One model call under the model policy (fallback, chain retry) and the call wrappers (concurrency limit, metrics,
   * logs). `transcript` is the full conversation so far, for a retry that must drop the chain.
   */
  callModel(request: ModelRequest, transcript: readonly ModelInputItem[], options?: ModelChoice): Promise<ModelCall>;
  /**
   * Runs one tool call for the bound user under `role`: a tool outside the role's allowlist is refused, the call is
   * dispatched as data, and its effects come back in the result (the flow applies them to its state).
   * A call id repeated within the turn gets the first call's result without running again.
   */
  runTool(call: ModelToolCall, role: string | null, state: FlowState): Promise<ToolCallResult>;
  /**
   * True once a tool call of this turn waits for someone's approval: the flow ends after the round of tool calls it
   * is in (no further model call), and the turn stores the question instead of a reply.
   */
  waitsForApproval(): boolean;
  /**
   * True for a call of this turn whose approval request was decided (the turn resumed after the decision): its
   * arguments were checked when it was asked about and the decision was taken on exactly them, so checks of the
   * moment (the focus, which follows the newest message) do not refuse it now; the decision stands.
   */
  decided(callId: string): boolean;
  /** Reports progress to a channel that streams. */
  progress(event: TurnProgress): void;
  /** Reports a limit that refused a tool call or ended the tool rounds (counted and logged). */
  limitReached(limit: 'tool_rounds' | 'tool_calls_per_turn' | 'calls_per_tool', tool?: string): void;
  /** True when a channel wants text deltas (it streams); a flow may skip streaming otherwise. */
  readonly streaming: boolean;
  /** Id the reply is streamed under. */
  readonly replyMessageId: string;
}

/** What a flow produced: neutral, ready for the turn to check, store and deliver. */
export interface FlowResult {
  /** The text for the person, unchecked (the reply step checks it). */
  readonly text: string;
  /** Records the person never sees: tool traffic, stage outputs. Stored with audience `audit`. */
  readonly audit: readonly NewMessage[];
  /** Every model call the flow made, with its tokens (the turn prices and sums them). */
  readonly modelCalls: readonly ModelCallRecord[];
  /** The user's state after the flow: role, chain, recent tool calls, flow state. */
  readonly state: FlowState;
  /**
   * A tool asked to hand the conversation to a person (the built-in `handoff`, or `ctx.handoff`): the flow stopped
   * after that round, and the turn answers with Palaver's notice instead of `text`.
   */
  readonly handoff?: HandoffEffect;
}
