import type { ToolApproval } from '../../domain/approval.js';
import type { InboundRecord, Session, SummaryRecord, User } from '../../domain/model.js';
import type { Channel, ReplyTarget, TurnProgress } from '../../domain/ports/channel.js';
import type { Flow } from '../../domain/ports/flow.js';
import type { HostedMcpSpec, ModelSet } from '../../domain/ports/model-provider.js';
import type { Handoff, OpenTurnRecord, Store } from '../../domain/ports/store.js';
import type { ProfileCodec, ProfileSettings } from '../../domain/profile.js';
import type { Logger } from '../../observability/logger.js';
import type { PalaverMetrics } from '../../observability/metrics.js';
import type { Billing } from '../billing.js';
import type { BudgetSettings } from '../budget-settings.js';
import type { ModelInvoker, ToolInvoker } from '../call-wrappers.js';
import type { InstructionLibrary } from '../context/instructions.js';
import type { UserAgentContext } from '../context/user-context.js';
import type { UserState } from '../context/user-state.js';
import type { ConversationCache } from '../conversation-cache.js';
import type { ReplyMode, ReplySettings } from '../reply-plan/reply-settings.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { HandoffPhrase } from '../handoff/handoff-phrases.js';
import type { OperatorHours } from '../handoff/operator-hours.js';
import type { TurnJournal } from './turn-journal.js';

/** Agent settings a turn needs, taken from config once. */
export interface AgentSettings {
  readonly defaultRole: string | null;
  readonly historyLimit: number;
  /** Estimated tokens the earlier history may take; 0 for no token bound. */
  readonly historyTokenLimit: number;
  /** `agent.historyTimes`: the person's messages show when they were written, in their time zone. */
  readonly historyTimes: boolean;
  readonly maxToolRounds: number;
  /** Longest reply in characters; a longer one is cut with a notice (`agent.maxReplyChars`). */
  readonly maxReplyChars: number;
  readonly maxToolCallsPerTurn: number;
  readonly maxCallsPerTool: number;
  readonly defaultTimeZone: string;
  readonly defaultLanguage: string;
  readonly setRoleTool: string;
  readonly roleArgument: string;
  /** Whole messages (compared trimmed, case ignored) that start the conversation afresh, without the model. */
  readonly resetTriggers: readonly string[];
  /** A reset keeps the role a tool set (else the person starts again with the default role). */
  readonly resetKeepsRole: boolean;
  /** Handing the conversation to a person (`agent.tools`, `operators`); absent: only tools' `ctx.handoff` does. */
  readonly handoff?: HandoffSettings;
  /** How long a tool call waits for an approval before it is declined as expired (`tools.approvalTimeoutMinutes`); default 60 min. */
  readonly approvalTimeoutMs?: number;
}

/** When and how a turn hands the conversation to a person. */
export interface HandoffSettings {
  /** The model is given the built-in `handoff` tool (`agent.tools: ["handoff"]`). */
  readonly tool: boolean;
  /** Phrases that hand over without the model (`operators.handoff.phrases`), prepared by `handoffPhraseSet`. */
  readonly phrases: readonly HandoffPhrase[];
  /** When operators answer (`operators.hours`); absent: the person is told no time. */
  readonly hours?: OperatorHours;
}

/** Everything a turn uses, handed in by the composition root. */
export interface TurnDependencies {
  readonly store: Store;
  readonly models: ModelSet;
  /** Further model sets a flow may call by name (`FlowContext.callModel(…, { models })`): a staged flow's stages. */
  readonly namedModels?: ReadonlyMap<string, ModelSet>;
  /** The flow config chose (`agent.flow`). */
  readonly flow: Flow;
  /** Tools and the role policy: which tools a role is offered. */
  readonly tools: ToolRegistry;
  /** Runs a tool call, through the tool call wrappers and the configured dispatcher. */
  readonly dispatchTool: ToolInvoker;
  /** The dispatcher records each call before it leaves ({@link ToolDispatcher.recordsCalls}): the journal does not. */
  readonly dispatchRecordsCalls?: boolean;
  /** Makes one model attempt, through the model call wrappers. */
  readonly invokeModel: ModelInvoker;
  readonly hostedMcp: readonly HostedMcpSpec[];
  readonly instructions: InstructionLibrary;
  /** Reads, seeds and checks profile settings (the identity module's schema). */
  readonly profiles: ProfileCodec;
  readonly agent: AgentSettings;
  /** How the model answers, per channel: text, or a checked plan of actions, its pacing and interrupts (`agent.replies`, `agent.actions`). */
  readonly replies: ReplySettings;
  /** Prices model calls and tells each user's billing currency. */
  readonly billing: Billing;
  /** Spend caps; undefined when none is configured (then nothing is read for them). */
  readonly budgets: BudgetSettings | undefined;
  readonly logger: Logger;
  readonly metrics: PalaverMetrics;
  readonly now: () => Date;
  /** Participants, user states and recent histories, so a turn does not re-read them from the store. */
  readonly cache: ConversationCache;
  /**
   * Told after the commit of a turn that handed its conversation to a person and opened the handoff (not when one
   * was open already): operators' notices start here. Must not throw (a throw is logged); must not block.
   */
  readonly onHandoff?: (handoff: Handoff) => void;
  /** Rolling summaries of long conversations (`agent.memory.summarize`); undefined when off. */
  readonly summaries?: TurnSummaries | undefined;
}

