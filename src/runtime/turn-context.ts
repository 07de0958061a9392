import type { Session, StoredMessage, User } from '../domain/model.js';
import type { TurnEvent } from '../domain/ports/channel.js';
import type { HostedMcpSpec, ModelSet } from '../domain/ports/model-provider.js';
import type { Store, TransactionOptions } from '../domain/ports/store.js';
import type { PriceTable } from '../billing/pricing.js';
import type { Logger } from '../observability/logger.js';
import type { PalaverMetrics } from '../observability/metrics.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { InstructionLibrary } from './context/instructions.js';
import type { ConversationCache } from './conversation-cache.js';
import type { ToolResult } from '../domain/ports/tool-host.js';
import type { UserState } from './context/user-state.js';

/** Agent settings a turn needs, taken from config once. */
export interface AgentSettings {
  readonly defaultRole: string | null;
  readonly historyLimit: number;
  readonly maxToolRounds: number;
  readonly maxToolCallsPerTurn: number;
  readonly maxCallsPerTool: number;
  readonly defaultTimeZone: string;
  readonly defaultLanguage: string;
  readonly roleNames: readonly string[];
  readonly setRoleTool: string;
  readonly roleArgument: string;
}

/** Everything a turn uses, handed in by the composition root. */
export interface TurnDependencies {
  readonly store: Store;
  readonly models: ModelSet;
  readonly tools: ToolRegistry;
  readonly hostedMcp: readonly HostedMcpSpec[];
  readonly instructions: InstructionLibrary;
  readonly agent: AgentSettings;
  readonly prices: PriceTable;
  readonly currency: string;
  /** Global limit on model calls running at once. */
  readonly limitModelCalls: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly logger: Logger;
  readonly metrics: PalaverMetrics;
  readonly now: () => Date;
  /** Participants, user states and recent histories, so a turn does not re-read them from the store. */
  readonly cache: ConversationCache;
}

/** One turn: the new user messages of a conversation, answered together. */
export interface TurnRequest {
  readonly user: User;
  readonly session: Session;
  /** The new messages' texts, oldest first. */
  readonly newTexts: readonly string[];
  /**
   * The new messages as stored. They may still be being written when the turn starts; the turn waits for them before
   * it runs a tool or replies, and a failed write fails the turn with the store's error.
   */
  readonly stored: Promise<readonly StoredMessage[]>;
  readonly correlationId: string;
  readonly language: string;
  readonly timeZone: string;
  readonly onEvent?: (event: TurnEvent) => void;
  readonly signal?: AbortSignal;
  /** How the turn's closing transaction commits: shared with other conversations' when several are busy. */
  readonly commit: TransactionOptions;
}

/** What every step of one turn shares: its logger, its event sink and the user's state as it evolves. */
export interface TurnScope {
  readonly deps: TurnDependencies;
  readonly request: TurnRequest;
  readonly log: Logger;
  readonly emit: (event: TurnEvent) => void;
  /** `request.stored`, awaited before the first tool call and before the turn's records are written. */
  readonly newMessagesStored: Promise<readonly StoredMessage[]>;
  /** Id of the reply in streamed events. */
  readonly replyMessageId: string;
  /** The user's state; tools and the flow replace it, the end of the turn saves it. */
  state: UserState;
  /** The stored version `state` was loaded at (0: none stored yet), for the optimistic save. */
  readonly stateVersion: number;
  /**
   * The tool calls this turn ran, by the model's call id, with how long each took (for the audit records). A call
   * id the model repeats within the turn is answered from here instead of running again.
   */
  readonly toolRuns: Map<string, { readonly result: ToolResult; readonly durationMs: number }>;
}