/** What turns need of conversation summaries (`ConversationSummaries`, ../context/conversation-summaries.ts). */
export interface TurnSummaries {
  /** The newest summary of the conversation's current context, read before its history. */
  latest(deps: Pick<TurnDependencies, 'store'>, sessionId: string): Promise<SummaryRecord | undefined>;
  /** After the turn's closing write: writes the next summary in the background when one is due; never awaited. */
  afterTurn(scope: TurnScope): void;
  /** Resolves once the summaries being written have been (a closing pipeline waits within its grace period). */
  idle(): Promise<void>;
}

/** One accepted message: stored, queued, waiting for the turn that answers it. */
export interface AcceptedMessage {
  readonly channel: Channel;
  readonly user: User;
  /** The channel accounts linked to the user. */
  readonly accounts: readonly { readonly channel: string; readonly accountId: string }[];
  readonly session: Session;
  /** The message as the durable inbox holds it. */
  readonly inbound: InboundRecord;
  readonly signal: AbortSignal | undefined;
  /** See `AcceptOptions.left`: asked as the message's turn is about to begin. */
  readonly left?: (() => boolean) | undefined;
}

/** One turn: the accepted messages of one conversation, answered together (oldest first). */
export interface TurnRequest {
  readonly messages: readonly [AcceptedMessage, ...AcceptedMessage[]];
  /** The lease the reply's outbox parts are stored under (the pipeline's process). */
  readonly lease: { readonly owner: string; readonly leaseMs: number };
  /**
   * The messages' turns failed `inbox.maxTurnAttempts` times: answer them with the stored apology, without the model
   * (the apology is Palaver's own text, so it stores where the model's answer would not).
   */
  readonly attemptsExhausted?: boolean;
  /**
   * The messages answer an approval question in words that say neither yes nor no: Palaver asks again (once), without
   * the model, and the request keeps waiting.
   */
  readonly askAgain?: ToolApproval;
  /** The open turn these messages belong to, cut off by a crash or a failed store: it resumes from its journal. */
  readonly resume?: OpenTurnRecord;
  /**
   * Called as the turn's reply plan starts (`agent.actions.interruptOnNewMessage`): the signal fires when the person
   * writes again from then on, and the rest of the plan is dropped and recorded as not sent. Messages that came while
   * the model was still thinking do not cut off an answer that has not begun; they go to the next turn.
   */
  readonly interrupt?: () => AbortSignal;
  /** Checks, in each write's transaction, that this process still owns the conversation (see `JournalTurn.fence`). */
  readonly fence?: (tx: Store) => Promise<void>;
  /**
   * The closing write's fence, which ends the claim with it (see `JournalTurn.endClaim`); undefined: the claim
   * outlives the turn (another turn follows under it), and the closing write only checks {@link fence}.
   */
  readonly endClaim?: (tx: Store) => Promise<void>;
}

export type { ToolRun } from './turn-journal.js';

/**
 * What every step of one turn shares: its dependencies and the facts it was opened with, which do not change while
 * it runs. Its progress (model and tool calls, streamed text) is the {@link TurnJournal}, a stored record.
 */
export interface TurnScope {
  readonly deps: TurnDependencies;
  readonly channel: Channel;
  readonly user: User;
  readonly accounts: AcceptedMessage['accounts'];
  readonly session: Session;
  readonly messages: TurnRequest['messages'];
  readonly lease: TurnRequest['lease'];
  readonly correlationId: string;
  /** The language the agent answers in (the profile's AI language). */
  readonly language: string;
  /** The language of Palaver's own texts in this turn (the profile's interface language). */
  readonly interfaceLanguage: string;
  readonly timeZone: string;
  /** The country the user is billed for (their profile's, else `billing.defaultCountry`), and its currency. */
  readonly billingCountry: string | null;
  /** The currency this turn's costs are stored in; the session's, when it already holds money in another one. */
  currency: string;
  /** The person's settings at the start of the turn. */
  readonly profile: ProfileSettings;
  /** Who the agent talks to, built once for the turn; its section comes first in every flow's instructions. */
  readonly userContext: UserAgentContext;
  /** Where the reply goes and what it answers. */
  readonly target: ReplyTarget;
  /** How this turn answers: one reply text, or a plan of actions (the channel's `replies`, else the agent's). */
  readonly replyMode: ReplyMode;
  /** Made on first use: most turns log nothing of their own. */
  readonly log: Logger;
  /** Id of the reply in streamed progress and in the store. */
  readonly replyMessageId: string;
  /** Only a lone message may cancel its turn; a batch belongs to several callers. */
  readonly signal: AbortSignal | undefined;
  /** Watches for the person writing again while a reply plan runs (see {@link TurnRequest.interrupt}). */
  readonly interrupt: (() => AbortSignal) | undefined;
  /** See `TurnRequest.askAgain`. */
  readonly askAgain: ToolApproval | undefined;
  /** The user's state when the turn began, and the stored version it was loaded at (0: none yet). */
  readonly initialState: UserState;
  readonly stateVersion: number;
  /** The turn's progress: model calls, tool runs and streamed text, written to the store as they happen. */
  readonly journal: TurnJournal;
  /** Reports progress to the channel, when it streams. */
  progress(event: TurnProgress): void;
}
